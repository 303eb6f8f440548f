/* agent_submit.c - mi-agent submit: queues measurements of one model on one kind of device for
 * the farm (the jobs mi-host tune --agents queues, without a search), optionally waiting for
 * them; also `mi-agent setup`, which makes the tables and the agent role. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int mi_agent_submit(const mi_agent_args_t *a) {
  mi_registry_t *reg = mi_registry_create();
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_device_desc_t desc;
  mi_farm_t *f = NULL;
  mi_history_t *h = NULL;
  mi_record_t base;
  mi_farm_job_t job;
  mi_error_t err;
  char mhash[17], dhash[17], hw[256] = "default";
  int64_t *ids = NULL;
  int32_t ok = 0, failed = 0;
  int rc = 1;
  double t0;
  mi_error_clear(&err);
  memset(&base, 0, sizeof base);
  memset(&job, 0, sizeof job);
  if (!a->model || !a->device) {
    fprintf(stderr, "mi-agent: submit needs --model FILE --device PLUGIN:INDEX\n");
    goto done;
  }
  /* The device is named by the hash of its declared features: any host with the same kind of
   * device can take the job. */
  if (!reg || mi_registry_scan(reg, a->plugins, &err) != MI_OK ||
      mi_registry_device(reg, a->device, &p, &dev, &err) != MI_OK ||
      mi_plugin_device_info(p, dev, &desc, &err) != MI_OK || mi_file_hash(a->model, mhash, &err) != MI_OK)
    goto done;
  mi_device_hash(&desc, dhash);
  if (a->knob) snprintf(hw, sizeof hw, "device{%s}", a->knob);
  if (mi_farm_open(a->db, 1, &f, &err) != MI_OK || mi_history_open(a->db, &h, &err) != MI_OK ||
      mi_history_begin_run(h, "mi-agent submit", a->model, &base.run_id, &err) != MI_OK)
    goto done;
  base.model_hash = mhash;
  base.model_name = a->model;
  base.batch = 1;
  base.input_shapes = a->inputs ? a->inputs : "";
  base.device_spec = a->device;
  base.device_name = desc.name;
  base.device_hash = dhash;
  base.config_canonical = hw;
  snprintf(job.spec, sizeof job.spec, "%s", a->device);
  job.inputs = (char *)a->inputs;
  job.samples = 2;
  job.warmup = 1;
  job.repeats = a->repeats;
  if (!(ids = calloc((size_t)a->count + 1, sizeof *ids))) goto done;
  t0 = mi_now_s();
  for (int32_t i = 0; i < a->count; i++) {
    job.seed = (uint64_t)i;
    if (mi_farm_submit(f, &base, a->model, &job, &ids[i], &err) != MI_OK) goto done;
  }
  printf("submitted %d job(s)\n", (int)a->count);
  if (a->wait) {
    for (int32_t i = 0; i < a->count; i++) {
      mi_farm_result_t r;
      if (mi_farm_result(f, ids[i], a->timeout_s, &r, &err) != MI_OK) goto done;
      if (r.state == 2 && r.ok) ok++;
      else
        failed++;
    }
    printf("done %d ok %d failed %d in %.3f s\n", (int)a->count, (int)ok, (int)failed, mi_now_s() - t0);
  }
  rc = failed ? 1 : 0;
done:
  if (rc && err.message[0]) fprintf(stderr, "mi-agent: %s\n", err.message);
  free(ids);
  mi_history_close(h);
  mi_farm_close(f);
  mi_registry_destroy(reg);
  return rc;
}
