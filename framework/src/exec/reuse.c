/* reuse.c - what a session prepared again for other shapes keeps from the one it replaces
 * (its donor): device kernels whose description did not change, folded constants of the same
 * constant inputs, and (nested branches) the captured weights' buffers. A decoding loop's
 * cache grows by one position per token; only the kernels that see that length are new. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

typedef mi__sigbuf_t sig_t;

static void put(sig_t *b, const void *v, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    uint8_t *g;
    while (cap < b->n + n) cap *= 2;
    if (!(g = realloc(b->p, cap))) {
      b->oom = 1;
      return;
    }
    b->p = g;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, v, n);
  b->n += n;
}

static void put_i64(sig_t *b, int64_t v) { put(b, &v, sizeof v); }

static void put_str(sig_t *b, const char *s) {
  size_t n = s ? strlen(s) + 1 : 0;
  put_i64(b, (int64_t)n);
  put(b, s, n);
}

static void put_knobs(sig_t *b, int32_t count, const mi_knob_value_t *k) {
  put_i64(b, count);
  for (int32_t i = 0; k && i < count; i++) {
    put_str(b, k[i].name);
    put_i64(b, k[i].i);
    put(b, &k[i].f, sizeof k[i].f);
  }
}

static void put_tensor(sig_t *b, const mi_tensor_desc_t *t) {
  put_i64(b, t->dtype);
  put_i64(b, t->layout);
  put_i64(b, t->block);
  put_i64(b, t->rank);
  for (int32_t d = 0; d < t->rank && d < MI_MAX_RANK; d++) put_i64(b, t->dims[d]);
  put(b, &t->scale, sizeof t->scale);
  put_i64(b, t->zero_point);
  put_i64(b, t->channel_axis);
  put_i64(b, t->channel_count);
  if (t->channel_scales) put(b, t->channel_scales, (size_t)t->channel_count * sizeof(float));
  put_i64(b, (int64_t)t->data_bytes);
  if (!t->data) {
    put_i64(b, 0);
  } else if (t->data_bytes <= MI__SIG_INLINE_BYTES) {
    put_i64(b, 1);
    put(b, t->data, (size_t)t->data_bytes);
  } else {
    uintptr_t a = (uintptr_t)t->data;
    put_i64(b, 2);
    put(b, &a, sizeof a);
  }
}

static void put_attr(sig_t *b, const mi_attr_t *a) {
  put_str(b, a->name);
  put_i64(b, a->type);
  put_i64(b, a->count);
  put_i64(b, a->i);
  put(b, &a->f, sizeof a->f);
  if (a->type == MI_ATTR_INTS && a->ints) put(b, a->ints, (size_t)a->count * sizeof *a->ints);
  if (a->type == MI_ATTR_FLOATS && a->floats)
    put(b, a->floats, (size_t)a->count * sizeof *a->floats);
  if (a->type == MI_ATTR_STRING) put_str(b, a->s);
}

/* FNV-1a over 8-byte words (the signatures carry small constants by value: bytes at a time
 * cost a rebuild about a millisecond), then the tail bytes. */
static uint64_t fnv(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int32_t mi__kernel_signature(const mi_kernel_desc_t *d, mi__sigbuf_t *buf, uint64_t *hash) {
  sig_t b = *buf; /* (stored back below, grown or not) */
  b.n = 0;
  b.oom = 0;
  put_str(&b, d->variant_id && d->variant_id[0] ? d->variant_id : NULL);
  put_knobs(&b, d->knob_count, d->knobs);
  put_i64(&b, d->node_count);
  for (int32_t i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    const mi_member_choice_t *m = d->member_choices ? d->member_choices[i] : NULL;
    put_str(&b, n->op_type);
    put_i64(&b, n->opset);
    put_i64(&b, n->input_count);
    put(&b, n->inputs, (size_t)n->input_count * sizeof *n->inputs);
    put_i64(&b, n->output_count);
    put(&b, n->outputs, (size_t)n->output_count * sizeof *n->outputs);
    put_i64(&b, n->attr_count);
    for (int32_t a = 0; a < n->attr_count; a++) put_attr(&b, &n->attrs[a]);
    put_i64(&b, m != NULL);
    if (m) {
      put_str(&b, m->variant_id && m->variant_id[0] ? m->variant_id : NULL);
      put_knobs(&b, m->knob_count, m->knobs);
    }
  }
  put_i64(&b, d->tensor_count);
  for (int32_t i = 0; i < d->tensor_count; i++) put_tensor(&b, d->tensors[i]);
  put_i64(&b, d->input_count);
  put(&b, d->inputs, (size_t)d->input_count * sizeof *d->inputs);
  put_i64(&b, d->output_count);
  put(&b, d->outputs, (size_t)d->output_count * sizeof *d->outputs);
  *buf = b;
  if (b.oom) return MI_ERR_OUT_OF_MEMORY;
  *hash = fnv(b.p, b.n);
  return MI_OK;
}

/* The donor's steps by signature hash, so each of a successor's kernels is one probe rather
 * than a scan of every step (a decoder's branch: 483 kernels asked of 483 steps per token). */
static int sig_index(mi_session_t *donor) {
  uint32_t cap = 16;
  if (donor->sig_slot) return 1;
  while (cap < (uint32_t)donor->step_count * 2u) cap *= 2;
  if (!(donor->sig_slot = malloc(cap * sizeof *donor->sig_slot))) return 0;
  memset(donor->sig_slot, 0xff, cap * sizeof *donor->sig_slot);
  donor->sig_mask = cap - 1;
  for (int32_t i = 0; i < donor->step_count; i++) {
    uint32_t h;
    if (!donor->steps[i].sig) continue;
    h = (uint32_t)donor->steps[i].sig_hash & donor->sig_mask;
    while (donor->sig_slot[h] >= 0) h = (h + 1) & donor->sig_mask;
    donor->sig_slot[h] = i;
  }
  return 1;
}

void mi__sig_index_free(mi_session_t *s) {
  free(s->sig_slot);
  s->sig_slot = NULL;
}

mi_kernel_t *mi__reuse_kernel(mi_session_t *donor, const uint8_t *sig, size_t len,
                              uint64_t hash, uint8_t **kept) {
  *kept = NULL;
  if (!donor) return NULL;
  if (sig_index(donor)) {
    /* Steps of the same signature (the same layer twice) come in step order along the probe
     * sequence, as the scan found them; a step whose kernel was taken is passed over. */
    for (uint32_t h = (uint32_t)hash & donor->sig_mask; donor->sig_slot[h] >= 0;
         h = (h + 1) & donor->sig_mask) {
      mi__step_t *st = &donor->steps[donor->sig_slot[h]];
      mi_kernel_t *k = st->kernel;
      if (!k || st->sig_hash != hash || st->sig_len != len || memcmp(st->sig, sig, len) != 0)
        continue;
      st->kernel = NULL; /* the donor's destroy no longer releases it, nor frees the same bytes */
      *kept = st->sig;
      st->sig = NULL;
      return k;
    }
    return NULL;
  }
  for (int32_t i = 0; i < donor->step_count; i++) { /* no memory for the index: scan */
    mi__step_t *st = &donor->steps[i];
    mi_kernel_t *k = st->kernel;
    if (!k || !st->sig || st->sig_hash != hash || st->sig_len != len ||
        memcmp(st->sig, sig, len) != 0)
      continue;
    st->kernel = NULL;
    *kept = st->sig;
    st->sig = NULL;
    return k;
  }
  return NULL;
}

struct mi__refusal {
  uint8_t *sig;
  size_t len;
  uint64_t hash;
  int32_t rc;
  char message[MI_ERROR_MESSAGE_SIZE];
};

int32_t mi__reuse_refusal(const mi_session_t *donor, const uint8_t *sig, size_t len,
                          uint64_t hash, mi_error_t *perr) {
  for (int32_t i = 0; donor && i < donor->refusal_count; i++) {
    const struct mi__refusal *r = &donor->refusals[i];
    if (r->hash != hash || r->len != len || memcmp(r->sig, sig, len) != 0) continue;
    return mi_errorf(perr, r->rc, "%s", r->message);
  }
  return 0;
}

int32_t mi__note_refusal(mi_session_t *s, uint8_t *sig, size_t len, uint64_t hash, int32_t rc,
                         const mi_error_t *perr) {
  struct mi__refusal *grown = realloc(s->refusals, (size_t)(s->refusal_count + 1) * sizeof *grown);
  if (!grown) {
    free(sig);
    return MI_ERR_OUT_OF_MEMORY;
  }
  s->refusals = grown;
  grown[s->refusal_count].sig = sig;
  grown[s->refusal_count].len = len;
  grown[s->refusal_count].hash = hash;
  grown[s->refusal_count].rc = rc;
  snprintf(grown[s->refusal_count].message, sizeof grown[0].message, "%s", perr->message);
  s->refusal_count++;
  return MI_OK;
}

void mi__refusals_free(mi_session_t *s) {
  for (int32_t i = 0; i < s->refusal_count; i++) free(s->refusals[i].sig);
  free(s->refusals);
  s->refusals = NULL;
  s->refusal_count = 0;
}

/* 1 when constant arrays a and b hold the same value: the same buffer, or small and equal. */
static int same_const(const mi_array_t *a, const mi_array_t *b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return 0;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return 0;
  if (a->data == b->data) return 1;
  return a->nbytes <= MI__SIG_INLINE_BYTES && memcmp(a->data, b->data, a->nbytes) == 0;
}

int mi__reuse_folded(mi_session_t *s, int32_t node, mi_array_t **outs) {
  const mi_session_t *d = s->donor;
  const mi_node_t *n = &s->g->nodes[node], *m;
  int found = -1;
  if (!d || !n->name || !n->name[0]) return 0;
  for (int32_t j = 0; j < n->input_count; j++)
    if (n->inputs[j] >= 0 && !s->consts[n->inputs[j]]) return 0;
  /* The donor ran the same graph for other shapes: the node sits at the same index, or (a
   * private copy that folded other nodes) is looked up by name. */
  if (node < d->g->node_count && d->g->nodes[node].name && strcmp(d->g->nodes[node].name, n->name) == 0)
    found = node;
  for (int32_t i = 0; found < 0 && i < d->g->node_count; i++)
    if (d->g->nodes[i].name && strcmp(d->g->nodes[i].name, n->name) == 0) found = i;
  if (found < 0) return 0;
  m = &d->g->nodes[found];
  if (strcmp(m->op_type, n->op_type) != 0 || m->input_count != n->input_count ||
      m->output_count != n->output_count || n->output_count > 16)
    return 0;
  for (int32_t j = 0; j < n->input_count; j++) {
    int32_t a = n->inputs[j], b = m->inputs[j];
    if ((a < 0) != (b < 0)) return 0;
    if (a >= 0 && !same_const(s->consts[a], d->consts[b])) return 0;
  }
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t b = m->outputs[j];
    if (b >= 0 && (!d->consts[b] || !d->const_owned[b])) return 0;
  }
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t b = m->outputs[j];
    outs[j] = b >= 0 ? d->consts[b] : NULL;
    if (b >= 0) d->consts[b] = NULL; /* moved: the donor's destroy skips it */
  }
  return 1;
}

/* Open-addressing table of a graph's tensor names. */
typedef struct names {
  int32_t *slot;
  uint32_t mask;
} names_t;

static uint64_t name_hash(const char *s) { return fnv((const uint8_t *)s, strlen(s)); }

static int names_build(names_t *t, const mi_graph_t *g) {
  uint32_t cap = 16;
  while (cap < (uint32_t)g->tensor_count * 2u) cap *= 2;
  if (!(t->slot = malloc(cap * sizeof *t->slot))) return 0;
  memset(t->slot, 0xff, cap * sizeof *t->slot);
  t->mask = cap - 1;
  for (int32_t i = 0; i < g->tensor_count; i++) {
    uint32_t h;
    if (!g->tensors[i].name) continue;
    h = (uint32_t)name_hash(g->tensors[i].name) & t->mask;
    while (t->slot[h] >= 0) h = (h + 1) & t->mask;
    t->slot[h] = i;
  }
  return 1;
}

static int32_t names_find(const names_t *t, const mi_graph_t *g, const char *name) {
  uint32_t h = (uint32_t)name_hash(name) & t->mask;
  /* (a branch's copies share the branch's name strings: the same pointer is the same name) */
  for (; t->slot[h] >= 0; h = (h + 1) & t->mask)
    if (g->tensors[t->slot[h]].name == name || strcmp(g->tensors[t->slot[h]].name, name) == 0) return t->slot[h];
  return -1;
}

struct mi__data_pool {
  mi_graph_t *old;
  names_t map;
};

mi__data_pool_t *mi__data_pool(mi_graph_t *old) {
  mi__data_pool_t *p;
  if (!old || !(p = malloc(sizeof *p))) return NULL;
  p->old = old;
  if (!names_build(&p->map, old)) {
    free(p);
    return NULL;
  }
  return p;
}

void *mi__data_pool_take(mi__data_pool_t *p, const mi_tensor_t *t) {
  mi_tensor_t *y;
  void *data;
  int32_t o;
  if (!p || !t->name || (o = names_find(&p->map, p->old, t->name)) < 0) return NULL;
  y = &p->old->tensors[o];
  if (!y->data || y->data_shared || y->nbytes != t->nbytes || y->dtype != t->dtype) return NULL;
  if (t->rank >= 0 && (y->rank != t->rank || memcmp(y->dims, t->dims, (size_t)t->rank * sizeof t->dims[0])))
    return NULL;
  data = y->data;
  y->data = NULL; /* the old graph's destroy no longer frees it */
  return data;
}

void mi__data_pool_free(mi__data_pool_t *p) {
  if (!p) return;
  free(p->map.slot);
  free(p);
}

int32_t mi__data_pool_folds(mi__data_pool_t *p, mi_graph_t *g, mi_error_t *err) {
  uint8_t *stable, *drop;
  int32_t count = 0, rc = MI_OK;
  if (!p) return MI_OK;
  stable = calloc((size_t)g->tensor_count + 1, 1);
  drop = calloc((size_t)g->node_count + 1, 1);
  if (!stable || !drop) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int32_t t = 0; t < g->tensor_count; t++) stable[t] = g->tensors[t].data != NULL;
  /* Topological order: a value computed from initializers alone is stable, whatever the
   * inputs' shapes; a shape query of an input is not. */
  for (int32_t i = 0; i < g->node_count; i++) {
    const mi_node_t *n = &g->nodes[i];
    int all = n->subgraph_count == 0 && n->output_count > 0, have = 1;
    for (int32_t j = 0; j < n->input_count && all; j++) all = n->inputs[j] < 0 || stable[n->inputs[j]];
    if (!all) continue;
    for (int32_t j = 0; j < n->output_count; j++)
      if (n->outputs[j] >= 0) stable[n->outputs[j]] = 1;
    /* The old graph folded it: its value moves here and the node goes, as folding does. */
    for (int32_t j = 0; j < n->output_count && have; j++) {
      mi_tensor_t *x = n->outputs[j] >= 0 ? &g->tensors[n->outputs[j]] : NULL;
      int32_t o = x && x->name && x->rank >= 0 ? names_find(&p->map, p->old, x->name) : -1;
      const mi_tensor_t *y = o >= 0 ? &p->old->tensors[o] : NULL;
      int ok;
      have = y && y->data && !y->data_shared && y->dtype == x->dtype && y->rank == x->rank &&
             !memcmp(y->dims, x->dims, (size_t)x->rank * sizeof x->dims[0]) &&
             y->nbytes == mi__tensor_bytes(x, &ok) && ok;
    }
    if (!have) continue;
    for (int32_t j = 0; j < n->output_count; j++) {
      mi_tensor_t *x;
      if (n->outputs[j] < 0) continue;
      int ok;
      x = &g->tensors[n->outputs[j]];
      x->nbytes = (size_t)mi__tensor_bytes(x, &ok);
      if (!(x->data = mi__data_pool_take(p, x))) {
        rc = mi_errorf(err, MI_ERR_INTERNAL, "folded value '%s' lost", x->name);
        goto done;
      }
      x->producer = -1;
    }
    drop[i] = 1;
    count++;
  }
  if (count) rc = mi_graph_remove_nodes(g, drop, err);
done:
  free(stable);
  free(drop);
  return rc;
}
