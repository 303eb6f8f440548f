/* sqlite_store.c - the SQLite store: open (WAL, migrations), transactions, runs and records. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "history/history_internal.h"

void mi__uuid(char out[33]) {
  unsigned char b[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, b, sizeof b) : -1;
  if (fd >= 0) close(fd);
  if (n != (ssize_t)sizeof b) {
    uint64_t h = mi_hash64(&n, sizeof n, MI_HASH64_SEED) ^ (uint64_t)time(NULL) ^
                 ((uint64_t)getpid() << 32) ^ (uint64_t)clock();
    memcpy(b, &h, 8);
    h = mi_hash64(&h, sizeof h, h);
    memcpy(b + 8, &h, 8);
  }
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int32_t sq_open(const char *path, void **state, mi_error_t *err) {
  mi__sqlite_t *s;
  int32_t rc;
  *state = NULL;
  s = calloc(1, sizeof *s);
  if (!s) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "history: out of memory");
  if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
      SQLITE_OK) {
    rc = mi_errorf(err, MI_ERR_IO, "history: cannot open '%s': %s", path,
                   s->db ? sqlite3_errmsg(s->db) : "out of memory");
    goto fail;
  }
  sqlite3_busy_timeout(s->db, 5000);
  /* WAL: a killed writer loses at most its open transaction and readers never block it.
   * synchronous=NORMAL is durable against a killed process (not against power loss). */
  if ((rc = mi__sqlite_exec(s->db,
                            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                            "PRAGMA foreign_keys=ON;",
                            path, err)))
    goto fail;
  if ((rc = mi__sqlite_migrate(s->db, MI_HISTORY_SCHEMA_VERSION, err))) goto fail;
  *state = s;
  return MI_OK;
fail:
  sqlite3_close(s->db);
  free(s);
  return rc;
}

static void sq_close(void *state) {
  mi__sqlite_t *s = state;
  if (!s) return;
  sqlite3_close(s->db);
  free(s);
}

static int32_t sq_begin(void *state, mi_error_t *err) {
  return mi__sqlite_exec(((mi__sqlite_t *)state)->db, "BEGIN IMMEDIATE", "begin", err);
}
static int32_t sq_commit(void *state, mi_error_t *err) {
  return mi__sqlite_exec(((mi__sqlite_t *)state)->db, "COMMIT", "commit", err);
}
static void sq_rollback(void *state) {
  sqlite3_exec(((mi__sqlite_t *)state)->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Runs one statement with text/int/double parameters given as a format: t=text, i=int64,
 * d=double, n=null. When `id` is not NULL, the first column of the first row is stored. */
static int32_t run(sqlite3 *db, const char *sql, const char *fmt, const void *const *args,
                   int64_t *id, mi_error_t *err) {
  sqlite3_stmt *st = NULL;
  int r;
  int32_t rc;
  if ((rc = mi__sqlite_prepare(db, sql, &st, sql, err)) != MI_OK) return rc;
  for (int i = 0; fmt[i]; i++) {
    const void *a = args[i];
    if (fmt[i] == 't' && a) sqlite3_bind_text(st, i + 1, a, -1, SQLITE_TRANSIENT);
    else if (fmt[i] == 'i' && a)
      sqlite3_bind_int64(st, i + 1, *(const int64_t *)a);
    else if (fmt[i] == 'd' && a)
      sqlite3_bind_double(st, i + 1, *(const double *)a);
    else
      sqlite3_bind_null(st, i + 1);
  }
  r = sqlite3_step(st);
  if (r == SQLITE_ROW && id) *id = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (r != SQLITE_ROW && r != SQLITE_DONE)
    return mi_errorf(err, MI_ERR_IO, "history: %.60s...: %s", sql, sqlite3_errmsg(db));
  if (id && r != SQLITE_ROW) return mi_errorf(err, MI_ERR_INTERNAL, "history: no row for %.60s", sql);
  return MI_OK;
}

static int32_t sq_put_run(void *state, const char *tool, const char *note, int64_t *id,
                          mi_error_t *err) {
  mi__sqlite_t *s = state;
  char uuid[33], at[32];
  const void *a[4] = {uuid, at, tool, note};
  mi__uuid(uuid);
  mi__now_iso(at);
  return run(s->db, "INSERT INTO runs(uuid, started_at, tool, note) VALUES(?,?,?,?) RETURNING id",
             "tttt", a, id, err);
}

int32_t mi__sqlite_put(mi__sqlite_t *s, const mi_record_t *r, const char *uuid,
                       const char *run_uuid, const char *run_started, const char *run_tool,
                       const char *created_at, int64_t *id, int *added, mi_error_t *err) {
  char u[33], at[32], chash[17], mhash[17] = "";
  int64_t stack_id, dev_id, task_id, cfg_id, run_id = r->run_id, n = r->latency_s.n;
  int64_t repeats = r->repeats, rounds = r->rounds, disc = r->discarded, ok = r->ok ? 1 : 0;
  int64_t loaded = r->loaded ? 1 : 0;
  int64_t mem = (int64_t)r->peak_memory_bytes, exists = 0;
  const char *src = r->energy_source == MI_ENERGY_MEASURED  ? "measured"
                    : r->energy_source == MI_ENERGY_MODELED ? "modeled"
                                                            : NULL;
  const char *canon = r->config_canonical ? r->config_canonical : "default";
  int has_lat = r->ok && n > 0, has_e = r->energy_source != MI_ENERGY_NONE;
  int32_t rc;
  *added = 0;
  if (!r->model_hash || !r->device_hash || !r->stack || !r->stack_hash || !r->input_shapes)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "history: a record needs model_hash, input_shapes, device_hash and stack");
  if (uuid) {
    const void *q[1] = {uuid};
    if ((rc = run(s->db, "SELECT count(*) FROM measurements WHERE uuid = ?", "t", q, &exists,
                  err)))
      return rc;
    if (exists) return MI_OK;
  } else {
    mi__uuid(u);
    uuid = u;
  }
  if (!created_at) {
    mi__now_iso(at);
    created_at = at;
  }
  mi_hash64_hex(mi_hash64(canon, strlen(canon), MI_HASH64_SEED), chash);
  if (r->model_config_canonical)
    mi_hash64_hex(mi_hash64(r->model_config_canonical, strlen(r->model_config_canonical),
                            MI_HASH64_SEED),
                  mhash);
  {
    const void *a[2] = {r->stack_hash, r->stack};
    if ((rc = run(s->db,
                  "INSERT INTO stacks(hash, text) VALUES(?1, ?2) ON CONFLICT(hash) DO UPDATE "
                  "SET hash = hash RETURNING id",
                  "tt", a, &stack_id, err)))
      return rc;
  }
  {
    const void *a[3] = {r->device_hash, r->device_name, r->device_json};
    if ((rc = run(s->db,
                  "INSERT INTO devices(hash, name, fingerprint) VALUES(?1, ?2, ?3) ON "
                  "CONFLICT(hash) DO UPDATE SET fingerprint = coalesce(fingerprint, ?3) "
                  "RETURNING id",
                  "ttt", a, &dev_id, err)))
      return rc;
  }
  {
    const void *a[6] = {r->model_hash, r->model_name, r->model_features_json, &dev_id,
                        &r->batch, r->input_shapes};
    if ((rc = run(s->db,
                  "INSERT INTO tasks(model_hash, model_name, model_features, device_id, batch, "
                  "input_shapes) VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT DO UPDATE SET "
                  "model_features = coalesce(model_features, ?3) RETURNING id",
                  "tttiit", a, &task_id, err)))
      return rc;
  }
  {
    const void *a[4] = {chash, canon, mhash, r->model_config_canonical};
    if ((rc = run(s->db,
                  "INSERT INTO configs(hash, canonical, model_hash, model_canonical) "
                  "VALUES(?1,?2,?3,?4) ON CONFLICT DO UPDATE SET hash = hash RETURNING id",
                  "tttt", a, &cfg_id, err)))
      return rc;
  }
  if (run_uuid) {
    const void *a[3] = {run_uuid, run_started ? run_started : created_at, run_tool};
    if ((rc = run(s->db,
                  "INSERT INTO runs(uuid, started_at, tool) VALUES(?1,?2,?3) ON "
                  "CONFLICT(uuid) DO UPDATE SET uuid = uuid RETURNING id",
                  "ttt", a, &run_id, err)))
      return rc;
  }
  {
    const mi_stats_t *l = &r->latency_s;
    const void *a[25] = {uuid, run_id > 0 ? &run_id : NULL, &task_id, &cfg_id, &stack_id,
                         r->device_spec, created_at, &ok, r->failure, r->clock,
                         has_lat ? &n : NULL, has_lat ? &l->median : NULL,
                         has_lat ? &l->mean : NULL, has_lat ? &l->trimmed_mean : NULL,
                         has_lat ? &l->p10 : NULL, has_lat ? &l->p90 : NULL,
                         has_lat ? &l->cv : NULL, r->samples_json, &repeats, &rounds,
                         r->ok ? &r->prepare_s : NULL, mem > 0 ? &mem : NULL,
                         has_e ? &r->energy_j : NULL, src, r->accuracy_json};
    const void *b[31];
    /* One type letter per parameter: run() reads exactly strlen(fmt) entries of b. */
    static const char fmt[] = "tiiiittittiddddddtiididtttididd";
    _Static_assert(sizeof fmt - 1 == sizeof b / sizeof b[0], "one letter per parameter");
    memcpy(b, a, sizeof a);
    b[25] = r->layers_json;
    b[26] = &disc;
    b[27] = r->has_load ? &r->load1 : NULL;
    b[28] = r->has_load ? &loaded : NULL;
    b[29] = r->has_paired ? &r->paired_ratio : NULL;
    b[30] = r->has_paired ? &r->paired_s : NULL;
    if ((rc = run(s->db,
                  "INSERT INTO measurements(uuid, run_id, task_id, config_id, stack_id, "
                  "device_spec, created_at, ok, failure, clock, n, median_s, mean_s, "
                  "trimmed_mean_s, p10_s, p90_s, cv, samples, repeats, rounds, prepare_s, "
                  "peak_memory_bytes, energy_j, energy_source, accuracy, layers, discarded, "
                  "load1, loaded, paired_ratio, paired_s) "
                  "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                  fmt, b, id, err)))
      return rc;
  }
  *added = 1;
  return MI_OK;
}

static int32_t sq_put_measurement(void *state, const mi_record_t *r, int64_t *id,
                                  mi_error_t *err) {
  int added;
  return mi__sqlite_put(state, r, NULL, NULL, NULL, NULL, NULL, id, &added, err);
}

static const mi_store_ops_t k_sqlite = {
    "sqlite", sq_open, sq_close, sq_begin,
    sq_commit, sq_rollback, sq_put_run, sq_put_measurement,
    mi__sqlite_query, mi__sqlite_stats, mi__sqlite_export, mi__sqlite_import_line,
    mi__sqlite_prune, mi__sqlite_ltask_put, mi__sqlite_ltask_query};

MI_API const mi_store_ops_t *mi_store_sqlite(void) { return &k_sqlite; }
