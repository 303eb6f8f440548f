/* test_core_file.c - core's basics: whole-file reading with its size bound, the clocks, and the
 * public manifest reader that deploy and mi-conform use. */
#include <unistd.h>

#include "core/core.h"
#include "metainfer/mi.h"
#include "test_util.h"

static char g_dir[128];

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
}

static void test_read_file(void) {
  char path[256], *buf = (char *)1;
  size_t n = 99;
  mi_error_t err;
  snprintf(path, sizeof path, "%s/three", g_dir);
  write_text(path, "abc");
  CHECK(mi__read_file(path, 3, &buf, &n, &err) == MI_OK);
  CHECK(buf && n == 3 && strcmp(buf, "abc") == 0);
  free(buf);
  /* one byte over the bound is refused, and nothing is handed back */
  CHECK(mi__read_file(path, 2, &buf, &n, &err) == MI_ERR_PARSE);
  CHECK(buf == NULL && n == 0);
  CHECK(strstr(err.message, "too large"), "%s", err.message);
  snprintf(path, sizeof path, "%s/none", g_dir);
  CHECK(mi__read_file(path, 100, &buf, &n, &err) == MI_ERR_IO);
  CHECK(buf == NULL);
  CHECK(strstr(err.message, "none"), "%s", err.message);
  /* a file whose size ftell cannot tell (procfs) still reads whole */
  CHECK(mi__read_file("/proc/self/status", 1 << 20, &buf, &n, &err) == MI_OK);
  CHECK(buf && n > 0 && strlen(buf) == n && strstr(buf, "Name:"));
  free(buf);
}

static void test_clocks(void) {
  char at[32];
  double a = mi_now_s(), b = mi_now_s();
  CHECK(a > 0 && b >= a);
  mi__now_iso(at);
  CHECK(strlen(at) == 20 && at[4] == '-' && at[10] == 'T' && at[19] == 'Z', "%s", at);
}

static void test_manifest_api(void) {
  char path[256];
  mi_manifest_t m = {0};
  mi_error_t err;
  const char *text = "name: acme\nlibrary: libacme.so\nabi_major: 1\n";
  snprintf(path, sizeof path, "%s/acme.mi-plugin", g_dir);
  write_text(path, text);
  REQUIRE(mi_manifest_load(path, &m, &err) == MI_OK);
  CHECK(strcmp(m.name, "acme") == 0 && strcmp(m.library, "libacme.so") == 0 && m.abi_major == 1);
  mi_manifest_clear(&m);
  CHECK(m.name == NULL && m.library == NULL);
  mi_manifest_clear(NULL);
  CHECK(mi_manifest_parse(text, strlen(text), NULL, &m, &err) == MI_OK && strcmp(m.name, "acme") == 0);
  mi_manifest_clear(&m);
  CHECK(mi_manifest_parse("name: a\n", 8, "x.mi-plugin", &m, &err) == MI_ERR_PARSE);
  CHECK(strstr(err.message, "x.mi-plugin"), "%s", err.message);
  CHECK(mi_manifest_load(NULL, &m, &err) == MI_ERR_INVALID_ARGUMENT);
  /* the library is not there: the load policy refuses before anything is opened */
  {
    char *real = (char *)1;
    REQUIRE(mi_manifest_load(path, &m, &err) == MI_OK);
    CHECK(mi_manifest_check_files(path, &m, &real, &err) != MI_OK);
    CHECK(real == NULL);
    mi_manifest_clear(&m);
  }
}

static void setup(void) { REQUIRE(tu_tempdir(g_dir, sizeof g_dir, "corefile")); }
static void teardown(void) { tu_rmtree(g_dir); }

static void nested_error(void) {
  /* A wrapped message too long for mi_error_t keeps its beginning and its end (the innermost
   * cause), the middle giving way to " ... "; one that fits is kept whole. */
  char inner[300];
  mi_error_t e;
  memset(inner, 'n', sizeof inner);
  snprintf(inner + 280, 20, "the cause");
  CHECK(mi__errorf_nested(&e, MI_ERR_PARSE, "node 'outer': %s", inner) == MI_ERR_PARSE &&
            e.code == MI_ERR_PARSE,
        "code");
  CHECK(strncmp(e.message, "node 'outer': nnn", 17) == 0 && strstr(e.message, " ... ") &&
            strlen(e.message) == sizeof e.message - 1 &&
            strcmp(e.message + strlen(e.message) - 9, "the cause") == 0,
        "cut: '%s'", e.message);
  mi__errorf_nested(&e, MI_ERR_PARSE, "node 'outer': %s", "short");
  CHECK(strcmp(e.message, "node 'outer': short") == 0, "whole: '%s'", e.message);
}

static void path_dir(void) {
  /* The folder a recipe's, a table's or a model's relative paths start from. */
  static const char *const cases[][2] = {
      {"a/b/recipe.yaml", "a/b"}, {"recipe.yaml", "."}, {"/recipe.yaml", "/"}, {"/x/m.onnx", "/x"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *d = mi__path_dir(cases[i][0]);
    CHECK(d && strcmp(d, cases[i][1]) == 0, "%s: '%s', not '%s'", cases[i][0], d ? d : "(null)",
          cases[i][1]);
    free(d);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(nested_error),
    TU_CASE(path_dir),
    TU_CASE(test_read_file),
    TU_CASE(test_clocks),
    TU_CASE(test_manifest_api),
};

TU_MAIN(setup, teardown)
