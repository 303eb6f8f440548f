/* onnx_load.c - reads an ONNX model from a file or memory, checks its opset and hands the
 * main graph to the importer (onnx_import.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/attn.h"
#include "graph/ms_fuse.h"
#include "graph/nbits.h"
#include "graph/onnx_internal.h"
#include "graph/seq_lower.h"

static int32_t import_model(const void *data, size_t size, const char *base_dir,
                            const char *label, mi_graph_t **out, mi_error_t *err) {
  mi_graph_t *g = NULL;
  int32_t rc = MI_OK;
  Onnx__ModelProto *mp = NULL;
  if (size == 0) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: not a valid ONNX model (empty file)", label);
    goto done;
  }
  if ((rc = mi__onnx_prescan(data, size, label, err)) != MI_OK) goto done;
  if (!(mp = onnx__model_proto__unpack(NULL, size, data))) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: not a valid ONNX model (protobuf parse failed)", label);
    goto done;
  }
  if (!mp->graph) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: not a valid ONNX model (no graph)", label);
    goto done;
  }
  int64_t opset = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++)
    if (mi__onnx_default_domain(mp->opset_import[i]->domain))
      opset = mp->opset_import[i]->has_version ? mp->opset_import[i]->version : 1;
  if (opset < 0 && mp->graph->n_node) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: the model declares no default-domain opset", label);
    goto done;
  }
  /* Opsets 22-25 (ONNX 1.17-1.20) changed no op's semantics for the types held here: they
   * added types (bfloat16, float8, float4, 2-bit) and ops (Attention, RMSNormalization,
   * RotaryEmbedding in 23; Swish, TensorScatter in 24), which the op table refuses by name
   * where it has none. Later opsets are not known. */
  if (opset >= 0 && (opset < 7 || opset > 25)) {
    rc = mi_errorf(err, MI_ERR_UNSUPPORTED,
                   "%s: default-domain opset %lld is not supported (supported: 7..25)", label,
                   (long long)opset);
    goto done;
  }
  if (!(g = mi_graph_create(mp->graph->name && mp->graph->name[0] ? mp->graph->name : "graph"))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    goto done;
  }
  g->opset = opset >= 0 ? opset : 13;
  rc = mi__onnx_import_main(g, mp->graph, base_dir, label, err);
  /* sequences and optionals whose contents are known here: lowered to tensor ops first, so the
   * lowerings below and everything after see tensors only (graph/seq_lower.c) */
  if (rc == MI_OK && mi__graph_has_seq(g)) rc = mi__graph_lower_seq(g, label, err);
  if (rc == MI_OK && mi__graph_has_nbits(g)) {
    /* com.microsoft MatMulNBits: lowered here, so that node indices are the model's for every
     * consumer (profiles, per-node tables) and every device runs it (graph/nbits.c) */
    mi_error_t e = {0};
    /* then the packed weights no node reads any more */
    if ((rc = mi__graph_lower_nbits(g, &e)) == MI_OK) rc = mi__graph_drop_unread(g, &e);
    if (rc != MI_OK) rc = mi_errorf(err, rc, "%s: %s", label, e.message);
  }
  if (rc == MI_OK && mi__graph_has_msfuse(g)) {
    /* ONNX Runtime's fused transformer ops: lowered to standard ones (graph/ms_fuse_lower.c) */
    mi_error_t e = {0};
    if ((rc = mi__graph_lower_msfuse(g, &e)) == MI_OK) rc = mi__graph_drop_unread(g, &e);
    if (rc != MI_OK) rc = mi_errorf(err, rc, "%s: %s", label, e.message);
  }
  /* com.microsoft Attention: lowered to standard ops here too (graph/attn_lower.c) */
  if (rc == MI_OK && mi__graph_has_attn(g)) rc = mi__graph_lower_attn(g, label, err);
done:
  if (mp) onnx__model_proto__free_unpacked(mp, NULL);
  if (rc != MI_OK) {
    mi_graph_destroy(g);
    g = NULL;
  }
  *out = g;
  return rc;
}

MI_API int32_t mi_onnx_load_buffer(const void *data, size_t size, const char *base_dir,
                                   mi_graph_t **out, mi_error_t *err) {
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "onnx load: out is NULL");
  *out = NULL;
  if (!data && size) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "onnx load: data is NULL");
  return import_model(data, size, base_dir, "<memory>", out, err);
}

MI_API int32_t mi_onnx_load(const char *path, mi_graph_t **out, mi_error_t *err) {
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "onnx load: out is NULL");
  *out = NULL;
  if (!path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "onnx load: path is NULL");
  int32_t rc = MI_OK;
  char *buf = NULL;
  char *dir = NULL;
  size_t size = 0;
  /* no bound of our own: protobuf-c's is the one that counts */
  if ((rc = mi__read_file(path, SIZE_MAX / 2, &buf, &size, err)) != MI_OK) return rc;
  if (!(dir = mi__path_dir(path))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  rc = import_model(buf, size, dir, path, out, err);
done:
  free(buf);
  free(dir);
  return rc;
}
