/* tune_call.c - how the tuner reports: progress lines, trials and log lines handed to the
 * caller's callbacks (the library prints nothing), the stop request, and what a finished run
 * says about itself (successes, the model that got nothing and why). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tune/tune_internal.h"

void mi__tune_progress(const mi_tune_task_t *t, int log, const char *fmt, ...) {
  char text[160];
  va_list ap;
  if (!t->cb || !t->cb->progress) return;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  t->cb->progress(t->cb->user, t->line, log, text);
}

void mi__tune_log(const mi_tune_callbacks_t *cb, int kind, const char *fmt, ...) {
  char text[2048];
  va_list ap;
  if (!cb || !cb->log) return;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cb->log(cb->user, kind, text);
}

int mi__tune_stopping(const mi_tune_callbacks_t *cb) {
  return cb && cb->stop ? cb->stop(cb->user) : 0;
}

void mi__tune_progress_trial(void *ctx, const mi_trial_t *t, int32_t used, int64_t budget,
                             double el) {
  mi_tune_task_t *k = ctx;
  double v = t->objectives[k->first_objective], viol = 0, eta;
  char best[48];
  mi_pareto_violation(t->objectives, 1, MI_OBJ_COUNT, k->bounds, k->bound_count, &viol);
  if (t->status == MI_OK && viol == 0 && isfinite(v) && !(v >= k->best)) k->best = v;
  eta = used > 0 ? el / used * (double)(budget - used) : 0;
  if (k->recipe->budget_seconds > 0 && eta > k->recipe->budget_seconds - el)
    eta = fmax(0, k->recipe->budget_seconds - el);
  if (isfinite(k->best)) snprintf(best, sizeof best, "best %s %.4g", mi_objective_name(k->first_objective, NULL), k->best);
  else
    snprintf(best, sizeof best, "no feasible configuration yet");
  mi__tune_progress(k, 1, "%-14s %3d/%-3lld measured  %s  eta %.0f s  last: %s%s%s",
                    k->spec, (int)used, (long long)budget, best, eta,
                    t->status == MI_OK ? "ok" : "failed", t->from_history ? " (history)" : "",
                    t->status == MI_OK ? "" : "");
  if (k->cb && k->cb->trial) k->cb->trial(k->cb->user, k->spec, t);
}

double mi__tune_left(const mi_tune_task_t *t) {
  return t->deadline > 0 ? t->deadline - mi_now_s() : INFINITY;
}

double mi__tune_confirm_keep(const mi_tune_task_t *t) {
  return fmin(MI__TUNE_CONFIRM_S, MI__TUNE_CONFIRM_SHARE * t->recipe->budget_seconds);
}

void mi__tune_share_search(const mi_tune_task_t *t, mi_search_options_t *o) {
  double left = mi__tune_left(t);
  if (!isfinite(left)) return;
  /* The paired check at the end keeps its share (15% of the budget, at most its usual 60 s);
   * the search has the rest, at least a moment so that it still takes what the history holds. */
  o->max_seconds = fmax(left - mi__tune_confirm_keep(t), 1e-3);
}

void mi__tune_time_note(const mi_tune_callbacks_t *cb, const mi_tune_run_t *run) {
  char text[512];
  size_t at = 0;
  int any = run->cut_variant_rounds || run->cut_knob_rounds || run->cut_search || run->cut_confirm;
  if (!(run->time_budget_s > 0) || !any) return;
  at += (size_t)snprintf(text + at, sizeof text - at, "the %.0f s budget (tune took %.0f s) cut", run->time_budget_s,
                         run->time_used_s);
  if (run->cut_variant_rounds)
    at += (size_t)snprintf(text + at, sizeof text - at, " %d layer-task variant round(s),", (int)run->cut_variant_rounds);
  if (run->cut_knob_rounds)
    at += (size_t)snprintf(text + at, sizeof text - at, " %d knob round(s),", (int)run->cut_knob_rounds);
  if (run->cut_search)
    at += (size_t)snprintf(text + at, sizeof text - at, " %d search measurement(s),", (int)run->cut_search);
  if (run->cut_confirm && at < sizeof text)
    at += (size_t)snprintf(text + at, sizeof text - at, " the paired check's time (%.0f s, not %d),",
                           run->confirm_s, (int)MI__TUNE_CONFIRM_S);
  if (at > 0 && at < sizeof text && text[at - 1] == ',') text[at - 1] = '\0';
  mi__tune_log(cb, MI_TUNE_LOG_INFO, "%s: %s: %s (budget.seconds sets it)", run->model, run->spec, text);
}

int mi_tune_stop_search(mi_tune_task_t *t) {
  if (!mi__tune_stopping(t->cb)) return 0;
  /* The search loops end when their wall-time budget is spent: spending it ends the search at
   * its next check, without a stop flag in the search API. */
  if (t->search) t->search->max_seconds = 1e-9;
  return 1;
}

MI_API int mi_tune_succeeded(const mi_tune_run_t *run) {
  int32_t n = 0;
  for (int32_t i = 0; run->ok && run->res && i < run->res->count; i++) n += run->res->trials[i].status == MI_OK;
  return n;
}

/* Why a run has nothing: its own error, else its last failed trial's message. */
static const char *why(const mi_tune_run_t *run) {
  if (!run->ok) return run->message;
  for (int32_t i = run->res ? run->res->count - 1 : -1; i >= 0; i--)
    if (run->res->trials[i].status != MI_OK) return run->res->trials[i].message;
  return run->res && run->res->count > 0 ? "no successful measurement" : "nothing was measured (budget 0?)";
}

MI_API int32_t mi_tune_failed_model(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n) {
  for (int32_t m = 0; m < r->model_count; m++) {
    int any = 0;
    for (int32_t d = 0; d < r->device_count && m * r->device_count + d < n; d++)
      any |= mi_tune_succeeded(&runs[m * r->device_count + d]) > 0;
    if (!any && r->budget_measurements > 0) return m;
  }
  return -1;
}

MI_API void mi_tune_failure_text(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n, int32_t m,
                                 char *buf, size_t cap) {
  size_t at = (size_t)snprintf(buf, cap, "%s: no configuration was measured successfully on any device", r->models[m].written);
  for (int32_t d = 0; d < r->device_count && m * r->device_count + d < n && at < cap; d++) {
    const mi_tune_run_t *run = &runs[m * r->device_count + d];
    at += (size_t)snprintf(buf + at, cap - at, "; %s: %s", run->spec, why(run));
  }
}
