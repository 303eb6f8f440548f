/* worker.c - the parent side of crash isolation: one worker process per device, jobs sent over
 * a socket pair in frames, a deadline per job, failures classified and devices quarantined. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/measure_internal.h"

#define MAX_WORKERS 64

typedef struct slot {
  char spec[128];
  pid_t pid; /* -1 when not running */
  int fd;
  int32_t fails;
  int32_t ever_ok; /* a measurement of this device has passed: it can compute right */
  int32_t quarantined;
  char why[160]; /* the last failure: the reason a quarantine gives */
} slot_t;

struct mi_worker_pool {
  mi_worker_options_t o;
  char *dirs;
  char *fallback; /* mi_worker_options_t.fallback, or NULL */
  char **env;
  char *path; /* the mi-worker executable */
  int32_t count;
  slot_t slots[MAX_WORKERS];
  double deadline; /* mi_worker_pool_set_deadline (0: none) */
};

extern char **environ;

static int usable(const char *path, mi_error_t *err) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK) != 0) return 0;
  /* Whoever may rewrite the worker runs code in every measurement, like a plugin would. */
  if (st.st_mode & S_IWOTH) {
    mi_errorf(err, MI_ERR_ABI, "refused: worker %s is world-writable (mode %03o)", path,
              (unsigned)(st.st_mode & 0777));
    return -1;
  }
  return 1;
}

/* The mi-worker executable: the one asked for, else the one next to the running program
 * (build/bin, or wherever the tools are installed), else the build tree's (MI_WORKER_BUILD_PATH:
 * tests and benchmarks live in other folders of the build). */
int32_t mi__worker_find(const char *given, char **out, mi_error_t *err) {
  char self[PATH_MAX], next[PATH_MAX + 16];
  const char *cand[3];
  int n = 0;
  ssize_t len;
  *out = NULL;
  if (given) {
    cand[n++] = given;
  } else {
    if ((len = readlink("/proc/self/exe", self, sizeof self - 1)) > 0) {
      char *slash;
      self[len] = '\0';
      if ((slash = strrchr(self, '/'))) {
        *slash = '\0';
        snprintf(next, sizeof next, "%s/mi-worker", self);
        cand[n++] = next;
      }
    }
#ifdef MI_WORKER_BUILD_PATH
    cand[n++] = MI_WORKER_BUILD_PATH;
#endif
  }
  for (int i = 0; i < n; i++) {
    int u = usable(cand[i], err);
    if (u < 0) return MI_ERR_ABI;
    if (u > 0) {
      if (!(*out = strdup(cand[i])))
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker pool: out of memory");
      return MI_OK;
    }
  }
  if (given) return mi_errorf(err, MI_ERR_NOT_FOUND, "worker pool: %s is not an executable", given);
  return mi_errorf(err, MI_ERR_NOT_FOUND,
                   "worker pool: no mi-worker executable at %s%s%s "
                   "(set worker_path)",
                   n > 0 ? cand[0] : "(unknown program folder)",
                   n > 1 ? " or " : "", n > 1 ? cand[1] : "");
}

MI_API void mi_worker_options_default(mi_worker_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = (uint32_t)sizeof *o;
  o->timeout_s = 60;
  o->quarantine_after = 3;
}

MI_API int32_t mi_worker_pool_create(const mi_worker_options_t *opts, mi_worker_pool_t **out,
                                     mi_error_t *err) {
  mi_worker_pool_t *p;
  int32_t n = 0, rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_pool_create: out is NULL");
  *out = NULL;
  p = calloc(1, sizeof *p);
  if (!p) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker pool: out of memory");
  mi_worker_options_default(&p->o);
  if (opts)
    memcpy(&p->o, opts, opts->struct_size < sizeof p->o ? opts->struct_size : sizeof p->o);
  if (p->o.timeout_s <= 0) p->o.timeout_s = 60;
  {
    /* The operator's word over the program's: how long any one job may take on this machine. */
    const char *t = secure_getenv("MI_WORKER_TIMEOUT_S");
    char *end = NULL;
    double v = t && t[0] ? strtod(t, &end) : 0;
    if (v > 0 && end && *end == '\0') p->o.timeout_s = v;
  }
  if (p->o.quarantine_after <= 0) p->o.quarantine_after = 3;
  if (p->o.plugin_dirs && !(p->dirs = strdup(p->o.plugin_dirs))) goto oom;
  if (MI_HAS_FIELD(&p->o, mi_worker_options_t, fallback) && p->o.fallback &&
      !(p->fallback = strdup(p->o.fallback)))
    goto oom;
  while (p->o.env && p->o.env[n]) n++;
  if (!(p->env = calloc((size_t)n + 1, sizeof *p->env))) goto oom;
  for (int32_t i = 0; i < n; i++)
    if (!(p->env[i] = strdup(p->o.env[i]))) goto oom;
  if ((rc = mi__worker_find(p->o.worker_path, &p->path, err)) != MI_OK) {
    mi_worker_pool_destroy(p);
    return rc;
  }
  p->o.plugin_dirs = NULL;
  p->o.fallback = NULL;
  p->o.env = NULL;
  p->o.worker_path = NULL;
  *out = p;
  return MI_OK;
oom:
  mi_worker_pool_destroy(p);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker pool: out of memory");
}

static void stop(slot_t *s, int kill_it) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  if (s->pid > 0) {
    if (kill_it) kill(s->pid, SIGKILL);
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  s->pid = -1;
}

MI_API void mi_worker_pool_set_deadline(mi_worker_pool_t *p, double deadline_s) {
  if (p) p->deadline = deadline_s > 0 ? deadline_s : 0;
}

MI_API int mi_worker_pool_out_of_time(const mi_worker_pool_t *p) {
  return p && p->deadline > 0 && mi__now_s() >= p->deadline;
}

MI_API void mi_worker_pool_destroy(mi_worker_pool_t *p) {
  if (!p) return;
  for (int32_t i = 0; i < p->count; i++) stop(&p->slots[i], 0); /* EOF ends an idle worker */
  for (int32_t i = 0; p->env && p->env[i]; i++) free(p->env[i]);
  free(p->env);
  free(p->dirs);
  free(p->fallback);
  free(p->path);
  free(p);
}

static slot_t *find(const mi_worker_pool_t *p, const char *spec) {
  for (int32_t i = 0; i < p->count; i++)
    if (strcmp(p->slots[i].spec, spec) == 0) return (slot_t *)&p->slots[i];
  return NULL;
}

MI_API int mi_worker_quarantined(const mi_worker_pool_t *p, const char *spec) {
  const slot_t *s = p && spec ? find(p, spec) : NULL;
  return s ? s->quarantined : 0;
}

MI_API void mi_worker_retire(mi_worker_pool_t *p, const char *spec) {
  slot_t *s = p && spec ? find(p, spec) : NULL;
  if (s) stop(s, 0);
}

/* The worker's environment: the host's, with the pool's entries replacing or adding keys. */
static char **worker_env(char *const *extra) {
  size_t n = 0, m = 0, k = 0;
  char **e;
  while (environ && environ[n]) n++;
  while (extra[m]) m++;
  if (!(e = calloc(n + m + 1, sizeof *e))) return NULL;
  for (size_t i = 0; i < n; i++) {
    size_t key = strcspn(environ[i], "=");
    int replaced = 0;
    for (size_t j = 0; j < m && !replaced; j++)
      replaced = strncmp(extra[j], environ[i], key) == 0 && extra[j][key] == '=';
    if (!replaced) e[k++] = environ[i];
  }
  for (size_t j = 0; j < m; j++) e[k++] = extra[j];
  return e;
}

/* Starts the device's worker as a new program (posix_spawn: fork + exec). A bare fork would
 * copy a host that may run threads (tuning threads, a heartbeat, driver threads) into a child
 * that then runs malloc and driver code with whatever locks those threads held: undefined, and
 * seen to hang under ASan. The exec'd worker starts clean and loads the plugins itself. */
static int32_t spawn(mi_worker_pool_t *p, slot_t *s, mi_error_t *err) {
  int sv[2], rc;
  pid_t pid;
  char fd_s[16], parent_s[32], wire_s[32];
  char *argv[15];
  int a = 0;
  char **envp;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, all;
  /* CLOEXEC on both ends: a worker that another thread starts at the same time must not
   * inherit this one's end, or this worker's death would never read as end-of-file. */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return mi_errorf(err, MI_ERR_IO, "worker %s: socketpair: %s", s->spec, strerror(errno));
  if (sv[1] == MI__WORKER_FD) { /* dup2 onto itself would keep CLOEXEC */
    int d = fcntl(sv[1], F_DUPFD_CLOEXEC, MI__WORKER_FD + 1);
    close(sv[1]);
    if ((sv[1] = d) < 0) {
      close(sv[0]);
      return mi_errorf(err, MI_ERR_IO, "worker %s: dup: %s", s->spec, strerror(errno));
    }
  }
  if (!(envp = worker_env(p->env))) {
    close(sv[0]);
    close(sv[1]);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker %s: out of memory", s->spec);
  }
  snprintf(fd_s, sizeof fd_s, "%d", MI__WORKER_FD);
  snprintf(parent_s, sizeof parent_s, "%ld", (long)getpid());
  snprintf(wire_s, sizeof wire_s, "%016llx", (unsigned long long)mi__wire_tag());
  argv[a++] = p->path;
  argv[a++] = "--fd";
  argv[a++] = fd_s;
  argv[a++] = "--device";
  argv[a++] = s->spec;
  argv[a++] = "--parent";
  argv[a++] = parent_s;
  argv[a++] = "--wire";
  argv[a++] = wire_s;
  if (p->dirs) {
    argv[a++] = "--plugins";
    argv[a++] = p->dirs;
  }
  if (p->fallback) {
    argv[a++] = "--fallback";
    argv[a++] = p->fallback;
  }
  argv[a] = NULL;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], MI__WORKER_FD);
  /* The host's stdout is its output (a table, --json): whatever a plugin prints in the worker
   * goes to the host's stderr, its log, instead. */
  posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  /* Nothing else of the host's: its database, its other workers, its drivers' descriptors. */
  posix_spawn_file_actions_addclosefrom_np(&fa, MI__WORKER_FD + 1);
  posix_spawnattr_init(&at);
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&at, &none);   /* the spawning thread's mask is not the worker's */
  posix_spawnattr_setsigdefault(&at, &all); /* nor are signals the host ignores */
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  /* No fflush(NULL) first: exec discards the copied stdio buffers, so nothing is written
   * twice, and flushing would take the lock of every stream, which another thread of the host
   * may hold. */
  rc = posix_spawn(&pid, p->path, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  free(envp);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return mi_errorf(err, MI_ERR_IO, "worker %s: cannot start %s: %s", s->spec, p->path,
                     strerror(rc));
  }
  s->pid = pid;
  s->fd = sv[0];
  return MI_OK;
}

/* Sends a job and waits for its reply frame; *payload is malloc'd. Classifies failures. */
static int32_t exchange(mi_worker_pool_t *p, slot_t *s, uint32_t type, const void *job,
                        size_t njob, mi__frame_t *hdr, void **payload, mi_error_t *err) {
  double deadline;
  int r, by_budget = 0;
  *payload = NULL;
  if (s->pid < 0) {
    int32_t rc = spawn(p, s, err);
    if (rc) return rc;
  }
  deadline = mi__now_s() + p->o.timeout_s;
  if (p->deadline > 0 && p->deadline < deadline) {
    deadline = p->deadline;
    by_budget = 1;
  }
  if (mi__frame_send(s->fd, type, job, njob, NULL, 0) != MI_OK) {
    r = 0; /* the worker is gone: find out how below */
  } else if ((r = mi__read_full(s->fd, hdr, sizeof *hdr, deadline)) == 1) {
    if (hdr->magic != MI__FRAME_MAGIC || hdr->length > (64u << 20)) {
      stop(s, 1);
      return mi_errorf(err, MI_ERR_INTERNAL, "worker %s: malformed reply frame", s->spec);
    }
    *payload = malloc(hdr->length + 1);
    if (!*payload) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    r = mi__read_full(s->fd, *payload, hdr->length, deadline);
    if (r == 1) return MI_OK;
    free(*payload);
    *payload = NULL;
  }
  if (r == -1) {
    stop(s, 1);
    if (by_budget)
      return mi_errorf(err, MI_ERR_TIMEOUT, "stopped at the caller's time budget (worker killed; its timeout is %.1f s)",
                       p->o.timeout_s);
    return mi_errorf(err, MI_ERR_TIMEOUT, "timed out after %.1f s (worker killed)",
                     p->o.timeout_s);
  }
  {
    int st = 0;
    pid_t pid = s->pid;
    close(s->fd);
    s->fd = -1;
    s->pid = -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st))
      return mi_errorf(err, MI_ERR_CRASHED, "crashed: signal %d (%s)", WTERMSIG(st),
                       strsignal(WTERMSIG(st)));
    return mi_errorf(err, MI_ERR_CRASHED, "crashed: worker exited with status %d",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
}

/* Finds or adds the device's slot; refuses quarantined devices. */
static int32_t slot_for(mi_worker_pool_t *p, const char *spec, slot_t **out, mi_error_t *err) {
  slot_t *s = find(p, spec);
  *out = NULL;
  if (!s) {
    if (p->count == MAX_WORKERS || strlen(spec) >= sizeof s->spec)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker pool: cannot add device '%s'", spec);
    s = &p->slots[p->count++];
    memset(s, 0, sizeof *s);
    snprintf(s->spec, sizeof s->spec, "%s", spec);
    s->pid = -1;
    s->fd = -1;
  }
  if (s->quarantined)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "quarantined: %s failed %d times in a row (%s)",
                     spec, (int)s->fails, s->why);
  *out = s;
  return MI_OK;
}

/* A failure of any job counts toward the quarantine; only a measurement that passed clears the
 * count (a check_config answer or a probe between crashing measurements says nothing about
 * whether the device can run). */
static void count(mi_worker_pool_t *p, slot_t *s, int32_t rc, const mi_error_t *err,
                  int measurement) {
  if (rc == MI_OK) {
    if (!measurement) return;
    s->fails = 0;
    s->ever_ok = 1;
    return;
  }
  /* A job the caller's time budget stopped says nothing about the device (under a sanitizer, a
   * 3 s tune's last three jobs were killed at its end and quarantined a working device). */
  if (rc == MI_ERR_TIMEOUT && mi_worker_pool_out_of_time(p)) return;
  /* Wrong results from a device that has computed right before belong to the configuration (a
   * broken kernel variant, an unstable quantization), not to the device: the measurement fails
   * with its reason and the search goes on. A device that never computed right (a zero-filling
   * liar) counts them like any other failure. */
  int config_fault =
      s->ever_ok && err && strncmp(err->message, MI__WRONG_PREFIX, sizeof MI__WRONG_PREFIX - 1) == 0;
  /* A device caught lying about its time is not retried: nothing it reports can be trusted. */
  if (!config_fault && (++s->fails >= p->o.quarantine_after ||
                        (err && strncmp(err->message, MI__LIE_PREFIX, sizeof MI__LIE_PREFIX - 1) == 0))) {
    s->quarantined = 1;
    stop(s, 1);
  }
  if (err) {
    size_t n = strnlen(err->message, sizeof s->why - 1);
    memcpy(s->why, err->message, n);
    s->why[n] = '\0';
  }
}

static int32_t reply_error(const mi__frame_t *h, const void *payload, mi_error_t *err) {
  mi_error_t e;
  if (h->type != MI__REPLY_ERROR || h->length != sizeof e)
    return mi_errorf(err, MI_ERR_INTERNAL, "worker: unexpected reply %u", h->type);
  memcpy(&e, payload, sizeof e);
  e.message[MI_ERROR_MESSAGE_SIZE - 1] = '\0';
  return mi_errorf(err, e.code ? e.code : MI_ERR_INTERNAL, "%s", e.message);
}

MI_API int32_t mi_worker_profile(mi_worker_pool_t *p, const char *spec, const char *model,
                                 const mi_session_options_t *so,
                                 const mi_measure_options_t *mo, int check, mi_profile_t **out,
                                 mi_error_t *err) {
  mi__job_t job;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_profile: out is NULL");
  *out = NULL;
  if (!p || !spec || !model)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_profile: NULL argument");
  memset(&job, 0, sizeof job);
  if (strlen(model) >= sizeof job.model)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "model path too long");
  memcpy(job.model, model, strlen(model) + 1);
  mi_measure_options_default(&job.mo);
  if (mo) memcpy(&job.mo, mo, mo->struct_size < sizeof job.mo ? mo->struct_size : sizeof job.mo);
  job.mo.struct_size = (uint32_t)sizeof job.mo;
  job.check = check;
  job.allow_host_fallback = so && so->allow_host_fallback;
  if (so && (so->choice_count > 0 || so->device_knob_count > 16))
    return mi_errorf(err, MI_ERR_UNSUPPORTED,
                     "worker: per-node choices and more than 16 device knobs are not carried");
  for (int32_t i = 0; so && i < so->device_knob_count; i++) {
    const mi_knob_value_t *k = &so->device_knobs[i];
    if (!k->name || strlen(k->name) >= sizeof job.knob_name[0])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker: bad device knob name");
    memcpy(job.knob_name[i], k->name, strlen(k->name) + 1);
    job.knob_value[i] = k->i;
    job.knob_count++;
  }
  return mi__worker_job(p, spec, MI__JOB_PROFILE, &job, sizeof job, MI__REPLY_PROFILE, 0, NULL,
                        out, err);
}

MI_API int32_t mi_worker_fingerprint(mi_worker_pool_t *p, const char *spec,
                                     mi_device_fingerprint_t *out, mi_error_t *err) {
  mi__frame_t h;
  void *pl = NULL;
  slot_t *s;
  int32_t rc;
  char dummy = 0;
  if (!p || !spec || !out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_fingerprint: NULL argument");
  memset(out, 0, sizeof *out);
  if ((rc = slot_for(p, spec, &s, err))) return rc;
  rc = exchange(p, s, MI__JOB_FINGERPRINT, &dummy, 1, &h, &pl, err);
  if (rc == MI_OK && h.type == MI__REPLY_FINGERPRINT && h.length == sizeof *out)
    memcpy(out, pl, sizeof *out);
  else if (rc == MI_OK)
    rc = reply_error(&h, pl, err);
  free(pl);
  count(p, s, rc, err, 0);
  return rc;
}

int32_t mi__worker_exchange(mi_worker_pool_t *p, const char *spec, uint32_t type,
                            const void *job, size_t njob, uint32_t reply_type, void *out,
                            size_t nout, mi_error_t *err) {
  mi__frame_t h;
  void *pl = NULL;
  slot_t *s;
  int32_t rc;
  if ((rc = slot_for(p, spec, &s, err))) return rc;
  rc = exchange(p, s, type, job, njob, &h, &pl, err);
  if (rc == MI_OK && h.type == reply_type && h.length == nout)
    memcpy(out, pl, nout);
  else if (rc == MI_OK)
    rc = reply_error(&h, pl, err);
  free(pl);
  count(p, s, rc, err, 0);
  return rc;
}

/* A job whose reply is `prefix` bytes (copied to prefix_out when not NULL), a profile, then its
 * layers: the configuration jobs of worker_config.c. Same classification and quarantine. */
int32_t mi__worker_job(mi_worker_pool_t *p, const char *spec, uint32_t type, const void *job,
                       size_t njob, uint32_t reply_type, size_t prefix, void *prefix_out,
                       mi_profile_t **out, mi_error_t *err) {
  mi__frame_t h;
  void *pl = NULL;
  slot_t *s;
  mi_profile_t *r = NULL;
  int32_t rc;
  *out = NULL;
  if ((rc = slot_for(p, spec, &s, err))) return rc;
  rc = exchange(p, s, type, job, njob, &h, &pl, err);
  if (rc == MI_OK && h.type == reply_type && h.length >= prefix + sizeof *r) {
    const char *at = (const char *)pl + prefix;
    if (prefix_out) memcpy(prefix_out, pl, prefix);
    if (!(r = malloc(sizeof *r))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
    memcpy(r, at, sizeof *r);
    r->layers = NULL;
    r->nest = NULL;
    if (r->layer_count < 0 || r->nest_count < 0 ||
        h.length != prefix + sizeof *r + (size_t)r->layer_count * sizeof(mi_layer_profile_t) +
                        (size_t)r->nest_count * sizeof(mi_nest_row_t)) {
      r->layer_count = r->nest_count = 0;
      rc = mi_errorf(err, MI_ERR_INTERNAL, "worker %s: profile reply of the wrong size", spec);
      goto done;
    }
    if (!(r->layers = calloc((size_t)r->layer_count + 1, sizeof *r->layers))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
    memcpy(r->layers, at + sizeof *r, (size_t)r->layer_count * sizeof *r->layers);
    if (!(r->nest = calloc((size_t)r->nest_count + 1, sizeof *r->nest))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
    memcpy(r->nest, at + sizeof *r + (size_t)r->layer_count * sizeof *r->layers,
           (size_t)r->nest_count * sizeof *r->nest);
    if (r->checked && !r->check_ok)
      rc = mi_errorf(err, MI_ERR_CONSTRAINT,
                     MI__WRONG_PREFIX ": relative L2 error %.3g against the reference",
                     r->check_error);
  } else if (rc == MI_OK) {
    rc = reply_error(&h, pl, err);
  }
done:
  free(pl);
  count(p, s, rc, err, 1);
  if (rc) {
    mi_profile_destroy(r);
    r = NULL;
  }
  *out = r;
  return rc;
}
