/* strategy_design.c - the cold design's first points: one factor at a time, applied model-wide.
 *
 * A uniform random point of a real model's joint space sets every layer's precision and pruning
 * at random: on ppocr_v2_cls (blis-cpu, budget 40) all 10 such points broke a 1% accuracy bound
 * (drops 0.2-0.99) and ran 10-300x slower than the default (a conversion at every boundary
 * between layers of different precision), so the cold design taught the surrogate nothing near
 * the feasible region. The design now starts from the default point (with the layer tasks'
 * kernels) and changes one family of dimensions at a time, everywhere: every layer's precision
 * to one label (all int8_channel, all fp16, ...), every prunable layer's ratio to one level,
 * each global model-side choice (BN folding, fusion, layout) and each device-level knob to each
 * of its values. A family is the dimension's name without its node ("precision", "prune",
 * "knob.X"); a global dimension is a family of its own. Random points follow when the design
 * wants more. */
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"
#include "space/space.h"

static int is_precision(const mi__meta_t *st, int32_t d) { return mi__space_is_precision(st->s, d); }

static int eligible(const mi__meta_t *st, int32_t d) {
  int32_t kind = mi_space_dim_kind(st->s, d);
  if (st->mo.frozen && st->mo.frozen[d]) return 0;
  if (st->moves_prec_only) return is_precision(st, d);
  return kind == MI_DIM_MODEL || (kind == MI_DIM_KNOB && mi_space_dim_node(st->s, d) < 0);
}

/* The family key: a per-node dimension's name after its node ("precision"), else the name. */
static const char *family(const mi__meta_t *st, int32_t d) {
  const char *n = mi_space_dim_name(st->s, d), *dot;
  if (mi_space_dim_node(st->s, d) < 0 || !n) return n ? n : "";
  if ((dot = strstr(n, ".knob."))) return dot + 1;
  dot = strrchr(n, '.');
  return dot ? dot + 1 : n;
}

static int same_family(const mi__meta_t *st, int32_t a, int32_t b) {
  return mi_space_dim_kind(st->s, a) == mi_space_dim_kind(st->s, b) &&
         (mi_space_dim_node(st->s, a) < 0) == (mi_space_dim_node(st->s, b) < 0) &&
         strcmp(family(st, a), family(st, b)) == 0;
}

static const char *label(const mi__meta_t *st, int32_t d, int32_t v) {
  const char *l = mi_space_dim_label(st->s, d, v);
  return l ? l : "";
}

/* Move number `k` (the precision family first, then the others in dimension order, each family's
 * labels in order of first appearance) written into pt over the base point: 1, or 0 when there
 * are fewer moves. Precision first: its model-wide moves are what the split moves and the
 * per-layer greedy start from (strategy_acc.c, strategy_greedy.c), and after BN folding, fusion
 * and layout a small design (4 points under a budget of 24) never reached them: ppocr_v4_det
 * (budget 40, half of it the layer tasks') measured no model-wide precision at all. */
static int move(const mi__meta_t *st, int32_t k, int32_t *pt) {
  int32_t D = st->D;
  for (int32_t q = 0; q < 2 * D; q++) {
    int32_t r = q % D;
    int first = eligible(st, r) && is_precision(st, r) == (q < D);
    for (int32_t e = 0; first && e < r; e++)
      if (eligible(st, e) && same_family(st, e, r)) first = 0;
    if (!first) continue;
    /* Family r: each (dim, value) whose label is not seen earlier in the family is one move. */
    for (int32_t d = r; d < D; d++) {
      if (!eligible(st, d) || !same_family(st, r, d)) continue;
      for (int32_t v = 0; v < mi_space_dim_size(st->s, d); v++) {
        const char *l = label(st, d, v);
        int seen = 0;
        for (int32_t e = r; e <= d && !seen; e++) {
          if (!eligible(st, e) || !same_family(st, r, e)) continue;
          for (int32_t w = 0; w < (e == d ? v : mi_space_dim_size(st->s, e)) && !seen; w++)
            seen = strcmp(label(st, e, w), l) == 0;
        }
        if (seen || k-- > 0) continue;
        for (int32_t e = r; e < D; e++) {
          if (!eligible(st, e) || !same_family(st, r, e)) continue;
          for (int32_t w = 0; w < mi_space_dim_size(st->s, e); w++)
            if (strcmp(label(st, e, w), l) == 0) {
              pt[e] = w;
              break;
            }
        }
        return 1;
      }
    }
  }
  return 0;
}

#define MOVES_PREC_MIN 2

int mi__meta_design_move(mi__meta_t *st, int32_t *pt) {
  if (st->moves_next == 0) {
    /* Only where random points mix many choices: with few model-side and device dimensions a
     * random point is itself a small change, and the random design explores better (test_meta's
     * synthetic spaces: meta beat random on 6 of 10 seeds with the moves, 8+ without). */
    int32_t n = 0, np = 0;
    for (int32_t d = 0; d < st->D; d++) {
      n += eligible(st, d);
      np += eligible(st, d) && is_precision(st, d);
    }
    /* Except for per-layer precision: a random mix of precisions over several layers pays a
     * conversion at most boundaries, so a random point never shows what one label is worth.
     * oww_embedding (20 convolutions, 28 eligible dimensions) got no model-wide INT8 point and
     * its 21 searched mixes ran 1.0-1.8x slower than the default, while all of its convolutions
     * at int8_act run faster. With at least MOVES_PREC_MIN precision dimensions the design
     * keeps the precision family's moves alone: two, since oww_melspectrogram (its two STFT
     * convolutions and a MatMul, 3 precision dimensions in 26) never measured its convolutions
     * both at one label under the random design (budget 40). */
    if (n < 32) {
      if (np >= MOVES_PREC_MIN) st->moves_prec_only = 1;
      else
        st->moves_done = 1;
    }
  }
  while (!st->moves_done) {
    int32_t k = st->moves_next++;
    mi_space_default(st->s, pt);
    if (mi__meta_fix(st, pt) != MI_OK) return 0;
    if (!move(st, k, pt)) {
      st->moves_done = 1;
      return 0;
    }
    if (mi__meta_fix(st, pt) == MI_OK) return 1;
  }
  return 0;
}

/* The design moved the device-level knobs on the default point only, and the precision moves
 * and the greedy after them keep the default's values: on ppocr_v2_cls (2-vCPU Zen 5, budget 40)
 * one tune deployed `bf16` everywhere at one thread, 1.47x the default, and the next, whose
 * random points never paired `bf16` with one thread, deployed it at two, 1.03x: the best
 * model-side point was never measured with the other thread count. Each new best point gets its
 * global knobs moved to their neighbouring values one at a time (coordinate search on the device
 * side: every knob one step down, then every knob one step up), measured, so the search and the
 * paired check see them. */
int mi__meta_polish_move(mi__meta_t *st, int32_t *pt) {
  int32_t b = mi__meta_best(st), c = 0;
  const mi_trial_t *t;
  if (b < 0) return 0;
  t = &st->r->trials[b];
  if (t->hash != st->polish_hash) {
    st->polish_hash = t->hash;
    st->polish_next = 0;
  }
  for (int32_t step = -1; step <= 1; step += 2)
    for (int32_t d = 0; d < st->D; d++) {
      int32_t v = t->point[d] + step;
      uint64_t h;
      int seen = 0;
      if (mi_space_dim_kind(st->s, d) != MI_DIM_KNOB || mi_space_dim_node(st->s, d) >= 0 ||
          (st->mo.frozen && st->mo.frozen[d]) || v < 0 || v >= mi_space_dim_size(st->s, d) || c++ < st->polish_next)
        continue;
      if (st->polish_next >= st->mo.device_moves) return 0;
      st->polish_next++;
      memcpy(pt, t->point, (size_t)st->D * sizeof *pt);
      pt[d] = v;
      if (mi__meta_fix(st, pt) != MI_OK) continue;
      h = mi_space_hash(st->s, pt);
      for (int32_t i = 0; i < st->r->count && !seen; i++) seen = st->r->trials[i].hash == h;
      if (seen) continue;
      st->polish_count++;
      return 1;
    }
  return 0;
}
