/* npu_knobs.c - the NPU's knobs, constraints and variants as data, and the knob checker. */
#include "npu_internal.h"

#include <stdio.h>
#include <string.h>

static const char *const OP_NAMES[NPU_OP_COUNT] = {
    "Conv", "Gemm", "MatMul", "Relu", "Clip", "HardSwish", "HardSigmoid", "Sigmoid", "Add", "Mul",
    "GlobalAveragePool", "AveragePool", "MaxPool", "BatchNormalization", "Flatten", "Reshape",
    "Concat", "QuantizeLinear", "DequantizeLinear"};

static const char *const VARIANT_IDS[NPU_OP_COUNT] = {
    "npu.conv", "npu.gemm", "npu.matmul", "npu.relu", "npu.clip", "npu.hardswish",
    "npu.hardsigmoid", "npu.sigmoid_lut", "npu.add", "npu.mul", "npu.global_avgpool",
    "npu.avgpool", "npu.maxpool", "npu.batchnorm", "npu.flatten", "npu.reshape", "npu.concat",
    "npu.quantize", "npu.dequantize"};

static const char *const KNOB_NAMES[NPU_KNOB_COUNT] = {"cores",    "dvfs_level", "dataflow",
                                                       "sram_tile", "dma_overlap", "batch"};

static const int64_t TILE_VALUES[] = {0, 16, 32, 64, 128, 256, 512, 1024, 2048};
static const int64_t BATCH_VALUES[] = {1, 2, 4, 8, 16, 32};

int npu__op_from_name(const char *op_type) {
  int i;
  for (i = 0; op_type && i < NPU_OP_COUNT; i++)
    if (strcmp(op_type, OP_NAMES[i]) == 0) return i;
  return -1;
}

int npu__variant_op(const char *variant_id) {
  int i;
  for (i = 0; variant_id && i < NPU_OP_COUNT; i++)
    if (strcmp(variant_id, VARIANT_IDS[i]) == 0) return i;
  return -1;
}

int32_t npu__variant_count(void) { return NPU_OP_COUNT; }

static int is_mac(int op) { return op == NPU_CONV || op == NPU_GEMM || op == NPU_MATMUL; }

int32_t npu__variant_desc(uint32_t index, mi_variant_desc_t *out) {
  mi_variant_desc_t v;
  int op = (int)index;
  if (index >= NPU_OP_COUNT) return MI_ERR_INVALID_ARGUMENT;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  snprintf(v.id, sizeof v.id, "%s", VARIANT_IDS[op]);
  snprintf(v.op_type, sizeof v.op_type, "%s", OP_NAMES[op]);
  /* compute dtypes: FLOAT32 tensors are accepted but computed in FP16, so FP32 is not one */
  v.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8) |
                 MI_DTYPE_BIT(MI_DTYPE_FLOAT16);
  v.layout_mask = MI_LAYOUT_BIT(MI_LAYOUT_NCHW) | MI_LAYOUT_BIT(MI_LAYOUT_ANY);
  if (is_mac(op)) {
    v.dtype_mask |= MI_DTYPE_BIT(MI_DTYPE_INT4);
    v.fuse_mask = MI_FUSE_BIAS | MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD;
    snprintf(v.description, sizeof v.description,
             "%s on the systolic MAC arrays, int32 accumulation; FLOAT32 runs as FP16",
             OP_NAMES[op]);
    snprintf(v.knobs, sizeof v.knobs, "cores,dvfs_level,dataflow,sram_tile,dma_overlap,batch");
  } else {
    v.fuse_mask = (op == NPU_BN || op == NPU_ADD) ? (MI_FUSE_RELU | MI_FUSE_ACT) : 0;
    if (op == NPU_QUANT || op == NPU_DEQUANT)
      snprintf(v.description, sizeof v.description,
               "%s on the vector unit: FLOAT32 <-> INT8/UINT8 codes in exact FP32 (half to "
               "even, saturating)", OP_NAMES[op]);
    else
      snprintf(v.description, sizeof v.description, "%s on the vector unit%s; FLOAT32 runs as FP16", OP_NAMES[op],
             op == NPU_SIGMOID ? " (256-entry lookup table in INT8)" : "");
    snprintf(v.knobs, sizeof v.knobs, "cores,dvfs_level,dma_overlap,batch");
  }
  return mi_sdk_fill(out, &v, sizeof v);
}

int32_t npu__knob_desc(const npu_spec_t *s, uint32_t index, mi_knob_desc_t *out) {
  mi_knob_desc_t k;
  size_t i;
  if (index >= NPU_KNOB_COUNT) return MI_ERR_INVALID_ARGUMENT;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  snprintf(k.name, sizeof k.name, "%s", KNOB_NAMES[index]);
  k.step = 1;
  switch (index) {
  case NPU_KNOB_CORES:
    snprintf(k.description, sizeof k.description, "active NPU cores (idle cores are power-gated)");
    snprintf(k.unit, sizeof k.unit, "cores");
    k.scope = MI_KNOB_SCOPE_DEVICE;
    k.type = MI_KNOB_INT;
    k.mutability = MI_KNOB_AT_RUN;
    k.min = 1;
    k.max = s->cores;
    k.default_int = s->cores;
    break;
  case NPU_KNOB_DVFS:
    snprintf(k.description, sizeof k.description,
             "DVFS operating point, index into the (MHz, V) table, low to high");
    snprintf(k.unit, sizeof k.unit, "level");
    k.scope = MI_KNOB_SCOPE_DEVICE;
    k.type = MI_KNOB_INT;
    k.mutability = MI_KNOB_AT_RUN;
    k.min = 0;
    k.max = s->level_count - 1;
    k.default_int = s->level_count - 1;
    break;
  case NPU_KNOB_DATAFLOW:
    snprintf(k.description, sizeof k.description,
             "systolic mapping: weights or output partial sums stay in the array");
    k.scope = MI_KNOB_SCOPE_OP;
    k.type = MI_KNOB_ENUM;
    k.mutability = MI_KNOB_AT_PREPARE;
    snprintf(k.choices, sizeof k.choices, "weight_stationary|output_stationary");
    k.min = 0;
    k.max = 1;
    break;
  case NPU_KNOB_TILE:
    snprintf(k.description, sizeof k.description,
             "output channels per SRAM tile (0 = largest that fits); must fit the core SRAM");
    snprintf(k.unit, sizeof k.unit, "channels");
    k.scope = MI_KNOB_SCOPE_OP;
    k.type = MI_KNOB_INT;
    k.mutability = MI_KNOB_AT_PREPARE;
    k.value_count = (uint32_t)(sizeof TILE_VALUES / sizeof TILE_VALUES[0]);
    for (i = 0; i < k.value_count; i++) k.values[i] = TILE_VALUES[i];
    k.min = 0;
    k.max = TILE_VALUES[k.value_count - 1];
    break;
  case NPU_KNOB_OVERLAP:
    snprintf(k.description, sizeof k.description,
             "double-buffer DMA with compute (halves the SRAM a tile may use)");
    k.scope = MI_KNOB_SCOPE_OP;
    k.type = MI_KNOB_BOOL;
    k.mutability = MI_KNOB_AT_PREPARE;
    k.min = 0;
    k.max = 1;
    k.default_int = 1;
    break;
  default:
    snprintf(k.description, sizeof k.description,
             "samples streamed per weight residency when the weights do not fit SRAM");
    snprintf(k.unit, sizeof k.unit, "samples");
    k.scope = MI_KNOB_SCOPE_DEVICE;
    k.type = MI_KNOB_INT;
    k.mutability = MI_KNOB_AT_RUN;
    k.value_count = (uint32_t)(sizeof BATCH_VALUES / sizeof BATCH_VALUES[0]);
    for (i = 0; i < k.value_count; i++) k.values[i] = BATCH_VALUES[i];
    k.min = 1;
    k.max = BATCH_VALUES[k.value_count - 1];
    k.default_int = 1;
    break;
  }
  return mi_sdk_fill(out, &k, sizeof k);
}

int32_t npu__constraint_count(void) { return 4; }

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

static int in_values(int64_t v, const int64_t *vals, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (vals[i] == v) return 1;
  return 0;
}

int32_t npu__check_knobs(const npu_spec_t *s, const char *variant_id,
                         const mi_knob_value_t *knobs, int32_t count, int64_t vals[NPU_KNOB_COUNT],
                         uint32_t given[1], mi_error_t *err) {
  char msg[MI_ERROR_MESSAGE_SIZE];
  int32_t i;
  int j;
  vals[NPU_KNOB_CORES] = s->cores;
  vals[NPU_KNOB_DVFS] = s->level_count - 1;
  vals[NPU_KNOB_DATAFLOW] = NPU_DATAFLOW_WS;
  vals[NPU_KNOB_TILE] = 0;
  vals[NPU_KNOB_OVERLAP] = 1;
  vals[NPU_KNOB_BATCH] = 1;
  given[0] = 0;
  if (variant_id && variant_id[0] && npu__variant_op(variant_id) < 0) {
    snprintf(msg, sizeof msg, "npu-stub: unknown variant '%.60s'", variant_id);
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, msg);
  }
  for (i = 0; i < count; i++) {
    const char *name = knobs[i].name ? knobs[i].name : "";
    int64_t v = knobs[i].i;
    int bad = 0;
    for (j = 0; j < NPU_KNOB_COUNT; j++)
      if (strcmp(name, KNOB_NAMES[j]) == 0) break;
    if (j == NPU_KNOB_COUNT) {
      snprintf(msg, sizeof msg, "npu-stub: unknown knob '%.60s'", name);
      return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, msg);
    }
    switch (j) {
    case NPU_KNOB_CORES:
      bad = v < 1 || v > s->cores;
      break;
    case NPU_KNOB_DVFS:
      bad = v < 0 || v >= s->level_count;
      break;
    case NPU_KNOB_DATAFLOW:
    case NPU_KNOB_OVERLAP:
      bad = v < 0 || v > 1;
      break;
    case NPU_KNOB_TILE:
      bad = !in_values(v, TILE_VALUES, sizeof TILE_VALUES / sizeof TILE_VALUES[0]);
      break;
    default:
      bad = !in_values(v, BATCH_VALUES, sizeof BATCH_VALUES / sizeof BATCH_VALUES[0]);
      break;
    }
    if (bad) {
      if (j == NPU_KNOB_CORES)
        snprintf(msg, sizeof msg, "npu-stub: cores=%lld breaks 1 <= cores <= %d (%s has %d cores)",
                 (long long)v, s->cores, s->name, s->cores);
      else if (j == NPU_KNOB_DVFS)
        snprintf(msg, sizeof msg,
                 "npu-stub: dvfs_level=%lld breaks 0 <= dvfs_level <= %d (DVFS table of %s)",
                 (long long)v, s->level_count - 1, s->name);
      else
        snprintf(msg, sizeof msg, "npu-stub: %s=%lld is outside its domain", KNOB_NAMES[j],
                 (long long)v);
      return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, msg);
    }
    vals[j] = v;
    given[0] |= 1u << j;
  }
  if (vals[NPU_KNOB_DATAFLOW] == NPU_DATAFLOW_OS && vals[NPU_KNOB_OVERLAP] != 1)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG,
                        "npu-stub: dataflow=output_stationary implies dma_overlap=1 (weights "
                        "are streamed every pixel block and need double buffering)");
  return MI_OK;
}
