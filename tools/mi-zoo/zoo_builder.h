/* zoo_builder.h - internal helpers the zoo generators share: seeded weights and layer builders
 * with a sticky error, so a generator reads as a list of layers instead of a list of checks. */
#ifndef MI_ZOO_BUILDER_H
#define MI_ZOO_BUILDER_H

#include <stdint.h>

#include "zoo.h"

/** Builder state. After the first failure `status` is set and every helper returns -1 without
 * touching the graph, so a generator checks once at the end. */
typedef struct mi__zb {
  mi_graph_t *g;
  mi_rng_t rng; /* its state is set as it is, not through mi_rng_seed */
  int32_t status;
  mi_error_t *err;
  int32_t last_node; /* the node the attribute setters apply to */
  int64_t batch;
} mi__zb_t;

/** Activation kinds of the CNN helpers. */
typedef enum mi__zb_act {
  MI__ZB_NONE = 0,
  MI__ZB_RELU,
  MI__ZB_RELU6, /* Clip(0, 6) */
  MI__ZB_HSWISH /* HardSwish (opset 14) */
} mi__zb_act_t;

/** Resolved options: every default applied and validated. */
typedef struct mi__zoo_cfg {
  const mi_zoo_family_t *family;
  double width;
  int32_t depth;
  int32_t resolution;
  int32_t batch;
} mi__zoo_cfg_t;

/** Records a failure (the first one wins) and returns -1. */
int32_t mi__zb_fail(mi__zb_t *b, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Channels scaled by the width multiplier, rounded to a multiple of `div` (at least `div`). */
int64_t mi__zb_scale(double width, int64_t channels, int64_t div);

/** A float32 graph input with a static shape. */
int32_t mi__zb_input(mi__zb_t *b, const char *name, int32_t rank, const int64_t *dims);
/** Marks `t` as the graph output and gives it its static shape. */
int32_t mi__zb_output(mi__zb_t *b, int32_t t, int32_t rank, const int64_t *dims);
/** A float32 constant filled with uniform values in [lo, hi). */
int32_t mi__zb_rand(mi__zb_t *b, const char *name, int32_t rank, const int64_t *dims, float lo,
                    float hi);
/** A float32 scalar (rank 0) constant. */
int32_t mi__zb_scalar(mi__zb_t *b, const char *name, float v);
/** An int64 1-D constant. */
int32_t mi__zb_i64(mi__zb_t *b, const char *name, int64_t count, const int64_t *v);

/** Adds node `name` computing op(inputs) into a new float tensor also called `name`; returns
 * that tensor. The attribute setters below apply to this node. */
int32_t mi__zb_op(mi__zb_t *b, const char *op, const char *name, int32_t n, const int32_t *in);
int32_t mi__zb_op1(mi__zb_t *b, const char *op, const char *name, int32_t x);
int32_t mi__zb_op2(mi__zb_t *b, const char *op, const char *name, int32_t x, int32_t y);
void mi__zb_attr_int(mi__zb_t *b, const char *attr, int64_t v);
void mi__zb_attr_float(mi__zb_t *b, const char *attr, float v);
void mi__zb_attr_ints(mi__zb_t *b, const char *attr, int32_t n, const int64_t *v);

/** Conv `name` (weights He-scaled for the fan-in) with square kernel k, "same" padding for
 * odd k, and an optional bias. */
int32_t mi__zb_conv(mi__zb_t *b, const char *name, int32_t x, int64_t cin, int64_t cout,
                    int64_t k, int64_t stride, int64_t group, int bias);
/** BatchNormalization with non-trivial statistics; gamma drawn from [glo, ghi). */
int32_t mi__zb_bn(mi__zb_t *b, const char *name, int32_t x, int64_t c, float glo, float ghi);
/** An activation node `name` (x itself for MI__ZB_NONE). */
int32_t mi__zb_act(mi__zb_t *b, const char *name, int32_t x, mi__zb_act_t act);
/** "<prefix>.conv" + "<prefix>.bn" + "<prefix>.act": the common CNN unit. `small_gamma` draws
 * the BN gamma small, for the last unit of a residual branch so sums stay in range. */
int32_t mi__zb_conv_bn(mi__zb_t *b, const char *prefix, int32_t x, int64_t cin, int64_t cout,
                       int64_t k, int64_t stride, int64_t group, mi__zb_act_t act,
                       int small_gamma);
/** Gemm `name` computing x[B, in] * W[out, in]^T + bias. `scale` multiplies the He bound. */
int32_t mi__zb_gemm(mi__zb_t *b, const char *name, int32_t x, int64_t in, int64_t out,
                    float scale);
/** GlobalAveragePool + Flatten + Gemm into the output "logits" [batch, classes]. */
int32_t mi__zb_classifier(mi__zb_t *b, int32_t x, int64_t c, int64_t classes);

/** Output spatial size of a conv/pool with kernel k, stride s, total padding p. */
int64_t mi__zb_out_size(int64_t in, int64_t k, int64_t s, int64_t p);

/* The generators, one per family (zoo_mobilenet.c, zoo_cnn.c, zoo_dense.c). Each builds into
 * b->g from a resolved configuration; the caller checks b->status. */
void mi__zoo_mobilenetv2(mi__zb_t *b, const mi__zoo_cfg_t *c);
void mi__zoo_mobilenetv3(mi__zb_t *b, const mi__zoo_cfg_t *c);
void mi__zoo_resnet(mi__zb_t *b, const mi__zoo_cfg_t *c);
void mi__zoo_kws(mi__zb_t *b, const mi__zoo_cfg_t *c);
void mi__zoo_transformer(mi__zb_t *b, const mi__zoo_cfg_t *c);
void mi__zoo_mlp(mi__zb_t *b, const mi__zoo_cfg_t *c);

/** Spreads `depth` blocks over `stages` stages round-robin, first stages first; a stage that
 * gets 0 blocks is skipped. */
void mi__zoo_spread(int32_t depth, int32_t stages, int32_t *per_stage);
/** 0 when the input resolution is at least `stride`, the network's total downsampling at this
 * depth; else fails the builder saying so and returns -1. */
int mi__zoo_check_stride(mi__zb_t *b, const mi__zoo_cfg_t *c, int64_t stride);

#endif
