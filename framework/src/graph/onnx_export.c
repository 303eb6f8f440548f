/* onnx_export.c - writes a graph as an ONNX ModelProto (IR version 8, or 10 from opset 21 or with
 * packed INT4 constants) with protobuf-c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/onnx_dtype.h"
#include "onnx.pb-c.h"

/* Every ValueInfoProto needs a small tree of messages; they live together in one block. */
typedef struct vi_store {
  Onnx__ValueInfoProto vi;
  Onnx__TypeProto tp;
  Onnx__TypeProto__Tensor tt;
  Onnx__TensorShapeProto sh;
  Onnx__TensorShapeProto__Dimension d[MI_MAX_RANK];
  Onnx__TensorShapeProto__Dimension *dp[MI_MAX_RANK];
} vi_store_t;

typedef struct node_store {
  Onnx__NodeProto np;
  char **in;
  char **out;
  Onnx__AttributeProto *attrs;
  Onnx__AttributeProto **attr_ptrs;
  ProtobufCBinaryData *strs; /* the names of `activations`, pointing into its joined STRING */
} node_store_t;

static char k_empty[] = "";
static char k_dyn[] = "N";

static void fill_value_info(vi_store_t *s, const mi_tensor_t *t) {
  onnx__value_info_proto__init(&s->vi);
  onnx__type_proto__init(&s->tp);
  onnx__type_proto__tensor__init(&s->tt);
  onnx__tensor_shape_proto__init(&s->sh);
  s->vi.name = t->name;
  s->vi.type = &s->tp;
  s->tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  s->tp.tensor_type = &s->tt;
  int32_t et = mi__onnx_from_dtype(t->dtype);
  if (et <= 0) {
    /* A tensor type without element type is invalid ONNX (runtimes reject "data type 0");
     * no type at all lets the reader infer it. */
    s->vi.type = NULL;
    return;
  }
  s->tt.has_elem_type = 1;
  s->tt.elem_type = et;
  if (t->rank < 0) return;
  s->tt.shape = &s->sh;
  s->sh.n_dim = (size_t)t->rank;
  s->sh.dim = s->dp;
  for (int32_t i = 0; i < t->rank; i++) {
    onnx__tensor_shape_proto__dimension__init(&s->d[i]);
    if (t->dims[i] >= 0) {
      s->d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      s->d[i].dim_value = t->dims[i];
    } else {
      s->d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      s->d[i].dim_param = t->dim_names[i] ? t->dim_names[i] : k_dyn;
    }
    s->dp[i] = &s->d[i];
  }
}

static int fill_node(node_store_t *s, const mi_graph_t *g, const mi_node_t *n) {
  onnx__node_proto__init(&s->np);
  s->np.name = n->name;
  s->np.op_type = n->op_type;
  if (n->domain && n->domain[0]) s->np.domain = n->domain;
  s->in = calloc((size_t)n->input_count + 1, sizeof(char *));
  s->out = calloc((size_t)n->output_count + 1, sizeof(char *));
  s->attrs = calloc((size_t)n->attr_count + 1, sizeof *s->attrs);
  s->attr_ptrs = calloc((size_t)n->attr_count + 1, sizeof *s->attr_ptrs);
  if (!s->in || !s->out || !s->attrs || !s->attr_ptrs) return -1;
  for (int32_t i = 0; i < n->input_count; i++)
    s->in[i] = n->inputs[i] >= 0 ? g->tensors[n->inputs[i]].name : k_empty;
  for (int32_t i = 0; i < n->output_count; i++) s->out[i] = g->tensors[n->outputs[i]].name;
  s->np.n_input = (size_t)n->input_count;
  s->np.input = s->in;
  s->np.n_output = (size_t)n->output_count;
  s->np.output = s->out;
  for (int32_t i = 0; i < n->attr_count; i++) {
    const mi_attr_t *a = &n->attrs[i];
    Onnx__AttributeProto *p = &s->attrs[i];
    onnx__attribute_proto__init(p);
    p->name = (char *)a->name;
    p->has_type = 1;
    switch (a->type) {
    case MI_ATTR_INT:
      p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
      p->has_i = 1;
      p->i = a->i;
      break;
    case MI_ATTR_FLOAT:
      p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
      p->has_f = 1;
      p->f = a->f;
      break;
    case MI_ATTR_INTS:
      p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
      p->n_ints = (size_t)a->count;
      p->ints = (int64_t *)a->ints;
      break;
    case MI_ATTR_FLOATS:
      p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
      p->n_floats = (size_t)a->count;
      p->floats = (float *)a->floats;
      break;
    default:
      if (a->s && strcmp(a->name, "activations") == 0 && !s->strs) { /* onnx_import.c joined them */
        size_t k = 1;
        for (const char *c = a->s; *c; c++) k += *c == ',';
        if (!(s->strs = calloc(k, sizeof *s->strs))) return -1;
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        p->n_strings = k;
        p->strings = s->strs;
        k = 0;
        for (const char *c = a->s;; c++) {
          const char *e = strchr(c, ',');
          s->strs[k].data = (uint8_t *)c;
          s->strs[k++].len = e ? (size_t)(e - c) : strlen(c);
          if (!e) break;
          c = e;
        }
        break;
      }
      p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
      p->has_s = 1;
      p->s.data = (uint8_t *)(a->s ? a->s : k_empty);
      p->s.len = strlen((const char *)p->s.data);
      break;
    }
    s->attr_ptrs[i] = p;
  }
  s->np.n_attribute = (size_t)n->attr_count;
  s->np.attribute = s->attr_ptrs;
  return 0;
}

static int is_listed(const int32_t *list, int32_t count, int32_t t) {
  for (int32_t i = 0; i < count; i++)
    if (list[i] == t) return 1;
  return 0;
}

MI_API int32_t mi_onnx_save(const mi_graph_t *g, const char *path, mi_error_t *err) {
  if (!g || !path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "onnx save: NULL argument");
  for (int32_t i = 0; i < g->node_count; i++) /* writing GRAPH attributes is not done yet */
    if (g->nodes[i].subgraph_count)
      return mi_errorf(err, MI_ERR_UNSUPPORTED,
                       "%s: node '%s' (%s) has subgraphs, which the "
                       "exporter cannot write",
                       path, g->nodes[i].name, g->nodes[i].op_type);
  int32_t rc = MI_OK, nt = g->tensor_count, nn = g->node_count;
  int32_t n_init = 0, n_vi = 0, n_dom = 0;
  Onnx__TensorProto *inits = calloc((size_t)nt + 1, sizeof *inits);
  Onnx__TensorProto **init_ptrs = calloc((size_t)nt + 1, sizeof *init_ptrs);
  int64_t *dims = calloc((size_t)nt * MI_MAX_RANK + 1, sizeof *dims);
  vi_store_t *vis = calloc((size_t)nt + 1, sizeof *vis);
  Onnx__ValueInfoProto **in_ptrs = calloc((size_t)g->input_count + 1, sizeof *in_ptrs);
  Onnx__ValueInfoProto **out_ptrs = calloc((size_t)g->output_count + 1, sizeof *out_ptrs);
  Onnx__ValueInfoProto **vi_ptrs = calloc((size_t)nt + 1, sizeof *vi_ptrs);
  node_store_t *nodes = calloc((size_t)nn + 1, sizeof *nodes);
  Onnx__NodeProto **node_ptrs = calloc((size_t)nn + 1, sizeof *node_ptrs);
  Onnx__OperatorSetIdProto *opsets = calloc((size_t)nn + 1, sizeof *opsets);
  Onnx__OperatorSetIdProto **opset_ptrs = calloc((size_t)nn + 1, sizeof *opset_ptrs);
  uint8_t *buf = NULL;
  FILE *f = NULL;
  if (!inits || !init_ptrs || !dims || !vis || !in_ptrs || !out_ptrs || !vi_ptrs || !nodes ||
      !node_ptrs || !opsets || !opset_ptrs)
    goto oom;

  for (int32_t t = 0; t < nt; t++) {
    const mi_tensor_t *x = &g->tensors[t];
    if (!x->data) continue;
    int32_t et = mi__onnx_from_dtype(x->dtype);
    if (et <= 0) {
      rc = mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "%s: initializer '%s' has dtype %s, which ONNX "
                     "cannot store",
                     path, x->name, mi_dtype_name(x->dtype));
      goto done;
    }
    Onnx__TensorProto *p = &inits[n_init];
    onnx__tensor_proto__init(p);
    p->name = x->name;
    p->has_data_type = 1;
    p->data_type = et;
    int32_t rank = x->rank < 0 ? 1 : x->rank;
    for (int32_t i = 0; i < rank; i++)
      dims[(size_t)t * MI_MAX_RANK + i] =
          x->rank < 0 ? (int64_t)(x->nbytes / (mi_dtype_size(x->dtype) ? mi_dtype_size(x->dtype) : 1))
                      : x->dims[i];
    p->n_dims = (size_t)rank;
    p->dims = &dims[(size_t)t * MI_MAX_RANK];
    /* raw_data is little-endian by the spec; every host we build for is little-endian. */
    p->has_raw_data = 1;
    p->raw_data.data = x->data;
    p->raw_data.len = x->nbytes;
    init_ptrs[n_init++] = p;
  }
  for (int32_t i = 0; i < g->input_count; i++) {
    fill_value_info(&vis[n_vi], &g->tensors[g->inputs[i]]);
    in_ptrs[i] = &vis[n_vi++].vi;
  }
  for (int32_t i = 0; i < g->output_count; i++) {
    fill_value_info(&vis[n_vi], &g->tensors[g->outputs[i]]);
    out_ptrs[i] = &vis[n_vi++].vi;
  }
  int32_t n_extra = 0;
  /* A Cast to BFLOAT16's output is held as FLOAT32 here (the BF16 transform's rounding); typed
   * FLOAT in the file it would contradict the Cast: the reader infers it instead. */
  uint8_t *untyped = calloc((size_t)nt + 1, 1);
  if (!untyped) goto oom;
  for (int32_t i = 0; i < nn; i++)
    if (!strcmp(g->nodes[i].op_type, "Cast") && mi_node_attr_int(&g->nodes[i], "to", 0) == 16 &&
        g->nodes[i].output_count == 1 && g->nodes[i].outputs[0] >= 0)
      untyped[g->nodes[i].outputs[0]] = 1;
  for (int32_t t = 0; t < nt; t++) {
    const mi_tensor_t *x = &g->tensors[t];
    if (x->data || x->rank < 0 || x->dtype == MI_DTYPE_UNDEFINED || untyped[t] ||
        is_listed(g->inputs, g->input_count, t) || is_listed(g->outputs, g->output_count, t))
      continue;
    fill_value_info(&vis[n_vi], x);
    vi_ptrs[n_extra++] = &vis[n_vi++].vi;
  }
  free(untyped);
  for (int32_t i = 0; i < nn; i++) {
    const mi_node_t *n = &g->nodes[i];
    /* a loaded MatMulNBits is a blocked DequantizeLinear here (graph/nbits.c): ONNX has that
     * attribute from opset 21 only, and a graph's opset cannot be raised without rewriting the
     * ops that changed on the way */
    if (g->opset < 21 && mi_node_attr_int(n, "block_size", 0) > 0 &&
        (!strcmp(n->op_type, "DequantizeLinear") || !strcmp(n->op_type, "QuantizeLinear"))) {
      rc = mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "%s: node '%s' (%s) has block_size, which ONNX has from opset 21 (the graph's "
                     "opset is %lld)",
                     path, n->name, n->op_type, (long long)g->opset);
      goto done;
    }
    if (fill_node(&nodes[i], g, &g->nodes[i])) goto oom;
    node_ptrs[i] = &nodes[i].np;
  }
  /* The default domain first, then every other domain a node uses (version 1: we do not
   * know better, and the importer only checks the default domain's version). */
  onnx__operator_set_id_proto__init(&opsets[0]);
  opsets[0].domain = k_empty;
  opsets[0].has_version = 1;
  opsets[0].version = g->opset;
  opset_ptrs[n_dom++] = &opsets[0];
  for (int32_t i = 0; i < nn; i++) {
    char *d = g->nodes[i].domain;
    if (!d || !d[0]) continue;
    int seen = 0;
    for (int32_t k = 1; k < n_dom; k++) seen |= strcmp(opsets[k].domain, d) == 0;
    if (seen) continue;
    onnx__operator_set_id_proto__init(&opsets[n_dom]);
    opsets[n_dom].domain = d;
    opsets[n_dom].has_version = 1;
    opsets[n_dom].version = 1;
    opset_ptrs[n_dom] = &opsets[n_dom];
    n_dom++;
  }

  Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
  gp.name = g->name;
  gp.n_node = (size_t)nn;
  gp.node = node_ptrs;
  gp.n_initializer = (size_t)n_init;
  gp.initializer = init_ptrs;
  gp.n_input = (size_t)g->input_count;
  gp.input = in_ptrs;
  gp.n_output = (size_t)g->output_count;
  gp.output = out_ptrs;
  gp.n_value_info = (size_t)n_extra;
  gp.value_info = vi_ptrs;
  Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
  mp.has_ir_version = 1;
  /* IR 10 came with opset 21 (INT4 / UINT4, DequantizeLinear's block_size); below it, IR 8 */
  int int4 = 0;
  for (int32_t t = 0; t < nt; t++) int4 |= g->tensors[t].data && g->tensors[t].dtype == MI_DTYPE_INT4;
  mp.ir_version = g->opset >= 21 || int4 ? 10 : 8;
  mp.producer_name = (char *)"metainfer";
  mp.producer_version = (char *)MI_VERSION_STRING;
  mp.n_opset_import = (size_t)n_dom;
  mp.opset_import = opset_ptrs;
  mp.graph = &gp;

  size_t size = onnx__model_proto__get_packed_size(&mp);
  if (!(buf = malloc(size ? size : 1))) goto oom;
  onnx__model_proto__pack(&mp, buf);
  if (!(f = fopen(path, "wb"))) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    goto done;
  }
  if (fwrite(buf, 1, size, f) != size) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    goto done;
  }
  int close_rc = fclose(f);
  f = NULL;
  if (close_rc != 0) rc = mi_errorf(err, MI_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory while writing ONNX", path);
done:
  if (f) fclose(f);
  if (nodes)
    for (int32_t i = 0; i < nn; i++) {
      free(nodes[i].in);
      free(nodes[i].out);
      free(nodes[i].attrs);
      free(nodes[i].attr_ptrs);
      free(nodes[i].strs);
    }
  free(buf);
  free(inits);
  free(init_ptrs);
  free(dims);
  free(vis);
  free(in_ptrs);
  free(out_ptrs);
  free(vi_ptrs);
  free(nodes);
  free(node_ptrs);
  free(opsets);
  free(opset_ptrs);
  return rc;
}
