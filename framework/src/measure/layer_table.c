/* layer_table.c - the per-layer table that `mi-run --profile` and `mi-host profile` print: one
 * row per step (a device kernel with its fused nodes, or a host node), slowest first, with its
 * shapes, the variant asked for, its share of the total and GFLOP/s or GB/s. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "graph/graph.h"
#include "measure/measure_internal.h"

/* Ops whose time is arithmetic: their rate is GFLOP/s; every other op moves data (GB/s). */
static int is_compute(const char *op) {
  static const char *const ops[] = {"Conv", "Gemm", "MatMul", "ConvInteger",
                                    "MatMulInteger", "QLinearConv", "QLinearMatMul", "QGemm"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) return 1;
  return 0;
}

static double tensor_bytes(const mi_tensor_t *t) {
  double n = (double)mi_dtype_size(t->dtype);
  if (t->rank < 0) return 0;
  for (int32_t d = 0; d < t->rank; d++) n *= t->dims[d] > 0 ? (double)t->dims[d] : 1;
  return n;
}

static void append_shape(char *buf, size_t cap, size_t *at, const mi_tensor_t *t) {
  if (*at >= cap) return;
  if (t->rank == 0) *at += (size_t)snprintf(buf + *at, cap - *at, "scalar");
  for (int32_t d = 0; d < t->rank && *at < cap; d++)
    *at += (size_t)snprintf(buf + *at, cap - *at, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
}

/* Fills the shapes, op list, flops and bytes of a row from its nodes (execution order); the row
 * is named after its anchor (the node its time is recorded at: a group's Conv, MatMul or Gemm,
 * which a weight's DequantizeLinear or a Transpose may precede), whose inputs' shapes tell the
 * layer apart. */
static void describe(const mi_graph_t *g, const int32_t *nodes, int32_t count, int32_t anchor, mi_layer_row_t *r) {
  const mi_node_t *an = &g->nodes[anchor], *last = &g->nodes[nodes[count - 1]];
  size_t at = 0, oat = 0;
  int any = 0;
  for (int32_t k = 0; k < count; k++) {
    const mi_node_t *n = &g->nodes[nodes[k]];
    if (oat < sizeof r->op)
      oat += (size_t)snprintf(r->op + oat, sizeof r->op - oat, "%s%s", k ? "+" : "", n->op_type);
    if (is_compute(n->op_type)) r->flops += mi__node_flops(g, n);
    for (int32_t j = 0; j < n->input_count; j++) {
      int32_t t = n->inputs[j], inside = 0;
      if (t < 0) continue;
      /* A value another node of the kernel produced never leaves it. */
      for (int32_t q = 0; q < k; q++)
        for (int32_t o = 0; o < g->nodes[nodes[q]].output_count; o++)
          inside |= g->nodes[nodes[q]].outputs[o] == t;
      if (!inside) r->bytes += tensor_bytes(&g->tensors[t]);
    }
  }
  for (int32_t j = 0; j < an->input_count && at < sizeof r->shapes; j++) {
    if (an->inputs[j] < 0) continue;
    if (any) at += (size_t)snprintf(r->shapes + at, sizeof r->shapes - at, ",");
    append_shape(r->shapes, sizeof r->shapes, &at, &g->tensors[an->inputs[j]]);
    any = 1;
  }
  for (int32_t o = 0; o < last->output_count; o++)
    if (last->outputs[o] >= 0) r->bytes += tensor_bytes(&g->tensors[last->outputs[o]]);
  if (last->output_count > 0 && last->outputs[0] >= 0 && at < sizeof r->shapes) {
    at += (size_t)snprintf(r->shapes + at, sizeof r->shapes - at, " -> ");
    append_shape(r->shapes, sizeof r->shapes, &at, &g->tensors[last->outputs[0]]);
  }
  snprintf(r->name, sizeof r->name, "%s", an->name ? an->name : "");
}

static const char *asked_variant(const mi_graph_t *g, const mi_session_options_t *so,
                                 const int32_t *nodes, int32_t count) {
  if (!so || so->struct_size < sizeof *so) return NULL;
  for (int32_t c = 0; c < so->choice_count; c++)
    for (int32_t k = 0; k < count; k++) {
      const char *nm = g->nodes[nodes[k]].name;
      if (nm && so->choices[c].node && !strcmp(nm, so->choices[c].node) &&
          so->choices[c].variant_id && so->choices[c].variant_id[0])
        return so->choices[c].variant_id;
    }
  return NULL;
}

/* The variant device kernel `kernel` of s was prepared with, or NULL (the plugin's default). */
static const char *step_variant(const mi_session_t *s, int32_t kernel) {
  for (int32_t k = 0; s && kernel >= 0 && k < s->step_count; k++)
    if (s->steps[k].kind == MI__STEP_DEVICE && kernel-- == 0) return s->steps[k].variant;
  return NULL;
}

/* 1 when node i is a host step of s that ran on the session's fallback device. */
static int on_fallback_device(const mi_session_t *s, int32_t i) {
  for (int32_t k = 0; s && s->fb_plugin && k < s->step_count; k++)
    if (s->steps[k].node == i && s->steps[k].kind == MI__STEP_HOST) return s->steps[k].on_fb;
  return 0;
}

static int by_time(const void *a, const void *b) {
  const mi_layer_row_t *x = a, *y = b;
  if (x->ms != y->ms) return x->ms < y->ms ? 1 : -1;
  return x->node - y->node;
}

MI_API int32_t mi_layer_rows(const mi_graph_t *g, const mi_session_t *s,
                             const mi_session_options_t *so, const double *node_ms,
                             mi_layer_row_t **rows, int32_t *count, mi_error_t *err) {
  int32_t *kernel_of = NULL, nk = s ? mi_session_kernel_count(s) : -1, n = 0;
  mi_layer_row_t *out = NULL;
  double total = 0;
  if (rows) *rows = NULL;
  if (count) *count = 0;
  if (!g || !node_ms || !rows || !count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_layer_rows: NULL argument");
  kernel_of = malloc(((size_t)g->node_count + 1) * sizeof *kernel_of);
  out = calloc((size_t)g->node_count + 1, sizeof *out);
  if (!kernel_of || !out) {
    free(kernel_of);
    free(out);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "per-layer table: out of memory");
  }
  for (int32_t i = 0; i < g->node_count; i++) kernel_of[i] = -1;
  for (int32_t k = 0; k < nk; k++) {
    const int32_t *kn = NULL;
    int32_t c = mi_session_kernel_nodes(s, k, &kn);
    for (int32_t j = 0; j < c; j++)
      if (kn[j] >= 0 && kn[j] < g->node_count) kernel_of[kn[j]] = k;
  }
  for (int32_t i = 0; i < g->node_count; i++) {
    mi_layer_row_t *r = &out[n];
    const int32_t *nodes = &i;
    int32_t c = 1;
    const char *v;
    if (!(node_ms[i] >= 0)) continue;
    if (kernel_of[i] >= 0) {
      int32_t kc = mi_session_kernel_nodes(s, kernel_of[i], &nodes);
      if (kc > 0) c = kc;
      else
        nodes = &i;
    }
    r->node = i;
    r->node_count = c;
    r->where = s && kernel_of[i] < 0 ? 1 : 0;
    r->ms = node_ms[i];
    /* Shapes as the session runs them: its private copy when it rewrote the graph (a Pad
     * folded into a Conv); that copy keeps the caller's node indices. */
    describe(s && s->g->node_count == g->node_count ? s->g : g, nodes, c, i, r);
    v = asked_variant(g, so, nodes, c);
    if (!v && kernel_of[i] >= 0) v = step_variant(s, kernel_of[i]); /* the executor's own pick */
    snprintf(r->variant, sizeof r->variant, "%s", r->where ? "host" : v ? v
                                                                        : "default");
    if (r->where && on_fallback_device(s, i)) { /* a host step the fallback device ran */
      r->where = 2;
      snprintf(r->variant, sizeof r->variant, "fallback %.40s:%u", s->fb_plugin->name,
               s->fb_device);
    }
    total += r->ms;
    n++;
  }
  for (int32_t i = 0; i < n; i++) out[i].share = total > 0 ? out[i].ms / total : 0;
  qsort(out, (size_t)n, sizeof *out, by_time);
  free(kernel_of);
  *rows = out;
  *count = n;
  return MI_OK;
}

MI_API int32_t mi_layer_rows_nest(mi_layer_row_t **rows, int32_t *count, int32_t parent,
                                  const char *branch, const mi_layer_row_t *inner,
                                  int32_t inner_count, mi_error_t *err) {
  mi_layer_row_t *out, *p = NULL;
  double sum = 0, total = 0;
  if (!rows || !count || (!*rows && *count) || !branch || (!inner && inner_count))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_layer_rows_nest: NULL argument");
  for (int32_t i = 0; i < *count; i++)
    if ((*rows)[i].node == parent && (*rows)[i].depth == 0) p = &(*rows)[i];
  if (!p)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "mi_layer_rows_nest: node %d has no row of its own", (int)parent);
  out = realloc(*rows, ((size_t)*count + (size_t)inner_count + 1) * sizeof *out);
  if (!out) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "per-layer table: out of memory");
  *rows = out;
  for (int32_t i = 0; i < *count; i++)
    if (out[i].node == parent && out[i].depth == 0) p = &out[i];
  for (int32_t i = 0; i < inner_count; i++) {
    mi_layer_row_t *r = &out[*count + i];
    *r = inner[i];
    r->depth = inner[i].depth + 1;
    /* "If_0/then/Conv_3": the step is found by its path from the top graph; a path too long
     * for the field keeps its tail (the step's own name) after a '~', so a cut name is not
     * read as a whole one */
    {
      char path[3 * sizeof r->name];
      size_t len = (size_t)snprintf(path, sizeof path, "%s/%s/%s", p->name, branch, inner[i].name);
      if (len >= sizeof path) len = sizeof path - 1;
      if (len < sizeof r->name) memcpy(r->name, path, len + 1);
      else
        snprintf(r->name, sizeof r->name, "~%s", path + len - (sizeof r->name - 2));
    }
    sum += r->ms;
  }
  /* The parent's wall time contains its branch's steps: what is left is its own cost (feeding
   * the branch, the nested session's work between steps), so no time is counted twice. */
  p->ms = p->ms > sum ? p->ms - sum : 0;
  *count += inner_count;
  for (int32_t i = 0; i < *count; i++) total += out[i].ms;
  for (int32_t i = 0; i < *count; i++) out[i].share = total > 0 ? out[i].ms / total : 0;
  qsort(out, (size_t)*count, sizeof *out, by_time);
  return MI_OK;
}

static void json_str(FILE *f, const char *s) {
  mi__sbuf_t b = {0};
  char *t;
  mi__sbuf_json_string(&b, s);
  t = mi__sbuf_take(&b);
  fputs(t ? t : "\"\"", f);
  free(t);
}

MI_API int32_t mi_profile_nest_rows(const mi_profile_t *p, mi_layer_row_t **rows, int32_t *count,
                                    mi_error_t *err) {
  int32_t rc = MI_OK;
  if (!p) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_profile_nest_rows: NULL profile");
  /* fill_nest (profile.c) writes each branch's rows together: one group per run of them */
  for (int32_t i = 0, j; rc == MI_OK && i < p->nest_count; i = j) {
    mi_layer_row_t *inner = malloc(((size_t)(p->nest_count - i) + 1) * sizeof *inner);
    if (!inner) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "per-layer table: out of memory");
    for (j = i; j < p->nest_count && p->nest[j].parent == p->nest[i].parent &&
                !strcmp(p->nest[j].branch, p->nest[i].branch);
         j++)
      inner[j - i] = p->nest[j].row;
    rc = mi_layer_rows_nest(rows, count, p->nest[i].parent, p->nest[i].branch, inner, j - i, err);
    free(inner);
  }
  return rc;
}

/* The node column's width: the longest name, at least the heading's 28, at most NAME_COL. */
#define NAME_COL 48

/* `name` as it fits in `w` characters: whole, or '~' and its tail (a nested step's own name
 * is at the end of its path). */
static const char *name_cell(const char *name, int w, char *buf, size_t cap) {
  size_t len = strlen(name);
  if (len <= (size_t)w) return name;
  snprintf(buf, cap, "~%s", name + len - (size_t)(w - 1));
  return buf;
}

MI_API void mi_layer_rows_print(FILE *f, const mi_layer_row_t *rows, int32_t count, int json) {
  double total = 0, flops = 0;
  int w = 28;
  for (int32_t i = 0; i < count; i++) {
    total += rows[i].ms;
    flops += rows[i].flops;
  }
  if (json) {
    fputc('[', f);
    for (int32_t i = 0; i < count; i++) {
      const mi_layer_row_t *r = &rows[i];
      fprintf(f, "%s{\"node\": %d, \"name\": ", i ? ", " : "", (int)r->node);
      json_str(f, r->name);
      fputs(", \"op\": ", f);
      json_str(f, r->op);
      fputs(", \"shapes\": ", f);
      json_str(f, r->shapes);
      fputs(", \"variant\": ", f);
      json_str(f, r->variant);
      fprintf(f, ", \"where\": \"%s\", \"nodes\": %d, \"ms\": %.9g, \"share\": %.9g",
              r->where == 2 ? "fallback" : r->where ? "host"
                                                    : "device",
              (int)r->node_count,
              r->ms, r->share);
      fprintf(f, ", \"flops\": %.6g, \"bytes\": %.6g, \"depth\": %d", r->flops, r->bytes,
              (int)r->depth);
      if (r->ms > 0 && r->flops > 0) fprintf(f, ", \"gflops\": %.6g", r->flops / r->ms / 1e6);
      else if (r->ms > 0)
        fprintf(f, ", \"gbytes_per_s\": %.6g", r->bytes / r->ms / 1e6);
      fputc('}', f);
    }
    fputc(']', f);
    return;
  }
  for (int32_t i = 0; i < count; i++)
    if ((int)strlen(rows[i].name) > w) w = (int)strlen(rows[i].name);
  if (w > NAME_COL) w = NAME_COL;
  fprintf(f, "%-*s %-22s %-38s %-24s %9s %6s %12s\n", w, "node", "op", "shapes", "variant", "ms",
          "share", "rate");
  for (int32_t i = 0; i < count; i++) {
    const mi_layer_row_t *r = &rows[i];
    char rate[32] = "", cut[sizeof r->name];
    if (r->ms > 0 && r->flops > 0) snprintf(rate, sizeof rate, "%.1f GFLOP/s", r->flops / r->ms / 1e6);
    else if (r->ms > 0 && r->bytes > 0)
      snprintf(rate, sizeof rate, "%.2f GB/s", r->bytes / r->ms / 1e6);
    fprintf(f, "%-*s %-22.22s %-38.38s %-24.24s %9.4f %5.1f%% %12s\n", w,
            name_cell(r->name, w, cut, sizeof cut), r->op, r->shapes, r->variant, r->ms,
            r->share * 100, rate);
  }
  fprintf(f, "%-*s %-22s %-38s %-24s %9.4f %5.1f%% %12s\n", w, "total", "", "", "", total,
          count ? 100.0 : 0.0, "");
  if (total > 0 && flops > 0)
    fprintf(f, "compute ops: %.3f GFLOP per run, %.1f GFLOP/s over the summed layer time\n",
            flops / 1e9, flops / total / 1e6);
}
