/* cmd_history.c - `mi-host history export|import|stats`: the evaluation log as JSON Lines. */
#include <stdlib.h>
#include <string.h>

#include "mi_host.h"

static int usage(void) {
  return mi_host_usage_error("usage: history export [--out FILE] | import FILE | stats, "
                             "each with --db FILE");
}

int mi_host_cmd_history(mi_host_t *h, int argc, char **argv) {
  const char *sub = argc > 1 ? argv[1] : NULL, *db = "history.db", *file = NULL;
  mi_history_t *hist = NULL;
  mi_error_t err;
  int rc = MI_HOST_OK;
  if (!sub) return usage();
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) h->json = 1;
    else if ((!strcmp(argv[i], "--db") || !strcmp(argv[i], "--out")) && i + 1 < argc) {
      if (argv[i][2] == 'd') db = argv[++i];
      else file = argv[++i];
    } else if (argv[i][0] != '-' && !file) file = argv[i];
    else return usage();
  }
  if (strcmp(sub, "export") && strcmp(sub, "import") && strcmp(sub, "stats")) return usage();
  if (!strcmp(sub, "import") && !file) return mi_host_usage_error("history import needs a FILE");
  mi_error_clear(&err);
  if (mi_history_open(db, &hist, &err)) {
    fprintf(stderr, "mi-host: history: %s\n", err.message);
    return MI_HOST_FAIL;
  }
  if (!strcmp(sub, "export")) {
    FILE *f = file && strcmp(file, "-") ? fopen(file, "w") : stdout;
    int64_t n = 0;
    if (!f) {
      fprintf(stderr, "mi-host: history: cannot write '%s'\n", file);
      rc = MI_HOST_FAIL;
    } else {
      if (mi_history_export(hist, f, &n, &err)) {
        fprintf(stderr, "mi-host: history export: %s\n", err.message);
        rc = MI_HOST_FAIL;
      }
      if (f != stdout && fclose(f) != 0) rc = MI_HOST_FAIL;
      if (f != stdout) fprintf(stderr, "mi-host: exported %lld records\n", (long long)n);
    }
  } else if (!strcmp(sub, "import")) {
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    int64_t added = 0, skipped = 0;
    if (!f) {
      fprintf(stderr, "mi-host: history: cannot read '%s'\n", file);
      rc = MI_HOST_FAIL;
    } else {
      if (mi_history_import(hist, f, &added, &skipped, &err)) {
        fprintf(stderr, "mi-host: history import: %s: %s\n", file, err.message);
        rc = MI_HOST_FAIL;
      }
      if (f != stdin) fclose(f);
      printf("imported %lld records, skipped %lld already present\n", (long long)added,
             (long long)skipped);
    }
  } else {
    mi_history_stats_t s;
    if (mi_history_stats(hist, &s, &err)) {
      fprintf(stderr, "mi-host: history stats: %s\n", err.message);
      rc = MI_HOST_FAIL;
    } else if (h->json) {
      printf("{\"schema_version\":%d,\"runs\":%lld,\"tasks\":%lld,\"configs\":%lld,"
             "\"stacks\":%lld,\"devices\":%lld,\"measurements\":%lld,\"failed\":%lld}\n",
             (int)s.schema_version, (long long)s.runs, (long long)s.tasks,
             (long long)s.configs, (long long)s.stacks, (long long)s.devices,
             (long long)s.measurements, (long long)s.failed);
    } else {
      printf("schema version %d\nruns %lld\ntasks %lld\nconfigs %lld\nstacks %lld\n"
             "devices %lld\nmeasurements %lld (failed %lld)\n",
             (int)s.schema_version, (long long)s.runs, (long long)s.tasks,
             (long long)s.configs, (long long)s.stacks, (long long)s.devices,
             (long long)s.measurements, (long long)s.failed);
    }
  }
  mi_history_close(hist);
  return rc;
}
