/* test_vulkan_vec.c - conv.vec and conv.dw_vec (the register-blocked convolutions for CPU
 * Vulkan drivers) against mi_ref_run (rel L2 < 1e-4): batch 2, odd sizes where the column quads
 * and channel blocks end part-way, strides, asymmetric pads, dilation, 1x1 convolutions viewed
 * as one row (with and without a whole last quad), every block knob, a fused residual, and the
 * shapes each variant refuses. */
#include "test_vulkan_util.h"

static mi_plugin_t *g_p;
static mi_registry_t *r;

typedef struct {
  int64_t n, c, h, w, k, group, ks, stride, dil;
  int64_t pads[4];
  int residual; /* Conv -> Add(runtime input) -> Relu */
} shape_t;

static mi_graph_t *conv_graph(const shape_t *s) {
  int64_t xd[4] = {s->n, s->c, s->h, s->w}, wd[4] = {s->k, s->c / s->group, s->ks, s->ks}, bd[1] = {s->k};
  int64_t st[2] = {s->stride, s->stride}, dl[2] = {s->dil, s->dil};
  int32_t x, y, in[3], t, rr;
  mi_graph_t *g = mi_graph_create("vec");
  int n;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  t = s->residual ? mi_graph_add_tensor(g, "t", MI_DTYPE_FLOAT32, -1, NULL) : y;
  in[0] = x;
  in[1] = tv_const(g, "w", 4, wd, 3);
  in[2] = tv_const(g, "b", 1, bd, 4);
  n = mi_graph_add_node(g, "Conv", "n", 3, in, 1, &t);
  mi_node_set_int(g, n, "group", s->group);
  mi_node_set_ints(g, n, "strides", 2, st);
  mi_node_set_ints(g, n, "pads", 4, s->pads);
  mi_node_set_ints(g, n, "dilations", 2, dl);
  if (s->residual) {
    int64_t oh = (s->h + s->pads[0] + s->pads[2] - s->dil * (s->ks - 1) - 1) / s->stride + 1;
    int64_t ow = (s->w + s->pads[1] + s->pads[3] - s->dil * (s->ks - 1) - 1) / s->stride + 1;
    int64_t rd[4] = {s->n, s->k, oh, ow};
    int32_t a, ai[2];
    rr = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, 4, rd);
    mi_graph_add_input(g, rr);
    a = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, -1, NULL);
    ai[0] = t, ai[1] = rr;
    mi_graph_add_node(g, "Add", "add", 2, ai, 1, &a);
    mi_graph_add_node(g, "Relu", "relu", 1, &a, 1, &y);
  }
  mi_graph_add_output(g, y);
  return g;
}

static void expect(const char *what, const shape_t *s, const char *variant, int64_t rm, int64_t rn) {
  mi_knob_value_t kn[3] = {{"local_x", 16, 0}, {"reg_m", rm, 0}, {"reg_n", rn, 0}};
  mi_error_t err = {0, ""};
  mi_graph_t *g = conv_graph(s);
  int fb = -1, nk = variant[5] == 'd' ? 3 : 2;
  double e = tv_compare(g_p, g, "n", variant, rm ? kn : NULL, rm ? nk : 0, 0, &fb, NULL, &err);
  CHECK(e >= 0 && e < 1e-4, "%s [%s reg_m %lld reg_n %lld]: rel L2 %g (%s)", what, variant, (long long)rm,
        (long long)rn, e, err.message);
  CHECK(fb == 0, "%s: %d host fallbacks", what, fb);
  mi_graph_destroy(g);
}

static void setup(void) { r = tv_load_or_skip(&g_p, "/tmp/mi-test-vulkan-vec-cache"); }

static void teardown(void) { mi_registry_destroy(r); }

static void conv_vec(void) {
  /* 3x3, asymmetric pads, 9 columns (a partial last quad), 10 outputs (partial channel block) */
  shape_t a = {2, 5, 11, 9, 10, 1, 3, 1, 1, {1, 2, 1, 0}, 0};
  shape_t s2 = {2, 3, 13, 13, 24, 1, 5, 2, 1, {1, 1, 2, 2}, 0}; /* the detector's first layer */
  shape_t dl = {1, 4, 12, 10, 6, 1, 3, 1, 2, {2, 2, 2, 2}, 0};
  shape_t pw = {2, 12, 8, 8, 20, 1, 1, 1, 1, {0, 0, 0, 0}, 1};   /* 1x1 as one row, fused tail */
  shape_t pw_odd = {1, 7, 5, 3, 9, 1, 1, 1, 1, {0, 0, 0, 0}, 0}; /* H*W = 15 */
  shape_t pw_s2 = {1, 8, 9, 9, 8, 1, 1, 2, 1, {0, 0, 0, 0}, 1};  /* 1x1 stride 2: not a row */
  for (int64_t rm = 1; rm <= 8; rm *= 2) {
    expect("3x3", &a, "conv.vec", rm, 1);
    expect("1x1 row + residual", &pw, "conv.vec", rm, 1);
  }
  expect("5x5 stride 2", &s2, "conv.vec", 0, 0);
  expect("dilation 2", &dl, "conv.vec", 2, 1);
  expect("1x1, 15 pixels", &pw_odd, "conv.vec", 0, 0);
  expect("1x1 stride 2 + residual", &pw_s2, "conv.vec", 4, 1);
}

static void dw_vec(void) {
  shape_t s1 = {2, 6, 11, 9, 6, 6, 3, 1, 1, {1, 1, 1, 1}, 0};
  shape_t s2 = {1, 5, 16, 16, 5, 5, 3, 2, 1, {0, 0, 1, 1}, 1}; /* SAME on an even size + residual */
  shape_t k5 = {1, 4, 13, 14, 4, 4, 5, 1, 1, {2, 1, 2, 3}, 0};
  shape_t k5s2 = {1, 3, 15, 17, 3, 3, 5, 2, 1, {2, 2, 2, 2}, 0};
  /* each block shape compiles its own unrolled pipeline (seconds on llvmpipe): the 3x3 cases
   * take every shape up to the constraint, the 5x5 ones a tall and a wide block */
  static const int64_t blocks[][2] = {{1, 1}, {2, 1}, {1, 2}, {4, 2}, {8, 1}, {1, 8}, {4, 4}};
  for (unsigned i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    expect("dw 3x3 s1", &s1, "conv.dw_vec", blocks[i][0], blocks[i][1]);
    expect("dw 3x3 s2 + residual", &s2, "conv.dw_vec", blocks[i][0], blocks[i][1]);
  }
  expect("dw 5x5 s1", &k5, "conv.dw_vec", 2, 1);
  expect("dw 5x5 s1", &k5, "conv.dw_vec", 1, 2);
  expect("dw 5x5 s2", &k5s2, "conv.dw_vec", 0, 0);
  expect("dw 5x5 s2", &k5s2, "conv.dw_vec", 2, 2);
}

/* A shape a variant cannot run fails the session with the variant's reason (no fallback). */
static void refusals(void) {
  shape_t grouped = {1, 8, 6, 6, 8, 2, 3, 1, 1, {1, 1, 1, 1}, 0};
  shape_t dil = {1, 4, 9, 9, 4, 4, 3, 1, 2, {2, 2, 2, 2}, 0};
  shape_t s3 = {1, 4, 9, 9, 4, 4, 3, 3, 1, {1, 1, 1, 1}, 0};
  mi_knob_value_t big[2] = {{"reg_m", 8, 0}, {"reg_n", 4, 0}};
  mi_error_t err = {0, ""};
  mi_graph_t *g = conv_graph(&grouped);
  double e = tv_compare(g_p, g, "n", "conv.vec", NULL, 0, 0, NULL, NULL, &err);
  CHECK(e == -(double)MI_ERR_UNSUPPORTED && strstr(err.message, "group 1"), "conv.vec, group 2: %g %s", e, err.message);
  e = tv_compare(g_p, g, "n", "conv.dw_vec", NULL, 0, 0, NULL, NULL, &err);
  CHECK(e == -(double)MI_ERR_UNSUPPORTED && strstr(err.message, "group =="), "conv.dw_vec, group 2: %g %s", e, err.message);
  mi_graph_destroy(g);
  g = conv_graph(&dil);
  e = tv_compare(g_p, g, "n", "conv.dw_vec", NULL, 0, 0, NULL, NULL, &err);
  CHECK(e == -(double)MI_ERR_UNSUPPORTED && strstr(err.message, "dilation"), "conv.dw_vec, dilation: %g %s", e, err.message);
  mi_graph_destroy(g);
  g = conv_graph(&s3);
  e = tv_compare(g_p, g, "n", "conv.dw_vec", NULL, 0, 0, NULL, NULL, &err);
  CHECK(e == -(double)MI_ERR_UNSUPPORTED && strstr(err.message, "strides"), "conv.dw_vec, stride 3: %g %s", e, err.message);
  mi_graph_destroy(g);
  e = g_p->api.check_config(g_p->ctx, 0, "conv.dw_vec", big, 2, &err);
  CHECK(e == MI_ERR_INVALID_CONFIG && strstr(err.message, "reg_m * reg_n"), "32 blocks: %g %s", e, err.message);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(conv_vec),
    TU_CASE(dw_vec),
    TU_CASE(refusals),
};

TU_MAIN(setup, teardown)
