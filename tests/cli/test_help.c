/* memsnap's help texts are the one source of its reference (docs/cli.md's generated
 * blocks, the man pages, the bash completion): `memsnap help CMD` prints `memsnap CMD
 * --help`, an unknown command is a usage error, the global help names --version and help,
 * and every option a command's help names is one the command accepts. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;

#define memsnap(...) test_memsnap_in(dir, __VA_ARGS__)

TEST_SCRATCH_GROUP(dir)

static char *out(void) {
  char *text = test_read_in(dir, "out");
  assert_non_null(text);
  return text;
}

static char *err(void) {
  char *text = test_read_in(dir, "err");
  assert_non_null(text);
  return text;
}

/* The commands listed by `memsnap --help`, NULL-terminated; the caller frees. */
static char **commands(void) {
  assert_int_equal(memsnap("--help"), 0);
  char *help = out();
  char **names = calloc(64, sizeof *names);
  int count = 0;
  char *line = strstr(help, "\ncommands:\n");
  assert_non_null(line);
  for (line = strchr(line + 1, '\n') + 1; line[0] == ' ' && line[1] == ' ' && count < 63;) {
    char name[32];
    assert_int_equal(sscanf(line, " %31s", name), 1);
    names[count++] = strdup(name);
    line = strchr(line, '\n') + 1;
  }
  free(help);
  assert_true(count >= 17);
  return names;
}

static void free_names(char **names) {
  for (char **n = names; *n; n++)
    free(*n);
  free(names);
}

static void test_global_help(void **state) {
  (void)state;
  assert_int_equal(memsnap("--help"), 0);
  char *help = out();
  assert_non_null(strstr(help, "--version"));
  assert_non_null(strstr(help, "help COMMAND"));
  free(help);
  assert_int_equal(memsnap("help"), 0);
  char *again = out();
  assert_non_null(strstr(again, "\ncommands:\n"));
  free(again);
  assert_int_equal(memsnap("help --help"), 0);
  again = out();
  assert_non_null(strstr(again, "\ncommands:\n"));
  free(again);
  assert_int_equal(memsnap("--version"), 0);
  char *version = out();
  assert_int_equal(strncmp(version, "memsnap ", 8), 0);
  free(version);
}

static void test_help_command_is_command_help(void **state) {
  (void)state;
  char **names = commands();
  for (char **name = names; *name; name++) {
    assert_int_equal(memsnap("%s --help", *name), 0);
    char *direct = out();
    assert_int_equal(memsnap("help %s", *name), 0);
    char *through_help = out();
    char usage[64];
    snprintf(usage, sizeof usage, "usage: memsnap %s", *name);
    if (strncmp(direct, usage, strlen(usage)) != 0)
      fail_msg("memsnap %s --help starts: %.60s", *name, direct);
    assert_string_equal(through_help, direct);
    free(direct);
    free(through_help);
  }
  free_names(names);
}

static void test_help_unknown_command(void **state) {
  (void)state;
  assert_int_equal(memsnap("help bogus"), 2);
  char *message = err();
  assert_non_null(strstr(message, "bogus"));
  assert_ptr_equal(strchr(message, '\n'), message + strlen(message) - 1);
  free(message);
  char *nothing = out();
  assert_string_equal(nothing, "");
  free(nothing);
  assert_int_equal(memsnap("help sim dump"), 2);
}

/* Extra leading arguments under which a command parses its options: plot takes a kind
 * first, show parses by the kind of file it is given. */
static const char *const *fixtures_of(const char *command) {
  static const char *const none[] = {"", NULL};
  static const char *const plot[] = {"surface", "scores", NULL};
  static const char *const show[] = {"p.psnap", "s.sig", NULL};
  if (strcmp(command, "plot") == 0) return plot;
  if (strcmp(command, "show") == 0) return show;
  return none;
}

/* Every --option a command's help names is accepted by the command (with some fixture):
 * given without its value, it is either taken or "needs a value", never "unknown". */
static void test_documented_options_are_known(void **state) {
  (void)state;
  assert_int_equal(test_run("printf '0 1000 8\\n1 1008 8\\n0 2000 4\\n' > '%s/t.din'", dir), 0);
  assert_int_equal(memsnap("profile -q -o p.psnap t.din"), 0);
  assert_int_equal(memsnap("signature -o s.sig t.din"), 0);
  char **names = commands();
  int checked = 0;
  for (char **name = names; *name; name++) {
    assert_int_equal(memsnap("%s --help", *name), 0);
    char *help = out();
    for (char *p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
      if (!islower((unsigned char)p[2]) && !isdigit((unsigned char)p[2])) continue;
      char option[64];
      size_t n = 0;
      while (n < sizeof option - 1 && (isalnum((unsigned char)p[n + 2]) || p[n + 2] == '-'))
        option[n] = p[n + 2], n++;
      option[n] = '\0';
      int known = 0;
      for (const char *const *fixture = fixtures_of(*name); *fixture && !known; fixture++) {
        memsnap("%s %s --%s < /dev/null", *name, *fixture, option);
        char *message = err();
        known = strstr(message, "unknown option") == NULL;
        free(message);
      }
      if (!known) fail_msg("memsnap %s --help names --%s, which it does not accept", *name, option);
      checked++;
    }
    free(help);
  }
  free_names(names);
  assert_true(checked > 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_global_help),
      cmocka_unit_test(test_help_command_is_command_help),
      cmocka_unit_test(test_help_unknown_command),
      cmocka_unit_test(test_documented_options_are_known),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
