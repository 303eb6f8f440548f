/* npu_run.c - kernel_run (numerics, simulated timing, injected faults) and the counters. */
#include "npu_internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t host_bytes(const npu_tensor_t *t) {
  switch (t->dtype) {
  case MI_DTYPE_INT8:
  case MI_DTYPE_UINT8: return (uint64_t)t->numel;
  case MI_DTYPE_FLOAT16: return (uint64_t)t->numel * 2;
  default: return (uint64_t)t->numel * 4;
  }
}

static void load(const mi_kernel_t *k, npu_tensor_t *t, const unsigned char *src) {
  int64_t i;
  if (t->dtype == MI_DTYPE_INT8) {
    memcpy(t->q, src, (size_t)t->numel);
    return;
  }
  if (t->dtype == MI_DTYPE_UINT8) { /* held as INT8 codes u - 128 (npu_prepare.c) */
    for (i = 0; i < t->numel; i++) t->q[i] = (int8_t)(src[i] ^ 0x80u);
    return;
  }
  for (i = 0; i < t->numel; i++) {
    if (t->dtype == MI_DTYPE_FLOAT32) {
      float v;
      memcpy(&v, src + 4 * i, 4);
      /* FLOAT32 tensors execute in FP16, except in a conversion kernel (exact FP32) */
      t->f[i] = k->conv ? v : npu__fp16_round(v);
    } else {
      uint16_t h;
      memcpy(&h, src + 2 * i, 2);
      t->f[i] = mi_sdk_half_to_float(h);
    }
  }
}

static void store(const npu_tensor_t *t, unsigned char *dst, int wrong) {
  int64_t i;
  for (i = 0; i < t->numel; i++) {
    if (t->dtype == MI_DTYPE_INT8 || t->dtype == MI_DTYPE_UINT8) {
      int v = t->q[i];
      /* injected fault: every third value is off by a few codes */
      if (wrong && i % 3 == 0) v = v > 100 ? v - 7 : v + 7;
      dst[i] = (unsigned char)(int8_t)v;
      if (t->dtype == MI_DTYPE_UINT8) dst[i] ^= 0x80u;
    } else {
      float v = t->f[i];
      if (wrong && i % 3 == 0) v = v * 1.25f + 0.5f;
      if (t->dtype == MI_DTYPE_FLOAT32) memcpy(dst + 4 * i, &v, 4);
      else {
        uint16_t h = mi_sdk_float_to_half(v);
        memcpy(dst + 2 * i, &h, 2);
      }
    }
  }
}

int32_t npu__kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                        int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                        mi_run_stats_t *stats, mi_error_t *err) {
  npu_device_t *d;
  npu_cost_t c;
  int32_t i;
  double noise;
  if (!ctx || !k) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: NULL kernel");
  if (input_count != k->input_count || output_count != k->output_count ||
      (input_count && !inputs) || !outputs) {
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: kernel takes %d inputs and %d outputs, got %d and %d",
                         k->input_count, k->output_count, input_count, output_count);
  }
  for (i = 0; i < input_count + output_count; i++) {
    const mi_buffer_t *b = i < input_count ? inputs[i] : outputs[i - input_count];
    const npu_tensor_t *t = &k->t[i < input_count ? k->inputs[i] : k->outputs[i - input_count]];
    if (!b || b->bytes < host_bytes(t)) {
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "npu-stub: %s %d is missing or smaller than its tensor",
                           i < input_count ? "input" : "output",
                           i < input_count ? i : i - input_count);
    }
  }
  if (ctx->fault == NPU_FAULT_CRASH) raise(SIGSEGV);
  if (ctx->fault == NPU_FAULT_HANG)
    for (;;) sleep(1000);
  d = &ctx->dev[k->device];
  for (i = 0; i < input_count; i++) load(k, &k->t[k->inputs[i]], inputs[i]->data);
  for (i = 0; i < k->node_count; i++) {
    const npu_node_t *n = &k->nodes[i];
    if (n->op == NPU_CONV || n->op == NPU_GEMM || n->op == NPU_MATMUL) npu__exec_mac(k, n);
    else
      npu__exec_vec(k, n);
  }
  for (i = 0; i < output_count; i++)
    store(&k->t[k->outputs[i]], outputs[i]->data, ctx->fault == NPU_FAULT_WRONG);
  npu__cost(d, k, &c);
  if (ctx->fault == NPU_FAULT_DRIFT) {
    /* slow drift: +0.5% of latency per run since the instance was created */
    double g = 1.0 + 0.005 * (double)d->runs;
    c.time_s *= g;
    c.energy_j *= g;
  }
  npu__advance(d, &c);
  noise = npu__noise(d);
  if (stats) {
    mi_run_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.has_device_time = 1; /* the simulator's clock: modeled, documented as such */
    s.device_time_ns = (uint64_t)(c.time_s * noise * 1e9 + 0.5);
    s.has_energy = 1;
    s.energy_modeled = 1;
    s.energy_j = c.energy_j * noise;
    if (mi_sdk_fill(stats, &s, sizeof s) != MI_OK)
      return mi_sdk_error(err, MI_ERR_ABI, "npu-stub: run stats struct too small");
  }
  return MI_OK;
}

/* ---------------------------------------------------------------- counters (described in
 * npu_knobs.c, in this order) */

enum { C_TIME,
       C_ENERGY,
       C_POWER,
       C_FREQ,
       C_TEMP,
       C_CLOCK,
       C_COUNT };

int32_t npu__counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  const npu_device_t *d;
  struct timespec ts;
  int32_t rc = mi_sdk_counter_sample(ctx, device, index, out, &s, err);
  if (rc != MI_OK) return rc;
  d = &ctx->dev[device];
  switch (index) {
  case C_TIME:
    s.has_value = d->has_last;
    s.value = d->last_time_s * 1e9;
    break;
  case C_ENERGY:
    s.has_value = d->has_last;
    s.value = (double)d->energy_pj * 1e-12;
    break;
  case C_POWER:
    s.has_value = d->has_last;
    s.value = d->last_power_w;
    break;
  case C_FREQ: s.value = npu__effective_mhz(d, d->level); break;
  case C_TEMP: s.value = d->temp_c; break;
  default:
    s.has_value = d->has_last;
    s.value = d->sim_time_s;
    break;
  }
  if (!s.has_value) s.value = 0;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
    s.timestamp_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  return mi_sdk_fill(out, &s, sizeof s);
}
