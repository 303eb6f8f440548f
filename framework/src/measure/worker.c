/* worker.c - the parent side of crash isolation: one worker process per device, jobs sent over
 * a socket pair in frames, a deadline per job, failures classified and devices quarantined. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/measure_internal.h"

#define MAX_WORKERS 64

typedef struct slot {
  char spec[128];
  pid_t pid;  /* -1 when not running */
  int fd;
  int32_t fails;
  int32_t quarantined;
} slot_t;

struct mi_worker_pool {
  mi_worker_options_t o;
  char *dirs;
  char **env;
  int32_t count;
  slot_t slots[MAX_WORKERS];
};

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
  int32_t n = 0;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_pool_create: out is NULL");
  *out = NULL;
  p = calloc(1, sizeof *p);
  if (!p) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker pool: out of memory");
  mi_worker_options_default(&p->o);
  if (opts)
    memcpy(&p->o, opts, opts->struct_size < sizeof p->o ? opts->struct_size : sizeof p->o);
  if (p->o.timeout_s <= 0) p->o.timeout_s = 60;
  if (p->o.quarantine_after <= 0) p->o.quarantine_after = 3;
  if (p->o.plugin_dirs && !(p->dirs = strdup(p->o.plugin_dirs))) goto oom;
  while (p->o.env && p->o.env[n]) n++;
  if (!(p->env = calloc((size_t)n + 1, sizeof *p->env))) goto oom;
  for (int32_t i = 0; i < n; i++)
    if (!(p->env[i] = strdup(p->o.env[i]))) goto oom;
  p->o.plugin_dirs = NULL;
  p->o.env = NULL;
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

MI_API void mi_worker_pool_destroy(mi_worker_pool_t *p) {
  if (!p) return;
  for (int32_t i = 0; i < p->count; i++) stop(&p->slots[i], 0); /* EOF ends an idle worker */
  for (int32_t i = 0; p->env && p->env[i]; i++) free(p->env[i]);
  free(p->env);
  free(p->dirs);
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

static int32_t spawn(mi_worker_pool_t *p, slot_t *s, mi_error_t *err) {
  int sv[2];
  pid_t pid;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return mi_errorf(err, MI_ERR_IO, "worker %s: socketpair: %s", s->spec, strerror(errno));
  fflush(NULL); /* buffered output must not be written twice */
  pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return mi_errorf(err, MI_ERR_IO, "worker %s: fork: %s", s->spec, strerror(errno));
  }
  if (pid == 0) {
    close(sv[0]);
    for (int32_t i = 0; i < p->count; i++)
      if (p->slots[i].fd >= 0) close(p->slots[i].fd);
    for (int32_t i = 0; p->env[i]; i++) putenv(p->env[i]);
    mi__worker_main(sv[1], p->dirs, s->spec);
  }
  close(sv[1]);
  s->pid = pid;
  s->fd = sv[0];
  return MI_OK;
}

/* Sends a job and waits for its reply frame; *payload is malloc'd. Classifies failures. */
static int32_t exchange(mi_worker_pool_t *p, slot_t *s, uint32_t type, const void *job,
                        size_t njob, mi__frame_t *hdr, void **payload, mi_error_t *err) {
  double deadline;
  int r;
  *payload = NULL;
  if (s->pid < 0) {
    int32_t rc = spawn(p, s, err);
    if (rc) return rc;
  }
  deadline = mi__now_s() + p->o.timeout_s;
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
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "quarantined: %s failed %d times in a row", spec,
                     (int)s->fails);
  *out = s;
  return MI_OK;
}

static void count(mi_worker_pool_t *p, slot_t *s, int32_t rc) {
  if (rc == MI_OK) {
    s->fails = 0;
    return;
  }
  if (++s->fails >= p->o.quarantine_after) {
    s->quarantined = 1;
    stop(s, 1);
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
  mi__frame_t h;
  void *pl = NULL;
  slot_t *s;
  mi_profile_t *r = NULL;
  int32_t rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_profile: out is NULL");
  *out = NULL;
  if (!p || !spec || !model)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_profile: NULL argument");
  if ((rc = slot_for(p, spec, &s, err))) return rc;
  memset(&job, 0, sizeof job);
  if (strlen(model) >= sizeof job.model)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "model path too long");
  memcpy(job.model, model, strlen(model) + 1);
  mi_measure_options_default(&job.mo);
  if (mo) memcpy(&job.mo, mo, mo->struct_size < sizeof job.mo ? mo->struct_size : sizeof job.mo);
  job.mo.struct_size = (uint32_t)sizeof job.mo;
  job.check = check;
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
  rc = exchange(p, s, MI__JOB_PROFILE, &job, sizeof job, &h, &pl, err);
  if (rc == MI_OK && h.type == MI__REPLY_PROFILE && h.length >= sizeof *r) {
    r = malloc(sizeof *r);
    if (!r) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
    memcpy(r, pl, sizeof *r);
    r->layers = NULL;
    if (r->layer_count < 0 ||
        h.length != sizeof *r + (size_t)r->layer_count * sizeof(mi_layer_profile_t)) {
      r->layer_count = 0;
      rc = mi_errorf(err, MI_ERR_INTERNAL, "worker %s: profile reply of the wrong size", spec);
      goto done;
    }
    r->layers = calloc((size_t)r->layer_count + 1, sizeof *r->layers);
    if (!r->layers) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
    memcpy(r->layers, (char *)pl + sizeof *r, (size_t)r->layer_count * sizeof *r->layers);
    if (r->checked && !r->check_ok)
      rc = mi_errorf(err, MI_ERR_CONSTRAINT,
                     "wrong results: max error %.3g of the output range against the reference",
                     r->check_error);
  } else if (rc == MI_OK) {
    rc = reply_error(&h, pl, err);
  }
done:
  free(pl);
  count(p, s, rc);
  if (rc) {
    mi_profile_destroy(r);
    r = NULL;
  }
  *out = r;
  return rc;
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
  count(p, s, rc);
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
    if (r->layer_count < 0 ||
        h.length != prefix + sizeof *r + (size_t)r->layer_count * sizeof(mi_layer_profile_t)) {
      r->layer_count = 0;
      rc = mi_errorf(err, MI_ERR_INTERNAL, "worker %s: profile reply of the wrong size", spec);
      goto done;
    }
    if (!(r->layers = calloc((size_t)r->layer_count + 1, sizeof *r->layers))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
    memcpy(r->layers, at + sizeof *r, (size_t)r->layer_count * sizeof *r->layers);
    if (r->checked && !r->check_ok)
      rc = mi_errorf(err, MI_ERR_CONSTRAINT,
                     "wrong results: max error %.3g of the output range against the reference",
                     r->check_error);
  } else if (rc == MI_OK) {
    rc = reply_error(&h, pl, err);
  }
done:
  free(pl);
  count(p, s, rc);
  if (rc) {
    mi_profile_destroy(r);
    r = NULL;
  }
  *out = r;
  return rc;
}
