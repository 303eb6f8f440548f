/* bench_blis_zoo.c - end-to-end latency of one mi-zoo model on blis-cpu:0 through mi_session, the
 * best of a few configurations (kernel set x plain/fused graph); also writes the model and its
 * input for the ONNX Runtime peer.
 * Usage: bench_blis_zoo BUILD_DIR FAMILY THREADS OUT_DIR [REPEAT]. Prints one JSON line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "zoo.h"
#include "zoo_bench.h"

/* Median, p10, p90 (ms) of `reps` session runs after 3 warm-ups; -1 when the session fails. */
static double time_session(const mi_graph_t *g, mi_plugin_t *p, const mi_session_options_t *o,
                           const mi_array_t *in, int reps, double *p10, double *p90, int *fallbacks,
                           int *kernels) {
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  double t[256], med = -1.;
  int r, ok = 1;
  if (mi_session_create(g, p, 0, o, &s, &err) != MI_OK) {
    fprintf(stderr, "session: %s\n", err.message);
    return -1.;
  }
  *fallbacks = mi_session_fallback_count(s);
  *kernels = mi_session_kernel_count(s);
  for (r = -3; r < reps && ok; r++) {
    mi_array_t *out = NULL;
    double t0 = 1e3 * mi_now_s();
    ok = mi_session_run(s, &in, 1, &out, 1, &err) == MI_OK;
    if (r >= 0) t[r] = 1e3 * mi_now_s() - t0;
    mi_array_destroy(out);
  }
  if (ok) {
    qsort(t, (size_t)reps, sizeof t[0], zb_cmp_double);
    med = t[reps / 2];
    *p10 = t[reps / 10];
    *p90 = t[reps * 9 / 10];
  }
  mi_session_destroy(s);
  return med;
}

int main(int argc, char **argv) {
  mi_registry_t *r = mi_registry_create();
  mi_plugin_t *p = NULL;
  mi_graph_t *g = NULL;
  mi_array_t *in = NULL;
  mi_error_t err = {0};
  mi_zoo_options_t opt;
  mi_knob_desc_t *knobs = NULL;
  mi_node_choice_t *ch = NULL;
  uint32_t nknobs = 0, dev = 0, ki;
  char path[1024], archs[256] = "", archs_all[256] = "", *save = NULL, *tok;
  mi_graph_t *graphs[2] = {NULL, NULL};
  int gi;
  int32_t threads, reps, i, rc = 1;
  const mi_zoo_family_t *fam;
  double best = -1., bp10 = 0., bp90 = 0.;
  char best_cfg[64] = "";
  if (argc < 5) {
    fprintf(stderr, "usage: bench_blis_zoo BUILD_DIR FAMILY THREADS OUT_DIR [REPEAT]\n");
    return 2;
  }
  threads = (int32_t)strtol(argv[3], NULL, 10);
  reps = zb_repeats(argc, argv, 5, 20, 256);
  fam = mi_zoo_family_find(argv[2]);
  snprintf(path, sizeof path, "%s/plugins", argv[1]);
  if (!fam || mi_registry_scan(r, path, &err) != MI_OK ||
      mi_registry_device(r, "blis-cpu:0", &p, &dev, &err) != MI_OK) {
    fprintf(stderr, "bench_blis_zoo: %s\n", fam ? err.message : "unknown family");
    goto done;
  }
  mi_zoo_options_default(&opt);
  if (mi_zoo_build(argv[2], &opt, &g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "bench_blis_zoo: %s\n", err.message);
    goto done;
  }
  {
    const mi_tensor_t *t = &g->tensors[g->inputs[0]];
    in = mi_array_create(t->dtype, t->rank, t->dims);
  }
  if (!in) goto done;
  mi_array_fill_random(in, 1);
  snprintf(path, sizeof path, "%s/%s.onnx", argv[4], argv[2]);
  if (mi_onnx_save(g, path, &err) != MI_OK) goto fail;
  snprintf(path, sizeof path, "%s/%s.input.npy", argv[4], argv[2]);
  if (mi_npy_save(path, in, &err) != MI_OK) goto fail;
  if (mi_plugin_knobs(p, dev, &knobs, &nknobs, &err) != MI_OK) goto fail;
  for (ki = 0; ki < nknobs; ki++)
    if (strcmp(knobs[ki].name, "arch") == 0) snprintf(archs_all, sizeof archs_all, "%s", knobs[ki].choices);
  if (zb_fuse(g, p, dev, &graphs[1], &err) != MI_OK) goto fail;
  graphs[0] = g;
  ch = calloc((size_t)g->node_count + 1, sizeof *ch);
  if (!ch) goto done;
  for (gi = 0; gi < 2; gi++) {
    const mi_graph_t *gx = graphs[gi];
    snprintf(archs, sizeof archs, "%s", archs_all);
    /* Configurations: the `arch` kernel set for every BLIS-backed node (auto first); the plugin's
     * default variants, which the conv benchmark shows are the fastest per conv shape. */
    for (tok = strtok_r(archs, "|", &save), ki = 0; tok; tok = strtok_r(NULL, "|", &save), ki++) {
      mi_knob_value_t kv[2] = {{"arch", (int64_t)ki, 0.}, {"threads", threads, 0.}};
      mi_session_options_t o;
      double p10 = 0., p90 = 0., med;
      int32_t n = 0;
      int fb = 0, nk = 0;
      if (strcmp(tok, "generic") == 0 || strcmp(tok, "blis") == 0) continue; /* reference kernels */
      for (i = 0; i < gx->node_count; i++) {
        const char *op = gx->nodes[i].op_type;
        if (strcmp(op, "Conv") && strcmp(op, "Gemm") && strcmp(op, "MatMul")) continue;
        ch[n].node = gx->nodes[i].name;
        ch[n].knob_count = 1;
        ch[n++].knobs = kv;
      }
      memset(&o, 0, sizeof o);
      o.struct_size = (uint32_t)sizeof o;
      o.device_knob_count = 1;
      o.device_knobs = &kv[1];
      o.choice_count = n;
      o.choices = ch;
      o.allow_host_fallback = 1;
      med = time_session(gx, p, &o, in, reps, &p10, &p90, &fb, &nk);
      fprintf(stderr, "  %s threads=%d %s arch=%s: median %.3f ms (kernels %d, fallbacks %d)\n", argv[2],
              threads, gi ? "fused" : "plain", tok, med, nk, fb);
      if (med > 0. && (best < 0. || med < best)) {
        best = med;
        bp10 = p10;
        bp90 = p90;
        snprintf(best_cfg, sizeof best_cfg, "%s,%s", gi ? "fused" : "plain", tok);
      }
    }
  }
  printf(
      "{\"family\":\"%s\",\"input\":\"%s\",\"threads\":%d,\"best\":\"%s\",\"median_ms\":%.4f,"
      "\"p10_ms\":%.4f,\"p90_ms\":%.4f}\n",
      argv[2], fam->input_name, threads, best_cfg, best, bp10, bp90);
  rc = best > 0. ? 0 : 1;
  goto done;
fail:
  fprintf(stderr, "bench_blis_zoo: %s\n", err.message);
done:
  free(ch);
  free(knobs);
  mi_array_destroy(in);
  mi_graph_destroy(graphs[1]);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
  return rc;
}
