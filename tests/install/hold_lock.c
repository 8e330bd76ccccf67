/* hold_lock FILE SECONDS: takes FILE's write lock the way apt and dpkg do (fcntl, not
 * flock, which they do not see), prints "held" once it has it, holds it SECONDS, exits. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hold_lock FILE SECONDS\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CREAT, 0640);
  struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fd < 0 || fcntl(fd, F_SETLKW, &lock) != 0) {
    perror(argv[1]);
    return 1;
  }
  printf("held\n");
  fflush(stdout);
  sleep((unsigned)atoi(argv[2]));
  return 0;
}
