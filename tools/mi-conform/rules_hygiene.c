/* rules_hygiene.c - what a plugin may not do to its host at any entry point: write to the host's
 * stdout or stderr (R13), call host services with a handle it was not given (R14), or report
 * device times the wall clock contradicts (R15). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conform.h"
#include "conform_util.h"
#include "metainfer/mi_measure.h"
#include "plugin/plugin.h"

/* Runs per variant in R15: a lie told once in a while is still a lie. */
#define TIMED_RUNS 5

typedef int (*probe_fn)(void *user); /* non-zero: the plugin did what the rule forbids */

static int ignore_run(void *user, const mi_session_t *s, const mi_graph_t *g) {
  (void)user;
  (void)s;
  (void)g;
  return 0;
}

/* Drives the plugin through every entry point: entry and create, each device's descriptions
 * and counters, a run of each variant's first case (buffers, prepare, run, release), destroy
 * and unload. After each step asks `probe`; returns the first step after which it answered
 * non-zero, or NULL. `step` names the step for the reason. */
static const char *exercise(conform_ctx_t *c, probe_fn probe, void *user, char *step, size_t sn) {
  int loaded = conform_load(c, MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR) == MI_OK;
  snprintf(step, sn, "entry and create%s", loaded ? "" : " (which failed)");
  if (probe(user) || !loaded) goto out;
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    conform_descs_t d;
    char why[256];
    snprintf(step, sn, "the descriptions of device %u", dev);
    if (conform_descs_get(c, dev, &d, why, sizeof why) != MI_OK) {
      if (probe(user)) goto out;
      continue;
    }
    for (uint32_t i = 0; i < d.counter_count && c->plugin.api.counter_read; i++) {
      mi_counter_sample_t smp;
      memset(&smp, 0, sizeof smp);
      smp.struct_size = sizeof smp;
      (void)c->plugin.api.counter_read(c->plugin.ctx, dev, i, &smp, NULL);
    }
    if (probe(user)) {
      conform_descs_free(&d);
      goto out;
    }
    for (uint32_t vi = 0; vi < d.variant_count; vi++) {
      mi_graph_t *g = conform_case_graph(d.variants[vi].op_type, 0, 3);
      int stopped;
      if (!g) continue;
      snprintf(step, sn, "a run of variant '%s' on device %u", d.variants[vi].id, dev);
      (void)conform_run_case(c, dev, g, d.variants[vi].id, 5, 2, ignore_run, NULL, &stopped, NULL);
      mi_graph_destroy(g);
      if (probe(user)) {
        conform_descs_free(&d);
        goto out;
      }
    }
    conform_descs_free(&d);
  }
out:
  if (step[0] && probe(user)) return step;
  snprintf(step, sn, "destroy and unload");
  conform_unload(c);
  return probe(user) ? step : NULL;
}

/* R13's capture: each of stdout and stderr into its own temporary file. */
typedef struct capture {
  FILE *file[2];
  int saved[2];
} capture_t;

/* Bytes the plugin wrote to capture i, less the host's own one-line notes (a refused forged
 * handle is reported by the host services on stderr: R14's business, not this rule's). The
 * first offending line goes to `line` when not NULL. */
static long plugin_bytes(capture_t *cap, int i, char *line, size_t ln) {
  static const char host_note[] = "mi-host: a plugin called host service";
  char buf[1024];
  long n = 0;
  fflush(i ? stderr : stdout);
  rewind(cap->file[i]);
  while (fgets(buf, sizeof buf, cap->file[i])) {
    if (i == 1 && strncmp(buf, host_note, sizeof host_note - 1) == 0) continue;
    if (n == 0 && line) {
      size_t k = 0;
      for (const char *p = buf; *p && k + 1 < ln; p++)
        line[k++] = (unsigned char)*p < 0x20 ? ' ' : *p;
      while (k > 0 && line[k - 1] == ' ') k--;
      line[k] = '\0';
    }
    n += (long)strlen(buf);
  }
  fseek(cap->file[i], 0, SEEK_END);
  return n;
}

static int wrote_anything(void *user) {
  capture_t *cap = user;
  return plugin_bytes(cap, 0, NULL, 0) > 0 || plugin_bytes(cap, 1, NULL, 0) > 0;
}

/* R13: the plugin writes nothing to stdout or stderr at any entry point. mi-host's --json
 * output is its stdout, and its stderr is the user's log: a plugin speaks through the host's
 * log service, which the host prefixes and filters. */
int conform_rule_stdout(conform_ctx_t *c, char *why, size_t n) {
  capture_t cap;
  char step[200] = "", line[160] = "";
  const char *at;
  long out_b, err_b;
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < 2; i++) {
    cap.file[i] = tmpfile();
    cap.saved[i] = dup(i + 1);
    if (!cap.file[i] || cap.saved[i] < 0 || dup2(fileno(cap.file[i]), i + 1) < 0) {
      return conform_verdict(why, n, CONFORM_FAIL, "cannot capture the process's output");
    }
  }
  c->quiet_log = 1;
  at = exercise(c, wrote_anything, &cap, step, sizeof step);
  out_b = plugin_bytes(&cap, 0, line, sizeof line);
  err_b = out_b ? plugin_bytes(&cap, 1, NULL, 0) : plugin_bytes(&cap, 1, line, sizeof line);
  for (int i = 0; i < 2; i++) {
    fflush(i ? stderr : stdout);
    dup2(cap.saved[i], i + 1);
    close(cap.saved[i]);
    fclose(cap.file[i]);
  }
  if (at) {
    return conform_verdict(why, n, CONFORM_FAIL,
                           "wrote %ld byte(s) to stdout and %ld to stderr, first during %s: '%s'",
                           out_b, err_b, at, line);
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "nothing written to stdout or stderr from entry to unload");
}

static int refused_since(void *user) { return mi__host_api_refused() > *(int32_t *)user; }

/* R14: every call into a host service carries the handle the host gave (host_ctx); the host
 * refuses any other (docs/abi.md), so a plugin that forges one loses the call and, in mi-host,
 * its measurements. */
int conform_rule_host_handles(conform_ctx_t *c, char *why, size_t n) {
  int32_t before = mi__host_api_refused();
  char step[200] = "";
  const char *at = exercise(c, refused_since, &before, step, sizeof step);
  if (at) {
    return conform_verdict(why, n, CONFORM_FAIL,
                           "called a host service with a handle the host never gave out (%d call(s) "
                           "refused), first during %s",
                           (int)(mi__host_api_refused() - before), at);
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "every host service call carried the host's handle, from entry to unload");
}

typedef struct timing {
  int checked;
  char reason[MI_ERROR_MESSAGE_SIZE];
} timing_t;

static int check_times(void *user, const mi_session_t *s, const mi_graph_t *g) {
  timing_t *t = user;
  for (int32_t i = 0; i < g->node_count; i++) {
    uint64_t wall = 0, dev = 0;
    mi_error_t err;
    if (mi_session_node_time(s, i, &wall, &dev) != 2) continue;
    t->checked++;
    mi_error_clear(&err);
    if (mi_device_time_check(dev, (double)wall * 1e-9, &err) != MI_OK) {
      snprintf(t->reason, sizeof t->reason, "%s", err.message);
      return 1;
    }
  }
  return 0;
}

/* R15: a device time reported by kernel_run is neither 0 nor longer than the wall time of the
 * call that contained it (a negative time wrapped to uint64 is centuries): the host's own check
 * (mi_device_time_check), which fails such a measurement and quarantines the device. */
int conform_rule_run_times(conform_ctx_t *c, char *why, size_t n) {
  timing_t t;
  memset(&t, 0, sizeof t);
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    conform_descs_t d;
    if (conform_descs_get(c, dev, &d, why, n) != MI_OK) return CONFORM_FAIL;
    for (uint32_t vi = 0; vi < d.variant_count; vi++) {
      mi_graph_t *g = conform_case_graph(d.variants[vi].op_type, 0, 3);
      int stopped = 0;
      if (!g) continue;
      c->per_node_timing = 1; /* each kernel's time against the wall time of its own call */
      (void)conform_run_case(c, dev, g, d.variants[vi].id, 9, TIMED_RUNS, check_times, &t,
                             &stopped, NULL);
      c->per_node_timing = 0;
      mi_graph_destroy(g);
      if (stopped) {
        snprintf(why, n, "device %u variant '%s': %s", dev, d.variants[vi].id, t.reason);
        conform_descs_free(&d);
        return CONFORM_FAIL;
      }
    }
    conform_descs_free(&d);
  }
  return conform_checked(why, n, t.checked, "no run reported a device time (wall clock only)",
                         "%d device time(s) checked against the wall clock", t.checked);
}
