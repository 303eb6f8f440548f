/* agent_config.c - a job's configuration texts back into what a worker takes: the canonical
 * hardware-side text into session options, the canonical transform text into a configuration;
 * each is checked by writing it again, so an agent never measures something else. */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

void mi_agent_so_free(mi_agent_so_t *s) {
  if (!s) return;
  free(s->knobs);
  free(s->choices);
  free(s->text);
  memset(s, 0, sizeof *s);
}

/* Parses "{a=1,b=2.5}" at *p in place (names end up NUL-terminated); advances past '}'. */
static int knobs(char **p, mi_knob_value_t *k, int32_t *n, const mi_knob_desc_t *d, uint32_t dn) {
  char *s = *p;
  if (*s != '{') return -1;
  s++;
  while (*s && *s != '}') {
    char *name = s, *eq = strchr(s, '='), *end;
    if (!eq) return -1;
    *eq = '\0';
    k[*n].name = name;
    k[*n].f = strtod(eq + 1, &end);
    k[*n].i = strtoll(eq + 1, NULL, 10);
    /* The canonical text writes a FLOAT knob's f, others' i: the plugin's declaration says which. */
    {
      int is_float = 0;
      for (uint32_t j = 0; j < dn; j++)
        if (!strcmp(d[j].name, name)) is_float = d[j].type == MI_KNOB_FLOAT;
      if (!is_float) k[*n].f = 0;
      else
        k[*n].i = 0;
    }
    (*n)++;
    s = end;
    if (*s == ',') s++;
    else if (*s != '}')
      return -1;
  }
  if (*s != '}') return -1;
  *p = s + 1;
  return 0;
}

int32_t mi_agent_so_parse(const char *text, const mi_plugin_t *p, uint32_t dev, mi_agent_so_t *out,
                          mi_error_t *err) {
  mi_knob_desc_t *kd = NULL;
  uint32_t kn = 0;
  size_t len = strlen(text), cap = len / 2 + 2;
  char *s, *again = NULL;
  int32_t rc = MI_OK;
  memset(out, 0, sizeof *out);
  out->so.struct_size = sizeof out->so;
  /* As the tuner's own workers measure (mi_space_hw_create): a node the device refuses runs on
   * the host, e.g. the QuantizeLinear that enters a region of INT8 activations. */
  out->so.allow_host_fallback = 1;
  if (!strcmp(text, "default")) return MI_OK;
  if (!(out->text = strdup(text)) || !(out->knobs = calloc(cap, sizeof *out->knobs)) ||
      !(out->choices = calloc(cap, sizeof *out->choices))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "agent: out of memory");
    goto done;
  }
  if (p) mi_plugin_knobs(p, dev, &kd, &kn, NULL);
  s = out->text;
  if (strncmp(s, "device", 6) != 0) goto bad;
  s += 6;
  if (knobs(&s, out->knobs, &out->so.device_knob_count, kd, kn)) goto bad;
  out->so.device_knobs = out->knobs;
  while (*s == ';') {
    mi_node_choice_t *c = &out->choices[out->so.choice_count++];
    char *brace = strchr(s + 1, '{'), *colon;
    int32_t first;
    if (!brace) goto bad;
    *brace = '\0';
    if (!(colon = strrchr(s + 1, ':'))) goto bad;
    *colon = '\0';
    c->node = s + 1;
    c->variant_id = strcmp(colon + 1, "default") ? colon + 1 : NULL;
    *brace = '{';
    s = brace;
    first = out->so.device_knob_count;
    for (int32_t i = 0; i < out->so.choice_count - 1; i++) first += out->choices[i].knob_count;
    c->knobs = out->knobs + first;
    if (knobs(&s, out->knobs + first, &c->knob_count, kd, kn)) goto bad;
    /* The '{' was overwritten above to end the variant id; the knob parser needs it back only
     * while parsing, and the id must end there, so cut it again. */
    *brace = '\0';
  }
  if (*s) goto bad;
  out->so.choices = out->choices;
  if (!(again = mi_config_canonical(&out->so)) || strcmp(again, text) != 0) goto bad;
  goto done;
bad:
  rc = mi_errorf(err, MI_ERR_PARSE, "agent: cannot read the hardware configuration '%.80s'", text);
done:
  free(again);
  free(kd);
  if (rc) mi_agent_so_free(out);
  return rc;
}

static int32_t precision(const char *s, int32_t *out) {
  static const char *const names[] = {"fp32", "fp16", "int8", "int4"};
  for (int32_t i = 0; i < 4; i++)
    if (!strcmp(s, names[i])) {
      *out = i;
      return 0;
    }
  return -1;
}

/* " weights=int8 scales=per_channel activations=int8 prune=0.25" into a layer. */
static int layer(char *s, mi_xf_layer_t *l) {
  char *save = NULL;
  memset(l, 0, sizeof *l);
  for (char *t = strtok_r(s, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    char *v = strchr(t, '=');
    if (!v) return -1;
    *v++ = '\0';
    if (!strcmp(t, "weights")) {
      if (precision(v, &l->weights)) return -1;
      l->set |= MI_XF_SET_WEIGHTS;
    } else if (!strcmp(t, "scales")) {
      l->scales = !strcmp(v, "per_channel") ? MI_XF_PER_CHANNEL : MI_XF_PER_TENSOR;
      l->set |= MI_XF_SET_SCALES;
    } else if (!strcmp(t, "activations")) {
      if (precision(v, &l->activations)) return -1;
      l->set |= MI_XF_SET_ACTS;
    } else if (!strcmp(t, "prune")) {
      l->prune = strtod(v, NULL);
      l->set |= MI_XF_SET_PRUNE;
    } else
      return -1;
  }
  return 0;
}

int32_t mi_agent_xf_parse(const char *text, mi_xf_config_t **out, mi_error_t *err) {
  mi_xf_config_t *c = mi_xf_config_create();
  char *copy = strdup(text), *save = NULL, *again = NULL, *line;
  int32_t rc = MI_OK, n = 0;
  *out = NULL;
  if (!c || !copy) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "agent: out of memory");
    goto done;
  }
  for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
    if (n == 0) {
      if (strcmp(line, "mi-transform-config 1")) goto bad;
    } else if (n == 1) {
      char lay[16] = "";
      int fb = 0, fu = 0, al = 1, blk = 0;
      char *fo = strstr(line, " float_output=1");
      if (sscanf(line, "fold_bn=%d fuse=%d layout=%15s channel_align=%d", &fb, &fu, lay, &al) != 4)
        goto bad;
      c->fold_bn = fb;
      c->fuse = fu;
      c->channel_align = al;
      c->float_output = fo != NULL;
      if (!strncmp(lay, "nchwc/", 6)) {
        blk = (int)strtol(lay + 6, NULL, 10);
        c->layout = MI_LAYOUT_NCHWC;
        c->block = blk;
      } else if (!strcmp(lay, "nchw"))
        c->layout = MI_LAYOUT_NCHW;
      else if (!strcmp(lay, "nhwc"))
        c->layout = MI_LAYOUT_NHWC;
      else if (strcmp(lay, "keep"))
        goto bad;
    } else if (!strncmp(line, "calibration=", 12)) {
      if (!strncmp(line + 12, "percentile:", 11)) {
        c->calib_method = MI_XF_CALIB_PERCENTILE;
        c->percentile = strtod(line + 23, NULL);
      } else
        c->calib_method = !strncmp(line + 12, "mse", 3) ? MI_XF_CALIB_MSE : MI_XF_CALIB_MINMAX;
      c->bias_correction = strstr(line, " bias_correction=1") != NULL;
      c->equalize = strstr(line, " equalize=data") ? MI_XF_EQUALIZE_DATA : strstr(line, " equalize=1") != NULL;
    } else if (!strncmp(line, "defaults:", 9)) {
      if (layer(line + 9, &c->defaults)) goto bad;
    } else if (!strncmp(line, "op ", 3) || !strncmp(line, "layer ", 6)) {
      int kind = line[0] == 'o' ? 1 : 0;
      char *name = line + (kind ? 3 : 6), *colon = strrchr(name, ':');
      mi_xf_layer_t l;
      /* A name may hold ':'; the layer fields never do, so the last one ends the name. */
      if (!colon) goto bad;
      *colon = '\0';
      if (layer(colon + 1, &l)) goto bad;
      if ((rc = mi_xf_config_set_layer(c, kind, name, &l, err))) goto done;
    } else
      goto bad;
  }
  if (mi_xf_config_canonical(c, &again, NULL) != MI_OK || strcmp(again, text) != 0) goto bad;
  *out = c;
  c = NULL;
  goto done;
bad:
  rc = mi_errorf(err, MI_ERR_PARSE, "agent: cannot read the transform configuration '%.60s'", text);
done:
  free(again);
  free(copy);
  mi_xf_config_destroy(c);
  return rc;
}
