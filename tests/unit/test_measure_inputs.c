/* test_measure_inputs.c - what a configuration job's runs are fed: the job's calibration
 * samples or fixed input values (an int64 input random data cannot fill, as Silero VAD's sample
 * rate), for the timed runs, the check and the interleaved job alike; and the accuracy bound that
 * spares an infeasible configuration the reference check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "measure/measure_internal.h"
#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "test_util.h"

static const char *build;
static char dir[64], model[128], conv[128], calib[160], srfile[200], fixed[240];
static char g_dirs[512];
static mi_measure_options_t mo;
static mi_error_t err;

/* y = x * float(16000 / sr): sr = 0 (what zero-filled int64 data gives) is an integer
 * division by zero on the reference interpreter, which runs it as host code on every device;
 * sr = 16000 gives y = x. As Silero VAD, whose branch on sr fails on 0. */
static mi_graph_t *sr_model(void) {
  mi_graph_t *g = mi_graph_create("sr_scale");
  int64_t xd[2] = {1, 4}, k = 16000;
  int32_t x, sr, c, q, qf, y, in[2], n;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd);
  sr = mi_graph_add_tensor(g, "sr", MI_DTYPE_INT64, 0, NULL);
  c = mi_graph_add_const_i64(g, "k", 1, &k);
  q = mi_graph_add_tensor(g, "q", MI_DTYPE_INT64, -1, NULL);
  qf = mi_graph_add_tensor(g, "qf", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_input(g, x);
  mi_graph_add_input(g, sr);
  in[0] = c;
  in[1] = sr;
  mi_graph_add_node(g, "Div", "div", 2, in, 1, &q);
  n = mi_graph_add_node(g, "Cast", "cast", 1, &q, 1, &qf);
  mi_node_set_int(g, n, "to", MI_DTYPE_FLOAT32);
  in[0] = x;
  in[1] = qf;
  mi_graph_add_node(g, "Mul", "mul", 2, in, 1, &y);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, NULL) || mi_graph_infer_shapes(g, NULL)) {
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* x[1,8,8,8] -> Conv 3x3 (16) -> Relu -> Conv 1x1 (8) -> y: the first conv can be pruned. */
static mi_graph_t *two_convs(void) {
  mi_graph_t *g = mi_graph_create("two_convs");
  int64_t xd[4] = {1, 8, 8, 8}, w1d[4] = {16, 8, 3, 3}, w2d[4] = {8, 16, 1, 1}, k[2] = {3, 3};
  int64_t pads[4] = {1, 1, 1, 1};
  float *w = malloc(16 * 8 * 9 * sizeof *w);
  int32_t x, w1, w2, c1, r1, y, in[2], n;
  for (int i = 0; i < 16 * 8 * 9; i++) w[i] = (float)((i * 37) % 19 - 9) * 0.05f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  w1 = mi_graph_add_const_f32(g, "w1", 4, w1d, w);
  w2 = mi_graph_add_const_f32(g, "w2", 4, w2d, w);
  free(w);
  c1 = mi_graph_add_tensor(g, "c1", MI_DTYPE_FLOAT32, -1, NULL);
  r1 = mi_graph_add_tensor(g, "r1", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_input(g, x);
  in[0] = x;
  in[1] = w1;
  n = mi_graph_add_node(g, "Conv", "conv1", 2, in, 1, &c1);
  mi_node_set_ints(g, n, "kernel_shape", 2, k);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_graph_add_node(g, "Relu", "relu", 1, &c1, 1, &r1);
  in[0] = r1;
  in[1] = w2;
  n = mi_graph_add_node(g, "Conv", "conv2", 2, in, 1, &y);
  k[0] = k[1] = 1;
  mi_node_set_ints(g, n, "kernel_shape", 2, k);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, NULL) || mi_graph_infer_shapes(g, NULL)) {
    mi_graph_destroy(g);
    return NULL;
  }
  return g;
}

static int save_npy(const char *path, int32_t dt, int32_t rank, const int64_t *dims,
                    const void *data) {
  mi_array_t *a = mi_array_create(dt, rank, dims);
  int ok = a != NULL;
  if (a) memcpy(a->data, data, a->nbytes);
  ok = ok && mi_npy_save(path, a, &err) == MI_OK;
  mi_array_destroy(a);
  return ok;
}

static void setup(void) {
  mi_graph_t *g = sr_model(), *cg = two_convs();
  char p[256];
  int64_t xd[2] = {1, 4}, sr = 16000;
  float xs[4] = {0.5f, -1, 2, 0.25f};
  build = getenv("MI_BUILD");
  REQUIRE(build && g && cg && tu_tempdir(dir, sizeof dir, "inputs"), "MI_BUILD unset or setup failed");
  snprintf(g_dirs, sizeof g_dirs, "%s/plugins", build);
  snprintf(model, sizeof model, "%s/sr.onnx", dir);
  snprintf(conv, sizeof conv, "%s/conv.onnx", dir);
  REQUIRE(mi_onnx_save(g, model, &err) == MI_OK && mi_onnx_save(cg, conv, &err) == MI_OK, "%s",
          err.message);
  /* A calibration folder as tools/bench/tune_real.sh writes Silero's: a subfolder per input. */
  snprintf(calib, sizeof calib, "%s/calib", dir);
  mkdir(calib, 0700);
  for (int k = 0; k < 2; k++) {
    snprintf(p, sizeof p, "%s/x", calib);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/x/%d.npy", calib, k);
    REQUIRE(save_npy(p, MI_DTYPE_FLOAT32, 2, xd, xs), "%s", err.message);
    snprintf(p, sizeof p, "%s/sr", calib);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/sr/%d.npy", calib, k);
    REQUIRE(save_npy(p, MI_DTYPE_INT64, 0, NULL, &sr), "%s", err.message);
  }
  snprintf(srfile, sizeof srfile, "%s/sr.npy", dir);
  REQUIRE(save_npy(srfile, MI_DTYPE_INT64, 0, NULL, &sr), "%s", err.message);
  snprintf(fixed, sizeof fixed, "sr=%s", srfile);
  mi_graph_destroy(g);
  mi_graph_destroy(cg);
  mi_measure_options_default(&mo);
  mo.warmup = 1;
  mo.max_repeats = 5;
  mo.max_remeasure = 0;
}

static void teardown(void) {
  if (dir[0]) tu_rmtree(dir);
}

static mi_worker_pool_t *pool(void) {
  mi_worker_options_t o;
  mi_worker_pool_t *p = NULL;
  mi_worker_options_default(&o);
  o.plugin_dirs = g_dirs;
  o.timeout_s = 60;
  CHECK(mi_worker_pool_create(&o, &p, &err) == MI_OK, "%s", err.message);
  return p;
}

static void config(mi_worker_config_t *wc, mi_session_options_t *so) {
  memset(so, 0, sizeof *so);
  so->struct_size = sizeof *so;
  so->allow_host_fallback = 1;
  memset(wc, 0, sizeof *wc);
  wc->struct_size = sizeof *wc;
  wc->model = model;
  wc->so = so;
  wc->accuracy = 1;
}

static void calibration_samples(void) {
  /* The timed runs, the accuracy and the check all take the calibration folder's sr = 16000;
   * zero-filled int64 data (the old timed runs') failed with a division by zero. */
  mi_worker_pool_t *p = pool();
  mi_session_options_t so;
  mi_worker_config_t wc;
  mi_worker_config_result_t res;
  mi_profile_t *pr = NULL;
  config(&wc, &so);
  wc.calibration = calib;
  wc.inputs = "x:1x4;sr:"; /* as the tuner writes every input's shape: a scalar's is empty */
  CHECK(mi_worker_profile_config(p, "blis-cpu:0", &wc, &mo, 1, &pr, &res, &err) == MI_OK && pr,
        "calibration: %s", err.message);
  CHECK(pr && res.has_accuracy && res.rel_l2 < 1e-6 && pr->checked && pr->check_ok,
        "accuracy %d %g, checked %d", res.has_accuracy, res.rel_l2, pr ? pr->checked : -1);
  mi_profile_destroy(pr);
  mi_worker_pool_destroy(p);
}

static void fixed_value(void) {
  /* sr given as a fixed value (a .npy file), x random: as mi-host compare --input sr=FILE. */
  mi_worker_pool_t *p = pool();
  mi_session_options_t so;
  mi_worker_config_t wc;
  mi_profile_t *pr = NULL;
  config(&wc, &so);
  wc.fixed_inputs = fixed;
  CHECK(mi_worker_profile_config(p, "blis-cpu:0", &wc, &mo, 1, &pr, NULL, &err) == MI_OK && pr,
        "fixed: %s", err.message);
  mi_profile_destroy(pr);
  /* Without it the sample rate is zero-filled and the model fails, saying where. */
  wc.fixed_inputs = NULL;
  CHECK(mi_worker_profile_config(p, "blis-cpu:0", &wc, &mo, 1, &pr, NULL, &err) != MI_OK && !pr,
        "no sample rate: the model should fail");
  mi_worker_pool_destroy(p);
}

static void interleaved(void) {
  /* The interleaved job (mi-host compare's rounds) runs and checks on the same inputs. */
  mi_worker_pool_t *p = pool();
  mi_session_options_t so;
  mi_worker_config_t wc[2];
  mi__interleave_reply_t rep;
  config(&wc[0], &so);
  wc[0].calibration = calib;
  wc[1] = wc[0];
  CHECK(mi__worker_interleave(p, "blis-cpu:0", wc, 2, &mo, 7, 1, &rep, &err) == MI_OK &&
            rep.count == 2 && rep.median_s[0] > 0,
        "interleave: %s", err.message);
  wc[0].calibration = wc[1].calibration = NULL;
  wc[0].fixed_inputs = wc[1].fixed_inputs = fixed;
  CHECK(mi__worker_interleave(p, "blis-cpu:0", wc, 2, &mo, 7, 1, &rep, &err) == MI_OK,
        "interleave, fixed: %s", err.message);
  mi_worker_pool_destroy(p);
}

static void accuracy_bound(void) {
  /* Half the first conv's filters pruned: an accuracy drop far over 5%. With the recipe's 1% bound
   * the configuration is infeasible anyway and the reference check is skipped (checked 0);
   * without a bound the check still runs to tell a wrong kernel from the lossy transform. */
  static const char text[] = "version: 1\ndefaults:\n  prune: 0.5\n";
  mi_worker_pool_t *p = pool();
  mi_session_options_t so;
  mi_worker_config_t wc;
  mi_worker_config_result_t res;
  mi_xf_config_t *xc = NULL;
  mi_profile_t *pr = NULL;
  REQUIRE(mi_xf_config_parse(text, strlen(text), "prune", &xc, &err) == MI_OK, "%s", err.message);
  config(&wc, &so);
  wc.model = conv;
  wc.xf = xc;
  CHECK(mi_worker_profile_config(p, "blis-cpu:0", &wc, &mo, 0, &pr, &res, &err) == MI_OK && pr,
        "no bound: %s", err.message);
  CHECK(pr && res.rel_l2 > 0.05 && pr->checked && pr->check_ok, "no bound: drop %g checked %d",
        res.rel_l2, pr ? pr->checked : -1);
  mi_profile_destroy(pr);
  wc.accuracy_bound = 0.01;
  CHECK(mi_worker_profile_config(p, "blis-cpu:0", &wc, &mo, 0, &pr, &res, &err) == MI_OK && pr,
        "bound: %s", err.message);
  CHECK(pr && res.rel_l2 > 0.01 && !pr->checked, "bound: drop %g checked %d", res.rel_l2,
        pr ? pr->checked : -1);
  mi_profile_destroy(pr);
  mi_xf_config_destroy(xc);
  mi_worker_pool_destroy(p);
}

/* mi-host compare's output (JSON) with the given extra options, into out; its exit status. */
static int compare_cli(const char *extra, char *out, size_t cap) {
  char cmd[1024];
  FILE *f;
  size_t n;
  snprintf(cmd, sizeof cmd,
           "%s/bin/mi-host --plugins %s/plugins --json compare --model %s "
           "--device blis-cpu:0 --default --default --min-rounds 2 --max-rounds 2 --budget-s 20 "
           "%s 2>&1",
           build, build, model, extra);
  if (!(f = popen(cmd, "r"))) return -1;
  n = fread(out, 1, cap - 1, f);
  out[n] = '\0';
  return pclose(f);
}

static void compare_options(void) {
  /* mi-host compare feeds an int64 input as mi-run, profile and accuracy do: --input NAME=FILE
   * (the other inputs random) or --calib DIR; without either the comparison fails saying which
   * input needs a value. */
  char out[8192], opt[512];
  snprintf(opt, sizeof opt, "--input %s", fixed);
  CHECK(compare_cli(opt, out, sizeof out) == 0 && strstr(out, "\"ok\":true"), "--input: %s", out);
  snprintf(opt, sizeof opt, "--calib %s", calib);
  CHECK(compare_cli(opt, out, sizeof out) == 0 && strstr(out, "\"ok\":true"), "--calib: %s", out);
  CHECK(compare_cli("", out, sizeof out) != 0 && strstr(out, "int64") && strstr(out, "fixed value"),
        "none: %s", out);
  snprintf(opt, sizeof opt, "--input sr=%s/nosuch.npy", dir);
  CHECK(compare_cli(opt, out, sizeof out) != 0 && strstr(out, "nosuch.npy"), "missing file: %s",
        out);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(calibration_samples),
    TU_CASE(fixed_value),
    TU_CASE(interleaved),
    TU_CASE(accuracy_bound),
    TU_CASE(compare_options),
};

TU_MAIN(setup, teardown)
