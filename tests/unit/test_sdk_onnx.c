/* test_sdk_onnx.c - the SDK helper library's ONNX semantics (broadcast, Resize coordinates and
 * rounding, Pad sources, window pads and sizes) against values worked out from the ONNX spec. */
#include "test_util.h"

#include "metainfer/mi_sdk.h"

static void test_broadcast(void) {
  int64_t a[4] = {2, 1, 4, 1}, b[2] = {1, 5}, c[2] = {3, 1}, out[MI_MAX_RANK] = {0};
  int32_t r = 0;
  /* aligned from the last dim: 2x1x4x1 with 1x5 is 2x1x4x5 */
  CHECK(mi_sdk_broadcast_shape(4, a, 2, b, &r, out) == MI_OK, "2x1x4x1 with 1x5");
  CHECK(r == 4 && out[0] == 2 && out[1] == 1 && out[2] == 4 && out[3] == 5,
        "got rank %d [%lld %lld %lld %lld]", (int)r, (long long)out[0], (long long)out[1],
        (long long)out[2], (long long)out[3]);
  CHECK(mi_sdk_broadcast_shape(2, b, 4, a, &r, out) == MI_OK && r == 4 && out[3] == 5 &&
            out[2] == 4,
        "symmetric");
  /* 4 against 3 in the second-to-last dim */
  CHECK(mi_sdk_broadcast_shape(4, a, 2, c, &r, out) == MI_ERR_INVALID_ARGUMENT,
        "2x1x4x1 with 3x1 is refused");
  CHECK(mi_sdk_broadcast_shape(0, a, 0, b, &r, out) == MI_OK && r == 0, "two scalars");
  CHECK(mi_sdk_broadcast_shape(9, a, 1, b, &r, out) == MI_ERR_INVALID_ARGUMENT, "rank above 8");
}

static void test_resize(void) {
  int64_t i0, i1;
  float w;
  CHECK(mi_sdk_resize_ct_from_name("align_corners") == MI_SDK_CT_ALIGN_CORNERS, "names");
  CHECK(mi_sdk_resize_ct_from_name("half_pixel_symmetric") == MI_SDK_CT_HALF_PIXEL_SYMMETRIC,
        "opset 19 name");
  CHECK(mi_sdk_resize_ct_from_name("crop_and_resize") == -1, "unknown mode");
  CHECK(mi_sdk_resize_nearest_from_name("ceil") == MI_SDK_NEAREST_CEIL, "nearest names");
  CHECK(mi_sdk_resize_nearest_from_name(NULL) == -1, "NULL name");
  /* half_pixel, 2 -> 4: x = (j + 0.5) / 2 - 0.5 */
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_HALF_PIXEL, 0.0f, 2.0f, 2, 4) == -0.25f, "half_pixel j=0");
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_HALF_PIXEL, 3.0f, 2.0f, 2, 4) == 1.25f, "half_pixel j=3");
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_ALIGN_CORNERS, 3.0f, 2.0f, 2, 4) == 1.0f, "align j=3");
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_ALIGN_CORNERS, 0.0f, 0.5f, 2, 1) == 0.0f, "align out 1");
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_PYTORCH_HALF_PIXEL, 0.0f, 0.5f, 2, 1) == 0.0f,
        "pytorch_half_pixel with one output");
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_ASYMMETRIC, 3.0f, 2.0f, 2, 4) == 1.5f, "asymmetric");
  CHECK(mi_sdk_resize_coord(MI_SDK_CT_TF_HALF_PIXEL_FOR_NN, 1.0f, 1.0f, 4, 4) == 1.5f,
        "tf_half_pixel_for_nn shifts an identity axis by half a pixel");
  /* ties: round_prefer_floor takes the floor, round_prefer_ceil the ceiling */
  CHECK(mi_sdk_resize_nearest_index(MI_SDK_NEAREST_ROUND_PREFER_FLOOR, 1.5f, 2.0f) == 1, "tie floor");
  CHECK(mi_sdk_resize_nearest_index(MI_SDK_NEAREST_ROUND_PREFER_CEIL, 1.5f, 2.0f) == 2, "tie ceil");
  CHECK(mi_sdk_resize_nearest_index(MI_SDK_NEAREST_ROUND_PREFER_FLOOR, 1.6f, 2.0f) == 2, "no tie");
  CHECK(mi_sdk_resize_nearest_index(MI_SDK_NEAREST_SIMPLE, 1.5f, 2.0f) == 1, "simple upsamples by floor");
  CHECK(mi_sdk_resize_nearest_index(MI_SDK_NEAREST_SIMPLE, 1.5f, 0.5f) == 2, "simple downsamples by ceil");
  /* linear, half_pixel, 2 -> 4: position 1 is x = 0.25 (inputs 0 and 1, weight 0.25); position
   * 0 is clamped to input 0 */
  mi_sdk_resize_tap(1, MI_SDK_CT_HALF_PIXEL, 0, 2.0f, 2, 4, 1, &i0, &i1, &w);
  CHECK(i0 == 0 && i1 == 1 && w == 0.25f, "linear j=1: %lld %lld %g", (long long)i0, (long long)i1,
        (double)w);
  mi_sdk_resize_tap(1, MI_SDK_CT_HALF_PIXEL, 0, 2.0f, 2, 4, 0, &i0, &i1, &w);
  CHECK(i0 == 0 && i1 == 1 && w == 0.0f, "linear j=0 clamps");
  mi_sdk_resize_tap(1, MI_SDK_CT_HALF_PIXEL, 0, 2.0f, 2, 4, 3, &i0, &i1, &w);
  CHECK(i0 == 1 && i1 == 1 && w == 0.0f, "linear j=3 clamps to the last input");
  mi_sdk_resize_tap(0, MI_SDK_CT_ASYMMETRIC, MI_SDK_NEAREST_CEIL, 2.0f, 2, 4, 3, &i0, &i1, &w);
  CHECK(i0 == 1 && i1 == 1 && w == 0.0f, "nearest ceil of 1.5 clamps to input 1, got %lld",
        (long long)i0);
}

static void test_pad(void) {
  CHECK(mi_sdk_pad_mode_from_name("reflect") == MI_SDK_PAD_REFLECT, "reflect");
  CHECK(mi_sdk_pad_mode_from_name(NULL) == MI_SDK_PAD_CONSTANT, "default constant");
  CHECK(mi_sdk_pad_mode_from_name("wrap") == -1, "wrap is not offered");
  /* n = 3, two leading pads: constant -1 -1 0 1 2, edge 0 0 0 1 2, reflect 2 1 0 1 2 */
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_CONSTANT, 0, 2, 3) == -1, "constant");
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_CONSTANT, 2, 2, 3) == 0, "inside");
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_EDGE, 0, 2, 3) == 0, "edge before");
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_EDGE, 6, 2, 3) == 2, "edge after");
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_REFLECT, 0, 2, 3) == 2, "reflect before: %lld",
        (long long)mi_sdk_pad_source(MI_SDK_PAD_REFLECT, 0, 2, 3));
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_REFLECT, 1, 2, 3) == 1, "reflect before");
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_REFLECT, 5, 2, 3) == 1, "reflect after");
  /* a pad wider than the axis folds again: n = 2, 3 leading pads -> 1 0 1 | 0 1 */
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_REFLECT, 0, 3, 2) == 1, "reflect folds twice");
  CHECK(mi_sdk_pad_source(MI_SDK_PAD_REFLECT, 1, 3, 2) == 0, "reflect folds");
}

static void test_window(void) {
  int64_t b = -1, e = -1;
  CHECK(mi_sdk_auto_pad_from_name("SAME_LOWER") == MI_SDK_AUTO_PAD_SAME_LOWER, "names");
  CHECK(mi_sdk_auto_pad_from_name(NULL) == MI_SDK_AUTO_PAD_NOTSET, "default NOTSET");
  CHECK(mi_sdk_auto_pad_from_name("same_upper") == -1, "names are upper case");
  mi_sdk_same_pads(MI_SDK_AUTO_PAD_SAME_UPPER, 3, &b, &e);
  CHECK(b == 1 && e == 2, "SAME_UPPER puts the odd pad at the end");
  mi_sdk_same_pads(MI_SDK_AUTO_PAD_SAME_LOWER, 3, &b, &e);
  CHECK(b == 2 && e == 1, "SAME_LOWER at the beginning");
  mi_sdk_same_pads(MI_SDK_AUTO_PAD_SAME_UPPER, -2, &b, &e);
  CHECK(b == 0 && e == 0, "negative total is no pad");
  /* 224, k 7, stride 2, pads 3+3: 112 */
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 224, 7, 2, 1, 3, 3, 0) == 112, "resnet stem");
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_SAME_UPPER, 7, 3, 2, 1, 0, 0, 0) == 4, "SAME: ceil(7/2)");
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_VALID, 7, 3, 2, 1, 9, 9, 0) == 3, "VALID ignores pads");
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 5, 3, 1, 2, 0, 0, 0) == 1, "dilation 2: span 5");
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 4, 5, 1, 1, 0, 0, 0) == 0, "window too wide");
  /* ceil_mode: 6, k 2, stride 2, pad end 1 -> floor 3, ceil 4 would start in the end pad: 3 */
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 6, 2, 2, 1, 0, 1, 1) == 3,
        "a window starting in the end pad is dropped, got %lld",
        (long long)mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 6, 2, 2, 1, 0, 1, 1));
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 5, 2, 2, 1, 0, 0, 1) == 3, "ceil_mode rounds up");
  CHECK(mi_sdk_window_out(MI_SDK_AUTO_PAD_NOTSET, 5, 2, 2, 1, 0, 0, 0) == 2, "floor by default");
}

static void all_sdk_onnx(void) {
  test_broadcast();
  test_resize();
  test_pad();
  test_window();
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_sdk_onnx),
};

TU_MAIN(NULL, NULL)
