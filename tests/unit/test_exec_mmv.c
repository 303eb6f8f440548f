/* test_exec_mmv.c - a MatMul of 1 to 4 rows of A by a runtime B on blis-cpu (plugins/blis_cpu/blis_mmv.c,
 * a decoding step's attention against its cache): B as it is (rows contiguous) and through a
 * Transpose the session folds into B's strides (columns contiguous), with a scalar Mul folded into
 * alpha, batch dims that broadcast, K and N under a vector, with masked tails and over several
 * blocks, one and two threads, at every SIMD cap: within 1e-5 relative L2 of the reference
 * interpreter, in one kernel. Five rows (BLIS) as the control. */
#include "test_exec_util.h"

typedef struct mspec {
  int64_t m, k, n;
  int trans; /* B is Transpose(perm [0, 2, 1]) of an input [batch, n, k] */
  int scale; /* A times a scalar constant first (a folded Mul) */
  int bcast; /* A [2, batch, m, k] against B [batch, ...]: A's extra batch dim broadcasts B */
  int64_t batch;
} mspec_t;

static mi_graph_t *mm_graph(const mspec_t *sp) {
  mi_graph_t *g = mi_graph_create("mmv");
  int64_t ad[4] = {2, sp->batch, sp->m, sp->k}, bd[3] = {sp->batch, sp->trans ? sp->n : sp->k, sp->trans ? sp->k : sp->n};
  int32_t a, b, bb, aa, y, n;
  float half = 0.125f;
  mi_error_t err = {0};
  g->opset = 13;
  a = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, sp->bcast ? 4 : 3, sp->bcast ? ad : ad + 1);
  b = mi_graph_add_tensor(g, "b", MI_DTYPE_FLOAT32, 3, bd);
  mi_graph_add_input(g, a);
  mi_graph_add_input(g, b);
  bb = b;
  if (sp->trans) {
    bb = mi_graph_add_tensor(g, "bt", MI_DTYPE_FLOAT32, -1, NULL);
    n = mi_graph_add_node(g, "Transpose", "tr", 1, (int32_t[]){b}, 1, (int32_t[]){bb});
    mi_node_set_ints(g, n, "perm", 3, (int64_t[]){0, 2, 1});
  }
  aa = a;
  if (sp->scale) {
    aa = mi_graph_add_tensor(g, "as", MI_DTYPE_FLOAT32, -1, NULL);
    mi_graph_add_node(g, "Mul", "sc", 2, (int32_t[]){a, mi_graph_add_const_f32(g, "half", 0, NULL, &half)}, 1,
                      (int32_t[]){aa});
  }
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "MatMul", "mm", 2, (int32_t[]){aa, bb}, 1, (int32_t[]){y});
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, &err) || mi_graph_infer_shapes(g, &err)) die("mmv graph", &err);
  return g;
}

static void check(mi_plugin_t *p, const mspec_t *sp, int32_t threads) {
  mi_graph_t *g = mm_graph(sp);
  const mi_tensor_t *ta = &g->tensors[g->inputs[0]], *tb = &g->tensors[g->inputs[1]];
  mi_array_t *in[2], *got[4] = {0}, *want[4] = {0};
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_options_t o;
  mi_session_t *s;
  mi_error_t err = {0};
  double d;
  in[0] = mi_array_create(ta->dtype, ta->rank, ta->dims);
  in[1] = mi_array_create(tb->dtype, tb->rank, tb->dims);
  if (!in[0] || !in[1]) die("inputs", NULL);
  mi_array_fill_random(in[0], 7 + (uint64_t)sp->m);
  mi_array_fill_random(in[1], 11 + (uint64_t)sp->n);
  memset(&o, 0, sizeof o);
  o.device_knob_count = 1;
  o.device_knobs = &th;
  s = session_opts(g, p, o);
  if (mi_session_run(s, (const mi_array_t *const *)in, 2, got, 1, &err) != MI_OK) die("mi_session_run", &err);
  if (mi_ref_run(g, (const mi_array_t *const *)in, 2, want, 1, &err) != MI_OK) die("mi_ref_run", &err);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("M%lld K%lld N%lld batch %lld%s%s%s t%d: %d kernel(s), %d on the host, rel L2 %.2e\n", (long long)sp->m,
         (long long)sp->k, (long long)sp->n, (long long)sp->batch, sp->trans ? " transposed B" : "",
         sp->scale ? " alpha" : "", sp->bcast ? " broadcast" : "", threads, (int)mi_session_kernel_count(s),
         (int)mi_session_fallback_count(s), d);
  CHECK(d < 1e-5, "rel L2 %.3e", d);
  CHECK(mi_session_kernel_count(s) == 1 && mi_session_fallback_count(s) == 0,
        "one kernel (Transpose and Mul folded into the MatMul), nothing on the host");
  destroy_outs(got, want);
  mi_session_destroy(s);
  mi_array_destroy(in[0]);
  mi_array_destroy(in[1]);
  mi_graph_destroy(g);
}

static void on_plugin(mi_plugin_t *p) {
  /* K and N: under one vector, a masked tail, several blocks and a tail */
  static const int64_t kn[][2] = {{7, 5}, {36, 83}, {207, 36}, {45, 150}};
  for (int64_t m = 1; m <= 5; m++)
    for (size_t i = 0; i < sizeof kn / sizeof kn[0]; i++)
      for (int f = 0; f < 4; f++) {
        mspec_t sp = {m, kn[i][0], kn[i][1], f & 1, (f >> 1) & 1, (int)((m + (int64_t)i) & 1), 3};
        check(p, &sp, (int32_t)(1 + (m + f) % 2));
      }
}

static void blis_cpu(void) { on_blis_cpu_each_simd(on_plugin); }

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
