/* tune_out.c - mi-host tune's outputs: deployment.yaml, pareto.json, an SVG per (model, device)
 * and a self-contained report.html (inline SVG and CSS, nothing fetched from the network). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static FILE *open_out(const char *dir, const char *name, char *path, size_t cap) {
  FILE *f;
  snprintf(path, cap, "%s/%s", dir, name);
  f = fopen(path, "w");
  if (!f) fprintf(stderr, "mi-host: cannot write %s\n", path);
  return f;
}

static void yaml_figures(FILE *f, const mi_trial_t *t, const char *indent, int modeled) {
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
    const char *key;
    mi_objective_name(k, &key);
    if (isfinite(t->objectives[k]))
      fprintf(f, "%s%s: %.6g%s\n", indent, key, t->objectives[k],
              k == MI_OBJ_ENERGY && modeled ? "   # modeled, not measured" : "");
  }
}

static void write_config_yaml(FILE *f, const mi_space_t *s, const mi_trial_t *t, const char *indent) {
  char *text = NULL;
  if (mi_space_canonical(s, t->point, &text, NULL) != MI_OK) return;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char *eq = strchr(line, '=');
    if (!eq) continue;
    *eq = '\0';
    fprintf(f, "%s\"%s\": \"%s\"\n", indent, line, eq + 1);
  }
  free(text);
}

static int write_deployment(const mi_recipe_t *r, const char *dir, mi_tune_run_t *runs, int32_t n) {
  char path[4200];
  FILE *f = open_out(dir, "deployment.yaml", path, sizeof path);
  if (!f) return 0;
  fprintf(f, "# Meta Infer deployment table, written by mi-host tune from %s\nversion: 1\ndeployments:\n", r->path);
  for (int32_t i = 0; i < n; i++) {
    mi_tune_run_t *run = &runs[i];
    fprintf(f, "  - model: \"%s\"\n    device: \"%s\"\n", run->model, run->spec);
    if (!run->ok || run->front_n == 0) {
      fprintf(f, "    status: \"%s\"\n", run->ok ? "no configuration met the constraints" : run->message);
      continue;
    }
    fprintf(f, "    assigned: %s\n    stack: \"%s\"\n    stack_hash: \"%s\"\n",
            run->assigned ? "true" : "false", run->stack, run->stack_hash);
    for (int32_t k = 0; k < run->front_n; k++) {
      const mi_trial_t *t = &run->res->trials[run->front[k]];
      /* keys of the chosen entry sit under "chosen:", a fallback's under its "- " item */
      const char *ind = k == 0 ? "    " : "      ";
      if (k == 0) fprintf(f, "    chosen:\n");
      if (k == 1) fprintf(f, "    fallbacks:\n");
      fprintf(f, "%s%sconfig_id: \"%016llx\"\n", k == 0 ? "  " : "      ", k == 0 ? ind : "- ", (unsigned long long)t->hash);
      if (run->verify_n > 0)
        fprintf(f, "%s  verified: \"%s\"   # %d re-measurements: %d broke a bound, %d failed\n", ind,
                run->verify_bad[k] || run->verify_failed[k] ? "VIOLATED" : "ok", (int)run->verify_n,
                (int)run->verify_bad[k], (int)run->verify_failed[k]);
      fprintf(f, "%s  measured:\n", ind);
      {
        char deeper[32];
        snprintf(deeper, sizeof deeper, "%s    ", ind);
        yaml_figures(f, t, deeper, run->energy_modeled);
        fprintf(f, "%s  configuration:\n", ind);
        write_config_yaml(f, run->space, t, deeper);
      }
    }
  }
  fputs("# Each model on one device (greedy by capacity, docs/tuning.md).\nassignment:\n", f);
  for (int32_t i = 0; i < n; i++)
    if (runs[i].assigned)
      fprintf(f, "  - model: \"%s\"\n    device: \"%s\"\n", runs[i].model, runs[i].spec);
  fclose(f);
  return 1;
}

/* One trial as a JSON object; with bad >= 0 also its re-measurement counts. */
static void json_trial(FILE *f, const mi_trial_t *t, int32_t bad, int32_t failed) {
  int first = 1;
  fprintf(f, "{\"config_id\":\"%016llx\",\"ok\":%s,\"from_history\":%s", (unsigned long long)t->hash,
          t->status == MI_OK ? "true" : "false", t->from_history ? "true" : "false");
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

static void write_json(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n) {
  fputs("{\"recipe\":", f);
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
    fprintf(f, ",\"energy_modeled\":%s,\"assigned\":%s,\"pruned_variants\":%d,\"prepare_probes\":%d,\"verify\":%d,\"front\":[",
            run->energy_modeled ? "true" : "false", run->assigned ? "true" : "false", (int)run->pruned,
            (int)run->probes, (int)run->verify_n);
    for (int32_t k = 0; k < run->front_n; k++) {
      if (k) fputc(',', f);
      json_trial(f, &run->res->trials[run->front[k]], run->verify_n > 0 ? run->verify_bad[k] : -1,
                 run->verify_n > 0 ? run->verify_failed[k] : 0);
    }
    fputs("],\"trials\":[", f);
    for (int32_t k = 0; k < run->res->count; k++) {
      if (k) fputc(',', f);
      json_trial(f, &run->res->trials[k], -1, 0);
    }
    fputs("]}", f);
  }
  fputs("]}\n", f);
}

/* A scatter of every successful trial on the first two objectives (or latency against
 * measurement index when there is one), the front joined by a line, the choice circled. */
void mi_tune_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run) {
  const double W = 480, H = 320, M = 50;
  int32_t ox = r->objectives[0], oy = r->objective_count > 1 ? r->objectives[1] : -1;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
#define XV(t, i) (oy >= 0 ? (t)->objectives[ox] : (double)(i))
#define YV(t) (oy >= 0 ? (t)->objectives[oy] : (t)->objectives[ox])
  for (int32_t i = 0; i < run->res->count; i++) {
    const mi_trial_t *t = &run->res->trials[i];
    if (t->status != MI_OK || !isfinite(XV(t, i)) || !isfinite(YV(t))) continue;
    x0 = fmin(x0, XV(t, i)); x1 = fmax(x1, XV(t, i));
    y0 = fmin(y0, YV(t)); y1 = fmax(y1, YV(t));
  }
  if (!(x1 > x0)) { x1 = x0 + 1; x0 -= 1; }
  if (!(y1 > y0)) { y1 = y0 + 1; y0 -= 1; }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"front\" data-device=\"%s\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\"><title>%s on %s</title>\n", run->spec, W, H, W, H, run->model, run->spec);
  fprintf(f, "<rect x=\"%.0f\" y=\"10\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n", M, W - M - 10, H - M - 10);
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s (%.4g .. %.4g)</text>\n", M, H - 12,
          oy >= 0 ? mi_objective_name(ox, NULL) : "measurement", x0, x1);
  fprintf(f, "<text x=\"12\" y=\"%.0f\" font-size=\"12\" transform=\"rotate(-90 12 %.0f)\">%s (%.4g .. %.4g)</text>\n",
          H - M, H - M, mi_objective_name(oy >= 0 ? oy : ox, NULL), y0, y1);
#define PX(v) (M + ((v) - x0) / (x1 - x0) * (W - M - 20) + 5)
#define PY(v) (H - M - ((v) - y0) / (y1 - y0) * (H - M - 30) - 5)
  for (int32_t i = 0; i < run->res->count; i++) {
    const mi_trial_t *t = &run->res->trials[i];
    if (t->status != MI_OK || !isfinite(XV(t, i)) || !isfinite(YV(t))) continue;
    fprintf(f, "<circle class=\"trial\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#9ab\"/>\n", PX(XV(t, i)), PY(YV(t)));
  }
  if (oy >= 0 && run->front_n > 0) {
    fputs("<polyline class=\"pareto\" fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"", f);
    /* The front in the order of the first objective. */
    for (int32_t pass = 0, done = 0; done < run->front_n && pass < run->front_n; pass++) {
      int32_t best = -1;
      for (int32_t k = 0; k < run->front_n; k++) {
        const mi_trial_t *t = &run->res->trials[run->front[k]];
        int32_t rank = 0;
        for (int32_t q = 0; q < run->front_n; q++)
          rank += run->res->trials[run->front[q]].objectives[ox] < t->objectives[ox] ||
                  (run->res->trials[run->front[q]].objectives[ox] == t->objectives[ox] && q < k);
        if (rank == pass) best = k;
      }
      if (best >= 0) {
        const mi_trial_t *t = &run->res->trials[run->front[best]];
        fprintf(f, "%.1f,%.1f ", PX(t->objectives[ox]), PY(t->objectives[oy]));
        done++;
      }
    }
    fputs("\"/>\n", f);
  }
  if (run->front_n > 0) {
    int32_t c = run->front[0];
    const mi_trial_t *t = &run->res->trials[c];
    fprintf(f, "<circle class=\"chosen\" cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" stroke=\"#070\" stroke-width=\"2\"/>\n",
            PX(XV(t, c)), PY(YV(t)));
  }
  fputs("</svg>\n", f);
#undef XV
#undef YV
#undef PX
#undef PY
}

int mi_tune_write(const mi_recipe_t *r, const char *out, mi_tune_run_t *runs, int32_t n, int json) {
  char path[4200], name[256];
  FILE *f;
  if (!write_deployment(r, out, runs, n)) return MI_HOST_FAIL;
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
  else fprintf(stderr, "tune: wrote %s/deployment.yaml, pareto.json, report.html\n", out);
  return MI_HOST_OK;
}
