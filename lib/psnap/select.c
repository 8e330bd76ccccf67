/* Profile selections: which accesses of a stream a profile describes.
 *
 * Model: a selection is the text of a profile's `selection` line, applied per trace site
 * (its object, function and file:line in the stream's site table):
 *   all                            every access;
 *   executable PATH                accesses whose site lies in the program's own
 *                                  executable (the paper's scope: PEBIL instruments the
 *                                  application binary, not the loader or libc), or in a
 *                                  program it became by execve (a live capture follows
 *                                  env, taskset, shell scripts and shims into the program
 *                                  they start);
 *   function F line FILE:LINE ...  accesses of sites in these functions or at these lines
 *   object NAME ...                (FILE matched by its end, at a '/' boundary) or in these
 *                                  objects: NAME with a '/' matches an object's path by its
 *                                  end at a '/' boundary, else its base name up to a '.'
 *                                  (liblammps and liblammps.so match liblammps.so.0; libc
 *                                  matches libc.so.6, not libcurl.so.4): a program whose
 *                                  work is in a shared library (lmp in liblammps.so.0,
 *                                  python3, sqlite3's libsqlite3) is profiled by its library.
 * An object matches the executable if the paths are equal, or resolve (realpath) to the
 * same file, or, when either cannot be resolved (a trace read on another machine), have
 * the same base name. Any other object is kept if it is a program itself: an ELF file of
 * type ET_EXEC, or ET_DYN flagged DF_1_PIE (shared libraries and the loader are ET_DYN
 * without it; libc.so.6 has an interpreter but no PIE flag), so that a stream that followed
 * an execve keeps the program it reached; in a stream without exec, the executable is the
 * only program among its objects. One check per distinct object (cached by path); an
 * object that cannot be read is not a program. Accesses whose object is unknown (no site, a site
 * without an object: din and Lackey traces, code outside any file) are kept by `executable`: they
 * cannot be told apart. Decisions are cached per trace site, so the cost per access is
 * one array lookup.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"

enum { UNKNOWN = 0, KEPT = 1, DROPPED = 2 };

struct ms_psnap_filter {
  int all;
  char *executable;      /* as written in the selection */
  char *executable_real; /* realpath of it, or NULL */
  char *text;            /* a copy, cut into functions and lines */
  char **functions, **lines, **objects;
  int function_count, line_count, object_count;
  uint8_t *decided; /* per trace site */
  uint32_t capacity;
  struct program_check { /* objects checked by is_program */
    char *object;
    int program;
  } * checked;
  uint32_t checked_count, checked_capacity;
};

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int ends_with(const char *text, const char *suffix, size_t m) {
  size_t n = strlen(text);
  return n >= m && !strncmp(text + n - m, suffix, m) && (n == m || text[n - m - 1] == '/');
}

int ms_psnap_filter_new(const char *selection, ms_psnap_filter **out) {
  *out = NULL;
  ms_psnap_filter *f = calloc(1, sizeof *f);
  if (!f) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (!selection || !strcmp(selection, "all")) {
    f->all = 1;
    *out = f;
    return 0;
  }
  if (!strncmp(selection, "executable ", 11)) {
    if (!(f->executable = strdup(selection + 11))) goto nomem;
    char real[PATH_MAX];
    if (realpath(f->executable, real) && !(f->executable_real = strdup(real))) goto nomem;
    *out = f;
    return 0;
  }
  size_t words = strlen(selection) + 1;
  f->text = strdup(selection);
  f->functions = calloc(words, sizeof *f->functions);
  f->lines = calloc(words, sizeof *f->lines);
  f->objects = calloc(words, sizeof *f->objects);
  if (!f->text || !f->functions || !f->lines || !f->objects) goto nomem;
  char *save = NULL, *kind = strtok_r(f->text, " ", &save);
  while (kind) {
    char *value = strtok_r(NULL, " ", &save);
    if (!value) break;
    if (!strcmp(kind, "function"))
      f->functions[f->function_count++] = value;
    else if (!strcmp(kind, "line") && strrchr(value, ':'))
      f->lines[f->line_count++] = value;
    else if (!strcmp(kind, "object"))
      f->objects[f->object_count++] = value;
    else {
      int rc = ms_error_set(MS_ERR_FORMAT, "selection: unknown '%s %s'", kind, value);
      ms_psnap_filter_free(f); /* kind and value point into f->text */
      return rc;
    }
    kind = strtok_r(NULL, " ", &save);
  }
  if (kind || f->function_count + f->line_count + f->object_count == 0) {
    ms_psnap_filter_free(f);
    return ms_error_set(MS_ERR_FORMAT, "selection: expected all, executable PATH, or function F"
                                       " / line FILE:LINE / object NAME words");
  }
  *out = f;
  return 0;
nomem:
  ms_psnap_filter_free(f);
  return ms_error_set(MS_ERR_NOMEM, "out of memory");
}

void ms_psnap_filter_free(ms_psnap_filter *filter) {
  if (!filter) return;
  free(filter->executable);
  free(filter->executable_real);
  free(filter->text);
  free(filter->functions);
  free(filter->lines);
  free(filter->objects);
  free(filter->decided);
  for (uint32_t i = 0; i < filter->checked_count; i++)
    free(filter->checked[i].object);
  free(filter->checked);
  free(filter);
}

/* 1 if the ELF file at `path` is a program (ET_EXEC, or ET_DYN with DF_1_PIE in its
 * dynamic section), 0 if not or if it cannot be read. The path comes from a trace, which may
 * name anything: only a regular file is opened (a FIFO would block, a device be read). */
static int is_program_file(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  GElf_Ehdr header;
  int program = 0;
  if (elf && gelf_getehdr(elf, &header)) {
    program = header.e_type == ET_EXEC;
    Elf_Scn *scn = NULL;
    while (!program && header.e_type == ET_DYN && (scn = elf_nextscn(elf, scn))) {
      GElf_Shdr section;
      if (!gelf_getshdr(scn, &section) || section.sh_type != SHT_DYNAMIC) continue;
      Elf_Data *data = elf_getdata(scn, NULL);
      size_t entries = data && section.sh_entsize ? section.sh_size / section.sh_entsize : 0;
      for (size_t i = 0; i < entries; i++) {
        GElf_Dyn entry;
        if (gelf_getdyn(data, (int)i, &entry) && entry.d_tag == DT_FLAGS_1 &&
            (entry.d_un.d_val & DF_1_PIE))
          program = 1;
      }
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return program;
}

/* is_program_file, once per object path: 1, 0, or a negative status. */
static int is_program(ms_psnap_filter *f, const char *object) {
  for (uint32_t i = 0; i < f->checked_count; i++)
    if (!strcmp(f->checked[i].object, object)) return f->checked[i].program;
  if (f->checked_count == f->checked_capacity) {
    uint32_t capacity = f->checked_capacity ? 2 * f->checked_capacity : 16;
    struct program_check *grown = realloc(f->checked, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    f->checked = grown;
    f->checked_capacity = capacity;
  }
  char *copy = strdup(object);
  if (!copy) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  int program = is_program_file(object);
  f->checked[f->checked_count++] = (struct program_check){copy, program};
  return program;
}

static int in_executable(ms_psnap_filter *f, const char *object) {
  if (!object) return 1;
  if (!strcmp(object, f->executable)) return 1;
  char real[PATH_MAX];
  if (f->executable_real && realpath(object, real)) {
    if (!strcmp(real, f->executable_real)) return 1;
  } else if (!strcmp(base_name(object), base_name(f->executable))) {
    return 1;
  }
  return is_program(f, object);
}

int ms_psnap_object_matches(const char *object, const char *name) {
  size_t m = strlen(name);
  if (!object || !m) return 0;
  if (strchr(name, '/')) return ends_with(object, name, m);
  const char *base = base_name(object);
  return !strncmp(base, name, m) && (base[m] == '\0' || base[m] == '.');
}

static int decide(ms_psnap_filter *f, const ms_site *site) {
  if (f->executable) return in_executable(f, site ? site->object : NULL);
  int keep = 0;
  for (int i = 0; site && i < f->object_count; i++)
    keep |= ms_psnap_object_matches(site->object, f->objects[i]);
  for (int i = 0; site && i < f->function_count; i++)
    keep |= site->function && !strcmp(site->function, f->functions[i]);
  for (int i = 0; site && site->file && i < f->line_count; i++) {
    const char *colon = strrchr(f->lines[i], ':');
    keep |= site->line == strtoul(colon + 1, NULL, 10) &&
            ends_with(site->file, f->lines[i], (size_t)(colon - f->lines[i]));
  }
  return keep;
}

int ms_psnap_filter_keeps(ms_psnap_filter *filter, const ms_site_table *sites, uint32_t site) {
  if (filter->all) return 1;
  if (site == MS_SITE_NONE) return filter->executable != NULL;
  if (site >= filter->capacity) {
    uint32_t capacity = filter->capacity ? filter->capacity : 1024;
    while (capacity <= site)
      capacity *= 2;
    uint8_t *decided = realloc(filter->decided, capacity);
    if (!decided) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    memset(decided + filter->capacity, UNKNOWN, capacity - filter->capacity);
    filter->decided = decided;
    filter->capacity = capacity;
  }
  if (filter->decided[site] == UNKNOWN) {
    int keep = decide(filter, ms_site_table_get(sites, site));
    if (keep < 0) return keep;
    filter->decided[site] = keep ? KEPT : DROPPED;
  }
  return filter->decided[site] == KEPT;
}
