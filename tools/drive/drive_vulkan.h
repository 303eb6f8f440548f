/* drive_vulkan.h - driving the vulkan plugin: load it on lavapipe through the host loader,
 * constant tensors, kernel descriptions built from a graph (the unit tests, tools/bench/vulkan). */
#ifndef MI_DRIVE_VULKAN_H
#define MI_DRIVE_VULKAN_H

#include "drive_host.h"
#include "drive_tensor.h"
#include "metainfer/mi_graph.h"

/* Loads the registry from $MI_BUILD/plugins with lavapipe selected; *plugin is NULL when the
 * plugin sees no device or was not built. A plugin that was built and refused by the loader
 * fails the test at once. */
static inline mi_registry_t *tv_load(mi_plugin_t **plugin, const char *cache_dir) {
  mi_error_t err = {0, ""};
  mi_registry_t *r;
  setenv("VK_DRIVER_FILES", "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", 1);
  if (cache_dir) setenv("MI_CACHE_DIR", cache_dir, 1);
  *plugin = NULL;
  if (!(r = mi_registry_create())) return NULL;
  if (drive_scan_plugins(r, &err) != MI_OK) fprintf(stderr, "scan: %s\n", err.message);
  *plugin = mi_registry_find(r, "vulkan");
  if (!*plugin) {
    char manifest[1024];
    FILE *f = fopen(drive_build_path(manifest, sizeof manifest, "plugins/vulkan.mi-plugin"), "r");
    if (f) {
      fclose(f);
      fprintf(stderr, "the vulkan plugin was built (%s) but the loader refused it\n", manifest);
      DRIVE_REQUIRE(!"the vulkan plugin was refused");
    }
  }
  if (*plugin && (*plugin)->device_count == 0) *plugin = NULL;
  return r;
}

static inline float tv_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

static inline int32_t tv_const(mi_graph_t *g, const char *name, int rank, const int64_t *dims, uint64_t seed) {
  int64_t n = 1;
  float *v;
  int32_t t;
  for (int i = 0; i < rank; i++) n *= dims[i];
  v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = tv_rand(&seed);
  t = mi_graph_add_const_f32(g, name, rank, dims, v);
  free(v);
  return t;
}

#define TV_MAXT 32

/* One kernel description covering every node of g (shapes inferred): internal tensors appear
 * only in tensors[]; the graph inputs must be listed in order of first use. */
typedef struct tv_desc {
  mi_tensor_desc_t td[TV_MAXT];
  const mi_tensor_desc_t *tp[TV_MAXT];
  mi_node_desc_t nd[8];
  const mi_node_desc_t *np[8];
  mi_kernel_desc_t k;
} tv_desc_t;

static inline void tv_desc_build(const mi_graph_t *g, const char *variant, tv_desc_t *f) {
  memset(f, 0, sizeof *f);
  for (int32_t i = 0; i < g->tensor_count && i < TV_MAXT; i++) {
    const mi_tensor_t *t = &g->tensors[i];
    mi_tensor_desc_t *d = &f->td[i];
    d->struct_size = sizeof *d;
    d->dtype = t->dtype;
    d->layout = t->rank == 4 ? MI_LAYOUT_NCHW : MI_LAYOUT_ANY;
    d->rank = t->rank;
    memcpy(d->dims, t->dims, sizeof d->dims);
    d->data = t->data;
    d->data_bytes = t->data ? t->nbytes : 0;
    f->tp[i] = d;
  }
  for (int32_t i = 0; i < g->node_count && i < 8; i++) {
    const mi_node_t *n = &g->nodes[i];
    mi_node_desc_t *d = &f->nd[i];
    d->struct_size = sizeof *d;
    d->op_type = n->op_type;
    d->name = n->name;
    d->opset = (int32_t)g->opset;
    d->input_count = n->input_count;
    d->inputs = n->inputs;
    d->output_count = n->output_count;
    d->outputs = n->outputs;
    d->attr_count = n->attr_count;
    d->attrs = n->attrs;
    f->np[i] = d;
  }
  drive_kernel_desc(&f->k, f->np, g->node_count, f->tp, g->tensor_count, g->inputs, g->input_count,
                    g->outputs, g->output_count, variant, NULL, 0);
}

#endif
