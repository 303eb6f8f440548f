/* ocl_src_shape.c - OpenCL C of the data-movement ops with index arithmetic: Pad, Gather and
 * Resize (Slice and Split reuse the strided copy of the element-wise program). */
#include "ocl.h"

const char mi__ocl_src_shape[] =
    /* shp: out dims[r], in dims[r], in strides[r], pad begin[r]; mode 0 constant, 1 reflect,
     * 2 edge. A negative pad crops, which the same arithmetic covers. */
    "__kernel void pad_nd(__global const float *x, __global float *y, int n, int r,\n"
    "                     __global const int *shp, int mode, float value) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  int rem = i, off = 0, outside = 0;\n"
    "  for (int d = r - 1; d >= 0; d--) {\n"
    "    int c = rem % shp[d]; rem /= shp[d];\n"
    "    int len = shp[r + d], s = c - shp[3 * r + d];\n"
    "    if (s < 0 || s >= len) {\n"
    "      if (mode == 0) { outside = 1; s = 0; }\n"
    "      else if (mode == 2) s = s < 0 ? 0 : len - 1;\n"
    "      else if (len == 1) s = 0;\n"
    "      else {\n"
    "        int per = 2 * (len - 1);\n"
    "        s = s % per; if (s < 0) s += per;\n"
    "        if (s >= len) s = per - s;\n"
    "      }\n"
    "    }\n"
    "    off += s * shp[2 * r + d];\n"
    "  }\n"
    "  y[i] = outside ? value : x[off];\n"
    "}\n"
    /* y[o, j, t] = x[o, idx[j], t]: outer o, nidx indices j, inner t */
    "__kernel void gather_axis(__global const float *x, __global float *y, int n, int nidx,\n"
    "                          int inner, int k, __global const int *idx) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  int t = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);\n"
    "  y[i] = x[(o * k + idx[j]) * inner + t];\n"
    "}\n"
    /* 2-D resize over the last two axes with per-axis tables: rows (h0, h1, wh), columns
     * (w0, w1, ww). The H blend comes first, as in the reference's axis order. */
    "__kernel void resize_hw(__global const float *x, __global float *y, int n, int hi, int wi,\n"
    "                        int ho, int wo, __global const int *tab, __global const float *wt) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  int ow = i % wo, oh = (i / wo) % ho, o = i / (wo * ho);\n"
    "  int h0 = tab[oh], h1 = tab[ho + oh], w0 = tab[2 * ho + ow], w1 = tab[2 * ho + wo + ow];\n"
    "  float fh = wt[oh], fw = wt[ho + ow];\n"
    "  __global const float *b = x + (size_t)o * hi * wi;\n"
    "  float c0 = (1.0f - fh) * b[h0 * wi + w0] + fh * b[h1 * wi + w0];\n"
    "  float c1 = (1.0f - fh) * b[h0 * wi + w1] + fh * b[h1 * wi + w1];\n"
    "  y[i] = (1.0f - fw) * c0 + fw * c1;\n"
    "}\n";
