/* The second file of dwarf_main.c's program. */
long dwarf_sum(const long *values, int count) {
  long sum = 0;
  for (int i = 0; i < count; i++)
    sum += values[i];
  return sum;
}
