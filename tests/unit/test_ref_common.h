/* test_ref_common.h - small graph-building and checking helpers for the reference tests. */
#ifndef TEST_REF_COMMON_H
#define TEST_REF_COMMON_H

#include "test_util.h"

/* A runtime value whose shape the interpreter decides. */
static __attribute__((unused)) int32_t tval(mi_graph_t *g, const char *name) {
  return mi_graph_add_tensor(g, name, MI_DTYPE_UNDEFINED, -1, NULL);
}

/* A graph input of the given dtype and shape. */
static __attribute__((unused)) int32_t tin(mi_graph_t *g, const char *name, int32_t dtype, int32_t rank,
                                           const int64_t *dims) {
  int32_t t = mi_graph_add_tensor(g, name, dtype, rank, dims);
  mi_graph_add_input(g, t);
  return t;
}

/* A node with one output named after the node; returns the node index via *node_out. */
static __attribute__((unused)) int32_t node1(mi_graph_t *g, const char *op, const char *name, int32_t nin,
                                             const int32_t *ins, int32_t *node_out) {
  char oname[128];
  snprintf(oname, sizeof oname, "%s_out", name);
  int32_t out = tval(g, oname);
  int32_t n = mi_graph_add_node(g, op, name, nin, ins, 1, &out);
  if (node_out) *node_out = n;
  return out;
}

static __attribute__((unused)) mi_array_t *arr_f32(int32_t rank, const int64_t *dims, const float *vals) {
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, rank, dims);
  if (a && vals) memcpy(a->data, vals, a->nbytes);
  return a;
}

static __attribute__((unused)) mi_array_t *arr_i64(int32_t rank, const int64_t *dims, const int64_t *vals) {
  mi_array_t *a = mi_array_create(MI_DTYPE_INT64, rank, dims);
  if (a && vals) memcpy(a->data, vals, a->nbytes);
  return a;
}

/* Runs a graph with one output; returns the status and fills *out (NULL on failure). */
static __attribute__((unused)) int32_t run1(mi_graph_t *g, int32_t nin, mi_array_t **ins, mi_array_t **out,
                                            mi_error_t *err) {
  mi_error_t local;
  return mi_ref_run(g, (const mi_array_t *const *)ins, nin, out, 1, err ? err : &local);
}

static __attribute__((unused)) int same_shape(const mi_array_t *a, int32_t rank, const int64_t *dims) {
  if (!a || a->rank != rank) return 0;
  for (int32_t i = 0; i < rank; i++)
    if (a->dims[i] != dims[i]) return 0;
  return 1;
}

static __attribute__((unused)) void print_shape(const mi_array_t *a) {
  if (!a) {
    fprintf(stderr, "(null)");
    return;
  }
  fprintf(stderr, "[");
  for (int32_t i = 0; i < a->rank; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)a->dims[i]);
  fprintf(stderr, "]");
}

/* Checks shape and float values within an absolute+relative tolerance. */
static __attribute__((unused)) void expect_f32(const char *what, const mi_array_t *a, int32_t rank, const int64_t *dims,
                                               const float *want, float tol) {
  if (!same_shape(a, rank, dims)) {
    fprintf(stderr, "%s: shape ", what);
    print_shape(a);
    fprintf(stderr, " is wrong\n");
    g_failures++;
    return;
  }
  if (a->dtype != MI_DTYPE_FLOAT32) {
    fprintf(stderr, "%s: dtype %s, want float32\n", what, mi_dtype_name(a->dtype));
    g_failures++;
    return;
  }
  int64_t n = mi_array_numel(a);
  for (int64_t i = 0; i < n; i++) {
    float got = ((const float *)a->data)[i];
    if (!(fabsf(got - want[i]) <= tol * (1.0f + fabsf(want[i])))) {
      fprintf(stderr, "%s: element %lld is %.7g, want %.7g\n", what, (long long)i, got, want[i]);
      g_failures++;
      return;
    }
  }
}

static __attribute__((unused)) void expect_i64(const char *what, const mi_array_t *a, int32_t rank, const int64_t *dims,
                                               const int64_t *want) {
  if (!same_shape(a, rank, dims) || a->dtype != MI_DTYPE_INT64) {
    fprintf(stderr, "%s: shape/dtype wrong: ", what);
    print_shape(a);
    fprintf(stderr, " %s\n", a ? mi_dtype_name(a->dtype) : "");
    g_failures++;
    return;
  }
  for (int64_t i = 0; i < mi_array_numel(a); i++)
    if (((const int64_t *)a->data)[i] != want[i]) {
      fprintf(stderr, "%s: element %lld is %lld, want %lld\n", what, (long long)i,
              (long long)((const int64_t *)a->data)[i], (long long)want[i]);
      g_failures++;
      return;
    }
}

/* A one-node graph under construction: build it with case_begin, set attributes on
 * k.g / k.node, then case_run. */
typedef struct op_case {
  mi_graph_t *g;
  int32_t node;
  int32_t nrt;
  mi_array_t *rt[8]; /* the runtime inputs, borrowed */
} op_case_t;

/* ins[i] NULL: an omitted input; bit i of const_mask: an initializer, else a graph input. */
static __attribute__((unused)) void case_begin(op_case_t *k, const char *op, int64_t opset,
                                               int32_t nin, mi_array_t **ins,
                                               uint32_t const_mask, int32_t nout) {
  int32_t t[16], o[8];
  char name[32];
  memset(k, 0, sizeof *k);
  k->g = mi_graph_create(op);
  k->g->opset = opset;
  for (int32_t i = 0; i < nin; i++) {
    snprintf(name, sizeof name, "in%d", (int)i);
    t[i] = -1;
    if (!ins[i]) continue;
    t[i] = mi_graph_add_tensor(k->g, name, ins[i]->dtype, ins[i]->rank, ins[i]->dims);
    if (const_mask & (1u << i)) {
      mi_graph_set_data(k->g, t[i], ins[i]->data, ins[i]->nbytes);
    } else {
      mi_graph_add_input(k->g, t[i]);
      k->rt[k->nrt++] = ins[i];
    }
  }
  for (int32_t i = 0; i < nout; i++) {
    snprintf(name, sizeof name, "out%d", (int)i);
    o[i] = tval(k->g, name);
    mi_graph_add_output(k->g, o[i]);
  }
  k->node = mi_graph_add_node(k->g, op, op, nin, t, nout, o);
}

/* Runs the case on ref into outs[] (graph output count entries), then infers shapes on a copy
 * and checks that every inferred output shape and dtype equals the run's; with dyn_ok an
 * inferred dynamic dim is accepted. Frees the graph; returns the run's status. */
static __attribute__((unused)) int32_t case_run(op_case_t *k, mi_array_t **outs, int dyn_ok,
                                                mi_error_t *err) {
  const char *op = k->g->nodes[k->node].op_type;
  int32_t nout = k->g->output_count;
  int32_t rc = mi_ref_run(k->g, (const mi_array_t *const *)k->rt, k->nrt, outs, nout, err);
  if (rc == MI_OK) {
    mi_graph_t *c = mi_graph_clone(k->g);
    mi_error_t e2 = {0};
    int32_t rc2 = mi_graph_infer_shapes(c, &e2);
    CHECK(rc2 == MI_OK, "%s shape inference: %s", op, e2.message);
    for (int32_t i = 0; rc2 == MI_OK && i < nout; i++) {
      const mi_tensor_t *ty = &c->tensors[c->outputs[i]];
      CHECK(ty->rank == outs[i]->rank && ty->dtype == outs[i]->dtype,
            "%s output %d: inferred rank %d dtype %s, ran rank %d dtype %s", op, (int)i,
            (int)ty->rank, mi_dtype_name(ty->dtype), (int)outs[i]->rank,
            mi_dtype_name(outs[i]->dtype));
      for (int32_t d = 0; ty->rank == outs[i]->rank && d < ty->rank; d++)
        CHECK(ty->dims[d] == outs[i]->dims[d] || (dyn_ok && ty->dims[d] == MI_DIM_DYNAMIC),
              "%s output %d: inferred dim %d = %lld, ran %lld", op, (int)i, (int)d,
              (long long)ty->dims[d], (long long)outs[i]->dims[d]);
    }
    mi_graph_destroy(c);
  }
  mi_graph_destroy(k->g);
  k->g = NULL;
  return rc;
}

/* Like case_run for a case that must fail: both the run and shape inference refuse it, with
 * `code` from the run; returns the run's message in err. */
static __attribute__((unused)) void case_refused(op_case_t *k, int32_t code, mi_error_t *err) {
  const char *op = k->g->nodes[k->node].op_type;
  mi_array_t *outs[8] = {NULL};
  mi_graph_t *c = mi_graph_clone(k->g);
  mi_error_t e2 = {0};
  CHECK(mi_graph_infer_shapes(c, &e2) != MI_OK, "%s: shape inference should refuse", op);
  CHECK(strstr(e2.message, op) != NULL, "%s: inference message names the op: %s", op, e2.message);
  mi_graph_destroy(c);
  int32_t rc = mi_ref_run(k->g, (const mi_array_t *const *)k->rt, k->nrt, outs,
                          k->g->output_count, err);
  CHECK(rc == code, "%s: run gave %d, want %d (%s)", op, (int)rc, (int)code, err->message);
  for (int32_t i = 0; i < k->g->output_count; i++)
    CHECK(outs[i] == NULL, "%s: output %d left behind on failure", op, (int)i);
  mi_graph_destroy(k->g);
  k->g = NULL;
}

#endif /* TEST_REF_COMMON_H */
