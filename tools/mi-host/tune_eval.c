/* tune_eval.c - mi-host tune's evaluator: a point becomes a transformed graph and session
 * options, measured with the measurement protocol, with its accuracy drop on the reference path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_transform.h"
#include "tune.h"

int32_t mi_tune_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                         mi_error_t *err) {
  mi_tune_task_t *t = ctx;
  mi_xf_config_t *xc = NULL;
  mi_graph_t *xg = NULL;
  mi_space_hw_t *hw = NULL;
  mi_profile_t *prof = NULL;
  mi_xf_apply_opts_t ao;
  mi_xf_metrics_t met;
  mi_measure_options_t mo;
  int32_t rc;
  if ((rc = mi_space_xf_config(s, pt, &xc, err)) != MI_OK) goto done;
  memset(&ao, 0, sizeof ao);
  ao.calib = t->samples;
  ao.variants = t->variants;
  ao.variant_count = t->variant_count;
  if ((rc = mi_xf_apply(t->graph, xc, &ao, &xg, NULL, err)) != MI_OK) goto done;
  if ((rc = mi_space_hw_create(s, pt, &hw, err)) != MI_OK) goto done;
  mi_measure_options_default(&mo);
  mo.warmup = t->warmup;
  mo.min_repeats = t->repeats;
  mo.max_repeats = t->repeats * 2;
  mo.budget_s = 5;
  rc = mi_profile_run(xg, t->plugin, t->device, mi_space_hw_options(hw), &mo, 0, &prof, err);
  if (rc != MI_OK) goto done;
  obj[MI_OBJ_LATENCY] = prof->latency.stats.median * 1e3;
  obj[MI_OBJ_MEMORY] = prof->peak_memory_source ? (double)prof->peak_memory_bytes / 1048576.0 : NAN;
  obj[MI_OBJ_ENERGY] = prof->has_energy ? prof->energy_j * 1e3 : NAN;
  t->energy_modeled |= prof->has_energy && prof->energy_modeled;
  /* Accuracy drop: relative L2 error of the transformed model against the original, both on
   * the reference interpreter (the device's own numerics are checked by conformance). */
  if ((rc = mi_xf_compare(t->graph, xg, t->samples, &met, err)) != MI_OK) goto done;
  obj[MI_OBJ_ACCURACY] = met.rel_l2;
done:
  mi_profile_destroy(prof);
  mi_space_hw_destroy(hw);
  mi_graph_destroy(xg);
  mi_xf_config_destroy(xc);
  return rc;
}
