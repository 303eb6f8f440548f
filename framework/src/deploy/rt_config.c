/* rt_config.c - a stored configuration made real: the device instance, the model-side transform
 * and the session, built the way the tuner's worker builds them (measure/worker_config.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy_internal.h"

/* Everything a configuration needs on the current instance; the caller owns the parts. */
typedef struct prepared {
  int32_t *pt;
  mi_graph_t *xg;
  mi_space_hw_t *hw;
} prepared_t;

static void prepared_free(prepared_t *p) {
  free(p->pt);
  mi_graph_destroy(p->xg);
  mi_space_hw_destroy(p->hw);
  memset(p, 0, sizeof *p);
}

static int32_t prepare(mi_runtime_t *rt, const mi_deploy_config_t *c, prepared_t *p,
                       mi_error_t *err) {
  mi_plugin_t *pl = &rt->plugin->pub;
  mi_xf_config_t *xc = NULL;
  mi_variant_desc_t *vars = NULL;
  uint32_t nvar = 0;
  mi_xf_apply_opts_t ao;
  char *text = NULL;
  char id[17];
  int32_t rc;
  memset(p, 0, sizeof *p);
  if (!(text = mi_deploy_config_text(c)) ||
      !(p->pt = calloc((size_t)mi_space_dim_count(rt->space) + 1, sizeof *p->pt))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    goto done;
  }
  if ((rc = mi_space_parse(rt->space, text, p->pt, err))) goto done;
  snprintf(id, sizeof id, "%016llx", (unsigned long long)mi_space_hash(rt->space, p->pt));
  if (strcmp(id, c->id) != 0)
    mi__rt_log(rt, "config_id_mismatch", ",\"config_id\":\"%s\",\"here\":\"%s\"", c->id, id);
  /* The tuner's worker applies the transform for every configuration, the identity included. */
  if ((rc = mi_space_xf_config(rt->space, p->pt, &xc, err))) goto done;
  if ((rc = mi_plugin_variants(pl, rt->device, &vars, &nvar, err))) goto done;
  memset(&ao, 0, sizeof ao);
  ao.calib = rt->samples;
  ao.variants = vars;
  ao.variant_count = nvar;
  if ((rc = mi_xf_apply(rt->graph, xc, &ao, &p->xg, NULL, err))) goto done;
  rc = mi_space_hw_create(rt->space, p->pt, &p->hw, err);
done:
  free(text);
  free(vars);
  mi_xf_config_destroy(xc);
  if (rc) prepared_free(p);
  return rc;
}

static void drop_session(mi_runtime_t *rt) {
  mi_session_destroy(rt->session);
  rt->session = NULL;
  mi_graph_destroy(rt->xgraph);
  rt->xgraph = NULL;
}

int32_t mi__rt_open_device(mi_runtime_t *rt, mi_error_t *err) {
  mi_manifest_t m;
  mi_space_options_t so;
  int32_t rc;
  mi__rt_step(rt, "open"); /* a device instance: the plugin loaded, its space probed */
  /* The session and space point into the instance: they go first. */
  drop_session(rt);
  mi_space_destroy(rt->space);
  rt->space = NULL;
  mi__plugin_unload(rt->plugin);
  rt->plugin = NULL;
  mi__plugin_unload(rt->fb_plugin);
  rt->fb_plugin = NULL;
  if (rt->fb_manifest[0]) {
    memset(&m, 0, sizeof m);
    if ((rc = mi_manifest_load(rt->fb_manifest, &m, err))) return rc;
    rc = mi__plugin_load(rt->fb_manifest, &m, 0, -1, &rt->fb_plugin, err);
    mi_manifest_clear(&m);
    if (rc) return rc;
  }
  memset(&m, 0, sizeof m);
  if ((rc = mi_manifest_load(rt->manifest, &m, err))) return rc;
  rc = mi__plugin_load(rt->manifest, &m, 0, -1, &rt->plugin, err);
  mi_manifest_clear(&m);
  if (rc) return rc;
  if (rt->device >= rt->plugin->pub.device_count)
    return mi_errorf(err, MI_ERR_NOT_FOUND, "runtime: %s has no device %u after reopening",
                     rt->plugin->pub.name, (unsigned)rt->device);
  mi_space_options_default(&so);
  so.model_dims = rt->model_dims;
  return mi_space_create(rt->graph, &rt->plugin->pub, rt->device, &so, &rt->space, err);
}

/* The configuration's session options with the runtime's fallback device. */
static mi_session_options_t with_fallback(const mi_runtime_t *rt, const mi_space_hw_t *hw) {
  mi_session_options_t so = *mi_space_hw_options(hw);
  so.struct_size = (uint32_t)sizeof so;
  so.fallback_plugin = rt->fb_plugin && so.allow_host_fallback ? &rt->fb_plugin->pub : NULL;
  so.fallback_device = rt->fb_device;
  return so;
}

int32_t mi__rt_instantiate(mi_runtime_t *rt, const mi_deploy_config_t *c, int32_t index,
                           mi_error_t *err) {
  prepared_t p;
  mi_session_t *s = NULL;
  mi_deploy_config_t copy;
  int32_t rc;
  mi_session_options_t so;
  mi__rt_step(rt, "prepare");
  if ((rc = prepare(rt, c, &p, err))) return rc;
  so = with_fallback(rt, p.hw);
  so.per_node_timing = rt->o.per_node_timing;
  if ((rc = mi_session_create(p.xg, &rt->plugin->pub, rt->device, &so, &s, err))) {
    prepared_free(&p);
    return rc;
  }
  if (mi__deploy_config_copy(&copy, c) != MI_OK) {
    mi_session_destroy(s);
    prepared_free(&p);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
  }
  drop_session(rt);
  rt->session = s;
  rt->xgraph = p.xg;
  p.xg = NULL;
  prepared_free(&p);
  mi__deploy_config_clear(&rt->current);
  rt->current = copy;
  rt->current_index = index;
  snprintf(rt->info.config_id, sizeof rt->info.config_id, "%s", c->id);
  rt->info.config_index = index;
  rt->info.reference_ms = c->measured[MI_OBJ_LATENCY];
  mi_drift_init(&rt->det, isfinite(c->measured[MI_OBJ_LATENCY]) ? c->measured[MI_OBJ_LATENCY] : 0,
                rt->o.window, rt->o.delta, rt->o.lambda);
  rt->ref_pending = !isfinite(c->measured[MI_OBJ_LATENCY]);
  return MI_OK;
}

int mi__rt_meets_bounds(const mi_runtime_t *rt, const double *fig) {
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (rt->has_bound[k] && isfinite(fig[k]) && fig[k] > rt->bound[k]) return 0;
  return 1;
}

int32_t mi__rt_measure_point(mi_runtime_t *rt, const mi_deploy_config_t *c, int32_t repeats,
                             double *fig, mi_error_t *err) {
  prepared_t p;
  mi_profile_t *prof = NULL;
  mi_measure_options_t mo;
  mi_session_options_t so;
  int32_t rc;
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) fig[k] = NAN;
  mi__rt_step(rt, "measure");
  if ((rc = prepare(rt, c, &p, err))) return rc;
  mi_measure_options_default(&mo);
  mo.warmup = 1;
  mo.min_repeats = repeats > 5 ? repeats : 5;
  mo.max_repeats = mo.min_repeats * 2;
  mo.budget_s = 5;
  so = with_fallback(rt, p.hw);
  rc = mi_profile_run(p.xg, &rt->plugin->pub, rt->device, &so, &mo, 0, &prof, err);
  if (rc == MI_OK) {
    fig[MI_OBJ_LATENCY] = prof->latency.stats.median * 1e3;
    if (prof->peak_memory_source) fig[MI_OBJ_MEMORY] = (double)prof->peak_memory_bytes / 1048576.0;
    if (prof->has_energy) fig[MI_OBJ_ENERGY] = prof->energy_j * 1e3;
    fig[MI_OBJ_ACCURACY] = c->measured[MI_OBJ_ACCURACY];
  }
  mi_profile_destroy(prof);
  prepared_free(&p);
  return rc;
}
