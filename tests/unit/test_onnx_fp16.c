/* test_onnx_fp16.c - a model exported in half precision loads in float32: FLOAT16 inputs, outputs
 * and value types become float32, FLOAT16 initializers (raw_data and int32_data) and a
 * ConstantOfShape value are widened exactly, a Cast to FLOAT16 becomes a Cast to float32, and the
 * model runs on the reference with the values worked out by hand; mi_array_widen_half widens a
 * float16 array (normal, subnormal, infinite values) and leaves others alone. */
#include "test_ref_common.h"

#include "test_pb.h"

enum { ONNX_FLOAT16 = 10 };

/* A 1-D FLOAT16 initializer: as raw_data, or as int32_data (one value an entry). */
static void init_f16(pb_t *g, const char *name, int n, const uint16_t *bits, int raw) {
  pb_t t = {0}, packed = {0};
  put_int(&t, 1, n);
  put_int(&t, 2, ONNX_FLOAT16);
  put_str(&t, 8, name);
  if (raw) {
    put_bytes(&t, 9, bits, (size_t)n * sizeof *bits);
  } else {
    for (int i = 0; i < n; i++) varint(&packed, bits[i]);
    put_msg(&t, 5, &packed);
  }
  put_msg(g, 5, &t);
}

/* ConstantOfShape's `value`: a one-element FLOAT16 TENSOR attribute (type 4). */
static void attr_f16_tensor(pb_t *node, const char *name, uint16_t bits) {
  pb_t a = {0}, t = {0};
  put_int(&t, 1, 1);
  put_int(&t, 2, ONNX_FLOAT16);
  put_bytes(&t, 9, &bits, sizeof bits);
  put_str(&a, 1, name);
  put_msg(&a, 5, &t);
  put_int(&a, 20, 4);
  put_msg(node, 5, &a);
}

static int32_t node_of(const mi_graph_t *g, const char *op) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (strcmp(g->nodes[i].op_type, op) == 0) return i;
  return -1;
}

/* y = Cast(x * w + b, to=FLOAT16) + ConstantOfShape([1, 3], 2.5), everything FLOAT16. */
static void test_half_model(void) {
  static pb_t g, n;
  int64_t d[2] = {1, 3};
  /* 1.5, -2, 0.25 and 0.5, 1, 65504 (FLOAT16's largest) as half bits; 2.5 */
  const uint16_t w[3] = {0x3E00, 0xC000, 0x3400}, b[3] = {0x3800, 0x3C00, 0x7BFF};
  mi_error_t err = {0};
  mi_graph_t *gr = NULL;
  g.n = 0;
  pb_value(&g, 11, "x", ONNX_FLOAT16, 2, d, "N");
  init_f16(&g, "w", 3, w, 1);
  init_f16(&g, "b", 3, b, 0);
  pb_init_i64(&g, "s", 2, d);
  pb_node(&n, "Mul", NULL, "x,w", "m");
  put_msg(&g, 1, &n);
  pb_node(&n, "Add", NULL, "m,b", "a");
  put_msg(&g, 1, &n);
  pb_node(&n, "Cast", NULL, "a", "c");
  pb_attr_int(&n, "to", ONNX_FLOAT16);
  put_msg(&g, 1, &n);
  pb_node(&n, "ConstantOfShape", NULL, "s", "k");
  attr_f16_tensor(&n, "value", 0x4100);
  put_msg(&g, 1, &n);
  pb_node(&n, "Add", NULL, "c,k", "y");
  put_msg(&g, 1, &n);
  pb_value(&g, 12, "y", ONNX_FLOAT16, 2, d, "N");
  const pb_t *m = pb_model(&g, 13);
  CHECK(mi_onnx_load_buffer(m->d, m->n, NULL, &gr, &err) == MI_OK, "load: %s", err.message);
  if (!gr) return;
  const mi_tensor_t *x = &gr->tensors[gr->inputs[0]], *y = &gr->tensors[gr->outputs[0]];
  int32_t wi = mi_graph_find_tensor(gr, "w"), bi = mi_graph_find_tensor(gr, "b");
  int32_t cast = node_of(gr, "Cast"), cos = node_of(gr, "ConstantOfShape");
  CHECK(x->dtype == MI_DTYPE_FLOAT32 && y->dtype == MI_DTYPE_FLOAT32, "FLOAT16 input and output load as float32 (%s, %s)",
        mi_dtype_name(x->dtype), mi_dtype_name(y->dtype));
  CHECK(wi >= 0 && gr->tensors[wi].dtype == MI_DTYPE_FLOAT32 && gr->tensors[wi].nbytes == 12 &&
            memcmp(gr->tensors[wi].data, (float[]){1.5f, -2.0f, 0.25f}, 12) == 0,
        "raw FLOAT16 initializer widened exactly");
  CHECK(bi >= 0 && gr->tensors[bi].dtype == MI_DTYPE_FLOAT32 && gr->tensors[bi].nbytes == 12 &&
            memcmp(gr->tensors[bi].data, (float[]){0.5f, 1.0f, 65504.0f}, 12) == 0,
        "int32_data FLOAT16 initializer widened exactly");
  CHECK(cast >= 0 && mi_node_attr_int(&gr->nodes[cast], "to", 0) == 1, "Cast to FLOAT16 is a Cast to float32");
  CHECK(cos >= 0 && mi_node_attr_float(&gr->nodes[cos], "value", 0.0f) == 2.5f &&
            mi_node_attr_int(&gr->nodes[cos], "value_dtype", 0) == MI_DTYPE_FLOAT32,
        "ConstantOfShape's FLOAT16 value widened (%g, dtype %lld)", (double)mi_node_attr_float(&gr->nodes[cos], "value", 0.0f),
        (long long)mi_node_attr_int(&gr->nodes[cos], "value_dtype", 0));
  mi_array_t *in = arr_f32(2, d, (float[]){1, 2, 3}), *out = NULL;
  CHECK(mi_graph_infer_shapes(gr, &err) == MI_OK, "inference: %s", err.message);
  CHECK(mi_ref_run(gr, (const mi_array_t *const *)&in, 1, &out, 1, &err) == MI_OK, "run: %s", err.message);
  /* 1 * 1.5 + 0.5 + 2.5, 2 * -2 + 1 + 2.5, 3 * 0.25 + 65504 + 2.5: float32 all the way (a
   * FLOAT16 tensor would have rounded the last to 65504 or overflowed) */
  if (out) expect_f32("half model", out, 2, d, (float[]){4.5f, -0.5f, 65507.25f}, 0);
  mi_array_destroy(out);
  mi_array_destroy(in);
  mi_graph_destroy(gr);
}

static void test_widen_half(void) {
  int64_t d[1] = {4};
  mi_array_t *h = mi_array_create(MI_DTYPE_FLOAT16, 1, d), *f = mi_array_create(MI_DTYPE_FLOAT32, 1, d), *keep = f;
  CHECK(h && f, "arrays");
  if (!h || !f) return;
  memcpy(h->data, (uint16_t[]){0x3C00, 0xC000, 0x0001, 0x7C00}, 8);
  CHECK(mi_array_widen_half(&h) == MI_OK && h->dtype == MI_DTYPE_FLOAT32 && h->nbytes == 16, "float16 widened");
  const float *v = h->data;
  CHECK(v[0] == 1.0f && v[1] == -2.0f && v[2] == ldexpf(1.0f, -24) && isinf(v[3]) && v[3] > 0,
        "values exact: %g %g %g %g", (double)v[0], (double)v[1], (double)v[2], (double)v[3]);
  CHECK(mi_array_widen_half(&f) == MI_OK && f == keep, "a float32 array is left as it is");
  mi_array_destroy(h);
  mi_array_destroy(f);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_half_model),
    TU_CASE(test_widen_half),
};

TU_MAIN(NULL, NULL)
