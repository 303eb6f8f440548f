/* blis_conv.c - Conv: geometry, variant choice, fused epilogue, im2col+GEMM and 1x1 GEMM. */
#include <string.h>

#include "blis_qgemm.h"

/* Fills geometry from the node; rank-3 (1-D) convs run as H = 1. */
int32_t mi__blis_conv_geom(mi__blis_prep_t *p, const mi_node_desc_t *n, mi__blis_conv_t *c,
                           mi_error_t *err) {
  const mi_tensor_desc_t *x = mi__blis_tensor(p, c->x), *w = mi__blis_tensor(p, c->w),
                         *y = mi__blis_tensor(p, c->y);
  int64_t k[2], s[2], d[2], pads[4];
  int32_t sp, i;
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  if (!x || !w || !y || (x->rank != 4 && x->rank != 3) || w->rank != x->rank || y->rank != x->rank)
    return mi__blis_unsupported(err, n, "only 1-D and 2-D convolutions");
  if (!w->data || (w->dtype != MI_DTYPE_FLOAT32 && w->dtype != MI_DTYPE_FLOAT16 &&
                   w->dtype != MI_DTYPE_INT8 && w->dtype != MI_DTYPE_INT4 && w->dtype != MI_DTYPE_UINT8))
    return mi__blis_unsupported(err, n, "weights must be a FLOAT32 (or FLOAT16, INT8, UINT8, INT4) constant");
  sp = x->rank - 2;
  if (!mi_sdk_attr_ints(n, "strides", s, sp, 1) || !mi_sdk_attr_ints(n, "dilations", d, sp, 1) ||
      !mi_sdk_attr_ints(n, "pads", pads, 2 * sp, 0))
    return mi__blis_unsupported(err, n, "malformed strides/dilations/pads");
  for (i = 0; i < sp; i++) k[i] = w->dims[2 + i];
  c->N = x->dims[0];
  c->C = x->dims[1];
  c->M = w->dims[0];
  c->G = mi_sdk_attr_int(n, "group", 1);
  c->nhwc_in = x->rank == 4 && x->layout == MI_LAYOUT_NHWC;
  c->nhwc_out = y->rank == 4 && y->layout == MI_LAYOUT_NHWC;
  if (c->nhwc_in) c->C = x->dims[1]; /* dims stay in ONNX order whatever the layout */
  c->H = sp == 2 ? x->dims[2] : 1;
  c->W = x->dims[x->rank - 1];
  c->KH = sp == 2 ? k[0] : 1;
  c->KW = k[sp - 1];
  c->sh = sp == 2 ? s[0] : 1;
  c->sw = s[sp - 1];
  c->dh = sp == 2 ? d[0] : 1;
  c->dw = d[sp - 1];
  c->OH = sp == 2 ? y->dims[2] : 1;
  c->OW = y->dims[y->rank - 1];
  c->pt = sp == 2 ? pads[0] : 0;
  c->pl = pads[sp - 1];
  if (ap && ap->type == MI_ATTR_STRING && ap->s &&
      (strcmp(ap->s, "SAME_UPPER") == 0 || strcmp(ap->s, "SAME_LOWER") == 0)) {
    int64_t th = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1 - c->H;
    int64_t tw = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1 - c->W;
    th = th > 0 ? th : 0;
    tw = tw > 0 ? tw : 0;
    c->pt = ap->s[5] == 'U' ? th / 2 : th - th / 2;
    c->pl = ap->s[5] == 'U' ? tw / 2 : tw - tw / 2;
  } else if (ap && ap->type == MI_ATTR_STRING && ap->s && strcmp(ap->s, "VALID") == 0) {
    c->pt = c->pl = 0;
  }
  /* Every buffer size below is a product of these: a dynamic (-1) or empty dim, as the space's
   * probe hands over for a model whose batch was left dynamic, would wrap it, and the variants
   * would pack past their blocks. Output dims must be what the geometry gives, for the same
   * reason (the kernels index the input from them). */
  if (c->N < 1 || c->C < 1 || c->H < 1 || c->W < 1 || c->M < 1 || c->KH < 1 || c->KW < 1 || c->OH < 1 ||
      c->OW < 1 || c->sh < 1 || c->sw < 1 || c->dh < 1 || c->dw < 1 || c->pt < 0 || c->pl < 0 ||
      (sp == 2 && (pads[2] < 0 || pads[3] < 0)) || (sp == 1 && pads[1] < 0))
    return mi__blis_unsupported(err, n, "dims must be known and positive, strides and dilations >= 1, pads >= 0");
  if (!(ap && ap->type == MI_ATTR_STRING && ap->s && strcmp(ap->s, "NOTSET") != 0)) {
    int64_t pb = sp == 2 ? pads[2] : 0, pr = pads[2 * sp - 1];
    if (c->OH != (c->H + c->pt + pb - (c->KH - 1) * c->dh - 1) / c->sh + 1 ||
        c->OW != (c->W + c->pl + pr - (c->KW - 1) * c->dw - 1) / c->sw + 1 ||
        c->H + c->pt + pb < (c->KH - 1) * c->dh + 1 || c->W + c->pl + pr < (c->KW - 1) * c->dw + 1)
      return mi__blis_unsupported(err, n, "output dims do not match the input, kernel, strides and pads");
  }
  if (c->G < 1 || c->C % c->G || c->M % c->G || w->dims[1] != c->C / c->G || y->dims[1] != c->M ||
      y->dims[0] != c->N)
    return mi__blis_unsupported(err, n, "channel counts do not match group/weights");
  return MI_OK;
}

/* Constant one-element FLOAT32 input i of n equals v. */
static int const_is(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t i, float v) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, mi__blis_in(n, i));
  return t && t->data && t->dtype == MI_DTYPE_FLOAT32 && mi_sdk_numel(t) == 1 &&
         *(const float *)t->data == v;
}

/* Nodes j..j+3 are x * clip(x + 3, 0, 6) / 6 of x = cur (paddle2onnx's hard-swish), their
 * intermediates read by nothing else. */
static int hswish_at(const mi__blis_prep_t *p, int32_t j, int32_t cur) {
  const mi_node_desc_t *add = mi__blis_node(p, j), *clip = mi__blis_node(p, j + 1);
  const mi_node_desc_t *mul = mi__blis_node(p, j + 2), *div = mi__blis_node(p, j + 3);
  int32_t k;
  if (!add || !clip || !mul || !div || strcmp(add->op_type, "Add") || strcmp(clip->op_type, "Clip") ||
      strcmp(mul->op_type, "Mul") || mul->input_count != 2 || mi__blis_in(add, 0) != cur ||
      !const_is(p, add, 1, 3.f) || mi__blis_in(clip, 0) != mi__blis_out(add, 0) ||
      mi__blis_in(div, 0) != mi__blis_out(mul, 0))
    return 0;
  /* Clip's bounds: constant inputs, or attributes before opset 11 */
  if (clip->opset < 11 ? mi_sdk_attr_float(clip, "min", -1.f) != 0.f || mi_sdk_attr_float(clip, "max", -1.f) != 6.f
                       : clip->input_count != 3 || !const_is(p, clip, 1, 0.f) || !const_is(p, clip, 2, 6.f))
    return 0;
  if (!((mi__blis_in(mul, 0) == cur && mi__blis_in(mul, 1) == mi__blis_out(clip, 0)) ||
        (mi__blis_in(mul, 1) == cur && mi__blis_in(mul, 0) == mi__blis_out(clip, 0))))
    return 0;
  if (!(strcmp(div->op_type, "Div") == 0 && const_is(p, div, 1, 6.f)) &&
      !(strcmp(div->op_type, "Mul") == 0 && const_is(p, div, 1, 1.f / 6.f)))
    return 0;
  for (k = 0; k < 3; k++) {
    int32_t t = mi__blis_out(mi__blis_node(p, j + k), 0);
    if (mi__blis_consumers(p, t) != 1 || mi__blis_is_kernel_output(p, t)) return 0;
  }
  return mi__blis_consumers(p, cur) == 2 && !mi__blis_is_kernel_output(p, cur);
}

/* The other operand of binary node n is a one-element FLOAT32 constant (its value in *v) and
 * the chain's value `cur` the first or second operand. */
static int scalar_operand(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t cur, float *v) {
  int32_t other = mi__blis_in(n, 0) == cur ? mi__blis_in(n, 1) : mi__blis_in(n, 1) == cur ? mi__blis_in(n, 0)
                                                                                          : -1;
  const mi_tensor_desc_t *t = mi__blis_tensor(p, other);
  if (!t || other == cur || !t->data || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1) return 0;
  *v = *(const float *)t->data;
  return 1;
}

/* The values of the constant per-channel operand of Add node n ([M, 1, 1] or [1, M, 1, 1], the
 * chain's value `cur` the other operand), or NULL. */
static const float *channel_operand(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t cur, int64_t M) {
  int32_t other = mi__blis_in(n, 0) == cur ? mi__blis_in(n, 1) : mi__blis_in(n, 1) == cur ? mi__blis_in(n, 0)
                                                                                          : -1;
  const mi_tensor_desc_t *t = mi__blis_tensor(p, other);
  if (!t || other == cur || !t->data || t->dtype != MI_DTYPE_FLOAT32 || (t->rank != 3 && t->rank != 4) ||
      t->dims[t->rank - 3] != M || t->dims[t->rank - 2] != 1 || t->dims[t->rank - 1] != 1 ||
      (t->rank == 4 && t->dims[0] != 1))
    return NULL;
  return t->data;
}

/* Absorbs Add(bias)/BN/activations/residual Add that follow the conv in the kernel's chain. */
int32_t mi__blis_conv_epilogue(mi__blis_prep_t *p, mi__blis_conv_t *c, const mi_node_desc_t *conv) {
  int32_t cur = c->y, used = 1, j, bias = mi__blis_in(conv, 2);
  int64_t m, onumel = c->N * c->M * c->OH * c->OW;
  for (m = 0; m < c->M; m++) {
    c->scale[m] = 1.f;
    c->shift[m] = 0.f;
  }
  if (bias >= 0) {
    const mi_tensor_desc_t *b = mi__blis_tensor(p, bias);
    for (m = 0; m < c->M; m++) c->shift[m] = ((const float *)b->data)[m];
    c->affine = 1;
  }
  for (j = 1;; j++) {
    const mi_node_desc_t *n = mi__blis_node(p, j);
    int32_t kind, other;
    float a, b;
    if (!n || mi__blis_in(n, 0) < 0) break;
    if (c->epi_n < MI__EPI_MAX && hswish_at(p, j, cur)) {
      c->epi[c->epi_n].act = MI__ACT_HSWISH;
      c->epi[c->epi_n].a = c->epi[c->epi_n].b = 0.f;
      c->epi_n++;
      cur = mi__blis_out(mi__blis_node(p, j + 3), 0);
      used += 4;
      j += 3;
      continue;
    }
    if (mi__blis_consumers(p, cur) != 1 || mi__blis_is_kernel_output(p, cur)) break;
    if (strcmp(n->op_type, "BatchNormalization") == 0 && c->epi_n == 0 && mi__blis_in(n, 0) == cur) {
      float sc[1], *bs = mi__blis_alloc(p->ctx, (uint64_t)c->M * 2 * sizeof(float));
      int ok = bs && mi__blis_bn_fold(p, n, c->M, bs, bs + c->M) && mi__blis_out(n, 1) < 0;
      (void)sc;
      if (ok)
        for (m = 0; m < c->M; m++) {
          c->scale[m] *= bs[m];
          c->shift[m] = c->shift[m] * bs[m] + bs[c->M + m];
        }
      mi__blis_free(p->ctx, bs);
      if (!ok) break;
      c->affine = 1;
    } else if ((strcmp(n->op_type, "Mul") == 0 || strcmp(n->op_type, "Add") == 0) &&
               n->input_count == 2 && scalar_operand(p, n, cur, &a)) {
      /* x * a or x + a by a constant (PP-LCNetV3's learnable affine blocks): straight after
       * the conv into its per-channel scale and shift, else one x * a + b op, merged with an
       * affine op just before it. */
      float mul = n->op_type[0] == 'M' ? a : 1.f, add = n->op_type[0] == 'M' ? 0.f : a;
      mi__blis_epi_op_t *last = c->epi_n ? &c->epi[c->epi_n - 1] : NULL;
      if (c->epi_n == 0) {
        for (m = 0; m < c->M; m++) {
          c->scale[m] *= mul;
          c->shift[m] = c->shift[m] * mul + add;
        }
        c->affine = 1;
      } else if (last->act == MI__ACT_AFFINE) {
        last->a *= mul;
        last->b = last->b * mul + add;
      } else if (c->epi_n < MI__EPI_MAX) {
        c->epi[c->epi_n].act = MI__ACT_AFFINE;
        c->epi[c->epi_n].a = mul;
        c->epi[c->epi_n++].b = add;
      } else {
        break;
      }
    } else if (strcmp(n->op_type, "Add") == 0 && n->input_count == 2 && c->epi_n == 0 &&
               channel_operand(p, n, cur, c->M)) {
      /* a per-channel constant (a bias written as an Add): into the shift */
      const float *v = channel_operand(p, n, cur, c->M);
      for (m = 0; m < c->M; m++) c->shift[m] += v[m];
      c->affine = 1;
    } else if (strcmp(n->op_type, "Add") == 0 && n->input_count == 2 && c->epi_n < MI__EPI_MAX) {
      const mi_tensor_desc_t *o;
      other = mi__blis_in(n, 0) == cur ? mi__blis_in(n, 1) : mi__blis_in(n, 1) == cur ? mi__blis_in(n, 0)
                                                                                      : -1;
      o = mi__blis_tensor(p, other);
      if (!o || other == cur || mi_sdk_numel(o) != onumel || o->rank != mi__blis_tensor(p, c->y)->rank ||
          o->layout != mi__blis_tensor(p, c->y)->layout || o->dtype != MI_DTYPE_FLOAT32)
        break;
      c->epi[c->epi_n].act = MI__ACT_NONE;
      c->epi[c->epi_n++].tensor = other;
    } else if (mi__blis_in(n, 0) == cur && c->epi_n < MI__EPI_MAX &&
               strcmp(n->op_type, "Add") != 0 && mi__blis_act_of(p, n, &kind, &a, &b)) {
      c->epi[c->epi_n].act = kind;
      c->epi[c->epi_n].a = a;
      c->epi[c->epi_n++].b = b;
    } else {
      break;
    }
    cur = mi__blis_out(n, 0);
    used++;
  }
  c->y = cur;
  p->nodes_used = used;
  return used;
}

typedef struct conv_task {
  const mi__blis_conv_t *c;
  void *const *t;
  const float *x;
  float *y;
  int64_t n, p0, cb;
} conv_task_t;

/* Items are input channels of the group: each writes its own KH*KW rows of the columns. Each
 * column row is filled output row by output row: zeros where the tap falls in the padding, a
 * plain (or strided) copy over the valid run of output columns. No division per column row: the
 * valid run [lo, hi) moves down as the tap moves right, and the rows are walked from the block's
 * first. With four divisions a row, an STFT's 512-tap 1-D conv (5 frames) spent as long filling
 * its 512 rows of 5 columns as in its GEMM (oww_melspectrogram, perf). */
static inline __attribute__((always_inline)) void im2col_body(const conv_task_t *ct, int64_t c0,
                                                              int64_t c1) {
  const mi__blis_conv_t *c = ct->c;
  int64_t ci, kh, kw, cb = ct->cb, pend = ct->p0 + cb, oh0 = ct->p0 / c->OW, ow0 = ct->p0 % c->OW;
  int64_t lo0 = c->pl > 0 ? (c->pl + c->sw - 1) / c->sw : 0;
  int64_t hi0 = c->W - 1 + c->pl >= 0 ? (c->W - 1 + c->pl) / c->sw + 1 : 0;
  if (hi0 > c->OW) hi0 = c->OW;
  /* A 1-D conv whose windows all lie inside the input (an STFT's strided frames): each column is
   * a contiguous run of the input, copied pixel by pixel into the rows (each row of 5 columns
   * took a loop of its own: as long again as the GEMM). */
  if (c->H == 1 && c->KH == 1 && c->OH == 1 && c->pt == 0 && c->dw == 1 && c->pl == 0 &&
      (c->OW - 1) * c->sw + c->KW <= c->W) {
    for (ci = c0; ci < c1; ci++)
      for (int64_t p = ct->p0; p < pend; p++) {
        const float *src = ct->x + ci * c->W + p * c->sw;
        float *dst = c->scratch + ci * c->KW * cb + (p - ct->p0);
        for (kw = 0; kw < c->KW; kw++) dst[kw * cb] = src[kw];
      }
    return;
  }
  for (ci = c0; ci < c1; ci++)
    for (kh = 0; kh < c->KH; kh++) {
      int64_t lraw = lo0, hi = hi0; /* output columns whose input column ow*sw + off lies in [0, W) */
      for (kw = 0; kw < c->KW; kw++) {
        float *dst = c->scratch + ((ci * c->KH + kh) * c->KW + kw) * cb - ct->p0;
        const float *xc = ct->x + ci * c->H * c->W;
        int64_t off = kw * c->dw - c->pl, lo, p = ct->p0, oh = oh0, ow = ow0;
        while (lraw > 0 && (lraw - 1) * c->sw + off >= 0) lraw--;
        while (hi > 0 && (hi - 1) * c->sw + off > c->W - 1) hi--;
        lo = lraw < hi ? lraw : hi;
        while (p < pend) {
          int64_t e = (oh + 1) * c->OW, ih, j, a, b;
          if (e > pend) e = pend;
          ih = oh * c->sh - c->pt + kh * c->dh;
          if (ih < 0 || ih >= c->H) {
            for (j = p; j < e; j++) dst[j] = 0.f;
          } else {
            const float *xr = xc + ih * c->W + off;
            float *dr = dst + oh * c->OW;
            int64_t oe = e - oh * c->OW;
            a = lo > ow ? lo : ow;
            b = hi < oe ? hi : oe;
            if (a > b) a = b;
            for (j = ow; j < a; j++) dr[j] = 0.f;
            if (c->sw == 1) {
              for (j = a; j < b; j++) dr[j] = xr[j]; /* a loop: see im2col_avx512 */
            } else if (c->sw == 2) {                 /* constant stride: the compiler vectorises it */
              for (j = a; j < b; j++) dr[j] = xr[j * 2];
            } else {
              for (j = a; j < b; j++) dr[j] = xr[j * c->sw];
            }
            for (j = b > ow ? b : ow; j < oe; j++) dr[j] = 0.f;
          }
          p = e;
          oh++;
          ow = 0;
        }
      }
    }
}

/* The strided copies vectorise only with AVX2/AVX-512 permutes: one body, three targets. The
 * short row copies stay loops: turned into memcpy they are expanded as `rep movs`, slow here. */
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"), optimize("no-tree-loop-distribute-patterns"))) static void im2col_avx512(void *arg, int64_t c0, int64_t c1) {
  im2col_body(arg, c0, c1);
}
__attribute__((target("avx2,fma"), optimize("no-tree-loop-distribute-patterns"))) static void im2col_avx2(void *arg, int64_t c0, int64_t c1) {
  im2col_body(arg, c0, c1);
}
static void im2col_c(void *arg, int64_t c0, int64_t c1) { im2col_body(arg, c0, c1); }

/* Columns [p0, p0 + cb) of the group whose input is xg into c->scratch, split over its input
 * channels. */
static void im2col(const mi__blis_env_t *env, conv_task_t *ct, const float *xg, int64_t p0, int64_t cb) {
  const mi__blis_conv_t *c = ct->c;
  ct->x = xg;
  ct->p0 = p0;
  ct->cb = cb;
  mi__blis_parallel(env, c->C / c->G, 1, c->KH * c->KW * cb,
                    c->simd == MI__SIMD_AVX512 ? im2col_avx512
                    : c->simd == MI__SIMD_AVX2 ? im2col_avx2
                                               : im2col_c,
                    ct);
}

/* Items are output channels of image ct->n. */
static void epi_part(void *arg, int64_t m0, int64_t m1) {
  const conv_task_t *ct = arg;
  int64_t m, ohw = ct->c->OH * ct->c->OW;
  for (m = m0; m < m1; m++) mi__blis_epi_row(ct->c, ct->t, ct->n, m, ct->y + (ct->n * ct->c->M + m) * ohw);
}

static int32_t run_gemm_conv(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                             mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  const float *x = t[c->x], *w = t[c->w];
  float *y = t[c->y];
  int64_t n, g, p0, ohw = c->OH * c->OW, cg = c->C / c->G, mg = c->M / c->G;
  int64_t kk = cg * c->KH * c->KW, cb = c->block > 0 && c->block < ohw ? c->block : ohw;
  conv_task_t ct;
  (void)err;
  ct.c = c;
  ct.t = t;
  ct.y = y;
  for (n = 0; n < c->N; n++) {
    for (g = 0; g < c->G; g++) {
      const float *xg = x + (n * c->C + g * cg) * c->H * c->W, *wg = w + g * mg * kk;
      float *yg = y + (n * c->M + g * mg) * ohw;
      if (c->variant == MI__CONV_1X1) {
        mi__blis_sgemm(env, mg, ohw, cg, 1.f, wg, kk, 1, xg, ohw, 1, 0.f, yg, ohw, 1);
        continue;
      }
      for (p0 = 0; p0 < ohw; p0 += cb) {
        im2col(env, &ct, xg, p0, ohw - p0 < cb ? ohw - p0 : cb);
        mi__blis_sgemm(env, mg, ct.cb, kk, 1.f, wg, kk, 1, c->scratch, ct.cb, 1, 0.f, yg + p0, ohw, 1);
      }
    }
    ct.n = n;
    if (c->affine || c->epi_n) mi__blis_parallel(env, c->M, 1, ohw * (1 + c->epi_n), epi_part, &ct);
  }
  return MI_OK;
}

/* Without im2col: the group's input planes are copied once into zero-padded planes split into
 * sh x sw stride phases of pg_hp x pg_wp (padded row r goes to phase r % sh, row r / sh; columns
 * alike), so output (oh, ow) of tap (ci, kh, kw) reads flat element koff[k] + oh*wp + ow of its
 * phase: B is those planes at per-row offsets, over (OH-1)*wp + OW flat pixels whose columns past
 * OW are computed and dropped. Then the rows are compacted with the epilogue in one pass. The
 * copies below write the same elements at every run: the padding was zeroed once at prepare
 * (zeroing the whole buffer per run cost 96x82x82 floats per call on a DB detector's 3x3 convs). */
static void pad_part(void *arg, int64_t c0, int64_t c1) { /* items: the group's input channels */
  const conv_task_t *ct = arg;
  const mi__blis_conv_t *c = ct->c;
  int64_t hp = c->pg_hp, wp = c->pg_wp, sw = c->sw, ph = c->sh * sw, ci, i, j, rc, a[4], b[4];
  float *pad = c->scratch;
  /* Per column phase rc (sw <= 4 on the flat planes): the phase columns [a, b) that input columns
   * j2*sw + rc - pl fill. Computed once, and the row phases counted along the rows: divisions per
   * row and phase were most of the copy on few-pixel planes (silero-vad's 1-D convs: 2-3 elements
   * per channel and phase). */
  for (rc = 0; rc < sw && sw > 1; rc++) {
    a[rc] = c->pl > rc ? (c->pl - rc + sw - 1) / sw : 0;
    b[rc] = c->W - 1 + c->pl - rc >= 0 ? (c->W - 1 + c->pl - rc) / sw + 1 : 0;
    if (b[rc] > wp) b[rc] = wp;
  }
  for (ci = c0; ci < c1; ci++) {
    int64_t r = c->pt % c->sh, i2 = c->pt / c->sh; /* input row i: padded row i + pt */
    for (i = 0; i < c->H && i2 < hp; i++) {
      const float *xr = ct->x + (ci * c->H + i) * c->W;
      if (sw == 1) {
        int64_t j1 = c->W < wp - c->pl ? c->W : wp - c->pl;
        if (j1 > 0) memcpy(pad + ((ci * ph + r) * hp + i2) * wp + c->pl, xr, (size_t)j1 * sizeof *xr);
      } else {
        for (rc = 0; rc < sw; rc++) {
          float *dst = pad + ((ci * ph + r * sw + rc) * hp + i2) * wp;
          const float *src = xr + rc - c->pl;
          /* the phases' strided reads as permutes (AVX-512): the scalar loop, built for the
           * baseline, took 0.22 ms of M-LSD's 4 x 320x320 stride-2 first conv at 1 thread. Runs
           * under 8 elements stay scalar: silero-vad's stride-2 1-D convs copy 1-2 elements per
           * channel and phase, where the four masked 512-bit loads, two permutes and a blend per
           * call cost more than the copy (docs/benchmarks.md, 2026-12-04) */
          if (c->simd == MI__SIMD_AVX512 && b[rc] - a[rc] >= 8)
            mi__blis_strided_row_avx512(src + a[rc] * sw, sw, dst + a[rc], b[rc] - a[rc]);
          else if (sw == 2)
            for (j = a[rc]; j < b[rc]; j++) dst[j] = src[2 * j];
          else
            for (j = a[rc]; j < b[rc]; j++) dst[j] = src[j * sw];
        }
      }
      if (++r == c->sh) {
        r = 0;
        i2++;
      }
    }
  }
}

static void pg_flat(const mi__blis_conv_t *c, void *const *t, const mi__blis_env_t *env, int64_t n,
                    int64_t g, const float *xg) {
  int64_t mg = c->M / c->G, wp = c->pg_wp, ohw = c->OH * c->OW, nf = (c->OH - 1) * wp + c->OW;
  const float *pad = c->pg_inplace ? xg : c->scratch;
  float *y = (float *)t[c->y] + (n * c->M + g * mg) * ohw;
  conv_task_t ct;
  ct.c = c;
  ct.x = xg;
  if (!c->pg_inplace) mi__blis_parallel(env, c->C / c->G, 1, c->H * c->W, pad_part, &ct);
  if (c->pg_pix || c->pg_seg || c->pg_nojunk) { /* the tiles read the useful pixels only and run the epilogue */
    mi__blis_pg_gemm_ex(c, t, env, n, g, pad, 0, c->pg_koff, 0, ohw, NULL, 0);
    return;
  }
  mi__blis_pg_gemm_ex(c, t, env, n, g, pad, 0, c->pg_koff, 0, nf, c->pg_raw, nf);
  mi__blis_epi_compact(c, t, env, n, g * mg, mg, c->pg_raw, wp, y);
}

/* conv.packed_gemm: per image and group, the packed GEMM on the input (pointwise) or on im2col
 * columns filled chunk by chunk; the epilogue is inside the GEMM. */
static int32_t run_pg_conv(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                           mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  const float *x = t[c->x];
  int64_t n, g, p0, ohw = c->OH * c->OW, cg = c->C / c->G, cb = c->block;
  conv_task_t ct;
  mi__blis_conv_t gated;
  (void)err;
  if (c->pg_gated && !c->packed_b) { /* the gate Mul before it, in the weights (blis_convgate.c) */
    mi__blis_conv_gate_weights(c, t);
    gated = *c;
    gated.packed = c->pg_gated_w;
    c = &gated;
  }
  ct.c = c;
  ct.t = t;
  for (n = 0; n < c->N; n++)
    for (g = 0; g < c->G; g++) {
      const float *xg = x + (n * c->C + g * cg) * c->H * c->W;
      if (c->pg_direct) {
        mi__blis_pg_gemm(c, t, env, n, g, xg, ohw, 0, ohw);
        continue;
      }
      if (c->pg_hp) {
        pg_flat(c, t, env, n, g, xg);
        continue;
      }
      for (p0 = 0; p0 < ohw; p0 += cb) {
        im2col(env, &ct, xg, p0, ohw - p0 < cb ? ohw - p0 : cb);
        mi__blis_pg_gemm(c, t, env, n, g, c->scratch, ct.cb, p0, ct.cb);
      }
    }
  return MI_OK;
}

int32_t mi__blis_prep_conv(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *wt;
  mi__blis_conv_t *c;
  int32_t rc, is1x1, isdw, w_half, pg16, pgb;
  uint64_t aux = 0;
  if (strcmp(n->op_type, "ConvTranspose") == 0) return mi__blis_prep_convt(p, s, err);
  if (mi__blis_is_q8(mi__blis_tensor(p, mi__blis_in(n, 0)))) {
    int taken;
    rc = mi__blis_prep_qdw(p, s, &taken, err); /* the depthwise byte kernel where it applies */
    return rc != MI_OK || taken ? rc : mi__blis_prep_qconv(p, s, err);
  }
  wt = mi__blis_tensor(p, mi__blis_in(n, 1));
  if (!wt || wt->rank < 3) return mi__blis_unsupported(err, n, "weights missing or rank < 3");
  if (!(c = mi__blis_conv_new(p, s, n, wt->dims[0], err))) return MI_ERR_OUT_OF_MEMORY;
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  rc = mi__blis_conv_geom(p, n, c, err);
  if (rc != MI_OK) return rc;
  w_half = wt->dtype == MI_DTYPE_FLOAT16;
  /* conv.packed_gemm_fp16: FP16 weight storage, FP32 compute (FLOAT16 weights kept as they are,
   * FLOAT32 ones rounded to nearest even as the FP16 transform does). */
  pg16 = p->variant && strcmp(p->variant, "conv.packed_gemm_fp16") == 0;
  /* conv.packed_gemm_bf16: BF16 compute (weights and input rounded to BF16, FP32 sums) on the
   * AVX-512 tiles, only where the CPU has AVX512_BF16 (blis_pgemm_bf16.c) */
  pgb = p->variant && strcmp(p->variant, "conv.packed_gemm_bf16") == 0;
  if ((wt->dtype != MI_DTYPE_FLOAT32 && !w_half) || mi__blis_tensor(p, c->x)->dtype != MI_DTYPE_FLOAT32)
    return mi__blis_unsupported(err, n, "FLOAT32 conv needs FLOAT32 input and FLOAT32 or FLOAT16 weights");
  if ((w_half || pg16) && !(p->ctx->cpu.isa & MI__ISA_F16C))
    return mi__blis_unsupported(err, n, "FP16 weights need F16C half conversions, which this CPU lacks");
  if (pgb && !((p->ctx->cpu.isa & MI__ISA_AVX512BF16) && (p->ctx->cpu.isa & MI__ISA_AVX512DQBWVL))) {
    /* Not listed here, but a configuration made on a CPU with it (a deployment table) may name
     * it: the layer runs conv.packed_gemm in FP32 (its numerics are the FP32 conv's, not a
     * BF16 approximation of them), and the log says so. */
    mi_sdk_logf(p->ctx->host, MI_LOG_WARN, "blis-cpu",
                "Conv '%s': conv.packed_gemm_bf16 needs AVX512_BF16, which this CPU (or MI_BLIS_MAX_SIMD) "
                "lacks: the layer runs conv.packed_gemm in FP32",
                n->name ? n->name : "");
    pgb = 0;
  }
  if (mi__blis_in(n, 2) >= 0 && (!mi__blis_is_const(p, mi__blis_in(n, 2)) ||
                                 mi_sdk_numel(mi__blis_tensor(p, mi__blis_in(n, 2))) != c->M))
    return mi__blis_unsupported(err, n, "bias must be a constant of M elements");
  is1x1 = c->KH == 1 && c->KW == 1 && c->sh == 1 && c->sw == 1 && c->pt == 0 && c->pl == 0 &&
          c->OH == c->H && c->OW == c->W;
  isdw = c->G == c->C && c->G > 1;
  /* A depthwise conv is memory-bound: BF16 operands would only add their rounding (ppocr_v4_det's
   * 3x3 depthwise on conv.packed_gemm_bf16 ran at 4-13 GFLOP/s), so the BF16 precision is not
   * offered there (the tuner's space asks this variant before offering it). */
  if (pgb && isdw)
    return mi__blis_unsupported(err, n, "conv.packed_gemm_bf16 does not run depthwise convs");
  /* Default: depthwise direct, else Winograd (dense 3x3 stride 1, see blis_wino.c; 1-D convs of
   * any stride where it measured faster, blis_wino1d.c) or the packed SIMD GEMM where the CPU
   * has AVX2 or AVX-512, else BLIS (1x1 or im2col). */
  if (!p->variant)
    c->variant = isdw                                                       ? MI__CONV_DW
                 : mi__blis_wino_default(c) || mi__blis_wino_dil_default(c) ? MI__CONV_WINO
                 : mi__blis_w1d_default(c)                                  ? MI__CONV_WINO1D
                 : c->simd != MI__SIMD_C                                    ? MI__CONV_PG
                 : is1x1                                                    ? MI__CONV_1X1
                                                                            : MI__CONV_IM2COL;
  else if (strcmp(p->variant, "conv.packed_gemm") == 0 || pg16 || strcmp(p->variant, "conv.packed_gemm_bf16") == 0)
    c->variant = MI__CONV_PG;
  else if (strcmp(p->variant, "conv.im2col_gemm") == 0)
    c->variant = MI__CONV_IM2COL;
  else if (strcmp(p->variant, "conv.1x1_gemm") == 0)
    c->variant = MI__CONV_1X1;
  else if (strcmp(p->variant, "conv.depthwise_direct") == 0)
    c->variant = MI__CONV_DW;
  else if (strcmp(p->variant, "conv.winograd") == 0)
    c->variant = MI__CONV_WINO;
  else if (strcmp(p->variant, "conv.winograd1d") == 0)
    c->variant = MI__CONV_WINO1D;
  else
    c->variant = MI__CONV_NHWC;
  if (c->variant == MI__CONV_1X1 && !is1x1)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "blis-cpu: conv.1x1_gemm needs a 1x1 kernel, stride 1, pad 0");
  if (c->variant == MI__CONV_DW && !isdw)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "blis-cpu: conv.depthwise_direct needs group == C > 1");
  if ((c->nhwc_in || c->nhwc_out) && c->variant != MI__CONV_NHWC)
    return mi__blis_unsupported(err, n, "NHWC tensors need variant conv.direct_nhwc");
  if (w_half && !pg16) {
    /* The other variants compute from FLOAT32 weights: widen the constant copy once. */
    uint64_t cnt = (uint64_t)mi_sdk_numel(wt);
    float *wf;
    if (mi__blis_consumers(p, c->w) != 1)
      return mi__blis_unsupported(err, n, "FLOAT16 weights read by another node of the kernel");
    wf = mi__blis_alloc(p->ctx, (cnt ? cnt : 1) * sizeof *wf);
    if (!wf) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    mi__blis_h2f(p->k->ptr[c->w], wf, (int64_t)cnt);
    mi__blis_free(p->ctx, p->k->ptr[c->w]);
    p->k->ptr[c->w] = wf;
  }
  mi__blis_conv_epilogue(p, c, n);
  {
    /* the leading epilogue ops the SIMD kernels apply in registers; the rest run scalar after */
    int32_t e;
    for (e = 0; e < c->epi_n && mi__blis_epi_vec_op(c->epi[e].act); e++) {
    }
    c->pg_vec_ops = e;
    c->pg_ek = c->epi_n == 0                                    ? MI__EK_NONE
               : c->epi_n == 1 && c->epi[0].act == MI__ACT_RELU ? MI__EK_RELU
               : c->epi_n == 1 && c->epi[0].act == MI__ACT_CLIP ? MI__EK_CLIP
               : c->epi_n == 1 && c->epi[0].act == MI__ACT_NONE ? MI__EK_ADD
               : c->epi_n == 2 && c->epi[0].act == MI__ACT_NONE && c->epi[1].act == MI__ACT_RELU
                   ? MI__EK_ADD_RELU
                   : MI__EK_GENERIC;
  }
  /* dilated Winograd, picked before the epilogue was known, gives way to conv.packed_gemm for a
   * fused residual add (which it does not take) */
  if (c->variant == MI__CONV_WINO && c->dh > 1 && c->epi_n && !mi__blis_wino_dil_fits(c)) {
    int32_t en = c->epi_n, geo;
    c->epi_n = 0;
    geo = mi__blis_wino_dil_fits(c);
    c->epi_n = en;
    if (geo || !p->variant) c->variant = MI__CONV_PG;
  }
  if (c->variant == MI__CONV_PG || c->variant == MI__CONV_DW || c->variant == MI__CONV_WINO ||
      c->variant == MI__CONV_WINO1D) {
    int64_t si = mi_sdk_knob_int(p->desc, "simd", 0);
    if (si > 0 && si < p->ctx->simd_n) c->simd = p->ctx->simd_ids[si];
    else if (c->variant == MI__CONV_PG && is1x1 && c->G == 1)
      c->simd = mi__blis_pw_simd(c->simd, p->ctx->cpu.avx512_halves, c->C, c->M, c->OH * c->OW,
                                 c->pg_ek == MI__EK_GENERIC);
    if (pgb) c->simd = MI__SIMD_AVX512; /* the BF16 tiles are AVX-512 only: no `simd` choice */
  }
  /* conv.packed_gemm_bf16 runs a dense 3x3 stride-1 conv as BF16 Winograd where that measured
   * faster than its im2col form (blis_wino2.c), unless im2col_block asks for the im2col form in
   * chunks (a knob value under the plane) */
  if (pgb && mi__blis_wino2_bf16_default(c)) {
    int64_t blk = mi_sdk_knob_int(p->desc, "im2col_block", 0);
    if (blk <= 0 || blk >= c->OH * c->OW) return mi__blis_wino2_bf16_prep(p, s, c, err);
  }
  if (c->variant == MI__CONV_WINO && c->dh > 1) return mi__blis_wino_dil_prep(p, s, c, err);
  if (c->variant == MI__CONV_WINO) return mi__blis_wino_prep(p, s, c, err);
  if (c->variant == MI__CONV_WINO1D) return mi__blis_w1d_prep(p, s, c, err);
  if (c->variant == MI__CONV_PG) {
    int64_t ohw = c->OH * c->OW;
    uint64_t packed, packed_fl;
    int64_t pix;
    int64_t kk = c->C / c->G * c->KH * c->KW, nf = 0;
    uint64_t scratch;
    int gated;
    c->pg_direct = is1x1;
    c->block = mi_sdk_knob_int(p->desc, "im2col_block", 0);
    if (c->pg_direct || c->block <= 0 || c->block > ohw) c->block = ohw;
    if (!c->pg_direct && c->sh <= 4 && c->sw <= 4 && c->block == ohw) {
      c->pg_hp = c->OH + (c->KH - 1) * c->dh / c->sh;
      c->pg_wp = c->OW + (c->KW - 1) * c->dw / c->sw;
      nf = (c->OH - 1) * c->pg_wp + c->OW;
      /* No padding at stride 1 and no rows or columns past the last tap: the padded plane is the
       * input plane, so the tiles read the input in place (their loads past a row's or the
       * plane's end are masked, as on the copy). oww-embedding's unpadded 3x1 convs copied their
       * whole input per run. */
      c->pg_inplace = c->sh == 1 && c->sw == 1 && c->pt == 0 && c->pl == 0 && c->pg_hp == c->H &&
                      c->pg_wp == c->W;
    }
    /* channels in the lanes for small planes; on the flat planes they read the useful pixels
     * through a pixel table (no junk columns, no compaction), up to 100 pixels with AVX2 too
     * since its channel-lane tile is intrinsics (bench_blis_conv capped at AVX2, 3x3 stride 1,
     * min of 30: 64ch 9x9 0.080 -> 0.057 ms, 32->48 7x10 0.028 -> 0.020, 128ch 9x11 0.36 -> 0.27-0.30) */
    c->pg_mv = c->pg_hp ? ohw < (c->simd != MI__SIMD_C ? MI__PG_MV_FLAT : MI__PG_MV_PIX) : c->block < MI__PG_MV_PIX;
    if (pgb) c->pg_mv = 0; /* BF16 has "nv" tiles only: small planes run them masked */
    c->pg_mr = mi__blis_pg_panel(c->simd, c->pg_mv);
    packed = mi__blis_pg_packed_floats(c);
    packed_fl = pg16 ? (packed + 15) / 16 * 8 : packed;                 /* halves take half the floats (kept 32-byte multiples) */
    if (pgb) packed_fl = (mi__blis_pgb_packed_pairs(c) + 15) / 16 * 16; /* one float's bytes a BF16 pair */
    /* On the flat planes the tiles read the useful pixels only when they can: "mv" tiles through a
     * pixel table; with AVX-512 or AVX2, output rows as 16-pixel segments when they take no more
     * lanes than the flat run with its junk columns (not kws' 5-wide rows: 5 of 16 lanes). Else the
     * flat run goes to raw sums, compacted after. */
    pix = c->pg_hp && c->pg_mv ? 2 * ohw : 0;
    /* Rows of the padded plane as wide as the output's (a kernel one column wide): the flat run
     * has no junk columns, so it is the output itself, stored in place like a pointwise conv's
     * (oww-embedding's 3x1 convs on 8-wide rows went to raw sums and a compaction pass). */
    c->pg_nojunk = c->pg_hp && !c->pg_mv && c->pg_wp == c->OW;
    if (c->pg_hp && !c->pg_mv && !c->pg_nojunk && c->simd != MI__SIMD_C &&
        c->OH * ((c->OW + 15) / 16) * 16 <= (nf + 31) / 32 * 32) {
      c->pg_nseg = c->OH * ((c->OW + 15) / 16);
      pix = 6 * c->pg_nseg; /* floats for 3 int64 a segment */
    }
    scratch = c->pg_direct ? 0
              : c->pg_hp   ? (uint64_t)((c->pg_inplace ? 0 : c->C / c->G * c->sh * c->sw * c->pg_hp * c->pg_wp) +
                                      (pix || c->pg_nojunk ? 0 : c->M / c->G * nf))
                           : (uint64_t)(kk * c->block);
    gated = !pg16 && mi__blis_conv_gate_link(p, c, pgb) && !pgb; /* gated: the weights' copy */
    /* aux: row offsets (int64, first: 64-byte aligned), pixel table or segments, packed weights,
     * scratch, the gated weights */
    aux = (uint64_t)(c->pg_hp ? 2 * kk : 0) + (uint64_t)pix + packed_fl + scratch + (gated ? packed + 16 : 0);
    s->aux = mi__blis_alloc(p->ctx, (aux + 1) * sizeof(float));
    if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    c->packed = (float *)s->aux + (c->pg_hp ? 2 * kk : 0) + pix;
    c->scratch = c->packed + packed_fl;
    if (gated) /* 64-byte aligned, as the panels' loads like */
      c->pg_gated_w = (float *)(((uintptr_t)(c->scratch + scratch) + 63) & ~(uintptr_t)63);
    if (pg16) {
      c->packed_h = (uint16_t *)c->packed;
      c->packed = NULL;
    } else if (pgb) {
      c->packed_b = (uint32_t *)(void *)c->packed;
      c->packed = NULL;
    }
    if (pix && c->pg_mv) {
      int64_t oh, ow;
      c->pg_pix = (int64_t *)s->aux + kk;
      for (oh = 0; oh < c->OH; oh++)
        for (ow = 0; ow < c->OW; ow++) c->pg_pix[oh * c->OW + ow] = oh * c->pg_wp + ow;
    } else if (pix) {
      int64_t oh, ow, *sg = (int64_t *)s->aux + kk;
      c->pg_seg = sg;
      for (oh = 0; oh < c->OH; oh++)
        for (ow = 0; ow < c->OW; ow += 16, sg += 3) {
          sg[0] = oh * c->pg_wp + ow;
          sg[1] = oh * c->OW + ow;
          sg[2] = c->OW - ow < 16 ? c->OW - ow : 16;
        }
    }
    if (c->pg_hp) {
      int64_t ci, a, b, k = 0, planes = c->pg_inplace ? 0 : c->C / c->G * c->sh * c->sw * c->pg_hp * c->pg_wp;
      memset(c->scratch, 0, (size_t)planes * sizeof(float));
      c->pg_koff = s->aux;
      c->pg_raw = pix || c->pg_nojunk ? NULL : c->scratch + planes;
      for (ci = 0; ci < c->C / c->G; ci++)
        for (a = 0; a < c->KH; a++)
          for (b = 0; b < c->KW; b++) {
            int64_t ph = (ci * c->sh + a * c->dh % c->sh) * c->sw + b * c->dw % c->sw;
            c->pg_koff[k++] = (ph * c->pg_hp + a * c->dh / c->sh) * c->pg_wp + b * c->dw / c->sw;
          }
    }
    if (pgb) mi__blis_pgb_pack(c, p->k->ptr[c->w]);
    else
      mi__blis_pg_pack(c, p->k->ptr[c->w], w_half && pg16);
    /* The packed panels are all the kernel reads: drop the constant copy (with FP16 storage the
     * layer then holds half the bytes of its FP32 weights). */
    mi__blis_drop_const(p, c->w);
  } else if (c->variant == MI__CONV_DW && ((c->simd == MI__SIMD_AVX512 && mi__blis_dw_cl_fits(c)) ||
                                           (c->simd == MI__SIMD_AVX2 && mi__blis_dw256_cl_fits(c)))) {
    uint64_t fl = (uint64_t)((c->M + 15) / 16 * 16 * c->KH * c->KW);
    s->aux = mi__blis_alloc(p->ctx, fl * sizeof(float));
    if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    c->packed = s->aux;
    c->dw_cl = 1;
    mi__blis_dw_cl_pack(c, p->k->ptr[c->w], c->packed);
  } else if (c->variant == MI__CONV_IM2COL) {
    int64_t ohw = c->OH * c->OW;
    c->block = mi_sdk_knob_int(p->desc, "im2col_block", 0);
    if (c->block <= 0 || c->block > ohw) c->block = ohw;
    aux = (uint64_t)(c->C / c->G * c->KH * c->KW * c->block) * sizeof(float);
    s->aux = mi__blis_alloc(p->ctx, aux ? aux : 1);
    if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    c->scratch = s->aux;
  } else if (c->variant == MI__CONV_NHWC) {
    uint64_t wn = (uint64_t)mi_sdk_numel(wt), xn = c->nhwc_in ? 0 : (uint64_t)(c->N * c->C * c->H * c->W);
    c->block = mi_sdk_knob_int(p->desc, "oc_block", 32);
    s->aux = mi__blis_alloc(p->ctx, (wn + xn + 1) * sizeof(float));
    if (!s->aux) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
    c->packed = s->aux;
    c->scratch = c->packed + wn;
    mi__blis_conv_pack_nhwc(c, p->k->ptr[c->w]);
  }
  s->run = c->variant == MI__CONV_PG                                     ? run_pg_conv
           : c->variant == MI__CONV_IM2COL || c->variant == MI__CONV_1X1 ? run_gemm_conv
                                                                         : mi__blis_conv_run_direct;
  if (!c->pg_gated) mi__blis_dwpw_link(p, s, c);
  return MI_OK;
}
