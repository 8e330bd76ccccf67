/* Source locations of sites through elfutils libdw (see ms_site_table_resolve in
 * memsnap/sites.h), for the capture's sites: libdw is opened offline on the object file,
 * and the run-time pc minus the object's load bias is the link-time address that its
 * symbols and line table use. The site table itself is lib/core/sites.c.
 */
#include "memsnap/sites.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsnap/error.h"

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
  for (uint32_t id = 0; id < ms_site_table_count(table); id++) {
    const ms_site *site = ms_site_table_get(table, id);
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
