/* gp.c - a Matern 5/2 Gaussian process: Cholesky and triangular solves from LAPACK,
 * lengthscale and noise chosen by marginal likelihood on a small grid, and optionally one
 * relevance weight per feature (ARD) by coordinate ascent on the same likelihood. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "surrogate/surrogate_internal.h"

struct mi__gp {
  int32_t n, d;
  double *X;              /* n x d, row-major copy */
  double *L;              /* n x n Cholesky factor, column-major lower */
  double *alpha;          /* K^-1 (y - mu) / s^2-free */
  double mu, sd;          /* y standardisation */
  double ell, noise, amp; /* lengthscale, noise ratio, signal variance (standardised y) */
  double *w;              /* d relevance weights of the squared distance (ARD), all 1 without */
};

static double dist(const double *a, const double *b, const double *w, int32_t d) {
  double s = 0;
  for (int32_t k = 0; k < d; k++) s += w[k] * (a[k] - b[k]) * (a[k] - b[k]);
  return sqrt(s);
}

static double matern52(double r, double ell) {
  double t = sqrt(5.0) * r / ell;
  return (1 + t + t * t / 3) * exp(-t);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1
                            : 0;
}

/* Factorises K = C(ell) + noise*I into g->L; returns the profiled log marginal likelihood
 * (amplitude at its optimum y'K^-1y/n), or -INFINITY when K is not positive definite. */
static double factor(mi__gp_t *g, const double *D, const double *ys, double ell, double noise,
                     double *alpha) {
  int32_t n = g->n;
  double logdet = 0, q = 0;
  for (int32_t j = 0; j < n; j++)
    for (int32_t i = 0; i < n; i++)
      g->L[(size_t)j * n + i] = matern52(D[(size_t)i * n + j], ell) + (i == j ? noise : 0);
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, g->L, n) != 0) return -INFINITY;
  memcpy(alpha, ys, (size_t)n * sizeof *alpha);
  if (LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, 1, g->L, n, alpha, n) != 0) return -INFINITY;
  for (int32_t i = 0; i < n; i++) {
    logdet += 2 * log(g->L[(size_t)i * n + i]);
    q += ys[i] * alpha[i];
  }
  if (q <= 0) q = 1e-12;
  g->amp = q / n;
  return -0.5 * n * log(g->amp) - 0.5 * logdet;
}

/* Pairwise weighted distances into D and the median of the non-zero ones into *rmed. */
static void distances(const mi__gp_t *g, double *D, double *tmp, double *rmed) {
  int32_t n = g->n, c = 0;
  for (int32_t i = 0; i < n; i++)
    for (int32_t j = 0; j < n; j++) {
      D[(size_t)i * n + j] = dist(g->X + (size_t)i * g->d, g->X + (size_t)j * g->d, g->w, g->d);
      if (j > i && D[(size_t)i * n + j] > 0) tmp[c++] = D[(size_t)i * n + j];
    }
  *rmed = 1;
  if (c > 0) {
    qsort(tmp, (size_t)c, sizeof *tmp, cmp_double);
    *rmed = tmp[c / 2];
  }
}

/* ARD by coordinate ascent: each feature's weight is scaled by 1/8 or 8 (within [1e-3, 1e3])
 * when that raises the marginal likelihood by more than a margin, two passes. The margin keeps
 * a handful of points from switching features off by chance. On one-hot encodings of a few
 * decisive choices among many idle ones, this is what lets the model see which ones matter.
 * A trial changes one weight, so it moves each squared distance by (new - old) (x_ik - x_jk)^2:
 * the squared distances S are updated in O(n^2) a trial, not recomputed in O(n^2 d) (a whole
 * model's kernel space has thousands of features). */
static void ard(mi__gp_t *g, const double *ys, double *D, double *S, double ell, double noise) {
  static const double step[] = {0.125, 8};
  int32_t n = g->n, d = g->d;
  double best;
  for (int32_t i = 0; i < n; i++)
    for (int32_t j = 0; j < n; j++) {
      double r = dist(g->X + (size_t)i * d, g->X + (size_t)j * d, g->w, d);
      S[(size_t)i * n + j] = r * r;
      D[(size_t)i * n + j] = r;
    }
  best = factor(g, D, ys, ell, noise, g->alpha);
  for (int pass = 0; pass < 2; pass++)
    for (int32_t k = 0; k < d; k++) {
      int varies = 0;
      for (int32_t i = 1; i < n && !varies; i++) varies = g->X[(size_t)i * d + k] != g->X[k];
      if (!varies) continue;
      for (int s = 0; s < 2; s++) {
        double old = g->w[k], nw = old * step[s], dw = nw - old, ll;
        if (nw < 1e-3 || nw > 1e3) continue;
        for (int32_t i = 0; i < n; i++)
          for (int32_t j = 0; j < n; j++) {
            double e = g->X[(size_t)i * d + k] - g->X[(size_t)j * d + k], q = S[(size_t)i * n + j] + dw * e * e;
            D[(size_t)i * n + j] = sqrt(q > 0 ? q : 0);
          }
        ll = factor(g, D, ys, ell, noise, g->alpha);
        if (ll > best + 1.0) {
          best = ll;
          g->w[k] = nw;
          for (int32_t i = 0; i < n; i++)
            for (int32_t j = 0; j < n; j++) {
              double e = g->X[(size_t)i * d + k] - g->X[(size_t)j * d + k];
              S[(size_t)i * n + j] += dw * e * e;
            }
          break;
        }
      }
    }
}

int32_t mi__gp_fit(const double *X, const double *y, int32_t n, int32_t d, int use_ard,
                   mi__gp_t **out, mi_error_t *err) {
  static const double ell_mult[] = {0.25, 0.5, 1, 2, 4};
  static const double noises[] = {1e-4, 1e-3, 1e-2, 0.05, 0.2};
  mi__gp_t *g = calloc(1, sizeof *g);
  double *D = NULL, *ys = NULL, *tmp = NULL, best = -INFINITY, best_ell = 1, best_noise = 1e-2;
  double rmed = 1;
  int32_t rc = MI_OK;
  *out = g; /* the caller's from here on, also when the fit fails (surrogate_internal.h) */
  if (!g) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate gp: out of memory");
  g->n = n;
  g->d = d;
  g->X = malloc((size_t)n * d * sizeof *g->X + 1);
  g->L = malloc((size_t)n * n * sizeof *g->L);
  g->alpha = malloc((size_t)n * sizeof *g->alpha);
  D = malloc((size_t)n * n * sizeof *D);
  ys = malloc((size_t)n * sizeof *ys);
  tmp = malloc((size_t)n * n * sizeof *tmp);
  g->w = malloc((size_t)d * sizeof *g->w);
  if (!g->X || !g->L || !g->alpha || !D || !ys || !tmp || !g->w) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate gp: out of memory (%d points)", (int)n);
    goto done;
  }
  memcpy(g->X, X, (size_t)n * d * sizeof *X);
  for (int32_t i = 0; i < n; i++) g->mu += y[i];
  g->mu /= n;
  for (int32_t i = 0; i < n; i++) g->sd += (y[i] - g->mu) * (y[i] - g->mu);
  g->sd = n > 1 ? sqrt(g->sd / (n - 1)) : 0;
  if (!(g->sd > 1e-12)) g->sd = 1;
  for (int32_t i = 0; i < n; i++) ys[i] = (y[i] - g->mu) / g->sd;
  for (int32_t k = 0; k < d; k++) g->w[k] = 1;
  /* ARD costs O(n^2 d^2) per fit: above 160 points the isotropic grid alone. */
  for (int round = 0; round < (use_ard && n >= 4 && n <= 160 ? 2 : 1); round++) {
    if (round == 1) {
      /* Relevance weights at the isotropic optimum, then the grid again on the new metric. */
      ard(g, ys, D, tmp, best_ell, best_noise);
      best = -INFINITY;
    }
    /* The grid scales with the data's own spread, so one grid fits any feature encoding. */
    distances(g, D, tmp, &rmed);
    for (size_t a = 0; a < sizeof ell_mult / sizeof *ell_mult; a++)
      for (size_t b = 0; b < sizeof noises / sizeof *noises; b++) {
        double ll = factor(g, D, ys, rmed * ell_mult[a], noises[b], g->alpha);
        if (ll > best) {
          best = ll;
          best_ell = rmed * ell_mult[a];
          best_noise = noises[b];
        }
      }
  }
  g->ell = best_ell;
  g->noise = best_noise;
  if (!isfinite(factor(g, D, ys, best_ell, best_noise, g->alpha)))
    rc = mi_errorf(err, MI_ERR_INTERNAL, "surrogate gp: kernel matrix not positive definite");
done:
  free(D);
  free(ys);
  free(tmp);
  return rc;
}

int32_t mi__gp_predict(const mi__gp_t *g, const double *X, int32_t m, double *mean, double *std,
                       mi_error_t *err) {
  enum { BLOCK = 512 };
  int32_t n = g->n, d = g->d;
  double *ks = malloc((size_t)n * BLOCK * sizeof *ks);
  if (!ks) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate gp: out of memory");
  for (int32_t b0 = 0; b0 < m; b0 += BLOCK) {
    int32_t bm = m - b0 < BLOCK ? m - b0 : BLOCK;
    for (int32_t j = 0; j < bm; j++) {
      const double *x = X + (size_t)(b0 + j) * d;
      double s = 0;
      for (int32_t i = 0; i < n; i++) {
        double k = matern52(dist(x, g->X + (size_t)i * d, g->w, d), g->ell);
        ks[(size_t)j * n + i] = k;
        s += k * g->alpha[i];
      }
      mean[b0 + j] = g->mu + g->sd * s;
    }
    if (!std) continue;
    /* v = L^-1 k for the whole block at once; var = amp (1 + noise - v'v). */
    if (LAPACKE_dtrtrs(LAPACK_COL_MAJOR, 'L', 'N', 'N', n, bm, g->L, n, ks, n) != 0) {
      free(ks);
      return mi_errorf(err, MI_ERR_INTERNAL, "surrogate gp: triangular solve failed");
    }
    for (int32_t j = 0; j < bm; j++) {
      double vv = 0, var;
      for (int32_t i = 0; i < n; i++) vv += ks[(size_t)j * n + i] * ks[(size_t)j * n + i];
      var = g->amp * (1 + g->noise - vv);
      if (var < g->amp * g->noise) var = g->amp * g->noise;
      std[b0 + j] = g->sd * sqrt(var);
    }
  }
  free(ks);
  return MI_OK;
}

void mi__gp_destroy(mi__gp_t *g) {
  if (!g) return;
  free(g->X);
  free(g->L);
  free(g->alpha);
  free(g->w);
  free(g);
}
