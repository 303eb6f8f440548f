/* einsum.h - the Einsum equations we support, parsed once for shape inference and ref. */
#ifndef METAINFER_EINSUM_H
#define METAINFER_EINSUM_H

#include <stdint.h>

#include "metainfer/mi_graph.h"

/* Distinct labels one equation may use (every axis of two rank-8 operands). */
#define MI__EINSUM_MAX_LABELS (2 * MI_MAX_RANK)

/** A parsed equation: every axis of every operand and of the output names a label
 * (0..nlab-1). Supported: one or two operands, letters only, no ellipsis, no label twice in
 * one term (diagonals), output given after "->" or implied (labels seen once, sorted). That
 * covers matmul and batched matmul ("bij,bjk->bik"), transposes ("ij->ji"), reductions
 * ("ij->i"), outer and inner products. */
typedef struct mi__einsum {
  int32_t nin;
  int32_t in_rank[2];
  int8_t in_lab[2][MI_MAX_RANK];
  int32_t out_rank;
  int8_t out_lab[MI_MAX_RANK];
  int32_t nlab;
} mi__einsum_t;

/** Parses `eq` for `nin` operands. 0 on success; -1 with *why (a static string saying what is
 * not supported) otherwise. */
int mi__einsum_parse(const char *eq, int32_t nin, mi__einsum_t *e, const char **why);

#endif /* METAINFER_EINSUM_H */
