// Compiled as C99: checks that the runtime's header is plain C and that its calls work from C.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dscc_runtime.h"

static int failures = 0;

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                \
    }                                                            \
  } while (0)

// The closure of the parallel loop: squares of the indices into out.
typedef struct {
  int64_t* out;
} squares_closure;

static void squares(void* closure, int64_t begin, int64_t end) {
  squares_closure* c = (squares_closure*)closure;
  for (int64_t i = begin; i < end; ++i) c->out[i] = i * i;
}

int main(void) {
  CHECK(dscc_abi_version() == DSCC_ABI_VERSION);
  dscc_context* ctx = dscc_context_create(3);
  CHECK(ctx != NULL);
  if (!ctx) return 1;
  CHECK(dscc_context_num_threads(ctx) == 3);

  // parallel_for over 10000 indices.
  enum { n = 10000 };
  static int64_t out[n];
  squares_closure closure = {out};
  CHECK(dscc_parallel_for(ctx, n, 16, squares, &closure) == DSCC_OK);
  for (int64_t i = 0; i < n; ++i)
    if (out[i] != i * i) {
      CHECK(out[i] == i * i);
      break;
    }

  // Two 3x4 * 4x2 products, B transposed (stored 2x4), against a loop.
  float a[2][3][4], b[2][2][4], c[2][3][2];
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k) a[m][i][k] = (float)(m + i + k + 1);
  for (int m = 0; m < 2; ++m)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 4; ++k) b[m][j][k] = (float)(2 * m - j + k) * 0.5f;
  CHECK(dscc_sgemm_strided_batched(ctx, 0, 1, 3, 2, 4, 1.0f, &a[0][0][0], 4, 12, &b[0][0][0], 4, 8, 0.0f,
                                   &c[0][0][0], 2, 6, 2) == DSCC_OK);
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) {
        float want = 0.0f;
        for (int k = 0; k < 4; ++k) want += a[m][i][k] * b[m][j][k];
        CHECK(fabsf(c[m][i][j] - want) <= 1e-5f * fabsf(want) + 1e-6f);
      }

  // A runtime-allocated output and a caller-allocated one.
  int64_t shape[2] = {3, 2};
  int64_t dims[2] = {0, 0};
  dscc_tensor owned = {NULL, dims, 2, DSCC_F32};
  CHECK(dscc_prepare_output(ctx, &owned, 0, DSCC_F32, 2, shape) == DSCC_OK);
  CHECK(owned.data != NULL && ((uintptr_t)owned.data % 64) == 0 && dims[0] == 3 && dims[1] == 2);
  CHECK(dscc_tensor_numel(&owned) == 6);
  dscc_tensor_free(&owned);
  CHECK(owned.data == NULL);
  float buffer[4];
  int64_t small[2] = {2, 2};
  dscc_tensor mine = {buffer, small, 2, DSCC_F32};
  CHECK(dscc_prepare_output(ctx, &mine, 0, DSCC_F32, 2, shape) == DSCC_SHAPE_MISMATCH);
  CHECK(strstr(dscc_status_message(ctx), "f32[3, 2]") != NULL);

  // Status codes and messages.
  CHECK(dscc_sgemm_strided_batched(ctx, 0, 0, -1, 2, 2, 1.0f, NULL, 2, 0, NULL, 2, 0, 0.0f, NULL, 2, 0, 1) ==
        DSCC_INVALID_ARGUMENT);
  CHECK(strlen(dscc_status_message(ctx)) > 0);
  CHECK(strcmp(dscc_status_name(DSCC_FACT_VIOLATED), "FACT_VIOLATED") == 0);
  CHECK(dscc_set_error(ctx, DSCC_FACT_VIOLATED, "S = %d", 37) == DSCC_FACT_VIOLATED);
  CHECK(strcmp(dscc_status_message(ctx), "S = 37") == 0);

  dscc_context_release(ctx);
  if (failures) {
    printf("abi_smoke: %d checks failed\n", failures);
    return 1;
  }
  printf("abi_smoke: all checks passed\n");
  return 0;
}
