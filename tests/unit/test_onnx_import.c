/* test_onnx_import.c - ONNX import of hand-encoded models (typed fields, Constant nodes,
 * external data) and of bad input: every failure is one line naming the file or node. The
 * models are encoded here with a tiny protobuf writer, independent of the importer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metainfer/mi.h"

#include "test_util.h"

#include "test_pb.h"

/* ModelProto{ir_version 8, opset_import{domain "", version opset}, graph}. */
static void model(pb_t *out, const pb_t *graph, int64_t opset) {
  pb_t os = {0};
  put_str(&os, 1, "");
  put_int(&os, 2, opset);
  out->n = 0;
  put_int(out, 1, 8);
  put_msg(out, 8, &os);
  if (graph) put_msg(out, 7, graph);
}

static void node(pb_t *g, const char *op, const char *name, const char *in, const char *out,
                 const char *domain, const pb_t *attr) {
  pb_t n = {0};
  if (in) put_str(&n, 1, in);
  put_str(&n, 2, out);
  put_str(&n, 3, name);
  put_str(&n, 4, op);
  if (attr) put_msg(&n, 5, attr);
  if (domain) put_str(&n, 7, domain);
  put_msg(g, 1, &n);
}

static void output(pb_t *g, const char *name) {
  pb_t vi = {0};
  put_str(&vi, 1, name);
  put_msg(g, 12, &vi);
}

static char g_dir[64];

static const char *write_file(const char *name, const void *p, size_t n) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(p, 1, n, f);
    fclose(f);
  }
  return path;
}

static mi_graph_t *load(const char *name, const pb_t *m, int32_t *rc, mi_error_t *err) {
  const char *path = write_file(name, m->d, m->n);
  mi_graph_t *g = (mi_graph_t *)1;
  *rc = mi_onnx_load(path, &g, err);
  if (*rc != MI_OK && g != NULL) {
    fprintf(stderr, "  failed load left *out non-NULL\n");
    g_failures = 1;
  }
  return g;
}

static void test_typed_fields_and_constants(void) {
  pb_t g = {0}, t, m, a, packed;
  /* float_data: w = [1.5, -2] */
  t.n = 0;
  put_int(&t, 1, 2);
  put_int(&t, 2, 1);
  float fv[2] = {1.5f, -2.0f};
  put_bytes(&t, 4, fv, sizeof fv);
  put_str(&t, 8, "w");
  put_msg(&g, 5, &t);
  /* int32_data holding INT8 values: q = [-3, 7] */
  t.n = 0;
  put_int(&t, 1, 2);
  put_int(&t, 2, 3);
  packed.n = 0;
  varint(&packed, (uint64_t)(int64_t)-3);
  varint(&packed, 7);
  put_msg(&t, 5, &packed);
  put_str(&t, 8, "q");
  put_msg(&g, 5, &t);
  /* int64_data: s = [0, -1] */
  t.n = 0;
  put_int(&t, 1, 2);
  put_int(&t, 2, 7);
  packed.n = 0;
  varint(&packed, 0);
  varint(&packed, (uint64_t)(int64_t)-1);
  put_msg(&t, 7, &packed);
  put_str(&t, 8, "s");
  put_msg(&g, 5, &t);
  /* double_data: d = [0.25] -> float32 */
  t.n = 0;
  put_int(&t, 1, 1);
  put_int(&t, 2, 11);
  double dv = 0.25;
  put_bytes(&t, 10, &dv, sizeof dv);
  put_str(&t, 8, "d");
  put_msg(&g, 5, &t);
  /* Constant with value_ints [2, 3], and Constant with a tensor value. */
  a.n = 0;
  put_str(&a, 1, "value_ints");
  packed.n = 0;
  varint(&packed, 2);
  varint(&packed, 3);
  put_msg(&a, 8, &packed);
  put_int(&a, 20, 7);
  node(&g, "Constant", "c1", NULL, "cshape", NULL, &a);
  t.n = 0;
  put_int(&t, 2, 1);
  float one = 4.0f;
  put_bytes(&t, 9, &one, sizeof one);
  a.n = 0;
  put_str(&a, 1, "value");
  put_msg(&a, 5, &t);
  put_int(&a, 20, 4);
  node(&g, "Constant", "c2", NULL, "cscalar", NULL, &a);
  node(&g, "Relu", "r", "w", "y", NULL, NULL);
  output(&g, "y");
  model(&m, &g, 13);
  int32_t rc;
  mi_error_t err = {0};
  mi_graph_t *gr = load("typed.onnx", &m, &rc, &err);
  CHECK(rc == MI_OK);
  if (!gr) {
    fprintf(stderr, "  %s\n", err.message);
    return;
  }
  int32_t w = mi_graph_find_tensor(gr, "w"), q = mi_graph_find_tensor(gr, "q");
  int32_t s = mi_graph_find_tensor(gr, "s"), d = mi_graph_find_tensor(gr, "d");
  int32_t cs = mi_graph_find_tensor(gr, "cshape"), cc = mi_graph_find_tensor(gr, "cscalar");
  CHECK(w >= 0 && gr->tensors[w].dtype == MI_DTYPE_FLOAT32 && ((float *)gr->tensors[w].data)[1] == -2.0f);
  CHECK(q >= 0 && gr->tensors[q].dtype == MI_DTYPE_INT8 && ((int8_t *)gr->tensors[q].data)[0] == -3 &&
        ((int8_t *)gr->tensors[q].data)[1] == 7);
  CHECK(s >= 0 && ((int64_t *)gr->tensors[s].data)[1] == -1);
  CHECK(d >= 0 && gr->tensors[d].dtype == MI_DTYPE_FLOAT32 && ((float *)gr->tensors[d].data)[0] == 0.25f);
  CHECK(cs >= 0 && gr->tensors[cs].data && gr->tensors[cs].rank == 1 &&
        ((int64_t *)gr->tensors[cs].data)[1] == 3 && gr->tensors[cs].producer == -1);
  CHECK(cc >= 0 && gr->tensors[cc].rank == 0 && ((float *)gr->tensors[cc].data)[0] == 4.0f);
  CHECK(gr->node_count == 1 && gr->input_count == 0); /* Constants became initializers */
  mi_graph_destroy(gr);
}

static void test_external_data(void) {
  float vals[4] = {0, 0, 3.5f, -1.0f}; /* tensor data starts at offset 8 */
  write_file("weights.bin", vals, sizeof vals);
  for (int evil = 0; evil < 3; evil++) {
    pb_t g = {0}, t = {0}, kv, m;
    put_int(&t, 1, 2);
    put_int(&t, 2, 1);
    put_str(&t, 8, "ext");
    const char *loc = evil == 0 ? "weights.bin" : evil == 1 ? "../weights.bin"
                                                            : "/etc/passwd";
    kv.n = 0;
    put_str(&kv, 1, "location");
    put_str(&kv, 2, loc);
    put_msg(&t, 13, &kv);
    kv.n = 0;
    put_str(&kv, 1, "offset");
    put_str(&kv, 2, "8");
    put_msg(&t, 13, &kv);
    put_int(&t, 14, 1);
    put_msg(&g, 5, &t);
    output(&g, "ext");
    model(&m, &g, 13);
    int32_t rc;
    mi_error_t err = {0};
    mi_graph_t *gr = load("ext.onnx", &m, &rc, &err);
    if (evil == 0) {
      CHECK(rc == MI_OK && gr && ((float *)gr->tensors[0].data)[0] == 3.5f &&
            ((float *)gr->tensors[0].data)[1] == -1.0f);
    } else {
      CHECK(rc == MI_ERR_PARSE && !gr);
      CHECK(strstr(err.message, "ext.onnx") && strstr(err.message, loc) && strstr(err.message, "escapes"));
    }
    mi_graph_destroy(gr);
  }
}

static void test_bad_input(void) {
  mi_error_t err = {0};
  mi_graph_t *gr = (mi_graph_t *)1;
  int32_t rc;
  /* Missing file. */
  CHECK(mi_onnx_load("/nonexistent/model.onnx", &gr, &err) == MI_ERR_IO && gr == NULL);
  CHECK(strstr(err.message, "/nonexistent/model.onnx") != NULL);
  /* Empty file. */
  pb_t m = {0};
  load("empty.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_PARSE && strstr(err.message, "empty.onnx"));
  /* Garbage bytes. */
  memset(m.d, 0xff, 64);
  m.n = 64;
  load("garbage.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_PARSE && strstr(err.message, "garbage.onnx") &&
        strstr(err.message, "protobuf parse failed"));
  /* A valid model cut in half. */
  pb_t g = {0};
  node(&g, "Relu", "relu_node", "x", "y", NULL, NULL);
  pb_t vi = {0};
  put_str(&vi, 1, "x");
  put_msg(&g, 11, &vi);
  output(&g, "y");
  model(&m, &g, 13);
  size_t full = m.n;
  m.n = full / 2;
  load("truncated.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_PARSE && strstr(err.message, "truncated.onnx"));
  /* No graph. */
  model(&m, NULL, 13);
  load("nograph.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_PARSE && strstr(err.message, "nograph.onnx") && strstr(err.message, "graph"));
  /* A node input that nothing defines. */
  g.n = 0;
  node(&g, "Relu", "lonely", "ghost_tensor", "y", NULL, NULL);
  output(&g, "y");
  model(&m, &g, 13);
  load("undef.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_PARSE && strstr(err.message, "undef.onnx") && strstr(err.message, "lonely") &&
        strstr(err.message, "ghost_tensor"));
  /* Another operator domain used by a node. */
  g.n = 0;
  put_msg(&g, 11, &vi);
  node(&g, "FusedGelu", "ms", "x", "y", "com.microsoft", NULL);
  output(&g, "y");
  model(&m, &g, 13);
  load("domain.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "com.microsoft") && strstr(err.message, "ms"));
  /* An opset we do not support. */
  g.n = 0;
  put_msg(&g, 11, &vi);
  node(&g, "Relu", "r", "x", "y", NULL, NULL);
  output(&g, "y");
  model(&m, &g, 5);
  load("opset5.onnx", &m, &rc, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "opset 5"));
  /* An unknown op imports, and shape inference names it. */
  g.n = 0;
  put_msg(&g, 11, &vi);
  node(&g, "Frobnicate", "frob_node", "x", "y", NULL, NULL);
  output(&g, "y");
  model(&m, &g, 11);
  gr = load("unknown_op.onnx", &m, &rc, &err);
  CHECK(rc == MI_OK && gr);
  CHECK(mi_graph_infer_shapes(gr, &err) == MI_ERR_UNSUPPORTED && strstr(err.message, "frob_node") &&
        strstr(err.message, "Frobnicate") && strstr(err.message, "opset 11"));
  mi_graph_destroy(gr);
  /* Every prefix of a valid model fails cleanly or loads; none crashes (ASan watches). */
  model(&m, &g, 11);
  for (size_t cut = 0; cut < m.n; cut++) {
    mi_graph_t *p = NULL;
    rc = mi_onnx_load_buffer(m.d, cut, NULL, &p, &err);
    CHECK((rc == MI_OK) == (p != NULL));
    mi_graph_destroy(p);
  }
}

static void setup(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/mi_onnx_imp_XXXXXX");
  REQUIRE(mkdtemp(g_dir));
}

static void teardown(void) {
  const char *files[] = {"typed.onnx", "weights.bin", "ext.onnx", "empty.onnx", "garbage.onnx",
                         "truncated.onnx", "nograph.onnx", "undef.onnx", "domain.onnx",
                         "opset5.onnx", "unknown_op.onnx"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, files[i]);
    if (!getenv("KEEP")) unlink(p);
  }
  if (!getenv("KEEP")) rmdir(g_dir);
}

static void typed_fields_and_constants(void) {
  test_typed_fields_and_constants();
}

static void external_data(void) {
  test_external_data();
}

static void bad_input(void) {
  test_bad_input();
}

static const tu_case_t tu_cases[] = {
    TU_CASE(typed_fields_and_constants),
    TU_CASE(external_data),
    TU_CASE(bad_input),
};

TU_MAIN(setup, teardown)
