/* ms_fuse_lower.c - ONNX Runtime's transformer-optimizer fused ops lowered right after import to
 * standard ops every device already runs: SkipLayerNormalization -> Add (+ Add bias) ->
 * LayerNormalization, Skip/SimplifiedLayerNormalization -> (Adds) -> RMSNormalization, FastGelu
 * and BiasGelu -> (Add) -> Gelu (tanh / erf), com.microsoft Gelu -> Gelu, QuickGelu and Swish ->
 * (Mul alpha) -> Sigmoid -> Mul, BiasAdd -> Add -> Add, EmbedLayerNormalization -> Gathers -> Adds
 * -> LayerNormalization (its mask_index: Equal 1 -> Cast -> ReduceSum), FusedMatMul -> (Transpose)
 * -> (Mul alpha on B) -> MatMul, once the operands' ranks are known (else the session lowers it
 * after shape inference). Node i becomes the chain's last op, so a
 * model's node keeps its index and name in profiles; the new ones are appended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/ms_fuse.h"

static const struct {
  const char *op;
  int kind;
} k_ms[] = {
    {"SkipLayerNormalization", MI__MSF_SKIP_LN},
    {"SkipSimplifiedLayerNormalization", MI__MSF_SKIP_SLN},
    {"FastGelu", MI__MSF_FAST_GELU},
    {"BiasGelu", MI__MSF_BIAS_GELU},
    {"Gelu", MI__MSF_GELU},
    {"QuickGelu", MI__MSF_QUICK_GELU},
    {"BiasAdd", MI__MSF_BIAS_ADD},
    {"EmbedLayerNormalization", MI__MSF_EMBED_LN},
    {"FusedMatMul", MI__MSF_FUSED_MM},
    {"TransposeMatMul", MI__MSF_FUSED_MM}, /* its older name, kept by ONNX Runtime */
};

int mi__msf_kind(const mi_node_t *n) {
  if (!n->op_type) return MI__MSF_NONE;
  if (n->domain && !strcmp(n->domain, "com.microsoft")) {
    for (size_t k = 0; k < sizeof k_ms / sizeof k_ms[0]; k++)
      if (!strcmp(k_ms[k].op, n->op_type)) return k_ms[k].kind;
    return MI__MSF_NONE;
  }
  if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx")) return MI__MSF_NONE;
  if (!strcmp(n->op_type, "SimplifiedLayerNormalization")) return MI__MSF_SLN;
  if (!strcmp(n->op_type, "Swish")) return MI__MSF_SWISH;
  return MI__MSF_NONE;
}

int mi__graph_has_msfuse(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (mi__msf_kind(&g->nodes[i]) != MI__MSF_NONE) return 1;
  return 0;
}

int mi__msf_skip_shapes(int32_t xr, const int64_t *xd, int32_t sr, const int64_t *sd, const int32_t *gbb_rank,
                        const int64_t *gbb_dim0, char *why, size_t cap) {
  static const char *const names[3] = {"gamma", "beta", "bias"};
  if (xr >= 0 && xr != 2 && xr != 3) return mi__why(why, cap, "input has rank %d (2 or 3 is supported)", (int)xr);
  if (sr >= 0 && sr != 2 && sr != 3) return mi__why(why, cap, "skip has rank %d (2 or 3 is supported)", (int)sr);
  int64_t h = xr > 0 ? xd[xr - 1] : -1;
  if (xr >= 0 && sr >= 0) {
    for (int32_t k = 1; k <= 2; k++)
      if (xd[xr - k] >= 0 && sd[sr - k] >= 0 && xd[xr - k] != sd[sr - k])
        return mi__why(why, cap, "skip's dim %d is %lld, the input's last two dims must match", (int)(sr - k),
                       (long long)sd[sr - k]);
    if (sr == 3 && xr == 2) return mi__why(why, cap, "skip has rank 3, the input rank 2");
    if (sr == 3 && sd[0] >= 0 && sd[0] != 1 && xd[0] >= 0 && sd[0] != xd[0])
      return mi__why(why, cap, "skip's batch is %lld, the input's %lld (1 or equal)", (long long)sd[0],
                     (long long)xd[0]);
  }
  for (int k = 0; k < 3; k++) {
    if (gbb_rank[k] == -2) continue;
    if (gbb_rank[k] >= 0 && gbb_rank[k] != 1)
      return mi__why(why, cap, "%s has rank %d, it must be 1-D [hidden]", names[k], (int)gbb_rank[k]);
    if (gbb_rank[k] == 1 && h >= 0 && gbb_dim0[k] >= 0 && gbb_dim0[k] != h)
      return mi__why(why, cap, "%s has %lld values, the hidden size is %lld", names[k], (long long)gbb_dim0[k],
                     (long long)h);
  }
  return 0;
}

typedef struct low {
  mi_graph_t *g;
  int32_t i;
  char name[400];
  int32_t dt; /* the input's dtype: the intermediates' */
  mi_error_t *err;
} low_t;

static int32_t in_at(const mi_node_t *n, int32_t k) { return k < n->input_count ? n->inputs[k] : -1; }
static int32_t out_at(const mi_node_t *n, int32_t k) { return k < n->output_count ? n->outputs[k] : -1; }

/* 1 when tensor t is a graph output or read by a node: an output the model asks for. */
static int used(const mi_graph_t *g, int32_t t) {
  if (t < 0) return 0;
  for (int32_t k = 0; k < g->output_count; k++)
    if (g->outputs[k] == t) return 1;
  for (int32_t j = 0; j < g->node_count; j++)
    for (int32_t k = 0; k < g->nodes[j].input_count; k++)
      if (g->nodes[j].inputs[k] == t) return 1;
  return 0;
}

static int32_t oom(low_t *l) { return mi_errorf(l->err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", l->name); }

/* A new intermediate "<node>/<what>" of dtype dt and unknown shape. */
static int32_t tmp_dt(low_t *l, const char *what, int32_t dt) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s/%s", l->name, what);
  for (int k = 1; mi_graph_find_tensor(l->g, nm) >= 0; k++) snprintf(nm, sizeof nm, "%s/%s_%d", l->name, what, k);
  return mi_graph_add_tensor(l->g, nm, dt, -1, NULL);
}

/* A new intermediate "<node>/<what>" of unknown shape. */
static int32_t tmp(low_t *l, const char *what) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s/%s", l->name, what);
  for (int k = 1; mi_graph_find_tensor(l->g, nm) >= 0; k++) snprintf(nm, sizeof nm, "%s/%s_%d", l->name, what, k);
  return mi_graph_add_tensor(l->g, nm, l->dt, -1, NULL);
}

/* A new node "<node>/<what>" of one output; -1 when out of memory. */
static int32_t add(low_t *l, const char *op, const char *what, int32_t nin, const int32_t *ins, int32_t out) {
  char nm[512];
  if (out < 0) return -1;
  snprintf(nm, sizeof nm, "%s/%s", l->name, what);
  return mi_graph_add_node(l->g, op, nm, nin, ins, 1, &out);
}

/* Node i becomes op (default domain, no attributes) with the given inputs and outputs. */
static int32_t retype(low_t *l, const char *op, int32_t nin, const int32_t *ins, int32_t nout, const int32_t *outs) {
  mi_node_t *m = &l->g->nodes[l->i];
  if (mi__node_own_strings(m)) return oom(l);
  char *o = mi__strdup(op);
  int32_t *ni = malloc((size_t)nin * sizeof *ni), *no = malloc((size_t)nout * sizeof *no);
  if (!o || !ni || !no) {
    free(o), free(ni), free(no);
    return oom(l);
  }
  for (int32_t k = 0; k < m->output_count; k++) /* outputs it no longer writes: unproduced */
    if (m->outputs[k] >= 0 && l->g->tensors[m->outputs[k]].producer == l->i) l->g->tensors[m->outputs[k]].producer = -1;
  mi__node_become(m, o);
  memcpy(ni, ins, (size_t)nin * sizeof *ni);
  memcpy(no, outs, (size_t)nout * sizeof *no);
  free(m->inputs);
  free(m->outputs);
  m->inputs = ni;
  m->input_count = nin;
  m->outputs = no;
  m->output_count = nout;
  for (int32_t k = 0; k < nout; k++) l->g->tensors[no[k]].producer = l->i;
  return MI_OK;
}

static int32_t fail(low_t *l, const char *op, const char *why) {
  return mi_errorf(l->err, MI_ERR_UNSUPPORTED, "node '%s' (%s): %s", l->name, op, why);
}

static void shape_of(const mi_graph_t *g, int32_t t, int32_t *r, const int64_t **d) {
  static const int64_t none[1] = {-1};
  *r = t >= 0 ? g->tensors[t].rank : -2;
  *d = t >= 0 ? g->tensors[t].dims : none;
}

/* Skip(Simplified)LayerNormalization: sum = input + skip (+ bias), then the norm of the sum. */
static int32_t lower_skip(low_t *l, int simplified) {
  const mi_node_t *n = &l->g->nodes[l->i];
  const char *op = simplified ? "com.microsoft SkipSimplifiedLayerNormalization" : "com.microsoft SkipLayerNormalization";
  int32_t x = in_at(n, 0), skip = in_at(n, 1), gamma = in_at(n, 2), beta = simplified ? -1 : in_at(n, 3),
          bias = in_at(n, simplified ? 3 : 4);
  char why[256];
  if (x < 0 || skip < 0 || gamma < 0) return fail(l, op, "inputs input, skip and gamma are required");
  if (n->input_count > (simplified ? 4 : 5) || n->output_count > 4)
    return fail(l, op, simplified ? "takes at most 4 inputs and 4 outputs" : "takes at most 5 inputs and 4 outputs");
  if (out_at(n, 0) < 0) return fail(l, op, "output 0 is required");
  int32_t xr, sr, gr[3];
  const int64_t *xd, *sd, *gd[3];
  int64_t g0[3];
  shape_of(l->g, x, &xr, &xd);
  shape_of(l->g, skip, &sr, &sd);
  int32_t gbb[3] = {gamma, beta, bias};
  for (int k = 0; k < 3; k++) {
    shape_of(l->g, gbb[k], &gr[k], &gd[k]);
    g0[k] = gr[k] >= 1 ? gd[k][0] : -1;
  }
  if (mi__msf_skip_shapes(xr, xd, sr, sd, gr, g0, why, sizeof why)) return fail(l, op, why);
  float eps = mi_node_attr_float(n, "epsilon", MI__MSF_SKIP_EPS);
  if (!(eps >= 0)) return fail(l, op, "epsilon must be >= 0");
  int32_t y = out_at(n, 0), mean = out_at(n, 1), inv = out_at(n, 2), sum = out_at(n, 3);
  int nout = used(l->g, inv) ? 3 : used(l->g, mean) ? 2
                                                    : 1;
  if (simplified && nout > 1)
    return fail(l, op, "outputs mean and inv_std_var are not supported (ONNX Runtime's CPU kernel writes neither)");
  /* (input + bias) + skip: the order a MatMul producing the input takes both Adds into its tiles
   * in (bias, then residual); ONNX Runtime adds the skip first, a rounding apart */
  int32_t s = x;
  if (bias >= 0) {
    s = tmp(l, "biased");
    if (add(l, "Add", "bias_add", 2, (int32_t[]){x, bias}, s) < 0) return oom(l);
  }
  int32_t s2 = sum >= 0 ? sum : tmp(l, "skip_sum");
  if (add(l, "Add", "skip_add", 2, (int32_t[]){s, skip}, s2) < 0) return oom(l);
  s = s2;
  int32_t rc = simplified ? retype(l, "RMSNormalization", 2, (int32_t[]){s, gamma}, 1, &y)
                          : retype(l, "LayerNormalization", beta >= 0 ? 3 : 2, (int32_t[]){s, gamma, beta}, nout,
                                   (int32_t[]){y, mean, inv});
  if (rc || mi_node_set_int(l->g, l->i, "axis", -1) || mi_node_set_float(l->g, l->i, "epsilon", eps)) return oom(l);
  return MI_OK;
}

/* FastGelu (tanh), BiasGelu and Gelu (erf): (Add bias) -> Gelu. */
static int32_t lower_gelu(low_t *l, int kind) {
  const mi_node_t *n = &l->g->nodes[l->i];
  const char *op = kind == MI__MSF_FAST_GELU   ? "com.microsoft FastGelu"
                   : kind == MI__MSF_BIAS_GELU ? "com.microsoft BiasGelu"
                                               : "com.microsoft Gelu";
  int32_t x = in_at(n, 0), bias = kind == MI__MSF_GELU ? -1 : in_at(n, 1), y = out_at(n, 0);
  if (x < 0 || y < 0) return fail(l, op, "input 0 and output 0 are required");
  if (kind == MI__MSF_BIAS_GELU && bias < 0) return fail(l, op, "inputs A and B are required");
  if (n->input_count > (kind == MI__MSF_GELU ? 1 : 2) || n->output_count > 1)
    return fail(l, op, kind == MI__MSF_GELU ? "takes one input and one output" : "takes at most 2 inputs and one output");
  if (bias >= 0) {
    const mi_tensor_t *b = &l->g->tensors[bias], *a = &l->g->tensors[x];
    /* ONNX Runtime's kernels take a 1-D bias over the last dim */
    if (b->rank >= 0 && b->rank != 1) return fail(l, op, "the bias must be 1-D [hidden]");
    if (b->rank == 1 && a->rank > 0 && b->dims[0] >= 0 && a->dims[a->rank - 1] >= 0 && b->dims[0] != a->dims[a->rank - 1])
      return fail(l, op, "the bias's length is not the input's last dim");
    int32_t t = tmp(l, "biased");
    if (add(l, "Add", "bias_add", 2, (int32_t[]){x, bias}, t) < 0) return oom(l);
    x = t;
  }
  if (retype(l, "Gelu", 1, &x, 1, &y)) return oom(l);
  if (kind == MI__MSF_FAST_GELU && mi_node_set_string(l->g, l->i, "approximate", "tanh")) return oom(l);
  return MI_OK;
}

/* QuickGelu and Swish: x * sigmoid(alpha * x). */
static int32_t lower_swish(low_t *l, int kind) {
  const mi_node_t *n = &l->g->nodes[l->i];
  const char *op = kind == MI__MSF_SWISH ? "Swish" : "com.microsoft QuickGelu";
  int32_t x = in_at(n, 0), y = out_at(n, 0);
  if (x < 0 || y < 0 || n->input_count > 1 || n->output_count > 1) return fail(l, op, "takes one input and one output");
  if (kind == MI__MSF_SWISH && l->g->opset < 24) return fail(l, op, "the op exists from opset 24 on");
  float alpha = mi_node_attr_float(n, "alpha", kind == MI__MSF_SWISH ? 1.0f : MI__MSF_QUICK_ALPHA);
  int32_t s = tmp(l, "sigmoid"), z = x;
  if (alpha != 1.0f) {
    if (l->dt != MI_DTYPE_FLOAT32 && l->dt != MI_DTYPE_UNDEFINED)
      return fail(l, op, "alpha != 1 is supported on FLOAT32 input only");
    char nm[512];
    snprintf(nm, sizeof nm, "%s/alpha", l->name);
    int32_t ca = mi_graph_add_const_f32(l->g, nm, 0, NULL, &alpha);
    z = tmp(l, "scaled");
    if (ca < 0 || add(l, "Mul", "scale", 2, (int32_t[]){x, ca}, z) < 0) return oom(l);
  }
  if (add(l, "Sigmoid", "sigmoid", 1, &z, s) < 0 || retype(l, "Mul", 2, (int32_t[]){x, s}, 1, &y)) return oom(l);
  return MI_OK;
}

/* A new constant "<node>/<what>" of dtype dt (INT32 or INT64), 1-D of n values (rank 0 when n is 0:
 * one value). */
static int32_t const_int(low_t *l, const char *what, int32_t dt, int64_t n, const int64_t *v) {
  char nm[512];
  int32_t w[8];
  int64_t d[1] = {n};
  snprintf(nm, sizeof nm, "%s/%s", l->name, what);
  for (int k = 1; mi_graph_find_tensor(l->g, nm) >= 0; k++) snprintf(nm, sizeof nm, "%s/%s_%d", l->name, what, k);
  int32_t t = mi_graph_add_tensor(l->g, nm, dt, n ? 1 : 0, d);
  int64_t cnt = n ? n : 1;
  for (int64_t k = 0; k < cnt && k < 8; k++) w[k] = (int32_t)v[k];
  if (t >= 0 && mi_graph_set_data(l->g, t, dt == MI_DTYPE_INT32 ? (const void *)w : (const void *)v,
                                  (size_t)cnt * (dt == MI_DTYPE_INT32 ? 4 : 8)))
    return -1;
  return t;
}

/* The [S, H] rows of the position embedding for positions 0..S-1: a constant cut now when S and
 * the table are known, else Shape -> Slice -> Slice. */
static int32_t position_rows(low_t *l, const char *op, int32_t ids, int32_t pe) {
  const mi_tensor_t *it = &l->g->tensors[ids], *pt = &l->g->tensors[pe];
  if (it->rank == 2 && it->dims[1] >= 0 && pt->data && pt->rank == 2 && pt->dtype == MI_DTYPE_FLOAT32) {
    if (it->dims[1] > pt->dims[0]) {
      char why[160];
      snprintf(why, sizeof why, "sequence length %lld exceeds position_embedding's %lld rows", (long long)it->dims[1],
               (long long)pt->dims[0]);
      return fail(l, op, why), -2;
    }
    char nm[512];
    int64_t d[2] = {it->dims[1], pt->dims[1]};
    snprintf(nm, sizeof nm, "%s/position_rows", l->name);
    return mi_graph_add_const_f32(l->g, nm, 2, d, (const float *)pt->data);
  }
  if (l->g->opset < 10) return fail(l, op, "a dynamic sequence length needs opset >= 10 (Slice with inputs)"), -2;
  int64_t one = 1, two = 2, zero = 0;
  int32_t sh = tmp_dt(l, "ids_shape", MI_DTYPE_INT64), seq = tmp_dt(l, "seq_len", MI_DTYPE_INT64), rows = tmp(l, "position_rows");
  int32_t c1 = const_int(l, "one", MI_DTYPE_INT64, 1, &one), c2 = const_int(l, "two", MI_DTYPE_INT64, 1, &two),
          c0 = const_int(l, "zero", MI_DTYPE_INT64, 1, &zero);
  if (add(l, "Shape", "ids_shape", 1, &ids, sh) < 0 || add(l, "Slice", "seq_len", 4, (int32_t[]){sh, c1, c2, c0}, seq) < 0 ||
      add(l, "Slice", "position_rows", 4, (int32_t[]){pe, c0, seq, c0}, rows) < 0)
    return -1;
  return rows;
}

/* mask_index: per batch row the count of mask values equal to 1 (ONNX Runtime's CPU kernel), or
 * zeros without a mask (ids * 0 summed). */
static int32_t mask_index(low_t *l, int32_t ids, int32_t mask, int32_t out) {
  int64_t one = 1, zero = 0;
  int32_t src = tmp_dt(l, "mask_ones", MI_DTYPE_INT32);
  if (mask >= 0) {
    int32_t eq = tmp_dt(l, "mask_eq", MI_DTYPE_BOOL), c1 = const_int(l, "mask_one", MI_DTYPE_INT32, 0, &one);
    int32_t e = add(l, "Equal", "mask_eq", 2, (int32_t[]){mask, c1}, eq), k = e < 0 ? -1 : add(l, "Cast", "mask_cast", 1, &eq, src);
    if (k < 0 || mi_node_set_int(l->g, k, "to", MI_DTYPE_INT32)) return -1;
  } else {
    int32_t c0 = const_int(l, "mask_zero", MI_DTYPE_INT32, 0, &zero);
    if (add(l, "Mul", "mask_zeros", 2, (int32_t[]){ids, c0}, src) < 0) return -1;
  }
  int32_t r;
  if (l->g->opset >= 13) {
    int32_t ax = const_int(l, "mask_axis", MI_DTYPE_INT64, 1, &one);
    r = add(l, "ReduceSum", "mask_index", 2, (int32_t[]){src, ax}, out);
  } else {
    r = add(l, "ReduceSum", "mask_index", 1, &src, out);
    if (r >= 0 && mi_node_set_ints(l->g, r, "axes", 1, &one)) return -1;
  }
  return r < 0 || mi_node_set_int(l->g, r, "keepdims", 0) ? -1 : 0;
}

static int int32_or_unknown(const mi_graph_t *g, int32_t t) {
  return t < 0 || g->tensors[t].dtype == MI_DTYPE_INT32 || g->tensors[t].dtype == MI_DTYPE_UNDEFINED;
}

/* EmbedLayerNormalization: Gather(word, ids) + position rows (+ Gather(segment, segment_ids)), the
 * sum (embedding_sum) -> LayerNormalization; mask_index when asked for. */
static int32_t lower_embed(low_t *l) {
  const mi_node_t *n = &l->g->nodes[l->i];
  const char *op = "com.microsoft EmbedLayerNormalization";
  int32_t ids = in_at(n, MI__EMB_IDS), seg = in_at(n, MI__EMB_SEG), we = in_at(n, MI__EMB_WORD), pe = in_at(n, MI__EMB_POS),
          se = in_at(n, MI__EMB_SEGE), gamma = in_at(n, MI__EMB_GAMMA), beta = in_at(n, MI__EMB_BETA),
          mask = in_at(n, MI__EMB_MASK), pos = in_at(n, MI__EMB_POS_IDS);
  int32_t y = out_at(n, 0), mi = out_at(n, 1), sum = out_at(n, 2);
  char why[200];
  if (ids < 0 || we < 0 || pe < 0 || gamma < 0 || beta < 0 || y < 0)
    return fail(l, op, "inputs input_ids, word_embedding, position_embedding, gamma, beta and output 0 are required");
  if ((seg < 0) != (se < 0)) return fail(l, op, "segment_ids and segment_embedding go together");
  if (n->input_count > 9 || n->output_count > 3) return fail(l, op, "takes at most 9 inputs and 3 outputs");
  if (!int32_or_unknown(l->g, ids) || !int32_or_unknown(l->g, seg) || !int32_or_unknown(l->g, mask) ||
      !int32_or_unknown(l->g, pos))
    return fail(l, op, "input_ids, segment_ids, mask and position_ids must be INT32");
  const mi_tensor_t *it = &l->g->tensors[ids], *wt = &l->g->tensors[we];
  if (it->rank >= 0 && it->rank != 2) return fail(l, op, "input_ids must be 2-D [batch, sequence]");
  int64_t h = wt->rank == 2 ? wt->dims[1] : -1;
  if (wt->rank >= 0 && wt->rank != 2) return fail(l, op, "word_embedding must be 2-D");
  const int32_t tabs[2] = {pe, se}, vecs[2] = {gamma, beta};
  static const char *const tn[2] = {"position_embedding", "segment_embedding"}, *const vn[2] = {"gamma", "beta"};
  for (int k = 0; k < 2; k++) {
    const mi_tensor_t *t = tabs[k] >= 0 ? &l->g->tensors[tabs[k]] : NULL, *v = &l->g->tensors[vecs[k]];
    if (t && t->rank >= 0 && (t->rank != 2 || (h >= 0 && t->dims[1] >= 0 && t->dims[1] != h))) {
      snprintf(why, sizeof why, "%s must be 2-D with the word embedding's width %lld", tn[k], (long long)h);
      return fail(l, op, why);
    }
    if (v->rank >= 0 && (v->rank != 1 || (h >= 0 && v->dims[0] >= 0 && v->dims[0] != h))) {
      snprintf(why, sizeof why, "%s must be 1-D with the hidden size %lld values", vn[k], (long long)h);
      return fail(l, op, why);
    }
  }
  float eps = mi_node_attr_float(n, "epsilon", MI__MSF_SKIP_EPS);
  if (!(eps >= 0)) return fail(l, op, "epsilon must be >= 0");
  int ask_mask = used(l->g, mi);
  l->dt = wt->dtype;
  int32_t w = tmp(l, "word"), p;
  if (add(l, "Gather", "word", 2, (int32_t[]){we, ids}, w) < 0) return oom(l);
  if (pos >= 0) {
    p = tmp(l, "position");
    if (add(l, "Gather", "position", 2, (int32_t[]){pe, pos}, p) < 0) return oom(l);
  } else if ((p = position_rows(l, op, ids, pe)) < 0) {
    return p == -2 ? MI_ERR_UNSUPPORTED : oom(l);
  }
  int32_t s = seg < 0 && sum >= 0 ? sum : tmp(l, "sum");
  if (add(l, "Add", "position_add", 2, (int32_t[]){w, p}, s) < 0) return oom(l);
  if (seg >= 0) {
    int32_t g2 = tmp(l, "segment"), s2 = sum >= 0 ? sum : tmp(l, "segment_sum");
    if (add(l, "Gather", "segment", 2, (int32_t[]){se, seg}, g2) < 0 ||
        add(l, "Add", "segment_add", 2, (int32_t[]){s, g2}, s2) < 0)
      return oom(l);
    s = s2;
  }
  if (ask_mask && mask_index(l, ids, mask, mi)) return oom(l);
  if (retype(l, "LayerNormalization", 3, (int32_t[]){s, gamma, beta}, 1, &y) ||
      mi_node_set_int(l->g, l->i, "axis", -1) || mi_node_set_float(l->g, l->i, "epsilon", eps))
    return oom(l);
  return MI_OK;
}

int mi__msf_fused_mm_attrs(const mi_node_t *n, float *alpha, int *ta, int *tb, char *why, size_t cap) {
  *alpha = mi_node_attr_float(n, "alpha", 1.0f);
  *ta = mi_node_attr_int(n, "transA", 0) != 0;
  *tb = mi_node_attr_int(n, "transB", 0) != 0;
  if (mi_node_attr_int(n, "transBatchA", 0) || mi_node_attr_int(n, "transBatchB", 0))
    return mi__why(why, cap, "transBatchA/transBatchB are not supported");
  return 0;
}

/* A Transpose of t swapping its last two dims (rank r) into a new intermediate. */
static int32_t swap_last(low_t *l, int32_t t, int32_t r, const char *what) {
  int64_t perm[MI_MAX_RANK];
  for (int32_t d = 0; d < r; d++) perm[d] = d;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  int32_t o = tmp(l, what), k = add(l, "Transpose", what, 1, &t, o);
  return k < 0 || mi_node_set_ints(l->g, k, "perm", r, perm) ? -1 : o;
}

/* FusedMatMul: alpha * op(A) @ op(B), op a swap of the last two dims. The scale goes on B, where
 * blis-cpu's MatMul reads a scalar Mul (and B's Transpose) as its alpha (and strides). Left as it
 * is while a transposed operand's rank is unknown. */
static int32_t lower_fused_mm(low_t *l) {
  const mi_node_t *n = &l->g->nodes[l->i];
  const char *op = "com.microsoft FusedMatMul";
  int32_t a = in_at(n, 0), b = in_at(n, 1), y = out_at(n, 0), ta, tb;
  float alpha;
  char why[128];
  if (a < 0 || b < 0 || y < 0 || n->input_count > 2 || n->output_count > 1)
    return fail(l, op, "takes inputs A and B and one output");
  if (mi__msf_fused_mm_attrs(n, &alpha, &ta, &tb, why, sizeof why)) return fail(l, op, why);
  int32_t ra = l->g->tensors[a].rank, rb = l->g->tensors[b].rank;
  if ((ta && ra < 0) || (tb && rb < 0)) return MI_OK; /* the session lowers it once shapes are known */
  if ((ta && ra < 2) || (tb && rb < 2)) return fail(l, op, "a transposed operand must have rank >= 2");
  if (alpha != 1.0f && l->dt != MI_DTYPE_FLOAT32 && l->dt != MI_DTYPE_UNDEFINED)
    return fail(l, op, "alpha != 1 is supported on FLOAT32 input only");
  if (ta && (a = swap_last(l, a, ra, "transpose_a")) < 0) return oom(l);
  if (tb && (b = swap_last(l, b, rb, "transpose_b")) < 0) return oom(l);
  if (alpha != 1.0f) {
    char nm[512];
    snprintf(nm, sizeof nm, "%s/alpha", l->name);
    int32_t ca = mi_graph_add_const_f32(l->g, nm, 0, NULL, &alpha), sb = tmp(l, "scaled_b");
    if (ca < 0 || add(l, "Mul", "scale", 2, (int32_t[]){b, ca}, sb) < 0) return oom(l);
    b = sb;
  }
  return retype(l, "MatMul", 2, (int32_t[]){a, b}, 1, &y) ? oom(l) : MI_OK;
}

static int32_t lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  low_t l = {g, i, "", MI_DTYPE_UNDEFINED, err};
  const mi_node_t *n = &g->nodes[i];
  int kind = mi__msf_kind(n);
  snprintf(l.name, sizeof l.name, "%s", n->name ? n->name : "");
  if (n->input_count > 0 && n->inputs[0] >= 0) l.dt = g->tensors[n->inputs[0]].dtype;
  switch (kind) {
  case MI__MSF_SKIP_LN: return lower_skip(&l, 0);
  case MI__MSF_SKIP_SLN: return lower_skip(&l, 1);
  case MI__MSF_EMBED_LN: return lower_embed(&l);
  case MI__MSF_FUSED_MM: return lower_fused_mm(&l);
  case MI__MSF_FAST_GELU:
  case MI__MSF_BIAS_GELU:
  case MI__MSF_GELU: return lower_gelu(&l, kind);
  case MI__MSF_QUICK_GELU:
  case MI__MSF_SWISH: return lower_swish(&l, kind);
  case MI__MSF_BIAS_ADD: {
    int32_t x = in_at(n, 0), b = in_at(n, 1), s = in_at(n, 2), y = out_at(n, 0);
    if (x < 0 || b < 0 || s < 0 || y < 0 || n->input_count > 3 || n->output_count > 1)
      return fail(&l, "com.microsoft BiasAdd", "takes inputs X, bias and skip and one output");
    int32_t t = tmp(&l, "biased");
    if (add(&l, "Add", "bias_add", 2, (int32_t[]){x, b}, t) < 0 || retype(&l, "Add", 2, (int32_t[]){t, s}, 1, &y))
      return oom(&l);
    return MI_OK;
  }
  case MI__MSF_SLN: {
    int32_t x = in_at(n, 0), sc = in_at(n, 1), y = out_at(n, 0);
    if (x < 0 || sc < 0 || y < 0 || n->input_count > 2 || n->output_count > 2)
      return fail(&l, "SimplifiedLayerNormalization", "takes inputs X and scale and at most 2 outputs");
    if (used(g, out_at(n, 1)))
      return fail(&l, "SimplifiedLayerNormalization", "output inv_std_var is not supported");
    int64_t axis = mi_node_attr_int(n, "axis", -1), stash = mi_node_attr_int(n, "stash_type", 1);
    float eps = mi_node_attr_float(n, "epsilon", 1e-5f);
    if (retype(&l, "RMSNormalization", 2, (int32_t[]){x, sc}, 1, &y) || mi_node_set_int(g, i, "axis", axis) ||
        mi_node_set_float(g, i, "epsilon", eps) || mi_node_set_int(g, i, "stash_type", stash))
      return oom(&l);
    return MI_OK;
  }
  default: return MI_OK;
  }
}

int32_t mi__graph_lower_msfuse(mi_graph_t *g, mi_error_t *err) {
  int32_t rc = MI_OK, count = g->node_count;
  for (int32_t i = 0; i < count && rc == MI_OK; i++)
    if (mi__msf_kind(&g->nodes[i]) != MI__MSF_NONE) rc = lower_one(g, i, err);
  if (rc == MI_OK) rc = mi_graph_toposort(g, err);
  return rc;
}
