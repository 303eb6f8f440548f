/* test_blis_qjoin.c - blis-cpu where a dynamically quantized graph joins, pads or resizes: Concat,
 * Resize and Pad between DynamicQuantizeLinear and the integer ops, each graph on blis-cpu:0 without
 * host fallback, every output equal to mi_ref_run's byte for byte (harness: test_blis_qops_util.h). */
#include "test_blis_qops_util.h"

/* Concat -> DynamicQuantizeLinear (a U-Net decoder's skip join before its next dynamic conv):
 * one kernel, the codes taken straight from the inputs; the result also read by a Relu (the
 * float concatenation written too, two kernels), along an inner axis (several blocks per input),
 * and one large enough to split across threads. */
static void concat_dynq(int64_t axis, int also_float, int64_t h) {
  int64_t ad[4] = {2, 3, h, 7}, bd[4] = {2, 3, h, 7};
  char name[96];
  mi_graph_t *g = graph(13);
  int32_t ins[2], c, qo[3];
  ad[axis] = 3;
  bd[axis] = 2;
  ins[0] = input(g, "a", MI_DTYPE_FLOAT32, 4, ad);
  ins[1] = input(g, "b", MI_DTYPE_FLOAT32, 4, bd);
  c = mi_graph_add_tensor(g, "c", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_node_set_int(g, node(g, "Concat", 2, ins, 1, &c, 0), "axis", axis);
  if (also_float == 2) { /* read first by the Relu: the pair runs at the Concat's place */
    int32_t r = out(g, "r");
    node(g, "Relu", 1, &c, 1, &r, 0);
  }
  qo[0] = out(g, "cq");
  qo[1] = out(g, "cs");
  qo[2] = out(g, "cz");
  node(g, "DynamicQuantizeLinear", 1, &c, 3, qo, 0);
  if (also_float == 1) {
    int32_t r = out(g, "r");
    node(g, "Relu", 1, &c, 1, &r, 0);
  }
  snprintf(name, sizeof name, "Concat axis %lld -> DynamicQuantizeLinear%s, h %lld", (long long)axis,
           also_float == 2 ? ", Concat first -> Relu" : also_float ? ", Concat also -> Relu"
                                                                   : "",
           (long long)h);
  g_kernels = also_float ? 2 : 1;
  run_case(g, name, 0);
  g_kernels = 0;
}

static void concat_dynq_cases(void) {
  concat_dynq(1, 0, 5);
  concat_dynq(2, 0, 5);
  concat_dynq(3, 0, 5);
  concat_dynq(1, 1, 5);
  concat_dynq(2, 1, 5);
  concat_dynq(1, 2, 5);
  concat_dynq(1, 0, 4000); /* 2 x 5 x 4000 x 7: ranges and codes in parts across the threads */
}

/* A bilinear 2x Resize (its own kernel) -> Concat with another input -> DynamicQuantizeLinear (a
 * U-Net decoder's upsample and skip join, IS-Net's largest steps), or the Resize straight into a
 * DynamicQuantizeLinear; `add`: an Add of two inputs in the Resize's place. The producer finds its output's range while writing it and the quantize
 * kernel takes it instead of a min/max pass over those floats; codes, scale and zero point stay the
 * reference's (and so the first run's, the two-pass path's) byte for byte. `also`: the producer's result is also a
 * graph output; `neg`: the values shifted negative (the range's low end off 0); h: large enough to
 * split the rows across the threads. */
static void resize_dynq(int add, int cat, int also, int neg, int64_t h) {
  static const float sc[4] = {1.f, 1.f, 2.f, 2.f};
  int64_t xd[4] = {1, 3, h, 9}, bd[4] = {1, 2, 2 * h, 18}, four = 4;
  char name[128];
  mi_graph_t *g = graph(13);
  int32_t ins[3], rz, c, qo[3], rn, cins[2];
  float *x0 = malloc((size_t)(3 * h * 9) * sizeof *x0);
  double before;
  REQUIRE(x0);
  for (int64_t i = 0; i < 3 * h * 9; i++) x0[i] = (float)((rnd32() % 20001) - (neg ? 15000 : 5000)) / 1000.f;
  ins[0] = input(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  ins[1] = add ? input(g, "x2", MI_DTYPE_FLOAT32, 4, xd) : -1;
  ins[2] = constant(g, "scales", MI_DTYPE_FLOAT32, 1, &four, sc);
  rz = also ? out(g, "rz") : mi_graph_add_tensor(g, "rz", MI_DTYPE_UNDEFINED, -1, NULL);
  if (add) { /* an RSU block's residual Add */
    bd[2] /= 2;
    bd[3] /= 2;
    node(g, "Add", 2, ins, 1, &rz, 0);
  } else {
    rn = node(g, "Resize", 3, ins, 1, &rz, 0);
    mi_node_set_string(g, rn, "mode", "linear");
  }
  c = rz;
  if (cat) {
    cins[0] = rz;
    cins[1] = input(g, "b", MI_DTYPE_FLOAT32, 4, bd);
    c = mi_graph_add_tensor(g, "c", MI_DTYPE_UNDEFINED, -1, NULL);
    mi_node_set_int(g, node(g, "Concat", 2, cins, 1, &c, 0), "axis", 1);
  }
  qo[0] = out(g, "q");
  qo[1] = out(g, "s");
  qo[2] = out(g, "z");
  node(g, "DynamicQuantizeLinear", 1, &c, 3, qo, 0);
  snprintf(name, sizeof name, "%s%s -> DynamicQuantizeLinear%s%s, h %lld", add ? "Add" : "Resize",
           cat ? " -> Concat" : "", also ? ", also an output" : "", neg ? ", negative" : "", (long long)h);
  g_x0 = x0;
  g_x0n = 3 * h * 9;
  /* a Resize that only the Concat reads is one kernel with it: its rows computed where needed */
  g_kernels = !add && cat && !also ? 1 : 2;
  g_runs = 2; /* the first run asks for the range (two passes), the second takes it */
  before = ranges_reused();
  run_case(g, name, 0);
  /* A producer's tensor that is also a graph output is written into the array the run hands
   * back (ABI 1.4 buffer_wrap), a new buffer every run, so the range asked of the last one is
   * not seen: the quantize kernel's min/max pass reads those floats once, where the read-back
   * it replaces read and wrote them. */
  if (!also)
    CHECK(ranges_reused() == before + (g_kernels == 2),
          "%s: the second run's quantize kernel ran a min/max pass over the producer's floats", name);
  g_runs = 1;
  g_kernels = 0;
  g_x0 = NULL;
  free(x0);
}

/* blis-cpu's peak_alloc_bytes since its last reading. */
static double peak_alloc(void) {
  mi_counter_sample_t smp;
  mi_error_t e = {0, ""};
  memset(&smp, 0, sizeof smp);
  smp.struct_size = sizeof smp;
  CHECK(g_blis->api.counter_read(g_blis->ctx, 0, 1, &smp, &e) == MI_OK && smp.has_value, "peak_alloc_bytes: %s",
        e.message);
  return smp.value;
}

/* Two Resizes (bilinear 2x of [1,3,h,w], nearest 2x of [1,2,h,w]) -> Concat -> DynamicQuantizeLinear,
 * each Resize read by the Concat alone: one kernel, which computes the Resizes' rows for the range
 * and again for the codes and writes no upsampled plane, nor holds memory for one (the counter's
 * peak, at 700 x 33); codes, scale and zero point the reference's byte for byte. w: rows longer than the row block (4096 floats) are refused by the
 * fusion and run as Resize steps of their own, the same bytes. */
static void resize2_concat_dynq(int64_t h, int64_t w) {
  static const float sc[4] = {1.f, 1.f, 2.f, 2.f};
  int64_t ad[4] = {1, 3, h, w}, bd[4] = {1, 2, h, w}, four = 4;
  char name[96];
  mi_graph_t *g = graph(13);
  int32_t ia[3], ib[3], ra, rb, cins[2], c, qo[3];
  ia[0] = input(g, "a", MI_DTYPE_FLOAT32, 4, ad);
  ib[0] = input(g, "b", MI_DTYPE_FLOAT32, 4, bd);
  ia[1] = ib[1] = -1;
  ia[2] = ib[2] = constant(g, "scales", MI_DTYPE_FLOAT32, 1, &four, sc);
  ra = mi_graph_add_tensor(g, "ra", MI_DTYPE_UNDEFINED, -1, NULL);
  rb = mi_graph_add_tensor(g, "rb", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_node_set_string(g, node(g, "Resize", 3, ia, 1, &ra, 0), "mode", "linear");
  node(g, "Resize", 3, ib, 1, &rb, 0);
  cins[0] = rb;
  cins[1] = ra;
  c = mi_graph_add_tensor(g, "c", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_node_set_int(g, node(g, "Concat", 2, cins, 1, &c, 0), "axis", 1);
  qo[0] = out(g, "q");
  qo[1] = out(g, "s");
  qo[2] = out(g, "z");
  node(g, "DynamicQuantizeLinear", 1, &c, 3, qo, 0);
  snprintf(name, sizeof name, "Resize linear, Resize nearest -> Concat -> DynamicQuantizeLinear, %lld x %lld",
           (long long)h, (long long)w);
  g_kernels = 1;
  {
    /* no memory for the planes no step writes (the two upsampled ones, the concatenation): the
     * plugin's peak over create and run stays under the inputs, the codes and 512 KiB for the
     * rest, where the planes alone are 5 x 4h x w floats */
    const double planes = 5. * 4 * h * w * sizeof(float), io = 5. * h * w * sizeof(float) + 5. * 4 * h * w + 512 * 1024;
    double peak = peak_alloc();
    run_case(g, name, 0);
    peak = peak_alloc();
    CHECK(w > 4096 || h < 100 || peak < io, "%s: blis-cpu's peak %.0f bytes, over %.0f (the unwritten planes: %.0f)",
          name, peak, io, planes);
  }
  g_kernels = 0;
}

/* The range of a fused Resize's rows taken without writing them (blis_resize.c,
 * mi__blis_resize_rows_range): a 2x Resize (linear or nearest) of [1,2,3,w] -> Concat ->
 * DynamicQuantizeLinear with one value of the input far off the others (+-40 among values in
 * -1..1), so the scale and every code depend on the rows around it. Columns at the row's clamped
 * ends, in the AVX-512 run of 32 outputs a step, in the AVX2 run of 16 after it and in the
 * scalar rest; at each SIMD level (MI_BLIS_MAX_SIMD), each against the reference byte for byte. */
static void resize_spike_dynq(int linear, int64_t w, int64_t pos, float spike) {
  static const float sc[4] = {1.f, 1.f, 2.f, 2.f};
  int64_t ad[4] = {1, 2, 3, w}, bd[4] = {1, 1, 6, 2 * w}, four = 4, n = 2 * 3 * w;
  char name[128];
  mi_graph_t *g = graph(13);
  int32_t ia[3], r, cins[2], c, qo[3], rn;
  float *x0 = malloc((size_t)n * sizeof *x0);
  REQUIRE(x0);
  for (int64_t i = 0; i < n; i++) x0[i] = (float)((int32_t)(rnd32() % 2001) - 1000) / 1000.f;
  x0[(3 + 1) * w + pos] = spike; /* channel 1, row 1 */
  ia[0] = input(g, "a", MI_DTYPE_FLOAT32, 4, ad);
  ia[1] = -1;
  ia[2] = constant(g, "scales", MI_DTYPE_FLOAT32, 1, &four, sc);
  r = mi_graph_add_tensor(g, "r", MI_DTYPE_UNDEFINED, -1, NULL);
  rn = node(g, "Resize", 3, ia, 1, &r, 0);
  if (linear) mi_node_set_string(g, rn, "mode", "linear");
  cins[0] = input(g, "b", MI_DTYPE_FLOAT32, 4, bd);
  cins[1] = r;
  c = mi_graph_add_tensor(g, "c", MI_DTYPE_UNDEFINED, -1, NULL);
  mi_node_set_int(g, node(g, "Concat", 2, cins, 1, &c, 0), "axis", 1);
  qo[0] = out(g, "q");
  qo[1] = out(g, "s");
  qo[2] = out(g, "z");
  node(g, "DynamicQuantizeLinear", 1, &c, 3, qo, 0);
  snprintf(name, sizeof name, "Resize %s -> Concat -> DynamicQuantizeLinear, w %lld, %g at column %lld, simd cap %s",
           linear ? "linear" : "nearest", (long long)w, (double)spike, (long long)pos,
           getenv("MI_BLIS_MAX_SIMD") ? getenv("MI_BLIS_MAX_SIMD") : "none");
  g_x0 = x0;
  g_x0n = n;
  g_kernels = 1;
  run_case(g, name, 0);
  g_kernels = 0;
  g_x0 = NULL;
  free(x0);
}

static void resize_range_levels(void) {
  static const char *const caps[3] = {NULL, "avx2", "c"};
  static const int64_t ws[] = {13, 40, 101};
  mi_plugin_t *keep = g_blis;
  for (int lv = 0; lv < 3; lv++) {
    mi_registry_t *reg = open_capped(caps[lv]);
    for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
      const int64_t pos[] = {0, 1, ws[k] / 2, ws[k] - 9, ws[k] - 3, ws[k] - 1};
      for (size_t q = 0; q < sizeof pos / sizeof pos[0]; q++)
        for (int linear = 0; linear < 2; linear++) {
          resize_spike_dynq(linear, ws[k], pos[q], 40.f);
          resize_spike_dynq(linear, ws[k], pos[q], -40.f);
        }
    }
    mi_registry_destroy(reg);
  }
  unsetenv("MI_BLIS_MAX_SIMD");
  g_blis = keep;
}

static void resize_dynq_cases(void) {
  resize2_concat_dynq(5, 9);
  resize2_concat_dynq(700, 33); /* rows in parts across the threads */
  resize2_concat_dynq(3, 2100);

  for (int add = 0; add < 2; add++) {
    resize_dynq(add, 1, 0, 0, 5);
    resize_dynq(add, 1, 1, 1, 5);
    resize_dynq(add, 0, 0, 1, 5);
    resize_dynq(add, 1, 0, 1, 700); /* 1 x 3 x 1400 x 18: the rows in parts across the threads */
    resize_dynq(add, 0, 1, 0, 700);
  }
}

/* Pad -> DynamicQuantizeLinear (a TF export's padding before a stride-2 depthwise conv, dynamic
 * form): one kernel, the codes written into the padded plane, the border the zero point, scale
 * and zero point the reference's; bottom/right padding, every side, planes split across the
 * threads. Not one kernel, and still the reference's: a Pad value off 0, a Pad of the channels,
 * the padded floats also read by a Relu. */
static void pad_dynq(const int64_t *pads, float value, int also_float, int64_t h, int32_t kernels) {
  int64_t xd[4] = {2, 3, h, 7}, np = 8;
  char name[128];
  mi_graph_t *g = graph(13);
  int32_t ins[3], pv, qo[3];
  ins[0] = input(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  ins[1] = constant(g, "pads", MI_DTYPE_INT64, 1, &np, pads);
  ins[2] = f32c(g, "value", value);
  pv = mi_graph_add_tensor(g, "p", MI_DTYPE_UNDEFINED, -1, NULL);
  node(g, "Pad", 3, ins, 1, &pv, 0);
  qo[0] = out(g, "pq");
  qo[1] = out(g, "ps");
  qo[2] = out(g, "pz");
  node(g, "DynamicQuantizeLinear", 1, &pv, 3, qo, 0);
  if (also_float) {
    int32_t r = out(g, "r");
    node(g, "Relu", 1, &pv, 1, &r, 0);
  }
  snprintf(name, sizeof name, "Pad %lld %lld %lld %lld / %lld %lld %lld %lld value %g -> DynamicQuantizeLinear%s, h %lld",
           (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3], (long long)pads[4],
           (long long)pads[5], (long long)pads[6], (long long)pads[7], (double)value, also_float ? ", Pad also -> Relu" : "",
           (long long)h);
  g_kernels = kernels;
  run_case(g, name, 0);
  g_kernels = 0;
}

static void pad_dynq_cases(void) {
  static const int64_t tf[8] = {0, 0, 0, 0, 0, 0, 1, 1}, all[8] = {0, 0, 1, 2, 0, 0, 3, 1}, ch[8] = {0, 1, 0, 0, 0, 0, 1, 1};
  pad_dynq(tf, 0.f, 0, 5, 1);
  pad_dynq(all, 0.f, 0, 5, 1);
  pad_dynq(tf, 0.f, 0, 3000, 1); /* 2 x 3 x 3000 x 7: range and codes in parts across the threads */
  pad_dynq(all, 0.5f, 0, 5, 0);
  pad_dynq(ch, 0.f, 0, 5, 0);
  pad_dynq(tf, 0.f, 1, 5, 0);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(concat_dynq_cases),
    TU_CASE(pad_dynq_cases),
    TU_CASE(resize_dynq_cases),
    TU_CASE(resize_range_levels),
};

TU_MAIN(setup, teardown)
