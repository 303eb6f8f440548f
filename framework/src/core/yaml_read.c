/* yaml_read.c - loads a YAML document with libyaml once its size, nesting and aliases are
 * known to be within bounds. */
#include <stdlib.h>
#include <string.h>

#include "core/yaml_io.h"

static int32_t syntax_error(const yaml_parser_t *p, const char *what, mi_error_t *err) {
  return mi_errorf(err, MI_ERR_PARSE, "%s:%d:%d: %s", what, (int)p->problem_mark.line + 1,
                   (int)p->problem_mark.column + 1, p->problem ? p->problem : "not YAML");
}

/* The first document's events, counted. libyaml's scanner costs O(open flow collections) per
 * token, so stopping at the first level past the limit keeps the whole pass linear; the
 * document loader (and our recursive walks after it) only ever see bounded documents. */
static int32_t check_events(const char *text, size_t len, const char *what,
                            const mi__yaml_limits_t *lim, mi_error_t *err) {
  yaml_parser_t p;
  yaml_event_t ev;
  int32_t depth = 0, aliases = 0, rc = MI_OK;
  int32_t max_depth = lim->max_depth > 0 ? lim->max_depth : MI__YAML_MAX_DEPTH;
  if (!yaml_parser_initialize(&p))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  for (;;) {
    yaml_event_type_t type;
    if (!yaml_parser_parse(&p, &ev)) {
      rc = syntax_error(&p, what, err);
      break;
    }
    type = ev.type;
    if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
      if (++depth > max_depth)
        rc = mi_errorf(err, MI_ERR_PARSE, "%s:%d:%d: nested deeper than %d levels", what,
                       (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1, (int)max_depth);
    } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
      depth--;
    } else if (type == YAML_ALIAS_EVENT && ++aliases > lim->max_aliases) {
      rc = lim->max_aliases == 0
               ? mi_errorf(err, MI_ERR_PARSE, "%s:%d:%d: aliases (*name) are not allowed here",
                           what, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1)
               : mi_errorf(err, MI_ERR_PARSE, "%s:%d:%d: more than %d aliases (*name)", what,
                           (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                           (int)lim->max_aliases);
    }
    yaml_event_delete(&ev);
    /* yaml_parser_load reads the first document only: so does this pass. */
    if (rc != MI_OK || type == YAML_DOCUMENT_END_EVENT || type == YAML_STREAM_END_EVENT) break;
  }
  yaml_parser_delete(&p);
  return rc;
}

int32_t mi__yaml_load(const char *text, size_t len, const char *what, const mi__yaml_limits_t *lim,
                      yaml_document_t *doc, mi_error_t *err) {
  yaml_parser_t p;
  int32_t rc;
  memset(doc, 0, sizeof *doc);
  if (len > lim->max_bytes)
    return mi_errorf(err, MI_ERR_PARSE, "%s: too large (%zu bytes; at most %zu)", what, len,
                     lim->max_bytes);
  if ((rc = check_events(text, len, what, lim, err)) != MI_OK) return rc;
  if (!yaml_parser_initialize(&p))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  rc = yaml_parser_load(&p, doc) ? MI_OK : syntax_error(&p, what, err);
  yaml_parser_delete(&p);
  if (rc != MI_OK) memset(doc, 0, sizeof *doc);
  return rc;
}

int32_t mi__yaml_walk(const char *text, size_t len, const char *what, const mi__yaml_limits_t *lim,
                      int32_t (*walk)(void *user, yaml_document_t *doc), void *user,
                      mi_error_t *err) {
  yaml_document_t doc;
  int32_t rc = mi__yaml_load(text, len, what, lim, &doc, err);
  if (rc != MI_OK) return rc;
  rc = walk(user, &doc);
  yaml_document_delete(&doc);
  return rc;
}

typedef struct key_ref {
  const char *s;
  int32_t pos;
} key_ref_t;

static int cmp_key(const void *a, const void *b) {
  const key_ref_t *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

int mi__yaml_repeated_key(yaml_document_t *doc, const yaml_node_t *map, const yaml_node_t **first,
                          const yaml_node_t **again) {
  const yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
  size_t n = (size_t)(map->data.mapping.pairs.top - pairs), m = 0;
  int32_t best = -1, best_first = -1;
  key_ref_t *k;
  if (n < 2) return 0;
  if (!(k = malloc(n * sizeof *k))) return -1;
  for (size_t i = 0; i < n; i++) {
    const yaml_node_t *kn = yaml_document_get_node(doc, pairs[i].key);
    if (kn && kn->type == YAML_SCALAR_NODE)
      k[m++] = (key_ref_t){(const char *)kn->data.scalar.value, (int32_t)i};
  }
  qsort(k, m, sizeof *k, cmp_key);
  /* Equal keys are adjacent, in file order: report the repeat that comes first in the file. */
  for (size_t i = 1, run = 0; i < m; i++) {
    if (strcmp(k[i].s, k[run].s) != 0) {
      run = i;
      continue;
    }
    if (best < 0 || k[i].pos < best) {
      best = k[i].pos;
      best_first = k[run].pos;
    }
  }
  free(k);
  if (best < 0) return 0;
  *first = yaml_document_get_node(doc, pairs[best_first].key);
  *again = yaml_document_get_node(doc, pairs[best].key);
  return 1;
}
