/* attn_lower.c - the loader's lowering of com.microsoft Attention to standard ops, so that every
 * device runs it: the Q, K, V projections as MatMul + Add of the weights' and bias' column
 * blocks, Reshape + Transpose to heads, then the shared core (attn_build.c): Mul of Q by the
 * scale, MatMul by K^T (a Transpose of the last two axes: the device reads it through strides,
 * exec/mm_fold.c), Add of the mask's bias (built from mask_index by standard ops; folded at
 * session creation where the mask is a constant), Softmax, MatMul with V, Transpose + Reshape
 * back. MultiHeadAttention: mha_lower.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/attn_build.h"
#include "graph/graph_internal.h"
#include "graph/rotary.h"

/* Columns c0 .. c0 + n - 1 of the [rows, cols] constant w (rows 1: of a vector) as a new constant. */
static int32_t columns(mi__ab_t *b, const char *what, const float *w, int64_t rows, int64_t cols, int64_t c0, int64_t n,
                       int32_t rank) {
  float *v = malloc(sizeof *v * (size_t)(rows * n));
  if (!v) {
    b->ok = 0;
    return -1;
  }
  for (int64_t r = 0; r < rows; r++) memcpy(v + r * n, w + r * cols + c0, sizeof *v * (size_t)n);
  int64_t dims[2] = {rank == 2 ? rows : n, n};
  int32_t t = mi__ab_c_f32(b, what, rank, dims, v);
  free(v);
  return t;
}

/* The projection y [B, S, n] (+ the bias' columns c0 .. c0 + n - 1) as heads [B, N, S, n / N]. */
static int32_t to_heads(mi__ab_t *b, const char *what, const mi__attn_t *p, int32_t y, int64_t c0, int64_t n) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  char nm[64];
  int64_t shape[4] = {0, 0, p->heads, n / p->heads};
  if (p->has_bias) {
    snprintf(nm, sizeof nm, "%s_bias", what);
    y = mi__ab_op(b, "Add", nm, 2, (int32_t[]){y, columns(b, nm, b->bias, 1, b->wcols, c0, n, 1)});
  }
  snprintf(nm, sizeof nm, "%s_heads", what);
  y = mi__ab_op(b, "Reshape", nm, 2, (int32_t[]){y, mi__ab_c_i64(b, "shape", 1, 4, shape)});
  return mi__ab_transpose(b, nm, y, perm);
}

/* x [B, S, hidden] times the weights' columns c0 .. c0 + n - 1, as heads. */
static int32_t project(mi__ab_t *b, const char *what, const mi__attn_t *p, int32_t x, int64_t c0, int64_t n) {
  char nm[64];
  snprintf(nm, sizeof nm, "%s_weight", what);
  int32_t w = columns(b, nm, b->w, p->hin, b->wcols, c0, n, 2);
  snprintf(nm, sizeof nm, "%s_matmul", what);
  return to_heads(b, what, p, mi__ab_op(b, "MatMul", nm, 2, (int32_t[]){x, w}), c0, n);
}

/* The past's keys (k = 0) or values (1) [B, N, P, h] before the new ones [B, N, S, h]. */
static int32_t with_past(mi__ab_t *b, const char *what, int32_t past, int64_t k, int32_t x4) {
  int32_t pk = mi__ab_op(b, "Gather", what, 2, (int32_t[]){past, mi__ab_c_i64(b, "index", 0, 1, &k)});
  mi__ab_attr_int(b, "axis", 0);
  int32_t y = mi__ab_op(b, "Concat", what, 2, (int32_t[]){pk, x4});
  mi__ab_attr_int(b, "axis", 2);
  return y;
}

static int32_t lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  static const int64_t a0[1] = {0};
  mi__in_view_t ins[MI__AT_COUNT];
  mi__attn_t p;
  char why[256];
  mi__ab_t b;
  const mi_node_t *n = &g->nodes[i];
  mi__ab_start(&b, g, n);
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
  int32_t qmm = mi__ab_tensor(&b, "q_matmul"), q4 = to_heads(&b, "q", &p, qmm, 0, p.qh);
  int32_t k4 = project(&b, "k", &p, x, p.qh, p.kh), v4 = project(&b, "v", &p, x, p.qh + p.kh, p.vh);
  if (past >= 0) {
    k4 = with_past(&b, "k_all", past, 0, k4);
    v4 = with_past(&b, "v_all", past, 1, v4);
  }
  if (present >= 0) {
    mi__ab_op_to(&b, "Concat", "present", 2,
                 (int32_t[]){mi__ab_unsqueeze(&b, "present_k", k4, 1, a0), mi__ab_unsqueeze(&b, "present_v", v4, 1, a0)}, present);
    mi__ab_attr_int(&b, "axis", 0);
  }
  mi__ab_core(&b, &p, q4, k4, v4, mask, ab, y);
  if (!b.ok || mi__ab_retype(g, i, "MatMul", 2, (int32_t[]){x, wq}, qmm))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  return MI_OK;
}

/* 1 for com.microsoft Attention, 2 for MultiHeadAttention, 3 for ONNX Attention, 4 for
 * RotaryEmbedding (either domain), 5 for GroupQueryAttention, else 0. */
static int is_attn(const mi_node_t *n) {
  if (!strcmp(n->op_type, "RotaryEmbedding") &&
      (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx") || !strcmp(n->domain, "com.microsoft")))
    return 4;
  if (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx")) return !strcmp(n->op_type, "Attention") ? 3 : 0;
  if (strcmp(n->domain, "com.microsoft")) return 0;
  if (!strcmp(n->op_type, "GroupQueryAttention")) return 5;
  return !strcmp(n->op_type, "Attention") ? 1 : !strcmp(n->op_type, "MultiHeadAttention") ? 2
                                                                                          : 0;
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
    switch (is_attn(&g->nodes[i])) {
    case 1: rc = lower_one(g, i, &e); break;
    case 2: rc = mi__mha_lower_one(g, i, &e); break;
    case 3: rc = mi__onnx_attn_lower_one(g, i, &e); break;
    case 4: rc = mi__rot_lower_one(g, i, &e); break;
    case 5: rc = mi__gqa_lower_one(g, i, &e); break;
    default: break;
    }
  if (rc == MI_OK) rc = mi_graph_toposort(g, &e);
  if (rc == MI_OK) rc = mi__graph_drop_unread(g, &e); /* the weights no node reads any more */
  return rc == MI_OK ? MI_OK : mi_errorf(err, rc, "%s: %s", label, e.message);
}
