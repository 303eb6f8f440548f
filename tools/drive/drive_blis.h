/* drive_blis.h - driving blis-cpu directly: load it through the host loader, build kernel
 * descriptions by hand, run them (the unit tests and tools/bench/blis). */
#ifndef MI_DRIVE_BLIS_H
#define MI_DRIVE_BLIS_H

#include "drive_host.h"
#include "drive_tensor.h"

#define TB_MAXT 24
#define TB_MAXN 8
#define TB_MAXA 12

/* The plugin as the host loads it: manifest scan of $MI_BUILD/plugins, then "blis-cpu". */
typedef struct tb_plugin {
  mi_registry_t *reg;
  const mi_plugin_api_t *api;
  mi_plugin_ctx_t *ctx;
} tb_plugin_t;

static inline int tb_load(tb_plugin_t *p) {
  mi_plugin_t *pl = NULL;
  uint32_t dev = 0;
  mi_error_t err = {0, ""};
  memset(p, 0, sizeof *p);
  p->reg = mi_registry_create();
  if (!p->reg || drive_scan_plugins(p->reg, &err) != MI_OK ||
      mi_registry_device(p->reg, "blis-cpu:0", &pl, &dev, &err) != MI_OK) {
    fprintf(stderr, "cannot load blis-cpu from %s/plugins: %s\n", drive_build_dir(), err.message);
    mi_registry_destroy(p->reg);
    p->reg = NULL;
    return 0;
  }
  p->api = &pl->api;
  p->ctx = pl->ctx;
  return 1;
}

static inline void tb_unload(tb_plugin_t *p) {
  mi_registry_destroy(p->reg);
  p->reg = NULL;
}

typedef struct tb {
  mi_tensor_desc_t t[TB_MAXT];
  const mi_tensor_desc_t *tp[TB_MAXT];
  int nt;
  mi_node_desc_t n[TB_MAXN];
  const mi_node_desc_t *np[TB_MAXN];
  int32_t nin[TB_MAXN][8], nout[TB_MAXN][2];
  mi_attr_t at[TB_MAXN][TB_MAXA];
  int nn;
  int32_t kin[TB_MAXT], kout[TB_MAXT];
  int nkin, nkout;
} tb_t;

static inline int tb_tensor(tb_t *b, int rank, const int64_t *dims, const float *data) {
  drive_f32_desc(&b->t[b->nt], rank, dims, data);
  b->tp[b->nt] = &b->t[b->nt];
  return b->nt++;
}

static inline int tb_ints_tensor(tb_t *b, int count, const int64_t *vals) {
  int64_t d = count;
  int i = tb_tensor(b, 1, &d, NULL);
  b->t[i].dtype = MI_DTYPE_INT64;
  b->t[i].data = vals;
  b->t[i].data_bytes = (uint64_t)count * 8u;
  return i;
}

static inline int tb_node(tb_t *b, const char *op, int opset, int nin, const int *ins, int out) {
  drive_node_desc(&b->n[b->nn], op, opset, nin, ins, b->nin[b->nn], out, b->nout[b->nn], b->at[b->nn]);
  b->np[b->nn] = &b->n[b->nn];
  return b->nn++;
}

static inline mi_attr_t *tb_attr(tb_t *b, int node, const char *name, int type) {
  return drive_attr(&b->at[node][b->n[node].attr_count++], name, type);
}
static inline void tb_attr_i(tb_t *b, int node, const char *name, int64_t v) { tb_attr(b, node, name, MI_ATTR_INT)->i = v; }
static inline void tb_attr_f(tb_t *b, int node, const char *name, float v) { tb_attr(b, node, name, MI_ATTR_FLOAT)->f = v; }
static inline void tb_attr_s(tb_t *b, int node, const char *name, const char *v) { tb_attr(b, node, name, MI_ATTR_STRING)->s = v; }
static inline void tb_attr_is(tb_t *b, int node, const char *name, int count, const int64_t *v) {
  mi_attr_t *a = tb_attr(b, node, name, MI_ATTR_INTS);
  a->count = count;
  a->ints = v;
}

/* Kernel inputs: non-constant tensors read by a node and produced by none, first-use order. */
static inline void tb_finish(tb_t *b, int out) {
  int i, j, k, produced, seen;
  b->nkin = 0;
  for (i = 0; i < b->nn; i++)
    for (j = 0; j < b->n[i].input_count; j++) {
      int t = b->nin[i][j];
      if (t < 0 || b->t[t].data) continue;
      produced = seen = 0;
      for (k = 0; k < b->nn; k++) produced |= b->nout[k][0] == t;
      for (k = 0; k < b->nkin; k++) seen |= b->kin[k] == t;
      if (!produced && !seen) b->kin[b->nkin++] = t;
    }
  b->nkout = 1;
  b->kout[0] = out;
}

static inline void tb_desc(tb_t *b, mi_kernel_desc_t *d, const char *variant, const mi_knob_value_t *knobs, int nk) {
  drive_kernel_desc(d, b->np, b->nn, b->tp, b->nt, b->kin, b->nkin, b->kout, b->nkout, variant, knobs, nk);
}

/* Prepares and runs; inputs in kernel order; returns the status, fills out. */
static inline int32_t tb_run(tb_plugin_t *p, tb_t *b, const char *variant, const mi_knob_value_t *knobs,
                             int nk, const float *const *inputs, float *out, mi_error_t *err) {
  mi_kernel_desc_t d;
  mi_kernel_t *k = NULL;
  mi_buffer_t *ib[TB_MAXT] = {0}, *ob = NULL;
  mi_run_stats_t st;
  int32_t rc;
  int i;
  uint64_t obytes = (uint64_t)mi_sdk_numel(&b->t[b->kout[0]]) * 4u;
  tb_desc(b, &d, variant, knobs, nk);
  rc = p->api->kernel_prepare(p->ctx, 0, &d, &k, err);
  if (rc != MI_OK) return rc;
  for (i = 0; i < b->nkin && rc == MI_OK; i++) {
    uint64_t bytes = (uint64_t)mi_sdk_numel(&b->t[b->kin[i]]) * 4u;
    rc = p->api->buffer_alloc(p->ctx, 0, bytes, &ib[i], err);
    if (rc == MI_OK) rc = p->api->buffer_write(p->ctx, ib[i], 0, inputs[i], bytes, err);
  }
  if (rc == MI_OK) rc = p->api->buffer_alloc(p->ctx, 0, obytes, &ob, err);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (rc == MI_OK) rc = p->api->kernel_run(p->ctx, k, ib, b->nkin, &ob, 1, &st, err);
  if (rc == MI_OK) rc = p->api->buffer_read(p->ctx, ob, 0, out, obytes, err);
  if (rc == MI_OK && (!st.has_device_time || st.has_energy)) rc = MI_ERR_INTERNAL;
  for (i = 0; i < b->nkin; i++) p->api->buffer_free(p->ctx, ib[i]);
  p->api->buffer_free(p->ctx, ob);
  p->api->kernel_release(p->ctx, k);
  return rc;
}

/* Deterministic pseudo-random fill in [-1, 1). */
static inline void tb_fill(float *x, int64_t n, unsigned seed) {
  int64_t i;
  unsigned s = seed * 2654435761u + 12345u;
  for (i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    x[i] = (float)((s >> 9) & 0xffff) / 32768.f - 1.f;
  }
}

#endif
