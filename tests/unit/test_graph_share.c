/* test_graph_share.c - a working copy that shares its constants with the graph it was copied from
 * (mi__graph_clone_shared): no second copy of the weights, and nothing done to the copy frees or
 * changes the original's data; a session's private copy uses it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "test_util.h"

/* x[1,4] -> MatMul(w[4,2]) -> Add(b[2]) -> y; an If-free graph with three constants. */
static mi_graph_t *small_graph(void) {
  mi_graph_t *g = mi_graph_create("share");
  int64_t xd[2] = {1, 4}, wd[2] = {4, 2}, bd[1] = {2};
  float w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[2] = {0.5f, -0.5f};
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd);
  int32_t wt = mi_graph_add_const_f32(g, "w", 2, wd, w);
  int32_t bt = mi_graph_add_const_f32(g, "b", 1, bd, b);
  int32_t m = mi_graph_add_tensor(g, "m", MI_DTYPE_FLOAT32, -1, NULL);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "MatMul", "mm", 2, (int32_t[]){x, wt}, 1, &m);
  mi_graph_add_node(g, "Add", "add", 2, (int32_t[]){m, bt}, 1, &y);
  mi_graph_add_output(g, y);
  return g;
}

static void test_clone_shares_and_releases_nothing(void) {
  mi_graph_t *g = small_graph();
  int32_t w = mi_graph_find_tensor(g, "w"), b = mi_graph_find_tensor(g, "b");
  float keep[8];
  memcpy(keep, g->tensors[w].data, sizeof keep);
  mi_graph_t *c = mi__graph_clone_shared(g);
  CHECK(c && c->tensor_count == g->tensor_count);
  CHECK(c->tensors[w].data == g->tensors[w].data && c->tensors[w].data_shared == 1);
  CHECK(c->tensors[b].data == g->tensors[b].data && c->tensors[b].data_shared == 1);
  CHECK(g->tensors[w].data_shared == 0);
  /* a deep copy of the shared copy owns its data again */
  mi_graph_t *d = mi_graph_clone(c);
  CHECK(d && d->tensors[w].data != g->tensors[w].data && d->tensors[w].data_shared == 0 &&
        memcmp(d->tensors[w].data, keep, sizeof keep) == 0);
  mi_graph_destroy(d);
  /* replacing a shared constant's data gives the copy its own buffer and leaves g's as it was */
  float z[8] = {0};
  CHECK(mi_graph_set_data(c, w, z, sizeof z) == MI_OK);
  CHECK(c->tensors[w].data != g->tensors[w].data && c->tensors[w].data_shared == 0);
  CHECK(memcmp(g->tensors[w].data, keep, sizeof keep) == 0);
  /* removing the Add drops b from the copy: released there, not freed under g */
  uint8_t drop[2] = {0, 1};
  mi_error_t err = {0};
  CHECK(mi_graph_remove_nodes(c, drop, &err) == MI_OK);
  CHECK(mi_graph_find_tensor(c, "b") < 0);
  mi_graph_destroy(c);
  /* g's constants are intact after the copy is gone (under ASan a free of g's buffer through
   * the copy is a double free at the destroy below) */
  CHECK(memcmp(g->tensors[w].data, keep, sizeof keep) == 0);
  CHECK(((float *)g->tensors[b].data)[0] == 0.5f && ((float *)g->tensors[b].data)[1] == -0.5f);
  mi_graph_destroy(g);
}

/* A session whose graph needs a private copy (y's shape is left to inference) runs on the
 * caller's weights and leaves them intact; blis-cpu's result is the hand-worked one. */
static void test_session_copy_shares_weights(void) {
  mi_graph_t *g = small_graph();
  int32_t w = mi_graph_find_tensor(g, "w");
  float keep[8];
  mi_error_t err = {0};
  mi_registry_t *reg = mi_registry_create();
  REQUIRE(reg && tu_scan_plugins(reg, &err) == MI_OK);
  mi_plugin_t *pl = mi_registry_find(reg, "blis-cpu");
  REQUIRE(pl != NULL, "blis-cpu is loaded");
  memcpy(keep, g->tensors[w].data, sizeof keep);
  mi_session_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  for (int pass = 0; pass < 2; pass++) { /* the reference path, then blis-cpu */
    mi_session_t *s = NULL;
    REQUIRE(mi_session_create(g, pass ? pl : NULL, 0, &o, &s, &err) == MI_OK, "%s", err.message);
    int64_t xd[2] = {1, 4};
    mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 2, xd), *out = NULL;
    for (int i = 0; i < 4; i++) ((float *)in->data)[i] = (float)(i + 1);
    CHECK(mi_session_run(s, (const mi_array_t *const *)&in, 1, &out, 1, &err) == MI_OK, "%s", err.message);
    /* [1 2 3 4] x w = [1+6+15+28, 2+8+18+32] = [50, 60], + b */
    CHECK(out && ((float *)out->data)[0] == 50.5f && ((float *)out->data)[1] == 59.5f);
    mi_array_destroy(out);
    mi_array_destroy(in);
    mi_session_destroy(s);
    CHECK(g->tensors[w].data_shared == 0 && memcmp(g->tensors[w].data, keep, sizeof keep) == 0);
  }
  mi_registry_destroy(reg);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_clone_shares_and_releases_nothing),
    TU_CASE(test_session_copy_shares_weights),
};

TU_MAIN(NULL, NULL)
