/* test_opencl_common.h - shared helpers of the OpenCL plugin tests: loading the plugin, building
 * single-op kernel descriptions, running them, and naive reference kernels. */
#ifndef TEST_OPENCL_COMMON_H
#define TEST_OPENCL_COMMON_H

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

/* The OpenCL tests build against the plugin SDK alone (no host library). */
#define TU_SDK_ONLY 1
/* test_util.h first: it defines DRIVE_REQUIRE as its REQUIRE for the drive header. */
#include "test_util.h"

#include "drive_opencl.h"

/* ocl_open, or the whole test skipped (exit 77) when the machine has no OpenCL device. A plugin
 * that does not load or create is a failure (ocl_open's checks), never a skip. */
static inline void ocl_open_or_skip(ocl_t *o) {
  if (!tu_plugin_built("opencl")) TU_SKIP("opencl was not built here");
  if (ocl_open(o)) return;
  ocl_close(o);
  ocl_rm_cache(o);
  TU_SKIP("no OpenCL device");
}

/* Prepares and runs desc with host arrays; returns the status of prepare or run. */
static inline int32_t ocl_run(ocl_t *o, const mi_kernel_desc_t *d, const float *const *in,
                              float *const *out, mi_run_stats_t *stats, mi_error_t *err) {
  mi_kernel_t *k = NULL;
  mi_buffer_t *bi[8] = {0}, *bo[4] = {0};
  int32_t st = o->api->kernel_prepare(o->ctx, 0, d, &k, err);
  int i;
  if (st != MI_OK) {
    REQUIRE(k == NULL);
    return st;
  }
  for (i = 0; i < d->input_count; i++) {
    uint64_t n = (uint64_t)mi_sdk_numel(d->tensors[d->inputs[i]]) * 4;
    REQUIRE(o->api->buffer_alloc(o->ctx, 0, n, &bi[i], err) == MI_OK);
    REQUIRE(o->api->buffer_write(o->ctx, bi[i], 0, in[i], n, err) == MI_OK);
  }
  for (i = 0; i < d->output_count; i++) {
    uint64_t n = (uint64_t)mi_sdk_numel(d->tensors[d->outputs[i]]) * 4;
    REQUIRE(o->api->buffer_alloc(o->ctx, 0, n, &bo[i], err) == MI_OK);
  }
  st = o->api->kernel_run(o->ctx, k, bi, d->input_count, bo, d->output_count, stats, err);
  for (i = 0; i < d->output_count && st == MI_OK; i++) {
    uint64_t n = (uint64_t)mi_sdk_numel(d->tensors[d->outputs[i]]) * 4;
    REQUIRE(o->api->buffer_read(o->ctx, bo[i], 0, out[i], n, err) == MI_OK);
  }
  for (i = 0; i < d->input_count; i++) o->api->buffer_free(o->ctx, bi[i]);
  for (i = 0; i < d->output_count; i++) o->api->buffer_free(o->ctx, bo[i]);
  o->api->kernel_release(o->ctx, k);
  return st;
}

/* Naive NCHW convolution, the oracle (double accumulation). */
static inline void ref_conv(const float *x, const float *w, const float *b, float *y, int N, int C,
                            int H, int W, int OC, int KH, int KW, int S, int P, int G, int OH,
                            int OW) {
  int n, oc, oh, ow, ic, kh, kw, Cg = C / G, OCg = OC / G;
  for (n = 0; n < N; n++)
    for (oc = 0; oc < OC; oc++)
      for (oh = 0; oh < OH; oh++)
        for (ow = 0; ow < OW; ow++) {
          double acc = b ? b[oc] : 0.0;
          int g = oc / OCg;
          for (ic = 0; ic < Cg; ic++)
            for (kh = 0; kh < KH; kh++)
              for (kw = 0; kw < KW; kw++) {
                int ih = oh * S - P + kh, iw = ow * S - P + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += (double)x[((n * C + g * Cg + ic) * H + ih) * W + iw] *
                       w[((oc * Cg + ic) * KH + kh) * KW + kw];
              }
          y[((n * OC + oc) * OH + oh) * OW + ow] = (float)acc;
        }
}

static inline void ref_gemm(const float *a, const float *b, float *c, int M, int N, int K) {
  int i, j, k;
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      double acc = 0;
      for (k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + j];
      c[i * N + j] = (float)acc;
    }
}

#endif
