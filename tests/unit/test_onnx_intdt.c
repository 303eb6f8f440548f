/* test_onnx_intdt.c - the ONNX integer types INT16, UINT16, UINT32 and UINT64, held exactly: an
 * INT16 graph input and initializers in raw data, int32_data and uint64_data loaded with their
 * dtypes; the reference's Cast between them, Add wrapping at 16 bits, BitShift and BitwiseXor on
 * UINT32 / UINT64, with values worked out by hand; .npy and ONNX (writer) round trips; --value
 * text of each type; a Cast to a type still unsupported (STRING, FLOAT8) refused in one line
 * naming the node. */
#include "test_ref_common.h"

#include "test_pb.h"

/* An initializer of ONNX element type `elem`: raw little-endian bytes, or (raw NULL) the typed
 * field `field` (5 int32_data, 11 uint64_data) of packed varints. */
static void init_n(pb_t *g, const char *name, int elem, int64_t n, const void *raw, size_t nraw, int field,
                   const uint64_t *vals) {
  pb_t t = {0}, packed = {0};
  put_int(&t, 1, n);
  put_int(&t, 2, elem);
  if (!raw) {
    for (int64_t i = 0; i < n; i++) varint(&packed, vals[i]);
    put_msg(&t, field, &packed);
  }
  put_str(&t, 8, name);
  if (raw) put_bytes(&t, 9, raw, nraw);
  put_msg(g, 5, &t);
}

static int32_t load(const pb_t *graph, int64_t opset, mi_graph_t **g, mi_error_t *err) {
  const pb_t *m = pb_model(graph, opset);
  *g = NULL;
  return mi_onnx_load_buffer(m->d, m->n, NULL, g, err);
}

static void node(pb_t *g, const char *op, const char *name, const char *ins, const char *out) {
  pb_t n = {0};
  pb_node(&n, op, name, ins, out);
  put_msg(g, 1, &n);
}

static int32_t dtype_of(const mi_graph_t *g, const char *name) {
  int32_t t = mi_graph_find_tensor(g, name);
  return t < 0 ? -1 : g->tensors[t].dtype;
}

/* pcm (INT16 input) -> Cast(FLOAT) -> Mul(1/32768) -> y_f; pcm -> Cast(UINT16) -> y_u16;
 * a + b (UINT16, raw and int32_data) -> y_add; c << s (UINT32 from uint64_data) -> y_shl;
 * d ^ e (UINT64, raw, one above INT64_MAX) -> y_xor; i16 (INT16 int32_data) -> Cast(INT64). */
static void test_load_run(void) {
  static pb_t g;
  mi_graph_t *m = NULL;
  mi_error_t err = {0};
  int64_t d4[1] = {4};
  const uint16_t a[4] = {65535, 1, 40000, 7};
  const uint64_t b[4] = {2, 65535, 40000, 0}, c[2] = {0x90000001u, 0xffffffffu}, s[2] = {4, 31};
  const uint64_t dd[2] = {0x8000000000000001ull, 5}, ee[2] = {0xffffffffffffffffull, 3};
  const uint64_t i16[3] = {(uint64_t)(int64_t)-32768, 32767, (uint64_t)(int64_t)-2};
  const float k = 1.0f / 32768;
  g.n = 0;
  pb_value(&g, 11, "pcm", 5, 1, d4, "N");
  init_n(&g, "a", 4, 4, a, sizeof a, 0, NULL);
  init_n(&g, "b", 4, 4, NULL, 0, 5, b);
  init_n(&g, "c", 12, 2, NULL, 0, 11, c);
  init_n(&g, "s", 12, 2, NULL, 0, 11, s);
  init_n(&g, "d", 13, 2, dd, sizeof dd, 0, NULL);
  init_n(&g, "e", 13, 2, NULL, 0, 11, ee);
  init_n(&g, "i16", 5, 3, NULL, 0, 5, i16);
  pb_init_f32(&g, "k", 0, NULL, &k);
  {
    pb_t n = {0};
    pb_node(&n, "Cast", "to_f", "pcm", "f");
    pb_attr_int(&n, "to", 1);
    put_msg(&g, 1, &n);
    n.n = 0;
    pb_node(&n, "Cast", "to_u16", "pcm", "y_u16");
    pb_attr_int(&n, "to", 4);
    put_msg(&g, 1, &n);
    n.n = 0;
    pb_node(&n, "BitShift", "shl", "c,s", "y_shl");
    pb_attr_str(&n, "direction", "LEFT");
    put_msg(&g, 1, &n);
    n.n = 0;
    pb_node(&n, "Cast", "to_i64", "i16", "y_i64");
    pb_attr_int(&n, "to", 7);
    put_msg(&g, 1, &n);
  }
  node(&g, "Mul", "scale", "f,k", "y_f");
  node(&g, "Add", "add", "a,b", "y_add");
  node(&g, "BitwiseXor", "xor", "d,e", "y_xor");
  pb_value(&g, 12, "y_f", 1, 1, d4, "N");
  pb_value(&g, 12, "y_u16", 4, 1, d4, "N");
  pb_value(&g, 12, "y_add", 4, 1, d4, "N");
  pb_value(&g, 12, "y_shl", 12, -1, NULL, "N");
  pb_value(&g, 12, "y_xor", 13, -1, NULL, "N");
  pb_value(&g, 12, "y_i64", 7, -1, NULL, "N");
  CHECK(load(&g, 18, &m, &err) == MI_OK, "load: %s", err.message);
  if (!m) return;
  CHECK(dtype_of(m, "pcm") == MI_DTYPE_INT16 && dtype_of(m, "a") == MI_DTYPE_UINT16 && dtype_of(m, "b") == MI_DTYPE_UINT16 &&
            dtype_of(m, "c") == MI_DTYPE_UINT32 && dtype_of(m, "d") == MI_DTYPE_UINT64 && dtype_of(m, "i16") == MI_DTYPE_INT16,
        "dtypes pcm %d a %d b %d c %d d %d i16 %d", dtype_of(m, "pcm"), dtype_of(m, "a"), dtype_of(m, "b"),
        dtype_of(m, "c"), dtype_of(m, "d"), dtype_of(m, "i16"));
  CHECK(mi_graph_infer_shapes(m, &err) == MI_OK, "shapes: %s", err.message);
  CHECK(dtype_of(m, "y_u16") == MI_DTYPE_UINT16 && dtype_of(m, "y_shl") == MI_DTYPE_UINT32 &&
            dtype_of(m, "y_xor") == MI_DTYPE_UINT64,
        "inferred dtypes %d %d %d", dtype_of(m, "y_u16"), dtype_of(m, "y_shl"), dtype_of(m, "y_xor"));
  mi_array_t *in = mi_array_create(MI_DTYPE_INT16, 1, d4), *out[6] = {0};
  REQUIRE(in);
  memcpy(in->data, (const int16_t[]){-32768, -1, 16384, 32767}, 8);
  CHECK(mi_ref_run(m, (const mi_array_t *const *)&in, 1, out, 6, &err) == MI_OK, "run: %s", err.message);
  if (out[5]) {
    const float wf[4] = {-1.0f, -1.0f / 32768, 0.5f, 32767.0f / 32768};
    const uint16_t wu[4] = {32768, 65535, 16384, 32767}, wa[4] = {1, 0, 14464, 7};
    const uint32_t ws[2] = {0x10u, 0x80000000u};
    const uint64_t wx[2] = {0x7ffffffffffffffeull, 6};
    const int64_t wi[3] = {-32768, 32767, -2};
    CHECK(out[0]->dtype == MI_DTYPE_FLOAT32 && !memcmp(out[0]->data, wf, sizeof wf), "pcm scaled");
    CHECK(out[1]->dtype == MI_DTYPE_UINT16 && !memcmp(out[1]->data, wu, sizeof wu), "INT16 -> UINT16 keeps the bits");
    CHECK(out[2]->dtype == MI_DTYPE_UINT16 && !memcmp(out[2]->data, wa, sizeof wa), "UINT16 Add wraps: %u %u %u %u",
          ((uint16_t *)out[2]->data)[0], ((uint16_t *)out[2]->data)[1], ((uint16_t *)out[2]->data)[2],
          ((uint16_t *)out[2]->data)[3]);
    CHECK(out[3]->dtype == MI_DTYPE_UINT32 && !memcmp(out[3]->data, ws, sizeof ws), "UINT32 shift drops the high bits");
    CHECK(out[4]->dtype == MI_DTYPE_UINT64 && !memcmp(out[4]->data, wx, sizeof wx), "UINT64 xor, all 64 bits");
    CHECK(out[5]->dtype == MI_DTYPE_INT64 && !memcmp(out[5]->data, wi, sizeof wi), "INT16 -> INT64 sign-extends");
  }
  for (int i = 0; i < 6; i++) mi_array_destroy(out[i]);
  mi_array_destroy(in);
  mi_graph_destroy(m);
}

/* Saving and loading gives back dtype, shape and bytes; the header says numpy's descr. */
static void test_npy(void) {
  static const int32_t dts[4] = {MI_DTYPE_INT16, MI_DTYPE_UINT16, MI_DTYPE_UINT32, MI_DTYPE_UINT64};
  static const char *descr[4] = {"'<i2'", "'<u2'", "'<u4'", "'<u8'"};
  char dir[] = "/tmp/mi_test_intdt_XXXXXX", path[64], head[128];
  int64_t dims[2] = {3, 5};
  mi_error_t err = {0};
  REQUIRE(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a.npy", dir);
  for (int k = 0; k < 4; k++) {
    mi_array_t *a = mi_array_create(dts[k], 2, dims), *b = NULL;
    REQUIRE(a);
    CHECK(a->nbytes == (size_t)15 * mi_dtype_size(dts[k]) && mi_dtype_size(dts[k]) == mi_sdk_dtype_size(dts[k]),
          "%s: %zu bytes", mi_dtype_name(dts[k]), a->nbytes);
    mi_array_fill_random(a, 7 + (uint64_t)k);
    CHECK(mi_npy_save(path, a, &err) == MI_OK, "save %s: %s", mi_dtype_name(dts[k]), err.message);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, sizeof head - 1, f) : 0;
    head[got] = '\0';
    if (f) fclose(f);
    CHECK(got > 10 && strstr(head + 10, descr[k]), "%s written as %s", mi_dtype_name(dts[k]), descr[k]);
    CHECK(mi_npy_load(path, &b, &err) == MI_OK, "load %s: %s", mi_dtype_name(dts[k]), err.message);
    CHECK(b && b->dtype == dts[k] && same_shape(b, 2, dims) && b->nbytes == a->nbytes && !memcmp(a->data, b->data, a->nbytes),
          "%s round trip", mi_dtype_name(dts[k]));
    mi_array_destroy(a);
    mi_array_destroy(b);
  }
  unlink(path);
  rmdir(dir);
}

/* The writer stores each type as its ONNX type, and the loader reads it back as it was. */
static void test_write(void) {
  static const int32_t dts[4] = {MI_DTYPE_INT16, MI_DTYPE_UINT16, MI_DTYPE_UINT32, MI_DTYPE_UINT64};
  mi_graph_t *g = mi_graph_create("w"), *back = NULL;
  mi_error_t err = {0};
  int64_t d3[1] = {3};
  char path[] = "/tmp/mi_test_intdt_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0 && g);
  close(fd);
  g->opset = 18;
  const uint64_t raw[3] = {0xfedcba9876543210ull, 0x8000000000000000ull, 0x0123456789abcdefull};
  for (int k = 0; k < 4; k++) {
    char nm[8], on[8];
    snprintf(nm, sizeof nm, "c%d", k);
    snprintf(on, sizeof on, "y%d", k);
    int32_t c = mi_graph_add_tensor(g, nm, dts[k], 1, d3), y = mi_graph_add_tensor(g, on, dts[k], 1, d3);
    mi_graph_set_data(g, c, raw, 3 * mi_dtype_size(dts[k]));
    mi_graph_add_node(g, "Identity", on, 1, &c, 1, &y);
    mi_graph_add_output(g, y);
  }
  CHECK(mi_onnx_save(g, path, &err) == MI_OK, "save: %s", err.message);
  CHECK(mi_onnx_load(path, &back, &err) == MI_OK, "load back: %s", err.message);
  for (int k = 0; back && k < 4; k++) {
    char nm[8];
    snprintf(nm, sizeof nm, "c%d", k);
    int32_t t = mi_graph_find_tensor(back, nm);
    CHECK(t >= 0 && back->tensors[t].dtype == dts[k] && back->tensors[t].nbytes == 3 * mi_dtype_size(dts[k]) &&
              !memcmp(back->tensors[t].data, raw, back->tensors[t].nbytes),
          "%s: its dtype and bytes back", nm);
    snprintf(nm, sizeof nm, "y%d", k);
    CHECK(dtype_of(back, nm) == dts[k], "output %s declared %s", nm, mi_dtype_name(dts[k]));
  }
  unlink(path);
  mi_graph_destroy(back);
  mi_graph_destroy(g);
}

/* The first element's value as a uint64_t (INT16 sign-extended). */
static uint64_t first_value(const void *p, int32_t dtype) {
  switch (dtype) {
  case MI_DTYPE_INT16: return (uint64_t)(int64_t) * (const int16_t *)p;
  case MI_DTYPE_UINT16: return *(const uint16_t *)p;
  case MI_DTYPE_UINT32: return *(const uint32_t *)p;
  default: return *(const uint64_t *)p;
  }
}

/* --value text: a UINT64 above INT64_MAX, INT16 in range; out-of-range and negative refused. */
static void test_values(void) {
  struct {
    int32_t dtype;
    const char *text;
    int ok;
    uint64_t want;
  } cases[] = {{MI_DTYPE_UINT64, "x=18446744073709551615", 1, UINT64_MAX},
               {MI_DTYPE_UINT64, "x=-1", 0, 0},
               {MI_DTYPE_INT16, "x=-32768", 1, (uint64_t)(int64_t)-32768},
               {MI_DTYPE_INT16, "x=32768", 0, 0},
               {MI_DTYPE_UINT16, "x=65535", 1, 65535},
               {MI_DTYPE_UINT32, "x=-3", 0, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mi_graph_t *g = mi_graph_create("v");
    mi_error_t err = {0};
    int64_t d1[1] = {1};
    REQUIRE(g);
    int32_t x = tin(g, "x", cases[i].dtype, 1, d1);
    const char *v[1] = {cases[i].text};
    int32_t rc = mi_graph_input_values(g, v, 1, &err);
    CHECK((rc == MI_OK) == cases[i].ok, "%s as %s: %s", cases[i].text, mi_dtype_name(cases[i].dtype), err.message);
    if (rc == MI_OK && g->tensors[x].data)
      CHECK(first_value(g->tensors[x].data, cases[i].dtype) == cases[i].want, "%s: the value", cases[i].text);
    if (rc != MI_OK) CHECK(strstr(err.message, "'x'") && !strchr(err.message, '\n'), "one line naming x: %s", err.message);
    mi_graph_destroy(g);
  }
}

/* A Cast to STRING (8) or FLOAT8E4M3FN (17): refused at load or shape inference, one line naming
 * the node and the type. */
static void test_refused(void) {
  static const int targets[2] = {8, 17};
  static const char *names[2] = {"STRING", "FLOAT8E4M3FN"};
  for (int k = 0; k < 2; k++) {
    static pb_t g;
    pb_t n = {0};
    mi_graph_t *m = NULL;
    mi_error_t err = {0};
    int64_t d4[1] = {4};
    char want[16];
    g.n = 0;
    pb_value(&g, 11, "x", 5, 1, d4, "N");
    pb_node(&n, "Cast", "bad_cast", "x", "y");
    pb_attr_int(&n, "to", targets[k]);
    put_msg(&g, 1, &n);
    pb_value(&g, 12, "y", 1, -1, NULL, "N");
    int32_t rc = load(&g, 19, &m, &err);
    if (rc == MI_OK) rc = mi_graph_infer_shapes(m, &err);
    snprintf(want, sizeof want, "%d", targets[k]);
    CHECK(rc == MI_ERR_UNSUPPORTED, "Cast to %d refused (%d): %s", targets[k], (int)rc, err.message);
    CHECK(strstr(err.message, "bad_cast") && strstr(err.message, "Cast") && strstr(err.message, want) &&
              strstr(err.message, names[k]) && !strchr(err.message, '\n'),
          "one line naming the node, op and type: %s", err.message);
    mi_graph_destroy(m);
  }
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(test_load_run), TU_CASE(test_npy), TU_CASE(test_write),
                                     TU_CASE(test_values), TU_CASE(test_refused)};

TU_MAIN(setup, teardown)
