/* test_exec_memplan.c - the session's device memory plan (framework/src/exec/memplan.c): tensors
 * whose lifetimes do not overlap share device buffers, so a chain needs far less than one buffer
 * per tensor, and the outputs stay bit for bit those of one buffer per tensor
 * (mi_session_options_t.no_memory_plan), on blis-cpu and every other plugin that loads, over
 * runs with new inputs. One graph per hazard: a tensor read again much later (a residual and the
 * graph input), a reshape view whose input dies at the view, a graph output nothing reads, a
 * tensor read only by a host step. The run's first device step keeps its tensors (the input it
 * uploads, its output) in allocations no later tensor shares, up to MI__FIRST_OWN_MAX bytes
 * each; a larger input shares as before. */
#include "exec/exec.h"
#include "test_exec_util.h"

static mi_registry_t *r;

#define C 16
#define HW 32

enum { CHAIN,
       VIEW,
       OUTPUT,
       HOST,
       CASES };
static const char *const names[CASES] = {"chain", "view", "unread output", "host reader"};

static int32_t act(mi_graph_t *g, const char *op, const char *out, int32_t in) {
  int32_t t = mi_graph_add_tensor(g, out, MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, op, out, 1, &in, 1, &t);
  return t;
}

static int32_t add(mi_graph_t *g, const char *out, int32_t a, int32_t b) {
  int32_t t = mi_graph_add_tensor(g, out, MI_DTYPE_FLOAT32, -1, NULL), in[2] = {a, b};
  mi_graph_add_node(g, "Add", out, 2, in, 1, &t);
  return t;
}

/* Every tensor is [1,C,HW,HW] FP32, so any dead one's buffer fits any later one: a lifetime
 * that ends too early shows as a later tensor's values in its place. */
static mi_graph_t *build(int kind) {
  static const int64_t xd[4] = {1, C, HW, HW};
  mi_graph_t *g = mi_graph_create(names[kind]);
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), a, b, c, y, in[2];
  mi_error_t err = {0};
  mi_graph_add_input(g, x);
  a = act(g, "Relu", "a", x);
  if (kind == CHAIN) {
    /* a and x are read again at the end, after six tensors were made and dropped */
    b = act(g, "Sigmoid", "b", a);
    for (int i = 0; i < 5; i++) {
      char nm[8];
      snprintf(nm, sizeof nm, "c%d", i);
      b = act(g, i % 2 ? "Relu" : "Sigmoid", nm, b);
    }
    y = add(g, "y", add(g, "r", b, a), x);
  } else if (kind == VIEW) {
    /* v = Reshape(a) to the same shape is a's buffer; a is never read after the view, v is */
    in[0] = a;
    in[1] = mi_graph_add_const_i64(g, "shape", 4, xd);
    c = mi_graph_add_tensor(g, "v", MI_DTYPE_FLOAT32, -1, NULL);
    mi_graph_add_node(g, "Reshape", "view", 2, in, 1, &c);
    b = act(g, "Relu", "c1", act(g, "Sigmoid", "c0", x));
    y = add(g, "y", b, c);
  } else if (kind == OUTPUT) {
    /* a is an output nothing reads: the run downloads it at the end */
    mi_graph_add_output(g, a);
    y = act(g, "Relu", "y", act(g, "Sigmoid", "c1", act(g, "Sigmoid", "c0", x)));
  } else {
    /* a is read only by Equal, which no plugin runs: the host downloads it there */
    b = act(g, "Relu", "c1", act(g, "Sigmoid", "c0", x));
    c = act(g, "Sigmoid", "c2", b);
    in[0] = a;
    in[1] = c;
    y = mi_graph_add_tensor(g, "y", MI_DTYPE_BOOL, -1, NULL);
    mi_graph_add_node(g, "Equal", "eq", 2, in, 1, &y);
    mi_graph_add_output(g, c);
  }
  mi_graph_add_output(g, y);
  if (mi_graph_infer_shapes(g, &err) != MI_OK) die("infer shapes", &err);
  return g;
}

static void on_plugin(mi_plugin_t *p, int kind) {
  mi_graph_t *g = build(kind);
  /* one kernel per node: the most tensors in device buffers */
  mi_session_t *planned = session_with(g, p, 1, 0), *plain = session_with(g, p, 1, 1);
  uint64_t mp = 0, mu = 0, live = 0, pp = 0, pu = 0;
  int32_t kernels = mi_session_kernel_count(planned);
  CHECK(mi_session_memory(planned, &mp, &mu, &live) == 1, "%s %s: no memory figures", p->name, names[kind]);
  mi_session_memory(plain, &pp, &pu, NULL);
  printf("%s %s: %d kernels, %d on the host; planned %llu, one per tensor %llu, live peak %llu bytes\n",
         p->name, names[kind], (int)kernels, (int)mi_session_fallback_count(planned), (unsigned long long)mp,
         (unsigned long long)mu, (unsigned long long)live);
  CHECK(pp == pu && pu == mu, "%s %s: without a plan %llu bytes, want one buffer per tensor (%llu)", p->name,
        names[kind], (unsigned long long)pp, (unsigned long long)mu);
  CHECK(live <= mp && mp <= mu, "%s %s: live peak %llu <= planned %llu <= unplanned %llu fails", p->name,
        names[kind], (unsigned long long)live, (unsigned long long)mp, (unsigned long long)mu);
  /* Every graph has device tensors that die before others are made: some buffer is shared. */
  if (kernels >= 3)
    CHECK(mp < mu, "%s %s: planned %llu bytes, no less than one buffer per tensor", p->name, names[kind],
          (unsigned long long)mp);
  /* Six or more device tensors of one size in a chain need three buffers, not one each. */
  if (kind == CHAIN && kernels >= 6)
    CHECK(mp * 2 <= mu, "%s chain: planned %llu bytes, not under half of %llu", p->name, (unsigned long long)mp,
          (unsigned long long)mu);
  for (int run_i = 0; run_i < 3; run_i++) {
    mi_array_t *x = input_for(g, 11u + (unsigned)run_i), *got[4] = {0}, *want[4] = {0};
    run(planned, g, x, got);
    run(plain, g, x, want);
    for (int32_t i = 0; i < g->output_count; i++)
      CHECK(got[i] && want[i] && got[i]->nbytes == want[i]->nbytes &&
                memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0,
            "%s %s run %d: output %d differs from one buffer per tensor", p->name, names[kind], run_i, (int)i);
    destroy_outs(got, want);
    mi_array_destroy(x);
  }
  mi_session_destroy(planned);
  mi_session_destroy(plain);
  mi_graph_destroy(g);
}

/* x -> Relu -> seven more activations -> y, every tensor [1,C,hw,hw] FP32: without the rule x's
 * allocation (x dies at the first step) and a's would serve later tensors. */
static mi_graph_t *chain(int64_t hw) {
  const int64_t xd[4] = {1, C, hw, hw};
  mi_graph_t *g = mi_graph_create("first step");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), t;
  mi_error_t err = {0};
  mi_graph_add_input(g, x);
  t = act(g, "Relu", "a", x);
  for (int i = 0; i < 7; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "c%d", i);
    t = act(g, i % 2 ? "Relu" : "Sigmoid", nm, t);
  }
  mi_graph_add_output(g, t);
  if (mi_graph_infer_shapes(g, &err) != MI_OK) die("infer shapes", &err);
  return g;
}

/* How many tensors other than t have t's device buffer. */
static int sharers(const mi_session_t *s, int32_t t) {
  int n = 0;
  for (int32_t u = 0; u < s->g->tensor_count; u++) n += u != t && s->bufs[u] && s->bufs[u] == s->bufs[t];
  return n;
}

static void first_step_own(mi_plugin_t *p) {
  mi_graph_t *g = chain(HW), *big = chain(160); /* 64 KiB tensors; 1.6 MB ones, over the cap */
  mi_session_t *s = session_with(g, p, 1, 0), *sb = session_with(big, p, 1, 0);
  int32_t f = 0;
  uint64_t mp = 0, mu = 0;
  while (f < s->step_count && s->steps[f].kind != MI__STEP_DEVICE) f++;
  if (f == s->step_count || s->kernel_count < 6) {
    printf("%s: %d kernels, the chain runs on the host: skipped\n", p->name, (int)s->kernel_count);
  } else {
    const mi__step_t *st = &s->steps[f];
    for (int32_t j = 0; j < st->input_count; j++)
      CHECK(sharers(s, st->inputs[j]) == 0, "%s: first step's input '%s' shares its buffer with %d tensors", p->name,
            g->tensors[st->inputs[j]].name, sharers(s, st->inputs[j]));
    for (int32_t j = 0; j < st->output_count; j++)
      CHECK(sharers(s, st->outputs[j]) == 0, "%s: first step's output '%s' shares its buffer with %d tensors",
            p->name, g->tensors[st->outputs[j]].name, sharers(s, st->outputs[j]));
    mi_session_memory(s, &mp, &mu, NULL);
    CHECK(mp < mu, "%s: planned %llu bytes, no less than one buffer per tensor (%llu)", p->name,
          (unsigned long long)mp, (unsigned long long)mu);
    CHECK(sharers(sb, big->inputs[0]) > 0, "%s: a 1.6 MB input keeps an allocation of its own", p->name);
  }
  for (int run_i = 0; run_i < 2; run_i++) {
    mi_array_t *in = input_for(g, 21u + (unsigned)run_i), *got[4] = {0}, *want[4] = {0};
    run(s, g, in, got);
    ref(g, in, want);
    CHECK(got[0] && want[0] && got[0]->nbytes == want[0]->nbytes, "%s first step run %d: no output", p->name, run_i);
    destroy_outs(got, want);
    mi_array_destroy(in);
  }
  mi_session_destroy(s);
  mi_session_destroy(sb);
  mi_graph_destroy(g);
  mi_graph_destroy(big);
}

static void all_cases(mi_plugin_t *p) {
  for (int k = 0; k < CASES; k++) on_plugin(p, k);
}

static void setup(void) { r = open_plugins(); }

static void teardown(void) { mi_registry_destroy(r); }

static void blis_cpu(void) { on_blis_cpu(r, all_cases); }

static void others(void) { other_plugins(r, all_cases); }

static void first_step(void) {
  on_blis_cpu(r, first_step_own);
  other_plugins(r, first_step_own);
}

static const tu_case_t tu_cases[] = {TU_CASE(blis_cpu), TU_CASE(others), TU_CASE(first_step)};
TU_MAIN(setup, teardown)
