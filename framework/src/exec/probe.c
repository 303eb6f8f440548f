/* probe.c - resolves the shapes static inference cannot see (through an If whose condition is
 * an input, a Loop's trip count) by running the graph once on the reference interpreter. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "ref/ref.h"

/* Per tensor: the node position after which nothing reads it (-1: never read). */
static int32_t *last_reads(const mi_graph_t *g) {
  int32_t *last = malloc(((size_t)g->tensor_count + 1) * sizeof *last);
  if (!last) return NULL;
  for (int32_t t = 0; t < g->tensor_count; t++) last[t] = -1;
  for (int32_t i = 0; i < g->node_count; i++)
    for (int32_t j = 0; j < g->nodes[i].input_count; j++)
      if (g->nodes[i].inputs[j] >= 0) last[g->nodes[i].inputs[j]] = i;
  return last;
}

/* Writes the shape of a value the run produced into its tensor. */
static void record(mi_tensor_t *t, const mi_array_t *a) {
  for (int32_t d = 0; d < MI_MAX_RANK; d++) {
    free(t->dim_names[d]);
    t->dim_names[d] = NULL;
  }
  t->dtype = a->dtype;
  t->rank = a->rank;
  for (int32_t d = 0; d < a->rank; d++) t->dims[d] = a->dims[d];
}

/* Graph inputs of zeros with their declared shapes; 0 when one is not concrete. */
static int32_t make_inputs(const mi_graph_t *g, mi_array_t **vals, mi_error_t *err) {
  for (int32_t i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    int ok;
    mi__tensor_bytes(t, &ok);
    if (!ok)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "graph '%s': input '%s' has no concrete shape (fix dynamic input dims "
                       "first)",
                       g->name ? g->name : "", t->name);
    vals[g->inputs[i]] = mi_array_create(t->dtype, t->rank, t->dims);
    if (!vals[g->inputs[i]])
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "input '%s': out of memory", t->name);
  }
  return MI_OK;
}

/* Runs node i. A zero input is often outside what a model accepts (Silero's sample rate): when
 * an If fails on the branch zero selects, the other branch is tried, since the If's output
 * shapes are what the probe is after and a branch that runs shows them. */
static int32_t run_node(const mi_graph_t *g, int32_t i, const mi_array_t **ins, mi_array_t **outs,
                        int32_t max_out, mi_error_t *err) {
  const mi_node_t *n = &g->nodes[i];
  const mi_array_t *cond = n->input_count > 0 ? ins[0] : NULL;
  mi_array_t *flip;
  int32_t rc = mi__ref_node(g, i, ins, outs, err), again;
  int truth = 0;
  if (rc == MI_OK || strcmp(n->op_type, "If") != 0 || !cond || cond->nbytes == 0) return rc;
  if (!(flip = mi_array_create(cond->dtype, cond->rank, cond->dims))) return rc;
  /* The condition is true when any byte is nonzero; its negation is all zeros or a 1. */
  for (size_t b = 0; b < cond->nbytes && !truth; b++) truth = ((const uint8_t *)cond->data)[b] != 0;
  if (!truth) ((uint8_t *)flip->data)[0] = 1;
  for (int32_t j = 0; j < max_out; j++) outs[j] = NULL;
  ins[0] = flip;
  again = mi__ref_node(g, i, ins, outs, NULL);
  ins[0] = cond;
  mi_array_destroy(flip);
  return again == MI_OK ? MI_OK : rc;
}

int32_t mi__graph_probe_shapes(mi_graph_t *g, mi_error_t *err) {
  int32_t nt = g->tensor_count, rc = MI_OK;
  mi_array_t **vals = calloc((size_t)nt + 1, sizeof *vals);
  uint8_t *view = calloc((size_t)nt + 1, 1);
  int32_t *last = last_reads(g);
  const mi_array_t **ins = NULL;
  mi_array_t **outs = NULL;
  int32_t max_in = 1, max_out = 1;
  for (int32_t i = 0; i < g->node_count; i++) {
    if (g->nodes[i].input_count > max_in) max_in = g->nodes[i].input_count;
    if (g->nodes[i].output_count > max_out) max_out = g->nodes[i].output_count;
  }
  ins = calloc((size_t)max_in, sizeof *ins);
  outs = calloc((size_t)max_out, sizeof *outs);
  if (!vals || !view || !last || !ins || !outs) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory resolving shapes");
    goto done;
  }
  for (int32_t t = 0; t < nt; t++) {
    if (!g->tensors[t].data) continue;
    if (!(vals[t] = mi__const_view(&g->tensors[t]))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory resolving shapes");
      goto done;
    }
    view[t] = 1;
  }
  if ((rc = make_inputs(g, vals, err))) goto done;
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    for (int32_t j = 0; j < n->input_count; j++)
      ins[j] = n->inputs[j] >= 0 ? vals[n->inputs[j]] : NULL;
    memset(outs, 0, (size_t)max_out * sizeof *outs);
    if ((rc = run_node(g, i, ins, outs, max_out, err))) {
      mi_error_t inner = err ? *err : (mi_error_t){0};
      rc = mi_errorf(err, rc, "resolving shapes on zero inputs: %s", inner.message);
      goto done;
    }
    for (int32_t j = 0; j < n->output_count; j++) {
      int32_t t = n->outputs[j];
      if (t < 0 || vals[t]) { /* omitted, or a malformed double definition: keep the first */
        mi_array_destroy(outs[j]);
        continue;
      }
      record(&g->tensors[t], outs[j]);
      vals[t] = outs[j];
    }
    /* Values nothing reads any more are dropped, so the probe's peak is the run's. */
    for (int32_t j = 0; j < n->input_count; j++) {
      int32_t t = n->inputs[j];
      if (t < 0 || last[t] != i || view[t] || !vals[t]) continue;
      mi_array_destroy(vals[t]);
      vals[t] = NULL;
    }
  }
done:
  for (int32_t t = 0; vals && t < nt; t++) {
    if (view && view[t])
      free(vals[t]); /* a view: the graph owns the data */
    else
      mi_array_destroy(vals[t]);
  }
  free(vals);
  free(view);
  free(last);
  free(ins);
  free(outs);
  return rc;
}
