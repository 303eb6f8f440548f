/* op_since.h - the opset each recently supported standard op first appeared in. */
#ifndef METAINFER_OP_SINCE_H
#define METAINFER_OP_SINCE_H

#include <stdint.h>

/** The opset in which op_type entered the default ONNX domain, for the ops whose absence from
 * an older opset we check (a node naming one under an older opset is malformed); 1 for any
 * other op. */
int64_t mi__op_since(const char *op_type);

#endif /* METAINFER_OP_SINCE_H */
