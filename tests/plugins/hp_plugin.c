/* hp_plugin.c - hostile test plugins: the SDK template (Relu and Add, a working device) with
 * exactly one thing broken, chosen at build time by HP_KIND at HP_AT.
 *
 * Kinds: crash (SIGSEGV), hang, exit, abort, stdout (writes to the host's stdout and goes on),
 * forged (calls a host service with a forged host handle and goes on), and, at run only,
 * wrong (zero-fills its output), zero_time and neg_time (device time 0 and (uint64)-1000 ns);
 * thread (at create: starts a thread that runs in the plugin's code and calls a host service
 * until the process ends, never stopped by destroy); flaky (crashes from its second load on in
 * the same $HP_COUNT_FILE, so it passes a preflight and fails later; no file, no fault).
 * $HP_RUNS_BEFORE_FAULT=N: a fault at run comes at the process's (N+1)-th kernel run, not the first
 * (a run that hangs after many quick ones, as a long --repeat meets it).
 * Stages: entry, create, describe (device_info), prepare (kernel_prepare), run (kernel_run),
 * check (check_config, which every hostile plugin has: it accepts everything otherwise) and
 * destroy.
 * HP_WRONG_OFF_DEFAULT (a plugin of its own, not a hostile one): right with the "chunk" knob at
 * its default (1024), zero-filled output with any other chunk, as a broken kernel variant is.
 * The host must survive each, say which plugin failed where, and never deploy it. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* The template, renamed so this file can wrap its table and export its own entry. */
#define mi_plugin_entry hp_template_entry
#include "../../sdk/template/template_plugin.c"
#undef mi_plugin_entry

enum { HP_ENTRY = 1,
       HP_CREATE,
       HP_DESCRIBE,
       HP_PREPARE,
       HP_RUN,
       HP_CHECK,
       HP_DESTROY };
enum { HP_CRASH = 1,
       HP_HANG,
       HP_EXIT,
       HP_ABORT,
       HP_STDOUT,
       HP_FORGED,
       HP_WRONG,
       HP_ZERO_TIME,
       HP_NEG_TIME,
       HP_THREAD,
       HP_FLAKY };

#ifndef HP_NAME
#define HP_NAME "hostile"
#endif
#ifndef HP_KIND
#define HP_KIND 0
#endif
#ifndef HP_AT
#define HP_AT 0
#endif

/* The leaked thread: mostly in this library's code (a short spin, then a short sleep that
 * returns into it), and through the host's services table after each sleep. It outlives
 * destroy and unload on purpose. */
static void *hp_leaked(void *arg) {
  const mi_host_api_t *host = arg;
  volatile unsigned long n = 0;
  for (;;) {
    struct timespec ts = {0, 200000};
    for (int i = 0; i < 20000; i++) n++;
    nanosleep(&ts, NULL);
    if (host && host->get_setting) (void)host->get_setting(host->host_ctx, "hp_thread");
  }
  return NULL;
}

/* How many times this plugin was loaded under $HP_COUNT_FILE, this one included; 0 without it. */
static long hp_load_count(void) {
  const char *path = getenv("HP_COUNT_FILE");
  char buf[32] = "";
  long n;
  int fd;
  if (!path || !path[0] || (fd = open(path, O_RDWR | O_CREAT, 0600)) < 0) return 0;
  flock(fd, LOCK_EX);
  if (read(fd, buf, sizeof buf - 1) < 0) buf[0] = '\0';
  n = strtol(buf, NULL, 10) + 1;
  snprintf(buf, sizeof buf, "%ld\n", n);
  if (pwrite(fd, buf, strlen(buf), 0) < 0) n = 0;
  close(fd); /* drops the lock */
  return n;
}

static void hp_fault(const mi_host_api_t *host, int at) {
  if (at != HP_AT) return;
  switch (HP_KIND) {
  case HP_CRASH:
    raise(SIGSEGV);
    break;
  case HP_HANG:
    for (;;) sleep(1);
  case HP_EXIT:
    exit(7);
  case HP_ABORT:
    abort();
  case HP_STDOUT:
    printf("hostile plugin " HP_NAME " writes to stdout\n");
    fflush(stdout);
    break;
  case HP_FORGED:
    /* A handle that was never handed out: the host must refuse it, not follow it. */
    if (host && host->log) host->log((void *)(uintptr_t)0x10, MI_LOG_ERROR, NULL, "forged");
    if (host && host->get_setting) (void)host->get_setting((void *)(uintptr_t)0x10, "x");
    if (host && host->alloc) (void)host->alloc((void *)(uintptr_t)0x10, 16);
    if (host && host->free) host->free((void *)(uintptr_t)0x10, (void *)(uintptr_t)0x20);
    /* NULL is no handle either. */
    if (host && host->log) host->log(NULL, MI_LOG_ERROR, NULL, "forged");
    break;
  case HP_THREAD: {
    pthread_t t;
    if (pthread_create(&t, NULL, hp_leaked, (void *)host) == 0) pthread_detach(t);
    break;
  }
  case HP_FLAKY: {
    static long loads; /* counted once per process: describe is asked more than once */
    if (!loads) loads = hp_load_count();
    if (loads >= 2) raise(SIGSEGV);
    break;
  }
  default:
    break;
  }
}

static int32_t hp_create(const mi_host_api_t *host, mi_plugin_ctx_t **out, mi_error_t *err) {
  hp_fault(host, HP_CREATE);
  return t_create(host, out, err);
}

static void hp_destroy(mi_plugin_ctx_t *ctx) {
  hp_fault(ctx ? ctx->host : NULL, HP_DESTROY);
  t_destroy(ctx);
}

/* The template has no check_config: this one accepts every assignment, after the fault. */
static int32_t hp_check_config(mi_plugin_ctx_t *ctx, uint32_t device, const char *variant_id,
                               const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err) {
  (void)device, (void)variant_id, (void)knobs, (void)knob_count, (void)err;
  hp_fault(ctx ? ctx->host : NULL, HP_CHECK);
  return MI_OK;
}

static int32_t hp_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                              mi_error_t *err) {
  hp_fault(ctx ? ctx->host : NULL, HP_DESCRIBE);
  return t_device_info(ctx, device, out, err);
}

static int32_t hp_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device,
                                 const mi_kernel_desc_t *desc, mi_kernel_t **out,
                                 mi_error_t *err) {
  hp_fault(ctx ? ctx->host : NULL, HP_PREPARE);
  return t_kernel_prepare(ctx, device, desc, out, err);
}

static int32_t hp_kernel_run(mi_plugin_ctx_t *ctx, mi_kernel_t *k, mi_buffer_t *const *inputs,
                             int32_t input_count, mi_buffer_t *const *outputs,
                             int32_t output_count, mi_run_stats_t *stats, mi_error_t *err) {
  static long runs;
  const char *before = getenv("HP_RUNS_BEFORE_FAULT");
  int32_t rc;
  if (!before || ++runs > atol(before)) hp_fault(ctx ? ctx->host : NULL, HP_RUN);
  rc = t_kernel_run(ctx, k, inputs, input_count, outputs, output_count, stats, err);
#ifdef HP_WRONG_OFF_DEFAULT
  if (rc == MI_OK && k->chunk != 1024) memset(outputs[0]->data, 0, (size_t)k->numel * sizeof(float));
#endif
  if (rc != MI_OK || HP_AT != HP_RUN) return rc;
  if (HP_KIND == HP_WRONG) memset(outputs[0]->data, 0, (size_t)k->numel * sizeof(float));
  if (stats && (HP_KIND == HP_ZERO_TIME || HP_KIND == HP_NEG_TIME)) {
    mi_run_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.has_device_time = 1;
    s.device_time_ns = HP_KIND == HP_ZERO_TIME ? 0 : (uint64_t)-1000;
    mi_sdk_fill(stats, &s, sizeof s);
  }
  return MI_OK;
}

static mi_plugin_api_t hp_api;

MI_PLUGIN_EXPORT const mi_plugin_api_t *mi_plugin_entry(const mi_host_api_t *host,
                                                        mi_error_t *err) {
  const mi_plugin_api_t *t = hp_template_entry(host, err);
  hp_fault(host, HP_ENTRY);
  if (!t) return NULL;
  hp_api = *t;
  hp_api.name = HP_NAME;
  hp_api.create = hp_create;
  hp_api.destroy = hp_destroy;
  hp_api.check_config = hp_check_config;
  hp_api.device_info = hp_device_info;
  hp_api.kernel_prepare = hp_kernel_prepare;
  hp_api.kernel_run = hp_kernel_run;
  return &hp_api;
}
