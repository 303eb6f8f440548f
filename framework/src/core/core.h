/* core.h - the core module's basics for every other module: a growable string buffer with
 * JSON writers, and the monotonic clock. (Hashing and the random stream are public, in
 * metainfer/mi_core.h.) */
#ifndef MI_CORE_CORE_H
#define MI_CORE_CORE_H

#include <stddef.h>

/* A growable NUL-terminated string. `failed` sticks once an allocation fails. */
typedef struct mi__sbuf {
  char *s;
  size_t len, cap;
  int failed;
} mi__sbuf_t;

void mi__sbuf_printf(mi__sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends `s` as a JSON string literal. */
void mi__sbuf_json_string(mi__sbuf_t *b, const char *s);
/* Appends a number, null when not finite. */
void mi__sbuf_json_double(mi__sbuf_t *b, double v);
/* Hands the string over (NULL when an allocation failed, and the buffer is freed). */
char *mi__sbuf_take(mi__sbuf_t *b);

/* Seconds on the monotonic clock. */
double mi__now_s(void);

#endif
