/* pg_farm.c - the device farm on PostgreSQL: its tables and the agent role, content-addressed
 * model blobs, agent registration, leases and LISTEN/NOTIFY sleeps. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "history/pg_farm_internal.h"

MI_API void mi_url_redact(const char *url, char *out, size_t cap) { mi__pg_redact(url, out, cap); }

#ifdef MI_HAVE_LIBPQ
#include <openssl/evp.h>

/* The farm's tables; created once under an advisory lock, then only appended to. The server
 * checks every blob against its name. */
static const char k_farm_sql[] =
    "CREATE TABLE IF NOT EXISTS farm_blobs(sha256 TEXT PRIMARY KEY, size BIGINT NOT NULL,"
    " data BYTEA NOT NULL, CHECK (sha256 = encode(sha256(data), 'hex')));"
    "CREATE TABLE IF NOT EXISTS farm_agents(id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL,"
    " role TEXT NOT NULL DEFAULT current_user, started_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
    " seen_at TIMESTAMPTZ NOT NULL DEFAULT now());"
    "CREATE TABLE IF NOT EXISTS farm_agent_devices(agent_id BIGINT NOT NULL REFERENCES"
    " farm_agents(id), spec TEXT NOT NULL, device_hash TEXT NOT NULL, name TEXT,"
    " fingerprint TEXT, PRIMARY KEY(agent_id, spec));"
    "CREATE TABLE IF NOT EXISTS farm_jobs(id BIGSERIAL PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
    " created_at TIMESTAMPTZ NOT NULL DEFAULT now(), state TEXT NOT NULL DEFAULT 'queued'"
    " CHECK (state IN ('queued','running','done','failed')), spec TEXT, device_hash TEXT NOT NULL,"
    " model_sha256 TEXT NOT NULL REFERENCES farm_blobs(sha256), inputs TEXT, hw TEXT NOT NULL,"
    " xf TEXT, run_id BIGINT REFERENCES runs(id), task_id BIGINT NOT NULL REFERENCES tasks(id),"
    " config_id BIGINT NOT NULL REFERENCES configs(id), seed BIGINT NOT NULL DEFAULT 0,"
    " samples INTEGER NOT NULL DEFAULT 2, accuracy INTEGER NOT NULL DEFAULT 0,"
    " warmup INTEGER NOT NULL DEFAULT 2, repeats INTEGER NOT NULL DEFAULT 5,"
    " agent_id BIGINT REFERENCES farm_agents(id), lease_until TIMESTAMPTZ,"
    " attempts INTEGER NOT NULL DEFAULT 0, ok INTEGER, failure TEXT, latency_ms DOUBLE PRECISION,"
    " memory_mb DOUBLE PRECISION, energy_mj DOUBLE PRECISION, energy_modeled INTEGER,"
    " rel_l2 DOUBLE PRECISION, measurement_id BIGINT REFERENCES measurements(id),"
    " finished_at TIMESTAMPTZ);"
    "CREATE INDEX IF NOT EXISTS farm_jobs_queued ON farm_jobs(device_hash, id) WHERE state = 'queued';"
    /* The agent role: read everything, add measurements and its own rows, move jobs; it owns
     * nothing, so it cannot drop or alter a table, and it has no UPDATE/DELETE on the history. */
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mi_agent') THEN"
    " CREATE ROLE mi_agent NOLOGIN; END IF; END $$;"
    "GRANT SELECT ON stacks, devices, tasks, configs, runs, measurements, schema_version,"
    " farm_blobs, farm_agents, farm_agent_devices, farm_jobs TO mi_agent;"
    "GRANT INSERT ON stacks, devices, measurements, farm_agents, farm_agent_devices TO mi_agent;"
    "GRANT DELETE ON farm_agent_devices TO mi_agent;"
    "GRANT UPDATE (seen_at) ON farm_agents TO mi_agent;"
    "GRANT UPDATE (fingerprint) ON devices TO mi_agent;"
    "GRANT UPDATE (state, agent_id, lease_until, attempts, ok, failure, latency_ms, memory_mb,"
    " energy_mj, energy_modeled, rel_l2, measurement_id, finished_at) ON farm_jobs TO mi_agent;"
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO mi_agent;";

MI_API int32_t mi_farm_open(const char *url, int setup, mi_farm_t **out, mi_error_t *err) {
  mi_farm_t *f;
  int32_t rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: out is NULL");
  *out = NULL;
  if (!(f = calloc(1, sizeof *f))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "farm: out of memory");
  if ((rc = mi__pg_connect(url, &f->c, err)) || (rc = mi__pg_migrate(f->c, err))) goto fail;
  if (setup) {
    int64_t have = 0;
    int found;
    /* Made once; later opens (every evaluation of a tune) only look. */
    if ((rc = mi__pg_int(f->c, "SELECT CASE WHEN to_regclass('farm_jobs') IS NULL THEN 0 ELSE 1 END",
                         0, NULL, &have, &found, err)))
      goto fail;
    if (have) setup = 0;
  }
  if (setup) {
    if ((rc = mi__pg_exec(f->c, "BEGIN; SELECT pg_advisory_xact_lock(7170602)", "farm setup", err)))
      goto fail;
    if ((rc = mi__pg_exec(f->c, k_farm_sql, "farm setup", err)) ||
        (rc = mi__pg_exec(f->c, "COMMIT", "farm setup", err))) {
      PQclear(PQexec(f->c, "ROLLBACK"));
      goto fail;
    }
  }
  *out = f;
  return MI_OK;
fail:
  mi_farm_close(f);
  return rc;
}

MI_API void mi_farm_close(mi_farm_t *f) {
  if (!f) return;
  PQfinish(f->c);
  free(f);
}

MI_API int mi_farm_tls(const mi_farm_t *f) { return f && PQsslInUse(f->c); }

static int32_t sha256_hex(const unsigned char *p, size_t n, char out[65], mi_error_t *err) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32)
    return mi_errorf(err, MI_ERR_INTERNAL, "farm: SHA-256 failed");
  for (unsigned i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
  return MI_OK;
}

MI_API int32_t mi_farm_put_blob(mi_farm_t *f, const char *path, char sha[65], mi_error_t *err) {
  char *buf = NULL;
  size_t n = 0;
  char size[24];
  int32_t rc;
  if (!f || !path || !sha) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: put_blob: NULL");
  if ((rc = mi__read_file(path, SIZE_MAX / 2, &buf, &n, err)) ||
      (rc = sha256_hex((const unsigned char *)buf, n, sha, err)))
    goto done;
  snprintf(size, sizeof size, "%zu", n);
  {
    const char *v[3] = {sha, size, buf};
    int len[3] = {0, 0, (int)n}, fmt[3] = {0, 0, 1};
    PGresult *r = PQexecParams(f->c,
                               "INSERT INTO farm_blobs(sha256, size, data) VALUES($1,$2,$3)"
                               " ON CONFLICT DO NOTHING",
                               3, NULL, v, len, fmt, 0);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
      rc = mi_errorf(err, MI_ERR_IO, "farm: storing %s: %s", path, PQerrorMessage(f->c));
    PQclear(r);
  }
done:
  free(buf);
  return rc;
}

MI_API int32_t mi_farm_get_blob(mi_farm_t *f, const char *sha, const char *path, mi_error_t *err) {
  const char *v[1] = {sha};
  char got[65], tmp[4096];
  PGresult *r;
  FILE *fp;
  int32_t rc = MI_OK;
  if (!f || !sha || !path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: get_blob: NULL");
  r = PQexecParams(f->c, "SELECT data FROM farm_blobs WHERE sha256 = $1", 1, NULL, v, NULL, NULL, 1);
  if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
    rc = mi_errorf(err, MI_ERR_NOT_FOUND, "farm: blob %.12s not found", sha);
    goto done;
  }
  /* The bytes are checked here too: what arrived must be what was named. */
  if ((rc = sha256_hex((const unsigned char *)PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0),
                       got, err)))
    goto done;
  if (strcmp(got, sha) != 0) {
    rc = mi_errorf(err, MI_ERR_IO, "farm: blob %.12s arrived with hash %.12s", sha, got);
    goto done;
  }
  snprintf(tmp, sizeof tmp, "%s.part", path);
  if (!(fp = fopen(tmp, "wb"))) {
    rc = mi_errorf(err, MI_ERR_IO, "farm: cannot write %s: %s", tmp, strerror(errno));
    goto done;
  }
  if (fwrite(PQgetvalue(r, 0, 0), 1, (size_t)PQgetlength(r, 0, 0), fp) != (size_t)PQgetlength(r, 0, 0))
    rc = mi_errorf(err, MI_ERR_IO, "farm: cannot write %s", tmp);
  if (fclose(fp) != 0 && rc == MI_OK) rc = mi_errorf(err, MI_ERR_IO, "farm: cannot write %s", tmp);
  if (rc == MI_OK && rename(tmp, path) != 0)
    rc = mi_errorf(err, MI_ERR_IO, "farm: cannot rename %s: %s", tmp, strerror(errno));
done:
  PQclear(r);
  return rc;
}

MI_API int32_t mi_farm_agent(mi_farm_t *f, const char *name, int64_t *id, mi_error_t *err) {
  const char *v[1] = {name};
  int found;
  if (!f || !name || !id) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: agent: NULL");
  return mi__pg_int(f->c, "INSERT INTO farm_agents(name) VALUES($1) RETURNING id", 1, v, id, &found, err);
}

MI_API int32_t mi_farm_agent_device(mi_farm_t *f, int64_t agent, const char *spec,
                                    const char *device_hash, const char *name,
                                    const char *fingerprint_json, mi_error_t *err) {
  char a[24];
  const char *v[5] = {a, spec, device_hash, name, fingerprint_json};
  int32_t rc;
  if (!f || !spec || !device_hash) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: device: NULL");
  snprintf(a, sizeof a, "%lld", (long long)agent);
  /* The device joins the shared history too, so its fingerprint is there for similarity. */
  {
    const char *d[3] = {device_hash, name, fingerprint_json};
    if ((rc = mi__pg_run(f->c,
                         "INSERT INTO devices(hash, name, fingerprint) VALUES($1,$2,$3)"
                         " ON CONFLICT(hash) DO UPDATE SET fingerprint ="
                         " coalesce(devices.fingerprint, EXCLUDED.fingerprint)",
                         3, d, NULL, err)))
      return rc;
  }
  return mi__pg_run(f->c,
                    "INSERT INTO farm_agent_devices(agent_id, spec, device_hash, name,"
                    " fingerprint) VALUES($1,$2,$3,$4,$5)",
                    5, v, NULL, err);
}

MI_API int32_t mi_farm_heartbeat(mi_farm_t *f, int64_t agent, double lease_s, mi_error_t *err) {
  char a[24], l[32];
  const char *v[2] = {a, l};
  int32_t rc;
  if (!f) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: heartbeat: NULL");
  snprintf(a, sizeof a, "%lld", (long long)agent);
  snprintf(l, sizeof l, "%.3f", lease_s);
  if ((rc = mi__pg_run(f->c, "UPDATE farm_agents SET seen_at = now() WHERE id = $1", 1, v, NULL, err)))
    return rc;
  return mi__pg_run(f->c,
                    "UPDATE farm_jobs SET lease_until = now() + make_interval(secs => $2::float8)"
                    " WHERE agent_id = $1 AND state = 'running'",
                    2, v, NULL, err);
}

MI_API int32_t mi_farm_reclaim(mi_farm_t *f, int32_t *count, mi_error_t *err) {
  PGresult *r;
  int32_t rc;
  if (count) *count = 0;
  if (!f) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: reclaim: NULL");
  /* A job whose agent stopped renewing goes back to the queue; one that lost three agents is
   * abandoned rather than killing every host it reaches. */
  if ((rc = mi__pg_run(f->c,
                       "WITH x AS (UPDATE farm_jobs SET state = CASE WHEN attempts >= 3 THEN"
                       " 'failed' ELSE 'queued' END, failure = CASE WHEN attempts >= 3 THEN"
                       " 'abandoned: lost its agent 3 times' END, agent_id = NULL, lease_until = NULL"
                       " WHERE state = 'running' AND lease_until < now() RETURNING id, state)"
                       " SELECT count(*), pg_notify('mi_farm_jobs', ''),"
                       " (SELECT count(*) FROM x WHERE state = 'failed') FROM x",
                       0, NULL, &r, err)))
    return rc;
  if (count) *count = (int32_t)strtol(PQgetvalue(r, 0, 0), NULL, 10);
  if (strtol(PQgetvalue(r, 0, 2), NULL, 10) > 0)
    PQclear(PQexec(f->c, "SELECT pg_notify('mi_farm_done', '')"));
  PQclear(r);
  return MI_OK;
}

int32_t mi__farm_sleep(mi_farm_t *f, double timeout_s, mi_error_t *err) {
  struct pollfd p;
  PGnotify *n;
  p.fd = PQsocket(f->c);
  p.events = POLLIN;
  p.revents = 0;
  if (p.fd < 0) return mi_errorf(err, MI_ERR_IO, "farm: connection lost");
  if ((n = PQnotifies(f->c)) != NULL) { /* one arrived with an earlier result */
    PQfreemem(n);
    while ((n = PQnotifies(f->c)) != NULL) PQfreemem(n);
    return MI_OK;
  }
  if (poll(&p, 1, (int)(timeout_s * 1000)) < 0 && errno != EINTR)
    return mi_errorf(err, MI_ERR_IO, "farm: poll: %s", strerror(errno));
  if (!PQconsumeInput(f->c)) return mi_errorf(err, MI_ERR_IO, "farm: %s", PQerrorMessage(f->c));
  while ((n = PQnotifies(f->c)) != NULL) PQfreemem(n);
  return MI_OK;
}

MI_API int32_t mi_farm_wait(mi_farm_t *f, double timeout_s, mi_error_t *err) {
  int32_t rc;
  if (!f) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "farm: wait: NULL");
  if (!f->listening_jobs) {
    if ((rc = mi__pg_exec(f->c, "LISTEN mi_farm_jobs", "listen", err))) return rc;
    f->listening_jobs = 1;
  }
  return mi__farm_sleep(f, timeout_s, err);
}

#else

MI_API int32_t mi_farm_open(const char *url, int setup, mi_farm_t **out, mi_error_t *err) {
  (void)url;
  (void)setup;
  if (out) *out = NULL;
  return mi_errorf(err, MI_ERR_UNSUPPORTED, "farm: this build has no PostgreSQL client (libpq)");
}
MI_API void mi_farm_close(mi_farm_t *f) { (void)f; }
MI_API int mi_farm_tls(const mi_farm_t *f) {
  (void)f;
  return 0;
}

#endif
