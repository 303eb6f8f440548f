/* strategy_greedy.c - the per-layer precision greedy: blocks of layers quantized in order of time
 * saved per unit of predicted accuracy loss, the longest prefix within the bound found by
 * measurement (HAQ/HAWQ-style mixed precision under a measured bound).
 *
 * Each block of layers (a layer and the ones fused into it, whose own time reads 0) takes the
 * label under which the model-wide moves timed it fastest, when that is at least GREEDY_GAIN
 * under its FP32 time (single timings are noisy), and saves gain = FP32 time - that time. Its
 * sensitivity is its own squared drop, measured by the evaluator (so->drops: the default with
 * only that block at its label, on the device, from the calibration samples) when it offers
 * that; else the accuracy predictor's share of the squared drop for that (layer, label)
 * (strategy_acc.c, fitted on the model-wide and split moves: a fit of a handful of points, which
 * put BF16's loss on the wrong layers of blazeface_back). Blocks are ordered once by gain /
 * sensitivity, largest first, so a prefix of k blocks is the best known for its size. The
 * feasible prefixes are monotone under either (drops and shares are non-negative), so the search
 * is a bisection over k with measurement: lo is the longest prefix measured within the bound, hi
 * the shortest measured over it. Each step measures the longest prefix in (lo, hi) predicted
 * within the bound, or the midpoint when none is: with measured drops the prediction is the root
 * of the sum of the prefix's squared drops times the last measured prefix's drop over its own
 * root sum of squares (independent errors add in quadrature; the ratio corrects for those that
 * do not), else the predictor, refitted on every step. It ends when hi = lo + 1, after
 * GREEDY_MAX steps, or when the longest prefix left to try would save under GREEDY_MIN_GAIN of
 * the default's layer time.
 *
 * It replaces a single move that trimmed blocks to the predicted bound and measured that point
 * once: on oww_embedding (blis-cpu, int8_act on every layer at drop 0.021) that fit split the
 * model-wide loss evenly, the one point kept one weight-only layer (drop 0.002, no gain) and the
 * move was spent. The measured steps correct the fit where it is wrong. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"

#define GREEDY_GAIN 0.9
#define GREEDY_MAX 6
#define GREEDY_MIN_GAIN 0.03
#define GREEDY_LABELS 16

struct mi__greedy {
  int done;
  int32_t steps, last, k; /* steps measured, the last step's trial (-1: none pending), its prefix */
  int32_t n, lo, hi;      /* ordered blocks; longest prefix within the bound; shortest over it */
  int32_t *b0, *b1;       /* per ordered block: its precision dims [b0, b1) in the pdims list */
  const char **label;     /* per ordered block: its label (the space owns the strings) */
  double *gain, base_total;
  double *sq;   /* per ordered block: its own drop measured, squared; NULL: the predictor's */
  double scale; /* the last measured prefix's drop / its root sum of squares */
};

void mi__meta_greedy_free(struct mi__greedy *g) {
  if (!g) return;
  free(g->b0);
  free(g->b1);
  free(g->label);
  free(g->gain);
  free(g->sq);
  free(g);
}

static const double *trial_layers(const mi__meta_t *st, int32_t i) {
  int32_t N = st->mo.graph ? st->mo.graph->node_count : 0;
  if (i < 0 || !st->tls || i >= st->tls_cap || N <= 0) return NULL;
  return st->tls + (size_t)i * N;
}

static double block_time(const mi__meta_t *st, const int32_t *pd, const double *ls, int32_t b0, int32_t b1) {
  double t = 0;
  for (int32_t k = b0; k < b1; k++) {
    double v = ls[mi_space_dim_node(st->s, pd[k])];
    if (!isfinite(v)) return NAN;
    t += v;
  }
  return t;
}

/* The value of dim d labelled l, or -1. */
static int32_t value_of(const mi__meta_t *st, int32_t d, const char *l) {
  for (int32_t v = 0; v < mi_space_dim_size(st->s, d); v++) {
    const char *m = mi_space_dim_label(st->s, d, v);
    if (m && strcmp(m, l) == 0) return v;
  }
  return -1;
}

/* pt = the base point with the first k ordered blocks at their labels. */
static int prefix_point(mi__meta_t *st, const int32_t *pd, int32_t k, int32_t *pt) {
  const struct mi__greedy *g = st->greedy;
  mi_space_default(st->s, pt);
  if (mi__meta_fix(st, pt) != MI_OK) return 0;
  for (int32_t b = 0; b < k; b++)
    for (int32_t q = g->b0[b]; q < g->b1[b]; q++) {
      int32_t v = value_of(st, pd[q], g->label[b]);
      if (v >= 0) pt[pd[q]] = v;
    }
  return mi__meta_fix(st, pt) == MI_OK;
}

typedef struct {
  double key;
  int32_t b0, b1, label;
  double gain, sq; /* sq: its own drop measured, squared (NaN: not measured) */
  double share;    /* the predictor's share of the squared drop */
} entry_t;

/* 1 for a label whose transform needs no calibration pass (the INT8 ones calibrate: activation
 * ranges, or the means of bias correction), so that a block's drop costs one device run. */
static int uncalibrated(const char *l) {
  return strcmp(l, "bf16") == 0 || strcmp(l, "fp16") == 0;
}

/* Each entry's own drop, measured by the evaluator (so->drops) for the default with only that
 * block at its label, into e[].sq (NaN where not measured: not asked for a label that
 * calibrates); 0 when not asked or none came. */
static int measure_blocks(mi__meta_t *st, const int32_t *pd, entry_t *e, int32_t n,
                          const char *const *labels) {
  const mi_search_options_t *so = st->so;
  int32_t D = st->D, got = 0, *pts, *at;
  double *d;
  if (so->struct_size < offsetof(mi_search_options_t, drops_ctx) + sizeof so->drops_ctx || !so->drops || n < 1)
    return 0;
  pts = malloc((size_t)n * (size_t)D * sizeof *pts);
  d = malloc((size_t)n * sizeof *d);
  at = malloc((size_t)n * sizeof *at);
  if (pts && d && at) {
    int32_t m = 0;
    for (int32_t b = 0; b < n; b++) {
      int32_t *pt = pts + (size_t)m * D;
      if (!uncalibrated(labels[e[b].label])) continue;
      mi_space_default(st->s, pt);
      mi__meta_fix(st, pt);
      for (int32_t q = e[b].b0; q < e[b].b1; q++) {
        int32_t v = value_of(st, pd[q], labels[e[b].label]);
        if (v >= 0) pt[pd[q]] = v;
      }
      mi__meta_fix(st, pt);
      at[m++] = b;
    }
    got = m > 0 ? so->drops(so->drops_ctx, st->s, pts, m, d) : 0;
    for (int32_t j = 0; j < m; j++) e[at[j]].sq = got > 0 && isfinite(d[j]) ? d[j] * d[j] : NAN;
  }
  free(at);
  free(pts);
  free(d);
  return got > 0;
}

static int by_key(const void *x, const void *y) {
  double a = ((const entry_t *)x)->key, b = ((const entry_t *)y)->key;
  return a > b ? -1 : a < b ? 1
                            : 0;
}

/* Builds the ordered blocks; 0 when there is nothing to order (no timed model-wide move, no
 * per-layer times, no block with a gain). */
static int build(mi__meta_t *st, const int32_t *pd, int32_t np, int32_t *pt) {
  struct mi__greedy *g = st->greedy;
  const char *labels[GREEDY_LABELS];
  int32_t trial[GREEDY_LABELS], nl = 0, nb = 0, *blk = NULL;
  entry_t *e = NULL;
  const double *base;
  int ok = 0;
  mi_space_default(st->s, pt);
  if (mi__meta_fix(st, pt) != MI_OK || !(base = trial_layers(st, mi__meta_trial_of(st, pt)))) return 0;
  for (int32_t v = 0; v < mi_space_dim_size(st->s, pd[0]) && nl < GREEDY_LABELS; v++) {
    const char *l = mi_space_dim_label(st->s, pd[0], v);
    int32_t i;
    if (!l || strcmp(l, "fp32") == 0 || !mi__meta_label_point(st, l, 0, np, pt)) continue;
    if ((i = mi__meta_trial_of(st, pt)) < 0 || !mi__meta_trial_usable(st, i) || !trial_layers(st, i)) continue;
    labels[nl] = l;
    trial[nl++] = i;
  }
  blk = malloc((size_t)(np + 1) * sizeof *blk);
  e = malloc((size_t)(np + 1) * sizeof *e);
  g->b0 = malloc((size_t)(np + 1) * sizeof *g->b0);
  g->b1 = malloc((size_t)(np + 1) * sizeof *g->b1);
  g->label = malloc((size_t)(np + 1) * sizeof *g->label);
  g->gain = malloc((size_t)(np + 1) * sizeof *g->gain);
  if (nl == 0 || !blk || !e || !g->b0 || !g->b1 || !g->label || !g->gain) goto done;
  /* blocks: a layer whose FP32 time reads 0 (fused into the one before) joins that block */
  for (int32_t k = 0; k < np; k++)
    if (k == 0 || base[mi_space_dim_node(st->s, pd[k])] > 0) blk[nb++] = k;
  blk[nb] = np;
  g->n = 0;
  for (int32_t b = 0; b < nb; b++) {
    double t0 = block_time(st, pd, base, blk[b], blk[b + 1]), bt = t0 * GREEDY_GAIN, s = 0;
    int32_t q = -1;
    if (!isfinite(t0)) continue;
    g->base_total += t0;
    for (int32_t j = 0; j < nl; j++) {
      double t = block_time(st, pd, trial_layers(st, trial[j]), blk[b], blk[b + 1]);
      if (isfinite(t) && t < bt) {
        bt = t;
        q = j;
      }
    }
    if (q < 0) continue;
    for (int32_t k = blk[b]; k < blk[b + 1]; k++) {
      int32_t v = value_of(st, pd[k], labels[q]);
      if (v >= 0) s += mi__meta_acc_share(st, pd[k], v);
    }
    e[g->n] = (entry_t){(t0 - bt) / fmax(s, 1e-30), blk[b], blk[b + 1], q, t0 - bt, NAN, s};
    g->n++;
  }
  /* The measured drops replace the predictor's shares where there are any: a block not measured
   * (the evaluator's time ran out) keeps its share. */
  if (measure_blocks(st, pd, e, g->n, labels) && (g->sq = malloc((size_t)(g->n + 1) * sizeof *g->sq)))
    for (int32_t b = 0; b < g->n; b++) {
      if (!isfinite(e[b].sq)) e[b].sq = e[b].share;
      e[b].key = e[b].gain / fmax(e[b].sq, 1e-30);
    }
  g->scale = 1;
  qsort(e, (size_t)g->n, sizeof *e, by_key);
  for (int32_t b = 0; b < g->n; b++) {
    g->b0[b] = e[b].b0;
    g->b1[b] = e[b].b1;
    g->label[b] = labels[e[b].label];
    g->gain[b] = e[b].gain;
    if (g->sq) g->sq[b] = e[b].sq;
  }
  g->lo = 0;
  g->hi = g->n + 1; /* no prefix known over the bound yet */
  ok = g->n > 0;
done:
  free(blk);
  free(e);
  return ok;
}

/* The root of the sum of the first k blocks' measured squared drops. */
static double rss(const struct mi__greedy *g, int32_t k) {
  double v = 0;
  for (int32_t b = 0; b < k; b++) v += g->sq[b];
  return sqrt(v);
}

/* Folds the result of prefix k (trial i) into lo / hi; with measured drops, the prefix's
 * measured drop over their root sum of squares scales the next predictions (the blocks'
 * errors are not quite independent). */
static void observe(mi__meta_t *st, int32_t k, int32_t i) {
  struct mi__greedy *g = st->greedy;
  double bound = mi__meta_acc_bound(st), m, p;
  int within = mi__meta_trial_usable(st, i) && !(st->r->trials[i].objectives[MI_OBJ_ACCURACY] > bound);
  if (within && k > g->lo) g->lo = k;
  if (!within && k < g->hi) g->hi = k;
  if (g->sq && mi__meta_trial_usable(st, i) && (m = st->r->trials[i].objectives[MI_OBJ_ACCURACY]) > 0 &&
      (p = rss(g, k)) > 0)
    g->scale = m / p;
}

/* 1 when prefix c (its point in pt) is predicted within the bound. */
static int predicted_within(mi__meta_t *st, int32_t c, const int32_t *pt) {
  const struct mi__greedy *g = st->greedy;
  if (g->sq) return !(g->scale * rss(g, c) > mi__meta_acc_bound(st));
  return !mi__meta_acc_screened(st, pt);
}

int mi__meta_greedy_move(mi__meta_t *st, int32_t *pt) {
  struct mi__greedy *g = st->greedy;
  const int32_t *pd = NULL;
  int32_t np = mi__meta_acc_pdims(st, &pd);
  if (g && g->done) return 0;
  if (np < 1 || !(mi__meta_acc_bound(st) > 0) || !st->mo.graph) return 0; /* not yet: no fit */
  if (!g) {
    if (!(g = st->greedy = calloc(1, sizeof *g))) return 0;
    g->last = -1;
    if (!build(st, pd, np, pt)) {
      /* nothing to order yet (no model-wide move timed per layer, e.g. a warm start that
       * shortened the design): tried again next round, it costs a pass over the trials */
      mi__meta_greedy_free(g);
      st->greedy = NULL;
      return 0;
    }
  }
  if (g->last >= 0) {
    observe(st, g->k, g->last);
    g->last = -1;
  }
  while (g->hi - g->lo > 1 && g->steps < GREEDY_MAX) {
    double left = 0;
    int32_t k = -1, i;
    for (int32_t b = 0; b < g->hi - 1; b++) left += g->gain[b];
    if (!(left >= GREEDY_MIN_GAIN * g->base_total)) break; /* too little left to save */
    for (int32_t c = g->hi - 1; c > g->lo && k < 0; c--)
      if (prefix_point(st, pd, c, pt) && predicted_within(st, c, pt)) k = c;
    if (k < 0) k = g->lo + (g->hi - g->lo) / 2; /* the predictor puts none within: bisect */
    if (!prefix_point(st, pd, k, pt)) break;
    if ((i = mi__meta_trial_of(st, pt)) >= 0) { /* measured already: its result, no step */
      observe(st, k, i);
      continue;
    }
    g->k = k;
    g->steps++;
    return 1;
  }
  g->done = 1;
  return 0;
}

void mi__meta_greedy_measured(mi__meta_t *st, int32_t i) {
  if (st->greedy) st->greedy->last = i;
}

int32_t mi__meta_greedy_count(const mi__meta_t *st) {
  return st->greedy ? st->greedy->steps : 0;
}
