/* tune_html.c - mi-host tune's report.html: one self-contained page (inline SVG and CSS, no
 * scripts, fonts or images fetched) that reads top-down: a summary table per (model, device),
 * then per device the front, best-so-far, the chosen configuration grouped (model-side,
 * device-level, per-layer folded and summarised), the fallbacks and the failures. The per-layer
 * grouping is in tune_layers.c, the plots in tune_plot.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_report.h"

static const char *CSS =
    "body{font-family:sans-serif;margin:2em;max-width:72em;color:#111}"
    "h2{border-bottom:1px solid #bbb;padding-bottom:.2em;margin-top:2em}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    ".bad{color:#a00;font-weight:bold}.ok{color:#060}.note{color:#333;font-style:italic}"
    ".missing{background:#fff4d6;border-left:4px solid #E69F00;padding:.3em .6em}"
    "code{font-size:12px}details{margin:.5em 0}summary{cursor:pointer}"
    "svg{display:block;margin:.5em 0}";

/* The first recipe objective that has figures on the run's device. */
static int32_t first_objective(const mi_recipe_t *r, const mi_tune_facts_t *fa) {
  for (int32_t j = 0; j < r->objective_count; j++)
    if (fa->has[r->objectives[j]]) return r->objectives[j];
  return MI_OBJ_LATENCY;
}

/* The figures of a trial on the recipe's objectives that exist on this device. */
static void figures(FILE *f, const mi_recipe_t *r, const mi_tune_facts_t *fa, const mi_trial_t *t) {
  int first = 1;
  for (int32_t j = 0; j < r->objective_count; j++) {
    int32_t o = r->objectives[j];
    if (!fa->has[o]) continue;
    fputs(first ? "" : ", ", f);
    mi__tune_value(f, o, t->objectives[o]);
    first = 0;
  }
}

/* A run without figures to show (it failed, or its facts could not be drawn): its message
 * between `open` and `close`, and 1; else fills *fa and returns 0. */
static int failed(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, mi_tune_facts_t *fa,
                  const char *open, const char *close) {
  if (run->ok && run->res && mi__tune_facts(r, run, fa)) return 0;
  fputs(open, f);
  mi__tune_esc(f, run->message);
  fputs(close, f);
  return 1;
}

static void summary_row(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, int32_t i) {
  mi_tune_facts_t fa;
  fputs("<tr><td>", f);
  mi__tune_esc(f, run->model);
  fputs("</td><td>", f);
  mi__tune_esc(f, run->spec);
  if (run->assigned) fputs(" <span class=\"note\">(assigned)</span>", f);
  fputs("</td>", f);
  if (failed(f, r, run, &fa, "<td colspan=\"5\" class=\"bad\">failed: ", "</td></tr>\n")) return;
  if (run->front_n > 0) {
    const mi_trial_t *c = &run->res->trials[run->front[0]];
    int32_t o = first_objective(r, &fa);
    fprintf(f, "<td><a href=\"#run-%d\"><code>%016llx</code></a><br>", (int)i, (unsigned long long)c->hash);
    figures(f, r, &fa, c);
    fputs("</td><td class=\"num\">", f);
    if (run->confirm == 1) {
      /* the paired check's figure (tune_confirm.c): default time / chosen time, so > 1 is faster */
      const mi_compare_ratio_t *v = &run->vs_default;
      fprintf(f, "%.3g&#215; speed (95%% CI %.3g-%.3g, %d paired rounds)<br><span class=\"note\">%s</span>", 1 / v->ratio,
              1 / v->hi, 1 / v->lo, (int)run->confirm_rounds,
              run->deployed_default             ? "not shown faster: the default is deployed"
              : v->verdict == MI_COMPARE_FASTER ? "significantly faster"
                                                : "no significant difference");
    } else if (fa.def < 0)
      fputs("default not measured", f);
    else if (fa.def == run->front[0])
      fputs(run->deployed_default ? "the default is deployed (paired check failed)" : "the default is the choice", f);
    else if (isfinite(run->res->trials[fa.def].objectives[o]) && run->res->trials[fa.def].objectives[o] > 0)
      fprintf(f, "%.3g&#215; %s", c->objectives[o] / run->res->trials[fa.def].objectives[o], mi__tune_label(o));
    else
      fputs("default has no figure", f);
    fputs("</td><td>", f);
    if (run->verify_n > 0)
      fprintf(f, run->verify_bad[0] || run->verify_failed[0] ? "<span class=\"bad\">no: broke a bound when re-measured %d times</span>" : "<span class=\"ok\">yes, held in %d re-measurements</span>",
              (int)run->verify_n);
    else
      fputs("<span class=\"ok\">yes</span>", f);
  } else {
    fputs("<td class=\"bad\">nothing chosen</td><td>-</td><td class=\"bad\">no configuration met them", f);
  }
  fprintf(f, "<br><span class=\"note\">%d of %d trials feasible</span></td>", (int)(fa.ok - fa.infeasible), (int)fa.count);
  fprintf(f, "<td class=\"num\">%d measured", (int)run->res->measured);
  if (run->res->replayed) fprintf(f, "<br>+ %d from the history", (int)run->res->replayed);
  fprintf(f, "<br><span class=\"note\">budget %lld</span></td><td class=\"num\">%.1f s</td></tr>\n",
          (long long)r->budget_measurements, run->res->seconds);
  mi__tune_facts_free(&fa);
}

/* The chosen configuration first, then the fallbacks, with their figures and verification. */
static void front_table(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, const mi_tune_facts_t *fa) {
  fputs("<table class=\"front\"><tr><th></th><th>trial</th><th>config</th>", f);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (fa->has[k]) fprintf(f, "<th>%s (%s)</th>", mi__tune_label(k), mi__tune_unit(k));
  if (run->verify_n) fprintf(f, "<th>re-measured %d times</th>", (int)run->verify_n);
  fputs("</tr>\n", f);
  for (int32_t k = 0; k < run->front_n; k++) {
    const mi_trial_t *t = &run->res->trials[run->front[k]];
    fprintf(f, "<tr class=\"%s\"><td>%s</td><td class=\"num\">%d</td><td><code>%016llx</code>%s</td>", k == 0 ? "chosen" : "fallback",
            k == 0 ? "chosen" : "fallback", (int)run->front[k] + 1, (unsigned long long)t->hash,
            run->front[k] == fa->def ? " (default)" : "");
    for (int32_t j = 0; j < MI_OBJ_COUNT; j++)
      if (fa->has[j]) fprintf(f, isfinite(t->objectives[j]) ? "<td class=\"num\">%.4g</td>" : "<td>-</td>", mi__tune_shown(j, t->objectives[j]));
    if (run->verify_n) {
      int bad = run->verify_bad[k] || run->verify_failed[k];
      fprintf(f, "<td class=\"%s\">%s</td>", bad ? "bad" : "ok", bad ? "VIOLATED" : "meets the bounds");
    }
    fputs("</tr>\n", f);
  }
  fputs("</table>\n", f);
  (void)r;
}

/* Failed trials grouped by their reason. */
static void failures(FILE *f, const mi_tune_run_t *run) {
  const mi_search_result_t *res = run->res;
  int any = 0;
  for (int32_t i = 0; i < res->count; i++) {
    int32_t seen = 0, n = 0;
    if (res->trials[i].status == MI_OK) continue;
    for (int32_t j = 0; j < i && !seen; j++)
      seen = res->trials[j].status != MI_OK && !strcmp(res->trials[j].message, res->trials[i].message);
    if (seen) continue;
    if (!any) fputs("<h3>Failures</h3>\n<ul class=\"failures\">\n", f);
    any = 1;
    for (int32_t j = i; j < res->count; j++) n += res->trials[j].status != MI_OK && !strcmp(res->trials[j].message, res->trials[i].message);
    fprintf(f, "<li><b>%d trial(s)</b> (", (int)n);
    for (int32_t j = i, shown = 0; j < res->count; j++)
      if (res->trials[j].status != MI_OK && !strcmp(res->trials[j].message, res->trials[i].message)) {
        if (shown < 12) fprintf(f, "%s%d", shown ? ", " : "trial ", (int)j + 1);
        else if (shown == 12)
          fputs(", ...", f);
        shown++;
      }
    fputs("): ", f);
    mi__tune_esc(f, res->trials[i].message[0] ? res->trials[i].message : "no reason given");
    fputs("</li>\n", f);
  }
  if (any) fputs("</ul>\n", f);
}

static void run_section(FILE *f, const mi_recipe_t *r, mi_tune_run_t *run, int32_t i) {
  mi_tune_facts_t fa;
  fprintf(f, "<section class=\"run\" id=\"run-%d\"", (int)i);
  mi__tune_esc_data(f, run);
  fputs("><h2>", f);
  mi__tune_esc_title(f, run);
  fputs("</h2>\n", f);
  if (failed(f, r, run, &fa, "<p class=\"bad\">Failed: ", "</p></section>\n")) return;
  fprintf(f,
          "<p>Joint space: %s configurations (%d variant(s) pruned after %d prepare probes); %d measured, "
          "%d from the history, %d failed; %d of the successful ones infeasible; hypervolume %.6g.%s</p>\n",
          run->size, (int)run->pruned, (int)run->probes, run->res->measured, run->res->replayed, (int)fa.failed,
          (int)fa.infeasible, run->hv, run->energy_modeled ? " Energy figures are <b>modeled</b>, not measured." : "");
  if (run->ltasks > 0)
    /* Where the kernel choices came from: the history, the nearest measured tasks, or a cold
     * measurement of every candidate; and what a run with no history would have measured. */
    fprintf(f,
            "<p>Layer tasks: %d on %d nodes; %d from the history, %d warm-started from the nearest measured "
            "tasks (%d on the choice their neighbours agreed on), %d measured cold; %d layer measurements "
            "(%d for the warm-started) in %d whole-model runs, against %d for a run with no history.</p>\n",
            (int)run->ltasks, (int)run->ltask_nodes, (int)run->ltask_reused, (int)run->ltask_warm,
            (int)run->ltask_agreed, (int)run->ltask_cold, (int)run->ltask_layer_measurements,
            (int)run->ltask_warm_layer_measurements, (int)run->ltask_rounds, (int)run->ltask_cold_run_layer_measurements);
  for (int32_t j = 0; j < r->objective_count; j++)
    if (!fa.has[r->objectives[j]] && fa.ok > 0)
      fprintf(f, "<p class=\"missing\">No %s figure on this device (%s)%s; the plot shows what was measured instead.</p>\n",
              mi__tune_label(r->objectives[j]), mi__tune_why_missing(r->objectives[j]),
              r->objectives[j] == MI_OBJ_ENERGY ? ", so the search left it out here" : "");
  fputs("<h3>Trials and Pareto front</h3>\n", f);
  mi__tune_front_svg(f, r, run, &fa);
  fputs("<h3>Best so far</h3>\n", f);
  mi__tune_progress_svg(f, r, run, &fa);
  if (run->front_n == 0) {
    fputs("<p class=\"bad\">No configuration met the constraints.</p>\n", f);
  } else {
    const mi_trial_t *t = &run->res->trials[run->front[0]];
    fprintf(f, "<h3>Chosen configuration <code>%016llx</code></h3>\n<p>Trial %d%s: ", (unsigned long long)t->hash,
            (int)run->front[0] + 1, run->front[0] == fa.def ? ", the default configuration" : "");
    figures(f, r, &fa, t);
    fputs(".</p>\n", f);
    mi__tune_config_html(f, run, t);
    fprintf(f, "<h3>Front: the chosen configuration, then %d fallback(s)</h3>\n", (int)run->front_n - 1);
    front_table(f, r, run, &fa);
  }
  failures(f, run);
  fputs("</section>\n", f);
  mi__tune_facts_free(&fa);
}

void mi_tune_html(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n) {
  int any = 0;
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Meta Infer tuning report</title>\n"
          "<style>%s</style>\n</head><body>\n<h1>Meta Infer tuning report</h1>\n<p>Recipe <code>",
          CSS);
  mi__tune_esc(f, r->path);
  fputs("</code>; objectives (minimised): ", f);
  for (int32_t j = 0; j < r->objective_count; j++)
    fprintf(f, "%s%s (%s)", j ? ", " : "", mi__tune_label(r->objectives[j]), mi__tune_unit(r->objectives[j]));
  fputs("; constraints: ", f);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (r->has_bound[k]) {
      fprintf(f, "%s%s &#8804; ", any ? ", " : "", mi__tune_label(k));
      mi__tune_value(f, k, r->bound[k]);
      any = 1;
    }
  fprintf(f, "%s; budget %lld measurements per (model, device); strategy ", any ? "" : "none",
          (long long)r->budget_measurements);
  mi__tune_esc(f, r->strategy ? r->strategy : "meta");
  fputs(
      ".</p>\n<h2>Summary</h2>\n<table class=\"summary\"><tr><th>model</th><th>device</th><th>chosen</th>"
      "<th>tuned against default<br><span class=\"note\">paired rounds where checked, else ratio of medians of one measurement each</span></th><th>constraints met</th><th>measurements used</th><th>time</th></tr>\n",
      f);
  for (int32_t i = 0; i < n; i++) summary_row(f, r, &runs[i], i);
  fputs("</table>\n<h2>Assignment</h2>\n<ul class=\"assignment\">\n", f);
  for (int32_t i = 0; i < n; i++)
    if (runs[i].assigned) {
      fputs("<li>", f);
      mi__tune_esc(f, runs[i].model);
      fputs(" &#8594; ", f);
      mi__tune_esc(f, runs[i].spec);
      fputs("</li>\n", f);
    }
  fputs("</ul>\n", f);
  for (int32_t i = 0; i < n; i++) run_section(f, r, &runs[i], i);
  fputs("</body></html>\n", f);
}
