/* exec.h - internal types of the executor: sessions, their steps, kernel descriptions. */
#ifndef MI_EXEC_EXEC_H
#define MI_EXEC_EXEC_H

#include "metainfer/mi_core.h"

/* How one node runs in a session. */
typedef enum mi__step_kind {
  MI__STEP_DEVICE = 0, /* a kernel prepared on the plugin */
  MI__STEP_HOST = 1,   /* the device refused it: the reference interpreter runs it */
  MI__STEP_FOLDED = 2  /* evaluated once at create time; its outputs are constants */
} mi__step_kind;

typedef struct mi__step {
  int32_t node;        /* the graph node it runs; for a multi-node kernel, its anchor */
  int32_t kind;        /* mi__step_kind */
  mi_kernel_t *kernel; /* MI__STEP_DEVICE only */
  int32_t node_count;  /* graph nodes the kernel runs (1, or a fused group / lowered layer) */
  int32_t *nodes;      /* NULL when node_count == 1 (then it is `node`) */
  int32_t input_count; /* runtime inputs in kernel_run order (graph tensor indices) */
  int32_t *inputs;
  int32_t output_count; /* outputs in kernel_run order (graph tensor indices) */
  int32_t *outputs;
  int32_t alias; /* MI__ALIAS_RESHAPE: a reshape-like node whose output shares its input's
                  * device buffer; MI__ALIAS_CONCAT: a Concat whose runtime inputs were written
                  * into its output's buffer by their producers (memplan.c) */
  /* MI__STEP_HOST that runs on the fallback device (fallback.c), or NULL */
  struct mi__fb_step *fb;
  /* MI__STEP_HOST in a run of refused nodes that runs as one sub-graph on the fallback device
   * (fallback_group.c): the run's first step holds `group` and runs it; `grouped` is set on
   * every step of the run, the others run nothing. `on_fb`: the fallback device runs the node
   * (alone, or within its group). */
  struct mi__fb_group *group;
  int8_t grouped;
  int8_t on_fb;
  /* MI__STEP_DEVICE: its kernel description in bytes (reuse.c), for a successor session
   * prepared for other shapes to find and take over the kernel; NULL when not made. */
  uint8_t *sig;
  size_t sig_len;
  uint64_t sig_hash;
  /* MI__STEP_DEVICE: the graph tensors its description held (in the `inputs` allocation), so
   * a successor finds the step unchanged without describing it again (retake.c). */
  int32_t desc_count;
  int32_t *desc_tensors;
  /* MI_STEP_DEVICE: the variant its kernel was prepared with when one was named (a node
   * choice, or the executor's: a layout's, an INT8 layer's, a BF16 layer's), owned; NULL: the
   * plugin's default. The per-layer profile shows it. */
  char *variant;
} mi__step_t;

struct mi_session {
  const mi_graph_t *g; /* the graph the session runs: the caller's, or `own` */
  mi_graph_t *own;     /* private clone with shapes inferred, when the caller's lacked them */
  mi_plugin_t *plugin; /* NULL: the whole graph runs on mi_ref_run */
  uint32_t device;
  int32_t step_count;
  mi__step_t *steps;
  /* Per tensor: its constant value (a view of an initializer or an owned folded array). */
  mi_array_t **consts;
  uint8_t *const_owned;
  mi_buffer_t **bufs;  /* per tensor: device buffer, NULL when no device kernel touches it */
  uint64_t *buf_bytes; /* per tensor: its stored bytes (its allocation may be larger) */
  /* The device allocations bufs[] point into (memplan.c): tensors whose lifetimes do not
   * overlap share one. Bytes allocated, bytes one buffer per tensor would take, and the most
   * bytes live at one step. */
  mi_buffer_t **allocs;
  int32_t alloc_count;
  /* Views of allocations (bufs[] of eliminated Concats' inputs), freed before them. */
  mi_buffer_t **views;
  int32_t view_count;
  /* Host memory as device buffers (direct.c; NULL direct: the device has no buffer_wrap). Per
   * tensor: 1 a graph input wrapped where it lies, 2 a graph output made in the array handed
   * back. The outputs' alias groups, each root first, with their byte offsets; per run, per
   * tensor: the output arrays made, the buffers the wraps replaced; the wraps and views made. */
  uint8_t *direct;
  int32_t *dmember;
  uint64_t *dmember_off;
  int32_t dmember_count;
  uint32_t dalign;
  mi_array_t **darr;
  mi_buffer_t **dsaved;
  mi_buffer_t **dbufs;
  int32_t dbuf_count;
  uint64_t xfer_in, xfer_out; /* bytes the last run wrote to the device and read back */
  uint64_t mem_planned, mem_unplanned, mem_live_peak;
  /* Per tensor: how its device buffer is stored (mi_layout, block). Host copies are always
   * logical (ONNX order, what the reference interpreter reads); the transfers convert. */
  int8_t *dlayout;
  int32_t *dblock;
  int32_t kernel_count; /* MI__STEP_DEVICE steps */
  int32_t unfused_count;
  char **unfused; /* multi-node kernels the device refused, one line each */
  /* Per-run state, reset by every run (a session runs one inference at a time). */
  const mi_array_t **hval; /* valid host copy of a tensor, or NULL */
  mi_array_t **hown;       /* the host copies this run allocated */
  uint8_t *on_device;      /* the device buffer holds the current value */
  int64_t *rows;           /* per tensor: rows the device reported it wrote this run (-1: as prepared) */
  int32_t fallback_count;
  char **fallback;      /* node names */
  uint8_t *fallback_on; /* per fallback node: 1 when it runs on the fallback device */
  /* The fallback device (mi_session_options_t.fallback_plugin), NULL for none, and its
   * buffers per graph tensor for the host steps it runs (fallback.c). */
  mi_plugin_t *fb_plugin;
  uint32_t fb_device;
  mi_buffer_t **fb_bufs;
  int has_device_time;
  uint64_t device_time_ns;
  /* Device steps are enqueued (kernel_enqueue) and waited for with device_sync where the host
   * needs device data (session_run.c): the plugin has the pair and per-node times were not
   * asked for. `pending`: kernels enqueued since the last sync. */
  int async;
  int per_node_timing;
  int32_t pending;
  /* Per node, timing of the last run (mi_session_node_time); allocated on the first run.
   * node_timed: 0 did not run, 1 wall time only, 2 wall and device time. */
  uint64_t *node_wall_ns;
  uint64_t *node_dev_ns;
  uint8_t *node_timed;
  /* Shapes inference left dynamic were fixed at create time by a probe run (probe.c): a run
   * whose host-computed shapes differ is refused rather than fed to kernels prepared for others. */
  int shapes_probed;
  /* This run has inputs of other shapes than the session's, read only by If nodes the host
   * runs (session_run.c): their outputs are checked as a probed session's are. */
  int free_shapes;
  /* If nodes whose branch runs in a nested session on the device (nested.c). */
  struct mi__nested *nested;
  int32_t nested_count;
  /* While this session is prepared: the session it replaces (the same graph prepared for
   * other shapes), whose unchanged kernels and folded constants it takes over (reuse.c). */
  struct mi_session *donor;
  int reusable; /* steps keep their signatures (a nested branch: it may be a donor) */
  /* The device knobs the session was created with (names owned), and their identity
   * (mi_plugin_t.device_knobs_held): 0 the device's defaults (no knobs given),
   * MI__KNOBS_INHERIT for a session run inside another's run (an If branch, a group of refused
   * nodes), which runs at whatever that run set. */
  mi_knob_value_t *knobs;
  int32_t knob_count;
  uint64_t knobs_id;
  int32_t kernels_reused; /* device kernels taken over from the donor */
  /* Kernel descriptions the device refused (reusable sessions): their signatures, status and
   * message, so a successor does not ask again (reuse.c). */
  struct mi__refusal *refusals;
  int32_t refusal_count;
  int32_t consts_reused;   /* folded nodes whose values were taken over */
  int32_t kernels_retaken; /* of kernels_reused: steps taken whole, not described (retake.c) */
  uint64_t plan_hash;      /* its plan's units and roles as planned (retake.c) */
  /* As a donor: its steps by signature hash (open addressing, -1 empty), built on the first
   * look-up; a successor asks for each of its kernels (reuse.c). */
  int32_t *sig_slot;
  uint32_t sig_mask;
  /* The views of the graph's initializers that consts[] points at (not const_owned), one array:
   * a branch prepared per token has hundreds. */
  mi_array_t *views_block;
};

#define MI__UNIT_MAX 32 /* a depthwise conv's chain, a pointwise conv and its chain */

/* Storage behind one mi_kernel_desc_t; everything it points to lives here. */
typedef struct mi__kdesc {
  mi_kernel_desc_t desc;
  int32_t node_count;
  mi_node_desc_t *node;
  const mi_node_desc_t **node_ptrs;
  int32_t tensor_count;
  int32_t *tmap; /* local tensor index -> graph tensor index */
  mi_tensor_desc_t *tensors;
  const mi_tensor_desc_t **tensor_ptrs;
  int32_t *slots; /* every node's input and output lists, back to back */
  int32_t input_count, output_count;
  int32_t *inputs, *outputs;             /* local indices (what the desc holds) */
  int32_t *graph_inputs, *graph_outputs; /* the same, as graph tensor indices */
  mi_attr_t attr;                        /* the perm of a synthesized Transpose */
  int64_t perm[MI_MAX_RANK];
  /* desc.member_choices when a group's members have choices of their own (prepare.c) */
  mi_member_choice_t member[MI__UNIT_MAX];
  const mi_member_choice_t *member_ptrs[MI__UNIT_MAX];
} mi__kdesc_t;

/* What one kernel runs: graph nodes in execution order, with optional tensor substitutions
 * (a quantized layer reads its codes tensor instead of the DequantizeLinear's output). */
typedef struct mi__kreq {
  const int32_t *nodes;
  int32_t node_count;
  const int32_t *subst_from, *subst_to; /* graph tensor subst_from[i] reads as subst_to[i] */
  int32_t subst_count;
  int plain_layout; /* describe 4-D activations as NCHW whatever their storage (elementwise) */
  /* Nodes the kernel stands in for without describing them (a QDQ block's Q and DQ nodes
   * between its layers): their reads do not make a tensor leave the kernel. */
  const int32_t *absorbed;
  int32_t absorbed_count;
  /* The plan's node roles, or NULL: a node of role MI__ROLE_UNREAD never runs, so its reads do
   * not make a tensor leave the kernel either (the pieces of a spelled-out Gelu or LayerNorm the
   * session rewrote into one node still name the pattern's input). */
  const int8_t *role;
  /* Every node reading tensor t is rd_node[rd_off[t] .. rd_off[t + 1]) (mi__readers_index),
   * or rd_off is NULL: a fused group's outputs are then checked by a scan of the graph. */
  const int32_t *rd_off, *rd_node;
} mi__kreq_t;

/* Describes the nodes of `req` for kernel_prepare. `consts[t]` is tensor t's constant value
 * or NULL for a runtime tensor. Inputs are the runtime tensors the nodes read that none of
 * them produces; outputs are what they produce that is read elsewhere, is a graph output, or
 * is not read by a later node of the kernel. The choice (variant, knobs) is left to the caller. */
int32_t mi__kdesc_build_req(mi__kdesc_t *k, const mi_graph_t *g, const mi__kreq_t *req,
                            mi_array_t *const *consts, mi_error_t *err);
/* The same for node `node` alone (used by the space module's probes too). */
int32_t mi__kdesc_build(mi__kdesc_t *k, const mi_graph_t *g, int32_t node,
                        mi_array_t *const *consts, mi_error_t *err);
/* Describes a layout conversion (an Identity from tensor `in` to `out`, stored differently) as
 * a plain Transpose between dense buffers. MI_ERR_UNSUPPORTED when no Transpose expresses it. */
int32_t mi__kdesc_layout(mi__kdesc_t *k, const mi_graph_t *g, int32_t node, int32_t in_layout,
                         int32_t out_layout, int32_t block, mi_error_t *err);
void mi__kdesc_free(mi__kdesc_t *k);
/* The readers of every tensor of g (for mi__kreq_t's rd_off and rd_node; the caller frees
 * both); MI_ERR_OUT_OF_MEMORY leaves both NULL. */
int32_t mi__readers_index(const mi_graph_t *g, int32_t **off, int32_t **node);

/* Storage of logical (ONNX order) data in another layout (layout.c). NCHWc pads the channels
 * up to a multiple of the block with zeros. */
uint64_t mi__stored_bytes(const mi_tensor_t *t, int32_t layout, int32_t block, int *ok);
void mi__layout_pack(const mi_array_t *a, int32_t layout, int32_t block, void *dst);
void mi__layout_unpack(const void *src, int32_t layout, int32_t block, mi_array_t *a);

/* Planning (plan.c): which nodes form one kernel. */
typedef struct mi__plan {
  int32_t node_count;
  int8_t *role;  /* mi__role per node */
  int32_t *unit; /* per node: the unit it belongs to, -1 for none */
  int32_t unit_count;
  struct mi__unit *units;
  /* per node, or NULL: a choice of its own (joined as a second conv only with
   * MI_FUSE_MEMBER_CHOICES) */
  const uint8_t *pinned;
  /* While mi__plan_build runs (the graph does not change then), per tensor: the node that alone
   * reads it (sole) and the one that alone reads it among the nodes that run (live); -1 for
   * none, several or a graph output. The matchers ask for readers node by node, and a scan of
   * the graph per question made planning quadratic in its size. NULL outside: they scan. */
  int32_t *sole, *live;
} mi__plan_t;

enum mi__role {
  MI__ROLE_NODE = 0,     /* prepared on its own */
  MI__ROLE_MEMBER = 1,   /* inside a unit; the unit's step runs at the unit's position */
  MI__ROLE_DQ_SKIP = 2,  /* a DequantizeLinear every reader of which is a lowered layer */
  MI__ROLE_UNREAD = 3,   /* no node reads its outputs and none is a graph output: not run */
  MI__ROLE_BF16_SKIP = 4 /* a BF16 layer's input Cast its BF16 kernel stands in for (bf16_in.c) */
};

typedef struct mi__unit {
  int32_t kind; /* 0: fused group, 1: quantized layer lowered with its Q/DQ, 2: a QDQ block */
  int32_t count;
  int32_t nodes[MI__UNIT_MAX]; /* graph nodes in execution order */
  int32_t at;                  /* the node position where its step goes */
  int32_t op;                  /* lowered: the Conv/Gemm/MatMul; group: the anchor */
  int32_t dqx, dqw, act, q;    /* lowered: the DequantizeLinear of input / weight, activation, Q */
  int32_t dead;                /* refused: its nodes run one by one */
  int32_t sub[3], sub_count;   /* QDQ block: its lowered layers (kind 1 units), in order */
  int32_t dq_state;            /* chain: 1 prepared without writing its DQ's float value, 2 the DQ runs apart */
} mi__unit_t;

/* Plans fused groups (mi_node_t.group; with auto_fuse, when the graph has none, the conv
 * chains the device's conv variants declare fuse bits for) and quantized layers the device can
 * run in INT8. */
int32_t mi__plan_build(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                       const mi_variant_desc_t *vars, uint32_t var_count, int auto_fuse,
                       const uint8_t *pinned, mi_error_t *err);
void mi__plan_free(mi__plan_t *p);
/* mi__graph_sole_reader of the plan's graph, through its index while it is being built. */
int32_t mi__plan_sole_reader(const mi_graph_t *g, const mi__plan_t *p, int32_t t);
/* Builds the reader index (sole, live) of graph g with the roles p holds now (no memory: none,
 * and the look-ups scan); mi__plan_build does, once the unread nodes are marked. */
void mi__plan_index_readers(mi__plan_t *p, const mi_graph_t *g);
void mi__plan_unindex_readers(mi__plan_t *p);
/* bf16_in.c. The device's variant of `op` that computes in BF16 (BFLOAT16 and not FLOAT32 in
 * its dtype_mask), or NULL. */
const char *mi__bf16_variant(const mi_variant_desc_t *vars, uint32_t n, const char *op);
/* Node i is a layer the BF16 transform rounded (x -> Cast(to=BFLOAT16) -> Cast(to=FLOAT) -> a
 * Conv, MatMul or Gemm; each Cast on its own in plan p, read by the next alone) that a BF16
 * variant of the device can run reading x: x (a FLOAT32 runtime value; every tensor of the layer
 * stored NCHW), else -1. */
int32_t mi__bf16_source(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts,
                        const mi_variant_desc_t *vars, uint32_t var_count, int32_t i);
/* The two nodes in front of node i's input 0 (c2 producing it, c1 producing c2's input 0; -1
 * where there is none): the BF16 transform's Casts where mi__bf16_source found them. */
void mi__bf16_casts(const mi_graph_t *g, int32_t i, int32_t *c1, int32_t *c2);
/* The variant of `op` that accepts `layout` (first in the plugin's order), or NULL. */
const char *mi__variant_for_layout(const mi_variant_desc_t *vars, uint32_t n, const char *op,
                                   int32_t layout);
/* True when the op is elementwise over same-shaped 4-D operands, so the storage order of its
 * activations does not change what it computes. */
int mi__layout_transparent(const mi_graph_t *g, int32_t node, mi_array_t *const *consts);

/* Evaluates a node whose value is known at create time (all inputs constant, or a shape
 * query on a tensor of known shape). Returns 1 and fills outputs (node->output_count new
 * arrays) when it did, 0 when the node is not foldable, or a negative status on error. */
int32_t mi__fold_node(const mi_graph_t *g, int32_t node, mi_array_t *const *consts,
                      mi_array_t **outputs, mi_error_t *err);
/* The same for a DequantizeLinear of constants (a quantized weight no device kernel reads as
 * codes): its float value. */
int32_t mi__fold_dq(const mi_graph_t *g, int32_t node, mi_array_t *const *consts,
                    mi_array_t **outputs, mi_error_t *err);

/* QDQ models from files (qdq_params.c): 1 when a QuantizeLinear / DequantizeLinear's codes
 * tensor carries no quantization fields. */
int mi__qdq_params_missing(const mi_graph_t *g);
/* Sets the codes tensors' fields (scale, zero_point; per-axis channel_scales of constant INT8
 * weights with zero points 0) from the Q/DQ nodes' constant parameters, as the transform writes
 * them; a tensor two nodes quantize differently gets none. Tensors already described keep
 * theirs. */
int32_t mi__qdq_params_set(mi_graph_t *g, mi_error_t *err);

/* Quantized elementwise chains (qdq_chain.c): DequantizeLinear node `dq` of runtime codes,
 * elementwise float ops reading only its values and constants, and the one QuantizeLinear they
 * end in, as a group unit (kind 0, anchor dq, at the Q) in *u; 0 when dq starts no such chain or
 * a node of it is already in a unit (role). */
int mi__qdq_chain_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t dq,
                        mi__unit_t *u);
/* The nodes other than chain unit u's that read its DequantizeLinear's float value, when every
 * one of them is a live lowered layer reading the codes instead (its dqx or dqw): the chain's
 * kernel need not write that value. Their count (at most cap), 0 when the value is needed. */
int32_t mi__qdq_chain_code_readers(const mi__plan_t *p, const mi_graph_t *g, const mi__unit_t *u, int32_t *out,
                                   int32_t cap);
/* For a lowered layer at node position `at` that the device refused and that reads
 * DequantizeLinear dq: 1 when dq heads a live chain unit whose kernel does not (prepared
 * already, dq_state 1) or will not (prepared later) write dq's float value, so the caller
 * runs dq apart now (dq_state becomes 2, once for all such readers); else 0. */
int mi__qdq_chain_dq_apart(mi__plan_t *p, int32_t dq, int32_t at);

/* A float MatMul with the Transpose (on B) and the Muls by a constant scalar that alone feed its
 * runtime operands (mm_fold.c), for a device whose MatMul declares MI_FUSE_TRANSPOSE: 1 and *u
 * (anchored and placed at the MatMul) when at least one such node joins it. */
int mi__mm_fold_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                      mi__unit_t *u);
/* A float Softmax over the last axis with the Muls / Divs by a constant scalar and the Adds of a
 * mask that alone feed it (sm_fold.c), for a device whose Softmax declares MI_FUSE_ADD: 1 and *u
 * (members in node order, anchored and placed at the Softmax) when at least one such node joins. */
int mi__sm_fold_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                      mi__unit_t *u);

/* A float MatMul / Gemm whose B is the DequantizeLinear of constant 8-bit codes that only it
 * reads (qdq_weight.c), for a device whose MatMul / Gemm declares MI_FUSE_DQ: 1 and *u (the DQ,
 * then the op; anchored and placed at the op). */
int mi__qdq_weight_match(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n,
                         mi__unit_t *u);

/* QDQ blocks (qdq_block.c): a lowered depthwise Conv, the lowered pointwise Conv that alone
 * reads its codes, and the lowered residual Add that alone reads the pointwise codes, as one
 * kernel unit (kind 2) over the lowered units, for a device whose INT8 Conv variant declares
 * MI_FUSE_CONV. Called after the lowered layers and DQ skips are planned. */
int32_t mi__qdq_block_plan(mi__plan_t *p, const mi_graph_t *g, mi_array_t *const *consts,
                           const mi_variant_desc_t *vars, uint32_t var_count);

/* FP16 devices (fp16_range.c): 1 when the device computes in FLOAT16 and not in FLOAT32. */
int mi__fp16_only(const mi_plugin_t *p, uint32_t device);
/* Sets host[n] for the nodes such a device must leave to the host: a FLOAT32 constant input
 * beyond FP16's range, or an input such a node produced, up to an op that compresses the range
 * (Log, Sigmoid, Softmax, normalisations). */
void mi__fp16_range_mark(const mi_graph_t *g, mi_array_t *const *consts, uint8_t *host);

/* A view of a graph initializer as an array (no ownership: never mi_array_destroy it). */
mi_array_t *mi__const_view(const mi_tensor_t *t);
/* The same view written into *a (an array of views the caller allocated at once). */
void mi__const_view_in(const mi_tensor_t *t, mi_array_t *a);

/* Bytes of a tensor of concrete shape; 0 and *ok = 0 when its shape is not concrete. */
uint64_t mi__tensor_bytes(const mi_tensor_t *t, int *ok);

/* Node name for messages: the name, or "#INDEX" for an unnamed node. */
const char *mi__node_label(const mi_graph_t *g, int32_t node, char *buf, size_t cap);

/* Resolves every tensor shape of `g` that static inference left dynamic by running its nodes
 * once on the reference interpreter with zero inputs of the (concrete) graph input shapes, and
 * writing the shapes the values had into the tensors. Shapes that depend on input values are
 * thus those of the zero input (docs/architecture.md, exec). */
int32_t mi__graph_probe_shapes(mi_graph_t *g, mi_error_t *err);
/* Gives each NonMaxSuppression (and runtime-condition Compress) output that only the caller
 * reads the most rows the node can select, so a device that reports the rows it wrote (mi_run_stats_t.has_rows) has room for any
 * run's (value_rows.c); called after the probe fixed the shapes. */
void mi__value_rows_widen(mi_graph_t *g);

/* Folds, plans and prepares every step, then allocates device buffers (prepare.c). */
int32_t mi__session_prepare(mi_session_t *s, const mi_session_options_t *opts, mi_error_t *err);

/* Nested sessions (nested.c): runs If node `node` (its host input values in `ins`) by the
 * branch its condition picks, in a session of its own on the device. 1 when it did (outs
 * filled), 0 when the host must run the node, -status on error. */
typedef struct mi__nested mi__nested_t;
int32_t mi__nested_if(mi_session_t *s, int32_t node, const mi_array_t *const *ins,
                      mi_array_t **outs, mi_error_t *err);
void mi__nested_free(mi_session_t *s);
/* Marks every nested session as not run, at the start of a run of s. */
void mi__nested_run_begins(mi_session_t *s);

/* The device memory plan (memplan.c): lifetimes of the runtime tensors device steps touch over
 * the step order, then one allocation per group of tensors whose lifetimes do not overlap (with
 * plan == 0 one per tensor, as a baseline); sets each step's alias flag, bufs and buf_bytes
 * (an eliminated Concat's inputs get views of their slices of its buffer, in views[]). */
int32_t mi__memplan(mi_session_t *s, int plan, mi_error_t *err);
void mi__memplan_free(mi_session_t *s);
/* Host memory as buffers (direct.c): planned from the memory plan's alias roots and offsets;
 * per run, the outputs' arrays wrapped before the steps (begin), an input wrapped instead of
 * uploaded (1; 0: upload it), an output's array handed over (NULL: read it back), and the
 * session's own buffers back at the end. */
int32_t mi__direct_plan(mi_session_t *s, const int32_t *root, const uint64_t *off, mi_error_t *err);
int32_t mi__direct_begin(mi_session_t *s, mi_error_t *err);
int mi__direct_input(mi_session_t *s, int32_t t, const mi_array_t *a);
mi_array_t *mi__direct_take(mi_session_t *s, int32_t t);
void mi__direct_end(mi_session_t *s);
void mi__direct_free(mi_session_t *s);

/* Step alias kinds (mi__step_t.alias). */
enum { MI__ALIAS_NONE = 0,
       MI__ALIAS_RESHAPE = 1,
       MI__ALIAS_CONCAT = 2 };
#define MI__CONCAT_MAX_INPUTS 64
/* Concat elimination (concat_alias.c): 1 when single-node Concat step st's output stores its
 * node inputs one after another, with each one's byte offset in off[] (MI__CONCAT_MAX_INPUTS
 * entries); the run of an eliminated Concat, which writes its constant inputs' bytes. */
int mi__concat_stack(const mi_session_t *s, const mi__step_t *st, uint64_t *off);
int32_t mi__concat_alias_run(mi_session_t *s, const mi__step_t *st, mi_error_t *err);

/* The fallback device (fallback.c): prepares node `node`, which the primary refused, as a
 * kernel of the fallback device for host step st. 1 when it did (st->fb set), 0 when there is
 * no fallback device or it refused too, -status on a host error. */
int32_t mi__fallback_prepare(mi_session_t *s, mi__step_t *st, int32_t node, mi_error_t *err);
/* Runs host step st on the fallback device: its runtime inputs from the host copies `ins` (in
 * the node's input order), its outputs into new arrays outs[] (the node's output order). */
int32_t mi__fallback_run(mi_session_t *s, const mi__step_t *st, const mi_array_t *const *ins,
                         mi_array_t **outs, mi_error_t *err);
/* Releases what the fallback device holds for the session. */
void mi__fallback_free(mi_session_t *s);

/* Runs of refused nodes (fallback_group.c). */
typedef struct mi__fb_group mi__fb_group_t;
/* Nodes `nodes` (count >= 2, graph order, consecutive host steps) as one sub-graph in a session
 * of the fallback device. 1 when it runs at least one kernel there (*out set; on[i] = 1 for
 * each node it runs there rather than on the reference), 0 when not, -status on a host error. */
int32_t mi__fallback_group(mi_session_t *s, const int32_t *nodes, int32_t count, uint8_t *on,
                           mi__fb_group_t **out, mi_error_t *err);
/* Runs the group: its inputs' host copies (in the order mi__fallback_group_io gives) in, new
 * arrays of its outputs out. */
int32_t mi__fallback_group_run(const mi__fb_group_t *q, const mi_array_t *const *ins,
                               mi_array_t **outs, mi_error_t *err);
/* The session's graph tensors the group reads (*in, *in_count) and writes (*out, returned). */
int32_t mi__fallback_group_io(const mi__fb_group_t *q, const int32_t **in, int32_t *in_count,
                              const int32_t **out);
void mi__fallback_group_free(mi__fb_group_t *q);
/* After every step is prepared: groups the runs of host steps, then prepares each host step
 * left alone on the fallback device (mi__fallback_prepare), and records where each runs. */
int32_t mi__fallback_plan(mi_session_t *s, mi_error_t *err);

/* Reuse across re-preparation (reuse.c). The signature of a kernel description: every byte
 * kernel_prepare may depend on (constants over 4 KiB by their data's address), written to
 * buf->p[0 .. buf->n) (grown as needed and kept for the next: the caller frees buf->p). */
/* Constants up to this size are part of a kernel's signature by value; larger ones by the
 * address of their data, which names the same bytes only while both sessions keep them
 * (the donor lives until its successor is prepared, and moves its buffers to it). */
#define MI__SIG_INLINE_BYTES 4096
typedef struct mi__sigbuf {
  uint8_t *p;
  size_t n, cap;
  int oom;
} mi__sigbuf_t;
int32_t mi__kernel_signature(const mi_kernel_desc_t *d, mi__sigbuf_t *buf, uint64_t *hash);
/* A refusal of the donor's for that signature: its status, with its message in *perr; else 0. */
int32_t mi__reuse_refusal(const mi_session_t *donor, const uint8_t *sig, size_t len,
                          uint64_t hash, mi_error_t *perr);
/* Records that the device refused the description of signature `sig` (taking it) with status
 * rc and perr's message; MI_ERR_OUT_OF_MEMORY (sig freed) when it cannot. */
int32_t mi__note_refusal(mi_session_t *s, uint8_t *sig, size_t len, uint64_t hash, int32_t rc,
                         const mi_error_t *perr);
void mi__refusals_free(mi_session_t *s);
/* The donor's kernel of that signature, taken out of its step with the step's copy of the
 * signature (*kept, the caller's to free); NULL (and *kept NULL) when none. */
mi_kernel_t *mi__reuse_kernel(mi_session_t *donor, const uint8_t *sig, size_t len, uint64_t hash,
                              uint8_t **kept);
/* Frees a donor's signature index (session destroy). */
void mi__sig_index_free(mi_session_t *s);
/* For node `node` of s, whose inputs are all constants: 1 and outs[] filled (moved out of the
 * donor) when the donor folded the same node of the same constant values; else 0. */
int mi__reuse_folded(mi_session_t *s, int32_t node, mi_array_t **outs);
/* Initializer buffers of a graph about to be destroyed, by tensor name, for the graph that
 * replaces it (built from the same sources): take moves a buffer of t's name, bytes and dtype
 * out of the old graph, or returns NULL. */
typedef struct mi__data_pool mi__data_pool_t;
mi__data_pool_t *mi__data_pool(mi_graph_t *old);
void *mi__data_pool_take(mi__data_pool_t *p, const mi_tensor_t *t);
void mi__data_pool_free(mi__data_pool_t *p);
/* Before g (its shapes inferred) is folded: each node computed from initializers alone whose
 * outputs the old graph holds folded takes those values and is removed, as folding would. */
int32_t mi__data_pool_folds(mi__data_pool_t *p, mi_graph_t *g, mi_error_t *err);
/* Steps taken over whole (retake.c): where a session prepared again has the same graph
 * structure as its donor, a donor's device step whose described tensors (shapes, layouts,
 * constant values) did not change moves over as it is, without its description and signature
 * being built again; the others are described and looked up as before. */
typedef struct mi__retake {
  mi_array_t **dconst; /* the donor's constants before this session's folding moved some */
  uint8_t *clean;      /* per tensor: described the same as in the donor; NULL: not applicable */
  int32_t *at;         /* per node: the donor's device step anchored there, or -1 */
} mi__retake_t;
/* Before s folds (s->donor set): the donor's constants as they are. */
void mi__retake_snapshot(mi__retake_t *r, const mi_session_t *s);
/* After s folded: which tensors are unchanged, when the graphs have the same structure. */
void mi__retake_begin(mi__retake_t *r, const mi_session_t *s);
/* After s planned: its plan's hash kept; nothing is taken whole when it is not the donor's. */
void mi__retake_plan(mi__retake_t *r, mi_session_t *s, const mi__plan_t *p);
/* 1 when the donor's step for the kernel of `nodes` anchored at `anchor` was moved to s as
 * its next step; 0 when it must be described. The donor was prepared with the same options
 * (nested.c: the same for every preparation of a branch). */
int mi__retake_step(const mi__retake_t *r, mi_session_t *s, int32_t anchor, const int32_t *nodes,
                    int32_t count);
void mi__retake_free(mi__retake_t *r);
/* mi__session_create's flags. REUSABLE: the session keeps its kernels' signatures, to be a
 * donor itself. INNER: it runs only inside another session's run (an If branch, a group of
 * refused nodes), at the device knobs that run set. */
#define MI__SESSION_REUSABLE 1
#define MI__SESSION_INNER 2
/* mi_session_t.knobs_id of an INNER session: it never sets device knobs. */
#define MI__KNOBS_INHERIT UINT64_MAX
/* Sets s's device knobs on its plugin (its defaults for a session created without knobs)
 * unless the plugin holds them already; an INNER session sets none. Before each run. */
int32_t mi__session_knobs_set(mi_session_t *s, mi_error_t *err);
/* mi_session_create with a donor (NULL: none) and MI__SESSION_* flags, left to the caller to
 * destroy. */
int32_t mi__session_create(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                           const mi_session_options_t *opts, mi_session_t *donor, int flags,
                           mi_session_t **out, mi_error_t *err);

/* The run loop (session_run.c). */
int32_t mi__session_run_device(mi_session_t *s, const mi_array_t *const *inputs,
                               mi_array_t **outputs, mi_error_t *err);

#endif
