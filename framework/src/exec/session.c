/* session.c - sessions: a graph prepared for one plugin device (kernels prepared, constants
 * folded, buffers allocated) or for the reference interpreter; create, destroy and queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "graph/graph.h"
#include "graph/ms_fuse.h"
#include "graph/nbits.h"
#include "ref/ref.h"

/* Reads a field of the caller's options only when the struct they declared contains it. */
#define OPT(opts, field, dflt) \
  ((opts) && MI_HAS_FIELD(opts, mi_session_options_t, field) ? (opts)->field : (dflt))

/* True when every tensor a node touches has a concrete shape. */
static int shapes_concrete(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int ok;
    for (int32_t j = 0; j < n->input_count; j++)
      if (n->inputs[j] >= 0 && (mi__tensor_bytes(&g->tensors[n->inputs[j]], &ok), !ok)) return 0;
    for (int32_t j = 0; j < n->output_count; j++)
      if (n->outputs[j] >= 0 && (mi__tensor_bytes(&g->tensors[n->outputs[j]], &ok), !ok))
        return 0;
  }
  return 1;
}

static int inputs_concrete(const mi_graph_t *g) {
  int ok = 1;
  for (int32_t i = 0; i < g->input_count && ok; i++)
    mi__tensor_bytes(&g->tensors[g->inputs[i]], &ok);
  return ok;
}

/* FNV-1a over the device and each knob's name and value: the identity of a knob set
 * (mi_plugin_t.device_knobs_held), never 0 (the defaults) or MI__KNOBS_INHERIT. */
static uint64_t knobs_identity(uint32_t device, const mi_knob_value_t *k, int32_t n) {
  uint64_t h = mi_hash64(&device, sizeof device, MI_HASH64_SEED);
  for (int32_t i = 0; i < n; i++) {
    h = mi_hash64(k[i].name, strlen(k[i].name) + 1, h);
    h = mi_hash64(&k[i].i, sizeof k[i].i, h);
    h = mi_hash64(&k[i].f, sizeof k[i].f, h);
  }
  return h == 0 || h == MI__KNOBS_INHERIT ? 1 : h;
}

/* The session's own copy of its device knobs (the caller's names need not outlive it). */
static int32_t keep_knobs(mi_session_t *s, const mi_knob_value_t *k, int32_t n, mi_error_t *err) {
  if (s->knobs_id == MI__KNOBS_INHERIT || n <= 0 || !k) return MI_OK;
  if (!(s->knobs = calloc((size_t)n, sizeof *s->knobs)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    s->knobs[i] = k[i];
    s->knobs[i].name = NULL;
    if (!k[i].name || !(s->knobs[i].name = strdup(k[i].name))) {
      s->knob_count = i;
      return k[i].name ? mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory")
                       : mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "device knob %d has no name", (int)i);
    }
  }
  s->knob_count = n;
  s->knobs_id = knobs_identity(s->device, s->knobs, n);
  return MI_OK;
}

/* The plugin's declared defaults of its device-scope knobs, set again. */
static int32_t knobs_default(mi_session_t *s, mi_error_t *perr) {
  const mi_plugin_t *p = s->plugin;
  mi_knob_desc_t d[16];
  mi_knob_value_t v[16];
  uint32_t count = 0;
  int32_t n = 0, rc;
  if (!p->api.knob_count || !p->api.knob_desc ||
      (rc = p->api.knob_count(p->ctx, s->device, &count, perr)))
    return MI_OK; /* nothing it could have changed */
  for (uint32_t i = 0; i < count && n < (int32_t)(sizeof d / sizeof d[0]); i++) {
    memset(&d[n], 0, sizeof d[n]);
    d[n].struct_size = sizeof d[n];
    if ((rc = p->api.knob_desc(p->ctx, s->device, i, &d[n], perr))) return rc;
    if (d[n].scope != MI_KNOB_SCOPE_DEVICE) continue;
    d[n].name[sizeof d[n].name - 1] = 0;
    v[n].name = d[n].name;
    v[n].i = d[n].default_int;
    v[n].f = d[n].default_float;
    n++;
  }
  return n ? p->api.set_device_knobs(p->ctx, s->device, v, n, perr) : MI_OK;
}

int32_t mi__session_knobs_set(mi_session_t *s, mi_error_t *err) {
  mi_plugin_t *p = s->plugin;
  mi_error_t perr = {0};
  int32_t rc;
  if (!p || s->knobs_id == MI__KNOBS_INHERIT || p->device_knobs_held == s->knobs_id ||
      !p->api.set_device_knobs)
    return MI_OK;
  rc = s->knob_count ? p->api.set_device_knobs(p->ctx, s->device, s->knobs, s->knob_count, &perr)
                     : knobs_default(s, &perr);
  if (rc) {
    p->device_knobs_held = MI__KNOBS_INHERIT; /* unknown now: whoever runs next sets its own */
    return mi_errorf(err, rc, "plugin '%s': device knobs refused: %s", p->name,
                     perr.message[0] ? perr.message : mi_status_message(rc));
  }
  p->device_knobs_held = s->knobs_id;
  return MI_OK;
}

static int32_t create_device(mi_session_t *s, const mi_session_options_t *opts,
                             mi_error_t *err) {
  const mi_graph_t *g = s->g;
  const mi_plugin_t *p = s->plugin;
  int32_t nt = g->tensor_count, rc;
  int32_t knob_count = OPT(opts, device_knob_count, 0);
  s->steps = calloc((size_t)g->node_count + 1, sizeof *s->steps);
  s->consts = calloc((size_t)nt + 1, sizeof *s->consts);
  s->const_owned = calloc((size_t)nt + 1, 1);
  s->bufs = calloc((size_t)nt + 1, sizeof *s->bufs);
  s->buf_bytes = calloc((size_t)nt + 1, sizeof *s->buf_bytes);
  s->hval = calloc((size_t)nt + 1, sizeof *s->hval);
  s->hown = calloc((size_t)nt + 1, sizeof *s->hown);
  s->on_device = calloc((size_t)nt + 1, 1);
  s->rows = malloc(((size_t)nt + 1) * sizeof *s->rows);
  s->dlayout = calloc((size_t)nt + 1, sizeof *s->dlayout);
  s->dblock = calloc((size_t)nt + 1, sizeof *s->dblock);
  if (!s->steps || !s->consts || !s->const_owned || !s->bufs || !s->buf_bytes || !s->hval ||
      !s->hown || !s->on_device || !s->rows || !s->dlayout || !s->dblock)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory creating a session");
  for (int32_t t = 0; t < nt; t++) s->rows[t] = -1;
  if (knob_count > 0 && !p->api.set_device_knobs)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "plugin '%s' has no device knobs to set", p->name);
  if ((rc = keep_knobs(s, OPT(opts, device_knobs, NULL), knob_count, err)) ||
      (rc = mi__session_knobs_set(s, err)))
    return rc;
  if (!(s->views_block = calloc((size_t)nt + 1, sizeof *s->views_block)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t t = 0; t < nt; t++) {
    if (!g->tensors[t].data) continue;
    mi__const_view_in(&g->tensors[t], &s->views_block[t]);
    s->consts[t] = &s->views_block[t];
  }
  return mi__session_prepare(s, opts, err);
}

/* The session's private copy of g (made on first use) becomes the graph it runs, and *w the
 * graph the session's rewrites change. A nested branch's graph (`reusable`) is the nested
 * session's own and is rewritten in place: its weights keep the buffers a session prepared
 * for other shapes handed over (reuse.c), so their kernels and folded values are found. */
static int32_t own_copy(mi_session_t *s, const mi_graph_t *g, mi_graph_t **w, mi_error_t *err) {
  if (s->reusable) {
    *w = (mi_graph_t *)g;
    return MI_OK;
  }
  /* The copy shares the caller's constants (which must outlive the session anyway): the rewrites
   * below change nodes and shapes, never a constant's bytes, and a second copy of the weights
   * was a tenth to a quarter of a real model's peak heap (ppocr_v4_rec: 10.8 of 47.5 MB). */
  if (!s->own && !(s->own = mi__graph_clone_shared(g)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory cloning the graph");
  s->g = s->own;
  *w = s->own;
  return MI_OK;
}

MI_API int32_t mi_session_create(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                                 const mi_session_options_t *opts, mi_session_t **out,
                                 mi_error_t *err) {
  return mi__session_create(g, plugin, device, opts, NULL, 0, out, err);
}

int32_t mi__session_create(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                           const mi_session_options_t *opts, mi_session_t *donor, int flags,
                           mi_session_t **out, mi_error_t *err) {
  mi_session_t *s;
  mi_graph_t *w = NULL;
  int32_t rc = MI_OK;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_session_create: out is NULL");
  *out = NULL;
  if (!g) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_session_create: graph is NULL");
  if (opts && opts->struct_size < sizeof(uint32_t))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_session_create: options struct_size unset");
  s = calloc(1, sizeof *s);
  if (!s) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory creating a session");
  s->g = g;
  s->plugin = plugin;
  s->device = device;
  s->fb_plugin = OPT(opts, fallback_plugin, NULL);
  s->fb_device = OPT(opts, fallback_device, 0);
  s->reusable = (flags & MI__SESSION_REUSABLE) != 0;
  if (flags & MI__SESSION_INNER) s->knobs_id = MI__KNOBS_INHERIT;
  if (!plugin) goto done; /* the reference path runs the caller's graph as it is */
  if (!plugin->api.kernel_prepare || !plugin->api.kernel_run || !plugin->api.buffer_alloc) {
    rc = mi_errorf(err, MI_ERR_ABI, "plugin '%s' lacks kernel functions", plugin->name);
    goto done;
  }
  if (device >= plugin->device_count) {
    rc = mi_errorf(err, MI_ERR_NOT_FOUND, "plugin '%s' has no device %u", plugin->name, device);
    goto done;
  }
  if (s->fb_plugin && (!s->fb_plugin->api.kernel_prepare || !s->fb_plugin->api.kernel_run ||
                       !s->fb_plugin->api.buffer_alloc ||
                       s->fb_device >= s->fb_plugin->device_count)) {
    rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "fallback device %s:%u cannot run kernels",
                   s->fb_plugin->name, s->fb_device);
    goto done;
  }
  if (!shapes_concrete(g)) {
    /* The device needs concrete shapes; infer them on a private copy. */
    if ((rc = own_copy(s, g, &w, err)) || (rc = mi_graph_infer_shapes(w, err))) goto done;
    /* Static inference cannot see through value-dependent control flow (an If on an input):
     * one reference run on zero inputs shows the shapes, fixed from here on. */
    if (!shapes_concrete(s->g) && inputs_concrete(s->g)) {
      if ((rc = mi__graph_probe_shapes(w, err))) goto done;
      mi__value_rows_widen(w);
      s->shapes_probed = 1;
    }
    if (!shapes_concrete(s->g)) {
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "graph '%s': shapes are not concrete (fix dynamic input dims first)",
                     g->name ? g->name : "");
      goto done;
    }
  }
  if (mi__graph_has_nbits(s->g)) {
    /* A graph built in code (a loaded model's were lowered by the loader): MatMulNBits become a
     * blocked DequantizeLinear of their codes + MatMul (+ Add), on a private copy, folded to
     * float or run on the codes by a device that takes them. New nodes shift the indices of
     * those after them in mi_session_node_time. */
    if ((rc = own_copy(s, g, &w, err)) || (rc = mi__graph_lower_nbits(w, err)) ||
        (rc = mi_graph_infer_shapes(w, err)))
      goto done;
  }
  if (mi__graph_has_msfuse(s->g)) {
    /* A graph built in code holding ONNX Runtime's fused transformer ops (a loaded model's were
     * lowered by the loader): the same lowering, on a private copy (graph/ms_fuse_lower.c). */
    if ((rc = own_copy(s, g, &w, err)) || (rc = mi__graph_lower_msfuse(w, err)) ||
        (rc = mi_graph_infer_shapes(w, err)))
      goto done;
  }
  if (mi__qdq_params_missing(s->g)) {
    /* A QDQ model from a file: its quantization into the tensor fields, on a private copy. */
    if ((rc = own_copy(s, g, &w, err)) || (rc = mi__qdq_params_set(w, err))) goto done;
  }
  if (mi__graph_pad_foldable(s->g)) {
    /* Zero Pads before Convs become the Convs' padding, on a private copy. */
    if ((rc = own_copy(s, g, &w, err))) goto done;
    if (mi__graph_fold_pads(w) < 0) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory folding Pad nodes");
      goto done;
    }
  }
  if (mi__graph_ln_fusable(s->g)) {
    /* Spelled-out layer norms become one LayerNormalization each, on a private copy. */
    if ((rc = own_copy(s, g, &w, err))) goto done;
    if (mi__graph_fuse_layernorms(w) < 0) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory fusing layer norms");
      goto done;
    }
  }
  if (mi__graph_gelu_fusable(s->g)) {
    /* Spelled-out exact Gelus become one Gelu node each, on a private copy. */
    if ((rc = own_copy(s, g, &w, err))) goto done;
    if (mi__graph_fuse_gelus(w) < 0) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory fusing Gelus");
      goto done;
    }
  }
  s->per_node_timing = OPT(opts, per_node_timing, 0) != 0;
  s->async = !s->per_node_timing && plugin->api.kernel_enqueue && plugin->api.device_sync;
  /* The donor's kernels are the same plugin device's: another device's would not run here. */
  s->donor = donor && donor->plugin == plugin && donor->device == device ? donor : NULL;
  rc = create_device(s, opts, err);
  s->donor = NULL;
done:
  if (rc != MI_OK) {
    mi_session_destroy(s);
    return rc;
  }
  *out = s;
  return MI_OK;
}

MI_API void mi_session_destroy(mi_session_t *s) {
  const mi_plugin_t *p;
  if (!s) return;
  p = s->plugin;
  mi__fallback_free(s);
  for (int32_t i = 0; i < s->step_count; i++) {
    if (s->steps[i].kernel) p->api.kernel_release(p->ctx, s->steps[i].kernel);
    free(s->steps[i].inputs); /* (outputs and nodes are in the same allocation: prepare.c) */
    free(s->steps[i].sig);
    free(s->steps[i].variant);
  }
  free(s->steps);
  if (p) mi__memplan_free(s);
  for (int32_t t = 0; s->g && t < s->g->tensor_count; t++) {
    /* (a view, not owned, is one of views_block's: the graph owns the data) */
    if (s->consts && s->consts[t] && s->const_owned[t]) mi_array_destroy(s->consts[t]);
    if (s->hown && s->hown[t]) mi_array_destroy(s->hown[t]);
  }
  free(s->consts);
  free(s->views_block);
  free(s->const_owned);
  free(s->bufs);
  free(s->buf_bytes);
  free(s->hval);
  free(s->hown);
  free(s->on_device);
  free(s->rows);
  free(s->node_wall_ns);
  free(s->node_dev_ns);
  free(s->node_timed);
  for (int32_t i = 0; i < s->fallback_count; i++) free(s->fallback[i]);
  free(s->fallback);
  free(s->fallback_on);
  for (int32_t i = 0; i < s->unfused_count; i++) free(s->unfused[i]);
  free(s->unfused);
  mi__nested_free(s);
  mi__refusals_free(s);
  mi__sig_index_free(s);
  free(s->dlayout);
  free(s->dblock);
  for (int32_t i = 0; i < s->knob_count; i++) free((char *)s->knobs[i].name);
  free(s->knobs);
  mi_graph_destroy(s->own);
  free(s);
}

MI_API int32_t mi_session_run(mi_session_t *s, const mi_array_t *const *inputs,
                              int32_t input_count, mi_array_t **outputs, int32_t output_count,
                              mi_error_t *err) {
  int32_t rc;
  if (!s || (!outputs && output_count))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_session_run: NULL argument");
  for (int32_t i = 0; i < output_count; i++) outputs[i] = NULL;
  if (input_count != s->g->input_count || output_count != s->g->output_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "mi_session_run: the graph has %d inputs and %d outputs, got %d and %d",
                     (int)s->g->input_count, (int)s->g->output_count, (int)input_count,
                     (int)output_count);
  for (int32_t i = 0; i < input_count; i++)
    if (!inputs || !inputs[i])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_session_run: input %d is NULL", (int)i);
  s->has_device_time = 0;
  if (!s->plugin) return mi_ref_run(s->g, inputs, input_count, outputs, output_count, err);
  if ((rc = mi__session_knobs_set(s, err)) == MI_OK) rc = mi__session_run_device(s, inputs, outputs, err);
  if (rc != MI_OK) {
    s->has_device_time = 0;
    for (int32_t i = 0; i < output_count; i++) {
      mi_array_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  }
  return rc;
}

MI_API int mi_session_transfers(const mi_session_t *s, uint64_t *to_device, uint64_t *to_host) {
  uint64_t in, out;
  if (!s || !s->plugin) return 0;
  in = s->xfer_in;
  out = s->xfer_out;
  for (int32_t i = 0; i < mi_session_nested_count(s); i++) {
    const mi_session_t *e = mi_session_nested(s, i, NULL, NULL, NULL);
    uint64_t a = 0, b = 0;
    if (e && mi_session_transfers(e, &a, &b)) {
      in += a;
      out += b;
    }
  }
  if (to_device) *to_device = in;
  if (to_host) *to_host = out;
  return 1;
}

MI_API int32_t mi_session_fallback_count(const mi_session_t *s) {
  return s ? s->fallback_count : 0;
}

MI_API const char *mi_session_fallback_node(const mi_session_t *s, int32_t index) {
  if (!s || index < 0 || index >= s->fallback_count) return NULL;
  return s->fallback[index];
}

MI_API int mi_session_fallback_where(const mi_session_t *s, int32_t index, mi_plugin_t **plugin,
                                     uint32_t *device) {
  int on = s && index >= 0 && index < s->fallback_count && s->fallback_on && s->fallback_on[index];
  if (plugin) *plugin = on ? s->fb_plugin : NULL;
  if (device) *device = on ? s->fb_device : 0;
  return on;
}

MI_API int32_t mi_session_fallback_device_count(const mi_session_t *s) {
  int32_t n = 0;
  for (int32_t i = 0; s && s->fallback_on && i < s->fallback_count; i++) n += s->fallback_on[i];
  return n;
}

MI_API int mi_session_device_time(const mi_session_t *s, uint64_t *ns) {
  if (!s || !s->has_device_time) return 0;
  if (ns) *ns = s->device_time_ns;
  return 1;
}

MI_API int mi_session_node_time(const mi_session_t *s, int32_t node, uint64_t *wall_ns,
                                uint64_t *device_ns) {
  if (!s || !s->node_timed || node < 0 || node >= s->g->node_count || !s->node_timed[node])
    return 0;
  if (wall_ns) *wall_ns = s->node_wall_ns[node];
  if (device_ns && s->node_timed[node] == 2) *device_ns = s->node_dev_ns[node];
  return s->node_timed[node];
}

MI_API int32_t mi_session_kernel_count(const mi_session_t *s) {
  return s && s->plugin ? s->kernel_count : -1;
}

MI_API int32_t mi_session_kernel_nodes(const mi_session_t *s, int32_t index,
                                       const int32_t **nodes) {
  if (nodes) *nodes = NULL;
  if (!s || index < 0) return 0;
  for (int32_t i = 0; i < s->step_count; i++) {
    const mi__step_t *st = &s->steps[i];
    if (st->kind != MI__STEP_DEVICE || index-- > 0) continue;
    if (nodes) *nodes = st->node_count > 1 ? st->nodes : &st->node;
    return st->node_count > 1 ? st->node_count : 1;
  }
  return 0;
}

MI_API int mi_session_memory(const mi_session_t *s, uint64_t *planned, uint64_t *unplanned,
                             uint64_t *live_peak) {
  if (!s || !s->plugin) return 0;
  if (planned) *planned = s->mem_planned;
  if (unplanned) *unplanned = s->mem_unplanned;
  if (live_peak) *live_peak = s->mem_live_peak;
  return 1;
}

MI_API int32_t mi_session_unfused_count(const mi_session_t *s) {
  return s ? s->unfused_count : 0;
}

MI_API const char *mi_session_unfused(const mi_session_t *s, int32_t index) {
  if (!s || index < 0 || index >= s->unfused_count) return NULL;
  return s->unfused[index];
}

MI_API int32_t mi_session_kernel_reused_count(const mi_session_t *s) {
  return s && s->plugin ? s->kernels_reused : -1;
}
