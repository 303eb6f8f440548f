/* sdk_buffer.c - the buffer calls of a plugin whose device reads host memory (a CPU plugin, a
 * simulator): allocation, bounds-checked copies in and out, release. */
#define MI_SDK_HOST_BUFFERS
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_sdk.h"

static const char *pname(const mi_plugin_ctx_t *ctx) {
  const mi_sdk_plugin_t *b = (const mi_sdk_plugin_t *)(const void *)ctx;
  return ctx && b->name ? b->name : "plugin";
}

int32_t mi_sdk_host_buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes,
                                 mi_buffer_t **out, mi_error_t *err) {
  mi_buffer_t *b;
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  *out = NULL;
  if (bytes > SIZE_MAX - 1)
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: %llu bytes do not fit in memory",
                         pname(ctx), (unsigned long long)bytes);
  if ((b = calloc(1, sizeof *b))) b->data = calloc(1, bytes ? (size_t)bytes : 1);
  if (!b || !b->data) {
    free(b);
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory for a buffer of %llu bytes",
                         pname(ctx), (unsigned long long)bytes);
  }
  b->device = device;
  b->bytes = bytes;
  *out = b;
  return MI_OK;
}

/* The checks of a copy of `bytes` at `offset` through `p` (the other side of the copy). */
static int32_t range(const mi_plugin_ctx_t *ctx, const mi_buffer_t *b, uint64_t offset,
                     const void *p, uint64_t bytes, const char *call, mi_error_t *err) {
  if (!ctx || !b || (!p && bytes))
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: %s: NULL argument", pname(ctx), call);
  if (offset > b->bytes || bytes > b->bytes - offset)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "%s: %s: %llu bytes at %llu outside a buffer of %llu bytes", pname(ctx),
                         call, (unsigned long long)bytes, (unsigned long long)offset,
                         (unsigned long long)b->bytes);
  return MI_OK;
}

int32_t mi_sdk_host_buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t offset,
                                 const void *src, uint64_t bytes, mi_error_t *err) {
  int32_t st = range(ctx, b, offset, src, bytes, "buffer_write", err);
  if (st == MI_OK && bytes) memcpy(b->data + offset, src, (size_t)bytes);
  return st;
}

int32_t mi_sdk_host_buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t offset, void *dst,
                                uint64_t bytes, mi_error_t *err) {
  int32_t st = range(ctx, b, offset, dst, bytes, "buffer_read", err);
  if (st == MI_OK && bytes) memcpy(dst, b->data + offset, (size_t)bytes);
  return st;
}

void mi_sdk_host_buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b) {
  (void)ctx;
  if (!b) return;
  free(b->data);
  free(b);
}
