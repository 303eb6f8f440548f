/* mi_measure.h - measuring honestly: robust statistics, the measurement protocol, crash-isolated
 * workers, the evaluation log (history) and the model/device/software fingerprints. */
#ifndef METAINFER_MI_MEASURE_H
#define METAINFER_MI_MEASURE_H

#include <stdint.h>
#include <stdio.h>

#include "metainfer/mi_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- statistics */

/** Robust summary of a sample set (all in the samples' unit). */
typedef struct mi_stats {
  int32_t n;
  double min, max, mean, median, trimmed_mean, p10, p90, stddev;
  double cv; /* stddev / mean; 0 for a single sample */
} mi_stats_t;

/** Summarises `n` >= 1 samples; `trim` is the fraction cut from each end for the trimmed mean
 * (0 <= trim < 0.5). Percentiles interpolate linearly between order statistics. */
MI_API int32_t mi_stats_compute(const double *samples, int32_t n, double trim, mi_stats_t *out,
                                mi_error_t *err);
/** The q-quantile (0..1) of `n` sorted samples, linear interpolation. */
MI_API double mi_stats_quantile(const double *sorted, int32_t n, double q);

/** A memory field of this process's /proc/self/status ("VmRSS", "VmHWM") in bytes; 0 where it
 * cannot be read. */
MI_API uint64_t mi_process_memory_bytes(const char *field);
/** Resets this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0; a no-op elsewhere),
 * so a later VmHWM says what came after. */
MI_API void mi_process_reset_peak(void);

/* ---------------------------------------------------------------- the protocol */

#define MI_MEASURE_MAX_SAMPLES 256

/** How to measure. Fill with mi_measure_options_default(), then change fields. */
typedef struct mi_measure_options {
  uint32_t struct_size;
  int32_t warmup;          /* untimed runs first (default 2) */
  int32_t min_repeats;     /* timed repeats per round, at least 5 (default 5) */
  int32_t max_repeats;     /* more repeats while the CV is above threshold (default 30) */
  double cv_threshold;     /* re-measure above this CV (default 0.05) */
  int32_t max_remeasure;   /* extra rounds when a round ends unsettled (default 2) */
  double budget_s;         /* wall-time budget of one measurement (default 20) */
  double trim;             /* trimmed-mean fraction per end (default 0.1) */
  double temp_tolerance_c; /* a temperature move beyond this discards the sample (default 2) */
  int32_t flush_cache;     /* CPU devices: flush caches between repeats (default 0) */
  double min_sample_s;     /* runs shorter than this are batched, a sample being the mean of
                            * enough back-to-back runs to last it (default 0: off) */
  double median_ci;        /* more repeats while the 95% confidence interval of the median is
                            * wider than +-this share of it (default 0: off; 0.01 is +-1%) */
  double min_warmup_s;     /* warm-up goes on until it has lasted this long too, within half
                            * of budget_s, so short runs get a real warm-up (default 0: off) */
  /* Added: when > 0, timing stops after the first two kept samples of a round if both are over
   * this many seconds (the result says so: stopped_slow). A tuner that minimises latency alone
   * passes a multiple of the best latency measured so far: such a configuration cannot be on
   * the front, and timing it in full (seconds a run on a real model) buys nothing. */
  double stop_above_s;
} mi_measure_options_t;

MI_API void mi_measure_options_default(mi_measure_options_t *o);

/** Where samples come from. run() performs one repeat and returns its duration in seconds;
 * it sets *state_changed when the device state (frequency, temperature) moved during it. */
typedef struct mi_sample_source {
  void *user;
  int32_t (*run)(void *user, double *seconds, int *state_changed, mi_error_t *err);
  void (*begin_round)(void *user); /* optional: a fresh round starts (re-measure) */
  void (*between)(void *user);     /* optional: between repeats (cache flush) */
  /* optional: from now on run() performs `runs` runs back to back and returns their mean; a
   * source without it is never batched. */
  void (*set_batch)(void *user, int32_t runs);
} mi_sample_source_t;

/** What the protocol measured: the statistics of the kept samples of the final round. */
typedef struct mi_measure_result {
  mi_stats_t stats;
  int32_t rounds;    /* 1 + re-measures */
  int32_t runs;      /* every run, warm-up and discarded included */
  int32_t discarded; /* samples dropped because the device state changed */
  int32_t settled;   /* 1 when the final CV <= threshold */
  int32_t sample_count;
  double samples[MI_MEASURE_MAX_SAMPLES]; /* kept samples of the final round, in order */
  int32_t batch;                          /* runs per sample: 1, or more when min_sample_s batched short runs */
  double median_ci;                       /* half-width of the median's 95% confidence interval / median */
  int32_t stopped_slow;                   /* added: 1 when stop_above_s ended the timing after two samples */
} mi_measure_result_t;

/** Runs the protocol: warm-up, >= min_repeats timed repeats, more while the CV is above the
 * threshold or the median's confidence interval is wider than median_ci (up to max_repeats and
 * the budget), a fresh round when the CV still is (up to max_remeasure times). Runs shorter
 * than min_sample_s (judged by the fastest warm-up run) are batched per sample. Fails when a
 * run fails or no sample could be kept. */
MI_API int32_t mi_measure_run(const mi_sample_source_t *src, const mi_measure_options_t *o,
                              mi_measure_result_t *out, mi_error_t *err);

/* ---------------------------------------------------------------- profiling a session */

/** Which clock end-to-end latency was taken on. */
typedef enum mi_clock { MI_CLOCK_WALL = 0,
                        MI_CLOCK_DEVICE = 1 } mi_clock;

/** Per node: where it ran and its time over the kept repeats of the final round. */
typedef struct mi_layer_profile {
  char name[64];
  char op_type[32];
  int32_t node;  /* index in the graph */
  int32_t where; /* 0 device kernel, 1 host fallback (the reference interpreter), 2 folded at
                  * create time, 3 the session's fallback device */
  int32_t has_device_time;
  mi_stats_t wall;   /* seconds */
  mi_stats_t device; /* seconds, when has_device_time */
} mi_layer_profile_t;

/** A profile of one model on one device. */
typedef struct mi_profile {
  char plugin_name[64];
  char plugin_version[32];
  uint32_t device;
  mi_device_desc_t desc;
  int32_t clock;               /* mi_clock of `latency` */
  mi_measure_result_t latency; /* end-to-end, seconds */
  mi_stats_t wall;             /* end-to-end wall time of the same repeats */
  double prepare_s;            /* session create (compile/prepare), apart from run time */
  int32_t has_energy;
  int32_t energy_modeled;     /* 1: the energy counter is a model, not a sensor */
  double energy_j;            /* median energy per run */
  uint64_t peak_memory_bytes; /* peak device memory counter, else the worker's peak RSS */
  int32_t peak_memory_source; /* 0 unknown, 1 device counter, 2 host RSS */
  int32_t fallback_count;
  int32_t checked; /* a reference check was done */
  int32_t check_ok;
  double check_error; /* worst output's ||out - ref|| / max(||ref||, 1e-3 sqrt(n)) */
  int32_t layer_count;
  mi_layer_profile_t *layers;
  /* Added: the machine's 1-minute load average (/proc/loadavg) when the measurement began, NaN
   * when unreadable, and the online CPUs it is to be read against. */
  double load1;
  int32_t cpus;
  /* Added: the session's device memory plan for its runtime tensors (mi_session_memory): bytes
   * allocated, and what one buffer per tensor would take; 0 on the reference path. */
  uint64_t planned_memory_bytes;
  uint64_t unplanned_memory_bytes;
  /* Added: the steps inside If branches that ran as nested sessions (mi_session_nested), as
   * per-layer rows of the branch's graph and session (per-node medians over the kept samples
   * in which the branch ran), each tagged with its If node and branch (mi_nest_row_t, below). */
  int32_t nest_count;
  struct mi_nest_row *nest;
  /* Added: the session's fallback device (mi_session_options_t.fallback_plugin) as
   * "PLUGIN:INDEX", "" for none, and how many of the fallback_count nodes ran there (their
   * layers' where is 3); the others ran on the reference interpreter. */
  char fallback_device[80];
  int32_t fallback_on_device;
  /* Added: when fallback_on_device > 0, the fallback device as a part of the software stack
   * (mi_stack_fallback_describe): "fallback=PLUGIN VERSION (DEVICE, driver DRIVER)"; else "".
   * A record of the profile names it in its stack (mi_record_set_fallback_stack). */
  char fallback_stack[192];
  /* Added: a profile whose timed samples were each paired with another configuration's as many
   * runs right after it in the same process (a tune's trials are paired with the default's,
   * mi_worker_config_t.paired): the median of the samples' ratios to the paired runs' times, the
   * median of those times (seconds), and how many samples were paired; 0 when none were. The
   * ratio holds what the machine's speed of the moment (another tenant, a slow phase of a
   * virtual machine) does to both, which a median taken minutes apart from another cannot. */
  double paired_ratio;
  double paired_s;
  int32_t paired_count;
} mi_profile_t;

/** Profiles graph `g` (shapes inferred) on `device` of `plugin` with session options `so`
 * (may be NULL). With `check` the outputs are compared with the reference interpreter.
 * *out is a new profile (mi_profile_destroy) or NULL on failure. */
MI_API int32_t mi_profile_run(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                              const mi_session_options_t *so, const mi_measure_options_t *mo,
                              int check, mi_profile_t **out, mi_error_t *err);
MI_API void mi_profile_destroy(mi_profile_t *p);
/** What a device's outputs may differ from the reference interpreter's on the same inputs:
 * per output, the relative L2 error ||dev - ref|| / max(||ref||, 1e-3 * sqrt(n)) (an output
 * whose RMS is under 1e-3 is compared in absolute terms; docs/tuning.md). FP16 and INT8
 * rounding stay well inside it; a wrong kernel does not. Tuning, compare and mi-run --check
 * use it. */
#define MI_OUTPUT_TOLERANCE 0.05
/** The check of `n` device outputs against the reference's: *rel_err is the worst output's
 * error as above, INFINITY when an output is not FP32 or differs in size, NaN-poisoned outputs
 * counting as the worst. Returns 1 when *rel_err <= MI_OUTPUT_TOLERANCE, else 0. */
MI_API int mi_outputs_check(const mi_array_t *const *dev, const mi_array_t *const *ref,
                            int32_t n, double *rel_err);
/** The same check of graph g's outputs (dev and ref in the order of g's outputs), where an
 * output computed through a comparison or a rounding of float values (Equal, Less, Greater and
 * their -OrEqual forms, ArgMax, ArgMin, TopK, NonMaxSuppression, Round, Floor, Ceil) is a
 * discrete output: a peak map or a class index, in which a last-bit difference of the sums moves
 * a whole element (M-LSD's `scores`, 362 non-zero values, two moved peaks: 0.36 relative L2).
 * There, up to 1% of the elements (none under 100), and at most a tenth of those that are that
 * large on either side, may differ by more than the tolerance times the output's largest
 * reference magnitude; the error is that of the other elements. More is a wrong kernel (a zero
 * copy of a sparse peak map moves all its peaks), judged as mi_outputs_check judges. *flipped (may be NULL) gets the
 * number of elements so set aside. */
MI_API int mi_outputs_check_graph(const mi_graph_t *g, const mi_array_t *const *dev,
                                  const mi_array_t *const *ref, int32_t n, double *rel_err,
                                  int64_t *flipped);
/** The layers as a JSON array (malloc'd; free()); NULL when out of memory. */
MI_API char *mi_profile_layers_json(const mi_profile_t *p);

/* ---------------------------------------------------------------- per-layer tables */

/** One row of a per-layer table: one step of a run, a device kernel (which may run several
 * fused graph nodes) or a node the host ran. */
typedef struct mi_layer_row {
  int32_t node;       /* the graph node that carries the step's time */
  int32_t node_count; /* graph nodes the step runs */
  int32_t where;      /* 0 device kernel, 1 host (reference), 2 the session's fallback device */
  char name[64];
  char op[96];      /* op types joined by '+' for a fused kernel */
  char shapes[160]; /* the inputs' shapes, then the last output's: "1x8x24x96,8 -> 1x8x24x96" */
  char variant[64]; /* the variant asked for, "default" (the plugin's choice), "host", or
                     * "fallback PLUGIN:INDEX" for a node the fallback device ran */
  double ms;        /* time per run */
  double share;     /* ms over the sum of every row's ms */
  double flops;     /* of the compute node (Conv, Gemm, MatMul...); 0 for the other ops */
  double bytes;     /* tensors read (weights included) and the outputs written */
  int32_t depth;    /* 0 for a step of the top graph, 1 inside a subgraph of it, ... */
} mi_layer_row_t;

/** A row of a branch's table in a profile (mi_profile_t.nest): the If node of the profiled
 * graph and the branch ("then" or "else") it belongs to, for mi_layer_rows_nest. */
typedef struct mi_nest_row {
  int32_t parent;
  char branch[8];
  mi_layer_row_t row;
} mi_nest_row_t;

/** Per-layer rows of graph `g` (shapes inferred), slowest first. `node_ms[n]` is node n's time
 * per run in ms, negative when it did not run on its own (folded, or a member of a fused kernel
 * whose time another node carries). `s` (may be NULL) groups the nodes of one device kernel and
 * says which ran on the host; `so` (may be NULL) names the variants asked for. *rows is
 * malloc'd (free()); count may be 0. */
MI_API int32_t mi_layer_rows(const mi_graph_t *g, const mi_session_t *s,
                             const mi_session_options_t *so, const double *node_ms,
                             mi_layer_row_t **rows, int32_t *count, mi_error_t *err);
/** Puts the rows of a subgraph that node `parent` ran as a nested session (mi_session_nested;
 * `inner` from mi_layer_rows on its graph and session, perhaps nested itself) into the table of
 * the graph around it: each named "<parent's name>/<branch>/<its name>" with depth one more, the
 * parent's row keeping only its own time (its time less the inner rows'), shares recomputed
 * over all rows, slowest first. *rows is realloc'd. Fails when `parent` has no row of depth 0. */
MI_API int32_t mi_layer_rows_nest(mi_layer_row_t **rows, int32_t *count, int32_t parent,
                                  const char *branch, const mi_layer_row_t *inner,
                                  int32_t inner_count, mi_error_t *err);
/** Nests a profile's branch rows (mi_profile_t.nest) into `rows` (from mi_layer_rows on the
 * profiled graph) with mi_layer_rows_nest, one call per If node and branch. */
MI_API int32_t mi_profile_nest_rows(const mi_profile_t *p, mi_layer_row_t **rows, int32_t *count,
                                    mi_error_t *err);
/** Prints rows as a table (with GFLOP/s for compute ops, GB/s for the others, and a total
 * line; the node column as wide as the longest name up to 64 characters, a longer name keeping
 * its tail after a '~') or, with `json`, as one JSON array of objects. */
MI_API void mi_layer_rows_print(FILE *f, const mi_layer_row_t *rows, int32_t count, int json);

/* ---------------------------------------------------------------- crash-isolated workers */

/** A pool of worker processes, one per device; each loads the plugins itself. */
typedef struct mi_worker_pool mi_worker_pool_t;

typedef struct mi_worker_options {
  uint32_t struct_size;
  const char *plugin_dirs;  /* colon-separated folders; NULL = MI_PLUGIN_PATH */
  double timeout_s;         /* per job; a worker silent for longer is killed (default 60) */
  int32_t quarantine_after; /* consecutive failures that quarantine a device (default 3) */
  const char *const *env;   /* "KEY=VALUE" set in every worker's environment; NULL-ended */
  const char *worker_path;  /* the mi-worker executable; NULL: the one next to the running
                             * program, else the one of the build tree this library came from */
  /* Where the nodes a worker's device refuses run (mi_registry_load_fallback): "PLUGIN:INDEX",
   * "ref" (the reference interpreter), or NULL for the default, the first CPU plugin by name
   * when the device is of another plugin (mi_registry_cpu_fallback). */
  const char *fallback;
} mi_worker_options_t;

MI_API void mi_worker_options_default(mi_worker_options_t *o);
/** Creates an empty pool (workers start on first use). MI_ERR_NOT_FOUND when no usable
 * mi-worker executable is found (see worker_path). */
MI_API int32_t mi_worker_pool_create(const mi_worker_options_t *o, mi_worker_pool_t **out,
                                     mi_error_t *err);
/** Kills and reaps every worker. NULL is a no-op. */
MI_API void mi_worker_pool_destroy(mi_worker_pool_t *p);
/** Added: no job of the pool waits for its worker past deadline_s (mi_now_s clock; <= 0: none,
 * the default): a job still running then is killed and fails with MI_ERR_TIMEOUT, "stopped at the
 * caller's time budget". A tuner sets its time budget's end so that one slow measurement cannot
 * carry the tune past it. */
MI_API void mi_worker_pool_set_deadline(mi_worker_pool_t *p, double deadline_s);
/** 1 when the pool has a deadline (mi_worker_pool_set_deadline) and it has passed: a job that
 * failed then was stopped by the caller's budget, not by the device. */
MI_API int mi_worker_pool_out_of_time(const mi_worker_pool_t *p);

/** Profiles the model file `model` on device `spec` ("PLUGIN:INDEX") in its worker, with the
 * device knobs of `so` (may be NULL; per-node choices are not carried yet: MI_ERR_UNSUPPORTED,
 * at most 16 knobs of INT/BOOL/ENUM value). On MI_OK
 * *out is a new profile. Otherwise the measurement failed and err says why in one line:
 * "crashed: signal N (...)", "timed out after S s", "wrong results: ...", "quarantined: ...",
 * or the plugin's error. MI_ERR_CRASHED, MI_ERR_TIMEOUT, MI_ERR_CONSTRAINT (wrong results),
 * MI_ERR_UNSUPPORTED (quarantined) or the worker's code. */
MI_API int32_t mi_worker_profile(mi_worker_pool_t *p, const char *spec, const char *model,
                                 const mi_session_options_t *so,
                                 const mi_measure_options_t *mo, int check, mi_profile_t **out,
                                 mi_error_t *err);
struct mi_xf_config;
/** A configuration to measure in a worker (mi_worker_profile_config): the worker loads the
 * model, applies the model-side transform configuration and prepares the session with the
 * hardware-side choices itself, so neither the transform of a plugin's weights nor the plugin
 * ever runs in the caller. Zero-initialise and set struct_size. */
typedef struct mi_worker_config {
  uint32_t struct_size;
  const char *model;              /* ONNX file */
  const char *inputs;             /* fixed input shapes "NAME:1x3x32x32;NAME2:4x8" or NULL */
  const struct mi_xf_config *xf;  /* model-side transform configuration; NULL: the model as is */
  const mi_session_options_t *so; /* device knobs and per-node variants/knobs; may be NULL */
  const char *calibration;        /* folder of .npy samples; NULL: deterministic random ones */
  uint64_t seed;                  /* stream of the random samples */
  int32_t samples;                /* random samples for calibration and accuracy (default 2) */
  int32_t accuracy;               /* 1: also compare the transformed model with the original
                                   * on the reference interpreter (accuracy drop) */
  /* Added (read only when struct_size covers them): */
  double accuracy_bound;    /* > 0: a configuration whose accuracy drop is over it is
                             * infeasible anyway, so the reference check that would tell
                             * a wrong kernel from a lossy transform is skipped (the
                             * profile says checked = 0) */
  const char *fixed_inputs; /* "NAME=FILE.npy;..." inputs with fixed values (and so
                             * shapes), the rest random or from `calibration`; NULL: none */
  /* Added: the accuracy's reference outputs kept in a folder, so that they are computed once
   * per tune and not once per worker process (a real model's reference run can take minutes). */
  const char *ref_dir; /* folder of the reference outputs ("s<K>_o<O>.npy"); NULL: none. A
                        * worker that lacks them reads them from here, or computes them on the
                        * reference interpreter and writes them here */
  int32_t ref_device;  /* 1 (with ref_dir, while it holds no outputs): this configuration's own
                        * outputs on the device become the reference (for the default
                        * configuration at FP32, when the reference interpreter is too slow);
                        * the folder is marked so, and later jobs skip the reference check
                        * of the transformed model: an output over the check's 5% fails as
                        * wrong results */
  /* Added: 1 (with accuracy): only the accuracy drop is asked. The configuration is not timed
   * (the profile comes back empty: no latency, no layers) and its outputs are not checked
   * against the reference run of the transformed model. */
  int32_t accuracy_only;
  /* Added: 1 to pair each timed sample with as many runs of another configuration (the
   * transform paired_xf, NULL for none, and the session options paired_so), run right after it
   * in the same worker; the profile's paired_* then give the ratio to it. */
  int32_t paired;
  const struct mi_xf_config *paired_xf;
  const mi_session_options_t *paired_so;
} mi_worker_config_t;

/** What a configuration job returns besides the profile. */
typedef struct mi_worker_config_result {
  int32_t has_accuracy;
  double rel_l2;      /* ||y - y0|| / ||y0||, the accuracy drop of the tuner */
  double top1;        /* share of argmax agreement, -1 when not a classifier */
  double transform_s; /* seconds spent applying the transform in the worker */
} mi_worker_config_result_t;

/** Measures configuration `cfg` on device `spec` in its worker: the same failure classes and
 * quarantine as mi_worker_profile (a transform that fails is the worker's error, not a crash).
 * On MI_OK *out is a new profile and *res (may be NULL) the accuracy. */
MI_API int32_t mi_worker_profile_config(mi_worker_pool_t *p, const char *spec,
                                        const mi_worker_config_t *cfg,
                                        const mi_measure_options_t *mo, int check,
                                        mi_profile_t **out, mi_worker_config_result_t *res,
                                        mi_error_t *err);
/** Asks device `spec`'s plugin, in its worker, whether kernel_prepare accepts node `node` (an
 * index of the model file `model` loaded with input shapes `inputs`, sorted and shape-inferred;
 * its op must be `op_type`) with variant `variant_id` and default knobs. On MI_OK *status is
 * the plugin's answer (MI_OK also when the node cannot be described). Otherwise the probe
 * failed like a measurement (crashed, timed out, quarantined) and err says why. */
MI_API int32_t mi_worker_probe(mi_worker_pool_t *p, const char *spec, const char *model,
                               const char *inputs, int32_t node, const char *op_type,
                               const char *variant_id, int32_t *status, mi_error_t *err);
/** Asks device `spec`'s plugin, in its worker, its check_config about `variant_id` (NULL: the
 * device knobs alone) with `knobs`. On MI_OK *status is the plugin's answer (MI_OK when it has
 * no check_config) and `why` (may be NULL) its message; what it printed went to the log.
 * Otherwise the question failed like a measurement (crashed, timed out, printed to stdout,
 * quarantined) and err says why. */
MI_API int32_t mi_worker_check_config(mi_worker_pool_t *p, const char *spec,
                                      const char *variant_id, const mi_knob_value_t *knobs,
                                      int32_t knob_count, int32_t *status, mi_error_t *why,
                                      mi_error_t *err);
/** 1 when `spec` failed quarantine_after times in a row and is no longer run. */
MI_API int mi_worker_quarantined(const mi_worker_pool_t *p, const char *spec);
/** Ends the worker of device `spec` (it exits on end of input and is reaped), so that the
 * device's next job starts in a fresh process; its failure count and quarantine stay. For
 * measuring one figure in several processes (mi-host profile --workers). No-op when the device
 * has no running worker. */
MI_API void mi_worker_retire(mi_worker_pool_t *p, const char *spec);
/** Loads the plugin of `manifest` once in a sacrificial mi-worker process (entry, create, every
 * description, destroy) before a host loads it into its own: an mi_registry_preflight_fn, with
 * `opts` a const mi_worker_options_t * (or NULL) of which worker_path and timeout_s count
 * (default: MI_LOAD_TIMEOUT_S, else 30 s). MI_OK when the child finished; otherwise the plugin
 * is refused with the step and how: "refused: crashed in create ...", "hung in entry ...",
 * "exited with status N in describe ...", "writes to stdout ...". `name` is unused. */
MI_API int32_t mi_worker_preflight(void *opts, const char *manifest, const char *name,
                                   mi_error_t *err);

/** A guarded child: for a program that runs plugin code in its own process (mi-run). Call
 * mi_guard_begin before loading anything (while the program has one thread): it forks. In the
 * child it returns MI_OK at once with *child set; the child does the work, names each step with
 * mi_guard_stage (the loader names entry, create and describe itself after mi_guard_registry)
 * and calls mi_guard_end last. In the parent it returns when the child is gone: MI_OK with
 * *child NULL and *status the child's exit status, or, when the child crashed, went silent for
 * `step_timeout_s` seconds in one step (killed; <= 0: no deadline) or exited without
 * mi_guard_end, MI_ERR_CRASHED or MI_ERR_TIMEOUT with one line naming the plugin and the step:
 * "plugin 'x' crashed in run: signal 11 (Segmentation fault)". */
typedef struct mi_guard mi_guard_t;
MI_API int32_t mi_guard_begin(double step_timeout_s, mi_guard_t **child, int *status,
                              mi_error_t *err);
/** Names the step about to run (and, when not NULL, the plugin it runs). NULL g: no-op. The
 * step "preflight" (waiting for mi_worker_preflight, which has its own deadline) has none. */
MI_API void mi_guard_stage(mi_guard_t *g, const char *plugin, const char *stage);
/** Makes the loader of `r` name each plugin and its load steps to the guard. NULL g: no-op. */
MI_API void mi_guard_registry(mi_guard_t *g, mi_registry_t *r);
/** Flushes stdio, tells the parent the work ended and frees g. NULL: no-op. */
MI_API void mi_guard_end(mi_guard_t *g);

/** mi_worker_preflight that also brings back every description of every device, read in the
 * child: an mi_registry_describe_fn (mi_registry_set_isolated), so that a host lists plugins
 * without running any of their code. A plugin the child's loader refused is refused with its
 * reason. */
MI_API int32_t mi_worker_describe(void *opts, const char *manifest, const char *name,
                                  void **snapshot, size_t *size, mi_error_t *err);

/* ---------------------------------------------------------------- paired comparison */

#define MI_COMPARE_MAX_CONFIGS 8
#define MI_COMPARE_MAX_ROUNDS 64
/* The fewest rounds that give a verdict other than MI_COMPARE_TIED. With n rounds whose ratios
 * all fall on one side of 1, every bootstrap resample does too and the interval excludes 1,
 * whatever the true ratio: two identical configurations do that with probability 2^(1-n), 50%
 * at 2 rounds (an IS-Net default against itself, 2 rounds under load: "1.29x faster"), 6% at 5,
 * near the 95% interval's nominal 5%. Fewer rounds still give the ratio and interval. */
#define MI_COMPARE_VERDICT_ROUNDS 5

/** What the interval of a ratio says about config i against config 0. */
typedef enum mi_compare_verdict {
  MI_COMPARE_TIED = 0,   /* the interval spans 1: no significant difference */
  MI_COMPARE_FASTER = 1, /* the whole interval is below 1 */
  MI_COMPARE_SLOWER = 2  /* the whole interval is above 1 */
} mi_compare_verdict;

/** A ratio of latencies with its bootstrap confidence interval. */
typedef struct mi_compare_ratio {
  double ratio;      /* median of the per-round ratios */
  double lo, hi;     /* the confidence interval (percentile bootstrap over rounds) */
  double half_width; /* (hi - lo) / 2 / ratio: the interval's half-width as a share */
  int32_t verdict;   /* mi_compare_verdict */
} mi_compare_ratio_t;

/** The paired ratio b/a of n rounds (a[k] and b[k] measured in the same round, both > 0): the
 * median of b[k]/a[k] and its `confidence` (e.g. 0.95) percentile-bootstrap interval from
 * `resamples` resamples of whole rounds, drawn from `seed`: the same samples and seed give the
 * same interval. n >= 1 (one round gives a zero-width interval); under
 * MI_COMPARE_VERDICT_ROUNDS rounds the verdict is MI_COMPARE_TIED. */
MI_API int32_t mi_compare_ratio(const double *a, const double *b, int32_t n, double confidence,
                                int32_t resamples, uint64_t seed, mi_compare_ratio_t *out,
                                mi_error_t *err);

/** How to compare. Fill with mi_compare_options_default(), then change fields. */
typedef struct mi_compare_options {
  uint32_t struct_size;
  double target;      /* stop once every interval's half-width is under this share
                       * (default 0.02: +-2%) */
  double budget_s;    /* wall time (default 120): after two rounds, no round is begun that would
                       * end past it, judged by the longest round since the first */
  int32_t min_rounds; /* rounds before the target may stop it (default 5) */
  int32_t max_rounds; /* at most this many (default 30, at most MI_COMPARE_MAX_ROUNDS) */
  double confidence;  /* of the intervals (default 0.95) */
  int32_t resamples;  /* bootstrap resamples (default 2000) */
  uint64_t seed;      /* each round's order and the bootstrap (default 1) */
  double load_limit;  /* a measurement that started with the 1-minute load average above
                       * this many runnable tasks per CPU is flagged (default 1.0) */
  int32_t no_check;   /* mi_worker_compare: 1 skips the first round's check of each
                       * configuration's outputs against the reference interpreter (default 0;
                       * the tuner's check sets it: it checked every configuration it measured) */
} mi_compare_options_t;

MI_API void mi_compare_options_default(mi_compare_options_t *o);

/** Measures configuration `config` (0..count-1) once; *median_s its median latency. */
typedef int32_t (*mi_compare_measure_fn)(void *user, int32_t config, double *median_s,
                                         mi_error_t *err);

/** What a paired comparison measured. Rounds in order; ratios are against config 0. */
typedef struct mi_compare_result {
  int32_t count;                                                  /* configurations */
  int32_t rounds;                                                 /* complete rounds */
  double median_s[MI_COMPARE_MAX_CONFIGS];                        /* each one's median over the rounds */
  mi_compare_ratio_t vs_first[MI_COMPARE_MAX_CONFIGS];            /* config i / config 0 ([0] is 1) */
  double sample_s[MI_COMPARE_MAX_ROUNDS][MI_COMPARE_MAX_CONFIGS]; /* per round, per config */
  int8_t order[MI_COMPARE_MAX_ROUNDS][MI_COMPARE_MAX_CONFIGS];    /* measured order per round */
  double load[MI_COMPARE_MAX_ROUNDS][MI_COMPARE_MAX_CONFIGS];     /* 1-min load when it began;
                                                                   * NaN when unreadable */
  int32_t loaded;                                                 /* measurements flagged as taken under load (load_limit) */
  int32_t cpus;                                                   /* online CPUs the limit was scaled by */
  int32_t target_met;                                             /* 1: stopped because every half-width was under the target */
  double seconds;                                                 /* wall time of the whole comparison */
  int32_t failed;                                                 /* the configuration whose measurement ended it; -1: none failed */
} mi_compare_result_t;

/** Runs `count` (2..MI_COMPARE_MAX_CONFIGS) configurations in interleaved rounds, each round
 * measuring every configuration once in an order drawn anew from the seed, until every ratio
 * against config 0 is known to within +-target (after min_rounds), the budget is spent or
 * max_rounds are done. A failed measurement ends it with that error (out keeps the complete
 * rounds before it). Each measurement is preceded by a reading of /proc/loadavg. */
MI_API int32_t mi_compare_run(int32_t count, mi_compare_measure_fn measure, void *user,
                              const mi_compare_options_t *o, mi_compare_result_t *out,
                              mi_error_t *err);

/** Paired rounds like mi_compare_run over configurations measured in workers of `p` on device
 * `spec`, all of one round in one fresh worker process (mi_worker_retire before each round):
 * it prepares every configuration (in the round's order), then runs them in turn, one
 * inference each per cycle in an order drawn anew each cycle (warm-up cycles: mo->warmup and
 * mo->min_warmup_s; timed cycles: mo->max_repeats, at least mo->min_repeats, within half of
 * mo->budget_s), and a round's figure for each is the median of its times (device timers when every run of
 * every configuration had one, else the wall clock). What changes
 * over milliseconds (the machine's other work, the CPU the process runs on) and what a process
 * brings with it (its memory layout) reach all of them alike; rounds sample the processes.
 * The configurations must share the model, inputs and samples. */
MI_API int32_t mi_worker_compare(mi_worker_pool_t *p, const char *spec,
                                 const mi_worker_config_t *configs, int32_t count,
                                 const mi_measure_options_t *mo, const mi_compare_options_t *o,
                                 mi_compare_result_t *out, mi_error_t *err);

/** The whole of the mi-worker program: a pool starts each worker as a new process running
 * this (fork + exec, never a bare fork of a host that may run threads), and the worker serves
 * one device's jobs on the socket named in argv until the pool closes it. Returns the exit
 * status (2: arguments not from a pool). */
MI_API int mi_worker_main(int argc, char **argv);

/* ---------------------------------------------------------------- fingerprints */

#define MI_FEATURE_MAX_OPS 48

/** Static features of a model (shapes inferred). */
typedef struct mi_model_features {
  int32_t layer_count; /* nodes that compute (not constants) */
  int32_t op_kinds;
  char op_names[MI_FEATURE_MAX_OPS][32];
  int32_t op_counts[MI_FEATURE_MAX_OPS];
  double flops;        /* per inference, multiply-add = 2 */
  int64_t params;      /* constant elements */
  int64_t max_width;   /* largest channel (4-D) or feature (2-D/3-D) dimension */
  int64_t input_scale; /* input elements per batch item */
  int64_t batch;
  char input_shapes[256]; /* "input:1x3x96x96;..." */
} mi_model_features_t;

/** Static features of one layer. */
typedef struct mi_layer_features {
  char name[64];
  char op_type[32];
  char in_shape[64], out_shape[64];
  double flops;
  double bytes;      /* inputs + weights + outputs */
  double intensity;  /* flops / bytes */
  int32_t fusable;   /* can fold into its producer (activation, BN, Add after conv) */
  int32_t alignment; /* largest power of two (<= 64) dividing the channel count */
} mi_layer_features_t;

/** Computes model and (when `layers` is not NULL) per-layer features; *layers is malloc'd. */
MI_API int32_t mi_model_features(const mi_graph_t *g, mi_model_features_t *out,
                                 mi_layer_features_t **layers, int32_t *layer_count,
                                 mi_error_t *err);
/** Model features as a JSON object (malloc'd; free()); NULL when out of memory. */
MI_API char *mi_model_features_json(const mi_model_features_t *f);
/** Hash of a file's bytes (the model hash), as hex. */
MI_API int32_t mi_file_hash(const char *path, char out[17], mi_error_t *err);

#define MI_PROBE_COUNT 5

/** Declared features plus micro-benchmarks of a device. */
typedef struct mi_device_fingerprint {
  mi_device_desc_t desc;
  double gemm_gflops;                /* measured: a 256^3 FP32 MatMul */
  double add_gbs;                    /* measured: a large Add, bytes moved / s */
  double probe_us[MI_PROBE_COUNT];   /* median latencies of the fixed probe layers */
  double vector[4 + MI_PROBE_COUNT]; /* log-scaled embedding for similarity */
  char hash[17];                     /* of the device's identity only: stable across runs */
} mi_device_fingerprint_t;

/** The host's check of a device time a plugin reported for a run that took `wall_s` seconds
 * of wall-clock time around the call: 0 ns, or more than the wall time allows (a negative time
 * read as uint64 is centuries), is MI_ERR_DEVICE with "implausible device time: ..." in err;
 * the measurement protocol fails such a run and mi-conform's run-times rule uses the same. */
MI_API int32_t mi_device_time_check(uint64_t device_ns, double wall_s, mi_error_t *err);
/** Hash of a device's identity (name, vendor, driver, ISA, kind): never of figures a driver
 * derives from the machine's state (memory, compute units), so one device keeps one hash. */
MI_API void mi_device_hash(const mi_device_desc_t *desc, char out[17]);
/** Names of the probe layers, index 0..MI_PROBE_COUNT-1. */
MI_API const char *mi_probe_name(int32_t index);
/** Measures the fingerprint of a device in this process. */
MI_API int32_t mi_device_fingerprint(mi_plugin_t *plugin, uint32_t device,
                                     mi_device_fingerprint_t *out, mi_error_t *err);
/** The fingerprint as a JSON object (malloc'd; free()). */
MI_API char *mi_device_fingerprint_json(const mi_device_fingerprint_t *f);
/** The software stack of a record: compiler, framework, ABI, plugin name and version, driver.
 * Writes the text into out (cap bytes) and its hash into hash[17]. */
MI_API void mi_stack_describe(const char *plugin_name, const char *plugin_version,
                              const mi_device_desc_t *desc, char *out, size_t cap,
                              char hash[17]);
/** The software-stack part of a fallback device (mi_session_options_t.fallback_plugin):
 * "fallback=PLUGIN VERSION (DEVICE, driver DRIVER)" into out (cap bytes); "" for NULL. */
MI_API void mi_stack_fallback_describe(mi_plugin_t *plugin, uint32_t device, char *out, size_t cap);
/** A stack text with a fallback part appended ("STACK;FALLBACK"; `fallback` NULL or "": the stack
 * as it is), into out (cap bytes), and its hash into hash[17]. */
MI_API void mi_stack_with_fallback(const char *stack, const char *fallback, char *out, size_t cap,
                                   char hash[17]);
/** Measures a device fingerprint in the worker of `spec` (crash-isolated). */
MI_API int32_t mi_worker_fingerprint(mi_worker_pool_t *p, const char *spec,
                                     mi_device_fingerprint_t *out, mi_error_t *err);

/* ---------------------------------------------------------------- the evaluation log */

/** Where energy figures came from. */
typedef enum mi_energy_source {
  MI_ENERGY_NONE = 0,
  MI_ENERGY_MEASURED = 1,
  MI_ENERGY_MODELED = 2
} mi_energy_source;

/** One measurement record, with its task, configuration, device and software stack. Strings
 * may be NULL where marked. */
typedef struct mi_record {
  /* task */
  const char *model_hash;
  const char *model_name;          /* may be NULL */
  const char *model_features_json; /* may be NULL */
  int64_t batch;
  const char *input_shapes;
  /* device */
  const char *device_spec; /* "blis-cpu:0" */
  const char *device_name;
  const char *device_hash; /* fingerprint hash */
  const char *device_json; /* fingerprint, may be NULL */
  /* configuration: hardware side (variant/knobs per node + device knobs) and model side */
  const char *config_canonical;
  const char *model_config_canonical; /* from the transform passes; may be NULL */
  /* software stack */
  const char *stack;
  const char *stack_hash;
  /* result */
  int64_t run_id;
  int32_t ok;
  const char *failure; /* NULL when ok */
  const char *clock;   /* "wall" | "device" */
  mi_stats_t latency_s;
  const char *samples_json; /* the kept samples, seconds */
  int32_t repeats, rounds, discarded;
  double prepare_s;
  uint64_t peak_memory_bytes; /* 0 = unknown */
  double energy_j;
  int32_t energy_source;     /* mi_energy_source */
  const char *accuracy_json; /* may be NULL */
  const char *layers_json;   /* may be NULL */
  /* Added (schema 3): the 1-minute load average when the measurement began, and `loaded` = 1
   * when it was above one runnable task per online CPU (taken under load). has_load 0: unknown. */
  int32_t has_load;
  double load1;
  int32_t loaded;
  /* Added (schema 5): a measurement whose samples were each paired with another configuration's
   * runs (mi_profile_t.paired_*; a tune pairs its trials with the default): the median of the
   * samples' ratios to them and their median time in seconds. has_paired 0: not paired. */
  int32_t has_paired;
  double paired_ratio;
  double paired_s;
} mi_record_t;

/** A row a query returns (borrowed for the callback). */
typedef struct mi_history_row {
  int64_t id;
  const char *model_hash;
  const char *device_hash;
  const char *stack_hash;
  const char *config_canonical;
  const char *config_hash;
  int32_t ok;
  const char *failure;
  double median_s, p90_s, cv;
  /* Added for resume: the rest of a trial's objectives and its model side. */
  const char *model_canonical; /* model-side configuration text, NULL when none */
  const char *input_shapes;
  uint64_t peak_memory_bytes; /* 0 = unknown */
  double energy_j;            /* NaN when absent */
  int32_t energy_source;      /* mi_energy_source */
  const char *accuracy_json;  /* NULL when absent */
  /* Added for retrieval across models and devices: the task's model features
   * (mi_model_features_json) and the device's fingerprint (mi_device_fingerprint_json) as
   * stored with the task and the device; NULL when the writer had none. */
  const char *model_features_json;
  const char *device_fingerprint_json;
  /* Added for the per-layer model: the measurement's layers as mi_profile_layers_json wrote
   * them (measurements.layers, in the schema since version 1); NULL when none were stored. */
  const char *layers_json;
  /* Added (schema 5): mi_record_t's paired_ratio and paired_s; NaN when not paired. */
  double paired_ratio, paired_s;
} mi_history_row_t;

typedef struct mi_history_query {
  const char *model_hash;  /* NULL = any */
  const char *device_hash; /* NULL = any */
  const char *stack_hash;  /* required for warm starts unless any_stack */
  int32_t any_stack;
  int32_t ok_only;
  int32_t limit;            /* 0 = no limit */
  const char *input_shapes; /* NULL = any workload; else the task's input shapes exactly */
} mi_history_query_t;

typedef int (*mi_history_row_fn)(void *user, const mi_history_row_t *row);

typedef struct mi_history_stats {
  int64_t runs, tasks, configs, stacks, devices, measurements, failed;
  int32_t schema_version;
} mi_history_stats_t;

/** Which records mi_history_prune drops: those that match every field set. */
typedef struct mi_history_prune {
  int32_t failed;     /* 1: only failed records */
  const char *model;  /* model hash, or the model's name as the recipe wrote it, or its
                       * file name; NULL = any */
  const char *device; /* device hash, device name or spec ("PLUGIN:INDEX"); NULL = any */
} mi_history_prune_t;

struct mi_ltask_row; /* metainfer/mi_ltask.h */

/** The store behind the log: a table of functions so another database can be added. */
typedef struct mi_store_ops {
  const char *name;
  int32_t (*open)(const char *where, void **state, mi_error_t *err);
  void (*close)(void *state);
  int32_t (*begin)(void *state, mi_error_t *err);
  int32_t (*commit)(void *state, mi_error_t *err);
  void (*rollback)(void *state);
  int32_t (*put_run)(void *state, const char *tool, const char *note, int64_t *id,
                     mi_error_t *err);
  int32_t (*put_measurement)(void *state, const mi_record_t *r, int64_t *id, mi_error_t *err);
  int32_t (*query)(void *state, const mi_history_query_t *q, mi_history_row_fn fn, void *user,
                   mi_error_t *err);
  int32_t (*stats)(void *state, mi_history_stats_t *out, mi_error_t *err);
  int32_t (*export_jsonl)(void *state, FILE *f, int64_t *count, mi_error_t *err);
  /* Imports one line; *added = 0 when the record was already there. */
  int32_t (*import_line)(void *state, const char *line, int *added, mi_error_t *err);
  /* Added, may be NULL (then pruning is unsupported): drops the matching records. */
  int32_t (*prune)(void *state, const mi_history_prune_t *p, int64_t *removed, mi_error_t *err);
  /* Added, may be NULL (then the store keeps no layer tasks): the layer-task table
   * (metainfer/mi_ltask.h), one row written, and rows read by device, stack, op and key. */
  int32_t (*ltask_put)(void *state, const struct mi_ltask_row *row, mi_error_t *err);
  int32_t (*ltask_query)(void *state, const char *device_hash, const char *stack_hash,
                         const char *op, const char *key,
                         int (*fn)(void *user, const struct mi_ltask_row *row), void *user,
                         mi_error_t *err);
} mi_store_ops_t;

/** The SQLite store (WAL, versioned schema, migrations). */
MI_API const mi_store_ops_t *mi_store_sqlite(void);

typedef struct mi_history mi_history_t;

/** Current schema version of the SQLite store, and of export lines. */
#define MI_HISTORY_SCHEMA_VERSION 5
#define MI_HISTORY_FORMAT_VERSION 1

/** Opens (creating and migrating) the log at `path` with the SQLite store. */
MI_API int32_t mi_history_open(const char *path, mi_history_t **out, mi_error_t *err);
/** Opens with any store. */
MI_API int32_t mi_history_open_store(const mi_store_ops_t *ops, const char *where,
                                     mi_history_t **out, mi_error_t *err);
MI_API void mi_history_close(mi_history_t *h);
/** Starts a run (one invocation of a tool); its id goes into each record. */
MI_API int32_t mi_history_begin_run(mi_history_t *h, const char *tool, const char *note,
                                    int64_t *run_id, mi_error_t *err);
/** Fills the measured part of a record from a profile: clock, latency statistics, repeats,
 * rounds, discarded samples, prepare time, peak memory (0 when no source measured it), energy
 * with its source, the machine's load, and layers. Returns the layers JSON that r->layers_json now points to; the
 * caller frees it after mi_history_put (NULL when out of memory: layers are then left out). */
MI_API char *mi_record_set_profile(mi_record_t *r, const mi_profile_t *p);
/** When the profile's session ran nodes on its fallback device (p->fallback_stack set), points
 * r->stack and r->stack_hash at r's stack with that fallback part (mi_stack_with_fallback),
 * written into buf (cap bytes) and hash[17], so that rows measured with different fallback
 * devices, or another version of one, are never mixed. Returns 1 when it did, else 0. */
MI_API int mi_record_set_fallback_stack(mi_record_t *r, const mi_profile_t *p, char *buf, size_t cap,
                                        char hash[17]);

/** Records one measurement in its own transaction, committed before it returns. */
MI_API int32_t mi_history_put(mi_history_t *h, const mi_record_t *r, int64_t *id,
                              mi_error_t *err);
MI_API int32_t mi_history_query(mi_history_t *h, const mi_history_query_t *q,
                                mi_history_row_fn fn, void *user, mi_error_t *err);
MI_API int32_t mi_history_stats(mi_history_t *h, mi_history_stats_t *out, mi_error_t *err);
/** Drops the records `p` selects (at least one of its fields must be set, so that a
 * mistyped command never empties the log) and the tasks and configurations left without
 * records; *removed = records dropped. */
MI_API int32_t mi_history_prune(mi_history_t *h, const mi_history_prune_t *p, int64_t *removed,
                                mi_error_t *err);
/** Writes every measurement as one JSON line with its format version. */
MI_API int32_t mi_history_export(mi_history_t *h, FILE *f, int64_t *count, mi_error_t *err);
/** Imports JSON lines; a bad line stops the import with "line N: why" (lines before it stay).
 * Records already present are skipped, so importing twice adds nothing. */
MI_API int32_t mi_history_import(mi_history_t *h, FILE *f, int64_t *added, int64_t *skipped,
                                 mi_error_t *err);

/** The canonical text of a hardware-side configuration: device knobs, then node choices sorted
 * by node name, knobs sorted by name. "default" when nothing is chosen. malloc'd. */
MI_API char *mi_config_canonical(const mi_session_options_t *o);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_MEASURE_H */
