/* main.c - mi-quantize: writes a copy of an FP32 ONNX model quantized the way ONNX Runtime's
 * quantization tools do it (same ops, same patterns, same parameter rules), so that quantized
 * exports can be produced here, where those tools are not installed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mi_quantize.h"

#define MAX_INPUTS 16

static void usage(FILE *f) {
  fprintf(f,
          "usage: mi-quantize --mode dynamic|qdq|qop --model IN.onnx --out OUT.onnx [--input X.npy]...\n"
          "                   [--shape NAME=D0,D1,...]... [--per-channel] [--conv-weights u8|s8]\n"
          "                   [--matmul-weights u8|s8] [--seed S]\n"
          "  dynamic  quantize_dynamic: DynamicQuantizeLinear + ConvInteger / MatMulInteger + Cast + Mul\n"
          "           (Conv weights UINT8 by default: ONNX Runtime's CPU ConvInteger takes no INT8 weight;\n"
          "           MatMul weights INT8 symmetric)\n"
          "  qdq      quantize_static, QDQ format: QuantizeLinear/DequantizeLinear (UINT8) around Conv,\n"
          "           MatMul, Add, Mul and GlobalAveragePool, INT8 symmetric weights, INT32 biases\n"
          "  qop      quantize_static, QOperator format: QLinearConv, QLinearMatMul and com.microsoft\n"
          "           QLinearAdd / QLinearMul / QLinearGlobalAveragePool\n"
          "Static ranges are the min/max of one reference run on the --input arrays (one per graph\n"
          "input, in order), or on uniform [-1, 1) values from --seed (dynamic dims from --shape, else 1).\n");
}

/* Min/max of every marked tensor over one reference run. */
static int32_t calibrate(const mi_graph_t *g, const uint8_t *mark, mi_array_t **ins, int32_t nin,
                         mq_ranges_t *r, mi_error_t *err) {
  mi_graph_t *c = mi_graph_clone(g);
  int32_t rc = c ? MI_OK : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  int32_t n0 = c ? c->output_count : 0, nout = 0;
  mi_array_t **outs = NULL;
  for (int32_t t = 0; rc == MI_OK && t < g->tensor_count; t++) {
    r->lo[t] = r->hi[t] = NAN;
    if (mark[t] && mi_graph_add_output(c, t) != MI_OK) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (rc == MI_OK) {
    nout = c->output_count;
    outs = calloc((size_t)nout + 1, sizeof *outs);
    if (!outs) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (rc == MI_OK) rc = mi_ref_run(c, (const mi_array_t *const *)ins, nin, outs, nout, err);
  for (int32_t k = n0; rc == MI_OK && k < nout; k++) {
    int32_t t = c->outputs[k];
    const mi_array_t *a = outs[k];
    double lo = 0, hi = 0;
    if (a->dtype != MI_DTYPE_FLOAT32) continue;
    for (int64_t i = 0; i < mi_array_numel(a); i++) {
      double v = ((const float *)a->data)[i];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    r->lo[t] = (float)lo;
    r->hi[t] = (float)hi;
  }
  for (int32_t k = 0; outs && k < nout; k++) mi_array_destroy(outs[k]);
  free(outs);
  mi_graph_destroy(c);
  return rc;
}

/* The graph inputs: the given arrays, else random ones with dynamic dims set to 1. */
static const char *g_shapes[MAX_INPUTS];
static int32_t g_nshapes;

/* The --shape NAME=D0,D1,... of input t, into dims; 0 when none is given. */
static int given_shape(const mi_tensor_t *t, int64_t *dims) {
  size_t n = strlen(t->name);
  for (int32_t k = 0; k < g_nshapes; k++) {
    const char *s = g_shapes[k];
    if (strncmp(s, t->name, n) || s[n] != '=') continue;
    s += n + 1;
    for (int32_t d = 0; d < t->rank; d++) {
      char *end;
      dims[d] = strtoll(s, &end, 10);
      if (end == s || dims[d] < 1) return 0;
      s = *end == ',' ? end + 1 : end;
    }
    return 1;
  }
  return 0;
}

static int32_t make_inputs(const mi_graph_t *g, const char **files, int32_t nfiles, uint64_t seed,
                           mi_array_t **ins, mi_error_t *err) {
  if (g->input_count > MAX_INPUTS)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "the model has %d inputs, at most %d are handled",
                     (int)g->input_count, MAX_INPUTS);
  if (nfiles && nfiles != g->input_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%d --input arrays for %d graph inputs", (int)nfiles,
                     (int)g->input_count);
  for (int32_t i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    int32_t rc;
    if (nfiles) {
      if ((rc = mi_npy_load(files[i], &ins[i], err)) != MI_OK) return rc;
      continue;
    }
    int64_t dims[MI_MAX_RANK];
    if (t->dtype != MI_DTYPE_FLOAT32 || t->rank < 0)
      return mi_errorf(err, MI_ERR_UNSUPPORTED, "input '%s' is not a float tensor of known rank: pass --input",
                       t->name);
    if (!given_shape(t, dims))
      for (int32_t d = 0; d < t->rank; d++) dims[d] = t->dims[d] > 0 ? t->dims[d] : 1;
    if (!(ins[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, dims)))
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    mi_array_fill_random(ins[i], seed + (uint64_t)i);
  }
  return MI_OK;
}

static int32_t static_quant(mi_graph_t *g, const char **files, int32_t nfiles, uint64_t seed,
                            const mq_options_t *o, int qop, mi_error_t *err) {
  mi_array_t *ins[MAX_INPUTS] = {0};
  mq_ranges_t r = {0};
  uint8_t *mark = malloc((size_t)g->tensor_count + 1);
  int32_t rc = mark ? mq_qdq_prepare(g, mark, err) : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if (rc == MI_OK) {
    r.lo = malloc(sizeof *r.lo * ((size_t)g->tensor_count + 1));
    r.hi = malloc(sizeof *r.hi * ((size_t)g->tensor_count + 1));
    if (!r.lo || !r.hi) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (rc == MI_OK) rc = make_inputs(g, files, nfiles, seed, ins, err);
  if (rc == MI_OK) rc = calibrate(g, mark, ins, g->input_count, &r, err);
  if (rc == MI_OK) rc = mq_qdq(g, mark, &r, o, qop, err);
  for (int32_t i = 0; i < MAX_INPUTS; i++) mi_array_destroy(ins[i]);
  free(mark);
  free(r.lo);
  free(r.hi);
  return rc;
}

int main(int argc, char **argv) {
  const char *mode = NULL, *in = NULL, *out = NULL, *files[MAX_INPUTS];
  int32_t nfiles = 0;
  uint64_t seed = 1;
  mq_options_t o = {0, 1, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--per-channel")) {
      o.per_channel = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "mi-quantize: %s needs a value (see --help)\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--mode")) mode = v;
    else if (!strcmp(a, "--model")) in = v;
    else if (!strcmp(a, "--out")) out = v;
    else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--input") && nfiles < MAX_INPUTS) files[nfiles++] = v;
    else if (!strcmp(a, "--shape") && g_nshapes < MAX_INPUTS) g_shapes[g_nshapes++] = v;
    else if (!strcmp(a, "--conv-weights") && (!strcmp(v, "u8") || !strcmp(v, "s8"))) o.conv_u8 = !strcmp(v, "u8");
    else if (!strcmp(a, "--matmul-weights") && (!strcmp(v, "u8") || !strcmp(v, "s8"))) o.matmul_u8 = !strcmp(v, "u8");
    else {
      fprintf(stderr, "mi-quantize: unknown option or value '%s %s' (see --help)\n", a, v);
      return 2;
    }
  }
  if (!mode || !in || !out || (strcmp(mode, "dynamic") && strcmp(mode, "qdq") && strcmp(mode, "qop"))) {
    fprintf(stderr, "mi-quantize: --mode dynamic|qdq|qop, --model and --out are required (see --help)\n");
    return 2;
  }
  mi_error_t err = {0};
  mi_graph_t *g = NULL;
  int32_t rc = mi_onnx_load(in, &g, &err);
  if (rc == MI_OK) rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK && !strcmp(mode, "dynamic")) rc = mq_dynamic(g, &o, &err);
  else if (rc == MI_OK) rc = static_quant(g, files, nfiles, seed, &o, !strcmp(mode, "qop"), &err);
  if (rc == MI_OK) /* inferred shapes of intermediate values are not saved: they were inferred
                    * for one input shape and would pin the model's dynamic dims */
    for (int32_t t = 0; t < g->tensor_count; t++) {
      int io = 0;
      for (int32_t k = 0; k < g->input_count; k++) io |= g->inputs[k] == t;
      for (int32_t k = 0; k < g->output_count; k++) io |= g->outputs[k] == t;
      if (!io && !g->tensors[t].data) g->tensors[t].rank = -1;
    }
  if (rc == MI_OK) { /* drops the float weights no node reads any more */
    uint8_t *keep = calloc((size_t)g->node_count + 1, 1);
    rc = keep ? mi_graph_remove_nodes(g, keep, &err) : mi_errorf(&err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    free(keep);
  }
  if (rc == MI_OK) rc = mi_onnx_save(g, out, &err);
  mi_graph_destroy(g);
  if (rc != MI_OK) { /* the model or its ops were not usable: bad input (2), else a failure (1) */
    fprintf(stderr, "mi-quantize: %s: %s\n", in, err.message);
    return rc == MI_ERR_OUT_OF_MEMORY || rc == MI_ERR_INTERNAL ? 1 : 2;
  }
  printf("mi-quantize: wrote %s (%s)\n", out, mode);
  return 0;
}
