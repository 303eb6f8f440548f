/* tune.h - what mi-host tune's files share: one (model, device) task, the evaluator that
 * measures in crash-isolated workers, the history glue, progress lines and the outputs. */
#ifndef MI_HOST_TUNE_H
#define MI_HOST_TUNE_H

#include <pthread.h>

#include "mi_host.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_transform.h"

/** A measurement already in the history for this task (resume). */
typedef struct mi_tune_known {
  char *hw;       /* hardware-side canonical text (mi_config_canonical) */
  char *model;    /* model-side canonical text (mi_xf_config_canonical), "" when none */
  int32_t ok;
  char *failure;
  double obj[MI_OBJ_COUNT];
} mi_tune_known_t;

/** Progress of the pool: one line per device, redrawn on a terminal. */
typedef struct mi_tune_progress {
  pthread_mutex_t lock;
  int tty, json;
  int32_t lines, drawn;
  char (*text)[160];
} mi_tune_progress_t;

/** One (model, device) being tuned. */
typedef struct mi_tune_task {
  const mi_recipe_t *recipe;
  const char *model_path;       /* ONNX file the worker loads */
  const char *inputs;           /* "name:1x3x32x32;..." from the recipe, or "" */
  const char *spec;             /* "PLUGIN:INDEX" */
  mi_worker_pool_t *pool;       /* this task's workers */
  int32_t repeats, warmup;
  int energy_modeled;           /* 1 once an energy figure came from a model */
  /* history (NULL when the recipe has none) */
  mi_history_t *history;
  int64_t run_id;
  const mi_record_t *base;      /* task, device and stack fields of every record */
  mi_tune_known_t *known;
  int32_t known_count;
  int32_t recorded;             /* records written */
  mi_search_options_t *search;  /* the search's options (tune_stop.c ends its time budget) */
  /* progress */
  mi_tune_progress_t *progress;
  int32_t line;
  int64_t budget;
  double best;                  /* best feasible first objective so far */
  int32_t first_objective;
  const mi_bound_t *bounds;
  int32_t bound_count;
  /* Added: the per-layer times of the last measurement mi_tune_evaluate made (none after a
   * failure or a farm measurement): layer_sec[i] seconds for graph node layer_node[i], NaN for a
   * folded node; the search fetches them through mi_tune_layer_times. Freed by
   * mi_tune_free_known. */
  int32_t layer_n, layer_cap;
  int32_t *layer_node;
  double *layer_sec;
} mi_tune_task_t;

/** mi_evaluate_fn for a mi_tune_task_t: the configuration measured in the device's worker,
 * then recorded in the history. */
int32_t mi_tune_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                         mi_error_t *err);
/** The search's layer_times (mi_search_options_t, added) for a mi_tune_task_t: the last
 * measurement's per-layer times by graph node, from its mi_profile_t.layers. */
int32_t mi_tune_layer_times(void *ctx, double *seconds, int32_t cap);
/** The search's lookup_point: a configuration already in the history for this task. */
int mi_tune_lookup(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                   int32_t *status, char *message);
/** Loads the task's known measurements from its history (same model, input shapes, device
 * and stack). */
int32_t mi_tune_load_known(mi_tune_task_t *t, mi_error_t *err);
void mi_tune_free_known(mi_tune_task_t *t);
/** Reads the known measurements again (after the layer-task rounds added some). */
int32_t mi_tune_reload_known(mi_tune_task_t *t, mi_error_t *err);

/** Past tasks of the history on the same stack, read into a new task's space (tune_sources.c). */
typedef struct mi_tune_sources {
  int32_t count;                 /* source tasks */
  int32_t rows;                  /* their configurations read into the space */
  mi_meta_task_t *tasks;
  int32_t **points;              /* per task, owned */
  double **obj;
  double desc[MI_META_DESC_SIZE]; /* the new task's descriptor */
  /* Added: per task, the per-layer times of its configurations (count x graph node_count, NaN
   * where none) when it is the same model as the new task on another device and the history
   * stored layers (owned; tasks[k].layer_latency points here); and how many configurations
   * came with layers. Other models' layers need their graphs, which the history does not keep. */
  double **layers;
  int32_t layer_rows;
} mi_tune_sources_t;

/** Loads every other task of the history on t's software stack (any model, device, workload)
 * with its measured configurations read into `s` (mi_space_from_canonical), and with `g` (the
 * new task's graph; may be NULL) the stored per-layer times of the sources that are g's model
 * on another device (their layers' node indices are g's) into out->layers, with
 * tasks[k].graph = g and tasks[k].layer_latency set. */
int32_t mi_tune_sources_load_graph(const mi_tune_task_t *t, const mi_space_t *s,
                                   const mi_model_features_t *mf, const mi_graph_t *g,
                                   mi_tune_sources_t *out, mi_error_t *err);
void mi_tune_sources_free(mi_tune_sources_t *s);

/* The result of one (model, device). */
typedef struct mi_tune_run {
  const char *model;
  int32_t model_index;
  char spec[96];
  char stack[512], stack_hash[17];
  char size[32];
  int32_t ok;
  char message[MI_ERROR_MESSAGE_SIZE];
  mi_space_t *space;
  mi_search_result_t *res;
  int32_t front_n;
  int32_t *front;
  double hv;
  int energy_modeled;
  int32_t pruned, probes;        /* variants the space left out after probing */
  uint64_t capacity;             /* device global memory, 0 unknown */
  int32_t verify_n;              /* re-measurements per front configuration (0: none) */
  int32_t *verify_bad;           /* per front entry: re-measurements that broke a bound */
  int32_t *verify_failed;        /* per front entry: re-measurements that failed */
  int32_t assigned;              /* 1: the capacity assignment put the model here */
  /* the surrogate-guided strategy (strategy meta) */
  int32_t meta;                  /* 1 when it ran */
  int32_t sources, source_rows;  /* past tasks and their configurations offered as priors */
  int32_t warm_points;           /* measured candidates that came from the sources */
  int32_t cold_fallback;         /* 1: sources dropped as misleading */
  int32_t best_at;               /* measurement (1-based, this run) that found the best; 0 none */
  double last_spearman;          /* last round's predicted-vs-measured rank correlation */
  /* the warm start's saving (docs/meta.md, "What the warm start saved") */
  int32_t within5_at;            /* measurement that came within 5% of the final best; 0 none */
  double cold_estimate;          /* measurements a cold random search needs for that; NAN unknown */
  int32_t warm_trusted;          /* 0: the warm points failed the check against the cold design */
  /* Added, the per-layer base model (docs/meta.md): 1 when built, its layer rows, the sources'
   * configurations that came with per-layer times, this run's measurements that did, and its
   * weight in the last round (NAN: took no part). */
  int32_t layer_model, layer_rows, layer_configs, layer_trials;
  double layer_weight;
  /* Added: the model's graph the space was built on (node op types for the report); owned by
   * mi-host tune, alive until after mi_tune_write. NULL: unknown. */
  const mi_graph_t *graph;
  int32_t recorded;              /* measurements this run wrote to the history */
  /* Added, the end-of-tune check (tune_confirm.c): the chosen configuration against the default
   * (and the runner-up of the front) in paired rounds. confirm: 0 not done, 1 compared, 2 the
   * search chose the default itself; default_trial the default's trial (-1 none); vs_default
   * is chosen/default latency (after the decision); deployed_default 1 when the tuned choice
   * was not significantly faster and the default was deployed instead; runner_up_swapped 1
   * when the runner-up was significantly faster and took the lead. */
  int32_t confirm, default_trial, deployed_default, runner_up_swapped, has_runner_up;
  mi_compare_ratio_t vs_default, vs_runner_up;
  int32_t confirm_rounds, confirm_loaded, confirm_measurements;
  double confirm_s;
  char confirm_note[256];         /* why the check was not done, when it was not */
  /* Added, layer tasks (tune_ltask.c): the model's tasks on the device and the nodes that have
   * them; tasks taken from the history, warm-started from nearest tasks, measured; (task,
   * choice) pairs measured in how many whole-model rounds; tasks whose best is not the default;
   * log10 sizes of the model side, the device level and the kernel side the tasks replaced. */
  int32_t ltasks, ltask_nodes, ltask_reused, ltask_warm, ltask_measured;
  int32_t ltask_layer_measurements, ltask_rounds, ltask_improved;
  double ltask_log10_model, ltask_log10_device, ltask_log10_kernel;
} mi_tune_run_t;

/** The layer-task phase before the joint search (tune_ltask.c): tunes the model's layer tasks
 * on the device (history first), fills run's ltask fields, and gives the kernel dimensions to
 * hold (*frozen) and the point holding each task's best (*fixed); both malloc'd, NULL when the
 * model has no layer task. */
int32_t mi_tune_ltasks(mi_tune_task_t *task, mi_tune_run_t *run, const mi_graph_t *g,
                       const char *device_hash, int quiet, uint8_t **frozen, int32_t **fixed,
                       mi_error_t *err);

/** Writes deployment.yaml, pareto.json, one SVG per run and report.html into `out`; with
 * `json`, also one JSON summary on stdout. MI_HOST_OK or MI_HOST_FAIL. */
int mi_tune_write(const mi_recipe_t *r, const char *out, mi_tune_run_t *runs, int32_t n, int json);

/** Writes DIR/deployment.yaml through mi_deploy_write (escaped, read back and verified before it
 * replaces the file); 1 on success, else 0 after one line on stderr (tune_table.c). */
int mi_tune_write_table(const mi_recipe_t *r, const char *dir, mi_tune_run_t *runs, int32_t n);

/** The Pareto plot of one run as an SVG element (tune_plot.c). */
void mi_tune_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run);
/** The self-contained report page (tune_html.c). */
void mi_tune_html(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n);

/* Progress (tune_progress.c). */
int32_t mi_tune_progress_init(mi_tune_progress_t *p, int32_t lines, int json);
void mi_tune_progress_free(mi_tune_progress_t *p);
/** Sets line `line` and redraws (terminal) or prints it as one log line (otherwise). */
void mi_tune_progress_set(mi_tune_progress_t *p, int32_t line, int log, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** mi_progress_fn for a mi_tune_task_t. */
void mi_tune_progress_trial(void *ctx, const mi_trial_t *t, int32_t used, int64_t budget,
                            double elapsed_s);

/* How a tune ends (tune_stop.c). */
/** SIGINT and SIGTERM set the stop flag instead of killing the tune. */
void mi_tune_stop_install(void);
/** The signal that asked the tune to stop, or 0. */
int mi_tune_stopped(void);
/** 1 when the tune was asked to stop; then also ends the task's search at its next check. */
int mi_tune_stop_search(mi_tune_task_t *t);
/** Successful trials of a run (replayed ones included). */
int mi_tune_succeeded(const mi_tune_run_t *run);
/** The first model of the recipe without a successful trial on any device, or -1. */
int32_t mi_tune_failed_model(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n);
/** One line saying why model `m` got nothing: each device's error or last failure. */
void mi_tune_failure_text(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n, int32_t m,
                          char *buf, size_t cap);
/** After the outputs: on an interrupt prints what the history kept and returns 130; when a
 * model got nothing prints why and returns MI_HOST_FAIL; else MI_HOST_OK. */
int mi_tune_finish(const mi_recipe_t *r, const char *history, mi_tune_run_t *runs, int32_t n,
                   int json);
/** Measures the points `pts` of space `s` (count of them, 2..MI_COMPARE_MAX_CONFIGS) in
 * paired rounds in fresh workers of `pool` (tune_confirm.c; mi-host compare uses it too). */
int32_t mi_tune_compare_points(mi_worker_pool_t *pool, const char *spec, const mi_space_t *s,
                               const mi_worker_config_t *base, const int32_t *const *pts,
                               int32_t count, const mi_measure_options_t *mo,
                               const mi_compare_options_t *co, mi_compare_result_t *out,
                               mi_error_t *err);
/** The end-of-tune check: the chosen configuration (front[0]) against the default and the
 * runner-up (front[1]) in paired rounds; with latency as the first preference the default is
 * deployed when the choice is not significantly faster, and a significantly faster runner-up
 * takes the lead. Fills run's confirm fields; says what it did on stderr unless `quiet`. */
void mi_tune_confirm(mi_tune_task_t *task, mi_tune_run_t *run, int32_t first_preference,
                     int quiet);
/** The check's one line for the terminal ("tuned 1.24x faster than default (95% CI
 * 1.21-1.27)"), into buf. */
void mi_tune_confirm_text(const mi_tune_run_t *run, char *buf, size_t cap);

/** Greedy assignment of models to devices by capacity (tune_assign.c): sets runs[].assigned. */
void mi_tune_assign(const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n);

#endif
