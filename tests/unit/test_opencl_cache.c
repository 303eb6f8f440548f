/* test_opencl_cache.c - the OpenCL plugin's program cache: built once per instance, found on
 * disk by a second instance, and rebuilt when the disk entry is corrupt. */
#include <dirent.h>
#include <sys/stat.h>

#include "test_opencl_common.h"

#define M 9
#define K 11
#define N 13

static float A[M * K], B[K * N], Y[M * N], R[M * N];

/* One MatMul through matmul.naive (one program), checked against the naive GEMM. */
static void run_once(ocl_t *o) {
  kd_t k;
  int64_t da[2] = {M, K}, db[2] = {K, N}, dy[2] = {M, N};
  int in[2];
  const float *ins[2] = {A, B};
  float *outs[1] = {Y};
  mi_error_t err = {0, ""};
  memset(&k, 0, sizeof k);
  in[0] = kd_tensor(&k, 2, da, NULL);
  in[1] = kd_tensor(&k, 2, db, NULL);
  k.ins[k.nin++] = in[0];
  k.ins[k.nin++] = in[1];
  k.outs[k.nout++] = kd_tensor(&k, 2, dy, NULL);
  kd_node(&k, "MatMul", 2, in, k.outs[0]);
  kd_knob(&k, "unroll", 2);
  memset(Y, 0, sizeof Y);
  if (ocl_run(o, kd_finish(&k, "matmul.naive"), ins, outs, NULL, &err) != MI_OK)
    fprintf(stderr, "run: %s\n", err.message);
  REQUIRE(err.code == 0);
  REQUIRE(tu_rel_l2(Y, R, M * N) < 1e-5);
}

/* Overwrites the middle of every cache entry; returns how many entries there were. */
static int corrupt_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  REQUIRE(d);
  while ((e = readdir(d)) != NULL) {
    char path[600];
    FILE *f;
    long size;
    if (!strstr(e->d_name, ".bin") || strstr(e->d_name, ".tmp")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    f = fopen(path, "r+b");
    REQUIRE(f);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    REQUIRE(size > 64);
    fseek(f, size / 2, SEEK_SET);
    fwrite("garbage!garbage!", 1, 16, f);
    fclose(f);
    n++;
  }
  closedir(d);
  return n;
}

static ocl_t o;
static char dir[300];

static void setup(void) {
  memset(&o, 0, sizeof o);
  ocl_env(&o);
  ocl_open_or_skip(&o);
  fill(A, M * K, 31);
  fill(B, K * N, 32);
  ref_gemm(A, B, R, M, N, K);
  snprintf(dir, sizeof dir, "%s/opencl", o.cache_dir);
}

static void teardown(void) {
  ocl_rm_cache(&o);
}

static void cache_lifecycle(void) {
  double t;
  /* first instance: built from source once, the second prepare hits the memory cache; the
   * driver compiler's chatter went to CACHE/opencl/build.log and fd 2 is this test's again */
  {
    struct stat before, after, logst;
    char logp[400];
    REQUIRE(fstat(2, &before) == 0);
    run_once(&o);
    REQUIRE(fstat(2, &after) == 0 && after.st_ino == before.st_ino && after.st_dev == before.st_dev);
    snprintf(logp, sizeof logp, "%s/build.log", dir);
    REQUIRE(stat(logp, &logst) == 0); /* the build's stderr went to the log */
  }
  REQUIRE(ocl_counter(&o, "programs_built") == 1);
  REQUIRE(ocl_counter(&o, "program_disk_hits") == 0);
  t = ocl_counter(&o, "compile_ns");
  fprintf(stderr, "cold build: %.1f ms\n", t / 1e6);
  REQUIRE(t > 0);
  run_once(&o);
  REQUIRE(ocl_counter(&o, "programs_built") == 1);
  REQUIRE(ocl_counter(&o, "program_memory_hits") >= 1);
  ocl_close(&o);

  /* second instance: the binary comes from disk */
  REQUIRE(ocl_open(&o));
  run_once(&o);
  fprintf(stderr, "disk hit: %.1f ms\n", ocl_counter(&o, "compile_ns") / 1e6);
  REQUIRE(ocl_counter(&o, "program_disk_hits") == 1);
  REQUIRE(ocl_counter(&o, "programs_built") == 0);
  ocl_close(&o);

  /* corrupt entry: detected, rebuilt from source and rewritten */
  REQUIRE(corrupt_entries(dir) == 1);
  REQUIRE(ocl_open(&o));
  run_once(&o);
  REQUIRE(ocl_counter(&o, "program_disk_corrupt") == 1);
  REQUIRE(ocl_counter(&o, "programs_built") == 1);
  REQUIRE(strstr(o.last_log, "corrupt") != NULL);
  ocl_close(&o);

  /* the rewritten entry is good again */
  REQUIRE(ocl_open(&o));
  run_once(&o);
  REQUIRE(ocl_counter(&o, "program_disk_hits") == 1);
  REQUIRE(ocl_counter(&o, "program_disk_corrupt") == 0);
  ocl_close(&o);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(cache_lifecycle),
};

TU_MAIN(setup, teardown)
