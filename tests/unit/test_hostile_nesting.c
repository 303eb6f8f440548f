/* test_hostile_nesting.c - deeply nested inputs end in one error naming the file and where, not
 * in a stack overflow or minutes of parsing: an ONNX model of 3,000 nested If subgraphs (protobuf-c
 * recursed once per level and overflowed the stack), and 200 KB YAML recipes, transform
 * configurations and deployment tables nested 100,000 levels deep (libyaml's scanner is
 * quadratic in the depth of flow collections: 54 s and 98 s before the error). */
#include <stdint.h>

#include "metainfer/mi.h"
#include "test_util.h"

/* ---------------------------------------------------------------- protobuf, by hand */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    REQUIRE(b->p);
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void varint(buf_t *b, uint64_t v) {
  do {
    uint8_t c = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) c |= 0x80;
    put(b, &c, 1);
  } while (v);
}

/* Field `f` holding the bytes of `inner` (wire type 2). */
static void ld(buf_t *b, unsigned f, const void *inner, size_t n) {
  varint(b, (uint64_t)f << 3 | 2);
  varint(b, n);
  put(b, inner, n);
}

static void str(buf_t *b, unsigned f, const char *s) { ld(b, f, s, strlen(s)); }

/* ModelProto{ir_version 8, graph: `levels` Ifs, each holding the next in then_branch, opset 13}. */
static buf_t nested_ifs(int levels) {
  buf_t g = {0}, model = {0}, opset = {0};
  str(&g, 2, "g"); /* GraphProto.name */
  for (int i = 0; i < levels; i++) {
    buf_t attr = {0}, node = {0}, outer = {0};
    str(&attr, 1, "then_branch");
    varint(&attr, 20 << 3); /* AttributeProto.type = GRAPH */
    varint(&attr, 5);
    ld(&attr, 6, g.p, g.n); /* AttributeProto.g */
    str(&node, 1, "c");
    str(&node, 2, "y");
    str(&node, 4, "If");
    ld(&node, 5, attr.p, attr.n);
    ld(&outer, 1, node.p, node.n); /* GraphProto.node */
    str(&outer, 2, "g");
    free(g.p);
    free(attr.p);
    free(node.p);
    g = outer;
  }
  varint(&model, 1 << 3);
  varint(&model, 8);
  ld(&model, 7, g.p, g.n);
  str(&opset, 1, "");
  varint(&opset, 2 << 3);
  varint(&opset, 13);
  ld(&model, 8, opset.p, opset.n);
  free(g.p);
  free(opset.p);
  return model;
}

static void test_onnx(void) {
  mi_graph_t *g = NULL;
  mi_error_t err = {0};
  buf_t m = nested_ifs(3000);
  char dir[64], path[128];
  FILE *f;
  CHECK(m.n > 50000 && m.n < 150000, "the model is %zu bytes", m.n);
  CHECK(mi_onnx_load_buffer(m.p, m.n, ".", &g, &err) == MI_ERR_PARSE && !g, "3000 levels: %s",
        err.message);
  CHECK(
      strstr(err.message,
             "<memory>: not a valid ONNX model (subgraphs nested deeper than 16 levels, at byte "),
      "%s", err.message);
  /* From a file, the error names it. */
  REQUIRE(tu_tempdir(dir, sizeof dir, "nesting"));
  snprintf(path, sizeof path, "%s/deep.onnx", dir);
  REQUIRE((f = fopen(path, "wb")) && fwrite(m.p, 1, m.n, f) == m.n && fclose(f) == 0);
  CHECK(mi_onnx_load(path, &g, &err) == MI_ERR_PARSE && strstr(err.message, path) &&
            strstr(err.message, "nested deeper"),
        "%s", err.message);
  tu_rmtree(dir);
  free(m.p);
  /* The limit is the importer's: 17 nested graphs refused before protobuf-c, 16 left to it. */
  m = nested_ifs(17);
  CHECK(mi_onnx_load_buffer(m.p, m.n, ".", &g, &err) == MI_ERR_PARSE &&
            strstr(err.message, "at byte"),
        "17 levels: %s", err.message);
  free(m.p);
  m = nested_ifs(16);
  if (mi_onnx_load_buffer(m.p, m.n, ".", &g, &err) == MI_OK)
    mi_graph_destroy(g);
  else
    CHECK(!strstr(err.message, "at byte"), "16 levels: %s", err.message);
  free(m.p);
}

/* ---------------------------------------------------------------- YAML */

/* `head` then `depth` levels of `open`, a leaf, and as many `close`. */
static char *deep(const char *head, const char *open, const char *leaf, const char *close,
                  int depth) {
  size_t n = strlen(head) + (strlen(open) + strlen(close)) * (size_t)depth + strlen(leaf) + 2;
  char *s = malloc(n), *w = s;
  REQUIRE(s);
  w += snprintf(w, n, "%s", head);
  for (int i = 0; i < depth; i++) w += snprintf(w, n - (size_t)(w - s), "%s", open);
  w += snprintf(w, n - (size_t)(w - s), "%s", leaf);
  for (int i = 0; i < depth; i++) w += snprintf(w, n - (size_t)(w - s), "%s", close);
  snprintf(w, n - (size_t)(w - s), "\n");
  return s;
}

/* One document, through the three parsers that read YAML. */
static int32_t parse_as(int kind, const char *text, mi_error_t *err) {
  int32_t rc;
  if (kind == 0) {
    mi_deploy_table_t *t = NULL;
    rc = mi_deploy_parse(text, strlen(text), "dep.yaml", &t, err);
    mi_deploy_destroy(t);
  } else if (kind == 1) {
    mi_recipe_t *r = NULL;
    rc = mi_recipe_parse(text, strlen(text), "recipe.yaml", NULL, &r, err);
    mi_recipe_destroy(r);
  } else {
    mi_xf_config_t *c = NULL;
    rc = mi_xf_config_parse(text, strlen(text), "config.yaml", &c, err);
    mi_xf_config_destroy(c);
  }
  return rc;
}

static void test_yaml(void) {
  static const char *const names[] = {"dep.yaml", "recipe.yaml", "config.yaml"};
  static const char *const heads[] = {
      "version: 1\ndeployments: ", "version: 1\nmodel: m.onnx\npool: ", "version: 1\nlayers: "};
  for (int kind = 0; kind < 3; kind++) {
    char where[32], block_head[64];
    mi_error_t err = {0};
    char *docs[3];
    /* the same key with its list on the next lines, for block style */
    snprintf(block_head, sizeof block_head, "%.*s\n", (int)strlen(heads[kind]) - 1, heads[kind]);
    /* 200 KB: flow sequences, flow mappings and block sequences, 40,000 to 100,000 deep. */
    docs[0] = deep(heads[kind], "[", "1", "]", 100000);
    docs[1] = deep(heads[kind], "{a: ", "1", "}", 40000);
    docs[2] = deep(block_head, "- ", "x", "", 100000);
    snprintf(where, sizeof where, "%s:", names[kind]);
    for (int d = 0; d < 3; d++) {
      CHECK(strlen(docs[d]) >= 200000, "document %d is %zu bytes", d, strlen(docs[d]));
      CHECK(parse_as(kind, docs[d], &err) == MI_ERR_PARSE && strstr(err.message, where) &&
                strstr(err.message, "nested deeper than") && !strchr(err.message, '\n'),
            "%s, document %d: %s", names[kind], d, err.message);
      free(docs[d]);
    }
  }
}

/* Each alias repeats a subtree for the walkers: tables (which never hold one) refuse them,
 * recipes and configurations count them; oversized files are refused before parsing. */
static void test_yaml_bounds(void) {
  mi_error_t err = {0};
  const char *alias = "version: 1\ndeployments: &d []\nassignment: *d\n";
  size_t big = (64u << 20) + 16; /* over every limit: tables take 64 MiB */
  char *text = malloc(big + 1);
  CHECK(parse_as(0, alias, &err) == MI_ERR_PARSE && strstr(err.message, "dep.yaml:3:13: aliases"),
        "%s", err.message);
  REQUIRE(text);
  memset(text, ' ', big);
  text[big] = '\0';
  for (int kind = 0; kind < 3; kind++)
    CHECK(parse_as(kind, text, &err) == MI_ERR_PARSE && strstr(err.message, "too large"), "%d: %s",
          kind, err.message);
  free(text);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_onnx),
    TU_CASE(test_yaml),
    TU_CASE(test_yaml_bounds),
};

TU_MAIN(NULL, NULL)
