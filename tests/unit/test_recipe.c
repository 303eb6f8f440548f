/* test_recipe.c - YAML recipes: the documented schema, resolved paths, and an error with
 * file:line:column for each kind of mistake. */
#include <unistd.h>

#include "test_space_util.h"

static char g_dir[128];

static void write_file(const char *name, const char *text) {
  char p[1024];
  FILE *f;
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  f = fopen(p, "w");
  if (!f) exit(1);
  fputs(text, f);
  fclose(f);
}

/* Parses `text` as g_dir/recipe.yaml; returns the status and leaves the message in err. */
static int32_t parse(const char *text, const mi_registry_t *reg, mi_recipe_t **out, mi_error_t *err) {
  char p[1024];
  snprintf(p, sizeof p, "%s/recipe.yaml", g_dir);
  return mi_recipe_parse(text, strlen(text), p, reg, out, err);
}

/* The error names recipe.yaml, the line and the column, and contains `what`. */
static void expect_error(const char *text, int line, int col, const char *what) {
  mi_recipe_t *r = NULL;
  mi_error_t err;
  char where[64];
  int32_t rc = parse(text, NULL, &r, &err);
  snprintf(where, sizeof where, "recipe.yaml:%d:%d:", line, col);
  CHECK(rc != MI_OK && r == NULL, "accepted: %s", text);
  CHECK(strstr(err.message, where) != NULL, "want %s in '%s'", where, err.message);
  CHECK(strstr(err.message, what) != NULL, "want '%s' in '%s'", what, err.message);
}

static void setup(void) {
  char p[1024];
  snprintf(g_dir, sizeof g_dir, "/tmp/mi-test-recipe-%d", (int)getpid());
  snprintf(p, sizeof p, "mkdir -p %s/models %s/calib", g_dir, g_dir);
  REQUIRE(system(p) == 0);
  write_file("models/net.onnx", "x");
  write_file("models/b.onnx", "x");
}

static void teardown(void) {
  char p[1024];
  snprintf(p, sizeof p, "rm -rf %s", g_dir);
  CHECK(system(p) == 0, "%s", p);
}

static void full_recipe(void) {
  mi_recipe_t *r = NULL;
  mi_error_t err;
  /* The example, with the extras. */
  CHECK(parse("version: 1\n"
              "model: models/net.onnx\n"
              "inputs: { x: [1, 3, 224, 224] }\n"
              "calibration: calib/\n"
              "pool: [ {plugin: blis-cpu}, {plugin: npu-stub, device: 0} ]\n"
              "constraints: { latency_ms: 5, peak_memory_mb: 64, accuracy_drop: 0.005 }\n"
              "objectives: [latency, energy]\n"
              "budget: { measurements: 17, seconds: 321 }\n"
              "history: history.db\n"
              "search: { strategy: random, seed: 9, model: [precision, fuse] }\n",
              NULL, &r, &err) == MI_OK,
        "%s", err.message);
  if (r) {
    CHECK(r->version == 1 && r->model_count == 1, "version/models");
    CHECK(strstr(r->models[0].path, g_dir) && strstr(r->models[0].path, "models/net.onnx"),
          "model path not resolved: %s", r->models[0].path);
    CHECK(r->input_count == 1 && r->inputs[0].rank == 4 && r->inputs[0].dims[3] == 224, "inputs");
    CHECK(r->device_count == 2 && !strcmp(r->pool[1].plugin, "npu-stub"), "pool");
    CHECK(r->has_bound[MI_OBJ_LATENCY] && r->bound[MI_OBJ_LATENCY] == 5 &&
              r->has_bound[MI_OBJ_MEMORY] && r->bound[MI_OBJ_ACCURACY] == 0.005 &&
              !r->has_bound[MI_OBJ_ENERGY],
          "constraints");
    CHECK(r->objective_count == 2 && r->objectives[1] == MI_OBJ_ENERGY, "objectives");
    CHECK(r->preference_count == 2 && r->preference[0] == MI_OBJ_LATENCY, "preference defaults");
    /* Not the defaults (40, 300): an ignored budget block fails here. */
    CHECK(r->budget_measurements == 17 && r->budget_seconds == 321, "budget %lld %g",
          (long long)r->budget_measurements, (double)r->budget_seconds);
    CHECK(r->history && strstr(r->history, g_dir), "history path");
    CHECK(r->seed == 9 && r->strategy && !strcmp(r->strategy, "random"), "search");
    CHECK(r->model_dims == (MI_SPACE_PRECISION | MI_SPACE_FUSE), "model dims %u", r->model_dims);
    mi_recipe_destroy(r);
    r = NULL;
  }
}

static void several_models(void) {
  mi_recipe_t *r = NULL;
  mi_error_t err;
  /* Several models. */
  CHECK(parse("version: 1\nmodel: [models/net.onnx, {path: models/b.onnx}]\npool: [npu-stub]\n",
              NULL, &r, &err) == MI_OK &&
            r && r->model_count == 2,
        "two models: %s", err.message);
  mi_recipe_destroy(r);
}

static void budget_count(void) {
  mi_recipe_t *r = NULL;
  mi_error_t err;
  /* `budget: 12` is a count of measurements; the seconds keep their default. */
  CHECK(parse("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbudget: 12\n", NULL, &r, &err) ==
                MI_OK &&
            r && r->budget_measurements == 12 && r->budget_seconds == 300,
        "budget: 12: %s", err.message);
  mi_recipe_destroy(r);
}

static void errors(void) {
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbudget: lots\n", 4, 9, "'budget' must be an integer");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbudget: [1]\n", 4, 9, "number of measurements or a mapping");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbogus: 3\n", 4, 1, "unknown key 'bogus'");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbudget: {measurements: -4}\n", 4, 24, "at least 0");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbudget:\n  seconds: -1\n", 5, 12, "negative");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nbudget: {measurements: many}\n", 4, 24, "integer");
  expect_error("version: 1\nmodel: models/none.onnx\npool: [npu-stub]\n", 2, 8, "not found");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nconstraints: {latency: 5}\n", 4, 15, "unknown constraint");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nobjectives: [speed]\n", 4, 14, "unknown objective");
  expect_error("version: 2\nmodel: models/net.onnx\npool: [npu-stub]\n", 1, 10, "not supported");
  expect_error("model: models/net.onnx\npool: [npu-stub]\n", 1, 1, "missing key 'version'");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [{plugin: x, dev: 1}]\n", 3, 20, "unknown key 'dev'");
  expect_error("version: 1\nmodel: [models/net.onnx\n", 3, 1, "");
  expect_error("version: 1\nmodel: models/net.onnx\ninputs: {x: [1, 0]}\npool: [npu-stub]\n", 3, 17, "at least 1");
  /* a key given twice is refused (the fuzzer found the second value leaking the first) */
  expect_error(
      "version: 1\nmodel: models/net.onnx\npool: [npu-stub]\n"
      "search: {strategy: random, strategy: nsga2}\n",
      4, 28, "given twice (first at line 4)");
  expect_error("version: 1\nmodel: models/net.onnx\npool: [npu-stub]\nversion: 1\n", 4, 1,
               "key 'version' given twice");
}

static void plugin_names(void) {
  mi_recipe_t *r = NULL;
  mi_error_t err;
  /* Plugin names are checked only when the registry is known. */
  mi_registry_t *reg = tsu_registry();
  CHECK(parse("version: 1\nmodel: models/net.onnx\npool: [{plugin: npu-stub}]\n", reg, &r, &err) == MI_OK,
        "%s", err.message);
  mi_recipe_destroy(r);
  r = NULL;
  CHECK(parse("version: 1\nmodel: models/net.onnx\npool: [{plugin: npu-stub}, {plugin: tpu}]\n", reg, &r, &err) ==
                MI_ERR_NOT_FOUND &&
            strstr(err.message, "recipe.yaml:3:28:") && strstr(err.message, "'tpu'"),
        "unknown plugin: %s", err.message);
  mi_registry_destroy(reg);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(full_recipe),
    TU_CASE(several_models),
    TU_CASE(budget_count),
    TU_CASE(errors),
    TU_CASE(plugin_names),
};

TU_MAIN(setup, teardown)
