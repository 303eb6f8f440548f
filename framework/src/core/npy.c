/* npy.c - reading and writing NumPy .npy files (v1-v3 headers, little-endian, C order). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "metainfer/mi_core.h"

/* The magic string, the two version bytes and the shortest length field (v1). */
static const char k_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
#define NPY_PREFIX_V1 10
#define NPY_PREFIX_V2 12
/* numpy refuses larger headers too; bounding it keeps a hostile header_len from costing us. */
#define NPY_MAX_HEADER (1u << 20)

/* What a header says about the data that follows it. */
typedef struct npy_header {
  int32_t dtype;
  int32_t rank;
  int64_t dims[MI_MAX_RANK];
  size_t data_bytes; /* in the file */
  int f8;            /* the file holds float64 ('<f8'): read as FLOAT32, rounded to nearest */
} npy_header_t;

/* The descr strings we accept; single-byte types may carry '|', '<' or '=' as numpy allows. */
static const struct {
  const char *descr;
  int32_t dtype;
} k_descrs[] = {
    {"<f4", MI_DTYPE_FLOAT32},
    {"<f2", MI_DTYPE_FLOAT16},
    {"|i1", MI_DTYPE_INT8},
    {"|u1", MI_DTYPE_UINT8},
    {"<i4", MI_DTYPE_INT32},
    {"<i8", MI_DTYPE_INT64},
    {"|b1", MI_DTYPE_BOOL},
    {"<i2", MI_DTYPE_INT16},
    {"<u2", MI_DTYPE_UINT16},
    {"<u4", MI_DTYPE_UINT32},
    {"<u8", MI_DTYPE_UINT64},
    {"<i1", MI_DTYPE_INT8},
    {"<u1", MI_DTYPE_UINT8},
    {"<b1", MI_DTYPE_BOOL},
    {"|?", MI_DTYPE_BOOL},
};

static const char *descr_of(int32_t dtype) {
  /* The first eleven entries are the canonical spelling of each dtype. */
  for (size_t i = 0; i < 11; i++)
    if (k_descrs[i].dtype == dtype) return k_descrs[i].descr;
  return NULL;
}

/* A cursor over the header dict; `what` names the file in every error. */
typedef struct cursor {
  const char *p, *end;
  const char *what;
  mi_error_t *err;
} cursor_t;

static void skip_ws(cursor_t *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static int expect(cursor_t *c, char ch) {
  skip_ws(c);
  if (c->p >= c->end || *c->p != ch)
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: expected '%c'", c->what,
                     ch);
  c->p++;
  return MI_OK;
}

/* A quoted Python string without escapes (numpy never writes any in these headers). */
static int parse_string(cursor_t *c, char *out, size_t cap) {
  char q;
  size_t n = 0;
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: expected a string",
                     c->what);
  q = *c->p++;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || *c->p == '\n' || n + 1 >= cap)
      return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: bad string", c->what);
    out[n++] = *c->p++;
  }
  if (c->p >= c->end)
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: unterminated string",
                     c->what);
  c->p++;
  out[n] = '\0';
  return MI_OK;
}

static int parse_bool(cursor_t *c, int *out) {
  skip_ws(c);
  if ((size_t)(c->end - c->p) >= 4 && memcmp(c->p, "True", 4) == 0) {
    c->p += 4;
    *out = 1;
    return MI_OK;
  }
  if ((size_t)(c->end - c->p) >= 5 && memcmp(c->p, "False", 5) == 0) {
    c->p += 5;
    *out = 0;
    return MI_OK;
  }
  return mi_errorf(c->err, MI_ERR_PARSE,
                   "%s: malformed .npy header: fortran_order is not "
                   "True or False",
                   c->what);
}

/* "(2, 3)", "(4,)" or "()": non-negative integers only. */
static int parse_shape(cursor_t *c, npy_header_t *h) {
  int comma = 0;
  if (expect(c, '(')) return MI_ERR_PARSE;
  h->rank = 0;
  for (;;) {
    int64_t v = 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == ')') break;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
      return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: bad shape", c->what);
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      if (v > (INT64_MAX - 9) / 10)
        return mi_errorf(c->err, MI_ERR_PARSE, "%s: .npy shape dimension overflows", c->what);
      v = v * 10 + (*c->p++ - '0');
    }
    if (h->rank >= MI_MAX_RANK)
      return mi_errorf(c->err, MI_ERR_PARSE, "%s: .npy rank exceeds %d", c->what, MI_MAX_RANK);
    h->dims[h->rank++] = v;
    comma = 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      comma = 1;
      continue;
    }
    if (c->p < c->end && *c->p == ')') break;
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: bad shape", c->what);
  }
  /* "(3)" is an int in Python, not a tuple: numpy never writes it, so neither do we accept it. */
  if (h->rank == 1 && !comma)
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: shape is not a tuple",
                     c->what);
  c->p++;
  return MI_OK;
}

/* Parses the dict text of a header: exactly the keys descr, fortran_order and shape. */
static int parse_dict(cursor_t *c, npy_header_t *h) {
  int seen_descr = 0, seen_fortran = 0, seen_shape = 0, fortran = 0;
  char key[32], descr[16];
  if (expect(c, '{')) return MI_ERR_PARSE;
  for (;;) {
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') break;
    if (parse_string(c, key, sizeof key) || expect(c, ':')) return MI_ERR_PARSE;
    if (strcmp(key, "descr") == 0 && !seen_descr) {
      seen_descr = 1;
      if (parse_string(c, descr, sizeof descr)) return MI_ERR_PARSE;
    } else if (strcmp(key, "fortran_order") == 0 && !seen_fortran) {
      seen_fortran = 1;
      if (parse_bool(c, &fortran)) return MI_ERR_PARSE;
    } else if (strcmp(key, "shape") == 0 && !seen_shape) {
      seen_shape = 1;
      if (parse_shape(c, h)) return MI_ERR_PARSE;
    } else {
      return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: unexpected key '%s'",
                       c->what, key);
    }
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    if (c->p < c->end && *c->p == '}') break;
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: expected ',' or '}'",
                     c->what);
  }
  c->p++;
  skip_ws(c);
  if (c->p != c->end)
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: text after the dict",
                     c->what);
  if (!seen_descr || !seen_fortran || !seen_shape)
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: malformed .npy header: missing '%s'", c->what,
                     !seen_descr ? "descr" : !seen_fortran ? "fortran_order"
                                                           : "shape");
  if (fortran)
    return mi_errorf(c->err, MI_ERR_PARSE,
                     "%s: fortran_order True is not supported (save the array in C order)",
                     c->what);
  h->dtype = MI_DTYPE_UNDEFINED;
  for (size_t i = 0; i < sizeof k_descrs / sizeof k_descrs[0]; i++)
    if (strcmp(descr, k_descrs[i].descr) == 0) h->dtype = k_descrs[i].dtype;
  /* numpy's default float: the framework holds DOUBLE tensors as float32 (docs/onnx.md) */
  if (strcmp(descr, "<f8") == 0) {
    h->dtype = MI_DTYPE_FLOAT32;
    h->f8 = 1;
  }
  if (h->dtype == MI_DTYPE_UNDEFINED) {
    if (descr[0] == '>')
      return mi_errorf(c->err, MI_ERR_PARSE, "%s: big-endian dtype '%s' is not supported",
                       c->what, descr);
    return mi_errorf(c->err, MI_ERR_PARSE, "%s: unsupported .npy dtype '%s'", c->what, descr);
  }
  return MI_OK;
}

/* Checks the fixed prefix of `buf` (at least NPY_PREFIX_V1 bytes, NPY_PREFIX_V2 for v2+) and
 * returns the prefix size and the header length. */
static int parse_prefix(const unsigned char *buf, size_t size, const char *what,
                        size_t *prefix, size_t *header_len, mi_error_t *err) {
  if (size < NPY_PREFIX_V1 || memcmp(buf, k_magic, sizeof k_magic) != 0)
    return mi_errorf(err, MI_ERR_PARSE, "%s: not a .npy file (%s)", what,
                     size < NPY_PREFIX_V1 ? "too short" : "bad magic");
  if (buf[6] == 1) {
    *prefix = NPY_PREFIX_V1;
    *header_len = (size_t)buf[8] | (size_t)buf[9] << 8;
  } else if (buf[6] == 2 || buf[6] == 3) {
    if (size < NPY_PREFIX_V2)
      return mi_errorf(err, MI_ERR_PARSE, "%s: truncated .npy header", what);
    *prefix = NPY_PREFIX_V2;
    *header_len = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
                  (size_t)buf[11] << 24;
  } else {
    return mi_errorf(err, MI_ERR_PARSE, "%s: unsupported .npy version %u.%u", what, buf[6],
                     buf[7]);
  }
  if (*header_len > NPY_MAX_HEADER)
    return mi_errorf(err, MI_ERR_PARSE, "%s: .npy header length %zu is too large", what,
                     *header_len);
  return MI_OK;
}

/* Parses the header text and works out the data size, checking for overflow. */
static int parse_header_text(const char *text, size_t len, const char *what, npy_header_t *h,
                             mi_error_t *err) {
  cursor_t c = {text, text + len, what, err};
  size_t n = 1, item;
  memset(h, 0, sizeof *h);
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\0')
      return mi_errorf(err, MI_ERR_PARSE, "%s: malformed .npy header: NUL byte", what);
  if (parse_dict(&c, h)) return MI_ERR_PARSE;
  item = h->f8 ? sizeof(double) : mi_dtype_size(h->dtype);
  for (int32_t i = 0; i < h->rank; i++) {
    if (h->dims[i] > 0 && n > (SIZE_MAX / item) / (size_t)h->dims[i])
      return mi_errorf(err, MI_ERR_PARSE, "%s: .npy shape is too large", what);
    n *= (size_t)h->dims[i];
  }
  h->data_bytes = n * item;
  return MI_OK;
}

static int make_array(const npy_header_t *h, const char *what, mi_array_t **out,
                      mi_error_t *err) {
  *out = mi_array_create(h->dtype, h->rank, h->dims);
  if (!*out)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", what,
                     h->data_bytes);
  return MI_OK;
}

/* The array's float32 values from a file's float64 ones (little-endian, as '<f8' says). */
static void narrow_f8(mi_array_t *a, const unsigned char *src) {
  mi__f64_narrow(src, a->nbytes / sizeof(float), a->data);
}

/* Reads the array's data: straight into it, or through a float64 buffer for '<f8'. */
static int read_data(const npy_header_t *h, FILE *f, const char *what, mi_array_t *a,
                     mi_error_t *err) {
  unsigned char *tmp;
  if (!h->data_bytes) return MI_OK;
  if (!h->f8)
    return fread(a->data, 1, h->data_bytes, f) == h->data_bytes
               ? MI_OK
               : mi_errorf(err, MI_ERR_IO, "%s: cannot read %zu bytes of .npy data", what, h->data_bytes);
  if (!(tmp = malloc(h->data_bytes)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", what, h->data_bytes);
  if (fread(tmp, 1, h->data_bytes, f) != h->data_bytes) {
    free(tmp);
    return mi_errorf(err, MI_ERR_IO, "%s: cannot read %zu bytes of .npy data", what, h->data_bytes);
  }
  narrow_f8(a, tmp);
  free(tmp);
  return MI_OK;
}

MI_API int32_t mi_npy_parse(const void *buf, size_t size, const char *what, mi_array_t **out,
                            mi_error_t *err) {
  const unsigned char *b = buf;
  size_t prefix = 0, hlen = 0;
  npy_header_t h;
  int32_t rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_npy_parse: out is NULL");
  *out = NULL;
  if (!what) what = "<memory>";
  if (!buf && size) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no buffer", what);
  if ((rc = parse_prefix(b, size, what, &prefix, &hlen, err))) return rc;
  if (hlen > size - prefix)
    return mi_errorf(err, MI_ERR_PARSE, "%s: .npy header length %zu runs past the end (%zu bytes)",
                     what, hlen, size);
  if ((rc = parse_header_text((const char *)b + prefix, hlen, what, &h, err))) return rc;
  if (size - prefix - hlen != h.data_bytes)
    return mi_errorf(err, MI_ERR_PARSE, "%s: .npy data is %zu bytes, shape and dtype need %zu",
                     what, size - prefix - hlen, h.data_bytes);
  if ((rc = make_array(&h, what, out, err))) return rc;
  if (h.f8) narrow_f8(*out, b + prefix + hlen);
  else if (h.data_bytes)
    memcpy((*out)->data, b + prefix + hlen, h.data_bytes);
  return MI_OK;
}

MI_API int32_t mi_npy_load(const char *path, mi_array_t **out, mi_error_t *err) {
  unsigned char prefix_buf[NPY_PREFIX_V2];
  char *text = NULL;
  FILE *f = NULL;
  struct stat st;
  size_t prefix = 0, hlen = 0, got;
  npy_header_t h;
  int32_t rc = MI_OK;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_npy_load: out is NULL");
  *out = NULL;
  if (!path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_npy_load: path is NULL");
  f = fopen(path, "rb");
  if (!f) return mi_errorf(err, MI_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: not a regular file", path);
    goto done;
  }
  got = fread(prefix_buf, 1, sizeof prefix_buf, f);
  if ((rc = parse_prefix(prefix_buf, got, path, &prefix, &hlen, err))) goto done;
  if (hlen > (size_t)st.st_size - prefix) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: .npy header length %zu runs past the end of the file",
                   path, hlen);
    goto done;
  }
  text = malloc(hlen ? hlen : 1);
  if (!text) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  if (fseek(f, (long)prefix, SEEK_SET) != 0 || fread(text, 1, hlen, f) != hlen) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: cannot read the .npy header", path);
    goto done;
  }
  if ((rc = parse_header_text(text, hlen, path, &h, err))) goto done;
  if ((size_t)st.st_size - prefix - hlen != h.data_bytes) {
    rc = mi_errorf(err, MI_ERR_PARSE, "%s: .npy data is %zu bytes, shape and dtype need %zu",
                   path, (size_t)st.st_size - prefix - hlen, h.data_bytes);
    goto done;
  }
  if ((rc = make_array(&h, path, out, err))) goto done;
  rc = read_data(&h, f, path, *out, err);
done:
  if (rc != MI_OK) {
    mi_array_destroy(*out);
    *out = NULL;
  }
  free(text);
  if (f) fclose(f);
  return rc;
}

/* Builds the v1 header, padded with spaces so that the data starts 64-byte aligned. */
static size_t build_header(const mi_array_t *a, const char *descr, char *out, size_t cap) {
  char shape[MI_MAX_RANK * 24 + 4];
  size_t n = 0, total;
  int len;
  shape[n++] = '(';
  for (int32_t i = 0; i < a->rank; i++) {
    len = snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "", (long long)a->dims[i]);
    n += (size_t)len;
  }
  if (a->rank == 1) shape[n++] = ',';
  shape[n++] = ')';
  shape[n] = '\0';
  len = snprintf(out + NPY_PREFIX_V1, cap - NPY_PREFIX_V1,
                 "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  n = (size_t)len;
  total = (NPY_PREFIX_V1 + n + 1 + 63) / 64 * 64;
  memset(out + NPY_PREFIX_V1 + n, ' ', total - NPY_PREFIX_V1 - n - 1);
  out[total - 1] = '\n';
  memcpy(out, k_magic, sizeof k_magic);
  out[6] = 1;
  out[7] = 0;
  out[8] = (char)((total - NPY_PREFIX_V1) & 0xff);
  out[9] = (char)((total - NPY_PREFIX_V1) >> 8);
  return total;
}

MI_API int32_t mi_npy_save(const char *path, const mi_array_t *a, mi_error_t *err) {
  char header[512], *tmp = NULL;
  const char *descr;
  size_t hlen, tmp_cap;
  FILE *f = NULL;
  int32_t rc = MI_OK;
  if (!path || !a) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_npy_save: NULL argument");
  descr = descr_of(a->dtype);
  if (!descr)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "%s: dtype %s cannot be written as .npy", path,
                     mi_dtype_name(a->dtype));
  if (a->rank < 0 || a->rank > MI_MAX_RANK ||
      a->nbytes != mi_dtype_bytes_for(a->dtype, mi_array_numel(a)))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: array shape and size disagree", path);
  hlen = build_header(a, descr, header, sizeof header);
  tmp_cap = strlen(path) + 32;
  tmp = malloc(tmp_cap);
  if (!tmp) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  snprintf(tmp, tmp_cap, "%s.tmp.%ld", path, (long)getpid());
  f = fopen(tmp, "wb");
  if (!f) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    goto done;
  }
  if (fwrite(header, 1, hlen, f) != hlen ||
      (a->nbytes && fwrite(a->data, 1, a->nbytes, f) != a->nbytes)) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
    goto done;
  }
  rc = mi__file_close_synced(f, tmp, err);
  f = NULL;
  if (rc != MI_OK) goto done;
  if (rename(tmp, path) != 0) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    goto done;
  }
done:
  if (f) fclose(f);
  if (rc != MI_OK) remove(tmp);
  free(tmp);
  return rc;
}
