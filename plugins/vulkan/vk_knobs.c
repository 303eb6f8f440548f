/* vk_knobs.c - the variants, knobs (specialization constants) and declared constraints of the
 * Vulkan plugin, and the check of a knob assignment against the device limits. */
#include <stdio.h>
#include <string.h>

#include "vk.h"

#define B(k) (1u << (k))
#define MM_FUSE (MI_FUSE_BIAS | MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD)
#define TILED (B(K_LOCAL_X) | B(K_LOCAL_Y) | B(K_TILE_K) | B(K_UNROLL))
#define REG (TILED | B(K_REG_M) | B(K_REG_N))
/* defaults: local_x local_y tile_k unroll reg_m reg_n */
#define D_1D \
  { 64, 1, 1, 1, 1, 1 }
#define D_NAIVE \
  { 16, 4, 1, 1, 1, 1 }
#define D_TILED \
  { 16, 16, 16, 4, 1, 1 }
#define D_REG \
  { 16, 8, 16, 4, 4, 4 }
/* conv.vec: 8 output channels x 4 columns; conv.dw_vec: 2 rows x 4 columns per invocation */
#define D_VEC \
  { 32, 1, 1, 1, 2, 1 }
#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define LAYOUTS (MI_LAYOUT_BIT(MI_LAYOUT_ANY) | MI_LAYOUT_BIT(MI_LAYOUT_NCHW))
#define V(id, op, desc, fuse, knobs, shape, dflt) \
  { {id, op, desc, F32, LAYOUTS, fuse, knobs, NULL}, shape, dflt, 0 }
/* FP16 variants take FP32 buffers but compute in FP16: they declare the FP16 precision. */
#define V16(id, op, desc) \
  { {id, op, desc, MI_DTYPE_BIT(MI_DTYPE_FLOAT16), LAYOUTS, MM_FUSE, REG, NULL}, SH_GEMM_TILED, D_REG, 1 }
#define EW(op, desc) V("ew." op, op, desc, 0, B(K_LOCAL_X), SH_1D, D_1D)
#define ROW(id, op, desc) V(id, op, desc, 0, B(K_LOCAL_X), SH_1D, D_1D)

static const vk_variant_t k_variants[] = {
    V("conv.direct", "Conv", "direct convolution (groups, strides, pads, dilations)", MM_FUSE,
      B(K_LOCAL_X) | B(K_UNROLL), SH_CONV, D_1D),
    /* For CPU drivers: listed next, so a layer task's first round tries them at their blocks. */
    V("conv.vec", "Conv", "direct convolution, 4 columns x 4*reg_m output channels per invocation in vec4 registers (group 1, strides, pads, dilations)",
      MM_FUSE, B(K_LOCAL_X) | B(K_REG_M), SH_VEC, D_VEC),
    V("conv.dw_vec", "Conv", "depthwise convolution, reg_m rows x 4*reg_n columns per invocation from input rows loaded once (square kernel <= 7, stride 1 or 2)",
      MM_FUSE, B(K_LOCAL_X) | B(K_REG_M) | B(K_REG_N), SH_VEC, D_VEC),
    V("conv.depthwise", "Conv", "depthwise convolution (group == channels)", MM_FUSE,
      B(K_LOCAL_X), SH_1D, D_1D),
    V("conv.gemm", "Conv", "implicit GEMM (input unfolded in the tile loads), shared-memory tiles, reg_m x reg_n outputs per invocation (groups, strides, pads, dilations)",
      MM_FUSE, REG, SH_GEMM_TILED, D_REG),
    V("convtranspose.direct", "ConvTranspose", "transposed convolution, one output per invocation (groups, strides, pads, dilations)",
      MM_FUSE, B(K_LOCAL_X), SH_1D, D_1D),
    V("gemm.regblock", "Gemm", "shared-memory tiles, reg_m x reg_n outputs per invocation", MM_FUSE, REG, SH_GEMM_TILED, D_REG),
    V("gemm.tiled", "Gemm", "shared-memory tiles, one output per invocation", MM_FUSE, TILED, SH_GEMM_TILED, D_TILED),
    V("gemm.naive", "Gemm", "one output per invocation", MM_FUSE, B(K_LOCAL_X) | B(K_LOCAL_Y), SH_GEMM_NAIVE, D_NAIVE),
    V("matmul.regblock", "MatMul", "shared-memory tiles, reg_m x reg_n outputs per invocation", MM_FUSE, REG, SH_GEMM_TILED, D_REG),
    V("matmul.tiled", "MatMul", "shared-memory tiles, one output per invocation", MM_FUSE, TILED, SH_GEMM_TILED, D_TILED),
    V("matmul.naive", "MatMul", "one output per invocation", MM_FUSE, B(K_LOCAL_X) | B(K_LOCAL_Y), SH_GEMM_NAIVE, D_NAIVE),
    EW("Relu", "element-wise"),
    EW("Clip", "element-wise"),
    EW("LeakyRelu", "element-wise"),
    EW("Sigmoid", "element-wise"),
    EW("Tanh", "element-wise"),
    EW("HardSigmoid", "element-wise"),
    EW("HardSwish", "element-wise"),
    EW("Gelu", "element-wise"),
    EW("Erf", "element-wise"),
    EW("Exp", "element-wise"),
    EW("Log", "element-wise"),
    EW("Sqrt", "element-wise"),
    EW("Neg", "element-wise"),
    EW("Abs", "element-wise"),
    EW("Reciprocal", "element-wise"),
    EW("Elu", "element-wise"),
    EW("Softplus", "element-wise"),
    EW("Floor", "element-wise"),
    EW("Ceil", "element-wise"),
    EW("Identity", "copy"),
    EW("Add", "numpy broadcasting"),
    EW("Sub", "numpy broadcasting"),
    EW("Mul", "numpy broadcasting"),
    EW("Div", "numpy broadcasting"),
    EW("Max", "numpy broadcasting (two inputs)"),
    EW("Min", "numpy broadcasting (two inputs)"),
    EW("Pow", "numpy broadcasting"),
    EW("PRelu", "broadcast slope"),
    EW("BatchNormalization", "per-channel affine (inference)"),
    EW("Transpose", "strided copy"),
    EW("Concat", "one strided copy per input"),
    EW("Slice", "strided copy (constant starts/ends/axes/steps)"),
    EW("Resize", "nearest, integer upsampling factors (broadcast copy)"),
    EW("Reshape", "buffer copy"),
    EW("Flatten", "buffer copy"),
    EW("Squeeze", "buffer copy"),
    EW("Unsqueeze", "buffer copy"),
    ROW("pool.MaxPool", "MaxPool", "2-D, one output per invocation"),
    ROW("pool.AveragePool", "AveragePool", "2-D, one output per invocation"),
    ROW("pool.GlobalAveragePool", "GlobalAveragePool", "mean over H, W"),
    ROW("pool.GlobalMaxPool", "GlobalMaxPool", "max over H, W"),
    ROW("row.Softmax", "Softmax", "one row per invocation"),
    ROW("row.LogSoftmax", "LogSoftmax", "one row per invocation"),
    ROW("row.LayerNormalization", "LayerNormalization", "one row per invocation"),
    ROW("row.ReduceMean", "ReduceMean", "contiguous axes, one output per invocation"),
    ROW("row.ReduceSum", "ReduceSum", "contiguous axes, one output per invocation"),
    ROW("row.ReduceMax", "ReduceMax", "contiguous axes, one output per invocation"),
    ROW("row.ReduceMin", "ReduceMin", "contiguous axes, one output per invocation"),
    /* FP16 variants last (mi__vk_variant_count_on hides them on devices without FP16). */
    V16("gemm.regblock.fp16", "Gemm", "regblock with FP16 weights and products, FP32 sums and I/O"),
    V16("matmul.regblock.fp16", "MatMul", "regblock with FP16 weights and products, FP32 sums and I/O"),
};
#define NFP16 2

#define NVAR (sizeof k_variants / sizeof k_variants[0])

#define KNOB(nm, desc, un, dflt, n, ...)                                         \
  { .name = nm, .description = desc, .unit = un, .scope = MI_KNOB_SCOPE_VARIANT, \
    .type = MI_KNOB_INT, .mutability = MI_KNOB_AT_PREPARE, .value_count = n,     \
    .values = {__VA_ARGS__}, .default_int = dflt }
#define WG "invocations"

/* applies_to left NULL: the helper lists the variants whose knob_mask reads each knob. */
static const mi_sdk_knob_t k_knobs[K_COUNT] = {
    KNOB("local_x", "work-group size x (specialization constant)", WG, 64, 11, 1, 2, 4, 8, 16, 32,
         64, 128, 256, 512, 1024),
    KNOB("local_y", "work-group size y (specialization constant)", WG, 8, 11, 1, 2, 4, 8, 16, 32,
         64, 128, 256, 512, 1024),
    KNOB("tile_k", "K depth of the shared-memory tiles", "", 16, 7, 1, 2, 4, 8, 16, 32, 64),
    KNOB("unroll", "inner-loop unroll factor", "", 1, 4, 1, 2, 4, 8),
    KNOB("reg_m", "rows of outputs kept in registers per invocation", "", 4, 4, 1, 2, 4, 8),
    KNOB("reg_n", "columns of outputs kept in registers per invocation", "", 4, 4, 1, 2, 4, 8),
};

/* Every variant, and the list a device without FP16 sees (the FP16 ones come last). */
static int32_t constraint_of(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                             mi_constraint_desc_t *out);

/* Constraints carry each device's limits, so the tables answer them through the device. */
enum { C_INVOC,
       C_SIZE_X,
       C_SIZE_Y,
       C_UNROLL_TK,
       C_SHARED,
       C_UNROLL_KW,
       C_VEC_REGS,
       C_COUNT };
static const mi_sdk_tables_t k_all = {.knobs = k_knobs, .knob_count = K_COUNT, .variants = k_variants, .variant_count = NVAR, .variant_size = sizeof k_variants[0], .constraint_count = C_COUNT, .constraint = constraint_of};
static const mi_sdk_tables_t k_no_fp16 = {.knobs = k_knobs, .knob_count = K_COUNT, .variants = k_variants, .variant_count = NVAR - NFP16, .variant_size = sizeof k_variants[0], .constraint_count = C_COUNT, .constraint = constraint_of};

const mi_sdk_tables_t *mi__vk_tables_all(void) { return &k_all; }

const mi_sdk_tables_t *mi__vk_tables(const vk_device_t *d) {
  return d->has_fp16 ? &k_all : &k_no_fp16;
}

/* The first listed variant of an op is its default (register-blocked GEMM, direct conv). */
const vk_variant_t *mi__vk_variant_default(const char *op) {
  return (const vk_variant_t *)mi_sdk_variant_first(&k_all, op);
}

/* On a CPU device (lavapipe) conv.direct, one output per invocation, runs at 0.1-0.2 GFLOP/s,
 * and the implicit GEMM with register blocks several times faster for every group-1 convolution
 * (docs/tuning.md), and depthwise ones run their own kernel: the default there must not be the
 * slow one (a tune then wins only what its knobs add). GPUs keep the first variant. */
const vk_variant_t *mi__vk_variant_auto(const vk_device_t *dev, const mi_kernel_desc_t *desc) {
  const mi_node_desc_t *n = desc->nodes[0];
  const mi_tensor_desc_t *x, *w, *y;
  int64_t g;
  if (dev->desc.kind != MI_DEVICE_CPU || strcmp(n->op_type, "Conv") != 0 || n->input_count < 2 ||
      n->output_count < 1)
    return mi__vk_variant_default(n->op_type);
  x = mi__vk_tensor(desc, n->inputs[0]);
  w = mi__vk_tensor(desc, n->inputs[1]);
  y = mi__vk_tensor(desc, n->outputs[0]);
  g = mi_sdk_attr_int(n, "group", 1);
  if (!x || !w || !y || x->rank != 4 || w->rank != 4 || y->rank != 4 || !w->data)
    return mi__vk_variant_default(n->op_type);
  if (g > 1 && g == x->dims[1] && y->dims[1] == x->dims[1])
    return (const vk_variant_t *)mi_sdk_variant_find(&k_all, "conv.depthwise");
  /* the declared blocks: 16 x 4 output pixels by 8 x 4 channels per workgroup */
  if ((y->dims[2] * y->dims[3] + 63) / 64 > dev->props.limits.maxComputeWorkGroupCount[0] ||
      x->dims[0] * g > dev->props.limits.maxComputeWorkGroupCount[2])
    return mi__vk_variant_default(n->op_type);
  return (const vk_variant_t *)mi_sdk_variant_find(&k_all, "conv.gemm");
}

static void applies(uint32_t knob_bit, int shape, char *out, size_t size) {
  size_t n = 0;
  uint32_t i;
  out[0] = '\0';
  for (i = 0; i < NVAR; i++) {
    if (knob_bit && !(k_variants[i].v.knob_mask & knob_bit)) continue;
    if (shape >= 0 && k_variants[i].shape != shape) continue;
    if (n + strlen(k_variants[i].v.id) + 2 >= size) break;
    n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "," : "", k_variants[i].v.id);
  }
}

static int32_t constraint_of(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                             mi_constraint_desc_t *out) {
  return mi__vk_constraint_desc(&ctx->devs[device], index, out);
}

/* conv.dw_vec keeps reg_m x 4*reg_n outputs and a window of input columns per row in registers:
 * past 16 blocks (64 accumulators) the unrolled shader only spills and compiles for seconds. */
#define VEC_MAX_REGS 16

static int64_t shared_bytes(const int64_t *v) {
  return (v[K_LOCAL_Y] * v[K_REG_M] + v[K_LOCAL_X] * v[K_REG_N]) * v[K_TILE_K] * 4;
}

int32_t mi__vk_constraint_desc(const vk_device_t *d, uint32_t i, mi_constraint_desc_t *out) {
  mi_constraint_desc_t c;
  char to[sizeof c.applies_to];
  const VkPhysicalDeviceLimits *l = &d->props.limits;
  switch (i) {
  case C_INVOC:
    applies(B(K_LOCAL_Y), -1, to, sizeof to);
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_PRODUCT_LE, "local_x", "local_y", to,
                          l->maxComputeWorkGroupInvocations,
                          "local_x * local_y <= maxComputeWorkGroupInvocations (%u)",
                          l->maxComputeWorkGroupInvocations);
    break;
  case C_SIZE_X:
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_LESS_EQUAL, "local_x", NULL, NULL,
                          l->maxComputeWorkGroupSize[0], "local_x <= maxComputeWorkGroupSize[0] (%u)",
                          l->maxComputeWorkGroupSize[0]);
    break;
  case C_SIZE_Y:
    applies(B(K_LOCAL_Y), -1, to, sizeof to);
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_LESS_EQUAL, "local_y", NULL, to,
                          l->maxComputeWorkGroupSize[1], "local_y <= maxComputeWorkGroupSize[1] (%u)",
                          l->maxComputeWorkGroupSize[1]);
    break;
  case C_UNROLL_TK:
    applies(0, SH_GEMM_TILED, to, sizeof to);
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_DIVIDES, "unroll", "tile_k", to, 0, "unroll divides tile_k");
    break;
  case C_SHARED:
    applies(0, SH_GEMM_TILED, to, sizeof to);
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_CUSTOM, "tile_k", NULL, to, l->maxComputeSharedMemorySize,
                          "(local_y*reg_m + local_x*reg_n) * tile_k * 4 <= "
                          "maxComputeSharedMemorySize (%u bytes)",
                          l->maxComputeSharedMemorySize);
    break;
  case C_UNROLL_KW:
    applies(0, SH_CONV, to, sizeof to);
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_LESS_EQUAL, "unroll", NULL, to, 8, "unroll <= 8 kernel columns");
    break;
  case C_VEC_REGS:
    applies(B(K_REG_N), SH_VEC, to, sizeof to);
    mi_sdk_constraint_set(&c, MI_CONSTRAINT_PRODUCT_LE, "reg_m", "reg_n", to, VEC_MAX_REGS,
                          "reg_m * reg_n <= %d (vec4 registers of outputs per invocation)", VEC_MAX_REGS);
    break;
  default:
    return MI_ERR_INVALID_ARGUMENT;
  }
  return mi_sdk_fill(out, &c, sizeof c);
}

int32_t mi__vk_knobs_resolve(const vk_device_t *d, const vk_variant_t *var,
                             const mi_knob_value_t *knobs, int32_t count, uint32_t *spec,
                             mi_error_t *err) {
  const VkPhysicalDeviceLimits *l = &d->props.limits;
  int64_t v[K_COUNT];
  int32_t i, k;
  for (k = 0; k < K_COUNT; k++) v[k] = var->dflt[k];
  for (i = 0; i < count; i++) {
    const char *name = knobs[i].name;
    if (!name) return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: knob without a name", var->v.id);
    k = mi_sdk_knob_index(&k_all, name);
    if (k < 0 || !(var->v.knob_mask & B(k)))
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: knob '%s' is not read by this variant",
                           var->v.id, name);
    if (!mi_sdk_knob_allows(&k_knobs[k], knobs[i].i))
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "%s: knob '%s' = %lld is outside its domain (powers of two %lld..%lld)",
                           var->v.id, name, (long long)knobs[i].i, (long long)k_knobs[k].values[0],
                           (long long)k_knobs[k].values[k_knobs[k].value_count - 1]);
    v[k] = knobs[i].i;
  }
  if (v[K_LOCAL_X] > l->maxComputeWorkGroupSize[0])
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: local_x %lld breaks local_x <= maxComputeWorkGroupSize[0] (%u)",
                         var->v.id, (long long)v[K_LOCAL_X], l->maxComputeWorkGroupSize[0]);
  if ((var->v.knob_mask & B(K_LOCAL_Y)) && v[K_LOCAL_Y] > l->maxComputeWorkGroupSize[1])
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: local_y %lld breaks local_y <= maxComputeWorkGroupSize[1] (%u)",
                         var->v.id, (long long)v[K_LOCAL_Y], l->maxComputeWorkGroupSize[1]);
  if (v[K_LOCAL_X] * v[K_LOCAL_Y] > l->maxComputeWorkGroupInvocations)
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                         "%s: local_x * local_y = %lld breaks local_x * local_y <= maxComputeWorkGroupInvocations (%u)",
                         var->v.id, (long long)(v[K_LOCAL_X] * v[K_LOCAL_Y]), l->maxComputeWorkGroupInvocations);
  if (var->shape == SH_GEMM_TILED) {
    if (v[K_TILE_K] % v[K_UNROLL] != 0)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: unroll %lld breaks 'unroll divides tile_k' (tile_k %lld)",
                           var->v.id, (long long)v[K_UNROLL], (long long)v[K_TILE_K]);
    if (shared_bytes(v) > l->maxComputeSharedMemorySize)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "%s: shared memory %lld bytes breaks (local_y*reg_m + local_x*reg_n) * tile_k * 4 <= "
                           "maxComputeSharedMemorySize (%u)",
                           var->v.id, (long long)shared_bytes(v), l->maxComputeSharedMemorySize);
  }
  if (var->shape == SH_VEC && (var->v.knob_mask & B(K_REG_N)) && v[K_REG_M] * v[K_REG_N] > VEC_MAX_REGS)
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: reg_m * reg_n = %lld breaks reg_m * reg_n <= %d",
                         var->v.id, (long long)(v[K_REG_M] * v[K_REG_N]), VEC_MAX_REGS);
  for (k = 0; k < K_COUNT; k++) spec[k] = (uint32_t)v[k];
  spec[K_STRIDE] = spec[K_KSIZE] = 0; /* set by prepare where a shader reads them */
  return MI_OK;
}
