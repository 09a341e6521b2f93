# trident_target_defaults(TARGET): warnings (our own code only), -Werror and sanitizers.
set(TRIDENT_WARNING_FLAGS
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
    -Woverloaded-virtual -Wimplicit-fallthrough -Wformat=2)
# GCC 12 reports false -Wrestrict positives inside libstdc++'s std::string at -O3
# (GCC bug 105651); they are not about our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND TRIDENT_WARNING_FLAGS -Wno-restrict)
endif()

if(TRIDENT_SANITIZE)
  string(REPLACE ";" "," _trident_san "${TRIDENT_SANITIZE}")
  add_compile_options(-fsanitize=${_trident_san} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_trident_san})
  message(STATUS "Trident: sanitizers ${_trident_san}")
endif()

# The CPU the C++ is compiled for, recorded in every build string (core/version.cc): profiles
# and `trident run`'s cache tell a -march=native build from another.
set(TRIDENT_CPU_TARGET "baseline CPU")
if(TRIDENT_NATIVE_ARCH)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native TRIDENT_HAVE_MARCH_NATIVE)
  if(TRIDENT_HAVE_MARCH_NATIVE)
    # C++ only: the gain is in Eigen's kernels, and no CUDA source includes Eigen.
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
    set(TRIDENT_CPU_TARGET "-march=native")
    # GCC before 12.3 reports the AVX-512 intrinsics' deliberately undefined merge operands
    # (`__m512 __Y = __Y;` in avx512fintrin.h) as uninitialized wherever Eigen's packet math
    # inlines them (GCC bug 105593); they are not about our code. The CPU kernels' target
    # (runtime/compute) leaves those two warnings out.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 12.3)
      set(TRIDENT_EIGEN_WARNING_FLAGS -Wno-uninitialized -Wno-maybe-uninitialized)
    endif()
    message(STATUS "Trident: C++ compiled for this CPU (-march=native)")
  else()
    message(STATUS "Trident: the compiler has no -march=native; the compiler's baseline CPU")
  endif()
endif()

# CUDA sources: nvcc's own warnings, and the host compiler's -Wall -Wextra on the host side
# (-Wpedantic and -Wold-style-cast would fire inside the CUDA headers).
set(TRIDENT_CUDA_WARNING_FLAGS -Xcompiler=-Wall,-Wextra,-Wshadow)

function(trident_target_defaults target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${TRIDENT_WARNING_FLAGS}>
                                           $<$<COMPILE_LANGUAGE:CUDA>:${TRIDENT_CUDA_WARNING_FLAGS}>)
  if(TRIDENT_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endfunction()
