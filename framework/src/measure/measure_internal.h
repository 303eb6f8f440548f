/* measure_internal.h - what the measure module's files share: statistics helpers and the
 * worker's frames. */
#ifndef MI_MEASURE_INTERNAL_H
#define MI_MEASURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "metainfer/mi_measure.h"

/* Half the width of the distribution-free 95% confidence interval of the median of n samples
 * (order statistics n/2 -+ 0.98 sqrt(n)), relative to the median; INFINITY below 2 samples. */
double mi__median_ci(const double *samples, int32_t n);
/* The reference check's error of one output (profile.c): relative L2 with an absolute RMS floor
 * of 1e-3; NaN when an element is NaN. */
double mi__check_error(const float *out, const float *ref, int64_t n);
/* The reference check alone (profile.c): `g` in a new session on the device against the
 * reference interpreter on the profile's inputs; sets r's checked, check_ok, check_error. */
int32_t mi__profile_check(const struct mi_graph *g, mi_plugin_t *plugin, uint32_t device,
                          const mi_session_options_t *so, const mi_array_t *const *inputs,
                          mi_profile_t *r, mi_error_t *err);
/* The configuration that each timed sample of a profile is paired with (the tuner's default):
 * its session runs as many runs as the sample right after it, in the same process, so that the
 * sample's ratio to it says what the machine's speed of that moment does not (the profile's
 * paired_*). Its graph, session options and inputs (as mi__profile_run_on's). */
typedef struct mi__anchor {
  const struct mi_graph *g;
  const mi_session_options_t *so;
  const mi_array_t *const *inputs;
} mi__anchor_t;
/* mi_profile_run on given inputs (g's input_count arrays, copied; NULL: deterministic random
 * FP32 data and zeros, as mi_profile_run): the configuration job's runs take its first sample,
 * so an input random data cannot fill (Silero VAD's int64 sample rate, from the calibration
 * folder or a fixed value) is what the model really gets. */
int32_t mi__profile_run_on(const struct mi_graph *g, mi_plugin_t *plugin, uint32_t device,
                           const mi_session_options_t *so, const mi_measure_options_t *mo,
                           int check, const mi_array_t *const *inputs,
                           const mi__anchor_t *anchor, mi_profile_t **out, mi_error_t *err);

/* Appends stats as a JSON object {"n":..,"median":..,...}, values scaled by `scale`. */
void mi__sbuf_json_stats(mi__sbuf_t *b, const mi_stats_t *st, double scale);

/* How a measurement that caught the device's timer lying starts its message (profile.c); the
 * pool quarantines such a device at once (worker.c). */
#define MI__LIE_PREFIX "implausible device time"
/* The start of the error of a measurement whose outputs disagree with the reference (worker.c). */
#define MI__WRONG_PREFIX "wrong results"

/* The 1-minute load average (/proc/loadavg), NaN when it cannot be read; *cpus (may be NULL)
 * the online CPUs, at least 1. */
double mi__load1(int32_t *cpus);

/* Worker frames: a header, then `length` payload bytes. */
enum {
  MI__FRAME_MAGIC = 0x4d49574bu, /* "MIWK" */
  MI__JOB_PROFILE = 1,
  MI__JOB_FINGERPRINT = 2,
  MI__REPLY_PROFILE = 11,     /* mi_profile_t, layer_count mi_layer_profile_t, nest_count mi_nest_row_t */
  MI__REPLY_FINGERPRINT = 12, /* mi_device_fingerprint_t */
  MI__REPLY_ERROR = 13,       /* mi_error_t */
  MI__JOB_CONFIG = 3,         /* mi__config_job_t, then its texts (worker_config.c) */
  MI__REPLY_CONFIG = 14,      /* mi_worker_config_result_t, mi_profile_t, its layers, branch rows */
  MI__JOB_PROBE = 4,          /* a kernel_prepare probe (worker_probe.c) */
  MI__REPLY_PROBE = 15,       /* int32_t: the plugin's status */
  MI__JOB_CHECK = 5,          /* a check_config question (worker_probe.c) */
  MI__REPLY_CHECK = 16,       /* int32_t status, then the plugin's mi_error_t */
  MI__JOB_INTERLEAVE = 6,     /* mi__interleave_job_t, then its configuration jobs */
  MI__REPLY_INTERLEAVE = 17   /* mi__interleave_reply_t */
};

typedef struct mi__frame {
  uint32_t magic, type, length;
} mi__frame_t;

/* A job, sent as raw bytes: parent and worker (the mi-worker program) come from one build, and
 * the worker checks that with mi__wire_tag before it serves anything. */
typedef struct mi__job {
  char model[4096];
  mi_measure_options_t mo;
  int32_t check;
  int32_t knob_count; /* device knobs */
  char knob_name[16][64];
  int64_t knob_value[16];
  int32_t allow_host_fallback; /* mi_session_options_t's */
} mi__job_t;

/* Writes a frame (header + two payload parts); MI_ERR_IO when the peer is gone. */
int32_t mi__frame_send(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb);
/* The worker's reply to a job (worker_child.c): an error instead when the plugin printed to
 * stdout or used a forged host handle while serving it. */
int32_t mi__worker_reply(int fd, uint32_t type, const void *a, size_t na, const void *b,
                         size_t nb);
/* A profile's reply body: its layers, then its branch rows (malloc'd, *n bytes); NULL when out
 * of memory. mi__worker_job reads it back. */
void *mi__profile_body(const mi_profile_t *p, size_t *n);
/* Waits until fd has data to read or `deadline` (mi__now_s seconds) passes, retrying after
 * signals: 1 readable, -1 timed out, -2 poll failed. */
int mi__poll_readable(int fd, double deadline);
/* Reads exactly n bytes before `deadline` (mi__now_s seconds; <= 0: no deadline).
 * Returns 1 done, 0 peer closed, -1 timeout, -2 I/O error. */
int mi__read_full(int fd, void *buf, size_t n, double deadline);

/* Configuration jobs (worker_config.c): the child's cache of the original model and samples,
 * and the function that serves one job. */
typedef struct mi__config_cache {
  char key[8192]; /* model path, input shapes, calibration, seed */
  struct mi_graph *g;
  void *samples; /* mi_xf_samples_t */
  /* The original's reference outputs on each sample (sample k's at [k * output_count]), filled
   * by the first accuracy measurement: every later configuration of the model compares with
   * the same outputs, and on a real model the reference interpreter takes seconds a run. */
  struct mi_array **ref_out;
  /* Bias correction's means of the original over the samples (mi_xf_means_t), computed by the
   * first transform that needs them or read from the job's reference folder (means.bin). */
  void *means;
  int means_saved; /* 1: the folder has them (read from it, or written) */
  /* Set per job: the folder that keeps the reference outputs across workers ("" none), whether
   * this job's own device outputs may become them, and whether the ones held came from a
   * device (then a transformed model's reference check is not run: worker_config.c). */
  const char *ref_dir;
  int ref_device, ref_is_device;
  char ref_from[256]; /* the folder ref_out was read from or written to ("" none): another drops them */
  /* The worker's fallback device (mi_worker_options_t.fallback), NULL for none: every session of
   * a job that allows host fallback gets it. */
  struct mi_plugin *fb;
  uint32_t fb_device;
  /* The anchor's transformed graph (NULL: the model as it is) for the transform text
   * anchor_xf (NULL: none made yet): a tune pairs every trial with the same default. */
  char *anchor_xf;
  struct mi_graph *anchor_g;
} mi__config_cache_t;
/* Gives session options `so` the worker's fallback device when they allow host fallback. */
static inline void mi__config_fallback(const mi__config_cache_t *c, mi_session_options_t *so) {
  so->fallback_plugin = so->allow_host_fallback ? c->fb : NULL;
  so->fallback_device = c->fb_device;
}
#define MI__CONFIG_JOB_MAX (16u << 20)
/* A job as sent (configuration, probe, interleaved): a fixed header of hsize bytes, then `count`
 * parts whose lengths the header holds in lens[]. mi__job_pack joins them into one malloc'd
 * payload *out (*len its size); an error when it passes MI__CONFIG_JOB_MAX ("worker: WHAT too
 * large") or memory runs out. worker_config.c */
int32_t mi__job_pack(const void *head, size_t hsize, const uint32_t *lens,
                     const void *const *parts, int count, const char *what, char **out,
                     size_t *len, mi_error_t *err);
/* The worker's side for jobs whose parts are texts: copies the header into head (lens points
 * into it), then t[i] at each text inside payload, each non-empty and NUL-terminated; else
 * "worker: short|malformed WHAT job". */
int32_t mi__job_texts(const void *payload, size_t n, void *head, size_t hsize,
                      const uint32_t *lens, int count, const char **t, const char *what,
                      mi_error_t *err);
void mi__worker_serve_config(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload,
                             size_t n, mi__config_cache_t *cache);
void mi__config_cache_free(mi__config_cache_t *c);

/* Interleaved runs (worker_interleave.c): one worker prepares every configuration of a comparison
 * and runs them in turn, a fresh order each cycle, so that what changes over milliseconds (the
 * machine's other work, the CPU it runs on) and what a process brings with it reach all of them
 * alike. Each configuration's job is a configuration job as above (len[c] bytes each). */
#define MI__INTERLEAVE_MAX_CYCLES 256
typedef struct mi__interleave_job {
  int32_t count;
  uint32_t len[MI_COMPARE_MAX_CONFIGS];
  uint64_t seed; /* the order of each cycle */
  int32_t check; /* first compare each configuration's outputs with the reference's */
} mi__interleave_job_t;
typedef struct mi__interleave_reply {
  int32_t count, cycles;                   /* configurations, timed cycles */
  int32_t device_clock;                    /* 1: the devices' timers, 0: the wall clock */
  double median_s[MI_COMPARE_MAX_CONFIGS]; /* each one's median time per run */
} mi__interleave_reply_t;
/* One inference of session `s` and one of the reference interpreter on `g` (the graph the
 * session runs) with the same inputs, compared by mi_outputs_check: *ok and *rel_err; `outs`
 * are left empty (profile.c). `keep` (nout entries, or NULL): the reference's outputs are read
 * from it when its first is set, else computed and left in it, for another session of the same
 * graph and inputs; the caller destroys them. */
int32_t mi__reference_check(mi_session_t *s, const struct mi_graph *g, mi_array_t **in,
                            int32_t nin, mi_array_t **outs, int32_t nout, mi_array_t **keep,
                            int *ok, double *rel_err, mi_error_t *err);
/* 0..count-1 in an order drawn from rng (Fisher-Yates; compare.c). */
void mi__compare_order(mi_rng_t *rng, int8_t *ord, int32_t count);
void mi__worker_serve_interleave(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload,
                                 size_t n, mi__config_cache_t *cache);
struct mi_worker_pool;
struct mi_worker_config;
int32_t mi__worker_interleave(struct mi_worker_pool *p, const char *spec,
                              const struct mi_worker_config *configs, int32_t count,
                              const mi_measure_options_t *mo, uint64_t seed, int check,
                              mi__interleave_reply_t *out, mi_error_t *err);
/* The accuracy of a configuration from the device's outputs (worker_accuracy.c): `run_graph`
 * in a session on the device against `orig` (the cache's graph) on the reference, over the
 * cache's samples; the reference outputs are computed once per cache. */
int32_t mi__device_accuracy(const struct mi_graph *run_graph,
                            mi_plugin_t *pl, uint32_t dev, const mi_session_options_t *so,
                            mi__config_cache_t *cache, double *rel_l2, double *worst,
                            double *top1, mi_error_t *err);

/* Probe jobs (worker_probe.c): the child's model with views of its constants. */
typedef struct mi__probe_cache {
  char key[8192]; /* model path, input shapes */
  struct mi_graph *g;
  struct mi_array **consts;
} mi__probe_cache_t;
void mi__worker_serve_probe(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload, size_t n,
                            mi__probe_cache_t *cache);
void mi__probe_cache_free(mi__probe_cache_t *c);
void mi__worker_serve_check(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload, size_t n);
/* Parent side (worker.c): sends a job, reads a reply of `prefix` bytes + profile + layers. */
struct mi_worker_pool;
struct mi_profile;
int32_t mi__worker_job(struct mi_worker_pool *p, const char *spec, uint32_t type, const void *job,
                       size_t njob, uint32_t reply_type, size_t prefix, void *prefix_out,
                       struct mi_profile **out, mi_error_t *err);

/* Parent side (worker.c): sends a job whose reply is exactly `nout` bytes of `reply_type`. */
int32_t mi__worker_exchange(struct mi_worker_pool *p, const char *spec, uint32_t type,
                            const void *job, size_t njob, uint32_t reply_type, void *out,
                            size_t nout, mi_error_t *err);

/* A hash of the version and the sizes of every struct that travels raw between host and worker:
 * both sides compute it, the host passes its own to the worker (--wire). */
uint64_t mi__wire_tag(void);
/* The mi-worker executable (worker.c): `given`, else the one next to the running program, else
 * the build tree's; *out is malloc'd. */
int32_t mi__worker_find(const char *given, char **out, mi_error_t *err);
/* The mi-worker program in preflight mode (worker_preflight.c). */
int mi__worker_preflight_main(int argc, char **argv);

/* The descriptor on which an exec'd worker finds its socket. */
#define MI__WORKER_FD 3

#endif
