/* session.c - sessions: a graph prepared for one plugin device (kernels prepared, constants
 * folded, buffers allocated) or for the reference interpreter; create, destroy and queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
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

static const mi_node_choice_t *find_choice(const mi_session_options_t *opts, const char *node) {
  int32_t count = OPT(opts, choice_count, 0);
  const mi_node_choice_t *choices = OPT(opts, choices, NULL);
  for (int32_t i = 0; i < count && choices; i++)
    if (choices[i].node && node && strcmp(choices[i].node, node) == 0) return &choices[i];
  return NULL;
}

static int32_t add_fallback(mi_session_t *s, const char *label, mi_error_t *err) {
  char **grown = realloc(s->fallback, (size_t)(s->fallback_count + 1) * sizeof *grown);
  if (!grown) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  s->fallback = grown;
  s->fallback[s->fallback_count] = strdup(label);
  if (!s->fallback[s->fallback_count])
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  s->fallback_count++;
  return MI_OK;
}

static int32_t copy_indices(int32_t **dst, const int32_t *src, int32_t count) {
  *dst = malloc((size_t)count * sizeof **dst + 1);
  if (!*dst) return MI_ERR_OUT_OF_MEMORY;
  if (count) memcpy(*dst, src, (size_t)count * sizeof **dst);
  return MI_OK;
}

/* Prepares node `i` on the device, or records it as a host fallback when the device refuses
 * it and fallback is allowed. */
static int32_t prepare_node(mi_session_t *s, int32_t i, const mi_session_options_t *opts,
                            mi_error_t *err) {
  const mi_graph_t *g = s->g;
  const mi_node_t *n = &g->nodes[i];
  const mi_plugin_t *p = s->plugin;
  mi__step_t *st = &s->steps[s->step_count];
  const mi_node_choice_t *choice = find_choice(opts, n->name);
  mi_error_t perr = {0};
  mi__kdesc_t k;
  char lb[32];
  const char *label = mi__node_label(g, i, lb, sizeof lb);
  int32_t rc = mi__kdesc_build(&k, g, i, s->consts, err);
  if (rc) return rc;
  if (choice) {
    k.desc.variant_id = choice->variant_id;
    k.desc.knob_count = choice->knob_count;
    k.desc.knobs = choice->knobs;
  }
  st->node = i;
  if (copy_indices(&st->inputs, k.graph_inputs, k.input_count) ||
      copy_indices(&st->outputs, k.graph_outputs, k.output_count)) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  st->input_count = k.input_count;
  st->output_count = k.output_count;
  s->step_count++;
  rc = p->api.kernel_prepare(p->ctx, s->device, &k.desc, &st->kernel, &perr);
  if (rc == MI_OK && !st->kernel) rc = mi_errorf(&perr, MI_ERR_INTERNAL, "no kernel returned");
  if (rc == MI_OK) {
    st->kind = MI__STEP_DEVICE;
  } else if (rc == MI_ERR_UNSUPPORTED && OPT(opts, allow_host_fallback, 1)) {
    st->kernel = NULL;
    st->kind = MI__STEP_HOST;
    if (!mi_ref_supports(n->op_type, g->opset))
      rc = mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "node '%s' (%s): %s; the reference interpreter lacks it too", label,
                     n->op_type, perr.message[0] ? perr.message : "refused by the device");
    else
      rc = add_fallback(s, label, err);
  } else {
    st->kernel = NULL;
    rc = mi_errorf(err, rc, "node '%s' (%s): %s", label, n->op_type,
                   perr.message[0] ? perr.message : mi_status_message(rc));
  }
done:
  mi__kdesc_free(&k);
  return rc;
}

/* Evaluates foldable nodes once; their outputs become constants. Returns 1 when folded. */
static int32_t fold(mi_session_t *s, int32_t i, mi_error_t *err) {
  const mi_node_t *n = &s->g->nodes[i];
  mi_array_t *outs[16] = {0};
  char lb[32];
  int32_t rc;
  if (n->output_count > 16) return 0;
  rc = mi__fold_node(s->g, i, s->consts, outs, err);
  if (rc < 0) {
    mi_error_t inner = err ? *err : (mi_error_t){0};
    return mi_errorf(err, -rc, "node '%s' (%s): %s", mi__node_label(s->g, i, lb, sizeof lb),
                     n->op_type, inner.message);
  }
  if (rc == 0) return 0;
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t t = n->outputs[j];
    if (t < 0) {
      mi_array_destroy(outs[j]);
      continue;
    }
    s->consts[t] = outs[j];
    s->const_owned[t] = 1;
  }
  s->steps[s->step_count].node = i;
  s->steps[s->step_count].kind = MI__STEP_FOLDED;
  s->step_count++;
  return 1;
}

/* One device buffer per runtime tensor a device kernel touches. */
static int32_t alloc_buffers(mi_session_t *s, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  for (int32_t i = 0; i < s->step_count; i++) {
    const mi__step_t *st = &s->steps[i];
    if (st->kind != MI__STEP_DEVICE) continue;
    for (int32_t j = 0; j < st->input_count + st->output_count; j++) {
      int32_t t = j < st->input_count ? st->inputs[j] : st->outputs[j - st->input_count];
      mi_error_t perr = {0};
      int ok;
      int32_t rc;
      if (s->bufs[t]) continue;
      s->buf_bytes[t] = mi__tensor_bytes(&s->g->tensors[t], &ok);
      rc = p->api.buffer_alloc(p->ctx, s->device, s->buf_bytes[t] ? s->buf_bytes[t] : 1,
                               &s->bufs[t], &perr);
      if (rc == MI_OK && !s->bufs[t]) rc = MI_ERR_INTERNAL;
      if (rc)
        return mi_errorf(err, rc, "tensor '%s': cannot allocate %llu device bytes: %s",
                         s->g->tensors[t].name, (unsigned long long)s->buf_bytes[t],
                         perr.message[0] ? perr.message : mi_status_message(rc));
    }
  }
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
  if (!s->steps || !s->consts || !s->const_owned || !s->bufs || !s->buf_bytes || !s->hval ||
      !s->hown || !s->on_device)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory creating a session");
  if (knob_count > 0) {
    mi_error_t perr = {0};
    if (!p->api.set_device_knobs)
      return mi_errorf(err, MI_ERR_UNSUPPORTED, "plugin '%s' has no device knobs to set",
                       p->name);
    rc = p->api.set_device_knobs(p->ctx, s->device, OPT(opts, device_knobs, NULL), knob_count,
                                 &perr);
    if (rc)
      return mi_errorf(err, rc, "plugin '%s': device knobs refused: %s", p->name,
                       perr.message[0] ? perr.message : mi_status_message(rc));
  }
  for (int32_t t = 0; t < nt; t++) {
    if (!g->tensors[t].data) continue;
    s->consts[t] = mi__const_view(&g->tensors[t]);
    if (!s->consts[t]) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int32_t i = 0; i < g->node_count; i++) {
    rc = fold(s, i, err);
    if (rc == 1) continue;
    if (rc) return rc;
    if ((rc = prepare_node(s, i, opts, err))) return rc;
  }
  return alloc_buffers(s, err);
}

MI_API int32_t mi_session_create(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                                 const mi_session_options_t *opts, mi_session_t **out,
                                 mi_error_t *err) {
  mi_session_t *s;
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
  if (!plugin) goto done; /* the reference path runs the caller's graph as it is */
  if (!plugin->api.kernel_prepare || !plugin->api.kernel_run || !plugin->api.buffer_alloc) {
    rc = mi_errorf(err, MI_ERR_ABI, "plugin '%s' lacks kernel functions", plugin->name);
    goto done;
  }
  if (device >= plugin->device_count) {
    rc = mi_errorf(err, MI_ERR_NOT_FOUND, "plugin '%s' has no device %u", plugin->name, device);
    goto done;
  }
  if (!shapes_concrete(g)) {
    /* The device needs concrete shapes; infer them on a private copy. */
    s->own = mi_graph_clone(g);
    if (!s->own) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory cloning the graph");
      goto done;
    }
    if ((rc = mi_graph_infer_shapes(s->own, err))) goto done;
    s->g = s->own;
    if (!shapes_concrete(s->g)) {
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "graph '%s': shapes are not concrete (fix dynamic input dims first)",
                     g->name ? g->name : "");
      goto done;
    }
  }
  rc = create_device(s, opts, err);
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
  for (int32_t i = 0; i < s->step_count; i++) {
    if (s->steps[i].kernel) p->api.kernel_release(p->ctx, s->steps[i].kernel);
    free(s->steps[i].inputs);
    free(s->steps[i].outputs);
  }
  free(s->steps);
  for (int32_t t = 0; s->g && t < s->g->tensor_count; t++) {
    if (s->bufs && s->bufs[t]) p->api.buffer_free(p->ctx, s->bufs[t]);
    if (s->consts && s->consts[t]) {
      if (s->const_owned[t])
        mi_array_destroy(s->consts[t]);
      else
        free(s->consts[t]); /* a view: the graph owns the data */
    }
    if (s->hown && s->hown[t]) mi_array_destroy(s->hown[t]);
  }
  free(s->consts);
  free(s->const_owned);
  free(s->bufs);
  free(s->buf_bytes);
  free(s->hval);
  free(s->hown);
  free(s->on_device);
  free(s->node_wall_ns);
  free(s->node_dev_ns);
  free(s->node_timed);
  for (int32_t i = 0; i < s->fallback_count; i++) free(s->fallback[i]);
  free(s->fallback);
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
  rc = mi__session_run_device(s, inputs, outputs, err);
  if (rc != MI_OK) {
    s->has_device_time = 0;
    for (int32_t i = 0; i < output_count; i++) {
      mi_array_destroy(outputs[i]);
      outputs[i] = NULL;
    }
  }
  return rc;
}

MI_API int32_t mi_session_fallback_count(const mi_session_t *s) {
  return s ? s->fallback_count : 0;
}

MI_API const char *mi_session_fallback_node(const mi_session_t *s, int32_t index) {
  if (!s || index < 0 || index >= s->fallback_count) return NULL;
  return s->fallback[index];
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
