/* worker_accuracy.c - the accuracy of a measured configuration from the device's own outputs:
 * the configuration's session on the device, on each calibration sample, against the original
 * model on the reference interpreter. A device whose numerics are wrong (a broken INT8 or FP16
 * path, a kernel that writes nothing) shows it here, not only in a separate check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"
#include "metainfer/mi_transform.h"

static int32_t session_runner(void *ctx, const mi_array_t *const *in, int32_t nin,
                              mi_array_t **out, int32_t nout, mi_error_t *err) {
  return mi_session_run(ctx, in, nin, out, nout, err);
}

/* The reference side of one accuracy job: the cache, and the job's session for a reference that
 * is the device's own outputs (mi_worker_config_t.ref_device). */
typedef struct ref_ctx {
  mi__config_cache_t *c;
  mi_session_t *s;
} ref_ctx_t;

/* "DIR/s<K>_o<O>.npy" (or its temporary twin) into buf; 0 when it does not fit. */
static int ref_path(char *buf, size_t cap, const char *dir, int32_t k, int32_t o, const char *tmp) {
  int n = snprintf(buf, cap, "%s/s%d_o%d.npy%s", dir, (int)k, (int)o, tmp);
  return n > 0 && (size_t)n < cap;
}

/* Sample k's reference outputs from the job's folder into out[]; MI_OK only when all are there. */
static int32_t ref_load(const char *dir, int32_t k, mi_array_t **out, int32_t nout) {
  char path[4200];
  mi_error_t e;
  for (int32_t o = 0; o < nout; o++)
    if (!ref_path(path, sizeof path, dir, k, o, "") || mi_npy_load(path, &out[o], &e) != MI_OK) {
      for (int32_t j = 0; j < o; j++) {
        mi_array_destroy(out[j]);
        out[j] = NULL;
      }
      return MI_ERR_NOT_FOUND;
    }
  return MI_OK;
}

/* Writes sample k's reference outputs to the folder, each under a temporary name renamed into
 * place, so a worker killed mid-write leaves no half file another would read; plus the "device"
 * mark when they came from a device. A folder that cannot be written only costs the next
 * worker the same computation. */
static void ref_store(const char *dir, int32_t k, mi_array_t *const *a, int32_t nout, int device) {
  char path[4200], tmp[4200];
  mi_error_t e;
  for (int32_t o = 0; o < nout; o++)
    if (!ref_path(path, sizeof path, dir, k, o, "") || !ref_path(tmp, sizeof tmp, dir, k, o, ".tmp") ||
        mi_npy_save(tmp, a[o], &e) != MI_OK || rename(tmp, path) != 0)
      return;
  if (device && k == 0 && snprintf(path, sizeof path, "%s/device", dir) < (int)sizeof path) {
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
  }
}

static int ref_marked_device(const char *dir) {
  char path[4200];
  FILE *f;
  if (snprintf(path, sizeof path, "%s/device", dir) >= (int)sizeof path || !(f = fopen(path, "r")))
    return 0;
  fclose(f);
  return 1;
}

/* The original's side: sample k's reference outputs, kept in the cache after first use: read from
 * the job's folder when another worker computed them, else computed (on the reference
 * interpreter, or by the job's session when its outputs are to be the reference) and written
 * there (the samples are the cache's, so an input pointer names its sample). */
static int32_t cached_ref_runner(void *ctx, const mi_array_t *const *in, int32_t nin,
                                 mi_array_t **out, int32_t nout, mi_error_t *err) {
  ref_ctx_t *rc_ = ctx;
  mi__config_cache_t *c = rc_->c;
  const mi_xf_samples_t *smp = c->samples;
  const char *dir = c->ref_dir && c->ref_dir[0] ? c->ref_dir : NULL;
  int32_t k = 0, rc;
  while (k < smp->sample_count && (const mi_array_t *const *)smp->inputs + (size_t)k * nin != in) k++;
  if (k == smp->sample_count) return mi_ref_run(c->g, in, nin, out, nout, err);
  if (!c->ref_out && !(c->ref_out = calloc((size_t)smp->sample_count * nout + 1, sizeof *c->ref_out)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "accuracy: out of memory");
  if (!c->ref_out[(size_t)k * nout]) {
    mi_array_t **slot = c->ref_out + (size_t)k * nout;
    if (dir && ref_load(dir, k, slot, nout) == MI_OK) {
      c->ref_is_device = ref_marked_device(dir);
    } else {
      int device = dir && c->ref_device && rc_->s;
      if ((rc = device ? mi_session_run(rc_->s, in, nin, slot, nout, err)
                       : mi_ref_run(c->g, in, nin, slot, nout, err)))
        return rc;
      c->ref_is_device = device;
      if (dir) ref_store(dir, k, slot, nout, device);
    }
  }
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
  ref_ctx_t rctx;
  int32_t rc;
  if ((rc = mi_session_create(run_graph, pl, dev, so, &s, err))) return rc;
  rctx.c = cache;
  rctx.s = s;
  rc = mi_xf_compare_runs(cache->g, cached_ref_runner, &rctx, session_runner, s, cache->samples,
                          &met, err);
  mi_session_destroy(s);
  if (rc) return rc;
  *rel_l2 = met.rel_l2;
  *worst = met.worst_rel_l2;
  *top1 = met.top1;
  return MI_OK;
}
