// Which path runs each op (dispatch.cc): one record, chosen once when the addon loads, from what the CPU has.
#pragma once

#include <string>
#include <vector>

#include "ops.h"

namespace iwi {

// The paths, lowest first: each runs on every CPU that runs the next.
enum class Isa { portable, avx2, avx512, amx };

const char* isaName(Isa isa);

// The paths this CPU (and OS) can run, lowest first; amx only where the tile unit is granted and its sums are the
// arithmetic's (its probe: amxStatus).
std::vector<Isa> availableIsas();

// Why AMX is or is not used: "used", or the reason.
std::string amxStatus();

// The path in force: every op but bf16's products and their gated form runs `ops()`; those run on AMX where isa()
// is amx.
Isa isa();
const Ops& ops();

// Chooses another path (tests, benchmarks, IWIBENCH_ISA); an error message if the CPU cannot run it, else empty.
std::string useIsa(const std::string& name);

}  // namespace iwi
