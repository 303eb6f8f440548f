/* zoo_dense.c - transformer encoder and MLP generators (MatMul/Gemm-based families). */
#include <math.h>
#include <stdio.h>

#include "zoo_builder.h"

#define TF_HEADS 4

/* MatMul by a [in, out] weight then Add a bias, like an exported torch.nn.Linear on 3-D input.
 * `bound` is the uniform weight bound. */
static int32_t linear(mi__zb_t *b, const char *name, int32_t x, int64_t in, int64_t out,
                      float bound) {
  char n[96];
  int64_t wd[2] = {in, out}, bd[1] = {out};
  int32_t w, bias, y;
  snprintf(n, sizeof n, "%s.weight", name);
  w = mi__zb_rand(b, n, 2, wd, -bound, bound);
  snprintf(n, sizeof n, "%s.bias", name);
  bias = mi__zb_rand(b, n, 1, bd, -0.1f, 0.1f);
  snprintf(n, sizeof n, "%s.matmul", name);
  y = mi__zb_op2(b, "MatMul", n, x, w);
  return mi__zb_op2(b, "Add", name, y, bias);
}

static int32_t layer_norm(mi__zb_t *b, const char *name, int32_t x, int64_t d) {
  char n[96];
  int64_t dd[1] = {d};
  int32_t in[3];
  in[0] = x;
  snprintf(n, sizeof n, "%s.scale", name);
  in[1] = mi__zb_rand(b, n, 1, dd, 0.8f, 1.2f);
  snprintf(n, sizeof n, "%s.bias", name);
  in[2] = mi__zb_rand(b, n, 1, dd, -0.1f, 0.1f);
  in[0] = mi__zb_op(b, "LayerNormalization", name, 3, in);
  mi__zb_attr_int(b, "axis", -1);
  mi__zb_attr_float(b, "epsilon", 1e-5f);
  return in[0];
}

/* Projects h to one of q/k/v and splits it into heads: [B, T, D] -> [B, H, T, dh], or
 * [B, H, dh, T] for the keys so that Q x K needs no further transpose. */
static int32_t head_proj(mi__zb_t *b, const char *layer, const char *what, int32_t h, int64_t d,
                         int32_t split_shape, const int64_t *perm) {
  char n[96], base[64];
  int32_t y;
  snprintf(base, sizeof base, "%s.attn.%s", layer, what);
  y = linear(b, base, h, d, d, sqrtf(3.0f / (float)d));
  snprintf(n, sizeof n, "%s.split", base);
  y = mi__zb_op2(b, "Reshape", n, y, split_shape);
  snprintf(n, sizeof n, "%s.heads", base);
  y = mi__zb_op1(b, "Transpose", n, y);
  mi__zb_attr_ints(b, "perm", 4, perm);
  return y;
}

void mi__zoo_transformer(mi__zb_t *b, const mi__zoo_cfg_t *c) {
  int64_t d = mi__zb_scale(c->width, 64, 4 * TF_HEADS), dh = d / TF_HEADS, ff = 2 * d;
  int64_t t = c->resolution;
  int64_t in_dims[3] = {c->batch, t, d}, od[2] = {c->batch, c->family->classes};
  int64_t split[4] = {c->batch, t, TF_HEADS, dh}, merge[3] = {c->batch, t, d}, axes[1] = {1};
  int64_t p_bhtd[4] = {0, 2, 1, 3}, p_bhdt[4] = {0, 2, 3, 1};
  int32_t x, split_shape, merge_shape, scale, reduce_axes;
  char n[96], layer[32];
  x = mi__zb_input(b, c->family->input_name, 3, in_dims);
  split_shape = mi__zb_i64(b, "attn.split_shape", 4, split);
  merge_shape = mi__zb_i64(b, "attn.merge_shape", 3, merge);
  scale = mi__zb_scalar(b, "attn.scale", 1.0f / sqrtf((float)dh));
  for (int32_t l = 0; l < c->depth; l++) {
    int32_t h, q, k, v, s, o;
    snprintf(layer, sizeof layer, "layer%d", (int)l);
    snprintf(n, sizeof n, "%s.ln1", layer);
    h = layer_norm(b, n, x, d);
    q = head_proj(b, layer, "q", h, d, split_shape, p_bhtd);
    k = head_proj(b, layer, "k", h, d, split_shape, p_bhdt);
    v = head_proj(b, layer, "v", h, d, split_shape, p_bhtd);
    snprintf(n, sizeof n, "%s.attn.scores", layer);
    s = mi__zb_op2(b, "MatMul", n, q, k);
    snprintf(n, sizeof n, "%s.attn.scaled", layer);
    s = mi__zb_op2(b, "Mul", n, s, scale);
    snprintf(n, sizeof n, "%s.attn.softmax", layer);
    s = mi__zb_op1(b, "Softmax", n, s);
    mi__zb_attr_int(b, "axis", -1);
    snprintf(n, sizeof n, "%s.attn.context", layer);
    o = mi__zb_op2(b, "MatMul", n, s, v);
    snprintf(n, sizeof n, "%s.attn.context.t", layer);
    o = mi__zb_op1(b, "Transpose", n, o);
    mi__zb_attr_ints(b, "perm", 4, p_bhtd);
    snprintf(n, sizeof n, "%s.attn.merge", layer);
    o = mi__zb_op2(b, "Reshape", n, o, merge_shape);
    /* Residual branches end scaled down so the stream grows slowly with depth. */
    snprintf(n, sizeof n, "%s.attn.out", layer);
    o = linear(b, n, o, d, d, 0.5f * sqrtf(3.0f / (float)d));
    snprintf(n, sizeof n, "%s.residual1", layer);
    x = mi__zb_op2(b, "Add", n, x, o);
    snprintf(n, sizeof n, "%s.ln2", layer);
    h = layer_norm(b, n, x, d);
    snprintf(n, sizeof n, "%s.mlp.fc1", layer);
    h = linear(b, n, h, d, ff, sqrtf(6.0f / (float)d));
    snprintf(n, sizeof n, "%s.mlp.gelu", layer);
    h = mi__zb_op1(b, "Gelu", n, h);
    snprintf(n, sizeof n, "%s.mlp.fc2", layer);
    h = linear(b, n, h, ff, d, 0.5f * sqrtf(3.0f / (float)ff));
    snprintf(n, sizeof n, "%s.residual2", layer);
    x = mi__zb_op2(b, "Add", n, x, h);
  }
  x = layer_norm(b, "final.ln", x, d);
  /* Opset 18 moved ReduceMean's axes from an attribute to an input. */
  reduce_axes = mi__zb_i64(b, "pool.axes", 1, axes);
  x = mi__zb_op2(b, "ReduceMean", "pool", x, reduce_axes);
  mi__zb_attr_int(b, "keepdims", 0);
  x = mi__zb_gemm(b, "logits", x, d, c->family->classes, 0.7f);
  mi__zb_output(b, x, 2, od);
}

void mi__zoo_mlp(mi__zb_t *b, const mi__zoo_cfg_t *c) {
  int64_t r = c->resolution, dims[4] = {c->batch, 1, r, r};
  int64_t od[2] = {c->batch, c->family->classes};
  int64_t in = r * r, hidden = mi__zb_scale(c->width, 256, 8);
  char n[32];
  int32_t x = mi__zb_input(b, c->family->input_name, 4, dims);
  x = mi__zb_op1(b, "Flatten", "flatten", x);
  mi__zb_attr_int(b, "axis", 1);
  for (int32_t l = 0; l < c->depth; l++) {
    snprintf(n, sizeof n, "fc%d", (int)l);
    x = mi__zb_gemm(b, n, x, in, hidden, 1.0f);
    snprintf(n, sizeof n, "fc%d.relu", (int)l);
    x = mi__zb_op1(b, "Relu", n, x);
    in = hidden;
  }
  x = mi__zb_gemm(b, "logits", x, in, c->family->classes, 0.7f);
  mi__zb_output(b, x, 2, od);
}
