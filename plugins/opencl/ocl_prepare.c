/* ocl_prepare.c - kernel_prepare: validation, variant and knob choice, and the helpers that
 * build launches (programs, arguments, constant uploads, work sizes). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

int32_t mi__ocl_upload(ocl_prep_t *p, const void *data, size_t bytes, ocl_arg_t *out) {
  cl_int rc;
  cl_mem m;
  mi_kernel_t *k = p->k;
  if (k->nb >= OCL_MAX_BUFS)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "opencl: more than %d constant buffers", OCL_MAX_BUFS);
  m = clCreateBuffer(p->dev->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes ? bytes : 4,
                     (void *)data, &rc);
  if (!m) return mi__ocl_fail(p->err, "clCreateBuffer", rc);
  k->bufs[k->nb] = m;
  memset(out, 0, sizeof *out);
  out->kind = ARG_BUF;
  out->index = k->nb++;
  return MI_OK;
}

int32_t mi__ocl_bind(ocl_prep_t *p, int t, ocl_arg_t *out) {
  const mi_tensor_desc_t *td = mi__ocl_tensor(p->desc, t);
  int32_t slot;
  int io = mi_sdk_kernel_io(p->desc, t, &slot);
  memset(out, 0, sizeof *out);
  if (io != MI_SDK_IO_NONE) {
    out->kind = io == MI_SDK_IO_INPUT ? ARG_IN : ARG_OUT;
    out->index = slot;
    return MI_OK;
  }
  if (td && td->data && td->dtype == MI_DTYPE_FLOAT32)
    return mi__ocl_upload(p, td->data, (size_t)mi_sdk_numel(td) * 4, out);
  return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                       "opencl: tensor %d is neither a runtime input, an output nor FP32 data", t);
}

ocl_launch_t *mi__ocl_launch_new(ocl_prep_t *p, const char *source, const char *options,
                                 const char *name, int32_t *rc) {
  size_t n1 = strlen(mi__ocl_src_prelude), n2 = strlen(source);
  char *full;
  cl_program prog = NULL;
  ocl_launch_t *l;
  cl_int crc;
  if (p->k->nl >= OCL_MAX_LAUNCHES) {
    *rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "opencl: more than %d launches", OCL_MAX_LAUNCHES);
    return NULL;
  }
  full = malloc(n1 + n2 + 1);
  if (!full) {
    *rc = mi_sdk_errorf(p->err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    return NULL;
  }
  memcpy(full, mi__ocl_src_prelude, n1);
  memcpy(full + n1, source, n2 + 1);
  *rc = mi__ocl_program(p->ctx, p->dev, full, options, &prog, p->err);
  free(full);
  if (*rc != MI_OK) return NULL;
  l = &p->k->launches[p->k->nl];
  memset(l, 0, sizeof *l);
  l->k = clCreateKernel(prog, name, &crc);
  if (!l->k) {
    *rc = mi__ocl_fail(p->err, "clCreateKernel", crc);
    return NULL;
  }
  p->k->nl++;
  return l;
}

ocl_launch_t *mi__ocl_launch_io(ocl_prep_t *p, const char *src, const char *name, int t_in,
                                int t_out, int32_t *st) {
  ocl_arg_t a;
  ocl_launch_t *l = mi__ocl_launch_new(p, src, "", name, st);
  if (!l) return NULL;
  if (t_in >= 0) {
    if ((*st = mi__ocl_bind(p, t_in, &a)) != MI_OK) return NULL;
    mi__ocl_arg(l, a);
  }
  if ((*st = mi__ocl_bind(p, t_out, &a)) != MI_OK) return NULL;
  mi__ocl_arg(l, a);
  return l;
}

int32_t mi__ocl_arg_ints(ocl_prep_t *p, ocl_launch_t *l, const cl_int *v, int n) {
  ocl_arg_t a;
  int32_t st = mi__ocl_upload(p, v, (size_t)(n > 0 ? n : 1) * sizeof *v, &a);
  if (st == MI_OK) mi__ocl_arg(l, a);
  return st;
}

void mi__ocl_arg(ocl_launch_t *l, ocl_arg_t a) {
  if (l->nargs < OCL_MAX_ARGS) l->args[l->nargs++] = a;
}

void mi__ocl_arg_raw(ocl_launch_t *l, const void *v, size_t size) {
  ocl_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = ARG_RAW;
  a.size = size;
  memcpy(&a.v, v, size);
  mi__ocl_arg(l, a);
}

void mi__ocl_arg_int(ocl_launch_t *l, cl_int v) { mi__ocl_arg_raw(l, &v, sizeof v); }
void mi__ocl_arg_intv(ocl_launch_t *l, const cl_int *v, int n) {
  int i;
  for (i = 0; i < n; i++) mi__ocl_arg_raw(l, &v[i], sizeof v[i]);
}
void mi__ocl_arg_float(ocl_launch_t *l, cl_float v) { mi__ocl_arg_raw(l, &v, sizeof v); }

int32_t mi__ocl_arg_epi(ocl_prep_t *p, ocl_launch_t *l, const ocl_epi_t *e, int chan_inner) {
  ocl_arg_t a;
  cl_int4 ei;
  cl_float4 ef;
  cl_int2 ch;
  int32_t st;
  int i;
  memset(&a, 0, sizeof a);
  a.kind = ARG_DUMMY;
  if (e->flags & 1) {
    if ((st = mi__ocl_upload(p, e->scale, (size_t)e->nchan * 4, &a)) != MI_OK) return st;
    mi__ocl_arg(l, a);
    if ((st = mi__ocl_upload(p, e->shift, (size_t)e->nchan * 4, &a)) != MI_OK) return st;
    mi__ocl_arg(l, a);
  } else {
    mi__ocl_arg(l, a);
    mi__ocl_arg(l, a);
  }
  if (e->flags & 2) {
    if ((st = mi__ocl_bind(p, e->res_tensor, &a)) != MI_OK) return st;
  } else {
    a.kind = ARG_DUMMY;
  }
  mi__ocl_arg(l, a);
  memset(&ei, 0, sizeof ei);
  ei.s[0] = e->flags;
  ei.s[1] = e->act0;
  ei.s[2] = e->act1;
  for (i = 0; i < 4; i++) ef.s[i] = e->p[i];
  ch.s[0] = chan_inner > 0 ? chan_inner : 1;
  ch.s[1] = e->nchan > 0 ? e->nchan : 1;
  mi__ocl_arg_raw(l, &ei, sizeof ei);
  mi__ocl_arg_raw(l, &ef, sizeof ef);
  mi__ocl_arg_raw(l, &ch, sizeof ch);
  return MI_OK;
}

void mi__ocl_grid1(ocl_launch_t *l, size_t n, size_t wg) {
  if (wg < 1) wg = 1;
  l->dim = 1;
  l->gws[0] = ((n + wg - 1) / wg) * wg;
  if (l->gws[0] == 0) l->gws[0] = wg;
  l->gws[1] = l->gws[2] = 1;
  l->lws[0] = wg;
  l->lws[1] = l->lws[2] = 1;
  l->has_lws = 1;
}

int32_t mi__ocl_check_wg(ocl_prep_t *p, ocl_launch_t *l) {
  size_t kmax = 0, want = l->lws[0] * l->lws[1] * l->lws[2];
  cl_int rc;
  if (!l->has_lws) return MI_OK;
  rc = clGetKernelWorkGroupInfo(l->k, p->dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                NULL);
  if (rc != CL_SUCCESS) return mi__ocl_fail(p->err, "clGetKernelWorkGroupInfo", rc);
  if (want > kmax)
    return mi_sdk_errorf(p->err, MI_ERR_INVALID_CONFIG,
                         "%s: work-group of %zu work-items exceeds CL_KERNEL_WORK_GROUP_SIZE %zu "
                         "of this kernel",
                         p->var->v.id, want, kmax);
  return MI_OK;
}

static int32_t io_sizes(const mi_kernel_desc_t *d, mi_kernel_t *k, mi_error_t *err) {
  int32_t i;
  for (i = 0; i < d->input_count + d->output_count; i++) {
    int32_t t = i < d->input_count ? d->inputs[i] : d->outputs[i - d->input_count];
    const mi_tensor_desc_t *td = mi__ocl_tensor(d, t);
    if (!td) return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "opencl: bad tensor index %d", (int)t);
    if (i < d->input_count)
      k->in_bytes[i] = mi_sdk_tensor_bytes(td);
    else
      k->out_bytes[i - d->input_count] = mi_sdk_tensor_bytes(td);
  }
  k->n_in = d->input_count;
  k->n_out = d->output_count;
  return MI_OK;
}

static const ocl_variant_t *default_variant(const ocl_device_t *dev, const mi_kernel_desc_t *d) {
  const mi_node_desc_t *n = d->nodes[0];
  if (strcmp(n->op_type, "Conv") == 0 && n->input_count >= 2) {
    const mi_tensor_desc_t *x = mi__ocl_tensor(d, n->inputs[0]), *w = mi__ocl_tensor(d, n->inputs[1]);
    int64_t g = mi_sdk_attr_int(n, "group", 1);
    int dw = x && x->rank == 4 && g > 1 && g == x->dims[1];
    /* On a CPU device the register-tiled direct convs beat im2col + a local-memory GEMM at
     * their default blocks (3-12x on PoCL, docs/backends/opencl.md), for the reason below;
     * they take a constant FP32 filter of at most 49 taps. */
    if (dev->desc.kind == MI_DEVICE_CPU && x && x->rank == 4 && w && w->rank == 4 && w->data &&
        w->dtype == MI_DTYPE_FLOAT32 && w->dims[2] * w->dims[3] <= 49 &&
        (dw ? w->dims[0] % x->dims[1] == 0 : !(w->dims[1] == 1 && w->dims[0] == g)))
      return mi__ocl_variant_find(dw ? "conv.dw_tiled" : "conv.tiled");
    if (dw) return mi__ocl_variant_find("conv.depthwise");
    /* Elsewhere (GPUs) the local-memory tiled GEMM, its column tiles read from X through the
     * im2col map: conv.im2col_gemm's kernel without the column buffer and its pass (1.1-1.3x
     * faster than it on PoCL for every non-pointwise shape of tools/bench/opencl, equal on
     * pointwise ones, where both read X as the matrix). */
    return mi__ocl_variant_find("conv.implicit_gemm");
  }
  /* On a CPU device __local memory is ordinary memory plus barriers, so staging tiles costs
   * more than it saves: register blocking wins there (measured by tools/bench/opencl). */
  if (dev->desc.kind == MI_DEVICE_CPU && strcmp(n->op_type, "Gemm") == 0)
    return mi__ocl_variant_find("gemm.regblock");
  if (dev->desc.kind == MI_DEVICE_CPU && strcmp(n->op_type, "MatMul") == 0)
    return mi__ocl_variant_find("matmul.regblock");
  return mi__ocl_variant_default(n->op_type);
}

int32_t mi__ocl_kernel_prepare(mi_plugin_ctx_t *ctx, uint32_t device, const mi_kernel_desc_t *desc,
                               mi_kernel_t **out, mi_error_t *err) {
  ocl_prep_t p = {.ctx = ctx, .desc = desc, .err = err};
  const mi_sdk_variant_t *named;
  int32_t st;
  const char *op;
  if (out) *out = NULL;
  if (!ctx || !desc || !out || !desc->tensors)
    return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "kernel_prepare: NULL or empty description");
  if ((st = mi_sdk_kernel_variant(ctx, device, NULL, desc, &named, err)) != MI_OK) return st;
  p.dev = &ctx->devs[device];
  op = desc->nodes[0]->op_type;
  if (!(p.var = named ? (const ocl_variant_t *)named : default_variant(p.dev, desc)))
    return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "opencl: op %s is not implemented", op);
  st = mi__ocl_knobs_resolve(p.dev, p.var, desc->knobs, desc->knob_count, &p.kn, err);
  if (st != MI_OK) return st;
  if ((st = mi_sdk_check_fp32_kernel(desc, OCL_PLUGIN_NAME, OCL_MAX_IO, INT_MAX, err)) != MI_OK)
    return st;
  p.k = calloc(1, sizeof *p.k);
  if (!p.k) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
  p.k->dev = p.dev;
  p.k->device = device;
  if (desc->nodes[0]->name) snprintf(p.k->node, sizeof p.k->node, "%s", desc->nodes[0]->name);
  st = io_sizes(desc, p.k, err);
  if (st == MI_OK) {
    if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0)
      st = mi__ocl_prepare_conv(&p);
    else if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0)
      st = mi__ocl_prepare_gemm(&p);
    else
      st = mi__ocl_prepare_op(&p);
  }
  if (st != MI_OK) {
    mi__ocl_kernel_release(ctx, p.k);
    return st;
  }
  *out = p.k;
  return MI_OK;
}
