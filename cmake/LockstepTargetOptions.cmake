# Flags are set per target, never globally, so that a project embedding lockstep keeps its own.

include(CheckCXXSourceCompiles)

# Warnings on every lockstep target; -Werror only when LOCKSTEP_WERROR is on (CI).
function(lockstep_enable_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
    -Wold-style-cast -Wnon-virtual-dtor)
  if(LOCKSTEP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# 32-bit x86 compilers default to x87 arithmetic, whose 80-bit intermediates (FLT_EVAL_METHOD 2)
# give other bits than every other machine; SSE2 rounds every double operation to double, as
# x86-64, aarch64, riscv64 and s390x do. Asked of the compiler rather than of
# CMAKE_SYSTEM_PROCESSOR, so that -m32 in the user's flags is caught too.
check_cxx_source_compiles("
#if !defined(__i386__)
#error not 32-bit x86
#endif
int main() { return 0; }" LOCKSTEP_TARGET_IS_X86_32)

# Determinism rules 1 and 2 (docs/DETERMINISM.md): no contraction of a*b+c into an FMA, whose
# single rounding would give different bits than the separate multiply and add of another build,
# and no excess precision. PUBLIC, so that everything linking a lockstep module, user simulations
# included, inherits them.
function(lockstep_determinism_flags target)
  set(flags -ffp-contract=off)
  if(LOCKSTEP_TARGET_IS_X86_32)
    list(APPEND flags -msse2 -mfpmath=sse)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_compile_options(${target} INTERFACE ${flags})
  else()
    target_compile_options(${target} PUBLIC ${flags})
  endif()
endfunction()

# Both at once, for every target the project defines.
function(lockstep_target_options target)
  lockstep_determinism_flags(${target})
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    lockstep_enable_warnings(${target})
  endif()
endfunction()
