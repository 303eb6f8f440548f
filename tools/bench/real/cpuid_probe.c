/* cpuid_probe.c - prints the AVX-512/AVX-VNNI/AMX bits cpuid reports to this process; with the
 * cpuid_cap library preloaded they must read 0 (tests/integration/cpuid_cap.sh, run.py).
 *
 * usage: cpuid_probe             one line: avx512f=B avx512bw=B avx512vl=B avx512vnni=B
 *                                avx_vnni=B amx_int8=B avx2=B fma=B
 *        cpuid_probe --chain     installs its own SIGSEGV and SIGILL handlers after the library's
 *                                (as node does), reads cpuid, then faults on purpose: the SIGSEGV
 *                                handler must get that fault (exit 42 after printing the line)
 *        cpuid_probe --chain-ud2 the same, then runs a ud2 of its own: the SIGILL handler must get
 *                                it (exit 44 after printing the line)
 *        cpuid_probe --crash     faults on purpose with no handler: must die of SIGSEGV
 *        cpuid_probe --ud2       prints the line, then runs a ud2 of its own (not a patched cpuid
 *                                site): must die of SIGILL */
#include <cpuid.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void probe(void) {
  unsigned a, b, c, d, a1, b1, c1, d1, a7, b7, c7, d7;
  __cpuid_count(1, 0, a, b, c, d);
  __cpuid_count(7, 0, a7, b7, c7, d7);
  __cpuid_count(7, 1, a1, b1, c1, d1);
  printf("avx512f=%u avx512bw=%u avx512vl=%u avx512vnni=%u avx_vnni=%u amx_int8=%u avx2=%u fma=%u\n", (b7 >> 16) & 1,
         (b7 >> 30) & 1, (b7 >> 31) & 1, (c7 >> 11) & 1, (a1 >> 4) & 1, (d7 >> 25) & 1, (b7 >> 5) & 1, (c >> 12) & 1);
  fflush(stdout);
  (void)a, (void)b, (void)d, (void)a7, (void)b1, (void)c1, (void)d1;
}

static void on_signal(int sig) {
  static const char segv[] = "cpuid_probe: own SIGSEGV handler reached\n",
                    ill[] = "cpuid_probe: own SIGILL handler reached\n";
  const char *msg = sig == SIGILL ? ill : segv;
  size_t n = sig == SIGILL ? sizeof ill - 1 : sizeof segv - 1;
  if (write(1, msg, n) < 0) _exit(43);
  _exit(sig == SIGILL ? 44 : 42);
}

static void fault(void) {
  volatile int *volatile p = NULL;
  *p = 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--chain") == 0 || strcmp(argv[1], "--chain-ud2") == 0)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGILL, &sa, NULL) != 0) return 2;
    probe();
    if (strcmp(argv[1], "--chain-ud2") == 0) __builtin_trap();
    fault();
    return 3; /* not reached */
  }
  probe();
  if (argc > 1 && strcmp(argv[1], "--crash") == 0) {
    fault();
    return 3;
  }
  if (argc > 1 && strcmp(argv[1], "--ud2") == 0) {
    __builtin_trap();
  }
  return 0;
}
