/* 3-D complex FFT of an n x n x n grid (argv[1], a power of two, default 16; argv[2]
 * iterations, default 2), shaped like NAS FT: a forward 3-D transform of the initial field,
 * then each iteration evolves the spectrum (a pointwise factor per wave number) and
 * transforms it back. A 3-D transform runs radix-2 iterative 1-D FFTs (bit-reversal
 * permutation, then log2 n butterfly passes with a precomputed twiddle table) along x in
 * place on the contiguous lines, and along y and z by copying each line to a scratch buffer
 * and back (FT's cffts2 / cffts3). The forward transform followed by the inverse must give
 * the input back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  double re, im;
} complex_t;

struct fft_plan {
  int n, log2n;
  complex_t *twiddle; /* exp(-2 pi i m / n), m < n / 2 */
  int *reversed;      /* bit-reversed index of each position */
  complex_t *line;    /* scratch line for the strided directions */
};

__attribute__((noinline)) static void fft_init(struct fft_plan *plan, int n) {
  plan->n = n;
  plan->log2n = 0;
  while ((1 << plan->log2n) < n)
    plan->log2n++;
  for (int m = 0; m < n / 2; m++) {
    double angle = -2.0 * 3.14159265358979323846 * m / n;
    plan->twiddle[m].re = cos(angle);
    plan->twiddle[m].im = sin(angle);
  }
  for (int m = 0; m < n; m++) {
    int r = 0;
    for (int bit = 0; bit < plan->log2n; bit++)
      r |= ((m >> bit) & 1) << (plan->log2n - 1 - bit);
    plan->reversed[m] = r;
  }
}

/* In-place radix-2 FFT of one contiguous line; sign -1 forward, +1 inverse (unscaled). */
__attribute__((noinline)) static void fft_line(const struct fft_plan *plan, complex_t *v,
                                               int sign) {
  int n = plan->n;
  for (int m = 0; m < n; m++) {
    int r = plan->reversed[m];
    if (r > m) {
      complex_t t = v[m];
      v[m] = v[r];
      v[r] = t;
    }
  }
  for (int half = 1, step = n / 2; half < n; half *= 2, step /= 2)
    for (int start = 0; start < n; start += 2 * half)
      for (int m = 0; m < half; m++) {
        complex_t w = plan->twiddle[m * step];
        w.im *= sign;
        complex_t *top = &v[start + m], *bottom = &v[start + m + half];
        double re = w.re * bottom->re - w.im * bottom->im;
        double im = w.re * bottom->im + w.im * bottom->re;
        bottom->re = top->re - re, bottom->im = top->im - im;
        top->re += re, top->im += im;
      }
}

__attribute__((noinline)) static void cffts1(const struct fft_plan *plan, complex_t *x, int sign) {
  long n = plan->n;
  for (long line = 0; line < n * n; line++)
    fft_line(plan, x + line * n, sign);
}

__attribute__((noinline)) static void cffts2(const struct fft_plan *plan, complex_t *x, int sign) {
  long n = plan->n;
  for (long k = 0; k < n; k++)
    for (long i = 0; i < n; i++) {
      complex_t *base = x + k * n * n + i;
      for (long j = 0; j < n; j++)
        plan->line[j] = base[j * n];
      fft_line(plan, plan->line, sign);
      for (long j = 0; j < n; j++)
        base[j * n] = plan->line[j];
    }
}

__attribute__((noinline)) static void cffts3(const struct fft_plan *plan, complex_t *x, int sign) {
  long n = plan->n;
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) {
      complex_t *base = x + j * n + i;
      for (long k = 0; k < n; k++)
        plan->line[k] = base[k * n * n];
      fft_line(plan, plan->line, sign);
      for (long k = 0; k < n; k++)
        base[k * n * n] = plan->line[k];
    }
}

static void fft3d(const struct fft_plan *plan, complex_t *x, int sign) {
  if (sign < 0) {
    cffts1(plan, x, sign), cffts2(plan, x, sign), cffts3(plan, x, sign);
  } else {
    cffts3(plan, x, sign), cffts2(plan, x, sign), cffts1(plan, x, sign);
  }
}

/* A reproducible pseudo-random field (FT's compute_initial_conditions uses randlc). */
__attribute__((noinline)) static void initial_conditions(complex_t *x, long points) {
  unsigned long long state = 314159265;
  for (long p = 0; p < points; p++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x[p].re = (double)(state >> 11) / 9007199254740992.0;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x[p].im = (double)(state >> 11) / 9007199254740992.0;
  }
}

/* Decay factor of each wave number, exp(-alpha |k|^2) as FT's compute_indexmap. */
__attribute__((noinline)) static void compute_indexmap(double *factor, int n) {
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        int kk = k < n / 2 ? k : k - n, jj = j < n / 2 ? j : j - n, ii = i < n / 2 ? i : i - n;
        factor[((long)k * n + j) * n + i] = exp(-1e-4 * (ii * ii + jj * jj + kk * kk));
      }
}

__attribute__((noinline)) static void evolve(const complex_t *spectrum, complex_t *out,
                                             const double *factor, int t, long points) {
  for (long p = 0; p < points; p++) {
    double f = pow(factor[p], t);
    out[p].re = spectrum[p].re * f;
    out[p].im = spectrum[p].im * f;
  }
}

__attribute__((noinline)) static complex_t checksum(const complex_t *x, long points) {
  complex_t sum = {0.0, 0.0};
  for (long q = 1; q <= 1024; q++) {
    long p = (q * 5 * 17 * 31) % points;
    sum.re += x[p].re, sum.im += x[p].im;
  }
  return sum;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 16, iterations = argc > 2 ? atoi(argv[2]) : 2;
  if (n < 2 || (n & (n - 1)) || iterations < 1) return 2;
  long points = (long)n * n * n;
  struct fft_plan plan;
  plan.twiddle = malloc((size_t)n / 2 * sizeof(complex_t));
  plan.reversed = malloc((size_t)n * sizeof(int));
  plan.line = malloc((size_t)n * sizeof(complex_t));
  complex_t *u0 = malloc(points * sizeof(complex_t)), *u1 = malloc(points * sizeof(complex_t));
  complex_t *spectrum = malloc(points * sizeof(complex_t));
  double *factor = malloc(points * sizeof(double));
  if (!plan.twiddle || !plan.reversed || !plan.line || !u0 || !u1 || !spectrum || !factor) return 1;
  fft_init(&plan, n);
  initial_conditions(u0, points);
  compute_indexmap(factor, n);
  for (long p = 0; p < points; p++)
    spectrum[p] = u0[p];
  fft3d(&plan, spectrum, -1);

  /* The inverse of the forward transform is the input, up to rounding. */
  evolve(spectrum, u1, factor, 0, points);
  fft3d(&plan, u1, +1);
  double worst = 0.0;
  for (long p = 0; p < points; p++)
    worst =
        fmax(worst, fmax(fabs(u1[p].re / points - u0[p].re), fabs(u1[p].im / points - u0[p].im)));
  if (worst > 1e-10) {
    fprintf(stderr, "fft3d: inverse transform off by %g\n", worst);
    return 1;
  }
  for (int t = 1; t <= iterations; t++) {
    evolve(spectrum, u1, factor, t, points);
    fft3d(&plan, u1, +1);
    complex_t sum = checksum(u1, points);
    printf("fft3d %d: iteration %d checksum %.10e %.10e\n", n, t, sum.re / points, sum.im / points);
  }
  free(plan.twiddle), free(plan.reversed), free(plan.line);
  free(u0), free(u1), free(spectrum), free(factor);
  return 0;
}
