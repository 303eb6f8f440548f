/* ref.h - internal entry points of the reference interpreter used by other modules. */
#ifndef MI_REF_REF_H
#define MI_REF_REF_H

#include "metainfer/mi_core.h"

/** Runs one node of `g` on the reference path. `inputs` has node->input_count entries (NULL
 * for an omitted optional input), in the node's input order; on success outputs[i]
 * (node->output_count entries) are new arrays. Constant inputs are passed like any other. */
int32_t mi__ref_node(const mi_graph_t *g, int32_t node, const mi_array_t *const *inputs,
                     mi_array_t **outputs, mi_error_t *err);

/** mi_ref_run for a subgraph: captures[i] (g->capture_count entries, borrowed) is the value of
 * the enclosing graph that g->captures[i] names. */
int32_t mi__ref_run_scoped(const mi_graph_t *g, const mi_array_t *const *inputs,
                           int32_t input_count, const mi_array_t *const *captures,
                           mi_array_t **outputs, int32_t output_count, mi_error_t *err);

#endif
