/* test_outputs_check.c - mi_outputs_check, the check of a device's outputs against the
 * reference that tuning, compare and mi-run --check share: the error is relative to the
 * reference's range, a NaN anywhere is the worst error (not forgotten by a later value), and a
 * wrong dtype or size never passes. */
#include <math.h>
#include <string.h>

#include "metainfer/mi.h"
#include "test_util.h"

static mi_array_t *vec(const float *v, int64_t n) {
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, 1, &n);
  if (a) memcpy(a->data, v, (size_t)n * sizeof *v);
  return a;
}

static double check(const float *d, const float *r, int64_t n, int *ok) {
  mi_array_t *dev = vec(d, n), *ref = vec(r, n);
  double e = -1;
  REQUIRE(dev && ref);
  *ok = mi_outputs_check((const mi_array_t *const *)&dev, (const mi_array_t *const *)&ref, 1, &e);
  mi_array_destroy(dev);
  mi_array_destroy(ref);
  return e;
}

static void relative_l2(void) {
  const float ref[4] = {-2, 1, 4, 0.5f}, same[4] = {-2, 1, 4, 0.5f};
  const float near[4] = {-2, 1.1f, 4, 0.5f}, zero[4] = {0, 0, 0, 0};
  int ok = -1;
  double e = check(same, ref, 4, &ok);
  CHECK(e == 0 && ok == 1, "identical: %g ok %d", e, ok);
  e = check(near, ref, 4, &ok);
  CHECK(fabs(e - 0.1 / sqrt(21.25)) < 1e-6 && ok == 1, "0.1 off, ||ref|| = sqrt(21.25): %g ok %d",
        e, ok);
  e = check(zero, ref, 4, &ok);
  CHECK(e == 1 && ok == 0, "zero-filled: %g ok %d", e, ok);
  CHECK(MI_OUTPUT_TOLERANCE == 0.05, "the tuner's tolerance");
}

static void nan_is_worst(void) {
  const float ref[3] = {1, 2, 3};
  const float nan_first[3] = {NAN, 2, 3}, nan_last[3] = {1, 2, NAN};
  int ok = -1;
  double e = check(nan_first, ref, 3, &ok);
  CHECK(isinf(e) && ok == 0, "NaN then right values: %g ok %d", e, ok);
  e = check(nan_last, ref, 3, &ok);
  CHECK(isinf(e) && ok == 0, "NaN last: %g ok %d", e, ok);
}

static void shape_and_dtype(void) {
  const float v[4] = {1, 2, 3, 4};
  mi_array_t *dev = vec(v, 3), *ref = vec(v, 4), *i8;
  int64_t n = 4;
  double e = 0;
  REQUIRE(dev && ref);
  CHECK(mi_outputs_check((const mi_array_t *const *)&dev, (const mi_array_t *const *)&ref, 1, &e) == 0 &&
            isinf(e),
        "3 values against 4: %g", e);
  mi_array_destroy(dev);
  REQUIRE((i8 = mi_array_create(MI_DTYPE_INT8, 1, &n)) != NULL);
  CHECK(mi_outputs_check((const mi_array_t *const *)&i8, (const mi_array_t *const *)&ref, 1, &e) == 0 &&
            isinf(e),
        "INT8 against FP32: %g", e);
  mi_array_destroy(i8);
  mi_array_destroy(ref);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(relative_l2),
    TU_CASE(nan_is_worst),
    TU_CASE(shape_and_dtype),
};
TU_MAIN(NULL, NULL)
