{
  # One translation unit per instruction set, each with its own target flags (no -march=native): every x86-64
  # machine compiles every path, and dispatch.cc picks one at load. The baseline objects (the glue, the dispatch, the
  # file reads, the pool and the portable path) are linked first, so the standard library's shared template code
  # comes from them.
  "target_defaults": {
    "cflags_cc!": ["-O2", "-O3", "-fno-exceptions"],
    "cflags_cc": ["-O3", "-std=c++17", "-ffp-contract=off", "-pthread", "-fno-exceptions", "-Wall", "-Wextra"]
  },
  "targets": [
    {
      "target_name": "iwibench_kernels",
      "sources": ["addon.cc", "dispatch.cc", "pool.cc", "file-read.cc", "isa-portable.cc"],
      "ldflags": ["-pthread"],
      "conditions": [["target_arch=='x64'", {"dependencies": ["isa_avx2", "isa_avx512", "isa_amx"]}]]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "isa_avx2",
          "type": "static_library",
          "sources": ["isa-avx2.cc"],
          "cflags_cc": ["-mavx2", "-mfma", "-fPIC"]
        },
        {
          "target_name": "isa_avx512",
          "type": "static_library",
          "sources": ["isa-avx512.cc"],
          "cflags_cc": ["-mavx2", "-mfma", "-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-fPIC"]
        },
        {
          "target_name": "isa_amx",
          "type": "static_library",
          "sources": ["isa-amx.cc"],
          "cflags_cc": ["-mavx2", "-mfma", "-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx512bf16",
                        "-mamx-tile", "-mamx-bf16", "-fPIC"]
        }
      ]
    }]
  ]
}
