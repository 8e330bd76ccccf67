/* The events of a run's data objects (memsnap/objects.h): an array in stream order, names
 * interned in one arena per table. */
#include "memsnap/objects.h"

#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"

struct ms_object_table {
  ms_object_event *events;
  uint64_t count, capacity;
  uint64_t allocations, frees, statics;
  char **strings; /* copies of names and objects, freed with the table */
  uint64_t string_count, string_capacity;
};

ms_object_table *ms_object_table_new(void) { return calloc(1, sizeof(ms_object_table)); }

void ms_object_table_free(ms_object_table *table) {
  if (!table) return;
  for (uint64_t i = 0; i < table->string_count; i++)
    free(table->strings[i]);
  free(table->strings);
  free(table->events);
  free(table);
}

uint64_t ms_object_table_count(const ms_object_table *table) { return table ? table->count : 0; }

const ms_object_event *ms_object_table_get(const ms_object_table *table, uint64_t i) {
  return table && i < table->count ? &table->events[i] : NULL;
}

void ms_object_table_counts(const ms_object_table *table, uint64_t *allocations, uint64_t *frees,
                            uint64_t *statics) {
  *allocations = table ? table->allocations : 0;
  *frees = table ? table->frees : 0;
  *statics = table ? table->statics : 0;
}

/* A copy of `text` kept by the table (the previous one when equal: objects repeat). */
static int keep(ms_object_table *table, const char *text, const char **out) {
  *out = NULL;
  if (!text) return 0;
  if (table->string_count && !strcmp(table->strings[table->string_count - 1], text)) {
    *out = table->strings[table->string_count - 1];
    return 0;
  }
  if (table->string_count == table->string_capacity) {
    uint64_t capacity = table->string_capacity ? table->string_capacity * 2 : 64;
    char **grown = realloc(table->strings, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for object names");
    table->strings = grown;
    table->string_capacity = capacity;
  }
  char *copy = strdup(text);
  if (!copy) return ms_error_set(MS_ERR_NOMEM, "out of memory for object names");
  table->strings[table->string_count++] = copy;
  *out = copy;
  return 0;
}

int ms_object_table_add(ms_object_table *table, const ms_object_event *event) {
  if (table->count && event->index < table->events[table->count - 1].index)
    return ms_error_set(MS_ERR_ARG, "object event at access %llu after one at %llu",
                        (unsigned long long)event->index,
                        (unsigned long long)table->events[table->count - 1].index);
  if (event->kind > MS_OBJECT_STATIC)
    return ms_error_set(MS_ERR_ARG, "object event of unknown kind %u", event->kind);
  if (table->count == table->capacity) {
    uint64_t capacity = table->capacity ? table->capacity * 2 : 256;
    ms_object_event *grown = realloc(table->events, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for object events");
    table->events = grown;
    table->capacity = capacity;
  }
  ms_object_event copy = *event;
  int rc = keep(table, event->name, &copy.name);
  if (rc == 0) rc = keep(table, event->object, &copy.object);
  if (rc < 0) return rc;
  table->events[table->count++] = copy;
  if (event->freed)
    table->frees++;
  else if (event->kind == MS_OBJECT_STATIC)
    table->statics++;
  else
    table->allocations++;
  return 0;
}
