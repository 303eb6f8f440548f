/* test_exec_quant.c - QDQ models from the transform's quantizer: on a device with INT8 variants
 * (npu-stub) each DQ -> Conv/Gemm -> [Relu/Clip] -> Q layer is one INT8 kernel whose output
 * codes equal the reference interpreter's QDQ codes bit for bit; on an FP32 device (blis-cpu)
 * the same model runs with Q/DQ as ordinary ops and matches the reference in float. */
#include "test_exec_util.h"

/* Every Conv/Gemm/MatMul INT8 per channel, INT8 activations (the stem too, so the first
 * layer's input codes come straight from the float graph input). */
static const char *const k_int8 =
    "passes: {fold_bn: true}\n"
    "defaults: {weights: int8, scales: per_channel, activations: int8}\n";

static int is_q(const mi_graph_t *g, int32_t n) {
  return strcmp(g->nodes[n].op_type, "QuantizeLinear") == 0;
}

static void add_output(mi_graph_t *g, int32_t t) {
  for (int32_t i = 0; i < g->output_count; i++)
    if (g->outputs[i] == t) return;
  mi_graph_add_output(g, t);
}

static int32_t output_index(const mi_graph_t *g, int32_t t) {
  for (int32_t i = 0; i < g->output_count; i++)
    if (g->outputs[i] == t) return i;
  return 0;
}

static void npu_codes(mi_plugin_t *npu, const char *family, double width, int32_t depth) {
  mi_graph_t *g = zoo(family, width, depth, 32), *q = transform(g, k_int8, NULL), *q2;
  mi_array_t *in = input_for(g, 31), **got, **want;
  mi_session_t *s = session(q, npu), *s2;
  int32_t lowered = 0, nout;
  long codes = 0, differ = 0;
  int32_t checked = 0, skipped = 0, pair_x[64], pair_y[64];
  double d;
  q2 = mi_graph_clone(q);
  if (!q2) die("clone", NULL);
  /* The codes each lowered kernel writes become graph outputs, to compare them. */
  for (int32_t k = 0; k < mi_session_kernel_count(s); k++) {
    const int32_t *nodes;
    int32_t n = mi_session_kernel_nodes(s, k, &nodes);
    if (n < 2 || !is_q(q, nodes[n - 1])) continue;
    lowered++;
    CHECK(strcmp(q->nodes[nodes[0]].op_type, "Conv") == 0 ||
              strcmp(q->nodes[nodes[0]].op_type, "Gemm") == 0 ||
              strcmp(q->nodes[nodes[0]].op_type, "MatMul") == 0,
          "anchor of a lowered kernel is %s", q->nodes[nodes[0]].op_type);
    /* its input codes too: a layer is judged on the inputs it was given */
    if (lowered <= 64) {
      pair_x[lowered - 1] =
          q->nodes[q->tensors[q->nodes[nodes[0]].inputs[0]].producer].inputs[0];
      pair_y[lowered - 1] = q->nodes[nodes[n - 1]].outputs[0];
      add_output(q2, pair_x[lowered - 1]);
      add_output(q2, pair_y[lowered - 1]);
    }
  }
  CHECK(lowered > 0, "%s: some layers lowered to INT8 kernels", family);
  nout = q2->output_count;
  got = calloc((size_t)nout, sizeof *got);
  want = calloc((size_t)nout, sizeof *want);
  s2 = session(q2, npu);
  run(s2, q2, in, got);
  ref(q2, in, want);
  /* Upstream float ops run in FP16 on this device, so a layer's input codes may differ from
   * the reference's; the layers that got the reference's input codes must give its output codes
   * exactly (docs/abi.md: the NPU's requantization is the reference's QDQ arithmetic). */
  for (int32_t k = 0; k < lowered && k < 64; k++) {
    int32_t i = output_index(q2, pair_x[k]), o = output_index(q2, pair_y[k]);
    int same_in = got[i]->nbytes == want[i]->nbytes &&
                  memcmp(got[i]->data, want[i]->data, got[i]->nbytes) == 0;
    CHECK(got[o]->dtype == MI_DTYPE_UINT8 || got[o]->dtype == MI_DTYPE_INT8, "codes");
    CHECK(got[o]->nbytes == want[o]->nbytes, "same size");
    if (!same_in) {
      skipped++;
      continue;
    }
    checked++;
    for (size_t b = 0; b < got[o]->nbytes && b < want[o]->nbytes; b++) {
      codes++;
      differ += ((const uint8_t *)got[o]->data)[b] != ((const uint8_t *)want[o]->data)[b];
    }
  }
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf(
      "npu-stub %s: %d of %d kernels are lowered INT8 layers; %d had the reference's input "
      "codes: %ld output codes, %ld differ (%d others had FP16-shifted inputs); %d host "
      "nodes; float output rel L2 %.2e (FP16 for the float ops)\n",
      family, lowered, mi_session_kernel_count(s), checked, codes, differ, skipped,
      mi_session_fallback_count(s), d);
  CHECK(checked > 0 && codes > 0 && differ == 0, "%s: %ld of %ld codes differ", family, differ,
        codes);
  CHECK(d < 2e-2, "%s: rel L2 %.3e", family, d);
  for (int32_t i = 0; i < nout; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(want[i]);
  }
  free(got);
  free(want);
  mi_session_destroy(s2);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(q2);
  mi_graph_destroy(q);
  mi_graph_destroy(g);
}

/* blis-cpu declares INT8 for its im2col conv and BLIS GEMM variants: the quantized layers are
 * lowered to INT8 kernels (multi-node), the rest of the Q/DQ run as ops, nothing on the host. */
static void blis_qdq(mi_plugin_t *blis) {
  mi_graph_t *g = zoo("resnet", 0.5, 2, 32), *q = transform(g, k_int8, NULL);
  mi_array_t *in = input_for(g, 32), *got[4] = {0}, *want[4] = {0};
  mi_session_t *s = session(q, blis);
  double d;
  run(s, q, in, got);
  ref(q, in, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("blis-cpu resnet QDQ: %d kernels (%d multi-node), %d host nodes, rel L2 %.2e\n",
         mi_session_kernel_count(s), multi_node_kernels(s), mi_session_fallback_count(s), d);
  CHECK(multi_node_kernels(s) > 0, "INT8 variants: quantized layers lowered");
  CHECK(mi_session_fallback_count(s) == 0, "Q/DQ and the convs run on blis-cpu");
  CHECK(d < 1e-5, "rel L2 %.3e", d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(q);
  mi_graph_destroy(g);
}

/* The reference check (mi_outputs_check, what mi-host compare and tune run on every
 * configuration) on an all-INT8 MobileNetV2 on blis-cpu: the device's outputs pass, equal to the
 * reference's (which evaluates each QDQ layer as the integer layer blis-cpu computes), and those
 * of a corrupted model (one layer's weight codes negated, as a wrong packing would) are refused. */
static void blis_int8_check(mi_plugin_t *blis) {
  mi_graph_t *g = zoo("mobilenetv2", 0.5, 3, 32), *q = transform(g, k_int8, NULL), *bad = mi_graph_clone(q);
  mi_array_t *in = input_for(g, 33), *got[4] = {0}, *want[4] = {0};
  mi_session_t *s = session(q, blis), *sb;
  double e = -1, eb = -1;
  int ok, okb, corrupted = 0;
  if (!bad) die("clone", NULL);
  run(s, q, in, got);
  ref(q, in, want);
  ok = mi_outputs_check((const mi_array_t *const *)got, (const mi_array_t *const *)want, q->output_count, &e);
  destroy_outs(got, want);
  /* the weight codes of the third DQ of an INT8 constant, negated */
  for (int32_t n = 0, k = 0; n < bad->node_count && !corrupted; n++) {
    mi_tensor_t *w = strcmp(bad->nodes[n].op_type, "DequantizeLinear") ? NULL : &bad->tensors[bad->nodes[n].inputs[0]];
    if (!w || !w->data || w->dtype != MI_DTYPE_INT8 || ++k < 3) continue;
    for (size_t i = 0; i < w->nbytes; i++) ((int8_t *)w->data)[i] = (int8_t)(((int8_t *)w->data)[i] == -128 ? 127 : -((int8_t *)w->data)[i]);
    corrupted = 1;
  }
  CHECK(corrupted, "a weight to corrupt");
  sb = session(bad, blis);
  run(sb, bad, in, got);
  ref(q, in, want);
  okb = mi_outputs_check((const mi_array_t *const *)got, (const mi_array_t *const *)want, q->output_count, &eb);
  printf(
      "blis-cpu mobilenetv2 all-INT8: %d kernels (%d multi-node); reference check rel L2 %.3g (%s), corrupted "
      "model %.3g (%s)\n",
      mi_session_kernel_count(s), multi_node_kernels(s), e, ok ? "passes" : "refused", eb, okb ? "passes" : "refused");
  CHECK(multi_node_kernels(s) > 0, "INT8 layers lowered");
  CHECK(ok && e < 1e-6, "the INT8 model's outputs: rel L2 %.3g", e);
  CHECK(!okb && eb > MI_OUTPUT_TOLERANCE, "the corrupted model's outputs: rel L2 %.3g", eb);
  destroy_outs(got, want);
  mi_session_destroy(sb);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(bad);
  mi_graph_destroy(q);
  mi_graph_destroy(g);
}

static mi_registry_t *r;
static mi_plugin_t *blis, *npu;

static void setup(void) {
  r = open_plugins();
  blis = mi_registry_find(r, "blis-cpu");
  npu = mi_registry_find(r, "npu-stub");
  CHECK(npu != NULL && blis != NULL, "npu-stub and blis-cpu are loaded");
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void npu_codes_models(void) {
  if (npu) {
    npu_codes(npu, "resnet", 0.5, 2);
    npu_codes(npu, "mobilenetv2", 0.5, 3);
  }
}

static void blis_qdq_model(void) {
  if (blis) blis_qdq(blis);
}

static void blis_int8_reference_check(void) {
  if (blis) blis_int8_check(blis);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(npu_codes_models),
    TU_CASE(blis_qdq_model),
    TU_CASE(blis_int8_reference_check),
};

TU_MAIN(setup, teardown)
