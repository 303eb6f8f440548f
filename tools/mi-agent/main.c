/* main.c - mi-agent: a device host's member of the farm (docs/scale-out.md).
 *   mi-agent --plugins DIR --db postgresql://... [run] [--name N] [--lease S] [--env K=V]
 *   mi-agent --db URL setup                     tables and the mi_agent role (database owner)
 *   mi-agent --plugins DIR --db URL submit --model M --device SPEC [--count N] [--wait] */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "mi_cli.h"

#define OPTIONS(X)                                                                               \
  X(O_DB, "db", "URL", "the farm's PostgreSQL database (postgresql://...)")                      \
  X(O_PLUGINS, "plugins", "DIR", "plugin folder (default: $MI_PLUGIN_PATH)")                     \
  X(O_NAME, "name", "NAME", "run: this agent's name (default: the host name)")                   \
  X(O_CACHE, "cache", "DIR", "run: where models are cached (default /tmp/mi-agent-cache-UID)")   \
  X(O_LEASE, "lease", "S", "run: seconds a claimed job is held between heartbeats (default 10)") \
  X(O_TIMEOUT, "timeout", "S",                                                                   \
    "a measurement (run) or the wait (submit) ends after S s\n"                                  \
    "(default 120)")                                                                             \
  X(O_ENV, "env", "KEY=VALUE", "run: set in the measurement workers (repeatable, at most 7)")    \
  X(O_FALLBACK, "fallback", "DEV",                                                               \
    "run: where the nodes a device refuses run: PLUGIN:INDEX,\n"                                 \
    "or 'ref' (the reference interpreter). Default: the first\n"                                 \
    "CPU plugin's device (blis-cpu:0) for a device of another\n"                                 \
    "plugin; what it refuses too runs on the reference")                                         \
  X(O_EXIT_IDLE, "exit-idle", "S", "run: exit after S seconds without a job")                    \
  X(O_COUNT, "count", "N", "run: exit after N jobs; submit: N jobs (default 1)")                 \
  X(O_NO_FP, "no-fingerprint", NULL, "run: skip the device fingerprint's micro-benchmarks")      \
  X(O_MODEL, "model", "FILE", "submit: the model")                                               \
  X(O_DEVICE, "device", "PLUGIN:INDEX", "submit: the device")                                    \
  X(O_INPUTS, "inputs", "SHAPES", "submit: the input shapes")                                    \
  X(O_KNOB, "knob", "K=V", "submit: a knob setting")                                             \
  X(O_REPEATS, "repeats", "N", "submit: timed repeats per measurement (default 5)")              \
  X(O_WAIT, "wait", NULL, "submit: wait for the answers and print them")
MI_CLI_TABLE(OPTIONS, k_opts);

/* Parses argv into a and the command; -1 to go on, else the exit status. */
static int parse(int argc, char **argv, mi_agent_args_t *a, const char **cmd) {
  static const char *const cmds[] = {"run", "setup", "submit"};
  mi_cli_t c = {0};
  double v = 0;
  const char *hit;
  int k, st;
  c.prog = "mi-agent";
  c.usage = "mi-agent --db postgresql://... [--plugins DIR] [run|setup|submit] [options]";
  c.about =
      "A device host's member of the farm (docs/scale-out.md). run (the default): claim\n"
      "jobs and measure them; setup: create the history and farm tables and the mi_agent\n"
      "role (database owner); submit: queue jobs.";
  c.opts = k_opts;
  c.flags = MI_CLI_VERSION_OPT;
  mi_cli_begin(&c, argc, argv);
  while ((k = mi_cli_step(&c, &st))) {
    switch (k) {
    case MI_CLI_ARG:
      if (!strcmp(c.value, "run") || !strcmp(c.value, "setup") || !strcmp(c.value, "submit"))
        *cmd = c.value;
      else if ((hit = mi_cli_suggest(c.value, cmds, 3)))
        return mi_cli_error(&c, "unknown command '%s'; did you mean '%s'?", c.value, hit);
      else
        return mi_cli_error(&c, "unknown command '%s' (run, setup or submit)", c.value);
      break;
    case O_WAIT: a->wait = 1; break;
    case O_NO_FP: a->fingerprint = 0; break;
    case O_DB: a->db = c.value; break;
    case O_PLUGINS: a->plugins = c.value; break;
    case O_NAME: a->name = c.value; break;
    case O_CACHE: a->cache = c.value; break;
    case O_MODEL: a->model = c.value; break;
    case O_DEVICE: a->device = c.value; break;
    case O_FALLBACK: a->fallback = c.value; break;
    case O_INPUTS: a->inputs = c.value; break;
    case O_KNOB: a->knob = c.value; break;
    case O_ENV:
      if (a->env_count >= 7 || !strchr(c.value, '='))
        return mi_cli_error(&c, "--env takes KEY=VALUE (at most 7), not '%s'", c.value);
      a->env[a->env_count++] = c.value;
      break;
    case O_LEASE:
    case O_TIMEOUT:
    case O_EXIT_IDLE:
      if (mi_cli_double(&c, 0.1, 86400, &v)) return 2;
      *(k == O_LEASE ? &a->lease_s : k == O_TIMEOUT ? &a->timeout_s
                                                    : &a->exit_idle_s) = v;
      break;
    case O_COUNT:
    case O_REPEATS:
      if (mi_cli_double(&c, 1, 1000000, &v)) return 2;
      *(k == O_COUNT ? &a->count : &a->repeats) = (int32_t)v;
      break;
    }
  }
  if (st != MI_CLI_GO_ON) return st;
  if (!a->db || !mi_history_is_url(a->db))
    return mi_cli_error(&c, "--db must be a postgresql:// URL");
  return -1;
}

int main(int argc, char **argv) {
  mi_agent_args_t a;
  const char *cmd = "run";
  char name[128], cache[512];
  int rc;
  memset(&a, 0, sizeof a);
  a.lease_s = 10;
  a.timeout_s = 120;
  a.repeats = 5;
  a.fingerprint = 1;
  a.plugins = secure_getenv("MI_PLUGIN_PATH");
  if ((rc = parse(argc, argv, &a, &cmd)) >= 0) return rc;
  if (!a.name) {
    if (gethostname(name, sizeof name) != 0) snprintf(name, sizeof name, "agent");
    name[sizeof name - 1] = '\0';
    a.name = name;
  }
  if (!a.cache) {
    snprintf(cache, sizeof cache, "/tmp/mi-agent-cache-%ld", (long)getuid());
    a.cache = cache;
  }
  if (!strcmp(cmd, "setup")) {
    mi_farm_t *f = NULL;
    mi_error_t err;
    if (mi_farm_open(a.db, 1, &f, &err) != MI_OK) {
      fprintf(stderr, "mi-agent: %s\n", err.message);
      return 1;
    }
    mi_farm_close(f);
    return 0;
  }
  if (!a.plugins) {
    fputs("mi-agent: --plugins DIR (or MI_PLUGIN_PATH) is needed (see mi-agent --help)\n", stderr);
    return 2;
  }
  if (!strcmp(cmd, "submit")) {
    if (a.count <= 0) a.count = 1;
    return mi_agent_submit(&a);
  }
  return mi_agent_run(&a);
}
