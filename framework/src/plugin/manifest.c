/* manifest.c - reads plugin manifests (<name>.mi-plugin, a small YAML mapping) with libyaml. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "plugin_internal.h"

void mi__manifest_clear(mi__manifest_t *m) {
  if (!m) return;
  free(m->name);
  free(m->library);
  m->name = NULL;
  m->library = NULL;
  m->abi_major = -1;
}

static char *dup_scalar(const yaml_node_t *n) {
  char *s = malloc(n->data.scalar.length + 1);
  if (s) {
    memcpy(s, n->data.scalar.value, n->data.scalar.length);
    s[n->data.scalar.length] = '\0';
  }
  return s;
}

/* One key/value pair of the root mapping. Unknown keys are ignored so that later manifests
 * may add keys without breaking older hosts. */
static int32_t take_pair(yaml_document_t *doc, const yaml_node_pair_t *pair, const char *what,
                         mi__manifest_t *m, mi_error_t *err) {
  yaml_node_t *k = yaml_document_get_node(doc, pair->key);
  yaml_node_t *v = yaml_document_get_node(doc, pair->value);
  const char *key;
  if (!k || !v || k->type != YAML_SCALAR_NODE)
    return mi_errorf(err, MI_ERR_PARSE, "%s: keys must be plain names", what);
  key = (const char *)k->data.scalar.value;
  if (strcmp(key, "name") && strcmp(key, "library") && strcmp(key, "abi_major")) return MI_OK;
  if (v->type != YAML_SCALAR_NODE || v->data.scalar.length == 0 ||
      strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
    return mi_errorf(err, MI_ERR_PARSE, "%s:%lu:%lu: '%s' must be a non-empty scalar", what,
                     (unsigned long)v->start_mark.line + 1,
                     (unsigned long)v->start_mark.column + 1, key);
  if (strcmp(key, "abi_major") == 0) {
    const char *s = (const char *)v->data.scalar.value;
    char *end = NULL;
    long val;
    errno = 0;
    val = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || val < 0 || val > 1000000)
      return mi_errorf(err, MI_ERR_PARSE, "%s:%lu:%lu: abi_major '%s' is not a version number",
                       what, (unsigned long)v->start_mark.line + 1,
                       (unsigned long)v->start_mark.column + 1, s);
    m->abi_major = val;
    return MI_OK;
  }
  {
    char **slot = strcmp(key, "name") == 0 ? &m->name : &m->library;
    if (*slot)
      return mi_errorf(err, MI_ERR_PARSE, "%s:%lu: '%s' given twice", what,
                       (unsigned long)k->start_mark.line + 1, key);
    *slot = dup_scalar(v);
    if (!*slot) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
  return MI_OK;
}

int32_t mi__manifest_parse(const void *buf, size_t size, const char *what, mi__manifest_t *m,
                           mi_error_t *err) {
  yaml_parser_t parser;
  yaml_document_t doc;
  yaml_node_t *root;
  yaml_node_pair_t *pair;
  int32_t rc = MI_OK;
  int have_doc = 0;

  m->name = NULL;
  m->library = NULL;
  m->abi_major = -1;
  if (!yaml_parser_initialize(&parser))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: cannot initialise the YAML parser", what);
  yaml_parser_set_input_string(&parser, (const unsigned char *)buf, size);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s:%lu:%lu: %s", what,
                   (unsigned long)parser.problem_mark.line + 1,
                   (unsigned long)parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "malformed YAML");
    goto done;
  }
  have_doc = 1;
  root = yaml_document_get_root_node(&doc);
  if (!root || root->type != YAML_MAPPING_NODE) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: a manifest is a mapping with name, library, abi_major",
                   what);
    goto done;
  }
  for (pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top; pair++) {
    rc = take_pair(&doc, pair, what, m, err);
    if (rc != MI_OK) goto done;
  }
  if (!m->name || !m->library || m->abi_major < 0) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: missing key '%s'", what,
                   !m->name ? "name" : !m->library ? "library" : "abi_major");
    goto done;
  }

done:
  if (have_doc) yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc != MI_OK) mi__manifest_clear(m);
  return rc;
}

int32_t mi__manifest_load(const char *path, mi__manifest_t *m, mi_error_t *err) {
  FILE *f;
  char *buf = NULL;
  size_t n;
  int32_t rc;

  m->name = NULL;
  m->library = NULL;
  m->abi_major = -1;
  f = fopen(path, "rb");
  if (!f) return mi_errorf(err, MI_ERR_IO, "%s: cannot open manifest: %s", path, strerror(errno));
  buf = malloc(MI__MAX_MANIFEST_BYTES + 1);
  if (!buf) {
    fclose(f);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  n = fread(buf, 1, MI__MAX_MANIFEST_BYTES + 1, f);
  if (ferror(f))
    rc = mi_errorf(err, MI_ERR_IO, "%s: cannot read manifest", path);
  else if (n > MI__MAX_MANIFEST_BYTES)
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: manifest larger than %d bytes", path,
                   MI__MAX_MANIFEST_BYTES);
  else
    rc = mi__manifest_parse(buf, n, path, m, err);
  fclose(f);
  free(buf);
  return rc;
}
