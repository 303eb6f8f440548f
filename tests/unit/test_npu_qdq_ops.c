/* test_npu_qdq_ops.c - standalone QuantizeLinear/DequantizeLinear as npu-stub vector-unit kernels:
 * bit for bit against the host reference (ties, saturation, zero points, per axis), and models
 * quantized with INT8 activations running with no host fallback node at all. */
#include <math.h>

#include "metainfer/mi_transform.h"
#include "test_npu_util.h"

static char g_dir[256];

static void die(const char *what, const mi_error_t *err) {
  fprintf(stderr, "FAIL %s: %s\n", what, err ? err->message : "");
  exit(1);
}

static void run(mi_session_t *s, const mi_graph_t *g, const mi_array_t *x, mi_array_t **outs) {
  mi_error_t err = {0};
  if (mi_session_run(s, &x, 1, outs, g->output_count, &err) != MI_OK) die("mi_session_run", &err);
}

static void ref(const mi_graph_t *g, const mi_array_t *x, mi_array_t **outs) {
  mi_error_t err = {0};
  if (mi_ref_run(g, &x, 1, outs, g->output_count, &err) != MI_OK) die("mi_ref_run", &err);
}

#define N 2
#define C 4
#define H 3
#define W 5
#define NUMEL (N * C * H * W)

static int32_t add_codes(mi_graph_t *g, const char *name, int32_t dtype, int32_t rank,
                         const int64_t *dims, const void *data, size_t bytes) {
  int32_t t = mi_graph_add_tensor(g, name, dtype, rank, dims);
  REQUIRE(t >= 0 && mi_graph_set_data(g, t, data, bytes) == MI_OK);
  return t;
}

/* x -> Q -> codes -> DQ -> float, three ways: INT8 per tensor with zero point -3 (rank-0 scale
 * 0.5, so x.25/x.75 inputs land on exact ties), UINT8 per axis 1 with zero points at both ends of
 * the range, and UINT8 without a zero point (scale 0.1). Every Q and DQ result is an output. */
static mi_graph_t *qdq_graph(void) {
  static const int64_t xd[4] = {N, C, H, W}, cd[1] = {C}, one[1] = {1};
  static const float s1 = 0.5f, s2[C] = {0.25f, 0.1f, 0.125f, 1.0f}, s3[1] = {0.1f};
  static const int8_t z1 = -3;
  static const uint8_t z2[C] = {131, 0, 255, 128};
  mi_graph_t *g = mi_graph_create("qdq");
  mi_error_t err = {0};
  int32_t x, ts1, tz1, ts2, tz2, ts3, c[3], d[3], n;
  REQUIRE(g != NULL);
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  REQUIRE(x >= 0 && mi_graph_add_input(g, x) == MI_OK);
  ts1 = mi_graph_add_const_f32(g, "s1", 0, one, &s1);
  tz1 = add_codes(g, "z1", MI_DTYPE_INT8, 0, one, &z1, 1);
  ts2 = mi_graph_add_const_f32(g, "s2", 1, cd, s2);
  tz2 = add_codes(g, "z2", MI_DTYPE_UINT8, 1, cd, z2, C);
  ts3 = mi_graph_add_const_f32(g, "s3", 1, one, s3);
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i + 1);
    c[i] = mi_graph_add_tensor(g, name, i == 0 ? MI_DTYPE_INT8 : MI_DTYPE_UINT8, 4, xd);
    snprintf(name, sizeof name, "d%d", i + 1);
    d[i] = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, 4, xd);
    REQUIRE(c[i] >= 0 && d[i] >= 0);
  }
  {
    int32_t q1[3] = {x, ts1, tz1}, dq1[3] = {c[0], ts1, tz1};
    int32_t q2[3] = {x, ts2, tz2}, dq2[3] = {c[1], ts2, tz2};
    int32_t q3[2] = {x, ts3}, dq3[2] = {c[2], ts3};
    REQUIRE(mi_graph_add_node(g, "QuantizeLinear", "q1", 3, q1, 1, &c[0]) >= 0);
    REQUIRE(mi_graph_add_node(g, "DequantizeLinear", "dq1", 3, dq1, 1, &d[0]) >= 0);
    n = mi_graph_add_node(g, "QuantizeLinear", "q2", 3, q2, 1, &c[1]);
    REQUIRE(n >= 0 && mi_node_set_int(g, n, "axis", 1) == MI_OK);
    n = mi_graph_add_node(g, "DequantizeLinear", "dq2", 3, dq2, 1, &d[1]);
    REQUIRE(n >= 0 && mi_node_set_int(g, n, "axis", 1) == MI_OK);
    REQUIRE(mi_graph_add_node(g, "QuantizeLinear", "q3", 2, q3, 1, &c[2]) >= 0);
    REQUIRE(mi_graph_add_node(g, "DequantizeLinear", "dq3", 2, dq3, 1, &d[2]) >= 0);
  }
  for (int i = 0; i < 3; i++)
    REQUIRE(mi_graph_add_output(g, c[i]) == MI_OK && mi_graph_add_output(g, d[i]) == MI_OK);
  if (mi_graph_infer_shapes(g, &err) != MI_OK) die("infer shapes", &err);
  return g;
}

/* Ties for every scale used (k + 0.5 steps of 0.5, 0.25, 0.125 and 1), values far outside the
 * codes' range, and random values in between. The first five are checked by hand below. */
static void fill_input(mi_array_t *a) {
  static const float fixed[5] = {1.25f, 1.75f, -1.25f, 1000.0f, -1000.0f};
  static const float steps[4] = {0.5f, 0.25f, 0.125f, 1.0f};
  float *x = a->data;
  mi_array_fill_random(a, 17);
  for (int64_t i = 0; i < NUMEL; i++) {
    int64_t k = (i / 7) % 41 - 20;
    if (i < 5) x[i] = fixed[i];
    else if (i % 7 < 4)
      x[i] = ((float)k + 0.5f) * steps[i % 7]; /* a tie at that step */
    else if (i % 7 == 4)
      x[i] = (i % 2 ? 1.0f : -1.0f) * (300.0f + (float)i); /* saturates */
    else
      x[i] *= 40.0f;
  }
}

static void standalone(mi_plugin_t *npu) {
  mi_graph_t *g = qdq_graph();
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 4, (const int64_t[4]){N, C, H, W});
  mi_array_t *got[6] = {0}, *want[6] = {0};
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  int64_t ties = 0, sat = 0;
  uint64_t ns = 0;
  REQUIRE(x != NULL);
  fill_input(x);
  for (int64_t i = 0; i < NUMEL; i++) {
    /* exact ties of q1 (scale 0.5) and of q2 (its channel's scale) */
    static const double s2[C] = {0.25, 0.1f, 0.125, 1.0};
    double v = (double)((const float *)x->data)[i], a = v / 0.5, b = v / s2[(i / (H * W)) % C];
    ties += (fabs(a - floor(a)) == 0.5) + (fabs(b - floor(b)) == 0.5);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 0; /* every Q and DQ must be a device kernel */
  if (mi_session_create(g, npu, 0, &o, &s, &err) != MI_OK) die("session (no fallback)", &err);
  REQUIRE(mi_session_fallback_count(s) == 0);
  REQUIRE(mi_session_kernel_count(s) == 6);
  run(s, g, x, got);
  ref(g, x, want);
  for (int i = 0; i < 6; i++) {
    REQUIRE(got[i]->dtype == want[i]->dtype && got[i]->nbytes == want[i]->nbytes);
    if (memcmp(got[i]->data, want[i]->data, got[i]->nbytes) != 0) {
      for (size_t b = 0; b < got[i]->nbytes; b++)
        if (((const uint8_t *)got[i]->data)[b] != ((const uint8_t *)want[i]->data)[b]) {
          fprintf(stderr, "output %d (%s) differs from the reference at byte %zu\n", i,
                  g->tensors[g->outputs[i]].name, b);
          break;
        }
      exit(1);
    }
  }
  {
    /* ONNX by hand: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2 (half to even), then + zero point -3 and
     * saturation to [-128, 127] */
    const int8_t *c1 = got[0]->data;
    const uint8_t *c3 = got[4]->data;
    REQUIRE(c1[0] == -1 && c1[1] == 1 && c1[2] == -5 && c1[3] == 127 && c1[4] == -128);
    REQUIRE(c3[3] == 255 && c3[4] == 0); /* UINT8 without a zero point saturates at 0 and 255 */
    for (int64_t i = 0; i < NUMEL; i++) sat += c1[i] == 127 || c1[i] == -128;
  }
  REQUIRE(ties > 20 && sat > 10);
  REQUIRE(mi_session_device_time(s, &ns) == 1 && ns > 0);
  printf(
      "standalone Q/DQ: 6 npu-stub kernels, 0 host nodes, %lld ties and %lld saturated "
      "codes, all 6 outputs bit-identical to the reference; device time %llu ns\n",
      (long long)ties, (long long)sat, (unsigned long long)ns);
  for (int i = 0; i < 6; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(want[i]);
  }
  mi_session_destroy(s);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

static void quantized_model(mi_plugin_t *npu, const char *family, const char *args) {
  mi_graph_t *g = npu_zoo_model(g_dir, family, args), *q = npu_quantize_int8(g);
  const mi_tensor_t *xt = &q->tensors[q->inputs[0]];
  mi_array_t *x = mi_array_create(xt->dtype, xt->rank, xt->dims), *got[1] = {0}, *want[1] = {0};
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  int32_t nq = 0, ndq = 0, lowered = 0, conv = 0;
  double d;
  REQUIRE(x != NULL);
  mi_array_fill_random(x, 23);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1; /* to name any node that falls back */
  if (mi_session_create(q, npu, 0, &o, &s, &err) != MI_OK) die(family, &err);
  for (int32_t i = 0; i < q->node_count; i++) {
    nq += strcmp(q->nodes[i].op_type, "QuantizeLinear") == 0;
    ndq += strcmp(q->nodes[i].op_type, "DequantizeLinear") == 0;
  }
  for (int32_t i = 0; i < mi_session_fallback_count(s); i++)
    fprintf(stderr, "%s: host fallback node %s\n", family, mi_session_fallback_node(s, i));
  REQUIRE(nq > 0 && ndq > 0);
  REQUIRE(mi_session_fallback_count(s) == 0);
  /* the quantized layers are still lowered with their Q/DQ (one kernel of several nodes each);
   * only the Q/DQ left over became conversion kernels */
  for (int32_t k = 0; k < mi_session_kernel_count(s); k++) {
    const int32_t *nodes;
    int32_t n = mi_session_kernel_nodes(s, k, &nodes);
    lowered += n > 1 && strcmp(q->nodes[nodes[n - 1]].op_type, "QuantizeLinear") == 0;
    conv += n == 1 && (strcmp(q->nodes[nodes[0]].op_type, "QuantizeLinear") == 0 ||
                       strcmp(q->nodes[nodes[0]].op_type, "DequantizeLinear") == 0);
  }
  REQUIRE(lowered > 0 && conv > 0);
  run(s, q, x, got);
  ref(q, x, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf(
      "%s with INT8 activations: %d nodes (%d Q, %d DQ), %d npu-stub kernels (%d lowered "
      "INT8 layers, %d Q/DQ conversion kernels), 0 host nodes, rel L2 vs reference %.2e\n",
      family, q->node_count, nq, ndq, mi_session_kernel_count(s), lowered, conv, d);
  /* the bound of the quantized sessions in test_npu_quant.c: float ops between INT8 layers run
   * in FP16 on the device, so a code may land one step off */
  REQUIRE(d < 5e-2);
  mi_array_destroy(got[0]);
  mi_array_destroy(want[0]);
  mi_session_destroy(s);
  mi_array_destroy(x);
  mi_graph_destroy(q);
  mi_graph_destroy(g);
}

static npu_t p;
static int p_open;

static void setup(void) {
  mi_error_t err;
  snprintf(g_dir, sizeof g_dir, "/tmp/test_npu_qdq_ops.XXXXXX");
  REQUIRE(mkdtemp(g_dir) != NULL);
  unsetenv("MI_NPU_DEVICES");
  unsetenv("MI_NPU_FAULT");
  if (npu_open(&p, NULL, &err) != MI_OK) die("npu-stub create", &err);
  p_open = 1;
}

static void teardown(void) {
  if (p_open) npu_close(&p);
  REQUIRE(tu_rmtree(g_dir) == 0);
}

static void standalone_ops(void) {
  standalone(p.plugin);
}

static void quantized_models(void) {
  quantized_model(p.plugin, "mlp", "--width 0.5 --depth 3 --resolution 12");
  quantized_model(p.plugin, "resnet", "--width 0.5 --depth 4 --resolution 32");
  quantized_model(p.plugin, "kws", "--width 0.5 --depth 2 --resolution 31");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(standalone_ops),
    TU_CASE(quantized_models),
};

TU_MAIN(setup, teardown)
