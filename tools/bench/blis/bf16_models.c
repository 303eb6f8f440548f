/* bf16_models.c - what BF16 compute costs a whole model in accuracy on blis-cpu: the outputs of
 * a session with the named nodes on blis-cpu's BF16 variants (Conv: conv.packed_gemm_bf16, MatMul:
 * matmul.packed_bf16, Gemm: gemm.packed_bf16) against the default session's (FP32) on the same
 * inputs, per output and sample (relative L2, max |diff| / max |ref|); with MI_BF16_ROUNDS=R, R
 * rounds of one timed run of each session on the first sample, in alternating order (wall time of
 * mi_session_run; the ratio bf16 / default per round, median and range); MI_BF16_THREADS=N runs both
 * sessions on N threads (blis-cpu's `threads`), and with N = 1 the rounds time process CPU time, which
 * a loaded machine does not steal as it does wall time.
 * Usage: bf16_models PLUGIN_DIR MODEL.onnx NODES SAMPLE.npy...  (NODES: a file of one node name a
 * line, or "mm": every MatMul and Gemm whose B is a FLOAT32 initializer, "conv": every dense Conv
 * (group 1) whose weights are one, "mm+conv": both; one .npy per sample, for the model's single
 * input). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi.h"

static int g_cpu_clock; /* MI_BF16_THREADS=1: time process CPU time */

static double now_s(void) {
  struct timespec t;
  if (!g_cpu_clock) return mi_now_s();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* R alternating rounds of one run of each session on `in`: bf16 / default wall-time ratios. */
static int32_t time_rounds(mi_session_t *const *s, const mi_array_t *in, int32_t nout, int rounds, mi_error_t *err) {
  double ratio[64], ms[2][64];
  int r, k;
  if (rounds > 64) rounds = 64;
  for (r = 0; r < rounds; r++) {
    for (k = 0; k < 2; k++) {
      int pass = (r & 1) ? 1 - k : k;
      mi_array_t *y[16] = {NULL};
      double t = now_s();
      int32_t rc = mi_session_run(s[pass], (const mi_array_t *const *)&in, 1, y, nout > 16 ? 16 : nout, err);
      ms[pass][r] = (now_s() - t) * 1e3;
      for (int o = 0; o < 16; o++) mi_array_destroy(y[o]);
      if (rc != MI_OK) return rc;
    }
    ratio[r] = ms[1][r] / ms[0][r];
  }
  qsort(ms[0], (size_t)rounds, sizeof(double), cmp_double);
  qsort(ms[1], (size_t)rounds, sizeof(double), cmp_double);
  qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
  printf("  %d rounds (%s): default median %.2f ms, bf16 median %.2f ms, ratio bf16/default median %.3f [%.3f-%.3f]\n",
         rounds, g_cpu_clock ? "process CPU time" : "wall time", ms[0][rounds / 2], ms[1][rounds / 2], ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
  return MI_OK;
}

/* Relative L2 and max-abs ratio of a against ref (float32 outputs of equal size). */
static void diff(const mi_array_t *a, const mi_array_t *ref, double *rel, double *mx) {
  const float *x = a->data, *y = ref->data;
  int64_t i, n = mi_array_numel(ref);
  double num = 0., den = 0., md = 0., mr = 0.;
  for (i = 0; i < n; i++) {
    double d = (double)x[i] - y[i];
    num += d * d;
    den += (double)y[i] * y[i];
    if (fabs(d) > md) md = fabs(d);
    if (fabs(y[i]) > mr) mr = fabs(y[i]);
  }
  *rel = den > 0. ? sqrt(num / den) : sqrt(num);
  *mx = mr > 0. ? md / mr : md;
}

int main(int argc, char **argv) {
  mi_registry_t *reg = mi_registry_create();
  mi_plugin_t *pl = NULL;
  uint32_t dev = 0;
  mi_graph_t *g = NULL;
  mi_error_t err = {0};
  mi_node_choice_t ch[512];
  static char names[512][512];
  char line[512];
  int32_t nc = 0, rc, a, o, nout;
  double worst = 0.;
  FILE *f = NULL;
  const char *th = getenv("MI_BF16_THREADS");
  int64_t threads = th ? strtoll(th, NULL, 10) : 0;
  mi_knob_value_t kv_threads = {"threads", threads, 0.};
  int mm = argc >= 4 && (!strcmp(argv[3], "mm") || !strcmp(argv[3], "mm+conv"));
  int conv = argc >= 4 && (!strcmp(argv[3], "conv") || !strcmp(argv[3], "mm+conv"));
  if (argc < 5) {
    fprintf(stderr, "usage: bf16_models PLUGIN_DIR MODEL.onnx NODES.txt|mm SAMPLE.npy...\n");
    return 2;
  }
  if (!mm && !conv && !(f = fopen(argv[3], "r"))) {
    fprintf(stderr, "bf16_models: cannot read %s\n", argv[3]);
    return 2;
  }
  rc = reg ? mi_registry_scan(reg, argv[1], &err) : MI_ERR_OUT_OF_MEMORY;
  if (rc == MI_OK) rc = mi_registry_device(reg, "blis-cpu:0", &pl, &dev, &err);
  if (rc == MI_OK) rc = mi_onnx_load(argv[2], &g, &err);
  if (rc != MI_OK) {
    fprintf(stderr, "bf16_models: %s\n", err.message);
    return 1;
  }
  for (a = 0; (mm || conv) && a < g->node_count && nc < 512; a++) {
    const mi_node_t *n = &g->nodes[a];
    const mi_tensor_t *b = n->input_count >= 2 && n->inputs[1] >= 0 ? &g->tensors[n->inputs[1]] : NULL;
    const mi_attr_t *grp = NULL;
    int32_t i;
    for (i = 0; i < n->attr_count; i++)
      if (!strcmp(n->attrs[i].name, "group")) grp = &n->attrs[i];
    if (n->name && b && b->data && b->dtype == MI_DTYPE_FLOAT32 &&
        ((mm && (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm"))) ||
         (conv && !strcmp(n->op_type, "Conv") && (!grp || grp->i == 1))))
      snprintf(names[nc++], sizeof names[0], "%s", n->name);
  }
  while (f && nc < 512 && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0]) snprintf(names[nc++], sizeof names[0], "%s", line);
  }
  if (f) fclose(f);
  for (a = 0; a < nc; a++) { /* each node's op names its BF16 variant */
    const char *op = "Conv";
    int32_t i;
    for (i = 0; i < g->node_count; i++)
      if (g->nodes[i].name && !strcmp(g->nodes[i].name, names[a])) op = g->nodes[i].op_type;
    memset(&ch[a], 0, sizeof ch[a]);
    ch[a].node = names[a];
    ch[a].variant_id = !strcmp(op, "MatMul") ? "matmul.packed_bf16" : !strcmp(op, "Gemm") ? "gemm.packed_bf16"
                                                                                          : "conv.packed_gemm_bf16";
  }
  g_cpu_clock = threads == 1;
  nout = g->output_count;
  printf("%s: %d nodes on BF16 variants, %d outputs\n", argv[2], nc, nout);
  for (a = 4; a < argc; a++) {
    mi_array_t *in = NULL, *y[2][16] = {{NULL}};
    int pass;
    rc = mi_npy_load(argv[a], &in, &err);
    if (rc == MI_OK && g->tensors[g->inputs[0]].rank == in->rank)
      memcpy(g->tensors[g->inputs[0]].dims, in->dims, (size_t)in->rank * sizeof *in->dims);
    if (rc == MI_OK) rc = mi_graph_infer_shapes(g, &err);
    mi_session_t *s[2] = {NULL, NULL};
    for (pass = 0; pass < 2 && rc == MI_OK; pass++) {
      mi_session_options_t so;
      memset(&so, 0, sizeof so);
      so.struct_size = sizeof so;
      so.choice_count = pass ? nc : 0;
      so.device_knob_count = threads > 0;
      so.device_knobs = &kv_threads;
      so.choices = pass ? ch : NULL;
      rc = mi_session_create(g, pl, dev, &so, &s[pass], &err);
      if (rc == MI_OK) rc = mi_session_run(s[pass], (const mi_array_t *const *)&in, 1, y[pass], nout > 16 ? 16 : nout, &err);
    }
    if (rc == MI_OK && a == 4 && getenv("MI_BF16_ROUNDS"))
      rc = time_rounds(s, in, nout, (int)strtol(getenv("MI_BF16_ROUNDS"), NULL, 10), &err);
    mi_session_destroy(s[0]);
    mi_session_destroy(s[1]);
    if (rc != MI_OK) {
      fprintf(stderr, "bf16_models: %s: %s\n", argv[a], err.message);
      return 1;
    }
    for (o = 0; o < nout && o < 16; o++) {
      double rel, mx;
      diff(y[1][o], y[0][o], &rel, &mx);
      if (rel > worst) worst = rel;
      printf("  %s output %d: rel L2 %.3g, max|diff|/max|ref| %.3g\n", argv[a], o, rel, mx);
      mi_array_destroy(y[0][o]);
      mi_array_destroy(y[1][o]);
    }
    mi_array_destroy(in);
  }
  printf("worst rel L2 %.3g\n", worst);
  mi_graph_destroy(g);
  mi_registry_destroy(reg);
  return 0;
}
