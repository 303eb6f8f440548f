/* onnx_internal.h - what the ONNX importer's files share (protobuf-c types in, IR values out). */
#ifndef METAINFER_ONNX_INTERNAL_H
#define METAINFER_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph_internal.h"
#include "onnx.pb-c.h"

/* Subgraphs nest (a Loop inside an If); deeper than this is a malformed or hostile model. */
#define MI__ONNX_MAX_SUBGRAPH_DEPTH 16

/** Walks the protobuf wire format of a ModelProto before protobuf-c unpacks it (which recurses
 * once per nested message, unbounded): MI_ERR_PARSE naming `label` and the byte offset when
 * subgraphs nest deeper than MI__ONNX_MAX_SUBGRAPH_DEPTH or messages deeper than the walk's
 * own limit. Malformed bytes are left for protobuf-c to refuse. */
int32_t mi__onnx_prescan(const void *data, size_t size, const char *label, mi_error_t *err);

/** A decoded tensor value: dtype (after DOUBLE/BFLOAT16 -> float32), shape and owned data. */
typedef struct mi__onnx_value {
  int32_t dtype;
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
  void *data;
  size_t nbytes;
} mi__onnx_value_t;

/** Decodes a TensorProto (raw_data, typed fields or external data under base_dir). `label`
 * (the model file) starts every error message. On failure v->data is NULL. */
int32_t mi__onnx_decode_tensor(const Onnx__TensorProto *tp, const char *base_dir,
                               const char *label, mi__onnx_value_t *v, mi_error_t *err);

/** True for the default ONNX domain ("" or "ai.onnx"). */
int mi__onnx_default_domain(const char *d);
/** Imports a model's main graph into g (whose opset is set); `label` (the model file) starts
 * every error message and base_dir resolves external data. */
int32_t mi__onnx_import_main(mi_graph_t *g, const Onnx__GraphProto *gp, const char *base_dir,
                             const char *label, mi_error_t *err);

/** Name -> tensor index map; keys are borrowed (the graph's tensor names). */
typedef struct mi__name_map {
  const char **keys;
  int32_t *vals;
  size_t cap, count;
} mi__name_map_t;
/** The index stored for `k`, or -1. */
int32_t mi__name_map_get(const mi__name_map_t *m, const char *k);
/** Adds k -> v (k must be new); 0, or -1 when out of memory. */
int mi__name_map_put(mi__name_map_t *m, const char *k, int32_t v);
void mi__name_map_free(mi__name_map_t *m);

#endif /* METAINFER_ONNX_INTERNAL_H */
