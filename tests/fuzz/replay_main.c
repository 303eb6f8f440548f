/* replay_main.c - runs a fuzz target over files and directories of inputs, so the corpora are
 * replayed by the ordinary test suite (and under the sanitizer build) without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long len;
  if (!f) {
    fprintf(stderr, "replay: %s: cannot open\n", path);
    return 1;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return 1;
  }
  buf = malloc(len ? (size_t)len : 1);
  if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    fclose(f);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)len);
  /* Every truncation of a valid input is an input too: cheap, and finds length bugs. */
  for (long cut = 0; cut < len; cut += len / 16 + 1) LLVMFuzzerTestOneInput(buf, (size_t)cut);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      struct dirent *e;
      while (d && (e = readdir(d))) {
        char path[4096];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
        failed += replay_file(path);
        files++;
      }
      if (d) closedir(d);
    } else {
      failed += replay_file(argv[i]);
      files++;
    }
  }
  printf("replayed %d input(s), %d unreadable\n", files, failed);
  return failed ? 1 : 0;
}
