/* op_domain.c - which ops of a non-default operator domain the framework runs: the
 * com.microsoft ops ONNX Runtime's quantization tools write (MatMulNBits: its weight-only 4-bit
 * quantizer; DynamicQuantizeLSTM: its dynamic quantization of an LSTM), the fused ops of its
 * transformer optimizer that ms_fuse_lower.c lowers, and the attention and rotary ops the loader
 * lowers to standard ops (attn_lower.c and its neighbours), nothing else. */
#include <string.h>

#include "graph/graph_internal.h"

static const char *const k_ms_ops[] = {"QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool",
                                       "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
                                       "QLinearConcat", "QLinearSoftmax", "QLinearWhere",
                                       "QGemm", "MatMulNBits", "DynamicQuantizeLSTM",
                                       /* transformer fusions (lowered at import: ms_fuse_lower.c) */
                                       "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
                                       "FastGelu", "BiasGelu", "Gelu", "QuickGelu", "BiasAdd",
                                       "EmbedLayerNormalization", "FusedMatMul",
                                       "TransposeMatMul",
                                       /* attention (lowered at import) */
                                       "Attention", "MultiHeadAttention", "RotaryEmbedding", "GroupQueryAttention"};

int mi__graph_op_known(const char *domain, const char *op_type) {
  if (!domain || !domain[0] || strcmp(domain, "ai.onnx") == 0) return 1;
  if (!op_type || strcmp(domain, "com.microsoft") != 0) return 0;
  for (size_t i = 0; i < sizeof k_ms_ops / sizeof k_ms_ops[0]; i++)
    if (strcmp(k_ms_ops[i], op_type) == 0) return 1;
  return 0;
}
