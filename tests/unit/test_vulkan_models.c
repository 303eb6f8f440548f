/* test_vulkan_models.c - zoo models on vulkan:0 through mi_session (host fallback allowed)
 * against mi_ref_run, and the pipeline cache file: written, reused, and rewritten when corrupt. */
#include <sys/stat.h>

#include "test_vulkan_util.h"

static void model(mi_plugin_t *p, const char *name, const char *args) {
  char cmd[2048], path[512];
  mi_graph_t *g = NULL;
  mi_error_t err = {0, ""};
  int fb = -1;
  uint64_t ns = 0;
  double e;
  snprintf(path, sizeof path, "/tmp/mi-test-vulkan-%s.onnx", name);
  CHECK(tu_mi_zoo(cmd, sizeof cmd, name, path, args) == 0, "%s failed", cmd);
  if (mi_onnx_load(path, &g, &err) != MI_OK) {
    CHECK(0, "load %s: %s", path, err.message);
    return;
  }
  e = tv_compare(p, g, NULL, NULL, NULL, 0, 1, &fb, &ns, &err);
  CHECK(e >= 0 && e < 1e-4, "%s: rel L2 %g (%s)", name, e, err.message);
  fprintf(stderr, "%s: rel L2 %.3g, %d node(s) on the host\n", name, e, fb);
  mi_graph_destroy(g);
  remove(path);
}

static void cache_file(const char *dir, char *path, size_t size) {
  char cmd[600];
  FILE *f;
  snprintf(cmd, sizeof cmd, "ls %s/vulkan/*.bin 2>/dev/null | head -1", dir);
  path[0] = '\0';
  if ((f = popen(cmd, "r"))) {
    if (fgets(path, (int)size, f)) path[strcspn(path, "\n")] = '\0';
    pclose(f);
  }
}

static int header_ok(const char *path) {
  unsigned char h[32];
  uint32_t w[2];
  FILE *f = fopen(path, "rb");
  int ok = f && fread(h, 1, 32, f) == 32;
  if (f) fclose(f);
  if (!ok) return 0;
  memcpy(w, h, 8);
  return w[0] >= 32 && w[1] == 1;
}

static void models_and_pipeline_cache(void) {
  const char *dir = "/tmp/mi-test-vulkan-models-cache";
  char path[600];
  mi_plugin_t *p;
  mi_registry_t *r;
  FILE *f;
  system("rm -rf /tmp/mi-test-vulkan-models-cache");
  r = tv_load_or_skip(&p, dir);
  model(p, "mlp", "");
  model(p, "mobilenetv2", "--width 0.5 --resolution 64");
  model(p, "resnet", "--resolution 32");
  model(p, "transformer", "");
  model(p, "kws", "");
  mi_registry_destroy(r);
  cache_file(dir, path, sizeof path);
  CHECK(path[0] && header_ok(path), "pipeline cache file not written under %s", dir);
  /* reuse: a second instance loads it and still runs */
  r = tv_load(&p, dir);
  CHECK(p != NULL, "plugin did not load with an existing cache");
  if (p) model(p, "mlp", "");
  mi_registry_destroy(r);
  /* corrupt: garbage is ignored and the file rewritten with a valid header */
  if (path[0] && (f = fopen(path, "wb"))) {
    fputs("this is not a pipeline cache, not at all", f);
    fclose(f);
  }
  r = tv_load(&p, dir);
  CHECK(p != NULL, "plugin did not load with a corrupt cache");
  if (p) model(p, "mlp", "");
  mi_registry_destroy(r);
  CHECK(path[0] && header_ok(path), "corrupt pipeline cache not rewritten");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(models_and_pipeline_cache),
};

TU_MAIN(NULL, NULL)
