/* inputs.c - mi-run's model inputs: .npy files, --shape sizes and deterministic random data,
 * each checked against what the model declares. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mi_cli.h"
#include "mi_run.h"

/* Splits "NAME=VALUE"; NULL when there is no '=' or the name is empty. */
static const char *split_spec(const char *spec, char *name, size_t cap) {
  const char *eq = strchr(spec, '=');
  size_t len;
  if (!eq || eq == spec) return NULL;
  len = (size_t)(eq - spec);
  if (len >= cap) len = cap - 1;
  memcpy(name, spec, len);
  name[len] = '\0';
  return eq + 1;
}

/* Index of the graph input called `name`, or an error listing the inputs the model has. */
static int32_t find_input(const mi_graph_t *g, const char *opt, const char *name,
                          int32_t *index, mi_error_t *err) {
  char list[160];
  size_t n = 0;
  for (int32_t i = 0; i < g->input_count; i++)
    if (strcmp(g->tensors[g->inputs[i]].name, name) == 0) {
      *index = i;
      return MI_OK;
    }
  list[0] = '\0';
  for (int32_t i = 0; i < g->input_count && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "",
                          g->tensors[g->inputs[i]].name);
  return mi_errorf(err, MI_ERR_NOT_FOUND, "%s: the model has no input '%s' (inputs: %s)", opt,
                   name, g->input_count ? list : "none");
}

/* Checks a shape against the declared one: same rank, and static dims equal. */
static int32_t check_shape(const mi_tensor_t *t, const char *where, int32_t rank,
                           const int64_t *dims, mi_error_t *err) {
  if (t->rank < 0) return MI_OK;
  if (rank != t->rank)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' (%s): rank %d, the model declares rank %d", t->name, where,
                     (int)rank, (int)t->rank);
  for (int32_t d = 0; d < rank; d++)
    if (t->dims[d] >= 0 && t->dims[d] != dims[d])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "input '%s' (%s): dim %d is %lld, the model declares %lld", t->name, where,
                       (int)d, (long long)dims[d], (long long)t->dims[d]);
  return MI_OK;
}

static int32_t load_file_input(mi_graph_t *g, const char *spec, mi_array_t **arrays,
                               mi_error_t *err) {
  char name[256];
  const char *file = split_spec(spec, name, sizeof name);
  const mi_tensor_t *t;
  int32_t idx, rc;
  if (!file || !file[0])
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--input '%s': expected NAME=FILE.npy", spec);
  if ((rc = find_input(g, "--input", name, &idx, err))) return rc;
  if (arrays[idx])
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--input '%s': given twice", name);
  t = &g->tensors[g->inputs[idx]];
  if ((rc = mi_npy_load(file, &arrays[idx], err))) return rc;
  /* a half-precision model's inputs are float32 here (docs/onnx.md): float16 data is taken */
  if (t->dtype == MI_DTYPE_FLOAT32 && mi_array_widen_half(&arrays[idx]) != MI_OK)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "input '%s' (%s): out of memory", name, file);
  if (arrays[idx]->dtype != t->dtype)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' (%s): dtype %s, the model declares %s", name, file,
                     mi_dtype_name(arrays[idx]->dtype), mi_dtype_name(t->dtype));
  return check_shape(t, file, arrays[idx]->rank, arrays[idx]->dims, err);
}

/* Parses "D0,D1,..." (each >= 0); an empty list is a scalar. */
static int32_t parse_dims(const char *spec, const char *s, int32_t *rank, int64_t *dims,
                          mi_error_t *err) {
  *rank = 0;
  while (*s) {
    char *end = NULL;
    long long v;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0 || (*end && *end != ',') || *rank >= MI_MAX_RANK)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "--shape '%s': expected NAME=D0,D1,... with up to %d dims >= 0", spec,
                       MI_MAX_RANK);
    dims[(*rank)++] = v;
    s = *end ? end + 1 : end;
  }
  return MI_OK;
}

/* A --shape for an input that also has a file must say the file's shape. */
static int32_t shape_agrees(const char *spec, const mi_array_t *a, mi_error_t *err) {
  int64_t dims[MI_MAX_RANK];
  int32_t rank, rc;
  int same;
  if ((rc = parse_dims(spec, strchr(spec, '=') + 1, &rank, dims, err))) return rc;
  same = rank == a->rank;
  for (int32_t d = 0; same && d < rank; d++) same = dims[d] == a->dims[d];
  if (!same)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "--shape '%s' disagrees with the shape of the --input file", spec);
  return MI_OK;
}

/* The shape an input without a file gets: --shape, else the declared one when it is static. */
static int32_t random_input(const mi_graph_t *g, int32_t idx, const run_opts_t *o,
                            mi_array_t **out, mi_error_t *err) {
  const mi_tensor_t *t = &g->tensors[g->inputs[idx]];
  int64_t dims[MI_MAX_RANK];
  int32_t rank = t->rank, given = 0, rc;
  for (int i = 0; i < o->shape_count; i++) {
    char name[256];
    const char *v = split_spec(o->shapes[i], name, sizeof name);
    if (v && strcmp(name, t->name) == 0) {
      if ((rc = parse_dims(o->shapes[i], v, &rank, dims, err))) return rc;
      if ((rc = check_shape(t, "--shape", rank, dims, err))) return rc;
      given = 1;
    }
  }
  if (!given) {
    if (t->rank < 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "input '%s' has no declared shape: give --shape %s=D0,D1,... or --input",
                       t->name, t->name);
    for (int32_t d = 0; d < rank; d++) {
      if (t->dims[d] < 0)
        return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                         "input '%s' has dynamic dim %d%s%s%s: give --shape %s=D0,D1,... or "
                         "--input",
                         t->name, (int)d, t->dim_names[d] ? " ('" : "",
                         t->dim_names[d] ? t->dim_names[d] : "", t->dim_names[d] ? "')" : "",
                         t->name);
      dims[d] = t->dims[d];
    }
  }
  *out = mi_array_create(t->dtype, rank, dims);
  if (!*out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s': cannot make a %s array of that "
                     "shape",
                     t->name, mi_dtype_name(t->dtype));
  /* Distinct inputs get distinct streams, the same ones on every run. */
  mi_array_fill_random(*out, o->seed * 1000003u + (uint64_t)idx);
  if (t->dtype == MI_DTYPE_BOOL)
    for (size_t i = 0; i < (*out)->nbytes; i++) ((unsigned char *)(*out)->data)[i] &= 1u;
  return MI_OK;
}

int32_t run_fix_values(mi_graph_t *g, const run_opts_t *o, mi_error_t *err) {
  int32_t rc = mi_cli_check_values(o->values, o->value_count, o->inputs, o->input_count, o->shapes,
                                   o->shape_count, err);
  return rc ? rc : mi_graph_input_values(g, o->values, o->value_count, err);
}

int32_t run_prepare_inputs(mi_graph_t *g, const run_opts_t *o, mi_array_t ***out,
                           mi_error_t *err) {
  mi_array_t **arrays = calloc((size_t)g->input_count + 1, sizeof *arrays);
  int32_t rc = MI_OK;
  *out = NULL;
  if (!arrays) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < o->input_count && rc == MI_OK; i++)
    rc = load_file_input(g, o->inputs[i], arrays, err);
  for (int i = 0; i < o->shape_count && rc == MI_OK; i++) {
    char name[256];
    int32_t idx;
    if (!split_spec(o->shapes[i], name, sizeof name))
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--shape '%s': expected NAME=D0,D1,...",
                     o->shapes[i]);
    else
      rc = find_input(g, "--shape", name, &idx, err);
    if (rc == MI_OK && arrays[idx]) /* a file gives the shape; a --shape may only agree */
      rc = shape_agrees(o->shapes[i], arrays[idx], err);
  }
  for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++)
    if (!arrays[i]) rc = random_input(g, i, o, &arrays[i], err);
  for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++) {
    mi_tensor_t *t = &g->tensors[g->inputs[i]];
    t->rank = arrays[i]->rank;
    for (int32_t d = 0; d < t->rank; d++) t->dims[d] = arrays[i]->dims[d];
  }
  if (rc != MI_OK) {
    for (int32_t i = 0; i < g->input_count; i++) mi_array_destroy(arrays[i]);
    free(arrays);
    return rc;
  }
  *out = arrays;
  return MI_OK;
}
