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

typedef struct {
  const char *what, *variant;
  shape_t s;
  int64_t rm, rn; /* block knobs; 0: the variant's defaults */
} case_t;

/* Block shapes compile their own pipelines (an unrolled one per conv.dw_vec block, seconds on
 * llvmpipe): conv.vec takes every reg_m on a 3x3 and a 1x1; the 3x3 depthwise every block
 * shape up to the constraint (reg_m * reg_n <= 16), the 5x5 ones a tall and a wide block. */
#define A3 \
  { 2, 5, 11, 9, 10, 1, 3, 1, 1, {1, 2, 1, 0}, 0 } /* 9 columns, 10 outputs: partial blocks */
#define PW \
  { 2, 12, 8, 8, 20, 1, 1, 1, 1, {0, 0, 0, 0}, 1 } /* 1x1 as one row, fused residual */
#define DW1 \
  { 2, 6, 11, 9, 6, 6, 3, 1, 1, {1, 1, 1, 1}, 0 }
#define DW2 \
  { 1, 5, 16, 16, 5, 5, 3, 2, 1, {0, 0, 1, 1}, 1 } /* SAME on an even size + residual */
#define DW5 \
  { 1, 4, 13, 14, 4, 4, 5, 1, 1, {2, 1, 2, 3}, 0 }
#define DW5S2 \
  { 1, 3, 15, 17, 3, 3, 5, 2, 1, {2, 2, 2, 2}, 0 }
static const case_t k_cases[] = {
    {"3x3", "conv.vec", A3, 1, 1},
    {"3x3", "conv.vec", A3, 2, 1},
    {"3x3", "conv.vec", A3, 4, 1},
    {"3x3", "conv.vec", A3, 8, 1},
    {"1x1 row + residual", "conv.vec", PW, 1, 1},
    {"1x1 row + residual", "conv.vec", PW, 2, 1},
    {"1x1 row + residual", "conv.vec", PW, 8, 1},
    {"5x5 stride 2 (the detector's first layer)", "conv.vec", {2, 3, 13, 13, 24, 1, 5, 2, 1, {1, 1, 2, 2}, 0}, 0, 0},
    {"dilation 2", "conv.vec", {1, 4, 12, 10, 6, 1, 3, 1, 2, {2, 2, 2, 2}, 0}, 2, 1},
    {"1x1, 15 pixels", "conv.vec", {1, 7, 5, 3, 9, 1, 1, 1, 1, {0, 0, 0, 0}, 0}, 0, 0},
    {"1x1 stride 2 (not a row) + residual", "conv.vec", {1, 8, 9, 9, 8, 1, 1, 2, 1, {0, 0, 0, 0}, 1}, 4, 1},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 1, 1},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 2, 1},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 1, 2},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 4, 2},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 8, 1},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 1, 8},
    {"dw 3x3 s1", "conv.dw_vec", DW1, 4, 4},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 1, 1},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 2, 1},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 1, 2},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 4, 2},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 8, 1},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 1, 8},
    {"dw 3x3 s2 + residual", "conv.dw_vec", DW2, 4, 4},
    {"dw 5x5 s1", "conv.dw_vec", DW5, 2, 1},
    {"dw 5x5 s1", "conv.dw_vec", DW5, 1, 2},
    {"dw 5x5 s2", "conv.dw_vec", DW5S2, 0, 0},
    {"dw 5x5 s2", "conv.dw_vec", DW5S2, 2, 2},
};

static void against_reference(void) {
  for (unsigned i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
    expect(k_cases[i].what, &k_cases[i].s, k_cases[i].variant, k_cases[i].rm, k_cases[i].rn);
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
    TU_CASE(against_reference),
    TU_CASE(refusals),
};

TU_MAIN(setup, teardown)
