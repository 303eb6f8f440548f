/* ocl_prepare_mm.c - prepares convolution (direct, depthwise, im2col + GEMM, implicit GEMM), transposed
 * convolution and Gemm/MatMul kernels with their fused epilogues. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

enum { GK_NAIVE,
       GK_TILED,
       GK_VEC };

typedef struct gemm_geo {
  int M, N, K, ldc, G, Z;
  cl_int4 ld;
  cl_int8 bs;
} gemm_geo_t;

static int gemm_kind(const ocl_variant_t *v) {
  if (strstr(v->v.id, ".naive")) return GK_NAIVE;
  if (strstr(v->v.id, ".regblock")) return GK_VEC;
  return GK_TILED;
}

/* extra: more -D options (conv.implicit_gemm's geometry), "" for none. */
static int32_t add_gemm(ocl_prep_t *p, int kind, ocl_arg_t a, ocl_arg_t b, ocl_arg_t c,
                        const gemm_geo_t *g, const ocl_epi_t *e, int chan_inner, const char *extra) {
  char opt[512];
  const int64_t *k = p->kn.v;
  const char *name;
  ocl_launch_t *l;
  int32_t st;
  size_t tm = 1, tn = 1;
  if (kind == GK_NAIVE) {
    snprintf(opt, sizeof opt, "-D GEMM_NAIVE -D UNROLL=%d", (int)k[K_UNROLL]);
    name = "gemm_naive";
  } else if (kind == GK_TILED) {
    snprintf(opt, sizeof opt,
             "-D GEMM_TILED -D WGX=%d -D WGY=%d -D TM=%d -D TN=%d -D TK=%d -D USE_LOCAL=%d -D UNROLL=%d%s",
             (int)k[K_WG_X], (int)k[K_WG_Y], (int)k[K_TILE_M], (int)k[K_TILE_N], (int)k[K_TILE_K],
             (int)k[K_LOCAL], (int)k[K_UNROLL], extra);
    name = "gemm_tiled";
  } else {
    snprintf(opt, sizeof opt, "-D GEMM_VEC -D WGX=%d -D WGY=%d -D TM=%d -D TN=%d -D VW=%d -D UNROLL=%d",
             (int)k[K_WG_X], (int)k[K_WG_Y], (int)k[K_TILE_M], (int)k[K_TILE_N], (int)k[K_VW],
             (int)k[K_UNROLL]);
    name = "gemm_vec";
  }
  l = mi__ocl_launch_new(p, mi__ocl_src_gemm, opt, name, &st);
  if (!l) return st;
  mi__ocl_arg(l, a);
  mi__ocl_arg(l, b);
  mi__ocl_arg(l, c);
  mi__ocl_arg_int(l, g->M);
  mi__ocl_arg_int(l, g->N);
  mi__ocl_arg_int(l, g->K);
  mi__ocl_arg_raw(l, &g->ld, sizeof g->ld);
  mi__ocl_arg_int(l, g->ldc);
  mi__ocl_arg_int(l, g->G);
  mi__ocl_arg_raw(l, &g->bs, sizeof g->bs);
  if ((st = mi__ocl_arg_epi(p, l, e, chan_inner)) != MI_OK) return st;
  if (kind != GK_NAIVE) {
    tm = (size_t)k[K_TILE_M];
    tn = (size_t)k[K_TILE_N];
  }
  l->dim = 3;
  l->lws[0] = (size_t)k[K_WG_X];
  l->lws[1] = (size_t)k[K_WG_Y];
  l->lws[2] = 1;
  if (kind == GK_NAIVE) {
    l->gws[0] = ((size_t)g->N + l->lws[0] - 1) / l->lws[0] * l->lws[0];
    l->gws[1] = ((size_t)g->M + l->lws[1] - 1) / l->lws[1] * l->lws[1];
  } else {
    l->gws[0] = ((size_t)g->N + tn - 1) / tn * l->lws[0];
    l->gws[1] = ((size_t)g->M + tm - 1) / tm * l->lws[1];
  }
  l->gws[2] = (size_t)g->Z;
  l->has_lws = 1;
  return mi__ocl_check_wg(p, l);
}

int32_t mi__ocl_prepare_conv(ocl_prep_t *p) {
  const mi_kernel_desc_t *d = p->desc;
  const mi_node_desc_t *n = d->nodes[0];
  const mi_tensor_desc_t *x, *w, *y, *bias = NULL;
  ocl_epi_t e;
  ocl_arg_t ax, aw, ay, ag, acol;
  cl_int g[15];
  int32_t st = MI_OK;
  int C, H, W, OC, OH, OW, KH, KW, G, N, i;
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int transposed = strcmp(n->op_type, "ConvTranspose") == 0;
  memset(&e, 0, sizeof e);
  if (n->input_count < 2 || n->output_count < 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Conv: needs X and W");
  x = mi__ocl_tensor(d, n->inputs[0]);
  w = mi__ocl_tensor(d, n->inputs[1]);
  y = mi__ocl_tensor(d, n->outputs[0]);
  if (n->input_count > 2 && n->inputs[2] >= 0) bias = mi__ocl_tensor(d, n->inputs[2]);
  if (!x || !w || !y || x->rank != 4 || w->rank != 4 || y->rank != 4)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: only 2-D convolution (4-D tensors)",
                         n->op_type);
  N = (int)x->dims[0];
  C = (int)x->dims[1];
  H = (int)x->dims[2];
  W = (int)x->dims[3];
  OC = (int)y->dims[1];
  OH = (int)y->dims[2];
  OW = (int)y->dims[3];
  KH = (int)w->dims[2];
  KW = (int)w->dims[3];
  G = (int)mi_sdk_attr_int(n, "group", 1);
  /* W is [OC, C/G, KH, KW] for Conv and [C, OC/G, KH, KW] for ConvTranspose. */
  if (G < 1 || C % G || OC % G ||
      (transposed ? w->dims[0] != C || w->dims[1] != OC / G
                  : w->dims[0] != OC || w->dims[1] != C / G))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: inconsistent group/weight shape",
                         n->op_type);
  g[0] = C;
  g[1] = H;
  g[2] = W;
  g[3] = OC;
  g[4] = OH;
  g[5] = OW;
  g[6] = KH;
  g[7] = KW;
  g[8] = (cl_int)mi_sdk_attr_ints_at(n, "strides", 0, 1);
  g[9] = (cl_int)mi_sdk_attr_ints_at(n, "strides", 1, 1);
  g[10] = (cl_int)mi_sdk_attr_ints_at(n, "pads", 0, 0);
  g[11] = (cl_int)mi_sdk_attr_ints_at(n, "pads", 1, 0);
  g[12] = (cl_int)mi_sdk_attr_ints_at(n, "dilations", 0, 1);
  g[13] = (cl_int)mi_sdk_attr_ints_at(n, "dilations", 1, 1);
  g[14] = G;
  if (transposed && (mi_sdk_attr(n, "output_shape") ||
                     (ap && ap->type == MI_ATTR_STRING && ap->s && strcmp(ap->s, "NOTSET") != 0))) {
    /* The begin pads follow from the inferred output size, as the reference computes them:
     * total = S*(in-1) + output_padding + (K-1)*D + 1 - out, the odd one at the end for
     * SAME_UPPER and at the start otherwise (VALID gives total 0). */
    int upper = ap && ap->type == MI_ATTR_STRING && ap->s && strcmp(ap->s, "SAME_UPPER") == 0;
    for (i = 0; i < 2; i++) {
      int in = i ? W : H, o = i ? OW : OH, k = i ? KW : KH;
      int tot = g[8 + i] * (in - 1) + (int)mi_sdk_attr_ints_at(n, "output_padding", i, 0) +
                (k - 1) * g[12 + i] + 1 - o;
      if (tot < 0) tot = 0;
      g[10 + i] = upper ? tot / 2 : tot - tot / 2;
    }
  }
  if (!transposed && ap && ap->type == MI_ATTR_STRING && ap->s &&
      strncmp(ap->s, "SAME", 4) == 0) {
    for (i = 0; i < 2; i++) { /* pads from the inferred output size */
      int in = i ? W : H, o = i ? OW : OH, k = i ? KW : KH;
      int tot = (o - 1) * g[8 + i] + (k - 1) * g[12 + i] + 1 - in;
      if (tot < 0) tot = 0;
      g[10 + i] = strcmp(ap->s, "SAME_LOWER") == 0 ? tot - tot / 2 : tot / 2;
    }
  }
  e.chan_axis = 1;
  if ((st = mi__ocl_epi_parse(d, 0 + 1, n->outputs[0], OC, &e, p->err)) != MI_OK) goto done;
  if (bias) {
    const float *b = bias->data;
    if (!b || bias->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(bias) != OC) {
      st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: bias must be constant FP32 [OC]",
                         n->op_type);
      goto done;
    }
    /* the bias comes before BN: shift' = shift + bias * scale */
    for (i = 0; i < OC; i++) e.shift[i] += b[i] * e.scale[i];
    e.flags |= 1;
    e.fuse |= MI_FUSE_BIAS;
  }
  if (e.fuse & ~p->var->v.fuse_mask) {
    st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s cannot fuse this chain", p->var->v.id);
    goto done;
  }
  if ((st = mi__ocl_bind(p, n->inputs[0], &ax)) != MI_OK) goto done;
  if ((st = mi__ocl_bind(p, e.out_tensor, &ay)) != MI_OK) goto done;
  if (!transposed && (!strcmp(p->var->v.id, "conv.tiled") || !strcmp(p->var->v.id, "conv.dw_tiled") ||
                      !strcmp(p->var->v.id, "conv.tiled_vec") || !strcmp(p->var->v.id, "conv.dw_vec") ||
                      !strcmp(p->var->v.id, "conv.pw_vec"))) {
    st = mi__ocl_conv_tiled(p, g, N, w, ax, ay, &e); /* packs its own copy of the filter */
    goto done;
  }
  if ((st = mi__ocl_bind(p, n->inputs[1], &aw)) != MI_OK) goto done;
  if ((st = mi__ocl_upload(p, g, sizeof g, &ag)) != MI_OK) goto done;
  if (strncmp(p->var->v.id, "conv.im2col_", 12) == 0 || strcmp(p->var->v.id, "conv.implicit_gemm") == 0) {
    /* The GEMM of the filters [OC/G][K] by the column matrix [K][OH*OW] of each image's group
     * (batch z1 the image, z2 the group). conv.implicit_gemm's tiles read the columns from X
     * through the im2col index map (LOAD_B in mi__ocl_src_gemm, the geometry as -D constants),
     * so its B is X itself; the others write the columns into a scratch buffer first, except
     * for a 1x1 stride-1 unpadded convolution, whose X is the column matrix. */
    gemm_geo_t gg;
    char geo[256] = "";
    int K = (C / G) * KH * KW, P = OH * OW, OCg = OC / G;
    int implicit = strcmp(p->var->v.id, "conv.implicit_gemm") == 0;
    int direct = KH == 1 && KW == 1 && g[8] == 1 && g[9] == 1 && g[10] == 0 && g[11] == 0 &&
                 H == OH && W == OW;
    memset(&gg, 0, sizeof gg);
    gg.M = OCg;
    gg.N = P;
    gg.K = K;
    gg.ldc = P;
    gg.G = G;
    gg.Z = N * G;
    gg.ld.s[0] = K;
    gg.ld.s[1] = 1;
    gg.ld.s[2] = P;
    gg.ld.s[3] = 1;
    gg.bs.s[1] = OCg * K;
    gg.bs.s[2] = implicit ? C * H * W : C * KH * KW * P;
    gg.bs.s[3] = implicit ? (C / G) * H * W : K * P;
    gg.bs.s[4] = OC * P;
    gg.bs.s[5] = OCg * P;
    acol = ax;
    if (implicit) {
      snprintf(geo, sizeof geo,
               " -D CONV_IGEMM -D CI_H=%d -D CI_W=%d -D CI_KH=%d -D CI_KW=%d -D CI_SH=%d -D CI_SW=%d"
               " -D CI_PH=%d -D CI_PW=%d -D CI_DH=%d -D CI_DW=%d -D CI_OW=%d",
               H, W, KH, KW, (int)g[8], (int)g[9], (int)g[10], (int)g[11], (int)g[12], (int)g[13], OW);
    } else if (!direct) {
      cl_int rc, cnt = N * C * KH * KW * P;
      cl_mem m;
      ocl_launch_t *l;
      if (p->k->nb >= OCL_MAX_BUFS) {
        st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "opencl: too many buffers");
        goto done;
      }
      m = clCreateBuffer(p->dev->ctx, CL_MEM_READ_WRITE, (size_t)cnt * 4, NULL, &rc);
      if (!m) {
        st = mi__ocl_fail(p->err, "clCreateBuffer", rc);
        goto done;
      }
      p->k->bufs[p->k->nb] = m;
      acol.kind = ARG_BUF;
      acol.index = p->k->nb++;
      if (!(l = mi__ocl_launch_new(p, mi__ocl_src_conv, "-D UNROLL=1", "im2col", &st))) goto done;
      mi__ocl_arg(l, ax);
      mi__ocl_arg(l, acol);
      mi__ocl_arg_int(l, cnt);
      mi__ocl_arg(l, ag);
      mi__ocl_grid1(l, (size_t)cnt, 64);
    }
    st = add_gemm(p, gemm_kind(p->var), aw, acol, ay, &gg, &e, P, geo);
  } else {
    int dw = strcmp(p->var->v.id, "conv.depthwise") == 0;
    const char *kname = transposed ? "conv_transpose" : dw ? "conv_dw"
                                                           : "conv_direct";
    char opt[64];
    ocl_launch_t *l;
    if (dw && (G != C || OC % C)) {
      st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "conv.depthwise: needs group == channels (group %d, C %d)", G, C);
      goto done;
    }
    snprintf(opt, sizeof opt, "-D UNROLL=%d", (int)p->kn.v[K_UNROLL]);
    if (!(l = mi__ocl_launch_new(p, mi__ocl_src_conv, opt, kname, &st))) goto done;
    mi__ocl_arg(l, ax);
    mi__ocl_arg(l, aw);
    mi__ocl_arg(l, ay);
    mi__ocl_arg_int(l, N * OC * OH * OW);
    mi__ocl_arg(l, ag);
    if ((st = mi__ocl_arg_epi(p, l, &e, OH * OW)) != MI_OK) goto done;
    mi__ocl_grid1(l, (size_t)N * OC * OH * OW, (size_t)p->kn.v[K_WG_X]);
    st = mi__ocl_check_wg(p, l);
  }
done:
  mi__ocl_epi_free(&e);
  return st;
}

/* Batch strides of an operand of MatMul for output batch dims bd[0..nb). */
static void batch_strides(const mi_tensor_desc_t *t, const int64_t *bd, int nb, int64_t *s) {
  int i, tb = t->rank - 2;
  int64_t acc = t->dims[t->rank - 1] * t->dims[t->rank - 2];
  for (i = nb - 1; i >= 0; i--) {
    int ti = i - (nb - tb);
    if (ti < 0 || (t->dims[ti] == 1 && bd[i] != 1)) {
      s[i] = 0;
    } else {
      s[i] = acc;
      acc *= t->dims[ti];
    }
  }
}

int32_t mi__ocl_prepare_gemm(ocl_prep_t *p) {
  const mi_kernel_desc_t *d = p->desc;
  const mi_node_desc_t *n = d->nodes[0];
  const mi_tensor_desc_t *a, *b, *y, *c = NULL;
  int is_gemm = strcmp(n->op_type, "Gemm") == 0;
  ocl_epi_t e;
  ocl_arg_t aa, ab, ay;
  gemm_geo_t g;
  int32_t st = MI_OK;
  int i, ta = 0, tb = 0;
  float *bt = NULL;
  memset(&e, 0, sizeof e);
  memset(&g, 0, sizeof g);
  if (n->input_count < 2 || n->output_count < 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: needs two inputs", n->op_type);
  a = mi__ocl_tensor(d, n->inputs[0]);
  b = mi__ocl_tensor(d, n->inputs[1]);
  y = mi__ocl_tensor(d, n->outputs[0]);
  if (!a || !b || !y || a->rank < 2 || b->rank < 2 || y->rank < 2 || (is_gemm && (a->rank != 2 || b->rank != 2)))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: operands of rank >= 2 (Gemm: 2) only", n->op_type);
  if (is_gemm) {
    ta = (int)mi_sdk_attr_int(n, "transA", 0);
    tb = (int)mi_sdk_attr_int(n, "transB", 0);
  }
  g.M = (int)y->dims[y->rank - 2];
  g.N = (int)y->dims[y->rank - 1];
  g.K = (int)(ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1]);
  g.ldc = g.N;
  g.ld.s[0] = ta ? 1 : g.K;
  g.ld.s[1] = ta ? g.M : 1;
  g.ld.s[2] = tb ? 1 : g.N;
  g.ld.s[3] = tb ? g.K : 1;
  g.G = g.Z = 1;
  if (!is_gemm && y->rank > 2) {
    int nb = y->rank - 2, j;
    int64_t sa[MI_MAX_RANK], sb[MI_MAX_RANK], lead = 1;
    batch_strides(a, y->dims, nb, sa);
    batch_strides(b, y->dims, nb, sb);
    /* the batch dims before the last merge into one when the operands are linear over them */
    for (j = 0; j < nb - 1; j++) lead *= y->dims[j];
    for (j = 0; j + 2 < nb; j++) {
      if (sa[j] != sa[j + 1] * y->dims[j + 1] || sb[j] != sb[j + 1] * y->dims[j + 1]) {
        st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "MatMul: this batch broadcast is not supported");
        goto done;
      }
    }
    g.G = (int)y->dims[nb - 1];
    g.Z = (int)(lead * g.G);
    g.bs.s[0] = nb > 1 ? (cl_int)sa[nb - 2] : 0;
    g.bs.s[1] = (cl_int)sa[nb - 1];
    g.bs.s[2] = nb > 1 ? (cl_int)sb[nb - 2] : 0;
    g.bs.s[3] = (cl_int)sb[nb - 1];
    g.bs.s[4] = g.G * g.M * g.N;
    g.bs.s[5] = g.M * g.N;
  }
  e.chan_axis = y->rank - 1;
  e.nchan = g.N;
  e.scale = malloc((size_t)g.N * sizeof(float));
  e.shift = malloc((size_t)g.N * sizeof(float));
  if (!e.scale || !e.shift) {
    st = mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    goto done;
  }
  for (i = 0; i < g.N; i++) {
    e.scale[i] = 1.0f;
    e.shift[i] = 0.0f;
  }
  if (is_gemm) {
    float alpha = mi_sdk_attr_float(n, "alpha", 1.0f), beta = mi_sdk_attr_float(n, "beta", 1.0f);
    if (n->input_count > 2 && n->inputs[2] >= 0) c = mi__ocl_tensor(d, n->inputs[2]);
    for (i = 0; i < g.N; i++) e.scale[i] = alpha;
    if (alpha != 1.0f) e.flags |= 1;
    if (c) {
      int64_t cn = mi_sdk_numel(c);
      const float *cv = c->data;
      if (!cv || c->dtype != MI_DTYPE_FLOAT32 || !(cn == 1 || (cn == g.N && c->dims[c->rank - 1] == g.N))) {
        st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "Gemm: C must be a constant scalar or [N] vector");
        goto done;
      }
      for (i = 0; i < g.N; i++) e.shift[i] = beta * cv[cn == 1 ? 0 : i];
      e.flags |= 1;
      e.fuse |= MI_FUSE_BIAS;
    }
  }
  if ((st = mi__ocl_epi_parse(d, 1, n->outputs[0], g.N, &e, p->err)) != MI_OK) goto done;
  if (e.fuse & ~p->var->v.fuse_mask) {
    st = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s cannot fuse this chain", p->var->v.id);
    goto done;
  }
  if ((st = mi__ocl_bind(p, n->inputs[0], &aa)) != MI_OK) goto done;
  if (tb && b->data) { /* constant B^T: upload it as [K, N] so loads along N are contiguous */
    const float *bv = b->data;
    int k;
    bt = malloc((size_t)g.K * (size_t)g.N * sizeof *bt);
    if (!bt) {
      st = mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
      goto done;
    }
    for (k = 0; k < g.K; k++)
      for (i = 0; i < g.N; i++) bt[(size_t)k * g.N + i] = bv[(size_t)i * g.K + k];
    if ((st = mi__ocl_upload(p, bt, (size_t)g.K * g.N * 4, &ab)) != MI_OK) goto done;
    g.ld.s[2] = g.N;
    g.ld.s[3] = 1;
  } else if ((st = mi__ocl_bind(p, n->inputs[1], &ab)) != MI_OK) {
    goto done;
  }
  if ((st = mi__ocl_bind(p, e.out_tensor, &ay)) != MI_OK) goto done;
  st = add_gemm(p, gemm_kind(p->var), aa, ab, ay, &g, &e, 1, "");
done:
  free(bt);
  mi__ocl_epi_free(&e);
  return st;
}
