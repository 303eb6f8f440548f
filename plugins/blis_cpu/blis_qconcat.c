/* blis_qconcat.c - Concat -> DynamicQuantizeLinear as one step: the range from the inputs, the codes straight from them
 * (and from the rows of the Resizes that alone feed it). */
#include <string.h>

#include "blis_qgemm.h"

/* The concatenation's range is the union of its inputs' ranges and each code depends on one value,
 * so the codes come from the inputs, slab by slab, without the float concatenation in between:
 * a U-Net decoder's Concat + DynamicQuantizeLinear read and wrote the floats once more for the
 * copy and read them twice after it (the quantized IS-Net's largest step pair, 1x128x512x512).
 * The floats are still written where another node reads them. Same arithmetic as the unfused
 * ops, so the codes, scale and zero point are the reference's bit for bit. */
typedef struct qconcat {
  int32_t simd, count, y, ys, yz, yf; /* yf: the float concatenation, -1 when no one reads it */
  int64_t outer, inner_y;
  int32_t in[32];
  int64_t inner[32];
  /* An input no step writes: the Resize step whose rows it is (mi__blis_resize_rows), computed
   * here twice, for the range and for the codes, a few rows at a time in L1, where its plane had
   * been written and read twice (a decoder's 2x upsample is 4x its input) */
  const mi__blis_step_t *rz[32];
  int64_t len[32]; /* floats of one of its rows */
} qconcat_t;

#define QC_ROWS 4096 /* Resize row floats computed at once (16 KiB, in L1); no row is longer */

/* Rows of input i of a Concat -> DynamicQuantizeLinear from its Resize: their range merged into
 * rg (codes NULL), or their codes into the concatenation's codes at column off of each block. */
typedef struct qc_rows {
  const qconcat_t *c;
  void *const *t;
  int32_t i;
  mi__blis_range_t rg;
  uint8_t *codes;
  int64_t off;
  float scale;
  int32_t zp;
} qc_rows_t;

static void rows_part(void *arg, int64_t b, int64_t e) {
  qc_rows_t *k = arg;
  const qconcat_t *c = k->c;
  int64_t len = c->len[k->i], per = QC_ROWS / len, rpo = c->inner[k->i] / len, r, j, n;
  float buf[QC_ROWS], lo = 0.f, hi = 0.f;
  if (!k->codes) { /* the range alone: the rows' values go to min and max unwritten */
    mi__blis_resize_rows_range(c->rz[k->i], k->t, b, e, &lo, &hi);
    mi__blis_range_merge(&k->rg, lo, hi);
    return;
  }
  for (r = b; r < e; r += n) {
    n = e - r < per ? e - r : per;
    mi__blis_resize_rows(c->rz[k->i], k->t, r, r + n, buf);
    for (j = 0; j < n; j++) /* row r + j of block (r + j) / rpo */
      mi__blis_dynq_row(c->simd, buf + j * len, k->codes + (r + j) / rpo * c->inner_y + k->off + (r + j) % rpo * len,
                        len, k->scale, k->zp);
  }
}

/* Input i's rows through rows_part across the threads. */
static void resize_rows(const mi__blis_env_t *env, qc_rows_t *k) {
  int64_t len = k->c->len[k->i];
  mi__blis_parallel(env, k->c->outer * k->c->inner[k->i] / len, QC_ROWS / len, 8 * len, rows_part, k);
}

static int32_t run_qconcat(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const qconcat_t *c = s->state;
  float lo = 0.f, hi = 0.f, scale;
  int32_t i, zp;
  int64_t off = 0, o;
  (void)err;
  /* an input whose producer found its range while writing it is read once, for its codes */
  for (i = 0; i < c->count; i++) {
    qc_rows_t k = {.c = c, .t = t, .i = i};
    const mi__blis_range_t *rg = NULL;
    float l, h;
    if (c->rz[i]) { /* a Resize's rows, computed for their range */
      mi__blis_range_reset(&k.rg);
      resize_rows(env, &k);
      rg = &k.rg;
    } else if (env->range && env->range[c->in[i]].known) {
      rg = &env->range[c->in[i]];
      atomic_fetch_add(env->range_used, 1);
    }
    if (!rg) {
      mi__blis_dynq_range(env, c->simd, t[c->in[i]], c->outer * c->inner[i], &lo, &hi);
      continue;
    }
    mi__blis_range_get(rg, &l, &h);
    lo = l < lo ? l : lo;
    hi = h > hi ? h : hi;
  }
  mi__blis_dynq_outputs(t, c->ys, c->yz, lo, hi, &scale, &zp);
  for (i = 0; i < c->count; i++) {
    const float *x = t[c->in[i]];
    if (c->rz[i]) {
      qc_rows_t k = {.c = c, .t = t, .i = i, .codes = t[c->y], .off = off, .scale = scale, .zp = zp};
      resize_rows(env, &k);
      off += c->inner[i];
      continue;
    }
    mi__blis_dynq_blocks(env, c->simd, x, c->outer, c->inner[i], (uint8_t *)t[c->y] + off, c->inner_y, scale, zp);
    if (c->yf >= 0)
      for (o = 0; o < c->outer; o++)
        memcpy((float *)t[c->yf] + o * c->inner_y + off, x + o * c->inner[i], (size_t)c->inner[i] * sizeof(float));
    off += c->inner[i];
  }
  return MI_OK;
}

int mi__blis_prep_qconcat(mi__blis_prep_t *p, mi__blis_step_t *s, int64_t outer, int32_t count, const int32_t *in,
                          const int64_t *inner, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0), *m = mi__blis_node(p, 1);
  int32_t cat = mi__blis_out(n, 0), i;
  const mi_tensor_desc_t *y, *ys, *yz;
  const mi__blis_step_t *rz[32] = {0};
  int64_t len[32] = {0};
  qconcat_t *c;
  if (!m || strcmp(m->op_type, "DynamicQuantizeLinear") || m->input_count != 1 || m->inputs[0] != cat ||
      m->output_count != 3)
    return 0;
  y = mi__blis_tensor(p, mi__blis_out(m, 0));
  ys = mi__blis_tensor(p, mi__blis_out(m, 1));
  yz = mi__blis_tensor(p, mi__blis_out(m, 2));
  if (!y || !ys || !yz || y->dtype != MI_DTYPE_UINT8 || ys->dtype != MI_DTYPE_FLOAT32 || yz->dtype != MI_DTYPE_UINT8 ||
      mi_sdk_numel(ys) != 1 || mi_sdk_numel(yz) != 1 || mi_sdk_numel(y) != mi_sdk_numel(mi__blis_tensor(p, cat)))
    return 0;
  for (i = 0; i < count; i++) /* inputs a Resize of this kernel left to this step: their rows */
    for (int32_t j = 0; j < p->k->step_count && !rz[i]; j++) {
      int64_t rows = mi__blis_resize_rows_of(&p->k->steps[j], in[i], &len[i]);
      if (rows > 0 && !(len[i] <= QC_ROWS && inner[i] % len[i] == 0 && rows * len[i] == outer * inner[i]))
        return 0; /* (then refused: no step writes that input) */
      rz[i] = rows > 0 ? &p->k->steps[j] : NULL;
    }
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return -1;
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  c->count = count;
  c->y = m->outputs[0];
  c->ys = m->outputs[1];
  c->yz = m->outputs[2];
  c->yf = mi__blis_is_kernel_output(p, cat) || mi__blis_consumers(p, cat) > 1 ? cat : -1;
  c->outer = outer;
  c->inner_y = 0;
  for (i = 0; i < count; i++) {
    c->in[i] = in[i];
    c->inner[i] = inner[i];
    c->inner_y += inner[i];
    p->k->range[in[i]].reads = 1;
    c->rz[i] = rz[i];
    c->len[i] = len[i];
  }
  s->run = run_qconcat;
  p->nodes_used = 2;
  return 1;
}

int mi__blis_qconcat_takes(const mi__blis_prep_t *p, int32_t x) {
  const mi_kernel_desc_t *d = p->desc;
  if (mi__blis_is_kernel_output(p, x) || mi__blis_consumers(p, x) != 1) return 0;
  for (int32_t i = p->node_index + 1; i + 1 < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i], *m = d->nodes[i + 1];
    int reads = 0;
    for (int32_t j = 0; j < n->input_count; j++) reads |= n->inputs[j] == x;
    if (!reads) continue;
    return !strcmp(n->op_type, "Concat") && n->output_count == 1 && !strcmp(m->op_type, "DynamicQuantizeLinear") &&
           m->input_count == 1 && m->inputs[0] == n->outputs[0] && mi__blis_consumers(p, n->outputs[0]) == 1 &&
           !mi__blis_is_kernel_output(p, n->outputs[0]);
  }
  return 0;
}
