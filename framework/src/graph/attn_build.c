/* attn_build.c - the standard-op pieces the attention lowerings share (attn_lower.c,
 * mha_lower.c): new tensors, nodes and constants named after the node, the opset-dependent forms
 * of Unsqueeze and ReduceSum, the mask's additive bias from mask_index / key_padding_mask, the
 * causal bias, and the core from the heads to the output (scaled Q K^T, biases, Softmax, times
 * V, back to [B, S, N * hv]). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/graph_internal.h"

/* A free name "<node>/<what>" in nm. */
static void free_name(mi__ab_t *b, const char *what, char *nm, size_t cap) {
  snprintf(nm, cap, "%s/%s", b->name, what);
  for (int k = 1; mi_graph_find_tensor(b->g, nm) >= 0; k++) snprintf(nm, cap, "%s/%s_%d", b->name, what, k);
}

/* A new tensor "<node>/<what>" (a suffix where that is taken); -1 on failure. */
int32_t mi__ab_tensor(mi__ab_t *b, const char *what) {
  char nm[400];
  free_name(b, what, nm, sizeof nm);
  int32_t t = b->ok ? mi_graph_add_tensor(b->g, nm, MI_DTYPE_UNDEFINED, -1, NULL) : -1;
  if (t < 0) b->ok = 0;
  return t;
}

/* Node `type` on inputs `in` into `out` (a new tensor when out < 0); returns its output. */
int32_t mi__ab_op_to(mi__ab_t *b, const char *type, const char *what, int32_t nin, const int32_t *in, int32_t out) {
  if (out < 0) out = mi__ab_tensor(b, what);
  for (int32_t k = 0; k < nin; k++)
    if (in[k] < 0) b->ok = 0;
  if (!b->ok) return -1;
  const char *tn = b->g->tensors[out].name;
  if ((b->last = mi_graph_add_node(b->g, type, tn, nin, in, 1, &out)) < 0) b->ok = 0;
  return b->ok ? out : -1;
}

int32_t mi__ab_op(mi__ab_t *b, const char *type, const char *what, int32_t nin, const int32_t *in) {
  return mi__ab_op_to(b, type, what, nin, in, -1);
}

void mi__ab_attr_int(mi__ab_t *b, const char *name, int64_t v) {
  if (b->ok && mi_node_set_int(b->g, b->last, name, v)) b->ok = 0;
}

void mi__ab_attr_ints(mi__ab_t *b, const char *name, int32_t n, const int64_t *v) {
  if (b->ok && mi_node_set_ints(b->g, b->last, name, n, v)) b->ok = 0;
}

/* A constant of n int64 values: a scalar when rank 0, else [n]. */
int32_t mi__ab_c_i64(mi__ab_t *b, const char *what, int32_t rank, int64_t n, const int64_t *v) {
  char nm[400];
  free_name(b, what, nm, sizeof nm);
  int32_t t = b->ok ? mi_graph_add_tensor(b->g, nm, MI_DTYPE_INT64, rank, &n) : -1;
  if (t < 0 || mi_graph_set_data(b->g, t, v, (size_t)n * sizeof *v)) b->ok = 0;
  return b->ok ? t : -1;
}

int32_t mi__ab_c_f32(mi__ab_t *b, const char *what, int32_t rank, const int64_t *dims, const float *v) {
  char nm[400];
  free_name(b, what, nm, sizeof nm);
  int32_t t = b->ok ? mi_graph_add_const_f32(b->g, nm, rank, dims, v) : -1;
  if (t < 0) b->ok = 0;
  return t;
}

int32_t mi__ab_transpose(mi__ab_t *b, const char *what, int32_t x, const int64_t *perm) {
  int32_t y = mi__ab_op(b, "Transpose", what, 1, &x);
  mi__ab_attr_ints(b, "perm", 4, perm);
  return y;
}

/* Unsqueeze and ReduceSum took their axes as an attribute before opset 13, as an input since. */
int32_t mi__ab_unsqueeze(mi__ab_t *b, const char *what, int32_t x, int32_t n, const int64_t *axes) {
  if (b->opset >= 13) return mi__ab_op(b, "Unsqueeze", what, 2, (int32_t[]){x, mi__ab_c_i64(b, "axes", 1, n, axes)});
  int32_t y = mi__ab_op(b, "Unsqueeze", what, 1, &x);
  mi__ab_attr_ints(b, "axes", n, axes);
  return y;
}

static int32_t reduce_sum0(mi__ab_t *b, const char *what, int32_t x) {
  static const int64_t ax0[1] = {0};
  int32_t y = b->opset >= 13 ? mi__ab_op(b, "ReduceSum", what, 2, (int32_t[]){x, mi__ab_c_i64(b, "axes", 1, 1, ax0)})
                             : mi__ab_op(b, "ReduceSum", what, 1, &x);
  if (b->opset < 13) mi__ab_attr_ints(b, "axes", 1, ax0);
  mi__ab_attr_int(b, "keepdims", 0);
  return y;
}

static int32_t cast_f32(mi__ab_t *b, const char *what, int32_t x) {
  int32_t y = mi__ab_op(b, "Cast", what, 1, &x);
  mi__ab_attr_int(b, "to", MI_DTYPE_FLOAT32);
  return y;
}

/* Dim d of x's runtime shape as an int64 scalar (folded once the session fixes the shapes). */
static int32_t dim_of(mi__ab_t *b, const char *what, int32_t x, int64_t d) {
  int32_t sh = mi__ab_op(b, "Shape", "shape", 1, &x);
  int32_t y = mi__ab_op(b, "Gather", what, 2, (int32_t[]){sh, mi__ab_c_i64(b, "index", 0, 1, &d)});
  mi__ab_attr_int(b, "axis", 0);
  return y;
}

/* Float positions lo .. hi - 1 (int64 scalars). */
static int32_t positions(mi__ab_t *b, const char *what, int32_t lo, int32_t hi) {
  static const int64_t one = 1;
  return cast_f32(b, what, mi__ab_op(b, "Range", "range", 3, (int32_t[]){lo, hi, mi__ab_c_i64(b, "one", 0, 1, &one)}));
}

/* x (bool) as filter where true, else 0. */
static int32_t bias_where(mi__ab_t *b, const char *what, int32_t x, float filter) {
  return mi__ab_op(b, "Mul", what, 2, (int32_t[]){cast_f32(b, "masked", x), mi__ab_c_f32(b, "filter", 0, NULL, &filter)});
}

/* 1 where x `cmp` 0, else 0, as floats: a comparison read by its Cast alone, which devices run
 * as one pass (no bool tensor). */
static int32_t against0(mi__ab_t *b, const char *cmp, const char *what, int32_t x) {
  float zf = 0.f;
  return cast_f32(b, what, mi__ab_op(b, cmp, what, 2, (int32_t[]){x, mi__ab_c_f32(b, "zero", 0, NULL, &zf)}));
}

/* kept (1 keeps a key, 0 masks it) as filter where 0, else 0: (kept - 1) * -filter. */
static int32_t kept_bias(mi__ab_t *b, int32_t kept, float filter) {
  float one = 1.f, nf = -filter;
  int32_t d = mi__ab_op(b, "Sub", "kept_minus1", 2, (int32_t[]){kept, mi__ab_c_f32(b, "one", 0, NULL, &one)});
  return mi__ab_op(b, "Mul", "mask_bias2", 2, (int32_t[]){d, mi__ab_c_f32(b, "neg_filter", 0, NULL, &nf)});
}

/* mask_index's additive bias: [B, 1, 1, T] (1D and 2D forms) or [B, 1, S, T] (3D), in float
 * arithmetic and comparisons with 0 only. k4 holds the keys [B, N, T, h] (for T), q4 the queries
 * [B, N, S, h] (for B). */
static int32_t mask_bias(mi__ab_t *b, const mi__attn_t *p, int32_t mask, int32_t q4, int32_t k4, int32_t *tlen) {
  static const int64_t a1[1] = {1}, a12[2] = {1, 2}, zero = 0, minus1 = -1;
  int32_t mf = cast_f32(b, "mask_float", mask), kept;
  if (p->mask == MI__MASK_SEQLENS) { /* key lengths seqlens_k + 1 */
    float one = 1.f;
    mf = mi__ab_op(b, "Add", "key_lengths", 2, (int32_t[]){mf, mi__ab_c_f32(b, "one", 0, NULL, &one)});
  }
  if (p->mask == MI__MASK_2D || p->mask == MI__MASK_3D) {
    kept = against0(b, "Greater", "kept", mf);
    return mi__ab_unsqueeze(b, "mask_bias", kept_bias(b, kept, p->filter), p->mask == MI__MASK_2D ? 2 : 1,
                            p->mask == MI__MASK_2D ? a12 : a1);
  }
  /* 1D: key positions 0 .. T - 1 against the ends (and starts): kept where j - end < 0 */
  if (*tlen < 0) *tlen = dim_of(b, "total_length", k4, 2);
  int32_t pos = positions(b, "key_pos", mi__ab_c_i64(b, "zero", 0, 1, &zero), *tlen);
  if (p->mask == MI__MASK_LEN || p->mask == MI__MASK_SEQLENS) {
    int32_t d = mi__ab_op(b, "Sub", "from_end", 2, (int32_t[]){pos, mi__ab_unsqueeze(b, "end", mf, 1, a1)});
    kept = against0(b, "Less", "kept", d);
  } else {
    /* [2B] or not known yet: the mask as [R, B] (R = 1 or 2); the ends its row 0, the starts the
     * sum of the rows less the ends (0 where R = 1); kept = before the end * not before the start */
    float one = 1.f;
    int32_t sx = mi__ab_op(b, "Shape", "query_shape", 1, &q4);
    int32_t bdim = mi__ab_op(b, "Gather", "batch", 2, (int32_t[]){sx, mi__ab_c_i64(b, "index", 1, 1, &zero)});
    mi__ab_attr_int(b, "axis", 0);
    int32_t shp = mi__ab_op(b, "Concat", "mask_shape", 2, (int32_t[]){mi__ab_c_i64(b, "minus1", 1, 1, &minus1), bdim});
    mi__ab_attr_int(b, "axis", 0);
    int32_t m2 = mi__ab_op(b, "Reshape", "mask_rows", 2, (int32_t[]){mf, shp});
    int32_t end = mi__ab_op(b, "Gather", "ends", 2, (int32_t[]){m2, mi__ab_c_i64(b, "index", 0, 1, &zero)});
    mi__ab_attr_int(b, "axis", 0);
    int32_t start = mi__ab_op(b, "Sub", "starts", 2, (int32_t[]){reduce_sum0(b, "mask_sum", m2), end});
    int32_t de = mi__ab_op(b, "Sub", "from_end", 2, (int32_t[]){pos, mi__ab_unsqueeze(b, "end", end, 1, a1)});
    int32_t ds = mi__ab_op(b, "Sub", "from_start", 2, (int32_t[]){pos, mi__ab_unsqueeze(b, "start", start, 1, a1)});
    int32_t before_end = against0(b, "Less", "before_end", de), before_start = against0(b, "Less", "before_start", ds);
    int32_t after_start = mi__ab_op(b, "Sub", "after_start", 2, (int32_t[]){mi__ab_c_f32(b, "one", 0, NULL, &one), before_start});
    kept = mi__ab_op(b, "Mul", "kept", 2, (int32_t[]){before_end, after_start});
  }
  return mi__ab_unsqueeze(b, "mask_bias", kept_bias(b, kept, p->filter), 2, a12);
}

/* unidirectional: [S, T] with the lowest float where key j > P + i (P = T - S); shapes only, so
 * folded to a constant at session creation. */
static int32_t causal_bias(mi__ab_t *b, int32_t q4, int32_t k4, int32_t *tlen) {
  static const int64_t a1[1] = {1}, zero = 0;
  if (*tlen < 0) *tlen = dim_of(b, "total_length", k4, 2);
  int32_t slen = dim_of(b, "query_length", q4, 2);
  int32_t off = mi__ab_op(b, "Sub", "past_length", 2, (int32_t[]){*tlen, slen});
  int32_t qpos = mi__ab_unsqueeze(b, "query_pos", positions(b, "query_pos1", off, *tlen), 1, a1);
  int32_t kpos = positions(b, "key_pos", mi__ab_c_i64(b, "zero", 0, 1, &zero), *tlen);
  return bias_where(b, "causal_bias", mi__ab_op(b, "Less", "future", 2, (int32_t[]){qpos, kpos}), MI__ATTN_CAUSAL_BIAS);
}

int32_t mi__ab_core(mi__ab_t *b, const mi__attn_t *p, int32_t q4, int32_t k4, int32_t v4, int32_t mask, int32_t ab,
                    int32_t y) {
  static const int64_t kt_perm[4] = {0, 1, 3, 2}, back_perm[4] = {0, 2, 1, 3};
  int32_t tlen = -1, gqa = p->kv_heads > 0 && p->kv_heads != p->heads, stage[4];
  int64_t to_kv[4] = {0, p->kv_heads, -1, 0}, to_q[4] = {0, p->heads, -1, 0};
  float scale = p->scale, cap = p->softcap, zero = 0.f, ninf = -INFINITY;
  int32_t qs = b->q_scaled >= 0 ? b->q_scaled
                                : mi__ab_op(b, "Mul", "q_scaled", 2, (int32_t[]){q4, mi__ab_c_f32(b, "scale", 0, NULL, &scale)});
  if (gqa) qs = mi__ab_op(b, "Reshape", "q_grouped", 2, (int32_t[]){qs, mi__ab_c_i64(b, "shape", 1, 4, to_kv)});
  int32_t sc = mi__ab_op(b, "MatMul", "scores", 2, (int32_t[]){qs, mi__ab_transpose(b, "k_t", k4, kt_perm)});
  if (gqa) sc = mi__ab_op(b, "Reshape", "scores_heads", 2, (int32_t[]){sc, mi__ab_c_i64(b, "shape", 1, 4, to_q)});
  stage[0] = sc;
  /* ONNX Attention's softcap comes before the masks, and qk_matmul_output_mode 1 is the capped
   * scores, 2 the masked ones (as ONNX Runtime 1.30 computes them) */
  if (cap > 0.f) {
    int32_t cc = mi__ab_c_f32(b, "softcap", 0, NULL, &cap);
    int32_t th = mi__ab_op(b, "Tanh", "softcap_tanh", 1, (int32_t[]){mi__ab_op(b, "Div", "softcap_div", 2, (int32_t[]){sc, cc})});
    sc = mi__ab_op(b, "Mul", "scores_capped", 2, (int32_t[]){th, cc});
  }
  stage[1] = sc;
  if (mask >= 0 && p->mask == MI__MASK_BOOL)
    mask = mi__ab_op(b, "Where", "mask_bias", 3,
                     (int32_t[]){mask, mi__ab_c_f32(b, "zero", 0, NULL, &zero), mi__ab_c_f32(b, "ninf", 0, NULL, &ninf)});
  else if (mask >= 0 && p->mask != MI__MASK_FLOAT)
    mask = mask_bias(b, p, mask, q4, k4, &tlen);
  if (mask >= 0) sc = mi__ab_op(b, "Add", "scores_masked", 2, (int32_t[]){sc, mask});
  if (p->unidir) sc = mi__ab_op(b, "Add", "scores_causal", 2, (int32_t[]){sc, causal_bias(b, q4, k4, &tlen)});
  if (ab >= 0) sc = mi__ab_op(b, "Add", "scores_biased", 2, (int32_t[]){sc, ab});
  stage[2] = sc;
  int32_t pr = mi__ab_op(b, "Softmax", "probs", 1, &sc);
  mi__ab_attr_int(b, "axis", -1);
  stage[3] = pr;
  if (b->qk_out >= 0) mi__ab_op_to(b, "Identity", "qk_output", 1, &stage[p->qk_mode], b->qk_out);
  if (gqa) pr = mi__ab_op(b, "Reshape", "probs_grouped", 2, (int32_t[]){pr, mi__ab_c_i64(b, "shape", 1, 4, to_kv)});
  int32_t ctx = mi__ab_op_to(b, "MatMul", "context", 2, (int32_t[]){pr, v4}, b->out4 && !gqa ? y : -1);
  if (gqa)
    ctx = mi__ab_op_to(b, "Reshape", "context_heads", 2, (int32_t[]){ctx, mi__ab_c_i64(b, "shape", 1, 4, to_q)},
                       b->out4 ? y : -1);
  if (b->out4) return ctx;
  ctx = mi__ab_transpose(b, "context_t", ctx, back_perm);
  int64_t yshape[3] = {0, 0, p->vh};
  return mi__ab_op_to(b, "Reshape", "output", 2, (int32_t[]){ctx, mi__ab_c_i64(b, "out_shape", 1, 3, yshape)}, y);
}

void mi__ab_start(mi__ab_t *b, mi_graph_t *g, const mi_node_t *n) {
  *b = (mi__ab_t){.g = g, .opset = g->opset, .ok = 1, .qk_out = -1, .q_scaled = -1};
  snprintf(b->name, sizeof b->name, "%s", n->name ? n->name : "");
}

int32_t mi__ab_retype(mi_graph_t *g, int32_t i, const char *type, int32_t nin, const int32_t *in, int32_t out) {
  mi_node_t *m = &g->nodes[i];
  char *t = mi__node_own_strings(m) ? NULL : mi__strdup(type);
  int32_t *ins = nin > m->input_count ? realloc(m->inputs, sizeof *ins * (size_t)nin) : m->inputs;
  if (!t || !ins || m->output_count < 1) {
    free(t);
    return -1;
  }
  m->inputs = ins;
  mi__node_become(m, t);
  memcpy(m->inputs, in, sizeof *in * (size_t)nin);
  m->input_count = nin;
  m->outputs[0] = out;
  m->output_count = 1;
  g->tensors[out].producer = i;
  return 0;
}
