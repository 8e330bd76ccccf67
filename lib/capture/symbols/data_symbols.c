/* The global and static variables of an ELF file (memsnap/objects.h): its STT_OBJECT
 * symbols with a size, from .symtab (or .dynsym when stripped), at their load address. */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../launcher/capture_internal.h"
#include "memsnap/error.h"

typedef struct data_symbol {
  uint64_t address, size;
  const char *name;
} data_symbol;

static int by_address(const void *a, const void *b) {
  const data_symbol *x = a, *y = b;
  if (x->address != y->address) return x->address < y->address ? -1 : 1;
  return strcmp(x->name, y->name);
}

int capture_data_symbols(const char *path, uint64_t bias,
                         int (*emit)(void *context, uint64_t address, uint64_t size,
                                     const char *name),
                         void *context) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0; /* a file gone since it was mapped: no symbols */
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  Elf_Scn *chosen = NULL, *scn = NULL;
  GElf_Shdr chosen_header = {0};
  while (elf && (scn = elf_nextscn(elf, scn))) {
    GElf_Shdr header;
    if (!gelf_getshdr(scn, &header)) continue;
    if (header.sh_type == SHT_SYMTAB || (header.sh_type == SHT_DYNSYM && !chosen)) {
      chosen = scn;
      chosen_header = header;
    }
  }
  data_symbol *symbols = NULL;
  size_t count = 0;
  int rc = 0;
  Elf_Data *data = chosen ? elf_getdata(chosen, NULL) : NULL;
  size_t total =
      data && chosen_header.sh_entsize ? chosen_header.sh_size / chosen_header.sh_entsize : 0;
  if (total && !(symbols = malloc(total * sizeof *symbols)))
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory for the symbols of %s", path);
  for (size_t i = 0; rc == 0 && i < total; i++) {
    GElf_Sym sym;
    if (!gelf_getsym(data, (int)i, &sym)) continue;
    if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT && GELF_ST_TYPE(sym.st_info) != STT_TLS) continue;
    if (GELF_ST_TYPE(sym.st_info) == STT_TLS || sym.st_size == 0 || sym.st_shndx == SHN_UNDEF ||
        sym.st_shndx == SHN_ABS || sym.st_shndx == SHN_COMMON)
      continue;
    const char *name = elf_strptr(elf, chosen_header.sh_link, sym.st_name);
    if (!name || !name[0]) continue;
    symbols[count++] = (data_symbol){sym.st_value + bias, sym.st_size, name};
  }
  if (count) qsort(symbols, count, sizeof *symbols, by_address);
  for (size_t i = 0; rc == 0 && i < count; i++)
    if (i == 0 || symbols[i].address != symbols[i - 1].address) /* aliases: the first name */
      rc = emit(context, symbols[i].address, symbols[i].size, symbols[i].name);
  free(symbols);
  if (elf) elf_end(elf);
  close(fd);
  return rc;
}
