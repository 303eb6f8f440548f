/* blis_internal.h - shared types of the blis-cpu plugin (context, kernels, op registry). */
#ifndef MI_BLIS_INTERNAL_H
#define MI_BLIS_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "metainfer/mi_sdk.h"

/* BLIS kernel sets the plugin can select; index = knob `arch` enum value before filtering. */
enum {
  MI__ARCH_AUTO = 0, /* the plugin's pick: best kernel set the CPU supports */
  MI__ARCH_BLIS,     /* BLIS's own cpuid detection */
  MI__ARCH_SKX,
  MI__ARCH_HASWELL,
  MI__ARCH_ZEN3,
  MI__ARCH_ZEN2,
  MI__ARCH_ZEN,
  MI__ARCH_GENERIC,
  MI__ARCH_COUNT
};

#define MI__ISA_AVX2 (1u << 0)
#define MI__ISA_FMA (1u << 1)
#define MI__ISA_AVX512F (1u << 2)
#define MI__ISA_AVX512VNNI (1u << 3)
#define MI__ISA_F16C (1u << 4)
#define MI__ISA_AVX512DQBWVL (1u << 5)
/* AMX-TILE and AMX-INT8, and the kernel granted this process the tile data (blis_device.c) */
#define MI__ISA_AMX_INT8 (1u << 6)
/* AVX512_BF16 (vcvtne2ps2bf16, vdpbf16ps): conv.packed_gemm_bf16 */
#define MI__ISA_AVX512BF16 (1u << 7)
/* MI__ISA_AMX_INT8 where cpuid says AMX-TILE and AMX-INT8 and the kernel grants this process the
 * tile data (once per process, before any tile instruction), else 0 (blis_qamx.c). */
uint32_t mi__blis_amx_request(void);

typedef struct mi__blis_pool mi__blis_pool_t;

typedef struct mi__blis_cpu {
  char model[128];
  uint32_t isa;
  uint32_t cores;
  uint64_t memory_bytes;
  uint64_t l1d_bytes, l2_bytes, l3_bytes;
  int32_t avx512_halves; /* AVX-512 executed as two 256-bit halves (blis_cpusel.c) */
} mi__blis_cpu_t;

enum { MI__BLIS_KNOB_N = 6,
       MI__BLIS_COUNTER_N = 3 };

struct mi_plugin_ctx {
  mi_sdk_plugin_t sdk;                  /* first: the SDK helper answers knob and counter calls */
  mi_sdk_knob_t knobs[MI__BLIS_KNOB_N]; /* with this CPU's cores and enum choices */
  mi_sdk_counter_t counters[MI__BLIS_COUNTER_N];
  mi_sdk_tables_t tables;
  const mi_host_api_t *host;
  mi__blis_cpu_t cpu;
  int32_t threads;                  /* device knob `threads` */
  int32_t arch;                     /* device knob `arch` (MI__ARCH_*) */
  int32_t arch_ids[MI__ARCH_COUNT]; /* knob enum index -> MI__ARCH_* */
  int32_t arch_n;
  char arch_choices[256];
  int32_t simd_ids[4]; /* knob `simd` enum index -> MI__SIMD_* level (0 = widest) */
  int32_t simd_n;
  char simd_choices[64];
  int32_t qdot_ids[8]; /* knob `int8_dot` enum index -> MI__QDOT_* (0 = widest) */
  int32_t qdot_n;
  char qdot_choices[96];
  void *cntx[MI__ARCH_COUNT]; /* cntx_t*, built lazily, owned */
  mi__blis_pool_t *pool;      /* owned; workers start on first parallel loop */
  atomic_uint_least64_t cur_bytes, peak_bytes;
  atomic_int gemm_used;               /* a BLIS GEMM ran since the last peak_alloc_bytes reading */
  atomic_uint_least64_t total_run_ns; /* kernel_run time summed since create */
  /* DynamicQuantizeLinear ranges taken from the step that wrote the floats (no min/max pass) */
  atomic_uint_least64_t ranges_reused;
};

/* ---- allocation (64-byte aligned, counted towards the peak-bytes counter) */
void *mi__blis_alloc(mi_plugin_ctx_t *ctx, uint64_t bytes);
void *mi__blis_calloc(mi_plugin_ctx_t *ctx, uint64_t bytes);
void mi__blis_free(mi_plugin_ctx_t *ctx, void *p);
/* Bytes BLIS holds in its packing pools (process-wide: blocks are kept until the plugin unloads) */
uint64_t mi__blis_pool_bytes(void);

/* ---- device probing */
void mi__blis_probe_cpu(mi__blis_cpu_t *cpu);
int mi__blis_arch_supported(const mi__blis_cpu_t *cpu, int32_t arch);
const char *mi__blis_arch_name(int32_t arch);
/* Returns the cntx_t* for an arch (NULL = BLIS default); builds it on first use. */
const void *mi__blis_cntx(mi_plugin_ctx_t *ctx, int32_t arch, mi_error_t *err, int32_t *rc);
void mi__blis_cntx_release(mi_plugin_ctx_t *ctx);

/* ---- GEMM through BLIS: C = alpha * A(m x k) * B(k x n) + beta * C, general strides. */
/* A tensor's value range, min(0, x) and max(0, x) over its finite values, found by the step that
 * wrote it while the values were in registers or L1 (blis_range.c): a DynamicQuantizeLinear that
 * reads the tensor later takes it instead of a min/max pass over the floats. Keys are the floats'
 * bits in an order-preserving form, merged with compare-and-swap by the parts of a parallel loop
 * (min and max do not depend on the order, so the range is the pass's whatever the split). */
typedef struct mi__blis_range {
  _Atomic uint32_t lo, hi;
  int32_t known; /* set once the whole tensor is written (by the step, or from the input buffer) */
  int32_t reads; /* at prepare: a step of this kernel would take this input's range */
  int32_t asked; /* per run: a later kernel asked for this output's range (its buffer says so) */
} mi__blis_range_t;

typedef struct mi__blis_env {
  mi__blis_range_t *range;           /* per tensor of the running kernel */
  atomic_uint_least64_t *range_used; /* counts the ranges a quantize step took from range[] */
  const void *cntx;
  const void *cntx_small; /* arch=auto: the kernel set for GEMMs under MI__AUTO_SMALL_MACS */
  int32_t threads;
  mi__blis_pool_t *pool; /* the instance's pool for the plugin's own loops */
  mi_plugin_ctx_t *ctx;  /* kernel_run's: the instance (its memory counter) */
  const mi_kernel_t *k;  /* kernel_run's: the running kernel (mi__blis_plane_open) */
  /* An output whose row count is data (blis_nms.c): the step sets *rows_tensor and *rows, which
   * kernel_run reports (mi_run_stats_t.has_rows) where rows_ok says the host reads them. */
  int32_t *rows_tensor;
  int64_t *rows;
  int32_t rows_ok;
} mi__blis_env_t;
#define MI__GEMM_MIN_MACS (1 << 21) /* multiply-adds per BLIS thread, at least */
/* Under this many multiply-adds arch=auto uses haswell's context, whose small-matrix (sup) kernels
 * skip packing; skx's context has none and packs with reference code (see blis-cpu.md). */
#define MI__AUTO_SMALL_MACS (1 << 24)
void mi__blis_sgemm(const mi__blis_env_t *env, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                    int64_t csb, float beta, float *c, int64_t rsc, int64_t csc);

/* ---- the plugin's own threads (blis_threads.c). A task computes items [begin, end); every item
 * is computed the same way whatever the split, so results do not depend on the thread count. */
typedef void (*mi__blis_task_fn)(void *arg, int64_t begin, int64_t end);
mi__blis_pool_t *mi__blis_pool_create(int32_t max_threads);
void mi__blis_pool_destroy(mi__blis_pool_t *pool);
/* Splits [0, count) into env->threads parts on multiples of `grain` and runs them on the pool;
 * runs serially when the pool is busy with another kernel. `item_work` estimates the elementary
 * operations of one item: no part gets less than MI__PAR_MIN_WORK of them, so a small loop runs
 * on the calling thread instead of paying a wake-up (ruinous on a loaded machine). */
#define MI__PAR_MIN_WORK (1 << 15)
/* A region's items are claimed in this many chunks a part (fewer where there are fewer grains),
 * their grains as equal as they can be, the larger chunks first (mi__blis_even_start): with
 * equal items N threads get the same items within one grain (chunks of a fixed size left the
 * last one short, e.g. 20 items on two threads as 3,3,3,3,3,3,2: 12:8). */
#define MI__PAR_CHUNKS 4
/* Each part claims the chunks of its own range first, in order, then those of the ranges after
 * it: part k computes the k-th stretch of the items of every region, so consecutive kernels split
 * by rows (pointwise pixel blocks, dw+pw bands, Winograd blocks) find most of their input in the
 * cache of the core that wrote it. Claimed in one shared order, the chunks went to the running
 * parts alternately, and a row-split kernel read about half its input from the other core's cache,
 * at 12 GB/s against 27 from its own on the 2-vCPU Xeon (a 307 KB half: 26 against 11 us of thread
 * CPU time; M-LSD's 384-channel dw+pw steps on 20x20, 2:2 in bands, ran only 1.3x faster on two
 * threads than on one). Parts past the ranges share them (part k range k % ranges). */
#define MI__POOL_RANGES 16
/* The first of n units that part i of b takes: n / b or one more, the larger parts first. */
static inline int64_t mi__blis_even_start(int64_t n, int64_t b, int64_t i) {
  return i * (n / b) + (i < n % b ? i : n % b);
}
/* The first of n units that chunk g of `chunks` takes when the chunks fall into `ranges` home
 * ranges (mi__blis_even_start's) and the units are split evenly over the ranges first, then each
 * range's over its chunks: every part's range holds its even share whatever the chunks. */
static inline int64_t mi__blis_chunk_start(int64_t n, int64_t chunks, int64_t ranges, int64_t g) {
  int64_t q = chunks / ranges, r = chunks % ranges, k, c0, n0;
  if (g >= chunks) return n;
  k = g < r * (q + 1) ? g / (q + 1) : r + (g - r * (q + 1)) / q; /* the range of chunk g */
  c0 = mi__blis_even_start(chunks, ranges, k);
  n0 = mi__blis_even_start(n, ranges, k);
  return n0 + mi__blis_even_start(mi__blis_even_start(n, ranges, k + 1) - n0, q + (k < r), g - c0);
}
void mi__blis_parallel(const mi__blis_env_t *env, int64_t count, int64_t grain, int64_t item_work,
                       mi__blis_task_fn fn, void *arg);
/* The threads the pool's last loop ran on (1: serially, or no pool): a hint, for a step that reads
 * what that loop wrote (blis_pool.c). */
int32_t mi__blis_last_parts(const mi__blis_env_t *env);
/* The threads mi__blis_parallel gives such a loop (1: it runs on the calling thread). */
int32_t mi__blis_par_parts(int32_t threads, int64_t count, int64_t grain, int64_t item_work);
/* A kernel's estimated time on one thread in ns (blis_cost.c), from its nodes' FLOPs (convs,
 * GEMMs, recurrent cells) and the bytes it reads and writes; wide: AVX-512's FLOP rate, else
 * AVX2's; -1 for a kernel without FLOPs (no estimate). Each thread it runs on must get at least
 * MI__PAR_PART_NS of it (mi__blis_kernel_threads: the threads a kernel of that cost runs on, at
 * most `threads`; all of them for -1), so a kernel below twice that runs on the calling thread: a
 * split costs about that much on a 2-vCPU VM (docs/backends/blis-cpu.md). */
#define MI__PAR_PART_NS 6000
int64_t mi__blis_kernel_cost_ns(const mi_kernel_desc_t *d, int wide);
int32_t mi__blis_kernel_threads(int32_t threads, int64_t cost_ns);

/* One row of w values read at stride xl (2 to 4) with AVX-512 (blis_shape.c): y[j] = xr[j * xl],
 * never reading past xr[(w - 1) * xl]. The NHWC -> NCHW transpose's rows and the stride-phased
 * planes of conv.packed_gemm's padded copy. */
void mi__blis_strided_row_avx512(const float *xr, int64_t xl, float *y, int64_t w);

/* ---- kernels */
#define MI__MAX_STEP_IO 8

typedef struct mi__blis_step mi__blis_step_t;
typedef int32_t (*mi__blis_run_fn)(const mi__blis_step_t *s, void *const *t,
                                   const mi__blis_env_t *env, mi_error_t *err);

struct mi__blis_step {
  mi__blis_run_fn run;
  void *state; /* op parameters, freed with mi__blis_free */
  void *aux;   /* second owned block (packed weights, scratch), freed with mi__blis_free */
  /* 1: this step and the one before it run as one pass, one of their runs doing both's work (a
   * depthwise conv and its pointwise conv in bands, a gate Mul folded into the conv's weights, a
   * linked QDQ block): the tensor between them is never written and gets no memory
   * (blis_kernel.c, alloc_intermediates). */
  int joined;
};

/* The argument of a part function that needs only its step's state and the run's tensors. */
typedef struct mi__blis_task {
  const void *state;
  void *const *t;
} mi__blis_task_t;

/* The body of most run functions: mi__blis_parallel over such a task. */
static inline int32_t mi__blis_run_parts(const mi__blis_step_t *s, void *const *t,
                                         const mi__blis_env_t *env, int64_t count, int64_t grain,
                                         int64_t item_work, mi__blis_task_fn fn) {
  mi__blis_task_t task;
  task.state = s->state;
  task.t = t;
  mi__blis_parallel(env, count, grain, item_work, fn, &task);
  return MI_OK;
}

struct mi_kernel {
  int32_t tensor_count;
  void **ptr;     /* per tensor: constant copy, intermediate, or the run's buffer */
  uint8_t *owned; /* 1 when ptr[i] is owned by the kernel, 2 when it is a reserved plane */
  uint8_t *plane; /* per intermediate, set by the steps' preps: MI__PLANE_* */
  uint64_t *rsv;  /* per tensor: the bytes of a reserved plane's mapping (owned 2) */
  int32_t input_count, output_count;
  int32_t *inputs, *outputs;
  int32_t step_count;
  mi__blis_step_t *steps;
  mi__blis_range_t *range; /* per tensor: the ranges steps found or inputs brought */
  int32_t threads;         /* 0 = device knob */
  int32_t arch;            /* -1 = device knob */
  int64_t cost_ns;         /* estimated time on one thread (mi__blis_kernel_cost_ns) */
};

/* What an op's prepare function sees. */
typedef struct mi__blis_prep {
  mi_plugin_ctx_t *ctx;
  mi_kernel_t *k;
  const mi_kernel_desc_t *desc;
  int32_t node_index;  /* first node of this step */
  int32_t nodes_used;  /* out: how many nodes the step absorbed (>= 1) */
  const char *variant; /* variant id requested for this node, NULL = default */
} mi__blis_prep_t;

typedef int32_t (*mi__blis_prep_fn)(mi__blis_prep_t *p, mi__blis_step_t *step, mi_error_t *err);

/* Helpers for prepare functions. */
const mi_node_desc_t *mi__blis_node(const mi__blis_prep_t *p, int32_t offset);
const mi_tensor_desc_t *mi__blis_tensor(const mi__blis_prep_t *p, int32_t idx);
/* A QLinear op's constant scale (input si: one positive FLOAT32) and zero point (input zi: one code
 * of dtype dt; absent: 0); 0 when they are not so (blis_qeltwise.c). _f: as float, finite too. */
int mi__blis_qpair(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t si, int32_t zi, int32_t dt,
                   double *s, int32_t *z);
int mi__blis_qpair_f(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t si, int32_t zi, int32_t dt, float *s,
                     int32_t *z);
/* Node input/output tensor index (-1 when absent). */
int32_t mi__blis_in(const mi_node_desc_t *n, int32_t i);
int32_t mi__blis_out(const mi_node_desc_t *n, int32_t i);
int mi__blis_is_const(const mi__blis_prep_t *p, int32_t idx);
int mi__blis_is_kernel_output(const mi__blis_prep_t *p, int32_t idx);
/* Number of node inputs (in this kernel) that read tensor idx. */
int32_t mi__blis_consumers(const mi__blis_prep_t *p, int32_t idx);
/* Frees the kernel's own copy of constant t when no other node of the kernel reads it (its packed
 * or transformed form is then all the step reads). */
void mi__blis_drop_const(mi__blis_prep_t *p, int32_t t);
/* What a step does with an intermediate of its group (mi_kernel.plane; blis_kernel.c,
 * alloc_intermediates). By default an intermediate made and read inside one step gets no memory
 * (the step computes through it) and one that passes between steps gets its own. A prep that
 * writes a tensor inside its step anyway says MI__PLANE_WRITTEN; one that writes it only on a rare
 * path, or leaves it to no one (a Resize whose rows the Concat's quantize computes), says
 * MI__PLANE_RESERVED: address space without memory (mmap PROT_NONE; element offsets into it stay
 * defined, a stray write faults), made writable for the runs that take that path
 * (mi__blis_plane_open). */
enum { MI__PLANE_AUTO = 0,
       MI__PLANE_WRITTEN = 1,
       MI__PLANE_RESERVED = 2 };
void mi__blis_plane_mark(mi__blis_prep_t *p, int32_t t, int kind);
/* Makes tensor t's reserved plane writable (and counted) for this run; a plane with memory of its
 * own passes. mi__blis_plane_close gives the memory back after the step. */
int32_t mi__blis_plane_open(const mi__blis_env_t *env, int32_t t, mi_error_t *err);
void mi__blis_plane_close(const mi__blis_env_t *env, int32_t t);
void *mi__blis_reserve(uint64_t bytes, uint64_t *len);
void mi__blis_unreserve(void *p, uint64_t len);
/* Reads an integer list from a constant INT64/INT32 tensor; returns count or -1. */
int32_t mi__blis_const_ints(const mi__blis_prep_t *p, int32_t idx, int64_t *out, int32_t max);
int32_t mi__blis_unsupported(mi_error_t *err, const mi_node_desc_t *n, const char *why);
/* Advances the multi-index idx[0..rank) over dims, last axis fastest, and the offset *off that
 * the strides st walk with it (st and off NULL: the index alone). */
static inline void mi__blis_next_index(int32_t rank, const int64_t *dims, const int64_t *st, int64_t *idx,
                                       int64_t *off) {
  int32_t d;
  for (d = rank - 1; d >= 0; d--) {
    if (st) *off += st[d];
    if (++idx[d] < dims[d]) return;
    if (st) *off -= st[d] * dims[d];
    idx[d] = 0;
  }
}
/* Normalises a negative *axis of x (from the end) and splits x's dims around it: outer, the
 * product of those before; len, the axis; inner, the product of those after (each may be NULL).
 * 0 when the axis is out of range (a scalar takes axis 0 or -1, with all three 1). */
int mi__blis_axis_split(const mi_tensor_desc_t *x, int64_t *axis, int64_t *outer, int64_t *len,
                        int64_t *inner);
/* The step's zeroed state of `bytes`, owned by the step; NULL with "out of memory" in err. */
void *mi__blis_state_new(mi__blis_prep_t *p, mi__blis_step_t *s, uint64_t bytes, mi_error_t *err);

/* Op families (each in its own file). */
int32_t mi__blis_prep_conv(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_gemm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* INT8 depthwise Conv on AVX-512 VNNI + VBMI (blis_qdw.c): *taken 0 when it does not apply (the
 * generic INT8 conv runs then), with nothing allocated. */
int32_t mi__blis_prep_qdw(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err);
int32_t mi__blis_prep_matmul(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* The host's MatMul fold unit at the prepared node (Muls by a constant scalar and a Transpose on
 * B, then the MatMul, then a Mul or Div of the product by a constant scalar; MI_FUSE_TRANSPOSE):
 * one step, *taken 1; else *taken 0 and nothing held. */
int32_t mi__blis_prep_mm_fold(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err);
/* The host's Softmax group (MI_FUSE_ADD; exec/sm_fold.c): Muls / Divs by a constant scalar and
 * Adds of broadcast masks, then a Softmax over the last axis, as one pass over the rows
 * (blis_smask.c): *taken 1; *taken 0 with nothing held when the nodes are not such a chain (they
 * are then prepared one by one, as steps of the kernel). */
int32_t mi__blis_prep_smask(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err);
/* A weight's DequantizeLinear (constant 8-bit codes) and the MatMul / Gemm that reads it as B
 * (MI_FUSE_DQ; blis_wq.c): one step on the codes, *taken 1; a refusal is MI_ERR_UNSUPPORTED (the
 * host then folds the weights); *taken 0 with nothing held when the next node is no such op. */
int32_t mi__blis_prep_wq(mi__blis_prep_t *p, mi__blis_step_t *s, int *taken, mi_error_t *err);
int32_t mi__blis_prep_unary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_binary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_bn(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_softmax(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_layernorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_rms(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);        /* blis_rms.c */
int32_t mi__blis_prep_gather_any(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err); /* blis_gather_rows.c */
int32_t mi__blis_prep_pool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_reduce(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_copy(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_transpose(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* A Transpose whose output axes (dims, with the input strides xs) are a batch of 2-D transposes
 * (blis_transpose.c): a channels-last input of 2 to 4 channels read once, or 16x16 tiles on
 * AVX-512; *taken 0 when it does not apply, with nothing allocated. */
int32_t mi__blis_prep_deinterleave(mi__blis_prep_t *p, mi__blis_step_t *s, const int64_t *dims, const int64_t *xs,
                                   int32_t rank, int *taken, mi_error_t *err);
int32_t mi__blis_prep_concat(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* Concat's step when the kernel's next node is a DynamicQuantizeLinear of its result (blis_qconcat.c):
 * 1 when it took both (the concat geometry given: outer blocks, count inputs of inner floats per
 * block), 0 when not one, -1 out of memory. */
int mi__blis_prep_qconcat(mi__blis_prep_t *p, mi__blis_step_t *s, int64_t outer, int32_t count, const int32_t *in,
                          const int64_t *inner, mi_error_t *err);
/* 1 when tensor x, no output of the kernel, is read only by a Concat of the kernel whose result
 * only the DynamicQuantizeLinear right after it reads: that step takes x's rows from x's Resize
 * (mi__blis_resize_rows) and needs x's floats nowhere. */
int mi__blis_qconcat_takes(const mi__blis_prep_t *p, int32_t x);
/* Pad's step when the kernel's next node is a DynamicQuantizeLinear of its result (blis_qpad.c):
 * 1 when it took both (zero padding of H and W: full holds the begin and end pads of each axis),
 * 0 when not one, -1 out of memory. */
int mi__blis_prep_qpad(mi__blis_prep_t *p, mi__blis_step_t *s, const mi_tensor_desc_t *x, const int64_t *full,
                       float value, int32_t mode, mi_error_t *err);
int32_t mi__blis_prep_quant(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* DequantizeLinear -> elementwise ops -> QuantizeLinear as one table per channel (blis_qlut.c). */
int32_t mi__blis_prep_qlut(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* y[i] = tab[x[i]] for n bytes; vbmi: 64 a step with vpermi2b (the CPU must have AVX-512 VBMI). */
void mi__blis_lut_row(int32_t vbmi, const uint8_t *tab, const uint8_t *x, uint8_t *y, int64_t n);
/* MaxPool on codes in unsigned order, ending such a chain, or on INT8/UINT8 codes alone (blis_qpool.c). */
typedef struct mi__blis_qpool {
  int64_t H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  int32_t k2s2; /* windows 2 wide at stride 2 (1 or 2 rows) inside the plane, on AVX-512BW: 64 codes a step */
  uint8_t flip; /* XORed into the codes before they are compared: 0x80 for INT8 codes, else 0 */
} mi__blis_qpool_t;
/* isa: the device's (after MI_BLIS_MAX_SIMD's cap), which decides k2s2 */
int32_t mi__blis_qpool_init(const mi_node_desc_t *n, const mi_tensor_desc_t *x, const mi_tensor_desc_t *y,
                            uint32_t isa, mi__blis_qpool_t *q, mi_error_t *err);
void mi__blis_qpool_plane(const mi__blis_qpool_t *q, const uint8_t *x, uint8_t *y);
/* MaxPool (opset 12+) on runtime INT8/UINT8 codes, 1-D or 2-D NCHW, alone in its kernel. */
int32_t mi__blis_prep_qmaxpool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* QLinearAdd outputs [b, e) of two operands of the output's shape, 8 codes a step on AVX-512, in
 * the reference's double arithmetic (blis_qadd.c); returns the first output not written. */
int64_t mi__blis_qladd_avx512(const uint8_t *a, const uint8_t *bb, uint8_t *y, int64_t b, int64_t e, double ra,
                              double rb, int32_t za, int32_t zb, int32_t zc, int32_t u8);
/* com.microsoft QLinearWhere (blis_qwhere.c). */
int32_t mi__blis_prep_qwhere(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* 1 when runtime tensor t is read by a QLinearWhere of kernel d as its condition and touched by
 * no other node (1 byte, 0 or 1, per element: what the kernel reads of a BOOL). */
int mi__blis_where_cond(const mi_kernel_desc_t *d, int32_t t);
int32_t mi__blis_prep_slice(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_resize(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* One resized axis of a Resize (blis_resize.c): `outer` blocks of `in` x `inner` become `outer`
 * blocks of `out` x `inner`; output position j blends input positions i0[j] and i1[j] with weight
 * w[j] (0 for nearest). */
typedef struct mi__blis_rpass {
  int64_t outer, in, out, inner;
  float scale;
  int64_t *i0, *i1; /* into the step's aux block */
  float *w;
} mi__blis_rpass_t;
/* A nearest Resize of 1-byte codes through those passes (blis_qresize.c): x into y, the
 * intermediates in s0 / s1 (npass 0: a copy of bytes); fused: the last two passes (rows, then the
 * innermost axis) as one. */
int32_t mi__blis_qresize_run(const mi__blis_rpass_t *pass, int32_t npass, int32_t fused, uint8_t *s0, uint8_t *s1,
                             const uint8_t *x, uint8_t *y, uint64_t bytes, const mi__blis_env_t *env);
/* The rows of Resize step s when it leaves them to the quantize step that reads its output y
 * (mi__blis_qconcat_takes): their count, each of *len floats; 0 when s is not such a step. */
int64_t mi__blis_resize_rows_of(const mi__blis_step_t *s, int32_t y, int64_t *len);
/* Its output rows i0..i1, one after the other, into dst (the run's tensors t). */
void mi__blis_resize_rows(const mi__blis_step_t *s, void *const *t, int64_t i0, int64_t i1, float *dst);
/* The range of those rows (0 included) merged into lo, hi without writing them: the same values
 * as mi__blis_minmax over what mi__blis_resize_rows writes. */
void mi__blis_resize_rows_range(const mi__blis_step_t *s, void *const *t, int64_t i0, int64_t i1, float *lo,
                                float *hi);
int32_t mi__blis_prep_cast(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* A comparison and the Cast to FLOAT that alone reads it, as one step (blis_cmp.c). */
int32_t mi__blis_prep_cmp(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_pad(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_expand_tile(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_gather(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_depth_space(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_split(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_instancenorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_lrn(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);         /* blis_lrn.c */
int32_t mi__blis_prep_lppool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);      /* blis_lppool.c: and GlobalLpPool */
int32_t mi__blis_prep_deform_conv(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err); /* blis_deform.c */
int32_t mi__blis_prep_col2im(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);      /* blis_col2im.c */
int32_t mi__blis_prep_nms(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);         /* blis_nms.c */
int32_t mi__blis_prep_gridsample(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);  /* blis_gridsample.c */
int32_t mi__blis_prep_roialign(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);    /* blis_roialign.c */
/* 1 when every node of d touching runtime tensor t (INT64, INT32 or BOOL) reads or writes it
 * where that op takes such a tensor: NonMaxSuppression's selected boxes and
 * max_output_boxes_per_class, RoiAlign's batch_indices, TopK's indices, Compress's condition,
 * ReverseSequence's sequence_lens, INT64 data of Compress and ReverseSequence, ArgMax/ArgMin's
 * indices (blis_nms.c); the op
 * checks the dtype. */
int mi__blis_vision_int(const mi_kernel_desc_t *d, int32_t t);
/* GatherElements, CenterCropPad, EyeLike (any 1, 2, 4 or 8-byte type; blis_elems.c), the bitwise
 * ops and BitShift (blis_bitwise.c). */
int32_t mi__blis_prep_gather_elements(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_center_crop_pad(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_eyelike(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_bitwise(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* Det and MaxRoiPool (blis_detroi.c). */
int32_t mi__blis_prep_det(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_max_roi_pool(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* 1 when runtime tensor t is touched only by those ops of kernel d (any copyable type: they check it). */
int mi__blis_elem_tensor(const mi_kernel_desc_t *d, int32_t t);
int32_t mi__blis_prep_topk(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);             /* blis_seqops.c */
int32_t mi__blis_prep_compress(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);         /* blis_seqops.c */
int32_t mi__blis_prep_reverse_sequence(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err); /* blis_seqops.c */
int32_t mi__blis_prep_argminmax(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);        /* blis_select.c */
int32_t mi__blis_prep_stft(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);             /* blis_stft.c: STFT, DFT */
int32_t mi__blis_prep_nary(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_cumsum(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_trilu(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_lstm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* GRU and RNN (blis_gru.c). */
int32_t mi__blis_prep_gru(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* GroupNormalization, MeanVarianceNormalization, LpNormalization (blis_gnorm.c). */
int32_t mi__blis_prep_groupnorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_mvn(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_lpnorm(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* `rows` rows of `len` contiguous floats of tensor x, each reduced into one float of y: kind 0
 * sum |v| (ReduceL1), 1 sum v^2 (ReduceSumSquare), 2 log sum v (ReduceLogSum). */
int32_t mi__blis_prep_reduce_rows(mi__blis_prep_t *p, mi__blis_step_t *s, int32_t kind, int64_t rows, int64_t len,
                                  int32_t x, int32_t y, mi_error_t *err);
/* CastLike, GatherND, ScatterElements, Hardmax, OneHot (blis_pick.c). */
int32_t mi__blis_prep_castlike(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_gather_nd(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_scatter_elements(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_hardmax(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
int32_t mi__blis_prep_onehot(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err);
/* 1 when runtime tensor t is an input of kernel d that only Gather / GatherND / ScatterElements
 * (input 1) and OneHot (input 0) nodes read, as their indices (INT64 or INT32, which those preps
 * check). */
int mi__blis_index_input(const mi_kernel_desc_t *d, int32_t t);
/* 1 when runtime tensor t is INT64, INT32 or BOOL and every node of kernel d touching it only moves
 * it (Reshape, Flatten, Squeeze, Unsqueeze, Identity: byte copies) or reads it in a Cast to FLOAT
 * (blis_shape.c): a BERT export's attention mask on its way to the float mask. */
int mi__blis_int_move_tensor(const mi_kernel_desc_t *d, int32_t t);

/* ---- elementwise epilogue shared by Conv and the standalone activations */
enum {
  MI__ACT_NONE = 0,
  MI__ACT_RELU,
  MI__ACT_LEAKY,
  MI__ACT_CLIP,
  MI__ACT_HSIGMOID,
  MI__ACT_HSWISH,
  MI__ACT_SIGMOID,
  MI__ACT_TANH,
  MI__ACT_ERF,
  MI__ACT_GELU,
  MI__ACT_GELU_TANH,
  MI__ACT_SQRT,
  MI__ACT_LOG,
  MI__ACT_EXP,
  MI__ACT_NEG,
  MI__ACT_ABS,
  MI__ACT_RECIP,
  MI__ACT_ELU,
  MI__ACT_SOFTPLUS,
  MI__ACT_FLOOR,
  MI__ACT_CEIL,
  MI__ACT_IDENTITY,
  MI__ACT_ROUND,
  MI__ACT_SIGN,   /* standalone only: mi__blis_act_of does not offer them for fusion */
  MI__ACT_AFFINE, /* x * a + b: a Mul / Add by a constant scalar in a conv's chain (blis_conv.c) */
  /* standalone only (blis_act2.c): mi__blis_act_of does not offer them for fusion */
  MI__ACT_SELU,
  MI__ACT_CELU,
  MI__ACT_SOFTSIGN,
  MI__ACT_MISH,
  MI__ACT_THRESH,
  MI__ACT_SHRINK,
  MI__ACT_COS, /* the trigonometric and hyperbolic functions: libm per element */
  MI__ACT_SIN,
  MI__ACT_TAN,
  MI__ACT_ASIN,
  MI__ACT_ACOS,
  MI__ACT_ATAN,
  MI__ACT_SINH,
  MI__ACT_COSH,
  MI__ACT_ASINH,
  MI__ACT_ACOSH,
  MI__ACT_ATANH
};
/* The standalone activations of blis_act2.c: their MI__ACT_* kind and parameters (0: not one of
 * them), and their loops (0: not one of their kinds). */
int mi__blis_act2_of(const mi_node_desc_t *n, int32_t *kind, float *a, float *b);
int mi__blis_act2_apply(int32_t kind, float a, float b, float *x, int64_t n);
/* Mish on the vector exp of blis_vmath.c (0: no vector unit at `simd`, x untouched). */
int mi__blis_act2_simd(int32_t simd, int32_t kind, float *x, int64_t n);
/* Maps an activation node to MI__ACT_* and its two parameters; 0 when not an activation. */
int mi__blis_act_of(const mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t *kind, float *a,
                    float *b);
void mi__blis_act_apply(int32_t kind, float a, float b, float *x, int64_t n);

/* Variant table (for descriptions and validation). */
typedef struct mi__blis_variant {
  const char *id, *op, *description;
  uint32_t layouts, fuse;
  const char *knobs;
} mi__blis_variant_t;
extern const mi__blis_variant_t mi__blis_variants[];
extern const int32_t mi__blis_variant_n;
const mi__blis_variant_t *mi__blis_find_variant(const char *id);

/* Declared here so kernel and plugin files agree. */
int32_t mi__blis_check_knobs(mi_plugin_ctx_t *ctx, const mi_knob_value_t *knobs, int32_t n,
                             mi_error_t *err);
int mi__blis_is_direct_id(const char *id);
void *mi__blis_buffer_data(mi_buffer_t *b, uint64_t *bytes);
/* The range a kernel recorded on the buffer when it wrote it: 1 and *lo, *hi while no write has
 * touched the buffer's memory since (any kernel output or buffer_write on it or a view of it),
 * else 0. Views neither carry nor give a range. */
int mi__blis_buffer_range(const mi_buffer_t *b, float *lo, float *hi);
/* Marks a buffer's memory written (before kernel_run's steps); then records the range when known. */
void mi__blis_buffer_written(mi_buffer_t *b);
void mi__blis_buffer_set_range(mi_buffer_t *b, float lo, float hi);
/* A kernel that would take this input's range found none: the next kernel to write the buffer
 * finds it (the host's memory plan gives a tensor the same buffer every run, so from the second
 * run on); mi__blis_buffer_range_asked says so. No producer finds a range no one reads. */
void mi__blis_buffer_ask_range(mi_buffer_t *b);
int mi__blis_buffer_range_asked(const mi_buffer_t *b);
/* ---- ranges (blis_range.c) */
void mi__blis_range_reset(mi__blis_range_t *r);
void mi__blis_range_merge(mi__blis_range_t *r, float lo, float hi);
void mi__blis_range_get(const mi__blis_range_t *r, float *lo, float *hi);
/* The range of n floats into *lo, *hi (which start at 0 or a part's range so far). */
void mi__blis_minmax(int32_t simd, const float *x, int64_t n, float *lo, float *hi);
#endif
