/* snapshot.c - a plugin described in isolation: a child that loaded the plugin writes every
 * description of every device (through the checking wrappers) as a snapshot; the host builds a
 * stand-in from it that answers the same description queries and runs nothing, so listing
 * plugins never runs their code in the host (docs/security.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_internal.h"

#define SNAP_MAGIC 0x4d49534eu /* "MISN" */

/* Both sides come from one build; a snapshot from another is refused by its tag. */
static uint32_t snap_tag(void) {
  const uint64_t sizes[] = {sizeof(mi_device_desc_t), sizeof(mi_knob_desc_t),
                            sizeof(mi_variant_desc_t), sizeof(mi_counter_desc_t),
                            sizeof(mi_constraint_desc_t)};
  return (uint32_t)mi_hash64(sizes, sizeof sizes, MI_ABI_VERSION_MAJOR);
}

typedef struct snap_dev {
  mi_device_desc_t desc;
  mi_knob_desc_t *knobs;
  mi_variant_desc_t *variants;
  mi_counter_desc_t *counters;
  mi_constraint_desc_t *cons;
  uint32_t nk, nv, nc, ncon;
} snap_dev_t;

/* The stand-in's instance: what the plugin described, nothing it can run. */
struct mi_plugin_ctx {
  uint32_t count;
  snap_dev_t *dev;
};

/* ---------------------------------------------------------------- the child's side */

static int put(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int put_str(int fd, const char *s) {
  uint32_t n = s ? (uint32_t)strnlen(s, 4095) : 0;
  return put(fd, &n, sizeof n) || put(fd, s ? s : "", n);
}

static int put_arr(int fd, const void *a, uint32_t n, size_t elem) {
  return put(fd, &n, sizeof n) || (n && put(fd, a, (size_t)n * elem));
}

/* head[6]: what the plugin's table has beyond the descriptions. */
#define SNAP_HAS_CHECK 1u

int32_t mi__plugin_snapshot_write(int fd, const mi_plugin_t *p, mi_error_t *err) {
  uint32_t head[7] = {SNAP_MAGIC, snap_tag(), p->abi_major, p->abi_minor, p->declared_size,
                      p->device_count, p->api.check_config ? SNAP_HAS_CHECK : 0};
  int32_t rc = MI_OK;
  if (put(fd, head, sizeof head) || put_str(fd, p->name) || put_str(fd, p->version) ||
      put_str(fd, p->path))
    return mi_errorf(err, MI_ERR_IO, "snapshot of %s: write failed", p->name);
  for (uint32_t d = 0; d < p->device_count && rc == MI_OK; d++) {
    snap_dev_t v;
    memset(&v, 0, sizeof v);
    if ((rc = mi_plugin_device_info(p, d, &v.desc, err)) == MI_OK &&
        (rc = mi_plugin_knobs(p, d, &v.knobs, &v.nk, err)) == MI_OK &&
        (rc = mi_plugin_variants(p, d, &v.variants, &v.nv, err)) == MI_OK &&
        (rc = mi_plugin_counters(p, d, &v.counters, &v.nc, err)) == MI_OK &&
        (rc = mi_plugin_constraints(p, d, &v.cons, &v.ncon, err)) == MI_OK &&
        (put(fd, &v.desc, sizeof v.desc) || put_arr(fd, v.knobs, v.nk, sizeof *v.knobs) ||
         put_arr(fd, v.variants, v.nv, sizeof *v.variants) ||
         put_arr(fd, v.counters, v.nc, sizeof *v.counters) ||
         put_arr(fd, v.cons, v.ncon, sizeof *v.cons)))
      rc = mi_errorf(err, MI_ERR_IO, "snapshot of %s: write failed", p->name);
    free(v.knobs);
    free(v.variants);
    free(v.counters);
    free(v.cons);
  }
  return rc;
}

/* ---------------------------------------------------------------- the stand-in */

static int32_t no_dev(const mi_plugin_ctx_t *c, uint32_t d, mi_error_t *err) {
  return d < c->count ? MI_OK
                      : mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "no device %u", (unsigned)d);
}

static int32_t refuse(mi_error_t *err) {
  return mi_errorf(err, MI_ERR_UNSUPPORTED,
                   "described in isolation only: the plugin runs in a worker, not in the host");
}

static int32_t s_create(const mi_host_api_t *h, mi_plugin_ctx_t **o, mi_error_t *err) {
  (void)h;
  *o = NULL;
  return refuse(err);
}

static void snap_free(mi_plugin_ctx_t *c) {
  for (uint32_t d = 0; c && c->dev && d < c->count; d++) {
    free(c->dev[d].knobs);
    free(c->dev[d].variants);
    free(c->dev[d].counters);
    free(c->dev[d].cons);
  }
  if (c) free(c->dev);
  free(c);
}

static int32_t s_device_count(mi_plugin_ctx_t *c, uint32_t *n, mi_error_t *err) {
  (void)err;
  *n = c->count;
  return MI_OK;
}

static int32_t s_device_info(mi_plugin_ctx_t *c, uint32_t d, mi_device_desc_t *out,
                             mi_error_t *err) {
  if (no_dev(c, d, err)) return MI_ERR_INVALID_ARGUMENT;
  memcpy(out, &c->dev[d].desc, sizeof *out);
  return MI_OK;
}

/* One count and one element function per kind, served from the snapshot. */
#define SNAP_ARRAY(kind, type, field, nfield)                                           \
  static int32_t s_##kind##_count(mi_plugin_ctx_t *c, uint32_t d, uint32_t *n,          \
                                  mi_error_t *err) {                                    \
    if (no_dev(c, d, err)) return MI_ERR_INVALID_ARGUMENT;                              \
    *n = c->dev[d].nfield;                                                              \
    return MI_OK;                                                                       \
  }                                                                                     \
  static int32_t s_##kind##_desc(mi_plugin_ctx_t *c, uint32_t d, uint32_t i, type *out, \
                                 mi_error_t *err) {                                     \
    if (no_dev(c, d, err)) return MI_ERR_INVALID_ARGUMENT;                              \
    if (i >= c->dev[d].nfield)                                                          \
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "no %s %u", #kind, (unsigned)i);   \
    memcpy(out, &c->dev[d].field[i], sizeof *out);                                      \
    return MI_OK;                                                                       \
  }
SNAP_ARRAY(knob, mi_knob_desc_t, knobs, nk)
SNAP_ARRAY(variant, mi_variant_desc_t, variants, nv)
SNAP_ARRAY(counter, mi_counter_desc_t, counters, nc)
SNAP_ARRAY(constraint, mi_constraint_desc_t, cons, ncon)
#undef SNAP_ARRAY

static int32_t s_buffer_alloc(mi_plugin_ctx_t *c, uint32_t d, uint64_t b, mi_buffer_t **o,
                              mi_error_t *err) {
  (void)c, (void)d, (void)b;
  *o = NULL;
  return refuse(err);
}
static int32_t s_buffer_write(mi_plugin_ctx_t *c, mi_buffer_t *b, uint64_t o, const void *s,
                              uint64_t n, mi_error_t *err) {
  (void)c, (void)b, (void)o, (void)s, (void)n;
  return refuse(err);
}
static int32_t s_buffer_read(mi_plugin_ctx_t *c, mi_buffer_t *b, uint64_t o, void *s, uint64_t n,
                             mi_error_t *err) {
  (void)c, (void)b, (void)o, (void)s, (void)n;
  return refuse(err);
}
static void s_buffer_free(mi_plugin_ctx_t *c, mi_buffer_t *b) { (void)c, (void)b; }
static int32_t s_kernel_prepare(mi_plugin_ctx_t *c, uint32_t d, const mi_kernel_desc_t *k,
                                mi_kernel_t **o, mi_error_t *err) {
  (void)c, (void)d, (void)k;
  *o = NULL;
  return refuse(err);
}
static int32_t s_kernel_run(mi_plugin_ctx_t *c, mi_kernel_t *k, mi_buffer_t *const *i, int32_t ni,
                            mi_buffer_t *const *o, int32_t no, mi_run_stats_t *s,
                            mi_error_t *err) {
  (void)c, (void)k, (void)i, (void)ni, (void)o, (void)no, (void)s;
  return refuse(err);
}
static void s_kernel_release(mi_plugin_ctx_t *c, mi_kernel_t *k) { (void)c, (void)k; }
/* Present when the plugin has check_config, so callers know to ask it where it runs: a space
 * built on a stand-in sends the check to the device's worker (mi_space_options_t.probe_pool). */
static int32_t s_check_config(mi_plugin_ctx_t *c, uint32_t d, const char *v,
                              const mi_knob_value_t *k, int32_t n, mi_error_t *err) {
  (void)c, (void)d, (void)v, (void)k, (void)n;
  return refuse(err);
}

/* Reads n bytes at *at of a snapshot of `size` bytes. */
static int take(const char *buf, size_t size, size_t *at, void *out, size_t n) {
  if (n > size - *at) return -1;
  memcpy(out, buf + *at, n);
  *at += n;
  return 0;
}

static char *take_str(const char *buf, size_t size, size_t *at) {
  uint32_t n;
  char *s;
  if (take(buf, size, at, &n, sizeof n) || n > 4095 || n > size - *at || !(s = malloc(n + 1)))
    return NULL;
  memcpy(s, buf + *at, n);
  s[n] = '\0';
  *at += n;
  return s;
}

static void *take_arr(const char *buf, size_t size, size_t *at, uint32_t *n, size_t elem) {
  void *a;
  if (take(buf, size, at, n, sizeof *n) || *n > MI__MAX_DESCS ||
      (size_t)*n * elem > size - *at || !(a = calloc((size_t)*n + 1, elem)))
    return NULL;
  memcpy(a, buf + *at, (size_t)*n * elem);
  *at += (size_t)*n * elem;
  return a;
}

int32_t mi__plugin_from_snapshot(const char *manifest_path, const void *snapshot, size_t size,
                                 mi__plugin_entry_t **out, mi_error_t *err) {
  const char *buf = snapshot;
  uint32_t head[7];
  size_t at = 0;
  mi__plugin_entry_t *e;
  mi_plugin_ctx_t *c;
  *out = NULL;
  if (take(buf, size, &at, head, sizeof head) || head[0] != SNAP_MAGIC || head[1] != snap_tag() ||
      head[5] > MI__MAX_DEVICES)
    return mi_errorf(err, MI_ERR_ABI,
                     "refused: its description from isolation is malformed "
                     "(or from another build)");
  if (!(e = calloc(1, sizeof *e)) || !(c = calloc(1, sizeof *c))) {
    free(e);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  e->pub.ctx = c;
  e->pub.abi_major = head[2];
  e->pub.abi_minor = head[3];
  e->pub.declared_size = head[4];
  e->pub.name = take_str(buf, size, &at);
  e->pub.version = take_str(buf, size, &at);
  e->pub.path = take_str(buf, size, &at);
  e->pub.manifest = malloc(strlen(manifest_path) + 1);
  if (e->pub.manifest) memcpy(e->pub.manifest, manifest_path, strlen(manifest_path) + 1);
  if (!(c->dev = calloc((size_t)head[5] + 1, sizeof *c->dev))) goto bad;
  for (c->count = 0; c->count < head[5]; c->count++) {
    snap_dev_t *v = &c->dev[c->count];
    if (take(buf, size, &at, &v->desc, sizeof v->desc) ||
        !(v->knobs = take_arr(buf, size, &at, &v->nk, sizeof *v->knobs)) ||
        !(v->variants = take_arr(buf, size, &at, &v->nv, sizeof *v->variants)) ||
        !(v->counters = take_arr(buf, size, &at, &v->nc, sizeof *v->counters)) ||
        !(v->cons = take_arr(buf, size, &at, &v->ncon, sizeof *v->cons))) {
      c->count++; /* free what this device got */
      goto bad;
    }
  }
  if (!e->pub.name || !e->pub.name[0] || !e->pub.version || !e->pub.path || !e->pub.manifest ||
      at != size)
    goto bad;
  e->pub.device_count = c->count;
  {
    mi_plugin_api_t *a = &e->pub.api;
    a->struct_size = sizeof *a;
    a->abi_major = head[2];
    a->abi_minor = head[3];
    a->name = e->pub.name;
    a->version = e->pub.version;
    a->create = s_create;
    a->destroy = snap_free;
    a->device_count = s_device_count;
    a->device_info = s_device_info;
    a->knob_count = s_knob_count;
    a->knob_desc = s_knob_desc;
    a->variant_count = s_variant_count;
    a->variant_desc = s_variant_desc;
    a->buffer_alloc = s_buffer_alloc;
    a->buffer_write = s_buffer_write;
    a->buffer_read = s_buffer_read;
    a->buffer_free = s_buffer_free;
    a->kernel_prepare = s_kernel_prepare;
    a->kernel_run = s_kernel_run;
    a->kernel_release = s_kernel_release;
    a->constraint_count = s_constraint_count;
    a->constraint_desc = s_constraint_desc;
    a->counter_count = s_counter_count;
    a->counter_desc = s_counter_desc;
    if (head[6] & SNAP_HAS_CHECK) a->check_config = s_check_config;
  }
  /* The host checks the stand-in as it checks a loaded plugin. */
  if (mi__plugin_validate(&e->pub, err) != MI_OK) {
    mi__plugin_unload(e);
    return MI_ERR_ABI;
  }
  *out = e;
  return MI_OK;
bad:
  e->pub.api.destroy = snap_free;
  mi__plugin_unload(e);
  return mi_errorf(err, MI_ERR_ABI, "refused: its description from isolation is malformed");
}
