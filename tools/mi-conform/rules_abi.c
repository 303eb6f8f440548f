/* rules_abi.c - conformance rules on the binary interface: exports, negotiation, struct sizes,
 * device indices. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* Symbols every shared object defines that are not the plugin's doing. */
static int is_toolchain_symbol(const char *s) {
  static const char *const k[] = {"_init", "_fini", "_edata", "_end", "__bss_start", "_DYNAMIC",
                                  "_GLOBAL_OFFSET_TABLE_", "__data_start", "_IO_stdin_used"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (!strcmp(s, k[i])) return 1;
  return 0;
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long len;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
      free(buf);
      buf = NULL;
    }
    *size = (size_t)len;
  }
  fclose(f);
  return buf;
}

/* R1: the dynamic symbol table defines exactly one global symbol, the entry point. */
int conform_rule_exports(conform_ctx_t *c, char *why, size_t n) {
  size_t size = 0, used = 0;
  unsigned char *img = read_file(c->so_path, &size);
  const Elf64_Ehdr *eh;
  const Elf64_Shdr *sh;
  int has_entry = 0, extra = 0, st = CONFORM_FAIL;
  char extras[256] = "";

  if (!img) {
    return conform_verdict(why, n, CONFORM_FAIL, "%s: cannot read the library", c->so_path);
  }
  eh = (const Elf64_Ehdr *)img;
  if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
      eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > size) {
    snprintf(why, n, "%s: not a 64-bit ELF shared object", c->so_path);
    goto done;
  }
  sh = (const Elf64_Shdr *)(img + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    const Elf64_Shdr *strs;
    if (sh[i].sh_type != SHT_DYNSYM) continue;
    if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset + sh[i].sh_size > size) break;
    strs = &sh[sh[i].sh_link];
    if (strs->sh_offset + strs->sh_size > size) break;
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++) {
      const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset) + k;
      int bind = ELF64_ST_BIND(sym->st_info);
      const char *name;
      if (sym->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
      if (ELF64_ST_VISIBILITY(sym->st_other) != STV_DEFAULT) continue;
      if (sym->st_name >= strs->sh_size) continue;
      name = (const char *)img + strs->sh_offset + sym->st_name;
      if (!strcmp(name, MI_PLUGIN_ENTRY_NAME)) {
        has_entry = 1;
      } else if (!is_toolchain_symbol(name)) {
        if (extra < 5) {
          int w = snprintf(extras + used, sizeof extras - used, "%s%s", extra ? ", " : "", name);
          if (w > 0 && (size_t)w < sizeof extras - used) used += (size_t)w;
        }
        extra++;
      }
    }
  }
  if (!has_entry)
    snprintf(why, n, "the entry symbol %s is not exported", MI_PLUGIN_ENTRY_NAME);
  else if (extra)
    snprintf(why, n, "%d other symbol(s) exported (%s%s); build with -fvisibility=hidden", extra,
             extras, extra > 5 ? ", ..." : "");
  else
    st = CONFORM_PASS;
done:
  free(img);
  return st;
}

/* R2: an older host (minor 0) and a newer one (a larger minor and a larger services table)
 * both get a table; a host of another major is refused with a message, without a crash. */
int conform_rule_negotiation(conform_ctx_t *c, char *why, size_t n) {
  const uint32_t minors[2] = {0, MI_ABI_VERSION_MINOR + 7};
  for (int i = 0; i < 2; i++) {
    if (conform_load(c, MI_ABI_VERSION_MAJOR, minors[i]) != MI_OK) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "host ABI %d.%u: %s", MI_ABI_VERSION_MAJOR, minors[i], c->load_error);
    }
    conform_unload(c);
  }
  /* A newer host passes a larger services table; the plugin must read only what it knows. */
  {
    struct {
      mi_host_api_t api;
      unsigned char future[64];
    } big;
    const mi_plugin_api_t *t;
    mi_error_t err = {0};
    if (conform_load(c, MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR) != MI_OK) {
      return conform_verdict(why, n, CONFORM_FAIL, "%s", c->load_error);
    }
    memset(&big, 0x5A, sizeof big);
    big.api = c->host;
    big.api.struct_size = sizeof big;
    t = c->entry(&big.api, &err);
    if (!t) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "refused a host services table larger than it knows (%zu bytes): %s",
                             sizeof big, err.message);
    }
    /* Another major must be refused, with a reason. */
    memset(&err, 0, sizeof err);
    big.api.struct_size = sizeof big.api;
    big.api.abi_major = MI_ABI_VERSION_MAJOR + 1;
    t = c->entry(&big.api, &err);
    if (t && t->abi_major == MI_ABI_VERSION_MAJOR + 1) {
      /* It claims to speak the next major: fine. */
    } else if (t) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "accepted host ABI major %d while speaking %u", MI_ABI_VERSION_MAJOR + 1,
                             t->abi_major);
    } else if (err.message[0] == '\0') {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "refused host ABI major %d without a message", MI_ABI_VERSION_MAJOR + 1);
    }
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "host minors 0 and %u accepted, larger host table read safely, major %d refused",
                         minors[1], MI_ABI_VERSION_MAJOR + 1);
}

/* The description calls whose out structs R3 probes. */
enum desc_kind { D_DEVICE,
                 D_KNOB,
                 D_VARIANT,
                 D_COUNTER,
                 D_COUNTER_READ,
                 D_CONSTRAINT };
static const char *const k_desc_names[] = {"device_info", "knob_desc", "variant_desc",
                                           "counter_desc", "counter_read", "constraint_desc"};

static int32_t call_desc(const conform_ctx_t *c, int kind, uint32_t dev, uint32_t i, void *o,
                         mi_error_t *e) {
  const mi_plugin_api_t *a = &c->plugin.api;
  mi_plugin_ctx_t *x = c->plugin.ctx;
  switch (kind) {
  case D_DEVICE: return a->device_info(x, dev, o, e);
  case D_KNOB: return a->knob_desc(x, dev, i, o, e);
  case D_VARIANT: return a->variant_desc(x, dev, i, o, e);
  case D_COUNTER: return a->counter_desc(x, dev, i, o, e);
  case D_COUNTER_READ: return a->counter_read(x, dev, i, o, e);
  default: return a->constraint_desc(x, dev, i, o, e);
  }
}

/* One description call per declared size (just the size field, half, and larger than the
 * host's struct), in a canary-filled buffer: nothing past the declared size may change. */
static int probe_sizes(const conform_ctx_t *c, int kind, uint32_t dev, uint32_t index,
                       size_t full, char *why, size_t n) {
  const size_t sizes[3] = {sizeof(uint32_t), full / 2, full + 64};
  unsigned char buf[4096];
  for (int s = 0; s < 3; s++) {
    uint32_t declared = (uint32_t)sizes[s], returned;
    mi_error_t err = {0};
    int32_t rc;
    if (declared + 64 > sizeof buf) continue;
    memset(buf, 0xA5, sizeof buf);
    memset(buf, 0, declared);
    memcpy(buf, &declared, sizeof declared);
    rc = call_desc(c, kind, dev, index, buf, &err);
    for (size_t k = declared; k < declared + 64; k++) {
      if (buf[k] != 0xA5) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "%s(device %u, index %u) with struct_size %u wrote byte %zu past it",
                               k_desc_names[kind], dev, index, declared, k);
      }
    }
    memcpy(&returned, buf, sizeof returned);
    if (rc == MI_OK && returned > declared) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "%s with struct_size %u claims to have written %u bytes",
                             k_desc_names[kind], declared, returned);
    }
  }
  return CONFORM_PASS;
}

/* Probes every index of one kind of description; `count` may be NULL (optional, absent). */
static int probe_all(const conform_ctx_t *c, int kind, uint32_t dev,
                     int32_t (*count)(mi_plugin_ctx_t *, uint32_t, uint32_t *, mi_error_t *),
                     size_t full, char *why, size_t n) {
  uint32_t cnt = 0;
  if (!count || count(c->plugin.ctx, dev, &cnt, NULL) != MI_OK) return CONFORM_PASS;
  for (uint32_t i = 0; i < cnt && i < 4096; i++)
    if (probe_sizes(c, kind, dev, i, full, why, n)) return CONFORM_FAIL;
  return CONFORM_PASS;
}

/* R3: every description call honours smaller and larger caller struct sizes. */
int conform_rule_struct_sizes(conform_ctx_t *c, char *why, size_t n) {
  const mi_plugin_api_t *a = &c->plugin.api;
  for (uint32_t d = 0; d < c->plugin.device_count; d++) {
    if (probe_sizes(c, D_DEVICE, d, 0, sizeof(mi_device_desc_t), why, n) ||
        probe_all(c, D_KNOB, d, a->knob_count, sizeof(mi_knob_desc_t), why, n) ||
        probe_all(c, D_VARIANT, d, a->variant_count, sizeof(mi_variant_desc_t), why, n) ||
        probe_all(c, D_COUNTER, d, a->counter_desc ? a->counter_count : NULL,
                  sizeof(mi_counter_desc_t), why, n) ||
        probe_all(c, D_COUNTER_READ, d, a->counter_read ? a->counter_count : NULL,
                  sizeof(mi_counter_sample_t), why, n) ||
        probe_all(c, D_CONSTRAINT, d, a->constraint_desc ? a->constraint_count : NULL,
                  sizeof(mi_constraint_desc_t), why, n))
      return CONFORM_FAIL;
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "%u device(s): every description call kept within the declared size",
                         c->plugin.device_count);
}

/* R4: calls naming a device past the last one are refused with a message. */
int conform_rule_device_index(conform_ctx_t *c, char *why, size_t n) {
  const mi_plugin_api_t *a = &c->plugin.api;
  uint32_t bad = c->plugin.device_count, cnt = 0;
  mi_device_desc_t dd;
  mi_buffer_t *buf = NULL;
  mi_error_t err;
  struct {
    const char *call;
    int32_t rc;
  } r[4];

  memset(&dd, 0, sizeof dd);
  dd.struct_size = sizeof dd;
  memset(&err, 0, sizeof err);
  r[0].call = "device_info";
  r[0].rc = a->device_info(c->plugin.ctx, bad, &dd, &err);
  r[1].call = "knob_count";
  r[1].rc = a->knob_count(c->plugin.ctx, bad, &cnt, &err);
  r[2].call = "variant_count";
  r[2].rc = a->variant_count(c->plugin.ctx, bad, &cnt, &err);
  r[3].call = "buffer_alloc";
  r[3].rc = a->buffer_alloc(c->plugin.ctx, bad, 64, &buf, &err);
  for (int i = 0; i < 4; i++) {
    if (r[i].rc == MI_OK) {
      if (i == 3 && buf) a->buffer_free(c->plugin.ctx, buf);
      return conform_verdict(why, n, CONFORM_FAIL,
                             "%s(device %u) succeeded although the plugin has %u device(s)", r[i].call,
                             bad, c->plugin.device_count);
    }
  }
  if (err.message[0] == '\0') {
    return conform_verdict(why, n, CONFORM_FAIL, "out-of-range device refused without a message");
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "%u device(s); device %u refused (\"%s\")", c->plugin.device_count, bad,
                         err.message);
}
