/* test_measure_check.c - the reference check's error (mi__check_error, profile.c): rounding on an
 * output near zero passes, a wrong output fails at any scale. */
#include <math.h>

#include "measure/measure_internal.h"
#include "test_util.h"

#define N 4096

/* The metric it replaced: max |out - ref| over max(max |ref|, 1e-6). */
static double old_error(const float *a, const float *b, int n) {
  double md = 0, mr = 0;
  for (int i = 0; i < n; i++) {
    md = fmax(md, fabs((double)a[i] - b[i]));
    mr = fmax(mr, fabs((double)b[i]));
  }
  return md / fmax(mr, 1e-6);
}

/* A detector's sigmoid map on random inputs: every value near 1e-5; the device's INT8 path moves
 * each logit by about one code, so every value by up to 30% of itself. The old metric failed
 * this (ppocr_v4_det, 9 of 19 configurations); the check must pass it. */
static void near_zero_rounding(void) {
  static float ref[N], out[N];
  for (int i = 0; i < N; i++) {
    ref[i] = (float)(1e-5 * (0.2 + 0.8 * (i % 97) / 96.0));
    out[i] = ref[i] * (float)(1.0 + 0.3 * ((i % 7) - 3) / 3.0);
  }
  CHECK(old_error(out, ref, N) > 0.05, "old metric %.3g: the case does not reproduce",
        old_error(out, ref, N));
  CHECK(mi__check_error(out, ref, N) < 0.05, "near-zero rounding: error %.3g",
        mi__check_error(out, ref, N));
}

/* A wrong kernel still fails: on an output of ordinary scale (a 10% relative error, or garbage),
 * and on a near-zero output whose values it blows up. */
static void wrong_fails(void) {
  static float ref[N], out[N];
  for (int i = 0; i < N; i++) {
    ref[i] = (float)sin(0.01 * i);
    out[i] = ref[i] * 1.1f;
  }
  CHECK(mi__check_error(out, ref, N) > 0.05, "10%% off: error %.3g", mi__check_error(out, ref, N));
  for (int i = 0; i < N; i++) out[i] = (float)cos(0.37 * i);
  CHECK(mi__check_error(out, ref, N) > 0.5, "garbage: error %.3g", mi__check_error(out, ref, N));
  for (int i = 0; i < N; i++) {
    ref[i] = 1e-5f;
    out[i] = (i % 3) ? 1e-5f : 0.5f;
  }
  CHECK(mi__check_error(out, ref, N) > 0.05, "near zero, blown up: error %.3g",
        mi__check_error(out, ref, N));
  out[5] = NAN;
  CHECK(isnan(mi__check_error(out, ref, N)), "NaN must not pass");
}

/* Rounding on an output of ordinary scale passes (FP16-like, 1e-3 relative). */
static void scale_rounding(void) {
  static float ref[N], out[N];
  for (int i = 0; i < N; i++) {
    ref[i] = (float)(100.0 * sin(0.01 * i));
    out[i] = ref[i] * (float)(1.0 + 1e-3 * ((i % 5) - 2));
  }
  CHECK(mi__check_error(out, ref, N) < 0.01, "fp16-like: error %.3g", mi__check_error(out, ref, N));
  CHECK(mi__check_error(ref, ref, N) == 0, "identical outputs");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(near_zero_rounding),
    TU_CASE(wrong_fails),
    TU_CASE(scale_rounding),
};

TU_MAIN(NULL, NULL)
