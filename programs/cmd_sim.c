/* Placeholder until the sim subcommand lands this session. */
#include "cli.h"
int cmd_sim(int argc, char **argv) {
  (void)argc;
  cli_error(argv[0], "not built yet");
  return 1;
}
