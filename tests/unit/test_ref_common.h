/* test_ref_common.h - small graph-building and checking helpers for the reference tests. */
#ifndef TEST_REF_COMMON_H
#define TEST_REF_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"

static int g_failures;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      g_failures++;                                              \
    }                                                            \
  } while (0)

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

static __attribute__((unused)) int finish(const char *name) {
  if (g_failures) {
    fprintf(stderr, "%s: %d failure(s)\n", name, g_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

#endif /* TEST_REF_COMMON_H */
