/* worker_config.c - configuration jobs: the worker loads the model, applies the model-side
 * transform and prepares the session with per-node choices itself, then profiles it. */
#define _GNU_SOURCE 1
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/worker_config.h"

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
 * travel exactly:  G fold_bn fuse layout block align calib percentile float_output bias_corr
 *                  equalize
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
    mi__sbuf_printf(&b, "G\t%d\t%d\t%d\t%d\t%d\t%d\t%a\t%d\t%d\t%d\n", (int)c->fold_bn,
                    (int)c->fuse, (int)c->layout, (int)c->block, (int)c->channel_align,
                    (int)c->calib_method, c->percentile, (int)c->float_output,
                    (int)c->bias_correction, (int)c->equalize);
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
    char *f[11] = {0};
    int nf = 0;
    for (char *q = line; q && nf < 11;) f[nf++] = strsep(&q, "\t");
    if (line[0] == 'G' && nf == 11) {
      c->fold_bn = (int32_t)strtol(f[1], NULL, 10);
      c->fuse = (int32_t)strtol(f[2], NULL, 10);
      c->layout = (int32_t)strtol(f[3], NULL, 10);
      c->block = (int32_t)strtol(f[4], NULL, 10);
      c->channel_align = (int32_t)strtol(f[5], NULL, 10);
      c->calib_method = (int32_t)strtol(f[6], NULL, 10);
      c->percentile = strtod(f[7], NULL);
      c->float_output = (int32_t)strtol(f[8], NULL, 10);
      c->bias_correction = (int32_t)strtol(f[9], NULL, 10);
      c->equalize = (int32_t)strtol(f[10], NULL, 10);
    } else if ((line[0] == 'L' || line[0] == 'O' || line[0] == 'Y') && nf == 7) {
      mi_xf_layer_t l;
      memset(&l, 0, sizeof l);
      l.set = (uint32_t)strtoul(f[2], NULL, 10);
      l.weights = (int32_t)strtol(f[3], NULL, 10);
      l.scales = (int32_t)strtol(f[4], NULL, 10);
      l.activations = (int32_t)strtol(f[5], NULL, 10);
      l.prune = strtod(f[6], NULL);
      if (line[0] == 'L') c->defaults = l;
      else
        rc = mi_xf_config_set_layer(c, line[0] == 'O' ? 1 : 0, f[1], &l, err);
    } else {
      rc = mi_errorf(err, MI_ERR_PARSE, "worker: bad transform line '%.40s'", line);
    }
  }
done:
  free(copy);
  if (rc) mi_xf_config_destroy(c);
  else
    *out = c;
  return rc;
}

int32_t mi__config_hw_parse(char *text, hw_parsed_t *h, mi_error_t *err) {
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

void mi__config_hw_free(hw_parsed_t *h) {
  free(h->dev);
  free(h->nodes);
  free(h->knobs);
}

/* Fields added to mi_worker_config_t are read only when the caller's struct_size covers them. */
#define HAS_FIELD(c, f) ((c)->struct_size >= offsetof(mi_worker_config_t, f) + sizeof((c)->f))

char *mi__config_payload(const mi_worker_config_t *cfg, const mi_measure_options_t *mo,
                         int check, size_t *len, mi_error_t *err) {
  const char *texts[T_COUNT];
  char *hw = NULL, *xf = NULL, *ahw = NULL, *axf = NULL, *payload = NULL;
  int anchor = HAS_FIELD(cfg, paired_so) && cfg->paired;
  cjob_t job;
  if (!(hw = hw_text(cfg->so, err)) || !(xf = xf_text(cfg->xf, err)) ||
      (anchor && (!(ahw = hw_text(cfg->paired_so, err)) || !(axf = xf_text(cfg->paired_xf, err)))))
    goto done;
  texts[T_MODEL] = cfg->model;
  texts[T_INPUTS] = cfg->inputs ? cfg->inputs : "";
  texts[T_XF] = xf;
  texts[T_HW] = hw;
  texts[T_CALIB] = cfg->calibration ? cfg->calibration : "";
  texts[T_FIXED] = HAS_FIELD(cfg, fixed_inputs) && cfg->fixed_inputs ? cfg->fixed_inputs : "";
  texts[T_REFDIR] = HAS_FIELD(cfg, ref_dir) && cfg->ref_dir ? cfg->ref_dir : "";
  texts[T_ANCHOR_XF] = anchor ? axf : "";
  texts[T_ANCHOR_HW] = anchor ? ahw : "";
  memset(&job, 0, sizeof job);
  mi_measure_options_default(&job.mo);
  if (mo) memcpy(&job.mo, mo, mo->struct_size < sizeof job.mo ? mo->struct_size : sizeof job.mo);
  job.mo.struct_size = (uint32_t)sizeof job.mo;
  job.check = check;
  job.samples = cfg->samples > 0 ? cfg->samples : 2;
  job.accuracy = cfg->accuracy;
  job.seed = cfg->seed;
  job.accuracy_bound = HAS_FIELD(cfg, accuracy_bound) ? cfg->accuracy_bound : 0;
  job.ref_device = HAS_FIELD(cfg, ref_device) ? cfg->ref_device : 0;
  job.accuracy_only = HAS_FIELD(cfg, accuracy_only) && cfg->accuracy && cfg->accuracy_only;
  job.anchor = anchor;
  for (int i = 0; i < T_COUNT; i++) job.len[i] = (uint32_t)strlen(texts[i]) + 1;
  mi__job_pack(&job, sizeof job, job.len, (const void *const *)texts, T_COUNT, "configuration",
               &payload, len, err);
done:
  free(hw);
  free(xf);
  free(ahw);
  free(axf);
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
  if (!(payload = mi__config_payload(cfg, mo, check, &total, err))) return err->code;
  rc = mi__worker_job(p, spec, MI__JOB_CONFIG, payload, total, MI__REPLY_CONFIG,
                      sizeof(mi_worker_config_result_t), res, out, err);
  free(payload);
  return rc;
}

/* ---------------------------------------------------------------- the worker's side */

/* Reads one configuration job: *job, and t[] pointing at its texts inside `payload`. */
int32_t mi__config_job_parse(const void *payload, size_t n, cjob_t *job, const char **t,
                             mi_error_t *err) {
  return mi__job_texts(payload, n, job, sizeof *job, job->len, T_COUNT, t, "configuration", err);
}

int32_t mi__job_pack(const void *head, size_t hsize, const uint32_t *lens,
                     const void *const *parts, int count, const char *what, char **out,
                     size_t *len, mi_error_t *err) {
  size_t total = hsize, at = hsize;
  *out = NULL;
  for (int i = 0; i < count; i++) total += lens[i];
  if (total > MI__CONFIG_JOB_MAX)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker: %s too large", what);
  if (!(*out = malloc(total))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  memcpy(*out, head, hsize);
  for (int i = 0; i < count; i++) {
    memcpy(*out + at, parts[i], lens[i]);
    at += lens[i];
  }
  *len = total;
  return MI_OK;
}

int32_t mi__job_texts(const void *payload, size_t n, void *head, size_t hsize,
                      const uint32_t *lens, int count, const char **t, const char *what,
                      mi_error_t *err) {
  size_t at = hsize;
  if (n < hsize) return mi_errorf(err, MI_ERR_INTERNAL, "worker: short %s job", what);
  memcpy(head, payload, hsize);
  for (int i = 0; i < count; i++) {
    if (lens[i] == 0 || lens[i] > n - at || ((const char *)payload)[at + lens[i] - 1])
      return mi_errorf(err, MI_ERR_INTERNAL, "worker: malformed %s job", what);
    t[i] = (const char *)payload + at;
    at += lens[i];
  }
  return MI_OK;
}

/* The held reference outputs dropped (the next accuracy job computes or reads them again). */
static void ref_out_free(mi__config_cache_t *c) {
  const mi_xf_samples_t *smp = c->samples;
  if (c->ref_out && c->g && smp)
    for (int32_t i = 0; i < smp->sample_count * c->g->output_count; i++)
      mi_array_destroy(c->ref_out[i]);
  free(c->ref_out);
  c->ref_out = NULL;
}

void mi__config_cache_free(mi__config_cache_t *c) {
  struct mi_plugin *fb = c->fb; /* the worker's, not the model's: it stays */
  uint32_t fb_device = c->fb_device;
  ref_out_free(c);
  mi_xf_means_destroy(c->means);
  mi_graph_destroy(c->anchor_g);
  free(c->anchor_xf);
  mi_graph_destroy(c->g);
  mi_xf_samples_destroy(c->samples);
  memset(c, 0, sizeof *c);
  c->fb = fb;
  c->fb_device = fb_device;
}

static void free_fixed(const mi_graph_t *g, mi_array_t **fixed) {
  for (int32_t i = 0; fixed && g && i < g->input_count; i++) mi_array_destroy(fixed[i]);
  free(fixed);
}

/* The job's fixed inputs, "NAME=FILE.npy;...", read by the command lines' own parser
 * (mi_graph_input_args): g's input shapes set, the arrays in fixed[] by input index. */
static int32_t fixed_inputs(mi_graph_t *g, const char *text, mi_array_t **fixed, mi_error_t *err) {
  char *copy = strdup(text), *save = NULL;
  const char **files = NULL;
  int32_t n = 1, rc;
  for (const char *p = text; *p; p++) n += *p == ';';
  if (!copy || !(files = malloc((size_t)n * sizeof *files))) {
    free(copy);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
  }
  n = 0;
  for (char *it = strtok_r(copy, ";", &save); it; it = strtok_r(NULL, ";", &save)) files[n++] = it;
  rc = mi_graph_input_args(g, files, n, NULL, 0, fixed, err);
  free(files);
  free(copy);
  return rc;
}

/* The original model and its samples, loaded once per (model, inputs, fixed inputs,
 * calibration, seed). */
int32_t mi__config_cached_model(mi__config_cache_t *c, const cjob_t *job, const char *const *t,
                                mi_error_t *err) {
  char key[sizeof c->key];
  mi_xf_samples_t *smp = NULL;
  mi_array_t **fixed = NULL;
  int32_t rc;
  /* A key too long for the buffer is never kept: a cut one could match another job's. */
  int len = snprintf(key, sizeof key, "%s|%s|%s|%s|%llu|%d", t[T_MODEL], t[T_INPUTS], t[T_CALIB],
                     t[T_FIXED], (unsigned long long)job->seed, (int)job->samples);
  if (len < 0 || (size_t)len >= sizeof key) key[0] = '\0';
  if (c->g && key[0] && strcmp(key, c->key) == 0) return MI_OK;
  mi__config_cache_free(c);
  if ((rc = mi_onnx_load(t[T_MODEL], &c->g, err))) return rc;
  if (t[T_INPUTS][0] && (rc = mi_graph_set_input_shapes(c->g, t[T_INPUTS], "worker", err))) goto fail;
  if (!(fixed = calloc((size_t)c->g->input_count + 1, sizeof *fixed))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto fail;
  }
  if (t[T_FIXED][0] && (rc = fixed_inputs(c->g, t[T_FIXED], fixed, err))) goto fail;
  /* An If that fixed values or shapes decide is its branch here, and constants are folded, as
   * in the tuner's space (mi_graph_make_static). */
  if ((rc = mi_graph_make_static(c->g, NULL, err))) goto fail;
  rc = t[T_CALIB][0] ? mi_xf_samples_load_dir(c->g, t[T_CALIB], &smp, err)
                     : mi_xf_samples_random_fixed(c->g, job->samples, job->seed,
                                                  (const mi_array_t *const *)fixed, &smp, err);
  if (rc) goto fail;
  free_fixed(c->g, fixed);
  c->samples = smp;
  snprintf(c->key, sizeof c->key, "%s", key);
  return MI_OK;
fail:
  free_fixed(c->g, fixed);
  mi__config_cache_free(c);
  return rc;
}

/* The model-side transform of `text` applied to the cached model: *xg, or NULL (and *xc NULL)
 * when the text is empty and the model runs as it is. Bias correction's means are the cache's,
 * kept in ref_dir ("" none) for the job's other workers: a tune's paired rounds prepare every
 * configuration in a fresh worker. */
int32_t mi__config_apply_xf(mi_plugin_t *pl, uint32_t dev, mi__config_cache_t *cache, const char *ref_dir,
                            const char *text, mi_xf_config_t **xc, mi_graph_t **xg, mi_error_t *err) {
  mi_variant_desc_t *vars = NULL;
  uint32_t nvar = 0;
  mi_xf_apply_opts_t ao;
  char path[4096];
  int32_t rc;
  int file = ref_dir[0] && snprintf(path, sizeof path, "%s/means.bin", ref_dir) < (int)sizeof path;
  *xc = NULL;
  *xg = NULL;
  if (!text[0]) return MI_OK;
  if ((rc = xf_parse(text, xc, err))) return rc;
  if ((rc = mi_plugin_variants(pl, dev, &vars, &nvar, err))) return rc;
  if (!cache->means) {
    mi_error_t ignored;
    if (!(cache->means = mi_xf_means_create())) {
      free(vars);
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    }
    /* missing or unreadable: computed here when needed */
    cache->means_saved = file && mi_xf_means_load(cache->means, path, &ignored) == MI_OK;
  }
  memset(&ao, 0, sizeof ao);
  ao.calib = cache->samples;
  ao.variants = vars;
  ao.variant_count = nvar;
  ao.means = cache->means;
  rc = mi_xf_apply(cache->g, *xc, &ao, xg, NULL, err);
  free(vars);
  if (rc == MI_OK && file && !cache->means_saved) {
    mi_error_t ignored; /* not kept: the next worker computes them again */
    cache->means_saved = mi_xf_means_save(cache->means, path, &ignored) == MI_OK;
  }
  return rc;
}

const mi_array_t **mi__config_first_sample(const mi__config_cache_t *c, const mi_graph_t *g) {
  const mi_xf_samples_t *smp = c->samples;
  const mi_array_t **in = calloc((size_t)g->input_count + 1, sizeof *in);
  for (int32_t i = 0; in && smp && smp->sample_count > 0 && smp->input_count == g->input_count &&
                      i < g->input_count;
       i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    const mi_array_t *a = smp->inputs[i];
    if (a && a->dtype == t->dtype && a->rank == t->rank &&
        memcmp(a->dims, t->dims, (size_t)a->rank * sizeof *a->dims) == 0)
      in[i] = a;
  }
  return in;
}

/* The job's anchor for the profile (T_ANCHOR_XF, T_ANCHOR_HW): its graph from the cache
 * (transformed once per transform text), its session options (parsed from *text) and inputs
 * (*in); 0 when the job has none or it cannot be made: the profile goes without one, since the
 * anchor is not what the job measures. */
static int anchor_make(mi_plugin_t *pl, uint32_t dev, const cjob_t *job, const char *const *t,
                       mi__config_cache_t *cache, char **text, hw_parsed_t *hw,
                       const mi_array_t ***in, mi__anchor_t *an) {
  mi_error_t e;
  if (!job->anchor || job->accuracy_only) return 0;
  if (!cache->anchor_xf || strcmp(cache->anchor_xf, t[T_ANCHOR_XF]) != 0) {
    mi_xf_config_t *xc = NULL;
    mi_graph_destroy(cache->anchor_g);
    free(cache->anchor_xf);
    cache->anchor_g = NULL;
    cache->anchor_xf = NULL;
    if (mi__config_apply_xf(pl, dev, cache, t[T_REFDIR], t[T_ANCHOR_XF], &xc, &cache->anchor_g, &e) ||
        !(cache->anchor_xf = strdup(t[T_ANCHOR_XF]))) {
      mi_graph_destroy(cache->anchor_g);
      cache->anchor_g = NULL;
    }
    mi_xf_config_destroy(xc);
    if (!cache->anchor_xf) return 0;
  }
  if (!(*text = strdup(t[T_ANCHOR_HW])) || mi__config_hw_parse(*text, hw, &e)) return 0;
  mi__config_fallback(cache, &hw->so);
  an->g = cache->anchor_g ? cache->anchor_g : cache->g;
  if (!(*in = mi__config_first_sample(cache, an->g))) return 0;
  an->so = &hw->so;
  an->inputs = *in;
  return 1;
}

static int32_t run_config(mi_plugin_t *pl, uint32_t dev, const cjob_t *job, const char *const *t,
                          char *hwtext, mi__config_cache_t *cache, mi_profile_t **prof,
                          mi_worker_config_result_t *res, mi_error_t *err) {
  mi_xf_config_t *xc = NULL;
  mi_graph_t *xg = NULL;
  const mi_array_t **first = NULL, **afirst = NULL;
  hw_parsed_t hw, ahw;
  mi__anchor_t an;
  char *atext = NULL;
  int32_t rc;
  double t0 = mi__now_s();
  memset(&hw, 0, sizeof hw);
  memset(&ahw, 0, sizeof ahw);
  if ((rc = mi__config_cached_model(cache, job, t, err))) goto done;
  if ((rc = mi__config_apply_xf(pl, dev, cache, t[T_REFDIR], t[T_XF], &xc, &xg, err))) goto done;
  res->transform_s = mi__now_s() - t0;
  if ((rc = mi__config_hw_parse(hwtext, &hw, err))) goto done;
  mi__config_fallback(cache, &hw.so);
  /* A configuration measured for tuning is also checked: the device's outputs against the
   * reference (wrong results fail the measurement), and its accuracy comes from them too. With
   * the accuracy measured first, outputs within the check's bound of the original model itself
   * (relative L2 on the samples) are right, and the reference run of the transformed model, the
   * costliest step of a real model's measurement (seconds), is needed only to tell a wrong kernel
   * from a lossy model-side change when they are not. */
  if (!(first = mi__config_first_sample(cache, xg ? xg : cache->g))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto done;
  }
  if (job->accuracy_only) { /* no timing: one session, the accuracy's */
    if (!(*prof = calloc(1, sizeof **prof))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto done;
    }
  } else if ((rc = mi__profile_run_on(xg ? xg : cache->g, pl, dev, &hw.so, &job->mo,
                                      job->check && !job->accuracy, first,
                                      anchor_make(pl, dev, job, t, cache, &atext, &ahw, &afirst, &an) ? &an : NULL,
                                      prof, err)))
    goto done;
  if (job->accuracy) {
    double worst = INFINITY;
    cache->ref_dir = t[T_REFDIR];
    cache->ref_device = job->ref_device;
    /* Outputs held for another folder are not this job's reference (a tune whose default was
     * over its accuracy bound against the interpreter switches to the default's own outputs). */
    if (strcmp(cache->ref_from, t[T_REFDIR]) != 0) {
      ref_out_free(cache);
      snprintf(cache->ref_from, sizeof cache->ref_from, "%s", t[T_REFDIR]);
    }
    if ((rc = mi__device_accuracy(xg ? xg : cache->g, pl, dev, &hw.so, cache, &res->rel_l2,
                                  &worst, &res->top1, err)))
      goto done;
    res->has_accuracy = 1;
    /* Right without the check's reference run only when every output on its own is within the
     * check's bound (the check's own figure, mi_xf_metrics_t.worst_rel_l2): the pooled rel_l2
     * let an FP16 point of mlsd_tiny_320 pass at 0.0033 whose scores output was 6.8% off, and
     * the end-of-tune paired check then refused it as wrong results. */
    if (job->accuracy_only) {
      (*prof)->checked = 0; /* only the drop was asked */
    } else if (worst <= 0.05) {
      (*prof)->checked = 1;
      (*prof)->check_ok = 1;
      (*prof)->check_error = worst;
    } else if (job->accuracy_bound > 0 && res->rel_l2 > job->accuracy_bound) {
      /* Over the caller's accuracy bound: infeasible whether a kernel or the transform lost
       * the accuracy, so the check's reference run (seconds on a real model) would decide
       * nothing. The profile says it was not checked. */
      (*prof)->checked = 0;
    } else if (cache->ref_is_device) {
      /* The reference is the device's default (the reference interpreter was too slow for this
       * model), so the check's reference run would be as slow: an output this far off the
       * default fails as wrong results, as the check would most likely have said. */
      (*prof)->checked = 1;
      (*prof)->check_ok = 0;
      (*prof)->check_error = worst;
    } else if ((rc = mi__profile_check(xg ? xg : cache->g, pl, dev, &hw.so, first, *prof,
                                       err))) {
      goto done;
    }
  }
done:
  free(first);
  free(afirst);
  free(atext);
  mi__config_hw_free(&ahw);
  mi__config_hw_free(&hw);
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
  if (mi__config_job_parse(payload, n, &job, t, &e)) goto fail;
  if (!(hw = strdup(t[T_HW]))) {
    mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto fail;
  }
  if (run_config(pl, dev, &job, t, hw, cache, &prof, &res, &e)) goto fail;
  free(hw);
  {
    /* One frame: the result, the profile, then its layers and branch rows. */
    size_t nb = 0;
    char *buf = malloc(sizeof res + sizeof *prof + 1);
    void *body = mi__profile_body(prof, &nb);
    if (buf && body) {
      memcpy(buf, &res, sizeof res);
      memcpy(buf + sizeof res, prof, sizeof *prof);
      mi__worker_reply(fd, MI__REPLY_CONFIG, buf, sizeof res + sizeof *prof, body, nb);
      free(buf);
      free(body);
    } else {
      free(buf);
      free(body);
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
