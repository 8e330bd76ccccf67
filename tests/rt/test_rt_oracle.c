/* The oracle for compiler-instrumented capture: Valgrind observing the same binary.
 *
 * Each kernel of tests/kernels, built by memsnap-cc (not position-independent, so that
 * the program image has the same addresses in both runs), is recorded twice: natively
 * through its runtime (MEMSNAP_OUT, address randomization off) and through memsnap's
 * Valgrind tool (`record --via=valgrind`; the runtime stays idle without MEMSNAP_OUT).
 * From the Valgrind trace we keep the accesses made by the functions that the rt trace
 * names (the program's own instrumented code: not libc, ld.so, crt files or the runtime's
 * callbacks). Then, per docs/accuracy.md:
 *   - accesses to the main thread's stack are compared by count only (rt <= Valgrind):
 *     Valgrind also sees return addresses pushed by calls (the callbacks' too), register
 *     saves and spills, which are no IR loads or stores;
 *   - accesses to the program image's read-only data likewise (rt <= Valgrind): constant
 *     pool loads that the code generator adds are not instrumented;
 *   - every other access must agree exactly, in order: kind, size, and address up to a
 *     relocation of whole pages (heap pages lie elsewhere under Valgrind), i.e. the same
 *     offset in the page and the same page in order of first touch;
 *   - D1 misses (32768/64/8, LRU, every line an access spans) of the rt trace and of the
 *     kept Valgrind accesses agree within 1%.
 * The same kernels built with --memsnap-mode=inline (memsnap-pass.so, when it was built)
 * go through the same comparison; Valgrind also sees there the inline code's own test of
 * the runtime's state word (`ms_rt_state`, a load of 4 bytes at its symbol's address, in the
 * program's functions), which is left out. Loads of the thread's buffer and of the site
 * words happen only while recording, never in the Valgrind run (the runtime is idle).
 * A last test checks interval sampling on the Valgrind path by its arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <math.h>

#include "rt_util.h"
#include "testutil.h"

static char *dir;

TEST_SCRATCH_GROUP(dir)

typedef struct range {
  uint64_t start, end;
} range;

/* The read-only PT_LOAD segments of an executable (link addresses = run-time ones). */
static int readonly_segments(const char *path, range *out, int max) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  assert_non_null(elf);
  size_t count = 0;
  assert_int_equal(elf_getphdrnum(elf, &count), 0);
  int n = 0;
  for (size_t i = 0; i < count && n < max; i++) {
    GElf_Phdr ph;
    assert_non_null(gelf_getphdr(elf, (int)i, &ph));
    if (ph.p_type == PT_LOAD && !(ph.p_flags & PF_W))
      out[n++] = (range){ph.p_vaddr, ph.p_vaddr + ph.p_memsz};
  }
  elf_end(elf);
  close(fd);
  return n;
}

/* The address of symbol `name` in an executable's symbol table, 0 if none. */
static uint64_t symbol_address(const char *path, const char *name) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  assert_non_null(elf);
  uint64_t address = 0;
  for (Elf_Scn *section = NULL; !address && (section = elf_nextscn(elf, section));) {
    GElf_Shdr header;
    if (!gelf_getshdr(section, &header) || header.sh_type != SHT_SYMTAB) continue;
    Elf_Data *data = elf_getdata(section, NULL);
    for (size_t i = 0; data && i < header.sh_size / header.sh_entsize; i++) {
      GElf_Sym symbol;
      const char *symbol_name = gelf_getsym(data, (int)i, &symbol)
                                    ? elf_strptr(elf, header.sh_link, symbol.st_name)
                                    : NULL;
      if (symbol_name && strcmp(symbol_name, name) == 0) address = symbol.st_value;
    }
  }
  elf_end(elf);
  close(fd);
  return address;
}

enum { CLASS_STACK, CLASS_READONLY, CLASS_DATA };

typedef struct classifier {
  uint64_t stack_low; /* the main thread's stack: [stack_low, infinity) */
  range readonly[8];
  int readonly_count;
} classifier;

static int classify(const classifier *c, uint64_t address) {
  if (address >= c->stack_low) return CLASS_STACK;
  for (int i = 0; i < c->readonly_count; i++)
    if (address >= c->readonly[i].start && address < c->readonly[i].end) return CLASS_READONLY;
  return CLASS_DATA;
}

/* Page relocation: page -> its rank in order of first touch. */
typedef struct page_map {
  uint64_t *pages;
  size_t count, capacity;
} page_map;

static uint64_t page_rank(page_map *map, uint64_t address) {
  uint64_t page = address >> 12;
  for (size_t i = map->count; i-- > 0;) /* recent pages first: kernels sweep */
    if (map->pages[i] == page) return i;
  if (map->count == map->capacity) {
    map->capacity = map->capacity ? 2 * map->capacity : 256;
    map->pages = realloc(map->pages, map->capacity * sizeof *map->pages);
    assert_non_null(map->pages);
  }
  map->pages[map->count] = page;
  return map->count++;
}

/* D1 32768/64/8, LRU, write-allocate: misses over every line each access spans. */
typedef struct d1 {
  uint64_t tags[64][8];
  uint64_t misses;
} d1;

static void d1_access(d1 *cache, uint64_t address, unsigned size) {
  for (uint64_t line = address >> 6; line <= (address + size - 1) >> 6; line++) {
    uint64_t *set = cache->tags[line & 63], tag = line + 1; /* 0 = empty */
    int way = 0;
    while (way < 8 && set[way] != tag)
      way++;
    if (way == 8) {
      cache->misses++;
      way = 7;
    }
    memmove(set + 1, set, (size_t)way * sizeof *set);
    set[0] = tag;
  }
}

static int kept_function(const rt_trace *rt, const char *name) {
  const ms_site_table *sites = rt_trace_info(rt)->sites;
  for (uint32_t id = 0; id < ms_site_table_count(sites); id++) {
    const ms_site *site = ms_site_table_get(sites, id);
    if (site->function && strcmp(site->function, name) == 0) return 1;
  }
  return 0;
}

static void compare(const char *kernel_name, const char *args) {
  char kernel[1024], path[1024];
  rt_kernel(kernel_name, kernel, sizeof kernel);
  assert_int_equal(test_run("cd '%s' && rm -f rt.mtr && setarch -R env MEMSNAP_OUT=rt.mtr '%s' %s "
                            "> /dev/null",
                            dir, kernel, args),
                   0);
  assert_int_equal(
      test_memsnap_in(dir, "record -q --via=valgrind -o vg.mtr -- '%s' %s", kernel, args), 0);
  rt_trace rt, vg;
  snprintf(path, sizeof path, "%s/rt.mtr", dir);
  rt_trace_load(path, &rt);
  snprintf(path, sizeof path, "%s/vg.mtr", dir);
  rt_trace_load(path, &vg);

  classifier rt_class = {.stack_low = 0x7ffff8000000ull}, vg_class;
  rt_class.readonly_count = readonly_segments(kernel, rt_class.readonly, 8);
  vg_class = rt_class;
  /* Valgrind's client stack is the highest memory the program touches */
  uint64_t top = 0;
  for (size_t i = 0; i < vg.count; i++)
    if (vg.accesses[i].address > top) top = vg.accesses[i].address;
  vg_class.stack_low = top - (64u << 20);

  /* which Valgrind accesses are the program's own: memo of site -> kept */
  uint32_t site_count = ms_site_table_count(rt_trace_info(&vg)->sites);
  signed char *kept = calloc(site_count, 1);
  for (uint32_t id = 0; id < site_count; id++) {
    const ms_site *site = ms_site_table_get(rt_trace_info(&vg)->sites, id);
    kept[id] = site->function && site->object && strcmp(site->object, kernel) == 0 &&
               kept_function(&rt, site->function);
  }

  /* the inline instrumentation's test of the runtime's state (callbacks: in the callback) */
  uint64_t state_word = symbol_address(kernel, "ms_rt_state");
  assert_true(state_word != 0);
  uint64_t counts[2][3] = {{0}};
  page_map rt_pages = {0}, vg_pages = {0};
  d1 *rt_d1 = calloc(1, sizeof *rt_d1), *vg_d1 = calloc(1, sizeof *vg_d1);
  size_t j = 0; /* next rt access of class DATA to match */
  for (size_t i = 0; i < rt.count; i++) {
    const ms_access *a = &rt.accesses[i];
    counts[0][classify(&rt_class, a->address)]++;
    d1_access(rt_d1, a->address, a->size);
  }
  for (size_t i = 0; i < vg.count; i++) {
    const ms_access *v = &vg.accesses[i];
    if (!kept[v->site]) continue;
    if (v->address == state_word && v->kind == MS_LOAD && v->size == 4) continue;
    d1_access(vg_d1, v->address, v->size);
    int c = classify(&vg_class, v->address);
    counts[1][c]++;
    if (c != CLASS_DATA) continue;
    while (j < rt.count && classify(&rt_class, rt.accesses[j].address) != CLASS_DATA)
      j++;
    assert_true(j < rt.count); /* Valgrind saw more of the program's data accesses */
    const ms_access *r = &rt.accesses[j++];
    if (r->kind != v->kind || r->size != v->size || (r->address & 4095) != (v->address & 4095) ||
        page_rank(&rt_pages, r->address) != page_rank(&vg_pages, v->address))
      fail_msg("%s: data access %llu differs: rt %s %u bytes at 0x%llx, valgrind %s %u at 0x%llx",
               kernel_name, (unsigned long long)counts[1][CLASS_DATA] - 1,
               ms_access_kind_name(r->kind), r->size, (unsigned long long)r->address,
               ms_access_kind_name(v->kind), v->size, (unsigned long long)v->address);
  }
  fprintf(stderr,
          "%s: rt %llu accesses (data %llu, stack %llu, read-only %llu), valgrind kept %llu "
          "(data %llu, stack %llu, read-only %llu); D1 misses rt %llu, valgrind %llu\n",
          kernel_name, (unsigned long long)rt.count, (unsigned long long)counts[0][CLASS_DATA],
          (unsigned long long)counts[0][CLASS_STACK], (unsigned long long)counts[0][CLASS_READONLY],
          (unsigned long long)(counts[1][0] + counts[1][1] + counts[1][2]),
          (unsigned long long)counts[1][CLASS_DATA], (unsigned long long)counts[1][CLASS_STACK],
          (unsigned long long)counts[1][CLASS_READONLY], (unsigned long long)rt_d1->misses,
          (unsigned long long)vg_d1->misses);
  assert_int_equal(counts[0][CLASS_DATA], counts[1][CLASS_DATA]);
  assert_true(counts[0][CLASS_DATA] > 1000);
  assert_true(counts[0][CLASS_STACK] <= counts[1][CLASS_STACK]);
  assert_true(counts[0][CLASS_READONLY] <= counts[1][CLASS_READONLY]);
  double difference = (double)vg_d1->misses - (double)rt_d1->misses;
  assert_true(fabs(difference) <= 0.01 * (double)rt_d1->misses);
  free(rt_pages.pages);
  free(vg_pages.pages);
  free(rt_d1);
  free(vg_d1);
  free(kept);
  rt_trace_free(&rt);
  rt_trace_free(&vg);
}

static void test_stream_add(void **state) {
  (void)state;
  compare("oracle_stream_add", "20000");
}
static void test_matmul(void **state) {
  (void)state;
  compare("oracle_matmul", "70");
}
static void test_stencil2d(void **state) {
  (void)state;
  compare("oracle_stencil2d", "80");
}
static void test_gather(void **state) {
  (void)state;
  compare("oracle_gather", "20000");
}
static void test_linked_list(void **state) {
  (void)state;
  compare("oracle_linked_list", "5000");
}

#ifdef MEMSNAP_RT_INLINE
static void test_inline_stream_add(void **state) {
  (void)state;
  compare("oracle_inline_stream_add", "20000");
}
static void test_inline_matmul(void **state) {
  (void)state;
  compare("oracle_inline_matmul", "70");
}
static void test_inline_stencil2d(void **state) {
  (void)state;
  compare("oracle_inline_stencil2d", "80");
}
static void test_inline_gather(void **state) {
  (void)state;
  compare("oracle_inline_gather", "20000");
}
static void test_inline_linked_list(void **state) {
  (void)state;
  compare("oracle_inline_linked_list", "5000");
}
#endif

/* Valgrind path: the tool's stream counted as one, ON kept, OFF skipped, and so on. */
static void test_valgrind_sampling(void **state) {
  (void)state;
  char kernel[1024], path[1024];
  rt_kernel("oracle_stream_add", kernel, sizeof kernel);
  assert_int_equal(test_memsnap_in(dir, "record -q --via=valgrind -o all.mtr -- '%s' 2000", kernel),
                   0);
  assert_int_equal(
      test_memsnap_in(dir, "record -q --via=valgrind --sample 1k/3k -o some.mtr -- '%s' 2000",
                      kernel),
      0);
  rt_trace all, some;
  snprintf(path, sizeof path, "%s/all.mtr", dir);
  rt_trace_load(path, &all);
  snprintf(path, sizeof path, "%s/some.mtr", dir);
  rt_trace_load(path, &some);
  const ms_stream_info *info = rt_trace_info(&some);
  assert_true(info->flags & MS_STREAM_SAMPLED);
  assert_int_equal(info->sample_on, 1000);
  assert_int_equal(info->sample_off, 3000);
  size_t periods = all.count / 4000, rest = all.count % 4000;
  assert_int_equal(some.count, periods * 1000 + (rest < 1000 ? rest : 1000));
  /* the kept accesses are the first 1000 of every 4000 */
  for (size_t i = 0; i < some.count; i++) {
    const ms_access *s = &some.accesses[i], *a = &all.accesses[i / 1000 * 4000 + i % 1000];
    assert_int_equal(s->size, a->size);
    assert_int_equal(s->kind, a->kind);
  }
  rt_trace_free(&all);
  rt_trace_free(&some);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stream_add),         cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_stencil2d),          cmocka_unit_test(test_gather),
      cmocka_unit_test(test_linked_list),        cmocka_unit_test(test_valgrind_sampling),
#ifdef MEMSNAP_RT_INLINE
      cmocka_unit_test(test_inline_stream_add),  cmocka_unit_test(test_inline_matmul),
      cmocka_unit_test(test_inline_stencil2d),   cmocka_unit_test(test_inline_gather),
      cmocka_unit_test(test_inline_linked_list),
#endif
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
