/* validate.c - checks every description a freshly created plugin gives, before it is used. */
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"

static int knob_exists(const mi_knob_desc_t *k, uint32_t n, const char *name, size_t len) {
  uint32_t i;
  for (i = 0; i < n; i++)
    if (strlen(k[i].name) == len && strncmp(k[i].name, name, len) == 0) return 1;
  return 0;
}

/* Every name in a comma-separated list must be a declared knob. */
static const char *unknown_in_list(const mi_knob_desc_t *k, uint32_t n, const char *list,
                                   size_t *len) {
  const char *p = list;
  while (*p) {
    size_t l;
    while (*p == ',' || *p == ' ') p++;
    l = strcspn(p, ", ");
    if (l && !knob_exists(k, n, p, l)) {
      *len = l;
      return p;
    }
    p += l;
  }
  return NULL;
}

static int32_t validate_device(const mi_plugin_t *p, uint32_t d, mi_error_t *err) {
  mi_device_desc_t dev;
  mi_knob_desc_t *knobs = NULL;
  mi_variant_desc_t *vars = NULL;
  mi_counter_desc_t *ctrs = NULL;
  mi_constraint_desc_t *cons = NULL;
  uint32_t nk = 0, nv = 0, nc = 0, ncon = 0, i;
  size_t len = 0;
  const char *bad;
  int32_t rc;

  if ((rc = mi_plugin_device_info(p, d, &dev, err)) != MI_OK ||
      (rc = mi_plugin_knobs(p, d, &knobs, &nk, err)) != MI_OK ||
      (rc = mi_plugin_variants(p, d, &vars, &nv, err)) != MI_OK ||
      (rc = mi_plugin_counters(p, d, &ctrs, &nc, err)) != MI_OK ||
      (rc = mi_plugin_constraints(p, d, &cons, &ncon, err)) != MI_OK)
    goto done;
  for (i = 0; i < nv; i++) {
    if ((bad = unknown_in_list(knobs, nk, vars[i].knobs, &len)) != NULL) {
      rc = mi_errorf(err, MI_ERR_ABI, "%s: variant '%s' reads unknown knob '%.*s'", p->name,
                     vars[i].id, (int)len, bad);
      goto done;
    }
  }
  for (i = 0; i < ncon; i++) {
    const mi_constraint_desc_t *c = &cons[i];
    if (c->kind == MI_CONSTRAINT_CUSTOM) continue;
    if (!knob_exists(knobs, nk, c->a, strlen(c->a)) ||
        (c->b[0] && !knob_exists(knobs, nk, c->b, strlen(c->b)))) {
      rc = mi_errorf(err, MI_ERR_ABI, "%s: constraint %u names unknown knob '%s'", p->name, i,
                     knob_exists(knobs, nk, c->a, strlen(c->a)) ? c->b : c->a);
      goto done;
    }
  }

done:
  free(knobs);
  free(vars);
  free(ctrs);
  free(cons);
  return rc;
}

int32_t mi__plugin_validate(const mi_plugin_t *p, mi_error_t *err) {
  uint32_t d;
  int32_t rc;
  mi_error_t why;
  for (d = 0; d < p->device_count; d++) {
    mi_error_clear(&why);
    if ((rc = validate_device(p, d, &why)) != MI_OK)
      return mi_errorf(err, MI_ERR_ABI, "invalid description: %s", why.message);
  }
  return MI_OK;
}
