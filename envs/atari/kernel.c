// The Atari kernel: a pool's envs (ALE's PreprocessedEnv each, made and stepped through
// envs/atari/ale_env.cc) on envs/native/jobs.h's threads. A job is any set of envs, each with its
// action, its reset flag and its seed, so a pool steps or resets any subset of its envs, and up to
// JOB_SLOTS jobs are in flight (an async pool's next batch steps while the last one is read).
// Each env writes its result into row k of the job's arrays, as ALE's vector env writes a batch:
// the stacked frames, the raw reward, game over or life loss (life_loss_info), ALE's frame limit,
// lives and ALE's frame counters. The contract above that (EnvPool's auto-reset rule, elapsed
// steps, reward clipping, channel-first frames) is envs/atari/native.py's.
#include "jobs.h"

#include <stdint.h>
#include <stdio.h>

void* ale_env_new(const char* rom, int env_id, int img_height, int img_width, int frame_skip, int grayscale, int stack_num,
                  int noop_max, int use_fire_reset, int life_loss_info, int max_frames, float repeat_action_probability,
                  int full_action_space, char* err, int errlen);
int ale_env_num_actions(void* env);
int ale_env_run(void* env, int action, int reset, int seed, uint8_t* obs, int32_t* reward, uint8_t* terminated,
                uint8_t* truncated, int32_t* lives, int32_t* frame_number, int32_t* episode_frame_number, char* err,
                int errlen);
void ale_env_free(void* env);

#define ERROR_LEN 512

typedef struct {
  const int32_t* ids;      // n
  const int32_t* action;   // n
  const uint8_t* reset;    // n: 1 where the env resets (the caller's reset; an ended episode resets anyway)
  const int32_t* seed;     // n: the seed of a reset (-1: keep the env's stream)
  uint8_t* obs;            // n * obs_size
  int32_t* reward;         // n, and the rest n each
  uint8_t* terminated;
  uint8_t* truncated;
  int32_t* lives;
  int32_t* frame_number;
  int32_t* episode_frame_number;
} Job;

typedef struct {
  void** envs;
  int num_envs;
  size_t obs_size;  // bytes of one env's stacked frames
  // what ale_env_new takes, for the making job
  const char* rom;
  int img_height, img_width, frame_skip, grayscale, stack_num, noop_max, use_fire_reset, life_loss_info, max_frames;
  int full_action_space;
  float repeat_action_probability;
  Job args[JOB_SLOTS];  // job t's in args[t % JOB_SLOTS]
  JobPool jobs;
  atomic_int failed;  // an env failed since the last atp_error: its message is in error
  char error[ERROR_LEN];
} Pool;

static void fail(Pool* p, const char* what) {
  if (atomic_exchange(&p->failed, 1) == 0) snprintf(p->error, ERROR_LEN, "%s", what);
}

static void run_env(void* ctx, const void* args, int k) {
  Pool* p = (Pool*)ctx;
  const Job* j = (const Job*)args;
  char err[ERROR_LEN];
  if (j == NULL) {  // the making job: env k
    p->envs[k] = ale_env_new(p->rom, k, p->img_height, p->img_width, p->frame_skip, p->grayscale, p->stack_num,
                             p->noop_max, p->use_fire_reset, p->life_loss_info, p->max_frames,
                             p->repeat_action_probability, p->full_action_space, err, ERROR_LEN);
    if (!p->envs[k]) fail(p, err);
    return;
  }
  int i = j->ids[k];
  if (ale_env_run(p->envs[i], j->action[k], j->reset[k], j->seed[k], j->obs + (size_t)k * p->obs_size, j->reward + k,
                  j->terminated + k, j->truncated + k, j->lives + k, j->frame_number + k, j->episode_frame_number + k,
                  err, ERROR_LEN))
    fail(p, err);
}

void atp_destroy(Pool* p);

// Makes a pool of num_envs envs of the ROM at `rom` (in parallel, on the pool's threads: nthread
// workers, and the caller), or returns NULL with the reason in err.
Pool* atp_create(const char* rom, int num_envs, int img_height, int img_width, int frame_skip, int grayscale,
                 int stack_num, int noop_max, int use_fire_reset, int life_loss_info, int max_frames,
                 float repeat_action_probability, int full_action_space, int nthread, int affinity_offset, char* err,
                 int errlen) {
  size_t size = (sizeof(Pool) + 63) / 64 * 64;  // its job slots are cache-line aligned
  Pool* p = (Pool*)aligned_alloc(64, size);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  memset(p, 0, size);
  p->envs = (void**)calloc(num_envs, sizeof(void*));
  p->num_envs = num_envs;
  p->obs_size = (size_t)img_height * img_width * (grayscale ? 1 : 3) * stack_num;
  p->rom = rom;
  p->img_height = img_height;
  p->img_width = img_width;
  p->frame_skip = frame_skip;
  p->grayscale = grayscale;
  p->stack_num = stack_num;
  p->noop_max = noop_max;
  p->use_fire_reset = use_fire_reset;
  p->life_loss_info = life_loss_info;
  p->max_frames = max_frames;
  p->full_action_space = full_action_space;
  p->repeat_action_probability = repeat_action_probability;
  if (!p->envs || jobs_init(&p->jobs, run_env, p, nthread, affinity_offset, 1) != 0) {
    snprintf(err, errlen, "could not start the pool's threads");
    atp_destroy(p);
    return NULL;
  }
  long t = jobs_reserve(&p->jobs);
  jobs_publish(&p->jobs, t, NULL, num_envs);
  jobs_wait(&p->jobs, t);
  if (atomic_load(&p->failed)) {
    snprintf(err, errlen, "%s", p->error);
    atp_destroy(p);
    return NULL;
  }
  p->rom = NULL;  // the caller's string is not kept
  return p;
}

int atp_num_actions(Pool* p) { return ale_env_num_actions(p->envs[0]); }

// Starts a job of n envs and returns its number at once: env ids[k] resets where reset[k] (with
// seed[k] when >= 0) or its episode ended, else steps with action[k]; its result goes to row k of
// the outputs. The caller keeps every array alive until the job is done, and sends no env twice
// before the job stepping it is done.
long atp_start(Pool* p, const int32_t* ids, const int32_t* action, const uint8_t* reset, const int32_t* seed, int n,
               uint8_t* obs, int32_t* reward, uint8_t* terminated, uint8_t* truncated, int32_t* lives,
               int32_t* frame_number, int32_t* episode_frame_number) {
  long t = jobs_reserve(&p->jobs);
  Job* j = &p->args[t % JOB_SLOTS];
  j->ids = ids;
  j->action = action;
  j->reset = reset;
  j->seed = seed;
  j->obs = obs;
  j->reward = reward;
  j->terminated = terminated;
  j->truncated = truncated;
  j->lives = lives;
  j->frame_number = frame_number;
  j->episode_frame_number = episode_frame_number;
  jobs_publish(&p->jobs, t, j, n);
  return t;
}

// Blocks until job t is done (the caller steps envs no worker has taken).
void atp_wait(Pool* p, long t) { jobs_wait(&p->jobs, t); }

// 1 if job t is done by the workers (atp_wait steps what they left), else 0.
int atp_done(Pool* p, long t) { return jobs_done(&p->jobs, t); }

// The message of an env that failed since the last call (ALE's own), or NULL if none did.
const char* atp_error(Pool* p) {
  if (!atomic_load(&p->failed)) return NULL;
  atomic_store(&p->failed, 0);
  return p->error;
}

void atp_destroy(Pool* p) {
  if (!p) return;
  jobs_destroy(&p->jobs);
  if (p->envs) {
    for (int i = 0; i < p->num_envs; i++) ale_env_free(p->envs[i]);
    free(p->envs);
  }
  free(p);
}
