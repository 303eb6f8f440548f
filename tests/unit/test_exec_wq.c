/* test_exec_wq.c - weight-only quantized MatMul / Gemm on blis-cpu (MI_FUSE_DQ, plugins/blis_cpu/blis_wq.c):
 * a DequantizeLinear of constant INT8/UINT8 codes feeding B runs with its MatMul as one kernel on the
 * codes (the session's kernel holds both nodes), at every SIMD cap, for M = 1..7 rows, odd K and N,
 * per-tensor and per-column scales, zero points 0 and not, within 1e-5 relative L2 of the reference
 * interpreter; Gemm with transB and with C, alpha and beta too; what the kernel refuses (more rows than
 * its GEMV takes, a few rows on small weights by default, per-row scales) runs on the folded weights, still right. */
#include "test_exec_util.h"

typedef struct wspec {
  int64_t m, k, n;
  int sgn;     /* INT8 codes (else UINT8) */
  int per_col; /* one scale (and zero point) per output column; axis 0: per row of K instead */
  int zp;      /* a nonzero zero point */
  int rank3;   /* A as [1, M, K] */
  int gemm;    /* a Gemm instead of the MatMul */
  int axis0;   /* per-axis scales along K (the kernel refuses them) */
  int trans_b; /* Gemm transB = 1, codes [N, K] */
  int bias;    /* Gemm C [N], alpha 0.5, beta 2 */
} wspec_t;

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static mi_graph_t *wq_graph(const wspec_t *sp) {
  mi_graph_t *g = mi_graph_create("wq");
  int64_t xd[3] = {1, sp->m, sp->k}, wd[2] = {sp->trans_b ? sp->n : sp->k, sp->trans_b ? sp->k : sp->n};
  int64_t nch = sp->axis0 ? sp->k : sp->per_col ? sp->n
                                                : 1,
          cd[1] = {nch};
  uint8_t codes[64 * 200], zps[200];
  float sc[200];
  uint64_t seed = 1234 + (uint64_t)(sp->m * 7 + sp->k * 13 + sp->n);
  int32_t x, w, s, z, wf, y, n;
  mi_error_t err = {0};
  int32_t dt = sp->sgn ? MI_DTYPE_INT8 : MI_DTYPE_UINT8;
  g->opset = 13;
  for (int64_t i = 0; i < sp->k * sp->n; i++) codes[i] = (uint8_t)lcg(&seed);
  for (int64_t c = 0; c < nch; c++) {
    sc[c] = 0.002f + 0.0001f * (float)(lcg(&seed) % 100);
    zps[c] = sp->zp ? (uint8_t)(sp->sgn ? (int8_t)((int)(lcg(&seed) % 21) - 10) : (uint8_t)(118 + lcg(&seed) % 21)) : 0;
  }
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, sp->rank3 ? 3 : 2, sp->rank3 ? xd : xd + 1);
  mi_graph_add_input(g, x);
  w = mi_graph_add_tensor(g, "w_q", dt, 2, wd);
  mi_graph_set_data(g, w, codes, (size_t)(sp->k * sp->n));
  s = nch == 1 ? mi_graph_add_const_f32(g, "w_scale", 0, NULL, sc) : mi_graph_add_const_f32(g, "w_scale", 1, cd, sc);
  z = mi_graph_add_tensor(g, "w_zp", dt, nch == 1 ? 0 : 1, cd);
  mi_graph_set_data(g, z, zps, (size_t)nch);
  wf = mi_graph_add_tensor(g, "w", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "DequantizeLinear", "w_dq", 3, (int32_t[]){w, s, z}, 1, (int32_t[]){wf});
  if (nch > 1) mi_node_set_int(g, n, "axis", sp->axis0 ? (sp->trans_b ? 1 : 0) : (sp->trans_b ? 0 : 1));
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  if (sp->bias) {
    float cv[200];
    int64_t nd[1] = {sp->n};
    for (int64_t j = 0; j < sp->n; j++) cv[j] = 0.01f * (float)(j % 17) - 0.08f;
    n = mi_graph_add_node(g, "Gemm", "mm", 3, (int32_t[]){x, wf, mi_graph_add_const_f32(g, "c", 1, nd, cv)}, 1,
                          (int32_t[]){y});
    mi_node_set_float(g, n, "alpha", 0.5f);
    mi_node_set_float(g, n, "beta", 2.0f);
  } else {
    n = mi_graph_add_node(g, sp->gemm ? "Gemm" : "MatMul", "mm", 2, (int32_t[]){x, wf}, 1, (int32_t[]){y});
  }
  if (sp->trans_b) mi_node_set_int(g, n, "transB", 1);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("weight-only graph", &err);
  return g;
}

/* Runs sp on p; returns the nodes of the session's kernel that runs the MatMul (2: the DQ with it). */
static int32_t check(mi_plugin_t *p, const wspec_t *sp, int32_t threads, int no_auto_fuse) {
  mi_graph_t *g = wq_graph(sp);
  mi_array_t *x = input_for(g, 11), *got[4] = {0}, *want[4] = {0};
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_options_t o;
  mi_session_t *s;
  int32_t members = 0;
  double d;
  memset(&o, 0, sizeof o);
  o.no_auto_fuse = no_auto_fuse;
  o.device_knob_count = 1;
  o.device_knobs = &th;
  s = session_opts(g, p, o);
  for (int32_t i = 0; i < mi_session_kernel_count(s); i++) {
    const int32_t *nodes;
    int32_t c = mi_session_kernel_nodes(s, i, &nodes);
    for (int32_t j = 0; j < c; j++)
      if (!strcmp(g->nodes[nodes[j]].op_type, sp->gemm ? "Gemm" : "MatMul")) members = c;
  }
  run(s, g, x, got);
  ref(g, x, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("M%lld K%lld N%lld %s %s zp%d%s%s%s%s t%d%s: kernel of %d nodes, rel L2 %.2e\n", (long long)sp->m,
         (long long)sp->k, (long long)sp->n, sp->sgn ? "int8" : "uint8", sp->axis0 ? "per-row" : sp->per_col ? "per-col"
                                                                                                             : "per-tensor",
         sp->zp, sp->rank3 ? " 3-D" : "", sp->gemm ? " Gemm" : "", sp->trans_b ? " transB" : "", sp->bias ? " C" : "", threads,
         no_auto_fuse ? " unfused" : "", members, d);
  CHECK(d < 1e-5, "rel L2 %.3e", d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(x);
  mi_graph_destroy(g);
  return members;
}

static void on_plugin(mi_plugin_t *p) {
  /* N: under one vector, a masked tail, several blocks and a tail; K odd */
  static const int64_t kn[][2] = {{37, 5}, {19, 83}, {45, 150}};
  for (int64_t m = 1; m <= 7; m++)
    for (size_t i = 0; i < sizeof kn / sizeof kn[0]; i++)
      for (int f = 0; f < 8; f++) {
        wspec_t sp = {m, kn[i][0], kn[i][1], f & 1, (f >> 1) & 1, (f >> 2) & 1, (int)(m & 1), 0, 0, 0, 0};
        CHECK(check(p, &sp, (int32_t)(1 + (m + f) % 2), 0) == 2, "the DequantizeLinear runs in the MatMul's kernel");
      }
  for (int f = 0; f < 4; f++) { /* Gemm: plain, transB (per-column scales on axis 0), with C, both */
    wspec_t sp = {3, 45, 150, f & 1, 1, 1, 0, 1, 0, f & 1, (f >> 1) & 1};
    CHECK(check(p, &sp, 2, 0) == 2, "the DequantizeLinear runs in the Gemm's kernel");
    CHECK(check(p, &sp, 2, 1) == 1, "without the session's groups the weights are folded");
  }
  {
    wspec_t big = {9, 45, 150, 0, 1, 1, 0, 0, 0, 0, 0};  /* over the GEMV's rows: folded */
    wspec_t rows = {2, 45, 150, 1, 1, 1, 0, 0, 1, 0, 0}; /* scales along K: folded */
    CHECK(check(p, &big, 1, 0) == 1, "9 rows: the MatMul on the folded weights");
    CHECK(check(p, &rows, 1, 0) == 1, "per-row scales: the MatMul on the folded weights");
  }
}

static void blis_cpu(void) {
  setenv("MI_BLIS_WQ_HOT_BYTES", "0", 1); /* 2..7 rows on the codes whatever the weights' size */
  on_blis_cpu_each_simd(on_plugin);
  unsetenv("MI_BLIS_WQ_HOT_BYTES");
}

/* By default a few rows on small float weights run folded, one row on the codes. */
static void hot_rule(void) {
  mi_registry_t *reg = open_plugins();
  mi_plugin_t *p = mi_registry_find(reg, "blis-cpu");
  wspec_t one = {1, 45, 150, 0, 1, 1, 0, 0, 0, 0, 0}, four = {4, 45, 150, 0, 1, 1, 0, 0, 0, 0, 0};
  CHECK(p != NULL, "blis-cpu is loaded");
  if (p) {
    CHECK(check(p, &one, 1, 0) == 2, "one row: on the codes");
    CHECK(check(p, &four, 1, 0) == 1, "four rows on 27 KB of float weights: folded");
  }
  mi_registry_destroy(reg);
}

/* The group's anchor is its MatMul, not the DequantizeLinear that comes first in it: the step's
 * time is the MatMul's (the layer tasks and the profile read it there; it was the
 * DequantizeLinear's, so a tuned MatMul's task found no time), its profile row is named after it,
 * and its choice (read from the same anchor in prepare.c) reaches the group's kernel: a knob value
 * the device rejects fails the session. */
static void anchor(void) {
  mi_registry_t *reg = open_plugins();
  mi_plugin_t *p = mi_registry_find(reg, "blis-cpu");
  wspec_t one = {1, 45, 150, 0, 1, 1, 0, 0, 0, 0, 0};
  mi_graph_t *g = wq_graph(&one);
  mi_array_t *x = input_for(g, 5), *got[4] = {0};
  mi_knob_value_t bad = {"simd", 99, 0};
  mi_node_choice_t ch;
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  int32_t dq = -1, mm = -1;
  uint64_t wall = 0;
  CHECK(p != NULL, "blis-cpu is loaded");
  if (!p) goto done;
  for (int32_t n = 0; n < g->node_count; n++) {
    if (!strcmp(g->nodes[n].name, "w_dq")) dq = n;
    if (!strcmp(g->nodes[n].name, "mm")) mm = n;
  }
  memset(&o, 0, sizeof o);
  o.per_node_timing = 1;
  s = session_opts(g, p, o);
  run(s, g, x, got);
  CHECK(mi_session_node_time(s, mm, &wall, NULL) >= 1 && wall > 0, "the group's time is the MatMul's");
  CHECK(mi_session_node_time(s, dq, NULL, NULL) == 0, "the DequantizeLinear has no step of its own");
  { /* the profile's row: named after the MatMul, with its inputs' shapes */
    double ms[8];
    mi_layer_row_t *rows = NULL;
    int32_t nr = 0, seen = 0;
    for (int32_t n = 0; n < g->node_count && n < 8; n++)
      ms[n] = mi_session_node_time(s, n, &wall, NULL) ? (double)wall / 1e6 : -1;
    CHECK(mi_layer_rows(g, s, NULL, ms, &rows, &nr, &err) == MI_OK, "rows: %s", err.message);
    for (int32_t r = 0; r < nr; r++)
      seen += !strcmp(rows[r].name, "mm") && !strcmp(rows[r].op, "DequantizeLinear+MatMul") &&
              !strcmp(rows[r].shapes, "1x45,45x150 -> 1x150");
    CHECK(seen == 1 && nr == 1, "one row, 'mm' (%s, %s)", nr ? rows[0].name : "-", nr ? rows[0].shapes : "-");
    free(rows);
  }
  mi_session_destroy(s);
  s = NULL;
  memset(&ch, 0, sizeof ch);
  ch.node = "mm";
  ch.knob_count = 1;
  ch.knobs = &bad;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1;
  o.choice_count = 1;
  o.choices = &ch;
  CHECK(mi_session_create(g, p, 0, &o, &s, &err) != MI_OK && strstr(err.message, "simd"),
        "the MatMul's choice reaches the group's kernel: %s", err.message);
  mi_session_destroy(s);
done:
  for (int i = 0; i < 4; i++) mi_array_destroy(got[i]);
  mi_array_destroy(x);
  mi_graph_destroy(g);
  mi_registry_destroy(reg);
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu), TU_CASE(hot_rule), TU_CASE(anchor)};

TU_MAIN(setup, teardown)
