/* seq_lower.c - the loader's lowering of ONNX sequence and optional ops where the sequence is
 * known at load time (what exporters write for torch.split / chunk / unbind, a list of tensors
 * concatenated or stacked, an optional that is always set): the walk follows each sequence's
 * elements (graph tensors) node by node, so SplitToSequence becomes Split (+ Squeeze when
 * keepdims is 0), SequenceAt becomes Identity of the element, ConcatFromSequence becomes Concat
 * (Unsqueeze + Concat for new_axis 1), SequenceLength and OptionalHasElement become constants, and
 * the nodes that only build sequences are removed. SplitToSequence: seq_split.c; a tensor's slices
 * read at run-time positions or by a subgraph, and captured optionals: seq_slices.c; a Loop that
 * builds a list: seq_loop.c. What the walk cannot follow (a position into a built list or a
 * split size computed at run time, a sequence edited in a loop, a sequence given to another op or
 * out of a graph) is refused naming the node, the op and why. Lowered nodes keep their names and
 * their order among the survivors; new ones are named "<node>/<what>". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/attn_build.h"
#include "graph/seq_lower.h"

static const char *const k_seq_ops[] = {
    "SequenceEmpty",
    "SequenceConstruct",
    "SequenceAt",
    "SequenceInsert",
    "SequenceErase",
    "SequenceLength",
    "SplitToSequence",
    "ConcatFromSequence",
    "SequenceMap",
    "Optional",
    "OptionalHasElement",
    "OptionalGetElement",
};

static int is_default(const mi_node_t *n) { return !n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx"); }

static int is_seq_op(const mi_node_t *n) {
  if (!is_default(n)) return 0;
  for (size_t k = 0; k < sizeof k_seq_ops / sizeof k_seq_ops[0]; k++)
    if (!strcmp(n->op_type, k_seq_ops[k])) return 1;
  return 0;
}

int mi__graph_has_seq(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++) {
    if (is_seq_op(&g->nodes[i])) return 1;
    for (int32_t s = 0; s < g->nodes[i].subgraph_count; s++)
      if (mi__graph_has_seq(g->nodes[i].subgraphs[s])) return 1;
  }
  return 0;
}

const mi__seqv_t *mi__seq_of(const mi__seql_t *l, int32_t t) { return t >= 0 && t < l->nsv ? &l->sv[t] : NULL; }

int mi__seq_is(const mi__seql_t *l, int32_t t) {
  const mi__seqv_t *s = mi__seq_of(l, t);
  return s && s->kind != MI__SEQ_NONE;
}

int32_t mi__seq_fail(mi__seql_t *l, int32_t i, const char *fmt, ...) {
  char why[MI_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  const mi_node_t *n = &l->g->nodes[i];
  return mi_errorf(l->err, MI_ERR_UNSUPPORTED, "node '%s' (%s): %s", n->name, n->op_type, why);
}

int mi__seq_track_nodes(mi__seql_t *l) {
  int32_t n = l->g->node_count;
  if (n <= l->ndead) return 0;
  uint8_t *d = realloc(l->dead, (size_t)n), *m = d ? realloc(l->mine, (size_t)n) : NULL;
  if (d) l->dead = d;
  if (!m) return -1;
  l->mine = m;
  memset(d + l->ndead, 0, (size_t)(n - l->ndead));
  memset(m + l->ndead, 1, (size_t)(n - l->ndead));
  l->ndead = n;
  return 0;
}

int32_t mi__seq_oom(mi__seql_t *l, int32_t i) {
  return mi_errorf(l->err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", l->g->nodes[i].name);
}

static int32_t in_at(const mi_node_t *n, int32_t k) { return k < n->input_count ? n->inputs[k] : -1; }

/* Output 0 of node i becomes the sequence (or optional) of `kind` with elements el[0..n); the
 * node builds nothing at run time any more. */
int32_t mi__seq_set(mi__seql_t *l, int32_t i, int kind, int32_t n, const int32_t *el) {
  const mi_node_t *nd = &l->g->nodes[i];
  int32_t t = nd->output_count > 0 ? nd->outputs[0] : -1;
  l->dead[i] = 1;
  if (t < 0 || t >= l->nsv) return MI_OK; /* an omitted output: nobody reads it */
  mi__seqv_t *s = &l->sv[t];
  int32_t *e = malloc(sizeof *e * (size_t)(n + 1));
  if (!e) return mi__seq_oom(l, i);
  if (n) memcpy(e, el, sizeof *e * (size_t)n);
  free(s->el);
  *s = (mi__seqv_t){.kind = kind, .n = n, .el = e, .src = -1};
  return MI_OK;
}

/* The sequence input k of node i, known at load time; with `elements`, its elements too. */
static int32_t need_list(mi__seql_t *l, int32_t i, int32_t k, int elements, const mi__seqv_t **out) {
  int32_t t = in_at(&l->g->nodes[i], k);
  const mi__seqv_t *s = mi__seq_of(l, t);
  if (t < 0) return mi__seq_fail(l, i, "input %d is missing", (int)k);
  if (s && s->kind == MI__SEQ_OPT) return mi__seq_fail(l, i, "input '%s' is an optional, not a sequence", l->g->tensors[t].name);
  if (!s || s->kind != MI__SEQ_LIST) {
    /* every sequence the walk cannot follow was refused where it was made: this is a tensor,
     * unless a node with subgraphs gives it */
    int32_t p = l->g->tensors[t].producer;
    if (p >= 0 && l->g->nodes[p].subgraph_count)
      return mi__seq_fail(l, i, "input '%s' comes out of node '%s' (%s): not a sequence known at load time",
                          l->g->tensors[t].name, l->g->nodes[p].name, l->g->nodes[p].op_type);
    return mi__seq_fail(l, i, "input '%s' is a tensor, not a sequence", l->g->tensors[t].name);
  }
  *out = s;
  if (!elements) return MI_OK;
  if (!s->el && s->src >= 0)
    return mi__seq_fail(l, i,
                        "the tensors of sequence '%s' are not known at load time (it splits '%s' along axis %lld into "
                        "%s slices)",
                        l->g->tensors[t].name, l->g->tensors[s->src].name, (long long)s->axis,
                        s->n < 0 ? "a number of" : "more than 64");
  if (!s->el)
    return mi__seq_fail(l, i,
                        "the tensors of sequence '%s' are not known at load time (split sizes given at run time need "
                        "opset 13)",
                        l->g->tensors[t].name);
  return MI_OK;
}

/* The one integer value of constant tensor t (int32 or int64). 0, or -1 when t is not one. */
int mi__seq_int(const mi_graph_t *g, int32_t t, int64_t *v) {
  const mi_tensor_t *x = t >= 0 ? &g->tensors[t] : NULL;
  if (!x || !x->data) return -1;
  if (x->dtype == MI_DTYPE_INT64 && x->nbytes == sizeof(int64_t)) memcpy(v, x->data, sizeof *v);
  else if (x->dtype == MI_DTYPE_INT32 && x->nbytes == sizeof(int32_t)) {
    int32_t w;
    memcpy(&w, x->data, sizeof w);
    *v = w;
  } else
    return -1;
  return 0;
}

/* Position input k of node i in [-n, hi], counted from the end when negative; `dflt` when the
 * input is omitted. */
static int32_t position(mi__seql_t *l, int32_t i, int32_t k, int32_t n, int32_t hi, int32_t dflt, int32_t *out) {
  int32_t t = in_at(&l->g->nodes[i], k);
  int64_t p;
  if (t < 0) {
    *out = dflt;
    return MI_OK;
  }
  if (mi__seq_int(l->g, t, &p))
    return mi__seq_fail(l, i, "position '%s' is not a constant (a position known only at run time is not supported)",
                        l->g->tensors[t].name);
  if (p < -n || p > hi)
    return mi__seq_fail(l, i, "position %lld is out of range for a sequence of %d tensors", (long long)p, (int)n);
  *out = (int32_t)(p < 0 ? p + n : p);
  return MI_OK;
}

/* Node i becomes `op` (default domain, no attributes) on in[0..nin) into out[0..nout). */
int32_t mi__seq_become(mi__seql_t *l, int32_t i, const char *op, int32_t nin, const int32_t *in, int32_t nout,
                       const int32_t *out) {
  mi_node_t *m = &l->g->nodes[i];
  char *o = mi__node_own_strings(m) ? NULL : mi__strdup(op);
  int32_t *ni = malloc(sizeof *ni * (size_t)(nin + 1)), *no = malloc(sizeof *no * (size_t)(nout + 1));
  if (!o || !ni || !no) {
    free(o), free(ni), free(no);
    return mi__seq_oom(l, i);
  }
  for (int32_t k = 0; k < m->output_count; k++) /* outputs it no longer writes: unproduced */
    if (m->outputs[k] >= 0 && l->g->tensors[m->outputs[k]].producer == i) l->g->tensors[m->outputs[k]].producer = -1;
  mi__node_become(m, o);
  memcpy(ni, in, sizeof *ni * (size_t)nin);
  memcpy(no, out, sizeof *no * (size_t)nout);
  free(m->inputs);
  free(m->outputs);
  m->inputs = ni;
  m->input_count = nin;
  m->outputs = no;
  m->output_count = nout;
  m->implicit_inputs = 0;
  for (int32_t k = 0; k < nout; k++) l->g->tensors[no[k]].producer = i;
  l->mine[i] = 1;
  return MI_OK;
}

/* Output 0 of node i becomes the constant scalar v (int64, or bool when is_bool). */
static int32_t set_const(mi__seql_t *l, int32_t i, int64_t v, int is_bool) {
  const mi_node_t *nd = &l->g->nodes[i];
  int32_t t = nd->output_count > 0 ? nd->outputs[0] : -1;
  uint8_t b = v != 0;
  l->dead[i] = 1;
  if (t < 0) return MI_OK;
  mi_tensor_t *x = &l->g->tensors[t];
  x->dtype = is_bool ? MI_DTYPE_BOOL : MI_DTYPE_INT64;
  mi__tensor_set_shape(x, 0, NULL);
  if (mi_graph_set_data(l->g, t, is_bool ? (const void *)&b : (const void *)&v, is_bool ? 1 : sizeof v)) return mi__seq_oom(l, i);
  return MI_OK;
}

/* ConcatFromSequence(S; axis, new_axis): Concat of the elements (each unsqueezed at the axis
 * first when new_axis is 1). */
static int32_t lower_concat(mi__seql_t *l, int32_t i) {
  const mi__seqv_t *s;
  int32_t rc = need_list(l, i, 0, 0, &s);
  if (rc) return rc;
  const mi_node_t *n = &l->g->nodes[i];
  const mi_attr_t *ax = mi_node_attr(n, "axis");
  int64_t axis = ax && ax->type == MI_ATTR_INT ? ax->i : 0, stack = mi_node_attr_int(n, "new_axis", 0);
  if (!ax || ax->type != MI_ATTR_INT) return mi__seq_fail(l, i, "attribute 'axis' is required");
  if (stack != 0 && stack != 1) return mi__seq_fail(l, i, "new_axis is %lld, it must be 0 or 1", (long long)stack);
  /* the slices of x put back together along their own axis: x */
  if (s->src >= 0 && axis == s->axis && stack == !s->keep)
    return mi__seq_become(l, i, "Identity", 1, &s->src, 1, n->outputs);
  if (s->src >= 0 && !s->keep && !stack && axis == 0 && s->axis == 0) return mi__seq_cat_slices0(l, i, s);
  if ((rc = need_list(l, i, 0, 1, &s))) return rc;
  if (s->n == 0) return mi__seq_fail(l, i, "the sequence is empty (nothing to concatenate)");
  int32_t out = n->outputs[0], cnt = s->n;
  int32_t *items = malloc(sizeof *items * (size_t)cnt);
  if (!items) return mi__seq_oom(l, i);
  memcpy(items, s->el, sizeof *items * (size_t)cnt);
  mi__ab_t b;
  mi__ab_start(&b, l->g, n);
  for (int32_t k = 0; stack && k < cnt; k++) {
    char what[32];
    snprintf(what, sizeof what, "item%d", (int)k);
    items[k] = mi__ab_unsqueeze(&b, what, items[k], 1, &axis);
  }
  if (!b.ok || mi__seq_track_nodes(l)) rc = mi__seq_oom(l, i);
  if (!rc && !(rc = mi__seq_become(l, i, "Concat", cnt, items, 1, &out)) && mi_node_set_int(l->g, i, "axis", axis))
    rc = mi__seq_oom(l, i);
  free(items);
  return rc;
}

static int32_t lower_one(mi__seql_t *l, int32_t i) {
  const mi_node_t *n = &l->g->nodes[i];
  const char *op = n->op_type;
  const mi__seqv_t *s = NULL;
  int32_t rc = MI_OK, p;
  if (n->output_count < 1) return mi__seq_fail(l, i, "has no output");
  if (!strcmp(op, "SequenceEmpty")) return mi__seq_set(l, i, MI__SEQ_LIST, 0, NULL);
  if (!strcmp(op, "SequenceConstruct")) {
    for (int32_t k = 0; k < n->input_count; k++)
      if (n->inputs[k] < 0 || mi__seq_is(l, n->inputs[k]))
        return mi__seq_fail(l, i, "input %d is %s", (int)k, n->inputs[k] < 0 ? "missing" : "not a tensor");
    return mi__seq_set(l, i, MI__SEQ_LIST, n->input_count, n->inputs);
  }
  if (!strcmp(op, "Optional")) {
    int32_t x = in_at(n, 0);
    if (mi__seq_is(l, x)) return mi__seq_fail(l, i, "an optional sequence is not supported");
    return mi__seq_set(l, i, MI__SEQ_OPT, x >= 0, &x);
  }
  if (!strcmp(op, "SequenceLength")) {
    if ((rc = need_list(l, i, 0, 0, &s))) return rc;
    return s->n >= 0 ? set_const(l, i, s->n, 0) : mi__seq_len_slices(l, i, s);
  }
  if (!strcmp(op, "SequenceAt")) {
    int32_t pt = in_at(n, 1);
    int64_t pv;
    if ((rc = need_list(l, i, 0, 0, &s))) return rc;
    if (pt < 0) return mi__seq_fail(l, i, "input position is missing");
    /* a part the walk holds; else a slice of the split tensor, at any position */
    if (s->src >= 0 && (!s->el || mi__seq_int(l->g, pt, &pv))) return mi__seq_at_slice(l, i, s, pt);
    if ((rc = need_list(l, i, 0, 1, &s)) || (rc = position(l, i, 1, s->n, s->n - 1, -1, &p))) return rc;
    return mi__seq_become(l, i, "Identity", 1, &s->el[p], 1, n->outputs);
  }
  if (!strcmp(op, "SequenceInsert") || !strcmp(op, "SequenceErase")) {
    int ins = op[8] == 'I';
    int32_t t = in_at(n, 1);
    if ((rc = need_list(l, i, 0, 1, &s))) return rc;
    if (!ins && s->n == 0) return mi__seq_fail(l, i, "the sequence is empty (nothing to erase)");
    if (ins && (t < 0 || mi__seq_is(l, t))) return mi__seq_fail(l, i, "input 1 must be a tensor");
    if ((rc = position(l, i, ins ? 2 : 1, s->n, ins ? s->n : s->n - 1, ins ? s->n : s->n - 1, &p))) return rc;
    int32_t m = s->n + (ins ? 1 : -1), *el = malloc(sizeof *el * (size_t)(m + 1));
    if (!el) return mi__seq_oom(l, i);
    for (int32_t k = 0, j = 0; k < s->n; k++) {
      if (ins && k == p) el[j++] = t;
      if (ins || k != p) el[j++] = s->el[k];
    }
    if (ins && p == s->n) el[m - 1] = t;
    rc = mi__seq_set(l, i, MI__SEQ_LIST, m, el);
    free(el);
    return rc;
  }
  if (!strcmp(op, "SplitToSequence")) return mi__seq_lower_split(l, i);
  if (!strcmp(op, "ConcatFromSequence")) return lower_concat(l, i);
  if (!strcmp(op, "OptionalHasElement") || !strcmp(op, "OptionalGetElement")) {
    int32_t x = in_at(n, 0);
    const mi__seqv_t *o = mi__seq_of(l, x);
    int get = op[8] == 'G', has = x >= 0 && (!o || o->kind == MI__SEQ_NONE || o->n > 0);
    if (o && o->kind == MI__SEQ_LIST) return mi__seq_fail(l, i, "an optional sequence is not supported");
    if (!get) return set_const(l, i, has, 1);
    if (!has) return mi__seq_fail(l, i, "the optional is empty");
    return mi__seq_become(l, i, "Identity", 1, o && o->kind == MI__SEQ_OPT ? &o->el[0] : &x, 1, n->outputs);
  }
  if (!strcmp(op, "SequenceMap")) return mi__seq_fail(l, i, "SequenceMap is not supported");
  return mi__seq_fail(l, i, "op is not supported");
}

static int32_t lower_graph(mi_graph_t *g, mi_error_t *err, const mi__seq_seed_t *seeds, int32_t nseeds);

/* Node i (any op): lowered when it is a sequence op; else refused when a sequence reaches it
 * (an Identity passes one on; a Loop may carry lists it builds); then its subgraphs. */
static int32_t visit(mi__seql_t *l, int32_t i) {
  const mi_node_t *n = &l->g->nodes[i];
  int32_t rc;
  if (is_seq_op(n)) return lower_one(l, i);
  if (is_default(n) && !strcmp(n->op_type, "Identity") && mi__seq_is(l, in_at(n, 0))) {
    const mi__seqv_t *s = mi__seq_of(l, n->inputs[0]);
    int32_t t = n->output_count > 0 ? n->outputs[0] : -1;
    mi__seqv_t c = *s;
    l->dead[i] = 1;
    if (t < 0 || t >= l->nsv || t == n->inputs[0]) return MI_OK;
    if (s->el && !(c.el = mi__dup_bytes(s->el, sizeof *s->el * (size_t)s->n))) return mi__seq_oom(l, i);
    free(l->sv[t].el);
    l->sv[t] = c;
    return MI_OK;
  }
  if (is_default(n) && !strcmp(n->op_type, "Loop") && (rc = mi__seq_lower_loop(l, i))) return rc;
  n = &l->g->nodes[i];
  for (int32_t k = 0; k < n->input_count; k++) {
    const mi__seqv_t *s = mi__seq_of(l, n->inputs[k]);
    int implicit = k >= n->input_count - n->implicit_inputs;
    if (!s || s->kind == MI__SEQ_NONE || (implicit && (s->kind == MI__SEQ_OPT || s->src >= 0))) continue;
    return mi__seq_fail(l, i, "%s '%s' is a%s, which %s", implicit ? "captured value" : "input",
                        l->g->tensors[n->inputs[k]].name, s->kind == MI__SEQ_OPT ? "n optional" : " sequence",
                        implicit ? "a subgraph may not read (only an optional or the slices of a SplitToSequence without split may be)"
                                 : "this op does not take");
  }
  for (int32_t s = 0; s < n->subgraph_count; s++) {
    mi__seq_seed_t *seeds = NULL;
    int32_t ns = 0;
    if ((rc = mi__seq_capture_slices(l, i, n->subgraphs[s], &seeds, &ns)) == MI_OK)
      rc = lower_graph(l->g->nodes[i].subgraphs[s], l->err, seeds, ns);
    free(seeds);
    if (rc) return rc;
    n = &l->g->nodes[i];
  }
  return mi__seq_implicit_slices(l, i);
}

/* Marks dead every node the walk made or rewrote whose outputs nobody reads (a Split whose
 * parts were only counted, a Squeeze of a part nobody takes), until none is left. */
static void drop_unread_made(mi__seql_t *l) {
  mi_graph_t *g = l->g;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int32_t i = 0; i < g->node_count; i++) {
      const mi_node_t *n = &g->nodes[i];
      if (l->dead[i] || !l->mine[i]) continue;
      int read = 0;
      for (int32_t k = 0; k < n->output_count && !read; k++) {
        int32_t t = n->outputs[k];
        read = t >= 0 && mi__graph_is_output(g, t);
        for (int32_t j = 0; t >= 0 && j < g->node_count && !read; j++)
          for (int32_t q = 0; !l->dead[j] && q < g->nodes[j].input_count && !read; q++) read = g->nodes[j].inputs[q] == t;
      }
      if (!read) l->dead[i] = changed = 1;
    }
  }
}

static int32_t lower_graph(mi_graph_t *g, mi_error_t *err, const mi__seq_seed_t *seeds, int32_t nseeds) {
  mi__seql_t l = {.g = g, .nsv = g->tensor_count, .err = err};
  int32_t rc = MI_OK, count = g->node_count;
  l.sv = calloc((size_t)g->tensor_count + 1, sizeof *l.sv);
  if (!l.sv || mi__seq_track_nodes(&l)) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int32_t t = 0; t < l.nsv; t++) l.sv[t].src = -1;
  for (int32_t k = 0; k < nseeds && rc == MI_OK; k++) {
    mi__seqv_t *v = &l.sv[seeds[k].t];
    *v = seeds[k].v; /* (el NULL: nothing owned) */
    if (v->kind == MI__SEQ_OPT && v->n > 0 && !(v->el = mi__dup_bytes(&seeds[k].el1, sizeof seeds[k].el1)))
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  memset(l.mine, 0, (size_t)l.ndead);
  for (int32_t i = 0; i < count && rc == MI_OK; i++) rc = visit(&l, i);
  for (int32_t k = 0; rc == MI_OK && k < g->output_count; k++)
    if (mi__seq_is(&l, g->outputs[k]))
      rc = mi_errorf(err, MI_ERR_UNSUPPORTED, "graph '%s': output '%s' is a%s (only tensor outputs are supported)",
                     g->name, g->tensors[g->outputs[k]].name,
                     l.sv[g->outputs[k]].kind == MI__SEQ_OPT ? "n optional" : " sequence");
  if (rc == MI_OK && mi__seq_track_nodes(&l)) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  if (rc == MI_OK) {
    drop_unread_made(&l);
    if ((rc = mi_graph_remove_nodes(g, l.dead, err)) == MI_OK) rc = mi_graph_toposort(g, err);
  }
done:
  for (int32_t t = 0; l.sv && t < l.nsv; t++) free(l.sv[t].el);
  free(l.sv);
  free(l.dead);
  free(l.mine);
  return rc;
}

int32_t mi__graph_lower_seq(mi_graph_t *g, const char *label, mi_error_t *err) {
  mi_error_t e = {0};
  int32_t rc = lower_graph(g, &e, NULL, 0);
  return rc == MI_OK ? MI_OK : mi_errorf(err, rc, "%s: %s", label, e.message);
}
