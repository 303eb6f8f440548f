/* test_space_act.c - the space's INT8-activation precision (int8_act): where it is offered, the
 * transform config it makes, its canonical round trip, and, measured through the worker on
 * npu-stub as the tuner measures, that it reaches the INT8 arrays (weight-only INT8 does not). */
#include <math.h>

#include "metainfer/mi_measure.h"
#include "metainfer/mi_transform.h"
#include "test_space_util.h"

/* The precision labels every history and recipe already holds keep their place; the new ones are
 * appended after them (bf16 where the device has a BF16 variant: blis-cpu on an AVX512_BF16 CPU). */
static void check_labels(const mi_space_t *s, int32_t d, const char *where) {
  static const char *const old[] = {"fp32", "fp16", "int8_tensor", "int8_channel", "int8_act", "bf16"};
  int32_t n = mi_space_dim_size(s, d);
  CHECK(n == 5 || n == 6, "%s: %d precision values", where, (int)n);
  for (int32_t v = 0; v < 6 && v < n; v++)
    CHECK(!strcmp(mi_space_dim_label(s, d, v), old[v]), "%s: value %d is %s", where, (int)v,
          mi_space_dim_label(s, d, v));
}

/* The node's effective transform setting under precision label `label` of dimension d. */
static int32_t layer_of(const mi_space_t *s, const mi_graph_t *g, int32_t d, const char *label,
                        mi_xf_layer_t *out, char **canon) {
  int32_t *pt = calloc((size_t)mi_space_dim_count(s), sizeof *pt), rc;
  mi_xf_config_t *c = NULL;
  mi_error_t err = {0};
  mi_space_default(s, pt);
  pt[d] = tsu_value(s, d, label);
  rc = mi_space_xf_config(s, pt, &c, &err);
  CHECK(rc == MI_OK, "xf config: %s", err.message);
  if (rc == MI_OK) {
    mi_xf_config_resolve(c, g, mi_space_dim_node(s, d), out);
    if (canon) CHECK(mi_xf_config_canonical(c, canon, &err) == MI_OK, "%s", err.message);
  }
  mi_xf_config_destroy(c);
  free(pt);
  return rc;
}

static void test_offer(mi_registry_t *r, const mi_graph_t *g, const char *plugin) {
  mi_plugin_t *p = mi_registry_find(r, plugin);
  mi_space_t *s = NULL;
  mi_xf_layer_t l;
  mi_error_t err = {0};
  char *canon = NULL;
  int32_t d, *pt, matched = 0;
  CHECK(p != NULL, "%s not loaded", plugin);
  if (!p || mi_space_create(g, p, 0, NULL, &s, &err) != MI_OK) {
    CHECK(0, "%s: space: %s", plugin, err.message);
    return;
  }
  /* Both plugins declare INT8 and UINT8 for their conv variants (npu-stub's arrays, blis-cpu's
   * INT8 core), so both convs are offered INT8 activations. */
  d = tsu_dim(s, "node.conv1.precision");
  CHECK(d >= 0, "%s: no conv1 precision", plugin);
  if (d < 0) goto done;
  check_labels(s, d, plugin);
  CHECK(tsu_dim(s, "node.conv2.precision") >= 0 &&
            tsu_value(s, tsu_dim(s, "node.conv2.precision"), "int8_act") >= 0,
        "%s: conv2 not offered int8_act", plugin);

  /* int8_act: INT8 per-channel weights and INT8 activations; the weight-only labels unchanged
   * (FP32 activations, the canonical text histories hold for them). */
  if (layer_of(s, g, d, "int8_act", &l, &canon) == MI_OK)
    CHECK((l.set & MI_XF_SET_ACTS) && l.activations == MI_XF_INT8 && l.weights == MI_XF_INT8 &&
              l.scales == MI_XF_PER_CHANNEL,
          "%s: int8_act gives set %u weights %d scales %d activations %d", plugin, l.set,
          (int)l.weights, (int)l.scales, (int)l.activations);
  {
    char *wo = NULL;
    if (layer_of(s, g, d, "int8_channel", &l, &wo) == MI_OK)
      CHECK(l.activations == MI_XF_FP32 && l.weights == MI_XF_INT8 && l.scales == MI_XF_PER_CHANNEL &&
                wo && strstr(wo, "layer conv1: weights=int8 scales=per_channel activations=fp32"),
            "%s: int8_channel changed: activations %d, canonical %s", plugin, (int)l.activations,
            wo ? wo : "");
    free(wo);
  }

  /* Rounded weights (integer, BF16, FP16) come with bias correction (ranges stay min-max),
   * INT8 activations with cross-layer equalization; a weight-only point goes without it. */
  CHECK(canon && strstr(canon, "calibration=minmax bias_correction=1 equalize=1\n"),
        "%s: int8_act canonical %s", plugin, canon ? canon : "");
  {
    char *h = NULL;
    if (layer_of(s, g, d, "int8_channel", &l, &h) == MI_OK)
      CHECK(h && strstr(h, "calibration=minmax bias_correction=1\n"), "%s: int8_channel canonical %s",
            plugin, h ? h : "");
    free(h);
  }
  {
    char *h = NULL;
    if (layer_of(s, g, d, "fp16", &l, &h) == MI_OK)
      CHECK(h && strstr(h, "calibration=minmax bias_correction=1\n"), "%s: fp16 canonical %s", plugin,
            h ? h : "");
    free(h);
  }

  /* The config's canonical text (what histories store) reads back to the same label. */
  pt = calloc((size_t)mi_space_dim_count(s), sizeof *pt);
  CHECK(canon && strstr(canon, "activations=int8"), "canonical: %s", canon ? canon : "");
  CHECK(canon && pt && mi_space_from_canonical(s, NULL, canon, pt, &matched, &err) == MI_OK,
        "from canonical: %s", err.message);
  CHECK(pt && matched >= 1 && !strcmp(mi_space_dim_label(s, d, pt[d]), "int8_act"),
        "%s: canonical text came back as %s (%d matched)", plugin,
        pt ? mi_space_dim_label(s, d, pt[d]) : "?", (int)matched);
  free(pt);
  free(canon);
done:
  mi_space_destroy(s);
}

/* Measures the small CNN on npu-stub through a worker with every weighted layer at `label`,
 * as the tuner does (no calibration folder: the worker's generated samples, seed 1). */
static int32_t measure(mi_worker_pool_t *pool, const char *spec, const mi_space_t *s,
                       const char *model, const char *label, mi_profile_t **prof,
                       mi_worker_config_result_t *res) {
  int32_t *pt = calloc((size_t)mi_space_dim_count(s), sizeof *pt), rc;
  mi_xf_config_t *c = NULL;
  mi_space_hw_t *hw = NULL;
  mi_worker_config_t wc;
  mi_measure_options_t mo;
  mi_error_t err = {0};
  mi_space_default(s, pt);
  for (int32_t d = 0; d < mi_space_dim_count(s); d++)
    if (strstr(mi_space_dim_name(s, d), ".precision") && tsu_value(s, d, label) >= 0)
      pt[d] = tsu_value(s, d, label);
  rc = mi_space_xf_config(s, pt, &c, &err);
  /* The hardware half as the tuner sends it (plugin defaults, host fallback allowed: the
   * QuantizeLinear of the graph input is a conversion the host runs). */
  if (rc == MI_OK) rc = mi_space_hw_create(s, pt, &hw, &err);
  mi_measure_options_default(&mo);
  mo.warmup = 1;
  mo.min_repeats = 5;
  mo.max_repeats = 7;
  mo.max_remeasure = 0;
  memset(&wc, 0, sizeof wc);
  wc.struct_size = sizeof wc;
  wc.model = model;
  wc.xf = c;
  wc.so = hw ? mi_space_hw_options(hw) : NULL;
  wc.seed = 1;
  wc.samples = 2;
  wc.accuracy = 1;
  memset(res, 0, sizeof *res);
  /* check = 1: the device's outputs must match the reference run of the transformed model. */
  if (rc == MI_OK) rc = mi_worker_profile_config(pool, spec, &wc, &mo, 1, prof, res, &err);
  CHECK(rc == MI_OK, "%s: %s", label, err.message);
  mi_xf_config_destroy(c);
  mi_space_hw_destroy(hw);
  free(pt);
  return rc;
}

/* Device time of node `name` in a profile, seconds (NAN when absent). */
static double layer_time(const mi_profile_t *p, const char *name) {
  for (int32_t i = 0; i < p->layer_count; i++)
    if (!strcmp(p->layers[i].name, name) && p->layers[i].has_device_time)
      return p->layers[i].device.median;
  return NAN;
}

/* A measurement bench for one plugin: the graph saved as <dir>/m.onnx, its space on device 0 and
 * a worker pool over the build's plugins. 1 when all three are there (each failure is a CHECK). */
typedef struct bench {
  char dir[64], model[128];
  mi_space_t *s;
  mi_worker_pool_t *pool;
} bench_t;

static int bench_open(bench_t *b, mi_plugin_t *p, const mi_graph_t *g, const char *plugin) {
  mi_worker_options_t o;
  mi_error_t err = {0};
  char plugins[512];
  memset(b, 0, sizeof *b);
  if (!p || !tu_tempdir(b->dir, sizeof b->dir, "space_act")) {
    CHECK(0, "%s or temp dir missing", plugin);
    return 0;
  }
  snprintf(b->model, sizeof b->model, "%s/m.onnx", b->dir);
  CHECK(mi_onnx_save(g, b->model, &err) == MI_OK, "%s", err.message);
  CHECK(mi_space_create(g, p, 0, NULL, &b->s, &err) == MI_OK, "%s", err.message);
  mi_worker_options_default(&o);
  o.plugin_dirs = tu_build_path(plugins, sizeof plugins, "plugins");
  o.timeout_s = 60;
  CHECK(b->s && mi_worker_pool_create(&o, &b->pool, &err) == MI_OK, "pool: %s", err.message);
  return b->s && b->pool;
}

static void bench_close(bench_t *b) {
  mi_worker_pool_destroy(b->pool);
  mi_space_destroy(b->s);
  if (b->dir[0]) tu_rmtree(b->dir);
}

static void test_npu_int8_path(mi_registry_t *r, mi_graph_t *g) {
  static const char *const labels[3] = {"fp32", "int8_channel", "int8_act"};
  mi_plugin_t *p = mi_registry_find(r, "npu-stub");
  mi_profile_t *prof[3] = {NULL, NULL, NULL};
  mi_worker_config_result_t res[3];
  bench_t b;
  int ok = bench_open(&b, p, g, "npu-stub");
  for (int i = 0; i < 3 && ok; i++)
    ok &= measure(b.pool, "npu-stub:0", b.s, b.model, labels[i], &prof[i], &res[i]) == MI_OK;
  if (ok) {
    for (int i = 0; i < 3; i++)
      fprintf(stderr,
              "npu-stub %-12s energy %.4f mJ  latency %.2f us  conv1 %.2f us  conv2 %.2f us  "
              "fc %.2f us  rel_l2 %.4g\n",
              labels[i], prof[i]->energy_j * 1e3, prof[i]->latency.stats.median * 1e6,
              layer_time(prof[i], "conv1") * 1e6, layer_time(prof[i], "conv2") * 1e6,
              layer_time(prof[i], "fc") * 1e6, res[i].rel_l2);
    /* The INT8 arrays run at 4x the FP16 MAC rate on half the bytes, so conv1 (the layer with
     * the most MACs) takes well under its float time; weight-only INT8 runs the float path
     * (dequantized weights) and takes the FP32 time. The gap separates the two paths, not the
     * timing noise (2%). Whole-model figures are printed, not asserted: they also carry the
     * conversions at the INT8 region's edges, which are the device's business. */
    {
      double t0 = layer_time(prof[0], "conv1"), t1 = layer_time(prof[1], "conv1"),
             t2 = layer_time(prof[2], "conv1");
      CHECK(t2 < 0.85 * t0, "conv1 at int8_act %.3g s, not below fp32's %.3g s", t2, t0);
      CHECK(fabs(t1 - t0) < 0.05 * t0,
            "conv1 weight-only int8 %.3g s against fp32 %.3g s: has it left the float path?", t1, t0);
    }
    /* The device ran the transformed model correctly (checked against the reference), and the
     * accuracy drop the tuner records includes the activations' quantization. */
    for (int i = 0; i < 3; i++)
      CHECK(prof[i]->checked && prof[i]->check_ok, "%s: device check failed (%.3g)", labels[i],
            prof[i]->check_error);
    /* The drop comes from the device's own outputs: FP32 is the device's rounding only. */
    CHECK(res[0].has_accuracy && res[0].rel_l2 >= 0 && res[0].rel_l2 < 1e-3, "fp32 drop %.3g",
          res[0].rel_l2);
    CHECK(res[2].has_accuracy && res[2].rel_l2 > 0 && res[2].rel_l2 < 0.2 &&
              res[2].rel_l2 > res[1].rel_l2,
          "int8_act drop %.4g (weight-only %.4g)", res[2].rel_l2, res[1].rel_l2);
  }
  for (int i = 0; i < 3; i++) mi_profile_destroy(prof[i]);
  bench_close(&b);
}

/* Prepares the small CNN with every weighted layer at int8_act (calibrated on the worker's
 * generated samples) on `plugin` with the space's default hardware choices, and returns how
 * many device kernels run a Conv or Gemm lowered with its Q/DQ nodes: the INT8 path (docs/
 * abi.md, "Quantized layers"). Prints the kernels and the refusals. -1 on failure. */
static int32_t lowered_layers(mi_registry_t *r, const mi_graph_t *g, const char *plugin) {
  mi_plugin_t *p = mi_registry_find(r, plugin);
  mi_space_t *s = NULL;
  mi_space_hw_t *hw = NULL;
  mi_xf_config_t *c = NULL;
  mi_xf_samples_t *smp = NULL;
  mi_variant_desc_t *vars = NULL;
  uint32_t nvar = 0;
  mi_graph_t *xg = NULL;
  mi_session_t *se = NULL;
  mi_xf_apply_opts_t ao;
  mi_error_t err = {0};
  int32_t *pt = NULL, rc, lowered = -1;
  rc = p ? mi_space_create(g, p, 0, NULL, &s, &err) : MI_ERR_NOT_FOUND;
  if (rc == MI_OK && !(pt = calloc((size_t)mi_space_dim_count(s), sizeof *pt)))
    rc = MI_ERR_OUT_OF_MEMORY;
  if (rc == MI_OK) {
    mi_space_default(s, pt);
    for (int32_t d = 0; d < mi_space_dim_count(s); d++)
      if (strstr(mi_space_dim_name(s, d), ".precision") && tsu_value(s, d, "int8_act") >= 0)
        pt[d] = tsu_value(s, d, "int8_act");
    rc = mi_space_repair(s, pt, NULL, &err);
  }
  if (rc == MI_OK) rc = mi_space_xf_config(s, pt, &c, &err);
  if (rc == MI_OK) rc = mi_space_hw_create(s, pt, &hw, &err);
  if (rc == MI_OK) rc = mi_xf_samples_random(g, 2, 1, &smp, &err);
  if (rc == MI_OK) rc = mi_plugin_variants(p, 0, &vars, &nvar, &err);
  memset(&ao, 0, sizeof ao);
  ao.calib = smp;
  ao.variants = vars;
  ao.variant_count = nvar;
  if (rc == MI_OK) rc = mi_xf_apply(g, c, &ao, &xg, NULL, &err);
  if (rc == MI_OK) rc = mi_session_create(xg, p, 0, mi_space_hw_options(hw), &se, &err);
  CHECK(rc == MI_OK, "%s: int8_act session: %s", plugin, err.message);
  if (rc == MI_OK) {
    lowered = 0;
    fprintf(stderr, "%s int8_act kernels:", plugin);
    for (int32_t k = 0; k < mi_session_kernel_count(se); k++) {
      const int32_t *nodes = NULL;
      int32_t n = mi_session_kernel_nodes(se, k, &nodes), weighted = 0, qdq = 0;
      fprintf(stderr, " [");
      for (int32_t i = 0; i < n; i++) {
        const mi_node_t *x = &xg->nodes[nodes[i]];
        weighted |= !strcmp(x->op_type, "Conv") || !strcmp(x->op_type, "Gemm");
        qdq |= !strcmp(x->op_type, "QuantizeLinear") || !strcmp(x->op_type, "DequantizeLinear");
        fprintf(stderr, "%s%s", i ? " " : "", x->name ? x->name : x->op_type);
      }
      fprintf(stderr, "]");
      lowered += weighted && qdq;
    }
    fprintf(stderr, "\n");
    for (int32_t i = 0; i < mi_session_unfused_count(se); i++)
      fprintf(stderr, "%s refused: %s\n", plugin, mi_session_unfused(se, i));
  }
  mi_session_destroy(se);
  mi_graph_destroy(xg);
  free(vars);
  mi_xf_samples_destroy(smp);
  mi_space_hw_destroy(hw);
  mi_xf_config_destroy(c);
  free(pt);
  mi_space_destroy(s);
  return lowered;
}

/* blis-cpu: the same configurations on its INT8 core (wall clock, so no timing assertion):
 * the device's outputs must match the reference, and the layer list says which ops ran. */
static void test_blis(mi_registry_t *r, mi_graph_t *g) {
  static const char *const labels[2] = {"fp32", "int8_act"};
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  mi_profile_t *prof[2] = {NULL, NULL};
  mi_worker_config_result_t res[2];
  bench_t b;
  int ok = bench_open(&b, p, g, "blis-cpu");
  for (int i = 0; i < 2 && ok; i++) {
    if (measure(b.pool, "blis-cpu:0", b.s, b.model, labels[i], &prof[i], &res[i]) != MI_OK) continue;
    CHECK(prof[i]->checked && prof[i]->check_ok, "blis %s: device check failed (%.3g)", labels[i],
          prof[i]->check_error);
    fprintf(stderr, "blis-cpu %-8s latency %.2f us, layers:", labels[i],
            prof[i]->latency.stats.median * 1e6);
    for (int32_t k = 0; k < prof[i]->layer_count; k++)
      fprintf(stderr, " %s(%s%s)", prof[i]->layers[k].name, prof[i]->layers[k].op_type,
              prof[i]->layers[k].where == 1 ? ",host" : "");
    fprintf(stderr, "\n");
  }
  for (int i = 0; i < 2; i++) mi_profile_destroy(prof[i]);
  bench_close(&b);
}

static mi_registry_t *r;
static mi_graph_t *g;

static void setup(void) {
  r = tsu_registry();
  g = tsu_small_cnn();
}

static void teardown(void) {
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

static void offer(void) {
  test_offer(r, g, "npu-stub");
  test_offer(r, g, "blis-cpu");
}

static void npu_int8_path(void) {
  test_npu_int8_path(r, g);
}

static void blis(void) {
  test_blis(r, g);
}

static void int8_lowering(void) {
  /* npu-stub lowers all three weighted layers (conv1, conv2, fc) to INT8 kernels. */
  int32_t n = lowered_layers(r, g, "npu-stub");
  CHECK(n == 3, "npu-stub: %d weighted layers on the INT8 path, want 3", (int)n);
  n = lowered_layers(r, g, "blis-cpu");
  fprintf(stderr, "blis-cpu: %d weighted layers on the INT8 core\n", (int)n);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(offer),
    TU_CASE(npu_int8_path),
    TU_CASE(blis),
    TU_CASE(int8_lowering),
};

TU_MAIN(setup, teardown)
