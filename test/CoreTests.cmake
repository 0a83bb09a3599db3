# The tests of a DSCC_SANITIZE_CORE build (CI's sanitizer stage): the unit tests over ir/, passes/, runtime/ and the readers.
#
# Only test files that need none of codegen/ (LLVM), frontend/ (ONNX) or the
# tools; the tuning and shape readers are compiled in directly, as the fuzz
# targets do, since their library (dscc_tuner) pulls in all of codegen.
find_package(yaml-cpp REQUIRED)
set(DSCC_CORE_UNIT_TESTS
  DimExprTest IndexMapTest InterpreterTest NpyTest TensorTest   # ir/
  ShapeSolverTest                                               # passes/
  RuntimeTest RuntimeGemmNdTest RuntimeProfileTest CudaRuntimeTest  # runtime/
  TunerTest)                                                    # the readers
set(_sources)
foreach(t ${DSCC_CORE_UNIT_TESTS})
  list(APPEND _sources ${CMAKE_CURRENT_LIST_DIR}/unit/${t}.cpp)
endforeach()
add_executable(dscc-core-unittests ${_sources}
  ${CMAKE_SOURCE_DIR}/tuner/TuningTable.cpp ${CMAKE_SOURCE_DIR}/tuner/ShapeDistribution.cpp)
target_link_libraries(dscc-core-unittests PRIVATE dscc_passes dscc_ir dscc_runtime yaml-cpp GTest::gtest GTest::gtest_main)
target_compile_definitions(dscc-core-unittests PRIVATE DSCC_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
set_target_properties(dscc-core-unittests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
include(GoogleTest)
gtest_discover_tests(dscc-core-unittests WORKING_DIRECTORY ${CMAKE_BINARY_DIR} DISCOVERY_TIMEOUT 120)
