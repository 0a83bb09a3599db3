/* A C99 caller of a compiled layer_norm model through its generated header: outputs, status codes, messages. */
/*
 * Built at test time by test/numeric/compiled_abi_test.py with
 *   cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -DMODEL_RUN=layer_norm_run
 * against the header `dscc compile --emit=header` wrote (included as "model.h")
 * and the model's .so. The model is bench/workloads/layer_norm.dsc:
 *   @layer_norm(%x: f32[N, D], %g: f32[D], %b: f32[D]) -> f32[N, D], N in [1, 65536], D in [1, 16384].
 *
 * Usage: compiled_abi_c N D x.bin g.bin b.bin out_caller.bin out_runtime.bin
 * Reads raw little-endian f32 inputs, runs the model once into a caller buffer
 * and once into a runtime-allocated one, writes both results for the script to
 * compare with the interpreter, and checks the failure statuses. Exit 0 when
 * every check passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef MODEL_RUN
#error "define MODEL_RUN to the model's entry point (e.g. layer_norm_run)"
#endif

static int failures = 0;

static void expect(int cond, const char* what) {
  if (!cond) {
    fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

/* Expects `got` == `want` and, for a failure, a non-empty message on `ctx`. */
static void expect_status(dscc_context* ctx, dscc_status got, dscc_status want, const char* what) {
  if (got != want) {
    fprintf(stderr, "FAIL: %s: status %s, expected %s (message: %s)\n", what, dscc_status_name(got),
            dscc_status_name(want), dscc_status_message(ctx));
    ++failures;
    return;
  }
  if (want != DSCC_OK) {
    const char* msg = dscc_status_message(ctx);
    if (msg == NULL || msg[0] == '\0') {
      fprintf(stderr, "FAIL: %s: %s with an empty message\n", what, dscc_status_name(got));
      ++failures;
    } else {
      printf("  %s -> %s: %s\n", what, dscc_status_name(got), msg);
    }
  }
}

static float* read_f32(const char* path, size_t count) {
  float* p = (float*)malloc(count ? count * sizeof(float) : 1);
  FILE* f = fopen(path, "rb");
  if (p == NULL || f == NULL || fread(p, sizeof(float), count, f) != count) {
    fprintf(stderr, "cannot read %lu floats from %s\n", (unsigned long)count, path);
    exit(2);
  }
  fclose(f);
  return p;
}

static void write_f32(const char* path, const void* data, size_t count) {
  FILE* f = fopen(path, "wb");
  if (f == NULL || fwrite(data, sizeof(float), count, f) != count) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(2);
  }
  fclose(f);
}

/* Fills a layer_norm call's three inputs with the given dims over `data` (large enough). */
static void set_inputs(dscc_tensor in[3], int64_t dx[2], int64_t dg[1], int64_t db[1], float* x, float* g,
                       float* b) {
  in[0].data = x;
  in[0].dims = dx;
  in[0].rank = 2;
  in[0].dtype = DSCC_F32;
  in[1].data = g;
  in[1].dims = dg;
  in[1].rank = 1;
  in[1].dtype = DSCC_F32;
  in[2].data = b;
  in[2].dims = db;
  in[2].rank = 1;
  in[2].dtype = DSCC_F32;
}

int main(int argc, char** argv) {
  int64_t n, d, dx[2], dg[1], db[1], dout[2], big;
  float *x, *g, *b, *out, *scratch;
  dscc_tensor in[3], res;
  dscc_context* ctx;
  dscc_status s;

  if (argc != 8) {
    fprintf(stderr, "usage: %s N D x.bin g.bin b.bin out_caller.bin out_runtime.bin\n", argv[0]);
    return 2;
  }
  n = strtoll(argv[1], NULL, 10);
  d = strtoll(argv[2], NULL, 10);
  x = read_f32(argv[3], (size_t)(n * d));
  g = read_f32(argv[4], (size_t)d);
  b = read_f32(argv[5], (size_t)d);
  out = (float*)malloc((size_t)(n * d + 1) * sizeof(float));
  big = 16385 > n * d + 2 * d ? 16385 : n * d + 2 * d;
  scratch = (float*)calloc((size_t)big + 1, sizeof(float));
  ctx = dscc_context_create(2);
  if (out == NULL || scratch == NULL || ctx == NULL) {
    fprintf(stderr, "setup failed: %s\n", dscc_status_message(NULL));
    return 2;
  }

  dx[0] = n;
  dx[1] = d;
  dg[0] = d;
  db[0] = d;

  /* 1. A caller-allocated output, written in place. */
  set_inputs(in, dx, dg, db, x, g, b);
  dout[0] = n;
  dout[1] = d;
  res.data = out;
  res.dims = dout;
  res.rank = 2;
  res.dtype = DSCC_F32;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_OK, "caller-allocated output");
  expect(res.data == (void*)out, "the caller's output buffer stays the caller's");
  write_f32(argv[6], out, (size_t)(n * d));

  /* 2. A runtime-allocated output: dims and dtype written by the model. */
  dout[0] = -7;
  dout[1] = -7;
  res.data = NULL;
  res.dtype = DSCC_I8;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_OK, "runtime-allocated output");
  expect(res.data != NULL, "runtime-allocated output has data");
  expect(dout[0] == n && dout[1] == d, "runtime-allocated output has the dims [N, D]");
  expect(res.dtype == DSCC_F32, "runtime-allocated output is f32");
  expect(res.rank == 2, "runtime-allocated output keeps rank 2");
  if (res.data != NULL) {
    write_f32(argv[7], res.data, (size_t)(n * d));
    dscc_tensor_free(&res);
    expect(res.data == NULL, "dscc_tensor_free resets data");
  }

  /* 3. Wrong inputs: SHAPE_MISMATCH, and a runtime-allocated output stays unallocated. */
  dout[0] = n;
  dout[1] = d;
  res.data = NULL;
  res.dtype = DSCC_F32;
  in[0].rank = 1;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "x of rank 1");
  expect(res.data == NULL, "no output left allocated after a failure");
  set_inputs(in, dx, dg, db, x, g, b);
  in[1].dtype = DSCC_F64;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "g of dtype f64");
  set_inputs(in, dx, dg, db, x, g, b);
  in[0].dtype = DSCC_I32;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "x of dtype i32");
  set_inputs(in, dx, dg, db, x, g, b);
  dg[0] = d + 1;
  in[1].data = scratch;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "g with D + 1 elements");
  expect(res.data == NULL, "no output left allocated after a dims mismatch");
  dg[0] = d;

  /* 4. A caller output of the wrong dims or dtype. */
  set_inputs(in, dx, dg, db, x, g, b);
  dout[0] = n + 1;
  dout[1] = d;
  res.data = scratch;
  res.dtype = DSCC_F32;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "caller output with N + 1 rows");
  dout[0] = n;
  res.dtype = DSCC_F64;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "caller output of dtype f64");
  expect(res.data == (void*)scratch, "a failing call keeps the caller's output buffer");

  /* 5. Sizes breaking the facts N in [1, 65536], D in [1, 16384]. */
  res.data = NULL;
  res.dtype = DSCC_F32;
  dx[0] = 0;
  set_inputs(in, dx, dg, db, x, g, b);
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_FACT_VIOLATED, "N = 0");
  expect(res.data == NULL, "no output left allocated after a fact violation");
  dx[0] = 1;
  dx[1] = 0;
  dg[0] = 0;
  db[0] = 0;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_FACT_VIOLATED, "D = 0");
  dx[1] = 16385;
  dg[0] = 16385;
  db[0] = 16385;
  set_inputs(in, dx, dg, db, scratch, scratch, scratch);
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_FACT_VIOLATED, "D = 16385");
  expect(res.data == NULL, "no output left allocated after D = 16385");

  /* 6. Wrong counts. */
  dx[0] = n;
  dx[1] = d;
  dg[0] = d;
  db[0] = d;
  set_inputs(in, dx, dg, db, x, g, b);
  s = MODEL_RUN(ctx, in, 2, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "2 inputs");
  s = MODEL_RUN(ctx, in, 3, &res, 0);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "0 outputs");

  /* 7. Misuse the ABI can check (docs/abi.md): none may crash. */
  set_inputs(in, dx, dg, db, x, g, b);
  res.data = NULL;
  res.dtype = DSCC_F32;
  s = MODEL_RUN(NULL, in, 3, &res, 1);
  expect_status(NULL, s, DSCC_INVALID_ARGUMENT, "a NULL context");
  expect(res.data == NULL, "no output allocated for a NULL context");
  s = MODEL_RUN(ctx, NULL, 3, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "NULL inputs");
  s = MODEL_RUN(ctx, in, 3, NULL, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "NULL outputs");
  in[0].data = NULL;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "x with elements and NULL data");
  expect(strstr(dscc_status_message(ctx), "(%x)") != NULL, "the message names %x");
  set_inputs(in, dx, dg, db, x, g, b);
  in[0].dims = NULL;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "x with NULL dims");
  set_inputs(in, dx, dg, db, x, g, b);
  in[1].data = (char*)g + 1;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "g not aligned to its 4-byte elements");
  expect(strstr(dscc_status_message(ctx), "(%g)") != NULL, "the message names %g");
  set_inputs(in, dx, dg, db, x, g, b);
  in[2].dtype = (dscc_dtype)99;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "b with a dtype value that is no dtype");
  set_inputs(in, dx, dg, db, x, g, b);
  in[1].dtype = DSCC_I32;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_SHAPE_MISMATCH, "g of dtype i32");
  expect(strstr(dscc_status_message(ctx), "input 1 (%g) has dtype i32; expected f32") != NULL,
         "a dtype mismatch names the input and both dtypes");
  /* An output aliasing an input: refused before anything is written. */
  set_inputs(in, dx, dg, db, x, g, b);
  dout[0] = n;
  dout[1] = d;
  res.data = x;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "an output aliasing input x");
  if (n * d > 1) {
    res.data = x + 1;
    s = MODEL_RUN(ctx, in, 3, &res, 1);
    expect_status(ctx, s, DSCC_INVALID_ARGUMENT, "an output overlapping input x");
  }
  /* Dims whose element count overflows 64 bits. */
  dx[0] = (int64_t)1 << 40;
  dx[1] = (int64_t)1 << 40;
  res.data = NULL;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect(s != DSCC_OK, "dims of 2^80 elements are refused");
  dx[0] = n;
  dx[1] = d;

  /* 8. The model still works after all those failures. */
  res.data = out;
  res.dtype = DSCC_F32;
  dout[0] = n;
  dout[1] = d;
  s = MODEL_RUN(ctx, in, 3, &res, 1);
  expect_status(ctx, s, DSCC_OK, "a good call after the failures");

  dscc_context_release(ctx);
  free(x);
  free(g);
  free(b);
  free(out);
  free(scratch);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all status checks passed (N=%lld, D=%lld)\n", (long long)n, (long long)d);
  return 0;
}
