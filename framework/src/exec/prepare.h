/* prepare.h - what prepare.c (folding, single nodes, the walk over the plan) and prepare_unit.c
 * (fused groups, lowered quantized layers and QDQ blocks as one kernel each) share. */
#ifndef MI_EXEC_PREPARE_H
#define MI_EXEC_PREPARE_H

#include "exec/exec.h"

/* One session's preparation in progress. */
typedef struct mi__prep {
  mi_session_t *s;
  const mi_session_options_t *opts;
  mi_variant_desc_t *vars;
  uint32_t var_count;
  mi__plan_t plan;
  uint8_t *folded;
  uint8_t *fp16_host;        /* nodes an FP16 device leaves to the host (fp16_range.c), or NULL */
  int32_t *rd_off, *rd_node; /* each tensor's readers (mi__readers_index), or NULL */
  mi__sigbuf_t sig;          /* the signature being looked up (one buffer for all of them) */
  mi__retake_t retake;       /* the donor's steps that move over undescribed (retake.c) */
  int32_t *bf16_src;         /* per node: the source of a BF16 layer's rounded input, else -1; or NULL */
} mi__prep_t;

/* prepare.c */
/* Appends a copy of `line` to a session's list of notes (fallback, unfused). */
int32_t mi__prep_push_line(char ***list, int32_t *count, const char *line, mi_error_t *err);
/* Prepares kernel description k for the nodes (anchor gives the choice); MI_OK when a step was
 * added; else the plugin's refusal in perr, *fatal when the error is not the plugin's to refuse. */
int32_t mi__prep_try_kernel(mi__prep_t *p, mi__kdesc_t *k, int32_t anchor, const int32_t *nodes, int32_t count,
                            const char *variant, int32_t layout, uint32_t dtypes, mi_error_t *perr,
                            int *fatal, mi_error_t *err);
/* The layout node i's tensors are stored in (MI_LAYOUT_*). */
int32_t mi__prep_node_layout(const mi_session_t *s, int32_t i);
/* Node i's outcome: a refusal becomes a host step, another error names the node. */
int32_t mi__prep_finish(mi__prep_t *p, int32_t i, int32_t rc, int fatal, const mi_error_t *perr,
                        mi_error_t *err);
/* One node on its own, on the device or the host. */
int32_t mi__prep_single(mi__prep_t *p, int32_t i, mi_error_t *err);
/* Folds node i once (dq: a DequantizeLinear of constants): 1 folded, 0 not, -status on error. */
int32_t mi__prep_fold(mi__prep_t *p, int32_t i, int dq, mi_error_t *err);

/* prepare_unit.c: each returns MI_OK or the error; a refused unit's nodes are prepared apart. */
int32_t mi__prep_lowered(mi__prep_t *p, mi__unit_t *u, mi_error_t *err);
int32_t mi__prep_block(mi__prep_t *p, mi__unit_t *u, mi_error_t *err);
int32_t mi__prep_group(mi__prep_t *p, mi__unit_t *u, mi_error_t *err);
/* bf16_in.c: marks the BF16 layers the device's BF16 variants run (their input Casts skipped). */
int32_t mi__bf16_plan(mi__prep_t *p, mi_error_t *err);
/* For BF16 layer `anchor` (p->bf16_src[anchor] >= 0): the kernel of req's nodes reading the
 * source in place of the rounded input, on the device's BF16 variant. MI_OK with *refused = 0:
 * prepared. Refused: the Casts are prepared as ordinary nodes, the layer is no longer a BF16
 * one, *refused = 1, and the caller prepares it as it would any other. */
int32_t mi__prep_bf16(mi__prep_t *p, mi__kreq_t *req, int32_t anchor, int *refused, mi_error_t *err);
/* 1 when node i is a DequantizeLinear whose inputs are all constants. */
int mi__prep_dq_of_constants(const mi_session_t *s, int32_t i);

#endif
