/* test_pb.h - a tiny protobuf writer for hand-encoding ONNX models in tests, independent of
 * the importer it tests. A header (not test_*.c), so the test glob does not make it a test. */
#ifndef MI_TEST_PB_H
#define MI_TEST_PB_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct pb {
  uint8_t d[4096];
  size_t n;
} pb_t;

static inline void varint(pb_t *b, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    b->d[b->n++] = c | (v ? 0x80 : 0);
  } while (v);
}
static inline void tag(pb_t *b, int field, int wt) {
  varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}
static inline void put_int(pb_t *b, int field, int64_t v) {
  tag(b, field, 0);
  varint(b, (uint64_t)v);
}
static inline void put_bytes(pb_t *b, int field, const void *p, size_t n) {
  tag(b, field, 2);
  varint(b, n);
  memcpy(b->d + b->n, p, n);
  b->n += n;
}
static inline void put_str(pb_t *b, int field, const char *s) { put_bytes(b, field, s, strlen(s)); }
static inline void put_msg(pb_t *b, int field, const pb_t *m) { put_bytes(b, field, m->d, m->n); }

/* ONNX messages on top of the writer (field numbers from onnx.proto). */

/* AttributeProto: INT (type 2), STRING (3), INTS (7), GRAPH (5) added to a NodeProto. */
static inline void pb_attr_int(pb_t *node, const char *name, int64_t v) {
  pb_t a = {0};
  put_str(&a, 1, name);
  put_int(&a, 3, v);
  put_int(&a, 20, 2);
  put_msg(node, 5, &a);
}
static inline void pb_attr_str(pb_t *node, const char *name, const char *v) {
  pb_t a = {0};
  put_str(&a, 1, name);
  put_str(&a, 4, v);
  put_int(&a, 20, 3);
  put_msg(node, 5, &a);
}
static inline void pb_attr_ints(pb_t *node, const char *name, int n, const int64_t *v) {
  pb_t a = {0}, packed = {0};
  put_str(&a, 1, name);
  for (int i = 0; i < n; i++) varint(&packed, (uint64_t)v[i]);
  put_msg(&a, 8, &packed);
  put_int(&a, 20, 7);
  put_msg(node, 5, &a);
}
static inline void pb_attr_graph(pb_t *node, const char *name, const pb_t *graph) {
  static pb_t a; /* holds a whole subgraph: too big for the stack next to the caller's */
  a.n = 0;
  put_str(&a, 1, name);
  put_msg(&a, 6, graph);
  put_int(&a, 20, 5);
  put_msg(node, 5, &a);
}

/* Starts NodeProto *n (cleared) with comma-separated inputs and outputs ("" for an omitted
 * input) and the node name (the op when NULL); the caller adds attributes. */
static inline void pb_node(pb_t *n, const char *op, const char *name, const char *ins,
                           const char *outs) {
  char buf[128];
  n->n = 0;
  for (int field = 1; field <= 2; field++) {
    snprintf(buf, sizeof buf, "%s", field == 1 ? ins : outs);
    for (char *s = buf, *e; s; s = e) {
      if ((e = strchr(s, ','))) *e++ = '\0';
      put_str(n, field, s);
    }
  }
  put_str(n, 3, name ? name : op);
  put_str(n, 4, op);
}

/* Initializers (GraphProto field 5): float (dtype 1) as raw little-endian data, int64 (7)
 * 1-D as packed int64_data. */
static inline void pb_init_f32(pb_t *g, const char *name, int rank, const int64_t *dims,
                               const float *v) {
  pb_t t = {0};
  int64_t n = 1;
  for (int i = 0; i < rank; i++) put_int(&t, 1, dims[i]), n *= dims[i];
  put_int(&t, 2, 1);
  put_str(&t, 8, name);
  put_bytes(&t, 9, v, (size_t)n * sizeof *v);
  put_msg(g, 5, &t);
}
static inline void pb_init_i64(pb_t *g, const char *name, int n, const int64_t *v) {
  pb_t t = {0}, packed = {0};
  put_int(&t, 1, n);
  put_int(&t, 2, 7);
  for (int i = 0; i < n; i++) varint(&packed, (uint64_t)v[i]);
  put_msg(&t, 7, &packed);
  put_str(&t, 8, name);
  put_msg(g, 5, &t);
}

/* A ValueInfoProto of ONNX element type `elem` as graph input (field 11) or output (12). rank -1
 * leaves the type out; a negative dim becomes the dim_param dyn_name. */
static inline void pb_value(pb_t *g, int field, const char *name, int elem, int rank, const int64_t *dims,
                            const char *dyn_name) {
  pb_t vi = {0}, tp = {0}, tt = {0}, sh = {0};
  put_str(&vi, 1, name);
  if (rank >= 0) {
    for (int i = 0; i < rank; i++) {
      pb_t dim = {0};
      if (dims[i] < 0)
        put_str(&dim, 2, dyn_name);
      else
        put_int(&dim, 1, dims[i]);
      put_msg(&sh, 1, &dim);
    }
    put_int(&tt, 1, elem);
    put_msg(&tt, 2, &sh);
    put_msg(&tp, 1, &tt);
    put_msg(&vi, 2, &tp);
  }
  put_msg(g, field, &vi);
}

/* The same for a float (element type 1) value. */
static inline void pb_value_f32(pb_t *g, int field, const char *name, int rank,
                                const int64_t *dims, const char *dyn_name) {
  pb_value(g, field, name, 1, rank, dims, dyn_name);
}

/* ModelProto (IR version 8) around a graph with one default-domain opset import; the bytes
 * live in a static buffer until the next call. */
static inline const pb_t *pb_model(const pb_t *graph, int64_t opset) {
  static pb_t m;
  pb_t os = {0};
  put_str(&os, 1, "");
  put_int(&os, 2, opset);
  m.n = 0;
  put_int(&m, 1, 8);
  put_msg(&m, 8, &os);
  put_msg(&m, 7, graph);
  return &m;
}

#endif
