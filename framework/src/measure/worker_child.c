/* worker_child.c - the worker program (mi-worker, exec'd by the pool): loads the plugins itself,
 * serves jobs for one device, and the frame I/O both sides use. A plugin that crashes or hangs
 * here takes only this process. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "measure/measure_internal.h"
#include "plugin/plugin.h"

int32_t mi__frame_send(int fd, uint32_t type, const void *a, size_t na, const void *b,
                       size_t nb) {
  mi__frame_t h = {MI__FRAME_MAGIC, type, (uint32_t)(na + nb)};
  const void *parts[3] = {&h, a, b};
  size_t sizes[3] = {sizeof h, na, nb};
  for (int i = 0; i < 3; i++) {
    const char *p = parts[i];
    size_t left = sizes[i];
    while (left > 0) {
      /* MSG_NOSIGNAL: a dead peer is an error value, not a SIGPIPE. */
      ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return MI_ERR_IO;
      p += w;
      left -= (size_t)w;
    }
  }
  return MI_OK;
}

int mi__poll_readable(int fd, double deadline) {
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    double left = deadline - mi__now_s();
    if (left <= 0) return -1;
    int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (pr > 0) return 1;
    if (pr == 0) return -1;
    if (errno != EINTR) return -2;
  }
}

int mi__read_full(int fd, void *buf, size_t n, double deadline) {
  char *p = buf;
  while (n > 0) {
    int w;
    if (deadline > 0 && (w = mi__poll_readable(fd, deadline)) < 0) return w;
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -2;
    if (r == 0) return 0;
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

/* The read end of this worker process's stdout (a pipe it drains after each job), -1 before
 * mi_worker_main set it up. One per process: the worker program serves one device. */
static int g_plugin_stdout = -1;

/* Sends a job's reply, unless the plugin broke a rule of the process while serving it: output on
 * stdout (logged on stderr, the host's log) or a host service called with a forged handle. Such
 * a job fails with the rule, so a plugin that does either is never chosen. */
int32_t mi__worker_reply(int fd, uint32_t type, const void *a, size_t na, const void *b,
                         size_t nb) {
  mi_error_t e;
  char buf[4096], shown[81] = "";
  size_t total = 0;
  ssize_t r;
  fflush(stdout);
  while (g_plugin_stdout >= 0 && (r = read(g_plugin_stdout, buf, sizeof buf)) > 0) {
    if (total == 0) {
      size_t k = 0;
      for (ssize_t i = 0; i < r && k + 1 < sizeof shown; i++)
        shown[k++] = (unsigned char)buf[i] < 0x20 ? ' ' : buf[i];
      shown[k] = '\0';
    }
    fputs("mi-worker: the plugin wrote to stdout: ", stderr);
    fwrite(buf, 1, (size_t)r, stderr);
    fputc('\n', stderr);
    total += (size_t)r;
  }
  if (type == MI__REPLY_ERROR) return mi__frame_send(fd, type, a, na, b, nb);
  mi_error_clear(&e);
  if (total > 0)
    mi_errorf(&e, MI_ERR_ABI,
              "the plugin wrote %zu bytes to stdout ('%s'); a plugin never prints "
              "to stdout",
              total, shown);
  else if (mi__host_api_refused() > 0)
    mi_errorf(&e, MI_ERR_ABI,
              "the plugin called a host service with a handle the host never "
              "gave out (refused; a forged handle)");
  else
    return mi__frame_send(fd, type, a, na, b, nb);
  return mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
}

/* Points this process's stdout at a pipe it drains itself (mi__worker_reply), unbuffered so a
 * plugin's printf is seen with the job that made it. Both ends are non-blocking: a plugin that
 * prints on every run fills the pipe within a measurement, and its writes then fail instead of
 * blocking it until the job's deadline (which would be reported as a hang, not as the print). */
static void capture_stdout(void) {
  int pp[2];
  if (pipe2(pp, O_CLOEXEC) != 0) return;
  if (fcntl(pp[0], F_SETFL, O_NONBLOCK) != 0 || fcntl(pp[1], F_SETFL, O_NONBLOCK) != 0 ||
      dup2(pp[1], STDOUT_FILENO) < 0) {
    close(pp[0]);
    close(pp[1]);
    return;
  }
  close(pp[1]);
  setvbuf(stdout, NULL, _IONBF, 0);
  g_plugin_stdout = pp[0];
}

static void send_error(int fd, const mi_error_t *e) {
  mi__frame_send(fd, MI__REPLY_ERROR, e, sizeof *e, NULL, 0);
}

static int32_t load_plugins(mi_registry_t *r, const char *dirs, mi_error_t *err) {
  char *copy, *save = NULL;
  int32_t rc = MI_OK;
  if (!dirs) return mi_registry_scan_env(r, err);
  if (!(copy = strdup(dirs))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (char *d = strtok_r(copy, ":", &save); d && !rc; d = strtok_r(NULL, ":", &save))
    rc = mi_registry_scan(r, d, err);
  free(copy);
  return rc;
}

static int32_t load_model(const char *path, mi_graph_t **g, mi_error_t *err) {
  int32_t rc = mi_onnx_load(path, g, err);
  if (!rc) rc = mi_graph_make_static(*g, NULL, err); /* as every worker's model (tune_run.c) */
  if (rc) {
    mi_graph_destroy(*g);
    *g = NULL;
  }
  return rc;
}

static void serve_profile(int fd, mi_plugin_t *pl, uint32_t dev, const mi__config_cache_t *cc,
                          const mi__job_t *job, mi_graph_t **g, char *loaded, size_t cap) {
  mi_error_t e;
  mi_profile_t *prof = NULL;
  mi_error_clear(&e);
  if (!*g || strcmp(loaded, job->model) != 0) {
    mi_graph_destroy(*g);
    *g = NULL;
    loaded[0] = '\0';
    if (load_model(job->model, g, &e)) {
      send_error(fd, &e);
      return;
    }
    snprintf(loaded, cap, "%s", job->model);
  }
  {
    mi_knob_value_t kv[16];
    mi_session_options_t so;
    memset(&so, 0, sizeof so);
    so.struct_size = (uint32_t)sizeof so;
    for (int32_t i = 0; i < job->knob_count && i < 16; i++) {
      kv[i].name = job->knob_name[i];
      kv[i].i = job->knob_value[i];
      kv[i].f = 0;
    }
    so.device_knob_count = job->knob_count;
    so.device_knobs = kv;
    so.allow_host_fallback = job->allow_host_fallback;
    mi__config_fallback(cc, &so);
    if (mi_profile_run(*g, pl, dev, &so, &job->mo, job->check, &prof, &e)) {
      send_error(fd, &e);
      return;
    }
  }
  {
    size_t nb = 0;
    void *body = mi__profile_body(prof, &nb);
    if (body) {
      mi__worker_reply(fd, MI__REPLY_PROFILE, prof, sizeof *prof, body, nb);
    } else {
      mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      send_error(fd, &e);
    }
    free(body);
  }
  mi_profile_destroy(prof);
}

uint64_t mi__wire_tag(void) {
  const uint64_t sizes[] = {sizeof(mi__frame_t), sizeof(mi__job_t),
                            sizeof(mi_measure_options_t), sizeof(mi_profile_t),
                            sizeof(mi_layer_profile_t), sizeof(mi_nest_row_t), sizeof(mi_device_fingerprint_t),
                            sizeof(mi_worker_config_result_t), sizeof(mi_error_t),
                            sizeof(mi__interleave_job_t), sizeof(mi__interleave_reply_t)};
  uint64_t h = mi_hash64(MI_VERSION_STRING, sizeof MI_VERSION_STRING - 1, 0xcbf29ce484222325ull);
  return mi_hash64(sizes, sizeof sizes, h);
}

typedef struct worker_args {
  int fd;
  const char *spec, *dirs;
  const char *fallback; /* --fallback: mi_worker_options_t.fallback; NULL: the default */
  long parent;
  uint64_t wire;
} worker_args_t;

static int parse_args(int argc, char **argv, worker_args_t *a) {
  int have = 0;
  memset(a, 0, sizeof *a);
  a->fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    char *end = NULL;
    if (strcmp(k, "--fd") == 0) {
      long fd = strtol(v, &end, 10);
      if (*end || fd < 0 || fd > 1 << 20) return -1;
      a->fd = (int)fd;
      have |= 1;
    } else if (strcmp(k, "--device") == 0) {
      a->spec = v;
      have |= 2;
    } else if (strcmp(k, "--parent") == 0) {
      a->parent = strtol(v, &end, 10);
      if (*end || a->parent <= 0) return -1;
      have |= 4;
    } else if (strcmp(k, "--wire") == 0) {
      a->wire = strtoull(v, &end, 16);
      if (*end) return -1;
      have |= 8;
    } else if (strcmp(k, "--plugins") == 0) {
      a->dirs = v;
    } else if (strcmp(k, "--fallback") == 0) {
      a->fallback = v;
    } else {
      return -1;
    }
  }
  return argc % 2 == 1 && have == 15 ? 0 : -1;
}

/* A worker loads only its device's plugin: another plugin of the same folders that crashes in
 * create must not take this device's worker with it. */
static int32_t only_plugin(void *ctx, const char *path, const char *name, mi_error_t *err) {
  const char *spec = ctx;
  size_t n = strcspn(spec, ":");
  (void)path;
  return strlen(name) == n && strncmp(name, spec, n) == 0
             ? MI_OK
             : mi_errorf(err, MI_ERR_NOT_FOUND, "not the plugin of %s", spec);
}

MI_API int mi_worker_main(int argc, char **argv) {
  worker_args_t a;
  mi_registry_t *reg = NULL;
  mi_plugin_t *pl = NULL;
  uint32_t dev = 0;
  mi_error_t setup;
  mi_graph_t *g = NULL;
  char loaded[4096] = "";
  mi__config_cache_t cc;
  mi__probe_cache_t pc;
  int32_t setup_rc;
  if (argc > 1 && strcmp(argv[1], "--preflight") == 0) return mi__worker_preflight_main(argc, argv);
  if (parse_args(argc, argv, &a) != 0) {
    fputs("mi-worker: started by a worker pool (mi_worker_pool_create), not by hand\n", stderr);
    return 2;
  }
  /* A worker must not outlive the host that measures with it; if the host died before this
   * line, the parent is already someone else. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if ((long)getppid() != a.parent) return 0;
  signal(SIGPIPE, SIG_IGN);
  capture_stdout();
  mi_error_clear(&setup);
  memset(&cc, 0, sizeof cc);
  memset(&pc, 0, sizeof pc);
  if (a.wire != mi__wire_tag())
    setup_rc = mi_errorf(&setup, MI_ERR_ABI,
                         "worker: %s is from another build than its host "
                         "(wire %016llx, host %016llx)",
                         argv[0], (unsigned long long)mi__wire_tag(), (unsigned long long)a.wire);
  else if (!(reg = mi_registry_create()))
    setup_rc = mi_errorf(&setup, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  else {
    mi_registry_set_preflight(reg, only_plugin, (void *)a.spec);
    if (!(setup_rc = load_plugins(reg, a.dirs, &setup)))
      setup_rc = mi_registry_device(reg, a.spec, &pl, &dev, &setup);
    /* The fallback device's plugin too (the one exception to one plugin per worker): the
     * nodes the device refuses run there, as they do in mi-run. */
    if (!setup_rc)
      setup_rc = mi_registry_load_fallback(reg, a.dirs, a.fallback, pl, dev, NULL, NULL, &cc.fb,
                                           &cc.fb_device, &setup);
  }
  for (;;) {
    mi__frame_t h;
    union {
      mi__job_t job;
      char raw[1];
    } * buf;
    if (mi__read_full(a.fd, &h, sizeof h, 0) != 1 || h.magic != MI__FRAME_MAGIC ||
        (h.length > sizeof(mi__job_t) &&
         ((h.type != MI__JOB_CONFIG && h.type != MI__JOB_PROBE && h.type != MI__JOB_CHECK &&
           h.type != MI__JOB_INTERLEAVE) ||
          h.length > MI__CONFIG_JOB_MAX)))
      break;
    /* Configuration jobs carry texts of any length up to MI__CONFIG_JOB_MAX. */
    buf = calloc(1, h.length > sizeof *buf ? h.length + 1 : sizeof *buf);
    if (!buf || mi__read_full(a.fd, buf, h.length, 0) != 1) {
      free(buf);
      break;
    }
    if (setup_rc) {
      send_error(a.fd, &setup);
    } else if (h.type == MI__JOB_PROFILE && h.length == sizeof(mi__job_t)) {
      serve_profile(a.fd, pl, dev, &cc, &buf->job, &g, loaded, sizeof loaded);
    } else if (h.type == MI__JOB_CONFIG) {
      mi__worker_serve_config(a.fd, pl, dev, buf, h.length, &cc);
    } else if (h.type == MI__JOB_INTERLEAVE) {
      mi__worker_serve_interleave(a.fd, pl, dev, buf, h.length, &cc);
    } else if (h.type == MI__JOB_PROBE) {
      mi__worker_serve_probe(a.fd, pl, dev, buf, h.length, &pc);
    } else if (h.type == MI__JOB_CHECK) {
      mi__worker_serve_check(a.fd, pl, dev, buf, h.length);
    } else if (h.type == MI__JOB_FINGERPRINT) {
      mi_device_fingerprint_t fp;
      mi_error_t e;
      mi_error_clear(&e);
      if (mi_device_fingerprint(pl, dev, &fp, &e)) send_error(a.fd, &e);
      else
        mi__worker_reply(a.fd, MI__REPLY_FINGERPRINT, &fp, sizeof fp, NULL, 0);
    } else {
      mi_errorf(&setup, MI_ERR_INTERNAL, "worker: unknown job %u", h.type);
      send_error(a.fd, &setup);
      mi_error_clear(&setup);
    }
    free(buf);
  }
  /* The host closed the socket: _exit, with no exit-time work. Unloading plugins would only
   * give drivers a chance to hang at teardown; nobody reads how a closed worker ended, so a
   * leak check here would be output no test looks at, and with the drivers' threads still
   * running LeakSanitizer's exit check is itself fragile (its tracer has been seen to crash in
   * such processes). Plugins' leaks are mi-conform's R11. */
  _exit(0);
}
