"""embed_files: compiles text files into a library as `const std::vector<EmbeddedFile>& FN()`."""

def embed_files(name, srcs, function_name, visibility = None):
    """Declares cc_library `name` that defines `function_name` over `srcs` (sorted by label).

    The caller declares the function in its own header; the entries keep the order of `srcs`.
    """
    native.genrule(
        name = name + "_gen",
        srcs = srcs,
        outs = [name + ".cc"],
        cmd = "$(location //tools/build_defs:embed_files) $@ {} $(SRCS)".format(function_name),
        tools = ["//tools/build_defs:embed_files"],
    )
    native.cc_library(
        name = name,
        srcs = [name + ".cc"],
        deps = ["//tools/build_defs:embedded_file"],
        visibility = visibility,
    )
