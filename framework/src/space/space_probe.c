/* space_probe.c - asks the plugin once per (node signature, variant) whether it prepares the
 * node at all, so the space never offers a variant that refuses its node (a 1x1-only conv
 * variant for a 3x3 conv) and no measurement is wasted on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "metainfer/mi_measure.h"
#include "space/space_internal.h"

/* A node's signature: op, attributes, and dtype/shape/constness of its tensors. Nodes of the
 * same signature are prepared alike, so one probe answers for all of them. */
static uint64_t node_signature(const mi_graph_t *g, int32_t n) {
  const mi_node_t *node = &g->nodes[n];
  uint64_t h = mi_hash64(node->op_type, strlen(node->op_type), MI_HASH64_SEED);
  for (int32_t a = 0; a < node->attr_count; a++) {
    const mi_attr_t *at = &node->attrs[a];
    h = mi_hash64(at->name, strlen(at->name), h);
    h = mi_hash64(&at->i, sizeof at->i, h);
    h = mi_hash64(&at->f, sizeof at->f, h);
    if (at->ints && at->count > 0) h = mi_hash64(at->ints, (size_t)at->count * sizeof *at->ints, h);
    if (at->floats && at->count > 0) h = mi_hash64(at->floats, (size_t)at->count * sizeof *at->floats, h);
    if (at->s) h = mi_hash64(at->s, strlen(at->s), h);
  }
  for (int32_t io = 0; io < 2; io++) {
    int32_t cnt = io ? node->output_count : node->input_count;
    const int32_t *ts = io ? node->outputs : node->inputs;
    for (int32_t i = 0; i < cnt; i++) {
      int32_t t = ts[i];
      int32_t key[3] = {t < 0 ? -1 : g->tensors[t].dtype, t < 0 ? 0 : g->tensors[t].rank,
                        t >= 0 && g->tensors[t].data != NULL};
      h = mi_hash64(key, sizeof key, h);
      if (t >= 0 && g->tensors[t].rank > 0)
        h = mi_hash64(g->tensors[t].dims, (size_t)g->tensors[t].rank * sizeof(int64_t), h);
    }
  }
  return h;
}

int32_t mi__space_probe_begin(mi_space_t *s) {
  const mi_graph_t *g = s->g;
  s->probe_consts = calloc((size_t)g->tensor_count + 1, sizeof *s->probe_consts);
  if (!s->probe_consts) return MI_ERR_OUT_OF_MEMORY;
  for (int32_t t = 0; t < g->tensor_count; t++)
    if (g->tensors[t].data && !(s->probe_consts[t] = mi__const_view(&g->tensors[t])))
      return MI_ERR_OUT_OF_MEMORY;
  return MI_OK;
}

void mi__space_probe_end(mi_space_t *s) {
  for (int32_t t = 0; s->probe_consts && t < s->g->tensor_count; t++)
    free(s->probe_consts[t]); /* views: the graph owns the data */
  free(s->probe_consts);
  s->probe_consts = NULL;
  free(s->probe_cache);
  s->probe_cache = NULL;
  s->probe_cache_n = s->probe_cache_cap = 0;
}

/* 1 when variant `v` prepares node `n` with its default knobs (or cannot be asked: it does
 * not compute in FP32, the precision the model comes in, nor is a BF16 variant, which the
 * executor hands the FP32 layer as it is), 0 when the plugin refuses it. */
int mi__space_probe(mi_space_t *s, int32_t n, int32_t v) {
  const mi_variant_desc_t *vd = &s->variants[v];
  const mi_plugin_t *p = s->plugin;
  uint64_t sig;
  mi__kdesc_t k;
  mi_kernel_t *kern = NULL;
  mi_error_t e = {0};
  int32_t rc, ok;
  if ((!(vd->dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32)) && !mi__space_precision_variant(vd->dtype_mask)) ||
      !p->api.kernel_prepare)
    return 1;
  sig = node_signature(s->g, n);
  for (int32_t i = 0; i < s->probe_cache_n; i++)
    if (s->probe_cache[i].sig == sig && s->probe_cache[i].variant == v) return s->probe_cache[i].ok;
  if (s->opts.probe_pool) {
    /* In the device's worker: plugin code that crashes or hangs there costs only the device. */
    if (mi_worker_probe(s->opts.probe_pool, s->opts.probe_spec, s->opts.probe_model,
                        s->opts.probe_inputs, n, s->g->nodes[n].op_type, vd->id, &rc,
                        &s->probe_err) != MI_OK) {
      char msg[MI_ERROR_MESSAGE_SIZE];
      snprintf(msg, sizeof msg, "%s", s->probe_err.message);
      mi_errorf(&s->probe_err, s->probe_err.code, "probing variant %s on node %s (%s): %s",
                vd->id, s->g->nodes[n].name ? s->g->nodes[n].name : "?", s->g->nodes[n].op_type,
                msg);
      return -1;
    }
  } else {
    memset(&k, 0, sizeof k);
    if (mi__kdesc_build(&k, s->g, n, s->probe_consts, &e) != MI_OK) {
      mi__kdesc_free(&k);
      return 1; /* cannot describe it: leave the answer to the measurement */
    }
    k.desc.variant_id = vd->id;
    rc = p->api.kernel_prepare(p->ctx, s->device, &k.desc, &kern, &e);
    if (rc == MI_OK && kern) p->api.kernel_release(p->ctx, kern);
    mi__kdesc_free(&k);
  }
  ok = !(rc == MI_ERR_UNSUPPORTED || rc == MI_ERR_INVALID_CONFIG);
  s->probes++;
  if (s->probe_cache_n == s->probe_cache_cap) {
    int32_t cap = s->probe_cache_cap ? s->probe_cache_cap * 2 : 32;
    void *nc = realloc(s->probe_cache, (size_t)cap * sizeof *s->probe_cache);
    if (!nc) return ok;
    s->probe_cache = nc;
    s->probe_cache_cap = cap;
  }
  s->probe_cache[s->probe_cache_n].sig = sig;
  s->probe_cache[s->probe_cache_n].variant = v;
  s->probe_cache[s->probe_cache_n++].ok = ok;
  return ok;
}

int32_t mi_space_pruned_variants(const mi_space_t *s, int32_t *probes) {
  if (probes) *probes = s ? s->probes : 0;
  return s ? s->pruned : 0;
}
