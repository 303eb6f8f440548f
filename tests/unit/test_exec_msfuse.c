/* test_exec_msfuse.c - ONNX Runtime's transformer-optimizer fused ops (com.microsoft
 * SkipLayerNormalization, SkipSimplifiedLayerNormalization, FastGelu, BiasGelu, Gelu, QuickGelu,
 * BiasAdd; the default-domain SimplifiedLayerNormalization) and ONNX RMSNormalization / Swish: the
 * reference on values worked out by hand, inferred shapes equal to the run's; each op and form
 * written as a model, loaded (the loader lowers it to standard ops) and run on the reference equal
 * to the op's own reference, and on blis-cpu at every SIMD cap with no host fallback; malformed
 * nodes refused in one line naming the node. */
#include "test_msfuse_util.h"

/* SkipLayerNormalization, H = 2: each row's sum (a, b) normalises to (+-1, -+1) with epsilon 0.
 * input [[[1,2],[3,3]],[[0,0],[5,1]]] + skip [[1,0],[0,2]] (repeated over the batch) + bias
 * [0.5,-0.5] = rows (2.5,1.5) (3.5,4.5) (1.5,-0.5) (5.5,2.5); gamma [2,3], beta [0.5,-1]:
 * (1,-1) -> (2.5,-4), (-1,1) -> (-1.5,2); means 2, 4, 0.5, 4; inverse std 1/0.5, 1/0.5, 1/1, 1/1.5. */
static void skip_layernorm(void) {
  int64_t xd[3] = {2, 2, 2}, sd2[2] = {2, 2}, hd[1] = {2}, s1d[3] = {1, 2, 2};
  const float x[8] = {1, 2, 3, 3, 0, 0, 5, 1}, skip[4] = {1, 0, 0, 2}, gamma[2] = {2, 3}, beta[2] = {0.5f, -1},
              bias[2] = {0.5f, -0.5f};
  const float y[8] = {2.5f, -4, -1.5f, 2, 2.5f, -4, 2.5f, -4}, mean[4] = {2, 4, 0.5f, 4},
              inv[4] = {2, 2, 1, 1 / 1.5f}, sum[8] = {2.5f, 1.5f, 3.5f, 4.5f, 1.5f, -0.5f, 5.5f, 2.5f};
  const float *want[4] = {y, mean, inv, sum};
  mcase_t k = {"SkipLayerNormalization", "com.microsoft", 17, 5, {A(3, xd, x), A(2, sd2, skip), A(1, hd, gamma), A(1, hd, beta), A(1, hd, bias)}, 0x1c, 4, 0xf, {{"epsilon", 1, 0, NULL}}};
  check_case("skip LN hand, all outputs", &k, want, 1e-6f);
  /* the same, skip [1, 2, 2], output and sum only (mean and inv_std_var omitted in the middle) */
  const float *want2[4] = {y, NULL, NULL, sum};
  mcase_t k2 = {"SkipLayerNormalization", "com.microsoft", 17, 5, {A(3, xd, x), A(3, s1d, skip), A(1, hd, gamma), A(1, hd, beta), A(1, hd, bias)}, 0x1c, 4, 0x9, {{"epsilon", 1, 0, NULL}}};
  check_case("skip LN hand, skip [1,S,H], sum output", &k2, want2, 1e-6f);
  /* random: every optional input present or not, skip of the input's shape or [S, H], default epsilon */
  int64_t bd[3] = {2, 5, 24}, sk[2] = {5, 24}, h[1] = {24};
  for (int f = 0; f < 8; f++) {
    mcase_t r = {"SkipLayerNormalization", "com.microsoft", 17, (f & 2) ? 5 : (f & 1) ? 4
                                                                                      : 3,
                 {R(3, bd, 1 + f), (f & 4) ? R(2, sk, 2) : R(3, bd, 2), R(1, h, 3), (f & 1) ? R(1, h, 4) : NULL, (f & 2) ? R(1, h, 5) : NULL},
                 (f & 4) ? 0x1e : 0x1c,
                 1,
                 1,
                 {{0}}};
    char what[64];
    snprintf(what, sizeof what, "skip LN beta%d bias%d skip2d%d", f & 1, (f >> 1) & 1, (f >> 2) & 1);
    check_case(what, &r, NULL, 2e-6f);
  }
  /* 2-D input */
  mcase_t r2 = {"SkipLayerNormalization", "com.microsoft", 17, 5, {R(2, sk, 7), R(2, sk, 8), R(1, h, 9), R(1, h, 10), R(1, h, 11)}, 0x1c, 4, 0x9, {{"epsilon", 1, 1e-5, NULL}}};
  check_case("skip LN 2-D", &r2, NULL, 2e-6f);
}

/* SkipSimplifiedLayerNormalization: sums (1,7) and (2,-14) have RMS 5 and 10; gamma [2,3] gives
 * (0.4, 4.2) and (0.4, -4.2). Then random forms with a bias and the sum output. */
static void skip_simplified(void) {
  int64_t d[2] = {2, 2}, hd[1] = {2};
  const float x[4] = {1, 5, 2, -10}, skip[4] = {0, 2, 0, -4}, gamma[2] = {2, 3}, y[4] = {0.4f, 4.2f, 0.4f, -4.2f};
  const float *want[1] = {y};
  mcase_t k = {"SkipSimplifiedLayerNormalization", "com.microsoft", 17, 3, {A(2, d, x), A(2, d, skip), A(1, hd, gamma)}, 0x4, 1, 1, {{"epsilon", 1, 0, NULL}}};
  check_case("skip simplified LN hand", &k, want, 1e-6f);
  int64_t bd[3] = {3, 4, 40}, sk[3] = {1, 4, 40}, h[1] = {40};
  mcase_t r = {"SkipSimplifiedLayerNormalization", "com.microsoft", 17, 4, {R(3, bd, 21), R(3, sk, 22), R(1, h, 23), R(1, h, 24)}, 0xe, 4, 0x9, {{0}}};
  check_case("skip simplified LN bias, sum output", &r, NULL, 2e-6f);
}

/* RMSNormalization rows (1,1,1) and (2,2,-2): RMS 1 and 2; scale [1,2,3]: (1,2,3), (1,2,-3).
 * axis 0 over [2,2] of 3 * (1,-1,1,-1) (RMS 3) with a scale [2] broadcast: (a,-b,a,-b). */
static void rms_norm(void) {
  int64_t d[2] = {2, 3}, sd[1] = {3}, d2[2] = {2, 2}, s2[1] = {2};
  const float x[6] = {1, 1, 1, 2, 2, -2}, sc[3] = {1, 2, 3}, y[6] = {1, 2, 3, 1, 2, -3};
  const float x2[4] = {3, -3, 3, -3}, sc2[2] = {0.5f, 4}, y2[4] = {0.5f, -4, 0.5f, -4};
  const float *w1[1] = {y}, *w2[1] = {y2};
  mcase_t k = {"RMSNormalization", NULL, 23, 2, {A(2, d, x), A(1, sd, sc)}, 0x2, 1, 1, {{"epsilon", 1, 0, NULL}}};
  check_case("RMSNormalization hand", &k, w1, 1e-6f);
  mcase_t k2 = {"RMSNormalization", NULL, 23, 2, {A(2, d2, x2), A(1, s2, sc2)}, 0x2, 1, 1, {{"epsilon", 1, 0, NULL}, {"axis", 2, 0, NULL}}};
  /* axis 0 with a partly broadcast scale: the reference only (blis-cpu takes a full or scalar scale) */
  mi_array_t *rt[10], *o[1] = {0};
  int nrt;
  mi_error_t err = {0};
  mi_graph_t *g = code_graph(&k2, rt, &nrt);
  CHECK(ref_outs(g, rt, nrt, o, &err) == MI_OK, "RMS axis 0: %s", err.message);
  if (o[0]) expect_f32("RMSNormalization axis 0", o[0], 2, d2, w2[0], 1e-6f);
  mi_array_destroy(o[0]);
  mi_graph_destroy(g);
  free_case(&k2);
  /* random rows of odd lengths (the SIMD bodies' tails), a scalar scale, axis -2 */
  int64_t rd[3] = {3, 7, 37}, rs[1] = {37}, one[1] = {1}, rs2[2] = {7, 37};
  mcase_t r = {"RMSNormalization", NULL, 23, 2, {R(3, rd, 31), R(1, rs, 32)}, 0x2, 1, 1, {{0}}};
  check_case("RMSNormalization random", &r, NULL, 2e-6f);
  mcase_t r2 = {"RMSNormalization", NULL, 23, 2, {R(3, rd, 33), R(1, one, 34)}, 0x2, 1, 1, {{"epsilon", 1, 1e-3, NULL}}};
  check_case("RMSNormalization scalar scale", &r2, NULL, 2e-6f);
  mcase_t r3 = {"RMSNormalization", NULL, 23, 2, {R(3, rd, 35), R(2, rs2, 36)}, 0x2, 1, 1, {{"axis", 2, -2, NULL}}};
  check_case("RMSNormalization axis -2", &r3, NULL, 2e-6f);
  /* ONNX Runtime's default-domain SimplifiedLayerNormalization at opset 17: the same op */
  mcase_t s = {"SimplifiedLayerNormalization", NULL, 17, 2, {A(2, d, x), A(1, sd, sc)}, 0x2, 1, 1, {{"epsilon", 1, 0, NULL}}};
  check_case("SimplifiedLayerNormalization hand", &s, w1, 1e-6f);
}

/* FastGelu(x + bias) with x (0, 1, -1, 2) + bias (1, -1, 1, -2) = (1, 0, 0, 0): tanh Gelu(1) =
 * 0.8411920; BiasGelu: erf Gelu(1) = 0.8413447; QuickGelu (alpha 1.702) of x (0, 1, -1, 2):
 * 0, 0.8457958, -0.1542042, 2 / (1 + exp(-3.404)); Swish (alpha 1): 0, 0.7310586, -0.2689414. */
static void gelus(void) {
  int64_t d[2] = {1, 4}, hd[1] = {4};
  const float x[4] = {0, 1, -1, 2}, b[4] = {1, -1, 1, -2};
  const float fast[4] = {0.8411920f, 0, 0, 0}, erfg[4] = {0.8413447f, 0, 0, 0},
              quick[4] = {0, 0.8457958f, -0.1542042f, (float)(2 / (1 + exp(-3.404)))},
              swish[4] = {0, 0.7310586f, -0.2689414f, (float)(2 / (1 + exp(-2.0)))};
  const float *w[1];
  w[0] = fast;
  mcase_t k = {"FastGelu", "com.microsoft", 17, 2, {A(2, d, x), A(1, hd, b)}, 0x2, 1, 1, {{0}}};
  check_case("FastGelu hand", &k, w, 1e-6f);
  w[0] = erfg;
  mcase_t k2 = {"BiasGelu", "com.microsoft", 17, 2, {A(2, d, x), A(1, hd, b)}, 0x2, 1, 1, {{0}}};
  check_case("BiasGelu hand", &k2, w, 1e-6f);
  w[0] = quick;
  mcase_t k3 = {"QuickGelu", "com.microsoft", 17, 1, {A(2, d, x)}, 0, 1, 1, {{0}}};
  check_case("QuickGelu hand", &k3, w, 1e-6f);
  w[0] = swish;
  mcase_t k4 = {"Swish", NULL, 24, 1, {A(2, d, x)}, 0, 1, 1, {{0}}};
  check_case("Swish hand", &k4, w, 1e-6f);
  mcase_t k5 = {"QuickGelu", "com.microsoft", 17, 1, {A(2, d, x)}, 0, 1, 1, {{"alpha", 1, 1.0, NULL}}};
  check_case("QuickGelu alpha 1 (Sigmoid, Mul)", &k5, w, 1e-6f);
  int64_t rd[3] = {2, 3, 50}, rh[1] = {50};
  mcase_t r1 = {"FastGelu", "com.microsoft", 17, 1, {R(3, rd, 41)}, 0, 1, 1, {{0}}};
  check_case("FastGelu no bias", &r1, NULL, 2e-6f);
  mcase_t r2 = {"BiasGelu", "com.microsoft", 17, 2, {R(3, rd, 42), R(1, rh, 43)}, 0x2, 1, 1, {{0}}};
  check_case("BiasGelu random", &r2, NULL, 2e-6f);
  mcase_t r3 = {"Gelu", "com.microsoft", 17, 1, {R(3, rd, 44)}, 0, 1, 1, {{0}}};
  check_case("com.microsoft Gelu", &r3, NULL, 2e-6f);
  mcase_t r4 = {"Swish", NULL, 24, 1, {R(3, rd, 45)}, 0, 1, 1, {{"alpha", 1, 0.5, NULL}}};
  check_case("Swish alpha 0.5", &r4, NULL, 2e-6f);
  /* BiasAdd: (1, 2) + (10, 20) + (100, 200) */
  int64_t bd[3] = {1, 1, 2}, h2[1] = {2};
  const float bx[2] = {1, 2}, bb[2] = {10, 20}, bs[2] = {100, 200}, by[2] = {111, 222};
  w[0] = by;
  mcase_t k6 = {"BiasAdd", "com.microsoft", 17, 3, {A(3, bd, bx), A(1, h2, bb), A(3, bd, bs)}, 0x2, 1, 1, {{0}}};
  check_case("BiasAdd hand", &k6, w, 1e-6f);
}

static void malformed(void) {
  int64_t xd[3] = {2, 2, 4}, x4[4] = {1, 2, 2, 4}, hd[1] = {4}, h3[1] = {3}, bd2[2] = {1, 4};
  mcase_t a = {"SkipLayerNormalization", "com.microsoft", 17, 3, {R(4, x4, 1), R(4, x4, 2), R(1, hd, 3)}, 0x4, 1, 1, {{0}}};
  refused("skip LN rank 4", &a, "rank 4");
  mcase_t b = {"SkipLayerNormalization", "com.microsoft", 17, 3, {R(3, xd, 1), R(3, xd, 2), R(1, h3, 3)}, 0x4, 1, 1, {{0}}};
  refused("skip LN gamma length", &b, "gamma has 3 values");
  mcase_t c = {"SkipSimplifiedLayerNormalization", "com.microsoft", 17, 3, {R(3, xd, 1), R(3, xd, 2), R(1, hd, 3)}, 0x4, 3, 0x3, {{0}}};
  refused("skip simplified mean output", &c, "mean and inv_std_var");
  mcase_t d = {"SimplifiedLayerNormalization", NULL, 17, 2, {R(3, xd, 1), R(1, hd, 2)}, 0x2, 2, 0x3, {{0}}};
  refused("simplified LN inv_std_var", &d, "inv_std_var");
  mcase_t e = {"Swish", NULL, 23, 1, {R(3, xd, 1)}, 0, 1, 1, {{0}}};
  refused("Swish at opset 23", &e, "opset 24");
  mcase_t f = {"FastGelu", "com.microsoft", 17, 2, {R(3, xd, 1), R(2, bd2, 2)}, 0x2, 1, 1, {{0}}};
  refused("FastGelu 2-D bias", &f, "1-D");
  mcase_t g = {"BiasGelu", "com.microsoft", 17, 1, {R(3, xd, 1)}, 0, 1, 1, {{0}}};
  refused("BiasGelu without B", &g, "A and B");
  mcase_t h = {"SkipLayerNormalization", "com.microsoft", 17, 3, {R(3, xd, 1), R(3, xd, 2), R(1, hd, 3)}, 0x4, 1, 1, {{"epsilon", 1, -1, NULL}}};
  refused("skip LN negative epsilon", &h, "epsilon");
  /* the reference and shape inference refuse a stash_type they do not compute and a scale that
   * does not broadcast */
  op_case_t oc;
  mi_error_t err = {0};
  int64_t d2[2] = {2, 3}, s2[1] = {2}, s3[1] = {3};
  mi_array_t *ins[2] = {R(2, d2, 5), R(1, s3, 6)};
  case_begin(&oc, "RMSNormalization", 23, 2, ins, 0x2, 1);
  mi_node_set_int(oc.g, oc.node, "stash_type", 0);
  case_refused(&oc, MI_ERR_UNSUPPORTED, &err);
  CHECK(strstr(err.message, "stash_type") != NULL, "stash_type named: %s", err.message);
  mi_array_destroy(ins[1]);
  ins[1] = R(1, s2, 7);
  case_begin(&oc, "RMSNormalization", 23, 2, ins, 0x2, 1);
  case_refused(&oc, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "scale") != NULL, "scale named: %s", err.message);
  mi_array_destroy(ins[0]);
  mi_array_destroy(ins[1]);
}

static void setup(void) { g_reg = open_plugins(); }
static void teardown(void) { mi_registry_destroy(g_reg); }

/* blis-cpu's RMSNormalization at each SIMD cap against the reference (odd row lengths). */
static void rms_each(mi_plugin_t *p) {
  int64_t lens[4] = {1, 7, 64, 333};
  for (int i = 0; i < 4; i++) {
    int64_t xd[2] = {5, lens[i]}, sd[1] = {lens[i]};
    mi_graph_t *g = mi_graph_create("rms");
    int32_t x = tin(g, "x", MI_DTYPE_FLOAT32, 2, xd), y = tval(g, "y");
    mi_array_t *s = R(1, sd, 50 + (uint64_t)i);
    int32_t sc = mi_graph_add_const_f32(g, "scale", 1, sd, s->data);
    int32_t n = mi_graph_add_node(g, "RMSNormalization", "rms", 2, (int32_t[]){x, sc}, 1, &y);
    mi_node_set_float(g, n, "epsilon", 1e-6f);
    mi_graph_add_output(g, y);
    g->opset = 23;
    mi_error_t err = {0};
    CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "rms shapes: %s", err.message);
    mi_array_t *got[4] = {0}, *want[4] = {0};
    mi_session_t *ss = session(g, p);
    CHECK(mi_session_fallback_count(ss) == 0, "RMSNormalization runs on blis-cpu");
    mi_session_destroy(ss);
    run_both(g, p, 60 + (uint64_t)i, got, want);
    float d = max_abs(got[0], want[0]);
    CHECK(d < 2e-6f, "len %lld: blis-cpu vs reference max abs %.3g", (long long)lens[i], d);
    destroy_outs(got, want);
    mi_array_destroy(s);
    mi_graph_destroy(g);
  }
}

static void blis_rms(void) { on_blis_cpu_each_simd(rms_each); }

static const tu_case_t tu_cases[] = {TU_CASE(skip_layernorm), TU_CASE(skip_simplified), TU_CASE(rms_norm),
                                     TU_CASE(gelus), TU_CASE(malformed), TU_CASE(blis_rms)};

TU_MAIN(setup, teardown)
