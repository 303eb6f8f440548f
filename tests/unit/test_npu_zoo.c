/* test_npu_zoo.c - small mi-zoo models (FP32) run on npu-stub:0 through the host loader and a
 * session with host fallback: the NPU computes them in FP16, the host runs what it refuses, and
 * the result stays within the FP16 tolerance of the reference interpreter. */
#include <sys/stat.h>

#include "test_npu_util.h"

/* FP16 keeps 11 significant bits (unit roundoff 4.9e-4); every op's output is rounded, so the
 * error grows with depth. 2e-2 relative L2 is ~40 roundoffs: enough for the dozens of layers
 * of these models, far below what a wrong kernel gives (order 1). */
#define NPU_FP16_TOL 2e-2

typedef struct zoo_model {
  const char *family;
  const char *args; /* extra mi-zoo options */
} zoo_model_t;

static const zoo_model_t MODELS[] = {
    {"mobilenetv2", "--width 0.5 --resolution 32"},
    {"mobilenetv3", "--width 0.5 --depth 4 --resolution 32"},
    {"resnet", "--width 0.5 --depth 4 --resolution 32 --batch 2"},
    {"kws", "--width 0.5 --depth 2 --resolution 31"},
    {"mlp", "--width 0.5 --depth 3 --resolution 12 --batch 2"},
    {"transformer", "--width 0.5 --depth 1 --resolution 7"},
};

static char g_dir[256];

static double rel_l2(const mi_array_t *got, const mi_array_t *want) {
  const float *a = got->data, *b = want->data;
  double num = 0, den = 0;
  int64_t i, n = mi_array_numel(want);
  for (i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    num += d * d;
    den += (double)b[i] * b[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static const mi_node_t *node_by_name(const mi_graph_t *g, const char *name) {
  int32_t i;
  for (i = 0; i < g->node_count; i++)
    if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return &g->nodes[i];
  return NULL;
}

/* Counts the graph's nodes per op type that fell back, into a short report line. */
static void fallback_report(const mi_graph_t *g, const mi_session_t *s, char *out, size_t cap) {
  const char *types[64];
  int counts[64], nt = 0, i, j;
  size_t len = 0;
  out[0] = '\0';
  for (i = 0; i < mi_session_fallback_count(s); i++) {
    const mi_node_t *n = node_by_name(g, mi_session_fallback_node(s, i));
    const char *op = n ? n->op_type : "?";
    for (j = 0; j < nt && strcmp(types[j], op) != 0; j++) {
    }
    if (j == nt && nt < 64) {
      types[nt] = op;
      counts[nt++] = 0;
    }
    if (j < 64) counts[j]++;
  }
  for (j = 0; j < nt && len < cap; j++)
    len += (size_t)snprintf(out + len, cap - len, "%s%s x%d", j ? ", " : "", types[j], counts[j]);
}

/* True when op type `op` is one the npu-stub lists a variant for. */
static int npu_lists_op(const npu_t *p, const char *op) {
  uint32_t n = 0, i;
  mi_error_t err;
  REQUIRE(p->api->variant_count(p->ctx, 0, &n, &err) == MI_OK);
  for (i = 0; i < n; i++) {
    mi_variant_desc_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    REQUIRE(p->api->variant_desc(p->ctx, 0, i, &v, &err) == MI_OK);
    if (strcmp(v.op_type, op) == 0) return 1;
  }
  return 0;
}

static void run_model(npu_t *p, const zoo_model_t *m) {
  mi_graph_t *g = npu_zoo_model(g_dir, m->family, m->args);
  const mi_tensor_t *xt = &g->tensors[g->inputs[0]];
  mi_array_t *x = mi_array_create(xt->dtype, xt->rank, xt->dims), *want = NULL, *got = NULL;
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  char report[512];
  int32_t i, on_device;
  uint64_t dev_ns = 0;
  double e;
  REQUIRE(x != NULL);
  mi_array_fill_random(x, 5);
  if (mi_ref_run(g, (const mi_array_t *const *)&x, 1, &want, 1, &err) != MI_OK) {
    fprintf(stderr, "%s: reference: %s\n", m->family, err.message);
    exit(1);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  if (mi_session_create(g, p->plugin, 0, &o, &s, &err) != MI_OK) {
    fprintf(stderr, "%s: session on npu-stub:0: %s\n", m->family, err.message);
    exit(1);
  }
  if (mi_session_run(s, (const mi_array_t *const *)&x, 1, &got, 1, &err) != MI_OK) {
    fprintf(stderr, "%s: run: %s\n", m->family, err.message);
    exit(1);
  }
  REQUIRE(got->dtype == MI_DTYPE_FLOAT32 && got->nbytes == want->nbytes);
  e = rel_l2(got, want);
  fallback_report(g, s, report, sizeof report);
  on_device = g->node_count - mi_session_fallback_count(s);
  printf("%-12s %3d nodes, %3d on the NPU, rel L2 %.2e, host fallback: %s\n", m->family,
         g->node_count, on_device, e, report[0] ? report : "none");
  REQUIRE(e < NPU_FP16_TOL);
  /* the NPU must have done the bulk of the work, and must differ from FP32 somewhere: it
   * rounds to FP16, so a bit-identical output would mean nothing ran on it */
  REQUIRE(on_device * 2 > g->node_count);
  REQUIRE(memcmp(got->data, want->data, got->nbytes) != 0);
  /* a device op is only refused for a documented reason: the op is not listed at all, or it
   * consumes a runtime operand the NPU needs as a constant (MatMul of two activations) */
  for (i = 0; i < mi_session_fallback_count(s); i++) {
    const mi_node_t *n = node_by_name(g, mi_session_fallback_node(s, i));
    REQUIRE(n != NULL);
    if (npu_lists_op(p, n->op_type))
      printf("  note: %s '%s' fell back although the NPU lists it\n", n->op_type, n->name);
  }
  /* the simulated clock timed every device kernel */
  REQUIRE(mi_session_device_time(s, &dev_ns) == 1 && dev_ns > 0);
  mi_array_destroy(got);
  mi_array_destroy(want);
  mi_array_destroy(x);
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

static npu_t p;
static int p_open;

static void setup(void) {
  mi_error_t err;
  snprintf(g_dir, sizeof g_dir, "/tmp/test_npu_zoo.XXXXXX");
  REQUIRE(mkdtemp(g_dir) != NULL);
  unsetenv("MI_NPU_DEVICES");
  unsetenv("MI_NPU_FAULT");
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK, "create: %s", err.message);
  p_open = 1;
}

static void teardown(void) {
  if (p_open) npu_close(&p);
  REQUIRE(tu_rmtree(g_dir) == 0);
}

static void models(void) {
  for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) run_model(&p, &MODELS[i]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(models),
};

TU_MAIN(setup, teardown)
