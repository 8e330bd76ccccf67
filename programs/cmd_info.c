/* Placeholder until the info subcommand lands this session. */
#include "cli.h"
int cmd_info(int argc, char **argv) {
  (void)argc;
  cli_error(argv[0], "not built yet");
  return 1;
}
