/* metrics.c - rank correlation and error metrics a surrogate is judged by. */
#include <math.h>
#include <stdlib.h>

typedef struct {
  double v;
  int32_t i;
} keyed_t;

static int cmp_keyed(const void *a, const void *b) {
  double x = ((const keyed_t *)a)->v, y = ((const keyed_t *)b)->v;
  return x < y ? -1 : x > y ? 1
                            : 0;
}

/* Average ranks, so tied values share one rank and Spearman stays Pearson on ranks. */
static int ranks(const double *v, int32_t n, double *r) {
  keyed_t *k = malloc((size_t)n * sizeof *k);
  if (!k) return -1;
  for (int32_t i = 0; i < n; i++) {
    k[i].v = v[i];
    k[i].i = i;
  }
  qsort(k, (size_t)n, sizeof *k, cmp_keyed);
  for (int32_t i = 0; i < n;) {
    int32_t j = i;
    while (j + 1 < n && k[j + 1].v == k[i].v) j++;
    for (int32_t t = i; t <= j; t++) r[k[t].i] = 0.5 * (double)(i + j);
    i = j + 1;
  }
  free(k);
  return 0;
}

/* The means of n pairs (a, b) and their centred sums of products: what a correlation and a
 * least-squares line are made of. */
typedef struct moments {
  double ma, mb, sab, saa, sbb;
} moments_t;

static moments_t moments(const double *a, const double *b, int32_t n) {
  moments_t m = {0, 0, 0, 0, 0};
  for (int32_t i = 0; i < n; i++) {
    m.ma += a[i];
    m.mb += b[i];
  }
  m.ma /= n;
  m.mb /= n;
  for (int32_t i = 0; i < n; i++) {
    m.sab += (a[i] - m.ma) * (b[i] - m.mb);
    m.saa += (a[i] - m.ma) * (a[i] - m.ma);
    m.sbb += (b[i] - m.mb) * (b[i] - m.mb);
  }
  return m;
}

static double pearson(const double *a, const double *b, int32_t n) {
  moments_t m = moments(a, b, n);
  if (m.saa <= 0 || m.sbb <= 0) return 0;
  return m.sab / sqrt(m.saa * m.sbb);
}

double mi_metric_spearman(const double *a, const double *b, int32_t n) {
  double *ra, *rb, r = 0;
  if (!a || !b || n < 2) return 0;
  ra = malloc((size_t)n * sizeof *ra);
  rb = malloc((size_t)n * sizeof *rb);
  if (ra && rb && ranks(a, n, ra) == 0 && ranks(b, n, rb) == 0) r = pearson(ra, rb, n);
  free(ra);
  free(rb);
  return r;
}

double mi_metric_kendall(const double *a, const double *b, int32_t n) {
  double conc = 0, disc = 0, ta = 0, tb = 0;
  if (!a || !b || n < 2) return 0;
  /* O(n^2) is fine: the batches and held-out sets we judge are small. */
  for (int32_t i = 0; i < n; i++)
    for (int32_t j = i + 1; j < n; j++) {
      double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) ta++;
      else if (db == 0)
        tb++;
      else if ((da > 0) == (db > 0))
        conc++;
      else
        disc++;
    }
  {
    double den = sqrt((conc + disc + ta) * (conc + disc + tb));
    return den > 0 ? (conc - disc) / den : 0;
  }
}

double mi_metric_mape(const double *pred, const double *truth, int32_t n) {
  double s = 0;
  int32_t c = 0;
  for (int32_t i = 0; i < n; i++)
    if (truth[i] != 0 && isfinite(pred[i]) && isfinite(truth[i])) {
      s += fabs(pred[i] - truth[i]) / fabs(truth[i]);
      c++;
    }
  return c ? s / c : NAN;
}

double mi_metric_within(const double *pred, const double *truth, int32_t n, double tol) {
  int32_t c = 0, k = 0;
  for (int32_t i = 0; i < n; i++) {
    if (!isfinite(pred[i]) || !isfinite(truth[i])) continue;
    c++;
    if (fabs(pred[i] - truth[i]) <= tol * fabs(truth[i])) k++;
  }
  return c ? (double)k / c : NAN;
}

double mi_metric_rank_loss(const double *score, const double *truth, int32_t n) {
  double bad = 0, pairs = 0;
  for (int32_t i = 0; i < n; i++)
    for (int32_t j = i + 1; j < n; j++) {
      double dt = truth[i] - truth[j], ds = score[i] - score[j];
      if (dt == 0) continue;
      pairs++;
      if (ds == 0) bad += 0.5;
      else if ((dt > 0) != (ds > 0))
        bad++;
    }
  return pairs > 0 ? bad / pairs : 0;
}

double mi_calibration_fit(const double *summed, const double *measured, int32_t n, double *a,
                          double *b) {
  double ss = 0;
  moments_t m;
  *a = 1;
  *b = 0;
  if (n <= 0) return 0;
  if (n < 3) {
    /* Too few points for an intercept: a pure scale keeps the prediction positive. */
    double r = 0;
    for (int32_t i = 0; i < n; i++) r += summed[i] != 0 ? measured[i] / summed[i] : 1;
    *a = r / n;
    return 0;
  }
  m = moments(summed, measured, n);
  if (m.saa <= 0) {
    *a = m.ma != 0 ? m.mb / m.ma : 1;
    return 0;
  }
  *a = m.sab / m.saa;
  *b = m.mb - *a * m.ma;
  for (int32_t i = 0; i < n; i++) {
    double e = measured[i] - (*a * summed[i] + *b);
    ss += e * e;
  }
  return m.sbb > 0 ? 1 - ss / m.sbb : 1;
}
