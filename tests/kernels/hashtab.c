/* A chained hash table of malloc'ed nodes (argv[1] keys, default 20000; argv[2] lookup
 * rounds, default 4): the keys are inserted in pseudo-random order (each insert first
 * searches its chain, as a set does), then every round looks up as many keys again, half of
 * them present, walking the chain of key and next fields; at the end a quarter of the keys
 * are deleted and the table is walked bucket by bucket. The number of keys found must equal
 * the number present. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
  uint64_t key;
  long value;
  struct node *next;
};

struct table {
  size_t buckets; /* a power of two */
  struct node **head;
  size_t size;
};

static inline size_t hash(uint64_t key, size_t buckets) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (size_t)key & (buckets - 1);
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

__attribute__((noinline)) static struct node *lookup(const struct table *t, uint64_t key) {
  for (struct node *p = t->head[hash(key, t->buckets)]; p; p = p->next)
    if (p->key == key) return p;
  return NULL;
}

__attribute__((noinline)) static int insert(struct table *t, uint64_t key, long value) {
  struct node **head = &t->head[hash(key, t->buckets)];
  for (struct node *p = *head; p; p = p->next)
    if (p->key == key) {
      p->value = value;
      return 0;
    }
  struct node *fresh = malloc(sizeof *fresh);
  if (!fresh) return -1;
  fresh->key = key, fresh->value = value, fresh->next = *head;
  *head = fresh;
  t->size++;
  return 1;
}

__attribute__((noinline)) static int erase(struct table *t, uint64_t key) {
  for (struct node **link = &t->head[hash(key, t->buckets)]; *link; link = &(*link)->next)
    if ((*link)->key == key) {
      struct node *gone = *link;
      *link = gone->next;
      free(gone);
      t->size--;
      return 1;
    }
  return 0;
}

__attribute__((noinline)) static long walk(const struct table *t) {
  long sum = 0;
  for (size_t b = 0; b < t->buckets; b++)
    for (const struct node *p = t->head[b]; p; p = p->next)
      sum += p->value;
  return sum;
}

int main(int argc, char **argv) {
  long keys = argc > 1 ? atol(argv[1]) : 20000, rounds = argc > 2 ? atol(argv[2]) : 4;
  if (keys < 4 || rounds < 1) return 2;
  struct table t = {.buckets = 1};
  while (t.buckets < (size_t)keys / 2) /* load factor about 2, as a chain walk matters */
    t.buckets *= 2;
  t.head = calloc(t.buckets, sizeof *t.head);
  uint64_t *inserted = malloc(keys * sizeof *inserted);
  if (!t.head || !inserted) return 1;
  for (long i = 0; i < keys; i++) {
    inserted[i] = next_random() | 1; /* odd keys present, even keys absent */
    if (insert(&t, inserted[i], i) < 0) return 1;
  }
  long found = 0, expected = 0, value_sum = 0;
  for (long r = 0; r < rounds; r++)
    for (long i = 0; i < keys; i++) {
      uint64_t key = inserted[(i * 7919 + r) % keys];
      if (i & 1)
        key = next_random() & ~(uint64_t)1;
      else
        expected++;
      struct node *hit = lookup(&t, key);
      if (hit) found++, value_sum += hit->value;
    }
  long erased = 0;
  for (long i = 0; i < keys; i += 4)
    erased += erase(&t, inserted[i]);
  long remaining = walk(&t);
  printf("hashtab %ld %ld: %zu buckets, found %ld, value sum %ld, %zu left after %ld erased, sum "
         "%ld\n",
         keys, rounds, t.buckets, found, value_sum, t.size, erased, remaining);
  if (found != expected || t.size + erased != (size_t)keys) {
    fprintf(stderr, "hashtab: found %ld of %ld keys\n", found, expected);
    return 1;
  }
  for (size_t b = 0; b < t.buckets; b++)
    for (struct node *p = t.head[b], *next; p; p = next)
      next = p->next, free(p);
  free(t.head), free(inserted);
  return 0;
}
