/* mi_meta.h - surrogate cost models with uncertainty, meta-learning across tasks (retrieval,
 * warm start, source weighting, trust region) and the surrogate-guided search strategy. */
#ifndef METAINFER_MI_META_H
#define METAINFER_MI_META_H

#include <stdint.h>

#include "metainfer/mi_core.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- ranking and error metrics */

/** Spearman rank correlation of a and b (average ranks for ties); 0 when n < 2 or constant. */
MI_API double mi_metric_spearman(const double *a, const double *b, int32_t n);
/** Kendall tau-b of a and b; 0 when n < 2 or constant. */
MI_API double mi_metric_kendall(const double *a, const double *b, int32_t n);
/** Mean absolute percentage error of pred against truth (truth != 0), as a fraction. */
MI_API double mi_metric_mape(const double *pred, const double *truth, int32_t n);
/** Share of predictions with |pred - truth| <= tol * |truth| (tol 0.1 = within 10%). */
MI_API double mi_metric_within(const double *pred, const double *truth, int32_t n, double tol);
/** Share of pairs (i, j) that `score` orders opposite to `truth` (ties in truth skipped). */
MI_API double mi_metric_rank_loss(const double *score, const double *truth, int32_t n);

/* ---------------------------------------------------------------- surrogate models */

/** Learners. AUTO picks the Gaussian process with ARD below `auto_threshold` points, XGBoost above
 * (docs/meta.md gives the measurements behind that choice). */
typedef enum mi_surrogate_kind {
  MI_SURROGATE_AUTO = 0,
  MI_SURROGATE_GP = 1,       /* Matern 5/2 GP, LAPACK Cholesky, hyperparameters by likelihood */
  MI_SURROGATE_XGB = 2,      /* bootstrap ensemble of XGBoost regressors (reg:squarederror) */
  MI_SURROGATE_XGB_RANK = 3, /* bootstrap ensemble of XGBoost rankers (rank:pairwise) */
  MI_SURROGATE_GP_ARD = 4    /* added: the GP with one relevance weight per feature (ARD) */
} mi_surrogate_kind;

/** Fill with mi_surrogate_options_default, then change fields. */
typedef struct mi_surrogate_options {
  uint32_t struct_size;
  int32_t kind;           /* mi_surrogate_kind */
  int32_t ensemble;       /* XGBoost models on bootstrap resamples (default 8) */
  int32_t rounds;         /* boosting rounds per model (default 60) */
  int32_t max_depth;      /* default 5 */
  double eta;             /* default 0.2 */
  int32_t auto_threshold; /* AUTO: GP below this many points (default 200) */
  uint64_t seed;
} mi_surrogate_options_t;

MI_API void mi_surrogate_options_default(mi_surrogate_options_t *o);

/** A fitted model of y (n values) from features X (n rows of d). Predictions come with a
 * standard deviation. Rankers predict a score on y's scale after a linear fit to y, so their
 * mean is comparable with the regressors'. */
typedef struct mi_surrogate mi_surrogate_t;

MI_API int32_t mi_surrogate_fit(const double *X, const double *y, int32_t n, int32_t d,
                                const mi_surrogate_options_t *o, mi_surrogate_t **out,
                                mi_error_t *err);
/** Predicts m rows of X (d columns as fitted); std may be NULL (cheaper for the GP). */
MI_API int32_t mi_surrogate_predict(const mi_surrogate_t *s, const double *X, int32_t m,
                                    double *mean, double *std, mi_error_t *err);
/** The learner actually used (never AUTO). */
MI_API int32_t mi_surrogate_kind_used(const mi_surrogate_t *s);
MI_API void mi_surrogate_destroy(mi_surrogate_t *s);

/** Per-device calibration of composed per-layer predictions: measured ~ a * summed + b by
 * least squares (b = 0 and a = mean ratio when n < 3). Returns the R^2 of the fit, which says
 * whether the device is additive (docs/meta.md). */
MI_API double mi_calibration_fit(const double *summed, const double *measured, int32_t n,
                                 double *a, double *b);

/* ---------------------------------------------------------------- configuration features */

/** Number of features mi_meta_encode writes for points of space `s`. */
MI_API int32_t mi_meta_feature_count(const mi_space_t *s);
/** Encodes a point: per dimension, a one-hot block for kernel variants and non-numeric
 * choices, the value's position in [0, 1] for numeric ones. */
MI_API void mi_meta_encode(const mi_space_t *s, const int32_t *pt, double *x);

/* ---------------------------------------------------------------- tasks and retrieval */

/** Length of a task descriptor (model features then the device fingerprint embedding). */
#define MI_META_DESC_SIZE 24
/** Where the device fingerprint part of a descriptor starts (model features before it). */
#define MI_META_FP_OFFSET 13

/** A task descriptor from model features and a device fingerprint (either may be NULL:
 * zeros); log-scaled sizes, an op-mix histogram, the fingerprint's vector. */
MI_API void mi_meta_describe(const mi_model_features_t *mf, const mi_device_fingerprint_t *fp,
                             double desc[MI_META_DESC_SIZE]);

/** The descriptor of a task from the JSON the history keeps: model features as written by
 * mi_model_features_json and a device fingerprint as written by mi_device_fingerprint_json
 * (either may be NULL). Returns a mask of what was read: 1 model features, 2 fingerprint;
 * the parts not read are zeros, as in mi_meta_describe. */
MI_API int32_t mi_meta_describe_json(const char *features_json, const char *fingerprint_json,
                                     double desc[MI_META_DESC_SIZE]);

/** A past task with its measurements: the source of a warm start. Borrowed by the search. */
typedef struct mi_meta_task {
  const char *name;
  const mi_space_t *space; /* the space its points belong to */
  const mi_graph_t *graph; /* its graph (node matching); may be NULL */
  double desc[MI_META_DESC_SIZE];
  uint64_t stack_hash;
  int32_t count;            /* measured configurations */
  const int32_t *points;    /* count x mi_space_dim_count(space) */
  const double *objectives; /* count x MI_OBJ_COUNT (NaN: not measured / failed) */
  /* Added: per-layer times of the same configurations, count x graph->node_count seconds (NaN
   * or <= 0: not timed), or NULL when the history has none. Needs `graph` (the layers' static
   * features). The surrogate-guided search builds its per-layer base model from these. */
  const double *layer_latency;
} mi_meta_task_t;

/** The k nearest tasks to `desc` (standardised Euclidean distance), same stack unless
 * any_stack. Writes up to k indices (nearest first) and distances; returns how many. */
MI_API int32_t mi_meta_retrieve(const double desc[MI_META_DESC_SIZE], uint64_t stack_hash,
                                const mi_meta_task_t *tasks, int32_t task_count, int32_t k,
                                int any_stack, int32_t *idx, double *dist);

/** Maps a point of `src` onto `dst`: each destination dimension takes the value of the
 * matching source dimension (same key; for nodes, the source node of the same op type and
 * nearest relative position) by label, else the nearest numeric label, else its default;
 * then repaired. Graphs may be NULL (nodes then match by name only). */
MI_API int32_t mi_meta_map_point(const mi_space_t *src, const mi_graph_t *src_graph,
                                 const int32_t *src_pt, const mi_space_t *dst,
                                 const mi_graph_t *dst_graph, int32_t *dst_pt, mi_error_t *err);

/** RGPE-style weights: sample_count posterior draws of each model's predictions at the
 * target's n measured points (pred_mean/pred_std: model_count x n; the last model is the
 * target's own, whose predictions should be leave-one-out); each draw's pairwise ranking loss
 * against y; a model's weight is the share of draws it has the lowest loss. Sources whose
 * median loss exceeds the target's 95th percentile get weight 0. */
MI_API void mi_meta_rgpe_weights(const double *pred_mean, const double *pred_std,
                                 int32_t model_count, const double *y, int32_t n,
                                 int32_t sample_count, uint64_t seed, double *weights);

/* ---------------------------------------------------------------- surrogate-guided search */

#define MI_META_MAX_ROUNDS 64

/** What the surrogate-guided search did, round by round. */
typedef struct mi_meta_report {
  int32_t rounds;
  int32_t warm_points;                  /* mapped configurations from sources that were measured */
  int32_t cold_fallback;                /* 1 when the sources were dropped as misleading */
  int32_t learner[MI_META_MAX_ROUNDS];  /* mi_surrogate_kind used */
  int32_t measured[MI_META_MAX_ROUNDS]; /* measurements so far, before the round */
  double spearman[MI_META_MAX_ROUNDS];  /* predicted vs measured, this round's batch */
  double mape[MI_META_MAX_ROUNDS];
  double within10[MI_META_MAX_ROUNDS];
  double source_weight[MI_META_MAX_ROUNDS]; /* total weight of the sources */
  double trust_radius[MI_META_MAX_ROUNDS];  /* share of dimensions allowed to move */
  /* Added: 1 when the warm-start points passed the check against the cold design's (the
   * best of them at least as good as the design's median); 0 when caught misleading. */
  int32_t warm_trusted;
  /* Added, for the warm start's saving (docs/meta.md, "What the warm start saved"): the
   * measurement (1-based, replayed ones included) at which the run first came within 5% of its
   * final best on the first objective (0: nothing measured), and the number of measurements a
   * cold random search is expected to need for the same, 1/p with p the share of 4,096 random
   * configurations whose prediction by the final surrogate (mean) is within 5% of that best
   * (NAN without a model; INFINITY when none is, i.e. more than 4,096). */
  int32_t best_within5_at;
  double cold_estimate;
  /* Added, the per-layer base model (docs/meta.md, "Per-layer prediction composed end to end"):
   * 1 when it was built from the sources' per-layer rows (0: no per-layer rows, or switched off),
   * its training rows and the sources they came from, its weight in each round's ensemble as the
   * round's fit gave it (first objective; 0 once the history is dropped as misleading; NAN
   * without the model), and how many of the target's measurements came back
   * with per-layer times from the evaluator (so->layer_times). */
  int32_t layer_model;
  int32_t layer_rows;
  int32_t layer_sources;
  double layer_weight[MI_META_MAX_ROUNDS];
  int32_t layer_trials;
  /* Added: the cold design's random points measured (the default point not counted). Priors
   * that pass the check shorten the design to 3 points; when they are dropped later, the design
   * is completed to init_points before the next round. */
  int32_t design_points;
  /* Added, the accuracy predictor (docs/tuning.md, "Accuracy screen and split moves"): the
   * candidates the screen dropped as predicted over the recipe's accuracy bound (counted each
   * time one was scored), and the split moves measured. */
  int32_t acc_screened;
  int32_t split_moves;
  /* Added: 1 when the search stopped because its seconds were spent, or because the next
   * round's fit and screen (timed on the last) would have ended past them. */
  int32_t stopped_on_time;
  /* Added: the per-layer precision greedy's steps measured (docs/tuning.md, "A greedy over
   * per-layer precision"). */
  int32_t greedy_moves;
  /* Added: the greedy's longest prefix measured within the accuracy bound, as a trial of the
   * result (-1: none). Its single median was taken among others' minutes apart; a caller that
   * checks its choice in paired rounds (mi-host tune) lets it join them. */
  int32_t greedy_best;
  /* Added: device-level moves measured on the best points (each global knob one step down, then
   * one step up, one at a time; docs/tuning.md, "The BF16 pointwise conv in its dw+pw pass,
   * device-level moves on the best point, ..."). */
  int32_t device_moves;
} mi_meta_report_t;

/** Options of the surrogate-guided search. Fill with mi_meta_options_default. */
typedef struct mi_meta_options {
  uint32_t struct_size;
  const mi_meta_task_t *sources; /* past tasks (may be NULL) */
  int32_t source_count;
  const mi_graph_t *graph;        /* the target's graph, for node matching (may be NULL) */
  double desc[MI_META_DESC_SIZE]; /* the target task's descriptor */
  uint64_t stack_hash;
  int32_t any_stack;        /* also use sources of another software stack */
  int32_t max_sources;      /* nearest sources kept (default 4) */
  int32_t warm_points;      /* mapped best configurations measured first (default 4) */
  int32_t init_points;      /* cold design points before the first fit (default 10) */
  int32_t batch;            /* measurements per round, 5..20 (default 8) */
  int32_t screen;           /* candidates scored on the surrogate per round (1e5) */
  double kappa;             /* UCB exploration weight (default 2.0) */
  int32_t learner;          /* mi_surrogate_kind for the target model (AUTO) */
  int32_t acquisition;      /* 0 UCB on random scalarisations, 1 predicted mean only */
  const uint8_t *frozen;    /* dims held at their default (may be NULL) */
  mi_meta_report_t *report; /* filled when not NULL */
  /* Added: the share of each batch (and of the screen's generations) chosen on the first
   * objective alone, the primary one; the rest on random scalarisations (default 0.5). */
  double primary_share;
  /* Added: 1 leaves the per-layer base model out even when sources carry per-layer times (for
   * benchmarks that compare with and without it); default 0: used, weighted by measurement. */
  int32_t no_layer_model;
  /* Added: the share of each full batch (rounded down) measured at random untried points of the
   * whole space instead of the screen's choices (default 0.125: one of 8; 0 turns it off). */
  double explore_share;
  /* Added (layer tasks, docs/tuning.md): the values `frozen` dimensions are held at instead of
   * their defaults (dim_count entries; NULL: the defaults). With it the plain default point is
   * still measured first (the baseline), then the default with the fixed values. */
  const int32_t *fixed;
  /* Added: the most device-level moves measured on each new best point (its global knobs, such
   * as the thread count, to their neighbouring values one at a time, after the precision greedy;
   * docs/tuning.md). Default 4; 0 none. */
  int32_t device_moves;
} mi_meta_options_t;

MI_API void mi_meta_options_default(mi_meta_options_t *o);

/** The surrogate-guided strategy: warm-start points from the nearest sources, a cold design,
 * then rounds of: fit (target model plus RGPE-weighted sources), an evolutionary screen of
 * `screen` candidates on the surrogate inside the trust region, a batch chosen by UCB on
 * random scalarisations of the objectives, measured through so->evaluate (so->lookup replays
 * known hashes for free). Same options, budgets and result as mi_search_run; so->strategy is
 * ignored. `mo` may be NULL (defaults, no sources). */
MI_API int32_t mi_meta_search_run(const mi_space_t *s, const mi_search_options_t *so,
                                  const mi_meta_options_t *mo, mi_search_result_t **out,
                                  mi_error_t *err);

/** The strategy's predictor outside a search: fits the target model on n measured points (pts,
 * n x dims; obj, n x MI_OBJ_COUNT) together with the RGPE-weighted sources of `mo`, and
 * predicts the first objective of so->objectives at q query points, in its own units. For
 * benchmarks (leave-one-device-out rank correlation). */
/* (Added) The prediction is calibrated: its log at the n measured points is mapped by least
 * squares onto their measured logs (from 5 points on), which keeps the order (docs/meta.md).
 * (Added) Sources with per-layer times add the per-layer base model as in the search; with
 * mo->report, its layer_model, layer_rows, layer_sources and layer_weight[0] (the weight the
 * fit gave it) are written, nothing else. */
MI_API int32_t mi_meta_predict_points(const mi_space_t *s, const mi_search_options_t *so,
                                      const mi_meta_options_t *mo, const int32_t *pts,
                                      const double *obj, int32_t n, const int32_t *query,
                                      int32_t q, double *pred, mi_error_t *err);

/* ---------------------------------------------------------------- per-layer prediction (added) */

/** A task's per-layer measurements: for each measured configuration, the time of every graph
 * node and the end-to-end latency. Borrowed. */
typedef struct mi_meta_layer_task {
  const mi_space_t *space;        /* the space its points belong to */
  const mi_graph_t *graph;        /* its graph: static layer features, node indices */
  double desc[MI_META_DESC_SIZE]; /* the device fingerprint part is an input of the model */
  int32_t count;                  /* measured configurations */
  const int32_t *points;          /* count x mi_space_dim_count(space) */
  const double *layer_latency;    /* count x graph->node_count, seconds; NaN or <= 0: not
                                   * timed (folded, failed) */
  const double *latency;          /* count: end to end, any unit (the target's sets the unit of
                                   * the predictions); NaN: unknown; may be NULL for sources */
} mi_meta_layer_task_t;

/** Per-layer prediction composed end to end (docs/meta.md): one surrogate (`so`, NULL: defaults,
 * i.e. XGBoost above 200 rows) on rows of (the layer's static features, the configuration of
 * that layer's node and of the device, keyed by dimension name so other models share the
 * columns, the device fingerprint) -> log layer time, over the layers of every source and of the
 * target; a configuration's prediction is the sum over the layers the target's measurements
 * timed, calibrated by least squares on the target's end-to-end latencies (measured ~ a * sum +
 * b, mi_calibration_fit). Writes q predictions of the target's `query` points and the
 * calibration's R^2 (*r2, may be NULL: how additive the device is). */
MI_API int32_t mi_meta_layer_predict(const mi_meta_layer_task_t *target,
                                     const mi_meta_layer_task_t *sources, int32_t source_count,
                                     const mi_surrogate_options_t *so, const int32_t *query,
                                     int32_t q, double *pred, double *r2, mi_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_MI_META_H */
