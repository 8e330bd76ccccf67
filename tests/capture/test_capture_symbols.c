/* Site names of programs without DWARF: tests/capture/symbols.c built with -g, then
 *   - strip --strip-debug: .symtab remains, so its local function has its name;
 *   - strip: nothing but imports in .dynsym, so its code is named object+offset
 *     ("stripped+0x1169"), the offset being the function's link-time address;
 *   - -rdynamic then strip: the exported function keeps its name (.dynsym), the local one
 *     is named by offset;
 *   - strip, then a MiniDebugInfo section (.gnu_debugdata, the xz-compressed symtab of
 *     Fedora's and others' packages): the local function has its name again;
 * each recorded through Valgrind and, built by memsnap-cc, through the runtime. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "memsnap/memsnap.h"
#include "testutil.h"

static char *scratch;
TEST_SCRATCH_GROUP(scratch)

typedef struct symbol_range {
  uint64_t start, end;
} symbol_range;

/* [start, end) of a function symbol of `program` (nm -S), or fails the test. */
static symbol_range symbol_of(const char *program, const char *name) {
  assert_int_equal(test_run("cd '%s' && nm -S '%s' > nm.out", scratch, program), 0);
  char path[4096], line[512];
  snprintf(path, sizeof path, "%s/nm.out", scratch);
  FILE *file = fopen(path, "r");
  assert_non_null(file);
  symbol_range range = {0, 0};
  while (fgets(line, sizeof line, file)) {
    uint64_t start, size;
    char type, symbol[256];
    if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %255s", &start, &size, &type, symbol) == 4 &&
        strcmp(symbol, name) == 0)
      range = (symbol_range){start, start + size};
  }
  fclose(file);
  assert_true(range.end > range.start);
  return range;
}

/* Builds the four variants of symbols.c with `compiler` into scratch/PREFIX-{debug,
 * stripped,dynamic,mini}, keeping the unstripped PREFIX-full and PREFIX-dynamic-full for
 * their symbol addresses. */
static void build_variants(const char *compiler, const char *prefix) {
  const char *source = test_env("MEMSNAP_SOURCE_DIR");
  assert_int_equal(
      test_run("cd '%s' && %s -O1 -g -o %s-full '%s/tests/capture/symbols.c' && "
               "%s -O1 -g -rdynamic -o %s-dynamic-full '%s/tests/capture/symbols.c' && "
               "cp %s-dynamic-full %s-dynamic && strip %s-dynamic && "
               "cp %s-full %s-debug && strip --strip-debug %s-debug && "
               "cp %s-full %s-stripped && strip %s-stripped",
               scratch, compiler, prefix, source, compiler, prefix, source, prefix, prefix, prefix,
               prefix, prefix, prefix, prefix, prefix, prefix),
      0);
  /* MiniDebugInfo as Fedora makes it: the function symbols that .dynsym lacks, in an
   * xz-compressed ELF file added as .gnu_debugdata to the stripped program. */
  assert_int_equal(
      test_run(
          "cd '%s' && objcopy --only-keep-debug %s-full %s.debug && "
          "nm %s.debug --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ {print $1}' "
          "| sort > %s.funcs && nm -D %s-full --format=posix --defined-only "
          "| awk '{print $1}' | sort > %s.dynsyms && comm -13 %s.dynsyms %s.funcs > %s.keep && "
          "objcopy -S --remove-section .gdb_index --remove-section .comment "
          "--keep-symbols=%s.keep %s.debug %s.mini && xz -f %s.mini && "
          "cp %s-stripped %s-mini && objcopy --add-section .gnu_debugdata=%s.mini.xz %s-mini",
          scratch, prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix,
          prefix, prefix, prefix, prefix, prefix, prefix, prefix),
      0);
}

/* Records scratch/PROGRAM through `via` and returns its site table (caller clears info). */
static void record_sites(const char *program, const char *via, ms_stream_info *info) {
  assert_int_equal(test_memsnap_in(scratch, "record --quiet --via=%s -o %s.mtr -- ./%s 2000", via,
                                   program, program),
                   0);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.mtr", scratch, program);
  ms_mtr_stat stat;
  memset(info, 0, sizeof *info);
  assert_int_equal(ms_mtr_stat_file(path, &stat, info), MS_OK);
  assert_true(stat.access_count > 4000); /* both loops ran: 2000 doubles each */
}

static int in_program(const ms_site *site, const char *program) {
  if (!site->object) return 0;
  const char *base = strrchr(site->object, '/');
  return strcmp(base ? base + 1 : site->object, program) == 0;
}

typedef struct program_sites {
  int named[2];         /* sites named scale_local, sum_exported */
  int by_offset_in[2];  /* sites named PROGRAM+0xOFFSET, OFFSET inside either function */
  int unnamed;          /* sites of the program with no function */
  int describe_with_pc; /* offset names that ms_site_describe prints with the run-time pc */
} program_sites;

static program_sites sites_of(const ms_stream_info *info, const char *program,
                              const symbol_range functions[2]) {
  program_sites found = {{0, 0}, {0, 0}, 0, 0};
  const char *names[2] = {"scale_local", "sum_exported"};
  char prefix[320], buf[512];
  snprintf(prefix, sizeof prefix, "%s+0x", program);
  for (uint32_t id = 0; id < ms_site_table_count(info->sites); id++) {
    const ms_site *site = ms_site_table_get(info->sites, id);
    if (!in_program(site, program)) continue;
    if (!site->function) {
      found.unnamed++;
      continue;
    }
    for (int f = 0; f < 2; f++)
      found.named[f] += strcmp(site->function, names[f]) == 0;
    if (strncmp(site->function, prefix, strlen(prefix)) != 0) continue;
    uint64_t offset = strtoull(site->function + strlen(prefix), NULL, 16);
    for (int f = 0; f < 2; f++)
      found.by_offset_in[f] += offset >= functions[f].start && offset < functions[f].end;
    found.describe_with_pc += strcmp(ms_site_describe(site, buf, sizeof buf), site->function) != 0;
  }
  return found;
}

static void check_variants(const char *prefix, const char *via) {
  const char *variants[] = {"debug", "stripped", "dynamic", "mini"};
  for (int v = 0; v < 4; v++) {
    char program[300], full[300];
    snprintf(program, sizeof program, "%s-%s", prefix, variants[v]);
    snprintf(full, sizeof full, "%s-%s", prefix, v == 2 ? "dynamic-full" : "full");
    const symbol_range functions[2] = {symbol_of(full, "scale_local"),
                                       symbol_of(full, "sum_exported")};
    ms_stream_info info;
    record_sites(program, via, &info);
    program_sites s = sites_of(&info, program, functions);
    print_message("%s via %s: named scale_local %d sum_exported %d, by offset %d %d, unnamed %d\n",
                  program, via, s.named[0], s.named[1], s.by_offset_in[0], s.by_offset_in[1],
                  s.unnamed);
    assert_int_equal(s.unnamed, 0); /* every site of the program has a name */
    assert_int_equal(s.describe_with_pc, 0);
    switch (v) {
    case 0: /* .symtab */
    case 3: /* .gnu_debugdata */ assert_true(s.named[0] > 0 && s.named[1] > 0); break;
    case 1: /* nothing: the loops' sites by offset, inside the functions of the full build */
      assert_int_equal(s.named[0] + s.named[1], 0);
      assert_true(s.by_offset_in[0] > 0 && s.by_offset_in[1] > 0);
      break;
    case 2: /* .dynsym holds sum_exported; scale_local's sites by offset */
      assert_int_equal(s.named[0], 0);
      assert_true(s.named[1] > 0 && s.by_offset_in[0] > 0);
      break;
    }
    ms_stream_info_clear(&info);
  }
}

static void test_valgrind(void **state) {
  (void)state;
  build_variants(MEMSNAP_TEST_CC, "vg");
  check_variants("vg", "valgrind");
}

static void test_rt(void **state) {
  (void)state;
  build_variants(MEMSNAP_CC, "rt");
  check_variants("rt", "rt");
}

/* What a user reads: sim --top names the stripped program's sites by offset. */
static void test_sim_top(void **state) {
  (void)state;
  assert_int_equal(test_memsnap_in(scratch, "sim -H nehalem --top 3 vg-stripped.mtr"), 0);
  char *out = test_read_in(scratch, "out");
  assert_non_null(strstr(out, "  vg-stripped+0x"));
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valgrind),
      cmocka_unit_test(test_rt),
      cmocka_unit_test(test_sim_top),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
