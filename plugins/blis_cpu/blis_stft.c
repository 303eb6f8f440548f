/* blis_stft.c - blis-cpu's STFT and DFT as one sgemm each: the transform of every frame (or
 * line) is the frame times a [taps, 2 bins] matrix of cosines and sines built at prepare time (the
 * window folded in), and the frames are read in place as a strided view of the signal (row
 * stride frame_step). An audio front end's 3000 frames of 400 samples are one 3000x400x402 GEMM
 * instead of a host loop. Real and complex (interleaved) input, inverse, onesided, dft_length
 * (zero-padding is implicit: the taps past the signal are not read); DFT on the axis just before
 * the complex one only (each line contiguous). The rest stays on the host. */
#include <math.h>
#include <string.h>

#include "blis_conv.h" /* mi__blis_sgemm, the prep helpers */

typedef struct stft_state {
  int32_t x, y;
  int64_t lines, line_stride; /* DFT: lines of the input; STFT: frames of one signal */
  int64_t batch, batch_in, batch_out;
  int64_t taps, cols; /* GEMM k (input values read per line, x components) and n */
  int64_t step;       /* input floats between consecutive lines */
  const float *w;     /* [taps, cols], in aux */
} stft_state_t;

static int32_t run_stft(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const stft_state_t *st = s->state;
  const float *x = t[st->x];
  float *y = t[st->y];
  (void)err;
  for (int64_t b = 0; b < st->batch; b++)
    mi__blis_sgemm(env, st->lines, st->cols, st->taps, 1.f, x + b * st->batch_in, st->step, 1, st->w, st->cols, 1, 0.f,
                   y + b * st->batch_out, st->cols, 1);
  return MI_OK;
}

/* The [xc * len, 2 m] matrix of a length-n transform of len input values with xc components:
 * row (j, re) is (cos, sign sin) and row (j, im) (-sign sin, cos) of 2 pi j k / n per bin k,
 * times the window value of j and the inverse's 1/n. */
static void dft_matrix(float *w, int32_t xc, int64_t len, int64_t n, int64_t m, int inverse, const float *win) {
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
  for (int64_t j = 0; j < len; j++) {
    double f = scale * (win ? win[j] : 1.0);
    for (int64_t k = 0; k < m; k++) {
      double a = 2.0 * M_PI * (double)((j * k) % n) / (double)n, cr = cos(a) * f, ci = sign * sin(a) * f;
      float *re = w + (j * xc) * 2 * m + 2 * k;
      re[0] = (float)cr, re[1] = (float)ci;
      if (xc == 2) re[2 * m] = (float)-ci, re[2 * m + 1] = (float)cr;
    }
  }
}

/* A constant scalar integer input (absent: dflt); 0 when present but not constant. */
static int const_scalar(mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t i, int64_t dflt, int64_t *v) {
  *v = dflt;
  if (mi__blis_in(n, i) < 0) return 1;
  return mi__blis_const_ints(p, mi__blis_in(n, i), v, 1) == 1;
}

int32_t mi__blis_prep_stft(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  const mi_tensor_desc_t *win = NULL;
  int stft = !strcmp(n->op_type, "STFT");
  int inverse = !stft && mi_sdk_attr_int(n, "inverse", 0) != 0;
  int onesided = mi_sdk_attr_int(n, "onesided", stft ? 1 : 0) != 0;
  int64_t len, nfft, m, step, axis;
  stft_state_t *st;
  if (!x || !y || x->dtype != MI_DTYPE_FLOAT32 || y->dtype != MI_DTYPE_FLOAT32 || x->rank < 2)
    return mi__blis_unsupported(err, n, "input and output must be FLOAT32");
  int32_t r = x->rank, xc = (int32_t)x->dims[r - 1];
  if (xc != 1 && xc != 2) return mi__blis_unsupported(err, n, "the last dim must be 1 or 2");
  if (onesided && (inverse || xc == 2)) return mi__blis_unsupported(err, n, "onesided on a complex or inverse transform");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (stft) {
    if (r != 3) return mi__blis_unsupported(err, n, "signal must be [batch, length, 1 or 2]");
    if (mi__blis_in(n, 2) >= 0) {
      win = mi__blis_tensor(p, mi__blis_in(n, 2));
      if (!win || !win->data || win->dtype != MI_DTYPE_FLOAT32 || win->rank != 1)
        return mi__blis_unsupported(err, n, "the window must be a constant FLOAT32 vector");
    }
    if (!const_scalar(p, n, 1, 0, &step) || !const_scalar(p, n, 3, win ? win->dims[0] : 0, &nfft))
      return mi__blis_unsupported(err, n, "frame_step and frame_length must be constants");
    if (step < 1 || nfft < 1 || nfft > x->dims[1] || (win && win->dims[0] != nfft))
      return mi__blis_unsupported(err, n, "frame_step, frame_length or window out of range");
    len = nfft;
    m = onesided ? nfft / 2 + 1 : nfft;
    st->batch = x->dims[0];
    st->lines = (x->dims[1] - nfft) / step + 1;
    st->step = step * xc;
    st->batch_in = x->dims[1] * xc;
    st->batch_out = st->lines * m * 2;
  } else {
    if (n->opset >= 20) {
      if (!const_scalar(p, n, 2, -2, &axis)) return mi__blis_unsupported(err, n, "axis must be a constant");
    } else {
      axis = mi_sdk_attr_int(n, "axis", 1);
    }
    if (axis < 0) axis += r;
    if (axis != r - 2) return mi__blis_unsupported(err, n, "only the axis before the complex one");
    len = x->dims[r - 2];
    if (!const_scalar(p, n, 1, len, &nfft) || nfft < 1) return mi__blis_unsupported(err, n, "dft_length must be a constant >= 1");
    if (len > nfft) len = nfft; /* truncated: the line's first nfft values */
    m = onesided ? nfft / 2 + 1 : nfft;
    st->batch = 1;
    st->lines = mi_sdk_numel(x) / (x->dims[r - 2] * xc);
    st->step = x->dims[r - 2] * xc;
  }
  if (mi_sdk_numel(y) != st->batch * st->lines * m * 2) return mi__blis_unsupported(err, n, "output size");
  st->x = mi__blis_in(n, 0);
  st->y = mi__blis_out(n, 0);
  st->taps = len * xc;
  st->cols = 2 * m;
  float *w = mi__blis_alloc(p->ctx, (uint64_t)(st->taps * st->cols) * sizeof(float));
  if (!w) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  s->aux = w;
  dft_matrix(w, xc, len, nfft, m, inverse, win ? win->data : NULL);
  st->w = w;
  s->run = run_stft;
  return MI_OK;
}
