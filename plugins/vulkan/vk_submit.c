/* vk_submit.c - ABI 1.3 asynchronous kernels: kernel_enqueue records (or keeps) a kernel's
 * command buffer and leaves it for device_sync, which submits a run's kernels in one
 * vkQueueSubmit and waits once, where kernel_run submits and waits per kernel. */
#include <stdlib.h>
#include <string.h>

#include "vk.h"

int32_t mi__vk_flush(vk_device_t *d, mi_error_t *err) {
  int32_t st = MI_OK;
  int i, n = d->npend;
  uint64_t now;
  if (n == 0) return MI_OK;
  st = mi__vk_submit_wait(d, d->pend_cmd, (uint32_t)n, err);
  if (st != MI_OK) {
    /* No fence names the kernel that failed: the batch's first and last do. */
    char why[MI_ERROR_MESSAGE_SIZE];
    memcpy(why, err ? err->message : "", err ? sizeof why : 1);
    why[sizeof why - 1] = '\0';
    if (err)
      mi_sdk_errorf(err, st, "vulkan: a batch of %d kernel(s) (nodes '%s' to '%s') failed: %s", n,
                    d->pend[0]->node, d->pend[n - 1]->node, why);
  }
  now = mi__vk_now_ns();
  for (i = 0; i < n; i++) {
    mi_kernel_t *k = d->pend[i];
    uint64_t ns = 0;
    k->pending = 0;
    if (st != MI_OK) continue;
    if ((st = mi__vk_kernel_time(k, &ns, err)) != MI_OK) continue;
    d->pend_ns += ns;
    if (!k->ran) {
      k->ran = 1;
      d->first_run_ns += now - k->enq_ns;
    }
  }
  d->npend = 0;
  return st;
}

int32_t mi__vk_kernel_enqueue(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                              int32_t input_count, mi_buffer_t *const *outputs,
                              int32_t output_count, mi_error_t *err) {
  vk_device_t *d;
  int32_t st;
  if (!ctx || !k) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: kernel_enqueue: NULL kernel");
  if ((st = mi__vk_check_io(k, inputs, input_count, outputs, output_count, "kernel_enqueue", err)) != MI_OK)
    return st;
  if (k->nd == 0) return MI_OK;
  d = k->dev;
  /* A command buffer is in one submission at a time and is recorded for one set of buffers: a
   * kernel enqueued twice before a sync sends what came before it first. */
  if (k->pending && (st = mi__vk_flush(d, err)) != MI_OK) return st;
  if (d->npend == d->cap_pend) {
    int cap = d->cap_pend ? 2 * d->cap_pend : 64;
    mi_kernel_t **ks = realloc(d->pend, (size_t)cap * sizeof *ks);
    VkCommandBuffer *cmds;
    if (!ks) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    d->pend = ks;
    if (!(cmds = realloc(d->pend_cmd, (size_t)cap * sizeof *cmds)))
      return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    d->pend_cmd = cmds;
    d->cap_pend = cap;
  }
  if ((st = mi__vk_record_for(k, inputs, input_count, outputs, output_count, err)) != MI_OK) return st;
  k->pending = 1;
  k->enq_ns = mi__vk_now_ns();
  d->pend[d->npend] = k;
  d->pend_cmd[d->npend] = k->cmd;
  d->npend++;
  return MI_OK;
}

int32_t mi__vk_device_sync(mi_plugin_ctx_t *ctx, uint32_t device, mi_run_stats_t *stats,
                           mi_error_t *err) {
  vk_device_t *d;
  int32_t st;
  if (!ctx || device >= ctx->sdk.device_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: device_sync: no device %u", (unsigned)device);
  d = &ctx->devs[device];
  st = mi__vk_flush(d, err);
  if (st == MI_OK && stats) {
    mi_run_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.has_device_time = d->has_timer;
    s.device_time_ns = d->pend_ns;
    mi_sdk_fill(stats, &s, sizeof s);
  }
  d->pend_ns = 0;
  return st;
}
