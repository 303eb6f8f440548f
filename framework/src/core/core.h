/* core.h - the core module's basics for every other module: a growable string buffer with
 * JSON writers, the clocks and whole-file reading. (Hashing and the random stream are
 * public, in metainfer/mi_core.h.) */
#ifndef MI_CORE_CORE_H
#define MI_CORE_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metainfer/mi_plugin.h"

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

/* mi_array_create without zeroing the data (the bytes past nbytes still are): for an array the
 * caller fills whole at once, a device output read back (a decoding step's caches: megabytes a
 * token written twice). */
struct mi_array;
struct mi_array *mi__array_create_unset(int32_t dtype, int32_t rank, const int64_t *dims);

/* mi_now_s under the name the framework's files have always called it by. */
double mi__now_s(void);
/* The UTC time now as "YYYY-MM-DDTHH:MM:SSZ" (stored records' created_at). */
void mi__now_iso(char out[32]);

/* Reads the whole file at `path` into *buf (NUL-terminated, *n bytes without the NUL; free()
 * it). MI_ERR_IO when it cannot be opened or read, MI_ERR_PARSE when it holds more than `max`
 * bytes, MI_ERR_OUT_OF_MEMORY; on failure *buf is NULL. */
int32_t mi__read_file(const char *path, size_t max, char **buf, size_t *n, mi_error_t *err);
/* The folder of `path`, malloc'd: "." when it names none, "/" for a file in the root; NULL when
 * out of memory. Files a recipe, table or model names are found relative to it. */
char *mi__path_dir(const char *path);
/* Flushes, fsyncs and closes f, the temporary file `tmp` about to be renamed into place, so what
 * was written survives a crash; f is closed whatever happens. MI_OK, or MI_ERR_IO naming tmp. */
int32_t mi__file_close_synced(FILE *f, const char *tmp, mi_error_t *err);

/* mi_errorf for a message that wraps an inner one (a node around the error of a subgraph, a
 * subgraph around a node): when the whole does not fit in the message, its middle gives way to
 * "...", so the outermost context and the innermost cause, which ends the text, both survive
 * however deep the nesting (Silero VAD's LSTM two If levels down used to lose its cause). */
int32_t mi__errorf_nested(mi_error_t *err, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The integer element types as values: 1 for INT8..UINT64 (not BOOL, not INT4's packed
 * bytes). */
static inline int mi__dtype_is_int(int32_t d) {
  return d == MI_DTYPE_INT8 || d == MI_DTYPE_UINT8 || d == MI_DTYPE_INT16 || d == MI_DTYPE_UINT16 ||
         d == MI_DTYPE_INT32 || d == MI_DTYPE_UINT32 || d == MI_DTYPE_INT64 || d == MI_DTYPE_UINT64;
}
static inline int mi__dtype_is_unsigned(int32_t d) {
  return d == MI_DTYPE_UINT8 || d == MI_DTYPE_UINT16 || d == MI_DTYPE_UINT32 || d == MI_DTYPE_UINT64 ||
         d == MI_DTYPE_BOOL;
}
/* Element i of integer (or BOOL) data of dtype d, sign- or zero-extended to 64 bits; a UINT64
 * above INT64_MAX comes back as its bit pattern (cast to uint64_t to read it). */
static inline int64_t mi__int_load(const void *p, int32_t d, int64_t i) {
  switch (d) {
  case MI_DTYPE_INT8: return ((const int8_t *)p)[i];
  case MI_DTYPE_INT16: return ((const int16_t *)p)[i];
  case MI_DTYPE_UINT16: return ((const uint16_t *)p)[i];
  case MI_DTYPE_INT32: return ((const int32_t *)p)[i];
  case MI_DTYPE_UINT32: return ((const uint32_t *)p)[i];
  case MI_DTYPE_INT64:
  case MI_DTYPE_UINT64: return ((const int64_t *)p)[i];
  default: return ((const uint8_t *)p)[i]; /* UINT8, BOOL */
  }
}
/* Stores v into element i, keeping its low bits (wrap-around, as C's unsigned conversions). */
static inline void mi__int_store(void *p, int32_t d, int64_t i, int64_t v) {
  switch (d) {
  case MI_DTYPE_INT16:
  case MI_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
  case MI_DTYPE_INT32:
  case MI_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  case MI_DTYPE_INT64:
  case MI_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
  case MI_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  default: ((uint8_t *)p)[i] = (uint8_t)v; break; /* INT8, UINT8 */
  }
}
/* n little-endian float64 values at src as float32, each rounded to nearest: the framework
 * holds DOUBLE tensors so (the ONNX loader's initializers, a '<f8' .npy). */
void mi__f64_narrow(const unsigned char *src, size_t n, float *dst);
/* Element i of integer data as a double (a UINT64 as unsigned). */
static inline double mi__int_load_f64(const void *p, int32_t d, int64_t i) {
  int64_t v = mi__int_load(p, d, i);
  return d == MI_DTYPE_UINT64 ? (double)(uint64_t)v : (double)v;
}

#endif
