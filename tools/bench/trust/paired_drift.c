/* paired_drift.c - how far a ratio of two configurations moves when each is timed on its own,
 * minutes apart as a tune's trials are, against the same ratio from paired samples (each sample
 * of B followed by as many runs of A in the worker: mi_worker_config_t.paired,
 * docs/measurement.md "Paired samples"). Per round, --gap seconds apart: a job of A alone, a job
 * of B alone, and a job of B paired with A. Three estimates of B/A per round: B's median over
 * A's of the same round (jobs next to each other), B's median over A's of the first round (a
 * tune: the default timed once at the start, the trials later), and the paired job's
 * paired_ratio. Prints every round and, for each estimate, the median, the range and the spread
 * ((max - min) / median). A is the device's defaults; B is the defaults with --knob NAME=INT and
 * the model-side transform of --xf FILE (a mi-transform configuration, docs/transform.md).
 *
 *   paired_drift --plugins DIR --model M.onnx [--shape NAME:1x3x8x8] [--device blis-cpu:0]
 *                [--knob threads=1] [--rounds 20] [--repeats 10] [--gap 0]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"

#define MAX_KNOBS 8

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static void summary(const char *what, double *v, int n) {
  double med;
  if (n == 0) {
    printf("%s: no rounds\n", what);
    return;
  }
  qsort(v, (size_t)n, sizeof *v, by_value);
  med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  printf("%s: median %.4f, range %.4f-%.4f, spread %.1f%% (%d rounds)\n", what, med, v[0], v[n - 1],
         100.0 * (v[n - 1] - v[0]) / med, n);
}

static mi_profile_t *job(mi_worker_pool_t *p, const char *spec, const char *model, const char *shape,
                         const mi_xf_config_t *xf, const mi_session_options_t *so,
                         const mi_session_options_t *anchor, const mi_measure_options_t *mo) {
  mi_worker_config_t wc;
  mi_worker_config_result_t res;
  mi_profile_t *pr = NULL;
  mi_error_t err;
  memset(&wc, 0, sizeof wc);
  wc.struct_size = sizeof wc;
  wc.model = model;
  wc.inputs = shape;
  wc.so = so;
  wc.xf = xf;
  wc.paired = anchor != NULL;
  wc.paired_so = anchor;
  if (mi_worker_profile_config(p, spec, &wc, mo, 0, &pr, &res, &err) != MI_OK) {
    fprintf(stderr, "paired_drift: %s: %s\n", model, err.message);
    return NULL;
  }
  return pr;
}

int main(int argc, char **argv) {
  const char *plugins = NULL, *model = NULL, *shape = NULL, *spec = "blis-cpu:0";
  mi_knob_value_t knobs[MAX_KNOBS];
  char names[MAX_KNOBS][64];
  int nk = 0, rounds = 20, repeats = 10, n = 0, rc = 0;
  double *unpaired, *first, *paired, gap = 0, a1 = 0;
  mi_session_options_t a, b;
  mi_measure_options_t mo;
  mi_worker_options_t wo;
  mi_worker_pool_t *pool = NULL;
  mi_xf_config_t *xf = NULL;
  mi_error_t err;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf(
          "usage: paired_drift --plugins DIR --model M.onnx [--shape NAME:DIMS] [--device SPEC]\n"
          "                    [--knob NAME=INT]... [--xf FILE] [--rounds N] [--repeats N] [--gap S]\n");
      return 0;
    }
    if (!v) {
      fprintf(stderr, "paired_drift: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--plugins")) plugins = v;
    else if (!strcmp(argv[i], "--model"))
      model = v;
    else if (!strcmp(argv[i], "--shape"))
      shape = v;
    else if (!strcmp(argv[i], "--device"))
      spec = v;
    else if (!strcmp(argv[i], "--rounds"))
      rounds = atoi(v);
    else if (!strcmp(argv[i], "--repeats"))
      repeats = atoi(v);
    else if (!strcmp(argv[i], "--gap"))
      gap = atof(v);
    else if (!strcmp(argv[i], "--xf") && !xf) {
      if (mi_xf_config_load(v, &xf, &err) != MI_OK) {
        fprintf(stderr, "paired_drift: --xf %s: %s\n", v, err.message);
        return 2;
      }
    } else if (!strcmp(argv[i], "--knob") && nk < MAX_KNOBS && strchr(v, '=')) {
      snprintf(names[nk], sizeof names[nk], "%.*s", (int)(strchr(v, '=') - v), v);
      knobs[nk].name = names[nk];
      knobs[nk].i = atoll(strchr(v, '=') + 1);
      knobs[nk++].f = 0;
    } else {
      fprintf(stderr, "paired_drift: unknown or malformed argument '%s'\n", argv[i]);
      return 2;
    }
    i++;
  }
  if (!plugins || !model || rounds < 1 || repeats < 5 || !(gap >= 0)) {
    fprintf(stderr, "paired_drift: --plugins and --model are needed (--rounds >= 1, --repeats >= 5, --gap >= 0)\n");
    return 2;
  }
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.allow_host_fallback = 1;
  b = a;
  b.device_knobs = knobs;
  b.device_knob_count = nk;
  mi_measure_options_default(&mo);
  mo.warmup = 2;
  mo.min_repeats = mo.max_repeats = repeats;
  mo.max_remeasure = 0;
  mi_worker_options_default(&wo);
  wo.plugin_dirs = plugins;
  unpaired = calloc((size_t)rounds, sizeof *unpaired);
  paired = calloc((size_t)rounds, sizeof *paired);
  first = calloc((size_t)rounds, sizeof *first);
  if (!unpaired || !paired || !first || mi_worker_pool_create(&wo, &pool, &err) != MI_OK) {
    fprintf(stderr, "paired_drift: %s\n", unpaired && paired && first ? err.message : "out of memory");
    return 1;
  }
  printf("round  A ms  B ms  B/A same round  B/A first round's A  B/A paired (A's paired ms)  load\n");
  for (int r = 0; r < rounds; r++) {
    if (r > 0 && gap > 0) {
      struct timespec ts = {(time_t)gap, (long)((gap - (double)(time_t)gap) * 1e9)};
      nanosleep(&ts, NULL);
    }
    mi_profile_t *pa = job(pool, spec, model, shape, NULL, &a, NULL, &mo);
    mi_profile_t *pb = pa ? job(pool, spec, model, shape, xf, &b, NULL, &mo) : NULL;
    mi_profile_t *pp = pb ? job(pool, spec, model, shape, xf, &b, &a, &mo) : NULL;
    if (!pp || pp->paired_count == 0) {
      fprintf(stderr, "paired_drift: round %d: %s\n", r + 1, pp ? "the anchor did not run" : "a job failed");
      rc = 1;
    } else {
      if (n == 0) a1 = pa->latency.stats.median;
      unpaired[n] = pb->latency.stats.median / pa->latency.stats.median;
      first[n] = pb->latency.stats.median / a1;
      paired[n] = pp->paired_ratio;
      printf("%5d  %.4f  %.4f  %.4f  %.4f  %.4f (%.4f)  %.2f\n", r + 1, pa->latency.stats.median * 1e3,
             pb->latency.stats.median * 1e3, unpaired[n], first[n], paired[n], pp->paired_s * 1e3, pp->load1);
      fflush(stdout);
      n++;
    }
    mi_profile_destroy(pa);
    mi_profile_destroy(pb);
    mi_profile_destroy(pp);
  }
  summary("B/A, separate jobs of the same round ", unpaired, n);
  summary("B/A, against the first round's A      ", first, n);
  summary("B/A, paired in one job                ", paired, n);
  mi_worker_pool_destroy(pool);
  mi_xf_config_destroy(xf);
  free(unpaired);
  free(first);
  free(paired);
  return rc;
}
