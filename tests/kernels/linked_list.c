/* Walks a singly linked list whose nodes are shuffled in memory (argv[1] nodes, default
 * 50000), 4 times. */
#include <stdio.h>
#include <stdlib.h>

struct node {
  struct node *next;
  long value;
};

__attribute__((noinline)) static long walk(const struct node *head) {
  long sum = 0;
  for (const struct node *p = head; p; p = p->next)
    sum += p->value;
  return sum;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 50000;
  struct node *nodes = malloc(n * sizeof *nodes);
  long *order = malloc(n * sizeof *order);
  if (!nodes || !order) return 1;
  for (long i = 0; i < n; i++)
    order[i] = i;
  unsigned x = 777;
  for (long i = n - 1; i > 0; i--) {
    x = x * 1103515245u + 12345u;
    long j = (long)((x >> 8) % (unsigned)(i + 1));
    long t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (long i = 0; i < n; i++) {
    nodes[order[i]].value = i;
    nodes[order[i]].next = i + 1 < n ? &nodes[order[i + 1]] : NULL;
  }
  long sum = 0;
  for (int r = 0; r < 4; r++)
    sum += walk(&nodes[order[0]]);
  printf("%ld\n", sum);
  free(nodes), free(order);
  return 0;
}
