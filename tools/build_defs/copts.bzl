"""Compiler options shared by every target of the project (the C++ standard is in .bazelrc)."""

TOPOEP_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wshadow",
    "-Wnon-virtual-dtor",
    "-Werror",
]

# Tests and benchmarks: the same, less -Wshadow, which GoogleTest fixtures and parameterised
# test macros trip by design.
TOPOEP_TEST_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
]

# The solver's integer hot paths (the TopoEP search, plan pricing and hashing): -O3 in optimised
# builds, where GCC's -O2 leaves their loops unvectorised (measured in bench/README.md). Integer
# arithmetic only, so the plans and hashes are the same bits at any optimisation level; the
# simulator's floating-point code keeps the default.
TOPOEP_HOT_COPTS = TOPOEP_COPTS + select({
    "//tools/build_defs:optimized": ["-O3"],
    "//conditions:default": [],
})
