/* Counts byte values of a buffer into 256 bins. */
void histogram(const unsigned char *data, long n, long *bins);
