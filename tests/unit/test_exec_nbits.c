/* test_exec_nbits.c - com.microsoft MatMulNBits: the reference on values worked out by hand (low
 * nibble first, a block cut short where K is not a multiple of block_size, zero points packed and
 * absent, float16 scales, bias), inferred shapes equal to the run's, malformed nodes refused in
 * one line (B's shape, block_size, bits); a written model loaded back (the loader's lowering to
 * packed INT4 codes); then blis-cpu against the reference at every SIMD cap,
 * as a graph built in code (the session lowers it) and as the blocked DequantizeLinear of 4-bit
 * codes (opset 21's INT4 form), whose kernel holds the DequantizeLinear and the MatMul. */
#include "test_exec_util.h"
#include "test_ref_common.h"

typedef struct nspec {
  int64_t m, k, n, block;
  int zp;    /* 0 none, 1 packed UINT8, 2 float (the scales' dtype) */
  int f16;   /* float16 scales */
  int bias;  /* a bias input */
  int bits;  /* attribute bits */
  int bad_b; /* B one block short */
} nspec_t;

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static uint16_t f16(float v) { /* exact for the scales used here (k / 1024 with k < 2048) */
  uint32_t u;
  memcpy(&u, &v, 4);
  return (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
}

/* A [m, k] (graph input "a") -> MatMulNBits -> "y". b, scales and zero points as given, else random. */
static mi_graph_t *nbits_graph(const nspec_t *sp, const uint8_t *b_in, const float *s_in, const uint8_t *z_in,
                               const float *bias_in) {
  mi_graph_t *g = mi_graph_create("nbits");
  int bits = sp->bits ? sp->bits : 4;
  int64_t kb = (sp->k + sp->block - 1) / sp->block, blob = sp->block * (bits == 3 ? 4 : bits) / 8,
          zrow = (kb * bits + 7) / 8;
  int64_t ad[2] = {sp->m, sp->k}, bd[3] = {sp->n, kb - sp->bad_b, blob}, sd[1] = {sp->n * kb}, zd[1] = {sp->n * zrow},
          nd[1] = {sp->n};
  size_t nb = (size_t)(sp->n * kb * blob);
  uint8_t *b = malloc(nb), *z = malloc((size_t)zd[0]);
  float *s = malloc(sizeof *s * (size_t)sd[0]), *bias = malloc(sizeof *bias * (size_t)sp->n);
  uint16_t *sh = malloc(2 * (size_t)sd[0]);
  uint64_t seed = 99 + (uint64_t)(sp->k * 31 + sp->n);
  for (size_t i = 0; i < nb; i++) b[i] = b_in ? b_in[i] : (uint8_t)lcg(&seed);
  for (int64_t i = 0; i < sd[0]; i++) s[i] = s_in ? s_in[i] : (float)(1 + lcg(&seed) % 64) / 1024.f;
  for (int64_t i = 0; i < zd[0]; i++) z[i] = z_in ? z_in[i] : (uint8_t)lcg(&seed);
  for (int64_t i = 0; i < sp->n; i++) bias[i] = bias_in ? bias_in[i] : 0.01f * (float)(i % 7);
  for (int64_t i = 0; i < sd[0]; i++) sh[i] = f16(s[i]);
  int32_t a = tin(g, "a", MI_DTYPE_FLOAT32, 2, ad), tb = mi_graph_add_tensor(g, "b", MI_DTYPE_UINT8, 3, bd);
  mi_graph_set_data(g, tb, b, nb - (size_t)(sp->bad_b * sp->n * blob));
  int32_t ts = mi_graph_add_tensor(g, "scales", sp->f16 ? MI_DTYPE_FLOAT16 : MI_DTYPE_FLOAT32, 1, sd);
  if (sp->f16) mi_graph_set_data(g, ts, sh, 2 * (size_t)sd[0]);
  else
    mi_graph_set_data(g, ts, s, 4 * (size_t)sd[0]);
  int32_t tz = -1, tbias = -1;
  if (sp->zp == 1) {
    tz = mi_graph_add_tensor(g, "zp", MI_DTYPE_UINT8, 1, zd);
    mi_graph_set_data(g, tz, z, (size_t)zd[0]);
  } else if (sp->zp == 2) { /* float zero points: z_in's bytes read as one value a block */
    float zf[64];
    uint16_t zh[64];
    for (int64_t i = 0; i < sd[0] && i < 64; i++) {
      zf[i] = z_in ? (float)z_in[i] : (float)(lcg(&seed) % 16);
      zh[i] = f16(zf[i]);
    }
    tz = mi_graph_add_tensor(g, "zp", sp->f16 ? MI_DTYPE_FLOAT16 : MI_DTYPE_FLOAT32, 1, sd);
    if (sp->f16) mi_graph_set_data(g, tz, zh, 2 * (size_t)sd[0]);
    else
      mi_graph_set_data(g, tz, zf, 4 * (size_t)sd[0]);
  }
  if (sp->bias) tbias = mi_graph_add_const_f32(g, "bias", 1, nd, bias);
  int32_t ins[6] = {a, tb, ts, tz, -1, tbias}, y = mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t n = mi_graph_add_node(g, "MatMulNBits", "mm", sp->bias ? 6 : sp->zp ? 4
                                                                              : 3,
                                ins, 1, &y);
  free(g->nodes[n].domain);
  g->nodes[n].domain = strdup("com.microsoft");
  mi_node_set_int(g, n, "K", sp->k);
  mi_node_set_int(g, n, "N", sp->n);
  mi_node_set_int(g, n, "bits", bits);
  mi_node_set_int(g, n, "block_size", sp->block);
  mi_node_set_int(g, n, "accuracy_level", 4); /* accepted, no effect on the arithmetic */
  mi_graph_add_output(g, y);
  free(b), free(z), free(s), free(bias), free(sh);
  return g;
}

/* Infers shapes and runs on the reference; checks the inferred shape is the run's. */
static mi_array_t *ref_run(mi_graph_t *g, const float *a_vals) {
  mi_error_t err = {0};
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, g->tensors[g->inputs[0]].rank, g->tensors[g->inputs[0]].dims);
  mi_array_t *y = NULL;
  memcpy(x->data, a_vals, x->nbytes);
  CHECK(mi_graph_toposort(g, &err) == MI_OK && mi_graph_infer_shapes(g, &err) == MI_OK, "inference: %s", err.message);
  CHECK(run1(g, 1, &x, &y, &err) == MI_OK, "run: %s", err.message);
  const mi_tensor_t *t = &g->tensors[g->outputs[0]];
  CHECK(y && same_shape(y, t->rank, t->dims) && t->dtype == y->dtype, "inferred shape is the run's");
  mi_array_destroy(x);
  return y;
}

/* K = 18, block 16: block 0 holds k 0..15, block 1 only k 16, 17 (the edge). N = 1. B's bytes:
 * block 0 byte 0 = 0x3a (k0 = 10, k1 = 3), block 1 byte 0 = 0x05 (k16 = 5, k17 = 0). Zero points
 * packed 0x92 (block 0: 2, block 1: 9), scales 0.5 and 0.25. Row 0 of A picks k0 + k16, row 1
 * k1 + k17:
 *   zero points: (10 - 2) * 0.5 + (5 - 9) * 0.25 = 3;  (3 - 2) * 0.5 + (0 - 9) * 0.25 = -1.75
 *   none (8):    (10 - 8) * 0.5 + (5 - 8) * 0.25 = 0.25; (3 - 8) * 0.5 + (0 - 8) * 0.25 = -4.5
 * and a bias of 0.5 adds 0.5. */
static void hand_values(void) {
  uint8_t b[16] = {0};
  float a[36] = {0}, s[2] = {0.5f, 0.25f}, bias[1] = {0.5f};
  int64_t yd[2] = {2, 1};
  b[0] = 0x3a;
  b[8] = 0x05;
  a[0] = a[16] = 1.f;
  a[18 + 1] = a[18 + 17] = 1.f;
  for (int f = 0; f < 8; f++) {
    nspec_t sp = {2, 18, 1, 16, f & 1, (f >> 1) & 1, (f >> 2) & 1, 4, 0};
    mi_graph_t *g = nbits_graph(&sp, b, s, (const uint8_t[]){0x92}, bias);
    mi_array_t *y = ref_run(g, a);
    float add = sp.bias ? 0.5f : 0.f, want[2];
    want[0] = (sp.zp ? 3.f : 0.25f) + add;
    want[1] = (sp.zp ? -1.75f : -4.5f) + add;
    char what[64];
    snprintf(what, sizeof what, "zp%d f16%d bias%d", sp.zp, sp.f16, sp.bias);
    expect_f32(what, y, 2, yd, want, 0);
    mi_array_destroy(y);
    mi_graph_destroy(g);
  }
}

/* Float zero points (2 and 9, as values) give the packed ones' results; bits 2: K = 18, block 16
 * (4 bytes a block), block 0 byte 0 = 0xe4 (k0..k3 = 0, 1, 2, 3), block 1 byte 0 = 0x0b (k16 = 3,
 * k17 = 2), zero points packed 0x09 (block 0: 1, block 1: 2), scales 0.5 and 0.25; rows pick
 * k3 + k16 and k1 + k17: (3 - 1) * 0.5 + (3 - 2) * 0.25 = 1.25 and 0; without zero points (2):
 * 0.75 and -0.5. */
static void float_zero_points_and_bits2(void) {
  uint8_t b[16] = {0};
  float a[36] = {0}, s[2] = {0.5f, 0.25f};
  int64_t yd[2] = {2, 1};
  b[0] = 0x3a;
  b[8] = 0x05;
  a[0] = a[16] = 1.f;
  a[18 + 1] = a[18 + 17] = 1.f;
  for (int f16s = 0; f16s < 2; f16s++) {
    nspec_t sp = {2, 18, 1, 16, 2, f16s, 0, 4, 0};
    mi_graph_t *g = nbits_graph(&sp, b, s, (const uint8_t[]){2, 9}, NULL);
    mi_array_t *y = ref_run(g, a);
    expect_f32("float zero points", y, 2, yd, (const float[]){3.f, -1.75f}, 0);
    mi_array_destroy(y);
    mi_graph_destroy(g);
  }
  memset(b, 0, sizeof b);
  memset(a, 0, sizeof a);
  b[0] = 0xe4;
  b[4] = 0x0b;
  a[3] = a[16] = 1.f;
  a[18 + 1] = a[18 + 17] = 1.f;
  for (int zp = 0; zp < 2; zp++) {
    nspec_t sp = {2, 18, 1, 16, zp, 0, 0, 2, 0};
    mi_graph_t *g = nbits_graph(&sp, b, s, (const uint8_t[]){0x09}, NULL);
    mi_array_t *y = ref_run(g, a);
    expect_f32(zp ? "bits 2, zero points" : "bits 2", y, 2, yd, zp ? (const float[]){1.25f, 0.f} : (const float[]){0.75f, -0.5f}, 0);
    mi_array_destroy(y);
    mi_graph_destroy(g);
  }
}

/* A MatMulNBits model written and loaded back: the loader lowers it to a blocked DequantizeLinear
 * whose codes are packed INT4 (half a byte a weight), drops the packed inputs, keeps the node's name
 * on the MatMul, and gives the reference output of the node itself. */
static void loaded_form(void) {
  nspec_t sp = {2, 70, 83, 32, 1, 0, 1, 4, 0};
  mi_graph_t *g = nbits_graph(&sp, NULL, NULL, NULL, NULL), *back = NULL;
  mi_error_t err = {0};
  char path[] = "/tmp/mi_test_nbits_XXXXXX";
  int fd = mkstemp(path);
  float a[140];
  for (int i = 0; i < 140; i++) a[i] = 0.01f * (float)((i * 37) % 101) - 0.5f;
  CHECK(fd >= 0, "temp file");
  close(fd);
  g->opset = 17;
  mi_array_t *want = ref_run(g, a);
  CHECK(mi_onnx_save(g, path, &err) == MI_OK, "save: %s", err.message);
  CHECK(mi_onnx_load(path, &back, &err) == MI_OK, "load: %s", err.message);
  if (back) {
    int32_t codes = -1, mm = -1;
    for (int32_t t = 0; t < back->tensor_count; t++)
      if (back->tensors[t].data && back->tensors[t].rank == 2 && back->tensors[t].dims[0] == 70 &&
          back->tensors[t].dims[1] == 83)
        codes = t;
    for (int32_t i = 0; i < back->node_count; i++)
      if (!strcmp(back->nodes[i].name, "mm")) mm = i;
    CHECK(codes >= 0 && back->tensors[codes].dtype == MI_DTYPE_INT4 && back->tensors[codes].nbytes == (70 * 83 + 1) / 2,
          "the codes are packed INT4 [70, 83]");
    CHECK(mi_graph_find_tensor(back, "b") < 0 && mi_graph_find_tensor(back, "scales") < 0, "the packed inputs are gone");
    CHECK(mm >= 0 && !strcmp(back->nodes[mm].op_type, "MatMul"), "the node is the MatMul");
    mi_array_t *got = ref_run(back, a);
    CHECK(got && tu_rel_l2_arrays(got, want) == 0.0, "the lowered form gives the node's values");
    mi_array_destroy(got);
    /* written back: a blocked DequantizeLinear needs opset 21 */
    CHECK(mi_onnx_save(back, path, &err) != MI_OK && strstr(err.message, "opset 21"), "refused: %s", err.message);
  }
  unlink(path);
  mi_array_destroy(want);
  mi_graph_destroy(back);
  mi_graph_destroy(g);
}

static void refused(const nspec_t *sp, const char *want) {
  mi_graph_t *g = nbits_graph(sp, NULL, NULL, NULL, NULL);
  mi_error_t err = {0};
  CHECK(mi_graph_toposort(g, &err) == MI_OK, "sort");
  CHECK(mi_graph_infer_shapes(g, &err) != MI_OK && strstr(err.message, want) && strstr(err.message, "'mm'") &&
            !strchr(err.message, '\n'),
        "refused naming '%s': %s", want, err.message);
  mi_graph_destroy(g);
}

static void malformed(void) {
  nspec_t b_short = {1, 40, 3, 16, 1, 0, 0, 4, 1}, block24 = {1, 48, 3, 24, 0, 0, 0, 4, 0},
          block8 = {1, 48, 3, 8, 0, 0, 0, 4, 0}, bits3 = {1, 48, 3, 16, 0, 0, 0, 3, 0};
  refused(&b_short, "B has shape");
  refused(&block24, "block_size = 24");
  refused(&block8, "block_size = 8");
  refused(&bits3, "bits = 3");
}

static mi_array_t *rand_a(const mi_graph_t *g, uint64_t seed) { return input_for(g, seed); }

/* blis-cpu against the reference: the session lowers the node to a blocked DequantizeLinear + MatMul. */
static void on_plugin(mi_plugin_t *p) {
  static const int64_t kn[][3] = {{40, 5, 16}, {70, 83, 32}, {64, 150, 32}, {100, 130, 64}};
  for (int64_t m = 1; m <= 3; m++)
    for (size_t i = 0; i < sizeof kn / sizeof kn[0]; i++)
      for (int f = 0; f < 4; f++) {
        nspec_t sp = {m, kn[i][0], kn[i][1], kn[i][2], f & 1, 0, (f >> 1) & 1, 4, 0};
        mi_graph_t *g = nbits_graph(&sp, NULL, NULL, NULL, NULL);
        mi_error_t err = {0};
        mi_array_t *x, *got[4] = {0}, *want[4] = {0};
        if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("nbits graph", &err);
        x = rand_a(g, 5 + (uint64_t)m);
        mi_session_t *s = session(g, p);
        run(s, g, x, got);
        ref(g, x, want);
        double d = tu_rel_l2_arrays(got[0], want[0]);
        CHECK(d < 1e-5, "M%lld K%lld N%lld block %lld zp%d bias%d: rel L2 %.3e", (long long)m, (long long)sp.k,
              (long long)sp.n, (long long)sp.block, sp.zp, sp.bias, d);
        destroy_outs(got, want);
        mi_session_destroy(s);
        mi_array_destroy(x);
        mi_graph_destroy(g);
      }
}

/* The INT4 form: DequantizeLinear(INT8 codes in -8..7 [K, N], scales [kb, N], zero points, axis 0,
 * block_size) -> MatMul, one row: one kernel of both nodes on the codes. */
static void on_plugin_qdq(mi_plugin_t *p) {
  static const int64_t kn[][3] = {{40, 5, 16}, {70, 83, 32}, {100, 150, 64}};
  for (size_t i = 0; i < sizeof kn / sizeof kn[0]; i++)
    for (int zp = 0; zp < 2; zp++) {
      int64_t k = kn[i][0], n = kn[i][1], bs = kn[i][2], kb = (k + bs - 1) / bs;
      int64_t ad[2] = {1, k}, wd[2] = {k, n}, sd[2] = {kb, n};
      mi_graph_t *g = mi_graph_create("qdq4");
      mi_error_t err = {0};
      uint64_t seed = 7 + (uint64_t)k;
      int8_t *q = malloc((size_t)(k * n)), *z = malloc((size_t)(kb * n));
      float *s = malloc(sizeof *s * (size_t)(kb * n));
      for (int64_t e = 0; e < k * n; e++) q[e] = (int8_t)((int)(lcg(&seed) % 16) - 8);
      for (int64_t e = 0; e < kb * n; e++) {
        z[e] = zp ? (int8_t)((int)(lcg(&seed) % 16) - 8) : 0;
        s[e] = (float)(1 + lcg(&seed) % 64) / 512.f;
      }
      int32_t a = tin(g, "a", MI_DTYPE_FLOAT32, 2, ad), tq = mi_graph_add_tensor(g, "q", MI_DTYPE_INT8, 2, wd);
      int32_t ts = mi_graph_add_const_f32(g, "s", 2, sd, s), tz = mi_graph_add_tensor(g, "z", MI_DTYPE_INT8, 2, sd);
      int32_t w = mi_graph_add_tensor(g, "w", MI_DTYPE_FLOAT32, -1, NULL), y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
      mi_graph_set_data(g, tq, q, (size_t)(k * n));
      mi_graph_set_data(g, tz, z, (size_t)(kb * n));
      int32_t d = mi_graph_add_node(g, "DequantizeLinear", "dq", zp ? 3 : 2, (int32_t[]){tq, ts, tz}, 1, &w);
      mi_node_set_int(g, d, "axis", 0);
      mi_node_set_int(g, d, "block_size", bs);
      mi_graph_add_node(g, "MatMul", "mm", 2, (int32_t[]){a, w}, 1, &y);
      mi_graph_add_output(g, y);
      g->opset = 21;
      if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("qdq4 graph", &err);
      mi_array_t *x = input_for(g, 3), *got[4] = {0}, *want[4] = {0};
      mi_session_t *ss = session(g, p);
      int32_t members = 0;
      for (int32_t kk = 0; kk < mi_session_kernel_count(ss); kk++) {
        const int32_t *nodes;
        int32_t c = mi_session_kernel_nodes(ss, kk, &nodes);
        for (int32_t j = 0; j < c; j++)
          if (!strcmp(g->nodes[nodes[j]].op_type, "MatMul")) members = c;
      }
      run(ss, g, x, got);
      ref(g, x, want);
      double dd = tu_rel_l2_arrays(got[0], want[0]);
      CHECK(members == 2, "K%lld N%lld: the DequantizeLinear runs in the MatMul's kernel (%d)", (long long)k,
            (long long)n, (int)members);
      CHECK(dd < 1e-5, "K%lld N%lld block %lld zp%d: rel L2 %.3e", (long long)k, (long long)n, (long long)bs, zp, dd);
      destroy_outs(got, want);
      mi_session_destroy(ss);
      mi_array_destroy(x);
      mi_graph_destroy(g);
      free(q), free(z), free(s);
    }
}

static void blis_cpu(void) {
  on_blis_cpu_each_simd(on_plugin);
  on_blis_cpu_each_simd(on_plugin_qdq);
}

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(hand_values), TU_CASE(float_zero_points_and_bits2), TU_CASE(loaded_form),
                                     TU_CASE(malformed), TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
