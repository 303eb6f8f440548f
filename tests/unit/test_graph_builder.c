/* test_graph_builder.c - the graph IR builder, attributes, clone and topological sort. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"

#include "test_util.h"

static void test_builder_and_attrs(void) {
  mi_graph_t *g = mi_graph_create("b");
  CHECK(g && g->opset == 13 && strcmp(g->name, "b") == 0);
  int64_t xd[4] = {1, 3, 8, 8};
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  CHECK(x == 0 && mi_graph_add_input(g, x) == MI_OK);
  float w[2 * 3] = {1, 2, 3, 4, 5, 6};
  int64_t wd[2] = {2, 3};
  int32_t wt = mi_graph_add_const_f32(g, "w", 2, wd, w);
  CHECK(wt == 1 && g->tensors[wt].nbytes == sizeof w && memcmp(g->tensors[wt].data, w, sizeof w) == 0);
  int64_t sv[3] = {1, -1, 0};
  int32_t s = mi_graph_add_const_i64(g, "s", 3, sv);
  CHECK(s == 2 && g->tensors[s].rank == 1 && g->tensors[s].dims[0] == 3 &&
        g->tensors[s].dtype == MI_DTYPE_INT64);
  CHECK(mi_graph_find_tensor(g, "w") == wt && mi_graph_find_tensor(g, "nope") == -1);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = mi_graph_add_node(g, "Relu", "relu0", 1, &x, 1, &y);
  CHECK(n == 0 && g->tensors[y].producer == 0 && g->nodes[n].group == -1);
  CHECK(mi_node_set_int(g, n, "k", 5) == MI_OK);
  CHECK(mi_node_set_int(g, n, "k", 7) == MI_OK); /* replaces */
  CHECK(g->nodes[n].attr_count == 1 && mi_node_attr_int(&g->nodes[n], "k", 0) == 7);
  CHECK(mi_node_set_float(g, n, "alpha", 0.5f) == MI_OK);
  CHECK(mi_node_attr_float(&g->nodes[n], "alpha", 0) == 0.5f);
  CHECK(mi_node_attr_int(&g->nodes[n], "alpha", -3) == -3); /* wrong type -> default */
  int64_t pads[4] = {1, 1, 2, 2};
  CHECK(mi_node_set_ints(g, n, "pads", 4, pads) == MI_OK);
  const mi_attr_t *a = mi_node_attr(&g->nodes[n], "pads");
  CHECK(a && a->type == MI_ATTR_INTS && a->count == 4 && a->ints[2] == 2);
  float sc[2] = {2.0f, 3.0f};
  CHECK(mi_node_set_floats(g, n, "scales", 2, sc) == MI_OK);
  CHECK(mi_node_set_string(g, n, "mode", "nearest") == MI_OK);
  CHECK(strcmp(mi_node_attr_string(&g->nodes[n], "mode", "x"), "nearest") == 0);
  CHECK(strcmp(mi_node_attr_string(&g->nodes[n], "none", "dflt"), "dflt") == 0);
  CHECK(mi_node_set_int(g, 9, "k", 1) == MI_ERR_INVALID_ARGUMENT);
  CHECK(mi_graph_add_node(g, "Relu", NULL, 1, (int32_t[]){42}, 1, &y) == -1);
  CHECK(mi_graph_add_output(g, y) == MI_OK);

  mi_graph_t *c = mi_graph_clone(g);
  CHECK(c && c->tensor_count == g->tensor_count && c->node_count == 1);
  CHECK(c->tensors[wt].data != g->tensors[wt].data &&
        memcmp(c->tensors[wt].data, w, sizeof w) == 0);
  CHECK(c->nodes[0].attrs != g->nodes[0].attrs &&
        mi_node_attr(&c->nodes[0], "pads")->ints[3] == 2);
  mi_graph_destroy(g);
  /* The clone must stand alone once the original is gone. */
  CHECK(strcmp(mi_node_attr_string(&c->nodes[0], "mode", ""), "nearest") == 0);
  CHECK(strcmp(c->tensors[0].name, "x") == 0 && c->inputs[0] == 0 && c->outputs[0] == y);
  mi_graph_destroy(c);
  mi_graph_destroy(NULL);
}

static void test_toposort(void) {
  mi_graph_t *g = mi_graph_create("t");
  int64_t d[1] = {4};
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, d);
  mi_graph_add_input(g, x);
  int32_t a = mi_graph_add_tensor(g, "a", 0, -1, NULL);
  int32_t b = mi_graph_add_tensor(g, "b", 0, -1, NULL);
  int32_t c = mi_graph_add_tensor(g, "c", 0, -1, NULL);
  /* Added in reverse dependency order: c = Neg(b), b = Exp(a), a = Relu(x). */
  mi_graph_add_node(g, "Neg", "n_c", 1, &b, 1, &c);
  mi_graph_add_node(g, "Exp", "n_b", 1, &a, 1, &b);
  mi_graph_add_node(g, "Relu", "n_a", 1, &x, 1, &a);
  mi_graph_add_output(g, c);
  mi_error_t err = {0};
  CHECK(mi_graph_toposort(g, &err) == MI_OK);
  CHECK(strcmp(g->nodes[0].name, "n_a") == 0 && strcmp(g->nodes[1].name, "n_b") == 0 &&
        strcmp(g->nodes[2].name, "n_c") == 0);
  CHECK(g->tensors[a].producer == 0 && g->tensors[b].producer == 1 && g->tensors[c].producer == 2);
  CHECK(g->tensors[x].producer == -1);
  /* Already sorted: independent nodes keep their order. */
  int32_t e = mi_graph_add_tensor(g, "e", 0, -1, NULL);
  mi_graph_add_node(g, "Abs", "n_e", 1, &x, 1, &e);
  CHECK(mi_graph_toposort(g, &err) == MI_OK && strcmp(g->nodes[3].name, "n_e") == 0 &&
        strcmp(g->nodes[0].name, "n_a") == 0);
  mi_graph_destroy(g);

  /* A cycle: p = Relu(q), q = Relu(p). */
  g = mi_graph_create("cyc");
  int32_t p = mi_graph_add_tensor(g, "p_tensor", 0, -1, NULL);
  int32_t q = mi_graph_add_tensor(g, "q_tensor", 0, -1, NULL);
  mi_graph_add_node(g, "Relu", "r1", 1, &q, 1, &p);
  mi_graph_add_node(g, "Relu", "r2", 1, &p, 1, &q);
  err.code = 0;
  CHECK(mi_graph_toposort(g, &err) == MI_ERR_PARSE && err.code == MI_ERR_PARSE);
  CHECK(strstr(err.message, "cycle") && (strstr(err.message, "p_tensor") || strstr(err.message, "q_tensor")));
  mi_graph_destroy(g);

  /* An undefined input names the node and the tensor. */
  g = mi_graph_create("undef");
  int32_t u = mi_graph_add_tensor(g, "ghost", MI_DTYPE_FLOAT32, 1, d);
  int32_t o = mi_graph_add_tensor(g, "o", 0, -1, NULL);
  mi_graph_add_node(g, "Relu", "reader", 1, &u, 1, &o);
  CHECK(mi_graph_toposort(g, &err) == MI_ERR_PARSE);
  CHECK(strstr(err.message, "reader") && strstr(err.message, "ghost"));
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_builder_and_attrs),
    TU_CASE(test_toposort),
};

TU_MAIN(NULL, NULL)
