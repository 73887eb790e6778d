// The built-in classic-control tasks as stateless XLA FFI handlers (envs/native/stateless.py):
// every env's state comes in and goes out as arrays, nothing is kept here, and no call has a
// side effect, so JAX may shard, donate, batch and reorder them like any pure op. Each handler
// takes any number of envs (the leading axes vmap gives it, flattened) and runs the per-env
// reset/step of classic_control.h, the code the compiled pool runs, so results equal the pool's
// (and Gymnasium's) bit for bit.
//
// Per env, as uint32 words (no 64-bit dtype is needed in JAX):
//   variables [2 * rows]: the task's float64 state variables, each as its 8 bytes (little-endian);
//   rng [8]: PCG64's 128-bit state then 128-bit increment, least significant word first;
//   fresh (bool): MountainCarContinuous's "state still float64" flag (unused by the other tasks).
#include <cstring>
#include <string>

#include "classic_control.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using classic::Pcg64;

namespace {

// ------------------------------------------------------------------ numpy's default_rng(seed)
// numpy.random.SeedSequence(seed).generate_state(4, uint64), then PCG64's seeding
// (pcg64_set_seed: state = seed words 0-1, increment = words 2-3, srandom_r).
constexpr uint32_t INIT_A = 0x43b0d7e5, MULT_A = 0x931e8875, INIT_B = 0x8b51f9dd, MULT_B = 0x58f38ded;
constexpr uint32_t MIX_MULT_L = 0xca01f9dd, MIX_MULT_R = 0x4973f715;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= MULT_A;
  value *= hash_const;
  return value ^ (value >> 16);
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
  return r ^ (r >> 16);
}

Pcg64 default_rng(uint64_t seed) {
  uint32_t entropy[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};  // numpy's int -> uint32 words
  int words = (seed >> 32) ? 2 : 1;
  uint32_t pool[4], hc = INIT_A;
  for (int i = 0; i < 4; ++i) pool[i] = hashmix(i < words ? entropy[i] : 0, hc);
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], hc));
  uint32_t out[8], hb = INIT_B;
  for (int i = 0; i < 8; ++i) {
    uint32_t v = pool[i % 4] ^ hb;
    hb *= MULT_B;
    v *= hb;
    out[i] = v ^ (v >> 16);
  }
  uint64_t w[4];
  for (int i = 0; i < 4; ++i) w[i] = (uint64_t)out[2 * i] | ((uint64_t)out[2 * i + 1] << 32);
  const unsigned __int128 mult = ((unsigned __int128)2549297995355413924ULL << 64) | 4865540595714422341ULL;
  unsigned __int128 initstate = ((unsigned __int128)w[0] << 64) | w[1];
  unsigned __int128 initseq = ((unsigned __int128)w[2] << 64) | w[3];
  Pcg64 r;
  r.inc = (initseq << 1) | 1;
  r.state = r.inc;  // state 0, one step
  r.state += initstate;
  r.state = r.state * mult + r.inc;
  return r;
}

void put_rng(const Pcg64& r, uint32_t* w) {
  for (int k = 0; k < 4; ++k) {
    w[k] = (uint32_t)(r.state >> (32 * k));
    w[4 + k] = (uint32_t)(r.inc >> (32 * k));
  }
}

Pcg64 get_rng(const uint32_t* w) {
  Pcg64 r{0, 0};
  for (int k = 3; k >= 0; --k) {
    r.state = (r.state << 32) | w[k];
    r.inc = (r.inc << 32) | w[4 + k];
  }
  return r;
}

// ------------------------------------------------------------------ handlers
ffi::Error invalid(const std::string& what) { return ffi::Error(ffi::ErrorCode::kInvalidArgument, what); }

// The number of envs of a call: every array's elements over its per-env size, which must agree.
bool envs_of(size_t count, size_t per_env, size_t* n) {
  if (per_env == 0 || count % per_env) return false;
  if (*n == (size_t)-1) *n = count / per_env;
  return *n == count / per_env;
}

classic::TaskInfo info_of(int32_t task) { return classic::task_info(task); }

// seed: uint32 [..., 2] (high word, low word: a threefry key's data) -> rng [..., 8]
ffi::Error Seed(ffi::Buffer<ffi::U32> seed, ffi::ResultBuffer<ffi::U32> rng) {
  size_t n = (size_t)-1;
  if (!envs_of(seed.element_count(), 2, &n) || !envs_of(rng->element_count(), 8, &n))
    return invalid("stateless seed: the seeds must be uint32 pairs, one per env");
  const uint32_t* s = seed.typed_data();
  uint32_t* out = rng->typed_data();
  for (size_t i = 0; i < n; ++i) put_rng(default_rng(((uint64_t)s[2 * i] << 32) | s[2 * i + 1]), out + 8 * i);
  return ffi::Error::Success();
}

// rng [..., 8] -> variables [..., 2 * rows], rng [..., 8] (advanced by the reset's draws),
// fresh [...], obs [..., obs_dim]
ffi::Error Reset(ffi::Buffer<ffi::U32> rng_in, ffi::ResultBuffer<ffi::U32> vars, ffi::ResultBuffer<ffi::U32> rng_out,
                 ffi::ResultBuffer<ffi::PRED> fresh, ffi::ResultBuffer<ffi::F32> obs, int32_t task) {
  classic::TaskInfo info = info_of(task);
  if (info.rows == 0) return invalid("stateless reset: unknown task " + std::to_string(task));
  size_t n = (size_t)-1;
  if (!envs_of(rng_in.element_count(), 8, &n) || !envs_of(vars->element_count(), 2 * info.rows, &n) ||
      !envs_of(rng_out->element_count(), 8, &n) || !envs_of(fresh->element_count(), 1, &n) ||
      !envs_of(obs->element_count(), info.obs_dim, &n))
    return invalid("stateless reset: the arrays disagree on the number of envs");
  for (size_t i = 0; i < n; ++i) {
    Pcg64 r = get_rng(rng_in.typed_data() + 8 * i);
    double s[4] = {0, 0, 0, 0};
    uint8_t f = 0;
    classic::reset(task, {s, &f}, r);
    std::memcpy(vars->typed_data() + 2 * info.rows * i, s, sizeof(double) * info.rows);
    put_rng(r, rng_out->typed_data() + 8 * i);
    fresh->typed_data()[i] = f != 0;
    classic::observe(task, s, obs->typed_data() + info.obs_dim * i);
  }
  return ffi::Error::Success();
}

// variables [..., 2 * rows], fresh [...], action [...] int32 (Discrete) or [..., 1] float32 (Box)
// -> variables, fresh, obs [..., obs_dim], reward [...] float32, terminated [...]
ffi::Error Step(ffi::Buffer<ffi::U32> vars_in, ffi::Buffer<ffi::PRED> fresh_in, ffi::AnyBuffer action,
                ffi::ResultBuffer<ffi::U32> vars, ffi::ResultBuffer<ffi::PRED> fresh, ffi::ResultBuffer<ffi::F32> obs,
                ffi::ResultBuffer<ffi::F32> reward, ffi::ResultBuffer<ffi::PRED> terminated, int32_t task) {
  classic::TaskInfo info = info_of(task);
  if (info.rows == 0) return invalid("stateless step: unknown task " + std::to_string(task));
  bool discrete = info.actions > 0;
  if (action.element_type() != (discrete ? ffi::DataType::S32 : ffi::DataType::F32))
    return invalid(discrete ? "stateless step: Discrete actions must be int32" : "stateless step: Box actions must be float32");
  size_t n = (size_t)-1;
  if (!envs_of(vars_in.element_count(), 2 * info.rows, &n) || !envs_of(fresh_in.element_count(), 1, &n) ||
      !envs_of(action.element_count(), 1, &n) || !envs_of(vars->element_count(), 2 * info.rows, &n) ||
      !envs_of(obs->element_count(), info.obs_dim, &n) || !envs_of(reward->element_count(), 1, &n))
    return invalid("stateless step: the arrays disagree on the number of envs");
  const int32_t* da = static_cast<const int32_t*>(action.untyped_data());
  const float* ba = static_cast<const float*>(action.untyped_data());
  for (size_t i = 0; i < n; ++i) {  // the pool's checks and messages (pool.cc check_actions)
    if (discrete && (da[i] < 0 || da[i] >= info.actions))
      return invalid("action out of range for Discrete(" + std::to_string(info.actions) + "): [" + std::to_string(da[i]) + "]");
    if (!discrete && !std::isfinite(ba[i])) return invalid("action holds NaN or Inf");
  }
  for (size_t i = 0; i < n; ++i) {
    double s[4];
    std::memcpy(s, vars_in.typed_data() + 2 * info.rows * i, sizeof(double) * info.rows);
    uint8_t f = fresh_in.typed_data()[i];
    float r = 0.0f;
    bool t = classic::step(task, {s, &f}, discrete ? da[i] : 0, discrete ? 0.0f : ba[i], &r);
    std::memcpy(vars->typed_data() + 2 * info.rows * i, s, sizeof(double) * info.rows);
    fresh->typed_data()[i] = f != 0;
    classic::observe(task, s, obs->typed_data() + info.obs_dim * i);
    reward->typed_data()[i] = r;
    terminated->typed_data()[i] = t;
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(cc_stateless_seed, Seed,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::U32>>().Ret<ffi::Buffer<ffi::U32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(cc_stateless_reset, Reset,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<int32_t>("task"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cc_stateless_step, Step,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Attr<int32_t>("task"));
