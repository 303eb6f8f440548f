/* test_exec_padfold.c - a zero constant Pad of the spatial dims read by one Conv becomes the
 * Conv's padding in the session (framework/src/graph/pad_fold.c): one step fewer, the
 * reference interpreter's result (which runs the Pad as written), on every device plugin that
 * loads (opencl, vulkan, npu-stub where built); every Pad that is not such a Pad still runs. */
#include "test_exec_util.h"

static mi_registry_t *r;

enum { VALUE_ZERO,
       VALUE_HALF,
       MODE_REFLECT,
       BATCH,
       TWO_READERS,
       ATTR_PADS };

/* x[1,C,H,W] -> Pad -> Conv 3x3 (stride, pads) -> y; the Pad's amounts are ONNX order. */
static mi_graph_t *pad_conv(int kind, int64_t stride, const int64_t conv_pads[4], const int64_t pad[8]) {
  mi_graph_t *g = mi_graph_create("padfold");
  int64_t C = 6, H = 13, W = 10, M = 5;
  int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, 3, 3}, st[2] = {stride, stride};
  float wv[5 * 6 * 9], half = 0.5f;
  int32_t x, p, w, y, pads, val, n, ins[3], cin[2];
  for (int i = 0; i < 5 * 6 * 9; i++) wv[i] = (float)((i * 37) % 19 - 9) / 9.0f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  p = mi_graph_add_tensor(g, "padded", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  w = mi_graph_add_const_f32(g, "w", 4, wd, wv);
  pads = mi_graph_add_const_i64(g, "pads", 8, pad);
  val = mi_graph_add_const_f32(g, "value", 0, NULL, kind == VALUE_HALF ? &half : &(float){0});
  mi_graph_add_input(g, x);
  ins[0] = x;
  ins[1] = kind == ATTR_PADS ? -1 : pads;
  ins[2] = kind == VALUE_HALF || kind == VALUE_ZERO ? val : -1;
  n = mi_graph_add_node(g, "Pad", "pad", kind == ATTR_PADS ? 1 : 3, ins, 1, &p);
  if (kind == MODE_REFLECT) mi_node_set_string(g, n, "mode", "reflect");
  if (kind == ATTR_PADS) {
    g->opset = 10; /* the pads attribute of Pad-2 */
    mi_node_set_ints(g, n, "pads", 8, pad);
  }
  cin[0] = p;
  cin[1] = w;
  n = mi_graph_add_node(g, "Conv", "conv", 2, cin, 1, &y);
  mi_node_set_ints(g, n, "kernel_shape", 2, (int64_t[]){3, 3});
  mi_node_set_ints(g, n, "strides", 2, st);
  if (conv_pads) mi_node_set_ints(g, n, "pads", 4, conv_pads);
  mi_graph_add_output(g, y);
  if (kind == TWO_READERS) mi_graph_add_output(g, p);
  mi_error_t err = {0};
  if (mi_graph_infer_shapes(g, &err) != MI_OK) die("infer shapes", &err);
  return g;
}

/* Runs one graph on p and the reference; returns the session's steps (kernels + host nodes). */
static int32_t check(mi_plugin_t *p, int kind, int64_t stride, const int64_t *conv_pads, const int64_t pad[8]) {
  mi_graph_t *g = pad_conv(kind, stride, conv_pads, pad);
  mi_array_t *got[4] = {0}, *want[4] = {0};
  int32_t steps = run_both(g, p, 3, got, want);
  double d = tu_rel_l2_arrays(got[0], want[0]);
  printf("%s kind %d stride %lld: %d steps, rel L2 vs reference %.2e\n", p->name, kind,
         (long long)stride, steps, d);
  /* npu-stub computes in FP16 (docs/backends/npu-stub.md): its own tolerance, folded or not */
  CHECK(d < (strcmp(p->name, "npu-stub") ? 1e-5 : 2e-3), "%s kind %d stride %lld: rel L2 %.3e",
        p->name, kind, (long long)stride, d);
  if (kind == TWO_READERS) CHECK(tu_rel_l2_arrays(got[1], want[1]) < 1e-6, "the Pad's own output");
  destroy_outs(got, want);
  mi_graph_destroy(g);
  return steps;
}

static void on_plugin(mi_plugin_t *p) {
  static const int64_t same_s2[8] = {0, 0, 0, 0, 0, 0, 1, 1}; /* TensorFlow SAME, stride 2 */
  static const int64_t uneven[8] = {0, 0, 2, 1, 0, 0, 0, 3};
  static const int64_t batch[8] = {1, 0, 1, 1, 0, 0, 1, 1};
  static const int64_t one[4] = {1, 1, 1, 1};
  CHECK(check(p, VALUE_ZERO, 2, NULL, same_s2) == 1, "%s: SAME stride-2 Pad folded", p->name);
  CHECK(check(p, VALUE_ZERO, 1, one, uneven) == 1, "%s: Pad added to the conv's pads", p->name);
  CHECK(check(p, ATTR_PADS, 2, NULL, same_s2) == 1, "%s: Pad-2's attribute folded", p->name);
  CHECK(check(p, VALUE_HALF, 2, NULL, same_s2) == 2, "%s: a 0.5 Pad runs", p->name);
  CHECK(check(p, MODE_REFLECT, 1, NULL, (int64_t[8]){0, 0, 1, 1, 0, 0, 1, 1}) == 2,
        "%s: a reflect Pad runs", p->name);
  CHECK(check(p, BATCH, 1, NULL, batch) == 2, "%s: a batch Pad runs", p->name);
  CHECK(check(p, TWO_READERS, 2, NULL, same_s2) == 2, "%s: a Pad that is an output runs", p->name);
}

static void setup(void) {
  r = open_plugins();
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void blis_cpu(void) { on_blis_cpu(r, on_plugin); }

static void others(void) { other_plugins(r, on_plugin); }

static const tu_case_t tu_cases[] = {
    TU_CASE(blis_cpu),
    TU_CASE(others),
};

TU_MAIN(setup, teardown)
