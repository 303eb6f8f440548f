/* ltask_tune.c - tunes a model's layer tasks: each task's kernel choices are tried in rounds
 * (one choice per task per end-to-end measurement, read back through per-layer times), tasks
 * the history already has on this device and stack cost nothing, and a new task tries the best
 * choices of its nearest measured tasks (same op, closest shapes) first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_ltask.h"

MI_API void mi_ltask_options_default(mi_ltask_options_t *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_candidates = 6;
}

MI_API void mi_ltask_result_free(mi_ltask_result_t *r) {
  if (!r) return;
  free(r->point);
  r->point = NULL;
}

typedef struct {
  char **cand; /* choices to try, [0] = the base point's */
  int32_t ncand;
  char *best; /* best choice so far (owned copy), NULL none */
  double best_s;
  int reused; /* 1: the best came from the history */
} task_state_t;

static int has_cand(const task_state_t *ts, const char *c) {
  for (int32_t i = 0; i < ts->ncand; i++)
    if (strcmp(ts->cand[i], c) == 0) return 1;
  return 0;
}

/* Takes `c` (owned) as the next candidate unless it is there already or the list is full. */
static void add_cand(task_state_t *ts, char *c, int32_t cap) {
  if (!c || ts->ncand >= cap || has_cand(ts, c)) {
    free(c);
    return;
  }
  ts->cand[ts->ncand++] = c;
}

/* History lookups ---------------------------------------------------------------------- */

typedef struct {
  char *choice; /* the first good row's (the fastest) */
  double seconds;
} exact_t;

static int exact_row(void *user, const mi_ltask_row_t *row) {
  exact_t *e = user;
  if (!row->ok || e->choice) return 0;
  e->choice = strdup(row->choice);
  e->seconds = row->seconds;
  return 1;
}

typedef struct {
  const double *f;  /* the new task's features */
  const char *self; /* its key: not a neighbour of itself */
  struct {
    char key[17];
    char *choice;
    double dist;
  } near[64];
  int32_t n;
} nearest_t;

static int near_row(void *user, const mi_ltask_row_t *row) {
  nearest_t *nb = user;
  double f[MI_LTASK_FEATURES] = {0}, d = 0;
  const char *p = row->features ? row->features : "";
  if (!row->ok || strcmp(row->key, nb->self) == 0) return 0;
  for (int32_t i = 0; i < nb->n; i++)
    if (strcmp(nb->near[i].key, row->key) == 0) return 0; /* rows come fastest first per key */
  if (nb->n >= 64) return 0;
  for (int k = 0; k < MI_LTASK_FEATURES && *p; k++) {
    char *end;
    f[k] = strtod(p, &end);
    p = *end == ',' ? end + 1 : end;
  }
  for (int k = 0; k < MI_LTASK_FEATURES; k++) d += (f[k] - nb->f[k]) * (f[k] - nb->f[k]);
  snprintf(nb->near[nb->n].key, sizeof nb->near[nb->n].key, "%s", row->key);
  nb->near[nb->n].choice = strdup(row->choice);
  nb->near[nb->n].dist = d;
  if (nb->near[nb->n].choice) nb->n++;
  return 0;
}

static void features_text(const double *f, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int k = 0; k < MI_LTASK_FEATURES && at < cap; k++)
    at += (size_t)snprintf(buf + at, cap - at, k ? ",%.6g" : "%.6g", f[k]);
}

/* The task's time per node: its nodes' times with their epilogues', averaged over the nodes
 * that were timed; NaN when none was. */
static double task_seconds(const mi_ltask_t *k, const double *node_s) {
  double sum = 0;
  int32_t timed = 0;
  for (int32_t i = 0; i < k->node_count; i++) {
    double v = node_s[k->nodes[i]];
    if (!(v > 0) || !isfinite(v)) continue;
    for (int32_t c = k->chain_at[i]; c < k->chain_at[i + 1]; c++)
      if (node_s[k->chain[c]] > 0 && isfinite(node_s[k->chain[c]])) v += node_s[k->chain[c]];
    sum += v;
    timed++;
  }
  return timed ? sum / timed : NAN;
}

/* Applies `choice` to every node of task k in pt; 1 when every node took it. */
static int apply_all(const mi_space_t *s, int32_t *pt, const mi_ltask_t *k, const char *choice) {
  int ok = 1;
  for (int32_t i = 0; i < k->node_count; i++) ok &= mi_ltask_apply(s, pt, k->nodes[i], choice);
  return ok;
}

/* The choices a task tries: the base point's, the nearest measured tasks' best (up to 2), each
 * other variant at its default knobs, then one knob of the base variant changed at a time. */
static void candidates(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k,
                       task_state_t *ts, nearest_t *nb, int32_t cap, int *warm) {
  int32_t D = mi_space_dim_count(s), rep = k->nodes[0];
  int32_t *tmp = malloc((size_t)D * sizeof *tmp + 1);
  if (!tmp) return;
  add_cand(ts, mi_ltask_choice(s, base, rep), cap);
  *warm = 0;
  for (int32_t taken = 0; nb && taken < 2 && nb->n > 0;) {
    int32_t bi = 0;
    for (int32_t i = 1; i < nb->n; i++)
      if (nb->near[i].dist < nb->near[bi].dist) bi = i;
    memcpy(tmp, base, (size_t)D * sizeof *tmp);
    if (mi_ltask_apply(s, tmp, rep, nb->near[bi].choice) && mi_space_repair(s, tmp, NULL, NULL) == MI_OK) {
      char *c = mi_ltask_choice(s, tmp, rep);
      if (c && !has_cand(ts, c)) {
        *warm = 1;
        taken++;
      }
      add_cand(ts, c, cap);
    }
    free(nb->near[bi].choice);
    nb->near[bi] = nb->near[--nb->n];
  }
  for (int32_t d = 0; d < D; d++) {
    if (mi_space_dim_node(s, d) != rep || mi_space_dim_kind(s, d) != MI_DIM_VARIANT) continue;
    for (int32_t v = 0; v < mi_space_dim_size(s, d); v++) {
      if (v == base[d]) continue;
      memcpy(tmp, base, (size_t)D * sizeof *tmp);
      tmp[d] = v;
      if (mi_space_repair(s, tmp, NULL, NULL) == MI_OK) add_cand(ts, mi_ltask_choice(s, tmp, rep), cap);
    }
  }
  for (int32_t d = 0; d < D; d++) {
    if (mi_space_dim_node(s, d) != rep || mi_space_dim_kind(s, d) != MI_DIM_KNOB ||
        !mi_space_active(s, base, d))
      continue;
    for (int32_t v = 0; v < mi_space_dim_size(s, d); v++) {
      if (v == base[d]) continue;
      memcpy(tmp, base, (size_t)D * sizeof *tmp);
      tmp[d] = v;
      if (mi_space_repair(s, tmp, NULL, NULL) == MI_OK) add_cand(ts, mi_ltask_choice(s, tmp, rep), cap);
    }
  }
  free(tmp);
}

static void put_row(const mi_ltask_options_t *o, const mi_ltask_t *k, const char *choice, int ok,
                    double seconds) {
  mi_ltask_row_t row;
  char feat[160];
  if (!o->history) return;
  features_text(k->features, feat, sizeof feat);
  memset(&row, 0, sizeof row);
  row.key = k->key;
  row.device_hash = o->device_hash;
  row.stack_hash = o->stack_hash;
  row.op = k->op;
  row.text = k->text;
  row.features = feat;
  row.choice = choice;
  row.ok = ok;
  row.seconds = seconds;
  /* The table is a cache of what was measured: a failed write costs a later re-measurement,
   * not this tune. */
  mi_history_ltask_put(o->history, &row, NULL);
}

MI_API int32_t mi_ltasks_tune(const mi_graph_t *g, const mi_space_t *s, const mi_ltasks_t *t,
                              const int32_t *base, const mi_ltask_options_t *o,
                              mi_ltask_result_t *out, mi_error_t *err) {
  int32_t D, rc = MI_OK, cap, rounds, *pt = NULL, *in_round = NULL;
  task_state_t *ts = NULL;
  double *node_s = NULL;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_ltasks_tune: out is NULL");
  memset(out, 0, sizeof *out);
  if (!g || !s || !t || !base || !o || !o->measure)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_ltasks_tune: a graph, space, tasks, base point and measure are required");
  D = mi_space_dim_count(s);
  cap = o->max_candidates > 0 ? o->max_candidates : 6;
  rounds = o->max_rounds > 0 ? o->max_rounds : cap;
  pt = malloc((size_t)D * sizeof *pt + 1);
  out->point = malloc((size_t)D * sizeof *out->point + 1);
  node_s = malloc(((size_t)g->node_count + 1) * sizeof *node_s);
  in_round = malloc(((size_t)t->count + 1) * sizeof *in_round);
  ts = calloc((size_t)t->count + 1, sizeof *ts);
  if (!pt || !out->point || !node_s || !in_round || !ts) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer tasks: out of memory");
    goto done;
  }
  out->tasks = t->count;
  for (int32_t i = 0; i < t->count; i++) {
    const mi_ltask_t *k = &t->tasks[i];
    exact_t ex = {NULL, NAN};
    int warm = 0;
    ts[i].best_s = INFINITY;
    if (!(ts[i].cand = calloc((size_t)cap, sizeof *ts[i].cand))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer tasks: out of memory");
      goto done;
    }
    if (o->history) {
      mi_history_ltask_query(o->history, o->device_hash, o->stack_hash, NULL, k->key, exact_row, &ex, NULL);
      memcpy(pt, base, (size_t)D * sizeof *pt);
      if (ex.choice && apply_all(s, pt, k, ex.choice)) {
        /* Measured before, by this model or another: taken as it is. */
        ts[i].best = ex.choice;
        ts[i].best_s = ex.seconds;
        ts[i].reused = 1;
        out->reused++;
        continue;
      }
      free(ex.choice);
    }
    {
      nearest_t nb;
      memset(&nb, 0, sizeof nb);
      nb.f = k->features;
      nb.self = k->key;
      if (o->history)
        mi_history_ltask_query(o->history, o->device_hash, o->stack_hash, k->op, NULL, near_row, &nb, NULL);
      candidates(s, base, k, &ts[i], o->history ? &nb : NULL, cap, &warm);
      for (int32_t j = 0; j < nb.n; j++) free(nb.near[j].choice);
    }
    out->warm += warm;
  }
  for (int32_t r = 0; r < rounds; r++) {
    int any = 0, n_in = 0;
    mi_error_t e;
    memcpy(pt, base, (size_t)D * sizeof *pt);
    for (int32_t i = 0; i < t->count; i++) {
      in_round[i] = 0;
      if (ts[i].reused || r >= ts[i].ncand) continue;
      if (!apply_all(s, pt, &t->tasks[i], ts[i].cand[r])) continue;
      in_round[i] = 1;
      any = 1;
      n_in++;
    }
    if (!any) break;
    mi_space_repair(s, pt, NULL, NULL);
    for (int32_t n = 0; n < g->node_count; n++) node_s[n] = NAN;
    mi_error_clear(&e);
    rc = o->measure(o->measure_ctx, pt, node_s, &e);
    out->rounds++;
    for (int32_t i = 0; i < t->count; i++) {
      char *actual;
      double sec;
      if (!in_round[i]) continue;
      out->layer_measurements++;
      /* What the node ran after repair, which may differ from the candidate. */
      if (!(actual = mi_ltask_choice(s, pt, t->tasks[i].nodes[0]))) continue;
      sec = rc == MI_OK ? task_seconds(&t->tasks[i], node_s) : NAN;
      /* A failed round says which choice failed only when it tried one task. */
      if (rc == MI_OK || n_in == 1) put_row(o, &t->tasks[i], actual, rc == MI_OK && isfinite(sec), sec);
      if (rc == MI_OK && isfinite(sec) && sec < ts[i].best_s) {
        free(ts[i].best);
        ts[i].best = actual;
        ts[i].best_s = sec;
      } else {
        free(actual);
      }
    }
    rc = MI_OK; /* one failed round fails only its candidates */
  }
  memcpy(out->point, base, (size_t)D * sizeof *out->point);
  for (int32_t i = 0; i < t->count; i++) {
    char *b0;
    if (!ts[i].reused && ts[i].ncand > 0) out->measured_tasks++;
    if (!ts[i].best) continue;
    apply_all(s, out->point, &t->tasks[i], ts[i].best);
    b0 = mi_ltask_choice(s, base, t->tasks[i].nodes[0]);
    out->improved += b0 && strcmp(b0, ts[i].best) != 0;
    free(b0);
  }
  mi_space_repair(s, out->point, NULL, NULL);
done:
  for (int32_t i = 0; ts && i < t->count; i++) {
    for (int32_t j = 0; j < ts[i].ncand; j++) free(ts[i].cand[j]);
    free(ts[i].cand);
    free(ts[i].best);
  }
  free(ts);
  free(pt);
  free(node_s);
  free(in_round);
  if (rc != MI_OK) mi_ltask_result_free(out);
  return rc;
}
