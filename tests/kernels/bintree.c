/* An unbalanced binary search tree of malloc'ed nodes (argv[1] keys, default 20000; argv[2]
 * lookup rounds, default 4): keys inserted in pseudo-random order, then every round looks
 * up as many keys (half present, half absent) by descending from the root, and finally an
 * in-order traversal sums the values, which must come out in ascending key order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
  uint64_t key;
  long value;
  struct node *left, *right;
};

static uint64_t rng_state = 2463534242ull;

static uint64_t next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

__attribute__((noinline)) static int insert(struct node **root, uint64_t key, long value) {
  struct node **link = root;
  while (*link) {
    if (key == (*link)->key) {
      (*link)->value = value;
      return 0;
    }
    link = key < (*link)->key ? &(*link)->left : &(*link)->right;
  }
  struct node *fresh = malloc(sizeof *fresh);
  if (!fresh) return -1;
  fresh->key = key, fresh->value = value, fresh->left = fresh->right = NULL;
  *link = fresh;
  return 1;
}

__attribute__((noinline)) static const struct node *lookup(const struct node *p, uint64_t key) {
  while (p && p->key != key)
    p = key < p->key ? p->left : p->right;
  return p;
}

/* In order, with an explicit stack (depth of a random tree stays near 3 log2 n). */
__attribute__((noinline)) static long in_order(const struct node *root, const struct node **stack,
                                               long *out_of_order) {
  long depth = 0, sum = 0;
  uint64_t previous = 0;
  const struct node *p = root;
  while (p || depth) {
    while (p) {
      stack[depth++] = p;
      p = p->left;
    }
    p = stack[--depth];
    *out_of_order += p->key < previous;
    previous = p->key;
    sum += p->value;
    p = p->right;
  }
  return sum;
}

static void destroy(struct node *p) {
  while (p) {
    destroy(p->left);
    struct node *right = p->right;
    free(p);
    p = right;
  }
}

int main(int argc, char **argv) {
  long keys = argc > 1 ? atol(argv[1]) : 20000, rounds = argc > 2 ? atol(argv[2]) : 4;
  if (keys < 4 || rounds < 1) return 2;
  uint64_t *inserted = malloc(keys * sizeof *inserted);
  const struct node **stack = malloc(keys * sizeof *stack);
  if (!inserted || !stack) return 1;
  struct node *root = NULL;
  long size = 0;
  for (long i = 0; i < keys; i++) {
    inserted[i] = next_random() | 1; /* odd keys present, even keys absent */
    int added = insert(&root, inserted[i], i);
    if (added < 0) return 1;
    size += added;
  }
  long found = 0, expected = 0, value_sum = 0;
  for (long r = 0; r < rounds; r++)
    for (long i = 0; i < keys; i++) {
      uint64_t key = inserted[(i * 7919 + r) % keys];
      if (i & 1)
        key = next_random() & ~(uint64_t)1;
      else
        expected++;
      const struct node *hit = lookup(root, key);
      if (hit) found++, value_sum += hit->value;
    }
  long out_of_order = 0, sum = in_order(root, stack, &out_of_order);
  printf("bintree %ld %ld: %ld nodes, found %ld, value sum %ld, in-order sum %ld\n", keys, rounds,
         size, found, value_sum, sum);
  if (found != expected || out_of_order) {
    fprintf(stderr, "bintree: found %ld of %ld keys, %ld out of order\n", found, expected,
            out_of_order);
    return 1;
  }
  destroy(root);
  free(inserted), free(stack);
  return 0;
}
