/* test_exec_fused.c - fused groups (mi_node_t.group from the fusion pass) run as one kernel:
 * fewer kernels, the same outputs as the unfused graph on blis-cpu (and opencl / vulkan when
 * they load), and a group the device refuses is recorded and runs node by node. A graph no
 * fusion pass grouped gets the session's own groups: the elementwise chains after its convs
 * as written by real exporters (scalar affine, hard-swish spelled out, constant clamps). */
#include "test_exec_util.h"

static int32_t group_stats(const mi_graph_t *g, int32_t *nodes) {
  int32_t max = -1;
  *nodes = 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    if (g->nodes[i].group > max) max = g->nodes[i].group;
    *nodes += g->nodes[i].group >= 0;
  }
  return max + 1;
}

static void fused_vs_unfused(mi_plugin_t *p, const char *family, double width, int32_t depth) {
  mi_graph_t *g = zoo(family, width, depth, 32);
  mi_graph_t *plain = transform(g, "passes: {fold_bn: true}\n", NULL);
  mi_graph_t *fused = transform(g, "passes: {fold_bn: true, fuse: true}\n", p);
  mi_array_t *x = input_for(g, 11), *o1[4] = {0}, *o2[4] = {0}, *want[4] = {0};
  mi_session_t *s1, *s2;
  int32_t grouped, groups = group_stats(fused, &grouped), k1, k2;
  double d_fused, d_ref;
  if (groups == 0) {
    printf("%s %s: the plugin declares no fusable patterns; nothing to fuse\n", p->name, family);
    goto done;
  }
  s1 = session_plain(plain, p);
  s2 = session(fused, p);
  run(s1, plain, x, o1);
  run(s2, fused, x, o2);
  ref(plain, x, want);
  k1 = mi_session_kernel_count(s1);
  k2 = mi_session_kernel_count(s2);
  d_fused = tu_rel_l2_arrays(o2[0], o1[0]);
  d_ref = tu_rel_l2_arrays(o2[0], want[0]);
  printf(
      "%s %s: %d groups of %d nodes; kernels %d unfused, %d fused (%d multi-node), %d refused;"
      " rel L2 fused vs unfused %.2e, vs reference %.2e\n",
      p->name, family, groups, grouped,
      k1, k2, multi_node_kernels(s2), mi_session_unfused_count(s2), d_fused, d_ref);
  for (int32_t i = 0; i < mi_session_unfused_count(s2); i++)
    printf("  not fused: %s\n", mi_session_unfused(s2, i));
  CHECK(d_fused < 1e-5, "%s %s: fused vs unfused %.3e", p->name, family, d_fused);
  CHECK(mi_session_fallback_count(s1) == mi_session_fallback_count(s2), "same host fallbacks");
  if (mi_session_unfused_count(s2) == 0) {
    /* every group of n nodes replaced n kernels by one */
    CHECK(k1 - k2 == grouped - groups, "%s %s: %d - %d kernels, want %d fewer", p->name, family,
          k1, k2, grouped - groups);
    CHECK(multi_node_kernels(s2) == groups, "one kernel per group");
  } else {
    CHECK(k2 <= k1, "refused groups must not add kernels");
  }
  if (strcmp(p->name, "blis-cpu") == 0)
    CHECK(mi_session_unfused_count(s2) == 0 && k2 < k1, "blis-cpu implements fused epilogues");
  for (int i = 0; i < 4; i++) {
    mi_array_destroy(o1[i]);
    mi_array_destroy(o2[i]);
    mi_array_destroy(want[i]);
  }
  mi_session_destroy(s1);
  mi_session_destroy(s2);
done:
  mi_array_destroy(x);
  mi_graph_destroy(fused);
  mi_graph_destroy(plain);
  mi_graph_destroy(g);
}

/* Groups formed for blis-cpu, on a device that refuses them (npu-stub takes no NHWC): every
 * refusal is recorded and the nodes still give the reference's result. */
static void refused_groups(mi_plugin_t *blis, mi_plugin_t *npu) {
  mi_graph_t *g = zoo("resnet", 0.5, 2, 32);
  mi_graph_t *x = transform(g, "passes: {fold_bn: true, fuse: true, layout: nhwc}\n", blis);
  mi_array_t *in = input_for(g, 12), *got[4] = {0}, *want[4] = {0};
  mi_session_t *s = session(x, npu);
  int32_t grouped, groups = group_stats(x, &grouped);
  double d;
  run(s, x, in, got);
  ref(x, in, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("npu-stub refused %d of %d groups; rel L2 vs reference %.2e (FP16 path)\n",
         mi_session_unfused_count(s), groups, d);
  CHECK(groups > 0 && mi_session_unfused_count(s) == groups, "every group refused and recorded");
  for (int32_t i = 0; i < mi_session_unfused_count(s); i++)
    CHECK(strstr(mi_session_unfused(s, i), "ran node by node") != NULL, "%s",
          mi_session_unfused(s, i));
  CHECK(multi_node_kernels(s) == 0, "no multi-node kernel left");
  CHECK(d < 2e-2, "rel L2 %.3e", d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(x);
  mi_graph_destroy(g);
}

/* v[i] uniform in [-h, h) (h = 1 or 0.5) from a 64-bit LCG started at seed: weights and constants. */
static void fill_uniform(float *v, int n, uint64_t seed, float h) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((seed >> 40) & 0xffff) / 65536.0f * 2.0f * h - h;
  }
}

/* A session of g on p at the given threads knob (host fallback allowed), with nc node choices. */
static mi_session_t *session_at(mi_graph_t *g, mi_plugin_t *p, mi_knob_value_t *threads, int32_t nc,
                                mi_node_choice_t *choices) {
  mi_session_options_t o;
  memset(&o, 0, sizeof o);
  o.device_knob_count = 1;
  o.device_knobs = threads;
  o.choice_count = nc;
  o.choices = choices;
  return session_opts(g, p, o);
}

/* g (built, not yet sorted) at `threads` on p: want_k kernels and the reference's result; frees g. */
static void check_blocks(mi_graph_t *g, mi_plugin_t *p, int32_t threads, uint64_t in_seed, int32_t want_k,
                         const char *what) {
  mi_array_t *in, *got[4] = {0}, *want[4] = {0};
  mi_knob_value_t th = {"threads", threads, 0};
  mi_error_t err = {0};
  mi_session_t *s;
  double d;
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die(what, &err);
  in = input_for(g, in_seed);
  s = session_at(g, p, &th, 0, NULL);
  run(s, g, in, got);
  ref(g, in, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s %s, %d threads: %d kernels, rel L2 vs reference %.2e\n", p->name, what, threads,
         mi_session_kernel_count(s), d);
  CHECK(mi_session_kernel_count(s) == want_k, "%s: %d kernels, want %d", what, mi_session_kernel_count(s), want_k);
  CHECK(d < 1e-5, "%s: rel L2 %.3e", what, d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

/* Conv -> Mul(a) -> Add(b) -> x * clip(x + 3, 0, 6) / 6 -> Max(c) -> LeakyRelu -> Add(residual)
 * and a second conv -> BatchNormalization -> Relu6 as Min(Max(x, 0), 6): with no group in the
 * graph, the default session runs each chain in its conv's kernel (2 kernels, was 14 before the
 * session fused on its own) with the reference's result; no_auto_fuse keeps one per node. */
/* The end of a case that ran a fused and an unfused session (s, s0) of g on in: their outputs,
 * the reference's, the sessions, the input and the graph freed. */
static void free_fused_plain(mi_array_t **got, mi_array_t **plain, mi_array_t **want, mi_session_t *s,
                             mi_session_t *s0, mi_array_t *in, mi_graph_t *g) {
  for (int i = 0; i < 4; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(plain[i]);
    mi_array_destroy(want[i]);
  }
  mi_session_destroy(s);
  mi_session_destroy(s0);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

static void auto_fused(mi_plugin_t *p) {
  mi_graph_t *g = mi_graph_create("auto");
  int64_t xd[4] = {1, 4, 9, 11}, wd[4] = {8, 4, 3, 3}, one[1] = {1}, cd[1] = {8};
  float v[640]; /* w at v, w2 at v + 300 (288 values each), per-channel vectors, scalars */
  uint64_t seed = 5;
  int32_t x, w, n = 0, k0, k1;
  mi_array_t *in, *got[4] = {0}, *plain[4] = {0}, *want[4] = {0};
  mi_session_t *s, *s0;
  mi_error_t err = {0};
  double d;
  g->opset = 13;
  fill_uniform(v, 640, seed, 1.0f);
#define SCALAR(name, val) (v[500] = (val), mi_graph_add_const_f32(g, name, 1, one, &v[500]))
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define NODE(op, nm, nin, ins, out) (n++, mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){out}))
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  w = mi_graph_add_const_f32(g, "w", 4, wd, v);
  {
    int32_t c0 = T("c0"), m = T("m"), a = T("a"), h1 = T("h1"), h2 = T("h2"), h3 = T("h3");
    int32_t h4 = T("h4"), mx = T("mx"), lr = T("lr"), res = T("res");
    int32_t three = SCALAR("three", 3.f), zero = SCALAR("zero", 0.f), six = SCALAR("six", 6.f);
    int32_t sa = SCALAR("sa", 1.25f), sb = SCALAR("sb", -0.5f), cmax = SCALAR("cmax", -0.25f);
    int32_t w2 = mi_graph_add_const_f32(g, "w2", 4, wd, v + 300), r2 = T("r2"), bn = T("bn");
    int32_t q1 = T("q1"), y = T("y");
    int32_t sc = mi_graph_add_const_f32(g, "sc", 1, cd, v + 100), bi = mi_graph_add_const_f32(g, "bi", 1, cd, v + 110);
    int32_t mu = mi_graph_add_const_f32(g, "mu", 1, cd, v + 120), var;
    float pos[8];
    for (int i = 0; i < 8; i++) pos[i] = 0.5f + v[130 + i] * v[130 + i];
    var = mi_graph_add_const_f32(g, "var", 1, cd, pos);
    NODE("Conv", "conv", 2, ((int32_t[]){x, w}), c0);
    NODE("Mul", "lab_mul", 2, ((int32_t[]){sa, c0}), m);
    NODE("Add", "lab_add", 2, ((int32_t[]){m, sb}), a);
    NODE("Add", "hs_add", 2, ((int32_t[]){a, three}), h1);
    NODE("Clip", "hs_clip", 3, ((int32_t[]){h1, zero, six}), h2);
    NODE("Mul", "hs_mul", 2, ((int32_t[]){a, h2}), h3);
    NODE("Div", "hs_div", 2, ((int32_t[]){h3, six}), h4);
    NODE("Max", "clamp", 2, ((int32_t[]){h4, cmax}), mx);
    NODE("LeakyRelu", "leaky", 1, ((int32_t[]){mx}), lr);
    NODE("Conv", "conv2", 2, ((int32_t[]){x, w2}), r2);
    NODE("BatchNormalization", "bn", 5, ((int32_t[]){r2, sc, bi, mu, var}), bn);
    NODE("Max", "relu6_lo", 2, ((int32_t[]){bn, zero}), q1);
    NODE("Min", "relu6_hi", 2, ((int32_t[]){q1, six}), res);
    NODE("Add", "residual", 2, ((int32_t[]){lr, res}), y);
    mi_graph_add_output(g, y);
  }
#undef SCALAR
#undef T
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("auto graph", &err);
  in = input_for(g, 21);
  s = session(g, p);
  s0 = session_plain(g, p);
  run(s, g, in, got);
  run(s0, g, in, plain);
  ref(g, in, want);
  k0 = mi_session_kernel_count(s0);
  k1 = mi_session_kernel_count(s);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf(
      "%s auto groups: %d kernels (%d with no_auto_fuse), %d refused, rel L2 vs reference "
      "%.2e\n",
      p->name, k1, k0, mi_session_unfused_count(s), d);
  CHECK(k0 == n, "no_auto_fuse: one kernel per node, got %d of %d", k0, n);
  CHECK(k1 == 2 && multi_node_kernels(s) == 2, "two chains, two kernels: got %d", k1);
  CHECK(mi_session_unfused_count(s) == 0, "no group refused");
  CHECK(d < 1e-5, "rel L2 %.3e", d);
  CHECK(tu_rel_l2_arrays(plain[0], want[0]) < 1e-5, "plain session matches too");
  free_fused_plain(got, plain, want, s, s0, in, g);
}

/* Depthwise-separable blocks as MobileNet/BlazeFace exports write them: a depthwise 3x3 conv
 * (+ bias, Relu) read only by a pointwise conv (+ bias, the block's input added, Relu), then a
 * stride-2 depthwise conv with a channel multiplier of 2 read by a pointwise conv to 24
 * channels, then one whose depthwise result is read twice (no fusion there). Planes large
 * enough that blis-cpu's one-pass kernel splits them into several bands of rows, the last one
 * short. The default session runs each of the first two blocks as one kernel (4 kernels
 * before MI_FUSE_CONV), the third as two, with the reference's result.
 * With `own` choices the pointwise convs carry variants of their own, as a tuned configuration
 * names them: pw1 conv.packed_gemm (the one-pass kernel's), pw2 conv.1x1_gemm (a BLIS sgemm
 * the one pass cannot take, so the group runs it as a second step of the same kernel). The
 * groups stay (MI_FUSE_MEMBER_CHOICES: each member runs with its own choice), with the
 * reference's result. own == 2 adds threads=threads+1 to pw2's choice, which one kernel cannot
 * honour: that group is refused cleanly and its nodes run one kernel each. */
static void auto_dwpw(mi_plugin_t *p, int32_t threads, int own) {
  mi_graph_t *g = mi_graph_create("dwpw");
  int64_t xd[4] = {1, 32, 30, 37}, w1d[4] = {32, 1, 3, 3}, p1d[4] = {32, 32, 1, 1}, w2d[4] = {64, 1, 3, 3};
  int64_t p2d[4] = {24, 64, 1, 1}, w3d[4] = {24, 1, 3, 3}, p3d[4] = {8, 24, 1, 1}, b32[1] = {32};
  int64_t b24[1] = {24}, pad1[4] = {1, 1, 1, 1}, st2[2] = {2, 2};
  static float v[4096];
  uint64_t seed = 9;
  int32_t n, k;
  mi_array_t *in, *got[4] = {0}, *want[4] = {0};
  mi_session_t *s;
  mi_error_t err = {0};
  mi_knob_value_t th = {"threads", threads, 0}, th2 = {"threads", threads + 1, 0};
  mi_node_choice_t ch[2] = {{"pw1", "conv.packed_gemm", 0, NULL}, {"pw2", "conv.1x1_gemm", own == 2, &th2}};
  int32_t want_k = own == 2 ? 7 : 6;
  double d;
  g->opset = 13;
  fill_uniform(v, 4096, seed, 0.5f);
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define C(name, r, d, off) mi_graph_add_const_f32(g, name, r, d, v + (off))
#define NODE(op, nm, nin, ins, out) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){out})
  {
    int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), d1 = T("d1"), r1 = T("r1"), q1 = T("q1");
    int32_t a1 = T("a1"), y1 = T("y1"), d2 = T("d2"), y2 = T("y2"), d3 = T("d3"), y3 = T("y3"), e3 = T("e3");
    int32_t out = T("out");
    mi_graph_add_input(g, x);
    n = NODE("Conv", "dw1", 3, ((int32_t[]){x, C("w1", 4, w1d, 0), C("b1", 1, b32, 300)}), d1);
    mi_node_set_int(g, n, "group", 32);
    mi_node_set_ints(g, n, "pads", 4, pad1);
    NODE("Relu", "relu1", 1, ((int32_t[]){d1}), r1);
    NODE("Conv", "pw1", 3, ((int32_t[]){r1, C("p1", 4, p1d, 400), C("c1", 1, b32, 1500)}), q1);
    NODE("Add", "res1", 2, ((int32_t[]){x, q1}), a1);
    NODE("Relu", "relu1b", 1, ((int32_t[]){a1}), y1);
    n = NODE("Conv", "dw2", 2, ((int32_t[]){y1, C("w2", 4, w2d, 1600)}), d2);
    mi_node_set_int(g, n, "group", 32);
    mi_node_set_ints(g, n, "pads", 4, pad1);
    mi_node_set_ints(g, n, "strides", 2, st2);
    NODE("Conv", "pw2", 3, ((int32_t[]){d2, C("p2", 4, p2d, 2200), C("c2", 1, b24, 3800)}), y2);
    n = NODE("Conv", "dw3", 2, ((int32_t[]){y2, C("w3", 4, w3d, 3850)}), d3);
    mi_node_set_int(g, n, "group", 24);
    mi_node_set_ints(g, n, "pads", 4, pad1);
    NODE("Conv", "pw3", 2, ((int32_t[]){d3, C("p3", 4, p3d, 3000)}), y3);
    NODE("ReduceMean", "second_reader", 1, ((int32_t[]){d3}), e3);
    NODE("Add", "sum", 2, ((int32_t[]){y3, e3}), out);
    mi_graph_add_output(g, out);
  }
#undef T
#undef C
#undef NODE
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("dwpw graph", &err);
  in = input_for(g, 23);
  s = session_at(g, p, &th, own ? 2 : 0, ch);
  run(s, g, in, got);
  ref(g, in, want);
  k = mi_session_kernel_count(s);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s dw+pw blocks, %d threads, %s: %d kernels, %d refused, rel L2 vs reference %.2e\n", p->name,
         threads, own == 2 ? "pw2 asks its own threads" : own ? "pointwise variants named"
                                                              : "default",
         k,
         mi_session_unfused_count(s), d);
  /* [dw1 relu1 pw1 res1 relu1b] [dw2 pw2] [dw3] [pw3] [second_reader] [sum]; refused: [dw2] [pw2] */
  CHECK(k == want_k, "dw+pw blocks as one kernel each: got %d kernels, want %d", k, want_k);
  CHECK(mi_session_unfused_count(s) == (own == 2), "groups refused: %d, want %d", mi_session_unfused_count(s),
        own == 2);
  if (own == 2 && mi_session_unfused_count(s) == 1)
    CHECK(strstr(mi_session_unfused(s, 0), "pw2") != NULL, "the refusal names the member: %s", mi_session_unfused(s, 0));
  CHECK(d < 1e-5, "rel L2 %.3e", d);
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(g);
}

/* Wide depthwise-separable blocks: 96 channels on 100-wide planes (stride 1), then on 50-wide
 * ones (stride 2). A band of 4 such rows is over 64 KiB, so the one-pass kernel takes them only
 * with the larger band an L2 of 1 MiB or more allows (blis_dwpw.c): several bands, the last one
 * short. Same result as the reference either way. */
static void wide_dwpw(mi_plugin_t *p, int32_t threads) {
  mi_graph_t *g = mi_graph_create("wide_dwpw");
  int64_t xd[4] = {1, 96, 24, 100}, wd[4] = {96, 1, 3, 3}, p1d[4] = {96, 96, 1, 1}, p2d[4] = {24, 96, 1, 1};
  int64_t b96[1] = {96}, b24[1] = {24}, pad1[4] = {1, 1, 1, 1}, st2[2] = {2, 2};
  static float v[12288];
  int32_t n;
  g->opset = 13;
  fill_uniform(v, 12288, 17, 0.5f);
#define T(name) mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL)
#define C(name, r, d, off) mi_graph_add_const_f32(g, name, r, d, v + (off))
#define NODE(op, nm, nin, ins, out) mi_graph_add_node(g, op, nm, nin, ins, 1, (int32_t[]){out})
  {
    int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), d1 = T("d1"), r1 = T("r1"), y1 = T("y1");
    int32_t d2 = T("d2"), out = T("out");
    mi_graph_add_input(g, x);
    n = NODE("Conv", "dw1", 3, ((int32_t[]){x, C("w1", 4, wd, 0), C("b1", 1, b96, 900)}), d1);
    mi_node_set_int(g, n, "group", 96);
    mi_node_set_ints(g, n, "pads", 4, pad1);
    NODE("Relu", "relu1", 1, ((int32_t[]){d1}), r1);
    NODE("Conv", "pw1", 3, ((int32_t[]){r1, C("p1", 4, p1d, 1000), C("c1", 1, b96, 10300)}), y1);
    n = NODE("Conv", "dw2", 2, ((int32_t[]){y1, C("w2", 4, wd, 10400)}), d2);
    mi_node_set_int(g, n, "group", 96);
    mi_node_set_ints(g, n, "pads", 4, pad1);
    mi_node_set_ints(g, n, "strides", 2, st2);
    NODE("Conv", "pw2", 3, ((int32_t[]){d2, C("p2", 4, p2d, 9000), C("c2", 1, b24, 11400)}), out);
    mi_graph_add_output(g, out);
  }
#undef T
#undef C
#undef NODE
  check_blocks(g, p, threads, 29, 2, "wide dw+pw blocks (one kernel a block)");
}

/* A block whose bands hold rows of a 128-wide plane in C channels (BlazeFace's 24, 4 rows a band):
 * a multiple of 512 pixels a channel, which the band spaces out by one cache line more so that the
 * pointwise GEMM reads it in place (blis_dwpw.c, band_ld), then a last band of 2 rows (256 pixels,
 * no spacing). M pointwise outputs: 20 leaves a last row panel of 2 rows at AVX2 (panels of 6) and
 * of 4 at AVX-512 (panels of 8). Same result as the reference. */
static void aligned_dwpw(mi_plugin_t *p, int32_t threads, int64_t C, int64_t M) {
  mi_graph_t *g = mi_graph_create("aligned_dwpw");
  int64_t xd[4] = {1, C, 22, 128}, wd[4] = {C, 1, 3, 3}, pd[4] = {M, C, 1, 1}, b24[1] = {C}, bm[1] = {M};
  int64_t pad1[4] = {1, 1, 1, 1};
  static float v[1024];
  char what[96];
  int32_t n;
  g->opset = 13;
  fill_uniform(v, 1024, 23, 0.5f);
  {
    int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
    int32_t d1 = mi_graph_add_tensor(g, "d1", MI_DTYPE_FLOAT32, -1, NULL);
    int32_t y1 = mi_graph_add_tensor(g, "y1", MI_DTYPE_FLOAT32, -1, NULL);
    int32_t w1 = mi_graph_add_const_f32(g, "w1", 4, wd, v), b1 = mi_graph_add_const_f32(g, "b1", 1, b24, v + 216);
    int32_t p1 = mi_graph_add_const_f32(g, "p1", 4, pd, v + 240), c1 = mi_graph_add_const_f32(g, "c1", 1, bm, v + 816);
    mi_graph_add_input(g, x);
    n = mi_graph_add_node(g, "Conv", "dw1", 3, (int32_t[]){x, w1, b1}, 1, (int32_t[]){d1});
    mi_node_set_int(g, n, "group", C);
    mi_node_set_ints(g, n, "pads", 4, pad1);
    mi_graph_add_node(g, "Conv", "pw1", 3, (int32_t[]){d1, p1, c1}, 1, (int32_t[]){y1});
    mi_graph_add_output(g, y1);
  }
  snprintf(what, sizeof what, "dw+pw block on 128-wide planes, %d -> %d channels", (int)C, (int)M);
  check_blocks(g, p, threads, 31, 1, what);
}

static mi_registry_t *r;
/* A squeeze-excite gate with its residual as PP-OCRv4's detector writes it: x -> GlobalAveragePool
 * -> Sigmoid -> s, then Mul(x, s) read only by Add(x, that) (operands in either order). The
 * default session runs the Mul and the Add as one kernel (3 kernels, 4 with the product written
 * out), bit for bit the unfused kernels' result (the product rounded, then the sum); a product
 * that is also a graph output keeps its own kernel. */
static void se_mul_add(mi_plugin_t *p, int swap, int product_out) {
  mi_graph_t *g = mi_graph_create("se");
  int64_t xd[4] = {1, 6, 7, 37};
  int32_t x, gp, sg, m, y, k;
  mi_array_t *in, *got[4] = {0}, *plain[4] = {0}, *want[4] = {0};
  mi_session_t *s, *s0;
  mi_error_t err = {0};
  g->opset = 13;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  gp = mi_graph_add_tensor(g, "gp", MI_DTYPE_FLOAT32, -1, NULL);
  sg = mi_graph_add_tensor(g, "sg", MI_DTYPE_FLOAT32, -1, NULL);
  m = mi_graph_add_tensor(g, "m", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "GlobalAveragePool", "gap", 1, &x, 1, &gp);
  mi_graph_add_node(g, "Sigmoid", "gate", 1, &gp, 1, &sg);
  mi_graph_add_node(g, "Mul", "mul", 2, swap ? (int32_t[]){sg, x} : (int32_t[]){x, sg}, 1, &m);
  mi_graph_add_node(g, "Add", "add", 2, swap ? (int32_t[]){m, x} : (int32_t[]){x, m}, 1, &y);
  mi_graph_add_output(g, y);
  if (product_out) mi_graph_add_output(g, m);
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("se graph", &err);
  in = input_for(g, 31);
  s = session(g, p);
  s0 = session_plain(g, p);
  run(s, g, in, got);
  run(s0, g, in, plain);
  ref(g, in, want);
  k = mi_session_kernel_count(s);
  CHECK(k == (product_out ? 4 : 3), "SE Mul -> Add (swap %d, product out %d): %d kernels", swap, product_out, k);
  CHECK(got[0]->nbytes == plain[0]->nbytes && memcmp(got[0]->data, plain[0]->data, plain[0]->nbytes) == 0,
        "SE Mul -> Add (swap %d, product out %d): not the unfused kernels' bits", swap, product_out);
  CHECK(tu_rel_l2_arrays(got[0], want[0]) < 1e-5, "SE Mul -> Add: rel L2 %.3e against the reference",
        tu_rel_l2_arrays(got[0], want[0]));
  free_fused_plain(got, plain, want, s, s0, in, g);
}

/* M-LSD's peak mask: s = Sigmoid(x), m = MaxPool 3x3 (stride 1, pads 1) of s, y = s * Cast(s == m)
 * (and s < m, s > m). The default session runs the comparison and its Cast as one device kernel
 * (no host fallback), bit for bit the result of the unfused session (the comparison on the host,
 * the BOOL -> FLOAT Cast on blis-cpu); a bool result that is also a graph output leaves the
 * comparison to the host and its Cast on the device. */
static void cmp_cast(mi_plugin_t *p, const char *op, int bool_out) {
  mi_graph_t *g = mi_graph_create("peaks");
  int64_t xd[4] = {1, 1, 23, 37}, k3[2] = {3, 3}, pad1[4] = {1, 1, 1, 1};
  int32_t x, sg, mp, e, c, y, n;
  mi_array_t *in, *got[4] = {0}, *plain[4] = {0}, *want[4] = {0};
  mi_session_t *s, *s0;
  mi_error_t err = {0};
  g->opset = 13;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  sg = mi_graph_add_tensor(g, "sg", MI_DTYPE_FLOAT32, -1, NULL);
  mp = mi_graph_add_tensor(g, "mp", MI_DTYPE_FLOAT32, -1, NULL);
  e = mi_graph_add_tensor(g, "e", MI_DTYPE_BOOL, -1, NULL);
  c = mi_graph_add_tensor(g, "c", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Sigmoid", "sig", 1, &x, 1, &sg);
  n = mi_graph_add_node(g, "MaxPool", "pool", 1, &sg, 1, &mp);
  mi_node_set_ints(g, n, "kernel_shape", 2, k3);
  mi_node_set_ints(g, n, "pads", 4, pad1);
  mi_graph_add_node(g, op, "cmp", 2, (int32_t[]){sg, mp}, 1, &e);
  n = mi_graph_add_node(g, "Cast", "cast", 1, &e, 1, &c);
  mi_node_set_int(g, n, "to", MI_DTYPE_FLOAT32);
  mi_graph_add_node(g, "Mul", "mask", 2, (int32_t[]){sg, c}, 1, &y);
  mi_graph_add_output(g, y);
  if (bool_out) mi_graph_add_output(g, e);
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("peaks graph", &err);
  in = input_for(g, 37);
  s = session(g, p);
  s0 = session_plain(g, p);
  run(s, g, in, got);
  run(s0, g, in, plain);
  ref(g, in, want);
  CHECK(mi_session_fallback_count(s) == (bool_out ? 1 : 0), "%s -> Cast (bool out %d): %d host nodes", op, bool_out,
        mi_session_fallback_count(s));
  CHECK(mi_session_kernel_count(s) == 4, "%s -> Cast (bool out %d): %d kernels", op, bool_out,
        mi_session_kernel_count(s));
  CHECK(mi_session_fallback_count(s0) == 1, "%s -> Cast unfused: %d host nodes", op, mi_session_fallback_count(s0));
  for (int i = 0; i < g->output_count; i++)
    CHECK(got[i] && plain[i] && got[i]->nbytes == plain[i]->nbytes &&
              memcmp(got[i]->data, plain[i]->data, plain[i]->nbytes) == 0,
          "%s -> Cast (bool out %d): output %d not the host comparison's bits", op, bool_out, i);
  CHECK(tu_rel_l2_arrays(got[0], want[0]) < 1e-6, "%s -> Cast: rel L2 %.3e against the reference", op,
        tu_rel_l2_arrays(got[0], want[0]));
  free_fused_plain(got, plain, want, s, s0, in, g);
}

/* A detector head as paddle2onnx writes it: (ConvTranspose 2x2/2, or a 3x3 Conv) without bias ->
 * Add of a per-channel constant [1, C, 1, 1] (its bias) -> BatchNormalization -> Relu ->
 * ConvTranspose (bias) -> Add of a scalar -> Sigmoid. The default session runs it as two kernels,
 * the ConvTransposes' chains in their epilogue as the convs' (7 kernels unfused), within 1e-5
 * relative L2 of the reference. */
static void convt_chain(mi_plugin_t *p, int conv) {
  mi_graph_t *g = mi_graph_create("head");
  int64_t xd[4] = {1, 8, 9, 11}, wt[4] = {8, 8, 2, 2}, wc[4] = {8, 8, 3, 3}, cb[4] = {1, 8, 1, 1}, c8[1] = {8},
          w2[4] = {8, 1, 2, 2}, c1[1] = {1}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  static float v[1024];
  float one = 0.75f;
  int32_t x, a, b, c, d, e, f, y, n;
  mi_array_t *in, *got[4] = {0}, *plain[4] = {0}, *want[4] = {0};
  mi_session_t *s, *s0;
  mi_error_t err = {0};
  fill_uniform(v, 1024, 91, 0.5f);
  for (int i = 600; i < 608; i++) v[i] = 0.5f + v[i] * v[i]; /* the variances */
  g->opset = 13;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
#define T(nm) mi_graph_add_tensor(g, nm, MI_DTYPE_FLOAT32, -1, NULL)
  a = T("a");
  b = T("b");
  c = T("c");
  d = T("d");
  e = T("e");
  f = T("f");
  y = T("y");
#undef T
  n = mi_graph_add_node(g, conv ? "Conv" : "ConvTranspose", "up", 2,
                        (int32_t[]){x, mi_graph_add_const_f32(g, "w", 4, conv ? wc : wt, v)}, 1, &a);
  mi_node_set_ints(g, n, conv ? "pads" : "strides", conv ? 4 : 2, conv ? p1 : s2);
  mi_graph_add_node(g, "Add", "bias", 2, (int32_t[]){a, mi_graph_add_const_f32(g, "cb", 4, cb, v + 700)}, 1, &b);
  mi_graph_add_node(g, "BatchNormalization", "bn", 5,
                    (int32_t[]){b, mi_graph_add_const_f32(g, "sc", 1, c8, v + 800), mi_graph_add_const_f32(g, "sh", 1, c8, v + 810),
                                mi_graph_add_const_f32(g, "mean", 1, c8, v + 820), mi_graph_add_const_f32(g, "var", 1, c8, v + 600)},
                    1, &c);
  mi_graph_add_node(g, "Relu", "relu", 1, &c, 1, &d);
  n = mi_graph_add_node(g, "ConvTranspose", "out", 3,
                        (int32_t[]){d, mi_graph_add_const_f32(g, "w2", 4, w2, v + 900), mi_graph_add_const_f32(g, "b2", 1, c1, v + 990)},
                        1, &e);
  mi_node_set_ints(g, n, "strides", 2, s2);
  mi_graph_add_node(g, "Add", "shift", 2, (int32_t[]){e, mi_graph_add_const_f32(g, "one", 0, NULL, &one)}, 1, &f);
  mi_graph_add_node(g, "Sigmoid", "prob", 1, &f, 1, &y);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("head graph", &err);
  in = input_for(g, 17);
  s = session(g, p);
  s0 = session_plain(g, p);
  run(s, g, in, got);
  run(s0, g, in, plain);
  ref(g, in, want);
  CHECK(mi_session_kernel_count(s) == 2, "%s head: %d kernels", conv ? "Conv" : "ConvTranspose",
        mi_session_kernel_count(s));
  CHECK(mi_session_kernel_count(s0) >= 6, "%s head unfused: %d kernels", conv ? "Conv" : "ConvTranspose",
        mi_session_kernel_count(s0));
  CHECK(tu_rel_l2_arrays(got[0], want[0]) < 1e-5, "%s head: rel L2 %.3e against the reference",
        conv ? "Conv" : "ConvTranspose", tu_rel_l2_arrays(got[0], want[0]));
  CHECK(tu_rel_l2_arrays(plain[0], want[0]) < 1e-5, "%s head unfused: rel L2 %.3e", conv ? "Conv" : "ConvTranspose",
        tu_rel_l2_arrays(plain[0], want[0]));
  free_fused_plain(got, plain, want, s, s0, in, g);
}

/* One ConvTranspose (bias or not) -> Relu in one kernel at 1 and 2 threads, against the
 * reference: the 2x2 stride-2 form whose taps are written directly (two images; two groups), and
 * the forms whose taps overlap, leave gaps or are cropped (3x3 stride 2 with pads and
 * output_padding, 4x4 stride 2 pad 1, dilation 2, stride 3 over a 2x2 kernel, 2x2 stride 2 with
 * pads), summed into a zeroed plane. */
static void convt_forms(mi_plugin_t *p) {
  static const struct {
    int64_t n, c, h, w, m, k, s, pad, d, g, op;
    int bias;
  } f[] = {
      {2, 5, 9, 11, 7, 2, 2, 0, 1, 1, 0, 1},
      {1, 6, 5, 5, 4, 2, 2, 0, 1, 2, 0, 1},
      {1, 6, 7, 8, 5, 3, 2, 1, 1, 1, 1, 1},
      {1, 4, 6, 5, 6, 4, 2, 1, 1, 1, 0, 0},
      {1, 3, 5, 6, 4, 3, 1, 0, 2, 1, 0, 1},
      {1, 3, 4, 5, 5, 2, 3, 0, 1, 1, 0, 1},
      {1, 4, 5, 5, 3, 2, 2, 1, 1, 1, 0, 1},
  };
  static float v[4096];
  fill_uniform(v, 4096, 77, 0.5f);
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    for (int32_t th = 1; th <= 2; th++) {
      mi_graph_t *g = mi_graph_create("convt");
      int64_t xd[4] = {f[i].n, f[i].c, f[i].h, f[i].w}, wd[4] = {f[i].c, f[i].m / f[i].g, f[i].k, f[i].k}, bd[1] = {f[i].m};
      int64_t st[2] = {f[i].s, f[i].s}, pads[4] = {f[i].pad, f[i].pad, f[i].pad, f[i].pad}, dil[2] = {f[i].d, f[i].d},
              op[2] = {f[i].op, f[i].op};
      int32_t x, a, y, n, in[3];
      char what[96];
      g->opset = 13;
      x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
      mi_graph_add_input(g, x);
      a = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, -1, NULL);
      y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
      in[0] = x;
      in[1] = mi_graph_add_const_f32(g, "w", 4, wd, v);
      in[2] = mi_graph_add_const_f32(g, "b", 1, bd, v + 3000);
      n = mi_graph_add_node(g, "ConvTranspose", "up", f[i].bias ? 3 : 2, in, 1, &a);
      mi_node_set_ints(g, n, "strides", 2, st);
      mi_node_set_ints(g, n, "pads", 4, pads);
      mi_node_set_ints(g, n, "dilations", 2, dil);
      mi_node_set_ints(g, n, "output_padding", 2, op);
      mi_node_set_int(g, n, "group", f[i].g);
      mi_graph_add_node(g, "Relu", "relu", 1, &a, 1, &y);
      mi_graph_add_output(g, y);
      snprintf(what, sizeof what, "ConvTranspose %lldx%lld s%lld p%lld d%lld g%lld op%lld, %lld images",
               (long long)f[i].k, (long long)f[i].k, (long long)f[i].s, (long long)f[i].pad, (long long)f[i].d,
               (long long)f[i].g, (long long)f[i].op, (long long)f[i].n);
      check_blocks(g, p, th, 31 + i, 1, what);
    }
}

static mi_plugin_t *blis, *npu;
static const char *gpus[] = {"opencl", "vulkan"};

static void setup(void) {
  r = open_plugins();
  blis = mi_registry_find(r, "blis-cpu");
  npu = mi_registry_find(r, "npu-stub");
  CHECK(npu != NULL || !tu_plugin_built("npu-stub"), "npu-stub was built but not loaded");
  CHECK(blis != NULL, "blis-cpu is loaded");
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void blis_fusion(void) {
  if (blis) {
    fused_vs_unfused(blis, "resnet", 0.5, 2);
    fused_vs_unfused(blis, "mobilenetv2", 0.5, 3);
    auto_fused(blis);
    se_mul_add(blis, 0, 0);
    se_mul_add(blis, 1, 0);
    se_mul_add(blis, 0, 1);
    cmp_cast(blis, "Equal", 0);
    cmp_cast(blis, "Less", 0);
    cmp_cast(blis, "GreaterOrEqual", 0);
    cmp_cast(blis, "Equal", 1);
    convt_chain(blis, 0);
    convt_chain(blis, 1);
    convt_forms(blis);
    auto_dwpw(blis, 1, 0);
    auto_dwpw(blis, 2, 0);
    auto_dwpw(blis, 1, 1);
    auto_dwpw(blis, 2, 1);
    auto_dwpw(blis, 1, 2);
    wide_dwpw(blis, 1);
    wide_dwpw(blis, 2);
    aligned_dwpw(blis, 1, 24, 24);
    aligned_dwpw(blis, 1, 16, 20);
    aligned_dwpw(blis, 2, 24, 24);
    aligned_dwpw(blis, 2, 16, 20);
  }
}

/* The same blocks with blis-cpu's SIMD capped (a fresh registry: the plugin reads the cap when it
 * loads): at AVX2 the one-pass kernel runs the 8-lane depthwise row kernels, in C the two convs
 * run apart. */
static void blis_fusion_capped(void) {
  static const char *caps[2] = {"avx2", "c"};
  for (int lv = 0; lv < 2; lv++) {
    mi_registry_t *reg;
    mi_plugin_t *p;
    setenv("MI_BLIS_MAX_SIMD", caps[lv], 1);
    reg = open_plugins();
    p = mi_registry_find(reg, "blis-cpu");
    printf("simd cap %s\n", caps[lv]);
    if (p) {
      auto_dwpw(p, 1, 0);
      auto_dwpw(p, 2, 0);
      wide_dwpw(p, 1);
      wide_dwpw(p, 2);
      aligned_dwpw(p, 1, 24, 24);
      aligned_dwpw(p, 1, 16, 20);
      aligned_dwpw(p, 2, 24, 24);
      aligned_dwpw(p, 2, 16, 20);
    }
    mi_registry_destroy(reg);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
}

static void gpu_fusion(void) {
  for (size_t i = 0; i < 2; i++) {
    mi_plugin_t *p = mi_registry_find(r, gpus[i]);
    if (p) fused_vs_unfused(p, "resnet", 0.5, 2);
    else if (!tu_plugin_built(gpus[i]))
      printf("%s: not built here, skipped\n", gpus[i]);
    else
      CHECK(0, "%s was built but the loader refused it", gpus[i]);
  }
}

static void refused_groups_npu(void) {
  if (blis && npu) refused_groups(blis, npu);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(blis_fusion),
    TU_CASE(blis_fusion_capped),
    TU_CASE(gpu_fusion),
    TU_CASE(refused_groups_npu),
};

TU_MAIN(setup, teardown)
