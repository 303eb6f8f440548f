/* mi_runtime.h - the deployment table, the runtime that runs its chosen configuration, and the
 * drift monitor that falls back along the stored Pareto front or re-adapts (docs/runtime.md). */
#ifndef METAINFER_MI_RUNTIME_H
#define METAINFER_MI_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi_graph.h"
#include "metainfer/mi_plugin.h"
#include "metainfer/mi_tune.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mi_registry;
struct mi_array;

/* ---------------------------------------------------------------- the deployment table */

/** One configuration of a front: the chosen one or a fallback. */
typedef struct mi_deploy_config {
  char id[17];                   /* config_id: the space hash, hex */
  char verified[16];             /* "ok", "VIOLATED" or "" when not verified */
  double measured[MI_OBJ_COUNT]; /* tuned figures (ms, MB, mJ, rel. L2); NaN when absent */
  int32_t energy_modeled;        /* 1 when the energy figure was modeled, not measured */
  int32_t kv_count;              /* the configuration: canonical space "key" = "value" */
  char **keys;
  char **values;
  int32_t line, column;
  int32_t verify_runs;       /* re-measurements by tune's verification; 0: none */
  int32_t verify_violations; /* of them, how many broke a bound */
  int32_t verify_failures;   /* and how many failed */
} mi_deploy_config_t;

/** One (model, device) of the table. configs[0] is the chosen configuration, the rest the
 * fallbacks in the order of the stored front. */
typedef struct mi_deploy_entry {
  char *model;  /* as written by the tuner (relative to the recipe folder) */
  char *device; /* "PLUGIN:INDEX" */
  char *status; /* why there is no configuration; NULL when there is one */
  int32_t assigned;
  char *stack, *stack_hash; /* software stack the figures were measured on */
  /* where the nodes the device refuses ran when the figures were measured: "PLUGIN:INDEX", or
   * "ref" (the reference interpreter); NULL in a table written before it was recorded (the
   * runtime then takes the default pick, as the tuner's workers did) */
  char *fallback;
  int32_t config_count;
  mi_deploy_config_t *configs;
  int32_t line, column;
  /* `vs_default:` the chosen configuration against the default one, from paired rounds
   * (mi-host tune, docs/measurement.md): speedup = default latency / chosen latency, its 95%
   * interval, the verdict ("faster", "is default", or "default deployed: ..." when the tuned
   * configuration, whose speedup this is, was not significantly faster) and the rounds. has_vs_default is 0 when the table has none. */
  int32_t has_vs_default;
  double vs_default, vs_default_lo, vs_default_hi;
  char vs_default_verdict[64];
  int32_t vs_default_rounds;
} mi_deploy_entry_t;

/** A parsed deployment.yaml (docs/tuning.md writes it, docs/runtime.md reads it). */
typedef struct mi_deploy_table {
  int32_t version;
  char *path;                      /* the file, or the name given to mi_deploy_parse */
  char *dir;                       /* its folder */
  char *recipe;                    /* the recipe it was tuned from, when known; else NULL */
  int32_t has_bound[MI_OBJ_COUNT]; /* optional `constraints:` (same keys as recipes) */
  double bound[MI_OBJ_COUNT];
  char *inputs; /* optional `inputs:` "NAME:1x3x32x32;..." */
  int32_t entry_count;
  mi_deploy_entry_t *entries;
  int32_t assignment_count; /* `assignment:` pairs */
  char **assign_model, **assign_device;
} mi_deploy_table_t;

/** Parses deployment.yaml text strictly (unknown keys, wrong types and missing fields are
 * errors reading "PATH:LINE:COLUMN: message"). `path` names it and its folder. Every
 * config_id must be the one its configuration hashes to (mi_deploy_config_id): a table edited
 * or cut short inside a configuration is refused, never run as another configuration. */
MI_API int32_t mi_deploy_parse(const char *text, size_t len, const char *path,
                               mi_deploy_table_t **out, mi_error_t *err);
/** Reads and parses a deployment.yaml file. */
MI_API int32_t mi_deploy_load(const char *path, mi_deploy_table_t **out, mi_error_t *err);
/** Frees a table. NULL is a no-op. */
MI_API void mi_deploy_destroy(mi_deploy_table_t *t);
/** Writes the table to `path` atomically through libyaml's emitter (every string escaped): a
 * temporary file in the same folder, fsync, read back with mi_deploy_parse and compared with
 * `t`, rename, fsync of the folder. A reader sees the old file or the new one, never a part,
 * and never one it would refuse: a table that does not read back as written is not written. */
MI_API int32_t mi_deploy_write(const mi_deploy_table_t *t, const char *path, mi_error_t *err);
/** Index of the entry of `model` on `device` (either NULL: any); with both NULL the assigned
 * entry, else the first one with a configuration. -1 when none. */
MI_API int32_t mi_deploy_find(const mi_deploy_table_t *t, const char *model, const char *device);
/** The configuration as canonical space text ("key=value" lines, sorted by key); malloc'd. */
MI_API char *mi_deploy_config_text(const mi_deploy_config_t *c);
/** The config_id of a configuration: 16 hex digits of the 64-bit FNV-1a of its canonical text,
 * the same as mi_space_hash of the point it names. MI_OK or MI_ERR_OUT_OF_MEMORY. */
MI_API int32_t mi_deploy_config_id(const mi_deploy_config_t *c, char out[17]);

/* ---------------------------------------------------------------- the change detector */

/** A one-sided CUSUM (Page-Hinkley with a known reference) on the log ratio of the running
 * median of the last `window` latencies to the reference latency: one outlier never moves a
 * median of 3 or more, and a shift smaller than the allowance never accumulates. The allowance
 * is `delta` plus three standard errors of the median, from a running robust estimate of the
 * noise (the median absolute deviation of each window), so noisier devices need more evidence. */
typedef struct mi_drift_detector {
  int32_t window;   /* running median width (odd, 3..31; default 5) */
  double delta;     /* tolerated relative slowdown, as log ratio (default 0.05) */
  double lambda;    /* alarm threshold of the sum (default 0.25) */
  double reference; /* the tuned latency (any unit, > 0) */
  double ring[31];
  int32_t count; /* samples seen since reset */
  double sum;    /* the cumulative statistic */
  double median; /* the last running median (NaN before `window` samples) */
  double noise;  /* running robust sigma of log latency (0 before a window) */
} mi_drift_detector_t;

/** Sets defaults (or the given values when > 0) and the reference; clears the state. */
MI_API void mi_drift_init(mi_drift_detector_t *d, double reference, int32_t window, double delta,
                          double lambda);
/** Adds one latency; returns 1 when the alarm fires (the statistic crossed lambda). */
MI_API int mi_drift_add(mi_drift_detector_t *d, double latency);

/* ---------------------------------------------------------------- the runtime */

/** What to do with a table tuned on another software stack. */
typedef enum mi_stack_policy {
  MI_STACK_USE = 0,        /* flag it and use it */
  MI_STACK_REVALIDATE = 1, /* re-measure the chosen configuration; fall back when it fails */
  MI_STACK_REFUSE = 2      /* refuse to open (MI_ERR_CONSTRAINT) */
} mi_stack_policy;
/** "use", "revalidate", "refuse"; -1 when unknown. */
MI_API int32_t mi_stack_policy_find(const char *name);

/** How to open a runtime. Fill with mi_runtime_options_default, then change fields. */
typedef struct mi_runtime_options {
  uint32_t struct_size;
  const char *model;    /* the entry's model; NULL: see mi_deploy_find */
  const char *device;   /* "PLUGIN:INDEX"; NULL: see mi_deploy_find */
  const char *recipe;   /* recipe for model folder, inputs, bounds; NULL: the table's */
  int32_t stack_policy; /* mi_stack_policy (default use) */
  int32_t monitor;      /* 1 (default): watch latency and react to drift */
  int32_t window;       /* detector settings, 0 = defaults (mi_drift_init) */
  double delta, lambda;
  int32_t adapt_budget;  /* measurements of one re-adaptation (default 4) */
  int32_t adapt_repeats; /* timed repeats per such measurement (default 5) */
  int32_t write_table;   /* 1 (default): re-adaptation and revalidation rewrite the table */
  const char *log_path;  /* decision log; NULL: TABLE_DIR/decisions.jsonl; "" none */
  uint64_t seed;         /* re-adaptation neighbours (default 1) */
  /* NULL, or called before each long step the runtime takes: reopening the device, preparing a
   * configuration (kernels compiled), measuring one. A drift reaction inside mi_runtime_run
   * (fallbacks, a re-adaptation of several measured neighbours) is many such steps; a caller
   * that watches each call with a deadline (mi-run's guard) restarts it here, so that a
   * reaction made of steps that each finish in time is not taken for a hang. */
  void (*on_step)(void *user, const char *device, const char *step); /* device: PLUGIN:INDEX */
  void *step_user;
  /* 1: the sessions time each step (mi_session_options_t.per_node_timing), for a per-layer
   * profile of the running configuration (mi_runtime_session); default 0 (appended) */
  int32_t per_node_timing;
} mi_runtime_options_t;

MI_API void mi_runtime_options_default(mi_runtime_options_t *o);

/** A deployment opened for one (model, device). */
typedef struct mi_runtime mi_runtime_t;

/** What the runtime is doing, for tools and tests. */
typedef struct mi_runtime_info {
  char model[256], device[96];
  char config_id[17];   /* the configuration running now */
  int32_t config_index; /* its index in the entry; -1 after a re-adaptation adopted one
                         * that was not there (the table then lists it first) */
  int32_t runs;         /* inferences run */
  int32_t switches;     /* configuration changes (fallbacks and re-adaptations) */
  int32_t readaptations;
  int32_t alarms;         /* drift alarms */
  int32_t stack_mismatch; /* 1: the table was tuned on another stack */
  double reference_ms;    /* tuned latency of the running configuration */
  double last_ms;         /* latency of the last inference (device clock when reported) */
  double median_ms;       /* running median (NaN before a window is full) */
  double statistic;       /* the detector's sum */
  int32_t device_clock;   /* 1: latencies are the device's timer, 0: host wall time */
} mi_runtime_info_t;

/** Loads the table at `path`, picks the entry, checks the software stack by policy, and
 * instantiates the chosen configuration on the device: the model-side transform applied with
 * the tuner's calibration samples, the session created with the per-node variants and knobs
 * and the device knobs. The runtime loads its own instance of the device's plugin from the
 * manifest `registry` found, so that a switch can reopen the device. */
MI_API int32_t mi_runtime_open(const char *path, const struct mi_registry *registry,
                               const mi_runtime_options_t *o, mi_runtime_t **out,
                               mi_error_t *err);
/** Runs one inference (inputs in the original model's input order; outputs[i] new arrays),
 * feeds its latency to the monitor and, on an alarm, switches configuration before returning. */
MI_API int32_t mi_runtime_run(mi_runtime_t *rt, const struct mi_array *const *inputs,
                              int32_t input_count, struct mi_array **outputs,
                              int32_t output_count, mi_error_t *err);
/** Re-adaptation on request: measures a few neighbours of the running configuration, adopts the
 * best that meets the bounds and rewrites the table atomically. */
MI_API int32_t mi_runtime_readapt(mi_runtime_t *rt, mi_error_t *err);
/** The original model (its inputs and outputs are what mi_runtime_run takes and gives). */
MI_API const mi_graph_t *mi_runtime_graph(const mi_runtime_t *rt);
/** The input shapes and fixed values the runtime applied to the model ("x:1x3x32x32;sr={16000}",
 * the table's inputs: or its recipe's), or NULL. An input fixed to a value is a constant of
 * mi_runtime_graph, not one of its inputs (mi_input_value_check says whether data agrees). */
MI_API const char *mi_runtime_inputs(const mi_runtime_t *rt);
/** The session of the configuration running now and, in *graph when not NULL, the graph it runs
 * (the model after the configuration's model-side transform): NULL before a configuration runs.
 * Both change when the runtime switches configuration (mi_runtime_info's config_id says). */
MI_API const mi_session_t *mi_runtime_session(const mi_runtime_t *rt, const mi_graph_t **graph);
MI_API void mi_runtime_info(const mi_runtime_t *rt, mi_runtime_info_t *out);
/** Releases the session, the device instance and the table. NULL is a no-op. */
MI_API void mi_runtime_close(mi_runtime_t *rt);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_RUNTIME_H */
