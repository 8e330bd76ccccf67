/* The .psnap writer (docs/formats.md, "The .psnap profile"): version 2, every field in a
 * fixed order, so text -> parse -> text gives identical bytes; compressed, the whole text
 * through zstd. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "memsnap/error.h"
#include "memsnap/output.h"
#include "memsnap/psnap.h"
#include "profile_internal.h"

static void write_quoted(FILE *out, const char *text) {
  fputc('"', out);
  for (const char *p = text; *p; p++) {
    if (*p == '"' || *p == '\\')
      fputc('\\', out), fputc(*p, out);
    else if (*p == '\n')
      fputs("\\n", out);
    else if (*p == '\t')
      fputs("\\t", out);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

/* 1 if `file` lies in directory dir[0, length) at one '/' and can be written relative to
 * it: the parser's DIR/FILE then gives the path back. */
static int under_dir(const char *file, const char *dir, size_t length) {
  return !strncmp(file, dir, length) && file[length] == '/' && file[length + 1] != '/' &&
         file[length + 1] != '\0';
}

/* The `source-dir`: of the directories of the sites' source files, the one whose
 * shortening saves the most bytes (length of the directory in `*dir`, 0 if none). Only
 * when every file is absolute: the parser joins relative names to it. */
static size_t source_dir(const ms_psnap_profile *profile, const char **dir) {
  const char *best = NULL, *previous = NULL;
  size_t best_length = 0;
  uint64_t best_saved = 0;
  for (uint32_t i = 0; i < profile->site_count; i++) {
    const ms_site *where = ms_site_table_get(profile->info.sites, profile->sites[i].trace_site);
    if (!where || !where->file) continue;
    if (where->file[0] != '/') return 0;
    if (previous && !strcmp(previous, where->file)) continue; /* sites of one file in a row */
    previous = where->file;
    size_t length = (size_t)(strrchr(where->file, '/') - where->file);
    if (length < 2 || (best && length == best_length && !strncmp(best, where->file, length)))
      continue;
    uint64_t saved = 0;
    for (uint32_t j = 0; j < profile->site_count; j++) {
      const ms_site *other = ms_site_table_get(profile->info.sites, profile->sites[j].trace_site);
      if (other && other->file && under_dir(other->file, where->file, length)) saved += length + 1;
    }
    if (saved > best_saved) best = where->file, best_length = length, best_saved = saved;
  }
  *dir = best;
  return best ? best_length : 0;
}

/* A file as one token of a site line: quoted if it holds a blank, quote or backslash. */
static void write_file(FILE *out, const char *file) {
  if (file[0] == '"' || strpbrk(file, " \t\"\\\n"))
    write_quoted(out, file);
  else
    fputs(file, out);
}

void profile_write_set(FILE *out, uint32_t first, uint32_t step, uint32_t members) {
  fprintf(out, "%" PRIu32, first);
  if (members > 1) {
    fprintf(out, "..%" PRIu64, (uint64_t)first + (uint64_t)step * (members - 1));
    if (step != 1) fprintf(out, ":%" PRIu32, step);
  }
}

/* `+0x40*t`: one slope of a merged site's addresses (written only for sets of several) */
static void write_slope(FILE *out, int64_t slope, char axis) {
  uint64_t magnitude = slope < 0 ? 0 - (uint64_t)slope : (uint64_t)slope;
  fprintf(out, "%c0x%" PRIx64 "*%c", slope < 0 ? '-' : '+', magnitude, axis);
}

/* One line per site (docs/formats.md): sN KIND SIZE xCOUNT [tTHREADS] [rRANKS]
 * @BASE[+SLOPE*t][+SLOPE*r] STORAGE [class=C] [at FILE:LINE] [pc=PC] [in FUNCTION]; lossy
 * and lossless sites continue on indented lines. */
/* A block's tables of moves, one `  moves` line each: a signed hexadecimal move for every
 * member (0 for the first). */
static void write_moves(FILE *out, const ms_psnap_thread_order *order) {
  uint64_t members = (uint64_t)(order->thread_members ? order->thread_members : 1) *
                     (order->rank_members ? order->rank_members : 1);
  for (uint32_t k = 0; k < order->move_count; k++) {
    fputs("  moves", out);
    for (uint64_t m = 0; m < members; m++) {
      int64_t move = order->moves[k * members + m];
      if (move == 0)
        fputs(" 0", out);
      else
        fprintf(out, " %c0x%" PRIx64, move < 0 ? '-' : '+',
                move < 0 ? 0 - (uint64_t)move : (uint64_t)move);
    }
    fputc('\n', out);
  }
}

int profile_write_site(const ms_psnap_profile *profile, const ms_psnap_site *site, uint32_t id,
                       const char *dir, size_t dir_length, FILE *out) {
  const ms_site *where = ms_site_table_get(profile->info.sites, site->trace_site);
  fprintf(out, "s%" PRIu32 " %s %u x%" PRIu64, id, ms_access_kind_name((ms_access_kind)site->kind),
          site->size, site->count);
  if (site->thread || site->thread_members > 1) {
    fputs(" t", out);
    profile_write_set(out, site->thread, site->thread_step, site->thread_members);
  }
  if (profile->blocks && (site->rank || site->rank_members > 1)) {
    fputs(" r", out);
    profile_write_set(out, site->rank, site->rank_step, site->rank_members);
  }
  int64_t per_thread = site->thread_members > 1 ? site->per_thread : 0;
  int64_t per_rank = site->rank_members > 1 ? site->per_rank : 0;
  fprintf(out, " @0x%" PRIx64,
          site->first_address - (uint64_t)per_thread * site->thread -
              (uint64_t)per_rank * site->rank);
  if (per_thread) write_slope(out, per_thread, 't');
  if (per_rank) write_slope(out, per_rank, 'r');
  if (site->moves) fprintf(out, "+m%" PRIu32, site->moves);
  int rc = 0;
  if (site->addresses)
    fputs(" lossless", out);
  else if (site->lossy)
    fprintf(out, " lossy range 0x%" PRIx64 " 0x%" PRIx64 " align %" PRIu64, site->low, site->high,
            site->alignment);
  else if (site->pattern.total) {
    fputc(' ', out);
    rc = ms_expr_print(&site->pattern, MS_EXPR_STRIDES, out);
  }
  if (site->cls != profile_default_class(site))
    fprintf(out, " class=%s", ms_stride_class_name(site->cls));
  if (where && where->file) {
    fputs(" at ", out);
    write_file(out, dir_length && under_dir(where->file, dir, dir_length)
                        ? where->file + dir_length + 1
                        : where->file);
    fprintf(out, ":%" PRIu32, where->line);
  }
  if (where && where->pc) fprintf(out, " pc=0x%" PRIx64, where->pc);
  if (where && where->function && where->function[0]) fprintf(out, " in %s", where->function);
  fputc('\n', out);
  if (rc < 0) return rc;
  if (site->addresses) return profile_write_addresses(out, site->addresses, site->count);
  if (site->lossy)
    for (int g = 0; g < MS_PSNAP_SEGMENTS; g++) {
      fputs("  histogram", out);
      for (int b = 0; b < MS_PSNAP_HISTOGRAM_BINS; b++)
        fprintf(out, " %" PRIu64, site->histogram[g][b]);
      fputc('\n', out);
    }
  if (site->lossy && site->stride_count) {
    uint64_t kept = 0;
    fputs("  strides", out);
    for (uint32_t i = 0; i < site->stride_count; i++) {
      fprintf(out, " %+" PRId64 ":%" PRIu64, site->top_stride[i], site->top_stride_times[i]);
      kept += site->top_stride_times[i];
    }
    fprintf(out, " other %" PRIu64 "\n", site->count - 1 - kept);
  }
  if (site->lossy && site->reuse_accesses) {
    static const char *const sizes[] = {"32:", "64:", "128:"};
    fprintf(out, "  reuse %s%" PRIu64, site->reuse_at_jumps ? "jumps " : "", site->reuse_accesses);
    for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++) {
      fprintf(out, " %s", sizes[size]);
      for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++)
        fprintf(out, " %" PRIu64, site->reuse[size][b]);
    }
    fputc('\n', out);
  }
  if (site->lossy && ms_psnap_site_new_lines(site)) {
    fputs("  first-touch", out);
    for (int g = 0; g < MS_PSNAP_SEGMENTS; g++)
      fprintf(out, " %" PRIu64, site->new_lines[g]);
    fprintf(out, " next %" PRIu64, site->new_next);
    fputc('\n', out);
  }
  if (site->lossy && site->shared_accesses) {
    fprintf(out, "  shared %" PRIu64, site->shared_accesses);
    for (int b = 0; b < MS_PSNAP_SHARED_BINS; b++)
      fprintf(out, " %" PRIu64, site->shared[b]);
    fputs(" same", out);
    for (int b = 0; b < MS_PSNAP_SHARED_BINS; b++)
      fprintf(out, " %" PRIu64, site->shared_same[b]);
    fputc('\n', out);
  }
  if (site->lossy && site->lines) fprintf(out, "  lines %" PRIu64 "\n", site->lines);
  if (site->lossy && site->tied)
    fprintf(out, "  tie s%u %+" PRId64 "\n", site->tie_site, site->tie_delta);
  return 0;
}

int ms_psnap_profile_write(const ms_psnap_profile *profile, FILE *out) {
  const ms_stream_info *info = &profile->info;
  fputs(PSNAP_MAGIC "\n# site: sN kind size xcount [tthread] @first strides (+8^9: 9 times +8)"
                    " [at file:line] [pc=] [in function]\n",
        out);
  if (info->program) {
    fputs("program ", out);
    write_quoted(out, info->program);
    fputc('\n', out);
  }
  for (int i = 0; i < info->argc; i++) {
    fputs("argument ", out);
    write_quoted(out, info->argv[i]);
    fputc('\n', out);
  }
  if (info->arch) fprintf(out, "arch %s\n", info->arch);
  if (info->capture) fprintf(out, "capture %s\n", info->capture);
  if (info->flags & MS_STREAM_SAMPLED)
    fprintf(out, "sampling on %" PRIu64 " off %" PRIu64 "\n", info->sample_on, info->sample_off);
  const char *selection = profile->selection ? profile->selection : "all";
  if (info->program && !strncmp(selection, "executable ", 11) &&
      !strcmp(selection + 11, info->program))
    fputs("selection executable\n", out); /* the program's own */
  else if (strcmp(selection, "all") != 0)
    fprintf(out, "selection %s\n", selection);
  if (profile->has_excluded) fprintf(out, "excluded %" PRIu64 "\n", profile->excluded);
  if (profile->has_rank && !profile->blocks) fprintf(out, "rank %" PRIu32 "\n", profile->rank);
  fprintf(out, "accesses %" PRIu64 "\nsites %" PRIu32 "\n%s %" PRIu32 "\n", profile->access_count,
          profile->site_count, profile->blocks ? "blocks" : "threads", profile->thread_count);
  const char *dir = NULL;
  size_t dir_length = source_dir(profile, &dir);
  if (dir_length) fprintf(out, "source-dir %.*s\n", (int)dir_length, dir);
  for (uint32_t i = 0; i < profile->site_count; i++) {
    int rc = profile_write_site(profile, &profile->sites[i], i, dir, dir_length, out);
    if (rc < 0) return rc;
  }
  for (uint32_t t = 0; t < profile->thread_count; t++) {
    const ms_psnap_thread_order *order = &profile->threads[t];
    if (profile->blocks) {
      fputs("block t", out);
      profile_write_set(out, order->thread, order->thread_step, order->thread_members);
      fputs(" r", out);
      profile_write_set(out, order->rank, order->rank_step, order->rank_members);
      fprintf(out, " accesses %" PRIu64 " order", order->accesses);
    } else
      fprintf(out, "thread %" PRIu32 " accesses %" PRIu64 " order", t, order->accesses);
    if (!order->lossy) {
      if (order->order.total) fputc(' ', out);
      int rc = ms_expr_print(&order->order, MS_EXPR_SITES, out);
      if (rc < 0) return rc;
      fputc('\n', out);
      write_moves(out, order);
      continue;
    }
    fprintf(out, " lossy start s%" PRIu32, order->first_site);
    if (order->period_length) fprintf(out, " period %" PRIu64, order->period_length);
    fputc('\n', out);
    write_moves(out, order);
    for (uint32_t k = 0; k < order->transition_count; k++) {
      if (order->period_length && order->transition_period &&
          (k == 0 || order->transition_period[k] != order->transition_period[k - 1]))
        fprintf(out, "  period %" PRIu32 "\n", order->transition_period[k]);
      fprintf(out, "  path s%" PRIu32 " s%" PRIu32 " %" PRIu64 "\n", order->transition_from[k],
              order->transition_to[k], order->transition_times[k]);
    }
  }
  return ferror(out) ? ms_error_set(MS_ERR_IO, "write failed: %m") : 0;
}

int ms_psnap_profile_write_compressed(const ms_psnap_profile *profile, FILE *out) {
  char *text = NULL;
  size_t size = 0;
  FILE *memory = open_memstream(&text, &size);
  if (!memory) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  int rc = ms_psnap_profile_write(profile, memory);
  if (fclose(memory) != 0 && rc == 0) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  size_t bound = ZSTD_compressBound(size);
  char *packed = rc == 0 ? malloc(bound) : NULL;
  if (rc == 0 && !packed) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (rc == 0) {
    /* level 19: a profile is kilobytes, compressing it takes milliseconds */
    size_t packed_size = ZSTD_compress(packed, bound, text, size, 19);
    if (ZSTD_isError(packed_size))
      rc = ms_error_set(MS_ERR_NOMEM, "zstd: %s", ZSTD_getErrorName(packed_size));
    else if (fwrite(packed, 1, packed_size, out) != packed_size)
      rc = ms_error_set(MS_ERR_IO, "write failed: %m");
  }
  free(packed);
  free(text);
  return rc;
}

int ms_psnap_profile_save(const ms_psnap_profile *profile, const char *path) {
  size_t n = strlen(path);
  return ms_psnap_profile_save_as(profile, path, n > 4 && !strcmp(path + n - 4, ".zst"));
}

int ms_psnap_profile_save_as(const ms_psnap_profile *profile, const char *path, int compress) {
  ms_output output;
  int rc = ms_output_open(&output, path);
  if (rc < 0) return rc;
  rc = compress ? ms_psnap_profile_write_compressed(profile, output.file)
                : ms_psnap_profile_write(profile, output.file);
  if (rc < 0) {
    ms_output_abort(&output);
    return rc;
  }
  return ms_output_commit(&output);
}
