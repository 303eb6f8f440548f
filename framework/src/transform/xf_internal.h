/* xf_internal.h - graph-editing helpers shared by the transform passes. */
#ifndef MI_TRANSFORM_XF_INTERNAL_H
#define MI_TRANSFORM_XF_INTERNAL_H

#include <stdint.h>

#include "metainfer/mi_core.h"
#include "metainfer/mi_transform.h"

/** The only node reading t, through one input only (and t is not a graph output), or -1. */
int32_t mi__xf_sole_consumer(const mi_graph_t *g, int32_t t);
/** Constant FP32 data of input k of node n (NULL when absent, not constant or not FP32). */
float *mi__xf_const_f32(const mi_graph_t *g, const mi_node_t *n, int32_t k);
/** Adds a new FP32 constant named "<base><suffix>" (made unique); returns its index or -1. */
int32_t mi__xf_add_const(mi_graph_t *g, const char *base, const char *suffix, int32_t dtype,
                         int32_t rank, const int64_t *dims, const void *data, size_t nbytes);
/** Adds a runtime tensor named "<base><suffix>" (made unique) with t's dtype and shape. */
int32_t mi__xf_add_value(mi_graph_t *g, const char *base, const char *suffix, int32_t like);
/** Sets input k of node n, growing its input list (new slots -1) when needed. */
int32_t mi__xf_set_input(mi_graph_t *g, int32_t n, int32_t k, int32_t t);
/** Removes node n, freeing what it owns; later nodes move down by one. */
void mi__xf_remove_node(mi_graph_t *g, int32_t n);
/** Replaces every read of tensor `from` by nodes (not graph outputs) with `to`, except by node
 * `skip` (-1 for none). */
void mi__xf_replace_uses(mi_graph_t *g, int32_t from, int32_t to, int32_t skip);
/** Drops tensors nothing reads, writes or exposes (initializers replaced by the passes) and
 * renumbers the rest. */
int32_t mi__xf_compact(mi_graph_t *g, mi_error_t *err);
/** Re-sorts and re-infers shapes; MI_OK or the error naming the node. */
int32_t mi__xf_refresh(mi_graph_t *g, mi_error_t *err);
/** True for activations f with f(0) == 0 that act elementwise (Relu, Clip with min <= 0, ...). */
int mi__xf_is_zero_act(const mi_graph_t *g, const mi_node_t *n);
/** True for one-input elementwise activations. */
int mi__xf_is_act(const mi_node_t *n);
/** True when node n is a Conv / Gemm / MatMul with a constant FP32 weight (input 1). */
int mi__xf_is_weighted(const mi_graph_t *g, int32_t n);
/* Its W and R rounded to FP16 (float16 initializers read through Cast(to=FLOAT)). */
int32_t mi__xf_round_recurrent_fp16(mi_graph_t *g, int32_t n, mi_error_t *err);

/** Clears keep[] (n entries, all 1 on entry) at the `drop` smallest norm[]; ties go to the lower
 * index, so the result is stable. The choice both pruning passes make. xf_prune.c */
void mi__xf_drop_smallest(const double *norm, int64_t n, int64_t drop, uint8_t *keep);
/** The end of pruning layer `node` once its edits ran with result `rc`: an error naming the node,
 * or the layer and its `drop` channels counted in st (may be NULL), *done set and g refreshed. */
int32_t mi__xf_prune_commit(mi_graph_t *g, int32_t node, int32_t rc, int64_t drop, int *done,
                            mi_xf_stats_t *st, mi_error_t *err);
/** Prunes the `ratio` lowest-L1 output features of Gemm/MatMul `node` when another Gemm/MatMul
 * reads them (through bias Adds and activations); *done = 0 when it cannot. xf_prune_fc.c */
int32_t mi__xf_prune_fc(mi_graph_t *g, int32_t node, double ratio, int *done, mi_xf_stats_t *st,
                        mi_error_t *err);
/** Quantizes the weights of node n as `l` says (FP16, INT8, INT4). For INT8/INT4, when `deq` is
 * not NULL it receives the dequantized weights (the weight's element count). xf_quant.c */
/* Rounds node n's runtime input 0 to BF16 through Cast(to=BFLOAT16) -> Cast(to=FLOAT) (the IR
 * holds the rounded values as FLOAT32); a constant input is left as it is. xf_quant.c */
int32_t mi__xf_round_input_bf16(mi_graph_t *g, int32_t n, mi_error_t *err);
int32_t mi__xf_quantize_weights(mi_graph_t *g, int32_t n, const mi_xf_layer_t *l, float *deq,
                                mi_xf_stats_t *st, mi_error_t *err);
/** mi_xf_fold_bn on the Conv / Gemm nodes n with only[n] set (every one where only is NULL); only
 * (node_count entries) follows the nodes as folded BatchNormalizations leave. xf_fold_bn.c */
int32_t mi__xf_fold_bn_after(mi_graph_t *g, uint8_t *only, mi_xf_stats_t *st, mi_error_t *err);
/** Marks in qt (tensor_count entries) every activation an INT8 device would store, given the
 * weighted layers with INT8 activations (int8_layer, node_count entries). xf_qdq.c */
int32_t mi__xf_plan_qdq(const mi_graph_t *g, const uint8_t *int8_layer, int keep_float_output,
                        uint8_t *qt, mi_error_t *err);
/** Puts QuantizeLinear -> DequantizeLinear (asymmetric uint8 over [lo, hi] widened to hold 0)
 * on activation t; every reader then reads the DequantizeLinear. A graph output keeps its
 * name: the DequantizeLinear writes it. xf_qdq.c */
int32_t mi__xf_insert_qdq(mi_graph_t *g, int32_t t, float lo, float hi, mi_error_t *err);
/** The asymmetric uint8 scale and zero point of range [lo, hi] widened to hold 0. xf_qdq.c */
void mi__xf_uint8_params(float lo, float hi, float *s, uint8_t *z);
/** Calibrates the range of every tensor flagged in `want` (tensor_count entries) over `calib`:
 * ranges[2*t], ranges[2*t+1] = lo, hi (NaN where not measured). Where mean_axis[t] >= 0 (both
 * may be NULL), means[t] is a malloc'd array of t's per-channel means along that axis over the
 * samples (NULL when not measured; the caller frees). xf_calib.c */
int32_t mi__xf_calibrate(const mi_graph_t *g, const uint8_t *want, const int8_t *mean_axis,
                         const mi_xf_samples_t *calib, int32_t method, double percentile,
                         float *ranges, double **means, mi_error_t *err);
/** Mean squared error of quantizing v[0..n) to uint8 over [lo, hi] and back. xf_calib.c */
double mi__xf_qdq_mse(const float *v, int64_t n, float lo, float hi);
/** Narrows the min-max range [*lo, *hi] of v to the clipping range of least mi__xf_qdq_mse
 * (a grid over the range scaled, then each end alone; min-max itself is a candidate). */
void mi__xf_mse_range(const float *v, int64_t n, float *lo, float *hi);
/** The channel axis of the data input (input 0) of weighted node n whose per-channel means bias
 * correction needs, or -1 where it does not apply (MatMul, transposed Gemm A). xf_biascorr.c */
int32_t mi__xf_bias_input_axis(const mi_graph_t *g, int32_t n);
/* Data-aware cross-layer equalization (`equalize: data`, xf_equalize.c). */
int32_t mi__xf_equalize_data(mi_graph_t *g, const mi_xf_samples_t *calib, mi_xf_stats_t *st,
                             mi_error_t *err);
/** Folds E[(Wq - W) x] into the bias of weighted node n: w is its FP32 weight, wq the weight
 * it now computes with (same layout), mean the per-channel means of its input (from
 * mi__xf_calibrate). Adds a bias where there was none. xf_biascorr.c */
int32_t mi__xf_bias_correct(mi_graph_t *g, int32_t n, const float *w, const float *wq,
                            const double *mean, int64_t mean_count, mi_error_t *err);

/** Elements of tensor t: from its data when constant, else its static shape (-1 unknown). */
int64_t mi__xf_numel(const mi_graph_t *g, int32_t t);
/** The means mean_axis flags (as mi__xf_calibrate gives them, malloc'd) from cache m, which
 * computes every weighted layer's input means of g over calib the first time (g: the model m
 * serves, unchanged by any pass). *hit 0: some flagged tensor is not in m (nothing set), the
 * caller calibrates them itself. xf_means.c */
int32_t mi__xf_means_get(mi_xf_means_t *m, const mi_graph_t *g, const int8_t *mean_axis,
                         const mi_xf_samples_t *calib, double **means, int *hit, mi_error_t *err);
/** malloc'd copy of s (non-NULL), or NULL when out of memory. */
char *mi__xf_strdup(const char *s);

/* The same passes as c, every layer FP32 and unpruned (xf_accuracy.c). NULL when out of memory. */
mi_xf_config_t *mi__xf_fp32_shadow(const mi_xf_config_t *c);

#endif
