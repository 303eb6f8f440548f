/* mi_tuner.h - the tuner as a library call: a recipe in; per (model, device) the search's trials,
 * its Pareto front and the end-of-tune check against the default out, every measurement
 * recorded in the recipe's history; progress, trials and log lines through callbacks (the
 * library prints nothing). mi-host tune is a thin caller (docs/tuning.md, docs/architecture.md). */
#ifndef METAINFER_MI_TUNER_H
#define METAINFER_MI_TUNER_H

#include "metainfer/mi_measure.h"
#include "metainfer/mi_tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How many more trials than the choice and the runner-up join the end-of-tune check: the two
 * next fastest, the precision greedy's longest prefix within the bound, and the fastest on other
 * device-level settings (tune_confirm.c). */
#define MI_TUNE_EXTRAS 4

/** One block's own accuracy drop, measured on the device for the precision greedy's order
 * (mi_search_options_t.drops): the default with only that block's layers at one label. */
typedef struct mi_tune_sens {
  char layer[128]; /* its first layer's node name */
  int32_t layers;  /* layers in the block */
  char label[16];  /* the precision label, e.g. "bf16" */
  double drop;     /* its accuracy drop (the recipe's metric) */
} mi_tune_sens_t;

/* The result of one (model, device). */
typedef struct mi_tune_run {
  const char *model;
  int32_t model_index;
  char spec[96];
  char stack[512], stack_hash[17];
  char fallback[96]; /* where the workers ran the nodes the device refused: PLUGIN:INDEX or "ref" */
  char size[32];
  int32_t ok;
  char message[MI_ERROR_MESSAGE_SIZE];
  mi_space_t *space;
  mi_search_result_t *res;
  int32_t front_n;
  int32_t *front;
  double hv;
  int energy_modeled;
  int32_t pruned, probes; /* variants the space left out after probing */
  uint64_t capacity;      /* device global memory, 0 unknown */
  int32_t verify_n;       /* re-measurements per front configuration (0: none) */
  int32_t *verify_bad;    /* per front entry: re-measurements that broke a bound */
  int32_t *verify_failed; /* per front entry: re-measurements that failed */
  int32_t assigned;       /* 1: the capacity assignment put the model here */
  /* the surrogate-guided strategy (strategy meta) */
  int32_t meta;                 /* 1 when it ran */
  int32_t sources, source_rows; /* past tasks and their configurations offered as priors */
  int32_t warm_points;          /* measured candidates that came from the sources */
  int32_t cold_fallback;        /* 1: sources dropped as misleading */
  int32_t best_at;              /* measurement (1-based, this run) that found the best; 0 none */
  double last_spearman;         /* last round's predicted-vs-measured rank correlation */
  /* the warm start's saving (docs/meta.md, "What the warm start saved") */
  int32_t within5_at;   /* measurement that came within 5% of the final best; 0 none */
  double cold_estimate; /* measurements a cold random search needs for that; NAN unknown */
  int32_t warm_trusted; /* 0: the warm points failed the check against the cold design */
  /* Added, the per-layer base model (docs/meta.md): 1 when built, its layer rows, the sources'
   * configurations that came with per-layer times, this run's measurements that did, and its
   * weight in the last round (NAN: took no part). */
  int32_t layer_model, layer_rows, layer_configs, layer_trials;
  double layer_weight;
  /* Added: the model's graph the space was built on (node op types for the report); owned by
   * mi-host tune, alive until after mi_tune_write. NULL: unknown. */
  const mi_graph_t *graph;
  int32_t recorded; /* measurements this run wrote to the history */
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
  char confirm_note[256]; /* why the check was not done, when it was not */
  /* Added, layer tasks (tune_ltask.c): the model's tasks on the device and the nodes that have
   * them; tasks taken from the history, warm-started from nearest tasks, measured; (task,
   * choice) pairs measured in how many whole-model rounds; tasks whose best is not the default;
   * log10 sizes of the model side, the device level and the kernel side the tasks replaced. */
  int32_t ltasks, ltask_nodes, ltask_reused, ltask_warm, ltask_measured;
  int32_t ltask_layer_measurements, ltask_rounds, ltask_improved;
  double ltask_log10_model, ltask_log10_device, ltask_log10_kernel;
  /* Added, the nearest-task warm start (mi_ltask_result_t): of ltask_warm, the tasks whose
   * neighbours agreed on a best; tasks measured with no neighbour; the layer measurements of
   * the warm tasks; and what a run with no history would measure on this model. */
  int32_t ltask_agreed, ltask_cold, ltask_warm_layer_measurements, ltask_cold_run_layer_measurements;
  /* Added, the layer tasks' knob stage: its whole-model rounds and layer measurements (both
   * counted in the figures above too) and the tasks whose best it found. */
  int32_t ltask_knob_rounds, ltask_knob_measurements, ltask_knob_improved;
  /* Added, the accuracy screen (mi_meta_report_t): candidates dropped as predicted over the
   * accuracy bound, split moves measured. */
  int32_t acc_screened, split_moves;
  /* Added, the end-of-tune check when the search chose the default itself: the trial pitted
   * against it in paired rounds (mi_tune_contender; -1 none) and contender/default latency from
   * those rounds. A significantly faster contender leads (confirm 1), else confirm stays 2. */
  int32_t contender;
  mi_compare_ratio_t vs_contender;
  /* Added, the recipe's seconds (budget.seconds) as shares of one (model, device) tune: the
   * budget, the wall time the tune took (space to paired check), and what the time cut: layer
   * task variant rounds and knob rounds not run, the search's measurements left of its count,
   * and 1 when the paired check got less than its usual 60 s. */
  double time_budget_s, time_used_s;
  int32_t cut_variant_rounds, cut_knob_rounds, cut_search, cut_confirm;
  /* Added: the next fastest feasible trials (single medians, mi_tune_contenders) that joined the
   * paired check besides the choice, the runner-up and the default, so that the choice does not
   * rest on one noisy median (the minimum of ~30 is biased low); extra_lead is the one of them
   * that led, significantly faster than the default and than the other choices (-1 none). */
  int32_t extras, extra[MI_TUNE_EXTRAS], extra_lead;
  /* Added: the per-layer precision greedy's steps measured (mi_meta_report_t.greedy_moves). */
  int32_t greedy_moves;
  /* Added: the blocks whose own drop the greedy had measured, in the order measured (owned;
   * freed by mi_tune_result_destroy). */
  int32_t sens_count;
  mi_tune_sens_t *sens;
  /* Added: the greedy's longest prefix within the accuracy bound (mi_meta_report_t.greedy_best;
   * -1 none); it joins the end-of-tune check as an extra whatever its single median. */
  int32_t greedy_trial;
  /* Added: each extra's latency over the default's in the paired check (extra[i] / default;
   * set for the run->extras that ran in it). */
  mi_compare_ratio_t vs_extra[MI_TUNE_EXTRAS];
  /* Added: the device-level moves measured on the best point (mi_meta_report_t.device_moves). */
  int32_t device_moves;
  /* Added: the measurements of this run paired with the default (docs/tuning.md, "Paired
   * trials"; 0 none), and the default's paired time (ms): the reference every trial's latency is
   * scaled to (the first paired record the search met, measured or replayed from the history),
   * and the least and most over this run's measurements: how far the machine's speed moved. */
  int32_t paired;
  double paired_first_ms, paired_min_ms, paired_max_ms;
  /* Added: slow phases (docs/tuning.md, "Slow phases"): the measurements taken again because the
   * default beside them read over 1.1x its least of the last 15 s (or to settle that floor at
   * the first), the extra takes and the seconds they took. */
  int32_t retaken, retakes;
  double retake_s;
} mi_tune_run_t;

/** What a log line is: INFO lines tell what the tune did and decided (a caller printing JSON
 * may drop them), NOTE lines say something about the recipe's inputs that holds either way. */
enum { MI_TUNE_LOG_INFO = 0,
       MI_TUNE_LOG_NOTE = 1 };

/** How mi_tune_run reports while it runs; every member may be NULL. Called from the threads
 * that tune devices (options.jobs > 1: several at once), so a callback locks what it shares. */
typedef struct mi_tune_callbacks {
  uint32_t struct_size;
  void *user;
  /** The status of device `line` (its index in the recipe's pool) changed to `text`, e.g.
   * "blis-cpu:0        3/6   measured  best latency 0.12 ...". `log` is 1 when the change is
   * worth a log line, 0 for a transient state that only a redrawn terminal line shows. */
  void (*progress)(void *user, int32_t line, int log, const char *text);
  /** A trial of device `spec` was measured or replayed (after its progress line). */
  void (*trial)(void *user, const char *spec, const mi_trial_t *trial);
  /** Model `index` (of `count`) starts on `devices` devices. */
  void (*model)(void *user, int32_t index, int32_t count, const char *name, int32_t devices);
  /** One line of what the tune did or decided, without a trailing newline. */
  void (*log)(void *user, int kind, const char *text);
  /** Non-zero asks the tune to stop at its next measurement (e.g. the value of a Ctrl-C);
   * every measurement made so far stays in the history. */
  int (*stop)(void *user);
} mi_tune_callbacks_t;

typedef struct mi_tune_options {
  uint32_t struct_size;
  mi_registry_t *registry; /* the plugins the recipe's pool names (required) */
  const char *plugin_path; /* folders the measurement workers load plugins from
                            * (mi_plugin_path; NULL: the workers' default) */
  int32_t verify;          /* re-measure each front configuration N times (0: not) */
  int32_t jobs;            /* devices tuned at once, each with its own workers (default 1) */
  double timeout_s;        /* per measurement; 0: the recipe's measure.timeout_s */
  int agents;              /* 1: measurements go to the farm (needs a postgresql:// history) */
  int no_layer_tasks;      /* 1: search every node's kernel choice in the joint space */
  /* Added: where the measurement workers run the nodes a device refuses
   * (mi_worker_options_t.fallback): "PLUGIN:INDEX", "ref", or NULL for the default pick
   * (mi_registry_cpu_fallback). With `agents` each agent's own applies. */
  const char *fallback;
} mi_tune_options_t;

MI_API void mi_tune_options_default(mi_tune_options_t *o);

/** What mi_tune_run leaves: one run per (model, device), model-major in the recipe's order. */
typedef struct mi_tune_result {
  int32_t count; /* runs filled (fewer than models x devices when stopped) */
  mi_tune_run_t *runs;
  int32_t model_count;
  mi_graph_t **graphs; /* per model, the graph its runs were tuned on (run.graph) */
  int stopped;         /* the stop callback's value when it ended the tune, else 0 */
} mi_tune_result_t;

/** Tunes every model of recipe `r` on every device of its pool: per (model, device) the joint
 * space, layer tasks, the search (strategy `meta` by default, warm-started from the history),
 * the front, the check against the default in paired rounds and `verify` re-measurements; then
 * the assignment of models to devices by capacity. Every measurement goes to r->history when
 * it names one. A device that fails leaves its run with ok 0 and a message; an error is
 * returned only when the tune could not start (a model that does not load, a history that does
 * not open) and then *out is NULL. */
MI_API int32_t mi_tune_run(const mi_recipe_t *r, const mi_tune_options_t *o,
                           const mi_tune_callbacks_t *cb, mi_tune_result_t **out,
                           mi_error_t *err);
MI_API void mi_tune_result_destroy(mi_tune_result_t *res);

/** Writes DIR/deployment.yaml of the runs through mi_deploy_write (escaped, read back and
 * verified before it replaces the file): the front of each run, the recipe by its absolute path
 * and the input shapes the models were tuned at (so mi-run --deployment works from any folder). */
MI_API int32_t mi_tune_write_table(const mi_recipe_t *r, const char *dir,
                                   const mi_tune_run_t *runs, int32_t n, mi_error_t *err);

/** Greedy assignment of models to devices by capacity: sets runs[].assigned. */
MI_API void mi_tune_assign(const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n);
/** Successful trials of a run (replayed ones included). */
MI_API int mi_tune_succeeded(const mi_tune_run_t *run);
/** The first model of the recipe without a successful trial on any device, or -1. */
MI_API int32_t mi_tune_failed_model(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n);
/** One line saying why model `m` got nothing: each device's error or last failure. */
MI_API void mi_tune_failure_text(const mi_recipe_t *r, const mi_tune_run_t *runs, int32_t n,
                                 int32_t m, char *buf, size_t cap);
/** The end-of-tune check's one line ("tuned 1.24x faster than default (95% CI 1.21-1.27)"). */
MI_API void mi_tune_confirm_text(const mi_tune_run_t *run, char *buf, size_t cap);
/** The trial the end-of-tune check pits against the default when the search chose the default:
 * the fastest (latency) successful trial of `res` within the bounds that is not the default
 * (`default_hash`); -1 when there is none. */
MI_API int32_t mi_tune_contender(const mi_search_result_t *res, uint64_t default_hash,
                                 const mi_bound_t *bounds, int32_t bound_count);
/** The `cap` fastest (latency) successful trials of `res` within the bounds, one per
 * configuration (hash), that are not the default nor a hash in skip[0..nskip); their indices into
 * out[], fastest first; returns how many. */
MI_API int32_t mi_tune_contenders(const mi_search_result_t *res, uint64_t default_hash,
                                  const mi_bound_t *bounds, int32_t bound_count,
                                  const uint64_t *skip, int32_t nskip, int32_t *out, int32_t cap);
/** The fastest (latency) successful trial of `res` within the bounds, not the default, whose
 * values on the dimensions dev_dims[0..ndev) (the device-level knobs) differ from those of every
 * trial in taken[0..ntaken) (indices into res); -1 when there is none. */
MI_API int32_t mi_tune_other_device(const mi_search_result_t *res, const int32_t *dev_dims, int32_t ndev,
                                    uint64_t default_hash, const mi_bound_t *bounds, int32_t bound_count,
                                    const int32_t *taken, int32_t ntaken);
/** Measures the points `pts` of space `s` (count of them, 2..MI_COMPARE_MAX_CONFIGS) in
 * paired rounds in fresh workers of `pool` (the end-of-tune check; mi-host compare too). */
MI_API int32_t mi_tune_compare_points(mi_worker_pool_t *pool, const char *spec,
                                      const mi_space_t *s, const mi_worker_config_t *base,
                                      const int32_t *const *pts, int32_t count,
                                      const mi_measure_options_t *mo,
                                      const mi_compare_options_t *co, mi_compare_result_t *out,
                                      mi_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
