"""Compiler options shared by every target of the project (the C++ standard is in .bazelrc)."""

# -ffp-contract=off: GCC fuses a * b + c into one fused multiply-add where the target has one
# (aarch64 always; x86-64 only with -mfma, which the build does not pass), and the fused result
# rounds once instead of twice. The cost model's doubles, and the integers the solver's costs are
# rounded to, must be the same bits on Arm hosts (Grace) as on x86-64: tools/arm_check.
TOPOEP_COPTS = [
    "-ffp-contract=off",
    "-Wall",
    "-Wextra",
    "-Wshadow",
    "-Wnon-virtual-dtor",
    "-Werror",
]

# Tests and benchmarks: the same, less -Wshadow, which GoogleTest fixtures and parameterised
# test macros trip by design.
TOPOEP_TEST_COPTS = [
    "-ffp-contract=off",
    "-Wall",
    "-Wextra",
    "-Werror",
]

# The solver's hot paths (the TopoEP search, plan pricing and hashing): -O3 in optimised builds,
# where GCC's -O2 leaves their loops unvectorised (measured in bench/README.md). They decide in
# integer arithmetic, and -O3 reassociates no floating point (that needs -ffast-math), so plans,
# hashes and prices are the same bits at any optimisation level. The simulator keeps the
# default.
TOPOEP_HOT_COPTS = TOPOEP_COPTS + select({
    "//tools/build_defs:optimized": ["-O3"],
    "//conditions:default": [],
})
