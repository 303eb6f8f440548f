/* blis_plugin.c - the blis-cpu entry point: instance, descriptions, knobs, counters, buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blis_qgemm.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)
#define NCHW (MI_LAYOUT_BIT(MI_LAYOUT_NCHW) | MI_LAYOUT_BIT(MI_LAYOUT_ANY))
#define EPI (MI_FUSE_BIAS | MI_FUSE_BN | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD)

const mi__blis_variant_t mi__blis_variants[] = {
    {"conv.im2col_gemm", "Conv",
     "im2col + BLIS sgemm, fused epilogue; INT8 codes: int32 GEMM, a QDQ depthwise-separable block in one pass",
     NCHW, EPI | MI_FUSE_CONV,
     "threads,arch,im2col_block,int8_dot"},
    {"conv.1x1_gemm", "Conv", "pointwise conv (1x1, stride 1, pad 0) as one BLIS sgemm", NCHW, EPI,
     "threads,arch"},
    {"conv.packed_gemm", "Conv",
     "weights packed at prepare, register-blocked SIMD GEMM on the input (1x1) or im2col columns, "
     "epilogue in registers",
     NCHW, EPI, "threads,simd,im2col_block"},
    /* listed only where the CPU has F16C (see listed()) */
    {"conv.packed_gemm_fp16", "Conv",
     "conv.packed_gemm with the weight panels stored as IEEE half (F16C), converted to float per "
     "k block in the tiles; FP32 activations and sums",
     NCHW, EPI, "threads,simd,im2col_block"},
    /* listed only where the CPU has AVX512_BF16 (see listed()) */
    {"conv.packed_gemm_bf16", "Conv",
     "conv.packed_gemm's AVX-512 tiles in BF16 compute (AVX512_BF16 vdpbf16ps): weights packed as BF16 "
     "pairs along k, each pixel block of the input rounded to BF16 once, FP32 sums, epilogue unchanged",
     NCHW, EPI, "threads,im2col_block"},
    {"conv.winograd", "Conv",
     "dense 3x3 stride-1 conv as Winograd F(4x4,3x3): weights transformed and packed at prepare, "
     "36 tile GEMMs on conv.packed_gemm's tiles, epilogue on the output rows",
     NCHW, EPI, "threads,simd"},
    {"conv.winograd1d", "Conv",
     "dense 1-D conv (or 1xK on 2-D) of any stride as Winograd F(m, r) on its polyphase split: weights "
     "transformed and packed at prepare, m + r - 1 tile GEMMs on conv.packed_gemm's tiles, epilogue on the "
     "output rows",
     NCHW, EPI, "threads,simd"},
    {"conv.depthwise_direct", "Conv",
     "direct depthwise conv (group == C), fused epilogue; with a pointwise conv after it, both in "
     "one pass over bands of rows",
     NCHW, EPI | MI_FUSE_CONV | MI_FUSE_MEMBER_CHOICES, "simd"},
    {"conv.direct_nhwc", "Conv", "direct conv on NHWC (converts NCHW inputs), oc-blocked", NCHW | MI_LAYOUT_BIT(MI_LAYOUT_NHWC), EPI,
     "oc_block"},
    {"convtranspose.gemm_col2im", "ConvTranspose", "BLIS sgemm + col2im", NCHW, EPI,
     "threads,arch"},
    {"gemm.blis", "Gemm",
     "BLIS sgemm with transA/transB/alpha/beta; constant B packed once for register-blocked tiles; "
     "-> Add (bias) [-> activation] [-> residual Add] fused into them",
     NCHW, MI_FUSE_BIAS | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD | MI_FUSE_NORM | MI_FUSE_DQ, "threads,arch,int8_dot,simd"},
    {"matmul.blis", "MatMul",
     "batched GEMM with numpy broadcasting: register-blocked tiles on B packed once (constant) or per "
     "call (small runtime B), else BLIS sgemm; constant B: -> Add (bias) [-> activation] [-> residual Add] fused into the tiles; "
     "a Transpose and scalar Muls feeding the operands read as strides and alpha",
     NCHW, MI_FUSE_BIAS | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD | MI_FUSE_NORM | MI_FUSE_TRANSPOSE | MI_FUSE_DQ,
     "threads,arch,int8_dot,simd"},
    /* listed only where the CPU has AVX512_BF16 (see listed()) */
    {"gemm.packed_bf16", "Gemm",
     "BF16 compute on a constant B (AVX512_BF16 vdpbf16ps): B packed once as BF16 pairs along k, A rounded "
     "to BF16 per call (transA as strides), FP32 sums; alpha, bias and the fused tail in FP32",
     NCHW, MI_FUSE_BIAS | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD | MI_FUSE_NORM, "threads"},
    {"matmul.packed_bf16", "MatMul",
     "BF16 compute on a constant 2-D B (AVX512_BF16 vdpbf16ps): B packed once as BF16 pairs along k, A's "
     "rows (any batch dims) rounded to BF16 per call, FP32 sums; bias and the fused tail in FP32",
     NCHW, MI_FUSE_BIAS | MI_FUSE_RELU | MI_FUSE_ACT | MI_FUSE_ADD | MI_FUSE_NORM, "threads"},
};
const int32_t mi__blis_variant_n = (int32_t)(sizeof mi__blis_variants / sizeof mi__blis_variants[0]);

/* Ops run by one plain loop each; they get the id "<op lower-case>.direct" at describe time. */
static const char *const direct_ops[] = {
    "BatchNormalization", "Relu", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Sigmoid",
    "Tanh", "Erf", "Gelu", "Elu", "Softplus", "Floor", "Ceil", "Sqrt", "Log", "Exp", "Neg", "Abs",
    "Selu", "Celu", "Softsign", "Mish", "ThresholdedRelu", "Shrink",
    "Cos", "Sin", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "LRN", "STFT", "DFT",
    "Reciprocal", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Softmax",
    "LayerNormalization", "GlobalAveragePool", "GlobalMaxPool", "MaxPool", "AveragePool",
    "Concat", "Reshape", "Flatten", "Transpose", "ReduceMean", "ReduceMax", "ReduceMin",
    "ReduceSum", "Squeeze", "Unsqueeze", "Slice", "Identity", "Dropout", "QuantizeLinear",
    "DequantizeLinear", "Resize", "Upsample", "Cast", "PRelu", "Pad", "Split", "Expand", "Tile",
    "Gather", "DepthToSpace", "SpaceToDepth", "LogSoftmax", "InstanceNormalization", "Sum", "Mean",
    "Round", "Sign", "ReduceProd", "ReduceL2", "ReduceLogSumExp", "CumSum",
    "Trilu", "Mod", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger",
    "DynamicQuantizeLinear", "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool", "LSTM",
    "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat", "QLinearSoftmax", "QGemm", "QLinearAveragePool", "QLinearWhere",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
    "GRU", "RNN", "RMSNormalization",
    "GroupNormalization", "MeanVarianceNormalization", "LpNormalization",
    "ReduceL1", "ReduceSumSquare", "ReduceLogSum", "CastLike",
    "GatherND", "ScatterElements", "Hardmax", "OneHot", "LpPool", "GlobalLpPool", "DeformConv", "Col2Im",
    "NonMaxSuppression", "GridSample", "RoiAlign", "TopK", "Compress", "ReverseSequence", "ArgMax", "ArgMin",
    "GatherElements", "CenterCropPad", "EyeLike", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift",
    "Det", "MaxRoiPool"};
#define DIRECT_N ((int32_t)(sizeof direct_ops / sizeof direct_ops[0]))

const mi__blis_variant_t *mi__blis_find_variant(const char *id) {
  int32_t i;
  for (i = 0; i < mi__blis_variant_n; i++)
    if (strcmp(mi__blis_variants[i].id, id) == 0) return &mi__blis_variants[i];
  return NULL;
}

enum { KNOB_THREADS,
       KNOB_ARCH,
       KNOB_IM2COL,
       KNOB_OCB,
       KNOB_SIMD,
       KNOB_QDOT,
       KNOB_N };
/* applies_to NULL reads as "" (all): the helper's tables hold no variants for blis-cpu. */
#define KNOB(nm, desc, un, sc, ty) .name = nm, .description = desc, .unit = un, .scope = sc, .type = ty
#define PREP .mutability = MI_KNOB_AT_PREPARE

/* The knobs; create() fills in the CPU's core count and enum choices. */
static const mi_sdk_knob_t k_knobs[KNOB_N] = {
    {KNOB("threads", "threads per call: BLIS (through rntm) and the plugin's own loops",
          "threads", MI_KNOB_SCOPE_DEVICE, MI_KNOB_INT),
     .mutability = MI_KNOB_AT_RUN, .min = 1},
    {KNOB("arch", "BLIS kernel set: auto = best this CPU supports, blis = BLIS's own detection",
          "", MI_KNOB_SCOPE_OP, MI_KNOB_ENUM),
     PREP},
    {KNOB("im2col_block", "output pixels per im2col chunk (0 = whole image)", "pixels",
          MI_KNOB_SCOPE_VARIANT, MI_KNOB_INT),
     PREP, .value_count = 5, .values = {0, 256, 1024, 4096, 16384},
     .applies_to = "conv.im2col_gemm,conv.packed_gemm,conv.packed_gemm_fp16,conv.packed_gemm_bf16"},
    {KNOB("oc_block", "output channels accumulated per pass", "channels", MI_KNOB_SCOPE_VARIANT,
          MI_KNOB_INT),
     PREP, .value_count = 4, .values = {8, 16, 32, 64}, .default_int = 32,
     .applies_to = "conv.direct_nhwc"},
    /* applies_to left empty (all): the list would pass its 127 characters, and a variant reads
     * the knob only when its own knob list names it (conv.packed_gemm, conv.packed_gemm_fp16,
     * conv.depthwise_direct, gemm.blis and matmul.blis on constant weights, and the exp/erf
     * activations). */
    {KNOB("simd",
          "SIMD code path of the conv kernels and exp/erf activations: auto = the fastest measured on this CPU",
          "", MI_KNOB_SCOPE_VARIANT, MI_KNOB_ENUM),
     PREP},
    {KNOB("int8_dot",
          "int16 pair products of the INT8 layers: vpdpwssd (VNNI), vpmaddwd (AVX-512/AVX2) or C",
          "", MI_KNOB_SCOPE_VARIANT, MI_KNOB_ENUM),
     PREP, .applies_to = "conv.im2col_gemm,gemm.blis,matmul.blis"},
};

/* Counters: a run timer, the peak of the plugin's own allocations since the counter's last reading
 * (a reading starts the next interval at the bytes in use then, so a worker's later measurements
 * do not report an earlier one's peak), and the DynamicQuantizeLinear ranges taken from the kernel
 * that wrote the floats (min/max passes saved, cumulative); no energy. */
static const mi_sdk_counter_t k_counters[MI__BLIS_COUNTER_N] = {
    {"run_time", MI_COUNTER_TIMER, "ns", 1.0, 0},
    {"peak_alloc_bytes", MI_COUNTER_MEMORY, "bytes", 1.0, 0},
    {"ranges_reused", MI_COUNTER_OTHER, "count", 1.0, 0},
};

/* The one constraint: threads within the online cores. */
static int32_t constraint(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                          mi_constraint_desc_t *out) {
  mi_constraint_desc_t c;
  (void)device;
  (void)index;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.kind = MI_CONSTRAINT_LESS_EQUAL;
  snprintf(c.a, sizeof c.a, "threads");
  c.value = ctx->cpu.cores;
  snprintf(c.reason, sizeof c.reason, "threads must not exceed the %u online cores", ctx->cpu.cores);
  return mi_sdk_fill(out, &c, sizeof c);
}

/* The description tables with this CPU's figures. */
static void describe(mi_plugin_ctx_t *ctx) {
  struct timespec res;
  memcpy(ctx->knobs, k_knobs, sizeof k_knobs);
  ctx->knobs[KNOB_THREADS].max = ctx->knobs[KNOB_THREADS].default_int = ctx->cpu.cores;
  ctx->knobs[KNOB_ARCH].choices = ctx->arch_choices;
  ctx->knobs[KNOB_SIMD].choices = ctx->simd_choices;
  ctx->knobs[KNOB_QDOT].choices = ctx->qdot_choices;
  memcpy(ctx->counters, k_counters, sizeof k_counters);
  if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
    ctx->counters[0].resolution = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
  ctx->tables.knobs = ctx->knobs;
  ctx->tables.knob_count = KNOB_N;
  ctx->tables.counters = ctx->counters;
  ctx->tables.counter_count = MI__BLIS_COUNTER_N;
  ctx->tables.constraint_count = 1;
  ctx->tables.constraint = constraint;
  ctx->sdk.name = "blis-cpu";
  ctx->sdk.device_count = 1;
  ctx->sdk.no_device_code = MI_ERR_NOT_FOUND;
  ctx->sdk.tables = &ctx->tables;
}

static int32_t create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  mi_plugin_ctx_t *ctx;
  int32_t a;
  size_t off = 0;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu create: out is NULL");
  *out = NULL;
  ctx = calloc(1, sizeof *ctx);
  if (!ctx) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu create: out of memory");
  ctx->host = host;
  mi__blis_probe_cpu(&ctx->cpu);
  ctx->threads = (int32_t)ctx->cpu.cores;
  ctx->arch = MI__ARCH_AUTO;
  for (a = 0; a < MI__ARCH_COUNT; a++) {
    if (!mi__blis_arch_supported(&ctx->cpu, a)) continue;
    ctx->arch_ids[ctx->arch_n++] = a;
    off += (size_t)snprintf(ctx->arch_choices + off, sizeof ctx->arch_choices - off, "%s%s",
                            off ? "|" : "", mi__blis_arch_name(a));
  }
  {
    /* knob `simd`: auto (the widest), then every code path this CPU runs, widest first */
    static const char *const names[] = {"c", "avx2", "avx512"};
    int32_t top = mi__blis_simd_level(ctx->cpu.isa), l;
    off = (size_t)snprintf(ctx->simd_choices, sizeof ctx->simd_choices, "auto");
    ctx->simd_ids[ctx->simd_n++] = top;
    for (l = top; l >= MI__SIMD_C; l--) {
      ctx->simd_ids[ctx->simd_n++] = l;
      off += (size_t)snprintf(ctx->simd_choices + off, sizeof ctx->simd_choices - off, "|%s", names[l]);
    }
  }
  {
    /* knob `int8_dot`: auto, then every pair-dot path this CPU runs, widest first */
    static const char *const names[] = {"c", "avx2_madd", "avx512_madd", "avx512_vnni", "avx512_u8", "amx_u8"};
    int32_t top = mi__blis_qdot_level(ctx->cpu.isa, mi__blis_simd_level(ctx->cpu.isa)), l;
    off = (size_t)snprintf(ctx->qdot_choices, sizeof ctx->qdot_choices, "auto");
    ctx->qdot_ids[ctx->qdot_n++] = top;
    for (l = top; l >= MI__QDOT_C; l--) {
      ctx->qdot_ids[ctx->qdot_n++] = l;
      off += (size_t)snprintf(ctx->qdot_choices + off, sizeof ctx->qdot_choices - off, "|%s", names[l]);
    }
  }
  describe(ctx);
  atomic_init(&ctx->cur_bytes, 0);
  atomic_init(&ctx->peak_bytes, 0);
  atomic_init(&ctx->gemm_used, 0);
  atomic_init(&ctx->total_run_ns, 0);
  ctx->pool = mi__blis_pool_create((int32_t)ctx->cpu.cores);
  if (!ctx->pool) {
    free(ctx);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu create: out of memory");
  }
  *out = ctx;
  return MI_OK;
}

static void destroy(mi_plugin_ctx_t *ctx) {
  if (!ctx) return;
  mi__blis_pool_destroy(ctx->pool);
  mi__blis_cntx_release(ctx);
  free(ctx);
}

static int32_t check_dev(mi_plugin_ctx_t *ctx, uint32_t device, mi_error_t *err) {
  return mi_sdk_check_device(ctx, device, ctx, err);
}

static int32_t device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                           mi_error_t *err) {
  mi_device_desc_t d;
  int32_t rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu device_info: out is NULL");
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kind = MI_DEVICE_CPU;
  snprintf(d.name, sizeof d.name, "pthread-%.110s", ctx->cpu.model);
  snprintf(d.vendor, sizeof d.vendor, "%s", strstr(ctx->cpu.model, "AMD") ? "AMD" : strstr(ctx->cpu.model, "Intel") ? "Intel"
                                                                                                                    : "unknown");
  snprintf(d.driver_version, sizeof d.driver_version, "blis-0.9.0-pthread-static");
  snprintf(d.isa, sizeof d.isa, "x86_64%s%s%s%s%s", (ctx->cpu.isa & MI__ISA_AVX2) ? "-avx2" : "",
           (ctx->cpu.isa & MI__ISA_FMA) ? "-fma" : "", (ctx->cpu.isa & MI__ISA_F16C) ? "-f16c" : "",
           (ctx->cpu.isa & MI__ISA_AVX512F) ? "-avx512f" : "",
           (ctx->cpu.isa & MI__ISA_AVX512VNNI) ? "-avx512vnni" : "");
  d.global_memory_bytes = ctx->cpu.memory_bytes;
  d.local_memory_bytes = ctx->cpu.l2_bytes;
  d.cache_bytes = ctx->cpu.l3_bytes ? ctx->cpu.l3_bytes : ctx->cpu.l2_bytes;
  d.compute_units = ctx->cpu.cores;
  d.max_threads = ctx->cpu.cores;
  d.dtype_mask = F32;
  d.layout_mask = NCHW | MI_LAYOUT_BIT(MI_LAYOUT_NHWC);
  d.channel_alignment = (ctx->cpu.isa & MI__ISA_AVX512F) ? 16 : 8;
  d.buffer_alignment = 64;
  /* Peak is left 0 (unknown): the benchmark measures it rather than the plugin guessing. */
  return mi_sdk_fill(out, &d, sizeof d);
}

/* The BF16-compute variants: declared BFLOAT16 alone (not FP32-exact). */
static int bf16_id(const char *id) {
  return !strcmp(id, "conv.packed_gemm_bf16") || !strcmp(id, "gemm.packed_bf16") || !strcmp(id, "matmul.packed_bf16");
}

/* Whether this CPU lists table variant v: conv.packed_gemm_fp16 only with F16C, the BF16 ones
 * only with AVX512_BF16 (and AVX-512 BW/VL/DQ, after MI_BLIS_MAX_SIMD's cap). */
static int listed(const mi_plugin_ctx_t *ctx, const mi__blis_variant_t *v) {
  if (bf16_id(v->id))
    return (ctx->cpu.isa & MI__ISA_AVX512BF16) && (ctx->cpu.isa & MI__ISA_AVX512DQBWVL);
  return (ctx->cpu.isa & MI__ISA_F16C) || strcmp(v->id, "conv.packed_gemm_fp16") != 0;
}

static int32_t table_n(const mi_plugin_ctx_t *ctx) {
  int32_t i, n = 0;
  for (i = 0; i < mi__blis_variant_n; i++) n += listed(ctx, &mi__blis_variants[i]);
  return n;
}

/* The index-th listed table variant. */
static const mi__blis_variant_t *table_at(const mi_plugin_ctx_t *ctx, uint32_t index) {
  int32_t i;
  for (i = 0; i < mi__blis_variant_n; i++)
    if (listed(ctx, &mi__blis_variants[i]) && index-- == 0) return &mi__blis_variants[i];
  return NULL;
}

static int32_t variant_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err) {
  int32_t rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  if (!count) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu variant_count: NULL");
  *count = (uint32_t)(table_n(ctx) + DIRECT_N);
  return MI_OK;
}

static int32_t variant_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_variant_desc_t *out, mi_error_t *err) {
  mi_variant_desc_t v;
  int32_t rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  if (!out || index >= (uint32_t)(table_n(ctx) + DIRECT_N))
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu variant_desc: bad index");
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.dtype_mask = F32;
  if (index < (uint32_t)table_n(ctx)) {
    const mi__blis_variant_t *s = table_at(ctx, index);
    if (!s) return mi_sdk_error(err, MI_ERR_INTERNAL, "blis-cpu variant_desc: variant table out of step");
    snprintf(v.id, sizeof v.id, "%s", s->id);
    snprintf(v.op_type, sizeof v.op_type, "%s", s->op);
    snprintf(v.description, sizeof v.description, "%s", s->description);
    v.layout_mask = s->layouts;
    v.fuse_mask = s->fuse;
    snprintf(v.knobs, sizeof v.knobs, "%s", s->knobs);
    /* The first variant of Conv, Gemm and MatMul also runs lowered INT8 layers (input codes,
     * INT8/INT4 weights, output codes): the executor hands them to it (docs/abi.md). */
    if (!strcmp(s->id, "conv.im2col_gemm") || !strcmp(s->id, "gemm.blis") || !strcmp(s->id, "matmul.blis"))
      v.dtype_mask = F32 | MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8);
    /* FP16 storage, FP32 compute: the precision variant (FLOAT16 weights, as the FP16 transform
     * writes them; FLOAT32 ones are rounded to half at prepare). */
    if (!strcmp(s->id, "conv.packed_gemm_fp16")) v.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_FLOAT16);
    /* BF16 compute: operands rounded to BF16, FP32 sums (not FP32-exact, so not FLOAT32) */
    if (bf16_id(s->id)) v.dtype_mask = MI_DTYPE_BIT(MI_DTYPE_BFLOAT16);
  } else {
    const char *op = direct_ops[index - (uint32_t)table_n(ctx)];
    size_t i, n = strlen(op);
    for (i = 0; i < n && i + 8 < sizeof v.id; i++)
      v.id[i] = (char)(op[i] >= 'A' && op[i] <= 'Z' ? op[i] - 'A' + 'a' : op[i]);
    memcpy(v.id + i, ".direct", 8);
    snprintf(v.op_type, sizeof v.op_type, "%s", op);
    v.layout_mask = NCHW;
    if (!strcmp(op, "Gelu") || !strcmp(op, "Erf") || !strcmp(op, "Tanh") || !strcmp(op, "Sigmoid") ||
        !strcmp(op, "Exp") || !strcmp(op, "Softmax") || !strcmp(op, "Log")) {
      snprintf(v.description, sizeof v.description, "loop over host memory, vectorised exp/erf/log (knob simd)");
      snprintf(v.knobs, sizeof v.knobs, "simd");
    } else if (!strcmp(op, "LpPool") || !strcmp(op, "GlobalLpPool")) {
      snprintf(v.description, sizeof v.description, "|x|^p once per element, separable window sums (knob simd)");
      snprintf(v.knobs, sizeof v.knobs, "simd");
    } else if (!strcmp(op, "DeformConv")) {
      snprintf(v.description, sizeof v.description, "bilinear-sampling im2col + BLIS sgemm per group (knob simd)");
      snprintf(v.knobs, sizeof v.knobs, "simd");
    } else if (!strcmp(op, "Col2Im")) {
      snprintf(v.description, sizeof v.description, "per-plane sums of the column rows (knob simd)");
      snprintf(v.knobs, sizeof v.knobs, "simd");
    } else if (!strcmp(op, "MaxPool")) {
      snprintf(v.description, sizeof v.description, "separable max, vectorised stride-2 rows (knob simd)");
      snprintf(v.knobs, sizeof v.knobs, "simd");
    } else {
      snprintf(v.description, sizeof v.description, "plain loop over host memory");
    }
    /* Add and Mul also run lowered QDQ ones on codes (blis_qadd.c); MaxPool and nearest Resize
     * run on codes too (blis_qpool.c, blis_qresize.c). */
    if (strstr(op, "QuantizeLinear") || strstr(op, "QLinear") || strstr(op, "Integer") || !strcmp(op, "Add") ||
        !strcmp(op, "Mul") || !strcmp(op, "MaxPool") || !strcmp(op, "Resize") || !strcmp(op, "Upsample"))
      v.dtype_mask = F32 | MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_UINT8);
    if (!strcmp(op, "QLinearWhere")) v.dtype_mask |= MI_DTYPE_BIT(MI_DTYPE_BOOL);
    /* weights of exactly FP16 values (the fp16 precision) held as halves where F16C converts
     * them, as conv.packed_gemm_fp16 is listed (blis_rnn.c; capped at plain C it keeps FP32) */
    if (!strcmp(op, "LSTM") && (ctx->cpu.isa & MI__ISA_F16C)) v.dtype_mask |= MI_DTYPE_BIT(MI_DTYPE_FLOAT16);
    if (!strcmp(op, "MatMulInteger")) { /* the dynamic export's float tail, blis_qlinear.c gemm_tail */
      v.fuse_mask = MI_FUSE_BIAS | MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "int32 GEMM; -> Cast -> Mul (scale) [-> Add (bias along the last axis)] [-> activation] as its float output "
               "stage");
    }
    if (!strcmp(op, "ConvInteger")) { /* the dynamic export's float tail in the output stage */
      v.fuse_mask = MI_FUSE_BIAS | MI_FUSE_RELU | MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "int32 GEMM; -> Cast -> Mul (scale) [-> Add (bias)] [-> Relu] [-> hard-swish] as its float output stage");
    }
    /* Mul -> Add of one of its operands: one pass (blis_eltwise.c); a per-channel gate -> Conv:
     * the gate folded into the conv's packed weights, or into its input as the BF16 tiles round
     * it (blis_convgate.c); the conv on its own variant and knobs (member_desc, blis_kernel.c) */
    if (!strcmp(op, "Mul")) {
      v.fuse_mask = MI_FUSE_ADD | MI_FUSE_CONV | MI_FUSE_MEMBER_CHOICES;
      snprintf(v.description, sizeof v.description,
               "plain loop; -> Add of an operand in one pass; channel gate -> Conv in the conv's weights");
    }
    if (!strcmp(op, "Softmax")) { /* scale and mask Adds -> Softmax: one pass over the rows, blis_smask.c */
      v.fuse_mask = MI_FUSE_ADD;
      snprintf(v.description, sizeof v.description,
               "vectorised rows (knob simd); a constant scale and the Adds of masks before it in the same pass");
    }
    if (!strcmp(op, "Concat")) { /* Concat -> DynamicQuantizeLinear: blis_qconcat.c */
      v.fuse_mask = MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "plain copy; -> DynamicQuantizeLinear as codes straight from the inputs");
    }
    if (!strcmp(op, "Resize")) { /* Resize -> Concat -> DynamicQuantizeLinear: blis_qconcat.c */
      v.fuse_mask = MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "index tables; -> Concat -> DynamicQuantizeLinear as rows the quantize computes");
    }
    if (!strcmp(op, "Pad")) { /* Pad -> DynamicQuantizeLinear: blis_qpad.c */
      v.fuse_mask = MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "index map; zero Pad -> DynamicQuantizeLinear as codes into the padded plane");
    }
    if (!strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") || !strcmp(op, "LessOrEqual") ||
        !strcmp(op, "GreaterOrEqual")) { /* blis_cmp.c */
      v.fuse_mask = MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "only with -> Cast to FLOAT, its sole reader: 0/1 floats in one pass (no bool tensors)");
    }
    if (!strcmp(op, "DequantizeLinear")) { /* DQ -> elementwise ops -> Q: blis_qlut.c */
      v.fuse_mask = MI_FUSE_ACT;
      snprintf(v.description, sizeof v.description,
               "plain loop; DQ -> elementwise ops -> Q as a table lookup per channel");
    }
  }
  return mi_sdk_fill(out, &v, sizeof v);
}

/* ---- constraints and configuration checks */

/* Validates knob values; shared by check_config, set_device_knobs and kernel_prepare. */
int32_t mi__blis_check_knobs(mi_plugin_ctx_t *ctx, const mi_knob_value_t *knobs, int32_t n,
                             mi_error_t *err) {
  int32_t i, j;
  for (i = 0; i < n; i++) {
    const char *name = knobs[i].name ? knobs[i].name : "";
    const mi_sdk_knob_t *k;
    int64_t v = knobs[i].i;
    if ((j = mi_sdk_knob_index(&ctx->tables, name)) < 0)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "blis-cpu: unknown knob '%s'", name);
    k = &ctx->knobs[j];
    if (mi_sdk_knob_allows(k, v)) continue;
    if (k->type == MI_KNOB_ENUM)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "blis-cpu: knob %s=%lld outside %.150s",
                           name, (long long)v, k->choices);
    if (k->value_count)
      return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG,
                           "blis-cpu: knob %s=%lld is not one of its values", name, (long long)v);
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "blis-cpu: knob %s=%lld outside [%lld,%lld]",
                         name, (long long)v, (long long)k->min, (long long)k->max);
  }
  return MI_OK;
}

static int32_t check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                            const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  int32_t rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  if (variant_id && variant_id[0] && !mi__blis_find_variant(variant_id) &&
      !mi__blis_is_direct_id(variant_id)) {
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "blis-cpu: unknown variant '%s'", variant_id);
  }
  return mi__blis_check_knobs(ctx, knobs, knob_count, err);
}

static int32_t set_device_knobs(mi_plugin_ctx_t *ctx, uint32_t device, const mi_knob_value_t *knobs,
                                int32_t n, mi_error_t *err) {
  int32_t i, rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  rc = mi__blis_check_knobs(ctx, knobs, n, err);
  if (rc != MI_OK) return rc;
  for (i = 0; i < n; i++) {
    if (strcmp(knobs[i].name, "threads") == 0) ctx->threads = (int32_t)knobs[i].i;
    else if (strcmp(knobs[i].name, "arch") == 0)
      ctx->arch = ctx->arch_ids[knobs[i].i];
  }
  return MI_OK;
}

static int32_t counter_read(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_counter_sample_t *out, mi_error_t *err) {
  mi_counter_sample_t s;
  struct timespec ts;
  int32_t rc = mi_sdk_counter_sample(ctx, device, index, out, &s, err);
  if (rc != MI_OK) return rc;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s.timestamp_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  /* Cumulative by the ABI: kernel time summed since create (0 before the first run is a true
   * reading, not a missing one). */
  if (index == 0) s.value = (double)atomic_load(&ctx->total_run_ns);
  else if (index == 1) {
    /* BLIS's packing pools are allocated inside the library and kept: an interval in which a
     * GEMM ran held them (at the size the busiest GEMM so far made them); one without none. */
    s.value = (double)atomic_exchange(&ctx->peak_bytes, atomic_load(&ctx->cur_bytes));
    if (atomic_exchange(&ctx->gemm_used, 0)) s.value += (double)mi__blis_pool_bytes();
  } else
    s.value = (double)atomic_load(&ctx->ranges_reused);
  return mi_sdk_fill(out, &s, sizeof s);
}

/* ---- buffers: host memory, 64-byte aligned */

struct mi_buffer {
  uint64_t bytes;
  void *data;
  int view;           /* data lies in another buffer's memory (buffer_view): freeing frees the handle */
  int borrowed;       /* data is the host's (buffer_wrap): freeing frees the handle */
  mi_buffer_t *root;  /* the allocation a view's memory lies in (itself for a buffer) */
  uint64_t gen;       /* on a root: writes to its memory, through it or any view */
  uint64_t range_gen; /* gen when the range was recorded (0: none) */
  float lo, hi;
  int range_asked; /* a kernel reading this buffer would take its range (blis_range.c) */
};

void mi__blis_buffer_ask_range(mi_buffer_t *b) {
  if (!b->view) b->range_asked = 1;
}

int mi__blis_buffer_range_asked(const mi_buffer_t *b) {
  return !b->view && b->range_asked;
}

int mi__blis_buffer_range(const mi_buffer_t *b, float *lo, float *hi) {
  if (!b || b->view || !b->range_gen || b->range_gen != b->gen) return 0;
  *lo = b->lo;
  *hi = b->hi;
  return 1;
}

void mi__blis_buffer_written(mi_buffer_t *b) {
  b->root->gen++;
}

void mi__blis_buffer_set_range(mi_buffer_t *b, float lo, float hi) {
  if (b->view) return;
  b->lo = lo;
  b->hi = hi;
  b->range_gen = b->gen;
}

void *mi__blis_buffer_data(mi_buffer_t *b, uint64_t *bytes) {
  *bytes = b->bytes;
  return b->data;
}

static int32_t buffer_alloc(mi_plugin_ctx_t *ctx, uint32_t device, uint64_t bytes, mi_buffer_t **out,
                            mi_error_t *err) {
  mi_buffer_t *b;
  int32_t rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_alloc: out is NULL");
  *out = NULL;
  b = calloc(1, sizeof *b);
  /* Not zeroed: the host writes every byte of a tensor before reading it (its memory plan reuses
   * buffers, so a kernel cannot count on zeros anyway), and zeroing made every page resident. */
  if (!b || !(b->data = mi__blis_alloc(ctx, bytes ? bytes : 1))) {
    free(b);
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu buffer_alloc: out of memory");
  }
  b->bytes = bytes;
  b->root = b;
  b->gen = 1;
  *out = b;
  return MI_OK;
}

static int32_t buffer_io(mi_buffer_t *b, uint64_t off, uint64_t bytes, mi_error_t *err) {
  if (!b) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer: NULL buffer");
  if (off > b->bytes || bytes > b->bytes - off)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer: range outside the buffer");
  return MI_OK;
}

/* Uploads and downloads copy on the instance's threads, in blocks of BUF_BLOCK bytes (the pool's
 * floor keeps copies under 256 KiB on the calling thread): M-LSD's input image, 1.6 MB, was one
 * memcpy on the calling thread before its first step, about 0.18 ms of a 14.5 ms run at 2 threads. */
#define BUF_BLOCK 65536

typedef struct buf_copy {
  char *dst;
  const char *src;
  uint64_t bytes;
} buf_copy_t;

static void copy_part(void *arg, int64_t b0, int64_t b1) {
  const buf_copy_t *c = arg;
  uint64_t o0 = (uint64_t)b0 * BUF_BLOCK, o1 = (uint64_t)b1 * BUF_BLOCK;
  memcpy(c->dst + o0, c->src + o0, (size_t)((o1 < c->bytes ? o1 : c->bytes) - o0));
}

static void buffer_copy(mi_plugin_ctx_t *ctx, void *dst, const void *src, uint64_t bytes) {
  buf_copy_t c = {dst, src, bytes};
  mi__blis_env_t env;
  memset(&env, 0, sizeof env);
  env.threads = ctx ? ctx->threads : 1;
  env.pool = ctx ? ctx->pool : NULL;
  mi__blis_parallel(&env, (int64_t)((bytes + BUF_BLOCK - 1) / BUF_BLOCK), 1, BUF_BLOCK / 4, copy_part, &c);
}

static int32_t buffer_write(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, const void *src,
                            uint64_t bytes, mi_error_t *err) {
  int32_t rc = buffer_io(b, off, bytes, err);
  if (rc != MI_OK) return rc;
  if (bytes && !src) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_write: src NULL");
  b->root->gen++; /* a range recorded on this memory no longer holds */
  if (bytes) buffer_copy(ctx, (char *)b->data + off, src, bytes);
  return MI_OK;
}

static int32_t buffer_read(mi_plugin_ctx_t *ctx, mi_buffer_t *b, uint64_t off, void *dst,
                           uint64_t bytes, mi_error_t *err) {
  int32_t rc = buffer_io(b, off, bytes, err);
  if (rc != MI_OK) return rc;
  if (bytes && !dst) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_read: dst NULL");
  if (bytes) buffer_copy(ctx, dst, (const char *)b->data + off, bytes);
  return MI_OK;
}

static void buffer_free(mi_plugin_ctx_t *ctx, mi_buffer_t *b) {
  if (!b) return;
  if (!b->view && !b->borrowed) mi__blis_free(ctx, b->data);
  free(b);
}

/* Host memory as a buffer (ABI 1.4): kernels address memory through `data` alone, so the
 * caller's array is used where it lies. A buffer of its own (a root: ranges recorded on it hold
 * until a write, as on an allocation), whose memory is not freed with it. */
static int32_t buffer_wrap(mi_plugin_ctx_t *ctx, uint32_t device, void *host, uint64_t bytes,
                           mi_buffer_t **out, mi_error_t *err) {
  mi_buffer_t *b;
  int32_t rc = check_dev(ctx, device, err);
  if (rc != MI_OK) return rc;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_wrap: out is NULL");
  *out = NULL;
  if (!host) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_wrap: host memory is NULL");
  if ((uintptr_t)host % 64)
    return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_wrap: address not 64-byte aligned");
  if (!(b = calloc(1, sizeof *b))) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu buffer_wrap: out of memory");
  b->bytes = bytes;
  b->data = host;
  b->borrowed = 1;
  b->root = b;
  b->gen = 1;
  *out = b;
  return MI_OK;
}

/* A slice of a buffer as a buffer of its own: kernels address memory through `data` alone, so a
 * view is a pointer into the parent. Offsets are multiples of the declared 64-byte alignment,
 * the alignment kernels get from buffer_alloc. */
static int32_t buffer_view(mi_plugin_ctx_t *ctx, mi_buffer_t *parent, uint64_t off, uint64_t bytes,
                           mi_buffer_t **out, mi_error_t *err) {
  mi_buffer_t *b;
  int32_t rc = buffer_io(parent, off, bytes, err);
  (void)ctx;
  if (rc != MI_OK) return rc;
  if (!out) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_view: out is NULL");
  *out = NULL;
  if (off % 64) return mi_sdk_error(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu buffer_view: offset not 64-byte aligned");
  if (!(b = calloc(1, sizeof *b))) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu buffer_view: out of memory");
  b->bytes = bytes;
  b->data = (char *)parent->data + off;
  b->view = 1;
  b->root = parent->root;
  *out = b;
  return MI_OK;
}

int32_t mi__blis_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *desc,
                                mi_kernel_t **out, mi_error_t *err);
int32_t mi__blis_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *in, int32_t nin,
                            mi_buffer_t *const *outs, int32_t nout, mi_run_stats_t *stats,
                            mi_error_t *err);
void mi__blis_kernel_release(mi_plugin_ctx_t *ctx, mi_kernel_t *k);

static const mi_plugin_api_t api = {
    sizeof(mi_plugin_api_t), MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR, "blis-cpu", "0.1.0",
    create, destroy, mi_sdk_device_count, device_info, mi_sdk_knob_count, mi_sdk_knob_desc,
    variant_count, variant_desc, buffer_alloc, buffer_write, buffer_read, buffer_free,
    mi__blis_kernel_prepare, mi__blis_kernel_run, mi__blis_kernel_release, mi_sdk_constraint_count,
    mi_sdk_constraint_desc, check_config, mi_sdk_counter_count, mi_sdk_counter_desc, counter_read,
    set_device_knobs, buffer_view,
    NULL, NULL /* kernel_enqueue, device_sync: kernel_run computes on the calling thread */,
    buffer_wrap};

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host, mi_error_t *err) {
  return mi_sdk_entry(host, &api, err);
}
