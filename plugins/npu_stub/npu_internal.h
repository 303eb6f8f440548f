/* npu_internal.h - types shared by the files of the simulated NPU plugin (device model, kernels). */
#ifndef NPU_INTERNAL_H
#define NPU_INTERNAL_H

#include <stdint.h>

/* The simulated device reads host memory: the SDK's host buffers serve. */
#define MI_SDK_HOST_BUFFERS
#include <metainfer/mi_sdk.h>

#define NPU_MAX_LEVELS 16
#define NPU_MAX_DEVICES 16
#define NPU_MAX_NODE_INPUTS 8

/** One DVFS operating point. */
typedef struct npu_level {
  double mhz;
  double volts;
} npu_level_t;

/** A device description, as read from one npu-*.conf file. */
typedef struct npu_spec {
  char name[64];
  char vendor[64];
  char path[512];
  int cores, mac_rows, mac_cols, vector_lanes, channel_align, fp16_divisor;
  double sram_kib, dram_mib;
  double dma_gbs, dma_bytes_per_cycle, dma_pj_per_byte, overlap_eff;
  int level_count;
  npu_level_t levels[NPU_MAX_LEVELS];
  double static_w, c_eff_nf, c_clock_nf;
  double thermal_r, thermal_tau_s, ambient_c, throttle_c, throttle_ratio;
  double noise;
  uint64_t seed;
  double sync_cycles, launch_cycles;
} npu_spec_t;

enum { NPU_KNOB_CORES,
       NPU_KNOB_DVFS,
       NPU_KNOB_DATAFLOW,
       NPU_KNOB_TILE,
       NPU_KNOB_OVERLAP,
       NPU_KNOB_BATCH,
       NPU_KNOB_COUNT };

/** The mutable state of one simulated device: its knobs and its thermal/energy history. */
typedef struct npu_device {
  npu_spec_t spec;
  int cores, level, batch; /* device-scope knobs */
  double temp_c;
  int throttled;
  double sim_time_s;  /* simulated device time accumulated over all runs */
  uint64_t energy_pj; /* cumulative modeled energy in whole pJ (the counter's resolution):
                       * an integer sum, so the energy of a run read as a difference of two
                       * readings does not depend on what ran before */
  uint64_t runs;
  uint64_t rng;
  int has_last;
  double last_time_s, last_power_w;
  mi_sdk_knob_t knobs[NPU_KNOB_COUNT]; /* the knob table with this device's cores and DVFS */
  mi_sdk_tables_t tables;              /* what the SDK helper describes for this device */
} npu_device_t;

enum { NPU_FAULT_NONE = 0,
       NPU_FAULT_CRASH,
       NPU_FAULT_HANG,
       NPU_FAULT_WRONG,
       NPU_FAULT_DRIFT };

struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk; /* first: the SDK helper answers the description calls from it */
  int fault;
  npu_device_t dev[NPU_MAX_DEVICES];
};

enum npu_op {
  NPU_CONV,
  NPU_GEMM,
  NPU_MATMUL,
  NPU_RELU,
  NPU_CLIP,
  NPU_HARDSWISH,
  NPU_HARDSIGMOID,
  NPU_SIGMOID,
  NPU_ADD,
  NPU_MUL,
  NPU_GAP,
  NPU_AVGPOOL,
  NPU_MAXPOOL,
  NPU_BN,
  NPU_FLATTEN,
  NPU_RESHAPE,
  NPU_CONCAT,
  NPU_QUANT,
  NPU_DEQUANT,
  NPU_OP_COUNT
};

/** A tensor inside a kernel: quantized (q) or FP16-valued floats (f), plus int32 bias. */
typedef struct npu_tensor {
  int32_t dtype; /* the dtype the host stores it in */
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
  int64_t numel;
  int is_const;
  float scale;
  int32_t zp;
  uint32_t ccount; /* per-channel weight scales when > 0 */
  float *cscale;
  int8_t *q;
  float *f;
  int32_t *i32;
} npu_tensor_t;

/** Geometry of a MAC op for the cycle model. */
typedef struct npu_mac {
  double m;       /* output rows (pixels x batch, or Gemm rows) per group */
  double k, kpad; /* reduction length per output channel, raw and channel-aligned */
  double c, cpad; /* output channels per group, raw and aligned */
  double groups;  /* independent passes over the array */
  double w_bytes, in_bytes, out_bytes;
  double w_per_channel; /* weight bytes of one output channel (aligned) */
  double in_band, out_band_per_channel;
  int tile; /* chosen output-channel tile */
} npu_mac_t;

typedef struct npu_node {
  int op;
  char name[64];
  int nin;
  int in[NPU_MAX_NODE_INPUTS];
  int out;
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group;
  int trans_a, trans_b, count_include_pad, axis;
  float alpha, beta, fmin, fmax, eps;
  int8_t lut[256]; /* INT8 activations run as a 256-entry table */
  int fused;       /* 1: epilogue of the MAC op before it, free in the array's output stage */
  double vec_ops;  /* vector-unit element operations (non-MAC ops) */
  npu_mac_t mac;
  /* QuantizeLinear/DequantizeLinear: element i uses scale/zero point (i / qinner) % qdim
   * (qdim 1: per tensor); the codes side saturates to [qlo, qhi] (INT8 or UINT8 range) */
  int64_t qinner, qdim;
  int32_t qlo, qhi;
} npu_node_t;

struct mi_kernel {
  uint32_t device;
  int fp; /* 1: FP16 path (FLOAT32/FLOAT16 tensors), 0: INT8 path */
  int node_count;
  npu_node_t *nodes;
  int tensor_count;
  npu_tensor_t *t;
  int input_count, output_count;
  int32_t *inputs, *outputs;
  int dataflow, sram_tile, dma_overlap; /* op knobs */
  int cores, level, batch;              /* device knobs given at prepare; -1 = device's */
  double io_bytes;                      /* external activations in + out, device format */
  double const_bytes;                   /* weights, biases, parameters, device format */
  int64_t samples;                      /* N of the first input */
  int conv;                             /* 1: a standalone QuantizeLinear/DequantizeLinear: float on one side, codes on
                                         * the other; its float side is held in FP32 (ONNX's conversion is specified in
                                         * FP32), its codes side as INT8 codes */
};

/* Knob indices (the order knob_desc lists them). */
enum { NPU_DATAFLOW_WS = 0,
       NPU_DATAFLOW_OS = 1 };

/* npu_devfile.c */
void npu__spec_defaults(npu_spec_t *s);
int32_t npu__spec_load(const char *path, npu_spec_t *out, mi_error_t *err);

/* npu_knobs.c */
/* Fills d->knobs and d->tables from the plugin's tables and d->spec. */
void npu__describe(npu_device_t *d);
int32_t npu__constraint_desc(const npu_spec_t *s, uint32_t index, mi_constraint_desc_t *out);
int32_t npu__check_knobs(const npu_spec_t *s, const char *variant_id,
                         const mi_knob_value_t *knobs, int32_t count, int64_t vals[NPU_KNOB_COUNT],
                         uint32_t given[1], mi_error_t *err);
int npu__variant_op(const char *variant_id);
int npu__op_from_name(const char *op_type);

/* npu_qdq.c: a kernel description with its QDQ nodes lowered away (all storage owned here). */
typedef struct npu_lowered {
  mi_kernel_desc_t desc;
  mi_tensor_desc_t *t;
  const mi_tensor_desc_t **tp;
  mi_node_desc_t *n;
  const mi_node_desc_t **np;
  int32_t *idx;   /* node input/output and kernel input/output indices */
  int32_t *alias; /* tensor -> the tensor that stands for it */
  uint8_t *drop;  /* per host node: a Q/DQ node that disappeared */
} npu_lowered_t;
int32_t npu__qdq_lower(const mi_kernel_desc_t *d, npu_lowered_t *lo, int *lowered,
                       mi_error_t *err);
void npu__qdq_free(npu_lowered_t *lo);

/* npu_prepare.c */
int32_t npu__prepare(npu_device_t *d, uint32_t device, const mi_kernel_desc_t *desc,
                     mi_kernel_t **out, mi_error_t *err);
void npu__kernel_free(mi_kernel_t *k);

/* npu_geom.c */
int32_t npu__node_setup(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n,
                        const mi_node_desc_t *nd, const mi_kernel_desc_t *desc, mi_error_t *err);
int32_t npu__choose_tile(const npu_spec_t *s, mi_kernel_t *k, npu_node_t *n, mi_error_t *err);

/* npu_exec_mac.c, npu_exec_vec.c */
void npu__exec_mac(mi_kernel_t *k, const npu_node_t *n);
void npu__exec_vec(mi_kernel_t *k, const npu_node_t *n);
void npu__build_lut(mi_kernel_t *k, npu_node_t *n);
float npu__fp16_round(float x);
int8_t npu__quant(double real, float scale, int32_t zp);

/* npu_cost.c */
typedef struct npu_cost {
  double time_s, energy_j, compute_s, dma_s, dma_bytes, power_w;
} npu_cost_t;
void npu__cost(const npu_device_t *d, const mi_kernel_t *k, npu_cost_t *out);
void npu__advance(npu_device_t *d, const npu_cost_t *c);
double npu__noise(npu_device_t *d);
double npu__effective_mhz(const npu_device_t *d, int level);

#endif
