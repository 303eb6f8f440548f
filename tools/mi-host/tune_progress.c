/* tune_progress.c - mi-host tune's progress: on a terminal one line per device of the pool,
 * redrawn in place (measurements used of budget, best so far, ETA); plain log lines otherwise;
 * nothing with --json (the summary goes to stdout). Threads share it through its lock. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

int32_t mi_tune_progress_init(mi_tune_progress_t *p, int32_t lines, int json) {
  memset(p, 0, sizeof *p);
  p->tty = isatty(2);
  p->json = json;
  p->lines = lines;
  p->text = calloc((size_t)lines + 1, sizeof *p->text);
  if (!p->text) return MI_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&p->lock, NULL);
  return MI_OK;
}

void mi_tune_progress_free(mi_tune_progress_t *p) {
  if (!p->text) return;
  free(p->text);
  p->text = NULL;
  pthread_mutex_destroy(&p->lock);
}

static void redraw(mi_tune_progress_t *p) {
  if (p->drawn) fprintf(stderr, "\033[%dA", (int)p->drawn); /* back to the first line */
  for (int32_t i = 0; i < p->lines; i++) fprintf(stderr, "\r\033[K%s\n", p->text[i]);
  p->drawn = p->lines;
  fflush(stderr);
}

void mi_tune_progress_set(mi_tune_progress_t *p, int32_t line, int log, const char *fmt, ...) {
  va_list ap;
  if (p->json || line < 0 || line >= p->lines) return;
  pthread_mutex_lock(&p->lock);
  va_start(ap, fmt);
  vsnprintf(p->text[line], sizeof p->text[line], fmt, ap);
  va_end(ap);
  if (p->tty) redraw(p);
  else if (log) fprintf(stderr, "tune: %s\n", p->text[line]);
  pthread_mutex_unlock(&p->lock);
}

void mi_tune_progress_trial(void *ctx, const mi_trial_t *t, int32_t used, int64_t budget,
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
  else snprintf(best, sizeof best, "no feasible configuration yet");
  mi_tune_progress_set(k->progress, k->line, 1, "%-14s %3d/%-3lld measured  %s  eta %.0f s  last: %s%s%s",
                       k->spec, (int)used, (long long)budget, best, eta,
                       t->status == MI_OK ? "ok" : "failed", t->from_history ? " (history)" : "",
                       t->status == MI_OK ? "" : "");
  if (!k->progress->tty && !k->progress->json && t->status != MI_OK)
    fprintf(stderr, "tune: %s: failed: %s\n", k->spec, t->message);
}
