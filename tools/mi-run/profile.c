/* profile.c - mi-run --profile: each node's time over the timed runs, then the framework's
 * per-layer table (mi_layer_rows), the one `mi-host profile` prints too. */
#include <stdlib.h>
#include <string.h>

#include "mi_run.h"

int32_t run_prof_init(run_prof_t *p, const mi_graph_t *g, int runs, mi_error_t *err) {
  memset(p, 0, sizeof *p);
  p->nodes = g->node_count;
  p->ms = malloc(((size_t)runs * (size_t)g->node_count + 1) * sizeof *p->ms);
  if (!p->ms) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "--profile: out of memory");
  return MI_OK;
}

void run_prof_take(run_prof_t *p, const mi_session_t *s) {
  double *row = &p->ms[(size_t)p->runs * (size_t)p->nodes];
  for (int32_t n = 0; n < p->nodes; n++) {
    uint64_t wall = 0;
    row[n] = mi_session_node_time(s, n, &wall, NULL) ? (double)wall / 1e6 : -1;
  }
  p->runs++;
}

int32_t run_prof_print(FILE *f, const run_prof_t *p, const run_summary_t *sum, int json,
                       mi_error_t *err) {
  double *med = malloc(((size_t)p->nodes + 1) * sizeof *med);
  double *col = malloc(((size_t)p->runs + 1) * sizeof *col);
  mi_layer_row_t *rows = NULL;
  int32_t n = 0, rc = MI_OK;
  double sum_ms = 0;
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
  if (rc == MI_OK) rc = mi_layer_rows(sum->g, sum->session, NULL, med, &rows, &n, err);
  for (int32_t i = 0; rc == MI_OK && i < n; i++) sum_ms += rows[i].ms;
  if (rc == MI_OK && json) {
    fprintf(f, ", \"profile\": {\"layers_ms\": %.9g, \"layers\": ", sum_ms);
    mi_layer_rows_print(f, rows, n, 1);
    fputc('}', f);
  } else if (rc == MI_OK) {
    fprintf(f,
            "\nper-layer profile (median of %d runs per step; host wall clock around each "
            "step):\n",
            p->runs);
    mi_layer_rows_print(f, rows, n, 0);
    fprintf(f,
            "layers %.4f ms of %.4f ms end to end (the rest: the session's own work "
            "between steps)\n",
            sum_ms, sum->latency.median);
  }
  free(rows);
  free(med);
  free(col);
  return rc;
}

void run_prof_free(run_prof_t *p) {
  free(p->ms);
  p->ms = NULL;
}
