/* Site table (see memsnap/sites.h).
 *
 * Model: a dense array of sites in order of addition, plus an open-addressing hash from pc
 * to the first id with that pc (load factor <= 1/2). Object paths repeat across sites, so
 * they are interned in a small list; other strings are copied per site. Source locations
 * come from elfutils libdw, opened offline on the object file: the run-time pc minus the
 * object's load bias is the link-time address that its symbols and line table use.
 */
#include "memsnap/sites.h"

#include <elfutils/libdwfl.h>
#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsnap/error.h"

struct ms_site_table {
  ms_site *sites;
  uint32_t count, capacity;
  int64_t *slots; /* hash of pc -> id, -1 empty */
  uint32_t slot_count;
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
  free(table->slots);
  free(table);
}

uint32_t ms_site_table_count(const ms_site_table *table) { return table->count; }

const ms_site *ms_site_table_get(const ms_site_table *table, uint32_t id) {
  return id < table->count ? &table->sites[id] : NULL;
}

static inline uint32_t hash_pc(uint64_t pc, uint32_t slot_count) {
  return (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 32) & (slot_count - 1);
}

static int rehash(ms_site_table *table, uint32_t slot_count) {
  int64_t *slots = malloc(slot_count * sizeof *slots);
  if (!slots) return ms_error_set(MS_ERR_NOMEM, "out of memory for the site table");
  for (uint32_t i = 0; i < slot_count; i++)
    slots[i] = -1;
  for (uint32_t id = 0; id < table->count; id++) {
    uint32_t s = hash_pc(table->sites[id].pc, slot_count);
    while (slots[s] >= 0) {
      if (table->sites[slots[s]].pc == table->sites[id].pc) goto next; /* keep the first */
      s = (s + 1) & (slot_count - 1);
    }
    slots[s] = id;
  next:;
  }
  free(table->slots);
  table->slots = slots;
  table->slot_count = slot_count;
  return MS_OK;
}

int64_t ms_site_table_find(const ms_site_table *table, uint64_t pc) {
  if (!table->slot_count) return -1;
  for (uint32_t s = hash_pc(pc, table->slot_count);; s = (s + 1) & (table->slot_count - 1)) {
    int64_t id = table->slots[s];
    if (id < 0) return -1;
    if (table->sites[id].pc == pc) return id;
  }
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
  uint32_t id = table->count++;
  if (2 * table->count > table->slot_count) {
    int rc = rehash(table, table->slot_count ? table->slot_count * 2 : 128);
    if (rc < 0) {
      table->count--;
      return rc;
    }
  } else {
    uint32_t s = hash_pc(pc, table->slot_count);
    while (table->slots[s] >= 0) {
      if (table->sites[table->slots[s]].pc == pc) return id; /* an earlier id keeps the slot */
      s = (s + 1) & (table->slot_count - 1);
    }
    table->slots[s] = id;
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

/* dwfl_module_addrname scans the whole symbol table on every call: 0.54 ms per lookup in
 * libc once libc6-dbg's symbols are loaded, 0.76 s for the 1396 libc sites of a small
 * kernel (measured), more than the capture itself. So the function symbols are sorted
 * once per object and bisected; addresses outside every function symbol (PLT stubs) still
 * go to dwfl_module_addrname. */
typedef struct function_symbol {
  Dwarf_Addr start, end;
  const char *name;
  int rank; /* among aliases at one address: global 0, weak 1, local 2 */
} function_symbol;

static int compare_function_symbols(const void *a, const void *b) {
  const function_symbol *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->rank - y->rank;
}

static function_symbol *sorted_function_symbols(Dwfl_Module *module, size_t *count) {
  *count = 0;
  int total = dwfl_module_getsymtab(module);
  if (total <= 0) return NULL;
  function_symbol *symbols = malloc((size_t)total * sizeof *symbols);
  if (!symbols) return NULL;
  size_t n = 0;
  for (int i = 0; i < total; i++) {
    GElf_Sym sym;
    GElf_Addr address;
    const char *name = dwfl_module_getsym_info(module, i, &sym, &address, NULL, NULL, NULL);
    int type = GELF_ST_TYPE(sym.st_info);
    if (!name || !*name || sym.st_shndx == SHN_UNDEF || sym.st_size == 0 ||
        (type != STT_FUNC && type != STT_GNU_IFUNC))
      continue;
    int bind = GELF_ST_BIND(sym.st_info);
    symbols[n++] = (function_symbol){address, address + sym.st_size, name,
                                     bind == STB_GLOBAL ? 0
                                     : bind == STB_WEAK ? 1
                                                        : 2};
  }
  qsort(symbols, n, sizeof *symbols, compare_function_symbols);
  *count = n;
  return symbols;
}

/* The best-ranked symbol with the greatest start <= address that contains it. */
static const char *function_at(const function_symbol *symbols, size_t count, Dwarf_Addr address) {
  size_t low = 0, high = count; /* first index whose start > address */
  while (low < high) {
    size_t mid = low + (high - low) / 2;
    if (symbols[mid].start <= address)
      low = mid + 1;
    else
      high = mid;
  }
  for (size_t i = low; i-- > 0;) {
    if (symbols[i].start + (1u << 20) < address) break; /* no function is that long */
    if (address < symbols[i].end) {
      while (i > 0 && symbols[i - 1].start == symbols[i].start && address < symbols[i - 1].end)
        i--; /* best rank first among aliases */
      return symbols[i].name;
    }
  }
  return NULL;
}

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* e_type of an ELF file, ET_NONE if unreadable. Read apart from libdwfl, whose module
 * state dwfl_module_getelf would change. */
static int elf_type(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ET_NONE;
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  GElf_Ehdr header;
  int type = elf && gelf_getehdr(elf, &header) ? header.e_type : ET_NONE;
  if (elf) elf_end(elf);
  close(fd);
  return type;
}

int ms_site_table_resolve(ms_site_table *table, const char *object_path, uint64_t load_bias) {
  Dwfl *dwfl = dwfl_begin(&offline_callbacks);
  if (!dwfl) return ms_error_set(MS_ERR_NOMEM, "libdw: %s", dwfl_errmsg(-1));
  Dwfl_Module *module = dwfl_report_offline(dwfl, "", object_path, -1);
  if (!module) {
    int rc = ms_error_set(MS_ERR_IO, "%s: cannot read symbols: %s", object_path, dwfl_errmsg(-1));
    dwfl_end(dwfl);
    return rc;
  }
  dwfl_report_end(dwfl, NULL, NULL);
  Dwarf_Addr module_base = 0;
  dwfl_module_info(module, NULL, &module_base, NULL, NULL, NULL, NULL, NULL);
  /* An executable that is not position-independent (ET_EXEC) keeps its link addresses in
   * the offline module: there, pc - load_bias is already the module's address. */
  if (elf_type(object_path) == ET_EXEC) module_base = 0;
  size_t symbol_count = 0;
  function_symbol *symbols = NULL;
  int resolved = 0;
  for (uint32_t id = 0; id < table->count; id++) {
    ms_site *site = &table->sites[id];
    if (!site->object || strcmp(site->object, object_path) != 0) continue;
    if (site->function && site->line) continue;
    if (!symbols) symbols = sorted_function_symbols(module, &symbol_count);
    Dwarf_Addr address = site->pc - load_bias + module_base;
    const char *function = function_at(symbols, symbol_count, address);
    if (!function) function = dwfl_module_addrname(module, address);
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *line_info = dwfl_module_getsrc(module, address);
    if (line_info) file = dwfl_lineinfo(line_info, NULL, &line, NULL, NULL, NULL);
    if (!function && !file) continue;
    if (ms_site_table_set_location(table, id, function ? function : site->function,
                                   file ? file : site->file, line > 0 ? (uint32_t)line : 0) < 0)
      break;
    resolved++;
  }
  free(symbols);
  dwfl_end(dwfl);
  return resolved;
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
