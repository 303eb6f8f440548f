/* test_exec_attn.c - com.microsoft Attention: the reference on values worked out by hand (each
 * mask_index form, unidirectional, bias, past and present, attention_bias, qkv_hidden_sizes),
 * inferred shapes equal to the run's, malformed or unsupported nodes refused in one line; then
 * the loader's lowering to standard ops against the node's reference (masks given and constant,
 * a 1D mask whose length is not known at load), and blis-cpu on the lowered graph with no host
 * step, at every SIMD cap. */
#include "test_attn_util.h"

typedef struct aspec {
  int64_t b, s, hin, heads, qh, kh, vh;
  int qkv_attr;   /* write qkv_hidden_sizes */
  int bias;       /* a bias input */
  int mask;       /* 0 none, 1 [B] lengths, 2 [2B] ends and starts, 3 [B, T], 4 [B, S, T], 5 4D */
  int mask_const; /* the mask an initializer */
  int unidir;
  int64_t past; /* past sequence length (0: no past input) */
  int abias;    /* 0 none, 1 [B, N, S, T], 2 [1, 1, S, T] */
  int present;  /* a present output */
  float scale, filter;
} aspec_t;

/* The inputs' values: given, else random (mask values valid for their form). */
typedef struct avals {
  const float *x, *w, *bias, *past, *abias;
  const int32_t *mask;
} avals_t;

static int64_t mask_numel(const aspec_t *sp, int32_t *rank, int64_t *dims) {
  int64_t t = sp->s + sp->past;
  switch (sp->mask) {
  case 1: *rank = 1, dims[0] = sp->b; return sp->b;
  case 2: *rank = 1, dims[0] = 2 * sp->b; return 2 * sp->b;
  case 3: *rank = 2, dims[0] = sp->b, dims[1] = t; return sp->b * t;
  case 4: *rank = 3, dims[0] = sp->b, dims[1] = sp->s, dims[2] = t; return sp->b * sp->s * t;
  default: *rank = 4, dims[0] = sp->b, dims[1] = 1, dims[2] = t, dims[3] = t; return sp->b * t * t;
  }
}

/* x -> Attention -> y (and present); graph inputs x, mask, past, attention_bias in that order. */
static mi_graph_t *attn_graph(const aspec_t *sp, const avals_t *v, uint64_t seed) {
  mi_graph_t *g = mi_graph_create("attn");
  int64_t wc = sp->qh + sp->kh + sp->vh, t = sp->s + sp->past, hd = sp->qh / sp->heads;
  int64_t xd[3] = {sp->b, sp->s, sp->hin}, wd[2] = {sp->hin, wc}, bd[1] = {wc}, md[4],
          pd[5] = {2, sp->b, sp->heads, sp->past, hd}, ad[4] = {sp->b, sp->heads, sp->s, t};
  float *w = malloc(sizeof *w * (size_t)(sp->hin * wc)), *bias = malloc(sizeof *bias * (size_t)wc);
  for (int64_t i = 0; i < sp->hin * wc; i++) w[i] = v && v->w ? v->w[i] : rnd(&seed);
  for (int64_t i = 0; i < wc; i++) bias[i] = v && v->bias ? v->bias[i] : rnd(&seed);
  int32_t ins[6] = {tin(g, "x", MI_DTYPE_FLOAT32, 3, xd), mi_graph_add_const_f32(g, "w", 2, wd, w), -1, -1, -1, -1};
  if (sp->bias) ins[2] = mi_graph_add_const_f32(g, "bias", 1, bd, bias);
  if (sp->mask) {
    int32_t mr;
    int64_t mn = mask_numel(sp, &mr, md);
    if (sp->mask_const) {
      int32_t *mv = malloc(sizeof *mv * (size_t)mn);
      for (int64_t i = 0; i < mn; i++) mv[i] = v->mask[i];
      ins[3] = mi_graph_add_tensor(g, "mask", MI_DTYPE_INT32, mr, md);
      mi_graph_set_data(g, ins[3], mv, sizeof *mv * (size_t)mn);
      free(mv);
    } else
      ins[3] = tin(g, "mask", MI_DTYPE_INT32, mr, md);
  }
  if (sp->past) ins[4] = tin(g, "past", MI_DTYPE_FLOAT32, 5, pd);
  if (sp->abias) {
    if (sp->abias == 2) ad[0] = ad[1] = 1;
    ins[5] = tin(g, "attention_bias", MI_DTYPE_FLOAT32, 4, ad);
  }
  int32_t nin = sp->abias ? 6 : sp->past ? 5
                            : sp->mask   ? 4
                            : sp->bias   ? 3
                                         : 2;
  int32_t outs[2] = {mi_graph_add_tensor(g, "y", MI_DTYPE_UNDEFINED, -1, NULL),
                     mi_graph_add_tensor(g, "present", MI_DTYPE_UNDEFINED, -1, NULL)};
  int32_t n = mi_graph_add_node(g, "Attention", "attn", nin, ins, sp->present ? 2 : 1, outs);
  free(g->nodes[n].domain);
  g->nodes[n].domain = strdup("com.microsoft");
  mi_node_set_int(g, n, "num_heads", sp->heads);
  if (sp->qkv_attr) mi_node_set_ints(g, n, "qkv_hidden_sizes", 3, (const int64_t[]){sp->qh, sp->kh, sp->vh});
  if (sp->unidir) mi_node_set_int(g, n, "unidirectional", 1);
  if (sp->scale != 0.f) mi_node_set_float(g, n, "scale", sp->scale);
  if (sp->filter != 0.f) mi_node_set_float(g, n, "mask_filter_value", sp->filter);
  mi_graph_add_output(g, outs[0]);
  if (sp->present) mi_graph_add_output(g, outs[1]);
  g->opset = 17;
  free(w), free(bias);
  return g;
}

/* The graph's input arrays (count in *n), from v where given, else random. */
static void attn_inputs(const mi_graph_t *g, const aspec_t *sp, const avals_t *v, uint64_t seed, mi_array_t **in,
                        int32_t *n) {
  *n = 0;
  for (int32_t k = 0; k < g->input_count; k++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[k]];
    int64_t cnt;
    mi_array_t *a = input_array(g, k, &cnt);
    if (!strcmp(t->name, "mask")) {
      int32_t *m = a->data;
      int64_t tt = sp->s + sp->past;
      for (int64_t i = 0; i < cnt; i++) {
        if (v && v->mask) m[i] = v->mask[i];
        else if (sp->mask == 1 || (sp->mask == 2 && i < sp->b))
          m[i] = (int32_t)(1 + lcg(&seed) % (uint64_t)tt); /* an end in 1 .. T */
        else if (sp->mask == 2)
          m[i] = (int32_t)(lcg(&seed) % (uint64_t)m[i - sp->b]); /* a start before it */
        else
          m[i] = (int32_t)(lcg(&seed) % 4 != 0);
      }
    } else {
      const float *src = !v                         ? NULL
                         : !strcmp(t->name, "x")    ? v->x
                         : !strcmp(t->name, "past") ? v->past
                                                    : v->abias;
      float *f = a->data;
      for (int64_t i = 0; i < cnt; i++) f[i] = src ? src[i] : rnd(&seed);
    }
    in[(*n)++] = a;
  }
}

/* One hand case: X = [[1, 0], [0, 1]] (B 1, S 2, hidden 2), one head, Q = K = V = X (weights
 * [I I I]), scale ln 3: a key that scores 1 against one that scores 0 weighs 3 : 1. */
static void hand_case(const char *what, aspec_t sp, const avals_t *extra, const float *want, int64_t vh,
                      const float *want_present) {
  static const float x[4] = {1, 0, 0, 1};
  float w[2 * 8] = {0};
  int64_t wc = sp.qh + sp.kh + sp.vh;
  for (int64_t r = 0; r < 2; r++) {
    w[r * wc + r] = w[r * wc + 2 + r] = 1.f;
    for (int64_t c = 0; c < sp.vh; c++) w[r * wc + 4 + c] = (c % 2) == r ? 1.f : 0.f;
  }
  avals_t v = extra ? *extra : (avals_t){0};
  v.x = x;
  v.w = w;
  mi_graph_t *g = attn_graph(&sp, &v, 1);
  mi_array_t *in[4] = {0}, *out[2] = {0};
  int32_t nin;
  attn_inputs(g, &sp, &v, 1, in, &nin);
  ref_run(g, in, nin, out);
  int64_t yd[3] = {1, 2, vh}, pd[5] = {2, 1, 1, 2 + sp.past, 2};
  expect_f32(what, out[0], 3, yd, want, 1e-6f);
  if (want_present) expect_f32(what, out[1], 5, pd, want_present, 0);
  free_arrays(out, 2);
  free_arrays(in, nin);
  mi_graph_destroy(g);
}

static void hand_values(void) {
  const float l3 = logf(3.f);
  aspec_t base = {1, 2, 2, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, l3, 0};
  aspec_t sp = base;
  hand_case("no mask", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, 2, NULL);
  sp.mask = 1; /* key length 1: only key 0 */
  hand_case("key lengths", sp, &(avals_t){.mask = (const int32_t[]){1}}, (const float[]){1, 0, 1, 0}, 2, NULL);
  sp.mask = 2; /* end 2, start 1: only key 1 */
  hand_case("ends and starts", sp, &(avals_t){.mask = (const int32_t[]){2, 1}}, (const float[]){0, 1, 0, 1}, 2, NULL);
  sp.mask = 3;
  hand_case("2D mask", sp, &(avals_t){.mask = (const int32_t[]){0, 1}}, (const float[]){0, 1, 0, 1}, 2, NULL);
  sp.mask = 4; /* query 0 sees key 0, query 1 key 1 */
  hand_case("3D mask", sp, &(avals_t){.mask = (const int32_t[]){1, 0, 0, 1}}, (const float[]){1, 0, 0, 1}, 2, NULL);
  sp = base;
  sp.unidir = 1; /* query 0 sees key 0 only */
  hand_case("unidirectional", sp, NULL, (const float[]){1, 0, .25f, .75f}, 2, NULL);
  sp = base;
  sp.bias = 1; /* V's bias 1: every output + 1 */
  hand_case("bias", sp, &(avals_t){.bias = (const float[]){0, 0, 0, 0, 1, 1}}, (const float[]){1.75f, 1.25f, 1.25f, 1.75f},
            2, NULL);
  sp = base;
  sp.abias = 2; /* -ln 3 on query 0's key 0: even */
  hand_case("attention_bias", sp, &(avals_t){.abias = (const float[]){-l3, 0, 0, 0}}, (const float[]){.5f, .5f, .25f, .75f},
            2, NULL);
  sp = base;
  sp.past = 1, sp.present = 1; /* a past key 0 (scores 0) with value [2, 2]: 1 : 3 : 1 for query 0 */
  hand_case("past", sp, &(avals_t){.past = (const float[]){0, 0, 2, 2}},
            (const float[]){.2f * 2 + .6f, .2f * 2 + .2f, .2f * 2 + .2f, .2f * 2 + .6f}, 2,
            (const float[]){0, 0, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1});
  sp = base;
  sp.present = 1;
  hand_case("present", sp, NULL, (const float[]){.75f, .25f, .25f, .75f}, 2, (const float[]){1, 0, 0, 1, 1, 0, 0, 1});
  sp = base;
  sp.vh = 4, sp.qkv_attr = 1; /* V [1, 0, 1, 0] and [0, 1, 0, 1] */
  hand_case("qkv_hidden_sizes", sp, NULL, (const float[]){.75f, .25f, .75f, .25f, .25f, .75f, .25f, .75f}, 4, NULL);
}

/* The node refused at shape inference in one line naming it and `want`. */
static void refused(const aspec_t *sp, void (*edit)(mi_graph_t *), const char *want) {
  mi_graph_t *g = attn_graph(sp, NULL, 3);
  if (edit) edit(g);
  expect_refused(g, "attn", want);
}

static void set_rotary(mi_graph_t *g) { mi_node_set_int(g, 0, "do_rotary", 1); }
static void set_share(mi_graph_t *g) { mi_node_set_int(g, 0, "past_present_share_buffer", 1); }
static void no_heads(mi_graph_t *g) { mi_node_set_int(g, 0, "num_heads", 0); }
static void onnx_domain(mi_graph_t *g) {
  free(g->nodes[0].domain);
  g->nodes[0].domain = strdup("");
}

static void malformed(void) {
  aspec_t ok = {2, 3, 8, 2, 8, 8, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  aspec_t m4 = ok, odd = ok, qk = ok, badv = ok;
  m4.mask = 5;
  odd.heads = 3;
  qk.qh = 4, qk.kh = 12, qk.qkv_attr = 1;
  badv.vh = 6, badv.qkv_attr = 1, badv.heads = 4;
  refused(&m4, NULL, "4D mask_index");
  refused(&odd, NULL, "not multiples of num_heads");
  refused(&qk, NULL, "Q and K must be equal");
  refused(&badv, NULL, "not multiples of num_heads");
  refused(&ok, set_rotary, "do_rotary");
  refused(&ok, set_share, "past_present_share_buffer");
  refused(&ok, no_heads, "num_heads");
  refused(&ok, onnx_domain, "from opset 23 on"); /* the ONNX op, in an opset-17 graph */
}

static const aspec_t k_forms[] = {
    /* b  s  hin heads qh kh vh qkv bias mask const uni past abias present scale filter */
    {2, 5, 16, 2, 16, 16, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {2, 5, 16, 4, 16, 16, 16, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0},
    {2, 5, 16, 4, 16, 16, 16, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0},
    {2, 5, 16, 4, 16, 16, 16, 0, 0, 3, 0, 0, 0, 0, 0, 0.3f, -500.f},
    {2, 5, 16, 4, 16, 16, 16, 0, 1, 4, 0, 1, 0, 0, 0, 0, 0},
    {1, 7, 12, 3, 12, 12, 24, 1, 1, 3, 0, 0, 0, 1, 0, 0, 0},
    {2, 3, 16, 2, 16, 16, 16, 0, 1, 3, 0, 1, 4, 2, 1, 0, 0},
    {2, 1, 16, 2, 16, 16, 16, 0, 1, 1, 0, 1, 6, 0, 1, 0, 0},
    {3, 4, 8, 2, 8, 8, 8, 0, 1, 3, 1, 0, 0, 0, 0, 0, 0},
};

/* A 1D mask whose length the loader does not know: [B] and [2B] told apart at run time. */
static void unknown_mask_length(void) {
  for (int form = 1; form <= 2; form++) {
    aspec_t sp = {2, 4, 8, 2, 8, 8, 8, 0, 1, form, 0, 0, 0, 0, 0, 0, 0};
    mi_graph_t *g = attn_graph(&sp, NULL, 21);
    mi_array_t *in[4] = {0}, *want[ATTN_MAXOUT] = {0};
    int32_t nin;
    attn_inputs(g, &sp, NULL, 22, in, &nin);
    ref_run(g, in, nin, want);
    g->tensors[g->inputs[1]].dims[0] = -1; /* written as a dynamic dim */
    lowered_matches(NULL, (size_t)form, g, save_load(g, NULL), in, nin, want, 0, 0);
    free_arrays(in, nin);
    mi_graph_destroy(g);
  }
}

/* The lowered graph on the reference (the reference on each of its standard ops; p NULL) or on
 * blis-cpu with no host step equals the node's reference. */
static void forms_on(mi_plugin_t *p) {
  for (size_t f = 0; f < sizeof k_forms / sizeof k_forms[0]; f++) {
    aspec_t sp = k_forms[f];
    int32_t cm[64];
    for (int i = 0; i < 64; i++) cm[i] = p ? (i * 3) % 4 != 0 : (i * 7) % 5 != 0;
    mi_graph_t *g = attn_graph(&sp, &(avals_t){.mask = cm}, (p ? 31 : 11) + f);
    mi_array_t *in[4] = {0};
    int32_t nin;
    attn_inputs(g, &sp, NULL, (p ? 41 : 5) + f, in, &nin);
    lowered_form(p, f, g, in, nin, NULL, 0, 0);
    free_arrays(in, nin);
    mi_graph_destroy(g);
  }
}

static void lowered_forms(void) { forms_on(NULL); }
static void blis_cpu(void) { on_blis_cpu_each_simd(forms_on); }

static void setup(void) {}
static void teardown(void) {}
static const tu_case_t tu_cases[] = {TU_CASE(hand_values), TU_CASE(malformed), TU_CASE(lowered_forms),
                                     TU_CASE(unknown_mask_length), TU_CASE(blis_cpu)};

TU_MAIN(setup, teardown)
