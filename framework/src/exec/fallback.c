/* fallback.c - nodes the session's device refuses, run as single-node kernels on a second
 * device (mi_session_options_t.fallback_plugin, in practice the CPU plugin) between host copies,
 * so that the rest of the run sees them as it sees the reference interpreter's results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

/* What one host step holds on the fallback device: its kernel and its runtime tensors in
 * kernel_run order (graph tensor indices; their buffers are s->fb_bufs[t]). */
typedef struct mi__fb_step {
  mi_kernel_t *kernel;
  int32_t input_count, output_count;
  int32_t *inputs, *outputs;
} mi__fb_step_t;

static void fb_step_free(const mi_plugin_t *p, mi__fb_step_t *f) {
  if (!f) return;
  if (f->kernel) p->api.kernel_release(p->ctx, f->kernel);
  free(f->inputs);
  free(f->outputs);
  free(f);
}

/* A buffer of the fallback device for tensor t, made once and shared by every step using it. */
static int32_t fb_buffer(mi_session_t *s, int32_t t, mi_error_t *err) {
  const mi_plugin_t *p = s->fb_plugin;
  mi_error_t perr = {0};
  uint64_t bytes;
  int ok = 1, rc;
  if (s->fb_bufs[t]) return MI_OK;
  bytes = mi__tensor_bytes(&s->g->tensors[t], &ok);
  if (!ok) return MI_ERR_UNSUPPORTED;
  rc = p->api.buffer_alloc(p->ctx, s->fb_device, bytes ? bytes : 1, &s->fb_bufs[t], &perr);
  if (rc)
    return mi_errorf(err, rc, "fallback device '%s': buffer of tensor '%s': %s", p->name,
                     s->g->tensors[t].name, perr.message[0] ? perr.message : mi_status_message(rc));
  return MI_OK;
}

static int32_t copy_list(int32_t **dst, const int32_t *src, int32_t n) {
  if (!(*dst = malloc((size_t)n * sizeof **dst + 1))) return MI_ERR_OUT_OF_MEMORY;
  if (n) memcpy(*dst, src, (size_t)n * sizeof **dst);
  return MI_OK;
}

int32_t mi__fallback_prepare(mi_session_t *s, mi__step_t *st, int32_t node, mi_error_t *err) {
  const mi_plugin_t *p = s->fb_plugin;
  const mi_node_t *n = &s->g->nodes[node];
  mi_error_t perr = {0};
  mi__kdesc_t k;
  mi__kreq_t req;
  mi__fb_step_t *f;
  int32_t rc;
  if (!p || n->subgraph_count) return 0;
  if (!s->fb_bufs && !(s->fb_bufs = calloc((size_t)s->g->tensor_count + 1, sizeof *s->fb_bufs)))
    return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  /* Host copies are in ONNX order whatever the primary stores: describe them so. */
  memset(&req, 0, sizeof req);
  req.nodes = &node;
  req.node_count = 1;
  req.plain_layout = 1;
  if (mi__kdesc_build_req(&k, s->g, &req, s->consts, &perr)) return 0; /* not describable */
  /* Every output the node writes must come back, or the rest of the run would miss it. */
  for (int32_t j = 0, found; j < n->output_count; j++) {
    if (n->outputs[j] < 0) continue;
    found = 0;
    for (int32_t o = 0; o < k.output_count; o++) found |= k.graph_outputs[o] == n->outputs[j];
    if (!found) {
      mi__kdesc_free(&k);
      return 0;
    }
  }
  if (!(f = calloc(1, sizeof *f))) {
    mi__kdesc_free(&k);
    return -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  rc = p->api.kernel_prepare(p->ctx, s->fb_device, &k.desc, &f->kernel, &perr);
  if (rc == MI_OK && f->kernel) {
    rc = 1;
    f->input_count = k.input_count;
    f->output_count = k.output_count;
    if (copy_list(&f->inputs, k.graph_inputs, k.input_count) ||
        copy_list(&f->outputs, k.graph_outputs, k.output_count))
      rc = -mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  } else {
    rc = 0; /* refused (or failed) there too: the reference runs it */
  }
  mi__kdesc_free(&k);
  for (int32_t j = 0; rc == 1 && j < f->input_count + f->output_count; j++) {
    int32_t t = j < f->input_count ? f->inputs[j] : f->outputs[j - f->input_count];
    int32_t b = fb_buffer(s, t, err);
    if (b == MI_ERR_UNSUPPORTED) rc = 0;
    else if (b)
      rc = -b;
  }
  if (rc != 1) {
    fb_step_free(p, f);
    return rc;
  }
  st->fb = f;
  return 1;
}

/* The host copy of runtime tensor t among the node's inputs. */
static const mi_array_t *input_value(const mi_session_t *s, const mi_node_t *n, int32_t t,
                                     const mi_array_t *const *ins) {
  for (int32_t j = 0; j < n->input_count; j++)
    if (n->inputs[j] == t && ins[j]) return ins[j];
  return NULL;
}

int32_t mi__fallback_run(mi_session_t *s, const mi__step_t *st, const mi_array_t *const *ins,
                         mi_array_t **outs, mi_error_t *err) {
  const mi_plugin_t *p = s->fb_plugin;
  const mi_node_t *n = &s->g->nodes[st->node];
  const mi__fb_step_t *f = st->fb;
  mi_buffer_t *bi[64], *bo[16];
  mi_run_stats_t stats;
  mi_error_t perr = {0};
  char lb[32];
  const char *label = mi__node_label(s->g, st->node, lb, sizeof lb);
  int32_t rc;
  if (f->input_count > 64 || f->output_count > 16)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s': too many inputs or outputs", label);
  for (int32_t j = 0; j < f->input_count; j++) {
    int32_t t = f->inputs[j];
    const mi_array_t *a = input_value(s, n, t, ins);
    int ok = 1;
    uint64_t want = mi__tensor_bytes(&s->g->tensors[t], &ok);
    if (!a || a->nbytes != want)
      return mi_errorf(err, MI_ERR_INTERNAL, "node '%s': input '%s' has no value of its size",
                       label, s->g->tensors[t].name);
    rc = p->api.buffer_write(p->ctx, s->fb_bufs[t], 0, a->data, a->nbytes, &perr);
    if (rc)
      return mi_errorf(err, rc, "node '%s' on the fallback device: upload: %s", label,
                       perr.message[0] ? perr.message : mi_status_message(rc));
    bi[j] = s->fb_bufs[t];
  }
  for (int32_t j = 0; j < f->output_count; j++) bo[j] = s->fb_bufs[f->outputs[j]];
  memset(&stats, 0, sizeof stats);
  stats.struct_size = (uint32_t)sizeof stats;
  rc = p->api.kernel_run(p->ctx, f->kernel, bi, f->input_count, bo, f->output_count, &stats,
                         &perr);
  if (rc)
    return mi_errorf(err, rc, "node '%s' (%s) on the fallback device '%s': %s", label,
                     n->op_type, p->name, perr.message[0] ? perr.message : mi_status_message(rc));
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t t = n->outputs[j], o = 0;
    const mi_tensor_t *tt;
    if (t < 0) continue;
    while (o < f->output_count && f->outputs[o] != t) o++;
    tt = &s->g->tensors[t];
    int64_t dims[MI_MAX_RANK];
    memcpy(dims, tt->dims, sizeof dims);
    /* an output whose row count is data: the rows the device wrote (run_host_step checks them
     * as it checks the reference's shapes) */
    if (MI_HAS_FIELD(&stats, mi_run_stats_t, rows) && stats.has_rows && stats.rows_output == o && tt->rank >= 1 &&
        stats.rows >= 0 && stats.rows <= tt->dims[0])
      dims[0] = stats.rows;
    if (o == f->output_count || !(outs[j] = mi_array_create(tt->dtype, tt->rank, dims)))
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "node '%s': out of memory", label);
    rc = p->api.buffer_read(p->ctx, bo[o], 0, outs[j]->data, outs[j]->nbytes, &perr);
    if (rc)
      return mi_errorf(err, rc, "node '%s' on the fallback device: download: %s", label,
                       perr.message[0] ? perr.message : mi_status_message(rc));
  }
  return MI_OK;
}

/* Whether step i may join a run of refused nodes: a host step of a node without subgraphs. */
static int groupable(const mi_session_t *s, int32_t i) {
  return s->steps[i].kind == MI__STEP_HOST && !s->g->nodes[s->steps[i].node].subgraph_count;
}

int32_t mi__fallback_plan(mi_session_t *s, mi_error_t *err) {
  int32_t *nodes = NULL, *at = NULL, rc = MI_OK, k = 0;
  uint8_t *on = NULL;
  if (!s->fb_plugin) return MI_OK;
  nodes = malloc(((size_t)s->step_count + 1) * sizeof *nodes);
  at = malloc(((size_t)s->step_count + 1) * sizeof *at);
  on = malloc((size_t)s->step_count + 1);
  if (!nodes || !at || !on) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  /* Runs of host steps with nothing between them that runs (folded steps run nothing): the run
   * executes at its first step's place, which sees every value its later steps would. */
  for (int32_t i = 0, n = 0; i < s->step_count; i = n ? at[n - 1] + 1 : i + 1) {
    mi__fb_group_t *q = NULL;
    n = 0;
    for (int32_t j = i; j < s->step_count; j++) {
      if (s->steps[j].kind == MI__STEP_FOLDED && n) continue;
      if (!groupable(s, j)) break;
      at[n] = j;
      nodes[n++] = s->steps[j].node;
    }
    if (n < 2) continue;
    if ((rc = mi__fallback_group(s, nodes, n, on, &q, err)) < 0) {
      rc = -rc;
      goto done;
    }
    rc = MI_OK;
    if (!q) continue;
    for (int32_t m = 0; m < n; m++) {
      mi__step_t *st = &s->steps[at[m]];
      fb_step_free(s->fb_plugin, st->fb); /* prepared alone before (an op the reference lacks) */
      st->fb = NULL;
      st->grouped = 1;
      st->on_fb = (int8_t)on[m];
    }
    s->steps[at[0]].group = q;
  }
  /* The nodes left alone: each as a kernel of its own, as before. */
  for (int32_t i = 0, fb; i < s->step_count; i++) {
    mi__step_t *st = &s->steps[i];
    if (st->kind != MI__STEP_HOST) continue;
    if (!st->grouped && !st->fb) {
      if ((fb = mi__fallback_prepare(s, st, st->node, err)) < 0) {
        rc = -fb;
        goto done;
      }
      st->on_fb = (int8_t)(fb == 1);
    }
    if (k < s->fallback_count) s->fallback_on[k++] = (uint8_t)st->on_fb;
  }
done:
  free(nodes);
  free(at);
  free(on);
  return rc;
}

void mi__fallback_free(mi_session_t *s) {
  const mi_plugin_t *p = s->fb_plugin;
  if (!p) return;
  for (int32_t i = 0; s->steps && i < s->step_count; i++) {
    fb_step_free(p, s->steps[i].fb);
    s->steps[i].fb = NULL;
    mi__fallback_group_free(s->steps[i].group);
    s->steps[i].group = NULL;
  }
  for (int32_t t = 0; s->fb_bufs && s->g && t < s->g->tensor_count; t++)
    if (s->fb_bufs[t]) p->api.buffer_free(p->ctx, s->fb_bufs[t]);
  free(s->fb_bufs);
  s->fb_bufs = NULL;
}
