"""fuzz_target: a libFuzzer binary, built only under --config=fuzz (clang), skipped elsewhere."""

load("//tools/build_defs:copts.bzl", "TOPOEP_TEST_COPTS")

FUZZ_ONLY = select({
    "//tools/build_defs:fuzz_enabled": [],
    "//conditions:default": ["//tools/build_defs:incompatible"],
})

def fuzz_target(name, srcs, deps = []):
    native.cc_binary(
        name = name,
        srcs = srcs,
        copts = TOPOEP_TEST_COPTS,
        linkopts = ["-fsanitize=fuzzer"],
        target_compatible_with = FUZZ_ONLY,
        testonly = True,
        deps = deps,
    )
