/* worker_config.c - configuration jobs: the worker loads the model, applies the model-side
 * transform and prepares the session with per-node choices itself, then profiles it. */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_transform.h"

enum { T_MODEL, T_INPUTS, T_XF, T_HW, T_CALIB, T_COUNT };

/* The job as sent: this header, then T_COUNT texts, each NUL-terminated, lengths included. */
typedef struct cjob {
  mi_measure_options_t mo;
  int32_t check, samples, accuracy;
  uint64_t seed;
  uint32_t len[T_COUNT];
} cjob_t;

/* The hardware side as text lines with tab-separated fields (names never hold tabs):
 *   D name int float   device knob      N node variant    node choice (variant may be empty)
 *   K name int float   knob of the last node               F allow_host_fallback */
static char *hw_text(const mi_session_options_t *so, mi_error_t *err) {
  mi__sbuf_t b = {0};
  mi__sbuf_printf(&b, "%s", "");
  for (int32_t i = 0; so && i < so->device_knob_count; i++)
    mi__sbuf_printf(&b, "D\t%s\t%lld\t%a\n", so->device_knobs[i].name,
                    (long long)so->device_knobs[i].i, so->device_knobs[i].f);
  for (int32_t i = 0; so && i < so->choice_count; i++) {
    const mi_node_choice_t *c = &so->choices[i];
    mi__sbuf_printf(&b, "N\t%s\t%s\n", c->node ? c->node : "", c->variant_id ? c->variant_id : "");
    for (int32_t k = 0; k < c->knob_count; k++)
      mi__sbuf_printf(&b, "K\t%s\t%lld\t%a\n", c->knobs[k].name, (long long)c->knobs[k].i,
                      c->knobs[k].f);
  }
  if (so && so->allow_host_fallback) mi__sbuf_printf(&b, "F\t1\n");
  {
    char *s = mi__sbuf_take(&b);
    if (!s) mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    return s;
  }
}

/* The transform configuration as text lines with tab-separated fields, floats in %a so they
 * travel exactly:  G fold_bn fuse layout block align calib percentile
 *                  L|O|Y name set weights scales activations prune   (defaults, op, layer) */
static void xf_layer(mi__sbuf_t *b, char kind, const char *name, const mi_xf_layer_t *l) {
  mi__sbuf_printf(b, "%c\t%s\t%u\t%d\t%d\t%d\t%a\n", kind, name, (unsigned)l->set, (int)l->weights,
                  (int)l->scales, (int)l->activations, l->prune);
}

static char *xf_text(const mi_xf_config_t *c, mi_error_t *err) {
  mi__sbuf_t b = {0};
  char *s;
  mi__sbuf_printf(&b, "%s", "");
  if (c) {
    mi__sbuf_printf(&b, "G\t%d\t%d\t%d\t%d\t%d\t%d\t%a\n", (int)c->fold_bn, (int)c->fuse,
                    (int)c->layout, (int)c->block, (int)c->channel_align, (int)c->calib_method,
                    c->percentile);
    xf_layer(&b, 'L', "-", &c->defaults);
    for (int32_t i = 0; i < c->op_count; i++) xf_layer(&b, 'O', c->ops[i].name, &c->ops[i].layer);
    for (int32_t i = 0; i < c->layer_count; i++)
      xf_layer(&b, 'Y', c->layers[i].name, &c->layers[i].layer);
  }
  if (!(s = mi__sbuf_take(&b))) mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  return s;
}

static int32_t xf_parse(const char *text, mi_xf_config_t **out, mi_error_t *err) {
  char *copy = strdup(text), *save = NULL;
  mi_xf_config_t *c = mi_xf_config_create();
  int32_t rc = MI_OK;
  *out = NULL;
  if (!copy || !c) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto done;
  }
  for (char *line = strtok_r(copy, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
    char *f[8] = {0};
    int nf = 0;
    for (char *q = line; q && nf < 8;) f[nf++] = strsep(&q, "\t");
    if (line[0] == 'G' && nf == 8) {
      c->fold_bn = (int32_t)strtol(f[1], NULL, 10);
      c->fuse = (int32_t)strtol(f[2], NULL, 10);
      c->layout = (int32_t)strtol(f[3], NULL, 10);
      c->block = (int32_t)strtol(f[4], NULL, 10);
      c->channel_align = (int32_t)strtol(f[5], NULL, 10);
      c->calib_method = (int32_t)strtol(f[6], NULL, 10);
      c->percentile = strtod(f[7], NULL);
    } else if ((line[0] == 'L' || line[0] == 'O' || line[0] == 'Y') && nf == 7) {
      mi_xf_layer_t l;
      memset(&l, 0, sizeof l);
      l.set = (uint32_t)strtoul(f[2], NULL, 10);
      l.weights = (int32_t)strtol(f[3], NULL, 10);
      l.scales = (int32_t)strtol(f[4], NULL, 10);
      l.activations = (int32_t)strtol(f[5], NULL, 10);
      l.prune = strtod(f[6], NULL);
      if (line[0] == 'L') c->defaults = l;
      else rc = mi_xf_config_set_layer(c, line[0] == 'O' ? 1 : 0, f[1], &l, err);
    } else {
      rc = mi_errorf(err, MI_ERR_PARSE, "worker: bad transform line '%.40s'", line);
    }
  }
done:
  free(copy);
  if (rc) mi_xf_config_destroy(c);
  else *out = c;
  return rc;
}

/* Session options parsed from hw_text; every pointer points into `text` or the arrays. */
typedef struct hw_parsed {
  mi_session_options_t so;
  mi_knob_value_t *dev;
  mi_node_choice_t *nodes;
  mi_knob_value_t *knobs;
} hw_parsed_t;

static int32_t hw_parse(char *text, hw_parsed_t *h, mi_error_t *err) {
  size_t lines = 1;
  int32_t nd = 0, nn = 0, nk = 0;
  memset(h, 0, sizeof *h);
  h->so.struct_size = (uint32_t)sizeof h->so;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  h->dev = calloc(lines, sizeof *h->dev);
  h->nodes = calloc(lines, sizeof *h->nodes);
  h->knobs = calloc(lines, sizeof *h->knobs);
  if (!h->dev || !h->nodes || !h->knobs)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    char *f[4] = {0}, *s2 = NULL;
    int nf = 0;
    /* strsep keeps empty fields (an empty variant id). */
    for (char *q = line; q && nf < 4;) f[nf++] = strsep(&q, "\t");
    (void)s2;
    if (line[0] == 'D' && nf == 4) {
      h->dev[nd].name = f[1];
      h->dev[nd].i = strtoll(f[2], NULL, 10);
      h->dev[nd++].f = strtod(f[3], NULL);
    } else if (line[0] == 'N' && nf >= 3) {
      h->nodes[nn].node = f[1];
      h->nodes[nn].variant_id = f[2][0] ? f[2] : NULL;
      h->nodes[nn].knobs = &h->knobs[nk];
      nn++;
    } else if (line[0] == 'K' && nf == 4 && nn > 0) {
      h->knobs[nk].name = f[1];
      h->knobs[nk].i = strtoll(f[2], NULL, 10);
      h->knobs[nk++].f = strtod(f[3], NULL);
      h->nodes[nn - 1].knob_count++;
    } else if (line[0] == 'F') {
      h->so.allow_host_fallback = 1;
    } else {
      return mi_errorf(err, MI_ERR_PARSE, "worker: bad configuration line '%.40s'", line);
    }
  }
  h->so.device_knob_count = nd;
  h->so.device_knobs = h->dev;
  h->so.choice_count = nn;
  h->so.choices = h->nodes;
  return MI_OK;
}

static void hw_free(hw_parsed_t *h) {
  free(h->dev);
  free(h->nodes);
  free(h->knobs);
}

/* One configuration job as sent (a cjob_t, then its texts); malloc'd, *len its size. */
static char *config_payload(const mi_worker_config_t *cfg, const mi_measure_options_t *mo,
                            int check, size_t *len, mi_error_t *err) {
  const char *texts[T_COUNT];
  char *hw = NULL, *xf = NULL, *payload = NULL;
  size_t total = sizeof(cjob_t), at = sizeof(cjob_t);
  cjob_t job;
  if (!(hw = hw_text(cfg->so, err))) return NULL;
  if (!(xf = xf_text(cfg->xf, err))) {
    free(hw);
    return NULL;
  }
  texts[T_MODEL] = cfg->model;
  texts[T_INPUTS] = cfg->inputs ? cfg->inputs : "";
  texts[T_XF] = xf;
  texts[T_HW] = hw;
  texts[T_CALIB] = cfg->calibration ? cfg->calibration : "";
  memset(&job, 0, sizeof job);
  mi_measure_options_default(&job.mo);
  if (mo) memcpy(&job.mo, mo, mo->struct_size < sizeof job.mo ? mo->struct_size : sizeof job.mo);
  job.mo.struct_size = (uint32_t)sizeof job.mo;
  job.check = check;
  job.samples = cfg->samples > 0 ? cfg->samples : 2;
  job.accuracy = cfg->accuracy;
  job.seed = cfg->seed;
  for (int i = 0; i < T_COUNT; i++) total += (job.len[i] = (uint32_t)strlen(texts[i]) + 1);
  if (total > MI__CONFIG_JOB_MAX)
    mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker: configuration too large");
  else if (!(payload = malloc(total)))
    mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  if (payload) {
    memcpy(payload, &job, sizeof job);
    for (int i = 0; i < T_COUNT; i++) {
      memcpy(payload + at, texts[i], job.len[i]);
      at += job.len[i];
    }
    *len = total;
  }
  free(hw);
  free(xf);
  return payload;
}

MI_API int32_t mi_worker_profile_config(mi_worker_pool_t *p, const char *spec,
                                        const mi_worker_config_t *cfg,
                                        const mi_measure_options_t *mo, int check,
                                        mi_profile_t **out, mi_worker_config_result_t *res,
                                        mi_error_t *err) {
  char *payload;
  size_t total = 0;
  int32_t rc;
  if (res) memset(res, 0, sizeof *res);
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_profile_config: out is NULL");
  *out = NULL;
  if (!p || !spec || !cfg || !cfg->model)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_profile_config: NULL argument");
  if (!(payload = config_payload(cfg, mo, check, &total, err))) return err->code;
  rc = mi__worker_job(p, spec, MI__JOB_CONFIG, payload, total, MI__REPLY_CONFIG,
                      sizeof(mi_worker_config_result_t), res, out, err);
  free(payload);
  return rc;
}

int32_t mi__worker_interleave(mi_worker_pool_t *p, const char *spec,
                              const mi_worker_config_t *configs, int32_t count,
                              const mi_measure_options_t *mo, uint64_t seed, int check,
                              mi__interleave_reply_t *out, mi_error_t *err) {
  mi__interleave_job_t head;
  char *parts[MI_COMPARE_MAX_CONFIGS] = {0}, *payload = NULL;
  size_t lens[MI_COMPARE_MAX_CONFIGS], total = sizeof head, at = sizeof head;
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
    else if (!(parts[c] = config_payload(&configs[c], mo, 0, &lens[c], err)))
      rc = err->code;
    else
      total += (head.len[c] = (uint32_t)lens[c]);
  }
  if (rc == MI_OK && total > MI__CONFIG_JOB_MAX)
    rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker: configurations too large");
  if (rc == MI_OK && !(payload = malloc(total)))
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  if (rc == MI_OK) {
    memcpy(payload, &head, sizeof head);
    for (int32_t c = 0; c < count; c++) {
      memcpy(payload + at, parts[c], lens[c]);
      at += lens[c];
    }
    rc = mi__worker_exchange(p, spec, MI__JOB_INTERLEAVE, payload, total, MI__REPLY_INTERLEAVE,
                             out, sizeof *out, err);
  }
  for (int32_t c = 0; c < count; c++) free(parts[c]);
  free(payload);
  return rc;
}

/* ---------------------------------------------------------------- the worker's side */


/* Reads one configuration job: *job, and t[] pointing at its texts inside `payload`. */
static int32_t job_parse(const void *payload, size_t n, cjob_t *job, const char **t,
                         mi_error_t *err) {
  size_t at = sizeof *job;
  if (n < sizeof *job) return mi_errorf(err, MI_ERR_INTERNAL, "worker: short configuration job");
  memcpy(job, payload, sizeof *job);
  for (int i = 0; i < T_COUNT; i++) {
    if (job->len[i] == 0 || job->len[i] > n - at || ((const char *)payload)[at + job->len[i] - 1])
      return mi_errorf(err, MI_ERR_INTERNAL, "worker: malformed configuration job");
    t[i] = (const char *)payload + at;
    at += job->len[i];
  }
  return MI_OK;
}

void mi__config_cache_free(mi__config_cache_t *c) {
  const mi_xf_samples_t *smp = c->samples;
  if (c->ref_out && c->g && smp)
    for (int32_t i = 0; i < smp->sample_count * c->g->output_count; i++)
      mi_array_destroy(c->ref_out[i]);
  free(c->ref_out);
  mi_graph_destroy(c->g);
  mi_xf_samples_destroy(c->samples);
  memset(c, 0, sizeof *c);
}

/* The original model and its samples, loaded once per (model, inputs, calibration, seed). */
static int32_t cached_model(mi__config_cache_t *c, const cjob_t *job, const char *const *t,
                            mi_error_t *err) {
  char key[sizeof c->key];
  mi_xf_samples_t *smp = NULL;
  int32_t rc;
  snprintf(key, sizeof key, "%s|%s|%s|%llu|%d", t[T_MODEL], t[T_INPUTS], t[T_CALIB],
           (unsigned long long)job->seed, (int)job->samples);
  if (c->g && strcmp(key, c->key) == 0) return MI_OK;
  mi__config_cache_free(c);
  if ((rc = mi_onnx_load(t[T_MODEL], &c->g, err))) return rc;
  if (t[T_INPUTS][0] && (rc = mi_graph_set_input_shapes(c->g, t[T_INPUTS], "worker", err))) goto fail;
  if ((rc = mi_graph_toposort(c->g, err)) || (rc = mi_graph_infer_shapes(c->g, err))) goto fail;
  rc = t[T_CALIB][0] ? mi_xf_samples_load_dir(c->g, t[T_CALIB], &smp, err)
                     : mi_xf_samples_random(c->g, job->samples, job->seed, &smp, err);
  if (rc) goto fail;
  c->samples = smp;
  snprintf(c->key, sizeof c->key, "%s", key);
  return MI_OK;
fail:
  mi__config_cache_free(c);
  return rc;
}

/* The model-side transform of `text` applied to the cached model: *xg, or NULL (and *xc NULL)
 * when the text is empty and the model runs as it is. */
static int32_t apply_xf(mi_plugin_t *pl, uint32_t dev, mi__config_cache_t *cache,
                        const char *text, mi_xf_config_t **xc, mi_graph_t **xg, mi_error_t *err) {
  mi_variant_desc_t *vars = NULL;
  uint32_t nvar = 0;
  mi_xf_apply_opts_t ao;
  int32_t rc;
  *xc = NULL;
  *xg = NULL;
  if (!text[0]) return MI_OK;
  if ((rc = xf_parse(text, xc, err))) return rc;
  if ((rc = mi_plugin_variants(pl, dev, &vars, &nvar, err))) return rc;
  memset(&ao, 0, sizeof ao);
  ao.calib = cache->samples;
  ao.variants = vars;
  ao.variant_count = nvar;
  rc = mi_xf_apply(cache->g, *xc, &ao, xg, NULL, err);
  free(vars);
  return rc;
}

static int32_t run_config(mi_plugin_t *pl, uint32_t dev, const cjob_t *job, const char *const *t,
                          char *hwtext, mi__config_cache_t *cache, mi_profile_t **prof,
                          mi_worker_config_result_t *res, mi_error_t *err) {
  mi_xf_config_t *xc = NULL;
  mi_graph_t *xg = NULL;
  hw_parsed_t hw;
  int32_t rc;
  double t0 = mi__now_s();
  memset(&hw, 0, sizeof hw);
  if ((rc = cached_model(cache, job, t, err))) goto done;
  if ((rc = apply_xf(pl, dev, cache, t[T_XF], &xc, &xg, err))) goto done;
  res->transform_s = mi__now_s() - t0;
  if ((rc = hw_parse(hwtext, &hw, err))) goto done;
  /* A configuration measured for tuning is also checked: the device's outputs against the
   * reference (wrong results fail the measurement), and its accuracy comes from them too. With
   * the accuracy measured first, outputs within the check's bound of the original model itself
   * (relative L2 on the samples) are right, and the reference run of the transformed model, the
   * costliest step of a real model's measurement (seconds), is needed only to tell a wrong kernel
   * from a lossy model-side change when they are not. */
  if ((rc = mi_profile_run(xg ? xg : cache->g, pl, dev, &hw.so, &job->mo,
                           job->check && !job->accuracy, prof, err)))
    goto done;
  if (job->accuracy) {
    if ((rc = mi__device_accuracy(xg ? xg : cache->g, pl, dev, &hw.so, cache, &res->rel_l2,
                                  &res->top1, err)))
      goto done;
    res->has_accuracy = 1;
    if (res->rel_l2 <= 0.05) {
      (*prof)->checked = 1;
      (*prof)->check_ok = 1;
      (*prof)->check_error = res->rel_l2;
    } else if ((rc = mi__profile_check(xg ? xg : cache->g, pl, dev, &hw.so, *prof, err))) {
      goto done;
    }
  }
done:
  hw_free(&hw);
  mi_graph_destroy(xg);
  mi_xf_config_destroy(xc);
  return rc;
}

void mi__worker_serve_config(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload,
                             size_t n, mi__config_cache_t *cache) {
  cjob_t job;
  const char *t[T_COUNT];
  char *hw = NULL;
  mi_error_t e;
  mi_profile_t *prof = NULL;
  mi_worker_config_result_t res;
  mi_error_clear(&e);
  memset(&res, 0, sizeof res);
  if (job_parse(payload, n, &job, t, &e)) goto fail;
  if (!(hw = strdup(t[T_HW]))) {
    mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto fail;
  }
  if (run_config(pl, dev, &job, t, hw, cache, &prof, &res, &e)) goto fail;
  free(hw);
  {
    /* One frame: the result, the profile, then its layers. */
    size_t nl = (size_t)prof->layer_count * sizeof *prof->layers;
    char *buf = malloc(sizeof res + sizeof *prof + 1);
    if (buf) {
      memcpy(buf, &res, sizeof res);
      memcpy(buf + sizeof res, prof, sizeof *prof);
      mi__worker_reply(fd, MI__REPLY_CONFIG, buf, sizeof res + sizeof *prof, prof->layers, nl);
      free(buf);
    } else {
      mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
    }
  }
  mi_profile_destroy(prof);
  return;
fail:
  free(hw);
  mi_profile_destroy(prof); /* a failure after the timing (the accuracy, the check) */
  mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
}

/* ---------------------------------------------------------------- interleaved runs */

/* One configuration of an interleaved job, prepared in this worker next to the others. */
typedef struct prepared {
  char *hwtext; /* hw points into it */
  hw_parsed_t hw;
  mi_xf_config_t *xc;
  mi_graph_t *xg;
  mi_session_t *s;
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
  hw_free(&p->hw);
  free(p->hwtext);
}

static int32_t prepare_one(mi_plugin_t *pl, uint32_t dev, const cjob_t *job, const char *const *t,
                           mi__config_cache_t *cache, prepared_t *p, mi_error_t *err) {
  const mi_graph_t *g;
  int32_t rc;
  if ((rc = cached_model(cache, job, t, err))) return rc;
  if ((rc = apply_xf(pl, dev, cache, t[T_XF], &p->xc, &p->xg, err))) return rc;
  if (!(p->hwtext = strdup(t[T_HW]))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  if ((rc = hw_parse(p->hwtext, &p->hw, err))) return rc;
  g = p->xg ? p->xg : cache->g;
  if ((rc = mi_session_create(g, pl, dev, &p->hw.so, &p->s, err))) return rc;
  p->nin = g->input_count;
  p->nout = g->output_count;
  p->in = calloc((size_t)p->nin + 1, sizeof *p->in);
  p->outs = calloc((size_t)p->nout + 1, sizeof *p->outs);
  if (!p->in || !p->outs) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  for (int32_t i = 0; i < p->nin; i++) {
    const mi_tensor_t *in = &g->tensors[g->inputs[i]];
    if (!(p->in[i] = mi_array_create(in->dtype, in->rank, in->dims)))
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "worker: input '%s' has no concrete shape to make data for", in->name);
    if (in->dtype == MI_DTYPE_FLOAT32) mi_array_fill_random(p->in[i], 42 + (uint64_t)i);
  }
  return MI_OK;
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
      (rc = mi_device_time_check(dev, *s, err)) == MI_OK)
    *dev_s = (double)dev * 1e-9;
  for (int32_t i = 0; i < p->nout; i++) {
    mi_array_destroy(p->outs[i]);
    p->outs[i] = NULL;
  }
  return rc;
}

/* The outputs of one inference of p against the reference interpreter's on the same inputs. */
static int32_t check_outputs(prepared_t *p, const mi_graph_t *g, mi_error_t *err) {
  double e = 0;
  int ok = 0;
  int32_t rc = mi__reference_check(p->s, g, p->in, p->nin, p->outs, p->nout, &ok, &e, err);
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
      rc = job_parse((const char *)payload + at, head.len[c], &jobs[c], t[c], &e);
    at += head.len[c];
    /* One model and one set of samples: the cache holds one, and the runs must be comparable. */
    if (rc == MI_OK && c > 0 &&
        (strcmp(t[c][T_MODEL], t[0][T_MODEL]) || strcmp(t[c][T_INPUTS], t[0][T_INPUTS]) ||
         strcmp(t[c][T_CALIB], t[0][T_CALIB]) || jobs[c].seed != jobs[0].seed ||
         jobs[c].samples != jobs[0].samples))
      rc = mi_errorf(&e, MI_ERR_INVALID_ARGUMENT,
                     "interleaved configurations must share the model, its inputs and samples");
  }
  if (rc == MI_OK && !(pc = calloc((size_t)count, sizeof *pc)))
    rc = mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  for (int32_t c = 0; c < count && rc == MI_OK; c++)
    if ((rc = prepare_one(pl, dev, &jobs[c], t[c], cache, &pc[c], &e)))
      blame(&e, rc, c);
  for (int32_t c = 0; head.check && c < count && rc == MI_OK; c++)
    if ((rc = check_outputs(&pc[c], pc[c].xg ? pc[c].xg : cache->g, &e)))
      blame(&e, rc, c);
  if (rc == MI_OK && (rc = cycles(pc, count, &jobs[0].mo, head.seed, &rep, &bad, &e)) &&
      bad >= 0)
    blame(&e, rc, bad);
done:
  for (int32_t c = 0; pc && c < count; c++) prepared_free(&pc[c]);
  free(pc);
  if (rc == MI_OK) mi__worker_reply(fd, MI__REPLY_INTERLEAVE, &rep, sizeof rep, NULL, 0);
  else mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
}
