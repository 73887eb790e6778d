// The Atari kernel's one C++ file: ALE's per-env preprocessing, `ale::vector::PreprocessedEnv` (the
// class ALE's own vector env steps: frame skip, max-pooling, resizing, stacking, noop starts,
// sticky actions, FIRE reset, the frame limit), reached through the symbols ale-py's extension
// module exports, behind a C API for envs/atari/kernel.c.
//
// ale-py ships no headers, so the class is declared here: its public functions (exported, called
// by their mangled names) and its data members, whose layout is ale-py 0.12.1's. The layout is
// only needed to size an env and to destroy its members (the destructor is not exported); every
// behaviour is ALE's own code. `ale_env_new` checks the layout on each env it makes (the members
// it can predict from its arguments, and a guard band past the declared size), so another
// ale-py whose layout differs is refused with a message rather than misread
// (envs/atari/build.py falls back to ALE's vector env then).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <random>
#include <string>
#include <vector>

namespace ale {

class ALEInterface {
 public:
  ~ALEInterface();
};

namespace vector {

struct OutputSlot {
  uint8_t* obs;
  int* env_id;
  int* reward;
  bool* terminated;
  bool* truncated;
  int* lives;
  int* frame_number;
  int* episode_frame_number;
  uint8_t* final_obs;
};

class PreprocessedEnv {
 public:
  PreprocessedEnv(int env_id, const std::filesystem::path& rom_path, int img_height, int img_width, int frame_skip,
                  bool maxpool, bool grayscale, int stack_num, int noop_max, bool use_fire_reset, bool episodic_life,
                  bool life_loss_info, bool reward_clipping, int max_episode_steps, float repeat_action_probability,
                  bool full_action_space, int seed);
  void set_seed(int seed);
  void set_action(int action_id, float paddle_strength);
  void reset();
  void step();
  void write_to(const OutputSlot& slot) const;
  bool is_episode_over() const;

  // ale-py 0.12.1's data members, in order (read here only by ale_env_new's layout check)
  int env_id_;
  std::filesystem::path rom_path_;
  ALEInterface* ale_;            // std::unique_ptr<ALEInterface> (one pointer); freed by ale_env_free
  std::vector<int> action_set_;  // std::vector<ale::Action>, an int enum
  int obs_format_;
  int channels_per_frame_;
  int raw_frame_height_;
  int raw_frame_width_;
  int raw_frame_size_;
  int raw_size_;
  int obs_frame_height_;
  int obs_frame_width_;
  int obs_size_;
  int stack_num_;
  int frame_skip_;
  bool maxpool_;
  int noop_max_;
  bool use_fire_reset_;
  bool has_fire_action_;
  bool episodic_life_;
  bool life_loss_info_;
  bool reward_clipping_;
  int max_episode_steps_;
  std::mt19937 rng_;
  std::uniform_int_distribution<> noop_dist_;
  int elapsed_steps_;
  bool game_over_;
  int lives_;
  bool was_life_lost_;
  int reward_;
  int current_action_id_;
  float current_paddle_strength_;
  int pending_seed_;
  std::vector<std::vector<uint8_t>> raw_frames_;
  std::vector<uint8_t> frame_stack_;
  int frame_stack_idx_;
};

}  // namespace vector
}  // namespace ale

using ale::vector::PreprocessedEnv;

namespace {

constexpr size_t kGuard = 4096;  // bytes past the declared size that must stay untouched
constexpr unsigned char kGuardByte = 0xA5;

void set_error(char* err, int errlen, const char* what) {
  if (err && errlen > 0) std::snprintf(err, (size_t)errlen, "%s", what);
}

bool guard_intact(const unsigned char* mem) {
  for (size_t i = 0; i < kGuard; ++i)
    if (mem[sizeof(PreprocessedEnv) + i] != kGuardByte) return false;
  return true;
}

void destroy(PreprocessedEnv* env) {
  if (env->ale_) {
    env->ale_->~ALEInterface();
    ::operator delete(env->ale_);
    env->ale_ = nullptr;
  }
  env->~PreprocessedEnv();
  ::operator delete(static_cast<void*>(env));
}

}  // namespace

extern "C" {

// Env env_id of a pool: ALE's PreprocessedEnv with the vector env's arguments (maxpool, ALE's own
// episodic_life and reward clipping off: the pool applies its contract). NULL, with a message in
// err, when ALE refuses or the layout check fails.
void* ale_env_new(const char* rom, int env_id, int img_height, int img_width, int frame_skip, int grayscale, int stack_num,
                  int noop_max, int use_fire_reset, int life_loss_info, int max_frames, float repeat_action_probability,
                  int full_action_space, char* err, int errlen) {
  unsigned char* mem = static_cast<unsigned char*>(::operator new(sizeof(PreprocessedEnv) + kGuard, std::nothrow));
  if (!mem) {
    set_error(err, errlen, "out of memory");
    return nullptr;
  }
  std::memset(mem, kGuardByte, sizeof(PreprocessedEnv) + kGuard);
  PreprocessedEnv* env;
  try {
    env = new (mem) PreprocessedEnv(env_id, std::filesystem::path(rom), img_height, img_width, frame_skip, true,
                                    grayscale != 0, stack_num, noop_max, use_fire_reset != 0, false, life_loss_info != 0,
                                    false, max_frames, repeat_action_probability, full_action_space != 0, -1);
  } catch (const std::exception& e) {
    ::operator delete(mem);
    set_error(err, errlen, e.what());
    return nullptr;
  }
  int channels = grayscale ? 1 : 3;
  int obs_size = img_height * img_width * channels;
  bool layout = guard_intact(mem) && env->env_id_ == env_id && env->channels_per_frame_ == channels &&
                env->raw_frame_height_ > 0 && env->raw_frame_width_ > 0 &&
                env->raw_frame_size_ == env->raw_frame_height_ * env->raw_frame_width_ &&
                env->raw_size_ == env->raw_frame_size_ * channels && env->obs_frame_height_ == img_height &&
                env->obs_frame_width_ == img_width && env->obs_size_ == obs_size && env->stack_num_ == stack_num &&
                env->frame_skip_ == frame_skip && env->maxpool_ && env->noop_max_ == noop_max &&
                env->use_fire_reset_ == (use_fire_reset != 0) && !env->episodic_life_ &&
                env->life_loss_info_ == (life_loss_info != 0) && !env->reward_clipping_ &&
                env->max_episode_steps_ == max_frames && env->pending_seed_ == -1 && env->raw_frames_.size() == 2 &&
                env->frame_stack_.size() == (size_t)stack_num * obs_size && !env->action_set_.empty();
  if (!layout) {
    // The members cannot be trusted: leak the env rather than destroy what may not be there.
    set_error(err, errlen,
              "ale-py's ale::vector::PreprocessedEnv is not laid out as envs/atari/ale_env.cc declares (ale-py 0.12.1's)");
    return nullptr;
  }
  return env;
}

int ale_env_num_actions(void* env) { return (int)static_cast<PreprocessedEnv*>(env)->action_set_.size(); }

// One agent step of the env, as ALE's vector env runs it: a reset (reseeded first if seed >= 0)
// where `reset` is set or the episode is over, else the action; then the env's result into row 0
// of the given arrays. Returns 0, or 1 with ALE's message in err.
int ale_env_run(void* handle, int action, int reset, int seed, uint8_t* obs, int32_t* reward, uint8_t* terminated,
                uint8_t* truncated, int32_t* lives, int32_t* frame_number, int32_t* episode_frame_number, char* err,
                int errlen) {
  auto* env = static_cast<PreprocessedEnv*>(handle);
  try {
    if (reset || env->is_episode_over()) {
      if (seed >= 0) env->set_seed(seed);
      env->reset();
    } else {
      env->set_action(action, 1.0f);
      env->step();
    }
    int env_id;
    ale::vector::OutputSlot slot{obs, &env_id, reward, reinterpret_cast<bool*>(terminated),
                                 reinterpret_cast<bool*>(truncated), lives, frame_number, episode_frame_number, nullptr};
    env->write_to(slot);
  } catch (const std::exception& e) {
    set_error(err, errlen, e.what());
    return 1;
  }
  return 0;
}

void ale_env_free(void* env) {
  if (env) destroy(static_cast<PreprocessedEnv*>(env));
}

}  // extern "C"
