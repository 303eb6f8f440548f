/* tune_html.c - mi-host tune's report.html: one self-contained page (inline SVG and CSS, no
 * scripts, fonts or images fetched) with, per (model, device), the Pareto plot, the chosen
 * configuration and its fallbacks, and best-so-far against measurements used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static void esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

/* The chosen configuration, one row per active dimension. */
static void chosen_table(FILE *f, const mi_tune_run_t *run) {
  char *text = NULL, *save = NULL;
  const mi_trial_t *t = &run->res->trials[run->front[0]];
  fprintf(f, "<h3>Chosen configuration %016llx</h3>\n<table class=\"chosen-config\" data-config=\"%016llx\">"
             "<tr><th>dimension</th><th>value</th></tr>\n",
          (unsigned long long)t->hash, (unsigned long long)t->hash);
  if (mi_space_canonical(run->space, t->point, &text, NULL) == MI_OK)
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      char *eq = strchr(line, '=');
      if (!eq) continue;
      *eq = '\0';
      fputs("<tr><td>", f);
      esc(f, line);
      fputs("</td><td>", f);
      esc(f, eq + 1);
      fputs("</td></tr>\n", f);
    }
  free(text);
  fputs("</table>\n", f);
}

/* Best feasible value of the first objective after each measurement, as a step line. */
static void progress_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run) {
  const double W = 480, H = 200, M = 40;
  int32_t o = r->objectives[0], n = run->res->count;
  double lo = INFINITY, hi = -INFINITY, best = INFINITY;
  for (int32_t k = 0; k < n; k++) {
    double v = run->res->trials[k].objectives[o];
    if (run->res->trials[k].status == MI_OK && isfinite(v)) {
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
  }
  if (!isfinite(lo)) return;
  if (!(hi > lo)) hi = lo + 1;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"progress\" data-device=\"%s\" width=\"%.0f\" "
             "height=\"%.0f\"><rect x=\"%.0f\" y=\"5\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n",
          run->spec, W, H, M, W - M - 5, H - M - 5);
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">measurements used (1 .. %d); best %s so far (%.4g .. %.4g)</text>\n",
          M, H - 15, (int)n, mi_objective_name(o, NULL), lo, hi);
  fputs("<polyline class=\"best-so-far\" fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"", f);
  for (int32_t k = 0; k < n; k++) {
    const mi_trial_t *t = &run->res->trials[k];
    if (t->status == MI_OK && t->objectives[o] < best) best = t->objectives[o];
    if (isfinite(best))
      fprintf(f, "%.1f,%.1f ", M + (n > 1 ? (double)k / (n - 1) : 0.5) * (W - M - 10) + 2,
              H - M - (best - lo) / (hi - lo) * (H - M - 20) - 5);
  }
  fputs("\"/>\n</svg>\n", f);
}

void mi_tune_html(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n) {
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Meta Infer tuning report</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}.bad{color:#b00}</style>\n"
        "</head><body>\n<h1>Meta Infer tuning report</h1>\n<p>Recipe: ", f);
  esc(f, r->path);
  fputs("</p>\n<h2>Assignment</h2>\n<ul class=\"assignment\">\n", f);
  for (int32_t i = 0; i < n; i++)
    if (runs[i].assigned) {
      fputs("<li>", f);
      esc(f, runs[i].model);
      fputs(" &rarr; ", f);
      esc(f, runs[i].spec);
      fputs("</li>\n", f);
    }
  fputs("</ul>\n", f);
  for (int32_t i = 0; i < n; i++) {
    mi_tune_run_t *run = &runs[i];
    fputs("<section class=\"run\" data-device=\"", f);
    esc(f, run->spec);
    fputs("\"><h2>", f);
    esc(f, run->model);
    fputs(" on ", f);
    esc(f, run->spec);
    fputs("</h2>\n", f);
    if (!run->ok) {
      fputs("<p class=\"error\">", f);
      esc(f, run->message);
      fputs("</p></section>\n", f);
      continue;
    }
    fprintf(f, "<p>Joint space: %s configurations (%d variant(s) pruned after %d prepare probes); %d measured, "
               "%d from the history; hypervolume %.6g%s.</p>\n",
            run->size, (int)run->pruned, (int)run->probes, run->res->measured, run->res->replayed, run->hv,
            run->energy_modeled ? "; energy figures are <b>modeled</b>, not measured" : "");
    mi_tune_svg(f, r, run);
    if (run->front_n == 0) {
      fputs("<p class=\"error\">No configuration met the constraints.</p></section>\n", f);
      continue;
    }
    chosen_table(f, run);
    fputs("<h3>Pareto front (first row: the chosen configuration, then the fallbacks)</h3>\n"
          "<table class=\"front\"><tr><th>config</th>", f);
    for (int32_t k = 0; k < MI_OBJ_COUNT; k++) fprintf(f, "<th>%s</th>", mi_objective_name(k, NULL));
    if (run->verify_n) fprintf(f, "<th>re-measured %d times</th>", (int)run->verify_n);
    fputs("</tr>\n", f);
    for (int32_t k = 0; k < run->front_n; k++) {
      const mi_trial_t *t = &run->res->trials[run->front[k]];
      fprintf(f, "<tr class=\"%s\"><td>%016llx</td>", k == 0 ? "chosen" : "fallback", (unsigned long long)t->hash);
      for (int32_t j = 0; j < MI_OBJ_COUNT; j++)
        fprintf(f, isfinite(t->objectives[j]) ? "<td>%.4g</td>" : "<td>-</td>", t->objectives[j]);
      if (run->verify_n) {
        int bad = run->verify_bad[k] || run->verify_failed[k];
        fprintf(f, "<td class=\"%s\">%s</td>", bad ? "bad" : "ok", bad ? "VIOLATED" : "meets the bounds");
      }
      fputs("</tr>\n", f);
    }
    fputs("</table>\n<h3>Search progress</h3>\n", f);
    progress_svg(f, r, run);
    fputs("</section>\n", f);
  }
  fputs("</body></html>\n", f);
}
