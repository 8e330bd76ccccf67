/* Seed generation, expansion and the chase array (lib/synth, lib/chase), checked against
 * independent measurements: the surface API (reuse stacks) for the CDF of a seed, a
 * bitmap for unique-index seeds, the closed-form hit rates of the hand signatures
 * (section 6.3 of chameleon-weinberg-dissertation-2008.txt), an in-order emulation of the
 * ILP chains against the expanded seed, and the machine code of the kernels (objdump). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "memsnap/chase.h"
#include "memsnap/error.h"
#include "memsnap/surface.h"
#include "memsnap/synth.h"
#include "testutil.h"

/* A one-bin signature with the given CDF and one alpha for every level and bin. */
static ms_signature *make_signature(const double cdf[MS_SIGNATURE_DEPTHS], double alpha) {
  ms_signature *s = NULL;
  assert_int_equal(ms_synth_hand_signature("random", 512, 4, &s), MS_OK);
  ms_signature_bin *bin = &s->bins[0];
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    bin->hits[k] = cdf[k] * bin->references;
    for (int level = 0; level < s->levels; level++)
      bin->yes[level][k] = alpha * bin->trials[level][k];
  }
  return s;
}

static ms_synth_config small_config(int unique) {
  ms_synth_config config;
  ms_synth_config_default(&config);
  config.unique = unique;
  config.min_length = 50000;
  config.max_length = 200000;
  config.check_interval = 5000;
  return config;
}

static void seed_surface(const ms_seed *seed, ms_surface *out) {
  ms_surface_config config;
  ms_surface_config_default(&config);
  ms_surface_builder *builder;
  assert_int_equal(ms_surface_builder_new(&config, &builder), MS_OK);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), MS_OK);
  for (uint64_t i = 0; i < seed->length;) {
    batch.count = 0;
    for (; batch.count < batch.capacity && i < seed->length; i++) {
      ms_access *a = &batch.accesses[batch.count++];
      memset(a, 0, sizeof *a);
      a->address = (uint64_t)seed->blocks[i] * seed->width + (uint64_t)seed->words[i] * seed->word;
      a->size = (uint8_t)seed->word;
      a->site = MS_SITE_NONE;
    }
    assert_int_equal(ms_surface_builder_add(builder, &batch), MS_OK);
  }
  ms_surface_builder_result(builder, out);
  ms_batch_free(&batch);
  ms_surface_builder_free(builder);
}

static const double a_cdf[MS_SIGNATURE_DEPTHS] = {0.30, 0.45, 0.52, 0.58, 0.62, 0.66,
                                                  0.70, 0.74, 0.78, 0.80, 0.84, 0.86,
                                                  0.88, 0.90, 0.91, 0.92, 0.93};

/* Section 4.1: the seed's CDF at the maximal width, measured independently, is the
 * target's within the 0.005 bound; same seed value, same trace; another value, another. */
static void test_block_cdf_and_determinism(void **state) {
  (void)state;
  ms_signature *signature = make_signature(a_cdf, 0.6);
  ms_synth_config config;
  ms_synth_config_default(&config); /* deep reuses need the default lengths */
  config.spatial_iterations = 1;    /* the block phase is under test */
  ms_seed *seed, *again, *other;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  static ms_surface surface;
  seed_surface(seed, &surface);
  int w512 = ms_surface_width_index(&surface, 512);
  assert_true(w512 >= 0);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    if (fabs(surface.hit_rate[w512][k] - a_cdf[k]) > 0.005 + 1e-9)
      fprintf(stderr, "depth 2^%d: seed %.4f target %.4f (generator: %.4f)\n", k,
              surface.hit_rate[w512][k], a_cdf[k], seed->achieved_cdf[k]);
    assert_true(fabs(surface.hit_rate[w512][k] - a_cdf[k]) <= 0.005 + 1e-9);
  }
  assert_true(seed->max_error <= 0.005 + 1e-9);
  assert_int_equal(seed->working_set, seed->unique_blocks * 512);
  assert_int_equal(seed->min_replications,
                   (65536 + seed->unique_blocks - 1) / seed->unique_blocks + 1);
  assert_int_equal(ms_synth_generate(signature, 0, &config, &again), MS_OK);
  assert_int_equal(again->length, seed->length);
  assert_memory_equal(again->blocks, seed->blocks, seed->length * sizeof *seed->blocks);
  assert_memory_equal(again->words, seed->words, seed->length * sizeof *seed->words);
  config.seed = 2;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &other), MS_OK);
  assert_true(other->length != seed->length ||
              memcmp(other->blocks, seed->blocks, seed->length * sizeof *seed->blocks) != 0);
  ms_seed_free(seed);
  ms_seed_free(again);
  ms_seed_free(other);
  ms_signature_free(signature);
}

/* Signatures no seed can match are rejected with the reason. */
static void test_rejects_impossible(void **state) {
  (void)state;
  double cdf[MS_SIGNATURE_DEPTHS];
  memcpy(cdf, a_cdf, sizeof cdf);
  cdf[5] = 0.2; /* decreasing */
  ms_signature *signature = make_signature(cdf, 0.5);
  ms_synth_config config = small_config(0);
  ms_seed *seed = NULL;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_ERR_ARG);
  assert_null(seed);
  assert_non_null(strstr(ms_error_message(), "decreases"));
  ms_signature_free(signature);
  signature = make_signature(a_cdf, 0.5);
  signature->bins[0].yes[2][3] = 2 * signature->bins[0].trials[2][3]; /* alpha 2 */
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "alpha"));
  signature->bins[0].references = 0;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "no references"));
  ms_signature_free(signature);
  assert_int_equal(ms_synth_hand_signature("zigzag", 512, 4, &signature), MS_ERR_ARG);
}

/* Section 5.4: no word twice in a unique-index seed. */
static void test_unique_no_repeat(void **state) {
  (void)state;
  ms_signature *signature = make_signature(a_cdf, 0.8);
  ms_synth_config config = small_config(1);
  ms_seed *seed;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  uint64_t words = seed->unique_blocks * 128;
  uint8_t *used = calloc(words, 1);
  assert_non_null(used);
  for (uint64_t i = 0; i < seed->length; i++) {
    uint64_t word = (uint64_t)seed->blocks[i] * 128 + seed->words[i];
    assert_true(word < words);
    assert_int_equal(used[word], 0);
    used[word] = 1;
  }
  free(used);
  ms_seed_free(seed);
  ms_signature_free(signature);
}

/* Section 5.4.2: a unique-index seed's CDF at the maximal width, measured independently,
 * is the target's within 0.006 where a unique pattern can reach it (at most 127/128 hits on
 * 512-byte lines of 4-byte words; the re-aiming stops before 0.005 on some kernels' CDFs:
 * 0.005-0.006 measured). The CDF is the one of matmul 40 (most reuses within 2^5 lines,
 * then a cliff): a virtual block's stack position is pushed down by the dead physical
 * blocks referenced since, so the draw must aim at physical positions (0.0165 off at 2^5
 * without it). */
static void test_unique_cdf_cliff(void **state) {
  (void)state;
  static const double cliff[MS_SIGNATURE_DEPTHS] = {0.1256, 0.6649, 0.6955, 0.7129, 0.7293, 0.9908,
                                                    0.9922, 0.9922, 0.9922, 0.9922, 0.9922, 0.9922,
                                                    0.9922, 0.9922, 0.9922, 0.9922, 0.9922};
  ms_signature *signature = make_signature(cliff, 0.8);
  ms_synth_config config;
  ms_synth_config_default(&config);
  config.unique = 1;
  config.spatial_iterations = 1;
  ms_seed *seed;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  static ms_surface surface;
  seed_surface(seed, &surface);
  int w512 = ms_surface_width_index(&surface, 512);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    double off = fabs(surface.hit_rate[w512][k] - cliff[k]);
    if (off > 0.006)
      fprintf(stderr, "depth 2^%d: seed %.4f target %.4f\n", k, surface.hit_rate[w512][k],
              cliff[k]);
    assert_true(off <= 0.006);
  }
  ms_seed_free(seed);
  ms_signature_free(signature);
}

/* Section 6.3: stride hits (W/word - 1)/(W/word) on width W at every depth; random hits
 * nothing on any cache smaller than its footprint. */
static void test_hand_signatures(void **state) {
  (void)state;
  static ms_surface surface;
  ms_synth_config config = small_config(1);
  ms_signature *signature;
  ms_seed *seed;
  assert_int_equal(ms_synth_hand_signature("stride", 512, 4, &signature), MS_OK);
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  seed_surface(seed, &surface);
  for (int w = 0; w < surface.width_count; w++) {
    double words = surface.widths[w] / 4.0;
    for (int d = 0; d < surface.depth_count; d++)
      assert_true(fabs(surface.hit_rate[w][d] - (words - 1) / words) < 1e-3);
  }
  ms_seed_free(seed);
  ms_signature_free(signature);
  assert_int_equal(ms_synth_hand_signature("random", 512, 4, &signature), MS_OK);
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  seed_surface(seed, &surface);
  for (int w = 0; w < surface.width_count; w++)
    for (int d = 0; d < surface.depth_count; d++)
      if (surface.widths[w] * surface.depths[d] < seed->working_set)
        assert_true(surface.hit_rate[w][d] < 0.001);
  ms_seed_free(seed);
  ms_signature_free(signature);
}

/* A small unique seed saved to dir/name; returns its metadata through the file. */
static void save_unique_seed(const char *path, ms_seed_info *info) {
  ms_signature *signature = make_signature(a_cdf, 0.7);
  ms_synth_config config = small_config(1);
  config.min_length = config.max_length = config.check_interval = 20000;
  ms_seed *seed;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  assert_int_equal(ms_seed_save(seed, path), MS_OK);
  ms_source *source;
  assert_int_equal(ms_seed_source_open(path, 1, 0, &source), MS_OK);
  assert_int_equal(ms_seed_info_parse(ms_source_info(source), path, info), 1);
  assert_int_equal(info->length, seed->length);
  assert_int_equal(info->working_set, seed->working_set);
  assert_int_equal(info->min_replications, seed->min_replications);
  assert_int_equal(info->unique, 1);
  ms_source_destroy(source);
  ms_seed_free(seed);
  ms_signature_free(signature);
}

/* Expansion: replication r is the seed shifted by r * working set; repetition wraps. */
static void test_expansion(void **state) {
  (void)state;
  char *dir = test_tempdir(), path[512];
  snprintf(path, sizeof path, "%s/a.useed", dir);
  ms_seed_info info;
  save_unique_seed(path, &info);
  uint64_t *plain = malloc(info.length * sizeof *plain);
  ms_source *source;
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 1000), MS_OK);
  assert_int_equal(ms_seed_source_open(path, 1, 0, &source), MS_OK);
  uint64_t n = 0;
  for (int got; (got = ms_source_next(source, &batch)) > 0;)
    for (int i = 0; i < got; i++)
      plain[n++] = batch.accesses[i].address;
  assert_int_equal(n, info.length);
  ms_source_destroy(source);
  uint64_t replications = 3, length = 7 * info.length + 123;
  assert_int_equal(ms_seed_source_open(path, replications, length, &source), MS_OK);
  n = 0;
  for (int got; (got = ms_source_next(source, &batch)) > 0;)
    for (int i = 0; i < got; i++, n++) {
      uint64_t r = (n / info.length) % replications;
      assert_int_equal(batch.accesses[i].address, plain[n % info.length] + r * info.working_set);
    }
  assert_int_equal(n, length);
  ms_source_destroy(source);
  assert_int_equal(ms_seed_replications(&info, 0), info.min_replications);
  assert_int_equal(ms_seed_replications(&info, 100 * info.working_set + 1), 101);
  ms_batch_free(&batch);
  free(plain);
  test_rmdir(dir);
}

/* Sections 5.3, 5.8.1: the in-order stream of ILP K visits S, the expanded seed, for K = 1,
 * 3, 4, 7, 20; the kernel itself ends where the emulation ends. */
static void test_chase_order(void **state) {
  (void)state;
  char *dir = test_tempdir(), path[512];
  snprintf(path, sizeof path, "%s/a.useed", dir);
  ms_seed_info info;
  save_unique_seed(path, &info);
  uint64_t replications = info.min_replications + 1;
  uint64_t total = 2 * replications * info.length + 11;
  uint32_t *expected = malloc(total * sizeof *expected);
  ms_source *source;
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), MS_OK);
  assert_int_equal(ms_seed_source_open(path, replications, total, &source), MS_OK);
  uint64_t n = 0;
  for (int got; (got = ms_source_next(source, &batch)) > 0;)
    for (int i = 0; i < got; i++)
      expected[n++] = (uint32_t)(batch.accesses[i].address / 4);
  ms_source_destroy(source);
  ms_batch_free(&batch);
  const int ilps[] = {1, 3, 4, 7, 20};
  for (size_t t = 0; t < sizeof ilps / sizeof ilps[0]; t++) {
    int k = ilps[t];
    ms_chase chase;
    assert_int_equal(ms_chase_build(path, replications * info.working_set, k, &chase), MS_OK);
    assert_int_equal(chase.replications, replications);
    assert_int_equal((uintptr_t)chase.data % 512, 0);
    uint32_t p[MS_CHASE_MAX_ILP];
    memcpy(p, chase.start, sizeof p);
    uint64_t iterations = total / (uint64_t)k;
    for (uint64_t it = 0; it < iterations; it++)
      for (int c = 0; c < k; c++) {
        assert_int_equal(p[c], expected[it * (uint64_t)k + (uint64_t)c]);
        p[c] = chase.data[p[c]];
      }
    uint32_t kernel[MS_CHASE_MAX_ILP];
    memcpy(kernel, chase.start, sizeof kernel);
    ms_chase_kernels[k](chase.data, kernel, iterations);
    assert_memory_equal(kernel, p, (size_t)k * sizeof *p);
    ms_chase_free(&chase);
  }
  ms_chase build_error;
  assert_int_equal(ms_chase_build(path, 0, 21, &build_error), MS_ERR_ARG);
  /* a seed whose metadata says it has no references is refused, not divided by */
  ms_signature *signature = make_signature(a_cdf, 0.7);
  ms_synth_config config = small_config(1);
  config.min_length = config.max_length = config.check_interval = 20000;
  ms_seed *seed;
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  seed->length = 0;
  snprintf(path, sizeof path, "%s/empty.useed", dir);
  assert_int_equal(ms_seed_save(seed, path), MS_OK);
  assert_int_equal(ms_chase_build(path, 0, 1, &build_error), MS_ERR_FORMAT);
  assert_non_null(strstr(ms_error_message(), "no references"));
  ms_seed_free(seed);
  /* an access outside the working set is refused before it is marked in the visited
   * bitmap (it used to be written there anyway: far out of bounds) */
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), MS_OK);
  seed->blocks[seed->length / 2] = UINT32_MAX;
  snprintf(path, sizeof path, "%s/outside.useed", dir);
  assert_int_equal(ms_seed_save(seed, path), MS_OK);
  assert_int_equal(ms_chase_build(path, 0, 1, &build_error), MS_ERR_FORMAT);
  assert_non_null(strstr(ms_error_message(), "outside the seed's working set"));
  ms_seed_free(seed);
  ms_signature_free(signature);
  free(expected);
  test_rmdir(dir);
}

/* The work loop of kernel K (objdump of the memsnap binary): exactly K memory operands
 * inside the loop, all loads into registers; nothing else touches memory there. */
static void test_kernel_code(void **state) {
  (void)state;
  const int ilps[] = {1, 2, 4, 8};
  for (size_t t = 0; t < sizeof ilps / sizeof ilps[0]; t++) {
    char command[1024], line[512];
    snprintf(command, sizeof command,
             "objdump -d --no-show-raw-insn --disassemble=ms_chase_kernel_%d %s", ilps[t],
             test_env("MEMSNAP"));
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    unsigned long addresses[256];
    char texts[256][400];
    int count = 0;
    int in_function = 0;
    while (fgets(line, sizeof line, pipe) && count < 256) {
      if (line[0] != ' ' && strstr(line, ">:")) { /* a function's first line */
        in_function = strstr(line, "<ms_chase_kernel_") != NULL;
        continue;
      }
      unsigned long address;
      char text[384];
      if (in_function && sscanf(line, " %lx: %383[^\n]", &address, text) == 2) {
        addresses[count] = address;
        snprintf(texts[count++], sizeof texts[0], "%s", text);
      }
    }
    pclose(pipe);
    assert_true(count > 0);
    /* the loop: the backward conditional jump and its target */
    int loop_end = -1;
    unsigned long loop_start = 0;
    for (int i = 0; i < count; i++) {
      unsigned long target;
      char mnemonic[16];
      if (sscanf(texts[i], "%15s %lx", mnemonic, &target) == 2 && mnemonic[0] == 'j' &&
          strcmp(mnemonic, "jmp") != 0 && target < addresses[i]) {
        loop_end = i;
        loop_start = target;
      }
    }
    assert_true(loop_end >= 0);
    int loads = 0;
    for (int i = 0; i <= loop_end; i++) {
      if (addresses[i] < loop_start) continue;
      if (!strchr(texts[i], '(')) continue;
      /* AT&T syntax: a load is "mov (mem),reg": the memory operand comes first */
      assert_non_null(strstr(texts[i], "mov"));
      assert_true(strchr(texts[i], '(') < strchr(texts[i], ','));
      loads++;
    }
    assert_int_equal(loads, ilps[t]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_cdf_and_determinism),
      cmocka_unit_test(test_rejects_impossible),
      cmocka_unit_test(test_unique_no_repeat),
      cmocka_unit_test(test_unique_cdf_cliff),
      cmocka_unit_test(test_hand_signatures),
      cmocka_unit_test(test_expansion),
      cmocka_unit_test(test_chase_order),
      cmocka_unit_test(test_kernel_code),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
