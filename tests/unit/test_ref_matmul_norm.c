/* test_ref_matmul_norm.c - reference MatMul, Gemm, Softmax (opset 11 vs 13), LayerNorm,
 * BatchNorm and the reductions (attribute vs input axes). */
#include "test_ref_common.h"

static float val(int64_t i, int seed) { return (float)(((i * 5 + seed * 3) % 11) - 5) / 4.0f; }

/* Runs a one-node graph whose inputs are all graph inputs; returns output 0. */
static mi_array_t *run_op(const char *op, int64_t opset, int32_t nin, mi_array_t **ins,
                          void (*setup)(mi_graph_t *, int32_t), int32_t *rc_out) {
  mi_graph_t *g = mi_graph_create("op");
  int32_t t[8], n;
  char name[16];
  g->opset = opset;
  for (int32_t i = 0; i < nin; i++) {
    snprintf(name, sizeof name, "in%d", (int)i);
    t[i] = tin(g, name, ins[i]->dtype, ins[i]->rank, ins[i]->dims);
  }
  mi_graph_add_output(g, node1(g, op, "the_node", nin, t, &n));
  if (setup) setup(g, n);
  mi_array_t *out = NULL;
  mi_error_t err;
  int32_t rc = run1(g, nin, ins, &out, &err);
  if (rc_out) *rc_out = rc;
  else
    CHECK(rc == MI_OK, "%s: %s", op, err.message);
  mi_graph_destroy(g);
  return out;
}

static void test_matmul(void) {
  /* [2,1,2,3] @ [3,3,2] -> [2,3,2,2]: batch dims broadcast to [2,3]. */
  int64_t da[4] = {2, 1, 2, 3}, db[3] = {3, 3, 2}, dy[4] = {2, 3, 2, 2};
  float a[12], b[18], want[24];
  for (int i = 0; i < 12; i++) a[i] = val(i, 1);
  for (int i = 0; i < 18; i++) b[i] = val(i, 2);
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 3; q++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          float s = 0;
          for (int k = 0; k < 3; k++) s += a[p * 6 + i * 3 + k] * b[q * 6 + k * 2 + j];
          want[((p * 3 + q) * 2 + i) * 2 + j] = s;
        }
  mi_array_t *ins[2] = {arr_f32(4, da, a), arr_f32(3, db, b)};
  mi_array_t *y = run_op("MatMul", 13, 2, ins, NULL, NULL);
  expect_f32("MatMul batched broadcast", y, 4, dy, want, 1e-6f);
  mi_array_destroy(y);
  mi_array_destroy(ins[0]);
  mi_array_destroy(ins[1]);

  /* 1-D rules: [3] @ [2,3,2] -> [2,2]; [2,3] @ [3] -> [2]. */
  int64_t d3 = 3, d2 = 2, d232[3] = {2, 3, 2}, d22[2] = {2, 2}, d23[2] = {2, 3};
  float v[3] = {1, -2, 0.5f}, w1[4], w2[2];
  for (int p = 0; p < 2; p++)
    for (int j = 0; j < 2; j++) {
      w1[p * 2 + j] = 0;
      for (int k = 0; k < 3; k++) w1[p * 2 + j] += v[k] * b[p * 6 + k * 2 + j];
    }
  for (int i = 0; i < 2; i++) w2[i] = a[i * 3] * v[0] + a[i * 3 + 1] * v[1] + a[i * 3 + 2] * v[2];
  mi_array_t *i1[2] = {arr_f32(1, &d3, v), arr_f32(3, d232, b)};
  y = run_op("MatMul", 13, 2, i1, NULL, NULL);
  expect_f32("MatMul 1-D left", y, 2, d22, w1, 1e-6f);
  mi_array_destroy(y);
  mi_array_t *i2[2] = {arr_f32(2, d23, a), arr_f32(1, &d3, v)};
  y = run_op("MatMul", 13, 2, i2, NULL, NULL);
  expect_f32("MatMul 1-D right", y, 1, &d2, w2, 1e-6f);
  mi_array_destroy(y);
  for (int i = 0; i < 2; i++) {
    mi_array_destroy(i1[i]);
    mi_array_destroy(i2[i]);
  }
}

static void gemm_setup(mi_graph_t *g, int32_t n) {
  mi_node_set_int(g, n, "transA", 1);
  mi_node_set_int(g, n, "transB", 1);
  mi_node_set_float(g, n, "alpha", 0.5f);
  mi_node_set_float(g, n, "beta", 2.0f);
}

static void test_gemm(void) {
  /* A is [K=3, M=2] (transA), B is [N=4, K=3] (transB), C is [4] broadcast over rows. */
  int64_t da[2] = {3, 2}, db[2] = {4, 3}, dc = 4, dy[2] = {2, 4};
  float a[6], b[12], cv[4] = {1, -1, 0.5f, 2}, want[8];
  for (int i = 0; i < 6; i++) a[i] = val(i, 3);
  for (int i = 0; i < 12; i++) b[i] = val(i, 4);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      float s = 0;
      for (int k = 0; k < 3; k++) s += a[k * 2 + i] * b[j * 3 + k];
      want[i * 4 + j] = 0.5f * s + 2.0f * cv[j];
    }
  mi_array_t *ins[3] = {arr_f32(2, da, a), arr_f32(2, db, b), arr_f32(1, &dc, cv)};
  mi_array_t *y = run_op("Gemm", 13, 3, ins, gemm_setup, NULL);
  expect_f32("Gemm transA/transB/alpha/beta", y, 2, dy, want, 1e-6f);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(ins[i]);
}

static void softmax_axis1(mi_graph_t *g, int32_t n) { mi_node_set_int(g, n, "axis", 1); }

/* Sum of y over the index set that should sum to one; the sets differ between opsets. */
static void test_softmax(void) {
  int64_t d[3] = {2, 3, 4};
  float x[24];
  for (int i = 0; i < 24; i++) x[i] = val(i, 5) * 3;
  mi_array_t *in = arr_f32(3, d, x);
  for (int opset = 11; opset <= 13; opset += 2) {
    mi_array_t *y = run_op("Softmax", opset, 1, &in, softmax_axis1, NULL);
    CHECK(same_shape(y, 3, d), "Softmax shape");
    if (!y) continue;
    const float *p = y->data;
    if (opset == 11) {
      /* Coerced to [2, 12]: each batch row of 12 sums to 1, and y ~ exp(x) within it. */
      for (int b = 0; b < 2; b++) {
        double s = 0;
        for (int i = 0; i < 12; i++) s += p[b * 12 + i];
        CHECK(fabs(s - 1.0) < 1e-5, "opset 11 row %d sums to %f", b, s);
        double r = p[b * 12 + 5] / p[b * 12 + 0], e = exp((double)x[b * 12 + 5] - x[b * 12]);
        CHECK(fabs(r - e) < 1e-4 * e, "opset 11 ratio %f vs %f", r, e);
      }
    } else {
      /* Along axis 1 only: for each (batch, column), the 3 values sum to 1. */
      for (int b = 0; b < 2; b++)
        for (int j = 0; j < 4; j++) {
          double s = 0;
          for (int i = 0; i < 3; i++) s += p[b * 12 + i * 4 + j];
          CHECK(fabs(s - 1.0) < 1e-5, "opset 13 (%d,%d) sums to %f", b, j, s);
        }
    }
    mi_array_destroy(y);
  }
  mi_array_destroy(in);
}

static void test_norms(void) {
  /* LayerNormalization over the last axis of [2,4], with scale and bias. */
  int64_t d[2] = {2, 4}, d4 = 4;
  float x[8] = {1, 2, 3, 4, -1, 0, 0, 5}, sc[4] = {1, 2, 0.5f, -1}, bi[4] = {0, 1, 0, 0.25f}, want[8];
  for (int r = 0; r < 2; r++) {
    float m = (x[r * 4] + x[r * 4 + 1] + x[r * 4 + 2] + x[r * 4 + 3]) / 4, v = 0;
    for (int i = 0; i < 4; i++) v += (x[r * 4 + i] - m) * (x[r * 4 + i] - m) / 4;
    for (int i = 0; i < 4; i++) want[r * 4 + i] = (x[r * 4 + i] - m) / sqrtf(v + 1e-5f) * sc[i] + bi[i];
  }
  mi_array_t *ins[5] = {arr_f32(2, d, x), arr_f32(1, &d4, sc), arr_f32(1, &d4, bi)};
  mi_array_t *y = run_op("LayerNormalization", 17, 3, ins, NULL, NULL);
  expect_f32("LayerNormalization", y, 2, d, want, 1e-5f);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(ins[i]);

  /* BatchNormalization on [1,2,2,2] with per-channel statistics. */
  int64_t dx[4] = {1, 2, 2, 2}, d2 = 2;
  float bx[8] = {1, 2, 3, 4, 5, 6, 7, 8}, s[2] = {2, 0.5f}, b[2] = {0, 1}, mean[2] = {2, 6},
        var[2] = {4, 1}, bw[8];
  for (int i = 0; i < 8; i++) {
    int ch = i / 4;
    bw[i] = s[ch] * (bx[i] - mean[ch]) / sqrtf(var[ch] + 1e-5f) + b[ch];
  }
  mi_array_t *bins[5] = {arr_f32(4, dx, bx), arr_f32(1, &d2, s), arr_f32(1, &d2, b),
                         arr_f32(1, &d2, mean), arr_f32(1, &d2, var)};
  y = run_op("BatchNormalization", 15, 5, bins, NULL, NULL);
  expect_f32("BatchNormalization", y, 4, dx, bw, 1e-5f);
  mi_array_destroy(y);
  for (int i = 0; i < 5; i++) mi_array_destroy(bins[i]);
}

static void axes_attr_1(mi_graph_t *g, int32_t n) {
  int64_t ax = -2;
  mi_node_set_ints(g, n, "axes", 1, &ax);
  mi_node_set_int(g, n, "keepdims", 0);
}
static void noop_empty(mi_graph_t *g, int32_t n) { mi_node_set_int(g, n, "noop_with_empty_axes", 1); }

static void test_reduce(void) {
  int64_t d[3] = {2, 3, 2}, dk[2] = {2, 2}, ax = -2, d1 = 1, dall[3] = {1, 1, 1};
  float x[12], mean_w[4], max_w[4], sum_all = 0;
  for (int i = 0; i < 12; i++) {
    x[i] = val(i, 6);
    sum_all += x[i];
  }
  for (int a = 0; a < 2; a++)
    for (int c = 0; c < 2; c++) {
      float s = 0, m = -1e30f;
      for (int b = 0; b < 3; b++) {
        s += x[a * 6 + b * 2 + c];
        m = fmaxf(m, x[a * 6 + b * 2 + c]);
      }
      mean_w[a * 2 + c] = s / 3;
      max_w[a * 2 + c] = m;
    }
  mi_array_t *in = arr_f32(3, d, x);
  /* opset 13: ReduceMean takes axes as an attribute ... */
  mi_array_t *y = run_op("ReduceMean", 13, 1, &in, axes_attr_1, NULL);
  expect_f32("ReduceMean axes attribute", y, 2, dk, mean_w, 1e-6f);
  mi_array_destroy(y);
  /* ... ReduceSum (opset 13) and ReduceMax (opset 18) take them as an input. */
  mi_array_t *ins[2] = {in, arr_i64(1, &d1, &ax)};
  y = run_op("ReduceMax", 18, 2, ins, NULL, NULL);
  int64_t dkeep[3] = {2, 1, 2};
  expect_f32("ReduceMax axes input, keepdims", y, 3, dkeep, max_w, 0);
  mi_array_destroy(y);
  /* No axes: reduce everything, unless noop_with_empty_axes. */
  y = run_op("ReduceSum", 13, 1, &in, NULL, NULL);
  expect_f32("ReduceSum all", y, 3, dall, &sum_all, 1e-5f);
  mi_array_destroy(y);
  y = run_op("ReduceSum", 13, 1, &in, noop_empty, NULL);
  expect_f32("ReduceSum noop", y, 3, d, x, 0);
  mi_array_destroy(y);
  mi_array_destroy(ins[1]);
  mi_array_destroy(in);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_matmul),
    TU_CASE(test_gemm),
    TU_CASE(test_softmax),
    TU_CASE(test_norms),
    TU_CASE(test_reduce),
};

TU_MAIN(NULL, NULL)
