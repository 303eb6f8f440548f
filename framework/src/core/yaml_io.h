/* yaml_io.h - libyaml with bounds when reading and with its emitter when writing: the one way the
 * framework reads and writes YAML (recipes, transform configurations, deployment tables). */
#ifndef MI_CORE_YAML_IO_H
#define MI_CORE_YAML_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <yaml.h>

#include "metainfer/mi_core.h"

/* Deeper than any file we read (a deployment table nests 6 levels, a recipe 4), far below the
 * depth at which libyaml 0.2.5's scanner turns quadratic: it walks its whole simple-key stack,
 * one entry per open flow collection, on every token. */
#define MI__YAML_MAX_DEPTH 32

/** What a document may hold before it is refused. */
typedef struct mi__yaml_limits {
  size_t max_bytes;    /* the text's size */
  int32_t max_depth;   /* nested sequences and mappings; 0: MI__YAML_MAX_DEPTH */
  int32_t max_aliases; /* `*name` references; each repeats a subtree for the walkers */
} mi__yaml_limits_t;

/** Loads the first document of `text` into *doc (yaml_document_delete it after) once a pass
 * over its events has checked the limits: nesting and aliases are counted while libyaml
 * parses, so a hostile document stops at the first level too deep, not after it is built.
 * Errors read "WHAT:LINE:COLUMN: message" (WHAT: "too large" without a position). */
int32_t mi__yaml_load(const char *text, size_t len, const char *what, const mi__yaml_limits_t *lim,
                      yaml_document_t *doc, mi_error_t *err);

/** mi__yaml_load, then walk(user, doc) on the loaded document, which is deleted after: the
 * loader's error or walk's status. For readers that turn a document into their own structs. */
int32_t mi__yaml_walk(const char *text, size_t len, const char *what, const mi__yaml_limits_t *lim,
                      int32_t (*walk)(void *user, yaml_document_t *doc), void *user,
                      mi_error_t *err);

/** Finds a key given twice in mapping `map` in O(n log n) (YAML leaves repeated keys undefined;
 * a pairwise check is quadratic in a hostile file). 1 with *first and *again set to the
 * earliest key that repeats and its first occurrence, 0 when every scalar key is distinct,
 * -1 when out of memory. */
int mi__yaml_repeated_key(yaml_document_t *doc, const yaml_node_t *map, const yaml_node_t **first,
                          const yaml_node_t **again);

/** A block-style YAML writer over libyaml's emitter: every string goes through its escaping
 * (quotes, newlines, control characters), so no value can add keys. The first failure is kept
 * and every later call is a no-op; mi__yw_end reports it. */
typedef struct mi__yaml_writer {
  yaml_emitter_t em;
  int open;          /* the emitter was initialized */
  char problem[160]; /* the first failure, "" when none */
} mi__yaml_writer_t;

/** Starts a stream and its one document on `f`; `comment` (one line, may be NULL) is written
 * first as a `# ` comment, with any control character replaced by a space. */
void mi__yw_begin(mi__yaml_writer_t *w, FILE *f, const char *comment);
void mi__yw_map(mi__yaml_writer_t *w);
void mi__yw_map_end(mi__yaml_writer_t *w);
void mi__yw_seq(mi__yaml_writer_t *w);
void mi__yw_seq_end(mi__yaml_writer_t *w);
/** A mapping key: plain when YAML allows it, quoted otherwise. */
void mi__yw_key(mi__yaml_writer_t *w, const char *key);
/** A string value, always double-quoted, so "1" or "true" stays a string. */
void mi__yw_str(mi__yaml_writer_t *w, const char *s);
/** A number written so that strtod reads back the same double (finite values only). */
void mi__yw_num(mi__yaml_writer_t *w, double v);
void mi__yw_int(mi__yaml_writer_t *w, long long v);
void mi__yw_bool(mi__yaml_writer_t *w, int v);
/** Ends the document and the stream and frees the emitter; the first failure (or MI_OK).
 * `what` names the output in the message. */
int32_t mi__yw_end(mi__yaml_writer_t *w, const char *what, mi_error_t *err);

#endif
