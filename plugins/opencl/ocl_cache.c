/* ocl_cache.c - builds OpenCL programs once: an in-memory cache per device and binaries on disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl.h"

/* A cache file: magic, payload size, payload hash, then the driver's program binary. The hash
 * catches a torn or damaged file before the driver sees it: some drivers crash on bad input. */
static const char k_magic[8] = {'M', 'I', 'O', 'C', 'L', 'B', '1', '\0'};

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int mkdir_p(const char *path) {
  char tmp[512];
  size_t i, n = strlen(path);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, path, n + 1);
  for (i = 1; i <= n; i++) {
    if (tmp[i] == '/' || tmp[i] == '\0') {
      char c = tmp[i];
      tmp[i] = '\0';
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
      tmp[i] = c;
    }
  }
  return 0;
}

void mi__ocl_cache_dir_init(mi_plugin_ctx_t *ctx) {
  const char *v = NULL;
  char base[496];
  char probe[600];
  FILE *f;
  if (ctx->host && ctx->host->get_setting)
    v = ctx->host->get_setting(ctx->host->host_ctx, "MI_CACHE_DIR");
  if (!v || !*v) v = getenv("MI_CACHE_DIR");
  if (v && *v) {
    snprintf(base, sizeof base, "%s", v);
  } else if ((v = getenv("XDG_CACHE_HOME")) && *v) {
    snprintf(base, sizeof base, "%s/metainfer", v);
  } else if ((v = getenv("HOME")) && *v) {
    snprintf(base, sizeof base, "%s/.cache/metainfer", v);
  } else {
    mi__ocl_log(ctx, MI_LOG_WARN,
                "no cache directory (MI_CACHE_DIR, XDG_CACHE_HOME, HOME unset): "
                "program binaries are not kept on disk");
    return;
  }
  snprintf(ctx->cache_dir, sizeof ctx->cache_dir, "%s/opencl", base);
  snprintf(probe, sizeof probe, "%s/.probe.%ld", ctx->cache_dir, (long)getpid());
  if (mkdir_p(ctx->cache_dir) != 0 || !(f = fopen(probe, "wb"))) {
    mi__ocl_log(ctx, MI_LOG_WARN,
                "cache directory %s is not writable: program binaries are "
                "not kept on disk",
                ctx->cache_dir);
    ctx->cache_dir[0] = '\0';
    return;
  }
  fclose(f);
  remove(probe);
}

static void make_key(const ocl_device_t *dev, const char *src, const char *opt, char key[33]) {
  const char *parts[5];
  uint64_t h1 = 14695981039346656037ull, h2 = 0x84222325cbf29ce4ull;
  int i;
  parts[0] = src;
  parts[1] = opt;
  parts[2] = dev->desc.name;
  parts[3] = dev->desc.driver_version;
  parts[4] = dev->platform_version;
  for (i = 0; i < 5; i++) {
    size_t n = strlen(parts[i]) + 1; /* the NUL separates the parts */
    h1 = fnv(h1, parts[i], n);
    h2 = fnv(h2 ^ (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull, parts[i], n);
  }
  snprintf(key, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

static void build_log_head(const ocl_device_t *dev, cl_program prog, char *out, size_t size) {
  size_t got = 0, i, w = 0;
  char *log;
  int lines = 0;
  out[0] = '\0';
  if (clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &got) != CL_SUCCESS ||
      got == 0)
    return;
  log = malloc(got + 1);
  if (!log) return;
  if (clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, got, log, NULL) == CL_SUCCESS) {
    log[got] = '\0';
    /* the first three non-empty lines, joined with " | " to keep the message one line */
    for (i = 0; log[i] && lines < 3 && w + 4 < size; i++) {
      if (log[i] == '\n') {
        if (w > 0 && out[w - 1] != ' ') {
          lines++;
          if (lines < 3) {
            memcpy(out + w, " | ", 3);
            w += 3;
          }
        }
        continue;
      }
      out[w++] = log[i];
    }
    out[w] = '\0';
  }
  free(log);
}

/* The driver's compiler writes its diagnostics ("1 warning generated.") straight to fd 2, the
 * terminal of whoever runs the tuner: for the length of the build, fd 2 goes to
 * CACHE_DIR/build.log instead (appended). Process-wide, so another thread's stderr output
 * during a build lands there too; plugin calls that build are not made concurrently. */
static int chatter_begin(const mi_plugin_ctx_t *ctx) {
  char path[600];
  int fd, saved;
  if (!ctx->cache_dir[0]) return -1;
  snprintf(path, sizeof path, "%s/build.log", ctx->cache_dir);
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  fflush(stderr);
  saved = dup(STDERR_FILENO);
  if (saved < 0 || dup2(fd, STDERR_FILENO) < 0) {
    if (saved >= 0) close(saved);
    saved = -1;
  }
  close(fd);
  return saved;
}

static void chatter_end(int saved) {
  if (saved < 0) return;
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
}

static int32_t build(mi_plugin_ctx_t *ctx, ocl_device_t *dev, cl_program prog, const char *opt,
                     int quiet, mi_error_t *err) {
  uint64_t t0 = now_ns();
  int saved = chatter_begin(ctx);
  cl_int rc = clBuildProgram(prog, 1, &dev->id, opt, NULL, NULL);
  chatter_end(saved);
  dev->compile_ns += now_ns() - t0;
  if (rc != CL_SUCCESS) {
    char head[200];
    if (quiet) return MI_ERR_DEVICE;
    build_log_head(dev, prog, head, sizeof head);
    mi__ocl_log(ctx, MI_LOG_ERROR, "clBuildProgram failed (%s): %s", opt, head);
    return mi_sdk_errorf(err, MI_ERR_DEVICE, "clBuildProgram: %s: %s", mi__ocl_code_name(rc),
                         head);
  }
  return MI_OK;
}

static cl_program load_disk(mi_plugin_ctx_t *ctx, ocl_device_t *dev, const char *path,
                            const char *opt) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  char magic[8];
  uint64_t size = 0, hash = 0;
  cl_program prog = NULL;
  cl_int rc, bst;
  const unsigned char *bins[1];
  size_t sz;
  if (!f) return NULL;
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, k_magic, 8) != 0 ||
      fread(&size, sizeof size, 1, f) != 1 || fread(&hash, sizeof hash, 1, f) != 1 ||
      size == 0 || size > ((uint64_t)1 << 30))
    goto corrupt;
  buf = malloc((size_t)size + 1);
  if (!buf) goto done;
  if (fread(buf, 1, (size_t)size, f) != size || fgetc(f) != EOF) goto corrupt;
  if (fnv(14695981039346656037ull, buf, (size_t)size) != hash) goto corrupt;
  sz = (size_t)size;
  bins[0] = buf;
  prog = clCreateProgramWithBinary(dev->ctx, 1, &dev->id, &sz, bins, &bst, &rc);
  if (!prog || bst != CL_SUCCESS) goto corrupt;
  if (build(ctx, dev, prog, opt, 1, NULL) != MI_OK) goto corrupt;
  dev->disk_hits++;
  goto done;
corrupt:
  if (prog) clReleaseProgram(prog);
  prog = NULL;
  dev->disk_corrupt++;
  mi__ocl_log(ctx, MI_LOG_WARN, "corrupt program cache entry %s: rebuilding from source", path);
done:
  free(buf);
  fclose(f);
  return prog;
}

static void store_disk(mi_plugin_ctx_t *ctx, ocl_device_t *dev, const char *path,
                       cl_program prog) {
  size_t size = 0;
  unsigned char *buf = NULL;
  unsigned char *bins[1];
  char tmp[640];
  FILE *f = NULL;
  uint64_t size64, hash;
  int ok = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
      size == 0)
    return;
  buf = malloc(size);
  if (!buf) return;
  bins[0] = buf;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS) goto done;
  /* write to a private name, then rename: readers see the old file or the whole new one */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%llu", path, (long)getpid(),
           (unsigned long long)dev->seq++);
  f = fopen(tmp, "wb");
  if (!f) goto done;
  size64 = size;
  hash = fnv(14695981039346656037ull, buf, size);
  ok = fwrite(k_magic, 1, 8, f) == 8 && fwrite(&size64, sizeof size64, 1, f) == 1 &&
       fwrite(&hash, sizeof hash, 1, f) == 1 && fwrite(buf, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  f = NULL;
  ok = ok && rename(tmp, path) == 0;
  if (!ok) remove(tmp);
done:
  if (!ok) mi__ocl_log(ctx, MI_LOG_WARN, "could not write program cache entry %s", path);
  free(buf);
}

int32_t mi__ocl_program(mi_plugin_ctx_t *ctx, ocl_device_t *dev, const char *source,
                        const char *options, cl_program *out, mi_error_t *err) {
  char key[33], path[640];
  cl_program prog = NULL;
  cl_int rc;
  int i;
  int32_t st;
  *out = NULL;
  make_key(dev, source, options, key);
  for (i = 0; i < dev->nprogs; i++) {
    if (strcmp(dev->progs[i].key, key) == 0) {
      dev->mem_hits++;
      *out = dev->progs[i].prog;
      return MI_OK;
    }
  }
  if (dev->nprogs == dev->cap_progs) {
    ocl_prog_t *np = mi_sdk_grow(dev->progs, &dev->cap_progs, sizeof *np);
    if (!np) return mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    dev->progs = np;
  }
  path[0] = '\0';
  if (ctx->cache_dir[0]) {
    snprintf(path, sizeof path, "%s/%s.bin", ctx->cache_dir, key);
    prog = load_disk(ctx, dev, path, options);
  }
  if (!prog) {
    const char *srcs[1];
    srcs[0] = source;
    prog = clCreateProgramWithSource(dev->ctx, 1, srcs, NULL, &rc);
    if (!prog) return mi__ocl_fail(err, "clCreateProgramWithSource", rc);
    st = build(ctx, dev, prog, options, 0, err);
    if (st != MI_OK) {
      clReleaseProgram(prog);
      return st;
    }
    dev->built_from_source++;
    if (path[0]) store_disk(ctx, dev, path, prog);
  }
  memcpy(dev->progs[dev->nprogs].key, key, sizeof key);
  dev->progs[dev->nprogs].prog = prog;
  dev->nprogs++;
  *out = prog;
  return MI_OK;
}
