/* tune_internal.h - what the tuner's files share: one (model, device) task, the evaluator that
 * measures in crash-isolated workers, the history glue and the calls out to the callbacks. */
#ifndef MI_TUNE_INTERNAL_H
#define MI_TUNE_INTERNAL_H

#include <pthread.h>

#include "metainfer/mi_ltask.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_meta.h"
#include "metainfer/mi_runtime.h"
#include "metainfer/mi_transform.h"
#include "metainfer/mi_tuner.h"

/** Slow phases (tune_eval.c): a measurement is taken again when the default beside it read over
 * MI__TUNE_PHASE_RATIO x the least of the paired readings of the last MI__TUNE_PHASE_WINDOW_S
 * seconds; the task keeps the last MI__TUNE_PHASE_KEEP readings. */
#define MI__TUNE_PHASE_RATIO 1.1
#define MI__TUNE_PHASE_WINDOW_S 15.0
#define MI__TUNE_PHASE_KEEP 64

/** A measurement already in the history for this task (resume). */
typedef struct mi_tune_known {
  char *hw;    /* hardware-side canonical text (mi_config_canonical) */
  char *model; /* model-side canonical text (mi_xf_config_canonical), "" when none */
  int32_t ok;
  char *failure;
  double obj[MI_OBJ_COUNT];
  char *layers_json;             /* its per-layer times as stored (NULL: none), for a replayed search point */
  double paired_ratio, paired_s; /* mi_history_row_t's: a paired record, NaN when not */
} mi_tune_known_t;

/** A measurement's per-layer times as mi_profile_layers_json wrote them (the device clock where
 * there is one, else wall; folded layers left out): up to cap (node of g by the layer's name,
 * seconds) pairs into node / sec, layers g has no node of that name left out (g NULL: the
 * stored index); returns how many there are (may exceed cap). */
int32_t mi__tune_layer_pairs(const char *json, const mi_graph_t *g, int32_t *node, double *sec, int32_t cap);
/** The node of g named name (hint: the index tried first), -1 none; g NULL: hint. A transformed
 * model's profile numbers its own nodes, so a layer finds its node of the model by name. */
int32_t mi__tune_node_of(const mi_graph_t *g, const char *name, int32_t hint);

/** One (model, device) being tuned. */
typedef struct mi_tune_task {
  const mi_recipe_t *recipe;
  const char *model_path;  /* ONNX file the worker loads */
  const char *inputs;      /* "name:1x3x32x32;..." from the recipe, or "" */
  const char *spec;        /* "PLUGIN:INDEX" */
  const mi_graph_t *graph; /* the model's graph: per-layer times are its nodes' (may be NULL) */
  mi_worker_pool_t *pool;  /* this task's workers */
  int32_t repeats, warmup;
  int energy_modeled; /* 1 once an energy figure came from a model */
  /* history (NULL when the recipe has none) */
  mi_history_t *history;
  int64_t run_id;
  const mi_record_t *base; /* task, device and stack fields of every record */
  /* The hash of base's stack with the device's fallback device (mi_record_set_fallback_stack):
   * the stack of the records whose sessions ran nodes there; NULL when it has none. */
  const char *fb_stack_hash;
  mi_tune_known_t *known;
  int32_t known_count;
  int32_t recorded;            /* records written */
  mi_search_options_t *search; /* the search's options (tune_stop.c ends its time budget) */
  /* progress */
  const mi_tune_callbacks_t *cb;
  int32_t line;
  int64_t budget;
  double best; /* best feasible first objective so far */
  int32_t first_objective;
  int32_t objective_count; /* objectives the search minimises on this device */
  const mi_bound_t *bounds;
  int32_t bound_count;
  /* Added: the per-layer times of the last measurement mi_tune_evaluate made (none after a
   * failure or a farm measurement): layer_sec[i] seconds for graph node layer_node[i], NaN for a
   * folded node; the search fetches them through mi_tune_layer_times. Freed by
   * mi_tune_free_known. */
  int32_t layer_n, layer_cap;
  int32_t *layer_node;
  double *layer_sec;
  /* Added: when the (model, device) tune began and when its budget.seconds run out (mi_now_s;
   * deadline 0: no time budget). Each phase takes its share of what is left (tune_run.c). */
  double t_begin, deadline;
  int search_on_time; /* the meta search said it stopped on its seconds (mi_meta_report_t) */
  /* Added: the folder holding the accuracy's reference outputs for every measurement of this
   * tune (mi_worker_config_t.ref_dir; "" none), and whether they are the device's default
   * configuration's outputs rather than the reference interpreter's (tune_eval.c). */
  char ref_dir[256];
  int ref_device;
  /* Added: the blocks' own drops mi_tune_drops measured (sens_n of sens_cap; moved to the run,
   * else freed by mi_tune_free_known). */
  int32_t sens_n, sens_cap;
  mi_tune_sens_t *sens;
  /* Added: the default configuration that every measurement is paired with in the worker
   * (mi_worker_config_t.paired; NULL until made), the paired runs'
   * median at the first such measurement (anchor_ref_s, seconds; 0 none yet) and the machine's
   * speed at the last one against it (anchor_speed, the paired runs' median over anchor_ref_s;
   * 0 when unknown). A measurement's latency is its ratio to the paired runs times anchor_ref_s
   * (tune_eval.c). */
  mi_xf_config_t *anchor_xc;
  mi_space_hw_t *anchor_hw;
  double anchor_ref_s, anchor_speed;
  /* The paired measurements made (not replayed) and the least and most of their paired
   * medians (seconds), for the run's report (mi_tune_run_t.paired_*). */
  int32_t paired_n;
  double paired_min_s, paired_max_s;
  /* Added: slow phases (tune_eval.c, retake): the last MI__TUNE_PHASE_KEEP paired readings (when,
   * the default's paired median; phase_n kept, the next at phase_next), whose least within
   * seconds is the floor a measurement's reading is held to; the measurements taken again, the
   * takes that added and their seconds. */
  double phase_at[MI__TUNE_PHASE_KEEP], phase_s[MI__TUNE_PHASE_KEEP];
  int32_t phase_n, phase_next;
  int32_t retaken, retakes;
  double retake_s, first_take_s; /* first_take_s: the measurements' first takes */
  double phase_expect_s;         /* the budget's measurements at the first one's time */
} mi_tune_task_t;

/** Before any measurement of the task: the accuracy's reference outputs computed once, in the
 * device's worker, into a new folder (t->ref_dir) that every later measurement reads, so no
 * worker runs the reference interpreter again. When the reference interpreter does not finish
 * within its share of the budget, the default configuration's outputs on the device become the
 * reference (t->ref_device, said in the log). The same measurement warms the worker up, so the
 * default's recorded time is not a fresh process's. Its timing is not recorded. Never fails the
 * tune: without a folder the workers compute the reference themselves, as before. */
void mi__tune_reference(mi_tune_task_t *t, const mi_space_t *s);
/** Removes the reference folder (end of the task). */
void mi__tune_reference_drop(mi_tune_task_t *t);
/** mi_evaluate_fn for a mi_tune_task_t: the configuration measured in the device's worker,
 * then recorded in the history. */
int32_t mi_tune_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                         mi_error_t *err);
/** The search's layer_times (mi_search_options_t, added) for a mi_tune_task_t: the last
 * measurement's per-layer times by graph node, from its mi_profile_t.layers. */
int32_t mi_tune_layer_times(void *ctx, double *seconds, int32_t cap);
/** The search's drops (mi_search_options_t, added) for a mi_tune_task_t: each point's accuracy
 * drop from a configuration job timed once, recorded nowhere; logged as the per-layer
 * sensitivities. Stops at the task's deadline (the rest NaN). */
int32_t mi_tune_drops(void *ctx, const mi_space_t *s, const int32_t *pts, int32_t n, double *drops);
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
  int32_t count; /* source tasks */
  int32_t rows;  /* their configurations read into the space */
  mi_meta_task_t *tasks;
  int32_t **points; /* per task, owned */
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

/** The layer-task phase before the joint search (tune_ltask.c): tunes the model's layer tasks
 * on the device (history first; fuse_conv: the device runs dw+pw units, each one task), fills
 * run's ltask fields, and gives the kernel dimensions to
 * hold (*frozen) and the point holding each task's best (*fixed); both malloc'd, NULL when the
 * model has no layer task. */
int32_t mi_tune_ltasks(mi_tune_task_t *task, mi_tune_run_t *run, const mi_graph_t *g,
                       const char *device_hash, int quiet, int fuse_conv, uint8_t **frozen,
                       int32_t **fixed, mi_error_t *err);

/* The recipe's seconds as shares of one tune (tune_call.c): the layer-task phase may run until
 * MI__TUNE_LTASK_SHARE of the budget is spent, the paired check keeps MI__TUNE_CONFIRM_SHARE of it
 * (at most MI__TUNE_CONFIRM_S), the search has the rest. When the search has only a few points
 * left once the kernel choices are the tasks', the layer phase may run until what those need at
 * its own pace, plus the check's share, is all that is left (tune_ltask.c). */
#define MI__TUNE_LTASK_SHARE 0.4
#define MI__TUNE_CONFIRM_SHARE 0.15
#define MI__TUNE_CONFIRM_S 60.0
/* A configuration other than the default is deployed only when the paired rounds show it
 * faster by at least this factor over its whole 95% interval: smaller gains did not hold from
 * one run to the next on a shared machine (blazeface_front on the Zen 4, docs/tuning.md: the
 * tune's check 1.016x, 95% CI 1.004-1.021, then `mi-host compare` a minute later 1.9% slower;
 * blazeface_back on the Zen 5, 2026-12-06: 1.038x, CI 1.014-1.043, then 8% slower), and a
 * non-default configuration that may be slower is not worth 2%. The median alone at 2% let the
 * second through. */
#define MI__TUNE_MIN_GAIN 1.02
#define MI__TUNE_MIN_GAIN_TEXT "2%"
/** 1 when the paired verdict `v` (tuned / default time) is significantly faster and its
 * interval's slow end is at least MI__TUNE_MIN_GAIN faster: what displaces the default. */
int mi__tune_pays(const mi_compare_ratio_t *v);
/** Seconds left of the task's budget (INFINITY: no budget). */
double mi__tune_left(const mi_tune_task_t *t);
/** Seconds the paired check keeps of the budget. */
double mi__tune_confirm_keep(const mi_tune_task_t *t);
/** Sets o->max_seconds to the search's share of what is left (unchanged without a budget). */
void mi__tune_share_search(const mi_tune_task_t *t, mi_search_options_t *o);
/** Logs what the time budget cut, when it cut anything. */
void mi__tune_time_note(const mi_tune_callbacks_t *cb, const mi_tune_run_t *run);

/* Calls out (tune_call.c). */
/** Formats the task's progress line and hands it to the progress callback. */
void mi__tune_progress(const mi_tune_task_t *t, int log, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Formats one log line and hands it to the log callback. */
void mi__tune_log(const mi_tune_callbacks_t *cb, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** The stop callback's answer (0: go on). */
int mi__tune_stopping(const mi_tune_callbacks_t *cb);
/** mi_progress_fn for a mi_tune_task_t: the progress line, then the trial callback. */
void mi__tune_progress_trial(void *ctx, const mi_trial_t *t, int32_t used, int64_t budget,
                             double elapsed_s);
/** 1 when the tune was asked to stop; then also ends the task's search at its next check. */
int mi_tune_stop_search(mi_tune_task_t *t);

/** The end-of-tune check: the chosen configuration (front[0]) against the default and the
 * runner-up (front[1]) in paired rounds; with latency as the first preference the default is
 * deployed when the choice is not significantly faster, and a significantly faster runner-up
 * takes the lead. Fills run's confirm fields; says what it does through the progress callback unless `quiet`. */
void mi_tune_confirm(mi_tune_task_t *task, mi_tune_run_t *run, int32_t first_preference,
                     int quiet);

#endif
