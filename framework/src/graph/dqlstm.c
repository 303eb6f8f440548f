/* dqlstm.c - com.microsoft DynamicQuantizeLSTM: weight checks, the float LSTM weights its 8-bit
 * ones stand for, and the loader's rewrite into LSTM. ONNX Runtime's kernel also quantizes X and
 * the hidden state to 8 bits at every step (dynamically); the reference here keeps them float, so
 * it is the LSTM the quantized weights define, within that activation rounding of ONNX Runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dqlstm.h"
#include "graph/graph_internal.h"

/* One weight (slot k, rows = I or H) and its scale / zero point (slots ks, ks + 1). */
static int check_one(const mi__dql_in_t *ins, int32_t k, int32_t ks, int64_t dirs, int64_t rows, int64_t h4,
                     const char *what, char *why, size_t cap) {
  const mi__dql_in_t *w = &ins[k], *s = &ins[ks], *z = &ins[ks + 1];
  if (!w->present || !s->present || !z->present)
    return mi__why(why, cap, "%s, its scale and zero point are required", what);
  if (w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_UINT8)
    return mi__why(why, cap, "%s must be INT8 or UINT8 (dtype %d)", what, (int)w->dtype);
  if (w->rank >= 0 && (w->rank != 3 || w->dims[0] != dirs || w->dims[2] != h4 || (rows >= 0 && w->dims[1] != rows)))
    return mi__why(why, cap, "%s must be [%lld, %s, %lld] ([num_directions, %s, 4 * hidden_size])", what,
                   (long long)dirs, k == 1 ? "input_size" : "hidden_size", (long long)h4,
                   k == 1 ? "input_size" : "hidden_size");
  if (s->dtype != MI_DTYPE_FLOAT32 || z->dtype != w->dtype)
    return mi__why(why, cap, "%s's scale must be FLOAT32 and its zero point %s's dtype", what, what);
  if (s->rank >= 0 && mi__in_view_numel(s) != dirs && mi__in_view_numel(s) != dirs * h4)
    return mi__why(why, cap, "%s's scale has %lld values (num_directions or num_directions * 4 * hidden_size)", what,
                   (long long)mi__in_view_numel(s));
  if (s->rank >= 0 && z->rank >= 0 && mi__in_view_numel(z) != mi__in_view_numel(s))
    return mi__why(why, cap, "%s's zero point has %lld values, its scale %lld", what, (long long)mi__in_view_numel(z),
                   (long long)mi__in_view_numel(s));
  return 0;
}

/* The float LSTM layout [D, 4H, rows] of quantized w [D, rows, 4H]. */
static float *dequant(const mi__dql_in_t *w, const mi__dql_in_t *s, const mi__dql_in_t *z, int64_t dirs, int64_t rows,
                      int64_t h4) {
  float *out = malloc(sizeof *out * (size_t)(dirs * rows * h4 + 1));
  int64_t ns = mi__in_view_numel(s);
  if (!out) return NULL;
  for (int64_t d = 0; d < dirs; d++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < h4; j++) {
        int64_t i = (d * rows + r) * h4 + j, p = ns == dirs ? d : d * h4 + j;
        double q = w->dtype == MI_DTYPE_INT8 ? ((const int8_t *)w->data)[i] : ((const uint8_t *)w->data)[i];
        double zp = z->dtype == MI_DTYPE_INT8 ? ((const int8_t *)z->data)[p] : ((const uint8_t *)z->data)[p];
        out[(d * h4 + j) * rows + r] = (float)((q - zp) * (double)((const float *)s->data)[p]);
      }
  return out;
}

int mi__dqlstm_weights(const mi_node_t *node, const mi__dql_in_t *ins, float **out_w, float **out_r,
                       int64_t *dims_w, int64_t *dims_r, char *why, size_t cap) {
  int64_t h = mi_node_attr_int(node, "hidden_size", 0);
  int64_t dirs = strcmp(mi_node_attr_string(node, "direction", "forward"), "bidirectional") == 0 ? 2 : 1;
  const mi__dql_in_t *x = &ins[0];
  int64_t in = x->rank == 3 ? x->dims[2] : -1;
  if (h <= 0) return mi__why(why, cap, "hidden_size must be positive");
  if (check_one(ins, 1, 8, dirs, in, 4 * h, "W", why, cap) || check_one(ins, 2, 10, dirs, h, 4 * h, "R", why, cap))
    return -1;
  if (!out_w) return 0;
  for (int32_t k = 1; k <= 11; k++)
    if ((k == 1 || k == 2 || k >= 8) && !ins[k].data) return mi__why(why, cap, "input %d is not a constant", (int)k);
  if (ins[1].rank != 3 || ins[2].rank != 3) return mi__why(why, cap, "W and R must have known shapes");
  int64_t iw = ins[1].dims[1];
  *out_w = dequant(&ins[1], &ins[8], &ins[9], dirs, iw, 4 * h);
  *out_r = dequant(&ins[2], &ins[10], &ins[11], dirs, h, 4 * h);
  if (!*out_w || !*out_r) {
    free(*out_w), free(*out_r);
    *out_w = *out_r = NULL;
    snprintf(why, cap, "out of memory");
    return -2;
  }
  dims_w[0] = dims_r[0] = dirs;
  dims_w[1] = dims_r[1] = 4 * h;
  dims_w[2] = iw;
  dims_r[2] = h;
  return 0;
}

static int is_dql(const mi_node_t *n) {
  return n->domain && !strcmp(n->domain, "com.microsoft") && !strcmp(n->op_type, "DynamicQuantizeLSTM");
}

int mi__graph_has_dqlstm(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (is_dql(&g->nodes[i])) return 1;
  return 0;
}

static int32_t lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  mi__dql_in_t ins[12];
  float *w = NULL, *r = NULL;
  int64_t dw[3], dr[3];
  char why[256], nm[512];
  mi_node_t *n = &g->nodes[i];
  mi__in_views_of_node(g, n, ins, 12);
  int rc = mi__dqlstm_weights(n, ins, &w, &r, dw, dr, why, sizeof why);
  if (rc)
    return mi_errorf(err, rc == -2 ? MI_ERR_OUT_OF_MEMORY : MI_ERR_PARSE,
                     "node '%s' (com.microsoft DynamicQuantizeLSTM): %s", n->name, why);
  int32_t tw, tr;
  snprintf(nm, sizeof nm, "%s/W", n->name);
  tw = mi_graph_add_tensor(g, nm, MI_DTYPE_FLOAT32, 3, dw);
  snprintf(nm, sizeof nm, "%s/R", n->name);
  tr = mi_graph_add_tensor(g, nm, MI_DTYPE_FLOAT32, 3, dr);
  if (tw < 0 || tr < 0) {
    free(w), free(r);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", g->nodes[i].name);
  }
  g->tensors[tw].data = w; /* the graph takes the buffers */
  g->tensors[tw].nbytes = sizeof *w * (size_t)(dw[0] * dw[1] * dw[2]);
  g->tensors[tr].data = r;
  g->tensors[tr].nbytes = sizeof *r * (size_t)(dr[0] * dr[1] * dr[2]);
  n = &g->nodes[i];
  char *op = mi__strdup("LSTM");
  if (!op) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", n->name);
  free(n->op_type);
  n->op_type = op;
  free(n->domain);
  n->domain = NULL;
  n->inputs[1] = tw;
  n->inputs[2] = tr;
  /* X, W, R, B, sequence_lens, initial_h, initial_c, P: the scales and zero points go */
  n->input_count = n->input_count < 8 ? n->input_count : 8;
  while (n->input_count > 3 && n->inputs[n->input_count - 1] < 0) n->input_count--;
  return MI_OK;
}

int32_t mi__graph_lower_dqlstm(mi_graph_t *g, mi_error_t *err) {
  int32_t rc = MI_OK;
  for (int32_t i = 0; i < g->node_count && rc == MI_OK; i++)
    if (is_dql(&g->nodes[i])) rc = lower_one(g, i, err);
  if (rc == MI_OK) rc = mi_graph_toposort(g, err);
  return rc;
}
