/* test_measure_worker.c - crash isolation with the npu-stub's injected faults: a crashing,
 * hanging or wrong device fails with its reason, is quarantined after K failures in a row, and
 * the host goes on measuring on the other devices; workers are exec'd mi-worker programs that
 * inherit nothing of the host but their socket, and refuse a host of another build. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure/measure_internal.h"
#include "test_measure_util.h"

extern char **environ;

static char g_dirs[512];

/* Runs mi-worker as a pool would, but with the wire tag `wire`; returns the error of its answer
 * to a fingerprint job (code 0 and an empty message when it answered otherwise). */
static mi_error_t worker_with_tag(const char *build, const char *wire) {
  char path[600], parent[32];
  char *argv[] = {path, "--fd", "3", "--device", "npu-stub:0", "--parent", parent, "--wire",
                  (char *)wire, "--plugins", g_dirs, NULL};
  int sv[2];
  pid_t pid;
  mi_error_t e;
  mi__frame_t h;
  posix_spawn_file_actions_t fa;
  memset(&e, 0, sizeof e);
  snprintf(path, sizeof path, "%s/bin/mi-worker", build);
  snprintf(parent, sizeof parent, "%ld", (long)getpid());
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return e;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
  if (posix_spawn(&pid, path, &fa, NULL, argv, environ) == 0) {
    char dummy = 0;
    if (mi__frame_send(sv[0], MI__JOB_FINGERPRINT, &dummy, 1, NULL, 0) == MI_OK &&
        mi__read_full(sv[0], &h, sizeof h, mi__now_s() + 30) == 1 &&
        h.type == MI__REPLY_ERROR && h.length == sizeof e)
      mi__read_full(sv[0], &e, sizeof e, mi__now_s() + 30);
    close(sv[0]);
    waitpid(pid, NULL, 0);
  } else {
    close(sv[0]);
  }
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  e.message[sizeof e.message - 1] = '\0';
  return e;
}

/* The first child process of this one found in /proc, or -1. */
static long child_pid(void) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  long found = -1;
  while (d && found < 0 && (e = readdir(d))) {
    char path[300], buf[512], *close_paren;
    FILE *f;
    long pid = strtol(e->d_name, &close_paren, 10), ppid = 0;
    if (*close_paren || pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    if (fgets(buf, sizeof buf, f) && (close_paren = strrchr(buf, ')')) &&
        sscanf(close_paren + 1, " %*c %ld", &ppid) == 1 && ppid == (long)getpid())
      found = pid;
    fclose(f);
  }
  if (d) closedir(d);
  return found;
}

/* 1 when process `pid` holds a descriptor open on `target`. */
static int holds(long pid, const char *target) {
  char dir[64], link[600], to[512];
  DIR *d;
  struct dirent *e;
  int found = 0;
  snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
  if (!(d = opendir(dir))) return 0;
  while (!found && (e = readdir(d))) {
    ssize_t n;
    snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    if ((n = readlink(link, to, sizeof to - 1)) > 0) {
      to[n] = '\0';
      found = strcmp(to, target) == 0;
    }
  }
  closedir(d);
  return found;
}

/* A thread that takes the stderr lock, says so on pipe `held`, and keeps it until a byte
 * arrives on pipe `release`: starting a worker must need no lock another thread may hold. */
typedef struct holder {
  int held[2], release[2];
} holder_t;

static void *hold_lock(void *arg) {
  holder_t *h = arg;
  char c = 'h';
  flockfile(stderr);
  if (write(h->held[1], &c, 1) == 1)
    while (read(h->release[0], &c, 1) < 0) {
    }
  funlockfile(stderr);
  return NULL;
}

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

static const char *build;
static char dir[64], model[128];
static mi_graph_t *g;
static mi_measure_options_t mo;
/* what each case uses */
static mi_profile_t *pr;
static mi_worker_pool_t *p;
static mi_error_t err;
static int32_t rc;

static void setup(void) {
  build = getenv("MI_BUILD");
  g = tm_conv_relu();
  REQUIRE(build && g && tu_tempdir(dir, sizeof dir, "worker"), "MI_BUILD is not set or setup failed");
  snprintf(g_dirs, sizeof g_dirs, "%s/plugins", build);
  snprintf(model, sizeof model, "%s/m.onnx", dir);
  CHECK(mi_onnx_save(g, model, &err) == MI_OK, "%s", err.message);
  quick(&mo);
}

static void teardown(void) {
  mi_worker_pool_destroy(NULL);
  mi_graph_destroy(g);
  remove(model);
  rmdir(dir);
}

static void no_fault(void) {
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
}

static void retire(void) {
  /* Retiring a device's worker makes its next job start in a new process (mi-host profile
   * --workers measures one figure in several), and the old one is reaped, not left behind. */
  {
    long first = -1, second = -1, third = -1;
    p = pool("", 30);
    rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
    mi_profile_destroy(pr);
    first = child_pid();
    mi_worker_retire(p, "npu-stub:0");
    CHECK(child_pid() < 0, "a retired worker is reaped (child %ld left)", child_pid());
    mi_worker_retire(p, "npu-stub:0"); /* nothing running: no-op */
    mi_worker_retire(p, "nosuch:0");
    if (rc == MI_OK) rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
    mi_profile_destroy(pr);
    second = child_pid();
    if (rc == MI_OK) rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
    mi_profile_destroy(pr);
    third = child_pid();
    mi_worker_pool_destroy(p);
    CHECK(rc == MI_OK, "profile around a retire: %s", err.message);
    CHECK(first > 0 && second > 0 && first != second, "a fresh worker after retire: %ld, %ld",
          first, second);
    CHECK(third == second, "without retire the worker is kept: %ld, %ld", second, third);
  }
}

static void fresh_program(void) {
  /* The worker is a new program (fork + exec of mi-worker), started while another thread of
   * the host holds the stderr lock, and it holds none of the host's descriptors but its socket.
   * A regression that takes a stdio lock to start a worker hangs here: the alarm ends it. */
  {
    char marker[128], exe[600] = "?", c;
    int fd, inherited = 1, started;
    long pid = -1;
    ssize_t n = -1;
    pthread_t th;
    holder_t hold = {{-1, -1}, {-1, -1}};
    snprintf(marker, sizeof marker, "%s/marker", dir);
    fd = open(marker, O_CREAT | O_WRONLY, 0600); /* no O_CLOEXEC on purpose */
    started = fd >= 0 && pipe(hold.held) == 0 && pipe(hold.release) == 0 &&
              pthread_create(&th, NULL, hold_lock, &hold) == 0;
    /* Nothing here prints until the lock is released. */
    started = started && read(hold.held[0], &c, 1) == 1;
    alarm(120);
    p = pool("", 30);
    rc = mi_worker_profile(p, "blis-cpu:0", model, NULL, &mo, 0, &pr, &err);
    mi_profile_destroy(pr);
    if ((pid = child_pid()) > 0) {
      char link[64];
      snprintf(link, sizeof link, "/proc/%ld/exe", pid);
      if ((n = readlink(link, exe, sizeof exe - 1)) > 0) exe[n] = '\0';
      inherited = holds(pid, marker);
    }
    mi_worker_pool_destroy(p);
    alarm(0);
    if (started) {
      if (write(hold.release[1], "x", 1) != 1) started = 0;
      pthread_join(th, NULL);
    }
    CHECK(started, "setup");
    CHECK(rc == MI_OK, "profile next to a thread holding the stderr lock: %s", err.message);
    CHECK(pid > 0, "the worker is a child of the host");
    CHECK(n > 0 && strlen(exe) >= 10 && strcmp(exe + strlen(exe) - 10, "/mi-worker") == 0,
          "the worker runs mi-worker, not a copy of the host: %s", exe);
    CHECK(!inherited, "the worker does not inherit the host's descriptors");
    for (int i = 0; i < 2; i++) {
      close(hold.held[i]);
      close(hold.release[i]);
    }
    close(fd);
    remove(marker);
  }
}

static void other_build(void) {
  /* A worker from another build (another wire tag) refuses every job with a reason; run by
   * hand, mi-worker says it is not meant to be. */
  {
    mi_error_t e = worker_with_tag(build, "0123456789abcdef");
    char path[600];
    int st = -1;
    pid_t pid;
    char *argv[] = {path, NULL};
    CHECK(e.code == MI_ERR_ABI && strstr(e.message, "another build"), "wire mismatch: %d %s",
          (int)e.code, e.message);
    snprintf(path, sizeof path, "%s/bin/mi-worker", build);
    if (posix_spawn(&pid, path, NULL, NULL, argv, environ) == 0) waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "mi-worker by hand: status %d", st);
  }
}

static void refused_programs(void) {
  /* A worker program that is missing, or that anyone may rewrite, is refused up front. */
  {
    mi_worker_options_t o;
    char bad[128];
    FILE *f;
    mi_worker_options_default(&o);
    o.worker_path = "/nonexistent/mi-worker";
    p = NULL;
    rc = mi_worker_pool_create(&o, &p, &err);
    CHECK(rc == MI_ERR_NOT_FOUND && !p && strstr(err.message, "/nonexistent/mi-worker"),
          "missing worker: %d %s", rc, err.message);
    snprintf(bad, sizeof bad, "%s/mi-worker", dir);
    f = fopen(bad, "w");
    if (f) fclose(f);
    chmod(bad, 0777);
    o.worker_path = bad;
    rc = mi_worker_pool_create(&o, &p, &err);
    CHECK(rc == MI_ERR_ABI && !p && strstr(err.message, "world-writable"), "writable worker: %d %s",
          rc, err.message);
    remove(bad);
  }
}

static void crash(void) {
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
}

static void hang(void) {
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
}

static void budget_deadline(void) {
  /* A caller's time budget (mi_worker_pool_set_deadline) stops a job long before the worker's
   * own 60 s timeout, and says which limit stopped it; cleared, the next job has the timeout. */
  p = pool("hang", 60.0);
  {
    time_t t0 = time(NULL);
    mi_worker_pool_set_deadline(p, mi_now_s() + 1.0);
    rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 0, &pr, &err);
    CHECK(rc == MI_ERR_TIMEOUT && !pr && strstr(err.message, "time budget"), "budget: %s", err.message);
    CHECK(time(NULL) - t0 < 10, "the budget's deadline holds (%ld s)", (long)(time(NULL) - t0));
    mi_worker_pool_set_deadline(p, 0);
  }
  mi_worker_pool_destroy(p);
}

static void wrong_results(void) {
  /* Wrong results: caught by the reference check. */
  p = pool("wrong", 30);
  rc = mi_worker_profile(p, "npu-stub:0", model, NULL, &mo, 1, &pr, &err);
  CHECK(rc == MI_ERR_CONSTRAINT && !pr && strstr(err.message, "wrong results"), "wrong: %s",
        err.message);
  mi_worker_pool_destroy(p);
}

static void interleave(void) {
  /* Interleaved runs: one worker prepares every configuration and runs them in turn; each gets
   * its median, the cycles asked for are run, and configurations of different models are
   * refused rather than compared. mi_worker_compare does one such job per round. */
  mi_knob_value_t one = {"threads", 1, 0};
  mi_session_options_t so1;
  mi_worker_config_t wc[2];
  mi__interleave_reply_t rep;
  mi_compare_options_t co;
  mi_compare_result_t res;
  char other[160];
  memset(&so1, 0, sizeof so1);
  so1.struct_size = sizeof so1;
  so1.device_knobs = &one;
  so1.device_knob_count = 1;
  memset(wc, 0, sizeof wc);
  wc[0].struct_size = wc[1].struct_size = sizeof wc[0];
  wc[0].model = wc[1].model = model;
  wc[1].so = &so1;
  p = pool("", 30);
  rc = mi__worker_interleave(p, "blis-cpu:0", wc, 2, &mo, 7, 0, &rep, &err);
  CHECK(rc == MI_OK && rep.count == 2 && rep.cycles == 5 && rep.median_s[0] > 0 &&
            rep.median_s[1] > 0,
        "interleave: rc %d, %d configurations, %d cycles: %s", rc, rep.count, rep.cycles,
        err.message);
  snprintf(other, sizeof other, "%s/other.onnx", dir);
  CHECK(mi_onnx_save(g, other, &err) == MI_OK, "%s", err.message);
  wc[1].model = other;
  rc = mi__worker_interleave(p, "blis-cpu:0", wc, 2, &mo, 7, 0, &rep, &err);
  CHECK(rc == MI_ERR_INVALID_ARGUMENT && strstr(err.message, "share the model"),
        "different models: rc %d %s", rc, err.message);
  wc[1].model = model;
  mi_compare_options_default(&co);
  co.min_rounds = co.max_rounds = 3;
  co.target = 0;
  rc = mi_worker_compare(p, "blis-cpu:0", wc, 2, &mo, &co, &res, &err);
  CHECK(rc == MI_OK && res.rounds == 3 && res.sample_s[2][0] > 0 && res.sample_s[2][1] > 0 &&
            res.vs_first[1].ratio > 0,
        "compare: rc %d, %d rounds: %s", rc, res.rounds, err.message);
  mi_worker_pool_destroy(p);
  remove(other);
  /* A device that crashes while the configurations run fails the round with its reason. */
  p = pool("crash", 30);
  rc = mi__worker_interleave(p, "npu-stub:0", wc, 1, &mo, 7, 0, &rep, &err);
  CHECK(rc == MI_ERR_CRASHED && strstr(err.message, "signal"), "crash: rc %d %s", rc,
        err.message);
  mi_worker_pool_destroy(p);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(no_fault),
    TU_CASE(retire),
    TU_CASE(fresh_program),
    TU_CASE(other_build),
    TU_CASE(refused_programs),
    TU_CASE(crash),
    TU_CASE(hang),
    TU_CASE(budget_deadline),
    TU_CASE(wrong_results),
    TU_CASE(interleave),
};

TU_MAIN(setup, teardown)
