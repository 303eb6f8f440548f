/* tune.h - what mi-host tune's files share: the terminal's progress (the tuner library's
 * callbacks, metainfer/mi_tuner.h), how the command ends, and the outputs it writes from the
 * library's runs. */
#ifndef MI_HOST_TUNE_H
#define MI_HOST_TUNE_H

#include <pthread.h>

#include "metainfer/mi_tuner.h"
#include "mi_host.h"

/** Progress of the pool: one line per device, redrawn on a terminal. */
typedef struct mi_tune_progress {
  pthread_mutex_t lock;
  int tty, json;
  int32_t lines, drawn;
  char (*text)[160];
} mi_tune_progress_t;

/* Progress (tune_progress.c). */
int32_t mi_tune_progress_init(mi_tune_progress_t *p, int32_t lines, int json);
void mi_tune_progress_free(mi_tune_progress_t *p);
/** Sets line `line` and redraws (terminal) or prints it as one log line (otherwise). */
void mi_tune_progress_set(mi_tune_progress_t *p, int32_t line, int log, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** The tuner's callbacks drawing on `p`: progress lines, failed trials' reasons, the model
 * lines and the log lines on stderr (the log's INFO lines and all but the progress not with
 * --json); stop is the Ctrl-C flag (tune_stop.c). */
void mi_tune_progress_callbacks(mi_tune_progress_t *p, mi_tune_callbacks_t *cb);

/* How a tune ends (tune_stop.c). */
/** SIGINT and SIGTERM set the stop flag instead of killing the tune. */
void mi_tune_stop_install(void);
/** The signal that asked the tune to stop, or 0. */
int mi_tune_stopped(void);
/** After the outputs: on an interrupt prints what the history kept and returns 130; when a
 * model got nothing prints why and returns MI_HOST_FAIL; else MI_HOST_OK. */
int mi_tune_finish(const mi_recipe_t *r, const char *history, mi_tune_run_t *runs, int32_t n,
                   int json);

/** Writes deployment.yaml, pareto.json, one SVG per run and report.html into `out`; with
 * `json`, also one JSON summary on stdout. MI_HOST_OK or MI_HOST_FAIL. */
int mi_tune_write(const mi_recipe_t *r, const char *out, mi_tune_run_t *runs, int32_t n, int json);

/** The Pareto plot of one run as an SVG element (tune_plot.c). */
void mi_tune_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run);
/** The self-contained report page (tune_html.c). */
void mi_tune_html(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n);

#endif
