/* test_ref_index.c - GatherElements and ScatterND (plain, add and mul reductions, negative
 * and duplicate indices) against values worked out by hand, with inferred output shapes
 * checked against the run, and their refusals. */
#include "test_ref_common.h"

static const int64_t D23[2] = {2, 3};
static const float V6[6] = {1, 2, 3, 4, 5, 6};

static void test_gather_elements(void) {
  int64_t d22[2] = {2, 2}, d13[2] = {1, 3}, d3 = 3;
  mi_error_t err = {0};
  op_case_t k;
  mi_array_t *y = NULL;

  /* axis 1, a negative index: y[i][j] = x[i][ind[i][j]] */
  mi_array_t *in[2] = {arr_f32(2, D23, V6), arr_i64(2, d22, (int64_t[]){2, -3, 1, 1})};
  case_begin(&k, "GatherElements", 13, 2, in, 2u, 1);
  mi_node_set_int(k.g, k.node, "axis", 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "GatherElements axis 1: %s", err.message);
  expect_f32("GatherElements axis 1", y, 2, d22, (float[]){3, 1, 5, 5}, 0);
  mi_array_destroy(y), mi_array_destroy(in[1]);

  /* axis 0, indices smaller than the data along the other axis */
  in[1] = arr_i64(2, d13, (int64_t[]){1, 0, 1});
  case_begin(&k, "GatherElements", 13, 2, in, 0, 1); /* indices as a graph input */
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "GatherElements axis 0: %s", err.message);
  expect_f32("GatherElements axis 0", y, 2, d13, (float[]){4, 2, 6}, 0);
  mi_array_destroy(y), mi_array_destroy(in[1]);

  in[1] = arr_i64(1, &d3, (int64_t[]){0, 1, 2}); /* rank 1 indices for rank 2 data */
  case_begin(&k, "GatherElements", 13, 2, in, 2u, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "rank") != NULL, "rank refusal says why: %s", err.message);
  mi_array_destroy(in[1]);

  in[1] = arr_i64(2, d13, (int64_t[]){0, 2, 0}); /* index 2 on an axis of 2 */
  case_begin(&k, "GatherElements", 13, 2, in, 0, 1);
  CHECK(mi_ref_run(k.g, (const mi_array_t *const *)k.rt, k.nrt, &y, 1, &err) ==
                MI_ERR_INVALID_ARGUMENT &&
            y == NULL,
        "out-of-range index refused: %s", err.message);
  CHECK(strstr(err.message, "out of range") != NULL, "names the index: %s", err.message);
  mi_graph_destroy(k.g);
  mi_array_destroy(in[1]), mi_array_destroy(in[0]);
}

static void test_scatter_nd(void) {
  int64_t d42[2] = {4, 2}, d21[2] = {2, 1}, d22[2] = {2, 2}, d2 = 2, d32[2] = {3, 2};
  int64_t d11[2] = {1, 1}, d12[2] = {1, 2};
  mi_error_t err = {0};
  op_case_t k;
  mi_array_t *y = NULL;

  /* q = 1: whole rows, one of them through a negative index */
  mi_array_t *in[3] = {arr_f32(2, d42, (float[]){1, 2, 3, 4, 5, 6, 7, 8}),
                       arr_i64(2, d21, (int64_t[]){3, -4}),
                       arr_f32(2, d22, (float[]){10, 11, 20, 21})};
  case_begin(&k, "ScatterND", 13, 3, in, 2u, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ScatterND rows: %s", err.message);
  expect_f32("ScatterND rows", y, 2, d42, (float[]){20, 21, 3, 4, 5, 6, 10, 11}, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);

  /* q = rank: single elements */
  in[0] = arr_f32(2, D23, V6);
  in[1] = arr_i64(2, d22, (int64_t[]){1, 2, 0, 0});
  in[2] = arr_f32(1, &d2, (float[]){9, 8});
  case_begin(&k, "ScatterND", 13, 3, in, 0, 1);
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ScatterND elements: %s", err.message);
  expect_f32("ScatterND elements", y, 2, D23, (float[]){8, 2, 3, 4, 5, 9}, 0);
  mi_array_destroy(y);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);

  /* opset 16 reductions: a duplicate index adds twice; mul */
  in[0] = arr_f32(2, d32, V6);
  in[1] = arr_i64(2, d21, (int64_t[]){1, 1});
  in[2] = arr_f32(2, d22, (float[]){10, 10, 1, 2});
  case_begin(&k, "ScatterND", 16, 3, in, 2u, 1);
  mi_node_set_string(k.g, k.node, "reduction", "add");
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ScatterND add: %s", err.message);
  expect_f32("ScatterND add", y, 2, d32, (float[]){1, 2, 14, 16, 5, 6}, 0);
  mi_array_destroy(y), mi_array_destroy(in[1]), mi_array_destroy(in[2]);

  in[1] = arr_i64(2, d11, (int64_t[]){2});
  in[2] = arr_f32(2, d12, (float[]){2, 3});
  case_begin(&k, "ScatterND", 16, 3, in, 2u, 1);
  mi_node_set_string(k.g, k.node, "reduction", "mul");
  CHECK(case_run(&k, &y, 0, &err) == MI_OK, "ScatterND mul: %s", err.message);
  expect_f32("ScatterND mul", y, 2, d32, (float[]){1, 2, 3, 4, 10, 18}, 0);
  mi_array_destroy(y);

  /* updates of the wrong shape: [1,2] rows need data[1:] = [2] per index */
  mi_array_destroy(in[2]);
  in[2] = arr_f32(2, d12, (float[]){2, 3});
  mi_array_destroy(in[1]);
  in[1] = arr_i64(2, d12, (int64_t[]){2, 1}); /* q = 2: updates must be [1] */
  case_begin(&k, "ScatterND", 13, 3, in, 2u, 1);
  case_refused(&k, MI_ERR_INVALID_ARGUMENT, &err);
  CHECK(strstr(err.message, "updates") != NULL, "shape refusal says why: %s", err.message);
  for (int i = 0; i < 3; i++) mi_array_destroy(in[i]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_gather_elements),
    TU_CASE(test_scatter_nd),
};

TU_MAIN(NULL, NULL)
