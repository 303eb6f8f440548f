/* agent_run.c - mi-agent's loop on a device host: register the host's devices with their
 * fingerprints, then claim jobs for them, run each in the crash-isolated worker of its device,
 * answer it with the measurement, and renew the lease from a heartbeat thread meanwhile. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

typedef struct beat {
  const char *db;
  int64_t agent;
  double lease_s;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stop;
} beat_t;

/* Renews the leases every third of a lease on its own connection: a job that takes longer than
 * a lease keeps its agent as long as the agent lives. */
static void *beat_thread(void *arg) {
  beat_t *b = arg;
  mi_farm_t *f = NULL;
  mi_error_t err;
  if (mi_farm_open(b->db, 0, &f, &err) != MI_OK) {
    fprintf(stderr, "mi-agent: heartbeat: %s\n", err.message);
    return NULL;
  }
  pthread_mutex_lock(&b->lock);
  while (!b->stop) {
    struct timespec ts;
    double step = b->lease_s / 3;
    pthread_mutex_unlock(&b->lock);
    if (mi_farm_heartbeat(f, b->agent, b->lease_s, &err) != MI_OK)
      fprintf(stderr, "mi-agent: heartbeat: %s\n", err.message);
    pthread_mutex_lock(&b->lock);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)step;
    ts.tv_nsec += (long)((step - floor(step)) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    if (!b->stop) pthread_cond_timedwait(&b->cond, &b->lock, &ts);
  }
  pthread_mutex_unlock(&b->lock);
  mi_farm_close(f);
  return NULL;
}

typedef struct dev {
  char spec[96], hash[17], stack[512], stack_hash[17], name[128];
  mi_plugin_t *p;
  uint32_t index;
} dev_t_;

/* Runs one claimed job and answers it. */
static void run_job(const mi_agent_args_t *a, mi_farm_t *f, int64_t agent, mi_worker_pool_t *pool,
                    const dev_t_ *devs, int32_t ndev, const mi_farm_job_t *j) {
  const dev_t_ *d = NULL;
  char model[4096];
  struct stat st;
  mi_agent_so_t so;
  mi_xf_config_t *xc = NULL;
  mi_profile_t *prof = NULL;
  mi_worker_config_t wc;
  mi_worker_config_result_t wr;
  mi_measure_options_t mo;
  mi_farm_result_t res;
  mi_record_t r;
  mi_error_t err;
  char acc[128], *layers = NULL, fbstack[768], fbhash[17];
  int32_t rc;
  int kept = 0;
  memset(&so, 0, sizeof so);
  memset(&wr, 0, sizeof wr);
  memset(&res, 0, sizeof res);
  memset(&r, 0, sizeof r);
  mi_error_clear(&err);
  for (int32_t i = 0; i < ndev; i++)
    if (!strcmp(devs[i].spec, j->spec)) d = &devs[i];
  fprintf(stderr, "mi-agent: %s: job %lld on %s (attempt %d)\n", a->name, (long long)j->id, j->spec,
          (int)j->attempts);
  snprintf(model, sizeof model, "%s/%s.onnx", a->cache, j->model_sha256);
  if (!d) rc = mi_errorf(&err, MI_ERR_NOT_FOUND, "agent: no device %s here", j->spec);
  else if (stat(model, &st) != 0 && (rc = mi_farm_get_blob(f, j->model_sha256, model, &err))) {
  } else if ((rc = mi_agent_so_parse(j->hw, d->p, d->index, &so, &err)) == MI_OK &&
             (!j->xf || (rc = mi_agent_xf_parse(j->xf, &xc, &err)) == MI_OK)) {
    mi_measure_options_default(&mo);
    mo.warmup = j->warmup;
    mo.min_repeats = j->repeats;
    mo.max_repeats = j->repeats * 2;
    mo.budget_s = 5;
    memset(&wc, 0, sizeof wc);
    wc.struct_size = sizeof wc;
    wc.model = model;
    wc.inputs = j->inputs && j->inputs[0] ? j->inputs : NULL;
    wc.xf = xc;
    wc.so = &so.so;
    wc.seed = j->seed;
    wc.samples = j->samples > 0 ? j->samples : 2;
    wc.accuracy = j->accuracy;
    rc = mi_worker_profile_config(pool, j->spec, &wc, &mo, 0, &prof, &wr, &err);
  }
  /* The same record mi-host tune writes locally (tune_eval.c), with this host's stack. */
  r.device_spec = j->spec;
  r.device_hash = j->device_hash;
  r.stack = d ? d->stack : "unknown";
  r.stack_hash = d ? d->stack_hash : "0000000000000000";
  r.config_canonical = j->hw;
  r.model_config_canonical = j->xf;
  r.ok = rc == MI_OK;
  r.failure = rc == MI_OK ? NULL : err.message;
  r.clock = "wall";
  res.ok = rc == MI_OK;
  snprintf(res.failure, sizeof res.failure, "%s", rc == MI_OK ? "" : err.message);
  res.latency_ms = res.memory_mb = res.energy_mj = res.rel_l2 = NAN;
  if (prof) {
    layers = mi_record_set_profile(&r, prof);
    mi_record_set_fallback_stack(&r, prof, fbstack, sizeof fbstack, fbhash);
    res.latency_ms = prof->latency.stats.median * 1e3;
    if (prof->peak_memory_source) res.memory_mb = (double)prof->peak_memory_bytes / 1048576.0;
    if (prof->has_energy) res.energy_mj = prof->energy_j * 1e3;
    res.energy_modeled = prof->has_energy && prof->energy_modeled;
  }
  if (rc == MI_OK && wr.has_accuracy) {
    snprintf(acc, sizeof acc, "{\"rel_l2\":%.17g,\"top1\":%.17g}", wr.rel_l2, wr.top1);
    r.accuracy_json = acc;
    res.rel_l2 = wr.rel_l2;
  }
  if (mi_farm_finish(f, agent, j, &r, &res, &kept, &err) != MI_OK)
    fprintf(stderr, "mi-agent: %s: job %lld: %s\n", a->name, (long long)j->id, err.message);
  else
    fprintf(stderr, "mi-agent: %s: job %lld %s%s\n", a->name, (long long)j->id,
            res.ok ? "measured" : "failed: ", kept ? (res.ok ? "" : res.failure) : " (lost its lease: dropped)");
  free(layers);
  mi_profile_destroy(prof);
  mi_xf_config_destroy(xc);
  mi_agent_so_free(&so);
}

int mi_agent_run(const mi_agent_args_t *a) {
  mi_registry_t *reg = mi_registry_create();
  mi_worker_pool_t *pool = NULL;
  mi_worker_options_t wo;
  mi_farm_t *f = NULL;
  dev_t_ *devs = NULL;
  int32_t ndev = 0, done = 0;
  int64_t agent = 0;
  beat_t b;
  pthread_t th;
  int beating = 0, rc = 1;
  mi_error_t err;
  const char *env[9];
  char shown[512];
  double idle_since = mi_now_s();
  memset(&b, 0, sizeof b);
  mi_error_clear(&err);
  mi_url_redact(a->db, shown, sizeof shown);
  for (int32_t i = 0; i < a->env_count; i++) env[i] = a->env[i];
  env[a->env_count] = NULL;
  if (!reg || mi_registry_scan(reg, a->plugins, &err) != MI_OK) goto fail;
  if (a->fallback && strcmp(a->fallback, "ref")) {
    /* A fallback device that is not there fails here, not in every job's worker. */
    mi_plugin_t *fp = NULL;
    uint32_t fd = 0;
    if (mi_registry_device(reg, a->fallback, &fp, &fd, &err) != MI_OK) {
      char why[sizeof err.message];
      snprintf(why, sizeof why, "%s", err.message);
      mi_errorf(&err, MI_ERR_NOT_FOUND, "--fallback '%s': %s", a->fallback, why);
      goto fail;
    }
  }
  mkdir(a->cache, 0755);
  mi_worker_options_default(&wo);
  wo.plugin_dirs = a->plugins;
  wo.fallback = a->fallback; /* the jobs' sessions get it as mi-run's do (mi__config_fallback) */
  wo.timeout_s = a->timeout_s;
  wo.env = env;
  if (mi_worker_pool_create(&wo, &pool, &err) != MI_OK) goto fail;
  if (mi_farm_open(a->db, 0, &f, &err) != MI_OK || mi_farm_agent(f, a->name, &agent, &err) != MI_OK)
    goto fail;
  for (int32_t i = 0; i < mi_registry_plugin_count(reg); i++) {
    mi_plugin_t *p = mi_registry_plugin(reg, i);
    for (uint32_t k = 0; k < p->device_count; k++) {
      mi_device_desc_t desc;
      mi_device_fingerprint_t fp;
      char *fpj = NULL;
      dev_t_ *nd = realloc(devs, ((size_t)ndev + 1) * sizeof *nd), *d;
      if (!nd) goto fail;
      devs = nd;
      d = &devs[ndev];
      memset(d, 0, sizeof *d);
      if (mi_plugin_device_info(p, k, &desc, &err) != MI_OK) goto fail;
      snprintf(d->spec, sizeof d->spec, "%s:%u", p->name, k);
      snprintf(d->name, sizeof d->name, "%s", desc.name);
      d->p = p;
      d->index = k;
      mi_device_hash(&desc, d->hash);
      mi_stack_describe(p->name, p->version, &desc, d->stack, sizeof d->stack, d->stack_hash);
      /* The fingerprint is measured in the worker, like every other run of a plugin. */
      if (a->fingerprint && mi_worker_fingerprint(pool, d->spec, &fp, &err) == MI_OK)
        fpj = mi_device_fingerprint_json(&fp);
      rc = mi_farm_agent_device(f, agent, d->spec, d->hash, d->name, fpj, &err);
      free(fpj);
      if (rc != MI_OK) goto fail;
      rc = 1;
      ndev++;
      fprintf(stderr, "mi-agent: %s: device %s (%s)%s\n", a->name, d->spec, d->hash,
              a->fingerprint ? " fingerprinted" : "");
    }
  }
  fprintf(stderr, "mi-agent: %s: agent %lld ready on %s (%s), %d device(s)\n", a->name,
          (long long)agent, shown, mi_farm_tls(f) ? "TLS" : "no TLS", (int)ndev);
  b.db = a->db;
  b.agent = agent;
  b.lease_s = a->lease_s;
  pthread_mutex_init(&b.lock, NULL);
  pthread_cond_init(&b.cond, NULL);
  beating = pthread_create(&th, NULL, beat_thread, &b) == 0;
  for (;;) {
    mi_farm_job_t *j = NULL;
    if (mi_farm_reclaim(f, NULL, &err) != MI_OK || mi_farm_claim(f, agent, a->lease_s, &j, &err) != MI_OK)
      goto fail;
    if (j) {
      run_job(a, f, agent, pool, devs, ndev, j);
      mi_farm_job_free(j);
      done++;
      idle_since = mi_now_s();
      if (a->count > 0 && done >= a->count) break;
      continue;
    }
    if (a->exit_idle_s > 0 && mi_now_s() - idle_since >= a->exit_idle_s) break;
    /* Woken by NOTIFY when a job is queued; the timeout also catches expired leases. */
    if (mi_farm_wait(f, 1.0, &err) != MI_OK) goto fail;
  }
  rc = 0;
  fprintf(stderr, "mi-agent: %s: %d job(s) done, exiting\n", a->name, (int)done);
fail:
  if (rc) fprintf(stderr, "mi-agent: %s: %s\n", a->name, err.message);
  if (beating) {
    pthread_mutex_lock(&b.lock);
    b.stop = 1;
    pthread_cond_signal(&b.cond);
    pthread_mutex_unlock(&b.lock);
    pthread_join(th, NULL);
  }
  mi_farm_close(f);
  mi_worker_pool_destroy(pool);
  free(devs);
  mi_registry_destroy(reg);
  return rc;
}
