/* mi.h - the public API of libmetainfer, the Meta Infer host library: include this one. */
#ifndef METAINFER_MI_H
#define METAINFER_MI_H

/* Errors, arrays, .npy, the reference interpreter, plugins and sessions. */
#include "metainfer/mi_core.h"
/* Measurement, history and fingerprints. */
#include "metainfer/mi_measure.h"
/* Model-side transforms and accuracy. */
#include "metainfer/mi_transform.h"
/* The joint search space, Pareto selection, recipes and search strategies. */
#include "metainfer/mi_tune.h"
/* Surrogate cost models, meta-learning across tasks and the surrogate-guided strategy. */
#include "metainfer/mi_meta.h"
/* Layer tasks: per-workload kernel choices shared across models, kept in the history. */
#include "metainfer/mi_ltask.h"
/* The deployment table, the runtime and its drift monitor. */
#include "metainfer/mi_runtime.h"
/* The tuner as a library call: a recipe in, fronts, deployment table and history rows out. */
#include "metainfer/mi_tuner.h"

#endif /* METAINFER_MI_H */
