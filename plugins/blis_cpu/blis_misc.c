/* blis_misc.c - data-movement ops added for real exports: Cast (FLOAT32 to FLOAT32 or BF16), Pad,
 * Expand, Tile, Gather (constant indices), Split, DepthToSpace and SpaceToDepth; CumSum and
 * Trilu at the end.
 *
 * All but Split are "axis maps": the output (or a contiguous view of it) is walked index by
 * index, and the input offset is the sum over output axes of a per-axis table entry
 * (map[d][i] = input element offset for output index i on axis d, -1 = the pad constant). The
 * tables are built at prepare from the concrete shapes the host gives. */
#include <string.h>

#include <immintrin.h>

#include "blis_qgemm.h"

/* Runs of the last axis's map: output columns [j0, j0 + len) read input offsets src, src + 1, ...
 * (or are all the pad constant, src = -1). Pad, Tile and Expand rows are a few such runs: copied
 * with memcpy instead of one table lookup per element (a DB-style 1x96x160x160 Pad: 9% of a
 * detector's time). A map with more runs than this (a gather) walks the table. */
#define AMAP_RUNS 16

typedef struct amap_state {
  int32_t x, y, rank;
  int64_t dims[MI_MAX_RANK];
  int64_t *map[MI_MAX_RANK]; /* into the step's aux block */
  int64_t base;              /* added to every offset */
  float cval;                /* written where a map entry is -1 */
  /* the last axis's runs, found once the maps are filled (amap_plan): a reflect Pad's 576-wide
   * row took 1-2 us a run to find them again (Silero VAD's STFT padding) */
  int64_t nrun, j0[AMAP_RUNS], len[AMAP_RUNS], src[AMAP_RUNS];
} amap_state_t;

typedef struct amap_task {
  const amap_state_t *a;
  const float *x;
  float *y;
  int64_t nrun, j0[AMAP_RUNS], len[AMAP_RUNS], src[AMAP_RUNS];
} amap_task_t;

static void amap_rows(void *arg, int64_t r0, int64_t r1) {
  const amap_task_t *q = arg;
  const amap_state_t *a = q->a;
  int32_t last = a->rank - 1, d;
  int64_t idx[MI_MAX_RANK] = {0}, r, j, k, w = a->dims[last], rem = r0;
  const int64_t *m = a->map[last];
  float *y = q->y + r0 * w;
  for (d = last - 1; d >= 0; d--) { /* the row index of r0 */
    idx[d] = rem % a->dims[d];
    rem /= a->dims[d];
  }
  for (r = r0; r < r1; r++, y += w) {
    int64_t off = a->base;
    int pad = 0;
    for (d = 0; d < last; d++) {
      int64_t e = a->map[d][idx[d]];
      pad |= e < 0;
      off += e;
    }
    if (pad) {
      for (j = 0; j < w; j++) y[j] = a->cval;
    } else if (q->nrun > 0) {
      for (k = 0; k < q->nrun; k++) {
        if (q->src[k] < 0)
          for (j = 0; j < q->len[k]; j++) y[q->j0[k] + j] = a->cval;
        else
          memcpy(y + q->j0[k], q->x + off + q->src[k], (size_t)q->len[k] * sizeof *y);
      }
    } else {
      for (j = 0; j < w; j++) y[j] = m[j] < 0 ? a->cval : q->x[off + m[j]];
    }
    mi__blis_next_index(last, a->dims, NULL, idx, NULL);
  }
}

static int32_t run_amap(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                        mi_error_t *err) {
  amap_task_t q;
  const amap_state_t *a = s->state;
  int32_t last = a->rank - 1, d;
  int64_t rows = 1, w = a->dims[last];
  (void)err;
  for (d = 0; d < last; d++) rows *= a->dims[d];
  if (w == 0 || rows == 0) return MI_OK;
  q.a = a;
  q.x = t[a->x];
  q.y = t[a->y];
  q.nrun = a->nrun;
  if (q.nrun > 0) {
    memcpy(q.j0, a->j0, (size_t)q.nrun * sizeof q.j0[0]);
    memcpy(q.len, a->len, (size_t)q.nrun * sizeof q.len[0]);
    memcpy(q.src, a->src, (size_t)q.nrun * sizeof q.src[0]);
  }
  mi__blis_parallel(env, rows, 1, w, amap_rows, &q);
  return MI_OK;
}

/* A map step over an output (view) of `rank` dims; the caller fills every map[d][0..dims[d]). */
static amap_state_t *amap_new(mi__blis_prep_t *p, mi__blis_step_t *s, int32_t x, int32_t y, int32_t rank,
                              const int64_t *dims) {
  amap_state_t *a = mi__blis_calloc(p->ctx, sizeof *a);
  int64_t total = 0, *m;
  int32_t d;
  if (!a) return NULL;
  s->state = a;
  a->x = x;
  a->y = y;
  a->rank = rank > 0 ? rank : 1;
  for (d = 0; d < a->rank; d++) {
    a->dims[d] = rank > 0 ? dims[d] : 1;
    total += a->dims[d];
  }
  m = mi__blis_calloc(p->ctx, (uint64_t)(total + 1) * sizeof *m);
  if (!m) return NULL;
  s->aux = m;
  for (d = 0; d < a->rank; d++) {
    a->map[d] = m;
    m += a->dims[d];
  }
  s->run = run_amap;
  return a;
}

/* The runs of a's last-axis map (its maps filled): nrun -1 when more than AMAP_RUNS (the table walk). */
static void amap_plan(amap_state_t *a) {
  const int64_t *m = a->map[a->rank - 1];
  int64_t j, w = a->dims[a->rank - 1];
  a->nrun = 0;
  for (j = 0; j < w && a->nrun >= 0; j++) {
    int64_t k = a->nrun - 1;
    if (k >= 0 && ((m[j] < 0 && a->src[k] < 0) || (m[j] >= 0 && a->src[k] >= 0 && m[j] == a->src[k] + a->len[k]))) {
      a->len[k]++;
    } else if (a->nrun == AMAP_RUNS) {
      a->nrun = -1;
    } else {
      a->j0[a->nrun] = j;
      a->len[a->nrun] = 1;
      a->src[a->nrun++] = m[j] < 0 ? -1 : m[j];
    }
  }
}

#define OOM(err) mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory")

/* Input 0 and output 0 as FLOAT32 descriptions, or a refusal. */
static int32_t io_f32(mi__blis_prep_t *p, const mi_node_desc_t *n, const mi_tensor_desc_t **x,
                      const mi_tensor_desc_t **y, mi_error_t *err) {
  *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  if (!*x || !*y || (*x)->dtype != MI_DTYPE_FLOAT32 || (*y)->dtype != MI_DTYPE_FLOAT32)
    return mi__blis_unsupported(err, n, "input and output must be FLOAT32");
  return MI_OK;
}

/* ---- Cast: the plugin's runtime tensors are FLOAT32, so a FLOAT32 -> FLOAT32 copy, or a Cast to
 * BFLOAT16, which the host holds as FLOAT32 values rounded to BF16 (the BF16 transform's rounding
 * of a layer's input where the layer does not run on conv.packed_gemm_bf16). */
typedef struct bf16_round {
  int32_t x, y, simd;
  int64_t n;
} bf16_round_t;

/* Round to nearest even on the low 16 bits, NaN kept quiet: mi_sdk_float_to_bf16, 16 a step. */
__attribute__((target("avx512f"))) static void round_bf16_512(const float *x, float *y, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff), hi = _mm512_set1_epi32((int)0xffff0000u);
  const __m512i quiet = _mm512_set1_epi32(0x00400000);
  int64_t i = 0;
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512i u = _mm512_castps_si512(v);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, u, quiet);
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_and_si512(r, hi)));
  }
}

static int32_t run_bf16_round(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const bf16_round_t *c = s->state;
  const float *x = t[c->x];
  float *y = t[c->y];
  (void)env;
  (void)err;
  if (c->simd == MI__SIMD_AVX512) {
    round_bf16_512(x, y, c->n);
    return MI_OK;
  }
  for (int64_t i = 0; i < c->n; i++) y[i] = mi_sdk_bf16_to_float(mi_sdk_float_to_bf16(x[i]));
  return MI_OK;
}

/* An INT64 or BOOL input to FLOAT (mi__blis_int_move_tensor admits it): a BERT export's
 * attention mask, Unsqueezed twice, then Cast before (1 - mask) * min. */
typedef struct int_to_float {
  int32_t x, y, dt;
  int64_t n;
} int_to_float_t;

static int32_t run_int_to_float(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                                mi_error_t *err) {
  const int_to_float_t *c = s->state;
  float *y = t[c->y];
  (void)env;
  (void)err;
  if (c->dt == MI_DTYPE_INT64) {
    const int64_t *x = t[c->x];
    for (int64_t i = 0; i < c->n; i++) y[i] = (float)x[i];
  } else {
    const uint8_t *x = t[c->x];
    for (int64_t i = 0; i < c->n; i++) y[i] = x[i] ? 1.0f : 0.0f;
  }
  return MI_OK;
}

int32_t mi__blis_prep_cast(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y;
  int32_t rc;
  int64_t to = mi_sdk_attr_int(n, "to", 0);
  bf16_round_t *c;
  x = mi__blis_tensor(p, mi__blis_in(n, 0));
  if (x && x->dtype == MI_DTYPE_INT32) return mi__blis_prep_qeltwise(p, s, err); /* ConvInteger's sums */
  if (x && (x->dtype == MI_DTYPE_INT64 || x->dtype == MI_DTYPE_BOOL)) {
    int_to_float_t *q;
    y = mi__blis_tensor(p, mi__blis_out(n, 0));
    if (to != MI_DTYPE_FLOAT32 || !y || y->dtype != MI_DTYPE_FLOAT32)
      return mi__blis_unsupported(err, n, "an INT64 or BOOL input is run only to=FLOAT");
    if (mi_sdk_numel(x) != mi_sdk_numel(y)) return mi__blis_unsupported(err, n, "input and output sizes differ");
    if (!(q = mi__blis_state_new(p, s, sizeof *q, err))) return MI_ERR_OUT_OF_MEMORY;
    q->x = mi__blis_in(n, 0);
    q->y = mi__blis_out(n, 0);
    q->dt = x->dtype;
    q->n = mi_sdk_numel(x);
    s->run = run_int_to_float;
    return MI_OK;
  }
  if ((rc = io_f32(p, n, &x, &y, err)) != MI_OK) return rc;
  if (to == 1) return mi__blis_prep_copy(p, s, err);
  if (to != 16) return mi__blis_unsupported(err, n, "only to=FLOAT and to=BFLOAT16 are run");
  if (mi_sdk_numel(x) != mi_sdk_numel(y)) return mi__blis_unsupported(err, n, "input and output sizes differ");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->x = mi__blis_in(n, 0);
  c->y = mi__blis_out(n, 0);
  c->n = mi_sdk_numel(x);
  c->simd = mi__blis_simd_level(p->ctx->cpu.isa);
  s->run = run_bf16_round;
  return MI_OK;
}

/* ---- Pad (constant, edge, reflect; pads as attribute before opset 11, constant input after) */

int32_t mi__blis_prep_pad(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y;
  const char *ms = mi_sdk_attr_string(n, "mode", "constant");
  int64_t pads[2 * MI_MAX_RANK], axes[MI_MAX_RANK], full[2 * MI_MAX_RANK] = {0}, st[MI_MAX_RANK] = {0}, o;
  int32_t np, na = -1, mode, d, k, rc = io_f32(p, n, &x, &y, err);
  float cval = 0.0f;
  amap_state_t *a;
  if (rc != MI_OK) return rc;
  mode = mi_sdk_pad_mode_from_name(ms);
  if (mode < 0) return mi__blis_unsupported(err, n, "mode must be constant, edge or reflect");
  if (x->rank < 1 || y->rank != x->rank) return mi__blis_unsupported(err, n, "input and output ranks differ");
  if (n->opset < 11) {
    const mi_attr_t *pa = mi_sdk_attr(n, "pads");
    if (!pa || pa->type != MI_ATTR_INTS || pa->count > 2 * MI_MAX_RANK) return mi__blis_unsupported(err, n, "pads");
    np = pa->count;
    for (k = 0; k < np; k++) pads[k] = pa->ints[k];
    cval = mi_sdk_attr_float(n, "value", 0.0f);
  } else {
    const mi_tensor_desc_t *v = mi__blis_tensor(p, mi__blis_in(n, 2));
    np = mi__blis_const_ints(p, mi__blis_in(n, 1), pads, 2 * MI_MAX_RANK);
    if (np < 0) return mi__blis_unsupported(err, n, "pads must be a constant");
    if (v && mi_sdk_numel(v) > 0) {
      if (!v->data || v->dtype != MI_DTYPE_FLOAT32) return mi__blis_unsupported(err, n, "constant_value must be a FLOAT32 constant");
      cval = *(const float *)v->data;
    }
    if (mi__blis_in(n, 3) >= 0 && (na = mi__blis_const_ints(p, mi__blis_in(n, 3), axes, MI_MAX_RANK)) < 0)
      return mi__blis_unsupported(err, n, "axes must be a constant");
  }
  if (na < 0) {
    na = x->rank;
    for (d = 0; d < na; d++) axes[d] = d;
  }
  if (np != 2 * na) return mi__blis_unsupported(err, n, "pads count differs from twice the axes");
  for (k = 0; k < na; k++) {
    int64_t ax = axes[k] < 0 ? axes[k] + x->rank : axes[k];
    if (ax < 0 || ax >= x->rank) return mi__blis_unsupported(err, n, "axis out of range");
    full[ax] = pads[k];
    full[ax + x->rank] = pads[k + na];
  }
  for (d = 0; d < x->rank; d++) {
    if (y->dims[d] != x->dims[d] + full[d] + full[d + x->rank]) return mi__blis_unsupported(err, n, "output shape differs from the pads");
    if (mode && x->dims[d] == 0 && y->dims[d] > 0) return mi__blis_unsupported(err, n, "edge/reflect pad of an empty axis");
  }
  switch (mi__blis_prep_qpad(p, s, x, full, cval, mode, err)) { /* -> DynamicQuantizeLinear: blis_qpad.c */
  case 1: return MI_OK;
  case -1: return MI_ERR_OUT_OF_MEMORY;
  default: break;
  }
  if (!(a = amap_new(p, s, mi__blis_in(n, 0), mi__blis_out(n, 0), y->rank, y->dims))) return OOM(err);
  a->cval = cval;
  mi_sdk_strides(x, st);
  for (d = 0; d < y->rank; d++)
    for (o = 0; o < y->dims[d]; o++) {
      int64_t src = mi_sdk_pad_source(mode, o, full[d], x->dims[d]);
      a->map[d][o] = src < 0 ? -1 : src * st[d];
    }
  amap_plan(a);
  return MI_OK;
}

/* ---- Expand (numpy broadcast of X to the output) and Tile (X repeated) */

int32_t mi__blis_prep_expand_tile(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y;
  int tile = strcmp(n->op_type, "Tile") == 0;
  int64_t st[MI_MAX_RANK] = {0}, o;
  int32_t d, rc = io_f32(p, n, &x, &y, err);
  amap_state_t *a;
  if (rc != MI_OK) return rc;
  if (y->rank < x->rank || (tile && y->rank != x->rank)) return mi__blis_unsupported(err, n, "output rank");
  for (d = 0; d < x->rank; d++) {
    int64_t xd = x->dims[d], yd = y->dims[d + y->rank - x->rank];
    if (tile ? (xd == 0 ? yd != 0 : yd % xd != 0) : (xd != 1 && xd != yd))
      return mi__blis_unsupported(err, n, "output shape does not follow from the input");
  }
  if (tile) {
    /* The repeats must be the constant the output shape was computed from. */
    int64_t rep[MI_MAX_RANK];
    if (mi__blis_const_ints(p, mi__blis_in(n, 1), rep, MI_MAX_RANK) != x->rank)
      return mi__blis_unsupported(err, n, "repeats must be a constant of the input's rank");
  }
  if (!(a = amap_new(p, s, mi__blis_in(n, 0), mi__blis_out(n, 0), y->rank, y->dims))) return OOM(err);
  mi_sdk_strides(x, st);
  for (d = 0; d < y->rank; d++) {
    int32_t xd = d - (y->rank - x->rank);
    for (o = 0; o < y->dims[d]; o++)
      a->map[d][o] = xd < 0 || x->dims[xd] == 1 ? 0 : (o % x->dims[xd]) * st[xd];
  }
  amap_plan(a);
  return MI_OK;
}

/* ---- Gather with constant indices of rank 0 or 1 */

int32_t mi__blis_prep_gather(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y, *ind = mi__blis_tensor(p, mi__blis_in(n, 1));
  int64_t st[MI_MAX_RANK] = {0}, idx[256], axis = mi_sdk_attr_int(n, "axis", 0), o, len;
  int32_t d, ni, yd, rc = io_f32(p, n, &x, &y, err);
  amap_state_t *a;
  if (rc != MI_OK) return rc;
  if (!ind || ind->rank > 1 || (ni = mi__blis_const_ints(p, mi__blis_in(n, 1), idx, 256)) < 0)
    return mi__blis_unsupported(err, n, "indices must be a constant scalar or vector of at most 256");
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank || y->rank != x->rank - 1 + ind->rank)
    return mi__blis_unsupported(err, n, "axis out of range");
  len = x->dims[axis];
  for (d = 0; d < ni; d++) {
    if (idx[d] < -len || idx[d] >= len) return mi__blis_unsupported(err, n, "index out of range");
    if (idx[d] < 0) idx[d] += len;
  }
  if (!(a = amap_new(p, s, mi__blis_in(n, 0), mi__blis_out(n, 0), y->rank, y->dims))) return OOM(err);
  mi_sdk_strides(x, st);
  if (ind->rank == 0) a->base = idx[0] * st[axis];
  for (d = 0, yd = 0; d < x->rank; d++) {
    if (d == axis && ind->rank == 0) continue;
    if (y->rank > 0 && y->dims[yd] != (d == axis ? ni : x->dims[d])) return mi__blis_unsupported(err, n, "output shape");
    for (o = 0; y->rank > 0 && o < y->dims[yd]; o++) a->map[yd][o] = (d == axis ? idx[o] : o) * st[d];
    yd++;
  }
  amap_plan(a);
  return MI_OK;
}

/* ---- DepthToSpace / SpaceToDepth as maps over a 6-D view of the output */

int32_t mi__blis_prep_depth_space(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y;
  const mi_attr_t *ma = mi_sdk_attr(n, "mode");
  int to_space = strcmp(n->op_type, "DepthToSpace") == 0, crd;
  int64_t b = mi_sdk_attr_int(n, "blocksize", 0), v[6], m[6], N, C, H, W, o;
  int32_t d, rc = io_f32(p, n, &x, &y, err);
  amap_state_t *a;
  if (rc != MI_OK) return rc;
  crd = to_space && ma && ma->type == MI_ATTR_STRING && ma->s && strcmp(ma->s, "CRD") == 0;
  if (to_space && ma && !crd && !(ma->type == MI_ATTR_STRING && ma->s && strcmp(ma->s, "DCR") == 0))
    return mi__blis_unsupported(err, n, "mode must be DCR or CRD");
  if (x->rank != 4 || y->rank != 4 || b < 1 || b > 65535) return mi__blis_unsupported(err, n, "needs 4-D NCHW and a blocksize >= 1");
  N = x->dims[0];
  C = x->dims[1];
  H = x->dims[2];
  W = x->dims[3];
  if (to_space ? C % (b * b) != 0 : (H % b != 0 || W % b != 0)) return mi__blis_unsupported(err, n, "shape does not divide by blocksize");
  if (to_space) {
    /* y[n, c, h*b+i, w*b+j] = x[n, DCR: (i*b+j)*C' + c | CRD: c*b*b + i*b + j, h, w] */
    int64_t Cs = C / (b * b);
    if (y->dims[1] != Cs || y->dims[2] != H * b || y->dims[3] != W * b) return mi__blis_unsupported(err, n, "output shape");
    v[0] = N, v[1] = Cs, v[2] = H, v[3] = b, v[4] = W, v[5] = b;
    m[0] = C * H * W, m[2] = W, m[4] = 1;
    m[1] = (crd ? b * b : 1) * H * W;
    m[3] = (crd ? b : b * Cs) * H * W;
    m[5] = (crd ? 1 : Cs) * H * W;
  } else {
    /* y[n, (i*b+j)*C + c, h, w] = x[n, c, h*b+i, w*b+j] */
    if (y->dims[1] != C * b * b || y->dims[2] != H / b || y->dims[3] != W / b) return mi__blis_unsupported(err, n, "output shape");
    v[0] = N, v[1] = b, v[2] = b, v[3] = C, v[4] = H / b, v[5] = W / b;
    m[0] = C * H * W, m[1] = W, m[2] = 1, m[3] = H * W, m[4] = b * W, m[5] = b;
  }
  if (!(a = amap_new(p, s, mi__blis_in(n, 0), mi__blis_out(n, 0), 6, v))) return OOM(err);
  for (d = 0; d < 6; d++)
    for (o = 0; o < v[d]; o++) a->map[d][o] = o * m[d];
  amap_plan(a);
  return MI_OK;
}

/* ---- Split: output sizes along the axis are the host's concrete output shapes. */

typedef struct split_state {
  int32_t x, count;
  int64_t outer, row; /* row: the input's axis slab, elements */
  int32_t out[32];
  int64_t part[32], start[32];
} split_state_t;

static int32_t run_split(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  const split_state_t *c = s->state;
  const float *x = t[c->x];
  int64_t o;
  int32_t i;
  (void)env;
  (void)err;
  for (i = 0; i < c->count; i++) {
    float *y = t[c->out[i]];
    for (o = 0; o < c->outer && c->part[i]; o++)
      memcpy(y + o * c->part[i], x + o * c->row + c->start[i], (size_t)c->part[i] * sizeof(float));
  }
  return MI_OK;
}

int32_t mi__blis_prep_split(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x = mi__blis_tensor(p, mi__blis_in(n, 0));
  int64_t axis = mi_sdk_attr_int(n, "axis", 0), inner, len, at = 0;
  split_state_t *c;
  int32_t i, d;
  if (!x || x->dtype != MI_DTYPE_FLOAT32 || x->rank < 1) return mi__blis_unsupported(err, n, "input must be FLOAT32");
  if (n->output_count < 1 || n->output_count > 32) return mi__blis_unsupported(err, n, "1..32 outputs");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!mi__blis_axis_split(x, &axis, &c->outer, &len, &inner)) return mi__blis_unsupported(err, n, "axis out of range");
  c->x = mi__blis_in(n, 0);
  c->row = len * inner;
  for (i = 0; i < n->output_count; i++) {
    const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, i));
    if (mi__blis_out(n, i) < 0 || !y) return mi__blis_unsupported(err, n, "an omitted output");
    if (y->dtype != MI_DTYPE_FLOAT32 || y->rank != x->rank) return mi__blis_unsupported(err, n, "output rank/dtype");
    for (d = 0; d < x->rank; d++)
      if (d != axis && y->dims[d] != x->dims[d]) return mi__blis_unsupported(err, n, "output shape");
    c->out[i] = mi__blis_out(n, i);
    c->part[i] = y->dims[axis] * inner;
    c->start[i] = at * inner;
    at += y->dims[axis];
  }
  if (at != x->dims[axis]) return mi__blis_unsupported(err, n, "output sizes do not add up to the input");
  c->count = n->output_count;
  s->run = run_split;
  return MI_OK;
}

/* ---- CumSum (constant axis; exclusive, reverse), summed in double as the reference does */

typedef struct scan_state {
  int32_t x, y, exclusive, reverse;
  int64_t outer, len, inner;
} scan_state_t;

static int32_t run_cumsum(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                          mi_error_t *err) {
  const scan_state_t *c = s->state;
  const float *x = t[c->x];
  float *y = t[c->y];
  int64_t o, i, j;
  (void)env;
  (void)err;
  for (o = 0; o < c->outer; o++)
    for (i = 0; i < c->inner; i++) {
      double sum = 0.0;
      for (j = 0; j < c->len; j++) {
        int64_t k = c->reverse ? c->len - 1 - j : j, e = (o * c->len + k) * c->inner + i;
        double v = x[e];
        if (!c->exclusive) sum += v;
        y[e] = (float)sum;
        if (c->exclusive) sum += v;
      }
    }
  return MI_OK;
}

int32_t mi__blis_prep_cumsum(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y;
  int64_t axis;
  int32_t rc = io_f32(p, n, &x, &y, err);
  scan_state_t *c;
  if (rc != MI_OK) return rc;
  if (x->rank < 1 || mi__blis_const_ints(p, mi__blis_in(n, 1), &axis, 1) != 1)
    return mi__blis_unsupported(err, n, "axis must be a constant scalar");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!mi__blis_axis_split(x, &axis, &c->outer, &c->len, &c->inner))
    return mi__blis_unsupported(err, n, "axis out of range");
  c->x = mi__blis_in(n, 0);
  c->y = mi__blis_out(n, 0);
  c->exclusive = mi_sdk_attr_int(n, "exclusive", 0) != 0;
  c->reverse = mi_sdk_attr_int(n, "reverse", 0) != 0;
  s->run = run_cumsum;
  return MI_OK;
}

/* ---- Trilu (constant k): element (i, j) of each matrix kept when j - i >= k (upper) or
 * j - i <= k (lower), else zero. */

typedef struct trilu_state {
  int32_t x, y, upper;
  int64_t k, rows, cols, n;
} trilu_state_t;

static int32_t run_trilu(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env,
                         mi_error_t *err) {
  const trilu_state_t *c = s->state;
  const float *x = t[c->x];
  float *y = t[c->y];
  int64_t e;
  (void)env;
  (void)err;
  for (e = 0; e < c->n; e++) {
    int64_t j = e % c->cols, i = (e / c->cols) % c->rows;
    y[e] = (c->upper ? j - i >= c->k : j - i <= c->k) ? x[e] : 0.0f;
  }
  return MI_OK;
}

int32_t mi__blis_prep_trilu(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *x, *y;
  int64_t k = 0;
  int32_t rc = io_f32(p, n, &x, &y, err);
  trilu_state_t *c;
  if (rc != MI_OK) return rc;
  if (x->rank < 2) return mi__blis_unsupported(err, n, "input rank below 2");
  if (mi__blis_in(n, 1) >= 0 && mi__blis_const_ints(p, mi__blis_in(n, 1), &k, 1) != 1)
    return mi__blis_unsupported(err, n, "k must be a constant scalar");
  if (!(c = mi__blis_state_new(p, s, sizeof *c, err))) return MI_ERR_OUT_OF_MEMORY;
  c->x = mi__blis_in(n, 0);
  c->y = mi__blis_out(n, 0);
  c->upper = mi_sdk_attr_int(n, "upper", 1) != 0;
  c->k = k;
  c->rows = x->dims[x->rank - 2];
  c->cols = x->dims[x->rank - 1];
  c->n = mi_sdk_numel(x);
  if (c->cols == 0 || c->rows == 0) c->n = 0;
  s->run = run_trilu;
  return MI_OK;
}
