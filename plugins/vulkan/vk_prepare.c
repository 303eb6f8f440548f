/* vk_prepare.c - kernel_prepare: validation, variant and knob choice, fused-epilogue parsing,
 * and the helpers that build dispatches (pipelines, bindings, constant uploads, grids). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

const mi_tensor_desc_t *mi__vk_tensor(const mi_kernel_desc_t *d, int t) {
  return t >= 0 && t < d->tensor_count ? d->tensors[t] : NULL;
}

int32_t mi__vk_upload(vk_prep_t *p, const void *data, size_t bytes, vk_ref_t *out) {
  mi_kernel_t *k = p->k;
  mi_buffer_t *b = NULL;
  int32_t rc;
  if (k->nown >= VK_MAX_OWN)
    return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: more than %d constant buffers", VK_MAX_OWN);
  rc = mi__vk_buffer_alloc(p->ctx, k->device, bytes, &b, p->err);
  if (rc == MI_OK) rc = mi__vk_buffer_write(p->ctx, b, 0, data, bytes, p->err);
  if (rc != MI_OK) {
    mi__vk_buffer_free(p->ctx, b);
    return rc;
  }
  k->own[k->nown] = b;
  out->kind = REF_OWN;
  out->index = k->nown++;
  return MI_OK;
}

int32_t mi__vk_bind(vk_prep_t *p, int t, vk_ref_t *out) {
  const mi_tensor_desc_t *td = mi__vk_tensor(p->desc, t);
  /* A run buffer is referred to by its slot; REF_IN and REF_OUT are the SDK's values. */
  if ((out->kind = mi_sdk_kernel_io(p->desc, t, &out->index)) != MI_SDK_IO_NONE) return MI_OK;
  if (td && td->data && td->dtype == MI_DTYPE_FLOAT32)
    return mi__vk_upload(p, td->data, (size_t)mi_sdk_numel(td) * 4, out);
  return mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED,
                       "vulkan: tensor %d is neither a runtime input, an output nor FP32 data", t);
}

vk_disp_t *mi__vk_disp_new(vk_prep_t *p, const char *shader, int32_t *rc) {
  vk_disp_t *d;
  if (p->k->nd >= VK_MAX_DISP) {
    *rc = mi_sdk_errorf(p->err, MI_ERR_UNSUPPORTED, "vulkan: more than %d dispatches", VK_MAX_DISP);
    return NULL;
  }
  d = &p->k->disp[p->k->nd];
  memset(d, 0, sizeof *d);
  if (shader) {
    *rc = mi__vk_pipeline(p->ctx, p->dev, shader, p->spec, &d->pipe, p->err);
    if (*rc != MI_OK) return NULL;
  }
  d->groups[0] = d->groups[1] = d->groups[2] = 1;
  p->k->nd++;
  *rc = MI_OK;
  return d;
}

void mi__vk_grid1(vk_prep_t *p, vk_disp_t *d, uint64_t n) {
  uint64_t g = (n + p->spec[K_LOCAL_X] - 1) / p->spec[K_LOCAL_X];
  uint64_t gx = g, gy = 1, maxx = p->dev->props.limits.maxComputeWorkGroupCount[0];
  /* Large grids fold into y; the shaders rebuild the linear index from both. */
  if (gx > maxx) {
    gx = maxx < 65535 ? maxx : 65535;
    gy = (g + gx - 1) / gx;
  }
  d->groups[0] = (uint32_t)(gx ? gx : 1);
  d->groups[1] = (uint32_t)gy;
  d->groups[2] = 1;
}

int mi__vk_act_of(const mi_kernel_desc_t *desc, const mi_node_desc_t *n, int *code, float *a,
                  float *b) {
  const char *op = n->op_type;
  *a = *b = 0.0f;
  if (strcmp(op, "Relu") == 0) *code = ACT_RELU;
  else if (strcmp(op, "Clip") == 0) {
    /* Bounds are attributes up to opset 10 and optional inputs from opset 11. */
    int attrs = n->opset > 0 && n->opset < 11;
    *code = ACT_CLIP;
    *a = attrs ? mi_sdk_attr_float(n, "min", -INFINITY) : -INFINITY;
    *b = attrs ? mi_sdk_attr_float(n, "max", INFINITY) : INFINITY;
    for (int i = 1; i < 3 && i < n->input_count; i++) {
      const mi_tensor_desc_t *t = mi__vk_tensor(desc, n->inputs[i]);
      if (n->inputs[i] < 0) continue;
      if (!t || !t->data || t->dtype != MI_DTYPE_FLOAT32 || mi_sdk_numel(t) != 1) return 0;
      *(i == 1 ? a : b) = *(const float *)t->data;
    }
  } else if (strcmp(op, "LeakyRelu") == 0)
    *code = ACT_LEAKY, *a = mi_sdk_attr_float(n, "alpha", 0.01f);
  else if (strcmp(op, "Sigmoid") == 0)
    *code = ACT_SIGMOID;
  else if (strcmp(op, "Tanh") == 0)
    *code = ACT_TANH;
  else if (strcmp(op, "HardSigmoid") == 0)
    *code = ACT_HSIGMOID, *a = mi_sdk_attr_float(n, "alpha", 0.2f), *b = mi_sdk_attr_float(n, "beta", 0.5f);
  else if (strcmp(op, "HardSwish") == 0)
    *code = ACT_HSWISH;
  else if (strcmp(op, "Gelu") == 0) {
    const mi_attr_t *ap = mi_sdk_attr(n, "approximate");
    *code = ap && ap->s && strcmp(ap->s, "tanh") == 0 ? ACT_GELU_TANH : ACT_GELU;
  } else if (strcmp(op, "Erf") == 0)
    *code = ACT_ERF;
  else if (strcmp(op, "Exp") == 0)
    *code = ACT_EXP;
  else if (strcmp(op, "Log") == 0)
    *code = ACT_LOG;
  else if (strcmp(op, "Sqrt") == 0)
    *code = ACT_SQRT;
  else if (strcmp(op, "Neg") == 0)
    *code = ACT_NEG;
  else if (strcmp(op, "Abs") == 0)
    *code = ACT_ABS;
  else if (strcmp(op, "Reciprocal") == 0)
    *code = ACT_RECIP;
  else if (strcmp(op, "Elu") == 0)
    *code = ACT_ELU, *a = mi_sdk_attr_float(n, "alpha", 1.0f);
  else if (strcmp(op, "Softplus") == 0)
    *code = ACT_SOFTPLUS;
  else if (strcmp(op, "Floor") == 0)
    *code = ACT_FLOOR;
  else if (strcmp(op, "Ceil") == 0)
    *code = ACT_CEIL;
  else if (strcmp(op, "Identity") == 0)
    *code = ACT_NONE;
  else
    return 0;
  return 1;
}

void mi__vk_epi_free(vk_epi_t *e) {
  free(e->scale);
  free(e->shift);
  e->scale = e->shift = NULL;
}

/* Per-channel constant operand (numel 1 or nchan) as a float pointer and its stride. */
static const float *chan_const(const mi_tensor_desc_t *t, int nchan, int *step) {
  int64_t n;
  if (!t || !t->data || t->dtype != MI_DTYPE_FLOAT32) return NULL;
  n = mi_sdk_numel(t);
  if (n == 1) *step = 0;
  else if (n == nchan)
    *step = 1;
  else
    return NULL;
  return t->data;
}

int32_t mi__vk_epi_parse(const mi_kernel_desc_t *desc, int first, int t_out, int nchan,
                         int cinner, vk_epi_t *e, mi_error_t *err) {
  int i, c, cur = t_out, acts = 0;
  memset(e, 0, sizeof *e);
  e->res_tensor = -1;
  e->nchan = nchan > 0 ? nchan : 1;
  e->cinner = cinner > 0 ? cinner : 1;
  e->scale = malloc((size_t)e->nchan * sizeof(float));
  e->shift = malloc((size_t)e->nchan * sizeof(float));
  if (!e->scale || !e->shift) {
    mi__vk_epi_free(e);
    return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
  }
  for (c = 0; c < e->nchan; c++) e->scale[c] = 1.0f, e->shift[c] = 0.0f;
  for (i = first; i < desc->node_count; i++) {
    const mi_node_desc_t *n = desc->nodes[i];
    const char *op = n->op_type;
    int code, other = -1;
    float a, b;
    if (n->input_count < 1 || n->output_count != 1) goto bad;
    if (n->input_count >= 2) other = n->inputs[0] == cur ? n->inputs[1] : n->inputs[0];
    if (n->inputs[0] != cur && !(n->input_count == 2 && n->inputs[1] == cur)) goto bad;
    if (strcmp(op, "BatchNormalization") == 0 && !acts && !(e->flags & 2)) {
      const mi_tensor_desc_t *t[4];
      int st[4], k;
      const float *v[4];
      if (n->input_count < 5 || n->inputs[0] != cur) goto bad;
      for (k = 0; k < 4; k++) {
        t[k] = mi__vk_tensor(desc, n->inputs[k + 1]);
        if (!(v[k] = chan_const(t[k], e->nchan, &st[k]))) goto bad;
      }
      for (c = 0; c < e->nchan; c++) {
        float s = v[0][c * st[0]] / sqrtf(v[3][c * st[3]] + mi_sdk_attr_float(n, "epsilon", 1e-5f));
        e->scale[c] *= s;
        e->shift[c] = (e->shift[c] - v[2][c * st[2]]) * s + v[1][c * st[1]];
      }
      e->flags |= 1;
    } else if ((strcmp(op, "Add") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Sub") == 0) &&
               !acts && !(e->flags & 2) &&
               mi__vk_tensor(desc, other) && mi__vk_tensor(desc, other)->data) {
      int st;
      const float *v = chan_const(mi__vk_tensor(desc, other), e->nchan, &st);
      if (!v || (op[0] == 'S' && n->inputs[0] != cur)) goto bad;
      for (c = 0; c < e->nchan; c++) {
        if (op[0] == 'A') e->shift[c] += v[c * st];
        else if (op[0] == 'S')
          e->shift[c] -= v[c * st];
        else
          e->scale[c] *= v[c * st], e->shift[c] *= v[c * st];
      }
      e->flags |= 1;
    } else if (strcmp(op, "Add") == 0 && !(e->flags & 2) && acts < 2) {
      const mi_tensor_desc_t *r = mi__vk_tensor(desc, other), *o = mi__vk_tensor(desc, cur);
      if (!r || !o || r->data || mi_sdk_numel(r) != mi_sdk_numel(o) || r->rank != o->rank) goto bad;
      e->flags |= 2;
      e->res_tensor = other;
      acts = 1; /* an activation after the residual goes to act1 */
    } else if (n->input_count == 1 || strcmp(op, "Clip") == 0) {
      if (!mi__vk_act_of(desc, n, &code, &a, &b) || acts >= 2) goto bad;
      if (!acts && !(e->flags & 2)) e->act0 = code, e->p[0] = a, e->p[1] = b, acts = 1;
      else
        e->act1 = code, e->p[2] = a, e->p[3] = b, acts = 2;
    } else {
      goto bad;
    }
    cur = n->outputs[0];
  }
  e->out_tensor = cur;
  return MI_OK;
bad:
  mi__vk_epi_free(e);
  return mi_sdk_errorf(err, MI_ERR_UNSUPPORTED, "vulkan: node %d (%s) cannot be fused as an epilogue",
                       i, desc->nodes[i]->op_type ? desc->nodes[i]->op_type : "?");
}

int32_t mi__vk_epi_bind(vk_prep_t *p, vk_disp_t *d, const vk_epi_t *e, int at) {
  int32_t rc;
  float f[4];
  if (e->flags & 1) {
    if ((rc = mi__vk_upload(p, e->scale, (size_t)e->nchan * 4, &d->bind[3])) != MI_OK) return rc;
    if ((rc = mi__vk_upload(p, e->shift, (size_t)e->nchan * 4, &d->bind[4])) != MI_OK) return rc;
  }
  if ((e->flags & 2) && (rc = mi__vk_bind(p, e->res_tensor, &d->bind[5])) != MI_OK) return rc;
  d->push[at + 0] = (uint32_t)e->flags;
  d->push[at + 1] = (uint32_t)e->act0;
  d->push[at + 2] = (uint32_t)e->act1;
  d->push[at + 3] = (uint32_t)e->nchan;
  d->push[at + 4] = (uint32_t)e->cinner;
  memcpy(f, e->p, sizeof f);
  memcpy(&d->push[at + 5], f, sizeof f);
  return MI_OK;
}
