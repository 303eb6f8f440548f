/* mi_farm.h - the shared history on PostgreSQL and its device farm: a queue of measurement
 * jobs that agents on device hosts claim, run in their crash-isolated workers and answer
 * (docs/scale-out.md). Built without libpq, every call answers MI_ERR_UNSUPPORTED. */
#ifndef METAINFER_MI_FARM_H
#define METAINFER_MI_FARM_H

#include "metainfer/mi_core.h"
#include "metainfer/mi_measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when `where` names a PostgreSQL database (postgresql:// or postgres:// URL). */
MI_API int mi_history_is_url(const char *where);
/** The PostgreSQL store (same tables and migrations as SQLite); NULL without libpq. */
MI_API const mi_store_ops_t *mi_store_pg(void);
/** `url` with its password replaced by "***", for messages and logs. */
MI_API void mi_url_redact(const char *url, char *out, size_t cap);

typedef struct mi_farm mi_farm_t;

/** Connects to the farm at `url`. With `setup` (an owner of the database), creates the history
 * and farm tables when missing and the NOLOGIN role mi_agent with the grants of an agent. */
MI_API int32_t mi_farm_open(const char *url, int setup, mi_farm_t **out, mi_error_t *err);
/** NULL is a no-op. */
MI_API void mi_farm_close(mi_farm_t *f);
/** 1 when the connection is encrypted (TLS). */
MI_API int mi_farm_tls(const mi_farm_t *f);

/** Stores the file at `path` as a content-addressed blob (the server checks the hash too);
 * writes its SHA-256 in hex to sha[65]. */
MI_API int32_t mi_farm_put_blob(mi_farm_t *f, const char *path, char sha[65], mi_error_t *err);
/** Writes blob `sha` to `path` after checking the bytes against the hash. */
MI_API int32_t mi_farm_get_blob(mi_farm_t *f, const char *sha, const char *path, mi_error_t *err);

/** One measurement job. Strings of a claimed job are owned by it (mi_farm_job_free). */
typedef struct mi_farm_job {
  int64_t id;
  char uuid[33]; /* also the uuid of the measurement it produces */
  char spec[96]; /* submit: the device asked for; claim: the agent's device */
  char device_hash[17];
  char model_sha256[65];
  char *inputs; /* "NAME:1x3x32x32;..." or NULL */
  char *hw;     /* mi_config_canonical text */
  char *xf;     /* mi_xf_config_canonical text, NULL: the model as is */
  int64_t run_id, task_id, config_id;
  uint64_t seed;
  int32_t samples, accuracy, warmup, repeats;
  int32_t attempts; /* claims so far, this one included */
} mi_farm_job_t;

MI_API void mi_farm_job_free(mi_farm_job_t *j);

/** Where a job stands and, once answered, what its measurement gave. */
typedef struct mi_farm_result {
  int32_t state; /* 0 queued, 1 running, 2 done, 3 failed (abandoned) */
  int32_t ok;
  char failure[256];
  double latency_ms, memory_mb, energy_mj, rel_l2; /* NAN when not reported */
  int32_t energy_modeled;
  int64_t agent_id; /* who answered */
} mi_farm_result_t;

/** Queues a job: `base` gives the task (model, device, shapes) and the configuration texts
 * (config_canonical, model_config_canonical); the model file travels as a blob. */
MI_API int32_t mi_farm_submit(mi_farm_t *f, const mi_record_t *base, const char *model_path,
                              const mi_farm_job_t *job, int64_t *id, mi_error_t *err);
/** Waits up to timeout_s for job `id` to be answered (woken by NOTIFY); MI_ERR_TIMEOUT when it
 * was not. Expired leases are reclaimed while waiting. */
MI_API int32_t mi_farm_result(mi_farm_t *f, int64_t id, double timeout_s, mi_farm_result_t *out,
                              mi_error_t *err);

/** Registers an agent (a host) and returns its id. */
MI_API int32_t mi_farm_agent(mi_farm_t *f, const char *name, int64_t *id, mi_error_t *err);
/** Registers one device of agent `agent` with its fingerprint (JSON, may be NULL). */
MI_API int32_t mi_farm_agent_device(mi_farm_t *f, int64_t agent, const char *spec,
                                    const char *device_hash, const char *name,
                                    const char *fingerprint_json, mi_error_t *err);
/** Renews the leases of the agent's running jobs for lease_s seconds. */
MI_API int32_t mi_farm_heartbeat(mi_farm_t *f, int64_t agent, double lease_s, mi_error_t *err);
/** Puts running jobs whose lease expired back in the queue (abandoned after 3 claims). */
MI_API int32_t mi_farm_reclaim(mi_farm_t *f, int32_t *count, mi_error_t *err);
/** Claims the oldest queued job for one of the agent's devices (FOR UPDATE SKIP LOCKED);
 * *out is NULL when there is none. */
MI_API int32_t mi_farm_claim(mi_farm_t *f, int64_t agent, double lease_s, mi_farm_job_t **out,
                             mi_error_t *err);
/** Answers a claimed job: the measurement `r` (its task fields are taken from the job) and the
 * job's result, in one transaction. *kept = 0 when the agent had lost the job (lease expired
 * and reclaimed): nothing is written then. */
MI_API int32_t mi_farm_finish(mi_farm_t *f, int64_t agent, const mi_farm_job_t *job,
                              const mi_record_t *r, const mi_farm_result_t *res, int *kept,
                              mi_error_t *err);
/** Sleeps until a job is queued (LISTEN/NOTIFY) or timeout_s passes. */
MI_API int32_t mi_farm_wait(mi_farm_t *f, double timeout_s, mi_error_t *err);

#ifdef __cplusplus
}
#endif

#endif
