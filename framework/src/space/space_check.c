/* space_check.c - declared constraints and check_config on a point, repair, session options. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

/* The variant a node slot chose (global variant index), MI__VARIANT_AUTO when the plugin picks. */
static int32_t chosen_variant(const mi_space_t *s, const int32_t *pt, int32_t slot) {
  const mi__node_t *ns = &s->nodes[slot];
  return (int32_t)s->dims[ns->variant_dim].ivals[pt[ns->variant_dim]];
}

/* The dimension that sets `knob` for node slot `slot` (-1 = device level), or -1 when the knob
 * takes its default there. */
static int32_t knob_dim(const mi_space_t *s, const int32_t *pt, int32_t slot, uint32_t knob) {
  if (s->knobs[knob].scope == MI_KNOB_SCOPE_DEVICE) return s->device_dim[knob];
  if (slot < 0) return -1;
  for (int32_t d = s->nodes[slot].first_dim; d < s->nodes[slot].end_dim; d++)
    if (s->dims[d].kind == MI_DIM_KNOB && s->dims[d].knob == (int32_t)knob)
      return mi_space_active(s, pt, d) ? d : -1;
  return -1;
}

/* The value knob `knob` takes at point pt for node slot (-1: a device knob); the dimension's
 * index, or -1 when the knob is not active there (out then holds its default). */
static int32_t knob_value(const mi_space_t *s, const int32_t *pt, int32_t slot, uint32_t knob,
                          mi_knob_value_t *out) {
  const mi_knob_desc_t *k = &s->knobs[knob];
  int32_t d = knob_dim(s, pt, slot, knob);
  out->name = k->name;
  if (d >= 0) {
    out->i = s->dims[d].ivals[pt[d]];
    out->f = s->dims[d].fvals[pt[d]];
  } else {
    out->i = k->default_int;
    out->f = k->default_float;
  }
  return d;
}

static int32_t find_knob(const mi_space_t *s, const char *name) {
  for (uint32_t k = 0; k < s->knob_count; k++)
    if (!strcmp(s->knobs[k].name, name)) return (int32_t)k;
  return -1;
}

static int64_t knob_int(const mi_space_t *s, const int32_t *pt, int32_t slot, int32_t knob) {
  mi_knob_value_t v;
  knob_value(s, pt, slot, (uint32_t)knob, &v);
  if (s->knobs[knob].type != MI_KNOB_FLOAT) return v.i;
  /* a float knob may span all doubles; converting one beyond int64 would be undefined */
  if (!(v.f > -0x1p63)) return INT64_MIN;
  return v.f < 0x1p63 ? (int64_t)v.f : INT64_MAX;
}

/* Whether constraint `c` is checked at node slot `slot` (-1: the device-level pass, which
 * checks the rules whose knobs are all device-scope). */
static int applies(const mi_space_t *s, const int32_t *pt, int32_t slot,
                   const mi_constraint_desc_t *c) {
  int32_t a = find_knob(s, c->a), b = c->b[0] ? find_knob(s, c->b) : -1;
  if (c->kind == MI_CONSTRAINT_CUSTOM || a < 0 || (c->b[0] && b < 0)) return 0;
  if (slot < 0)
    return s->knobs[a].scope == MI_KNOB_SCOPE_DEVICE &&
           (b < 0 || s->knobs[b].scope == MI_KNOB_SCOPE_DEVICE);
  /* With auto the plugin picks the variant and its knobs: only its check_config can judge. */
  if (chosen_variant(s, pt, slot) == MI__VARIANT_AUTO) return 0;
  if (c->applies_to[0] && !mi__list_has(c->applies_to, s->variants[chosen_variant(s, pt, slot)].id))
    return 0;
  return 1;
}

/* The same semantics as mi-conform (docs/conformance.md, rule R5). */
static int holds(const mi_space_t *s, const int32_t *pt, int32_t slot,
                 const mi_constraint_desc_t *c) {
  int32_t ka = find_knob(s, c->a), kb = c->b[0] ? find_knob(s, c->b) : -1;
  int64_t a = knob_int(s, pt, slot, ka), b = kb >= 0 ? knob_int(s, pt, slot, kb) : 0;
  switch (c->kind) {
  case MI_CONSTRAINT_DIVIDES: {
    int64_t rhs = kb >= 0 ? b : c->value;
    return a != 0 && (a == -1 || rhs % a == 0); /* INT64_MIN % -1 overflows */
  }
  case MI_CONSTRAINT_LESS_EQUAL: return a <= (kb >= 0 ? b : c->value);
  case MI_CONSTRAINT_PRODUCT_LE: {
    int64_t p;
    /* a product beyond int64 is below any bound when negative, above it when positive */
    if (__builtin_mul_overflow(a, kb >= 0 ? b : 1, &p)) return (a < 0) != (b < 0);
    return p <= c->value;
  }
  case MI_CONSTRAINT_IMPLIES: return a != c->value || b == c->value2;
  default: return 1;
  }
}

static const char *slot_name(const mi_space_t *s, int32_t slot) {
  const char *n = slot >= 0 ? s->g->nodes[s->nodes[slot].node].name : "device";
  return n && n[0] ? n : "?";
}

/* Calls check_config for one node with the device knobs and the knobs its variant reads. */
static int32_t plugin_check(const mi_space_t *s, const int32_t *pt, int32_t slot,
                            mi_error_t *err) {
  mi_knob_value_t vals[64];
  int32_t n = 0, rc;
  mi_error_t perr;
  int32_t v = slot >= 0 ? chosen_variant(s, pt, slot) : MI__VARIANT_AUTO;
  const char *vid = v != MI__VARIANT_AUTO ? s->variants[v].id : NULL;
  if (!s->plugin->api.check_config) return MI_OK;
  for (uint32_t k = 0; k < s->knob_count && n < 64; k++) {
    mi_knob_value_t v;
    if (knob_value(s, pt, slot, k, &v) >= 0) vals[n++] = v;
  }
  mi_error_clear(&perr);
  rc = mi__space_ask_check(s, vid, vals, n, &perr);
  perr.message[sizeof perr.message - 1] = '\0';
  if (rc == MI_OK) return MI_OK;
  return mi_errorf(err, MI_ERR_INVALID_CONFIG, "node %s (%s): %s", slot_name(s, slot),
                   vid ? vid : MI_SPACE_VARIANT_AUTO, perr.message);
}

/* Every rule at one slot: declared constraints, then check_config. */
static int32_t check_slot(const mi_space_t *s, const int32_t *pt, int32_t slot, mi_error_t *err) {
  for (uint32_t c = 0; c < s->con_count; c++)
    if (applies(s, pt, slot, &s->cons[c]) && !holds(s, pt, slot, &s->cons[c]))
      return mi_errorf(err, MI_ERR_INVALID_CONFIG, "node %s: %s", slot_name(s, slot),
                       s->cons[c].reason[0] ? s->cons[c].reason : "a declared constraint is broken");
  if (slot >= 0 || s->node_count == 0) return plugin_check(s, pt, slot, err);
  return MI_OK;
}

int32_t mi_space_check(const mi_space_t *s, const int32_t *pt, mi_error_t *err) {
  int32_t rc;
  if (!s || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  if ((rc = check_slot(s, pt, -1, err)) != MI_OK) return rc;
  for (int32_t slot = 0; slot < s->node_count; slot++)
    if ((rc = check_slot(s, pt, slot, err)) != MI_OK) return rc;
  return MI_OK;
}

/* Value indices of dimension d ordered by distance from the current one (numeric distance for
 * knobs, index distance otherwise), the current one excluded. */
static int32_t nearest_order(const mi__dim_t *d, int32_t cur, int32_t *order) {
  int32_t n = 0;
  for (int32_t v = 0; v < d->count; v++)
    if (v != cur) order[n++] = v;
  for (int32_t i = 1; i < n; i++) {
    int32_t x = order[i], j = i;
    double dx = d->kind == MI_DIM_KNOB ? fabs((double)d->ivals[x] - (double)d->ivals[cur]) +
                                             (d->fvals[x] - d->fvals[cur]) * (d->fvals[x] - d->fvals[cur])
                                       : (double)abs(x - cur);
    while (j > 0) {
      int32_t y = order[j - 1];
      double dy = d->kind == MI_DIM_KNOB ? fabs((double)d->ivals[y] - (double)d->ivals[cur]) +
                                               (d->fvals[y] - d->fvals[cur]) * (d->fvals[y] - d->fvals[cur])
                                         : (double)abs(y - cur);
      if (dy <= dx) break;
      order[j] = y;
      j--;
    }
    order[j] = x;
  }
  return n;
}

/* Tries the values of dimension d nearest first until check_slot passes at `slot`. */
static int try_dim(const mi_space_t *s, int32_t *pt, int32_t slot, int32_t d) {
  int32_t order[MI_KNOB_MAX_VALUES * 8 + 64], n, cur;
  if (d < 0 || s->dims[d].count > (int32_t)(sizeof order / sizeof order[0])) return 0; /* knob not in the point */
  cur = pt[d];
  n = nearest_order(&s->dims[d], cur, order);
  for (int32_t i = 0; i < n; i++) {
    pt[d] = order[i];
    mi__space_normalize(s, pt);
    if (check_slot(s, pt, slot, NULL) == MI_OK) return 1;
  }
  pt[d] = cur;
  return 0;
}

/* Repairs one slot: the offending knobs first (node-level before device-level), then the
 * node's other knobs, then its variant. Returns 1 when a move made it pass. */
static int repair_slot(const mi_space_t *s, int32_t *pt, int32_t slot) {
  int32_t saved_variant = slot >= 0 ? pt[s->nodes[slot].variant_dim] : 0;
  for (uint32_t c = 0; c < s->con_count; c++) {
    const mi_constraint_desc_t *con = &s->cons[c];
    int32_t ka, kb;
    if (!applies(s, pt, slot, con) || holds(s, pt, slot, con)) continue;
    ka = find_knob(s, con->a);
    kb = con->b[0] ? find_knob(s, con->b) : -1;
    if (try_dim(s, pt, slot, knob_dim(s, pt, slot, (uint32_t)ka))) return 1;
    if (kb >= 0 && try_dim(s, pt, slot, knob_dim(s, pt, slot, (uint32_t)kb))) return 1;
  }
  if (slot >= 0) {
    for (int32_t d = s->nodes[slot].first_dim; d < s->nodes[slot].end_dim; d++)
      if (s->dims[d].kind == MI_DIM_KNOB && mi_space_active(s, pt, d) && try_dim(s, pt, slot, d))
        return 1;
    /* Another variant, with its knobs at their defaults. */
    if (try_dim(s, pt, slot, s->nodes[slot].variant_dim)) return 1;
    pt[s->nodes[slot].variant_dim] = saved_variant;
  }
  for (uint32_t k = 0; k < s->knob_count; k++)
    if (s->device_dim[k] >= 0 && try_dim(s, pt, slot, s->device_dim[k])) return 1;
  return 0;
}

int32_t mi_space_repair(const mi_space_t *s, int32_t *pt, int32_t *changed, mi_error_t *err) {
  int32_t moves = 0;
  if (changed) *changed = 0;
  if (!s || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  mi__space_normalize(s, pt);
  /* A device-level move can break a node fixed earlier: a few rounds settle it. */
  for (int round = 0; round < 8; round++) {
    int32_t before = moves;
    for (int32_t slot = -1; slot < s->node_count; slot++) {
      if (check_slot(s, pt, slot, NULL) == MI_OK) continue;
      if (repair_slot(s, pt, slot)) moves++;
    }
    if (moves == before) break;
  }
  if (changed) *changed = moves;
  return mi_space_check(s, pt, err);
}

/* ---------------------------------------------------------------- session options */

struct mi_space_hw {
  mi_session_options_t opts;
  mi_knob_value_t *device_knobs;
  mi_node_choice_t *choices;
  mi_knob_value_t *node_knobs;
};

int32_t mi_space_hw_create(const mi_space_t *s, const int32_t *pt, mi_space_hw_t **out,
                           mi_error_t *err) {
  mi_space_hw_t *hw;
  int32_t nk = 0, nd = 0;
  if (out) *out = NULL;
  if (!s || !pt || !out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  hw = calloc(1, sizeof *hw);
  if (!hw) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  hw->device_knobs = calloc(s->knob_count + 1, sizeof *hw->device_knobs);
  hw->choices = calloc((size_t)s->node_count + 1, sizeof *hw->choices);
  hw->node_knobs = calloc((size_t)s->dim_count + 1, sizeof *hw->node_knobs);
  if (!hw->device_knobs || !hw->choices || !hw->node_knobs) {
    mi_space_hw_destroy(hw);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  }
  for (uint32_t k = 0; k < s->knob_count; k++)
    if (s->device_dim[k] >= 0) knob_value(s, pt, -1, k, &hw->device_knobs[nd++]);
  for (int32_t slot = 0; slot < s->node_count; slot++) {
    mi_node_choice_t *c = &hw->choices[slot];
    const mi__node_t *ns = &s->nodes[slot];
    c->node = s->g->nodes[ns->node].name;
    int32_t v = chosen_variant(s, pt, slot);
    c->variant_id = v != MI__VARIANT_AUTO ? s->variants[v].id : NULL; /* auto: as mi-run */
    c->knobs = &hw->node_knobs[nk];
    for (int32_t d = ns->first_dim; d < ns->end_dim; d++) {
      if (s->dims[d].kind != MI_DIM_KNOB || !mi_space_active(s, pt, d)) continue;
      knob_value(s, pt, slot, (uint32_t)s->dims[d].knob, &hw->node_knobs[nk++]);
      c->knob_count++;
    }
  }
  hw->opts.struct_size = sizeof hw->opts;
  hw->opts.device_knob_count = nd;
  hw->opts.device_knobs = hw->device_knobs;
  hw->opts.choice_count = s->node_count;
  hw->opts.choices = hw->choices;
  hw->opts.allow_host_fallback = 1;
  *out = hw;
  return MI_OK;
}

const mi_session_options_t *mi_space_hw_options(const mi_space_hw_t *hw) {
  return hw ? &hw->opts : NULL;
}

void mi_space_hw_destroy(mi_space_hw_t *hw) {
  if (!hw) return;
  free(hw->device_knobs);
  free(hw->choices);
  free(hw->node_knobs);
  free(hw);
}
