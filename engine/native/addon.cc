#include <node_api.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "dispatch.h"
#include "file-read.h"
#include "pool.h"

// The Node-API glue: every entry point checks its arguments (a bad call writes nothing and throws a clear error),
// then runs the op of the path in force (dispatch.h). Compiled for the baseline instruction set.
namespace iwi {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// Node-API glue: every argument is checked before anything is written.

napi_value throwError(napi_env env, bool range, const char* message) {
  if (range) napi_throw_range_error(env, nullptr, message);
  else napi_throw_type_error(env, nullptr, message);
  return nullptr;
}

size_t elementSize(napi_typedarray_type type) {
  switch (type) {
    case napi_int16_array:
    case napi_uint16_array: return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array: return 4;
    case napi_float64_array:
    case napi_bigint64_array:
    case napi_biguint64_array: return 8;
    default: return 1;
  }
}

struct View {
  void* data = nullptr;
  size_t length = 0;      // elements
  size_t byteLength = 0;
};

bool typedArray(napi_env env, napi_value value, napi_typedarray_type want, View& view) {
  bool is = false;
  if (napi_is_typedarray(env, value, &is) != napi_ok || !is) return false;
  napi_typedarray_type type;
  napi_value buffer;
  size_t offset;
  if (napi_get_typedarray_info(env, value, &type, &view.length, &view.data, &buffer, &offset) != napi_ok) return false;
  if (type != want) return false;
  view.byteLength = view.length * elementSize(want);
  return true;
}

// A positive integer below 2^31.
bool dimension(napi_env env, napi_value value, size_t& out) {
  double d;
  if (napi_get_value_double(env, value, &d) != napi_ok) return false;
  if (!(d >= 1 && d < 2147483648.0) || std::floor(d) != d) return false;
  out = static_cast<size_t>(d);
  return true;
}

bool overlaps(const View& a, const View& b) {
  auto a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  return a.byteLength && b.byteLength && a0 < b0 + b.byteLength && b0 < a0 + a.byteLength;
}

// The arguments (x, ws, outs, m, k) of products, checked: outs[p] [m × n_p] = x [m × k] ·
// ws[p]ᵀ with n_p = ws[p].length / k. Returns false with an exception pending if any check fails.
struct PartsCall {
  const float* x;
  std::vector<Part> parts;
  size_t m, k;
};

bool partsCall(napi_env env, napi_callback_info info, const char* name, PartsCall& call, size_t arguments = 5) {
  auto fail = [&](bool range, const char* what) {
    std::string message = std::string(name) + what;
    throwError(env, range, message.c_str());
    return false;
  };
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != arguments) return fail(false, (" takes " + std::to_string(arguments) + " arguments").c_str());
  View x;
  if (!typedArray(env, argv[0], napi_float32_array, x)) return fail(false, ": x must be a Float32Array");
  bool wsArray = false, outsArray = false;
  napi_is_array(env, argv[1], &wsArray);
  napi_is_array(env, argv[2], &outsArray);
  if (!wsArray || !outsArray) return fail(false, ": ws and outs must be arrays");
  uint32_t count = 0, outCount = 0;
  napi_get_array_length(env, argv[1], &count);
  napi_get_array_length(env, argv[2], &outCount);
  if (count == 0 || count != outCount) return fail(true, ": ws and outs must have the same length, at least 1");
  if (!dimension(env, argv[3], call.m) || !dimension(env, argv[4], call.k)) return fail(true, ": m and k must be integers in [1, 2^31)");
  const size_t m = call.m, k = call.k;
  if (x.length != m * k) return fail(true, ": x.length must be m·k");
  std::vector<View> ws(count), outs(count);
  for (uint32_t p = 0; p < count; p++) {
    napi_value w, out;
    napi_get_element(env, argv[1], p, &w);
    napi_get_element(env, argv[2], p, &out);
    if (!typedArray(env, w, napi_uint16_array, ws[p])) return fail(false, ": each w must be a Uint16Array of BF16 bits");
    if (!typedArray(env, out, napi_float32_array, outs[p])) return fail(false, ": each out must be a Float32Array");
    const size_t n = ws[p].length / k;
    if (n == 0 || ws[p].length != n * k) return fail(true, ": each w.length must be n·k, n ≥ 1");
    if (outs[p].length != m * n) return fail(true, ": each out.length must be m·n");
    call.parts.push_back({static_cast<const uint16_t*>(ws[p].data), static_cast<float*>(outs[p].data), n});
  }
  for (uint32_t p = 0; p < count; p++) {
    bool shared = overlaps(outs[p], x);
    for (uint32_t q = 0; q < count; q++) shared = shared || overlaps(outs[p], ws[q]) || (q != p && overlaps(outs[p], outs[q]));
    if (shared) return fail(false, ": an out must not share memory with x, a w or another out");
  }
  call.x = static_cast<const float*>(x.data);
  return true;
}


// products(x, ws, outs, m, k, bf16, roundOutput): outs[p] [m × n_p] = x [m × k] · ws[p]ᵀ in the tile order
// (arithmetic.h), in bf16 precision's or float32's; on AMX where it is in force and the precision is bf16.
napi_value Products(napi_env env, napi_callback_info info) {
  PartsCall call;
  if (!partsCall(env, info, "products", call, 7)) return nullptr;
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  ProductMode mode{};
  if (napi_get_value_bool(env, argv[5], &mode.bf16) != napi_ok ||
      napi_get_value_bool(env, argv[6], &mode.roundOutput) != napi_ok)
    return throwError(env, false, "products: bf16 and roundOutput must be booleans");
#if defined(__x86_64__)
  const bool done = isa() == Isa::amx && mode.bf16
                        ? amx::products(call.x, call.parts.data(), call.parts.size(), call.m, call.k, mode)
                        : ops().products(call.x, call.parts.data(), call.parts.size(), call.m, call.k, mode);
#else
  const bool done = ops().products(call.x, call.parts.data(), call.parts.size(), call.m, call.k, mode);
#endif
  if (!done) return throwError(env, true, "products: out of memory for its scratch (x once, a panel a thread)");
  return nullptr;
}

// gatedProducts(x, gate, up, z, m, k, roundOutput): z [m × n] = gelu_tanh(x · gateᵀ) · (x · upᵀ) in bf16 precision,
// the products as `products` writes them, then gatedGelu's steps, in one pass on AMX (where it is in force only).
napi_value GatedProducts(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) { return throwError(env, range, (std::string("gatedProducts") + what).c_str()); };
  if (isa() != Isa::amx) return fail(false, ": AMX is not the path in force");
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 7) return fail(false, " takes 7 arguments");
  View x, gate, up, z;
  if (!typedArray(env, argv[0], napi_float32_array, x) || !typedArray(env, argv[3], napi_float32_array, z))
    return fail(false, ": x and z must be Float32Arrays");
  if (!typedArray(env, argv[1], napi_uint16_array, gate) || !typedArray(env, argv[2], napi_uint16_array, up))
    return fail(false, ": gate and up must be Uint16Arrays of BF16 bits");
  size_t m, k;
  if (!dimension(env, argv[4], m) || !dimension(env, argv[5], k)) return fail(true, ": m and k must be integers in [1, 2^31)");
  ProductMode mode{true, false};
  if (napi_get_value_bool(env, argv[6], &mode.roundOutput) != napi_ok) return fail(false, ": roundOutput must be a boolean");
  const size_t n = gate.length / k;
  if (x.length != m * k) return fail(true, ": x.length must be m·k");
  if (n == 0 || gate.length != n * k || up.length != gate.length) return fail(true, ": gate and up must both be n·k long, n ≥ 1");
  if (z.length != m * n) return fail(true, ": z.length must be m·n");
  if (overlaps(z, x) || overlaps(z, gate) || overlaps(z, up)) return fail(false, ": z must not share memory with x, gate or up");
#if defined(__x86_64__)
  if (amx::gatedProducts(static_cast<const float*>(x.data), static_cast<const uint16_t*>(gate.data),
                         static_cast<const uint16_t*>(up.data), static_cast<float*>(z.data), n, m, k, mode))
    return nullptr;
#endif
  return fail(true, ": out of memory for the rounding of x (2 bytes per element)");
}

// rmsNorm(x, scale, y, eps): y = Gemma3RMSNorm(x) row by row, H = scale.length.
napi_value RmsNorm(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) { return throwError(env, range, (std::string("rmsNorm") + what).c_str()); };
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 4) return fail(false, " takes 4 arguments");
  View x, scale, y;
  if (!typedArray(env, argv[0], napi_float32_array, x) || !typedArray(env, argv[1], napi_float32_array, scale) ||
      !typedArray(env, argv[2], napi_float32_array, y))
    return fail(false, ": x, scale and y must be Float32Arrays");
  double eps;
  if (napi_get_value_double(env, argv[3], &eps) != napi_ok || !(eps >= 0) || !std::isfinite(eps))
    return fail(true, ": eps must be a finite number ≥ 0");
  const size_t H = scale.length;
  if (H == 0 || x.length == 0 || x.length % H != 0 || y.length != x.length)
    return fail(true, ": scale must hold H ≥ 1 floats, x and y the same rows·H");
  if (overlaps(y, x) || overlaps(y, scale)) return fail(false, ": y must not share memory with x or scale");
  ops().rmsNorm(static_cast<const float*>(x.data), static_cast<const float*>(scale.data), static_cast<float*>(y.data),
                x.length / H, H, static_cast<float>(eps));
  return nullptr;
}

// The shape arguments of attendDecode and attendChunk (heads, kvHeads, headDim, scaling, window, bf16Probabilities)
// into `shape`; what is wrong with them, or nullptr.
const char* attentionShape(napi_env env, const napi_value* argv, AttentionShape& shape) {
  double scaling, window;
  if (!dimension(env, argv[0], shape.heads) || !dimension(env, argv[1], shape.kvHeads) ||
      !dimension(env, argv[2], shape.D) || shape.heads % shape.kvHeads != 0)
    return ": heads, kvHeads and headDim must be integers ≥ 1, heads a multiple of kvHeads";
  if (napi_get_value_double(env, argv[3], &scaling) != napi_ok || !std::isfinite(scaling) ||
      napi_get_value_double(env, argv[4], &window) != napi_ok || !(window >= 0 && window < 2147483648.0) ||
      std::floor(window) != window)
    return ": scaling must be a finite number and window an integer ≥ 0";
  if (napi_get_value_bool(env, argv[5], &shape.bf16Probabilities) != napi_ok)
    return ": bf16Probabilities must be a boolean";
  shape.scaling = static_cast<float>(scaling);
  shape.window = static_cast<int32_t>(window);
  return nullptr;
}

// attendDecode(queries, keys, values, out, pastKeys, pastValues, slots, positions, heads, kvHeads, headDim, scaling,
// window, bf16Probabilities): R = positions.length rows; queries and out [R × heads × D], keys and values
// [R × kvHeads × D]; per row r pastKeys[r] and pastValues[r] [kvHeads × S_r × D] with S_r = slots[r].length.
napi_value AttendDecode(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("attendDecode") + what).c_str());
  };
  size_t argc = 14;
  napi_value argv[14];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 14) return fail(false, " takes 14 arguments");
  View queries, keys, values, out, positions;
  if (!typedArray(env, argv[0], napi_float32_array, queries) || !typedArray(env, argv[1], napi_float32_array, keys) ||
      !typedArray(env, argv[2], napi_float32_array, values) || !typedArray(env, argv[3], napi_float32_array, out))
    return fail(false, ": queries, keys, values and out must be Float32Arrays");
  if (!typedArray(env, argv[7], napi_int32_array, positions)) return fail(false, ": positions must be an Int32Array");
  AttentionShape shape;
  if (const char* problem = attentionShape(env, argv + 8, shape)) return fail(true, problem);
  const size_t R = positions.length, H = shape.heads * shape.D, KV = shape.kvHeads * shape.D;
  if (R == 0 || queries.length != R * H || out.length != R * H || keys.length != R * KV || values.length != R * KV)
    return fail(true, ": queries and out must hold R·heads·D floats, keys and values R·kvHeads·D (R = positions.length ≥ 1)");
  for (int a = 4; a < 7; a++) {
    bool array = false;
    uint32_t length = 0;
    napi_is_array(env, argv[a], &array);
    if (array) napi_get_array_length(env, argv[a], &length);
    if (!array || length != R) return fail(false, ": pastKeys, pastValues and slots must be arrays of R entries");
  }
  std::vector<DecodeRow> rows(R);
  std::vector<View> pasts;
  for (size_t r = 0; r < R; r++) {
    napi_value pk, pv, sl;
    View key, value, slots;
    napi_get_element(env, argv[4], static_cast<uint32_t>(r), &pk);
    napi_get_element(env, argv[5], static_cast<uint32_t>(r), &pv);
    napi_get_element(env, argv[6], static_cast<uint32_t>(r), &sl);
    if (!typedArray(env, pk, napi_float32_array, key) || !typedArray(env, pv, napi_float32_array, value) ||
        !typedArray(env, sl, napi_int32_array, slots))
      return fail(false, ": each row needs a Float32Array past key and value and an Int32Array of slot positions");
    if (key.length != KV * slots.length || value.length != KV * slots.length)
      return fail(true, ": a row's past key and value must hold kvHeads·S·D floats for its S slots");
    pasts.push_back(key);
    pasts.push_back(value);
    rows[r] = {static_cast<const float*>(key.data), static_cast<const float*>(value.data),
               static_cast<const int32_t*>(slots.data), slots.length, static_cast<const int32_t*>(positions.data)[r]};
  }
  bool shared = overlaps(out, queries) || overlaps(out, keys) || overlaps(out, values);
  for (const View& past : pasts) shared = shared || overlaps(out, past);
  if (shared) return fail(false, ": out must not share memory with the inputs");
  ops().attendDecode(static_cast<const float*>(queries.data), static_cast<const float*>(keys.data),
                     static_cast<const float*>(values.data), static_cast<float*>(out.data), rows.data(), rows.size(),
                     shape);
  return nullptr;
}

// attendChunk(queries, keys, values, out, pastKey, pastValue, slots, positions, heads, kvHeads, headDim, scaling,
// window, bf16Probabilities): T = positions.length queries; queries and out [T × heads × D], keys and values
// [T × kvHeads × D], pastKey and pastValue [kvHeads × S × D] with S = slots.length.
napi_value AttendChunk(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("attendChunk") + what).c_str());
  };
  size_t argc = 14;
  napi_value argv[14];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 14) return fail(false, " takes 14 arguments");
  View queries, keys, values, out, pastKey, pastValue, slots, positions;
  if (!typedArray(env, argv[0], napi_float32_array, queries) || !typedArray(env, argv[1], napi_float32_array, keys) ||
      !typedArray(env, argv[2], napi_float32_array, values) || !typedArray(env, argv[3], napi_float32_array, out) ||
      !typedArray(env, argv[4], napi_float32_array, pastKey) || !typedArray(env, argv[5], napi_float32_array, pastValue))
    return fail(false, ": queries, keys, values, out, pastKey and pastValue must be Float32Arrays");
  if (!typedArray(env, argv[6], napi_int32_array, slots) || !typedArray(env, argv[7], napi_int32_array, positions))
    return fail(false, ": slots and positions must be Int32Arrays");
  AttentionShape shape;
  if (const char* problem = attentionShape(env, argv + 8, shape)) return fail(true, problem);
  const size_t T = positions.length, S = slots.length, H = shape.heads * shape.D, KV = shape.kvHeads * shape.D;
  if (T == 0 || queries.length != T * H || out.length != T * H || keys.length != T * KV || values.length != T * KV)
    return fail(true, ": queries and out must hold T·heads·D floats, keys and values T·kvHeads·D (T = positions.length ≥ 1)");
  if (pastKey.length != S * KV || pastValue.length != S * KV)
    return fail(true, ": pastKey and pastValue must hold kvHeads·S·D floats (S = slots.length)");
  for (size_t t = 0; t < T; t++)
    if (static_cast<const int32_t*>(positions.data)[t] < 0) return fail(true, ": positions must be ≥ 0");
  if (overlaps(out, queries) || overlaps(out, keys) || overlaps(out, values) || overlaps(out, pastKey) ||
      overlaps(out, pastValue))
    return fail(false, ": out must not share memory with the inputs");
  const ChunkKeys chunk{static_cast<const float*>(pastKey.data), static_cast<const float*>(pastValue.data),
                        static_cast<const int32_t*>(slots.data), S, static_cast<const float*>(keys.data),
                        static_cast<const float*>(values.data), static_cast<const int32_t*>(positions.data), T};
  ops().attendChunk(static_cast<const float*>(queries.data), chunk, shape, static_cast<float*>(out.data));
  return nullptr;
}

// residualNorm(h, a, post, next, y, eps, roundResidual): rows = h.length / H of H = post.length floats; h updated in
// place.
napi_value ResidualNorm(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("residualNorm") + what).c_str());
  };
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 7) return fail(false, " takes 7 arguments");
  View h, a, post, next, y;
  if (!typedArray(env, argv[0], napi_float32_array, h) || !typedArray(env, argv[1], napi_float32_array, a) ||
      !typedArray(env, argv[2], napi_float32_array, post) || !typedArray(env, argv[3], napi_float32_array, next) ||
      !typedArray(env, argv[4], napi_float32_array, y))
    return fail(false, ": h, a, post, next and y must be Float32Arrays");
  double eps;
  if (napi_get_value_double(env, argv[5], &eps) != napi_ok || !(eps >= 0) || !std::isfinite(eps))
    return fail(true, ": eps must be a finite number ≥ 0");
  bool roundResidual;
  if (napi_get_value_bool(env, argv[6], &roundResidual) != napi_ok) return fail(false, ": roundResidual must be a boolean");
  const size_t H = post.length;
  if (H == 0 || next.length != H || h.length == 0 || h.length % H != 0 || a.length != h.length || y.length != h.length)
    return fail(true, ": post and next must hold H ≥ 1 floats, h, a and y the same rows·H");
  if (overlaps(y, h) || overlaps(y, a) || overlaps(y, post) || overlaps(y, next) || overlaps(h, a) ||
      overlaps(h, post) || overlaps(h, next))
    return fail(false, ": h and y must not share memory with each other or the other inputs");
  ops().residualNorm(static_cast<float*>(h.data), static_cast<const float*>(a.data), static_cast<const float*>(post.data),
               static_cast<const float*>(next.data), static_cast<float*>(y.data), h.length / H, H,
               static_cast<float>(eps), roundResidual);
  return nullptr;
}

// gatedGelu(gate, up, z): z = gelu_tanh(gate) · up elementwise.
napi_value GatedGelu(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("gatedGelu") + what).c_str());
  };
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 3) return fail(false, " takes 3 arguments");
  View gate, up, z;
  if (!typedArray(env, argv[0], napi_float32_array, gate) || !typedArray(env, argv[1], napi_float32_array, up) ||
      !typedArray(env, argv[2], napi_float32_array, z))
    return fail(false, ": gate, up and z must be Float32Arrays");
  if (gate.length == 0 || up.length != gate.length || z.length != gate.length)
    return fail(true, ": gate, up and z must hold the same number of floats, at least 1");
  if (overlaps(z, gate) || overlaps(z, up)) return fail(false, ": z must not share memory with gate or up");
  ops().gatedGelu(static_cast<const float*>(gate.data), static_cast<const float*>(up.data), static_cast<float*>(z.data),
            gate.length);
  return nullptr;
}

// normRope(x, scale, cos, sin, heads, eps): x [rows × heads × D] in place, D = scale.length (even), rows =
// cos.length / (D / 2); cos and sin the rows' tables.
napi_value NormRope(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("normRope") + what).c_str());
  };
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 6) return fail(false, " takes 6 arguments");
  View x, scale, cos, sin;
  if (!typedArray(env, argv[0], napi_float32_array, x) || !typedArray(env, argv[1], napi_float32_array, scale) ||
      !typedArray(env, argv[2], napi_float32_array, cos) || !typedArray(env, argv[3], napi_float32_array, sin))
    return fail(false, ": x, scale, cos and sin must be Float32Arrays");
  size_t heads;
  double eps;
  if (!dimension(env, argv[4], heads)) return fail(true, ": heads must be a positive integer");
  if (napi_get_value_double(env, argv[5], &eps) != napi_ok || !(eps >= 0) || !std::isfinite(eps))
    return fail(true, ": eps must be a finite number ≥ 0");
  const size_t D = scale.length, half = D / 2;
  if (D == 0 || D % 2 != 0 || cos.length == 0 || cos.length % half != 0 || sin.length != cos.length ||
      x.length != cos.length / half * heads * D)
    return fail(true, ": scale must hold an even D ≥ 2, cos and sin rows·D/2 floats, x rows·heads·D");
  if (overlaps(x, scale) || overlaps(x, cos) || overlaps(x, sin))
    return fail(false, ": x must not share memory with scale, cos or sin");
  ops().normRope(static_cast<float*>(x.data), cos.length / half, heads, D, static_cast<const float*>(scale.data),
           static_cast<const float*>(cos.data), static_cast<const float*>(sin.data), static_cast<float>(eps));
  return nullptr;
}

// argmaxRows(values, n, out): out[r] = argmaxRow of row r of values [out.length × n].
napi_value ArgmaxRows(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("argmaxRows") + what).c_str());
  };
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 3) return fail(false, " takes 3 arguments");
  View values, out;
  size_t n;
  if (!typedArray(env, argv[0], napi_float32_array, values) || !typedArray(env, argv[2], napi_int32_array, out))
    return fail(false, ": values must be a Float32Array and out an Int32Array");
  if (!dimension(env, argv[1], n) || n == 0 || n > UINT32_MAX || out.length == 0 || values.length != out.length * n)
    return fail(true, ": values must hold out.length ≥ 1 rows of n ≥ 1 floats");
  if (overlaps(values, out)) return fail(false, ": out must not share memory with values");
  ops().argmaxRows(static_cast<const float*>(values.data), out.length, n, static_cast<int32_t*>(out.data));
  return nullptr;
}

// vocabPartials(logits, n, chunk, chunkMax, chunkSum, top, ids, idBase): rows = logits.length / n; chunkMax and
// chunkSum hold rows · ⌈n / chunk⌉ floats, top and ids rows · k (k ≥ 0).
napi_value VocabPartials(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("vocabPartials") + what).c_str());
  };
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 8) return fail(false, " takes 8 arguments");
  View logits, chunkMax, chunkSum, top, ids;
  if (!typedArray(env, argv[0], napi_float32_array, logits) || !typedArray(env, argv[3], napi_float32_array, chunkMax) ||
      !typedArray(env, argv[4], napi_float32_array, chunkSum) || !typedArray(env, argv[5], napi_float32_array, top) ||
      !typedArray(env, argv[6], napi_int32_array, ids))
    return fail(false, ": logits, chunkMax, chunkSum and top must be Float32Arrays, ids an Int32Array");
  size_t n, chunk;
  double idBase;
  if (!dimension(env, argv[1], n) || !dimension(env, argv[2], chunk))
    return fail(true, ": n and chunk must be integers in [1, 2^31)");
  if (napi_get_value_double(env, argv[7], &idBase) != napi_ok || !(idBase >= 0) || std::floor(idBase) != idBase ||
      idBase + static_cast<double>(n) > 2147483647.0)
    return fail(true, ": idBase must be an integer ≥ 0 with idBase + n below 2^31");
  const size_t rows = logits.length / n, chunks = (n + chunk - 1) / chunk;
  if (rows == 0 || logits.length != rows * n || chunkMax.length != rows * chunks || chunkSum.length != rows * chunks ||
      top.length % rows != 0 || ids.length != top.length)
    return fail(true, ": logits must hold rows ≥ 1 of n, chunkMax and chunkSum rows·⌈n/chunk⌉, top and ids rows·k");
  const View* outs[] = {&chunkMax, &chunkSum, &top, &ids};
  for (size_t a = 0; a < 4; a++) {
    bool shared = overlaps(*outs[a], logits);
    for (size_t b = 0; b < 4; b++) shared = shared || (a != b && overlaps(*outs[a], *outs[b]));
    if (shared) return fail(false, ": chunkMax, chunkSum, top and ids must not share memory with each other or logits");
  }
  ops().vocabPartials(static_cast<const float*>(logits.data), rows, n, chunk, static_cast<float*>(chunkMax.data),
                      static_cast<float*>(chunkSum.data), static_cast<float*>(top.data), static_cast<int32_t*>(ids.data),
                      top.length / rows, static_cast<int32_t>(idBase));
  return nullptr;
}

// peakRate(kind, iterations, repeats): GFLOP/s of float32 FMAs on the path's widest vectors ("fma") or of TDPBF16PS
// ("amx", 0 where AMX is not used), every pool thread, register to register: the products' ceiling.
napi_value PeakRate(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  char kind[32];
  size_t length = 0, iterations = 0, repeats = 0;
  if (argc != 3 || napi_get_value_string_utf8(env, argv[0], kind, sizeof kind, &length) != napi_ok ||
      !dimension(env, argv[1], iterations) || !dimension(env, argv[2], repeats) || repeats > 1000)
    return throwError(env, false, "peakRate(kind, iterations, repeats) takes a string and two integers ≥ 1");
  napi_value result;
  const std::string name(kind, length);
  double rate = 0;
  if (name == "fma") rate = ops().peakFma(iterations, static_cast<int>(repeats));
#if defined(__x86_64__)
  else if (name == "amx" && amxStatus() == "used") rate = amx::peak(iterations, static_cast<int>(repeats));
#endif
  else if (name != "amx") return throwError(env, false, "peakRate: kind must be fma or amx");
  napi_create_double(env, rate, &result);
  return result;
}

// roundBf16(x): every float of x rounded to the nearest BF16 in place.
napi_value RoundBf16(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  View x;
  if (argc != 1 || !typedArray(env, argv[0], napi_float32_array, x))
    return throwError(env, false, "roundBf16(x) takes a Float32Array");
  ops().roundBf16(static_cast<float*>(x.data), x.length);
  return nullptr;
}

napi_value WidenBf16(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 2) return throwError(env, false, "widenBf16(w, out) takes 2 arguments");
  View w, out;
  if (!typedArray(env, argv[0], napi_uint16_array, w)) return throwError(env, false, "widenBf16: w must be a Uint16Array of BF16 bits");
  if (!typedArray(env, argv[1], napi_float32_array, out)) return throwError(env, false, "widenBf16: out must be a Float32Array");
  if (w.length != out.length) return throwError(env, true, "widenBf16: out.length must equal w.length");
  if (overlaps(out, w)) return throwError(env, false, "widenBf16: out must not share memory with w");
  ops().widen(static_cast<const uint16_t*>(w.data), static_cast<float*>(out.data), w.length);
  return nullptr;
}

napi_value ReadBandwidth(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 2) return throwError(env, false, "readBandwidth(buffer, repeats) takes 2 arguments");
  View bytes;
  bool isBuffer = false;
  napi_is_arraybuffer(env, argv[0], &isBuffer);
  if (isBuffer) {
    napi_get_arraybuffer_info(env, argv[0], &bytes.data, &bytes.byteLength);
  } else {
    bool isTyped = false, isDataView = false;
    napi_is_typedarray(env, argv[0], &isTyped);
    napi_is_dataview(env, argv[0], &isDataView);
    if (isTyped) {
      napi_typedarray_type type;
      size_t length;
      napi_get_typedarray_info(env, argv[0], &type, &length, &bytes.data, nullptr, nullptr);
      bytes.byteLength = length * elementSize(type);
    } else if (isDataView) {
      napi_get_dataview_info(env, argv[0], &bytes.byteLength, &bytes.data, nullptr, nullptr);
    } else {
      return throwError(env, false, "readBandwidth: buffer must be an ArrayBuffer or an ArrayBuffer view");
    }
  }
  size_t repeats;
  if (!dimension(env, argv[1], repeats) || repeats > 1000) return throwError(env, true, "readBandwidth: repeats must be an integer in [1, 1000]");
  if (bytes.byteLength < (1u << 20)) return throwError(env, true, "readBandwidth: buffer must hold at least 1 MiB");
  napi_value result;
  napi_create_double(env, ops().readBandwidth(static_cast<const uint8_t*>(bytes.data), bytes.byteLength, static_cast<int>(repeats)), &result);
  return result;
}

// Asks the OS for 2 MiB pages over the whole 2 MiB blocks inside a typed array's memory, before it is first written
// (Linux with transparent huge pages in "madvise" mode): a decode step streams every weight, and with 4 KiB pages
// the TLB misses cost ~10 % of the kernel's rate (docs/benchmarks.md). Elsewhere a no-op. Returns the bytes advised.
napi_value AdviseHugePages(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  bool isTyped = false;
  if (argc != 1 || napi_is_typedarray(env, argv[0], &isTyped) != napi_ok || !isTyped)
    return throwError(env, false, "adviseHugePages(view) takes a typed array");
  napi_typedarray_type type;
  size_t length;
  void* data = nullptr;
  napi_get_typedarray_info(env, argv[0], &type, &length, &data, nullptr, nullptr);
  const size_t bytes = length * elementSize(type);
  double advised = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = 2u << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(huge - 1);
  if (end > begin && madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0)
    advised = static_cast<double>(end - begin);
#else
  (void)data;
  (void)bytes;
#endif
  napi_value result;
  napi_create_double(env, advised, &result);
  return result;
}

// readFileInto(fd, position, bytes): `bytes.length` bytes of the open file `fd` from `position` (file-read.h); returns
// the bytes read, fewer only where the file ends first.
napi_value ReadFileInto(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t fd;
  double position;
  View bytes;
  if (argc != 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
    return throwError(env, false, "readFileInto: fd must be an open file descriptor");
  if (napi_get_value_double(env, argv[1], &position) != napi_ok || !(position >= 0 && position <= 9007199254740991.0) ||
      std::floor(position) != position)
    return throwError(env, true, "readFileInto: position must be a non-negative safe integer");
  if (!typedArray(env, argv[2], napi_uint8_array, bytes)) return throwError(env, false, "readFileInto: bytes must be a Uint8Array");
  std::string error;
  const size_t read = readFileInto(fd, static_cast<uint64_t>(position), static_cast<uint8_t*>(bytes.data), bytes.byteLength, error);
  if (!error.empty()) {
    napi_throw_error(env, nullptr, ("readFileInto: " + error).c_str());
    return nullptr;
  }
  napi_value result;
  napi_create_double(env, static_cast<double>(read), &result);
  return result;
}

napi_value SetThreads(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  size_t threads;
  if (argc != 1 || !dimension(env, argv[0], threads) || threads > 1024) return throwError(env, true, "setThreads: threads must be an integer in [1, 1024]");
  setPoolThreads(static_cast<int>(threads));
  return nullptr;
}

napi_value Threads(napi_env env, napi_callback_info) {
  napi_value result;
  napi_create_int32(env, poolThreads(), &result);
  return result;
}


napi_value StringArray(napi_env env, const std::vector<std::string>& items) {
  napi_value array;
  napi_create_array_with_length(env, items.size(), &array);
  for (size_t i = 0; i < items.size(); i++) {
    napi_value item;
    napi_create_string_utf8(env, items[i].c_str(), NAPI_AUTO_LENGTH, &item);
    napi_set_element(env, array, static_cast<uint32_t>(i), item);
  }
  return array;
}

// dispatch(): the record of the path in force: { isa, available, amx }.
napi_value Dispatch(napi_env env, napi_callback_info) {
  napi_value record, value;
  napi_create_object(env, &record);
  napi_create_string_utf8(env, isaName(isa()), NAPI_AUTO_LENGTH, &value);
  napi_set_named_property(env, record, "isa", value);
  std::vector<std::string> names;
  for (const Isa a : availableIsas()) names.push_back(isaName(a));
  napi_set_named_property(env, record, "available", StringArray(env, names));
  napi_create_string_utf8(env, amxStatus().c_str(), NAPI_AUTO_LENGTH, &value);
  napi_set_named_property(env, record, "amx", value);
  return record;
}

// useIsa(name): another path for every later call (tests, benchmarks, IWIBENCH_ISA); throws if the CPU cannot run it.
napi_value UseIsa(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  char name[32];
  size_t length = 0;
  if (argc != 1 || napi_get_value_string_utf8(env, argv[0], name, sizeof name, &length) != napi_ok)
    return throwError(env, false, "useIsa(name) takes a string");
  const std::string problem = useIsa(std::string(name, length));
  if (!problem.empty()) return throwError(env, false, ("IWIBENCH_ISA: " + problem).c_str());
  return nullptr;
}

}  // namespace
}  // namespace iwi

NAPI_MODULE_INIT() {
  using namespace iwi;
  const struct {
    const char* name;
    napi_callback fn;
  } functions[] = {{"products", Products},         {"gatedProducts", GatedProducts}, {"widenBf16", WidenBf16},
                   {"readBandwidth", ReadBandwidth}, {"adviseHugePages", AdviseHugePages}, {"readFileInto", ReadFileInto}, {"attendDecode", AttendDecode},
                   {"attendChunk", AttendChunk},   {"residualNorm", ResidualNorm},   {"rmsNorm", RmsNorm},
                   {"gatedGelu", GatedGelu},       {"argmaxRows", ArgmaxRows},       {"normRope", NormRope},
                   {"vocabPartials", VocabPartials},
                   {"roundBf16", RoundBf16},       {"peakRate", PeakRate},           {"setThreads", SetThreads},
                   {"threads", Threads},           {"dispatch", Dispatch},           {"useIsa", UseIsa}};
  for (const auto& f : functions) {
    napi_value value;
    napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.fn, nullptr, &value);
    napi_set_named_property(env, exports, f.name, value);
  }
  return exports;
}
