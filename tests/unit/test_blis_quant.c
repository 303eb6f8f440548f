/* test_blis_quant.c - blis-cpu QuantizeLinear -> DequantizeLinear (INT8, per-tensor and per-axis)
 * against an integer reference written here; the INT8 tensor between them stays in the kernel. */
#include "test_blis_util.h"

/* Round half to even, done with integers on the exact quotient's floor so that it does not
 * depend on the library's rounding mode: q = floor(v); ties go to the even neighbour. */
static int32_t ref_round(float v) {
  float f = floorf(v), r = v - f;
  int32_t q = (int32_t)f;
  if (r > 0.5f || (r == 0.5f && (q & 1))) q++;
  return q;
}

static void qdq_case(tb_plugin_t *p, const char *name, int per_axis) {
  int64_t xd[4] = {2, 3, 4, 5}, cd = 3, n = 2 * 3 * 4 * 5, i;
  float x[120], got[120], want[120], scale[3] = {0.5f, 0.25f, 0.0625f}, one = 0.5f;
  int8_t zp[3] = {3, -7, 0}, zp1 = 3;
  const float *ins[1] = {x};
  tb_t b;
  int tx, ts, tz, tq, ty, node;
  mi_error_t err = {0, ""};
  int32_t rc;
  tb_fill(x, n, 9);
  for (i = 0; i < n; i++) x[i] *= 80.f; /* saturates at both ends for the small scales */
  x[0] = 0.25f;
  x[1] = 0.75f;
  x[2] = -0.25f; /* exact ties at scale 0.5 */
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, 4, xd, NULL);
  ts = tb_tensor(&b, 1, &cd, per_axis ? scale : &one);
  tz = tb_tensor(&b, 1, &cd, NULL);
  b.t[tz].dtype = MI_DTYPE_INT8;
  b.t[tz].data = per_axis ? (const void *)zp : (const void *)&zp1;
  if (!per_axis) b.t[ts].dims[0] = b.t[tz].dims[0] = 1;
  b.t[ts].data_bytes = (uint64_t)b.t[ts].dims[0] * 4u;
  b.t[tz].data_bytes = (uint64_t)b.t[tz].dims[0];
  tq = tb_tensor(&b, 4, xd, NULL);
  b.t[tq].dtype = MI_DTYPE_INT8;
  ty = tb_tensor(&b, 4, xd, NULL);
  {
    int in[3] = {tx, ts, tz}, in2[3] = {tq, ts, tz};
    node = tb_node(&b, "QuantizeLinear", 13, 3, in, tq);
    tb_attr_i(&b, node, "axis", 1);
    node = tb_node(&b, "DequantizeLinear", 13, 3, in2, ty);
    tb_attr_i(&b, node, "axis", 1);
  }
  tb_finish(&b, ty);
  for (i = 0; i < n; i++) {
    int64_t c = per_axis ? (i / 20) % 3 : 0;
    float s = per_axis ? scale[c] : one;
    int32_t z = per_axis ? zp[c] : zp1, q = ref_round(x[i] / s) + z;
    q = q < -128 ? -128 : q > 127 ? 127
                                  : q;
    want[i] = (float)(q - z) * s;
  }
  rc = tb_run(p, &b, NULL, NULL, 0, ins, got, &err);
  CHECK(rc == MI_OK, "%s: %s", name, err.message);
  if (rc == MI_OK) {
    CHECK(memcmp(got, want, sizeof got) == 0, "%s: differs from the integer reference", name);
    CHECK(got[0] == 0.f && got[1] == 1.f && got[2] == 0.f, "%s: ties to even (%g %g %g)", name, got[0], got[1], got[2]);
  }
}

/* An INT8 runtime tensor read by a float op is refused, not misread. */
static void int8_into_relu_refused(tb_plugin_t *p) {
  int64_t d[2] = {4, 4};
  float x[16] = {0}, y[16];
  const float *ins[1] = {x};
  tb_t b;
  int t0, t1;
  mi_error_t err = {0, ""};
  memset(&b, 0, sizeof b);
  t0 = tb_tensor(&b, 2, d, NULL);
  b.t[t0].dtype = MI_DTYPE_INT8;
  t1 = tb_tensor(&b, 2, d, NULL);
  tb_node(&b, "Relu", 14, 1, &t0, t1);
  tb_finish(&b, t1);
  CHECK(tb_run(p, &b, NULL, NULL, 0, ins, y, &err) == MI_ERR_UNSUPPORTED, "int8 Relu refused: %s", err.message);
}

/* Inputs whose float quotient x / s lands on a tie that the exact quotient misses by a few ulps:
 * QuantizeLinear must round the exact quotient (the reference divides in double, ref_quant.c),
 * so a float division's ties to even give a code one off for about half of them. The codes go
 * through DequantizeLinear (exact) to compare. 120 elements, a SIMD row plus its tail. */
static void quotient_ties_case(tb_plugin_t *p) {
  enum { N = 120 };
  int64_t d = N, one_d = 1, i, k, found = 0, float_off = 0;
  float x[N], got[N], want[N], s = 0.037f;
  int8_t z = -128; /* codes -128..127 hold quotients 0..255: no saturation */
  const float *ins[1] = {x};
  tb_t b;
  int tx, ts, tz, tq, ty;
  mi_error_t err = {0, ""};
  for (k = 0; k < 81 * 250 && found < N; k++) { /* x next to (m + 0.5) * s, m = k / 81 < 250 */
    float base = (float)((double)(k / 81) + 0.5) * s, v;
    uint32_t bits;
    memcpy(&bits, &base, 4);
    bits += (uint32_t)(k % 81) - 40u;
    memcpy(&v, &bits, 4);
    if (v / s != floorf(v / s) + 0.5f || (double)v / (double)s == floor((double)v / (double)s) + 0.5) continue;
    x[found] = v;
    found++;
  }
  REQUIRE(found == N);
  memset(&b, 0, sizeof b);
  tx = tb_tensor(&b, 1, &d, NULL);
  ts = tb_tensor(&b, 1, &one_d, &s);
  tz = tb_tensor(&b, 1, &one_d, NULL);
  b.t[tz].dtype = MI_DTYPE_INT8;
  b.t[tz].data = &z;
  b.t[ts].data_bytes = 4;
  b.t[tz].data_bytes = 1;
  tq = tb_tensor(&b, 1, &d, NULL);
  b.t[tq].dtype = MI_DTYPE_INT8;
  ty = tb_tensor(&b, 1, &d, NULL);
  {
    int in[3] = {tx, ts, tz}, in2[3] = {tq, ts, tz};
    tb_node(&b, "QuantizeLinear", 13, 3, in, tq);
    tb_node(&b, "DequantizeLinear", 13, 3, in2, ty);
  }
  tb_finish(&b, ty);
  for (i = 0; i < N; i++) {
    double q = rint((double)x[i] / (double)s) + z;
    want[i] = (float)((q - z) * (double)s);
    float_off += rintf(x[i] / s) + z != q;
  }
  CHECK(float_off > 0, "the inputs do not tell a float quotient from the exact one");
  CHECK(tb_run(p, &b, NULL, NULL, 0, ins, got, &err) == MI_OK, "ties: %s", err.message);
  for (i = 0, k = 0; i < N; i++) k += got[i] != want[i];
  CHECK(k == 0, "%lld of %d codes are not the exact quotient's (a float quotient's would miss %lld)", (long long)k, N,
        (long long)float_off);
}

static tb_plugin_t p;

static void setup(void) {
  REQUIRE(tb_load(&p));
}

static void teardown(void) {
  tb_unload(&p);
}

static void qdq(void) {
  qdq_case(&p, "per-tensor", 0);
  qdq_case(&p, "per-axis", 1);
}

static void int8_into_relu(void) {
  int8_into_relu_refused(&p);
}

static void quotient_ties(void) {
  quotient_ties_case(&p);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(qdq),
    TU_CASE(quotient_ties),
    TU_CASE(int8_into_relu),
};

TU_MAIN(setup, teardown)
