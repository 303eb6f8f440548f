/* worker_accuracy.c - the accuracy of a measured configuration from the device's own outputs:
 * the configuration's session on the device, on each calibration sample, against the original
 * model on the reference interpreter. A device whose numerics are wrong (a broken INT8 or FP16
 * path, a kernel that writes nothing) shows it here, not only in a separate check. */
#include <stdlib.h>

#include "measure/measure_internal.h"
#include "metainfer/mi_transform.h"

static int32_t session_runner(void *ctx, const mi_array_t *const *in, int32_t nin,
                              mi_array_t **out, int32_t nout, mi_error_t *err) {
  return mi_session_run(ctx, in, nin, out, nout, err);
}

int32_t mi__device_accuracy(const mi_graph_t *orig, const mi_graph_t *run_graph, mi_plugin_t *pl,
                            uint32_t dev, const mi_session_options_t *so, const void *samples,
                            double *rel_l2, double *top1, mi_error_t *err) {
  mi_session_t *s = NULL;
  mi_xf_metrics_t met;
  int32_t rc;
  if ((rc = mi_session_create(run_graph, pl, dev, so, &s, err))) return rc;
  rc = mi_xf_compare_run(orig, session_runner, s, samples, &met, err);
  mi_session_destroy(s);
  if (rc) return rc;
  *rel_l2 = met.rel_l2;
  *top1 = met.top1;
  return MI_OK;
}
