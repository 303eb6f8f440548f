/* blis_device.c - CPU probing, counted allocations and the per-architecture BLIS contexts. */
#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blis_conv.h"

/* The native context initialisers of each kernel set; exported by the static libblis.a
 * (hidden in libblis.so), which is why the plugin links the archive. */
void bli_cntx_init_skx(cntx_t *cntx);
void bli_cntx_init_haswell(cntx_t *cntx);
void bli_cntx_init_zen3(cntx_t *cntx);
void bli_cntx_init_zen2(cntx_t *cntx);
void bli_cntx_init_zen(cntx_t *cntx);
void bli_cntx_init_generic(cntx_t *cntx);

#define MI__ALLOC_HDR 64

/* BLIS's state lives inside this .so (static archive): release its pools when the plugin is
 * unloaded so repeated dlopen/dlclose does not leak. bli_init first makes finalize safe even
 * when no kernel ever ran. */
__attribute__((destructor)) static void blis_unload(void) {
  bli_init();
  bli_finalize();
}

static void count_bytes(mi_plugin_ctx_t *ctx, uint64_t bytes) {
  uint64_t now = atomic_fetch_add(&ctx->cur_bytes, bytes) + bytes, peak = atomic_load(&ctx->peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&ctx->peak_bytes, &peak, now)) {
  }
}

/* BLIS packs A and B into blocks it checks out of pools and keeps for the life of the library, so
 * the pools grow to one block of each kind per thread that packed at once and stay that size. */
uint64_t mi__blis_pool_bytes(void) {
  pba_t *pba = bli_pba_query();
  uint64_t bytes = 0;
  dim_t i;
  bli_pthread_mutex_lock(&pba->mutex);
  for (i = 0; i < 3; i++) {
    pool_t *pool = bli_pba_pool(i, pba);
    bytes += (uint64_t)bli_pool_num_blocks(pool) * (uint64_t)bli_pool_block_size(pool);
  }
  bli_pthread_mutex_unlock(&pba->mutex);
  return bytes;
}

void *mi__blis_alloc(mi_plugin_ctx_t *ctx, uint64_t bytes) {
  char *p = NULL;
  if (posix_memalign((void **)&p, 64, (size_t)bytes + MI__ALLOC_HDR) != 0) return NULL;
  memcpy(p, &bytes, sizeof bytes);
  count_bytes(ctx, bytes);
  return p + MI__ALLOC_HDR;
}

void *mi__blis_calloc(mi_plugin_ctx_t *ctx, uint64_t bytes) {
  void *p = mi__blis_alloc(ctx, bytes);
  if (p) memset(p, 0, (size_t)bytes);
  return p;
}

void mi__blis_free(mi_plugin_ctx_t *ctx, void *p) {
  uint64_t bytes;
  char *base;
  if (!p) return;
  base = (char *)p - MI__ALLOC_HDR;
  memcpy(&bytes, base, sizeof bytes);
  atomic_fetch_sub(&ctx->cur_bytes, bytes);
  free(base);
}

/* Address space for a plane that holds no memory until a run needs it: PROT_NONE pages are not
 * committed, never resident, and fault where touched (a write a step did not announce stops there
 * rather than landing in another tensor). Not counted: the plugin holds no memory for it. */
void *mi__blis_reserve(uint64_t bytes, uint64_t *len) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  void *p;
  *len = ((bytes ? bytes : 1) + page - 1) / page * page;
  p = mmap(NULL, (size_t)*len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void mi__blis_unreserve(void *p, uint64_t len) {
  if (p) munmap(p, (size_t)len);
}

int32_t mi__blis_plane_open(const mi__blis_env_t *env, int32_t t, mi_error_t *err) {
  const mi_kernel_t *k = env ? env->k : NULL;
  if (!k || t < 0 || t >= k->tensor_count || k->owned[t] != 2) return MI_OK;
  if (mprotect(k->ptr[t], (size_t)k->rsv[t], PROT_READ | PROT_WRITE) != 0)
    return mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: a reserved plane cannot be made writable");
  count_bytes(env->ctx, k->rsv[t]);
  return MI_OK;
}

void mi__blis_plane_close(const mi__blis_env_t *env, int32_t t) {
  const mi_kernel_t *k = env ? env->k : NULL;
  if (!k || t < 0 || t >= k->tensor_count || k->owned[t] != 2) return;
  /* the pages go back to the system, the range stays reserved */
  madvise(k->ptr[t], (size_t)k->rsv[t], MADV_DONTNEED);
  mprotect(k->ptr[t], (size_t)k->rsv[t], PROT_NONE);
  atomic_fetch_sub(&env->ctx->cur_bytes, k->rsv[t]);
}

static uint64_t read_cache_size(int index) {
  char path[128], buf[64];
  FILE *f;
  char *end;
  uint64_t v;
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
  f = fopen(path, "r");
  if (!f) return 0;
  if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
  fclose(f);
  v = strtoull(buf, &end, 10);
  if (*end == 'K') v *= 1024;
  else if (*end == 'M')
    v *= 1024 * 1024;
  return v;
}

static int read_cache_level(int index, char *type, size_t type_size) {
  char path[128], buf[64];
  FILE *f;
  int level = 0;
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
  f = fopen(path, "r");
  if (!f) return 0;
  if (fgets(buf, sizeof buf, f)) level = (int)strtol(buf, NULL, 10);
  fclose(f);
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
  f = fopen(path, "r");
  type[0] = '\0';
  if (f) {
    if (!fgets(type, (int)type_size, f)) type[0] = '\0';
    fclose(f);
  }
  return level;
}

void mi__blis_probe_cpu(mi__blis_cpu_t *cpu) {
  FILE *f;
  char line[512];
  long n, pages, psize;
  int i;
  memset(cpu, 0, sizeof *cpu);
  snprintf(cpu->model, sizeof cpu->model, "x86_64 CPU");
  f = fopen("/proc/cpuinfo", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) == 0) {
        char *c = strchr(line, ':');
        size_t len;
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        len = strcspn(c, "\n");
        if (len >= sizeof cpu->model) len = sizeof cpu->model - 1;
        memcpy(cpu->model, c, len);
        cpu->model[len] = '\0';
        break;
      }
    }
    fclose(f);
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) cpu->isa |= MI__ISA_AVX2;
  if (__builtin_cpu_supports("fma")) cpu->isa |= MI__ISA_FMA;
  if (__builtin_cpu_supports("avx512f")) cpu->isa |= MI__ISA_AVX512F;
  if (__builtin_cpu_supports("avx512vnni")) cpu->isa |= MI__ISA_AVX512VNNI;
  if (cpu->isa & MI__ISA_AVX512F) {
    /* AVX512_BF16: CPUID.(EAX=7,ECX=1):EAX bit 5 (leaf 7's subleaf count first) */
    unsigned a = 7, b = 0, c = 0, d = 0;
    __asm__("cpuid"
            : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    if (a >= 1) {
      a = 7;
      c = 1;
      __asm__("cpuid"
              : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
      if (a & (1u << 5)) cpu->isa |= MI__ISA_AVX512BF16;
    }
  }
  if (__builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    cpu->isa |= MI__ISA_AVX512DQBWVL;
  {
    /* gcc 12 has no "f16c" name for __builtin_cpu_supports: CPUID.1:ECX bit 29. */
    unsigned a = 1, b = 0, c = 0, d = 0;
    __asm__("cpuid"
            : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
    if (c & (1u << 29)) cpu->isa |= MI__ISA_F16C;
  }
  {
    /* MI_BLIS_MAX_SIMD=avx512|avx2|c: behave as on a CPU without AMX (or without AVX-512 too, or
     * without AVX2/FMA too),
     * so an AVX-512 machine can measure what an AVX2-only laptop or server runs: the `simd`
     * and `int8_dot` defaults, their knob choices and the BLIS kernel set all follow. */
    const char *cap = getenv("MI_BLIS_MAX_SIMD");
    if (!cap || (strcmp(cap, "avx512") && strcmp(cap, "avx2") && strcmp(cap, "c")))
      cpu->isa |= mi__blis_amx_request();
    if (cap && (!strcmp(cap, "avx2") || !strcmp(cap, "c")))
      cpu->isa &= ~(MI__ISA_AVX512F | MI__ISA_AVX512VNNI | MI__ISA_AVX512DQBWVL | MI__ISA_AVX512BF16);
    if (cap && !strcmp(cap, "c")) cpu->isa &= ~(MI__ISA_AVX2 | MI__ISA_FMA);
  }
  {
    /* vendor and family (base + extended) from cpuid leaves 0 and 1, after the cap above */
    unsigned a = 0, b = 0, c = 0, d = 0, fam;
    char vendor[13];
    __asm__("cpuid"
            : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    a = 1;
    c = 0;
    __asm__("cpuid"
            : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    fam = (a >> 8) & 0xf;
    if (fam == 0xf) fam += (a >> 20) & 0xff;
    cpu->avx512_halves = mi__blis_avx512_halves(vendor, fam, cpu->isa);
  }
  n = sysconf(_SC_NPROCESSORS_ONLN);
  cpu->cores = n > 0 ? (uint32_t)n : 1;
  pages = sysconf(_SC_PHYS_PAGES);
  psize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psize > 0) cpu->memory_bytes = (uint64_t)pages * (uint64_t)psize;
  for (i = 0; i < 8; i++) {
    char type[32];
    int level = read_cache_level(i, type, sizeof type);
    uint64_t sz;
    if (level == 0) break;
    sz = read_cache_size(i);
    if (level == 1 && strncmp(type, "Instruction", 11) != 0) cpu->l1d_bytes = sz;
    if (level == 2) cpu->l2_bytes = sz;
    if (level == 3) cpu->l3_bytes = sz;
  }
}

const char *mi__blis_arch_name(int32_t arch) {
  static const char *const names[MI__ARCH_COUNT] = {"auto", "blis", "skx", "haswell",
                                                    "zen3", "zen2", "zen", "generic"};
  return arch >= 0 && arch < MI__ARCH_COUNT ? names[arch] : "?";
}

int mi__blis_arch_supported(const mi__blis_cpu_t *cpu, int32_t arch) {
  const uint32_t avx2 = MI__ISA_AVX2 | MI__ISA_FMA;
  const uint32_t avx512 = MI__ISA_AVX512F | MI__ISA_AVX512DQBWVL;
  switch (arch) {
  case MI__ARCH_AUTO:
  case MI__ARCH_BLIS:
  case MI__ARCH_GENERIC: return 1;
  case MI__ARCH_SKX: return (cpu->isa & avx512) == avx512 && (cpu->isa & avx2) == avx2;
  default: return (cpu->isa & avx2) == avx2;
  }
}

const void *mi__blis_cntx(mi_plugin_ctx_t *ctx, int32_t arch, mi_error_t *err, int32_t *rc) {
  cntx_t *c;
  *rc = MI_OK;
  if (arch == MI__ARCH_AUTO) {
    arch = mi__blis_arch_supported(&ctx->cpu, MI__ARCH_SKX)       ? MI__ARCH_SKX
           : mi__blis_arch_supported(&ctx->cpu, MI__ARCH_HASWELL) ? MI__ARCH_HASWELL
                                                                  : MI__ARCH_BLIS;
  }
  if (arch == MI__ARCH_BLIS) return NULL;
  if (arch < 0 || arch >= MI__ARCH_COUNT || !mi__blis_arch_supported(&ctx->cpu, arch)) {
    *rc = mi_sdk_error(err, MI_ERR_INVALID_CONFIG, "blis-cpu: knob arch names a kernel set this CPU lacks");
    return NULL;
  }
  if (ctx->cntx[arch]) return ctx->cntx[arch];
  c = mi__blis_calloc(ctx, sizeof *c);
  if (!c) {
    *rc = mi_sdk_error(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: cannot allocate a BLIS context");
    return NULL;
  }
  bli_init();
  switch (arch) {
  case MI__ARCH_SKX: bli_cntx_init_skx(c); break;
  case MI__ARCH_HASWELL: bli_cntx_init_haswell(c); break;
  case MI__ARCH_ZEN3: bli_cntx_init_zen3(c); break;
  case MI__ARCH_ZEN2: bli_cntx_init_zen2(c); break;
  case MI__ARCH_ZEN: bli_cntx_init_zen(c); break;
  default: bli_cntx_init_generic(c); break;
  }
  ctx->cntx[arch] = c;
  return c;
}

void mi__blis_cntx_release(mi_plugin_ctx_t *ctx) {
  int i;
  for (i = 0; i < MI__ARCH_COUNT; i++) {
    mi__blis_free(ctx, ctx->cntx[i]);
    ctx->cntx[i] = NULL;
  }
}

/* One GEMM cut into blocks of rows or columns of C, each a single-threaded BLIS call on the
 * plugin's pool. */
typedef struct sgemm_task {
  const cntx_t *cntx;
  int64_t m, n, k, blk, rsa, csa, rsb, csb, rsc, csc;
  int by_rows;
  float alpha, beta;
  const float *a, *b;
  float *c;
} sgemm_task_t;

static void sgemm_part(void *arg, int64_t i0, int64_t i1) {
  const sgemm_task_t *q = arg;
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  float alpha = q->alpha, beta = q->beta;
  int64_t i;
  bli_rntm_set_num_threads(1, &rntm);
  for (i = i0; i < i1; i++) {
    int64_t lo = i * q->blk, len = (q->by_rows ? q->m : q->n) - lo;
    if (len > q->blk) len = q->blk;
    if (q->by_rows)
      bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, len, q->n, q->k, &alpha, (float *)q->a + lo * q->rsa,
                   q->rsa, q->csa, (float *)q->b, q->rsb, q->csb, &beta, q->c + lo * q->rsc, q->rsc, q->csc,
                   (cntx_t *)q->cntx, &rntm);
    else
      bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, q->m, len, q->k, &alpha, (float *)q->a, q->rsa, q->csa,
                   (float *)q->b + lo * q->csb, q->rsb, q->csb, &beta, q->c + lo * q->csc, q->rsc, q->csc,
                   (cntx_t *)q->cntx, &rntm);
  }
}

/* Most blocks one GEMM is cut into. */
#define SGEMM_BLOCKS 32

void mi__blis_sgemm(const mi__blis_env_t *env, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                    int64_t csb, float beta, float *c, int64_t rsc, int64_t csc) {
  sgemm_task_t q;
  double macs = (double)m * (double)n * (double)k;
  int64_t nb, len;
  if (m <= 0 || n <= 0) return;
  if (env->ctx) atomic_store(&env->ctx->gemm_used, 1);
  /* BLIS's own threads meet at spinning barriers several times per call and are started beside the
   * plugin's pool, whose workers spin too: on 2 cores a descheduled thread stalls them all (a
   * 40x120x6625 MatMul took 1.4 ms on 1 thread, 260 ms on 2). So the GEMM is cut into blocks of
   * the longer side of C of at least MI__GEMM_MIN_MACS multiply-adds, each one single-threaded
   * BLIS call, and the pool runs the blocks. The blocks depend on the shape only, not on the
   * thread count, so neither do the sums. */
  q.by_rows = m > n;
  len = q.by_rows ? m : n;
  nb = (int64_t)(macs / MI__GEMM_MIN_MACS);
  if (nb > SGEMM_BLOCKS) nb = SGEMM_BLOCKS;
  if (nb > len / 16) nb = len / 16; /* blocks of 16 rows or columns at least */
  if (nb < 1) nb = 1;
  q.blk = (len + nb - 1) / nb;
  if (nb > 1) q.blk = (q.blk + 15) / 16 * 16; /* whole register tiles */
  q.cntx = env->cntx_small && macs < MI__AUTO_SMALL_MACS ? env->cntx_small : env->cntx;
  q.m = m;
  q.n = n;
  q.k = k;
  q.alpha = alpha;
  q.beta = beta;
  q.a = a;
  q.b = b;
  q.c = c;
  q.rsa = rsa;
  q.csa = csa;
  q.rsb = rsb;
  q.csb = csb;
  q.rsc = rsc;
  q.csc = csc;
  nb = (len + q.blk - 1) / q.blk;
  if (nb == 1 || env->threads <= 1) sgemm_part(&q, 0, nb);
  else
    mi__blis_parallel(env, nb, 1, (int64_t)(macs / (double)nb), sgemm_part, &q);
}
