/* lstm.c - mi-quantize's dynamic rewrite of LSTM into com.microsoft DynamicQuantizeLSTM, as ONNX
 * Runtime's quantize_dynamic writes it (its LSTMQuant): W [D, 4H, I] and R [D, 4H, H] quantized to
 * INT8 symmetric ([-127, 127], zero point 0; one scale a direction, or with --per-channel one a
 * direction and gate row), stored transposed as [D, I, 4H] and [D, H, 4H]; inputs X, W, R, B,
 * sequence_lens, initial_h, initial_c, P, W_scale, W_zero_point, R_scale, R_zero_point; the LSTM's
 * attributes and outputs kept. LSTMs inside If / Loop bodies are rewritten too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mi_quantize.h"

/* Codes of w [D, rows, cols] (transposed per direction into [D, cols, rows]) with one scale per
 * direction or per (direction, row); the initializers' indices in *q, *s, *z. -1 out of memory. */
static int32_t quantize_t(mi_graph_t *g, int32_t w, int per_channel, int32_t *q, int32_t *s, int32_t *z) {
  const mi_tensor_t *t = &g->tensors[w];
  int64_t D = t->dims[0], rows = t->dims[1], cols = t->dims[2], ns = per_channel ? D * rows : D;
  const float *v = t->data;
  char base[400];
  snprintf(base, sizeof base, "%s", t->name);
  int64_t n = D * rows * cols;
  float *sc = malloc(sizeof *sc * (size_t)ns);
  int8_t *codes = malloc((size_t)(n > 0 ? n : 1));
  uint8_t *zp = calloc((size_t)ns, 1);
  if (!sc || !codes || !zp) {
    free(sc), free(codes), free(zp);
    return -1;
  }
  for (int64_t d = 0; d < D; d++)
    for (int64_t r = 0; r < rows; r++) {
      int64_t k = per_channel ? d * rows + r : d;
      if (!per_channel && r > 0) continue;
      /* the largest magnitude of the scale's values: one row, or the direction's rows */
      double m = 0;
      int64_t r0 = per_channel ? r : 0, r1 = per_channel ? r + 1 : rows;
      for (int64_t rr = r0; rr < r1; rr++)
        for (int64_t c = 0; c < cols; c++) m = fmax(m, fabs((double)v[(d * rows + rr) * cols + c]));
      sc[k] = m == 0 ? 1.0f : (float)(2.0 * m / 254.0);
    }
  for (int64_t d = 0; d < D; d++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        float s = sc[per_channel ? d * rows + r : d];
        double x = rint((double)v[(d * rows + r) * cols + c] / (double)s);
        codes[(d * cols + c) * rows + r] = (int8_t)(x < -127 ? -127 : x > 127 ? 127
                                                                              : x);
      }
  int64_t qd[3] = {D, cols, rows}, sd[2] = {D, rows};
  *q = mq_new_init(g, base, "_quantized", MI_DTYPE_INT8, 3, qd, codes, (size_t)n);
  *s = mq_new_init(g, base, "_scale", MI_DTYPE_FLOAT32, per_channel ? 2 : 1, sd, sc, sizeof *sc * (size_t)ns);
  *z = mq_new_init(g, base, "_zero_point", MI_DTYPE_INT8, per_channel ? 2 : 1, sd, zp, (size_t)ns);
  free(sc), free(codes), free(zp);
  return *q >= 0 && *s >= 0 && *z >= 0 ? 0 : -1;
}

static int is_const_3d(const mi_graph_t *g, int32_t t) {
  return t >= 0 && g->tensors[t].data && g->tensors[t].dtype == MI_DTYPE_FLOAT32 && g->tensors[t].rank == 3;
}

int32_t mq_dynamic_lstm(mi_graph_t *g, int per_channel) {
  int32_t done = 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    for (int32_t k = 0; k < g->nodes[i].subgraph_count; k++) {
      int32_t r = mq_dynamic_lstm(g->nodes[i].subgraphs[k], per_channel);
      if (r < 0) return r;
      done += r;
    }
    mi_node_t *n = &g->nodes[i];
    if (strcmp(n->op_type, "LSTM") || (n->domain && n->domain[0]) || n->input_count < 3) continue;
    int32_t w = n->inputs[1], r = n->inputs[2];
    if (!is_const_3d(g, w) || !is_const_3d(g, r) || g->tensors[w].dims[0] != g->tensors[r].dims[0]) continue;
    int32_t ins[12], wq, ws, wz, rq, rs, rz;
    if (quantize_t(g, w, per_channel, &wq, &ws, &wz) || quantize_t(g, r, per_channel, &rq, &rs, &rz)) return -1;
    n = &g->nodes[i];
    for (int32_t j = 0; j < 8; j++) ins[j] = j < n->input_count ? n->inputs[j] : -1;
    ins[1] = wq, ins[2] = rq, ins[8] = ws, ins[9] = wz, ins[10] = rs, ins[11] = rz;
    int32_t *in = malloc(sizeof *in * 12);
    char *op = strdup("DynamicQuantizeLSTM"), *dom = strdup("com.microsoft");
    if (!in || !op || !dom) {
      free(in), free(op), free(dom);
      return -1;
    }
    memcpy(in, ins, sizeof ins);
    free(n->op_type), free(n->domain), free(n->inputs);
    n->op_type = op, n->domain = dom, n->inputs = in;
    n->input_count = 12;
    done++;
  }
  return done;
}
