/* guard.c - what keeps plugin code from taking mi-run down: the guarded child the run happens in
 * (mi_guard_begin), the preflight every plugin passes before it is loaded here, and an stdout of
 * mi-run's own so that a plugin's printf lands in the log, never in the output. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mi_cli.h"
#include "mi_run.h"

int run_guard(double timeout_s, mi_guard_t **g, int *status) {
  mi_error_t err = {0};
  int32_t rc = mi_guard_begin(timeout_s, g, status, &err);
  if (*g) return 1;
  if (rc) {
    for (char *c = err.message; *c; c++)
      if (*c == '\n' || *c == '\r') *c = ' ';
    fprintf(stderr, "mi-run: %s\n", err.message[0] ? err.message : mi_status_message(rc));
    *status = 1;
  }
  return 0;
}

FILE *run_own_stdout(void) {
  int fd = dup(STDOUT_FILENO);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return stdout;
  }
  /* From here on the process's stdout (fd 1 and the stdio stream plugins share with us) is the
   * log: what a plugin prints goes to stderr. */
  fflush(stdout);
  if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    fclose(f);
    return stdout;
  }
  return f;
}

int32_t run_close_stdout(FILE *out, mi_error_t *err) {
  int bad = fflush(out) != 0;
  if (out != stdout) bad |= fclose(out) != 0;
  return bad ? mi_errorf(err, MI_ERR_IO, "cannot write to stdout") : MI_OK;
}

/* Only the device's plugin is loaded (after its preflight); the others' names are kept for the
 * message when the device's is not there. */
typedef struct only {
  mi_guard_t *g;
  const char *want;
  size_t want_len;
  char others[512];
  size_t used;
} only_t;

static int32_t only_device(void *ctx, const char *path, const char *name, mi_error_t *err) {
  only_t *o = ctx;
  if (o->want && (strlen(name) != o->want_len || strncmp(name, o->want, o->want_len) != 0)) {
    if (o->used < sizeof o->others) {
      int k = snprintf(o->others + o->used, sizeof o->others - o->used, "%s%s",
                       o->used ? ", " : "", name);
      if (k > 0) o->used += (size_t)k;
    }
    return mi_errorf(err, MI_ERR_NOT_FOUND, "not the plugin of the device");
  }
  /* The preflight has its own deadline (MI_LOAD_TIMEOUT_S): the guard waits for it. */
  mi_guard_stage(o->g, name, "preflight");
  return mi_worker_preflight(NULL, path, name, err);
}

int32_t run_load_plugins(mi_registry_t *reg, const char *dir, const char *spec, mi_guard_t *g,
                         mi_plugin_t **plugin, uint32_t *device, mi_error_t *err) {
  only_t o;
  int32_t rc;
  memset(&o, 0, sizeof o);
  o.g = g;
  o.want = spec;
  o.want_len = spec ? strcspn(spec, ":") : 0;
  mi_guard_registry(g, reg);
  mi_registry_set_preflight(reg, only_device, &o);
  rc = mi_cli_scan_plugins(reg, dir, err);
  mi_registry_set_preflight(reg, NULL, NULL);
  if (rc || !spec) return rc;
  if ((rc = mi_registry_device(reg, spec, plugin, device, err)) == MI_ERR_NOT_FOUND) {
    char name[128];
    const char *why;
    snprintf(name, sizeof name, "%.*s", (int)(o.want_len < 127 ? o.want_len : 127), spec);
    if ((why = mi_registry_refusal(reg, name)))
      return mi_errorf(err, MI_ERR_DEVICE, "device '%s': plugin '%s' refused at load: %s", spec,
                       name, why);
    if (!mi_registry_find(reg, name))
      return mi_errorf(err, MI_ERR_NOT_FOUND, "device '%s': no plugin '%s' (found: %s)", spec,
                       name, o.used ? o.others : "none");
  }
  return rc;
}

/* Each fallback candidate passes the same preflight as the device's plugin. */
static int32_t fallback_preflight(void *ctx, const char *path, const char *name, mi_error_t *err) {
  mi_guard_stage(ctx, name, "preflight");
  return mi_worker_preflight(NULL, path, name, err);
}

int32_t run_load_fallback(mi_registry_t *reg, const char *dir, const char *spec,
                          const mi_plugin_t *primary, uint32_t device, mi_guard_t *g,
                          mi_plugin_t **fb, uint32_t *fb_device, mi_error_t *err) {
  char *path = mi_plugin_path(dir);
  int32_t rc = path ? mi_registry_load_fallback(reg, path, spec, primary, device,
                                                fallback_preflight, g, fb, fb_device, err)
                    : mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  free(path);
  return rc;
}
