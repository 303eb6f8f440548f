/* ocl_knobs.c - the variants, knobs and declared constraints of the OpenCL plugin, and the
 * check of a knob assignment against them. */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

#define B(k) (1u << (k))
#define MM_FUSE (MI_FUSE_BIAS | MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD)
#define EW_FUSE (MI_FUSE_RELU | MI_FUSE_ACT)
#define TILED (B(K_WG_X) | B(K_WG_Y) | B(K_TILE_M) | B(K_TILE_N) | B(K_TILE_K) | B(K_LOCAL) | B(K_UNROLL))
#define VEC (B(K_WG_X) | B(K_WG_Y) | B(K_TILE_M) | B(K_TILE_N) | B(K_VW) | B(K_UNROLL))
#define NAIVE (B(K_WG_X) | B(K_WG_Y) | B(K_UNROLL))
/* defaults: wg_x wg_y tile_m tile_n tile_k vw local unroll (oc_per_item ow_per_item oh_per_item
 * where read). The first Conv variant stays the untuned default for group-1 convolutions: im2col
 * plus the local-memory tiled GEMM is the choice that suits every device class (GPUs above all)
 * without measuring; the tiled direct and register-blocked ones below are what a tune can pick
 * where they win (docs/backends/opencl.md). */
#define D_TILED \
  { 8, 8, 32, 32, 8, 1, 1, 4 }
#define D_VEC \
  { 8, 8, 32, 64, 8, 4, 0, 1 }
#define D_NAIVE \
  { 16, 4, 1, 1, 1, 1, 0, 1 }
#define D_1D \
  { 64, 1, 1, 1, 1, 1, 0, 1 }
/* the tiled direct convolutions: wg_x, then oc_per_item ow_per_item oh_per_item */
#define D_DIRECT \
  { 8, 1, 1, 1, 1, 1, 0, 1, 4, 4, 2 }
/* the vector forms: a block of ow_per_item columns is one floatN, so the declared block is as
 * wide as a CPU's SIMD register (16 floats) and the work-group narrower to match the fewer
 * work-items per row */
#define D_VTILED \
  { 4, 1, 1, 1, 1, 1, 0, 1, 4, 16, 2 }
#define D_VDW \
  { 8, 1, 1, 1, 1, 1, 0, 1, 4, 8, 2 }
/* conv.pw_vec: oc_per_item channels x oh_per_item vectors of ow_per_item pixels, 4 x 2 x 16 (8
 * float16 accumulators: a quarter of an AVX-512 register file, half of AVX2's) */
#define D_VPW \
  { 4, 1, 1, 1, 1, 1, 0, 1, 4, 16, 2 }
#define PW_KNOBS (B(K_WG_X) | B(K_OCB) | B(K_OWB) | B(K_OHB) | B(K_UNROLL))
#define CONV_TILED_KNOBS (B(K_WG_X) | B(K_OCB) | B(K_OWB) | B(K_UNROLL))
#define DW_TILED_KNOBS (B(K_WG_X) | B(K_OHB) | B(K_OWB))
#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define LAYOUTS (MI_LAYOUT_BIT(MI_LAYOUT_NCHW) | MI_LAYOUT_BIT(MI_LAYOUT_ANY))
#define V(id, op, desc, fuse, knobs, dflt) \
  { {id, op, desc, F32, LAYOUTS, fuse, knobs, NULL}, dflt }
#define SIMPLE(id, op, desc, fuse) V(id, op, desc, fuse, B(K_WG_X), D_1D)

static const ocl_variant_t k_variants[] = {
    V("conv.im2col_gemm", "Conv", "im2col then tiled GEMM with local memory", MM_FUSE, TILED, D_TILED),
    /* Listed second to fourth: a tune's first layer round tries a node's variants at their
     * declared knobs in this order, as many as its cap allows (docs/tuning.md). */
    V("conv.pw_vec", "Conv",
      "pointwise (1x1, stride 1, group 1): oc_per_item channels x oh_per_item floatN vectors of "
      "ow_per_item pixels of the flat plane per work-item, each input vector loaded once per "
      "input channel, the epilogue on whole vectors",
      MM_FUSE, PW_KNOBS, D_VPW),
    V("conv.tiled_vec", "Conv",
      "conv.tiled with a work-item's ow_per_item columns as one floatN vector, one vector FMA "
      "per tap (SIMD where the device does not vectorise across work-items, as CPU OpenCL)",
      MM_FUSE, CONV_TILED_KNOBS, D_VTILED),
    V("conv.dw_vec", "Conv",
      "conv.dw_tiled with a work-item's ow_per_item columns as one floatN vector, one vector "
      "FMA per tap",
      MM_FUSE, DW_TILED_KNOBS, D_VDW),
    V("conv.implicit_gemm", "Conv",
      "conv.im2col_gemm's tiled GEMM reading its column tiles straight from X through the "
      "im2col index map: no column buffer, no im2col pass",
      MM_FUSE, TILED, D_TILED),
    V("conv.direct", "Conv", "direct convolution, one output per work-item", MM_FUSE,
      B(K_WG_X) | B(K_UNROLL), D_1D),
    V("conv.tiled", "Conv",
      "direct convolution, oc_per_item x ow_per_item outputs per work-item in registers",
      MM_FUSE, CONV_TILED_KNOBS, D_DIRECT),
    V("conv.dw_tiled", "Conv",
      "depthwise convolution, oh_per_item x ow_per_item outputs per work-item in registers",
      MM_FUSE, DW_TILED_KNOBS, D_DIRECT),
    V("conv.im2col_regblock", "Conv",
      "im2col (none for 1x1 stride 1) then the register-blocked GEMM with floatN loads", MM_FUSE,
      VEC, D_VEC),
    V("conv.depthwise", "Conv", "depthwise convolution (group == channels)", MM_FUSE,
      B(K_WG_X) | B(K_UNROLL), D_1D),
    V("convtranspose.direct", "ConvTranspose",
      "transposed convolution, one output per work-item (groups, strides, pads, dilations)",
      MM_FUSE, B(K_WG_X) | B(K_UNROLL), D_1D),
    V("gemm.tiled", "Gemm", "tiled GEMM, tiles staged in local memory", MM_FUSE, TILED, D_TILED),
    V("gemm.regblock", "Gemm", "register-blocked GEMM with floatN vector loads", MM_FUSE, VEC, D_VEC),
    V("gemm.naive", "Gemm", "one output per work-item", MM_FUSE, NAIVE, D_NAIVE),
    V("matmul.tiled", "MatMul", "tiled GEMM, tiles staged in local memory", MM_FUSE, TILED, D_TILED),
    V("matmul.regblock", "MatMul", "register-blocked GEMM with floatN vector loads", MM_FUSE, VEC,
      D_VEC),
    V("matmul.naive", "MatMul", "one output per work-item", MM_FUSE, NAIVE, D_NAIVE),
    SIMPLE("ew.Relu", "Relu", "element-wise", EW_FUSE),
    SIMPLE("ew.Clip", "Clip", "element-wise", EW_FUSE),
    SIMPLE("ew.LeakyRelu", "LeakyRelu", "element-wise", EW_FUSE),
    SIMPLE("ew.Sigmoid", "Sigmoid", "element-wise", EW_FUSE),
    SIMPLE("ew.Tanh", "Tanh", "element-wise", EW_FUSE),
    SIMPLE("ew.HardSigmoid", "HardSigmoid", "element-wise", EW_FUSE),
    SIMPLE("ew.HardSwish", "HardSwish", "element-wise", EW_FUSE),
    SIMPLE("ew.Gelu", "Gelu", "element-wise", EW_FUSE),
    SIMPLE("ew.Erf", "Erf", "element-wise", EW_FUSE),
    SIMPLE("ew.Exp", "Exp", "element-wise", EW_FUSE),
    SIMPLE("ew.Log", "Log", "element-wise", EW_FUSE),
    SIMPLE("ew.Sqrt", "Sqrt", "element-wise", EW_FUSE),
    SIMPLE("ew.Neg", "Neg", "element-wise", EW_FUSE),
    SIMPLE("ew.Abs", "Abs", "element-wise", EW_FUSE),
    SIMPLE("ew.Reciprocal", "Reciprocal", "element-wise", EW_FUSE),
    SIMPLE("ew.Elu", "Elu", "element-wise", EW_FUSE),
    SIMPLE("ew.Softplus", "Softplus", "element-wise", EW_FUSE),
    SIMPLE("ew.Floor", "Floor", "element-wise", EW_FUSE),
    SIMPLE("ew.Ceil", "Ceil", "element-wise", EW_FUSE),
    SIMPLE("ew.BatchNormalization", "BatchNormalization", "per-channel affine (inference)",
           EW_FUSE),
    SIMPLE("ew.Add", "Add", "element-wise with broadcasting", EW_FUSE),
    SIMPLE("ew.Sub", "Sub", "element-wise with broadcasting", EW_FUSE),
    SIMPLE("ew.Mul", "Mul", "element-wise with broadcasting", EW_FUSE),
    SIMPLE("ew.Div", "Div", "element-wise with broadcasting", EW_FUSE),
    SIMPLE("ew.Max", "Max", "element-wise with broadcasting (two inputs)", EW_FUSE),
    SIMPLE("ew.Min", "Min", "element-wise with broadcasting (two inputs)", EW_FUSE),
    SIMPLE("ew.Pow", "Pow", "element-wise with broadcasting", EW_FUSE),
    SIMPLE("ew.PRelu", "PRelu", "element-wise with broadcasting slope", EW_FUSE),
    SIMPLE("reduce.ReduceMean", "ReduceMean", "one output per work-item", 0),
    SIMPLE("reduce.ReduceSum", "ReduceSum", "one output per work-item", 0),
    SIMPLE("reduce.ReduceMax", "ReduceMax", "one output per work-item", 0),
    SIMPLE("reduce.ReduceMin", "ReduceMin", "one output per work-item", 0),
    SIMPLE("reduce.ReduceSumSquare", "ReduceSumSquare", "one output per work-item", 0),
    SIMPLE("reduce.ReduceL1", "ReduceL1", "one output per work-item", 0),
    SIMPLE("reduce.ReduceL2", "ReduceL2", "one output per work-item", 0),
    SIMPLE("reduce.GlobalAveragePool", "GlobalAveragePool", "mean over H, W", 0),
    SIMPLE("reduce.GlobalMaxPool", "GlobalMaxPool", "max over H, W", 0),
    SIMPLE("softmax.Softmax", "Softmax", "one row per work-item", 0),
    SIMPLE("softmax.LogSoftmax", "LogSoftmax", "one row per work-item", 0),
    SIMPLE("norm.LayerNormalization", "LayerNormalization", "one row per work-item", 0),
    SIMPLE("pool.MaxPool", "MaxPool", "2-D, one output per work-item", 0),
    SIMPLE("pool.AveragePool", "AveragePool", "2-D, one output per work-item", 0),
    SIMPLE("copy.Reshape", "Reshape", "buffer copy", 0),
    SIMPLE("copy.Flatten", "Flatten", "buffer copy", 0),
    SIMPLE("copy.Squeeze", "Squeeze", "buffer copy", 0),
    SIMPLE("copy.Unsqueeze", "Unsqueeze", "buffer copy", 0),
    SIMPLE("copy.Identity", "Identity", "buffer copy", 0),
    SIMPLE("copy.Dropout", "Dropout", "buffer copy (inference)", 0),
    SIMPLE("copy.Transpose", "Transpose", "strided copy", 0),
    SIMPLE("copy.Concat", "Concat", "one strided copy per input", 0),
    SIMPLE("shape.Slice", "Slice", "strided copy (constant starts/ends/axes/steps)", 0),
    SIMPLE("shape.Split", "Split", "one strided copy per output", 0),
    SIMPLE("shape.Pad", "Pad", "constant, reflect or edge, constant pads", 0),
    SIMPLE("shape.Gather", "Gather", "constant INT64 indices along one axis", 0),
    SIMPLE("shape.Resize", "Resize", "nearest or linear over the last two axes", 0),
};

#define KNOB(nm, desc, un, ty, dflt, n, ...)                                                 \
  { .name = nm, .description = desc, .unit = un, .scope = MI_KNOB_SCOPE_VARIANT, .type = ty, \
    .mutability = MI_KNOB_AT_PREPARE, .value_count = n, .values = {__VA_ARGS__},             \
    .default_int = dflt }
#define WG "work-items"

/* applies_to left NULL: the helper lists the variants whose knob_mask reads each knob. */
static const mi_sdk_knob_t k_knobs[K_COUNT] = {
    KNOB("wg_x", "work-group size along x (columns / elements)", WG, MI_KNOB_INT, 8, 11, 1, 2, 4,
         8, 16, 32, 64, 128, 256, 512, 1024),
    KNOB("wg_y", "work-group size along y (rows)", WG, MI_KNOB_INT, 8, 7, 1, 2, 4, 8, 16, 32, 64),
    KNOB("tile_m", "rows of C computed by one work-group", "", MI_KNOB_INT, 32, 8, 1, 2, 4, 8, 16,
         32, 64, 128),
    KNOB("tile_n", "columns of C computed by one work-group", "", MI_KNOB_INT, 32, 8, 1, 2, 4, 8,
         16, 32, 64, 128),
    KNOB("tile_k", "depth of the K slice staged per step", "", MI_KNOB_INT, 8, 7, 1, 2, 4, 8, 16,
         32, 64),
    KNOB("vector_width", "floatN width of B loads and accumulators", "", MI_KNOB_INT, 4, 4, 1, 2,
         4, 8),
    KNOB("use_local_memory", "stage tiles in __local memory", "", MI_KNOB_BOOL, 1, 0, 0),
    KNOB("unroll", "unroll hint of the innermost loop", "", MI_KNOB_INT, 1, 4, 1, 2, 4, 8),
    KNOB("oc_per_item", "output channels one work-item computes (tiled direct convolution)", "",
         MI_KNOB_INT, 4, 5, 1, 2, 4, 8, 16),
    KNOB("ow_per_item", "output columns one work-item computes (tiled direct convolutions)", "",
         MI_KNOB_INT, 4, 5, 1, 2, 4, 8, 16),
    KNOB("oh_per_item",
         "output rows one work-item computes (tiled depthwise convolution); floatN pixel "
         "vectors (conv.pw_vec)",
         "",
         MI_KNOB_INT, 2, 4, 1, 2, 4, 8),
};

static int32_t constraint_of(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                             mi_constraint_desc_t *out);

/* Constraints carry each device's limits, so the table answers them through the device. */
enum { C_WGY_TM,
       C_WGX_TN,
       C_WG_MAX,
       C_LOCAL,
       C_VW,
       C_REGS,
       C_TREGS,
       C_DREGS,
       C_COUNT };
const mi_sdk_tables_t mi__ocl_tables = {
    .knobs = k_knobs, .knob_count = K_COUNT, .variants = k_variants, .variant_count = sizeof k_variants / sizeof k_variants[0], .variant_size = sizeof k_variants[0], .constraint_count = C_COUNT, .constraint = constraint_of};

const ocl_variant_t *mi__ocl_variant_find(const char *id) {
  return (const ocl_variant_t *)mi_sdk_variant_find(&mi__ocl_tables, id);
}

/* The first listed for an op is its default. */
const ocl_variant_t *mi__ocl_variant_default(const char *op) {
  return (const ocl_variant_t *)mi_sdk_variant_first(&mi__ocl_tables, op);
}

/* ---------------------------------------------------------------- constraints */

#define MM2D                                                                                        \
  "conv.im2col_gemm,conv.implicit_gemm,conv.im2col_regblock,gemm.tiled,gemm.regblock,matmul.tiled," \
  "matmul.regblock"
#define TILEDV "conv.im2col_gemm,conv.implicit_gemm,gemm.tiled,matmul.tiled"
#define VECV "conv.im2col_regblock,gemm.regblock,matmul.regblock"
#define MAX_ACC 64

static int32_t constraint_of(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                             mi_constraint_desc_t *out) {
  return mi__ocl_constraint_desc(&ctx->devs[device], index, out);
}

/* The rules as data, in C_* order; a reason's %lld is the rule's value (the device's figure). */
static const struct {
  int32_t kind;
  const char *a, *b, *applies_to, *reason;
} k_rules[C_COUNT] = {
    [C_WGY_TM] = {MI_CONSTRAINT_DIVIDES, "wg_y", "tile_m", MM2D,
                  "wg_y must divide tile_m (each work-item computes tile_m/wg_y rows)"},
    [C_WGX_TN] = {MI_CONSTRAINT_DIVIDES, "wg_x", "tile_n", MM2D,
                  "wg_x must divide tile_n (each work-item computes tile_n/wg_x columns)"},
    [C_WG_MAX] = {MI_CONSTRAINT_PRODUCT_LE, "wg_x", "wg_y", NULL,
                  "work-group size wg_x*wg_y must not exceed CL_DEVICE_MAX_WORK_GROUP_SIZE (%lld)"},
    [C_LOCAL] = {MI_CONSTRAINT_CUSTOM, "tile_k", "use_local_memory", TILEDV,
                 "local memory (tile_m*tile_k + tile_k*tile_n)*4 bytes must fit "
                 "CL_DEVICE_LOCAL_MEM_SIZE (%lld bytes) when use_local_memory=1"},
    [C_VW] = {MI_CONSTRAINT_CUSTOM, "vector_width", "tile_n", VECV,
              "vector_width must divide tile_n/wg_x (the columns each work-item computes)"},
    [C_REGS] = {MI_CONSTRAINT_CUSTOM, "tile_m", "tile_n", MM2D,
                "accumulators per work-item (tile_m/wg_y)*(tile_n/wg_x) must be at most %lld"},
    [C_TREGS] = {MI_CONSTRAINT_PRODUCT_LE, "oc_per_item", "ow_per_item", "conv.tiled,conv.tiled_vec,conv.pw_vec",
                 "accumulators per work-item oc_per_item*ow_per_item must be at most %lld"},
    [C_DREGS] = {MI_CONSTRAINT_PRODUCT_LE, "oh_per_item", "ow_per_item", "conv.dw_tiled,conv.dw_vec,conv.pw_vec",
                 "accumulators per work-item oh_per_item*ow_per_item must be at most %lld"},
};

int32_t mi__ocl_constraint_desc(const ocl_device_t *dev, uint32_t i, mi_constraint_desc_t *out) {
  mi_constraint_desc_t d;
  int64_t value = i == C_WG_MAX                                 ? (int64_t)dev->max_wg
                  : i == C_LOCAL                                ? (int64_t)dev->local_mem
                  : i == C_REGS || i == C_TREGS || i == C_DREGS ? MAX_ACC
                                                                : 0;
  if (i >= C_COUNT) return MI_ERR_INVALID_ARGUMENT;
  mi_sdk_constraint_set(&d, k_rules[i].kind, k_rules[i].a, k_rules[i].b, k_rules[i].applies_to, value,
                        k_rules[i].reason, (long long)value);
  return mi_sdk_fill(out, &d, sizeof d);
}

static int listed(const char *list, const char *id) {
  size_t n = strlen(id);
  const char *p = list;
  if (!*list) return 1;
  while ((p = strstr(p, id)) != NULL) {
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    p += n;
  }
  return 0;
}

static int32_t check_rules(const ocl_device_t *dev, const ocl_variant_t *v, const int64_t *k,
                           mi_error_t *err) {
  uint32_t i;
  for (i = 0; i < C_COUNT; i++) {
    mi_constraint_desc_t c;
    int broken = 0;
    c.struct_size = sizeof c;
    mi__ocl_constraint_desc(dev, i, &c);
    if (!listed(c.applies_to, v->v.id)) continue;
    switch (i) {
    case C_WGY_TM: broken = k[K_TILE_M] % k[K_WG_Y] != 0; break;
    case C_WGX_TN: broken = k[K_TILE_N] % k[K_WG_X] != 0; break;
    case C_WG_MAX: broken = (uint64_t)(k[K_WG_X] * k[K_WG_Y]) > (uint64_t)dev->max_wg; break;
    case C_LOCAL:
      broken = k[K_LOCAL] &&
               (uint64_t)((k[K_TILE_M] + k[K_TILE_N]) * k[K_TILE_K] * 4) > dev->local_mem;
      break;
    case C_VW: broken = (k[K_TILE_N] / k[K_WG_X]) % k[K_VW] != 0; break;
    case C_REGS: broken = (k[K_TILE_M] / k[K_WG_Y]) * (k[K_TILE_N] / k[K_WG_X]) > MAX_ACC; break;
    case C_TREGS: broken = k[K_OCB] * k[K_OWB] > MAX_ACC; break;
    case C_DREGS: broken = k[K_OHB] * k[K_OWB] > MAX_ACC; break;
    default: break;
    }
    if (broken)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "%s: %s (wg_x=%lld wg_y=%lld tile_m=%lld tile_n=%lld tile_k=%lld "
                           "vector_width=%lld oc_per_item=%lld ow_per_item=%lld oh_per_item=%lld)",
                           v->v.id, c.reason, (long long)k[K_WG_X], (long long)k[K_WG_Y],
                           (long long)k[K_TILE_M], (long long)k[K_TILE_N], (long long)k[K_TILE_K],
                           (long long)k[K_VW], (long long)k[K_OCB], (long long)k[K_OWB],
                           (long long)k[K_OHB]);
  }
  return MI_OK;
}

int32_t mi__ocl_knobs_resolve(const ocl_device_t *dev, const ocl_variant_t *v,
                              const mi_knob_value_t *knobs, int32_t count, ocl_knobs_t *out,
                              mi_error_t *err) {
  int32_t i;
  memcpy(out->v, v->dflt, sizeof out->v);
  for (i = 0; i < count; i++) {
    const char *name = knobs[i].name;
    int found = mi_sdk_knob_index(&mi__ocl_tables, name);
    if (!name) return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: knob %d has no name", v->v.id, (int)i);
    if (found < 0)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: unknown knob '%s'", v->v.id, name);
    if (!(v->v.knob_mask & (1u << found))) continue; /* a knob this variant does not read */
    if (k_knobs[found].type == MI_KNOB_BOOL) {
      if (knobs[i].i != 0 && knobs[i].i != 1)
        return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: knob %s=%lld is not 0 or 1", v->v.id,
                             name, (long long)knobs[i].i);
    } else {
      if (!mi_sdk_knob_allows(&k_knobs[found], knobs[i].i))
        return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                             "%s: knob %s=%lld is outside its domain (powers of two %lld..%lld)",
                             v->v.id, name, (long long)knobs[i].i,
                             (long long)k_knobs[found].values[0],
                             (long long)k_knobs[found].values[k_knobs[found].value_count - 1]);
    }
    out->v[found] = knobs[i].i;
  }
  return check_rules(dev, v, out->v, err);
}
