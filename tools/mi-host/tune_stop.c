/* tune_stop.c - how mi-host tune ends other than by finishing: Ctrl-C (SIGINT, SIGTERM) asks the
 * tuner to stop between measurements (its stop callback) and says what the history kept, and a
 * model that got no successful measurement on any device fails the run with the reason instead
 * of a silent exit 0. */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "tune.h"

/* A signal handler reaches nothing but a global: the one piece of global state in mi-host. */
static volatile sig_atomic_t g_stop;

static void on_signal(int sig) { g_stop = sig; }

void mi_tune_stop_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  /* SA_RESTART: reads of the history and of workers carry on; the loops that wait on a worker
   * poll with a deadline and look again. */
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

int mi_tune_stopped(void) { return (int)g_stop; }

int mi_tune_finish(const mi_recipe_t *r, const char *history, mi_tune_run_t *runs, int32_t n,
                   int json) {
  int32_t m;
  char text[2048];
  if (g_stop) {
    int64_t saved = 0;
    for (int32_t i = 0; i < n; i++) saved += runs[i].recorded;
    if (history)
      fprintf(stderr, "\ntune: interrupted: %lld measurements saved in %s; rerun the same command to resume\n",
              (long long)saved, history);
    else
      fprintf(stderr, "\ntune: interrupted: nothing saved (the recipe says history: none)\n");
    return 130; /* 128 + SIGINT, as shells report an interrupted program */
  }
  if ((m = mi_tune_failed_model(r, runs, n)) < 0) return MI_HOST_OK;
  mi_tune_failure_text(r, runs, n, m, text, sizeof text);
  (void)json; /* the JSON summary says it too ("ok": false); stderr always does */
  fprintf(stderr, "mi-host: tune: %s\n", text);
  return MI_HOST_FAIL;
}
