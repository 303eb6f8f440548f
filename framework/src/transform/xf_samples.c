/* xf_samples.c - input samples for calibration and accuracy: deterministic random data, or .npy
 * files (one folder for a one-input model; one folder per input for the others). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "transform/xf_internal.h"

static mi_xf_samples_t *samples_new(int32_t inputs, int32_t count) {
  mi_xf_samples_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->input_count = inputs;
  s->sample_count = count;
  s->inputs = calloc((size_t)inputs * (size_t)count + 1, sizeof *s->inputs);
  if (!s->inputs) {
    free(s);
    return NULL;
  }
  return s;
}

MI_API void mi_xf_samples_destroy(mi_xf_samples_t *s) {
  if (!s) return;
  for (int32_t i = 0; i < s->input_count * s->sample_count; i++) mi_array_destroy(s->inputs[i]);
  free(s->inputs);
  free(s);
}

MI_API int32_t mi_xf_samples_random(const mi_graph_t *g, int32_t count, uint64_t seed,
                                    mi_xf_samples_t **out, mi_error_t *err) {
  return mi_xf_samples_random_fixed(g, count, seed, NULL, out, err);
}

MI_API int32_t mi_xf_samples_random_fixed(const mi_graph_t *g, int32_t count, uint64_t seed,
                                          const mi_array_t *const *fixed,
                                          mi_xf_samples_t **out, mi_error_t *err) {
  mi_xf_samples_t *s;
  if (out) *out = NULL;
  if (!g || !out || count < 1) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "samples: bad arguments");
  if (!(s = samples_new(g->input_count, count)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "samples: out of memory");
  s->synthetic = 1;
  for (int32_t k = 0; k < count; k++)
    for (int32_t i = 0; i < g->input_count; i++) {
      const mi_tensor_t *t = &g->tensors[g->inputs[i]];
      int64_t dims[MI_MAX_RANK];
      mi_array_t *a;
      if (fixed && fixed[i]) {
        /* Each sample owns its arrays, so a fixed value is copied into every one. */
        a = mi_array_create(fixed[i]->dtype, fixed[i]->rank, fixed[i]->dims);
        if (a && a->nbytes == fixed[i]->nbytes) memcpy(a->data, fixed[i]->data, a->nbytes);
        else if (a) {
          mi_array_destroy(a);
          a = NULL;
        }
      } else {
        if (t->dtype != MI_DTYPE_FLOAT32 || t->rank < 0) {
          mi_xf_samples_destroy(s);
          return mi_errorf(err, MI_ERR_UNSUPPORTED,
                           "samples: input '%s' is %s of rank %d; random data needs a float32 "
                           "input of known rank (give this input a fixed value)",
                           t->name,
                           mi_dtype_name(t->dtype), (int)t->rank);
        }
        for (int32_t d = 0; d < t->rank; d++) dims[d] = t->dims[d] < 0 ? 1 : t->dims[d];
        if ((a = mi_array_create(MI_DTYPE_FLOAT32, t->rank, dims))) {
          mi_rng_t r = {seed * 1000003u + (uint64_t)(k * g->input_count + i)};
          mi_array_fill_random(a, mi_rng_next(&r));
        }
      }
      if (!a) {
        mi_xf_samples_destroy(s);
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "samples: out of memory");
      }
      s->inputs[k * g->input_count + i] = a;
    }
  *out = s;
  return MI_OK;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, int32_t n) {
  for (int32_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
}

/* The *.npy file names of `dir`, sorted. */
static int32_t list_npy(const char *dir, char ***out, int32_t *count, mi_error_t *err) {
  DIR *d;
  struct dirent *e;
  char **names = NULL;
  int32_t n = 0, cap = 0, rc = MI_OK;
  *out = NULL;
  *count = 0;
  if (!(d = opendir(dir))) return mi_errorf(err, MI_ERR_IO, "%s: cannot open the directory", dir);
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".npy") != 0) continue;
    if (n == cap) {
      char **p = realloc(names, (size_t)(cap = cap ? cap * 2 : 16) * sizeof *p);
      if (!p) {
        rc = MI_ERR_OUT_OF_MEMORY;
        break;
      }
      names = p;
    }
    if (!(names[n] = mi__xf_strdup(e->d_name))) {
      rc = MI_ERR_OUT_OF_MEMORY;
      break;
    }
    n++;
  }
  closedir(d);
  if (rc != MI_OK) {
    free_names(names, n);
    return mi_errorf(err, rc, "%s: out of memory", dir);
  }
  if (n == 0) {
    free_names(names, n);
    return mi_errorf(err, MI_ERR_NOT_FOUND, "%s: no .npy files", dir);
  }
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  *out = names;
  *count = n;
  return MI_OK;
}

/* Loads the files of `dir` as input i of every sample of s (allocated on first use). */
static int32_t load_input(const mi_graph_t *g, int32_t i, const char *dir, mi_xf_samples_t **s,
                          mi_error_t *err) {
  char **names = NULL;
  int32_t n = 0, rc = list_npy(dir, &names, &n, err);
  const mi_tensor_t *t = &g->tensors[g->inputs[i]];
  if (rc != MI_OK) return rc;
  if (!*s && !(*s = samples_new(g->input_count, n))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
  } else if ((*s)->sample_count != n) {
    rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                   "%s: %d .npy files for input '%s', the other inputs have %d", dir, (int)n,
                   t->name, (int)(*s)->sample_count);
  }
  for (int32_t k = 0; k < n && rc == MI_OK; k++) {
    char path[4096];
    mi_array_t **slot = &(*s)->inputs[(size_t)k * (size_t)g->input_count + (size_t)i];
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    if ((rc = mi_npy_load(path, slot, err)) != MI_OK) break;
    const mi_array_t *a = *slot;
    int bad = t->dtype != MI_DTYPE_UNDEFINED && a->dtype != t->dtype;
    bad |= t->rank >= 0 && a->rank != t->rank;
    for (int32_t d = 0; !bad && t->rank >= 0 && d < t->rank; d++)
      bad |= t->dims[d] >= 0 && t->dims[d] != a->dims[d];
    if (bad)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: dtype or shape does not match input '%s'",
                     path, t->name);
  }
  free_names(names, n);
  return rc;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

MI_API int32_t mi_xf_samples_load_dirs(const mi_graph_t *g, const char *const *specs,
                                       int32_t count, mi_xf_samples_t **out, mi_error_t *err) {
  mi_xf_samples_t *s = NULL;
  int32_t rc = MI_OK;
  char path[4096];
  if (out) *out = NULL;
  if (!g || !specs || count < 1 || !out)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "samples: bad arguments");
  uint8_t *seen = calloc((size_t)g->input_count + 1, 1);
  if (!seen) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "samples: out of memory");
  if (count == 1 && g->input_count == 1 && !strchr(specs[0], '=')) {
    rc = load_input(g, 0, specs[0], &s, err);
    seen[0] = 1;
  } else if (count == 1 && !strchr(specs[0], '=')) {
    /* One folder for a multi-input model: a subfolder named after each input. */
    for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++) {
      snprintf(path, sizeof path, "%s/%s", specs[0], g->tensors[g->inputs[i]].name);
      if (!is_dir(path))
        rc = mi_errorf(err, MI_ERR_NOT_FOUND,
                       "%s: model '%s' has %d inputs: expected a subfolder '%s' per input (or "
                       "NAME=DIR per input)",
                       specs[0], g->name ? g->name : "",
                       (int)g->input_count, g->tensors[g->inputs[i]].name);
      else if ((rc = load_input(g, i, path, &s, err)) == MI_OK)
        seen[i] = 1;
    }
  } else {
    for (int32_t k = 0; k < count && rc == MI_OK; k++) {
      const char *eq = strrchr(specs[k], '=');
      int32_t i = -1;
      for (int32_t j = 0; eq && j < g->input_count; j++) {
        const char *nm = g->tensors[g->inputs[j]].name;
        if (strlen(nm) == (size_t)(eq - specs[k]) && strncmp(nm, specs[k], (size_t)(eq - specs[k])) == 0)
          i = j;
      }
      if (i < 0)
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "%s: expected INPUT=DIR with INPUT one of the model's %d inputs", specs[k],
                       (int)g->input_count);
      else if (seen[i])
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: input '%s' is given twice", specs[k],
                       g->tensors[g->inputs[i]].name);
      else if ((rc = load_input(g, i, eq + 1, &s, err)) == MI_OK)
        seen[i] = 1;
    }
  }
  for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++)
    if (!seen[i])
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "samples: no files for input '%s'",
                     g->tensors[g->inputs[i]].name);
  free(seen);
  if (rc != MI_OK) {
    mi_xf_samples_destroy(s);
    return rc;
  }
  *out = s;
  return MI_OK;
}

MI_API int32_t mi_xf_samples_load_dir(const mi_graph_t *g, const char *dir,
                                      mi_xf_samples_t **out, mi_error_t *err) {
  return mi_xf_samples_load_dirs(g, &dir, 1, out, err);
}

MI_API int32_t mi_xf_samples_split(mi_xf_samples_t *s, int32_t from, mi_xf_samples_t **out,
                                   mi_error_t *err) {
  if (out) *out = NULL;
  if (!s || !out || from < 0 || from > s->sample_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "samples split: bad arguments");
  mi_xf_samples_t *t = samples_new(s->input_count, s->sample_count - from);
  if (!t) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "samples split: out of memory");
  size_t k = (size_t)s->input_count;
  memcpy(t->inputs, s->inputs + (size_t)from * k, (size_t)(s->sample_count - from) * k * sizeof *t->inputs);
  t->synthetic = s->synthetic;
  s->sample_count = from;
  *out = t;
  return MI_OK;
}
