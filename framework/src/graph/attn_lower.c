/* attn_lower.c - the loader's lowering of com.microsoft Attention to standard ops, so that every
 * device runs it: the Q, K, V projections as MatMul + Add of the weights' and bias' column
 * blocks, Reshape + Transpose to heads, Mul of Q by the scale, MatMul by K^T (a Transpose of the
 * last two axes: the device reads it through strides, exec/mm_fold.c), Add of the mask's bias
 * (built from mask_index by standard ops; folded at session creation where the mask is a
 * constant), Softmax, MatMul with V, Transpose + Reshape back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn.h"
#include "graph/graph_internal.h"

/* What the new nodes share: the graph, the node's name (prefix of every new name), its opset. */
typedef struct bld {
  mi_graph_t *g;
  char name[256];
  int64_t opset;
  int32_t last; /* the node added last */
  int ok;
  /* the weights and bias (their data, not the tensors: adding tensors moves those) */
  const float *w, *bias;
  int64_t wcols;
} bld_t;

/* A free name "<node>/<what>" in nm. */
static void free_name(bld_t *b, const char *what, char *nm, size_t cap) {
  snprintf(nm, cap, "%s/%s", b->name, what);
  for (int k = 1; mi_graph_find_tensor(b->g, nm) >= 0; k++) snprintf(nm, cap, "%s/%s_%d", b->name, what, k);
}

/* A new tensor "<node>/<what>" (a suffix where that is taken); -1 on failure. */
static int32_t tensor(bld_t *b, const char *what) {
  char nm[400];
  free_name(b, what, nm, sizeof nm);
  int32_t t = b->ok ? mi_graph_add_tensor(b->g, nm, MI_DTYPE_UNDEFINED, -1, NULL) : -1;
  if (t < 0) b->ok = 0;
  return t;
}

/* Node `type` on inputs `in` into `out` (a new tensor when out < 0); returns its output. */
static int32_t op_to(bld_t *b, const char *type, const char *what, int32_t nin, const int32_t *in, int32_t out) {
  if (out < 0) out = tensor(b, what);
  for (int32_t k = 0; k < nin; k++)
    if (in[k] < 0) b->ok = 0;
  if (!b->ok) return -1;
  const char *tn = b->g->tensors[out].name;
  if ((b->last = mi_graph_add_node(b->g, type, tn, nin, in, 1, &out)) < 0) b->ok = 0;
  return b->ok ? out : -1;
}

static int32_t op(bld_t *b, const char *type, const char *what, int32_t nin, const int32_t *in) {
  return op_to(b, type, what, nin, in, -1);
}

static void attr_int(bld_t *b, const char *name, int64_t v) {
  if (b->ok && mi_node_set_int(b->g, b->last, name, v)) b->ok = 0;
}

static void attr_ints(bld_t *b, const char *name, int32_t n, const int64_t *v) {
  if (b->ok && mi_node_set_ints(b->g, b->last, name, n, v)) b->ok = 0;
}

/* A constant of n int64 values: a scalar when rank 0, else [n]. */
static int32_t c_i64(bld_t *b, const char *what, int32_t rank, int64_t n, const int64_t *v) {
  char nm[400];
  free_name(b, what, nm, sizeof nm);
  int32_t t = b->ok ? mi_graph_add_tensor(b->g, nm, MI_DTYPE_INT64, rank, &n) : -1;
  if (t < 0 || mi_graph_set_data(b->g, t, v, (size_t)n * sizeof *v)) b->ok = 0;
  return b->ok ? t : -1;
}

static int32_t c_f32(bld_t *b, const char *what, int32_t rank, const int64_t *dims, const float *v) {
  char nm[400];
  free_name(b, what, nm, sizeof nm);
  int32_t t = b->ok ? mi_graph_add_const_f32(b->g, nm, rank, dims, v) : -1;
  if (t < 0) b->ok = 0;
  return t;
}

static int32_t transpose(bld_t *b, const char *what, int32_t x, const int64_t *perm) {
  int32_t y = op(b, "Transpose", what, 1, &x);
  attr_ints(b, "perm", 4, perm);
  return y;
}

/* Unsqueeze and ReduceSum took their axes as an attribute before opset 13, as an input since. */
static int32_t unsqueeze(bld_t *b, const char *what, int32_t x, int32_t n, const int64_t *axes) {
  if (b->opset >= 13) return op(b, "Unsqueeze", what, 2, (int32_t[]){x, c_i64(b, "axes", 1, n, axes)});
  int32_t y = op(b, "Unsqueeze", what, 1, &x);
  attr_ints(b, "axes", n, axes);
  return y;
}

static int32_t reduce_sum0(bld_t *b, const char *what, int32_t x) {
  static const int64_t ax0[1] = {0};
  int32_t y = b->opset >= 13 ? op(b, "ReduceSum", what, 2, (int32_t[]){x, c_i64(b, "axes", 1, 1, ax0)})
                             : op(b, "ReduceSum", what, 1, &x);
  if (b->opset < 13) attr_ints(b, "axes", 1, ax0);
  attr_int(b, "keepdims", 0);
  return y;
}

static int32_t cast_f32(bld_t *b, const char *what, int32_t x) {
  int32_t y = op(b, "Cast", what, 1, &x);
  attr_int(b, "to", MI_DTYPE_FLOAT32);
  return y;
}

/* Dim d of x's runtime shape as an int64 scalar (folded once the session fixes the shapes). */
static int32_t dim_of(bld_t *b, const char *what, int32_t x, int64_t d) {
  int32_t sh = op(b, "Shape", "shape", 1, &x);
  int32_t y = op(b, "Gather", what, 2, (int32_t[]){sh, c_i64(b, "index", 0, 1, &d)});
  attr_int(b, "axis", 0);
  return y;
}

/* Float positions lo .. hi - 1 (int64 scalars). */
static int32_t positions(bld_t *b, const char *what, int32_t lo, int32_t hi) {
  static const int64_t one = 1;
  return cast_f32(b, what, op(b, "Range", "range", 3, (int32_t[]){lo, hi, c_i64(b, "one", 0, 1, &one)}));
}

/* x (bool) as filter where true, else 0. */
static int32_t bias_where(bld_t *b, const char *what, int32_t x, float filter) {
  return op(b, "Mul", what, 2, (int32_t[]){cast_f32(b, "masked", x), c_f32(b, "filter", 0, NULL, &filter)});
}

/* 1 where x `cmp` 0, else 0, as floats: a comparison read by its Cast alone, which devices run
 * as one pass (no bool tensor). */
static int32_t against0(bld_t *b, const char *cmp, const char *what, int32_t x) {
  float zf = 0.f;
  return cast_f32(b, what, op(b, cmp, what, 2, (int32_t[]){x, c_f32(b, "zero", 0, NULL, &zf)}));
}

/* kept (1 keeps a key, 0 masks it) as filter where 0, else 0: (kept - 1) * -filter. */
static int32_t kept_bias(bld_t *b, int32_t kept, float filter) {
  float one = 1.f, nf = -filter;
  int32_t d = op(b, "Sub", "kept_minus1", 2, (int32_t[]){kept, c_f32(b, "one", 0, NULL, &one)});
  return op(b, "Mul", "mask_bias2", 2, (int32_t[]){d, c_f32(b, "neg_filter", 0, NULL, &nf)});
}

/* mask_index's additive bias: [B, 1, 1, T] (1D and 2D forms) or [B, 1, S, T] (3D), in float
 * arithmetic and comparisons with 0 only. k4 holds the keys [B, N, T, h] (for T), x the input
 * (for B). */
static int32_t mask_bias(bld_t *b, const mi__attn_t *p, int32_t mask, int32_t x, int32_t k4, int32_t *tlen) {
  static const int64_t a1[1] = {1}, a12[2] = {1, 2}, zero = 0, minus1 = -1;
  int32_t mf = cast_f32(b, "mask_float", mask), kept;
  if (p->mask == MI__MASK_2D || p->mask == MI__MASK_3D) {
    kept = against0(b, "Greater", "kept", mf);
    return unsqueeze(b, "mask_bias", kept_bias(b, kept, p->filter), p->mask == MI__MASK_2D ? 2 : 1,
                     p->mask == MI__MASK_2D ? a12 : a1);
  }
  /* 1D: key positions 0 .. T - 1 against the ends (and starts): kept where j - end < 0 */
  if (*tlen < 0) *tlen = dim_of(b, "total_length", k4, 2);
  int32_t pos = positions(b, "key_pos", c_i64(b, "zero", 0, 1, &zero), *tlen);
  if (p->mask == MI__MASK_LEN) {
    int32_t d = op(b, "Sub", "from_end", 2, (int32_t[]){pos, unsqueeze(b, "end", mf, 1, a1)});
    kept = against0(b, "Less", "kept", d);
  } else {
    /* [2B] or not known yet: the mask as [R, B] (R = 1 or 2); the ends its row 0, the starts the
     * sum of the rows less the ends (0 where R = 1); kept = before the end * not before the start */
    float one = 1.f;
    int32_t sx = op(b, "Shape", "input_shape", 1, &x);
    int32_t bdim = op(b, "Gather", "batch", 2, (int32_t[]){sx, c_i64(b, "index", 1, 1, &zero)});
    attr_int(b, "axis", 0);
    int32_t shp = op(b, "Concat", "mask_shape", 2, (int32_t[]){c_i64(b, "minus1", 1, 1, &minus1), bdim});
    attr_int(b, "axis", 0);
    int32_t m2 = op(b, "Reshape", "mask_rows", 2, (int32_t[]){mf, shp});
    int32_t end = op(b, "Gather", "ends", 2, (int32_t[]){m2, c_i64(b, "index", 0, 1, &zero)});
    attr_int(b, "axis", 0);
    int32_t start = op(b, "Sub", "starts", 2, (int32_t[]){reduce_sum0(b, "mask_sum", m2), end});
    int32_t de = op(b, "Sub", "from_end", 2, (int32_t[]){pos, unsqueeze(b, "end", end, 1, a1)});
    int32_t ds = op(b, "Sub", "from_start", 2, (int32_t[]){pos, unsqueeze(b, "start", start, 1, a1)});
    int32_t before_end = against0(b, "Less", "before_end", de), before_start = against0(b, "Less", "before_start", ds);
    int32_t after_start = op(b, "Sub", "after_start", 2, (int32_t[]){c_f32(b, "one", 0, NULL, &one), before_start});
    kept = op(b, "Mul", "kept", 2, (int32_t[]){before_end, after_start});
  }
  return unsqueeze(b, "mask_bias", kept_bias(b, kept, p->filter), 2, a12);
}

/* unidirectional: [S, T] with the lowest float where key j > P + i (P = T - S); shapes only, so
 * folded to a constant at session creation. */
static int32_t causal_bias(bld_t *b, int32_t q4, int32_t k4, int32_t *tlen) {
  static const int64_t a1[1] = {1}, zero = 0;
  if (*tlen < 0) *tlen = dim_of(b, "total_length", k4, 2);
  int32_t slen = dim_of(b, "query_length", q4, 2);
  int32_t off = op(b, "Sub", "past_length", 2, (int32_t[]){*tlen, slen});
  int32_t qpos = unsqueeze(b, "query_pos", positions(b, "query_pos1", off, *tlen), 1, a1);
  int32_t kpos = positions(b, "key_pos", c_i64(b, "zero", 0, 1, &zero), *tlen);
  return bias_where(b, "causal_bias", op(b, "Less", "future", 2, (int32_t[]){qpos, kpos}), MI__ATTN_CAUSAL_BIAS);
}

/* Columns c0 .. c0 + n - 1 of the [rows, cols] constant w (rows 1: of a vector) as a new constant. */
static int32_t columns(bld_t *b, const char *what, const float *w, int64_t rows, int64_t cols, int64_t c0, int64_t n,
                       int32_t rank) {
  float *v = malloc(sizeof *v * (size_t)(rows * n));
  if (!v) {
    b->ok = 0;
    return -1;
  }
  for (int64_t r = 0; r < rows; r++) memcpy(v + r * n, w + r * cols + c0, sizeof *v * (size_t)n);
  int64_t dims[2] = {rank == 2 ? rows : n, n};
  int32_t t = c_f32(b, what, rank, dims, v);
  free(v);
  return t;
}

/* The projection y [B, S, n] (+ the bias' columns c0 .. c0 + n - 1) as heads [B, N, S, n / N]. */
static int32_t to_heads(bld_t *b, const char *what, const mi__attn_t *p, int32_t y, int64_t c0, int64_t n) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  char nm[64];
  int64_t shape[4] = {0, 0, p->heads, n / p->heads};
  if (p->has_bias) {
    snprintf(nm, sizeof nm, "%s_bias", what);
    y = op(b, "Add", nm, 2, (int32_t[]){y, columns(b, nm, b->bias, 1, b->wcols, c0, n, 1)});
  }
  snprintf(nm, sizeof nm, "%s_heads", what);
  y = op(b, "Reshape", nm, 2, (int32_t[]){y, c_i64(b, "shape", 1, 4, shape)});
  return transpose(b, nm, y, perm);
}

/* x [B, S, hidden] times the weights' columns c0 .. c0 + n - 1, as heads. */
static int32_t project(bld_t *b, const char *what, const mi__attn_t *p, int32_t x, int64_t c0, int64_t n) {
  char nm[64];
  snprintf(nm, sizeof nm, "%s_weight", what);
  int32_t w = columns(b, nm, b->w, p->hin, b->wcols, c0, n, 2);
  snprintf(nm, sizeof nm, "%s_matmul", what);
  return to_heads(b, what, p, op(b, "MatMul", nm, 2, (int32_t[]){x, w}), c0, n);
}

/* The past's keys (k = 0) or values (1) [B, N, P, h] before the new ones [B, N, S, h]. */
static int32_t with_past(bld_t *b, const char *what, int32_t past, int64_t k, int32_t x4) {
  int32_t pk = op(b, "Gather", what, 2, (int32_t[]){past, c_i64(b, "index", 0, 1, &k)});
  attr_int(b, "axis", 0);
  int32_t y = op(b, "Concat", what, 2, (int32_t[]){pk, x4});
  attr_int(b, "axis", 2);
  return y;
}

static int32_t lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  static const int64_t kt_perm[4] = {0, 1, 3, 2}, back_perm[4] = {0, 2, 1, 3}, a0[1] = {0};
  mi__in_view_t ins[MI__AT_COUNT];
  mi__attn_t p;
  char why[256];
  bld_t b = {.g = g, .opset = g->opset, .ok = 1};
  const mi_node_t *n = &g->nodes[i];
  snprintf(b.name, sizeof b.name, "%s", n->name ? n->name : "");
  mi__in_views_of_node(g, n, ins, MI__AT_COUNT);
  if (mi__attn_check(n, ins, &p, why, sizeof why))
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (com.microsoft Attention): %s", b.name, why);
  if (!ins[MI__AT_W].data || (p.has_bias && !ins[MI__AT_BIAS].data))
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (com.microsoft Attention): weights and bias must be constants",
                     b.name);
  if ((p.unidir || p.mask == MI__MASK_LEN || p.mask == MI__MASK_LEN_START || p.mask == -MI__MASK_LEN) && g->opset < 11)
    return mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "node '%s' (com.microsoft Attention): a 1D mask_index or unidirectional needs opset >= 11 (Range)",
                     b.name);
  b.w = ins[MI__AT_W].data;
  b.bias = p.has_bias ? ins[MI__AT_BIAS].data : NULL;
  b.wcols = ins[MI__AT_W].dims[1];
  int32_t x = n->inputs[MI__AT_X], y = n->outputs[0];
  int32_t mask = ins[MI__AT_MASK].present ? n->inputs[MI__AT_MASK] : -1;
  int32_t past = p.past ? n->inputs[MI__AT_PAST] : -1, ab = p.abias ? n->inputs[MI__AT_ABIAS] : -1;
  int32_t present = n->output_count > 1 ? n->outputs[1] : -1;
  /* the node becomes Q's MatMul: its weight and output made first */
  int32_t wq = columns(&b, "q_weight", b.w, p.hin, b.wcols, 0, p.qh, 2);
  int32_t qmm = tensor(&b, "q_matmul"), tlen = -1;
  float scale = p.scale;
  int32_t q4 = to_heads(&b, "q", &p, qmm, 0, p.qh);
  q4 = op(&b, "Mul", "q_scaled", 2, (int32_t[]){q4, c_f32(&b, "scale", 0, NULL, &scale)});
  int32_t k4 = project(&b, "k", &p, x, p.qh, p.kh), v4 = project(&b, "v", &p, x, p.qh + p.kh, p.vh);
  if (past >= 0) {
    k4 = with_past(&b, "k_all", past, 0, k4);
    v4 = with_past(&b, "v_all", past, 1, v4);
  }
  if (present >= 0) {
    op_to(&b, "Concat", "present", 2,
          (int32_t[]){unsqueeze(&b, "present_k", k4, 1, a0), unsqueeze(&b, "present_v", v4, 1, a0)}, present);
    attr_int(&b, "axis", 0);
  }
  int32_t sc = op(&b, "MatMul", "scores", 2, (int32_t[]){q4, transpose(&b, "k_t", k4, kt_perm)});
  if (mask >= 0) sc = op(&b, "Add", "scores_masked", 2, (int32_t[]){sc, mask_bias(&b, &p, mask, x, k4, &tlen)});
  if (p.unidir) sc = op(&b, "Add", "scores_causal", 2, (int32_t[]){sc, causal_bias(&b, q4, k4, &tlen)});
  if (ab >= 0) sc = op(&b, "Add", "scores_biased", 2, (int32_t[]){sc, ab});
  int32_t pr = op(&b, "Softmax", "probs", 1, &sc);
  attr_int(&b, "axis", -1);
  int32_t ctx = transpose(&b, "context_t", op(&b, "MatMul", "context", 2, (int32_t[]){pr, v4}), back_perm);
  int64_t yshape[3] = {0, 0, p.vh};
  op_to(&b, "Reshape", "output", 2, (int32_t[]){ctx, c_i64(&b, "out_shape", 1, 3, yshape)}, y);
  if (!b.ok) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  mi_node_t *m = &g->nodes[i]; /* after the adds: the node array may have moved */
  char *type = mi__node_own_strings(m) ? NULL : mi__strdup("MatMul");
  if (!type) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  free(m->op_type);
  m->op_type = type;
  free(m->domain);
  m->domain = NULL;
  for (int32_t k = 0; k < m->attr_count; k++) mi__attr_release(&m->attrs[k]);
  free(m->attrs);
  m->attrs = NULL;
  m->attr_count = 0;
  m->inputs[0] = x;
  m->inputs[1] = wq;
  m->input_count = 2;
  m->outputs[0] = qmm;
  m->output_count = 1;
  g->tensors[qmm].producer = i;
  return MI_OK;
}

static int is_attn(const mi_node_t *n) {
  return n->domain && !strcmp(n->domain, "com.microsoft") && !strcmp(n->op_type, "Attention");
}

int mi__graph_has_attn(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (is_attn(&g->nodes[i])) return 1;
  return 0;
}

int32_t mi__graph_lower_attn(mi_graph_t *g, const char *label, mi_error_t *err) {
  mi_error_t e = {0};
  int32_t rc = MI_OK, count = g->node_count;
  for (int32_t i = 0; i < count && rc == MI_OK; i++)
    if (is_attn(&g->nodes[i])) rc = lower_one(g, i, &e);
  if (rc == MI_OK) rc = mi_graph_toposort(g, &e);
  if (rc == MI_OK) {
    /* no node dropped: only the weights no node reads any more */
    uint8_t *keep = calloc((size_t)g->node_count + 1, 1);
    rc = keep ? mi_graph_remove_nodes(g, keep, &e) : mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "out of memory");
    free(keep);
  }
  return rc == MI_OK ? MI_OK : mi_errorf(err, rc, "%s: %s", label, e.message);
}
