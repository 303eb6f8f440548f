/* test_sdk_helpers.c - the SDK helpers plugins share beyond the tables: tensor sizes and strides,
 * where a kernel's tensor lives, the kernel_prepare opening, device descriptions answered from
 * the plugin's device array, FLOAT16 conversions and the growable array. */
#include "test_util.h"

#include <math.h>

#include "metainfer/mi_sdk.h"

static void tensor_sizes(void) {
  mi_tensor_desc_t t;
  int64_t st[MI_MAX_RANK];
  memset(&t, 0, sizeof t);
  t.rank = 3;
  t.dims[0] = 2;
  t.dims[1] = 3;
  t.dims[2] = 5;
  t.dtype = MI_DTYPE_FLOAT32;
  mi_sdk_strides(&t, st);
  CHECK(st[0] == 15 && st[1] == 5 && st[2] == 1, "strides %lld %lld %lld", (long long)st[0],
        (long long)st[1], (long long)st[2]);
  CHECK(mi_sdk_tensor_bytes(&t) == 120, "30 floats");
  t.dtype = MI_DTYPE_INT4;
  CHECK(mi_sdk_tensor_bytes(&t) == 15, "30 INT4 values in 15 bytes");
  t.dims[2] = 1;
  CHECK(mi_sdk_tensor_bytes(&t) == 3, "6 INT4 values in 3 bytes");
  t.dims[0] = 1;
  CHECK(mi_sdk_tensor_bytes(&t) == 2, "3 INT4 values round up to 2 bytes");
  t.dtype = MI_DTYPE_INT64;
  CHECK(mi_sdk_tensor_bytes(&t) == 24, "3 INT64");
  CHECK(mi_sdk_dtype_size(MI_DTYPE_FLOAT16) == 2 && mi_sdk_dtype_size(MI_DTYPE_BFLOAT16) == 2 && mi_sdk_dtype_size(MI_DTYPE_BOOL) == 1 &&
            mi_sdk_dtype_size(MI_DTYPE_UNDEFINED) == 0 && mi_sdk_dtype_size(99) == 0,
        "dtype sizes");
}

static void kernel_io(void) {
  int32_t ins[2] = {4, 1}, outs[1] = {2}, idx = 7;
  mi_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.input_count = 2;
  d.inputs = ins;
  d.output_count = 1;
  d.outputs = outs;
  CHECK(mi_sdk_kernel_io(&d, 1, &idx) == MI_SDK_IO_INPUT && idx == 1, "tensor 1 is input 1");
  CHECK(mi_sdk_kernel_io(&d, 2, &idx) == MI_SDK_IO_OUTPUT && idx == 0, "tensor 2 is output 0");
  CHECK(mi_sdk_kernel_io(&d, 3, &idx) == MI_SDK_IO_NONE && idx == -1, "tensor 3 is neither");
  CHECK(mi_sdk_kernel_io(&d, 4, NULL) == MI_SDK_IO_INPUT, "index may be NULL");
  outs[0] = 4;
  CHECK(mi_sdk_kernel_io(&d, 4, &idx) == MI_SDK_IO_INPUT && idx == 0, "an input first");
}

/* A plugin whose devices keep their own tables and descriptions. */
typedef struct my_device {
  int64_t before;
  mi_sdk_tables_t tables;
  mi_device_desc_t desc;
  int after;
} my_device_t;

struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk;
  my_device_t devs[2];
};

static const mi_sdk_variant_t k_variants[] = {
    {"relu.a", "Relu", "first", 2, 3, 0, 0, NULL},
    {"add.a", "Add", "first add", 2, 3, 0, 0, NULL},
};

static void devices(void) {
  mi_plugin_ctx_t ctx;
  mi_device_desc_t out;
  mi_error_t err;
  uint32_t i;
  memset(&ctx, 0, sizeof ctx);
  ctx.sdk.name = "dev";
  ctx.sdk.device_count = 2;
  for (i = 0; i < 2; i++) {
    ctx.devs[i].tables.variants = k_variants;
    ctx.devs[i].tables.variant_count = 2 - i; /* device 1 lists Relu only */
    ctx.devs[i].desc.struct_size = sizeof ctx.devs[i].desc;
    snprintf(ctx.devs[i].desc.name, sizeof ctx.devs[i].desc.name, "device %u", i);
  }
  memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  CHECK(mi_sdk_device_info(&ctx, 0, &out, &err) == MI_ERR_INTERNAL, "no descriptions set");
  mi_sdk_set_devices(&ctx.sdk, &ctx.devs[0].tables, &ctx.devs[0].desc, sizeof ctx.devs[0]);
  REQUIRE(mi_sdk_device_info(&ctx, 1, &out, &err) == MI_OK);
  CHECK(strcmp(out.name, "device 1") == 0, "device 1's description: '%s'", out.name);
  CHECK(mi_sdk_tables(&ctx, 1) == &ctx.devs[1].tables, "device 1's tables");
  CHECK(mi_sdk_device_info(&ctx, 2, &out, &err) == MI_ERR_INVALID_ARGUMENT &&
            strstr(err.message, "dev: no device 2 (2 devices)"),
        "device 2: '%s'", err.message);
}

static mi_kernel_desc_t *relu_desc(mi_kernel_desc_t *d, mi_node_desc_t *n,
                                   const mi_node_desc_t **nodes, const char *variant) {
  memset(d, 0, sizeof *d);
  memset(n, 0, sizeof *n);
  n->op_type = "Relu";
  nodes[0] = n;
  d->node_count = 1;
  d->nodes = nodes;
  d->variant_id = variant;
  return d;
}

static void kernel_variant(void) {
  mi_plugin_ctx_t ctx;
  mi_kernel_desc_t d;
  mi_node_desc_t n;
  const mi_node_desc_t *nodes[1];
  const mi_sdk_variant_t *v = NULL;
  mi_error_t err;
  mi_sdk_tables_t all = {.variants = k_variants, .variant_count = 2};
  memset(&ctx, 0, sizeof ctx);
  ctx.sdk.name = "kv";
  ctx.sdk.device_count = 2;
  ctx.devs[0].tables = all;
  ctx.devs[1].tables = all;
  ctx.devs[1].tables.variant_count = 1;
  mi_sdk_set_devices(&ctx.sdk, &ctx.devs[0].tables, NULL, sizeof ctx.devs[0]);
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, relu_desc(&d, &n, nodes, NULL), &v, &err) == MI_OK &&
            v == NULL,
        "no id: the plugin's default");
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, relu_desc(&d, &n, nodes, ""), &v, &err) == MI_OK &&
            v == NULL,
        "an empty id is no id");
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, relu_desc(&d, &n, nodes, "relu.a"), &v, &err) == MI_OK &&
            v == &k_variants[0],
        "relu.a found");
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, relu_desc(&d, &n, nodes, "add.a"), &v, &err) ==
                MI_ERR_INVALID_CONFIG &&
            v == NULL &&
            strstr(err.message, "kv: variant add.a implements Add, not Relu"),
        "another op's variant: '%s'", err.message);
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, relu_desc(&d, &n, nodes, "relu.b"), &v, &err) ==
                MI_ERR_INVALID_CONFIG &&
            strstr(err.message, "kv: unknown variant 'relu.b'"),
        "unknown id: '%s'", err.message);
  /* Device 1 does not list add.a; the full table passed as `all` still knows it. */
  CHECK(mi_sdk_kernel_variant(&ctx, 1, NULL, relu_desc(&d, &n, nodes, "add.a"), &v, &err) ==
                MI_ERR_INVALID_CONFIG &&
            strstr(err.message, "unknown variant"),
        "device 1's own tables: '%s'", err.message);
  CHECK(mi_sdk_kernel_variant(&ctx, 1, &all, relu_desc(&d, &n, nodes, "add.a"), &v, &err) ==
                MI_ERR_INVALID_CONFIG &&
            strstr(err.message, "implements Add"),
        "the full table: '%s'", err.message);
  CHECK(mi_sdk_kernel_variant(&ctx, 2, NULL, relu_desc(&d, &n, nodes, NULL), &v, &err) ==
            MI_ERR_INVALID_ARGUMENT,
        "no device 2");
  n.op_type = NULL;
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, &d, &v, &err) == MI_ERR_INVALID_ARGUMENT,
        "a node without op type");
  d.node_count = 0;
  CHECK(mi_sdk_kernel_variant(&ctx, 0, NULL, &d, &v, &err) == MI_ERR_INVALID_ARGUMENT, "no node");
}

static void half(void) {
  /* Values worked out by hand from IEEE 754 binary16. */
  CHECK(mi_sdk_float_to_half(1.0f) == 0x3c00 && mi_sdk_float_to_half(-2.0f) == 0xc000, "1, -2");
  CHECK(mi_sdk_float_to_half(65504.0f) == 0x7bff, "largest half");
  CHECK(mi_sdk_float_to_half(65520.0f) == 0x7c00, "rounds up to infinity");
  CHECK(mi_sdk_float_to_half(1.0f + 1.0f / 2048) == 0x3c00, "a tie rounds to the even 1.0");
  CHECK(mi_sdk_float_to_half(1.0f + 3.0f / 2048) == 0x3c02, "a tie rounds to the even 0x3c02");
  CHECK(mi_sdk_float_to_half(ldexpf(1.0f, -24)) == 0x0001, "smallest subnormal");
  CHECK(mi_sdk_float_to_half(ldexpf(1.0f, -26)) == 0x0000, "below half the smallest: zero");
  CHECK((mi_sdk_float_to_half(NAN) & 0x7c00) == 0x7c00 && (mi_sdk_float_to_half(NAN) & 0x3ff),
        "NaN stays NaN");
  CHECK(mi_sdk_half_to_float(0x3555) == 0x1.554p-2f, "0x3555");
  CHECK(mi_sdk_half_to_float(0x0001) == ldexpf(1.0f, -24), "subnormal back");
  CHECK(mi_sdk_half_to_float(0xfc00) == -INFINITY && isnan(mi_sdk_half_to_float(0x7e00)),
        "-inf, NaN");
  for (uint32_t h = 0; h < 0x7c00; h++)
    if (mi_sdk_float_to_half(mi_sdk_half_to_float((uint16_t)h)) != h) {
      CHECK(0, "half 0x%04x does not round-trip", h);
      break;
    }
}

static void grow(void) {
  int cap = 0, *a = NULL, *g, i;
  for (i = 0; i < 100; i++) {
    if (i == cap) {
      REQUIRE((g = mi_sdk_grow(a, &cap, sizeof *g)) != NULL);
      a = g;
    }
    a[i] = i;
  }
  CHECK(cap == 128 && a[99] == 99, "16, 32, 64, 128: cap %d", cap);
  cap = 0x7fffffff;
  CHECK(mi_sdk_grow(a, &cap, sizeof *a) == NULL && cap == 0x7fffffff, "no overflow, cap kept");
  free(a);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(tensor_sizes),
    TU_CASE(kernel_io),
    TU_CASE(devices),
    TU_CASE(kernel_variant),
    TU_CASE(half),
    TU_CASE(grow),
};

TU_MAIN(NULL, NULL)
