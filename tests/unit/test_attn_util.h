/* test_attn_util.h - the harness of the attention tests (test_exec_attn.c, test_exec_mha.c,
 * test_exec_onnx_attn.c, test_exec_rotary.c, test_exec_gqa.c): a one-node graph run on the
 * reference with its inferred shapes checked, refused in one line, written and loaded back (the
 * loader's lowering), and the lowered graph run on the reference or on blis-cpu against the node's
 * reference. A header (not test_*.c), so the test glob does not make it a test. */
#ifndef TEST_ATTN_UTIL_H
#define TEST_ATTN_UTIL_H

#include <math.h>

#include "test_exec_util.h"
#include "test_ref_common.h"

enum { ATTN_MAXOUT = 4 }; /* the most outputs a node of these tests has (ONNX Attention's qk) */

static __attribute__((unused)) uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

/* A value in [-1, 1] in steps of 1 / 1000. */
static __attribute__((unused)) float rnd(uint64_t *s) { return (float)(lcg(s) % 2001) / 1000.f - 1.f; }

static __attribute__((unused)) void free_arrays(mi_array_t **a, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    mi_array_destroy(a[i]);
    a[i] = NULL;
  }
}

/* A new array for graph input k, of its dtype and shape; its element count in *cnt. */
static __attribute__((unused)) mi_array_t *input_array(const mi_graph_t *g, int32_t k, int64_t *cnt) {
  const mi_tensor_t *t = &g->tensors[g->inputs[k]];
  *cnt = 1;
  for (int32_t d = 0; d < t->rank; d++) *cnt *= t->dims[d];
  return mi_array_create(t->dtype, t->rank, t->dims);
}

/* Infers shapes and runs on the reference; checks the inferred shapes and types are the run's. */
static __attribute__((unused)) void ref_run(mi_graph_t *g, mi_array_t **in, int32_t nin, mi_array_t **out) {
  mi_error_t err = {0};
  CHECK(mi_graph_toposort(g, &err) == MI_OK && mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  CHECK(mi_ref_run(g, (const mi_array_t *const *)in, nin, out, g->output_count, &err) == MI_OK, "run: %s", err.message);
  for (int32_t k = 0; k < g->output_count; k++) {
    const mi_tensor_t *t = &g->tensors[g->outputs[k]];
    CHECK(out[k] && same_shape(out[k], t->rank, t->dims) && t->dtype == out[k]->dtype, "output %d: inferred shape is the run's",
          (int)k);
  }
}

/* g (its one node named node) refused at shape inference in one line naming the node and want;
 * destroys g. */
static __attribute__((unused)) void expect_refused(mi_graph_t *g, const char *node, const char *want) {
  mi_error_t err = {0};
  char quoted[64];
  snprintf(quoted, sizeof quoted, "'%s'", node);
  CHECK(mi_graph_toposort(g, &err) == MI_OK, "sort");
  CHECK(mi_graph_infer_shapes(g, &err) != MI_OK && strstr(err.message, want) && strstr(err.message, quoted) &&
            !strchr(err.message, '\n'),
        "refused naming '%s': %s", want, err.message);
  mi_graph_destroy(g);
}

/* g written and loaded back: the loader lowers the node to standard ops, so no node of op_type
 * gone is left (gone NULL: no com.microsoft node). */
static __attribute__((unused)) mi_graph_t *save_load(mi_graph_t *g, const char *gone) {
  mi_graph_t *back = NULL;
  mi_error_t err = {0};
  char path[] = "/tmp/mi_test_attn_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "temp file");
  close(fd);
  CHECK(mi_onnx_save(g, path, &err) == MI_OK, "save: %s", err.message);
  CHECK(mi_onnx_load(path, &back, &err) == MI_OK, "load: %s", err.message);
  unlink(path);
  if (back)
    for (int32_t i = 0; i < back->node_count; i++) {
      const mi_node_t *n = &back->nodes[i];
      CHECK(gone ? strcmp(n->op_type, gone) != 0 : !n->domain || !n->domain[0], "no %s node is left (%s)",
            gone ? gone : "com.microsoft", n->op_type);
    }
  return back;
}

static __attribute__((unused)) double max_abs(const mi_array_t *a, const mi_array_t *b) {
  if (!a || !b || a->nbytes != b->nbytes) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a->nbytes / 4; i++) {
    double d = fabs((double)((const float *)a->data)[i] - ((const float *)b->data)[i]);
    if (!(d <= m)) m = d;
  }
  return m;
}

/* back (form f written and loaded) run on the reference (p NULL) or on a blis-cpu session with
 * want_host host steps equals want, g's outputs on the reference: each within 1e-5 (rel_l2: a
 * relative L2 error under 1e-6). Destroys back and want. */
static __attribute__((unused)) void lowered_matches(mi_plugin_t *p, size_t f, const mi_graph_t *g, mi_graph_t *back,
                                                    mi_array_t **in, int32_t nin, mi_array_t **want, int32_t want_host,
                                                    int rel_l2) {
  mi_array_t *got[ATTN_MAXOUT] = {0};
  mi_error_t err = {0};
  if (back && mi_graph_infer_shapes(back, &err) == MI_OK) {
    if (p) {
      mi_session_t *s = session(back, p);
      int32_t host = mi_session_fallback_count(s);
      CHECK(host == want_host, "form %zu: %d host steps, want %d", f, (int)host, (int)want_host);
      CHECK(mi_session_run(s, (const mi_array_t *const *)in, nin, got, back->output_count, &err) == MI_OK, "run: %s",
            err.message);
      mi_session_destroy(s);
    } else
      CHECK(mi_ref_run(back, (const mi_array_t *const *)in, nin, got, back->output_count, &err) == MI_OK, "run: %s",
            err.message);
    for (int32_t k = 0; k < g->output_count; k++)
      if (rel_l2)
        CHECK(got[k] && tu_rel_l2_arrays(got[k], want[k]) < 1e-6, "form %zu output %d: rel L2 %.3e", f, (int)k,
              got[k] ? tu_rel_l2_arrays(got[k], want[k]) : -1.0);
      else
        CHECK(max_abs(got[k], want[k]) < 1e-5, "form %zu output %d: max abs %.3e", f, (int)k, max_abs(got[k], want[k]));
  } else if (back)
    CHECK(0, "form %zu: the loaded graph's shapes: %s", f, err.message);
  free_arrays(got, ATTN_MAXOUT);
  free_arrays(want, ATTN_MAXOUT);
  mi_graph_destroy(back);
}

/* Form f: g on the reference, then g written, loaded and run (lowered_matches) against it. */
static __attribute__((unused)) void lowered_form(mi_plugin_t *p, size_t f, mi_graph_t *g, mi_array_t **in, int32_t nin,
                                                 const char *gone, int32_t want_host, int rel_l2) {
  mi_array_t *want[ATTN_MAXOUT] = {0};
  ref_run(g, in, nin, want);
  lowered_matches(p, f, g, save_load(g, gone), in, nin, want, want_host, rel_l2);
}

#endif /* TEST_ATTN_UTIL_H */
