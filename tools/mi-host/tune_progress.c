/* tune_progress.c - mi-host tune's progress: the tuner's callbacks on the terminal, one line
 * per device of the pool redrawn in place (measurements used of budget, best so far, ETA); plain
 * log lines otherwise; nothing with --json (the summary goes to stdout). Threads share it
 * through its lock. */
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
  else if (log)
    fprintf(stderr, "tune: %s\n", p->text[line]);
  pthread_mutex_unlock(&p->lock);
}

static void on_progress(void *user, int32_t line, int log, const char *text) {
  mi_tune_progress_set(user, line, log, "%s", text);
}

static void on_trial(void *user, const char *spec, const mi_trial_t *t) {
  mi_tune_progress_t *p = user;
  if (!p->tty && !p->json && t->status != MI_OK) fprintf(stderr, "tune: %s: failed: %s\n", spec, t->message);
}

static void on_model(void *user, int32_t index, int32_t count, const char *name, int32_t devices) {
  mi_tune_progress_t *p = user;
  if (!p->json) fprintf(stderr, "tune: model %d/%d: %s on %d device(s)\n", (int)index + 1, (int)count, name, (int)devices);
  p->drawn = 0;
}

static void on_log(void *user, int kind, const char *text) {
  mi_tune_progress_t *p = user;
  if (kind == MI_TUNE_LOG_NOTE || !p->json) fprintf(stderr, "tune: %s\n", text);
}

static int on_stop(void *user) {
  (void)user;
  return mi_tune_stopped();
}

void mi_tune_progress_callbacks(mi_tune_progress_t *p, mi_tune_callbacks_t *cb) {
  memset(cb, 0, sizeof *cb);
  cb->struct_size = sizeof *cb;
  cb->user = p;
  cb->progress = on_progress;
  cb->trial = on_trial;
  cb->model = on_model;
  cb->log = on_log;
  cb->stop = on_stop;
}
