/* session_run.c - one inference of a device session: device kernels in node order, host
 * fallback nodes in between, data moved between device and host only at those boundaries.
 * On a plugin with the asynchronous pair the kernels are enqueued and waited for once at each
 * such boundary (sync_device), never left in flight when a run returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "exec/exec.h"
#include "ref/ref.h"

static int32_t plugin_error(mi_error_t *err, int32_t rc, const mi_error_t *perr,
                            const char *what, const char *name) {
  return mi_errorf(err, rc, "%s '%s': %s", what, name,
                   perr->message[0] ? perr->message : mi_status_message(rc));
}

/* Waits for the kernels enqueued since the last wait (ABI 1.3 device_sync), adding the device
 * time it reports to the run's; a wait that reports none makes the run's device time unknown. */
static int32_t sync_device(mi_session_t *s, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  mi_run_stats_t stats;
  mi_error_t perr;
  int32_t rc;
  if (s->pending == 0) return MI_OK;
  /* (emptied, not zeroed: a whole mi_error_t zeroed per input and per kernel was 1.5% of a
   * 40-step VAD's run) */
  mi_error_clear(&perr);
  s->pending = 0;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = (uint32_t)sizeof stats;
  rc = p->api.device_sync(p->ctx, s->device, &stats, &perr);
  if (rc)
    return mi_errorf(err, rc, "device %u: an enqueued kernel failed: %s", (unsigned)s->device,
                     perr.message[0] ? perr.message : mi_status_message(rc));
  if (MI_HAS_FIELD(&stats, mi_run_stats_t, device_time_ns) && stats.has_device_time)
    s->device_time_ns += stats.device_time_ns;
  else
    s->has_device_time = 0;
  return MI_OK;
}

/* Replaces the host copy of tensor t by `a` (owned by the run, or borrowed when !own). */
static void set_host(mi_session_t *s, int32_t t, const mi_array_t *a, int own) {
  if (s->hown[t] && s->hown[t] != a) mi_array_destroy(s->hown[t]);
  s->hown[t] = own ? (mi_array_t *)a : NULL;
  s->hval[t] = a;
}

/* Makes the device buffer of t hold its current value, uploading the host copy if needed. */
static int32_t to_device(mi_session_t *s, int32_t t, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  const mi_array_t *a = s->hval[t];
  mi_error_t perr;
  int32_t rc;
  if (s->on_device[t]) return MI_OK;
  mi_error_clear(&perr);
  if (!a)
    return mi_errorf(err, MI_ERR_INTERNAL, "tensor '%s' has no value", s->g->tensors[t].name);
  /* The buffer may be shared with a tensor an enqueued kernel still reads (memory plan). */
  if ((rc = sync_device(s, err))) return rc;
  if (s->dlayout[t] != MI_LAYOUT_NCHW) {
    /* Stored in another layout on the device: convert on the way. */
    void *tmp = malloc(s->buf_bytes[t] ? s->buf_bytes[t] : 1);
    if (!tmp) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tensor '%s': out of memory",
                               s->g->tensors[t].name);
    if (a->rank != 4 || mi_dtype_size(a->dtype) == 0) {
      free(tmp);
      return mi_errorf(err, MI_ERR_INTERNAL, "tensor '%s': not a 4-D activation",
                       s->g->tensors[t].name);
    }
    mi__layout_pack(a, s->dlayout[t], s->dblock[t], tmp);
    rc = p->api.buffer_write(p->ctx, s->bufs[t], 0, tmp, s->buf_bytes[t], &perr);
    s->xfer_in += s->buf_bytes[t];
    free(tmp);
    if (rc) return plugin_error(err, rc, &perr, "upload of tensor", s->g->tensors[t].name);
    s->on_device[t] = 1;
    return MI_OK;
  }
  if (a->nbytes != s->buf_bytes[t])
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "tensor '%s' is %zu bytes, the session prepared it for %llu",
                     s->g->tensors[t].name, a->nbytes, (unsigned long long)s->buf_bytes[t]);
  if (!mi__direct_input(s, t, a)) { /* else kernels read the caller's array where it lies */
    rc = p->api.buffer_write(p->ctx, s->bufs[t], 0, a->data, a->nbytes, &perr);
    if (rc) return plugin_error(err, rc, &perr, "upload of tensor", s->g->tensors[t].name);
    s->xfer_in += a->nbytes;
  }
  s->on_device[t] = 1;
  return MI_OK;
}

/* Makes a host copy of t available, downloading it from the device if needed. */
static int32_t to_host(mi_session_t *s, int32_t t, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  const mi_tensor_t *tt = &s->g->tensors[t];
  mi_array_t *a;
  mi_error_t perr;
  int32_t rc;
  if (s->hval[t]) return MI_OK;
  mi_error_clear(&perr);
  if (!s->on_device[t])
    return mi_errorf(err, MI_ERR_INTERNAL, "tensor '%s' has no value", tt->name);
  if ((rc = sync_device(s, err))) return rc;
  if (s->rows && s->rows[t] >= 0) { /* the device wrote fewer rows than there is room for */
    int64_t dims[MI_MAX_RANK];
    memcpy(dims, tt->dims, sizeof dims);
    dims[0] = s->rows[t];
    a = mi__array_create_unset(tt->dtype, tt->rank, dims);
  } else {
    a = mi__array_create_unset(tt->dtype, tt->rank, tt->dims);
  }
  if (!a) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tensor '%s': out of memory", tt->name);
  /* (the array is not zeroed: the read below fills every byte, the layout's unpack is given zeros) */
  if (s->dlayout[t] != MI_LAYOUT_NCHW) {
    void *tmp = malloc(s->buf_bytes[t] ? s->buf_bytes[t] : 1);
    memset(a->data, 0, a->nbytes);
    rc = tmp ? p->api.buffer_read(p->ctx, s->bufs[t], 0, tmp, s->buf_bytes[t], &perr)
             : mi_errorf(&perr, MI_ERR_OUT_OF_MEMORY, "out of memory");
    s->xfer_out += s->buf_bytes[t];
    if (rc == MI_OK) mi__layout_unpack(tmp, s->dlayout[t], s->dblock[t], a);
    free(tmp);
  } else {
    rc = p->api.buffer_read(p->ctx, s->bufs[t], 0, a->data, a->nbytes, &perr);
    s->xfer_out += a->nbytes;
  }
  if (rc) {
    mi_array_destroy(a);
    return plugin_error(err, rc, &perr, "download of tensor", tt->name);
  }
  set_host(s, t, a, 1);
  return MI_OK;
}

static int read_by_node(const mi_session_t *s, int32_t t);

/* A kernel that reported the rows it wrote of an output whose row count is data: the caller
 * gets those rows where only the caller reads it (value_rows.c gave it room for any count); a
 * node reading it was prepared for the rows fixed at create time, so other rows are refused, as
 * a host step's other shape is (check_probed). */
static int32_t device_rows(mi_session_t *s, const mi__step_t *st, const mi_run_stats_t *stats,
                           mi_error_t *err) {
  const mi_node_t *n = &s->g->nodes[st->node];
  char lb[32];
  if (stats->rows_output < 0 || stats->rows_output >= st->output_count)
    return mi_errorf(err, MI_ERR_ABI, "node '%s' (%s): the device reported rows of output %d of %d",
                     mi__node_label(s->g, st->node, lb, sizeof lb), n->op_type, (int)stats->rows_output,
                     (int)st->output_count);
  int32_t t = st->outputs[stats->rows_output];
  const mi_tensor_t *tt = &s->g->tensors[t];
  if (tt->rank < 1 || stats->rows < 0 || stats->rows > tt->dims[0])
    return mi_errorf(err, MI_ERR_ABI, "node '%s' (%s): the device reported %lld rows of '%s', which has room for %lld",
                     mi__node_label(s->g, st->node, lb, sizeof lb), n->op_type, (long long)stats->rows,
                     tt->name, (long long)(tt->rank < 1 ? 0 : tt->dims[0]));
  if (stats->rows == tt->dims[0]) return MI_OK;
  if (read_by_node(s, t))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "node '%s' (%s): output '%s' has %lld rows but the session fixed it at %lld when "
                     "it was created (shapes that depend on input values are fixed then)",
                     mi__node_label(s->g, st->node, lb, sizeof lb), n->op_type, tt->name,
                     (long long)stats->rows, (long long)tt->dims[0]);
  s->rows[t] = stats->rows;
  return MI_OK;
}

static int32_t run_device_step(mi_session_t *s, const mi__step_t *st, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  const mi_node_t *n = &s->g->nodes[st->node];
  mi_buffer_t *ins[64], *outs[16];
  mi_run_stats_t stats;
  mi_error_t perr;
  char lb[32];
  int32_t rc;
  mi_error_clear(&perr);
  if (st->input_count > 64 || st->output_count > 16)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (%s): too many inputs or outputs",
                     mi__node_label(s->g, st->node, lb, sizeof lb), n->op_type);
  for (int32_t j = 0; j < st->input_count; j++) {
    if ((rc = to_device(s, st->inputs[j], err))) return rc;
    ins[j] = s->bufs[st->inputs[j]];
  }
  for (int32_t j = 0; j < st->output_count; j++) outs[j] = s->bufs[st->outputs[j]];
  if (st->alias) { /* the output is the input's buffer, or holds its inputs: no kernel runs */
    if (st->alias == MI__ALIAS_CONCAT) {
      /* Its constant parts are written into a buffer enqueued kernels may still use. */
      for (int32_t j = 0; j < n->input_count; j++)
        if (n->inputs[j] >= 0 && s->consts[n->inputs[j]] && (rc = sync_device(s, err))) return rc;
      if ((rc = mi__concat_alias_run(s, st, err))) return rc;
    }
    set_host(s, st->outputs[0], NULL, 0);
    s->on_device[st->outputs[0]] = 1;
    return MI_OK;
  }
  if (s->async) {
    rc = p->api.kernel_enqueue(p->ctx, st->kernel, ins, st->input_count, outs, st->output_count,
                               &perr);
    s->pending++; /* even on failure: the plugin may hold earlier work, the wait collects it */
    if (rc)
      return mi_errorf(err, rc, "node '%s' (%s): %s",
                       mi__node_label(s->g, st->node, lb, sizeof lb), n->op_type,
                       perr.message[0] ? perr.message : mi_status_message(rc));
    for (int32_t j = 0; j < st->output_count; j++) {
      set_host(s, st->outputs[j], NULL, 0);
      s->on_device[st->outputs[j]] = 1;
    }
    return MI_OK;
  }
  memset(&stats, 0, sizeof stats);
  stats.struct_size = (uint32_t)sizeof stats;
  rc = p->api.kernel_run(p->ctx, st->kernel, ins, st->input_count, outs, st->output_count,
                         &stats, &perr);
  if (rc)
    return mi_errorf(err, rc, "node '%s' (%s): %s", mi__node_label(s->g, st->node, lb, sizeof lb),
                     n->op_type, perr.message[0] ? perr.message : mi_status_message(rc));
  for (int32_t j = 0; j < st->output_count; j++) s->rows[st->outputs[j]] = -1;
  if (MI_HAS_FIELD(&stats, mi_run_stats_t, rows) && stats.has_rows &&
      (rc = device_rows(s, st, &stats, err)))
    return rc;
  if (MI_HAS_FIELD(&stats, mi_run_stats_t, device_time_ns) && stats.has_device_time) {
    s->device_time_ns += stats.device_time_ns;
    s->node_dev_ns[st->node] = stats.device_time_ns;
    s->node_timed[st->node] = 2;
  } else {
    s->has_device_time = 0;
  }
  for (int32_t j = 0; j < st->output_count; j++) {
    set_host(s, st->outputs[j], NULL, 0);
    s->on_device[st->outputs[j]] = 1;
  }
  return MI_OK;
}

static void format_dims(char *buf, size_t cap, int32_t rank, const int64_t *dims) {
  size_t n = 0;
  n += (size_t)snprintf(buf, cap, "[");
  for (int32_t d = 0; d < rank && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? "," : "", (long long)dims[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* 0 when array a has tensor t's type and shape; else 1, with both shapes written out. */
static int shape_differs(const mi_array_t *a, const mi_tensor_t *t, char got[96], char want[96]) {
  int same = a->dtype == t->dtype && a->rank == t->rank;
  for (int32_t d = 0; same && d < t->rank; d++) same = a->dims[d] == t->dims[d];
  if (same) return 0;
  format_dims(got, 96, a->rank, a->dims);
  format_dims(want, 96, t->rank, t->dims);
  return 1;
}

/* 1 when a node of the session's graph reads tensor t. */
static int read_by_node(const mi_session_t *s, int32_t t) {
  for (int32_t n = 0; n < s->g->node_count; n++)
    for (int32_t j = 0; j < s->g->nodes[n].input_count; j++)
      if (s->g->nodes[n].inputs[j] == t) return 1;
  return 0;
}

/* Refuses a host result whose shape is not the one the session was prepared with: with shapes
 * fixed by the create-time probe, a value-dependent shape (an If branch) may change per run.
 * A result no node reads (only a graph output, handed to the caller as it is) is let through:
 * nothing was planned for its shape. A merged decoder's If returns its cache grown by one
 * position on the cached branch and as long as the tokens on the other. */
static int32_t check_probed(const mi_session_t *s, int32_t node, int32_t t, const mi_array_t *a,
                            mi_error_t *err) {
  const mi_tensor_t *tt = &s->g->tensors[t];
  char got[96], want[96], lb[32];
  if (!shape_differs(a, tt, got, want) || !read_by_node(s, t)) return MI_OK;
  return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                   "node '%s' (%s): output '%s' is %s %s but the session fixed it at %s %s when "
                   "it was created (shapes that depend on input values are fixed then)",
                   mi__node_label(s->g, node, lb, sizeof lb), s->g->nodes[node].op_type, tt->name,
                   mi_dtype_name(a->dtype), got, mi_dtype_name(tt->dtype), want);
}

/* The node of the session's graph that writes tensor t, else `dflt`. */
static int32_t writer_of(const mi_session_t *s, int32_t t, int32_t dflt) {
  for (int32_t n = 0; n < s->g->node_count; n++)
    for (int32_t j = 0; j < s->g->nodes[n].output_count; j++)
      if (s->g->nodes[n].outputs[j] == t) return n;
  return dflt;
}

/* Runs a group of refused nodes on the fallback device (fallback_group.c): its inputs' host
 * copies in, its outputs' host copies out, with the shape check a lone host step's outputs get. */
static int32_t run_group_step(mi_session_t *s, const mi__step_t *st, mi_error_t *err) {
  const int32_t *in, *out;
  int32_t nin, nout = mi__fallback_group_io(st->group, &in, &nin, &out), rc = MI_OK;
  const mi_array_t **ins = calloc((size_t)nin + 1, sizeof *ins);
  mi_array_t **outs = calloc((size_t)nout + 1, sizeof *outs);
  if (!ins || !outs) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory running a fallback group");
    goto done;
  }
  for (int32_t j = 0; j < nin; j++) {
    if ((rc = to_host(s, in[j], err))) goto done;
    ins[j] = s->hval[in[j]];
  }
  if ((rc = mi__fallback_group_run(st->group, ins, outs, err))) goto done;
  for (int32_t j = 0; j < nout && (s->shapes_probed || s->free_shapes); j++)
    if ((rc = check_probed(s, writer_of(s, out[j], st->node), out[j], outs[j], err))) goto done;
  for (int32_t j = 0; j < nout; j++) {
    set_host(s, out[j], outs[j], 1);
    outs[j] = NULL;
    s->on_device[out[j]] = 0;
  }
done:
  for (int32_t j = 0; outs && j < nout; j++) mi_array_destroy(outs[j]);
  free(ins);
  free(outs);
  return rc;
}

static int32_t run_host_step(mi_session_t *s, const mi__step_t *st, mi_error_t *err) {
  const mi_node_t *n = &s->g->nodes[st->node];
  /* A node with subgraphs captures every outer value it uses as an input: no fixed bound. */
  const mi_array_t **ins = calloc((size_t)n->input_count + 1, sizeof *ins);
  mi_array_t **outs = calloc((size_t)n->output_count + 1, sizeof *outs);
  int32_t rc = MI_OK;
  if (!ins || !outs) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory running a host node");
    goto done;
  }
  for (int32_t j = 0; j < n->input_count; j++) {
    int32_t t = n->inputs[j];
    if (t < 0) continue;
    if (s->consts[t]) {
      ins[j] = s->consts[t];
      continue;
    }
    if ((rc = to_host(s, t, err))) goto done;
    ins[j] = s->hval[t];
  }
  /* A node the fallback device runs: the same host copies in and out. */
  if (st->fb && (rc = mi__fallback_run(s, st, ins, outs, err))) goto done;
  rc = st->fb ? 1 : mi__nested_if(s, st->node, ins, outs, err);
  if (rc < 0) {
    rc = -rc;
    goto done;
  }
  if (rc == 0 && (rc = mi__ref_node(s->g, st->node, ins, outs, err))) goto done;
  rc = MI_OK;
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t t = n->outputs[j];
    if (t < 0) continue;
    if ((s->shapes_probed || s->free_shapes) && (rc = check_probed(s, st->node, t, outs[j], err)))
      goto done;
  }
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t t = n->outputs[j];
    if (t < 0) continue;
    set_host(s, t, outs[j], 1);
    outs[j] = NULL;
    s->on_device[t] = 0;
  }
done:
  for (int32_t j = 0; outs && j < n->output_count; j++) mi_array_destroy(outs[j]);
  free(ins);
  free(outs);
  return rc;
}

/* Hands the value of graph output t to the caller as a new array. */
static int32_t take_output(mi_session_t *s, int32_t t, mi_array_t **out, mi_error_t *err) {
  const mi_array_t *src;
  int32_t rc;
  if (s->consts[t]) {
    src = s->consts[t];
  } else if ((*out = mi__direct_take(s, t))) { /* the kernels wrote the caller's array */
    return MI_OK;
  } else {
    if ((rc = to_host(s, t, err))) return rc;
    src = s->hval[t];
    if (s->hown[t] == src) { /* the run made it: hand it over rather than copy */
      *out = s->hown[t];
      s->hown[t] = NULL;
      s->hval[t] = NULL;
      return MI_OK;
    }
  }
  *out = mi_array_create(src->dtype, src->rank, src->dims);
  if (!*out) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "output '%s': out of memory",
                              s->g->tensors[t].name);
  if (src->nbytes) memcpy((*out)->data, src->data, src->nbytes);
  return MI_OK;
}

/* 1 when only nodes with subgraphs that the host runs (an If whose branch runs in a nested
 * session, nested.c) read tensor t: nothing was prepared for its shape in this session. */
static int read_by_host_control_only(const mi_session_t *s, int32_t t) {
  int any = 0;
  for (int32_t i = 0; i < s->step_count; i++) {
    const mi__step_t *st = &s->steps[i];
    const mi_node_t *n = &s->g->nodes[st->node];
    int reads = 0;
    for (int32_t j = 0; j < st->input_count && !reads; j++) reads = st->inputs[j] == t;
    for (int32_t j = 0; st->kind != MI__STEP_DEVICE && j < n->input_count && !reads; j++)
      reads = n->inputs[j] == t;
    if (!reads) continue;
    if (st->kind != MI__STEP_HOST || !n->subgraph_count || st->fb || st->group || st->grouped ||
        st->node_count != 1)
      return 0;
    any = 1;
  }
  return any;
}

static int32_t check_input(mi_session_t *s, int32_t i, const mi_array_t *a, mi_error_t *err) {
  const mi_tensor_t *t = &s->g->tensors[s->g->inputs[i]];
  char got[96], want[96];
  if (!shape_differs(a, t, got, want)) return MI_OK;
  /* A decoding loop's caches grow by one position per token: where only an If reads them,
   * its nested session is prepared again for their shapes (keeping what does not change) and
   * the outputs it hands to this session's kernels are checked against theirs. */
  if (a->dtype == t->dtype && a->rank == t->rank && read_by_host_control_only(s, s->g->inputs[i])) {
    s->free_shapes = 1;
    return MI_OK;
  }
  return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                   "input '%s': got %s %s, the session was prepared for %s %s", t->name,
                   mi_dtype_name(a->dtype), got, mi_dtype_name(t->dtype), want);
}

int32_t mi__session_run_device(mi_session_t *s, const mi_array_t *const *inputs,
                               mi_array_t **outputs, mi_error_t *err) {
  const mi_graph_t *g = s->g;
  int32_t rc = MI_OK;
  memset(s->on_device, 0, (size_t)g->tensor_count);
  int32_t device_steps = 0;
  s->device_time_ns = 0;
  s->has_device_time = 1;
  s->free_shapes = 0;
  s->xfer_in = s->xfer_out = 0;
  for (int32_t i = 0; i < g->input_count; i++) {
    if ((rc = check_input(s, i, inputs[i], err))) goto done;
    set_host(s, g->inputs[i], inputs[i], 0);
  }
  if (!s->node_timed) {
    s->node_wall_ns = calloc((size_t)g->node_count + 1, sizeof *s->node_wall_ns);
    s->node_dev_ns = calloc((size_t)g->node_count + 1, sizeof *s->node_dev_ns);
    s->node_timed = calloc((size_t)g->node_count + 1, 1);
    if (!s->node_wall_ns || !s->node_dev_ns || !s->node_timed) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory for node timings");
      goto done;
    }
  }
  memset(s->node_timed, 0, (size_t)g->node_count);
  if ((rc = mi__direct_begin(s, err))) goto done;
  mi__nested_run_begins(s);
  s->pending = 0;
  /* One clock reading per step: a step's time runs from the previous step's end (or from the
   * device's wait before it) to its own end. Two a step were 2% of a 40-step VAD's run. */
  double t0 = mi__now_s();
  for (int32_t i = 0; i < s->step_count && rc == MI_OK; i++) {
    const mi__step_t *st = &s->steps[i];
    double t1;
    /* A host step (or a nested session on the same device) waits for the device first, outside
     * its own time: the wait is device time, which the syncs account for. */
    if (st->kind == MI__STEP_HOST && s->pending) {
      if ((rc = sync_device(s, err))) break;
      t0 = mi__now_s();
    }
    if (st->kind == MI__STEP_DEVICE) {
      rc = run_device_step(s, st, err);
      device_steps += !st->alias; /* an alias runs nothing: it measures nothing */
    } else if (st->group) {
      rc = run_group_step(s, st, err);
    } else if (st->grouped) {
      /* Its group ran at the group's first step: that row carries the group's time. */
      s->node_wall_ns[st->node] = 0;
      s->node_timed[st->node] = 1;
      continue;
    } else if (st->kind == MI__STEP_HOST) {
      rc = run_host_step(s, st, err);
    } else {
      continue;
    }
    /* A reshape alias ran nothing: 0 ns, so profiles and paired runs, which add host-timed
     * nodes' wall time, add no clock noise for it (npu-stub's simulated times stay
     * reproducible); its few instructions go to the next step. An eliminated Concat may write
     * constant parts: its wall time counts. */
    if (st->alias == MI__ALIAS_RESHAPE) {
      s->node_wall_ns[st->node] = 0;
    } else {
      t1 = mi__now_s();
      s->node_wall_ns[st->node] = (uint64_t)((t1 - t0) * 1e9);
      t0 = t1;
    }
    /* An enqueued kernel's wall time is its submission, not its run: it has no time of its own. */
    if (s->async && st->kind == MI__STEP_DEVICE && !st->alias) continue;
    if (!s->node_timed[st->node]) s->node_timed[st->node] = 1;
  }
  if (rc == MI_OK) rc = sync_device(s, err);
  for (int32_t i = 0; i < g->output_count && rc == MI_OK; i++)
    rc = take_output(s, g->outputs[i], &outputs[i], err);
  /* A run with no device kernel measured nothing on the device. */
  if (device_steps == 0) s->has_device_time = 0;
done:
  /* Never return with work in flight: after a failure the wait still runs, its own error (an
   * enqueued kernel's) reported only when the run had none. */
  if (s->pending) {
    mi_error_t serr = {0};
    int32_t src = sync_device(s, &serr);
    if (rc == MI_OK && src) rc = mi_errorf(err, src, "%s", serr.message);
  }
  mi__direct_end(s); /* (after the wait: enqueued kernels may use the wrapped memory) */
  /* Host copies live for one run only. */
  for (int32_t t = 0; t < g->tensor_count; t++) set_host(s, t, NULL, 0);
  return rc;
}
