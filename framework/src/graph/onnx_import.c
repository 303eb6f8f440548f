/* onnx_import.c - turns a parsed ONNX GraphProto (and its subgraphs) into the graph IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/onnx_dtype.h"
#include "graph/onnx_internal.h"

typedef struct importer {
  const char *label; /* the model file, first word of every error */
  const char *base_dir;
  mi_graph_t *g;
  mi__name_map_t map;
  struct importer *parent; /* the enclosing graph's importer, NULL for the main graph */
  int depth;
  mi_error_t *err;
} importer_t;

static int32_t oom(importer_t *im) {
  return mi_errorf(im->err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", im->label);
}

/* Adds a tensor whose name must be new. */
static int32_t new_tensor(importer_t *im, const char *name, int32_t *out) {
  if (mi__name_map_get(&im->map, name) >= 0)
    return mi_errorf(im->err, MI_ERR_PARSE, "%s: tensor '%s' is defined twice", im->label, name);
  int32_t t = mi_graph_add_tensor(im->g, name, MI_DTYPE_UNDEFINED, -1, NULL);
  if (t < 0 || mi__name_map_put(&im->map, im->g->tensors[t].name, t)) return oom(im);
  *out = t;
  return MI_OK;
}

/* A name used in this graph: defined here or, in a subgraph, a value of an enclosing graph,
 * which becomes a capture (a local tensor of the same name bound when the subgraph runs).
 * *out is -1 when nobody defines it. */
static int32_t resolve(importer_t *im, const char *name, int32_t *out) {
  int32_t t = mi__name_map_get(&im->map, name), pt = -1, rc;
  *out = t;
  if (t >= 0 || !im->parent) return MI_OK;
  if ((rc = resolve(im->parent, name, &pt)) != MI_OK || pt < 0) return rc;
  if ((rc = new_tensor(im, name, &t))) return rc;
  mi_tensor_t *x = &im->g->tensors[t];
  const mi_tensor_t *px = &im->parent->g->tensors[pt];
  x->dtype = px->dtype;
  mi__tensor_set_shape(x, px->rank, px->dims);
  int32_t *caps = realloc(im->g->captures, (size_t)(im->g->capture_count + 1) * sizeof *caps);
  if (!caps) return oom(im);
  im->g->captures = caps;
  caps[im->g->capture_count++] = t;
  *out = t;
  return MI_OK;
}

static int32_t add_value(importer_t *im, const char *name, mi__onnx_value_t *v) {
  int32_t t = -1, rc = new_tensor(im, name, &t);
  if (rc != MI_OK) {
    free(v->data);
    return rc;
  }
  mi_tensor_t *x = &im->g->tensors[t];
  x->dtype = v->dtype;
  mi__tensor_set_shape(x, v->rank, v->dims);
  x->data = v->data;
  x->nbytes = v->nbytes;
  v->data = NULL;
  return MI_OK;
}

/* Applies a ValueInfo's type to a tensor; `strict` (graph inputs) refuses element types we do
 * not support instead of leaving the tensor untyped. */
static int32_t apply_type(importer_t *im, mi_tensor_t *x, const Onnx__TypeProto *tp, int strict) {
  if (!tp) return MI_OK; /* no type at all: left unknown, to be bound at run time */
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    int seq = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
              tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
    /* a Loop body's input may carry a sequence: the loader's sequence lowering
     * (seq_lower.c) takes it or refuses it naming the loop */
    if (strict && !(seq && im->parent))
      return mi_errorf(im->err, MI_ERR_UNSUPPORTED, "%s: input '%s' is %s (only tensor inputs are supported)",
                       im->label, x->name, seq ? "a sequence or an optional" : "not a tensor");
    return MI_OK;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  int32_t dt = mi__dtype_from_onnx(tt->has_elem_type ? tt->elem_type : 0);
  if (dt == MI_DTYPE_UNDEFINED && strict)
    return mi_errorf(im->err, MI_ERR_UNSUPPORTED, "%s: input '%s' has unsupported element type %d (%s)",
                     im->label, x->name, (int)tt->elem_type, mi__onnx_type_name(tt->elem_type));
  if (dt != MI_DTYPE_UNDEFINED) x->dtype = dt;
  if (!tt->shape) return MI_OK;
  if (tt->shape->n_dim > MI_MAX_RANK)
    return mi_errorf(im->err, MI_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %zu (at most %d)",
                     im->label, x->name, tt->shape->n_dim, MI_MAX_RANK);
  int64_t dims[MI_MAX_RANK] = {0};
  int32_t rank = (int32_t)tt->shape->n_dim;
  for (int32_t i = 0; i < rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    dims[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0
                  ? d->dim_value
                  : MI_DIM_DYNAMIC;
  }
  mi__tensor_set_shape(x, rank, dims);
  for (int32_t i = 0; i < rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
        d->dim_param[0] && !(x->dim_names[i] = mi__strdup(d->dim_param)))
      return oom(im);
  }
  return MI_OK;
}

static const char *node_label(const Onnx__NodeProto *np, size_t idx, char *buf, size_t n) {
  if (np->name && np->name[0]) return np->name;
  snprintf(buf, n, "%s_%zu", np->op_type ? np->op_type : "node", idx);
  return buf;
}

/* A value_float(s) / value_int(s) Constant's value: a scalar (rank 0) or a list of n elements
 * of `es` bytes. MI_OK, or MI_ERR_OUT_OF_MEMORY. */
static int32_t list_value(mi__onnx_value_t *v, int32_t dtype, int scalar, size_t n, size_t es,
                          const void *src) {
  v->dtype = dtype;
  v->rank = scalar ? 0 : 1;
  v->dims[0] = (int64_t)n;
  if (!(v->data = malloc(n ? n * es : 1))) return MI_ERR_OUT_OF_MEMORY;
  if (n) memcpy(v->data, src, n * es);
  v->nbytes = n * es;
  return MI_OK;
}

/* A Constant node becomes an initializer named after its output. */
static int32_t import_constant(importer_t *im, const Onnx__NodeProto *np, const char *nname) {
  if (np->n_output < 1 || !np->output[0][0])
    return mi_errorf(im->err, MI_ERR_PARSE, "%s: node '%s' (Constant) has no output", im->label,
                     nname);
  mi__onnx_value_t v = {0};
  for (size_t i = 0; i < np->n_attribute; i++) {
    const Onnx__AttributeProto *a = np->attribute[i];
    const char *an = a->name ? a->name : "";
    int32_t rc = MI_OK;
    if (strcmp(an, "value") == 0 && a->t) {
      rc = mi__onnx_decode_tensor(a->t, im->base_dir, im->label, &v, im->err);
    } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0) {
      int scalar = an[11] == '\0';
      if (list_value(&v, MI_DTYPE_FLOAT32, scalar, scalar ? 1 : a->n_floats, sizeof(float),
                     scalar ? (const void *)&a->f : (const void *)a->floats))
        return oom(im);
    } else if (strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0) {
      int scalar = an[9] == '\0';
      if (list_value(&v, MI_DTYPE_INT64, scalar, scalar ? 1 : a->n_ints, sizeof(int64_t),
                     scalar ? (const void *)&a->i : (const void *)a->ints))
        return oom(im);
    } else {
      return mi_errorf(im->err, MI_ERR_UNSUPPORTED,
                       "%s: node '%s' (Constant, opset %lld): attribute '%s' unsupported",
                       im->label, nname, (long long)im->g->opset, an);
    }
    if (rc != MI_OK) return rc;
    return add_value(im, np->output[0], &v);
  }
  return mi_errorf(im->err, MI_ERR_PARSE, "%s: node '%s' (Constant) has no value attribute",
                   im->label, nname);
}

/* A one-element TENSOR attribute (ConstantOfShape's `value`) becomes a FLOAT or INT attribute
 * of the same name plus `value_dtype` (mi_dtype), since mi_attr_t has no tensor type. */
static int32_t import_scalar_tensor_attr(importer_t *im, mi_node_t *n,
                                         const Onnx__AttributeProto *a) {
  mi__onnx_value_t v = {0};
  mi_attr_t m = {0}, d = {0};
  int32_t rc = mi__onnx_decode_tensor(a->t, im->base_dir, im->label, &v, im->err);
  if (rc != MI_OK) return rc;
  size_t es = mi_dtype_size(v.dtype);
  if (es == 0 || v.nbytes != es || v.dtype == MI_DTYPE_INT4) {
    free(v.data);
    return mi_errorf(im->err, MI_ERR_UNSUPPORTED,
                     "%s: node '%s' (%s, opset %lld): tensor attribute '%s' must hold one value",
                     im->label, n->name, n->op_type, (long long)im->g->opset, a->name);
  }
  m.name = mi__strdup(a->name);
  d.name = mi__strdup("value_dtype");
  d.type = MI_ATTR_INT;
  d.i = v.dtype;
  if (v.dtype == MI_DTYPE_FLOAT32) {
    m.type = MI_ATTR_FLOAT;
    memcpy(&m.f, v.data, sizeof m.f);
  } else {
    m.type = MI_ATTR_INT;
    m.i = mi__int_load(v.data, v.dtype, 0); /* a UINT64 keeps its bits */
  }
  free(v.data);
  if (!m.name || !d.name) {
    mi__attr_release(&m);
    mi__attr_release(&d);
    return oom(im);
  }
  if (mi__node_put_attr(n, &m) != MI_OK) {
    mi__attr_release(&d);
    return oom(im);
  }
  return mi__node_put_attr(n, &d) == MI_OK ? MI_OK : oom(im);
}

static int32_t import_graph(importer_t *im, const Onnx__GraphProto *gp);

/* Appends tensor t to the node's implicit inputs unless it is already there. */
static int32_t add_implicit(importer_t *im, mi_node_t *n, int32_t t) {
  for (int32_t k = n->input_count - n->implicit_inputs; k < n->input_count; k++)
    if (n->inputs[k] == t) return MI_OK;
  int32_t *p = realloc(n->inputs, (size_t)(n->input_count + 1) * sizeof *p);
  if (!p) return oom(im);
  n->inputs = p;
  p[n->input_count++] = t;
  n->implicit_inputs++;
  return MI_OK;
}

/* A GRAPH attribute (If's branches, Loop's body) becomes a subgraph of the node; the values
 * it takes from enclosing graphs become implicit inputs of the node. */
static int32_t import_subgraph(importer_t *im, mi_node_t *n, const Onnx__AttributeProto *a) {
  importer_t sub = {.label = im->label, .base_dir = im->base_dir, .parent = im, .depth = im->depth + 1, .err = im->err};
  char nm[256];
  int32_t rc = MI_OK;
  if (sub.depth > MI__ONNX_MAX_SUBGRAPH_DEPTH)
    return mi_errorf(im->err, MI_ERR_UNSUPPORTED,
                     "%s: node '%s' (%s): subgraphs nested deeper than %d", im->label, n->name,
                     n->op_type, MI__ONNX_MAX_SUBGRAPH_DEPTH);
  snprintf(nm, sizeof nm, "%s/%s", n->name, a->name ? a->name : "");
  mi_graph_t **gs = realloc(n->subgraphs, (size_t)(n->subgraph_count + 1) * sizeof *gs);
  if (gs) n->subgraphs = gs;
  char **ns = realloc(n->subgraph_names, (size_t)(n->subgraph_count + 1) * sizeof *ns);
  if (ns) n->subgraph_names = ns;
  if (!gs || !ns || !(sub.g = mi_graph_create(nm))) return oom(im);
  sub.g->opset = im->g->opset;
  if ((rc = import_graph(&sub, a->g))) goto done;
  if (!(n->subgraph_names[n->subgraph_count] = mi__strdup(a->name ? a->name : ""))) {
    rc = oom(im);
    goto done;
  }
  n->subgraphs[n->subgraph_count++] = sub.g;
  for (int32_t i = 0; i < sub.g->capture_count && rc == MI_OK; i++)
    rc = add_implicit(im, n, mi__name_map_get(&im->map, sub.g->tensors[sub.g->captures[i]].name));
  sub.g = NULL;
done:
  mi__name_map_free(&sub.map);
  mi_graph_destroy(sub.g);
  return rc;
}

static int32_t import_attr(importer_t *im, mi_node_t *n, const Onnx__AttributeProto *a) {
  mi_attr_t m = {0};
  if (a->has_type && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH && a->g)
    return import_subgraph(im, n, a);
  if (a->has_type && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && a->t &&
      strcmp(n->op_type, "ConstantOfShape") == 0)
    return import_scalar_tensor_attr(im, n, a);
  int32_t type = a->has_type ? (int32_t)a->type : 0;
  /* an empty Optional's element type: what it holds is known (nothing), its type is not needed */
  if (type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO && !strcmp(n->op_type, "Optional")) return MI_OK;
  if (!a->has_type) { /* very old exporters leave the type out */
    if (a->n_ints) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    else if (a->n_floats)
      type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    else if (a->has_s)
      type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    else if (a->has_f)
      type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    else if (a->has_i)
      type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  }
  if (!(m.name = mi__strdup(a->name ? a->name : ""))) return oom(im);
  switch (type) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
    m.type = MI_ATTR_INT;
    m.i = a->i;
    /* a Cast to a float type held as float32 (onnx_dtype.h) is a Cast to float32 */
    if (!strcmp(n->op_type, "Cast") && !strcmp(m.name, "to") && m.i > 0 && m.i <= INT32_MAX &&
        mi__dtype_from_onnx((int32_t)m.i) == MI_DTYPE_FLOAT32)
      m.i = MI__ONNX_FLOAT;
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
    m.type = MI_ATTR_FLOAT;
    m.f = a->f;
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    m.type = MI_ATTR_INTS;
    m.count = (int32_t)a->n_ints;
    m.ints = mi__dup_bytes(a->ints, a->n_ints * sizeof *m.ints);
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
    m.type = MI_ATTR_FLOATS;
    m.count = (int32_t)a->n_floats;
    m.floats = mi__dup_bytes(a->floats, a->n_floats * sizeof *m.floats);
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
    char *p = malloc(a->s.len + 1);
    m.type = MI_ATTR_STRING;
    m.s = p;
    if (!p) break;
    if (a->s.len) memcpy(p, a->s.data, a->s.len);
    p[a->s.len] = '\0';
    break;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
    /* mi_attr_t has no list of strings; the recurrent ops' `activations` (PyTorch writes RNN's
     * as ["tanh"] or ["relu"]) is the one such attribute read, kept as one STRING of the names
     * joined by ',' and written back as STRINGS (onnx_export.c) */
    if (strcmp(m.name, "activations") == 0) {
      size_t len = 1;
      for (size_t k = 0; k < a->n_strings; k++) len += a->strings[k].len + 1;
      char *p = malloc(len), *q = p;
      m.type = MI_ATTR_STRING;
      m.s = p;
      if (!p) break;
      for (size_t k = 0; k < a->n_strings; k++) {
        if (k) *q++ = ',';
        if (a->strings[k].len) memcpy(q, a->strings[k].data, a->strings[k].len);
        q += a->strings[k].len;
      }
      *q = '\0';
      break;
    }
    /* fall through */
  default:
    mi__attr_release(&m);
    return mi_errorf(im->err, MI_ERR_UNSUPPORTED,
                     "%s: node '%s' (%s, opset %lld): attribute '%s' of type %d unsupported",
                     im->label, n->name, n->op_type, (long long)im->g->opset,
                     a->name ? a->name : "", (int)type);
  }
  if ((m.type == MI_ATTR_INTS && !m.ints) || (m.type == MI_ATTR_FLOATS && !m.floats) ||
      (m.type == MI_ATTR_STRING && !m.s)) {
    mi__attr_release(&m);
    return oom(im);
  }
  return mi__node_put_attr(n, &m) == MI_OK ? MI_OK : oom(im);
}

/* A QuantizeLinear whose output is 4-bit (its zero point an INT4/UINT4 initializer, or opset 21's
 * output_dtype): 4-bit values are held unpacked in 8-bit dtypes, which would saturate at 8 bits. */
static int quantizes_to_4bit(const Onnx__GraphProto *gp, const Onnx__NodeProto *np) {
  if (strcmp(np->op_type, "QuantizeLinear") != 0 || !mi__onnx_default_domain(np->domain)) return 0;
  for (size_t k = 0; k < np->n_attribute; k++) {
    const Onnx__AttributeProto *a = np->attribute[k];
    if (a->name && !strcmp(a->name, "output_dtype") && (a->i == MI__ONNX_INT4 || a->i == MI__ONNX_UINT4))
      return 1;
  }
  if (np->n_input < 3 || !np->input[2][0]) return 0;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (t->name && !strcmp(t->name, np->input[2]))
      return t->data_type == MI__ONNX_INT4 || t->data_type == MI__ONNX_UINT4;
  }
  return 0;
}

int mi__onnx_default_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

static int32_t import_graph(importer_t *im, const Onnx__GraphProto *gp) {
  int32_t rc = MI_OK;
  char nb[128];
  for (size_t i = 0; i < gp->n_initializer; i++) {
    mi__onnx_value_t v;
    const char *nm = gp->initializer[i]->name;
    if (!nm || !nm[0])
      return mi_errorf(im->err, MI_ERR_PARSE, "%s: initializer %zu has no name", im->label, i);
    if ((rc = mi__onnx_decode_tensor(gp->initializer[i], im->base_dir, im->label, &v, im->err)))
      return rc;
    if ((rc = add_value(im, nm, &v))) return rc;
  }
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi->name || !vi->name[0])
      return mi_errorf(im->err, MI_ERR_PARSE, "%s: graph input %zu has no name", im->label, i);
    int32_t t = mi__name_map_get(&im->map, vi->name);
    if (t >= 0 && im->g->tensors[t].data) continue; /* an initializer: not a runtime input */
    if ((rc = new_tensor(im, vi->name, &t))) return rc;
    if ((rc = apply_type(im, &im->g->tensors[t], vi->type, 1))) return rc;
    if (mi_graph_add_input(im->g, t) != MI_OK) return oom(im);
  }
  /* Outputs first, so that a graph whose nodes are not in order still resolves. */
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    const char *nn = node_label(np, i, nb, sizeof nb);
    if (!np->op_type || !np->op_type[0])
      return mi_errorf(im->err, MI_ERR_PARSE, "%s: node '%s' has no op_type", im->label, nn);
    if (!mi__graph_op_known(np->domain, np->op_type))
      return mi_errorf(im->err, MI_ERR_UNSUPPORTED,
                       "%s: node '%s' (%s) uses operator domain '%s', which is not supported",
                       im->label, nn, np->op_type, np->domain);
    if (strcmp(np->op_type, "Constant") == 0) {
      if ((rc = import_constant(im, np, nn))) return rc;
      continue;
    }
    for (size_t k = 0; k < np->n_output; k++) {
      int32_t t;
      if (!np->output[k][0]) continue;
      if (mi__name_map_get(&im->map, np->output[k]) >= 0)
        return mi_errorf(im->err, MI_ERR_PARSE, "%s: node '%s' (%s): output '%s' is already defined",
                         im->label, nn, np->op_type, np->output[k]);
      if ((rc = new_tensor(im, np->output[k], &t))) return rc;
    }
  }
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    if (strcmp(np->op_type, "Constant") == 0) continue;
    const char *nn = node_label(np, i, nb, sizeof nb);
    int32_t ins[64], outs[64], ni = (int32_t)np->n_input, no = 0;
    if (np->n_input > 64 || np->n_output > 64)
      return mi_errorf(im->err, MI_ERR_UNSUPPORTED, "%s: node '%s' (%s) has too many inputs/outputs",
                       im->label, nn, np->op_type);
    for (size_t k = 0; k < np->n_input; k++) {
      ins[k] = -1;
      if (np->input[k][0] && (rc = resolve(im, np->input[k], &ins[k]))) return rc;
      if (np->input[k][0] && ins[k] < 0)
        return mi_errorf(im->err, MI_ERR_PARSE,
                         "%s: node '%s' (%s): input '%s' is never defined", im->label, nn,
                         np->op_type, np->input[k]);
    }
    /* Trailing omitted outputs are dropped; an omitted one in the middle gets a placeholder. */
    size_t last = np->n_output;
    while (last > 0 && !np->output[last - 1][0]) last--;
    for (size_t k = 0; k < last; k++) {
      if (np->output[k][0]) {
        outs[no++] = mi__name_map_get(&im->map, np->output[k]);
      } else {
        char ph[192];
        snprintf(ph, sizeof ph, "%s:unused%zu", nn, k);
        if ((rc = new_tensor(im, ph, &outs[no++]))) return rc;
      }
    }
    if (quantizes_to_4bit(gp, np))
      return mi_errorf(im->err, MI_ERR_UNSUPPORTED,
                       "%s: node '%s' (QuantizeLinear): quantizing to INT4/UINT4 is not supported "
                       "(4-bit weights behind DequantizeLinear are)",
                       im->label, nn);
    int32_t n = mi_graph_add_node(im->g, np->op_type, nn, ni, ins, no, outs);
    if (n < 0) return oom(im);
    if (!mi__onnx_default_domain(np->domain)) { /* a com.microsoft op (mi__graph_op_known) */
      char *d = mi__strdup(np->domain);
      if (!d) return oom(im);
      free(im->g->nodes[n].domain);
      im->g->nodes[n].domain = d;
    }
    for (size_t k = 0; k < np->n_attribute; k++)
      if ((rc = import_attr(im, &im->g->nodes[n], np->attribute[k]))) return rc;
  }
  for (size_t i = 0; i < gp->n_value_info; i++) {
    const Onnx__ValueInfoProto *vi = gp->value_info[i];
    int32_t t = vi->name ? mi__name_map_get(&im->map, vi->name) : -1;
    if (t >= 0 && !im->g->tensors[t].data && (rc = apply_type(im, &im->g->tensors[t], vi->type, 0)))
      return rc;
  }
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    int32_t t = -1;
    if (vi->name && (rc = resolve(im, vi->name, &t))) return rc;
    if (t < 0)
      return mi_errorf(im->err, MI_ERR_PARSE, "%s: graph output '%s' is never defined", im->label,
                       vi->name ? vi->name : "");
    mi_tensor_t *x = &im->g->tensors[t];
    if (!x->data && (rc = apply_type(im, x, vi->type, 0))) return rc;
    if (mi_graph_add_output(im->g, t) != MI_OK) return oom(im);
  }
  mi_error_t e = {0};
  if ((rc = mi_graph_toposort(im->g, &e)) != MI_OK)
    return mi_errorf(im->err, rc, "%s: %s", im->label, e.message);
  return MI_OK;
}

int32_t mi__onnx_import_main(mi_graph_t *g, const Onnx__GraphProto *gp, const char *base_dir,
                             const char *label, mi_error_t *err) {
  importer_t im = {.label = label, .base_dir = base_dir, .g = g, .err = err};
  int32_t rc = import_graph(&im, gp);
  mi__name_map_free(&im.map);
  return rc;
}
