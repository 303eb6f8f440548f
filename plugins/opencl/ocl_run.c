/* ocl_run.c - runs a prepared kernel: binds the caller's buffers, enqueues every launch with a
 * profiling event, waits, and sums the device time from the events. */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

static cl_mem arg_mem(const mi_kernel_t *k, const ocl_arg_t *a, mi_buffer_t *const *in,
                      mi_buffer_t *const *out) {
  switch (a->kind) {
  case ARG_IN: return in[a->index]->mem;
  case ARG_OUT: return out[a->index]->mem;
  case ARG_BUF: return k->bufs[a->index];
  default: return k->dev->dummy;
  }
}

static int32_t set_args(const mi_kernel_t *k, const ocl_launch_t *l, mi_buffer_t *const *in,
                        mi_buffer_t *const *out, mi_error_t *err) {
  int i;
  for (i = 0; i < l->nargs; i++) {
    const ocl_arg_t *a = &l->args[i];
    cl_int rc;
    if (a->kind == ARG_RAW) {
      rc = clSetKernelArg(l->k, (cl_uint)i, a->size, &a->v);
    } else if (a->kind == ARG_LOCAL) {
      rc = clSetKernelArg(l->k, (cl_uint)i, a->size, NULL);
    } else {
      cl_mem m = arg_mem(k, a, in, out);
      rc = clSetKernelArg(l->k, (cl_uint)i, sizeof m, &m);
    }
    if (rc != CL_SUCCESS) return mi__ocl_fail(err, "clSetKernelArg", rc);
  }
  return MI_OK;
}

int32_t mi__ocl_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                           int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                           mi_run_stats_t *stats, mi_error_t *err) {
  cl_event ev[OCL_MAX_LAUNCHES];
  int nev = 0, i;
  int32_t st = MI_OK;
  uint64_t total = 0;
  cl_int rc;
  if (!ctx || !k || (input_count > 0 && !inputs) || (output_count > 0 && !outputs))
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "kernel_run: NULL argument");
  if (input_count != k->n_in || output_count != k->n_out)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "kernel_run: %d inputs / %d outputs given, kernel takes %d / %d",
                         (int)input_count, (int)output_count, k->n_in, k->n_out);
  for (i = 0; i < input_count + output_count; i++) {
    const mi_buffer_t *b = i < input_count ? inputs[i] : outputs[i - input_count];
    uint64_t need = i < input_count ? k->in_bytes[i] : k->out_bytes[i - input_count];
    if (!b || b->device != k->device || b->bytes < need)
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                           "kernel_run: buffer %d is NULL, on another device, or smaller than "
                           "%llu bytes",
                           (int)i, (unsigned long long)need);
  }
  for (i = 0; i < k->nl; i++) {
    const ocl_launch_t *l = &k->launches[i];
    if (!l->k) {
      cl_mem src = arg_mem(k, &l->args[0], inputs, outputs);
      cl_mem dst = arg_mem(k, &l->args[1], inputs, outputs);
      if ((src == dst && l->src_off == l->dst_off) || l->copy_bytes == 0) continue;
      rc = clEnqueueCopyBuffer(k->dev->queue, src, dst, l->src_off, l->dst_off, l->copy_bytes, 0,
                               NULL, &ev[nev]);
      if (rc != CL_SUCCESS) {
        st = mi__ocl_fail(err, "clEnqueueCopyBuffer", rc);
        break;
      }
      nev++;
      continue;
    }
    if ((st = set_args(k, l, inputs, outputs, err)) != MI_OK) break;
    rc = clEnqueueNDRangeKernel(k->dev->queue, l->k, l->dim, NULL, l->gws,
                                l->has_lws ? l->lws : NULL, 0, NULL, &ev[nev]);
    if (rc != CL_SUCCESS) {
      st = mi__ocl_fail(err, "clEnqueueNDRangeKernel", rc);
      break;
    }
    nev++;
  }
  rc = clFinish(k->dev->queue);
  if (st == MI_OK && rc != CL_SUCCESS) st = mi__ocl_fail(err, "clFinish", rc);
  for (i = 0; i < nev; i++) {
    cl_ulong t0 = 0, t1 = 0;
    cl_int status = CL_COMPLETE;
    clGetEventInfo(ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (st == MI_OK && status < 0) st = mi__ocl_fail(err, "kernel execution", status);
    if (st == MI_OK) {
      rc = clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
      if (rc == CL_SUCCESS)
        rc = clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
      if (rc != CL_SUCCESS) st = mi__ocl_fail(err, "clGetEventProfilingInfo", rc);
      else if (t1 > t0)
        total += t1 - t0;
    }
    clReleaseEvent(ev[i]);
  }
  if (st == MI_OK) {
    k->dev->run_ns_total += total;
    if (nev > 0) k->dev->has_run = 1;
    if (stats && MI_HAS_FIELD(stats, mi_run_stats_t, device_time_ns) && nev > 0) {
      stats->has_device_time = 1;
      stats->device_time_ns = total;
    }
  }
  return st;
}

void mi__ocl_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *k) {
  int i;
  (void)ctx;
  if (!k) return;
  for (i = 0; i < k->nl; i++)
    if (k->launches[i].k) clReleaseKernel(k->launches[i].k);
  for (i = 0; i < k->nb; i++)
    if (k->bufs[i]) clReleaseMemObject(k->bufs[i]);
  free(k);
}
