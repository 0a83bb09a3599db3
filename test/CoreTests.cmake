# The tests of a DSCC_SANITIZE_CORE build (CI's sanitizer stage): the unit tests over ir/, passes/, runtime/ and the readers.
#
# Only test files that need none of codegen/ (LLVM), frontend/ (ONNX) or the
# tools; the tuning and shape readers are compiled in directly, as the fuzz
# targets do, since their library (dscc_tuner) pulls in all of codegen.
find_package(yaml-cpp REQUIRED)
set(DSCC_CORE_UNIT_TESTS
  DimExprTest IndexMapTest InterpreterTest NpyTest TensorTest   # ir/
  ShapeSolverTest                                               # passes/
  RuntimeTest RuntimeGemmNdTest RuntimePackedGemmTest RuntimeProfileTest CudaRuntimeTest  # runtime/
  TunerTest)                                                    # the readers
set(_sources)
foreach(t ${DSCC_CORE_UNIT_TESTS})
  list(APPEND _sources ${CMAKE_CURRENT_LIST_DIR}/unit/${t}.cpp)
endforeach()
# The two readers, compiled once for the unit tests and fuzz_shapes / fuzz_tuning.
add_library(dscc_readers STATIC ${CMAKE_SOURCE_DIR}/tuner/TuningTable.cpp ${CMAKE_SOURCE_DIR}/tuner/ShapeDistribution.cpp
            ${CMAKE_SOURCE_DIR}/tuner/YamlDocs.cpp)
target_link_libraries(dscc_readers PUBLIC dscc_ir yaml-cpp)
add_executable(dscc-core-unittests ${_sources})
target_link_libraries(dscc-core-unittests PRIVATE dscc_passes dscc_readers dscc_ir dscc_runtime GTest::gtest GTest::gtest_main)
target_compile_definitions(dscc-core-unittests PRIVATE DSCC_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
set_target_properties(dscc-core-unittests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
include(GoogleTest)
gtest_discover_tests(dscc-core-unittests WORKING_DIRECTORY ${CMAKE_BINARY_DIR} DISCOVERY_TIMEOUT 120)

# The runtime's tests alone (thread pool, launches, sgemm, profiling), for a
# TSan build of the runtime: -DDSCC_SANITIZE=thread -DDSCC_SANITIZE_CORE=ON,
# then `ninja dscc-runtime-unittests` compiles only runtime/ and these
# (not part of `all`: the ASan stage has them in dscc-core-unittests).
add_executable(dscc-runtime-unittests EXCLUDE_FROM_ALL
  ${CMAKE_CURRENT_LIST_DIR}/unit/RuntimeTest.cpp ${CMAKE_CURRENT_LIST_DIR}/unit/RuntimeGemmNdTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unit/RuntimeProfileTest.cpp ${CMAKE_CURRENT_LIST_DIR}/unit/RuntimePackedGemmTest.cpp)
target_link_libraries(dscc-runtime-unittests PRIVATE dscc_runtime GTest::gtest GTest::gtest_main)
target_compile_definitions(dscc-runtime-unittests PRIVATE DSCC_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
set_target_properties(dscc-runtime-unittests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
