/* space_trials.c - the trial log every strategy shares: one trial per distinct configuration,
 * replayed from the history when the caller's lookups know it, else measured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

/* The trial log's owner frees it, whichever strategy filled it. */
void mi_search_result_destroy(mi_search_result_t *r) {
  if (!r) return;
  for (int32_t i = 0; i < r->count; i++) free(r->trials[i].point);
  free(r->trials);
  free(r);
}

int32_t mi__trial_eval(const mi_space_t *s, const mi_search_options_t *o, mi_search_result_t *r,
                       int32_t *cap, const int32_t *pt, int *fresh) {
  int32_t dims = mi_space_dim_count(s);
  uint64_t h = mi_space_hash(s, pt);
  mi_trial_t *t;
  *fresh = 0;
  for (int32_t i = 0; i < r->count; i++)
    if (r->trials[i].hash == h) return i;
  if (r->count == *cap) {
    int32_t grown = *cap ? *cap * 2 : 64;
    mi_trial_t *nt = realloc(r->trials, (size_t)grown * sizeof *nt);
    if (!nt) return -1;
    r->trials = nt;
    *cap = grown;
  }
  t = &r->trials[r->count];
  memset(t, 0, sizeof *t);
  t->point = malloc((size_t)dims * sizeof *t->point + 1);
  if (!t->point) return -1;
  memcpy(t->point, pt, (size_t)dims * sizeof *pt);
  t->hash = h;
  for (int k = 0; k < MI_OBJ_COUNT; k++) t->objectives[k] = NAN;
  r->count++;
  *fresh = 1;
  /* lookup_point first: mi-host tune's history is keyed by the canonical texts. */
  if ((o->lookup_point &&
       o->lookup_point(o->lookup_ctx, s, pt, t->objectives, &t->status, t->message)) ||
      (o->lookup && o->lookup(o->lookup_ctx, h, t->objectives, &t->status))) {
    t->from_history = 1; /* already measured for this task and stack: replayed */
    r->replayed++;
  } else {
    mi_error_t e;
    mi_error_clear(&e);
    t->status = o->evaluate(o->evaluate_ctx, s, pt, t->objectives, &e);
    if (t->status != MI_OK) memcpy(t->message, e.message, sizeof t->message);
    r->measured++;
  }
  return r->count - 1;
}
