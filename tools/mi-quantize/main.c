/* main.c - mi-quantize: writes a copy of an FP32 ONNX model quantized the way ONNX Runtime's
 * quantization tools do it (same ops, same patterns, same parameter rules), so that quantized
 * exports can be produced here, where those tools are not installed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mi_cli.h"
#include "mi_quantize.h"

#define MAX_INPUTS 16

/* Min/max of every marked tensor over one reference run. */
static int32_t calibrate(const mi_graph_t *g, const uint8_t *mark, mi_array_t **ins, int32_t nin,
                         mq_ranges_t *r, mi_error_t *err) {
  mi_graph_t *c = mi_graph_clone(g);
  int32_t rc = c ? MI_OK : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  int32_t n0 = c ? c->output_count : 0, nout = 0;
  mi_array_t **outs = NULL;
  /* Every marked tensor becomes an output of the copy; one that is a graph output already keeps
   * its place (mi_graph_add_output lists a tensor once), so the outputs are read from the first. */
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
  for (int32_t k = 0; rc == MI_OK && k < nout; k++) {
    if (k < n0 && !mark[c->outputs[k]]) continue;
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

#define OPTIONS(X)                                                                                \
  X(O_MODE, "mode", "dynamic|qdq|qop|nbits|qdq4",                                                 \
    "dynamic: quantize_dynamic: DynamicQuantizeLinear + ConvInteger / MatMulInteger\n"            \
    "  + Cast + Mul (Conv weights UINT8 by default: ONNX Runtime's CPU ConvInteger\n"             \
    "  takes no INT8 weight; MatMul weights INT8 symmetric); LSTM -> com.microsoft\n"             \
    "  DynamicQuantizeLSTM (INT8 symmetric W and R)\n"                                            \
    "qdq: quantize_static, QDQ format: QuantizeLinear/DequantizeLinear (UINT8)\n"                 \
    "  around Conv, MatMul, Gemm, Add, Mul, GlobalAveragePool, AveragePool, Sigmoid,\n"           \
    "  LeakyRelu, Softmax, Concat and Where (MaxPool, nearest Resize at their input's\n"          \
    "  parameters), INT8 symmetric weights, INT32 biases\n"                                       \
    "qop: quantize_static, QOperator format: QLinearConv, QLinearMatMul and com.microsoft\n"      \
    "  QLinearAdd / Mul / GlobalAveragePool / AveragePool / Sigmoid / LeakyRelu /\n"              \
    "  Softmax / Concat / Where and QGemm; MaxPool and nearest Resize on the codes\n"             \
    "nbits: weight-only 4-bit (matmul_nbits_quantizer): com.microsoft MatMulNBits\n"              \
    "  for each MatMul with a constant 2-D weight, blocks of --block-size along K\n"              \
    "qdq4: the same weights as opset 21's blocked INT4 DequantizeLinear -> MatMul")               \
  X(O_MODEL, "model", "IN.onnx", "the FP32 model to quantize")                                    \
  X(O_OUT, "out", "OUT.onnx", "the quantized copy to write (its folder is created)")              \
  X(O_INPUT, "input", "X.npy", "a calibration array, one per graph input in order (repeatable)")  \
  X(O_SHAPE, "shape", "NAME=D0,D1,...",                                                           \
    "a dynamic input's shape for generated calibration values\n"                                  \
    "(repeatable; other dynamic dims are 1)")                                                     \
  X(O_SEED, "seed", "S", "seed of the generated calibration values (default 1)")                  \
  X(O_PER_CHANNEL, "per-channel", NULL, "per-channel weight scales")                              \
  X(O_CONV_W, "conv-weights", "u8|s8", "Conv weight type")                                        \
  X(O_MATMUL_W, "matmul-weights", "u8|s8", "MatMul weight type")                                  \
  X(O_BLOCK, "block-size", "B", "nbits, qdq4: values a block (a power of two >= 16; default 32)") \
  X(O_SYM, "symmetric", NULL, "nbits, qdq4: symmetric blocks, no zero points")
MI_CLI_TABLE(OPTIONS, k_opts);

int main(int argc, char **argv) {
  const char *mode = NULL, *in = NULL, *out = NULL, *files[MAX_INPUTS];
  int32_t nfiles = 0;
  uint64_t seed = 1;
  mq_options_t o = {0, 1, 0, 32, 0};
  mi_cli_t c = {0};
  long long v = 0;
  int k, st;
  c.prog = "mi-quantize";
  c.usage =
      "mi-quantize --mode dynamic|qdq|qop|nbits|qdq4 --model IN.onnx --out OUT.onnx\n"
      "            [--input X.npy]... [--shape NAME=D0,D1,...]... [--per-channel]\n"
      "            [--conv-weights u8|s8] [--matmul-weights u8|s8] [--seed S]\n"
      "            [--block-size B] [--symmetric]";
  c.about =
      "Writes a copy of an FP32 model quantized with the ops and patterns ONNX Runtime's\n"
      "quantization tools write. Static ranges are the min/max of one reference run on the\n"
      "--input arrays, or on uniform [-1, 1) values from --seed.";
  c.opts = k_opts;
  c.flags = MI_CLI_VERSION_OPT | MI_CLI_NO_ARGS;
  mi_cli_begin(&c, argc, argv);
  while ((k = mi_cli_step(&c, &st))) {
    switch (k) {
    case O_MODE:
      if (strcmp(c.value, "dynamic") && strcmp(c.value, "qdq") && strcmp(c.value, "qop") &&
          strcmp(c.value, "nbits") && strcmp(c.value, "qdq4"))
        return mi_cli_error(&c, "--mode: '%s' is not dynamic, qdq, qop, nbits or qdq4", c.value);
      mode = c.value;
      break;
    case O_MODEL: in = c.value; break;
    case O_OUT: out = c.value; break;
    case O_SEED:
      if (mi_cli_int(&c, 0, 9223372036854775807LL, &v)) return MI_CLI_USAGE;
      seed = (uint64_t)v;
      break;
    case O_INPUT:
    case O_SHAPE:
      if ((k == O_INPUT ? nfiles : g_nshapes) >= MAX_INPUTS)
        return mi_cli_error(&c, "%s: at most %d", c.opt, MAX_INPUTS);
      if (k == O_INPUT) files[nfiles++] = c.value;
      else
        g_shapes[g_nshapes++] = c.value;
      break;
    case O_PER_CHANNEL: o.per_channel = 1; break;
    case O_SYM: o.symmetric = 1; break;
    case O_BLOCK:
      if (mi_cli_int(&c, 16, 1 << 20, &v)) return MI_CLI_USAGE;
      if (v & (v - 1)) return mi_cli_error(&c, "--block-size: %lld is not a power of two", v);
      o.block_size = (int)v;
      break;
    case O_CONV_W:
    case O_MATMUL_W:
      if (strcmp(c.value, "u8") && strcmp(c.value, "s8"))
        return mi_cli_error(&c, "%s: '%s' is not u8 or s8", c.opt, c.value);
      *(k == O_CONV_W ? &o.conv_u8 : &o.matmul_u8) = !strcmp(c.value, "u8");
      break;
    }
  }
  if (st != MI_CLI_GO_ON) return st;
  if (!mode || !in || !out) return mi_cli_error(&c, "--mode, --model and --out are required");
  {
    mi_error_t derr = {0};
    if (mi_cli_make_parent_dirs(out, &derr) != MI_OK) {
      fprintf(stderr, "mi-quantize: %s\n", derr.message);
      return 1;
    }
  }
  mi_error_t err = {0};
  mi_graph_t *g = NULL;
  int32_t rc = mi_onnx_load(in, &g, &err);
  if (rc == MI_OK) rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK && !strcmp(mode, "dynamic")) rc = mq_dynamic(g, &o, &err);
  else if (rc == MI_OK && !strcmp(mode, "nbits"))
    rc = mq_nbits(g, &o, &err);
  else if (rc == MI_OK && !strcmp(mode, "qdq4"))
    rc = mq_qdq4(g, &o, &err);
  else if (rc == MI_OK)
    rc = static_quant(g, files, nfiles, seed, &o, !strcmp(mode, "qop"), &err);
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
