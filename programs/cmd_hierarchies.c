/* memsnap hierarchies [--json]
 *
 * Lists the built-in cache hierarchies (data/hierarchies.tsv, compiled in): name, each
 * level as size/line/associativity with its set count, and where the numbers come from;
 * then the named sets (evaluation: the first 46 rows).
 */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "memsnap/cache.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap hierarchies [--json]\n"
              "  --json  the catalog as JSON (each row says whether it is one of the 46\n"
              "          evaluation hierarchies, the set memsnap sim -H evaluation names)\n");
}

static uint64_t sets_of(const ms_cache_level_config *level) {
  return level->size / ((uint64_t)level->line_size * level->associativity);
}

static void print_text(void) {
  printf("%-20s %-22s %-22s %-22s %s\n", "name", "L1 (sets)", "L2 (sets)", "L3 (sets)", "source");
  for (int i = 0; i < ms_hierarchy_catalog_count(); i++) {
    const ms_hierarchy_entry *entry = ms_hierarchy_catalog_get(i);
    ms_hierarchy_config config;
    if (ms_hierarchy_parse(entry->name, &config) < 0)
      continue; /* the catalog test rules this out */
    printf("%-20s", entry->name);
    for (int l = 0; l < 3; l++) {
      char level[64] = "-";
      if (l < config.level_count)
        snprintf(level, sizeof level, "%" PRIu64 "/%" PRIu32 "/%" PRIu32 " (%" PRIu64 ")",
                 config.levels[l].size, config.levels[l].line_size, config.levels[l].associativity,
                 sets_of(&config.levels[l]));
      printf(" %-22s", level);
    }
    printf(" %s\n", entry->source);
  }
  printf("\nsets: evaluation = %s..%s (sim --hierarchy evaluation), every row above "
         "(sim --all-catalog, %d)\n",
         ms_hierarchy_catalog_get(0)->name,
         ms_hierarchy_catalog_get(MS_HIERARCHY_CATALOG_EVALUATION - 1)->name,
         ms_hierarchy_catalog_count());
}

static void print_json(void) {
  json_object *array = json_object_new_array();
  for (int i = 0; i < ms_hierarchy_catalog_count(); i++) {
    const ms_hierarchy_entry *entry = ms_hierarchy_catalog_get(i);
    ms_hierarchy_config config;
    if (ms_hierarchy_parse(entry->name, &config) < 0) continue;
    json_object *object = json_object_new_object();
    json_object_object_add(object, "name", json_object_new_string(entry->name));
    json_object_object_add(object, "spec", json_object_new_string(entry->spec));
    json_object_object_add(object, "source", json_object_new_string(entry->source));
    json_object_object_add(object, "evaluation",
                           json_object_new_boolean(i < MS_HIERARCHY_CATALOG_EVALUATION));
    json_object *levels = json_object_new_array();
    for (int l = 0; l < config.level_count; l++) {
      json_object *level = json_object_new_object();
      json_object_object_add(level, "size", json_object_new_uint64(config.levels[l].size));
      json_object_object_add(level, "line_size",
                             json_object_new_uint64(config.levels[l].line_size));
      json_object_object_add(level, "associativity",
                             json_object_new_uint64(config.levels[l].associativity));
      json_object_object_add(level, "sets", json_object_new_uint64(sets_of(&config.levels[l])));
      json_object_array_add(levels, level);
    }
    json_object_object_add(object, "levels", levels);
    json_object_array_add(array, object);
  }
  printf("%s\n", json_object_to_json_string_ext(array, JSON_C_TO_STRING_PRETTY |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(array);
}

int cmd_hierarchies(int argc, char **argv) {
  static const struct option options[] = {
      {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int json = 0;
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (optind < argc) {
    cli_error(argv[0], "unexpected argument %s", argv[optind]);
    return 2;
  }
  if (json)
    print_json();
  else
    print_text();
  return fflush(stdout) == 0 ? 0 : 1;
}
