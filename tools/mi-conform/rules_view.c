/* rules_view.c - R9's parts for ABI 1.2 buffer views (a view reads and writes its parent's bytes
 * at its offset, stays inside its range, and freeing it leaves the parent intact) and ABI 1.4
 * wrapped host memory (the buffer is the host's bytes, freeing it leaves them to the host). */
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "conform_util.h"

#define VIEW_PARENT 4096

/* NULL when device dev's views behave (or the plugin gives none), else what failed. */
const char *conform_buffer_views(conform_ctx_t *c, uint32_t dev, mi_error_t *err) {
  const mi_plugin_api_t *a = &c->plugin.api;
  mi_device_desc_t d;
  mi_buffer_t *buf = NULL, *v = NULL;
  unsigned char src[VIEW_PARENT], dst[VIEW_PARENT], mark[16];
  uint64_t off;
  const char *fail = NULL;
  if (c->plugin.api.struct_size < offsetof(mi_plugin_api_t, buffer_view) + sizeof(void *) || !a->buffer_view)
    return NULL;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  if (a->device_info(c->plugin.ctx, dev, &d, err) != MI_OK) return "device_info failed";
  /* the host asks for multiples of buffer_alignment only; 1024 is one for every power of two up to it */
  off = d.buffer_alignment > 1024 ? d.buffer_alignment : 1024;
  if (off >= VIEW_PARENT / 2) return NULL; /* no offset to try inside the parent */
  for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 7 + 3);
  for (size_t i = 0; i < sizeof mark; i++) mark[i] = (unsigned char)(0xa0 + i);
  if (a->buffer_alloc(c->plugin.ctx, dev, VIEW_PARENT, &buf, err) != MI_OK || !buf) return "buffer_alloc failed";
  if (a->buffer_write(c->plugin.ctx, buf, 0, src, VIEW_PARENT, err) != MI_OK) {
    fail = "buffer_write failed";
  } else if (a->buffer_view(c->plugin.ctx, buf, off, 64, &v, err) != MI_OK || !v) {
    fail = "buffer_view refused an in-range offset that is a multiple of buffer_alignment";
  } else if (a->buffer_read(c->plugin.ctx, v, 0, dst, 64, err) != MI_OK || memcmp(dst, src + off, 64) != 0) {
    fail = "a view does not read its parent's bytes at its offset";
  } else if (a->buffer_write(c->plugin.ctx, v, 8, mark, sizeof mark, err) != MI_OK ||
             a->buffer_read(c->plugin.ctx, buf, 0, dst, VIEW_PARENT, err) != MI_OK ||
             memcmp(dst + off + 8, mark, sizeof mark) != 0 || memcmp(dst, src, off + 8) != 0 ||
             memcmp(dst + off + 24, src + off + 24, VIEW_PARENT - off - 24) != 0) {
    fail = "a write through a view did not land at its offset in the parent alone";
  } else if (a->buffer_read(c->plugin.ctx, v, 64, dst, 1, err) == MI_OK) {
    fail = "a read past a view's end was accepted";
  }
  if (v) a->buffer_free(c->plugin.ctx, v);
  if (!fail && (a->buffer_read(c->plugin.ctx, buf, off + 8, dst, sizeof mark, err) != MI_OK ||
                memcmp(dst, mark, sizeof mark) != 0))
    fail = "freeing a view changed or freed its parent";
  a->buffer_free(c->plugin.ctx, buf);
  return fail;
}

/* NULL when device dev's wrapped host memory behaves (or the plugin wraps none), else what failed:
 * reads see the host's bytes, writes land in them, a view of the wrap reads its slice, freeing
 * the handle leaves the memory readable and unchanged. */
const char *conform_buffer_wraps(conform_ctx_t *c, uint32_t dev, mi_error_t *err) {
  const mi_plugin_api_t *a = &c->plugin.api;
  mi_device_desc_t d;
  mi_buffer_t *buf = NULL, *v = NULL;
  unsigned char *host = NULL, dst[64], mark[16];
  size_t align;
  int32_t rc;
  const char *fail = NULL;
  if (c->plugin.api.struct_size < offsetof(mi_plugin_api_t, buffer_wrap) + sizeof(void *) || !a->buffer_wrap)
    return NULL;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  if (a->device_info(c->plugin.ctx, dev, &d, err) != MI_OK) return "device_info failed";
  align = d.buffer_alignment > 64 ? d.buffer_alignment : 64;
  if (posix_memalign((void **)&host, align, VIEW_PARENT) != 0) return "out of memory";
  for (size_t i = 0; i < VIEW_PARENT; i++) host[i] = (unsigned char)(i * 5 + 1);
  for (size_t i = 0; i < sizeof mark; i++) mark[i] = (unsigned char)(0xb0 + i);
  rc = a->buffer_wrap(c->plugin.ctx, dev, host, VIEW_PARENT, &buf, err);
  if (rc == MI_ERR_UNSUPPORTED) { /* this device cannot: the host copies */
    free(host);
    return NULL;
  }
  if (rc != MI_OK || !buf) {
    fail = "buffer_wrap refused aligned host memory without MI_ERR_UNSUPPORTED";
  } else if (a->buffer_read(c->plugin.ctx, buf, 1024, dst, 64, err) != MI_OK || memcmp(dst, host + 1024, 64) != 0) {
    fail = "a wrapped buffer does not read the host's bytes";
  } else if (a->buffer_write(c->plugin.ctx, buf, 8, mark, sizeof mark, err) != MI_OK ||
             memcmp(host + 8, mark, sizeof mark) != 0) {
    fail = "a write to a wrapped buffer did not land in the host's memory";
  } else if (a->buffer_view && (a->buffer_view(c->plugin.ctx, buf, 1024, 64, &v, err) != MI_OK || !v ||
                                a->buffer_read(c->plugin.ctx, v, 0, dst, 64, err) != MI_OK ||
                                memcmp(dst, host + 1024, 64) != 0)) {
    fail = "a view of a wrapped buffer does not read its slice of the host's memory";
  } else if (a->buffer_read(c->plugin.ctx, buf, VIEW_PARENT, dst, 1, err) == MI_OK) {
    fail = "a read past a wrapped buffer's end was accepted";
  }
  if (v) a->buffer_free(c->plugin.ctx, v);
  if (buf) a->buffer_free(c->plugin.ctx, buf);
  if (!fail && (memcmp(host + 8, mark, sizeof mark) != 0 || host[1024] != (unsigned char)(1024 * 5 + 1)))
    fail = "freeing a wrapped buffer changed the host's memory";
  free(host);
  return fail;
}
