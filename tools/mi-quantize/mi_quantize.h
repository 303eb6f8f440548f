/* mi_quantize.h - shared between mi-quantize's option parsing/calibration (main.c) and its graph
 * rewrites (rewrite.c). */
#ifndef MI_QUANTIZE_H
#define MI_QUANTIZE_H

#include "metainfer/mi.h"

/* Observed range of every float tensor a rewrite quantizes (NaN: not calibrated). */
typedef struct mq_ranges {
  float *lo, *hi; /* per tensor index */
} mq_ranges_t;

typedef struct mq_options {
  int per_channel; /* Conv weights per output channel (qdq, qop) */
  int conv_u8;     /* dynamic: Conv weights UINT8 asymmetric (ONNX Runtime's CPU ConvInteger) */
  int matmul_u8;   /* dynamic: MatMul weights UINT8 asymmetric, else INT8 symmetric */
  int block_size;  /* nbits, qdq4: weights in blocks of this many values along K */
  int symmetric;   /* nbits, qdq4: no zero points (else one per block) */
} mq_options_t;

/* A new initializer named base + suffix (made unique) holding a copy of data; its index or -1. */
int32_t mq_new_init(mi_graph_t *g, const char *base, const char *suffix, int32_t dtype, int32_t rank,
                    const int64_t *dims, const void *data, size_t nbytes);
/* Turns node n into op (domain NULL: the default) with the given inputs and single output,
 * attributes kept; -1 when out of memory. */
int mq_set_node(mi_graph_t *g, int32_t n, const char *op, int32_t nin, const int32_t *ins, int32_t out,
                const char *domain);

/* ONNX Runtime's weight-only 4-bit quantizer (matmul_nbits_quantizer, MatMul4BitsQuantizer):
 * each MatMul with a constant 2-D FLOAT32 B becomes com.microsoft MatMulNBits (bits 4,
 * block_size, packed codes, scales, zero points unless symmetric). */
int32_t mq_nbits(mi_graph_t *g, const mq_options_t *o, mi_error_t *err);
/* The same weights as opset 21's blocked DequantizeLinear of INT4 codes (QDQ weight-only):
 * DequantizeLinear(codes [K, N], scales [ceil(K / block), N], zero points, axis 0, block_size)
 * -> MatMul. The graph's opset becomes 21. */
int32_t mq_qdq4(mi_graph_t *g, const mq_options_t *o, mi_error_t *err);

/* Dynamic quantization (ONNX Runtime's quantize_dynamic): DynamicQuantizeLinear on each input
 * of a Conv / MatMul with a constant weight, ConvInteger / MatMulInteger, Cast, the scales' Mul,
 * and the bias Add. */
int32_t mq_dynamic(mi_graph_t *g, const mq_options_t *o, mi_error_t *err);
/* Each LSTM with constant W and R, in g and its subgraphs, as com.microsoft DynamicQuantizeLSTM
 * (lstm.c; per_channel: a scale per gate row); the count rewritten, -1 out of memory. */
int32_t mq_dynamic_lstm(mi_graph_t *g, int per_channel);
/* The float tensors mq_qdq quantizes (1 per tensor index; `count` of them) after it removed the
 * Relus it folds; call before calibrating. */
int32_t mq_qdq_prepare(mi_graph_t *g, uint8_t *quantize, mi_error_t *err);
/* Static QDQ (quantize_static, QuantFormat.QDQ): a QuantizeLinear -> DequantizeLinear pair on
 * every tensor marked by mq_qdq_prepare (UINT8, asymmetric, range from `r`; a Softmax's output
 * at scale 1/256, zero point 0), INT8 symmetric weights and INT32 biases behind
 * DequantizeLinear. With qop, then mq_qop. */
int32_t mq_qdq(mi_graph_t *g, const uint8_t *quantize, const mq_ranges_t *r, const mq_options_t *o, int qop,
               mi_error_t *err);
/* The QuantFormat.QOperator form of a QDQ graph (qop.c): QLinearConv, QLinearMatMul, and
 * com.microsoft QLinearAdd / QLinearMul / QLinearGlobalAveragePool / QLinearAveragePool /
 * QLinearSigmoid / QLinearLeakyRelu / QLinearSoftmax / QLinearConcat / QLinearWhere / QGemm. */
int32_t mq_qop(mi_graph_t *g, mi_error_t *err);

/* Whether ONNX Runtime's static quantizer (and this tool) quantizes node n's op with these
 * attributes: Conv, MatMul, Add, Mul, GlobalAveragePool, AveragePool (2-D, no dilations),
 * Sigmoid, LeakyRelu, Softmax, Concat, Where, Gemm (alpha = beta = 1, no transA). */
int mq_op_takes(const mi_graph_t *g, const mi_node_t *n);
/* Helpers shared by the rewrites (rewrite.c): node n turned into op with these inputs and one
 * output (attributes kept); the readers of tensor t (the last in *only); whether t is a graph
 * output. */
int mq_set_node(mi_graph_t *g, int32_t n, const char *op, int32_t nin, const int32_t *ins, int32_t out,
                const char *domain);
/* MaxPool or Resize: ONNX Runtime's Direct8Bit ops, run on the codes of a quantized input with the
 * input's scale and zero point (its MaxPool and nearest Resize on UINT8). */
int mq_direct8(const mi_node_t *n);
int32_t mq_readers(const mi_graph_t *g, int32_t t, int32_t *only);
int mq_is_output(const mi_graph_t *g, int32_t t);

#endif
