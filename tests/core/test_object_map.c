/* The live data objects by address (lib/core/object_map.h), worked by hand: blocks and
 * their 16-byte granules, a block across a page boundary, a free and a new block at the
 * same address (two objects), large objects and the ones found lately, frees of what is not
 * an object's start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../lib/core/object_map.h"

static void apply(object_map *map, uint64_t address, uint64_t size, int freed, uint32_t id) {
  ms_object_event event = {
      .address = address, .size = size, .freed = (uint8_t)freed, .site = MS_SITE_NONE};
  assert_int_equal(object_map_apply(map, &event, id), 0);
}

static void blocks_and_granules(void **state) {
  (void)state;
  object_map *map = object_map_new();
  assert_non_null(map);
  assert_int_equal(object_map_find(map, 0x1000), OBJECT_MAP_NONE);
  apply(map, 0x1000, 0x28, 0, 0); /* granules 0x1000, 0x1010, 0x1020 */
  assert_int_equal(object_map_find(map, 0x1000), 0);
  assert_int_equal(object_map_find(map, 0x1027), 0);
  assert_int_equal(object_map_find(map, 0x102f), 0); /* the last granule's slack */
  assert_int_equal(object_map_find(map, 0x1030), OBJECT_MAP_NONE);
  assert_int_equal(object_map_find(map, 0x0ff8), OBJECT_MAP_NONE);
  /* across a page boundary */
  apply(map, 0x1ff0, 0x20, 0, 1);
  assert_int_equal(object_map_find(map, 0x1ff8), 1);
  assert_int_equal(object_map_find(map, 0x2008), 1);
  assert_int_equal(object_map_find(map, 0x1000), 0);
  /* a free names the object's first byte; any other address is not an object's start */
  apply(map, 0x1ff8, 0, 1, 0);
  assert_int_equal(object_map_find(map, 0x2008), 1);
  apply(map, 0x1ff0, 0, 1, 0);
  assert_int_equal(object_map_find(map, 0x1ff8), OBJECT_MAP_NONE);
  assert_int_equal(object_map_find(map, 0x2008), OBJECT_MAP_NONE);
  /* freed, then a new block at the same address: the new object */
  apply(map, 0x1000, 0, 1, 0);
  assert_int_equal(object_map_find(map, 0x1010), OBJECT_MAP_NONE);
  apply(map, 0x1000, 0x10, 0, 2);
  assert_int_equal(object_map_find(map, 0x1008), 2);
  assert_int_equal(object_map_find(map, 0x1010), OBJECT_MAP_NONE);
  /* a free of what was never allocated changes nothing */
  apply(map, 0x9000, 0, 1, 0);
  assert_int_equal(object_map_find(map, 0x1008), 2);
  object_map_free(map);
}

static void large_objects(void **state) {
  (void)state;
  object_map *map = object_map_new();
  assert_non_null(map);
  apply(map, 0x100000, 0x100000, 0, 0);
  apply(map, 0x300000, 0x5000, 0, 1);
  apply(map, 0x200000, 0x10, 0, 2);      /* a small one between them */
  for (int pass = 0; pass < 3; pass++) { /* found by bisection, then among the recent */
    assert_int_equal(object_map_find(map, 0x100000), 0);
    assert_int_equal(object_map_find(map, 0x1fffff), 0);
    assert_int_equal(object_map_find(map, 0x304fff), 1);
    assert_int_equal(object_map_find(map, 0x305000), OBJECT_MAP_NONE);
    assert_int_equal(object_map_find(map, 0x200004), 2);
    assert_int_equal(object_map_find(map, 0x200000 - 1), 0);
  }
  apply(map, 0x100000, 0, 1, 0); /* found lately, and freed */
  assert_int_equal(object_map_find(map, 0x150000), OBJECT_MAP_NONE);
  assert_int_equal(object_map_find(map, 0x300000), 1);
  apply(map, 0x100000, 0x10000, 0, 3); /* the same address again: a new object */
  assert_int_equal(object_map_find(map, 0x10ffff), 3);
  assert_int_equal(object_map_find(map, 0x110000), OBJECT_MAP_NONE);
  object_map_free(map);
}

static void many_blocks(void **state) {
  (void)state;
  /* 20000 blocks of 48 bytes side by side (bintree's nodes), every other one freed */
  object_map *map = object_map_new();
  assert_non_null(map);
  for (uint32_t i = 0; i < 20000; i++)
    apply(map, 0x4000000 + 48ull * i, 48, 0, i);
  for (uint32_t i = 0; i < 20000; i += 2)
    apply(map, 0x4000000 + 48ull * i, 0, 1, 0);
  for (uint32_t i = 0; i < 20000; i++) {
    uint32_t expected = i % 2 ? i : OBJECT_MAP_NONE;
    assert_int_equal(object_map_find(map, 0x4000000 + 48ull * i + 17), expected);
  }
  object_map_free(map);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The lookups of object_map_find_span, cached per site and at all as the annotator does,
 * against object_map_find on a second map given the same events: random blocks and large
 * objects, freed at random, touched at random and in walks; apart (`overlap` 0: the spans
 * serve the lookups) or overlapping (large objects over blocks and each other: the spans go
 * empty while they overlap, and lookups follow the large objects found lately). */
static void spans_as_find(int overlap) {
  object_map *reference = object_map_new(), *map = object_map_new();
  assert_non_null(reference);
  assert_non_null(map);
  const uint64_t *stamps = object_map_stamps(map);
  enum { SITES = 8, LIVE = 64 };
  object_map_span sites[SITES] = {{0}}, *last = &sites[0];
  uint64_t live[LIVE] = {0}, bump = 0x100000, served = 0, walk = 0;
  uint32_t id = 0;
  for (int step = 0; step < 200000; step++) {
    uint64_t r = next_random();
    if (r % 64 == 0) { /* an event */
      ms_object_event event = {.site = MS_SITE_NONE};
      uint64_t slot = (r >> 8) % LIVE;
      if (live[slot] && (r >> 16) % 2) {
        event.address = live[slot], event.freed = 1;
        live[slot] = 0;
      } else {
        uint64_t size = (r >> 20) % 4 ? 1 + (r >> 24) % 200 : 4000 + (r >> 24) % 30000;
        if (overlap && (r >> 40) % 3 == 0)
          event.address = 0x100000 + (r >> 42) % (bump - 0x100000 + 1);
        else
          event.address = bump + (r >> 42) % 3 * 8, bump = event.address + size + 16;
        event.size = size;
        if (!live[slot]) live[slot] = event.address;
      }
      assert_int_equal(object_map_apply(reference, &event, id), 0);
      assert_int_equal(object_map_apply(map, &event, id), 0);
      id++;
      continue;
    }
    uint64_t address =
        (r >> 8) % 8 ? walk += 8 : 0x100000 - 64 + (r >> 12) % (bump - 0x100000 + 128);
    if ((r >> 8) % 8 == 0) walk = address;
    object_map_span *at = &sites[(r >> 40) % SITES];
    uint32_t expected = object_map_find(reference, address), found;
    if (address - at->lo < at->hi - at->lo && at->stamp == stamps[at->which]) {
      found = at->id, served++;
    } else if (address - last->lo < last->hi - last->lo && last->stamp == stamps[last->which]) {
      *at = *last;
      found = at->id, served++;
    } else {
      object_map_find_span(map, address, at);
      found = at->id, last = at;
    }
    assert_int_equal(found, expected);
  }
  if (!overlap) assert_true(served > 100000); /* the spans serve most lookups */
  object_map_free(reference);
  object_map_free(map);
}

static void spans_apart(void **state) {
  (void)state;
  spans_as_find(0);
}

static void spans_overlapping(void **state) {
  (void)state;
  spans_as_find(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(blocks_and_granules), cmocka_unit_test(large_objects),
      cmocka_unit_test(many_blocks),         cmocka_unit_test(spans_apart),
      cmocka_unit_test(spans_overlapping),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
