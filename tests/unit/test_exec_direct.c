/* test_exec_direct.c - host memory as device buffers (ABI 1.4 buffer_wrap) on blis-cpu: a run
 * reads the caller's input arrays where they lie and writes the outputs into the arrays it
 * hands back, so mi_session_transfers counts no copy; the values are the reference's, byte for
 * byte, over runs with new inputs; the inputs are left as they were, and an earlier run's outputs
 * are not touched by the next. An input whose address the device refuses is copied, a plugin
 * without buffer_wrap (npu-stub) copies everything, and the blis-cpu handle itself frees no host
 * memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_util.h"

static mi_registry_t *r;
static mi_plugin_t *g_blis;

static int32_t add(mi_graph_t *g, const char *op, const char *name, int32_t n, const int32_t *in) {
  int32_t y = mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, op, name, n, in, 1, &y);
  return y;
}

/* A decoder step's pattern and its neighbours, exact on both sides:
 *   past [1,2,8,8] (input), x [1,16,8,8] (input)
 *   present = Concat(past, Neg(x))        an output made by a Concat kernel reading an input
 *   y = Concat(Relu(x), Abs(x))           an output whose parts are written in its slices
 *   z = Relu(Neg(y))                      an output read from another output's kernel
 *   f = Flatten(Relu(past))               an output that is a reshape of an intermediate */
static mi_graph_t *graph(void) {
  static const int64_t pd[4] = {1, 2, 8, 8}, xd[4] = {1, 16, 8, 8};
  mi_graph_t *g = mi_graph_create("direct");
  int32_t past = mi_graph_add_tensor(g, "past", MI_DTYPE_FLOAT32, 4, pd);
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), in[2], n;
  mi_graph_add_input(g, past);
  mi_graph_add_input(g, x);
  in[0] = past;
  in[1] = add(g, "Neg", "nx", 1, &x);
  n = add(g, "Concat", "present", 2, in);
  mi_node_set_int(g, g->node_count - 1, "axis", 1);
  mi_graph_add_output(g, n);
  in[0] = add(g, "Relu", "rx", 1, &x);
  in[1] = add(g, "Abs", "ax", 1, &x);
  n = add(g, "Concat", "y", 2, in);
  mi_node_set_int(g, g->node_count - 1, "axis", 1);
  mi_graph_add_output(g, n);
  n = add(g, "Neg", "ny", 1, &n);
  mi_graph_add_output(g, add(g, "Relu", "z", 1, &n));
  n = add(g, "Relu", "rp", 1, &past);
  mi_graph_add_output(g, add(g, "Flatten", "f", 1, &n));
  return g;
}

enum { NOUT = 4 };

/* Runs s three times with new inputs (the second input `shift` bytes off its 64-byte alignment
 * when shift > 0) and compares every output with the reference; the transfers of the last run. */
static void runs(const char *label, mi_session_t *s, const mi_graph_t *g, size_t shift, double tol,
                 uint64_t *up, uint64_t *down) {
  mi_array_t *want[3][NOUT] = {{0}}, *got[3][NOUT] = {{0}}, *in[2] = {0}, *keep[2] = {0};
  mi_array_t moved;
  char *raw = NULL;
  mi_error_t err = {0};
  int32_t rc = MI_OK;
  for (int run = 0; run < 3 && rc == MI_OK; run++) {
    const mi_array_t *feed[2];
    for (int i = 0; i < 2; i++) {
      in[i] = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[i]].dims);
      mi_array_fill_random(in[i], 40u + 7u * (unsigned)run + (unsigned)i);
      keep[i] = mi_array_create(MI_DTYPE_FLOAT32, 4, in[i]->dims);
      memcpy(keep[i]->data, in[i]->data, in[i]->nbytes);
      feed[i] = in[i];
    }
    if (shift) { /* the same values at an address off the device's alignment */
      raw = malloc(in[1]->nbytes + 128);
      moved = *in[1];
      moved.data = raw + 64 - ((uintptr_t)raw % 64) + shift;
      memcpy(moved.data, in[1]->data, in[1]->nbytes);
      feed[1] = &moved;
    }
    rc = mi_ref_run(g, feed, 2, want[run], NOUT, &err);
    CHECK(rc == MI_OK, "%s: ref: %s", label, err.message);
    if (rc == MI_OK) rc = mi_session_run(s, feed, 2, got[run], NOUT, &err);
    CHECK(rc == MI_OK, "%s: run %d: %s", label, run, err.message);
    for (int32_t i = 0; i < NOUT && rc == MI_OK; i++)
      CHECK(got[run][i] && got[run][i]->nbytes == want[run][i]->nbytes &&
                (tol == 0 ? memcmp(got[run][i]->data, want[run][i]->data, want[run][i]->nbytes) == 0
                          : tu_rel_l2_arrays(got[run][i], want[run][i]) < tol),
            "%s: run %d: output '%s' differs from the reference", label, run,
            g->tensors[g->outputs[i]].name);
    for (int i = 0; i < 2; i++)
      CHECK(memcmp(feed[i]->data, keep[i]->data, keep[i]->nbytes) == 0, "%s: run %d: input %d was written",
            label, run, i);
    for (int i = 0; i < 2; i++) {
      mi_array_destroy(in[i]);
      mi_array_destroy(keep[i]);
    }
    free(raw);
    raw = NULL;
  }
  /* Every run's outputs are the caller's: later runs wrote arrays of their own. */
  for (int run = 0; run < 3 && rc == MI_OK; run++)
    for (int32_t i = 0; i < NOUT; i++)
      CHECK(tol > 0 || memcmp(got[run][i]->data, want[run][i]->data, want[run][i]->nbytes) == 0,
            "%s: run %d's output '%s' changed after the later runs", label, run, g->tensors[g->outputs[i]].name);
  CHECK(rc != MI_OK || mi_session_transfers(s, up, down) == 1, "%s: no transfer counts", label);
  for (int run = 0; run < 3; run++)
    for (int32_t i = 0; i < NOUT; i++) {
      mi_array_destroy(want[run][i]);
      mi_array_destroy(got[run][i]);
    }
}

static uint64_t bytes_of(const mi_graph_t *g, int32_t t) {
  uint64_t n = 4;
  for (int32_t d = 0; d < g->tensors[t].rank; d++) n *= (uint64_t)g->tensors[t].dims[d];
  return n;
}

static void blis_direct(void) {
  mi_graph_t *g = graph();
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  uint64_t up = 1, down = 1;
  int32_t rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK) rc = mi_session_create(g, g_blis, 0, NULL, &s, &err);
  CHECK(rc == MI_OK, "create: %s", err.message);
  if (rc == MI_OK) {
    CHECK(g_blis->api.buffer_wrap != NULL, "blis-cpu has no buffer_wrap");
    runs("blis-cpu", s, g, 0, 0, &up, &down);
    /* Only f, a reshape of an intermediate (its buffer is that tensor's), is read back. */
    CHECK(up == 0, "blis-cpu: %llu bytes uploaded, want none", (unsigned long long)up);
    CHECK(down == bytes_of(g, g->outputs[3]), "blis-cpu: %llu bytes read back, want %llu (f alone)",
          (unsigned long long)down, (unsigned long long)bytes_of(g, g->outputs[3]));
    runs("blis-cpu, an unaligned input", s, g, 4, 0, &up, &down);
    CHECK(up == bytes_of(g, g->inputs[1]), "unaligned input: %llu bytes uploaded, want %llu (x)",
          (unsigned long long)up, (unsigned long long)bytes_of(g, g->inputs[1]));
  }
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* npu-stub has no buffer_wrap: every input is uploaded, every output read back (its FP16), and
 * more (the values of the nodes it leaves to the host). */
static void no_wrap(void) {
  mi_graph_t *g = graph();
  mi_plugin_t *npu = NULL;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  uint32_t dev = 0;
  uint64_t up = 0, down = 0, outs = 0;
  int32_t rc = mi_graph_infer_shapes(g, &err);
  if (!mi_registry_find(r, "npu-stub") || mi_registry_device(r, "npu-stub:0", &npu, &dev, &err) != MI_OK) {
    mi_graph_destroy(g);
    return; /* not built here */
  }
  CHECK(npu->api.buffer_wrap == NULL, "npu-stub wraps host memory now: pick a plugin that does not");
  if (rc == MI_OK) rc = mi_session_create(g, npu, dev, NULL, &s, &err);
  CHECK(rc == MI_OK, "npu-stub: create: %s", err.message);
  if (rc == MI_OK) {
    runs("npu-stub", s, g, 0, 1e-2, &up, &down);
    for (int32_t i = 0; i < NOUT; i++) outs += bytes_of(g, g->outputs[i]);
    CHECK(up >= bytes_of(g, g->inputs[0]) + bytes_of(g, g->inputs[1]), "npu-stub: %llu bytes uploaded",
          (unsigned long long)up);
    CHECK(down >= outs, "npu-stub: %llu bytes read back, want at least %llu", (unsigned long long)down,
          (unsigned long long)outs);
  }
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* The plugin's side: a wrapped buffer reads and writes the host's bytes, its views too, freeing
 * it leaves the memory to the host, and it refuses what it cannot wrap. */
static void blis_wrap_calls(void) {
  const mi_plugin_api_t *a = &g_blis->api;
  float *host = NULL, got[4];
  mi_buffer_t *b = NULL, *v = NULL;
  mi_error_t err = {0};
  REQUIRE(posix_memalign((void **)&host, 64, 256 * sizeof *host) == 0);
  for (int i = 0; i < 256; i++) host[i] = (float)i;
  CHECK(a->buffer_wrap(g_blis->ctx, 0, host, 256 * sizeof *host, &b, &err) == MI_OK && b, "wrap: %s", err.message);
  if (b) {
    CHECK(a->buffer_read(g_blis->ctx, b, 64 * sizeof *host, got, sizeof got, &err) == MI_OK && got[0] == 64.f &&
              got[3] == 67.f,
          "read through the wrap: not the host's bytes");
    got[0] = -1.f;
    CHECK(a->buffer_write(g_blis->ctx, b, 0, got, sizeof *got, &err) == MI_OK && host[0] == -1.f,
          "write through the wrap: the host's bytes did not change");
    CHECK(a->buffer_view(g_blis->ctx, b, 128 * sizeof *host, 16 * sizeof *host, &v, &err) == MI_OK && v,
          "view of a wrap: %s", err.message);
    if (v) {
      CHECK(a->buffer_read(g_blis->ctx, v, 0, got, sizeof *got, &err) == MI_OK && got[0] == 128.f,
            "view of a wrap: not its slice");
      a->buffer_free(g_blis->ctx, v);
    }
    a->buffer_free(g_blis->ctx, b);
  }
  host[5] = 5.5f; /* still the host's (a sanitizer build sees a use after free otherwise) */
  CHECK(host[5] == 5.5f, "host memory");
  b = NULL;
  CHECK(a->buffer_wrap(g_blis->ctx, 0, (char *)host + 4, 64, &b, &err) == MI_ERR_INVALID_ARGUMENT && !b,
        "wrap: an address off the 64-byte alignment was taken");
  CHECK(a->buffer_wrap(g_blis->ctx, 0, NULL, 64, &b, &err) == MI_ERR_INVALID_ARGUMENT && !b,
        "wrap: NULL host memory was taken");
  CHECK(a->buffer_wrap(g_blis->ctx, 7, host, 64, &b, &err) != MI_OK && !b, "wrap: device 7 was taken");
  free(host);
}

static void setup(void) {
  mi_error_t err = {0};
  uint32_t dev = 0;
  r = mi_registry_create();
  REQUIRE(r);
  if (tu_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  tu_device_or_skip(r, "blis-cpu", "blis-cpu:0", &g_blis, &dev);
}

static void teardown(void) { mi_registry_destroy(r); }

static const tu_case_t tu_cases[] = {TU_CASE(blis_direct), TU_CASE(no_wrap), TU_CASE(blis_wrap_calls)};
TU_MAIN(setup, teardown)
