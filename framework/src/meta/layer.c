/* layer.c - per-layer prediction composed end to end: one model over (layer static features,
 * that layer's configuration, device fingerprint) rows of every task, summed over a
 * configuration's layers and calibrated on the target's end-to-end measurements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"

enum { STATIC_COLS = 12,
       FP_COLS = MI_META_DESC_SIZE - MI_META_FP_OFFSET,
       MAX_LABELS = 48,
       MAX_KEYS = 64 };

/* One configuration key shared across models: a node dimension by its suffix ("variant",
 * "knob.tile", "precision") or a device dimension by its name. */
typedef struct {
  char key[64];
  int device;
  int numeric;
  double lo, hi;
  int32_t nlab;
  char lab[MAX_LABELS][32];
  int32_t col;
} lkey_t;

typedef struct {
  lkey_t k[MAX_KEYS];
  int32_t n, cols;
} vocab_t;

static const char *dim_key(const char *name, int *device) {
  const char *p;
  *device = strncmp(name, "device.", 7) == 0;
  if (*device) return name;
  if ((p = strstr(name, ".knob."))) return p + 1;
  p = strrchr(name, '.');
  return p ? p + 1 : name;
}

static int is_num(const char *l, double *v) {
  char *end = NULL;
  if (!l || !l[0]) return 0;
  *v = strtod(l, &end);
  return end && !*end;
}

/* The index of a key in the vocabulary, -1 when absent. */
static int32_t find_key(const vocab_t *v, const char *key, int device) {
  for (int32_t i = 0; i < v->n; i++)
    if (v->k[i].device == device && !strcmp(v->k[i].key, key)) return i;
  return -1;
}

/* The columns come from the target's space: the keys of its dimensions with the union of
 * their labels. Rows of other models are laid out the same way. */
static void vocab_build(const mi_space_t *s, vocab_t *v) {
  memset(v, 0, sizeof *v);
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    int device;
    const char *key = dim_key(mi_space_dim_name(s, d), &device);
    int32_t at = find_key(v, key, device), size = mi_space_dim_size(s, d);
    lkey_t *k = at >= 0 ? &v->k[at] : NULL;
    if (size <= 1) continue;
    if (!k) {
      if (v->n == MAX_KEYS) continue;
      k = &v->k[v->n++];
      snprintf(k->key, sizeof k->key, "%s", key);
      k->device = device;
      k->numeric = mi_space_dim_kind(s, d) != MI_DIM_VARIANT;
      k->lo = INFINITY;
      k->hi = -INFINITY;
    }
    for (int32_t i = 0; i < size; i++) {
      const char *l = mi_space_dim_label(s, d, i);
      double x;
      int32_t j;
      if (!l) continue;
      if (is_num(l, &x)) {
        if (x < k->lo) k->lo = x;
        if (x > k->hi) k->hi = x;
      } else {
        k->numeric = 0;
      }
      for (j = 0; j < k->nlab && strcmp(k->lab[j], l); j++) continue;
      if (j == k->nlab && k->nlab < MAX_LABELS) snprintf(k->lab[k->nlab++], sizeof k->lab[0], "%s", l);
    }
  }
  v->cols = STATIC_COLS;
  for (int32_t i = 0; i < v->n; i++) {
    v->k[i].col = v->cols;
    v->cols += v->k[i].numeric ? 1 : v->k[i].nlab;
  }
  v->cols += FP_COLS;
}

/* The row's first columns, the layer's static features; the rest zeroed. */
static void encode_static(const vocab_t *v, const mi_layer_features_t *lf, double *x) {
  memset(x, 0, (size_t)v->cols * sizeof *x);
  x[0] = log10(1.0 + lf->flops);
  x[1] = log10(1.0 + lf->bytes);
  x[2] = log10(1.0 + lf->intensity);
  x[3] = lf->fusable ? 1 : 0;
  x[4] = lf->alignment > 0 ? log2((double)lf->alignment) / 6.0 : 0;
  x[5 + mi__meta_op_family(lf->op_type)] = 1;
}

/* One row: static features of the layer, the configuration of its node and of the device,
 * the device fingerprint. */
static void encode_row(const vocab_t *v, const mi_space_t *s, const int32_t *pt, int32_t node,
                       const mi_layer_features_t *lf, const double *desc, double *x) {
  encode_static(v, lf, x);
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    int device;
    const char *key = dim_key(mi_space_dim_name(s, d), &device);
    const char *l = mi_space_dim_label(s, d, pt[d]);
    const lkey_t *k;
    int32_t at;
    double val;
    if (!device && mi_space_dim_node(s, d) != node) continue;
    if ((at = find_key(v, key, device)) < 0 || !l) continue;
    k = &v->k[at];
    if (k->numeric) {
      if (is_num(l, &val)) x[k->col] = k->hi > k->lo ? (val - k->lo) / (k->hi - k->lo) : 0;
    } else {
      for (int32_t j = 0; j < k->nlab; j++)
        if (!strcmp(k->lab[j], l)) x[k->col + j] = 1;
    }
  }
  for (int32_t i = 0; i < FP_COLS; i++) x[v->cols - FP_COLS + i] = desc[MI_META_FP_OFFSET + i];
}

/* Static features per graph node (NULL entries for constants). */
static int32_t node_features(const mi_graph_t *g, mi_layer_features_t **ls, const mi_layer_features_t ***by_node,
                             mi_error_t *err) {
  mi_model_features_t mf;
  int32_t lc = 0, k = 0, rc;
  *by_node = NULL;
  if ((rc = mi_model_features(g, &mf, ls, &lc, err)) != MI_OK) return rc;
  if (!(*by_node = calloc((size_t)g->node_count + 1, sizeof **by_node)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer predict: out of memory");
  for (int32_t n = 0; n < g->node_count && k < lc; n++)
    if (strcmp(g->nodes[n].op_type, "Constant")) (*by_node)[n] = &(*ls)[k++];
  return MI_OK;
}

/* Rows of one task's measured layers appended to X/y. */
static int32_t task_rows(const vocab_t *v, const mi_meta_layer_task_t *t, double **X, double **y,
                         int32_t *n, int32_t *cap, mi_error_t *err) {
  mi_layer_features_t *ls = NULL;
  const mi_layer_features_t **by = NULL;
  int32_t D = mi_space_dim_count(t->space), N = t->graph->node_count, rc;
  if ((rc = node_features(t->graph, &ls, &by, err)) != MI_OK) goto done;
  for (int32_t i = 0; i < t->count; i++)
    for (int32_t nd = 0; nd < N; nd++) {
      double sec = t->layer_latency[(size_t)i * N + nd];
      if (!by[nd] || !isfinite(sec) || sec <= 0) continue;
      if (*n == *cap) {
        int32_t nc = *cap ? *cap * 2 : 1024;
        double *nx = realloc(*X, (size_t)nc * v->cols * sizeof *nx), *ny;
        if (nx) *X = nx;
        ny = realloc(*y, (size_t)nc * sizeof *ny);
        if (ny) *y = ny;
        if (!nx || !ny) {
          rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer predict: out of memory");
          goto done;
        }
        *cap = nc;
      }
      encode_row(v, t->space, t->points + (size_t)i * D, nd, by[nd], t->desc, *X + (size_t)*n * v->cols);
      (*y)[(*n)++] = log(sec);
    }
done:
  free(ls);
  free(by);
  return rc;
}

/* Summed per-layer predictions of `count` points of the target over the nodes in `use`. */
static int32_t summed(const vocab_t *v, const mi_meta_layer_task_t *t, const mi_surrogate_t *m,
                      const mi_layer_features_t *const *by, const uint8_t *use, const int32_t *pts,
                      int32_t count, double *out, mi_error_t *err) {
  int32_t D = mi_space_dim_count(t->space), N = t->graph->node_count, L = 0, rc = MI_OK;
  double *X, *mu;
  for (int32_t nd = 0; nd < N; nd++) L += use[nd] != 0;
  X = malloc((size_t)(L ? L : 1) * v->cols * sizeof *X);
  mu = malloc((size_t)(L ? L : 1) * sizeof *mu);
  if (!X || !mu) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer predict: out of memory");
  for (int32_t i = 0; i < count && rc == MI_OK; i++) {
    int32_t r = 0;
    out[i] = 0;
    for (int32_t nd = 0; nd < N; nd++)
      if (use[nd]) encode_row(v, t->space, pts + (size_t)i * D, nd, by[nd], t->desc, X + (size_t)r++ * v->cols);
    if (r == 0) continue;
    if ((rc = mi_surrogate_predict(m, X, r, mu, NULL, err)) != MI_OK) break;
    for (int32_t k = 0; k < r; k++) out[i] += exp(mu[k]);
  }
  free(X);
  free(mu);
  return rc;
}

int32_t mi_meta_layer_predict(const mi_meta_layer_task_t *target, const mi_meta_layer_task_t *sources,
                              int32_t source_count, const mi_surrogate_options_t *so,
                              const int32_t *query, int32_t q, double *pred, double *r2,
                              mi_error_t *err) {
  vocab_t *v = NULL;
  double *X = NULL, *y = NULL, *sum = NULL, *meas = NULL, a = 1, b = 0, fit = 0, floor_v = INFINITY;
  int32_t n = 0, cap = 0, rc = MI_OK, N, c = 0;
  mi_layer_features_t *ls = NULL;
  const mi_layer_features_t **by = NULL;
  uint8_t *use = NULL;
  mi_surrogate_t *m = NULL;
  mi_surrogate_options_t def;
  if (r2) *r2 = NAN;
  if (!target || !target->space || !target->graph || !target->points || !target->layer_latency ||
      !target->latency || target->count < 1 || !query || q < 1 || !pred || (source_count > 0 && !sources))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "layer predict: a target with measured layers, queries and room for predictions are required");
  for (int32_t k = 0; k < source_count; k++)
    if (!sources[k].space || !sources[k].graph || (sources[k].count > 0 && (!sources[k].points || !sources[k].layer_latency)))
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "layer predict: source %d lacks its space, graph or layers", (int)k);
  N = target->graph->node_count;
  if (!(v = malloc(sizeof *v))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer predict: out of memory");
  vocab_build(target->space, v);
  for (int32_t k = 0; k < source_count && rc == MI_OK; k++) rc = task_rows(v, &sources[k], &X, &y, &n, &cap, err);
  if (rc == MI_OK) rc = task_rows(v, target, &X, &y, &n, &cap, err);
  if (rc != MI_OK) goto done;
  if (n < 2) {
    rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "layer predict: %d measured layer(s), too few to fit", (int)n);
    goto done;
  }
  if (!so) {
    mi_surrogate_options_default(&def);
    so = &def;
  }
  if ((rc = mi_surrogate_fit(X, y, n, v->cols, so, &m, err)) != MI_OK) goto done;
  /* The layers to sum: those the target's own measurements timed (folded ones take no time). */
  if ((rc = node_features(target->graph, &ls, &by, err)) != MI_OK) goto done;
  use = calloc((size_t)N + 1, 1);
  sum = malloc((size_t)target->count * sizeof *sum);
  meas = malloc((size_t)target->count * sizeof *meas);
  if (!use || !sum || !meas) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer predict: out of memory");
    goto done;
  }
  for (int32_t i = 0; i < target->count; i++)
    for (int32_t nd = 0; nd < N; nd++) {
      double sec = target->layer_latency[(size_t)i * N + nd];
      if (by[nd] && isfinite(sec) && sec > 0) use[nd] = 1;
    }
  /* Calibration on the target's end-to-end measurements: measured ~ a * summed + b. */
  if ((rc = summed(v, target, m, by, use, target->points, target->count, sum, err)) != MI_OK) goto done;
  for (int32_t i = 0; i < target->count; i++)
    if (isfinite(target->latency[i]) && target->latency[i] > 0) {
      sum[c] = sum[i];
      meas[c++] = target->latency[i];
      if (target->latency[i] < floor_v) floor_v = target->latency[i];
    }
  fit = mi_calibration_fit(sum, meas, c, &a, &b);
  if (r2) *r2 = fit;
  if (!(a > 0)) {
    /* A fit that inverts the order is noise: keep the scale only. */
    double r = 0;
    for (int32_t i = 0; i < c; i++) r += sum[i] > 0 ? meas[i] / sum[i] : 1;
    a = c > 0 ? r / c : 1;
    b = 0;
  }
  if ((rc = summed(v, target, m, by, use, query, q, pred, err)) != MI_OK) goto done;
  for (int32_t i = 0; i < q; i++) {
    pred[i] = a * pred[i] + b;
    /* A line fitted on a few points can cross zero far out: floor at a tenth of the fastest. */
    if (isfinite(floor_v) && pred[i] < 0.1 * floor_v) pred[i] = 0.1 * floor_v;
  }
done:
  mi_surrogate_destroy(m);
  free(v);
  free(X);
  free(y);
  free(ls);
  free(by);
  free(use);
  free(sum);
  free(meas);
  return rc;
}

/* ---------------------------------------------------------------- the search's base model */

/* The encoding of one space's dimensions, worked out once (encode_row's string matching is what
 * a screen's hundreds of thousands of layer rows would otherwise spend their time on): per
 * dimension its node (-1 device) and, per value, the column it sets and the value it writes
 * there (col -1: nothing). */
typedef struct {
  const mi_space_t *s;
  int32_t D;
  int32_t *node; /* D: the dimension's node, -1 device scope, -2 not encoded */
  int32_t *off;  /* D + 1: where each dimension's values start in col/val */
  int32_t *col;
  double *val;
} plan_t;

static void plan_free(plan_t *p) {
  free(p->node);
  free(p->off);
  free(p->col);
  free(p->val);
  memset(p, 0, sizeof *p);
}

static int plan_build(const vocab_t *v, const mi_space_t *s, plan_t *p) {
  int32_t D = mi_space_dim_count(s), tot = 0;
  plan_free(p);
  if (D < 0) return -1;
  for (int32_t d = 0; d < D; d++) tot += mi_space_dim_size(s, d);
  if (tot < 0) return -1;
  p->node = malloc((size_t)(D > 0 ? D : 1) * sizeof *p->node);
  p->off = malloc((size_t)(D + 1) * sizeof *p->off);
  p->col = malloc((size_t)(tot > 0 ? tot : 1) * sizeof *p->col);
  p->val = malloc((size_t)(tot > 0 ? tot : 1) * sizeof *p->val);
  if (!p->node || !p->off || !p->col || !p->val) {
    plan_free(p);
    return -1;
  }
  tot = 0;
  for (int32_t d = 0; d < D; d++) {
    int device;
    const char *key = dim_key(mi_space_dim_name(s, d), &device);
    int32_t at = find_key(v, key, device);
    p->off[d] = tot;
    p->node[d] = at < 0 ? -2 : device ? -1
                                      : mi_space_dim_node(s, d);
    for (int32_t i = 0; i < mi_space_dim_size(s, d); i++, tot++) {
      const char *l = mi_space_dim_label(s, d, i);
      const lkey_t *k = at >= 0 ? &v->k[at] : NULL;
      double x;
      p->col[tot] = -1;
      p->val[tot] = 0;
      if (!k || !l) continue;
      if (k->numeric) {
        if (is_num(l, &x)) {
          p->col[tot] = k->col;
          p->val[tot] = k->hi > k->lo ? (x - k->lo) / (k->hi - k->lo) : 0;
        }
      } else {
        for (int32_t j = 0; j < k->nlab; j++)
          if (!strcmp(k->lab[j], l)) {
            p->col[tot] = k->col + j;
            p->val[tot] = 1;
          }
      }
    }
  }
  p->off[D] = tot;
  p->D = D;
  p->s = s;
  return 0;
}

/* encode_row through a plan: the same row. */
static void encode_fast(const vocab_t *v, const plan_t *p, const int32_t *pt, int32_t node,
                        const mi_layer_features_t *lf, const double *desc, double *x) {
  encode_static(v, lf, x);
  for (int32_t d = 0; d < p->D; d++) {
    int32_t at;
    if (p->node[d] != -1 && p->node[d] != node) continue;
    at = p->off[d] + pt[d];
    if (pt[d] >= 0 && at < p->off[d + 1] && p->col[at] >= 0) x[p->col[at]] = p->val[at];
  }
  for (int32_t i = 0; i < FP_COLS; i++) x[v->cols - FP_COLS + i] = desc[MI_META_FP_OFFSET + i];
}

/* The per-layer model of the surrogate-guided search (strategy_layer.c): fitted once on the
 * sources' layer rows, laid out for the target's space, and summed over a target's layers. */
struct mi__layer_model {
  vocab_t v;
  mi_surrogate_t *m;
  const mi_graph_t *g; /* the graph `by` belongs to */
  mi_layer_features_t *ls;
  const mi_layer_features_t **by;
  plan_t plan;    /* the target space's encoding */
  uint64_t *mkey; /* the memo of predicted rows (row_key) */
  double *mval;
  int32_t mcap, mn;
  uint64_t salt; /* the descriptor the memo belongs to */
};

int32_t mi__layer_model_fit(const mi_space_t *s, const mi_meta_layer_task_t *tasks, int32_t count,
                            const mi_surrogate_options_t *so, mi__layer_model_t **out, int32_t *rows,
                            mi_error_t *err) {
  mi__layer_model_t *lm = calloc(1, sizeof *lm);
  double *X = NULL, *y = NULL;
  int32_t n = 0, cap = 0, rc = MI_OK;
  *out = NULL;
  if (rows) *rows = 0;
  if (!lm) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer model: out of memory");
  vocab_build(s, &lm->v);
  for (int32_t k = 0; k < count && rc == MI_OK; k++)
    if (tasks[k].space && tasks[k].graph && tasks[k].points && tasks[k].layer_latency && tasks[k].count > 0)
      rc = task_rows(&lm->v, &tasks[k], &X, &y, &n, &cap, err);
  if (rc == MI_OK && n < 2) rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "layer model: %d measured layer(s), too few to fit", (int)n);
  if (rc == MI_OK) rc = mi_surrogate_fit(X, y, n, lm->v.cols, so, &lm->m, err);
  free(X);
  free(y);
  if (rc != MI_OK) {
    mi__layer_model_free(lm);
    return rc;
  }
  if (rows) *rows = n;
  *out = lm;
  return MI_OK;
}

/* The memo of predicted layer rows: the model is fitted once per search, so a layer's prediction
 * under given values of its own and the device's dimensions never changes, and a screen asks for
 * the same few thousand rows over and over (each prediction call also costs XGBoost a fixed
 * setup). Keys are 64-bit hashes of (node, those values); 0 marks an empty slot. */
static uint64_t row_key(const plan_t *p, const int32_t *pt, int32_t node) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)node;
  for (int32_t d = 0; d < p->D; d++) {
    if (p->node[d] != -1 && p->node[d] != node) continue;
    h = (h ^ ((uint64_t)(uint32_t)d << 32 | (uint32_t)pt[d])) * 1099511628211ull;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

static double *memo_find(const mi__layer_model_t *lm, uint64_t k) {
  if (lm->mcap == 0) return NULL;
  for (uint32_t i = (uint32_t)k & (uint32_t)(lm->mcap - 1);; i = (i + 1) & (uint32_t)(lm->mcap - 1)) {
    if (lm->mkey[i] == k) return &lm->mval[i];
    if (lm->mkey[i] == 0) return NULL;
  }
}

static void memo_put(mi__layer_model_t *lm, uint64_t k, double v) {
  uint32_t i;
  if (2 * (lm->mn + 1) > lm->mcap) {
    /* Grow (or start) at half load; a failed growth only forgets, the predictions stay right. */
    int32_t nc = lm->mcap ? lm->mcap * 2 : 4096;
    uint64_t *nk = calloc((size_t)nc, sizeof *nk);
    double *nv = malloc((size_t)nc * sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return;
    }
    for (int32_t j = 0; j < lm->mcap; j++)
      if (lm->mkey[j]) {
        for (i = (uint32_t)lm->mkey[j] & (uint32_t)(nc - 1); nk[i]; i = (i + 1) & (uint32_t)(nc - 1)) continue;
        nk[i] = lm->mkey[j];
        nv[i] = lm->mval[j];
      }
    free(lm->mkey);
    free(lm->mval);
    lm->mkey = nk;
    lm->mval = nv;
    lm->mcap = nc;
  }
  for (i = (uint32_t)k & (uint32_t)(lm->mcap - 1); lm->mkey[i] && lm->mkey[i] != k; i = (i + 1) & (uint32_t)(lm->mcap - 1))
    continue;
  if (!lm->mkey[i]) lm->mn++;
  lm->mkey[i] = k;
  lm->mval[i] = v;
}

static void memo_clear(mi__layer_model_t *lm) {
  free(lm->mkey);
  free(lm->mval);
  lm->mkey = NULL;
  lm->mval = NULL;
  lm->mcap = lm->mn = 0;
}

int32_t mi__layer_model_sum(mi__layer_model_t *lm, const mi_space_t *s, const mi_graph_t *g, const double *desc,
                            const uint8_t *use, const int32_t *pts, int32_t count, double *out, mi_error_t *err) {
  enum { CHUNK = 8192 };
  int32_t D = mi_space_dim_count(s), N = g->node_count, L = 0, rc = MI_OK, per;
  int32_t *node = NULL, *at = NULL;
  uint64_t *key = NULL, salt = mi_hash64(desc, MI_META_DESC_SIZE * sizeof *desc, 7u);
  double *X = NULL, *mu = NULL;
  if (lm->g != g || lm->plan.s != s || lm->salt != salt) memo_clear(lm); /* another target */
  lm->salt = salt;
  if (lm->g != g) {
    /* Static features of the target's layers, once per graph. */
    free(lm->ls);
    free(lm->by);
    lm->ls = NULL;
    lm->by = NULL;
    lm->g = NULL;
    if ((rc = node_features(g, &lm->ls, &lm->by, err)) != MI_OK) return rc;
    lm->g = g;
  }
  if (lm->plan.s != s && plan_build(&lm->v, s, &lm->plan)) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer model: out of memory");
  if (!(node = malloc((size_t)(N ? N : 1) * sizeof *node))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer model: out of memory");
  for (int32_t nd = 0; nd < N; nd++)
    if (lm->by[nd] && (!use || use[nd])) node[L++] = nd;
  for (int32_t i = 0; i < count; i++) out[i] = 0;
  if (L == 0) {
    free(node);
    return MI_OK;
  }
  /* Whole points per chunk; the layers not in the memo in one prediction call. */
  per = CHUNK / L > 0 ? CHUNK / L : 1;
  X = malloc((size_t)per * L * lm->v.cols * sizeof *X);
  mu = malloc((size_t)per * L * sizeof *mu);
  at = malloc((size_t)per * L * sizeof *at);
  key = malloc((size_t)per * L * sizeof *key);
  if (!X || !mu || !at || !key) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer model: out of memory");
  for (int32_t i0 = 0; i0 < count && rc == MI_OK; i0 += per) {
    int32_t c = count - i0 < per ? count - i0 : per, r = 0;
    for (int32_t i = 0; i < c; i++)
      for (int32_t l = 0; l < L; l++) {
        const int32_t *pt = pts + (size_t)(i0 + i) * D;
        uint64_t k = row_key(&lm->plan, pt, node[l]);
        const double *hit = memo_find(lm, k);
        if (hit) {
          out[i0 + i] += exp(*hit);
          continue;
        }
        encode_fast(&lm->v, &lm->plan, pt, node[l], lm->by[node[l]], desc, X + (size_t)r * lm->v.cols);
        at[r] = i0 + i;
        key[r++] = k;
      }
    if (r == 0) continue;
    if ((rc = mi_surrogate_predict(lm->m, X, r, mu, NULL, err)) != MI_OK) break;
    for (int32_t q = 0; q < r; q++) {
      out[at[q]] += exp(mu[q]);
      memo_put(lm, key[q], mu[q]);
    }
  }
  free(node);
  free(X);
  free(mu);
  free(at);
  free(key);
  return rc;
}

void mi__layer_model_free(mi__layer_model_t *lm) {
  if (!lm) return;
  mi_surrogate_destroy(lm->m);
  plan_free(&lm->plan);
  memo_clear(lm);
  free(lm->ls);
  free(lm->by);
  free(lm);
}
