/* mi_run.h - shared declarations of the mi-run tool: options, inputs, reporting. */
#ifndef MI_RUN_H
#define MI_RUN_H

#include <stdio.h>

#include "metainfer/mi.h"

/* Command-line options; strings point into argv. */
typedef struct run_opts {
  const char *plugins_dir;
  const char *model;
  const char *device;
  const char *output_dir;
  const char *config;   /* --config: a model-side transform configuration (YAML) */
  const char *fallback; /* --fallback: 'ref' or PLUGIN:INDEX; NULL: the default device */
  const char **inputs;  /* NAME=FILE.npy */
  int input_count;
  const char **shapes; /* NAME=D0,D1,... */
  int shape_count;
  const char **values; /* --value NAME=V0,V1,...: inputs fixed to constants */
  int value_count;
  int repeat;    /* timed runs; 0 when --repeat was not given (one untimed-by-request run) */
  int warmup;    /* -1: default */
  double gap_ms; /* --gap: idle time before each run (0: back to back) */
  int threads;   /* 0: not given */
  int json;
  int profile;   /* --profile: the per-layer table after the summary */
  int timeout_s; /* --timeout: deadline of one plugin step in the guarded child; 0: none */
  int check;     /* --check: the last run's outputs against the reference interpreter's */
  uint64_t seed;
} run_opts_t;

/* Parses argv into o: 1 to run; 0 to exit with *status (0 after --help or --version, 2 after a
 * one-line message about a bad command line). */
int run_parse_args(int argc, char **argv, run_opts_t *o, int *status);
void run_free_args(run_opts_t *o);

/* Makes the --value inputs constants (mi_graph_input_values); one given --input or --shape too
 * is an error. */
int32_t run_fix_values(mi_graph_t *g, const run_opts_t *o, mi_error_t *err);
/* Builds one array per graph input (graph input order) from --input files, --shape sizes and
 * deterministic random data, checks them against the model, and writes their shapes into the
 * graph's input tensors so shape inference sees concrete dims. */
int32_t run_prepare_inputs(mi_graph_t *g, const run_opts_t *o, mi_array_t ***out,
                           mi_error_t *err);

/* Latency statistics over timed runs, in milliseconds. */
typedef struct run_stats {
  double median, p10, p90, cv, mean;
  int count;
} run_stats_t;
void run_stats_compute(const double *samples, int n, run_stats_t *out);

/* Writes each output as DIR/<sanitized name>.npy (DIR is created when missing). */
int32_t run_write_outputs(const mi_graph_t *g, const char *dir, mi_array_t *const *outputs,
                          mi_error_t *err);

/* What --config did: the passes that ran and their statistics. */
typedef struct run_xf {
  int applied;
  uint64_t hash;
  int calib_samples; /* deterministic random calibration samples (INT8 activations) */
  int fold_bn, fuse, layout, block, channel_align;
  mi_xf_stats_t st;
} run_xf_t;

/* Loads o->config and applies it to *g (replaced by the transformed graph); fusion uses the
 * variants of `p` (none on the reference interpreter). */
int32_t run_apply_config(mi_graph_t **g, const run_opts_t *o, const mi_plugin_t *p,
                         uint32_t device, run_xf_t *out, mi_error_t *err);
/* The passes that ran: lines of text, or a ", \"transform\": {...}" JSON member. */
void run_print_passes(FILE *f, const run_xf_t *x, int json);

/* What the summary reports. */
typedef struct run_summary {
  const run_opts_t *opts;
  const mi_graph_t *g;
  mi_array_t *const *outputs;
  const mi_session_t *session;
  run_stats_t latency;
  run_stats_t cpu_time; /* the process's CPU time per timed run (all its threads) */
  int warmup;
  int has_device_time;
  run_stats_t device_time;
  int32_t folded;              /* nodes removed by constant folding */
  const run_xf_t *xf;          /* NULL without --config */
  const struct run_prof *prof; /* NULL without --profile */
  const char *fallback;        /* the fallback device as PLUGIN:INDEX, NULL for none */
  int checked;                 /* --check was done (and passed: a failure ends the run) */
  double check_error;          /* the worst output's relative L2 error (mi_outputs_check_graph) */
  int64_t check_flipped;       /* elements of discrete outputs set aside by it (moved peaks) */
  /* The process's resident memory (/proc/self/status, bytes; 0 where unreadable): VmRSS just
   * before the session is created, with the peak reset there, and VmHWM after the last run: what
   * create and the runs made resident (weights, kernel state, buffers, host copies). */
  uint64_t rss_before_create, rss_peak;
  int avx512_timed; /* run_avx512_within over the timed runs: 1, 0, -1 unknown */
} run_summary_t;
/* Whether a thread of this process ran AVX-512 code in the last `ms` milliseconds by the
 * kernel's record (archstat.c: recorded when a thread is switched out): 1 yes, 0 no, -1 where
 * the kernel keeps no such record (not x86 Linux, a CPU without AVX-512). */
int run_avx512_within(double ms);
/* Print the summary (and the --profile table); fail only when the table cannot be built. */
int32_t run_print_summary(FILE *f, const run_summary_t *s, mi_error_t *err);
int32_t run_print_json(FILE *f, const run_summary_t *s, mi_error_t *err);
/* A JSON string literal: quotes, backslashes and control characters escaped. */
void run_json_string(FILE *f, const char *str);

/* --profile (profile.c): each node's wall time per timed run, `ms[run * nodes + node]`, negative
 * where the node did not run on its own; `sub`: the same for each If branch that ran as a
 * nested session (mi_session_nested), keyed by the If node and the branch. */
typedef struct run_prof {
  int32_t nodes;
  int runs, cap;
  double *ms;
  int32_t node;       /* for a branch: the If node of the graph around it */
  const char *branch; /* for a branch: "then" or "else" */
  const mi_graph_t *g;
  const mi_session_t *s; /* for a branch: its session in the last run that ran it */
  int32_t sub_count;
  struct run_prof *sub;
} run_prof_t;
int32_t run_prof_init(run_prof_t *p, const mi_graph_t *g, int runs, mi_error_t *err);
void run_prof_take(run_prof_t *p, const mi_session_t *s);
/* The table (text), or a ", \"profile\": {...}" JSON member. */
int32_t run_prof_print(FILE *f, const run_prof_t *p, const run_summary_t *sum, int json,
                       mi_error_t *err);
void run_prof_free(run_prof_t *p);

/* guard.c: runs the rest of mi-run in a guarded child (mi_guard_begin) with a deadline of
 * `timeout_s` per step: 1 in the child (*g set), 0 in the parent once the child is gone, with
 * *status the exit status (after one line on stderr when plugin code crashed, hung or exited). */
#define RUN_DEFAULT_TIMEOUT_S 60
int run_guard(double timeout_s, mi_guard_t **g, int *status);
/* mi-run's own stdout: a copy of fd 1, which then points at stderr, so that what plugins print
 * is logged, never mixed into the output. stdout itself when that cannot be done. */
FILE *run_own_stdout(void);
/* Flushes (and closes, unless it is stdout) the output; MI_ERR_IO when it failed. */
int32_t run_close_stdout(FILE *out, mi_error_t *err);
/* Loads the plugins of `dir` (mi_plugin_path) after each passes mi_worker_preflight, naming the
 * load steps to `g`; with `spec` (PLUGIN:INDEX), only that plugin, resolved into *plugin and
 * *device, and a refusal or absence is one line naming it. */
int32_t run_load_plugins(mi_registry_t *reg, const char *dir, const char *spec, mi_guard_t *g,
                         mi_plugin_t **plugin, uint32_t *device, mi_error_t *err);

/* Loads the plugin of the device that runs the nodes `primary`'s device refuses: `spec`
 * (PLUGIN:INDEX; an unknown one is one line naming it), none for "ref", or by default the first
 * CPU plugin by name (mi_registry_cpu_fallback), loading only the candidates. *fb NULL: the
 * reference interpreter runs them. */
int32_t run_load_fallback(mi_registry_t *reg, const char *dir, const char *spec,
                          const mi_plugin_t *primary, uint32_t device, mi_guard_t *g,
                          mi_plugin_t **fb, uint32_t *fb_device, mi_error_t *err);

/* --deployment (run_deployment.c): true when argv asks for it; the whole command then. */
int mi_run_wants_deployment(int argc, char **argv);
int mi_run_deployment_main(int argc, char **argv);

#endif
