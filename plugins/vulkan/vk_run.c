/* vk_run.c - kernel_prepare's front (validation, variant and knob choice, descriptor sets),
 * kernel_run (record, timestamp, submit, wait) and kernel_release; the pieces kernel_enqueue
 * and device_sync share with it (vk_submit.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

static int32_t check_desc(const mi_kernel_desc_t *d, mi_error_t *err) {
  int32_t i, rc;
  if (d->node_count < 1 || !d->nodes || !d->nodes[0] || !d->nodes[0]->op_type)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: kernel without nodes");
  if ((rc = mi_sdk_check_fp32_kernel(d, VK_PLUGIN_NAME, VK_MAX_IO, INT_MAX / 8, err)) != MI_OK)
    return rc;
  for (i = 0; i < d->input_count + d->output_count; i++) {
    int32_t t = i < d->input_count ? d->inputs[i] : d->outputs[i - d->input_count];
    if (!mi__vk_tensor(d, t)) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: bad tensor index %d", (int)t);
  }
  return MI_OK;
}

static int32_t finish(vk_prep_t *p) {
  mi_kernel_t *k = p->k;
  vk_device_t *d = p->dev;
  VkDescriptorPoolSize ps;
  VkDescriptorPoolCreateInfo pi;
  VkDescriptorSetAllocateInfo ai;
  VkDescriptorSetLayout layouts[VK_MAX_DISP];
  VkCommandBufferAllocateInfo ci;
  VkResult r;
  int i, nd = k->nd ? k->nd : 1;
  ps.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  ps.descriptorCount = (uint32_t)(nd * VK_NBIND);
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pi.maxSets = (uint32_t)nd;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &ps;
  if ((r = vkCreateDescriptorPool(d->dev, &pi, NULL, &k->dpool)) != VK_SUCCESS)
    return mi__vk_fail(p->err, "vkCreateDescriptorPool", r);
  for (i = 0; i < nd; i++) layouts[i] = d->dsl;
  memset(&ai, 0, sizeof ai);
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = k->dpool;
  ai.descriptorSetCount = (uint32_t)nd;
  ai.pSetLayouts = layouts;
  if ((r = vkAllocateDescriptorSets(d->dev, &ai, k->sets)) != VK_SUCCESS)
    return mi__vk_fail(p->err, "vkAllocateDescriptorSets", r);
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ci.commandPool = d->cmd_pool;
  ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ci.commandBufferCount = 1;
  if ((r = vkAllocateCommandBuffers(d->dev, &ci, &k->cmd)) != VK_SUCCESS)
    return mi__vk_fail(p->err, "vkAllocateCommandBuffers", r);
  if (d->has_timer) {
    VkQueryPoolCreateInfo qi;
    memset(&qi, 0, sizeof qi);
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = (uint32_t)(2 * nd);
    if ((r = vkCreateQueryPool(d->dev, &qi, NULL, &k->qpool)) != VK_SUCCESS)
      return mi__vk_fail(p->err, "vkCreateQueryPool", r);
  }
  return MI_OK;
}

int32_t mi__vk_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *desc,
                              mi_kernel_t **out, mi_error_t *err) {
  vk_prep_t p = {.ctx = ctx, .desc = desc, .err = err};
  const mi_sdk_variant_t *named;
  const char *op;
  int32_t rc, i;
  if (out) *out = NULL;
  if (!ctx || !desc || !out) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: kernel_prepare: NULL argument");
  if ((rc = mi_sdk_kernel_variant(ctx, device, mi__vk_tables_all(), desc, &named, err)) != MI_OK ||
      (rc = check_desc(desc, err)) != MI_OK)
    return rc;
  p.dev = &ctx->devs[device];
  op = desc->nodes[0]->op_type;
  if (!(p.var = named ? (const vk_variant_t *)named : mi__vk_variant_auto(p.dev, desc)))
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "vulkan: op %s is not implemented", op);
  if (p.var->fp16 && !p.dev->has_fp16)
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "vulkan: %s needs shaderFloat16 and storageBuffer16BitAccess",
                         p.var->v.id);
  if (desc->knob_count > 0 && !desc->knobs)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: knobs is NULL");
  if ((rc = mi__vk_knobs_resolve(p.dev, p.var, desc->knobs, desc->knob_count, p.spec, err)) != MI_OK)
    return rc;
  if (!(p.k = calloc(1, sizeof *p.k))) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  p.k->dev = p.dev;
  p.k->device = device;
  if (desc->nodes[0]->name) snprintf(p.k->node, sizeof p.k->node, "%s", desc->nodes[0]->name);
  p.k->n_in = desc->input_count;
  p.k->n_out = desc->output_count;
  for (i = 0; i < desc->input_count + desc->output_count; i++) {
    int32_t t = i < desc->input_count ? desc->inputs[i] : desc->outputs[i - desc->input_count];
    const mi_tensor_desc_t *td = mi__vk_tensor(desc, t);
    uint64_t bytes = mi_sdk_tensor_bytes(td);
    if (i < desc->input_count) p.k->in_bytes[i] = bytes;
    else
      p.k->out_bytes[i - desc->input_count] = bytes;
  }
  if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) rc = mi__vk_prepare_conv(&p);
  else if (!strcmp(op, "Gemm") || !strcmp(op, "MatMul"))
    rc = mi__vk_prepare_gemm(&p);
  else
    rc = mi__vk_prepare_op(&p);
  if (rc == MI_OK) rc = finish(&p);
  if (rc != MI_OK) {
    mi__vk_kernel_release(ctx, p.k);
    return rc;
  }
  *out = p.k;
  return MI_OK;
}

void mi__vk_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *k) {
  int i;
  if (!ctx || !k) return;
  if (k->pending) (void)mi__vk_flush(k->dev, NULL); /* the host syncs first; never free it in flight */
  for (i = 0; i < k->nown; i++) mi__vk_buffer_free(ctx, k->own[i]);
  if (k->qpool) vkDestroyQueryPool(k->dev->dev, k->qpool, NULL);
  if (k->cmd) vkFreeCommandBuffers(k->dev->dev, k->dev->cmd_pool, 1, &k->cmd);
  if (k->dpool) vkDestroyDescriptorPool(k->dev->dev, k->dpool, NULL);
  free(k);
}

static mi_buffer_t *resolve(mi_kernel_t *k, vk_ref_t r, mi_buffer_t *const *in, mi_buffer_t *const *out) {
  switch (r.kind) {
  case REF_IN: return in[r.index];
  case REF_OUT: return out[r.index];
  case REF_OWN: return k->own[r.index];
  default: return k->dev->dummy;
  }
}

static void record(mi_kernel_t *k, mi_buffer_t *const *in, mi_buffer_t *const *out) {
  vk_device_t *d = k->dev;
  VkMemoryBarrier mb;
  int i, j;
  memset(&mb, 0, sizeof mb);
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  if (k->qpool) vkCmdResetQueryPool(k->cmd, k->qpool, 0, (uint32_t)(2 * k->nd));
  for (i = 0; i < k->nd; i++) {
    vk_disp_t *ds = &k->disp[i];
    if (k->qpool) vkCmdWriteTimestamp(k->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, k->qpool, (uint32_t)(2 * i));
    if (!ds->pipe) {
      VkBufferCopy c;
      c.srcOffset = ds->src_off;
      c.dstOffset = ds->dst_off;
      c.size = ds->copy_bytes ? ds->copy_bytes : 4;
      vkCmdCopyBuffer(k->cmd, resolve(k, ds->bind[0], in, out)->buf, resolve(k, ds->bind[2], in, out)->buf, 1, &c);
    } else {
      VkDescriptorBufferInfo bi[VK_NBIND];
      VkWriteDescriptorSet w;
      for (j = 0; j < VK_NBIND; j++) {
        bi[j].buffer = resolve(k, ds->bind[j], in, out)->buf;
        bi[j].offset = 0;
        bi[j].range = VK_WHOLE_SIZE;
      }
      memset(&w, 0, sizeof w);
      w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w.dstSet = k->sets[i];
      w.descriptorCount = VK_NBIND;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = bi;
      vkUpdateDescriptorSets(d->dev, 1, &w, 0, NULL);
      vkCmdBindPipeline(k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ds->pipe);
      vkCmdBindDescriptorSets(k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &k->sets[i], 0, NULL);
      vkCmdPushConstants(k->cmd, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, VK_PUSH_WORDS * 4, ds->push);
      vkCmdDispatch(k->cmd, ds->groups[0], ds->groups[1], ds->groups[2]);
    }
    if (k->qpool) vkCmdWriteTimestamp(k->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, k->qpool, (uint32_t)(2 * i + 1));
    vkCmdPipelineBarrier(k->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb,
                         0, NULL, 0, NULL);
  }
}

int32_t mi__vk_check_io(const mi_kernel_t *k, mi_buffer_t *const *inputs, int32_t input_count,
                        mi_buffer_t *const *outputs, int32_t output_count, const char *call,
                        mi_error_t *err) {
  int32_t i;
  if (input_count != k->n_in || output_count != k->n_out)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: %s: %d inputs / %d outputs given, kernel takes %d / %d",
                         call, (int)input_count, (int)output_count, k->n_in, k->n_out);
  for (i = 0; i < input_count + output_count; i++) {
    mi_buffer_t *b = i < input_count ? (inputs ? inputs[i] : NULL) : (outputs ? outputs[i - input_count] : NULL);
    uint64_t need = i < input_count ? k->in_bytes[i] : k->out_bytes[i - input_count];
    if (!b || b->device != k->device || b->bytes < need)
      return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: %s: %s %d is missing, on another device or smaller than %llu bytes",
                           call, i < input_count ? "input" : "output", (int)(i < input_count ? i : i - input_count),
                           (unsigned long long)need);
  }
  return MI_OK;
}

int32_t mi__vk_record_for(mi_kernel_t *k, mi_buffer_t *const *inputs, int32_t input_count,
                          mi_buffer_t *const *outputs, int32_t output_count, mi_error_t *err) {
  VkCommandBufferBeginInfo bi;
  VkResult r;
  int32_t i;
  /* Recorded again only when a buffer changed (a session runs each kernel on the same buffers
   * every run): recording and the descriptor updates are host time on every kernel run. */
  int same = k->recorded;
  for (i = 0; i < input_count + output_count && same; i++)
    same = k->rec_serial[i] == (i < input_count ? inputs[i] : outputs[i - input_count])->serial;
  if (same) return MI_OK;
  k->recorded = 0;
  if ((r = vkResetCommandBuffer(k->cmd, 0)) != VK_SUCCESS) return mi__vk_fail(err, "vkResetCommandBuffer", r);
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  if ((r = vkBeginCommandBuffer(k->cmd, &bi)) != VK_SUCCESS) return mi__vk_fail(err, "vkBeginCommandBuffer", r);
  record(k, inputs, outputs);
  if ((r = vkEndCommandBuffer(k->cmd)) != VK_SUCCESS) return mi__vk_fail(err, "vkEndCommandBuffer", r);
  for (i = 0; i < input_count + output_count; i++)
    k->rec_serial[i] = (i < input_count ? inputs[i] : outputs[i - input_count])->serial;
  k->recorded = 1;
  return MI_OK;
}

int32_t mi__vk_submit_wait(vk_device_t *d, const VkCommandBuffer *cmds, uint32_t n, mi_error_t *err) {
  VkSubmitInfo si;
  VkResult r;
  memset(&si, 0, sizeof si);
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = n;
  si.pCommandBuffers = cmds;
  pthread_mutex_lock(&d->shared->queue_lock);
  r = vkQueueSubmit(d->queue, 1, &si, d->fence);
  pthread_mutex_unlock(&d->shared->queue_lock);
  if (r != VK_SUCCESS) return mi__vk_fail(err, "vkQueueSubmit", r);
  r = vkWaitForFences(d->dev, 1, &d->fence, VK_TRUE, 120ull * 1000000000ull);
  if (r == VK_TIMEOUT) {
    pthread_mutex_lock(&d->shared->queue_lock);
    vkQueueWaitIdle(d->queue);
    pthread_mutex_unlock(&d->shared->queue_lock);
    vkResetFences(d->dev, 1, &d->fence);
    return mi_sdk_errorf(err, MI_ERR_TIMEOUT, "vulkan: vkWaitForFences: VK_TIMEOUT after 120 s");
  }
  vkResetFences(d->dev, 1, &d->fence);
  if (r != VK_SUCCESS) return mi__vk_fail(err, "vkWaitForFences", r);
  return MI_OK;
}

int32_t mi__vk_kernel_time(mi_kernel_t *k, uint64_t *ns, mi_error_t *err) {
  vk_device_t *d = k->dev;
  uint64_t ts[2 * VK_MAX_DISP];
  VkResult r;
  int i;
  *ns = 0;
  if (!k->qpool) return MI_OK;
  r = vkGetQueryPoolResults(d->dev, k->qpool, 0, (uint32_t)(2 * k->nd), sizeof ts, ts, 8,
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS) return mi__vk_fail(err, "vkGetQueryPoolResults", r);
  for (i = 0; i < k->nd; i++)
    *ns += (uint64_t)((double)((ts[2 * i + 1] - ts[2 * i]) & d->ts_mask) * d->ts_period);
  d->device_ns += *ns;
  return MI_OK;
}

int32_t mi__vk_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                          int32_t input_count, mi_buffer_t *const *outputs, int32_t output_count,
                          mi_run_stats_t *stats, mi_error_t *err) {
  vk_device_t *d;
  uint64_t t0 = mi__vk_now_ns(), dev_ns = 0;
  int32_t st;
  if (!ctx || !k) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "vulkan: kernel_run: NULL kernel");
  if ((st = mi__vk_check_io(k, inputs, input_count, outputs, output_count, "kernel_run", err)) != MI_OK)
    return st;
  d = k->dev;
  /* The host syncs before a kernel_run that follows enqueues; a caller that did not still sees
   * them run first. */
  if (d->npend && (st = mi__vk_flush(d, err)) != MI_OK) return st;
  if (k->nd == 0) {
    if (stats) {
      mi_run_stats_t s;
      memset(&s, 0, sizeof s);
      s.struct_size = sizeof s;
      mi_sdk_fill(stats, &s, sizeof s);
    }
    return MI_OK;
  }
  if ((st = mi__vk_record_for(k, inputs, input_count, outputs, output_count, err)) != MI_OK ||
      (st = mi__vk_submit_wait(d, &k->cmd, 1, err)) != MI_OK || (st = mi__vk_kernel_time(k, &dev_ns, err)) != MI_OK)
    return st;
  if (!k->ran) {
    k->ran = 1;
    d->first_run_ns += mi__vk_now_ns() - t0;
  }
  if (stats) {
    mi_run_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.has_device_time = k->qpool != VK_NULL_HANDLE;
    s.device_time_ns = dev_ns;
    mi_sdk_fill(stats, &s, sizeof s);
  }
  return MI_OK;
}
