# Flags are set per target, never globally, so that a project embedding lockstep keeps its own.

# Warnings on every lockstep target; -Werror only when LOCKSTEP_WERROR is on (CI).
function(lockstep_enable_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
    -Wold-style-cast -Wnon-virtual-dtor)
  if(LOCKSTEP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Determinism rule 1 (DESIGN.md): no contraction of a*b+c into an FMA, whose single rounding
# would give different bits than the separate multiply and add of another build. The option is
# PUBLIC so that everything linking a lockstep module, user simulations included, inherits it.
function(lockstep_determinism_flags target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_compile_options(${target} INTERFACE -ffp-contract=off)
  else()
    target_compile_options(${target} PUBLIC -ffp-contract=off)
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
