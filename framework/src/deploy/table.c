/* table.c - the deployment table in memory: lookup, copies, and the atomic write to disk. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deploy/deploy_internal.h"

int32_t mi__deploy_read_file(const char *path, char **buf, size_t *n, mi_error_t *err) {
  FILE *f = fopen(path, "rb");
  char *b = NULL;
  long sz;
  *buf = NULL;
  *n = 0;
  if (!f) return mi_errorf(err, MI_ERR_IO, "%s: %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
      sz > (64L << 20)) {
    fclose(f);
    return mi_errorf(err, MI_ERR_IO, "%s: cannot read (or larger than 64 MiB)", path);
  }
  if (!(b = malloc((size_t)sz + 1))) {
    fclose(f);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory");
  }
  if (fread(b, 1, (size_t)sz, f) != (size_t)sz) {
    fclose(f);
    free(b);
    return mi_errorf(err, MI_ERR_IO, "%s: short read", path);
  }
  fclose(f);
  b[sz] = '\0';
  *buf = b;
  *n = (size_t)sz;
  return MI_OK;
}

void mi__deploy_config_clear(mi_deploy_config_t *c) {
  if (!c) return;
  for (int32_t i = 0; i < c->kv_count; i++) {
    free(c->keys[i]);
    free(c->values[i]);
  }
  free(c->keys);
  free(c->values);
  memset(c, 0, sizeof *c);
}

int32_t mi__deploy_config_copy(mi_deploy_config_t *dst, const mi_deploy_config_t *src) {
  *dst = *src;
  dst->kv_count = 0;
  dst->keys = calloc((size_t)src->kv_count + 1, sizeof *dst->keys);
  dst->values = calloc((size_t)src->kv_count + 1, sizeof *dst->values);
  if (!dst->keys || !dst->values) goto oom;
  for (int32_t i = 0; i < src->kv_count; i++) {
    dst->keys[i] = strdup(src->keys[i]);
    dst->values[i] = strdup(src->values[i]);
    dst->kv_count = i + 1;
    if (!dst->keys[i] || !dst->values[i]) goto oom;
  }
  return MI_OK;
oom:
  mi__deploy_config_clear(dst);
  return MI_ERR_OUT_OF_MEMORY;
}

void mi_deploy_destroy(mi_deploy_table_t *t) {
  if (!t) return;
  for (int32_t i = 0; i < t->entry_count; i++) {
    mi_deploy_entry_t *e = &t->entries[i];
    for (int32_t k = 0; k < e->config_count; k++) mi__deploy_config_clear(&e->configs[k]);
    free(e->configs);
    free(e->model);
    free(e->device);
    free(e->status);
    free(e->stack);
    free(e->stack_hash);
  }
  for (int32_t i = 0; i < t->assignment_count; i++) {
    free(t->assign_model[i]);
    free(t->assign_device[i]);
  }
  free(t->assign_model);
  free(t->assign_device);
  free(t->entries);
  free(t->path);
  free(t->dir);
  free(t->recipe);
  free(t->inputs);
  free(t);
}

static int matches(const mi_deploy_entry_t *e, const char *model, const char *device) {
  if (model && strcmp(e->model, model) != 0) {
    const char *base = strrchr(e->model, '/');
    if (!base || strcmp(base + 1, model) != 0) return 0; /* "net.onnx" names "models/net.onnx" */
  }
  if (device) {
    size_t n = strlen(device);
    /* "npu-stub" names "npu-stub:0" */
    if (strcmp(e->device, device) != 0 && !(strncmp(e->device, device, n) == 0 &&
                                            strcmp(e->device + n, ":0") == 0))
      return 0;
  }
  return 1;
}

int32_t mi_deploy_find(const mi_deploy_table_t *t, const char *model, const char *device) {
  if (!t) return -1;
  if (!model && !device)
    for (int32_t a = 0; a < t->assignment_count; a++)
      for (int32_t i = 0; i < t->entry_count; i++)
        if (t->entries[i].config_count > 0 &&
            matches(&t->entries[i], t->assign_model[a], t->assign_device[a]))
          return i;
  for (int32_t i = 0; i < t->entry_count; i++)
    if (t->entries[i].config_count > 0 && matches(&t->entries[i], model, device)) return i;
  return -1;
}

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char *mi_deploy_config_text(const mi_deploy_config_t *c) {
  size_t n = 1;
  char **lines, *out, *w;
  if (!c) return NULL;
  if (!(lines = calloc((size_t)c->kv_count + 1, sizeof *lines))) return NULL;
  for (int32_t i = 0; i < c->kv_count; i++) n += strlen(c->keys[i]) + strlen(c->values[i]) + 2;
  if (!(out = malloc(n))) {
    free(lines);
    return NULL;
  }
  w = out;
  for (int32_t i = 0; i < c->kv_count; i++) {
    lines[i] = w;
    w += snprintf(w, n - (size_t)(w - out), "%s=%s", c->keys[i], c->values[i]) + 1;
  }
  qsort(lines, (size_t)c->kv_count, sizeof *lines, cmp_line);
  {
    /* Sorted lines, joined into a second buffer then copied back. */
    char *joined = malloc(n), *j = joined;
    if (!joined) {
      free(lines);
      free(out);
      return NULL;
    }
    *j = '\0';
    for (int32_t i = 0; i < c->kv_count; i++) j += snprintf(j, n - (size_t)(j - joined), "%s\n", lines[i]);
    free(lines);
    free(out);
    return joined;
  }
}

/* ---------------------------------------------------------------- writing */

static void qstr(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20 || ch == 0x7f) fprintf(f, "\\x%02x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

static void figures(FILE *f, const double *v, const char *indent, int modeled) {
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
    const char *key;
    mi_objective_name(k, &key);
    if (isfinite(v[k])) fprintf(f, "%s%s: %.9g\n", indent, key, v[k]);
  }
  if (modeled) fprintf(f, "%senergy_source: modeled\n", indent);
}

static void write_config(FILE *f, const mi_deploy_config_t *c, const char *ind, int first) {
  fprintf(f, "%sconfig_id: \"%s\"\n", first ? "" : ind, c->id);
  if (c->verified[0]) fprintf(f, "%s  verified: \"%s\"\n", ind, c->verified);
  fprintf(f, "%s  measured:\n", ind);
  {
    char deeper[32];
    snprintf(deeper, sizeof deeper, "%s    ", ind);
    figures(f, c->measured, deeper, c->energy_modeled);
    fprintf(f, "%s  configuration:\n", ind);
    for (int32_t i = 0; i < c->kv_count; i++) {
      fputs(deeper, f);
      qstr(f, c->keys[i]);
      fputs(": ", f);
      qstr(f, c->values[i]);
      fputc('\n', f);
    }
  }
}

static void emit(FILE *f, const mi_deploy_table_t *t) {
  fputs("# Meta Infer deployment table (rewritten by the runtime, docs/runtime.md)\nversion: 1\n", f);
  if (t->recipe) {
    fputs("recipe: ", f);
    qstr(f, t->recipe);
    fputc('\n', f);
  }
  if (t->inputs) {
    fputs("inputs: ", f);
    qstr(f, t->inputs);
    fputc('\n', f);
  }
  for (int32_t k = 0, first = 1; k < MI_OBJ_COUNT; k++)
    if (t->has_bound[k]) {
      const char *key;
      mi_objective_name(k, &key);
      fprintf(f, "%s  %s: %.9g\n", first ? "constraints:\n" : "", key, t->bound[k]);
      first = 0;
    }
  fputs("deployments:\n", f);
  for (int32_t i = 0; i < t->entry_count; i++) {
    const mi_deploy_entry_t *e = &t->entries[i];
    fputs("  - model: ", f);
    qstr(f, e->model);
    fputs("\n    device: ", f);
    qstr(f, e->device);
    fputc('\n', f);
    if (e->status) {
      fputs("    status: ", f);
      qstr(f, e->status);
      fputc('\n', f);
    }
    if (e->config_count == 0) continue;
    fprintf(f, "    assigned: %s\n    stack: ", e->assigned ? "true" : "false");
    qstr(f, e->stack);
    fputs("\n    stack_hash: ", f);
    qstr(f, e->stack_hash);
    fputs("\n    chosen:\n      ", f);
    write_config(f, &e->configs[0], "    ", 1);
    if (e->config_count > 1) fputs("    fallbacks:\n", f);
    for (int32_t k = 1; k < e->config_count; k++) {
      fputs("      - ", f);
      write_config(f, &e->configs[k], "      ", 1);
    }
  }
  if (t->assignment_count) fputs("assignment:\n", f);
  for (int32_t i = 0; i < t->assignment_count; i++) {
    fputs("  - model: ", f);
    qstr(f, t->assign_model[i]);
    fputs("\n    device: ", f);
    qstr(f, t->assign_device[i]);
    fputc('\n', f);
  }
}

int32_t mi_deploy_write(const mi_deploy_table_t *t, const char *path, mi_error_t *err) {
  char tmp[4200], dir[4096];
  const char *slash;
  FILE *f = NULL;
  int fd = -1, dfd;
  int32_t rc = MI_OK;
  if (!t || !path) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "deploy: NULL argument");
  /* The temporary lives in the same folder: rename is only atomic within one filesystem. */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
    return mi_errorf(err, MI_ERR_IO, "%s: %s", tmp, strerror(errno));
  if (!(f = fdopen(fd, "w"))) {
    close(fd);
    rc = mi_errorf(err, MI_ERR_IO, "%s: %s", tmp, strerror(errno));
    goto fail;
  }
  emit(f, t);
  if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
    goto fail;
  }
  if (fclose(f) != 0) {
    f = NULL;
    rc = mi_errorf(err, MI_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    goto fail;
  }
  f = NULL;
  if (rename(tmp, path) != 0) {
    rc = mi_errorf(err, MI_ERR_IO, "%s: rename failed: %s", path, strerror(errno));
    goto fail;
  }
  /* The rename itself is durable only once the folder is synced. */
  slash = strrchr(path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1,
           slash ? path : ".");
  if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  return MI_OK;
fail:
  if (f) fclose(f);
  unlink(tmp);
  return rc;
}
