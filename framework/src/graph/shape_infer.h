/* shape_infer.h - the shape-inference context shared by the per-op-family files. */
#ifndef METAINFER_SHAPE_INFER_H
#define METAINFER_SHAPE_INFER_H

#include <math.h>
#include <stdint.h>

#include "graph/graph_internal.h"

/* Small tensors whose values are known while inferring (initializers and the results of
 * shape arithmetic on them), as doubles; NaN marks an element not known (a dynamic dim). */
#define MI__SI_MAX_VALUES 4096

typedef struct mi__si {
  mi_graph_t *g;
  double **val;    /* per tensor, NULL when unknown */
  int64_t *val_n;
  mi_error_t *err;
} mi__si_t;

typedef int32_t (*mi__si_fn)(mi__si_t *c, const mi_node_t *n);

/** Error "node 'NAME' (OP, opset N): <message>" with `code`. */
int32_t mi__si_fail(mi__si_t *c, const mi_node_t *n, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** The node's input k, or NULL when absent or omitted. */
const mi_tensor_t *mi__si_in(const mi__si_t *c, const mi_node_t *n, int32_t k);
/** MI_OK when the node has at least `min` present inputs at the front, else an error. */
int32_t mi__si_need(mi__si_t *c, const mi_node_t *n, int32_t min);
/** Sets output k's dtype and shape (rank -1: unknown); a missing output is ignored. */
void mi__si_set(mi__si_t *c, const mi_node_t *n, int32_t k, int32_t dtype, int32_t rank,
                const int64_t *dims);
/** Known values of input k (count in *count), or NULL. */
const double *mi__si_val(const mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *count);
/** Records the value of output k (copied); silently skipped when too large. */
void mi__si_set_val(mi__si_t *c, const mi_node_t *n, int32_t k, const double *v, int64_t count);
/** Reads known integer values of input k into out (at most max); -1 when unknown or with an
 * unknown element, else the count. */
int64_t mi__si_ints(const mi__si_t *c, const mi_node_t *n, int32_t k, int64_t *out, int64_t max);
/** Normalizes a possibly negative axis for `rank`; -1 (after an error) when out of range. */
int32_t mi__si_axis(mi__si_t *c, const mi_node_t *n, int64_t axis, int32_t rank, int32_t *out);
/** Numpy broadcasting of two shapes into out; MI_ERR_PARSE when incompatible. */
int32_t mi__si_broadcast(mi__si_t *c, const mi_node_t *n, int32_t ra, const int64_t *a,
                         int32_t rb, const int64_t *b, int32_t *rout, int64_t *out);
/** Converts a double back to int64, saturating (INT64_MAX ends of Slice survive). */
int64_t mi__si_d2i(double v);

/* Per-family lookups: the handler for op_type, or NULL. */
mi__si_fn mi__si_lookup_elementwise(const char *op);
mi__si_fn mi__si_lookup_nn(const char *op);
mi__si_fn mi__si_lookup_tensor(const char *op);
mi__si_fn mi__si_lookup_generate(const char *op); /* shape_infer_generate.c */
mi__si_fn mi__si_lookup_control(const char *op);  /* shape_infer_control.c: If, Loop */
mi__si_fn mi__si_lookup_pad(const char *op);      /* shape_infer_pad.c: Pad, Size, LSTM */
mi__si_fn mi__si_lookup_select(const char *op);   /* shape_infer_select.c: ArgMax, TopK, ... */
mi__si_fn mi__si_lookup_rearrange(const char *op); /* shape_infer_rearrange.c: Split, ... */
mi__si_fn mi__si_lookup_quant(const char *op);     /* shape_infer_quant.c: QLinear*, *Integer */

#endif /* METAINFER_SHAPE_INFER_H */
