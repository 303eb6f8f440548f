/* test_space_util.h - what the space, search and tuning tests share: checks, plugins, a small CNN. */
#ifndef TEST_SPACE_UTIL_H
#define TEST_SPACE_UTIL_H

#include "test_util.h"

/* The built plugins (MI_BUILD/plugins); exits 77-style with a message when not there. */
static inline mi_registry_t *tsu_registry(void) {
  mi_error_t err;
  mi_registry_t *r = mi_registry_create();
  if (!r || tu_scan_plugins(r, &err) != MI_OK) {
    fprintf(stderr, "cannot scan %s/plugins\n", tu_build_dir());
    exit(1);
  }
  return r;
}

/* x[1,3,12,12] -> Conv 3x3 (8) -> BatchNormalization -> Relu -> Conv 1x1 (8) -> Relu
 * -> GlobalAveragePool -> Flatten -> Gemm (10): shapes inferred, sorted. */
static inline mi_graph_t *tsu_small_cnn(void) {
  static const int64_t xd[4] = {1, 3, 12, 12}, w1d[4] = {8, 3, 3, 3}, w2d[4] = {8, 8, 1, 1};
  static const int64_t bnd[1] = {8}, wgd[2] = {10, 8}, bgd[1] = {10}, pads[4] = {1, 1, 1, 1};
  float w1[8 * 27], w2[64], s[8], b[8], mu[8], var[8], wg[80], bg[10];
  mi_graph_t *g = mi_graph_create("small_cnn");
  int32_t t[16], n;
  mi_error_t err;
  for (int i = 0; i < 8 * 27; i++) w1[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
  for (int i = 0; i < 64; i++) w2[i] = (float)((i * 13) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < 80; i++) wg[i] = (float)((i * 7) % 19) / 19.0f - 0.5f;
  for (int i = 0; i < 8; i++) s[i] = 1.0f + 0.1f * (float)i, b[i] = 0.01f * (float)i, mu[i] = 0.02f, var[i] = 1.0f;
  for (int i = 0; i < 10; i++) bg[i] = 0.1f * (float)i;
  t[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, t[0]);
  t[1] = mi_graph_add_const_f32(g, "w1", 4, w1d, w1);
  t[2] = mi_graph_add_tensor(g, "c1", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {t[0], t[1]};
    n = mi_graph_add_node(g, "Conv", "conv1", 2, in, 1, &t[2]);
  }
  mi_node_set_ints(g, n, "pads", 4, pads);
  t[3] = mi_graph_add_const_f32(g, "bn_s", 1, bnd, s);
  t[4] = mi_graph_add_const_f32(g, "bn_b", 1, bnd, b);
  t[5] = mi_graph_add_const_f32(g, "bn_m", 1, bnd, mu);
  t[6] = mi_graph_add_const_f32(g, "bn_v", 1, bnd, var);
  t[7] = mi_graph_add_tensor(g, "bn", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[5] = {t[2], t[3], t[4], t[5], t[6]};
    mi_graph_add_node(g, "BatchNormalization", "bn1", 5, in, 1, &t[7]);
  }
  t[8] = mi_graph_add_tensor(g, "r1", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu1", 1, &t[7], 1, &t[8]);
  t[9] = mi_graph_add_const_f32(g, "w2", 4, w2d, w2);
  t[10] = mi_graph_add_tensor(g, "c2", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {t[8], t[9]};
    mi_graph_add_node(g, "Conv", "conv2", 2, in, 1, &t[10]);
  }
  t[11] = mi_graph_add_tensor(g, "r2", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu2", 1, &t[10], 1, &t[11]);
  t[12] = mi_graph_add_tensor(g, "gap", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "GlobalAveragePool", "gap", 1, &t[11], 1, &t[12]);
  t[13] = mi_graph_add_tensor(g, "flat", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Flatten", "flatten", 1, &t[12], 1, &t[13]);
  t[14] = mi_graph_add_const_f32(g, "wg", 2, wgd, wg);
  t[15] = mi_graph_add_const_f32(g, "bg", 1, bgd, bg);
  {
    int32_t in[3] = {t[13], t[14], t[15]}, y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
    n = mi_graph_add_node(g, "Gemm", "fc", 3, in, 1, &y);
    mi_node_set_int(g, n, "transB", 1);
    mi_graph_add_output(g, y);
  }
  if (mi_graph_toposort(g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "small cnn: %s\n", err.message);
    exit(1);
  }
  return g;
}

/* x[1,C,HW,HW] -> depthwise Conv 3x3 -> Relu -> pointwise Conv (M) -> Relu: a dw+pw unit, shapes
 * inferred, sorted. C <= 16, M <= 32. */
static inline mi_graph_t *tsu_dwpw(int64_t C, int64_t M, int64_t HW) {
  const int64_t xd[4] = {1, C, HW, HW}, wdd[4] = {C, 1, 3, 3}, wpd[4] = {M, C, 1, 1}, pads[4] = {1, 1, 1, 1};
  float wd[16 * 9], wp[32 * 16];
  mi_graph_t *g = mi_graph_create("dwpw");
  int32_t x, d, r, q, y, n;
  mi_error_t err;
  for (int i = 0; i < C * 9; i++) wd[i] = (float)((i * 5) % 7) / 7.0f - 0.5f;
  for (int i = 0; i < M * C; i++) wp[i] = (float)((i * 3) % 13) / 13.0f - 0.5f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  d = mi_graph_add_tensor(g, "d", MI_DTYPE_FLOAT32, -1, NULL);
  r = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, -1, NULL);
  q = mi_graph_add_tensor(g, "q", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  n = mi_graph_add_node(g, "Conv", "dw", 2, (int32_t[]){x, mi_graph_add_const_f32(g, "wd", 4, wdd, wd)}, 1, &d);
  mi_node_set_int(g, n, "group", C);
  mi_node_set_ints(g, n, "pads", 4, pads);
  mi_graph_add_node(g, "Relu", "dw_relu", 1, &d, 1, &r);
  mi_graph_add_node(g, "Conv", "pw", 2, (int32_t[]){r, mi_graph_add_const_f32(g, "wp", 4, wpd, wp)}, 1, &q);
  mi_graph_add_node(g, "Relu", "pw_relu", 1, &q, 1, &y);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "dwpw: %s\n", err.message);
    exit(1);
  }
  return g;
}

/* Index of the dimension named `name`, or -1. */
static inline int32_t tsu_dim(const mi_space_t *s, const char *name) {
  for (int32_t d = 0; d < mi_space_dim_count(s); d++)
    if (!strcmp(mi_space_dim_name(s, d), name)) return d;
  return -1;
}

/* Value index of `label` in dimension d, or -1. */
static inline int32_t tsu_value(const mi_space_t *s, int32_t d, const char *label) {
  for (int32_t v = 0; v < mi_space_dim_size(s, d); v++)
    if (!strcmp(mi_space_dim_label(s, d, v), label)) return v;
  return -1;
}

/* The npu-stub space of tsu_small_cnn, which the search and meta tests build once per file (in
 * their setup) and free in their teardown. A space that does not build fails the file: every
 * case needs it, and a case skipped for it would hide a broken space builder. */
typedef struct tsu_npu_space {
  mi_registry_t *reg;
  mi_graph_t *g;
  mi_plugin_t *p;
  mi_space_t *s;
} tsu_npu_space_t;

static inline void tsu_npu_space_build(tsu_npu_space_t *f) {
  mi_error_t err = {0};
  f->reg = tsu_registry();
  f->g = tsu_small_cnn();
  f->p = mi_registry_find(f->reg, "npu-stub");
  f->s = NULL;
  REQUIRE(f->p != NULL, "npu-stub not loaded");
  REQUIRE(mi_space_create(f->g, f->p, 0, NULL, &f->s, &err) == MI_OK, "space: %s", err.message);
}

static inline void tsu_npu_space_free(tsu_npu_space_t *f) {
  mi_space_destroy(f->s);
  mi_graph_destroy(f->g);
  mi_registry_destroy(f->reg);
}

#endif
