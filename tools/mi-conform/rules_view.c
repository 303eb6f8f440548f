/* rules_view.c - R9's part for ABI 1.2 buffer views: a view reads and writes its parent's bytes
 * at its offset, stays inside its range, and freeing it leaves the parent intact. */
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
