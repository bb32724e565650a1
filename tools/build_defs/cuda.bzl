"""cuda_library: compiles .cu files with nvcc into a library that cc targets can link.

The targets exist in every build but are compatible only under `--config=cuda`; elsewhere
`bazel build //...` and `bazel test //...` skip them (and whatever depends on them) instead of
failing, so machines without nvcc still build and test everything else.
"""

_NVCC = "/usr/local/cuda/bin/nvcc"

# sm_90 (H100/H200/H800) and sm_80 (A100). Each -gencode adds SASS; compute_90 PTX lets newer
# GPUs (Blackwell) JIT the kernels.
_GENCODE = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
]

def _cuda_objects_impl(ctx):
    compilation = cc_common.merge_cc_infos(
        cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
    ).compilation_context

    flags = ["-std=c++17", "-O3", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC"]
    flags += _GENCODE + ctx.attr.nvcc_flags
    flags += ["-I.", "-I" + ctx.bin_dir.path]
    for path in compilation.quote_includes.to_list() + compilation.includes.to_list():
        flags.append("-I" + path)
    for path in compilation.system_includes.to_list():
        flags += ["-isystem", path]
    for define in compilation.defines.to_list():
        flags.append("-D" + define)

    inputs = depset(ctx.files.srcs + ctx.files.hdrs, transitive = [compilation.headers])
    objects = []
    for src in ctx.files.srcs:
        obj = ctx.actions.declare_file("_cuda_objs/{}/{}.o".format(ctx.label.name, src.basename))
        ctx.actions.run(
            executable = _NVCC,
            arguments = flags + ["-c", src.path, "-o", obj.path],
            inputs = inputs,
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc {}".format(src.short_path),
            use_default_shell_env = True,  # nvcc finds the host g++ on PATH
        )
        objects.append(obj)
    return [DefaultInfo(files = depset(objects))]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "nvcc_flags": attr.string_list(),
    },
)

CUDA_ONLY = select({
    "//tools/build_defs:cuda_enabled": [],
    "//conditions:default": ["//tools/build_defs:incompatible"],
})

def if_cuda(if_true, if_false = []):
    """`if_true` under --config=cuda, else `if_false` (for deps and defines of host targets)."""
    return select({
        "//tools/build_defs:cuda_enabled": if_true,
        "//conditions:default": if_false,
    })

def cuda_library(name, srcs, hdrs = [], deps = [], nvcc_flags = [], visibility = None, **kwargs):
    """A cc_library whose .cu sources are compiled by nvcc; skipped unless --config=cuda.

    Args:
      name: the cc_library's name.
      srcs: .cu files.
      hdrs: the library's public headers (plain C++, includable from host code).
      deps: cc libraries whose headers the .cu files include; also linked.
      nvcc_flags: extra nvcc flags.
      visibility: as for cc_library.
      **kwargs: passed to cc_library.
    """
    _cuda_objects(
        name = name + "_nvcc",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps,
        nvcc_flags = nvcc_flags,
        target_compatible_with = CUDA_ONLY,
        visibility = ["//visibility:private"],
    )
    # Never a shared object: the CUDA runtime is linked statically (libcudart_static.a) into
    # the executable, which does not export it, so a test linking this library as a .so (as
    # cc_test does by default) died at load with "undefined symbol: __cudaPopCallConfiguration"
    # on every machine, a GPU's too.
    native.cc_library(
        name = name,
        srcs = [":" + name + "_nvcc"],
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart"],
        linkstatic = True,
        target_compatible_with = CUDA_ONLY,
        visibility = visibility,
        **kwargs
    )
