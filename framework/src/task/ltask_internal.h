/* ltask_internal.h - what the layer-task tuner's two stages share: a task's state, its choice on
 * a point, and the per-layer reading of a whole-model measurement (ltask_tune.c: the variants
 * and the warm start; ltask_knob.c: the knob search from each task's best variant). */
#ifndef METAINFER_LTASK_INTERNAL_H
#define METAINFER_LTASK_INTERNAL_H

#include "metainfer/mi_ltask.h"

typedef struct {
  char **cand; /* choices to try, [0] = the base point's */
  int32_t ncand;
  char *best; /* best choice so far (owned copy), NULL none */
  double best_s;
  int reused; /* 1: the best came from the history */
  int warm;   /* 1: its candidates came from its nearest measured tasks (2: they agreed) */
  /* Every choice measured for it in this run (what the node ran) and its time (NaN: failed):
   * the knob stage starts from the fastest of them that has knobs and never measures one
   * twice. */
  char **tried;
  double *tried_s;
  int32_t ntried, ctried;
  int knob_best; /* 1: the best came from the knob stage */
} mi__ltask_state_t;

/* Node i of task k's choice in pt: its own, or for a dw+pw unit "DW | PW" (malloc'd). */
char *mi__ltask_task_choice(const mi_space_t *s, const int32_t *pt, const mi_ltask_t *k, int32_t i);
/* Applies `choice` to every node of task k in pt; 1 when every node took it. */
int mi__ltask_apply_all(const mi_space_t *s, int32_t *pt, const mi_ltask_t *k, const char *choice);
/* The task's time per node from a measurement's per-node times; NaN when none was timed. */
double mi__ltask_seconds(const mi_ltask_t *k, const double *node_s);
/* Stores one measured choice of task k in the history (when there is one). */
void mi__ltask_put_row(const mi_ltask_options_t *o, const mi_ltask_t *k, const char *choice, int ok,
                       double seconds);
/* Remembers that task k ran `choice` (copied) in `seconds`. */
void mi__ltask_tried(mi__ltask_state_t *ts, const char *choice, double seconds);

/* The knob stage (ltask_knob.c): up to `rounds` more whole-model measurements, each moving every
 * measured task one knob step from its fastest choice with knobs; adds to out's counters. */
int32_t mi__ltask_knob_stage(const mi_graph_t *g, const mi_space_t *s, const mi_ltasks_t *t,
                             const int32_t *base, const mi_ltask_options_t *o, double phase_t0,
                             mi__ltask_state_t *ts, mi_ltask_result_t *out, mi_error_t *err);
/* Auto's stand-in (ltask_auto.c). The variant dimension of graph node `node`, -1 none. */
int32_t mi__ltask_variant_dim(const mi_space_t *s, int32_t node);
/* 1 when value v of variant dimension d, on node j of task k (0 its first node, 1 a dw+pw unit's
 * pointwise conv), runs the task's unit as one kernel as auto does: for a dw+pw unit's anchor, a
 * variant that absorbs the pointwise conv with its own choice (MI_FUSE_CONV and
 * MI_FUSE_MEMBER_CHOICES); any variant elsewhere, and auto. */
int mi__ltask_keeps_unit(const mi_space_t *s, const mi_ltask_t *k, int j, int32_t d, int32_t v);
/* The variant value that stands in for auto on node j of task k: of the explicit variants that
 * keep the unit and read a knob (in pt, tmp a scratch point), the one named by the fastest choice
 * ts tried, else the first of them; -1 none. */
int32_t mi__ltask_stand_in(const mi_space_t *s, const mi_ltask_t *k, int j, const mi__ltask_state_t *ts,
                           const int32_t *pt, int32_t *tmp);
/** Seconds the layer-task phase has left of o->max_seconds from its start phase_t0 (mi_now_s),
 * or of o->hard_seconds less o->reserve_runs rounds at the mean of the `rounds` run so far
 * (x1.5), whichever is more; INFINITY when no limit is set (or struct_size does not cover it). */
double mi__ltask_phase_left(const mi_ltask_options_t *o, double phase_t0, int32_t rounds);

#endif
