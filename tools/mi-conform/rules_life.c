/* rules_life.c - R11: repeated load, use and unload of a plugin does not leak host memory. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"
#include "conform_util.h"

#define WARM_CYCLES 3
#define MEASURED_CYCLES 20
/* Per-cycle growth allowed for allocator noise and one-time caches in drivers. */
#define LEAK_BYTES_PER_CYCLE 4096

/* One cycle: load, describe, run one variant's first case, unload. */
static int cycle(conform_ctx_t *c, char *why, size_t n) {
  conform_descs_t d;
  if (conform_load(c, MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR) != MI_OK) {
    snprintf(why, n, "reload failed: %s", c->load_error);
    conform_unload(c);
    return CONFORM_FAIL;
  }
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    if (conform_descs_get(c, dev, &d, why, n) != MI_OK) {
      conform_unload(c);
      return CONFORM_FAIL;
    }
    for (uint32_t vi = 0; vi < d.variant_count; vi++) {
      mi_graph_t *g = conform_case_graph(d.variants[vi].op_type, 0, 3);
      double rel;
      int32_t rc;
      if (!g) continue;
      rc = conform_compare(c, dev, g, d.variants[vi].id, NULL, 0, 5, &rel, NULL);
      mi_graph_destroy(g);
      if (rc == MI_OK) break;
    }
    conform_descs_free(&d);
  }
  conform_unload(c);
  return CONFORM_PASS;
}

int conform_rule_lifecycle(conform_ctx_t *c, char *why, size_t n) {
  size_t before, after;
  double per_cycle;
  conform_unload(c); /* the rule manages its own loads */
  for (int i = 0; i < WARM_CYCLES; i++)
    if (cycle(c, why, n) != CONFORM_PASS) return CONFORM_FAIL;
  before = mallinfo2().uordblks;
  for (int i = 0; i < MEASURED_CYCLES; i++)
    if (cycle(c, why, n) != CONFORM_PASS) return CONFORM_FAIL;
  after = mallinfo2().uordblks;
  per_cycle = ((double)after - (double)before) / MEASURED_CYCLES;
  if (per_cycle > LEAK_BYTES_PER_CYCLE) {
    snprintf(why, n, "heap grew %.0f bytes per load/use/unload cycle over %d cycles (limit %d)",
             per_cycle, MEASURED_CYCLES, LEAK_BYTES_PER_CYCLE);
    return CONFORM_FAIL;
  }
  snprintf(why, n, "%d cycles, heap change %+.0f bytes per cycle", MEASURED_CYCLES, per_cycle);
  return CONFORM_PASS;
}
