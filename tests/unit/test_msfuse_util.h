/* test_msfuse_util.h - the harness of the fused-op tests (test_exec_msfuse.c, test_exec_msembed.c):
 * one node built in code (its own reference and shape inference) and the same node written as an
 * ONNX model and loaded (the loader's lowering), run on the reference and on blis-cpu, compared. A
 * header (not test_*.c), so the test glob does not make it a test. */
#ifndef TEST_MSFUSE_UTIL_H
#define TEST_MSFUSE_UTIL_H

#include <math.h>

#include "test_exec_util.h"
#include "test_pb.h"
#include "test_ref_common.h"

typedef struct attr {
  const char *name;
  int type; /* 0 none, 1 float, 2 int, 3 string */
  double v;
  const char *s;
} attr_t;

typedef struct mcase {
  const char *op, *domain; /* domain NULL: the default one */
  int64_t opset;
  int nin;
  mi_array_t *in[10];  /* NULL: omitted */
  uint32_t const_mask; /* bit i: input i an initializer */
  int nout;
  uint32_t want; /* bit k: output k is a graph output (else omitted "") */
  attr_t attrs[3];
} mcase_t;

static __attribute__((unused)) void free_case(mcase_t *k) {
  for (int i = 0; i < k->nin; i++) mi_array_destroy(k->in[i]);
}

/* The node built in code, unlowered: its own reference and shape inference. */
static __attribute__((unused)) mi_graph_t *code_graph(const mcase_t *k, mi_array_t **rt, int *nrt) {
  mi_graph_t *g = mi_graph_create(k->op);
  int32_t t[10], o[4];
  char nm[32];
  g->opset = k->opset;
  *nrt = 0;
  for (int i = 0; i < k->nin; i++) {
    t[i] = -1;
    if (!k->in[i]) continue;
    snprintf(nm, sizeof nm, "in%d", i);
    t[i] = mi_graph_add_tensor(g, nm, k->in[i]->dtype, k->in[i]->rank, k->in[i]->dims);
    if (k->const_mask & (1u << i)) mi_graph_set_data(g, t[i], k->in[i]->data, k->in[i]->nbytes);
    else {
      mi_graph_add_input(g, t[i]);
      rt[(*nrt)++] = k->in[i];
    }
  }
  int nout = 0;
  for (int i = 0; i < k->nout; i++) {
    snprintf(nm, sizeof nm, "out%d", i);
    o[i] = tval(g, nm);
    nout = i + 1;
  }
  int32_t n = mi_graph_add_node(g, k->op, "fused", k->nin, t, nout, o);
  if (k->domain) {
    free(g->nodes[n].domain);
    g->nodes[n].domain = strdup(k->domain);
  }
  for (int i = 0; i < k->nout; i++)
    if (k->want & (1u << i)) mi_graph_add_output(g, o[i]);
  for (int a = 0; a < 3 && k->attrs[a].type; a++) {
    const attr_t *at = &k->attrs[a];
    if (at->type == 1) mi_node_set_float(g, n, at->name, (float)at->v);
    else if (at->type == 2)
      mi_node_set_int(g, n, at->name, (int64_t)at->v);
    else
      mi_node_set_string(g, n, at->name, at->s);
  }
  return g;
}

static __attribute__((unused)) void pb_attr_float(pb_t *node, const char *name, float v) {
  pb_t a = {0};
  put_str(&a, 1, name);
  tag(&a, 2, 5);
  memcpy(a.d + a.n, &v, 4);
  a.n += 4;
  put_int(&a, 20, 1);
  put_msg(node, 5, &a);
}

/* An initializer of any dtype, raw data. */
static __attribute__((unused)) void pb_init_raw(pb_t *g, const char *name, const mi_array_t *a) {
  pb_t t = {0};
  for (int i = 0; i < a->rank; i++) put_int(&t, 1, a->dims[i]);
  put_int(&t, 2, a->dtype);
  put_str(&t, 8, name);
  put_bytes(&t, 9, a->data, a->nbytes);
  put_msg(g, 5, &t);
}

static __attribute__((unused)) uint32_t g_untyped; /* bit i: graph input i written without a type */

/* The same node written as a model and loaded back (the loader lowers it). */
static __attribute__((unused)) mi_graph_t *loaded_graph(const mcase_t *k, mi_error_t *err) {
  static pb_t g, n, m;
  char ins[128] = "", outs[128] = "", nm[16];
  g.n = n.n = m.n = 0;
  for (int i = 0; i < k->nin; i++) {
    snprintf(nm, sizeof nm, "%s%s", i ? "," : "", k->in[i] ? "in" : "");
    strncat(ins, nm, sizeof ins - strlen(ins) - 1);
    if (k->in[i]) {
      snprintf(nm, sizeof nm, "%d", i);
      strncat(ins, nm, sizeof ins - strlen(ins) - 1);
    }
  }
  for (int i = 0; i < k->nout; i++) {
    snprintf(nm, sizeof nm, "%s", i ? "," : "");
    strncat(outs, nm, sizeof outs - strlen(outs) - 1);
    if (k->want & (1u << i)) {
      snprintf(nm, sizeof nm, "out%d", i);
      strncat(outs, nm, sizeof outs - strlen(outs) - 1);
    }
  }
  pb_node(&n, k->op, "fused", ins, outs);
  if (k->domain) put_str(&n, 7, k->domain);
  for (int a = 0; a < 3 && k->attrs[a].type; a++) {
    const attr_t *at = &k->attrs[a];
    if (at->type == 1) pb_attr_float(&n, at->name, (float)at->v);
    else if (at->type == 2)
      pb_attr_int(&n, at->name, (int64_t)at->v);
    else
      pb_attr_str(&n, at->name, at->s);
  }
  put_msg(&g, 1, &n);
  put_str(&g, 2, "msfuse");
  for (int i = 0; i < k->nin; i++) {
    if (!k->in[i]) continue;
    snprintf(nm, sizeof nm, "in%d", i);
    if (k->const_mask & (1u << i))
      pb_init_raw(&g, nm, k->in[i]);
    else if (g_untyped & (1u << i))
      pb_value_f32(&g, 11, nm, -1, NULL, "n"); /* no type: rank unknown at load */
    else
      pb_value(&g, 11, nm, k->in[i]->dtype, k->in[i]->rank, k->in[i]->dims, "N");
  }
  for (int i = 0; i < k->nout; i++)
    if (k->want & (1u << i)) {
      snprintf(nm, sizeof nm, "out%d", i);
      pb_value_f32(&g, 12, nm, -1, NULL, "n");
    }
  pb_t os = {0}, ms = {0};
  put_str(&os, 1, "");
  put_int(&os, 2, k->opset);
  put_str(&ms, 1, "com.microsoft");
  put_int(&ms, 2, 1);
  put_int(&m, 1, 8);
  put_msg(&m, 8, &os);
  put_msg(&m, 8, &ms);
  put_msg(&m, 7, &g);
  mi_graph_t *out = NULL;
  mi_onnx_load_buffer(m.d, m.n, NULL, &out, err);
  return out;
}

/* Runs g on the reference (outs: its graph outputs), after shape inference on a copy that must
 * agree with the run. */
static __attribute__((unused)) int32_t ref_outs(mi_graph_t *g, mi_array_t **rt, int nrt, mi_array_t **outs, mi_error_t *err) {
  int32_t rc = mi_ref_run(g, (const mi_array_t *const *)rt, nrt, outs, g->output_count, err);
  if (rc) return rc;
  mi_graph_t *c = mi_graph_clone(g);
  mi_error_t e = {0};
  CHECK(mi_graph_infer_shapes(c, &e) == MI_OK, "%s: shape inference: %s", g->name, e.message);
  for (int32_t i = 0; e.code == MI_OK && i < g->output_count; i++) {
    const mi_tensor_t *t = &c->tensors[c->outputs[i]];
    CHECK(same_shape(outs[i], t->rank, t->dims) && t->dtype == outs[i]->dtype, "%s output %d: inferred shape is the run's",
          g->name, (int)i);
  }
  mi_graph_destroy(c);
  return MI_OK;
}

static __attribute__((unused)) float max_abs(const mi_array_t *a, const mi_array_t *b) {
  if (!a || !b || mi_array_numel(a) != mi_array_numel(b) || a->dtype != b->dtype) return INFINITY;
  if (a->dtype != MI_DTYPE_FLOAT32) return memcmp(a->data, b->data, a->nbytes) ? INFINITY : 0.f;
  float m = 0;
  for (int64_t i = 0; i < mi_array_numel(a); i++) m = fmaxf(m, fabsf(((float *)a->data)[i] - ((float *)b->data)[i]));
  return m;
}

static __attribute__((unused)) mi_registry_t *g_reg;

/* The op's own reference (hand values `want` where given, per wanted output), then the loaded,
 * lowered model on the reference and on blis-cpu: equal within tol, no host fallback. */
static __attribute__((unused)) void check_case(const char *what, mcase_t *k, const float *const *want, float tol) {
  mi_array_t *rt[10], *own[4] = {0}, *low[4] = {0};
  int nrt;
  mi_error_t err = {0};
  int host_ok = ((k->want & 0x6) && !strcmp(k->op, "SkipLayerNormalization")) ||
                ((k->want & 0x2) && !strcmp(k->op, "EmbedLayerNormalization")); /* mask_index: integer ops */
  mi_graph_t *g = code_graph(k, rt, &nrt);
  int32_t rc = ref_outs(g, rt, nrt, own, &err);
  CHECK(rc == MI_OK, "%s: own reference: %s", what, err.message);
  for (int32_t i = 0; rc == MI_OK && want && i < g->output_count; i++)
    if (want[i] && own[i]->dtype == MI_DTYPE_INT32) { /* (mask_index: the want holds the counts as floats) */
      for (int64_t j = 0; j < mi_array_numel(own[i]); j++)
        CHECK(((int32_t *)own[i]->data)[j] == (int32_t)want[i][j], "%s output %d element %lld: %d, want %g", what, (int)i,
              (long long)j, ((int32_t *)own[i]->data)[j], want[i][j]);
    } else if (want[i])
      expect_f32(what, own[i], own[i]->rank, own[i]->dims, want[i], 1e-6f);
  mi_graph_t *l = loaded_graph(k, &err);
  CHECK(l != NULL, "%s: load: %s", what, err.message);
  if (l && rc == MI_OK) {
    for (int32_t j = 0; j < l->node_count; j++)
      CHECK(!l->nodes[j].domain || !l->nodes[j].domain[0], "%s: node %s still in domain %s after lowering", what,
            l->nodes[j].op_type, l->nodes[j].domain);
    CHECK(mi_graph_infer_shapes(l, &err) == MI_OK, "%s: lowered shapes: %s", what, err.message);
    rc = ref_outs(l, rt, nrt, low, &err);
    CHECK(rc == MI_OK, "%s: lowered reference: %s", what, err.message);
    for (int32_t i = 0; rc == MI_OK && i < g->output_count; i++) {
      float d = max_abs(own[i], low[i]);
      CHECK(d <= tol, "%s output %d: lowered graph vs the op's reference: max abs %.3g", what, (int)i, d);
    }
    mi_plugin_t *p = g_reg ? mi_registry_find(g_reg, "blis-cpu") : NULL;
    if (p && rc == MI_OK) {
      mi_session_t *s = session(l, p);
      mi_array_t *got[4] = {0};
      /* (blis-cpu's LayerNormalization leaves Mean and InvStdDev to the host) */
      CHECK(mi_session_fallback_count(s) == 0 || host_ok, "%s: %d nodes fell back to the host (first: %s)", what,
            (int)mi_session_fallback_count(s), mi_session_fallback_count(s) ? mi_session_fallback_node(s, 0) : "");
      CHECK(mi_session_run(s, (const mi_array_t *const *)rt, nrt, got, l->output_count, &err) == MI_OK,
            "%s: blis-cpu run: %s", what, err.message);
      for (int32_t i = 0; i < l->output_count; i++) {
        float d = max_abs(own[i], got[i]);
        CHECK(d <= tol * 4, "%s output %d: blis-cpu vs the op's reference: max abs %.3g", what, (int)i, d);
        mi_array_destroy(got[i]);
      }
      mi_session_destroy(s);
      /* the node built in code: the session lowers it on its copy */
      mi_graph_t *gc = mi_graph_clone(g);
      CHECK(mi_graph_infer_shapes(gc, &err) == MI_OK, "%s: code graph shapes: %s", what, err.message);
      s = session(gc, p);
      CHECK(mi_session_fallback_count(s) == 0 || host_ok, "%s: built in code, %d nodes fell back to the host", what,
            (int)mi_session_fallback_count(s));
      CHECK(mi_session_run(s, (const mi_array_t *const *)rt, nrt, got, gc->output_count, &err) == MI_OK,
            "%s: blis-cpu run of the graph built in code: %s", what, err.message);
      for (int32_t i = 0; i < gc->output_count; i++) {
        float d = max_abs(own[i], got[i]);
        CHECK(d <= tol * 4, "%s output %d: built in code, blis-cpu vs the op's reference: max abs %.3g", what, (int)i, d);
        mi_array_destroy(got[i]);
        got[i] = NULL;
      }
      mi_session_destroy(s);
      mi_graph_destroy(gc);
    }
  }
  for (int i = 0; i < 4; i++) mi_array_destroy(own[i]), mi_array_destroy(low[i]);
  mi_graph_destroy(g);
  mi_graph_destroy(l);
  free_case(k);
}

static __attribute__((unused)) mi_array_t *A(int32_t rank, const int64_t *dims, const float *v) { return arr_f32(rank, dims, v); }

static __attribute__((unused)) mi_array_t *R(int32_t rank, const int64_t *dims, uint64_t seed) {
  mi_array_t *a = arr_f32(rank, dims, NULL);
  fill_halves(a->data, (int)mi_array_numel(a), seed);
  for (int64_t i = 0; i < mi_array_numel(a); i++) ((float *)a->data)[i] *= 4.f;
  return a;
}

static __attribute__((unused)) mi_array_t *I(int32_t rank, const int64_t *dims, const int32_t *v) {
  mi_array_t *a = mi_array_create(MI_DTYPE_INT32, rank, dims);
  memcpy(a->data, v, a->nbytes);
  return a;
}

/* A malformed node: the loader refuses it in one line naming the node and the op. */
static __attribute__((unused)) void refused(const char *what, mcase_t *k, const char *needle) {
  mi_error_t err = {0};
  mi_graph_t *l = loaded_graph(k, &err);
  CHECK(l == NULL, "%s: the loader should refuse", what);
  CHECK(strstr(err.message, "'fused'") && strstr(err.message, k->op) && !strchr(err.message, '\n'),
        "%s: one line naming node and op: %s", what, err.message);
  CHECK(strstr(err.message, needle) != NULL, "%s: says '%s': %s", what, needle, err.message);
  mi_graph_destroy(l);
  free_case(k);
}

#endif
