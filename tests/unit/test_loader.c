/* test_loader.c - ABI negotiation with purpose-built plugins: each case loads or is refused
 * with the right reason, and one bad plugin never stops the others. */
#include "test_loader_util.h"

static void test_older_minor(void) {
  mi_registry_t *r = tp_scan("older");
  mi_plugin_t *p = mi_registry_find(r, "test-older");
  mi_counter_desc_t *c = (mi_counter_desc_t *)1;
  mi_constraint_desc_t *k = (mi_constraint_desc_t *)1;
  uint32_t n = 99;
  CHECK(p != NULL);
  if (p) {
    CHECK(p->abi_major == 1 && p->abi_minor == 0);
    CHECK(p->declared_size == offsetof(mi_plugin_api_t, constraint_count));
    /* The plugin's static table has the optional functions filled in, but it declared a size
     * that ends before them: the host must not have read them. */
    CHECK(p->api.constraint_count == NULL && p->api.constraint_desc == NULL);
    CHECK(p->api.counter_count == NULL && p->api.counter_read == NULL);
    CHECK(p->api.check_config == NULL && p->api.set_device_knobs == NULL);
    CHECK(p->api.kernel_release != NULL);
    CHECK(mi_plugin_counters(p, 0, &c, &n, NULL) == MI_OK && n == 0 && c == NULL);
    CHECK(mi_plugin_constraints(p, 0, &k, &n, NULL) == MI_OK && n == 0 && k == NULL);
  }
  CHECK(mi_registry_rejected_count(r) == 0);
  mi_registry_destroy(r);
}

static void test_newer_minor(void) {
  mi_registry_t *r = tp_scan("newer");
  mi_plugin_t *p = mi_registry_find(r, "test-newer");
  mi_counter_desc_t *c = NULL;
  mi_constraint_desc_t *k = NULL;
  uint32_t n = 0, nk = 0;
  CHECK(p != NULL);
  if (p) {
    CHECK(p->abi_minor == 9);
    CHECK(p->declared_size > sizeof(mi_plugin_api_t));
    CHECK(p->api.counter_read != NULL && p->api.constraint_desc != NULL);
    CHECK(mi_plugin_counters(p, 0, &c, &n, NULL) == MI_OK && n == 1);
    if (n == 1) {
      CHECK(strcmp(c[0].name, "fake_energy") == 0 && c[0].modeled == 1);
      CHECK(c[0].kind == MI_COUNTER_TIMER);
    }
    CHECK(mi_plugin_constraints(p, 0, &k, &nk, NULL) == MI_OK && nk == 1);
    if (nk == 1) CHECK(k[0].kind == MI_CONSTRAINT_LESS_EQUAL && k[0].value == 32);
  }
  free(c);
  free(k);
  mi_registry_destroy(r);
}

static void test_null_optional(void) {
  mi_registry_t *r = tp_scan("null_optional");
  mi_plugin_t *p = mi_registry_find(r, "test-null-optional");
  mi_counter_desc_t *c = NULL;
  uint32_t n = 7;
  CHECK(p != NULL);
  if (p) {
    CHECK(p->declared_size == sizeof(mi_plugin_api_t));
    CHECK(p->api.counter_count == NULL && p->api.check_config == NULL);
    CHECK(mi_plugin_counters(p, 0, &c, &n, NULL) == MI_OK && n == 0 && c == NULL);
  }
  mi_registry_destroy(r);
}

/* One folder, one bad plugin, and the words its reason must contain. */
static void expect_refused(const char *c, const char *w1, const char *w2) {
  mi_registry_t *r = tp_scan(c);
  const char *why = tp_only_reason(r);
  const char *path = NULL;
  CHECK_CONTAINS(why, w1);
  if (w2) CHECK_CONTAINS(why, w2);
  mi_registry_rejected(r, 0, &path);
  CHECK_CONTAINS(path, ".mi-plugin");
  CHECK(mi_registry_rejected(r, 1, &path) == NULL && path == NULL);
  mi_registry_destroy(r);
}

static void test_template_loads(void) {
  mi_registry_t *r = tp_scan("template");
  mi_plugin_t *p = NULL;
  uint32_t dev = 9;
  mi_error_t err;
  mi_device_desc_t d;
  CHECK(mi_registry_plugin_count(r) == 1);
  CHECK(mi_registry_device(r, "template:0", &p, &dev, &err) == MI_OK && p && dev == 0);
  CHECK(mi_registry_device(r, "template", &p, &dev, &err) == MI_OK && dev == 0);
  CHECK(mi_registry_device(r, "template:1", &p, &dev, &err) == MI_ERR_NOT_FOUND && p == NULL);
  CHECK_CONTAINS(err.message, "1 device");
  CHECK(mi_registry_device(r, "nope:0", &p, &dev, &err) == MI_ERR_NOT_FOUND);
  CHECK_CONTAINS(err.message, "known: template");
  CHECK(mi_registry_device(r, "template:x", &p, &dev, &err) == MI_ERR_INVALID_ARGUMENT);
  p = mi_registry_plugin(r, 0);
  CHECK(p && p->device_count == 1 && p->ctx != NULL);
  if (p) {
    CHECK(mi_plugin_device_info(p, 0, &d, &err) == MI_OK);
    CHECK(d.kind == MI_DEVICE_CPU && d.dtype_mask == MI_DTYPE_BIT(MI_DTYPE_FLOAT32));
    CHECK(mi_plugin_device_info(p, 1, &d, &err) == MI_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(p->path, "libmi_test_template.so");
  }
  CHECK(mi_registry_plugin(r, 1) == NULL && mi_registry_plugin(r, -1) == NULL);
  mi_registry_destroy(r);
}

/* The mixed folder: every good plugin loads, each bad one is recorded with its reason. */
static void test_mixed(void) {
  static const struct {
    const char *manifest, *w1, *w2;
  } bad[] = {
      {"test-no-entry.mi-plugin", "missing entry symbol", NULL},
      {"test-wrong-major.mi-plugin", "wrong major", "ABI 2."},
      {"test-refuse.mi-plugin", "negotiation refused", "needs ABI 9.0 features"},
      {"test-too-small.mi-plugin", "table too small", "kernel_release"},
      {"test-create-fail.mi-plugin", "create failed", "no device present"},
      {"test-bad-knob.mi-plugin", "invalid description", "default 1000"},
      {"test-garbage.mi-plugin", "dlopen error", NULL},
      {"zz-duplicate.mi-plugin", "duplicate", "'template'"},
      {"mismatch.mi-plugin", "manifest names 'mismatch'", "test-null-optional"},
      {"escape.mi-plugin", "escapes", "../older"},
      {"future-major.mi-plugin", "wrong major", "manifest declares ABI 2"},
  };
  mi_registry_t *r = tp_scan("mixed");
  size_t i;
  int32_t j;
  CHECK(mi_registry_plugin_count(r) == 3);
  CHECK(mi_registry_find(r, "template") != NULL);
  CHECK(mi_registry_find(r, "test-older") != NULL);
  CHECK(mi_registry_find(r, "test-null-optional") != NULL);
  CHECK(mi_registry_find(r, "mismatch") == NULL);
  CHECK(mi_registry_rejected_count(r) == (int32_t)(sizeof bad / sizeof bad[0]));
  /* The first "template" wins: the duplicate named libmi_tp_older.so, not the template. */
  if (mi_registry_find(r, "template"))
    CHECK_CONTAINS(mi_registry_find(r, "template")->path, "libmi_test_template.so");
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int found = 0;
    for (j = 0; j < mi_registry_rejected_count(r); j++) {
      const char *path = NULL, *why = mi_registry_rejected(r, j, &path);
      const char *slash = strrchr(path, '/');
      if (slash && strcmp(slash + 1, bad[i].manifest) == 0) {
        found = 1;
        CHECK_CONTAINS(why, bad[i].w1);
        if (bad[i].w2) CHECK_CONTAINS(why, bad[i].w2);
      }
    }
    if (!found) {
      fprintf(stderr, "mixed: %s was not reported\n", bad[i].manifest);
      g_failures++;
    }
  }
  mi_registry_destroy(r);
}

static void test_registry_basics(void) {
  mi_registry_t *r = mi_registry_create();
  mi_error_t err;
  mi_registry_destroy(NULL);
  CHECK(mi_registry_scan(r, "/nonexistent/mi-plugins", &err) == MI_ERR_IO);
  CHECK_CONTAINS(err.message, "/nonexistent/mi-plugins");
  CHECK(mi_registry_plugin_count(r) == 0 && mi_registry_rejected_count(r) == 0);
  CHECK(mi_registry_find(r, "template") == NULL);
  CHECK(mi_registry_plugin_count(NULL) == 0);
  mi_registry_destroy(r);
}

static void expect_refused_all(void) {
  expect_refused("no_entry", "missing entry symbol", "mi_plugin_entry");
  expect_refused("wrong_major", "wrong major", "plugin speaks ABI 2.");
  expect_refused("refuse", "negotiation refused", "test plugin needs ABI 9.0 features");
  expect_refused("too_small", "table too small", "through kernel_release");
  expect_refused("create_fail", "create failed", "no device present");
  expect_refused("null_required", "required function 'kernel_run' is NULL", NULL);
  expect_refused("garbage", "dlopen error", NULL);
  expect_refused("bad_knob", "invalid description", "default 1000 outside its domain");
  expect_refused("bad_counter", "invalid description", "unknown kind 42");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_older_minor),
    TU_CASE(test_newer_minor),
    TU_CASE(test_null_optional),
    TU_CASE(expect_refused_all),
    TU_CASE(test_template_loads),
    TU_CASE(test_mixed),
    TU_CASE(test_registry_basics),
};

TU_MAIN(NULL, NULL)
