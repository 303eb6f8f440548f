/* bench_joint.c - the search benchmark's joint tasks (MI_BENCH_JOINT=1): their restricted space
 * (several layers' model side against named hardware knobs), every model side's accuracy drop,
 * the bounds both joint search and model-then-hardware tuning face, and the exhaustive comparison
 * of the two on the whole table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"
#include "metainfer/mi_transform.h"

/* ---------------------------------------------------------------- accuracy */

/* The hash of pt with every hardware-side dimension at its default: one key per model side. */
static uint64_t model_key(const bs_task_t *t, const int32_t *pt) {
  int32_t *q = malloc((size_t)t->D * sizeof *q + 1);
  uint64_t key;
  if (!q) return 0; /* out of memory: matches no stored key, so the point is infeasible */
  mi_space_default(t->space, q);
  for (int32_t d = 0; d < t->D; d++)
    if (mi_space_dim_kind(t->space, d) == MI_DIM_MODEL) q[d] = pt[d];
  key = mi_space_hash(t->space, q);
  free(q);
  return key;
}

static int acc_add(bs_task_t *t, uint64_t key, double v) {
  if (t->acc_n == t->acc_cap) {
    int32_t cap = t->acc_cap ? 2 * t->acc_cap : 64;
    uint64_t *k = realloc(t->acc_key, (size_t)cap * sizeof *k);
    double *a;
    if (!k) return -1;
    t->acc_key = k;
    if (!(a = realloc(t->acc_val, (size_t)cap * sizeof *a))) return -1;
    t->acc_val = a;
    t->acc_cap = cap;
  }
  t->acc_key[t->acc_n] = key;
  t->acc_val[t->acc_n++] = v;
  return 0;
}

static double acc_lookup(const bs_task_t *t, uint64_t key) {
  for (int32_t i = 0; i < t->acc_n; i++)
    if (t->acc_key[i] == key) return t->acc_val[i];
  return NAN;
}

double bs_accuracy(const bs_task_t *t, const int32_t *pt) { return acc_lookup(t, model_key(t, pt)); }

/* The accuracy drop of pt's model side, computed as a worker does with `accuracy` on: the
 * configuration's transforms applied to the model (calibrated on `smp`), then both models run on
 * the reference interpreter over `smp` and compared. */
static int32_t model_accuracy(const bs_task_t *t, const int32_t *pt, const mi_xf_samples_t *smp,
                              const mi_variant_desc_t *vars, uint32_t nvar, double *out,
                              mi_error_t *err) {
  mi_xf_config_t *xc = NULL;
  mi_graph_t *xg = NULL;
  mi_xf_apply_opts_t ao;
  mi_xf_metrics_t met;
  int32_t rc = mi_space_xf_config(t->space, pt, &xc, err);
  memset(&ao, 0, sizeof ao);
  ao.calib = smp;
  ao.variants = vars;
  ao.variant_count = nvar;
  if (rc == MI_OK) rc = mi_xf_apply(t->graph, xc, &ao, &xg, NULL, err);
  if (rc == MI_OK) rc = mi_xf_compare(t->graph, xg, smp, &met, err);
  if (rc == MI_OK) *out = met.rel_l2;
  mi_graph_destroy(xg);
  mi_xf_config_destroy(xc);
  return rc;
}

/* Fills the accuracy drop of every model side in the task's table: read back from `path`
 * ("TASK KEY REL_L2" lines), else computed (the worker's protocol: 2 random samples, seed 1)
 * and appended there. */
void bs_accuracy_fill(bs_task_t *t, uint32_t dev, const char *path) {
  FILE *f = fopen(path, "r");
  char line[256];
  mi_xf_samples_t *smp = NULL;
  mi_variant_desc_t *vars = NULL;
  uint32_t nvar = 0;
  int32_t made = 0;
  mi_error_t e;
  while (f && fgets(line, sizeof line, f)) {
    char name[64];
    unsigned long long key;
    double v;
    if (sscanf(line, "%63s %llx %lf", name, &key, &v) == 3 && !strcmp(name, t->name) &&
        isnan(acc_lookup(t, key)))
      acc_add(t, key, v);
  }
  if (f) fclose(f);
  f = NULL;
  for (int32_t i = 0; i < t->n; i++) {
    uint64_t key = model_key(t, t->rows[i].pt);
    double v = NAN;
    if (!isnan(acc_lookup(t, key))) continue;
    if (!smp && (mi_xf_samples_random(t->graph, 2, 1, &smp, &e) != MI_OK ||
                 mi_plugin_variants(t->plugin, dev, &vars, &nvar, &e) != MI_OK)) {
      fprintf(stderr, "bench_search: %s: accuracy: %s\n", t->name, e.message);
      break;
    }
    if (model_accuracy(t, t->rows[i].pt, smp, vars, nvar, &v, &e) != MI_OK) {
      /* A model side that cannot be compared is never feasible. */
      fprintf(stderr, "bench_search: %s: accuracy: %s\n", t->name, e.message);
      v = INFINITY;
    }
    if (acc_add(t, key, v)) break;
    made++;
    if (!f) f = fopen(path, "a");
    if (f) fprintf(f, "%s %016llx %.9g\n", t->name, (unsigned long long)key, v);
  }
  if (f) fclose(f);
  mi_xf_samples_destroy(smp);
  free(vars);
  fprintf(stderr, "bench_search: %s: accuracy drop of %d model-side points (%d computed now)\n", t->name,
          (int)t->acc_n, (int)made);
}

/* ---------------------------------------------------------------- the space */

/* `item` is one of the comma-separated names of `list`. */
static int list_has(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, item, n)) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* The joint restriction (MI_BENCH_JOINT=1 tasks): every model-side dimension (precision and
 * pruning) of the named layers (comma list `layers`, which may also name whole-model dimensions
 * such as model.fuse), the per-node knobs of those layers and the device knobs named in `hw`
 * (comma list of knob names), everything else at its default. Pruning
 * changes channel counts, which meet the MAC array's column tiles and the core split
 * (ceil(tiles / cores)) and the dataflow's cost; precision meets them through the FP16 rate and
 * the bytes moved. Prints what it kept. */
void bs_joint_restrict(bs_task_t *t, const char *layers, const char *hw) {
  int64_t points = 1;
  for (int32_t d = 0; d < t->D; d++) {
    int32_t node = mi_space_dim_node(t->space, d), keep = 0;
    const char *name = mi_space_dim_name(t->space, d), *knob = strstr(name, ".knob.");
    if (node < 0) {
      /* Whole-model choices (model.fuse, model.fold_bn) join when `layers` names them. */
      keep = mi_space_dim_kind(t->space, d) == MI_DIM_MODEL ? list_has(layers, name)
                                                            : !strncmp(name, "device.", 7) && list_has(hw, name + 7);
    } else if (t->graph->nodes[node].name && list_has(layers, t->graph->nodes[node].name)) {
      keep = mi_space_dim_kind(t->space, d) == MI_DIM_MODEL || (knob && list_has(hw, knob + 6));
    }
    t->frozen[d] = !keep;
    if (keep) {
      points *= mi_space_dim_size(t->space, d);
      fprintf(stderr, "bench_search: %s: free %s (%d values, %s)\n", t->name, name, (int)mi_space_dim_size(t->space, d),
              mi_space_dim_kind(t->space, d) == MI_DIM_MODEL ? "model" : "hardware");
    }
  }
  fprintf(stderr, "bench_search: %s: %lld points before repair\n", t->name, (long long)points);
}

/* MI_BENCH_DESCRIBE=1: each joint task's restricted space, checked: at least three layers with
 * a model-side dimension (pruning among them when the task asks for it), a hardware side, and at
 * most 20,000 points, so that the table stays exhaustive and affordable. Returns the failures. */
int bs_joint_describe(const bs_task_t *t, uint32_t mdims) {
  int32_t layers = 0, last = -1, prune = 0, hw_dims = 0;
  int64_t model = 1, hw = 1;
  for (int32_t d = 0; d < t->D; d++) {
    int32_t node = mi_space_dim_node(t->space, d);
    if (t->frozen[d]) continue;
    if (mi_space_dim_kind(t->space, d) == MI_DIM_MODEL) {
      model *= mi_space_dim_size(t->space, d);
      prune |= strstr(mi_space_dim_name(t->space, d), ".prune") != NULL;
      if (node >= 0 && node != last) layers++;
      if (node >= 0) last = node;
    } else {
      hw *= mi_space_dim_size(t->space, d);
      hw_dims++;
    }
  }
  printf("%s: %d layers, model side %lld points, hardware side %lld points (%d dims), %lld configurations\n", t->name,
         (int)layers, (long long)model, (long long)hw, (int)hw_dims, (long long)(model * hw));
  if (layers < 3 || hw_dims < 1 || model * hw > 20000 || ((mdims & MI_SPACE_PRUNE) && !prune)) {
    printf("%s: FAIL: wants >= 3 layers, a hardware side, <= 20000 configurations%s\n", t->name,
           (mdims & MI_SPACE_PRUNE) ? " and pruning" : "");
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- exhaustive comparison */

/* The free dimensions of pt as "name=label" pairs (without the "node." prefix). */
static void describe(const bs_task_t *t, const int32_t *pt, int model, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
  for (int32_t d = 0; d < t->D && at + 1 < cap; d++) {
    const char *name = mi_space_dim_name(t->space, d);
    int m = mi_space_dim_kind(t->space, d) == MI_DIM_MODEL;
    int w;
    if (t->frozen[d] || m != model) continue;
    if (!strncmp(name, "node.", 5)) name += 5;
    w = snprintf(buf + at, cap - at, "%s%s=%s", at ? " " : "", name, mi_space_dim_label(t->space, d, pt[d]));
    if (w < 0) break;
    at += (size_t)w;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The best feasible row under the task's bound (-1: none), and the row of latency `lat`. */
static int32_t best_row(const bs_task_t *t, double lat) {
  int32_t b = -1;
  for (int32_t i = 0; i < t->n; i++) {
    const bs_row_t *r = &t->rows[i];
    if (!r->ok || !(bs_accuracy(t, r->pt) <= t->acc_bound)) continue;
    if (t->energy_bound > 0 && !(r->obj[MI_OBJ_ENERGY] <= t->energy_bound)) continue;
    if (isnan(lat) ? (b < 0 || r->obj[0] < t->rows[b].obj[0]) : r->obj[0] == lat) {
      b = i;
      if (!isnan(lat)) break;
    }
  }
  return b;
}

/* Joint task k on its whole table: at accuracy-drop bounds that leave a quarter, half, three
 * quarters and all of the model sides feasible, the joint optimum against model-then-hardware
 * with each phase exhaustive (bs_model_then_hw_oracle), with the configurations each picks.
 * Leaves the task at the bound of MI_BENCH_JOINT_ACC (a relative L2 error), else the median
 * one, and its reference at the best feasible latency. */
void bs_joint_exhaustive(bs_task_t *tasks, int32_t n, int32_t k, double energy_q, int header) {
  static const double qs[4] = {0.25, 0.5, 0.75, 1.0};
  bs_task_t *t = &tasks[k];
  double *v = malloc((size_t)(t->acc_n + 1) * sizeof *v), chosen, ebound = 0;
  const char *env = getenv("MI_BENCH_JOINT_ACC"), *eenv = getenv("MI_BENCH_JOINT_ENERGY_Q");
  int32_t m = 0, mp = 0;
  if (eenv) energy_q = strtod(eenv, NULL);
  if (energy_q > 0) {
    /* The energy bound: that quantile of the energy over the whole table. */
    double *e = malloc((size_t)(t->n + 1) * sizeof *e);
    int32_t ne = 0;
    for (int32_t i = 0; e && i < t->n; i++)
      if (t->rows[i].ok && isfinite(t->rows[i].obj[MI_OBJ_ENERGY])) e[ne++] = t->rows[i].obj[MI_OBJ_ENERGY];
    if (ne > 0) {
      qsort(e, (size_t)ne, sizeof *e, cmp_double);
      ebound = e[(int32_t)ceil(energy_q * ne) - 1];
    }
    free(e);
  }
  if (!v) return;
  for (int32_t i = 0; i < t->acc_n; i++)
    if (isfinite(t->acc_val[i])) v[m++] = t->acc_val[i];
  if (m == 0) {
    free(v);
    return;
  }
  qsort(v, (size_t)m, sizeof *v, cmp_double);
  chosen = env ? strtod(env, NULL) : v[(m - 1) / 2];
  for (int32_t d = 0; d < t->D; d++)
    if (!t->frozen[d] && mi_space_dim_kind(t->space, d) == MI_DIM_MODEL) mp = mp ? mp * mi_space_dim_size(t->space, d) : mi_space_dim_size(t->space, d);
  if (header) {
    printf("\n| task | energy bound | accuracy-drop bound (rel. L2) | model sides feasible | joint optimum (exhaustive) | model-then-hw, both phases exhaustive | ratio | joint picks | model-then-hw picks |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  }
  for (int q = 0; q < 10; q++) {
    double b = q % 5 < 4 ? v[(int32_t)ceil(qs[q % 5] * m) - 1] : chosen, mth;
    char eb[64];
    if (q >= 5 && !(ebound > 0)) break;
    t->energy_bound = q < 5 ? 0 : ebound;
    if (q < 5) snprintf(eb, sizeof eb, "none");
    else
      snprintf(eb, sizeof eb, "%.4g mJ (q%.2g)", ebound, energy_q);
    int32_t feas = 0, jr, sr;
    char jm[512], jh[512], sm[512], sh[512];
    if (q % 5 == 4 && env == NULL) continue; /* the median is already among the rows */
    t->acc_bound = b > 0 ? b : 1e-300;
    for (int32_t i = 0; i < m; i++) feas += v[i] <= t->acc_bound;
    jr = best_row(t, NAN);
    mth = bs_model_then_hw_oracle(tasks, n, k);
    sr = best_row(t, mth);
    if (jr < 0 || sr < 0) {
      printf("| %s | %s | %.4g | %d/%d | no feasible configuration | | | | |\n", t->name, eb, b, (int)feas, (int)mp);
      continue;
    }
    describe(t, t->rows[jr].pt, 1, jm, sizeof jm);
    describe(t, t->rows[jr].pt, 0, jh, sizeof jh);
    describe(t, t->rows[sr].pt, 1, sm, sizeof sm);
    describe(t, t->rows[sr].pt, 0, sh, sizeof sh);
    printf("| %s | %s | %.4g | %d/%d | %.4g ms | %.4g ms | **%.3f** | %s; %s | %s; %s |\n", t->name, eb, b, (int)feas, (int)mp,
           t->rows[jr].obj[0], mth, mth / t->rows[jr].obj[0], jm, jh, sm, sh);
    fflush(stdout);
  }
  t->acc_bound = chosen > 0 ? chosen : 1e-300;
  t->energy_bound = ebound;
  {
    int32_t jr = best_row(t, NAN);
    t->ref = jr >= 0 ? t->rows[jr].obj[0] : INFINITY;
  }
  fprintf(stderr, "bench_search: %s: accuracy-drop bound %.4g, energy bound %.4g mJ (0: none) for the methods, reference %.4g ms\n",
          t->name, t->acc_bound, t->energy_bound, t->ref);
  free(v);
}
