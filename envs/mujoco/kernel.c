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
// Threads: `nthread` workers wait for a job, spinning a while (SPIN_NS) before they sleep on a
// condition variable; a job hands out envs by an atomic counter and the last worker to finish
// signals the caller if it sleeps. `mjp_start` returns at once (the physics runs while the caller
// does other work), `mjp_wait` steps envs no worker has taken, then spins, then sleeps, until the
// job is done. The kernel's wake-ups (futex, inter-processor interrupt) happen only where a
// thread fell asleep.
// Up to NSLOT jobs are in flight, taken in the order they started: a worker done with its share of
// one job goes on to the next job's envs at once, so an async pool's next batch (started by the
// caller's send while the last batch steps) keeps every thread busy where a single job would leave
// threads idle behind its last env (EnvPool's threads take envs off one queue the same way).
// Python's ctypes releases the GIL around these calls.
//
// MuJoCo's profiling timer (mjcb_time, a process-wide pointer): the `mujoco` Python bindings install
// their own, a clock read, whenever an MjData is made while none is set, and mj_step reads it ~20 times
// a step to fill mjData.timer: 1-26% of a task's step time here (a dm_control task's 10 substeps read
// it ~400 times). A pool told of it (mjp_set_timer) turns that timer off as each job starts, as EnvPool's
// MuJoCo, which has none, steps; a timer the user set (mujoco.set_mjcb_time) is another function, and stays.

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mujoco/mujoco.h>

typedef void (*mj_fn)(const mjModel* m, mjData* d);
typedef mjtNum (*timer_fn)(void);
// a task's math for one env: out[0] the reward, out[1:] the observation (envs/mujoco/dmc/compiled.c)
typedef void (*task_fn)(const mjModel* m, const mjData* d, const double* params, const double* action, double* out);

enum { MODE_GYM = 0, MODE_DM = 1, MODE_DM_RK4 = 2, MODE_GYM_NO_POST = 3 };

// One call's envs: job t of a pool lives in its slot t % NSLOT until every worker checked out of it.
#define NSLOT 2
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
  _Alignas(64) atomic_int next;  // the next env to take (its own cache line: every thread writes it)
  atomic_int remaining;          // workers still on the job
} __attribute__((aligned(64))) Job;

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
  Job jobs[NSLOT];            // job t in jobs[t % NSLOT]
  atomic_long started;        // jobs started so far
  atomic_int sleepers;        // workers asleep on start_cv (or about to be)
  atomic_int caller_asleep;  // the caller asleep on done_cv
  atomic_int stop;
  int nthread, help;
  pthread_t* threads;
  pthread_mutex_t mu;
  pthread_cond_t start_cv, done_cv;
} Pool;

// MuJoCo's warnings of an unstable simulation (it resets the mjData when they fire)
static int instability(const mjData* d) {
  return d->warning[mjWARN_BADQACC].number + d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number;
}

static void run_env(const Pool* p, const Job* j, int k) {
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

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Waits without sleeping for up to SPIN_NS. A sleep and its wake-up go through the kernel (a
// futex, and an inter-processor interrupt to wake the sleeper), which cost 25-30 us a job on this
// project's 2-core VM: more than a small batch's physics. A worker that waits a little longer
// than the caller's turn between jobs (its Python: ~100-300 us) hands each job over in a few
// microseconds while jobs come back to back, and falls asleep when they stop. After a short burst
// of pause instructions it yields the core at each check, so other runnable threads (the
// learner's) are not kept off it.
#define SPIN_NS 300000L
static inline int spin_step(int i, long t0) {
  if (i < 64) {
    cpu_relax();
    return 1;
  }
  sched_yield();
  return (i & 15) != 0 || now_ns() - t0 <= SPIN_NS;
}

// 1 once *x differs from `value` (or stop is set), 0 if SPIN_NS passed first
static int spin_while_long(const atomic_long* x, long value, const atomic_int* stop) {
  long t0 = now_ns();
  for (int i = 0;; i++) {
    if (atomic_load(x) != value || atomic_load(stop)) return 1;
    if (!spin_step(i, t0)) return 0;
  }
}

// 1 once *x <= 0, 0 if SPIN_NS passed first
static int spin_while_positive(const atomic_int* x) {
  long t0 = now_ns();
  for (int i = 0;; i++) {
    if (atomic_load(x) <= 0) return 1;
    if (!spin_step(i, t0)) return 0;
  }
}

// Steps envs of job j no thread has taken yet.
static void take_envs(const Pool* p, Job* j) {
  for (int k; (k = atomic_fetch_add(&j->next, 1)) < j->n;) run_env(p, j, k);
}

static void* worker(void* arg) {
  Pool* p = (Pool*)arg;
  for (long t = 0;; t++) {  // job t, once started (its slot is not reused before this worker checks out)
    if (!spin_while_long(&p->started, t, &p->stop)) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);  // mjp_start reads it after bumping started: no lost wake-up
      while (!atomic_load(&p->stop) && atomic_load(&p->started) == t) pthread_cond_wait(&p->start_cv, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    Job* j = &p->jobs[t % NSLOT];
    take_envs(p, j);
    if (atomic_fetch_sub(&j->remaining, 1) == 1 && atomic_load(&p->caller_asleep)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
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
  p->nthread = nthread;
  p->help = help;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->start_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  p->threads = (pthread_t*)calloc(nthread, sizeof(pthread_t));
  for (int t = 0; t < nthread; t++) {
    if (pthread_create(&p->threads[t], NULL, worker, p) != 0) {
      p->nthread = t;  // the ones started are stopped by mjp_destroy
      return p;
    }
    if (affinity_offset >= 0) {  // EnvPool's thread_affinity_offset: worker t on core offset + t
      long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET((int)((affinity_offset + t) % (ncpu > 0 ? ncpu : 1)), &set);
      pthread_setaffinity_np(p->threads[t], sizeof(set), &set);
    }
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

void mjp_wait(Pool* p, long t);

// Starts a job and returns its number at once. Each env ids[k] steps with action row k, or resets
// to rows k of qpos_in and qvel_in where reset[k]. The caller keeps every array alive until the
// job is done, and sends no env twice before the job stepping it is done; up to NSLOT jobs are in
// flight (a start waits for the job NSLOT before it).
long mjp_start(Pool* p, const unsigned char* reset, const int* ids, int n, int nstep, const double* action,
               const double* qpos_in, const double* qvel_in, double** out, int* unstable, double* task_out) {
  long t = atomic_load(&p->started);
  if (t >= NSLOT) mjp_wait(p, t - NSLOT);  // its slot
  // (a relaxed read and write of a pointer: a thread stepping MuJoCo meanwhile sees the timer or none)
  if (p->timer_slot && __atomic_load_n(p->timer_slot, __ATOMIC_RELAXED) == p->bindings_timer)
    __atomic_store_n(p->timer_slot, (timer_fn)NULL, __ATOMIC_RELAXED);
  Job* j = &p->jobs[t % NSLOT];
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
  atomic_store(&j->next, 0);
  atomic_store(&j->remaining, p->nthread);
  atomic_store(&p->started, t + 1);  // publishes the job (sequentially consistent; only the caller starts jobs)
  if (atomic_load(&p->sleepers) > 0) {  // only a sleeping worker needs the kernel's wake-up
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
  }
  return t;
}

// Blocks until job t is done (at once if it was waited for already); the caller steps envs of it
// no worker has taken yet, then, while workers finish its last envs, envs of the jobs after it (a
// thread that waited idle there would bring back the barrier the slots remove).
void mjp_wait(Pool* p, long t) {
  long started = atomic_load(&p->started);
  if (t < 0 || t >= started || t < started - NSLOT) return;
  Job* j = &p->jobs[t % NSLOT];
  if (p->help) {
    take_envs(p, j);
    for (long u = t + 1; u < started && atomic_load(&j->remaining) > 0; u++) {
      Job* later = &p->jobs[u % NSLOT];
      for (int k; atomic_load(&j->remaining) > 0 && (k = atomic_fetch_add(&later->next, 1)) < later->n;)
        run_env(p, later, k);
    }
  }
  if (spin_while_positive(&j->remaining)) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->caller_asleep, 1);  // the last worker reads it after its decrement: no lost signal
  while (atomic_load(&j->remaining) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  atomic_store(&p->caller_asleep, 0);
  pthread_mutex_unlock(&p->mu);
}

// 1 if job t is done by the workers (mjp_wait steps what they left: with no worker, all of it), else 0.
int mjp_done(Pool* p, long t) {
  if (t < 0 || t >= atomic_load(&p->started) || t < atomic_load(&p->started) - NSLOT) return 1;
  return atomic_load(&p->jobs[t % NSLOT].remaining) == 0;
}

void mjp_destroy(Pool* p) {
  if (!p) return;
  for (long t = atomic_load(&p->started) - NSLOT; t < atomic_load(&p->started); t++) mjp_wait(p, t);
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->start_cv);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nthread; t++) pthread_join(p->threads[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->start_cv);
  pthread_cond_destroy(&p->done_cv);
  free(p->threads);
  free(p);
}
