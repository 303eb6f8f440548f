/* test_vulkan_util.h - helpers for the Vulkan plugin tests: lavapipe selection, loading the
 * plugin (tools/drive/drive_vulkan.h) or skipping, and session-vs-reference comparison. */
#ifndef TEST_VULKAN_UTIL_H
#define TEST_VULKAN_UTIL_H

#include "test_util.h"

#include "drive_vulkan.h"

/* tv_load, or the whole test skipped (exit 77) when there is no Vulkan device or plugin. */
static inline mi_registry_t *tv_load_or_skip(mi_plugin_t **plugin, const char *cache_dir) {
  mi_registry_t *r = tv_load(plugin, cache_dir);
  if (*plugin) return r;
  mi_registry_destroy(r);
  TU_SKIP("no Vulkan device (lavapipe) or plugin");
}

/* Runs g on vulkan:0 (every node given `variant`/knobs) and on the reference; returns the
 * rel L2 of output 0 or a negative status; *fallbacks and *dev_ns are filled. */
static inline double tv_compare(mi_plugin_t *p, mi_graph_t *g, const char *node, const char *variant,
                                const mi_knob_value_t *knobs, int nk, int allow_fallback,
                                int *fallbacks, uint64_t *dev_ns, mi_error_t *err) {
  mi_session_options_t o;
  mi_node_choice_t ch;
  mi_session_t *s = NULL;
  mi_array_t *in[8] = {0}, *out_d = NULL, *out_r = NULL;
  int32_t i, nin = g->input_count, rc;
  double e = -1;
  if (mi_graph_infer_shapes(g, err) != MI_OK) return -2;
  for (i = 0; i < nin; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    in[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims);
    mi_array_fill_random(in[i], 7 + (uint64_t)i);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = allow_fallback;
  if (node) {
    memset(&ch, 0, sizeof ch);
    ch.node = node;
    ch.variant_id = variant;
    ch.knobs = knobs;
    ch.knob_count = nk;
    o.choices = &ch;
    o.choice_count = 1;
  }
  rc = mi_session_create(g, p, 0, &o, &s, err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)in, nin, &out_d, 1, err);
  if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, &out_r, 1, err);
  if (rc == MI_OK) {
    e = tu_rel_l2_arrays(out_d, out_r);
    if (fallbacks) *fallbacks = mi_session_fallback_count(s);
    if (dev_ns && !mi_session_device_time(s, dev_ns)) *dev_ns = 0;
  } else {
    e = -(double)rc;
  }
  mi_session_destroy(s);
  for (i = 0; i < nin; i++) mi_array_destroy(in[i]);
  mi_array_destroy(out_d);
  mi_array_destroy(out_r);
  return e;
}

#endif
