/* test_blis_qops.c - blis-cpu's integer ops of quantized models (DynamicQuantizeLinear,
 * ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul, QLinearAdd, QLinearMul,
 * QLinearGlobalAveragePool, Cast from INT32): each graph runs in a session on blis-cpu:0 with
 * host fallback off and every output must equal mi_ref_run's byte for byte (same arithmetic);
 * attribute combinations the plugin does not run must be refused by blis-cpu. */
#include "test_blis_qops_util.h"

/* x (FLOAT32) -> DynamicQuantizeLinear -> ConvInteger (runtime zero point) -> Cast -> y, the
 * pattern of ONNX Runtime's dynamic quantization; weights UINT8 per-channel zero points or INT8. */
static void conv_integer(int u8w, int64_t group, int64_t stride, int64_t k) {
  mi_graph_t *g = graph(13);
  int64_t m = group == 6 ? 12 : 8; /* a depthwise conv with a channel multiplier of 2 */
  int64_t xd[4] = {1, 6, 11, 9}, wd[4] = {m, 6 / group, k, k}, pads[4] = {k / 2, k / 2, k / 2, k / 2};
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 4, xd), wdt = u8w ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  int32_t q[3] = {mi_graph_add_tensor(g, "xq", MI_DTYPE_UNDEFINED, -1, NULL), mi_graph_add_tensor(g, "xs", MI_DTYPE_UNDEFINED, -1, NULL),
                  mi_graph_add_tensor(g, "xz", MI_DTYPE_UNDEFINED, -1, NULL)};
  int32_t acc = mi_graph_add_tensor(g, "acc", MI_DTYPE_UNDEFINED, -1, NULL), y = out(g, "y");
  int32_t w = constant(g, "w", wdt, 4, wd, NULL);
  int32_t wz = u8w ? constant(g, "wz", wdt, 1, &m, NULL) : codec(g, "wz", wdt, 0);
  int32_t ci[4] = {q[0], w, q[2], wz};
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
  int32_t n = node(g, "ConvInteger", 4, ci, 1, &acc, 0);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "pads", 4, pads);
  int64_t st[2] = {stride, stride};
  mi_node_set_ints(g, n, "strides", 2, st);
  n = node(g, "Cast", 1, &acc, 1, &y, 0);
  mi_node_set_int(g, n, "to", 1);
  char name[96];
  snprintf(name, sizeof name, "ConvInteger %s group %lld stride %lld k %lld", u8w ? "u8 w" : "s8 w",
           (long long)group, (long long)stride, (long long)k);
  run_case(g, name, 0);
}

/* ConvInteger straight on UINT8 codes x with a constant zero point zx, UINT8 weights with one
 * zero point zw for every channel (0, 128, 255: the byte core's weight shift at both ends and
 * none), odd C * k * k, planes wider than one 64-column register block and tiles of rows. */
static int64_t g_u8_stride = 1; /* strides of conv_integer_u8 */
static void conv_integer_u8(int32_t zx, int32_t zw, int64_t c, int64_t k, int64_t h, int64_t wd_) {
  mi_graph_t *g = graph(13);
  int64_t xd[4] = {1, c, h, wd_}, wd[4] = {13, c, k, k}, pads[4] = {k / 2, k / 2, k / 2, k / 2};
  int64_t st[2] = {g_u8_stride, g_u8_stride};
  int32_t ci[4] = {input(g, "x", MI_DTYPE_UINT8, 4, xd), constant(g, "w", MI_DTYPE_UINT8, 4, wd, NULL),
                   codec(g, "xz", MI_DTYPE_UINT8, zx), codec(g, "wz", MI_DTYPE_UINT8, zw)};
  int32_t y = out(g, "y");
  int32_t n = node(g, "ConvInteger", 4, ci, 1, &y, 0);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_ints(g, n, "strides", 2, st);
  char name[96];
  snprintf(name, sizeof name, "ConvInteger u8 x zx %d, u8 w zw %d, %lldx%lldx%lld k %lld stride %lld", (int)zx, (int)zw,
           (long long)c, (long long)h, (long long)wd_, (long long)k, (long long)g_u8_stride);
  run_case(g, name, 0);
}

/* ONNX Runtime's dynamic conv with its float tail: DynamicQuantizeLinear -> ConvInteger (UINT8
 * weights, zero point 0 / 128 / 255 or per channel) -> Cast -> Mul by (x scale * w scale) [-> Add
 * bias [1,M,1,1]] [-> Add of a runtime residual] [-> Relu] (res 2: Relu, then the residual Add, a
 * residual block's join): one kernel for the conv and its tail (plus the quantize and the scale
 * product), every float equal to the unfused reference's bit for bit. */
static int64_t g_tail_c = 6; /* input channels of conv_integer_tail (6: group 6 is depthwise) */
static int g_tail_dq;        /* y also quantized by a DynamicQuantizeLinear (in the conv's kernel) */
static void conv_integer_tail(int bias, int relu, int64_t group, int32_t zw, int res) {
  mi_graph_t *g = graph(13);
  int64_t m = group == 6 ? 12 : 10, xd[4] = {1, g_tail_c, 13, 71}, wd[4] = {m, g_tail_c / group, 3, 3};
  int64_t pads[4] = {1, 1, 1, 1};
  int64_t bd[4] = {1, m, 1, 1}, rd[4] = {1, m, 13, 71};
  int32_t q[3], t[6];
  dynq_front(g, xd, q, t, 6);
  int32_t y = out(g, "y");
  int32_t wz = zw >= 0 ? codec(g, "wz", MI_DTYPE_UINT8, zw) : constant(g, "wz", MI_DTYPE_UINT8, 1, &m, NULL);
  int32_t ci[4] = {q[0], constant(g, "w", MI_DTYPE_UINT8, 4, wd, NULL), q[2], wz};
  int32_t sm[2] = {q[1], f32c(g, "ws", 0.0123f)}, mm[2] = {t[1], t[2]};
  int32_t last = relu ? t[4] : y, summed = res == 1 ? t[5] : last, scaled = bias ? t[3] : summed, ad[2] = {scaled, 0};
  int32_t ra[2] = {res ? input(g, "r", MI_DTYPE_FLOAT32, 4, rd) : -1, summed}, pa[2] = {t[5], ra[0]};
  node(g, "Mul", 2, sm, 1, &t[2], 0);
  int32_t n = node(g, "ConvInteger", 4, ci, 1, &t[0], 0);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, node(g, "Cast", 1, &t[0], 1, &t[1], 0), "to", 1);
  node(g, "Mul", 2, mm, 1, &scaled, 0);
  if (bias) {
    ad[1] = constant(g, "b", MI_DTYPE_FLOAT32, 4, bd, NULL);
    node(g, "Add", 2, ad, 1, &summed, 0);
  }
  if (res == 1) node(g, "Add", 2, ra, 1, &last, 0);
  if (relu) node(g, "Relu", 1, &last, 1, res == 2 ? &t[5] : &y, 0);
  if (res == 2) node(g, "Add", 2, pa, 1, &y, 0);
  if (g_tail_dq) dynq_back(g, y);
  char name[96];
  snprintf(name, sizeof name, "ConvInteger + float tail, bias %d relu %d group %lld zw %d residual %d dq %d", bias,
           relu, (long long)group, (int)zw, res, g_tail_dq);
  g_kernels = 3;
  run_case(g, name, 0);
  g_kernels = 0;
}

/* The head both tails below share: DynamicQuantizeLinear of x [1,6,13,71] -> ConvInteger (UINT8
 * weights [m,6/group,kh,3], zero point wz) -> Cast -> Mul by the scale product -> Add bias
 * [1,m,1,1], into t[4] of nt intermediates; returns the graph output y. */
static int32_t conv_int_head(mi_graph_t *g, int64_t group, int64_t kh, const int64_t *pads, int32_t wz, int32_t q[3],
                             int32_t *t, int nt) {
  int64_t m = group == 6 ? 12 : 10, xd[4] = {1, 6, 13, 71}, wd[4] = {m, 6 / group, kh, 3}, bd[4] = {1, m, 1, 1};
  dynq_front(g, xd, q, t, nt);
  int32_t y = out(g, "y");
  int32_t ci[4] = {q[0], constant(g, "w", MI_DTYPE_UINT8, 4, wd, NULL), q[2], codec(g, "wz", MI_DTYPE_UINT8, wz)};
  int32_t sm[2] = {q[1], f32c(g, "ws", 0.0123f)}, mm[2] = {t[1], t[2]};
  int32_t ba[2] = {t[3], constant(g, "b", MI_DTYPE_FLOAT32, 4, bd, NULL)};
  node(g, "Mul", 2, sm, 1, &t[2], 0);
  int32_t n = node(g, "ConvInteger", 4, ci, 1, &t[0], 0);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, node(g, "Cast", 1, &t[0], 1, &t[1], 0), "to", 1);
  node(g, "Mul", 2, mm, 1, &t[3], 0);
  node(g, "Add", 2, ba, 1, &t[4], 0);
  return y;
}

/* The dynamic form of a PP-OCRv4 conv: DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul ->
 * Add bias, then Mul and Add by constant scalars (a learnable affine block) and the hard-swish
 * written out, x * clip(x + 3, 0, 6) / 6 (by_sixth: * (1/6) instead of / 6), plain or depthwise
 * (group 6): one kernel for the conv and all of it, floats equal to the unfused reference's. */
static void conv_integer_hswish(int64_t group, int by_sixth) {
  mi_graph_t *g = graph(13);
  int64_t pads[4] = {1, 1, 1, 1};
  int32_t q[3], t[10], y = conv_int_head(g, group, 3, pads, 131, q, t, 10);
  int32_t am[2] = {f32c(g, "am", 1.0731f), t[4]}, ac[2] = {t[5], f32c(g, "ac", -0.0625f)};
  int32_t h3[2] = {t[6], f32c(g, "three", 3.f)}, cl[3] = {t[7], f32c(g, "lo", 0.f), f32c(g, "hi", 6.f)};
  int32_t hm[2] = {t[6], t[8]}, hd[2] = {t[9], f32c(g, "six", by_sixth ? 1.f / 6.f : 6.f)};
  node(g, "Mul", 2, am, 1, &t[5], 0);
  node(g, "Add", 2, ac, 1, &t[6], 0);
  node(g, "Add", 2, h3, 1, &t[7], 0);
  node(g, "Clip", 3, cl, 1, &t[8], 0);
  node(g, "Mul", 2, hm, 1, &t[9], 0);
  node(g, by_sixth ? "Mul" : "Div", 2, hd, 1, &y, 0);
  char name[96];
  snprintf(name, sizeof name, "ConvInteger + affine + hard-swish, group %lld, %s", (long long)group,
           by_sixth ? "* 1/6" : "/ 6");
  g_kernels = 3;
  run_case(g, name, 0);
  g_kernels = 0;
}

/* tf2onnx's dynamic layer: DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul -> Add bias, then
 * two activations in the conv's kernel: LeakyRelu -> Max against a constant (kind 0), Min -> Clip
 * (1), Max -> LeakyRelu (2); floats equal to the unfused reference's. dq: the output, still a
 * graph output, is also quantized by a DynamicQuantizeLinear for the next layer, which joins the
 * conv's kernel (its range taken as the tail writes); codes, scale and zero point equal too. */
static void conv_integer_acts(int64_t group, int kind, int dq) {
  mi_graph_t *g = graph(13);
  int64_t pads[4] = {0, 1, 0, 1};
  int32_t q[3], t[6], y = conv_int_head(g, group, 1, pads, 119, q, t, 6);
  static const char *const a0[3] = {"LeakyRelu", "Min", "Max"}, *const a1[3] = {"Max", "Clip", "LeakyRelu"};
  int32_t c0[2] = {t[4], f32c(g, "c0", 0.375f)}, c1[3] = {t[5], f32c(g, "c1", -0.0625f), f32c(g, "c2", 0.75f)};
  int32_t n0 = node(g, a0[kind], kind ? 2 : 1, c0, 1, &t[5], 0);
  int32_t n1 = node(g, a1[kind], (int[]){2, 3, 1}[kind], c1, 1, &y, 0);
  if (kind != 1) mi_node_set_float(g, kind ? n1 : n0, "alpha", 0.2f);
  if (dq) dynq_back(g, y);
  char name[96];
  snprintf(name, sizeof name, "ConvInteger + %s -> %s%s, group %lld", a0[kind], a1[kind],
           dq ? " -> DynamicQuantizeLinear" : "", (long long)group);
  g_kernels = 3;
  run_case(g, name, 0);
  g_kernels = 0;
}

/* DynamicQuantizeLinear -> MatMulInteger (batched A, INT8 or UINT8 B with per-column zero points,
 * K odd) -> Cast; also the scale and zero point outputs. */
static void matmul_integer(int u8w) {
  mi_graph_t *g = graph(13);
  int64_t xd[3] = {2, 5, 37}, bd[2] = {37, 19}, nn = 19;
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 3, xd), bdt = u8w ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  int32_t q[3] = {mi_graph_add_tensor(g, "xq", MI_DTYPE_UNDEFINED, -1, NULL), out(g, "xs"), out(g, "xz")};
  int32_t acc = mi_graph_add_tensor(g, "acc", MI_DTYPE_UNDEFINED, -1, NULL), y = out(g, "y");
  int32_t mi[4] = {q[0], constant(g, "b", bdt, 2, bd, NULL), q[2], constant(g, "bz", bdt, 1, &nn, NULL)};
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
  node(g, "MatMulInteger", 4, mi, 1, &acc, 0);
  mi_node_set_int(g, node(g, "Cast", 1, &acc, 1, &y, 0), "to", 1);
  run_case(g, u8w ? "MatMulInteger u8 B" : "MatMulInteger s8 B", 0);
}

/* ONNX Runtime's dynamic MatMul with its float tail: DynamicQuantizeLinear -> MatMulInteger (B
 * UINT8 or INT8, a zero point per column) -> Cast -> Mul by (x scale * B scale) [-> Add of a
 * bias along the last axis, [19] or [1, 19]] [-> an activation: act 1 Relu, 2 Clip(-0.5, 0.5), 3
 * Gelu]: one kernel for the GEMM and its tail (plus the quantize and the scale product), every
 * float equal to the unfused reference's bit for bit (Gelu, with the plugin's own vector erf:
 * within 1e-6 relative L2). */
/* matmul_integer_tail_act's B as trained weights, |w| <= 30 (INT8, zero point 0; UINT8: zero point
 * 130, odd columns with one weight at -130, which the byte core's per-column shift brings in) */
static int g_mm_small;
static void matmul_integer_tail_act(int bias, int u8w, int act) {
  mi_graph_t *g = graph(13);
  int64_t xd[3] = {2, 5, 37}, bd[2] = {37, 19}, nn = 19, b2[2] = {1, 19};
  uint8_t wv[37 * 19], zv[19] = {0};
  for (int i = 0; g_mm_small && i < 37 * 19; i++) wv[i] = (uint8_t)((int32_t)(rnd32() % 61) - 30 + (u8w ? 130 : 0));
  for (int j = 0; g_mm_small && u8w && j < 19; j++) { /* zero point 130; a 0 in odd columns: -130, the byte core's shift */
    zv[j] = 130;
    if (j % 2) wv[(j * 5 % 37) * 19 + j] = 0;
    if (j % 2 && (j * 5 % 37 ^ 1) < 37) wv[(j * 5 % 37 ^ 1) * 19 + j] = 135; /* its pair: no saturation */
  }
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 3, xd), bdt = u8w ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  int32_t q[3] = {mi_graph_add_tensor(g, "xq", MI_DTYPE_UNDEFINED, -1, NULL), mi_graph_add_tensor(g, "xs", MI_DTYPE_UNDEFINED, -1, NULL),
                  mi_graph_add_tensor(g, "xz", MI_DTYPE_UNDEFINED, -1, NULL)};
  int32_t t[3], y = out(g, "y");
  for (int i = 0; i < 3; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "t%d", i);
    t[i] = mi_graph_add_tensor(g, nm, MI_DTYPE_UNDEFINED, -1, NULL);
  }
  int32_t acc = mi_graph_add_tensor(g, "acc", MI_DTYPE_UNDEFINED, -1, NULL), sc = mi_graph_add_tensor(g, "sc", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t mi[4] = {q[0], constant(g, "b", bdt, 2, bd, g_mm_small ? wv : NULL), q[2],
                   constant(g, "bz", bdt, 1, &nn, g_mm_small ? zv : NULL)};
  int32_t sm[2] = {q[1], f32c(g, "ws", 0.0123f)}, mm[2] = {t[0], sc};
  int32_t ad[2] = {t[1], bias == 2 ? constant(g, "bias", MI_DTYPE_FLOAT32, 2, b2, NULL) : constant(g, "bias", MI_DTYPE_FLOAT32, 1, &nn, NULL)};
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
  node(g, "Mul", 2, sm, 1, &sc, 0);
  node(g, "MatMulInteger", 4, mi, 1, &acc, 0);
  mi_node_set_int(g, node(g, "Cast", 1, &acc, 1, &t[0], 0), "to", 1);
  node(g, "Mul", 2, mm, 1, bias ? &t[1] : act ? &t[2]
                                              : &y,
       0);
  if (bias) node(g, "Add", 2, ad, 1, act ? &t[2] : &y, 0);
  if (act == 2) {
    int32_t cl[3] = {t[2], f32c(g, "lo", -0.5f), f32c(g, "hi", 0.5f)};
    node(g, "Clip", 3, cl, 1, &y, 0);
  } else if (act) {
    node(g, act == 1 ? "Relu" : "Gelu", 1, &t[2], 1, &y, 0);
  }
  char name[96];
  snprintf(name, sizeof name, "MatMulInteger + float tail, bias %d, %s B%s, activation %d", bias, u8w ? "u8" : "s8",
           g_mm_small ? " (small)" : "", act);
  g_kernels = 3;
  g_tol = act == 3 ? 1e-6 : 0;
  run_case(g, name, 0);
  g_kernels = 0;
  g_tol = 0;
}

static void matmul_integer_tail(int bias, int u8w) { matmul_integer_tail_act(bias, u8w, 0); }
/* MatMulInteger on codes x [m, k] (UINT8, or INT8 when s8x) with the constant zero point zx, and
 * weights as trained ones look (small, |w| <= 30) but for `sat` pairs of weights that vpmaddubsw
 * would saturate with codes at the ends of their range (127 and 127 or 2, -128 and -128 or -1, at
 * both places of a k quad and in its last, partial one); UINT8 weights with zero point wz shift
 * them (wz < 0: INT8 weights, zero point 0). Half the codes are at the ends of their range, an
 * eighth zx: the AVX2 byte core and its fixes (blis_qgemm256.c), odd m, n and k, then Cast and
 * Mul by a scale (and an Add of a bias, then a Relu, or Cast alone: g_sat_tail); at each SIMD level, 1 and 2
 * threads. */
/* k x n INT8 weights as trained ones look (|w| <= 30) but for `sat` pairs (rows kr, kr + 1 of a
 * column: one pair of a k quad) that vpmaddubsw would saturate with codes at the ends of their
 * range: 127 and 127 or 2, -128 and -128 or -1; the first in the last pair of rows. malloc'ed. */
static int8_t *sat_weights(int64_t k, int64_t n, int sat) {
  static const int8_t ends[4][2] = {{127, 127}, {-128, -128}, {127, 2}, {-128, -1}};
  int8_t *w = malloc((size_t)(k * n));
  int64_t i;
  REQUIRE(w);
  for (i = 0; i < k * n; i++) w[i] = (int8_t)((int32_t)(rnd32() % 61) - 30);
  for (i = 0; i < sat; i++) {
    int64_t j = (i * 7 + 3) % n, kr = i == 0 ? (k - 2) / 2 * 2 : (int64_t)(rnd32() % (uint32_t)(k / 2)) * 2;
    w[kr * n + j] = ends[i % 4][0];
    w[(kr + 1) * n + j] = ends[i % 4][1];
  }
  return w;
}

static int g_sat_tail; /* matmul_integer_sat's tail: 0 Cast -> Mul, 1 then Add of a bias [n], 2 Cast alone, 3 as 1 then Relu */
/* matmul_integer_sat with UINT8 weights: even columns also hold bytes 0 and 255 (values -wz and
 * 255 - wz, which fit INT8 only with the byte core's per-column shift) */
static int g_sat_span;
static void matmul_integer_sat(int64_t m, int64_t k, int64_t n, int32_t zx, int s8x, int32_t wz, int sat) {
  mi_graph_t *g = graph(13);
  int64_t xd[2] = {m, k}, bd[2] = {k, n}, i;
  int8_t *w = sat_weights(k, n, sat);
  if (wz >= 0)
    for (i = 0; i < k * n; i++) w[i] = (int8_t)(uint8_t)(w[i] + wz < 0 ? 0 : w[i] + wz > 255 ? 255
                                                                                             : w[i] + wz);
  for (i = 0; g_sat_span && wz >= 0 && i < n; i += 2) {
    w[(i % k) * n + i] = 0;
    w[((i + 3) % k) * n + i] = (int8_t)(uint8_t)255;
  }
  int32_t xdt = s8x ? MI_DTYPE_INT8 : MI_DTYPE_UINT8, wdt = wz >= 0 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  int32_t mi[4] = {input(g, "x", xdt, 2, xd), constant(g, "b", wdt, 2, bd, w), codec(g, "xz", xdt, zx),
                   codec(g, "bz", wdt, wz >= 0 ? wz : 0)};
  int32_t acc = mi_graph_add_tensor(g, "acc", MI_DTYPE_UNDEFINED, -1, NULL), f = mi_graph_add_tensor(g, "f", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t y = out(g, "y"), sc = g_sat_tail % 2 ? mi_graph_add_tensor(g, "sc", MI_DTYPE_UNDEFINED, -1, NULL) : y;
  int32_t r = g_sat_tail == 3 ? mi_graph_add_tensor(g, "r", MI_DTYPE_UNDEFINED, -1, NULL) : y;
  int32_t mm[2] = {f, f32c(g, "s", 0.0123f)}, ad[2] = {sc, constant(g, "bias", MI_DTYPE_FLOAT32, 1, &n, NULL)};
  uint8_t *xb = malloc((size_t)(m * k));
  REQUIRE(xb);
  for (i = 0; i < m * k; i++) { /* the ends of the codes' range half the time, zx an eighth */
    uint32_t r = rnd32();
    xb[i] = r % 8 < 2 ? (uint8_t)(s8x ? 127 : 255) : r % 8 < 4 ? (uint8_t)(s8x ? 0x80 : 0)
                                                 : r % 8 == 4  ? (uint8_t)zx
                                                               : (uint8_t)(r >> 8);
  }
  free(w);
  node(g, "MatMulInteger", 4, mi, 1, &acc, 0);
  mi_node_set_int(g, node(g, "Cast", 1, &acc, 1, g_sat_tail == 2 ? &y : &f, 0), "to", 1);
  if (g_sat_tail != 2) node(g, "Mul", 2, mm, 1, &sc, 0);
  if (g_sat_tail % 2) node(g, "Add", 2, ad, 1, &r, 0);
  if (g_sat_tail == 3) node(g, "Relu", 1, &r, 1, &y, 0); /* the activation after the core's own float tail */
  char name[160];
  snprintf(name, sizeof name, "MatMulInteger %lldx%lldx%lld, %s x zx %d, wz %d%s, %d saturating pairs, tail %d, threads %d",
           (long long)m, (long long)k, (long long)n, s8x ? "s8" : "u8", (int)zx, (int)wz, g_sat_span ? " (0..255)" : "", sat,
           g_sat_tail, (int)g_threads);
  g_x0b = xb;
  g_x0n = m * k;
  run_case(g, name, 0);
  g_x0b = NULL;
  free(xb);
}

static void matmul_integer_sat_cases(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  for (int lv = 0; lv < 3; lv++) {
    mi_plugin_t *keep = g_blis;
    mi_registry_t *reg = open_capped(caps[lv]);
    for (g_threads = 1; g_threads <= 2; g_threads++) {
      matmul_integer_sat(13, 301, 37, 0, 0, -1, 6);
      matmul_integer_sat(13, 301, 37, 128, 0, -1, 6);
      matmul_integer_sat(13, 301, 37, 255, 0, -1, 6);
      matmul_integer_sat(7, 257, 45, 3, 1, -1, 8);     /* INT8 codes */
      matmul_integer_sat(11, 299, 41, 131, 0, 100, 4); /* UINT8 weights: shifted */
      matmul_integer_sat(1, 37, 19, 0, 0, -1, 0);      /* M = 1, no room for fixes */
      matmul_integer_sat(17, 5, 1000, 255, 0, -1, 4);  /* k of one quad and a bit */
      matmul_integer_sat(23, 64, 33, 7, 0, -1, 2);
      matmul_integer_sat(207, 288, 40, 120, 0, -1, 10);
      matmul_integer_sat(6, 3, 2048, 0, 0, -1, 5);
      matmul_integer_sat(5, 1024, 16, 255, 0, -1, 24); /* too many: the int16 core */
      for (g_sat_tail = 1; g_sat_tail <= 3; g_sat_tail++) {
        matmul_integer_sat(13, 301, 37, 128, 0, -1, 6);
        matmul_integer_sat(11, 299, 41, 131, 0, 100, 4);
        matmul_integer_sat(207, 288, 40, 120, 0, -1, 10);
      }
      /* shifted UINT8 weights (the VNNI and AVX2 cores' shift on their tiles), over several
       * column blocks and a partial one, rows off the register blocks, INT8 codes too, each tail */
      g_sat_span = 1;
      for (g_sat_tail = 0; g_sat_tail <= 3; g_sat_tail++) {
        matmul_integer_sat(207, 288, 150, 120, 0, 100, 0);
        matmul_integer_sat(13, 37, 70, 3, 1, 140, 2);
      }
      g_sat_span = 0;
      g_sat_tail = 0;
    }
    g_threads = 0;
    mi_registry_destroy(reg);
    unsetenv("MI_BLIS_MAX_SIMD");
    g_blis = keep;
  }
}

/* ConvInteger on codes x [1, c, h, w] (UINT8, or INT8 when s8x) with the constant zero point zx:
 * the AVX2 byte conv (blis_qgemm.c's b256: byte columns, blis_qcol256.c, through the core of
 * blis_qgemm256.c). Weights as trained ones look (|w| <= 30) but for `sat` pairs (k, k + 1 of an
 * output channel, k even: one pair of a k quad) that vpmaddubsw would saturate with codes at the
 * ends of their range, the first in the channel's last pair; wz >= 0: UINT8 weights, those plus
 * 128 with zero point wz (below 128 the channels with a saturating pair span past 127: the byte
 * core's per-channel weight shift; wz < 0: INT8 weights, zero point 0). Half the codes at the ends of their range, an
 * eighth zx. Tails: 0 Cast, 1 Cast -> Mul -> Add bias [1,m,1,1] -> Relu, 2 none (INT32 sums),
 * 3 Cast -> Mul -> DynamicQuantizeLinear whose floats nothing else reads (the codes straight from
 * the sums: two passes, the second split over channel panels). */
typedef struct csat {
  int64_t c, h, w, m, k, s, pad, dil, group;
  int32_t zx, s8x, wz, sat, tail;
} csat_t;

static void conv_integer_sat(const csat_t *t) {
  mi_graph_t *g = graph(13);
  int64_t cg = t->c / t->group, kk = cg * t->k * t->k, xd[4] = {1, t->c, t->h, t->w}, wd[4] = {t->m, cg, t->k, t->k};
  int64_t pads[4] = {t->pad, t->pad, t->pad, t->pad}, st[2] = {t->s, t->s}, dl[2] = {t->dil, t->dil};
  int64_t bd[4] = {1, t->m, 1, 1}, i, xn = t->c * t->h * t->w;
  static const int8_t ends[4][2] = {{127, 127}, {-128, -128}, {127, 2}, {-128, -1}};
  int8_t *w = malloc((size_t)(kk * t->m));
  uint8_t *xb = malloc((size_t)xn);
  REQUIRE(w && xb);
  for (i = 0; i < kk * t->m; i++) w[i] = (int8_t)((int32_t)(rnd32() % 61) - 30);
  for (i = 0; i < t->sat; i++) {
    int64_t j = (i * 7 + 3) % t->m, kr = i == 0 ? (kk - 2) / 2 * 2 : (int64_t)(rnd32() % (uint32_t)(kk / 2)) * 2;
    w[j * kk + kr] = ends[i % 4][0];
    w[j * kk + kr + 1] = ends[i % 4][1];
  }
  if (t->wz >= 0) /* UINT8 bytes w + 128 with zero point wz: values w + 128 - wz, shifted where they pass 127 */
    for (i = 0; i < kk * t->m; i++) w[i] = (int8_t)(uint8_t)(w[i] + 128);
  for (i = 0; i < xn; i++) {
    uint32_t r = rnd32();
    xb[i] = r % 8 < 2 ? (uint8_t)(t->s8x ? 127 : 255) : r % 8 < 4 ? (uint8_t)(t->s8x ? 0x80 : 0)
                                                    : r % 8 == 4  ? (uint8_t)t->zx
                                                                  : (uint8_t)(r >> 8);
  }
  int32_t xdt = t->s8x ? MI_DTYPE_INT8 : MI_DTYPE_UINT8, wdt = t->wz >= 0 ? MI_DTYPE_UINT8 : MI_DTYPE_INT8;
  int32_t ci[4] = {input(g, "x", xdt, 4, xd), constant(g, "w", wdt, 4, wd, w), codec(g, "xz", xdt, t->zx),
                   codec(g, "wz", wdt, t->wz >= 0 ? t->wz : 0)};
  free(w);
  int32_t acc = t->tail == 2 ? out(g, "y") : mi_graph_add_tensor(g, "acc", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = node(g, "ConvInteger", 4, ci, 1, &acc, 0);
  mi_node_set_int(g, n, "group", t->group);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_ints(g, n, "dilations", 2, dl);
  if (t->tail != 2) {
    int32_t f = t->tail == 0 ? out(g, "y") : mi_graph_add_tensor(g, "f", MI_DTYPE_UNDEFINED, -1, NULL);
    mi_node_set_int(g, node(g, "Cast", 1, &acc, 1, &f, 0), "to", 1);
    if (t->tail == 1) {
      int32_t sc = mi_graph_add_tensor(g, "sc", MI_DTYPE_UNDEFINED, -1, NULL), b = mi_graph_add_tensor(g, "b", MI_DTYPE_UNDEFINED, -1, NULL);
      int32_t y = out(g, "y"), mm[2] = {f, f32c(g, "s", 0.0123f)}, ad[2] = {sc, constant(g, "bias", MI_DTYPE_FLOAT32, 4, bd, NULL)};
      node(g, "Mul", 2, mm, 1, &sc, 0);
      node(g, "Add", 2, ad, 1, &b, 0);
      node(g, "Relu", 1, &b, 1, &y, 0);
    } else if (t->tail == 3) {
      int32_t sc = mi_graph_add_tensor(g, "sc", MI_DTYPE_UNDEFINED, -1, NULL), mm[2] = {f, f32c(g, "s", -0.0123f)};
      int32_t qo[3] = {out(g, "yq"), out(g, "ys"), out(g, "yz")};
      node(g, "Mul", 2, mm, 1, &sc, 0);
      node(g, "DynamicQuantizeLinear", 1, &sc, 3, qo, 0);
    }
  }
  char name[200];
  snprintf(name, sizeof name,
           "ConvInteger %lldx%lldx%lld -> %lld, k %lld stride %lld pad %lld dil %lld group %lld, %s x zx %d, wz %d, "
           "%d saturating pairs, tail %d, threads %d",
           (long long)t->c, (long long)t->h, (long long)t->w, (long long)t->m, (long long)t->k, (long long)t->s,
           (long long)t->pad, (long long)t->dil, (long long)t->group, t->s8x ? "s8" : "u8", (int)t->zx, (int)t->wz,
           (int)t->sat, (int)t->tail, (int)g_threads);
  g_x0b = xb;
  g_x0n = xn;
  run_case(g, name, 0);
  g_x0b = NULL;
  free(xb);
}

/* conv_integer_sat over the byte conv's geometry at each SIMD level, 1 and 2 threads: 3x3 at
 * strides 1 and 2, pads, dilation 2, groups, 1x1 (a flat span, and at stride 2), the first layer
 * of an image model (3 channels), odd channel counts (37, 19 outputs: two panels and a partial
 * one; 61 inputs: a partial quad), zero points 0 / 128 / 255 (UINT8) and -128 / 3 / 127 (INT8),
 * planes over several row tiles and rows of 151 pixels (32-code steps and the tail of a 256-pixel
 * chunk), shifted UINT8 weights, a fix list near its limit (one pair in 1024 weights) and one far
 * past it (the int16 core), every tail. */
static void conv_integer_sat_cases(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  static const csat_t cs[] = {
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 0, 0, -1, 10, 0}, /* kk 288, 37 outputs: limit 10 */
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 128, 0, -1, 6, 1},
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 255, 0, 100, 6, 2}, /* UINT8 weights: shifted */
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 77, 0, 0, 6, 1},
      {32, 13, 37, 37, 3, 1, 1, 1, 1, -128, 1, -1, 6, 0}, /* INT8 codes */
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 127, 1, 131, 6, 1},
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 3, 1, -1, 200, 0},  /* too many: the int16 core */
      {32, 13, 37, 37, 3, 1, 1, 1, 1, 7, 0, 100, 200, 2}, /* too many, shifted */
      {32, 17, 29, 19, 3, 2, 1, 1, 1, 9, 0, -1, 5, 1},    /* stride 2 */
      {32, 17, 29, 19, 3, 1, 2, 2, 1, 200, 0, -1, 5, 0},  /* dilation 2, pad 2 */
      {32, 11, 23, 38, 3, 1, 1, 1, 2, 5, 0, -1, 5, 1},    /* two groups of 19 outputs */
      {61, 9, 21, 23, 1, 1, 0, 1, 1, 17, 0, -1, 1, 1},    /* 1x1 flat, kk 61 */
      {61, 9, 21, 23, 1, 1, 0, 1, 1, 128, 0, 60, 1, 2},
      {61, 9, 21, 23, 1, 2, 0, 1, 1, 250, 1, -1, 1, 0},  /* 1x1 stride 2 */
      {3, 33, 40, 24, 3, 2, 1, 1, 1, 128, 0, 120, 0, 1}, /* first layer, kk 27 */
      {3, 33, 40, 24, 3, 2, 1, 1, 1, 0, 1, 128, 0, 0},
      {7, 64, 64, 40, 3, 1, 1, 1, 1, 31, 0, -1, 1, 3}, /* kk 63, a 640 KiB float plane: codes from the sums */
      {7, 64, 64, 40, 3, 1, 1, 1, 1, 255, 0, 20, 1, 3},
      {32, 60, 40, 20, 3, 1, 1, 1, 1, 66, 0, -1, 5, 1}, /* three row tiles */
      {8, 5, 301, 17, 3, 2, 1, 1, 1, 0, 0, -1, 1, 1},   /* 151 columns at stride 2 */
      {8, 4, 300, 17, 3, 1, 1, 1, 1, 255, 1, -1, 1, 0}, /* 300 columns: a 256-pixel chunk and a tail */
  };
  for (int lv = 0; lv < 3; lv++) {
    mi_plugin_t *keep = g_blis;
    mi_registry_t *reg = open_capped(caps[lv]);
    for (g_threads = 1; g_threads <= 2; g_threads++)
      for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) conv_integer_sat(&cs[i]);
    g_threads = 0;
    mi_registry_destroy(reg);
    unsetenv("MI_BLIS_MAX_SIMD");
    g_blis = keep;
  }
}

/* matmul_integer_sat on the AVX2 byte core's edges: k and n of 1..17 (one partial quad, one partial
 * panel, m off the 6-row blocks), and B panels past one 192 KiB column group (k = 1024, 1152: the
 * groups end inside the fix list and off a panel) with every tail; at each SIMD level, 1 and 2
 * threads. */
static void matmul_integer_edge_cases(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  for (int lv = 0; lv < 3; lv++) {
    mi_plugin_t *keep = g_blis;
    mi_registry_t *reg = open_capped(caps[lv]);
    for (g_threads = 1; g_threads <= 2; g_threads++) {
      for (g_sat_tail = 0; g_sat_tail <= 3; g_sat_tail++) {
        matmul_integer_sat(7, 1, 1, 3, 0, -1, 0);
        matmul_integer_sat(6, 2, 8, 0, 0, -1, 0);
        matmul_integer_sat(12, 3, 15, 255, 0, -1, 0);
        matmul_integer_sat(13, 4, 16, 5, 1, -1, 0);
        matmul_integer_sat(19, 7, 17, 9, 0, 100, 0);
        matmul_integer_sat(37, 8, 1, 200, 0, -1, 0);
        matmul_integer_sat(2, 1152, 200, 77, 0, -1, 40);
        matmul_integer_sat(25, 1024, 397, 5, 0, 100, 30);
      }
      g_sat_tail = 0;
    }
    g_threads = 0;
    mi_registry_destroy(reg);
    unsetenv("MI_BLIS_MAX_SIMD");
    g_blis = keep;
  }
}

/* QLinearConv on codes: per-channel INT8 weight scales, INT32 bias; UINT8 or INT8 activations. */
static void qlinear_conv_at(int32_t dt, int64_t k, int64_t group, int64_t c, int64_t h, int64_t w,
                            int64_t stride) {
  mi_graph_t *g = graph(13);
  int64_t xd[4] = {2, c, h, w}, wd[4] = {8, c / group, k, k}, m = 8, pads[4] = {k / 2, k / 2, k / 2, k / 2};
  int64_t st[2] = {stride, stride};
  float ws[8];
  int64_t taps = c / group * k * k; /* wider sums, smaller weight scales: codes stay in range */
  for (int i = 0; i < 8; i++) ws[i] = 0.002f * (float)(i + 1) * (taps > 72 ? 72.f / (float)taps : 1.f);
  int32_t ci[9] = {input(g, "x", dt, 4, xd), f32c(g, "xs", 0.05f), codec(g, "xz", dt, dt == MI_DTYPE_UINT8 ? 131 : -3),
                   constant(g, "w", MI_DTYPE_INT8, 4, wd, NULL), constant(g, "ws", MI_DTYPE_FLOAT32, 1, &m, ws),
                   codec(g, "wz", MI_DTYPE_INT8, 0), f32c(g, "ys", 0.37f), codec(g, "yz", dt, dt == MI_DTYPE_UINT8 ? 120 : 5),
                   constant(g, "b", MI_DTYPE_INT32, 1, &m, NULL)};
  int32_t y = out(g, "y"), n = node(g, "QLinearConv", 9, ci, 1, &y, 0);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "strides", 2, st);
  char name[128];
  snprintf(name, sizeof name, "QLinearConv %s k %lld group %lld, %lldx%lldx%lld stride %lld",
           dt == MI_DTYPE_UINT8 ? "u8" : "s8", (long long)k, (long long)group, (long long)c, (long long)h,
           (long long)w, (long long)stride);
  run_case(g, name, 0);
}

static void qlinear_conv(int32_t dt, int64_t k, int64_t group) { qlinear_conv_at(dt, k, group, 8, 10, 10, 1); }

/* QLinearMatMul: INT8 codes, per-column B scales; with a per-row A scale blis-cpu refuses. */
static void qlinear_matmul(int per_row) {
  mi_graph_t *g = graph(13);
  int64_t ad[2] = {3, 40}, bd[2] = {40, 33}, nn = 33, rows = 3;
  float bs[33], as[3] = {0.02f, 0.03f, 0.04f};
  for (int i = 0; i < 33; i++) bs[i] = 0.001f * (float)(i + 3);
  int32_t mi[8] = {input(g, "a", MI_DTYPE_INT8, 2, ad),
                   per_row ? constant(g, "as", MI_DTYPE_FLOAT32, 1, &rows, as) : f32c(g, "as", 0.02f),
                   codec(g, "az", MI_DTYPE_INT8, 2), constant(g, "b", MI_DTYPE_INT8, 2, bd, NULL),
                   constant(g, "bs", MI_DTYPE_FLOAT32, 1, &nn, bs), codec(g, "bz", MI_DTYPE_INT8, 0),
                   f32c(g, "ys", 0.05f), codec(g, "yz", MI_DTYPE_INT8, -7)};
  int32_t y = out(g, "y");
  node(g, "QLinearMatMul", 8, mi, 1, &y, 0);
  run_case(g, per_row ? "QLinearMatMul per-row A scale" : "QLinearMatMul", per_row);
}

/* com.microsoft QLinearAdd / QLinearMul, B of A's shape or one code. */
static void qlinear_binary(const char *op, int scalar_b, int32_t dt) {
  mi_graph_t *g = graph(13);
  int64_t d[4] = {1, 4, 7, 9};
  int64_t dc[4] = {1, 4, 1, 1}; /* per-channel B (SE gating), broadcast over H and W */
  int32_t bi = scalar_b == 1 ? codec(g, "b", dt, 77) : input(g, "b", dt, 4, scalar_b == 2 ? dc : d);
  int32_t in[8] = {input(g, "a", dt, 4, d), f32c(g, "as", 0.031f), codec(g, "az", dt, 100), bi, f32c(g, "bs", 0.017f),
                   codec(g, "bz", dt, 3), f32c(g, "cs", 0.05f), codec(g, "cz", dt, dt == MI_DTYPE_UINT8 ? 128 : 0)};
  int32_t y = out(g, "y");
  node(g, op, 8, in, 1, &y, 1);
  char name[80];
  snprintf(name, sizeof name, "%s %s%s", op, dt == MI_DTYPE_UINT8 ? "u8" : "s8",
           scalar_b == 1 ? " scalar B" : scalar_b == 2 ? " per-channel B"
                                                       : "");
  run_case(g, name, 0);
}

static void qlinear_gap(int last) {
  mi_graph_t *g = graph(13);
  int64_t d[4] = {2, 5, 6, 7};
  int32_t in[5] = {input(g, "x", MI_DTYPE_UINT8, 4, d), f32c(g, "xs", 0.1f), codec(g, "xz", MI_DTYPE_UINT8, 90),
                   f32c(g, "ys", 0.04f), codec(g, "yz", MI_DTYPE_UINT8, 60)};
  int32_t y = out(g, "y");
  mi_node_set_int(g, node(g, "QLinearGlobalAveragePool", 5, in, 1, &y, 1), "channels_last", last);
  run_case(g, last ? "QLinearGlobalAveragePool channels_last" : "QLinearGlobalAveragePool", 0);
}

/* DynamicQuantizeLinear alone on values whose quotients x / s are exact ties k + 1/2 (s = 3 from
 * the range [-382.5, 382.5]) or within a few ulp of one: fl(1 / 3) * x lands past the tie for
 * k of about 100 and up, so a quotient taken as x times the reciprocal without the division where
 * it lies near a half gets codes wrong; the ties round to even. Also a length of 16k + 5 (tail).
 * At each SIMD level (the AVX2 pass takes the reciprocal too; cap as dynq_levels below). */
static void dynq_ties_at(const char *cap) {
  static float xv[2 * 251 + 5];
  int64_t n = 0, xd[2] = {1, (int64_t)(sizeof xv / sizeof xv[0])};
  xv[n++] = -382.5f;
  xv[n++] = 382.5f;
  for (int32_t k = -125; k < 125 && n + 2 <= xd[1]; k++) {
    xv[n++] = (float)(3 * k) + 1.5f;                     /* (k + 1/2) * 3: exactly a tie */
    xv[n++] = nextafterf((float)(3 * k) + 1.5f, 1000.f); /* just past it */
  }
  while (n < xd[1]) xv[n++] = 0.f;
  mi_graph_t *g = graph(13);
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 2, xd), q[3] = {out(g, "xq"), out(g, "xs"), out(g, "xz")};
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
  g_x0 = xv;
  g_x0n = xd[1];
  {
    mi_plugin_t *keep = g_blis;
    mi_registry_t *reg = open_capped(cap);
    char name[64];
    snprintf(name, sizeof name, "DynamicQuantizeLinear on ties, simd cap %s", cap ? cap : "none");
    run_case(g, name, 0);
    mi_registry_destroy(reg);
    unsetenv("MI_BLIS_MAX_SIMD");
    g_blis = keep;
  }
  g_x0 = NULL;
}

static void dynq_ties(void) {
  dynq_ties_at(NULL);
  dynq_ties_at("avx2");
  dynq_ties_at("c");
}

/* DynamicQuantizeLinear on 3 * 16384 + 7 values, the min/max pass in parts: the lowest value in
 * the last part, the highest in the third, so a merge that misses a part gets the scale wrong. */
static void dynq_parts(void) {
  static float xv[3 * 16384 + 7];
  int64_t n = (int64_t)(sizeof xv / sizeof xv[0]), xd[2] = {1, n};
  for (int64_t i = 0; i < n; i++) xv[i] = (float)(i % 97) / 32.f - 1.f;
  xv[n - 2] = -5.25f;
  xv[2 * 16384 + 11] = 6.5f;
  mi_graph_t *g = graph(13);
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 2, xd), q[3] = {out(g, "xq"), out(g, "xs"), out(g, "xz")};
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
  g_x0 = xv;
  g_x0n = n;
  run_case(g, "DynamicQuantizeLinear in parts", 0);
  g_x0 = NULL;
}

/* blis-cpu's DynamicQuantizeLinear on x (n floats): codes, scale and zero point; 0 on success. */
static int dynq_blis(const float *xv, int64_t n, uint8_t *codes, float *scale, uint8_t *zp) {
  mi_graph_t *g = graph(13);
  int64_t xd[2] = {1, n};
  int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 2, xd), q[3] = {out(g, "xq"), out(g, "xs"), out(g, "xz")};
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in = NULL, *od[3] = {0};
  mi_error_t e = {0, ""};
  int32_t rc;
  node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  rc = mi_graph_infer_shapes(g, &e);
  if (rc == MI_OK && (in = mi_array_create(MI_DTYPE_FLOAT32, 2, xd))) memcpy(in->data, xv, in->nbytes);
  if (rc == MI_OK) rc = in ? mi_session_create(g, g_blis, 0, &o, &s, &e) : MI_ERR_OUT_OF_MEMORY;
  if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, od, 3, &e);
  CHECK(rc == MI_OK, "DynamicQuantizeLinear on blis-cpu: %s", e.message);
  if (rc == MI_OK) {
    memcpy(codes, od[0]->data, (size_t)n);
    *scale = *(const float *)od[1]->data;
    *zp = *(const uint8_t *)od[2]->data;
  }
  mi_session_destroy(s);
  mi_array_destroy(in);
  for (int k = 0; k < 3; k++) mi_array_destroy(od[k]);
  mi_graph_destroy(g);
  return rc;
}

/* A registry whose blis-cpu is capped at `cap` (MI_BLIS_MAX_SIMD; NULL: uncapped), its device in
 * g_blis; the caller destroys it, then unsets the cap and restores g_blis. */
/* DynamicQuantizeLinear at each SIMD level (MI_BLIS_MAX_SIMD caps it; on an AVX-512 machine the
 * AVX2 and plain C passes run nowhere else): lengths around the vector widths against the
 * reference, then a NaN, which the reference refuses: the range ignores it at every level (the
 * C loop's comparisons do), so all levels give the same scale and codes. The AVX2 min/max took
 * the NaN into its lane and lost the lane's minimum before it (-5 here: scale 1/255, not 6/255). */
static void dynq_levels(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  static const int64_t lens[] = {1, 7, 8, 9, 17, 63, 16 * 5 + 3};
  mi_plugin_t *keep = g_blis;
  float xv[40], sc[3] = {0, 0, 0};
  uint8_t codes[3][40], zp[3] = {0, 0, 0};
  for (int i = 0; i < 40; i++) xv[i] = (float)(i % 5) / 4.f;
  xv[0] = -5.f;
  xv[8] = NAN; /* lane 0 of the second AVX2 vector, after the minimum in lane 0 of the first */
  for (int lv = 0; lv < 3; lv++) {
    mi_registry_t *reg = open_capped(caps[lv]);
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      mi_graph_t *g = graph(13);
      int64_t xd[2] = {1, lens[k]};
      int32_t x = input(g, "x", MI_DTYPE_FLOAT32, 2, xd), q[3] = {out(g, "xq"), out(g, "xs"), out(g, "xz")};
      char name[80];
      node(g, "DynamicQuantizeLinear", 1, &x, 3, q, 0);
      snprintf(name, sizeof name, "DynamicQuantizeLinear, %lld values, simd cap %s", (long long)lens[k],
               caps[lv] ? caps[lv] : "none");
      run_case(g, name, 0);
    }
    dynq_blis(xv, 40, codes[lv], &sc[lv], &zp[lv]);
    mi_registry_destroy(reg);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
  g_blis = keep;
  for (int lv = 1; lv < 3; lv++) {
    int diff = 0;
    for (int i = 0; i < 40; i++) diff += i != 8 && codes[lv][i] != codes[0][i];
    CHECK(sc[lv] == sc[0] && zp[lv] == zp[0] && diff == 0,
          "DynamicQuantizeLinear with a NaN, simd cap %s: scale %g zero point %d (%d codes differ), uncapped %g %d",
          caps[lv], (double)sc[lv], (int)zp[lv], diff, (double)sc[0], (int)zp[0]);
  }
}

static void conv_integer_cases(void) {
  dynq_ties();
  dynq_parts();
  dynq_levels();
  conv_integer(1, 1, 1, 3);
  conv_integer(0, 1, 2, 3);
  conv_integer(1, 6, 1, 3); /* depthwise */
  conv_integer(0, 2, 1, 1);
  conv_integer_u8(0, 0, 3, 3, 9, 70);      /* k 27: one real byte in the last quad */
  conv_integer_u8(255, 255, 5, 3, 11, 67); /* k 45 */
  conv_integer_u8(131, 128, 7, 1, 5, 130); /* no shift: u8 weights minus 128 fit INT8 */
  conv_integer_u8(17, 3, 2, 5, 300, 97);   /* k 50, several row tiles */
  /* the byte core without columns (blis_qdirect.c, K >= 512): the weight shift's pixel sums over the
   * padded planes and their stride phases, a partial last quad, the tail per output row */
  conv_integer_u8(0, 0, 64, 3, 9, 70);
  conv_integer_u8(255, 255, 57, 3, 11, 67);
  conv_integer_u8(3, 250, 21, 5, 40, 97);
  g_u8_stride = 2;
  conv_integer_u8(0, 0, 60, 3, 12, 41);
  conv_integer_u8(200, 7, 24, 5, 15, 33);
  g_u8_stride = 1;
  g_tail_c = 60;
  conv_integer_tail(1, 1, 1, 0, 1);
  conv_integer_tail(0, 0, 1, -1, 0);
  conv_integer_tail(1, 0, 1, 128, 1);
  g_tail_c = 6;
  conv_integer_tail(1, 1, 1, 0, 0);
  conv_integer_tail(1, 0, 1, 255, 0);
  conv_integer_tail(0, 1, 1, 128, 0);
  conv_integer_tail(0, 0, 1, -1, 0);
  conv_integer_tail(1, 1, 6, -1, 0); /* depthwise */
  conv_integer_tail(1, 1, 1, 3, 1);  /* residual Add before the Relu */
  conv_integer_tail(0, 0, 6, -1, 1);
  conv_integer_tail(1, 1, 1, 0, 2); /* residual Add after the Relu: GEMM, depthwise */
  conv_integer_tail(0, 1, 6, -1, 2);
  /* the depthwise byte kernel (AVX-512 VNNI + VBMI): weight shifts at both ends and none, strides
   * 2, 5x5, signed weights, the runtime zero point in the padding */
  conv_integer_tail(1, 1, 6, 0, 1);
  conv_integer_tail(0, 1, 6, 255, 0);
  conv_integer_tail(1, 0, 6, 128, 0);
  conv_integer(1, 6, 2, 5);
  conv_integer(0, 6, 2, 3);
  conv_integer(0, 6, 1, 5);
  conv_integer_hswish(1, 0);
  conv_integer_hswish(6, 1);
  for (int kind = 0; kind < 3; kind++) {
    conv_integer_acts(1, kind, kind == 1);
    conv_integer_acts(6, kind, kind != 1);
  }
  g_tail_dq = 1; /* then a DynamicQuantizeLinear: the direct byte core, the depthwise one, the GEMM */
  g_tail_c = 60;
  conv_integer_tail(1, 1, 1, 0, 1);
  g_tail_c = 6;
  conv_integer_tail(1, 1, 6, 0, 1);
  conv_integer_tail(1, 0, 1, 255, 0);
  conv_integer_tail(1, 1, 6, 0, 2);
  g_tail_c = 60;
  conv_integer_tail(1, 1, 1, 128, 2);
  g_tail_c = 6;
  g_tail_dq = 0;
}

/* At each SIMD level: at AVX2 the dynamic MatMul's runtime zero point on the AVX2 byte core, its
 * float tail and activation from the tiles (INT8 B) or after the shifted sums (UINT8 B), where B
 * is small (g_mm_small; random bytes have too many saturating pairs and keep the int16 core). */
static void matmul_integer_cases(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  for (int lv = 0; lv < 3; lv++) {
    mi_plugin_t *keep = g_blis;
    mi_registry_t *reg = open_capped(caps[lv]);
    matmul_integer(0);
    matmul_integer(1);
    matmul_integer_tail(0, 1);
    matmul_integer_tail(1, 1);
    matmul_integer_tail(2, 0);
    matmul_integer_tail_act(1, 0, 1);
    matmul_integer_tail_act(0, 1, 2);
    matmul_integer_tail_act(2, 0, 3);
    g_mm_small = 1; /* at AVX2 the byte core */
    for (int act = 0; act <= 3; act++) {
      matmul_integer_tail_act(act % 3, 0, act);
      matmul_integer_tail_act(act % 3, 1, act);
    }
    g_mm_small = 0;
    mi_registry_destroy(reg);
    unsetenv("MI_BLIS_MAX_SIMD");
    g_blis = keep;
  }
}

static void qlinear_conv_cases(void) {
  qlinear_conv(MI_DTYPE_UINT8, 3, 1);
  qlinear_conv(MI_DTYPE_INT8, 1, 1);
  qlinear_conv(MI_DTYPE_UINT8, 3, 8); /* depthwise */
  /* depthwise planes over the float plane kernel's buffer (strips of output rows), and convs
   * wider than one column block of the int32 core */
  qlinear_conv_at(MI_DTYPE_UINT8, 3, 8, 8, 150, 141, 1);
  qlinear_conv_at(MI_DTYPE_INT8, 3, 8, 8, 151, 140, 2);
  qlinear_conv_at(MI_DTYPE_UINT8, 5, 8, 8, 131, 130, 1);
  qlinear_conv_at(MI_DTYPE_UINT8, 3, 1, 16, 40, 41, 1);
  qlinear_conv_at(MI_DTYPE_INT8, 3, 1, 96, 12, 21, 1);
}

/* QLinearMatMul (codes out, per-column B scales) with sat_weights: the AVX2 byte core and its fixes
 * before the requantization; UINT8 or INT8 codes, at each SIMD level, 1 and 2 threads. */
static void qlinear_matmul_sat(int64_t m, int64_t k, int64_t n, int32_t dt, int sat) {
  mi_graph_t *g = graph(13);
  int64_t ad[2] = {m, k}, bd[2] = {k, n};
  float *bs = malloc((size_t)n * sizeof(float));
  int8_t *w = sat_weights(k, n, sat);
  REQUIRE(bs);
  for (int64_t i = 0; i < n; i++) bs[i] = 0.0002f * (float)(i % 7 + 3);
  int32_t mi[8] = {input(g, "a", dt, 2, ad), f32c(g, "as", 0.02f), codec(g, "az", dt, dt == MI_DTYPE_UINT8 ? 255 : 2),
                   constant(g, "b", MI_DTYPE_INT8, 2, bd, w), constant(g, "bs", MI_DTYPE_FLOAT32, 1, &n, bs),
                   codec(g, "bz", MI_DTYPE_INT8, 0), f32c(g, "ys", 0.05f), codec(g, "yz", dt, dt == MI_DTYPE_UINT8 ? 128 : -7)};
  int32_t y = out(g, "y");
  char name[128];
  free(w);
  free(bs);
  node(g, "QLinearMatMul", 8, mi, 1, &y, 0);
  snprintf(name, sizeof name, "QLinearMatMul %lldx%lldx%lld %s, %d saturating pairs, threads %d", (long long)m,
           (long long)k, (long long)n, dt == MI_DTYPE_UINT8 ? "u8" : "s8", sat, (int)g_threads);
  run_case(g, name, 0);
}

static void qlinear_matmul_cases(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  qlinear_matmul(0);
  qlinear_matmul(1);
  for (int lv = 0; lv < 3; lv++) {
    mi_plugin_t *keep = g_blis;
    mi_registry_t *reg = open_capped(caps[lv]);
    for (g_threads = 1; g_threads <= 2; g_threads++) {
      qlinear_matmul_sat(19, 300, 40, MI_DTYPE_UINT8, 9);
      qlinear_matmul_sat(31, 257, 47, MI_DTYPE_INT8, 8);
      qlinear_matmul_sat(7, 1152, 203, MI_DTYPE_UINT8, 40); /* two column groups, n off the panels */
      qlinear_matmul_sat(13, 3, 1, MI_DTYPE_INT8, 0);       /* k of one partial quad, one column */
    }
    g_threads = 0;
    mi_registry_destroy(reg);
    unsetenv("MI_BLIS_MAX_SIMD");
    g_blis = keep;
  }
}

static void qlinear_binary_cases(void) {
  qlinear_binary("QLinearAdd", 0, MI_DTYPE_UINT8);
  qlinear_binary("QLinearAdd", 1, MI_DTYPE_INT8);
  qlinear_binary("QLinearMul", 0, MI_DTYPE_INT8);
  qlinear_binary("QLinearMul", 1, MI_DTYPE_UINT8);
  qlinear_binary("QLinearMul", 2, MI_DTYPE_UINT8);
  qlinear_binary("QLinearAdd", 2, MI_DTYPE_INT8);
}

static void qlinear_gap_cases(void) {
  qlinear_gap(0);
  qlinear_gap(1);
}

/* A dynamic conv with its float tail, its own kernel (DynamicQuantizeLinear -> ConvInteger -> Cast
 * -> Mul -> Add bias -> Relu [-> Add of a residual]) -> Concat with another input ->
 * DynamicQuantizeLinear (an RSU block's inner join): the conv's kernel finds its output's range as
 * it writes it, and at least the second run's quantize kernel takes it instead of a min/max pass
 * over those floats (the first may, where the buffer was asked for before); every byte the
 * reference's. group 12: the depthwise byte kernel. */
static void conv_tail_hand(int res, int64_t group) {
  mi_graph_t *g = graph(13);
  int64_t m = 12, xd[4] = {1, 12, 13, 71}, wd[4] = {m, 12 / group, 3, 3}, pads[4] = {1, 1, 1, 1};
  int64_t bd[4] = {1, m, 1, 1}, rd[4] = {1, m, 13, 71}, od[4] = {1, 5, 13, 71};
  int32_t q[3], t[8], qo[3];
  char name[96];
  double before;
  dynq_front(g, xd, q, t, 8);
  int32_t ci[4] = {q[0], constant(g, "w", MI_DTYPE_UINT8, 4, wd, NULL), q[2], codec(g, "wz", MI_DTYPE_UINT8, 128)};
  int32_t sm[2] = {q[1], f32c(g, "ws", 0.0123f)}, mm[2] = {t[1], t[2]};
  int32_t ad[2] = {t[3], constant(g, "b", MI_DTYPE_FLOAT32, 4, bd, NULL)}, ra[2] = {t[5], -1}, cins[2] = {t[5], -1};
  node(g, "Mul", 2, sm, 1, &t[2], 0);
  int32_t n = node(g, "ConvInteger", 4, ci, 1, &t[0], 0);
  mi_node_set_int(g, n, "group", group);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_int(g, node(g, "Cast", 1, &t[0], 1, &t[1], 0), "to", 1);
  node(g, "Mul", 2, mm, 1, &t[3], 0);
  node(g, "Add", 2, ad, 1, &t[4], 0);
  node(g, "Relu", 1, &t[4], 1, &t[5], 0);
  if (res) {
    ra[1] = input(g, "r", MI_DTYPE_FLOAT32, 4, rd);
    node(g, "Add", 2, ra, 1, &t[6], 0);
    cins[0] = t[6];
  }
  cins[1] = input(g, "o", MI_DTYPE_FLOAT32, 4, od);
  mi_node_set_int(g, node(g, "Concat", 2, cins, 1, &t[7], 0), "axis", 1);
  qo[0] = out(g, "q");
  qo[1] = out(g, "s");
  qo[2] = out(g, "z");
  node(g, "DynamicQuantizeLinear", 1, &t[7], 3, qo, 0);
  snprintf(name, sizeof name, "ConvInteger + float tail%s -> Concat -> DynamicQuantizeLinear, group %lld",
           res ? " + residual after the Relu" : "", (long long)group);
  g_kernels = 4;
  g_runs = 2;
  before = ranges_reused();
  run_case(g, name, 0);
  CHECK(ranges_reused() >= before + 1, "%s: the second run's quantize kernel ran a min/max pass over the conv's floats",
        name);
  g_runs = 1;
  g_kernels = 0;
}

static void conv_tail_hand_cases(void) {
  conv_tail_hand(0, 1);
  conv_tail_hand(1, 1);
  conv_tail_hand(1, 12);
  conv_tail_hand(0, 12);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(conv_integer_cases),
    TU_CASE(matmul_integer_cases),
    TU_CASE(matmul_integer_sat_cases),
    TU_CASE(matmul_integer_edge_cases),
    TU_CASE(conv_integer_sat_cases),
    TU_CASE(qlinear_conv_cases),
    TU_CASE(qlinear_matmul_cases),
    TU_CASE(qlinear_binary_cases),
    TU_CASE(qlinear_gap_cases),
    TU_CASE(conv_tail_hand_cases),
};

TU_MAIN(setup, teardown)
