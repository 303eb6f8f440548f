/* test_onnx_roundtrip.c - mi_onnx_save then mi_onnx_load keeps names, shapes, dim names,
 * attributes, opset and initializer bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metainfer/mi.h"

#include "test_util.h"

static mi_graph_t *build(void) {
  mi_graph_t *g = mi_graph_create("roundtrip");
  g->opset = 11;
  int64_t xd[4] = {MI_DIM_DYNAMIC, 3, 16, 16};
  int32_t x = mi_graph_add_tensor(g, "input", MI_DTYPE_FLOAT32, 4, xd);
  g->tensors[x].dim_names[0] = strdup("batch");
  mi_graph_add_input(g, x);
  float w[8 * 3 * 3 * 3];
  for (int i = 0; i < 8 * 27; i++) w[i] = (float)i * 0.25f - 3.0f;
  int32_t wt = mi_graph_add_const_f32(g, "conv.weight", 4, (int64_t[]){8, 3, 3, 3}, w);
  int32_t sh = mi_graph_add_const_i64(g, "shape", 2, (int64_t[]){0, -1});
  int8_t q[5] = {-128, -1, 0, 1, 127};
  int32_t qt = mi_graph_add_tensor(g, "q8", MI_DTYPE_INT8, 1, (int64_t[]){5});
  mi_graph_set_data(g, qt, q, sizeof q);
  uint16_t h[2] = {0x3c00, 0xc000};
  int32_t ht = mi_graph_add_tensor(g, "h16", MI_DTYPE_FLOAT16, 1, (int64_t[]){2});
  mi_graph_set_data(g, ht, h, sizeof h);
  int32_t c = mi_graph_add_tensor(g, "conv_out", MI_DTYPE_FLOAT32, 4,
                                  (int64_t[]){MI_DIM_DYNAMIC, 8, 8, 8});
  int32_t r = mi_graph_add_tensor(g, "out", MI_DTYPE_FLOAT32, 2, (int64_t[]){MI_DIM_DYNAMIC, 512});
  int32_t n = mi_graph_add_node(g, "Conv", "conv0", 3, (int32_t[]){x, wt, -1}, 1, &c);
  mi_node_set_ints(g, n, "strides", 2, (int64_t[]){2, 2});
  mi_node_set_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  mi_node_set_int(g, n, "group", 1);
  mi_node_set_float(g, n, "fake_alpha", 0.125f);
  mi_node_set_floats(g, n, "fake_scales", 2, (float[]){1.5f, -2.0f});
  mi_node_set_string(g, n, "auto_pad", "NOTSET");
  mi_graph_add_node(g, "Reshape", "reshape0", 2, (int32_t[]){c, sh}, 1, &r);
  mi_graph_add_output(g, r);
  /* q8 and h16 are unused initializers; they must still travel (h16 comes back as float32). */
  return g;
}

static char dir[] = "/tmp/mi_onnx_rt_XXXXXX", path[256], path2[256];
static mi_graph_t *g;

static void setup(void) {
  REQUIRE(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  snprintf(path2, sizeof path2, "%s/m2.onnx", dir);
  g = build();
}

static void teardown(void) {
  mi_graph_destroy(g);
  unlink(path);
  unlink(path2);
  rmdir(dir);
}

static void save_and_load(void) {
  mi_error_t err = {0};
  CHECK(mi_onnx_save(g, path, &err) == MI_OK);
  mi_graph_t *l = NULL;
  CHECK(mi_onnx_load(path, &l, &err) == MI_OK);
  REQUIRE(l, "load failed: %s", err.message);
  CHECK(strcmp(l->name, "roundtrip") == 0 && l->opset == 11);
  CHECK(l->node_count == 2 && l->input_count == 1 && l->output_count == 1);
  const mi_tensor_t *in = &l->tensors[l->inputs[0]];
  CHECK(strcmp(in->name, "input") == 0 && in->rank == 4 && in->dims[0] == MI_DIM_DYNAMIC &&
        in->dim_names[0] && strcmp(in->dim_names[0], "batch") == 0 && in->dims[3] == 16);
  const mi_tensor_t *out = &l->tensors[l->outputs[0]];
  CHECK(strcmp(out->name, "out") == 0 && out->rank == 2 && out->dims[1] == 512 &&
        out->dims[0] == MI_DIM_DYNAMIC && out->dim_names[0] && strcmp(out->dim_names[0], "N") == 0);
  for (int32_t t = 0; t < g->tensor_count; t++) {
    const mi_tensor_t *a = &g->tensors[t];
    if (!a->data) continue;
    int32_t k = mi_graph_find_tensor(l, a->name);
    CHECK(k >= 0);
    if (k < 0) continue;
    const mi_tensor_t *b = &l->tensors[k];
    if (a->dtype == MI_DTYPE_FLOAT16) { /* written as FLOAT16, loaded as float32 (onnx_dtype.h) */
      CHECK(b->dtype == MI_DTYPE_FLOAT32 && b->rank == a->rank && b->nbytes == 2 * a->nbytes);
      CHECK(b->data && memcmp(b->data, (float[]){1.0f, -2.0f}, 8) == 0);
    } else {
      CHECK(b->dtype == a->dtype && b->rank == a->rank && b->nbytes == a->nbytes);
      CHECK(b->data && memcmp(a->data, b->data, a->nbytes) == 0);
    }
    for (int32_t i = 0; i < a->rank; i++) CHECK(a->dims[i] == b->dims[i]);
  }
  /* Intermediate shapes travel as value_info. */
  int32_t co = mi_graph_find_tensor(l, "conv_out");
  CHECK(co >= 0 && l->tensors[co].rank == 4 && l->tensors[co].dims[1] == 8);
  const mi_node_t *n = &l->nodes[0];
  CHECK(strcmp(n->name, "conv0") == 0 && strcmp(n->op_type, "Conv") == 0);
  CHECK(n->input_count == 3 && n->inputs[2] == -1 && l->tensors[n->inputs[1]].data);
  const mi_attr_t *a = mi_node_attr(n, "pads");
  CHECK(a && a->type == MI_ATTR_INTS && a->count == 4 && a->ints[0] == 1);
  a = mi_node_attr(n, "strides");
  CHECK(a && a->count == 2 && a->ints[1] == 2);
  CHECK(mi_node_attr_int(n, "group", 0) == 1);
  CHECK(mi_node_attr_float(n, "fake_alpha", 0) == 0.125f);
  a = mi_node_attr(n, "fake_scales");
  CHECK(a && a->type == MI_ATTR_FLOATS && a->count == 2 && a->floats[1] == -2.0f);
  CHECK(strcmp(mi_node_attr_string(n, "auto_pad", ""), "NOTSET") == 0);
  CHECK(strcmp(l->nodes[1].op_type, "Reshape") == 0 &&
        l->tensors[l->nodes[1].inputs[0]].producer == 0);
  mi_graph_destroy(l);
}

static void deterministic_bytes(void) {
  mi_error_t err = {0};
  /* Saving twice gives identical bytes: the writer is deterministic. */
  CHECK(mi_onnx_save(g, path, &err) == MI_OK);
  CHECK(mi_onnx_save(g, path2, &err) == MI_OK);
  FILE *f1 = fopen(path, "rb"), *f2 = fopen(path2, "rb");
  int same = f1 && f2;
  while (same) {
    int c1 = fgetc(f1), c2 = fgetc(f2);
    if (c1 != c2) same = 0;
    if (c1 == EOF) break;
  }
  CHECK(same);
  if (f1) fclose(f1);
  if (f2) fclose(f2);
}

static void unwritable_path(void) {
  mi_error_t err = {0};
  /* Unwritable path: an I/O error naming the path. */
  CHECK(mi_onnx_save(g, "/nonexistent-dir/x.onnx", &err) == MI_ERR_IO);
  CHECK(strstr(err.message, "/nonexistent-dir/x.onnx") != NULL);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(save_and_load),
    TU_CASE(deterministic_bytes),
    TU_CASE(unwritable_path),
};

TU_MAIN(setup, teardown)
