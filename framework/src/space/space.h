/* space.h - what the space module offers the modules that search it (search, meta, task) beyond
 * the public API: the shared trial log, a variant's fused patterns. */
#ifndef MI_SPACE_SPACE_H
#define MI_SPACE_SPACE_H

#include "metainfer/mi_tune.h"

/** Records `pt` in the trial log `r` (capacity *cap): the index of the trial with the same
 * hash, or of a new one replayed through o->lookup_point / o->lookup or measured through
 * o->evaluate (*fresh = 1); -1 when out of memory. Shared by every strategy (search, meta). */
int32_t mi__trial_eval(const mi_space_t *s, const mi_search_options_t *o, mi_search_result_t *r,
                       int32_t *cap, const int32_t *pt, int *fresh);

/** The fused patterns (mi_fuse_bits) the variant named by value `v` of variant dimension `d`
 * declares; 0 for auto (value 0, no variant named) or when `d` is not a variant dimension. */
uint32_t mi__space_variant_fuse(const mi_space_t *s, int32_t d, int32_t v);

/** 0 when value `v` of variant dimension `d` names a variant that does not compute in FP32
 * (blis-cpu's conv.packed_gemm_fp16 rounds FP32 weights to FP16) while another of the dimension's
 * variants does: as a kernel choice it would change an FP32 layer's numerics, which only a
 * precision choice may (its drop then counted as the label's). 1 otherwise (auto included, and
 * every variant of a device without FP32 kernels for the node). */
int mi__space_variant_keeps_fp32(const mi_space_t *s, int32_t d, int32_t v);

/** 1 when dimension `d` is a weighted node's precision choice (node.<name>.precision). */
int mi__space_is_precision(const mi_space_t *s, int32_t d);

#endif
