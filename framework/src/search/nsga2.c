/* nsga2.c - NSGA-II on real measurements: constrained non-dominated sorting, crowding,
 * binary tournaments, per-node crossover and mutation that keep every child valid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/search_internal.h"

typedef struct {
  int32_t *idx; /* trial indices of the population */
  int32_t *rank;
  double *crowd;
  double *obj;
  double *viol;
} pop_t;

static int rank_pop(mi__search_t *st, pop_t *p, int32_t n) {
  mi__search_matrix(st, p->idx, n, p->obj, p->viol);
  return mi_pareto_sort(p->obj, n, st->o->objective_count, p->viol, p->rank, p->crowd) >= 0;
}

/* Lower rank wins; within a rank, the larger crowding distance (a sparser region). */
static int better(const pop_t *p, int32_t a, int32_t b) {
  if (p->rank[a] != p->rank[b]) return p->rank[a] < p->rank[b];
  return p->crowd[a] > p->crowd[b];
}

static int32_t tournament(mi__search_t *st, const pop_t *p, int32_t n) {
  int32_t a = (int32_t)mi_rng_below(&st->rng, (uint32_t)n), b = (int32_t)mi_rng_below(&st->rng, (uint32_t)n);
  return better(p, a, b) ? a : b;
}

int32_t mi__search_nsga2(mi__search_t *st, mi_error_t *err) {
  int32_t P = st->o->population > 1 ? st->o->population : 8, n = 0, rc = MI_OK, active = 0;
  int32_t *pt = malloc((size_t)st->dims * sizeof *pt + 1);
  pop_t p;
  double prob;
  int fresh;
  memset(&p, 0, sizeof p);
  p.idx = malloc(2 * (size_t)P * sizeof *p.idx);
  p.rank = malloc(2 * (size_t)P * sizeof *p.rank);
  p.crowd = malloc(2 * (size_t)P * sizeof *p.crowd);
  p.obj = malloc(2 * (size_t)P * MI_OBJ_COUNT * sizeof *p.obj);
  p.viol = malloc(2 * (size_t)P * sizeof *p.viol);
  if (!pt || !p.idx || !p.rank || !p.crowd || !p.obj || !p.viol) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "nsga2: out of memory");
    goto done;
  }
  /* Initial population: the defaults, then uniform samples. */
  mi_space_default(st->s, pt);
  for (int tries = 0; n < P && tries < 20 * P && mi__search_has_budget(st); tries++) {
    if (tries > 0 && mi_space_sample(st->s, &st->rng, pt, NULL) != MI_OK) continue;
    if (tries == 0 && mi_space_repair(st->s, pt, NULL, NULL) != MI_OK) continue;
    {
      int32_t t = mi__search_eval(st, pt, &fresh);
      if (t < 0) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "nsga2: out of memory");
        goto done;
      }
      if (fresh) p.idx[n++] = t;
    }
  }
  if (n < 2) goto done; /* a space this small is exhausted by the initial population */
  for (int32_t d = 0; d < st->dims; d++) active += mi_space_dim_size(st->s, d) > 1;
  prob = st->o->mutation > 0 ? st->o->mutation : 1.0 / (active > 0 ? active : 1);
  while (mi__search_has_budget(st)) {
    int32_t m = n, stale = 0;
    if (!rank_pop(st, &p, n)) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "nsga2: out of memory");
      goto done;
    }
    /* Offspring: tournament parents, crossover, mutation; duplicates are re-mutated. */
    while (m < 2 * n && mi__search_has_budget(st) && stale < 50) {
      const int32_t *a = st->r->trials[p.idx[tournament(st, &p, n)]].point;
      const int32_t *b = st->r->trials[p.idx[tournament(st, &p, n)]].point;
      int32_t t;
      if (mi_space_crossover(st->s, &st->rng, a, b, pt, NULL) != MI_OK ||
          mi_space_mutate(st->s, &st->rng, prob, pt, NULL) != MI_OK) {
        stale++;
        continue;
      }
      t = mi__search_eval(st, pt, &fresh);
      if (t < 0) {
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "nsga2: out of memory");
        goto done;
      }
      if (!fresh) {
        stale++;
        continue;
      }
      p.idx[m++] = t;
    }
    if (m == n) break; /* nothing new can be bred: the reachable space is used up */
    /* Environmental selection: the best n of parents and offspring by rank, then crowding. */
    if (!rank_pop(st, &p, m)) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "nsga2: out of memory");
      goto done;
    }
    {
      int32_t *order = malloc((size_t)m * sizeof *order), *keep = malloc((size_t)n * sizeof *keep);
      if (!order || !keep) {
        free(order);
        free(keep);
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "nsga2: out of memory");
        goto done;
      }
      for (int32_t i = 0; i < m; i++) order[i] = i;
      for (int32_t i = 1; i < m; i++) {
        int32_t x = order[i], j = i;
        while (j > 0 && better(&p, x, order[j - 1])) {
          order[j] = order[j - 1];
          j--;
        }
        order[j] = x;
      }
      for (int32_t i = 0; i < n; i++) keep[i] = p.idx[order[i]];
      memcpy(p.idx, keep, (size_t)n * sizeof *keep);
      free(order);
      free(keep);
    }
  }
done:
  free(pt);
  free(p.idx);
  free(p.rank);
  free(p.crowd);
  free(p.obj);
  free(p.viol);
  return rc;
}
