/* tune_facts.c - what the tuning report says about a run before drawing it: the escaping writer
 * every HTML and SVG text goes through, feasibility per trial, objectives without figures on a
 * device and what is plotted instead, the default configuration's trial, units. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_report.h"

void mi__tune_esc(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    int n;
    switch (*p) {
    case '<': fputs("&lt;", f); continue;
    case '>': fputs("&gt;", f); continue;
    case '&': fputs("&amp;", f); continue;
    case '"': fputs("&quot;", f); continue;
    case '\'': fputs("&#39;", f); continue;
    case '\t':
    case '\n':
    case '\r': fputc(*p, f); continue;
    default: break;
    }
    /* XML 1.0 has no control characters but these three; a model path or a plugin's message
     * may hold anything. */
    if (*p < 0x20 || *p == 0x7f || (n = mi_host_utf8_len(p)) == 0) {
      fputs("&#xfffd;", f);
      continue;
    }
    fwrite(p, 1, (size_t)n, f);
    p += n - 1;
  }
}

void mi__tune_esc_data(FILE *f, const mi_tune_run_t *run) {
  fputs(" data-device=\"", f);
  mi__tune_esc(f, run->spec);
  fputs("\" data-model=\"", f);
  mi__tune_esc(f, run->model);
  fputc('"', f);
}

void mi__tune_esc_title(FILE *f, const mi_tune_run_t *run) {
  mi__tune_esc(f, run->model);
  fputs(" on ", f);
  mi__tune_esc(f, run->spec);
}

int mi__tune_feasible(const mi_recipe_t *r, const mi_trial_t *t, uint32_t *violated) {
  uint32_t v = 0;
  if (violated) *violated = 0;
  if (t->status != MI_OK) return 0;
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (r->has_bound[k] && !(t->objectives[k] <= r->bound[k])) v |= 1u << k;
  if (violated) *violated = v;
  return v == 0;
}

const char *mi__tune_label(int32_t o) {
  static const char *names[MI_OBJ_COUNT] = {"latency", "peak memory", "energy per inference", "accuracy drop"};
  return o >= 0 && o < MI_OBJ_COUNT ? names[o] : "trial";
}

const char *mi__tune_unit(int32_t o) {
  static const char *units[MI_OBJ_COUNT] = {"ms", "MiB", "mJ", "%"};
  return o >= 0 && o < MI_OBJ_COUNT ? units[o] : "";
}

double mi__tune_shown(int32_t o, double v) { return o == MI_OBJ_ACCURACY ? v * 100 : v; }

void mi__tune_value(FILE *f, int32_t o, double v) {
  if (!isfinite(v)) fputs("-", f);
  else
    fprintf(f, "%.4g %s", mi__tune_shown(o, v), mi__tune_unit(o));
}

const char *mi__tune_why_missing(int32_t o) {
  switch (o) {
  case MI_OBJ_ENERGY: return "the device has no energy counter";
  case MI_OBJ_MEMORY: return "the device reports no memory figure";
  default: return "no trial on this device reported it";
  }
}

/* The second axis when the recipe's own objectives leave only one with figures: a bounded
 * objective first (it shows what the constraints cut off), accuracy drop before memory. */
static int32_t stand_in(const mi_recipe_t *r, const mi_tune_facts_t *f, int32_t x) {
  static const int32_t order[] = {MI_OBJ_ACCURACY, MI_OBJ_MEMORY, MI_OBJ_LATENCY, MI_OBJ_ENERGY};
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < 4; i++)
      if (order[i] != x && f->has[order[i]] && (pass || r->has_bound[order[i]])) return order[i];
  return -1;
}

int mi__tune_facts(const mi_recipe_t *r, const mi_tune_run_t *run, mi_tune_facts_t *f) {
  const mi_search_result_t *res = run->res;
  int32_t use[MI_OBJ_COUNT], nuse = 0, missing = 0, *pt;
  uint64_t def_hash;
  memset(f, 0, sizeof *f);
  f->def = -1;
  f->x = -1;
  f->y = -1;
  if (!res) return 1;
  f->count = res->count;
  f->feasible = calloc((size_t)res->count + 1, 1);
  f->violated = calloc((size_t)res->count + 1, sizeof *f->violated);
  pt = malloc(((size_t)mi_space_dim_count(run->space) + 1) * sizeof *pt);
  if (!f->feasible || !f->violated || !pt) {
    free(pt);
    mi__tune_facts_free(f);
    return 0;
  }
  /* The search starts from the plugin's defaults, repaired; a trial with that hash is it. */
  mi_space_default(run->space, pt);
  mi_space_repair(run->space, pt, NULL, NULL);
  def_hash = mi_space_hash(run->space, pt);
  free(pt);
  for (int32_t i = 0; i < res->count; i++) {
    const mi_trial_t *t = &res->trials[i];
    f->feasible[i] = (uint8_t)mi__tune_feasible(r, t, &f->violated[i]);
    if (t->status != MI_OK) {
      f->failed++;
      continue;
    }
    f->ok++;
    f->infeasible += !f->feasible[i];
    if (t->hash == def_hash && f->def < 0) f->def = i;
    for (int32_t k = 0; k < MI_OBJ_COUNT; k++) f->has[k] |= isfinite(t->objectives[k]);
  }
  for (int32_t j = 0; j < r->objective_count; j++) {
    if (f->has[r->objectives[j]]) use[nuse++] = r->objectives[j];
    else
      missing++;
  }
  f->substituted = missing > 0;
  if (nuse >= 2) {
    f->x = use[0];
    f->y = use[1];
    f->step = nuse == 2; /* a staircase in two dimensions is the front of two objectives only */
  } else if (nuse == 1 && (f->y = stand_in(r, f, use[0])) >= 0) {
    f->x = use[0]; /* one objective searched: its front is the best point, no staircase */
  } else {
    f->y = nuse ? use[0] : stand_in(r, f, -1);
  }
  return 1;
}

void mi__tune_facts_free(mi_tune_facts_t *f) {
  free(f->feasible);
  free(f->violated);
  f->feasible = NULL;
  f->violated = NULL;
}

void mi__tune_notes(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    mi_tune_facts_t fa;
    if (!runs[i].ok || !runs[i].res || !mi__tune_facts(r, &runs[i], &fa)) continue;
    for (int32_t j = 0; j < r->objective_count; j++) {
      int32_t o = r->objectives[j];
      if (fa.has[o] || fa.ok == 0) continue;
      fprintf(f, "tune: %s on %s: no %s figure (%s)%s", runs[i].model, runs[i].spec, mi_objective_name(o, NULL),
              mi__tune_why_missing(o), o == MI_OBJ_ENERGY ? ", so the search left it out there;" : ";");
      if (fa.x >= 0 && fa.y >= 0)
        fprintf(f, " report.html plots %s against %s instead\n", mi__tune_label(fa.y), mi__tune_label(fa.x));
      else if (fa.y >= 0)
        fprintf(f, " report.html plots %s against the trial number instead\n", mi__tune_label(fa.y));
      else
        fputs(" report.html has nothing to plot\n", f);
    }
    mi__tune_facts_free(&fa);
  }
}
