/* op_since.c - the opset each recently supported standard op first appeared in, so the
 * interpreter and shape inference both refuse a node that names it under an older opset. */
#include <string.h>

#include "graph/op_since.h"

static const struct {
  const char *op;
  int64_t since;
} k_since[] = {
    {"Elu", 6},
    {"Selu", 6},
    {"Celu", 12},
    {"Mish", 18},
    {"ThresholdedRelu", 10},
    {"Shrink", 9},
    {"CastLike", 15},
    {"GroupNormalization", 18},
    {"LpNormalization", 1},
    {"MeanVarianceNormalization", 9},
    {"GatherND", 11},
    {"ScatterElements", 11},
    {"Scatter", 9},
    {"NonMaxSuppression", 10},
    {"OneHot", 9},
    {"Compress", 9},
    {"ReverseSequence", 10},
    {"Tan", 7},
    {"Asin", 7},
    {"Acos", 7},
    {"Atan", 7},
    {"Sinh", 9},
    {"Cosh", 9},
    {"Asinh", 9},
    {"Acosh", 9},
    {"Atanh", 9},
    {"LRN", 1},
    {"GridSample", 16},
    {"RoiAlign", 10},
    {"AffineGrid", 20},
    {"MaxUnpool", 9},
    {"DFT", 17},
    {"STFT", 17},
    {"HannWindow", 17},
    {"HammingWindow", 17},
    {"BlackmanWindow", 17},
    {"MelWeightMatrix", 17},
    {"EyeLike", 9},
    {"BitShift", 11},
    {"BitwiseAnd", 18},
    {"BitwiseOr", 18},
    {"BitwiseXor", 18},
    {"BitwiseNot", 18},
    {"Col2Im", 18},
    {"DeformConv", 19},
    {"Det", 11},
    {"CenterCropPad", 18},
    {"TensorScatter", 24},
    {"Unique", 11},
};

int64_t mi__op_since(const char *op_type) {
  for (size_t i = 0; op_type && i < sizeof k_since / sizeof k_since[0]; i++)
    if (strcmp(k_since[i].op, op_type) == 0) return k_since[i].since;
  return 1;
}
