/* test_runtime_table.c - the deployment table (strict parse, every config_id checked against its
 * configuration, escaped round trip, atomic write that a SIGKILL cannot leave half-written and
 * that refuses a table it could not read back) and the drift detector on synthetic streams. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "metainfer/mi.h"

#include "test_util.h"

static const char *TABLE =
    "# Meta Infer deployment table, written by mi-host tune from /tmp/r/recipe.yaml\n"
    "version: 1\n"
    "deployments:\n"
    "  - model: \"net.onnx\"\n"
    "    device: \"npu-stub:0\"\n"
    "    assigned: true\n"
    "    stack: \"gcc 12; npu-stub 1.0\"\n"
    "    stack_hash: \"0123456789abcdef\"\n"
    "    chosen:\n"
    "      config_id: \"802d2821ef6258f9\"\n"
    "      verified: \"ok\"   # 2 re-measurements\n"
    "      measured:\n"
    "        latency_ms: 0.25\n"
    "        energy_mj: 0.5   # modeled, not measured\n"
    "        accuracy_drop: 0.001\n"
    "      configuration:\n"
    "        \"device.dvfs_level\": \"4\"\n"
    "        \"node.fc1.variant\": \"npu.gemm\"\n"
    "    fallbacks:\n"
    "      - config_id: \"654ce3c9a62aee2e\"\n"
    "        measured:\n"
    "          latency_ms: 0.4\n"
    "        configuration:\n"
    "          \"device.dvfs_level\": \"2\"\n"
    "  - model: \"net.onnx\"\n"
    "    device: \"blis-cpu:0\"\n"
    "    status: \"no configuration met the constraints\"\n"
    "assignment:\n"
    "  - model: \"net.onnx\"\n"
    "    device: \"npu-stub:0\"\n";

static void check_table(const mi_deploy_table_t *t) {
  const mi_deploy_entry_t *e = &t->entries[0];
  REQUIRE(t->entry_count == 2 && e->config_count == 2 && t->entries[1].config_count == 0);
  REQUIRE(strcmp(e->device, "npu-stub:0") == 0 && e->assigned == 1);
  REQUIRE(strcmp(e->configs[0].id, "802d2821ef6258f9") == 0 && strcmp(e->configs[0].verified, "ok") == 0);
  REQUIRE(e->configs[0].measured[MI_OBJ_LATENCY] == 0.25 && isnan(e->configs[0].measured[MI_OBJ_MEMORY]));
  REQUIRE(e->configs[1].measured[MI_OBJ_LATENCY] == 0.4 && e->configs[1].kv_count == 1);
  REQUIRE(t->assignment_count == 1 && mi_deploy_find(t, NULL, NULL) == 0);
  REQUIRE(mi_deploy_find(t, "net.onnx", "npu-stub") == 0 && mi_deploy_find(t, NULL, "blis-cpu:0") == -1);
  {
    char *text = mi_deploy_config_text(&e->configs[0]);
    REQUIRE(text && strcmp(text, "device.dvfs_level=4\nnode.fc1.variant=npu.gemm\n") == 0);
    free(text);
  }
}

static int count_tmp(const char *dir);

/* A broken table is refused with PATH:LINE:COLUMN and the reason. */
static void bad(const char *from, const char *to, const char *where, const char *what) {
  char text[4096], *at;
  mi_deploy_table_t *t = (mi_deploy_table_t *)1;
  mi_error_t err;
  snprintf(text, sizeof text, "%s", TABLE);
  at = strstr(text, from);
  REQUIRE(at);
  {
    char rest[4096];
    snprintf(rest, sizeof rest, "%s", at + strlen(from));
    snprintf(at, sizeof text - (size_t)(at - text), "%s%s", to, rest);
  }
  REQUIRE(mi_deploy_parse(text, strlen(text), "dep.yaml", &t, &err) == MI_ERR_PARSE && t == NULL);
  if (!strstr(err.message, where) || !strstr(err.message, what)) {
    fprintf(stderr, "got '%s', want '%s' and '%s'\n", err.message, where, what);
    exit(1);
  }
}

static void test_parse(void) {
  mi_deploy_table_t *t = NULL;
  mi_error_t err;
  REQUIRE(mi_deploy_parse(TABLE, strlen(TABLE), "/x/dep.yaml", &t, &err) == MI_OK);
  check_table(t);
  REQUIRE(strcmp(t->recipe, "/tmp/r/recipe.yaml") == 0 && strcmp(t->dir, "/x") == 0);
  mi_deploy_destroy(t);
  mi_deploy_destroy(NULL);
  bad("    assigned: true", "    assigned: true\n    colour: red", "dep.yaml:7:5:", "unknown key 'colour'");
  bad("\"654ce3c9a62aee2e\"", "\"xyz\"", "dep.yaml:20:", "16 lowercase hex");
  bad("latency_ms: 0.4", "latency_ms: fast", "dep.yaml:22:23:", "must be a number");
  bad("version: 1", "version: 2", "dep.yaml:2:10:", "'version' must be 1");
  bad("    stack_hash: \"0123456789abcdef\"\n", "", "dep.yaml:4:5:", "needs 'stack'");
  bad("deployments:", "deployments: [", "dep.yaml:", "");
  bad("        \"device.dvfs_level\": \"4\"\n", "        \"node.fc1.variant\": \"x\"\n", "dep.yaml:18:", "given twice");
  /* A configuration that is not the one its id names: edited, extended, or cut short. */
  bad("\"npu.gemm\"", "\"npu.other\"", "dep.yaml:10:18:", "config_id 802d2821ef6258f9 does not match");
  bad("\"device.dvfs_level\": \"2\"\n", "\"device.dvfs_level\": \"2\"\n          \"device.x\": \"1\"\n",
      "dep.yaml:20:20:", "does not match its configuration (2 keys");
  {
    char cut[2048];
    const char *at = strstr(TABLE, "\"node.fc1.variant\"");
    snprintf(cut, sizeof cut, "%.*s", (int)(at - TABLE), TABLE);
    REQUIRE(mi_deploy_parse(cut, strlen(cut), "dep.yaml", &t, &err) == MI_ERR_PARSE && t == NULL);
    REQUIRE(strstr(err.message,
                   "dep.yaml:10:18: config_id 802d2821ef6258f9 does not match its "
                   "configuration (1 key,"));
  }
}

/* Strings that would add keys to a table written with printf come back as they went in. */
static void test_escaping(const char *dir) {
  static const char *const nasty[] = {
      "k\"w.onnx", "1.0\"\nevil: true\n  - model: \"x\" #", "a: b # c", "- item", "tab\there\\",
      "  leading and trailing  ", "\xc3\xa9t\xc3\xa9", "'single'", "{flow: [x]}", "true", "1e3", "~", ""};
  const int n = (int)(sizeof nasty / sizeof nasty[0]);
  mi_deploy_table_t *t = NULL, *u = NULL;
  mi_deploy_entry_t *e;
  mi_error_t err;
  char path[512];
  int tmp_before;
  snprintf(path, sizeof path, "%s/escape.yaml", dir);
  REQUIRE(mi_deploy_parse(TABLE, strlen(TABLE), "dep.yaml", &t, &err) == MI_OK);
  for (int i = 0; i < n; i++) {
    e = &t->entries[0];
    free(e->model);
    free(e->stack);
    free(e->configs[1].values[0]);
    REQUIRE((e->model = strdup(nasty[i])) && (e->stack = strdup(nasty[(i + 1) % n])));
    /* a value may be anything on one line; its id follows it */
    REQUIRE((e->configs[1].values[0] = strdup(strchr(nasty[i], '\n') ? "x" : nasty[i])));
    REQUIRE(mi_deploy_config_id(&e->configs[1], e->configs[1].id) == MI_OK);
    REQUIRE(mi_deploy_write(t, path, &err) == MI_OK);
    REQUIRE(mi_deploy_load(path, &u, &err) == MI_OK);
    REQUIRE(u->entry_count == 2 && u->assignment_count == 1);
    REQUIRE(strcmp(u->entries[0].model, nasty[i]) == 0);
    REQUIRE(strcmp(u->entries[0].stack, nasty[(i + 1) % n]) == 0);
    REQUIRE(strcmp(u->entries[0].configs[1].values[0], e->configs[1].values[0]) == 0);
    mi_deploy_destroy(u);
  }
  /* A table whose id does not name its configuration is not written (nothing left behind). */
  snprintf(t->entries[0].configs[0].id, sizeof t->entries[0].configs[0].id, "%s", "0123456789abcdef");
  snprintf(path, sizeof path, "%s/refused.yaml", dir);
  tmp_before = count_tmp(dir); /* the killed writers of test_write leave theirs */
  REQUIRE(mi_deploy_write(t, path, &err) == MI_ERR_PARSE);
  REQUIRE(strstr(err.message, "refused.yaml:") && strstr(err.message, "does not match") &&
          strstr(err.message, "not written"));
  REQUIRE(access(path, F_OK) != 0 && count_tmp(dir) == tmp_before);
  mi_deploy_destroy(t);
}

static int count_tmp(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  REQUIRE(d);
  while ((de = readdir(d)))
    if (strstr(de->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

/* Round trip, then a writer killed with SIGKILL at random moments: the file on disk always
 * parses and is one complete version or the other. */
static void test_write(const char *dir) {
  char path[512], bad_path[600];
  mi_deploy_table_t *t = NULL, *u = NULL;
  mi_error_t err;
  REQUIRE(mi_deploy_parse(TABLE, strlen(TABLE), "dep.yaml", &t, &err) == MI_OK);
  snprintf(path, sizeof path, "%s/deployment.yaml", dir);
  t->has_bound[MI_OBJ_LATENCY] = 1;
  t->bound[MI_OBJ_LATENCY] = 2.5;
  REQUIRE(mi_deploy_write(t, path, &err) == MI_OK);
  REQUIRE(mi_deploy_load(path, &u, &err) == MI_OK);
  check_table(u);
  REQUIRE(u->has_bound[MI_OBJ_LATENCY] && u->bound[MI_OBJ_LATENCY] == 2.5);
  REQUIRE(strcmp(u->entries[0].stack, t->entries[0].stack) == 0);
  mi_deploy_destroy(u);
  REQUIRE(count_tmp(dir) == 0);
  snprintf(bad_path, sizeof bad_path, "%s/no/such/dir/d.yaml", dir);
  REQUIRE(mi_deploy_write(t, bad_path, &err) == MI_ERR_IO && strstr(err.message, "no/such"));

  for (int round = 0; round < 12; round++) {
    pid_t pid = fork();
    int status;
    REQUIRE(pid >= 0);
    if (pid == 0) {
      /* Alternate two versions as fast as possible until killed. */
      for (int i = 0;; i++) {
        t->entries[0].configs[0].measured[MI_OBJ_LATENCY] = i % 2 ? 0.25 : 0.75;
        if (mi_deploy_write(t, path, NULL) != MI_OK) _exit(3);
      }
    }
    {
      struct timespec ts = {0, 2000000 + (long)round * 1700000};
      nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    REQUIRE(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
    REQUIRE(mi_deploy_load(path, &u, &err) == MI_OK);
    {
      double v = u->entries[0].configs[0].measured[MI_OBJ_LATENCY];
      REQUIRE(v == 0.25 || v == 0.75);
    }
    REQUIRE(u->entry_count == 2 && u->entries[0].config_count == 2 && u->assignment_count == 1);
    mi_deploy_destroy(u);
  }
  mi_deploy_destroy(t);
}

/* Deterministic N(0,1) (Box-Muller over a splitmix stream). */
static double gauss(mi_rng_t *r) {
  double u = mi_rng_uniform(r), v = mi_rng_uniform(r);
  return sqrt(-2.0 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static void test_detector(void) {
  mi_drift_detector_t d;
  mi_rng_t r;
  int alarms = 0, at = -1;
  /* Noise alone (3% and 6% sigma) with one 10x outlier every 37 runs: never an alarm. */
  for (int s = 0; s < 2; s++) {
    mi_rng_seed(&r, 11 + (uint64_t)s);
    mi_drift_init(&d, 1.0, 0, 0, 0);
    for (int i = 0; i < 5000; i++) {
      double x = 1.0 * exp((s ? 0.06 : 0.03) * gauss(&r));
      if (i % 37 == 36) x *= 10;
      alarms += mi_drift_add(&d, x);
    }
    REQUIRE(alarms == 0);
  }
  /* Two outliers in a row do not move a median of 5 either. */
  mi_drift_init(&d, 1.0, 5, 0, 0);
  for (int i = 0; i < 200; i++) alarms += mi_drift_add(&d, i % 50 < 2 ? 50.0 : 1.0);
  REQUIRE(alarms == 0);
  /* A sustained 30% slowdown at run 100 with 3% noise: detected within the bound
   * window/2 + 1 + ceil(lambda / (log 1.3 - allowance)) = 3 + 2 runs (allowance = delta + 3
   * standard errors of the median, about 0.10 here), plus 3 of slack for noise. */
  mi_rng_seed(&r, 5);
  mi_drift_init(&d, 2.0, 5, 0.05, 0.25);
  for (int i = 0; i < 300 && at < 0; i++)
    if (mi_drift_add(&d, 2.0 * (i >= 100 ? 1.3 : 1.0) * exp(0.03 * gauss(&r)))) at = i;
  REQUIRE(at >= 100 && at <= 108);
  /* A slowdown below delta never accumulates. */
  mi_drift_init(&d, 2.0, 5, 0.05, 0.25);
  for (int i = 0; i < 3000; i++) REQUIRE(!mi_drift_add(&d, 2.0 * 1.03));
  /* Garbage samples are not evidence. */
  REQUIRE(!mi_drift_add(&d, NAN) && !mi_drift_add(&d, -1) && !mi_drift_add(NULL, 1));
  REQUIRE(mi_stack_policy_find("revalidate") == MI_STACK_REVALIDATE && mi_stack_policy_find("x") == -1);
}

/* vs_default: written through the emitter, read back with the same figures, and an incomplete
 * block is refused. */
static void test_vs_default(const char *dir) {
  char path[512], *text, *cut;
  const char *block =
      "    vs_default:\n      speedup: 1.2345678901\n      ci95_low: 1.1\n"
      "      ci95_high: 1.3\n      rounds: 7\n      verdict: \"faster\"\n";
  const char *at = strstr(TABLE, "    chosen:\n");
  mi_deploy_table_t *t = NULL, *u = NULL;
  mi_error_t err;
  size_t n;
  REQUIRE(at);
  n = strlen(TABLE) + strlen(block) + 1;
  REQUIRE((text = malloc(n)) != NULL);
  snprintf(text, n, "%.*s%s%s", (int)(at - TABLE), TABLE, block, at);
  REQUIRE(mi_deploy_parse(text, strlen(text), "dep.yaml", &t, &err) == MI_OK);
  REQUIRE(t->entries[0].has_vs_default && t->entries[0].vs_default == 1.2345678901);
  REQUIRE(t->entries[0].vs_default_rounds == 7 && !strcmp(t->entries[0].vs_default_verdict, "faster"));
  snprintf(path, sizeof path, "%s/vs.yaml", dir);
  REQUIRE(mi_deploy_write(t, path, &err) == MI_OK);
  REQUIRE(mi_deploy_load(path, &u, &err) == MI_OK);
  REQUIRE(u->entries[0].has_vs_default && u->entries[0].vs_default == 1.2345678901);
  REQUIRE(u->entries[0].vs_default_lo == 1.1 && u->entries[0].vs_default_hi == 1.3);
  REQUIRE(u->entries[0].vs_default_rounds == 7 && !strcmp(u->entries[0].vs_default_verdict, "faster"));
  mi_deploy_destroy(u);
  mi_deploy_destroy(t);
  /* without its verdict line: refused, with line and column */
  cut = strstr(text, "      verdict:");
  REQUIRE(cut);
  memmove(cut, strchr(cut, '\n') + 1, strlen(strchr(cut, '\n') + 1) + 1);
  t = NULL;
  REQUIRE(mi_deploy_parse(text, strlen(text), "dep.yaml", &t, &err) == MI_ERR_PARSE);
  REQUIRE(strstr(err.message, "vs_default needs") != NULL);
  free(text);
}

static char dir[] = "/tmp/mi_rt_tableXXXXXX";
static char cmd[600];

static void setup(void) {
  REQUIRE(mkdtemp(dir));
}

static void teardown(void) {
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  REQUIRE(system(cmd) == 0);
}

static void write_case(void) { test_write(dir); }
static void escaping(void) { test_escaping(dir); }
static void vs_default(void) { test_vs_default(dir); }

static const tu_case_t tu_cases[] = {
    {"parse", test_parse},
    {"write", write_case},
    TU_CASE(escaping),
    TU_CASE(vs_default),
    {"detector", test_detector},
};

TU_MAIN(setup, teardown)
