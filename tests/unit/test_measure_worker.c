/* test_measure_worker.c - crash isolation with the npu-stub's injected faults: a crashing,
 * hanging or wrong device fails with its reason, is quarantined after K failures in a row, and
 * the host goes on measuring on the other devices. */
#include <time.h>
#include <unistd.h>

#include "test_measure_util.h"

static char g_dirs[512];

static mi_worker_pool_t *pool(const char *fault, double timeout) {
  static char env[64];
  const char *envv[2] = {env, NULL};
  mi_worker_options_t o;
  mi_worker_pool_t *p = NULL;
  mi_error_t err;
  snprintf(env, sizeof env, "MI_NPU_FAULT=%s", fault);
  mi_worker_options_default(&o);
  o.plugin_dirs = g_dirs;
  o.timeout_s = timeout;
  o.quarantine_after = 2;
  o.env = fault[0] ? envv : NULL;
  CHECK(mi_worker_pool_create(&o, &p, &err) == MI_OK, "%s", err.message);
  return p;
}

static void quick(mi_measure_options_t *mo) {
  mi_measure_options_default(mo);
  mo->warmup = 1;
  mo->max_repeats = 5;
  mo->max_remeasure = 0;
}

int main(void) {
  const char *build = getenv("MI_BUILD");
  char dir[64], model[128];
  mi_graph_t *g = tm_conv_relu();
  mi_measure_options_t mo;
  mi_profile_t *pr = NULL;
  mi_worker_pool_t *p;
  mi_error_t err;
  int32_t rc;
  if (!build || !g || !tu_tempdir(dir, sizeof dir, "worker")) {
    fprintf(stderr, "MI_BUILD is not set or setup failed\n");
    return 1;
  }
  snprintf(g_dirs, sizeof g_dirs, "%s/plugins", build);
  snprintf(model, sizeof model, "%s/m.onnx", dir);
  CHECK(mi_onnx_save(g, model, &err) == MI_OK, "%s", err.message);
  quick(&mo);

  /* No fault: both devices measure, the NPU passes the reference check. */
  p = pool("", 30);
  rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 1, &pr, &err);
  CHECK(rc == MI_OK && pr && pr->checked && pr->check_ok && pr->layer_count == 2 &&
            pr->latency.stats.n >= 5 && pr->latency.stats.median > 0 && pr->has_energy &&
            pr->energy_modeled && pr->clock == MI_CLOCK_DEVICE,
        "npu: %s", err.message);
  mi_profile_destroy(pr);
  rc = mi_worker_profile(p, "nosuch:0", model, NULL, &mo, 0, &pr, &err);
  CHECK(rc == MI_ERR_NOT_FOUND && !pr, "unknown device: %d %s", rc, err.message);
  mi_worker_pool_destroy(p);

  /* Crash: signal reported, quarantined after two, the CPU device still measures. */
  p = pool("crash", 30);
  rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
  CHECK(rc == MI_ERR_CRASHED && !pr && strstr(err.message, "signal 11"), "crash: %s", err.message);
  CHECK(!mi_worker_quarantined(p, "npu-stub:0"), "one failure is not quarantine");
  rc = mi_worker_profile(p, "blis-cpu:0", model, NULL, &mo, 1, &pr, &err);
  CHECK(rc == MI_OK && pr && pr->check_ok && pr->layer_count == 2, "blis after crash: %s",
        err.message);
  mi_profile_destroy(pr);
  rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
  CHECK(rc == MI_ERR_CRASHED, "second crash: %s", err.message);
  CHECK(mi_worker_quarantined(p, "npu-stub:0"), "quarantined after two");
  rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED && strstr(err.message, "quarantined"), "skip: %s", err.message);
  rc = mi_worker_profile(p, "blis-cpu:0", model, NULL, &mo, 0, &pr, &err);
  CHECK(rc == MI_OK && pr, "blis goes on: %s", err.message);
  mi_profile_destroy(pr);
  mi_worker_pool_destroy(p);

  /* Hang: killed at the deadline. */
  p = pool("hang", 1.0);
  {
    time_t t0 = time(NULL);
    rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
    CHECK(rc == MI_ERR_TIMEOUT && !pr && strstr(err.message, "timed out"), "hang: %s",
          err.message);
    CHECK(time(NULL) - t0 < 10, "the deadline holds");
  }
  mi_worker_pool_destroy(p);

  /* Wrong results: caught by the reference check. */
  p = pool("wrong", 30);
  rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 1, &pr, &err);
  CHECK(rc == MI_ERR_CONSTRAINT && !pr && strstr(err.message, "wrong results"), "wrong: %s",
        err.message);
  mi_worker_pool_destroy(p);
  mi_worker_pool_destroy(NULL);

  mi_graph_destroy(g);
  remove(model);
  rmdir(dir);
  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
