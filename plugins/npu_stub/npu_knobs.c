/* npu_knobs.c - the NPU's knobs, constraints and variants as data, and the knob checker. */
#include "npu_internal.h"

#include <stdio.h>
#include <string.h>

#define B(k) (1u << (k))
#define ALL_KNOBS (B(NPU_KNOB_CORES) | B(NPU_KNOB_DVFS) | B(NPU_KNOB_DATAFLOW) | B(NPU_KNOB_TILE) | \
                   B(NPU_KNOB_OVERLAP) | B(NPU_KNOB_BATCH))
#define VEC_KNOBS (B(NPU_KNOB_CORES) | B(NPU_KNOB_DVFS) | B(NPU_KNOB_OVERLAP) | B(NPU_KNOB_BATCH))
/* Compute dtypes: FLOAT32 tensors are accepted but computed in FP16, so FP32 is not one. */
#define DT (MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) | MI_DTYPE_BIT(MI_DTYPE_FLOAT16))
#define LAYOUTS (MI_LAYOUT_BIT(MI_LAYOUT_NCHW) | MI_LAYOUT_BIT(MI_LAYOUT_ANY))
#define ACT (MI_FUSE_RELU | MI_FUSE_ACT)
#define MAC(id, op)                                                                           \
  { id, op, op " on the systolic MAC arrays, int32 accumulation; FLOAT32 runs as FP16",       \
    DT | MI_DTYPE_BIT(MI_DTYPE_INT4), LAYOUTS, MI_FUSE_BIAS | MI_FUSE_BN | ACT | MI_FUSE_ADD, \
    ALL_KNOBS, NULL }
#define VEC(id, op, fuse, note) \
  { id, op, op " on the vector unit" note "; FLOAT32 runs as FP16", DT, LAYOUTS, fuse, VEC_KNOBS, NULL }
#define QDQ(id, op)                                                                   \
  { id, op, op                                                                        \
    " on the vector unit: FLOAT32 <-> INT8/UINT8 codes in exact FP32 (half to even, " \
    "saturating)",                                                                    \
    DT, LAYOUTS, 0, VEC_KNOBS, NULL }

/* One variant per op, in enum npu_op order (the index is the op). */
static const mi_sdk_variant_t k_variants[NPU_OP_COUNT] = {
    MAC("npu.conv", "Conv"),
    MAC("npu.gemm", "Gemm"),
    MAC("npu.matmul", "MatMul"),
    VEC("npu.relu", "Relu", 0, ""),
    VEC("npu.clip", "Clip", 0, ""),
    VEC("npu.hardswish", "HardSwish", 0, ""),
    VEC("npu.hardsigmoid", "HardSigmoid", 0, ""),
    VEC("npu.sigmoid_lut", "Sigmoid", 0, " (256-entry lookup table in INT8)"),
    VEC("npu.add", "Add", ACT, ""),
    VEC("npu.mul", "Mul", 0, ""),
    VEC("npu.global_avgpool", "GlobalAveragePool", 0, ""),
    VEC("npu.avgpool", "AveragePool", 0, ""),
    VEC("npu.maxpool", "MaxPool", 0, ""),
    VEC("npu.batchnorm", "BatchNormalization", ACT, ""),
    VEC("npu.flatten", "Flatten", 0, ""),
    VEC("npu.reshape", "Reshape", 0, ""),
    VEC("npu.concat", "Concat", 0, ""),
    QDQ("npu.quantize", "QuantizeLinear"),
    QDQ("npu.dequantize", "DequantizeLinear"),
};

#define KNOB(nm, desc, un) .name = nm, .description = desc, .unit = un, .applies_to = ""
#define DEV .scope = MI_KNOB_SCOPE_DEVICE, .type = MI_KNOB_INT, .mutability = MI_KNOB_AT_RUN
#define OP(ty) .scope = MI_KNOB_SCOPE_OP, .type = ty, .mutability = MI_KNOB_AT_PREPARE

/* cores and dvfs_level take their range from the device file (npu__describe). */
static const mi_sdk_knob_t k_knobs[NPU_KNOB_COUNT] = {
    {KNOB("cores", "active NPU cores (idle cores are power-gated)", "cores"), DEV, .min = 1},
    {KNOB("dvfs_level", "DVFS operating point, index into the (MHz, V) table, low to high",
          "level"),
     DEV},
    {KNOB("dataflow", "systolic mapping: weights or output partial sums stay in the array", ""),
     OP(MI_KNOB_ENUM), .choices = "weight_stationary|output_stationary"},
    {KNOB("sram_tile",
          "output channels per SRAM tile (0 = largest that fits); must fit the core SRAM",
          "channels"),
     OP(MI_KNOB_INT), .value_count = 9, .values = {0, 16, 32, 64, 128, 256, 512, 1024, 2048}},
    {KNOB("dma_overlap", "double-buffer DMA with compute (halves the SRAM a tile may use)", ""),
     OP(MI_KNOB_BOOL), .default_int = 1},
    {KNOB("batch", "samples streamed per weight residency when the weights do not fit SRAM",
          "samples"),
     DEV, .value_count = 6, .values = {1, 2, 4, 8, 16, 32}, .default_int = 1},
};

static int32_t constraint(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_constraint_desc_t *out) {
  return npu__constraint_desc(&ctx->dev[device].spec, index, out);
}

static const mi_sdk_tables_t k_tables = {
    .knobs = k_knobs, .knob_count = NPU_KNOB_COUNT, .variants = k_variants, .variant_count = NPU_OP_COUNT, .constraint_count = 4, .constraint = constraint};

/* Every figure of this device comes from its model: every counter is modeled. */
static const mi_sdk_counter_t k_counters[] = {
    {"device_time", MI_COUNTER_TIMER, "ns", 1, 1},
    {"energy", MI_COUNTER_ENERGY, "J", 1e-12, 1},
    {"power", MI_COUNTER_POWER, "W", 1e-6, 1},
    {"frequency", MI_COUNTER_FREQUENCY, "MHz", 1, 1},
    {"temperature", MI_COUNTER_TEMPERATURE, "C", 0.01, 1},
    {"sim_clock", MI_COUNTER_OTHER, "s", 1e-9, 1},
};

void npu__describe(npu_device_t *d) {
  memcpy(d->knobs, k_knobs, sizeof k_knobs);
  d->knobs[NPU_KNOB_CORES].max = d->knobs[NPU_KNOB_CORES].default_int = d->spec.cores;
  d->knobs[NPU_KNOB_DVFS].max = d->knobs[NPU_KNOB_DVFS].default_int = d->spec.level_count - 1;
  d->tables = k_tables;
  d->tables.knobs = d->knobs;
  d->tables.counters = k_counters;
  d->tables.counter_count = (uint32_t)(sizeof k_counters / sizeof k_counters[0]);
}

int npu__op_from_name(const char *op_type) {
  const mi_sdk_variant_t *v = mi_sdk_variant_first(&k_tables, op_type);
  return v ? (int)(v - k_variants) : -1;
}

int npu__variant_op(const char *variant_id) {
  const mi_sdk_variant_t *v = mi_sdk_variant_find(&k_tables, variant_id);
  return v ? (int)(v - k_variants) : -1;
}

int32_t npu__constraint_desc(const npu_spec_t *s, uint32_t index, mi_constraint_desc_t *out) {
  mi_constraint_desc_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  switch (index) {
  case 0:
    c.kind = MI_CONSTRAINT_LESS_EQUAL;
    snprintf(c.a, sizeof c.a, "cores");
    c.value = s->cores;
    snprintf(c.reason, sizeof c.reason, "cores must not exceed the %d cores of %s", s->cores,
             s->name);
    break;
  case 1:
    c.kind = MI_CONSTRAINT_LESS_EQUAL;
    snprintf(c.a, sizeof c.a, "dvfs_level");
    c.value = s->level_count - 1;
    snprintf(c.reason, sizeof c.reason, "dvfs_level must index the %d-entry DVFS table",
             s->level_count);
    break;
  case 2:
    c.kind = MI_CONSTRAINT_IMPLIES;
    snprintf(c.a, sizeof c.a, "dataflow");
    snprintf(c.b, sizeof c.b, "dma_overlap");
    c.value = NPU_DATAFLOW_OS;
    c.value2 = 1;
    snprintf(c.reason, sizeof c.reason,
             "output_stationary streams weights every pixel block: the DMA needs double "
             "buffering (dma_overlap=1)");
    break;
  case 3:
    c.kind = MI_CONSTRAINT_CUSTOM;
    snprintf(c.a, sizeof c.a, "sram_tile");
    snprintf(c.b, sizeof c.b, "dma_overlap");
    snprintf(c.reason, sizeof c.reason,
             "a tile's weights plus one input band and its output band (x2 with dma_overlap) "
             "must fit the core SRAM; layer-dependent, checked at prepare");
    break;
  default:
    return MI_ERR_INVALID_ARGUMENT;
  }
  return mi_sdk_fill(out, &c, sizeof c);
}

int32_t npu__check_knobs(const npu_spec_t *s, const char *variant_id,
                         const mi_knob_value_t *knobs, int32_t count, int64_t vals[NPU_KNOB_COUNT],
                         uint32_t given[1], mi_error_t *err) {
  int32_t i, j;
  vals[NPU_KNOB_CORES] = s->cores;
  vals[NPU_KNOB_DVFS] = s->level_count - 1;
  vals[NPU_KNOB_DATAFLOW] = NPU_DATAFLOW_WS;
  vals[NPU_KNOB_TILE] = 0;
  vals[NPU_KNOB_OVERLAP] = 1;
  vals[NPU_KNOB_BATCH] = 1;
  given[0] = 0;
  if (variant_id && variant_id[0] && npu__variant_op(variant_id) < 0)
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "npu-stub: unknown variant '%.60s'", variant_id);
  for (i = 0; i < count; i++) {
    const char *name = knobs[i].name ? knobs[i].name : "";
    int64_t v = knobs[i].i;
    if ((j = mi_sdk_knob_index(&k_tables, name)) < 0)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "npu-stub: unknown knob '%.60s'", name);
    if (j == NPU_KNOB_CORES && (v < 1 || v > s->cores))
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "npu-stub: cores=%lld breaks 1 <= cores <= %d (%s has %d cores)",
                           (long long)v, s->cores, s->name, s->cores);
    if (j == NPU_KNOB_DVFS && (v < 0 || v >= s->level_count))
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "npu-stub: dvfs_level=%lld breaks 0 <= dvfs_level <= %d (DVFS table of %s)",
                           (long long)v, s->level_count - 1, s->name);
    if (j != NPU_KNOB_CORES && j != NPU_KNOB_DVFS && !mi_sdk_knob_allows(&k_knobs[j], v))
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "npu-stub: %s=%lld is outside its domain",
                           name, (long long)v);
    vals[j] = v;
    given[0] |= 1u << j;
  }
  if (vals[NPU_KNOB_DATAFLOW] == NPU_DATAFLOW_OS && vals[NPU_KNOB_OVERLAP] != 1)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "npu-stub: dataflow=output_stationary implies dma_overlap=1 (weights "
                        "are streamed every pixel block and need double buffering)");
  return MI_OK;
}
