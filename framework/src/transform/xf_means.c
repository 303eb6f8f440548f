/* xf_means.c - the per-channel input means of a model's weighted layers over its calibration
 * samples, computed once and kept across mi_xf_apply calls. Bias correction reads them for every
 * layer whose weights a configuration rounds, and each computation is a run of the reference
 * interpreter over the samples: about 2.2 s on ppocr_v4_det's two 320x320 samples, once for
 * each of the tune's BF16 configurations and per-block drops (the tune 36 -> 154 s) before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transform/xf_internal.h"

typedef struct means_entry {
  char *name;
  int32_t axis;
  int64_t channels;
  double *mean;
} means_entry_t;

struct mi_xf_means {
  int32_t filled; /* 1: computed (an entry per weighted layer's input that had samples) */
  int32_t count;
  means_entry_t *e;
};

MI_API mi_xf_means_t *mi_xf_means_create(void) { return calloc(1, sizeof(mi_xf_means_t)); }

MI_API void mi_xf_means_destroy(mi_xf_means_t *m) {
  if (!m) return;
  for (int32_t i = 0; i < m->count; i++) {
    free(m->e[i].name);
    free(m->e[i].mean);
  }
  free(m->e);
  free(m);
}

/* Every weighted layer's input means of g in one calibration run. */
static int32_t fill(mi_xf_means_t *m, const mi_graph_t *g, const mi_xf_samples_t *calib, mi_error_t *err) {
  int32_t nt = g->tensor_count, rc = MI_OK, any = 0;
  int8_t *axis = malloc((size_t)nt + 1);
  uint8_t *none = calloc((size_t)nt + 1, 1);
  float *ranges = malloc(((size_t)nt + 1) * 2 * sizeof *ranges);
  double **means = calloc((size_t)nt + 1, sizeof *means);
  if (!axis || !none || !ranges || !means) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "calibrate: out of memory");
    goto done;
  }
  memset(axis, -1, (size_t)nt + 1);
  for (int32_t n = 0; n < g->node_count; n++) {
    int32_t a, in = g->nodes[n].inputs[0];
    if (!mi__xf_is_weighted(g, n) || in < 0 || g->tensors[in].data || (a = mi__xf_bias_input_axis(g, n)) < 0) continue;
    axis[in] = (int8_t)a;
    any = 1;
  }
  if (any && (rc = mi__xf_calibrate(g, none, axis, calib, MI_XF_CALIB_MINMAX, 0.0, ranges, means, err)) != MI_OK)
    goto done;
  for (int32_t t = 0; t < nt; t++) {
    means_entry_t *e;
    if (!means[t] || !g->tensors[t].name || !g->tensors[t].name[0]) continue;
    if (!(e = realloc(m->e, ((size_t)m->count + 1) * sizeof *e))) goto oom;
    m->e = e;
    e = &m->e[m->count];
    if (!(e->name = mi__xf_strdup(g->tensors[t].name))) goto oom;
    e->axis = axis[t];
    e->channels = g->tensors[t].dims[axis[t]];
    e->mean = means[t];
    means[t] = NULL;
    m->count++;
  }
  m->filled = 1;
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "calibrate: out of memory");
done:
  for (int32_t t = 0; means && t < nt; t++) free(means[t]);
  free(means);
  free(ranges);
  free(none);
  free(axis);
  return rc;
}

/* The entry of tensor t of g along `axis`, -1 when m has none. */
static int32_t find(const mi_xf_means_t *m, const mi_graph_t *g, int32_t t, int32_t axis) {
  const char *name = g->tensors[t].name;
  for (int32_t i = 0; name && name[0] && i < m->count; i++)
    if (!strcmp(m->e[i].name, name) && m->e[i].axis == axis && m->e[i].channels == g->tensors[t].dims[axis]) return i;
  return -1;
}

int32_t mi__xf_means_get(mi_xf_means_t *m, const mi_graph_t *g, const int8_t *mean_axis,
                         const mi_xf_samples_t *calib, double **means, int *hit, mi_error_t *err) {
  int32_t rc;
  *hit = 0;
  if (!m->filled && (rc = fill(m, g, calib, err)) != MI_OK) return rc;
  for (int32_t t = 0; t < g->tensor_count; t++) /* every flagged tensor, or none */
    if (mean_axis[t] >= 0 && find(m, g, t, mean_axis[t]) < 0) return MI_OK;
  for (int32_t t = 0; t < g->tensor_count; t++) {
    int32_t i = mean_axis[t] >= 0 ? find(m, g, t, mean_axis[t]) : -1;
    size_t bytes;
    if (i < 0) continue;
    bytes = (size_t)m->e[i].channels * sizeof(double);
    if (!(means[t] = malloc(bytes + 1))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "calibrate: out of memory");
    memcpy(means[t], m->e[i].mean, bytes);
  }
  *hit = 1;
  return MI_OK;
}

/* The file: "MI-MEANS 1\n", the entry count, then per entry its name's length and bytes, axis,
 * channel count and means (host byte order: the workers of one machine read it). */
static const char k_magic[] = "MI-MEANS 1\n";

MI_API int32_t mi_xf_means_save(const mi_xf_means_t *m, const char *path, mi_error_t *err) {
  char tmp[4096];
  FILE *f;
  int ok;
  if (!m || !path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "means: NULL argument");
  if (!m->filled) return MI_OK;
  if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "means: path too long: %s", path);
  if (!(f = fopen(tmp, "wb"))) return mi_errorf(err, MI_ERR_IO, "means: cannot write %s", tmp);
  ok = fwrite(k_magic, 1, sizeof k_magic - 1, f) == sizeof k_magic - 1 && fwrite(&m->count, sizeof m->count, 1, f) == 1;
  for (int32_t i = 0; ok && i < m->count; i++) {
    const means_entry_t *e = &m->e[i];
    int32_t len = (int32_t)strlen(e->name);
    ok = fwrite(&len, sizeof len, 1, f) == 1 && fwrite(e->name, 1, (size_t)len, f) == (size_t)len &&
         fwrite(&e->axis, sizeof e->axis, 1, f) == 1 && fwrite(&e->channels, sizeof e->channels, 1, f) == 1 &&
         fwrite(e->mean, sizeof *e->mean, (size_t)e->channels, f) == (size_t)e->channels;
  }
  ok = fclose(f) == 0 && ok;
  /* renamed whole: a reader sees the old file or this one, never a part */
  if (!ok || rename(tmp, path) != 0) {
    remove(tmp);
    return mi_errorf(err, MI_ERR_IO, "means: cannot write %s", path);
  }
  return MI_OK;
}

MI_API int32_t mi_xf_means_load(mi_xf_means_t *m, const char *path, mi_error_t *err) {
  char magic[sizeof k_magic];
  mi_xf_means_t *r;
  long size = 0;
  int32_t n;
  FILE *f;
  if (!m || !path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "means: NULL argument");
  if (!(f = fopen(path, "rb"))) return mi_errorf(err, MI_ERR_NOT_FOUND, "means: no file %s", path);
  if (!(r = mi_xf_means_create())) {
    fclose(f);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "means: out of memory");
  }
  /* counts past what the file's bytes can hold are refused before anything is allocated */
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) goto bad;
  if (fread(magic, 1, sizeof k_magic - 1, f) != sizeof k_magic - 1 || memcmp(magic, k_magic, sizeof k_magic - 1) ||
      fread(&n, sizeof n, 1, f) != 1 || n < 0 || n > size / 16 || !(r->e = calloc((size_t)n + 1, sizeof *r->e)))
    goto bad;
  for (; r->count < n; r->count++) {
    means_entry_t *e = &r->e[r->count];
    int32_t len;
    if (fread(&len, sizeof len, 1, f) != 1 || len < 0 || len > size || !(e->name = calloc((size_t)len + 1, 1)) ||
        fread(e->name, 1, (size_t)len, f) != (size_t)len || fread(&e->axis, sizeof e->axis, 1, f) != 1 ||
        fread(&e->channels, sizeof e->channels, 1, f) != 1 || e->axis < 0 || e->axis >= MI_MAX_RANK ||
        e->channels < 1 || e->channels > size / (long)sizeof *e->mean ||
        !(e->mean = malloc((size_t)e->channels * sizeof *e->mean)) ||
        fread(e->mean, sizeof *e->mean, (size_t)e->channels, f) != (size_t)e->channels) {
      r->count++; /* its name and means are freed with r */
      goto bad;
    }
  }
  if (fgetc(f) != EOF) goto bad;
  fclose(f);
  /* m takes r's entries */
  for (int32_t i = 0; i < m->count; i++) {
    free(m->e[i].name);
    free(m->e[i].mean);
  }
  free(m->e);
  m->e = r->e;
  m->count = r->count;
  m->filled = 1;
  free(r);
  return MI_OK;
bad:
  fclose(f);
  mi_xf_means_destroy(r);
  return mi_errorf(err, MI_ERR_PARSE, "means: %s is not a means file this build wrote", path);
}
