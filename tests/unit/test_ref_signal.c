/* test_ref_signal.c - DFT (opset 17 and 20 forms, onesided, inverse, dft_length), STFT (with and
 * without a window), the Hann / Hamming / Blackman windows and MelWeightMatrix against values
 * worked out by hand; the inferred output shapes checked against the run and the refusals on
 * both paths (test_ref_common.h). */
#include "test_ref_common.h"

static const int64_t D141[3] = {1, 4, 1};
static const float X1234[4] = {1, 2, 3, 4};
/* the DFT of 1, 2, 3, 4: 10, -2 + 2i, -2, -2 - 2i */
static const float F1234[8] = {10, 0, -2, 2, -2, 0, -2, -2};

static mi_array_t *scalar_i64(int64_t v) { return arr_i64(0, NULL, &v); }

static void test_dft(void) {
  int64_t d4[3] = {1, 4, 2}, d3[3] = {1, 3, 2}, d2[3] = {1, 2, 2};
  mi_array_t *x = arr_f32(3, D141, X1234), *y = NULL, *z = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "DFT", 17, 1, &x, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DFT: %s", err.message);
  expect_f32("DFT-17 real", y, 3, d4, F1234, 1e-5f);
  /* the inverse of the complex result is the signal again, imaginary parts 0 */
  case_begin(&k, "DFT", 17, 1, &y, 0, 1);
  mi_node_set_int(k.g, k.node, "inverse", 1);
  CHECK(case_run(&k, &z, 0, &err) == MI_OK, "DFT inverse: %s", err.message);
  expect_f32("DFT-17 inverse", z, 3, d4, (float[]){1, 0, 2, 0, 3, 0, 4, 0}, 1e-5f);
  mi_array_destroy(z);
  mi_array_destroy(y);
  case_begin(&k, "DFT", 17, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "onesided", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DFT onesided: %s", err.message);
  expect_f32("DFT-17 onesided", y, 3, d3, F1234, 1e-5f);
  mi_array_destroy(y);
  /* opset 20: axis and dft_length as inputs; a length of 2 keeps 1, 2: 3 and -1 */
  mi_array_t *in[3] = {x, scalar_i64(2), scalar_i64(1)};
  case_begin(&k, "DFT", 20, 3, in, 6u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DFT-20: %s", err.message);
  expect_f32("DFT-20 dft_length 2", y, 3, d2, (float[]){3, 0, -1, 0}, 1e-5f);
  mi_array_destroy(y);
  mi_array_destroy(in[1]);
  in[1] = NULL; /* default axis -2: the same axis 1 of this rank-3 input */
  case_begin(&k, "DFT", 20, 1, in, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "DFT-20 default axis: %s", err.message);
  expect_f32("DFT-20 default axis", y, 3, d4, F1234, 1e-5f);
  mi_array_destroy(y);
  /* refused: the complex axis, onesided inverse, the op under opset 16 */
  case_begin(&k, "DFT", 17, 1, &x, 0, 1);
  mi_node_set_int(k.g, k.node, "axis", 2);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "signal axis") != NULL, "DFT axis 2: %s", err.message);
  case_begin(&k, "DFT", 16, 1, &x, 0, 1);
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(in[2]);
  mi_array_destroy(x);
}

static void test_stft(void) {
  int64_t ds[3] = {1, 6, 1}, dy[4] = {1, 2, 3, 2}, d1 = 4, dy1[4] = {1, 1, 3, 2};
  mi_array_t *in[4] = {arr_f32(3, ds, (float[]){1, 2, 3, 4, 5, 6}), scalar_i64(2), NULL, scalar_i64(4)}, *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  /* frames 1..4 and 3..6: the second is 18, -2 + 2i, -2 */
  case_begin(&k, "STFT", 17, 4, in, 10u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "STFT: %s", err.message);
  expect_f32("STFT", y, 4, dy, (float[]){10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0}, 1e-5f);
  mi_array_destroy(y);
  /* window 0, 1, 1, 0 (its length is the frame length) and a step past the second frame */
  mi_array_destroy(in[1]), mi_array_destroy(in[3]);
  in[1] = scalar_i64(3);
  in[2] = arr_f32(1, &d1, (float[]){0, 1, 1, 0});
  in[3] = NULL;
  case_begin(&k, "STFT", 17, 3, in, 6u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "STFT window: %s", err.message);
  expect_f32("STFT window", y, 4, dy1, (float[]){5, 0, -3, -2, 1, 0}, 1e-5f);
  mi_array_destroy(y);
  mi_array_destroy(in[2]);
  in[2] = NULL; /* neither window nor frame_length */
  case_begin(&k, "STFT", 17, 2, in, 2u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "frame_length"),
        "STFT without a frame length: %s", err.message);
  mi_array_destroy(in[0]), mi_array_destroy(in[1]);
  mi_array_destroy(in[2]);
}

static void window(const char *op, int64_t size, int periodic, const float *want) {
  mi_array_t *s = scalar_i64(size), *y = NULL;
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, op, 17, 1, &s, 1u, 1);
  mi_node_set_int(k.g, k.node, "periodic", periodic);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "%s: %s", op, err.message);
  expect_f32(op, y, 1, &size, want, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(s);
}

static void test_windows(void) {
  window("HannWindow", 4, 1, (float[]){0, 0.5f, 1, 0.5f});
  window("HannWindow", 5, 0, (float[]){0, 0.5f, 1, 0.5f, 0}); /* symmetric: N = size - 1 */
  window("HammingWindow", 4, 1, (float[]){4.0f / 46, 25.0f / 46, 1, 25.0f / 46});
  window("BlackmanWindow", 4, 1, (float[]){0, 0.34f, 1, 0.34f});
  mi_array_t *s = scalar_i64(4);
  mi_error_t err = {0};
  op_case_t k;
  case_begin(&k, "HannWindow", 17, 1, &s, 1u, 1);
  mi_node_set_int(k.g, k.node, "output_datatype", 7); /* int64 */
  case_refused(&k, MI_ERR_UNSUPPORTED, &err);
  mi_array_destroy(s);

  /* 2 mel bands over 8-point DFTs at 8 kHz, 0-4 kHz: points at 0, 537, 1073 and 1610 mel
   * (the range over 4, ONNX Runtime's step), 0, 427, 1114, 2220 Hz: bins 0, 0, 1, 2 */
  int64_t dm[2] = {5, 2}, one = 1;
  mi_array_t *in[5] = {scalar_i64(2), scalar_i64(8), scalar_i64(8000), arr_f32(0, NULL, (float[]){0}),
                       arr_f32(1, &one, (float[]){4000})},
             *y = NULL;
  case_begin(&k, "MelWeightMatrix", 17, 5, in, 31u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "MelWeightMatrix: %s", err.message);
  expect_f32("MelWeightMatrix", y, 2, dm, (float[]){1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 1e-6f);
  mi_array_destroy(y);
  for (int i = 0; i < 5; i++) mi_array_destroy(in[i]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_dft),
    TU_CASE(test_stft),
    TU_CASE(test_windows),
};

TU_MAIN(NULL, NULL)
