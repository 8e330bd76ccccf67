/* Touches a little memory and exits with status 3. */
#include <stdlib.h>

static volatile int cells[64];

int main(void) {
  for (int i = 0; i < 64; i++)
    cells[i] = i;
  exit(cells[3]);
}
