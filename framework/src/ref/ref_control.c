/* ref_control.c - control flow on the reference interpreter: If and Loop run their subgraphs
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
