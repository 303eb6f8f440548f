/* onnx_tensor.c - decodes ONNX TensorProto values: raw_data, the typed repeated fields, and
 * external data files confined to the model's directory. INT4 / UINT4 (two values a byte, low
 * nibble first) are unpacked to one INT8 / UINT8 byte a value; DOUBLE, FLOAT16 and BFLOAT16
 * values become float32 (onnx_dtype.h); the other integer types keep their bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/onnx_dtype.h"
#include "graph/onnx_internal.h"
#include "metainfer/mi_sdk.h"

/* Bytes per element as ONNX stores them (before our conversions). */
static size_t onnx_elem_size(int32_t e) {
  switch (e) {
  case MI__ONNX_DOUBLE:
  case MI__ONNX_INT64:
  case MI__ONNX_UINT64: return 8;
  case MI__ONNX_FLOAT:
  case MI__ONNX_INT32:
  case MI__ONNX_UINT32: return 4;
  case MI__ONNX_FLOAT16:
  case MI__ONNX_BFLOAT16:
  case MI__ONNX_INT16:
  case MI__ONNX_UINT16: return 2;
  case MI__ONNX_INT8:
  case MI__ONNX_UINT8:
  case MI__ONNX_BOOL: return 1;
  default: return 0;
  }
}

static int is_4bit(int32_t e) { return e == MI__ONNX_INT4 || e == MI__ONNX_UINT4; }

/* Bytes `count` elements of ONNX type `e` take as stored: 4-bit ones two a byte. */
static size_t onnx_bytes(int32_t e, int64_t count) {
  return is_4bit(e) ? (size_t)(count + 1) / 2 : (size_t)count * onnx_elem_size(e);
}

/* Element i of packed 4-bit data: the low nibble first; INT4 sign-extended from bit 3. */
static uint8_t nibble(int32_t e, const uint8_t *src, int64_t i) {
  int v = (src[i / 2] >> (4 * (i & 1))) & 0xf;
  if (e == MI__ONNX_INT4 && v >= 8) v -= 16;
  return (uint8_t)(int8_t)v;
}

static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Converts `count` elements stored as ONNX type `e` (little-endian bytes) into `dst`. */
static void convert_raw(int32_t e, const uint8_t *src, int64_t count, void *dst) {
  if (e == MI__ONNX_DOUBLE) {
    mi__f64_narrow(src, (size_t)count, dst);
  } else if (e == MI__ONNX_BFLOAT16 || e == MI__ONNX_FLOAT16) {
    for (int64_t i = 0; i < count; i++) {
      uint16_t h;
      memcpy(&h, src + 2 * i, 2);
      ((float *)dst)[i] = e == MI__ONNX_FLOAT16 ? mi_sdk_half_to_float(h) : bf16_to_f32(h);
    }
  } else if (is_4bit(e)) {
    for (int64_t i = 0; i < count; i++) ((uint8_t *)dst)[i] = nibble(e, src, i);
  } else {
    memcpy(dst, src, (size_t)count * onnx_elem_size(e));
  }
}

static int bad_location(const char *loc) {
  if (!loc[0] || loc[0] == '/' || loc[0] == '\\') return 1;
  const char *p = loc;
  while (*p) {
    const char *e = p;
    while (*e && *e != '/' && *e != '\\') e++;
    if (e - p == 2 && p[0] == '.' && p[1] == '.') return 1;
    p = *e ? e + 1 : e;
  }
  return 0;
}

static int parse_i64(const char *s, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0) return -1;
  *out = v;
  return 0;
}

static int32_t read_external(const Onnx__TensorProto *tp, const char *base_dir, const char *label,
                             size_t want, uint8_t **out, mi_error_t *err) {
  const char *loc = NULL;
  int64_t offset = 0, length = -1;
  const char *name = tp->name ? tp->name : "";
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *kv = tp->external_data[i];
    if (!kv->key || !kv->value) continue;
    if (strcmp(kv->key, "location") == 0) loc = kv->value;
    else if (strcmp(kv->key, "offset") == 0 && parse_i64(kv->value, &offset))
      return mi_errorf(err, MI_ERR_PARSE, "%s: tensor '%s': bad external data offset '%s'", label,
                       name, kv->value);
    else if (strcmp(kv->key, "length") == 0 && parse_i64(kv->value, &length))
      return mi_errorf(err, MI_ERR_PARSE, "%s: tensor '%s': bad external data length '%s'", label,
                       name, kv->value);
  }
  if (!loc)
    return mi_errorf(err, MI_ERR_PARSE, "%s: tensor '%s': external data without a location",
                     label, name);
  if (bad_location(loc))
    return mi_errorf(err, MI_ERR_PARSE,
                     "%s: tensor '%s': external data location '%s' escapes the model directory "
                     "(absolute paths and '..' are refused)",
                     label, name, loc);
  if (!base_dir)
    return mi_errorf(err, MI_ERR_IO,
                     "%s: tensor '%s': external data '%s' needs the model's directory", label,
                     name, loc);
  if (length >= 0 && (size_t)length != want)
    return mi_errorf(err, MI_ERR_PARSE,
                     "%s: tensor '%s': external data length %lld, the shape needs %zu bytes",
                     label, name, (long long)length, want);
  size_t plen = strlen(base_dir) + strlen(loc) + 2;
  char *path = malloc(plen);
  uint8_t *buf = malloc(want ? want : 1);
  int32_t rc = MI_OK;
  FILE *f = NULL;
  if (!path || !buf) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    goto done;
  }
  snprintf(path, plen, "%s/%s", base_dir, loc);
  if (!(f = fopen(path, "rb"))) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: tensor '%s': cannot open external data %s: %s", label,
                   name, path, strerror(errno));
    goto done;
  }
  if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(buf, 1, want, f) != want) {
    rc = mi_errorf(err, MI_ERR_IO,
                   "%s: tensor '%s': external data %s is too short (need %zu bytes at offset "
                   "%lld)",
                   label, name, path, want, (long long)offset);
    goto done;
  }
  *out = buf;
  buf = NULL;
done:
  if (f) fclose(f);
  free(path);
  free(buf);
  return rc;
}

int32_t mi__onnx_decode_tensor(const Onnx__TensorProto *tp, const char *base_dir,
                               const char *label, mi__onnx_value_t *v, mi_error_t *err) {
  memset(v, 0, sizeof *v);
  const char *name = tp->name ? tp->name : "";
  int32_t e = tp->has_data_type ? tp->data_type : 0;
  int32_t dtype = mi__dtype_from_onnx(e);
  if (dtype == MI_DTYPE_UNDEFINED)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "%s: tensor '%s' has unsupported data type %d (%s)",
                     label, name, (int)e, mi__onnx_type_name(e));
  if (tp->n_dims > MI_MAX_RANK)
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %zu (at most %d)", label,
                     name, tp->n_dims, MI_MAX_RANK);
  int64_t count = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    if (tp->dims[i] < 0 || (tp->dims[i] > 0 && count > ((int64_t)1 << 40) / tp->dims[i]))
      return mi_errorf(err, MI_ERR_PARSE, "%s: tensor '%s' has an invalid dimension %lld", label,
                       name, (long long)tp->dims[i]);
    count *= tp->dims[i];
    v->dims[i] = tp->dims[i];
  }
  v->rank = (int32_t)tp->n_dims;
  v->dtype = dtype;
  size_t want = onnx_bytes(e, count);
  /* 4-bit values in int32_data are packed too: one byte (two values) an entry */
  size_t need = is_4bit(e) ? want : (size_t)count;
  size_t out_bytes = mi_dtype_bytes_for(dtype, count);
  /* A few bytes of protobuf can declare 2^40 elements: make sure inline data is all there
   * before allocating for it (external data is checked against its file). */
  if (!(tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)) {
    size_t present = e == MI__ONNX_FLOAT                            ? tp->n_float_data
                     : e == MI__ONNX_INT64                          ? tp->n_int64_data
                     : e == MI__ONNX_DOUBLE                         ? tp->n_double_data
                     : e == MI__ONNX_UINT32 || e == MI__ONNX_UINT64 ? tp->n_uint64_data
                                                                    : tp->n_int32_data;
    if (tp->has_raw_data && tp->raw_data.len != want)
      return mi_errorf(err, MI_ERR_PARSE,
                       "%s: tensor '%s' has %zu bytes of raw data, its shape needs %zu", label,
                       name, tp->raw_data.len, want);
    if (!tp->has_raw_data && present != need)
      return mi_errorf(err, MI_ERR_PARSE, "%s: tensor '%s' has %zu %s, its shape needs %zu", label,
                       name, present, is_4bit(e) ? "packed 4-bit pairs" : "values", need);
  }
  uint8_t *data = malloc(out_bytes ? out_bytes : 1);
  uint8_t *ext = NULL;
  int32_t rc = MI_OK;
  if (!data) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", label);

  size_t have = 0;
  if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if ((rc = read_external(tp, base_dir, label, want, &ext, err)) != MI_OK) goto fail;
    convert_raw(e, ext, count, data);
  } else if (tp->has_raw_data) {
    if (tp->raw_data.len != want) {
      rc = mi_errorf(err, MI_ERR_PARSE,
                     "%s: tensor '%s' has %zu bytes of raw data, its shape needs %zu", label,
                     name, tp->raw_data.len, want);
      goto fail;
    }
    if (count) convert_raw(e, tp->raw_data.data, count, data);
  } else {
    switch (e) {
    case MI__ONNX_FLOAT:
      have = tp->n_float_data;
      if (have == (size_t)count && count) memcpy(data, tp->float_data, want);
      break;
    case MI__ONNX_INT64:
      have = tp->n_int64_data;
      if (have == (size_t)count && count) memcpy(data, tp->int64_data, want);
      break;
    case MI__ONNX_UINT32: /* both live in uint64_data */
    case MI__ONNX_UINT64:
      have = tp->n_uint64_data;
      if (have == (size_t)count)
        for (int64_t i = 0; i < count; i++) {
          if (e == MI__ONNX_UINT64) ((uint64_t *)data)[i] = tp->uint64_data[i];
          else
            ((uint32_t *)data)[i] = (uint32_t)tp->uint64_data[i];
        }
      break;
    case MI__ONNX_DOUBLE:
      have = tp->n_double_data;
      if (have == (size_t)count)
        for (int64_t i = 0; i < count; i++) ((float *)data)[i] = (float)tp->double_data[i];
      break;
    case MI__ONNX_INT4:
    case MI__ONNX_UINT4:
      have = tp->n_int32_data;
      if (have != need) break;
      for (size_t i = 0; i < have; i++) {
        if (tp->int32_data[i] < 0 || tp->int32_data[i] > 255) {
          rc = mi_errorf(err, MI_ERR_PARSE,
                         "%s: tensor '%s': int32_data[%zu] = %d is no packed pair of 4-bit values",
                         label, name, i, (int)tp->int32_data[i]);
          goto fail;
        }
      }
      for (int64_t i = 0; i < count; i++) {
        uint8_t b = (uint8_t)tp->int32_data[i / 2];
        data[i] = nibble(e, &b, i & 1);
      }
      have = (size_t)count; /* checked against need above */
      break;
    default: /* every narrower type, FLOAT16 and BFLOAT16 included, lives in int32_data */
      have = tp->n_int32_data;
      if (have != (size_t)count) break;
      for (int64_t i = 0; i < count; i++) {
        int32_t x = tp->int32_data[i];
        if (e == MI__ONNX_INT32) ((int32_t *)data)[i] = x;
        else if (e == MI__ONNX_FLOAT16)
          ((float *)data)[i] = mi_sdk_half_to_float((uint16_t)x);
        else if (e == MI__ONNX_BFLOAT16)
          ((float *)data)[i] = bf16_to_f32((uint16_t)x);
        else if (e == MI__ONNX_BOOL)
          data[i] = x != 0;
        else if (e == MI__ONNX_INT16 || e == MI__ONNX_UINT16)
          ((uint16_t *)data)[i] = (uint16_t)x;
        else
          data[i] = (uint8_t)x;
      }
      break;
    }
    if (have != (size_t)count) {
      rc = mi_errorf(err, MI_ERR_PARSE, "%s: tensor '%s' has %zu values, its shape needs %lld",
                     label, name, have, (long long)count);
      goto fail;
    }
  }
  free(ext);
  v->data = data;
  v->nbytes = out_bytes;
  return MI_OK;
fail:
  free(ext);
  free(data);
  return rc;
}
