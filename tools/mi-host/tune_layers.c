/* tune_layers.c - the chosen configuration in report.html, grouped: model-side choices,
 * device-level knobs, then the per-layer choices summarised ("precision: int8_channel on 41 of
 * 53 convolutions") with the full table folded in a <details>. */
#include <stdlib.h>
#include <string.h>

#include "tune_report.h"

/* One active per-layer dimension of the configuration. */
typedef struct cell {
  int32_t node;
  const char *node_name; /* inside the dimension's name */
  int node_len;
  const char *aspect; /* "variant", "precision", "prune", "knob.tile" */
  const char *value;
  const char *family; /* the node's op type ("Conv"), or its variant's prefix; NULL unknown */
  int family_len;
} cell_t;

/* Splits "node.<name>.<aspect>"; the node name may itself hold dots. */
static const char *aspect_of(const char *name, int *node_len) {
  static const char *tails[] = {".variant", ".precision", ".prune"};
  size_t n = strlen(name);
  const char *knob = NULL, *at = name + 5;
  if (strncmp(name, "node.", 5) != 0) return NULL;
  for (const char *p = strstr(at, ".knob."); p; p = strstr(p + 1, ".knob.")) knob = p;
  for (int i = 0; i < 3 && !knob; i++) {
    size_t l = strlen(tails[i]);
    if (n > 5 + l && !strcmp(name + n - l, tails[i])) knob = name + n - l;
  }
  if (!knob) return NULL;
  *node_len = (int)(knob - at);
  return knob + 1;
}

static int same(const char *a, int al, const char *b, int bl) {
  return al == bl && (al == 0 || (a && b && !strncmp(a, b, (size_t)al)));
}

static void family_plural(FILE *f, const cell_t *c, int count) {
  if (!c->family) fputs(count == 1 ? "layer" : "layers", f);
  else if (same(c->family, c->family_len, "Conv", 4) || same(c->family, c->family_len, "conv", 4))
    fputs(count == 1 ? "convolution" : "convolutions", f);
  else {
    fwrite(c->family, 1, (size_t)c->family_len, f);
    fputs(count == 1 ? " layer" : " layers", f);
  }
}

/* A table of the configuration's global dimensions of one kind (model-side or not). */
static void global_table(FILE *f, const mi_tune_run_t *run, const mi_trial_t *t, int model, const char *title) {
  int32_t dims = mi_space_dim_count(run->space), rows = 0;
  for (int32_t d = 0; d < dims; d++) {
    if (mi_space_dim_node(run->space, d) >= 0 || !mi_space_active(run->space, t->point, d) ||
        (mi_space_dim_kind(run->space, d) == MI_DIM_MODEL) != model)
      continue;
    if (!rows++) fprintf(f, "<h4>%s</h4>\n<table class=\"config-group %s\"><tr><th>dimension</th><th>value</th></tr>\n", title,
                         model ? "model-side" : "device-level");
    fputs("<tr><td>", f);
    mi__tune_esc(f, mi_space_dim_name(run->space, d));
    fputs("</td><td>", f);
    mi__tune_esc(f, mi_space_dim_label(run->space, d, t->point[d]));
    fputs("</td></tr>\n", f);
  }
  if (rows) fputs("</table>\n", f);
  else
    fprintf(f, "<h4>%s</h4>\n<p class=\"note\">none in the space</p>\n", title);
}

static int aspect_rank(const char *a) {
  return !strcmp(a, "precision") ? 0 : !strcmp(a, "prune") ? 1
                                   : !strcmp(a, "variant") ? 2
                                                           : 3;
}

static int in_group(const cell_t *a, const cell_t *b) {
  return !strcmp(a->aspect, b->aspect) && same(a->family, a->family_len, b->family, b->family_len);
}

/* "int8_channel on 41 of 53 convolutions, fp32 on 12": the values of the group of cell g. */
static void clause(FILE *f, const cell_t *c, int32_t n, int32_t g, int32_t *vals, int32_t *counts) {
  int32_t nv = 0, total = 0;
  for (int32_t i = g; i < n; i++) {
    int32_t v = 0;
    if (!in_group(&c[i], &c[g])) continue;
    total++;
    while (v < nv && strcmp(c[vals[v]].value, c[i].value)) v++;
    if (v == nv) {
      vals[nv] = i;
      counts[nv++] = 0;
    }
    counts[v]++;
  }
  for (int32_t shown = 0; shown < nv; shown++) {
    int32_t best = -1;
    for (int32_t v = 0; v < nv; v++)
      if (counts[v] > 0 && (best < 0 || counts[v] > counts[best])) best = v;
    fputs(shown ? ", " : "<b>", f);
    mi__tune_esc(f, c[vals[best]].value);
    if (shown) {
      fprintf(f, " on %d", (int)counts[best]);
    } else {
      fprintf(f, "</b> on %d of %d ", (int)counts[best], (int)total);
      family_plural(f, &c[g], total);
    }
    counts[best] = 0;
  }
}

void mi__tune_config_html(FILE *f, const mi_tune_run_t *run, const mi_trial_t *t) {
  int32_t dims = mi_space_dim_count(run->space), n = 0, nodes = 0, aspects = 0;
  cell_t *c = calloc((size_t)dims + 1, sizeof *c);
  const char **aspect = calloc((size_t)dims + 1, sizeof *aspect);
  int32_t *vals = calloc((size_t)dims + 1, sizeof *vals), *counts = calloc((size_t)dims + 1, sizeof *counts);
  fprintf(f, "<div class=\"chosen-config\" data-config=\"%016llx\">\n", (unsigned long long)t->hash);
  global_table(f, run, t, 1, "Model-side");
  global_table(f, run, t, 0, "Device-level");
  if (!c || !aspect || !vals || !counts) goto done;
  for (int32_t d = 0; d < dims; d++) {
    const char *name = mi_space_dim_name(run->space, d), *a;
    int len = 0;
    if (mi_space_dim_node(run->space, d) < 0 || !mi_space_active(run->space, t->point, d) || !(a = aspect_of(name, &len)))
      continue;
    c[n] = (cell_t){mi_space_dim_node(run->space, d), name + 5, len, a, mi_space_dim_label(run->space, d, t->point[d]), NULL, 0};
    if (run->graph && c[n].node < run->graph->node_count && run->graph->nodes[c[n].node].op_type) {
      c[n].family = run->graph->nodes[c[n].node].op_type;
      c[n].family_len = (int)strlen(c[n].family);
    }
    n++;
  }
  /* a node's dimensions together, nodes in the space's order (insertion sort: stable) */
  for (int32_t i = 1; i < n; i++) {
    cell_t v = c[i];
    int32_t j = i;
    for (; j > 0 && c[j - 1].node > v.node; j--) c[j] = c[j - 1];
    c[j] = v;
  }
  /* without the graph, each node's op family from the prefix of its variant ("conv.im2col_gemm") */
  for (int32_t i = 0; i < n && !run->graph; i++)
    if (!strcmp(c[i].aspect, "variant")) {
      const char *dot = strchr(c[i].value, '.');
      for (int32_t j = 0; j < n; j++)
        if (c[j].node == c[i].node) {
          c[j].family = c[i].value;
          c[j].family_len = dot ? (int)(dot - c[i].value) : (int)strlen(c[i].value);
        }
    }
  for (int32_t i = 0; i < n; i++) {
    int32_t k = 0;
    while (k < aspects && strcmp(aspect[k], c[i].aspect)) k++;
    if (k == aspects) aspect[aspects++] = c[i].aspect;
    nodes += i == 0 || c[i].node != c[i - 1].node;
  }
  if (n == 0) goto done;
  /* the model-side choices first: they are what changes accuracy */
  for (int32_t i = 1; i < aspects; i++) {
    const char *v = aspect[i];
    int32_t j = i;
    for (; j > 0 && aspect_rank(aspect[j - 1]) > aspect_rank(v); j--) aspect[j] = aspect[j - 1];
    aspect[j] = v;
  }
  /* one line per aspect; in it one clause per op family, its values most taken first */
  fputs("<h4>Per-layer</h4>\n<ul class=\"layer-summary\">\n", f);
  for (int32_t k = 0; k < aspects; k++) {
    int clauses = 0;
    fputs("<li>", f);
    mi__tune_esc(f, aspect[k]);
    fputs(": ", f);
    for (int32_t i = 0; i < n; i++) {
      int dup = 0;
      if (strcmp(c[i].aspect, aspect[k])) continue;
      for (int32_t j = 0; j < i && !dup; j++) dup = in_group(&c[j], &c[i]);
      if (dup) continue;
      fputs(clauses++ ? "; " : "", f);
      clause(f, c, n, i, vals, counts);
    }
    fputs("</li>\n", f);
  }
  fprintf(f,
          "</ul>\n<details class=\"layers\"><summary>Per-layer choices (%d layers, %d choices)</summary>\n"
          "<table class=\"per-layer\"><tr><th>layer</th>",
          (int)nodes, (int)n);
  for (int32_t k = 0; k < aspects; k++) {
    fputs("<th>", f);
    mi__tune_esc(f, aspect[k]);
    fputs("</th>", f);
  }
  fputs("</tr>\n", f);
  for (int32_t i = 0; i < n; i++) {
    int32_t end = i;
    if (i > 0 && c[i].node == c[i - 1].node) continue;
    while (end < n && c[end].node == c[i].node) end++;
    fputs("<tr><td>", f);
    {
      char name[256];
      snprintf(name, sizeof name, "%.*s", c[i].node_len, c[i].node_name);
      mi__tune_esc(f, name);
    }
    fputs("</td>", f);
    for (int32_t k = 0; k < aspects; k++) {
      int32_t j = i;
      while (j < end && strcmp(c[j].aspect, aspect[k])) j++;
      fputs("<td>", f);
      if (j < end) mi__tune_esc(f, c[j].value);
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</table></details>\n", f);
done:
  fputs("</div>\n", f);
  free(c);
  free(aspect);
  free(vals);
  free(counts);
}
