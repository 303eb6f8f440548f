/* ref_bitwise.c - reference BitShift (opset 11) and BitwiseAnd / Or / Xor / Not (18) on every
 * integer element type (BitShift: the unsigned ones). */
#include <string.h>

#include "ref/ref_ops.h"

#define UNSIGNED                                                                                  \
  (MI_DTYPE_BIT(MI_DTYPE_UINT8) | MI_DTYPE_BIT(MI_DTYPE_UINT16) | MI_DTYPE_BIT(MI_DTYPE_UINT32) | \
   MI_DTYPE_BIT(MI_DTYPE_UINT64))
#define INTS \
  (UNSIGNED | MI_DTYPE_BIT(MI_DTYPE_INT8) | MI_DTYPE_BIT(MI_DTYPE_INT16) | MI_DTYPE_BIT(MI_DTYPE_INT32) | MI_DTYPE_BIT(MI_DTYPE_INT64))

/* Element i's bits, zero-extended to 64 (the bitwise ops act on bits, so signedness only
 * matters when the value is written back, which truncates). */
static uint64_t get_bits(const mi_array_t *a, int64_t i) {
  uint64_t v = (uint64_t)mi__int_load(a->data, a->dtype, i);
  int bits = (int)mi_dtype_size(a->dtype) * 8;
  return bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

static void put_bits(mi_array_t *a, int64_t i, uint64_t v) { mi__int_store(a->data, a->dtype, i, (int64_t)v); }

static int bits_of(int32_t dtype) { return (int)mi_dtype_size(dtype) * 8; }

enum { OP_AND,
       OP_OR,
       OP_XOR,
       OP_NOT,
       OP_SHL,
       OP_SHR };

static int op_code(const char *op, const char *direction) {
  if (!strcmp(op, "BitwiseAnd")) return OP_AND;
  if (!strcmp(op, "BitwiseOr")) return OP_OR;
  if (!strcmp(op, "BitwiseXor")) return OP_XOR;
  if (!strcmp(op, "BitwiseNot")) return OP_NOT;
  if (!strcmp(direction, "LEFT")) return OP_SHL;
  if (!strcmp(direction, "RIGHT")) return OP_SHR;
  return -1;
}

int32_t mi__ref_bitwise(mi__ref_call_t *c) {
  const mi_array_t *ab[2];
  mi__ref_bcast_t b;
  mi_array_t *y;
  int32_t rc;
  int shift = !strcmp(c->node->op_type, "BitShift");
  const char *dir = mi_node_attr_string(c->node, "direction", "");
  int op = op_code(c->node->op_type, dir);
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if (op < 0)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "direction '%s' is not LEFT or RIGHT", dir);
  /* BitShift is defined on the unsigned types only. */
  uint32_t mask = shift ? UNSIGNED : INTS;
  if ((rc = mi__ref_need(c, 0, mask, &ab[0])) != MI_OK) return rc;
  if (op == OP_NOT) {
    if ((rc = mi__ref_make_out(c, 0, ab[0]->dtype, ab[0]->rank, ab[0]->dims, &y)) != MI_OK) return rc;
    for (int64_t i = 0; i < mi_array_numel(ab[0]); i++) put_bits(y, i, ~get_bits(ab[0], i));
    return MI_OK;
  }
  if ((rc = mi__ref_need(c, 1, mask, &ab[1])) != MI_OK) return rc;
  if (ab[0]->dtype != ab[1]->dtype)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "inputs are %s and %s", mi_dtype_name(ab[0]->dtype),
                        mi_dtype_name(ab[1]->dtype));
  if ((rc = mi__ref_broadcast(c, 2, ab, &b)) != MI_OK) return rc;
  if ((rc = mi__ref_make_out(c, 0, ab[0]->dtype, b.rank, b.dims, &y)) != MI_OK) return rc;
  uint64_t width = (uint64_t)bits_of(ab[0]->dtype);
  for (int64_t i = 0; i < b.numel; i++) {
    int64_t off[2];
    mi__ref_bcast_offsets(&b, 2, i, off);
    uint64_t p = get_bits(ab[0], off[0]), q = get_bits(ab[1], off[1]), v;
    switch (op) {
    case OP_AND: v = p & q; break;
    case OP_OR: v = p | q; break;
    case OP_XOR: v = p ^ q; break;
    /* A shift by the width or more empties the value (numpy's rule, and ONNX Runtime's for
     * the 8-bit type, whose operands C++ widens to int); C leaves it undefined. */
    case OP_SHL: v = q >= width ? 0 : p << q; break;
    default: v = q >= width ? 0 : p >> q; break;
    }
    put_bits(y, i, v);
  }
  return MI_OK;
}
