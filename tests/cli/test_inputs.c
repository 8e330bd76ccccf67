/* End-to-end: what memsnap reads, wherever it comes from.
 * - A compressed profile whose first zstd block is larger than 4 KiB (a profile of every
 *   object of a run): show, info, sim, dump and surface read it as they read its text.
 * - Lackey, din and .mtr from standard input, a pipe, process substitution and a FIFO
 *   written by a child: sim, dump and info give what they give of the file; a FIFO without
 *   a writer is announced; a Lackey stream is read once, a .mtr one kept.
 * - memsnap recover on a real trace cut at several offsets and with a damaged byte: the
 *   intact chunks, equal to the original's first accesses, reading cleanly with info
 *   --check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;

#define memsnap(...) test_memsnap_in(dir, __VA_ARGS__)

static char *read_in(const char *name) {
  char *text = test_read_in(dir, name);
  if (!text) fail_msg("%s/%s cannot be read", dir, name);
  return text;
}

static void assert_file_contains(const char *name, const char *fragment) {
  char *text = read_in(name);
  if (!strstr(text, fragment)) fail_msg("%s lacks '%s': %s", name, fragment, text);
  free(text);
}

/* Runs a shell command in dir (bash: process substitution). */
static int shell(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int shell(const char *format, ...) {
  char command[4096];
  va_list args;
  va_start(args, format);
  vsnprintf(command, sizeof command, format, args);
  va_end(args);
  return test_run("cd '%s' && MEMSNAP='%s' bash -c '%s'", dir, test_env("MEMSNAP"), command);
}

/* Files a and b are equal from their line `from` (1-based) on. */
static void assert_same_from_line(const char *a, const char *b, int from) {
  if (shell("cmp -s <(tail -n +%d %s) <(tail -n +%d %s)", from, a, from, b) != 0) {
    char *x = read_in(a), *y = read_in(b);
    fail_msg("%s and %s differ (from line %d):\n%s\n---\n%s", a, b, from, x, y);
  }
}

static uint64_t file_size(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  uint64_t size = (uint64_t)ftell(f);
  fclose(f);
  return size;
}

/* ---- Compressed profiles of any size -------------------------------------------------- */

/* The compressed size of the first block of the zstd frame in `name` (RFC 8878: frame
 * header, then a 3-byte block header whose bits 3-23 are the block's size). */
static size_t first_zstd_block(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char h[32];
  assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
  fclose(f);
  assert_memory_equal(h, "\x28\xb5\x2f\xfd", 4);
  unsigned descriptor = h[4], fcs_flag = descriptor >> 6, single = (descriptor >> 5) & 1,
           dict_flag = descriptor & 3;
  static const size_t fcs_bytes[4] = {0, 2, 4, 8}, dict_bytes[4] = {0, 1, 2, 4};
  size_t at =
      5 + !single + dict_bytes[dict_flag] + (fcs_flag == 0 && single ? 1 : fcs_bytes[fcs_flag]);
  uint32_t block = h[at] | (uint32_t)h[at + 1] << 8 | (uint32_t)h[at + 2] << 16;
  return block >> 3;
}

static void test_large_compressed_profile_everywhere(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("stream_add", kernel, sizeof kernel);
  assert_int_equal(memsnap("record -q -o sa.mtr -- %s 1000", kernel), 0);
  /* every object's sites: the loader's and libc's too, hundreds of kilobytes of text */
  assert_int_equal(memsnap("profile -q --all-objects -o big.psnap sa.mtr"), 0);
  assert_int_equal(memsnap("profile -q --all-objects -o big.psnap.zst sa.mtr"), 0);
  size_t block = first_zstd_block("big.psnap.zst");
  if (block <= 4096) fail_msg("the first zstd block is %zu bytes: not a test of > 4 KiB", block);
  /* each command, on the text and on the compressed profile: the same output, but for the
   * line that names the file */
  static const struct {
    const char *command;
    int from_line; /* where the outputs must agree */
  } commands[] = {
      {"show %s", 2},
      {"info %s", 2},
      {"sim -H nehalem %s", 2},
      {"dump --limit 50 %s", 1},
      {"surface --widths 64 %s", 2},
  };
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
    char args[256];
    snprintf(args, sizeof args, commands[i].command, "big.psnap");
    if (memsnap("%s", args) != 0) fail_msg("memsnap %s failed", args);
    assert_int_equal(shell("mv out text.out"), 0);
    snprintf(args, sizeof args, commands[i].command, "big.psnap.zst");
    if (memsnap("%s", args) != 0) {
      char *err = read_in("err");
      fail_msg("memsnap %s failed: %s", args, err);
    }
    if (strncmp(commands[i].command, "info", 4) == 0) {
      /* and the file size, which differs: the rest is the same */
      assert_int_equal(shell("grep -v \"^file\" out > a; grep -v \"^file\" text.out > b"), 0);
      assert_same_from_line("a", "b", 1);
    } else if (strncmp(commands[i].command, "show", 4) == 0) {
      assert_file_contains("out", "(zstd-compressed)");
      assert_same_from_line("out", "text.out", commands[i].from_line);
    } else {
      assert_same_from_line("out", "text.out", commands[i].from_line);
    }
  }
  /* and through a pipe; a signature too, told by its first line whatever its name */
  assert_int_equal(shell("$MEMSNAP dump --limit 50 big.psnap > text.out && "
                         "cat big.psnap.zst | $MEMSNAP dump --limit 50 - > out"),
                   0);
  assert_same_from_line("out", "text.out", 1);
  assert_int_equal(shell("$MEMSNAP show big.psnap.zst > text.out && "
                         "cat big.psnap.zst | $MEMSNAP show - > out"),
                   0);
  assert_same_from_line("out", "text.out", 2);
  assert_int_equal(memsnap("signature -o sa.sig sa.mtr"), 0);
  assert_int_equal(shell("$MEMSNAP show sa.sig > text.out && $MEMSNAP show - < sa.sig > out && "
                         "cmp -s out text.out && "
                         "$MEMSNAP surface sa.sig > text.out && "
                         "$MEMSNAP surface <(cat sa.sig) > out"),
                   0);
  assert_same_from_line("out", "text.out", 2);
}

/* ---- Streams: standard input, pipes, FIFOs ------------------------------------------- */

static const char *const formats[] = {"t.lackey", "t.din", "t.mtr"};

static void make_traces(void) {
  char sample[1024];
  snprintf(sample, sizeof sample, "%s/tests/io/data/small.lackey", test_env("MEMSNAP_SOURCE_DIR"));
  assert_int_equal(shell("cp %s t.lackey", sample), 0);
  assert_int_equal(memsnap("convert t.lackey t.din"), 0);
  assert_int_equal(memsnap("convert t.lackey t.mtr"), 0);
}

/* sim, dump and info of each format: the file, `cat FILE | memsnap ... -`, `< FILE` on
 * standard input, process substitution and a FIFO filled by a child give the same output
 * (sim's first line names the input, info's first line the file). */
static void test_streams_read_like_files(void **state) {
  (void)state;
  make_traces();
  static const struct {
    const char *command;
    int from_line;
  } commands[] = {{"sim -H nehalem", 2}, {"dump --limit 300", 1}, {"info", 2}, {"info --check", 2}};
  for (size_t f = 0; f < sizeof formats / sizeof *formats; f++)
    for (size_t c = 0; c < sizeof commands / sizeof *commands; c++) {
      const char *file = formats[f], *command = commands[c].command;
      int from = commands[c].from_line;
      assert_int_equal(shell("$MEMSNAP %s %s > file.out", command, file), 0);
      assert_int_equal(shell("cat %s | $MEMSNAP %s - > pipe.out", file, command), 0);
      assert_same_from_line("pipe.out", "file.out", from);
      assert_int_equal(shell("$MEMSNAP %s - < %s > stdin.out", command, file), 0);
      assert_same_from_line("stdin.out", "file.out", from);
      assert_int_equal(shell("$MEMSNAP %s <(cat %s) > substitution.out", command, file), 0);
      assert_same_from_line("substitution.out", "file.out", from);
      assert_int_equal(shell("rm -f fifo && mkfifo fifo && (cat %s > fifo &) && "
                             "$MEMSNAP %s fifo > fifo.out",
                             file, command),
                       0);
      assert_same_from_line("fifo.out", "file.out", from);
    }
  /* info of a stream counts the bytes it read */
  char expected[128];
  snprintf(expected, sizeof expected, "file size:     %llu bytes",
           (unsigned long long)file_size("t.lackey"));
  assert_int_equal(shell("cat t.lackey | $MEMSNAP info - > out"), 0);
  assert_file_contains("out", expected);
  snprintf(expected, sizeof expected, "file size:     %llu bytes",
           (unsigned long long)file_size("t.mtr"));
  assert_int_equal(shell("cat t.mtr | $MEMSNAP info - > out"), 0);
  assert_file_contains("out", expected);
  /* a conversion from a pipe, and a compressed Lackey text read through zcat */
  assert_int_equal(shell("cat t.lackey | $MEMSNAP convert - piped.mtr && cmp piped.mtr t.mtr"), 0);
  assert_int_equal(shell("gzip -c t.lackey > t.lackey.gz && "
                         "$MEMSNAP sim -H nehalem <(zcat t.lackey.gz) > gz.out && "
                         "$MEMSNAP sim -H nehalem t.lackey > file.out"),
                   0);
  assert_same_from_line("gz.out", "file.out", 2);
}

/* A FIFO nobody writes to: after a second, a notice says what memsnap waits for; the run
 * goes on when the writer comes. Empty input, a terminal on standard input, and a stream
 * read twice are errors that say so. */
static void test_stream_notices_and_errors(void **state) {
  (void)state;
  make_traces();
  assert_int_equal(shell("rm -f slow && mkfifo slow && ((sleep 2; cat t.din > slow) &) && "
                         "$MEMSNAP dump --limit 3 slow > out 2> err"),
                   0);
  assert_file_contains("err", "memsnap: waiting for a writer on FIFO slow");
  assert_file_contains("out", "2 0 ");
  /* a quick writer: no notice */
  assert_int_equal(shell("rm -f quick && mkfifo quick && ((cat t.din > quick) &) && "
                         "$MEMSNAP dump --limit 3 quick > out 2> err"),
                   0);
  assert_int_equal(file_size("err"), 0);
  assert_int_equal(shell("$MEMSNAP sim -H nehalem - < /dev/null > out 2> err"), 1);
  assert_file_contains("err", "memsnap sim: standard input: empty");
  /* compare reads its two sources in turn: the second read of standard input fails
   * clearly (a Lackey text is read as it comes, not kept) */
  assert_int_equal(shell("cat t.lackey | $MEMSNAP compare - - > out 2> err"), 1);
  assert_file_contains("err", "standard input: already read");
  /* a .mtr from a pipe is kept (in a temporary file): it can be read twice */
  assert_int_equal(shell("cat t.mtr | $MEMSNAP compare - - > out 2> err"), 0);
}

/* ---- memsnap recover -------------------------------------------------------------------- */

/* The chunk offsets of a whole .mtr in dir, from its index; returns the chunk count. */
static size_t chunk_offsets(const char *name, uint64_t *offsets, size_t max) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  unsigned char *data = malloc((size_t)size);
  rewind(f);
  assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  uint64_t trailer = 0, trailer_bytes = 0, chunks = 0;
  for (int i = 7; i >= 0; i--) {
    trailer = trailer << 8 | data[size - 24 + i];
    trailer_bytes = trailer_bytes << 8 | data[size - 16 + i];
  }
  for (int i = 7; i >= 0; i--) /* after its magic, 3 u32 and 4 u64 */
    chunks = chunks << 8 | data[trailer + 48 + i];
  assert_true(chunks < max);
  const unsigned char *index = data + trailer + trailer_bytes - 4 - 16 * chunks;
  for (size_t k = 0; k < chunks; k++) {
    offsets[k] = 0;
    for (int i = 7; i >= 0; i--)
      offsets[k] = offsets[k] << 8 | index[16 * k + (size_t)i];
  }
  offsets[chunks] = trailer;
  free(data);
  return (size_t)chunks;
}

/* `recover cut.mtr -o rec.mtr` keeps `chunks` chunks: it says so (its messages are left in
 * recover.err), rec.mtr passes info --check, and its accesses are the original's first ones (sites
 * aside when `sites_lost`: the site table was in the lost end). */
static void expect_recovered(size_t chunks, uint64_t damage, int sites_lost) {
  assert_int_equal(memsnap("recover cut.mtr -o rec.mtr"), 0);
  assert_int_equal(shell("cp err recover.err"), 0);
  char expected[256];
  snprintf(expected, sizeof expected, "damaged from offset %llu, after %zu intact chunk%s: ",
           (unsigned long long)damage, chunks, chunks == 1 ? "" : "s");
  assert_file_contains("err", expected);
  snprintf(expected, sizeof expected, "kept %zu chunk%s, %zu accesses", chunks,
           chunks == 1 ? "" : "s", chunks * 262144);
  assert_file_contains("err", expected);
  if (sites_lost) assert_file_contains("err", "the site table was in the damaged end");
  assert_int_equal(memsnap("info --check rec.mtr"), 0);
  assert_file_contains("out", "truncated:     yes");
  assert_file_contains("out", "recovered from a damaged trace");
  snprintf(expected, sizeof expected, "accesses:      %zu ", chunks * 262144);
  assert_file_contains("out", expected);
  /* the accesses: index thread kind address size, and the site unless it was lost */
  const char *columns = sites_lost ? "| cut -d\" \" -f1-5" : "";
  assert_int_equal(shell("$MEMSNAP dump rec.mtr %s > rec.txt && "
                         "$MEMSNAP dump --limit %zu whole.mtr %s > whole.txt && "
                         "cmp -s rec.txt whole.txt",
                         columns, chunks * 262144, columns),
                   0);
}

static void test_recover_real_trace(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("gather", kernel, sizeof kernel);
  assert_int_equal(memsnap("record -q -o whole.mtr -- %s 300000", kernel), 0);
  uint64_t offsets[64];
  size_t chunks = chunk_offsets("whole.mtr", offsets, 64);
  assert_true(chunks >= 4);
  /* inside the header: a clear error, no file */
  assert_int_equal(shell("head -c 100 whole.mtr > cut.mtr"), 0);
  assert_int_equal(memsnap("recover cut.mtr -o rec.mtr"), 1);
  assert_file_contains("err", "memsnap recover: cut.mtr: nothing to recover: its header is damaged "
                              "(truncated at offset 100)");
  assert_int_equal(shell("test ! -e rec.mtr"), 0);
  /* inside the first chunk: nothing either */
  assert_int_equal(shell("head -c %llu whole.mtr > cut.mtr", (unsigned long long)offsets[0] + 50),
                   0);
  assert_int_equal(memsnap("recover cut.mtr -o rec.mtr"), 1);
  assert_file_contains("err", "nothing to recover: the damage starts at the first chunk");
  /* inside chunk k (1-based): k - 1 chunks; readers refuse the cut file and say why */
  for (size_t k = 2; k <= chunks; k++) {
    uint64_t cut = (offsets[k - 1] + offsets[k]) / 2;
    assert_int_equal(shell("head -c %llu whole.mtr > cut.mtr", (unsigned long long)cut), 0);
    assert_int_equal(memsnap("sim -H nehalem cut.mtr"), 1);
    assert_file_contains("err", "`memsnap recover` keeps the intact chunks");
    expect_recovered(k - 1, offsets[k - 1], 1);
  }
  /* a damaged byte in the middle: the chunks before it, with their sites */
  size_t middle = chunks / 2;
  assert_int_equal(shell("cp whole.mtr cut.mtr && printf \"\\xff\\xff\\xff\\xff\" | "
                         "dd of=cut.mtr bs=1 seek=%llu conv=notrunc status=none",
                         (unsigned long long)offsets[middle] + 60),
                   0);
  assert_int_equal(memsnap("dump cut.mtr"), 1);
  assert_file_contains("err", "corrupt (");
  expect_recovered(middle, offsets[middle], 0);
  assert_file_contains("recover.err", "corrupt (");
  /* an intact trace: copied as it is */
  assert_int_equal(memsnap("recover whole.mtr -o copy.mtr"), 0);
  assert_file_contains("err", "no damage found");
  assert_int_equal(shell("cmp whole.mtr copy.mtr"), 0);
  /* from a pipe, and the usage errors */
  assert_int_equal(shell("head -c %llu whole.mtr | $MEMSNAP recover - -o piped.mtr 2> err",
                         (unsigned long long)offsets[2] + 100),
                   0);
  assert_file_contains("err", "kept 2 chunks");
  assert_int_equal(memsnap("recover whole.mtr"), 2);
  assert_file_contains("err", "-o OUT.mtr");
  assert_int_equal(memsnap("recover -o x.mtr"), 2);
  assert_int_equal(memsnap("recover --help"), 0);
  assert_file_contains("out", "usage: memsnap recover DAMAGED.mtr -o OUT.mtr");
}

TEST_SCRATCH_GROUP(dir)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_large_compressed_profile_everywhere),
      cmocka_unit_test(test_streams_read_like_files),
      cmocka_unit_test(test_stream_notices_and_errors),
      cmocka_unit_test(test_recover_real_trace),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
