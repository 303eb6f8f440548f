/* bench_report.c - the search benchmark's metrics over seeds: measurements to within 5% of the
 * reference optimum, hypervolume after 64 measurements, leave-one-device-out rank correlation
 * with 10 samples, and what a misleading history costs against a cold start. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lomo.h"
#include "bench_search.h"

#define BUDGET 64

static double median(double *v, int n);

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bs_median(double *v, int n) {
  if (n == 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double median(double *v, int n) { return bs_median(v, n); }

static double worst(const double *v, int n) {
  double w = NAN;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i]) && !(w >= v[i])) w = v[i];
  return w;
}

/* 1-based measurement at which the best-so-far latency came within 5% of ref; BUDGET+1 never. */
static double to_within(const mi_search_result_t *r, double ref) {
  double best = INFINITY;
  for (int32_t i = 0; i < r->count && i < BUDGET; i++) {
    if (r->trials[i].status == MI_OK && r->trials[i].objectives[MI_OBJ_LATENCY] < best)
      best = r->trials[i].objectives[MI_OBJ_LATENCY];
    if (best <= ref * 1.05) return i + 1;
  }
  return BUDGET + 1;
}

static double best_within(const mi_search_result_t *r, int32_t k) {
  double best = INFINITY;
  for (int32_t i = 0; i < r->count && i < k; i++)
    if (r->trials[i].status == MI_OK && r->trials[i].objectives[MI_OBJ_LATENCY] < best)
      best = r->trials[i].objectives[MI_OBJ_LATENCY];
  return best;
}

/* Hypervolume (latency, memory) of the first k trials over that of the whole table, with the
 * table's worst values +10% as reference point. */
static double hv_ratio(const bs_task_t *t, const mi_search_result_t *r, int32_t k) {
  double ref[2] = {0, 0}, *all = malloc((size_t)(t->n + 1) * 2 * sizeof *all), *pts = malloc((size_t)(k + 1) * 2 * sizeof *pts), a, b;
  int32_t n = 0, q = 0;
  if (!all || !pts) return NAN;
  for (int32_t i = 0; i < t->n; i++)
    if (t->rows[i].ok) {
      all[2 * n] = t->rows[i].obj[MI_OBJ_LATENCY];
      all[2 * n + 1] = isfinite(t->rows[i].obj[MI_OBJ_MEMORY]) ? t->rows[i].obj[MI_OBJ_MEMORY] : 1;
      ref[0] = fmax(ref[0], all[2 * n] * 1.1);
      ref[1] = fmax(ref[1], all[2 * n + 1] * 1.1);
      n++;
    }
  for (int32_t i = 0; i < r->count && i < k; i++)
    if (r->trials[i].status == MI_OK) {
      pts[2 * q] = r->trials[i].objectives[MI_OBJ_LATENCY];
      pts[2 * q + 1] = isfinite(r->trials[i].objectives[MI_OBJ_MEMORY]) ? r->trials[i].objectives[MI_OBJ_MEMORY] : 1;
      q++;
    }
  a = mi_pareto_hypervolume(pts, q, 2, ref, 1, 0);
  b = mi_pareto_hypervolume(all, n, 2, ref, 1, 0);
  free(all);
  free(pts);
  return b > 0 ? a / b : NAN;
}

/* Leave-one-device-out: 10 random measurements of the target, sources from the other
 * devices only (mislead: inverted), predictions of every other table entry. */
static void lodo(bs_task_t *tasks, int32_t n, int32_t k, uint64_t seed, int mislead, int use_sources,
                 double *rho, double *within) {
  bs_task_t *t = &tasks[k];
  bs_sources_t src;
  mi_meta_options_t mo;
  mi_search_options_t so;
  int32_t objs[1] = {MI_OBJ_LATENCY}, *pts = malloc((size_t)10 * t->D * sizeof *pts), q = 0, pick[10];
  int32_t *query = malloc((size_t)t->n * t->D * sizeof *query);
  double *obj = malloc(10 * MI_OBJ_COUNT * sizeof *obj), *pred = malloc((size_t)t->n * sizeof *pred), *truth = malloc((size_t)t->n * sizeof *truth);
  mi_rng_t rng;
  *rho = *within = NAN;
  if (!pts || !query || !obj || !pred || !truth || t->n < 20) goto done;
  mi_rng_seed(&rng, seed * 7919u + 1u);
  for (int32_t i = 0; i < 10; i++) {
    int dup;
    do {
      pick[i] = (int32_t)mi_rng_below(&rng, (uint32_t)t->n);
      dup = !t->rows[pick[i]].ok;
      for (int32_t j = 0; j < i; j++) dup |= pick[j] == pick[i];
    } while (dup);
    memcpy(pts + (size_t)i * t->D, t->rows[pick[i]].pt, (size_t)t->D * sizeof *pts);
    memcpy(obj + (size_t)i * MI_OBJ_COUNT, t->rows[pick[i]].obj, MI_OBJ_COUNT * sizeof *obj);
  }
  for (int32_t i = 0; i < t->n; i++) {
    int used = !t->rows[i].ok;
    for (int32_t j = 0; j < 10; j++) used |= pick[j] == i;
    if (used) continue;
    memcpy(query + (size_t)q * t->D, t->rows[i].pt, (size_t)t->D * sizeof *query);
    truth[q++] = t->rows[i].obj[MI_OBJ_LATENCY];
  }
  bs_predict_options(t, seed, objs, &so, &mo);
  memset(&src, 0, sizeof src);
  if (use_sources) bs_sources_build(tasks, n, k, 1, mislead, seed, 64, &src);
  mo.sources = src.tasks;
  mo.source_count = src.count;
  if (mi_meta_predict_points(t->space, &so, &mo, pts, obj, 10, query, q, pred, NULL) == MI_OK) {
    *rho = mi_metric_spearman(pred, truth, q);
    *within = mi_metric_within(pred, truth, q, 0.1);
  }
  bs_sources_free(&src);
done:
  free(pts);
  free(query);
  free(obj);
  free(pred);
  free(truth);
}

/* The strategy's options for task t: defaults, its graph, frozen dimensions, descriptor and
 * stack; no sources. */
void bs_meta_options(const bs_task_t *t, mi_meta_options_t *mo) {
  mi_meta_options_default(mo);
  mo->graph = t->graph;
  mo->frozen = t->frozen;
  memcpy(mo->desc, t->desc, sizeof mo->desc);
  mo->stack_hash = t->stack;
}

void bs_search_options(mi_search_options_t *o, uint64_t seed, int32_t budget, int32_t nobj,
                       const int32_t *objs, mi_evaluate_fn ev, void *ctx, const uint8_t *frozen) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->seed = seed;
  o->max_measurements = budget;
  o->objective_count = nobj;
  o->objectives = objs;
  o->evaluate = ev;
  o->evaluate_ctx = ctx;
  o->frozen = frozen;
}

/* Both options of a mi_meta_predict_points call on task t: one objective, `objs`. */
void bs_predict_options(const bs_task_t *t, uint64_t seed, const int32_t *objs,
                        mi_search_options_t *so, mi_meta_options_t *mo) {
  bs_search_options(so, seed, 0, 1, objs, NULL, NULL, NULL);
  bs_meta_options(t, mo);
}

int32_t bs_layer_score(const bs_task_t *t, int32_t n, const int32_t *pts, const double *lat,
                       const double *lsec, const mi_meta_layer_task_t *src, int32_t ns, uint64_t seed,
                       const int32_t *query, int32_t q, const double *truth, double *pred,
                       double *out, double *r2) {
  mi_meta_layer_task_t lt;
  mi_surrogate_options_t sopt;
  int32_t rc;
  memset(&lt, 0, sizeof lt);
  lt.space = t->space;
  lt.graph = t->graph;
  memcpy(lt.desc, t->desc, sizeof t->desc);
  lt.count = n;
  lt.points = pts;
  lt.layer_latency = lsec;
  lt.latency = lat;
  mi_surrogate_options_default(&sopt);
  sopt.seed = seed;
  if ((rc = mi_meta_layer_predict(&lt, src, ns, &sopt, query, q, pred, r2, NULL)) == MI_OK) {
    out[0] = mi_metric_spearman(pred, truth, q);
    out[1] = mi_metric_within(pred, truth, q, 0.1);
  }
  return rc;
}

/* The held-out task's side of a prediction comparison: `samples` distinct rows of its per-layer
 * table drawn from `seed` (points, objectives, end-to-end latencies, per-node seconds; `pick`
 * gets their per-layer row indices) and, as queries, every other good row of its table with its
 * latency in `truth`. Returns the query count. */
int32_t bs_layer_split(const bs_task_t *t, uint64_t seed, int32_t samples, int32_t *pick,
                       int32_t *pts, double *obj, double *lat, double *lsec, int32_t *query,
                       double *truth) {
  const int32_t N = t->graph->node_count;
  int32_t q = 0;
  mi_rng_t rng;
  mi_rng_seed(&rng, seed * 7919u + 5u);
  for (int32_t i = 0; i < samples; i++) {
    int dup;
    do {
      pick[i] = (int32_t)mi_rng_below(&rng, (uint32_t)t->ln);
      dup = 0;
      for (int32_t j = 0; j < i; j++) dup |= pick[j] == pick[i];
    } while (dup);
    memcpy(pts + (size_t)i * t->D, t->rows[t->lrow[pick[i]]].pt, (size_t)t->D * sizeof *pts);
    memcpy(obj + (size_t)i * MI_OBJ_COUNT, t->rows[t->lrow[pick[i]]].obj, MI_OBJ_COUNT * sizeof *obj);
    lat[i] = t->rows[t->lrow[pick[i]]].obj[MI_OBJ_LATENCY];
    memcpy(lsec + (size_t)i * N, t->lsec + (size_t)pick[i] * N, (size_t)N * sizeof *lsec);
  }
  for (int32_t i = 0; i < t->n; i++) {
    int used = !t->rows[i].ok;
    for (int32_t j = 0; j < samples; j++) used |= t->lrow[pick[j]] == i;
    if (used) continue;
    memcpy(query + (size_t)q * t->D, t->rows[i].pt, (size_t)t->D * sizeof *query);
    truth[q++] = t->rows[i].obj[MI_OBJ_LATENCY];
  }
  return q;
}

/* End to end against per layer, on the same data: 10 configurations of the held-out task
 * from its per-layer table, and as history the other device's tasks, 64 rows of their
 * per-layer tables each (the end-to-end model gets the same rows' end-to-end latencies).
 * Spearman and share within 10% on every table entry not among the 10. */
static void lodo_layers(bs_task_t *tasks, int32_t n, int32_t k, uint64_t seed, double *out) {
  enum { SAMPLES = 10,
         PER_SOURCE = 64 };
  bs_task_t *t = &tasks[k];
  mi_meta_layer_task_t ls[BS_MAX_TASKS];
  mi_meta_task_t es[BS_MAX_TASKS];
  int32_t *spts[BS_MAX_TASKS] = {0}, ns = 0, q = 0, pick[SAMPLES];
  double *sobj[BS_MAX_TASKS] = {0}, *slat[BS_MAX_TASKS] = {0};
  bs_rows_t b;
  double r2 = NAN;
  mi_meta_options_t mo;
  mi_search_options_t so;
  int32_t objs[1] = {MI_OBJ_LATENCY};
  for (int i = 0; i < 5; i++) out[i] = NAN;
  if (!bs_rows_alloc(t, SAMPLES, &b) || t->ln < SAMPLES + 10) goto done;
  q = bs_layer_split(t, seed, SAMPLES, pick, b.pts, b.obj, b.lat, b.lsec, b.query, b.truth);
  for (int32_t j = 0; j < n && ns < BS_MAX_TASKS; j++) {
    bs_task_t *u = &tasks[j];
    int32_t c = u->ln < PER_SOURCE ? u->ln : PER_SOURCE, Nu = u->graph->node_count;
    double *lsu;
    if (j == k || u->stack != t->stack || !strcmp(u->spec, t->spec) || u->ln == 0) continue;
    spts[ns] = malloc((size_t)c * u->D * sizeof(int32_t));
    sobj[ns] = malloc((size_t)c * MI_OBJ_COUNT * sizeof(double));
    slat[ns] = malloc((size_t)c * sizeof(double));
    lsu = malloc((size_t)c * Nu * sizeof *lsu);
    if (!spts[ns] || !sobj[ns] || !slat[ns] || !lsu) {
      free(lsu);
      break;
    }
    for (int32_t i = 0; i < c; i++) {
      /* A seed-dependent offset into the per-layer table (its rows are in random order). */
      int32_t r = (int32_t)((i + seed * 17u) % (uint64_t)u->ln);
      memcpy(spts[ns] + (size_t)i * u->D, u->rows[u->lrow[r]].pt, (size_t)u->D * sizeof(int32_t));
      memcpy(sobj[ns] + (size_t)i * MI_OBJ_COUNT, u->rows[u->lrow[r]].obj, MI_OBJ_COUNT * sizeof(double));
      slat[ns][i] = u->rows[u->lrow[r]].obj[MI_OBJ_LATENCY];
      memcpy(lsu + (size_t)i * Nu, u->lsec + (size_t)r * Nu, (size_t)Nu * sizeof *lsu);
    }
    memset(&es[ns], 0, sizeof es[ns]);
    es[ns].name = u->name;
    es[ns].space = u->space;
    es[ns].graph = u->graph;
    memcpy(es[ns].desc, u->desc, sizeof u->desc);
    es[ns].stack_hash = u->stack;
    es[ns].count = c;
    es[ns].points = spts[ns];
    es[ns].objectives = sobj[ns];
    memset(&ls[ns], 0, sizeof ls[ns]);
    ls[ns].space = u->space;
    ls[ns].graph = u->graph;
    memcpy(ls[ns].desc, u->desc, sizeof u->desc);
    ls[ns].count = c;
    ls[ns].points = spts[ns];
    ls[ns].layer_latency = lsu;
    ls[ns].latency = slat[ns];
    ns++;
  }
  /* End to end: the strategy's predictor. */
  bs_predict_options(t, seed, objs, &so, &mo);
  mo.sources = es;
  mo.source_count = ns;
  if (mi_meta_predict_points(t->space, &so, &mo, b.pts, b.obj, SAMPLES, b.query, q, b.pred, NULL) == MI_OK) {
    out[0] = mi_metric_spearman(b.pred, b.truth, q);
    out[1] = mi_metric_within(b.pred, b.truth, q, 0.1);
  }
  /* Per layer, composed and calibrated. */
  if (bs_layer_score(t, SAMPLES, b.pts, b.lat, b.lsec, ls, ns, seed, b.query, q, b.truth, b.pred, out + 2, &r2) == MI_OK) out[4] = r2;
done:
  for (int32_t j = 0; j < ns; j++) {
    free(spts[j]);
    free(sobj[j]);
    free(slat[j]);
    free((void *)ls[j].layer_latency);
  }
  bs_rows_free(&b);
}

int bs_rows_alloc(const bs_task_t *t, int32_t samples, bs_rows_t *r) {
  size_t s = (size_t)samples, n = (size_t)t->n;
  r->pts = malloc(s * (size_t)t->D * sizeof *r->pts);
  r->query = malloc(n * (size_t)t->D * sizeof *r->query);
  r->obj = malloc(s * MI_OBJ_COUNT * sizeof *r->obj);
  r->lat = malloc(s * sizeof *r->lat);
  r->lsec = malloc(s * (size_t)t->graph->node_count * sizeof *r->lsec);
  r->pred = malloc(n * sizeof *r->pred);
  r->truth = malloc(n * sizeof *r->truth);
  return r->pts && r->query && r->obj && r->lat && r->lsec && r->pred && r->truth;
}

void bs_rows_free(bs_rows_t *r) {
  free(r->pts);
  free(r->query);
  free(r->obj);
  free(r->lat);
  free(r->lsec);
  free(r->pred);
  free(r->truth);
  memset(r, 0, sizeof *r);
}

/* MI_BENCH_METHODS (comma list of method names) runs only those: for quick experiments. */
static int wanted(int m) {
  const char *f = getenv("MI_BENCH_METHODS"), *p;
  size_t len = strlen(bs_method_names[m]);
  if (!f || !f[0]) return 1;
  for (p = f; *p; p++) {
    /* Whole items only: "nsga2" does not select "model-then-hw nsga2". */
    if ((p == f || p[-1] == ',') && !strncmp(p, bs_method_names[m], len) && (p[len] == ',' || !p[len])) return 1;
  }
  return 0;
}

static void lodo_table(bs_task_t *tasks, int32_t n, int32_t seeds);
static void layers_table(bs_task_t *tasks, int32_t n, int32_t seeds);
static void mth_table(bs_task_t *tasks, int32_t n, int32_t seeds);

int bs_report(bs_task_t *tasks, int32_t n, int32_t seeds) {
  double v[BS_METHODS][4][64], cold64[64], warm20[64], cold20[64], est[64], at[64], truth_cold[64];
  mi_meta_report_t *rep = calloc(1, sizeof *rep);
  if (!rep) return 1;
  const char *lodo_env = getenv("MI_BENCH_LODO");
  for (int32_t s = 0; s < 64; s++) cold64[s] = cold20[s] = warm20[s] = v[BS_OURS_MISLEAD][3][s] = NAN;
  printf("\n| task | reference | method | meas. to 5%% (median) | reached in %d | HV ratio @64 | best @20 / ref |\n", BUDGET);
  printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    bs_task_t *t = &tasks[k];
    for (int m = 0; m < BS_MTH_FIRST; m++) {
      int32_t reached = 0;
      if (!wanted(m)) continue;
      for (int32_t s = 0; s < seeds; s++) {
        mi_search_result_t *r = NULL;
        mi_error_t e;
        v[m][0][s] = v[m][1][s] = v[m][2][s] = NAN;
        if (m == BS_OURS_WARM) est[s] = at[s] = NAN;
        if (bs_run_method(tasks, n, k, m, (uint64_t)s + 1, BUDGET, &r, rep, &e) != MI_OK) {
          fprintf(stderr, "bench_search: %s %s: %s\n", t->name, bs_method_names[m], e.message);
          continue;
        }
        v[m][0][s] = to_within(r, t->ref);
        reached += v[m][0][s] <= BUDGET;
        v[m][1][s] = hv_ratio(t, r, BUDGET);
        v[m][2][s] = best_within(r, 20) / t->ref;
        if (m == BS_OURS_COLD) cold64[s] = best_within(r, BUDGET), cold20[s] = best_within(r, 20);
        if (m == BS_OURS_WARM) {
          /* The truth for the estimate: a random search without repeats over the table needs
           * (N + 1) / (K + 1) draws on average to hit one of the K entries within 5% of this
           * run's best. */
          double b = best_within(r, BUDGET);
          int32_t K = 0, N = 0;
          for (int32_t i = 0; i < t->n; i++)
            if (t->rows[i].ok) {
              N++;
              K += t->rows[i].obj[MI_OBJ_LATENCY] <= b * 1.05;
            }
          est[s] = rep->cold_estimate;
          at[s] = rep->best_within5_at;
          truth_cold[s] = (N + 1.0) / (K + 1.0);
        }
        if (m == BS_OURS_MISLEAD) {
          warm20[s] = best_within(r, 20) / cold20[s];
          /* MI_BENCH_PER_SEED=1: each seed's misleading run against its cold run, on stderr. */
          if (getenv("MI_BENCH_PER_SEED"))
            fprintf(stderr, "%s seed %d: misleading / cold best @20 %.4g / %.4g ms, @64 %.4g / %.4g ms; warm points %d, trusted %d, fallback %d, design points %d\n",
                    t->name, (int)s + 1, best_within(r, 20), cold20[s], best_within(r, BUDGET), cold64[s],
                    rep->warm_points, rep->warm_trusted, rep->cold_fallback, rep->design_points);
          v[m][3][s] = best_within(r, BUDGET) / cold64[s];
        }
        mi_search_result_destroy(r);
      }
      {
        double a = median(v[m][0], seeds), b = median(v[m][1], seeds), c = median(v[m][2], seeds);
        char to[32];
        if (a > BUDGET) snprintf(to, sizeof to, ">%d", BUDGET);
        else
          snprintf(to, sizeof to, "%.1f", a);
        printf("| %s | %s %.4g ms | %s | %s | %d/%d | %.3f | %.3f |\n", t->name, t->exhaustive ? "exhaustive" : "pooled",
               t->ref, bs_method_names[m], to, (int)reached, (int)seeds, b, c);
        fflush(stdout);
      }
    }
    if (wanted(BS_OURS_WARM)) {
      /* The saving mi-host tune reports (docs/meta.md): the surrogate's estimate of what a
       * random cold search needs, against the warm run's own count; compare with the measured
       * medians of random and ours cold in the rows above. */
      double sv[64], tv[64];
      for (int32_t s = 0; s < seeds; s++) {
        sv[s] = est[s] - at[s];
        tv[s] = truth_cold[s] - at[s];
      }
      printf("| %s | | ours warm: reached within 5%% of its best at / random cold count to that best, estimated (true) / saving, estimated (true); medians | %.1f | %.1f (%.1f) | %.1f (%.1f) | |\n",
             t->name, median(at, seeds), median(est, seeds), median(truth_cold, seeds), median(sv, seeds), median(tv, seeds));
    }
    if (wanted(BS_OURS_COLD) && wanted(BS_OURS_MISLEAD)) {
      double w20 = worst(warm20, seeds), w64 = worst(v[BS_OURS_MISLEAD][3], seeds);
      double nf20[64], nf64[64];
      printf("| %s | | misleading / cold, best latency, median (worst seed) | @20: %.3f (%.3f) | @64: %.3f (%.3f) | | |\n",
             t->name, median(warm20, seeds), w20, median(v[BS_OURS_MISLEAD][3], seeds), w64);
      /* The noise floor of that pairing: two cold runs of different seeds (s+1 against s). */
      for (int32_t s = 0; s < seeds; s++) {
        nf20[s] = cold20[(s + 1) % seeds] / cold20[s];
        nf64[s] = cold64[(s + 1) % seeds] / cold64[s];
      }
      printf("| %s | | cold (next seed) / cold, best latency, median (worst seed) | @20: %.3f (%.3f) | @64: %.3f (%.3f) | | |\n",
             t->name, median(nf20, seeds), worst(nf20, seeds), median(nf64, seeds), worst(nf64, seeds));
    }
  }
  free(rep);
  mth_table(tasks, n, seeds);
  if (!(lodo_env && !strcmp(lodo_env, "0"))) lodo_table(tasks, n, seeds);
  layers_table(tasks, n, seeds);
  {
    /* Leave one model out (bench_lomo.c), only when asked: MI_BENCH_LOMO=1. */
    const char *lomo = getenv("MI_BENCH_LOMO");
    if (lomo && !strcmp(lomo, "1")) bs_lomo_tables(tasks, n, seeds);
  }
  return 0;
}

/* Leave-one-device-out with the strategy's end-to-end predictor. */
static void lodo_table(bs_task_t *tasks, int32_t n, int32_t seeds) {
  printf("\n| task (held-out device) | 10 samples, no sources: Spearman / within 10%% | + other devices' history | + misleading history |\n");
  printf("| --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    double r[3][64], w[3][64];
    if (!tasks[k].exhaustive) continue;
    for (int32_t s = 0; s < seeds; s++)
      for (int c = 0; c < 3; c++) lodo(tasks, n, k, (uint64_t)s + 1, c == 2, c > 0, &r[c][s], &w[c][s]);
    printf("| %s |", tasks[k].name);
    for (int c = 0; c < 3; c++) printf(" %.3f / %.2f |", median(r[c], seeds), median(w[c], seeds));
    printf("\n");
    fflush(stdout);
  }
}

/* End to end against per layer (lodo_layers); MI_BENCH_LAYERS=0 skips it. */
static void layers_table(bs_task_t *tasks, int32_t n, int32_t seeds) {
  const char *lay = getenv("MI_BENCH_LAYERS");
  if (lay && !strcmp(lay, "0")) return;
  printf("\n| task (held-out device) | end to end: Spearman / within 10%% | per layer + calibration: Spearman / within 10%% | calibration R^2 |\n");
  printf("| --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    double r[5][64];
    if (!tasks[k].exhaustive || tasks[k].ln == 0) continue;
    for (int32_t s = 0; s < seeds; s++) {
      double o[5];
      lodo_layers(tasks, n, k, (uint64_t)s + 1, o);
      for (int c = 0; c < 5; c++) r[c][s] = o[c];
    }
    printf("| %s | %.3f / %.2f | %.3f / %.2f | %.3f |\n", tasks[k].name, median(r[0], seeds), median(r[1], seeds),
           median(r[2], seeds), median(r[3], seeds), median(r[4], seeds));
    fflush(stdout);
  }
}

/* Joint search against model-then-hardware tuning with the same engine, at budgets 20 and 64
 * (each run at its own budget): per seed, the best feasible latency of model-then-hardware over
 * that of the joint search; medians over seeds, the worst and best seed, and each one's median
 * best over the reference. MI_BENCH_MTH_TASKS (comma list) limits the tasks. */
static void mth_table(bs_task_t *tasks, int32_t n, int32_t seeds) {
  static const int32_t budgets[2] = {20, BUDGET};
  const char *only = getenv("MI_BENCH_MTH_TASKS");
  int any = 0;
  for (int m = BS_MTH_FIRST; m < BS_METHODS; m++) any |= wanted(m);
  if (!any) return;
  printf("\n| task | engine | budget | model-then-hw / joint, best latency: median (max, min over seeds) | joint best / ref | model-then-hw best / ref | model-side dims free (points) | exhaustive model-then-hw / ref |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int32_t k = 0; k < n; k++) {
    bs_task_t *t = &tasks[k];
    int32_t md = 0, mp = 1;
    double oracle;
    if (only && only[0] && !strstr(only, t->name)) continue;
    oracle = bs_model_then_hw_oracle(tasks, n, k) / t->ref;
    for (int32_t d = 0; d < t->D; d++)
      if (!t->frozen[d] && mi_space_dim_kind(t->space, d) == MI_DIM_MODEL) {
        md++;
        mp *= mi_space_dim_size(t->space, d);
      }
    for (int m = BS_MTH_FIRST; m < BS_METHODS; m++) {
      int joint = m == BS_MTH_NSGA2 ? BS_NSGA2 : BS_OURS_COLD;
      if (!wanted(m)) continue;
      for (int b = 0; b < 2; b++) {
        double ratio[64], jb[64], sb[64], lo = NAN, hi = NAN;
        for (int32_t s = 0; s < seeds; s++) {
          mi_search_result_t *rj = NULL, *rs = NULL;
          mi_error_t e;
          ratio[s] = jb[s] = sb[s] = NAN;
          if (bs_run_method(tasks, n, k, joint, (uint64_t)s + 1, budgets[b], &rj, NULL, &e) != MI_OK ||
              bs_run_method(tasks, n, k, m, (uint64_t)s + 1, budgets[b], &rs, NULL, &e) != MI_OK) {
            fprintf(stderr, "bench_search: %s %s: %s\n", t->name, bs_method_names[m], e.message);
          } else {
            jb[s] = best_within(rj, budgets[b]);
            sb[s] = best_within(rs, budgets[b]);
            ratio[s] = sb[s] / jb[s];
            if (!(lo <= ratio[s])) lo = ratio[s];
            if (!(hi >= ratio[s])) hi = ratio[s];
          }
          mi_search_result_destroy(rj);
          mi_search_result_destroy(rs);
        }
        printf("| %s | %s | %d | %.3f (%.3f, %.3f) | %.3f | %.3f | %d (%d) | %.3f |\n", t->name, bs_method_names[joint],
               (int)budgets[b], median(ratio, seeds), hi, lo, median(jb, seeds) / t->ref, median(sb, seeds) / t->ref,
               (int)md, (int)mp, oracle);
        fflush(stdout);
      }
    }
  }
}
