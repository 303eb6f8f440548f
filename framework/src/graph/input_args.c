/* input_args.c - model inputs as the command lines of mi-host profile, accuracy and compare and
 * the deployment tables give them: NAME=FILE.npy (the array, and with it the shape) and
 * NAME=D0,D1,... or NAME:D0xD1x... (a shape; either separator, either dims form), checked
 * against what the model declares and written into its input tensors, so that a model with
 * dynamic dimensions gets concrete shapes before anything is inferred or probed; and fixed input
 * values, NAME=V0,V1,... on a command line (--value) and NAME={V0,V1,...} in the shape text,
 * which make the input a constant (so an If on it can be replaced by its branch). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "metainfer/mi_core.h"

/* Where "NAME=VALUE" or "NAME:VALUE" splits: the first '=', else the last ':' (names exported
 * from TensorFlow hold colons, as in "input:0"; shapes and file names after '=' may too). */
static const char *spec_sep(const char *spec) {
  const char *eq = strchr(spec, '=');
  return eq ? eq : strrchr(spec, ':');
}

/* Index of the graph input named by the NAME of "NAME=VALUE" (or "NAME:VALUE"), or an error
 * naming the option. */
static int32_t spec_input(const mi_graph_t *g, const char *opt, const char *spec, int32_t *index,
                          mi_error_t *err) {
  const char *eq = spec_sep(spec);
  /* An empty shape is a scalar's (rank 0, as tune writes Silero VAD's `sr` in "sr:"); an empty
   * file name is nothing. */
  if (!eq || eq == spec || (!eq[1] && strcmp(opt, "--input") == 0))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s '%s': expected NAME=%s", opt, spec,
                     strcmp(opt, "--input") ? "D0,D1,... (or D0xD1x...)" : "FILE.npy");
  for (int32_t i = 0; i < g->input_count; i++) {
    const char *nm = g->tensors[g->inputs[i]].name;
    if (strlen(nm) == (size_t)(eq - spec) && strncmp(nm, spec, (size_t)(eq - spec)) == 0) {
      *index = i;
      return MI_OK;
    }
  }
  return mi_errorf(err, MI_ERR_NOT_FOUND, "%s '%s': the model has no such input (%d inputs)",
                   opt, spec, (int)g->input_count);
}

/* Gives graph input t a concrete shape, checked against the declared one. */
static int32_t set_input_shape(mi_tensor_t *t, const char *where, int32_t rank,
                               const int64_t *dims, mi_error_t *err) {
  if (t->rank >= 0 && rank != t->rank)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' (%s): rank %d, the model declares "
                     "rank %d",
                     t->name, where, (int)rank, (int)t->rank);
  for (int32_t d = 0; d < rank; d++)
    if (t->rank >= 0 && t->dims[d] >= 0 && t->dims[d] != dims[d])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "input '%s' (%s): dim %d is %lld, the model "
                       "declares %lld",
                       t->name, where, (int)d, (long long)dims[d],
                       (long long)t->dims[d]);
  for (int32_t d = 0; d < MI_MAX_RANK; d++) {
    if (t->rank >= 0 && d < t->rank) {
      free(t->dim_names[d]);
      t->dim_names[d] = NULL;
    }
    t->dims[d] = d < rank ? dims[d] : 0;
  }
  t->rank = rank;
  return MI_OK;
}

MI_API int32_t mi_shape_parse(const char *text, int32_t *rank, int64_t *dims) {
  const char *p = text;
  *rank = 0;
  while (*p) {
    char *end = NULL;
    long long v;
    errno = 0;
    v = strtoll(p, &end, 10);
    if (errno || end == p || v < 0 || (*end && *end != ',' && *end != 'x') || *rank >= MI_MAX_RANK)
      return MI_ERR_INVALID_ARGUMENT;
    dims[(*rank)++] = v;
    p = *end ? end + 1 : end;
    if (*end && !*p) return MI_ERR_INVALID_ARGUMENT; /* a trailing separator */
  }
  return MI_OK;
}

/* Whether integer v is a value of dtype (a UINT64's bits are any int64). */
static int fits(int32_t dtype, long long v) {
  switch (dtype) {
  case MI_DTYPE_INT8: return v >= INT8_MIN && v <= INT8_MAX;
  case MI_DTYPE_UINT8: return v >= 0 && v <= UINT8_MAX;
  case MI_DTYPE_INT16: return v >= INT16_MIN && v <= INT16_MAX;
  case MI_DTYPE_UINT16: return v >= 0 && v <= UINT16_MAX;
  case MI_DTYPE_INT32: return v >= INT32_MIN && v <= INT32_MAX;
  case MI_DTYPE_UINT32: return v >= 0 && v <= (long long)UINT32_MAX;
  default: return 1; /* INT64, UINT64, BOOL (any number is a truth value) */
  }
}

/* Parses "V0,V1,..." (numbers; true/false for any dtype) into `count` elements of dtype into
 * *data (malloc'd). MI_OK or MI_ERR_INVALID_ARGUMENT. */
static int32_t parse_values(int32_t dtype, const char *text, int64_t *count, void **data) {
  size_t esz = mi_dtype_size(dtype), cap = 8;
  const char *p = text;
  unsigned char *buf;
  *count = 0;
  *data = NULL;
  if (esz == 0 || dtype == MI_DTYPE_INT4 || dtype == MI_DTYPE_FLOAT16) return MI_ERR_UNSUPPORTED;
  if (!(buf = malloc(cap * esz))) return MI_ERR_OUT_OF_MEMORY;
  while (*p) {
    double d = 0;
    long long v = 0;
    char *end = NULL;
    size_t len = strcspn(p, ",");
    int is_float = dtype == MI_DTYPE_FLOAT32;
    if (len == 4 && strncmp(p, "true", 4) == 0) {
      v = 1, d = 1, end = (char *)p + 4;
    } else if (len == 5 && strncmp(p, "false", 5) == 0) {
      end = (char *)p + 5;
    } else {
      errno = 0;
      if (is_float) d = strtod(p, &end);
      else if (dtype == MI_DTYPE_UINT64)
        v = *p == '-' ? (end = NULL, 0) : (long long)strtoull(p, &end, 10); /* its bits */
      else
        v = strtoll(p, &end, 10);
      if (errno || end == p || (!is_float && !fits(dtype, v))) end = NULL;
    }
    if (!end || (*end && *end != ',') || (*end == ',' && !end[1])) {
      free(buf);
      return MI_ERR_INVALID_ARGUMENT;
    }
    if ((size_t)*count == cap) {
      unsigned char *nb = realloc(buf, (cap *= 2) * esz);
      if (!nb) {
        free(buf);
        return MI_ERR_OUT_OF_MEMORY;
      }
      buf = nb;
    }
    unsigned char *at = buf + (size_t)*count * esz;
    if (dtype == MI_DTYPE_FLOAT32) {
      float f = (float)d;
      memcpy(at, &f, 4);
    } else {
      mi__int_store(at, dtype, 0, v); /* BOOL: v != 0 */
    }
    (*count)++;
    p = *end ? end + 1 : end;
  }
  if (*count == 0) {
    free(buf);
    return MI_ERR_INVALID_ARGUMENT;
  }
  *data = buf;
  return MI_OK;
}

/* Makes graph input idx the constant `text` ("V0,V1,..."), in the shape it has (declared, or set
 * before): it stops being an input. A 1-D input of unknown length takes the count given, an
 * input of unknown rank a scalar (one value) or a 1-D list. */
static int32_t fix_input(mi_graph_t *g, int32_t idx, const char *text, const char *where, mi_error_t *err) {
  int32_t t = g->inputs[idx], rc;
  mi_tensor_t *x = &g->tensors[t];
  int64_t count = 0, numel = 1;
  void *data = NULL;
  if ((rc = parse_values(x->dtype, text, &count, &data)))
    return mi_errorf(err, rc == MI_ERR_OUT_OF_MEMORY ? rc : MI_ERR_INVALID_ARGUMENT,
                     rc == MI_ERR_UNSUPPORTED ? "input '%s' (%s): a %s input cannot be given a value"
                                              : "input '%s' (%s): expected values V0,V1,... of dtype %s, not '%s'",
                     x->name, where, mi_dtype_name(x->dtype), text);
  if (x->rank < 0) {
    x->rank = count == 1 ? 0 : 1;
    x->dims[0] = count;
  } else if (x->rank == 1 && x->dims[0] < 0) {
    x->dims[0] = count;
  }
  for (int32_t d = 0; d < x->rank; d++) numel = x->dims[d] < 0 || numel < 0 ? -1 : numel * x->dims[d];
  if (numel != count) {
    free(data);
    if (numel < 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s' (%s): its shape has a dynamic dimension: give its shape too",
                       x->name, where);
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s' (%s): %lld values for a shape of %lld elements", x->name,
                     where, (long long)count, (long long)numel);
  }
  rc = mi_graph_set_data(g, t, data, mi_dtype_bytes_for(x->dtype, count));
  free(data);
  if (rc) return mi_errorf(err, rc, "input '%s': out of memory", g->tensors[t].name);
  for (int32_t d = 0; d < MI_MAX_RANK; d++) {
    free(g->tensors[t].dim_names[d]);
    g->tensors[t].dim_names[d] = NULL;
  }
  memmove(&g->inputs[idx], &g->inputs[idx + 1], (size_t)(g->input_count - idx - 1) * sizeof *g->inputs);
  g->input_count--;
  return MI_OK;
}

MI_API int32_t mi_graph_input_values(mi_graph_t *g, const char *const *values, int32_t n, mi_error_t *err) {
  int32_t rc = MI_OK, idx = 0;
  if (!g || (n > 0 && !values)) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input values: NULL argument");
  for (int32_t i = 0; i < n && rc == MI_OK; i++) {
    const char *eq = spec_sep(values[i]);
    if (!eq || eq == values[i] || !eq[1])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--value '%s': expected NAME=V or NAME=V0,V1,...", values[i]);
    if ((rc = spec_input(g, "--value", values[i], &idx, err)) == MI_OK) rc = fix_input(g, idx, eq + 1, "--value", err);
  }
  return rc;
}

/* The values that entry "NAME={...}" of a shape text gives `name`, copied into buf; 0 when the
 * text fixes no value of that name. */
static int fixed_text(const char *spec, const char *name, char *buf, size_t cap) {
  size_t n = strlen(name);
  for (const char *p = spec; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
    size_t len = strcspn(p, ";");
    if (len > n + 2 && strncmp(p, name, n) == 0 && (p[n] == '=' || p[n] == ':') && p[n + 1] == '{' &&
        p[len - 1] == '}') {
      snprintf(buf, cap, "%.*s", (int)(len - n - 3), p + n + 2);
      return 1;
    }
  }
  return 0;
}

/* "V0,V1,..." of an array (the first 8 values, then "..."). */
static void values_text(const mi_array_t *a, char *buf, size_t cap) {
  int64_t n = 1;
  size_t at = 0;
  for (int32_t d = 0; d < a->rank; d++) n *= a->dims[d];
  buf[0] = '\0';
  for (int64_t i = 0; i < n && at < cap; i++) {
    const unsigned char *p = (const unsigned char *)a->data + (size_t)i * mi_dtype_size(a->dtype);
    if (i == 8) {
      snprintf(buf + at, cap - at, ",...");
      break;
    }
    if (a->dtype == MI_DTYPE_FLOAT32) {
      float f;
      memcpy(&f, p, 4);
      at += (size_t)snprintf(buf + at, cap - at, "%s%.9g", i ? "," : "", f);
    } else if (a->dtype == MI_DTYPE_UINT64) {
      at += (size_t)snprintf(buf + at, cap - at, "%s%llu", i ? "," : "",
                             (unsigned long long)(uint64_t)mi__int_load(p, a->dtype, 0));
    } else {
      at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? "," : "", (long long)mi__int_load(p, a->dtype, 0));
    }
  }
}

MI_API int32_t mi_input_value_check(const char *spec, const char *what, const char *name, const mi_array_t *a,
                                    mi_error_t *err) {
  char fixed[512], given[512];
  int64_t count = 0, numel = 1;
  void *data = NULL;
  int32_t rc;
  int same;
  if (!spec || !name || !a || !fixed_text(spec, name, fixed, sizeof fixed)) return MI_OK;
  for (int32_t d = 0; d < a->rank; d++) numel *= a->dims[d];
  rc = parse_values(a->dtype, fixed, &count, &data);
  same = rc == MI_OK && count == numel && a->nbytes == mi_dtype_bytes_for(a->dtype, count) &&
         memcmp(data, a->data, a->nbytes) == 0;
  free(data);
  if (same) return MI_OK;
  values_text(a, given, sizeof given);
  return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input '%s' is fixed to %s by %s; this run gives %s", name, fixed,
                   what ? what : "the deployment", given);
}

MI_API int32_t mi_graph_input_args(mi_graph_t *g, const char *const *files, int32_t nfiles,
                                   const char *const *shapes, int32_t nshapes, mi_array_t **fixed,
                                   mi_error_t *err) {
  int32_t rc = MI_OK, idx = 0;
  uint8_t *seen = calloc((size_t)g->input_count + 1, 1);
  if (!seen) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; i < nfiles && rc == MI_OK; i++) {
    mi_array_t *a = NULL;
    mi_tensor_t *t;
    const char *file;
    if ((rc = spec_input(g, "--input", files[i], &idx, err)) != MI_OK) break;
    file = spec_sep(files[i]) + 1;
    t = &g->tensors[g->inputs[idx]];
    if (seen[idx]) {
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--input: input '%s' is given twice", t->name);
    } else if ((rc = mi_npy_load(file, &a, err)) == MI_OK) {
      /* a half-precision model's inputs are float32 here (docs/onnx.md): float16 data is taken */
      if (t->dtype == MI_DTYPE_FLOAT32 && mi_array_widen_half(&a) != MI_OK)
        rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "input '%s' (%s): out of memory", t->name, file);
      else if (t->dtype != MI_DTYPE_UNDEFINED && a->dtype != t->dtype)
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "input '%s' (%s): dtype %s, the model "
                       "declares %s",
                       t->name, file, mi_dtype_name(a->dtype),
                       mi_dtype_name(t->dtype));
      else
        rc = set_input_shape(t, file, a->rank, a->dims, err);
    }
    seen[idx] = 2;
    if (fixed && rc == MI_OK) fixed[idx] = a;
    else
      mi_array_destroy(a);
  }
  for (int32_t i = 0; i < nshapes && rc == MI_OK; i++) {
    int64_t dims[MI_MAX_RANK];
    int32_t rank = 0;
    if ((rc = spec_input(g, "--shape", shapes[i], &idx, err)) != MI_OK) break;
    if (mi_shape_parse(spec_sep(shapes[i]) + 1, &rank, dims) != MI_OK)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "--shape '%s': expected NAME=D0,D1,... or "
                     "NAME=D0xD1x... with up to %d dims >= 0",
                     shapes[i], MI_MAX_RANK);
    else if (seen[idx])
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--shape '%s': input already has a %s",
                     shapes[i], seen[idx] == 2 ? "--input file" : "--shape");
    else
      rc = set_input_shape(&g->tensors[g->inputs[idx]], "--shape", rank, dims, err);
    seen[idx] = 1;
  }
  free(seen);
  return rc;
}

MI_API int32_t mi_graph_set_input_shapes(mi_graph_t *g, const char *spec, const char *what,
                                         mi_error_t *err) {
  char *copy, *save = NULL;
  int32_t rc = MI_OK, idx = 0;
  if (!g || !spec) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "input shapes: NULL argument");
  if (!(copy = strdup(spec))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (char *it = strtok_r(copy, ";", &save); it && rc == MI_OK; it = strtok_r(NULL, ";", &save)) {
    int64_t dims[MI_MAX_RANK];
    int32_t rank = 0;
    const char *v;
    if ((rc = spec_input(g, what, it, &idx, err)) != MI_OK) break;
    v = spec_sep(it) + 1;
    if (v[0] == '{') {
      /* NAME={V0,V1,...}: a fixed value */
      size_t len = strlen(v);
      if (len < 3 || v[len - 1] != '}') {
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s '%s': expected NAME={V0,V1,...}", what, it);
        break;
      }
      v = strndup(v + 1, len - 2);
      rc = v ? fix_input(g, idx, v, what, err) : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
      free((char *)v);
      continue;
    }
    if (mi_shape_parse(v, &rank, dims) != MI_OK)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "%s '%s': expected NAME:D0xD1x... or "
                     "NAME=D0,D1,... with up to %d dims >= 0",
                     what, it, MI_MAX_RANK);
    else
      rc = set_input_shape(&g->tensors[g->inputs[idx]], what, rank, dims, err);
  }
  free(copy);
  return rc;
}
