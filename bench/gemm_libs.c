/* BERT's GEMM shapes on the CPU BLAS candidates, in one table: OpenBLAS (what dscc's runtime links), oneDNN, BLIS, libxsmm.
 *
 *   gemm_libs THREADS [M...]    GFLOP/s of C[M,N] = A[M,K] B[K,N] (row-major, fp32) for
 *                               (N, K) in {(768, 768), (3072, 768), (768, 3072)} and each M
 *                               (default 1 8 16 32 64 128 512 2048)
 *
 * Every library runs single-threaded per call and the THREADS-way split is
 * the same for all (OpenMP over row strips of C when M >= N, else column
 * strips): the way dscc's runtime splits a gemm over its pool, so the table
 * compares the kernels, not the libraries' threading. oneDNN is asked three
 * times: dnnl_sgemm (B read as given, like the others), a matmul primitive
 * whose weights were reordered once into its own blocked layout ("packed":
 * what a model with constant weights can do at load), and a matmul primitive
 * reading B's strip in place (strides), made once per shape. BLIS is reached by dlopen
 * through its typed API (its cblas and Fortran names clash with OpenBLAS's);
 * libxsmm computes what it calls small itself (M*N*K up to 64^3 by default)
 * and hands the rest to the BLAS linked, OpenBLAS. A missing library is a
 * column of "n/a". Prints a Markdown table. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <libxsmm.h>
#include <oneapi/dnnl/dnnl.h>

void openblas_set_num_threads(int);

/* BLIS's typed API (its cblas layer would call sgemm_, which resolves to OpenBLAS's in this process). */
typedef void (*bli_sgemm_fn)(int transa, int transb, int64_t m, int64_t n, int64_t k, const float* alpha,
                             const float* a, int64_t rsa, int64_t csa, const float* b, int64_t rsb, int64_t csb,
                             const float* beta, float* c, int64_t rsc, int64_t csc);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { OPENBLAS, DNNL, DNNL_PACKED, DNNL_PLAIN, BLIS, XSMM, NLIBS };
static const char* kNames[NLIBS] = {"OpenBLAS", "oneDNN sgemm", "oneDNN matmul, packed weights",
                                    "oneDNN matmul, weights as given", "BLIS", "libxsmm"};
static bli_sgemm_fn blis_sgemm;

/* One strip [m0, m1) x [n0, n1) of C with library `lib`, single-threaded. */
static void strip(int lib, int m0, int m1, int n0, int n1, int N, int K, const float* A, const float* B, float* C) {
  int m = m1 - m0, n = n1 - n0;
  const float* a = A + (size_t)m0 * K;
  const float* b = B + n0;
  float* c = C + (size_t)m0 * N + n0;
  switch (lib) {
    case OPENBLAS: cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, K, 1.f, a, K, b, N, 0.f, c, N); break;
    case BLIS: {
      const float one = 1.f, zero = 0.f;
      blis_sgemm(0, 0, m, n, K, &one, a, K, 1, b, N, 1, &zero, c, N, 1); /* BLIS_NO_TRANSPOSE = 0 */
      break;
    }
    case DNNL: dnnl_sgemm('N', 'N', m, n, K, 1.f, a, K, b, N, 0.f, c, N); break;
    case XSMM: {
      /* Column-major libxsmm: C^T[n, m] = B^T[n, K] A^T[K, m]. */
      libxsmm_blasint mm = n, nn = m, kk = K, lda = N, ldb = K, ldc = N;
      float alpha = 1.f, beta = 0.f;
      libxsmm_sgemm("N", "N", &mm, &nn, &kk, &alpha, b, &lda, a, &ldb, &beta, c, &ldc);
      break;
    }
  }
}

/* A oneDNN matmul of [m, K] x [K, N]: weights reordered once (format_tag any), or, when `ldb` > 0, read in
 * place from B's rows (strides {ldb, 1}) on every call, as a call with non-constant weights must. */
typedef struct {
  dnnl_primitive_t prim;
  dnnl_memory_t src, wei, dst;
  dnnl_stream_t stream;
} Packed;

static int packed_make(Packed* p, dnnl_engine_t eng, int m, int N, int K, const float* B, int ldb, int ldc) {
  dnnl_memory_desc_t sd, wd, wany, dd;
  dnnl_dims_t s = {m, K}, w = {K, N}, d = {m, N}, ws = {ldb, 1}, ds = {ldc, 1};
  if (dnnl_memory_desc_init_by_tag(&sd, 2, s, dnnl_f32, dnnl_ab) || dnnl_memory_desc_init_by_tag(&wd, 2, w, dnnl_f32, dnnl_ab) ||
      dnnl_memory_desc_init_by_tag(&wany, 2, w, dnnl_f32, dnnl_format_tag_any) ||
      (ldc > 0 ? dnnl_memory_desc_init_by_strides(&dd, 2, d, dnnl_f32, ds)
               : dnnl_memory_desc_init_by_tag(&dd, 2, d, dnnl_f32, dnnl_ab)))
    return 1;
  if (ldb > 0) {
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    if (dnnl_memory_desc_init_by_strides(&wd, 2, w, dnnl_f32, ws) || dnnl_matmul_desc_init(&md, &sd, &wd, NULL, &dd) ||
        dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL) ||
        dnnl_memory_create(&p->wei, &wd, eng, (void*)B) || dnnl_stream_create(&p->stream, eng, dnnl_stream_default_flags) ||
        dnnl_memory_create(&p->src, &sd, eng, DNNL_MEMORY_NONE) || dnnl_memory_create(&p->dst, &dd, eng, DNNL_MEMORY_NONE) ||
        dnnl_primitive_create(&p->prim, pd))
      return 1;
    dnnl_primitive_desc_destroy(pd);
    return 0;
  }
  dnnl_matmul_desc_t md;
  if (dnnl_matmul_desc_init(&md, &sd, &wany, NULL, &dd)) return 1;
  dnnl_primitive_desc_t pd;
  if (dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL)) return 1;
  const dnnl_memory_desc_t* packedDesc = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t plain;
  if (dnnl_memory_create(&plain, &wd, eng, (void*)B) || dnnl_memory_create(&p->wei, packedDesc, eng, DNNL_MEMORY_ALLOCATE))
    return 1;
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t reorder;
  if (dnnl_reorder_primitive_desc_create(&rpd, &wd, eng, packedDesc, eng, NULL) || dnnl_primitive_create(&reorder, rpd))
    return 1;
  if (dnnl_stream_create(&p->stream, eng, dnnl_stream_default_flags)) return 1;
  dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, p->wei}};
  if (dnnl_primitive_execute(reorder, p->stream, 2, rargs) || dnnl_stream_wait(p->stream)) return 1;
  dnnl_primitive_destroy(reorder);
  dnnl_primitive_desc_destroy(rpd);
  dnnl_memory_destroy(plain);
  if (dnnl_memory_create(&p->src, &sd, eng, DNNL_MEMORY_NONE) || dnnl_memory_create(&p->dst, &dd, eng, DNNL_MEMORY_NONE) ||
      dnnl_primitive_create(&p->prim, pd))
    return 1;
  dnnl_primitive_desc_destroy(pd);
  return 0;
}

static void packed_run(Packed* p, const float* A, float* C) {
  dnnl_memory_set_data_handle(p->src, (void*)A);
  dnnl_memory_set_data_handle(p->dst, C);
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, p->wei}, {DNNL_ARG_DST, p->dst}};
  dnnl_primitive_execute(p->prim, p->stream, 3, args);
  dnnl_stream_wait(p->stream);
}

static double gflops(int lib, int threads, int M, int N, int K, const float* A, const float* B, float* C,
                     dnnl_engine_t eng) {
  Packed packed[64];
  /* Row strips re-read all of B per thread, column strips all of A: dscc's runtime takes the cheaper (M >= N). */
  int byRows = M >= N;
  if (lib == DNNL_PLAIN) {
    for (int t = 0; t < threads; ++t) {
      int m0 = byRows ? M * t / threads : 0, m1 = byRows ? M * (t + 1) / threads : M;
      int n0 = byRows ? 0 : N * t / threads, n1 = byRows ? N : N * (t + 1) / threads;
      if (m1 <= m0 || n1 <= n0 || packed_make(&packed[t], eng, m1 - m0, n1 - n0, K, B + n0, N, N)) return -1;
    }
  }
  if (lib == DNNL_PACKED) {
    /* One primitive per strip: its weights (a column strip, or all) packed once. */
    for (int t = 0; t < threads; ++t) {
      int m0 = byRows ? M * t / threads : 0, m1 = byRows ? M * (t + 1) / threads : M;
      int n0 = byRows ? 0 : N * t / threads, n1 = byRows ? N : N * (t + 1) / threads;
      float* Bs = malloc(sizeof(float) * (size_t)K * (n1 - n0));
      for (int k = 0; k < K; ++k) memcpy(Bs + (size_t)k * (n1 - n0), B + (size_t)k * N + n0, sizeof(float) * (n1 - n0));
      if (m1 <= m0 || n1 <= n0 || packed_make(&packed[t], eng, m1 - m0, n1 - n0, K, Bs, 0, 0)) return -1;
      free(Bs);
    }
  }
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    double t0 = now();
    int reps = M * (double)N * K < 1e8 ? 20 : 2;
    for (int q = 0; q < reps; ++q) {
#pragma omp parallel for num_threads(threads) schedule(static, 1)
      for (int t = 0; t < threads; ++t) {
        int m0 = byRows ? M * t / threads : 0, m1 = byRows ? M * (t + 1) / threads : M;
        int n0 = byRows ? 0 : N * t / threads, n1 = byRows ? N : N * (t + 1) / threads;
        if (m1 <= m0 || n1 <= n0) continue;
        if (lib == DNNL_PLAIN) {
          packed_run(&packed[t], A + (size_t)m0 * K, C + (size_t)m0 * N + n0);
        } else if (lib == DNNL_PACKED) {
          /* Its own dense output strip, as the primitive writes [m, n] with ld n. */
          static __thread float* tmp = NULL;
          static __thread size_t cap = 0;
          size_t need = (size_t)(m1 - m0) * (n1 - n0);
          if (need > cap) free(tmp), tmp = malloc(sizeof(float) * need), cap = need;
          packed_run(&packed[t], A + (size_t)m0 * K, byRows ? C + (size_t)m0 * N : tmp);
        } else {
          strip(lib, m0, m1, n0, n1, N, K, A, B, C);
        }
      }
    }
    double t = (now() - t0) / reps;
    if (r > 0 && t < best) best = t;
  }
  return 2.0 * M * (double)N * K / best / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: gemm_libs THREADS [M...]\n"), 2;
  int threads = atoi(argv[1]);
  if (threads < 1 || threads > 64) return fprintf(stderr, "gemm_libs: THREADS in [1, 64]\n"), 2;
  int Ms[32] = {1, 8, 16, 32, 64, 128, 512, 2048}, nM = 8;
  if (argc > 2) {
    nM = 0;
    for (int i = 2; i < argc && nM < 32; ++i) Ms[nM++] = atoi(argv[i]);
  }
  openblas_set_num_threads(1);
  void* blis = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
  blis_sgemm = blis ? (bli_sgemm_fn)dlsym(blis, "bli_sgemm") : NULL;
  /* BLIS runs its calls single-threaded unless told otherwise (BLIS_NUM_THREADS unset). */
  libxsmm_init();
  dnnl_engine_t eng;
  if (dnnl_engine_create(&eng, dnnl_cpu, 0)) return fprintf(stderr, "gemm_libs: no oneDNN CPU engine\n"), 1;
  const int NK[3][2] = {{768, 768}, {3072, 768}, {768, 3072}};
  printf("| M | N | K |");
  for (int l = 0; l < NLIBS; ++l) printf(" %s |", kNames[l]);
  printf(" best |\n|---|---|---|");
  for (int l = 0; l < NLIBS; ++l) printf("---|");
  printf("---|\n");
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < nM; ++i) {
      int M = Ms[i], N = NK[s][0], K = NK[s][1];
      float* A = aligned_alloc(64, sizeof(float) * (size_t)M * K + 64);
      float* B = aligned_alloc(64, sizeof(float) * (size_t)K * N + 64);
      float* C = aligned_alloc(64, sizeof(float) * (size_t)M * N + 64);
      for (size_t q = 0; q < (size_t)M * K; ++q) A[q] = (float)((q * 7) % 13) / 13.f - 0.5f;
      for (size_t q = 0; q < (size_t)K * N; ++q) B[q] = (float)((q * 5) % 11) / 11.f - 0.5f;
      double g[NLIBS], best = 0;
      int bi = 0;
      for (int l = 0; l < NLIBS; ++l) {
        g[l] = (l == BLIS && !blis_sgemm) ? -1 : gflops(l, threads, M, N, K, A, B, C, eng);
        if (g[l] > best) best = g[l], bi = l;
      }
      printf("| %d | %d | %d |", M, N, K);
      for (int l = 0; l < NLIBS; ++l) g[l] < 0 ? printf(" n/a |") : printf(" %.1f |", g[l]);
      printf(" %s |\n", kNames[bi]);
      fflush(stdout);
      free(A), free(B), free(C);
    }
  libxsmm_finalize();
  return 0;
}
