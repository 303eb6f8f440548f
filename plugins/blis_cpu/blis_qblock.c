/* blis_qblock.c - a depthwise-separable block in QDQ form (depthwise Conv -> pointwise Conv [->
 * residual Add], each a lowered INT8 layer, codes between them) in one pass over bands of output
 * rows, as blis_dwpw.c runs the FP32 block: a band's depthwise codes go to a buffer that the
 * pointwise byte core reads at once, and its pointwise codes meet the residual's rows while both
 * are in cache. Apart, each layer wrote its codes plane to memory and the next read it back, and
 * each paid a kernel call (BlazeFace: 31 such blocks on 128x128 planes). Every step computes
 * what its own lowered kernel computes, in the same order (the depthwise byte kernel's sums and
 * output stage, the pointwise byte core's columns, sums and output stage, the Add's row loop), so
 * the codes are the same bit for bit; only where and when they live changes. */
#include <string.h>

#include "blis_qgemm.h"

/* Bytes of one band's scratch (depthwise codes, columns, sums, pixel sums, pointwise codes): on
 * the stack, well inside L2 with the band's input and residual rows beside it. */
#define QB_BAND_BYTES (192 * 1024)

typedef struct qblock_task {
  const mi__blis_step_t *s; /* the depthwise step; the pointwise (and Add) steps follow it */
  void *const *t;
  const mi__blis_conv_t *dw, *pw;
  const mi__blis_qbin_row_t *row; /* the Add's, or NULL */
  int32_t ra, rb, ry, pw_a;       /* its tensors; pw_a: the pointwise codes are its operand a */
  int64_t rows, bands, kq;
} qblock_task_t;

/* Scratch bytes per band pixel, each part 64-byte aligned by whole pixels of 64. */
static int64_t band_bytes(const mi__blis_conv_t *dw, const mi__blis_conv_t *pw, int64_t npix) {
  int64_t n = (npix + 63) / 64 * 64;
  return n * (dw->M + (pw->C + 3) / 4 * 4 + 4 * pw->M + 4 + pw->M);
}

/* Items are (image, band of output rows). */
static void band_part(void *arg, int64_t b0, int64_t b1) {
  const qblock_task_t *k = arg;
  const mi__blis_conv_t *dw = k->dw, *pw = k->pw;
  uint8_t scratch[QB_BAND_BYTES] __attribute__((aligned(64)));
  int64_t b, m, ohw = pw->OH * pw->OW;
  for (b = b0; b < b1; b++) {
    int64_t n = b / k->bands, oh0 = b % k->bands * k->rows;
    int64_t oh1 = oh0 + k->rows < dw->OH ? oh0 + k->rows : dw->OH, npix = (oh1 - oh0) * dw->OW;
    int64_t np = (npix + 63) / 64 * 64, off = n * pw->M * ohw + oh0 * pw->OW;
    uint8_t *dwc = scratch, *col = dwc + np * dw->M, *pwc = col + np * k->kq * 4;
    int32_t *acc = (int32_t *)(pwc + np * pw->M), *psum = acc + np * pw->M;
    for (m = 0; m < dw->M; m++)
      mi__blis_qdw_codes_rows(k->s, k->t[dw->x], n, m, oh0, oh1, dwc + m * npix);
    if (!k->row) { /* no Add: the pointwise codes are the kernel's output */
      mi__blis_qconv_pw_band(k->s + 1, dwc, oh1 - oh0, col, acc, psum, (uint8_t *)k->t[pw->y] + off, ohw);
      continue;
    }
    mi__blis_qconv_pw_band(k->s + 1, dwc, oh1 - oh0, col, acc, psum, pwc, npix);
    if (npix == ohw) { /* the band is the whole image: its channels' rows are one run */
      const uint8_t *res = (const uint8_t *)k->t[k->pw_a ? k->rb : k->ra] + off;
      mi__blis_qbin_row(MI__SIMD_AVX512, k->row, k->pw_a ? pwc : res, k->pw_a ? res : pwc,
                        (uint8_t *)k->t[k->ry] + off, npix * pw->M);
      continue;
    }
    for (m = 0; m < pw->M; m++) {
      const uint8_t *res = (const uint8_t *)k->t[k->pw_a ? k->rb : k->ra] + off + m * ohw;
      const uint8_t *mine = pwc + m * npix;
      mi__blis_qbin_row(MI__SIMD_AVX512, k->row, k->pw_a ? mine : res, k->pw_a ? res : mine,
                        (uint8_t *)k->t[k->ry] + off + m * ohw, npix);
    }
  }
}

static int32_t run_block(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, int with_add) {
  qblock_task_t k;
  int32_t a, b, y;
  int64_t most;
  memset(&k, 0, sizeof k);
  k.s = s;
  k.t = t;
  k.dw = mi__blis_qdw_codes_geom(s);
  k.pw = mi__blis_qconv_pw_geom(s + 1);
  k.kq = (k.pw->C + 3) / 4;
  if (with_add) {
    k.row = mi__blis_qbin_full(s + 2, &a, &b, &y);
    k.ra = a;
    k.rb = b;
    k.ry = y;
    k.pw_a = a == k.pw->y;
  }
  /* the most rows a band's scratch holds; fewer when that leaves a thread without a band */
  for (most = k.dw->OH; most > 1 && band_bytes(k.dw, k.pw, most * k.dw->OW) > QB_BAND_BYTES; most--) {
  }
  k.rows = (k.dw->OH + env->threads - 1) / (env->threads > 0 ? env->threads : 1);
  k.rows = k.rows < most ? k.rows : most;
  k.rows = k.rows < 1 ? 1 : k.rows;
  k.bands = (k.dw->OH + k.rows - 1) / k.rows;
  mi__blis_parallel(env, k.dw->N * k.bands, 1, k.rows * k.dw->OW * k.pw->M * (k.dw->KH * k.dw->KW + k.pw->C) * 2,
                    band_part, &k);
  return MI_OK;
}

static int32_t run_dwpw(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  (void)err;
  return run_block(s, t, env, 0);
}

static int32_t run_dwpw_add(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  (void)err;
  return run_block(s, t, env, 1);
}

/* The later steps' work is done by the first step's pass. */
static int32_t run_in_block(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  (void)s;
  (void)t;
  (void)env;
  (void)err;
  return MI_OK;
}

int mi__blis_qblock_runs(const mi__blis_step_t *s) {
  return s->run == run_dwpw || s->run == run_dwpw_add || s->run == run_in_block;
}

int mi__blis_qblock_desc(const mi__blis_prep_t *p) {
  const mi_kernel_desc_t *d = p->desc;
  int32_t i;
  if (d->node_count < 2 || d->node_count > 3) return 0;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    const mi_tensor_desc_t *y = n->output_count == 1 ? mi__blis_tensor(p, n->outputs[0]) : NULL;
    if (!y || !mi__blis_is_q8(y) || strcmp(n->op_type, i < 2 ? "Conv" : "Add")) return 0;
  }
  return 1;
}

void mi__blis_qblock_link(mi_kernel_t *k, const mi_kernel_desc_t *d) {
  mi__blis_step_t *s = k->steps;
  const mi__blis_conv_t *dw, *pw;
  const mi__blis_qbin_row_t *row = NULL;
  int32_t a = -1, b = -1, y = -1, i, with_add = k->step_count == 3;
  if (d->node_count != k->step_count || (k->step_count != 2 && !with_add)) return;
  if (!(dw = mi__blis_qdw_codes_geom(&s[0])) || !(pw = mi__blis_qconv_pw_geom(&s[1]))) return;
  if (pw->x != dw->y || pw->N != dw->N || pw->C != dw->M || pw->H != dw->OH || pw->W != dw->OW ||
      band_bytes(dw, pw, dw->OW) > QB_BAND_BYTES)
    return;
  if (with_add && (!(row = mi__blis_qbin_full(&s[2], &a, &b, &y)) || (a == pw->y) == (b == pw->y)))
    return;
  /* the intermediates are read by the next step only and never leave the kernel */
  for (i = 0; i < d->output_count; i++)
    if (d->outputs[i] == dw->y || (with_add && d->outputs[i] == pw->y)) return;
  s[0].run = with_add ? run_dwpw_add : run_dwpw;
  s[1].run = run_in_block;
  s[1].joined = 1;
  if (with_add) {
    s[2].run = run_in_block;
    s[2].joined = 1;
  }
}
