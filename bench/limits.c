/* The machine's limits for bench_cpu.py's "% of limit" columns: a STREAM-style copy, a read-only sum and the best sgemm.
 *
 *   limits copy  THREADS MB        GB/s of (read + write) bytes, best of 10, over a MB-sized float array
 *   limits read  THREADS MB        GB/s of bytes read by a sum over a MB-sized float array, best of 10
 *                                  (the limit of a kernel that only reads, as a column reduction)
 *   limits sgemm THREADS M N K     GFLOP/s of the faster of OpenBLAS's cblas_sgemm and (built with
 *                                  -DHAVE_DNNL) oneDNN's dnnl_sgemm, row-major C = A B, best of 5,
 *                                  and its name: "RATE openblas" or "RATE onednn"
 *
 * The copy is STREAM's "Copy" kernel (c[i] = a[i]) split statically over
 * OpenMP threads, each touching its own part first so pages sit where they
 * are used. The sgemm is the BLAS dscc's runtime links (Debian's
 * libopenblas-pthread), run with THREADS threads of its own. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

void openblas_set_num_threads(int);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int copy(int threads, long mb) {
  long n = mb * (1L << 20) / (long)sizeof(float);
  float* a = aligned_alloc(64, n * sizeof(float));
  float* c = aligned_alloc(64, n * sizeof(float));
  if (!a || !c) return fprintf(stderr, "limits: cannot allocate 2 x %ld MB\n", mb), 1;
  omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 1.0f + (float)(i & 1023), c[i] = 0.0f;
  double best = 1e30;
  for (int r = 0; r < 11; ++r) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) c[i] = a[i];
    double t = now() - t0;
    if (r > 0 && t < best) best = t; /* the first run warms up */
  }
  double check = 0;
  for (long i = 0; i < n; i += 4099) check += c[i] - a[i];
  if (check != 0) return fprintf(stderr, "limits: copy is wrong\n"), 1;
  printf("%.3f\n", 2.0 * n * sizeof(float) / best / 1e9);
  free(a), free(c);
  return 0;
}

static int readonly(int threads, long mb) {
  long n = mb * (1L << 20) / (long)sizeof(float);
  float* a = aligned_alloc(64, n * sizeof(float));
  if (!a) return fprintf(stderr, "limits: cannot allocate %ld MB\n", mb), 1;
  omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = (float)(i & 7);
  double best = 1e30, sum = 0;
  for (int r = 0; r < 11; ++r) {
    double t0 = now();
    float s = 0;
    /* simd: vector partial sums (a float sum is otherwise one chain of adds). */
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (long i = 0; i < n; ++i) s += a[i];
    double t = now() - t0;
    sum += s;
    if (r > 0 && t < best) best = t;
  }
  if (sum <= 0) return fprintf(stderr, "limits: read is wrong\n"), 1;
  printf("%.3f\n", (double)n * sizeof(float) / best / 1e9);
  free(a);
  return 0;
}

static int sgemm(int threads, int m, int n, int k) {
  float* a = aligned_alloc(64, sizeof(float) * (size_t)m * k + 64);
  float* b = aligned_alloc(64, sizeof(float) * (size_t)k * n + 64);
  float* c = aligned_alloc(64, sizeof(float) * (size_t)m * n + 64);
  if (!a || !b || !c) return fprintf(stderr, "limits: cannot allocate the matrices\n"), 1;
  for (size_t i = 0; i < (size_t)m * k; ++i) a[i] = (float)((i * 7) % 13) / 13.0f;
  for (size_t i = 0; i < (size_t)k * n; ++i) b[i] = (float)((i * 5) % 11) / 11.0f;
  openblas_set_num_threads(threads);
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  const char* name = "openblas";
#ifdef HAVE_DNNL
  /* As dscc's runtime calls it (docs/abi.md): a strip of rows per thread, one single-threaded call
   * each (oneDNN runs sequentially inside a parallel region). */
  for (int r = 0; r < 6; ++r) {
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      int i = omp_get_thread_num(), nt = omp_get_num_threads();
      long r0 = (long)m * i / nt, r1 = (long)m * (i + 1) / nt;
      if (r1 > r0) dnnl_sgemm('N', 'N', r1 - r0, n, k, 1.0f, a + r0 * k, k, b, n, 0.0f, c + r0 * n, n);
    }
    double t = now() - t0;
    if (r > 0 && t < best) best = t, name = "onednn";
  }
#endif
  printf("%.3f %s\n", 2.0 * m * n * (double)k / best / 1e9, name);
  free(a), free(b), free(c);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && !strcmp(argv[1], "copy")) return copy(atoi(argv[2]), atol(argv[3]));
  if (argc == 4 && !strcmp(argv[1], "read")) return readonly(atoi(argv[2]), atol(argv[3]));
  if (argc == 6 && !strcmp(argv[1], "sgemm")) return sgemm(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
  fprintf(stderr, "usage: limits copy THREADS MB | limits sgemm THREADS M N K\n");
  return 2;
}
