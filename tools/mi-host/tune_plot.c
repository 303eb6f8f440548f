/* tune_plot.c - the tuning report's SVG plots: the front of one (model, device) with axes, nice
 * ticks and units, log scale over decades, constraint bounds, feasible and infeasible trials by
 * shape and colour, the front as a staircase, the chosen and default configurations, a legend;
 * and best-so-far against trials used. Colours are Okabe-Ito (safe for colour blindness) and
 * every mark also differs by shape, so a greyscale print still reads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_report.h"

#define C_FEASIBLE "#0072B2"   /* blue */
#define C_INFEASIBLE "#D55E00" /* vermillion */
#define C_CHOSEN "#009E73"     /* bluish green */
#define C_DEFAULT "#E69F00"    /* orange */

/* One axis: an objective (-1: the trial number) in shown units, mapped to pixels p0..p1. */
typedef struct axis {
  int32_t o;
  int log;
  double lo, hi, p0, p1;
  double tick[24];
  int ticks, decimals;
} axis_t;

/* Fits the axis around [lo, hi] (shown units), with `bound` (NAN: none) inside when it is near
 * enough not to squash the data. Returns 1 when the bound is on the axis. */
static int axis_fit(axis_t *a, double lo, double hi, double bound) {
  int on = 0;
  if (!(hi >= lo)) {
    lo = 0;
    hi = 1;
  }
  if (isfinite(bound)) {
    double span = hi - lo > 0 ? hi - lo : fabs(hi) + 1;
    int near = lo > 0 && hi / lo >= 30 ? bound >= lo / 4 && bound <= hi * 4
                                       : bound >= lo - span && bound <= hi + span;
    if (near) {
      lo = fmin(lo, bound);
      hi = fmax(hi, bound);
      on = 1;
    }
  }
  a->ticks = 0;
  a->log = a->o >= 0 && lo > 0 && hi / lo >= 30;
  if (a->log) {
    double e0 = floor(log10(lo)), e1 = ceil(log10(hi));
    if (e1 - e0 > 20) e0 = e1 - 20;
    a->lo = pow(10, e0);
    a->hi = pow(10, e1);
    for (double e = e0; e <= e1 && a->ticks < 22; e++) {
      static const double mult[] = {1, 2, 5};
      for (int m = 0; m < (e1 - e0 <= 2 ? 3 : 1); m++) {
        double v = mult[m] * pow(10, e);
        if (v <= a->hi * 1.0001) a->tick[a->ticks++] = v;
      }
    }
    return on;
  }
  {
    double span = hi - lo, raw, mag, norm, step;
    if (!(span > 0)) span = fabs(lo) > 0 ? fabs(lo) * 0.2 : 1;
    /* a little room so no point sits on the frame, never below zero for a figure that cannot be */
    lo -= span * 0.04;
    hi += span * 0.04;
    if (lo < 0 && lo + span * 0.04 >= 0) lo = 0;
    raw = (hi - lo) / 5;
    mag = pow(10, floor(log10(raw)));
    norm = raw / mag;
    step = (norm < 1.5 ? 1 : norm < 3 ? 2
                         : norm < 7   ? 5
                                      : 10) *
           mag;
    if (a->o < 0 && step < 1) step = 1; /* trial numbers are whole */
    a->lo = floor(lo / step) * step;
    a->hi = ceil(hi / step) * step;
    if (!(a->hi > a->lo)) a->hi = a->lo + step;
    a->decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (double v = a->lo; v <= a->hi + step * 1e-6 && a->ticks < 22; v += step)
      a->tick[a->ticks++] = fabs(v) < step * 1e-9 ? 0 : v;
  }
  return on;
}

static double axis_px(const axis_t *a, double v) {
  double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
  return a->p0 + t * (a->p1 - a->p0);
}

static int axis_inside(const axis_t *a, double v) {
  return isfinite(v) && v >= a->lo * (1 - 1e-9) - 1e-12 && v <= a->hi * (1 + 1e-9) + 1e-12 && (!a->log || v > 0);
}

static void tick_text(FILE *f, const axis_t *a, double v) {
  if (a->log) fprintf(f, "%g", v);
  else
    fprintf(f, "%.*f", a->decimals, v);
}

/* "latency (ms, log scale)" */
static void axis_title(FILE *f, const axis_t *a, int modeled) {
  if (a->o < 0) {
    fputs("trial", f);
    return;
  }
  fprintf(f, "%s (%s%s%s)", mi__tune_label(a->o), mi__tune_unit(a->o),
          a->o == MI_OBJ_ENERGY && modeled ? ", modeled" : "", a->log ? ", log scale" : "");
}

/* One tick of either axis: its grid line across the plot (x1 y1 x2 y2), its mark on the axis,
 * and its label at (lx, ly). */
static void tick(FILE *f, const axis_t *a, double v, const double grid[4], const double mark[4],
                 double lx, double ly) {
  fprintf(f,
          "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
          "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>"
          "<text class=\"tick-label\" x=\"%.1f\" y=\"%.1f\">",
          grid[0], grid[1], grid[2], grid[3], mark[0], mark[1], mark[2], mark[3], lx, ly);
  tick_text(f, a, v);
  fputs("</text>\n", f);
}

/* Frame, grid, ticks with labels and the two axis titles of a plot area. */
static void axes(FILE *f, const axis_t *x, const axis_t *y, const char *xtitle, int modeled) {
  fprintf(f, "<rect class=\"plot-area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" stroke=\"#444\"/>\n",
          x->p0, y->p1, x->p1 - x->p0, y->p0 - y->p1);
  fputs("<g class=\"axis x\" font-size=\"11\" text-anchor=\"middle\">\n", f);
  for (int i = 0; i < x->ticks; i++) {
    double px = axis_px(x, x->tick[i]);
    tick(f, x, x->tick[i], (const double[4]){px, y->p1, px, y->p0},
         (const double[4]){px, y->p0, px, y->p0 + 5}, px, y->p0 + 17);
  }
  fprintf(f, "</g>\n<text class=\"axis-label x\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">",
          (x->p0 + x->p1) / 2, y->p0 + 36);
  if (xtitle) mi__tune_esc(f, xtitle);
  else
    axis_title(f, x, modeled);
  fputs("</text>\n<g class=\"axis y\" font-size=\"11\" text-anchor=\"end\">\n", f);
  for (int i = 0; i < y->ticks; i++) {
    double py = axis_px(y, y->tick[i]);
    tick(f, y, y->tick[i], (const double[4]){x->p0, py, x->p1, py},
         (const double[4]){x->p0 - 5, py, x->p0, py}, x->p0 - 8, py + 4);
  }
  fprintf(f,
          "</g>\n<text class=\"axis-label y\" x=\"16\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 16 %.1f)\">",
          (y->p0 + y->p1) / 2, (y->p0 + y->p1) / 2);
  axis_title(f, y, modeled);
  fputs("</text>\n", f);
}

/* The tooltip of trial i: number, configuration id, every figure, feasibility. */
static void trial_title(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, const mi_tune_facts_t *fa, int32_t i) {
  const mi_trial_t *t = &run->res->trials[i];
  fprintf(f, "<title>trial %d, config %016llx%s", (int)i + 1, (unsigned long long)t->hash,
          t->from_history ? " (from the history)" : "");
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (isfinite(t->objectives[k])) {
      fprintf(f, "\n%s: ", mi__tune_label(k));
      mi__tune_value(f, k, t->objectives[k]);
    }
  if (fa->feasible[i]) fputs("\nfeasible", f);
  else
    for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
      if (MI_TUNE_VIOLATES(fa->violated[i], k)) {
        fprintf(f, "\nbreaks %s &#8804; ", mi__tune_label(k));
        mi__tune_value(f, k, r->bound[k]);
      }
  if (i == fa->def) fputs("\nthe default configuration", f);
  fputs("</title>", f);
}

static void mark_feasible(FILE *f, double x, double y, double size) {
  fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"" C_FEASIBLE "\" stroke=\"#fff\" stroke-width=\"0.8\"", x, y, size);
}

static void mark_infeasible(FILE *f, double x, double y, double s) {
  fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" fill=\"none\" stroke=\"" C_INFEASIBLE "\" stroke-width=\"2.2\"",
          x - s, y - s, x + s, y + s, x - s, y + s, x + s, y - s);
}

static void mark_default(FILE *f, double x, double y, double s) {
  fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"none\" stroke=\"" C_DEFAULT "\" stroke-width=\"2.5\"",
          x, y - s, x + s, y, x, y + s, x - s, y);
}

static double xval(const mi_tune_facts_t *fa, const mi_trial_t *t, int32_t i) {
  return fa->x >= 0 ? mi__tune_shown(fa->x, t->objectives[fa->x]) : i + 1;
}

static double yval(const mi_tune_facts_t *fa, const mi_trial_t *t) { return mi__tune_shown(fa->y, t->objectives[fa->y]); }

static int plotted(const mi_tune_facts_t *fa, const mi_trial_t *t, int32_t i, const axis_t *x, const axis_t *y) {
  return t->status == MI_OK && axis_inside(x, xval(fa, t, i)) && axis_inside(y, yval(fa, t));
}

/* A bound on a plotted axis: the broken side shaded, the bound dashed and labelled. */
static void bound_mark(FILE *f, const mi_recipe_t *r, int32_t o, const axis_t *a, const axis_t *other, int vertical) {
  double p = axis_px(a, mi__tune_shown(o, r->bound[o]));
  double end = a->p1;
  if (vertical)
    fprintf(f, "<rect class=\"bound-region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#000\" fill-opacity=\"0.07\"/>\n",
            p, other->p1, end - p, other->p0 - other->p1);
  else
    fprintf(f, "<rect class=\"bound-region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#000\" fill-opacity=\"0.07\"/>\n",
            other->p0, end, other->p1 - other->p0, p - end);
  fprintf(f, "<line class=\"bound\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
          vertical ? p : other->p0, vertical ? other->p0 : p, vertical ? p : other->p1, vertical ? other->p1 : p);
  fprintf(f, "<text class=\"bound-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#333\" text-anchor=\"end\">%s &#8804; ",
          vertical ? p - 4 : other->p1 - 4, vertical ? other->p1 + 12 : p - 4, mi__tune_label(o));
  mi__tune_value(f, o, r->bound[o]);
  fputs("</text>\n", f);
}

/* Legend entries from (x, y) down, 18 px apart. */
static double legend_entry(FILE *f, double x, double y, const char *kind, const char *text, int count) {
  fprintf(f, "<g class=\"legend-entry %s\">", kind);
  if (!strcmp(kind, "feasible")) {
    mark_feasible(f, x + 8, y, 4.5);
    fputs("/>", f);
  } else if (!strcmp(kind, "infeasible")) {
    mark_infeasible(f, x + 8, y, 4);
    fputs("/>", f);
  } else if (!strcmp(kind, "front"))
    fprintf(f, "<path d=\"M%.1f %.1fH%.1fV%.1fH%.1f\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.8\"/>", x, y - 5, x + 8, y + 5, x + 16);
  else if (!strcmp(kind, "chosen"))
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" stroke=\"" C_CHOSEN "\" stroke-width=\"3\"/>", x + 8, y);
  else if (!strcmp(kind, "default")) {
    mark_default(f, x + 8, y, 6);
    fputs("/>", f);
  } else if (!strcmp(kind, "bound"))
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"12\" fill=\"#000\" fill-opacity=\"0.07\"/>"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>",
            x + 8, y - 6, x + 8, y - 7, x + 8, y + 7);
  else if (!strcmp(kind, "best"))
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-width=\"2\"/>", x, y, x + 16, y);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + 22, y + 4);
  mi__tune_esc(f, text);
  if (count >= 0) fprintf(f, " (%d)", count);
  fputs("</text></g>\n", f);
  return y + 18;
}

/* Range of the shown values on objective o (-1: the trial number) of the successful trials that
 * also have a figure for `other` (-1: any). */
static void range(const mi_tune_run_t *run, int32_t o, int32_t other, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int32_t i = 0; i < run->res->count; i++) {
    const mi_trial_t *t = &run->res->trials[i];
    double v = o >= 0 ? mi__tune_shown(o, t->objectives[o]) : i + 1;
    if (t->status != MI_OK || !isfinite(v)) continue;
    if (other >= 0 && !isfinite(t->objectives[other])) continue;
    *lo = fmin(*lo, v);
    *hi = fmax(*hi, v);
  }
}

/* Says where a bound that is not drawn lies. */
static double bound_note(FILE *f, const mi_recipe_t *r, int32_t o, const axis_t *a, double x, double y) {
  double b = mi__tune_shown(o, r->bound[o]);
  fprintf(f, "<text class=\"bound-note\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#333\">%s &#8804; ", x, y, mi__tune_label(o));
  mi__tune_value(f, o, r->bound[o]);
  fprintf(f, ": %s</text>\n", b > a->hi ? "off the plot, every trial meets it" : "off the plot, every trial breaks it");
  return y + 14;
}

void mi__tune_front_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, const mi_tune_facts_t *fa) {
  const double W = 740, H = 400;
  axis_t x = {.o = fa->x, .p0 = 74, .p1 = 460}, y = {.o = fa->y, .p0 = H - 60, .p1 = 52};
  double lo, hi, ly = 60;
  int xb = 0, yb = 0, chosen = run->front_n > 0 ? run->front[0] : -1, drawn[2] = {0, 0};
  if (fa->y < 0) return;
  range(run, fa->x, fa->y, &lo, &hi);
  xb = axis_fit(&x, lo, hi, fa->x >= 0 && r->has_bound[fa->x] ? mi__tune_shown(fa->x, r->bound[fa->x]) : NAN);
  range(run, fa->y, fa->x, &lo, &hi);
  yb = axis_fit(&y, lo, hi, r->has_bound[fa->y] ? mi__tune_shown(fa->y, r->bound[fa->y]) : NAN);
  fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"front\"", f);
  mi__tune_esc_data(f, run);
  fprintf(f, " width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" role=\"img\">\n<title>", W, H, W, H);
  mi__tune_esc_title(f, run);
  fputs(": trials and Pareto front</title>\n<text class=\"plot-title\" x=\"74\" y=\"18\" font-size=\"14\" font-weight=\"bold\">", f);
  mi__tune_esc_title(f, run);
  fputs("</text>\n", f);
  if (fa->substituted) {
    int32_t first = -1;
    fputs("<text class=\"missing\" x=\"74\" y=\"36\" font-size=\"11\" fill=\"#000\">No ", f);
    for (int32_t j = 0; j < r->objective_count; j++)
      if (!fa->has[r->objectives[j]]) {
        fprintf(f, "%s%s", first < 0 ? "" : " or ", mi__tune_label(r->objectives[j]));
        if (first < 0) first = r->objectives[j];
      }
    fprintf(f, " figure here (%s): %s plotted instead</text>\n", mi__tune_why_missing(first), mi__tune_label(fa->y));
  }
  axes(f, &x, &y, NULL, run->energy_modeled);
  if (xb) bound_mark(f, r, fa->x, &x, &y, 1);
  if (yb) bound_mark(f, r, fa->y, &y, &x, 0);
  fputs("<g class=\"trials\">\n", f);
  for (int32_t i = 0; i < run->res->count; i++) {
    const mi_trial_t *t = &run->res->trials[i];
    if (!plotted(fa, t, i, &x, &y)) continue;
    fprintf(f, "<g class=\"trial %s\" data-trial=\"%d\">", fa->feasible[i] ? "feasible" : "infeasible", (int)i + 1);
    if (fa->feasible[i]) mark_feasible(f, axis_px(&x, xval(fa, t, i)), axis_px(&y, yval(fa, t)), 4.5);
    else
      mark_infeasible(f, axis_px(&x, xval(fa, t, i)), axis_px(&y, yval(fa, t)), 4);
    fputs(">", f);
    trial_title(f, r, run, fa, i);
    fputs(fa->feasible[i] ? "</circle></g>\n" : "</path></g>\n", f);
  }
  fputs("</g>\n", f);
  if (fa->step && run->front_n > 0) {
    /* The attainment staircase of two minimised objectives: sorted by x, each point's level
     * holds until the next point; from the top edge to the first, the last to the right edge. */
    int32_t *ord = malloc((size_t)run->front_n * sizeof *ord), m = 0;
    if (ord) {
      for (int32_t k = 0; k < run->front_n; k++) {
        const mi_trial_t *t = &run->res->trials[run->front[k]];
        int32_t j = m++;
        if (!plotted(fa, t, run->front[k], &x, &y)) {
          m--;
          continue;
        }
        for (; j > 0 && xval(fa, &run->res->trials[ord[j - 1]], ord[j - 1]) > xval(fa, t, run->front[k]); j--) ord[j] = ord[j - 1];
        ord[j] = run->front[k];
      }
      if (m > 0) {
        fputs("<path class=\"front-step\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.8\" d=\"", f);
        for (int32_t k = 0; k < m; k++) {
          const mi_trial_t *t = &run->res->trials[ord[k]];
          double px = axis_px(&x, xval(fa, t, ord[k])), py = axis_px(&y, yval(fa, t));
          if (k == 0) fprintf(f, "M%.1f %.1fV%.1f", px, y.p1, py);
          else
            fprintf(f, "H%.1fV%.1f", px, py);
        }
        fprintf(f, "H%.1f\"><title>Pareto front: %d configuration(s)</title></path>\n", x.p1, (int)m);
      }
      free(ord);
    }
  }
  /* the default first, so the chosen ring stays on top when they are one */
  if (fa->def >= 0 && plotted(fa, &run->res->trials[fa->def], fa->def, &x, &y)) {
    const mi_trial_t *t = &run->res->trials[fa->def];
    double px = axis_px(&x, xval(fa, t, fa->def)), py = axis_px(&y, yval(fa, t));
    fputs("<g class=\"marker default\">", f);
    mark_default(f, px, py, 8);
    fputs(">", f);
    trial_title(f, r, run, fa, fa->def);
    /* below left, the chosen label goes above right: apart when the two points are close */
    fprintf(f, "</path><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"end\">%s</text></g>\n",
            px - 9, py + 17 > y.p0 - 4 ? py - 9 : py + 17, fa->def == chosen ? "" : "default");
    drawn[1] = 1;
  }
  if (chosen >= 0 && plotted(fa, &run->res->trials[chosen], chosen, &x, &y)) {
    const mi_trial_t *t = &run->res->trials[chosen];
    double px = axis_px(&x, xval(fa, t, chosen)), py = axis_px(&y, yval(fa, t));
    fprintf(f, "<g class=\"marker chosen\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"9\" fill=\"none\" stroke=\"" C_CHOSEN "\" stroke-width=\"3\">",
            px, py);
    trial_title(f, r, run, fa, chosen);
    fprintf(f, "</circle><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\">%s</text></g>\n", px + 11,
            py - 9 < y.p1 + 12 ? py + 20 : py - 9,
            chosen == fa->def ? "chosen = default" : "chosen");
    drawn[0] = 1;
  }
  fputs("<g class=\"legend\">\n", f);
  ly = legend_entry(f, 476, ly, "feasible", "feasible trial", fa->ok - fa->infeasible);
  ly = legend_entry(f, 476, ly, "infeasible", "infeasible trial", fa->infeasible);
  if (fa->step) ly = legend_entry(f, 476, ly, "front", "Pareto front", -1);
  if (drawn[0]) ly = legend_entry(f, 476, ly, "chosen", "chosen", -1);
  else
    ly = legend_entry(f, 476, ly, "none", run->front_n ? "chosen: off the plot" : "nothing chosen", -1);
  if (drawn[1]) ly = legend_entry(f, 476, ly, "default", "default configuration", -1);
  else
    ly = legend_entry(f, 476, ly, "none", fa->def >= 0 ? "default: off the plot" : "default not measured", -1);
  if (xb || yb) ly = legend_entry(f, 476, ly, "bound", "bound, broken side shaded", -1);
  if (fa->failed) ly = legend_entry(f, 476, ly, "none", "failed, not plotted", fa->failed);
  ly += 4;
  if (fa->x >= 0 && r->has_bound[fa->x] && !xb) ly = bound_note(f, r, fa->x, &x, 476, ly);
  if (r->has_bound[fa->y] && !yb) ly = bound_note(f, r, fa->y, &y, 476, ly);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (r->has_bound[k] && k != fa->x && k != fa->y) {
      fprintf(f, "<text class=\"bound-note\" x=\"476\" y=\"%.1f\" font-size=\"10\" fill=\"#333\">%s &#8804; ", ly, mi__tune_label(k));
      mi__tune_value(f, k, r->bound[k]);
      fputs(" (not an axis)</text>\n", f);
      ly += 14;
    }
  fputs("</g>\n</svg>\n", f);
}

void mi__tune_progress_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, const mi_tune_facts_t *fa) {
  const double W = 740, H = 270;
  int32_t o = fa->x >= 0 ? fa->x : fa->y, n = run->res->count;
  axis_t x = {.o = -1, .p0 = 74, .p1 = 460}, y = {.o = o, .p0 = H - 60, .p1 = 16};
  double lo = INFINITY, hi = -INFINITY, best = INFINITY, ly = 30;
  int started = 0;
  if (o < 0 || n == 0) return;
  for (int32_t i = 0; i < n; i++) {
    double v = mi__tune_shown(o, run->res->trials[i].objectives[o]);
    if (run->res->trials[i].status == MI_OK && isfinite(v)) {
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
  }
  axis_fit(&x, 1, n, NAN);
  axis_fit(&y, lo, hi, NAN);
  fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"progress\" data-device=\"", f);
  mi__tune_esc(f, run->spec);
  fprintf(f, "\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" role=\"img\">\n<title>", W, H, W, H);
  mi__tune_esc_title(f, run);
  fprintf(f, ": best feasible %s against trials used</title>\n", mi__tune_label(o));
  axes(f, &x, &y, run->res->replayed ? "trials used (measured or from the history, in order)" : "measurements used",
       run->energy_modeled);
  fputs("<g class=\"trials\">\n", f);
  for (int32_t i = 0; i < n; i++) {
    const mi_trial_t *t = &run->res->trials[i];
    double v = mi__tune_shown(o, t->objectives[o]);
    if (t->status != MI_OK || !axis_inside(&y, v)) continue;
    fprintf(f, "<g class=\"trial %s\" data-trial=\"%d\" opacity=\"0.55\">", fa->feasible[i] ? "feasible" : "infeasible", (int)i + 1);
    if (fa->feasible[i]) mark_feasible(f, axis_px(&x, i + 1), axis_px(&y, v), 3.5);
    else
      mark_infeasible(f, axis_px(&x, i + 1), axis_px(&y, v), 3);
    fputs(">", f);
    trial_title(f, r, run, fa, i);
    fputs(fa->feasible[i] ? "</circle></g>\n" : "</path></g>\n", f);
  }
  fputs("</g>\n<path class=\"best-so-far\" fill=\"none\" stroke=\"#000\" stroke-width=\"2\" d=\"", f);
  for (int32_t i = 0; i < n; i++) {
    const mi_trial_t *t = &run->res->trials[i];
    double v = mi__tune_shown(o, t->objectives[o]);
    if (fa->feasible[i] && isfinite(v) && v < best) {
      best = v;
      if (started) fprintf(f, "H%.1fV%.1f", axis_px(&x, i + 1), axis_px(&y, best));
      else
        fprintf(f, "M%.1f %.1f", axis_px(&x, i + 1), axis_px(&y, best));
      started = 1;
    }
  }
  if (started) fprintf(f, "H%.1f", axis_px(&x, n));
  else
    fprintf(f, "M%.1f %.1f", x.p0, y.p0); /* no feasible trial: an empty path */
  fputs("\"/>\n<g class=\"legend\">\n", f);
  ly = legend_entry(f, 476, ly, "best", started ? "best feasible so far" : "no feasible trial", -1);
  ly = legend_entry(f, 476, ly, "feasible", "feasible trial", fa->ok - fa->infeasible);
  ly = legend_entry(f, 476, ly, "infeasible", "infeasible trial", fa->infeasible);
  if (fa->failed) legend_entry(f, 476, ly, "none", "failed, not plotted", fa->failed);
  fputs("</g>\n</svg>\n", f);
}

/* The stand-alone pareto-N-DEVICE.svg and the front in report.html are the same drawing. */
void mi_tune_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run) {
  mi_tune_facts_t fa;
  if (!run->res || !mi__tune_facts(r, run, &fa)) return;
  mi__tune_front_svg(f, r, run, &fa);
  mi__tune_facts_free(&fa);
}
