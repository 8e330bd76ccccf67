/* Private to the .psnap text format's files (lib/psnap/profile*.c): the magic lines, the
 * line reader that both versions' parsers use (profile_reader.c), and what each file gives
 * the others. */
#ifndef MEMSNAP_PSNAP_PROFILE_INTERNAL_H
#define MEMSNAP_PSNAP_PROFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"

#define PSNAP_MAGIC "psnap 2"
#define PSNAP_MAGIC_1 "psnap 1" /* still read */

/* ---- profile.c ---- */

/* Allocates site->histogram if it has none (0, or MS_ERR_NOMEM). */
int profile_ensure_histogram(ms_psnap_site *site);
/* The class a site's storage and pattern suggest: written only when the site's differs. */
ms_stride_class profile_default_class(const ms_psnap_site *site);

/* ---- profile_write.c ---- */

/* `A`, `A..B` or `A..B:S`: a set of threads or ranks */
void profile_write_set(FILE *out, uint32_t first, uint32_t step, uint32_t members);
/* One site's line (and its indented lines) as site number `id`; dir: the source-dir. */
int profile_write_site(const ms_psnap_profile *profile, const ms_psnap_site *site, uint32_t id,
                       const char *dir, size_t dir_length, FILE *out);

/* ---- profile_reader.c: the text, a line at a time ---- */

typedef struct reader {
  const char *name;
  const char *line, *end, *p; /* current line [line, end), position p */
  unsigned number;
  const char *next, *text_end;
  int version;      /* 1 or 2 */
  char *source_dir; /* version 2: the directory of relative source files, or NULL */
} reader;

void profile_read_error_message(const reader *r, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The status is outside the variadic function, where clang-tidy's analyzer (which does not
 * follow variadic calls) sees that every failing read returns a negative status. */
#define read_error(r, ...) (profile_read_error_message((r), __VA_ARGS__), MS_ERR_FORMAT)

/* Next line that is not blank or a comment; 0 at the end. */
int profile_next_line(reader *r);
/* 1 if the word at r->p is `key` (then skipped with the blanks after it), else 0. */
int profile_key_is(reader *r, const char *key);
/* The word at r->p into `buf` (empty if it does not fit); returns where it starts. */
const char *profile_read_word(reader *r, char *buf, size_t size);
/* A number at r->p in `base` (10, or 16 with its 0x), and the blanks after it. */
int profile_read_unsigned(reader *r, int base, uint64_t *value);
/* 0 at the end of the line, else an error. */
int profile_read_end(reader *r);
/* A number that ends the line. */
int profile_read_number_line(reader *r, int base, uint64_t *value);
/* `A`, `A..B` or `A..B:S` at r->p (numbers at most `largest`), and the blanks after it. */
int profile_read_set(reader *r, uint64_t largest, uint32_t *first, uint32_t *step,
                     uint32_t *members);
/* A quoted string at r->p into a malloc'd *out; r->p goes past it. */
int profile_scan_quoted(reader *r, char **out);
/* A quoted string that ends the line. */
int profile_read_quoted(reader *r, char **out);
/* The rest of the line, malloc'd (NULL if out of memory). */
char *profile_copy_rest(reader *r);

/* ---- profile_addresses.c: the addresses of lossless sites ---- */

/* The `  addresses zstd BASE64` line of `count` addresses. */
int profile_write_addresses(FILE *out, const uint64_t *addresses, uint64_t count);
/* Its text after `addresses`, into site->addresses (site->count and first_address known). */
int profile_read_addresses(reader *r, ms_psnap_site *site);

/* ---- profile_parse.c: version 2, and what both versions share ---- */

/* 1 if `site` belongs to thread order t (its thread; in block form, the block's sets). */
int profile_site_in_order(const ms_psnap_profile *profile, const ms_psnap_site *site,
                          uint32_t t);
/* 1 if two sites are of the same threads and ranks. */
int profile_sites_together(const ms_psnap_site *a, const ms_psnap_site *b);
/* Adds a site's location to the profile's site table. */
int profile_add_location(ms_psnap_profile *profile, const char *function, const char *file,
                         uint32_t line, uint64_t pc);
/* The `sA sB N` of a lossy order's `path` line (r->p at sA): one more transition. */
int profile_read_transition(reader *r, ms_psnap_thread_order *order, uint32_t *capacity);
/* What replay relies on in thread t's order (read from line `order_line`). */
int profile_check_order(reader *r, ms_psnap_profile *profile, uint32_t t, unsigned order_line);
/* The whole text of a profile (not compressed) into *out. */
int profile_parse_text(const char *text, size_t size, const char *name, ms_psnap_profile *out);

/* ---- profile_legacy.c: version 1 ---- */

/* The block of site `id` after its `site N` line. */
int profile_legacy_site(reader *r, ms_psnap_profile *profile, uint32_t id);
/* The block of thread t after its `thread N` line. */
int profile_legacy_thread(reader *r, ms_psnap_profile *profile, uint32_t t);

#endif
