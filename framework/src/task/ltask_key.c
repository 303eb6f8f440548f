/* ltask_key.c - layer tasks of a model on a device: a node's workload as a stable key text,
 * the grouping of nodes by key, and a node's kernel choice as text that another node (of this
 * model or of another) with the same task can take. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/graph.h"
#include "metainfer/mi_ltask.h"
#include "space/space.h"

/* Ops that the sessions fuse after a kernel (exec's auto-fusion): their time counts with the
 * kernel's whatever the variant does with them, and they are part of the workload. */
static int epilogue_op(const char *op) {
  static const char *const k[] = {"BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid",
                                  "HardSwish", "LeakyRelu", "Mul", "Add", "Max", "Min", "Div",
                                  "Tanh", NULL};
  for (int i = 0; k[i]; i++)
    if (strcmp(op, k[i]) == 0) return 1;
  return 0;
}

static void tensor_text(mi__sbuf_t *b, const mi_graph_t *g, int32_t t) {
  if (t < 0) {
    mi__sbuf_printf(b, "-");
    return;
  }
  mi__sbuf_printf(b, "%s%s[", g->tensors[t].data ? "c:" : "", mi_dtype_name(g->tensors[t].dtype));
  for (int32_t d = 0; d < g->tensors[t].rank; d++)
    mi__sbuf_printf(b, d ? "x%lld" : "%lld", (long long)g->tensors[t].dims[d]);
  mi__sbuf_printf(b, "]");
}

static int attr_cmp(const void *a, const void *b) {
  return strcmp((*(const mi_attr_t *const *)a)->name, (*(const mi_attr_t *const *)b)->name);
}

/* 1 when attribute `at` of op `op` holds its ONNX default: exporters differ in whether they
 * write those (one writes auto_pad=NOTSET and dilations=1:1, another leaves them out), and the
 * workload is the same either way. Only ops whose defaults are listed here; others keep all. */
static int default_attr(const char *op, const mi_attr_t *at) {
  int spatial = !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "MaxPool") ||
                !strcmp(op, "AveragePool") || !strcmp(op, "LpPool");
  const char *nm = at->name;
  if (spatial && !strcmp(nm, "auto_pad")) return at->type == MI_ATTR_STRING && at->s && !strcmp(at->s, "NOTSET");
  if (spatial && (!strcmp(nm, "dilations") || !strcmp(nm, "strides") || !strcmp(nm, "pads"))) {
    int64_t want = strcmp(nm, "pads") ? 1 : 0;
    if (!at->ints || at->count <= 0) return 0;
    for (int32_t k = 0; k < at->count; k++)
      if (at->ints[k] != want) return 0;
    return 1;
  }
  if ((!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) && !strcmp(nm, "group"))
    return at->type == MI_ATTR_INT && at->i == 1;
  if (!strcmp(op, "Gemm") && (!strcmp(nm, "alpha") || !strcmp(nm, "beta")))
    return at->type == MI_ATTR_FLOAT && at->f == 1.0f;
  if (!strcmp(op, "Gemm") && (!strcmp(nm, "transA") || !strcmp(nm, "transB")))
    return at->type == MI_ATTR_INT && at->i == 0;
  return 0;
}

/* Attributes sorted by name (exporters write them in different orders), those at their ONNX
 * default left out (exporters differ in writing them). */
static void attrs_text(mi__sbuf_t *b, const mi_node_t *nd) {
  const mi_attr_t *sorted[64];
  int32_t n = 0;
  for (int32_t a = 0; a < nd->attr_count && n < 64; a++)
    if (!default_attr(nd->op_type, &nd->attrs[a])) sorted[n++] = &nd->attrs[a];
  qsort(sorted, (size_t)n, sizeof *sorted, attr_cmp);
  mi__sbuf_printf(b, "(");
  for (int32_t a = 0; a < n; a++) {
    const mi_attr_t *at = sorted[a];
    mi__sbuf_printf(b, "%s%s=", a ? "," : "", at->name);
    switch (at->type) {
    case MI_ATTR_INT: mi__sbuf_printf(b, "%lld", (long long)at->i); break;
    case MI_ATTR_FLOAT: mi__sbuf_printf(b, "%.9g", (double)at->f); break;
    case MI_ATTR_STRING: mi__sbuf_printf(b, "%s", at->s ? at->s : ""); break;
    default:
      for (int32_t k = 0; k < at->count; k++) {
        if (at->ints) mi__sbuf_printf(b, k ? ":%lld" : "%lld", (long long)at->ints[k]);
        else if (at->floats)
          mi__sbuf_printf(b, k ? ":%.9g" : "%.9g", (double)at->floats[k]);
      }
    }
  }
  mi__sbuf_printf(b, ")");
}

/* Follows node n's single output through sole consumers that are epilogue ops (at most 16),
 * calling fn for each; returns how many. */
static int32_t chain_walk(const mi_graph_t *g, int32_t n, const int32_t *stop, int32_t *out) {
  int32_t k = 0, cur = n;
  while (k < 16 && g->nodes[cur].output_count == 1) {
    int32_t c = mi__graph_sole_reader(g, g->nodes[cur].outputs[0]);
    if (c < 0 || !epilogue_op(g->nodes[c].op_type) || (stop && stop[c] >= 0)) break;
    if (out) out[k] = c;
    k++;
    cur = c;
  }
  return k;
}

static char *text_of(const mi_graph_t *g, int32_t n, const char *precision, const char *layout,
                     const int32_t *stop) {
  mi__sbuf_t b = {0};
  const mi_node_t *nd = &g->nodes[n];
  int32_t chain[16], nc = chain_walk(g, n, stop, chain);
  mi__sbuf_printf(&b, "%s%s%s", nd->domain && nd->domain[0] ? nd->domain : "",
                  nd->domain && nd->domain[0] ? "." : "", nd->op_type);
  attrs_text(&b, nd);
  mi__sbuf_printf(&b, " in:");
  for (int32_t i = 0; i < nd->input_count; i++) {
    if (i) mi__sbuf_printf(&b, ",");
    tensor_text(&b, g, nd->inputs[i]);
  }
  mi__sbuf_printf(&b, " out:");
  for (int32_t i = 0; i < nd->output_count; i++) {
    if (i) mi__sbuf_printf(&b, ",");
    tensor_text(&b, g, nd->outputs[i]);
  }
  mi__sbuf_printf(&b, " | %s %s", precision ? precision : "fp32", layout ? layout : "nchw");
  for (int32_t k = 0; k < nc; k++) {
    const mi_node_t *c = &g->nodes[chain[k]];
    mi__sbuf_printf(&b, " +%s", c->op_type);
    /* A binary epilogue op reads a constant (a scale) or another activation (a residual). */
    for (int32_t i = 0; i < c->input_count; i++) {
      int32_t t = c->inputs[i];
      if (t < 0 || (k == 0 ? t == nd->outputs[0] : t == g->nodes[chain[k - 1]].outputs[0])) continue;
      mi__sbuf_printf(&b, ":");
      tensor_text(&b, g, t);
    }
  }
  return mi__sbuf_take(&b);
}

MI_API char *mi_ltask_text(const mi_graph_t *g, int32_t n, const char *precision,
                           const char *layout) {
  if (!g || n < 0 || n >= g->node_count) return NULL;
  return text_of(g, n, precision, layout, NULL);
}

/* The dimension of node `node` whose name ends in `suffix` ("variant", "precision"), or -1. */
static int32_t node_dim(const mi_space_t *s, const mi_graph_t *g, int32_t node, const char *suffix) {
  size_t nl = strlen(g->nodes[node].name);
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    const char *name = mi_space_dim_name(s, d);
    if (mi_space_dim_node(s, d) != node || strncmp(name, "node.", 5) != 0) continue;
    if (strlen(name) > 6 + nl && strcmp(name + 6 + nl, suffix) == 0) return d;
  }
  return -1;
}

static int kernel_dim(const mi_space_t *s, int32_t d) {
  int32_t k = mi_space_dim_kind(s, d);
  return mi_space_dim_node(s, d) >= 0 && (k == MI_DIM_VARIANT || k == MI_DIM_KNOB);
}

/* The kernel class part of the features (MI_LTASK_CLASS on): log2 of the kernel window and of
 * the stride product, log2 of the group count, 1 for a depthwise conv (a group per input
 * channel), and the precision label's code. A task warm-starts only from tasks of its class:
 * a 1x1 conv's best kernel says nothing about a 3x3 depthwise of the same sizes. */
static void class_of(const mi_graph_t *g, const mi_node_t *nd, const char *precision, double *f) {
  static const char *const prec[] = {"fp32", "fp16", "int8_tensor", "int8_channel", "int8_act", "bf16", NULL};
  int64_t group = 1, stride = 1;
  int32_t p = 0;
  if (nd->input_count > 1 && nd->inputs[1] >= 0 && g->tensors[nd->inputs[1]].rank >= 3 &&
      (!strcmp(nd->op_type, "Conv") || !strcmp(nd->op_type, "ConvTranspose"))) {
    const mi_tensor_t *w = &g->tensors[nd->inputs[1]];
    double win = 1;
    for (int32_t d = 2; d < w->rank; d++) win *= (double)(w->dims[d] > 0 ? w->dims[d] : 1);
    f[6] = log2(win);
  }
  for (int32_t a = 0; a < nd->attr_count; a++) {
    const mi_attr_t *at = &nd->attrs[a];
    if (!strcmp(at->name, "group") && at->type == MI_ATTR_INT && at->i > 1) group = at->i;
    if (!strcmp(at->name, "strides") && at->ints)
      for (int32_t k = 0; k < at->count; k++) stride *= at->ints[k] > 0 ? at->ints[k] : 1;
  }
  f[7] = log2((double)stride);
  f[8] = log2((double)group);
  if (group > 1 && nd->input_count > 0 && nd->inputs[0] >= 0 && g->tensors[nd->inputs[0]].rank >= 2 &&
      g->tensors[nd->inputs[0]].dims[1] == group)
    f[9] = 1;
  while (prec[p] && precision && strcmp(prec[p], precision) != 0) p++;
  f[10] = precision ? p : 0;
}

static void features_of(const mi_graph_t *g, int32_t n, const char *precision, double *f) {
  const mi_node_t *nd = &g->nodes[n];
  for (int k = 0; k < MI_LTASK_FEATURES; k++) f[k] = 0;
  class_of(g, nd, precision, f);
  /* log2 of the sizes of the first three inputs and the output, and of the in/out channels */
  for (int32_t i = 0; i < 3 && i < nd->input_count; i++) {
    int32_t t = nd->inputs[i];
    double e = 1;
    if (t < 0) continue;
    for (int32_t d = 0; d < g->tensors[t].rank; d++) e *= (double)(g->tensors[t].dims[d] > 0 ? g->tensors[t].dims[d] : 1);
    f[i] = log2(e);
    if (i == 0 && g->tensors[t].rank >= 2) f[4] = log2((double)(g->tensors[t].dims[1] > 0 ? g->tensors[t].dims[1] : 1));
  }
  if (nd->output_count > 0 && nd->outputs[0] >= 0) {
    const mi_tensor_t *o = &g->tensors[nd->outputs[0]];
    double e = 1;
    for (int32_t d = 0; d < o->rank; d++) e *= (double)(o->dims[d] > 0 ? o->dims[d] : 1);
    f[3] = log2(e);
    if (o->rank >= 2) f[5] = log2((double)(o->dims[1] > 0 ? o->dims[1] : 1));
  }
}

MI_API void mi_ltasks_destroy(mi_ltasks_t *t) {
  if (!t) return;
  for (int32_t i = 0; i < t->count; i++) {
    free(t->tasks[i].second);
    free(t->tasks[i].text);
    free(t->tasks[i].nodes);
    free(t->tasks[i].chain);
    free(t->tasks[i].chain_at);
  }
  free(t->tasks);
  free(t->node_task);
  free(t);
}

/* Adds node n (with its chain, and pw, the pointwise conv of its dw+pw unit, or -1) to task k. */
static int add_node(mi_ltask_t *k, int32_t n, const int32_t *chain, int32_t nc, int32_t pw) {
  int32_t *nn = realloc(k->nodes, ((size_t)k->node_count + 1) * sizeof *nn);
  int32_t used = k->node_count ? k->chain_at[k->node_count] : 0;
  int32_t *na, *ch;
  if (!nn) return 0;
  k->nodes = nn;
  if (pw >= 0) {
    int32_t *sc = realloc(k->second, ((size_t)k->node_count + 1) * sizeof *sc);
    if (!sc) return 0;
    k->second = sc;
    sc[k->node_count] = pw;
  }
  na = realloc(k->chain_at, ((size_t)k->node_count + 2) * sizeof *na);
  if (!na) return 0;
  k->chain_at = na;
  ch = realloc(k->chain, ((size_t)used + (size_t)nc + 1) * sizeof *ch);
  if (!ch) return 0;
  k->chain = ch;
  if (k->node_count == 0) k->chain_at[0] = 0;
  memcpy(k->chain + used, chain, (size_t)nc * sizeof *chain);
  k->nodes[k->node_count++] = n;
  k->chain_at[k->node_count] = used + nc;
  return 1;
}

/* A depthwise conv (group == input channels > 1, constant 4-D weights). */
static int depthwise(const mi_graph_t *g, int32_t n) {
  const mi_node_t *c = &g->nodes[n];
  int64_t grp = mi_node_attr_int(c, "group", 1);
  return !strcmp(c->op_type, "Conv") && c->input_count > 1 && c->inputs[0] >= 0 && c->inputs[1] >= 0 &&
         g->tensors[c->inputs[1]].data && g->tensors[c->inputs[0]].rank == 4 && grp > 1 &&
         g->tensors[c->inputs[0]].dims[1] == grp;
}

/* Conv r is pointwise on tensor t (1x1, stride 1, no pads, group 1, constant weights): the
 * sessions' rule for the second conv of a dw+pw unit (exec's plan.c, MI_FUSE_CONV). */
static int pointwise_on(const mi_graph_t *g, int32_t r, int32_t t) {
  const mi_node_t *c = &g->nodes[r];
  const mi_tensor_t *w = c->input_count > 1 && c->inputs[1] >= 0 ? &g->tensors[c->inputs[1]] : NULL;
  if (strcmp(c->op_type, "Conv") || c->inputs[0] != t || !w || !w->data || w->rank != 4 || w->dims[2] != 1 ||
      w->dims[3] != 1 || mi_node_attr_int(c, "group", 1) != 1 || c->output_count != 1 ||
      (c->input_count > 2 && c->inputs[2] >= 0 && !g->tensors[c->inputs[2]].data))
    return 0;
  for (int32_t a = 0; a < c->attr_count; a++) {
    const mi_attr_t *at = &c->attrs[a];
    if (!strcmp(at->name, "auto_pad") && at->s && strcmp(at->s, "NOTSET") && strcmp(at->s, "VALID")) return 0;
    if ((!strcmp(at->name, "strides") || !strcmp(at->name, "pads") || !strcmp(at->name, "dilations")) &&
        !default_attr("Conv", at))
      return 0;
  }
  return 1;
}

/* The pointwise conv that runs in depthwise conv n's unit (n's chain of `nc` nodes, then a
 * pointwise conv that alone reads it), or -1. */
static int32_t dwpw_partner(const mi_graph_t *g, int32_t n, const int32_t *chain, int32_t nc) {
  int32_t t, r;
  if (!depthwise(g, n)) return -1;
  t = g->nodes[nc ? chain[nc - 1] : n].outputs[0];
  if (t < 0 || mi__graph_is_output(g, t) || (r = mi__graph_sole_reader(g, t)) < 0) return -1;
  return pointwise_on(g, r, t) ? r : -1;
}

MI_API int32_t mi_ltasks_extract(const mi_graph_t *g, const mi_space_t *s, const int32_t *pt,
                                 mi_ltasks_t **out, mi_error_t *err) {
  return mi_ltasks_extract_fused(g, s, pt, 0, out, err);
}

MI_API int32_t mi_ltasks_extract_fused(const mi_graph_t *g, const mi_space_t *s, const int32_t *pt,
                                       int fuse_conv, mi_ltasks_t **out, mi_error_t *err) {
  mi_ltasks_t *t;
  int32_t layout_dim = -1, *has = NULL;
  const char *layout = "nchw";
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_ltasks_extract: out is NULL");
  *out = NULL;
  if (!g || !s || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_ltasks_extract: NULL");
  t = calloc(1, sizeof *t);
  has = malloc(((size_t)g->node_count + 1) * sizeof *has);
  if (!t || !has || !(t->node_task = malloc(((size_t)g->node_count + 1) * sizeof *t->node_task))) {
    free(has);
    mi_ltasks_destroy(t);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer tasks: out of memory");
  }
  t->node_count = g->node_count;
  for (int32_t n = 0; n < g->node_count; n++) has[n] = t->node_task[n] = -1;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    if (strcmp(mi_space_dim_name(s, d), "model.layout") == 0) layout_dim = d;
    /* A node has a kernel choice when its variant or one of its knobs has a choice. A variant
     * dimension always offers auto (the plugin's own pick) first: auto and a single variant
     * without knobs is the same kernel, no choice worth a task. */
    if (kernel_dim(s, d) &&
        mi_space_dim_size(s, d) > (mi_space_dim_kind(s, d) == MI_DIM_VARIANT ? 2 : 1))
      has[mi_space_dim_node(s, d)] = 1;
  }
  if (layout_dim >= 0) layout = mi_space_dim_label(s, layout_dim, pt[layout_dim]);
  for (int32_t n = 0; n < g->node_count; n++) {
    int32_t pd, chain[34], nc, k, pw = -1;
    const char *prec = "fp32";
    char *text, key[17];
    if (has[n] < 0 || t->node_task[n] >= 0) continue; /* none, or taken by its dw+pw unit */
    if ((pd = node_dim(s, g, n, "precision")) >= 0) prec = mi_space_dim_label(s, pd, pt[pd]);
    nc = chain_walk(g, n, has, chain);
    if (!(text = text_of(g, n, prec, layout, has))) goto oom;
    /* A dw+pw unit (the device fuses them, MI_FUSE_CONV) is one task: what runs is one kernel,
     * timed as one, so its workload is the group and its choice both convs' choices. */
    if (fuse_conv && (pw = dwpw_partner(g, n, chain, nc)) >= 0 && t->node_task[pw] < 0) {
      const char *pp = "fp32";
      char *tail;
      mi__sbuf_t b = {0};
      if ((pd = node_dim(s, g, pw, "precision")) >= 0) pp = mi_space_dim_label(s, pd, pt[pd]);
      if (!(tail = text_of(g, pw, pp, layout, has))) {
        free(text);
        goto oom;
      }
      mi__sbuf_printf(&b, "%s >> %s", text, tail);
      free(text);
      free(tail);
      if (!(text = mi__sbuf_take(&b))) goto oom;
      chain[nc++] = pw;
      nc += chain_walk(g, pw, has, chain + nc);
    } else {
      pw = -1;
    }
    mi_hash64_hex(mi_hash64(text, strlen(text), MI_HASH64_SEED), key);
    for (k = 0; k < t->count && strcmp(t->tasks[k].key, key) != 0; k++) {}
    if (k == t->count) {
      mi_ltask_t *nt = realloc(t->tasks, ((size_t)t->count + 1) * sizeof *nt);
      if (!nt) {
        free(text);
        goto oom;
      }
      t->tasks = nt;
      memset(&t->tasks[k], 0, sizeof t->tasks[k]);
      memcpy(t->tasks[k].key, key, sizeof key);
      t->tasks[k].text = text;
      /* "Conv+Conv": a group warm-starts from groups only (its choice spans both convs) */
      snprintf(t->tasks[k].op, sizeof t->tasks[k].op, "%s%s", g->nodes[n].op_type, pw >= 0 ? "+Conv" : "");
      features_of(g, n, prec, t->tasks[k].features);
      if (pw >= 0 && g->nodes[pw].outputs[0] >= 0 && g->tensors[g->nodes[pw].outputs[0]].rank >= 2)
        t->tasks[k].features[5] = log2((double)(g->tensors[g->nodes[pw].outputs[0]].dims[1] > 0
                                                    ? g->tensors[g->nodes[pw].outputs[0]].dims[1]
                                                    : 1)); /* the group's out channels */
      t->count++;
    } else {
      free(text);
    }
    if (!add_node(&t->tasks[k], n, chain, nc, pw)) goto oom;
    t->node_task[n] = k;
    if (pw >= 0) t->node_task[pw] = k; /* its kernel dimensions belong to the group's task */
  }
  free(has);
  *out = t;
  return MI_OK;
oom:
  free(has);
  mi_ltasks_destroy(t);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer tasks: out of memory");
}

/* A kernel dimension's name without its node: "variant" or "knob.K" (node names may contain
 * dots, so the last ".knob." or ".variant" is taken). */
static const char *suffix_any(const mi_space_t *s, int32_t d) {
  const char *name = mi_space_dim_name(s, d), *at = NULL;
  for (const char *p = name; (p = strstr(p, ".knob.")) != NULL; p++) at = p;
  if (!at)
    for (const char *p = name; (p = strstr(p, ".variant")) != NULL; p++) at = p;
  return at ? at + 1 : name;
}

MI_API char *mi_ltask_choice(const mi_space_t *s, const int32_t *pt, int32_t node) {
  mi__sbuf_t b = {0};
  int first = 1;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    if (mi_space_dim_node(s, d) != node || !kernel_dim(s, d) || !mi_space_active(s, pt, d)) continue;
    mi__sbuf_printf(&b, "%s%s=%s", first ? "" : ";", suffix_any(s, d), mi_space_dim_label(s, d, pt[d]));
    first = 0;
  }
  if (first) mi__sbuf_printf(&b, "%s", "");
  return mi__sbuf_take(&b);
}

MI_API int mi_ltask_apply(const mi_space_t *s, int32_t *pt, int32_t node, const char *choice) {
  int32_t D = mi_space_dim_count(s), *tmp = malloc((size_t)D * sizeof *tmp + 1);
  const char *p = choice;
  int ok = 1;
  if (!tmp || !choice) {
    free(tmp);
    return 0;
  }
  memcpy(tmp, pt, (size_t)D * sizeof *tmp);
  while (*p && ok) {
    const char *eq = strchr(p, '='), *end = strchr(p, ';');
    int found = 0;
    if (!end) end = p + strlen(p);
    if (!eq || eq > end) {
      ok = 0;
      break;
    }
    for (int32_t d = 0; d < D && !found; d++) {
      const char *suf;
      if (mi_space_dim_node(s, d) != node || !kernel_dim(s, d)) continue;
      suf = suffix_any(s, d);
      if (strlen(suf) != (size_t)(eq - p) || strncmp(suf, p, (size_t)(eq - p)) != 0) continue;
      for (int32_t v = 0; v < mi_space_dim_size(s, d); v++) {
        const char *l = mi_space_dim_label(s, d, v);
        if (strlen(l) == (size_t)(end - eq - 1) && strncmp(l, eq + 1, (size_t)(end - eq - 1)) == 0) {
          /* a kernel that rounds an FP32 layer (an older history's best) is not a task's choice */
          found = mi__space_variant_keeps_fp32(s, d, v);
          if (found) tmp[d] = v;
          break;
        }
      }
    }
    ok = found;
    p = *end ? end + 1 : end;
  }
  if (ok) memcpy(pt, tmp, (size_t)D * sizeof *tmp);
  free(tmp);
  return ok;
}

MI_API int32_t mi_ltasks_frozen(const mi_space_t *s, const mi_ltasks_t *t, uint8_t *frozen) {
  int32_t n = 0;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    int32_t node = mi_space_dim_node(s, d);
    frozen[d] = kernel_dim(s, d) && node < t->node_count && t->node_task[node] >= 0;
    n += frozen[d];
  }
  return n;
}
