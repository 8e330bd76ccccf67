/* Closes every file descriptor from 3 to 1023 first, as daemons and some launchers do
 * (memsnap's capture channel among them), then does real work (argv[1] stores). With a
 * file argv[2], that file then takes every number from 900 to 1023 (dup2), those the
 * runtime's channel had: what the runtime writes there would land in it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long data[100000];

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000;
  if (n > 100000) n = 100000;
  for (int fd = 3; fd < 1024; fd++)
    close(fd);
  if (argc > 2) {
    int fd = open(argv[2], O_RDWR);
    if (fd < 0) return 2;
    for (int high = 900; high < 1024; high++)
      if (dup2(fd, high) < 0) return 3;
  }
  for (long i = 0; i < n; i++)
    ((volatile long *)data)[i] = i;
  printf("%ld\n", data[n - 1]);
  return 0;
}
