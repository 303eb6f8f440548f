/* rules_desc.c - conformance rules on descriptions: valid descriptors, invalid knobs refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "conform_util.h"

static int knob_in_domain(const mi_knob_desc_t *k, int64_t v) {
  switch (k->type) {
  case MI_KNOB_INT:
    if (k->value_count > 0) {
      for (uint32_t i = 0; i < k->value_count && i < MI_KNOB_MAX_VALUES; i++)
        if (k->values[i] == v) return 1;
      return 0;
    }
    /* unsigned: v - min overflows int64 over a full-range domain */
    return v >= k->min && v <= k->max &&
           (k->step <= 1 || ((uint64_t)v - (uint64_t)k->min) % (uint64_t)k->step == 0);
  case MI_KNOB_BOOL: return v == 0 || v == 1;
  case MI_KNOB_ENUM: return v >= 0 && v < conform_enum_count(k);
  default: return 1;
  }
}

static const mi_knob_desc_t *find_knob(const conform_descs_t *d, const char *name) {
  for (uint32_t i = 0; i < d->knob_count; i++)
    if (!strcmp(d->knobs[i].name, name)) return &d->knobs[i];
  return NULL;
}

/* Checks one device's descriptions; returns CONFORM_FAIL with the first broken rule. */
static int check_device(const conform_descs_t *d, uint32_t dev, char *why, size_t n) {
  if (d->device.name[0] == '\0') {
    return conform_verdict(why, n, CONFORM_FAIL, "device %u: empty name", dev);
  }
  for (uint32_t i = 0; i < d->knob_count; i++) {
    const mi_knob_desc_t *k = &d->knobs[i];
    if (k->name[0] == '\0') {
      return conform_verdict(why, n, CONFORM_FAIL, "device %u knob %u: empty name", dev, i);
    }
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(d->knobs[j].name, k->name)) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u: knob name '%s' declared twice", dev, k->name);
      }
    if (k->type < MI_KNOB_INT || k->type > MI_KNOB_ENUM || k->scope < 0 ||
        k->scope > MI_KNOB_SCOPE_VARIANT || k->mutability < 0 || k->mutability > MI_KNOB_AT_INIT) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u knob '%s': unknown type, scope or mutability", dev, k->name);
    }
    if (k->type == MI_KNOB_INT && k->value_count == 0 && (k->min > k->max || k->step < 1)) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u knob '%s': empty domain [%lld, %lld] step %lld", dev, k->name,
                             (long long)k->min, (long long)k->max, (long long)k->step);
    }
    if (k->type == MI_KNOB_INT && k->value_count > MI_KNOB_MAX_VALUES) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u knob '%s': value_count %u exceeds %d", dev, k->name,
                             k->value_count, MI_KNOB_MAX_VALUES);
    }
    if (k->type == MI_KNOB_ENUM && conform_enum_count(k) == 0) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u knob '%s': enum without choices", dev, k->name);
    }
    if (k->type == MI_KNOB_FLOAT
            ? !(k->fmin <= k->fmax && k->default_float >= k->fmin && k->default_float <= k->fmax)
            : !knob_in_domain(k, k->default_int)) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u knob '%s': default outside its domain", dev, k->name);
    }
  }
  for (uint32_t i = 0; i < d->variant_count; i++) {
    const mi_variant_desc_t *v = &d->variants[i];
    char list[sizeof v->knobs], *save = NULL;
    if (v->id[0] == '\0' || v->op_type[0] == '\0') {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u variant %u: empty id or op type", dev, i);
    }
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(d->variants[j].id, v->id)) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u: variant id '%s' declared twice", dev, v->id);
      }
    memcpy(list, v->knobs, sizeof list);
    for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
      if (!find_knob(d, tok)) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u variant '%s': reads knob '%s', which is not declared", dev,
                               v->id, tok);
      }
  }
  for (uint32_t i = 0; i < d->counter_count; i++) {
    const mi_counter_desc_t *c = &d->counters[i];
    if (c->name[0] == '\0' || c->kind < MI_COUNTER_TIMER || c->kind > MI_COUNTER_OTHER) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u counter %u: empty name or unknown kind", dev, i);
    }
    if (!conform_unit_ok(c->kind, c->unit)) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u counter '%s': unit '%s' does not fit its kind", dev, c->name,
                             c->unit);
    }
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(d->counters[j].name, c->name)) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u: counter name '%s' declared twice", dev, c->name);
      }
  }
  for (uint32_t i = 0; i < d->constraint_count; i++) {
    const mi_constraint_desc_t *k = &d->constraints[i];
    const mi_knob_desc_t *a, *b;
    if (k->kind < MI_CONSTRAINT_DIVIDES || k->kind > MI_CONSTRAINT_CUSTOM) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u constraint %u: unknown kind %d", dev, i, k->kind);
    }
    if (k->kind == MI_CONSTRAINT_CUSTOM) continue;
    a = find_knob(d, k->a);
    b = k->b[0] ? find_knob(d, k->b) : NULL;
    if (!a || (k->b[0] && !b)) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u constraint %u: names an undeclared knob ('%s', '%s')", dev, i,
                             k->a, k->b);
    }
    if (!conform_constraint_holds(k, a->default_int, b ? b->default_int : 0)) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u constraint %u (%s) is broken by the knobs' defaults", dev, i,
                             k->reason[0] ? k->reason : "no reason given");
    }
  }
  return CONFORM_PASS;
}

/* R5: descriptors are well formed and the defaults satisfy the declared constraints. */
int conform_rule_descriptors(conform_ctx_t *c, char *why, size_t n) {
  uint32_t knobs = 0, variants = 0;
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    conform_descs_t d;
    int st;
    if (conform_descs_get(c, dev, &d, why, n) != MI_OK) return CONFORM_FAIL;
    st = check_device(&d, dev, why, n);
    knobs += d.knob_count;
    variants += d.variant_count;
    conform_descs_free(&d);
    if (st != CONFORM_PASS) return st;
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "%u device(s), %u knob(s), %u variant(s) well formed",
                         c->plugin.device_count, knobs, variants);
}

/* A value just outside a knob's domain: above it, else below it; 0 when there is none (a FLOAT
 * knob, or an INT domain that spans all of int64, which a plugin cannot be blamed for accepting). */
static int out_of_domain(const mi_knob_desc_t *k, int64_t *v) {
  if (k->type == MI_KNOB_BOOL) *v = 2;
  else if (k->type == MI_KNOB_ENUM)
    *v = conform_enum_count(k);
  else if (k->type == MI_KNOB_INT && k->value_count == 0) {
    int64_t step = k->step > 0 ? k->step : 1;
    if (__builtin_add_overflow(k->max, step, v) && __builtin_sub_overflow(k->min, step, v))
      return 0;
  } else if (k->type == MI_KNOB_INT) {
    int64_t hi = k->values[0], lo = k->values[0];
    for (uint32_t i = 1; i < k->value_count && i < MI_KNOB_MAX_VALUES; i++) {
      if (k->values[i] > hi) hi = k->values[i];
      if (k->values[i] < lo) lo = k->values[i];
    }
    if (__builtin_add_overflow(hi, 1, v) && __builtin_sub_overflow(lo, 1, v)) return 0;
  } else {
    return 0;
  }
  return 1;
}

/* R6: for each variant and each knob it reads, a value outside the knob's domain is refused
 * with MI_ERR_INVALID_CONFIG and a message, by check_config or else by kernel_prepare. */
int conform_rule_invalid_knobs(conform_ctx_t *c, char *why, size_t n) {
  int tried = 0;
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    conform_descs_t d;
    if (conform_descs_get(c, dev, &d, why, n) != MI_OK) return CONFORM_FAIL;
    for (uint32_t vi = 0; vi < d.variant_count; vi++) {
      const mi_variant_desc_t *v = &d.variants[vi];
      char list[sizeof v->knobs], *save = NULL;
      memcpy(list, v->knobs, sizeof list);
      for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        const mi_knob_desc_t *k = find_knob(&d, tok);
        mi_knob_value_t kv = {0};
        mi_error_t err = {0};
        int32_t rc;
        if (!k || !out_of_domain(k, &kv.i)) continue;
        kv.name = k->name;
        rc = conform_try_config(c, dev, v, &kv, 1, &err);
        if (rc == MI_ERR_UNSUPPORTED) continue; /* no case of this op to prepare */
        tried++;
        if (rc != MI_ERR_INVALID_CONFIG || err.message[0] == '\0') {
          snprintf(why, n,
                   "device %u variant '%s': knob %s=%lld (outside its domain) was %s%s%s", dev,
                   v->id, k->name, (long long)kv.i,
                   rc == MI_OK ? "accepted" : "refused without MI_ERR_INVALID_CONFIG and a reason",
                   err.message[0] ? ": " : "", err.message);
          conform_descs_free(&d);
          return CONFORM_FAIL;
        }
      }
    }
    conform_descs_free(&d);
  }
  return conform_checked(why, n, tried, "no variant reads a knob with a finite domain",
                         "%d out-of-domain knob value(s) refused with reasons", tried);
}
