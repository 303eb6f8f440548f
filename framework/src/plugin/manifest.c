/* manifest.c - reads plugin manifests (<name>.mi-plugin, a small YAML mapping) with libyaml, for
 * the loader and, through mi_manifest_load and friends, for programs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/core.h"
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
                   !m->name ? "name" : !m->library ? "library"
                                                   : "abi_major");
    goto done;
  }

done:
  if (have_doc) yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc != MI_OK) mi__manifest_clear(m);
  return rc;
}

int32_t mi__manifest_load(const char *path, mi__manifest_t *m, mi_error_t *err) {
  char *buf = NULL;
  size_t n;
  int32_t rc;

  m->name = NULL;
  m->library = NULL;
  m->abi_major = -1;
  if ((rc = mi__read_file(path, MI__MAX_MANIFEST_BYTES, &buf, &n, err)) != MI_OK) return rc;
  rc = mi__manifest_parse(buf, n, path, m, err);
  free(buf);
  return rc;
}

/* The public face of the loader's own reader (mi_core.h), so programs that inspect manifests
 * (the deployment runtime, mi-conform) read them exactly as a scan does. */
MI_API int32_t mi_manifest_load(const char *path, mi_manifest_t *m, mi_error_t *err) {
  if (!path || !m) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "manifest load: NULL argument");
  return mi__manifest_load(path, m, err);
}

MI_API int32_t mi_manifest_parse(const void *buf, size_t size, const char *what, mi_manifest_t *m,
                                 mi_error_t *err) {
  if ((!buf && size) || !m)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "manifest parse: NULL argument");
  return mi__manifest_parse(buf, size, what ? what : "<manifest>", m, err);
}

MI_API int32_t mi_manifest_check_files(const char *path, const mi_manifest_t *m, char **real_path,
                                       mi_error_t *err) {
  if (real_path) *real_path = NULL;
  if (!path || !m) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "manifest check: NULL argument");
  return mi__plugin_check_files(path, m, real_path, err);
}

MI_API void mi_manifest_clear(mi_manifest_t *m) { mi__manifest_clear(m); }
