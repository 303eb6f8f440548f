/* blis_shape.c - data-movement ops: Reshape/Flatten/Squeeze/Unsqueeze/Identity, Transpose,
 * Concat and Slice. Shapes come concrete from the host, so only the copy pattern is computed. */
#include <string.h>

#include <immintrin.h>

#include "blis_conv.h"

typedef struct copy_state {
  int32_t x, y;
  uint64_t bytes;
} copy_state_t;

static int32_t run_copy(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  const copy_state_t *c = s->state;
  if (t[c->y] != t[c->x]) memcpy(t[c->y], t[c->x], (size_t)c->bytes);
  return MI_OK;
}

int32_t mi__blis_prep_copy(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0)), *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  copy_state_t *c;
  if (!x || !y || mi_sdk_numel(x) != mi_sdk_numel(y) || x->dtype != y->dtype)
    return mi__blis_unsupported(err, n, "input and output sizes differ");
  if (strcmp(n->op_type, "Dropout") == 0 && mi__blis_out(n, 1) >= 0)
    return mi__blis_unsupported(err, n, "Dropout mask output");
  if ((x->rank == 4 && x->layout == MI_LAYOUT_NHWC) != (y->rank == 4 && y->layout == MI_LAYOUT_NHWC))
    return mi__blis_unsupported(err, n, "layout change through a reshape");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->x = mi__blis_in(n, 0);
  c->y = mi__blis_out(n, 0);
  /* INT64 and BOOL are held at their own width (mi__blis_int_move_tensor); the rest as 4 bytes */
  c->bytes = (uint64_t)mi_sdk_numel(x) * 4u;
  if (x->dtype == MI_DTYPE_INT64 || x->dtype == MI_DTYPE_BOOL) c->bytes = mi_sdk_tensor_bytes(x);
  s->run = run_copy;
  return MI_OK;
}

int mi__blis_int_move_tensor(const mi_kernel_desc_t *d, int32_t t) {
  static const char *const moves[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  int32_t i, j, dt = d->tensors[t]->dtype, seen = 0;
  if (dt != MI_DTYPE_INT64 && dt != MI_DTYPE_INT32 && dt != MI_DTYPE_BOOL) return 0;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int data = 0, other = 0, move = 0;
    for (j = 0; j < (int32_t)(sizeof moves / sizeof moves[0]); j++) move |= !strcmp(n->op_type, moves[j]);
    for (j = 0; j < n->input_count; j++) {
      if (n->inputs[j] != t) continue;
      data |= j == 0;
      other |= j != 0; /* a shape or axes input: the prep reads those only as constants */
    }
    for (j = 0; j < n->output_count; j++)
      if (n->outputs[j] == t) {
        data |= j == 0 && move;
        other |= j != 0 || !move;
      }
    if (!data && !other) continue;
    if (other || !(move || (!strcmp(n->op_type, "Cast") && mi_sdk_attr_int(n, "to", 0) == MI_DTYPE_FLOAT32)))
      return 0;
    seen = 1;
  }
  return seen;
}

/* ---- generic strided gather: y[out index] = x[sum idx[d] * xs[d] + base] */

typedef struct gather_state {
  int32_t x, y, rank, simd;
  int64_t dims[MI_MAX_RANK], xs[MI_MAX_RANK], base, n;
} gather_state_t;

/* One output row of w values read at stride xl (2 to 4), sixteen a step: the 16 * xl floats they
 * span as four masked loads (never past the row's last element), then two vpermt2ps (lanes
 * whose index is below 32 from the first pair, the rest from the second: vpermt2ps reads only
 * the low 5 index bits) and a blend. The scalar strided loop ran at 16 GB/s on the NHWC -> NCHW
 * transpose of a 3-channel image (a detector's first step); vgatherdps was no faster. */
__attribute__((target("avx512f"))) void mi__blis_strided_row_avx512(const float *xr, int64_t xl, float *y, int64_t w) {
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32((int32_t)xl));
  const __mmask16 upper = _mm512_cmpge_epi32_mask(idx, _mm512_set1_epi32(32));
  int64_t j, k;
  for (j = 0; j < w; j += 16) {
    int64_t cnt = w - j < 16 ? w - j : 16, need = (cnt - 1) * xl + 1;
    const float *src = xr + j * xl;
    __m512 v[4], lo, hi;
    for (k = 0; k < 4; k++) {
      int64_t left = need - 16 * k;
      __mmask16 m = left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1u)
                                                   : 0;
      v[k] = _mm512_maskz_loadu_ps(m, src + 16 * k);
    }
    lo = _mm512_permutex2var_ps(v[0], idx, v[1]);
    hi = _mm512_permutex2var_ps(v[2], idx, v[3]);
    _mm512_mask_storeu_ps(y + j, cnt == 16 ? 0xffff : (__mmask16)((1u << cnt) - 1u), _mm512_mask_blend_ps(upper, lo, hi));
  }
}

/* One output row of w values read at stride 2, eight a step: the 16 floats they span as two loads
 * (the row's last block with its last float masked off, never read past the row's last element),
 * one vshufps for the even lanes of each 128-bit half and a vpermpd to order them. AVX2 had only
 * the scalar loop: a rotary embedding's even/odd halves (Moonshine's 24 Slices, 1x8x207x32 ->
 * 1x8x207x16) took 0.30-0.42 ms against 0.31 at AVX-512. */
__attribute__((target("avx2"))) static void stride2_row_avx2(const float *xr, float *y, int64_t w) {
  const __m256i first7 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, -1, 0);
  int64_t j = 0;
  for (; j + 8 <= w; j += 8) {
    __m256 a = _mm256_loadu_ps(xr + 2 * j);
    __m256 b = j + 8 < w ? _mm256_loadu_ps(xr + 2 * j + 8) : _mm256_maskload_ps(xr + 2 * j + 8, first7);
    __m256 e = _mm256_shuffle_ps(a, b, 0x88); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    _mm256_storeu_ps(y + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xd8)));
  }
  for (; j < w; j++) y[j] = xr[2 * j];
}

/* Rows of the last output axis [r0, r1): each a strided run of the input (a copy when the stride
 * is 1: slices), so the per-element index carry is paid once a row. */
static void gather_rows(void *arg, int64_t r0, int64_t r1) {
  const mi__blis_task_t *q = arg;
  const gather_state_t *g = q->state;
  int32_t last = g->rank - 1, d;
  int64_t idx[MI_MAX_RANK] = {0}, r, j, w = g->dims[last], xl = g->xs[last], off = g->base, rem = r0;
  const float *x = q->t[g->x];
  float *y = (float *)q->t[g->y] + r0 * w;
  for (d = last - 1; d >= 0; d--) { /* the index and input offset of row r0 */
    idx[d] = rem % g->dims[d];
    rem /= g->dims[d];
    off += idx[d] * g->xs[d];
  }
  for (r = r0; r < r1; r++, y += w) {
    const float *xr = x + off;
    if (xl == 1) memcpy(y, xr, (size_t)w * sizeof *y);
    else if (g->simd == MI__SIMD_AVX512 && xl >= 2 && xl <= 4)
      mi__blis_strided_row_avx512(xr, xl, y, w);
    else if (g->simd == MI__SIMD_AVX2 && xl == 2)
      stride2_row_avx2(xr, y, w);
    else
      for (j = 0; j < w; j++) y[j] = xr[j * xl];
    mi__blis_next_index(last, g->dims, g->xs, idx, &off);
  }
}

static int32_t run_gather(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  const gather_state_t *g = s->state;
  int64_t w = g->dims[g->rank - 1];
  (void)err;
  if (g->n == 0 || w == 0) return MI_OK;
  return mi__blis_run_parts(s, t, env, g->n / w, 1, w, gather_rows);
}

static gather_state_t *gather_new(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_node_desc_t *n) {
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  gather_state_t *g = mi__blis_calloc(p->ctx, sizeof *g);
  int32_t d;
  if (!g) return NULL;
  s->state = g;
  g->x = mi__blis_in(n, 0);
  g->y = mi__blis_out(n, 0);
  g->rank = y->rank > 0 ? y->rank : 1;
  for (d = 0; d < g->rank; d++) g->dims[d] = y->rank > 0 ? y->dims[d] : 1;
  g->n = mi_sdk_numel(y);
  g->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->run = run_gather;
  return g;
}

/* Drops the output axes of size 1 and merges neighbours the input holds as one contiguous run
 * (axis d's stride equal to axis d+1's times its size, the inner stride 1), up to 8192 floats a
 * row, so the rows still split over the threads: a slice of whole rows becomes one copy instead of
 * a copy a row (Silero VAD's 1x258x3 -> 1x129x3 halves: 129 copies of 3 floats, 0.43 us a step).
 * Strided rows (a transpose's) keep their shape. */
static void gather_compact(gather_state_t *g) {
  int32_t d, r = 0;
  for (d = 0; d < g->rank; d++) {
    if (g->dims[d] == 1) continue;
    if (r > 0 && g->xs[d] == 1 && g->xs[r - 1] == g->dims[d] && g->dims[r - 1] * g->dims[d] <= 8192) {
      g->dims[r - 1] *= g->dims[d];
      g->xs[r - 1] = g->xs[d];
      continue;
    }
    g->dims[r] = g->dims[d];
    g->xs[r++] = g->xs[d];
  }
  if (r == 0) { /* one element */
    g->dims[0] = 1;
    g->xs[0] = 1;
    r = 1;
  }
  g->rank = r;
}

int32_t mi__blis_prep_transpose(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  const mi_attr_t *pa = mi_sdk_attr(n, "perm");
  int64_t st[MI_MAX_RANK], xs[MI_MAX_RANK], dims[MI_MAX_RANK];
  gather_state_t *g;
  int32_t d, rc;
  int taken;
  if (!x || x->rank < 1) return mi__blis_unsupported(err, n, "missing input");
  if (pa && (pa->type != MI_ATTR_INTS || pa->count != x->rank)) return mi__blis_unsupported(err, n, "bad perm");
  mi_sdk_strides(x, st);
  for (d = 0; d < x->rank; d++) {
    int64_t src = pa ? pa->ints[d] : x->rank - 1 - d;
    if (src < 0 || src >= x->rank) return mi__blis_unsupported(err, n, "bad perm");
    xs[d] = st[src];
    dims[d] = x->dims[src];
  }
  if ((rc = mi__blis_prep_deinterleave(p, s, dims, xs, x->rank, &taken, err)) != MI_OK || taken) return rc;
  if (!(g = gather_new(p, s, n))) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  for (d = 0; d < x->rank; d++) g->xs[d] = xs[d];
  gather_compact(g);
  return MI_OK;
}

int32_t mi__blis_prep_slice(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  int64_t st[MI_MAX_RANK], starts[MI_MAX_RANK], ends[MI_MAX_RANK], axes[MI_MAX_RANK], steps[MI_MAX_RANK];
  int32_t ns, na, nst, i;
  gather_state_t *g;
  if (!x || x->rank < 1) return mi__blis_unsupported(err, n, "missing input");
  if (n->opset < 10) {
    const mi_attr_t *a = mi_sdk_attr(n, "starts"), *e = mi_sdk_attr(n, "ends"), *ax = mi_sdk_attr(n, "axes");
    if (!a || !e || a->count != e->count || a->count > MI_MAX_RANK) return mi__blis_unsupported(err, n, "starts/ends");
    ns = a->count;
    for (i = 0; i < ns; i++) {
      starts[i] = a->ints[i];
      ends[i] = e->ints[i];
      axes[i] = ax && ax->count == ns ? ax->ints[i] : i;
      steps[i] = 1;
    }
  } else {
    ns = mi__blis_const_ints(p, mi__blis_in(n, 1), starts, MI_MAX_RANK);
    if (ns < 0 || mi__blis_const_ints(p, mi__blis_in(n, 2), ends, MI_MAX_RANK) != ns)
      return mi__blis_unsupported(err, n, "starts/ends must be constants");
    na = mi__blis_in(n, 3) >= 0 ? mi__blis_const_ints(p, mi__blis_in(n, 3), axes, MI_MAX_RANK) : -2;
    nst = mi__blis_in(n, 4) >= 0 ? mi__blis_const_ints(p, mi__blis_in(n, 4), steps, MI_MAX_RANK) : -2;
    if (na == -1 || nst == -1 || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
      return mi__blis_unsupported(err, n, "axes/steps must be constants");
    for (i = 0; i < ns; i++) {
      if (na < 0) axes[i] = i;
      if (nst < 0) steps[i] = 1;
    }
  }
  if (!(g = gather_new(p, s, n))) return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  mi_sdk_strides(x, st);
  for (i = 0; i < x->rank; i++) g->xs[i] = st[i];
  for (i = 0; i < ns; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i], dim, b;
    if (a < 0 || a >= x->rank || steps[i] == 0) return mi__blis_unsupported(err, n, "bad axis/step");
    dim = x->dims[a];
    b = starts[i] < 0 ? starts[i] + dim : starts[i];
    /* Clamp as ONNX does: [0, dim] for positive steps, [0, dim-1] for negative ones. */
    if (steps[i] > 0) b = b < 0 ? 0 : b > dim ? dim
                                              : b;
    else
      b = b < 0 ? 0 : b > dim - 1 ? dim - 1
                                  : b;
    g->base += b * st[a];
    g->xs[a] = st[a] * steps[i];
  }
  gather_compact(g);
  return MI_OK;
}

/* ---- Concat: each input is copied as `outer` blocks of its axis-slab. */

typedef struct concat_state {
  int32_t y, count;
  int64_t outer, inner_y;
  int32_t in[32];
  int64_t inner[32], start[32]; /* start: input i's first element in the flat order below */
  uint8_t zero[32];             /* a constant input of zeros: filled, not read (channel padding) */
} concat_state_t;

/* Items are the output's elements in input order (input 0's outer blocks, then input 1's, ...),
 * so the threads split the copy whatever the block sizes: one block of a few channels (a
 * BlazeBlock's zero padding) or many short ones. */
static void concat_part(void *arg, int64_t b, int64_t e) {
  const mi__blis_task_t *q = arg;
  const concat_state_t *c = q->state;
  float *y = q->t[c->y];
  int32_t i = 0;
  int64_t off = 0;
  while (b < e) {
    int64_t r, o, len;
    while (i + 1 < c->count && b >= c->start[i + 1]) off += c->inner[i++];
    r = b - c->start[i];
    o = r / c->inner[i];
    r -= o * c->inner[i];
    len = c->inner[i] - r < e - b ? c->inner[i] - r : e - b;
    if (c->zero[i]) memset(y + o * c->inner_y + off + r, 0, (size_t)len * sizeof(float));
    else
      memcpy(y + o * c->inner_y + off + r, (const float *)q->t[c->in[i]] + o * c->inner[i] + r,
             (size_t)len * sizeof(float));
    b += len;
  }
}

/* Items are outer blocks, for blocks of at most MI__CONCAT_ROW_MAX floats of each input (a
 * rotary embedding's halves joined on a last axis of 1, its rotated 32 of 36 joined to the other
 * 4): one plain loop per input over the blocks, where concat_part's memcpy per block and division
 * per item cost 15 times the copy of blocks of 1, 1.4 times that of blocks of 32 and 4. */
#define MI__CONCAT_ROW_MAX 64
static void concat_rows_part(void *arg, int64_t o0, int64_t o1) {
  const mi__blis_task_t *q = arg;
  const concat_state_t *c = q->state;
  int64_t ny = c->inner_y, off = 0, o, k;
  if (c->count == 2 && ny == 2 && !c->zero[0] && !c->zero[1]) {
    /* two values a row (a rotary embedding's pairs rebuilt from its halves): interleaved four
     * rows at a time, one 16-byte store for two rows, where the loops below stored each float on
     * its own and the stores bound the step */
    const float *xa = (const float *)q->t[c->in[0]] + o0, *xb = (const float *)q->t[c->in[1]] + o0;
    float *y = (float *)q->t[c->y] + o0 * 2;
    int64_t n = o1 - o0;
    for (o = 0; o + 4 <= n; o += 4) {
      __m128 va = _mm_loadu_ps(xa + o), vb = _mm_loadu_ps(xb + o);
      _mm_storeu_ps(y + 2 * o, _mm_unpacklo_ps(va, vb));
      _mm_storeu_ps(y + 2 * o + 4, _mm_unpackhi_ps(va, vb));
    }
    for (; o < n; o++) {
      y[2 * o] = xa[o];
      y[2 * o + 1] = xb[o];
    }
    return;
  }
  for (int32_t i = 0; i < c->count; off += c->inner[i++]) {
    int64_t ni = c->inner[i];
    const float *x = (const float *)q->t[c->in[i]] + o0 * ni;
    float *y = (float *)q->t[c->y] + o0 * ny + off;
    if (c->zero[i])
      for (o = 0; o < o1 - o0; o++)
        for (k = 0; k < ni; k++) y[o * ny + k] = 0.f;
    else if (ni == 1)
      for (o = 0; o < o1 - o0; o++) y[o * ny] = x[o];
    else
      for (o = 0; o < o1 - o0; o++)
        for (k = 0; k < ni; k++) y[o * ny + k] = x[o * ni + k];
  }
}

static int32_t run_concat(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  const concat_state_t *c = s->state;
  int64_t widest = 0;
  (void)err;
  if (c->outer * c->inner_y == 0) return MI_OK;
  for (int32_t i = 0; i < c->count; i++) widest = c->inner[i] > widest ? c->inner[i] : widest;
  if (widest <= MI__CONCAT_ROW_MAX)
    return mi__blis_run_parts(s, t, env, c->outer, 1024 / c->inner_y + 1, c->inner_y, concat_rows_part);
  return mi__blis_run_parts(s, t, env, c->outer * c->inner_y, 1024, 1, concat_part);
}

int32_t mi__blis_prep_concat(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", 0), total = 0, outer, inner[32];
  concat_state_t *c;
  int32_t i, in[32];
  if (!y || y->rank < 1 || n->input_count > 32) return mi__blis_unsupported(err, n, "too many inputs");
  if (!mi__blis_axis_split(y, &axis, &outer, NULL, NULL)) return mi__blis_unsupported(err, n, "axis out of range");
  for (i = 0; i < n->input_count; i++) {
    const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, i));
    if (!x || x->dtype != MI_DTYPE_FLOAT32 || x->rank != y->rank) return mi__blis_unsupported(err, n, "input rank/dtype");
    in[i] = mi__blis_in(n, i);
    inner[i] = outer ? mi_sdk_numel(x) / outer : 0;
    total += inner[i];
  }
  if (total != (outer ? mi_sdk_numel(y) / outer : 0)) return mi__blis_unsupported(err, n, "input sizes do not add up");
  /* A DynamicQuantizeLinear of the result in the same kernel: the codes from the inputs */
  switch (mi__blis_prep_qconcat(p, s, outer, n->input_count, in, inner, err)) {
  case 1: return MI_OK;
  case -1: return MI_ERR_OUT_OF_MEMORY;
  default: break;
  }
  for (i = 0; i < n->input_count; i++)
    for (int32_t j = 0; j < p->k->step_count; j++)
      if (mi__blis_resize_rows_of(&p->k->steps[j], in[i], &(int64_t){0}) > 0)
        return mi__blis_unsupported(err, n, "a Resize left its rows to a quantize step that did not take them");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->y = mi__blis_out(n, 0);
  c->outer = outer;
  c->inner_y = total;
  c->count = n->input_count;
  for (i = 0; i < n->input_count; i++) {
    const mi_tensor_desc_t *x = mi__blis_tensor(p, in[i]);
    c->in[i] = in[i];
    c->inner[i] = inner[i];
    c->start[i] = i ? c->start[i - 1] + outer * inner[i - 1] : 0;
    if (x->data) {
      uint64_t k, nb = (uint64_t)mi_sdk_numel(x) * sizeof(float);
      const uint8_t *d = x->data;
      for (k = 0; k < nb && !d[k]; k++) {
      }
      c->zero[i] = k == nb; /* +0.0f only: -0.0f has a bit set */
    }
  }
  s->run = run_concat;
  return MI_OK;
}
