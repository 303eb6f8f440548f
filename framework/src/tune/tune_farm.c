/* tune_farm.c - mi-host tune --agents: each evaluation of the search is queued as a farm job
 * (the model as a content-addressed blob, both canonical configuration texts) and the search
 * proceeds when an agent answers; the agent writes the measurement into the shared history. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_farm.h"
#include "tune/tune_farm.h"

/* How long one queued measurement may wait for an agent before the trial counts as failed. */
enum { FARM_WAIT_S = 600 };

int32_t mi_tune_farm_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                              mi_error_t *err) {
  mi_tune_task_t *t = ctx;
  mi_xf_config_t *xc = NULL;
  mi_space_hw_t *hw = NULL;
  char *hw_text = NULL, *xf_text = NULL;
  mi_farm_t *f = NULL;
  mi_farm_job_t job;
  mi_farm_result_t res;
  mi_record_t base;
  int64_t id = 0;
  int32_t rc;
  if (!t->history || !mi_history_is_url(t->recipe->history))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "tune: --agents needs a postgresql:// history");
  if ((rc = mi_space_xf_config(s, pt, &xc, err)) != MI_OK ||
      (rc = mi_xf_config_canonical(xc, &xf_text, err)) != MI_OK ||
      (rc = mi_space_hw_create(s, pt, &hw, err)) != MI_OK)
    goto done;
  if (!(hw_text = mi_config_canonical(mi_space_hw_options(hw)))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tune: out of memory");
    goto done;
  }
  base = *t->base;
  base.run_id = t->run_id;
  base.config_canonical = hw_text;
  base.model_config_canonical = xf_text;
  memset(&job, 0, sizeof job);
  snprintf(job.spec, sizeof job.spec, "%s", t->spec);
  job.inputs = (char *)t->inputs;
  job.seed = t->recipe->seed;
  job.samples = 2;
  job.accuracy = 1;
  job.warmup = t->warmup;
  job.repeats = t->repeats;
  /* A connection per evaluation: a thread per device, and a measurement costs far more. */
  if ((rc = mi_farm_open(t->recipe->history, 1, &f, err)) != MI_OK ||
      (rc = mi_farm_submit(f, &base, t->model_path, &job, &id, err)) != MI_OK ||
      (rc = mi_farm_result(f, id, FARM_WAIT_S, &res, err)) != MI_OK)
    goto done;
  if (res.state != 2 || !res.ok) {
    rc = mi_errorf(err, MI_ERR_DEVICE, "%s", res.failure[0] ? res.failure : "failed on the farm");
    goto done;
  }
  obj[MI_OBJ_LATENCY] = res.latency_ms;
  obj[MI_OBJ_MEMORY] = res.memory_mb;
  obj[MI_OBJ_ENERGY] = res.energy_mj;
  obj[MI_OBJ_ACCURACY] = res.rel_l2;
  t->energy_modeled |= res.energy_modeled;
  t->recorded++;
done:
  mi_farm_close(f);
  mi_space_hw_destroy(hw);
  mi_xf_config_destroy(xc);
  free(hw_text);
  free(xf_text);
  return rc;
}
