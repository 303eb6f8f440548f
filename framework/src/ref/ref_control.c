/* ref_control.c - control flow on the reference interpreter: If, Loop and Scan run their subgraphs
 * (mi_node_t.subgraphs) with the values they capture from the enclosing graph. */
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "ref/ref_ops.h"

/* Loops with no trip count and no condition never end; a bound keeps a broken model from
 * hanging the oracle. */
#define MAX_ITERATIONS 10000000

static int32_t explicit_inputs(const mi__ref_call_t *c) {
  return c->nin - c->node->implicit_inputs;
}

/* The values a subgraph captures, found by name among the node's implicit inputs. */
static int32_t bind_captures(const mi__ref_call_t *c, const mi_graph_t *sub,
                             const mi_array_t ***out) {
  const mi_array_t **caps = calloc((size_t)sub->capture_count + 1, sizeof *caps);
  *out = NULL;
  if (!caps) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < sub->capture_count; i++) {
    const char *name = sub->tensors[sub->captures[i]].name;
    int32_t k = explicit_inputs(c);
    while (k < c->nin && (c->node->inputs[k] < 0 ||
                          strcmp(c->g->tensors[c->node->inputs[k]].name, name) != 0))
      k++;
    if (k == c->nin || !c->in[k]) {
      free(caps);
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "subgraph '%s' uses '%s', which the node does not capture", sub->name,
                          name);
    }
    caps[i] = c->in[k];
  }
  *out = caps;
  return MI_OK;
}

static int32_t run_sub(const mi__ref_call_t *c, const mi_graph_t *sub,
                       const mi_array_t *const *caps, const mi_array_t *const *ins, int32_t nin,
                       mi_array_t **outs) {
  mi_error_t e = {0};
  int32_t rc = mi__ref_run_scoped(sub, ins, nin, caps, outs, sub->output_count, &e);
  if (rc != MI_OK) return mi__ref_fail(c, rc, "in subgraph '%s': %s", sub->name, e.message);
  return MI_OK;
}

static int32_t read_bool(const mi_array_t *a, int *v) {
  if (!a || mi_array_numel(a) != 1) return -1;
  if (a->dtype == MI_DTYPE_BOOL || a->dtype == MI_DTYPE_UINT8 || a->dtype == MI_DTYPE_INT8)
    *v = ((const uint8_t *)a->data)[0] != 0;
  else if (a->dtype == MI_DTYPE_INT64)
    *v = ((const int64_t *)a->data)[0] != 0;
  else if (a->dtype == MI_DTYPE_INT32)
    *v = ((const int32_t *)a->data)[0] != 0;
  else if (a->dtype == MI_DTYPE_FLOAT32)
    *v = ((const float *)a->data)[0] != 0;
  else
    return -1;
  return 0;
}

int32_t mi__ref_if(mi__ref_call_t *c) {
  const mi_array_t *cond, **caps = NULL;
  int taken = 0;
  int32_t rc;
  if ((rc = mi__ref_need(c, 0, 0, &cond)) != MI_OK) return rc;
  if (read_bool(cond, &taken))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "cond must be one boolean value");
  const mi_graph_t *sub = mi_node_subgraph(c->node, taken ? "then_branch" : "else_branch");
  if (!sub)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "has no %s",
                        taken ? "then_branch" : "else_branch");
  if (sub->output_count != c->nout)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "branch '%s' has %d outputs, the node %d",
                        sub->name, (int)sub->output_count, (int)c->nout);
  if ((rc = bind_captures(c, sub, &caps)) != MI_OK) return rc;
  rc = run_sub(c, sub, caps, NULL, 0, c->out);
  free(caps);
  return rc;
}

/* Appends one iteration's scan value to a growing buffer (every iteration the same shape). */
static int32_t scan_append(const mi__ref_call_t *c, int32_t k, const mi_array_t *v,
                           mi_array_t **acc, int64_t iter) {
  mi_array_t *a = *acc;
  int64_t dims[MI_MAX_RANK];
  if (v->rank + 1 > MI_MAX_RANK)
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "scan output %d has rank %d", (int)k, (int)v->rank);
  if (a) {
    int same = a->dtype == v->dtype && a->rank == v->rank + 1;
    for (int32_t d = 0; same && d < v->rank; d++) same = a->dims[d + 1] == v->dims[d];
    if (!same)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                          "scan output %d changes shape at iteration %lld", (int)k,
                          (long long)iter);
  }
  dims[0] = iter + 1;
  for (int32_t d = 0; d < v->rank; d++) dims[d + 1] = v->dims[d];
  mi_array_t *b = mi_array_create(v->dtype, v->rank + 1, dims);
  if (!b) return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if (a && a->nbytes) memcpy(b->data, a->data, a->nbytes);
  if (v->nbytes) memcpy((char *)b->data + (a ? a->nbytes : 0), v->data, v->nbytes);
  mi_array_destroy(a);
  *acc = b;
  return MI_OK;
}

int32_t mi__ref_loop(mi__ref_call_t *c) {
  const mi_graph_t *body = mi_node_subgraph(c->node, "body");
  const mi_array_t **caps = NULL, **bin = NULL;
  mi_array_t **carried = NULL, **bout = NULL, **scans = NULL;
  int32_t nx = explicit_inputs(c), nv = nx - 2, nscan, rc = MI_OK;
  int64_t trip = -1, iter = 0;
  int cond = 1;
  if (!body) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "has no body");
  nscan = body->output_count - 1 - nv;
  if (nv < 0 || body->input_count != nv + 2 || nscan < 0 || c->nout != nv + nscan)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "body takes %d inputs and gives %d outputs for %d loop-carried values "
                        "and %d node outputs",
                        (int)body->input_count, (int)body->output_count, (int)nv, (int)c->nout);
  if (mi__ref_in(c, 0)) {
    const mi_array_t *m = mi__ref_in(c, 0);
    if (mi_array_numel(m) != 1 || m->dtype != MI_DTYPE_INT64)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "M must be one int64 value");
    trip = ((const int64_t *)m->data)[0];
  }
  if (mi__ref_in(c, 1) && read_bool(mi__ref_in(c, 1), &cond))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "cond must be one boolean value");
  if (trip < 0 && !mi__ref_in(c, 1))
    return mi__ref_fail(c, MI_ERR_UNSUPPORTED, "a loop without M and cond never ends");
  if ((rc = bind_captures(c, body, &caps)) != MI_OK) return rc;
  carried = calloc((size_t)nv + 1, sizeof *carried);
  scans = calloc((size_t)nscan + 1, sizeof *scans);
  bout = calloc((size_t)body->output_count + 1, sizeof *bout);
  bin = calloc((size_t)nv + 3, sizeof *bin);
  mi_array_t *iter_a = mi_array_create(MI_DTYPE_INT64, 0, NULL);
  mi_array_t *cond_a = mi_array_create(MI_DTYPE_BOOL, 0, NULL);
  if (!carried || !scans || !bout || !bin || !iter_a || !cond_a) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int32_t i = 0; i < nv; i++) {
    const mi_array_t *v = mi__ref_in(c, 2 + i);
    if (!v) {
      rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "loop-carried input %d is missing", (int)i);
      goto done;
    }
    if (!(carried[i] = mi__ref_clone(v))) {
      rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
  for (iter = 0; (trip < 0 || iter < trip) && cond; iter++) {
    if (iter >= MAX_ITERATIONS) {
      rc = mi__ref_fail(c, MI_ERR_UNSUPPORTED, "more than %d iterations", MAX_ITERATIONS);
      goto done;
    }
    ((int64_t *)iter_a->data)[0] = iter;
    ((uint8_t *)cond_a->data)[0] = (uint8_t)cond;
    bin[0] = iter_a;
    bin[1] = cond_a;
    for (int32_t i = 0; i < nv; i++) bin[2 + i] = carried[i];
    if ((rc = run_sub(c, body, caps, bin, nv + 2, bout)) != MI_OK) goto done;
    if (read_bool(bout[0], &cond)) {
      rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "body's cond output must be one boolean");
      goto done;
    }
    for (int32_t i = 0; i < nv; i++) {
      mi_array_destroy(carried[i]);
      carried[i] = bout[1 + i];
      bout[1 + i] = NULL;
    }
    for (int32_t k = 0; k < nscan && rc == MI_OK; k++)
      rc = scan_append(c, k, bout[1 + nv + k], &scans[k], iter);
    for (int32_t k = 0; k < body->output_count; k++) {
      mi_array_destroy(bout[k]);
      bout[k] = NULL;
    }
    if (rc != MI_OK) goto done;
  }
  for (int32_t i = 0; i < nv; i++) {
    c->out[i] = carried[i];
    carried[i] = NULL;
  }
  for (int32_t k = 0; k < nscan; k++) {
    if (!scans[k]) { /* no iteration ran: an empty stack of unknown element shape */
      int64_t zero = 0;
      const mi_tensor_t *t = &body->tensors[body->outputs[1 + nv + k]];
      scans[k] = mi_array_create(t->dtype != MI_DTYPE_UNDEFINED ? t->dtype : MI_DTYPE_FLOAT32,
                                 1, &zero);
      if (!scans[k]) {
        rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
      }
    }
    c->out[nv + k] = scans[k];
    scans[k] = NULL;
  }
done:
  for (int32_t i = 0; carried && i < nv; i++) mi_array_destroy(carried[i]);
  for (int32_t k = 0; scans && k < nscan; k++) mi_array_destroy(scans[k]);
  for (int32_t k = 0; bout && k < body->output_count; k++) mi_array_destroy(bout[k]);
  mi_array_destroy(iter_a);
  mi_array_destroy(cond_a);
  free(carried);
  free(scans);
  free(bout);
  free(bin);
  free(caps);
  return rc;
}

/* Scan: the body runs once per position along the scan axis of every scan input, with the
 * state values it carries and one slice of each scan input; each scan output stacks one value
 * per iteration along its own axis. Opset 9 form: inputs [state..., scan inputs...] with
 * per-input/output axes and directions. Opset 8 form: a batch dim first on everything (the
 * body runs per batch element), the scan axis is 1, an optional sequence_lens first input. */

/* At most this many scan inputs or outputs (the attribute lists are read into arrays). */
#define MAX_SCAN_VALUES 64

/* Bytes of the block one step along `axis` selects, and how many such blocks precede it. */
static void axis_geometry(const mi_array_t *a, int32_t axis, size_t *outer, size_t *block) {
  size_t o = 1, b = mi_dtype_size(a->dtype);
  for (int32_t d = 0; d < axis; d++) o *= (size_t)a->dims[d];
  for (int32_t d = axis + 1; d < a->rank; d++) b *= (size_t)a->dims[d];
  *outer = o;
  *block = b;
}

/* *slice = full[..., pos, ...] along `axis` (the axis removed); *slice is made on first use
 * and reused while the shape stays the same. */
static int32_t take_slice(const mi__ref_call_t *c, const mi_array_t *full, int32_t axis,
                          int64_t pos, mi_array_t **slice) {
  int64_t dims[MI_MAX_RANK];
  int32_t r = 0;
  size_t outer, block, len = (size_t)full->dims[axis];
  for (int32_t d = 0; d < full->rank; d++)
    if (d != axis) dims[r++] = full->dims[d];
  if (*slice && ((*slice)->rank != r || (*slice)->dtype != full->dtype ||
                 memcmp((*slice)->dims, dims, (size_t)r * sizeof *dims) != 0)) {
    mi_array_destroy(*slice);
    *slice = NULL;
  }
  if (!*slice && !(*slice = mi_array_create(full->dtype, r, dims)))
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  axis_geometry(full, axis, &outer, &block);
  for (size_t o = 0; o < outer; o++)
    memcpy((char *)(*slice)->data + o * block,
           (const char *)full->data + (o * len + (size_t)pos) * block, block);
  return MI_OK;
}

/* Stores `v` as position `pos` of `len` along `axis` of *acc, creating *acc (v's shape with
 * len inserted at axis) on first use; every later v must have the first one's shape. */
static int32_t put_slice(const mi__ref_call_t *c, const char *what, int32_t k, const mi_array_t *v,
                         int32_t axis, int64_t len, int64_t pos, mi_array_t **acc) {
  int64_t dims[MI_MAX_RANK];
  size_t outer, block;
  if (v->rank + 1 > MI_MAX_RANK || axis < 0 || axis > v->rank)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s %d: axis %d does not fit rank %d", what,
                        (int)k, (int)axis, (int)v->rank + 1);
  for (int32_t d = 0, r = 0; d <= v->rank; d++) dims[d] = d == axis ? len : v->dims[r++];
  if (!*acc) {
    if (!(*acc = mi_array_create(v->dtype, v->rank + 1, dims)))
      return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  } else if ((*acc)->dtype != v->dtype || (*acc)->rank != v->rank + 1 ||
             memcmp((*acc)->dims, dims, (size_t)(v->rank + 1) * sizeof *dims) != 0) {
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "%s %d changes shape or type at step %lld",
                        what, (int)k, (long long)pos);
  }
  axis_geometry(*acc, axis, &outer, &block);
  for (size_t o = 0; o < outer; o++)
    memcpy((char *)(*acc)->data + (o * (size_t)len + (size_t)pos) * block,
           (const char *)v->data + o * block, block);
  return MI_OK;
}

/* One scan, as the opset-9 form describes it. Axes are already normalised for the inputs;
 * output axes may be negative (against the output's rank). On success the caller owns
 * state_out[0..ns) and scan_out[0..nk). */
typedef struct scan_run {
  const mi_graph_t *body;
  const mi_array_t *const *caps;
  int32_t ns, nx, nk;
  const mi_array_t *const *state_in, *const *xs;
  const int64_t *in_axis, *in_rev, *out_axis, *out_rev;
} scan_run_t;

static int32_t run_scan(const mi__ref_call_t *c, const scan_run_t *s, mi_array_t **state_out,
                        mi_array_t **scan_out) {
  int32_t nb = s->ns + s->nk, rc = MI_OK;
  int64_t len = -1;
  const mi_array_t **bin = calloc((size_t)(s->ns + s->nx) + 1, sizeof *bin);
  mi_array_t **slices = calloc((size_t)s->nx + 1, sizeof *slices);
  mi_array_t **bout = calloc((size_t)nb + 1, sizeof *bout);
  for (int32_t i = 0; i < s->ns; i++) state_out[i] = NULL;
  for (int32_t k = 0; k < s->nk; k++) scan_out[k] = NULL;
  if (!bin || !slices || !bout) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int32_t j = 0; j < s->nx; j++) {
    int64_t l = s->xs[j]->dims[s->in_axis[j]];
    if (len >= 0 && l != len) {
      rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "scan input %d has %lld steps along its axis, input 0 has %lld", (int)j,
                        (long long)l, (long long)len);
      goto done;
    }
    len = l;
  }
  if (len < 0) len = 0;
  for (int32_t i = 0; i < s->ns; i++)
    if (!(state_out[i] = mi__ref_clone(s->state_in[i]))) {
      rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  for (int64_t t = 0; t < len; t++) {
    for (int32_t j = 0; j < s->nx && rc == MI_OK; j++)
      rc = take_slice(c, s->xs[j], (int32_t)s->in_axis[j], s->in_rev[j] ? len - 1 - t : t,
                      &slices[j]);
    if (rc != MI_OK) goto done;
    for (int32_t i = 0; i < s->ns; i++) bin[i] = state_out[i];
    for (int32_t j = 0; j < s->nx; j++) bin[s->ns + j] = slices[j];
    if ((rc = run_sub(c, s->body, s->caps, bin, s->ns + s->nx, bout)) != MI_OK) goto done;
    for (int32_t i = 0; i < s->ns; i++) {
      mi_array_destroy(state_out[i]);
      state_out[i] = bout[i];
      bout[i] = NULL;
    }
    for (int32_t k = 0; k < s->nk && rc == MI_OK; k++) {
      const mi_array_t *v = bout[s->ns + k];
      int64_t axis = s->out_axis[k] < 0 ? s->out_axis[k] + v->rank + 1 : s->out_axis[k];
      rc = put_slice(c, "scan output", k, v, (int32_t)axis, len, s->out_rev[k] ? len - 1 - t : t,
                     &scan_out[k]);
    }
    for (int32_t k = 0; k < nb; k++) {
      mi_array_destroy(bout[k]);
      bout[k] = NULL;
    }
    if (rc != MI_OK) goto done;
  }
  for (int32_t k = 0; k < s->nk && len == 0; k++) {
    /* No step ran: an empty stack, of the body's declared element shape when it is known. */
    const mi_tensor_t *t = &s->body->tensors[s->body->outputs[s->ns + k]];
    int64_t dims[MI_MAX_RANK];
    int32_t rank = 1, known = t->rank >= 0 && t->rank + 1 <= MI_MAX_RANK && mi_tensor_dynamic_dim(t) < 0;
    dims[0] = 0;
    if (known) {
      int64_t axis = s->out_axis[k] < 0 ? s->out_axis[k] + t->rank + 1 : s->out_axis[k];
      rank = t->rank + 1;
      for (int32_t d = 0, r = 0; d < rank; d++) dims[d] = d == axis ? 0 : t->dims[r++];
    }
    if (!(scan_out[k] = mi_array_create(
              t->dtype != MI_DTYPE_UNDEFINED ? t->dtype : MI_DTYPE_FLOAT32, rank, dims))) {
      rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
done:
  if (rc != MI_OK) {
    for (int32_t i = 0; i < s->ns; i++) mi_array_destroy(state_out[i]), state_out[i] = NULL;
    for (int32_t k = 0; k < s->nk; k++) mi_array_destroy(scan_out[k]), scan_out[k] = NULL;
  }
  for (int32_t j = 0; slices && j < s->nx; j++) mi_array_destroy(slices[j]);
  for (int32_t k = 0; bout && k < nb; k++) mi_array_destroy(bout[k]);
  free(bin);
  free(slices);
  free(bout);
  return rc;
}

/* An INTS attribute with one entry per scan input or output: zeros when absent. */
static int32_t scan_attr(const mi__ref_call_t *c, const char *name, int32_t want, int64_t *v) {
  int32_t n = 0, rc = mi__ref_attr_ints(c, name, v, MAX_SCAN_VALUES, &n);
  if (rc != MI_OK) return rc;
  if (n < 0) {
    for (int32_t i = 0; i < want; i++) v[i] = 0;
    return MI_OK;
  }
  if (n != want)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "'%s' has %d entries for %d values", name,
                        (int)n, (int)want);
  return MI_OK;
}

static int32_t check_directions(const mi__ref_call_t *c, const char *name, int32_t n,
                                const int64_t *v) {
  for (int32_t i = 0; i < n; i++)
    if (v[i] != 0 && v[i] != 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "'%s'[%d] is %lld, not 0 or 1", name,
                          (int)i, (long long)v[i]);
  return MI_OK;
}

/* Opset 8: every state and scan input has the batch dim first; the scan runs per batch
 * element with scan axis 0 of the element (axis 1 of the input) and results are stacked along
 * a new batch dim. */
static int32_t scan8(mi__ref_call_t *c, scan_run_t *s, const int64_t *zeros) {
  int32_t nin = s->ns + s->nx, rc = MI_OK;
  int64_t batch = -1;
  const mi_array_t *seq = mi__ref_in(c, 0);
  mi_array_t **parts = calloc((size_t)nin + 1, sizeof *parts);
  mi_array_t **res = calloc((size_t)(s->ns + s->nk) + 1, sizeof *res);
  const scan_run_t outer = *s;
  if (!parts || !res) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int32_t j = 0; j < nin; j++) {
    const mi_array_t *a = j < s->ns ? s->state_in[j] : s->xs[j - s->ns];
    if (a->rank < (j < s->ns ? 1 : 2) || (batch >= 0 && a->dims[0] != batch)) {
      rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "input %d does not start with the batch dim (rank %d)", (int)(j + 1),
                        (int)a->rank);
      goto done;
    }
    batch = a->dims[0];
  }
  if (seq) {
    int64_t len = s->nx ? s->xs[0]->dims[1] : 0;
    if (seq->dtype != MI_DTYPE_INT64 || mi_array_numel(seq) != batch) {
      rc = mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "sequence_lens must be %lld int64 values",
                        (long long)batch);
      goto done;
    }
    for (int64_t b = 0; b < batch; b++)
      if (((const int64_t *)seq->data)[b] != len) {
        rc = mi__ref_fail(c, MI_ERR_UNSUPPORTED,
                          "sequence_lens[%lld] = %lld, shorter than the %lld steps: "
                          "per-batch lengths are not supported",
                          (long long)b, (long long)((const int64_t *)seq->data)[b],
                          (long long)len);
        goto done;
      }
  }
  for (int64_t b = 0; b < batch; b++) {
    for (int32_t j = 0; j < nin && rc == MI_OK; j++)
      rc = take_slice(c, j < s->ns ? s->state_in[j] : s->xs[j - s->ns], 0, b, &parts[j]);
    if (rc != MI_OK) goto done;
    scan_run_t one = outer;
    one.state_in = (const mi_array_t *const *)parts;
    one.xs = (const mi_array_t *const *)parts + s->ns;
    one.in_axis = zeros;
    one.out_axis = zeros;
    one.out_rev = zeros;
    if ((rc = run_scan(c, &one, res, res + s->ns)) != MI_OK) goto done;
    for (int32_t k = 0; k < s->ns + s->nk && rc == MI_OK; k++)
      rc = put_slice(c, "output", k, res[k], 0, batch, b, &c->out[k]);
    for (int32_t k = 0; k < s->ns + s->nk; k++) mi_array_destroy(res[k]), res[k] = NULL;
    if (rc != MI_OK) goto done;
  }
  if (batch == 0)
    rc = mi__ref_fail(c, MI_ERR_UNSUPPORTED, "an empty batch has no output shape");
done:
  for (int32_t j = 0; parts && j < nin; j++) mi_array_destroy(parts[j]);
  free(parts);
  free(res);
  return rc;
}

int32_t mi__ref_scan(mi__ref_call_t *c) {
  const mi_graph_t *body = mi_node_subgraph(c->node, "body");
  const mi_array_t **caps = NULL, **ins = NULL;
  int64_t in_axis[MAX_SCAN_VALUES], in_rev[MAX_SCAN_VALUES], out_axis[MAX_SCAN_VALUES],
      out_rev[MAX_SCAN_VALUES], zeros[MAX_SCAN_VALUES] = {0};
  int32_t v8 = c->opset < 9, first = v8 ? 1 : 0, nall = explicit_inputs(c) - first, rc;
  int64_t nx = mi_node_attr_int(c->node, "num_scan_inputs", -1);
  if (!body) return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "has no body");
  if (nx < 1 || nx > nall || nx > MAX_SCAN_VALUES)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "num_scan_inputs is %lld for %d inputs (1 to %d supported)",
                        (long long)nx, (int)nall, MAX_SCAN_VALUES);
  scan_run_t s = {.body = body, .ns = nall - (int32_t)nx, .nx = (int32_t)nx};
  s.nk = body->output_count - s.ns;
  if (body->input_count != nall || s.nk < 0 || s.nk > MAX_SCAN_VALUES || c->nout != s.ns + s.nk)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "body takes %d inputs and gives %d outputs for %d state values, %d scan "
                        "inputs and %d node outputs",
                        (int)body->input_count, (int)body->output_count, (int)s.ns, (int)s.nx,
                        (int)c->nout);
  if (v8) {
    if ((rc = scan_attr(c, "directions", s.nx, in_rev)) != MI_OK) return rc;
  } else if ((rc = scan_attr(c, "scan_input_axes", s.nx, in_axis)) != MI_OK ||
             (rc = scan_attr(c, "scan_input_directions", s.nx, in_rev)) != MI_OK ||
             (rc = scan_attr(c, "scan_output_axes", s.nk, out_axis)) != MI_OK ||
             (rc = scan_attr(c, "scan_output_directions", s.nk, out_rev)) != MI_OK ||
             (rc = check_directions(c, "scan_output_directions", s.nk, out_rev)) != MI_OK) {
    return rc;
  }
  if ((rc = check_directions(c, v8 ? "directions" : "scan_input_directions", s.nx, in_rev)))
    return rc;
  if (!(ins = calloc((size_t)nall + 1, sizeof *ins)))
    return mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t j = 0; j < nall; j++) {
    if (!(ins[j] = mi__ref_in(c, first + j))) {
      free(ins);
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "input %d is missing", (int)(first + j));
    }
    if (j >= s.ns && !v8) {
      int32_t a;
      if ((rc = mi__ref_axis(c, in_axis[j - s.ns], ins[j]->rank, &a)) != MI_OK) {
        free(ins);
        return rc;
      }
      in_axis[j - s.ns] = a;
    }
  }
  if ((rc = bind_captures(c, body, &caps)) != MI_OK) {
    free(ins);
    return rc;
  }
  s.caps = caps;
  s.state_in = ins;
  s.xs = ins + s.ns;
  s.in_axis = in_axis;
  s.in_rev = in_rev;
  s.out_axis = out_axis;
  s.out_rev = out_rev;
  rc = v8 ? scan8(c, &s, zeros) : run_scan(c, &s, c->out, c->out + s.ns);
  free(caps);
  free(ins);
  return rc;
}
