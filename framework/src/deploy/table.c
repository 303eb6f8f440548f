/* table.c - the deployment table in memory: reading the file, lookup, copies, canonical text and
 * config_id (the writer is table_write.c). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "deploy/deploy_internal.h"

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
    free(e->fallback);
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

typedef struct kv_ref {
  const char *key, *value;
} kv_ref_t;

static int cmp_key(const void *a, const void *b) {
  return strcmp(((const kv_ref_t *)a)->key, ((const kv_ref_t *)b)->key);
}

/* Sorted by key, as mi_space_canonical sorts its lines: a configuration's text, and so its id,
 * does not depend on the order of its keys in the file. */
char *mi_deploy_config_text(const mi_deploy_config_t *c) {
  size_t n = 1, at = 0;
  kv_ref_t *kv;
  char *out;
  if (!c) return NULL;
  for (int32_t i = 0; i < c->kv_count; i++) n += strlen(c->keys[i]) + strlen(c->values[i]) + 2;
  kv = malloc(((size_t)c->kv_count + 1) * sizeof *kv);
  out = malloc(n);
  if (!kv || !out) {
    free(kv);
    free(out);
    return NULL;
  }
  for (int32_t i = 0; i < c->kv_count; i++) kv[i] = (kv_ref_t){c->keys[i], c->values[i]};
  qsort(kv, (size_t)c->kv_count, sizeof *kv, cmp_key);
  out[0] = '\0';
  for (int32_t i = 0; i < c->kv_count; i++)
    at += (size_t)snprintf(out + at, n - at, "%s=%s\n", kv[i].key, kv[i].value);
  free(kv);
  return out;
}

int32_t mi_deploy_config_id(const mi_deploy_config_t *c, char out[17]) {
  char *text = mi_deploy_config_text(c);
  out[0] = '\0';
  if (!text) return MI_ERR_OUT_OF_MEMORY;
  mi_hash64_hex(mi_hash64(text, strlen(text), MI_HASH64_SEED), out);
  free(text);
  return MI_OK;
}

int32_t mi__deploy_config_from_point(const mi_space_t *s, const int32_t *pt, int32_t spare,
                                     mi_deploy_config_t *c, mi_error_t *err) {
  char *text = NULL, *save = NULL;
  int32_t rc, lines = 0;
  if ((rc = mi_space_canonical(s, pt, &text, err)) != MI_OK) return rc;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  c->keys = calloc((size_t)(lines + spare), sizeof *c->keys);
  c->values = calloc((size_t)(lines + spare), sizeof *c->values);
  if (!c->keys || !c->values) goto oom;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *eq = strchr(line, '=');
    if (!eq) continue;
    *eq = '\0';
    c->keys[c->kv_count] = strdup(line);
    c->values[c->kv_count] = strdup(eq + 1);
    if (!c->keys[c->kv_count] || !c->values[c->kv_count++]) goto oom;
  }
  free(text);
  return MI_OK;
oom:
  free(text);
  return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "deploy: out of memory for a configuration");
}
