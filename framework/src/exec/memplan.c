/* memplan.c - the session's static device memory plan: tensor lifetimes over the step order,
 * then tensors whose lifetimes do not overlap share one device allocation (greedy by size,
 * best fit), so a run needs the memory of its widest point rather than of every tensor; the
 * inputs of an eliminated Concat are views of their slices of its buffer. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

/* A single Reshape, Flatten, Squeeze, Unsqueeze or Identity node between two plain (NCHW-stored)
 * tensors of the same dtype and bytes: the same bytes in the same order, so its output can be its
 * input's buffer instead of a copy (oww-hello-deepa's Flatten: 5% of the model as a copy). Each
 * tensor is written once per run, by the step that makes it, so the two never differ; the plan
 * gives both one lifetime (the union of theirs). */
static int aliasable(const mi_session_t *s, const mi__step_t *st) {
  static const char *const ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  const mi_tensor_t *x, *y;
  int ok = 0, okx, oky;
  size_t i;
  if (st->node_count != 1 || st->input_count < 1 || st->output_count != 1) return 0;
  for (i = 0; i < sizeof ops / sizeof ops[0]; i++) ok |= strcmp(s->g->nodes[st->node].op_type, ops[i]) == 0;
  x = &s->g->tensors[st->inputs[0]];
  y = &s->g->tensors[st->outputs[0]];
  if (!ok || x != &s->g->tensors[s->g->nodes[st->node].inputs[0]] || x->dtype != y->dtype ||
      s->dlayout[st->inputs[0]] != MI_LAYOUT_NCHW || s->dlayout[st->outputs[0]] != MI_LAYOUT_NCHW)
    return 0;
  return mi__stored_bytes(x, MI_LAYOUT_NCHW, 0, &okx) == mi__stored_bytes(y, MI_LAYOUT_NCHW, 0, &oky) && okx &&
         oky;
}

typedef struct plan_tmp {
  int32_t *root;         /* union-find over tensors that share bytes through alias steps */
  uint64_t *off;         /* per tensor: its byte offset in its root's (a Concat input's slice) */
  int32_t *first, *last; /* per root: steps that touch any of its tensors; -1 when none does */
  uint8_t *device;       /* per root: a device step touches it, so it needs a buffer */
  uint64_t *bytes;       /* per root: stored bytes */
  int32_t *slot;         /* per root: its allocation */
} plan_tmp_t;

static int32_t find(int32_t *root, int32_t t) {
  while (root[t] != t) t = root[t] = root[root[t]];
  return t;
}

static void touch(plan_tmp_t *m, int32_t t, int32_t step, int device) {
  if (t < 0) return;
  t = find(m->root, t);
  if (m->first[t] < 0 || step < m->first[t]) m->first[t] = step;
  if (step > m->last[t]) m->last[t] = step;
  m->device[t] |= (uint8_t)device;
}

/* Concat elimination (concat_alias.c): a Concat step whose output stacks its inputs, on a
 * device that gives views of buffers, runs as nothing when every runtime input can live in its
 * slice of the output: each made by a device step that is no alias (graph inputs are uploaded,
 * host results written, by whoever touches them first), in no other alias group (one tensor
 * cannot be two slices, nor a slice and a reshape's whole buffer), no graph output, listed once,
 * at an offset the device's views accept. The inputs join the output's root at their offsets,
 * so the root lives from the first input's producer to the output's last reader, and readers of
 * an input read its slice. */
static void concat_aliases(mi_session_t *s, plan_tmp_t *m) {
  const mi_graph_t *g = s->g;
  uint8_t *busy = calloc((size_t)g->tensor_count + 1, 1);
  uint64_t off[MI__CONCAT_MAX_INPUTS], align = 1;
  mi_device_desc_t dd;
  if (!busy || !s->plugin->api.buffer_view) {
    free(busy);
    return;
  }
  if (mi_plugin_device_info(s->plugin, s->device, &dd, NULL) == MI_OK && dd.buffer_alignment)
    align = dd.buffer_alignment;
  for (int32_t t = 0; t < g->tensor_count; t++) {
    int32_t r = find(m->root, t);
    if (r != t) busy[t] = busy[r] = 1;
  }
  for (int32_t i = 0; i < g->input_count; i++) busy[g->inputs[i]] = 1;
  for (int32_t i = 0; i < g->output_count; i++) busy[g->outputs[i]] = 1;
  for (int32_t t = 0; t < g->tensor_count; t++) busy[t] |= (uint8_t)(s->consts[t] != NULL);
  for (int32_t i = 0; i < s->step_count; i++) { /* made[] inverted: only device outputs stay free */
    const mi__step_t *st = &s->steps[i];
    if (st->kind == MI__STEP_HOST)
      for (int32_t j = 0; j < g->nodes[st->node].output_count; j++)
        if (g->nodes[st->node].outputs[j] >= 0) busy[g->nodes[st->node].outputs[j]] = 1;
    if (st->kind == MI__STEP_DEVICE && st->alias)
      for (int32_t j = 0; j < st->output_count; j++) busy[st->outputs[j]] = 1;
  }
  for (int32_t i = 0; i < s->step_count; i++) {
    mi__step_t *st = &s->steps[i];
    const mi_node_t *n = &g->nodes[st->node];
    int32_t y, ok = 1;
    if (st->alias || !mi__concat_stack(s, st, off)) continue;
    y = st->outputs[0];
    if (find(m->root, y) != y) continue;
    for (int32_t j = 0; ok && j < n->input_count; j++) {
      int32_t t = n->inputs[j];
      if (s->consts[t]) continue;
      ok = !busy[t] && off[j] % align == 0;
      for (int32_t k = 0; ok && k < j; k++) ok = n->inputs[k] != t;
    }
    if (!ok) continue;
    for (int32_t j = 0; j < n->input_count; j++) {
      int32_t t = n->inputs[j];
      if (s->consts[t]) continue;
      m->root[t] = y;
      m->off[t] = off[j];
      busy[t] = 1;
    }
    busy[y] = 1;
    st->alias = MI__ALIAS_CONCAT;
  }
  free(busy);
}

/* Lifetimes in step positions: a tensor lives from the first step that touches it (its producer,
 * or for a graph input its first reader, which uploads it) to the last that reads it, host steps
 * included (they download it). Graph outputs live to the end (the run downloads them last). A
 * step's inputs and outputs all live at that step, so no kernel gets one buffer twice. */
static void lifetimes(mi_session_t *s, plan_tmp_t *m) {
  const mi_graph_t *g = s->g;
  for (int32_t i = 0; i < s->step_count; i++) {
    mi__step_t *st = &s->steps[i];
    if (st->kind == MI__STEP_DEVICE && (st->alias = aliasable(s, st) ? MI__ALIAS_RESHAPE : 0))
      m->root[find(m->root, st->outputs[0])] = find(m->root, st->inputs[0]);
  }
  concat_aliases(s, m);
  for (int32_t i = 0; i < s->step_count; i++) {
    const mi__step_t *st = &s->steps[i];
    if (st->kind == MI__STEP_DEVICE) {
      for (int32_t j = 0; j < st->input_count; j++) touch(m, st->inputs[j], i, 1);
      for (int32_t j = 0; j < st->output_count; j++) touch(m, st->outputs[j], i, 1);
    } else if (st->kind == MI__STEP_HOST) {
      /* A node with subgraphs lists the outer values its branches capture among its inputs. */
      const mi_node_t *n = &g->nodes[st->node];
      for (int32_t j = 0; j < n->input_count; j++) touch(m, n->inputs[j], i, 0);
      for (int32_t j = 0; j < n->output_count; j++) touch(m, n->outputs[j], i, 0);
    }
  }
  for (int32_t i = 0; i < g->output_count; i++) touch(m, g->outputs[i], s->step_count, 0);
}

/* An NCHWc tensor whose channels do not fill the last block: the ABI promises its padding
 * channels read zero, and not every kernel writes them, so it keeps a zeroed buffer of its own. */
static int padded(const mi_session_t *s, int32_t t) {
  int ok;
  const mi_tensor_t *x = &s->g->tensors[t];
  return s->dlayout[t] == MI_LAYOUT_NCHWC &&
         mi__stored_bytes(x, MI_LAYOUT_NCHWC, s->dblock[t], &ok) != mi__tensor_bytes(x, &ok);
}

typedef struct root_key {
  uint64_t bytes;
  int32_t t;
} root_key_t;

/* The most bytes live at any one step: what a plan with offsets in one arena could reach at
 * best, the bound the plan's own figure is judged against. */
static void live_peak(mi_session_t *s, const plan_tmp_t *m, const root_key_t *keys, int32_t n) {
  int64_t *delta = calloc((size_t)s->step_count + 2, sizeof *delta), live = 0;
  if (!delta) return;
  for (int32_t k = 0; k < n; k++) {
    delta[m->first[keys[k].t]] += (int64_t)keys[k].bytes;
    delta[m->last[keys[k].t] + 1] -= (int64_t)keys[k].bytes;
  }
  for (int32_t i = 0; i <= s->step_count; i++)
    if ((live += delta[i]) > (int64_t)s->mem_live_peak) s->mem_live_peak = (uint64_t)live;
  free(delta);
}

static int by_bytes_desc(const void *a, const void *b) {
  const root_key_t *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  return x->t < y->t ? -1 : x->t > y->t; /* ties by index: the plan is reproducible */
}

/* A run's first device step (the one that uploads the inputs it reads) works before anything else
 * of the run: its inputs, written by the host's upload, and its outputs get allocations of their
 * own, up to MI__FIRST_OWN_MAX bytes each, rather than a share of one that later steps write. In
 * a shared allocation that step rewrites bytes the previous run's later steps wrote last (half of
 * them on the plugin's other threads, on a CPU device) and it runs alone: at 2 threads on the
 * 2-vCPU Zen 4, blazeface-front's first step (its 192 KiB input's upload and its NHWC -> NCHW
 * Transpose, on the calling thread) took 0.03-0.17 ms against 0.010-0.015 ms with allocations of
 * its own, and the whole run about as much longer (docs/benchmarks.md, 2026-12-04, "The run's
 * first step at 2 threads"). In its own allocation a tensor's bytes were last written by the same
 * step of the previous run. The cap keeps a large input's plan as it was (the cost is memory: the
 * plan's figure grows by these tensors' bytes at most). */
#define MI__FIRST_OWN_MAX ((uint64_t)1 << 20)

/* The index of the run's first device step, or step_count when there is none. */
static int32_t first_device_step(const mi_session_t *s) {
  int32_t f = 0;
  while (f < s->step_count && s->steps[f].kind != MI__STEP_DEVICE) f++;
  return f;
}

static int first_own(const mi_session_t *s, const plan_tmp_t *m, int32_t first_dev, int32_t t) {
  return first_dev < s->step_count && m->first[t] == first_dev && m->bytes[t] <= MI__FIRST_OWN_MAX;
}

/* Steps [first, last] of allocation a's bitmap: 1 when any is taken (set: marks them taken). */
static int span_taken(uint64_t *w, int32_t first, int32_t last, int set) {
  for (int32_t i = first; i <= last;) {
    int32_t word = i >> 6, lo = i & 63, hi = last - (i & ~63) < 63 ? last & 63 : 63;
    uint64_t mask = (hi == 63 ? ~(uint64_t)0 : (((uint64_t)1 << (hi + 1)) - 1)) & ~(((uint64_t)1 << lo) - 1);
    if (set) w[word] |= mask;
    else if (w[word] & mask)
      return 1;
    i = (word + 1) << 6;
  }
  return 0;
}

/* Greedy by size: the largest tensors first, each into the smallest allocation none of whose
 * tensors' lifetimes overlaps its own, else into a new one. Largest first means an allocation's
 * size is set by its first tensor and every later one fits. A padded tensor and one of the first
 * device step's (first_own) get an allocation no other tensor shares. Returns the allocation
 * count. An allocation's steps in use are a bitmap: a tensor fits where no bit of its lifetime
 * is set, the answer the walk of its tensors gives (a decoder's branch, planned again per token,
 * spent a fifth of its plan on those walks); without memory for the bitmaps the walks answer. */
static int32_t assign(const mi_session_t *s, plan_tmp_t *m, const int32_t *order, int32_t n,
                      int plan, uint64_t *size, uint8_t *priv, int32_t *head, int32_t *next) {
  int32_t count = 0, first_dev = first_device_step(s);
  size_t words = ((size_t)s->step_count + 1) / 64 + 1, cap = 64;
  uint64_t *busy = plan ? calloc(cap * words, sizeof *busy) : NULL;
  for (int32_t k = 0; k < n; k++) {
    int32_t t = order[k], best = -1;
    int pad = padded(s, t), own = pad || first_own(s, m, first_dev, t), shared = plan && !own;
    for (int32_t a = 0; shared && a < count; a++) {
      int free_span = !priv[a];
      if (free_span && busy) free_span = !span_taken(busy + (size_t)a * words, m->first[t], m->last[t], 0);
      for (int32_t u = head[a]; !busy && free_span && u >= 0; u = next[u])
        free_span = m->last[u] < m->first[t] || m->last[t] < m->first[u];
      if (free_span && (best < 0 || size[a] < size[best])) best = a;
    }
    if (best < 0 && busy && (size_t)count == cap) {
      uint64_t *grown = realloc(busy, 2 * cap * words * sizeof *busy);
      if (grown) {
        memset(grown + cap * words, 0, cap * words * sizeof *busy);
        cap *= 2;
      } else {
        free(busy);
      }
      busy = grown;
    }
    if (best < 0) {
      best = count++;
      size[best] = m->bytes[t];
      priv[best] = (uint8_t)(pad ? 2 : own); /* 2: zeroed once (padded) */
      head[best] = -1;
    }
    m->slot[t] = best;
    next[t] = head[best];
    head[best] = t;
    if (busy) span_taken(busy + (size_t)best * words, m->first[t], m->last[t], 1);
  }
  free(busy);
  return count;
}

static void tmp_free(plan_tmp_t *m) {
  free(m->root);
  free(m->off);
  free(m->first);
  free(m->last);
  free(m->device);
  free(m->bytes);
  free(m->slot);
}

/* Writes zeros over a private buffer: plugins need not zero what they allocate. */
static int32_t zero_fill(mi_session_t *s, mi_buffer_t *b, uint64_t bytes, mi_error_t *perr) {
  const mi_plugin_t *p = s->plugin;
  void *z = calloc(1, bytes ? bytes : 1);
  int32_t rc;
  if (!z) return mi_errorf(perr, MI_ERR_OUT_OF_MEMORY, "out of memory");
  rc = p->api.buffer_write(p->ctx, b, 0, z, bytes, perr);
  free(z);
  return rc;
}

static int32_t alloc_all(mi_session_t *s, plan_tmp_t *m, const int32_t *order, int32_t n,
                         const uint64_t *size, const uint8_t *priv, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  for (int32_t k = 0; k < n; k++) {
    int32_t t = order[k], a = m->slot[t];
    mi_error_t perr = {0};
    int32_t rc = MI_OK;
    uint64_t bytes = size[a];
    if (s->allocs[a]) continue; /* the largest tensor of a shared allocation made it */
    rc = p->api.buffer_alloc(p->ctx, s->device, bytes ? bytes : 1, &s->allocs[a], &perr);
    if (rc == MI_OK && !s->allocs[a]) rc = mi_errorf(&perr, MI_ERR_INTERNAL, "no buffer returned");
    if (rc == MI_OK && priv[a] == 2) rc = zero_fill(s, s->allocs[a], bytes, &perr);
    if (rc)
      return mi_errorf(err, rc, "tensor '%s': cannot allocate %llu device bytes: %s", s->g->tensors[t].name,
                       (unsigned long long)bytes, perr.message[0] ? perr.message : mi_status_message(rc));
    s->mem_planned += bytes;
  }
  return MI_OK;
}

/* Tensor t's buffer becomes the slice of its allocation from byte `off` (a Concat input);
 * one at offset 0 keeps the allocation itself, which the ABI lets be larger than the tensor. */
static int32_t view(mi_session_t *s, int32_t t, uint64_t off, mi_error_t *err) {
  const mi_plugin_t *p = s->plugin;
  mi_error_t perr = {0};
  mi_buffer_t *v = NULL;
  int32_t rc = p->api.buffer_view(p->ctx, s->bufs[t], off, s->buf_bytes[t], &v, &perr);
  if (rc == MI_OK && !v) rc = mi_errorf(&perr, MI_ERR_INTERNAL, "no view returned");
  if (rc)
    return mi_errorf(err, rc, "tensor '%s': cannot view %llu bytes at %llu of its Concat's buffer: %s",
                     s->g->tensors[t].name, (unsigned long long)s->buf_bytes[t], (unsigned long long)off,
                     perr.message[0] ? perr.message : mi_status_message(rc));
  s->bufs[t] = s->views[s->view_count++] = v;
  return MI_OK;
}

int32_t mi__memplan(mi_session_t *s, int plan, mi_error_t *err) {
  const mi_graph_t *g = s->g;
  int32_t nt = g->tensor_count, n = 0, rc = MI_OK;
  plan_tmp_t m;
  root_key_t *keys = malloc((size_t)nt * sizeof *keys + 1);
  int32_t *order = malloc((size_t)nt * sizeof *order + 1);
  int32_t *head = malloc((size_t)nt * sizeof *head + 1);
  int32_t *next = malloc((size_t)nt * sizeof *next + 1);
  uint64_t *size = calloc((size_t)nt + 1, sizeof *size);
  uint8_t *priv = calloc((size_t)nt + 1, 1);
  m.root = malloc((size_t)nt * sizeof *m.root + 1);
  m.off = calloc((size_t)nt + 1, sizeof *m.off);
  s->views = calloc((size_t)nt + 1, sizeof *s->views);
  m.first = malloc((size_t)nt * sizeof *m.first + 1);
  m.last = malloc((size_t)nt * sizeof *m.last + 1);
  m.device = calloc((size_t)nt + 1, 1);
  m.bytes = calloc((size_t)nt + 1, sizeof *m.bytes);
  m.slot = malloc((size_t)nt * sizeof *m.slot + 1);
  if (!keys || !order || !head || !next || !size || !priv || !m.root || !m.off || !s->views ||
      !m.first || !m.last || !m.device || !m.bytes || !m.slot) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory planning device memory");
    goto done;
  }
  for (int32_t t = 0; t < nt; t++) {
    m.root[t] = t;
    m.first[t] = m.last[t] = -1;
  }
  lifetimes(s, &m);
  for (int32_t t = 0; t < nt; t++) {
    int ok;
    if (find(m.root, t) != t || !m.device[t]) continue;
    m.bytes[t] = mi__stored_bytes(&g->tensors[t], s->dlayout[t], s->dblock[t], &ok);
    s->mem_unplanned += m.bytes[t];
    keys[n].bytes = m.bytes[t];
    keys[n++].t = t;
  }
  live_peak(s, &m, keys, n);
  qsort(keys, (size_t)n, sizeof *keys, by_bytes_desc);
  for (int32_t k = 0; k < n; k++) order[k] = keys[k].t;
  s->alloc_count = assign(s, &m, order, n, plan, size, priv, head, next);
  if (!(s->allocs = calloc((size_t)s->alloc_count + 1, sizeof *s->allocs))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory planning device memory");
    goto done;
  }
  if ((rc = alloc_all(s, &m, order, n, size, priv, err))) goto done;
  for (int32_t t = 0; t < nt; t++) {
    int32_t r = find(m.root, t);
    int ok;
    if (!m.device[r]) continue;
    s->bufs[t] = s->allocs[m.slot[r]];
    s->buf_bytes[t] = mi__stored_bytes(&g->tensors[t], s->dlayout[t], s->dblock[t], &ok);
    if (m.off[t] && (rc = view(s, t, m.off[t], err))) goto done;
  }
  for (int32_t t = 0; t < nt; t++) m.root[t] = find(m.root, t);
  rc = mi__direct_plan(s, m.root, m.off, err);
done:
  tmp_free(&m);
  free(keys);
  free(order);
  free(head);
  free(next);
  free(size);
  free(priv);
  return rc;
}

void mi__memplan_free(mi_session_t *s) {
  const mi_plugin_t *p = s->plugin;
  mi__direct_free(s);
  for (int32_t v = 0; s->views && v < s->view_count; v++) p->api.buffer_free(p->ctx, s->views[v]);
  free(s->views);
  s->views = NULL;
  s->view_count = 0;
  for (int32_t a = 0; s->allocs && a < s->alloc_count; a++)
    if (s->allocs[a]) p->api.buffer_free(p->ctx, s->allocs[a]);
  free(s->allocs);
  s->allocs = NULL;
  s->alloc_count = 0;
}
