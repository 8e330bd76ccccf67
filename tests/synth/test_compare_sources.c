/* The benchmark's own stream matches its seed (issue 6): `memsnap bench` recorded with
 * `memsnap record`, its chase loads picked out by site (tests/synth/chase_record.h), then
 *  - at least 99% of the run phase's accesses (from the first chase load on) are chase loads;
 *  - the chase addresses, rebased by the array's base, are exactly the seed expanded by
 *    ms_seed_source_open to the same footprint and length, and the base is 512-aligned
 *    (chameleon-weinberg-dissertation-2008.txt, section 5.5);
 *  - `memsnap compare` of the chase stream against `--footprint F --length N SEED`: hit rates
 *    on the 46 hierarchies within 0.005 per level, surfaces equal (fully associative, and
 *    the base does not move any line boundary of width <= 512);
 *  - ILP 4 visits the same addresses as ILP 1, as a multiset and in the combined order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "synth/chase_record.h"
#include "testutil.h"

static json_object *get(json_object *object, const char *key) {
  json_object *value;
  assert_true(json_object_object_get_ex(object, key, &value));
  return value;
}

/* Records `memsnap bench m.useed --ops OPS --ilp K` into NAME.mtr; returns the footprint
 * the benchmark reports. A memsnap built with sanitizers cannot run under Valgrind: the
 * plain chase_bench kernel (tests/kernels/chase_bench.c, the same library code) stands in
 * for it then. */
static uint64_t record_bench(const char *dir, const char *name, const char *ops, int ilp) {
  char program[1100];
#if MEMSNAP_SANITIZED
  char kernel[1024];
  snprintf(program, sizeof program, "%s m.useed %s %d",
           test_kernel("chase_bench", kernel, sizeof kernel), ops, ilp);
#else
  snprintf(program, sizeof program, "%s bench m.useed --ops %s --ilp %d", test_env("MEMSNAP"), ops,
           ilp);
#endif
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o %s.mtr -- %s", name, program), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  unsigned long long footprint = 0;
  assert_int_equal(sscanf(out, "footprint %llu bytes", &footprint), 1);
  free(out);
  return footprint;
}

static void test_bench_stream(void **state) {
  (void)state;
  char kernel[1024], path[1024];
  test_kernel("matmul", kernel, sizeof kernel);
  char *dir = test_tempdir();
  /* a seed with temporal reuse, from a real kernel's signature; short, so that the
   * benchmark's set-up is small */
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o m.mtr -- %s 24", kernel), 0);
  assert_int_equal(test_memsnap_in(dir, "signature -o m.sig m.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "synth m.sig --unique --min-length 20000 --max-length "
                                        "20000 --check 2000 -o m.useed"),
                   0);
  const uint64_t ops = 1000000;
  uint64_t footprint = record_bench(dir, "b1", "1000000", 1);
  assert_int_equal(record_bench(dir, "b4", "1000000", 4), footprint);

  chase_record one, four;
  snprintf(path, sizeof path, "%s/b1.mtr", dir);
  char chase_path[1024];
  snprintf(chase_path, sizeof chase_path, "%s/chase1.mtr", dir);
  assert_int_equal(chase_record_read(path, chase_path, &one), 0);
  snprintf(path, sizeof path, "%s/b4.mtr", dir);
  assert_int_equal(chase_record_read(path, NULL, &four), 0);

  /* the chase is the run: every operation is one load, and little else happens */
  assert_int_equal(one.chase, ops);
  assert_int_equal(four.chase, ops);
  print_message("ILP 1: %llu chase loads of %llu accesses in the run phase (%.4f%%), of %llu "
                "in the whole trace (%.2f%%: start-up, seed and array set-up before)\n",
                (unsigned long long)one.chase, (unsigned long long)one.run,
                100.0 * (double)one.chase / (double)one.run, (unsigned long long)one.accesses,
                100.0 * (double)one.chase / (double)one.accesses);
  assert_true((double)one.chase >= 0.99 * (double)one.run);
  assert_true((double)four.chase >= 0.99 * (double)four.run);
  assert_true(one.run < one.accesses);

  /* the addresses are the expanded seed's, rebased by the array's 512-aligned base */
  snprintf(path, sizeof path, "%s/m.useed", dir);
  uint64_t *seed, seed_count;
  assert_int_equal(chase_seed_addresses(path, footprint, ops, &seed, &seed_count), 0);
  assert_int_equal(seed_count, ops);
  assert_true(chase_first_difference(one.addresses, one.chase, seed, seed_count) == UINT64_MAX);
  assert_int_equal((one.addresses[0] - seed[0]) % 512, 0);
  /* and the check can fail: the seed shifted by one word is not the chase */
  seed[ops / 2] += 4;
  assert_int_equal(chase_first_difference(one.addresses, one.chase, seed, seed_count), ops / 2);
  free(seed);

  /* ILP 4 visits exactly the addresses of ILP 1: as a multiset and in order */
  assert_true(chase_same_multiset(four.addresses, four.chase, one.addresses, one.chase));
  assert_true(chase_first_difference(four.addresses, four.chase, one.addresses, one.chase) ==
              UINT64_MAX);
  four.addresses[7] ^= 64;
  assert_false(chase_same_multiset(four.addresses, four.chase, one.addresses, one.chase));
  chase_record_free(&one);
  chase_record_free(&four);

  /* hit rates on the 46 hierarchies and the surfaces: memsnap compare */
  assert_int_equal(
      test_memsnap_in(dir, "compare --json --footprint %llu --length %llu chase1.mtr m.useed",
                      (unsigned long long)footprint, (unsigned long long)ops),
      0);
  char *text = test_read_in(dir, "out");
  assert_non_null(text);
  json_object *root = json_tokener_parse(text);
  free(text);
  assert_non_null(root);
  json_object *sources = get(root, "sources");
  for (size_t s = 0; s < 2; s++)
    assert_int_equal(json_object_get_int64(get(json_object_array_get_idx(sources, s), "accesses")),
                     ops);
  json_object *levels = get(root, "levels");
  assert_true(json_object_array_length(levels) >= 2);
  for (size_t l = 0; l < json_object_array_length(levels); l++) {
    json_object *level = json_object_array_get_idx(levels, l);
    print_message("L%d: mean %.6f max %.6f\n", json_object_get_int(get(level, "level")),
                  json_object_get_double(get(level, "mean")),
                  json_object_get_double(get(level, "max")));
    assert_true(json_object_get_double(get(level, "max")) <= 0.005);
  }
  /* not a trivial agreement: the L1 hit rates are neither all 0 nor all 1 */
  json_object *hierarchies = get(root, "hierarchies");
  int middling = 0;
  for (size_t h = 0; h < json_object_array_length(hierarchies); h++) {
    json_object *l1 =
        json_object_array_get_idx(get(json_object_array_get_idx(hierarchies, h), "levels"), 0);
    double rate = json_object_get_double(json_object_array_get_idx(get(l1, "hit_rates"), 0));
    middling += rate > 0.05 && rate < 0.95;
  }
  assert_true(middling > 0);
  json_object *surface = get(root, "surface");
  assert_int_equal(json_object_get_int(get(surface, "points")), 8 * 17);
  assert_true(json_object_get_double(get(surface, "max")) == 0.0);
  json_object_put(root);
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bench_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
