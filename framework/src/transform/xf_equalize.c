/* xf_equalize.c - cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization Through
 * Weight Equalization and Bias Correction"). For two Convs joined by a positive-homogeneous
 * activation f (f(x / s) = f(x) / s for s > 0), output channel c of the first (weights and bias)
 * is divided by s_c and input channel c of the second multiplied by it, with
 * s_c = sqrt(r1_c / r2_c) from the channel's weight ranges in each. The FP32 function is the
 * same; both ranges become sqrt(r1_c r2_c), and the tensor between the two, whose channels had
 * ranges as uneven as r1_c, gets even channels, so one per-tensor INT8 scale fits it better. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

/* Rounds of equalizing every pair: a layer inside a chain is the second of one pair and the
 * first of the next, so one round undoes part of the last; the scales settle in a few rounds. */
#define EQ_ROUNDS 32
#define EQ_SETTLED 1e-4 /* largest |log s_c| of a round that counts as settled */

/* W_a is [ch, per]; W_b is [oc, icg, k] in `group`s of ocg outputs, and its input channel c is
 * (o / ocg) * icg + j for output o, index j. */
typedef struct {
  int32_t a, b; /* the first and the second Conv */
  int64_t ch, per, oc, icg, k, ocg;
} eq_pair_t;

/* True when every element of constant FP32 tensor t is 0. */
static int all_zero(const mi_graph_t *g, int32_t t) {
  const float *v = t >= 0 && g->tensors[t].dtype == MI_DTYPE_FLOAT32 ? g->tensors[t].data : NULL;
  int64_t n = v ? mi__xf_numel(g, t) : 0;
  for (int64_t i = 0; i < n; i++)
    if (v[i] != 0.0f) return 0;
  return n > 0;
}

/* Node n reads t and computes f(t) with f(x / s) = f(x) / s for every per-channel s > 0: Relu,
 * LeakyRelu, PRelu (any slope), Identity, Max(t, 0) (a Relu as converters write it), Clip with
 * lower bound 0 and no upper one, the (global) max and average pools and a Pad with value 0.
 * Clip with a max (Relu6), Max(t, c != 0), HardSwish and the saturating ones are not: their
 * bound would have to scale per channel. */
static int homogeneous(const mi_graph_t *g, const mi_node_t *n, int32_t t) {
  const char *op = n->op_type;
  if (n->output_count != 1) return 0;
  if (!strcmp(op, "Max"))
    return n->input_count == 2 && all_zero(g, n->inputs[n->inputs[0] == t ? 1 : 0]);
  if (n->inputs[0] != t) return 0;
  static const char *const plain[] = {"Relu", "LeakyRelu", "PRelu", "Identity",
                                      "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"};
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
    if (!strcmp(op, plain[i])) return 1;
  if (!strcmp(op, "Pad"))
    return mi_node_attr_float(n, "value", 0.0f) == 0.0f &&
           (n->input_count < 3 || n->inputs[2] < 0 || all_zero(g, n->inputs[2]));
  if (strcmp(op, "Clip")) return 0;
  const float *lo = mi__xf_const_f32(g, n, 1);
  int has_max = (n->input_count > 2 && n->inputs[2] >= 0) || mi_node_attr(n, "max");
  int runtime_min = n->input_count > 1 && n->inputs[1] >= 0 && !lo;
  return !has_max && !runtime_min && (lo ? lo[0] : mi_node_attr_float(n, "min", -INFINITY)) == 0.0f;
}

/* A Conv with a constant FP32 weight of rank >= 3, a constant bias or none, one output. */
static int plain_conv(const mi_graph_t *g, int32_t n) {
  const mi_node_t *x = &g->nodes[n];
  if (strcmp(x->op_type, "Conv") || !mi__xf_is_weighted(g, n) || x->output_count != 1) return 0;
  if (g->tensors[x->inputs[1]].rank < 3) return 0;
  return !(x->input_count > 2 && x->inputs[2] >= 0 && !mi__xf_const_f32(g, x, 2));
}

/* The Conv that reads node a's output, through homogeneous activations only, each the sole
 * reader of the tensor before it, or -1. */
static int32_t next_conv(const mi_graph_t *g, int32_t a) {
  int32_t t = g->nodes[a].outputs[0];
  for (int hops = 0; hops < 6; hops++) {
    int32_t c = mi__xf_sole_consumer(g, t);
    if (c < 0) return -1;
    if (plain_conv(g, c)) return g->nodes[c].inputs[0] == t ? c : -1;
    if (!homogeneous(g, &g->nodes[c], t)) return -1;
    t = g->nodes[c].outputs[0];
  }
  return -1;
}

/* The pairs of the graph: a's output channels feed b's input channels one to one. */
static int32_t find_pairs(const mi_graph_t *g, eq_pair_t *pairs) {
  int32_t count = 0;
  for (int32_t a = 0; a < g->node_count; a++) {
    if (!plain_conv(g, a)) continue;
    int32_t b = next_conv(g, a);
    if (b < 0) continue;
    const mi_tensor_t *wa = &g->tensors[g->nodes[a].inputs[1]], *wb = &g->tensors[g->nodes[b].inputs[1]];
    int64_t group = mi_node_attr_int(&g->nodes[b], "group", 1);
    if (wa->dims[0] < 1 || wb->dims[0] < 1 || wb->dims[1] < 1 || group < 1 ||
        wb->dims[1] * group != wa->dims[0] || wb->dims[0] % group)
      continue;
    eq_pair_t *p = &pairs[count++];
    p->a = a;
    p->b = b;
    p->ch = wa->dims[0];
    p->per = mi__xf_numel(g, g->nodes[a].inputs[1]) / p->ch;
    p->oc = wb->dims[0];
    p->icg = wb->dims[1];
    p->k = mi__xf_numel(g, g->nodes[b].inputs[1]) / (p->oc * p->icg);
    p->ocg = p->oc / group;
  }
  return count;
}

/* Gives input k of node n a private copy, so that a constant shared with another node (or
 * another pair) is never scaled twice; returns its data or NULL when out of memory. */
static float *private_copy(mi_graph_t *g, int32_t n, int32_t k, const char *suffix) {
  int32_t old = g->nodes[n].inputs[k], rank = g->tensors[old].rank;
  int64_t dims[MI_MAX_RANK], cnt = mi__xf_numel(g, old);
  /* Copied first: adding a tensor may move the tensor array (not the data it points to). */
  memcpy(dims, g->tensors[old].dims, sizeof dims);
  int32_t c = mi__xf_add_const(g, g->nodes[n].name, suffix, MI_DTYPE_FLOAT32, rank, dims,
                               g->tensors[old].data, (size_t)cnt * sizeof(float));
  if (c < 0) return NULL;
  g->nodes[n].inputs[k] = c;
  return g->tensors[c].data;
}

/* r2[c] = max |W_b| over the weights of pair p's second layer that read channel c. */
static void b_ranges(const eq_pair_t *p, const float *b, double *r2) {
  for (int64_t c = 0; c < p->ch; c++) r2[c] = 0.0;
  for (int64_t o = 0; o < p->oc; o++)
    for (int64_t j = 0; j < p->icg; j++) {
      const float *w = b + (o * p->icg + j) * p->k;
      double *r = &r2[(o / p->ocg) * p->icg + j];
      for (int64_t i = 0; i < p->k; i++) *r = fmax(*r, fabs(w[i]));
    }
}

/* One equalization of pair p (r1, r2: ch scratch entries); returns the largest |log s_c|. */
static double equalize_pair(mi_graph_t *g, const eq_pair_t *p, double *r1, double *r2) {
  float *a = g->tensors[g->nodes[p->a].inputs[1]].data, *b = g->tensors[g->nodes[p->b].inputs[1]].data;
  float *bias = (float *)mi__xf_const_f32(g, &g->nodes[p->a], 2);
  double moved = 0.0;
  /* r1[c] = max |W_a[c, ...]|, r2[c] = max |W_b| over the weights that read channel c. */
  for (int64_t c = 0; c < p->ch; c++) {
    r1[c] = 0.0;
    for (int64_t i = 0; i < p->per; i++) r1[c] = fmax(r1[c], fabs(a[c * p->per + i]));
  }
  b_ranges(p, b, r2);
  for (int64_t c = 0; c < p->ch; c++) {
    /* A channel dead in either layer keeps its scale: nothing to balance. */
    double s = r1[c] > 0.0 && r2[c] > 0.0 ? sqrt(r1[c] / r2[c]) : 1.0;
    r1[c] = isfinite(s) && s > 0.0 ? s : 1.0; /* r1 now holds the scales */
    moved = fmax(moved, fabs(log(r1[c])));
    for (int64_t i = 0; i < p->per; i++) a[c * p->per + i] = (float)(a[c * p->per + i] / r1[c]);
    if (bias) bias[c] = (float)(bias[c] / r1[c]);
  }
  for (int64_t o = 0; o < p->oc; o++)
    for (int64_t j = 0; j < p->icg; j++) {
      float *w = b + (o * p->icg + j) * p->k;
      double s = r1[(o / p->ocg) * p->icg + j];
      for (int64_t i = 0; i < p->k; i++) w[i] = (float)(w[i] * s);
    }
  return moved;
}

/* Private copies of every weight and first-layer bias the pairs scale. */
static int32_t own_constants(mi_graph_t *g, const eq_pair_t *pairs, int32_t count) {
  uint8_t *done = calloc((size_t)g->node_count + 1, 2);
  int32_t rc = MI_OK;
  if (!done) return MI_ERR_OUT_OF_MEMORY;
  for (int32_t i = 0; i < count && rc == MI_OK; i++) {
    int32_t a = pairs[i].a, b = pairs[i].b;
    if (!done[2 * a] && !private_copy(g, a, 1, ".w_eq")) rc = MI_ERR_OUT_OF_MEMORY;
    done[2 * a] = 1;
    if (rc == MI_OK && !done[2 * b] && !private_copy(g, b, 1, ".w_eq")) rc = MI_ERR_OUT_OF_MEMORY;
    done[2 * b] = 1;
    if (rc == MI_OK && !done[2 * a + 1] && mi__xf_const_f32(g, &g->nodes[a], 2) &&
        !private_copy(g, a, 2, ".b_eq"))
      rc = MI_ERR_OUT_OF_MEMORY;
    done[2 * a + 1] = 1;
  }
  free(done);
  return rc;
}

/* ------------------------------------------------------------------ data-aware equalization */

/* Data-aware equalization (`equalize: data`). With per-output-channel weight scales (every INT8
 * layer here) the first layer's weight ranges no longer matter to the rounding; what does is the
 * per-tensor UINT8 range of the activation between the two layers, shared by channels of very
 * different ranges, and the spread of the second layer's weights along its input channels,
 * which one per-output-channel scale covers. So the scale balances the activation's calibrated
 * per-channel range a_c (max |x| over the calibration samples) against r2_c, as SmoothQuant
 * does with alpha 0.5 (Xiao et al. 2023): s_c = sqrt(a_c / r2_c) up to one factor per pair,
 * after which both are proportional to sqrt(a_c r2_c); the factor keeps the tensor's largest
 * channel range as it was. A depthwise second layer (one input channel per output channel)
 * takes any s_c into its own per-channel weight scale without loss, so there every channel is
 * scaled to the tensor's largest range. The pairs are the weight-based pass's (find_pairs). */

/* Per channel (axis 1) max |x| of y into out[ch]. */
static void channel_max(const mi_array_t *y, int64_t ch, double *out) {
  const float *v = y->data;
  int64_t outer, inner = 1;
  if (y->dtype != MI_DTYPE_FLOAT32 || y->rank < 2 || y->dims[1] != ch) return;
  outer = y->dims[0];
  for (int32_t k = 2; k < y->rank; k++) inner *= y->dims[k];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++) {
      const float *p = v + (o * ch + c) * inner;
      for (int64_t i = 0; i < inner; i++) out[c] = fmax(out[c], fabs((double)p[i]));
    }
}

/* act[i][c]: max |x| of channel c of the tensor pair i's second Conv reads, over the samples
 * (one reference run of a copy of g with those tensors as outputs per sample). */
static int32_t measure_pairs(const mi_graph_t *g, const mi_xf_samples_t *calib, const eq_pair_t *pairs,
                             double **act, int32_t count, mi_error_t *err) {
  mi_graph_t *c = mi_graph_clone(g);
  int32_t *at = calloc((size_t)count + 1, sizeof *at), rc = MI_OK;
  mi_array_t **outs = NULL;
  if (!c || !at) goto oom;
  for (int32_t i = 0; i < count; i++) {
    int32_t t = g->nodes[pairs[i].b].inputs[0], k = -1;
    for (int32_t o = 0; o < c->output_count && k < 0; o++)
      if (c->outputs[o] == t) k = o;
    if (k < 0) {
      k = c->output_count;
      if (mi_graph_add_output(c, t) != MI_OK) goto oom;
    }
    at[i] = k;
  }
  if (!(outs = calloc((size_t)c->output_count + 1, sizeof *outs))) goto oom;
  for (int32_t s = 0; s < calib->sample_count && rc == MI_OK; s++) {
    rc = mi_ref_run(c, (const mi_array_t *const *)calib->inputs + (size_t)s * calib->input_count,
                    calib->input_count, outs, c->output_count, err);
    for (int32_t i = 0; rc == MI_OK && i < count; i++) channel_max(outs[at[i]], pairs[i].ch, act[i]);
    for (int32_t o = 0; o < c->output_count; o++) {
      mi_array_destroy(outs[o]);
      outs[o] = NULL;
    }
  }
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "equalize: out of memory");
done:
  free(outs);
  free(at);
  mi_graph_destroy(c);
  return rc;
}

/* One data-aware equalization of pair p (act: its current channel ranges, divided by the
 * scales as they are applied; r2 and s: ch scratch entries); returns the largest |log s_c|. */
static double equalize_pair_data(mi_graph_t *g, const eq_pair_t *p, double *act, double *r2, double *s) {
  float *a = g->tensors[g->nodes[p->a].inputs[1]].data, *b = g->tensors[g->nodes[p->b].inputs[1]].data;
  float *bias = (float *)mi__xf_const_f32(g, &g->nodes[p->a], 2);
  double moved = 0.0, amax = 0.0, umax = 0.0;
  b_ranges(p, b, r2);
  /* s[c] first holds the balanced range sqrt(a_c r2_c), 0 for a channel dead in either. */
  for (int64_t c = 0; c < p->ch; c++) {
    amax = fmax(amax, act[c]);
    s[c] = act[c] > 0.0 && r2[c] > 0.0 ? sqrt(act[c] * r2[c]) : 0.0;
    umax = fmax(umax, s[c]);
  }
  for (int64_t c = 0; c < p->ch; c++) {
    double sc = 1.0;
    if (s[c] > 0.0 && umax > 0.0)
      sc = p->icg == 1 ? act[c] / amax : act[c] / (s[c] * amax / umax);
    if (!isfinite(sc) || sc <= 0.0) sc = 1.0;
    s[c] = sc;
    moved = fmax(moved, fabs(log(sc)));
    act[c] /= sc;
    for (int64_t i = 0; i < p->per; i++) a[c * p->per + i] = (float)(a[c * p->per + i] / sc);
    if (bias) bias[c] = (float)(bias[c] / sc);
  }
  for (int64_t o = 0; o < p->oc; o++)
    for (int64_t j = 0; j < p->icg; j++) {
      float *w = b + (o * p->icg + j) * p->k;
      double sc = s[(o / p->ocg) * p->icg + j];
      for (int64_t i = 0; i < p->k; i++) w[i] = (float)(w[i] * sc);
    }
  return moved;
}

int32_t mi__xf_equalize_data(mi_graph_t *g, const mi_xf_samples_t *calib, mi_xf_stats_t *st,
                             mi_error_t *err) {
  eq_pair_t *pairs = NULL;
  double **act = NULL, *r2 = NULL, *s = NULL;
  int64_t most = 1;
  int32_t count = 0, rc = MI_OK;
  if (!g || !calib || calib->sample_count < 1)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "equalize: data-aware equalization needs calibration samples");
  if (!(pairs = calloc((size_t)g->node_count + 1, sizeof *pairs))) goto oom;
  count = find_pairs(g, pairs);
  if (!(act = calloc((size_t)count + 1, sizeof *act))) goto oom;
  for (int32_t i = 0; i < count; i++) {
    most = pairs[i].ch > most ? pairs[i].ch : most;
    if (!(act[i] = calloc((size_t)pairs[i].ch, sizeof(double)))) goto oom;
  }
  if (!(r2 = malloc((size_t)most * sizeof *r2)) || !(s = malloc((size_t)most * sizeof *s))) goto oom;
  if ((rc = measure_pairs(g, calib, pairs, act, count, err)) != MI_OK) goto done;
  if (own_constants(g, pairs, count) != MI_OK) goto oom;
  /* The tensor between a pair is scaled by that pair alone, so act stays exact across rounds. */
  for (int round = 0; round < EQ_ROUNDS; round++) {
    double moved = 0.0;
    for (int32_t i = 0; i < count; i++) moved = fmax(moved, equalize_pair_data(g, &pairs[i], act[i], r2, s));
    if (moved < EQ_SETTLED) break;
  }
  if (st) st->equalized_pairs += count;
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "equalize: out of memory");
done:
  for (int32_t i = 0; act && i < count; i++) free(act[i]);
  free(act);
  free(pairs);
  free(r2);
  free(s);
  return rc;
}

MI_API int32_t mi_xf_equalize(mi_graph_t *g, mi_xf_stats_t *st, mi_error_t *err) {
  eq_pair_t *pairs;
  double *r1 = NULL, *r2 = NULL;
  int64_t most = 1;
  int32_t count, rc;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "equalize: graph is NULL");
  if (!(pairs = calloc((size_t)g->node_count + 1, sizeof *pairs)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "equalize: out of memory");
  count = find_pairs(g, pairs);
  for (int32_t i = 0; i < count; i++) most = pairs[i].ch > most ? pairs[i].ch : most;
  r1 = malloc((size_t)most * sizeof *r1);
  r2 = malloc((size_t)most * sizeof *r2);
  rc = r1 && r2 ? own_constants(g, pairs, count) : MI_ERR_OUT_OF_MEMORY;
  for (int round = 0; rc == MI_OK && round < EQ_ROUNDS; round++) {
    double moved = 0.0;
    for (int32_t i = 0; i < count; i++) moved = fmax(moved, equalize_pair(g, &pairs[i], r1, r2));
    if (moved < EQ_SETTLED) break;
  }
  if (rc == MI_OK && st) st->equalized_pairs += count;
  free(pairs);
  free(r1);
  free(r2);
  if (rc != MI_OK) return mi_errorf(err, rc, "equalize: out of memory");
  return MI_OK;
}
