/* test_opencl_conv_tiled.c - the tuning variants of Conv on the OpenCL plugin (conv.tiled,
 * conv.dw_tiled, their vector forms conv.tiled_vec and conv.dw_vec, the pointwise conv.pw_vec,
 * conv.im2col_regblock, conv.implicit_gemm) against a naive convolution, over odd sizes, asymmetric
 * pads, strides 1 and 2, dilation, groups, depthwise multipliers, 1x1 and non-square filters,
 * each at several knob settings (blocks that do not divide the output, work-groups wider than
 * a row), a fused Relu + residual Add, and the shapes each variant refuses. */
#include <stdlib.h>

#include "test_opencl_common.h"

typedef struct shape {
  int n, c, h, w, oc, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, g;
} shape_t;

static const shape_t k_shapes[] = {
    {1, 3, 17, 19, 5, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, 1}, /* a detector's first layer, odd */
    {2, 4, 9, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 6, 11, 13, 6, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 2}, /* groups of 3 -> 3 */
    {1, 7, 6, 5, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* pointwise */
    {1, 5, 9, 10, 3, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},  /* pointwise, stride 2 */
    {1, 3, 8, 9, 4, 3, 1, 1, 2, 1, 0, 1, 0, 1, 1, 1},   /* 3x1, strides (1, 2) */
    {1, 2, 12, 11, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, /* dilation 2 */
    {1, 5, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5},  /* depthwise */
    {2, 4, 13, 11, 8, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 4}, /* depthwise x2, 5x5 stride 2 */
    {1, 3, 14, 15, 3, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 3}, /* depthwise, stride 2, pad at the end */
    {1, 4, 9, 12, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 4},  /* depthwise, dilation 2 */
};

static int out_h(const shape_t *s) { return (s->h + s->pt + s->pb - s->dh * (s->kh - 1) - 1) / s->sh + 1; }
static int out_w(const shape_t *s) { return (s->w + s->pl + s->pr - s->dw * (s->kw - 1) - 1) / s->sw + 1; }
static int is_dw(const shape_t *s) { return s->g == s->c && s->oc % s->c == 0; }

/* The oracle: NCHW, pads (top, left, bottom, right), strides, dilations, groups; then Relu and
 * the residual when res is given. */
static void ref(const shape_t *s, const float *x, const float *w, const float *b, const float *res,
                float *y) {
  int OH = out_h(s), OW = out_w(s), Cg = s->c / s->g, OCg = s->oc / s->g;
  for (int n = 0; n < s->n; n++)
    for (int oc = 0; oc < s->oc; oc++)
      for (int oh = 0; oh < OH; oh++)
        for (int ow = 0; ow < OW; ow++) {
          double acc = b[oc];
          int gi = oc / OCg, i = ((n * s->oc + oc) * OH + oh) * OW + ow;
          for (int ic = 0; ic < Cg; ic++)
            for (int kh = 0; kh < s->kh; kh++)
              for (int kw = 0; kw < s->kw; kw++) {
                int ih = oh * s->sh - s->pt + kh * s->dh, iw = ow * s->sw - s->pl + kw * s->dw;
                if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w) continue;
                acc += (double)x[((n * s->c + gi * Cg + ic) * s->h + ih) * s->w + iw] *
                       w[((oc * Cg + ic) * s->kh + kh) * s->kw + kw];
              }
          if (res) acc = (acc > 0 ? acc : 0) + res[i];
          y[i] = (float)acc;
        }
}

typedef struct knobset {
  const char *name[5];
  int64_t v[5];
} knobset_t;

static ocl_t o;

/* Runs shape s as `variant` with knobs ks (fused Relu + Add when fused); returns the prepare
 * or run status, and on success checks the result against the oracle. */
static int32_t run_one(const shape_t *s, const char *variant, const knobset_t *ks, int fused,
                       int weights_at_run) {
  int OH = out_h(s), OW = out_w(s);
  size_t nx = (size_t)s->n * s->c * s->h * s->w, ny = (size_t)s->n * s->oc * OH * OW;
  size_t nw = (size_t)s->oc * (s->c / s->g) * s->kh * s->kw;
  /* one block: x, w, b, the residual, the result, the reference */
  float *x = calloc(nx + nw + (size_t)s->oc + 3 * ny, 4), *w = x + nx, *b = w + nw;
  float *res = b + s->oc, *y = res + ny, *r = y + ny;
  int64_t dx[4] = {s->n, s->c, s->h, s->w}, dy[4] = {s->n, s->oc, OH, OW};
  int64_t dwt[4] = {s->oc, s->c / s->g, s->kh, s->kw}, db[1] = {s->oc};
  int64_t ksz[2] = {s->kh, s->kw}, st[2] = {s->sh, s->sw}, dil[2] = {s->dh, s->dw};
  int64_t pads[4] = {s->pt, s->pl, s->pb, s->pr};
  const float *ins[3];
  float *outs[1] = {y};
  mi_error_t err = {0, ""};
  mi_node_desc_t *cv;
  kd_t k;
  int in[3], t1, t2, xi, i;
  int32_t rc;
  REQUIRE(x);
  fill(x, nx, 21);
  fill(w, nw, 22);
  fill(b, (size_t)s->oc, 23);
  fill(res, ny, 24);
  memset(&k, 0, sizeof k);
  xi = kd_tensor(&k, 4, dx, NULL);
  k.ins[k.nin++] = xi;
  in[0] = xi;
  in[1] = kd_tensor(&k, 4, dwt, weights_at_run ? NULL : w);
  in[2] = kd_tensor(&k, 1, db, b);
  if (weights_at_run) k.ins[k.nin++] = in[1];
  t1 = kd_tensor(&k, 4, dy, NULL);
  cv = kd_node(&k, "Conv", 3, in, t1);
  kd_attr_ints(&k, cv, "kernel_shape", 2, ksz);
  kd_attr_ints(&k, cv, "strides", 2, st);
  kd_attr_ints(&k, cv, "pads", 4, pads);
  kd_attr_ints(&k, cv, "dilations", 2, dil);
  kd_attr_int(&k, cv, "group", s->g);
  if (fused) {
    int resi = kd_tensor(&k, 4, dy, NULL);
    t2 = kd_tensor(&k, 4, dy, NULL);
    kd_node(&k, "Relu", 1, &t1, t2);
    k.outs[k.nout++] = kd_tensor(&k, 4, dy, NULL);
    in[0] = t2;
    in[1] = resi;
    kd_node(&k, "Add", 2, in, k.outs[0]);
    k.ins[k.nin++] = resi;
  } else {
    k.outs[k.nout++] = t1;
  }
  for (i = 0; ks && i < 5 && ks->name[i]; i++) kd_knob(&k, ks->name[i], ks->v[i]);
  ins[0] = x;
  ins[1] = weights_at_run ? w : res;
  ins[2] = res;
  rc = ocl_run(&o, kd_finish(&k, variant), ins, outs, NULL, &err);
  if (rc == MI_OK) {
    double e;
    ref(s, x, w, b, fused ? res : NULL, r);
    e = tu_rel_l2(y, r, ny);
    if (e >= 1e-5)
      fprintf(stderr, "%s %dx%dx%dx%d->%d k%dx%d s%d,%d g%d %s=%lld %s=%lld: rel L2 %.3g\n",
              variant, s->n, s->c, s->h, s->w, s->oc, s->kh, s->kw, s->sh, s->sw, s->g,
              ks && ks->name[0] ? ks->name[0] : "-", ks ? (long long)ks->v[0] : 0LL,
              ks && ks->name[1] ? ks->name[1] : "-", ks ? (long long)ks->v[1] : 0LL, e);
    REQUIRE(e < 1e-5);
  } else {
    fprintf(stderr, "%s: %s\n", variant, err.message);
  }
  free(x);
  return rc;
}

static const knobset_t k_tiled[] = {
    {{NULL}, {0}},
    {{"oc_per_item", "ow_per_item", "wg_x"}, {1, 1, 1}},
    {{"oc_per_item", "ow_per_item", "wg_x"}, {16, 4, 32}},
    {{"oc_per_item", "ow_per_item", "unroll"}, {8, 8, 2}},
    {{"oc_per_item", "ow_per_item", "wg_x"}, {2, 16, 4}},
};
static const knobset_t k_dw[] = {
    {{NULL}, {0}},
    {{"oh_per_item", "ow_per_item", "wg_x"}, {1, 1, 1}},
    {{"oh_per_item", "ow_per_item", "wg_x"}, {8, 8, 16}},
    {{"oh_per_item", "ow_per_item", "wg_x"}, {4, 16, 2}},
    {{"oh_per_item", "ow_per_item"}, {2, 1}},
};
/* The vector forms (ow_per_item 2..16 as one floatN; 1 has no vector and stays scalar): blocks
 * and work-groups that do not divide the output row, a work-group wider than the row. */
static const knobset_t k_vec[] = {
    {{NULL}, {0}},
    {{"ow_per_item", "wg_x", "oh_per_item", "oc_per_item"}, {2, 4, 4, 8}},
    {{"ow_per_item", "wg_x", "oh_per_item", "oc_per_item"}, {8, 16, 1, 2}},
    {{"ow_per_item", "wg_x", "oh_per_item", "oc_per_item"}, {16, 2, 4, 4}},
    {{"ow_per_item", "wg_x", "oh_per_item", "oc_per_item"}, {1, 1, 2, 16}},
};
/* conv.pw_vec's shapes: planes that its oh_per_item x ow_per_item pixel blocks do not divide
 * (30, 63 pixels), channel counts its oc_per_item blocks do not divide (9, 28, 3), two images,
 * and one of the detector's 64x64 layers. */
static const shape_t k_pw[] = {
    {1, 7, 6, 5, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
    {2, 24, 8, 8, 28, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
    {1, 5, 7, 9, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
    {1, 24, 64, 64, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
};
/* ow_per_item 1 is its scalar form; the rest are floatN vectors */
static const knobset_t k_pwk[] = {
    {{NULL}, {0}},
    {{"oc_per_item", "ow_per_item", "oh_per_item", "wg_x"}, {4, 4, 1, 1}},
    {{"oc_per_item", "ow_per_item", "oh_per_item", "wg_x"}, {16, 2, 4, 8}},
    {{"oc_per_item", "ow_per_item", "oh_per_item", "wg_x"}, {1, 1, 8, 2}},
    {{"oc_per_item", "ow_per_item", "oh_per_item", "unroll"}, {2, 8, 8, 4}},
};
static const knobset_t k_reg[] = {
    {{NULL}, {0}},
    {{"tile_m", "tile_n", "vector_width"}, {8, 16, 2}},
    {{"wg_x", "tile_n", "vector_width"}, {4, 32, 8}},
};

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static void setup(void) {
  memset(&o, 0, sizeof o);
  ocl_env(&o);
  ocl_open_or_skip(&o);
}

static void teardown(void) {
  ocl_close(&o);
  ocl_rm_cache(&o);
}

/* Every shape at its variant's defaults and at one other setting, the settings taken in turn
 * (each is a program of its own per filter geometry: the whole cross product would take minutes
 * of compiling), and the last setting again with Relu + residual Add fused. */
static void tiled_matches_reference(void) {
  for (size_t i = 0; i < COUNT(k_shapes); i++) {
    const shape_t *s = &k_shapes[i];
    const char *v = is_dw(s) ? "conv.dw_tiled" : "conv.tiled";
    const knobset_t *ks = is_dw(s) ? k_dw : k_tiled;
    size_t nk = is_dw(s) ? COUNT(k_dw) : COUNT(k_tiled), j = 1 + i % (nk - 1);
    REQUIRE(run_one(s, v, &ks[0], 0, 0) == MI_OK);
    REQUIRE(run_one(s, v, &ks[j], 0, 0) == MI_OK);
    REQUIRE(run_one(s, v, &ks[j], 1, 0) == MI_OK); /* + Relu + residual Add */
  }
}

/* conv.tiled_vec / conv.dw_vec: every shape at the defaults and at one other setting with Relu
 * + residual Add fused, the settings taken in turn as above (a knob a variant does not read is
 * ignored; two programs a shape keep the test's compiling within its time limit). */
static void vector_matches_reference(void) {
  for (size_t i = 0; i < COUNT(k_shapes); i++) {
    const char *v = is_dw(&k_shapes[i]) ? "conv.dw_vec" : "conv.tiled_vec";
    const knobset_t *ks = &k_vec[1 + i % (COUNT(k_vec) - 1)];
    REQUIRE(run_one(&k_shapes[i], v, &k_vec[0], 0, 0) == MI_OK);
    REQUIRE(run_one(&k_shapes[i], v, ks, 1, 0) == MI_OK);
  }
}

/* conv.pw_vec: every shape at its defaults, then at each setting in turn with Relu + residual
 * Add fused (the epilogue it runs on whole vectors, and element by element at a plane's end). */
static void pointwise_matches_reference(void) {
  for (size_t i = 0; i < COUNT(k_pw); i++) {
    REQUIRE(run_one(&k_pw[i], "conv.pw_vec", &k_pwk[0], 0, 0) == MI_OK);
    REQUIRE(run_one(&k_pw[i], "conv.pw_vec", &k_pwk[0], 1, 0) == MI_OK);
    for (size_t j = 1; j < COUNT(k_pwk); j++)
      if (j % COUNT(k_pw) == i || (j + 2) % COUNT(k_pw) == i)
        REQUIRE(run_one(&k_pw[i], "conv.pw_vec", &k_pwk[j], 1, 0) == MI_OK);
  }
}

static void regblock_matches_reference(void) {
  for (size_t i = 0; i < COUNT(k_shapes); i++) {
    for (size_t j = 0; j < COUNT(k_reg); j++)
      REQUIRE(run_one(&k_shapes[i], "conv.im2col_regblock", &k_reg[j], 0, 0) == MI_OK);
    REQUIRE(run_one(&k_shapes[i], "conv.im2col_regblock", &k_reg[0], 1, 0) == MI_OK);
  }
}

/* What each variant refuses, with a reason and no kernel: a depthwise conv for conv.tiled, a
 * group-1 conv for conv.dw_tiled, a filter given at run time, too many accumulators. */
static void refusals(void) {
  const knobset_t big = {{"oc_per_item", "ow_per_item"}, {16, 16}};
  const knobset_t bigdw = {{"oh_per_item", "ow_per_item"}, {8, 16}};
  REQUIRE(run_one(&k_shapes[7], "conv.tiled", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[1], "conv.dw_tiled", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[1], "conv.tiled", NULL, 0, 1) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[7], "conv.dw_tiled", NULL, 0, 1) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[1], "conv.tiled", &big, 0, 0) == MI_ERR_INVALID_CONFIG);
  REQUIRE(run_one(&k_shapes[7], "conv.dw_tiled", &bigdw, 0, 0) == MI_ERR_INVALID_CONFIG);
  REQUIRE(run_one(&k_shapes[7], "conv.tiled_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[1], "conv.dw_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[1], "conv.tiled_vec", &big, 0, 0) == MI_ERR_INVALID_CONFIG);
  REQUIRE(run_one(&k_shapes[7], "conv.dw_vec", &bigdw, 0, 0) == MI_ERR_INVALID_CONFIG);
  /* conv.pw_vec: a 3x3 filter, a 1x1 one with stride 2, a depthwise one, a filter given at run
   * time, too many accumulators in either product */
  REQUIRE(run_one(&k_shapes[1], "conv.pw_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[4], "conv.pw_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_shapes[7], "conv.pw_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_pw[0], "conv.pw_vec", NULL, 0, 1) == MI_ERR_UNSUPPORTED);
  REQUIRE(run_one(&k_pw[0], "conv.pw_vec", &big, 0, 0) == MI_ERR_INVALID_CONFIG);
  REQUIRE(run_one(&k_pw[0], "conv.pw_vec", &bigdw, 0, 0) == MI_ERR_INVALID_CONFIG);
  {
    const shape_t padded = {1, 4, 5, 5, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const shape_t grouped = {1, 4, 5, 5, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2};
    REQUIRE(run_one(&padded, "conv.pw_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
    REQUIRE(run_one(&grouped, "conv.pw_vec", NULL, 0, 0) == MI_ERR_UNSUPPORTED);
  }
}

/* conv.implicit_gemm: its column tiles read from X through the im2col map, so every geometry
 * (odd sizes, asymmetric pads, strides, dilation, groups, depthwise, two images) at the declared
 * tiles, and in turn without local memory, with a one-deep K slice, with tiles wider than the
 * output and with a GPU-sized work-group (16 x 16, 64 x 64 tiles). */
static const knobset_t k_igemm[] = {
    {{NULL}, {0}},
    {{"use_local_memory", "unroll"}, {0, 2}},
    {{"tile_k", "wg_x", "wg_y"}, {1, 4, 4}},
    {{"tile_m", "tile_n", "tile_k", "wg_y"}, {8, 128, 32, 8}},
    {{"wg_x", "wg_y", "tile_m", "tile_n", "tile_k"}, {16, 16, 64, 64, 16}},
};

static void implicit_matches_reference(void) {
  for (size_t i = 0; i < COUNT(k_shapes); i++) {
    REQUIRE(run_one(&k_shapes[i], "conv.implicit_gemm", &k_igemm[0], 0, 0) == MI_OK);
    REQUIRE(run_one(&k_shapes[i], "conv.implicit_gemm", &k_igemm[1 + i % (COUNT(k_igemm) - 1)], 1, 0) == MI_OK);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(implicit_matches_reference),
    TU_CASE(tiled_matches_reference),
    TU_CASE(vector_matches_reference),
    TU_CASE(pointwise_matches_reference),
    TU_CASE(regblock_matches_reference),
    TU_CASE(refusals),
};

TU_MAIN(setup, teardown)
