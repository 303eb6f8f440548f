/* meta_internal.h - the state the surrogate-guided strategy shares between its files. */
#ifndef MI_META_INTERNAL_H
#define MI_META_INTERNAL_H

#include "metainfer/mi_meta.h"

/* A source task re-expressed in the target's space: its best points mapped, a model per
 * objective fitted on its standardised log objectives. */
typedef struct mi__source {
  int32_t task; /* index in options.sources */
  int32_t count;
  double *X; /* count x F features of the mapped points */
  double *Y; /* count x m standardised log objectives (NaN: missing) */
  mi_surrogate_t *model[MI_OBJ_COUNT];
  double weight[MI_OBJ_COUNT];
  double ysd[MI_OBJ_COUNT]; /* spread (sd) of the source's log objectives: its model's unit */
} mi__source_t;

/* The least Spearman correlation between a source's predictions and the target's own
 * measurements for the source to keep any weight (strategy_model.c). */
#define MI_META_RANK_MIN 0.2

typedef struct mi__meta {
  const mi_space_t *s;
  const mi_search_options_t *so;
  mi_meta_options_t mo;
  mi_search_result_t *r;
  int32_t cap, D, F, m;
  int64_t budget;
  double t0;
  mi_rng_t rng;
  int32_t source_count;
  mi__source_t *src;
  /* the target model, per objective, on standardised log objectives */
  mi_surrogate_t *model[MI_OBJ_COUNT];
  double ymu[MI_OBJ_COUNT], ysd[MI_OBJ_COUNT];
  double target_weight[MI_OBJ_COUNT];
  int32_t sources_off; /* cold fallback */
  /* Trials left out of the target model: warm-start points of a history the check caught
   * misleading (strategy.c), so the search after it is the cold search. */
  int32_t excluded[64], excluded_count;
  /* The cold design: its random points so far and the attempts to draw them (strategy.c). */
  int32_t design_count, design_tries;
  int32_t moves_next, moves_done;    /* the design's one-factor moves (strategy_design.c) */
  int32_t moves_prec_only;           /* a small space: only the precision family's moves */
  uint64_t polish_hash;              /* the best point whose device-level knobs are being moved */
  int32_t polish_next, polish_count; /* its next move; moves measured in all (strategy_design.c) */
  double radius;                     /* trust region: share of dimensions allowed to differ */
  int32_t *center;                   /* trust-region centre (best point so far) */
  double *feat;                      /* scratch: F per candidate */
  /* The per-layer base model (strategy_layer.c): fitted once on the sources' per-layer rows,
   * summed over the target's layers, calibrated on the target's first objective by least squares
   * (measured ~ la * summed + lb, floored at lfloor; the residual sd lsd on the standardised log
   * scale; lcal 0 until fitted), and weighted in
   * the ensemble like a source (lweight). NULL when no source carries per-layer times. */
  struct mi__layer_model *lmodel;
  int32_t lrows, lsources;
  double la, lb, lfloor, lsd, lweight;
  int lcal;
  uint8_t *luse; /* target nodes summed (graph node_count) */
  double *tls;   /* per trial, the evaluator's per-layer seconds (N each) */
  int32_t tls_cap, ltrials;
  /* The accuracy predictor and the split moves (strategy_acc.c); acc_screened counts the
   * candidates the screen dropped as predicted over the accuracy bound. */
  struct mi__acc *acc;
  int32_t acc_screened;
  struct mi__greedy *greedy; /* the per-layer precision greedy (strategy_greedy.c) */
} mi__meta_t;

/* The per-layer model (layer.c): rows of the tasks laid out for the target space `s`. */
typedef struct mi__layer_model mi__layer_model_t;
int32_t mi__layer_model_fit(const mi_space_t *s, const mi_meta_layer_task_t *tasks, int32_t count,
                            const mi_surrogate_options_t *so, mi__layer_model_t **out, int32_t *rows,
                            mi_error_t *err);
/* Summed predicted seconds of `count` points of space `s` (graph g, descriptor desc) over the
 * nodes with use[nd] (NULL: every node with static features). */
int32_t mi__layer_model_sum(mi__layer_model_t *lm, const mi_space_t *s, const mi_graph_t *g, const double *desc,
                            const uint8_t *use, const int32_t *pts, int32_t count, double *out, mi_error_t *err);
void mi__layer_model_free(mi__layer_model_t *lm);

/* The search's per-layer base model (strategy_layer.c). Builds it from the sources that carry
 * per-layer times (none: st->lmodel stays NULL and nothing changes). */
int32_t mi__meta_layer_build(mi__meta_t *st, mi_error_t *err);
void mi__meta_layer_free(mi__meta_t *st);
/* Fetches the evaluator's per-layer times of fresh trial i (so->layer_times). */
void mi__meta_layer_fetch(mi__meta_t *st, int32_t i);
/* 1 when the per-layer model takes part for objective j now. */
int mi__meta_layer_active(const mi__meta_t *st, int32_t j);
/* Its prediction of n points on the target's standardised log first objective (sd: st->lsd). */
int32_t mi__meta_layer_predict(mi__meta_t *st, const int32_t *pts, int32_t n, double *mean, mi_error_t *err);
/* Fits its calibration on the target's trials `trial` (n) with standardised values y, and writes
 * its prediction of them into pm and the draw spread into ps (for the RGPE weights). */
int32_t mi__meta_layer_calibrate(mi__meta_t *st, const int32_t *trial, const double *y, int32_t n, double *pm,
                                 double *ps, mi_error_t *err);

/* 1 while measurements and seconds remain. */
/* The op family of an ONNX op type (encode.c): 0..5, or 6 for any other op. */
int mi__meta_op_family(const char *op);

int mi__meta_has_budget(mi__meta_t *st);
/* Evaluates pt once (replay through lookup is free); the trial index, -1 out of memory. */
int32_t mi__meta_eval(mi__meta_t *st, const int32_t *pt, int *fresh);
/* 1 when trial i is left out of the target model. */
int mi__meta_excluded(const mi__meta_t *st, int32_t i);
/* log of objective j of a trial (NaN when missing or failed). */
double mi__meta_logobj(const mi__meta_t *st, const mi_trial_t *t, int32_t j);
/* Fits the target models and the source weights on the trials so far. */
int32_t mi__meta_fit(mi__meta_t *st, int32_t round, mi_error_t *err);
/* Predicts n feature rows: mean and std (standardised log scale) per objective, n x m. */
/* pts (n x D, may be NULL): the same points, for the per-layer base model (left out when NULL). */
int32_t mi__meta_predict(mi__meta_t *st, const double *X, const int32_t *pts, int32_t n, double *mean, double *sd,
                         mi_error_t *err);
/* Builds the sources from the options (retrieval, mapping, models). */
int32_t mi__meta_sources(mi__meta_t *st, mi_error_t *err);
void mi__meta_sources_free(mi__meta_t *st);
/* Screens candidates on the surrogate and writes up to `want` distinct unmeasured points
 * (D each) into out; returns how many. */
int32_t mi__meta_screen(mi__meta_t *st, int32_t want, int32_t *out, mi_error_t *err);
/* Warm-start points interleaved with a cold design of `init` points, the warm points checked
 * against the design's (*trusted: they passed); the best trial on the first objective. */
int32_t mi__meta_warm_design(mi__meta_t *st, int32_t init, int32_t *pt, int *trusted, mi_error_t *err);
/* Completes the cold design to `init` points (default and random ones), budget permitting: for
 * priors dropped after they had passed the check and shortened the design. */
int32_t mi__meta_design_complete(mi__meta_t *st, int32_t init, int32_t *pt, mi_error_t *err);
int32_t mi__meta_best(const mi__meta_t *st);
/* Holds frozen dimensions at their defaults and repairs. */
/* The cold design's next one-factor move over the default point (strategy_design.c): 1 with
 * pt filled, 0 when every move was handed out. */
int mi__meta_design_move(mi__meta_t *st, int32_t *pt);
/* The next device-level move over the best feasible point so far (each global knob one step
 * down, then each one step up, at most mo.device_moves per best point): 1 with pt filled (a
 * point not measured yet), 0 when none is left for this best point. */
int mi__meta_polish_move(mi__meta_t *st, int32_t *pt);
int32_t mi__meta_fix(mi__meta_t *st, int32_t *pt);

/* The accuracy predictor (strategy_acc.c): refits on the trials so far; a point's predicted
 * accuracy drop (NaN before a model-side change was measured); 1 when it is predicted over the
 * recipe's accuracy bound. */
void mi__meta_acc_fit(mi__meta_t *st);
double mi__meta_acc_predict(mi__meta_t *st, const int32_t *pt);
int mi__meta_acc_screened(mi__meta_t *st, const int32_t *pt);
void mi__meta_acc_free(struct mi__acc *a);
/* The next split move (a block of layers at the fastest lossy precision): 1 with pt set. */
int mi__meta_split_move(mi__meta_t *st, int32_t *pt);
int32_t mi__meta_split_count(const mi__meta_t *st);
/* Accessors of the accuracy predictor for the greedy: the precision dims (graph order), the
 * bound once fitted (0 before), the fitted share of (dim, value) in drop^2, the measured trial
 * of a point (-1 none), whether trial i has a usable accuracy, and the base point with the
 * precision dims [lo, hi) at a label (1 when any was set). */
int32_t mi__meta_acc_pdims(mi__meta_t *st, const int32_t **pd);
double mi__meta_acc_bound(const mi__meta_t *st);
double mi__meta_acc_share(const mi__meta_t *st, int32_t d, int32_t v);
int32_t mi__meta_trial_of(const mi__meta_t *st, const int32_t *pt);
int mi__meta_trial_usable(const mi__meta_t *st, int32_t i);
int mi__meta_label_point(mi__meta_t *st, const char *label, int32_t lo, int32_t hi, int32_t *pt);

/* The per-layer precision greedy (strategy_greedy.c): its next step, 1 with pt set; then
 * mi__meta_greedy_measured with the step's trial. mi__meta_greedy_count: the steps made. */
int mi__meta_greedy_move(mi__meta_t *st, int32_t *pt);
void mi__meta_greedy_measured(mi__meta_t *st, int32_t i);
int32_t mi__meta_greedy_count(const mi__meta_t *st);
/* The trial of the longest prefix measured within the bound (the last step's result folded in
 * first), or -1. */
int32_t mi__meta_greedy_best(mi__meta_t *st);
void mi__meta_greedy_free(struct mi__greedy *g);

#endif
