/* tune_eval.c - mi-host tune's evaluator: a point becomes a transform configuration text and
 * session options, measured in the device's crash-isolated worker (which applies the transform
 * and computes the accuracy drop), recorded in the history; and the history replayed (resume). */
#define _GNU_SOURCE 1 /* mkdtemp */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "space/space.h"
#include "tune/tune_internal.h"

/* The two canonical halves of a point: hardware (mi_config_canonical) and model side. */
static int32_t halves(const mi_space_t *s, const int32_t *pt, char **hw_text, char **xf_text,
                      mi_space_hw_t **hw, mi_xf_config_t **xcp, mi_error_t *err) {
  mi_xf_config_t *xc = NULL;
  int32_t rc;
  *hw_text = *xf_text = NULL;
  *hw = NULL;
  if ((rc = mi_space_xf_config(s, pt, &xc, err)) != MI_OK) return rc;
  rc = mi_xf_config_canonical(xc, xf_text, err);
  if (xcp && rc == MI_OK) *xcp = xc;
  else
    mi_xf_config_destroy(xc);
  if (rc != MI_OK) return rc;
  if ((rc = mi_space_hw_create(s, pt, hw, err)) != MI_OK) goto fail;
  if (!(*hw_text = mi_config_canonical(mi_space_hw_options(*hw)))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
    goto fail;
  }
  return MI_OK;
fail:
  if (xcp) {
    mi_xf_config_destroy(*xcp);
    *xcp = NULL;
  }
  free(*xf_text);
  *xf_text = NULL;
  mi_space_hw_destroy(*hw);
  *hw = NULL;
  return rc;
}

/* Frees what halves() made. */
static void halves_free(mi_xf_config_t *xc, mi_space_hw_t *hw, char *hw_text, char *xf_text) {
  mi_xf_config_destroy(xc);
  mi_space_hw_destroy(hw);
  free(hw_text);
  free(xf_text);
}

static void record(mi_tune_task_t *t, const char *hw, const char *xf, int32_t rc,
                   const mi_profile_t *prof, const mi_worker_config_result_t *res,
                   const char *failure) {
  mi_record_t r = *t->base;
  char acc[128], stack[768], shash[17];
  char *layers = NULL;
  if (!t->history) return;
  r.run_id = t->run_id;
  r.config_canonical = hw;
  r.model_config_canonical = xf;
  r.ok = rc == MI_OK;
  r.failure = rc == MI_OK ? NULL : failure;
  r.clock = "wall";
  if (prof) {
    layers = mi_record_set_profile(&r, prof);
    mi_record_set_fallback_stack(&r, prof, stack, sizeof stack, shash);
  }
  if (res && res->has_accuracy) {
    snprintf(acc, sizeof acc, "{\"rel_l2\":%.17g,\"top1\":%.17g}", res->rel_l2, res->top1);
    r.accuracy_json = acc;
  }
  if (mi_history_put(t->history, &r, NULL, NULL) == MI_OK) t->recorded++;
  free(layers);
}

/* The measurement's per-layer times, kept for the search (mi_tune_layer_times): the device's
 * clock where the layer has one (as end to end), else wall; folded layers none. */
/* Room for n layers in t->layer_node / layer_sec; 0 when out of memory (layers are optional: the
 * search goes on end to end). */
static int layers_reserve(mi_tune_task_t *t, int32_t n) {
  int32_t *nn;
  double *ns;
  if (n <= t->layer_cap) return 1;
  nn = realloc(t->layer_node, (size_t)n * sizeof *nn);
  if (nn) t->layer_node = nn;
  ns = nn ? realloc(t->layer_sec, (size_t)n * sizeof *ns) : NULL;
  if (ns) t->layer_sec = ns;
  if (!nn || !ns) return 0;
  t->layer_cap = n;
  return 1;
}

static void keep_layers(mi_tune_task_t *t, const mi_profile_t *prof, double scale) {
  if (!layers_reserve(t, prof->layer_count)) return;
  for (int32_t i = 0; i < prof->layer_count; i++) {
    const mi_layer_profile_t *l = &prof->layers[i];
    t->layer_node[i] = mi__tune_node_of(t->graph, l->name, l->node);
    t->layer_sec[i] = l->where == 2 ? NAN : scale * (l->has_device_time ? l->device.median : l->wall.median);
  }
  t->layer_n = prof->layer_count;
}

int32_t mi_tune_layer_times(void *ctx, double *seconds, int32_t cap) {
  mi_tune_task_t *t = ctx;
  int32_t got = 0;
  for (int32_t i = 0; i < cap; i++) seconds[i] = NAN;
  for (int32_t i = 0; i < t->layer_n; i++)
    if (t->layer_node[i] >= 0 && t->layer_node[i] < cap) {
      seconds[t->layer_node[i]] = t->layer_sec[i];
      got++;
    }
  return got;
}

/* A failure that says nothing about the configuration: the worker could not start, found no
 * such plugin or model, speaks another wire, the device was already quarantined, or the tune is
 * being interrupted (Ctrl-C reaches the workers too). Recording it would make every rerun replay
 * the failure instead of measuring (issue: a run without --plugins poisoned the history). */
static int setup_failure(const mi_tune_task_t *t, int32_t rc, const mi_error_t *err,
                         int quarantined_before) {
  const char *m = err ? err->message : "";
  if (quarantined_before || mi__tune_stopping(t->cb)) return 1;
  if (rc == MI_ERR_IO || rc == MI_ERR_NOT_FOUND || rc == MI_ERR_ABI || rc == MI_ERR_PARSE) return 1;
  return rc == MI_ERR_CRASHED && (strstr(m, "signal 2 ") || strstr(m, "signal 15 "));
}

/* The task's configuration job for one point's halves: its model, samples and accuracy. */
static void task_job(const mi_tune_task_t *t, const mi_xf_config_t *xc, const mi_space_hw_t *hw,
                     mi_worker_config_t *wc) {
  memset(wc, 0, sizeof *wc);
  wc->struct_size = sizeof *wc;
  wc->model = t->model_path;
  wc->inputs = t->inputs;
  wc->xf = xc;
  wc->so = mi_space_hw_options(hw);
  wc->calibration = t->recipe->calibration;
  wc->seed = t->recipe->seed;
  wc->samples = 2;
  wc->accuracy = 1;
  wc->ref_dir = t->ref_dir[0] ? t->ref_dir : NULL;
}

/* How much slower than the best so far a configuration's first runs may be before its timing
 * stops (latency-only tunes): beyond the load's drift (2-5% in minutes, 20% under load) by far. */
#define SLOW_FACTOR 2.0

/* The default configuration's halves in t->anchor_xc and t->anchor_hw, made once per task (the
 * accuracy reference's measurement and every paired trial use them): MI_OK, or why they could
 * not be made (tried again at the next call). */
static int32_t default_halves(mi_tune_task_t *t, const mi_space_t *s, mi_error_t *err) {
  int32_t *pt, rc;
  char *hw_text = NULL, *xf_text = NULL;
  if (t->anchor_hw) return MI_OK;
  if (!(pt = malloc(((size_t)mi_space_dim_count(s) + 1) * sizeof *pt)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
  mi_space_default(s, pt);
  mi_space_repair(s, pt, NULL, NULL); /* as the search measures it */
  if ((rc = halves(s, pt, &hw_text, &xf_text, &t->anchor_hw, &t->anchor_xc, err)) == MI_OK) {
    free(hw_text);
    free(xf_text);
  }
  free(pt);
  return rc;
}

/* The default configuration as the anchor of the task's measurements; 0 when there is none
 * (then each measurement's own median stands, as before). */
static int anchor_ready(mi_tune_task_t *t, const mi_space_t *s) {
  mi_error_t err;
  return t->pool && default_halves(t, s, &err) == MI_OK;
}

/* The default's paired time that every paired latency of the task is scaled to: the first
 * paired measurement's (measured or replayed). */
static void anchor_ref(mi_tune_task_t *t, double paired_s) {
  if (t->anchor_ref_s > 0) return;
  t->anchor_ref_s = paired_s;
  mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
               "%s: each measurement is paired with the default configuration, run in turn with it in "
               "the worker; its latency is its ratio to those runs times their %.4g ms of the first "
               "measurement, so that the machine's speed of the moment does not rank configurations",
               t->spec, t->anchor_ref_s * 1e3);
}

/* A measurement's latency (seconds) and the factor that takes its layers' times to the same
 * footing: with paired runs, its ratio to them times the first measurement's paired median, so
 * that measurements minutes apart compare as if taken at one moment; else its own median. */
static double anchored_latency(mi_tune_task_t *t, const mi_profile_t *prof, double *scale) {
  *scale = 1;
  if (prof->paired_count < 2 || !(prof->paired_ratio > 0) || !(prof->paired_s > 0))
    return prof->latency.stats.median;
  anchor_ref(t, prof->paired_s);
  t->anchor_speed = prof->paired_s / t->anchor_ref_s;
  if (t->paired_n == 0 || prof->paired_s < t->paired_min_s) t->paired_min_s = prof->paired_s;
  if (t->paired_n == 0 || prof->paired_s > t->paired_max_s) t->paired_max_s = prof->paired_s;
  t->paired_n++;
  *scale = t->anchor_ref_s / prof->paired_s;
  return prof->paired_ratio * t->anchor_ref_s;
}

/* Slow phases. On a shared virtual machine the same runs take 1.15-2.5x their time in phases of
 * one to ten seconds, every few seconds (the default's paired median in oww_embedding's tunes:
 * 0.61 ms, then 0.70-0.80, 0.97 or 1.27-1.8 ms for 4-18 measurements in a row), and a phase
 * changes which kernel is faster, not only how fast: in one, the convs ran 1.31x their time,
 * the max-pools 2.56x and the default as a whole 1.85x. One tune's whole layer-task phase ran in
 * one: it took conv.im2col_gemm for 8 of the model's 20 convs (0.158 against packed_gemm's
 * 0.170 ms there, 1.4-2.2x slower once the phase had passed) and the tune ended on the default.
 * Pairing does not undo that: the paired ratio of those choices read 0.91 in the phase, 1.39 out
 * of it. So a measurement whose default read over MI__TUNE_PHASE_RATIO times the floor (the
 * least paired reading of the last MI__TUNE_PHASE_WINDOW_S) is taken again after a pause
 * (PHASE_PAUSE_S, doubled at each retake up to PHASE_PAUSE_MAX_S), up to PHASE_RETAKES times,
 * and the take with the quietest default is kept (the others are not recorded: the history
 * holds what the search used). The task's first measurement is taken again until its takes span
 * PHASE_SETTLE_S, so that the floor is not a phase's; a measurement of a second or more spans
 * phases in its own samples and is taken once. A measurement's retakes take at most
 * PHASE_WAIT_S, a task's at most PHASE_SHARE times what its measurements take (their first
 * takes, or what the budget's would take at the first one's time while that is more),
 * PHASE_TIME_SHARE of the recipe's seconds and PHASE_TASK_S (a recipe of 3000 s, the test
 * suite's vulkan one, would otherwise allow 300): under a load that does not pass (two test
 * suites at once on two cores) they would otherwise wait at every measurement, and
 * mlsd_tiny_320's took 56 s of a 218 s tune under the first of these caps alone. The settling takes at most
 * PHASE_SETTLE_SHARE of what the budget's measurements would take: a tune of 4 measurements of
 * 0.05 s (the test suite's) does not wait 2 s for it. */
#define PHASE_PAUSE_S 0.2
#define PHASE_PAUSE_MAX_S 1.0
#define PHASE_RETAKES 12
#define PHASE_SETTLE_S 2.0
#define PHASE_SETTLE_TAKES 8
#define PHASE_WAIT_S 12.0
#define PHASE_SHARE 3.0
#define PHASE_TIME_SHARE 0.1
#define PHASE_TASK_S 30.0
#define PHASE_SETTLE_SHARE 0.5

static int paired_profile(const mi_profile_t *p) {
  return p && p->paired_count >= 2 && p->paired_ratio > 0 && p->paired_s > 0;
}

/* Keeps profile p's paired reading among the task's recent ones. */
static void phase_note(mi_tune_task_t *t, const mi_profile_t *p, double at) {
  if (!paired_profile(p)) return;
  t->phase_at[t->phase_next] = at;
  t->phase_s[t->phase_next] = p->paired_s;
  t->phase_next = (t->phase_next + 1) % MI__TUNE_PHASE_KEEP;
  if (t->phase_n < MI__TUNE_PHASE_KEEP) t->phase_n++;
}

/* The least paired reading of the last MI__TUNE_PHASE_WINDOW_S (INFINITY: none). */
static double phase_floor(const mi_tune_task_t *t, double now) {
  double f = INFINITY;
  for (int32_t i = 0; i < t->phase_n; i++)
    if (now - t->phase_at[i] <= MI__TUNE_PHASE_WINDOW_S && t->phase_s[i] < f) f = t->phase_s[i];
  return f;
}

/* 1 when the kept take p (the take-th, 0 first) is to be taken again: its default read over the
 * floor, or the task's first measurement has not spanned PHASE_SETTLE_S (settle). The first take
 * began at t0 and ended at t1. */
static int phase_retake(mi_tune_task_t *t, const mi_profile_t *p, int32_t take, int settle, double t0,
                        double t1) {
  /* spent: the task's retakes, this one's included; phase_expect_s: the budget's measurements at
   * the first one's time */
  double now = mi_now_s(), spent = t->retake_s + (now - t1);
  if (settle && take == 0)
    t->phase_expect_s = (double)(t->budget > 0 ? t->budget : 1) * (t1 - t0);
  if (!paired_profile(p) || mi__tune_stopping(t->cb)) return 0;
  if (now - t1 >= PHASE_WAIT_S || spent >= PHASE_SHARE * fmax(t->first_take_s, t->phase_expect_s)) return 0;
  if (spent >= PHASE_TASK_S || (t->recipe->budget_seconds > 0 && spent >= PHASE_TIME_SHARE * t->recipe->budget_seconds))
    return 0;
  if (t->deadline > 0 && mi__tune_left(t) < 2 * PHASE_SETTLE_S) return 0;
  if (settle && take + 1 < PHASE_SETTLE_TAKES && now - t0 < fmin(PHASE_SETTLE_S, PHASE_SETTLE_SHARE * t->phase_expect_s))
    return 1;
  return take < PHASE_RETAKES && p->paired_s > MI__TUNE_PHASE_RATIO * phase_floor(t, now);
}

/* Waits before retake `take` (1 first). */
static void phase_pause(int32_t take) {
  double s = fmin(PHASE_PAUSE_S * (double)(1 << (take < 8 ? take - 1 : 7)), PHASE_PAUSE_MAX_S);
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&ts, NULL);
}

int32_t mi_tune_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                         mi_error_t *err) {
  mi_tune_task_t *t = ctx;
  mi_space_hw_t *hw = NULL;
  mi_profile_t *prof = NULL;
  mi_measure_options_t mo;
  mi_worker_config_t wc;
  mi_worker_config_result_t res;
  char *hw_text = NULL, *xf_text = NULL;
  int32_t rc;
  memset(&res, 0, sizeof res);
  mi_xf_config_t *xc = NULL;
  int quarantined;
  if (mi_tune_stop_search(t)) return mi_errorf(err, MI_ERR_INTERNAL, "interrupted");
  if ((rc = halves(s, pt, &hw_text, &xf_text, &hw, &xc, err)) != MI_OK) return rc;
  mi_measure_options_default(&mo);
  mo.warmup = t->warmup;
  mo.min_repeats = t->repeats;
  mo.max_repeats = t->repeats * 2;
  mo.budget_s = 5;
  /* Latency alone is minimised: a configuration whose first two timed runs both take over
   * SLOW_FACTOR times the best feasible latency so far cannot be on the front, and timing it in
   * full costs seconds a run on a real model; its two runs are its (honest, short) record. */
  if (t->objective_count == 1 && t->first_objective == MI_OBJ_LATENCY && isfinite(t->best) &&
      t->best > 0)
    mo.stop_above_s = SLOW_FACTOR * t->best * 1e-3 * (t->anchor_speed > 0 ? t->anchor_speed : 1);
  task_job(t, xc, hw, &wc);
  if (anchor_ready(t, s)) {
    wc.paired = 1;
    wc.paired_xf = t->anchor_xc;
    wc.paired_so = mi_space_hw_options(t->anchor_hw);
  }
  for (int32_t b = 0; b < t->bound_count; b++)
    if (t->bounds[b].objective == MI_OBJ_ACCURACY) wc.accuracy_bound = t->bounds[b].max;
  t->layer_n = 0;
  quarantined = mi_worker_quarantined(t->pool, t->spec);
  {
    int settle = t->phase_n == 0;
    double t0 = mi_now_s(), t1 = 0;
    int32_t take = 0;
    for (;; take++) {
      mi_profile_t *p = NULL;
      mi_worker_config_result_t r;
      memset(&r, 0, sizeof r);
      if (take > 0) phase_pause(take);
      rc = mi_worker_profile_config(t->pool, t->spec, &wc, &mo, 0, &p, &r, err);
      if (rc != MI_OK) {
        if (prof) rc = MI_OK; /* a retake that failed: the take before stands */
        break;
      }
      phase_note(t, p, mi_now_s());
      if (!prof || (paired_profile(p) && p->paired_s < prof->paired_s)) {
        mi_profile_destroy(prof);
        prof = p;
        res = r;
      } else {
        mi_profile_destroy(p);
      }
      if (take == 0) t->first_take_s += (t1 = mi_now_s()) - t0;
      if (!phase_retake(t, prof, take, settle, t0, t1)) break;
    }
    if (take > 0) {
      t->retaken++;
      t->retakes += take;
      t->retake_s += mi_now_s() - t1;
    }
  }
  if (rc == MI_OK) {
    double scale, lat = anchored_latency(t, prof, &scale);
    keep_layers(t, prof, scale);
    if (prof->latency.stopped_slow)
      mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
                   "%s: timed %d runs only: median %.4g ms, over %gx the "
                   "best %.4g ms so far",
                   t->spec, (int)prof->latency.sample_count, lat * 1e3, SLOW_FACTOR, t->best);
    obj[MI_OBJ_LATENCY] = lat * 1e3;
    obj[MI_OBJ_MEMORY] = prof->peak_memory_source ? (double)prof->peak_memory_bytes / 1048576.0 : NAN;
    obj[MI_OBJ_ENERGY] = prof->has_energy ? prof->energy_j * 1e3 : NAN;
    obj[MI_OBJ_ACCURACY] = res.has_accuracy ? res.rel_l2 : NAN;
    t->energy_modeled |= prof->has_energy && prof->energy_modeled;
  }
  if (rc == MI_OK || !setup_failure(t, rc, err, quarantined))
    record(t, hw_text, xf_text, rc, prof, &res, err ? err->message : "failed");
  mi_tune_stop_search(t);
  mi_profile_destroy(prof);
  halves_free(xc, hw, hw_text, xf_text);
  return rc;
}

/* Keeps point pt's block (its layers whose precision is off the default, their label) and its
 * drop for the run's report; dropped when out of memory (the report is optional). */
static void keep_sens(mi_tune_task_t *t, const mi_space_t *s, const int32_t *pt, const int32_t *def, double drop) {
  mi_tune_sens_t *e;
  if (t->sens_n == t->sens_cap) {
    int32_t cap = t->sens_cap ? 2 * t->sens_cap : 16;
    mi_tune_sens_t *ns = realloc(t->sens, (size_t)cap * sizeof *ns);
    if (!ns) return;
    t->sens = ns;
    t->sens_cap = cap;
  }
  e = &t->sens[t->sens_n];
  memset(e, 0, sizeof *e);
  e->drop = drop;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    int32_t nd = mi_space_dim_node(s, d);
    const char *l;
    if (pt[d] == def[d] || !mi__space_is_precision(s, d) || !(l = mi_space_dim_label(s, d, pt[d]))) continue;
    if (e->layers++ == 0) {
      snprintf(e->layer, sizeof e->layer, "%s",
               t->graph && nd < t->graph->node_count && t->graph->nodes[nd].name ? t->graph->nodes[nd].name : "?");
      snprintf(e->label, sizeof e->label, "%s", l);
    }
  }
  if (e->layers > 0) t->sens_n++;
}

int32_t mi_tune_drops(void *ctx, const mi_space_t *s, const int32_t *pts, int32_t n, double *drops) {
  mi_tune_task_t *t = ctx;
  int32_t got = 0, D = mi_space_dim_count(s);
  double t0 = mi_now_s();
  int32_t *def = malloc(((size_t)D + 1) * sizeof *def);
  for (int32_t i = 0; i < n; i++) drops[i] = NAN;
  if (def) {
    mi_space_default(s, def);
    mi_space_repair(s, def, NULL, NULL);
  }
  if (!t->pool) { /* measured by agents: no local worker to ask */
    free(def);
    return 0;
  }
  for (int32_t i = 0; i < n && !mi_tune_stop_search(t) && mi__tune_left(t) > 0; i++) {
    mi_space_hw_t *hw = NULL;
    mi_xf_config_t *xc = NULL;
    char *hw_text = NULL, *xf_text = NULL;
    mi_profile_t *prof = NULL;
    mi_measure_options_t mo;
    mi_worker_config_t wc;
    mi_worker_config_result_t res;
    mi_error_t err;
    if (halves(s, pts + (size_t)i * D, &hw_text, &xf_text, &hw, &xc, &err) != MI_OK) continue;
    mi_measure_options_default(&mo);
    mo.warmup = 0;
    mo.min_repeats = mo.max_repeats = 1;
    mo.budget_s = 0.5;
    task_job(t, xc, hw, &wc);
    wc.accuracy_only = 1; /* one session on the device, not timed, not checked */
    if (mi_worker_profile_config(t->pool, t->spec, &wc, &mo, 0, &prof, &res, &err) == MI_OK &&
        res.has_accuracy) {
      drops[i] = res.rel_l2;
      got++;
      if (def) keep_sens(t, s, pts + (size_t)i * D, def, res.rel_l2);
    }
    mi_profile_destroy(prof);
    halves_free(xc, hw, hw_text, xf_text);
  }
  mi__tune_log(t->cb, MI_TUNE_LOG_INFO, "per-layer sensitivities: %d blocks in %.1f s", (int)got,
               mi_now_s() - t0);
  free(def);
  return got;
}

/* The reference interpreter's share of the budget for the reference outputs (2 samples): past
 * it the device's default is the reference. isnet_quint8 at 1024x1024 takes 73 s of CPU per
 * sample on the reference; the models that tune in minutes take seconds. */
#define REF_SHARE 0.15
#define REF_MAX_S 45.0

/* Measures the default configuration once with the accuracy (its drop into *drop, NAN when none),
 * its reference outputs written to t->ref_dir: the reference interpreter's, or (device) its own. */
static int32_t measure_default(mi_tune_task_t *t, const mi_space_t *s, int device, double *drop, mi_error_t *err) {
  mi_worker_config_result_t res;
  mi_profile_t *prof = NULL;
  mi_measure_options_t mo;
  mi_worker_config_t wc;
  int32_t rc = default_halves(t, s, err);
  if (rc != MI_OK) return rc;
  mi_measure_options_default(&mo);
  mo.warmup = t->warmup;
  mo.min_repeats = t->repeats;
  mo.max_repeats = t->repeats;
  mo.budget_s = 2;
  task_job(t, t->anchor_xc, t->anchor_hw, &wc);
  wc.ref_dir = t->ref_dir; /* the folder the default's outputs go to */
  wc.ref_device = device;
  memset(&res, 0, sizeof res);
  rc = mi_worker_profile_config(t->pool, t->spec, &wc, &mo, 0, &prof, &res, err);
  *drop = rc == MI_OK && res.has_accuracy ? res.rel_l2 : NAN;
  mi_profile_destroy(prof);
  return rc;
}

/* A new empty reference folder in t->ref_dir; 0 when none could be made ("" then). */
static int ref_folder(mi_tune_task_t *t) {
  const char *tmp = getenv("TMPDIR");
  if (snprintf(t->ref_dir, sizeof t->ref_dir, "%s/mi-ref-XXXXXX", tmp && tmp[0] ? tmp : "/tmp") >=
          (int)sizeof t->ref_dir ||
      !mkdtemp(t->ref_dir)) {
    t->ref_dir[0] = '\0';
    return 0;
  }
  return 1;
}

void mi__tune_reference(mi_tune_task_t *t, const mi_space_t *s) {
  double cap = t->deadline > 0 ? fmin(REF_SHARE * t->recipe->budget_seconds, REF_MAX_S) : REF_MAX_S,
         t0 = mi_now_s(), drop = NAN, bound = 0;
  mi_error_t err;
  int32_t rc;
  t->ref_dir[0] = '\0';
  t->ref_device = 0;
  if (!ref_folder(t)) return;
  for (int32_t b = 0; b < t->bound_count; b++)
    if (t->bounds[b].objective == MI_OBJ_ACCURACY) bound = t->bounds[b].max;
  mi_worker_pool_set_deadline(t->pool, t->deadline > 0 ? fmin(t->deadline, t0 + cap) : t0 + cap);
  rc = measure_default(t, s, 0, &drop, &err);
  mi_worker_pool_set_deadline(t->pool, t->deadline);
  if (rc == MI_OK && bound > 0 && drop > bound && drop <= MI_OUTPUT_TOLERANCE) {
    /* The default itself, what mi-run does, is over the accuracy bound against the reference
     * interpreter, yet within the output check's tolerance: the model's own numerics, not a
     * configuration's loss (a model quantizing its activations at run time, Moonshine's encoder:
     * the codes flip with the last bit of the float sums, so the device's default and ONNX Runtime
     * both differ from the reference by 0.035-0.05). Against the interpreter no configuration,
     * the default included, could meet the bound; against the default's own outputs the drop is
     * what a configuration loses. */
    double t1 = mi_now_s(), d2 = NAN;
    mi__tune_reference_drop(t);
    if (ref_folder(t) && measure_default(t, s, 1, &d2, &err) == MI_OK) {
      t->ref_device = 1;
      mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
                   "%s: accuracy reference: the default configuration's outputs differ from the reference "
                   "interpreter's by %.3g (relative L2), over the accuracy bound %.3g, so accuracy drops in "
                   "this tune are against the default's outputs on this device (%.1f s)",
                   t->spec, drop, bound, mi_now_s() - t1);
      return;
    }
    mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
                 "%s: accuracy reference: the default configuration is %.3g off the reference interpreter, over "
                 "the bound %.3g, and its own outputs could not replace it: %s",
                 t->spec, drop, bound, t->ref_dir[0] ? err.message : "no folder");
    return;
  }
  if (rc == MI_OK) {
    mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
                 "%s: accuracy reference: the reference interpreter's outputs on the samples, computed "
                 "once (%.1f s, with a warm-up measurement of the default) and read by every measurement",
                 t->spec, mi_now_s() - t0);
    return;
  }
  if (rc != MI_ERR_TIMEOUT) {
    /* Not the reference's time: the measurements say what is wrong, as they always did. */
    mi__tune_log(t->cb, MI_TUNE_LOG_INFO, "%s: accuracy reference not computed ahead: %s", t->spec,
                 err.message);
    return;
  }
  t0 = mi_now_s();
  rc = measure_default(t, s, 1, &drop, &err);
  if (rc == MI_OK) {
    t->ref_device = 1;
    mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
                 "%s: accuracy reference: the reference interpreter did not give the samples' outputs "
                 "within %.0f s, so accuracy drops in this tune are against the default configuration's "
                 "FP32 outputs on this device (%.1f s), not the reference interpreter's",
                 t->spec, cap, mi_now_s() - t0);
  } else {
    mi__tune_log(t->cb, MI_TUNE_LOG_INFO,
                 "%s: accuracy reference: neither the reference interpreter "
                 "(over %.0f s) nor the device's default gave it: %s",
                 t->spec, cap, err.message);
  }
}

void mi__tune_reference_drop(mi_tune_task_t *t) {
  DIR *d;
  struct dirent *e;
  char path[512];
  if (!t->ref_dir[0]) return;
  if ((d = opendir(t->ref_dir))) {
    while ((e = readdir(d)))
      if (e->d_name[0] != '.' && snprintf(path, sizeof path, "%s/%s", t->ref_dir, e->d_name) < (int)sizeof path)
        remove(path);
    closedir(d);
  }
  rmdir(t->ref_dir);
  t->ref_dir[0] = '\0';
}

/* A replayed point's per-layer times are its stored ones (mi_tune_layer_times): the search's
 * per-layer precision greedy compares each layer against the default's, and the default is
 * usually replayed from the layer-task rounds' own measurement of it. None stored: none, never
 * the previous measurement's. */
static void replay_layers(mi_tune_task_t *t, const mi_tune_known_t *k, double scale) {
  int32_t n = k->layers_json ? mi__tune_layer_pairs(k->layers_json, t->graph, NULL, NULL, 0) : 0;
  t->layer_n = 0;
  if (n <= 0 || !layers_reserve(t, n)) return;
  t->layer_n = mi__tune_layer_pairs(k->layers_json, t->graph, t->layer_node, t->layer_sec, t->layer_cap);
  for (int32_t i = 0; i < t->layer_n && i < t->layer_cap; i++) t->layer_sec[i] *= scale;
}

int mi_tune_lookup(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                   int32_t *status, char *message) {
  mi_tune_task_t *t = ctx;
  mi_space_hw_t *hw = NULL;
  char *hw_text = NULL, *xf_text = NULL;
  int found = 0;
  if (t->known_count == 0 || halves(s, pt, &hw_text, &xf_text, &hw, NULL, NULL) != MI_OK) return 0;
  /* Rows come good ones first, fastest first: the first match is the best record. */
  for (int32_t i = 0; i < t->known_count && !found; i++) {
    const mi_tune_known_t *k = &t->known[i];
    if (strcmp(k->hw, hw_text) != 0 || strcmp(k->model, xf_text) != 0) continue;
    double scale = 1;
    memcpy(obj, k->obj, sizeof k->obj);
    /* A paired record replays as it was measured: its ratio to the default's runs (a resumed
     * tune then follows the search it had begun). */
    if (k->ok && k->paired_ratio > 0 && k->paired_s > 0) {
      anchor_ref(t, k->paired_s);
      obj[MI_OBJ_LATENCY] = k->paired_ratio * t->anchor_ref_s * 1e3;
      scale = t->anchor_ref_s / k->paired_s;
    }
    *status = k->ok ? MI_OK : MI_ERR_INTERNAL;
    replay_layers(t, k, scale);
    if (!k->ok) snprintf(message, MI_ERROR_MESSAGE_SIZE, "%s", k->failure ? k->failure : "failed");
    found = 1;
  }
  mi_space_hw_destroy(hw);
  free(hw_text);
  free(xf_text);
  return found;
}

static int add_known(void *user, const mi_history_row_t *row) {
  mi_tune_task_t *t = user;
  mi_tune_known_t *k, *nk = realloc(t->known, ((size_t)t->known_count + 1) * sizeof *nk);
  if (!nk) return 1;
  t->known = nk;
  k = &t->known[t->known_count];
  memset(k, 0, sizeof *k);
  k->hw = strdup(row->config_canonical ? row->config_canonical : "default");
  k->model = strdup(row->model_canonical ? row->model_canonical : "");
  k->failure = row->failure ? strdup(row->failure) : NULL;
  k->layers_json = row->ok && row->layers_json ? strdup(row->layers_json) : NULL;
  if (!k->hw || !k->model) {
    free(k->hw);
    free(k->model);
    free(k->failure);
    free(k->layers_json);
    return 1;
  }
  k->ok = row->ok;
  k->paired_ratio = row->paired_ratio;
  k->paired_s = row->paired_s;
  for (int j = 0; j < MI_OBJ_COUNT; j++) k->obj[j] = NAN;
  if (row->ok) {
    const char *a = row->accuracy_json ? strstr(row->accuracy_json, "\"rel_l2\":") : NULL;
    k->obj[MI_OBJ_LATENCY] = row->median_s * 1e3;
    if (row->peak_memory_bytes) k->obj[MI_OBJ_MEMORY] = (double)row->peak_memory_bytes / 1048576.0;
    if (row->energy_source != MI_ENERGY_NONE) k->obj[MI_OBJ_ENERGY] = row->energy_j * 1e3;
    if (row->energy_source == MI_ENERGY_MODELED) t->energy_modeled = 1;
    if (a) k->obj[MI_OBJ_ACCURACY] = strtod(a + 9, NULL);
  }
  t->known_count++;
  return 0;
}

int32_t mi_tune_load_known(mi_tune_task_t *t, mi_error_t *err) {
  mi_history_query_t q;
  int32_t rc;
  if (!t->history) return MI_OK;
  memset(&q, 0, sizeof q);
  q.model_hash = t->base->model_hash;
  q.device_hash = t->base->device_hash;
  q.stack_hash = t->base->stack_hash;
  q.input_shapes = t->base->input_shapes;
  if ((rc = mi_history_query(t->history, &q, add_known, t, err))) return rc;
  /* Rows whose sessions ran refused nodes on the fallback device carry its stack. */
  if (!t->fb_stack_hash) return MI_OK;
  q.stack_hash = t->fb_stack_hash;
  return mi_history_query(t->history, &q, add_known, t, err);
}

/* Drops the history records the search loaded. */
static void clear_known(mi_tune_task_t *t) {
  for (int32_t i = 0; i < t->known_count; i++) {
    free(t->known[i].hw);
    free(t->known[i].model);
    free(t->known[i].failure);
    free(t->known[i].layers_json);
  }
  free(t->known);
  t->known = NULL;
  t->known_count = 0;
}

int32_t mi_tune_reload_known(mi_tune_task_t *t, mi_error_t *err) {
  clear_known(t);
  return mi_tune_load_known(t, err);
}

void mi_tune_free_known(mi_tune_task_t *t) {
  clear_known(t);
  mi_xf_config_destroy(t->anchor_xc);
  mi_space_hw_destroy(t->anchor_hw);
  t->anchor_xc = NULL;
  t->anchor_hw = NULL;
  free(t->layer_node);
  free(t->layer_sec);
  free(t->sens);
  t->layer_node = NULL;
  t->layer_sec = NULL;
  t->sens = NULL;
  t->layer_n = t->layer_cap = t->sens_n = t->sens_cap = 0;
}
