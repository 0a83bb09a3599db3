# `cmake --install build --prefix P`: tools in P/bin, the runtime (shared, SONAME libdscc_runtime.so.0, and static)
# in P/lib, headers in P/include/dscc, the CMake package and pkg-config files, man pages, bash completion, the
# Python module, docs and examples (docs/install.md). Everything installed finds the rest relative to itself.
include(CMakePackageConfigHelpers)
set(DSCC_CMAKE_DIR lib/cmake/dscc)

install(TARGETS dscc dscc-opt dscc-tune dscc-run EXPORT dsccTargets RUNTIME DESTINATION bin)
install(TARGETS dscc_runtime dscc_runtime_static EXPORT dsccTargets LIBRARY DESTINATION lib ARCHIVE DESTINATION lib)
install(FILES runtime/dscc_runtime.h runtime/dscc_generated.h runtime/dscc_cuda.h DESTINATION include/dscc)

# find_package(dscc): dscc::runtime, dscc::runtime_static, dscc::dscc, dscc_add_model().
install(EXPORT dsccTargets NAMESPACE dscc:: DESTINATION ${DSCC_CMAKE_DIR})
configure_package_config_file(cmake/dsccConfig.cmake.in ${CMAKE_BINARY_DIR}/cmake/dsccConfig.cmake
                              INSTALL_DESTINATION ${DSCC_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/dsccConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/dsccConfig.cmake ${CMAKE_BINARY_DIR}/cmake/dsccConfigVersion.cmake
              cmake/DsccModel.cmake DESTINATION ${DSCC_CMAKE_DIR})

# pkg-config: dscc_runtime (shared) and dscc_runtime_static (with the libraries the .a needs).
get_filename_component(_blas_dir "${DSCC_OPENBLAS_LIBRARY}" DIRECTORY)
set(DSCC_PC_OPENBLAS "-L${_blas_dir} -lopenblas")
if(DSCC_RUNTIME_USES_DNNL)
  string(APPEND DSCC_PC_OPENBLAS " -ldnnl -lgomp")
endif()
# A sanitizer build's static runtime holds instrumented code: its users link the sanitizers' runtimes too.
if(DSCC_SANITIZE)
  string(APPEND DSCC_PC_OPENBLAS " -fsanitize=${DSCC_SANITIZE_FLAGS}")
endif()
configure_file(cmake/dscc_runtime.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/dscc_runtime.pc @ONLY)
configure_file(cmake/dscc_runtime_static.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/dscc_runtime_static.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/dscc_runtime.pc ${CMAKE_BINARY_DIR}/pkgconfig/dscc_runtime_static.pc
        DESTINATION lib/pkgconfig)

# Man pages from each tool's --help and --version (Debian's help2man), one per
# dscc subcommand too; skipped, with a note, where help2man is missing.
find_program(DSCC_HELP2MAN help2man)
if(DSCC_HELP2MAN)
  set(_man_pages)
  macro(dscc_man_page page tool help_option description)
    add_custom_command(
      OUTPUT ${CMAKE_BINARY_DIR}/man/${page}.1
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${DSCC_HELP2MAN} --no-info --no-discard-stderr "--help-option=${help_option}" --version-option=--version
              "--name=${description}" --output=${CMAKE_BINARY_DIR}/man/${page}.1 $<TARGET_FILE:${tool}>
      DEPENDS ${tool}
      COMMENT "help2man ${page}.1"
      VERBATIM)
    list(APPEND _man_pages ${CMAKE_BINARY_DIR}/man/${page}.1)
  endmacro()
  dscc_man_page(dscc dscc --help "compile and run tensor programs with dynamic shapes")
  dscc_man_page(dscc-compile dscc "compile --help" "compile a tensor program to a shared library, object or header")
  dscc_man_page(dscc-run dscc "run --help" "run a tensor program or a compiled model")
  dscc_man_page(dscc-explain dscc "explain --help" "show the kernels and versions of a model at given sizes")
  dscc_man_page(dscc-view dscc "view --help" "draw a model's kernels, versions and profile as an HTML page")
  dscc_man_page(dscc-import dscc "import --help" "import an ONNX model as a dscc program")
  dscc_man_page(dscc-opt dscc-opt --help "parse, verify and transform dscc IR")
  dscc_man_page(dscc-tune dscc-tune --help "tune a model's kernels over a shape distribution")
  add_custom_target(dscc-man-pages ALL DEPENDS ${_man_pages})
  install(FILES ${_man_pages} DESTINATION share/man/man1)
else()
  message(STATUS "dscc: no help2man (Debian: help2man); man pages are not generated")
endif()
install(FILES tools/dscc-completion.bash DESTINATION share/bash-completion/completions RENAME dscc)

# Documentation and the example (its .dsc is a link into bench/: the file itself is installed).
install(FILES README.md DESTINATION share/doc/dscc)
file(GLOB _dscc_docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${_dscc_docs} DESTINATION share/doc/dscc/docs)
get_filename_component(_bert_dsc ${CMAKE_SOURCE_DIR}/examples/bert_layer.dsc REALPATH)
install(FILES examples/Makefile examples/README.md examples/bert_main.cpp DESTINATION share/doc/dscc/examples)
install(FILES ${_bert_dsc} DESTINATION share/doc/dscc/examples RENAME bert_layer.dsc)
