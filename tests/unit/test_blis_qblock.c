/* test_blis_qblock.c - a depthwise-separable block in QDQ form (DQ -> depthwise Conv -> Q -> DQ ->
 * pointwise Conv -> Q [-> DQ, DQ(residual) -> Add [-> Relu] -> Q]) runs on blis-cpu as ONE
 * kernel (exec/qdq_block.c; blis_qblock.c's pass over bands of rows where the CPU has the byte
 * kernels), and every output code equals the one of the same layers run apart (where an intermediate is also a graph output
 * they stay three kernels): UINT8 and INT8 codes, strides 1 and 2, the block's input as its
 * residual through one shared DQ, a residual of its own, no Add, planes of several bands,
 * per-channel weight scales; and within one code of mi_ref_run's. BlazeFace's widening residual
 * (DQ(x) -> [MaxPool] -> Concat(zero channels) -> Q, the DQ shared with the depthwise conv) is
 * one chain kernel beside the block, which leaves the dequantized input unwritten. */
#include "test_qdq_graph.h"

static uint32_t g_rng = 777u;
static int32_t rnd(int32_t lo, int32_t hi) {
  g_rng = g_rng * 1103515245u + 12345u;
  return lo + (int32_t)((g_rng >> 8) % (uint32_t)(hi - lo + 1));
}

typedef struct bcase {
  const char *name;
  int32_t dt;
  int64_t c, m, h, w, s; /* depthwise channels, pointwise outputs, plane, depthwise stride */
  int add;               /* 0: none; 1: the block's input (one DQ shared); 2: a residual input; 3: the block's
                          * input, [pooled,] widened with zero channels and quantized again */
  int relu;              /* a Relu before the Add's Q (its zero point is the lowest code) */
  int dw_out;            /* the depthwise codes are a graph output too */
  int kernels;           /* device kernels expected */
} bcase_t;

/* A DequantizeLinear or QuantizeLinear node `type` of x with scale s and zero point z (codes of
 * dtype dt): its output. */
static int32_t qdq(mi_graph_t *g, const char *type, const char *name, int32_t x, int32_t dt, float s, int32_t z) {
  char nm[64];
  int32_t y = val(g, name);
  snprintf(nm, sizeof nm, "%s_s", name);
  int32_t s_t = f32(g, nm, s);
  snprintf(nm, sizeof nm, "%s_z", name);
  int32_t in[3] = {x, s_t, code(g, nm, dt, z)};
  op(g, type, 3, in, y);
  return y;
}
#define dq(g, name, codes, dt, s, z) qdq(g, "DequantizeLinear", name, codes, dt, s, z)
#define q(g, name, x, dt, s, z) qdq(g, "QuantizeLinear", name, x, dt, s, z)

/* A Conv of INT8 weights [m][cg][k][k] (per-channel scales through DQ's axis) and a float bias. */
static int32_t conv(mi_graph_t *g, const char *name, int32_t x, int64_t m, int64_t cg, int64_t k, int64_t s,
                    int64_t group) {
  char nm[64];
  int64_t wd[4] = {m, cg, k, k}, wn = m * cg * k * k, i;
  int8_t *w = malloc((size_t)wn), *wz = calloc((size_t)m, 1);
  float *ws = malloc((size_t)m * sizeof(float)), *b = malloc((size_t)m * sizeof(float));
  REQUIRE(w && wz && ws && b);
  for (i = 0; i < wn; i++) w[i] = (int8_t)rnd(-127, 127);
  for (i = 0; i < m; i++) {
    ws[i] = (float)rnd(1, 40) * 0.0011f;
    b[i] = (float)rnd(-300, 300) * 0.01f;
  }
  snprintf(nm, sizeof nm, "%s_w", name);
  int32_t wq = tensor(g, nm, MI_DTYPE_INT8, 4, wd, w, (size_t)wn);
  snprintf(nm, sizeof nm, "%s_ws", name);
  int32_t ws_t = tensor(g, nm, MI_DTYPE_FLOAT32, 1, &m, ws, (size_t)m * sizeof(float));
  snprintf(nm, sizeof nm, "%s_wz", name);
  int32_t wz_t = tensor(g, nm, MI_DTYPE_INT8, 1, &m, wz, (size_t)m);
  snprintf(nm, sizeof nm, "%s_wf", name);
  int32_t wf = val(g, nm), din[3] = {wq, ws_t, wz_t};
  mi_node_set_int(g, op(g, "DequantizeLinear", 3, din, wf), "axis", 0);
  snprintf(nm, sizeof nm, "%s_b", name);
  int32_t bt = tensor(g, nm, MI_DTYPE_FLOAT32, 1, &m, b, (size_t)m * sizeof(float)), y = val(g, name);
  int32_t in[3] = {x, wf, bt};
  int32_t n = op(g, "Conv", 3, in, y);
  int64_t st[2] = {s, s}, pd = (k - 1) / 2, pads[4] = {pd, pd, pd, pd};
  REQUIRE(mi_node_set_ints(g, n, "strides", 2, st) == MI_OK);
  REQUIRE(mi_node_set_ints(g, n, "pads", 4, pads) == MI_OK);
  REQUIRE(mi_node_set_int(g, n, "group", group) == MI_OK);
  free(w);
  free(wz);
  free(ws);
  free(b);
  return y;
}

static mi_graph_t *build(const bcase_t *c, int *nin) {
  int64_t oh = (c->h - 1) / c->s + 1, ow = (c->w - 1) / c->s + 1;
  int64_t xd[4] = {1, c->c, c->h, c->w}, rd[4] = {1, c->m, oh, ow};
  int u8 = c->dt == MI_DTYPE_UINT8;
  int32_t lo = u8 ? 0 : -128;
  mi_graph_t *g = mi_graph_create("qblock");
  REQUIRE(g);
  g->opset = 13;
  int32_t x = tensor(g, "x", c->dt, 4, xd, NULL, 0);
  REQUIRE(mi_graph_add_input(g, x) == MI_OK);
  *nin = 1;
  int32_t xf = dq(g, "xf", x, c->dt, 0.043f, u8 ? 131 : -5);
  int32_t d = conv(g, "dw", xf, c->c, 1, 3, c->s, c->c);
  int32_t dr = val(g, "dw_relu");
  op(g, "Relu", 1, &d, dr);
  int32_t dq_c = q(g, "dw_q", dr, c->dt, 0.031f, lo);
  int32_t p = conv(g, "pw", dq(g, "dw_f", dq_c, c->dt, 0.031f, lo), c->m, c->c, 1, 1, 1);
  int32_t pq = q(g, "pw_q", p, c->dt, 0.057f, u8 ? 120 : 4), y = pq;
  if (c->add) {
    int32_t res = xf;
    if (c->add == 2) {
      int32_t rx = tensor(g, "res", c->dt, 4, rd, NULL, 0);
      REQUIRE(mi_graph_add_input(g, rx) == MI_OK);
      *nin = 2;
      res = dq(g, "res_f", rx, c->dt, 0.021f, u8 ? 9 : 30);
    }
    if (c->add == 3) { /* the same quantization as x, so the widened codes are x's and zp's */
      int64_t zd[4] = {1, c->m - c->c, oh, ow}, zn = (c->m - c->c) * oh * ow;
      float *zeros = calloc((size_t)zn, sizeof *zeros);
      REQUIRE(zeros);
      int32_t ci[2] = {xf, tensor(g, "zeros", MI_DTYPE_FLOAT32, 4, zd, zeros, (size_t)zn * sizeof *zeros)};
      free(zeros);
      if (c->s == 2) {
        int32_t pn = op(g, "MaxPool", 1, &xf, ci[0] = val(g, "pool"));
        int64_t k2[2] = {2, 2};
        REQUIRE(mi_node_set_ints(g, pn, "kernel_shape", 2, k2) == MI_OK);
        REQUIRE(mi_node_set_ints(g, pn, "strides", 2, k2) == MI_OK);
      }
      int32_t cat = val(g, "widened");
      REQUIRE(mi_node_set_int(g, op(g, "Concat", 2, ci, cat), "axis", 1) == MI_OK);
      res = dq(g, "res_f", q(g, "res_q", cat, c->dt, 0.043f, u8 ? 131 : -5), c->dt, 0.043f, u8 ? 131 : -5);
    }
    int32_t ai[2] = {dq(g, "pw_f", pq, c->dt, 0.057f, u8 ? 120 : 4), res}, s = val(g, "sum");
    op(g, "Add", 2, ai, s);
    if (c->relu) {
      int32_t rl = val(g, "sum_relu");
      op(g, "Relu", 1, &s, rl);
      s = rl;
    }
    y = q(g, "y", s, c->dt, 0.037f, c->relu ? lo : (u8 ? 110 : -3));
  }
  REQUIRE(mi_graph_add_output(g, y) == MI_OK);
  if (c->dw_out) REQUIRE(mi_graph_add_output(g, dq_c) == MI_OK);
  return g;
}

/* One session run of case c on blis-cpu (weights and inputs drawn from seed); its outputs in
 * got, the reference's in want when want is not NULL. */
static int32_t run_case(const bcase_t *c, int dw_out, int kernels, mi_array_t **got, mi_array_t **want) {
  bcase_t v = *c;
  int nin = 0;
  mi_graph_t *g;
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in[2] = {0};
  mi_error_t err = {0, ""};
  v.dw_out = dw_out;
  g_rng = 777u;
  g = build(&v, &nin);
  REQUIRE(mi_graph_infer_shapes(g, &err) == MI_OK);
  for (int k = 0; k < nin; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    in[k] = mi_array_create(t->dtype, t->rank, t->dims);
    REQUIRE(in[k]);
    for (int64_t i = 0; i < (int64_t)in[k]->nbytes; i++) ((uint8_t *)in[k]->data)[i] = (uint8_t)rnd(0, 255);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  int32_t rc = mi_session_create(g, g_blis, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session: %s", c->name, err.message);
  if (rc == MI_OK) {
    CHECK(mi_session_kernel_count(s) == kernels, "%s: %d device kernels, expected %d%s%s", c->name,
          (int)mi_session_kernel_count(s), kernels, mi_session_unfused_count(s) ? "; " : "",
          mi_session_unfused_count(s) ? mi_session_unfused(s, 0) : "");
    rc = mi_session_run(s, (const mi_array_t *const *)in, nin, got, g->output_count, &err);
    CHECK(rc == MI_OK, "%s: run: %s", c->name, err.message);
  }
  if (rc == MI_OK && c->add == 3 && !dw_out) {
    /* the float plane of x (4 bytes a code) takes no device memory: only codes do */
    int64_t oh = (c->h - 1) / c->s + 1, ow = (c->w - 1) / c->s + 1, codes = c->c * c->h * c->w + 2 * c->m * oh * ow;
    uint64_t unplanned = 0;
    REQUIRE(mi_session_memory(s, NULL, &unplanned, NULL));
    CHECK(unplanned < (uint64_t)(codes + 2 * c->c * c->h * c->w), "%s: %llu bytes of tensors, the codes' %lld",
          c->name, (unsigned long long)unplanned, (long long)codes);
  }
  if (rc == MI_OK && want) {
    rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, want, g->output_count, &err);
    CHECK(rc == MI_OK, "%s: reference: %s", c->name, err.message);
  }
  for (int k = 0; k < 2; k++) mi_array_destroy(in[k]);
  mi_session_destroy(s);
  mi_graph_destroy(g);
  return rc;
}

/* Runs the case as one kernel and with its layers apart (the depthwise codes made a graph output
 * too, the lowered kernels of before): byte-equal outputs. Against the reference interpreter,
 * which sums the dequantized floats where the kernels sum the codes exactly, a depthwise code
 * moves by one where a float sum lands next to a rounding boundary, and the pointwise layer
 * carries that step times its weight on (test_blis_qconv compares the integer arithmetic itself
 * bit for bit): at most 1 output in 500 differs, by at most 8 codes. */
static void check(const bcase_t *c) {
  mi_array_t *got[2] = {0}, *apart[2] = {0}, *want[2] = {0};
  if (run_case(c, c->dw_out, c->kernels, got, want) == MI_OK && run_case(c, 1, (c->add ? 3 : 2) + (c->add == 3), apart, NULL) == MI_OK) {
    size_t diff = 0, off = 0, far = 0, spread[256] = {0}, codes = 0, most = 0;
    const uint8_t *a = got[0]->data, *b = apart[0]->data, *w = want[0]->data;
    int u8 = got[0]->dtype == MI_DTYPE_UINT8;
    REQUIRE(got[0]->nbytes == apart[0]->nbytes && got[0]->nbytes == want[0]->nbytes);
    for (size_t i = 0; i < got[0]->nbytes; i++) {
      int32_t d = u8 ? (int32_t)a[i] - w[i] : (int32_t)(int8_t)a[i] - (int8_t)w[i];
      diff += a[i] != b[i];
      off += d != 0;
      far += d > 1 || d < -1;
      most = (size_t)(d < 0 ? -d : d) > most ? (size_t)(d < 0 ? -d : d) : most;
      codes += spread[a[i]]++ == 0;
    }
    CHECK(diff == 0, "%s: %zu of %zu codes differ from the layers run apart", c->name, diff, got[0]->nbytes);
    CHECK(most <= 8 && off * 500 <= got[0]->nbytes,
          "%s: against the reference, %zu codes off by one, %zu by more (at most %zu), of %zu", c->name, off - far, far,
          most, got[0]->nbytes);
    CHECK(codes > 16, "%s: only %zu distinct codes; the case tests little", c->name, codes);
  }
  for (int k = 0; k < 2; k++) {
    mi_array_destroy(got[k]);
    mi_array_destroy(apart[k]);
    mi_array_destroy(want[k]);
  }
}

/* BlazeFace's block (the input as the residual, Relu after the Add; UINT8 and INT8, several
 * bands over the threads at 64x64), stride 2 with a residual of its own (BlazeFace's pooled,
 * channel-padded branch) and more pointwise outputs than inputs, and blocks without an Add. */
static void blocks(void) {
  static const bcase_t cases[] = {
      {"u8 24ch 20x37, input as residual, Relu", MI_DTYPE_UINT8, 24, 24, 20, 37, 1, 1, 1, 0, 1},
      {"s8 24ch 20x37, input as residual, Relu", MI_DTYPE_INT8, 24, 24, 20, 37, 1, 1, 1, 0, 1},
      {"u8 13ch -> 13, no Relu", MI_DTYPE_UINT8, 13, 13, 9, 11, 1, 1, 0, 0, 1},
      {"u8 28ch 64x64, several bands", MI_DTYPE_UINT8, 28, 28, 64, 64, 1, 1, 1, 0, 1},
      {"s8 stride 2, 24 -> 28, own residual", MI_DTYPE_INT8, 24, 28, 33, 30, 2, 2, 1, 0, 1},
      {"u8 stride 2, 10 -> 17, own residual", MI_DTYPE_UINT8, 10, 17, 16, 16, 2, 2, 0, 0, 1},
      {"u8 dw + pw, no Add", MI_DTYPE_UINT8, 24, 40, 19, 23, 1, 0, 0, 0, 1},
      {"s8 dw + pw, no Add, 96ch 8x8", MI_DTYPE_INT8, 96, 96, 8, 8, 1, 0, 0, 0, 1},
      {"u8 24 -> 28, widened input as residual, Relu", MI_DTYPE_UINT8, 24, 28, 20, 37, 1, 3, 1, 0, 2},
      {"s8 stride 2, 24 -> 32, pooled widened input, Relu", MI_DTYPE_INT8, 24, 32, 32, 30, 2, 3, 1, 0, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
}

static const tu_case_t tu_cases[] = {TU_CASE(blocks)};

TU_MAIN(setup, teardown)
