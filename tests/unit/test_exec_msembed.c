/* test_exec_msembed.c - com.microsoft EmbedLayerNormalization and FusedMatMul: the reference on
 * values worked out by hand, inferred shapes equal to the run's; each form written as a model,
 * loaded (the loader lowers it: Gathers, Adds, LayerNormalization; Transpose, Mul, MatMul) and run
 * on the reference equal to the op's own reference, and on blis-cpu with no host fallback, as the
 * loaded model and as the node built in code (the session lowers it); a FusedMatMul kept at load
 * for a session to lower; malformed nodes refused in one line; blis-cpu's Gather with runtime
 * indices at every SIMD cap. */
#include "test_msfuse_util.h"

/* EmbedLayerNormalization, H = 2, epsilon 0: word rows (1,0) (0,1) (2,2), position rows (0,0)
 * (1,-1) (5,5), segment rows (0,0) (0,3); ids [[0,1],[2,0]], segments [[0,1],[1,0]]: sums (1,0),
 * (0,1)+(1,-1)+(0,3) = (1,3), (2,2)+(0,0)+(0,3) = (2,5), (1,0)+(1,-1) = (2,-1), normalised to
 * (1,-1) (-1,1) (-1,1) (1,-1); gamma (2,3), beta (0.5,-1): (2.5,-4) (-1.5,2) (-1.5,2) (2.5,-4).
 * mask [[1,0],[1,1]] (values equal to 1 counted): mask_index (1, 2). */
static void embed_layernorm(void) {
  int64_t id[2] = {2, 2}, wd[2] = {3, 2}, sd[2] = {2, 2}, hd[1] = {2}, p1[2] = {1, 2};
  const int32_t ids[4] = {0, 1, 2, 0}, seg[4] = {0, 1, 1, 0}, mask[4] = {1, 0, 1, 1}, pos[2] = {1, 0};
  const float word[6] = {1, 0, 0, 1, 2, 2}, pe[6] = {0, 0, 1, -1, 5, 5}, se[4] = {0, 0, 0, 3}, g[2] = {2, 3},
              b[2] = {0.5f, -1};
  const float y[8] = {2.5f, -4, -1.5f, 2, -1.5f, 2, 2.5f, -4}, mi[2] = {1, 2}, sum[8] = {1, 0, 1, 3, 2, 5, 2, -1};
  const float *want[3] = {y, mi, sum};
  mcase_t k = {"EmbedLayerNormalization", "com.microsoft", 17, 8, {I(2, id, ids), I(2, id, seg), A(2, wd, word), A(2, wd, pe), A(2, sd, se), A(1, hd, g), A(1, hd, b), I(2, id, mask)}, 0x7c, 3, 0x7, {{"epsilon", 1, 0, NULL}}};
  check_case("embed LN hand, every output", &k, want, 1e-6f);
  const float *want1[1] = {y};
  mcase_t k1 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, id, ids), I(2, id, seg), A(2, wd, word), A(2, wd, pe), A(2, sd, se), A(1, hd, g), A(1, hd, b)}, 0x7c, 1, 0x1, {{"epsilon", 1, 0, NULL}}};
  check_case("embed LN hand, output only", &k1, want1, 1e-6f);
  /* no segment (DistilBERT), position_ids [1, S] = (1, 0), no mask (mask_index zeros), opsets 17 and 11 */
  for (int opset = 11; opset <= 17; opset += 6) {
    mcase_t k2 = {"EmbedLayerNormalization", "com.microsoft", opset, 9, {I(2, id, ids), NULL, A(2, wd, word), A(2, wd, pe), NULL, A(1, hd, g), A(1, hd, b), NULL, I(2, p1, pos)}, 0x6c, 3, 0x7, {{0}}};
    char what[64];
    snprintf(what, sizeof what, "embed LN distil, position_ids, opset %d", opset);
    check_case(what, &k2, NULL, 2e-6f);
  }
  /* random: BERT-sized rows, a runtime position table (the Shape -> Slice path) */
  int64_t rid[2] = {2, 7}, rw[2] = {12, 16}, rp[2] = {9, 16}, rs[2] = {2, 16}, rh[1] = {16}; /* (the model fits test_pb.h) */
  int32_t rids[14], rseg[14];
  for (int i = 0; i < 14; i++) rids[i] = (i * 7 + 3) % 12, rseg[i] = i % 2;
  mcase_t k3 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, rid, rids), I(2, rid, rseg), R(2, rw, 71), R(2, rp, 72), R(2, rs, 73), R(1, rh, 74), R(1, rh, 75)}, 0x74, 1, 0x1, {{"epsilon", 1, 1e-5, NULL}}};
  check_case("embed LN random, runtime position table", &k3, NULL, 2e-6f);
}

/* FusedMatMul: A [2,3] @ B [3,2] with A = (1 2 3; 4 5 6), B = (1 0; 0 1; 1 1): (4 5; 10 11), times
 * alpha 0.5: (2 2.5; 5 5.5); transA of A^T [3,2] and transB of B^T [2,3] give the same. Then
 * random batched forms (broadcast batch, each trans, alpha), and a transposed operand of unknown
 * rank at load: left for the session, which lowers it after shape inference. */
static void fused_matmul(void) {
  int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, atd[2] = {3, 2}, btd[2] = {2, 3};
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, at[6] = {1, 4, 2, 5, 3, 6}, bt[6] = {1, 0, 1, 0, 1, 1};
  const float y[4] = {2, 2.5f, 5, 5.5f}, *want[1] = {y};
  for (int f = 0; f < 4; f++) {
    mcase_t k = {"FusedMatMul", "com.microsoft", 17, 2, {(f & 1) ? A(2, atd, at) : A(2, ad, a), (f & 2) ? A(2, btd, bt) : A(2, bd, b)}, 0x2, 1, 1, {{"alpha", 1, 0.5, NULL}, {"transA", 2, f & 1, NULL}, {"transB", 2, (f >> 1) & 1, NULL}}};
    char what[64];
    snprintf(what, sizeof what, "FusedMatMul hand transA %d transB %d", f & 1, (f >> 1) & 1);
    check_case(what, &k, want, 1e-6f);
  }
  /* TransposeMatMul: FusedMatMul's older name */
  mcase_t t = {"TransposeMatMul", "com.microsoft", 17, 2, {A(2, atd, at), A(2, btd, bt)}, 0x2, 1, 1, {{"alpha", 1, 0.5, NULL}, {"transA", 2, 1, NULL}, {"transB", 2, 1, NULL}}};
  check_case("TransposeMatMul hand", &t, want, 1e-6f);
  int64_t xa[4] = {2, 3, 5, 8}, xb[3] = {3, 8, 6}, xbt[3] = {3, 6, 8}, xat[4] = {2, 3, 8, 5};
  for (int f = 0; f < 4; f++) {
    mcase_t k = {"FusedMatMul", "com.microsoft", 17, 2, {(f & 1) ? R(4, xat, 80 + f) : R(4, xa, 80 + f), (f & 2) ? R(3, xbt, 90 + f) : R(3, xb, 90 + f)}, 0, 1, 1, {{"alpha", 1, f ? 0.125 : 1.0, NULL}, {"transA", 2, f & 1, NULL}, {"transB", 2, (f >> 1) & 1, NULL}}};
    char what[64];
    snprintf(what, sizeof what, "FusedMatMul batched transA %d transB %d", f & 1, (f >> 1) & 1);
    check_case(what, &k, NULL, 4e-6f);
  }
}

/* A transposed FusedMatMul operand whose rank the model does not give: the loader leaves the node,
 * its own reference runs it, and the session lowers it once shapes are known. */
static void fused_matmul_deferred(void) {
  int64_t ad[3] = {2, 3, 4}, bd[2] = {3, 5};
  mcase_t k = {"FusedMatMul", "com.microsoft", 17, 2, {R(3, ad, 11), R(2, bd, 12)}, 0x2, 1, 1, {{"transA", 2, 1, NULL}}};
  mi_array_t *rt[10], *own[1] = {0}, *low[1] = {0};
  int nrt;
  mi_error_t err = {0};
  mi_graph_t *g = code_graph(&k, rt, &nrt);
  CHECK(ref_outs(g, rt, nrt, own, &err) == MI_OK, "deferred: own reference: %s", err.message);
  g_untyped = 1;
  mi_graph_t *l = loaded_graph(&k, &err);
  g_untyped = 0;
  CHECK(l != NULL, "deferred: load: %s", err.message);
  int kept = 0;
  for (int32_t j = 0; l && j < l->node_count; j++) kept += !strcmp(l->nodes[j].op_type, "FusedMatMul");
  CHECK(kept == 1, "deferred: the FusedMatMul is kept at load (%d)", kept);
  CHECK(l && mi_ref_run(l, (const mi_array_t *const *)rt, nrt, low, 1, &err) == MI_OK, "deferred: run: %s", err.message);
  CHECK(max_abs(own[0], low[0]) == 0, "deferred: the loaded node's run is the reference's");
  mi_array_destroy(own[0]);
  mi_array_destroy(low[0]);
  mi_graph_destroy(g);
  mi_graph_destroy(l);
  free_case(&k);
}

static void malformed(void) {
  int64_t xd[3] = {2, 2, 4}, hd[1] = {4}, h3[1] = {3};
  int64_t id[2] = {1, 2}, wd[2] = {3, 4};
  const int32_t ids[2] = {0, 1};
  mcase_t e1 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, id, ids), NULL, R(2, wd, 1), R(2, wd, 2), NULL, R(1, h3, 3), R(1, hd, 4)}, 0x6c, 1, 1, {{0}}};
  refused("embed LN gamma length", &e1, "gamma must be 1-D");
  mcase_t e2 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, id, ids), I(2, id, ids), R(2, wd, 1), R(2, wd, 2), NULL, R(1, hd, 3), R(1, hd, 4)}, 0x6c, 1, 1, {{0}}};
  refused("embed LN segment ids without table", &e2, "go together");
  int64_t long_ids[2] = {1, 5};
  const int32_t ids5[5] = {0, 1, 2, 0, 1};
  mcase_t e3 = {"EmbedLayerNormalization", "com.microsoft", 17, 7, {I(2, long_ids, ids5), NULL, R(2, wd, 1), R(2, wd, 2), NULL, R(1, hd, 3), R(1, hd, 4)}, 0x6c, 1, 1, {{0}}};
  refused("embed LN sequence longer than the position table", &e3, "exceeds");
  mcase_t f1 = {"FusedMatMul", "com.microsoft", 17, 2, {R(3, xd, 1), R(3, xd, 2)}, 0, 1, 1, {{"transBatchA", 2, 1, NULL}}};
  refused("FusedMatMul transBatchA", &f1, "transBatchA");
}

static void setup(void) { g_reg = open_plugins(); }
static void teardown(void) { mi_registry_destroy(g_reg); }

/* blis-cpu's Gather with runtime indices (the embedding lookups above): rows of a [5, 3] table by
 * INT32 and INT64 ids, negative ones counting from the end; an index out of range fails the run in
 * one line. */
static void gather_each(mi_plugin_t *p) {
  int64_t td[2] = {5, 3}, id[2] = {2, 2};
  float tab[15];
  for (int i = 0; i < 15; i++) tab[i] = (float)i;
  for (int wide = 0; wide < 2; wide++) {
    mi_graph_t *g = mi_graph_create("gather");
    int32_t ids = tin(g, "ids", wide ? MI_DTYPE_INT64 : MI_DTYPE_INT32, 2, id), y = tval(g, "y");
    int32_t t = mi_graph_add_const_f32(g, "table", 2, td, tab);
    mi_graph_add_node(g, "Gather", "gather", 2, (int32_t[]){t, ids}, 1, &y);
    mi_graph_add_output(g, y);
    g->opset = 13;
    mi_error_t err = {0};
    CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "gather shapes: %s", err.message);
    mi_session_t *s = session(g, p);
    CHECK(mi_session_fallback_count(s) == 0, "Gather with runtime indices runs on blis-cpu");
    const int64_t v64[2][4] = {{4, 0, -1, 2}, {1, 5, 0, 0}};
    for (int bad = 0; bad < 2; bad++) {
      mi_array_t *x = mi_array_create(wide ? MI_DTYPE_INT64 : MI_DTYPE_INT32, 2, id), *out = NULL;
      for (int i = 0; i < 4; i++) {
        if (wide) ((int64_t *)x->data)[i] = v64[bad][i];
        else
          ((int32_t *)x->data)[i] = (int32_t)v64[bad][i];
      }
      int32_t rc = mi_session_run(s, (const mi_array_t *const *)&x, 1, &out, 1, &err);
      if (!bad) {
        const float want[12] = {12, 13, 14, 0, 1, 2, 12, 13, 14, 6, 7, 8};
        int64_t yd[3] = {2, 2, 3};
        CHECK(rc == MI_OK, "gather run: %s", err.message);
        if (out) expect_f32("blis-cpu Gather rows", out, 3, yd, want, 0);
      } else {
        CHECK(rc != MI_OK && strstr(err.message, "out of range") && !strchr(err.message, '\n'),
              "an index out of range fails the run in one line: %s", err.message);
      }
      mi_array_destroy(out);
      mi_array_destroy(x);
    }
    mi_session_destroy(s);
    mi_graph_destroy(g);
  }
}

static void blis_gather(void) { on_blis_cpu_each_simd(gather_each); }

static const tu_case_t tu_cases[] = {TU_CASE(embed_layernorm), TU_CASE(fused_matmul), TU_CASE(fused_matmul_deferred),
                                     TU_CASE(malformed), TU_CASE(blis_gather)};

TU_MAIN(setup, teardown)
