/* test_transform_config.c - model-side configuration: YAML loading, canonical text and hash,
 * errors with line:column, unknown node names. */
#include <dirent.h>

#include "test_transform_common.h"

static const char k_a[] =
    "version: 1\n"
    "passes:\n"
    "  fold_bn: true\n"
    "  layout: nhwc\n"
    "  channel_align: 8\n"
    "calibration: {method: percentile, percentile: 99.9}\n"
    "defaults:\n"
    "  weights: int8\n"
    "  scales: per_channel\n"
    "  activations: int8\n"
    "ops:\n"
    "  Gemm: {weights: fp16}\n"
    "layers:\n"
    "  stem.conv: {weights: fp32, activations: fp32}\n"
    "  block0.conv1.conv: {prune: 0.25, weights: int4}\n";

/* The same configuration: keys and overrides reordered, other spellings of the same values. */
static const char k_b[] =
    "layers:\n"
    "  block0.conv1.conv:\n"
    "    weights: int4\n"
    "    prune: 0.250\n"
    "  stem.conv: {activations: fp32, weights: fp32}\n"
    "defaults: {activations: int8, scales: per_channel, weights: int8}\n"
    "ops: {Gemm: {weights: fp16}}\n"
    "calibration:\n"
    "  percentile: 99.90\n"
    "  method: percentile\n"
    "passes: {channel_align: 8, layout: nhwc, fold_bn: yes}\n";

static mi_xf_config_t *parse(const char *text, mi_error_t *err) {
  mi_xf_config_t *c = NULL;
  mi_xf_config_parse(text, strlen(text), "test.yaml", &c, err);
  return c;
}

static void check_canonical(void) {
  mi_error_t err;
  mi_xf_config_t *a = parse(k_a, &err), *b = parse(k_b, &err);
  char *sa = NULL, *sb = NULL;
  CHECK(a && b, "parse: %s", err.message);
  if (!a || !b) goto done;
  CHECK(mi_xf_config_canonical(a, &sa, &err) == MI_OK, "%s", err.message);
  CHECK(mi_xf_config_canonical(b, &sb, &err) == MI_OK, "%s", err.message);
  CHECK(sa && sb && strcmp(sa, sb) == 0, "canonical differs:\n%s---\n%s", sa, sb);
  CHECK(mi_xf_config_hash(a) == mi_xf_config_hash(b) && mi_xf_config_hash(a) != 0, "hash differs");
  printf("%s", sa ? sa : "");
  /* One field changed: another hash. */
  b->layers[0].layer.prune = 0.5;
  CHECK(mi_xf_config_hash(a) != mi_xf_config_hash(b), "hash ignores prune");
  b->layers[0].layer.prune = 0.25;
  b->defaults.scales = MI_XF_PER_TENSOR;
  CHECK(mi_xf_config_hash(a) != mi_xf_config_hash(b), "hash ignores scales");
  /* A clone is the same configuration. */
  mi_xf_config_t *c = mi_xf_config_clone(a);
  CHECK(c && mi_xf_config_hash(c) == mi_xf_config_hash(a), "clone hash differs");
  mi_xf_config_destroy(c);
  /* Resolution: defaults < ops < layers. */
  mi_graph_t *g = zoo("resnet", 32);
  for (int32_t n = 0; g && n < g->node_count; n++) {
    mi_xf_layer_t l;
    mi_xf_config_resolve(a, g, n, &l);
    if (strcmp(g->nodes[n].name, "stem.conv") == 0)
      CHECK(l.weights == MI_XF_FP32 && l.activations == MI_XF_FP32, "stem resolve");
    else if (strcmp(g->nodes[n].name, "block0.conv1.conv") == 0)
      CHECK(l.weights == MI_XF_INT4 && l.prune == 0.25 && l.activations == MI_XF_INT8, "block0");
    else if (strcmp(g->nodes[n].op_type, "Gemm") == 0)
      CHECK(l.weights == MI_XF_FP16, "gemm resolve");
    else if (strcmp(g->nodes[n].op_type, "Conv") == 0)
      CHECK(l.weights == MI_XF_INT8 && l.scales == MI_XF_PER_CHANNEL, "conv resolve");
  }
  CHECK(g && mi_xf_config_check(a, g, &err) == MI_OK, "check: %s", err.message);
  mi_graph_destroy(g);
done:
  free(sa);
  free(sb);
  mi_xf_config_destroy(a);
  mi_xf_config_destroy(b);
}

static void expect_error(const char *text, int32_t code, const char *needle) {
  mi_error_t err;
  mi_xf_config_t *c = NULL;
  memset(&err, 0, sizeof err);
  int32_t rc = mi_xf_config_parse(text, strlen(text), "test.yaml", &c, &err);
  CHECK(rc == code && !c, "expected code %d, got %d for:\n%s", (int)code, (int)rc, text);
  CHECK(strstr(err.message, needle) != NULL, "message '%s' lacks '%s'", err.message, needle);
  printf("error: %s\n", err.message);
  mi_xf_config_destroy(c);
}

static void check_errors(void) {
  /* Broken YAML: the unclosed flow mapping is reported where libyaml finds it. */
  expect_error("defaults:\n  weights: int8\nops: {Gemm: {weights: fp16}\n", MI_ERR_PARSE, "test.yaml:4:");
  expect_error("defaults:\n  weights: int7\n", MI_ERR_PARSE, "test.yaml:2:12: weights: expected one of");
  expect_error("passes:\n  fold_bn: true\n  fuze: true\n", MI_ERR_PARSE, "test.yaml:3:3: unknown pass 'fuze'");
  expect_error("defaults: {prune: 2}\n", MI_ERR_PARSE, "test.yaml:1:19: prune");
  expect_error("layers:\n  a: {prune: 0.1}\n  a: {prune: 0.2}\n", MI_ERR_PARSE, "test.yaml:3:3: 'a' is given twice");
  expect_error("passes: {channel_align: 6}\n", MI_ERR_PARSE, "channel_align");

  /* An override naming a node the model does not have. */
  mi_error_t err;
  mi_xf_config_t *c = parse("defaults: {weights: int8}\nlayers:\n  no.such.conv: {weights: fp16}\n", &err);
  mi_graph_t *g = zoo("resnet", 32), *x = NULL;
  CHECK(c && g, "setup");
  if (c && g) {
    int32_t rc = mi_xf_apply(g, c, NULL, &x, NULL, &err);
    CHECK(rc == MI_ERR_NOT_FOUND && !x, "unknown node: rc %d", (int)rc);
    CHECK(strstr(err.message, "no.such.conv") && strstr(err.message, "test.yaml:3:3"), "message: %s", err.message);
    printf("error: %s\n", err.message);
  }
  mi_graph_destroy(x);
  mi_graph_destroy(g);
  mi_xf_config_destroy(c);
}

/* Every example under configs/examples/transform-*.yaml loads. */
static void check_examples(void) {
  const char *src = getenv("MI_SRC");
  char dir[1024];
  int seen = 0;
  if (!src) return;
  snprintf(dir, sizeof dir, "%s/configs/examples", src);
  DIR *d = opendir(dir);
  CHECK(d != NULL, "no %s", dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, "transform-", 10) != 0) continue;
    char path[2048];
    mi_error_t err;
    mi_xf_config_t *c = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    CHECK(mi_xf_config_load(path, &c, &err) == MI_OK, "%s", err.message);
    mi_xf_config_destroy(c);
    seen++;
  }
  if (d) closedir(d);
  CHECK(seen >= 3, "only %d examples", seen);
}

/* An empty file, a file of comments only and `~` are the empty configuration; float_output
 * changes the hash only when set. */
static void check_empty(void) {
  const char *texts[] = {"", "# nothing\n", "~\n"};
  mi_xf_config_t *base = mi_xf_config_create();
  for (int i = 0; i < 3; i++) {
    mi_error_t err;
    mi_xf_config_t *c = NULL;
    CHECK(mi_xf_config_parse(texts[i], strlen(texts[i]), "empty.yaml", &c, &err) == MI_OK,
          "'%s': %s", texts[i], err.message);
    CHECK(c && mi_xf_config_hash(c) == mi_xf_config_hash(base), "'%s' is not the empty config", texts[i]);
    mi_xf_config_destroy(c);
  }
  mi_error_t err;
  mi_xf_config_t *f = NULL;
  const char *y = "passes: {float_output: true}\n";
  CHECK(mi_xf_config_parse(y, strlen(y), "f.yaml", &f, &err) == MI_OK && f && f->float_output == 1,
        "float_output");
  char *canon = NULL;
  CHECK(f && mi_xf_config_canonical(f, &canon, &err) == MI_OK && strstr(canon, "float_output=1"),
        "canonical: %s", canon ? canon : "");
  CHECK(f && mi_xf_config_hash(f) != mi_xf_config_hash(base), "float_output hash");
  free(canon);
  mi_xf_config_destroy(f);
  mi_xf_config_destroy(base);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(check_empty),
    TU_CASE(check_canonical),
    TU_CASE(check_errors),
    TU_CASE(check_examples),
};

TU_MAIN(NULL, NULL)
