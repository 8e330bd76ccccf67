/* Hierarchy specs, their checks, and the built-in catalog (see memsnap/cache.h).
 *
 * The catalog is data/hierarchies.tsv turned into a C table at build time
 * (cmake/GenerateHierarchyCatalog.cmake writes hierarchy_catalog.h into lib/'s binary
 * folder), so the binary needs no data file and the TSV stays the one source of truth.
 * A spec is "size/line/assoc[,size/line/assoc...]", level 1 first; a size may end in
 * k/K (x1024), m/M (x1024^2) or g/G (x1024^3), alone or as Ki/KiB/KB (cache sizes are
 * binary whatever the spelling).
 *
 * A spec is read in this order only, and a shape no cache has is refused rather than
 * simulated: Cachegrind's order (size, ways, line) gives 32768/8/64, which would otherwise
 * run as 8-byte lines and 64 ways. Lines are powers of two of at least 16 bytes (the
 * catalog's smallest is 32) unless the level is one set: a fully-associative
 * (W*D)/W/D level is the cache surface's point of width W, whose widths start at 4.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/cache.h"
#include "memsnap/number.h"
#include "memsnap/error.h"

#include "hierarchy_catalog.h"

#define CATALOG_COUNT ((int)(sizeof generated_catalog / sizeof generated_catalog[0]))

static const char *const policy_names[] = {"lru", "fifo", "random", "plru"};
static const char *const model_names[] = {"memsnap", "cachegrind"};

const char *ms_cache_policy_name(ms_cache_policy policy) {
  return (unsigned)policy < 4 ? policy_names[policy] : "unknown";
}

int ms_cache_policy_parse(const char *name) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, policy_names[i]) == 0) return i;
  return -1;
}

const char *ms_cache_model_name(ms_cache_model model) {
  return (unsigned)model < 2 ? model_names[model] : "unknown";
}

int ms_cache_model_parse(const char *name) {
  for (int i = 0; i < 2; i++)
    if (strcmp(name, model_names[i]) == 0) return i;
  return -1;
}

int ms_hierarchy_catalog_count(void) { return CATALOG_COUNT; }

const ms_hierarchy_entry *ms_hierarchy_catalog_get(int index) {
  return index >= 0 && index < CATALOG_COUNT ? &generated_catalog[index] : NULL;
}

const ms_hierarchy_entry *ms_hierarchy_catalog_find(const char *name) {
  for (int i = 0; i < CATALOG_COUNT; i++)
    if (strcmp(generated_catalog[i].name, name) == 0) return &generated_catalog[i];
  return NULL;
}

/* A decimal number, with a byte-size suffix when allowed (memsnap/number.h); 0 on success. */
static int parse_number(const char *text, size_t length, int allow_suffix, uint64_t *value) {
  return ms_parse_number(text, length, allow_suffix ? MS_NUMBER_BYTES : MS_NUMBER_PLAIN, value);
}

static int bad_level(const char *level, size_t length, const char *why) {
  return ms_error_set(MS_ERR_ARG, "bad level '%.*s': %s", (int)length, level, why);
}

static int parse_level(const char *text, size_t length, ms_cache_level_config *out) {
  const char *first = memchr(text, '/', length);
  const char *second = first ? memchr(first + 1, '/', length - (size_t)(first + 1 - text)) : NULL;
  if (!first || !second)
    return bad_level(text, length, "expected size/line/associativity, e.g. 32k/64/8");
  uint64_t size, line, associativity;
  if (parse_number(text, (size_t)(first - text), 1, &size) < 0)
    return bad_level(text, length, "size must be a number with an optional k, M or G (Ki, MiB...)");
  if (parse_number(first + 1, (size_t)(second - first - 1), 0, &line) < 0)
    return bad_level(text, length, "line size must be a number");
  if (parse_number(second + 1, (size_t)(text + length - second - 1), 0, &associativity) < 0)
    return bad_level(text, length, "associativity must be a number");
  if (line > UINT32_MAX || associativity > UINT32_MAX)
    return bad_level(text, length, "line size or associativity too large");
  out->size = size;
  out->line_size = (uint32_t)line;
  out->associativity = (uint32_t)associativity;
  out->policy = MS_CACHE_LRU;
  return MS_OK;
}

static int parse_spec(const char *spec, ms_hierarchy_config *out) {
  const char *cursor = spec;
  for (;;) {
    const char *comma = strchr(cursor, ',');
    size_t length = comma ? (size_t)(comma - cursor) : strlen(cursor);
    if (out->level_count == MS_HIERARCHY_MAX_LEVELS)
      return ms_error_set(MS_ERR_ARG, "bad hierarchy '%s': more than %d levels", spec,
                          MS_HIERARCHY_MAX_LEVELS);
    int rc = parse_level(cursor, length, &out->levels[out->level_count]);
    if (rc < 0) return rc;
    out->level_count++;
    if (!comma) return MS_OK;
    cursor = comma + 1;
  }
}

/* Why size/line/ways is no cache's shape, or NULL. */
static const char *shape_problem(uint64_t size, uint64_t line, uint64_t ways) {
  if (line == 0 || (line & (line - 1)) != 0) return "line size must be a power of two";
  if (ways < 1 || ways > MS_CACHE_MAX_ASSOCIATIVITY)
    return "associativity must be between 1 and 1024";
  if (size < line * ways) return "size must be at least line size x associativity";
  if (line < MS_CACHE_MIN_LINE_SIZE) return "line size must be at least 4 bytes";
  if (line < MS_CACHE_MIN_PLAUSIBLE_LINE_SIZE && size / (line * ways) > 1)
    return "lines under 16 bytes are for fully-associative levels only (size = line x ways)";
  return NULL;
}

/* Refuses a level no cache has, suggesting the swap of line and ways when that is one. */
static int check_shapes(const ms_hierarchy_config *config) {
  for (int i = 0; i < config->level_count; i++) {
    const ms_cache_level_config *level = &config->levels[i];
    const char *why = shape_problem(level->size, level->line_size, level->associativity);
    if (!why) continue;
    char text[96];
    snprintf(text, sizeof text, "%" PRIu64 "/%" PRIu32 "/%" PRIu32, level->size, level->line_size,
             level->associativity);
    if (shape_problem(level->size, level->associativity, level->line_size) == NULL)
      return ms_error_set(MS_ERR_ARG,
                          "bad level '%s': %s; the order is size/line/ways: did you mean "
                          "%" PRIu64 "/%" PRIu32 "/%" PRIu32 "?",
                          text, why, level->size, level->associativity, level->line_size);
    return bad_level(text, strlen(text), why);
  }
  return MS_OK;
}

int ms_hierarchy_parse(const char *text, ms_hierarchy_config *out) {
  memset(out, 0, sizeof *out);
  out->write_policy = MS_CACHE_WRITE_BACK;
  out->model = MS_CACHE_MODEL_MEMSNAP;
  out->seed = 1;
  const char *spec = text;
  if (!strchr(text, '/')) {
    const ms_hierarchy_entry *entry = ms_hierarchy_catalog_find(text);
    if (!entry)
      return ms_error_set(MS_ERR_ARG, "unknown hierarchy '%s' (memsnap hierarchies lists them)",
                          text);
    spec = entry->spec;
  }
  snprintf(out->name, sizeof out->name, "%s", text);
  int rc = parse_spec(spec, out);
  if (rc == MS_OK) rc = check_shapes(out);
  if (rc == MS_OK) rc = ms_hierarchy_config_check(out);
  return rc;
}

static int check_level(const ms_hierarchy_config *config, int index) {
  const ms_cache_level_config *level = &config->levels[index];
  char text[96];
  snprintf(text, sizeof text, "%" PRIu64 "/%" PRIu32 "/%" PRIu32, level->size, level->line_size,
           level->associativity);
  size_t n = strlen(text);
  uint32_t line = level->line_size, ways = level->associativity;
  if (line < MS_CACHE_MIN_LINE_SIZE || (line & (line - 1)) != 0)
    return bad_level(text, n, "line size must be a power of two of at least 4 bytes");
  if (ways < 1 || ways > MS_CACHE_MAX_ASSOCIATIVITY)
    return bad_level(text, n, "associativity must be between 1 and 1024");
  uint64_t set_bytes = (uint64_t)line * ways;
  if (level->size < set_bytes)
    return bad_level(text, n, "size must be at least line size x associativity");
  uint64_t sets = level->size / set_bytes;
  if (sets > UINT32_MAX) return bad_level(text, n, "too many sets");
  if ((unsigned)level->policy > MS_CACHE_PLRU) return bad_level(text, n, "unknown policy");
  if (level->policy == MS_CACHE_PLRU && config->model == MS_CACHE_MODEL_MEMSNAP &&
      ((ways & (ways - 1)) != 0 || ways > 64))
    return bad_level(text, n, "tree-PLRU needs a power-of-two associativity of at most 64");
  if (config->model == MS_CACHE_MODEL_CACHEGRIND) {
    if ((sets & (sets - 1)) != 0)
      return bad_level(text, n,
                       "the cachegrind model needs a power-of-two set count "
                       "(as Cachegrind does)");
    if (line < 16)
      return bad_level(text, n, "the cachegrind model needs lines of at least 16 bytes");
    if (level->policy != MS_CACHE_LRU)
      return bad_level(text, n, "the cachegrind model simulates LRU only");
  }
  return MS_OK;
}

int ms_hierarchy_config_check(const ms_hierarchy_config *config) {
  if (config->level_count < 1 || config->level_count > MS_HIERARCHY_MAX_LEVELS)
    return ms_error_set(MS_ERR_ARG, "hierarchy '%s' has %d levels (1 to %d allowed)", config->name,
                        config->level_count, MS_HIERARCHY_MAX_LEVELS);
  if ((unsigned)config->model > MS_CACHE_MODEL_CACHEGRIND)
    return ms_error_set(MS_ERR_ARG, "hierarchy '%s': unknown model", config->name);
  if ((unsigned)config->write_policy > MS_CACHE_WRITE_THROUGH)
    return ms_error_set(MS_ERR_ARG, "hierarchy '%s': unknown write policy", config->name);
  if (config->model == MS_CACHE_MODEL_CACHEGRIND && config->write_policy != MS_CACHE_WRITE_BACK)
    return ms_error_set(MS_ERR_ARG,
                        "hierarchy '%s': the cachegrind model is write-allocate "
                        "only (no --write-through)",
                        config->name);
  for (int i = 0; i < config->level_count; i++) {
    int rc = check_level(config, i);
    if (rc < 0) return rc;
  }
  return MS_OK;
}

const char *ms_hierarchy_config_describe(const ms_hierarchy_config *config, char *buf,
                                         size_t size) {
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (int i = 0; i < config->level_count && used < size; i++) {
    const ms_cache_level_config *level = &config->levels[i];
    int n = snprintf(buf + used, size - used, "%s%" PRIu64 "/%" PRIu32 "/%" PRIu32, i ? "," : "",
                     level->size, level->line_size, level->associativity);
    if (n < 0) break;
    used += (size_t)n;
  }
  return buf;
}
