/* test_exec_fused.c - fused groups (mi_node_t.group from the fusion pass) run as one kernel:
 * fewer kernels, the same outputs as the unfused graph on blis-cpu (and opencl / vulkan when
 * they load), and a group the device refuses is recorded and runs node by node. */
#include "test_exec_util.h"

static int32_t group_stats(const mi_graph_t *g, int32_t *nodes) {
  int32_t max = -1;
  *nodes = 0;
  for (int32_t i = 0; i < g->node_count; i++) {
    if (g->nodes[i].group > max) max = g->nodes[i].group;
    *nodes += g->nodes[i].group >= 0;
  }
  return max + 1;
}

static void fused_vs_unfused(mi_plugin_t *p, const char *family, double width, int32_t depth) {
  mi_graph_t *g = zoo(family, width, depth, 32);
  mi_graph_t *plain = transform(g, "passes: {fold_bn: true}\n", NULL);
  mi_graph_t *fused = transform(g, "passes: {fold_bn: true, fuse: true}\n", p);
  mi_array_t *x = input_for(g, 11), *o1[4] = {0}, *o2[4] = {0}, *want[4] = {0};
  mi_session_t *s1, *s2;
  int32_t grouped, groups = group_stats(fused, &grouped), k1, k2;
  double d_fused, d_ref;
  if (groups == 0) {
    printf("%s %s: the plugin declares no fusable patterns; nothing to fuse\n", p->name, family);
    goto done;
  }
  s1 = session(plain, p);
  s2 = session(fused, p);
  run(s1, plain, x, o1);
  run(s2, fused, x, o2);
  ref(plain, x, want);
  k1 = mi_session_kernel_count(s1);
  k2 = mi_session_kernel_count(s2);
  d_fused = tu_rel_l2_arrays(o2[0], o1[0]);
  d_ref = tu_rel_l2_arrays(o2[0], want[0]);
  printf("%s %s: %d groups of %d nodes; kernels %d unfused, %d fused (%d multi-node), %d refused;"
         " rel L2 fused vs unfused %.2e, vs reference %.2e\n", p->name, family, groups, grouped,
         k1, k2, multi_node_kernels(s2), mi_session_unfused_count(s2), d_fused, d_ref);
  for (int32_t i = 0; i < mi_session_unfused_count(s2); i++)
    printf("  not fused: %s\n", mi_session_unfused(s2, i));
  CHECK(d_fused < 1e-5, "%s %s: fused vs unfused %.3e", p->name, family, d_fused);
  CHECK(mi_session_fallback_count(s1) == mi_session_fallback_count(s2), "same host fallbacks");
  if (mi_session_unfused_count(s2) == 0) {
    /* every group of n nodes replaced n kernels by one */
    CHECK(k1 - k2 == grouped - groups, "%s %s: %d - %d kernels, want %d fewer", p->name, family,
          k1, k2, grouped - groups);
    CHECK(multi_node_kernels(s2) == groups, "one kernel per group");
  } else {
    CHECK(k2 <= k1, "refused groups must not add kernels");
  }
  if (strcmp(p->name, "blis-cpu") == 0)
    CHECK(mi_session_unfused_count(s2) == 0 && k2 < k1, "blis-cpu implements fused epilogues");
  for (int i = 0; i < 4; i++) {
    mi_array_destroy(o1[i]);
    mi_array_destroy(o2[i]);
    mi_array_destroy(want[i]);
  }
  mi_session_destroy(s1);
  mi_session_destroy(s2);
done:
  mi_array_destroy(x);
  mi_graph_destroy(fused);
  mi_graph_destroy(plain);
  mi_graph_destroy(g);
}

/* Groups formed for blis-cpu, on a device that refuses them (npu-stub takes no NHWC): every
 * refusal is recorded and the nodes still give the reference's result. */
static void refused_groups(mi_plugin_t *blis, mi_plugin_t *npu) {
  mi_graph_t *g = zoo("resnet", 0.5, 2, 32);
  mi_graph_t *x = transform(g, "passes: {fold_bn: true, fuse: true, layout: nhwc}\n", blis);
  mi_array_t *in = input_for(g, 12), *got[4] = {0}, *want[4] = {0};
  mi_session_t *s = session(x, npu);
  int32_t grouped, groups = group_stats(x, &grouped);
  double d;
  run(s, x, in, got);
  ref(x, in, want);
  d = tu_rel_l2_arrays(got[0], want[0]);
  printf("npu-stub refused %d of %d groups; rel L2 vs reference %.2e (FP16 path)\n",
         mi_session_unfused_count(s), groups, d);
  CHECK(groups > 0 && mi_session_unfused_count(s) == groups, "every group refused and recorded");
  for (int32_t i = 0; i < mi_session_unfused_count(s); i++)
    CHECK(strstr(mi_session_unfused(s, i), "ran node by node") != NULL, "%s",
          mi_session_unfused(s, i));
  CHECK(multi_node_kernels(s) == 0, "no multi-node kernel left");
  CHECK(d < 2e-2, "rel L2 %.3e", d);
  for (int i = 0; i < 4; i++) {
    mi_array_destroy(got[i]);
    mi_array_destroy(want[i]);
  }
  mi_session_destroy(s);
  mi_array_destroy(in);
  mi_graph_destroy(x);
  mi_graph_destroy(g);
}

int main(void) {
  mi_registry_t *r = open_plugins();
  mi_plugin_t *blis = mi_registry_find(r, "blis-cpu"), *npu = mi_registry_find(r, "npu-stub");
  const char *gpus[] = {"opencl", "vulkan"};
  CHECK(blis != NULL, "blis-cpu is loaded");
  if (blis) {
    fused_vs_unfused(blis, "resnet", 0.5, 2);
    fused_vs_unfused(blis, "mobilenetv2", 0.5, 3);
  }
  for (size_t i = 0; i < 2; i++) {
    mi_plugin_t *p = mi_registry_find(r, gpus[i]);
    if (p) fused_vs_unfused(p, "resnet", 0.5, 2);
    else printf("%s: not loaded here, skipped\n", gpus[i]);
  }
  if (blis && npu) refused_groups(blis, npu);
  mi_registry_destroy(r);
  if (g_failures) fprintf(stderr, "test_exec_fused: %d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
