/* worker_config.h - what the configuration job (worker_config.c) shares with the interleaved
 * job (worker_interleave.c): the job's layout as sent, and the worker's steps that load, transform
 * and configure a model. */
#ifndef MI_MEASURE_WORKER_CONFIG_H
#define MI_MEASURE_WORKER_CONFIG_H

#include "measure/measure_internal.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_transform.h"

enum { T_MODEL,
       T_INPUTS,
       T_XF,
       T_HW,
       T_CALIB,
       T_FIXED,
       T_REFDIR,
       T_ANCHOR_XF,
       T_ANCHOR_HW,
       T_COUNT };

/* The job as sent: this header, then T_COUNT texts, each NUL-terminated, lengths included. */
typedef struct cjob {
  mi_measure_options_t mo;
  int32_t check, samples, accuracy;
  uint64_t seed;
  double accuracy_bound; /* mi_worker_config_t.accuracy_bound, 0 when none */
  int32_t ref_device;    /* mi_worker_config_t.ref_device */
  int32_t accuracy_only; /* mi_worker_config_t.accuracy_only */
  int32_t anchor;        /* mi_worker_config_t.paired: T_ANCHOR_XF and T_ANCHOR_HW hold it */
  uint32_t len[T_COUNT];
} cjob_t;

/* Session options parsed from hw_text; every pointer points into `text` or the arrays. */
typedef struct hw_parsed {
  mi_session_options_t so;
  mi_knob_value_t *dev;
  mi_node_choice_t *nodes;
  mi_knob_value_t *knobs;
} hw_parsed_t;

/* One configuration job as sent (a cjob_t, then its texts); malloc'd, *len its size. */
char *mi__config_payload(const mi_worker_config_t *cfg, const mi_measure_options_t *mo, int check,
                         size_t *len, mi_error_t *err);
/* Reads one configuration job: *job, and t[] pointing at its texts inside `payload`. */
int32_t mi__config_job_parse(const void *payload, size_t n, cjob_t *job, const char **t,
                             mi_error_t *err);
/* The original model and its samples, loaded once per (model, inputs, calibration, seed). */
int32_t mi__config_cached_model(mi__config_cache_t *c, const cjob_t *job, const char *const *t,
                                mi_error_t *err);
/* The model-side transform of `text` applied to the cached model: *xg, or NULL (and *xc NULL)
 * when the text is empty and the model runs as it is. Bias correction's means are kept in the
 * cache and in ref_dir's means.bin ("": the cache only). */
int32_t mi__config_apply_xf(mi_plugin_t *pl, uint32_t dev, mi__config_cache_t *cache, const char *ref_dir,
                            const char *text, mi_xf_config_t **xc, mi_graph_t **xg,
                            mi_error_t *err);
/* The inputs a job's runs take: the cached samples' first one, input by input where it fits the
 * graph `g` runs (same dtype and shape; a transform that changed the interface gets NULL there:
 * random data); a malloc'd array of g->input_count borrowed pointers, NULL when out of memory. */
const mi_array_t **mi__config_first_sample(const mi__config_cache_t *c, const mi_graph_t *g);
/* Session options from the job's hardware text (pointers into `text`). */
int32_t mi__config_hw_parse(char *text, hw_parsed_t *h, mi_error_t *err);
void mi__config_hw_free(hw_parsed_t *h);

#endif
