/* cmd_plugins.c - `mi-host plugins`: what every loaded plugin offers, and what was refused. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mi_host.h"
#include "mi_host_names.h"

/* Everything one device describes, fetched through the checking wrappers. */
typedef struct device_view {
  mi_device_desc_t dev;
  mi_knob_desc_t *knobs;
  mi_variant_desc_t *variants;
  mi_counter_desc_t *counters;
  mi_constraint_desc_t *constraints;
  uint32_t nk, nv, nc, ncon;
} device_view_t;

static void view_free(device_view_t *v) {
  free(v->knobs);
  free(v->variants);
  free(v->counters);
  free(v->constraints);
  memset(v, 0, sizeof *v);
}

static int32_t view_load(const mi_plugin_t *p, uint32_t d, device_view_t *v, mi_error_t *err) {
  int32_t rc;
  memset(v, 0, sizeof *v);
  if ((rc = mi_plugin_device_info(p, d, &v->dev, err)) != MI_OK ||
      (rc = mi_plugin_knobs(p, d, &v->knobs, &v->nk, err)) != MI_OK ||
      (rc = mi_plugin_variants(p, d, &v->variants, &v->nv, err)) != MI_OK ||
      (rc = mi_plugin_counters(p, d, &v->counters, &v->nc, err)) != MI_OK ||
      (rc = mi_plugin_constraints(p, d, &v->constraints, &v->ncon, err)) != MI_OK)
    view_free(v);
  return rc;
}

/* ---------------------------------------------------------------- text */

static void text_mask(FILE *f, int which, uint32_t mask) {
  unsigned b;
  int first = 1;
  for (b = 0; b < 32; b++) {
    const char *n;
    if (!(mask & (1u << b))) continue;
    n = mi_name_mask_bit(which, b);
    if (n)
      fprintf(f, "%s%s", first ? "" : ",", n);
    else
      fprintf(f, "%sbit%u", first ? "" : ",", b);
    first = 0;
  }
  if (first) fputc('-', f);
}

static void text_domain(FILE *f, const mi_knob_desc_t *k) {
  uint32_t i;
  switch (k->type) {
  case MI_KNOB_INT:
    if (k->value_count) {
      fputc('{', f);
      for (i = 0; i < k->value_count; i++)
        fprintf(f, "%s%" PRId64, i ? "," : "", k->values[i]);
      fprintf(f, "} default %" PRId64, k->default_int);
    } else {
      fprintf(f, "[%" PRId64 "..%" PRId64 "] step %" PRId64 " default %" PRId64, k->min,
              k->max, k->step, k->default_int);
    }
    break;
  case MI_KNOB_FLOAT:
    fprintf(f, "[%g..%g] default %g", k->fmin, k->fmax, k->default_float);
    break;
  case MI_KNOB_BOOL:
    fprintf(f, "{0,1} default %" PRId64, k->default_int);
    break;
  default:
    fprintf(f, "{%s} default #%" PRId64, k->choices, k->default_int);
  }
}

static void text_device(FILE *f, uint32_t d, const device_view_t *v) {
  uint32_t i;
  fprintf(f, "  device %u: %s\n", d, v->dev.name);
  fprintf(f, "    kind %s, vendor '%s', driver '%s', isa '%s'\n",
          mi_name_device_kind(v->dev.kind), v->dev.vendor, v->dev.driver_version, v->dev.isa);
  fprintf(f, "    memory %" PRIu64 " bytes, %u compute units, max threads %u\n",
          v->dev.global_memory_bytes, v->dev.compute_units, v->dev.max_threads);
  fputs("    dtypes ", f);
  text_mask(f, MI_MASK_DTYPE, v->dev.dtype_mask);
  fputs(", layouts ", f);
  text_mask(f, MI_MASK_LAYOUT, v->dev.layout_mask);
  fputc('\n', f);
  fprintf(f, "    knobs (%u):\n", v->nk);
  for (i = 0; i < v->nk; i++) {
    const mi_knob_desc_t *k = &v->knobs[i];
    fprintf(f, "      %s: %s ", k->name, mi_name_knob_type(k->type));
    text_domain(f, k);
    fprintf(f, ", unit '%s', scope %s, set at %s\n", k->unit, mi_name_knob_scope(k->scope),
            mi_name_knob_mutability(k->mutability));
  }
  fprintf(f, "    variants (%u):\n", v->nv);
  for (i = 0; i < v->nv; i++) {
    const mi_variant_desc_t *x = &v->variants[i];
    fprintf(f, "      %s: op %s, dtypes ", x->id, x->op_type);
    text_mask(f, MI_MASK_DTYPE, x->dtype_mask);
    fputs(", fuses ", f);
    text_mask(f, MI_MASK_FUSE, x->fuse_mask);
    fprintf(f, ", knobs '%s'\n", x->knobs);
  }
  fprintf(f, "    counters (%u):\n", v->nc);
  for (i = 0; i < v->nc; i++) {
    const mi_counter_desc_t *c = &v->counters[i];
    fprintf(f, "      %s: %s, unit '%s', resolution %g, %s\n", c->name,
            mi_name_counter_kind(c->kind), c->unit, c->resolution,
            c->modeled ? "modeled" : "measured");
  }
  fprintf(f, "    constraints (%u):\n", v->ncon);
  for (i = 0; i < v->ncon; i++) {
    const mi_constraint_desc_t *c = &v->constraints[i];
    fprintf(f, "      %s(%s, %s, %" PRId64 ", %" PRId64 "): %s\n",
            mi_name_constraint_kind(c->kind), c->a, c->b, c->value, c->value2, c->reason);
  }
}

/* ---------------------------------------------------------------- JSON */

static void json_mask(FILE *f, int which, uint32_t mask) {
  unsigned b;
  int first = 1;
  fputc('[', f);
  for (b = 0; b < 32; b++) {
    char other[16];
    const char *n;
    if (!(mask & (1u << b))) continue;
    n = mi_name_mask_bit(which, b);
    if (!n) {
      snprintf(other, sizeof other, "bit%u", b);
      n = other;
    }
    if (!first) fputc(',', f);
    first = 0;
    mi_json_string(f, n);
  }
  fputc(']', f);
}

static void json_knob(FILE *f, const void *item) {
  const mi_knob_desc_t *k = item;
  int first = 1;
  uint32_t i;
  fputc('{', f);
  mi_json_key(f, &first, "name"), mi_json_string(f, k->name);
  mi_json_key(f, &first, "description"), mi_json_string(f, k->description);
  mi_json_key(f, &first, "type"), mi_json_string(f, mi_name_knob_type(k->type));
  mi_json_key(f, &first, "scope"), mi_json_string(f, mi_name_knob_scope(k->scope));
  mi_json_key(f, &first, "mutability"), mi_json_string(f, mi_name_knob_mutability(k->mutability));
  mi_json_key(f, &first, "unit"), mi_json_string(f, k->unit);
  mi_json_key(f, &first, "domain");
  fputc('{', f);
  if (k->type == MI_KNOB_INT && k->value_count) {
    fputs("\"values\":[", f);
    for (i = 0; i < k->value_count; i++) fprintf(f, "%s%" PRId64, i ? "," : "", k->values[i]);
    fputc(']', f);
  } else if (k->type == MI_KNOB_INT) {
    fprintf(f, "\"min\":%" PRId64 ",\"max\":%" PRId64 ",\"step\":%" PRId64, k->min, k->max,
            k->step);
  } else if (k->type == MI_KNOB_FLOAT) {
    fputs("\"min\":", f), mi_json_double(f, k->fmin);
    fputs(",\"max\":", f), mi_json_double(f, k->fmax);
  } else if (k->type == MI_KNOB_ENUM) {
    fputs("\"choices\":", f), mi_json_string(f, k->choices);
  } else {
    fputs("\"values\":[0,1]", f);
  }
  fputc('}', f);
  mi_json_key(f, &first, "default");
  if (k->type == MI_KNOB_FLOAT)
    mi_json_double(f, k->default_float);
  else
    fprintf(f, "%" PRId64, k->default_int);
  mi_json_key(f, &first, "applies_to"), mi_json_string(f, k->applies_to);
  fputc('}', f);
}

static void json_variant(FILE *f, const void *item) {
  const mi_variant_desc_t *x = item;
  int ef = 1;
  fputc('{', f);
  mi_json_key(f, &ef, "id"), mi_json_string(f, x->id);
  mi_json_key(f, &ef, "op_type"), mi_json_string(f, x->op_type);
  mi_json_key(f, &ef, "description"), mi_json_string(f, x->description);
  mi_json_key(f, &ef, "dtypes"), json_mask(f, MI_MASK_DTYPE, x->dtype_mask);
  mi_json_key(f, &ef, "layouts"), json_mask(f, MI_MASK_LAYOUT, x->layout_mask);
  mi_json_key(f, &ef, "fuse_mask"), fprintf(f, "%u", x->fuse_mask);
  mi_json_key(f, &ef, "fuses"), json_mask(f, MI_MASK_FUSE, x->fuse_mask);
  mi_json_key(f, &ef, "knobs"), mi_json_string(f, x->knobs);
  fputc('}', f);
}

static void json_counter(FILE *f, const void *item) {
  const mi_counter_desc_t *c = item;
  int ef = 1;
  fputc('{', f);
  mi_json_key(f, &ef, "name"), mi_json_string(f, c->name);
  mi_json_key(f, &ef, "kind"), mi_json_string(f, mi_name_counter_kind(c->kind));
  mi_json_key(f, &ef, "unit"), mi_json_string(f, c->unit);
  mi_json_key(f, &ef, "resolution"), mi_json_double(f, c->resolution);
  mi_json_key(f, &ef, "modeled"), fputs(c->modeled ? "true" : "false", f);
  fputc('}', f);
}

static void json_constraint(FILE *f, const void *item) {
  const mi_constraint_desc_t *c = item;
  int ef = 1;
  fputc('{', f);
  mi_json_key(f, &ef, "kind"), mi_json_string(f, mi_name_constraint_kind(c->kind));
  mi_json_key(f, &ef, "a"), mi_json_string(f, c->a);
  mi_json_key(f, &ef, "b"), mi_json_string(f, c->b);
  mi_json_key(f, &ef, "value"), fprintf(f, "%" PRId64, c->value);
  mi_json_key(f, &ef, "value2"), fprintf(f, "%" PRId64, c->value2);
  mi_json_key(f, &ef, "applies_to"), mi_json_string(f, c->applies_to);
  mi_json_key(f, &ef, "reason"), mi_json_string(f, c->reason);
  fputc('}', f);
}

/* `"key":[...]`: the n descriptions of `size` bytes at `items`, each written by `write`. */
static void json_list(FILE *f, int *first, const char *key, const void *items, size_t size,
                      uint32_t n, void (*write)(FILE *, const void *)) {
  mi_json_key(f, first, key), fputc('[', f);
  for (uint32_t i = 0; i < n; i++) {
    if (i) fputc(',', f);
    write(f, (const char *)items + (size_t)i * size);
  }
  fputc(']', f);
}

static void json_device(FILE *f, uint32_t d, const device_view_t *v) {
  int first = 1;
  fputc('{', f);
  mi_json_key(f, &first, "index"), fprintf(f, "%u", d);
  mi_json_key(f, &first, "name"), mi_json_string(f, v->dev.name);
  mi_json_key(f, &first, "kind"), mi_json_string(f, mi_name_device_kind(v->dev.kind));
  mi_json_key(f, &first, "vendor"), mi_json_string(f, v->dev.vendor);
  mi_json_key(f, &first, "driver_version"), mi_json_string(f, v->dev.driver_version);
  mi_json_key(f, &first, "isa"), mi_json_string(f, v->dev.isa);
  mi_json_key(f, &first, "global_memory_bytes"), fprintf(f, "%" PRIu64, v->dev.global_memory_bytes);
  mi_json_key(f, &first, "compute_units"), fprintf(f, "%u", v->dev.compute_units);
  mi_json_key(f, &first, "max_threads"), fprintf(f, "%u", v->dev.max_threads);
  mi_json_key(f, &first, "dtypes"), json_mask(f, MI_MASK_DTYPE, v->dev.dtype_mask);
  mi_json_key(f, &first, "layouts"), json_mask(f, MI_MASK_LAYOUT, v->dev.layout_mask);
  json_list(f, &first, "knobs", v->knobs, sizeof *v->knobs, v->nk, json_knob);
  json_list(f, &first, "variants", v->variants, sizeof *v->variants, v->nv, json_variant);
  json_list(f, &first, "counters", v->counters, sizeof *v->counters, v->nc, json_counter);
  json_list(f, &first, "constraints", v->constraints, sizeof *v->constraints, v->ncon,
            json_constraint);
  fputc('}', f);
}

/* ---------------------------------------------------------------- the command */

static int list(mi_registry_t *r, int json, FILE *f) {
  int32_t i, n = mi_registry_plugin_count(r), nr = mi_registry_rejected_count(r);
  int rc = MI_HOST_OK, first;
  uint32_t d;
  if (json) fputs("{\"plugins\":[", f);
  if (!json && n == 0) fputs("no plugins loaded\n", f);
  for (i = 0; i < n; i++) {
    const mi_plugin_t *p = mi_registry_plugin(r, i);
    if (json) {
      first = 1;
      fputs(i ? ",{" : "{", f);
      mi_json_key(f, &first, "name"), mi_json_string(f, p->name);
      mi_json_key(f, &first, "version"), mi_json_string(f, p->version);
      mi_json_key(f, &first, "abi"), fprintf(f, "\"%u.%u\"", p->abi_major, p->abi_minor);
      mi_json_key(f, &first, "table_size"), fprintf(f, "%u", p->declared_size);
      mi_json_key(f, &first, "path"), mi_json_string(f, p->path);
      mi_json_key(f, &first, "manifest"), mi_json_string(f, p->manifest);
      mi_json_key(f, &first, "devices"), fputc('[', f);
    } else {
      fprintf(f, "plugin %s %s (ABI %u.%u, table %u bytes)\n  path %s\n", p->name, p->version,
              p->abi_major, p->abi_minor, p->declared_size, p->path);
    }
    for (d = 0; d < p->device_count; d++) {
      device_view_t v;
      mi_error_t err;
      mi_error_clear(&err);
      if (view_load(p, d, &v, &err) != MI_OK) {
        fprintf(stderr, "mi-host: %s\n", err.message);
        rc = MI_HOST_FAIL;
        continue;
      }
      if (json) {
        if (d) fputc(',', f);
        json_device(f, d, &v);
      } else {
        text_device(f, d, &v);
      }
      view_free(&v);
    }
    if (json) fputs("]}", f);
  }
  if (json) fputs("],\"rejected\":[", f);
  if (!json && nr) fprintf(f, "rejected (%d):\n", nr);
  for (i = 0; i < nr; i++) {
    const char *path = NULL, *why = mi_registry_rejected(r, i, &path);
    if (json) {
      first = 1;
      fputs(i ? ",{" : "{", f);
      mi_json_key(f, &first, "path"), mi_json_string(f, path);
      mi_json_key(f, &first, "reason"), mi_json_string(f, why);
      fputc('}', f);
    } else {
      fprintf(f, "  %s: %s\n", path, why);
    }
  }
  if (json) fputs("]}\n", f);
  return rc;
}

static const mi_cli_opt_t k_opts[] = {
    {"json", 'j', NULL, "print one JSON object instead of text"},
    {NULL, 0, NULL, NULL},
};

int mi_host_cmd_plugins(mi_host_t *h, int argc, char **argv) {
  mi_registry_t *r;
  mi_cli_t c;
  int st;
  mi_host_cli_begin(h, &c, "plugins", k_opts,
                    "Lists each loaded plugin with its devices, knobs, variants, counters and\n"
                    "constraints, then the plugins that were refused and why.",
                    argc, argv);
  while (mi_host_cli_next(&c, &st)) h->json = 1; /* --json, the only option */
  if (st != MI_HOST_OK) return st == MI_HOST_DONE ? MI_HOST_OK : st;
  /* Listed from descriptions read in a sacrificial worker per plugin: a plugin that crashes
   * or hangs in create or a description query is listed as refused, and none of its code runs
   * here (docs/security.md). */
  h->described_only = 1;
  r = mi_host_registry(h);
  if (!r) return MI_HOST_FAIL;
  return list(r, h->json, stdout);
}
