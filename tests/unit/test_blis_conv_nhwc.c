/* test_blis_conv_nhwc.c - blis-cpu conv.direct_nhwc (and every other conv variant and knob value)
 * on the conv shapes of PP-OCR v2 cls, checked against the reference interpreter; shapes with
 * dynamic (-1) or empty dims, as the space's probe hands them over when a model's input shapes
 * are not known (mi-run --deployment whose recipe it cannot find), must be refused, not packed
 * into a block sized from the wrapped product. */
#include "test_blis_util.h"

#include "metainfer/mi_graph.h"

typedef struct cshape {
  int64_t n, c, h, w, m, kh, kw, sh, sw, p, g, bias;
} cshape_t;

/* Every distinct conv of ppocr_v2_cls.onnx at x:1x3x48x192 (mi-run --profile), plus odd widths
 * and groups the model does not have. Pads are symmetric (p on each side). */
static const cshape_t shapes[] = {
    {1, 3, 48, 192, 8, 3, 3, 2, 2, 1, 1, 0}, /* stem */
    {1, 8, 24, 96, 8, 1, 1, 1, 1, 0, 1, 0},  /* 1x1 */
    {1, 8, 24, 96, 8, 3, 3, 2, 1, 1, 8, 0},  /* depthwise 3x3 stride (2,1) */
    {1, 8, 12, 96, 24, 1, 1, 1, 1, 0, 1, 0},
    {1, 24, 12, 96, 24, 3, 3, 2, 1, 1, 24, 0},
    {1, 24, 6, 96, 8, 1, 1, 1, 1, 0, 1, 0},
    {1, 32, 6, 96, 32, 5, 5, 2, 1, 2, 32, 0}, /* depthwise 5x5 stride (2,1) */
    {1, 16, 3, 96, 88, 1, 1, 1, 1, 0, 1, 0},  /* 88 channels */
    {1, 88, 3, 96, 88, 5, 5, 1, 1, 2, 88, 0}, /* depthwise 5x5 stride 1 */
    {1, 88, 3, 96, 16, 1, 1, 1, 1, 0, 1, 0},
    {1, 40, 3, 96, 40, 5, 5, 1, 1, 2, 40, 0},
    {1, 16, 3, 96, 104, 1, 1, 1, 1, 0, 1, 0}, /* 104 channels */
    {1, 104, 3, 96, 104, 5, 5, 2, 1, 2, 104, 0},
    {1, 104, 2, 96, 32, 1, 1, 1, 1, 0, 1, 0},
    {1, 32, 2, 96, 200, 1, 1, 1, 1, 0, 1, 0}, /* 200 channels */
    {1, 200, 2, 96, 200, 5, 5, 1, 1, 2, 200, 0},
    {1, 200, 2, 96, 32, 1, 1, 1, 1, 0, 1, 0},
    {1, 200, 1, 1, 50, 1, 1, 1, 1, 0, 1, 1}, /* squeeze-excite 1x1 on 1x1 planes, bias */
    {1, 50, 1, 1, 200, 1, 1, 1, 1, 0, 1, 1},
    {1, 8, 1, 1, 2, 1, 1, 1, 1, 0, 1, 1},
    {2, 12, 7, 9, 20, 3, 3, 1, 2, 1, 4, 1}, /* grouped, batch 2, odd plane */
    {1, 6, 5, 11, 18, 3, 3, 1, 1, 1, 6, 1}, /* depthwise multiplier 3 */
    {1, 9, 5, 13, 70, 1, 1, 1, 1, 0, 1, 0}, /* 70: not a multiple of any oc_block */
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static tb_plugin_t p;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t pad) {
  return (in + 2 * pad - k) / s + 1;
}

/* One shape's data and the reference interpreter's output. */
typedef struct ccase {
  cshape_t s;
  int64_t xd[4], wd[4], yd[4], xn, wn, yn;
  int64_t pads[4], st[2]; /* the kernel description's attributes point here */
  float *x, *w, *b, *ref;
} ccase_t;

static void case_init(ccase_t *k, const cshape_t *s) {
  int64_t pads[4] = {s->p, s->p, s->p, s->p}, st[2] = {s->sh, s->sw}, ks[2] = {s->kh, s->kw};
  mi_graph_t *g = mi_graph_create("conv");
  mi_array_t *in, *out = NULL;
  mi_error_t err = {0, ""};
  int32_t tx, tw, tb_ = -1, ty, ins[3], node;
  memset(k, 0, sizeof *k);
  k->s = *s;
  memcpy(k->pads, pads, sizeof pads);
  memcpy(k->st, st, sizeof st);
  k->xd[0] = s->n;
  k->xd[1] = s->c;
  k->xd[2] = s->h;
  k->xd[3] = s->w;
  k->wd[0] = s->m;
  k->wd[1] = s->c / s->g;
  k->wd[2] = s->kh;
  k->wd[3] = s->kw;
  k->yd[0] = s->n;
  k->yd[1] = s->m;
  k->yd[2] = out_dim(s->h, s->kh, s->sh, s->p);
  k->yd[3] = out_dim(s->w, s->kw, s->sw, s->p);
  k->xn = s->n * s->c * s->h * s->w;
  k->wn = k->wd[0] * k->wd[1] * s->kh * s->kw;
  k->yn = k->yd[0] * k->yd[1] * k->yd[2] * k->yd[3];
  k->x = malloc((size_t)k->xn * 4);
  k->w = malloc((size_t)k->wn * 4);
  k->b = malloc((size_t)s->m * 4);
  k->ref = malloc((size_t)k->yn * 4);
  REQUIRE(g && k->x && k->w && k->b && k->ref);
  tb_fill(k->x, k->xn, 1);
  tb_fill(k->w, k->wn, 2);
  tb_fill(k->b, s->m, 3);
  g->opset = 17;
  tx = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, k->xd);
  mi_graph_add_input(g, tx);
  tw = mi_graph_add_const_f32(g, "w", 4, k->wd, k->w);
  if (s->bias) tb_ = mi_graph_add_const_f32(g, "b", 1, &s->m, k->b);
  ty = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 4, k->yd);
  ins[0] = tx;
  ins[1] = tw;
  ins[2] = tb_;
  node = mi_graph_add_node(g, "Conv", "conv", s->bias ? 3 : 2, ins, 1, &ty);
  mi_graph_add_output(g, ty);
  mi_node_set_ints(g, node, "kernel_shape", 2, ks);
  mi_node_set_ints(g, node, "strides", 2, st);
  mi_node_set_ints(g, node, "pads", 4, pads);
  mi_node_set_int(g, node, "group", s->g);
  in = mi_array_create(MI_DTYPE_FLOAT32, 4, k->xd);
  REQUIRE(in);
  memcpy(in->data, k->x, (size_t)k->xn * 4);
  REQUIRE(mi_ref_run(g, (const mi_array_t *const *)&in, 1, &out, 1, &err) == MI_OK, "reference: %s",
          err.message);
  REQUIRE(mi_array_numel(out) == k->yn);
  memcpy(k->ref, out->data, (size_t)k->yn * 4);
  mi_array_destroy(out);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

static void case_free(ccase_t *k) {
  free(k->x);
  free(k->w);
  free(k->b);
  free(k->ref);
}

/* The same conv as a blis-cpu kernel description (dims as given, so a test can make them -1). */
static void case_desc(const ccase_t *k, tb_t *b, const int64_t *xd, const int64_t *yd) {
  int tx, tw, tb_, ty, node, in3[3];
  memset(b, 0, sizeof *b);
  tx = tb_tensor(b, 4, xd, NULL);
  tw = tb_tensor(b, 4, k->wd, k->w);
  tb_ = k->s.bias ? tb_tensor(b, 1, &k->s.m, k->b) : -1;
  ty = tb_tensor(b, 4, yd, NULL);
  in3[0] = tx;
  in3[1] = tw;
  in3[2] = tb_;
  node = tb_node(b, "Conv", 17, k->s.bias ? 3 : 2, in3, ty);
  tb_attr_is(b, node, "kernel_shape", 2, k->wd + 2);
  tb_attr_is(b, node, "strides", 2, k->st);
  tb_attr_is(b, node, "pads", 4, k->pads);
  tb_attr_i(b, node, "group", k->s.g);
  tb_finish(b, ty);
}

/* Runs `variant` with one knob (name NULL: none); 1 when it ran and matched the reference, 0
 * when the variant refused the conv (UNSUPPORTED / INVALID_CONFIG), a failed check otherwise. */
static int run_one(const ccase_t *k, const char *variant, const char *knob, int64_t v, double tol) {
  mi_knob_value_t kv = {knob, v, 0.};
  mi_error_t err = {0, ""};
  const float *ins[1];
  float *got = malloc((size_t)k->yn * 4);
  tb_t b;
  int32_t rc;
  int ok = 0;
  REQUIRE(got);
  case_desc(k, &b, k->xd, k->yd);
  ins[0] = k->x;
  rc = tb_run(&p, &b, variant, &kv, knob ? 1 : 0, ins, got, &err);
  if (rc == MI_OK) {
    double e = tu_rel_l2(got, k->ref, k->yn);
    ok = 1;
    CHECK(e < tol, "%s %s=%lld on %lldx%lldx%lldx%lld -> %lld k%lldx%lld s%lldx%lld g%lld: rel L2 %g", variant,
          knob ? knob : "-", (long long)v, (long long)k->s.n, (long long)k->s.c, (long long)k->s.h,
          (long long)k->s.w, (long long)k->s.m, (long long)k->s.kh, (long long)k->s.kw, (long long)k->s.sh,
          (long long)k->s.sw, (long long)k->s.g, e);
  } else {
    CHECK(rc == MI_ERR_UNSUPPORTED || rc == MI_ERR_INVALID_CONFIG, "%s on shape c%lld m%lld: status %d: %s",
          variant, (long long)k->s.c, (long long)k->s.m, rc, err.message);
  }
  free(got);
  return ok;
}

static void setup(void) {
  REQUIRE(tb_load(&p));
}

static void teardown(void) {
  tb_unload(&p);
}

/* conv.direct_nhwc with each oc_block on every shape: it takes every FLOAT32 conv. */
static void direct_nhwc_shapes(void) {
  static const int64_t ob[] = {8, 16, 32, 64};
  int i, j;
  for (i = 0; i < NSHAPES; i++) {
    ccase_t k;
    case_init(&k, &shapes[i]);
    for (j = 0; j < 4; j++) CHECK(run_one(&k, "conv.direct_nhwc", "oc_block", ob[j], 1e-5), "shape %d refused", i);
    case_free(&k);
  }
}

/* Every conv variant blis-cpu declares, with every value of each of its knobs, on every shape:
 * under ASan this is the sweep for out-of-bounds packing or scratch in any of them. */
static void all_variants_shapes(void) {
  static const char *const fp32[] = {"conv.im2col_gemm", "conv.1x1_gemm", "conv.packed_gemm",
                                     "conv.depthwise_direct", "conv.direct_nhwc"};
  static const int64_t blocks[] = {0, 256, 1024, 4096, 16384};
  int i, j, q, ran = 0;
  for (i = 0; i < NSHAPES; i++) {
    ccase_t k;
    case_init(&k, &shapes[i]);
    for (j = 0; j < 5; j++) {
      ran += run_one(&k, fp32[j], NULL, 0, 1e-5);
      for (q = 1; q <= 4; q *= 2) ran += run_one(&k, fp32[j], "threads", q, 1e-5);
      for (q = 0; q < 5; q++) ran += run_one(&k, fp32[j], "im2col_block", blocks[q], 1e-5);
      for (q = 0; q < 8; q++) ran += run_one(&k, fp32[j], "simd", q, 1e-5); /* past simd_n: refused */
      for (q = 0; q < 8; q++) ran += run_one(&k, fp32[j], "arch", q, 1e-5); /* past arch_n: refused */
    }
    /* FP16 weight panels: rounding of the weights only (where the CPU has F16C) */
    ran += run_one(&k, "conv.packed_gemm_fp16", NULL, 0, 2e-3);
    for (q = 0; q < 5; q++) ran += run_one(&k, "conv.packed_gemm_fp16", "im2col_block", blocks[q], 2e-3);
    for (q = 0; q < 8; q++) ran += run_one(&k, "conv.packed_gemm_fp16", "simd", q, 2e-3);
    case_free(&k);
  }
  CHECK(ran > 10 * NSHAPES, "only %d runs were accepted", ran);
}

/* A dynamic (-1) or empty (0) dim, as the space's probe gets it for a model whose input shapes
 * are unknown: every variant refuses the conv with a message instead of sizing its blocks from
 * a wrapped product (conv.direct_nhwc wrote past its packed block here: issue #22 item 3). */
static void unknown_dims_refused(void) {
  static const char *const vars[] = {"conv.im2col_gemm", "conv.1x1_gemm", "conv.packed_gemm",
                                     "conv.packed_gemm_fp16", "conv.depthwise_direct", "conv.direct_nhwc"};
  static const int64_t bad[] = {-1, 0};
  int i, j, d, v;
  for (i = 0; i < NSHAPES; i++) {
    ccase_t k;
    case_init(&k, &shapes[i]);
    for (j = 0; j < 2; j++)
      for (d = 0; d < 4; d++) {
        int64_t xd[4], yd[4];
        memcpy(xd, k.xd, sizeof xd);
        memcpy(yd, k.yd, sizeof yd);
        if (d == 1) continue; /* channels: the weights say what they must be */
        xd[d] = bad[j];
        if (d == 0) yd[0] = bad[j];
        for (v = 0; v < 6; v++) {
          mi_kernel_desc_t desc;
          mi_kernel_t *kern = NULL;
          mi_error_t err = {0, ""};
          mi_knob_value_t kv = {"oc_block", 8, 0.};
          tb_t b;
          int32_t rc;
          case_desc(&k, &b, xd, yd);
          tb_desc(&b, &desc, vars[v], &kv, v == 5 ? 1 : 0);
          rc = p.api->kernel_prepare(p.ctx, 0, &desc, &kern, &err);
          CHECK(rc == MI_ERR_UNSUPPORTED || rc == MI_ERR_INVALID_CONFIG,
                "%s with x dim %d = %lld on shape %d: status %d (%s)", vars[v], d, (long long)bad[j], i, rc,
                err.message);
          if (kern) p.api->kernel_release(p.ctx, kern);
        }
      }
    case_free(&k);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(direct_nhwc_shapes),
    TU_CASE(all_variants_shapes),
    TU_CASE(unknown_dims_refused),
};

TU_MAIN(setup, teardown)
