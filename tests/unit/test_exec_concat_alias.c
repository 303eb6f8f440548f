/* test_exec_concat_alias.c - concat elimination on blis-cpu: a channel Concat at batch 1 runs no
 * kernel, its producers write into their slices of its buffer (constant inputs are written by
 * its step), and outputs stay byte-identical to the reference over repeated runs; inputs that
 * cannot be slices (a graph input, one read by two Concats, a batch of 2) keep the copy, and so
 * does a plugin without buffer_view (npu-stub). */
#include <stdio.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_util.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

enum { SHAPE_N = 0 };

typedef struct want {
  const char *label;
  int32_t node[2]; /* the Concat nodes, -1 for none */
  int elim[2];     /* 1 when that Concat should run no kernel */
} want_t;

static int32_t add(mi_graph_t *g, const char *op, const char *name, int32_t n, const int32_t *in) {
  int32_t y = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, op, name, n, in, 1, &y);
  return y;
}

static int32_t concat(mi_graph_t *g, const char *name, int32_t n, const int32_t *in, int32_t *node) {
  int32_t y = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
  *node = mi_graph_add_node(g, "Concat", name, n, in, 1, &y);
  mi_node_set_int(g, *node, "axis", 1);
  return y;
}

/* kind 0: Relu(x), Neg(x) and Abs(x) (exact on both sides) concatenated, a constant between them, Relu after;
 * a reader of one slice after the Concat. kind 1: the graph input itself as one part. kind 2:
 * one tensor read by two Concats. kind 3: a batch of 2. */
static mi_graph_t *graph(int kind, want_t *w) {
  static const int64_t xd1[4] = {1, 16, 8, 8}, xd2[4] = {2, 16, 8, 8}, kd1[4] = {1, 4, 8, 8},
                       kd2[4] = {2, 4, 8, 8};
  float kv[2 * 4 * 8 * 8];
  mi_graph_t *g = mi_graph_create("concat_alias");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, kind == 3 ? xd2 : xd1), a, b, c, k, y, z, in[4];
  for (int i = 0; i < 2 * 4 * 8 * 8; i++) kv[i] = 0.25f * (float)(i % 7) - 0.5f;
  mi_graph_add_input(g, x);
  a = add(g, "Relu", "a", 1, &x);
  b = add(g, "Neg", "b", 1, &x);
  c = add(g, "Abs", "c", 1, &x);
  k = mi_graph_add_const_f32(g, "k", 4, kind == 3 ? kd2 : kd1, kv);
  w->node[1] = -1;
  w->elim[0] = kind == 0 || kind == 2;
  w->elim[1] = 0;
  in[0] = kind == 1 ? x : a;
  in[1] = k;
  in[2] = b;
  in[3] = c;
  y = concat(g, "y", 4, in, &w->node[0]);
  z = add(g, "Relu", "z", 1, &y);
  mi_graph_add_output(g, z);
  in[0] = b;
  mi_graph_add_output(g, add(g, "Relu", "nb", 1, in)); /* reads slice b after the Concat */
  if (kind == 2) {                                     /* b is a slice of y already: the second Concat copies it */
    in[0] = b;
    in[1] = a;
    mi_graph_add_output(g, add(g, "Relu", "z2", 1, (int32_t[]){concat(g, "y2", 2, in, &w->node[1])}));
  }
  w->label = kind == 0 ? "slices" : kind == 1 ? "graph input part"
                                : kind == 2   ? "read by two"
                                              : "batch 2";
  return g;
}

static void check(int kind) {
  want_t w;
  mi_graph_t *g = graph(kind, &w);
  mi_session_t *s = NULL;
  mi_array_t *in = NULL, *want[3] = {0}, *got[3] = {0};
  mi_error_t err = {0};
  int32_t nout = g->output_count, rc = mi_graph_infer_shapes(g, &err);
  CHECK(rc == MI_OK, "%s: shapes: %s", w.label, err.message);
  if (rc == MI_OK) rc = mi_session_create(g, g_blis, 0, NULL, &s, &err);
  CHECK(rc == MI_OK, "%s: create: %s", w.label, err.message);
  for (int run = 0; run < 3 && rc == MI_OK; run++) {
    /* new values every run: a slice that kept an older run's bytes, or a constant part that
     * another tensor sharing the allocation overwrote, would show */
    in = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[0]].dims);
    mi_array_fill_random(in, 90u + (unsigned)run);
    rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, want, nout, &err);
    CHECK(rc == MI_OK, "%s: ref: %s", w.label, err.message);
    if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, nout, &err);
    CHECK(rc == MI_OK, "%s: run %d: %s", w.label, run, err.message);
    for (int32_t i = 0; i < nout && rc == MI_OK; i++)
      CHECK(got[i] && want[i] && got[i]->nbytes == want[i]->nbytes &&
                memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0,
            "%s: run %d: output %d differs from the reference", w.label, run, (int)i);
    for (int32_t i = 0; i < nout; i++) {
      mi_array_destroy(got[i]);
      mi_array_destroy(want[i]);
      got[i] = want[i] = NULL;
    }
    mi_array_destroy(in);
  }
  /* An eliminated Concat runs no device kernel: wall time only (1); a copy reports device time
   * (2). */
  for (int j = 0; j < 2 && rc == MI_OK; j++) {
    uint64_t wall = 0, dev = 0;
    if (w.node[j] < 0) continue;
    CHECK(mi_session_node_time(s, w.node[j], &wall, &dev) == (w.elim[j] ? 1 : 2),
          "%s: Concat %d: %s", w.label, j, w.elim[j] ? "ran a kernel, not eliminated" : "eliminated, should copy");
  }
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

static void slices(void) { check(0); }
static void graph_input_part(void) { check(1); }
static void read_by_two(void) { check(2); }
static void batch2(void) { check(3); }

/* Producers that tile their output (a 3x3 and a 1x1 conv, a max pool) over an odd 7x7 plane,
 * run in the reverse of their slices' order, so a write past a slice's end would land in a slice
 * written before it. With `copy` the parts are graph outputs too, so the Concat copies (the
 * build before views): both sessions' outputs must be the same bytes. */
static mi_graph_t *tiled(int copy, int32_t *node) {
  static const int64_t xd[4] = {1, 16, 7, 7}, w1d[4] = {16, 16, 3, 3}, w2d[4] = {32, 16, 1, 1}, k3[2] = {3, 3},
                       p1[4] = {1, 1, 1, 1}, s1[2] = {1, 1};
  static float w1[16 * 16 * 9], w2[32 * 16];
  mi_graph_t *g = mi_graph_create("concat_tiled");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), in[3], pc, m, q, n;
  uint32_t v = 12345u;
  for (int i = 0; i < 16 * 16 * 9; i++) w1[i] = (float)((v = v * 1664525u + 1013904223u) >> 8) / 16777216.f - 0.5f;
  for (int i = 0; i < 32 * 16; i++) w2[i] = (float)((v = v * 1664525u + 1013904223u) >> 8) / 16777216.f - 0.5f;
  mi_graph_add_input(g, x);
  in[0] = x;
  in[1] = mi_graph_add_const_f32(g, "w1", 4, w1d, w1);
  pc = add(g, "Conv", "p", 2, in);
  mi_node_set_ints(g, g->node_count - 1, "kernel_shape", 2, k3);
  mi_node_set_ints(g, g->node_count - 1, "pads", 4, p1);
  m = add(g, "MaxPool", "m", 1, in);
  mi_node_set_ints(g, g->node_count - 1, "kernel_shape", 2, k3);
  mi_node_set_ints(g, g->node_count - 1, "pads", 4, p1);
  mi_node_set_ints(g, g->node_count - 1, "strides", 2, s1);
  in[1] = mi_graph_add_const_f32(g, "w2", 4, w2d, w2);
  q = add(g, "Conv", "q", 2, in);
  in[0] = q;
  in[1] = m;
  in[2] = pc;
  n = concat(g, "y", 3, in, node);
  mi_graph_add_output(g, add(g, "Relu", "z", 1, &n));
  if (copy)
    for (int i = 0; i < 3; i++) mi_graph_add_output(g, in[i]);
  return g;
}

static void tiled_producers(void) {
  mi_session_t *s[2] = {0};
  mi_graph_t *g[2];
  mi_array_t *in = NULL, *out[2][4] = {{0}};
  mi_error_t err = {0};
  int32_t node[2], rc = MI_OK;
  uint64_t wall = 0, ns = 0;
  for (int c = 0; c < 2; c++) {
    g[c] = tiled(c, &node[c]);
    if (rc == MI_OK) rc = mi_graph_infer_shapes(g[c], &err);
    if (rc == MI_OK) rc = mi_session_create(g[c], g_blis, 0, NULL, &s[c], &err);
    CHECK(rc == MI_OK, "tiled: create: %s", err.message);
  }
  if (rc == MI_OK) {
    in = mi_array_create(MI_DTYPE_FLOAT32, 4, g[0]->tensors[g[0]->inputs[0]].dims);
    mi_array_fill_random(in, 77);
    for (int c = 0; c < 2 && rc == MI_OK; c++)
      rc = mi_session_run(s[c], (const mi_array_t *const *)&in, 1, out[c], g[c]->output_count, &err);
    CHECK(rc == MI_OK, "tiled: run: %s", err.message);
  }
  if (rc == MI_OK) {
    CHECK(mi_session_node_time(s[0], node[0], &wall, &ns) == 1, "tiled: the Concat was not eliminated");
    CHECK(mi_session_node_time(s[1], node[1], &wall, &ns) == 2, "tiled: the copy reference was eliminated");
    CHECK(out[0][0] && out[1][0] && out[0][0]->nbytes == out[1][0]->nbytes &&
              memcmp(out[0][0]->data, out[1][0]->data, out[1][0]->nbytes) == 0,
          "tiled: eliminated Concat's output differs from the copy's");
  }
  for (int c = 0; c < 2; c++) {
    for (int i = 0; i < 4; i++) mi_array_destroy(out[c][i]);
    mi_session_destroy(s[c]);
    mi_graph_destroy(g[c]);
  }
  mi_array_destroy(in);
}

/* A plugin without buffer_view (npu-stub: a 1.1-style table for this) keeps the copy: its
 * Concat runs a kernel, and the run still gives the reference's values (to its FP16). */
static void no_views(void) {
  want_t w;
  mi_graph_t *g = graph(0, &w);
  mi_plugin_t *npu = NULL;
  mi_session_t *s = NULL;
  mi_array_t *in = NULL, *want[2] = {0}, *got[2] = {0};
  mi_error_t err = {0};
  uint32_t dev = 0;
  uint64_t wall = 0, ns = 0;
  int32_t rc = mi_graph_infer_shapes(g, &err);
  if (!mi_registry_find(r, "npu-stub") || mi_registry_device(r, "npu-stub:0", &npu, &dev, &err) != MI_OK) {
    mi_graph_destroy(g);
    return; /* not built here: nothing to compare */
  }
  CHECK(npu->api.buffer_view == NULL, "npu-stub gives views now: pick a plugin without them");
  if (rc == MI_OK) rc = mi_session_create(g, npu, dev, NULL, &s, &err);
  CHECK(rc == MI_OK, "npu-stub: create: %s", err.message);
  in = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[0]].dims);
  mi_array_fill_random(in, 5);
  if (rc == MI_OK) rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, want, 2, &err);
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, 2, &err);
  CHECK(rc == MI_OK, "npu-stub: run: %s", err.message);
  if (rc == MI_OK) {
    for (int i = 0; i < 2; i++)
      CHECK(tu_rel_l2_arrays(got[i], want[i]) < 1e-2, "npu-stub: output %d off the reference", i);
    CHECK(mi_session_node_time(s, w.node[0], &wall, &ns) == 2, "npu-stub: the Concat ran no kernel");
  }
  for (int i = 0; i < 2; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(want[i]);
  }
  mi_array_destroy(in);
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

static void setup(void) {
  mi_error_t err = {0};
  uint32_t dev = 0;
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
}

static void teardown(void) { mi_registry_destroy(r); }

static const tu_case_t tu_cases[] = {TU_CASE(slices), TU_CASE(graph_input_part), TU_CASE(read_by_two),
                                     TU_CASE(batch2), TU_CASE(tiled_producers), TU_CASE(no_views)};
TU_MAIN(setup, teardown)
