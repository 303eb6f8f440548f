/* bench_lomo.c - leave one model out (MI_BENCH_LOMO=1): the target is one model on a device, the
 * history only OTHER models (their per-layer tables: configurations with each layer's time and
 * the end-to-end latency), on the same device or on every device. What per-layer prediction is
 * for: layers seen in other models. Prediction with 10 target measurements (end to end only, per
 * layer only, the default blend) and the search outcome with and without the per-layer model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lomo.h"

enum { SAMPLES = 10,
       PER_SOURCE = 64,
       LOMO_BUDGET = 64 };

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double med(double *v, int n) {
  int c = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(v[i])) v[c++] = v[i];
  if (c == 0) return NAN;
  qsort(v, (size_t)c, sizeof *v, cmp_d);
  return c % 2 ? v[c / 2] : 0.5 * (v[c / 2 - 1] + v[c / 2]);
}

/* The history: other models' tasks (same device only when same_device), PER_SOURCE rows of their
 * per-layer tables each from a seed-dependent offset, with end-to-end latencies and layer times. */
typedef struct {
  int32_t n;
  mi_meta_task_t es[BS_MAX_TASKS];
  mi_meta_layer_task_t ls[BS_MAX_TASKS];
  int32_t *pts[BS_MAX_TASKS];
  double *obj[BS_MAX_TASKS], *lat[BS_MAX_TASKS], *lsec[BS_MAX_TASKS];
} lomo_src_t;

static void src_free(lomo_src_t *h) {
  for (int32_t j = 0; j < h->n; j++) {
    free(h->pts[j]);
    free(h->obj[j]);
    free(h->lat[j]);
    free(h->lsec[j]);
  }
  memset(h, 0, sizeof *h);
}

static void src_build(bs_task_t *tasks, int32_t ntask, int32_t k, int same_device, uint64_t seed, lomo_src_t *h) {
  const bs_task_t *t = &tasks[k];
  memset(h, 0, sizeof *h);
  for (int32_t j = 0; j < ntask && h->n < BS_MAX_TASKS; j++) {
    bs_task_t *u = &tasks[j];
    int32_t c = u->ln < PER_SOURCE ? u->ln : PER_SOURCE, Nu, q = h->n;
    if (j == k || u->ln == 0 || u->stack != t->stack || !strcmp(u->model, t->model)) continue;
    if (same_device && strcmp(u->spec, t->spec)) continue;
    Nu = u->graph->node_count;
    h->pts[q] = malloc((size_t)c * u->D * sizeof(int32_t));
    h->obj[q] = malloc((size_t)c * MI_OBJ_COUNT * sizeof(double));
    h->lat[q] = malloc((size_t)c * sizeof(double));
    h->lsec[q] = malloc((size_t)c * Nu * sizeof(double));
    h->n++;
    if (!h->pts[q] || !h->obj[q] || !h->lat[q] || !h->lsec[q]) break;
    for (int32_t i = 0; i < c; i++) {
      int32_t r = (int32_t)((i + seed * 17u) % (uint64_t)u->ln);
      const bs_row_t *row = &u->rows[u->lrow[r]];
      memcpy(h->pts[q] + (size_t)i * u->D, row->pt, (size_t)u->D * sizeof(int32_t));
      memcpy(h->obj[q] + (size_t)i * MI_OBJ_COUNT, row->obj, MI_OBJ_COUNT * sizeof(double));
      h->lat[q][i] = row->obj[MI_OBJ_LATENCY];
      memcpy(h->lsec[q] + (size_t)i * Nu, u->lsec + (size_t)r * Nu, (size_t)Nu * sizeof(double));
    }
    h->es[q].name = u->name;
    h->es[q].space = u->space;
    h->es[q].graph = u->graph;
    memcpy(h->es[q].desc, u->desc, sizeof u->desc);
    h->es[q].stack_hash = u->stack;
    h->es[q].count = c;
    h->es[q].points = h->pts[q];
    h->es[q].objectives = h->obj[q];
    h->es[q].layer_latency = h->lsec[q];
    h->ls[q].space = u->space;
    h->ls[q].graph = u->graph;
    memcpy(h->ls[q].desc, u->desc, sizeof u->desc);
    h->ls[q].count = c;
    h->ls[q].points = h->pts[q];
    h->ls[q].layer_latency = h->lsec[q];
    h->ls[q].latency = h->lat[q];
  }
}

/* out: Spearman / within 10% of end to end only [0,1], per layer only [2,3], the blend [4,5],
 * and the weight the blend's fit gave the per-layer model [6]. */
static void predict(bs_task_t *tasks, int32_t ntask, int32_t k, int same_device, uint64_t seed, double *out) {
  bs_task_t *t = &tasks[k];
  int32_t q = 0, pick[SAMPLES], objs[1] = {MI_OBJ_LATENCY};
  bs_rows_t b;
  mi_meta_report_t *rep = calloc(1, sizeof *rep);
  lomo_src_t h;
  memset(&h, 0, sizeof h);
  for (int i = 0; i < 7; i++) out[i] = NAN;
  if (!bs_rows_alloc(t, SAMPLES, &b) || !rep || t->ln < SAMPLES + 10) goto done;
  /* the same 10 as the per-layer table of bench_report.c */
  q = bs_layer_split(t, seed, SAMPLES, pick, b.pts, b.obj, b.lat, b.lsec, b.query, b.truth);
  src_build(tasks, ntask, k, same_device, seed, &h);
  if (h.n == 0) goto done;
  for (int v = 0; v < 2; v++) {
    /* v 0: end to end only (the per-layer model off); v 1: the default blend. */
    mi_search_options_t so;
    mi_meta_options_t mo;
    bs_predict_options(t, seed, objs, &so, &mo);
    mo.sources = h.es;
    mo.source_count = h.n;
    mo.no_layer_model = v == 0;
    mo.report = rep;
    if (mi_meta_predict_points(t->space, &so, &mo, b.pts, b.obj, SAMPLES, b.query, q, b.pred, NULL) == MI_OK) {
      out[v ? 4 : 0] = mi_metric_spearman(b.pred, b.truth, q);
      out[v ? 5 : 1] = mi_metric_within(b.pred, b.truth, q, 0.1);
      if (v) out[6] = rep->layer_model ? rep->layer_weight[0] : NAN;
    }
  }
  /* Per layer only: composed over the other models' layers and the 10 target measurements'. */
  bs_layer_score(t, SAMPLES, b.pts, b.lat, b.lsec, h.ls, h.n, seed, b.query, q, b.truth, b.pred, out + 2, NULL);
done:
  src_free(&h);
  bs_rows_free(&b);
  free(rep);
}

/* The table evaluator with the target's per-layer times where its per-layer table has the
 * configuration (as mi-host tune's evaluator hands them back). */
typedef struct {
  bs_task_t *t;
  int32_t last; /* index into the per-layer table of the last evaluation, -1: none */
} lomo_eval_t;

static int32_t lomo_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj, mi_error_t *err) {
  lomo_eval_t *e = ctx;
  int32_t rc = bs_evaluate(e->t, s, pt, obj, err), row = bs_find(e->t, mi_space_hash(s, pt));
  e->last = -1;
  for (int32_t i = 0; rc == MI_OK && row >= 0 && i < e->t->ln; i++)
    if (e->t->lrow[i] == row) e->last = i;
  return rc;
}

static int32_t lomo_layers(void *ctx, double *sec, int32_t cap) {
  lomo_eval_t *e = ctx;
  int32_t N = e->t->graph->node_count;
  if (e->last < 0 || cap < N) return 0;
  memcpy(sec, e->t->lsec + (size_t)e->last * N, (size_t)N * sizeof *sec);
  return N;
}

/* Ours warm with the other models' history: measurements to within 5% of the reference and the
 * best after 20 over the reference; with (no_layer 0) or without the per-layer model. */
static void search(bs_task_t *tasks, int32_t ntask, int32_t k, int no_layer, uint64_t seed, double *to5, double *b20,
                   double *w) {
  bs_task_t *t = &tasks[k];
  int32_t objs[2] = {MI_OBJ_LATENCY, MI_OBJ_MEMORY};
  mi_search_options_t o;
  mi_meta_options_t mo;
  mi_meta_report_t *rep = calloc(1, sizeof *rep);
  mi_search_result_t *r = NULL;
  lomo_eval_t ev = {t, -1};
  lomo_src_t h;
  double best = INFINITY;
  *to5 = *b20 = *w = NAN;
  if (!rep) return;
  src_build(tasks, ntask, k, 0, seed, &h);
  bs_search_options(&o, seed, LOMO_BUDGET, 2, objs, lomo_evaluate, &ev, t->frozen);
  o.layer_times = lomo_layers;
  o.layer_times_ctx = &ev;
  bs_meta_options(t, &mo);
  mo.screen = 4000; /* as the benchmark's ours (bench_methods.c) */
  mo.report = rep;
  mo.sources = h.es;
  mo.source_count = h.n;
  mo.no_layer_model = no_layer;
  {
    /* MI_BENCH_LOMO_WARM=0: no warm points, so the history acts only through the surrogate
     * (what the per-layer model can change), not through its mapped best configurations. */
    const char *wp = getenv("MI_BENCH_LOMO_WARM");
    if (wp && !strcmp(wp, "0")) mo.warm_points = 0;
  }
  if (mi_meta_search_run(t->space, &o, &mo, &r, NULL) == MI_OK) {
    *to5 = LOMO_BUDGET + 1;
    for (int32_t i = 0; i < r->count && i < LOMO_BUDGET; i++) {
      if (r->trials[i].status == MI_OK && r->trials[i].objectives[MI_OBJ_LATENCY] < best)
        best = r->trials[i].objectives[MI_OBJ_LATENCY];
      if (i == 19 || (i < 19 && i == r->count - 1)) *b20 = best / t->ref;
      if (best <= t->ref * 1.05 && *to5 > LOMO_BUDGET) *to5 = i + 1;
    }
    if (rep->layer_model) {
      /* The mean weight the per-layer model got over the rounds. */
      double s = 0;
      int32_t c = 0;
      for (int32_t i = 0; i < rep->rounds && i < MI_META_MAX_ROUNDS; i++)
        if (isfinite(rep->layer_weight[i])) s += rep->layer_weight[i], c++;
      *w = c ? s / c : NAN;
    }
  }
  mi_search_result_destroy(r);
  src_free(&h);
  free(rep);
}

void bs_lomo_tables(bs_task_t *tasks, int32_t n, int32_t seeds) {
  const char *e = getenv("MI_BENCH_LOMO_SEARCH"), *p = getenv("MI_BENCH_LOMO_PREDICT");
  if (p && !strcmp(p, "0")) goto search_table;
  printf("\n| task (held-out model) | history | end to end only: Spearman / within 10%% | per layer only | default blend | per-layer weight in the blend |\n");
  printf("| --- | --- | --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    if (!tasks[k].exhaustive || tasks[k].ln == 0) continue;
    for (int same = 1; same >= 0; same--) {
      double v[7][64];
      for (int32_t s = 0; s < seeds && s < 64; s++) {
        double o[7];
        predict(tasks, n, k, same, (uint64_t)s + 1, o);
        for (int c = 0; c < 7; c++) v[c][s] = o[c];
      }
      printf("| %s | other models, %s | %.3f / %.2f | %.3f / %.2f | %.3f / %.2f | %.2f |\n", tasks[k].name,
             same ? "same device" : "every device", med(v[0], seeds), med(v[1], seeds), med(v[2], seeds), med(v[3], seeds),
             med(v[4], seeds), med(v[5], seeds), med(v[6], seeds));
      fflush(stdout);
    }
  }
search_table:
  if (e && !strcmp(e, "0")) return;
  if (getenv("MI_BENCH_LOMO_WARM") && !strcmp(getenv("MI_BENCH_LOMO_WARM"), "0"))
    printf("\n(no warm points: the history acts through the surrogate only)\n");
  printf("\n| task (held-out model) | ours warm, other models' history | meas. to 5%% (median) | best @20 / ref (median) | per-layer weight (mean over rounds, median) |\n");
  printf("| --- | --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    if (!tasks[k].exhaustive || tasks[k].ln == 0) continue;
    for (int no_layer = 1; no_layer >= 0; no_layer--) {
      double a[64], b[64], w[64];
      for (int32_t s = 0; s < seeds && s < 64; s++) search(tasks, n, k, no_layer, (uint64_t)s + 1, &a[s], &b[s], &w[s]);
      printf("| %s | %s | %.1f | %.3f | %.2f |\n", tasks[k].name, no_layer ? "end to end only" : "with the per-layer model (default)",
             med(a, seeds), med(b, seeds), med(w, seeds));
      fflush(stdout);
    }
  }
}
