/* prepare.c - session preparation: folds what is known at create time, then prepares one
 * kernel per node, per fused group or per lowered quantized layer, in execution order, with
 * host fallback for what the device refuses; layout conversions become Transpose kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/prepare.h"
#include "graph/graph.h"
#include "ref/ref.h"

/* Reads a field of the caller's options only when the struct they declared contains it. */
#define OPT(opts, field, dflt) \
  ((opts) && MI_HAS_FIELD(opts, mi_session_options_t, field) ? (opts)->field : (dflt))

static const mi_node_choice_t *find_choice(const mi_session_options_t *opts, const char *node) {
  int32_t count = OPT(opts, choice_count, 0);
  const mi_node_choice_t *choices = OPT(opts, choices, NULL);
  for (int32_t i = 0; i < count && choices; i++)
    if (choices[i].node && node && strcmp(choices[i].node, node) == 0) return &choices[i];
  return NULL;
}

int32_t mi__prep_push_line(char ***list, int32_t *count, const char *line, mi_error_t *err) {
  char **grown = realloc(*list, (size_t)(*count + 1) * sizeof *grown);
  if (!grown) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  *list = grown;
  if (!(grown[*count] = strdup(line))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  (*count)++;
  return MI_OK;
}

/* A device step's inputs, outputs and (a group) nodes in one allocation, which st->inputs
 * holds: mi_session_destroy frees that one. */
static int32_t step_indices(mi__step_t *st, const mi__kdesc_t *k, const int32_t *nodes, int32_t count) {
  int32_t nn = count > 1 ? count : 0, at = k->input_count + k->output_count;
  int32_t *b = malloc(((size_t)at + (size_t)nn + (size_t)k->tensor_count + 1) * sizeof *b);
  if (!b) return MI_ERR_OUT_OF_MEMORY;
  memcpy(b, k->graph_inputs, (size_t)k->input_count * sizeof *b);
  memcpy(b + k->input_count, k->graph_outputs, (size_t)k->output_count * sizeof *b);
  if (nn) memcpy(b + at, nodes, (size_t)nn * sizeof *b);
  memcpy(b + at + nn, k->tmap, (size_t)k->tensor_count * sizeof *b);
  st->inputs = b;
  st->outputs = b + k->input_count;
  st->nodes = nn ? b + at : NULL;
  st->desc_tensors = b + at + nn;
  st->desc_count = k->tensor_count;
  return MI_OK;
}

/* Records node i as a host step (the reference interpreter runs it). */
static int32_t host_step(mi__prep_t *p, int32_t i, const char *why, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_node_t *n = &s->g->nodes[i];
  mi__step_t *st = &s->steps[s->step_count];
  char lb[32];
  const char *label = mi__node_label(s->g, i, lb, sizeof lb);
  uint8_t *on;
  int32_t fb;
  if (!OPT(p->opts, allow_host_fallback, 1))
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (%s): %s", label, n->op_type, why);
  memset(st, 0, sizeof *st);
  st->node = i;
  st->node_count = 1;
  st->kind = MI__STEP_HOST;
  /* The fallback device first; what it refuses too runs on the reference interpreter. Where
   * the reference can take it, the fallback device's kernel is prepared once every step is
   * (mi__fallback_plan), when the runs of refused nodes it may take as one are known. */
  fb = 0;
  if (!mi_ref_supports(n->op_type, s->g->opset)) {
    if ((fb = mi__fallback_prepare(s, st, i, err)) < 0) return -fb;
    if (!fb)
      return mi_errorf(err, MI_ERR_UNSUPPORTED,
                       "node '%s' (%s): %s; the reference interpreter lacks it too", label,
                       n->op_type, why);
    st->on_fb = 1;
  }
  s->step_count++;
  if (!(on = realloc(s->fallback_on, (size_t)s->fallback_count + 1)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  s->fallback_on = on;
  on[s->fallback_count] = (uint8_t)fb;
  return mi__prep_push_line(&s->fallback, &s->fallback_count, label, err);
}

/* Prepares the kernel `k` describes; on success appends a device step for `nodes`. Returns the
 * plugin's status (its message in perr) or a host error (in err, with *fatal set). */
/* Whether the device's variant `id` implements `op` and takes tensors in `layout`
 * (MI_LAYOUT_NCHW: any) and of the dtypes in `dtypes` (0: any). An id the device did not declare
 * is left to the device. The op matters where the session rewrote the graph: a layer norm spelled
 * out in Adds and Divs becomes one LayerNormalization named after its last Add, so a choice made
 * for that Add (oww_hello_deepa's add.direct) would otherwise reach the fused node and fail. */
static int variant_fits(const mi__prep_t *p, const char *id, const char *op, int32_t layout, uint32_t dtypes) {
  for (uint32_t i = 0; i < p->var_count; i++)
    if (strncmp(p->vars[i].id, id, sizeof p->vars[i].id) == 0)
      return (!p->vars[i].op_type[0] || strncmp(p->vars[i].op_type, op, sizeof p->vars[i].op_type) == 0) &&
             (layout == MI_LAYOUT_NCHW || (p->vars[i].layout_mask & MI_LAYOUT_BIT(layout))) &&
             (!dtypes || (p->vars[i].dtype_mask & dtypes));
  return 1;
}

/* The own choices of a group's members that it runs as ops of their own (the pointwise Conv of
 * MI_FUSE_CONV; epilogue members run in their op's epilogue and carry none) into mc/mp, for
 * mi_kernel_desc_t.member_choices; 0 when no member has one. */
static int member_choices(const mi__prep_t *p, const int32_t *nodes, int32_t count, mi_member_choice_t *mc,
                          const mi_member_choice_t **mp) {
  int any = 0;
  mp[0] = NULL;
  for (int32_t m = 1; m < count; m++) {
    const mi_node_t *n = &p->s->g->nodes[nodes[m]];
    const mi_node_choice_t *c = strcmp(n->op_type, "Conv") ? NULL : find_choice(p->opts, n->name);
    const char *bf16 = p->bf16_src && p->bf16_src[nodes[m]] >= 0
                           ? mi__bf16_variant(p->vars, p->var_count, n->op_type)
                           : NULL;
    int own = c && ((c->variant_id && c->variant_id[0]) || c->knob_count > 0);
    mp[m] = NULL;
    /* A member on its input's BF16 rounding (bf16_in.c) runs on the BF16 variant, with its own
     * knobs where its choice names that variant or none (as an anchor, mi__prep_try_kernel). */
    if (bf16 && own && c->variant_id && c->variant_id[0] &&
        !variant_fits(p, c->variant_id, n->op_type, MI_LAYOUT_NCHW, MI_DTYPE_BIT(MI_DTYPE_BFLOAT16)))
      own = 0;
    if (!own && !bf16) continue;
    memset(&mc[m], 0, sizeof mc[m]);
    mc[m].struct_size = (uint32_t)sizeof mc[m];
    mc[m].variant_id = own && c->variant_id && c->variant_id[0] ? c->variant_id : bf16;
    mc[m].knob_count = own ? c->knob_count : 0;
    mc[m].knobs = own ? c->knobs : NULL;
    mp[m] = &mc[m];
    any = 1;
  }
  return any;
}

/* Prepares one kernel for `nodes` (execution order), whose anchor (the unit's op: the Conv,
 * MatMul or Gemm its other members serve) gives the choice it is described with and names the
 * step: its time is the anchor's, where the layer tasks and the profile look for it. A
 * weight-only MatMul's first member is its weight's DequantizeLinear and a folded MatMul's a
 * Transpose; read from nodes[0], the tuner's choice for the MatMul was never applied and its time
 * was not found. `variant` is the variant the step needs when the anchor's choice does not
 * name one; `layout` and `dtypes` are what the step's tensors are (MI_LAYOUT_NCHW, 0: plain).
 * A choice whose variant cannot take them (a configuration made for NCHW run in NHWC, a float
 * variant for a lowered INT8 layer) is not applied, knobs included: handing a variant storage
 * it does not declare makes it compute on the wrong memory order. */
int32_t mi__prep_try_kernel(mi__prep_t *p, mi__kdesc_t *k, int32_t anchor, const int32_t *nodes, int32_t count,
                            const char *variant, int32_t layout, uint32_t dtypes, mi_error_t *perr,
                            int *fatal, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_plugin_t *pl = s->plugin;
  const mi_node_choice_t *choice = find_choice(p->opts, s->g->nodes[anchor].name);
  mi__step_t *st = &s->steps[s->step_count];
  mi_kernel_t *kernel = NULL;
  uint8_t *sig = NULL;
  size_t sig_len = 0;
  uint64_t sig_hash = 0;
  int reused = 0;
  int32_t rc;
  *fatal = 0;
  if (choice && choice->variant_id && choice->variant_id[0] &&
      !variant_fits(p, choice->variant_id, s->g->nodes[anchor].op_type, layout, dtypes))
    choice = NULL;
  if (choice) {
    k->desc.variant_id = choice->variant_id;
    k->desc.knob_count = choice->knob_count;
    k->desc.knobs = choice->knobs;
  }
  if ((!k->desc.variant_id || !k->desc.variant_id[0]) && variant) k->desc.variant_id = variant;
  if (count > 1 && count <= MI__UNIT_MAX && member_choices(p, nodes, count, k->member, k->member_ptrs))
    k->desc.member_choices = k->member_ptrs;
  /* A session prepared anew for other shapes takes over the kernels whose description did not
   * change (a decoder's weights are packed once, not at every cache length). */
  if (s->donor || s->reusable) {
    /* Built in the prepare's buffer; the step keeps a copy (a kernel taken over: the donor
     * step's, the same bytes). */
    if (mi__kernel_signature(&k->desc, &p->sig, &sig_hash)) {
      *fatal = 1;
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    }
    sig_len = p->sig.n;
    if (s->donor) kernel = mi__reuse_kernel(s->donor, p->sig.p, sig_len, sig_hash, &sig);
    if (!sig && !(sig = mi__dup_bytes(p->sig.p, sig_len))) {
      if (kernel) pl->api.kernel_release(pl->ctx, kernel);
      *fatal = 1;
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  if (kernel) {
    reused = 1;
    rc = MI_OK;
  } else if (!sig || !s->donor || !(rc = mi__reuse_refusal(s->donor, sig, sig_len, sig_hash, perr))) {
    /* (a description the device refused for the donor is refused again without asking: a
     * decoder's quantized embedding Gather cost 4 ms of packing before the refusal) */
    rc = pl->api.kernel_prepare(pl->ctx, s->device, &k->desc, &kernel, perr);
  }
  if (rc == MI_OK && !kernel) rc = mi_errorf(perr, MI_ERR_INTERNAL, "no kernel returned");
  if (rc != MI_OK) {
    if (kernel) pl->api.kernel_release(pl->ctx, kernel);
    if (sig && mi__note_refusal(s, sig, sig_len, sig_hash, rc, perr)) {
      *fatal = 1;
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return rc;
  }
  memset(st, 0, sizeof *st);
  st->node = anchor;
  st->kind = MI__STEP_DEVICE;
  st->kernel = kernel;
  st->sig = sig;
  st->sig_len = sig_len;
  st->sig_hash = sig_hash;
  s->kernels_reused += reused;
  st->node_count = count;
  st->input_count = k->input_count;
  st->output_count = k->output_count;
  s->step_count++; /* from here destroy releases what the step holds */
  s->kernel_count++;
  if (step_indices(st, k, nodes, count) ||
      (k->desc.variant_id && k->desc.variant_id[0] && !(st->variant = strdup(k->desc.variant_id)))) {
    *fatal = 1;
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  return MI_OK;
}

/* The storage layout a node's activations use, when it is not plain NCHW. */
int32_t mi__prep_node_layout(const mi_session_t *s, int32_t i) {
  const mi_node_t *n = &s->g->nodes[i];
  for (int32_t j = 0; j < n->input_count + n->output_count; j++) {
    int32_t t = j < n->input_count ? n->inputs[j] : n->outputs[j - n->input_count];
    if (t >= 0 && s->dlayout[t] != MI_LAYOUT_NCHW) return s->dlayout[t];
  }
  return MI_LAYOUT_NCHW;
}

static int is_layout_convert(const mi_session_t *s, int32_t i) {
  const mi_node_t *n = &s->g->nodes[i];
  return strcmp(n->op_type, "Identity") == 0 && n->input_count == 1 && n->output_count == 1 &&
         n->inputs[0] >= 0 && n->outputs[0] >= 0 && !s->consts[n->inputs[0]] &&
         s->dlayout[n->inputs[0]] != s->dlayout[n->outputs[0]];
}

int32_t mi__prep_finish(mi__prep_t *p, int32_t i, int32_t rc, int fatal, const mi_error_t *perr,
                        mi_error_t *err) {
  char lb[32];
  const mi_node_t *n = &p->s->g->nodes[i];
  if (rc == MI_OK || fatal) return rc;
  if (rc == MI_ERR_UNSUPPORTED)
    return host_step(p, i, perr->message[0] ? perr->message : "refused by the device", err);
  return mi_errorf(err, rc, "node '%s' (%s): %s", mi__node_label(p->s->g, i, lb, sizeof lb),
                   n->op_type, perr->message[0] ? perr->message : mi_status_message(rc));
}

/* One node on its own: a layout conversion, or an op in whatever storage its tensors use. */
int32_t mi__prep_single(mi__prep_t *p, int32_t i, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_node_t *n = &s->g->nodes[i];
  mi_error_t perr = {0};
  mi__kdesc_t k;
  mi__kreq_t req;
  const char *variant = NULL;
  int32_t lay = mi__prep_node_layout(s, i), rc;
  int fatal = 0;
  /* Subgraphs live only in the host's IR (a kernel descriptor cannot carry them). */
  if (n->subgraph_count) return host_step(p, i, "a node with subgraphs runs on the host", err);
  if (p->fp16_host && p->fp16_host[i])
    return host_step(p, i, "FLOAT32 values beyond FP16's range (65504) on a device that computes in FP16", err);
  if (mi__retake_step(&p->retake, s, i, &i, 1)) return MI_OK;
  if (is_layout_convert(s, i)) {
    int32_t in = n->inputs[0], out = n->outputs[0];
    rc = mi__kdesc_layout(&k, s->g, i, s->dlayout[in], s->dlayout[out],
                          s->dblock[in] ? s->dblock[in] : s->dblock[out], &perr);
    if (rc == MI_OK) rc = mi__prep_try_kernel(p, &k, i, &i, 1, NULL, MI_LAYOUT_NCHW, 0, &perr, &fatal, err);
    mi__kdesc_free(&k);
    /* Refused: the host converts on the way (its copies are logical, so Identity copies). */
    if (rc == MI_ERR_UNSUPPORTED || rc == MI_ERR_INVALID_CONFIG) return host_step(p, i, perr.message, err);
    return mi__prep_finish(p, i, rc, fatal, &perr, err);
  }
  memset(&req, 0, sizeof req);
  req.nodes = &i;
  req.node_count = 1;
  if (p->bf16_src && p->bf16_src[i] >= 0) {
    int refused;
    if ((rc = mi__prep_bf16(p, &req, i, &refused, err)) || !refused) return rc;
  }
  if (lay != MI_LAYOUT_NCHW) {
    if (mi__layout_transparent(s->g, i, s->consts)) {
      req.plain_layout = 1;
      lay = MI_LAYOUT_NCHW; /* the kernel sees a plain run of values */
    } else {
      variant = mi__variant_for_layout(p->vars, p->var_count, n->op_type, lay);
      if (!variant) {
        char why[96];
        snprintf(why, sizeof why, "no variant of the device takes %s tensors",
                 lay == MI_LAYOUT_NHWC ? "NHWC" : "NCHWc");
        return host_step(p, i, why, err);
      }
    }
  }
  if ((rc = mi__kdesc_build_req(&k, s->g, &req, s->consts, err))) return rc;
  rc = mi__prep_try_kernel(p, &k, i, &i, 1, variant, lay, 0, &perr, &fatal, err);
  mi__kdesc_free(&k);
  return mi__prep_finish(p, i, rc, fatal, &perr, err);
}

static int32_t fold_outputs(mi__prep_t *p, int32_t i, mi_array_t **outs) {
  mi_session_t *s = p->s;
  const mi_node_t *n = &s->g->nodes[i];
  for (int32_t j = 0; j < n->output_count; j++) {
    int32_t t = n->outputs[j];
    if (t < 0) {
      mi_array_destroy(outs[j]);
      continue;
    }
    s->consts[t] = outs[j];
    s->const_owned[t] = 1;
  }
  memset(&s->steps[s->step_count], 0, sizeof s->steps[0]);
  s->steps[s->step_count].node = i;
  s->steps[s->step_count].node_count = 1;
  s->steps[s->step_count].kind = MI__STEP_FOLDED;
  s->step_count++;
  p->folded[i] = 1;
  return 1;
}

/* Evaluates a foldable node once (dq: a DequantizeLinear of constants). Returns 1 when folded,
 * 0 when not foldable, -status on error. */
int32_t mi__prep_fold(mi__prep_t *p, int32_t i, int dq, mi_error_t *err) {
  const mi_graph_t *g = p->s->g;
  const mi_node_t *n = &g->nodes[i];
  mi_array_t *outs[16] = {0};
  char lb[32];
  int32_t rc;
  if (n->output_count > 16) return 0;
  /* The value the donor folded, when the inputs are the same; a (De)QuantizeLinear only where
   * its fold was asked for (mi__fold_node leaves them to the device or folds them last). */
  if (p->s->donor && (dq || (!(n->domain && n->domain[0]) && !strstr(n->op_type, "uantizeLinear"))) &&
      mi__reuse_folded(p->s, i, outs)) {
    p->s->consts_reused++;
    return fold_outputs(p, i, outs);
  }
  rc = dq ? mi__fold_dq(g, i, p->s->consts, outs, err) : mi__fold_node(g, i, p->s->consts, outs, err);
  if (rc < 0) {
    mi_error_t inner = err ? *err : (mi_error_t){0};
    return -mi_errorf(err, -rc, "node '%s' (%s): %s", mi__node_label(g, i, lb, sizeof lb),
                      n->op_type, inner.message);
  }
  return rc == 0 ? 0 : fold_outputs(p, i, outs);
}

static int32_t prepare_all(mi__prep_t *p, mi_error_t *err) {
  mi_session_t *s = p->s;
  const mi_graph_t *g = s->g;
  int32_t rc;
  for (int32_t i = 0; i < g->node_count; i++) {
    mi__unit_t *u;
    if (p->folded[i] || p->plan.role[i] == MI__ROLE_DQ_SKIP || p->plan.role[i] == MI__ROLE_UNREAD ||
        p->plan.role[i] == MI__ROLE_BF16_SKIP)
      continue;
    if (p->plan.role[i] == MI__ROLE_MEMBER) {
      u = &p->plan.units[p->plan.unit[i]];
      if (u->dead) rc = mi__prep_single(p, i, err);
      else if (i != u->at)
        continue;
      else
        rc = u->kind == 2 ? mi__prep_block(p, u, err) : u->kind ? mi__prep_lowered(p, u, err)
                                                                : mi__prep_group(p, u, err);
    } else if (mi__prep_dq_of_constants(s, i)) {
      /* A quantized weight no kernel reads as codes: its float value, once. */
      rc = mi__prep_fold(p, i, 1, err);
      if (rc == 1) continue;
      rc = rc < 0 ? -rc : mi__prep_single(p, i, err);
    } else {
      rc = mi__prep_single(p, i, err);
    }
    if (rc) return rc;
  }
  return MI_OK;
}

int32_t mi__session_prepare(mi_session_t *s, const mi_session_options_t *opts, mi_error_t *err) {
  const mi_graph_t *g = s->g;
  mi__prep_t p;
  uint8_t *pinned = NULL;
  int32_t rc = MI_OK;
  memset(&p, 0, sizeof p);
  p.s = s;
  p.opts = opts;
  if (!(p.folded = calloc((size_t)g->node_count + 1, 1)))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t t = 0; t < g->tensor_count; t++) {
    const mi_tensor_t *x = &g->tensors[t];
    int stored = x->rank == 4 && !x->data &&
                 (x->layout == MI_LAYOUT_NHWC || (x->layout == MI_LAYOUT_NCHWC && x->block > 0));
    s->dlayout[t] = (int8_t)(stored ? x->layout : MI_LAYOUT_NCHW);
    s->dblock[t] = stored && x->layout == MI_LAYOUT_NCHWC ? x->block : 0;
  }
  /* Variants say which layouts and dtypes each op accepts; a plugin without them gets none. */
  if (mi_plugin_variants(s->plugin, s->device, &p.vars, &p.var_count, NULL) != MI_OK) {
    p.vars = NULL;
    p.var_count = 0;
  }
  mi__retake_snapshot(&p.retake, s);
  for (int32_t i = 0; i < g->node_count; i++)
    if ((rc = mi__prep_fold(&p, i, 0, err)) < 0) {
      rc = -rc;
      goto done;
    }
  rc = MI_OK;
  mi__retake_begin(&p.retake, s);
  if (mi__fp16_only(s->plugin, s->device) &&
      (p.fp16_host = calloc((size_t)g->node_count + 1, 1)))
    mi__fp16_range_mark(g, s->consts, p.fp16_host);
  /* Nodes with a variant or knobs of their own: a fused unit whose plugin does not promise
   * MI_FUSE_MEMBER_CHOICES would run them with its anchor's (plan.c keeps them out). */
  if ((pinned = calloc((size_t)g->node_count + 1, 1)))
    for (int32_t i = 0; i < g->node_count; i++) {
      const mi_node_choice_t *c = find_choice(opts, g->nodes[i].name);
      pinned[i] = c && ((c->variant_id && c->variant_id[0]) || c->knob_count > 0);
    }
  if ((rc = mi__plan_build(&p.plan, g, s->consts, p.vars, p.var_count,
                           !OPT(opts, no_auto_fuse, 0), pinned, err)))
    goto done;
  if ((rc = mi__bf16_plan(&p, err))) goto done;
  mi__retake_plan(&p.retake, s, &p.plan);
  /* (without memory for it, a group's outputs are checked by scans, as before) */
  if (mi__readers_index(g, &p.rd_off, &p.rd_node)) p.rd_off = p.rd_node = NULL;
  if ((rc = prepare_all(&p, err)) || (rc = mi__fallback_plan(s, err))) goto done;
  rc = mi__memplan(s, !OPT(opts, no_memory_plan, 0), err);
done:
  mi__plan_free(&p.plan);
  mi__retake_free(&p.retake);
  free(p.rd_off);
  free(p.rd_node);
  free(p.sig.p);
  free(pinned);
  free(p.vars);
  free(p.folded);
  free(p.fp16_host);
  free(p.bf16_src);
  return rc;
}
