/* pg_jobs.c - the farm's job queue: a tune submits jobs and waits for their answers, agents
 * claim them with FOR UPDATE SKIP LOCKED under a lease and answer them with the measurement in
 * one transaction, so a job is answered once or not at all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "history/history_internal.h"
#include "history/pg_farm_internal.h"

MI_API void mi_farm_job_free(mi_farm_job_t *j) {
  if (!j) return;
  free(j->inputs);
  free(j->hw);
  free(j->xf);
  free(j);
}

#ifdef MI_HAVE_LIBPQ

static const char *i64(char *b, long long x) {
  snprintf(b, 32, "%lld", x);
  return b;
}

MI_API int32_t mi_farm_submit(mi_farm_t *f, const mi_record_t *base, const char *model_path,
                              const mi_farm_job_t *job, int64_t *id, mi_error_t *err) {
  char sha[65], uuid[33], b[10][32];
  int64_t task_id, cfg_id;
  int found;
  int32_t rc;
  if (!f || !base || !model_path || !job || !id)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: submit: NULL");
  if ((rc = mi_farm_put_blob(f, model_path, sha, err))) return rc;
  mi__uuid(uuid);
  if ((rc = mi__pg_exec(f->c, "BEGIN", "submit", err))) return rc;
  if ((rc = mi__pg_task_config(f->c, base, &task_id, &cfg_id, err))) goto fail;
  {
    const char *v[14] = {uuid, job->spec, base->device_hash, sha, job->inputs,
                         base->config_canonical ? base->config_canonical : "default",
                         base->model_config_canonical,
                         base->run_id > 0 ? i64(b[0], base->run_id) : NULL, i64(b[1], task_id),
                         i64(b[2], cfg_id), i64(b[3], (long long)(job->seed & INT64_MAX)),
                         i64(b[4], job->samples), i64(b[5], job->accuracy), i64(b[6], job->warmup)};
    const char *w[15];
    memcpy(w, v, sizeof v);
    w[14] = i64(b[7], job->repeats);
    if ((rc = mi__pg_int(f->c,
                         "INSERT INTO farm_jobs(uuid, spec, device_hash, model_sha256, inputs, hw, xf,"
                         " run_id, task_id, config_id, seed, samples, accuracy, warmup, repeats)"
                         " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) RETURNING id",
                         15, w, id, &found, err)))
      goto fail;
  }
  /* Delivered at commit: an idle agent wakes only once the job is visible. */
  if ((rc = mi__pg_exec(f->c, "NOTIFY mi_farm_jobs; COMMIT", "submit", err))) goto fail;
  return MI_OK;
fail:
  PQclear(PQexec(f->c, "ROLLBACK"));
  return rc;
}

static double dnum(PGresult *r, int col) {
  return PQgetisnull(r, 0, col) ? NAN : strtod(PQgetvalue(r, 0, col), NULL);
}

MI_API int32_t mi_farm_result(mi_farm_t *f, int64_t id, double timeout_s, mi_farm_result_t *out,
                              mi_error_t *err) {
  char b[32];
  const char *v[1] = {i64(b, id)};
  double until = mi__now_s() + timeout_s;
  int32_t rc;
  if (!f || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: result: NULL");
  if (!f->listening_done) {
    if ((rc = mi__pg_exec(f->c, "LISTEN mi_farm_done", "listen", err))) return rc;
    f->listening_done = 1;
  }
  for (;;) {
    PGresult *r;
    const char *st;
    memset(out, 0, sizeof *out);
    if ((rc = mi__pg_run(f->c,
                         "SELECT state, ok, failure, latency_ms, memory_mb, energy_mj, energy_modeled,"
                         " rel_l2, agent_id FROM farm_jobs WHERE id = $1",
                         1, v, &r, err)))
      return rc;
    if (PQntuples(r) != 1) {
      PQclear(r);
      return mi_errorf(err, MI_ERR_NOT_FOUND, "farm: no job %lld", (long long)id);
    }
    st = PQgetvalue(r, 0, 0);
    out->state = !strcmp(st, "queued") ? 0 : !strcmp(st, "running") ? 1
                                         : !strcmp(st, "done")      ? 2
                                                                    : 3;
    if (out->state >= 2) {
      out->ok = !PQgetisnull(r, 0, 1) && strtol(PQgetvalue(r, 0, 1), NULL, 10) == 1;
      snprintf(out->failure, sizeof out->failure, "%s", PQgetisnull(r, 0, 2) ? "" : PQgetvalue(r, 0, 2));
      out->latency_ms = dnum(r, 3);
      out->memory_mb = dnum(r, 4);
      out->energy_mj = dnum(r, 5);
      out->energy_modeled = !PQgetisnull(r, 0, 6) && strtol(PQgetvalue(r, 0, 6), NULL, 10) == 1;
      out->rel_l2 = dnum(r, 7);
      out->agent_id = PQgetisnull(r, 0, 8) ? 0 : strtoll(PQgetvalue(r, 0, 8), NULL, 10);
      PQclear(r);
      return MI_OK;
    }
    PQclear(r);
    if (mi__now_s() >= until)
      return mi_errorf(err, MI_ERR_TIMEOUT, "farm: job %lld not answered after %.0f s", (long long)id,
                       timeout_s);
    /* The waiting host reclaims too: with every agent busy or dead, nobody else would. */
    if ((rc = mi_farm_reclaim(f, NULL, err)) || (rc = mi__farm_sleep(f, 1.0, err))) return rc;
  }
}

static char *dup_or_null(PGresult *r, int col) {
  return PQgetisnull(r, 0, col) ? NULL : strdup(PQgetvalue(r, 0, col));
}

MI_API int32_t mi_farm_claim(mi_farm_t *f, int64_t agent, double lease_s, mi_farm_job_t **out,
                             mi_error_t *err) {
  char a[32], l[32];
  const char *v[2] = {i64(a, agent), l};
  mi_farm_job_t *j;
  PGresult *r;
  int32_t rc;
  if (!f || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: claim: NULL");
  *out = NULL;
  snprintf(l, sizeof l, "%.3f", lease_s);
  if ((rc = mi__pg_run(f->c,
                       "WITH j AS (SELECT id FROM farm_jobs WHERE state = 'queued' AND device_hash IN"
                       " (SELECT device_hash FROM farm_agent_devices WHERE agent_id = $1::bigint)"
                       " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)"
                       " UPDATE farm_jobs f SET state = 'running', agent_id = $1::bigint,"
                       " lease_until = now() + make_interval(secs => $2::float8),"
                       " attempts = f.attempts + 1 FROM j WHERE f.id = j.id RETURNING f.id, f.uuid,"
                       " (SELECT spec FROM farm_agent_devices d WHERE d.agent_id = $1::bigint AND"
                       " d.device_hash = f.device_hash ORDER BY spec LIMIT 1), f.device_hash,"
                       " f.model_sha256, f.inputs, f.hw, f.xf, f.run_id, f.task_id, f.config_id,"
                       " f.seed, f.samples, f.accuracy, f.warmup, f.repeats, f.attempts",
                       2, v, &r, err)))
    return rc;
  if (PQntuples(r) == 0) {
    PQclear(r);
    return MI_OK;
  }
  if (!(j = calloc(1, sizeof *j))) {
    PQclear(r);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "farm: out of memory");
  }
  j->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
  snprintf(j->uuid, sizeof j->uuid, "%s", PQgetvalue(r, 0, 1));
  snprintf(j->spec, sizeof j->spec, "%s", PQgetvalue(r, 0, 2));
  snprintf(j->device_hash, sizeof j->device_hash, "%s", PQgetvalue(r, 0, 3));
  snprintf(j->model_sha256, sizeof j->model_sha256, "%s", PQgetvalue(r, 0, 4));
  j->inputs = dup_or_null(r, 5);
  j->hw = dup_or_null(r, 6);
  j->xf = dup_or_null(r, 7);
  j->run_id = PQgetisnull(r, 0, 8) ? 0 : strtoll(PQgetvalue(r, 0, 8), NULL, 10);
  j->task_id = strtoll(PQgetvalue(r, 0, 9), NULL, 10);
  j->config_id = strtoll(PQgetvalue(r, 0, 10), NULL, 10);
  j->seed = strtoull(PQgetvalue(r, 0, 11), NULL, 10);
  j->samples = (int32_t)strtol(PQgetvalue(r, 0, 12), NULL, 10);
  j->accuracy = (int32_t)strtol(PQgetvalue(r, 0, 13), NULL, 10);
  j->warmup = (int32_t)strtol(PQgetvalue(r, 0, 14), NULL, 10);
  j->repeats = (int32_t)strtol(PQgetvalue(r, 0, 15), NULL, 10);
  j->attempts = (int32_t)strtol(PQgetvalue(r, 0, 16), NULL, 10);
  PQclear(r);
  if (!j->hw) {
    mi_farm_job_free(j);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "farm: out of memory");
  }
  *out = j;
  return MI_OK;
}

static const char *dtext(char *b, double x) {
  if (!isfinite(x)) return NULL;
  snprintf(b, 32, "%.17g", x);
  return b;
}

MI_API int32_t mi_farm_finish(mi_farm_t *f, int64_t agent, const mi_farm_job_t *job,
                              const mi_record_t *r, const mi_farm_result_t *res, int *kept,
                              mi_error_t *err) {
  char b[10][32];
  mi_record_t rec;
  int64_t mid = 0, n = 0;
  int added = 0, found;
  int32_t rc;
  if (!f || !job || !r || !res || !kept) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: finish: NULL");
  *kept = 0;
  rec = *r;
  rec.run_id = job->run_id;
  if ((rc = mi__pg_exec(f->c, "BEGIN", "finish", err))) return rc;
  /* The gate first: only the agent still holding the job may answer it. */
  {
    const char *v[2] = {i64(b[0], job->id), i64(b[1], agent)};
    if ((rc = mi__pg_int(f->c,
                         "SELECT id FROM farm_jobs WHERE id = $1 AND agent_id = $2 AND"
                         " state = 'running' FOR UPDATE",
                         2, v, &n, &found, err)))
      goto fail;
    if (!found) {
      PQclear(PQexec(f->c, "ROLLBACK"));
      return MI_OK;
    }
  }
  /* The job's uuid names the measurement: an answer can be written once only. */
  if ((rc = mi__pg_put_measurement(f->c, &rec, job->uuid, job->task_id, job->config_id, &mid,
                                   &added, err)))
    goto fail;
  if (!added) {
    rc = mi_errorf(err, MI_ERR_INTERNAL, "farm: job %lld already has its measurement", (long long)job->id);
    goto fail;
  }
  {
    const char *v[9] = {i64(b[0], job->id), res->ok ? "1" : "0", res->ok ? NULL : res->failure,
                        dtext(b[2], res->latency_ms), dtext(b[3], res->memory_mb),
                        dtext(b[4], res->energy_mj), res->energy_modeled ? "1" : "0",
                        dtext(b[5], res->rel_l2), i64(b[6], mid)};
    if ((rc = mi__pg_run(f->c,
                         "UPDATE farm_jobs SET state = 'done', ok = $2, failure = $3, latency_ms = $4,"
                         " memory_mb = $5, energy_mj = $6, energy_modeled = $7, rel_l2 = $8,"
                         " measurement_id = $9, lease_until = NULL, finished_at = now() WHERE id = $1",
                         9, v, NULL, err)) ||
        (rc = mi__pg_run(f->c, "SELECT pg_notify('mi_farm_done', $1)", 1, v, NULL, err)) ||
        (rc = mi__pg_exec(f->c, "COMMIT", "finish", err)))
      goto fail;
  }
  *kept = 1;
  return MI_OK;
fail:
  PQclear(PQexec(f->c, "ROLLBACK"));
  return rc;
}

#else

#define MI__NOPG(err) mi_errorf(err, MI_ERR_UNSUPPORTED, "farm: this build has no PostgreSQL client (libpq)")
MI_API int32_t mi_farm_put_blob(mi_farm_t *f, const char *p, char s[65], mi_error_t *err) {
  (void)f, (void)p, (void)s;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_get_blob(mi_farm_t *f, const char *s, const char *p, mi_error_t *err) {
  (void)f, (void)s, (void)p;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_submit(mi_farm_t *f, const mi_record_t *b, const char *m,
                              const mi_farm_job_t *j, int64_t *id, mi_error_t *err) {
  (void)f, (void)b, (void)m, (void)j, (void)id;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_result(mi_farm_t *f, int64_t id, double t, mi_farm_result_t *o, mi_error_t *err) {
  (void)f, (void)id, (void)t, (void)o;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_agent(mi_farm_t *f, const char *n, int64_t *id, mi_error_t *err) {
  (void)f, (void)n, (void)id;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_agent_device(mi_farm_t *f, int64_t a, const char *s, const char *h,
                                    const char *n, const char *fp, mi_error_t *err) {
  (void)f, (void)a, (void)s, (void)h, (void)n, (void)fp;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_heartbeat(mi_farm_t *f, int64_t a, double l, mi_error_t *err) {
  (void)f, (void)a, (void)l;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_reclaim(mi_farm_t *f, int32_t *c, mi_error_t *err) {
  (void)f, (void)c;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_claim(mi_farm_t *f, int64_t a, double l, mi_farm_job_t **o, mi_error_t *err) {
  (void)f, (void)a, (void)l;
  if (o) *o = NULL;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_finish(mi_farm_t *f, int64_t a, const mi_farm_job_t *j, const mi_record_t *r,
                              const mi_farm_result_t *s, int *k, mi_error_t *err) {
  (void)f, (void)a, (void)j, (void)r, (void)s;
  if (k) *k = 0;
  return MI__NOPG(err);
}
MI_API int32_t mi_farm_wait(mi_farm_t *f, double t, mi_error_t *err) {
  (void)f, (void)t;
  return MI__NOPG(err);
}

#endif
