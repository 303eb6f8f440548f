/* zoo_bench.c - the blis-cpu zoo benchmarks' shared helpers (zoo_bench.h). */
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_transform.h"
#include "zoo_bench.h"

int zb_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int32_t zb_repeats(int argc, char **argv, int at, int32_t dflt, int32_t max) {
  int32_t reps = argc > at ? (int32_t)strtol(argv[at], NULL, 10) : dflt;
  if (reps < 5) reps = 5;
  return reps > max ? max : reps;
}

int32_t zb_fuse(const mi_graph_t *g, mi_plugin_t *p, uint32_t dev, mi_graph_t **out,
                mi_error_t *err) {
  mi_xf_config_t *xc = mi_xf_config_create();
  mi_xf_apply_opts_t ao;
  mi_xf_stats_t st;
  mi_variant_desc_t *vars = NULL;
  uint32_t nv = 0;
  int32_t rc = xc ? mi_plugin_variants(p, dev, &vars, &nv, err) : MI_ERR_OUT_OF_MEMORY;
  memset(&ao, 0, sizeof ao);
  if (rc == MI_OK) {
    xc->fold_bn = 1;
    xc->fuse = 1;
    ao.variants = vars;
    ao.variant_count = nv;
    rc = mi_xf_apply(g, xc, &ao, out, &st, err);
  }
  free(vars);
  mi_xf_config_destroy(xc);
  return rc;
}
