/* cpuid_probe.c - prints the AVX-512/AVX-VNNI/AMX bits cpuid reports to this process; with the
 * cpuid_cap library preloaded they must read 0 (tests/integration/cpuid_cap.sh, run.py).
 *
 * usage: cpuid_probe             one line: avx512f=B avx512bw=B avx512vl=B avx512vnni=B
 *                                avx_vnni=B amx_int8=B avx2=B fma=B
 *        cpuid_probe --chain     installs its own SIGSEGV handler after the library's (as node
 *                                does), reads cpuid, then faults on purpose: the handler must get
 *                                that fault (exit 42 after printing the line)
 *        cpuid_probe --crash     faults on purpose with no handler: must die of SIGSEGV */
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

static void on_segv(int sig) {
  static const char msg[] = "cpuid_probe: own SIGSEGV handler reached\n";
  (void)sig;
  if (write(1, msg, sizeof msg - 1) < 0) _exit(43);
  _exit(42);
}

static void fault(void) {
  volatile int *volatile p = NULL;
  *p = 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--chain") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) return 2;
    probe();
    fault();
    return 3; /* not reached */
  }
  probe();
  if (argc > 1 && strcmp(argv[1], "--crash") == 0) {
    fault();
    return 3;
  }
  return 0;
}
