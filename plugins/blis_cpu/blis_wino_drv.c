/* blis_wino_drv.c - conv.winograd's driver for every tile size: block geometry, scratch slots,
 * weight transform and packing, and the run loop over blocks of tile rows.
 *
 * Y = A^T [(G g G^T) . (B^T d B)] A over wt x wt output tiles read from wa x wa input tiles: for
 * each of the wp = wa * wa tile positions one GEMM of the transformed weights (M x C, transformed
 * in double and packed once at prepare) by the transformed input tiles (C x tiles). The GEMMs are
 * conv.packed_gemm's register-blocked tiles (a 1x1 conv of C to M channels per position, raw
 * sums), or conv.packed_gemm_bf16's for a tile size in BF16 compute. The work is split over blocks
 * of whole tile rows: one thread transforms a block, multiplies and transforms it back in its own
 * scratch slot while it is in cache, then runs the epilogue chain on the block's output rows. The
 * tile sizes (F(4x4, 3x3) in blis_wino.c, F(6x6, 3x3) in blis_wino6.c, F(2x2, 3x3) in BF16 in
 * blis_wino2.c) give their transforms, G and their scratch rows in a table; the transforms are
 * called once a block through the layer's pointer to it. */
#include <stdatomic.h>
#include <string.h>

#include "blis_split.h"
#include "blis_wino.h"

int64_t mi__blis_wino_slot_claim(atomic_int *busy, int64_t slots) {
  for (int64_t s = 0;; s = (s + 1) % slots) {
    int z = 0;
    if (atomic_compare_exchange_strong(&busy[s], &z, 1)) return s;
  }
}

void mi__blis_wino_slot_release(atomic_int *busy, int64_t s) { atomic_store(&busy[s], 0); }

typedef struct wino_task {
  const mi__blis_conv_t *c;
  const mi__blis_wino_t *wn;
  void *const *t;
  mi__blis_env_t env1; /* the run's BLIS contexts, one thread: the tile GEMMs run inside a part */
  int64_t n;
} wino_task_t;

/* Items are blocks of tile rows of image n. */
static void wino_part(void *arg, int64_t b0, int64_t b1) {
  const wino_task_t *wt = arg;
  const mi__blis_conv_t *c = wt->c;
  const mi__blis_wino_t *wn = wt->wn;
  const float *x = (const float *)wt->t[c->x] + wt->n * c->C * c->H * c->W;
  float *y = (float *)wt->t[c->y] + wt->n * c->M * c->OH * c->OW, *v, *mo, *tb;
  int64_t s = mi__blis_wino_slot_claim(wn->busy, wn->slots), blk, p, m, ohw = c->OH * c->OW;
  v = wn->slot + s * wn->slot_fl;
  mo = v + wn->wp * wn->vs;
  tb = mo + wn->wp * wn->mst;
  for (blk = b0; blk < b1; blk++) {
    int64_t r0 = mi__blis_wino_start(wn->th, wn->nb, wn->parts, wn->fixed, blk);
    int64_t r1 = mi__blis_wino_start(wn->th, wn->nb, wn->parts, wn->fixed, blk + 1);
    int64_t nt = (r1 - r0) * wn->tw;
    int64_t o0 = r0 * wn->wt * c->OW, o1 = (r1 * wn->wt < c->OH ? r1 * wn->wt : c->OH) * c->OW;
    wn->tile->in(c, wn, x, r0, r1, v, tb);
    for (p = 0; p < wn->wp; p++)
      mi__blis_pg_gemm_ex(&wn->sub[p], wt->t, &wt->env1, 0, 0, v + p * wn->vs, wn->ld, NULL, 0, nt, mo + p * wn->mst,
                          wn->ld);
    wn->tile->out(c, wn, mo, r0, r1, y);
    if (c->epi_n)
      for (m = 0; m < c->M; m++) mi__blis_epi_tail(c, wt->t, wt->n, m, o0, y + m * ohw + o0, o1 - o0, 0, 0);
  }
  mi__blis_wino_slot_release(wn->busy, s);
}

static int32_t run_wino(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const mi__blis_conv_t *c = s->state;
  const mi__blis_wino_t *wn = s->aux;
  mi__blis_env_t pe = *env;
  wino_task_t wt;
  (void)err;
  wt.c = c;
  wt.wn = wn;
  wt.t = t;
  wt.env1 = *env;
  wt.env1.threads = 1;
  wt.env1.pool = NULL;
  if (pe.threads > wn->slots) pe.threads = (int32_t)wn->slots;
  for (wt.n = 0; wt.n < c->N; wt.n++)
    mi__blis_parallel(&pe, wn->nb, 1, wn->wp * c->M * c->C * wn->rows * wn->tw, wino_part, &wt);
  return MI_OK;
}

/* G g G^T of one 3x3 filter g into u (wa x wa), in double; G has wa rows. */
static void weight_tf(const double (*G)[3], int64_t wa, const float *g, double *u) {
  double t[8][3]; /* wa <= 8: F(6x6, 3x3)'s 8x8 input tiles are the largest */
  int64_t i, j, k;
  for (i = 0; i < wa; i++)
    for (j = 0; j < 3; j++) {
      t[i][j] = 0.;
      for (k = 0; k < 3; k++) t[i][j] += G[i][k] * g[k * 3 + j];
    }
  for (i = 0; i < wa; i++)
    for (j = 0; j < wa; j++) {
      u[i * wa + j] = 0.;
      for (k = 0; k < 3; k++) u[i * wa + j] += t[i][k] * G[j][k];
    }
}

int32_t mi__blis_wino_drv_prep(mi__blis_prep_t *p, mi__blis_step_t *s, mi__blis_conv_t *c,
                               const mi__blis_wino_tile_t *tile, mi_error_t *err) {
  const float *w = p->k->ptr[c->w];
  mi__blis_wino_t *wn, geo;
  mi__blis_conv_t sub0;
  int64_t C = c->C, M = c->M, WT = tile->wt, WA = tile->wa, WL = tile->wl, WP = WA * WA, pos, m, ci;
  uint64_t hdr = (sizeof *wn + (uint64_t)WP * sizeof sub0 + 63) / 64 * 16, packed, busy, total;
  float *tmp, *packed0;
  double u[8 * 8];
  if (WA > 8)
    return mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "blis-cpu: conv.winograd's input tiles are at most 8x8");
  memset(&geo, 0, sizeof geo);
  geo.wt = (int16_t)WT;
  geo.wa = (int16_t)WA;
  geo.wp = (int16_t)WP;
  geo.wl = (int16_t)WL;
  geo.tile = tile;
  geo.th = (c->OH + WT - 1) / WT;
  geo.tw = (c->OW + WT - 1) / WT;
  /* blocks for as many threads as there are cores (the default and most): each thread's share
   * within a tile row of the others' */
  geo.parts = p->ctx->cpu.cores > 0 ? p->ctx->cpu.cores : 1;
  geo.nb = mi__blis_wino_blocks(geo.th, geo.tw, C, M, geo.parts, tile->lanes, tile->max_floats, tile->max_tiles,
                                &geo.fixed);
  for (geo.rows = 0, pos = 0; pos < geo.nb; pos++) {
    int64_t r = mi__blis_wino_start(geo.th, geo.nb, geo.parts, geo.fixed, pos + 1) -
                mi__blis_wino_start(geo.th, geo.nb, geo.parts, geo.fixed, pos);
    if (r > geo.rows) geo.rows = r;
  }
  geo.ld = (geo.rows * geo.tw + WL - 1) / WL * WL + WL;
  /* 64 bytes between positions beyond their C or M rows: where C * ld or M * ld floats are a
   * multiple of 4 KiB a transform step's wa stores (or loads) otherwise share one cache set (32 ->
   * 32 on 160x160 at F(6x6) in blocks of 54 tiles, positions 8 KiB apart, ran 1.4x slower than in
   * blocks of 56) */
  geo.vs = C * geo.ld + 16;
  geo.mst = M * geo.ld + 16;
  /* a slot per part that can run at once: no more than the cores, nor than the blocks */
  geo.slots = p->ctx->cpu.cores > 0 ? p->ctx->cpu.cores : 1;
  if (geo.slots > geo.nb) geo.slots = geo.nb;
  tile->scratch(c, &geo);
  memset(&sub0, 0, sizeof sub0);
  sub0.variant = MI__CONV_PG;
  sub0.simd = c->simd;
  sub0.N = sub0.G = sub0.KH = sub0.KW = 1;
  sub0.H = sub0.W = sub0.OH = sub0.OW = 1;
  sub0.sh = sub0.sw = sub0.dh = sub0.dw = 1;
  sub0.C = C;
  sub0.M = M;
  sub0.pg_ek = MI__EK_NONE;
  sub0.scale = c->scale;
  sub0.shift = c->shift;
  if (tile->bf16) { /* conv.packed_gemm_bf16's "nv" tiles: 8-row panels of BF16 pairs, a float's bytes each */
    sub0.simd = MI__SIMD_AVX512;
    sub0.pg_mr = mi__blis_pg_panel(MI__SIMD_AVX512, 0);
    packed = (mi__blis_pgb_packed_pairs(&sub0) + 15) / 16 * 16;
  } else {
    sub0.pg_mr = mi__blis_pg_panel(c->simd, 0);
    packed = (mi__blis_pg_packed_floats(&sub0) + 15) / 16 * 16;
  }
  busy = ((uint64_t)geo.slots * sizeof(atomic_int) + 63) / 64 * 16;
  total = hdr + busy + WP * packed + (uint64_t)geo.slots * (uint64_t)geo.slot_fl;
  if (!(s->aux = mi__blis_calloc(p->ctx, total * sizeof(float))))
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  wn = s->aux;
  *wn = geo;
  wn->busy = (atomic_int *)((float *)s->aux + hdr);
  for (pos = 0; pos < wn->slots; pos++) atomic_init(&wn->busy[pos], 0);
  packed0 = (float *)s->aux + hdr + busy;
  wn->slot = packed0 + WP * packed;
  if (!(tmp = mi__blis_alloc(p->ctx, (uint64_t)(WP * M * C) * sizeof(float)))) {
    mi__blis_free(p->ctx, s->aux);
    s->aux = NULL;
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: out of memory");
  }
  for (m = 0; m < M; m++)
    for (ci = 0; ci < C; ci++) {
      weight_tf(tile->g, WA, w + (m * C + ci) * 9, u);
      for (pos = 0; pos < WP; pos++) tmp[(pos * M + m) * C + ci] = (float)u[pos];
    }
  for (pos = 0; pos < WP; pos++) {
    wn->sub[pos] = sub0;
    if (tile->bf16) {
      wn->sub[pos].packed_b = (uint32_t *)(void *)(packed0 + pos * packed);
      mi__blis_pgb_pack(&wn->sub[pos], tmp + pos * M * C);
    } else {
      wn->sub[pos].packed = packed0 + pos * packed;
      mi__blis_pg_pack(&wn->sub[pos], tmp + pos * M * C, 0);
    }
  }
  mi__blis_free(p->ctx, tmp);
  /* the transformed panels are all the kernel reads */
  mi__blis_drop_const(p, c->w);
  s->run = run_wino;
  return MI_OK;
}
