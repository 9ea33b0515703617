#pragma once
/// The floating-point environment lockstep's determinism needs (docs/DETERMINISM.md, rules 1 to 3), checked
/// where it can be and enforced where it must be, in every translation unit that includes an
/// engine header — a user's own simulation included, whatever build system compiles it.
///
/// 1. Every double operation rounds once, to double: no excess precision. 32-bit x86 compilers
///    default to the x87 unit (`FLT_EVAL_METHOD` 2), whose 80-bit intermediates give other bits
///    than every other machine. There, compile with `-msse2 -mfpmath=sse` (lockstep's CMake
///    targets add them as a usage requirement); anything else refuses to compile here.
/// 2. No `-ffast-math` or its parts (finite-only, reciprocal, associative math): refused here.
/// 3. No contraction of `a*b + c` into one fused multiply-add, whose single rounding differs from
///    a multiply then an add. Lockstep's targets pass `-ffp-contract=off` to everything that links
///    them. For code compiled without it, the arithmetic that engine headers define inline sits
///    between `LOCKSTEP_NO_CONTRACTION_BEGIN` and `LOCKSTEP_NO_CONTRACTION_END`, and each such
///    function body starts with `LOCKSTEP_NO_CONTRACTION_HERE`, so no compiler contracts it under
///    its default settings (g++ -std=gnu++20 contracts across statements by default, clang++ within
///    an expression). Only clang's explicit `-ffp-contract=fast` overrides the pragma: don't.
///    A user's own step code is the user's: compile it with `-ffp-contract=off`.

#include <cfloat>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "lockstep: floating point here is evaluated with excess precision (FLT_EVAL_METHOD != 0), so hashes would differ from every other machine; on 32-bit x86 compile with -msse2 -mfpmath=sse (link the lockstep:: CMake targets to get them)"
#endif

#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__) || \
    defined(__RECIPROCAL_MATH__) || defined(__ASSOCIATIVE_MATH__)
#error "lockstep: -ffast-math, -Ofast, -ffinite-math-only, -freciprocal-math and -fassociative-math break bit-exact determinism; build without them"
#endif

#if defined(__clang__)
// Clang scopes its contraction pragma to the compound statement it starts.
#define LOCKSTEP_NO_CONTRACTION_BEGIN
#define LOCKSTEP_NO_CONTRACTION_END
#define LOCKSTEP_NO_CONTRACTION_HERE _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
// g++ ignores the standard FP_CONTRACT pragma in C++; an optimize region gives every function
// defined inside it -ffp-contract=off. g++ 12 does not inline these functions into a caller whose
// options differ, so their bits stay those of separate multiplies and adds — an inliner detail,
// not a promise, which is why scripts/cross-check.sh disassembles a probe compiled without
// lockstep's flags on every architecture in CI. The regions hold only the functions that do
// their own multiply-adds, so nothing else loses inlining.
#define LOCKSTEP_NO_CONTRACTION_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC optimize(\"fp-contract=off\")")
#define LOCKSTEP_NO_CONTRACTION_END _Pragma("GCC pop_options")
#define LOCKSTEP_NO_CONTRACTION_HERE
#else
#define LOCKSTEP_NO_CONTRACTION_BEGIN
#define LOCKSTEP_NO_CONTRACTION_END
#define LOCKSTEP_NO_CONTRACTION_HERE
#endif
