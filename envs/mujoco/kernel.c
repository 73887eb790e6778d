// Steps a batch of MuJoCo simulations on a persistent thread pool, exactly as Gymnasium's MuJoCo
// envs or dm_control's suite step one (envs/mujoco/backend.py, DESIGN.md "Native MuJoCo").
//
// Each env is an mjData the Python side made (mujoco.MjData); this file gets its address and the
// addresses of the fields the task reads (qpos, qvel, xpos, cfrc_ext, ...), and its mjModel (one
// shared, or one per env where a task moves its targets per episode). It is compiled against the
// headers the `mujoco` package ships, so mjData's layout is that library's. A job runs, for each
// env of the call, by the pool's mode:
//   step, MODE_GYM: ctrl <- the env's action; mj_step x nstep; mj_rnePostConstraint (Gymnasium's
//          MujocoEnv._step_mujoco_simulation);
//   step, MODE_GYM_NO_POST: the same without mj_rnePostConstraint (EnvPool's pre-v5 ids,
//          post_constraint=False: cfrc_ext and cacc are not computed);
//   step, MODE_DM: ctrl <- the action; mj_step2; mj_step x (nstep - 1); mj_step1 (dm_control's
//          Physics.step with legacy_step, for Euler and implicit integrators);
//   step, MODE_DM_RK4: ctrl <- the action; mj_step x nstep; mj_step1 (the same for RK4);
//   reset (flag 1): mj_resetData; qpos, qvel <- the given rows; mj_forward (Gymnasium's reset and
//          set_state), for the envs the job marks reset;
//   reset done (flag 2): nothing (the caller reset the env's mjData, as dm_control's tasks do);
// then the fields are copied to batched outputs, row k for the job's k-th env, and where the pool
// has a task function (mjp_set_task: a dm_control task's observation and reward in C,
// envs/mujoco/dmc/compiled.c) it writes row k of the job's task_out from the env's mjData.
// MuJoCo's own functions come as pointers from the library the `mujoco` package loaded, so the
// physics is bit for bit the one Gymnasium runs.
//
// Threads: envs/native/jobs.h's pool (workers, the caller helping while it waits, JOB_SLOTS jobs
// in flight); a job's items are its envs.
//
// MuJoCo's profiling timer (mjcb_time, a process-wide pointer): the `mujoco` Python bindings install
// their own, a clock read, whenever an MjData is made while none is set, and mj_step reads it ~20 times
// a step to fill mjData.timer: 1-26% of a task's step time here (a dm_control task's 10 substeps read
// it ~400 times). A pool told of it (mjp_set_timer) turns that timer off as each job starts, as EnvPool's
// MuJoCo, which has none, steps; a timer the user set (mujoco.set_mjcb_time) is another function, and stays.

#include "jobs.h"

#include <mujoco/mujoco.h>

typedef void (*mj_fn)(const mjModel* m, mjData* d);
typedef mjtNum (*timer_fn)(void);
// a task's math for one env: out[0] the reward, out[1:] the observation (envs/mujoco/dmc/compiled.c)
typedef void (*task_fn)(const mjModel* m, const mjData* d, const double* params, const double* action, double* out);

enum { MODE_GYM = 0, MODE_DM = 1, MODE_DM_RK4 = 2, MODE_GYM_NO_POST = 3 };

// One call's envs: job t's arguments live in args[t % JOB_SLOTS] until it is done.
typedef struct {
  const unsigned char* reset;  // n: 1 where the env resets instead of stepping, 2 where it was reset
  const int* ids;
  int n, nstep;
  const double* action;  // n * nu (reset rows unused)
  const double* qpos_in; // n * nq (step rows unused)
  const double* qvel_in; // n * nv
  double** out;          // nfield: n * field_size[f] each
  int* unstable;         // n: warnings raised in this job (bad qacc, qpos, qvel), 0 if none
  double* task_out;      // n * task_width (with a task function)
} Job;

typedef struct {
  // set once
  const mjModel** models; // num_envs
  mjData** data;         // num_envs
  double** field_src;    // num_envs * nfield
  const int* field_size; // nfield, doubles
  int num_envs, nfield;
  mj_fn step, rne_post, reset_data, forward, step1, step2;
  int mode;
  task_fn task;               // NULL: the caller computes observations and rewards from the fields
  const double* task_params;
  int task_width;             // doubles of task_out per env
  timer_fn* timer_slot;       // libmujoco's mjcb_time, or NULL: leave the timer as it is
  timer_fn bindings_timer;    // the timer the bindings install, turned off at each start
  Job args[JOB_SLOTS];        // job t's in args[t % JOB_SLOTS]
  JobPool jobs;
} Pool;

// MuJoCo's warnings of an unstable simulation (it resets the mjData when they fire)
static int instability(const mjData* d) {
  return d->warning[mjWARN_BADQACC].number + d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number;
}

static void run_env(void* ctx, const void* args, int k) {
  const Pool* p = (const Pool*)ctx;
  const Job* j = (const Job*)args;
  const mjModel* m = p->models[j->ids[k]];
  mjData* d = p->data[j->ids[k]];
  int before = instability(d);
  if (!j->reset[k]) {
    memcpy(d->ctrl, j->action + (size_t)k * m->nu, sizeof(mjtNum) * m->nu);
    if (p->mode == MODE_GYM || p->mode == MODE_GYM_NO_POST) {
      for (int s = 0; s < j->nstep; s++) p->step(m, d);
      if (p->mode == MODE_GYM) p->rne_post(m, d);
    } else {
      int s = 0;
      if (p->mode == MODE_DM) {
        p->step2(m, d);
        s = 1;
      }
      for (; s < j->nstep; s++) p->step(m, d);
      p->step1(m, d);
    }
  } else if (j->reset[k] == 1) {
    p->reset_data(m, d);
    memcpy(d->qpos, j->qpos_in + (size_t)k * m->nq, sizeof(mjtNum) * m->nq);
    memcpy(d->qvel, j->qvel_in + (size_t)k * m->nv, sizeof(mjtNum) * m->nv);
    p->forward(m, d);
  }
  int i = j->ids[k];
  j->unstable[k] = instability(d) - before;
  for (int f = 0; f < p->nfield; f++) {
    int size = p->field_size[f];
    memcpy(j->out[f] + (size_t)k * size, p->field_src[(size_t)i * p->nfield + f], sizeof(double) * size);
  }
  if (p->task) p->task(m, d, p->task_params, j->action + (size_t)k * m->nu, j->task_out + (size_t)k * p->task_width);
}

Pool* mjp_create(const mjModel** models, mjData** data, double** field_src, const int* field_size, int num_envs,
                 int nfield, void* step, void* rne_post, void* reset_data, void* forward, void* step1, void* step2,
                 int mode, int nthread, int affinity_offset, int help) {
  size_t size = (sizeof(Pool) + 63) / 64 * 64;  // its jobs are cache-line aligned
  Pool* p = (Pool*)aligned_alloc(64, size);
  if (!p) return NULL;
  memset(p, 0, size);
  p->models = models;
  p->data = data;
  p->field_src = field_src;
  p->field_size = field_size;
  p->num_envs = num_envs;
  p->nfield = nfield;
  p->step = (mj_fn)step;
  p->rne_post = (mj_fn)rne_post;
  p->reset_data = (mj_fn)reset_data;
  p->forward = (mj_fn)forward;
  p->step1 = (mj_fn)step1;
  p->step2 = (mj_fn)step2;
  p->mode = mode;
  if (jobs_init(&p->jobs, run_env, p, nthread, affinity_offset, help) != 0) {
    jobs_destroy(&p->jobs);
    free(p);
    return NULL;
  }
  return p;
}

// Sets the task function every later job runs per env (fn NULL: none); params stay the caller's.
void mjp_set_task(Pool* p, void* fn, const double* params, int width) {
  p->task = (task_fn)fn;
  p->task_params = params;
  p->task_width = width;
}

// Tells the pool where libmujoco's mjcb_time is and which timer there is the bindings' own (see the top).
void mjp_set_timer(Pool* p, void* slot, void* bindings_timer) {
  p->timer_slot = (timer_fn*)slot;
  p->bindings_timer = (timer_fn)bindings_timer;
}

// Starts a job and returns its number at once. Each env ids[k] steps with action row k, or resets
// to rows k of qpos_in and qvel_in where reset[k]. The caller keeps every array alive until the
// job is done, and sends no env twice before the job stepping it is done; up to JOB_SLOTS jobs are
// in flight (a start waits for the job JOB_SLOTS before it).
long mjp_start(Pool* p, const unsigned char* reset, const int* ids, int n, int nstep, const double* action,
               const double* qpos_in, const double* qvel_in, double** out, int* unstable, double* task_out) {
  long t = jobs_reserve(&p->jobs);
  // (a relaxed read and write of a pointer: a thread stepping MuJoCo meanwhile sees the timer or none)
  if (p->timer_slot && __atomic_load_n(p->timer_slot, __ATOMIC_RELAXED) == p->bindings_timer)
    __atomic_store_n(p->timer_slot, (timer_fn)NULL, __ATOMIC_RELAXED);
  Job* j = &p->args[t % JOB_SLOTS];
  j->reset = reset;
  j->ids = ids;
  j->n = n;
  j->nstep = nstep;
  j->action = action;
  j->qpos_in = qpos_in;
  j->qvel_in = qvel_in;
  j->out = out;
  j->unstable = unstable;
  j->task_out = task_out;
  jobs_publish(&p->jobs, t, j, n);
  return t;
}

// Blocks until job t is done (jobs_wait: the caller steps envs no worker has taken).
void mjp_wait(Pool* p, long t) { jobs_wait(&p->jobs, t); }

// 1 if job t is done by the workers (mjp_wait steps what they left: with no worker, all of it), else 0.
int mjp_done(Pool* p, long t) { return jobs_done(&p->jobs, t); }

void mjp_destroy(Pool* p) {
  if (!p) return;
  jobs_destroy(&p->jobs);
  free(p);
}
