/* npu_devfile.c - strict parser of the `key = value` device description files (npu-*.conf). */
#include "npu_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A gen1-like device, so a description file only lists what differs. */
void npu__spec_defaults(npu_spec_t *s) {
  static const npu_level_t lv[] = {{200, 0.60}, {400, 0.70}, {600, 0.80}, {800, 0.90}, {1000, 1.00}};
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "npu");
  snprintf(s->vendor, sizeof s->vendor, "Meta Infer simulated NPU");
  s->cores = 4;
  s->mac_rows = 32;
  s->mac_cols = 32;
  s->vector_lanes = 64;
  s->channel_align = 16;
  s->fp16_divisor = 4;
  s->sram_kib = 1024;
  s->dram_mib = 4096;
  s->dma_gbs = 25.6;
  s->dma_bytes_per_cycle = 64;
  s->dma_pj_per_byte = 20;
  s->overlap_eff = 0.9;
  s->level_count = (int)(sizeof lv / sizeof lv[0]);
  memcpy(s->levels, lv, sizeof lv);
  s->static_w = 0.3;
  s->c_eff_nf = 0.5;
  s->c_clock_nf = 0.15;
  s->thermal_r = 30;
  s->thermal_tau_s = 2.0;
  s->ambient_c = 25;
  s->throttle_c = 85;
  s->throttle_ratio = 0.6;
  s->noise = 0.0;
  s->seed = 1;
  s->sync_cycles = 400;
  s->launch_cycles = 2000;
}

typedef enum { K_INT,
               K_REAL,
               K_TEXT,
               K_DVFS,
               K_U64 } kind_t;

typedef struct key_def {
  const char *key;
  kind_t kind;
  size_t off;
  double lo, hi;
} key_def_t;

#define KOFF(f) offsetof(npu_spec_t, f)
static const key_def_t KEYS[] = {
    {"name", K_TEXT, KOFF(name), 0, 0},
    {"vendor", K_TEXT, KOFF(vendor), 0, 0},
    {"cores", K_INT, KOFF(cores), 1, 64},
    {"mac_rows", K_INT, KOFF(mac_rows), 1, 1024},
    {"mac_cols", K_INT, KOFF(mac_cols), 1, 1024},
    {"vector_lanes", K_INT, KOFF(vector_lanes), 1, 4096},
    {"channel_align", K_INT, KOFF(channel_align), 1, 256},
    {"fp16_divisor", K_INT, KOFF(fp16_divisor), 1, 64},
    {"sram_kib", K_REAL, KOFF(sram_kib), 1, 1048576},
    {"dram_mib", K_REAL, KOFF(dram_mib), 1, 1048576},
    {"dma_gbs", K_REAL, KOFF(dma_gbs), 0.001, 100000},
    {"dma_bytes_per_cycle", K_REAL, KOFF(dma_bytes_per_cycle), 1, 65536},
    {"dma_pj_per_byte", K_REAL, KOFF(dma_pj_per_byte), 0, 10000},
    {"overlap_eff", K_REAL, KOFF(overlap_eff), 0, 1},
    {"dvfs", K_DVFS, KOFF(levels), 0, 0},
    {"static_w", K_REAL, KOFF(static_w), 0, 1000},
    {"c_eff_nf", K_REAL, KOFF(c_eff_nf), 0, 1000},
    {"c_clock_nf", K_REAL, KOFF(c_clock_nf), 0, 1000},
    {"thermal_r", K_REAL, KOFF(thermal_r), 0, 1000},
    {"thermal_tau_s", K_REAL, KOFF(thermal_tau_s), 1e-9, 1e6},
    {"ambient_c", K_REAL, KOFF(ambient_c), -50, 100},
    {"throttle_c", K_REAL, KOFF(throttle_c), 0, 200},
    {"throttle_ratio", K_REAL, KOFF(throttle_ratio), 0.01, 1},
    {"noise", K_REAL, KOFF(noise), 0, 0.5},
    {"seed", K_U64, KOFF(seed), 0, 0},
    {"sync_cycles", K_REAL, KOFF(sync_cycles), 0, 1e9},
    {"launch_cycles", K_REAL, KOFF(launch_cycles), 0, 1e9},
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

static char *trim(char *s) {
  char *e;
  while (*s == ' ' || *s == '\t') s++;
  e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = '\0';
  return s;
}

static int parse_real(const char *v, double *out) {
  char *end;
  errno = 0;
  *out = strtod(v, &end);
  return errno == 0 && end != v && *end == '\0';
}

/* "MHz:volts, MHz:volts, ..." with strictly increasing frequency and non-decreasing voltage. */
static int parse_dvfs(char *v, npu_spec_t *s, char *why, size_t whylen) {
  int n = 0;
  char *save = NULL, *tok;
  for (tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon, *a = trim(tok);
    double mhz, volts;
    colon = strchr(a, ':');
    if (!colon) {
      snprintf(why, whylen, "level '%s' is not MHZ:VOLTS", a);
      return 0;
    }
    *colon = '\0';
    if (!parse_real(trim(a), &mhz) || !parse_real(trim(colon + 1), &volts) || mhz <= 0 ||
        mhz > 100000 || volts <= 0 || volts > 5) {
      snprintf(why, whylen, "level %d is not a positive MHZ:VOLTS pair", n);
      return 0;
    }
    if (n >= NPU_MAX_LEVELS) {
      snprintf(why, whylen, "more than %d levels", NPU_MAX_LEVELS);
      return 0;
    }
    if (n > 0 && (mhz <= s->levels[n - 1].mhz || volts < s->levels[n - 1].volts)) {
      snprintf(why, whylen, "level %d: frequency must increase and voltage not decrease", n);
      return 0;
    }
    s->levels[n].mhz = mhz;
    s->levels[n].volts = volts;
    n++;
  }
  if (n == 0) {
    snprintf(why, whylen, "no levels");
    return 0;
  }
  s->level_count = n;
  return 1;
}

static int set_value(const key_def_t *k, char *v, npu_spec_t *s, char *why, size_t whylen) {
  char *base = (char *)s + k->off;
  double d;
  if (k->kind == K_TEXT) {
    size_t n = strlen(v);
    if (n == 0 || n >= 64) {
      snprintf(why, whylen, "expected 1..63 characters");
      return 0;
    }
    memcpy(base, v, n + 1);
    return 1;
  }
  if (k->kind == K_DVFS) return parse_dvfs(v, s, why, whylen);
  if (k->kind == K_U64) {
    char *end;
    unsigned long long u;
    errno = 0;
    u = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-') {
      snprintf(why, whylen, "expected an unsigned integer");
      return 0;
    }
    *(uint64_t *)(void *)base = (uint64_t)u;
    return 1;
  }
  if (k->kind == K_INT) {
    char *end;
    long l;
    errno = 0;
    l = strtol(v, &end, 10);
    if (errno || end == v || *end || l < (long)k->lo || l > (long)k->hi) {
      snprintf(why, whylen, "expected an integer in %g..%g", k->lo, k->hi);
      return 0;
    }
    *(int *)(void *)base = (int)l;
    return 1;
  }
  if (!parse_real(v, &d) || d < k->lo || d > k->hi) {
    snprintf(why, whylen, "expected a number in %g..%g", k->lo, k->hi);
    return 0;
  }
  *(double *)(void *)base = d;
  return 1;
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

int32_t npu__spec_load(const char *path, npu_spec_t *out, mi_error_t *err) {
  char line[1024], why[128], shown[48];
  unsigned char seen[NKEYS];
  int lineno = 0;
  int32_t rc = MI_OK;
  FILE *f;
  npu__spec_defaults(out);
  memset(seen, 0, sizeof seen);
  snprintf(out->path, sizeof out->path, "%s", path);
  {
    /* default name: the file name without ".conf" */
    const char *b = base_name(path);
    size_t n = strcspn(b, ".");
    if (n >= sizeof out->name) n = sizeof out->name - 1;
    memcpy(out->name, b, n);
    out->name[n] = '\0';
  }
  f = fopen(path, "r");
  if (!f) {
    return mi_sdk_errorf(err, MI_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  while (fgets(line, sizeof line, f)) {
    char *s, *eq, *key, *val, *hash;
    size_t i;
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      rc = mi_sdk_errorf(err, MI_ERR_PARSE, "%s:%d: line too long", path, lineno);
      goto done;
    }
    hash = strchr(line, '#');
    if (hash) *hash = '\0';
    s = trim(line);
    if (*s == '\0') continue;
    eq = strchr(s, '=');
    if (!eq) {
      rc = mi_sdk_errorf(err, MI_ERR_PARSE, "%s:%d: expected 'key = value'", path, lineno);
      goto done;
    }
    *eq = '\0';
    key = trim(s);
    val = trim(eq + 1);
    for (i = 0; i < NKEYS; i++)
      if (strcmp(KEYS[i].key, key) == 0) break;
    if (i == NKEYS) {
      rc = mi_sdk_errorf(err, MI_ERR_PARSE, "%s:%d: unknown key '%.40s'", path, lineno, key);
      goto done;
    }
    if (seen[i]) {
      rc = mi_sdk_errorf(err, MI_ERR_PARSE, "%s:%d: duplicate key '%s'", path, lineno, key);
      goto done;
    }
    seen[i] = 1;
    why[0] = '\0';
    snprintf(shown, sizeof shown, "%s", val); /* set_value may tokenize val in place */
    if (!set_value(&KEYS[i], val, out, why, sizeof why)) {
      rc = mi_sdk_errorf(err, MI_ERR_PARSE, "%s:%d: bad value '%s' for '%s': %s", path, lineno, shown, key,
                         why);
      goto done;
    }
  }
  if (out->throttle_c <= out->ambient_c) {
    rc = mi_sdk_errorf(err, MI_ERR_PARSE, "%s:%d: throttle_c must be above ambient_c", path, lineno);
  }
done:
  fclose(f);
  return rc;
}
