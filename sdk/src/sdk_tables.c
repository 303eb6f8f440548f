/* sdk_tables.c - knob, variant and counter descriptions answered from a plugin's static
 * tables, so that a plugin declares arrays instead of writing the count/describe calls. */
#include <stdio.h>
#include <string.h>

#include "metainfer/mi_sdk.h"

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

static const mi_sdk_plugin_t *base(const mi_plugin_ctx_t *ctx) {
  return (const mi_sdk_plugin_t *)(const void *)ctx; /* the ctx starts with an mi_sdk_plugin_t */
}

static const char *pname(const mi_plugin_ctx_t *ctx) {
  return ctx && base(ctx)->name ? base(ctx)->name : "plugin";
}

int32_t mi_sdk_check_device(const mi_plugin_ctx_t *ctx, uint32_t device, const void *out,
                            mi_error_t *err) {
  const mi_sdk_plugin_t *b = base(ctx);
  if (!ctx || !out) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: NULL argument", pname(ctx));
  if (device >= b->device_count)
    return mi_sdk_errorf(err, b->no_device_code ? b->no_device_code : MI_ERR_INVALID_ARGUMENT,
                         "%s: no device %u (%u devices)", pname(ctx), device, b->device_count);
  return MI_OK;
}

const mi_sdk_tables_t *mi_sdk_tables(const mi_plugin_ctx_t *ctx, uint32_t device) {
  const mi_sdk_plugin_t *b = base(ctx);
  if (!ctx || device >= b->device_count) return NULL;
  if (b->tables_of) return b->tables_of(ctx, device);
  if (b->device_tables)
    return (const mi_sdk_tables_t *)(const void *)((const char *)b->device_tables +
                                                   (size_t)device * b->device_stride);
  return b->tables;
}

void mi_sdk_set_devices(mi_sdk_plugin_t *p, const mi_sdk_tables_t *tables,
                        const mi_device_desc_t *descs, size_t stride) {
  p->device_tables = tables;
  p->device_descs = descs;
  p->device_stride = stride;
}

/* The tables of a device after the common checks. */
static int32_t checked(const mi_plugin_ctx_t *ctx, uint32_t device, const void *out,
                       const mi_sdk_tables_t **t, mi_error_t *err) {
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (!(*t = mi_sdk_tables(ctx, device)))
    return mi_sdk_errorf(err, MI_ERR_INTERNAL, "%s: device %u has no description tables",
                         pname(ctx), device);
  return MI_OK;
}

int32_t mi_sdk_device_count(mi_plugin_ctx_t *ctx, uint32_t *count, mi_error_t *err) {
  if (!ctx || !count) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: NULL argument", pname(ctx));
  *count = base(ctx)->device_count;
  return MI_OK;
}

int32_t mi_sdk_device_info(mi_plugin_ctx_t *ctx, uint32_t device, mi_device_desc_t *out,
                           mi_error_t *err) {
  const mi_sdk_plugin_t *b = base(ctx);
  int32_t st = mi_sdk_check_device(ctx, device, out, err);
  if (st != MI_OK) return st;
  if (!b->device_descs)
    return mi_sdk_errorf(err, MI_ERR_INTERNAL, "%s: no device descriptions", pname(ctx));
  return mi_sdk_fill(out, (const char *)b->device_descs + (size_t)device * b->device_stride,
                     sizeof *b->device_descs);
}

/* count calls: one body, the field named by `what` */
enum { KNOBS,
       VARIANTS,
       COUNTERS,
       CONSTRAINTS };

static int32_t count_of(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, int what,
                        mi_error_t *err) {
  const mi_sdk_tables_t *t = NULL;
  int32_t st = checked(ctx, device, count, &t, err);
  if (st != MI_OK) return st;
  *count = what == KNOBS      ? t->knob_count
           : what == VARIANTS ? t->variant_count
           : what == COUNTERS ? t->counter_count
                              : (t->constraint ? t->constraint_count : 0);
  return MI_OK;
}

int32_t mi_sdk_knob_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count, mi_error_t *err) {
  return count_of(ctx, device, count, KNOBS, err);
}

int32_t mi_sdk_variant_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                             mi_error_t *err) {
  return count_of(ctx, device, count, VARIANTS, err);
}

int32_t mi_sdk_counter_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                             mi_error_t *err) {
  return count_of(ctx, device, count, COUNTERS, err);
}

int32_t mi_sdk_constraint_count(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t *count,
                                mi_error_t *err) {
  return count_of(ctx, device, count, CONSTRAINTS, err);
}

int32_t mi_sdk_constraint_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                               mi_constraint_desc_t *out, mi_error_t *err) {
  const mi_sdk_tables_t *t = NULL;
  int32_t st = checked(ctx, device, out, &t, err);
  if (st != MI_OK) return st;
  if (!t->constraint || index >= t->constraint_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no constraint %u (%u constraints)",
                         pname(ctx), index, t->constraint ? t->constraint_count : 0);
  st = t->constraint(ctx, device, index, out);
  return st == MI_OK ? MI_OK
                     : mi_sdk_errorf(err, st, "%s: constraint %u of device %u cannot be described",
                                     pname(ctx), index, device);
}

/* ---------------------------------------------------------------- lookups */

const mi_sdk_variant_t *mi_sdk_variant_at(const mi_sdk_tables_t *t, uint32_t index) {
  size_t size;
  if (!t || index >= t->variant_count) return NULL;
  size = t->variant_size ? t->variant_size : sizeof(mi_sdk_variant_t);
  return (const mi_sdk_variant_t *)(const void *)((const char *)t->variants + index * size);
}

const mi_sdk_variant_t *mi_sdk_variant_find(const mi_sdk_tables_t *t, const char *id) {
  uint32_t i;
  for (i = 0; id && t && i < t->variant_count; i++)
    if (strcmp(mi_sdk_variant_at(t, i)->id, id) == 0) return mi_sdk_variant_at(t, i);
  return NULL;
}

const mi_sdk_variant_t *mi_sdk_variant_first(const mi_sdk_tables_t *t, const char *op_type) {
  uint32_t i;
  for (i = 0; op_type && t && i < t->variant_count; i++)
    if (strcmp(mi_sdk_variant_at(t, i)->op_type, op_type) == 0) return mi_sdk_variant_at(t, i);
  return NULL;
}

int32_t mi_sdk_knob_index(const mi_sdk_tables_t *t, const char *name) {
  uint32_t i;
  for (i = 0; name && t && i < t->knob_count; i++)
    if (t->knobs[i].name && strcmp(t->knobs[i].name, name) == 0) return (int32_t)i;
  return -1;
}

static int64_t choice_count(const char *choices) {
  int64_t n = 1;
  if (!choices || !*choices) return 0;
  for (; *choices; choices++) n += *choices == '|';
  return n;
}

int mi_sdk_knob_allows(const mi_sdk_knob_t *k, int64_t value) {
  uint32_t i;
  if (!k) return 0;
  if (k->value_count) {
    for (i = 0; i < k->value_count; i++)
      if (k->values[i] == value) return 1;
    return 0;
  }
  if (k->type == MI_KNOB_BOOL) return value == 0 || value == 1;
  if (k->type == MI_KNOB_ENUM)
    return value >= 0 && value < (k->max ? k->max + 1 : choice_count(k->choices));
  return value >= k->min && value <= k->max;
}

/* ---------------------------------------------------------------- descriptions */

/* The ids of the variants reading knob `bit`, comma-separated; "" (all) when they overflow. */
static void applies_list(const mi_sdk_tables_t *t, uint32_t bit, char *out, size_t size) {
  uint32_t i;
  size_t w = 0;
  out[0] = '\0';
  for (i = 0; t && i < t->variant_count; i++) {
    const mi_sdk_variant_t *v = mi_sdk_variant_at(t, i);
    if (!(v->knob_mask & bit)) continue;
    w += (size_t)snprintf(out + w, w < size ? size - w : 0, "%s%s", w ? "," : "", v->id);
    if (w >= size) {
      out[0] = '\0';
      return;
    }
  }
}

int32_t mi_sdk_knob_fill(const mi_sdk_knob_t *k, uint32_t index, const mi_sdk_tables_t *t,
                         mi_knob_desc_t *out) {
  mi_knob_desc_t d;
  uint32_t j;
  if (!k || !out) return MI_ERR_INVALID_ARGUMENT;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  copy(d.name, sizeof d.name, k->name);
  copy(d.description, sizeof d.description, k->description);
  copy(d.unit, sizeof d.unit, k->unit);
  d.scope = k->scope;
  d.type = k->type;
  d.mutability = k->mutability;
  d.min = k->min;
  d.max = k->max;
  d.step = 1;
  d.value_count = k->value_count < MI_KNOB_MAX_VALUES ? k->value_count : MI_KNOB_MAX_VALUES;
  for (j = 0; j < d.value_count; j++) d.values[j] = k->values[j];
  if (d.value_count) {
    d.min = d.values[0];
    d.max = d.values[d.value_count - 1];
  } else if (k->type == MI_KNOB_BOOL) {
    d.min = 0;
    d.max = 1;
  } else if (k->type == MI_KNOB_ENUM && d.max == 0 && choice_count(k->choices) > 0) {
    d.max = choice_count(k->choices) - 1;
  }
  d.fmin = k->fmin;
  d.fmax = k->fmax;
  copy(d.choices, sizeof d.choices, k->choices);
  d.default_int = k->default_int;
  d.default_float = k->default_float;
  if (k->applies_to || index >= 32)
    copy(d.applies_to, sizeof d.applies_to, k->applies_to);
  else
    applies_list(t, 1u << index, d.applies_to, sizeof d.applies_to);
  return mi_sdk_fill(out, &d, sizeof d);
}

void mi_sdk_tables_set_counters(mi_sdk_tables_t *t, mi_sdk_counter_t *own,
                                const mi_sdk_counter_t *tmpl, uint32_t n, double timer_resolution) {
  if (n) memcpy(own, tmpl, n * sizeof *own);
  if (n && timer_resolution > 0) own[0].resolution = timer_resolution;
  t->counters = own;
  t->counter_count = n;
}

void mi_sdk_constraint_set(mi_constraint_desc_t *d, int32_t kind, const char *a, const char *b,
                           const char *applies_to, int64_t value, const char *reason_fmt, ...) {
  va_list ap;
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->kind = kind;
  snprintf(d->a, sizeof d->a, "%s", a ? a : "");
  snprintf(d->b, sizeof d->b, "%s", b ? b : "");
  snprintf(d->applies_to, sizeof d->applies_to, "%s", applies_to ? applies_to : "");
  d->value = value;
  va_start(ap, reason_fmt);
  if (vsnprintf(d->reason, sizeof d->reason, reason_fmt, ap) < 0) d->reason[0] = '\0';
  va_end(ap);
}

int32_t mi_sdk_knob_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                         mi_knob_desc_t *out, mi_error_t *err) {
  const mi_sdk_tables_t *t = NULL;
  int32_t st = checked(ctx, device, out, &t, err);
  if (st != MI_OK) return st;
  if (index >= t->knob_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no knob %u (%u knobs)", pname(ctx),
                         index, t->knob_count);
  return mi_sdk_knob_fill(&t->knobs[index], index, t, out);
}

int32_t mi_sdk_variant_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_variant_desc_t *out, mi_error_t *err) {
  const mi_sdk_tables_t *t = NULL;
  int32_t st = checked(ctx, device, out, &t, err);
  const mi_sdk_variant_t *v;
  mi_variant_desc_t d;
  uint32_t k;
  size_t w = 0;
  if (st != MI_OK) return st;
  if (!(v = mi_sdk_variant_at(t, index)))
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no variant %u (%u variants)",
                         pname(ctx), index, t->variant_count);
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  copy(d.id, sizeof d.id, v->id);
  copy(d.op_type, sizeof d.op_type, v->op_type);
  copy(d.description, sizeof d.description, v->description);
  d.dtype_mask = v->dtype_mask;
  d.layout_mask = v->layout_mask;
  d.fuse_mask = v->fuse_mask;
  if (!v->knob_mask) copy(d.knobs, sizeof d.knobs, v->knobs);
  for (k = 0; v->knob_mask && k < t->knob_count && k < 32; k++) {
    size_t n = strlen(t->knobs[k].name);
    if (!(v->knob_mask & (1u << k)) || w + n + 2 > sizeof d.knobs) continue;
    w += (size_t)snprintf(d.knobs + w, sizeof d.knobs - w, "%s%s", w ? "," : "", t->knobs[k].name);
  }
  return mi_sdk_fill(out, &d, sizeof d);
}

int32_t mi_sdk_counter_desc(mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                            mi_counter_desc_t *out, mi_error_t *err) {
  const mi_sdk_tables_t *t = NULL;
  int32_t st = checked(ctx, device, out, &t, err);
  const mi_sdk_counter_t *c;
  mi_counter_desc_t d;
  if (st != MI_OK) return st;
  if (index >= t->counter_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no counter %u (%u counters)",
                         pname(ctx), index, t->counter_count);
  c = &t->counters[index];
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  copy(d.name, sizeof d.name, c->name);
  copy(d.unit, sizeof d.unit, c->unit);
  d.kind = c->kind;
  d.resolution = c->resolution;
  d.modeled = c->modeled;
  return mi_sdk_fill(out, &d, sizeof d);
}

int32_t mi_sdk_counter_sample(const mi_plugin_ctx_t *ctx, uint32_t device, uint32_t index,
                              const void *out, mi_counter_sample_t *s, mi_error_t *err) {
  const mi_sdk_tables_t *t = NULL;
  int32_t st = checked(ctx, device, out, &t, err);
  if (st != MI_OK) return st;
  if (index >= t->counter_count)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: no counter %u (%u counters)",
                         pname(ctx), index, t->counter_count);
  memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  s->has_value = 1;
  return MI_OK;
}

int32_t mi_sdk_config_variant(const mi_plugin_ctx_t *ctx, uint32_t device,
                              const mi_sdk_tables_t *all, const char *variant_id,
                              const mi_knob_value_t *knobs, int32_t knob_count,
                              const mi_sdk_variant_t **v, mi_error_t *err) {
  int32_t st = mi_sdk_check_device(ctx, device, ctx, err);
  if (st != MI_OK) return st;
  if (knob_count > 0 && !knobs)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: check_config: knobs is NULL",
                         pname(ctx));
  if (!all) all = mi_sdk_tables(ctx, device);
  *v = NULL;
  /* No variant is "auto": the plugin picks the kernel and its knobs, so the host sends only
   * device-level knobs (an auto node of a search, a configuration naming model-side keys only).
   * Refusing it would make the host repair every auto node to an explicit variant. */
  if (!variant_id || !variant_id[0]) {
    for (int32_t i = 0; i < knob_count; i++) {
      int32_t k = mi_sdk_knob_index(all, knobs[i].name);
      if (k < 0)
        return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: unknown knob '%s'", pname(ctx),
                             knobs[i].name ? knobs[i].name : "(null)");
      if (all->knobs[k].type != MI_KNOB_FLOAT && !mi_sdk_knob_allows(&all->knobs[k], knobs[i].i))
        return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: knob %s=%lld is outside its domain",
                             pname(ctx), knobs[i].name, (long long)knobs[i].i);
    }
    return MI_OK;
  }
  if (!(*v = mi_sdk_variant_find(all, variant_id)))
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: unknown variant '%s'", pname(ctx),
                         variant_id);
  return MI_OK;
}

int32_t mi_sdk_kernel_variant(const mi_plugin_ctx_t *ctx, uint32_t device,
                              const mi_sdk_tables_t *all, const mi_kernel_desc_t *desc,
                              const mi_sdk_variant_t **v, mi_error_t *err) {
  int32_t st = mi_sdk_check_device(ctx, device, v, err);
  const char *op;
  if (st != MI_OK) return st;
  *v = NULL;
  if (!desc || desc->node_count < 1 || !desc->nodes || !desc->nodes[0] || !desc->nodes[0]->op_type)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s: kernel_prepare: no first node with an op type",
                         pname(ctx));
  if (!desc->variant_id || !desc->variant_id[0]) return MI_OK;
  op = desc->nodes[0]->op_type;
  if (!all) all = mi_sdk_tables(ctx, device);
  if (!(*v = mi_sdk_variant_find(all, desc->variant_id)))
    return mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: unknown variant '%s'", pname(ctx),
                         desc->variant_id);
  if (!(*v)->op_type || strcmp((*v)->op_type, op) != 0) {
    st = mi_sdk_errorf(err, MI_ERR_INVALID_CONFIG, "%s: variant %s implements %s, not %s", pname(ctx),
                       (*v)->id, (*v)->op_type ? (*v)->op_type : "nothing", op);
    *v = NULL;
    return st;
  }
  return MI_OK;
}
