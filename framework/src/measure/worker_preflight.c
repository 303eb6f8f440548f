/* worker_preflight.c - loads a plugin once in a sacrificial mi-worker (entry, create, every
 * description, destroy) with a deadline, before a host loads it into its own process: a plugin
 * that crashes, hangs, exits or writes to stdout there is refused with the step it failed in,
 * instead of taking the host down (docs/security.md, "Plugin code and the host process"). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/measure_internal.h"
#include "plugin/plugin.h"

#define PREFLIGHT_DEFAULT_S 30.0
#define OUT_CAP 8192 /* bytes of a report or of the plugin's output kept (quoted: less) */

extern char **environ;

typedef struct capture {
  int fd;
  char text[OUT_CAP];
  size_t len, total;
  char *all; /* the snapshot pipe keeps everything (up to SNAP_CAP) */
  size_t all_len, all_cap;
} capture_t;

#define SNAP_CAP ((size_t)64 << 20)

static void take(capture_t *c, const char *buf, size_t n) {
  if (c->all_cap) {
    if (c->all_len + n > c->all_cap && c->all_cap < SNAP_CAP) {
      size_t cap = c->all_cap;
      char *grown;
      while (cap < c->all_len + n && cap < SNAP_CAP) cap *= 2;
      if ((grown = realloc(c->all, cap))) c->all = grown, c->all_cap = cap;
    }
    if (c->all_len + n <= c->all_cap) memcpy(c->all + c->all_len, buf, n);
    c->all_len += n; /* more than fits: a length that no snapshot has, refused */
    c->total += n;
    return;
  }
  size_t room = sizeof c->text - 1 - c->len;
  memcpy(c->text + c->len, buf, n < room ? n : room);
  c->len += n < room ? n : room;
  c->text[c->len] = '\0';
  c->total += n;
}

/* One line for a reason: newlines and control characters as spaces, at most `max` bytes. */
static void one_line(const char *in, char *out, size_t max) {
  size_t k = 0;
  for (; *in && k + 1 < max; in++) out[k++] = (unsigned char)*in < 0x20 ? ' ' : *in;
  out[k] = '\0';
}

/* The deadline: the options' timeout, MI_LOAD_TIMEOUT_S, else PREFLIGHT_DEFAULT_S. */
static double preflight_timeout(const mi_worker_options_t *o) {
  const char *env = secure_getenv("MI_LOAD_TIMEOUT_S");
  char *end = NULL;
  double t;
  if (o && o->timeout_s > 0) return o->timeout_s;
  if (env && env[0] && (t = strtod(env, &end)) > 0 && *end == '\0') return t;
  return PREFLIGHT_DEFAULT_S;
}

/* Starts `worker --preflight MANIFEST --fd 3 --parent PID [--snapshot 4]`: stage lines on fd 3,
 * the plugin's stdout and stderr on their own pipes, and with `npipes` 4 the descriptions on
 * fd 4 (mi_worker_describe). */
static int32_t start(const char *worker, const char *manifest, int npipes, pid_t *pid, int fds[4],
                     mi_error_t *err) {
  int p[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}}, rc;
  char parent_s[32], fd_s[16], snap_s[16];
  char *argv[10];
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, all;
  for (int i = 0; i < npipes; i++)
    if (pipe2(p[i], O_CLOEXEC) != 0) {
      for (int j = 0; j < i; j++) close(p[j][0]), close(p[j][1]);
      return mi_errorf(err, MI_ERR_IO, "preflight of %s: pipe: %s", manifest, strerror(errno));
    }
  snprintf(parent_s, sizeof parent_s, "%ld", (long)getpid());
  snprintf(fd_s, sizeof fd_s, "%d", MI__WORKER_FD);
  snprintf(snap_s, sizeof snap_s, "%d", MI__WORKER_FD + 1);
  argv[0] = (char *)worker;
  argv[1] = "--preflight";
  argv[2] = (char *)manifest;
  argv[3] = "--fd";
  argv[4] = fd_s;
  argv[5] = "--parent";
  argv[6] = parent_s;
  argv[7] = npipes > 3 ? "--snapshot" : NULL;
  argv[8] = npipes > 3 ? snap_s : NULL;
  argv[9] = NULL;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[0][1], MI__WORKER_FD);
  posix_spawn_file_actions_adddup2(&fa, p[1][1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, p[2][1], STDERR_FILENO);
  if (npipes > 3) posix_spawn_file_actions_adddup2(&fa, p[3][1], MI__WORKER_FD + 1);
  posix_spawn_file_actions_addclosefrom_np(&fa, MI__WORKER_FD + (npipes > 3 ? 2 : 1));
  posix_spawnattr_init(&at);
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  rc = posix_spawn(pid, worker, &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  for (int i = 0; i < 4; i++) {
    if (i < npipes) close(p[i][1]);
    fds[i] = i < npipes ? p[i][0] : -1;
  }
  if (rc != 0) {
    for (int i = 0; i < npipes; i++) close(fds[i]);
    return mi_errorf(err, MI_ERR_IO, "preflight of %s: cannot start %s: %s", manifest, worker,
                     strerror(rc));
  }
  return MI_OK;
}

/* Reads the three pipes until all are closed (the child exited) or the deadline passes (-1):
 * output still in the stdout pipe when the report ends must be seen too. */
static int collect(capture_t c[4], double deadline) {
  while (c[0].fd >= 0 || c[1].fd >= 0 || c[2].fd >= 0 || c[3].fd >= 0) {
    struct pollfd pf[4];
    int n = 0, map[4];
    double left = deadline - mi__now_s();
    int pr;
    if (left <= 0) return -1;
    for (int i = 0; i < 4; i++)
      if (c[i].fd >= 0) {
        pf[n].fd = c[i].fd;
        pf[n].events = POLLIN;
        pf[n].revents = 0;
        map[n++] = i;
      }
    pr = poll(pf, (nfds_t)n, (int)(left * 1000) + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return -1;
    for (int k = 0; k < n; k++) {
      char buf[16384];
      ssize_t r;
      if (!pf[k].revents) continue;
      r = read(pf[k].fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        close(c[map[k]].fd);
        c[map[k]].fd = -1;
        continue;
      }
      take(&c[map[k]], buf, (size_t)r);
    }
  }
  return 0;
}

/* The last "stage X" line of the report, or "load" before the first. */
static void last_stage(const char *report, char *out, size_t cap) {
  const char *at = report, *found = NULL;
  while ((at = strstr(at, "stage "))) found = at += 6;
  snprintf(out, cap, "%.*s", found ? (int)strcspn(found, "\n") : 4, found ? found : "load");
}

static int loader_debug(void) {
  const char *d = getenv("MI_LOADER_DEBUG");
  return d && d[0] && strcmp(d, "0") != 0;
}

/* Loads the plugin of `manifest` in a sacrificial worker; with `snap`, also brings back its
 * descriptions (*snap malloc'd, *nsnap bytes) and the child's own refusal as the reason. */
static int32_t isolate(const mi_worker_options_t *o, const char *manifest, void **snap,
                       size_t *nsnap, mi_error_t *err) {
  capture_t c[4];
  char *worker = NULL, stage_s[32], quoted[OUT_CAP];
  const char *refused;
  pid_t pid;
  int fds[4], st = 0, timed_out;
  double timeout = preflight_timeout(o);
  int32_t rc;
  if (!manifest) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "preflight: no manifest");
  if ((rc = mi__worker_find(o ? o->worker_path : NULL, &worker, err)) != MI_OK) {
    /* Without a worker program nothing can be isolated; say so rather than load blind. */
    char why[MI_ERROR_MESSAGE_SIZE];
    snprintf(why, sizeof why, "%s", err->message);
    return mi_errorf(err, rc, "refused: cannot load it in isolation first: %s", why);
  }
  if ((rc = start(worker, manifest, snap ? 4 : 3, &pid, fds, err)) != MI_OK) {
    free(worker);
    return rc;
  }
  free(worker);
  memset(c, 0, sizeof c);
  for (int i = 0; i < 4; i++) c[i].fd = fds[i];
  if (snap && !(c[3].all = malloc(c[3].all_cap = 65536))) c[3].all_cap = 0;
  timed_out = collect(c, mi__now_s() + timeout) < 0;
  if (timed_out) kill(pid, SIGKILL);
  for (int i = 0; i < 4; i++)
    if (c[i].fd >= 0) close(c[i].fd);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  last_stage(c[0].text, stage_s, sizeof stage_s);
  /* The plugin's stderr is its log: passed on to the host's, marked as whose it is; whole
   * while someone is tracing the loader (MI_LOADER_DEBUG), whose trace is in it. */
  if (c[2].len > 0 && loader_debug()) {
    fputs(c[2].text, stderr);
    if (c[2].text[c[2].len - 1] != '\n') fputc('\n', stderr);
  } else if (c[2].len > 0) {
    one_line(c[2].text, quoted, 200);
    fprintf(stderr, "mi-loader: %s wrote while loading: %s%s\n", manifest, quoted,
            c[2].total > 200 ? " ..." : "");
  }
  if (timed_out)
    rc = mi_errorf(err, MI_ERR_TIMEOUT,
                   "refused: hung in %s while loading in isolation (no answer in %.1f s; killed)",
                   stage_s, timeout);
  else if (WIFSIGNALED(st))
    rc = mi_errorf(err, MI_ERR_CRASHED,
                   "refused: crashed in %s while loading in isolation: signal %d (%s)", stage_s,
                   WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (!strstr(c[0].text, "done\n"))
    rc = mi_errorf(err, MI_ERR_CRASHED,
                   "refused: exited with status %d in %s while loading in isolation "
                   "(a plugin never exits)",
                   WIFEXITED(st) ? WEXITSTATUS(st) : -1, stage_s);
  else if (strstr(c[0].text, "forged\n"))
    rc = mi_errorf(err, MI_ERR_ABI,
                   "refused: called a host service with a handle the host never gave out "
                   "while loading (a forged handle)");
  else if (c[1].total > 0) {
    one_line(c[1].text, quoted, 80);
    rc = mi_errorf(err, MI_ERR_ABI,
                   "refused: writes to stdout while loading (%zu bytes, '%s'), which would "
                   "corrupt the host's output",
                   c[1].total, quoted);
  } else if (snap && (refused = strstr(c[0].text, "refused "))) {
    /* The child's loader refused it cleanly: its reason is the registry's. */
    rc = mi_errorf(err, MI_ERR_ABI, "%.*s", (int)strcspn(refused + 8, "\n"), refused + 8);
  } else if (snap && (c[3].all_len == 0 || c[3].all_len > c[3].all_cap)) {
    rc = mi_errorf(err, MI_ERR_ABI, "refused: no description came back from isolation (%zu bytes)",
                   c[3].all_len);
  }
  if (rc == MI_OK && snap) {
    *snap = c[3].all;
    *nsnap = c[3].all_len;
    c[3].all = NULL;
  }
  free(c[3].all);
  return rc;
}

MI_API int32_t mi_worker_preflight(void *opts, const char *manifest, const char *name,
                                   mi_error_t *err) {
  (void)name;
  return isolate(opts, manifest, NULL, NULL, err);
}

MI_API int32_t mi_worker_describe(void *opts, const char *manifest, const char *name,
                                  void **snapshot, size_t *size, mi_error_t *err) {
  (void)name;
  if (!snapshot || !size) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "describe: NULL");
  *snapshot = NULL;
  *size = 0;
  return isolate(opts, manifest, snapshot, size, err);
}

/* ---------------------------------------------------------------- the child's side */

static int32_t only_manifest(void *ctx, const char *path, const char *name, mi_error_t *err) {
  (void)name;
  return strcmp(path, ctx) == 0 ? MI_OK
                                : mi_errorf(err, MI_ERR_NOT_FOUND, "not %s", (const char *)ctx);
}

int mi__worker_preflight_main(int argc, char **argv) {
  const char *manifest = NULL, *fd_s = NULL, *parent_s = NULL, *snap_s = NULL;
  char dir[PATH_MAX], *slash;
  mi_registry_t *r;
  mi_error_t e;
  int fd;
  long parent;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--preflight") == 0) manifest = argv[i + 1];
    else if (strcmp(argv[i], "--fd") == 0)
      fd_s = argv[i + 1];
    else if (strcmp(argv[i], "--parent") == 0)
      parent_s = argv[i + 1];
    else if (strcmp(argv[i], "--snapshot") == 0)
      snap_s = argv[i + 1];
  }
  if (!manifest || !fd_s || !parent_s || argc != (snap_s ? 9 : 7)) {
    fputs("mi-worker: started by a host's preflight, not by hand\n", stderr);
    return 2;
  }
  fd = (int)strtol(fd_s, NULL, 10);
  parent = strtol(parent_s, NULL, 10);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if ((long)getppid() != parent) return 0;
  snprintf(dir, sizeof dir, "%s", manifest);
  if ((slash = strrchr(dir, '/'))) slash[slash == dir] = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  if (!(r = mi_registry_create())) return 3;
  mi_registry_set_preflight(r, only_manifest, (void *)manifest);
  mi__registry_set_stage_fd(r, fd);
  mi_error_clear(&e);
  (void)mi_registry_scan(r, dir, &e); /* a refusal is the host's to report, when it loads */
  if (snap_s && mi_registry_plugin_count(r) == 1) {
    /* Descriptions are read here, in the child, and passed back: the host runs none of it. */
    ssize_t w = write(fd, "stage describe\n", 15);
    (void)w;
    if (mi__plugin_snapshot_write((int)strtol(snap_s, NULL, 10), mi_registry_plugin(r, 0), &e))
      fprintf(stderr, "mi-worker: %s\n", e.message);
  } else if (snap_s && mi_registry_rejected_count(r) > 0) {
    char line[MI_ERROR_MESSAGE_SIZE + 16];
    int k = snprintf(line, sizeof line, "refused %s", mi_registry_rejected(r, 0, NULL));
    ssize_t w;
    if (k < 0) k = 0;
    if ((size_t)k >= sizeof line - 1) k = (int)sizeof line - 2;
    for (int i = 0; i < k; i++)
      if ((unsigned char)line[i] < 0x20) line[i] = ' ';
    line[k++] = '\n';
    w = write(fd, line, (size_t)k);
    (void)w;
  }
  {
    ssize_t w = write(fd, "stage destroy\n", 14);
    (void)w;
  }
  mi_registry_destroy(r);
  /* After destroy: a forged handle passed to a host service from destroy counts too. */
  if (mi__host_api_refused() > 0) {
    ssize_t w = write(fd, "forged\n", 7);
    (void)w;
  }
  {
    ssize_t w = write(fd, "done\n", 5);
    (void)w;
  }
  /* Exit-time work (atexit handlers, a plugin's leaked threads) is not the load's to judge. */
  _exit(0);
}
