/* describe.c - description queries through a plugin's table, with every answer checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"

/* After a plugin filled an out struct of `host_size` bytes: the size it reports must fit, the
 * bytes past what it wrote read zero, and every char array gets a terminator. */
static int32_t settle(const mi_plugin_t *p, void *out, size_t host_size, const char *what,
                      mi_error_t *err) {
  uint32_t written;
  memcpy(&written, out, sizeof written);
  if (written > host_size)
    return mi_errorf(err, MI_ERR_ABI, "%s: %s reports struct_size %u, larger than the host's %zu",
                     p->name, what, written, host_size);
  if (written < sizeof(uint32_t)) written = sizeof(uint32_t);
  memset((char *)out + written, 0, host_size - written);
  return MI_OK;
}

#define TERMINATE(field) ((field)[sizeof(field) - 1] = '\0')

static int32_t call_failed(const mi_plugin_t *p, int32_t rc, const char *fn, uint32_t device,
                           const mi_error_t *perr, mi_error_t *err) {
  return mi_errorf(err, rc, "%s: %s(device %u) failed (%s): %.*s", p->name, fn, device,
                   mi_status_message(rc), MI_ERROR_MESSAGE_SIZE - 1, perr->message);
}

static int32_t check_device(const mi_plugin_t *p, uint32_t device, mi_error_t *err) {
  if (!p)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "plugin is NULL");
  if (device >= p->device_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no device %u (it has %u)", p->name,
                     device, p->device_count);
  return MI_OK;
}

MI_API int32_t mi_plugin_device_info(const mi_plugin_t *p, uint32_t device, mi_device_desc_t *out,
                                     mi_error_t *err) {
  mi_error_t perr;
  int32_t rc;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "device_info: out is NULL");
  memset(out, 0, sizeof *out);
  if ((rc = check_device(p, device, err)) != MI_OK) return rc;
  out->struct_size = sizeof *out;
  mi_error_clear(&perr);
  rc = p->api.device_info(p->ctx, device, out, &perr);
  perr.message[sizeof perr.message - 1] = '\0';
  if (rc != MI_OK) {
    call_failed(p, rc, "device_info", device, &perr, err);
    memset(out, 0, sizeof *out);
    return rc;
  }
  if ((rc = settle(p, out, sizeof *out, "device_info", err)) != MI_OK) {
    memset(out, 0, sizeof *out);
    return rc;
  }
  TERMINATE(out->name);
  TERMINATE(out->vendor);
  TERMINATE(out->driver_version);
  TERMINATE(out->isa);
  /* A kind added by a newer minor is shown as "other" rather than refused. */
  if (out->kind < MI_DEVICE_CPU || out->kind > MI_DEVICE_OTHER) out->kind = MI_DEVICE_OTHER;
  if (!out->name[0]) {
    memset(out, 0, sizeof *out);
    return mi_errorf(err, MI_ERR_ABI, "%s: device %u has an empty name", p->name, device);
  }
  return MI_OK;
}

/* The shape every array query shares: count, then one call per element into a zeroed struct
 * whose size the host sets. `check` validates one element. */
typedef int32_t (*count_fn)(mi_plugin_ctx_t *, uint32_t, uint32_t *, mi_error_t *);
typedef enum desc_kind { DESC_KNOB,
                         DESC_VARIANT,
                         DESC_COUNTER,
                         DESC_CONSTRAINT } desc_kind;
typedef int32_t (*check_fn)(const mi_plugin_t *p, uint32_t device, uint32_t index, void *elem,
                            const void *all, mi_error_t *err);

/* Calls the description function of `kind` through its own type (no pointer casts). */
static int32_t call_desc(const mi_plugin_t *p, desc_kind kind, uint32_t device, uint32_t i,
                         void *elem, mi_error_t *perr) {
  switch (kind) {
  case DESC_KNOB: return p->api.knob_desc(p->ctx, device, i, elem, perr);
  case DESC_VARIANT: return p->api.variant_desc(p->ctx, device, i, elem, perr);
  case DESC_COUNTER: return p->api.counter_desc(p->ctx, device, i, elem, perr);
  case DESC_CONSTRAINT: return p->api.constraint_desc(p->ctx, device, i, elem, perr);
  }
  return MI_ERR_INTERNAL;
}

static int32_t has_desc(const mi_plugin_t *p, desc_kind kind) {
  switch (kind) {
  case DESC_KNOB: return p->api.knob_desc != NULL;
  case DESC_VARIANT: return p->api.variant_desc != NULL;
  case DESC_COUNTER: return p->api.counter_desc != NULL;
  case DESC_CONSTRAINT: return p->api.constraint_desc != NULL;
  }
  return 0;
}

static int32_t query_array(const mi_plugin_t *p, uint32_t device, count_fn cf, desc_kind kind,
                           const char *what, size_t elem_size, check_fn check, void **out,
                           uint32_t *count, mi_error_t *err) {
  mi_error_t perr;
  uint32_t n = 0, i;
  char *arr = NULL;
  int32_t rc;

  *out = NULL;
  *count = 0;
  if ((rc = check_device(p, device, err)) != MI_OK) return rc;
  if (!cf || !has_desc(p, kind)) return MI_OK; /* optional and absent: nothing to describe */
  mi_error_clear(&perr);
  rc = cf(p->ctx, device, &n, &perr);
  perr.message[sizeof perr.message - 1] = '\0';
  if (rc != MI_OK) return call_failed(p, rc, what, device, &perr, err);
  if (n > MI__MAX_DESCS)
    return mi_errorf(err, MI_ERR_ABI, "%s: device %u declares %u %ss (at most %u)", p->name,
                     device, n, what, MI__MAX_DESCS);
  if (n == 0) return MI_OK;
  arr = calloc(n, elem_size);
  if (!arr) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "%s: out of memory", p->name);
  for (i = 0; i < n; i++) {
    void *elem = arr + (size_t)i * elem_size;
    uint32_t sz = (uint32_t)elem_size;
    memcpy(elem, &sz, sizeof sz);
    mi_error_clear(&perr);
    rc = call_desc(p, kind, device, i, elem, &perr);
    perr.message[sizeof perr.message - 1] = '\0';
    if (rc != MI_OK) {
      mi_errorf(err, rc, "%s: %s %u of device %u failed (%s): %s", p->name, what, i, device,
                mi_status_message(rc), perr.message);
      goto fail;
    }
    if ((rc = settle(p, elem, elem_size, what, err)) != MI_OK) goto fail;
    if ((rc = check(p, device, i, elem, arr, err)) != MI_OK) goto fail;
  }
  *out = arr;
  *count = n;
  return MI_OK;

fail:
  free(arr);
  return rc;
}

/* Number of '|' separated names in an ENUM's choices; 0 when one is empty. */
static int64_t enum_choices(const char *s) {
  int64_t n = 1;
  const char *p;
  if (!s[0]) return 0;
  for (p = s; *p; p++) {
    if (*p == '|') {
      if (p == s || p[1] == '|' || p[1] == '\0') return 0;
      n++;
    }
  }
  return n;
}

static int32_t check_knob(const mi_plugin_t *p, uint32_t device, uint32_t index, void *elem,
                          const void *all, mi_error_t *err) {
  mi_knob_desc_t *k = elem;
  const mi_knob_desc_t *prev = all;
  uint32_t i;
  TERMINATE(k->name);
  TERMINATE(k->description);
  TERMINATE(k->unit);
  TERMINATE(k->choices);
  TERMINATE(k->applies_to);
#define BAD(...) mi_errorf(err, MI_ERR_ABI, __VA_ARGS__)
  if (!k->name[0]) return BAD("%s: device %u knob %u has an empty name", p->name, device, index);
  for (i = 0; i < index; i++)
    if (strcmp(prev[i].name, k->name) == 0)
      return BAD("%s: device %u knob '%s' declared twice", p->name, device, k->name);
  if (k->scope < MI_KNOB_SCOPE_DEVICE || k->scope > MI_KNOB_SCOPE_VARIANT)
    return BAD("%s: knob '%s' has unknown scope %d", p->name, k->name, k->scope);
  if (k->mutability < MI_KNOB_AT_PREPARE || k->mutability > MI_KNOB_AT_INIT)
    return BAD("%s: knob '%s' has unknown mutability %d", p->name, k->name, k->mutability);
  switch (k->type) {
  case MI_KNOB_INT:
    if (k->value_count > MI_KNOB_MAX_VALUES)
      return BAD("%s: knob '%s' lists %u values (at most %d)", p->name, k->name, k->value_count,
                 MI_KNOB_MAX_VALUES);
    if (k->value_count > 0) {
      for (i = 0; i < k->value_count; i++)
        if (k->values[i] == k->default_int) return MI_OK;
      return BAD("%s: knob '%s' default %lld is not one of its values", p->name, k->name,
                 (long long)k->default_int);
    }
    if (k->min > k->max)
      return BAD("%s: knob '%s' has min %lld > max %lld", p->name, k->name, (long long)k->min,
                 (long long)k->max);
    if (k->step < 1) return BAD("%s: knob '%s' has step %lld < 1", p->name, k->name,
                                (long long)k->step);
    if (k->default_int < k->min || k->default_int > k->max ||
        ((uint64_t)k->default_int - (uint64_t)k->min) % (uint64_t)k->step != 0) /* no overflow */
      return BAD("%s: knob '%s' default %lld outside its domain [%lld,%lld] step %lld", p->name,
                 k->name, (long long)k->default_int, (long long)k->min, (long long)k->max,
                 (long long)k->step);
    return MI_OK;
  case MI_KNOB_FLOAT:
    if (!isfinite(k->fmin) || !isfinite(k->fmax) || k->fmin > k->fmax)
      return BAD("%s: knob '%s' has a bad range [%g,%g]", p->name, k->name, k->fmin, k->fmax);
    if (!(k->default_float >= k->fmin && k->default_float <= k->fmax))
      return BAD("%s: knob '%s' default %g outside its domain [%g,%g]", p->name, k->name,
                 k->default_float, k->fmin, k->fmax);
    return MI_OK;
  case MI_KNOB_BOOL:
    if (k->default_int != 0 && k->default_int != 1)
      return BAD("%s: knob '%s' default %lld is not a bool", p->name, k->name,
                 (long long)k->default_int);
    return MI_OK;
  case MI_KNOB_ENUM: {
    int64_t n = enum_choices(k->choices);
    if (n == 0) return BAD("%s: knob '%s' has malformed choices '%s'", p->name, k->name,
                           k->choices);
    if (k->default_int < 0 || k->default_int >= n)
      return BAD("%s: knob '%s' default index %lld outside its %lld choices", p->name, k->name,
                 (long long)k->default_int, (long long)n);
    return MI_OK;
  }
  default:
    return BAD("%s: knob '%s' has unknown type %d", p->name, k->name, k->type);
  }
}

static int32_t check_variant(const mi_plugin_t *p, uint32_t device, uint32_t index, void *elem,
                             const void *all, mi_error_t *err) {
  mi_variant_desc_t *v = elem;
  const mi_variant_desc_t *prev = all;
  uint32_t i;
  TERMINATE(v->id);
  TERMINATE(v->op_type);
  TERMINATE(v->description);
  TERMINATE(v->knobs);
  if (!v->id[0]) return BAD("%s: device %u variant %u has an empty id", p->name, device, index);
  if (!v->op_type[0]) return BAD("%s: variant '%s' has no op type", p->name, v->id);
  for (i = 0; i < index; i++)
    if (strcmp(prev[i].id, v->id) == 0)
      return BAD("%s: device %u variant id '%s' is not unique", p->name, device, v->id);
  return MI_OK;
}

static int32_t check_counter(const mi_plugin_t *p, uint32_t device, uint32_t index, void *elem,
                             const void *all, mi_error_t *err) {
  mi_counter_desc_t *c = elem;
  (void)all;
  TERMINATE(c->name);
  TERMINATE(c->unit);
  if (!c->name[0]) return BAD("%s: device %u counter %u has an empty name", p->name, device,
                              index);
  if (c->kind < MI_COUNTER_TIMER || c->kind > MI_COUNTER_OTHER)
    return BAD("%s: counter '%s' has unknown kind %d", p->name, c->name, c->kind);
  if (!isfinite(c->resolution) || c->resolution < 0)
    return BAD("%s: counter '%s' has a bad resolution %g", p->name, c->name, c->resolution);
  if (c->modeled != 0 && c->modeled != 1)
    return BAD("%s: counter '%s' has modeled=%d (0 or 1)", p->name, c->name, c->modeled);
  return MI_OK;
}

static int32_t check_constraint(const mi_plugin_t *p, uint32_t device, uint32_t index,
                                void *elem, const void *all, mi_error_t *err) {
  mi_constraint_desc_t *c = elem;
  (void)all;
  TERMINATE(c->a);
  TERMINATE(c->b);
  TERMINATE(c->applies_to);
  TERMINATE(c->reason);
  if (c->kind < MI_CONSTRAINT_DIVIDES || c->kind > MI_CONSTRAINT_CUSTOM)
    return BAD("%s: device %u constraint %u has unknown kind %d", p->name, device, index,
               c->kind);
  if (c->kind != MI_CONSTRAINT_CUSTOM && !c->a[0])
    return BAD("%s: device %u constraint %u names no knob", p->name, device, index);
  return MI_OK;
}
#undef BAD

MI_API int32_t mi_plugin_knobs(const mi_plugin_t *p, uint32_t device, mi_knob_desc_t **out,
                               uint32_t *count, mi_error_t *err) {
  return query_array(p, device, p ? p->api.knob_count : NULL,
                     DESC_KNOB, "knob",
                     sizeof(mi_knob_desc_t), check_knob, (void **)out, count, err);
}

MI_API int32_t mi_plugin_variants(const mi_plugin_t *p, uint32_t device, mi_variant_desc_t **out,
                                  uint32_t *count, mi_error_t *err) {
  return query_array(p, device, p ? p->api.variant_count : NULL,
                     DESC_VARIANT, "variant",
                     sizeof(mi_variant_desc_t), check_variant, (void **)out, count, err);
}

MI_API int32_t mi_plugin_counters(const mi_plugin_t *p, uint32_t device, mi_counter_desc_t **out,
                                  uint32_t *count, mi_error_t *err) {
  return query_array(p, device, p ? p->api.counter_count : NULL,
                     DESC_COUNTER, "counter",
                     sizeof(mi_counter_desc_t), check_counter, (void **)out, count, err);
}

MI_API int32_t mi_plugin_constraints(const mi_plugin_t *p, uint32_t device,
                                     mi_constraint_desc_t **out, uint32_t *count,
                                     mi_error_t *err) {
  return query_array(p, device, p ? p->api.constraint_count : NULL,
                     DESC_CONSTRAINT, "constraint",
                     sizeof(mi_constraint_desc_t), check_constraint, (void **)out, count, err);
}
