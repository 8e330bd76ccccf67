/* memsnap-cc, memsnap-c++: clang with memsnap's compiler-instrumented capture.
 *
 *   memsnap-cc [clang arguments...]    (memsnap-c++: clang++; the name picks the driver)
 *
 * Instruments every load and store: by default with memsnap's LLVM pass plugin,
 * memsnap-pass.so (-fpass-plugin, see --memsnap-mode below), else with
 * -fsanitize-coverage=func,trace-loads,trace-stores (clang 14 emits the load and store
 * callbacks only with a coverage level: `func` alone adds no code of its own). Adds
 * -include memsnap-rt.h (found beside the runtime: declares the callbacks so that callers
 * keep their registers across them; not for preprocessing only), -gdwarf-aranges (memsnap resolves
 * sites through libdw, which finds a compilation unit by its address ranges),
 * -fdebug-default-version=4 (see below),
 * -fno-sanitize-link-runtime (else clang links its UBSan runtime to supply default callbacks, with
 * its own fatal-signal handlers), -mprefer-vector-width=128 after the caller's arguments (see
 * below), -Wl,-z,now when the command links (see below) and, when it
 * links an executable, memsnap's runtime libmemsnap-rt.a and -lpthread. Every other argument passes
 * through unchanged, so that `CC=memsnap-cc ./configure && make` works. The runtime is looked up in
 * $MEMSNAP_RT_LIB, then beside this program as installed (<bin>/../lib*), then in the build tree.
 *
 *   --memsnap-report=FILE   (taken out of the arguments) loads memsnap's LLVM pass plugin,
 *                           memsnap-pass.so (-fpass-plugin; looked up as the runtime is, in
 *                           $MEMSNAP_PASS_PLUGIN first), which appends to FILE, for each
 *                           translation unit, how each load and store in a loop could be
 *                           instrumented and why (lib/capture/llvm/memsnap-pass.cpp, docs/rt.md);
 *                           FILE reaches it as $MEMSNAP_REPORT.
 *   --memsnap-mode=MODE     (taken out too) how accesses are recorded: `inline` (records
 *                           appended inline by memsnap-pass.so, a call only on the runtime's
 *                           slow path; $MEMSNAP_INLINE=1 tells the plugin) or `callbacks`
 *                           (SanitizerCoverage's call per access). Both give the same
 *                           records. The default is inline when the plugin is found and the
 *                           driver is the default one (the plugin is built for LLVM 14: a
 *                           $MEMSNAP_CLANG of another version could not load it), else
 *                           callbacks.
 * $MEMSNAP_CLANG / $MEMSNAP_CLANGXX name the compiler drivers (default clang, clang++).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const coverage = "-fsanitize-coverage=func,trace-loads,trace-stores";

/* Options of clang's driver whose value is the next argument. */
static int takes_value(const char *arg) {
  static const char *const options[] = {"-o",       "-I",          "-L",
                                        "-l",       "-D",          "-U",
                                        "-include", "-imacros",    "-x",
                                        "-MF",      "-MT",         "-MQ",
                                        "-isystem", "-idirafter",  "-iquote",
                                        "-iprefix", "-isysroot",   "-Xlinker",
                                        "-Xclang",  "-Xassembler", "-Xpreprocessor",
                                        "-target",  "-arch",       "-u",
                                        "-z",       "--sysroot",   "-T",
                                        "-mllvm",   "-aux-info",   NULL};
  for (int i = 0; options[i]; i++)
    if (strcmp(arg, options[i]) == 0) return 1;
  return 0;
}

static int exists(const char *path) { return access(path, R_OK) == 0; }

/* A file of memsnap's: $`variable`, else `name` beside this program as installed
 * (<bin>/../lib*), else `built` (the build tree's), else NULL. */
static const char *find_installed(const char *variable, const char *name, const char *built,
                                  char *buffer, size_t size) {
  const char *given = getenv(variable);
  if (given && *given) return given;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      static const char *const relative[] = {"../" MEMSNAP_RT_INSTALL_LIBDIR, "../lib", "../lib64",
                                             NULL};
      for (int i = 0; relative[i]; i++) {
        int m = snprintf(buffer, size, "%s/%s/%s", self, relative[i], name);
        if (m > 0 && (size_t)m < size && exists(buffer)) return buffer;
      }
    }
  }
  if (built && exists(built)) return built;
  return NULL;
}

#ifndef MEMSNAP_PASS_BUILD_LIB
#define MEMSNAP_PASS_BUILD_LIB NULL /* built without LLVM 14 */
#endif

int main(int argc, char **argv) {
  const char *name = strrchr(argv[0], '/');
  name = name ? name + 1 : argv[0];
  int cxx = strstr(name, "++") != NULL || strstr(name, "cxx") != NULL;
  const char *driver = getenv(cxx ? "MEMSNAP_CLANGXX" : "MEMSNAP_CLANG");
  if (!driver || !*driver) driver = cxx ? "clang++" : "clang";

  int links = 1, inputs = 0, shared = 0, preprocess = 0;
  const char *report = NULL, *mode = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--memsnap-report=", 17) == 0)
      report = a + 17;
    else if (strncmp(a, "--memsnap-mode=", 15) == 0)
      mode = a + 15;
    else if (strcmp(a, "-c") == 0 || strcmp(a, "-S") == 0 || strcmp(a, "-E") == 0 ||
             strcmp(a, "-M") == 0 || strcmp(a, "-MM") == 0 || strcmp(a, "-fsyntax-only") == 0 ||
             strcmp(a, "--version") == 0 || strncmp(a, "-print", 6) == 0 ||
             strcmp(a, "-###") == 0) {
      links = 0;
      preprocess |= strcmp(a, "-E") == 0 || strcmp(a, "-M") == 0 || strcmp(a, "-MM") == 0;
    } else if (strcmp(a, "-shared") == 0 || strcmp(a, "-r") == 0)
      shared = 1;
    else if (takes_value(a))
      i++;
    else if (a[0] != '-' || strcmp(a, "-") == 0)
      inputs++;
  }
  char buffer[PATH_MAX];
  const char *runtime = NULL;
  /* a shared library's callbacks bind to the executable's runtime: only executables get one */
  int add_runtime = links && inputs > 0 && !shared;
  runtime = find_installed("MEMSNAP_RT_LIB", "libmemsnap-rt.a", MEMSNAP_RT_BUILD_LIB, buffer,
                           sizeof buffer);
  /* memsnap-rt.h beside the runtime; without it the calls are ordinary ones (slower, and as
   * correct: the callbacks preserve every register either way) */
  char header[PATH_MAX + 16];
  int include = 0;
  if (runtime && !preprocess) {
    const char *slash = strrchr(runtime, '/');
    int dir = slash ? (int)(slash - runtime) : 1;
    int m = snprintf(header, sizeof header, "%.*s/memsnap-rt.h", dir, slash ? runtime : ".");
    include = m > 0 && (size_t)m < sizeof header && exists(header);
  }
  if (add_runtime) {
    if (!runtime) {
      fprintf(stderr, "%s: cannot find libmemsnap-rt.a (set MEMSNAP_RT_LIB)\n", name);
      return 1;
    }
  }
  if (report && !*report) {
    fprintf(stderr, "%s: --memsnap-report needs a file name\n", name);
    return 1;
  }
  char plugin_buffer[PATH_MAX + 16];
  const char *plugin = find_installed("MEMSNAP_PASS_PLUGIN", "memsnap-pass.so",
                                      MEMSNAP_PASS_BUILD_LIB, plugin_buffer, sizeof plugin_buffer);
  const char *clang = getenv("MEMSNAP_CLANG"), *clangxx = getenv("MEMSNAP_CLANGXX");
  if (!mode) mode = plugin && !(clang && *clang) && !(clangxx && *clangxx) ? "inline" : "callbacks";
  int inline_records = strcmp(mode, "inline") == 0;
  if (!inline_records && strcmp(mode, "callbacks") != 0) {
    fprintf(stderr, "%s: --memsnap-mode is callbacks or inline, not '%s'\n", name, mode);
    return 1;
  }
  if (!report && !inline_records) plugin = NULL;
  if ((report || inline_records) && !plugin) {
    fprintf(stderr, "%s: cannot find memsnap-pass.so (set MEMSNAP_PASS_PLUGIN; it needs LLVM 14)\n",
            name);
    return 1;
  }
  if (plugin && ((report && setenv("MEMSNAP_REPORT", report, 1) != 0) ||
                 setenv("MEMSNAP_INLINE", inline_records ? "1" : "0", 1) != 0)) {
    perror(name);
    return 1;
  }
  char plugin_option[PATH_MAX + 32];
  if (plugin) snprintf(plugin_option, sizeof plugin_option, "-fpass-plugin=%s", plugin);
  char **args = calloc((size_t)argc + 13, sizeof *args);
  if (!args) {
    fprintf(stderr, "%s: out of memory\n", name);
    return 1;
  }
  int n = 0;
  args[n++] = (char *)driver;
  if (!inline_records) args[n++] = (char *)coverage;
  args[n++] = (char *)"-gdwarf-aranges";
  args[n++] = (char *)"-fno-sanitize-link-runtime";
  /* DWARF 4 for -g, -g2, -g3, -gline-tables-only...: Valgrind 3.19 gives up on clang 14's
   * DWARF 5 of a program of several files ("unhandled dwarf2 abbrev form code 0x25"), and
   * with it `memsnap record --via=valgrind` of a memsnap-cc build. Only the default: an
   * explicit -gdwarf-N of the caller's wins, and no -g still means no debug information. */
  args[n++] = (char *)"-fdebug-default-version=4";
  if (include) { /* also inline: for code that calls the callbacks itself */
    args[n++] = (char *)"-include";
    args[n++] = header;
  }
  if (plugin) args[n++] = plugin_option;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--memsnap-report=", 17) != 0 &&
        strncmp(argv[i], "--memsnap-mode=", 15) != 0)
      args[n++] = argv[i];
  /* SanitizerCoverage calls back for loads and stores of 1, 2, 4, 8 and 16 bytes only: a
   * loop vectorized into 32- or 64-byte accesses (-mavx2, -march=native on an AVX-512 CPU)
   * would vanish from the trace (stream_add at -O3 -march=native: none of its accesses
   * recorded). Vectors of at most 16 bytes keep every byte in it, in the same order of
   * lines; last, so that a -mprefer-vector-width of the caller's does not undo it. */
  if (!preprocess) args[n++] = (char *)"-mprefer-vector-width=128";
  /* Binding at load time: a shared object's calls to the callbacks go through its PLT, and
   * lazy binding's resolver preserves the argument registers but not r10 and r11, which a
   * caller compiled with memsnap-rt.h keeps live across the call. */
  if (links && inputs > 0) args[n++] = (char *)"-Wl,-z,now";
  if (add_runtime) {
    args[n++] = (char *)runtime;
    args[n++] = (char *)"-lpthread";
  }
  args[n] = NULL;
  execvp(driver, args);
  fprintf(stderr, "%s: cannot run %s: ", name, driver);
  perror(NULL);
  free(args);
  return 127;
}
