/* space_ops.c - points of a space: defaults, sample, mutate, crossover, canonical text, hash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

int mi_space_active(const mi_space_t *s, const int32_t *pt, int32_t d) {
  const mi__dim_t *dim;
  if (!s || !pt || d < 0 || d >= s->dim_count) return 0;
  dim = &s->dims[d];
  if (!dim->reads) return 1;
  return (dim->reads[0] >> pt[dim->variant_dim]) & 1u;
}

void mi__space_normalize(const mi_space_t *s, int32_t *pt) {
  for (int32_t d = 0; d < s->dim_count; d++)
    if (!mi_space_active(s, pt, d)) pt[d] = s->dims[d].dflt;
}

void mi_space_default(const mi_space_t *s, int32_t *pt) {
  for (int32_t d = 0; s && d < s->dim_count; d++) pt[d] = s->dims[d].dflt;
}

int32_t mi_space_sample(const mi_space_t *s, mi_rng_t *rng, int32_t *pt, mi_error_t *err) {
  if (!s || !rng || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  for (int32_t d = 0; d < s->dim_count; d++) pt[d] = (int32_t)mi_rng_below(rng, (uint32_t)s->dims[d].count);
  return mi_space_repair(s, pt, NULL, err);
}

int32_t mi_space_mutate(const mi_space_t *s, mi_rng_t *rng, double prob, int32_t *pt,
                        mi_error_t *err) {
  int32_t changed = 0, movable = 0;
  if (!s || !rng || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  for (int32_t d = 0; d < s->dim_count; d++) {
    if (s->dims[d].count < 2 || !mi_space_active(s, pt, d)) continue;
    movable++;
    if (mi_rng_uniform(rng) < prob) {
      /* A different value, uniformly among the others. */
      int32_t v = (int32_t)mi_rng_below(rng, (uint32_t)s->dims[d].count - 1);
      pt[d] = v >= pt[d] ? v + 1 : v;
      changed++;
    }
  }
  if (!changed && movable) {
    int32_t pick = (int32_t)mi_rng_below(rng, (uint32_t)movable);
    for (int32_t d = 0; d < s->dim_count; d++) {
      if (s->dims[d].count < 2 || !mi_space_active(s, pt, d)) continue;
      if (pick-- == 0) {
        int32_t v = (int32_t)mi_rng_below(rng, (uint32_t)s->dims[d].count - 1);
        pt[d] = v >= pt[d] ? v + 1 : v;
        break;
      }
    }
  }
  return mi_space_repair(s, pt, NULL, err);
}

int32_t mi_space_crossover(const mi_space_t *s, mi_rng_t *rng, const int32_t *a, const int32_t *b,
                           int32_t *child, mi_error_t *err) {
  int32_t last_node = -2, from_a = 1;
  if (!s || !rng || !a || !b || !child)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  for (int32_t d = 0; d < s->dim_count; d++) {
    int32_t node = s->dims[d].node;
    /* A node's dimensions are contiguous and travel together: its knobs only make sense with
     * the variant they were chosen for. Global dimensions are drawn one by one. */
    if (node < 0 || node != last_node) from_a = mi_rng_below(rng, 2) == 0;
    last_node = node;
    child[d] = from_a ? a[d] : b[d];
  }
  return mi_space_repair(s, child, NULL, err);
}

typedef struct named_dim {
  const char *name;
  int32_t d;
} named_dim_t;

static int cmp_named(const void *x, const void *y) {
  return strcmp(((const named_dim_t *)x)->name, ((const named_dim_t *)y)->name);
}

int32_t mi__space_sort_names(mi_space_t *s, mi_error_t *err) {
  named_dim_t *v = malloc(((size_t)s->dim_count + 1) * sizeof *v);
  if (!v || !(s->name_order = malloc(((size_t)s->dim_count + 1) * sizeof *s->name_order))) {
    free(v);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  }
  for (int32_t d = 0; d < s->dim_count; d++) v[d] = (named_dim_t){s->dims[d].name, d};
  qsort(v, (size_t)s->dim_count, sizeof *v, cmp_named);
  for (int32_t i = 0; i < s->dim_count; i++) s->name_order[i] = v[i].d;
  free(v);
  return MI_OK;
}

int32_t mi_space_canonical(const mi_space_t *s, const int32_t *pt, char **out, mi_error_t *err) {
  size_t len = 1, off = 0;
  char *text;
  if (out) *out = NULL;
  if (!s || !pt || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  for (int32_t d = 0; d < s->dim_count; d++) {
    if (pt[d] < 0 || pt[d] >= s->dims[d].count)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: %s has no value %d", s->dims[d].name, (int)pt[d]);
    if (mi_space_active(s, pt, d)) len += strlen(s->dims[d].name) + strlen(s->dims[d].labels[pt[d]]) + 2;
  }
  if (!(text = malloc(len))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  text[0] = '\0';
  /* In name order: the text does not depend on the order dimensions were declared in. */
  for (int32_t i = 0; i < s->dim_count; i++) {
    int32_t d = s->name_order[i];
    if (mi_space_active(s, pt, d))
      off += (size_t)snprintf(text + off, len - off, "%s=%s\n", s->dims[d].name, s->dims[d].labels[pt[d]]);
  }
  *out = text;
  return MI_OK;
}

uint64_t mi_space_hash(const mi_space_t *s, const int32_t *pt) {
  char *text = NULL;
  uint64_t h = 0xcbf29ce484222325ull;
  if (mi_space_canonical(s, pt, &text, NULL) != MI_OK) return 0;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  free(text);
  return h;
}

int32_t mi_space_parse(const mi_space_t *s, const char *text, int32_t *pt, mi_error_t *err) {
  int32_t line = 0;
  const char *p = text;
  if (!s || !text || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  mi_space_default(s, pt);
  while (*p) {
    const char *e = strchr(p, '\n'), *eq;
    size_t n = e ? (size_t)(e - p) : strlen(p);
    int32_t d, v = -1;
    line++;
    eq = memchr(p, '=', n);
    if (n == 0) goto next;
    if (!eq) return mi_errorf(err, MI_ERR_PARSE, "configuration line %d: no '='", (int)line);
    for (d = 0; d < s->dim_count; d++)
      if (strlen(s->dims[d].name) == (size_t)(eq - p) && !memcmp(s->dims[d].name, p, (size_t)(eq - p)))
        break;
    if (d == s->dim_count)
      return mi_errorf(err, MI_ERR_PARSE, "configuration line %d: unknown key '%.*s'", (int)line,
                       (int)(eq - p > 120 ? 120 : eq - p), p);
    for (int32_t i = 0; i < s->dims[d].count; i++) {
      const char *lab = s->dims[d].labels[i];
      if (strlen(lab) == n - (size_t)(eq + 1 - p) && !memcmp(lab, eq + 1, strlen(lab))) v = i;
    }
    if (v < 0)
      return mi_errorf(err, MI_ERR_PARSE, "configuration line %d: '%s' has no value '%.*s'",
                       (int)line, s->dims[d].name, (int)(n - (size_t)(eq + 1 - p)), eq + 1);
    pt[d] = v;
  next:
    p += n + (e ? 1 : 0);
  }
  mi__space_normalize(s, pt);
  return MI_OK;
}
