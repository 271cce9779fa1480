# Shared compile settings and helpers for sparsetrain targets.

add_library(sparsetrain_options INTERFACE)
target_compile_options(sparsetrain_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
  -Wno-sign-conversion)
if(SPARSETRAIN_WERROR)
  target_compile_options(sparsetrain_options INTERFACE -Werror)
endif()
# The flags that decide the generated code, beyond the build type's: collected in
# SPARSETRAIN_CODEGEN_FLAGS so the binary can say what it was built with (core/build_info.h).
# No math function's errno is ever read; without -fno-math-errno GCC keeps sqrt scalar (it must be
# able to call libm to set errno), which left the optimizer's element loop unvectorized. Results
# are the same bits: sqrt and division are correctly rounded either way.
set(SPARSETRAIN_CODEGEN_FLAGS -fno-math-errno)
# -march=native lets GCC use every instruction of the build machine outside the kernels, FMA
# contraction included: a different build of the same commit then rounds differently.
if(SPARSETRAIN_NATIVE)
  list(APPEND SPARSETRAIN_CODEGEN_FLAGS -march=native)
endif()
# Fuzzing builds every library with ASan, UBSan and libFuzzer's coverage instrumentation
# (fuzzer-no-link: the libraries get no main); only the targets in fuzz/ link libFuzzer itself.
# _GLIBCXX_ASSERTIONS turns out-of-range operator[] on standard containers into an abort that ASan
# alone would miss when it stays inside the allocation.
if(SPARSETRAIN_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SPARSETRAIN_BUILD_FUZZERS needs clang for libFuzzer: configure a separate build "
      "directory with CC=clang CXX=clang++ (scripts/fuzz.sh does)")
  endif()
  list(APPEND SPARSETRAIN_CODEGEN_FLAGS -fsanitize=fuzzer-no-link)
  target_compile_definitions(sparsetrain_options INTERFACE _GLIBCXX_ASSERTIONS)
endif()
set(_sanitizers "")
if(SPARSETRAIN_SANITIZE_ADDRESS OR SPARSETRAIN_BUILD_FUZZERS)
  list(APPEND _sanitizers address)
endif()
if(SPARSETRAIN_SANITIZE_UNDEFINED OR SPARSETRAIN_BUILD_FUZZERS)
  list(APPEND _sanitizers undefined)
endif()
if(_sanitizers)
  list(JOIN _sanitizers "," _san)
  list(APPEND SPARSETRAIN_CODEGEN_FLAGS -fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(sparsetrain_options INTERFACE -fsanitize=${_san})
  # Checked builds also compare every bf16 weight copy said to be current with its float32 values
  # (nn/parameter.cpp), so a write that escaped the accessors marking it stale fails a test.
  target_compile_definitions(sparsetrain_options INTERFACE SPARSETRAIN_CHECK_BF16_COPIES)
endif()
target_compile_options(sparsetrain_options INTERFACE ${SPARSETRAIN_CODEGEN_FLAGS})
string(TOUPPER "${CMAKE_BUILD_TYPE}" _build_type)
string(JOIN " " SPARSETRAIN_BUILD_FLAGS ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_build_type}} ${SPARSETRAIN_CODEGEN_FLAGS})
string(STRIP "${SPARSETRAIN_BUILD_FLAGS}" SPARSETRAIN_BUILD_FLAGS)
if(SPARSETRAIN_NATIVE)
  set(SPARSETRAIN_NATIVE_CXX true)
else()
  set(SPARSETRAIN_NATIVE_CXX false)
endif()

# ISA flags are set per source file, never globally, so the reference and lower-ISA paths stay
# what they claim to be and the run-time cap can test each of them on one machine.
set(SPARSETRAIN_AVX2_FLAGS -mavx2 -mfma -mno-avx512f)
# -Wno-maybe-uninitialized: GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps);
# clang (fuzz builds) has no such warning and would warn about the unknown option.
set(SPARSETRAIN_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma
  $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
# The bf16 kernels' vdpbf16ps entries: AVX-512 with AVX512-BF16, chosen at run time like the rest.
set(SPARSETRAIN_AVX512_BF16_FLAGS ${SPARSETRAIN_AVX512_FLAGS} -mavx512bf16)

function(sparsetrain_isa_sources isa)
  foreach(src IN LISTS ARGN)
    set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${SPARSETRAIN_${isa}_FLAGS}")
  endforeach()
endfunction()

# sparsetrain_add_test(name SOURCES a.cpp ... LABELS unit ...)
# ctest -j runs several OpenMP programs at once; threads that spin at barriers while another
# program needs the core slow a test by 10-80x (test_trainer: 0.4 s alone, 32 s beside another).
# Waiting threads sleep instead.
set(SPARSETRAIN_TEST_ENVIRONMENT "OMP_WAIT_POLICY=passive")
# Tests that start mpirun: Open MPI refuses to run as root (as CI does) without the first two; the
# rest keep LeakSanitizer (sanitizer builds) to sparsetrain's own leaks: Open MPI's components stay
# loaded so that their allocations, kept until exit, match tests/lsan_mpi.supp.
set(SPARSETRAIN_MPI_TEST_ENVIRONMENT "${SPARSETRAIN_TEST_ENVIRONMENT};OMPI_ALLOW_RUN_AS_ROOT=1"
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mca_base_component_disable_dlclose=1"
  "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan_mpi.supp:fast_unwind_on_malloc=0")

function(sparsetrain_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE sparsetrain::sparsetrain GTest::gtest GTest::gtest_main
    sparsetrain_options)
  # The test's own folder, and tests/ for the headers every test folder shares.
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" ENVIRONMENT "${SPARSETRAIN_TEST_ENVIRONMENT}")
endfunction()
