/* test_meta_history.c - retrieval across models and devices from the history: model features
 * and device fingerprints stored with the records come back with the rows, their descriptors
 * equal those computed directly, and the nearest past task of a new (model, device) is the
 * similar model on the similar device, not the same model on another kind of device nor
 * another kind of model on the same device. */
#define _GNU_SOURCE 1
#include <math.h>
#include <unistd.h>

#include "test_space_util.h"

/* x[1,3,hw,hw] -> Conv 3x3 (c) -> Relu -> Conv 3x3 (c) -> Relu -> GlobalAveragePool ->
 * Flatten -> Gemm (10). */
static mi_graph_t *cnn(int64_t c, int64_t hw) {
  int64_t xd[4] = {1, 3, hw, hw}, w1d[4] = {c, 3, 3, 3}, w2d[4] = {c, c, 3, 3}, wgd[2] = {10, c};
  static const int64_t pads[4] = {1, 1, 1, 1};
  float *w = calloc((size_t)(c * c * 9 + 64), sizeof *w);
  mi_graph_t *g = mi_graph_create("cnn");
  int32_t x, a, r1, r2, c2, gp, fl, y, n;
  mi_error_t err;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, x);
  a = mi_graph_add_tensor(g, "c1", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {x, mi_graph_add_const_f32(g, "w1", 4, w1d, w)};
    n = mi_graph_add_node(g, "Conv", "conv1", 2, in, 1, &a);
  }
  mi_node_set_ints(g, n, "pads", 4, pads);
  r1 = mi_graph_add_tensor(g, "r1", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu1", 1, &a, 1, &r1);
  c2 = mi_graph_add_tensor(g, "c2", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {r1, mi_graph_add_const_f32(g, "w2", 4, w2d, w)};
    n = mi_graph_add_node(g, "Conv", "conv2", 2, in, 1, &c2);
  }
  mi_node_set_ints(g, n, "pads", 4, pads);
  r2 = mi_graph_add_tensor(g, "r2", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", "relu2", 1, &c2, 1, &r2);
  gp = mi_graph_add_tensor(g, "gap", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "GlobalAveragePool", "gap", 1, &r2, 1, &gp);
  fl = mi_graph_add_tensor(g, "flat", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Flatten", "flatten", 1, &gp, 1, &fl);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {fl, mi_graph_add_const_f32(g, "wg", 2, wgd, w)};
    n = mi_graph_add_node(g, "Gemm", "fc", 2, in, 1, &y);
  }
  mi_node_set_int(g, n, "transB", 1);
  mi_graph_add_output(g, y);
  free(w);
  if (mi_graph_toposort(g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "cnn: %s\n", err.message);
    exit(1);
  }
  return g;
}

/* x[1,k] -> Gemm (h) -> Relu -> Gemm (h) -> Sigmoid -> Gemm (4): a different kind of model. */
static mi_graph_t *mlp(int64_t k, int64_t h) {
  int64_t xd[2] = {1, k}, w1d[2] = {h, k}, w2d[2] = {h, h}, w3d[2] = {4, h};
  float *w = calloc((size_t)(h * (k > h ? k : h) + 64), sizeof *w);
  mi_graph_t *g = mi_graph_create("mlp");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, xd), t[6], n;
  mi_error_t err;
  const char *act[2] = {"Relu", "Sigmoid"};
  mi_graph_add_input(g, x);
  t[0] = x;
  for (int i = 0; i < 3; i++) {
    char nm[16];
    int32_t in[2], o = mi_graph_add_tensor(g, i == 2 ? "y" : (i ? "g2" : "g1"), MI_DTYPE_FLOAT32, -1, NULL);
    snprintf(nm, sizeof nm, "w%d", i);
    in[0] = t[2 * i];
    in[1] = mi_graph_add_const_f32(g, nm, 2, i == 0 ? w1d : i == 1 ? w2d
                                                                   : w3d,
                                   w);
    snprintf(nm, sizeof nm, "fc%d", i);
    n = mi_graph_add_node(g, "Gemm", nm, 2, in, 1, &o);
    mi_node_set_int(g, n, "transB", 1);
    if (i == 2) {
      mi_graph_add_output(g, o);
      break;
    }
    t[2 * i + 1] = o;
    t[2 * i + 2] = mi_graph_add_tensor(g, i ? "a2" : "a1", MI_DTYPE_FLOAT32, -1, NULL);
    mi_graph_add_node(g, act[i], act[i], 1, &t[2 * i + 1], 1, &t[2 * i + 2]);
  }
  free(w);
  if (mi_graph_toposort(g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "mlp: %s\n", err.message);
    exit(1);
  }
  return g;
}

enum { NTASK = 4 };

typedef struct {
  mi_meta_task_t tasks[NTASK];
  char keys[NTASK][80];
  int32_t fp_rows;
} collect_t;

/* One source task per (model, device), its descriptor from the row's stored JSON. */
static int collect(void *u, const mi_history_row_t *row) {
  collect_t *c = u;
  char key[80];
  int32_t k;
  snprintf(key, sizeof key, "%s|%s", row->model_hash, row->device_hash);
  for (k = 0; k < NTASK && c->keys[k][0] && strcmp(c->keys[k], key); k++) continue;
  if (k == NTASK) return 1;
  if (!c->keys[k][0]) {
    snprintf(c->keys[k], sizeof c->keys[k], "%s", key);
    CHECK(mi_meta_describe_json(row->model_features_json, row->device_fingerprint_json, c->tasks[k].desc) == 3,
          "row %s: features and fingerprint read back", key);
    c->tasks[k].stack_hash = 1;
  }
  c->tasks[k].count++;
  c->fp_rows += row->device_fingerprint_json != NULL;
  return 0;
}

static char dir[] = "/tmp/mi_meta_hist_XXXXXX", path[128], *fj[NTASK], *dj[3];
static mi_registry_t *reg;
static mi_device_fingerprint_t fp[3];
static mi_model_features_t mf[NTASK + 2];
static mi_graph_t *g[NTASK + 2];
static mi_history_t *h;
/* Sources: a CNN and an MLP, each on npu-stub gen1 and on blis-cpu. Targets: a wider CNN at
 * another resolution on npu-stub gen2, and a larger MLP on npu-stub gen2. */
static const int src_model[NTASK] = {0, 0, 1, 1}, src_dev[NTASK] = {0, 2, 0, 2};

static void setup(void) {
  mi_plugin_t *npu, *blis;
  mi_error_t err;
  reg = tsu_registry();
  npu = mi_registry_find(reg, "npu-stub");
  blis = mi_registry_find(reg, "blis-cpu");
  REQUIRE(npu && blis, "npu-stub and blis-cpu plugins are built");
  REQUIRE(mkdtemp(dir));
  g[0] = cnn(8, 16);
  g[1] = mlp(32, 64);
  g[2] = cnn(16, 24); /* target A */
  g[3] = mlp(48, 96); /* target B */
  for (int i = 0; i < 4; i++) CHECK(mi_model_features(g[i], &mf[i], NULL, NULL, &err) == MI_OK, "%s", err.message);
  CHECK(mi_device_fingerprint(npu, 0, &fp[0], &err) == MI_OK, "%s", err.message);
  CHECK(mi_device_fingerprint(npu, 1, &fp[1], &err) == MI_OK, "%s", err.message);
  CHECK(mi_device_fingerprint(blis, 0, &fp[2], &err) == MI_OK, "%s", err.message);
  for (int i = 0; i < 3; i++) dj[i] = mi_device_fingerprint_json(&fp[i]);
  for (int i = 0; i < 2; i++) fj[i] = mi_model_features_json(&mf[i]);
}

static void teardown(void) {
  char p2[160];
  mi_history_close(h);
  for (int i = 0; i < 3; i++) free(dj[i]);
  for (int i = 0; i < 2; i++) free(fj[i]);
  for (int i = 0; i < 4; i++) mi_graph_destroy(g[i]);
  mi_registry_destroy(reg);
  unlink(path);
  snprintf(p2, sizeof p2, "%s/h.db-wal", dir);
  unlink(p2);
  snprintf(p2, sizeof p2, "%s/h.db-shm", dir);
  unlink(p2);
  rmdir(dir);
}

static void json_descriptor(void) {
  double direct[MI_META_DESC_SIZE];
  /* The JSON read back gives the descriptor computed directly. */
  double back[MI_META_DESC_SIZE];
  CHECK(mi_meta_describe_json(fj[0], dj[0], back) == 3, "both parts read");
  mi_meta_describe(&mf[0], &fp[0], direct);
  for (int j = 0; j < MI_META_DESC_SIZE; j++)
    CHECK(fabs(back[j] - direct[j]) <= 1e-6 * (1 + fabs(direct[j])), "entry %d: %g vs %g", j, back[j], direct[j]);
  CHECK(mi_meta_describe_json(NULL, NULL, back) == 0 && back[0] == 0, "nothing read");
  CHECK(mi_meta_describe_json("{\"layers\":3,\"ops\":{\"Gemm\":3}}", "{\"vector\":[null,1]}", back) == 3 &&
            fabs(back[0] - log10(4.0)) < 1e-12 && back[7] == 1 && back[MI_META_FP_OFFSET] == 0 &&
            back[MI_META_FP_OFFSET + 1] == 1,
        "partial JSON: layers %g, gemm share %g", back[0], back[7]);
}

static void retrieval_from_history(void) {
  mi_history_query_t q;
  collect_t col;
  mi_error_t err;
  double target[MI_META_DESC_SIZE];
  int32_t idx[NTASK], n;
  int64_t run, id;
  char mh[NTASK][17];
  snprintf(path, sizeof path, "%s/h.db", dir);
  CHECK(mi_history_open(path, &h, &err) == MI_OK, "%s", err.message);
  REQUIRE(h, "history %s did not open: %s", path, err.message);
  CHECK(mi_history_begin_run(h, "test", NULL, &run, &err) == MI_OK, "%s", err.message);
  for (int k = 0; k < NTASK; k++) {
    mi_record_t r;
    char dh[17];
    snprintf(mh[k], sizeof mh[k], "%016x", 0xa0 + src_model[k]);
    snprintf(dh, sizeof dh, "%016x", 0xd0 + src_dev[k]);
    for (int i = 0; i < 3; i++) {
      char canon[32];
      memset(&r, 0, sizeof r);
      r.model_hash = mh[k];
      r.model_features_json = fj[src_model[k]];
      r.batch = 1;
      r.input_shapes = mf[src_model[k]].input_shapes;
      r.device_spec = src_dev[k] == 2 ? "blis-cpu:0" : "npu-stub:0";
      r.device_name = fp[src_dev[k]].desc.name;
      r.device_hash = dh;
      r.device_json = dj[src_dev[k]];
      snprintf(canon, sizeof canon, "device{threads=%d}", i + 1);
      r.config_canonical = canon;
      r.stack = "test stack";
      r.stack_hash = "0000000000000001";
      r.ok = 1;
      r.clock = "device";
      r.latency_s.n = 5;
      r.latency_s.median = 1e-3 * (i + 1);
      r.samples_json = "[0.001]";
      r.repeats = 5;
      r.rounds = 1;
      CHECK(mi_history_put(h, &r, &id, &err) == MI_OK, "%s", err.message);
    }
  }
  memset(&q, 0, sizeof q);
  memset(&col, 0, sizeof col);
  q.stack_hash = "0000000000000001";
  CHECK(mi_history_query(h, &q, collect, &col, &err) == MI_OK, "%s", err.message);
  CHECK(col.fp_rows == 3 * NTASK, "every row carries its device's fingerprint (%d)", (int)col.fp_rows);
  for (int k = 0; k < NTASK; k++) CHECK(col.keys[k][0] && col.tasks[k].count == 3, "task %d has its 3 rows", k);

  /* Target A: a wider CNN on gen2. Nearest: the CNN on gen1 (not on blis, not the MLP). */
  mi_meta_describe(&mf[2], &fp[1], target);
  n = mi_meta_retrieve(target, 1, col.tasks, NTASK, NTASK, 0, idx, NULL);
  CHECK(n == NTASK, "all %d tasks ranked (%d)", NTASK, (int)n);
  {
    char want[80];
    snprintf(want, sizeof want, "%016x|%016x", 0xa0, 0xd0);
    CHECK(n > 0 && !strcmp(col.keys[idx[0]], want), "CNN on gen2: nearest %s, want %s", n > 0 ? col.keys[idx[0]] : "-", want);
    /* Without the fingerprint, the model alone decides: one of the two CNN tasks first. */
    mi_meta_describe(&mf[2], NULL, target);
    for (int k = 0; k < NTASK; k++)
      for (int j = MI_META_FP_OFFSET; j < MI_META_DESC_SIZE; j++) col.tasks[k].desc[j] = 0;
    n = mi_meta_retrieve(target, 1, col.tasks, NTASK, 2, 0, idx, NULL);
    CHECK(n == 2 && !strncmp(col.keys[idx[0]], "00000000000000a0", 16) && !strncmp(col.keys[idx[1]], "00000000000000a0", 16),
          "by model features alone, the two CNN tasks come first");
  }
  /* Target B: a larger MLP on gen2 (fingerprints back in). Nearest: the MLP on gen1. */
  memset(&col, 0, sizeof col);
  CHECK(mi_history_query(h, &q, collect, &col, &err) == MI_OK, "%s", err.message);
  mi_meta_describe(&mf[3], &fp[1], target);
  n = mi_meta_retrieve(target, 1, col.tasks, NTASK, 1, 0, idx, NULL);
  {
    char want[80];
    snprintf(want, sizeof want, "%016x|%016x", 0xa1, 0xd0);
    CHECK(n == 1 && !strcmp(col.keys[idx[0]], want), "MLP on gen2: nearest %s, want %s", n ? col.keys[idx[0]] : "-", want);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(json_descriptor),
    TU_CASE(retrieval_from_history),
};

TU_MAIN(setup, teardown)
