/* ocl_prepare_direct.c - prepares the register-tiled direct convolutions (conv.tiled,
 * conv.dw_tiled, their vector forms conv.tiled_vec, conv.dw_vec, and the pointwise
 * conv.pw_vec): the filter geometry as build options, the weights packed for conv.tiled and
 * conv.pw_vec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* The geometry options every tiled kernel is built with (g as in mi__ocl_prepare_conv). */
static void geo_opts(char *buf, size_t n, const char *kind, const cl_int *g, int b0, int owb,
                     const ocl_knobs_t *kn, int vec) {
  snprintf(buf, n,
           "-D %s -D KH=%d -D KW=%d -D SH=%d -D SW=%d -D DH=%d -D DW=%d -D %s=%d -D OWB=%d "
           "-D UNROLL=%d -D OWV=%d",
           kind, g[6], g[7], g[8], g[9], g[12], g[13], strcmp(kind, "CONV_TILED") ? "OHB" : "OCB",
           b0, owb, (int)kn->v[K_UNROLL], vec && owb > 1); /* no float1: scalar */
}

/* Which shapes each variant takes. conv.tiled leaves depthwise convolutions (one input and one
 * output channel per group) to conv.dw_tiled, whose whole point they are; both need a constant
 * filter, since conv.tiled repacks it and conv.dw_tiled's taps are compile-time loops over it. */
static int32_t accepts(ocl_prep_t *p, int dw, int pw, const cl_int *g, const mi_tensor_desc_t *w) {
  int C = g[0], OC = g[3], G = g[14];
  if (!w->data || w->dtype != MI_DTYPE_FLOAT32)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: needs a constant FP32 filter",
                         p->var->v.id);
  /* conv.pw_vec reads a channel's plane as one flat run of pixels, true only when the output
   * plane is the input plane */
  if (pw && (g[6] != 1 || g[7] != 1 || g[8] != 1 || g[9] != 1 || g[10] || g[11] || G != 1 ||
             g[4] != g[1] || g[5] != g[2]))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "%s: needs a 1x1 filter, stride 1, no pads and group 1 (got %dx%d, "
                         "stride %dx%d, pads %d,%d, group %d)",
                         p->var->v.id, g[6], g[7], g[8], g[9], g[10], g[11], G);
  if (dw && (G != C || OC % C))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "%s: needs group == channels (group %d, C %d)", p->var->v.id, G, C);
  if (!dw && C / G == 1 && OC / G == 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "%s: a depthwise convolution (group %d == channels) is "
                         "conv.dw_tiled's / conv.dw_vec's",
                         p->var->v.id, G);
  if ((long long)g[6] * g[7] > 49)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "%s: filters up to 49 taps (7x7) unroll into registers; %dx%d is larger",
                         p->var->v.id, g[6], g[7]);
  return MI_OK;
}

/* conv.pw_vec's launch: work-item (block of oh_per_item floatN vectors of the flat plane,
 * (image, block of oc_per_item channels)); the filter is packed as conv.tiled's with one tap. */
static int32_t launch_pw(ocl_prep_t *p, const cl_int *g, int N, ocl_arg_t aw, ocl_arg_t ax,
                         ocl_arg_t ay, const ocl_epi_t *e) {
  int ocb = (int)p->kn.v[K_OCB], owb = (int)p->kn.v[K_OWB], ohb = (int)p->kn.v[K_OHB];
  cl_int sizes[3] = {g[0], g[4] * g[5], g[3]};
  size_t wgx = (size_t)p->kn.v[K_WG_X], blocks = ((size_t)sizes[1] + ohb * owb - 1) / (ohb * owb);
  char opt[160];
  ocl_launch_t *l;
  int32_t st;
  snprintf(opt, sizeof opt, "-D CONV_PW -D OCB=%d -D OWB=%d -D OHB=%d -D UNROLL=%d -D OWV=1", ocb,
           owb, ohb, (int)p->kn.v[K_UNROLL]);
  if (!(l = mi__ocl_launch_new(p, mi__ocl_src_direct, opt, "conv_pw", &st))) return st;
  mi__ocl_arg(l, ax);
  mi__ocl_arg(l, aw);
  mi__ocl_arg(l, ay);
  mi__ocl_arg_intv(l, sizes, 3);
  if ((st = mi__ocl_arg_epi(p, l, e, sizes[1])) != MI_OK) return st;
  l->dim = 2;
  l->lws[0] = wgx;
  l->lws[1] = 1;
  l->gws[0] = (blocks + wgx - 1) / wgx * wgx;
  l->gws[1] = (size_t)N * ((sizes[2] + ocb - 1) / ocb);
  l->has_lws = 1;
  return mi__ocl_check_wg(p, l);
}

int32_t mi__ocl_conv_tiled(ocl_prep_t *p, const cl_int *g, int N, const mi_tensor_desc_t *w,
                           ocl_arg_t ax, ocl_arg_t ay, const ocl_epi_t *e) {
  int dw = !strcmp(p->var->v.id, "conv.dw_tiled") || !strcmp(p->var->v.id, "conv.dw_vec");
  int pw = !strcmp(p->var->v.id, "conv.pw_vec"), vec = strstr(p->var->v.id, "_vec") != NULL;
  int C = g[0], OC = g[3], OH = g[4], OW = g[5], KK = g[6] * g[7], G = g[14];
  int owb = (int)p->kn.v[K_OWB], b0 = (int)p->kn.v[dw ? K_OHB : K_OCB];
  cl_int sizes[9] = {C, g[1], g[2], OC, OH, OW, g[10], g[11], G};
  size_t wgx = (size_t)p->kn.v[K_WG_X];
  char opt[256];
  ocl_arg_t aw;
  ocl_launch_t *l;
  int32_t st;
  if ((st = accepts(p, dw, pw, g, w)) != MI_OK) return st;
  if (dw) {
    if ((st = mi__ocl_upload(p, w->data, (size_t)OC * KK * 4, &aw)) != MI_OK) return st;
  } else {
    /* [OC][Cg][KH][KW] -> [G][nob][Cg][KH][KW][OCB], channels past OCg zero */
    int Cg = C / G, OCg = OC / G, nob = (OCg + b0 - 1) / b0, gi, o, r;
    size_t n = (size_t)G * nob * Cg * KK * b0;
    const float *src = w->data;
    float *pk = calloc(n, sizeof *pk);
    if (!pk) return mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    for (gi = 0; gi < G; gi++)
      for (o = 0; o < OCg; o++)
        for (r = 0; r < Cg * KK; r++)
          pk[(((size_t)gi * nob + o / b0) * Cg * KK + r) * b0 + o % b0] =
              src[((size_t)gi * OCg + o) * Cg * KK + r];
    st = mi__ocl_upload(p, pk, n * sizeof *pk, &aw);
    free(pk);
    if (st != MI_OK) return st;
  }
  if (pw) return launch_pw(p, g, N, aw, ax, ay, e);
  geo_opts(opt, sizeof opt, dw ? "CONV_DW_TILED" : "CONV_TILED", g, b0, owb, &p->kn, vec);
  if (!(l = mi__ocl_launch_new(p, mi__ocl_src_direct, opt, dw ? "conv_dw_tiled" : "conv_tiled", &st)))
    return st;
  mi__ocl_arg(l, ax);
  mi__ocl_arg(l, aw);
  mi__ocl_arg(l, ay);
  mi__ocl_arg_intv(l, sizes, dw ? 8 : 9);
  if ((st = mi__ocl_arg_epi(p, l, e, OH * OW)) != MI_OK) return st;
  l->dim = 3;
  l->lws[0] = wgx;
  l->lws[1] = l->lws[2] = 1;
  l->gws[0] = ((size_t)(OW + owb - 1) / owb + wgx - 1) / wgx * wgx;
  if (dw) {
    l->gws[1] = (size_t)(OH + b0 - 1) / b0;
    l->gws[2] = (size_t)N * OC;
  } else {
    l->gws[1] = (size_t)OH;
    l->gws[2] = (size_t)N * G * ((OC / G + b0 - 1) / b0);
  }
  l->has_lws = 1;
  return mi__ocl_check_wg(p, l);
}
