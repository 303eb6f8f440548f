/* test_history.c - the evaluation log: records and queries, the same-stack rule, JSON Lines
 * export/import round trip, idempotent import, bad lines reported by number, and migration of
 * a file written at schema version 1. */
#define _GNU_SOURCE 1
#include <math.h>
#include <sqlite3.h>
#include <unistd.h>

#include "history/history_internal.h"
#include "test_measure_util.h"

static void fill(mi_record_t *r, int ok, double median, const char *stack_hash) {
  static const double samples[] = {0.001, 0.0011, 0.0012};
  memset(r, 0, sizeof *r);
  r->model_hash = "00000000000000aa";
  r->model_name = "m.onnx";
  r->model_features_json = "{\"layers\":2}";
  r->batch = 1;
  r->input_shapes = "x:1x8x8x8";
  r->device_spec = "npu-stub:0";
  r->device_name = "npu \"gen1\"";
  r->device_hash = "00000000000000bb";
  r->config_canonical = ok ? "device{threads=2}" : "default";
  r->stack = stack_hash[15] == '1' ? "compiler=gcc;plugin=a 1" : "compiler=gcc;plugin=a 2";
  r->stack_hash = stack_hash;
  r->ok = ok;
  r->failure = ok ? NULL : "crashed: signal 11 (Segmentation fault)";
  if (ok) {
    r->clock = "device";
    mi_stats_compute(samples, 3, 0, &r->latency_s, NULL);
    r->latency_s.median = median;
    r->samples_json = "[0.001,0.0011,0.0012]";
    r->repeats = 5;
    r->rounds = 1;
    r->prepare_s = 0.002;
    r->energy_j = 1e-5;
    r->energy_source = MI_ENERGY_MODELED;
    r->layers_json = "[{\"node\":0,\"name\":\"conv\"}]";
    r->has_load = 1; /* schema 3: the machine's load, kept through export and import */
    r->load1 = 3.25;
    r->loaded = 1;
    r->has_paired = 1; /* schema 5: paired with a tune's default, kept through export and import */
    r->paired_ratio = 0.75;
    r->paired_s = 0.0016;
  }
}

static int count_rows(void *u, const mi_history_row_t *row) {
  (void)row;
  (*(int *)u)++;
  return 0;
}

/* Sums the paired ratios of the rows that have one; counts those that have none. */
static int paired_rows(void *u, const mi_history_row_t *row) {
  double *acc = u;
  if (isnan(row->paired_ratio) && isnan(row->paired_s)) acc[1] += 1;
  else
    acc[0] += row->paired_ratio + row->paired_s;
  return 0;
}

static int count_in(mi_history_t *h, const char *stack, int any) {
  mi_history_query_t q = {0};
  int n = 0;
  q.stack_hash = stack;
  q.any_stack = any;
  if (mi_history_query(h, &q, count_rows, &n, NULL)) return -1;
  return n;
}

static void test_put_query_roundtrip(const char *dir) {
  char a[128], b[128], jl[128], bad[128];
  mi_history_t *h = NULL, *h2 = NULL;
  mi_record_t r;
  mi_history_stats_t st;
  mi_error_t err;
  int64_t run = 0, id = 0, n = 0, added = 0, skipped = 0;
  FILE *f;
  snprintf(a, sizeof a, "%s/a.db", dir);
  snprintf(b, sizeof b, "%s/b.db", dir);
  snprintf(jl, sizeof jl, "%s/a.jsonl", dir);
  snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
  CHECK(mi_history_open(a, &h, &err) == MI_OK, "%s", err.message);
  if (!h) return;
  CHECK(mi_history_begin_run(h, "test", "note", &run, &err) == MI_OK && run > 0, "%s", err.message);
  fill(&r, 1, 0.001, "0000000000000001");
  r.run_id = run;
  CHECK(mi_history_put(h, &r, &id, &err) == MI_OK && id > 0, "%s", err.message);
  fill(&r, 0, 0, "0000000000000001");
  r.run_id = run;
  CHECK(mi_history_put(h, &r, &id, &err) == MI_OK, "%s", err.message);
  fill(&r, 1, 0.002, "0000000000000002");
  CHECK(mi_history_put(h, &r, &id, &err) == MI_OK, "%s", err.message);
  fill(&r, 1, 0.002, "0000000000000002");
  r.stack_hash = NULL;
  CHECK(mi_history_put(h, &r, &id, &err) == MI_ERR_INVALID_ARGUMENT, "incomplete record");
  CHECK(mi_history_stats(h, &st, &err) == MI_OK, "%s", err.message);
  CHECK(st.measurements == 3 && st.failed == 1 && st.stacks == 2 && st.tasks == 1 &&
            st.devices == 1 && st.configs == 2 && st.schema_version == MI_HISTORY_SCHEMA_VERSION,
        "stats m %lld f %lld s %lld t %lld", (long long)st.measurements, (long long)st.failed,
        (long long)st.stacks, (long long)st.tasks);
  /* Warm starts see only their own stack unless asked otherwise. */
  CHECK(count_in(h, "0000000000000001", 0) == 2, "stack 1");
  CHECK(count_in(h, "0000000000000002", 0) == 1, "stack 2");
  CHECK(count_in(h, NULL, 1) == 3, "any stack");
  CHECK(count_in(h, NULL, 0) == -1, "a stack is required");
  {
    /* The two good rows were paired (0.75 and 0.0016 s each); the failed one was not. */
    mi_history_query_t q = {0};
    double acc[2] = {0, 0};
    q.any_stack = 1;
    CHECK(mi_history_query(h, &q, paired_rows, acc, NULL) == MI_OK && fabs(acc[0] - 2 * 0.7516) < 1e-12 &&
              acc[1] == 1,
          "paired rows: sum %.17g, %g unpaired", acc[0], acc[1]);
  }
  /* Export, import into a fresh file, import again: nothing doubles. */
  f = fopen(jl, "w");
  CHECK(f && mi_history_export(h, f, &n, &err) == MI_OK && n == 3, "export %lld: %s",
        (long long)n, err.message);
  if (f) fclose(f);
  CHECK(mi_history_open(b, &h2, &err) == MI_OK, "%s", err.message);
  for (int pass = 0; h2 && pass < 2; pass++) {
    f = fopen(jl, "r");
    CHECK(f && mi_history_import(h2, f, &added, &skipped, &err) == MI_OK, "import: %s",
          err.message);
    if (f) fclose(f);
    CHECK(added == (pass ? 0 : 3) && skipped == (pass ? 3 : 0), "pass %d added %lld skipped %lld",
          pass, (long long)added, (long long)skipped);
  }
  if (h2) {
    mi_history_stats_t s2;
    CHECK(mi_history_stats(h2, &s2, &err) == MI_OK && s2.measurements == 3 && s2.failed == 1 &&
              s2.stacks == 2 && s2.runs == 1,
          "imported m %lld runs %lld", (long long)s2.measurements, (long long)s2.runs);
    CHECK(count_in(h2, "0000000000000001", 0) == 2, "stack kept on import");
  }
  /* The round trip is exact: exporting the copy gives the same lines. */
  {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    FILE *fx = open_memstream(&x, &nx), *fy = open_memstream(&y, &ny);
    mi_history_export(h, fx, &n, NULL);
    if (h2) mi_history_export(h2, fy, &n, NULL);
    fclose(fx);
    fclose(fy);
    CHECK(x && y && strcmp(x, y) == 0, "round trip differs:\n%s\n%s", x, y);
    CHECK(x && strstr(x, "\"load1\":3.25,\"loaded\":true") && strstr(x, "\"load1\":null"),
          "load in the export: %s", x);
    CHECK(x && strstr(x, "\"paired_ratio\":0.75,\"paired_s\":0.0016") && strstr(x, "\"paired_ratio\":null"),
          "paired runs in the export: %s", x);
    free(x);
    free(y);
  }
  /* A bad line stops the import and names its number; the lines before it stay. */
  f = fopen(bad, "w");
  if (f) {
    fputs("\n", f);
    fputs(
        "{\"format\":1,\"kind\":\"measurement\",\"uuid\":\"u-new\",\"task\":{\"model_hash\":\"m2\","
        "\"input_shapes\":\"x:1\"},\"device\":{\"hash\":\"d2\"},\"stack\":{\"hash\":\"s\","
        "\"text\":\"t\"},\"config\":{\"canonical\":\"default\"},\"result\":{\"ok\":false,"
        "\"failure\":\"timed out\"}}\n",
        f);
    fputs("{\"format\":1,\"kind\":\"measurement\",\"uuid\":\"u-bad\"}\n", f);
    fputs("not json\n", f);
    fclose(f);
  }
  f = fopen(bad, "r");
  CHECK(f && mi_history_import(h2 ? h2 : h, f, &added, &skipped, &err) == MI_ERR_PARSE, "bad");
  CHECK(strstr(err.message, "line 3") && strstr(err.message, "task.model_hash"), "message: %s",
        err.message);
  CHECK(added == 1, "line 2 imported: %lld", (long long)added);
  if (f) fclose(f);
  f = fopen(bad, "w");
  if (f) {
    fputs(
        "{\"format\":99,\"kind\":\"measurement\",\"uuid\":\"u\",\"task\":{\"model_hash\":\"m\","
        "\"input_shapes\":\"x\"},\"device\":{\"hash\":\"d\"},\"stack\":{\"hash\":\"s\","
        "\"text\":\"t\"},\"config\":{\"canonical\":\"c\"},\"result\":{\"ok\":true}}\n{oops\n",
        f);
    fclose(f);
  }
  f = fopen(bad, "r");
  CHECK(f && mi_history_import(h, f, &added, &skipped, &err) == MI_ERR_UNSUPPORTED &&
            strstr(err.message, "line 1") && strstr(err.message, "format"),
        "format version: %s", err.message);
  if (f) fclose(f);
  mi_history_close(h);
  mi_history_close(h2);
  mi_history_close(NULL);
}

static void test_migration(const char *dir) {
  char path[128];
  sqlite3 *db = NULL;
  mi_history_t *h = NULL;
  mi_history_stats_t st;
  mi_error_t err;
  snprintf(path, sizeof path, "%s/old.db", dir);
  /* A file as version 1 wrote it, with one measurement in it. */
  CHECK(sqlite3_open(path, &db) == SQLITE_OK, "open");
  CHECK(mi__sqlite_migrate(db, 1, &err) == MI_OK, "%s", err.message);
  CHECK(mi__sqlite_version(db) == 1, "v1");
  CHECK(sqlite3_exec(db,
                     "INSERT INTO stacks VALUES(1,'s','t'); INSERT INTO devices VALUES(1,'d','n',NULL);"
                     "INSERT INTO tasks VALUES(1,'m',NULL,NULL,1,1,'x');"
                     "INSERT INTO configs VALUES(1,'c','default','',NULL);"
                     "INSERT INTO measurements(uuid,task_id,config_id,stack_id,created_at,ok,"
                     "median_s) VALUES('old',1,1,1,'2024-01-01T00:00:00Z',1,0.5);",
                     NULL, NULL, NULL) == SQLITE_OK,
        "%s", sqlite3_errmsg(db));
  CHECK(sqlite3_exec(db, "SELECT discarded FROM measurements", NULL, NULL, NULL) != SQLITE_OK,
        "v1 has no discarded column");
  sqlite3_close(db);
  CHECK(mi_history_open(path, &h, &err) == MI_OK, "%s", err.message);
  CHECK(h && mi_history_stats(h, &st, &err) == MI_OK && st.schema_version == MI_HISTORY_SCHEMA_VERSION &&
            st.measurements == 1,
        "migrated: v%d m %lld", st.schema_version, (long long)st.measurements);
  mi_history_close(h);
  sqlite3_open(path, &db);
  CHECK(sqlite3_exec(db, "SELECT discarded FROM measurements", NULL, NULL, NULL) == SQLITE_OK,
        "v2 column");
  CHECK(sqlite3_exec(db, "SELECT load1, loaded FROM measurements", NULL, NULL, NULL) == SQLITE_OK,
        "v3 columns");
  CHECK(sqlite3_exec(db, "SELECT paired_ratio, paired_s FROM measurements", NULL, NULL, NULL) == SQLITE_OK,
        "v5 columns");
  /* A file from a newer build is refused, not damaged. */
  sqlite3_exec(db, "UPDATE schema_version SET version = 99", NULL, NULL, NULL);
  sqlite3_close(db);
  h = NULL;
  CHECK(mi_history_open(path, &h, &err) == MI_ERR_UNSUPPORTED && !h &&
            strstr(err.message, "newer"),
        "newer: %s", err.message);
}

/* A record whose session ran nodes on a fallback device gets the stack with that device named:
 * its own hash per device and version, the plain stack otherwise; the rows stay apart. */
static void test_fallback_stack(const char *dir) {
  static const char *const fbs[3] = {"fallback=blis-cpu 0.1.0 (pthread-AMD EPYC, driver blis-0.9.0)",
                                     "fallback=blis-cpu 0.2.0 (pthread-AMD EPYC, driver blis-0.9.0)",
                                     "fallback=template 1.0.0 (template CPU, driver template-1.0)"};
  char path[128], buf[3][768], hash[3][17], plain[17];
  mi_history_t *h = NULL;
  mi_profile_t p;
  mi_record_t r;
  mi_error_t err;
  snprintf(path, sizeof path, "%s/fb.db", dir);
  CHECK(mi_history_open(path, &h, &err) == MI_OK, "%s", err.message);
  if (!h) return;
  memset(&p, 0, sizeof p);
  fill(&r, 1, 0.001, "0000000000000001");
  snprintf(plain, sizeof plain, "%s", r.stack_hash);
  snprintf(p.fallback_stack, sizeof p.fallback_stack, "%s", fbs[0]);
  /* Every refused node on the reference: the plain stack. */
  CHECK(!mi_record_set_fallback_stack(&r, &p, buf[0], sizeof buf[0], hash[0]) &&
            !strcmp(r.stack, "compiler=gcc;plugin=a 1") && !strcmp(r.stack_hash, plain),
        "no node on the fallback device: stack '%s'", r.stack);
  CHECK(mi_history_put(h, &r, NULL, &err) == MI_OK, "%s", err.message);
  p.fallback_on_device = 2;
  for (int i = 0; i < 3; i++) {
    fill(&r, 1, 0.001 * (i + 2), "0000000000000001");
    snprintf(p.fallback_stack, sizeof p.fallback_stack, "%s", fbs[i]);
    CHECK(mi_record_set_fallback_stack(&r, &p, buf[i], sizeof buf[i], hash[i]) == 1, "set %d", i);
    CHECK(r.stack == buf[i] && r.stack_hash == hash[i] && !strncmp(r.stack, "compiler=gcc;plugin=a 1;", 24) &&
              !strcmp(r.stack + 24, fbs[i]),
          "stack %d: '%s'", i, r.stack);
    CHECK(strcmp(hash[i], plain) != 0, "stack %d has the plain stack's hash", i);
    for (int k = 0; k < i; k++) CHECK(strcmp(hash[i], hash[k]) != 0, "stacks %d and %d share a hash", i, k);
    CHECK(mi_history_put(h, &r, NULL, &err) == MI_OK, "%s", err.message);
  }
  CHECK(count_in(h, plain, 0) == 1, "plain stack rows: %d", count_in(h, plain, 0));
  for (int i = 0; i < 3; i++) CHECK(count_in(h, hash[i], 0) == 1, "stack %d rows: %d", i, count_in(h, hash[i], 0));
  mi_history_close(h);
}

static char dir[64];

static void setup(void) {
  REQUIRE(tu_tempdir(dir, sizeof dir, "history"));
}

static void put_query_roundtrip(void) {
  test_put_query_roundtrip(dir);
}

static void migration(void) {
  test_migration(dir);
}

static void fallback_stack(void) {
  test_fallback_stack(dir);
}

static void teardown(void) {
  if (g_failures) fprintf(stderr, "files in %s\n", dir);
  else
    REQUIRE(tu_rmtree(dir) == 0);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(put_query_roundtrip),
    TU_CASE(migration),
    TU_CASE(fallback_stack),
};

TU_MAIN(setup, teardown)
