/* strategy_greedy.c - the per-layer precision greedy: blocks of layers quantized in order of time
 * saved per unit of predicted accuracy loss, the longest prefix within the bound found by
 * measurement (HAQ/HAWQ-style mixed precision under a measured bound).
 *
 * Each block of layers (a layer and the ones fused into it, which have no time of their own) has a
 * candidate per label under which the model-wide moves timed it at least GREEDY_GAIN under its
 * FP32 time (single timings are noisy); it saves gain = FP32 time - that time. Its sensitivity
 * is its own squared drop, measured by the evaluator (so->drops: the default with only that
 * block at that label, on the device, from the calibration samples) when it offers that; else
 * the accuracy predictor's share of the squared drop for that (layer, label) (strategy_acc.c,
 * fitted on the model-wide and split moves: a fit of a handful of points, which put BF16's loss
 * on the wrong layers of blazeface_back). A measured drop counts without the default's own (a
 * lossy kernel's 0.005 on ppocr_v4_rec made every block read 0.005). A block's candidates become
 * steps along their upper hull of (sensitivity, gain) (hull_steps: BF16 first, then INT8 where
 * INT8 saves more), and the steps of all blocks are ordered once by gain / sensitivity, largest
 * first, the measured steps before the predictor's guesses, so a prefix of k steps is the best
 * known for its size. Before the hull each block took the label that ran fastest: on
 * ppocr_v4_rec and mlsd_tiny_320 that was int8_act, every prefix measured broke the 0.01 bound,
 * and bf16 (half the default's time model-wide on ppocr_v4_rec, drop 0.04) was never tried per
 * block. The guesses go last because one that is wrong ends the bisection: on mlsd_tiny_320 one
 * INT8 block, ordered first on its share, measured 0.2 alone, so every prefix broke the bound.
 * The feasible prefixes are monotone under either (drops, shares and the hull's increments are
 * non-negative), so the search is a bisection over k with measurement: lo is the longest prefix
 * measured within the bound, hi the shortest measured over it. Each step measures the longest
 * prefix in (lo, hi) predicted within the bound, or the midpoint when none is: with measured
 * drops the prediction is the root of the sum of the prefix's squared drops (and the default's)
 * times the last measured prefix's drop over its own root sum of squares (independent errors add
 * in quadrature; the ratio corrects for those that do not), else the predictor, refitted on
 * every step. When hi = lo + 1, step lo (with its block's later steps) leaves the order and the
 * bisection goes on over the steps after it. It ends when every step left is in, after GREEDY_MAX
 * steps, or when the longest prefix left to try would save under GREEDY_MIN_GAIN of the
 * default's layer time.
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
#include "metainfer/mi_measure.h"

#define GREEDY_GAIN 0.9
#define GREEDY_MAX 8
#define GREEDY_MIN_GAIN 0.03
#define GREEDY_LABELS 16
#define GREEDY_SCALE_NODES 4

struct mi__greedy {
  int done;
  int32_t steps, last, k;   /* steps measured, the last step's trial (-1: none pending), its prefix */
  int32_t best;             /* the trial of prefix lo (-1: none measured within the bound) */
  int32_t n, lo, hi;        /* ordered steps; longest prefix within the bound; shortest over it */
  int32_t *b0, *b1;         /* per ordered step: its block's precision dims [b0, b1) in the pdims list */
  const char **label;       /* per ordered step: the block's label from it on (the space owns it) */
  double *gain, base_total; /* per step: the time it saves over the block's step before */
  double *sq;               /* per step: the squared drop it adds (measured, else the predictor's); NULL: none measured */
  double scale;             /* the last measured prefix's drop / its root sum of squares */
  double base_sq;           /* the default's own squared drop (every measured block's drop includes it) */
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

/* A block's time in trial ls: its first layer's (NaN when that has none: the block is not timed)
 * plus those of the layers after it that ran as steps of their own. A layer fused into another's
 * kernel has no step, so no time (NaN): a pointwise conv inside its depthwise conv's dw+pw kernel
 * is timed in the depthwise conv's row. Summing it as NaN dropped every dw+pw block from the
 * order: ppocr_v4_rec's twelve dw+pw blocks, 68% of its time at 1 thread, whose pointwise convs
 * BF16 runs up to 1.6x faster, were never a step. */
static double block_time(const mi__meta_t *st, const int32_t *pd, const double *ls, int32_t b0, int32_t b1) {
  double t = ls[mi_space_dim_node(st->s, pd[b0])];
  if (!isfinite(t)) return NAN;
  for (int32_t k = b0 + 1; k < b1; k++) {
    double v = ls[mi_space_dim_node(st->s, pd[k])];
    if (isfinite(v)) t += v;
  }
  return t;
}

/* How much slower trial ls ran than the default (base) where the precision cannot have changed
 * the work: the median, over the timed nodes that carry no precision dim, of their time in ls
 * over their time in base; 1 when fewer than GREEDY_SCALE_NODES such nodes are timed in both.
 * The model-wide moves are single timings taken minutes apart on a shared machine (blazeface_back's
 * bf16 move 3.3 ms in one tune, 6.5-9.3 ms in others): a move that ran under load would show no
 * block under GREEDY_GAIN of its FP32 time, and one that ran while the default was loaded would
 * show gains that are not there. Its block times are divided by this. */
static double load_scale(const mi__meta_t *st, const int32_t *pd, int32_t np, const double *base,
                         const double *ls) {
  int32_t N = st->mo.graph->node_count, n = 0;
  double *r = malloc((size_t)N * sizeof *r + 1), m = 1;
  uint8_t *prec = calloc((size_t)N + 1, 1);
  mi_stats_t ms;
  if (r && prec) {
    for (int32_t k = 0; k < np; k++) {
      int32_t nd = mi_space_dim_node(st->s, pd[k]);
      if (nd >= 0 && nd < N) prec[nd] = 1;
    }
    for (int32_t nd = 0; nd < N; nd++)
      if (!prec[nd] && base[nd] > 0 && ls[nd] > 0 && isfinite(base[nd]) && isfinite(ls[nd]))
        r[n++] = ls[nd] / base[nd];
    if (n >= GREEDY_SCALE_NODES && mi_stats_compute(r, n, 0, &ms, NULL) == MI_OK) m = ms.median;
  }
  free(r);
  free(prec);
  return m > 0 && isfinite(m) ? m : 1;
}

/* The value of dim d labelled l, or -1. */
static int32_t value_of(const mi__meta_t *st, int32_t d, const char *l) {
  for (int32_t v = 0; v < mi_space_dim_size(st->s, d); v++) {
    const char *m = mi_space_dim_label(st->s, d, v);
    if (m && strcmp(m, l) == 0) return v;
  }
  return -1;
}

/* pt = the base point with the first k ordered steps taken (a block's later step overrides its
 * earlier one). */
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
  int32_t b0, b1, label, rank; /* rank: its place among its block's steps (1: the first) */
  int fastest, guessed;        /* the block's fastest label; its sensitivity the predictor's */
  double gain, sq;             /* sq: its own drop measured, squared (NaN: not measured) */
  double share;                /* the predictor's share of the squared drop */
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

/* Measured steps first, then those whose sensitivity is the predictor's; in each, largest key
 * first; a block's steps (equal keys) in their order. */
static int by_key(const void *x, const void *y) {
  const entry_t *a = x, *b = y;
  if (a->guessed != b->guessed) return a->guessed - b->guessed;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  if (a->b0 != b->b0) return a->b0 < b->b0 ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int by_sq(const void *x, const void *y) {
  const entry_t *a = x, *b = y;
  if (a->sq != b->sq) return a->sq < b->sq ? -1 : 1;
  return a->gain > b->gain ? -1 : a->gain < b->gain; /* the same loss: the larger gain first */
}

/* One block's candidates c[0..n) (one per label, gain and sensitivity sq set) become its steps
 * on the upper hull of (sensitivity, gain) from FP32 at (0, 0): each step moves the block to the
 * next label on the hull, gains and sensitivities as increments and key = gain / sensitivity of
 * the step (multiple-choice knapsack's greedy). Steps' keys fall along the hull, so a prefix
 * ordered by key takes a block's cheaper label before its lossier one, and a lossy label that
 * runs fastest (INT8 on a layer that breaks the bound alone) no longer hides a safe one (BF16)
 * that saves less. The candidate whose sensitivity is the predictor's guess (at most one, the
 * block's fastest label) is not on the hull: it follows as the block's last step where it saves
 * more than the hull's end (its guess could otherwise push a measured label off the hull).
 * Returns the steps written back into c. */
static int32_t hull_steps(entry_t *c, int32_t n) {
  int32_t h = 0, guess = -1;
  double best = 0;
  entry_t u;
  for (int32_t i = 0; i < n; i++)
    if (c[i].guessed) guess = i;
  if (guess >= 0) { /* set aside at the end */
    u = c[guess];
    c[guess] = c[n - 1];
    n--;
  }
  qsort(c, (size_t)n, sizeof *c, by_sq);
  for (int32_t i = 0; i < n; i++) { /* drop the dominated: no more gain for more loss */
    if (!(c[i].gain > best)) continue;
    best = c[i].gain;
    /* pop while the last kept point lies on or under the line from the one before it to this */
    while (h > 0) {
      double g0 = h > 1 ? c[h - 2].gain : 0, s0 = h > 1 ? c[h - 2].sq : 0;
      if ((c[h - 1].gain - g0) * (c[i].sq - s0) > (c[i].gain - g0) * (c[h - 1].sq - s0)) break;
      h--;
    }
    c[h++] = c[i];
  }
  if (guess >= 0 && u.gain > best) {
    if (h > 0) u.sq = fmax(u.sq, c[h - 1].sq); /* no less loss than the step before */
    c[h++] = u;
  }
  for (int32_t k = h - 1; k >= 0; k--) { /* increments from the step before */
    double g0 = k > 0 ? c[k - 1].gain : 0, s0 = k > 0 ? c[k - 1].sq : 0;
    c[k].gain -= g0;
    c[k].sq -= s0;
    c[k].rank = k + 1;
    c[k].key = c[k].gain / fmax(c[k].sq, 1e-30);
  }
  return h;
}

/* Builds the ordered steps; 0 when there is nothing to order (no timed model-wide move, no
 * per-layer times, no block with a gain). */
static int build(mi__meta_t *st, const int32_t *pd, int32_t np, int32_t *pt) {
  struct mi__greedy *g = st->greedy;
  const char *labels[GREEDY_LABELS];
  int32_t trial[GREEDY_LABELS], nl = 0, nb = 0, ne = 0, *blk = NULL;
  double scale[GREEDY_LABELS];
  entry_t *e = NULL;
  const double *base;
  int ok = 0, measured;
  size_t cap;
  mi_space_default(st->s, pt);
  if (mi__meta_fix(st, pt) != MI_OK || !(base = trial_layers(st, mi__meta_trial_of(st, pt)))) return 0;
  {
    double d0 = st->r->trials[mi__meta_trial_of(st, pt)].objectives[MI_OBJ_ACCURACY];
    g->base_sq = isfinite(d0) ? d0 * d0 : 0;
  }
  for (int32_t v = 0; v < mi_space_dim_size(st->s, pd[0]) && nl < GREEDY_LABELS; v++) {
    const char *l = mi_space_dim_label(st->s, pd[0], v);
    int32_t i;
    if (!l || strcmp(l, "fp32") == 0 || !mi__meta_label_point(st, l, 0, np, pt)) continue;
    if ((i = mi__meta_trial_of(st, pt)) < 0 || !mi__meta_trial_usable(st, i) || !trial_layers(st, i)) continue;
    labels[nl] = l;
    scale[nl] = load_scale(st, pd, np, base, trial_layers(st, i));
    trial[nl++] = i;
  }
  cap = (size_t)np * (size_t)(nl > 0 ? nl : 1) + 1;
  blk = malloc((size_t)(np + 1) * sizeof *blk);
  e = malloc(cap * sizeof *e);
  g->b0 = malloc(cap * sizeof *g->b0);
  g->b1 = malloc(cap * sizeof *g->b1);
  g->label = malloc(cap * sizeof *g->label);
  g->gain = malloc(cap * sizeof *g->gain);
  if (nl == 0 || !blk || !e || !g->b0 || !g->b1 || !g->label || !g->gain) goto done;
  /* blocks: a layer without time of its own in FP32 (fused into the one before) joins that block */
  for (int32_t k = 0; k < np; k++)
    if (k == 0 || base[mi_space_dim_node(st->s, pd[k])] > 0) blk[nb++] = k;
  blk[nb] = np;
  /* candidates: each label under which a block ran at least GREEDY_GAIN under its FP32 time */
  for (int32_t b = 0; b < nb; b++) {
    double t0 = block_time(st, pd, base, blk[b], blk[b + 1]), bt = INFINITY;
    int32_t first = ne, fast = -1;
    if (!isfinite(t0)) continue;
    g->base_total += t0;
    for (int32_t j = 0; j < nl; j++) {
      double t = block_time(st, pd, trial_layers(st, trial[j]), blk[b], blk[b + 1]) / scale[j], s = 0;
      if (!(isfinite(t) && t < t0 * GREEDY_GAIN)) continue;
      for (int32_t k = blk[b]; k < blk[b + 1]; k++) {
        int32_t v = value_of(st, pd[k], labels[j]);
        if (v >= 0) s += mi__meta_acc_share(st, pd[k], v);
      }
      if (t < bt) {
        bt = t;
        fast = ne;
      }
      e[ne++] = (entry_t){.b0 = blk[b], .b1 = blk[b + 1], .label = j, .gain = t0 - t, .sq = NAN, .share = s};
    }
    for (int32_t i = first; i < ne; i++) e[i].fastest = i == fast;
  }
  /* The measured drops replace the predictor's shares. A block keeps the candidates whose drop
   * was measured and the label it ran fastest under (its share where not measured: a label that
   * calibrates, or the evaluator's time ran out): the shares of a label the split moves never
   * split are its model-wide drop spread evenly, which would look safer than the split label's
   * own figures on the very layers that carry the loss. */
  measured = measure_blocks(st, pd, e, ne, labels);
  g->n = 0; /* here: the candidates kept */
  for (int32_t i = 0; i < ne; i++) {
    if (measured && isfinite(e[i].sq)) { /* the block's own part: the default's taken out */
      e[i].sq = fmax(0, e[i].sq - g->base_sq);
    } else {
      if (!e[i].fastest) continue;
      e[i].sq = e[i].share;
      e[i].guessed = 1;
    }
    e[g->n++] = e[i];
  }
  ne = g->n;
  g->n = 0;
  for (int32_t i = 0, j; i < ne; i = j) { /* each block's candidates are adjacent */
    int32_t h;
    for (j = i; j < ne && e[j].b0 == e[i].b0; j++) continue;
    h = hull_steps(e + i, j - i);
    memmove(e + g->n, e + i, (size_t)h * sizeof *e);
    g->n += h;
  }
  if (measured) g->sq = malloc(cap * sizeof *g->sq);
  qsort(e, (size_t)g->n, sizeof *e, by_key);
  for (int32_t b = 0; b < g->n; b++) {
    g->b0[b] = e[b].b0;
    g->b1[b] = e[b].b1;
    g->label[b] = labels[e[b].label];
    g->gain[b] = e[b].gain;
    if (g->sq) g->sq[b] = e[b].sq;
  }
  g->scale = 1;
  g->lo = 0;
  g->hi = g->n + 1; /* no prefix known over the bound yet */
  ok = g->n > 0;
done:
  free(blk);
  free(e);
  return ok;
}

/* The root of the sum of the first k steps' squared drops and the default's. */
static double rss(const struct mi__greedy *g, int32_t k) {
  double v = g->base_sq;
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
  if (within && k > g->lo) {
    g->lo = k;
    g->best = i;
  }
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

/* Takes step s and its block's later steps out of the order (the prefixes up to s keep their
 * points). */
static void drop_step(struct mi__greedy *g, int32_t s) {
  int32_t b0 = g->b0[s], n = s;
  for (int32_t j = s; j < g->n; j++) {
    if (g->b0[j] == b0) continue;
    g->b0[n] = g->b0[j];
    g->b1[n] = g->b1[j];
    g->label[n] = g->label[j];
    g->gain[n] = g->gain[j];
    if (g->sq) g->sq[n] = g->sq[j];
    n++;
  }
  g->n = n;
}

int mi__meta_greedy_move(mi__meta_t *st, int32_t *pt) {
  struct mi__greedy *g = st->greedy;
  const int32_t *pd = NULL;
  int32_t np = mi__meta_acc_pdims(st, &pd);
  if (g && g->done) return 0;
  if (np < 1 || !(mi__meta_acc_bound(st) > 0) || !st->mo.graph) return 0; /* not yet: no fit */
  if (!g) {
    if (!(g = st->greedy = calloc(1, sizeof *g))) return 0;
    g->last = g->best = -1;
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
  while (g->steps < GREEDY_MAX) {
    double left = 0;
    int32_t k = -1, i;
    if (g->hi - g->lo <= 1) {
      /* Step lo breaks the bound on top of the prefix before it, though its own drop did not
       * say so (the blocks' errors do not always add: ppocr_v4_rec's 11th BF16 block took the
       * drop from 0.0046 to 0.022): without it and its block, the steps after it may still fit. */
      if (g->hi > g->n) break; /* every step fits */
      drop_step(g, g->lo);
      g->hi = g->n + 1;
      continue;
    }
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

int32_t mi__meta_greedy_best(mi__meta_t *st) {
  struct mi__greedy *g = st->greedy;
  if (!g) return -1;
  if (g->last >= 0) {
    observe(st, g->k, g->last);
    g->last = -1;
  }
  return g->best;
}
