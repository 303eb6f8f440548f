/* test_blis_qlut.c - quantized elementwise chains (DequantizeLinear -> elementwise float ops on
 * constants -> QuantizeLinear, exec/qdq_chain.c) run on blis-cpu as ONE kernel, a table per
 * channel on the codes (blis_qlut.c), and every output code equals mi_ref_run's byte for byte:
 * LeakyRelu and a clamp (tf2onnx), hard-swish written out (x read twice), per-channel scale and
 * shift, HardSigmoid/Sigmoid/Tanh/HardSwish, INT8 and UINT8 codes, all 256 codes of the input.
 * A chain whose value is also a graph output is not one kernel and still matches. A MaxPool right
 * before the Q joins the chain (the codes are pooled; pads, strides, dilations, SAME padding,
 * ceil_mode, a non-monotone chain, INT8 codes) and still matches byte for byte. A Concat of the
 * chain's value with constants right before the Q (after such a MaxPool, if any) joins it too:
 * a residual branch's zero channels, constants on either side, another scale, two images. A
 * constant-mode Pad of H and W right before the Q joins it as well (a TF export's explicit
 * padding before a stride-2 depthwise conv: DQ -> Clip -> Pad -> Q), the border the value's code. */
#include "test_qdq_graph.h"

/* x codes [1, C, H, W] (every code present) -> DQ -> returns the float value's tensor. */
/* Width of the planes start() makes (the pool cases widen it past one vector of outputs). */
static int64_t g_w = 11, g_n = 1;

static mi_graph_t *start(int32_t dt, int32_t zx, float sx, int32_t *xf) {
  int64_t d[4] = {g_n, 6, 9, g_w};
  mi_graph_t *g = mi_graph_create("qlut");
  REQUIRE(g);
  g->opset = 13;
  int32_t x = tensor(g, "x", dt, 4, d, NULL, 0);
  REQUIRE(mi_graph_add_input(g, x) == MI_OK);
  int32_t in[3] = {x, f32(g, "xs", sx), code(g, "xz", dt, zx)};
  *xf = val(g, "xf");
  op(g, "DequantizeLinear", 3, in, *xf);
  return g;
}

/* value -> Q -> y codes (the graph output). */
static void finish(mi_graph_t *g, int32_t v, int32_t dt, float sy, int32_t zy) {
  int32_t y = val(g, "y"), in[3] = {v, f32(g, "ys", sy), code(g, "yz", dt, zy)};
  REQUIRE(mi_graph_add_output(g, y) == MI_OK);
  op(g, "QuantizeLinear", 3, in, y);
}

/* Runs g on blis-cpu (no host fallback) and on the reference; every code within `tol` of the
 * reference's (0: byte-equal), and the number of device kernels as expected. */
static void check(mi_graph_t *g, const char *name, int32_t kernels, int tol) {
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in = NULL, *got[2] = {0}, *want[2] = {0};
  mi_error_t err = {0, ""};
  int32_t nout = g->output_count;
  REQUIRE(mi_graph_infer_shapes(g, &err) == MI_OK);
  const mi_tensor_t *t = &g->tensors[g->inputs[0]];
  in = mi_array_create(t->dtype, t->rank, t->dims);
  REQUIRE(in);
  for (int64_t i = 0; i < (int64_t)in->nbytes; i++) ((uint8_t *)in->data)[i] = (uint8_t)(i * 37 + 11);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  int32_t rc = mi_session_create(g, g_blis, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session: %s", name, err.message);
  if (rc == MI_OK) {
    CHECK(mi_session_kernel_count(s) == kernels, "%s: %d device kernels, expected %d", name,
          (int)mi_session_kernel_count(s), (int)kernels);
    rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, nout, &err);
    CHECK(rc == MI_OK, "%s: run: %s", name, err.message);
  }
  if (rc == MI_OK) {
    rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, want, nout, &err);
    CHECK(rc == MI_OK, "%s: reference: %s", name, err.message);
  }
  for (int32_t k = 0; rc == MI_OK && k < nout; k++) {
    size_t diff = 0, far = 0;
    REQUIRE(got[k]->nbytes == want[k]->nbytes && got[k]->dtype == want[k]->dtype);
    for (size_t b = 0; b < got[k]->nbytes; b++) {
      const uint8_t *x = got[k]->data, *y = want[k]->data;
      int d = got[k]->dtype == MI_DTYPE_INT8 ? (int8_t)x[b] - (int8_t)y[b] : x[b] - y[b];
      diff += d != 0;
      far += got[k]->dtype == MI_DTYPE_FLOAT32 ? d != 0 : abs(d) > tol;
    }
    CHECK(far == 0, "%s: output %d: %zu of %zu bytes differ from the reference (%zu beyond %d codes)", name,
          (int)k, diff, got[k]->nbytes, far, tol);
  }
  for (int k = 0; k < 2; k++) {
    mi_array_destroy(got[k]);
    mi_array_destroy(want[k]);
  }
  mi_array_destroy(in);
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* tf2onnx's leaky activation and clamp: LeakyRelu(0.2) then Max(x, -0.3). */
static void leaky_clamp(void) {
  int32_t xf, a = 0, b = 0;
  mi_graph_t *g = start(MI_DTYPE_UINT8, 131, 0.043f, &xf);
  a = val(g, "a");
  mi_node_set_float(g, op(g, "LeakyRelu", 1, &xf, a), "alpha", 0.2f);
  int32_t mi[2] = {a, f32(g, "lo", -0.3f)};
  b = val(g, "b");
  op(g, "Max", 2, mi, b);
  finish(g, b, MI_DTYPE_UINT8, 0.021f, 14);
  check(g, "LeakyRelu -> Max u8", 1, 0);
}

/* paddle2onnx's hard-swish x * clip(x + 3, 0, 6) / 6 on INT8 codes (x read by Add and Mul). */
static void hard_swish_written_out(void) {
  int32_t xf;
  mi_graph_t *g = start(MI_DTYPE_INT8, -7, 0.061f, &xf);
  int32_t a = val(g, "a"), c = val(g, "c"), m = val(g, "m"), dv = val(g, "d");
  int32_t ai[2] = {xf, f32(g, "three", 3.f)}, ci[3] = {a, f32(g, "zero", 0.f), f32(g, "six", 6.f)};
  int32_t mi[2] = {xf, c}, di[2] = {m, f32(g, "six2", 6.f)};
  op(g, "Add", 2, ai, a);
  op(g, "Clip", 3, ci, c);
  op(g, "Mul", 2, mi, m);
  op(g, "Div", 2, di, dv);
  finish(g, dv, MI_DTYPE_INT8, 0.037f, -20);
  check(g, "hard-swish written out s8", 1, 0);
}

/* A learnable per-channel scale and shift ([1, C, 1, 1] and [C, 1, 1] constants), constant first. */
static void per_channel_affine(void) {
  int32_t xf;
  int64_t d4[4] = {1, 6, 1, 1}, d3[3] = {6, 1, 1};
  float w[6] = {0.5f, -1.25f, 2.f, 0.75f, -0.1f, 1.5f}, b[6] = {0.1f, -0.2f, 0.3f, 0.f, 1.f, -1.f};
  mi_graph_t *g = start(MI_DTYPE_UINT8, 120, 0.05f, &xf);
  int32_t m = val(g, "m"), a = val(g, "a");
  int32_t mi[2] = {tensor(g, "w", MI_DTYPE_FLOAT32, 4, d4, w, sizeof w), xf};
  int32_t ai[2] = {m, tensor(g, "b", MI_DTYPE_FLOAT32, 3, d3, b, sizeof b)};
  op(g, "Mul", 2, mi, m);
  op(g, "Add", 2, ai, a);
  finish(g, a, MI_DTYPE_UINT8, 0.09f, 128);
  check(g, "per-channel Mul, Add u8", 1, 0);
}

/* The other activations a chain may hold, one chain each (Sub and Min by constants too). */
static void activations(void) {
  static const char *const acts[] = {"HardSigmoid", "Sigmoid", "Tanh", "HardSwish", "Relu", "Neg", "Abs"};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    int32_t xf, dt = i % 2 ? MI_DTYPE_INT8 : MI_DTYPE_UINT8;
    mi_graph_t *g = start(dt, dt == MI_DTYPE_UINT8 ? 128 : 3, 0.047f, &xf);
    int32_t s = val(g, "s"), a = val(g, "a"), m = val(g, "m");
    int32_t si[2] = {xf, f32(g, "k", 0.25f)}, mi[2] = {a, f32(g, "hi", 0.8f)};
    op(g, "Sub", 2, si, s);
    op(g, acts[i], 1, &s, a);
    op(g, "Min", 2, mi, m);
    finish(g, m, dt, 1.f / 128.f, dt == MI_DTYPE_UINT8 ? 128 : 0);
    char name[64];
    snprintf(name, sizeof name, "Sub -> %s -> Min %s", acts[i], dt == MI_DTYPE_UINT8 ? "u8" : "s8");
    check(g, name, 1, 0);
  }
  g_w = 11;
}

/* The chain's middle value is also a graph output: not one kernel (DQ, LeakyRelu, Max, Q). The
 * float value is byte-equal; the codes within one: blis-cpu's QuantizeLinear divides in float
 * (as ONNX Runtime does), the reference in double, and 0.03 / 0.02 puts values on ties. */
static void value_read_outside(void) {
  int32_t xf;
  mi_graph_t *g = start(MI_DTYPE_UINT8, 100, 0.03f, &xf);
  int32_t a = val(g, "a"), b = val(g, "b");
  op(g, "LeakyRelu", 1, &xf, a);
  REQUIRE(mi_graph_add_output(g, a) == MI_OK);
  int32_t mi[2] = {a, f32(g, "lo", -0.1f)};
  op(g, "Max", 2, mi, b);
  finish(g, b, MI_DTYPE_UINT8, 0.02f, 10);
  check(g, "chain value also an output", 4, 1);
}

/* The DequantizeLinear's value is read outside the chain by a float op whose result is a float
 * graph output: the chain's kernel writes the value as well (from its per-code table), and the
 * float output is byte-equal (dq_read_after_chain's value is read by no float op). */
static void dq_value_read_by_float_op(void) {
  int32_t xf;
  mi_graph_t *g = start(MI_DTYPE_INT8, -3, 0.041f, &xf);
  int32_t a = val(g, "a"), c = val(g, "c"), r = val(g, "r");
  int32_t ai[2] = {xf, f32(g, "three", 3.f)}, ci[3] = {a, f32(g, "zero", 0.f), f32(g, "six", 6.f)};
  op(g, "Add", 2, ai, a);
  op(g, "Clip", 3, ci, c);
  finish(g, c, MI_DTYPE_INT8, 0.03f, -128);
  op(g, "Relu", 1, &xf, r);
  REQUIRE(mi_graph_add_output(g, r) == MI_OK);
  check(g, "DQ value read by a float Relu", 2, 0);
}

/* paddle2onnx's hard-swish as QDQ exports write it: DQ(a) -> Add(3) -> Clip(0, 6) -> Q is a
 * chain, and the same DQ(a) also feeds the Mul with the clip's dequantized codes after it: the
 * chain's kernel writes DQ(a)'s value as well, and DQ(a), DQ(cq) -> Mul -> Q runs as one lowered
 * Mul on the codes (2 kernels, not 7). Codes within one of the reference's. */
static void dq_read_after_chain(void) {
  int32_t xf;
  mi_graph_t *g = start(MI_DTYPE_UINT8, 90, 0.047f, &xf);
  int32_t a = val(g, "a"), c = val(g, "c"), cq = val(g, "cq"), cf = val(g, "cf"), m = val(g, "m");
  int32_t ai[2] = {xf, f32(g, "three", 3.f)}, ci[3] = {a, f32(g, "zero", 0.f), f32(g, "six", 6.f)};
  op(g, "Add", 2, ai, a);
  op(g, "Clip", 3, ci, c);
  int32_t qi[3] = {c, f32(g, "cs", 6.f / 255.f), code(g, "cz", MI_DTYPE_UINT8, 0)};
  op(g, "QuantizeLinear", 3, qi, cq);
  int32_t di[3] = {cq, qi[1], qi[2]}, mi[2] = {xf, cf};
  op(g, "DequantizeLinear", 3, di, cf);
  op(g, "Mul", 2, mi, m);
  finish(g, m, MI_DTYPE_UINT8, 0.11f, 60);
  check(g, "DQ read by the chain and after it", 2, 1);
}

/* A MaxPool between the chain and its Q (oww_embedding's LeakyRelu -> Max -> MaxPool -> Q): one
 * kernel that pools the table's codes. Odd planes (9 x 11), windows over the border, a chain that
 * is not monotone (hard-swish), INT8 codes whose order is signed, and DQ -> MaxPool -> Q alone;
 * 2x2 stride 2 on 75- and 130-wide planes (37 and 65 outputs a row: 32-output vectors and a tail,
 * an odd last input column and row left out). */
static void max_pool_ends_chain(void) {
  static const struct {
    int64_t k, s, d, pad;
    const char *auto_pad;
    int ceil, chain, dt;
    int64_t w, kh, sh; /* window rows and their stride when not k and s (0) */
  } cases[] = {
      {2, 2, 1, 0, NULL, 0, 0, MI_DTYPE_UINT8, 11, 0, 0},
      {3, 2, 1, 1, NULL, 0, 1, MI_DTYPE_INT8, 11, 0, 0},
      {2, 2, 1, 0, NULL, 1, 1, MI_DTYPE_UINT8, 11, 0, 0},
      {3, 1, 2, 0, "SAME_UPPER", 0, 2, MI_DTYPE_INT8, 11, 0, 0},
      {3, 3, 1, 2, NULL, 1, 0, MI_DTYPE_INT8, 11, 0, 0},
      {2, 1, 1, 0, "SAME_LOWER", 0, 2, MI_DTYPE_UINT8, 11, 0, 0},
      {2, 2, 1, 0, NULL, 0, 1, MI_DTYPE_INT8, 75, 0, 0},
      {2, 2, 1, 0, NULL, 0, 2, MI_DTYPE_UINT8, 130, 0, 0},
      /* 1x2 windows at stride 1x2 (a keyword model's pools), a partial vector and several */
      {2, 2, 1, 0, NULL, 0, 0, MI_DTYPE_UINT8, 11, 1, 1},
      {2, 2, 1, 0, NULL, 0, 1, MI_DTYPE_INT8, 130, 1, 1},
      {2, 2, 1, 0, NULL, 0, 2, MI_DTYPE_UINT8, 75, 1, 3},
      {2, 2, 1, 0, NULL, 0, 2, MI_DTYPE_INT8, 75, 2, 3}, /* 2-row windows every third row */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int32_t xf, dt = cases[i].dt, v;
    g_w = cases[i].w;
    mi_graph_t *g = start(dt, dt == MI_DTYPE_UINT8 ? 131 : -5, 0.043f, &xf);
    if (cases[i].chain == 0) { /* LeakyRelu(0.2) -> Max(-0.3) */
      int32_t a = val(g, "a"), mi[2] = {a, f32(g, "lo", -0.3f)};
      v = val(g, "b");
      mi_node_set_float(g, op(g, "LeakyRelu", 1, &xf, a), "alpha", 0.2f);
      op(g, "Max", 2, mi, v);
    } else if (cases[i].chain == 1) { /* HardSwish: not monotone, so the table comes first */
      v = val(g, "h");
      op(g, "HardSwish", 1, &xf, v);
    } else {
      v = xf;
    }
    int32_t p = val(g, "p"), n = op(g, "MaxPool", 1, &v, p);
    int64_t k[2] = {cases[i].kh ? cases[i].kh : cases[i].k, cases[i].k};
    int64_t st[2] = {cases[i].sh ? cases[i].sh : cases[i].s, cases[i].s}, dl[2] = {cases[i].d, cases[i].d};
    int64_t pads[4] = {cases[i].pad, cases[i].pad, cases[i].pad, cases[i].pad};
    REQUIRE(mi_node_set_ints(g, n, "kernel_shape", 2, k) == MI_OK);
    REQUIRE(mi_node_set_ints(g, n, "strides", 2, st) == MI_OK);
    REQUIRE(mi_node_set_ints(g, n, "dilations", 2, dl) == MI_OK);
    if (cases[i].auto_pad) REQUIRE(mi_node_set_string(g, n, "auto_pad", cases[i].auto_pad) == MI_OK);
    else
      REQUIRE(mi_node_set_ints(g, n, "pads", 4, pads) == MI_OK);
    if (cases[i].ceil) REQUIRE(mi_node_set_int(g, n, "ceil_mode", 1) == MI_OK);
    finish(g, p, dt, 0.021f, dt == MI_DTYPE_UINT8 ? 14 : -3);
    char name[96];
    snprintf(name, sizeof name, "MaxPool %lldx%lld s%lldx%lld d%lld pad %lld %s ceil %d chain %d %s w %lld",
             (long long)k[0], (long long)k[1], (long long)st[0], (long long)st[1], (long long)dl[0], (long long)pads[0],
             cases[i].auto_pad ? cases[i].auto_pad : "", cases[i].ceil, cases[i].chain,
             dt == MI_DTYPE_UINT8 ? "u8" : "s8", (long long)cases[i].w);
    check(g, name, 1, 0);
  }
  g_w = 11;
}

/* A FLOAT32 constant [g_n, ch, h, w]: zeros, or values across the output's codes and past them. */
static int32_t channels_const(mi_graph_t *g, const char *name, int64_t ch, int64_t h, int64_t w, int zeros) {
  int64_t d[4] = {g_n, ch, h, w}, n = g_n * ch * h * w;
  float *v = calloc((size_t)n, sizeof *v);
  REQUIRE(v);
  for (int64_t i = 0; i < n && !zeros; i++) v[i] = (float)((i * 29) % 97 - 48) * 0.0625f;
  int32_t t = tensor(g, name, MI_DTYPE_FLOAT32, 4, d, v, (size_t)n * sizeof *v);
  free(v);
  return t;
}

/* BlazeFace's residual branch that widens the channels: DQ -> [MaxPool] -> Concat(value, zero
 * channels) -> Q, as one kernel (not 3-4) whose codes equal the reference's byte for byte: the
 * same quantization on both sides (the table is the identity), another scale and zero point,
 * constants before and after the value (values that saturate), INT8 codes through the pool's
 * unsigned order, a hard-swish before the pool, two images. Concat(value, value) is no chain
 * (the device refuses it: three kernels) and still matches. */
static void concat_ends_chain(void) {
  static const struct {
    int pool, chain, dt, before, after, zeros, same, n;
  } cases[] = {
      {0, 0, MI_DTYPE_UINT8, 0, 4, 1, 1, 1},
      {1, 0, MI_DTYPE_UINT8, 0, 2, 1, 1, 1},
      {1, 1, MI_DTYPE_INT8, 3, 2, 0, 0, 1},
      {0, 1, MI_DTYPE_UINT8, 5, 0, 0, 0, 2},
      {1, 0, MI_DTYPE_INT8, 0, 4, 1, 1, 2},
      {0, 0, MI_DTYPE_INT8, 0, -1, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int32_t xf, dt = cases[i].dt, v, ins[3], nin = 0;
    int32_t zx = dt == MI_DTYPE_UINT8 ? 131 : -5;
    int64_t h = cases[i].pool ? 4 : 9, w = cases[i].pool ? 37 : 75;
    float sx = 0.043f;
    g_w = 75;
    g_n = cases[i].n;
    mi_graph_t *g = start(dt, zx, sx, &xf);
    v = xf;
    if (cases[i].chain) {
      v = val(g, "h");
      op(g, "HardSwish", 1, &xf, v);
    }
    if (cases[i].pool) {
      int32_t p = val(g, "p"), n = op(g, "MaxPool", 1, &v, p);
      int64_t k[2] = {2, 2};
      REQUIRE(mi_node_set_ints(g, n, "kernel_shape", 2, k) == MI_OK);
      REQUIRE(mi_node_set_ints(g, n, "strides", 2, k) == MI_OK);
      v = p;
    }
    if (cases[i].before) ins[nin++] = channels_const(g, "c0", cases[i].before, h, w, cases[i].zeros);
    ins[nin++] = v;
    if (cases[i].after > 0) ins[nin++] = channels_const(g, "c1", cases[i].after, h, w, cases[i].zeros);
    if (cases[i].after < 0) ins[nin++] = v;
    int32_t c = val(g, "c"), cn = op(g, "Concat", nin, ins, c);
    REQUIRE(mi_node_set_int(g, cn, "axis", 1) == MI_OK);
    finish(g, c, dt, cases[i].same ? sx : 0.029f, cases[i].same ? zx : (dt == MI_DTYPE_UINT8 ? 7 : 3));
    char name[96];
    snprintf(name, sizeof name, "Concat pool %d chain %d %s %d+6+%d zeros %d same %d batch %d", cases[i].pool,
             cases[i].chain, dt == MI_DTYPE_UINT8 ? "u8" : "s8", cases[i].before, cases[i].after, cases[i].zeros,
             cases[i].same, cases[i].n);
    check(g, name, cases[i].after < 0 ? 3 : 1, 0);
  }
  g_w = 11;
  g_n = 1;
}

/* DQ -> [Clip(0, 6)] -> Pad(H, W; constant value) -> Q as one kernel, byte for byte the
 * reference's: TF's bottom/right padding, pads on every side, a value that is not the zero
 * point (and one that saturates), INT8 codes, two images. A reflect Pad and a Pad of the
 * channels are no chain (the device refuses them: the nodes run apart) and still match. */
static void pad_ends_chain(void) {
  static const struct {
    int clip, dt, n, mode;
    int64_t pads[8];
    float value;
    int kernels;
  } cases[] = {
      {1, MI_DTYPE_UINT8, 1, 0, {0, 0, 0, 0, 0, 0, 1, 1}, 0.f, 1},
      {1, MI_DTYPE_INT8, 1, 0, {0, 0, 2, 1, 0, 0, 0, 3}, 0.5f, 1},
      {0, MI_DTYPE_UINT8, 2, 0, {0, 0, 1, 2, 0, 0, 3, 0}, 100.f, 1},
      {1, MI_DTYPE_INT8, 2, 0, {0, 0, 1, 1, 0, 0, 1, 1}, -3.f, 1},
      {1, MI_DTYPE_UINT8, 1, 1, {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, 0},
      {1, MI_DTYPE_UINT8, 1, 0, {0, 1, 0, 0, 0, 0, 1, 1}, 0.f, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int32_t xf, dt = cases[i].dt, v;
    int32_t zx = dt == MI_DTYPE_UINT8 ? 131 : -5;
    int64_t np = 8;
    g_w = 75;
    g_n = cases[i].n;
    mi_graph_t *g = start(dt, zx, 0.043f, &xf);
    v = xf;
    if (cases[i].clip) {
      int32_t ci[3] = {xf, f32(g, "zero", 0.f), f32(g, "six", 6.f)};
      v = val(g, "c");
      op(g, "Clip", 3, ci, v);
    }
    int32_t pi[3] = {v, tensor(g, "pads", MI_DTYPE_INT64, 1, &np, cases[i].pads, sizeof cases[i].pads),
                     f32(g, "value", cases[i].value)};
    int32_t pv = val(g, "p"), pn = op(g, "Pad", 3, pi, pv);
    if (cases[i].mode) REQUIRE(mi_node_set_string(g, pn, "mode", "reflect") == MI_OK);
    finish(g, pv, dt, 0.029f, dt == MI_DTYPE_UINT8 ? 7 : 3);
    char name[96];
    snprintf(name, sizeof name, "Pad case %d clip %d %s batch %d value %g", (int)i, cases[i].clip,
             dt == MI_DTYPE_UINT8 ? "u8" : "s8", cases[i].n, (double)cases[i].value);
    check(g, name, cases[i].kernels ? cases[i].kernels : 3 + cases[i].clip, 0);
  }
  g_w = 11;
  g_n = 1;
}

static const tu_case_t tu_cases[] = {
    TU_CASE(leaky_clamp),
    TU_CASE(hard_swish_written_out),
    TU_CASE(per_channel_affine),
    TU_CASE(activations),
    TU_CASE(value_read_outside),
    TU_CASE(dq_read_after_chain),
    TU_CASE(dq_value_read_by_float_op),
    TU_CASE(max_pool_ends_chain),
    TU_CASE(concat_ends_chain),
    TU_CASE(pad_ends_chain),
};

TU_MAIN(setup, teardown)
