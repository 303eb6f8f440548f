/* test_loader_desc.c - description structs of other sizes (canaries must survive, unknown
 * fields read zero) and the SDK template's kernels run through the loaded table. */
#include "test_loader_util.h"

#define CANARY 0xC3

/* The host's out struct between two canary zones. */
typedef struct guarded_device {
  unsigned char before[64];
  mi_device_desc_t d;
  unsigned char after[256];
} guarded_device_t;

static int canaries_intact(const guarded_device_t *g) {
  size_t i;
  for (i = 0; i < sizeof g->before; i++)
    if (g->before[i] != CANARY) return 0;
  for (i = 0; i < sizeof g->after; i++)
    if (g->after[i] != CANARY) return 0;
  return 1;
}

static void test_bigger_device_struct(void) {
  mi_registry_t *r = tp_scan("big_device");
  mi_plugin_t *p = mi_registry_find(r, "test-big-device");
  guarded_device_t g;
  mi_error_t err;
  CHECK(p != NULL);
  if (p) {
    /* Through the wrapper. */
    memset(&g, CANARY, sizeof g);
    CHECK(mi_plugin_device_info(p, 0, &g.d, &err) == MI_OK);
    CHECK(canaries_intact(&g));
    CHECK(g.d.struct_size == sizeof(mi_device_desc_t));
    CHECK(strcmp(g.d.name, "test-big-device device") == 0);
    CHECK(g.d.compute_units == 3 && g.d.max_threads == 7 && g.d.peak_gflops == 1.5);
    /* Straight through the plugin's table, as any host calling it would. */
    memset(&g, CANARY, sizeof g);
    memset(&g.d, 0, sizeof g.d);
    g.d.struct_size = sizeof g.d;
    CHECK(p->api.device_info(p->ctx, 0, &g.d, &err) == MI_OK);
    CHECK(canaries_intact(&g));
    CHECK(g.d.struct_size == sizeof(mi_device_desc_t));
    /* A host from an older minor with a smaller struct: only that much is written. */
    memset(&g, CANARY, sizeof g);
    g.d.struct_size = (uint32_t)offsetof(mi_device_desc_t, max_threads);
    CHECK(p->api.device_info(p->ctx, 0, &g.d, &err) == MI_OK);
    CHECK(canaries_intact(&g));
    CHECK(g.d.struct_size == offsetof(mi_device_desc_t, max_threads));
    CHECK(g.d.compute_units == 3);
    CHECK(((unsigned char *)&g.d.max_threads)[0] == CANARY);
    CHECK(((unsigned char *)&g.d)[sizeof g.d - 1] == CANARY);
  }
  mi_registry_destroy(r);
}

static void test_smaller_device_struct(void) {
  mi_registry_t *r = tp_scan("small_device");
  mi_plugin_t *p = mi_registry_find(r, "test-small-device");
  guarded_device_t g;
  mi_error_t err;
  CHECK(p != NULL);
  if (p) {
    /* Garbage in the host's struct must not survive: the wrapper zeroes it first, and the
     * fields the plugin does not know read zero. */
    memset(&g, CANARY, sizeof g);
    CHECK(mi_plugin_device_info(p, 0, &g.d, &err) == MI_OK);
    CHECK(canaries_intact(&g));
    CHECK(g.d.struct_size == offsetof(mi_device_desc_t, max_threads));
    CHECK(MI_HAS_FIELD(&g.d, mi_device_desc_t, compute_units));
    CHECK(!MI_HAS_FIELD(&g.d, mi_device_desc_t, max_threads));
    CHECK(g.d.compute_units == 3 && g.d.global_memory_bytes == (1u << 20));
    CHECK(g.d.max_threads == 0 && g.d.dtype_mask == 0 && g.d.peak_gflops == 0.0);
    CHECK(g.d.peak_bandwidth_gbs == 0.0 && g.d.max_buffer_bytes == 0);
  }
  mi_registry_destroy(r);
}

/* Template kernels through the table: a 1-D FP32 tensor of n elements. */
static void tensor(mi_tensor_desc_t *t, int64_t n) {
  memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->dtype = MI_DTYPE_FLOAT32;
  t->rank = 1;
  t->dims[0] = n;
}

static void test_template_kernels(void) {
  enum { N = 3000 };
  mi_registry_t *r = tp_scan("template");
  mi_plugin_t *p = mi_registry_find(r, "template");
  mi_tensor_desc_t t[3], small;
  const mi_tensor_desc_t *tp[3] = {&t[0], &t[1], &t[2]};
  int32_t in2[2] = {0, 1}, out1[1] = {2};
  mi_node_desc_t node;
  const mi_node_desc_t *np = &node;
  mi_kernel_desc_t kd;
  mi_kernel_t *k = NULL;
  mi_buffer_t *buf[3] = {NULL, NULL, NULL};
  mi_run_stats_t stats;
  mi_counter_sample_t s;
  mi_knob_value_t knob = {"chunk", 256, 0.0};
  mi_error_t err;
  static float a[N], b[N], y[N];
  int i, bad = 0;

  CHECK(p != NULL);
  if (!p) goto done;
  for (i = 0; i < N; i++) {
    a[i] = (float)(i % 7) - 3.0f;
    b[i] = 0.5f * (float)(i % 5);
  }
  for (i = 0; i < 3; i++) tensor(&t[i], N);
  memset(&node, 0, sizeof node);
  node.struct_size = sizeof node;
  node.op_type = "Add";
  node.opset = 13;
  node.input_count = 2;
  node.inputs = in2;
  node.output_count = 1;
  node.outputs = out1;
  memset(&kd, 0, sizeof kd);
  kd.struct_size = sizeof kd;
  kd.node_count = 1;
  kd.nodes = &np;
  kd.tensor_count = 3;
  kd.tensors = tp;
  kd.input_count = 2;
  kd.inputs = in2;
  kd.output_count = 1;
  kd.outputs = out1;
  kd.knob_count = 1;
  kd.knobs = &knob;

  /* No sample before the first run: the counter says so instead of reporting 0. */
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  CHECK(p->api.counter_read(p->ctx, 0, 0, &s, &err) == MI_OK && s.has_value == 0);

  CHECK(p->api.kernel_prepare(p->ctx, 0, &kd, &k, &err) == MI_OK && k);
  for (i = 0; i < 3; i++) CHECK(p->api.buffer_alloc(p->ctx, 0, sizeof a, &buf[i], &err) == MI_OK);
  if (!k || !buf[0] || !buf[1] || !buf[2]) goto done;
  CHECK(p->api.buffer_write(p->ctx, buf[0], 0, a, sizeof a, &err) == MI_OK);
  CHECK(p->api.buffer_write(p->ctx, buf[1], 0, b, sizeof b, &err) == MI_OK);
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  CHECK(p->api.kernel_run(p->ctx, k, buf, 2, &buf[2], 1, &stats, &err) == MI_OK);
  CHECK(stats.has_device_time == 1);
  CHECK(p->api.buffer_read(p->ctx, buf[2], 0, y, sizeof y, &err) == MI_OK);
  for (i = 0; i < N; i++) bad += y[i] != a[i] + b[i];
  CHECK(bad == 0);
  CHECK(p->api.counter_read(p->ctx, 0, 0, &s, &err) == MI_OK && s.has_value == 1);
  p->api.kernel_release(p->ctx, k);
  k = NULL;

  /* Relu, default variant named explicitly. */
  node.op_type = "Relu";
  node.input_count = 1;
  kd.input_count = 1;
  tp[1] = &t[2];
  out1[0] = 1;
  kd.tensor_count = 2;
  kd.variant_id = "relu.scalar";
  CHECK(p->api.kernel_prepare(p->ctx, 0, &kd, &k, &err) == MI_OK && k);
  if (k) {
    CHECK(p->api.kernel_run(p->ctx, k, buf, 1, &buf[2], 1, NULL, &err) == MI_OK);
    CHECK(p->api.buffer_read(p->ctx, buf[2], 0, y, sizeof y, &err) == MI_OK);
    for (i = 0, bad = 0; i < N; i++) bad += y[i] != (a[i] > 0 ? a[i] : 0.0f);
    CHECK(bad == 0);
    p->api.kernel_release(p->ctx, k);
    k = NULL;
  }

  /* Refusals: unknown variant, knob outside its domain, broadcasting Add, another op. */
  kd.variant_id = "relu.nope";
  CHECK(p->api.kernel_prepare(p->ctx, 0, &kd, &k, &err) == MI_ERR_INVALID_CONFIG && !k);
  kd.variant_id = NULL;
  knob.i = 100;
  CHECK(p->api.kernel_prepare(p->ctx, 0, &kd, &k, &err) == MI_ERR_INVALID_CONFIG && !k);
  CHECK_CONTAINS(err.message, "chunk");
  knob.i = 256;
  node.op_type = "Add";
  node.input_count = 2;
  kd.input_count = 2;
  tensor(&small, 1);
  tp[1] = &small;
  tp[2] = &t[2];
  kd.tensor_count = 3;
  out1[0] = 2;
  CHECK(p->api.kernel_prepare(p->ctx, 0, &kd, &k, &err) == MI_ERR_UNSUPPORTED && !k);
  CHECK_CONTAINS(err.message, "broadcasting");
  node.op_type = "Conv";
  CHECK(p->api.kernel_prepare(p->ctx, 0, &kd, &k, &err) == MI_ERR_UNSUPPORTED && !k);

done:
  for (i = 0; i < 3; i++)
    if (p && buf[i]) p->api.buffer_free(p->ctx, buf[i]);
  mi_registry_destroy(r);
}

static void test_template_descriptions(void) {
  mi_registry_t *r = tp_scan("template");
  mi_plugin_t *p = mi_registry_find(r, "template");
  mi_knob_desc_t *k = NULL;
  mi_variant_desc_t *v = NULL;
  mi_counter_desc_t *c = NULL;
  uint32_t nk = 0, nv = 0, nc = 0;
  CHECK(p != NULL);
  if (p) {
    CHECK(mi_plugin_knobs(p, 0, &k, &nk, NULL) == MI_OK && nk == 1);
    CHECK(mi_plugin_variants(p, 0, &v, &nv, NULL) == MI_OK && nv == 2);
    CHECK(mi_plugin_counters(p, 0, &c, &nc, NULL) == MI_OK && nc == 1);
    if (nk == 1) CHECK(strcmp(k[0].name, "chunk") == 0 && k[0].default_int == 1024);
    if (nv == 2) CHECK(strcmp(v[0].op_type, "Relu") == 0 && strcmp(v[1].op_type, "Add") == 0);
    if (nc == 1) {
      CHECK(c[0].kind == MI_COUNTER_TIMER && c[0].modeled == 0);
      CHECK_CONTAINS(c[0].name, "host monotonic");
      CHECK(strcmp(c[0].unit, "ns") == 0 && c[0].resolution > 0);
    }
    free(k);
    k = (mi_knob_desc_t *)&nk; /* must come back NULL */
    CHECK(mi_plugin_knobs(p, 5, &k, &nk, NULL) == MI_ERR_INVALID_ARGUMENT && k == NULL);
  }
  free(k);
  free(v);
  free(c);
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_bigger_device_struct),
    TU_CASE(test_smaller_device_struct),
    TU_CASE(test_template_kernels),
    TU_CASE(test_template_descriptions),
};

TU_MAIN(NULL, NULL)
