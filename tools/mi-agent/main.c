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

static int usage(void) {
  fputs("usage: mi-agent --db postgresql://... [--plugins DIR] [run|setup|submit] [options]\n"
        "  run:    [--name NAME] [--cache DIR] [--lease S] [--timeout S] [--env KEY=VALUE]\n"
        "          [--exit-idle S] [--count N] [--no-fingerprint]\n"
        "  setup:  create the history and farm tables and the mi_agent role\n"
        "  submit: --model FILE --device PLUGIN:INDEX [--inputs SHAPES] [--knob K=V]\n"
        "          [--count N] [--repeats N] [--wait] [--timeout S]\n",
        stderr);
  return 2;
}

static int number(const char *s, double lo, double hi, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (*end || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  mi_agent_args_t a;
  const char *cmd = "run";
  char name[128], cache[512];
  memset(&a, 0, sizeof a);
  a.lease_s = 10;
  a.timeout_s = 120;
  a.repeats = 5;
  a.fingerprint = 1;
  a.plugins = secure_getenv("MI_PLUGIN_PATH");
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    double v;
    int has = i + 1 < argc;
    if (!strcmp(o, "run") || !strcmp(o, "setup") || !strcmp(o, "submit")) cmd = o;
    else if (!strcmp(o, "--wait")) a.wait = 1;
    else if (!strcmp(o, "--no-fingerprint")) a.fingerprint = 0;
    else if (!has) return usage();
    else if (!strcmp(o, "--db")) a.db = argv[++i];
    else if (!strcmp(o, "--plugins")) a.plugins = argv[++i];
    else if (!strcmp(o, "--name")) a.name = argv[++i];
    else if (!strcmp(o, "--cache")) a.cache = argv[++i];
    else if (!strcmp(o, "--model")) a.model = argv[++i];
    else if (!strcmp(o, "--device")) a.device = argv[++i];
    else if (!strcmp(o, "--inputs")) a.inputs = argv[++i];
    else if (!strcmp(o, "--knob")) a.knob = argv[++i];
    else if (!strcmp(o, "--env")) {
      if (a.env_count >= 7 || !strchr(argv[i + 1], '=')) return usage();
      a.env[a.env_count++] = argv[++i];
    } else if (number(argv[i + 1], 0.1, 86400, &v) == 0 &&
               (!strcmp(o, "--lease") || !strcmp(o, "--timeout") || !strcmp(o, "--exit-idle"))) {
      i++;
      if (!strcmp(o, "--lease")) a.lease_s = v;
      else if (!strcmp(o, "--timeout")) a.timeout_s = v;
      else a.exit_idle_s = v;
    } else if (number(argv[i + 1], 1, 1000000, &v) == 0 &&
               (!strcmp(o, "--count") || !strcmp(o, "--repeats"))) {
      i++;
      if (!strcmp(o, "--count")) a.count = (int32_t)v;
      else a.repeats = (int32_t)v;
    } else return usage();
  }
  if (!a.db || !mi_history_is_url(a.db)) {
    fputs("mi-agent: --db must be a postgresql:// URL\n", stderr);
    return usage();
  }
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
    fputs("mi-agent: --plugins DIR (or MI_PLUGIN_PATH) is needed\n", stderr);
    return usage();
  }
  if (!strcmp(cmd, "submit")) {
    if (a.count <= 0) a.count = 1;
    return mi_agent_submit(&a);
  }
  return mi_agent_run(&a);
}
