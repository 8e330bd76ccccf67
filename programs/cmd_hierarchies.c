/* Placeholder until the hierarchies subcommand lands this session. */
#include "cli.h"
int cmd_hierarchies(int argc, char **argv) {
  (void)argc;
  cli_error(argv[0], "not built yet");
  return 1;
}
