/* mi_transform.h - model-side transforms (BN folding, fusion, layout, padding, pruning,
 * quantization), their configuration as data, and accuracy measurement on the reference path. */
#ifndef METAINFER_MI_TRANSFORM_H
#define METAINFER_MI_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi_graph.h"
#include "metainfer/mi_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mi_array;

/* ---------------------------------------------------------------- configuration */

/** Weight precision of a layer. INT4 values are stored as INT8 data in [-7, 7] (the IR and the
 * ONNX export have no packed INT4 initializer) with mi_tensor_t.value_bits = 4, which says a
 * plugin may receive them packed as MI_DTYPE_INT4 (two per byte, low nibble first). BF16: the
 * weights rounded to BF16 (to nearest even) and held as FLOAT32; as the activations' precision,
 * the layer's input is rounded the same way through Cast(to=BFLOAT16) -> Cast(to=FLOAT), which
 * the IR holds in FLOAT32 too. A layer with both computes what a BF16 engine computes with FP32
 * sums, and a device whose variant declares MI_DTYPE_BFLOAT16 runs it so (docs/transforms.md). */
typedef enum mi_xf_precision {
  MI_XF_FP32 = 0,
  MI_XF_FP16 = 1,
  MI_XF_INT8 = 2,
  MI_XF_INT4 = 3,
  MI_XF_BF16 = 4
} mi_xf_precision;

/** Scale granularity of quantized weights (symmetric, zero point 0). */
typedef enum mi_xf_granularity { MI_XF_PER_TENSOR = 0,
                                 MI_XF_PER_CHANNEL = 1 } mi_xf_granularity;

/** How activation ranges are calibrated. */
typedef enum mi_xf_calib { MI_XF_CALIB_MINMAX = 0,
                           MI_XF_CALIB_PERCENTILE = 1,
                           /* the clipping range of least quantization MSE on the samples */
                           MI_XF_CALIB_MSE = 2 } mi_xf_calib;
/** Cross-layer equalization: off, from the weight ranges (mi_xf_equalize), or data-aware from
 * the calibrated per-channel activation ranges, also across Clip(0, M) (docs/transforms.md). */
typedef enum mi_xf_equalize_mode { MI_XF_EQUALIZE_OFF = 0,
                                   MI_XF_EQUALIZE_WEIGHTS = 1,
                                   MI_XF_EQUALIZE_DATA = 2 } mi_xf_equalize_mode;

/** Bits of mi_xf_layer_t.set: which fields an override sets (defaults set all). */
enum {
  MI_XF_SET_WEIGHTS = 1u << 0,
  MI_XF_SET_SCALES = 1u << 1,
  MI_XF_SET_ACTS = 1u << 2,
  MI_XF_SET_PRUNE = 1u << 3
};

/** What happens to one weighted layer (Conv, Gemm, MatMul with a constant weight). */
typedef struct mi_xf_layer {
  uint32_t set;        /* MI_XF_SET_* bits of the fields below that are given */
  int32_t weights;     /* mi_xf_precision */
  int32_t scales;      /* mi_xf_granularity */
  int32_t activations; /* MI_XF_FP32, MI_XF_INT8 (asymmetric uint8, calibrated) or MI_XF_BF16 */
  double prune;        /* share of output channels removed, [0, 0.95] */
} mi_xf_layer_t;

/** A per-layer override, by node name or by op type. */
typedef struct mi_xf_override {
  char *name; /* node name (layers) or op type (ops), owned */
  mi_xf_layer_t layer;
  int32_t line, column; /* where it was written (0 when built in code) */
} mi_xf_override_t;

/** A model-side configuration. Build one with mi_xf_config_create (all passes off, every
 * layer FP32) or load it from YAML; resolution order for a layer is
 * defaults < ops[op type] < layers[node name]. */
typedef struct mi_xf_config {
  int32_t fold_bn;       /* 0/1 */
  int32_t fuse;          /* 0/1: group chains the plugin's variants can run fused */
  int32_t layout;        /* mi_layout: ANY keeps the model's (NCHW) */
  int32_t block;         /* channel block when layout == MI_LAYOUT_NCHWC */
  int32_t channel_align; /* 1 (off), 4, 8 or 16 */
  int32_t calib_method;  /* mi_xf_calib */
  double percentile;     /* for MI_XF_CALIB_PERCENTILE, in (50, 100] */
  mi_xf_layer_t defaults;
  int32_t op_count;
  mi_xf_override_t *ops;
  int32_t layer_count;
  mi_xf_override_t *layers;
  char *source;            /* the file or name it was loaded from (errors cite it), owned */
  int32_t float_output;    /* 0/1: INT8 quantization leaves the graph outputs float (by
                            * default they get a Q/DQ pair like every activation a device stores) */
  int32_t bias_correction; /* 0/1: fold the expected output shift of INT8/INT4 weights,
                            * E[(Wq - W) x] over the calibration samples, into the bias */
  int32_t equalize;        /* mi_xf_equalize_mode: cross-layer equalization before quantizing */
} mi_xf_config_t;

/** A configuration with every pass off and every layer FP32. NULL when out of memory. */
MI_API mi_xf_config_t *mi_xf_config_create(void);
/** Frees a configuration. NULL is a no-op. */
MI_API void mi_xf_config_destroy(mi_xf_config_t *c);
/** Deep copy; NULL when out of memory. */
MI_API mi_xf_config_t *mi_xf_config_clone(const mi_xf_config_t *c);
/** Adds or replaces the override of node `node` (kind 0) or op type `node` (kind 1). */
MI_API int32_t mi_xf_config_set_layer(mi_xf_config_t *c, int32_t kind, const char *node,
                                      const mi_xf_layer_t *layer, mi_error_t *err);
/** Loads a configuration from YAML text; `what` names it in errors, which carry
 * "what:LINE:COLUMN: message". On failure *out is NULL. */
MI_API int32_t mi_xf_config_parse(const char *text, size_t len, const char *what,
                                  mi_xf_config_t **out, mi_error_t *err);
/** Loads a configuration from a YAML file (see docs/transforms.md). */
MI_API int32_t mi_xf_config_load(const char *path, mi_xf_config_t **out, mi_error_t *err);
/** The canonical text of a configuration: fields in a fixed order, overrides sorted by name,
 * numbers normalized, so equal configurations give equal strings. *out is malloc'd. */
MI_API int32_t mi_xf_config_canonical(const mi_xf_config_t *c, char **out, mi_error_t *err);
/** 64-bit FNV-1a hash of the canonical text (0 on failure). */
MI_API uint64_t mi_xf_config_hash(const mi_xf_config_t *c);
/** Checks that every layers[] override names a node of `g` (ops[] names are free).
 * MI_ERR_NOT_FOUND naming the override, its line and column. */
MI_API int32_t mi_xf_config_check(const mi_xf_config_t *c, const mi_graph_t *g, mi_error_t *err);
/** The effective setting of node `node` of `g` (defaults, then op, then layer override). */
MI_API void mi_xf_config_resolve(const mi_xf_config_t *c, const mi_graph_t *g, int32_t node,
                                 mi_xf_layer_t *out);
/** Names for precision / granularity / calibration values ("int8", "per_channel", ...). */
MI_API const char *mi_xf_precision_name(int32_t p);

/* ---------------------------------------------------------------- passes */

/** What the passes did, for reports. */
typedef struct mi_xf_stats {
  int32_t bn_folded;
  int32_t groups;          /* fused groups formed */
  int32_t grouped_nodes;   /* nodes inside them */
  int32_t layout_tensors;  /* activations given the target layout */
  int32_t layout_converts; /* conversion nodes inserted at layout boundaries */
  int32_t padded_layers;   /* convs whose output channels were padded */
  int64_t padded_channels;
  int32_t pruned_layers;
  int32_t prune_skipped; /* layers asked to prune but skipped (residual, flatten, ...) */
  int64_t pruned_channels;
  int32_t quantized_layers; /* weights changed precision */
  int32_t quantized_acts;   /* activations with a QuantizeLinear/DequantizeLinear pair */
  int32_t equalized_pairs;  /* Conv pairs cross-layer equalized */
} mi_xf_stats_t;

/** Folds BatchNormalization into the preceding Conv / Gemm when it is the only consumer. */
MI_API int32_t mi_xf_fold_bn(mi_graph_t *g, mi_xf_stats_t *st, mi_error_t *err);
/** Cross-layer equalization: for each Conv whose output reaches another Conv only through
 * positive-homogeneous activations (Relu, LeakyRelu, PRelu, Identity, Clip without a max),
 * scales output channel c of the first by 1 / s_c and input channel c of the second by s_c,
 * s_c = sqrt(r1_c / r2_c) of their per-channel weight ranges, until the scales settle. Exact
 * in FP32; evens the channel ranges of the tensor between them for per-tensor INT8. */
MI_API int32_t mi_xf_equalize(mi_graph_t *g, mi_xf_stats_t *st, mi_error_t *err);
/** Sets mi_node_t.group for Conv/Gemm [+BN] [+act] [+Add [+act]] chains that one of the
 * variants (of the anchor's op type) declares in its fuse_mask. Numerics are unchanged. */
MI_API int32_t mi_xf_fuse(mi_graph_t *g, const mi_variant_desc_t *variants, uint32_t count,
                          mi_xf_stats_t *st, mi_error_t *err);
/** Assigns `layout` (NHWC or NCHWC with `block`) to the 4-D activations of every connected
 * region that holds a conv or pool, and inserts one conversion node per boundary tensor. */
MI_API int32_t mi_xf_layout(mi_graph_t *g, int32_t layout, int32_t block, mi_xf_stats_t *st,
                            mi_error_t *err);
/** Pads the output channels of Conv layers feeding only group-1 Convs (through Relu-like
 * activations) up to a multiple of `align`, with zero filters and zero input weights. */
MI_API int32_t mi_xf_pad_channels(mi_graph_t *g, int32_t align, mi_xf_stats_t *st,
                                  mi_error_t *err);
/** 1 when mi_xf_prune_layer can prune Conv `node` of `g` consistently (its channels reach only
 * layers that follow them: not a residual Add, Flatten, Reshape or a graph output); the space
 * offers a prune choice only for such layers. */
MI_API int mi_xf_prunable(const mi_graph_t *g, int32_t node);
/** 1 when `node` of `g` is an LSTM, GRU or RNN whose W and R (inputs 1 and 2) are constant FLOAT32
 * of rank 3 and whose X is not: a layer the fp16 precision rounds (weight-only; no other pass acts
 * on it), which the space offers fp32 and fp16 only. */
MI_API int mi_xf_recurrent(const mi_graph_t *g, int32_t node);
/** Removes the `ratio` lowest-L1 filters of Conv node `node`, following depthwise layers,
 * BatchNormalization, activations and Concat to the consuming convs. Returns MI_OK and sets
 * *done = 0 when the layer cannot be pruned consistently (residual Add, Flatten, output). */
MI_API int32_t mi_xf_prune_layer(mi_graph_t *g, int32_t node, double ratio, int *done,
                                 mi_xf_stats_t *st, mi_error_t *err);

/** A set of input samples: sample s is inputs[s * input_count .. + input_count). */
typedef struct mi_xf_samples {
  int32_t input_count;
  int32_t sample_count;
  struct mi_array **inputs;
  int32_t synthetic; /* 1 when generated (deterministic random), not read from files */
} mi_xf_samples_t;

/** The per-channel input means of a model's weighted layers over one set of calibration
 * samples, which bias correction reads: computed by the first mi_xf_apply that needs them and
 * kept for the next ones (each computation is a reference run over the samples). One cache
 * serves one model and one set of samples; a configuration whose passes change the graph
 * before quantization (BN folding, equalization, pruning, padding) computes its own. */
typedef struct mi_xf_means mi_xf_means_t;
MI_API mi_xf_means_t *mi_xf_means_create(void);
MI_API void mi_xf_means_destroy(mi_xf_means_t *m);
/** Writes the means m holds to `path` (whole, by rename; nothing when m holds none yet), so
 * that other processes serving the same model and samples read them instead of computing. */
MI_API int32_t mi_xf_means_save(const mi_xf_means_t *m, const char *path, mi_error_t *err);
/** Replaces what m holds by the means in `path` (mi_xf_means_save's); m is unchanged when the
 * file is missing or not such a file. */
MI_API int32_t mi_xf_means_load(mi_xf_means_t *m, const char *path, mi_error_t *err);

/** Options of mi_xf_apply. Zero-initialise. */
typedef struct mi_xf_apply_opts {
  const mi_xf_samples_t *calib;      /* needed for INT8 activations */
  const mi_variant_desc_t *variants; /* for fusion; NULL: fusion is skipped */
  uint32_t variant_count;
  mi_xf_means_t *means; /* optional: bias correction's means, kept across calls with `calib` */
} mi_xf_apply_opts_t;

/** Applies a configuration to a copy of `g`: fold BN, prune, pad, quantize (with calibration),
 * layout, fuse, in that order. *out is shape-inferred and sorted; NULL on failure. */
MI_API int32_t mi_xf_apply(const mi_graph_t *g, const mi_xf_config_t *c,
                           const mi_xf_apply_opts_t *opts, mi_graph_t **out, mi_xf_stats_t *st,
                           mi_error_t *err);

/* ---------------------------------------------------------------- accuracy */

/** Deterministic random samples (values in [-1, 1)) for every graph input (dynamic dims
 * become 1); `seed` picks the stream. *out is freed with mi_xf_samples_destroy. */
MI_API int32_t mi_xf_samples_random(const mi_graph_t *g, int32_t count, uint64_t seed,
                                    mi_xf_samples_t **out, mi_error_t *err);
/** Like mi_xf_samples_random, except that input i takes a copy of fixed[i] in every sample
 * when fixed (input_count entries, or NULL) has one; only the other inputs are random, so
 * non-float inputs (a sample rate, a recurrent state) can be given. */
MI_API int32_t mi_xf_samples_random_fixed(const mi_graph_t *g, int32_t count, uint64_t seed,
                                          const struct mi_array *const *fixed,
                                          mi_xf_samples_t **out, mi_error_t *err);
/** Every *.npy file of `dir` in name order, one sample each. For a graph with several inputs,
 * `dir` holds one subfolder per input, named after it, with the same number of files. */
MI_API int32_t mi_xf_samples_load_dir(const mi_graph_t *g, const char *dir,
                                      mi_xf_samples_t **out, mi_error_t *err);
/** Like mi_xf_samples_load_dir with `count` specifications: one plain DIR (as above), or one
 * "INPUT=DIR" per graph input (sample k is the k-th file in name order of every folder). */
MI_API int32_t mi_xf_samples_load_dirs(const mi_graph_t *g, const char *const *specs,
                                       int32_t count, mi_xf_samples_t **out, mi_error_t *err);
/** Moves samples [from, count) of `s` into a new set *out (s keeps the first `from`). */
MI_API int32_t mi_xf_samples_split(mi_xf_samples_t *s, int32_t from, mi_xf_samples_t **out,
                                   mi_error_t *err);
MI_API void mi_xf_samples_destroy(mi_xf_samples_t *s);

/** How far a transformed model is from its original over a set of samples. */
typedef struct mi_xf_metrics {
  int32_t samples;
  double rel_l2;  /* ||y - y0|| / ||y0|| over every output element of every sample */
  double cosine;  /* cosine similarity of the same vectors */
  double max_abs; /* largest absolute difference */
  double top1;    /* share of rows whose argmax agrees; -1 when not a classifier */
  /* Per output o over every sample, ||y_o - y0_o|| / max(||y0_o||, 1e-3 * sqrt(n_o)) (the
   * reference check's figure, mi_outputs_check), the worst output. rel_l2 pools the outputs, so
   * one of large norm hides an error in one of small norm (M-LSD's 4-channel offsets against
   * its 1-channel scores); the floor keeps an output near zero everywhere from dividing by its
   * own rounding noise. */
  double worst_rel_l2;
} mi_xf_metrics_t;

/** Runs `orig` and `xf` on the reference interpreter over `s` and compares every output. */
MI_API int32_t mi_xf_compare(const mi_graph_t *orig, const mi_graph_t *xf,
                             const mi_xf_samples_t *s, mi_xf_metrics_t *out, mi_error_t *err);

/** Runs a model on one sample: `nout` outputs, each a new array (mi_xf_compare_run). */
typedef int32_t (*mi_xf_run_fn)(void *ctx, const struct mi_array *const *inputs, int32_t nin,
                                struct mi_array **outputs, int32_t nout, mi_error_t *err);
/** Like mi_xf_compare, with the second model's outputs from `run` (a device session, say):
 * `orig` on the reference interpreter against what `run` answers on each sample. */
MI_API int32_t mi_xf_compare_run(const mi_graph_t *orig, mi_xf_run_fn run, void *ctx,
                                 const mi_xf_samples_t *s, mi_xf_metrics_t *out, mi_error_t *err);
/** Like mi_xf_compare_run with the original's outputs from `run_orig` as well (outputs kept
 * from an earlier comparison, say); `orig` gives the output count. */
MI_API int32_t mi_xf_compare_runs(const mi_graph_t *orig, mi_xf_run_fn run_orig, void *ctx_orig,
                                  mi_xf_run_fn run, void *ctx, const mi_xf_samples_t *s,
                                  mi_xf_metrics_t *out, mi_error_t *err);

/** One layer's sensitivity: the error of the model with only this layer transformed. */
typedef struct mi_xf_sensitivity {
  char node[96];
  mi_xf_layer_t layer; /* the setting that was measured */
  mi_xf_metrics_t metrics;
} mi_xf_sensitivity_t;

/** For each weighted layer whose setting (from `c`, or `probe` for all when not NULL) is not
 * plain FP32, applies it to that layer alone (passes of `c` stay on) and measures the error on
 * `eval`. *out (malloc'd, *count entries) is in node order. */
MI_API int32_t mi_xf_sensitivity(const mi_graph_t *g, const mi_xf_config_t *c,
                                 const mi_xf_layer_t *probe, const mi_xf_samples_t *calib,
                                 const mi_xf_samples_t *eval, mi_xf_sensitivity_t **out,
                                 int32_t *count, mi_error_t *err);

/** One float tensor of a transformed model against the same tensor with the same passes and
 * every layer FP32 (mi_xf_tensor_errors). */
typedef struct mi_xf_tensor_error {
  char tensor[160];
  char op[32];               /* the op that writes it */
  int32_t quantized;         /* a QuantizeLinear reads it (an INT8 activation) */
  double rel_l2;             /* the error accumulated up to it, before its own rounding */
  double own_rel_l2;         /* its own rounding alone: its scale and zero point on FP32 values */
  double per_channel_rel_l2; /* the same with a min-max UINT8 scale per channel (axis 1) */
} mi_xf_tensor_error_t;

/** Applies `c` and the FP32 shadow of `c` (its passes, every layer FP32: equalization and BN
 * folding change the tensors, not the function) to `g`, calibrating on `calib` (or `eval`),
 * and compares every float tensor the two share by name over `eval`. *out (malloc'd, *count
 * entries) is in node order. Where a model's drop comes from: which tensors add error, and
 * whether a per-channel scale would have removed it. */
MI_API int32_t mi_xf_tensor_errors(const mi_graph_t *g, const mi_xf_config_t *c,
                                   const mi_xf_samples_t *calib, const mi_xf_samples_t *eval,
                                   mi_xf_tensor_error_t **out, int32_t *count, mi_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_TRANSFORM_H */
