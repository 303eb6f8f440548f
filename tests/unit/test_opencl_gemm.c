/* test_opencl_gemm.c - GEMM/MatMul variants of the OpenCL plugin against a naive C GEMM, on sizes
 * that are not multiples of the tiles, with Gemm attributes, batching and a fused epilogue. */
#include "test_opencl_common.h"

#define M 37
#define K 29
#define N 43

static float A[2 * 3 * M * K], B[K * N], BT[N * K], BIAS[N], Y[2 * 3 * M * N], R[2 * 3 * M * N];

static void matmul_variant(ocl_t *o, const char *variant, int64_t wgx, int64_t wgy, int64_t tm,
                           int64_t tn, int64_t vw, int64_t local) {
  kd_t k;
  int64_t da[2] = {M, K}, db[2] = {K, N}, dy[2] = {M, N};
  int in[2];
  const float *ins[1] = {A};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  mi_run_stats_t st;
  double e, t0 = ocl_counter(o, "kernel_time"), t1;
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 2, da, NULL);
  in[1] = kd_tensor(&k, 2, db, B);
  k.outs[k.nout++] = kd_tensor(&k, 2, dy, NULL);
  kd_node(&k, "MatMul", 2, in, k.outs[0]);
  k.ins[k.nin++] = in[0];
  kd_knob(&k, "wg_x", wgx);
  kd_knob(&k, "wg_y", wgy);
  if (tm) kd_knob(&k, "tile_m", tm);
  if (tn) kd_knob(&k, "tile_n", tn);
  if (vw) kd_knob(&k, "vector_width", vw);
  if (local >= 0) kd_knob(&k, "use_local_memory", local);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  memset(Y, 0, sizeof Y);
  if (ocl_run(o, kd_finish(&k, variant), ins, outs, &st, &err) != MI_OK)
    fprintf(stderr, "%s: %s\n", variant, err.message);
  REQUIRE(err.code == 0);
  ref_gemm(A, B, R, M, N, K);
  e = tu_rel_l2(Y, R, M * N);
  fprintf(stderr, "%-16s wg %lldx%lld tile %lldx%lld vw %lld: rel L2 %.3g, device %llu ns\n",
          variant, (long long)wgx, (long long)wgy, (long long)tm, (long long)tn, (long long)vw, e,
          (unsigned long long)st.device_time_ns);
  REQUIRE(e < 1e-5);
  REQUIRE(st.has_device_time == 1 && st.device_time_ns > 0);
  /* kernel_time is cumulative since create (TIMER counters are, by the ABI): this run added */
  t1 = ocl_counter(o, "kernel_time");
  REQUIRE(t1 >= (t0 > 0 ? t0 : 0) + (double)st.device_time_ns - 0.5);
}

/* Gemm(A, B^T, C) alpha=0.5 beta=2 then Relu: the transposed constant B, the bias and the
 * fused activation together. */
static void gemm_attrs(ocl_t *o) {
  kd_t k;
  int64_t da[2] = {M, K}, db[2] = {N, K}, dc[1] = {N}, dy[2] = {M, N};
  int in[3], y0, i, j;
  const float *ins[1] = {A};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  mi_node_desc_t *g;
  for (i = 0; i < N; i++)
    for (j = 0; j < K; j++) BT[i * K + j] = B[j * N + i];
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 2, da, NULL);
  in[1] = kd_tensor(&k, 2, db, BT);
  in[2] = kd_tensor(&k, 1, dc, BIAS);
  y0 = kd_tensor(&k, 2, dy, NULL);
  g = kd_node(&k, "Gemm", 3, in, y0);
  kd_attr_int(&k, g, "transB", 1);
  kd_attr_float(&k, g, "alpha", 0.5f);
  kd_attr_float(&k, g, "beta", 2.0f);
  k.outs[k.nout++] = kd_tensor(&k, 2, dy, NULL);
  kd_node(&k, "Relu", 1, &y0, k.outs[0]);
  k.ins[k.nin++] = in[0];
  if (ocl_run(o, kd_finish(&k, "gemm.regblock"), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "gemm: %s\n", err.message);
  REQUIRE(err.code == 0);
  ref_gemm(A, B, R, M, N, K);
  for (i = 0; i < M * N; i++) {
    float v = 0.5f * R[i] + 2.0f * BIAS[i % N];
    R[i] = v > 0 ? v : 0;
  }
  REQUIRE(tu_rel_l2(Y, R, M * N) < 1e-5);
}

/* MatMul [2,3,M,K] x [K,N]: the batch runs in the third grid dimension, B broadcast. */
static void batched(ocl_t *o, const char *variant) {
  kd_t k;
  int64_t da[4] = {2, 3, M, K}, db[2] = {K, N}, dy[4] = {2, 3, M, N};
  int in[2], b;
  const float *ins[1] = {A};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 4, da, NULL);
  in[1] = kd_tensor(&k, 2, db, B);
  k.outs[k.nout++] = kd_tensor(&k, 4, dy, NULL);
  kd_node(&k, "MatMul", 2, in, k.outs[0]);
  k.ins[k.nin++] = in[0];
  if (ocl_run(o, kd_finish(&k, variant), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "batched: %s\n", err.message);
  REQUIRE(err.code == 0);
  for (b = 0; b < 6; b++) ref_gemm(A + b * M * K, B, R + b * M * N, M, N, K);
  REQUIRE(tu_rel_l2(Y, R, 6 * M * N) < 1e-5);
}

static ocl_t o;

static void setup(void) {
  memset(&o, 0, sizeof o);
  ocl_env(&o);
  ocl_open_or_skip(&o);
  fill(A, sizeof A / 4, 1);
  fill(B, sizeof B / 4, 2);
  fill(BIAS, N, 3);
}

static void teardown(void) {
  ocl_close(&o);
  ocl_rm_cache(&o);
}

static void matmul_variants(void) {
  matmul_variant(&o, "matmul.naive", 16, 4, 0, 0, 0, -1);
  matmul_variant(&o, "matmul.tiled", 8, 8, 32, 32, 0, 1);
  matmul_variant(&o, "matmul.tiled", 8, 4, 16, 32, 0, 0);
  matmul_variant(&o, "matmul.regblock", 8, 8, 32, 64, 4, -1);
  matmul_variant(&o, "matmul.regblock", 4, 8, 16, 16, 2, -1);
}

static void gemm_attrs_case(void) {
  gemm_attrs(&o);
}

static void batched_tiled(void) {
  batched(&o, "matmul.tiled");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(matmul_variants),
    TU_CASE(gemm_attrs_case),
    TU_CASE(batched_tiled),
};

TU_MAIN(setup, teardown)
