/* tune_out.c - mi-host tune's outputs: deployment.yaml (written by tune_table.c), pareto.json, an
 * SVG per (model, device) and a self-contained report.html (inline SVG and CSS, nothing fetched
 * from the network). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_report.h"

static FILE *open_out(const char *dir, const char *name, char *path, size_t cap) {
  FILE *f;
  snprintf(path, cap, "%s/%s", dir, name);
  f = fopen(path, "w");
  if (!f) fprintf(stderr, "mi-host: cannot write %s\n", path);
  return f;
}

/* One trial as a JSON object; with bad >= 0 also its re-measurement counts. `feasible`: it
 * succeeded and met every bound; `violated`: the bounds it broke, a missing figure as null. */
static void json_trial(FILE *f, const mi_recipe_t *r, const mi_trial_t *t, int32_t bad, int32_t failed) {
  int first = 1;
  uint32_t viol = 0;
  int feasible = mi__tune_feasible(r, t, &viol);
  fprintf(f, "{\"config_id\":\"%016llx\",\"ok\":%s,\"from_history\":%s,\"feasible\":%s,\"violated\":[",
          (unsigned long long)t->hash, t->status == MI_OK ? "true" : "false", t->from_history ? "true" : "false",
          feasible ? "true" : "false");
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (MI_TUNE_VIOLATES(viol, k)) {
      const char *key;
      fputs(first ? "{\"bound\":" : ",{\"bound\":", f);
      mi_objective_name(k, &key);
      mi_json_string(f, key);
      fputs(",\"max\":", f);
      mi_json_double(f, r->bound[k]);
      fputs(",\"value\":", f);
      mi_json_double(f, t->objectives[k]);
      fputc('}', f);
      first = 0;
    }
  fputc(']', f);
  first = 1;
  fputs(",\"objectives\":{", f);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
    mi_json_key(f, &first, mi_objective_name(k, NULL));
    mi_json_double(f, t->objectives[k]);
  }
  fputc('}', f);
  if (t->status != MI_OK) {
    fputs(",\"failure\":", f);
    mi_json_string(f, t->message);
  }
  if (bad >= 0) fprintf(f, ",\"verify_violations\":%d,\"verify_failures\":%d", (int)bad, (int)failed);
  fputc('}', f);
}

/* A paired verdict v (tuned / default time) as `"speedup":X,"ci95":[lo,hi]`, default over tuned. */
static void json_speedup(FILE *f, const mi_compare_ratio_t *v) {
  fputs("\"speedup\":", f);
  mi_json_double(f, 1 / v->ratio);
  fputs(",\"ci95\":[", f);
  mi_json_double(f, 1 / v->hi);
  fputc(',', f);
  mi_json_double(f, 1 / v->lo);
  fputc(']', f);
}

static void write_json(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n) {
  int32_t failed = mi_tune_failed_model(r, runs, n);
  char why[2048];
  /* ok: every model got at least one successful measurement (mi-host tune's exit status). */
  fprintf(f, "{\"ok\":%s,", failed < 0 ? "true" : "false");
  if (failed >= 0) {
    mi_tune_failure_text(r, runs, n, failed, why, sizeof why);
    fputs("\"error\":", f);
    mi_json_string(f, why);
    fputc(',', f);
  }
  fputs("\"recipe\":", f);
  mi_json_string(f, r->path);
  fputs(",\"objectives\":[", f);
  for (int32_t j = 0; j < r->objective_count; j++)
    fprintf(f, "%s\"%s\"", j ? "," : "", mi_objective_name(r->objectives[j], NULL));
  fputs("],\"runs\":[", f);
  for (int32_t i = 0; i < n; i++) {
    mi_tune_run_t *run = &runs[i];
    fputs(i ? ",{\"model\":" : "{\"model\":", f);
    mi_json_string(f, run->model);
    fputs(",\"device\":", f);
    mi_json_string(f, run->spec);
    fprintf(f, ",\"ok\":%s", run->ok ? "true" : "false");
    if (!run->ok) {
      fputs(",\"error\":", f);
      mi_json_string(f, run->message);
      fputc('}', f);
      continue;
    }
    fputs(",\"space_size\":", f);
    mi_json_string(f, run->size);
    fprintf(f, ",\"measured\":%d,\"replayed\":%d,\"hypervolume\":", run->res->measured, run->res->replayed);
    mi_json_double(f, run->hv);
    if (run->confirm) {
      fputs(",\"vs_default\":{", f);
      json_speedup(f, &run->vs_default);
      fprintf(f, ",\"rounds\":%d,\"deployed_default\":%s,\"chose_default\":%s,\"loaded\":%d}", (int)run->confirm_rounds,
              run->deployed_default ? "true" : "false", run->confirm == 2 ? "true" : "false", (int)run->confirm_loaded);
      if (run->contender >= 0 && run->confirm_rounds > 0) {
        /* the search chose the default; the best other trial had the paired rounds instead */
        fprintf(f, ",\"contender\":{\"trial\":%d,", (int)run->contender + 1);
        json_speedup(f, &run->vs_contender);
        fputc('}', f);
      }
      if (run->extras > 0 && run->confirm_rounds > 0) {
        /* the trials that joined the rounds besides the choice and the runner-up */
        fputs(",\"extras\":[", f);
        for (int32_t k = 0; k < run->extras; k++) {
          fprintf(f, "%s{\"trial\":%d,\"greedy\":%s,", k ? "," : "", (int)run->extra[k] + 1,
                  run->extra[k] == run->greedy_trial ? "true" : "false");
          json_speedup(f, &run->vs_extra[k]);
          fputc('}', f);
        }
        fputc(']', f);
      }
    } else if (run->confirm_note[0]) {
      /* no paired figure: why, and whether the default was kept for want of one */
      fprintf(f, ",\"vs_default\":{\"deployed_default\":%s,\"note\":", run->deployed_default ? "true" : "false");
      mi_json_string(f, run->confirm_note);
      fputc('}', f);
    }
    /* The recipe's seconds and what they cut (mi_tune_run_t's time fields). */
    fputs(",\"time\":{\"budget_s\":", f);
    mi_json_double(f, run->time_budget_s);
    fputs(",\"used_s\":", f);
    mi_json_double(f, run->time_used_s);
    fprintf(f, ",\"cut\":{\"variant_rounds\":%d,\"knob_rounds\":%d,\"search\":%d,\"confirm\":%s}}",
            (int)run->cut_variant_rounds, (int)run->cut_knob_rounds, (int)run->cut_search,
            run->cut_confirm ? "true" : "false");
    if (run->ltasks > 0) {
      /* The space as it was searched: model side x device level, plus the layer tasks. */
      fprintf(f,
              ",\"layer_tasks\":{\"tasks\":%d,\"nodes\":%d,\"from_history\":%d,\"measured\":%d,\"warm\":%d,"
              "\"agreed\":%d,\"cold\":%d,\"layer_measurements\":%d,\"warm_layer_measurements\":%d,"
              "\"cold_run_layer_measurements\":%d,\"rounds\":%d,\"improved\":%d,\"knob_rounds\":%d,"
              "\"knob_layer_measurements\":%d,\"knob_improved\":%d,\"log10_model\":",
              (int)run->ltasks, (int)run->ltask_nodes, (int)run->ltask_reused, (int)run->ltask_measured,
              (int)run->ltask_warm, (int)run->ltask_agreed, (int)run->ltask_cold, (int)run->ltask_layer_measurements,
              (int)run->ltask_warm_layer_measurements, (int)run->ltask_cold_run_layer_measurements,
              (int)run->ltask_rounds, (int)run->ltask_improved, (int)run->ltask_knob_rounds,
              (int)run->ltask_knob_measurements, (int)run->ltask_knob_improved);
      mi_json_double(f, run->ltask_log10_model);
      fputs(",\"log10_device\":", f);
      mi_json_double(f, run->ltask_log10_device);
      fputs(",\"log10_kernel\":", f);
      mi_json_double(f, run->ltask_log10_kernel);
      fputc('}', f);
    }
    if (run->meta) {
      /* The accuracy bound's moves: candidates screened, split moves and greedy steps measured,
       * the greedy's longest prefix within the bound (its trial, 1-based as the contender's;
       * null: none) and each block's own drop the greedy measured. */
      fprintf(f, ",\"precision\":{\"screened\":%d,\"split_moves\":%d,\"greedy_steps\":%d,\"greedy_trial\":",
              (int)run->acc_screened, (int)run->split_moves, (int)run->greedy_moves);
      if (run->greedy_trial >= 0)
        fprintf(f, "%d", (int)run->greedy_trial + 1);
      else
        fputs("null", f);
      fputs(",\"block_drops\":[", f);
      for (int32_t k = 0; k < run->sens_count; k++) {
        const mi_tune_sens_t *e = &run->sens[k];
        fprintf(f, "%s{\"layer\":", k ? "," : "");
        mi_json_string(f, e->layer);
        fprintf(f, ",\"layers\":%d,\"label\":", (int)e->layers);
        mi_json_string(f, e->label);
        fputs(",\"drop\":", f);
        mi_json_double(f, e->drop);
        fputc('}', f);
      }
      fputs("]}", f);
      fprintf(f, ",\"device_moves\":%d", (int)run->device_moves);
    }
    if (run->paired > 0) {
      fprintf(f, ",\"paired\":{\"measurements\":%d,\"default_ms\":{\"first\":", (int)run->paired);
      mi_json_double(f, run->paired_first_ms);
      fputs(",\"min\":", f);
      mi_json_double(f, run->paired_min_ms);
      fputs(",\"max\":", f);
      mi_json_double(f, run->paired_max_ms);
      fprintf(f, "},\"retaken\":%d,\"retakes\":%d,\"retake_s\":", (int)run->retaken, (int)run->retakes);
      mi_json_double(f, run->retake_s);
      fputc('}', f);
    } else {
      fputs(",\"paired\":null", f);
    }
    fprintf(f, ",\"energy_modeled\":%s,\"assigned\":%s,\"pruned_variants\":%d,\"prepare_probes\":%d,\"verify\":%d,\"front\":[",
            run->energy_modeled ? "true" : "false", run->assigned ? "true" : "false", (int)run->pruned,
            (int)run->probes, (int)run->verify_n);
    for (int32_t k = 0; k < run->front_n; k++) {
      if (k) fputc(',', f);
      json_trial(f, r, &run->res->trials[run->front[k]], run->verify_n > 0 ? run->verify_bad[k] : -1,
                 run->verify_n > 0 ? run->verify_failed[k] : 0);
    }
    fputs("],\"trials\":[", f);
    for (int32_t k = 0; k < run->res->count; k++) {
      if (k) fputc(',', f);
      json_trial(f, r, &run->res->trials[k], -1, 0);
    }
    fputs("]}", f);
  }
  fputs("]}\n", f);
}

int mi_tune_write(const mi_recipe_t *r, const char *out, mi_tune_run_t *runs, int32_t n, int json) {
  char path[4200], name[256];
  FILE *f;
  mi_error_t err;
  mi_error_clear(&err);
  if (mi_tune_write_table(r, out, runs, n, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message[0] ? err.message : "tune: the deployment table was not written");
    return MI_HOST_FAIL;
  }
  if (!(f = open_out(out, "pareto.json", path, sizeof path))) return MI_HOST_FAIL;
  write_json(f, r, runs, n);
  fclose(f);
  for (int32_t i = 0; i < n; i++) {
    char *c;
    if (!runs[i].ok) continue;
    snprintf(name, sizeof name, "pareto-%d-%s.svg", (int)i, runs[i].spec);
    for (c = name; *c; c++)
      if (*c == ':' || *c == '/') *c = '_';
    if (!(f = open_out(out, name, path, sizeof path))) return MI_HOST_FAIL;
    mi_tune_svg(f, r, &runs[i]);
    fclose(f);
  }
  if (!(f = open_out(out, "report.html", path, sizeof path))) return MI_HOST_FAIL;
  mi_tune_html(f, r, runs, n);
  fclose(f);
  if (json) write_json(stdout, r, runs, n);
  else
    mi__tune_notes(stderr, r, runs, n);
  if (!json) fprintf(stderr, "tune: wrote %s/deployment.yaml, pareto.json, report.html\n", out);
  return MI_HOST_OK;
}
