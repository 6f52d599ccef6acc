// One instruction-set path: every op of ops.h compiled with this translation unit's target flags (binding.gyp), in a
// namespace of its own. Its code has internal linkage; the standard library's templates it shares with the other
// paths are linked from the baseline path first (binding.gyp's order; test/engine/native-build.test.ts checks that
// no shared copy holds a wider instruction), so a lower path never runs a wider one's code.
// The including file defines IWI_PATH (the namespace) and IWI_PATH_NAME.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "arithmetic.h"
#include "ops.h"
#include "pool.h"

#if defined(__AVX2__) && defined(__FMA__)
// GCC 12's AVX-512 intrinsics set their "undefined" operands from themselves, which -Wmaybe-uninitialized (and, for
// the reductions, -Wuninitialized) reports at every use; the warning is about the header's code, not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define IWI_AVX2 1
#else
#define IWI_AVX2 0
#endif
#if IWI_AVX2 && defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__)
#define IWI_AVX512 1
#else
#define IWI_AVX512 0
#endif

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace iwi {
namespace IWI_PATH {
namespace {
#include "pointwise.h"
#include "vocab.h"
#include "attention.h"
#include "products.h"
}  // namespace

const Ops& ops() {
  static const Ops table = {IWI_PATH_NAME, products,   attendDecode, attendChunk,   residualNorm, rmsNorm, normRope,
                            gatedGelu,     roundBf16,  argmaxRows,   vocabPartials, widen,        readBandwidth, peakFma};
  return table;
}

}  // namespace IWI_PATH
}  // namespace iwi

#pragma GCC diagnostic pop
