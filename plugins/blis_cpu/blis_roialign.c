/* blis_roialign.c - blis-cpu's RoiAlign (opsets 10 and 16; avg and max; half_pixel and
 * output_half_pixel: Mask R-CNN's and the other two-stage detectors' heads), in the reference's
 * arithmetic (framework/src/ref/ref_vision.c): each roi's samples (four corners and weights)
 * worked out once, then applied to a block of channels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blis_conv.h" /* the SIMD levels */

/* Channels one item applies a roi's samples to. */
#define RA_CB 16

typedef struct ra_state {
  int32_t x, rois, bi, y, bi64, max_mode, half, simd;
  int64_t N, C, H, W, R, oh, ow, ratio;
  float scale;
  char name[64];
} ra_state_t;

/* One roi's geometry, checked before the parallel loop. */
typedef struct ra_roi {
  int64_t b, gh, gw;
  float x0, y0, bh, bw;
} ra_roi_t;

/* A sample: the offsets of its four corners and their weights; valid 0 for a point more than a
 * pixel outside, whose value is 0. */
typedef struct ra_sample {
  int32_t o[4];
  float w[4];
  int32_t valid;
} ra_sample_t;

typedef struct ra_run {
  const ra_state_t *st;
  const float *x;
  float *y;
  const ra_roi_t *roi;
  int failed;
} ra_run_t;

/* The reference's bilinear sample of a plane at (y, x), as corner offsets and weights. Out of the
 * SIMD bodies (no fused multiply-adds): the weights are the reference's to the bit. */
static void ra_corners(const ra_state_t *st, float y, float x, ra_sample_t *s) {
  int64_t H = st->H, W = st->W;
  s->valid = y >= -1.0f && y <= (float)H && x >= -1.0f && x <= (float)W; /* NaN: not */
  if (!s->valid) {
    memset(s->o, 0, sizeof s->o);
    memset(s->w, 0, sizeof s->w);
    return;
  }
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
  if (y0 >= H - 1) y1 = y0 = H - 1, y = (float)y0;
  else
    y1 = y0 + 1;
  if (x0 >= W - 1) x1 = x0 = W - 1, x = (float)x0;
  else
    x1 = x0 + 1;
  float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
  s->o[0] = (int32_t)(y0 * W + x0), s->o[1] = (int32_t)(y0 * W + x1);
  s->o[2] = (int32_t)(y1 * W + x0), s->o[3] = (int32_t)(y1 * W + x1);
  s->w[0] = hy * hx, s->w[1] = hy * lx, s->w[2] = ly * hx, s->w[3] = ly * lx;
}

/* A roi's samples, bin by bin (oh x ow bins of gh x gw samples). */
static void ra_samples(const ra_state_t *st, const ra_roi_t *r, ra_sample_t *out) {
  for (int64_t ph = 0; ph < st->oh; ph++)
    for (int64_t pw = 0; pw < st->ow; pw++)
      for (int64_t iy = 0; iy < r->gh; iy++) {
        float sy = r->y0 + (float)ph * r->bh + ((float)iy + 0.5f) * r->bh / (float)r->gh;
        for (int64_t ix = 0; ix < r->gw; ix++) {
          float sx = r->x0 + (float)pw * r->bw + ((float)ix + 0.5f) * r->bw / (float)r->gw;
          ra_corners(st, sy, sx, out++);
        }
      }
}

/* Items are (roi, block of RA_CB channels). Each sample's value is the four weighted corners
 * added as the reference adds them (avg) or their largest (max). */
static inline __attribute__((always_inline)) void ra_body(ra_run_t *run, int64_t i0, int64_t i1) {
  const ra_state_t *st = run->st;
  int64_t cblocks = (st->C + RA_CB - 1) / RA_CB, bins = st->oh * st->ow, plane = st->H * st->W;
  ra_sample_t *smp = NULL;
  int64_t have = 0, last = -1;
  for (int64_t it = i0; it < i1; it++) {
    int64_t r = it / cblocks, c0 = (it % cblocks) * RA_CB, c1 = c0 + RA_CB < st->C ? c0 + RA_CB : st->C;
    const ra_roi_t *ro = &run->roi[r];
    int64_t per = ro->gh * ro->gw, need = bins * per;
    if (r != last) {
      if (need > have) {
        free(smp);
        if (!(smp = malloc((size_t)(need ? need : 1) * sizeof *smp))) {
          run->failed = 1;
          return;
        }
        have = need;
      }
      ra_samples(st, ro, smp);
      last = r;
    }
    float count = (float)(per > 0 ? per : 1);
    for (int64_t ch = c0; ch < c1; ch++) {
      const float *pl = run->x + (ro->b * st->C + ch) * plane;
      float *yr = run->y + (r * st->C + ch) * bins;
      for (int64_t bn = 0; bn < bins; bn++) {
        const ra_sample_t *s = smp + bn * per;
        float acc = 0;
        if (!st->max_mode) {
          for (int64_t k = 0; k < per; k++) {
            float v = s[k].w[0] * pl[s[k].o[0]] + s[k].w[1] * pl[s[k].o[1]] + s[k].w[2] * pl[s[k].o[2]] +
                      s[k].w[3] * pl[s[k].o[3]];
            acc += s[k].valid ? v : 0.0f;
          }
          yr[bn] = acc / count;
        } else {
          for (int64_t k = 0; k < per; k++) {
            float v = 0.0f;
            if (s[k].valid) {
              float a = s[k].w[0] * pl[s[k].o[0]], b = s[k].w[1] * pl[s[k].o[1]];
              float e = s[k].w[2] * pl[s[k].o[2]], f = s[k].w[3] * pl[s[k].o[3]];
              v = fmaxf(fmaxf(a, b), fmaxf(e, f));
            }
            acc = k == 0 ? v : fmaxf(acc, v);
          }
          yr[bn] = acc;
        }
      }
    }
  }
  free(smp);
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void ra_avx512(void *arg, int64_t i0, int64_t i1) {
  ra_body(arg, i0, i1);
}
__attribute__((target("avx2,fma"))) static void ra_avx2(void *arg, int64_t i0, int64_t i1) {
  ra_body(arg, i0, i1);
}
static void ra_c(void *arg, int64_t i0, int64_t i1) { ra_body(arg, i0, i1); }

static int32_t ra_fail(mi_error_t *err, int32_t code, const ra_state_t *st, const char *what, int64_t r, int64_t a,
                       int64_t b) {
  return mi_sdk_errorf(err, code, "blis-cpu: RoiAlign '%s': roi %lld: %s (%lld, %lld)", st->name, (long long)r, what,
                       (long long)a, (long long)b);
}

static int32_t run_roialign(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const ra_state_t *st = s->state;
  const float *rp = t[st->rois];
  float off = st->half ? 0.5f : 0.0f;
  int64_t work = 0;
  int32_t rc = MI_OK;
  ra_run_t run = {st, t[st->x], t[st->y], NULL, 0};
  ra_roi_t *roi = malloc((size_t)(st->R ? st->R : 1) * sizeof *roi);
  if (!roi) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: RoiAlign '%s': out of memory", st->name);
  for (int64_t r = 0; r < st->R; r++) {
    ra_roi_t *o = &roi[r];
    o->b = st->bi64 ? ((const int64_t *)t[st->bi])[r] : ((const int32_t *)t[st->bi])[r];
    if (o->b < 0 || o->b >= st->N) {
      rc = ra_fail(err, MI_ERR_INVALID_ARGUMENT, st, "batch index outside [0, N)", r, o->b, st->N);
      goto done;
    }
    o->x0 = rp[r * 4] * st->scale - off, o->y0 = rp[r * 4 + 1] * st->scale - off;
    float rw = rp[r * 4 + 2] * st->scale - off - o->x0, rh = rp[r * 4 + 3] * st->scale - off - o->y0;
    if (!st->half) rw = fmaxf(rw, 1.0f), rh = fmaxf(rh, 1.0f);
    o->bh = rh / (float)st->oh, o->bw = rw / (float)st->ow;
    if (!(fabsf(o->x0) < 1e7f && fabsf(o->y0) < 1e7f && rw > -1e7f && rw < 1e7f && rh > -1e7f && rh < 1e7f)) {
      rc = mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: RoiAlign '%s': roi %lld is not finite or is over 1e7 pixels",
                         st->name, (long long)r);
      goto done;
    }
    o->gh = st->ratio > 0 ? st->ratio : (int64_t)ceilf(rh / (float)st->oh);
    o->gw = st->ratio > 0 ? st->ratio : (int64_t)ceilf(rw / (float)st->ow);
    if (o->gh < 0) o->gh = 0; /* an inverted roi: no samples, as the reference's empty loops */
    if (o->gw < 0) o->gw = 0;
    if (o->gh > 4096 || o->gw > 4096) {
      rc = ra_fail(err, MI_ERR_UNSUPPORTED, st, "over 4096 samples per bin side", r, o->gh, o->gw);
      goto done;
    }
    work += o->gh * o->gw;
  }
  run.roi = roi;
  {
    int64_t items = st->R * ((st->C + RA_CB - 1) / RA_CB);
    int64_t per_item = st->R ? work * st->oh * st->ow * 12 / st->R * RA_CB : 0;
    mi__blis_parallel(env, items, 1, per_item, st->simd == MI__SIMD_AVX512 ? ra_avx512 : st->simd == MI__SIMD_AVX2 ? ra_avx2
                                                                                                                   : ra_c,
                      &run);
  }
  if (run.failed) rc = mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: RoiAlign '%s': out of memory", st->name);
done:
  free(roi);
  return rc;
}

int32_t mi__blis_prep_roialign(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *ro = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *bi = mi__blis_tensor(p, mi__blis_in(n, 2)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const char *ms = mi_sdk_attr_string(n, "mode", "avg");
  const char *ct = mi_sdk_attr_string(n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel" : "output_half_pixel");
  ra_state_t *st;
  if (!x || !ro || !bi || !y || x->dtype != MI_DTYPE_FLOAT32 || ro->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 ||
      (bi->dtype != MI_DTYPE_INT64 && bi->dtype != MI_DTYPE_INT32) || x->rank != 4 || ro->rank != 2 || ro->dims[1] != 4 ||
      bi->rank != 1 || bi->dims[0] != ro->dims[0] || y->rank != 4)
    return mi__blis_unsupported(err, n, "X must be FLOAT32 [N, C, H, W], rois [R, 4] and batch_indices INT64/INT32 [R]");
  if (strcmp(ms, "avg") && strcmp(ms, "max")) return mi__blis_unsupported(err, n, "mode must be avg or max");
  if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
    return mi__blis_unsupported(err, n, "coordinate_transformation_mode must be half_pixel or output_half_pixel");
  if (x->dims[2] < 1 || x->dims[3] < 1 || x->dims[2] * x->dims[3] >= ((int64_t)1 << 31))
    return mi__blis_unsupported(err, n, "X's planes must hold 1 to 2^31 - 1 values");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  st->oh = mi_sdk_attr_int(n, "output_height", 1);
  st->ow = mi_sdk_attr_int(n, "output_width", 1);
  st->ratio = mi_sdk_attr_int(n, "sampling_ratio", 0);
  if (st->oh < 1 || st->ow < 1 || st->ratio < 0 || y->dims[0] != ro->dims[0] || y->dims[1] != x->dims[1] ||
      y->dims[2] != st->oh || y->dims[3] != st->ow)
    return mi__blis_unsupported(err, n, "output_height, output_width must be >= 1, sampling_ratio >= 0, Y [R, C, oh, ow]");
  st->scale = mi_sdk_attr_float(n, "spatial_scale", 1.0f);
  st->max_mode = !strcmp(ms, "max");
  st->half = !strcmp(ct, "half_pixel");
  st->x = mi__blis_in(n, 0);
  st->rois = mi__blis_in(n, 1);
  st->bi = mi__blis_in(n, 2);
  st->bi64 = bi->dtype == MI_DTYPE_INT64;
  st->y = mi__blis_out(n, 0);
  st->N = x->dims[0];
  st->C = x->dims[1];
  st->H = x->dims[2];
  st->W = x->dims[3];
  st->R = ro->dims[0];
  st->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  s->run = run_roialign;
  return MI_OK;
}
