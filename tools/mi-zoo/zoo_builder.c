/* zoo_builder.c - layer builders over the IR builder API: seeded weights, sticky errors. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "zoo_builder.h"

#define NAME_MAX_LEN 160

/* Uniform float in [lo, hi) from the builder's stream. */
static float uniform_in(mi__zb_t *b, float lo, float hi) {
  /* 24 bits: exactly representable in a float, so the value never rounds up to `hi`. */
  float u = (float)(mi_rng_next(&b->rng) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

int32_t mi__zb_fail(mi__zb_t *b, int32_t code, const char *fmt, ...) {
  char msg[MI_ERROR_MESSAGE_SIZE];
  va_list ap;
  if (b->status != MI_OK) return -1;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  b->status = code;
  mi_errorf(b->err, code, "%s", msg);
  return -1;
}

int64_t mi__zb_scale(double width, int64_t channels, int64_t div) {
  double want = (double)channels * width;
  int64_t c = (int64_t)(want / (double)div + 0.5) * div;
  if (c < div) c = div;
  /* Like MobileNet's make_divisible: never lose more than 10% to the rounding. */
  if ((double)c < 0.9 * want) c += div;
  return c;
}

int64_t mi__zb_out_size(int64_t in, int64_t k, int64_t s, int64_t p) {
  return (in + p - k) / s + 1;
}

/* Formats "<a><b>" into buf; a too-long name is a bug in a generator, not a user error. */
static const char *join(mi__zb_t *b, char *buf, const char *a, const char *suffix) {
  int n = snprintf(buf, NAME_MAX_LEN, "%s%s", a, suffix);
  if (n < 0 || n >= NAME_MAX_LEN) mi__zb_fail(b, MI_ERR_INTERNAL, "mi-zoo: name '%s' too long", a);
  return buf;
}

static int32_t check_index(mi__zb_t *b, int32_t t, const char *what) {
  if (t < 0) return mi__zb_fail(b, MI_ERR_OUT_OF_MEMORY, "mi-zoo: cannot add %s", what);
  return t;
}

int32_t mi__zb_input(mi__zb_t *b, const char *name, int32_t rank, const int64_t *dims) {
  int32_t t;
  if (b->status != MI_OK) return -1;
  t = check_index(b, mi_graph_add_tensor(b->g, name, MI_DTYPE_FLOAT32, rank, dims), name);
  if (t >= 0 && mi_graph_add_input(b->g, t) != MI_OK)
    return mi__zb_fail(b, MI_ERR_OUT_OF_MEMORY, "mi-zoo: cannot add input %s", name);
  return t;
}

int32_t mi__zb_output(mi__zb_t *b, int32_t t, int32_t rank, const int64_t *dims) {
  mi_tensor_t *ts;
  if (b->status != MI_OK) return -1;
  ts = &b->g->tensors[t];
  ts->dtype = MI_DTYPE_FLOAT32;
  ts->rank = rank;
  for (int32_t i = 0; i < rank; i++) ts->dims[i] = dims[i];
  if (mi_graph_add_output(b->g, t) != MI_OK)
    return mi__zb_fail(b, MI_ERR_OUT_OF_MEMORY, "mi-zoo: cannot add output %s", ts->name);
  return t;
}

int32_t mi__zb_rand(mi__zb_t *b, const char *name, int32_t rank, const int64_t *dims, float lo,
                    float hi) {
  int64_t n = 1;
  float *v;
  int32_t t;
  if (b->status != MI_OK) return -1;
  for (int32_t i = 0; i < rank; i++) n *= dims[i];
  v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) return mi__zb_fail(b, MI_ERR_OUT_OF_MEMORY, "mi-zoo: no memory for %s", name);
  for (int64_t i = 0; i < n; i++) v[i] = uniform_in(b, lo, hi);
  t = check_index(b, mi_graph_add_const_f32(b->g, name, rank, dims, v), name);
  free(v);
  return t;
}

int32_t mi__zb_scalar(mi__zb_t *b, const char *name, float v) {
  int64_t none[1] = {1};
  if (b->status != MI_OK) return -1;
  return check_index(b, mi_graph_add_const_f32(b->g, name, 0, none, &v), name);
}

int32_t mi__zb_i64(mi__zb_t *b, const char *name, int64_t count, const int64_t *v) {
  if (b->status != MI_OK) return -1;
  return check_index(b, mi_graph_add_const_i64(b->g, name, count, v), name);
}

int32_t mi__zb_op(mi__zb_t *b, const char *op, const char *name, int32_t n, const int32_t *in) {
  int32_t t, node;
  if (b->status != MI_OK) return -1;
  for (int32_t i = 0; i < n; i++)
    if (in[i] < 0) return mi__zb_fail(b, MI_ERR_INTERNAL, "mi-zoo: %s: missing input %d", name, i);
  t = check_index(b, mi_graph_add_tensor(b->g, name, MI_DTYPE_FLOAT32, -1, NULL), name);
  if (t < 0) return -1;
  node = mi_graph_add_node(b->g, op, name, n, in, 1, &t);
  if (node < 0) return mi__zb_fail(b, MI_ERR_OUT_OF_MEMORY, "mi-zoo: cannot add node %s", name);
  b->last_node = node;
  return t;
}

int32_t mi__zb_op1(mi__zb_t *b, const char *op, const char *name, int32_t x) {
  return mi__zb_op(b, op, name, 1, &x);
}

int32_t mi__zb_op2(mi__zb_t *b, const char *op, const char *name, int32_t x, int32_t y) {
  int32_t in[2] = {x, y};
  return mi__zb_op(b, op, name, 2, in);
}

static void attr_status(mi__zb_t *b, int32_t rc, const char *attr) {
  if (rc != MI_OK)
    mi__zb_fail(b, rc, "mi-zoo: cannot set attribute %s of %s", attr,
                b->g->nodes[b->last_node].name);
}

void mi__zb_attr_int(mi__zb_t *b, const char *attr, int64_t v) {
  if (b->status == MI_OK) attr_status(b, mi_node_set_int(b->g, b->last_node, attr, v), attr);
}

void mi__zb_attr_float(mi__zb_t *b, const char *attr, float v) {
  if (b->status == MI_OK) attr_status(b, mi_node_set_float(b->g, b->last_node, attr, v), attr);
}

void mi__zb_attr_ints(mi__zb_t *b, const char *attr, int32_t n, const int64_t *v) {
  if (b->status == MI_OK)
    attr_status(b, mi_node_set_ints(b->g, b->last_node, attr, n, v), attr);
}

int32_t mi__zb_conv(mi__zb_t *b, const char *name, int32_t x, int64_t cin, int64_t cout,
                    int64_t k, int64_t stride, int64_t group, int bias) {
  char buf[NAME_MAX_LEN];
  int64_t wd[4] = {cout, cin / group, k, k};
  int64_t bd[1] = {cout};
  int64_t ks[2] = {k, k}, st[2] = {stride, stride};
  int64_t p = (k - 1) / 2, pads[4] = {p, p, p, p};
  /* He-uniform: Var(w) = 2 / fan_in keeps the activation scale through ReLU-like layers. */
  float bound = sqrtf(6.0f / (float)(wd[1] * k * k));
  int32_t in[3];
  int32_t y;
  in[0] = x;
  in[1] = mi__zb_rand(b, join(b, buf, name, ".weight"), 4, wd, -bound, bound);
  in[2] = bias ? mi__zb_rand(b, join(b, buf, name, ".bias"), 1, bd, -0.1f, 0.1f) : -1;
  y = mi__zb_op(b, "Conv", name, bias ? 3 : 2, in);
  mi__zb_attr_ints(b, "kernel_shape", 2, ks);
  mi__zb_attr_ints(b, "strides", 2, st);
  mi__zb_attr_ints(b, "pads", 4, pads);
  if (group != 1) mi__zb_attr_int(b, "group", group);
  return y;
}

int32_t mi__zb_bn(mi__zb_t *b, const char *name, int32_t x, int64_t c, float glo, float ghi) {
  char buf[NAME_MAX_LEN];
  int64_t d[1] = {c};
  int32_t in[5];
  int32_t y;
  in[0] = x;
  in[1] = mi__zb_rand(b, join(b, buf, name, ".scale"), 1, d, glo, ghi);
  in[2] = mi__zb_rand(b, join(b, buf, name, ".bias"), 1, d, -0.2f, 0.2f);
  in[3] = mi__zb_rand(b, join(b, buf, name, ".mean"), 1, d, -0.2f, 0.2f);
  in[4] = mi__zb_rand(b, join(b, buf, name, ".var"), 1, d, 0.5f, 1.5f);
  y = mi__zb_op(b, "BatchNormalization", name, 5, in);
  mi__zb_attr_float(b, "epsilon", 1e-5f);
  return y;
}

int32_t mi__zb_act(mi__zb_t *b, const char *name, int32_t x, mi__zb_act_t act) {
  char buf[NAME_MAX_LEN];
  int32_t in[3];
  switch (act) {
  case MI__ZB_RELU: return mi__zb_op1(b, "Relu", name, x);
  case MI__ZB_HSWISH: return mi__zb_op1(b, "HardSwish", name, x);
  case MI__ZB_RELU6:
    /* Opset 13 Clip takes its bounds as scalar inputs, not attributes. */
    in[0] = x;
    in[1] = mi__zb_scalar(b, join(b, buf, name, ".min"), 0.0f);
    in[2] = mi__zb_scalar(b, join(b, buf, name, ".max"), 6.0f);
    return mi__zb_op(b, "Clip", name, 3, in);
  case MI__ZB_NONE: break;
  }
  return x;
}

int32_t mi__zb_conv_bn(mi__zb_t *b, const char *prefix, int32_t x, int64_t cin, int64_t cout,
                       int64_t k, int64_t stride, int64_t group, mi__zb_act_t act,
                       int small_gamma) {
  char buf[NAME_MAX_LEN];
  int32_t y = mi__zb_conv(b, join(b, buf, prefix, ".conv"), x, cin, cout, k, stride, group, 0);
  y = mi__zb_bn(b, join(b, buf, prefix, ".bn"), y, cout, small_gamma ? 0.1f : 0.7f,
                small_gamma ? 0.3f : 1.3f);
  return mi__zb_act(b, join(b, buf, prefix, ".act"), y, act);
}

int32_t mi__zb_gemm(mi__zb_t *b, const char *name, int32_t x, int64_t in, int64_t out,
                    float scale) {
  char buf[NAME_MAX_LEN];
  int64_t wd[2] = {out, in}, bd[1] = {out};
  float bound = scale * sqrtf(6.0f / (float)in);
  int32_t ins[3];
  int32_t y;
  ins[0] = x;
  ins[1] = mi__zb_rand(b, join(b, buf, name, ".weight"), 2, wd, -bound, bound);
  ins[2] = mi__zb_rand(b, join(b, buf, name, ".bias"), 1, bd, -0.1f, 0.1f);
  y = mi__zb_op(b, "Gemm", name, 3, ins);
  mi__zb_attr_int(b, "transB", 1);
  return y;
}

int32_t mi__zb_classifier(mi__zb_t *b, int32_t x, int64_t c, int64_t classes) {
  int64_t od[2] = {b->batch, classes};
  int32_t y = mi__zb_op1(b, "GlobalAveragePool", "head.pool", x);
  y = mi__zb_op1(b, "Flatten", "head.flatten", y);
  mi__zb_attr_int(b, "axis", 1);
  /* The last layer has no activation after it: Xavier-like scale keeps logits near 1. */
  y = mi__zb_gemm(b, "logits", y, c, classes, 0.7f);
  return mi__zb_output(b, y, 2, od);
}

void mi__zoo_spread(int32_t depth, int32_t stages, int32_t *per_stage) {
  for (int32_t s = 0; s < stages; s++) per_stage[s] = 0;
  for (int32_t i = 0; i < depth; i++) per_stage[i % stages]++;
}

int mi__zoo_check_stride(mi__zb_t *b, const mi__zoo_cfg_t *c, int64_t stride) {
  if (c->resolution >= stride) return 0;
  mi__zb_fail(b, MI_ERR_INVALID_ARGUMENT,
              "mi-zoo: %s: resolution %d is smaller than the total stride %lld of depth %d",
              c->family->name, (int)c->resolution, (long long)stride, (int)c->depth);
  return -1;
}
