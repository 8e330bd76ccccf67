/* Site table (see memsnap/sites.h).
 *
 * Model: a dense array of sites in order of addition, plus an open-addressing hash from pc
 * to the first id with that pc (load factor <= 1/2). Object paths repeat across sites, so
 * they are interned in a small list; other strings are copied per site. Source locations
 * are read from the objects' DWARF by ms_site_table_resolve, which lives with the capture
 * (lib/capture/symbols/): the site table itself needs no elfutils.
 */
#include "memsnap/sites.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "id_index.h"
#include "memsnap/error.h"

struct ms_site_table {
  ms_site *sites;
  uint32_t count, capacity;
  id_index by_pc; /* pc -> the first id with it */
  char **objects; /* interned object paths */
  uint32_t object_count;
};

ms_site_table *ms_site_table_new(void) { return calloc(1, sizeof(ms_site_table)); }

void ms_site_table_free(ms_site_table *table) {
  if (!table) return;
  for (uint32_t i = 0; i < table->count; i++) {
    free((char *)table->sites[i].function);
    free((char *)table->sites[i].file);
  }
  for (uint32_t i = 0; i < table->object_count; i++)
    free(table->objects[i]);
  free(table->objects);
  free(table->sites);
  id_index_free(&table->by_pc);
  free(table);
}

uint32_t ms_site_table_count(const ms_site_table *table) { return table->count; }

const ms_site *ms_site_table_get(const ms_site_table *table, uint32_t id) {
  return id < table->count ? &table->sites[id] : NULL;
}

typedef struct pc_key {
  const ms_site_table *table;
  uint64_t pc;
} pc_key;

static int same_pc(const void *context, uint32_t id) {
  const pc_key *key = context;
  return key->table->sites[id].pc == key->pc;
}

static uint64_t hash_of_site(const void *context, uint32_t id) {
  return id_index_hash(((const ms_site_table *)context)->sites[id].pc);
}

int64_t ms_site_table_find(const ms_site_table *table, uint64_t pc) {
  pc_key key = {table, pc};
  return id_index_find(&table->by_pc, id_index_hash(pc), same_pc, &key);
}

static const char *intern_object(ms_site_table *table, const char *object) {
  if (!object) return NULL;
  for (uint32_t i = 0; i < table->object_count; i++)
    if (strcmp(table->objects[i], object) == 0) return table->objects[i];
  char **objects = realloc(table->objects, (table->object_count + 1) * sizeof *objects);
  if (!objects) return NULL;
  table->objects = objects;
  char *copy = strdup(object);
  if (copy) objects[table->object_count++] = copy;
  return copy;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

int64_t ms_site_table_add(ms_site_table *table, uint64_t pc, const char *object,
                          const char *function, const char *file, uint32_t line) {
  if (table->count == UINT32_MAX - 1)
    return ms_error_set(MS_ERR_ARG, "too many sites (limit %u)", UINT32_MAX - 1);
  if (table->count == table->capacity) {
    uint32_t capacity = table->capacity ? table->capacity * 2 : 64;
    ms_site *sites = realloc(table->sites, capacity * sizeof *sites);
    if (!sites) return ms_error_set(MS_ERR_NOMEM, "out of memory for the site table");
    table->sites = sites;
    table->capacity = capacity;
  }
  ms_site *site = &table->sites[table->count];
  site->pc = pc;
  site->object = intern_object(table, object);
  site->function = dup_or_null(function);
  site->file = dup_or_null(file);
  site->line = line;
  if ((object && !site->object) || (function && !site->function) || (file && !site->file)) {
    free((char *)site->function);
    free((char *)site->file);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the site table");
  }
  /* an earlier site of the same pc keeps the index's entry */
  int first = ms_site_table_find(table, pc) < 0;
  uint32_t id = table->count++;
  int rc = first ? id_index_add(&table->by_pc, id_index_hash(pc), id, hash_of_site, table) : 0;
  if (rc < 0) {
    free((char *)site->function);
    free((char *)site->file);
    table->count--;
    return rc;
  }
  return id;
}

int ms_site_table_set_location(ms_site_table *table, uint32_t id, const char *function,
                               const char *file, uint32_t line) {
  if (id >= table->count) return ms_error_set(MS_ERR_ARG, "site %u out of range", id);
  ms_site *site = &table->sites[id];
  char *new_function = dup_or_null(function), *new_file = dup_or_null(file);
  if ((function && !new_function) || (file && !new_file)) {
    free(new_function);
    free(new_file);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the site table");
  }
  free((char *)site->function);
  free((char *)site->file);
  site->function = new_function;
  site->file = new_file;
  site->line = line;
  return MS_OK;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int ms_site_table_name_by_offset(ms_site_table *table, const char *object_path,
                                 uint64_t load_bias) {
  int named = 0;
  for (uint32_t id = 0; id < table->count; id++) {
    ms_site *site = &table->sites[id];
    if (site->function || site->file || !site->object || strcmp(site->object, object_path) != 0)
      continue;
    char name[4096];
    snprintf(name, sizeof name, "%s+0x%" PRIx64, base_name(object_path), site->pc - load_bias);
    int rc = ms_site_table_set_location(table, id, name, NULL, 0);
    if (rc < 0) return rc;
    named++;
  }
  return named;
}

/* A name of ms_site_table_name_by_offset's form, "OBJECT+0xHEX" (no symbol has a '+'); a
 * profile keeps the name but not the object. */
static int named_by_offset(const ms_site *site) {
  const char *plus = strstr(site->function, "+0x");
  if (!plus || site->file || plus == site->function || !plus[3]) return 0;
  for (const char *p = plus + 3; *p; p++)
    if (!isxdigit((unsigned char)*p)) return 0;
  return 1;
}

const char *ms_site_describe(const ms_site *site, char *buf, size_t size) {
  if (!site) {
    snprintf(buf, size, "(unknown site)");
  } else if (site->function && named_by_offset(site)) {
    snprintf(buf, size, "%s", site->function); /* its run-time pc changes from run to run */
  } else if (site->function && site->file) {
    snprintf(buf, size, "%s (%s:%u)", site->function, base_name(site->file), site->line);
  } else if (site->function) {
    snprintf(buf, size, "%s (0x%" PRIx64 ")", site->function, site->pc);
  } else {
    snprintf(buf, size, "0x%" PRIx64, site->pc);
  }
  return buf;
}
