/* mi_ltask.h - layer tasks: each distinct workload of a model on a device (op with its fused
 * epilogue, shapes, dtypes, precision, layout, attributes) is one task with a stable key,
 * shared by every node and every model that has it. A task's kernel variant and knobs are
 * tuned with per-layer times and kept in the history (docs/tuning.md, "Layer tasks"). */
#ifndef METAINFER_MI_LTASK_H
#define METAINFER_MI_LTASK_H

#include "metainfer/mi_measure.h"
#include "metainfer/mi_tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Features of a task for the nearest-task distance: [0, MI_LTASK_CLASS) log2 sizes (the first
 * three inputs, the output, in and out channels), [MI_LTASK_CLASS, MI_LTASK_FEATURES) its kernel
 * class (log2 window, log2 stride product, log2 groups, depthwise, precision code), which a
 * neighbour must share exactly. Rows stored before the class features existed have 6. */
#define MI_LTASK_CLASS 6
#define MI_LTASK_FEATURES 11

/** One layer task of a (model, device): the nodes that have it and its kernel dimensions. */
typedef struct mi_ltask {
  char key[17]; /* FNV-1a 64 of `text`, hex: the stable key */
  char *text;   /* the workload, e.g. "Conv(group=1,...) in:f32[1x3x48x192] ... | fp32 nchw +Relu" */
  char op[32];
  int32_t node_count;
  int32_t *nodes; /* graph nodes, the first is the representative */
  int32_t *chain; /* per node: the epilogue chain's nodes (-1 terminated, owned
                   * as one block with `chain_at`) whose time counts with it */
  int32_t *chain_at;
  double features[MI_LTASK_FEATURES]; /* sizes and kernel class, for the nearest-task distance */
  /* Added, dw+pw units (mi_ltasks_extract_fused): NULL, or per node the pointwise conv that runs
   * in its unit. Such a task's op is "Conv+Conv", its text "DW-TEXT >> PW-TEXT", its chain has
   * the pointwise conv and its epilogue, and its choice is "DW-CHOICE | PW-CHOICE". */
  int32_t *second;
} mi_ltask_t;

typedef struct mi_ltasks {
  int32_t count;
  mi_ltask_t *tasks;
  int32_t *node_task; /* per graph node: its task, -1 for none */
  int32_t node_count;
} mi_ltasks_t;

/** The key text of graph node `n` (shapes inferred) under model-side labels `precision` and
 * `layout` (NULL: "fp32", "nchw"): malloc'd, NULL when out of memory. Two models with the
 * same convolution (same shapes, attributes, epilogue) give the same text. */
MI_API char *mi_ltask_text(const mi_graph_t *g, int32_t n, const char *precision,
                           const char *layout);

/** The layer tasks of space `s` (over graph `g`) at point `pt` (its model side gives each
 * node's precision and the layout): one per distinct key among the nodes with a kernel choice
 * (a variant dimension with more than one value, or node knobs). */
MI_API int32_t mi_ltasks_extract(const mi_graph_t *g, const mi_space_t *s, const int32_t *pt,
                                 mi_ltasks_t **out, mi_error_t *err);
/** The same where the device runs a depthwise conv and the pointwise conv that alone reads it
 * as one unit (fuse_conv: a Conv variant declares MI_FUSE_CONV): each such pair is one task
 * (see mi_ltask_t.second), the pointwise conv no task of its own. */
MI_API int32_t mi_ltasks_extract_fused(const mi_graph_t *g, const mi_space_t *s, const int32_t *pt,
                                       int fuse_conv, mi_ltasks_t **out, mi_error_t *err);
MI_API void mi_ltasks_destroy(mi_ltasks_t *t);

/** A node's kernel choice as text: "variant=ID;knob.K=V;..." over its active kernel dimensions
 * (malloc'd). Applying it to another node of the same task gives that node the same choice. */
MI_API char *mi_ltask_choice(const mi_space_t *s, const int32_t *pt, int32_t node);
/** Sets node `node`'s kernel dimensions of `pt` from a choice text; 1 when every part was
 * found in the node's dimensions, 0 otherwise (pt is then unchanged). */
MI_API int mi_ltask_apply(const mi_space_t *s, int32_t *pt, int32_t node, const char *choice);

/* ---------------------------------------------------------------- the history's task table */

/** One row of the layer-task table: a kernel choice of a task measured on a device. */
typedef struct mi_ltask_row {
  const char *key, *device_hash, *stack_hash, *op, *text;
  const char *features; /* "f0,f1,..." (MI_LTASK_FEATURES numbers) */
  const char *choice;   /* mi_ltask_choice text */
  int32_t ok;
  double seconds;         /* the task's time per node (median), when ok */
  const char *created_at; /* read back only */
} mi_ltask_row_t;

typedef int (*mi_ltask_row_fn)(void *user, const mi_ltask_row_t *row); /* non-zero stops */

/** Writes (or replaces: same key, device, stack and choice) one row. SQLite stores only. */
MI_API int32_t mi_history_ltask_put(mi_history_t *h, const mi_ltask_row_t *row, mi_error_t *err);
/** Rows of a device and stack (either NULL: any), of op `op` and key `key` (NULL: any), good
 * ones first, fastest first per key. */
MI_API int32_t mi_history_ltask_query(mi_history_t *h, const char *device_hash,
                                      const char *stack_hash, const char *op, const char *key,
                                      mi_ltask_row_fn fn, void *user, mi_error_t *err);

/* ---------------------------------------------------------------- tuning the tasks */

/** Measures point `pt` end to end and writes each graph node's time in seconds to
 * node_seconds[node_count] (NaN: not timed). */
typedef int32_t (*mi_ltask_measure_fn)(void *ctx, const int32_t *pt, double *node_seconds,
                                       mi_error_t *err);

typedef struct mi_ltask_options {
  uint32_t struct_size;
  int32_t max_candidates; /* kernel choices tried per task (default 6) */
  int32_t max_rounds;     /* end-to-end measurements at most (default max_candidates) */
  mi_history_t *history;  /* NULL: nothing reused or stored */
  const char *device_hash, *stack_hash;
  mi_ltask_measure_fn measure;
  void *measure_ctx;
  /* Added, the knob stage: after the variant rounds, up to knob_rounds more whole-model
   * measurements (0: none, the default) in which every task not taken from the history (nor
   * warm-started from neighbours that agreed) moves one knob of its fastest choice one value
   * up or down; stopped once it has run knob_seconds (<= 0: no limit). Read only when
   * struct_size covers them. */
  int32_t knob_rounds;
  double knob_seconds;
  /* Added: the whole phase's wall-time share (variant rounds and knob stage together): no
   * round is begun once the phase has run max_seconds (<= 0: no limit), so a tuner's time
   * budget holds on a model whose measurements take many seconds. Read only when struct_size
   * covers it. */
  double max_seconds;
  /* Added: the phase may run past max_seconds, up to hard_seconds from its start, while
   * reserve_runs more whole-model measurements at the phase's own mean round time (x1.5) still
   * fit after it: when what comes after the phase is small (a tuner whose joint search has a
   * handful of points left once the kernel choices are the tasks'), the seconds it would not use
   * go to the layer tasks. hard_seconds <= 0: off. Read only when struct_size covers them. */
  double hard_seconds;
  int32_t reserve_runs;
} mi_ltask_options_t;

MI_API void mi_ltask_options_default(mi_ltask_options_t *o);

typedef struct mi_ltask_result {
  int32_t tasks;              /* layer tasks of the model */
  int32_t reused;             /* tasks whose best came from the history (no measurement) */
  int32_t warm;               /* tasks whose candidates came from their nearest measured
                               * tasks (same op and kernel class, nearby sizes) */
  int32_t measured_tasks;     /* tasks measured in this run */
  int32_t layer_measurements; /* (task, choice) pairs measured */
  int32_t rounds;             /* end-to-end measurements made for them */
  int32_t improved;           /* tasks whose best is not the base point's choice */
  int32_t *point;             /* the base point with each task's best choice (owned) */
  /* Added, the nearest-task warm start: of `warm`, the tasks whose neighbours agreed on one
   * best (measured: that choice and the default only); tasks measured with no neighbour (their
   * whole cold list); the (task, choice) pairs the warm tasks measured; and the pairs a run
   * with no history would measure on this model (every task's cold list). */
  int32_t agreed, cold;
  int32_t warm_layer_measurements, cold_run_layer_measurements;
  /* Added, the knob stage: its whole-model rounds (counted in `rounds` too), its (task, choice)
   * pairs (in `layer_measurements` too) and the tasks whose best it found. */
  int32_t knob_rounds, knob_measurements, knob_improved;
  /* Added, what the seconds (max_seconds, knob_seconds) left out: variant rounds planned but
   * not run, and knob rounds planned but not run when the stage stopped on time rather than at
   * a local optimum of every task. */
  int32_t variant_rounds_cut, knob_rounds_cut;
} mi_ltask_result_t;

/** Tunes every task of `t` from base point `base`: tasks already in the history (same key,
 * device and stack) take their stored best; the others try their choices in rounds, one
 * choice per task per end-to-end measurement, and store every result. A task's choices: when
 * its nearest measured tasks (same op and kernel class, up to 3 within a log2 size distance of
 * 3) agree on a best, that one and the default; when they disagree, the default and the rest
 * in the order of their measurements, the choices each of them found 1.25x slower cut; with
 * none, the default, every other variant, then one knob changed at a time. Then the knob
 * stage (o->knob_rounds): each measured task climbs one knob step a round from its fastest
 * choice with knobs. out->point is `base` with each task's best on all of its nodes. */
MI_API int32_t mi_ltasks_tune(const mi_graph_t *g, const mi_space_t *s, const mi_ltasks_t *t,
                              const int32_t *base, const mi_ltask_options_t *o,
                              mi_ltask_result_t *out, mi_error_t *err);
MI_API void mi_ltask_result_free(mi_ltask_result_t *r);

/** Which dimensions the layer tasks own (node variants and node knobs of task nodes): 1 in
 * frozen[dim_count]. Returns how many. */
MI_API int32_t mi_ltasks_frozen(const mi_space_t *s, const mi_ltasks_t *t, uint8_t *frozen);

#ifdef __cplusplus
}
#endif
#endif
