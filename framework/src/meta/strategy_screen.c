/* strategy_screen.c - screening on the surrogate: an evolutionary search over the space's own
 * operators inside the trust region, then a batch by UCB on random scalarisations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_internal.h"

enum { POP = 128,
       ARCHIVE = 4096,
       PER_GEN = 6 };

typedef struct {
  int32_t *pts; /* n x D */
  uint64_t *hash;
  double *mu, *sd; /* n x m */
  int32_t n;
} pool_t;

static int pool_init(pool_t *p, int32_t cap, int32_t D, int32_t m) {
  p->pts = malloc((size_t)cap * D * sizeof *p->pts);
  p->hash = malloc((size_t)cap * sizeof *p->hash);
  p->mu = malloc((size_t)cap * m * sizeof *p->mu);
  p->sd = malloc((size_t)cap * m * sizeof *p->sd);
  p->n = 0;
  return p->pts && p->hash && p->mu && p->sd ? 0 : -1;
}

static void pool_free(pool_t *p) {
  free(p->pts);
  free(p->hash);
  free(p->mu);
  free(p->sd);
}

static int measured(const mi__meta_t *st, uint64_t h) {
  for (int32_t i = 0; i < st->r->count; i++)
    if (st->r->trials[i].hash == h) return 1;
  return 0;
}

/* Chebyshev scalarisation of the lower confidence bounds, plus a small sum so ties break
 * toward points better everywhere. Lower is better. */
static double score(const mi__meta_t *st, const double *lam, const double *mu, const double *sd,
                    const double *ideal) {
  double mx = -INFINITY, sum = 0;
  for (int32_t j = 0; j < st->m; j++) {
    double v = lam[j] * (mu[j] - st->mo.kappa * sd[j] - ideal[j]);
    if (lam[j] <= 0) continue; /* a zero weight must not clamp the maximum at 0 */
    if (v > mx) mx = v;
    sum += v;
  }
  return mx + 0.05 * sum;
}

static void draw_lambda(mi__meta_t *st, double *lam) {
  double s = 0;
  if (st->m > 1 && mi_rng_uniform(&st->rng) < st->mo.primary_share) {
    /* The first objective is the primary one: a share of the effort goes to it alone, so a
     * noisy or flat second objective cannot take the whole batch. */
    for (int32_t j = 0; j < st->m; j++) lam[j] = j == 0 ? 1 : 0;
    return;
  }
  for (int32_t j = 0; j < st->m; j++) {
    lam[j] = -log(mi_rng_uniform(&st->rng) + 1e-12);
    s += lam[j];
  }
  for (int32_t j = 0; j < st->m; j++) lam[j] /= s;
}

/* Pulls a point back into the trust region: dimensions that differ from the centre beyond
 * the allowed count are reset to the centre's value, chosen at random. */
static void trust(mi__meta_t *st, int32_t *pt) {
  int32_t allow = (int32_t)ceil(st->radius * st->D), diff = 0;
  if (st->radius >= 1 || !st->center) return;
  if (allow < 1) allow = 1;
  for (int32_t d = 0; d < st->D; d++) diff += pt[d] != st->center[d];
  while (diff > allow) {
    int32_t d = (int32_t)mi_rng_below(&st->rng, (uint32_t)st->D);
    if (pt[d] != st->center[d]) {
      pt[d] = st->center[d];
      diff--;
    }
  }
  mi__meta_fix(st, pt);
}

static int32_t predict_pool(mi__meta_t *st, pool_t *p, int32_t from, mi_error_t *err) {
  int32_t n = p->n - from, rc;
  double *X = malloc((size_t)(n > 0 ? n : 1) * st->F * sizeof *X);
  if (!X) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta screen: out of memory");
  for (int32_t i = 0; i < n; i++) mi_meta_encode(st->s, p->pts + (size_t)(from + i) * st->D, X + (size_t)i * st->F);
  rc = mi__meta_predict(st, X, p->pts + (size_t)from * st->D, n, p->mu + (size_t)from * st->m, p->sd + (size_t)from * st->m, err);
  free(X);
  return rc;
}

int32_t mi__meta_screen(mi__meta_t *st, int32_t want, int32_t *out, mi_error_t *err) {
  pool_t pop, kid, arc;
  int32_t D = st->D, m = st->m, rc = MI_OK, got = 0, scored = 0, target;
  double ideal[MI_OBJ_COUNT], lam[MI_OBJ_COUNT], *fit = NULL;
  int32_t *ord = NULL;
  if (pool_init(&pop, 2 * POP, D, m) || pool_init(&kid, POP, D, m) || pool_init(&arc, ARCHIVE, D, m) ||
      !(fit = malloc(2 * POP * sizeof *fit)) || !(ord = malloc(2 * POP * sizeof *ord))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta screen: out of memory");
    goto done;
  }
  /* The ideal point: the best standardised value measured per objective. */
  for (int32_t j = 0; j < m; j++) {
    ideal[j] = 0;
    for (int32_t i = 0; i < st->r->count; i++) {
      double v = (mi__meta_logobj(st, &st->r->trials[i], j) - st->ymu[j]) / st->ysd[j];
      if (isfinite(v) && v < ideal[j] && !mi__meta_excluded(st, i)) ideal[j] = v;
    }
  }
  /* Seeds: the centre, mutations of it, and samples of the (trust-region) space. */
  while (pop.n < POP) {
    int32_t *pt = pop.pts + (size_t)pop.n * D;
    if (st->center && pop.n < POP / 2) {
      memcpy(pt, st->center, (size_t)D * sizeof *pt);
      if (pop.n > 0 && mi_space_mutate(st->s, &st->rng, 0, pt, NULL) != MI_OK) continue;
    } else if (mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK) {
      continue;
    }
    if (mi__meta_fix(st, pt) != MI_OK) continue;
    trust(st, pt);
    pop.hash[pop.n] = mi_space_hash(st->s, pt);
    pop.n++;
  }
  if ((rc = predict_pool(st, &pop, 0, err)) != MI_OK) goto done;
  scored = pop.n;
  target = st->mo.screen > 0 ? st->mo.screen : 100000;
  /* A candidate costs in proportion to the space's dimensions (mutation, repair, features,
   * prediction): on ppocr_v4_det (430 dimensions) 20000 candidates took 90 s a round at load 17,
   * as long as six measurements. At most 2e6 dimension-candidates a round (20000 at 100
   * dimensions), and never fewer than 16 generations; a count, not a clock, so a seed still
   * gives the same search. */
  if (D > 0) {
    int32_t cap = 2000000 / D > 16 * POP ? 2000000 / D : 16 * POP;
    if (target > cap) target = cap;
  }
  while (scored < target) {
    /* Past the search's seconds nothing this screen proposes is measured (mi__meta_has_budget),
     * so the generations stop there: a clock that only cuts work whose result is thrown away,
     * and a seed still gives the same search within its time. Under a sanitizer one round took
     * 17 s of a 3 s budget. */
    if (!mi__meta_has_budget(st)) break;
    /* A fresh scalarisation each generation spreads the population along the front. */
    draw_lambda(st, lam);
    for (int32_t i = 0; i < pop.n; i++) fit[i] = score(st, lam, pop.mu + (size_t)i * m, pop.sd + (size_t)i * m, ideal);
    kid.n = 0;
    while (kid.n < POP) {
      int32_t a = (int32_t)mi_rng_below(&st->rng, (uint32_t)pop.n), b = (int32_t)mi_rng_below(&st->rng, (uint32_t)pop.n);
      int32_t *pt = kid.pts + (size_t)kid.n * D, pa = fit[a] <= fit[b] ? a : b;
      if (mi_rng_uniform(&st->rng) < 0.3) {
        int32_t c = (int32_t)mi_rng_below(&st->rng, (uint32_t)pop.n);
        if (mi_space_crossover(st->s, &st->rng, pop.pts + (size_t)pa * D, pop.pts + (size_t)c * D, pt, NULL) != MI_OK) continue;
      } else {
        memcpy(pt, pop.pts + (size_t)pa * D, (size_t)D * sizeof *pt);
      }
      if (mi_space_mutate(st->s, &st->rng, 0, pt, NULL) != MI_OK || mi__meta_fix(st, pt) != MI_OK) continue;
      trust(st, pt);
      kid.hash[kid.n] = mi_space_hash(st->s, pt);
      kid.n++;
    }
    if ((rc = predict_pool(st, &kid, 0, err)) != MI_OK) goto done;
    scored += kid.n;
    /* Elitist merge: parents and children ranked by this generation's scalarisation. */
    memcpy(pop.pts + (size_t)pop.n * D, kid.pts, (size_t)kid.n * D * sizeof *pop.pts);
    memcpy(pop.hash + pop.n, kid.hash, (size_t)kid.n * sizeof *pop.hash);
    memcpy(pop.mu + (size_t)pop.n * m, kid.mu, (size_t)kid.n * m * sizeof *pop.mu);
    memcpy(pop.sd + (size_t)pop.n * m, kid.sd, (size_t)kid.n * m * sizeof *pop.sd);
    for (int32_t i = 0; i < pop.n + kid.n; i++) {
      fit[i] = score(st, lam, pop.mu + (size_t)i * m, pop.sd + (size_t)i * m, ideal);
      for (int32_t j = 0; j < i; j++)
        if (pop.hash[j] == pop.hash[i]) fit[i] = INFINITY; /* duplicates go last */
      /* Predicted over the accuracy bound (strategy_acc.c): neither bred from nor measured. */
      if (isfinite(fit[i]) && mi__meta_acc_screened(st, pop.pts + (size_t)i * D)) {
        fit[i] = INFINITY;
        st->acc_screened++;
      }
      ord[i] = i;
    }
    for (int32_t i = 1; i < pop.n + kid.n; i++)
      for (int32_t j = i; j > 0 && fit[ord[j]] < fit[ord[j - 1]]; j--) {
        int32_t t = ord[j];
        ord[j] = ord[j - 1];
        ord[j - 1] = t;
      }
    /* The generation's best unmeasured points go to the archive the batch is drawn from. */
    for (int32_t i = 0, added = 0; i < pop.n + kid.n && added < PER_GEN && arc.n < ARCHIVE; i++) {
      int32_t c = ord[i], dup = 0;
      if (!isfinite(fit[c]) || measured(st, pop.hash[c])) continue;
      for (int32_t q = 0; q < arc.n && !dup; q++) dup = arc.hash[q] == pop.hash[c];
      if (dup) continue;
      memcpy(arc.pts + (size_t)arc.n * D, pop.pts + (size_t)c * D, (size_t)D * sizeof *arc.pts);
      arc.hash[arc.n] = pop.hash[c];
      memcpy(arc.mu + (size_t)arc.n * m, pop.mu + (size_t)c * m, (size_t)m * sizeof *arc.mu);
      memcpy(arc.sd + (size_t)arc.n * m, pop.sd + (size_t)c * m, (size_t)m * sizeof *arc.sd);
      arc.n++;
      added++;
    }
    {
      pool_t nx;
      if (pool_init(&nx, 2 * POP, D, m)) {
        pool_free(&nx);
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "meta screen: out of memory");
        goto done;
      }
      for (int32_t i = 0; i < POP; i++) {
        int32_t c = ord[i];
        memcpy(nx.pts + (size_t)i * D, pop.pts + (size_t)c * D, (size_t)D * sizeof *nx.pts);
        nx.hash[i] = pop.hash[c];
        memcpy(nx.mu + (size_t)i * m, pop.mu + (size_t)c * m, (size_t)m * sizeof *nx.mu);
        memcpy(nx.sd + (size_t)i * m, pop.sd + (size_t)c * m, (size_t)m * sizeof *nx.sd);
      }
      nx.n = POP;
      pool_free(&pop);
      pop = nx;
    }
  }
  /* The batch: each member the best of the archive under its own random scalarisation. */
  while (got < want && got < arc.n) {
    int32_t best = -1;
    double bs = INFINITY;
    draw_lambda(st, lam);
    for (int32_t i = 0; i < arc.n; i++) {
      double v;
      if (arc.hash[i] == 0) continue; /* taken */
      v = score(st, lam, arc.mu + (size_t)i * m, arc.sd + (size_t)i * m, ideal);
      if (v < bs) {
        bs = v;
        best = i;
      }
    }
    if (best < 0) break;
    memcpy(out + (size_t)got * D, arc.pts + (size_t)best * D, (size_t)D * sizeof *out);
    arc.hash[best] = 0;
    got++;
  }
done:
  pool_free(&pop);
  pool_free(&kid);
  pool_free(&arc);
  free(fit);
  free(ord);
  return rc != MI_OK ? -1 : got;
}
