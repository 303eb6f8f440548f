/* test_loader_manifest.c - manifests (libyaml), unsafe paths and permissions, duplicates
 * and MI_PLUGIN_PATH, using manifests written into temporary folders. */
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/plugin_internal.h"
#include "test_loader_util.h"

static void write_file(const char *dir, const char *name, const char *text) {
  char path[PATH_MAX + 64];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
}

static void test_parse(void) {
  mi__manifest_t m;
  mi_error_t err;
  const char *ok = "# comment\nname: \"blis-cpu\"\nlibrary: libx.so\nabi_major: 1\nfuture: [1, 2]\n";
  CHECK(mi__manifest_parse(ok, strlen(ok), "ok", &m, &err) == MI_OK);
  CHECK(m.name && strcmp(m.name, "blis-cpu") == 0 && strcmp(m.library, "libx.so") == 0);
  CHECK(m.abi_major == 1);
  mi__manifest_clear(&m);
  CHECK(mi__manifest_parse("name: a\nlibrary: b\n", 19, "t.mi-plugin", &m, &err) == MI_ERR_PARSE);
  CHECK_CONTAINS(err.message, "missing key 'abi_major'");
  CHECK(m.name == NULL && m.library == NULL);
  CHECK(mi__manifest_parse("name: [a\n", 9, "t.mi-plugin", &m, &err) == MI_ERR_PARSE);
  CHECK_CONTAINS(err.message, "t.mi-plugin:");
  CHECK(mi__manifest_parse("- a\n- b\n", 8, "t", &m, &err) == MI_ERR_PARSE);
  CHECK_CONTAINS(err.message, "mapping");
  CHECK(mi__manifest_parse("name: a\nlibrary: b\nabi_major: one\n", 34, "t", &m, &err) ==
        MI_ERR_PARSE);
  CHECK_CONTAINS(err.message, "abi_major 'one'");
  CHECK_CONTAINS(err.message, "t:3:");
  CHECK(mi__manifest_parse("name: a\nname: b\nlibrary: c\nabi_major: 1\n", 40, "t", &m, &err) ==
        MI_ERR_PARSE);
  CHECK_CONTAINS(err.message, "twice");
  CHECK(mi__manifest_parse("", 0, "t", &m, &err) == MI_ERR_PARSE);
}

/* Bad manifests and unsafe files in one temporary folder: each refused with its reason. */
static void test_refusals(void) {
  char dir[] = "/tmp/mi-loader-test-XXXXXX";
  char sub[256], path[PATH_MAX];
  mi_registry_t *r;
  mi_error_t err;
  int32_t i;
  static const struct {
    const char *manifest, *word;
  } want[] = {
      {"a-abs.mi-plugin", "escapes"},
      {"b-dotdot.mi-plugin", "escapes"},
      {"c-broken.mi-plugin", "c-broken.mi-plugin:"},
      {"d-missing.mi-plugin", "cannot stat library"},
      {"e-writable.mi-plugin", "world-writable"},
      {"f-subdir.mi-plugin", "world-writable"},
  };
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  write_file(dir, "a-abs.mi-plugin", "name: a\nlibrary: /usr/lib/libc.so.6\nabi_major: 1\n");
  write_file(dir, "b-dotdot.mi-plugin", "name: b\nlibrary: lib/../../x.so\nabi_major: 1\n");
  write_file(dir, "c-broken.mi-plugin", "name: c\nlibrary: {\n");
  write_file(dir, "d-missing.mi-plugin", "name: d\nlibrary: libnothere.so\nabi_major: 1\n");
  write_file(dir, "e-writable.mi-plugin", "name: e\nlibrary: libe.so\nabi_major: 1\n");
  write_file(dir, "libe.so", "not a library");
  snprintf(path, sizeof path, "%s/libe.so", dir);
  CHECK(chmod(path, 0666) == 0);
  /* A library in a world-writable subfolder. */
  snprintf(sub, sizeof sub, "%s/open", dir);
  CHECK(mkdir(sub, 0700) == 0 && chmod(sub, 0777) == 0);
  write_file(sub, "libf.so", "not a library");
  write_file(dir, "f-subdir.mi-plugin", "name: f\nlibrary: open/libf.so\nabi_major: 1\n");
  write_file(dir, "not-a-manifest.txt", "name: g\n");

  r = mi_registry_create();
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK);
  CHECK(mi_registry_plugin_count(r) == 0);
  CHECK(mi_registry_rejected_count(r) == (int32_t)(sizeof want / sizeof want[0]));
  for (i = 0; i < mi_registry_rejected_count(r) && i < (int32_t)(sizeof want / sizeof want[0]);
       i++) {
    const char *p = NULL, *why = mi_registry_rejected(r, i, &p);
    CHECK_CONTAINS(p, want[i].manifest); /* scanned in sorted order */
    CHECK_CONTAINS(why, want[i].word);
  }
  mi_registry_destroy(r);

  /* A world-writable plugin folder is refused as a whole plugin, never loaded. */
  CHECK(chmod(dir, 0777) == 0);
  r = mi_registry_create();
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK);
  CHECK(mi_registry_plugin_count(r) == 0);
  CHECK_CONTAINS(mi_registry_rejected(r, 3, NULL), "world-writable");
  mi_registry_destroy(r);

  for (i = 0; i < (int32_t)(sizeof want / sizeof want[0]); i++) {
    snprintf(path, sizeof path, "%s/%s", dir, want[i].manifest);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/libe.so", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/not-a-manifest.txt", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/libf.so", sub);
  unlink(path);
  rmdir(sub);
  rmdir(dir);
}

/* MI_PLUGIN_PATH: several folders, missing ones skipped, the same name twice refused. */
static void test_env_path(void) {
  char env[3 * PATH_MAX + 32]; /* three paths and the separators */
  mi_registry_t *r = mi_registry_create();
  mi_error_t err;
  char tmpl[PATH_MAX];
  snprintf(tmpl, sizeof tmpl, "%s", tp_dir("template"));
  snprintf(env, sizeof env, "%s:/nonexistent/mi:%s::%s", tmpl, tp_dir("older"), tmpl);
  CHECK(setenv("MI_PLUGIN_PATH", env, 1) == 0);
  CHECK(mi_registry_scan_env(r, &err) == MI_OK);
  CHECK(mi_registry_plugin_count(r) == 2);
  CHECK(mi_registry_find(r, "template") && mi_registry_find(r, "test-older"));
  CHECK(mi_registry_rejected_count(r) == 1);
  CHECK_CONTAINS(mi_registry_rejected(r, 0, NULL), "duplicate");
  mi_registry_destroy(r);

  unsetenv("MI_PLUGIN_PATH");
  r = mi_registry_create();
  CHECK(mi_registry_scan_env(r, &err) == MI_OK && mi_registry_plugin_count(r) == 0);
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_parse),
    TU_CASE(test_refusals),
    TU_CASE(test_env_path),
};

TU_MAIN(NULL, NULL)
