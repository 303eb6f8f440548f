/* ltask_tune.c - tunes a model's layer tasks: each task's kernel choices are tried in rounds
 * (one choice per task per end-to-end measurement, read back through per-layer times), tasks
 * the history already has on this device and stack cost nothing, and a new task tries the best
 * choices of its nearest measured tasks (same op, closest shapes) first. The knob stage that
 * follows the variant rounds is ltask_knob.c. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space.h"
#include "task/ltask_internal.h"

MI_API void mi_ltask_options_default(mi_ltask_options_t *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_candidates = 6;
}

double mi__ltask_phase_left(const mi_ltask_options_t *o, double phase_t0, int32_t rounds) {
  int has = o->struct_size >= offsetof(mi_ltask_options_t, max_seconds) + sizeof o->max_seconds;
  int hard = o->struct_size >= offsetof(mi_ltask_options_t, reserve_runs) + sizeof o->reserve_runs;
  double el = mi_now_s() - phase_t0, left;
  if (!has || !(o->max_seconds > 0)) return INFINITY;
  left = o->max_seconds - el;
  if (hard && o->hard_seconds > 0 && rounds > 0) {
    double after = 1.5 * (o->reserve_runs > 0 ? o->reserve_runs : 0) * el / rounds;
    left = fmax(left, o->hard_seconds - el - after);
  }
  return left;
}

MI_API void mi_ltask_result_free(mi_ltask_result_t *r) {
  if (!r) return;
  free(r->point);
  r->point = NULL;
}

typedef mi__ltask_state_t task_state_t;

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

/* The nearest-task warm start: a new task looks at the measured tasks of its op and kernel class
 * on this device and stack, takes up to NEAR_K within NEAR_RADIUS (Euclidean distance of the
 * log2 sizes), and when at least two of them agree on their best choice it measures only that
 * choice beside the default (the guard: the faster of the two wins); when they disagree, their
 * measurements order its candidates and cut the choices each of them found clearly slower. */
#define NEAR_K 3
#define NEAR_RADIUS 3.0 /* log2 units: twice the channels and the spatial size is about 2.4 */
#define NEAR_CUT 1.25   /* a choice every neighbour that measured it found this much slower */
#define LIST_MAX 64     /* candidates gathered before the cap */

typedef struct {
  char key[17];
  double f[MI_LTASK_FEATURES];
  int nf;       /* features stored (older rows have no class features) */
  int32_t best; /* its fastest row */
  double dist;
} nb_task_t;

typedef struct {
  int32_t task;
  char *choice;
  double seconds;
} nb_row_t;

typedef struct {
  const double *f;  /* the new task's features */
  const char *self; /* its key: not a neighbour of itself */
  nb_task_t *t;
  nb_row_t *r;
  int32_t nt, ct, nr, cr;
} nearest_t;

static int near_row(void *user, const mi_ltask_row_t *row) {
  nearest_t *nb = user;
  const char *p = row->features ? row->features : "";
  int32_t i;
  if (!row->ok || !(row->seconds > 0) || strcmp(row->key, nb->self) == 0) return 0;
  for (i = 0; i < nb->nt && strcmp(nb->t[i].key, row->key) != 0; i++) {}
  if (i == nb->nt) {
    nb_task_t *k;
    if (nb->nt == nb->ct) {
      nb_task_t *g = realloc(nb->t, (size_t)(nb->ct ? 2 * nb->ct : 32) * sizeof *g);
      if (!g) return 1;
      nb->t = g;
      nb->ct = nb->ct ? 2 * nb->ct : 32;
    }
    k = &nb->t[nb->nt++];
    memset(k, 0, sizeof *k);
    snprintf(k->key, sizeof k->key, "%s", row->key);
    k->best = -1;
    while (k->nf < MI_LTASK_FEATURES && *p) {
      char *end;
      k->f[k->nf] = strtod(p, &end);
      if (end == p) break;
      k->nf++;
      p = *end == ',' ? end + 1 : end;
    }
  }
  if (nb->nr == nb->cr) {
    nb_row_t *g = realloc(nb->r, (size_t)(nb->cr ? 2 * nb->cr : 64) * sizeof *g);
    if (!g) return 1;
    nb->r = g;
    nb->cr = nb->cr ? 2 * nb->cr : 64;
  }
  if (!(nb->r[nb->nr].choice = strdup(row->choice))) return 1;
  nb->r[nb->nr].task = i;
  nb->r[nb->nr].seconds = row->seconds;
  if (nb->t[i].best < 0 || row->seconds < nb->r[nb->t[i].best].seconds) nb->t[i].best = nb->nr;
  nb->nr++;
  return 0;
}

static void near_free(nearest_t *nb) {
  for (int32_t i = 0; i < nb->nr; i++) free(nb->r[i].choice);
  free(nb->r);
  free(nb->t);
}

/* Distance of a measured task to the new one: infinite unless the kernel class is the same
 * (rows written before the class features existed never qualify). */
static double near_distance(const nb_task_t *k, const double *f) {
  double d = 0;
  if (k->nf < MI_LTASK_FEATURES) return INFINITY;
  for (int j = MI_LTASK_CLASS; j < MI_LTASK_FEATURES; j++)
    if (fabs(k->f[j] - f[j]) > 1e-3) return INFINITY; /* stored with 6 digits */
  for (int j = 0; j < MI_LTASK_CLASS; j++) d += (k->f[j] - f[j]) * (k->f[j] - f[j]);
  return sqrt(d);
}

/* Up to NEAR_K nearest tasks within the radius, nearest first, into pick; returns how many. */
static int32_t near_pick(nearest_t *nb, int32_t *pick) {
  int32_t n = 0;
  for (int32_t i = 0; i < nb->nt; i++) nb->t[i].dist = near_distance(&nb->t[i], nb->f);
  while (n < NEAR_K) {
    int32_t b = -1;
    for (int32_t i = 0; i < nb->nt; i++) {
      int taken = 0;
      for (int32_t j = 0; j < n; j++) taken |= pick[j] == i;
      if (!taken && nb->t[i].dist <= NEAR_RADIUS && (b < 0 || nb->t[i].dist < nb->t[b].dist)) b = i;
    }
    if (b < 0) break;
    pick[n++] = b;
  }
  return n;
}

/* Neighbour j's time for `choice` over its best; NAN when it did not measure it. */
static double near_ratio(const nearest_t *nb, int32_t j, const char *choice) {
  const nb_task_t *k = &nb->t[j];
  for (int32_t i = 0; i < nb->nr; i++)
    if (nb->r[i].task == j && !strcmp(nb->r[i].choice, choice)) return nb->r[i].seconds / nb->r[k->best].seconds;
  return NAN;
}

static void features_text(const double *f, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int k = 0; k < MI_LTASK_FEATURES && at < cap; k++)
    at += (size_t)snprintf(buf + at, cap - at, k ? ",%.6g" : "%.6g", f[k]);
}

/* The task's time per node: its nodes' times with their epilogues', averaged over the nodes
 * that were timed; NaN when none was. */
double mi__ltask_seconds(const mi_ltask_t *k, const double *node_s) {
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

/* Node i of task k's choice in pt: its own, or for a dw+pw unit "DW | PW" (malloc'd). */
char *mi__ltask_task_choice(const mi_space_t *s, const int32_t *pt, const mi_ltask_t *k, int32_t i) {
  char *a = mi_ltask_choice(s, pt, k->nodes[i]), *b, *c;
  size_t n;
  if (!k->second || !a) return a;
  if (!(b = mi_ltask_choice(s, pt, k->second[i]))) {
    free(a);
    return NULL;
  }
  n = strlen(a) + strlen(b) + 4;
  if ((c = malloc(n))) snprintf(c, n, "%s | %s", a, b);
  free(a);
  free(b);
  return c;
}

/* Sets node i of task k (both convs of a dw+pw unit) from a task_choice text; 1 when every part
 * applied (pt is then changed), 0 otherwise (pt unchanged). */
static int task_apply(const mi_space_t *s, int32_t *pt, const mi_ltask_t *k, int32_t i, const char *choice) {
  size_t bytes = (size_t)mi_space_dim_count(s) * sizeof *pt;
  const char *bar;
  char *first;
  int32_t *was;
  int ok;
  if (!k->second) return mi_ltask_apply(s, pt, k->nodes[i], choice);
  if (!(bar = strstr(choice, " | "))) return 0;
  first = malloc((size_t)(bar - choice) + 1);
  was = malloc(bytes + 1);
  ok = first && was;
  if (ok) {
    memcpy(first, choice, (size_t)(bar - choice));
    first[bar - choice] = '\0';
    memcpy(was, pt, bytes);
    ok = mi_ltask_apply(s, pt, k->nodes[i], first) && mi_ltask_apply(s, pt, k->second[i], bar + 3);
    if (!ok) memcpy(pt, was, bytes);
  }
  free(first);
  free(was);
  return ok;
}

/* Applies `choice` to every node of task k in pt; 1 when every node took it. */
int mi__ltask_apply_all(const mi_space_t *s, int32_t *pt, const mi_ltask_t *k, const char *choice) {
  int ok = 1;
  for (int32_t i = 0; i < k->node_count; i++) ok &= task_apply(s, pt, k, i, choice);
  return ok;
}

/* The cold list of a task: the base point's choice, each other variant at its default knobs
 * (those that keep a dw+pw unit one kernel first), then one knob of the base variant changed at
 * a time (up to LIST_MAX, into all). For a dw+pw unit each step alternates between the two
 * convs, so that a short list tries both. */
static void cold_list(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k, int32_t *tmp,
                      task_state_t *all) {
  int32_t D = mi_space_dim_count(s), node[2] = {k->nodes[0], k->second ? k->second[0] : -1};
  add_cand(all, mi__ltask_task_choice(s, base, k, 0), LIST_MAX);
  for (int pass = 0; pass < 2; pass++) {
    char *list[2][LIST_MAX];
    int32_t n[2] = {0, 0};
    for (int j = 0; j < 2; j++)
      for (int32_t d = 0; d < D && node[j] >= 0; d++) {
        int32_t kind = mi_space_dim_kind(s, d);
        if (mi_space_dim_node(s, d) != node[j] || kind != (pass ? MI_DIM_KNOB : MI_DIM_VARIANT) ||
            (pass && !mi_space_active(s, base, d)))
          continue;
        /* Variants that run the task's unit as one kernel first (a dw+pw unit's anchor): one
         * of them is what auto runs, and its knobs are stepped from auto's (ltask_knob.c). */
        int32_t size = mi_space_dim_size(s, d);
        for (int32_t o = 0; o < 2 * size && n[j] < LIST_MAX; o++) {
          int32_t v = o % size;
          if (v == base[d] || (!pass && (o < size) != mi__ltask_keeps_unit(s, k, j, d, v)) || (pass && o >= size) ||
              (!pass && !mi__space_variant_keeps_fp32(s, d, v)))
            continue;
          memcpy(tmp, base, (size_t)D * sizeof *tmp);
          tmp[d] = v;
          if (mi_space_repair(s, tmp, NULL, NULL) == MI_OK) list[j][n[j]++] = mi__ltask_task_choice(s, tmp, k, 0);
        }
      }
    for (int32_t i = 0; i < n[0] || i < n[1]; i++)
      for (int j = 0; j < 2; j++)
        if (i < n[j]) add_cand(all, list[j][i], LIST_MAX);
  }
}

/* Another task's choice `c` as task k's first node (with its unit's pointwise conv) in base
 * runs it (repaired): malloc'd, NULL if it does not apply. */
static char *mapped(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k, int32_t *tmp, const char *c) {
  memcpy(tmp, base, (size_t)mi_space_dim_count(s) * sizeof *tmp);
  if (!task_apply(s, tmp, k, 0, c) || mi_space_repair(s, tmp, NULL, NULL) != MI_OK) return NULL;
  return mi__ltask_task_choice(s, tmp, k, 0);
}

/* The length of task k's cold list, at most cap: what a run without history measures for it. */
static int32_t cold_count(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k, int32_t cap) {
  int32_t *tmp = malloc((size_t)mi_space_dim_count(s) * sizeof *tmp + 1), n;
  task_state_t all;
  memset(&all, 0, sizeof all);
  if (!tmp || !(all.cand = calloc(LIST_MAX, sizeof *all.cand))) {
    free(tmp);
    return 0;
  }
  cold_list(s, base, k, tmp, &all);
  n = all.ncand < cap ? all.ncand : cap;
  for (int32_t i = 0; i < all.ncand; i++) free(all.cand[i]);
  free(all.cand);
  free(tmp);
  return n;
}

/* The choices task k tries, into ts (at most cap): without neighbours its cold list; when its
 * nearest measured tasks agree on a best, the base choice and that one (*warm = 2); when they
 * disagree, the base choice, then the rest ordered by their measurements with the choices each
 * of them found NEAR_CUT slower cut (*warm = 1). Returns the length of its cold list (capped):
 * what a run without history measures for it. */
static int32_t candidates(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k,
                          task_state_t *ts, nearest_t *nb, int32_t cap, int *warm) {
  int32_t D = mi_space_dim_count(s), pick[NEAR_K], np = 0, cold = 0;
  int32_t *tmp = malloc((size_t)D * sizeof *tmp + 1);
  char *nbest[NEAR_K] = {NULL}, *list[LIST_MAX + NEAR_K];
  double score[LIST_MAX + NEAR_K];
  task_state_t all;
  int agreed;
  memset(&all, 0, sizeof all);
  *warm = 0;
  if (!tmp || !(all.cand = calloc(LIST_MAX, sizeof *all.cand))) goto done;
  cold_list(s, base, k, tmp, &all);
  cold = all.ncand < cap ? all.ncand : cap;
  if (all.ncand == 0) goto done;
  add_cand(ts, strdup(all.cand[0]), cap); /* the default: always measured, the guard */
  if (nb) np = near_pick(nb, pick);
  for (int32_t j = 0; j < np; j++) nbest[j] = mapped(s, base, k, tmp, nb->r[nb->t[pick[j]].best].choice);
  agreed = np >= 2;
  for (int32_t j = 0; j < np; j++) agreed &= nbest[j] && !strcmp(nbest[j], nbest[0] ? nbest[0] : "");
  if (agreed) {
    add_cand(ts, strdup(nbest[0]), cap);
    *warm = 2;
  } else {
    int32_t n = 0;
    for (int32_t j = 0; j < np; j++)
      if (nbest[j]) list[n++] = nbest[j];
    for (int32_t i = 1; i < all.ncand; i++) list[n++] = all.cand[i];
    for (int32_t i = 0; i < n; i++) {
      /* Mean ratio to the best over the neighbours that measured it; unknown ones go last. */
      double sum = 0, lo = INFINITY;
      int32_t m = 0;
      for (int32_t j = 0; j < np; j++) {
        double r = near_ratio(nb, pick[j], list[i]);
        if (!isfinite(r)) continue;
        sum += r;
        lo = r < lo ? r : lo;
        m++;
      }
      score[i] = m == 0 ? INFINITY : lo >= NEAR_CUT ? NAN
                                                    : sum / m;
    }
    for (int32_t i = 0; i < n; i++)
      if (isnan(score[i])) list[i] = NULL; /* cut */
    for (;;) {
      int32_t b = -1;
      for (int32_t i = 0; i < n; i++)
        if (list[i] && (b < 0 || score[i] < score[b])) b = i;
      if (b < 0) break;
      add_cand(ts, strdup(list[b]), cap);
      list[b] = NULL;
    }
    *warm = np > 0;
  }
done:
  for (int32_t j = 0; j < NEAR_K; j++) free(nbest[j]);
  for (int32_t i = 0; i < all.ncand; i++) free(all.cand[i]);
  free(all.cand);
  free(tmp);
  return cold;
}

void mi__ltask_put_row(const mi_ltask_options_t *o, const mi_ltask_t *k, const char *choice, int ok,
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

void mi__ltask_tried(mi__ltask_state_t *ts, const char *choice, double seconds) {
  char *c;
  if (ts->ntried == ts->ctried) {
    int32_t n = ts->ctried ? 2 * ts->ctried : 16;
    char **a = realloc(ts->tried, (size_t)n * sizeof *a);
    double *b;
    if (a) ts->tried = a;
    if (!a || !(b = realloc(ts->tried_s, (size_t)n * sizeof *b))) return; /* only a lost skip */
    ts->tried_s = b;
    ts->ctried = n;
  }
  if (!(c = strdup(choice))) return;
  ts->tried[ts->ntried] = c;
  ts->tried_s[ts->ntried++] = seconds;
}

MI_API int32_t mi_ltasks_tune(const mi_graph_t *g, const mi_space_t *s, const mi_ltasks_t *t,
                              const int32_t *base, const mi_ltask_options_t *o,
                              mi_ltask_result_t *out, mi_error_t *err) {
  int32_t D, rc = MI_OK, cap, rounds, *pt = NULL, *in_round = NULL;
  task_state_t *ts = NULL;
  double *node_s = NULL, t0 = mi_now_s();
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
    int32_t cold;
    ts[i].best_s = INFINITY;
    if (!(ts[i].cand = calloc((size_t)cap, sizeof *ts[i].cand))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer tasks: out of memory");
      goto done;
    }
    if (o->history) {
      mi_history_ltask_query(o->history, o->device_hash, o->stack_hash, NULL, k->key, exact_row, &ex, NULL);
      memcpy(pt, base, (size_t)D * sizeof *pt);
      if (ex.choice && mi__ltask_apply_all(s, pt, k, ex.choice)) {
        /* Measured before, by this model or another: taken as it is. */
        ts[i].best = ex.choice;
        ts[i].best_s = ex.seconds;
        ts[i].reused = 1;
        out->reused++;
        out->cold_run_layer_measurements += cold_count(s, base, k, cap < rounds ? cap : rounds);
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
      cold = candidates(s, base, k, &ts[i], o->history ? &nb : NULL, cap, &warm);
      near_free(&nb);
    }
    out->cold_run_layer_measurements += cold < rounds ? cold : rounds;
    out->warm += warm > 0;
    out->agreed += warm == 2;
    out->cold += warm == 0;
    ts[i].warm = warm;
  }
  for (int32_t r = 0; r < rounds; r++) {
    int any = 0, n_in = 0;
    mi_error_t e;
    if (mi__ltask_phase_left(o, t0, out->rounds) <= 0) {
      /* Out of the phase's seconds: the rounds some task still had are left out, and counted. */
      int32_t most = 0;
      for (int32_t i = 0; i < t->count; i++)
        if (!ts[i].reused && ts[i].ncand > most) most = ts[i].ncand;
      out->variant_rounds_cut = (most < rounds ? most : rounds) - r;
      if (out->variant_rounds_cut < 0) out->variant_rounds_cut = 0;
      break;
    }
    memcpy(pt, base, (size_t)D * sizeof *pt);
    for (int32_t i = 0; i < t->count; i++) {
      in_round[i] = 0;
      if (ts[i].reused || r >= ts[i].ncand) continue;
      if (!mi__ltask_apply_all(s, pt, &t->tasks[i], ts[i].cand[r])) continue;
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
      out->warm_layer_measurements += ts[i].warm > 0;
      /* What the node ran after repair, which may differ from the candidate. */
      if (!(actual = mi__ltask_task_choice(s, pt, &t->tasks[i], 0))) continue;
      sec = rc == MI_OK ? mi__ltask_seconds(&t->tasks[i], node_s) : NAN;
      /* A failed round says which choice failed only when it tried one task. */
      if (rc == MI_OK || n_in == 1) mi__ltask_put_row(o, &t->tasks[i], actual, rc == MI_OK && isfinite(sec), sec);
      mi__ltask_tried(&ts[i], actual, rc == MI_OK ? sec : NAN);
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
  {
    /* The knob stage stops at its own cap (knob_seconds) or when the phase's seconds are out,
     * which it reads before each round (their extension depends on the rounds' mean time). */
    if ((rc = mi__ltask_knob_stage(g, s, t, base, o, t0, ts, out, err)) != MI_OK) goto done;
  }
  memcpy(out->point, base, (size_t)D * sizeof *out->point);
  for (int32_t i = 0; i < t->count; i++) {
    char *b0;
    if (!ts[i].reused && ts[i].ncand > 0) out->measured_tasks++;
    if (!ts[i].best) continue;
    mi__ltask_apply_all(s, out->point, &t->tasks[i], ts[i].best);
    b0 = mi__ltask_task_choice(s, base, &t->tasks[i], 0);
    out->improved += b0 && strcmp(b0, ts[i].best) != 0;
    free(b0);
  }
  mi_space_repair(s, out->point, NULL, NULL);
done:
  for (int32_t i = 0; ts && i < t->count; i++) {
    for (int32_t j = 0; j < ts[i].ncand; j++) free(ts[i].cand[j]);
    free(ts[i].cand);
    free(ts[i].best);
    for (int32_t j = 0; j < ts[i].ntried; j++) free(ts[i].tried[j]);
    free(ts[i].tried);
    free(ts[i].tried_s);
  }
  free(ts);
  free(pt);
  free(node_s);
  free(in_round);
  if (rc != MI_OK) mi_ltask_result_free(out);
  return rc;
}
