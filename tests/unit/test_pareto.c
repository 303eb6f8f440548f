/* test_pareto.c - non-dominated sorting, crowding, hypervolume (exact against brute force and
 * Monte Carlo), constrained selection and preference picks. */
#include <math.h>

#include "test_space_util.h"

/* Hypervolume by counting grid cells: the oracle for integer point sets. */
static double grid_hv(const double *p, int n, int m, const double *ref) {
  double count = 0;
  int c[3] = {0, 0, 0};
  int lim[3] = {(int)ref[0], m > 1 ? (int)ref[1] : 1, m > 2 ? (int)ref[2] : 1};
  for (c[0] = 0; c[0] < lim[0]; c[0]++)
    for (c[1] = 0; c[1] < lim[1]; c[1]++)
      for (c[2] = 0; c[2] < lim[2]; c[2]++) {
        for (int i = 0; i < n; i++) {
          int in = 1;
          for (int j = 0; j < m; j++) in &= p[i * m + j] <= c[j];
          if (in) {
            count++;
            break;
          }
        }
      }
  return count;
}

/* Fronts: (1,5) (2,3) (4,1) are rank 0; (3,4) and (5,2) rank 1; (6,6) rank 2. */
static const double pts[] = {1, 5, 2, 3, 4, 1, 3, 4, 5, 2, 6, 6};
static int32_t rank[6], idx[6];
static double crowd[6], viol[6];
static mi_rng_t rng;

static void fronts(void) {
  CHECK(mi_pareto_dominates(pts + 2, pts + 6, 2), "(2,3) dominates (3,4)");
  CHECK(!mi_pareto_dominates(pts, pts + 2, 2) && !mi_pareto_dominates(pts, pts, 2), "dominance");
  CHECK(mi_pareto_sort(pts, 6, 2, NULL, rank, crowd) == 3, "three fronts");
  CHECK(rank[0] == 0 && rank[1] == 0 && rank[2] == 0 && rank[3] == 1 && rank[4] == 1 && rank[5] == 2,
        "ranks %d %d %d %d %d %d", rank[0], rank[1], rank[2], rank[3], rank[4], rank[5]);
  CHECK(isinf(crowd[0]) && isinf(crowd[2]) && isfinite(crowd[1]) && crowd[1] > 0, "crowding");
  CHECK(mi_pareto_front(pts, 6, 2, NULL, idx) == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 2,
        "front sorted by first objective");
}

static void constraints_and_ties(void) {
  /* Constraints are bounds: the point that breaks one leaves the front and ranks last among
   * the feasible, however good its objectives. */
  {
    mi_bound_t b = {1, 4.5}; /* objective 1 <= 4.5: (1,5) and (6,6) break it */
    mi_pareto_violation(pts, 6, 2, &b, 1, viol);
    CHECK(viol[0] > 0 && viol[5] > viol[0] && viol[1] == 0, "violation %g %g", viol[0], viol[5]);
    CHECK(mi_pareto_front(pts, 6, 2, viol, idx) == 2 && idx[0] == 1 && idx[1] == 2, "feasible front");
    mi_pareto_sort(pts, 6, 2, viol, rank, NULL);
    CHECK(rank[0] > rank[3] && rank[5] > rank[0], "infeasible ranked after feasible");
    /* Preference: lexicographic on objective 0 picks (2,3); on objective 1 picks (4,1). */
    {
      int32_t o0[2] = {0, 1}, o1[2] = {1, 0};
      CHECK(mi_pareto_pick(pts, 6, 2, viol, o0, 2) == 1, "pick by obj 0");
      CHECK(mi_pareto_pick(pts, 6, 2, viol, o1, 2) == 2, "pick by obj 1");
    }
    {
      double nan_pts[] = {NAN, 1, 2, 2};
      double v2[2];
      mi_pareto_violation(nan_pts, 2, 2, &b, 1, v2);
      CHECK(v2[0] == 0, "NaN in an unbounded objective is no violation");
      b.objective = 0;
      mi_pareto_violation(nan_pts, 2, 2, &b, 1, v2);
      CHECK(v2[0] > 0 && v2[1] == 0, "a failed (NaN) bounded objective is infeasible");
    }
  }
  /* Ties: lexicographic pick breaks them with the next objective. */
  {
    const double t[] = {1, 3, 1, 2, 2, 1};
    int32_t o[2] = {0, 1};
    CHECK(mi_pareto_pick(t, 3, 2, NULL, o, 2) == 1, "tie broken by second objective");
  }
}

/* Hypervolume: exact in 1-3 objectives against a grid count, on random integer sets. */
static void hypervolume_exact(void) {
  mi_rng_seed(&rng, 7);
  for (int trial = 0; trial < 30; trial++) {
    double p[12 * 3], ref[3] = {10, 10, 10};
    int m = 1 + trial % 3, n = 1 + (int)mi_rng_below(&rng, 12);
    double hv, oracle;
    for (int i = 0; i < n * m; i++) p[i] = (double)mi_rng_below(&rng, 11);
    hv = mi_pareto_hypervolume(p, n, m, ref, 1, 0);
    oracle = grid_hv(p, n, m, ref);
    CHECK(fabs(hv - oracle) < 1e-9, "m=%d n=%d hv %g != %g", m, n, hv, oracle);
  }
}

static void hypervolume_many_objectives(void) {
  /* Beyond three objectives: Monte Carlo close to the exact box volume of one point. */
  {
    /* Two boxes: 0.0625 + 0.046875 - 0.03125 overlap = 0.078125. */
    const double p4[] = {0.5, 0.5, 0.5, 0.5, 0.25, 0.75, 0.5, 0.5};
    const double ref[4] = {1, 1, 1, 1};
    double hv = mi_pareto_hypervolume(p4, 2, 4, ref, 3, 200000);
    CHECK(fabs(hv - 0.078125) < 0.002, "MC hv %g", hv);
    CHECK(mi_pareto_hypervolume(p4, 2, 4, ref, 3, 5000) ==
              mi_pareto_hypervolume(p4, 2, 4, ref, 3, 5000),
          "MC not deterministic");
  }
  CHECK(mi_pareto_hypervolume(pts, 6, 2, (const double[]){0.5, 0.5}, 0, 0) == 0,
        "points outside the reference count nothing");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(fronts),
    TU_CASE(constraints_and_ties),
    TU_CASE(hypervolume_exact),
    TU_CASE(hypervolume_many_objectives),
};

TU_MAIN(NULL, NULL)
