/* cpuid_cap.c - LD_PRELOAD library: the process's cpuid instructions report an AVX2-only x86-64
 * (no AVX-512, AMX or AVX-VNNI), so a program that picks its kernels by cpuid (ONNX Runtime's
 * MLAS) runs its AVX2 kernels on an AVX-512 machine. Two ways to reach the cpuid instructions:
 *
 * - CPUID faulting (Linux arch_prctl ARCH_SET_CPUID 0: per thread, inherited by the threads
 *   created later, reset by execve, so a child process loads the library again through
 *   LD_PRELOAD): every cpuid of the process raises SIGSEGV.
 * - Patched sites, for CPUs or hypervisors without CPUID faulting: cpuid_patch.py copies a
 *   shared library with each of its cpuid instructions (0F A2) replaced by ud2 (0F 0B) and lists
 *   their file offsets in LIB.cpuid-sites; MI_CPUID_CAP_SITES names that list. A ud2 raises
 *   SIGILL; one at a listed offset of that library's mapping is a cpuid. Only the patched
 *   library's cpuid is capped (the program and other libraries see the real CPU).
 *
 * The handler runs the real instruction (with faulting off for that moment), clears the feature
 * bits an AVX2-only CPU lacks, writes them to the interrupted registers and steps over the two
 * bytes. Every other SIGSEGV or SIGILL goes to the program's own handler or, where it has none,
 * kills the process as it would have without this library. The program's sigaction()/signal()
 * calls for those two signals are recorded instead of replacing ours (node resets the signal
 * dispositions and installs its WebAssembly trap handler at start), and our handler forwards to
 * what it recorded.
 *
 * Not capped: xgetbv (XCR0 still lists the AVX-512 state; programs test it only together with
 * the cpuid bits), leaf 0xD's state sizes, threads already running when the library loads.
 * Where neither way is available the constructor says so in one line on stderr and the process
 * sees its real CPU; callers verify (cpuid_probe; tools/bench/real/run.py refuses its capped
 * column then). MI_CPUID_CAP_VERBOSE=1 prints, at exit, how many cpuid instructions were
 * rewritten. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define MI_EXPORT __attribute__((visibility("default")))

typedef int (*mi__sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static mi__sigaction_fn real_sigaction;
/* The SIGSEGV and SIGILL dispositions the program believes it has installed. */
static struct sigaction app_segv, app_ill;
/* Set once our handler is in place for that signal: from then on the program's calls for it are
 * recorded. */
static volatile sig_atomic_t cap_segv, cap_ill;
/* CPUID faulting is on: the handler turns it off around its own cpuid. */
static int faulting;
static unsigned long cap_count;

/* The patched library (MI_CPUID_CAP_SITES without its ".cpuid-sites") and its sites' file
 * offsets, ascending; read once by the constructor. */
#define MAX_SITES 4096
static char site_lib[4096];
static uint64_t sites[MAX_SITES];
static size_t n_sites;

/* Feature bits an AVX2-only CPU (Haswell to Zen 3) does not have. Leaf 7 subleaf 0: EBX
 * AVX512F, DQ, IFMA, PF, ER, CD, BW, VL; ECX AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ;
 * EDX AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512_FP16, AMX-TILE, AMX-INT8.
 * Leaf 7 subleaf 1: EAX AVX-VNNI, AVX512_BF16, AMX-FP16; EDX AVX-VNNI-INT8, AVX-NE-CONVERT,
 * AVX-VNNI-INT16, AVX10. */
#define L7_EBX ((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31))
#define L7_ECX ((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14))
#define L7_EDX ((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25))
#define L71_EAX ((1u << 4) | (1u << 5) | (1u << 21))
#define L71_EDX ((1u << 4) | (1u << 5) | (1u << 10) | (1u << 19))

static long set_cpuid(unsigned long on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on); }

static void cap_regs(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  if (leaf == 7 && sub == 0) {
    r[1] &= ~L7_EBX;
    r[2] &= ~L7_ECX;
    r[3] &= ~L7_EDX;
  } else if (leaf == 7 && sub == 1) {
    r[0] &= ~L71_EAX;
    r[3] &= ~L71_EDX;
  }
}

static struct sigaction *app_of(int sig) { return sig == SIGILL ? &app_ill : &app_segv; }

/* The program's handler for a SIGSEGV or SIGILL that is not a cpuid; with none, the default
 * action (a core dump): restore it and raise, the signal is delivered as soon as we return. */
static void forward(int sig, siginfo_t *si, void *ctx) {
  struct sigaction a = *app_of(sig);
  if (a.sa_flags & SA_RESETHAND) {
    memset(app_of(sig), 0, sizeof a);
    app_of(sig)->sa_handler = SIG_DFL;
  }
  if (a.sa_flags & SA_SIGINFO) {
    a.sa_sigaction(sig, si, ctx);
  } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
    a.sa_handler(sig);
  } else {
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    real_sigaction(sig, &d, NULL);
    raise(sig);
  }
}

/* Answers the cpuid whose registers the signal interrupted, capped, and steps over it. */
static void emulate(greg_t *g) {
  int saved = errno;
  uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX], r[4];
  if (faulting) set_cpuid(1);
  __asm__ volatile("cpuid"
                   : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                   : "a"(leaf), "c"(sub));
  if (faulting) set_cpuid(0);
  cap_regs(leaf, sub, r);
  /* cpuid writes the 32-bit registers, which zeroes their upper halves. */
  g[REG_RAX] = (greg_t)r[0];
  g[REG_RBX] = (greg_t)r[1];
  g[REG_RCX] = (greg_t)r[2];
  g[REG_RDX] = (greg_t)r[3];
  g[REG_RIP] += 2;
  __atomic_fetch_add(&cap_count, 1, __ATOMIC_RELAXED);
  errno = saved;
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
  ucontext_t *uc = ctx;
  const unsigned char *ip = (const unsigned char *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  /* A faulting cpuid is a #GP (si_code SI_KERNEL) at the instruction 0F A2 itself. */
  if (faulting && si->si_code == SI_KERNEL && ip && ip[0] == 0x0f && ip[1] == 0xa2) {
    emulate(uc->uc_mcontext.gregs);
    return;
  }
  forward(sig, si, ctx);
}

static int hexdigit(unsigned c) {
  if (c >= '0' && c <= '9') return (int)(c - '0');
  c |= 32;
  return c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10) : -1;
}

/* Reads the hex digits at *p (none: 0) and moves *p past them. */
static uint64_t hex(const char **p) {
  uint64_t v = 0;
  int d;
  while ((d = hexdigit((unsigned char)**p)) >= 0) {
    v = v * 16 + (unsigned)d;
    (*p)++;
  }
  return v;
}

/* One line of /proc/self/maps ("start-end perms offset dev inode path"): whether it maps the
 * patched library over ip, and the file offset of ip there. */
static int line_maps(const char *l, uintptr_t ip, uint64_t *off) {
  uint64_t lo = hex(&l), hi, fo;
  int field;
  if (*l++ != '-') return 0;
  hi = hex(&l);
  if (ip < lo || ip >= hi) return 0;
  while (*l == ' ') l++;
  while (*l && *l != ' ') l++; /* perms */
  while (*l == ' ') l++;
  fo = hex(&l);
  for (field = 0; field < 2; field++) { /* dev, inode */
    while (*l == ' ') l++;
    while (*l && *l != ' ') l++;
  }
  while (*l == ' ') l++;
  if (strcmp(l, site_lib) != 0) return 0;
  *off = fo + (ip - lo);
  return 1;
}

/* Whether ip is one of the patched library's listed sites, by its mapping in /proc/self/maps
 * (read with open/read only: async-signal-safe). The buffers are static, not on the signal stack
 * (an alternate stack can be small), so threads trapping at once take turns. */
static int is_site(uintptr_t ip) {
  static char buf[8192], line[4352];
  static volatile char busy;
  size_t len = 0, lo = 0, hi = n_sites;
  uint64_t off = 0;
  int fd, found = 0;
  ssize_t got;
  while (__atomic_test_and_set(&busy, __ATOMIC_ACQUIRE)) {
  }
  fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    __atomic_clear(&busy, __ATOMIC_RELEASE);
    return 0;
  }
  while (!found && (got = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < got && !found; i++) {
      if (buf[i] != '\n') {
        if (len < sizeof line - 1) line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      len = 0;
      found = line_maps(line, ip, &off);
    }
  }
  close(fd);
  __atomic_clear(&busy, __ATOMIC_RELEASE);
  if (!found) return 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sites[mid] == off) return 1;
    if (sites[mid] < off) lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

static void on_ill(int sig, siginfo_t *si, void *ctx) {
  ucontext_t *uc = ctx;
  const unsigned char *ip = (const unsigned char *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  if (ip && ip[0] == 0x0f && ip[1] == 0x0b && is_site((uintptr_t)ip)) {
    emulate(uc->uc_mcontext.gregs);
    return;
  }
  forward(sig, si, ctx);
}

static void resolve(void) {
  if (!real_sigaction) real_sigaction = (mi__sigaction_fn)(uintptr_t)dlsym(RTLD_NEXT, "sigaction");
}

MI_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  resolve();
  if (!((sig == SIGSEGV && cap_segv) || (sig == SIGILL && cap_ill))) return real_sigaction(sig, act, old);
  if (old) *old = *app_of(sig);
  if (act) *app_of(sig) = *act;
  return 0;
}

MI_EXPORT void (*signal(int sig, void (*handler)(int)))(int) {
  struct sigaction a, old;
  memset(&a, 0, sizeof a);
  a.sa_handler = handler;
  a.sa_flags = SA_RESTART;
  if (sigaction(sig, &a, &old) != 0) return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) ? (void (*)(int))(uintptr_t)old.sa_sigaction : old.sa_handler;
}

static void report(void) {
  fprintf(stderr, "cpuid_cap: %lu cpuid instructions capped at AVX2\n",
          __atomic_load_n(&cap_count, __ATOMIC_RELAXED));
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* MI_CPUID_CAP_SITES=LIB.cpuid-sites (cpuid_patch.py): LIB's resolved path and the sites, one hex
 * file offset a line ('#' lines are comments). 0 when unset; -1 with a message on a bad list. */
static int read_sites(void) {
  const char *path = getenv("MI_CPUID_CAP_SITES"), *suffix = ".cpuid-sites";
  char lib[4096], line[256];
  size_t n, k = strlen(suffix), lineno;
  FILE *f;
  if (!path || !*path) return 0;
  n = strlen(path);
  if (n <= k || n - k >= sizeof lib || strcmp(path + n - k, suffix) != 0) {
    fprintf(stderr, "cpuid_cap: MI_CPUID_CAP_SITES=%s does not name a LIB%s list\n", path, suffix);
    return -1;
  }
  memcpy(lib, path, n - k);
  lib[n - k] = '\0';
  if (!realpath(lib, site_lib)) {
    fprintf(stderr, "cpuid_cap: %s (the library of MI_CPUID_CAP_SITES): %s\n", lib, strerror(errno));
    return -1;
  }
  if (!(f = fopen(path, "r"))) {
    fprintf(stderr, "cpuid_cap: %s: %s\n", path, strerror(errno));
    return -1;
  }
  for (lineno = 1; fgets(line, sizeof line, f); lineno++) {
    const char *p = line, *digits;
    uint64_t v;
    if (line[0] == '#' || line[0] == '\n') continue;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
    digits = p;
    v = hex(&p);
    if (p == digits || (*p != '\n' && *p != '\0') || n_sites == MAX_SITES) {
      fprintf(stderr, "cpuid_cap: %s:%zu: not a hex file offset (or over %d sites)\n", path, lineno, MAX_SITES);
      fclose(f);
      n_sites = 0;
      return -1;
    }
    sites[n_sites++] = v;
  }
  fclose(f);
  qsort(sites, n_sites, sizeof *sites, cmp_u64);
  return 1;
}

/* Installs on_* for sig and records the program's disposition until then in *app. */
static int install(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *app) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  /* SA_NODEFER: a cpuid inside the program's own handler is still answered; SA_ONSTACK: a stack
   * overflow reaches the program's handler on its alternate stack. */
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (real_sigaction(sig, &sa, app) == 0) return 0;
  fprintf(stderr, "cpuid_cap: cannot install the %s handler (%s); cpuid not capped\n",
          sig == SIGILL ? "SIGILL" : "SIGSEGV", strerror(errno));
  return -1;
}

__attribute__((constructor)) static void cap_init(void) {
  const char *verbose = getenv("MI_CPUID_CAP_VERBOSE");
  int patched;
  resolve();
  patched = read_sites();
  if (patched < 0) return;
  if (install(SIGSEGV, on_segv, &app_segv) != 0) return;
  if (set_cpuid(0) == 0) {
    faulting = 1;
    cap_segv = 1;
  } else {
    real_sigaction(SIGSEGV, &app_segv, NULL);
    if (!patched) {
      fprintf(stderr,
              "cpuid_cap: CPUID faulting unavailable (arch_prctl ARCH_SET_CPUID: %s); "
              "cpuid not capped, this process sees the CPU's own features\n",
              strerror(errno));
      return;
    }
  }
  if (patched) {
    if (install(SIGILL, on_ill, &app_ill) != 0) return;
    cap_ill = 1;
  }
  if (verbose && *verbose && strcmp(verbose, "0") != 0) atexit(report);
}
