/* test_sdk_tables.c - the SDK helper library's error helper and table-driven descriptions: what
 * a plugin gets back through the ABI's count/describe calls when it declares arrays. */
#include "test_util.h"

#include "metainfer/mi_sdk.h"

/* A plugin's own variant type, larger than the SDK's: the helper must step by its size. */
typedef struct my_variant {
  mi_sdk_variant_t v;
  int extra[7];
} my_variant_t;

static const mi_sdk_knob_t k_knobs[] = {
    {.name = "wg", .description = "work-group", .unit = "items", .scope = MI_KNOB_SCOPE_VARIANT, .type = MI_KNOB_INT, .value_count = 3, .values = {8, 16, 64}, .default_int = 16},
    {.name = "local", .type = MI_KNOB_BOOL, .default_int = 1},
    {.name = "mode", .type = MI_KNOB_ENUM, .choices = "a|b|c", .applies_to = ""},
    {.name = "threads", .type = MI_KNOB_INT, .min = 1, .max = 4, .default_int = 4, .applies_to = "x.listed"},
};

static const my_variant_t k_variants[] = {
    {{"conv.tiled", "Conv", "tiles", 2, 3, MI_FUSE_RELU, 1u << 0 | 1u << 1, NULL}, {1}},
    {{"conv.direct", "Conv", "direct", 2, 3, 0, 1u << 0, NULL}, {2}},
    {{"relu.loop", "Relu", "loop", 2, 3, 0, 0, "mode"}, {3}},
};

static const mi_sdk_counter_t k_counters[] = {{"time", MI_COUNTER_TIMER, "ns", 2.5, 0},
                                              {"energy", MI_COUNTER_ENERGY, "J", 1e-6, 1}};

static int32_t constraint(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_constraint_desc_t *out);

static const mi_sdk_tables_t k_tables = {
    .knobs = k_knobs, .knob_count = 4, .variants = k_variants, .variant_count = 3, .variant_size = sizeof(my_variant_t), .counters = k_counters, .counter_count = 2, .constraint_count = 1, .constraint = constraint};

struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk;
  int64_t limit;
};

static int32_t constraint(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_constraint_desc_t *out) {
  mi_constraint_desc_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.kind = MI_CONSTRAINT_LESS_EQUAL;
  snprintf(c.a, sizeof c.a, "wg");
  c.value = ctx->limit + device + index;
  return mi_sdk_fill(out, &c, sizeof c);
}

static void test_errorf(void) {
  mi_error_t err;
  char big[400];
  memset(&err, 0, sizeof err);
  CHECK(mi_sdk_errorf(&err, MI_ERR_PARSE, "%s:%d: bad '%s'", "f.conf", 12, "x") == MI_ERR_PARSE,
        "returns the code");
  CHECK(err.code == MI_ERR_PARSE && strcmp(err.message, "f.conf:12: bad 'x'") == 0, "got '%s'",
        err.message);
  CHECK(mi_sdk_errorf(NULL, MI_ERR_IO, "no %s", "err") == MI_ERR_IO, "err NULL is safe");
  memset(big, 'y', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  mi_sdk_errorf(&err, MI_ERR_INTERNAL, "%s", big);
  CHECK(strlen(err.message) == MI_ERROR_MESSAGE_SIZE - 1, "cut to the buffer, got %zu",
        strlen(err.message));
}

static int g_logged;
static char g_line[256];
static void host_log(void *hc, int32_t level, const char *plugin, const char *message) {
  (void)hc;
  g_logged++;
  snprintf(g_line, sizeof g_line, "%d %s %s", (int)level, plugin, message);
}

static void test_logf(void) {
  mi_host_api_t host;
  memset(&host, 0, sizeof host);
  host.struct_size = sizeof host;
  host.log = host_log;
  mi_sdk_logf(&host, MI_LOG_WARN, "p", "%d items", 3);
  CHECK(g_logged == 1 && strcmp(g_line, "1 p 3 items") == 0, "got '%s'", g_line);
  /* a host whose table ends before `log` is not called */
  host.struct_size = (uint32_t)offsetof(mi_host_api_t, log);
  mi_sdk_logf(&host, MI_LOG_WARN, "p", "ignored");
  CHECK(g_logged == 1, "an older host's table was read past its size");
  mi_sdk_logf(NULL, MI_LOG_WARN, "p", "ignored");
}

static void test_devices(mi_plugin_ctx_t *ctx) {
  mi_error_t err;
  uint32_t n = 99;
  mi_knob_desc_t k;
  CHECK(mi_sdk_device_count(ctx, &n, &err) == MI_OK && n == 2, "device count %u", n);
  CHECK(mi_sdk_device_count(NULL, &n, &err) == MI_ERR_INVALID_ARGUMENT, "NULL ctx");
  CHECK(mi_sdk_knob_count(ctx, 2, &n, &err) == MI_ERR_INVALID_ARGUMENT, "device 2 of 2");
  CHECK(strstr(err.message, "test: no device 2 (2 devices)") != NULL, "message '%s'", err.message);
  ctx->sdk.no_device_code = MI_ERR_NOT_FOUND;
  CHECK(mi_sdk_knob_count(ctx, 5, &n, &err) == MI_ERR_NOT_FOUND, "the plugin's own code");
  ctx->sdk.no_device_code = 0;
  k.struct_size = sizeof k;
  CHECK(mi_sdk_knob_desc(ctx, 0, 4, &k, &err) == MI_ERR_INVALID_ARGUMENT, "knob 4 of 4");
  CHECK(mi_sdk_knob_desc(ctx, 0, 0, NULL, &err) == MI_ERR_INVALID_ARGUMENT, "out NULL");
}

static void test_knobs(mi_plugin_ctx_t *ctx) {
  mi_error_t err;
  mi_knob_desc_t k;
  uint32_t n = 0;
  CHECK(mi_sdk_knob_count(ctx, 1, &n, &err) == MI_OK && n == 4, "knob count");
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  REQUIRE(mi_sdk_knob_desc(ctx, 1, 0, &k, &err) == MI_OK);
  CHECK(strcmp(k.name, "wg") == 0 && strcmp(k.unit, "items") == 0, "name and unit");
  CHECK(k.value_count == 3 && k.min == 8 && k.max == 64 && k.step == 1 && k.default_int == 16,
        "domain from the values: %lld..%lld", (long long)k.min, (long long)k.max);
  CHECK(strcmp(k.applies_to, "conv.tiled,conv.direct") == 0, "applies_to from knob_mask: '%s'",
        k.applies_to);
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  mi_sdk_knob_desc(ctx, 0, 1, &k, &err);
  CHECK(k.min == 0 && k.max == 1 && strcmp(k.applies_to, "conv.tiled") == 0, "BOOL 0..1, '%s'",
        k.applies_to);
  mi_sdk_knob_desc(ctx, 0, 2, &k, &err);
  CHECK(k.max == 2 && strcmp(k.choices, "a|b|c") == 0 && k.applies_to[0] == '\0',
        "ENUM max from choices, given applies_to kept");
  mi_sdk_knob_desc(ctx, 0, 3, &k, &err);
  CHECK(k.min == 1 && k.max == 4 && strcmp(k.applies_to, "x.listed") == 0, "INT range kept");
  CHECK(mi_sdk_knob_allows(&k_knobs[0], 16) && !mi_sdk_knob_allows(&k_knobs[0], 32), "values");
  CHECK(mi_sdk_knob_allows(&k_knobs[1], 1) && !mi_sdk_knob_allows(&k_knobs[1], 2), "bool");
  CHECK(mi_sdk_knob_allows(&k_knobs[2], 2) && !mi_sdk_knob_allows(&k_knobs[2], 3), "enum");
  CHECK(mi_sdk_knob_allows(&k_knobs[3], 4) && !mi_sdk_knob_allows(&k_knobs[3], 0), "range");
  CHECK(mi_sdk_knob_index(&k_tables, "mode") == 2 && mi_sdk_knob_index(&k_tables, "nope") == -1,
        "knob index");
}

/* An older host's knob struct, cut before `values`: the helper writes no byte past it. */
static void test_small_host(mi_plugin_ctx_t *ctx) {
  union {
    mi_knob_desc_t k;
    unsigned char raw[sizeof(mi_knob_desc_t)];
  } u;
  size_t cut = offsetof(mi_knob_desc_t, values), i;
  int clean = 1;
  mi_error_t err;
  memset(&u, 0xAB, sizeof u);
  u.k.struct_size = (uint32_t)cut;
  REQUIRE(mi_sdk_knob_desc(ctx, 0, 0, &u.k, &err) == MI_OK);
  for (i = cut; i < sizeof u.raw; i++) clean &= u.raw[i] == 0xAB;
  CHECK(clean, "bytes past the host's struct_size were written");
  CHECK(u.k.struct_size == cut && u.k.value_count == 3, "reported size %u", u.k.struct_size);
}

static void test_variants(mi_plugin_ctx_t *ctx) {
  mi_error_t err;
  mi_variant_desc_t v;
  uint32_t n = 0;
  const mi_sdk_variant_t *f;
  CHECK(mi_sdk_variant_count(ctx, 0, &n, &err) == MI_OK && n == 3, "variant count");
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  REQUIRE(mi_sdk_variant_desc(ctx, 0, 1, &v, &err) == MI_OK);
  CHECK(strcmp(v.id, "conv.direct") == 0 && strcmp(v.op_type, "Conv") == 0,
        "the second element of a larger struct, got '%s'", v.id);
  CHECK(strcmp(v.knobs, "wg") == 0, "knobs from the mask '%s'", v.knobs);
  mi_sdk_variant_desc(ctx, 0, 0, &v, &err);
  CHECK(strcmp(v.knobs, "wg,local") == 0 && v.fuse_mask == MI_FUSE_RELU && v.dtype_mask == 2 &&
            v.layout_mask == 3,
        "knobs '%s'", v.knobs);
  mi_sdk_variant_desc(ctx, 0, 2, &v, &err);
  CHECK(strcmp(v.knobs, "mode") == 0, "the given list without a mask");
  CHECK(mi_sdk_variant_desc(ctx, 0, 3, &v, &err) == MI_ERR_INVALID_ARGUMENT, "variant 3 of 3");
  f = mi_sdk_variant_find(&k_tables, "relu.loop");
  CHECK(f && ((const my_variant_t *)f)->extra[0] == 3, "find returns the plugin's element");
  f = mi_sdk_variant_first(&k_tables, "Conv");
  CHECK(f && strcmp(f->id, "conv.tiled") == 0, "first of an op is its default");
  CHECK(!mi_sdk_variant_find(&k_tables, "conv") && !mi_sdk_variant_first(&k_tables, "Gemm"),
        "no partial matches");
}

static void test_counters_constraints(mi_plugin_ctx_t *ctx) {
  mi_error_t err;
  mi_counter_desc_t c;
  mi_constraint_desc_t k;
  uint32_t n = 0;
  CHECK(mi_sdk_counter_count(ctx, 0, &n, &err) == MI_OK && n == 2, "counter count");
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  REQUIRE(mi_sdk_counter_desc(ctx, 0, 1, &c, &err) == MI_OK);
  CHECK(strcmp(c.name, "energy") == 0 && c.kind == MI_COUNTER_ENERGY && c.modeled == 1 &&
            c.resolution == 1e-6,
        "counter 1");
  CHECK(mi_sdk_counter_desc(ctx, 0, 2, &c, &err) == MI_ERR_INVALID_ARGUMENT, "counter 2 of 2");
  CHECK(mi_sdk_constraint_count(ctx, 1, &n, &err) == MI_OK && n == 1, "constraint count");
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  REQUIRE(mi_sdk_constraint_desc(ctx, 1, 0, &k, &err) == MI_OK);
  CHECK(k.value == 101 && strcmp(k.a, "wg") == 0, "the device's figure: %lld", (long long)k.value);
  CHECK(mi_sdk_constraint_desc(ctx, 1, 1, &k, &err) == MI_ERR_INVALID_ARGUMENT, "index 1 of 1");
}

static void all_sdk_tables(void) {
  mi_plugin_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.sdk.name = "test";
  ctx.sdk.device_count = 2;
  ctx.sdk.tables = &k_tables;
  ctx.limit = 100;
  test_errorf();
  test_logf();
  test_devices(&ctx);
  test_knobs(&ctx);
  test_small_host(&ctx);
  test_variants(&ctx);
  test_counters_constraints(&ctx);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_sdk_tables),
};

TU_MAIN(NULL, NULL)
