/* rt_adapt.c - what the runtime decides: fall back along the stored front, re-adapt with a few
 * measured neighbours, check the software stack, and save the table atomically. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "deploy/deploy_internal.h"

static void mark_tried(mi_runtime_t *rt, const char *id) {
  char(*nt)[17] = realloc(rt->tried, ((size_t)rt->tried_count + 1) * sizeof *nt);
  if (!nt) return; /* worst case the configuration is tried again */
  rt->tried = nt;
  snprintf(rt->tried[rt->tried_count++], 17, "%s", id);
}

static int was_tried(const mi_runtime_t *rt, const char *id) {
  for (int32_t i = 0; i < rt->tried_count; i++)
    if (strcmp(rt->tried[i], id) == 0) return 1;
  return 0;
}

/* Figures as JSON members: "name":{"latency_ms":..,...} (absent figures left out). */
static void figs_json(char *buf, size_t cap, const char *name, const double *v) {
  size_t at = (size_t)snprintf(buf, cap, ",\"%s\":{", name);
  int first = 1;
  for (int32_t k = 0; k < MI_OBJ_COUNT && at < cap; k++) {
    const char *key;
    mi_objective_name(k, &key);
    if (!isfinite(v[k])) continue;
    at += (size_t)snprintf(buf + at, cap - at, "%s\"%s\":%.9g", first ? "" : ",", key, v[k]);
    first = 0;
  }
  if (at < cap) snprintf(buf + at, cap - at, "}");
}

/* Rewrites the table with `adopted` first (when not NULL) and saves it atomically. */
static int32_t save_table(mi_runtime_t *rt, const mi_deploy_config_t *adopted, mi_error_t *err) {
  mi_deploy_table_t *t = rt->table;
  mi_deploy_entry_t *e = &t->entries[rt->entry];
  char *sh, *st;
  if (adopted) {
    mi_deploy_config_t *nc = realloc(e->configs, ((size_t)e->config_count + 1) * sizeof *nc);
    if (!nc) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    e->configs = nc;
    /* The adopted configuration leads; an older copy of it leaves the list. */
    for (int32_t k = 0; k < e->config_count; k++)
      if (strcmp(e->configs[k].id, adopted->id) == 0) {
        mi__deploy_config_clear(&e->configs[k]);
        memmove(&e->configs[k], &e->configs[k + 1], (size_t)(e->config_count - k - 1) * sizeof *nc);
        e->config_count--;
        break;
      }
    memmove(&e->configs[1], &e->configs[0], (size_t)e->config_count * sizeof *nc);
    if (mi__deploy_config_copy(&e->configs[0], adopted) != MI_OK) {
      memmove(&e->configs[0], &e->configs[1], (size_t)e->config_count * sizeof *nc);
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    }
    e->config_count++;
    /* The paired check against the default was about the configuration that now follows. */
    e->has_vs_default = 0;
    rt->current_index = 0;
    rt->info.config_index = 0;
  }
  /* Its figures were measured here: the entry now belongs to this stack. The table also keeps
   * what it was tuned for, so it no longer depends on finding the recipe. */
  sh = strdup(rt->stack_hash);
  st = strdup(rt->stack);
  if (!sh || !st) {
    free(sh);
    free(st);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
  }
  free(e->stack_hash);
  free(e->stack);
  e->stack_hash = sh;
  e->stack = st;
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
    t->has_bound[k] = rt->has_bound[k];
    t->bound[k] = rt->bound[k];
  }
  if (rt->inputs && !t->inputs) t->inputs = strdup(rt->inputs);
  if (!rt->o.write_table) return MI_OK;
  return mi_deploy_write(t, rt->table_path, err);
}

/* A point of the space as a stored configuration (id, canonical key/values, figures). */
static int32_t point_config(mi_runtime_t *rt, const int32_t *pt, mi_deploy_config_t *c,
                            mi_error_t *err) {
  int32_t rc;
  memset(c, 0, sizeof *c);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) c->measured[k] = NAN;
  snprintf(c->id, sizeof c->id, "%016llx", (unsigned long long)mi_space_hash(rt->space, pt));
  if ((rc = mi__deploy_config_from_point(rt->space, pt, 2, c, err)) != MI_OK)
    mi__deploy_config_clear(c);
  return rc;
}

static int32_t readapt(mi_runtime_t *rt, const char *why, mi_error_t *err) {
  int32_t nd, rc, *base = NULL, *cand = NULL, best = -1, tried = 0;
  mi_deploy_config_t *cands = NULL;
  double(*figs)[MI_OBJ_COUNT] = NULL;
  double carried_acc = rt->current.measured[MI_OBJ_ACCURACY];
  mi_rng_t rng;
  char *text = NULL;
  int32_t budget = rt->o.adapt_budget > 0 ? rt->o.adapt_budget : 4;
  rt->info.readaptations++;
  /* A fresh instance first, as for a switch: neighbours are measured on the device as it is
   * after a reset, not on the state that drifted. */
  if ((rc = mi__rt_open_device(rt, err))) goto done;
  nd = mi_space_dim_count(rt->space);
  base = calloc((size_t)nd + 1, sizeof *base);
  cand = calloc((size_t)nd + 1, sizeof *cand);
  cands = calloc((size_t)budget + 1, sizeof *cands);
  figs = calloc((size_t)budget + 1, sizeof *figs);
  text = mi_deploy_config_text(&rt->current);
  if (!base || !cand || !cands || !figs || !text) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    goto done;
  }
  if ((rc = mi_space_parse(rt->space, text, base, err))) goto done;
  mi_rng_seed(&rng, rt->o.seed + (uint64_t)rt->info.readaptations * 7919u);
  /* Candidate 0 is the running configuration itself, re-measured; then hardware-side
   * neighbours: the model side stays, so the tuned accuracy drop still holds. */
  for (int32_t attempt = 0; tried < budget && attempt < budget * 8; attempt++) {
    int dup = 0;
    memcpy(cand, base, (size_t)nd * sizeof *cand);
    if (tried > 0) {
      if (mi_space_mutate(rt->space, &rng, 0.3, cand, NULL) != MI_OK) continue;
      for (int32_t d = 0; d < nd; d++)
        if (mi_space_dim_kind(rt->space, d) == MI_DIM_MODEL) cand[d] = base[d];
      if (mi_space_repair(rt->space, cand, NULL, NULL) != MI_OK) continue;
    }
    if ((rc = point_config(rt, cand, &cands[tried], err))) goto done;
    for (int32_t j = 0; j < tried && !dup; j++) dup = strcmp(cands[j].id, cands[tried].id) == 0;
    if (dup || (tried > 0 && was_tried(rt, cands[tried].id))) {
      mi__deploy_config_clear(&cands[tried]);
      continue;
    }
    cands[tried].measured[MI_OBJ_ACCURACY] = carried_acc;
    {
      mi_error_t e2;
      char f[400];
      mi_error_clear(&e2);
      if (mi__rt_measure_point(rt, &cands[tried], rt->o.adapt_repeats, figs[tried], &e2) != MI_OK) {
        mi__rt_log(rt, "readapt_measure_failed", ",\"candidate\":\"%s\",\"error\":\"%.200s\"",
                   cands[tried].id, e2.message);
        for (int32_t k = 0; k < MI_OBJ_COUNT; k++) figs[tried][k] = NAN;
      } else {
        figs_json(f, sizeof f, "figures", figs[tried]);
        mi__rt_log(rt, "readapt_measured", ",\"candidate\":\"%s\",\"meets_bounds\":%s%s",
                   cands[tried].id, mi__rt_meets_bounds(rt, figs[tried]) ? "true" : "false", f);
        if (isfinite(figs[tried][MI_OBJ_LATENCY]) && mi__rt_meets_bounds(rt, figs[tried]) &&
            (best < 0 || figs[tried][MI_OBJ_LATENCY] < figs[best][MI_OBJ_LATENCY]))
          best = tried;
      }
    }
    tried++;
  }
  if (best < 0) {
    rc = mi_errorf(err, MI_ERR_CONSTRAINT,
                   "runtime: re-adaptation measured %d configurations, none meets the bounds",
                   (int)tried);
    mi__rt_log(rt, "readapt_failed", ",\"why\":\"%s\",\"measured\":%d", why, (int)tried);
    /* Carry on with what runs, against the level it runs at now, so that the monitor does
     * not re-adapt on every window. */
    if (mi__rt_instantiate(rt, &rt->current, rt->current_index, NULL) == MI_OK && tried > 0 &&
        isfinite(figs[0][MI_OBJ_LATENCY]))
      mi_drift_init(&rt->det, figs[0][MI_OBJ_LATENCY], rt->o.window, rt->o.delta, rt->o.lambda);
    goto done;
  }
  memcpy(cands[best].measured, figs[best], sizeof figs[best]);
  cands[best].energy_modeled = rt->current.energy_modeled;
  {
    char from[17];
    char f[400];
    snprintf(from, sizeof from, "%s", rt->current.id);
    /* Measuring ran the device too: the adopted configuration starts on a fresh instance. */
    if ((rc = mi__rt_open_device(rt, err)) || (rc = mi__rt_instantiate(rt, &cands[best], -1, err)))
      goto done;
    rt->info.switches++;
    figs_json(f, sizeof f, "figures", figs[best]);
    mi__rt_log(rt, "readapt", ",\"why\":\"%s\",\"from\":\"%s\",\"to\":\"%s\",\"measured\":%d%s", why,
               from, cands[best].id, (int)tried, f);
    if ((rc = save_table(rt, &cands[best], err)) == MI_OK)
      mi__rt_log(rt, "table_written", ",\"path\":\"%s\"", rt->table_path);
  }
done:
  for (int32_t j = 0; cands && j <= budget; j++) mi__deploy_config_clear(&cands[j]);
  free(cands);
  free(figs);
  free(base);
  free(cand);
  free(text);
  return rc;
}

int32_t mi_runtime_readapt(mi_runtime_t *rt, mi_error_t *err) {
  if (!rt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_runtime_readapt: NULL runtime");
  return readapt(rt, "request", err);
}

int32_t mi__rt_on_drift(mi_runtime_t *rt, mi_error_t *err) {
  const mi_deploy_entry_t *e = &rt->table->entries[rt->entry];
  char from[17];
  snprintf(from, sizeof from, "%s", rt->current.id);
  mark_tried(rt, from);
  for (int32_t k = 0; k < e->config_count; k++) {
    const mi_deploy_config_t *c = &e->configs[k];
    char f[400];
    mi_error_t e2;
    if (was_tried(rt, c->id)) continue;
    figs_json(f, sizeof f, "tuned", c->measured);
    if (!mi__rt_meets_bounds(rt, c->measured)) {
      mi__rt_log(rt, "fallback_skipped", ",\"candidate\":\"%s\",\"reason\":\"bounds\"%s", c->id, f);
      mark_tried(rt, c->id);
      continue;
    }
    mi_error_clear(&e2);
    /* A switch reopens the device, as a driver reset would (docs/runtime.md). */
    if (mi__rt_open_device(rt, &e2) != MI_OK || mi__rt_instantiate(rt, c, k, &e2) != MI_OK) {
      mi__rt_log(rt, "fallback_failed", ",\"candidate\":\"%s\",\"error\":\"%.200s\"", c->id, e2.message);
      mark_tried(rt, c->id);
      continue;
    }
    rt->info.switches++;
    mi__rt_log(rt, "switch", ",\"from\":\"%s\",\"to\":\"%s\",\"index\":%d%s", from, c->id, (int)k, f);
    return MI_OK;
  }
  mi__rt_log(rt, "front_exhausted", ",\"from\":\"%s\"", from);
  return readapt(rt, "drift", err);
}

int32_t mi__rt_check_stack(mi_runtime_t *rt, mi_error_t *err) {
  const mi_deploy_entry_t *e = &rt->table->entries[rt->entry];
  double fig[MI_OBJ_COUNT];
  char f[400];
  int32_t rc;
  if (strcmp(e->stack_hash, rt->stack_hash) == 0) return MI_OK;
  rt->info.stack_mismatch = 1;
  mi__rt_log(rt, "stack_mismatch", ",\"tuned_hash\":\"%s\",\"here_hash\":\"%s\",\"policy\":\"%s\"",
             e->stack_hash, rt->stack_hash,
             rt->o.stack_policy == MI_STACK_REFUSE       ? "refuse"
             : rt->o.stack_policy == MI_STACK_REVALIDATE ? "revalidate"
                                                         : "use");
  if (rt->o.stack_policy == MI_STACK_REFUSE)
    return mi_errorf(err, MI_ERR_CONSTRAINT,
                     "%s: %s on %s was tuned on another software stack (%s, here %s): refused",
                     rt->table_path, e->model, e->device, e->stack_hash, rt->stack_hash);
  if (rt->o.stack_policy != MI_STACK_REVALIDATE) return MI_OK;
  if ((rc = mi__rt_measure_point(rt, &rt->current, rt->o.adapt_repeats, fig, err))) return rc;
  figs_json(f, sizeof f, "figures", fig);
  /* Valid when the bounds hold and it is no slower than the monitor would tolerate. */
  if (mi__rt_meets_bounds(rt, fig) &&
      !(isfinite(rt->current.measured[MI_OBJ_LATENCY]) &&
        log(fig[MI_OBJ_LATENCY] / rt->current.measured[MI_OBJ_LATENCY]) > rt->det.delta + rt->det.lambda)) {
    mi_deploy_config_t c;
    if (mi__deploy_config_copy(&c, &rt->current) != MI_OK)
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "runtime: out of memory");
    memcpy(c.measured, fig, sizeof fig);
    snprintf(c.verified, sizeof c.verified, "ok");
    rc = mi__rt_instantiate(rt, &c, 0, err);
    if (rc == MI_OK) rc = save_table(rt, &c, err);
    mi__deploy_config_clear(&c);
    mi__rt_log(rt, "revalidated", ",\"ok\":true%s", f);
    return rc;
  }
  mi__rt_log(rt, "revalidated", ",\"ok\":false%s", f);
  return mi__rt_on_drift(rt, err);
}
