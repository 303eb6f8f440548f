/* ocl_run.c - runs a prepared kernel: binds the caller's buffers, enqueues every launch with a
 * profiling event, waits, and sums the device time from the events; or (ABI 1.3) leaves the
 * launches on the in-order queue for device_sync, one clFinish for a run's kernels. */
#include <stdio.h>
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

static int32_t check_io(const mi_kernel_t *k, mi_buffer_t *const *inputs, int32_t input_count,
                        mi_buffer_t *const *outputs, int32_t output_count, const char *call,
                        mi_error_t *err) {
  int i;
  if (input_count != k->n_in || output_count != k->n_out)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "%s: %d inputs / %d outputs given, kernel takes %d / %d", call,
                         (int)input_count, (int)output_count, k->n_in, k->n_out);
  for (i = 0; i < input_count + output_count; i++) {
    const mi_buffer_t *b = i < input_count ? inputs[i] : outputs[i - input_count];
    uint64_t need = i < input_count ? k->in_bytes[i] : k->out_bytes[i - input_count];
    if (!b || b->device != k->device || b->bytes < need)
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                           "%s: buffer %d is NULL, on another device, or smaller than "
                           "%llu bytes",
                           call, (int)i, (unsigned long long)need);
  }
  return MI_OK;
}

/* Enqueues every launch of k, each with a profiling event in ev (k->nl at most; *nev of them). */
static int32_t launch(const mi_kernel_t *k, mi_buffer_t *const *inputs,
                      mi_buffer_t *const *outputs, cl_event *ev, int *nev, mi_error_t *err) {
  int i;
  cl_int rc;
  *nev = 0;
  for (i = 0; i < k->nl; i++) {
    const ocl_launch_t *l = &k->launches[i];
    int32_t st;
    if (!l->k) {
      cl_mem src = arg_mem(k, &l->args[0], inputs, outputs);
      cl_mem dst = arg_mem(k, &l->args[1], inputs, outputs);
      if ((src == dst && l->src_off == l->dst_off) || l->copy_bytes == 0) continue;
      rc = clEnqueueCopyBuffer(k->dev->queue, src, dst, l->src_off, l->dst_off, l->copy_bytes, 0,
                               NULL, &ev[*nev]);
      if (rc != CL_SUCCESS) return mi__ocl_fail(err, "clEnqueueCopyBuffer", rc);
      (*nev)++;
      continue;
    }
    /* Argument values are captured at enqueue, so the next kernel may set them again. */
    if ((st = set_args(k, l, inputs, outputs, err)) != MI_OK) return st;
    rc = clEnqueueNDRangeKernel(k->dev->queue, l->k, l->dim, NULL, l->gws,
                                l->has_lws ? l->lws : NULL, 0, NULL, &ev[*nev]);
    if (rc != CL_SUCCESS) return mi__ocl_fail(err, "clEnqueueNDRangeKernel", rc);
    (*nev)++;
  }
  return MI_OK;
}

/* After clFinish: each event's status (the first failure into err, with the kernel's node when
 * `ks` is given) and its device time, summed into *total; every event is released. */
static int32_t collect(cl_event *ev, const mi_kernel_t *const *ks, int nev, int32_t st,
                       uint64_t *total, mi_error_t *err) {
  int i;
  *total = 0;
  for (i = 0; i < nev; i++) {
    cl_ulong t0 = 0, t1 = 0;
    cl_int status = CL_COMPLETE, rc;
    clGetEventInfo(ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (st == MI_OK && status < 0) {
      st = mi__ocl_fail(err, "kernel execution", status);
      if (ks && ks[i]->node[0]) {
        char why[MI_ERROR_MESSAGE_SIZE];
        snprintf(why, sizeof why, "%s", err ? err->message : "");
        mi_sdk_errorf(err, st, "kernel of node '%s': %s", ks[i]->node, why);
      }
    }
    if (st == MI_OK) {
      rc = clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
      if (rc == CL_SUCCESS)
        rc = clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
      if (rc != CL_SUCCESS) st = mi__ocl_fail(err, "clGetEventProfilingInfo", rc);
      else if (t1 > t0)
        *total += t1 - t0;
    }
    clReleaseEvent(ev[i]);
  }
  return st;
}

static void account(ocl_device_t *d, uint64_t total, int nev, mi_run_stats_t *stats) {
  d->run_ns_total += total;
  if (nev > 0) d->has_run = 1;
  if (stats && MI_HAS_FIELD(stats, mi_run_stats_t, device_time_ns) && nev > 0) {
    stats->has_device_time = 1;
    stats->device_time_ns = total;
  }
}

int32_t mi__ocl_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                           int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                           mi_run_stats_t *stats, mi_error_t *err) {
  cl_event ev[OCL_MAX_LAUNCHES];
  int nev = 0;
  int32_t st;
  uint64_t total = 0;
  cl_int rc;
  if (!ctx || !k || (input_count > 0 && !inputs) || (output_count > 0 && !outputs))
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "kernel_run: NULL argument");
  if ((st = check_io(k, inputs, input_count, outputs, output_count, "kernel_run", err)) != MI_OK)
    return st;
  st = launch(k, inputs, outputs, ev, &nev, err);
  rc = clFinish(k->dev->queue);
  if (st == MI_OK && rc != CL_SUCCESS) st = mi__ocl_fail(err, "clFinish", rc);
  st = collect(ev, NULL, nev, st, &total, err);
  if (st == MI_OK) account(k->dev, total, nev, stats);
  return st;
}

int32_t mi__ocl_kernel_enqueue(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                               int32_t input_count, mi_buffer_t *const *outputs,
                               int32_t output_count, mi_error_t *err) {
  ocl_device_t *d;
  int nev = 0, i;
  int32_t st;
  if (!ctx || !k || (input_count > 0 && !inputs) || (output_count > 0 && !outputs))
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "kernel_enqueue: NULL argument");
  if ((st = check_io(k, inputs, input_count, outputs, output_count, "kernel_enqueue", err)) !=
      MI_OK)
    return st;
  d = k->dev;
  if (d->npend + k->nl > d->cap_pend) {
    int cap = d->cap_pend ? d->cap_pend : 256;
    cl_event *ev;
    const mi_kernel_t **ks;
    while (cap < d->npend + k->nl) cap *= 2;
    if (!(ev = realloc(d->pend_ev, (size_t)cap * sizeof *ev)))
      return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    d->pend_ev = ev;
    if (!(ks = realloc((void *)d->pend_k, (size_t)cap * sizeof *ks)))
      return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    d->pend_k = ks;
    d->cap_pend = cap;
  }
  /* The launches that made it onto the queue stay pending even when a later one failed: the
   * sync waits for them and releases their events. */
  st = launch(k, inputs, outputs, d->pend_ev + d->npend, &nev, err);
  for (i = 0; i < nev; i++) d->pend_k[d->npend + i] = k;
  d->npend += nev;
  return st;
}

int32_t mi__ocl_device_sync(mi_plugin_ctx_t *ctx, uint32_t device, mi_run_stats_t *stats,
                            mi_error_t *err) {
  ocl_device_t *d;
  uint64_t total = 0;
  int32_t st = MI_OK;
  int nev;
  cl_int rc;
  if (!ctx || device >= ctx->sdk.device_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "device_sync: no device %u",
                         (unsigned)device);
  d = &ctx->devs[device];
  rc = clFinish(d->queue);
  if (rc != CL_SUCCESS) st = mi__ocl_fail(err, "clFinish", rc);
  nev = d->npend;
  d->npend = 0;
  st = collect(d->pend_ev, d->pend_k, nev, st, &total, err);
  if (st == MI_OK) account(d, total, nev, stats);
  return st;
}

void mi__ocl_pending_drop(ocl_device_t *d) {
  uint64_t total;
  if (d->queue && d->npend) clFinish(d->queue);
  (void)collect(d->pend_ev, NULL, d->npend, MI_ERR_DEVICE, &total, NULL);
  d->npend = 0;
  free(d->pend_ev);
  free((void *)d->pend_k);
  d->pend_ev = NULL;
  d->pend_k = NULL;
  d->cap_pend = 0;
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
