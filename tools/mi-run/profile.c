/* profile.c - mi-run --profile: each node's time over the timed runs, then the framework's
 * per-layer table (mi_layer_rows), the one `mi-host profile` prints too. */
#include <stdlib.h>
#include <string.h>

#include "mi_run.h"

int32_t run_prof_init(run_prof_t *p, const mi_graph_t *g, int runs, mi_error_t *err) {
  memset(p, 0, sizeof *p);
  p->nodes = g->node_count;
  p->cap = runs;
  p->g = g;
  p->ms = malloc(((size_t)runs * (size_t)g->node_count + 1) * sizeof *p->ms);
  if (!p->ms) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "--profile: out of memory");
  return MI_OK;
}

/* Row `run` of p from session s, and of every branch s ran as a nested session. A branch that
 * did not run in some runs has no time in them (-1), so its medians are over the runs it ran. */
static void prof_take(run_prof_t *p, const mi_session_t *s, int run) {
  if (run >= p->cap || !p->ms) return;
  for (; p->runs <= run; p->runs++) {
    double *row = &p->ms[(size_t)p->runs * (size_t)p->nodes];
    for (int32_t n = 0; n < p->nodes; n++) {
      uint64_t wall = 0;
      row[n] = p->runs == run && mi_session_node_time(s, n, &wall, NULL) ? (double)wall / 1e6 : -1;
    }
  }
  for (int32_t i = 0; i < mi_session_nested_count(s); i++) {
    int32_t node = -1;
    const char *branch = NULL;
    const mi_graph_t *g = NULL;
    const mi_session_t *ns = mi_session_nested(s, i, &node, &branch, &g);
    run_prof_t *q = NULL, *grown;
    if (!ns) continue;
    for (int32_t k = 0; k < p->sub_count; k++)
      if (p->sub[k].node == node && !strcmp(p->sub[k].branch, branch)) q = &p->sub[k];
    if (!q) { /* out of memory: the branch stays out of the table, its time in the If's row */
      if (!(grown = realloc(p->sub, ((size_t)p->sub_count + 1) * sizeof *grown))) continue;
      p->sub = grown;
      if (run_prof_init(&grown[p->sub_count], g, p->cap, NULL)) continue;
      q = &p->sub[p->sub_count++];
      q->node = node;
      q->branch = branch;
    }
    if (q->nodes != g->node_count) continue; /* rebuilt for other shapes: not comparable */
    q->g = g;
    q->s = ns;
    prof_take(q, ns, run);
  }
}

void run_prof_take(run_prof_t *p, const mi_session_t *s) { prof_take(p, s, p->runs); }

/* Per-layer rows of p: its own nodes' medians over the runs, its branches' rows nested in. */
static int32_t prof_rows(const run_prof_t *p, const mi_session_t *s, mi_layer_row_t **rows,
                         int32_t *n, mi_error_t *err) {
  double *med = malloc(((size_t)p->nodes + 1) * sizeof *med);
  double *col = malloc(((size_t)p->runs + 1) * sizeof *col);
  int32_t rc = MI_OK;
  if (!med || !col) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "--profile: out of memory");
  for (int32_t i = 0; rc == MI_OK && i < p->nodes; i++) {
    int32_t k = 0;
    mi_stats_t st;
    for (int r = 0; r < p->runs; r++)
      if (p->ms[(size_t)r * (size_t)p->nodes + (size_t)i] >= 0)
        col[k++] = p->ms[(size_t)r * (size_t)p->nodes + (size_t)i];
    med[i] = -1;
    /* The median of each node over the runs; their sum is close to, not equal to, the
     * median of the whole runs. */
    if (k > 0 && mi_stats_compute(col, k, 0, &st, NULL) == MI_OK) med[i] = st.median;
  }
  if (rc == MI_OK) rc = mi_layer_rows(p->g, s, NULL, med, rows, n, err);
  for (int32_t k = 0; rc == MI_OK && k < p->sub_count; k++) {
    mi_layer_row_t *inner = NULL;
    int32_t ni = 0;
    rc = prof_rows(&p->sub[k], p->sub[k].s, &inner, &ni, err);
    if (rc == MI_OK)
      rc = mi_layer_rows_nest(rows, n, p->sub[k].node, p->sub[k].branch, inner, ni, err);
    free(inner);
  }
  free(med);
  free(col);
  return rc;
}

int32_t run_prof_print(FILE *f, const run_prof_t *p, const run_summary_t *sum, int json,
                       mi_error_t *err) {
  mi_layer_row_t *rows = NULL;
  int32_t n = 0, rc = prof_rows(p, sum->session, &rows, &n, err);
  double sum_ms = 0;
  for (int32_t i = 0; rc == MI_OK && i < n; i++) sum_ms += rows[i].ms;
  if (rc == MI_OK && json) {
    fprintf(f, ", \"profile\": {\"layers_ms\": %.9g, \"layers\": ", sum_ms);
    mi_layer_rows_print(f, rows, n, 1);
    fputc('}', f);
  } else if (rc == MI_OK) {
    fprintf(f,
            "\nper-layer profile (median of %d runs per step; host wall clock around each "
            "step; a step inside an If branch is named <If>/<branch>/<step>):\n",
            p->runs);
    mi_layer_rows_print(f, rows, n, 0);
    fprintf(f,
            "layers %.4f ms of %.4f ms end to end (the rest: the session's own work "
            "between steps)\n",
            sum_ms, sum->latency.median);
  }
  free(rows);
  return rc;
}

void run_prof_free(run_prof_t *p) {
  for (int32_t k = 0; k < p->sub_count; k++) run_prof_free(&p->sub[k]);
  free(p->sub);
  free(p->ms);
  p->ms = NULL;
  p->sub = NULL;
  p->sub_count = 0;
}
