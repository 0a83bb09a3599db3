# dscc_add_model(): compile a .dsc or .onnx model with `dscc compile` as a build step (depfile: edits rebuild) and link it as a library.
#
#   dscc_add_model(<target> <model.dsc|model.onnx>
#                  [OUTPUT_NAME <name>]      # <name>.so and <name>.h (default: <target>)
#                  [OPTIONS <dscc compile options>...])   # e.g. -O3 --mcpu=x86-64-v3 --where "S in [1, 512]"
#
# Writes ${CMAKE_CURRENT_BINARY_DIR}/<name>.so and <name>.h with one
# `dscc compile --emit=so,header -MD` run; the dependency file names the
# program and the .npy files its constants read, so editing any of them
# recompiles. <target> is an imported shared library: linking it links the model
# (by its SONAME <name>.so) and dscc::runtime and adds the header's folder.
# The model file's path is the target's DSCC_MODEL_FILE property (for install()).
function(dscc_add_model target source)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "OUTPUT_NAME" "OPTIONS")
  if(NOT ARG_OUTPUT_NAME)
    set(ARG_OUTPUT_NAME ${target})
  endif()
  get_filename_component(src "${source}" ABSOLUTE)
  set(stem "${CMAKE_CURRENT_BINARY_DIR}/${ARG_OUTPUT_NAME}")
  if(TARGET dscc::dscc)
    set(compiler dscc::dscc)
  else()
    set(compiler dscc)  # inside dscc's own build
  endif()
  add_custom_command(
    OUTPUT "${stem}.so" "${stem}.h"
    COMMAND ${compiler} compile "${src}" --emit=so,header -o "${stem}" -MD -MF "${stem}.d" ${ARG_OPTIONS}
    DEPENDS "${src}" ${compiler}
    DEPFILE "${stem}.d"
    COMMENT "dscc compile ${source}"
    VERBATIM)
  add_custom_target(${target}_dscc_compile DEPENDS "${stem}.so" "${stem}.h")
  # An imported shared library (linked by its full path; a bare path not named lib*.so would become -lNAME).
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${stem}.so"
    IMPORTED_SONAME "${ARG_OUTPUT_NAME}.so"
    INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_BINARY_DIR}"
    INTERFACE_LINK_LIBRARIES dscc::runtime
    DSCC_MODEL_FILE "${stem}.so")
  add_dependencies(${target} ${target}_dscc_compile)
endfunction()
