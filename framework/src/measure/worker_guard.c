/* worker_guard.c - a guarded child for programs that run plugin code themselves (mi-run): the
 * program forks before it loads anything, the child does the work and names each step on a pipe,
 * the parent waits with a deadline per step, so plugin code that crashes, hangs or exits ends in
 * one line naming the plugin and the step instead of taking the program with it. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/measure_internal.h"
#include "plugin/plugin.h"

struct mi_guard {
  int fd;          /* the write end of the report pipe */
  double repeat_s; /* a step named again within this long after the last line: not written */
  double last_s;   /* when the last line was written */
  char last[200];  /* that line */
};

/* What the parent knows of the child's progress: the last complete lines. */
typedef struct watch {
  char line[256];
  size_t len;
  char plugin[128];
  char stage[32];
  int ended;
} watch_t;

static void on_line(watch_t *w) {
  w->line[w->len] = '\0';
  if (strncmp(w->line, "plugin ", 7) == 0)
    snprintf(w->plugin, sizeof w->plugin, "%s", w->line + 7);
  else if (strncmp(w->line, "stage ", 6) == 0)
    snprintf(w->stage, sizeof w->stage, "%s", w->line + 6);
  else if (strcmp(w->line, "end") == 0)
    w->ended = 1;
  w->len = 0;
}

/* Reads the report until end of file (0) or until no line came for `timeout` seconds (-1). */
static int watch_child(int fd, double timeout, watch_t *w) {
  double deadline = timeout > 0 ? mi__now_s() + timeout : 0;
  for (;;) {
    char buf[512];
    /* When poll itself fails, the read decides: an error there ends the watch like end of file. */
    if (deadline > 0 && mi__poll_readable(fd, deadline) == -1) return -1;
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    for (ssize_t i = 0; i < r; i++) {
      if (buf[i] == '\n') {
        on_line(w);
        /* A step ended: a new deadline; none while a preflight, which keeps its own, runs. */
        deadline = timeout > 0 && strcmp(w->stage, "preflight") != 0 ? mi__now_s() + timeout : 0;
      } else if (w->len + 1 < sizeof w->line) {
        w->line[w->len++] = (unsigned char)buf[i] < 0x20 ? ' ' : buf[i];
      }
    }
  }
}

/* "plugin 'x' " or "", for the parent's message. */
static void whose(const watch_t *w, char *out, size_t cap) {
  if (w->plugin[0]) snprintf(out, cap, "plugin '%s' ", w->plugin);
  else
    snprintf(out, cap, "%s", "");
}

MI_API int32_t mi_guard_begin(double step_timeout_s, mi_guard_t **child, int *status,
                              mi_error_t *err) {
  int p[2], st = 0, r;
  pid_t pid, parent = getpid();
  watch_t w;
  char who[160];
  if (!child || !status) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_guard_begin: NULL");
  *child = NULL;
  *status = 0;
  if (pipe2(p, O_CLOEXEC) != 0)
    return mi_errorf(err, MI_ERR_IO, "guard: pipe: %s", strerror(errno));
  /* Nothing is buffered yet that the child would write a second time. */
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return mi_errorf(err, MI_ERR_IO, "guard: fork: %s", strerror(errno));
  }
  if (pid == 0) {
    mi_guard_t *g = malloc(sizeof *g);
    close(p[0]);
    /* The child must not outlive a parent that was killed while waiting for it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent || !g) _exit(1);
    g->fd = p[1];
    /* A step repeated in a loop (mi-run's "run" before every run) was one write and one wake-up
     * of the parent each time (40,000 runs of silero-vad-v5: 39,649 context switches, 1.11 CPUs
     * busy at one thread; 25 and 1.00 now). Written again only after a tenth of the deadline (at
     * most 1 s), a hung run is still killed within the deadline of its start. */
    g->repeat_s = step_timeout_s > 0 && step_timeout_s < 10 ? step_timeout_s / 10 : 1.0;
    g->last_s = 0;
    g->last[0] = '\0';
    *child = g;
    return MI_OK;
  }
  close(p[1]);
  memset(&w, 0, sizeof w);
  snprintf(w.stage, sizeof w.stage, "start");
  r = watch_child(p[0], step_timeout_s, &w);
  if (r < 0) kill(pid, SIGKILL);
  close(p[0]);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  whose(&w, who, sizeof who);
  if (r < 0)
    return mi_errorf(err, MI_ERR_TIMEOUT, "%shung in %s (no answer in %.1f s; killed)", who,
                     w.stage, step_timeout_s);
  if (WIFSIGNALED(st))
    return mi_errorf(err, MI_ERR_CRASHED, "%scrashed in %s: signal %d (%s)", who, w.stage,
                     WTERMSIG(st), strsignal(WTERMSIG(st)));
  if (!w.ended)
    return mi_errorf(err, MI_ERR_CRASHED, "%sexited with status %d in %s (a plugin never exits)",
                     who, WIFEXITED(st) ? WEXITSTATUS(st) : -1, w.stage);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  return MI_OK;
}

static void say(mi_guard_t *g, const char *what, const char *value) {
  char line[200];
  int n;
  if (!g) return;
  n = snprintf(line, sizeof line, "%s %.150s\n", what, value);
  for (int i = 0; i < n - 1 && i < (int)sizeof line - 2; i++)
    if ((unsigned char)line[i] < 0x20) line[i] = ' ';
  if (n > 0) {
    ssize_t wr = write(g->fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)wr;
    g->last_s = mi__now_s();
    snprintf(g->last, sizeof g->last, "%s", line);
  }
}

/* "preflight" is the step in which the child waits for mi_worker_preflight: it has no deadline
 * here, the preflight has its own. */
MI_API void mi_guard_stage(mi_guard_t *g, const char *plugin, const char *stage) {
  if (!g) return;
  if (plugin) say(g, "plugin", plugin); /* then the stage differs from the last line: written */
  if (stage) {
    char line[200];
    snprintf(line, sizeof line, "stage %.150s\n", stage);
    if (!strcmp(line, g->last) && mi__now_s() - g->last_s < g->repeat_s) return;
    say(g, "stage", stage);
  }
}

MI_API void mi_guard_registry(mi_guard_t *g, mi_registry_t *r) {
  if (g) mi__registry_set_stage_fd(r, g->fd);
}

MI_API void mi_guard_end(mi_guard_t *g) {
  if (!g) return;
  fflush(NULL);
  {
    ssize_t wr = write(g->fd, "end\n", 4);
    (void)wr;
  }
  close(g->fd);
  free(g);
}
