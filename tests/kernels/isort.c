/* Integer sort of 2^m keys (argv[1] = m, default 16; argv[2] iterations, default 10),
 * shaped like NAS IS with buckets: keys in [0, 2^(m-5)) drawn as the sum of four uniform
 * numbers (create_seq); each iteration (rank) changes two keys, counts keys per bucket,
 * scatters the keys into their buckets, then within each bucket counts every key value
 * (key_buff1[key]++) and turns the counts into ranks by prefix sums. full_verify places
 * every key by its rank and checks that the result is sorted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_BITS 10

struct sort_state {
  long keys, max_key;
  int shift; /* key >> shift is the bucket */
  int *key_array, *key_buff1, *key_buff2;
  long *bucket_size, *bucket_ptrs;
};

static unsigned long long rng_state = 314159265ull;

static double randlc(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

__attribute__((noinline)) static void create_seq(struct sort_state *s) {
  double k = (double)s->max_key / 4.0;
  for (long i = 0; i < s->keys; i++) {
    double x = randlc() + randlc() + randlc() + randlc();
    s->key_array[i] = (int)(k * x);
  }
}

__attribute__((noinline)) static void rank(struct sort_state *s, int iteration) {
  long buckets = 1L << BUCKET_BITS;
  s->key_array[iteration] = iteration;
  s->key_array[iteration + 10] = (int)(s->max_key - iteration);

  memset(s->bucket_size, 0, buckets * sizeof *s->bucket_size);
  for (long i = 0; i < s->keys; i++)
    s->bucket_size[s->key_array[i] >> s->shift]++;
  s->bucket_ptrs[0] = 0;
  for (long b = 1; b < buckets; b++)
    s->bucket_ptrs[b] = s->bucket_ptrs[b - 1] + s->bucket_size[b - 1];
  for (long i = 0; i < s->keys; i++) {
    int key = s->key_array[i];
    s->key_buff2[s->bucket_ptrs[key >> s->shift]++] = key;
  }

  /* Bucket b's keys now end at bucket_ptrs[b]; count and rank them bucket by bucket. */
  long first = 0;
  for (long b = 0; b < buckets; b++) {
    long key_lo = b << s->shift, key_hi = (b + 1) << s->shift;
    for (long key = key_lo; key < key_hi; key++)
      s->key_buff1[key] = 0;
    for (long i = first; i < s->bucket_ptrs[b]; i++)
      s->key_buff1[s->key_buff2[i]]++;
    long running = first;
    for (long key = key_lo; key < key_hi; key++) {
      running += s->key_buff1[key];
      s->key_buff1[key] = (int)running;
    }
    first = s->bucket_ptrs[b];
  }
}

/* Every key goes to the slot before the rank of its value; the array must be sorted. */
__attribute__((noinline)) static long full_verify(struct sort_state *s) {
  for (long i = 0; i < s->keys; i++) {
    int key = s->key_buff2[i];
    s->key_array[--s->key_buff1[key]] = key;
  }
  long unsorted = 0;
  for (long i = 1; i < s->keys; i++)
    unsorted += s->key_array[i - 1] > s->key_array[i];
  return unsorted;
}

int main(int argc, char **argv) {
  int m = argc > 1 ? atoi(argv[1]) : 16, iterations = argc > 2 ? atoi(argv[2]) : 10;
  if (m < 15 || m > 30 || iterations < 1 || iterations > 10) return 2;
  struct sort_state s = {.keys = 1L << m, .max_key = 1L << (m - 5), .shift = m - 5 - BUCKET_BITS};
  s.key_array = malloc(s.keys * sizeof(int));
  s.key_buff1 = malloc(s.max_key * sizeof(int));
  s.key_buff2 = malloc(s.keys * sizeof(int));
  s.bucket_size = malloc((1L << BUCKET_BITS) * sizeof(long));
  s.bucket_ptrs = malloc((1L << BUCKET_BITS) * sizeof(long));
  if (!s.key_array || !s.key_buff1 || !s.key_buff2 || !s.bucket_size || !s.bucket_ptrs) return 1;
  create_seq(&s);
  long checksum = 0;
  for (int iteration = 1; iteration <= iterations; iteration++) {
    rank(&s, iteration);
    /* the rank of a few keys, as IS's partial verification reads them */
    for (long t = 1; t <= 5; t++) {
      int key = s.key_array[t * s.keys / 7];
      checksum += key > 0 ? s.key_buff1[key - 1] : 0;
    }
  }
  long unsorted = full_verify(&s);
  printf("isort %d %d: rank checksum %ld, first %d last %d\n", m, iterations, checksum,
         s.key_array[0], s.key_array[s.keys - 1]);
  if (unsorted) {
    fprintf(stderr, "isort: %ld keys out of order\n", unsorted);
    return 1;
  }
  free(s.key_array), free(s.key_buff1), free(s.key_buff2), free(s.bucket_size), free(s.bucket_ptrs);
  return 0;
}
