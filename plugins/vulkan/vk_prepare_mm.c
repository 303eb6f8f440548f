/* vk_prepare_mm.c - kernel_prepare for the compute-heavy ops: Conv (direct, depthwise, gemm),
 * ConvTranspose and Gemm/MatMul (naive, tiled, register-blocked), each with its fused epilogue. */
#include <stdlib.h>
#include <string.h>

#include "vk.h"

static void fpush(vk_disp_t *d, int at, float v) { memcpy(&d->push[at], &v, 4); }

static const char *conv_shader(const vk_prep_t *p, int transposed, int depthwise) {
  if (p->var->shape == SH_VEC) return strcmp(p->var->v.id, "conv.dw_vec") == 0 ? "convdwvec" : "convvec";
  if (transposed) return "convt";
  if (depthwise) return "convdw";
  return p->var->shape == SH_GEMM_TILED ? "gemm_conv" : "conv";
}

int32_t mi__vk_prepare_conv(vk_prep_t *p) {
  const mi_kernel_desc_t *desc = p->desc;
  const mi_node_desc_t *n = desc->nodes[0];
  const mi_tensor_desc_t *x, *w, *b = NULL, *y;
  const mi_attr_t *ap = mi_sdk_attr(n, "auto_pad");
  int64_t v[16]; /* N C H W K OH OW KH KW sh sw ph pw dh dw G */
  int two_d, i, depthwise = strcmp(p->var->v.id, "conv.depthwise") == 0;
  int gemm = p->var->shape == SH_GEMM_TILED, vec = p->var->shape == SH_VEC;
  uint64_t items = 0;
  int transposed = strcmp(n->op_type, "ConvTranspose") == 0;
  vk_epi_t e;
  vk_disp_t *d;
  int32_t rc;
  if (n->input_count < 2 || n->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Conv needs X and W");
  x = mi__vk_tensor(desc, n->inputs[0]);
  w = mi__vk_tensor(desc, n->inputs[1]);
  y = mi__vk_tensor(desc, n->outputs[0]);
  if (n->input_count > 2 && n->inputs[2] >= 0) b = mi__vk_tensor(desc, n->inputs[2]);
  if (!x || !w || !y || (x->rank != 4 && x->rank != 3) || w->rank != x->rank || y->rank != x->rank)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Conv: only 1-D and 2-D convolutions");
  if (!w->data || (b && !b->data))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Conv: weights and bias must be constant");
  two_d = x->rank == 4;
  v[0] = x->dims[0], v[1] = x->dims[1], v[2] = two_d ? x->dims[2] : 1, v[3] = x->dims[x->rank - 1];
  v[4] = y->dims[1], v[5] = two_d ? y->dims[2] : 1, v[6] = y->dims[y->rank - 1];
  v[7] = two_d ? w->dims[2] : 1, v[8] = w->dims[w->rank - 1];
  v[9] = two_d ? mi_sdk_attr_ints_at(n, "strides", 0, 1) : 1, v[10] = mi_sdk_attr_ints_at(n, "strides", two_d ? 1 : 0, 1);
  v[11] = two_d ? mi_sdk_attr_ints_at(n, "pads", 0, 0) : 0, v[12] = mi_sdk_attr_ints_at(n, "pads", two_d ? 1 : 0, 0);
  v[13] = two_d ? mi_sdk_attr_ints_at(n, "dilations", 0, 1) : 1, v[14] = mi_sdk_attr_ints_at(n, "dilations", two_d ? 1 : 0, 1);
  v[15] = mi_sdk_attr_int(n, "group", 1);
  if (transposed && ((ap && ap->s && strcmp(ap->s, "NOTSET") != 0) || mi_sdk_attr(n, "output_shape")))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: ConvTranspose: auto_pad and output_shape not implemented");
  if (ap && ap->s && strncmp(ap->s, "SAME", 4) == 0) {
    for (i = 0; i < 2; i++) {
      int64_t in = v[2 + i], out = v[5 + i], k = v[7 + i];
      int64_t tot = (out - 1) * v[9 + i] + (k - 1) * v[13 + i] + 1 - in;
      if (tot < 0) tot = 0;
      v[11 + i] = strcmp(ap->s, "SAME_LOWER") == 0 ? tot - tot / 2 : tot / 2;
    }
  }
  /* W is [K, C/G, KH, KW] for Conv and [C, K/G, KH, KW] for ConvTranspose. */
  if (v[15] < 1 || v[1] % v[15] || v[4] % v[15] ||
      (transposed ? w->dims[0] != v[1] || w->dims[1] * v[15] != v[4] : w->dims[1] * v[15] != v[1]))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Conv: inconsistent group %lld", (long long)v[15]);
  if (depthwise && (v[15] != v[1] || v[4] != v[1]))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "conv.depthwise: needs group == channels == outputs (group %lld, C %lld, K %lld)",
                         (long long)v[15], (long long)v[1], (long long)v[4]);
  if ((rc = mi__vk_epi_parse(desc, 1, n->outputs[0], (int)v[4], (int)(v[5] * v[6]), &e, p->err)) != MI_OK)
    return rc;
  if (b) {
    const float *bv = b->data;
    if (mi_sdk_numel(b) != v[4]) {
      mi__vk_epi_free(&e);
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Conv: bias of %lld values for %lld outputs",
                           (long long)mi_sdk_numel(b), (long long)v[4]);
    }
    for (i = 0; i < v[4]; i++) e.shift[i] += bv[i] * e.scale[i];
    e.flags |= 1;
  }
  rc = MI_OK;
  if (e.out_tensor != desc->outputs[0])
    rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Conv: the group must write its first output");
  if (rc == MI_OK && gemm) {
    const uint32_t *lim = p->dev->props.limits.maxComputeWorkGroupCount;
    int64_t tn = (int64_t)p->spec[K_LOCAL_X] * p->spec[K_REG_N], tm = (int64_t)p->spec[K_LOCAL_Y] * p->spec[K_REG_M];
    if ((v[5] * v[6] + tn - 1) / tn > lim[0] || (v[4] / v[15] + tm - 1) / tm > lim[1] || v[0] * v[15] > lim[2])
      rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "conv.gemm: grid of %lld x %lld x %lld tiles exceeds maxComputeWorkGroupCount",
                         (long long)((v[5] * v[6] + tn - 1) / tn), (long long)((v[4] / v[15] + tm - 1) / tm),
                         (long long)(v[0] * v[15]));
  }
  if (rc == MI_OK && vec) rc = mi__vk_conv_vec_shape(p, v, &items);
  if (rc == MI_OK && (d = mi__vk_disp_new(p, conv_shader(p, transposed, depthwise), &rc))) {
    for (i = 0; i < 16; i++) d->push[i] = (uint32_t)v[i];
    /* the implicit GEMM reads the weights as A (binding 0) and the input as B (binding 1) */
    rc = mi__vk_bind(p, n->inputs[gemm ? 1 : 0], &d->bind[0]);
    if (rc == MI_OK)
      rc = vec ? mi__vk_conv_vec_weights(p, v, w->data, &d->bind[1]) : mi__vk_bind(p, n->inputs[gemm ? 0 : 1], &d->bind[1]);
    if (rc == MI_OK) rc = mi__vk_bind(p, desc->outputs[0], &d->bind[2]);
    if (rc == MI_OK) rc = mi__vk_epi_bind(p, d, &e, 16);
    if (gemm) { /* rows: the group's output channels; columns: output pixels; z: image x group */
      uint64_t tn = (uint64_t)p->spec[K_LOCAL_X] * p->spec[K_REG_N], tm = (uint64_t)p->spec[K_LOCAL_Y] * p->spec[K_REG_M];
      d->groups[0] = (uint32_t)((v[5] * v[6] + (int64_t)tn - 1) / (int64_t)tn);
      d->groups[1] = (uint32_t)((v[4] / v[15] + (int64_t)tm - 1) / (int64_t)tm);
      d->groups[2] = (uint32_t)(v[0] * v[15]);
    } else if (vec) {
      mi__vk_grid1(p, d, items);
    } else {
      mi__vk_grid1(p, d, (uint64_t)(v[0] * v[4] * v[5] * v[6]));
    }
  }
  mi__vk_epi_free(&e);
  return rc;
}

/* The FP16 variants read B (constant weights) as FP16 from a buffer of their own. */
static int32_t upload_half(vk_prep_t *p, const mi_tensor_desc_t *b, vk_ref_t *out) {
  int64_t i, n = mi_sdk_numel(b);
  uint16_t *h;
  int32_t rc;
  if (!b->data || b->dtype != MI_DTYPE_FLOAT32)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "%s: B must be constant FP32 weights", p->var->v.id);
  if (!(h = malloc((size_t)n * sizeof *h))) return mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  for (i = 0; i < n; i++) h[i] = mi_sdk_float_to_half(((const float *)b->data)[i]);
  rc = mi__vk_upload(p, h, (size_t)n * sizeof *h, out);
  free(h);
  return rc;
}

/* Batch stride of an operand whose batch dims are all of the output's or none. */
static int batch_stride(const mi_tensor_desc_t *t, int64_t batch, int64_t mat, int64_t *out) {
  int64_t nb = t->rank > 2 ? mi_sdk_numel(t) / mat : 1;
  if (nb == 1) *out = 0;
  else if (nb == batch)
    *out = mat;
  else
    return 0;
  return 1;
}

int32_t mi__vk_prepare_gemm(vk_prep_t *p) {
  const mi_kernel_desc_t *desc = p->desc;
  const mi_node_desc_t *n = desc->nodes[0];
  const mi_tensor_desc_t *a, *b, *y, *c = NULL;
  int64_t M, N, K, batch, sa, sb;
  int ta = 0, tb = 0, gemm = strcmp(n->op_type, "Gemm") == 0, i;
  float alpha = 1.0f, beta = 1.0f;
  vk_epi_t e;
  vk_disp_t *d;
  int32_t rc;
  if (n->input_count < 2 || n->output_count != 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s needs A and B", n->op_type);
  a = mi__vk_tensor(desc, n->inputs[0]);
  b = mi__vk_tensor(desc, n->inputs[1]);
  y = mi__vk_tensor(desc, n->outputs[0]);
  if (!a || !b || !y || a->rank < 1 || b->rank < 1)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: bad operands", n->op_type);
  if (gemm) {
    if (a->rank != 2 || b->rank != 2)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Gemm needs 2-D A and B");
    ta = (int)mi_sdk_attr_int(n, "transA", 0);
    tb = (int)mi_sdk_attr_int(n, "transB", 0);
    alpha = mi_sdk_attr_float(n, "alpha", 1.0f);
    beta = mi_sdk_attr_float(n, "beta", 1.0f);
    M = ta ? a->dims[1] : a->dims[0];
    K = ta ? a->dims[0] : a->dims[1];
    N = tb ? b->dims[0] : b->dims[1];
    if (n->input_count > 2 && n->inputs[2] >= 0) c = mi__vk_tensor(desc, n->inputs[2]);
  } else {
    M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    K = a->dims[a->rank - 1];
    N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if ((b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2]) != K)
      return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: MatMul: inner dims differ");
  }
  batch = M * N > 0 ? mi_sdk_numel(y) / (M * N) : 0;
  if (batch < 1 || !batch_stride(a, batch, M * K, &sa) || !batch_stride(b, batch, K * N, &sb))
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                         "vulkan: %s: batch broadcasting beyond all-or-one is not implemented", n->op_type);
  if (batch > p->dev->props.limits.maxComputeWorkGroupCount[2])
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: %s: batch %lld exceeds maxComputeWorkGroupCount[2]",
                         n->op_type, (long long)batch);
  if ((rc = mi__vk_epi_parse(desc, 1, n->outputs[0], (int)N, 1, &e, p->err)) != MI_OK) return rc;
  rc = MI_OK;
  if (c) {
    int64_t cn = mi_sdk_numel(c);
    int per_col = cn == N && (c->rank == 1 || c->dims[c->rank - 2] == 1);
    if (c->data && (per_col || cn == 1)) {
      const float *cv = c->data;
      for (i = 0; i < N; i++) e.shift[i] += beta * cv[per_col ? i : 0] * e.scale[i];
      e.flags |= 1;
    } else if (cn == M * N && beta == 1.0f && !(e.flags & 2) && e.act0 == ACT_NONE) {
      e.flags |= 2; /* the full C is added like a residual, before any activation */
      e.res_tensor = n->inputs[2];
      if (e.flags & 1)
        rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Gemm: full C with a fused affine");
    } else {
      rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: Gemm: C of %lld values (beta %g) not implemented",
                         (long long)cn, (double)beta);
    }
  }
  if (rc == MI_OK && e.out_tensor != desc->outputs[0])
    rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: the group must write its first output");
  d = NULL;
  if (rc == MI_OK)
    d = mi__vk_disp_new(p, p->var->fp16 ? "gemm_f16" : p->var->shape == SH_GEMM_NAIVE ? "gemm_naive"
                                                                                      : "gemm_tiled",
                        &rc);
  if (d) {
    uint32_t tn = p->spec[K_LOCAL_X] * (p->var->shape == SH_GEMM_NAIVE ? 1 : p->spec[K_REG_N]);
    uint32_t tm = p->spec[K_LOCAL_Y] * (p->var->shape == SH_GEMM_NAIVE ? 1 : p->spec[K_REG_M]);
    d->push[0] = (uint32_t)M, d->push[1] = (uint32_t)N, d->push[2] = (uint32_t)K;
    d->push[3] = (uint32_t)sa, d->push[4] = (uint32_t)sb;
    d->push[5] = (uint32_t)ta, d->push[6] = (uint32_t)tb;
    fpush(d, 7, alpha);
    rc = mi__vk_bind(p, n->inputs[0], &d->bind[0]);
    if (rc == MI_OK) rc = p->var->fp16 ? upload_half(p, b, &d->bind[1]) : mi__vk_bind(p, n->inputs[1], &d->bind[1]);
    if (rc == MI_OK) rc = mi__vk_bind(p, desc->outputs[0], &d->bind[2]);
    if (rc == MI_OK) rc = mi__vk_epi_bind(p, d, &e, 8);
    d->groups[0] = (uint32_t)((N + tn - 1) / tn);
    d->groups[1] = (uint32_t)((M + tm - 1) / tm);
    d->groups[2] = (uint32_t)batch;
  }
  mi__vk_epi_free(&e);
  return rc;
}
