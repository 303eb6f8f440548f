/* test_npu_model.c - npu-stub behaves like hardware: compute-bound work scales with cores,
 * clock and MACs, memory-bound work does not, DVFS energy has an interior optimum, sustained
 * top clock throttles, noise is seeded, and the injected faults happen. */
#include "test_npu_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct kernel_data {
  int8_t *x, *x2, *w, *y;
  int32_t *bias;
} kernel_data_t;

/* INT8 Conv C->C 3x3 pad 1 on HxH: MAC-heavy, high reuse. */
static int build_conv(kb_t *k, kernel_data_t *d, int C, int H) {
  int64_t xd[4] = {1, C, H, H}, wd[4] = {C, C, 3, 3}, bd[1] = {C}, pads[4] = {1, 1, 1, 1};
  int xt, wt, bt, yt, node;
  int32_t ins[3];
  size_t nx = (size_t)C * H * H, nw = (size_t)C * C * 9;
  d->x = malloc(nx);
  d->w = malloc(nw);
  d->y = malloc(nx);
  d->bias = calloc((size_t)C, sizeof(int32_t));
  d->x2 = NULL;
  fill_i8(d->x, nx, -128, 127, 5);
  fill_i8(d->w, nw, -127, 127, 6);
  memset(k, 0, sizeof *k);
  xt = kb_tensor(k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(k, xt, 0.05f, 0);
  wt = kb_tensor(k, MI_DTYPE_INT8, 4, wd, d->w, nw);
  kb_quant(k, wt, 0.003f, 0);
  bt = kb_tensor(k, MI_DTYPE_INT32, 1, bd, d->bias, sizeof(int32_t) * (size_t)C);
  yt = kb_tensor(k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(k, yt, 0.2f, 0);
  ins[0] = xt;
  ins[1] = wt;
  ins[2] = bt;
  node = kb_node(k, "Conv", ins, 3, yt);
  kb_ints(k, node, "pads", pads, 4);
  return yt;
}

/* INT8 Add of two large tensors: 3 bytes of DMA per element, one vector op. */
static int build_add(kb_t *k, kernel_data_t *d, int C, int H, int W) {
  int64_t xd[4] = {1, C, H, W};
  int at, bt, yt;
  int32_t ins[2];
  size_t n = (size_t)C * H * W;
  d->x = malloc(n);
  d->x2 = malloc(n);
  d->w = NULL;
  d->bias = NULL;
  d->y = malloc(n);
  fill_i8(d->x, n, -128, 127, 7);
  fill_i8(d->x2, n, -128, 127, 8);
  memset(k, 0, sizeof *k);
  at = kb_tensor(k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(k, at, 0.05f, 1);
  bt = kb_tensor(k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(k, bt, 0.04f, -2);
  yt = kb_tensor(k, MI_DTYPE_INT8, 4, xd, NULL, 0);
  kb_quant(k, yt, 0.08f, 0);
  ins[0] = at;
  ins[1] = bt;
  kb_node(k, "Add", ins, 2, yt);
  return yt;
}

static void free_data(kernel_data_t *d) {
  free(d->x);
  free(d->x2);
  free(d->w);
  free(d->y);
  free(d->bias);
}

static void prep(kr_t *r, npu_t *p, uint32_t dev, kb_t *k, int out, kernel_data_t *d) {
  mi_error_t err;
  const void *ins[2] = {d->x, d->x2};
  if (kr_prepare(r, p, dev, k, out, ins, &err) != MI_OK) {
    fprintf(stderr, "prepare: %s\n", err.message);
    exit(1);
  }
}

static char g_dir[256];

static const char *write_device(const char *name, const char *extra) {
  static char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  f = fopen(path, "w");
  REQUIRE(f != NULL);
  fprintf(f, "# test device\nname = npu-test\nnoise = 0\n%s", extra);
  fclose(f);
  return path;
}

static void test_scaling(npu_t *p) {
  kb_t kc, ka;
  kernel_data_t dc, da;
  kr_t rc, ra, rc2, ra2;
  double t1, t4, tlo, thi, a1, a4, alo, ahi, g1c, g2c, g1a, g2a;
  int yc = build_conv(&kc, &dc, 96, 28), ya = build_add(&ka, &da, 64, 64, 128);
  prep(&rc, p, 0, &kc, yc, &dc);
  prep(&ra, p, 0, &ka, ya, &da);
  npu_set(p, 0, "dvfs_level", 4);
  npu_set(p, 0, "cores", 1);
  kr_measure(&rc, 3, &t1, NULL);
  kr_measure(&ra, 5, &a1, NULL);
  npu_set(p, 0, "cores", 4);
  kr_measure(&rc, 3, &t4, NULL);
  kr_measure(&ra, 5, &a4, NULL);
  thi = t4;
  ahi = a4;
  npu_set(p, 0, "dvfs_level", 0);
  kr_measure(&rc, 3, &tlo, NULL);
  npu_set(p, 0, "dvfs_level", 2);
  kr_measure(&ra, 5, &alo, NULL);
  npu_set(p, 0, "dvfs_level", 4);
  printf("gen1 conv 96x28x28 3x3: 1 core %.1f us, 4 cores %.1f us, 200 MHz %.1f us\n",
         t1 / 1e3, t4 / 1e3, tlo / 1e3);
  printf("gen1 add 64x64x128: 1 core %.1f us, 4 cores %.1f us, 600 MHz %.1f us, 1000 MHz %.1f us\n",
         a1 / 1e3, a4 / 1e3, alo / 1e3, ahi / 1e3);
  REQUIRE(t1 / t4 > 2.5);                       /* compute-bound: scales with cores */
  REQUIRE(tlo / thi > 3.0);                     /* and with the clock */
  REQUIRE(a1 / a4 < 1.2 && a1 / a4 > 0.85);     /* memory-bound: cores do not help */
  REQUIRE(alo / ahi < 1.2 && alo / ahi > 0.85); /* nor does the clock */
  /* gen2: more MACs (compute-bound faster), less bandwidth (memory-bound slower) */
  prep(&rc2, p, 1, &kc, yc, &dc);
  prep(&ra2, p, 1, &ka, ya, &da);
  kr_measure(&rc, 3, &g1c, NULL);
  kr_measure(&rc2, 3, &g2c, NULL);
  kr_measure(&ra, 5, &g1a, NULL);
  kr_measure(&ra2, 5, &g2a, NULL);
  printf("conv gen1 %.1f us gen2 %.1f us; add gen1 %.1f us gen2 %.1f us\n", g1c / 1e3,
         g2c / 1e3, g1a / 1e3, g2a / 1e3);
  REQUIRE(g1c / g2c > 1.2);
  REQUIRE(g2a / g1a > 1.2);
  kr_release(&rc);
  kr_release(&ra);
  kr_release(&rc2);
  kr_release(&ra2);
  free_data(&dc);
  free_data(&da);
}

static void test_energy_optimum(npu_t *p) {
  kb_t k;
  kernel_data_t d;
  kr_t r;
  double e[16];
  int lv, best = 0;
  mi_knob_desc_t kd;
  mi_error_t err;
  int y = build_add(&k, &d, 64, 64, 128);
  memset(&kd, 0, sizeof kd);
  kd.struct_size = sizeof kd;
  REQUIRE(p->api->knob_desc(p->ctx, 0, 1, &kd, &err) == MI_OK);
  REQUIRE(strcmp(kd.name, "dvfs_level") == 0 && kd.max >= 2 && kd.max < 16);
  prep(&r, p, 0, &k, y, &d);
  for (lv = 0; lv <= kd.max; lv++) {
    npu_set(p, 0, "dvfs_level", lv);
    kr_measure(&r, 5, NULL, &e[lv]);
    printf("add energy at level %d: %.2f uJ\n", lv, e[lv] * 1e6);
    if (e[lv] < e[best]) best = lv;
  }
  npu_set(p, 0, "dvfs_level", (int)kd.max);
  REQUIRE(best > 0 && best < kd.max);
  REQUIRE(e[best] < 0.95 * e[0] && e[best] < 0.95 * e[kd.max]);
  kr_release(&r);
  free_data(&d);
}

static void test_throttle(void) {
  npu_t p;
  mi_error_t err;
  kb_t k;
  kernel_data_t d;
  kr_t r;
  double f0, f, temp, t_first, t_last;
  mi_run_stats_t st;
  int i, lv, throttled_at = -1;
  const char *dev = write_device("npu-hot.conf", "thermal_tau_s = 0.0002\nthermal_r = 100\n");
  int y = build_conv(&k, &d, 32, 16);
  for (lv = 4; lv >= 0; lv -= 4) {
    REQUIRE(npu_open(&p, dev, &err) == MI_OK); /* via the host setting npu_stub.devices */
    npu_set(&p, 0, "dvfs_level", lv);
    prep(&r, &p, 0, &k, y, &d);
    REQUIRE(npu_counter(&p, 0, "frequency", &f0) && npu_counter(&p, 0, "temperature", &temp));
    REQUIRE(temp == 25.0);
    REQUIRE(!npu_counter(&p, 0, "device_time", &f)); /* no run yet: no sample */
    kr_run(&r, NULL, &st);
    t_first = (double)st.device_time_ns;
    throttled_at = -1;
    for (i = 0; i < 300 && throttled_at < 0; i++) {
      kr_run(&r, NULL, &st);
      REQUIRE(npu_counter(&p, 0, "frequency", &f));
      if (f < f0) throttled_at = i;
    }
    for (i = 0; i < 5; i++) kr_run(&r, NULL, &st);
    t_last = (double)st.device_time_ns;
    REQUIRE(npu_counter(&p, 0, "temperature", &temp));
    printf("level %d: %.0f MHz -> %.0f MHz after %d runs, %.1f C, %.2f -> %.2f us\n", lv, f0, f,
           throttled_at, temp, t_first / 1e3, t_last / 1e3);
    if (lv == 4) {
      REQUIRE(throttled_at > 5);    /* heating takes simulated time */
      REQUIRE(f < f0 && temp > 85); /* then the clock drops */
      REQUIRE(t_last > 1.3 * t_first);
    } else {
      REQUIRE(throttled_at < 0 && temp < 85); /* the low level never gets there */
    }
    kr_release(&r);
    npu_close(&p);
  }
  free_data(&d);
}

static void test_noise(void) {
  npu_t p;
  mi_error_t err;
  kb_t k;
  kernel_data_t d;
  kr_t r;
  uint64_t t[2][8];
  int rep, i, distinct = 0;
  int y = build_conv(&k, &d, 16, 8);
  for (rep = 0; rep < 2; rep++) {
    mi_run_stats_t st;
    REQUIRE(npu_open(&p, NULL, &err) == MI_OK); /* shipped gen1: noise = 0.02, seed = 1 */
    prep(&r, &p, 0, &k, y, &d);
    for (i = 0; i < 8; i++) {
      kr_run(&r, NULL, &st);
      t[rep][i] = st.device_time_ns;
    }
    kr_release(&r);
    npu_close(&p);
  }
  for (i = 1; i < 8; i++) distinct += t[0][i] != t[0][0];
  REQUIRE(distinct >= 3);                        /* measurements vary */
  REQUIRE(memcmp(t[0], t[1], sizeof t[0]) == 0); /* with the same seed the same way */
  free_data(&d);
}

/* Runs one Add with MI_NPU_FAULT=`fault` in a child process; returns its wait status. */
static int fault_child(const char *fault, int wait_ms) {
  pid_t pid = fork();
  int status = 0;
  REQUIRE(pid >= 0);
  if (pid == 0) {
    npu_t p;
    mi_error_t err;
    kb_t k;
    kernel_data_t d;
    kr_t r;
    int y = build_add(&k, &d, 4, 8, 8);
    setenv("MI_NPU_FAULT", fault, 1);
    signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the signal into an exit */
    if (npu_open(&p, NULL, &err) != MI_OK) _exit(3);
    prep(&r, &p, 0, &k, y, &d);
    kr_run(&r, NULL, NULL);
    _exit(0);
  }
  if (wait_ms > 0) {
    usleep((useconds_t)wait_ms * 1000);
    REQUIRE(waitpid(pid, &status, WNOHANG) == 0); /* still inside kernel_run */
    kill(pid, SIGKILL);
  }
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

static void test_faults(void) {
  npu_t p;
  mi_error_t err;
  kb_t k;
  kernel_data_t d;
  kr_t r;
  int8_t good[256], bad[256];
  mi_run_stats_t st;
  double first, last = 0;
  int i, st_crash, y;
  const char *dev;
  st_crash = fault_child("crash", 0);
  REQUIRE(WIFSIGNALED(st_crash) && WTERMSIG(st_crash) == SIGSEGV);
  (void)fault_child("hang", 300);
  y = build_add(&k, &d, 4, 8, 8);
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK);
  prep(&r, &p, 0, &k, y, &d);
  kr_run(&r, good, NULL);
  kr_release(&r);
  npu_close(&p);
  setenv("MI_NPU_FAULT", "wrong", 1);
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK);
  prep(&r, &p, 0, &k, y, &d);
  kr_run(&r, bad, NULL);
  kr_release(&r);
  npu_close(&p);
  REQUIRE(memcmp(good, bad, sizeof good) != 0);
  setenv("MI_NPU_FAULT", "drift", 1);
  dev = write_device("npu-quiet.conf", "");
  REQUIRE(npu_open(&p, dev, &err) == MI_OK);
  prep(&r, &p, 0, &k, y, &d);
  kr_run(&r, NULL, &st);
  first = (double)st.device_time_ns;
  for (i = 0; i < 20; i++) {
    kr_run(&r, NULL, &st);
    REQUIRE((double)st.device_time_ns >= last);
    last = (double)st.device_time_ns;
  }
  printf("drift: %.2f us -> %.2f us over 21 runs\n", first / 1e3, last / 1e3);
  REQUIRE(last > 1.05 * first);
  kr_release(&r);
  npu_close(&p);
  setenv("MI_NPU_FAULT", "melt", 1);
  REQUIRE(npu_open(&p, NULL, &err) == MI_ERR_INVALID_ARGUMENT);
  REQUIRE(strstr(err.message, "MI_NPU_FAULT") != NULL);
  npu_close(&p);
  unsetenv("MI_NPU_FAULT");
  free_data(&d);
}

static npu_t p;
static int p_open;

static void setup(void) {
  mi_error_t err;
  snprintf(g_dir, sizeof g_dir, "/tmp/test_npu_model.XXXXXX");
  REQUIRE(mkdtemp(g_dir) != NULL);
  unsetenv("MI_NPU_DEVICES");
  unsetenv("MI_NPU_FAULT");
  REQUIRE(npu_open(&p, NULL, &err) == MI_OK, "create: %s", err.message);
  p_open = 1;
}

static void teardown(void) {
  if (p_open) npu_close(&p);
  REQUIRE(tu_rmtree(g_dir) == 0);
}

static void scaling_case(void) { test_scaling(&p); }
static void energy_optimum_case(void) { test_energy_optimum(&p); }

static const tu_case_t tu_cases[] = {
    {"scaling", scaling_case},
    {"energy_optimum", energy_optimum_case},
    {"throttle", test_throttle},
    {"noise", test_noise},
    {"faults", test_faults},
};

TU_MAIN(setup, teardown)
