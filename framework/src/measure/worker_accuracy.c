/* worker_accuracy.c - the accuracy of a measured configuration from the device's own outputs:
 * the configuration's session on the device, on each calibration sample, against the original
 * model on the reference interpreter. A device whose numerics are wrong (a broken INT8 or FP16
 * path, a kernel that writes nothing) shows it here, not only in a separate check. */
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"
#include "metainfer/mi_transform.h"

static int32_t session_runner(void *ctx, const mi_array_t *const *in, int32_t nin,
                              mi_array_t **out, int32_t nout, mi_error_t *err) {
  return mi_session_run(ctx, in, nin, out, nout, err);
}

/* The original's side: sample k's reference outputs, computed on first use and kept in the cache
 * (the samples are the cache's, so an input pointer names its sample). */
static int32_t cached_ref_runner(void *ctx, const mi_array_t *const *in, int32_t nin,
                                 mi_array_t **out, int32_t nout, mi_error_t *err) {
  mi__config_cache_t *c = ctx;
  const mi_xf_samples_t *smp = c->samples;
  int32_t k = 0, rc;
  while (k < smp->sample_count && (const mi_array_t *const *)smp->inputs + (size_t)k * nin != in) k++;
  if (k == smp->sample_count) return mi_ref_run(c->g, in, nin, out, nout, err);
  if (!c->ref_out && !(c->ref_out = calloc((size_t)smp->sample_count * nout + 1, sizeof *c->ref_out)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "accuracy: out of memory");
  if (!c->ref_out[(size_t)k * nout] &&
      (rc = mi_ref_run(c->g, in, nin, c->ref_out + (size_t)k * nout, nout, err)))
    return rc;
  for (int32_t o = 0; o < nout; o++) {
    const mi_array_t *a = c->ref_out[(size_t)k * nout + o];
    if (!(out[o] = mi_array_create(a->dtype, a->rank, a->dims))) {
      for (int32_t j = 0; j < o; j++) {
        mi_array_destroy(out[j]);
        out[j] = NULL;
      }
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "accuracy: out of memory");
    }
    memcpy(out[o]->data, a->data, a->nbytes);
  }
  return MI_OK;
}

int32_t mi__device_accuracy(const mi_graph_t *run_graph, mi_plugin_t *pl, uint32_t dev,
                            const mi_session_options_t *so, mi__config_cache_t *cache,
                            double *rel_l2, double *worst, double *top1, mi_error_t *err) {
  mi_session_t *s = NULL;
  mi_xf_metrics_t met;
  int32_t rc;
  if ((rc = mi_session_create(run_graph, pl, dev, so, &s, err))) return rc;
  rc = mi_xf_compare_runs(cache->g, cached_ref_runner, cache, session_runner, s, cache->samples,
                          &met, err);
  mi_session_destroy(s);
  if (rc) return rc;
  *rel_l2 = met.rel_l2;
  *worst = met.worst_rel_l2;
  *top1 = met.top1;
  return MI_OK;
}
