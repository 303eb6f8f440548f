/* strategy_acc.c - the accuracy predictor of the surrogate-guided search, and the design's
 * split moves that feed it.
 *
 * The surrogate models the recipe's objectives (latency), not its accuracy bound, so its screen
 * kept proposing points that quantize most layers: on mlsd_tiny_320 (blis-cpu, budget 40,
 * accuracy_drop 0.01) 28 of 34 searched points broke the bound (drops 0.80-1.01), and on the OCR
 * models each such point also paid an INT8 calibration on the reference interpreter. The
 * predictor models the squared accuracy drop as additive over the per-layer model-side choices,
 *   drop^2 ~ c0 + sum over (layer, non-default value) of s[layer, value],  s >= 0,
 * fitted by non-negative least squares (with a small ridge, so the measured total of a
 * model-wide move is split evenly among the layers it changed until other measurements tell
 * them apart) on the run's measured trials. Independent rounding errors add in quadrature, and
 * s >= 0 makes the prediction monotone: a candidate that quantizes a superset of the layers of a
 * measured point is predicted at least as lossy. The screen drops candidates predicted over the
 * bound before any is measured.
 *
 * The split moves: when a model-wide precision move was faster than the default but broke the
 * bound, its layers (in graph order) are halved and each half measured alone, and a half still
 * over the bound is halved again (group testing): a few measurements find which contiguous
 * blocks carry the loss, give the predictor per-block figures instead of an even split, and
 * put feasible partly quantized points (contiguous, so with few conversions) in front of the
 * surrogate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"
#include "space/space.h"

#define ACC_SWEEPS 300
#define SPLIT_MAX 8       /* split moves per search */
#define SPLIT_FASTER 0.95 /* a model-wide move this much under the default's latency */

struct mi__acc {
  int32_t nf; /* features: (dim, value) pairs of per-layer model-side choices */
  int32_t *fd, *fv;
  double *s, c0;
  int fitted;
  double bound; /* the recipe's accuracy bound; <= 0 none */
  /* split moves: ranges of the precision dims to try, per label */
  int32_t *pd, np; /* precision dims in dim order */
  int32_t split_done, splits;
};

static int is_layer_model_dim(const mi_space_t *s, int32_t d) {
  return mi_space_dim_kind(s, d) == MI_DIM_MODEL && mi_space_dim_node(s, d) >= 0;
}

static struct mi__acc *acc_get(mi__meta_t *st) {
  struct mi__acc *a;
  int32_t *def;
  if (st->acc) return st->acc;
  if (!(a = calloc(1, sizeof *a))) return NULL;
  for (int32_t b = 0; b < st->so->bound_count; b++)
    if (st->so->bounds[b].objective == MI_OBJ_ACCURACY) a->bound = st->so->bounds[b].max;
  def = malloc((size_t)st->D * sizeof *def + 1);
  a->fd = malloc((size_t)st->D * 8 * sizeof *a->fd + 1);
  a->fv = malloc((size_t)st->D * 8 * sizeof *a->fv + 1);
  a->pd = malloc((size_t)st->D * sizeof *a->pd + 1);
  if (!def || !a->fd || !a->fv || !a->pd) {
    free(def);
    mi__meta_acc_free(a);
    return NULL;
  }
  mi_space_default(st->s, def);
  for (int32_t d = 0; d < st->D; d++) {
    if (!is_layer_model_dim(st->s, d) || (st->mo.frozen && st->mo.frozen[d])) continue;
    if (mi__space_is_precision(st->s, d)) a->pd[a->np++] = d;
    for (int32_t v = 0; v < mi_space_dim_size(st->s, d) && v < 8; v++) {
      if (v == def[d]) continue;
      a->fd[a->nf] = d;
      a->fv[a->nf++] = v;
    }
  }
  free(def);
  if (!(a->s = calloc((size_t)a->nf + 1, sizeof *a->s))) {
    mi__meta_acc_free(a);
    return NULL;
  }
  st->acc = a;
  return a;
}

void mi__meta_acc_free(struct mi__acc *a) {
  if (!a) return;
  free(a->fd);
  free(a->fv);
  free(a->pd);
  free(a->s);
  free(a);
}

static int usable(const mi__meta_t *st, int32_t i) {
  const mi_trial_t *t = &st->r->trials[i];
  return t->status == MI_OK && isfinite(t->objectives[MI_OBJ_ACCURACY]) && !mi__meta_excluded(st, i);
}

/* Non-negative least squares by projected coordinate descent on the trials measured so far. */
void mi__meta_acc_fit(mi__meta_t *st) {
  struct mi__acc *a = acc_get(st);
  int32_t n = 0, nf, *rows = NULL;
  uint8_t *x = NULL;
  double *y = NULL, *r = NULL, scale = 0;
  if (!a || a->bound <= 0 || a->nf == 0) return;
  nf = a->nf;
  rows = malloc((size_t)st->r->count * sizeof *rows + 1);
  x = calloc((size_t)st->r->count * (size_t)nf + 1, 1);
  y = malloc((size_t)st->r->count * sizeof *y + 1);
  r = malloc((size_t)st->r->count * sizeof *r + 1);
  if (!rows || !x || !y || !r) goto done;
  a->fitted = 0;
  for (int32_t i = 0; i < st->r->count; i++) {
    const mi_trial_t *t = &st->r->trials[i];
    int any = 0;
    if (!usable(st, i)) continue;
    for (int32_t f = 0; f < nf; f++) any |= x[(size_t)n * nf + f] = t->point[a->fd[f]] == a->fv[f];
    a->fitted |= any; /* only a measured model-side change says anything about one */
    y[n] = t->objectives[MI_OBJ_ACCURACY] * t->objectives[MI_OBJ_ACCURACY];
    if (y[n] > scale) scale = y[n];
    rows[n++] = i;
  }
  if (!a->fitted || !(scale > 0)) {
    a->fitted = 0;
    goto done;
  }
  {
    double lam = 1e-6 * scale, c0 = 0;
    /* Start from the even split (each trial's loss shared by the choices it made, averaged
     * over the trials that made each choice): coordinate descent from zero handed a model-wide
     * move's whole loss to its first layer and left the other 68 free, so the screen let through
     * every point that kept that one layer at FP32 (blazeface_back, first run). */
    for (int32_t f = 0; f < nf; f++) {
      double sum = 0;
      int32_t c = 0;
      for (int32_t i = 0; i < n; i++) {
        int32_t k = 0;
        if (!x[(size_t)i * nf + f]) continue;
        for (int32_t g = 0; g < nf; g++) k += x[(size_t)i * nf + g];
        sum += y[i] / k;
        c++;
      }
      a->s[f] = c ? sum / c : 0;
    }
    for (int32_t i = 0; i < n; i++) {
      r[i] = y[i];
      for (int32_t f = 0; f < nf; f++)
        if (x[(size_t)i * nf + f]) r[i] -= a->s[f];
    }
    for (int32_t it = 0; it < ACC_SWEEPS; it++) {
      /* c0: the loss every point has (a lossy kernel, float reassociation) */
      double num = 0, nw;
      for (int32_t i = 0; i < n; i++) num += r[i] + c0;
      nw = fmax(0, num / n);
      for (int32_t i = 0; i < n; i++) r[i] += c0 - nw;
      c0 = nw;
      for (int32_t f = 0; f < nf; f++) {
        double g = 0, h = lam, v;
        for (int32_t i = 0; i < n; i++)
          if (x[(size_t)i * nf + f]) {
            g += r[i] + a->s[f];
            h += 1;
          }
        if (h == lam) continue; /* never set in a measured trial: stays 0 until it is */
        v = fmax(0, g / h);
        for (int32_t i = 0; i < n; i++)
          if (x[(size_t)i * nf + f]) r[i] += a->s[f] - v;
        a->s[f] = v;
      }
    }
    a->c0 = c0;
  }
  /* A choice never set in a measured trial takes the mean of its label's fitted shares (its
   * dimension's value v): unknown is not free. */
  for (int32_t f = 0; f < nf; f++) {
    int seen = 0;
    for (int32_t i = 0; i < n && !seen; i++) seen = x[(size_t)i * nf + f];
    if (!seen) {
      double sum = 0;
      int32_t c = 0;
      const char *l = mi_space_dim_label(st->s, a->fd[f], a->fv[f]);
      for (int32_t g = 0; g < nf; g++) {
        const char *m = mi_space_dim_label(st->s, a->fd[g], a->fv[g]);
        int gseen = 0;
        for (int32_t i = 0; i < n && !gseen; i++) gseen = x[(size_t)i * nf + g];
        if (gseen && l && m && strcmp(l, m) == 0) {
          sum += a->s[g];
          c++;
        }
      }
      if (!c) /* no layer measured at this label: the largest share its own dimension has
               * (pruning 50% never measured, pruning 25% measured: at least as lossy) */
        for (int32_t g = 0; g < nf; g++) {
          int gseen = 0;
          for (int32_t i = 0; i < n && !gseen; i++) gseen = x[(size_t)i * nf + g];
          if (gseen && a->fd[g] == a->fd[f] && a->s[g] > sum) sum = a->s[g];
        }
      a->s[f] = c ? sum / c : sum;
    }
  }
done:
  free(rows);
  free(x);
  free(y);
  free(r);
}

double mi__meta_acc_predict(mi__meta_t *st, const int32_t *pt) {
  struct mi__acc *a = st->acc;
  double v;
  if (!a || !a->fitted) return NAN;
  v = a->c0;
  for (int32_t f = 0; f < a->nf; f++)
    if (pt[a->fd[f]] == a->fv[f]) v += a->s[f];
  return sqrt(v);
}

int mi__meta_acc_screened(mi__meta_t *st, const int32_t *pt) {
  struct mi__acc *a = st->acc;
  double p;
  if (!a || !a->fitted || a->bound <= 0) return 0;
  p = mi__meta_acc_predict(st, pt);
  return isfinite(p) && p > a->bound;
}

/* The measured trial of pt, or -1. */
static int32_t trial_of(const mi__meta_t *st, const int32_t *pt) {
  uint64_t h = mi_space_hash(st->s, pt);
  for (int32_t i = 0; i < st->r->count; i++)
    if (st->r->trials[i].hash == h) return i;
  return -1;
}

/* pt = the base point with precision dims [lo, hi) of a->pd at label l (where offered). */
static int range_point(mi__meta_t *st, const char *l, int32_t lo, int32_t hi, int32_t *pt) {
  struct mi__acc *a = st->acc;
  int any = 0;
  mi_space_default(st->s, pt);
  if (mi__meta_fix(st, pt) != MI_OK) return 0;
  for (int32_t k = lo; k < hi; k++) {
    int32_t d = a->pd[k];
    for (int32_t v = 0; v < mi_space_dim_size(st->s, d); v++) {
      const char *m = mi_space_dim_label(st->s, d, v);
      if (m && strcmp(m, l) == 0) {
        pt[d] = v;
        any = 1;
        break;
      }
    }
  }
  return any && mi__meta_fix(st, pt) == MI_OK;
}

/* Depth-first over the halving tree of one label: the first range whose point is unmeasured
 * and whose parent broke the bound while running faster than the default. */
static int split_next(mi__meta_t *st, const char *l, int32_t lo, int32_t hi, double def_s, int32_t *pt) {
  struct mi__acc *a = st->acc;
  int32_t i, mid;
  if (!range_point(st, l, lo, hi, pt)) return 0;
  if ((i = trial_of(st, pt)) < 0) return 1; /* unmeasured: this is the move */
  if (!usable(st, i) || hi - lo < 2) return 0;
  if (!(st->r->trials[i].objectives[MI_OBJ_ACCURACY] > a->bound)) return 0;            /* feasible: done */
  if (!(st->r->trials[i].objectives[MI_OBJ_LATENCY] < SPLIT_FASTER * def_s)) return 0; /* no gain */
  mid = lo + (hi - lo) / 2;
  return split_next(st, l, lo, mid, def_s, pt) || split_next(st, l, mid, hi, def_s, pt);
}

int mi__meta_split_move(mi__meta_t *st, int32_t *pt) {
  struct mi__acc *a = acc_get(st);
  double def_s;
  int32_t t0;
  if (!a || a->split_done || a->bound <= 0 || a->np < 2 || st->r->count == 0) return 0;
  if (a->splits >= SPLIT_MAX) {
    a->split_done = 1;
    return 0;
  }
  /* The default point (the first trial) is the bar. */
  mi_space_default(st->s, pt);
  t0 = trial_of(st, pt);
  if (t0 < 0 || st->r->trials[t0].status != MI_OK) t0 = 0;
  def_s = st->r->trials[t0].objectives[MI_OBJ_LATENCY];
  if (!(def_s > 0)) {
    a->split_done = 1;
    return 0;
  }
  /* The label whose model-wide move ran fastest is split (one label: the budget is small). */
  {
    const char *best = NULL;
    double bs = INFINITY;
    for (int32_t v = 0; v < mi_space_dim_size(st->s, a->pd[0]); v++) {
      const char *l = mi_space_dim_label(st->s, a->pd[0], v);
      int32_t i;
      if (!l || strcmp(l, "fp32") == 0 || !range_point(st, l, 0, a->np, pt)) continue;
      if ((i = trial_of(st, pt)) < 0 || !usable(st, i)) continue;
      if (st->r->trials[i].objectives[MI_OBJ_LATENCY] < bs) {
        bs = st->r->trials[i].objectives[MI_OBJ_LATENCY];
        best = l;
      }
    }
    if (best && split_next(st, best, 0, a->np, def_s, pt)) {
      a->splits++;
      return 1;
    }
  }
  a->split_done = 1;
  return 0;
}

int32_t mi__meta_split_count(const mi__meta_t *st) {
  return st->acc ? st->acc->splits : 0;
}

/* Accessors for the per-layer precision greedy (strategy_greedy.c). */
int32_t mi__meta_acc_pdims(mi__meta_t *st, const int32_t **pd) {
  struct mi__acc *a = acc_get(st);
  *pd = a ? a->pd : NULL;
  return a ? a->np : 0;
}

double mi__meta_acc_bound(const mi__meta_t *st) {
  return st->acc && st->acc->fitted ? st->acc->bound : 0;
}

double mi__meta_acc_share(const mi__meta_t *st, int32_t d, int32_t v) {
  const struct mi__acc *a = st->acc;
  for (int32_t f = 0; a && f < a->nf; f++)
    if (a->fd[f] == d && a->fv[f] == v) return a->s[f];
  return 0;
}

int32_t mi__meta_trial_of(const mi__meta_t *st, const int32_t *pt) {
  return trial_of(st, pt);
}

int mi__meta_trial_usable(const mi__meta_t *st, int32_t i) {
  return i >= 0 && i < st->r->count && usable(st, i);
}

int mi__meta_label_point(mi__meta_t *st, const char *label, int32_t lo, int32_t hi, int32_t *pt) {
  return acc_get(st) && range_point(st, label, lo, hi, pt);
}
