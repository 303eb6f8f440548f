/* cpuid_cap.c - LD_PRELOAD library: the process's cpuid instructions report an AVX2-only x86-64
 * (no AVX-512, AMX or AVX-VNNI), through Linux's CPUID faulting, so a program that picks its
 * kernels by cpuid (ONNX Runtime's MLAS) runs its AVX2 kernels on an AVX-512 machine.
 *
 * The constructor installs a SIGSEGV handler and turns CPUID faulting on (arch_prctl
 * ARCH_SET_CPUID 0: per thread, inherited by the threads created later, reset by execve, so a
 * child process loads the library again through LD_PRELOAD). Each cpuid then raises SIGSEGV; the
 * handler runs the real instruction with faulting off for that moment, clears the feature bits
 * an AVX2-only CPU lacks, writes them to the interrupted registers and steps over the two bytes.
 * Every other SIGSEGV goes to the program's own handler or, where it has none, kills the process
 * as it would have without this library. The program's sigaction()/signal() calls for SIGSEGV
 * are recorded instead of replacing ours (node resets the signal dispositions and installs its
 * WebAssembly trap handler at start), and our handler forwards to what it recorded.
 *
 * Not capped: xgetbv (XCR0 still lists the AVX-512 state; programs test it only together with
 * the cpuid bits), leaf 0xD's state sizes, threads already running when the library loads.
 * Where CPUID faulting is missing (a CPU without it, a hypervisor that does not expose it) the
 * constructor says so in one line on stderr and the process sees its real CPU; callers verify
 * with cpuid_probe (tools/bench/real/run.py refuses its capped column then).
 * MI_CPUID_CAP_VERBOSE=1 prints, at exit, how many cpuid instructions were rewritten. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
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
/* The SIGSEGV disposition the program believes it has installed. */
static struct sigaction app_segv;
/* Set once our handler and faulting are in place: from then on SIGSEGV calls are recorded. */
static volatile sig_atomic_t cap_active;
static unsigned long cap_count;

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

/* The program's SIGSEGV handler for a fault that is not a cpuid; with none, the default action
 * (a core dump): restore it and raise, the signal is delivered as soon as we return. */
static void forward(int sig, siginfo_t *si, void *ctx) {
  struct sigaction a = app_segv;
  if (a.sa_flags & SA_RESETHAND) {
    memset(&app_segv, 0, sizeof app_segv);
    app_segv.sa_handler = SIG_DFL;
  }
  if (a.sa_flags & SA_SIGINFO) {
    a.sa_sigaction(sig, si, ctx);
  } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
    a.sa_handler(sig);
  } else {
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    real_sigaction(SIGSEGV, &d, NULL);
    raise(sig);
  }
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
  ucontext_t *uc = ctx;
  greg_t *g = uc->uc_mcontext.gregs;
  const unsigned char *ip = (const unsigned char *)(uintptr_t)g[REG_RIP];
  /* A faulting cpuid is a #GP (si_code SI_KERNEL) at the instruction 0F A2 itself. */
  if (si->si_code == SI_KERNEL && ip && ip[0] == 0x0f && ip[1] == 0xa2) {
    int saved = errno;
    uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX], r[4];
    set_cpuid(1);
    __asm__ volatile("cpuid"
                     : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
    set_cpuid(0);
    cap_regs(leaf, sub, r);
    /* cpuid writes the 32-bit registers, which zeroes their upper halves. */
    g[REG_RAX] = (greg_t)r[0];
    g[REG_RBX] = (greg_t)r[1];
    g[REG_RCX] = (greg_t)r[2];
    g[REG_RDX] = (greg_t)r[3];
    g[REG_RIP] += 2;
    __atomic_fetch_add(&cap_count, 1, __ATOMIC_RELAXED);
    errno = saved;
    return;
  }
  forward(sig, si, ctx);
}

static void resolve(void) {
  if (!real_sigaction) real_sigaction = (mi__sigaction_fn)(uintptr_t)dlsym(RTLD_NEXT, "sigaction");
}

MI_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  resolve();
  if (sig != SIGSEGV || !cap_active) return real_sigaction(sig, act, old);
  if (old) *old = app_segv;
  if (act) app_segv = *act;
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

__attribute__((constructor)) static void cap_init(void) {
  struct sigaction sa;
  const char *verbose = getenv("MI_CPUID_CAP_VERBOSE");
  resolve();
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  /* SA_NODEFER: a cpuid inside the program's own SIGSEGV handler is still answered;
   * SA_ONSTACK: a stack overflow reaches the program's handler on its alternate stack. */
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (real_sigaction(SIGSEGV, &sa, &app_segv) != 0) {
    fprintf(stderr, "cpuid_cap: cannot install the SIGSEGV handler (%s); cpuid not capped\n", strerror(errno));
    return;
  }
  if (set_cpuid(0) != 0) {
    fprintf(stderr,
            "cpuid_cap: CPUID faulting unavailable (arch_prctl ARCH_SET_CPUID: %s); "
            "cpuid not capped, this process sees the CPU's own features\n",
            strerror(errno));
    real_sigaction(SIGSEGV, &app_segv, NULL);
    return;
  }
  cap_active = 1;
  if (verbose && *verbose && strcmp(verbose, "0") != 0) atexit(report);
}
