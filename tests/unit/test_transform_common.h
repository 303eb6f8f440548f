/* test_transform_common.h - helpers for the transform tests: zoo models, samples, checks. */
#ifndef TEST_TRANSFORM_COMMON_H
#define TEST_TRANSFORM_COMMON_H

#include "test_util.h"
#include "zoo.h"

/* A zoo model at a small resolution so the reference runs stay fast. */
static __attribute__((unused)) mi_graph_t *zoo(const char *family, int32_t resolution) {
  mi_zoo_options_t o;
  mi_graph_t *g = NULL;
  mi_error_t err;
  mi_zoo_options_default(&o);
  o.seed = 7;
  if (resolution) o.resolution = resolution;
  if (mi_zoo_build(family, &o, &g, &err) != MI_OK) {
    fprintf(stderr, "zoo %s: %s\n", family, err.message);
    return NULL;
  }
  if (mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "zoo %s shapes: %s\n", family, err.message);
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* Compares two graphs over `n` random samples; returns the metrics (rel_l2 = 1e9 on error). */
static __attribute__((unused)) mi_xf_metrics_t compare(const mi_graph_t *a, const mi_graph_t *b,
                                                       int32_t n) {
  mi_xf_metrics_t m;
  mi_xf_samples_t *s = NULL;
  mi_error_t err;
  memset(&m, 0, sizeof m);
  m.rel_l2 = 1e9;
  if (mi_xf_samples_random(a, n, 99, &s, &err) != MI_OK ||
      mi_xf_compare(a, b, s, &m, &err) != MI_OK) {
    fprintf(stderr, "compare: %s\n", err.message);
    m.rel_l2 = 1e9;
  }
  mi_xf_samples_destroy(s);
  return m;
}

#endif
