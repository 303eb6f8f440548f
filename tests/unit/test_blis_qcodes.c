/* test_blis_qcodes.c - a dynamic conv whose float tail only a DynamicQuantizeLinear reads
 * (DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul -> [Add bias] -> activations ->
 * DynamicQuantizeLinear, the floats no graph output) runs on blis-cpu as codes straight from the
 * int32 sums (mi__blis_ftail_codes): codes, scale and zero point equal mi_ref_run's byte for byte
 * on the depthwise byte kernel, the GEMM path and the direct byte core, with a negative scale
 * (a decreasing tail), stride 2 and two activations; and the tail's float plane is never written:
 * a run makes fewer pages resident than the same graph with a LeakyRelu of negative slope (not
 * monotone, so its plane is written and read again), by at least half that plane. A Pad by zero
 * between the tail and the DynamicQuantizeLinear (a TF export's, before a stride-2 depthwise conv)
 * joins the conv's kernel (exec/plan.c), codes written into the padded plane; so does the quantize
 * when another node reads the floats first. A scale past 2^64 at run time takes the float plane
 * after all: the plane the kernel only reserved is made writable for that run. */
#include <malloc.h>
#include <unistd.h>

#include "test_qdq_graph.h"

typedef struct ccase {
  const char *name;
  int64_t c, m, h, w, k, stride, group; /* input / output channels, plane, kernel size */
  float ws;                             /* weight scale: negative makes the tail decreasing */
  int bias;
  const char *act; /* Relu, Clip (0, 6), Leaky (0.1, then Max against 0.05), LeakyNeg (-0.5) */
  int pad;         /* a Pad by zero before the DynamicQuantizeLinear: 1 bottom / right 1 (TF), 2 every side */
  int early;       /* the tail's floats also read by a Relu (a graph output) before the DynamicQuantizeLinear */
} ccase_t;

static uint32_t g_rng = 4242u;
static int64_t g_threads = 1; /* blis-cpu's knob threads for the sessions run() makes */
static uint32_t rnd32(void) {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

static int32_t u8_const(mi_graph_t *g, const char *name, int rank, const int64_t *dims, int64_t n) {
  uint8_t *v = malloc((size_t)n);
  REQUIRE(v);
  for (int64_t i = 0; i < n; i++) v[i] = (uint8_t)rnd32();
  int32_t t = tensor(g, name, MI_DTYPE_UINT8, rank, dims, v, (size_t)n);
  free(v);
  return t;
}

static mi_graph_t *build(const ccase_t *cc) {
  mi_graph_t *g = mi_graph_create("qcodes");
  int64_t xd[4] = {1, cc->c, cc->h, cc->w}, wd[4] = {cc->m, cc->c / cc->group, cc->k, cc->k}, bd[4] = {1, cc->m, 1, 1};
  int64_t p = cc->k / 2, pads[4] = {p, p, p, p}, st[2] = {cc->stride, cc->stride};
  REQUIRE(g);
  g->opset = 13;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  int32_t q[3] = {val(g, "xq"), val(g, "xs"), val(g, "xz")}, y[3];
  REQUIRE(mi_graph_add_node(g, "DynamicQuantizeLinear", NULL, 1, &x, 3, q) >= 0);
  int32_t sm[2] = {q[1], f32(g, "ws", cc->ws)}, sc = val(g, "sc");
  op(g, "Mul", 2, sm, sc);
  int32_t ci[4] = {q[0], u8_const(g, "w", 4, wd, wd[0] * wd[1] * wd[2] * wd[3]), q[2], code(g, "wz", MI_DTYPE_UINT8, 131)};
  int32_t acc = val(g, "acc"), f = val(g, "f"), v = val(g, "v");
  int32_t n = op(g, "ConvInteger", 4, ci, acc);
  mi_node_set_int(g, n, "group", cc->group);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_int(g, op(g, "Cast", 1, &acc, f), "to", MI_DTYPE_FLOAT32);
  int32_t mm[2] = {f, sc};
  op(g, "Mul", 2, mm, v);
  if (cc->bias) {
    float b[512];
    REQUIRE(cc->m <= 512);
    for (int64_t i = 0; i < cc->m; i++) b[i] = (float)((int32_t)(rnd32() % 2001) - 1000) / 400.f;
    int32_t ba[2] = {v, tensor(g, "b", MI_DTYPE_FLOAT32, 4, bd, b, (size_t)cc->m * 4)}, vb = val(g, "vb");
    op(g, "Add", 2, ba, vb);
    v = vb;
  }
  int32_t a = val(g, "a");
  if (!strcmp(cc->act, "Relu")) {
    op(g, "Relu", 1, &v, a);
  } else if (!strcmp(cc->act, "Clip")) {
    int32_t cl[3] = {v, f32(g, "lo", 0.f), f32(g, "hi", 6.f)};
    op(g, "Clip", 3, cl, a);
  } else {
    int neg = !strcmp(cc->act, "LeakyNeg");
    int32_t l = neg ? a : val(g, "l");
    mi_node_set_float(g, op(g, "LeakyRelu", 1, &v, l), "alpha", neg ? -0.5f : 0.1f);
    if (!neg) {
      int32_t mx[2] = {l, f32(g, "floor", 0.05f)};
      op(g, "Max", 2, mx, a);
    }
  }
  if (cc->early) { /* graph order: this reader first, so the quantize's unit runs where the floats are written */
    int32_t r = val(g, "r");
    op(g, "Relu", 1, &a, r);
    mi_graph_add_output(g, r);
  }
  if (cc->pad) {
    static const int64_t tf[8] = {0, 0, 0, 0, 0, 0, 1, 1}, all[8] = {0, 0, 1, 2, 0, 0, 2, 1};
    int64_t np = 8;
    int32_t pi[3] = {a, tensor(g, "pads", MI_DTYPE_INT64, 1, &np, cc->pad == 1 ? tf : all, sizeof tf),
                     f32(g, "zero", 0.f)},
            pv = val(g, "padded");
    op(g, "Pad", 3, pi, pv);
    a = pv;
  }
  static const char *const yn[3] = {"yq", "ys", "yz"};
  for (int i = 0; i < 3; i++) {
    y[i] = val(g, yn[i]);
    mi_graph_add_output(g, y[i]);
  }
  REQUIRE(mi_graph_add_node(g, "DynamicQuantizeLinear", NULL, 1, &a, 3, y) >= 0);
  return g;
}

/* Resident bytes of this process. */
static int64_t resident(void) {
  long pages = 0, size = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &size, &pages) != 2) pages = -1;
  fclose(f);
  return pages < 0 ? -1 : (int64_t)pages * sysconf(_SC_PAGESIZE);
}

/* Runs cc's graph on blis-cpu (3 kernels) and on the reference, every output byte for byte;
 * *grew: resident bytes the blis-cpu run added. */
static void run(const ccase_t *cc, int64_t *grew) {
  mi_graph_t *g = build(cc);
  mi_error_t err = {0, ""};
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_array_t *in = NULL, *od[4] = {0}, *orf[4] = {0};
  int32_t nout = g->output_count;
  int32_t rc = mi_graph_infer_shapes(g, &err);
  CHECK(rc == MI_OK, "%s: shapes: %s", cc->name, err.message);
  if (rc == MI_OK) {
    const mi_tensor_t *t = &g->tensors[g->inputs[0]];
    in = mi_array_create(t->dtype, t->rank, t->dims);
    REQUIRE(in);
    for (int64_t i = 0; i < mi_array_numel(in); i++) ((float *)in->data)[i] = (float)(rnd32() % 65536) / 8192.f - 4.f;
    mi_knob_value_t th = {"threads", g_threads, 0.};
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.allow_host_fallback = 0;
    o.device_knob_count = 1;
    o.device_knobs = &th;
    rc = mi_session_create(g, g_blis, 0, &o, &s, &err);
    CHECK(rc == MI_OK, "%s: session: %s", cc->name, err.message);
  }
  if (rc == MI_OK) {
    int64_t before = resident();
    int32_t want = cc->early ? 4 : 3; /* DynamicQuantizeLinear, the scale's Mul, the conv [, the Relu] */
    CHECK(mi_session_kernel_count(s) == want, "%s: %d kernels, expected %d", cc->name, (int)mi_session_kernel_count(s),
          (int)want);
    rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, od, nout, &err);
    if (grew) *grew = resident() - before;
    CHECK(rc == MI_OK, "%s: run: %s", cc->name, err.message);
  }
  if (rc == MI_OK) {
    rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, orf, nout, &err);
    CHECK(rc == MI_OK, "%s: reference: %s", cc->name, err.message);
  }
  for (int k = 0; rc == MI_OK && k < nout; k++) {
    size_t diff = 0;
    CHECK(od[k]->nbytes == orf[k]->nbytes, "%s: output %d size", cc->name, k);
    for (size_t b = 0; od[k]->nbytes == orf[k]->nbytes && b < od[k]->nbytes; b++)
      diff += ((uint8_t *)od[k]->data)[b] != ((uint8_t *)orf[k]->data)[b];
    CHECK(diff == 0, "%s: output %d: %zu of %zu bytes differ from the reference", cc->name, k, diff, od[k]->nbytes);
  }
  mi_session_destroy(s);
  mi_array_destroy(in);
  for (int k = 0; k < 4; k++) mi_array_destroy(od[k]), mi_array_destroy(orf[k]);
  mi_graph_destroy(g);
}

/* Planes of 1-4 MiB: over a quarter of any L2 up to 4 MiB, so the path applies. */
static void codes_cases(void) {
  static const ccase_t cs[] = {
      {"depthwise 3x3, 16x192x192, bias, Relu", 16, 16, 192, 192, 3, 1, 16, 0.0123f, 1, "Relu", 0, 0},
      {"depthwise 3x3 stride 2, 24x256x256, negative scale, Clip", 24, 24, 256, 256, 3, 2, 24, -0.0123f, 0, "Clip", 0, 0},
      /* Cast, Mul and Relu (a plain tail): the 3-tap kernel's codes from registers, at stride 2 too */
      {"depthwise 3x3 stride 2, 24x256x256, no bias, Relu", 24, 24, 256, 256, 3, 2, 24, 0.0123f, 0, "Relu", 0, 0},
      {"depthwise 3x3, 24x128x128, negative scale, no bias, Relu", 24, 24, 128, 128, 3, 1, 24, -0.0123f, 0, "Relu", 0, 0},
      {"depthwise 5x5, 16x128x128, LeakyRelu -> Max", 16, 16, 128, 128, 5, 1, 16, 0.0071f, 1, "Leaky", 0, 0},
      {"pointwise 16 -> 24, 128x128, bias, Clip", 16, 24, 128, 128, 1, 1, 1, 0.0123f, 1, "Clip", 0, 0},
      {"pointwise 16 -> 24, 128x128, negative scale, Relu", 16, 24, 128, 128, 1, 1, 1, -0.0093f, 1, "Relu", 0, 0},
      {"3x3 conv 4 -> 16, 128x128, LeakyRelu -> Max", 4, 16, 128, 128, 3, 1, 1, 0.0123f, 1, "Leaky", 0, 0},
      {"depthwise 3x3, LeakyRelu of negative slope (the float plane)", 16, 16, 192, 192, 3, 1, 16, 0.0123f, 1,
       "LeakyNeg", 0, 0},
      /* a Pad by zero between: one kernel still, the codes at their padded place, the border the
       * zero point; also where the floats are written (a 144-long reduction, a non-monotone tail) */
      {"pointwise 16 -> 24, 128x128, Clip, Pad (TF)", 16, 24, 128, 128, 1, 1, 1, 0.0123f, 1, "Clip", 1, 0},
      {"depthwise 3x3, 16x192x192, Relu, Pad (every side)", 16, 16, 192, 192, 3, 1, 16, -0.0123f, 1, "Relu", 2, 0},
      {"3x3 conv 16 -> 16, 96x96, Relu, Pad (TF): the floats written", 16, 16, 96, 96, 3, 1, 1, 0.0123f, 1, "Relu", 1, 0},
      {"depthwise 3x3, LeakyRelu of negative slope, Pad (every side)", 16, 16, 192, 192, 3, 1, 16, 0.0123f, 0,
       "LeakyNeg", 2, 0},
      /* the floats read first by another node: the quantize still joins the conv's kernel (its range
       * taken as the tail writes), small planes and large */
      {"depthwise 3x3, 16x24x24, Relu, read first by a Relu", 16, 16, 24, 24, 3, 1, 16, 0.0123f, 1, "Relu", 0, 1},
      /* a small plane (the float plane path), a plain tail: its floats and range from the 3-tap kernel's registers */
      {"depthwise 3x3 stride 2, 24x48x48, no bias, Relu (the float plane)", 24, 24, 48, 48, 3, 2, 24, 0.0123f, 0, "Relu", 0, 0},
      {"pointwise 16 -> 24, 128x128, Clip, read first by a Relu", 16, 24, 128, 128, 1, 1, 1, 0.0123f, 1, "Clip", 0, 1},
      /* a scale past 2^64 at run time: the codes path gives way to the float plane, which holds no
       * memory until then (a reserved plane, blis_kernel.c) and is made writable for that run */
      {"depthwise 3x3, 16x192x192, Relu, scale past 2^64 (the reserved plane)", 16, 16, 192, 192, 3, 1, 16, 1e21f, 0,
       "Relu", 0, 0},
      {"pointwise 16 -> 24, 128x128, Relu, scale past 2^64 (the reserved plane)", 16, 24, 128, 128, 1, 1, 1, 1e21f, 0,
       "Relu", 0, 0},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run(&cs[i], NULL);
}

/* The same depthwise layer with a monotone tail and with one that is not: the first leaves its
 * 4 MiB float plane unwritten (kernel scratch is never zeroed, so its pages stay out of memory).
 * Allocations of 64 KiB and up are kept mapped apart, so a freed block is not reused resident. */
static void codes_memory(void) {
  ccase_t a = {"depthwise 16x256x256, Relu", 16, 16, 256, 256, 3, 1, 16, 0.0123f, 1, "Relu", 0, 0}, b = a;
  int64_t ga = 0, gb = 0, plane = 16 * 256 * 256 * 4;
  if (mallopt(M_MMAP_THRESHOLD, 64 * 1024) != 1) {
    /* a sanitizer's allocator refuses mallopt and places blocks its own way: nothing to read */
    printf("note: codes_memory needs glibc's allocator (mallopt refused); resident pages not checked\n");
    return;
  }
  b.name = "depthwise 16x256x256, LeakyRelu of negative slope";
  b.act = "LeakyNeg";
  run(&b, &gb);
  run(&a, &ga);
  CHECK(gb - ga >= plane / 2,
        "the monotone tail's run made %lld bytes resident, the other's %lld: the float plane "
        "(%lld bytes) was written",
        (long long)ga, (long long)gb, (long long)plane);
}

/* The same cases with blis-cpu capped at AVX2 (a fresh registry: the plugin reads the cap when it
 * loads): the int16 GEMM path's columns and the tail's 8-lane loop (blis_qftail256.c), whose range
 * feeds the DynamicQuantizeLinear where the floats are written. */
static void codes_cases_avx2(void) {
  teardown();
  setenv("MI_BLIS_MAX_SIMD", "avx2", 1);
  setup();
  codes_cases();
  teardown();
  unsetenv("MI_BLIS_MAX_SIMD");
  setup();
}

/* The AVX2 cases at 2 threads: the two passes of the codes (each channel's range, then the codes)
 * on the GEMM path's splits of a tile (its pixels, or its columns then its channel panels). */
static void codes_cases_avx2_threads(void) {
  g_threads = 2;
  codes_cases_avx2();
  g_threads = 1;
}

/* codes_memory first: no freed block of an earlier case lies resident for its runs to reuse */
static const tu_case_t tu_cases[] = {
    TU_CASE(codes_memory),
    TU_CASE(codes_cases),
    TU_CASE(codes_cases_avx2),
    TU_CASE(codes_cases_avx2_threads),
};

TU_MAIN(setup, teardown)
