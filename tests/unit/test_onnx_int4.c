/* test_onnx_int4.c - ONNX INT4 / UINT4 tensors (opset 21): raw packed nibbles and int32_data
 * pairs, low nibble first, odd counts, INT4 sign-extended, unpacked to INT8 / UINT8; malformed
 * ones refused naming the tensor; a blocked DequantizeLinear (block_size, a block cut short at the
 * edge, INT4 zero points) giving values worked out by hand with inferred shapes equal to the run's;
 * QuantizeLinear to 4 bits refused; packed MI_DTYPE_INT4 written as ONNX INT4 and read back. */
#include "test_ref_common.h"

#include "test_pb.h"

/* A 4-bit initializer (data_type 22 INT4, 21 UINT4): raw bytes, or int32_data entries. */
static void init4(pb_t *g, const char *name, int dtype, int rank, const int64_t *dims, const uint8_t *raw, int nraw,
                  const int32_t *i32, int ni32) {
  pb_t t = {0}, packed = {0};
  for (int i = 0; i < rank; i++) put_int(&t, 1, dims[i]);
  put_int(&t, 2, dtype);
  if (i32) {
    for (int i = 0; i < ni32; i++) varint(&packed, (uint64_t)(int64_t)i32[i]);
    put_msg(&t, 5, &packed);
  }
  put_str(&t, 8, name);
  if (raw) put_bytes(&t, 9, raw, (size_t)nraw);
  put_msg(g, 5, &t);
}

static int32_t load(const pb_t *graph, int64_t opset, mi_graph_t **g, mi_error_t *err) {
  const pb_t *m = pb_model(graph, opset);
  *g = NULL;
  return mi_onnx_load_buffer(m->d, m->n, NULL, g, err);
}

static void expect_codes(const mi_graph_t *g, const char *name, int32_t dtype, int n, const int *want) {
  int32_t t = mi_graph_find_tensor(g, name);
  CHECK(t >= 0 && g->tensors[t].data, "'%s' is a constant", name);
  if (t < 0 || !g->tensors[t].data) return;
  CHECK(g->tensors[t].dtype == dtype && g->tensors[t].nbytes == (size_t)n, "'%s': dtype %d, %zu bytes", name,
        (int)g->tensors[t].dtype, g->tensors[t].nbytes);
  for (int i = 0; i < n && g->tensors[t].nbytes == (size_t)n; i++) {
    int v = dtype == MI_DTYPE_INT8 ? ((const int8_t *)g->tensors[t].data)[i] : ((const uint8_t *)g->tensors[t].data)[i];
    CHECK(v == want[i], "'%s'[%d] = %d, want %d", name, i, v, want[i]);
  }
}

/* Raw INT4, 5 values (odd: the last byte's high nibble is padding), sign-extended; UINT4 in
 * int32_data pairs. */
static void test_decode(void) {
  static pb_t g, n;
  mi_graph_t *m;
  mi_error_t err = {0};
  int64_t d5[1] = {5}, d3[1] = {3};
  g.n = 0;
  init4(&g, "q", 22, 1, d5, (const uint8_t[]){0x21, 0xf8, 0x07}, 3, NULL, 0);
  init4(&g, "u", 21, 1, d3, NULL, 0, (const int32_t[]){0xa5, 0x0c}, 2);
  pb_node(&n, "Identity", NULL, "q", "y");
  put_msg(&g, 1, &n);
  pb_value_f32(&g, 12, "y", -1, NULL, "N");
  CHECK(load(&g, 21, &m, &err) == MI_OK, "load: %s", err.message);
  if (!m) return;
  expect_codes(m, "q", MI_DTYPE_INT8, 5, (const int[]){1, 2, -8, -1, 7});
  expect_codes(m, "u", MI_DTYPE_UINT8, 3, (const int[]){5, 10, 12});
  mi_graph_destroy(m);
}

static void refused(const pb_t *g, const char *want) {
  mi_graph_t *m = NULL;
  mi_error_t err = {0};
  int32_t rc = load(g, 21, &m, &err);
  CHECK(rc != MI_OK && m == NULL, "refused (%s)", want);
  CHECK(strstr(err.message, want) != NULL && !strchr(err.message, '\n'), "one line naming '%s': %s", want,
        err.message);
  mi_graph_destroy(m);
}

static void test_malformed(void) {
  static pb_t g, n;
  int64_t d5[1] = {5};
  g.n = 0; /* 5 INT4 values need 3 bytes */
  init4(&g, "short_raw", 22, 1, d5, (const uint8_t[]){0x21, 0xf8}, 2, NULL, 0);
  pb_node(&n, "Identity", NULL, "short_raw", "y");
  put_msg(&g, 1, &n);
  refused(&g, "short_raw");
  g.n = 0; /* an int32_data entry is one byte: two values */
  init4(&g, "wide", 21, 1, d5, NULL, 0, (const int32_t[]){1, 300, 2}, 3);
  n.n = 0;
  pb_node(&n, "Identity", NULL, "wide", "y");
  put_msg(&g, 1, &n);
  refused(&g, "wide");
  g.n = 0; /* 4-bit outputs would saturate at 8 bits in the IR's 8-bit dtypes */
  pb_value_f32(&g, 11, "x", 1, (const int64_t[]){2}, "N");
  pb_init_f32(&g, "s", 0, NULL, (const float[]){0.5f});
  init4(&g, "z", 22, 0, NULL, (const uint8_t[]){0x00}, 1, NULL, 0);
  n.n = 0;
  pb_node(&n, "QuantizeLinear", "q4", "x,s,z", "y");
  put_msg(&g, 1, &n);
  refused(&g, "q4");
}

/* DequantizeLinear(INT4 [2, 3], scale [2, 2], zero point INT4 [2, 2], axis 1, block_size 2):
 * columns 0-1 share block 0, column 2 is block 1 alone (the edge). */
static void test_blocked_dq(void) {
  static pb_t g, n;
  int64_t xd[2] = {2, 3}, sd[2] = {2, 2};
  for (int zp = 0; zp < 2; zp++) {
    mi_graph_t *m = NULL;
    mi_error_t err = {0};
    mi_array_t *y = NULL;
    g.n = 0;
    n.n = 0;
    /* codes row-major [[1, 2, -8], [-1, 7, 0]]: nibbles 1,2 | -8,-1 | 7,0 */
    init4(&g, "x", 22, 2, xd, (const uint8_t[]){0x21, 0xf8, 0x07}, 3, NULL, 0);
    pb_init_f32(&g, "s", 2, sd, (const float[]){1.f, 0.5f, 2.f, 0.25f});
    init4(&g, "z", 22, 2, sd, (const uint8_t[]){0x01, 0xf0}, 2, NULL, 0); /* [[1, 0], [0, -1]] */
    pb_node(&n, "DequantizeLinear", "dq", zp ? "x,s,z" : "x,s", "y");
    pb_attr_int(&n, "axis", 1);
    pb_attr_int(&n, "block_size", 2);
    put_msg(&g, 1, &n);
    pb_value_f32(&g, 12, "y", -1, NULL, "N");
    CHECK(load(&g, 21, &m, &err) == MI_OK, "load: %s", err.message);
    if (!m) continue;
    CHECK(mi_graph_infer_shapes(m, &err) == MI_OK, "inference: %s", err.message);
    CHECK(run1(m, 0, NULL, &y, &err) == MI_OK, "run: %s", err.message);
    const mi_tensor_t *t = &m->tensors[m->outputs[0]];
    CHECK(y && same_shape(y, t->rank, t->dims) && t->dtype == MI_DTYPE_FLOAT32, "inferred shape is the run's");
    if (zp)
      expect_f32("blocked, zero points", y, 2, xd, (const float[]){0.f, 1.f, -4.f, -2.f, 14.f, 0.25f}, 0);
    else
      expect_f32("blocked", y, 2, xd, (const float[]){1.f, 2.f, -4.f, -2.f, 14.f, 0.f}, 0);
    mi_array_destroy(y);
    /* a scale whose blocked dim is wrong: ceil(3 / 2) = 2 blocks, not 1 */
    mi_graph_destroy(m);
  }
  {
    mi_graph_t *m = NULL;
    mi_error_t err = {0};
    int64_t bad[2] = {2, 1};
    g.n = 0;
    n.n = 0;
    init4(&g, "x", 22, 2, xd, (const uint8_t[]){0x21, 0xf8, 0x07}, 3, NULL, 0);
    pb_init_f32(&g, "s", 2, bad, (const float[]){1.f, 2.f});
    pb_node(&n, "DequantizeLinear", "dq_bad", "x,s", "y");
    pb_attr_int(&n, "axis", 1);
    pb_attr_int(&n, "block_size", 2);
    put_msg(&g, 1, &n);
    pb_value_f32(&g, 12, "y", -1, NULL, "N");
    CHECK(load(&g, 21, &m, &err) == MI_OK, "load: %s", err.message);
    if (m) {
      CHECK(mi_graph_infer_shapes(m, &err) != MI_OK && strstr(err.message, "dq_bad") && strstr(err.message, "block_size"),
            "a wrong blocked scale is refused: %s", err.message);
      mi_graph_destroy(m);
    }
  }
}

/* Packed MI_DTYPE_INT4 constants are written as ONNX INT4 (IR 10) and read back unpacked. */
static void test_write(void) {
  mi_graph_t *g = mi_graph_create("w4"), *back = NULL;
  mi_error_t err = {0};
  int64_t d5[1] = {5};
  const uint8_t packed[3] = {0x21, 0xf8, 0x07};
  int32_t q = mi_graph_add_tensor(g, "q", MI_DTYPE_INT4, 1, d5), y = mi_graph_add_tensor(g, "y", MI_DTYPE_INT4, 1, d5);
  char path[] = "/tmp/mi_test_int4_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "temp file");
  close(fd);
  g->opset = 21;
  mi_graph_set_data(g, q, packed, sizeof packed);
  mi_graph_add_node(g, "Identity", "id", 1, &q, 1, &y);
  mi_graph_add_output(g, y);
  CHECK(mi_onnx_save(g, path, &err) == MI_OK, "save: %s", err.message);
  CHECK(mi_onnx_load(path, &back, &err) == MI_OK, "load back: %s", err.message);
  if (back) expect_codes(back, "q", MI_DTYPE_INT8, 5, (const int[]){1, 2, -8, -1, 7});
  /* below opset 21 a blocked DequantizeLinear cannot be written */
  mi_graph_destroy(back);
  back = NULL;
  {
    mi_graph_t *h = mi_graph_create("b");
    int64_t d2[2] = {2, 2}, d12[2] = {1, 2};
    int32_t c = mi_graph_add_tensor(h, "c", MI_DTYPE_INT8, 2, d2), o = mi_graph_add_tensor(h, "o", MI_DTYPE_FLOAT32, -1, NULL);
    int32_t s = mi_graph_add_const_f32(h, "s", 2, d12, (const float[]){1.f, 1.f}), ins[2] = {c, s};
    mi_graph_set_data(h, c, (const int8_t[]){1, 2, 3, 4}, 4);
    int32_t nd = mi_graph_add_node(h, "DequantizeLinear", "dqb", 2, ins, 1, &o);
    mi_node_set_int(h, nd, "axis", 0);
    mi_node_set_int(h, nd, "block_size", 2);
    mi_graph_add_output(h, o);
    h->opset = 17;
    CHECK(mi_onnx_save(h, path, &err) != MI_OK && strstr(err.message, "dqb") && strstr(err.message, "opset 21"),
          "refused: %s", err.message);
    mi_graph_destroy(h);
  }
  unlink(path);
  mi_graph_destroy(g);
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(test_decode), TU_CASE(test_malformed), TU_CASE(test_blocked_dq),
                                     TU_CASE(test_write)};

TU_MAIN(setup, teardown)
