/* test_blis_qadd.c - the QDQ residual add: DQ(a), DQ(b) -> Add or Mul [-> Relu the Q implies]
 * -> Q of two runtime codes tensors runs on blis-cpu as ONE kernel on the codes (exec/plan.c,
 * blis_qadd.c), and every output code equals mi_ref_run's (which runs the nodes one by one)
 * byte for byte: UINT8 and INT8 codes, different scales and zero points, an operand broadcast
 * per channel, as one code or as a row over the last dim, codes that saturate. Where the sum is also a graph output the
 * nodes stay apart and still match. */
#include "test_qdq_graph.h"

typedef struct qcase {
  const char *name, *op;
  int32_t dt;
  float sa, sb, sy;
  int32_t za, zb, zy;
  int b_rank;        /* 4: [1,6,9,11]; 1: one code [1]; -1: per channel [1,6,1,1]; 2: a row [1,1,1,11] */
  int relu;          /* a Relu between the op and the Q (zy must be the lowest code) */
  int sum_is_output; /* the float sum is a graph output too: no lowering */
  int kernels;       /* device kernels expected */
  int big;           /* 40 x 40 planes: a broadcast value spans runs of 1600+ outputs (blis_qadd.c's table per run) */
  int swap;          /* the op reads b first (the broadcast operand on the left) */
} qcase_t;

static mi_graph_t *build(const qcase_t *c) {
  int64_t d[4] = {1, 6, c->big ? 40 : 9, c->big ? 40 : 11}, dc[4] = {1, 6, 1, 1}, d1[1] = {1};
  int64_t dr[4] = {1, 1, 1, d[3]};
  mi_graph_t *g = mi_graph_create("qadd");
  REQUIRE(g);
  g->opset = 13;
  int32_t a = tensor(g, "a", c->dt, 4, d, NULL, 0);
  int32_t b = c->b_rank == 4   ? tensor(g, "b", c->dt, 4, d, NULL, 0)
              : c->b_rank == 1 ? tensor(g, "b", c->dt, 1, d1, NULL, 0)
              : c->b_rank == 2 ? tensor(g, "b", c->dt, 4, dr, NULL, 0)
                               : tensor(g, "b", c->dt, 4, dc, NULL, 0);
  REQUIRE(mi_graph_add_input(g, a) == MI_OK);
  REQUIRE(mi_graph_add_input(g, b) == MI_OK);
  int32_t af = val(g, "af"), bf = val(g, "bf"), s = val(g, "s"), y = val(g, "y");
  int32_t ai[3] = {a, f32(g, "as", c->sa), code(g, "az", c->dt, c->za)};
  int32_t bi[3] = {b, f32(g, "bs", c->sb), code(g, "bz", c->dt, c->zb)};
  op(g, "DequantizeLinear", 3, ai, af);
  op(g, "DequantizeLinear", 3, bi, bf);
  int32_t si[2] = {c->swap ? bf : af, c->swap ? af : bf};
  op(g, c->op, 2, si, s);
  if (c->relu) {
    int32_t rl = val(g, "r");
    op(g, "Relu", 1, &s, rl);
    s = rl;
  }
  int32_t yi[3] = {s, f32(g, "ys", c->sy), code(g, "yz", c->dt, c->zy)};
  op(g, "QuantizeLinear", 3, yi, y);
  REQUIRE(mi_graph_add_output(g, y) == MI_OK);
  if (c->sum_is_output) REQUIRE(mi_graph_add_output(g, s) == MI_OK);
  return g;
}

/* Runs the case on blis-cpu (no host fallback) and on the reference: byte-equal outputs, and
 * the number of device kernels as expected. */
static void check(const qcase_t *c) {
  mi_graph_t *g = build(c);
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in[2] = {0}, *got[2] = {0}, *want[2] = {0};
  mi_error_t err = {0, ""};
  int32_t nout = g->output_count;
  REQUIRE(mi_graph_infer_shapes(g, &err) == MI_OK);
  for (int k = 0; k < 2; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    in[k] = mi_array_create(t->dtype, t->rank, t->dims);
    REQUIRE(in[k]);
    /* every code appears in a, and many pairs meet */
    for (int64_t i = 0; i < (int64_t)in[k]->nbytes; i++)
      ((uint8_t *)in[k]->data)[i] = (uint8_t)(k ? i * 91 + 7 : i * 37 + 11);
  }
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  int32_t rc = mi_session_create(g, g_blis, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session: %s", c->name, err.message);
  if (rc == MI_OK) {
    CHECK(mi_session_kernel_count(s) == c->kernels, "%s: %d device kernels, expected %d", c->name,
          (int)mi_session_kernel_count(s), c->kernels);
    rc = mi_session_run(s, (const mi_array_t *const *)in, 2, got, nout, &err);
    CHECK(rc == MI_OK, "%s: run: %s", c->name, err.message);
  }
  if (rc == MI_OK) {
    rc = mi_ref_run(g, (const mi_array_t *const *)in, 2, want, nout, &err);
    CHECK(rc == MI_OK, "%s: reference: %s", c->name, err.message);
  }
  for (int32_t k = 0; rc == MI_OK && k < nout; k++) {
    size_t diff = 0, sat = 0;
    REQUIRE(got[k]->nbytes == want[k]->nbytes && got[k]->dtype == want[k]->dtype);
    for (size_t i = 0; i < got[k]->nbytes; i++) {
      const uint8_t *x = got[k]->data, *y = want[k]->data;
      diff += x[i] != y[i];
      sat += got[k]->dtype == MI_DTYPE_UINT8 ? x[i] == 255 : x[i] == 127;
    }
    CHECK(diff == 0, "%s: output %d: %zu of %zu bytes differ from the reference", c->name, (int)k, diff,
          got[k]->nbytes);
    if (k == 0) CHECK(sat > 0, "%s: no code saturates; the case does not test saturation", c->name);
  }
  for (int k = 0; k < 2; k++) {
    mi_array_destroy(got[k]);
    mi_array_destroy(want[k]);
    mi_array_destroy(in[k]);
  }
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* A residual add as a QDQ export writes it, UINT8 and INT8, with and without the Relu. */
static void residual_add(void) {
  static const qcase_t cases[] = {
      {"Add u8", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.037f, 131, 9, 120, 4, 0, 0, 1, 0, 0},
      {"Add s8", "Add", MI_DTYPE_INT8, 0.05f, 0.013f, 0.029f, -7, 30, 3, 4, 0, 0, 1, 0, 0},
      {"Add Relu u8 (Q at code 0)", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.02f, 131, 9, 0, 4, 1, 0, 1, 0, 0},
      {"Add Relu s8 (Q at code -128)", "Add", MI_DTYPE_INT8, 0.05f, 0.013f, 0.011f, -7, 30, -128, 4, 1, 0, 1, 0, 0},
      /* 40x40 planes: full operands over several blocks of the parallel split */
      {"Add u8, 40x40 planes", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.037f, 131, 9, 120, 4, 0, 0, 1, 1, 0},
      {"Mul s8, 40x40 planes", "Mul", MI_DTYPE_INT8, 0.05f, 0.013f, 0.009f, -7, 30, 3, 4, 0, 0, 1, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
}

/* Mul of two quantized values (SE gating, attention scaling), and broadcast operands. */
static void mul_and_broadcast(void) {
  static const qcase_t cases[] = {
      {"Mul u8", "Mul", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.011f, 131, 9, 100, 4, 0, 0, 1, 0, 0},
      {"Mul s8 by channel", "Mul", MI_DTYPE_INT8, 0.05f, 0.013f, 0.009f, -7, 30, 3, -1, 0, 0, 1, 0, 0},
      {"Add u8 one code", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.037f, 131, 9, 120, 1, 0, 0, 1, 0, 0},
      {"Add s8 by channel", "Add", MI_DTYPE_INT8, 0.05f, 0.013f, 0.029f, -7, 30, 3, -1, 0, 0, 1, 0, 0},
      {"Mul s8 by channel, 40x40 planes", "Mul", MI_DTYPE_INT8, 0.05f, 0.013f, 0.009f, -7, 30, 3, -1, 0, 0, 1, 1, 0},
      {"Mul u8 by channel first, 40x40 planes", "Mul", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.011f, 131, 9, 100, -1, 0, 0, 1, 1, 1},
      {"Add u8 one code first, 40x40 planes", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.037f, 131, 9, 120, 1, 0, 0, 1, 1, 1},
      {"Add s8 by channel, Relu, 40x40 planes", "Add", MI_DTYPE_INT8, 0.05f, 0.013f, 0.029f, -7, 30, -128, -1, 1, 0, 1, 1, 0},
      /* a row over the last dim, as a [1,1,1,S] attention mask meets [1,H,S,S] scores: blocks of
       * 512 outputs start inside a row (512 = 46 * 11 + 6 = 12 * 40 + 32) */
      {"Add s8 last-dim row", "Add", MI_DTYPE_INT8, 0.05f, 0.013f, 0.029f, -7, 30, 3, 2, 0, 0, 1, 0, 0},
      {"Add u8 last-dim row, 40x40 planes", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.037f, 131, 9, 120, 2, 0, 0, 1, 1, 0},
      {"Mul s8 last-dim row first, 40x40 planes", "Mul", MI_DTYPE_INT8, 0.05f, 0.013f, 0.009f, -7, 30, 3, 2, 0, 0, 1, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
}

/* The float sum is read outside (a graph output): DQ, DQ, Add and Q stay four kernels. */
static void sum_read_outside(void) {
  static const qcase_t c = {"Add u8, sum also an output", "Add", MI_DTYPE_UINT8, 0.043f, 0.021f, 0.037f,
                            131, 9, 120, 4, 0, 1, 4, 0, 0};
  check(&c);
}

static const tu_case_t tu_cases[] = {TU_CASE(residual_add), TU_CASE(mul_and_broadcast), TU_CASE(sum_read_outside)};

TU_MAIN(setup, teardown)
