// The dispatch record (dispatch.h). The widest path the CPU runs is chosen at load; AMX joins only after its probe:
// the tile unit's sums on fixed data must equal the portable path's bit for bit (arithmetic.h), else the CPU's
// AVX-512 path takes bf16's products too and amxStatus says why. Compiled for the baseline instruction set.
#include "dispatch.h"

#include "arithmetic.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace iwi {
namespace {

bool cpuRuns(Isa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  switch (isa) {
    case Isa::portable: return true;
    case Isa::avx2: return avx2;
    case Isa::avx512: return avx512;
    case Isa::amx: return avx512 && __builtin_cpu_supports("avx512bf16") && amx::granted();
  }
  return false;
#else
  return isa == Isa::portable;
#endif
}

const Ops& opsOf(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx2) return avx2::ops();
  if (isa == Isa::avx512 || isa == Isa::amx) return avx512::ops();
#endif
  (void)isa;
  return portable::ops();
}

#if defined(__x86_64__)
// The probe: products of fixed, varied data (signs mixed, exponents over ±30, k with a partial block, rows and
// outputs past whole tiles) on the tile unit and on the portable path, compared bit for bit. "" if they agree.
std::string probeAmx() {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  auto value = [&] {
    const uint64_t r = next();
    const float mantissa = 1.0f + static_cast<float>(r & 0xffff) / 65536.0f;
    const int exponent = static_cast<int>((r >> 16) % 61) - 30;
    return ((r >> 24) & 1 ? -1.0f : 1.0f) * __builtin_ldexpf(mantissa, exponent);
  };
  for (const size_t k : {64u, 100u}) {
    const size_t m = 37, n = 40;
    std::vector<float> x(m * k), fromAmx(m * n), fromPortable(m * n);
    std::vector<uint16_t> w(n * k);
    for (float& v : x) v = value();
    for (uint16_t& v : w) v = static_cast<uint16_t>(roundBf16Bits(floatBits(value())) >> 16);
    for (const bool roundOutput : {false, true}) {
      const ProductMode mode{true, roundOutput};
      const Part a{w.data(), fromAmx.data(), n}, p{w.data(), fromPortable.data(), n};
      if (!amx::products(x.data(), &a, 1, m, k, mode) || !portable::ops().products(x.data(), &p, 1, m, k, mode))
        return "its probe could not allocate its scratch";
      if (std::memcmp(fromAmx.data(), fromPortable.data(), m * n * sizeof(float)) != 0)
        return "its sums differ from the arithmetic's on the probe (the tile order of engine/native/arithmetic.h)";
    }
  }
  return "";
}
#endif

struct State {
  Isa isa = Isa::portable;
  std::string amx;
};

State& state() {
  static State s = [] {
    State s;
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16") ||
        !__builtin_cpu_supports("avx512bf16") || !cpuRuns(Isa::avx512))
      s.amx = "the CPU has no AMX-BF16";
    else if (!amx::granted()) s.amx = "the OS did not grant this process the tile state";
    else s.amx = probeAmx();
    if (s.amx.empty()) s.amx = "used";
#else
    s.amx = "not an x86-64 CPU";
#endif
    for (const Isa isa : {Isa::avx2, Isa::avx512, Isa::amx})
      if (cpuRuns(isa) && (isa != Isa::amx || s.amx == "used")) s.isa = isa;
    return s;
  }();
  return s;
}

}  // namespace

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::amx: return "amx";
  }
  return "?";
}

std::vector<Isa> availableIsas() {
  std::vector<Isa> out;
  for (const Isa isa : {Isa::portable, Isa::avx2, Isa::avx512, Isa::amx})
    if (cpuRuns(isa) && (isa != Isa::amx || state().amx == "used")) out.push_back(isa);
  return out;
}

std::string amxStatus() { return state().amx; }

Isa isa() { return state().isa; }

const Ops& ops() { return opsOf(state().isa); }

std::string useIsa(const std::string& name) {
  for (const Isa isa : {Isa::portable, Isa::avx2, Isa::avx512, Isa::amx}) {
    if (name != isaName(isa)) continue;
    for (const Isa have : availableIsas())
      if (have == isa) {
        state().isa = isa;
        return "";
      }
    std::string have;
    for (const Isa a : availableIsas()) have += std::string(have.empty() ? "" : ", ") + isaName(a);
    return name + " is above what this CPU runs (" + have + ")" +
           (isa == Isa::amx ? std::string("; AMX: ") + state().amx : std::string());
  }
  return "\"" + name + "\" names no path (portable, avx2, avx512, amx)";
}

}  // namespace iwi
