// The compiled native pool: EnvPool's contract (pending envs, the queue of finished envs, the
// auto-reset rule, episode counters) and the classic-control tasks, behind two faces that share
// one pool state: a C API that envs/native/kernel_pool.py calls through ctypes (the Python
// API), and XLA FFI handlers that envs/native/kernel_xla.py puts inside jitted programs
// (xla()). A pool is addressed by its id; every call locks the pool, so a jitted program and
// Python calls may interleave safely. Errors come back as a code (1: ValueError, 2:
// RuntimeError) and a message, with the wording of envs/pool.py.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "classic_control.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using classic::Pcg64;

namespace {

enum Code { OK = 0, VALUE_ERROR = 1, RUNTIME_ERROR = 2 };

thread_local std::string g_error;

int fail(int code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_error = buf;
  return code;
}

std::string id_list(const int32_t* ids, int n, int limit = 16) {
  std::string s = "[";
  for (int i = 0; i < n && i < limit; ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

struct Pool {
  std::mutex mu;
  std::string name;
  int task, n, batch, rows, obs_dim, actions, max_steps;  // max_steps < 0: no limit
  bool async, closed = false;
  std::vector<double> state;  // env-major: env i's variables at state[i * rows]
  std::vector<uint8_t> fresh;
  std::vector<Pcg64> rng;
  std::vector<int32_t> elapsed;
  std::vector<uint8_t> done, pending;
  int num_pending = 0;
  // Each env's latest result, waiting in `ready` (oldest first) until received.
  std::vector<float> obs, reward;
  std::vector<uint8_t> term, trunc;
  std::deque<int32_t> ready;
  std::vector<int32_t> last_ids;
  bool has_last = false;
  std::vector<int32_t> scratch;

  classic::Env env(int i) { return {&state[(size_t)i * rows], &fresh[i]}; }

  void write_result(int i, float r, bool terminated, bool truncated) {
    reward[i] = r;
    term[i] = terminated;
    trunc[i] = truncated;
    classic::observe(task, &state[(size_t)i * rows], &obs[(size_t)i * obs_dim]);
  }

  void reset_env(int i) {
    classic::reset(task, env(i), rng[i]);
    elapsed[i] = 0;
    done[i] = 0;
    write_result(i, 0.0f, false, false);
  }

  // EnvPool's auto-reset rule (envs/episodes.py): a done env's step is its reset.
  void step_env(int i, int discrete, float box) {
    float r = 0.0f;
    bool terminated = false;
    int32_t e;
    if (done[i]) {
      classic::reset(task, env(i), rng[i]);
      e = 0;
    } else {
      terminated = classic::step(task, env(i), discrete, box, &r);
      e = elapsed[i] + 1;
    }
    bool truncated = max_steps >= 0 && e >= max_steps && !terminated;
    elapsed[i] = e;
    done[i] = terminated || truncated;
    write_result(i, r, terminated, truncated);
  }

  // Checks env ids (range, duplicates, in flight) and marks them sent; ids == nullptr: all.
  int mark_sent(const int32_t* ids, int k) {
    if (ids == nullptr) {
      if (num_pending) {
        std::vector<int32_t> busy;
        for (int i = 0; i < n && busy.size() < 16; ++i)
          if (pending[i]) busy.push_back(i);
        return fail(VALUE_ERROR, "envs %s are not ready: still in flight; recv() their results first",
                    id_list(busy.data(), (int)busy.size()).c_str());
      }
      std::fill(pending.begin(), pending.end(), 1);
      num_pending = n;
      return OK;
    }
    if (k <= 0) return fail(VALUE_ERROR, "env_id is empty");
    scratch.clear();
    for (int j = 0; j < k; ++j)
      if (ids[j] < 0 || ids[j] >= n) scratch.push_back(ids[j]);
    if (!scratch.empty())
      return fail(VALUE_ERROR, "env_id out of range [0, %d): %s", n, id_list(scratch.data(), (int)scratch.size(), 1 << 30).c_str());
    for (int j = 0; j < k; ++j)
      if (pending[ids[j]]) scratch.push_back(ids[j]);
    if (!scratch.empty())
      return fail(VALUE_ERROR, "envs %s are not ready: they were sent and not yet received; call recv() first",
                  id_list(scratch.data(), (int)scratch.size()).c_str());
    for (int j = 0; j < k; ++j) {
      if (pending[ids[j]]) {
        scratch.push_back(ids[j]);
        continue;
      }
      pending[ids[j]] = 1;
    }
    if (!scratch.empty()) {
      for (int j = 0; j < k; ++j) pending[ids[j]] = 0;
      std::sort(scratch.begin(), scratch.end());
      scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
      return fail(VALUE_ERROR, "env_id has duplicates: %s", id_list(scratch.data(), (int)scratch.size(), 1 << 30).c_str());
    }
    num_pending += k;
    return OK;
  }

  // Discrete actions come as int32 (jitted programs) or int64 (the Python API); Box actions as float32.
  int check_actions(const void* action, int k, bool wide) {
    if (actions > 0) {
      for (int j = 0; j < k; ++j) {
        int64_t a = wide ? ((const int64_t*)action)[j] : ((const int32_t*)action)[j];
        if (a < 0 || a >= actions)
          return fail(VALUE_ERROR, "action out of range for Discrete(%d): [%lld]", actions, (long long)a);
      }
    } else {
      const float* a = (const float*)action;
      for (int j = 0; j < k; ++j)
        if (!std::isfinite(a[j])) return fail(VALUE_ERROR, "action holds NaN or Inf");
    }
    return OK;
  }

  const char* action_tail() const { return actions > 0 ? "," : ", 1"; }

  // send(action, env_id): ids == nullptr means the last batch received (async) or all envs.
  int send(const void* action, const int32_t* ids, int k, bool wide) {
    if (closed) return fail(RUNTIME_ERROR, "send() called on a closed EnvPool (%s)", name.c_str());
    if (ids == nullptr && async && has_last) {
      ids = last_ids.data();
      if (k != (int)last_ids.size())
        return fail(VALUE_ERROR, "action must have shape (%d%s) (one per env of the last batch received), got %d actions",
                    (int)last_ids.size(), action_tail(), k);
    } else if (ids == nullptr && k != n) {
      if (async)
        return fail(VALUE_ERROR, "send() in async mode without env_id needs a previous recv() (its env ids are used); pass env_id explicitly");
      return fail(VALUE_ERROR, "action must have shape (%d%s) (one per env), got %d actions", n, action_tail(), k);
    }
    if (int c = check_actions(action, k, wide)) return c;
    std::vector<int32_t> held;
    if (ids == last_ids.data()) {  // mark_sent may not alias the list it reads
      held = last_ids;
      ids = held.data();
    }
    if (int c = mark_sent(ids, k)) return c;
    const float* box = (const float*)action;
    for (int j = 0; j < k; ++j) {
      int i = ids ? ids[j] : j;
      if (actions > 0)
        step_env(i, wide ? (int)((const int64_t*)action)[j] : ((const int32_t*)action)[j], 0.0f);
      else
        step_env(i, 0, box[j]);
      ready.push_back(i);
    }
    return OK;
  }

  void copy_out(const int32_t* order, int k, float* o, float* r, uint8_t* te, uint8_t* tr, int32_t* id, int32_t* el) {
    for (int j = 0; j < k; ++j) {
      int i = order[j];
      std::memcpy(o + (size_t)j * obs_dim, &obs[(size_t)i * obs_dim], sizeof(float) * obs_dim);
      r[j] = reward[i];
      te[j] = term[i];
      tr[j] = trunc[i];
      id[j] = i;
      el[j] = elapsed[i];
      pending[i] = 0;
    }
    num_pending -= k;
    last_ids.assign(order, order + k);
    has_last = true;
  }

  // The batch's size goes to *count: batch_size, or in sync mode the envs in flight (a partial step).
  int recv(float* o, float* r, uint8_t* te, uint8_t* tr, int32_t* id, int32_t* el, int* count) {
    if (closed) return fail(RUNTIME_ERROR, "recv() called on a closed EnvPool (%s)", name.c_str());
    if (num_pending == 0)
      return fail(RUNTIME_ERROR, "recv() called with nothing in flight: call send(), step() or async_reset() first");
    if (num_pending < batch && async)
      return fail(RUNTIME_ERROR, "recv() needs batch_size=%d envs but only %d are in flight; send actions for more envs first",
                  batch, num_pending);
    if (!async) {  // sync: the envs in flight (all, or a partial step's), in env id order
      scratch.clear();
      for (int i = 0; i < n; ++i)
        if (pending[i]) scratch.push_back(i);
      ready.clear();
      *count = (int)scratch.size();
      copy_out(scratch.data(), *count, o, r, te, tr, id, el);
      return OK;
    }
    *count = batch;
    scratch.resize(batch);
    for (int j = 0; j < batch; ++j) {
      scratch[j] = ready.front();
      ready.pop_front();
    }
    copy_out(scratch.data(), batch, o, r, te, tr, id, el);
    return OK;
  }

  // reset(env_id): those envs' first observations, in env_id's order (not through the queue).
  int reset(const int32_t* ids, int k, float* o, float* r, uint8_t* te, uint8_t* tr, int32_t* id, int32_t* el) {
    if (closed) return fail(RUNTIME_ERROR, "reset() called on a closed EnvPool (%s)", name.c_str());
    if (int c = mark_sent(ids, ids ? k : n)) return c;
    std::vector<int32_t> order(ids ? ids : nullptr, ids ? ids + k : nullptr);
    if (!ids) {
      order.resize(n);
      for (int i = 0; i < n; ++i) order[i] = i;
      ready.clear();
    } else {
      std::vector<uint8_t> mine(n, 0);
      for (int i : order) mine[i] = 1;
      ready.erase(std::remove_if(ready.begin(), ready.end(), [&](int32_t i) { return mine[i] != 0; }), ready.end());
    }
    for (int i : order) reset_env(i);
    copy_out(order.data(), (int)order.size(), o, r, te, tr, id, el);
    return OK;
  }

  int async_reset() {
    if (closed) return fail(RUNTIME_ERROR, "async_reset() called on a closed EnvPool (%s)", name.c_str());
    if (int c = mark_sent(nullptr, n)) return c;
    ready.clear();
    for (int i = 0; i < n; ++i) {
      reset_env(i);
      ready.push_back(i);
    }
    return OK;
  }
};

std::mutex g_registry_mu;
std::vector<std::unique_ptr<Pool>> g_pools;  // index: pool id - 1; never shrinks (ids are not reused)

Pool* find(int id) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  if (id < 1 || id > (int)g_pools.size()) return nullptr;
  return g_pools[id - 1].get();
}

}  // namespace

// ============================================================================ C API (ctypes)
extern "C" {

const char* np_last_error() { return g_error.c_str(); }

// Creates a pool; rng holds 4 uint64 per env (state high, state low, inc high, inc low) as
// numpy's PCG64 reports them. Returns the pool id (>= 1), or 0 for bad arguments.
int np_create(const char* name, int task, int num_envs, int batch_size, int max_steps, const uint64_t* rng) {
  classic::TaskInfo info = classic::task_info(task);
  if (info.rows == 0 || num_envs < 1 || batch_size < 1 || batch_size > num_envs) return 0;
  auto p = std::make_unique<Pool>();
  p->name = name;
  p->task = task;
  p->n = num_envs;
  p->batch = batch_size;
  p->async = batch_size < num_envs;
  p->rows = info.rows;
  p->obs_dim = info.obs_dim;
  p->actions = info.actions;
  p->max_steps = max_steps;
  p->state.assign((size_t)num_envs * info.rows, 0.0);
  p->fresh.assign(num_envs, 1);
  p->rng.resize(num_envs);
  for (int i = 0; i < num_envs; ++i) {
    const uint64_t* r = rng + 4 * i;
    p->rng[i].state = ((unsigned __int128)r[0] << 64) | r[1];
    p->rng[i].inc = ((unsigned __int128)r[2] << 64) | r[3];
  }
  p->elapsed.assign(num_envs, 0);
  p->done.assign(num_envs, 1);  // a fresh env resets on its first step
  p->pending.assign(num_envs, 0);
  p->obs.assign((size_t)num_envs * info.obs_dim, 0.0f);
  p->reward.assign(num_envs, 0.0f);
  p->term.assign(num_envs, 0);
  p->trunc.assign(num_envs, 0);
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_pools.push_back(std::move(p));
  return (int)g_pools.size();
}

void np_close(int id) {
  Pool* p = find(id);
  if (!p) return;
  std::lock_guard<std::mutex> lock(p->mu);
  p->closed = true;
  p->state = {};
  p->obs = {};
  p->ready.clear();
}

int np_send(int id, const void* action, const int32_t* ids, int k) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  return p->send(action, ids, k, true);
}

// The batch's size goes to *count (fewer than batch_size after a sync pool's partial step).
int np_recv(int id, float* o, float* r, uint8_t* te, uint8_t* tr, int32_t* env_id, int32_t* el, int* count) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  return p->recv(o, r, te, tr, env_id, el, count);
}

// send then recv under one lock: the sync step is one call.
int np_step(int id, const void* action, const int32_t* ids, int k, float* o, float* r, uint8_t* te, uint8_t* tr,
            int32_t* env_id, int32_t* el, int* count) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  if (int c = p->send(action, ids, k, true)) return c;
  return p->recv(o, r, te, tr, env_id, el, count);
}

int np_reset(int id, const int32_t* ids, int k, float* o, float* r, uint8_t* te, uint8_t* tr, int32_t* env_id, int32_t* el) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  return p->reset(ids, k, o, r, te, tr, env_id, el);
}

int np_async_reset(int id) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  return p->async_reset();
}

// Reseeds envs ids (k of them) with rng: 4 uint64 per env, as np_create takes them; a reset
// (Gymnasium's reset(seed=...)) follows. Envs in flight are refused, and then no env is reseeded.
int np_seed(int id, const int32_t* ids, int k, const uint64_t* rng) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  if (p->closed) return fail(RUNTIME_ERROR, "reset() called on a closed EnvPool (%s)", p->name.c_str());
  std::vector<int32_t> busy;
  for (int j = 0; j < k; ++j) {
    if (ids[j] < 0 || ids[j] >= p->n) return fail(VALUE_ERROR, "env_id out of range [0, %d): %d", p->n, ids[j]);
    if (p->pending[ids[j]]) busy.push_back(ids[j]);
  }
  if (!busy.empty())
    return fail(VALUE_ERROR, "envs %s are not ready: they were sent and not yet received; call recv() first",
                id_list(busy.data(), (int)busy.size()).c_str());
  for (int j = 0; j < k; ++j) {
    const uint64_t* r = rng + 4 * j;
    p->rng[ids[j]].state = ((unsigned __int128)r[0] << 64) | r[1];
    p->rng[ids[j]].inc = ((unsigned __int128)r[2] << 64) | r[3];
  }
  return OK;
}

// The pool's whole state, for snapshot(); fails unless it is quiescent. Sizes: state n*rows,
// rng 4n, elapsed n, done n, fresh n, last_ids n (of which *num_last are set; -1: none).
int np_get_state(int id, double* state, uint64_t* rng, int32_t* elapsed, uint8_t* done, uint8_t* fresh,
                 int32_t* last_ids, int* num_last) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  if (p->num_pending) return fail(RUNTIME_ERROR, "snapshot() needs a quiescent pool: receive every env in flight first");
  std::copy(p->state.begin(), p->state.end(), state);
  for (int i = 0; i < p->n; ++i) {
    rng[4 * i] = (uint64_t)(p->rng[i].state >> 64);
    rng[4 * i + 1] = (uint64_t)p->rng[i].state;
    rng[4 * i + 2] = (uint64_t)(p->rng[i].inc >> 64);
    rng[4 * i + 3] = (uint64_t)p->rng[i].inc;
  }
  std::copy(p->elapsed.begin(), p->elapsed.end(), elapsed);
  std::copy(p->done.begin(), p->done.end(), done);
  std::copy(p->fresh.begin(), p->fresh.end(), fresh);
  std::copy(p->last_ids.begin(), p->last_ids.end(), last_ids);
  *num_last = p->has_last ? (int)p->last_ids.size() : -1;
  return OK;
}

int np_set_state(int id, const double* state, const uint64_t* rng, const int32_t* elapsed, const uint8_t* done,
                 const uint8_t* fresh, const int32_t* last_ids, int num_last) {
  Pool* p = find(id);
  std::lock_guard<std::mutex> lock(p->mu);
  if (p->num_pending) return fail(RUNTIME_ERROR, "restore() needs a quiescent pool: receive every env in flight first");
  std::copy(state, state + p->state.size(), p->state.begin());
  for (int i = 0; i < p->n; ++i) {
    p->rng[i].state = ((unsigned __int128)rng[4 * i] << 64) | rng[4 * i + 1];
    p->rng[i].inc = ((unsigned __int128)rng[4 * i + 2] << 64) | rng[4 * i + 3];
  }
  std::copy(elapsed, elapsed + p->n, p->elapsed.begin());
  std::copy(done, done + p->n, p->done.begin());
  std::copy(fresh, fresh + p->n, p->fresh.begin());
  p->has_last = num_last >= 0;
  p->last_ids.assign(last_ids, last_ids + std::max(num_last, 0));
  p->ready.clear();
  return OK;
}

// The math the tasks use, for the load-time check that it equals numpy's on this host.
void np_math(const double* x, int n, double* out) {
  for (int i = 0; i < n; ++i) {
    out[5 * i] = std::cos(x[i]);
    out[5 * i + 1] = std::sin(x[i]);
    out[5 * i + 2] = ::pow(x[i], 2.0);
    out[5 * i + 3] = (double)::powf((float)x[i], 2.0f);
    out[5 * i + 4] = classic::np_remainder(x[i], 2 * M_PI);
  }
}

}  // extern "C"

// ============================================================================ XLA FFI handlers
// Operands: an ordering token, the handle (int32 pool id), then the op's arrays; results: a
// token, the handle, then (for recv/step) obs, reward, terminated, truncated, env_id, elapsed.
// The attribute `pool` is the id the functions were made for: a handle of another pool fails.
namespace {

ffi::Error error_of(int code) {
  return ffi::Error(code == VALUE_ERROR ? ffi::ErrorCode::kInvalidArgument : ffi::ErrorCode::kFailedPrecondition, g_error);
}

Pool* checked_pool(const ffi::AnyBuffer& handle, int32_t pool, ffi::Error* err) {
  int32_t h = *static_cast<const int32_t*>(handle.untyped_data());
  Pool* p = find(pool);
  if (p == nullptr || h != pool) {
    fail(VALUE_ERROR, "this handle does not belong to this %s pool's xla() functions (handle %d, pool %d)",
         p ? p->name.c_str() : "?", h, pool);
    *err = error_of(VALUE_ERROR);
    return nullptr;
  }
  return p;
}

template <typename T>
T* ret(ffi::RemainingRets& rets, size_t i) {
  return static_cast<T*>((*rets.get<ffi::AnyBuffer>(i))->untyped_data());
}

int recv_into(Pool* p, ffi::RemainingRets& rets) {
  if (!p->async && p->num_pending > 0 && p->num_pending < p->batch)  // before anything is received
    return fail(VALUE_ERROR, "xla(): a sync pool's recv returns all %d envs (its results have that shape); %d are in "
                "flight: step some envs only through the Python API", p->batch, p->num_pending);
  int count;
  return p->recv(ret<float>(rets, 2), ret<float>(rets, 3), ret<uint8_t>(rets, 4), ret<uint8_t>(rets, 5),
                 ret<int32_t>(rets, 6), ret<int32_t>(rets, 7), &count);
}

// args: token, handle, action[, env_id]
int send_from(Pool* p, ffi::RemainingArgs& args) {
  ffi::AnyBuffer action = *args.get<ffi::AnyBuffer>(2);
  const int32_t* ids = nullptr;
  int k = action.dimensions().size() == 0 ? 1 : (int)action.dimensions()[0];
  if (args.size() > 3) {
    ffi::AnyBuffer env_id = *args.get<ffi::AnyBuffer>(3);
    ids = static_cast<const int32_t*>(env_id.untyped_data());
    k = (int)env_id.element_count();
  }
  return p->send(action.untyped_data(), ids, k, action.element_type() == ffi::DataType::S64);
}

void pass_handle(ffi::RemainingArgs& args, ffi::RemainingRets& rets) {
  *ret<int32_t>(rets, 1) = *static_cast<const int32_t*>((*args.get<ffi::AnyBuffer>(1)).untyped_data());
}

// One body for the three calls: recv (kSend false, kRecv true), send, step (both).
template <bool kSend, bool kRecv>
ffi::Error Call(ffi::RemainingArgs args, ffi::RemainingRets rets, int32_t pool) {
  ffi::Error err = ffi::Error::Success();
  Pool* p = checked_pool(*args.get<ffi::AnyBuffer>(1), pool, &err);
  if (!p) return err;
  std::lock_guard<std::mutex> lock(p->mu);
  pass_handle(args, rets);
  if (kSend)
    if (int c = send_from(p, args)) return error_of(c);
  if (kRecv)
    if (int c = recv_into(p, rets)) return error_of(c);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(np_xla_recv, (Call<false, true>),
                              ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<int32_t>("pool"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(np_xla_send, (Call<true, false>),
                              ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<int32_t>("pool"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(np_xla_step, (Call<true, true>),
                              ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<int32_t>("pool"));
