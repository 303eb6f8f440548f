/* strategy.c - the surrogate-guided search: warm start, cold design, then rounds of fit,
 * screen, measure a batch, record prediction errors, adapt the trust region. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meta/meta_internal.h"
#include "space/space_internal.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mi_meta_options_default(mi_meta_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_sources = 4;
  o->warm_points = 4;
  o->init_points = 6;
  o->batch = 8;
  o->screen = 100000;
  o->kappa = 2.0; /* measured: docs/meta.md, "Why ours cold was slow" */
  o->learner = MI_SURROGATE_AUTO;
  o->primary_share = 0.5;
}

int mi__meta_has_budget(mi__meta_t *st) {
  /* Replayed trials count: a resumed run ends where the uninterrupted one would have. */
  if (st->r->measured + st->r->replayed >= st->budget) return 0;
  if (st->so->max_seconds > 0 && now_s() - st->t0 >= st->so->max_seconds) return 0;
  return 1;
}

int32_t mi__meta_fix(mi__meta_t *st, int32_t *pt) {
  if (st->mo.frozen) {
    int32_t *def = malloc((size_t)st->D * sizeof *def + 1);
    if (!def) return MI_ERR_OUT_OF_MEMORY;
    mi_space_default(st->s, def);
    for (int32_t d = 0; d < st->D; d++)
      if (st->mo.frozen[d]) pt[d] = def[d];
    free(def);
  }
  return mi_space_repair(st->s, pt, NULL, NULL);
}

int32_t mi__meta_eval(mi__meta_t *st, const int32_t *pt, int *fresh) {
  int32_t i = mi__trial_eval(st->s, st->so, st->r, &st->cap, pt, fresh);
  if (i >= 0 && *fresh && st->so->progress)
    st->so->progress(st->so->progress_ctx, &st->r->trials[i], st->r->measured, st->budget,
                     now_s() - st->t0);
  return i;
}

/* The best measured trial on the first objective (the trust region's centre), or -1. */
static int32_t best_trial(const mi__meta_t *st) {
  int32_t b = -1;
  double bv = INFINITY;
  for (int32_t i = 0; i < st->r->count; i++) {
    double v = mi__meta_logobj(st, &st->r->trials[i], 0);
    if (isfinite(v) && v < bv) {
      bv = v;
      b = i;
    }
  }
  return b;
}

/* Warm start: each source's best points (first objective) mapped onto this space, taken
 * round-robin from the nearest source on. */
static int32_t warm_start(mi__meta_t *st, int32_t *pt, mi_error_t *err) {
  int32_t want = st->mo.warm_points, done = 0, fresh, progress = 1;
  int32_t *next = calloc((size_t)st->source_count + 1, sizeof *next);
  if (!next) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  while (done < want && progress && mi__meta_has_budget(st)) {
    progress = 0;
    for (int32_t k = 0; k < st->source_count && done < want && mi__meta_has_budget(st); k++) {
      const mi_meta_task_t *t = &st->mo.sources[st->src[k].task];
      int32_t sd = mi_space_dim_count(t->space), pick = -1;
      double pv = INFINITY;
      /* The next-best source point not yet tried from this source. */
      for (int32_t p = 0; p < t->count; p++) {
        double v = t->objectives[(size_t)p * MI_OBJ_COUNT + st->so->objectives[0]];
        int32_t rank = 0;
        if (!isfinite(v)) continue;
        for (int32_t q = 0; q < t->count; q++) {
          double u = t->objectives[(size_t)q * MI_OBJ_COUNT + st->so->objectives[0]];
          if (isfinite(u) && (u < v || (u == v && q < p))) rank++;
        }
        if (rank == next[k] && v < pv) {
          pv = v;
          pick = p;
        }
      }
      if (pick < 0) continue;
      next[k]++;
      progress = 1;
      if (mi_meta_map_point(t->space, t->graph, t->points + (size_t)pick * sd, st->s, st->mo.graph, pt, NULL) != MI_OK ||
          mi__meta_fix(st, pt) != MI_OK)
        continue;
      if (mi__meta_eval(st, pt, &fresh) < 0) {
        free(next);
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
      }
      if (fresh) done++;
    }
  }
  free(next);
  if (st->mo.report) st->mo.report->warm_points = done;
  return MI_OK;
}

static int32_t cold_design(mi__meta_t *st, int32_t count, int32_t *pt, mi_error_t *err) {
  int32_t done = 0, tries = 0, fresh;
  mi_space_default(st->s, pt);
  if (mi__meta_fix(st, pt) == MI_OK) {
    if (mi__meta_eval(st, pt, &fresh) < 0) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
    done += fresh;
  }
  while (done < count && tries < 200 && mi__meta_has_budget(st)) {
    tries++;
    if (mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK || mi__meta_fix(st, pt) != MI_OK) continue;
    if (mi__meta_eval(st, pt, &fresh) < 0) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
    done += fresh;
  }
  return MI_OK;
}

int32_t mi__meta_warm(mi__meta_t *st, int32_t *pt, mi_error_t *err) { return warm_start(st, pt, err); }
int32_t mi__meta_cold(mi__meta_t *st, int32_t count, int32_t *pt, mi_error_t *err) {
  return cold_design(st, count, pt, err);
}
int32_t mi__meta_best(const mi__meta_t *st) { return best_trial(st); }
