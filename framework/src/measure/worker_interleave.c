/* worker_interleave.c - the interleaved job: one worker prepares every configuration of a
 * comparison (as configuration jobs, worker_config.c) and runs them in turn, a fresh order each
 * cycle; the host's side sends them as one job. */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/worker_config.h"

int32_t mi__worker_interleave(mi_worker_pool_t *p, const char *spec,
                              const mi_worker_config_t *configs, int32_t count,
                              const mi_measure_options_t *mo, uint64_t seed, int check,
                              mi__interleave_reply_t *out, mi_error_t *err) {
  mi__interleave_job_t head;
  char *parts[MI_COMPARE_MAX_CONFIGS] = {0}, *payload = NULL;
  size_t lens[MI_COMPARE_MAX_CONFIGS], total = 0;
  int32_t rc = MI_OK;
  memset(out, 0, sizeof *out);
  if (!p || !spec || !configs || count < 1 || count > MI_COMPARE_MAX_CONFIGS)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi__worker_interleave: bad arguments");
  memset(&head, 0, sizeof head);
  head.count = count;
  head.seed = seed;
  head.check = check != 0;
  for (int32_t c = 0; c < count && rc == MI_OK; c++) {
    if (!configs[c].model)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi__worker_interleave: no model");
    else if (!(parts[c] = mi__config_payload(&configs[c], mo, 0, &lens[c], err)))
      rc = err->code;
    else
      head.len[c] = (uint32_t)lens[c]; /* each within MI__CONFIG_JOB_MAX */
  }
  if (rc == MI_OK)
    rc = mi__job_pack(&head, sizeof head, head.len, (const void *const *)parts, count,
                      "configurations", &payload, &total, err);
  if (rc == MI_OK)
    rc = mi__worker_exchange(p, spec, MI__JOB_INTERLEAVE, payload, total, MI__REPLY_INTERLEAVE,
                             out, sizeof *out, err);
  for (int32_t c = 0; c < count; c++) free(parts[c]);
  free(payload);
  return rc;
}

/* ---------------------------------------------------------------- interleaved runs */

/* One configuration of an interleaved job, prepared in this worker next to the others. */
typedef struct prepared {
  char *hwtext; /* hw points into it */
  hw_parsed_t hw;
  mi_xf_config_t *xc;
  mi_graph_t *xg;
  mi_session_t *s;
  const mi_graph_t *g; /* the graph s runs (xg or the cached model) */
  mi_array_t **in, **outs;
  int32_t nin, nout;
  double t[MI__INTERLEAVE_MAX_CYCLES];  /* wall seconds per timed cycle */
  double td[MI__INTERLEAVE_MAX_CYCLES]; /* device seconds per timed cycle, -1 when none */
} prepared_t;

static void prepared_free(prepared_t *p) {
  mi_session_destroy(p->s);
  for (int32_t i = 0; p->in && i < p->nin; i++) mi_array_destroy(p->in[i]);
  free(p->in);
  free(p->outs);
  mi_graph_destroy(p->xg);
  mi_xf_config_destroy(p->xc);
  mi__config_hw_free(&p->hw);
  free(p->hwtext);
}

static int32_t prepare_one(mi_plugin_t *pl, uint32_t dev, const cjob_t *job, const char *const *t,
                           mi__config_cache_t *cache, prepared_t *p, mi_error_t *err) {
  const mi_graph_t *g;
  const mi_array_t **first;
  int32_t rc;
  if ((rc = mi__config_cached_model(cache, job, t, err))) return rc;
  if ((rc = mi__config_apply_xf(pl, dev, cache, t[T_REFDIR], t[T_XF], &p->xc, &p->xg, err))) return rc;
  if (!(p->hwtext = strdup(t[T_HW]))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  if ((rc = mi__config_hw_parse(p->hwtext, &p->hw, err))) return rc;
  mi__config_fallback(cache, &p->hw.so);
  g = p->xg ? p->xg : cache->g;
  if ((rc = mi_session_create(g, pl, dev, &p->hw.so, &p->s, err))) return rc;
  p->g = g;
  p->nin = g->input_count;
  p->nout = g->output_count;
  p->in = calloc((size_t)p->nin + 1, sizeof *p->in);
  p->outs = calloc((size_t)p->nout + 1, sizeof *p->outs);
  if (!p->in || !p->outs) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  /* The first sample's inputs (the job's fixed values, calibration files, else its random
   * data), as a configuration job's runs take them: every configuration runs the same. */
  if (!(first = mi__config_first_sample(cache, g)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  for (int32_t i = 0; i < p->nin && rc == MI_OK; i++) {
    const mi_tensor_t *in = &g->tensors[g->inputs[i]];
    const mi_array_t *from = first[i];
    if (!(p->in[i] = from ? mi_array_create(from->dtype, from->rank, from->dims)
                          : mi_array_create(in->dtype, in->rank, in->dims)))
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "worker: input '%s' has no concrete shape to make data for", in->name);
    else if (from)
      memcpy(p->in[i]->data, from->data, from->nbytes);
    else if (in->dtype == MI_DTYPE_FLOAT32)
      mi_array_fill_random(p->in[i], 42 + (uint64_t)i);
  }
  free(first);
  return rc;
}

/* One inference of p, timed by the wall clock and, when the session has one, the device's timer
 * (*dev_s, else -1). A device time the wall clock contradicts is a lie (mi_device_time_check): the job fails, as a measurement
 * would, and the comparison names the configuration. */
static int32_t run_once(prepared_t *p, double *s, double *dev_s, mi_error_t *err) {
  double t0 = mi__now_s();
  uint64_t dev = 0;
  int32_t rc = mi_session_run(p->s, (const mi_array_t *const *)p->in, p->nin, p->outs, p->nout,
                              err);
  *s = mi__now_s() - t0;
  *dev_s = -1;
  if (rc == MI_OK && mi_session_device_time(p->s, &dev) &&
      (rc = mi_device_time_check(dev, *s, err)) == MI_OK) {
    /* Nodes left on the host are on the run's critical path, as a profile counts them
     * (profile.c, one_run): without them a configuration that leaves an LSTM on the host
     * would look faster than one that runs it on the device. */
    *dev_s = (double)dev * 1e-9;
    for (int32_t n = 0; n < p->g->node_count; n++) {
      uint64_t wn = 0;
      if (mi_session_node_time(p->s, n, &wn, NULL) == 1) *dev_s += (double)wn * 1e-9;
    }
  }
  for (int32_t i = 0; i < p->nout; i++) {
    mi_array_destroy(p->outs[i]);
    p->outs[i] = NULL;
  }
  return rc;
}

/* The outputs of one inference of p against the reference interpreter's on the same inputs
 * (read from `keep` when it holds them: mi__reference_check). */
static int32_t check_outputs(prepared_t *p, mi_array_t **keep, mi_error_t *err) {
  double e = 0;
  int ok = 0;
  int32_t rc = mi__reference_check(p->s, p->g, p->in, p->nin, p->outs, p->nout, keep, &ok, &e, err);
  if (rc == MI_OK && !ok)
    rc = mi_errorf(err, MI_ERR_CONSTRAINT,
                   MI__WRONG_PREFIX ": relative L2 error %.3g against the reference", e);
  return rc;
}

/* Runs every configuration once per cycle, in an order drawn anew each cycle: warm-up cycles
 * (mo.warmup, and for at least mo.min_warmup_s), then timed ones (mo.max_repeats, at least
 * mo.min_repeats, fewer when half of mo.budget_s is spent). */
static int32_t cycles(prepared_t *pc, int32_t count, const mi_measure_options_t *mo,
                      uint64_t seed, mi__interleave_reply_t *rep, int32_t *bad, mi_error_t *err) {
  mi_rng_t rng;
  int32_t want = mo->max_repeats > mo->min_repeats ? mo->max_repeats : mo->min_repeats, k = 0;
  double start = mi__now_s(), dt, dd, warm_s = mo->min_warmup_s;
  int device_clock = 1;
  int8_t ord[MI_COMPARE_MAX_CONFIGS];
  if (warm_s > mo->budget_s / 2) warm_s = mo->budget_s / 2;
  if (want > MI__INTERLEAVE_MAX_CYCLES) want = MI__INTERLEAVE_MAX_CYCLES;
  if (want < 1) want = 1;
  mi_rng_seed(&rng, seed);
  for (int32_t w = 0; w < mo->warmup || mi__now_s() - start < warm_s; w++)
    for (int32_t c = 0; c < count; c++)
      if (run_once(&pc[c], &dt, &dd, err)) return *bad = c, err->code;
  start = mi__now_s();
  for (k = 0; k < want; k++) {
    if (k >= mo->min_repeats && mi__now_s() - start > mo->budget_s / 2) break;
    mi__compare_order(&rng, ord, count);
    for (int32_t i = 0; i < count; i++)
      if (run_once(&pc[ord[i]], &pc[ord[i]].t[k], &pc[ord[i]].td[k], err))
        return *bad = ord[i], err->code;
  }
  /* The devices' own timers when every run of every configuration had one (as a profile
   * trusts them, profile.c), else the wall clock for all: one clock for the whole comparison. */
  for (int32_t c = 0; c < count; c++)
    for (int32_t j = 0; j < k; j++) device_clock &= pc[c].td[j] > 0;
  rep->count = count;
  rep->cycles = k;
  rep->device_clock = device_clock;
  for (int32_t c = 0; c < count; c++) {
    mi_stats_t st;
    int32_t rc = mi_stats_compute(device_clock ? pc[c].td : pc[c].t, k, 0, &st, err);
    if (rc) return rc;
    rep->median_s[c] = st.median;
  }
  return MI_OK;
}

/* Puts "configuration N: " before e's message: the host maps N back to the caller's number. */
static void blame(mi_error_t *e, int32_t rc, int32_t c) {
  char why[MI_ERROR_MESSAGE_SIZE];
  snprintf(why, sizeof why, "%s", e->message);
  mi_errorf(e, rc, "configuration %d: %s", (int)c, why);
}

void mi__worker_serve_interleave(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload,
                                 size_t n, mi__config_cache_t *cache) {
  mi__interleave_job_t head;
  mi__interleave_reply_t rep;
  cjob_t jobs[MI_COMPARE_MAX_CONFIGS];
  const char *t[MI_COMPARE_MAX_CONFIGS][T_COUNT];
  prepared_t *pc = NULL;
  mi_array_t **shared = NULL;
  size_t at = sizeof head;
  int32_t rc = MI_OK, count = 0, bad = -1;
  mi_error_t e;
  mi_error_clear(&e);
  memset(&rep, 0, sizeof rep);
  if (n < sizeof head) {
    rc = mi_errorf(&e, MI_ERR_INTERNAL, "worker: short interleaved job");
    goto done;
  }
  memcpy(&head, payload, sizeof head);
  count = head.count;
  if (count < 1 || count > MI_COMPARE_MAX_CONFIGS) {
    rc = mi_errorf(&e, MI_ERR_INTERNAL, "worker: malformed interleaved job");
    count = 0;
    goto done;
  }
  for (int32_t c = 0; c < count && rc == MI_OK; c++) {
    if (head.len[c] > n - at)
      rc = mi_errorf(&e, MI_ERR_INTERNAL, "worker: malformed interleaved job");
    else
      rc = mi__config_job_parse((const char *)payload + at, head.len[c], &jobs[c], t[c], &e);
    at += head.len[c];
    /* One model and one set of samples: the cache holds one, and the runs must be comparable. */
    if (rc == MI_OK && c > 0 &&
        (strcmp(t[c][T_MODEL], t[0][T_MODEL]) || strcmp(t[c][T_INPUTS], t[0][T_INPUTS]) ||
         strcmp(t[c][T_CALIB], t[0][T_CALIB]) || strcmp(t[c][T_FIXED], t[0][T_FIXED]) ||
         jobs[c].seed != jobs[0].seed ||
         jobs[c].samples != jobs[0].samples))
      rc = mi_errorf(&e, MI_ERR_INVALID_ARGUMENT,
                     "interleaved configurations must share the model, its inputs and samples");
  }
  if (rc == MI_OK && !(pc = calloc((size_t)count, sizeof *pc)))
    rc = mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  for (int32_t c = 0; c < count && rc == MI_OK; c++)
    if ((rc = prepare_one(pl, dev, &jobs[c], t[c], cache, &pc[c], &e)))
      blame(&e, rc, c);
  /* Configurations without a model-side transform run the cached model on the same inputs: the
   * reference interpreter runs once for all of them (on a 1024x1024 model, a minute each). */
  if (rc == MI_OK && head.check && !(shared = calloc((size_t)cache->g->output_count + 1, sizeof *shared)))
    rc = mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  for (int32_t c = 0; head.check && c < count && rc == MI_OK; c++)
    if ((rc = check_outputs(&pc[c], pc[c].xg ? NULL : shared, &e)))
      blame(&e, rc, c);
  for (int32_t i = 0; shared && i < cache->g->output_count; i++) mi_array_destroy(shared[i]);
  free(shared);
  if (rc == MI_OK && (rc = cycles(pc, count, &jobs[0].mo, head.seed, &rep, &bad, &e)) &&
      bad >= 0)
    blame(&e, rc, bad);
done:
  for (int32_t c = 0; pc && c < count; c++) prepared_free(&pc[c]);
  free(pc);
  if (rc == MI_OK) mi__worker_reply(fd, MI__REPLY_INTERLEAVE, &rep, sizeof rep, NULL, 0);
  else
    mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
}
