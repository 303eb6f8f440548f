/* space_import.c - a measured configuration's canonical texts (hardware and model side, as the
 * history stores them) read back into a point of a space, possibly of another model or device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

/* One "NODE:VARIANT{k=v,...}" entry of the hardware text, borrowed from a copy of it. */
typedef struct {
  const char *node, *variant;
  char *knobs; /* "k=v,k=v" (NUL-terminated in the copy), or "" */
} hw_entry_t;

static int32_t find_dim(const mi_space_t *s, const char *name) {
  for (int32_t d = 0; d < s->dim_count; d++)
    if (!strcmp(s->dims[d].name, name)) return d;
  return -1;
}

/* The value of a knob dimension for a knob written as text: exact integer, else nearest. */
static int32_t knob_value(const mi__dim_t *d, const char *text) {
  char *end;
  double v = strtod(text, &end);
  int32_t best = -1;
  double bd = INFINITY;
  if (end == text) return -1;
  for (int32_t i = 0; i < d->count; i++) {
    double x = d->fvals[i] != 0 ? d->fvals[i] : (double)d->ivals[i];
    if (fabs(x - v) < bd) {
      bd = fabs(x - v);
      best = i;
    }
  }
  return best;
}

static int32_t label_value(const mi__dim_t *d, const char *label) {
  /* The history's hardware text writes a node with no variant named as "default". */
  if (d->kind == MI_DIM_VARIANT && !strcmp(label, "default")) label = MI_SPACE_VARIANT_AUTO;
  for (int32_t i = 0; i < d->count; i++)
    if (!strcmp(d->labels[i], label)) return i;
  return -1;
}

static int32_t code_value(const mi__dim_t *d, int64_t code) {
  for (int32_t i = 0; i < d->count; i++)
    if (d->ivals[i] == code) return i;
  return -1;
}

/* Sets the knobs "k=v,..." of one node (or of the device when node is NULL). */
static int32_t set_knobs(const mi_space_t *s, const char *node, char *list, int32_t *pt) {
  int32_t n = 0;
  char name[256], *save = NULL;
  for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    int32_t d, v;
    if (!eq) continue;
    *eq = '\0';
    if (node) snprintf(name, sizeof name, "node.%s.knob.%s", node, tok);
    else
      snprintf(name, sizeof name, "device.%s", tok);
    if ((d = find_dim(s, name)) >= 0 && (v = knob_value(&s->dims[d], eq + 1)) >= 0) {
      pt[d] = v;
      n++;
    }
  }
  return n;
}

/* Splits "device{..};a:v{..};b:w{..}" into entries; the device entry has node NULL. */
static int32_t split_hw(char *t, hw_entry_t *e, int32_t cap) {
  int32_t n = 0;
  while (*t && n < cap) {
    char *semi = strchr(t, ';'), *br, *colon;
    if (semi) *semi = '\0';
    br = strchr(t, '{');
    e[n].knobs = (char *)"";
    if (br) {
      char *close = strrchr(br, '}');
      if (close) *close = '\0';
      *br = '\0';
      e[n].knobs = br + 1;
    }
    colon = strrchr(t, ':');
    if (!strcmp(t, "device")) {
      e[n].node = NULL;
      e[n].variant = NULL;
    } else if (colon) {
      *colon = '\0';
      e[n].node = t;
      e[n].variant = colon + 1;
    } else {
      e[n].node = t;
      e[n].variant = "";
    }
    n++;
    if (!semi) break;
    t = semi + 1;
  }
  return n;
}

static void node_name(const mi_space_t *s, int32_t n, char *buf, size_t cap) {
  const char *nm = s->g->nodes[n].name;
  if (nm && nm[0]) snprintf(buf, cap, "%s", nm);
  else
    snprintf(buf, cap, "#%d", (int)n);
}

/* Hardware side: device knobs; nodes by name, else the source node at the nearest relative
 * position among those whose variant this node also offers (variant ids name their op). */
static int32_t import_hw(const mi_space_t *s, char *text, int32_t *pt) {
  hw_entry_t e[1024];
  int32_t n = split_hw(text, e, 1024), matched = 0, src_nodes = 0;
  for (int32_t i = 0; i < n; i++) src_nodes += e[i].node != NULL;
  for (int32_t i = 0; i < n; i++)
    if (!e[i].node) matched += set_knobs(s, NULL, e[i].knobs, pt);
  for (int32_t k = 0; k < s->node_count; k++) {
    const mi__node_t *nd = &s->nodes[k];
    const mi__dim_t *vd = &s->dims[nd->variant_dim];
    char nb[128], *knobs;
    int32_t pick = -1, v = -1, rank = 0;
    double best = INFINITY;
    node_name(s, nd->node, nb, sizeof nb);
    for (int32_t i = 0; i < n && pick < 0; i++)
      if (e[i].node && !strcmp(e[i].node, nb) && (v = label_value(vd, e[i].variant)) >= 0) pick = i;
    for (int32_t i = 0; i < n && v < 0; i++) {
      int32_t w;
      if (!e[i].node) continue;
      rank++;
      if ((w = label_value(vd, e[i].variant)) < 0) continue;
      double pos = src_nodes > 1 ? (double)(rank - 1) / (src_nodes - 1) : 0;
      double mine = s->node_count > 1 ? (double)k / (s->node_count - 1) : 0;
      if (pick < 0 || fabs(pos - mine) < best) {
        best = fabs(pos - mine);
        pick = i;
      }
    }
    if (pick < 0) continue;
    pt[nd->variant_dim] = label_value(vd, e[pick].variant);
    matched++;
    /* strtok writes into the list: knobs are used once per entry, so copy them. */
    if ((knobs = strdup(e[pick].knobs))) {
      matched += set_knobs(s, nb, knobs, pt);
      free(knobs);
    }
  }
  return matched;
}

/* Model side: "fold_bn=.. fuse=.. layout=..", "defaults: weights=..", "layer NAME: ...". */
static int32_t import_xf(const mi_space_t *s, char *text, int32_t *pt) {
  int32_t matched = 0, d;
  char dflt_prec[32] = "", name[256];
  char *line, *save = NULL;
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char weights[16] = "", scales[16] = "per_tensor", acts[16] = "fp32", *p;
    double prune = -1;
    const char *layer = NULL;
    if (!strncmp(line, "fold_bn=", 8)) {
      int fb = 0, fu = 0;
      char lay[16] = "";
      if (sscanf(line, "fold_bn=%d fuse=%d layout=%15[a-z]", &fb, &fu, lay) >= 2) {
        int32_t v;
        if ((d = find_dim(s, "model.fold_bn")) >= 0 && (v = code_value(&s->dims[d], fb)) >= 0) pt[d] = v, matched++;
        if ((d = find_dim(s, "model.fuse")) >= 0 && (v = code_value(&s->dims[d], fu)) >= 0) pt[d] = v, matched++;
        if ((d = find_dim(s, "model.layout")) >= 0 && (v = label_value(&s->dims[d], lay)) >= 0) pt[d] = v, matched++;
      }
      continue;
    }
    if (!strncmp(line, "layer ", 6) && (p = strchr(line + 6, ':'))) {
      *p = '\0';
      layer = line + 6;
      line = p + 1;
    } else if (!strncmp(line, "defaults:", 9)) {
      line += 9;
    } else {
      continue;
    }
    if ((p = strstr(line, "weights="))) sscanf(p + 8, "%15[a-z0-9]", weights);
    if ((p = strstr(line, "scales="))) sscanf(p + 7, "%15[a-z_]", scales);
    if ((p = strstr(line, "activations="))) sscanf(p + 12, "%15[a-z0-9]", acts);
    if ((p = strstr(line, "prune="))) prune = strtod(p + 6, NULL);
    if (weights[0]) {
      char label[32];
      /* INT8 activations: the space has one label for them (per-channel weights), whatever
       * the source's weight granularity. */
      if (!strcmp(weights, "int8") && !strcmp(acts, "int8")) snprintf(label, sizeof label, "int8_act");
      else if (!strcmp(weights, "int8"))
        snprintf(label, sizeof label, "int8_%s", strcmp(scales, "per_channel") ? "tensor" : "channel");
      else
        snprintf(label, sizeof label, "%s", weights);
      if (!layer) snprintf(dflt_prec, sizeof dflt_prec, "%s", label);
      snprintf(name, sizeof name, "node.%s.precision", layer ? layer : "");
      if (layer && (d = find_dim(s, name)) >= 0) {
        int32_t v = label_value(&s->dims[d], label);
        if (v >= 0) pt[d] = v, matched++;
      } else if (layer && !dflt_prec[0]) {
        /* A layer this model lacks: its precision becomes the default guess for the rest. */
        snprintf(dflt_prec, sizeof dflt_prec, "%s", label);
      }
    }
    if (prune >= 0 && layer) {
      snprintf(name, sizeof name, "node.%s.prune", layer);
      if ((d = find_dim(s, name)) >= 0) {
        int32_t v = code_value(&s->dims[d], (int64_t)lround(prune * 100));
        if (v >= 0) pt[d] = v, matched++;
      }
    }
  }
  /* Weighted layers the text did not name take the source's prevailing precision. */
  if (dflt_prec[0])
    for (d = 0; d < s->dim_count; d++) {
      const mi__dim_t *dm = &s->dims[d];
      int32_t v;
      if (dm->kind == MI_DIM_MODEL && dm->model == MI__MD_PRECISION && pt[d] == dm->dflt &&
          (v = label_value(dm, dflt_prec)) >= 0)
        pt[d] = v;
    }
  return matched;
}

int32_t mi_space_from_canonical(const mi_space_t *s, const char *hw, const char *xf, int32_t *pt,
                                int32_t *matched, mi_error_t *err) {
  char *a = NULL, *b = NULL;
  int32_t m = 0, rc;
  if (matched) *matched = 0;
  if (!s || !pt) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "space: NULL argument");
  mi_space_default(s, pt);
  if ((hw && !(a = strdup(hw))) || (xf && !(b = strdup(xf)))) {
    free(a);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "space: out of memory");
  }
  if (a && strcmp(a, "default") != 0) m += import_hw(s, a, pt);
  if (b) m += import_xf(s, b, pt);
  free(a);
  free(b);
  if (matched) *matched = m;
  rc = mi_space_repair(s, pt, NULL, err);
  return rc;
}
