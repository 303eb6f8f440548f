/* json.c - the few JSON writers mi-host needs: escaped strings, numbers, keys. */
#include <math.h>

#include "mi_host.h"

int mi_host_utf8_len(const unsigned char *p) {
  int n, i;
  if (p[0] < 0x80) return 1;
  if (p[0] >= 0xc2 && p[0] <= 0xdf) n = 2;
  else if (p[0] >= 0xe0 && p[0] <= 0xef)
    n = 3;
  else if (p[0] >= 0xf0 && p[0] <= 0xf4)
    n = 4;
  else
    return 0;
  for (i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  return n;
}

void mi_json_string(FILE *f, const char *s) {
  const unsigned char *p;
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    case '\b': fputs("\\b", f); break;
    case '\f': fputs("\\f", f); break;
    default:
      /* Control characters are escaped; bytes that are not UTF-8 (a plugin's strings are
       * only checked for a terminator) become U+FFFD so the output stays valid JSON. */
      if (*p < 0x20 || *p == 0x7f) {
        fprintf(f, "\\u%04x", *p);
      } else {
        int n = mi_host_utf8_len(p);
        if (n == 0) {
          fputs("\\ufffd", f);
        } else {
          fwrite(p, 1, (size_t)n, f);
          p += n - 1;
        }
      }
    }
  }
  fputc('"', f);
}

void mi_json_double(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.17g", v);
  else
    fputs("null", f);
}

void mi_json_key(FILE *f, int *first, const char *key) {
  if (!*first) fputc(',', f);
  *first = 0;
  mi_json_string(f, key);
  fputc(':', f);
}
