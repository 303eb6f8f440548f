/* test_exec_layout.c - graphs from the layout pass (NHWC / blocked NCHWc regions, Identity
 * conversions between them) run with the storage they ask for: conversions as device Transpose
 * kernels or on the host, nodes the device does not take in that layout on the host. */
#include "test_exec_util.h"

static int layout_node_on_host(const mi_session_t *s) {
  for (int32_t i = 0; i < mi_session_fallback_count(s); i++)
    if (strncmp(mi_session_fallback_node(s, i), "layout.", 7) == 0) return 1;
  return 0;
}

/* Runs the configured graph on p and on the reference; returns the rel. L2 between them. */
static double check(mi_plugin_t *p, const char *family, const char *yaml, double tol,
                    int want_device_converts) {
  mi_graph_t *g = zoo(family, 0.5, 2, 32), *x = transform(g, yaml, p);
  mi_array_t *in = input_for(g, 21), *got[4] = {0}, *want[4] = {0};
  mi_session_t *s = session(x, p);
  int32_t converts = 0;
  double d;
  for (int32_t i = 0; i < x->node_count; i++)
    converts += x->nodes[i].name && strncmp(x->nodes[i].name, "layout.", 7) == 0;
  run(s, x, in, got);
  ref(g, in, want); /* the untransformed model: layout changes nothing logically */
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s %s [%.*s]: %d conversions, %d kernels, %d host nodes, rel L2 %.2e\n", p->name,
         family, (int)strcspn(yaml, "\n"), yaml, converts, mi_session_kernel_count(s), mi_session_fallback_count(s), d);
  CHECK(converts >= 2, "the layout pass inserted conversions");
  CHECK(d < tol, "%s %s: rel L2 %.3e >= %.1e", p->name, family, d, tol);
  if (want_device_converts) CHECK(!layout_node_on_host(s), "conversions ran as device kernels");
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(x);
  mi_graph_destroy(g);
  return d;
}

static mi_registry_t *r;
static mi_plugin_t *blis, *npu;

static void setup(void) {
  r = open_plugins();
  blis = mi_registry_find(r, "blis-cpu");
  npu = mi_registry_find(r, "npu-stub");
  CHECK(npu != NULL || !tu_plugin_built("npu-stub"), "npu-stub was built but not loaded");
  CHECK(blis != NULL, "blis-cpu is loaded");
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void blis_layouts(void) {
  if (blis) {
    /* NHWC convs run in blis-cpu's conv.direct_nhwc, chosen because it declares NHWC. */
    check(blis, "resnet", "passes: {layout: nhwc}\n", 1e-5, 1);
    check(blis, "resnet", "passes: {fold_bn: true, fuse: true, layout: nhwc}\n", 1e-5, 1);
    check(blis, "mobilenetv2", "passes: {fold_bn: true, layout: nhwc}\n", 1e-5, 1);
    /* No blis-cpu variant takes NCHWc: the host runs those nodes on logical data, and the
     * stored buffers are packed and unpacked on the way (block 5 pads the channels). */
    check(blis, "resnet", "passes: {layout: nchwc, block: 8}\n", 1e-5, 0);
    check(blis, "resnet", "passes: {layout: nchwc, block: 5}\n", 1e-5, 0);
  }
}

/* A configuration made for NCHW (every node a variant that declares only NCHW, as the space
 * offers them per node) run in NHWC: a variant must never get storage it does not declare
 * (blis-cpu's GlobalAveragePool and broadcast Mul computed on NHWC memory as if NCHW), so the
 * session does not apply such a choice and the result matches the reference. */
static void blis_nchw_choices(void) {
  mi_graph_t *g, *x;
  mi_variant_desc_t *vars = NULL;
  uint32_t nvar = 0;
  mi_node_choice_t *ch;
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in, *got[4] = {0}, *want[4] = {0};
  mi_error_t err = {0};
  int32_t n = 0;
  double d;
  if (!blis) return;
  g = zoo("mobilenetv2", 0.5, 2, 32);
  x = transform(g, "passes: {layout: nhwc}\n", blis);
  REQUIRE(mi_plugin_variants(blis, 0, &vars, &nvar, &err) == MI_OK, "variants: %s", err.message);
  REQUIRE((ch = calloc((size_t)x->node_count + 1, sizeof *ch)) != NULL, "out of memory");
  for (int32_t i = 0; i < x->node_count; i++)
    for (uint32_t v = 0; v < nvar; v++)
      if (x->nodes[i].name && !strcmp(vars[v].op_type, x->nodes[i].op_type) &&
          !(vars[v].layout_mask & MI_LAYOUT_BIT(MI_LAYOUT_NHWC))) {
        ch[n].node = x->nodes[i].name;
        ch[n++].variant_id = vars[v].id;
        break;
      }
  CHECK(n > 5, "NCHW-only variants chosen for %d nodes", (int)n);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  o.choice_count = n;
  o.choices = ch;
  REQUIRE(mi_session_create(x, blis, 0, &o, &s, &err) == MI_OK, "session: %s", err.message);
  in = input_for(g, 5);
  run(s, x, in, got);
  ref(g, in, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("blis-cpu mobilenetv2 NHWC with %d NCHW-only choices: rel L2 %.2e\n", (int)n, d);
  CHECK(d < 1e-5, "rel L2 %.3e: a variant computed on storage it does not declare", d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  free(ch);
  free(vars);
  mi_graph_destroy(x);
  mi_graph_destroy(g);
}

/* x -> Relu -> Conv -> y in NHWC: the layout pass converts y back to NCHW with an Identity
 * right after the conv. The session's own fusion took that Identity for an epilogue no-op, so
 * blis-cpu wrote NHWC values into the NCHW output (rel L2 1.35; ppocr_v4_det's head, every
 * NHWC configuration of its tune failed the reference check). */
static void blis_conv_then_convert(void) {
  mi_graph_t *g, *x;
  int64_t xd[4] = {1, 8, 7, 9}, wd[4] = {3, 8, 3, 3};
  float w[216];
  int32_t in_t, w_t, r_t, y_t;
  mi_array_t *in, *got[4] = {0}, *want[4] = {0};
  mi_session_t *s;
  mi_error_t err = {0};
  double d;
  if (!blis) return;
  g = mi_graph_create("conv_convert");
  g->opset = 13;
  for (int i = 0; i < 216; i++) w[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
  in_t = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, in_t);
  w_t = mi_graph_add_const_f32(g, "w", 4, wd, w);
  r_t = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, -1, NULL);
  y_t = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu", 1, &in_t, 1, &r_t);
  mi_graph_add_node(g, "Conv", "conv", 2, (int32_t[]){r_t, w_t}, 1, &y_t);
  mi_graph_add_output(g, y_t);
  REQUIRE(mi_graph_toposort(g, &err) == MI_OK && mi_graph_infer_shapes(g, &err) == MI_OK,
          "graph: %s", err.message);
  x = transform(g, "passes: {layout: nhwc}\n", blis);
  in = input_for(g, 9);
  s = session(x, blis);
  run(s, x, in, got);
  ref(g, in, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("blis-cpu Relu -> Conv -> output in NHWC: %d kernels, rel L2 %.2e\n",
         mi_session_kernel_count(s), d);
  CHECK(d < 1e-5, "rel L2 %.3e: the conversion after the conv was not done", d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(x);
  mi_graph_destroy(g);
}

static void npu_nhwc(void) {
  /* npu-stub refuses every NHWC tensor: host fallback, FP16 elsewhere. */
  if (npu) check(npu, "resnet", "passes: {fold_bn: true, layout: nhwc}\n", 2e-2, 0);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(blis_layouts),
    TU_CASE(blis_nchw_choices),
    TU_CASE(blis_conv_then_convert),
    TU_CASE(npu_nhwc),
};

TU_MAIN(setup, teardown)
