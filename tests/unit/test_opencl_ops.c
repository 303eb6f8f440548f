/* test_opencl_ops.c - element-wise (with broadcasting), activation, reduction, normalization,
 * pooling and copy ops of the OpenCL plugin against naive C loops. */
#include "test_opencl_common.h"

static float X[2 * 3 * 8 * 6], X2[2 * 3 * 8 * 6], Y[2 * 3 * 8 * 6], R[2 * 3 * 8 * 6];
static ocl_t o;

/* Runs k (inputs X, X2 in that order) and compares the output with R. */
static void run_check(kd_t *k, const char *what) {
  const float *ins[2] = {X, X2};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  double e;
  size_t n = (size_t)mi_sdk_numel(k->tp[k->outs[0]]);
  memset(Y, 0, sizeof Y);
  if (ocl_run(&o, kd_finish(k, NULL), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "%s: %s\n", what, err.message);
  REQUIRE(err.code == 0);
  e = tu_rel_l2(Y, R, n);
  fprintf(stderr, "%-20s rel L2 %.3g\n", what, e);
  REQUIRE(e < 1e-5);
}

static void binary_broadcast(void) {
  kd_t k;
  int64_t da[4] = {2, 3, 8, 6}, db[3] = {3, 1, 6};
  int in[2], i;
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 4, da, NULL);
  in[1] = kd_tensor(&k, 3, db, NULL);
  k.ins[k.nin++] = in[0];
  k.ins[k.nin++] = in[1];
  k.outs[k.nout++] = kd_tensor(&k, 4, da, NULL);
  kd_node(&k, "Sub", 2, in, k.outs[0]);
  for (i = 0; i < 2 * 3 * 8 * 6; i++) {
    int w = i % 6, c = (i / 48) % 3;
    R[i] = X[i] - X2[c * 6 + w];
  }
  run_check(&k, "Sub broadcast");
}

static void binary_fused_act(void) {
  kd_t k;
  int64_t da[2] = {8, 6}, db[4] = {2, 3, 8, 6};
  int in[2], t, i;
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 2, da, NULL); /* X broadcast against X2 */
  in[1] = kd_tensor(&k, 4, db, NULL);
  k.ins[k.nin++] = in[0];
  k.ins[k.nin++] = in[1];
  t = kd_tensor(&k, 4, db, NULL);
  kd_node(&k, "Mul", 2, in, t);
  k.outs[k.nout++] = kd_tensor(&k, 4, db, NULL);
  kd_node(&k, "Sigmoid", 1, &t, k.outs[0]);
  for (i = 0; i < 2 * 3 * 8 * 6; i++) R[i] = (float)(1.0 / (1.0 + exp(-(double)X[i % 48] * X2[i])));
  run_check(&k, "Mul+Sigmoid");
}

static double act_ref(const char *op, double v) {
  if (!strcmp(op, "Gelu")) return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
  if (!strcmp(op, "HardSwish")) return v * fmin(fmax(v / 6.0 + 0.5, 0.0), 1.0);
  if (!strcmp(op, "LeakyRelu")) return v >= 0 ? v : 0.01 * v;
  if (!strcmp(op, "Tanh")) return tanh(v);
  if (!strcmp(op, "HardSigmoid")) return fmin(fmax(0.2 * v + 0.5, 0.0), 1.0);
  return erf(v);
}

static void unary(const char *op) {
  kd_t k;
  int64_t d[2] = {6, 48};
  int x, i;
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 2, d, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 2, d, NULL);
  kd_node(&k, op, 1, &x, k.outs[0]);
  for (i = 0; i < 6 * 48; i++) R[i] = (float)act_ref(op, 3.0 * X[i]);
  for (i = 0; i < 6 * 48; i++) X2[i] = X[i], X[i] *= 3.0f;
  run_check(&k, op);
  for (i = 0; i < 6 * 48; i++) X[i] = X2[i];
  fill(X2, sizeof X2 / 4, 22);
}

static void softmax_layernorm(void) {
  kd_t k;
  int64_t d[3] = {3, 5, 4}, dn[1] = {4};
  static float g[4] = {1.0f, 0.5f, -2.0f, 1.5f}, b[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  int x, i, j, r, in[3];
  mi_node_desc_t *n;
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 3, d, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 3, d, NULL);
  n = kd_node(&k, "Softmax", 1, &x, k.outs[0]);
  kd_attr_int(&k, n, "axis", 1);
  for (r = 0; r < 3; r++)
    for (j = 0; j < 4; j++) {
      double m = -1e30, s = 0;
      for (i = 0; i < 5; i++) m = fmax(m, X[r * 20 + i * 4 + j]);
      for (i = 0; i < 5; i++) s += exp(X[r * 20 + i * 4 + j] - m);
      for (i = 0; i < 5; i++) R[r * 20 + i * 4 + j] = (float)(exp(X[r * 20 + i * 4 + j] - m) / s);
    }
  run_check(&k, "Softmax axis 1");
  memset(&k, 0, sizeof k);
  in[0] = x = kd_tensor(&k, 3, d, NULL);
  in[1] = kd_tensor(&k, 1, dn, g);
  in[2] = kd_tensor(&k, 1, dn, b);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 3, d, NULL);
  kd_node(&k, "LayerNormalization", 3, in, k.outs[0]);
  for (r = 0; r < 15; r++) {
    double m = 0, v = 0;
    for (j = 0; j < 4; j++) m += X[r * 4 + j] / 4.0;
    for (j = 0; j < 4; j++) v += (X[r * 4 + j] - m) * (X[r * 4 + j] - m) / 4.0;
    for (j = 0; j < 4; j++) R[r * 4 + j] = (float)((X[r * 4 + j] - m) / sqrt(v + 1e-5) * g[j] + b[j]);
  }
  run_check(&k, "LayerNormalization");
}

static void pools(int is_max) {
  kd_t k;
  int64_t dx[4] = {2, 3, 8, 6}, dy[4] = {2, 3, 4, 3};
  static int64_t ks[2] = {3, 3}, st[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
  int x, nc, oh, ow, kh, kw;
  mi_node_desc_t *n;
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 4, dx, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 4, dy, NULL);
  n = kd_node(&k, is_max ? "MaxPool" : "AveragePool", 1, &x, k.outs[0]);
  kd_attr_ints(&k, n, "kernel_shape", 2, ks);
  kd_attr_ints(&k, n, "strides", 2, st);
  kd_attr_ints(&k, n, "pads", 4, pads);
  for (nc = 0; nc < 6; nc++)
    for (oh = 0; oh < 4; oh++)
      for (ow = 0; ow < 3; ow++) {
        double acc = is_max ? -1e30 : 0;
        int cnt = 0;
        for (kh = 0; kh < 3; kh++)
          for (kw = 0; kw < 3; kw++) {
            int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
            if (ih < 0 || ih >= 8 || iw < 0 || iw >= 6) continue;
            acc = is_max ? fmax(acc, X[nc * 48 + ih * 6 + iw]) : acc + X[nc * 48 + ih * 6 + iw];
            cnt++;
          }
        R[nc * 12 + oh * 3 + ow] = (float)(is_max ? acc : acc / cnt);
      }
  run_check(&k, is_max ? "MaxPool 3x3 s2 p1" : "AveragePool 3x3 s2 p1");
}

/* The output (dims dy) and a Concat along axis 1 of the nin tensors `in` into it. */
static void concat_axis1(kd_t *k, int nin, const int *in, const int64_t *dy) {
  k->outs[k->nout++] = kd_tensor(k, 4, dy, NULL);
  kd_attr_int(k, kd_node(k, "Concat", nin, in, k->outs[0]), "axis", 1);
}

static void reduce_and_copies(void) {
  kd_t k;
  int64_t dx[4] = {2, 3, 8, 6}, dy[4] = {2, 1, 8, 6}, dg[4] = {2, 3, 1, 1}, dt[4] = {2, 8, 6, 3};
  static int64_t axes[1] = {1}, perm[4] = {0, 2, 3, 1};
  int x, i, c, in[2];
  mi_node_desc_t *n;
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 4, dx, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 4, dy, NULL);
  n = kd_node(&k, "ReduceMean", 1, &x, k.outs[0]);
  kd_attr_ints(&k, n, "axes", 1, axes);
  n->opset = 13;
  for (i = 0; i < 2 * 48; i++) {
    int b = i / 48, hw = i % 48;
    R[i] = (X[b * 144 + hw] + X[b * 144 + 48 + hw] + X[b * 144 + 96 + hw]) / 3.0f;
  }
  run_check(&k, "ReduceMean axis 1");
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 4, dx, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 4, dg, NULL);
  kd_node(&k, "GlobalAveragePool", 1, &x, k.outs[0]);
  for (c = 0; c < 6; c++) {
    double s = 0;
    for (i = 0; i < 48; i++) s += X[c * 48 + i];
    R[c] = (float)(s / 48);
  }
  run_check(&k, "GlobalAveragePool");
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 4, dx, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 4, dt, NULL);
  n = kd_node(&k, "Transpose", 1, &x, k.outs[0]);
  kd_attr_ints(&k, n, "perm", 4, perm);
  for (i = 0; i < 288; i++) {
    int b = i / 144, h = (i / 18) % 8, w = (i / 3) % 6;
    c = i % 3;
    R[i] = X[((b * 3 + c) * 8 + h) * 6 + w];
  }
  run_check(&k, "Transpose 0,2,3,1");
  memset(&k, 0, sizeof k);
  dy[1] = 2;
  in[0] = kd_tensor(&k, 4, dy, NULL);
  dg[1] = 1, dg[2] = 8, dg[3] = 6;
  in[1] = kd_tensor(&k, 4, dg, NULL);
  k.ins[k.nin++] = in[0];
  k.ins[k.nin++] = in[1];
  concat_axis1(&k, 2, in, dx);
  for (i = 0; i < 288; i++) {
    int b = i / 144, cc = (i / 48) % 3, hw = i % 48;
    R[i] = cc < 2 ? X[b * 96 + cc * 48 + hw] : X2[b * 48 + hw];
  }
  run_check(&k, "Concat axis 1");
}

/* One image, Concat along channels: each input is one block of the output, copied as a buffer
 * at its offset (a runtime input after a constant, so the offsets differ per input); and a Slice
 * of whole channels, a block at an offset of its input. */
static void concat_blocks(void) {
  static float C[8 * 6];
  kd_t k;
  int64_t da[4] = {1, 2, 8, 6}, dc[4] = {1, 1, 8, 6}, db[4] = {1, 3, 8, 6}, dy[4] = {1, 6, 8, 6};
  int64_t ds[4] = {1, 2, 8, 6}, st[1] = {1}, en[1] = {3}, ax[1] = {1};
  int in[3], i;
  mi_node_desc_t *n;
  fill(C, sizeof C / 4, 23);
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 4, da, NULL);
  in[1] = kd_tensor(&k, 4, dc, C);
  in[2] = kd_tensor(&k, 4, db, NULL);
  k.ins[k.nin++] = in[0];
  k.ins[k.nin++] = in[2];
  concat_axis1(&k, 3, in, dy);
  for (i = 0; i < 6 * 48; i++) R[i] = i < 96 ? X[i] : i < 144 ? C[i - 96]
                                                              : X2[i - 144];
  run_check(&k, "Concat one image");
  /* Slice channels 1..2 of a 1x3x8x6 input (starts, ends and axes as attributes) */
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 4, db, NULL);
  k.ins[k.nin++] = in[0];
  k.outs[k.nout++] = kd_tensor(&k, 4, ds, NULL);
  n = kd_node(&k, "Slice", 1, in, k.outs[0]);
  kd_attr_ints(&k, n, "starts", 1, st);
  kd_attr_ints(&k, n, "ends", 1, en);
  kd_attr_ints(&k, n, "axes", 1, ax);
  for (i = 0; i < 96; i++) R[i] = X[48 + i];
  run_check(&k, "Slice whole channels");
}

static void setup(void) {
  memset(&o, 0, sizeof o);
  ocl_env(&o);
  ocl_open_or_skip(&o);
  fill(X, sizeof X / 4, 21);
  fill(X2, sizeof X2 / 4, 22);
}

static void teardown(void) {
  ocl_close(&o);
  ocl_rm_cache(&o);
}

/* A prepared one-node kernel of `op` on 64 floats. */
static mi_kernel_t *prep1(const char *op) {
  kd_t k;
  int64_t d[1] = {64};
  int x;
  mi_kernel_t *kern = NULL;
  mi_error_t err = {0, ""};
  memset(&k, 0, sizeof k);
  x = kd_tensor(&k, 1, d, NULL);
  k.ins[k.nin++] = x;
  k.outs[k.nout++] = kd_tensor(&k, 1, d, NULL);
  kd_node(&k, op, 1, &x, k.outs[0]);
  CHECK(o.api->kernel_prepare(o.ctx, 0, kd_finish(&k, NULL), &kern, &err) == MI_OK && kern,
        "prepare %s: %s", op, err.message);
  return kern;
}

/* ABI 1.3: launches left on the in-order queue, each kernel reading the one before, waited for
 * by one device_sync that sums their events' times; the same kernel enqueued twice in a row
 * (Neg) with new arguments. */
static void enqueued_chain(void) {
  enum { N = 64 };
  mi_kernel_t *kneg = prep1("Neg"), *krelu = prep1("Relu");
  mi_buffer_t *b[4] = {0};
  mi_error_t err = {0, ""};
  mi_run_stats_t st;
  float v[N], got[N];
  int32_t rc = kneg && krelu && o.api->kernel_enqueue && o.api->device_sync ? MI_OK : MI_ERR_INTERNAL;
  CHECK(rc == MI_OK, "no kernels, or no asynchronous pair in the table");
  for (int i = 0; i < 4 && rc == MI_OK; i++) rc = o.api->buffer_alloc(o.ctx, 0, sizeof v, &b[i], &err);
  for (int i = 0; i < N; i++) v[i] = (float)((i * 7) % 23) - 11.f;
  if (rc == MI_OK) rc = o.api->buffer_write(o.ctx, b[0], 0, v, sizeof v, &err);
  for (int pass = 0; pass < 2 && rc == MI_OK; pass++) {
    /* pass 0: Relu, Neg -> -max(v, 0); pass 1: Neg, Relu, Neg -> min(v, 0) */
    mi_kernel_t *seq[3] = {pass ? kneg : krelu, pass ? krelu : kneg, kneg};
    int n = pass ? 3 : 2, bad = 0;
    for (int j = 0; j < n && rc == MI_OK; j++)
      rc = o.api->kernel_enqueue(o.ctx, seq[j], &b[j], 1, &b[j + 1], 1, &err);
    CHECK(rc == MI_OK, "pass %d: enqueue: %s", pass, err.message);
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (rc == MI_OK) rc = o.api->device_sync(o.ctx, 0, &st, &err);
    CHECK(rc == MI_OK && st.has_device_time && st.device_time_ns > 0,
          "pass %d: device_sync: %s (timed %d, %llu ns)", pass, err.message,
          (int)st.has_device_time, (unsigned long long)st.device_time_ns);
    if (rc == MI_OK) rc = o.api->buffer_read(o.ctx, b[n], 0, got, sizeof got, &err);
    for (int i = 0; rc == MI_OK && i < N; i++)
      bad += got[i] != (pass ? (v[i] < 0.f ? v[i] : 0.f) : -(v[i] > 0.f ? v[i] : 0.f));
    CHECK(rc == MI_OK && bad == 0, "pass %d: %d of %d outputs wrong (%s)", pass, bad, N,
          err.message);
  }
  for (int i = 0; i < 4; i++) o.api->buffer_free(o.ctx, b[i]);
  o.api->kernel_release(o.ctx, kneg);
  o.api->kernel_release(o.ctx, krelu);
}

static void unary_ops(void) {
  unary("Gelu");
  unary("HardSwish");
  unary("LeakyRelu");
  unary("Tanh");
  unary("HardSigmoid");
  unary("Erf");
}

static void pools_both(void) {
  pools(1);
  pools(0);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(binary_broadcast),
    TU_CASE(binary_fused_act),
    TU_CASE(unary_ops),
    TU_CASE(softmax_layernorm),
    TU_CASE(pools_both),
    TU_CASE(reduce_and_copies),
    TU_CASE(concat_blocks),
    TU_CASE(enqueued_chain),
};

TU_MAIN(setup, teardown)
