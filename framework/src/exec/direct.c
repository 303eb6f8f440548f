/* direct.c - host memory as device buffers (ABI 1.4 buffer_wrap): on a device whose kernels
 * address host memory, a run wraps the caller's input arrays instead of uploading them, and the
 * arrays it hands back as outputs before their producers run, so the kernels write them where
 * the caller gets them and nothing is read back. A merged decoder's caches went through three
 * copies a token (upload, its Concat, read-back); now through the Concat alone.
 *
 * Which tensors (planned with the memory, memplan.c): a graph input whose buffer no alias shares
 * (a Reshape's output or a Concat's slice would be bytes of the caller's array too, and a Concat
 * slice is written); a graph output that is its alias group's root, with the group's members
 * (reshaped views, Concat inputs) given that array or views of it. Both stored in plain NCHW.
 * Anything the device refuses to wrap is copied as before. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "exec/exec.h"

enum { DIRECT_IN = 1,
       DIRECT_OUT = 2 };

void mi__direct_free(mi_session_t *s) {
  free(s->direct);
  free(s->dmember);
  free(s->dmember_off);
  free(s->darr);
  free(s->dsaved);
  free(s->dbufs);
  s->direct = NULL;
  s->dmember = NULL;
  s->dmember_off = NULL;
  s->darr = NULL;
  s->dsaved = NULL;
  s->dbufs = NULL;
  s->dmember_count = 0;
}

static int plain(const mi_session_t *s, int32_t t) {
  return s->bufs[t] && s->dlayout[t] == MI_LAYOUT_NCHW && !s->consts[t];
}

int32_t mi__direct_plan(mi_session_t *s, const int32_t *root, const uint64_t *off, mi_error_t *err) {
  const mi_graph_t *g = s->g;
  int32_t nt = g->tensor_count, *size = NULL, *at = NULL, n = 0;
  uint8_t *is_input = NULL;
  mi_device_desc_t dd;
  if (!s->plugin->api.buffer_wrap) return MI_OK;
  s->dalign = 64;
  if (mi_plugin_device_info(s->plugin, s->device, &dd, NULL) == MI_OK && dd.buffer_alignment > 64)
    s->dalign = dd.buffer_alignment; /* (mi_array_t data is 64-byte aligned; more is checked per run) */
  s->direct = calloc((size_t)nt + 1, 1);
  size = calloc((size_t)nt + 1, sizeof *size);
  is_input = calloc((size_t)nt + 1, 1);
  if (!s->direct || !size || !is_input) goto oom;
  /* Group sizes, and whether every member of a group is plain. */
  for (int32_t u = 0; u < nt; u++)
    if (s->bufs[u]) {
      size[root[u]]++;
      if (!plain(s, u)) size[root[u]] = INT32_MIN / 2; /* stays negative */
    }
  for (int32_t i = 0; i < g->input_count; i++) is_input[g->inputs[i]] = 1;
  for (int32_t i = 0; i < g->input_count; i++) {
    int32_t t = g->inputs[i];
    if (plain(s, t) && root[t] == t && size[t] == 1) s->direct[t] = DIRECT_IN;
  }
  for (int32_t i = 0; i < g->output_count; i++) {
    int32_t t = g->outputs[i];
    if (t >= 0 && plain(s, t) && root[t] == t && size[t] >= 1 && !is_input[t] && !s->direct[t]) {
      s->direct[t] = DIRECT_OUT;
      n += size[t];
    }
  }
  /* Members listed by group, the root first (its array is made before its views). */
  if (n) {
    s->dmember = malloc((size_t)n * sizeof *s->dmember);
    s->dmember_off = malloc((size_t)n * sizeof *s->dmember_off);
    if (!(at = calloc((size_t)nt + 1, sizeof *at)) || !s->dmember || !s->dmember_off) goto oom;
    for (int32_t t = 0, k = 0; t < nt; t++)
      if (s->direct[t] == DIRECT_OUT) {
        at[t] = k;
        s->dmember[k] = t;
        s->dmember_off[k] = 0;
        k += size[t];
        size[t] = 1; /* from here: members placed */
      }
    for (int32_t u = 0; u < nt; u++) {
      int32_t r = s->bufs[u] ? root[u] : -1, k;
      if (r < 0 || r == u || s->direct[r] != DIRECT_OUT) continue;
      k = at[r] + size[r]++;
      s->dmember[k] = u;
      s->dmember_off[k] = off[u];
    }
    s->dmember_count = n;
  }
  s->darr = calloc((size_t)nt + 1, sizeof *s->darr);
  s->dsaved = calloc((size_t)nt + 1, sizeof *s->dsaved);
  s->dbufs = malloc(((size_t)g->input_count + (size_t)n + 1) * sizeof *s->dbufs);
  if (!s->darr || !s->dsaved || !s->dbufs) goto oom;
  s->dbuf_count = 0;
  free(size);
  free(at);
  free(is_input);
  return MI_OK;
oom:
  free(size);
  free(at);
  free(is_input);
  mi__direct_free(s);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory planning device memory");
}

/* A buffer over `bytes` bytes at `host`, or NULL where the device would not (the copy stays). */
static mi_buffer_t *wrap(mi_session_t *s, void *host, uint64_t bytes) {
  const mi_plugin_t *p = s->plugin;
  mi_buffer_t *b = NULL;
  mi_error_t perr = {0};
  if (!bytes || (uintptr_t)host % s->dalign) return NULL;
  if (p->api.buffer_wrap(p->ctx, s->device, host, bytes, &b, &perr) != MI_OK) return NULL;
  if (b) s->dbufs[s->dbuf_count++] = b;
  return b;
}

/* Frees the buffers made since position `from`, the last first (views before their parent). */
static void drop_from(mi_session_t *s, int32_t from) {
  const mi_plugin_t *p = s->plugin;
  while (s->dbuf_count > from) p->api.buffer_free(p->ctx, s->dbufs[--s->dbuf_count]);
}

int mi__direct_input(mi_session_t *s, int32_t t, const mi_array_t *a) {
  mi_buffer_t *b;
  if (!s->direct || s->direct[t] != DIRECT_IN) return 0; /* (to_device checked a's size) */
  /* (the ABI's promise: kernels never write their inputs, so the caller's const array is read only) */
  if (!(b = wrap(s, (void *)a->data, a->nbytes))) return 0;
  s->dsaved[t] = s->bufs[t];
  s->bufs[t] = b;
  return 1;
}

int32_t mi__direct_begin(mi_session_t *s, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  for (int32_t k = 0; s->direct && k < s->dmember_count;) {
    int32_t r = s->dmember[k], from = s->dbuf_count, end = k + 1, ok = 1;
    const mi_tensor_t *x = &s->g->tensors[r];
    mi_array_t *a = mi__array_create_unset(x->dtype, x->rank, x->dims);
    mi_buffer_t *w;
    while (end < s->dmember_count && s->direct[s->dmember[end]] != DIRECT_OUT) end++;
    if (!a) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "output '%s': out of memory", x->name);
    w = a->nbytes == s->buf_bytes[r] ? wrap(s, a->data, a->nbytes) : NULL;
    for (int32_t j = k; w && j < end; j++) {
      int32_t u = s->dmember[j];
      mi_buffer_t *v = w;
      mi_error_t perr = {0};
      if (s->dmember_off[j]) { /* a Concat input: its slice */
        v = NULL;
        if (p->api.buffer_view(p->ctx, w, s->dmember_off[j], s->buf_bytes[u], &v, &perr) != MI_OK || !v) {
          ok = 0;
          break;
        }
        s->dbufs[s->dbuf_count++] = v;
      }
      s->dsaved[u] = s->bufs[u];
      s->bufs[u] = v;
    }
    if (!w || !ok) { /* this group is copied as before */
      for (int32_t j = k; j < end; j++)
        if (s->dsaved[s->dmember[j]]) {
          s->bufs[s->dmember[j]] = s->dsaved[s->dmember[j]];
          s->dsaved[s->dmember[j]] = NULL;
        }
      drop_from(s, from);
      mi_array_destroy(a);
    } else {
      s->darr[r] = a;
    }
    k = end;
  }
  return MI_OK;
}

mi_array_t *mi__direct_take(mi_session_t *s, int32_t t) {
  mi_array_t *a;
  /* The device buffer must hold the value (a host step may have made it instead), all its rows. */
  if (!s->darr || !(a = s->darr[t]) || !s->on_device[t] || s->rows[t] >= 0) return NULL;
  s->darr[t] = NULL;
  return a;
}

void mi__direct_end(mi_session_t *s) {
  const mi_graph_t *g = s->g;
  if (!s->direct) return;
  for (int32_t i = 0; i < g->input_count; i++) {
    int32_t t = g->inputs[i];
    if (s->dsaved[t]) {
      s->bufs[t] = s->dsaved[t];
      s->dsaved[t] = NULL;
    }
  }
  for (int32_t k = 0; k < s->dmember_count; k++) {
    int32_t u = s->dmember[k];
    if (s->dsaved[u]) {
      s->bufs[u] = s->dsaved[u];
      s->dsaved[u] = NULL;
    }
    if (s->darr[u]) { /* not handed over: the run failed, or a host step made the value */
      mi_array_destroy(s->darr[u]);
      s->darr[u] = NULL;
    }
  }
  drop_from(s, 0);
}
