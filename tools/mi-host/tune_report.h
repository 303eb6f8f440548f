/* tune_report.h - what report.html's files share: the one escaping writer for HTML and SVG text,
 * the facts of one run the page, the plots and pareto.json read (feasibility per trial, which
 * objectives have figures on the device, the default configuration), units, and the plots. */
#ifndef MI_HOST_TUNE_REPORT_H
#define MI_HOST_TUNE_REPORT_H

#include "tune.h"

/** Writes `s` as XML/HTML text or attribute value: & < > " ' escaped, control characters and
 * bytes that are not UTF-8 replaced by U+FFFD, so every SVG stays well-formed XML. NULL: nothing. */
void mi__tune_esc(FILE *f, const char *s);
/** Writes "MODEL on DEVICE" of a run, escaped: the heading of its section and of its plots. */
void mi__tune_esc_title(FILE *f, const mi_tune_run_t *run);
/** Writes ` data-device="DEVICE" data-model="MODEL"`, escaped: the attributes report.html's
 * script selects a run's section and plots by. */
void mi__tune_esc_data(FILE *f, const mi_tune_run_t *run);

/** Bit k of a violation mask: the bound on objective k is broken, or it has no figure. */
#define MI_TUNE_VIOLATES(mask, k) (((mask) >> (k)) & 1u)

/** 1 when `t` succeeded and meets every bound of the recipe; *violated (may be NULL) gets the
 * bits of the bounds it breaks, a bounded objective without a figure counting as broken (as the
 * search counts it). A failed trial is infeasible with no bits set. */
int mi__tune_feasible(const mi_recipe_t *r, const mi_trial_t *t, uint32_t *violated);

/** What the report says about one successful run. */
typedef struct mi_tune_facts {
  int32_t count;         /* trials */
  uint8_t *feasible;     /* per trial */
  uint32_t *violated;    /* per trial, bits as mi__tune_feasible */
  int has[MI_OBJ_COUNT]; /* 1: some successful trial has a figure for objective k */
  int32_t x, y;          /* plotted objectives; x = -1: y against the trial number */
  int substituted;       /* 1: a recipe objective had no figure, another one is plotted */
  int step;              /* 1: the plot's axes are the front's objectives: draw its steps */
  int32_t def;           /* trial that is the default configuration; -1: not measured */
  int32_t ok, failed, infeasible;
} mi_tune_facts_t;

/** Fills `f` for a run that has results; 0 when out of memory. Free with mi__tune_facts_free. */
int mi__tune_facts(const mi_recipe_t *r, const mi_tune_run_t *run, mi_tune_facts_t *f);
void mi__tune_facts_free(mi_tune_facts_t *f);

/** "latency", "peak memory", "energy per inference", "accuracy drop". */
const char *mi__tune_label(int32_t o);
/** "ms", "MiB", "mJ", "%". */
const char *mi__tune_unit(int32_t o);
/** A figure as it is shown: accuracy drop as a percentage, the others as measured. */
double mi__tune_shown(int32_t o, double v);
/** Writes a figure with its unit ("0.123 ms", "5.3 %"), "-" when it has none. */
void mi__tune_value(FILE *f, int32_t o, double v);
/** Why objective `o` has no figure on a device, as a phrase. */
const char *mi__tune_why_missing(int32_t o);

/** The front plot (tune_plot.c): trials, bounds, front, chosen and default, legend. */
void mi__tune_front_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, const mi_tune_facts_t *fa);
/** Best feasible value of the first plotted objective against trials used. */
void mi__tune_progress_svg(FILE *f, const mi_recipe_t *r, const mi_tune_run_t *run, const mi_tune_facts_t *fa);

/** The chosen configuration grouped: model-side, device-level, per-layer (tune_layers.c). */
void mi__tune_config_html(FILE *f, const mi_tune_run_t *run, const mi_trial_t *t);

/** One line on `f` per run and objective of the recipe that has no figure on the device, saying
 * what the report plots instead. */
void mi__tune_notes(FILE *f, const mi_recipe_t *r, mi_tune_run_t *runs, int32_t n);

#endif
