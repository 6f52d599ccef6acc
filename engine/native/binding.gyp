{
  "targets": [
    {
      "target_name": "iwibench_kernels",
      "sources": ["kernels.cc"],
      "cflags_cc!": ["-O2", "-O3", "-fno-exceptions"],
      "cflags_cc": ["-O3", "-march=native", "-std=c++17", "-ffp-contract=off", "-pthread", "-fno-exceptions", "-Wall", "-Wextra"],
      "ldflags": ["-pthread"]
    }
  ]
}
