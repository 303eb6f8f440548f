/* input_args.c - model inputs as the command lines of mi-host profile, accuracy and compare and
 * the deployment tables give them: NAME=FILE.npy (the array, and with it the shape) and
 * NAME=D0,D1,... or NAME:D0xD1x... (a shape; either separator, either dims form), checked
 * against what the model declares and written into its input tensors, so that a model with
 * dynamic dimensions gets concrete shapes before anything is inferred or probed. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
      if (t->dtype != MI_DTYPE_UNDEFINED && a->dtype != t->dtype)
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
    if ((rc = spec_input(g, what, it, &idx, err)) != MI_OK) break;
    if (mi_shape_parse(spec_sep(it) + 1, &rank, dims) != MI_OK)
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
