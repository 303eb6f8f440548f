/* table_write.c - deployment.yaml written through libyaml's emitter, read back and compared with
 * what was meant before it replaces the old file: a table on disk is one mi-run accepts. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/yaml_io.h"
#include "deploy/deploy_internal.h"

/* ---------------------------------------------------------------- emitting
 * A new field is one line here, one in table_parse.c and one in same_config/same_table. */

static void kv_str(mi__yaml_writer_t *w, const char *key, const char *v) {
  mi__yw_key(w, key);
  mi__yw_str(w, v);
}

static void kv_int(mi__yaml_writer_t *w, const char *key, long long v) {
  mi__yw_key(w, key);
  mi__yw_int(w, v);
}

static void kv_num(mi__yaml_writer_t *w, const char *key, double v) {
  mi__yw_key(w, key);
  mi__yw_num(w, v);
}

static void figures(mi__yaml_writer_t *w, const double *v, int modeled) {
  mi__yw_map(w);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
    const char *key;
    mi_objective_name(k, &key);
    if (!isfinite(v[k])) continue;
    mi__yw_key(w, key);
    mi__yw_num(w, v[k]);
  }
  if (modeled) kv_str(w, "energy_source", "modeled");
  mi__yw_map_end(w);
}

static void emit_config(mi__yaml_writer_t *w, const mi_deploy_config_t *c) {
  mi__yw_map(w);
  kv_str(w, "config_id", c->id);
  if (c->verified[0]) kv_str(w, "verified", c->verified);
  if (c->verify_runs > 0) {
    mi__yw_key(w, "verification");
    mi__yw_map(w);
    kv_int(w, "runs", c->verify_runs);
    kv_int(w, "violations", c->verify_violations);
    kv_int(w, "failures", c->verify_failures);
    mi__yw_map_end(w);
  }
  mi__yw_key(w, "measured");
  figures(w, c->measured, c->energy_modeled);
  mi__yw_key(w, "configuration");
  mi__yw_map(w);
  for (int32_t i = 0; i < c->kv_count; i++) kv_str(w, c->keys[i], c->values[i]);
  mi__yw_map_end(w);
  mi__yw_map_end(w);
}

static void emit_entry(mi__yaml_writer_t *w, const mi_deploy_entry_t *e) {
  mi__yw_map(w);
  kv_str(w, "model", e->model);
  kv_str(w, "device", e->device);
  if (e->status) kv_str(w, "status", e->status);
  if (e->config_count > 0) {
    mi__yw_key(w, "assigned");
    mi__yw_bool(w, e->assigned);
    kv_str(w, "stack", e->stack);
    kv_str(w, "stack_hash", e->stack_hash);
    if (e->fallback) kv_str(w, "fallback", e->fallback);
    if (e->has_vs_default) {
      mi__yw_key(w, "vs_default");
      mi__yw_map(w);
      kv_num(w, "speedup", e->vs_default);
      kv_num(w, "ci95_low", e->vs_default_lo);
      kv_num(w, "ci95_high", e->vs_default_hi);
      kv_int(w, "rounds", e->vs_default_rounds);
      kv_str(w, "verdict", e->vs_default_verdict);
      mi__yw_map_end(w);
    }
    mi__yw_key(w, "chosen");
    emit_config(w, &e->configs[0]);
    if (e->config_count > 1) {
      mi__yw_key(w, "fallbacks");
      mi__yw_seq(w);
      for (int32_t k = 1; k < e->config_count; k++) emit_config(w, &e->configs[k]);
      mi__yw_seq_end(w);
    }
  }
  mi__yw_map_end(w);
}

static int32_t emit_table(FILE *f, const mi_deploy_table_t *t, const char *what, mi_error_t *err) {
  mi__yaml_writer_t w;
  int first = 1;
  mi__yw_begin(&w, f,
               "Meta Infer deployment table (docs/runtime.md); every config_id is checked "
               "against its configuration when read");
  mi__yw_map(&w);
  mi__yw_key(&w, "version");
  mi__yw_int(&w, 1);
  if (t->recipe) kv_str(&w, "recipe", t->recipe);
  if (t->inputs) kv_str(&w, "inputs", t->inputs);
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++) {
    const char *key;
    if (!t->has_bound[k]) continue;
    if (first) {
      mi__yw_key(&w, "constraints");
      mi__yw_map(&w);
      first = 0;
    }
    mi_objective_name(k, &key);
    mi__yw_key(&w, key);
    mi__yw_num(&w, t->bound[k]);
  }
  if (!first) mi__yw_map_end(&w);
  mi__yw_key(&w, "deployments");
  mi__yw_seq(&w);
  for (int32_t i = 0; i < t->entry_count; i++) emit_entry(&w, &t->entries[i]);
  mi__yw_seq_end(&w);
  if (t->assignment_count > 0) {
    mi__yw_key(&w, "assignment");
    mi__yw_seq(&w);
    for (int32_t i = 0; i < t->assignment_count; i++) {
      mi__yw_map(&w);
      kv_str(&w, "model", t->assign_model[i]);
      kv_str(&w, "device", t->assign_device[i]);
      mi__yw_map_end(&w);
    }
    mi__yw_seq_end(&w);
  }
  mi__yw_map_end(&w);
  return mi__yw_end(&w, what, err);
}

/* ---------------------------------------------------------------- read back and compare */

static int same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static int same_num(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static const char *same_config(const mi_deploy_config_t *a, const mi_deploy_config_t *b) {
  if (strcmp(a->id, b->id) != 0) return "config_id";
  if (strcmp(a->verified, b->verified) != 0) return "verified";
  if (a->verify_runs > 0 &&
      (a->verify_runs != b->verify_runs || a->verify_violations != b->verify_violations ||
       a->verify_failures != b->verify_failures))
    return "verification";
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (!same_num(a->measured[k], b->measured[k])) return "measured";
  if (a->energy_modeled != b->energy_modeled) return "energy_source";
  if (a->kv_count != b->kv_count) return "configuration";
  for (int32_t i = 0; i < a->kv_count; i++)
    if (strcmp(a->keys[i], b->keys[i]) != 0 || strcmp(a->values[i], b->values[i]) != 0)
      return "configuration";
  return NULL;
}

/* NULL when `b` (read back) holds everything `a` (meant) does, else the first field that
 * differs, written into why. */
static const char *same_table(const mi_deploy_table_t *a, const mi_deploy_table_t *b, char *why,
                              size_t cap) {
  if (!same_str(a->recipe, b->recipe)) return "recipe";
  if (!same_str(a->inputs, b->inputs)) return "inputs";
  for (int32_t k = 0; k < MI_OBJ_COUNT; k++)
    if (a->has_bound[k] != b->has_bound[k] ||
        (a->has_bound[k] && !same_num(a->bound[k], b->bound[k])))
      return "constraints";
  if (a->entry_count != b->entry_count) return "the number of deployments";
  for (int32_t i = 0; i < a->entry_count; i++) {
    const mi_deploy_entry_t *x = &a->entries[i], *y = &b->entries[i];
    const char *f = NULL;
    if (!same_str(x->model, y->model))
      f = "model";
    else if (!same_str(x->device, y->device))
      f = "device";
    else if (!same_str(x->status, y->status))
      f = "status";
    else if (x->config_count != y->config_count)
      f = "the number of configurations";
    else if (x->config_count > 0 && (x->assigned != y->assigned))
      f = "assigned";
    else if (x->config_count > 0 && !same_str(x->stack, y->stack))
      f = "stack";
    else if (x->config_count > 0 && !same_str(x->stack_hash, y->stack_hash))
      f = "stack_hash";
    else if (x->config_count > 0 && !same_str(x->fallback, y->fallback))
      f = "fallback";
    else if (x->has_vs_default != y->has_vs_default ||
             (x->has_vs_default &&
              (!same_num(x->vs_default, y->vs_default) || !same_num(x->vs_default_lo, y->vs_default_lo) ||
               !same_num(x->vs_default_hi, y->vs_default_hi) ||
               x->vs_default_rounds != y->vs_default_rounds ||
               strcmp(x->vs_default_verdict, y->vs_default_verdict) != 0)))
      f = "vs_default";
    for (int32_t k = 0; !f && k < x->config_count; k++)
      f = same_config(&x->configs[k], &y->configs[k]);
    if (f) {
      snprintf(why, cap, "deployment %d: %s", (int)i + 1, f);
      return why;
    }
  }
  if (a->assignment_count != b->assignment_count) return "assignment";
  for (int32_t i = 0; i < a->assignment_count; i++)
    if (!same_str(a->assign_model[i], b->assign_model[i]) ||
        !same_str(a->assign_device[i], b->assign_device[i]))
      return "assignment";
  return NULL;
}

/* Reads the temporary back under the final name (so errors name the file the user asked for)
 * and compares it with the table meant. */
static int32_t verify(const mi_deploy_table_t *t, const char *tmp, const char *path,
                      mi_error_t *err) {
  mi_deploy_table_t *back = NULL;
  char *buf = NULL, why[96];
  const char *diff;
  size_t n = 0;
  int32_t rc;
  if ((rc = mi__read_file(tmp, MI__DEPLOY_MAX_BYTES, &buf, &n, err)) != MI_OK) return rc;
  rc = mi_deploy_parse(buf, n, path, &back, err);
  free(buf);
  if (rc != MI_OK && err) {
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s", err->message);
    return mi_errorf(err, rc, "%s (not written: the table read back is not valid)", msg);
  }
  if (rc != MI_OK) return rc;
  diff = same_table(t, back, why, sizeof why);
  mi_deploy_destroy(back);
  if (diff)
    return mi_errorf(err, MI_ERR_INTERNAL, "%s: not written: the table read back differs in %s",
                     path, diff);
  return MI_OK;
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
  if ((rc = emit_table(f, t, path, err)) != MI_OK) goto fail;
  rc = mi__file_close_synced(f, tmp, err);
  f = NULL;
  if (rc != MI_OK) goto fail;
  if ((rc = verify(t, tmp, path, err)) != MI_OK) goto fail;
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
