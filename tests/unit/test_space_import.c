/* test_space_import.c - a configuration written as the history stores it (hardware and model
 * canonical texts) reads back into the same point of its own space, on npu-stub and blis-cpu,
 * and a hardware text of another device's space maps its device knobs by name. */
#include "metainfer/mi_transform.h"
#include "test_space_util.h"

/* The two texts the history stores for a point (tools/mi-host/tune_eval.c writes the same). */
static int texts(const mi_space_t *s, const int32_t *pt, char **hw, char **xf) {
  mi_space_hw_t *h = NULL;
  mi_xf_config_t *x = NULL;
  *hw = *xf = NULL;
  if (mi_space_hw_create(s, pt, &h, NULL) != MI_OK) return 0;
  *hw = mi_config_canonical(mi_space_hw_options(h));
  mi_space_hw_destroy(h);
  if (mi_space_xf_config(s, pt, &x, NULL) != MI_OK) return 0;
  mi_xf_config_canonical(x, xf, NULL);
  mi_xf_config_destroy(x);
  return *hw && *xf;
}

static void round_trip(const mi_space_t *s, const char *what) {
  int32_t D = mi_space_dim_count(s), same = 0, matched = 0;
  int32_t *a = malloc(sizeof(int32_t) * (size_t)D), *b = malloc(sizeof(int32_t) * (size_t)D);
  mi_rng_t r;
  mi_rng_seed(&r, 5);
  for (int k = 0; k < 30; k++) {
    char *hw, *xf;
    CHECK(mi_space_sample(s, &r, a, NULL) == MI_OK, "%s: sample", what);
    CHECK(texts(s, a, &hw, &xf), "%s: texts", what);
    CHECK(mi_space_from_canonical(s, hw, xf, b, &matched, NULL) == MI_OK, "%s: from_canonical", what);
    same += mi_space_hash(s, a) == mi_space_hash(s, b);
    if (mi_space_hash(s, a) != mi_space_hash(s, b)) fprintf(stderr, "%s: differs:\n%s\n%s\n", what, hw, xf);
    free(hw);
    free(xf);
  }
  CHECK(same == 30, "%s: %d of 30 points read back unchanged", what, same);
  CHECK(matched > 0, "%s: nothing matched", what);
  /* Texts naming nothing this space has leave the defaults. */
  CHECK(mi_space_from_canonical(s, "device{nosuchknob=3};nonode:novariant{}", "", b, &matched, NULL) == MI_OK &&
            matched == 0,
        "%s: unknown names matched %d", what, matched);
  mi_space_default(s, a);
  CHECK(mi_space_hash(s, a) == mi_space_hash(s, b), "%s: unknown names changed the point", what);
  free(a);
  free(b);
}

static mi_registry_t *reg;
static mi_graph_t *g;
static const char *plugins[] = {"npu-stub", "blis-cpu"};

static void setup(void) {
  reg = tsu_registry();
  g = tsu_small_cnn();
}

static void teardown(void) {
  mi_graph_destroy(g);
  mi_registry_destroy(reg);
}

static void round_trips(void) {
  for (int i = 0; i < 2; i++) {
    mi_plugin_t *p = mi_registry_find(reg, plugins[i]);
    mi_space_t *s = NULL;
    mi_error_t err;
    CHECK(p != NULL, "%s not loaded", plugins[i]);
    if (p && mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK) round_trip(s, plugins[i]);
    else if (p)
      CHECK(0, "%s: space: %s", plugins[i], err.message);
    mi_space_destroy(s);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(round_trips),
};

TU_MAIN(setup, teardown)
