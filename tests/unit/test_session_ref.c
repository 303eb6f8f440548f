/* test_session_ref.c - a session on the reference path gives exactly mi_ref_run's outputs,
 * and bad calls fail cleanly with outputs left NULL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"

#include "test_util.h"

/* x[2,3,4,5] -> Relu -> Add(bias[5]) -> Sigmoid -> MatMul(w[5,3]) -> y; also Relu out as z. */
static mi_graph_t *build_graph(void) {
  mi_graph_t *g = mi_graph_create("session_ref");
  int64_t xd[4] = {2, 3, 4, 5}, bd[1] = {5}, wd[2] = {5, 3};
  float bias[5], w[15];
  int32_t x, b, wt, r, a, s, y, in2[2];
  for (int i = 0; i < 5; i++) bias[i] = 0.25f * (float)i - 0.5f;
  for (int i = 0; i < 15; i++) w[i] = (float)((i * 7) % 11) / 11.0f - 0.4f;
  x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  b = mi_graph_add_const_f32(g, "bias", 1, bd, bias);
  wt = mi_graph_add_const_f32(g, "w", 2, wd, w);
  r = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, -1, NULL);
  a = mi_graph_add_tensor(g, "a", MI_DTYPE_FLOAT32, -1, NULL);
  s = mi_graph_add_tensor(g, "s", MI_DTYPE_FLOAT32, -1, NULL);
  y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &r);
  in2[0] = r, in2[1] = b;
  mi_graph_add_node(g, "Add", "add", 2, in2, 1, &a);
  mi_graph_add_node(g, "Sigmoid", "sig", 1, &a, 1, &s);
  in2[0] = s, in2[1] = wt;
  mi_graph_add_node(g, "MatMul", "mm", 2, in2, 1, &y);
  mi_graph_add_output(g, y);
  mi_graph_add_output(g, r);
  return g;
}

static void session_matches_ref_run(void) {
  mi_error_t err = {0};
  mi_graph_t *g = build_graph();
  mi_session_t *s = NULL;
  mi_array_t *x, *want[2] = {0}, *got[2] = {0};
  int64_t xd[4] = {2, 3, 4, 5};
  int32_t rc;

  CHECK(mi_graph_toposort(g, &err) == MI_OK, "%s", err.message);
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "%s", err.message);
  x = mi_array_create(MI_DTYPE_FLOAT32, 4, xd);
  mi_array_fill_random(x, 7);

  rc = mi_ref_run(g, (const mi_array_t *const *)&x, 1, want, 2, &err);
  CHECK(rc == MI_OK, "mi_ref_run: %s", err.message);
  rc = mi_session_create(g, NULL, 0, NULL, &s, &err);
  CHECK(rc == MI_OK && s, "create: %s", err.message);
  for (int run = 0; run < 2 && s; run++) { /* a session runs more than once */
    rc = mi_session_run(s, (const mi_array_t *const *)&x, 1, got, 2, &err);
    CHECK(rc == MI_OK, "run: %s", err.message);
    for (int i = 0; i < 2 && rc == MI_OK; i++) {
      CHECK(got[i] && want[i] && got[i]->dtype == want[i]->dtype && got[i]->rank == want[i]->rank,
            "output %d shape", i);
      CHECK(got[i]->nbytes == want[i]->nbytes &&
                memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0,
            "output %d differs from mi_ref_run", i);
      mi_array_destroy(got[i]);
      got[i] = NULL;
    }
  }
  CHECK(want[0] && want[0]->rank == 4 && want[0]->dims[3] == 3, "MatMul output shape");
  CHECK(mi_session_fallback_count(s) == 0, "no fallback on the reference path");
  CHECK(mi_session_fallback_node(s, 0) == NULL, "no fallback node 0");
  {
    uint64_t ns = 12345;
    CHECK(mi_session_device_time(s, &ns) == 0 && ns == 12345, "no device time on ref");
  }

  /* Wrong counts fail with outputs NULL. */
  got[0] = got[1] = (mi_array_t *)(uintptr_t)1;
  rc = mi_session_run(s, (const mi_array_t *const *)&x, 0, got, 2, &err);
  CHECK(rc == MI_ERR_INVALID_ARGUMENT, "missing input refused (rc %d)", rc);
  CHECK(got[0] == NULL && got[1] == NULL, "outputs NULL after a failed run");
  CHECK(strstr(err.message, "inputs") != NULL, "message: %s", err.message);

  /* Bad create arguments. */
  {
    mi_session_t *s2 = (mi_session_t *)(uintptr_t)1;
    CHECK(mi_session_create(NULL, NULL, 0, NULL, &s2, &err) == MI_ERR_INVALID_ARGUMENT, "NULL g");
    CHECK(s2 == NULL, "out NULL after failure");
  }
  mi_session_destroy(NULL);
  mi_session_destroy(s);
  for (int i = 0; i < 2; i++) mi_array_destroy(want[i]);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(session_matches_ref_run),
};

TU_MAIN(NULL, NULL)
