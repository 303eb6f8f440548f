/* decode_loop.c - a merged decoder's cached step run for consecutive cache lengths, as a decoding
 * loop runs it: one session, the self-attention caches one position longer at every token.
 * Prints each token's wall time. A library whose session refuses the new shapes gets a session
 * prepared for them (what a caller of such a library must do), and that time is the token's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metainfer/mi.h"

#pragma weak mi_session_kernel_reused_count

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(void) {
  fprintf(stderr,
          "usage: decode_loop --model M.onnx --calib DIR --plugins DIR [--sample N] "
          "[--device blis-cpu:0] [--threads N] [--from P] [--tokens N] [--warm N] [--check]\n"
          "  runs the cached step at cache lengths P..P+N-1 (inputs from DIR/NAME/N.npy;\n"
          "  a cache of another length repeats its positions); --warm N runs each length\n"
          "  N more times after the first and reports their median too; --check compares\n"
          "  each token's outputs with a session prepared from scratch (exit 3: differ)\n");
}

/* The calibration cache `a` ([1, H, L, D]) grown or cut to `len` positions along axis 2. */
static mi_array_t *resize_cache(const mi_array_t *a, int64_t len) {
  int64_t dims[4] = {a->dims[0], a->dims[1], len, a->dims[3]};
  mi_array_t *r = mi_array_create(a->dtype, 4, dims);
  size_t row = (size_t)a->dims[3] * mi_dtype_size(a->dtype);
  if (!r) return NULL;
  for (int64_t h = 0; h < a->dims[0] * a->dims[1]; h++)
    for (int64_t p = 0; p < len; p++)
      memcpy((char *)r->data + ((size_t)(h * len + p)) * row,
             (const char *)a->data + ((size_t)(h * a->dims[2] + p % a->dims[2])) * row, row);
  return r;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A session prepared from scratch for these inputs' shapes: 1 when its outputs are the bytes
 * `outs` holds, 0 when not, -1 on error. */
static int check_fresh(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                       const mi_session_options_t *o, mi_array_t **ins, mi_array_t **outs,
                       mi_error_t *err) {
  mi_graph_t *c = mi_graph_clone(g);
  mi_session_t *f = NULL;
  mi_array_t **fo = calloc((size_t)g->output_count + 1, sizeof *fo);
  int same = -1;
  if (!c || !fo) goto done;
  for (int32_t i = 0; i < g->input_count; i++) {
    mi_tensor_t *t = &c->tensors[c->inputs[i]];
    t->rank = ins[i]->rank;
    memcpy(t->dims, ins[i]->dims, sizeof t->dims[0] * (size_t)ins[i]->rank);
  }
  if (mi_session_create(c, plugin, device, o, &f, err) ||
      mi_session_run(f, (const mi_array_t *const *)ins, g->input_count, fo, g->output_count, err))
    goto done;
  same = 1;
  for (int32_t i = 0; i < g->output_count; i++)
    if (!outs[i] || fo[i]->nbytes != outs[i]->nbytes || fo[i]->rank != outs[i]->rank ||
        memcmp(fo[i]->data, outs[i]->data, fo[i]->nbytes) != 0)
      same = 0;
done:
  for (int32_t i = 0; fo && i < g->output_count; i++) mi_array_destroy(fo[i]);
  free(fo);
  mi_session_destroy(f);
  mi_graph_destroy(c);
  return same;
}

int main(int argc, char **argv) {
  const char *model = NULL, *calib = NULL, *plugins = NULL, *spec = "blis-cpu:0";
  int sample = 0, threads = 0, from = 8, tokens = 32, warm = 0, check = 0;
  mi_graph_t *g = NULL, *shaped = NULL;
  mi_registry_t *r = NULL;
  mi_plugin_t *plugin = NULL;
  uint32_t device = 0;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  mi_array_t **base = NULL, **ins = NULL, **outs = NULL;
  mi_knob_value_t knob = {"threads", 0, 0};
  mi_session_options_t o;
  int rc = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--model") && v) model = argv[++i];
    else if (!strcmp(argv[i], "--calib") && v)
      calib = argv[++i];
    else if (!strcmp(argv[i], "--plugins") && v)
      plugins = argv[++i];
    else if (!strcmp(argv[i], "--device") && v)
      spec = argv[++i];
    else if (!strcmp(argv[i], "--sample") && v)
      sample = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--threads") && v)
      threads = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--from") && v)
      from = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--tokens") && v)
      tokens = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--warm") && v)
      warm = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--check"))
      check = 1;
    else {
      usage();
      return 2;
    }
  }
  if (!model || !calib || !plugins || from < 1 || tokens < 1 || warm < 0 || warm > 100) {
    usage();
    return 2;
  }
  if (mi_onnx_load(model, &g, &err) || !(r = mi_registry_create()) ||
      mi_registry_scan(r, plugins, &err) || mi_registry_device(r, spec, &plugin, &device, &err))
    goto fail;
  base = calloc((size_t)g->input_count, sizeof *base);
  ins = calloc((size_t)g->input_count, sizeof *ins);
  outs = calloc((size_t)g->output_count + 1, sizeof *outs);
  if (!base || !ins || !outs) goto fail;
  for (int32_t i = 0; i < g->input_count; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%d.npy", calib, g->tensors[g->inputs[i]].name, sample);
    if (mi_npy_load(path, &base[i], &err)) goto fail;
  }
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1;
  knob.i = threads;
  if (threads > 0) {
    o.device_knob_count = 1;
    o.device_knobs = &knob;
  }
  printf("cache_len,ms,prepared,warm_median_ms,kernels,reused%s\n", check ? ",vs_fresh" : "");
  for (int p = from; p < from + tokens; p++) {
    double t0, t1, wt[101];
    int prepared = 0, same = -1;
    for (int32_t i = 0; i < g->input_count; i++) {
      const char *name = g->tensors[g->inputs[i]].name;
      mi_array_destroy(ins[i]);
      ins[i] = strstr(name, ".decoder.") && base[i]->rank == 4 ? resize_cache(base[i], p) : NULL;
      if (!ins[i]) { /* the other inputs as they are */
        ins[i] = mi_array_create(base[i]->dtype, base[i]->rank, base[i]->dims);
        if (ins[i]) memcpy(ins[i]->data, base[i]->data, base[i]->nbytes);
      }
      if (!ins[i]) goto fail;
    }
    t0 = now_ms();
    for (int attempt = 0; attempt < 2; attempt++) {
      if (s && mi_session_run(s, (const mi_array_t *const *)ins, g->input_count, outs,
                              g->output_count, &err) == MI_OK)
        break;
      if (attempt) goto fail;
      /* No session yet, or one that refuses these shapes: one prepared for them. */
      mi_session_destroy(s);
      s = NULL;
      mi_graph_destroy(shaped);
      if (!(shaped = mi_graph_clone(g))) goto fail;
      for (int32_t i = 0; i < g->input_count; i++) {
        mi_tensor_t *t = &shaped->tensors[shaped->inputs[i]];
        t->rank = ins[i]->rank;
        memcpy(t->dims, ins[i]->dims, sizeof t->dims[0] * (size_t)ins[i]->rank);
      }
      if (mi_session_create(shaped, plugin, device, &o, &s, &err)) goto fail;
      prepared = 1;
    }
    t1 = now_ms();
    if (check && (same = check_fresh(g, plugin, device, &o, ins, outs, &err)) < 0) goto fail;
    for (int32_t i = 0; i < g->output_count; i++) {
      mi_array_destroy(outs[i]);
      outs[i] = NULL;
    }
    for (int w = 0; w < warm; w++) {
      double a = now_ms();
      if (mi_session_run(s, (const mi_array_t *const *)ins, g->input_count, outs, g->output_count,
                         &err))
        goto fail;
      wt[w] = now_ms() - a;
      for (int32_t i = 0; i < g->output_count; i++) {
        mi_array_destroy(outs[i]);
        outs[i] = NULL;
      }
    }
    qsort(wt, (size_t)warm, sizeof wt[0], cmp_d);
    {
      const mi_session_t *n = NULL;
      for (int32_t k = 0; k < mi_session_nested_count(s) && !n; k++)
        n = mi_session_nested(s, k, NULL, NULL, NULL);
      printf("%d,%.3f,%d,%.3f,%d,%d", p, t1 - t0, prepared, warm ? wt[warm / 2] : 0.0,
             n ? mi_session_kernel_count(n) : -1,
             n && mi_session_kernel_reused_count ? mi_session_kernel_reused_count(n) : -1);
      if (check) printf(",%s", same ? "identical" : "DIFFERENT");
      printf("\n");
      if (check && !same) rc = 3;
    }
    fflush(stdout);
  }
  if (rc == 1) rc = 0;
fail:
  if (rc) fprintf(stderr, "decode_loop: %s\n", err.message[0] ? err.message : "out of memory");
  for (int32_t i = 0; g && i < g->input_count; i++) {
    if (base) mi_array_destroy(base[i]);
    if (ins) mi_array_destroy(ins[i]);
  }
  for (int32_t i = 0; g && outs && i < g->output_count; i++) mi_array_destroy(outs[i]);
  free(base);
  free(ins);
  free(outs);
  mi_session_destroy(s);
  mi_graph_destroy(shaped);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
  return rc;
}
