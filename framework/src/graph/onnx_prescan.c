/* onnx_prescan.c - bounds how deeply an ONNX file nests before protobuf-c unpacks it.
 *
 * protobuf-c unpacks a nested message by recursing, about a kilobyte of stack per level, with
 * no limit of its own: an If whose branch holds an If whose branch... 3,000 levels deep (under
 * 100 KB of file) overflows the stack inside onnx__model_proto__unpack, long before the
 * importer can count subgraphs. This walk reads the wire format with the same generated
 * descriptors, iteratively in file order, and refuses the file at the first message nested
 * past the limits; it allocates nothing and is linear in the file's size. */
#include "graph/onnx_internal.h"

/* Legitimate models stay far below this: a subgraph at the importer's deepest level sits ~50
 * messages down (model, graph, then node, attribute, graph per level), and a value's type adds
 * a handful more. */
#define MAX_MESSAGE_DEPTH 100

typedef struct frame {
  const ProtobufCMessageDescriptor *desc;
  size_t end; /* offset just past this message's bytes */
} frame_t;

/* A varint at *at (at most 10 bytes, not past end); 0 when malformed. */
static int varint(const uint8_t *p, size_t end, size_t *at, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && *at < end; shift += 7) {
    uint8_t b = p[(*at)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 1;
    }
  }
  return 0;
}

int32_t mi__onnx_prescan(const void *data, size_t size, const char *label, mi_error_t *err) {
  const uint8_t *p = data;
  frame_t stack[MAX_MESSAGE_DEPTH + 1];
  int32_t depth = 0, graphs = 0;
  size_t at = 0;
  stack[0] = (frame_t){&onnx__model_proto__descriptor, size};
  for (;;) {
    uint64_t tag, len;
    unsigned wire;
    const ProtobufCFieldDescriptor *fd;
    /* Leaving every message that ends here. */
    while (at == stack[depth].end) {
      if (depth == 0) return MI_OK;
      if (stack[depth].desc == &onnx__graph_proto__descriptor) graphs--;
      depth--;
    }
    /* Anything malformed is left to protobuf-c, which refuses it at this same point or
     * earlier, and never recurses past it. */
    if (!varint(p, stack[depth].end, &at, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
      return MI_OK;
    wire = (unsigned)(tag & 7);
    if (wire == 0) {
      if (!varint(p, stack[depth].end, &at, &len)) return MI_OK;
      continue;
    }
    if (wire == 1 || wire == 5) {
      size_t n = wire == 1 ? 8 : 4;
      if (stack[depth].end - at < n) return MI_OK;
      at += n;
      continue;
    }
    if (wire != 2 || !varint(p, stack[depth].end, &at, &len) || len > stack[depth].end - at)
      return MI_OK;
    fd = protobuf_c_message_descriptor_get_field(stack[depth].desc, (unsigned)(tag >> 3));
    if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE) {
      at += (size_t)len;
      continue;
    }
    /* A nested message: protobuf-c would recurse here. */
    if (fd->descriptor == &onnx__graph_proto__descriptor &&
        ++graphs > MI__ONNX_MAX_SUBGRAPH_DEPTH + 1)
      return mi_errorf(err, MI_ERR_PARSE,
                       "%s: not a valid ONNX model (subgraphs nested deeper than %d levels, at byte "
                       "%zu)",
                       label, MI__ONNX_MAX_SUBGRAPH_DEPTH, at);
    if (depth == MAX_MESSAGE_DEPTH)
      return mi_errorf(err, MI_ERR_PARSE,
                       "%s: not a valid ONNX model (messages nested deeper than %d levels, at byte "
                       "%zu)",
                       label, MAX_MESSAGE_DEPTH, at);
    stack[++depth] = (frame_t){fd->descriptor, at + (size_t)len};
  }
}
