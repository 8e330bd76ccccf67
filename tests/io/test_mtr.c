/* .mtr: write -> read round trip of every field over millions of accesses and many chunks,
 * seeking, stat, and corrupt input (bad magic, every single-byte flip and every cut of a
 * small file), atomic output; recovery of damaged traces (memsnap recover). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h> /* after the headers it needs */

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

#define SITE_COUNT 100

static char temp_dir[] = "/tmp/memsnap-test-mtr-XXXXXX";

static void temp_path(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", temp_dir, name);
}

static uint64_t next_random(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* Mixed accesses: strided runs per site, random addresses, the extremes 0 and UINT64_MAX,
 * every kind, sizes 1..255, threads 0..3, sites 0..SITE_COUNT-1 and MS_SITE_NONE. */
static ms_access *generate(size_t count, uint64_t seed) {
  ms_access *a = malloc(count * sizeof *a);
  uint64_t x = seed, last[SITE_COUNT + 1] = {0};
  for (size_t i = 0; i < count;) {
    uint64_t r = next_random(&x);
    size_t run = 1 + r % 64;
    uint32_t site = r % 17 == 0 ? MS_SITE_NONE : (uint32_t)(r >> 8) % SITE_COUNT;
    uint64_t stride = (uint64_t)((int64_t)((r >> 20) % 9) - 4) * 8;
    uint8_t kind = (uint8_t)((r >> 30) % 3), size = (uint8_t)(1 + (r >> 40) % 255);
    uint16_t thread = (uint16_t)((r >> 50) % 4);
    for (size_t k = 0; k < run && i < count; k++, i++) {
      uint64_t *l = &last[site == MS_SITE_NONE ? SITE_COUNT : site];
      uint64_t choice = next_random(&x) % 100;
      if (choice < 2)
        *l = 0;
      else if (choice < 4)
        *l = UINT64_MAX;
      else if (choice < 10)
        *l = next_random(&x);
      else
        *l += stride;
      a[i] = (ms_access){.address = *l, .site = site, .thread = thread, .size = size, .kind = kind};
      if (choice % 7 == 0) a[i].kind = (uint8_t)(choice % 3);
    }
  }
  return a;
}

static void fill_info(ms_stream_info *info) {
  memset(info, 0, sizeof *info);
  info->sites = ms_site_table_new();
  char *argv[] = {"./kernel", "--size", "1000", ""};
  assert_int_equal(ms_stream_info_set_program(info, "/usr/bin/kernel", 4, argv), 0);
  info->arch = strdup("amd64");
  info->capture = strdup("valgrind");
  info->flags = MS_STREAM_SAMPLED;
  info->sample_on = 1000;
  info->sample_off = 9000;
  info->exit_status = -1;
  for (uint32_t s = 0; s < SITE_COUNT; s++) {
    char function[32];
    snprintf(function, sizeof function, "f%u", s);
    ms_site_table_add(info->sites, 0x400000 + 4 * s, s % 2 ? "/bin/kernel" : NULL,
                      s % 3 ? function : NULL, s % 5 ? "kernel.c" : NULL, s);
  }
}

static void write_trace(const char *path, const ms_access *a, size_t count, ms_stream_info *info) {
  ms_sink *sink;
  assert_int_equal(ms_mtr_sink_new(path, &sink), 0);
  assert_int_equal(sink->ops->begin(sink, info), 0);
  for (size_t i = 0; i < count; i += 3000) { /* odd batch size: batches straddle chunks */
    ms_batch batch = {(ms_access *)a + i, count - i < 3000 ? count - i : 3000, 3000};
    assert_int_equal(sink->ops->consume(sink, info, &batch), 0);
  }
  info->flags |= MS_STREAM_TRUNCATED; /* known only at the end */
  info->exit_status = 139;
  info->thread_count = 4;
  assert_int_equal(sink->ops->end(sink, info), 0);
  ms_sink_destroy(sink);
}

static void assert_accesses_equal(const ms_access *expected, const ms_access *got, size_t n,
                                  uint64_t first) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&expected[i], &got[i], sizeof *got) != 0)
      fail_msg("access %llu differs: address %llx/%llx site %u/%u thread %u/%u size %u/%u "
               "kind %u/%u",
               (unsigned long long)(first + i), (unsigned long long)expected[i].address,
               (unsigned long long)got[i].address, expected[i].site, got[i].site,
               expected[i].thread, got[i].thread, expected[i].size, got[i].size, expected[i].kind,
               got[i].kind);
}

static void test_round_trip_many_chunks(void **state) {
  (void)state;
  const size_t count = 3000000;
  ms_access *a = generate(count, 88172645463325252ull);
  ms_stream_info info;
  fill_info(&info);
  char path[256];
  temp_path(path, sizeof path, "big.mtr");
  write_trace(path, a, count, &info);

  ms_source *source;
  assert_int_equal(ms_mtr_open(path, &source), 0);
  const ms_stream_info *got = ms_source_info(source);
  assert_string_equal(got->program, "/usr/bin/kernel");
  assert_int_equal(got->argc, 4);
  assert_string_equal(got->argv[0], "./kernel");
  assert_string_equal(got->argv[2], "1000");
  assert_string_equal(got->argv[3], "");
  assert_string_equal(got->arch, "amd64");
  assert_string_equal(got->capture, "valgrind");
  assert_int_equal(got->flags, MS_STREAM_SAMPLED | MS_STREAM_TRUNCATED);
  assert_int_equal(got->sample_on, 1000);
  assert_int_equal(got->sample_off, 9000);
  assert_int_equal(got->exit_status, 139);
  assert_int_equal(got->thread_count, 4);
  assert_int_equal(got->access_count, count);
  assert_int_equal(ms_site_table_count(got->sites), SITE_COUNT);
  for (uint32_t s = 0; s < SITE_COUNT; s++) {
    const ms_site *e = ms_site_table_get(info.sites, s), *g = ms_site_table_get(got->sites, s);
    assert_int_equal(e->pc, g->pc);
    assert_int_equal(e->line, g->line);
    assert_true((e->object == NULL) == (g->object == NULL));
    if (e->object) assert_string_equal(e->object, g->object);
    assert_true((e->function == NULL) == (g->function == NULL));
    if (e->function) assert_string_equal(e->function, g->function);
    assert_true((e->file == NULL) == (g->file == NULL));
    if (e->file) assert_string_equal(e->file, g->file);
  }
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 5000), 0);
  size_t seen = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
    assert_true(seen + batch.count <= count);
    assert_accesses_equal(a + seen, batch.accesses, batch.count, seen);
    seen += batch.count;
  }
  assert_int_equal(n, 0);
  assert_int_equal(seen, count);

  /* seeking anywhere equals reading sequentially from there */
  uint64_t x = 12345;
  uint64_t targets[40] = {0, 1, 262143, 262144, 262145, count - 1, count, 524288};
  for (int t = 8; t < 40; t++)
    targets[t] = next_random(&x) % count;
  for (int t = 0; t < 40; t++) {
    assert_int_equal(ms_source_seek(source, targets[t]), 0);
    batch.capacity = 5000;
    n = ms_source_next(source, &batch);
    size_t expect = count - targets[t] < 5000 ? count - targets[t] : 5000;
    assert_int_equal(n, (int)expect);
    assert_accesses_equal(a + targets[t], batch.accesses, batch.count, targets[t]);
  }
  assert_int_equal(ms_source_seek(source, count + 1), MS_ERR_ARG);
  ms_batch_free(&batch);
  ms_source_destroy(source);

  ms_mtr_stat mstat;
  ms_stream_info stat_info;
  assert_int_equal(ms_mtr_stat_file(path, &mstat, &stat_info), 0);
  assert_int_equal(mstat.version, 1);
  assert_int_equal(mstat.access_count, count);
  assert_true(mstat.chunk_count > 10);
  assert_true(mstat.truncated);
  uint64_t kinds[3] = {0};
  for (size_t i = 0; i < count; i++)
    kinds[a[i].kind]++;
  for (int k = 0; k < 3; k++)
    assert_int_equal(mstat.counts_by_kind[k], kinds[k]);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(mstat.file_bytes, (uint64_t)st.st_size);
  assert_string_equal(stat_info.program, "/usr/bin/kernel");
  assert_int_equal(ms_site_table_count(stat_info.sites), SITE_COUNT);
  ms_stream_info_clear(&stat_info);
  ms_stream_info_clear(&info);
  unlink(path);
  free(a);
}

/* A small valid file, loaded into memory, for the corruption tests. */
static uint8_t *small_file(size_t *size, ms_access **accesses, size_t count) {
  *accesses = generate(count, 42);
  ms_stream_info info;
  fill_info(&info);
  char path[256];
  temp_path(path, sizeof path, "small.mtr");
  write_trace(path, *accesses, count, &info);
  ms_stream_info_clear(&info);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  rewind(f);
  uint8_t *data = malloc(*size);
  assert_int_equal(fread(data, 1, *size, f), *size);
  fclose(f);
  return data;
}

static void put_file(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, size, f), size);
  fclose(f);
}

/* Opens and drains; returns the first error (0 if the whole file read back equal). */
static int drain(const char *path, const ms_access *expected, size_t count) {
  ms_source *source;
  int rc = ms_mtr_open(path, &source);
  if (rc < 0) return rc;
  ms_batch batch;
  ms_batch_init(&batch, 0);
  size_t seen = 0;
  while ((rc = ms_source_next(source, &batch)) > 0) {
    if (seen + batch.count > count ||
        memcmp(batch.accesses, expected + seen, batch.count * sizeof *expected) != 0)
      fail_msg("%s: corrupted data read back without an error", path);
    seen += batch.count;
  }
  ms_batch_free(&batch);
  ms_source_destroy(source);
  if (rc == 0 && seen != count) fail_msg("%s: short read without an error", path);
  return rc;
}

static void test_every_cut_is_truncated(void **state) {
  (void)state;
  size_t size;
  ms_access *a;
  uint8_t *data = small_file(&size, &a, 600);
  char path[256], expected[300];
  temp_path(path, sizeof path, "cut.mtr");
  for (size_t cut = 0; cut < size; cut++) {
    put_file(path, data, cut);
    assert_int_equal(drain(path, a, 600), MS_ERR_TRUNCATED);
    snprintf(expected, sizeof expected, "%s: truncated at offset %zu", path, cut);
    const char *message = ms_error_message(), *rest = message + strlen(expected);
    assert_memory_equal(message, expected, strlen(expected));
    /* cut after the header: the chunks before the cut can be recovered, and the message
     * says how */
    if (*rest && strcmp(rest, " (its end is missing; `memsnap recover` keeps the intact chunks)"))
      fail_msg("%s", message);
  }
  put_file(path, data, size);
  assert_int_equal(drain(path, a, 600), 0);
  unlink(path);
  free(data);
  free(a);
}

static void test_every_flipped_byte_is_caught(void **state) {
  (void)state;
  size_t size;
  ms_access *a;
  uint8_t *data = small_file(&size, &a, 600);
  char path[256];
  temp_path(path, sizeof path, "flip.mtr");
  int errors = 0;
  for (size_t at = 0; at < size; at++) {
    data[at] ^= 0x20;
    put_file(path, data, size);
    int rc = drain(path, a, 600); /* fails the test if wrong data comes back */
    if (rc < 0) {
      errors++;
      assert_non_null(strstr(ms_error_message(), path));
      assert_non_null(strstr(ms_error_message(), "offset"));
    }
    data[at] ^= 0x20;
  }
  assert_true(errors > (int)size * 9 / 10); /* a few flips are harmless to zstd */
  /* a flip inside the frame names the chunk */
  size_t frame = 0;
  for (size_t i = 0; i + 4 < size; i++)
    if (memcmp(data + i, "MSCK", 4) == 0) frame = i + 40 + 20;
  assert_true(frame > 0);
  data[frame] ^= 0xff;
  put_file(path, data, size);
  assert_int_equal(drain(path, a, 600), MS_ERR_FORMAT);
  assert_non_null(strstr(ms_error_message(), "chunk 0 corrupt ("));
  data[frame] ^= 0xff;
  /* bad magic */
  data[1] = 'X';
  put_file(path, data, size);
  char expected[300];
  snprintf(expected, sizeof expected, "%s: offset 0: not a memsnap trace (bad magic)", path);
  assert_int_equal(drain(path, a, 600), MS_ERR_FORMAT);
  assert_string_equal(ms_error_message(), expected);
  unlink(path);
  free(data);
  free(a);
}

/* A corrupt chunk past the first is met by the read-ahead thread (lib/io/mtr_reader.c): the
 * records before it come back intact, the error names the file and the chunk, and it comes
 * back again on the next call; a seek to an earlier chunk then reads correctly. */
static void test_corrupt_later_chunk(void **state) {
  (void)state;
  const size_t count = 4 * 262144 + 1000; /* 5 chunks of 2^18 records */
  size_t size;
  ms_access *a;
  uint8_t *data = small_file(&size, &a, count);
  size_t magic[8], chunks = 0;
  for (size_t i = 0; i + 4 < size && chunks < 8; i++)
    if (memcmp(data + i, "MSCK", 4) == 0) magic[chunks++] = i;
  assert_int_equal(chunks, 5);
  data[magic[2] + 40 + 20] ^= 0xff; /* inside chunk 2's first frame */
  char path[256];
  temp_path(path, sizeof path, "flip2.mtr");
  put_file(path, data, size);
  ms_source *source;
  assert_int_equal(ms_mtr_open(path, &source), 0);
  ms_batch batch;
  ms_batch_init(&batch, 0);
  size_t seen = 0;
  int rc;
  while ((rc = ms_source_next(source, &batch)) > 0) {
    assert_memory_equal(batch.accesses, a + seen, batch.count * sizeof *a);
    seen += batch.count;
  }
  assert_int_equal(rc, MS_ERR_FORMAT);
  assert_int_equal(seen, 2 * 262144);
  assert_non_null(strstr(ms_error_message(), path));
  assert_non_null(strstr(ms_error_message(), "chunk 2 corrupt ("));
  assert_int_equal(ms_source_next(source, &batch), MS_ERR_FORMAT);
  assert_non_null(strstr(ms_error_message(), "chunk 2 corrupt ("));
  assert_int_equal(ms_source_seek(source, 262144 + 5), 0);
  assert_true(ms_source_next(source, &batch) > 0);
  assert_memory_equal(batch.accesses, a + 262144 + 5, batch.count * sizeof *a);
  assert_int_equal(ms_source_seek(source, 3 * 262144), 0); /* past the bad chunk */
  assert_true(ms_source_next(source, &batch) > 0);
  assert_memory_equal(batch.accesses, a + 3 * 262144, batch.count * sizeof *a);
  ms_batch_free(&batch);
  ms_source_destroy(source);
  unlink(path);
  free(data);
  free(a);
}

/* ---- memsnap recover (ms_mtr_recover) ------------------------------------------------ */

/* Every access of a trace (it must read cleanly to its end). */
static ms_access *read_all(const char *path, size_t *count, ms_stream_info *info) {
  ms_source *source;
  assert_int_equal(ms_mtr_open(path, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  size_t capacity = 1 << 16;
  ms_access *all = malloc(capacity * sizeof *all);
  *count = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
    if (*count + batch.count > capacity) {
      capacity = 2 * (*count + batch.count);
      all = realloc(all, capacity * sizeof *all);
    }
    memcpy(all + *count, batch.accesses, batch.count * sizeof *all);
    *count += batch.count;
  }
  assert_int_equal(n, 0);
  ms_batch_free(&batch);
  if (info) {
    *info = source->info;
    memset(&source->info, 0, sizeof source->info);
  }
  ms_source_destroy(source);
  return all;
}

/* The chunk offsets of a whole file, from its index (not by looking for the chunk magic,
 * which compressed bytes may hold). */
static size_t chunk_offsets(const uint8_t *data, size_t size, uint64_t *offsets, size_t max) {
  uint64_t trailer = 0, trailer_bytes = 0;
  for (int i = 7; i >= 0; i--) {
    trailer = trailer << 8 | data[size - 24 + i];
    trailer_bytes = trailer_bytes << 8 | data[size - 16 + i];
  }
  uint64_t chunks = 0;
  for (int i = 7; i >= 0; i--)
    chunks = chunks << 8 | data[trailer + 48 + i]; /* after magic, 3 u32, 4 u64 */
  assert_true(chunks <= max);
  const uint8_t *index = data + trailer + trailer_bytes - 4 - 16 * chunks;
  for (size_t k = 0; k < chunks; k++) {
    offsets[k] = 0;
    for (int i = 7; i >= 0; i--)
      offsets[k] = offsets[k] << 8 | index[16 * k + (size_t)i];
  }
  offsets[chunks] = trailer;
  return (size_t)chunks;
}

/* Recovers `path` into rec.mtr and checks what the report and the file say: `chunks`
 * chunks of 2^18 records kept (or all `count` records when the damage is past the chunks),
 * equal to the original's first ones, sites numbered as before. */
static void expect_recovered(const char *path, const ms_access *a, size_t count, size_t chunks,
                             uint64_t damage_offset, int sites_lost) {
  char out[256];
  temp_path(out, sizeof out, "rec.mtr");
  ms_mtr_recovery report;
  assert_int_equal(ms_mtr_recover(path, out, &report), 0);
  size_t expected = chunks * 262144 < count ? chunks * 262144 : count;
  assert_int_equal(report.chunks, chunks);
  assert_int_equal(report.accesses, expected);
  assert_int_equal(report.damage_offset, damage_offset);
  assert_int_equal(report.intact, 0);
  assert_int_equal(report.sites_lost, sites_lost);
  ms_stream_info info;
  size_t got_count;
  ms_access *got = read_all(out, &got_count, &info);
  assert_int_equal(got_count, expected);
  assert_accesses_equal(a, got, expected, 0);
  assert_int_equal(info.flags & (MS_STREAM_TRUNCATED | MS_STREAM_RECOVERED),
                   MS_STREAM_TRUNCATED | MS_STREAM_RECOVERED);
  assert_int_equal(info.flags & MS_STREAM_SAMPLED, MS_STREAM_SAMPLED); /* the header's */
  assert_string_equal(info.program, "/usr/bin/kernel");
  assert_int_equal(info.argc, 4);
  uint32_t highest = 0;
  for (size_t i = 0; i < expected; i++)
    if (a[i].site != MS_SITE_NONE && a[i].site + 1 > highest) highest = a[i].site + 1;
  if (sites_lost) {
    assert_int_equal(ms_site_table_count(info.sites), highest); /* those the records name */
    assert_int_equal(info.exit_status, -1);
    const ms_site *site = ms_site_table_get(info.sites, 7);
    assert_non_null(site);
    assert_string_equal(site->function, "[lost site 7]");
    assert_null(site->object);
    assert_null(site->file);
  } else {
    assert_int_equal(ms_site_table_count(info.sites), SITE_COUNT); /* the trailer's */
    assert_string_equal(ms_site_table_get(info.sites, 7)->function, "f7");
    assert_int_equal(info.exit_status, 139);
  }
  assert_int_equal(info.thread_count, 4); /* threads 0-3 in every chunk */
  ms_stream_info_clear(&info);
  free(got);
  unlink(out);
}

static void expect_nothing_recovered(const char *path, const char *why) {
  char out[256];
  temp_path(out, sizeof out, "rec.mtr");
  ms_mtr_recovery report;
  assert_int_equal(ms_mtr_recover(path, out, &report) < 0, 1);
  if (!strstr(ms_error_message(), why) || !strstr(ms_error_message(), path))
    fail_msg("'%s' lacks '%s'", ms_error_message(), why);
  assert_int_equal(access(out, F_OK), -1); /* no file written */
}

/* Cut inside the header: nothing; inside chunk k (its header or its frames): chunks 0 to
 * k-1; after the last chunk (in the trailer or the footer): every chunk, the sites lost
 * with the trailer. */
static void test_recover_cut_traces(void **state) {
  (void)state;
  const size_t count = 4 * 262144 + 1000; /* 5 chunks */
  size_t size;
  ms_access *a;
  uint8_t *data = small_file(&size, &a, count);
  uint64_t offsets[8];
  assert_int_equal(chunk_offsets(data, size, offsets, 7), 5);
  char path[256];
  temp_path(path, sizeof path, "cut.mtr");
  put_file(path, data, 10);
  expect_nothing_recovered(path,
                           "nothing to recover: its header is damaged (truncated at offset 10)");
  put_file(path, data, offsets[0] - 3);
  expect_nothing_recovered(path, "nothing to recover: its header is damaged");
  put_file(path, data, offsets[0]);
  expect_nothing_recovered(path, "nothing to recover: the damage starts at the first chunk");
  for (size_t k = 0; k < 5; k++) {
    size_t cuts[] = {offsets[k] + 10, offsets[k] + 40, offsets[k] + 41,
                     (offsets[k] + offsets[k + 1]) / 2, offsets[k + 1] - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
      put_file(path, data, cuts[c]);
      if (k == 0)
        expect_nothing_recovered(path, "nothing to recover: the damage starts at the first chunk");
      else
        expect_recovered(path, a, count, k, offsets[k], 1);
    }
  }
  size_t past[] = {offsets[5], offsets[5] + 1, offsets[5] + 100, size - 24, size - 1};
  for (size_t c = 0; c < sizeof past / sizeof *past; c++) {
    put_file(path, data, past[c]);
    expect_recovered(path, a, count, 5, offsets[5], 1);
  }
  /* the ordinary reader's message says what to do */
  put_file(path, data, offsets[3] + 100);
  assert_int_equal(drain(path, a, count), MS_ERR_TRUNCATED);
  assert_non_null(strstr(ms_error_message(), "`memsnap recover` keeps the intact chunks"));
  unlink(path);
  free(data);
  free(a);
}

/* A damaged byte in chunk 2: chunks 0 and 1, with the intact trailer's sites and exit
 * status; an intact trace: copied whole, not marked. */
static void test_recover_damaged_chunk_and_intact_trace(void **state) {
  (void)state;
  const size_t count = 4 * 262144 + 1000;
  size_t size;
  ms_access *a;
  uint8_t *data = small_file(&size, &a, count);
  uint64_t offsets[8];
  assert_int_equal(chunk_offsets(data, size, offsets, 7), 5);
  char path[256];
  temp_path(path, sizeof path, "flip.mtr");
  data[offsets[2] + 40 + 20] ^= 0xff; /* in its first frame */
  put_file(path, data, size);
  expect_recovered(path, a, count, 2, offsets[2], 0);
  ms_mtr_recovery report;
  char out[256];
  temp_path(out, sizeof out, "rec.mtr");
  assert_int_equal(ms_mtr_recover(path, out, &report), 0);
  assert_non_null(strstr(report.damage, "chunk 2 corrupt (zstd: "));
  data[offsets[2] + 40 + 20] ^= 0xff;
  data[offsets[2] + 4] ^= 0x01; /* its header: record count */
  put_file(path, data, size);
  expect_recovered(path, a, count, 2, offsets[2], 0);
  data[offsets[2] + 4] ^= 0x01;
  data[offsets[5] + 30] ^= 0x10; /* the trailer: every chunk, the sites lost */
  put_file(path, data, size);
  expect_recovered(path, a, count, 5, offsets[5], 1);
  data[offsets[5] + 30] ^= 0x10;

  put_file(path, data, size);
  assert_int_equal(ms_mtr_recover(path, out, &report), 0);
  assert_int_equal(report.intact, 1);
  assert_int_equal(report.chunks, 5);
  assert_int_equal(report.accesses, count);
  ms_stream_info info;
  size_t got_count;
  ms_access *got = read_all(out, &got_count, &info);
  assert_int_equal(got_count, count);
  assert_accesses_equal(a, got, count, 0);
  assert_int_equal(info.flags, MS_STREAM_SAMPLED | MS_STREAM_TRUNCATED); /* as written */
  assert_int_equal(info.exit_status, 139);
  assert_int_equal(ms_site_table_count(info.sites), SITE_COUNT);
  ms_stream_info_clear(&info);
  free(got);
  /* the output may be the input: written aside, then renamed over it */
  data[offsets[3] + 40 + 20] ^= 0xff;
  put_file(path, data, size);
  assert_int_equal(ms_mtr_recover(path, path, &report), 0);
  assert_int_equal(report.chunks, 3);
  got = read_all(path, &got_count, NULL);
  assert_int_equal(got_count, 3 * 262144);
  assert_accesses_equal(a, got, got_count, 0);
  free(got);
  unlink(out);
  unlink(path);
  free(data);
  free(a);
}

/* Every cut and every flipped byte of a one-chunk trace: recover either keeps that chunk,
 * equal to the original, or writes nothing; never anything else. */
static void test_recover_every_cut_and_flip(void **state) {
  (void)state;
  size_t size;
  ms_access *a;
  uint8_t *data = small_file(&size, &a, 600);
  char path[256], out[256];
  temp_path(path, sizeof path, "small-damaged.mtr");
  temp_path(out, sizeof out, "rec.mtr");
  int kept = 0, flips_kept = 0;
  for (size_t at = 0; at < 2 * size; at++) {
    size_t cut = at < size ? at : size;
    if (at >= size) data[at - size] ^= 0x20;
    put_file(path, data, cut);
    ms_mtr_recovery report;
    if (ms_mtr_recover(path, out, &report) == 0) {
      size_t got_count;
      ms_access *got = read_all(out, &got_count, NULL);
      assert_int_equal(got_count, 600);
      assert_accesses_equal(a, got, 600, 0);
      free(got);
      unlink(out);
      if (at < size)
        kept++;
      else
        flips_kept++;
    } else {
      assert_int_equal(access(out, F_OK), -1);
    }
    if (at >= size) data[at - size] ^= 0x20;
  }
  assert_true(kept > 0 && flips_kept > 0);
  unlink(path);
  free(data);
  free(a);
}

/* Two fields of one structure read by two instructions, node after node in random order
 * (a linked list): the second field is predicted from the first one's address, so only one
 * delta per node is stored, and seeking still equals reading from the start. */
static void test_round_trip_struct_fields(void **state) {
  (void)state;
  const size_t count = 600000;
  ms_access *a = malloc(count * sizeof *a);
  uint64_t x = 99;
  for (size_t i = 0; i < count; i += 2) {
    uint64_t node = 0x10000000 + (next_random(&x) % (1u << 20)) * 16;
    a[i] = (ms_access){.address = node + 8, .site = 0, .size = 8, .kind = MS_LOAD};
    a[i + 1] = (ms_access){.address = node, .site = 1, .size = 8, .kind = MS_LOAD};
  }
  ms_stream_info info;
  fill_info(&info);
  char path[256];
  temp_path(path, sizeof path, "fields.mtr");
  write_trace(path, a, count, &info);
  assert_int_equal(drain(path, a, count), 0);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true((size_t)st.st_size < 3 * count); /* one 4-byte delta per node, not two */
  ms_source *source;
  assert_int_equal(ms_mtr_open(path, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 1000), 0);
  uint64_t targets[] = {1, 262143, 262144, 262145, 300001, count - 1};
  for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
    assert_int_equal(ms_source_seek(source, targets[t]), 0);
    assert_true(ms_source_next(source, &batch) > 0);
    assert_accesses_equal(a + targets[t], batch.accesses, batch.count, targets[t]);
  }
  ms_batch_free(&batch);
  ms_source_destroy(source);
  ms_stream_info_clear(&info);
  unlink(path);
  free(a);
}

static void test_empty_trace_and_no_sites(void **state) {
  (void)state;
  char path[256];
  temp_path(path, sizeof path, "empty.mtr");
  ms_stream_info info = {.sites = ms_site_table_new(), .exit_status = 0};
  ms_sink *sink;
  assert_int_equal(ms_mtr_sink_new(path, &sink), 0);
  assert_int_equal(sink->ops->begin(sink, &info), 0);
  assert_int_equal(sink->ops->end(sink, &info), 0);
  ms_sink_destroy(sink);
  assert_int_equal(drain(path, NULL, 0), 0);
  ms_mtr_stat mstat;
  assert_int_equal(ms_mtr_stat_file(path, &mstat, NULL), 0);
  assert_int_equal(mstat.access_count, 0);
  assert_int_equal(mstat.chunk_count, 0);
  /* a site beyond the table is refused, and the aborted file never appears */
  assert_int_equal(ms_mtr_sink_new(path, &sink), 0);
  ms_access bad = {.address = 1, .site = 3, .size = 4};
  ms_batch batch = {&bad, 1, 1};
  assert_int_equal(sink->ops->consume(sink, &info, &batch), MS_ERR_ARG);
  ms_sink_destroy(sink);
  assert_int_equal(drain(path, NULL, 0), 0); /* the old file is intact */
  unlink(path);
  ms_stream_info_clear(&info);
}

/* Counts by kind and the thread count come from the records when the stream does not say:
 * long runs of one kind per site across chunk boundaries, records that never change their
 * site's initial attributes (thread 0, size 8, load), a late thread, and a bad kind. */
static void write_plain(const char *path, const ms_access *a, size_t count, ms_stream_info *info) {
  ms_sink *sink;
  assert_int_equal(ms_mtr_sink_new(path, &sink), 0);
  ms_batch batch = {(ms_access *)a, count, count};
  assert_int_equal(sink->ops->consume(sink, info, &batch), 0);
  assert_int_equal(sink->ops->end(sink, info), 0);
  ms_sink_destroy(sink);
}

static void test_counts_and_threads_from_records(void **state) {
  (void)state;
  char path[256];
  temp_path(path, sizeof path, "runs.mtr");
  ms_stream_info info = {.sites = ms_site_table_new(), .exit_status = 0};
  for (uint32_t s = 0; s < 3; s++)
    ms_site_table_add(info.sites, 0x1000 + s, NULL, NULL, NULL, 0);
  size_t count = 3 * 262144 + 777;
  ms_access *a = calloc(count, sizeof *a);
  assert_non_null(a);
  uint64_t kinds[3] = {0};
  for (size_t i = 0; i < count; i++) {
    uint32_t site = (uint32_t)(i % 3);
    uint8_t kind = site == 0 ? MS_LOAD : site == 1 ? MS_STORE : i < count / 2 ? MS_MODIFY : MS_LOAD;
    a[i] = (ms_access){.address = 0x10000 + 8 * i, .site = site, .size = 8, .kind = kind};
    kinds[kind]++;
  }
  /* only site 0 (initial attributes): one thread, although the stream says none */
  ms_access *zero = calloc(1000, sizeof *zero);
  assert_non_null(zero);
  for (size_t i = 0; i < 1000; i++)
    zero[i] = (ms_access){.address = 64 * i, .site = 0, .size = 8, .kind = MS_LOAD};
  write_plain(path, zero, 1000, &info);
  ms_mtr_stat mstat;
  ms_stream_info got;
  assert_int_equal(ms_mtr_stat_file(path, &mstat, &got), 0);
  assert_int_equal(got.thread_count, 1);
  assert_int_equal(mstat.counts_by_kind[MS_LOAD], 1000);
  ms_stream_info_clear(&got);

  a[count - 5].thread = 6; /* a late thread, in the last chunk */
  write_plain(path, a, count, &info);
  assert_int_equal(ms_mtr_stat_file(path, &mstat, &got), 0);
  assert_int_equal(got.thread_count, 7);
  assert_int_equal(mstat.access_count, count);
  for (int k = 0; k < 3; k++)
    assert_int_equal(mstat.counts_by_kind[k], kinds[k]);
  ms_stream_info_clear(&got);
  ms_source *source;
  assert_int_equal(ms_mtr_open(path, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  size_t seen = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
    assert_accesses_equal(a + seen, batch.accesses, batch.count, seen);
    seen += batch.count;
  }
  assert_int_equal(n, 0);
  assert_int_equal(seen, count);
  ms_batch_free(&batch);
  ms_source_destroy(source);

  /* a kind out of range is refused, in the middle of a batch of good records */
  a[1000].kind = MS_ACCESS_KIND_COUNT;
  ms_sink *sink;
  assert_int_equal(ms_mtr_sink_new(path, &sink), 0);
  ms_batch bad = {a, 2000, 2000};
  assert_int_equal(sink->ops->consume(sink, &info, &bad), MS_ERR_ARG);
  ms_sink_destroy(sink);
  unlink(path);
  ms_stream_info_clear(&info);
  free(zero);
  free(a);
}

static void test_atomic_output(void **state) {
  (void)state;
  char path[256];
  temp_path(path, sizeof path, "atomic.mtr");
  ms_stream_info info = {.sites = ms_site_table_new(), .exit_status = 0};
  ms_access one = {.address = 64, .site = MS_SITE_NONE, .size = 8};
  ms_batch batch = {&one, 1, 1};
  ms_sink *sink;
  /* destroy without end() is an abort: no file, no temporary */
  assert_int_equal(ms_mtr_sink_new(path, &sink), 0);
  assert_int_equal(sink->ops->begin(sink, &info), 0);
  assert_int_equal(sink->ops->consume(sink, &info, &batch), 0);
  ms_sink_destroy(sink);
  assert_int_equal(access(path, F_OK), -1);
  char listing[300];
  snprintf(listing, sizeof listing, "ls -A %s | grep -q atomic", temp_dir);
  assert_int_not_equal(system(listing), 0);
  /* a directory that does not exist: the error names the path */
  assert_true(ms_mtr_sink_new("/nonexistent-dir/x.mtr", &sink) < 0);
  assert_non_null(strstr(ms_error_message(), "/nonexistent-dir/x.mtr"));
  assert_true(ms_din_sink_new("/nonexistent-dir/x.din", &sink) < 0);
  ms_stream_info_clear(&info);
}

int main(void) {
  if (!mkdtemp(temp_dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_many_chunks),
      cmocka_unit_test(test_round_trip_struct_fields),
      cmocka_unit_test(test_every_cut_is_truncated),
      cmocka_unit_test(test_every_flipped_byte_is_caught),
      cmocka_unit_test(test_corrupt_later_chunk),
      cmocka_unit_test(test_recover_cut_traces),
      cmocka_unit_test(test_recover_damaged_chunk_and_intact_trace),
      cmocka_unit_test(test_recover_every_cut_and_flip),
      cmocka_unit_test(test_empty_trace_and_no_sites),
      cmocka_unit_test(test_atomic_output),
      cmocka_unit_test(test_counts_and_threads_from_records),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char command[300];
  snprintf(command, sizeof command, "rm -rf %s", temp_dir);
  if (system(command) != 0) return 1;
  return failed;
}
