/* map.c - warm start: a configuration of one task mapped onto another task's space by
 * matching nodes on op type and relative position, values on labels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_tune.h"

/* The part of a node dimension's key after "node.<name>." ("variant", "knob.tile"). */
static const char *dim_suffix(const mi_space_t *s, const mi_graph_t *g, int32_t d) {
  const char *key = mi_space_dim_name(s, d);
  int32_t node = mi_space_dim_node(s, d);
  if (!key || node < 0) return key;
  if (g && node < g->node_count && g->nodes[node].name) {
    size_t n = strlen(g->nodes[node].name);
    if (strncmp(key, "node.", 5) == 0 && strncmp(key + 5, g->nodes[node].name, n) == 0 &&
        key[5 + n] == '.')
      return key + 6 + n;
  }
  /* Without the graph: the last component, or the last two for "knob.NAME". */
  {
    const char *k = strstr(key, ".knob.");
    if (k) return k + 1;
    k = strrchr(key, '.');
    return k ? k + 1 : key;
  }
}

static const char *node_name_of(const mi_space_t *s, const mi_graph_t *g, int32_t d,
                                char *buf, size_t cap) {
  const char *key = mi_space_dim_name(s, d), *suf = dim_suffix(s, g, d);
  size_t n;
  if (!key || strncmp(key, "node.", 5) != 0 || !suf || suf <= key + 6) return "";
  n = (size_t)(suf - 1 - (key + 5));
  if (n >= cap) n = cap - 1;
  memcpy(buf, key + 5, n);
  buf[n] = 0;
  return buf;
}

/* The source node that stands for destination node `dn`: the same op type at the nearest
 * relative position (same name wins a tie); by name alone without graphs. */
static int32_t match_node(const mi_graph_t *sg, const mi_graph_t *dg, int32_t dn,
                          const char *dname) {
  int32_t best = -1;
  double bd = INFINITY;
  if (!sg || !dg || dn < 0 || dn >= dg->node_count) {
    if (!sg) return -2; /* caller matches by name */
    for (int32_t i = 0; i < sg->node_count; i++)
      if (sg->nodes[i].name && strcmp(sg->nodes[i].name, dname) == 0) return i;
    return -1;
  }
  for (int32_t i = 0; i < sg->node_count; i++) {
    double dpos;
    if (strcmp(sg->nodes[i].op_type, dg->nodes[dn].op_type) != 0) continue;
    dpos = fabs((double)i / (sg->node_count > 1 ? sg->node_count - 1 : 1) -
                (double)dn / (dg->node_count > 1 ? dg->node_count - 1 : 1));
    if (sg->nodes[i].name && dg->nodes[dn].name && strcmp(sg->nodes[i].name, dg->nodes[dn].name) == 0)
      dpos -= 1e-9;
    if (dpos < bd) {
      bd = dpos;
      best = i;
    }
  }
  return best;
}

/* The destination value for source label `lab`: same label, else nearest number, else -1. */
static int32_t match_value(const mi_space_t *dst, int32_t d, const char *lab) {
  char *end = NULL;
  double x = strtod(lab, &end), bd = INFINITY;
  int32_t best = -1, numeric = end && end != lab && !*end;
  for (int32_t v = 0; v < mi_space_dim_size(dst, d); v++) {
    const char *l = mi_space_dim_label(dst, d, v);
    if (l && strcmp(l, lab) == 0) return v;
    if (numeric && l) {
      char *e2 = NULL;
      double y = strtod(l, &e2);
      if (e2 && e2 != l && !*e2 && fabs(x - y) < bd) {
        bd = fabs(x - y);
        best = v;
      }
    }
  }
  return best;
}

int32_t mi_meta_map_point(const mi_space_t *src, const mi_graph_t *src_graph,
                          const int32_t *src_pt, const mi_space_t *dst,
                          const mi_graph_t *dst_graph, int32_t *dst_pt, mi_error_t *err) {
  int32_t sn, dn;
  if (!src || !src_pt || !dst || !dst_pt)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "meta map: spaces and points required");
  sn = mi_space_dim_count(src);
  dn = mi_space_dim_count(dst);
  mi_space_default(dst, dst_pt);
  for (int32_t d = 0; d < dn; d++) {
    int32_t node = mi_space_dim_node(dst, d), snode = -1, v;
    const char *suf = dim_suffix(dst, dst_graph, d);
    char dname[128], sname[128];
    if (node >= 0) {
      node_name_of(dst, dst_graph, d, dname, sizeof dname);
      snode = match_node(src_graph, dst_graph, node, dname);
      if (snode == -1) continue;
    }
    for (int32_t e = 0; e < sn; e++) {
      int32_t en = mi_space_dim_node(src, e);
      if (node < 0) {
        if (en >= 0 || strcmp(mi_space_dim_name(src, e), mi_space_dim_name(dst, d)) != 0) continue;
      } else {
        if (en < 0 || strcmp(dim_suffix(src, src_graph, e), suf) != 0) continue;
        if (snode >= 0 && en != snode) continue;
        if (snode == -2 && strcmp(node_name_of(src, src_graph, e, sname, sizeof sname), dname) != 0)
          continue;
      }
      v = match_value(dst, d, mi_space_dim_label(src, e, src_pt[e]));
      if (v >= 0) dst_pt[d] = v;
      break;
    }
  }
  return mi_space_repair(dst, dst_pt, NULL, err);
}
