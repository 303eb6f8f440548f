/* sbuf.c - a growable string buffer with JSON string and number writers: what every module's
 * reports use. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static int grow(mi__sbuf_t *b, size_t need) {
  char *p;
  size_t cap;
  if (b->failed) return 0;
  if (b->len + need + 1 <= b->cap) return 1;
  cap = b->cap ? b->cap : 256;
  while (cap < b->len + need + 1) cap *= 2;
  p = realloc(b->s, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->s = p;
  b->cap = cap;
  return 1;
}

void mi__sbuf_printf(mi__sbuf_t *b, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !grow(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void mi__sbuf_json_string(mi__sbuf_t *b, const char *s) {
  if (!s) {
    mi__sbuf_printf(b, "null");
    return;
  }
  mi__sbuf_printf(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') mi__sbuf_printf(b, "\\%c", c);
    else if (c < 0x20)
      mi__sbuf_printf(b, "\\u%04x", c);
    else
      mi__sbuf_printf(b, "%c", c);
  }
  mi__sbuf_printf(b, "\"");
}

void mi__sbuf_json_double(mi__sbuf_t *b, double v) {
  if (isfinite(v)) mi__sbuf_printf(b, "%.9g", v);
  else
    mi__sbuf_printf(b, "null");
}

char *mi__sbuf_take(mi__sbuf_t *b) {
  char *s = b->s;
  if (b->failed || !s) {
    free(b->s);
    s = NULL;
  }
  memset(b, 0, sizeof *b);
  return s;
}
