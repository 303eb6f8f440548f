/* mi_tune.h - the joint search space, Pareto selection, YAML recipes and search strategies. */
#ifndef METAINFER_MI_TUNE_H
#define METAINFER_MI_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi_core.h"
#include "metainfer/mi_graph.h"
#include "metainfer/mi_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mi_plugin;
struct mi_registry;
struct mi_session_options;
struct mi_xf_config;

/* ---------------------------------------------------------------- the joint search space */

/** What a dimension chooses. */
typedef enum mi_dim_kind {
  MI_DIM_VARIANT = 0, /* the kernel variant of one node; value 0 is MI_SPACE_VARIANT_AUTO */
  MI_DIM_KNOB = 1,    /* a plugin knob: device scope (one value) or per node */
  MI_DIM_MODEL = 2    /* a model-side choice (precision, pruning, fusion, layout, BN folding) */
} mi_dim_kind;

/** The label of every variant dimension's first (default) value: no variant is named and the
 * plugin chooses the node's kernel and its knobs, exactly as mi-run does without a
 * configuration. A node's knob dimensions are inactive while its variant is auto. */
#define MI_SPACE_VARIANT_AUTO "auto"

/** Model-side dimensions to include (bits of mi_space_options_t.model_dims). */
enum {
  MI_SPACE_PRECISION = 1u << 0, /* per weighted layer: fp32, fp16, int8 per tensor / channel */
  MI_SPACE_PRUNE = 1u << 1,     /* per Conv layer: share of output channels removed */
  MI_SPACE_FUSE = 1u << 2,      /* whole model: group chains the variants can run fused */
  MI_SPACE_LAYOUT = 1u << 3,    /* whole model: NCHW or NHWC activations */
  MI_SPACE_FOLD_BN = 1u << 4,   /* whole model: fold BatchNormalization into the conv */
  MI_SPACE_MODEL_ALL = 0x1f
};

/** How to build a space. Fill with mi_space_options_default, then change fields. */
typedef struct mi_space_options {
  uint32_t struct_size;
  uint32_t model_dims;  /* MI_SPACE_* bits */
  int32_t int_levels;   /* an integer range wider than this is cut to this many values */
  int32_t float_levels; /* a float range becomes this many evenly spaced values */
  int32_t prune_levels; /* pruning ratios 0, 0.5/(n-1), ..., 0.5 (n values) */
  int32_t no_probe;     /* 1: do not ask kernel_prepare which variants accept each node */
  /* With probe_pool set, the probes run in device probe_spec's worker (mi_worker_probe) on the
   * model file probe_model with input shapes probe_inputs (NULL: as in the file), so no plugin
   * code runs in the caller and a probe that crashes or hangs fails the build with the reason.
   * NULL: the probes call the plugin in the caller's process. */
  struct mi_worker_pool *probe_pool;
  const char *probe_spec, *probe_model, *probe_inputs;
} mi_space_options_t;

MI_API void mi_space_options_default(mi_space_options_t *o);

/** The joint space of one (model, device): a list of discrete dimensions. A point is an
 * array of mi_space_dim_count() value indices. */
typedef struct mi_space mi_space_t;

/** Builds the space of graph `g` (shapes inferred, sorted) on `device` of `plugin` from what
 * the plugin declares. The graph and plugin must outlive the space. `opts` may be NULL. */
MI_API int32_t mi_space_create(const mi_graph_t *g, const struct mi_plugin *plugin,
                               uint32_t device, const mi_space_options_t *opts,
                               mi_space_t **out, mi_error_t *err);
MI_API void mi_space_destroy(mi_space_t *s);
/** The workers of opts.probe_pool are going away: from now on check_config is answered from
 * what was already asked of them, else by the plugin in this process (a stand-in described in
 * isolation refuses). Call before destroying the pool when the space outlives it. */
MI_API void mi_space_detach_pool(mi_space_t *s);
/** Why the first check_config question sent to the device's worker got no answer (it crashed,
 * hung, printed to stdout, was quarantined), or NULL when every one was answered. */
MI_API const char *mi_space_ask_failure(const mi_space_t *s);

MI_API int32_t mi_space_dim_count(const mi_space_t *s);
/** The dimension's canonical key ("device.threads", "node.conv1.variant", "model.fuse",
 * "node.conv1.precision", "node.conv1.knob.tile"), its kind, node (-1 when global) and size. */
MI_API const char *mi_space_dim_name(const mi_space_t *s, int32_t d);
MI_API int32_t mi_space_dim_kind(const mi_space_t *s, int32_t d);
MI_API int32_t mi_space_dim_node(const mi_space_t *s, int32_t d);
MI_API int32_t mi_space_dim_size(const mi_space_t *s, int32_t d);
/** Text of value `v` of dimension `d` ("conv.im2col_gemm", "4", "int8_channel"). */
MI_API const char *mi_space_dim_label(const mi_space_t *s, int32_t d, int32_t v);
/** log10 of the number of configurations (product of dimension sizes, inactive ones
 * included: an upper bound that is exact when no dimension depends on another). */
MI_API double mi_space_log10_size(const mi_space_t *s);
/** The number of distinct valid-looking points when it fits in 2^62, else -1 (for the
 * exhaustive strategy: counts active combinations only). */
MI_API int64_t mi_space_exact_size(const mi_space_t *s);
/** (node, variant) pairs left out because the plugin's kernel_prepare refused the node with
 * the variant's default knobs, probed once per distinct node signature at build time; the
 * number of kernel_prepare probes in *probes (may be NULL). */
MI_API int32_t mi_space_pruned_variants(const mi_space_t *s, int32_t *probes);
/** Reads a measured configuration back into a point of `s`, which may belong to another
 * model or device: `hw` is the hardware side as mi_config_canonical writes it, `xf` the model
 * side as mi_xf_config_canonical writes it (either may be NULL). Device knobs and nodes match
 * by name; a node `s` has that the text does not name takes the choice of the source node at
 * the nearest relative position whose variant it also offers; weighted layers not named take
 * the source's prevailing precision; knob values the nearest level; the rest the defaults.
 * Then repaired. *matched (may be NULL) counts the dimensions set from the text. */
MI_API int32_t mi_space_from_canonical(const mi_space_t *s, const char *hw, const char *xf,
                                       int32_t *pt, int32_t *matched, mi_error_t *err);
/** Writes "10^143" style text (or the plain number below a million) into buf. */
MI_API void mi_space_size_text(const mi_space_t *s, char *buf, size_t cap);

/** Whether dimension `d` matters in `pt` (a knob the chosen variant does not read does not). */
MI_API int mi_space_active(const mi_space_t *s, const int32_t *pt, int32_t d);

/** The plugin's defaults and the model unchanged. */
MI_API void mi_space_default(const mi_space_t *s, int32_t *pt);
/** A uniform sample, then repaired. MI_OK or MI_ERR_INVALID_CONFIG when repair failed. */
MI_API int32_t mi_space_sample(const mi_space_t *s, mi_rng_t *rng, int32_t *pt, mi_error_t *err);
/** Changes each active dimension with probability `prob` (at least one), then repairs. */
MI_API int32_t mi_space_mutate(const mi_space_t *s, mi_rng_t *rng, double prob, int32_t *pt,
                               mi_error_t *err);
/** Uniform crossover per node (all of a node's dimensions come from one parent; global
 * dimensions one by one), then repaired. `child` may alias neither parent. */
MI_API int32_t mi_space_crossover(const mi_space_t *s, mi_rng_t *rng, const int32_t *a,
                                  const int32_t *b, int32_t *child, mi_error_t *err);
/** Makes the declared constraints (and check_config, when the plugin has it) hold: moves the
 * offending knob to the nearest value that satisfies them, else the node's variant to
 * another one that accepts the node. Inactive dimensions are reset to their defaults, so equal
 * configurations have equal points. *changed (may be NULL) counts the moves. MI_OK, or
 * MI_ERR_INVALID_CONFIG with the rule that could not be met. */
MI_API int32_t mi_space_repair(const mi_space_t *s, int32_t *pt, int32_t *changed,
                               mi_error_t *err);
/** MI_OK when every constraint holds, else MI_ERR_INVALID_CONFIG naming the node and rule. */
MI_API int32_t mi_space_check(const mi_space_t *s, const int32_t *pt, mi_error_t *err);

/** Canonical text: one "key=value" line per active dimension, sorted by key. *out malloc'd. */
MI_API int32_t mi_space_canonical(const mi_space_t *s, const int32_t *pt, char **out,
                                  mi_error_t *err);
/** 64-bit FNV-1a of the canonical text. */
MI_API uint64_t mi_space_hash(const mi_space_t *s, const int32_t *pt);
/** Reads canonical text back into a point (keys not named take defaults). MI_ERR_PARSE
 * naming the line for an unknown key or value. */
MI_API int32_t mi_space_parse(const mi_space_t *s, const char *text, int32_t *pt,
                              mi_error_t *err);

/** The model-side half of a point as a transform configuration (mi_transform.h). */
MI_API int32_t mi_space_xf_config(const mi_space_t *s, const int32_t *pt,
                                  struct mi_xf_config **out, mi_error_t *err);

/** The hardware half of a point as session options (per-node variants and knobs, device
 * knobs). The options point into `hw`; free with mi_space_hw_destroy. */
typedef struct mi_space_hw mi_space_hw_t;
MI_API int32_t mi_space_hw_create(const mi_space_t *s, const int32_t *pt, mi_space_hw_t **out,
                                  mi_error_t *err);
MI_API const struct mi_session_options *mi_space_hw_options(const mi_space_hw_t *hw);
MI_API void mi_space_hw_destroy(mi_space_hw_t *hw);

/* ---------------------------------------------------------------- Pareto selection */

/** Objectives are minimised. Rows are points: obj[i * m + j] is objective j of point i. */

/** 1 when a dominates b (no worse in every objective, better in one). */
MI_API int mi_pareto_dominates(const double *a, const double *b, int32_t m);
/** NSGA-II fast non-dominated sort with constraint domination: a point with a smaller
 * `violation` (0 = feasible; NULL = all feasible) always wins. rank[i] = front index from 0;
 * crowd[i] (may be NULL) = crowding distance within the front (INFINITY at the ends).
 * Returns the number of fronts, or -1 when out of memory. */
MI_API int32_t mi_pareto_sort(const double *obj, int32_t n, int32_t m, const double *violation,
                              int32_t *rank, double *crowd);
/** Indices of the feasible non-dominated points (violation 0), sorted by the first objective;
 * returns the count written to `idx` (n entries of room). */
MI_API int32_t mi_pareto_front(const double *obj, int32_t n, int32_t m, const double *violation,
                               int32_t *idx);
/** Hypervolume dominated by the points w.r.t. reference `ref` (points not strictly better
 * than ref in every objective contribute nothing). Exact for m <= 3; a Monte Carlo estimate
 * with `samples` draws from `seed` beyond. Negative on bad arguments. */
MI_API double mi_pareto_hypervolume(const double *obj, int32_t n, int32_t m, const double *ref,
                                    uint64_t seed, int32_t samples);

/** A bound on one objective: value <= bound. Constraints never enter a weighted sum. */
typedef struct mi_bound {
  int32_t objective; /* column */
  double max;
} mi_bound_t;
/** Total normalised violation of each point: sum over bounds of max(0, v - max) / |max|
 * (a NaN objective, a failed measurement, counts as violation 1 per bound it meets). */
MI_API void mi_pareto_violation(const double *obj, int32_t n, int32_t m, const mi_bound_t *b,
                                int32_t bound_count, double *violation);
/** Preference pick among the feasible front: lexicographic over `order` (objective columns,
 * order_count of them; ties broken by the next). -1 when no point is feasible. */
MI_API int32_t mi_pareto_pick(const double *obj, int32_t n, int32_t m, const double *violation,
                              const int32_t *order, int32_t order_count);

/* ---------------------------------------------------------------- recipes */

/** Objectives known to recipes, tuning and reports. Values index mi_objective_name. */
typedef enum mi_objective {
  MI_OBJ_LATENCY = 0,  /* ms */
  MI_OBJ_MEMORY = 1,   /* peak MB */
  MI_OBJ_ENERGY = 2,   /* mJ per inference */
  MI_OBJ_ACCURACY = 3, /* accuracy drop (relative L2 error against FP32 reference) */
  MI_OBJ_COUNT = 4
} mi_objective;
/** "latency", "memory", "energy", "accuracy_drop"; the recipe key of its bound in *bound_key
 * ("latency_ms", "peak_memory_mb", "energy_mj", "accuracy_drop"). NULL out of range. */
MI_API const char *mi_objective_name(int32_t o, const char **bound_key);
/** Objective by name (also accepts the bound keys); -1 when unknown. */
MI_API int32_t mi_objective_find(const char *name);

typedef struct mi_recipe_input {
  char *name;
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
} mi_recipe_input_t;

/** An input fixed to a value (recipe key `values:`): "V0,V1,..." as --value takes it. */
typedef struct mi_recipe_value {
  char *name;
  char *text;
} mi_recipe_value_t;

typedef struct mi_recipe_device {
  char *plugin;
  int32_t device; /* device index (default 0) */
  int32_t line, column;
} mi_recipe_device_t;

typedef struct mi_recipe_model {
  char *path;    /* resolved from the recipe's folder */
  char *written; /* as written in the recipe */
  int32_t line, column;
} mi_recipe_model_t;

/** A parsed, validated recipe (docs/recipes.md). Paths are resolved from the recipe folder. */
typedef struct mi_recipe {
  int32_t version;
  char *path; /* the recipe file */
  char *dir;  /* its folder */
  int32_t model_count;
  mi_recipe_model_t *models;
  int32_t input_count;
  mi_recipe_input_t *inputs;
  int32_t value_count; /* values: inputs fixed to constants (an If on them becomes its branch) */
  mi_recipe_value_t *values;
  char *calibration; /* folder of .npy files, or NULL */
  int32_t device_count;
  mi_recipe_device_t *pool;
  int32_t has_bound[MI_OBJ_COUNT];
  double bound[MI_OBJ_COUNT];
  int32_t objective_count;
  int32_t objectives[MI_OBJ_COUNT]; /* minimised, in the recipe's order */
  int32_t preference_count;         /* lexicographic pick; default = objectives */
  int32_t preference[MI_OBJ_COUNT];
  int64_t budget_measurements; /* per (model, device); default 40 */
  double budget_seconds;       /* per (model, device), the whole tune; default 300 */
  char *history;               /* SQLite file or URL, or NULL */
  char *strategy;              /* "nsga2" (default), "random", "exhaustive" */
  uint64_t seed;               /* default 1 */
  uint32_t model_dims;         /* search.model: MI_SPACE_* bits; default all */
  int32_t repeats;             /* measurement repeats; default 5 */
  int32_t warmup;              /* default 2 */
  int32_t population;          /* NSGA-II population; default 8 */
  double timeout_s;            /* measure.timeout_s: per measurement; default 120 */
  int32_t history_given;       /* 1: the recipe has a history key ("none" leaves history
                                * NULL); 0: tune keeps one in its output folder */
} mi_recipe_t;

/** Loads and validates a recipe. Every error reads "FILE:LINE:COLUMN: message". When
 * `registry` is not NULL, a pool plugin it does not know is an error. */
MI_API int32_t mi_recipe_load(const char *path, const struct mi_registry *registry,
                              mi_recipe_t **out, mi_error_t *err);
/** Same from text; `path` names it and its folder resolves relative paths. */
MI_API int32_t mi_recipe_parse(const char *text, size_t len, const char *path,
                               const struct mi_registry *registry, mi_recipe_t **out,
                               mi_error_t *err);
MI_API void mi_recipe_destroy(mi_recipe_t *r);
/** The recipe's inputs: and values: as the shape text of mi_graph_set_input_shapes
 * ("x:1x3x32x32;sr={16000}"), written into buf (cut at cap); "" when it has neither. */
MI_API void mi_recipe_inputs_text(const mi_recipe_t *r, char *buf, size_t cap);
/** Appends the recipe's values: to a shape text of length *at in buf (";sr={16000}"). */
MI_API void mi_recipe_values_text(const mi_recipe_t *r, char *buf, size_t cap, size_t *at);

/* ---------------------------------------------------------------- search strategies */

/** Evaluates one configuration. Fills `objectives` (MI_OBJ_COUNT entries, NaN for one it did
 * not measure) and returns MI_OK, or a failure (the configuration is recorded as failed and
 * never picked). */
typedef int32_t (*mi_evaluate_fn)(void *ctx, const mi_space_t *s, const int32_t *pt,
                                  double *objectives, mi_error_t *err);

/** Search strategies. */
typedef enum mi_strategy {
  MI_STRATEGY_RANDOM = 0,
  MI_STRATEGY_EXHAUSTIVE = 1,
  MI_STRATEGY_NSGA2 = 2,
  MI_STRATEGY_META = 3 /* surrogate-guided (mi_meta.h); through mi_search_run: no sources */
} mi_strategy;
MI_API int32_t mi_strategy_find(const char *name); /* -1 when unknown */
MI_API const char *mi_strategy_name(int32_t s);

/** One evaluated configuration. */
typedef struct mi_trial {
  int32_t *point; /* mi_space_dim_count entries, owned */
  uint64_t hash;
  int32_t status;       /* MI_OK or the failure */
  int32_t from_history; /* 1 when replayed, not measured in this run */
  double objectives[MI_OBJ_COUNT];
  char message[MI_ERROR_MESSAGE_SIZE];
} mi_trial_t;

/** Called after every trial, for progress lines. */
typedef void (*mi_progress_fn)(void *ctx, const mi_trial_t *t, int32_t used, int64_t budget,
                               double elapsed_s);

/** A search run: strategy, budget, objectives, bounds. Zero-initialise and set struct_size. */
typedef struct mi_search_options {
  uint32_t struct_size;
  int32_t strategy; /* mi_strategy */
  uint64_t seed;
  int64_t max_measurements; /* new evaluations (replayed ones are free); <= 0: 40 */
  double max_seconds;       /* wall time; <= 0: no limit */
  int32_t population;       /* NSGA-II; <= 0: 8 */
  double mutation;          /* per-dimension probability; <= 0: 1 / active dims */
  int32_t objective_count;  /* objectives to minimise (mi_objective values) */
  const int32_t *objectives;
  int32_t bound_count; /* bounds on objectives (column = mi_objective value) */
  const mi_bound_t *bounds;
  mi_evaluate_fn evaluate;
  void *evaluate_ctx;
  /** Optional: returns 1 and fills objectives/status for a hash already measured (resume). */
  int (*lookup)(void *ctx, uint64_t hash, double *objectives, int32_t *status);
  void *lookup_ctx;
  mi_progress_fn progress;
  void *progress_ctx;
  /** Optional, tried before `lookup`: the same with the point itself, for a history keyed by
   * configuration text; fills `message` (MI_ERROR_MESSAGE_SIZE) for a failure. */
  int (*lookup_point)(void *ctx, const mi_space_t *s, const int32_t *pt, double *objectives,
                      int32_t *status, char *message);
  /** Optional: dimensions held at their default (mi_space_dim_count entries, 1 = frozen), to
   * search a restricted space (benchmarks with exhaustive ground truth). */
  const uint8_t *frozen;
  /** Optional (added): the per-layer times of the evaluation `evaluate` has just returned MI_OK
   * for, fetched right after it on the same thread: writes up to `cap` entries, one per node of
   * the target's graph in graph order (seconds; NaN: not timed, e.g. folded), and returns how
   * many it wrote (0: none for this evaluation). NULL: the evaluator reports end to end only.
   * Strategies that do not use layer times never call it (the surrogate-guided one does). */
  int32_t (*layer_times)(void *ctx, double *seconds, int32_t cap);
  void *layer_times_ctx;
  /** Optional (added): the accuracy drop of each of `n` points (row i at pts + i *
   * mi_space_dim_count), measured cheaply: no timing to speak of, nothing recorded, no budget
   * spent (the wall time counts). drops[i] NaN where not measured; returns how many were. The
   * per-layer precision greedy asks it once for the default with one block of layers at a
   * label, for its order (docs/tuning.md). NULL: the greedy orders by the predictor's shares. */
  int32_t (*drops)(void *ctx, const mi_space_t *s, const int32_t *pts, int32_t n, double *drops);
  void *drops_ctx;
} mi_search_options_t;

/** The trials of a search, in evaluation order. */
typedef struct mi_search_result {
  int32_t count;
  mi_trial_t *trials;
  int32_t measured; /* trials evaluated in this run */
  int32_t replayed; /* trials taken from the lookup */
  double seconds;
} mi_search_result_t;

/** Runs a strategy on space `s`. Stops at the budget, or when the space is exhausted. */
MI_API int32_t mi_search_run(const mi_space_t *s, const mi_search_options_t *o,
                             mi_search_result_t **out, mi_error_t *err);
MI_API void mi_search_result_destroy(mi_search_result_t *r);
/** The feasible Pareto front of a result on the options' objectives and bounds, best by the
 * preference first (idx gets at most r->count entries); returns its size. */
MI_API int32_t mi_search_front(const mi_search_result_t *r, const mi_search_options_t *o,
                               const int32_t *preference, int32_t preference_count,
                               int32_t *idx);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_TUNE_H */
