/* strategy.c - the surrogate-guided search: warm start, cold design, then rounds of fit,
 * screen, measure a batch, record prediction errors, adapt the trust region. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "meta/meta_internal.h"
#include "space/space.h"

void mi_meta_options_default(mi_meta_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_sources = 4;
  o->warm_points = 4;
  o->init_points = 10; /* measured: docs/meta.md, "The cold design's size" */
  o->batch = 8;
  o->screen = 100000;
  o->kappa = 2.0; /* measured: docs/meta.md, "Why ours cold was slow" */
  o->learner = MI_SURROGATE_AUTO;
  o->primary_share = 0.5;
  o->explore_share = 0.125; /* measured: docs/meta.md, "Exploration in the batch" */
  o->device_moves = 4;
}

int mi__meta_has_budget(mi__meta_t *st) {
  /* Replayed trials count: a resumed run ends where the uninterrupted one would have. */
  if (st->r->measured + st->r->replayed >= st->budget) return 0;
  if (st->so->max_seconds > 0 && mi__now_s() - st->t0 >= st->so->max_seconds) return 0;
  return 1;
}

int32_t mi__meta_fix(mi__meta_t *st, int32_t *pt) {
  if (st->mo.frozen) {
    int32_t *def = malloc((size_t)st->D * sizeof *def + 1);
    if (!def) return MI_ERR_OUT_OF_MEMORY;
    if (st->mo.fixed) memcpy(def, st->mo.fixed, (size_t)st->D * sizeof *def);
    else
      mi_space_default(st->s, def);
    for (int32_t d = 0; d < st->D; d++)
      if (st->mo.frozen[d]) pt[d] = def[d];
    free(def);
  }
  return mi_space_repair(st->s, pt, NULL, NULL);
}

int32_t mi__meta_eval(mi__meta_t *st, const int32_t *pt, int *fresh) {
  int32_t i = mi__trial_eval(st->s, st->so, st->r, &st->cap, pt, fresh);
  if (i >= 0 && *fresh) mi__meta_layer_fetch(st, i); /* per-layer times, when the evaluator has them */
  if (i >= 0 && *fresh && st->so->progress)
    st->so->progress(st->so->progress_ctx, &st->r->trials[i], st->r->measured, st->budget,
                     mi__now_s() - st->t0);
  return i;
}

/* The best trial on the first objective among those that meet the bounds, else among all (-1:
 * none has a finite value): the trust region's centre. A fastest point over the accuracy bound
 * (mlsd_tiny_320: 25% pruning at 29 ms, drop 0.90) made the region a place the accuracy screen
 * rejects wholesale. */
static int32_t best_trial(const mi__meta_t *st) {
  int32_t b = -1, bf = -1;
  double bv = INFINITY, bfv = INFINITY;
  for (int32_t i = 0; i < st->r->count; i++) {
    double v = mi__meta_logobj(st, &st->r->trials[i], 0), viol = 0;
    if (!isfinite(v)) continue;
    if (v < bv) {
      bv = v;
      b = i;
    }
    if (st->so->bound_count > 0)
      mi_pareto_violation(st->r->trials[i].objectives, 1, MI_OBJ_COUNT, st->so->bounds, st->so->bound_count, &viol);
    if (viol == 0 && v < bfv) {
      bfv = v;
      bf = i;
    }
  }
  return bf >= 0 ? bf : b;
}

/* The next warm-start candidate: each source's best points (first objective) mapped onto
 * this space, taken round-robin from the nearest source on (next[k]: points taken from source
 * k; *cursor: the source whose turn it is). Returns 1 with pt filled, 0 when none is left. */
static int next_warm(mi__meta_t *st, int32_t *next, int32_t *cursor, int32_t *pt) {
  for (int32_t turn = 0; turn < st->source_count; turn++) {
    int32_t k = (*cursor + turn) % st->source_count;
    const mi_meta_task_t *t = &st->mo.sources[st->src[k].task];
    int32_t sd = mi_space_dim_count(t->space), pick = -1;
    double pv = INFINITY;
    /* The next-best source point not yet taken from this source. */
    for (int32_t p = 0; p < t->count; p++) {
      double v = t->objectives[(size_t)p * MI_OBJ_COUNT + st->so->objectives[0]];
      int32_t rank = 0;
      if (!isfinite(v)) continue;
      for (int32_t q = 0; q < t->count; q++) {
        double u = t->objectives[(size_t)q * MI_OBJ_COUNT + st->so->objectives[0]];
        if (isfinite(u) && (u < v || (u == v && q < p))) rank++;
      }
      if (rank == next[k] && v < pv) {
        pv = v;
        pick = p;
      }
    }
    if (pick < 0) continue;
    next[k]++;
    *cursor = (k + 1) % st->source_count;
    if (mi_meta_map_point(t->space, t->graph, t->points + (size_t)pick * sd, st->s, st->mo.graph, pt, NULL) != MI_OK ||
        mi__meta_fix(st, pt) != MI_OK)
      return next_warm(st, next, cursor, pt); /* unmappable: the next one (next[] advanced) */
    return 1;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The check of the priors against measurements: the best warm-start point so far must be at
 * least as good (first objective) as the median of the cold design's points so far. A
 * misleading history offers its "best" configurations, which then measure badly here. */
static int warm_trusted(const mi__meta_t *st, const int32_t *warm_trials, int32_t nw,
                        const int32_t *cold_trials, int32_t nc) {
  double bw = INFINITY, v[64];
  int32_t c = 0;
  for (int32_t i = 0; i < nw; i++) {
    double x = mi__meta_logobj(st, &st->r->trials[warm_trials[i]], 0);
    if (isfinite(x) && x < bw) bw = x;
  }
  for (int32_t i = 0; i < nc && c < 64; i++) {
    double x = mi__meta_logobj(st, &st->r->trials[cold_trials[i]], 0);
    if (isfinite(x)) v[c++] = x;
  }
  if (nw == 0 || c == 0) return nw > 0 ? 1 : 0; /* nothing to compare against yet */
  qsort(v, (size_t)c, sizeof *v, cmp_double);
  return bw <= (c % 2 ? v[c / 2] : 0.5 * (v[c / 2 - 1] + v[c / 2]));
}

/* Measures one fresh point of the cold design (a one-factor move, else the space's sampler,
 * repaired): 1 when one was measured (its trial in *idx), 0 when 200 draws in all found no new
 * one, -1 when out of memory. */
static int design_point(mi__meta_t *st, int32_t *pt, int32_t *idx) {
  int32_t i;
  int fresh;
  while (st->design_tries < 200) {
    st->design_tries++;
    /* One-factor moves first (strategy_design.c), then uniform random points. */
    if (!mi__meta_design_move(st, pt) &&
        (mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK || mi__meta_fix(st, pt) != MI_OK))
      continue;
    if ((i = mi__meta_eval(st, pt, &fresh)) < 0) return -1;
    if (fresh) {
      st->design_count++;
      *idx = i;
      return 1;
    }
  }
  return 0;
}

/* Warm start and cold design together. The default point is measured first, then the nearest
 * source's best configuration (with a faithful history it is often the answer), then the
 * cold design's random points interleaved with further warm-start points, which are measured
 * only while the warm points so far pass warm_trusted. The cold design keeps its full size, so
 * a misleading history costs the one or two warm points it got before it was caught.
 * *trusted: 1 when the priors passed the check at the end, 0 when not (or no sources). */
static int32_t warm_and_design(mi__meta_t *st, int32_t init, int32_t *pt, int *trusted, mi_error_t *err) {
  int32_t want = st->source_count > 0 ? st->mo.warm_points : 0, nw = 0, nc = 0, cursor = 0;
  int32_t wt[64], ct[64], i;
  int fresh, warm_left = want > 0, dflt = 0;
  int32_t *next = calloc((size_t)st->source_count + 1, sizeof *next);
  if (!next) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
  if (want > 64) want = 64;
  if (init > 64) init = 64;
  *trusted = 0;
  /* The default point is measured first, before any warm point: it is what mi-run does without
   * a configuration, the baseline the deployed choice must beat (issue 21). */
  if (init > 0 && mi__meta_has_budget(st)) {
    dflt = 1;
    mi_space_default(st->s, pt);
    /* With fixed values (layer tasks' best kernels) the plain default is still the baseline:
     * measured as it is, then with the fixed values. */
    if ((st->mo.fixed ? mi_space_repair(st->s, pt, NULL, NULL) : mi__meta_fix(st, pt)) == MI_OK) {
      if ((i = mi__meta_eval(st, pt, &fresh)) < 0) goto oom;
      if (fresh) ct[nc++] = i;
    }
    mi_space_default(st->s, pt);
    if (st->mo.fixed && mi__meta_has_budget(st) && mi__meta_fix(st, pt) == MI_OK) {
      if ((i = mi__meta_eval(st, pt, &fresh)) < 0) goto oom;
      if (fresh) ct[nc++] = i;
    }
  }
  while (mi__meta_has_budget(st)) {
    int did = 0, ok = nw > 0 && warm_trusted(st, wt, nw, ct, nc);
    /* Priors that passed the check leave room for a smaller cold design (3 points). */
    int32_t design = ok && init > 3 ? 3 : init;
    if (warm_left) {
      /* A warm point: the first always, later ones only while the priors hold up. */
      if (nw >= want || (nw > 0 && !ok)) {
        warm_left = 0;
      } else if (!next_warm(st, next, &cursor, pt)) {
        warm_left = 0;
      } else {
        if ((i = mi__meta_eval(st, pt, &fresh)) < 0) goto oom;
        if (fresh) wt[nw++] = i;
        did = 1;
      }
    }
    if (nc < design && mi__meta_has_budget(st)) {
      if (!dflt) {
        /* The default point opens the cold design. */
        dflt = 1;
        did = 1;
        mi_space_default(st->s, pt);
        if (mi__meta_fix(st, pt) == MI_OK) {
          if ((i = mi__meta_eval(st, pt, &fresh)) < 0) goto oom;
          if (fresh) ct[nc++] = i;
        }
      } else {
        int got = design_point(st, pt, &i);
        if (got < 0) goto oom;
        if (got) {
          ct[nc++] = i;
          did = 1;
        }
      }
    }
    if (!did) break;
  }
  *trusted = nw > 0 && warm_trusted(st, wt, nw, ct, nc);
  if (nw > 0 && !*trusted) {
    /* Caught misleading: the sources are dropped now (cold fallback), and their warm points
     * are left out of the target model, so what follows is exactly the cold search (same data,
     * same random draws), later by the warm points measured. */
    st->sources_off = 1;
    for (int32_t k = 0; k < nw && st->excluded_count < 64; k++) st->excluded[st->excluded_count++] = wt[k];
    if (st->mo.report) st->mo.report->cold_fallback = 1;
  }
  free(next);
  if (st->mo.report) {
    st->mo.report->warm_points = nw;
    st->mo.report->warm_trusted = *trusted;
  }
  return MI_OK;
oom:
  free(next);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
}

int32_t mi__meta_warm_design(mi__meta_t *st, int32_t init, int32_t *pt, int *trusted, mi_error_t *err) {
  return warm_and_design(st, init, pt, trusted, err);
}

int32_t mi__meta_design_complete(mi__meta_t *st, int32_t init, int32_t *pt, mi_error_t *err) {
  /* The default point counts as the design's first (warm_and_design always measures it). */
  int32_t i;
  while (st->design_count + 1 < init && mi__meta_has_budget(st)) {
    int got = design_point(st, pt, &i);
    if (got < 0) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta: out of memory");
    if (!got) break;
  }
  return MI_OK;
}
int32_t mi__meta_best(const mi__meta_t *st) { return best_trial(st); }

int mi__meta_excluded(const mi__meta_t *st, int32_t i) {
  for (int32_t k = 0; k < st->excluded_count; k++)
    if (st->excluded[k] == i) return 1;
  return 0;
}
