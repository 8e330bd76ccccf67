# A deterministic Lackey trace (valgrind --tool=lackey --trace-mem=yes format) of a small
# program with the kinds of code memsnap's commands tell apart: a dense matrix-vector
# product, a triangular nest, a hash-chain walk with LCG keys and a read-modify-write.
# About 21k accesses. Used by test_outputs.sh, whose expected outputs depend on it.
# Constants are decimal (mawk reads no hex literals) and every product stays below 2^53.
function access(kind, pc, addr, size) {
  printf "I  %08x,4\n", pc
  printf " %s %08x,%d\n", kind, addr, size
}
BEGIN {
  a = 268435456; x = 269484032; y = 269549568; b = 270532608
  nodes = 272629760; heads = 274726912; count = 275775488
  n = 64
  for (i = 0; i < n; i++) {
    for (j = 0; j < n; j++) {
      access("L", 4198400, a + (i * n + j) * 8, 8)
      access("L", 4198408, x + j * 8, 8)
    }
    access("S", 4198416, y + i * 8, 8)
  }
  m = 48
  for (i = 0; i < m; i++)
    for (j = 0; j <= i; j++)
      access("L", 4202496, b + (i * m + j) * 8, 8)
  seed = 12345
  for (k = 0; k < 1500; k++) {
    seed = (seed * 75 + 74) % 65537
    bucket = seed % 512
    access("L", 4206592, heads + bucket * 8, 8)
    node = bucket
    for (step = 0; step < 3; step++) {
      access("L", 4206608, nodes + node * 32, 8)
      access("L", 4206616, nodes + node * 32 + 8, 8)
      node = (node * 7 + 13) % 1024
    }
    access("M", 4206624, count + (seed % 256) * 4, 4)
  }
}
