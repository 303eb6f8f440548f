/* test_runtime_npu.c - the deployment runtime on the simulated NPU: drift (MI_NPU_FAULT=drift)
 * and thermal throttling are detected within a bounded number of runs, the configuration
 * switches and latency recovers; noise alone never switches; stack mismatch policies. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"

#include "test_util.h"

/* REQUIRE that call, which reports into e_, returns MI_OK, saying e_'s message. */
#define OK(call)                                \
  do {                                          \
    mi_error_t e_ = {0, ""};                    \
    REQUIRE((call) == MI_OK, "%s", e_.message); \
  } while (0)

static char dir[] = "/tmp/mi_rt_npuXXXXXX";
static char plugins[512];

static const char *devfile(const char *name, const char *extra) {
  static char path[600];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  REQUIRE((f = fopen(path, "w")));
  fprintf(f, "name = npu-gen1\n%s", extra);
  fclose(f);
  setenv("MI_NPU_DEVICES", path, 1);
  return path;
}

static mi_registry_t *registry(void) {
  mi_registry_t *r = mi_registry_create();
  mi_error_t err;
  REQUIRE(r && mi_registry_scan(r, plugins, &err) == MI_OK);
  REQUIRE(mi_registry_find(r, "npu-stub"));
  return r;
}

/* One configuration per DVFS level, measured like the tuner does (the model side is applied,
 * then mi_profile_run on the device clock), written as a table with levels[0] chosen. */
static void make_table(const char *path, const int *levels, int n, const char *stack_hash) {
  mi_registry_t *reg = registry();
  mi_plugin_t *p = mi_registry_find(reg, "npu-stub");
  mi_graph_t *g = NULL;
  mi_space_t *s = NULL;
  mi_xf_samples_t *smp = NULL;
  mi_device_desc_t desc;
  mi_deploy_table_t t;
  mi_deploy_entry_t e;
  char model[600], stack[512], hash[17];
  int32_t dvfs = -1, *pt;
  memset(&t, 0, sizeof t);
  memset(&e, 0, sizeof e);
  snprintf(model, sizeof model, "%s/net.onnx", dir);
  OK(mi_onnx_load(model, &g, &e_));
  OK(mi_graph_toposort(g, &e_));
  OK(mi_graph_infer_shapes(g, &e_));
  OK(mi_space_create(g, p, 0, NULL, &s, &e_));
  OK(mi_xf_samples_random(g, 2, 1, &smp, &e_));
  OK(mi_plugin_device_info(p, 0, &desc, &e_));
  mi_stack_describe(p->name, p->version, &desc, stack, sizeof stack, hash);
  for (int32_t d = 0; d < mi_space_dim_count(s); d++)
    if (strcmp(mi_space_dim_name(s, d), "device.dvfs_level") == 0) dvfs = d;
  REQUIRE(dvfs >= 0 && (pt = calloc((size_t)mi_space_dim_count(s), sizeof *pt)));
  e.model = "net.onnx";
  e.device = "npu-stub:0";
  e.assigned = 1;
  e.stack = stack;
  e.stack_hash = stack_hash ? (char *)stack_hash : hash;
  e.config_count = n;
  REQUIRE((e.configs = calloc((size_t)n, sizeof *e.configs)));
  for (int i = 0; i < n; i++) {
    mi_deploy_config_t *c = &e.configs[i];
    mi_xf_config_t *xc = NULL;
    mi_graph_t *xg = NULL;
    mi_space_hw_t *hw = NULL;
    mi_profile_t *prof = NULL;
    mi_measure_options_t mo;
    mi_xf_apply_opts_t ao;
    char *text = NULL, lv[8];
    mi_space_default(s, pt);
    snprintf(lv, sizeof lv, "%d", levels[i]);
    for (int32_t v = 0; v < mi_space_dim_size(s, dvfs); v++)
      if (strcmp(mi_space_dim_label(s, dvfs, v), lv) == 0) pt[dvfs] = v;
    OK(mi_space_repair(s, pt, NULL, &e_));
    snprintf(c->id, sizeof c->id, "%016llx", (unsigned long long)mi_space_hash(s, pt));
    OK(mi_space_canonical(s, pt, &text, &e_));
    c->keys = calloc(256, sizeof *c->keys);
    c->values = calloc(256, sizeof *c->values);
    for (char *sv = NULL, *l = strtok_r(text, "\n", &sv); l; l = strtok_r(NULL, "\n", &sv)) {
      char *eq = strchr(l, '=');
      REQUIRE(eq && c->kv_count < 256);
      *eq = '\0';
      c->keys[c->kv_count] = strdup(l);
      c->values[c->kv_count++] = strdup(eq + 1);
    }
    free(text);
    OK(mi_space_xf_config(s, pt, &xc, &e_));
    memset(&ao, 0, sizeof ao);
    ao.calib = smp;
    OK(mi_xf_apply(g, xc, &ao, &xg, NULL, &e_));
    OK(mi_space_hw_create(s, pt, &hw, &e_));
    mi_measure_options_default(&mo);
    mo.warmup = 1;
    OK(mi_profile_run(xg, p, 0, mi_space_hw_options(hw), &mo, 0, &prof, &e_));
    REQUIRE(prof->clock == MI_CLOCK_DEVICE);
    for (int k = 0; k < MI_OBJ_COUNT; k++) c->measured[k] = NAN;
    c->measured[MI_OBJ_LATENCY] = prof->latency.stats.median * 1e3;
    c->measured[MI_OBJ_ENERGY] = prof->energy_j * 1e3;
    c->measured[MI_OBJ_ACCURACY] = 0;
    c->energy_modeled = 1;
    printf("  level %d: %s %.4f ms, %.3f W (modeled)\n", levels[i], c->id, c->measured[MI_OBJ_LATENCY],
           c->measured[MI_OBJ_ENERGY] / c->measured[MI_OBJ_LATENCY]);
    mi_profile_destroy(prof);
    mi_space_hw_destroy(hw);
    mi_graph_destroy(xg);
    mi_xf_config_destroy(xc);
  }
  t.version = 1;
  t.entry_count = 1;
  t.entries = &e;
  t.has_bound[MI_OBJ_LATENCY] = 1;
  t.bound[MI_OBJ_LATENCY] = 100;
  OK(mi_deploy_write(&t, path, &e_));
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < e.configs[i].kv_count; k++) {
      free(e.configs[i].keys[k]);
      free(e.configs[i].values[k]);
    }
    free(e.configs[i].keys);
    free(e.configs[i].values);
  }
  free(e.configs);
  free(pt);
  mi_xf_samples_destroy(smp);
  mi_space_destroy(s);
  mi_graph_destroy(g);
  mi_registry_destroy(reg);
}

typedef struct trace {
  double ms[600];
  double ref[600]; /* tuned latency of the configuration that ran */
  int switch_at[16];
  int switches;
} trace_t;

/* Runs n inferences on random inputs; records each latency and the runs after which the
 * configuration changed. */
static void run_n(mi_runtime_t *rt, int n, trace_t *tr) {
  const mi_graph_t *g = mi_runtime_graph(rt);
  mi_array_t *in[8] = {0}, *out[8] = {0};
  mi_runtime_info_t info;
  int before;
  REQUIRE(g->input_count <= 8 && g->output_count <= 8);
  for (int i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    REQUIRE((in[i] = mi_array_create(MI_DTYPE_FLOAT32, t->rank, t->dims)));
    mi_array_fill_random(in[i], 7 + (uint64_t)i);
  }
  mi_runtime_info(rt, &info);
  before = info.switches;
  for (int r = 0; r < n && r < 600; r++) {
    OK(mi_runtime_run(rt, (const mi_array_t *const *)in, g->input_count, out, g->output_count, &e_));
    for (int o = 0; o < g->output_count; o++) mi_array_destroy(out[o]);
    mi_runtime_info(rt, &info);
    tr->ms[r] = info.last_ms;
    tr->ref[r] = info.reference_ms;
    if (info.switches != before && tr->switches < 16) tr->switch_at[tr->switches++] = r;
    before = info.switches;
  }
  for (int i = 0; i < g->input_count; i++) mi_array_destroy(in[i]);
}

/* The runtime's long steps as its on_step hook reports them (mi-run restarts its guard's
 * deadline on each). */
static struct {
  int open, prepare, measure, other;
} steps;

static void count_step(void *user, const char *device, const char *step) {
  REQUIRE(user == &steps && !strncmp(device, "npu-stub:", 9));
  if (!strcmp(step, "open")) steps.open++;
  else if (!strcmp(step, "prepare"))
    steps.prepare++;
  else if (!strcmp(step, "measure"))
    steps.measure++;
  else
    steps.other++;
}

static mi_runtime_t *open_rt(const char *table, int32_t policy, int32_t expect) {
  mi_registry_t *reg = registry();
  mi_runtime_options_t o;
  mi_runtime_t *rt = NULL;
  mi_error_t err;
  mi_runtime_options_default(&o);
  o.stack_policy = policy;
  o.on_step = count_step;
  o.step_user = &steps;
  memset(&steps, 0, sizeof steps);
  REQUIRE(mi_runtime_open(table, reg, &o, &rt, &err) == expect);
  if (expect != MI_OK) {
    REQUIRE(rt == NULL);
    printf("  refused: %s\n", err.message);
  }
  mi_registry_destroy(reg); /* the runtime holds its own instance */
  return rt;
}

static int log_has(const char *event) {
  char path[600], line[2048], want[64];
  FILE *f;
  int n = 0;
  snprintf(path, sizeof path, "%s/decisions.jsonl", dir);
  snprintf(want, sizeof want, "\"event\":\"%s\"", event);
  if (!(f = fopen(path, "r"))) return 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, want) != NULL;
  fclose(f);
  return n;
}

static void test_noise(const char *table) {
  static const int lv[] = {4, 2};
  trace_t tr;
  mi_runtime_info_t info;
  mi_runtime_t *rt;
  printf("noise 4%%:\n");
  devfile("npu-noisy.conf", "noise = 0.04\nseed = 9\n");
  make_table(table, lv, 2, NULL);
  memset(&tr, 0, sizeof tr);
  rt = open_rt(table, MI_STACK_USE, MI_OK);
  run_n(rt, 300, &tr);
  mi_runtime_info(rt, &info);
  printf("  300 runs: %d alarms, %d switches, statistic %.3f\n", info.alarms, info.switches, info.statistic);
  REQUIRE(info.alarms == 0 && info.switches == 0 && info.stack_mismatch == 0);
  mi_runtime_close(rt);
}

static void test_drift(const char *table) {
  static const int lv[] = {4, 3, 2};
  trace_t tr;
  mi_runtime_info_t info;
  mi_runtime_t *rt;
  mi_deploy_table_t *t = NULL;
  int s0;
  printf("drift fault:\n");
  devfile("npu-drift.conf", "noise = 0.02\n");
  make_table(table, lv, 3, NULL);
  setenv("MI_NPU_FAULT", "drift", 1);
  memset(&tr, 0, sizeof tr);
  rt = open_rt(table, MI_STACK_USE, MI_OK);
  run_n(rt, 160, &tr);
  mi_runtime_info(rt, &info);
  unsetenv("MI_NPU_FAULT");
  printf("  %d alarms, %d switches (first after run %d), %d re-adaptations\n", info.alarms,
         info.switches, tr.switches ? tr.switch_at[0] : -1, info.readaptations);
  REQUIRE(tr.switches >= 1);
  s0 = tr.switch_at[0];
  printf("  latency %.4f (run 0) -> %.4f (run %d) -> %.4f (run %d)\n", tr.ms[0], tr.ms[s0], s0,
         tr.ms[s0 + 1], s0 + 1);
  /* Detected within a bounded number of runs: not before a window is full, and well before the
   * drift doubles the latency. */
  REQUIRE(s0 >= 4 && s0 <= 40);
  REQUIRE(tr.ms[s0] > 1.1 * tr.ms[0]);
  /* Recovered: the run after the switch is back at the new configuration's tuned latency. */
  REQUIRE(tr.ms[s0] > 1.1 * tr.ref[s0 - 1] && tr.ref[s0 + 1] != tr.ref[s0 - 1]);
  REQUIRE(tr.ms[s0 + 1] < 1.08 * tr.ref[s0 + 1]);
  /* The drift continues on every configuration: the front is used up, then re-adaptation
   * measures neighbours, adopts one and rewrites the table atomically. */
  REQUIRE(info.readaptations >= 1 && log_has("drift") >= 3 && log_has("switch") >= 2);
  REQUIRE(log_has("readapt") >= 1 && log_has("table_written") >= 1);
  /* Every step of the reactions was reported, not only the opening: one prepare per switch
   * (and the opening), one measure per re-adaptation candidate, one device open per switch. A
   * reaction reported as one step was killed by mi-run's guard as a hung run on OpenCL and
   * Vulkan, where preparing a configuration compiles its kernels. */
  printf("  steps: %d open, %d prepare, %d measure\n", steps.open, steps.prepare,
         steps.measure);
  REQUIRE(steps.prepare >= 1 + info.switches && steps.open >= 1 + info.switches);
  REQUIRE(steps.measure >= log_has("readapt_measured") && steps.measure >= 2 && !steps.other);
  OK(mi_deploy_load(table, &t, &e_));
  /* The adopted configuration leads the rewritten table; it may be one the table held already
   * (its older copy leaves the list: since the session fuses a Gemm's activation, npu-stub's MLP
   * re-adapts back to a tuned level), so no configuration is lost, none need be added. */
  REQUIRE(t->entries[0].config_count >= 3);
  REQUIRE(t->has_bound[MI_OBJ_LATENCY] && t->bound[MI_OBJ_LATENCY] == 100);
  mi_runtime_close(rt);
  mi_deploy_destroy(t);
  {
    DIR *d = opendir(dir);
    struct dirent *de;
    REQUIRE(d);
    while ((de = readdir(d))) REQUIRE(!strstr(de->d_name, ".tmp."));
    closedir(d);
  }
}

static void test_thermal(const char *table) {
  static const int lv[] = {4, 3};
  trace_t tr;
  mi_runtime_info_t info;
  mi_runtime_t *rt;
  double tail = 0;
  int s0;
  printf("thermal throttling:\n");
  /* Tuned on a cool device (the figures are the unthrottled clock), deployed on a hot one:
   * 72 C/W puts level 4 (about 0.97 W modeled) at a steady 95 C, above the 85 C throttle point,
   * and level 3 (0.72 W) at 77 C, below it. Throttled, level 4 runs at 600 MHz, slower than
   * level 3's 800 MHz: the switch is what brings latency back. */
  devfile("npu-cool.conf", "noise = 0.02\n");
  make_table(table, lv, 2, NULL);
  devfile("npu-hot.conf", "noise = 0.02\nthermal_tau_s = 0.0002\nthermal_r = 72\n");
  memset(&tr, 0, sizeof tr);
  rt = open_rt(table, MI_STACK_USE, MI_OK);
  run_n(rt, 300, &tr);
  mi_runtime_info(rt, &info);
  printf("  %d alarms, %d switches (first after run %d)\n", info.alarms, info.switches,
         tr.switches ? tr.switch_at[0] : -1);
  REQUIRE(tr.switches == 1 && info.readaptations == 0);
  s0 = tr.switch_at[0];
  for (int r = 200; r < 300; r++) tail += tr.ms[r] / 100;
  printf("  latency %.4f (run 0) -> %.4f (run %d) -> mean %.4f over runs 200..299\n", tr.ms[0],
         tr.ms[s0], s0, tail);
  REQUIRE(s0 >= 4 && s0 <= 80);
  REQUIRE(tr.ms[s0] > 1.3 * tr.ms[0]); /* the throttled clock */
  REQUIRE(tail < 0.85 * tr.ms[s0]);    /* recovered, and stays so: level 3 runs cool */
  REQUIRE(tail < 1.08 * tr.ref[299]);
  mi_runtime_close(rt);
}

static void test_stack(const char *table) {
  static const int lv[] = {4, 2};
  mi_runtime_t *rt;
  mi_runtime_info_t info;
  mi_deploy_table_t *t = NULL;
  printf("stack mismatch:\n");
  devfile("npu-quiet.conf", "");
  make_table(table, lv, 2, "00000000deadbeef");
  open_rt(table, MI_STACK_REFUSE, MI_ERR_CONSTRAINT);
  rt = open_rt(table, MI_STACK_USE, MI_OK);
  mi_runtime_info(rt, &info);
  REQUIRE(info.stack_mismatch == 1);
  mi_runtime_close(rt);
  OK(mi_deploy_load(table, &t, &e_));
  REQUIRE(strcmp(t->entries[0].stack_hash, "00000000deadbeef") == 0); /* "use" leaves it */
  mi_deploy_destroy(t);
  rt = open_rt(table, MI_STACK_REVALIDATE, MI_OK);
  mi_runtime_close(rt);
  OK(mi_deploy_load(table, &t, &e_));
  REQUIRE(strcmp(t->entries[0].stack_hash, "00000000deadbeef") != 0);
  REQUIRE(strcmp(t->entries[0].configs[0].verified, "ok") == 0);
  mi_deploy_destroy(t);
  REQUIRE(log_has("stack_mismatch") >= 3 && log_has("revalidated") == 1);
  /* Revalidated on this stack: no mismatch any more, and refuse now opens. */
  rt = open_rt(table, MI_STACK_REFUSE, MI_OK);
  mi_runtime_close(rt);
}

static char table[600], cmd[1400];
static const char *b;

static void setup(void) {
  b = getenv("MI_BUILD");
  b = b && b[0] ? b : ".";
  REQUIRE(mkdtemp(dir));
  snprintf(plugins, sizeof plugins, "%s/plugins", b);
  snprintf(cmd, sizeof cmd, "'%s/bin/mi-zoo' mlp --width 0.5 --depth 3 --resolution 12 --out '%s/net.onnx' >/dev/null", b, dir);
  REQUIRE(system(cmd) == 0);
  snprintf(table, sizeof table, "%s/deployment.yaml", dir);
}

static void teardown(void) {
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  REQUIRE(system(cmd) == 0);
}

static void noise(void) { test_noise(table); }
static void drift(void) { test_drift(table); }
static void thermal(void) { test_thermal(table); }
static void stack(void) { test_stack(table); }

static const tu_case_t tu_cases[] = {
    TU_CASE(noise),
    TU_CASE(drift),
    TU_CASE(thermal),
    TU_CASE(stack),
};

TU_MAIN(setup, teardown)
