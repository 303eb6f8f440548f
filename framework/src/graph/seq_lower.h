/* seq_lower.h - what the loader's lowering of ONNX sequence and optional ops shares between its
 * files: seq_lower.c (the walk and the ops on sequences known at load time), seq_split.c
 * (SplitToSequence), seq_slices.c (a tensor's slices read at run-time positions or in a
 * subgraph) and seq_loop.c (a list built by a Loop, turned into one of its scan
 * outputs). */
#ifndef METAINFER_GRAPH_SEQ_LOWER_H
#define METAINFER_GRAPH_SEQ_LOWER_H

#include <stdint.h>

#include "graph/graph_internal.h"

/* What the walk knows of a tensor of the graph being lowered. */
enum { MI__SEQ_NONE = 0, /* a tensor */
       MI__SEQ_LIST = 1, /* a sequence: its elements el[0..n), or (el NULL) src's slices */
       MI__SEQ_OPT = 2 /* an optional: empty (n 0) or holding el[0] */ };

typedef struct mi__seqv {
  int kind;
  int32_t n;   /* elements; -1 when not known at load */
  int32_t *el; /* tensor indices of the elements, owned; NULL when not known (src alone is) */
  /* >= 0: element p is slice p of tensor src along `axis` (kept as a dim of 1 when keep): a
   * SplitToSequence without split, whose element at a run-time position is a Gather of src */
  int32_t src;
  int64_t axis;
  int keep;
} mi__seqv_t;

/* One graph's walk (a subgraph gets its own). */
typedef struct mi__seql {
  mi_graph_t *g;
  mi__seqv_t *sv; /* per tensor that existed when the walk began (tensors added later are none) */
  int32_t nsv;
  uint8_t *dead;   /* per node: removed when the walk ends */
  uint8_t *mine;   /* per node: made or rewritten by the walk (removed too when nothing reads it) */
  int32_t ndead;   /* entries of dead and mine (grown as nodes are added) */
  mi_error_t *err; /* "node 'x' (Op): why" */
} mi__seql_t;

/** 1 when g or one of its subgraphs has a sequence or optional op. */
int mi__graph_has_seq(const mi_graph_t *g);
/** Lowers them (see seq_lower.c), or refuses the first that cannot be: MI_OK, or an error
 * starting with `label` and naming the node, the op and why. */
int32_t mi__graph_lower_seq(mi_graph_t *g, const char *label, mi_error_t *err);

/** What the walk knows of tensor t (NULL past the walk's tensors or for t < 0). */
const mi__seqv_t *mi__seq_of(const mi__seql_t *l, int32_t t);
/** 1 when tensor t holds a sequence or an optional. */
int mi__seq_is(const mi__seql_t *l, int32_t t);
/** Refuses node i: MI_ERR_UNSUPPORTED "node '<name>' (<op>): <why>". */
int32_t mi__seq_fail(mi__seql_t *l, int32_t i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** Grows dead and mine to the graph's node count (new entries: kept, made by the walk). 0, or -1
 * when out of memory. */
int mi__seq_track_nodes(mi__seql_t *l);

/** MI_ERR_OUT_OF_MEMORY naming node i. */
int32_t mi__seq_oom(mi__seql_t *l, int32_t i);
/** Output 0 of node i becomes the sequence (or optional) `kind` of elements el[0..n); the node
 * is removed when the walk ends. */
int32_t mi__seq_set(mi__seql_t *l, int32_t i, int kind, int32_t n, const int32_t *el);
/** Output 0 of node i becomes the sequence of src's n slices along axis (n -1: not known at
 * load), its elements not tensors of the graph; src -1: a sequence of n tensors whose values
 * are not known (only its length is). */
int32_t mi__seq_set_slices(mi__seql_t *l, int32_t i, int32_t n, int32_t src, int64_t axis, int keep);
/** SequenceAt node i of slices s at position tensor pos: Gather of s->src (+ Unsqueeze). */
int32_t mi__seq_at_slice(mi__seql_t *l, int32_t i, const mi__seqv_t *s, int32_t pos);
/** ConcatFromSequence node i (new_axis 0, axis 0) of slices s along axis 0 (keepdims 0): a
 * Reshape of s->src merging its first two axes. */
int32_t mi__seq_cat_slices0(mi__seql_t *l, int32_t i, const mi__seqv_t *s);
/** SequenceLength node i of slices s whose count is not known at load: Shape -> Gather. */
int32_t mi__seq_len_slices(mi__seql_t *l, int32_t i, const mi__seqv_t *s);

/* A subgraph's tensor t known, when its walk starts, to be sequence v (el NULL). */
typedef struct mi__seq_seed {
  int32_t t;
  mi__seqv_t v;
  int32_t el1; /* an optional's element (the subgraph's tensor) when v.n is 1 */
} mi__seq_seed_t;

/** Subgraph `sub` of node i captures sequences of slices or optionals (implicit inputs of i):
 * sub captures their source tensors (an optional's element) instead, and *seeds (malloc'd,
 * *nseeds entries) say what its captured tensors were for its own walk. (seq_slices.c; the
 * caller has refused every other captured sequence.) */
int32_t mi__seq_capture_slices(mi__seql_t *l, int32_t i, mi_graph_t *sub, mi__seq_seed_t **seeds, int32_t *nseeds);
/** Then node i's implicit inputs that are such sequences become their source tensors (an empty
 * optional's go). */
int32_t mi__seq_implicit_slices(mi__seql_t *l, int32_t i);
/** The one integer of constant tensor t (int32 or int64 data): 0, or -1 when t is not one. */
int mi__seq_int(const mi_graph_t *g, int32_t t, int64_t *v);
/** Node i becomes `op` (default domain, no attributes) on in[0..nin) into out[0..nout), keeping
 * its index and name. */
int32_t mi__seq_become(mi__seql_t *l, int32_t i, const char *op, int32_t nin, const int32_t *in, int32_t nout,
                       const int32_t *out);
/** SplitToSequence node i: Split (+ Squeeze), its output the sequence of the parts, or refused
 * when the number of parts is not known at load (seq_split.c). */
int32_t mi__seq_lower_split(mi__seql_t *l, int32_t i);

/** Loop node i carries sequences (some of inputs 2..): each that starts empty and is only
 * appended to by the body (SequenceInsert without a position) becomes a scan output of the loop
 * (the appended tensors stacked along a new axis 0), and the list after the loop the slices of
 * that along axis 0 (seq_loop.c). Any other carried sequence is refused, naming the loop, the
 * value and why. MI_OK when none was left. */
int32_t mi__seq_lower_loop(mi__seql_t *l, int32_t i);

#endif /* METAINFER_GRAPH_SEQ_LOWER_H */
