/* cmd_history.c - `mi-host history export|import|stats|prune|layer-tasks`: the evaluation log as JSON Lines,
 * its counts, and dropping failed or chosen records. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metainfer/mi_ltask.h"
#include "mi_host.h"

/* history layer-tasks: one line per task (rows come per key, best first). */
typedef struct {
  int json;
  char key[17];
  int64_t tasks;
} ltask_print_t;

static int print_ltask(void *user, const mi_ltask_row_t *r) {
  ltask_print_t *p = user;
  if (!strcmp(p->key, r->key)) return 0;
  snprintf(p->key, sizeof p->key, "%s", r->key);
  p->tasks++;
  if (p->json) {
    int first = 1;
    const char *k[] = {"key", "device_hash", "stack_hash", "op", "best", "text"};
    const char *v[] = {r->key, r->device_hash, r->stack_hash, r->op, r->ok ? r->choice : NULL, r->text};
    fputc('{', stdout);
    for (int i = 0; i < 6; i++) {
      mi_json_key(stdout, &first, k[i]);
      if (v[i]) mi_json_string(stdout, v[i]);
      else
        fputs("null", stdout);
    }
    mi_json_key(stdout, &first, "seconds");
    mi_json_double(stdout, r->ok ? r->seconds : NAN);
    fputc('}', stdout);
    fputc('\n', stdout);
  } else {
    printf("%s %s %-10s %10.3f us  %s\n    %s\n", r->key, r->device_hash, r->op, r->ok ? r->seconds * 1e6 : NAN,
           r->ok ? r->choice : "(every choice failed)", r->text);
  }
  return 0;
}

#define OPTIONS(X)                                                           \
  X(O_DB, "db", "FILE|URL",                                                  \
    "the history: an SQLite file (default history.db) or a\n"                \
    "postgresql:// URL")                                                     \
  X(O_OUT, "out", "FILE", "export: write to FILE instead of stdout")         \
  X(O_JSON, "json", NULL, "stats: print one JSON object")                    \
  X(O_FAILED, "failed", NULL, "prune: drop the failed records")              \
  X(O_MODEL, "model", "NAME|HASH", "prune: drop every record of this model") \
  X(O_DEVICE, "device", "SPEC|NAME|HASH", "prune: drop every record of this device")
MI_CLI_TABLE(OPTIONS, k_opts);

int mi_host_cmd_history(mi_host_t *h, int argc, char **argv) {
  static const char *const subs[] = {"export", "import", "stats", "prune", "layer-tasks"};
  const char *sub = NULL, *db = "history.db", *file = NULL, *hit;
  mi_history_t *hist = NULL;
  mi_error_t err;
  mi_history_prune_t pr;
  mi_cli_t c;
  int rc = MI_HOST_OK, k;
  memset(&pr, 0, sizeof pr);
  mi_host_cli(h, &c, "history", k_opts);
  c.footer =
      "export: every record as JSON Lines; import FILE: add the records of FILE ('-':\n"
      "stdin) that are not there yet; stats: counts; prune: drop the records --failed,\n"
      "--model or --device select (at least one); layer-tasks: each layer task's best\n"
      "kernel choice per device and stack (docs/tuning.md).";
  mi_cli_begin(&c, argc, argv);
  while ((k = mi_cli_next(&c)) != MI_CLI_END) {
    if (k == MI_CLI_EXIT) return MI_HOST_OK;
    if (k == MI_CLI_ERROR) return MI_HOST_USAGE;
    if (k == O_JSON) h->json = 1;
    else if (k == O_DB)
      db = c.value;
    else if (k == O_OUT)
      file = c.value;
    else if (k == O_FAILED)
      pr.failed = 1;
    else if (k == O_MODEL)
      pr.model = c.value;
    else if (k == O_DEVICE)
      pr.device = c.value;
    else if (!sub)
      sub = c.value;
    else if (!file)
      file = c.value;
    else
      return mi_cli_error(&c, "unexpected argument '%s'", c.value);
  }
  if (!sub) return mi_cli_error(&c, "needs export, import, stats, prune or layer-tasks");
  if (strcmp(sub, "export") && strcmp(sub, "import") && strcmp(sub, "stats") && strcmp(sub, "prune") &&
      strcmp(sub, "layer-tasks")) {
    if ((hit = mi_cli_suggest(sub, subs, 5)))
      mi_cli_error(&c, "unknown subcommand '%s'; did you mean '%s'?", sub, hit);
    else
      mi_cli_error(&c, "unknown subcommand '%s' (export, import, stats, prune or layer-tasks)", sub);
    return MI_HOST_USAGE;
  }
  if (strcmp(sub, "prune") && (pr.failed || pr.model || pr.device))
    return mi_cli_error(&c, "--failed, --model and --device are for prune");
  if (!strcmp(sub, "prune") && (file || (!pr.failed && !pr.model && !pr.device)))
    return mi_cli_error(&c, "prune needs --failed, --model or --device (all records of a model or device)");
  if (!strcmp(sub, "import") && !file) return mi_host_usage_error("history import needs a FILE");
  if (!strcmp(sub, "export") && file && strcmp(file, "-")) {
    /* export's FILE is its output: `history export history.db` opened the default history for
     * writing and emptied it (0 bytes, every record lost) before reading it. */
    struct stat a, b;
    if (!strcmp(file, db) || (stat(file, &a) == 0 && stat(db, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino))
      return mi_cli_error(&c, "export: the output '%s' is the history itself (--db %s); give another file", file, db);
  }
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
  } else if (!strcmp(sub, "layer-tasks")) {
    ltask_print_t p;
    memset(&p, 0, sizeof p);
    p.json = h->json;
    if (mi_history_ltask_query(hist, NULL, NULL, NULL, NULL, print_ltask, &p, &err)) {
      fprintf(stderr, "mi-host: history layer-tasks: %s\n", err.message);
      rc = MI_HOST_FAIL;
    } else if (!h->json) {
      printf("%lld layer tasks\n", (long long)p.tasks);
    }
  } else if (!strcmp(sub, "prune")) {
    int64_t removed = 0;
    if (mi_history_prune(hist, &pr, &removed, &err)) {
      fprintf(stderr, "mi-host: history prune: %s\n", err.message);
      rc = MI_HOST_FAIL;
    } else if (h->json) {
      printf("{\"removed\":%lld}\n", (long long)removed);
    } else {
      printf("removed %lld records\n", (long long)removed);
    }
  } else {
    mi_history_stats_t s;
    if (mi_history_stats(hist, &s, &err)) {
      fprintf(stderr, "mi-host: history stats: %s\n", err.message);
      rc = MI_HOST_FAIL;
    } else {
      /* The same figures in the same order, as JSON or as text. */
      printf(h->json ? "{\"schema_version\":%d,\"runs\":%lld,\"tasks\":%lld,\"configs\":%lld,"
                       "\"stacks\":%lld,\"devices\":%lld,\"measurements\":%lld,\"failed\":%lld}\n"
                     : "schema version %d\nruns %lld\ntasks %lld\nconfigs %lld\nstacks %lld\n"
                       "devices %lld\nmeasurements %lld (failed %lld)\n",
             (int)s.schema_version, (long long)s.runs, (long long)s.tasks, (long long)s.configs,
             (long long)s.stacks, (long long)s.devices, (long long)s.measurements,
             (long long)s.failed);
    }
  }
  mi_history_close(hist);
  return rc;
}
