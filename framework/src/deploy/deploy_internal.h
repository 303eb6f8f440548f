/* deploy_internal.h - what the deploy module's files share: the table's size bound, the runtime's state,
 * the decision log and the configuration switch. */
#ifndef MI_DEPLOY_DEPLOY_INTERNAL_H
#define MI_DEPLOY_DEPLOY_INTERNAL_H

#include <stdio.h>

#include "core/core.h"
#include "metainfer/mi_core.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_runtime.h"
#include "metainfer/mi_transform.h"
#include "metainfer/mi_tune.h"
#include "plugin/plugin.h"

/* A deployment table is at most 64 MiB, when read (mi__read_file) and when parsed. */
#define MI__DEPLOY_MAX_BYTES ((size_t)64 << 20)

/** Frees the strings of one configuration and zeroes it. */
void mi__deploy_config_clear(mi_deploy_config_t *c);
/** Deep copy of a configuration into *dst (zeroed first). */
int32_t mi__deploy_config_copy(mi_deploy_config_t *dst, const mi_deploy_config_t *src);

/** The runtime. */
struct mi_runtime {
  mi_runtime_options_t o;
  mi_deploy_table_t *table;
  int32_t entry; /* index in table->entries */
  char *table_path;
  char *log_path;    /* NULL: no log */
  char *model_path;  /* resolved ONNX file */
  char *calibration; /* recipe's calibration folder or NULL */
  uint64_t calib_seed;
  char *inputs; /* "NAME:dims;..." or NULL */
  int32_t has_bound[MI_OBJ_COUNT];
  double bound[MI_OBJ_COUNT];
  char spec[96];
  char manifest[4096]; /* the device plugin's manifest, to reopen it */
  uint32_t device;
  mi__plugin_entry_t *plugin; /* the runtime's own instance */
  /* The fallback device the tuner's workers measured with (mi_registry_cpu_fallback), pinned
   * like the device's plugin: its manifest ("" none), index and own instance. */
  char fb_manifest[4096];
  char fb_spec[96]; /* the fallback device as PLUGIN:INDEX, or "ref" */
  uint32_t fb_device;
  mi__plugin_entry_t *fb_plugin;
  mi_graph_t *graph;        /* original model, inputs fixed, sorted, shapes inferred */
  mi_xf_samples_t *samples; /* calibration samples, as the tuner's worker made them */
  mi_space_t *space;        /* the joint space of (model, device) on `plugin` */
  mi_graph_t *xgraph;       /* the transformed model the session runs (or NULL) */
  mi_session_t *session;
  mi_deploy_config_t current; /* the configuration running now */
  int32_t current_index;      /* in the entry, -1 when adopted by a re-adaptation */
  char (*tried)[17];          /* ids of configurations that drifted (or failed) here */
  int32_t tried_count;
  uint32_t model_dims; /* the space's model-side dimensions (the recipe's) */
  int32_t ref_pending; /* 1: no tuned latency, the first window sets the reference */
  mi_drift_detector_t det;
  mi_runtime_info_t info;
  char stack[512], stack_hash[17];
};

/** Loads (or reloads) the runtime's own plugin instance from its manifest. */
int32_t mi__rt_open_device(mi_runtime_t *rt, mi_error_t *err);
/** Instantiates configuration `c` (model side, session) on the current device instance,
 * replacing the running one only on success; resets the detector to its tuned latency. */
int32_t mi__rt_instantiate(mi_runtime_t *rt, const mi_deploy_config_t *c, int32_t index,
                           mi_error_t *err);
/** 1 when every bound that the figures can be checked against holds. */
int mi__rt_meets_bounds(const mi_runtime_t *rt, const double *fig);
/** Reacts to an alarm: the next fallback that meets the bounds, else a re-adaptation. */
int32_t mi__rt_on_drift(mi_runtime_t *rt, mi_error_t *err);
/** Checks the software stack by policy (at open). */
int32_t mi__rt_check_stack(mi_runtime_t *rt, mi_error_t *err);
/** Measures configuration `c` in this process on the current instance; fig[] gets its
 * latency (ms), memory (MB) and energy (mJ), NaN where not measured. */
int32_t mi__rt_measure_point(mi_runtime_t *rt, const mi_deploy_config_t *c, int32_t repeats,
                             double *fig, mi_error_t *err);

/* Tells the caller (mi_runtime_options_t.on_step) that a long step begins. */
void mi__rt_step(const mi_runtime_t *rt, const char *step);

/** Appends one decision to the JSON Lines log: {"ts":..,"event":..,<fields>} where `fields` is
 * a JSON fragment of extra members ("" for none). Failures to log never stop the runtime. */
void mi__rt_log(mi_runtime_t *rt, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
