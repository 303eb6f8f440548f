/* test_exec_plan_index.c - the look-ups a session's preparation asks per node answered without
 * a scan of the graph per question (a nested branch is prepared again at every cache length of
 * a decoding loop): the plan's reader index (exec/plan.c) gives the answers the scans give for
 * a tensor read twice by one node, read by two, read by a node that does not run, read and a
 * graph output, and not read, and so does the graph's (mi__graph_sole_readers, what the layer
 * norm fusion reads); mi__graph_producer stays right when a tensor's producer field is stale. */
#include "exec/exec.h"
#include "exec/plan_match.h"
#include "graph/graph.h"
#include "test_util.h"

static int32_t node1(mi_graph_t *g, const char *op, const char *out, int32_t a, int32_t b) {
  int32_t t = mi_graph_add_tensor(g, out, MI_DTYPE_FLOAT32, -1, NULL), in[2] = {a, b};
  mi_graph_add_node(g, op, out, b >= 0 ? 2 : 1, in, 1, &t);
  return t;
}

/* x -> Relu a -> Mul(a, a) b -> Sigmoid c -> Neg y; b -> Tanh d (nobody reads d);
 * c and y are graph outputs. */
static mi_graph_t *build(int32_t t[6]) {
  static const int64_t dims[2] = {2, 3};
  mi_graph_t *g = mi_graph_create("readers");
  REQUIRE(g);
  t[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, dims);
  mi_graph_add_input(g, t[0]);
  t[1] = node1(g, "Relu", "a", t[0], -1);
  t[2] = node1(g, "Mul", "b", t[1], t[1]);
  t[3] = node1(g, "Sigmoid", "c", t[2], -1);
  t[4] = node1(g, "Tanh", "d", t[2], -1);
  t[5] = node1(g, "Neg", "y", t[3], -1);
  mi_graph_add_output(g, t[3]);
  mi_graph_add_output(g, t[5]);
  REQUIRE(g->node_count == 5);
  return g;
}

static void readers(void) {
  int32_t t[6];
  mi_graph_t *g = build(t);
  mi__plan_t p;
  /* expected: sole reader, live reader (the Tanh, node 3, does not run) */
  const int32_t sole[6] = {0, 1, -1, -1, -1, -1}, live[6] = {0, 1, 2, -1, -1, -1};
  memset(&p, 0, sizeof p);
  p.node_count = g->node_count;
  REQUIRE((p.role = calloc((size_t)g->node_count, sizeof *p.role)) != NULL);
  p.role[3] = MI__ROLE_UNREAD;
  for (int32_t i = 0; i < 6; i++) { /* the scans, before the index */
    CHECK(mi__plan_sole_reader(g, &p, t[i]) == sole[i], "scan: sole reader of %s", g->tensors[t[i]].name);
    CHECK(mi__plan_live_reader(g, &p, t[i]) == live[i], "scan: live reader of %s", g->tensors[t[i]].name);
  }
  mi__plan_index_readers(&p, g);
  REQUIRE(p.sole && p.live);
  for (int32_t i = 0; i < 6; i++) {
    CHECK(mi__plan_sole_reader(g, &p, t[i]) == sole[i], "index: sole reader of %s is %d", g->tensors[t[i]].name,
          mi__plan_sole_reader(g, &p, t[i]));
    CHECK(mi__plan_sole_reader(g, &p, t[i]) == mi__graph_sole_reader(g, t[i]), "index and scan differ on %s",
          g->tensors[t[i]].name);
    CHECK(mi__plan_live_reader(g, &p, t[i]) == live[i], "index: live reader of %s is %d", g->tensors[t[i]].name,
          mi__plan_live_reader(g, &p, t[i]));
  }
  CHECK(mi__plan_sole_reader(g, &p, -1) == -1 && mi__plan_live_reader(g, &p, -1) == -1);
  CHECK(mi__plan_sole_reader(g, &p, g->tensor_count) == -1, "a tensor index past the graph");
  mi__plan_free(&p);
  CHECK(!p.sole && !p.live);
  mi_graph_destroy(g);
}

static void graph_index(void) {
  int32_t t[6], *idx;
  mi_graph_t *g = build(t);
  REQUIRE((idx = mi__graph_sole_readers(g)) != NULL);
  for (int32_t i = 0; i < g->tensor_count; i++)
    CHECK(idx[i] == mi__graph_sole_reader(g, i), "sole reader of %s: index %d, scan %d", g->tensors[i].name,
          idx[i], mi__graph_sole_reader(g, i));
  CHECK(idx[t[1]] == 1 && idx[t[2]] == -1 && idx[t[3]] == -1 && idx[t[4]] == -1);
  free(idx);
  mi_graph_destroy(g);
}

static void producer_stale(void) {
  int32_t t[6];
  mi_graph_t *g = build(t);
  mi_error_t err = {0};
  REQUIRE(mi_graph_toposort(g, &err) == MI_OK, "%s", err.message);
  CHECK(mi__graph_producer(g, t[2]) == 1 && mi__graph_producer(g, t[0]) == -1);
  g->tensors[t[2]].producer = 0; /* a node that does not write it */
  CHECK(mi__graph_producer(g, t[2]) == 1, "a stale producer field taken for the producer");
  g->tensors[t[2]].producer = 99; /* past the nodes */
  CHECK(mi__graph_producer(g, t[2]) == 1);
  g->tensors[t[0]].producer = 2; /* an input given a producer */
  CHECK(mi__graph_producer(g, t[0]) == -1, "an input given a producer");
  CHECK(mi__graph_producer(g, -1) == -1);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {TU_CASE(readers), TU_CASE(graph_index), TU_CASE(producer_stale)};
TU_MAIN(NULL, NULL)
