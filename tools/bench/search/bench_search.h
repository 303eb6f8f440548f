/* bench_search.h - what the search benchmark's files share: tasks, the cached measurement
 * table that every method draws from, and the methods. */
#ifndef BENCH_SEARCH_H
#define BENCH_SEARCH_H

#include <stdio.h>

#include "metainfer/mi.h"

#define BS_MAX_TASKS 24

/* One measured configuration of a task. */
typedef struct bs_row {
  uint64_t hash;
  int32_t *pt;
  double obj[MI_OBJ_COUNT];
  int ok;
} bs_row_t;

/* One (model, device) task with its restricted space and its table. */
typedef struct bs_task {
  char name[64];
  char model[512];
  char spec[32];
  char inputs[128]; /* fixed input shapes "NAME:1x3x48x192" (real models), "" none */
  int real;         /* 1: a real model's whole kernel space (bench_real.c) */
  int exhaustive;   /* 1: the table is the whole restricted space (ground truth) */
  mi_graph_t *graph;
  mi_plugin_t *plugin;
  mi_space_t *space;
  uint8_t *frozen;
  int32_t D;
  bs_row_t *rows;
  int32_t n, cap;
  double desc[MI_META_DESC_SIZE];
  mi_model_features_t mf;
  uint64_t stack;
  double ref;             /* best latency of the table (reference optimum) */
  mi_worker_pool_t *pool; /* measures on a table miss (NULL: a miss fails) */
  int32_t measures;       /* a miss is measured this many times, the median kept (0: once) */
  FILE *cache;            /* table file, appended on every new measurement */
  int32_t fresh;          /* measurements made for real in this process */
  /* Per-layer table (npu-stub tasks): a sample of the table's rows measured again with each
   * node's time (seconds, graph->node_count per row; NaN: not timed). */
  int32_t ln;
  int32_t *lrow; /* ln indices into rows */
  double *lsec;  /* ln x graph->node_count */
  /* Joint tasks (MI_BENCH_JOINT=1): every model-side point's accuracy drop (relative L2 error
   * against the FP32 model on the reference path, the same figure a worker reports), keyed by
   * the hash of the point with its hardware side at the defaults. */
  double acc_bound; /* > 0: a configuration whose drop exceeds it fails (both methods) */
  int32_t acc_n, acc_cap;
  uint64_t *acc_key;
  double *acc_val;
  /* > 0: a configuration whose (modeled) energy exceeds it fails too; model-then-hardware's
   * phase 1 runs with hw_bounds_off = 1 (the energy a configuration needs is the hardware
   * phase's business) and then prefers a model side that met the bound at the defaults. */
  double energy_bound;
  int hw_bounds_off;
} bs_task_t;

/* Joint tasks (bench_joint.c). The accuracy drop of pt's model side (NaN when unknown). */
double bs_accuracy(const bs_task_t *t, const int32_t *pt);
/* Frees the model side of the named layers (comma list; whole-model dimensions by name) and the
 * named knobs (comma list: device knobs and those layers' per-node knobs); freezes the rest. */
void bs_joint_restrict(bs_task_t *t, const char *layers, const char *hw);
/* Reads back (`path`) or computes the accuracy drop of every model side in the task's table. */
void bs_accuracy_fill(bs_task_t *t, uint32_t dev, const char *path);
/* Prints the exhaustive joint optimum against model-then-hardware at several bounds, then sets
 * the task's bounds for the methods and its reference to the best feasible latency. */
void bs_joint_exhaustive(bs_task_t *tasks, int32_t n, int32_t k, double energy_q, int header);
/* MI_BENCH_DESCRIBE=1: prints and checks a joint task's space; 1 when it fails a check. */
int bs_joint_describe(const bs_task_t *t, uint32_t mdims);

/* Options of the meta strategy for a task (bench_report.c): defaults, its graph, frozen
 * dimensions, descriptor and stack; and with them the search options of a prediction. */
void bs_meta_options(const bs_task_t *t, mi_meta_options_t *mo);
/* Search options every benchmark run starts from: the seed, at most `budget` measurements of
 * `nobj` objectives through `ev` (NULL for a prediction), the frozen dimensions. */
void bs_search_options(mi_search_options_t *o, uint64_t seed, int32_t budget, int32_t nobj,
                       const int32_t *objs, mi_evaluate_fn ev, void *ctx, const uint8_t *frozen);
void bs_predict_options(const bs_task_t *t, uint64_t seed, const int32_t *objs,
                        mi_search_options_t *so, mi_meta_options_t *mo);
/* What bs_layer_split fills and bs_layer_score reads for one held-out task: `samples` measured
 * rows (pts, obj, lat, lsec) and every row of its table as a query (query, truth, pred). */
typedef struct bs_rows {
  int32_t *pts, *query;
  double *obj, *lat, *lsec, *pred, *truth;
} bs_rows_t;
/* Allocates the rows for `samples` measured configurations of t: 1, or 0 when out of memory
 * (bs_rows_free still frees what was taken). */
int bs_rows_alloc(const bs_task_t *t, int32_t samples, bs_rows_t *r);
void bs_rows_free(bs_rows_t *r);
/* The held-out task's sample and query rows of its per-layer table (bench_report.c). */
int32_t bs_layer_split(const bs_task_t *t, uint64_t seed, int32_t samples, int32_t *pick,
                       int32_t *pts, double *obj, double *lat, double *lsec, int32_t *query,
                       double *truth);

/* Per layer, composed and calibrated (mi_meta_layer_predict): the task's n measured rows (pts,
 * lat, lsec) and the sources' layers predict the query rows; out[0..1] gets Spearman and the
 * share within 10% against truth, *r2 (may be NULL) the calibration's R^2 (bench_report.c). */
int32_t bs_layer_score(const bs_task_t *t, int32_t n, const int32_t *pts, const double *lat,
                       const double *lsec, const mi_meta_layer_task_t *src, int32_t ns, uint64_t seed,
                       const int32_t *query, int32_t q, const double *truth, double *pred,
                       double *out, double *r2);

/* The table evaluator: a configuration comes from the table, or is measured once for real. */
int32_t bs_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                    mi_error_t *err);
int32_t bs_find(const bs_task_t *t, uint64_t hash);

/* Methods: each returns the trials of one run of `budget` measurements with `seed`. */
enum {
  BS_RANDOM,
  BS_NSGA2,
  BS_AUTOTVM,
  BS_OURS_COLD,
  BS_OURS_WARM,
  BS_OURS_MISLEAD,
  BS_MTH_NSGA2,
  BS_MTH_COLD, /* model-then-hardware with NSGA-II / ours cold in both phases */
  BS_METHODS
};
#define BS_MTH_FIRST BS_MTH_NSGA2
/* Not a benchmarked method: every point of the (restricted) space, for the oracle below. */
#define BS_EXHAUSTIVE (-1)
extern const char *const bs_method_names[BS_METHODS];

/* Sources for a warm start: the other tasks (sampled) of the same stack; `mislead` inverts
 * their latencies. Arrays are owned by the caller (bs_sources_free). */
typedef struct bs_sources {
  int32_t count;
  mi_meta_task_t tasks[BS_MAX_TASKS];
  int32_t *pts[BS_MAX_TASKS];
  double *obj[BS_MAX_TASKS];
} bs_sources_t;

void bs_sources_build(bs_task_t *tasks, int32_t ntask, int32_t target, int exclude_device,
                      int mislead, uint64_t seed, int32_t per_source, bs_sources_t *out);
void bs_sources_free(bs_sources_t *s);

/* rep (may be NULL): the meta strategy's report, for ours. */
int32_t bs_run_method(bs_task_t *tasks, int32_t ntask, int32_t target, int method,
                      uint64_t seed, int32_t budget, mi_search_result_t **out,
                      mi_meta_report_t *rep, mi_error_t *err);

/* Model-then-hardware with each phase exhaustive: the fastest latency tuning in that order can
 * reach at all (NaN on failure); against the reference optimum it bounds what any joint search
 * can gain over it on this space. */
double bs_model_then_hw_oracle(bs_task_t *tasks, int32_t ntask, int32_t target);

/* The median of v[0..n) (sorts v; NAN when n is 0). */
double bs_median(double *v, int n);

/* Real-model tasks (bench_real.c, MI_BENCH_REAL=1): name, file in the models folder, inputs;
 * NULL-terminated. */
typedef struct bs_real_spec {
  const char *name, *file, *inputs;
} bs_real_spec_t;
extern const bs_real_spec_t bs_real_specs[];
/* Runs every method at 4x `budget` (pooled: the reference) and at `budget`, and prints the
 * table of measurements to within 5% of the reference. */
int bs_real_report(bs_task_t *tasks, int32_t n, int32_t seeds, int32_t budget);

#endif
