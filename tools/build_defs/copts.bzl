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
