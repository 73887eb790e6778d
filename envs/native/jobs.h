// A persistent pthread pool that runs jobs of n items: the thread machinery of the native kernels
// (envs/mujoco/kernel.c steps MuJoCo envs, envs/atari/kernel.c steps ALE's envs). Header-only C;
// a kernel includes it and gives the function that runs item k of a job (`JobRun`).
//
// Threads: `nthread` workers wait for a job, spinning a while (SPIN_NS) before they sleep on a
// condition variable; a job hands out items by an atomic counter and the last worker to finish
// signals the caller if it sleeps. `jobs_publish` returns at once (the items run while the caller
// does other work), `jobs_wait` runs items no worker has taken (with `help`), then spins, then
// sleeps, until the job is done. The kernel's wake-ups (futex, inter-processor interrupt) happen
// only where a thread fell asleep.
// Up to JOB_SLOTS jobs are in flight, taken in the order they started: a worker done with its share
// of one job goes on to the next job's items at once, so an async pool's next batch (started by the
// caller's send while the last batch steps) keeps every thread busy where a single job would leave
// threads idle behind its last item (EnvPool's threads take envs off one queue the same way).
// Python's ctypes releases the GIL around the kernels' calls.
//
// A job's arguments are the kernel's: `jobs_reserve` returns the job's number t once its slot
// (t % JOB_SLOTS) is free, the kernel fills its own per-slot arguments, and `jobs_publish` starts it.
#ifndef ENVS_NATIVE_JOBS_H_
#define ENVS_NATIVE_JOBS_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JOB_SLOTS 2

// Runs item k of job `args` (the kernel's arguments of that job); ctx is the kernel's pool.
typedef void (*JobRun)(void* ctx, const void* args, int k);

typedef struct {
  const void* args;
  int n;
  _Alignas(64) atomic_int next;  // the next item to take (its own cache line: every thread writes it)
  atomic_int remaining;          // workers still on the job
} __attribute__((aligned(64))) JobSlot;

typedef struct {
  JobRun run;
  void* ctx;
  JobSlot slots[JOB_SLOTS];  // job t in slots[t % JOB_SLOTS] until every worker checked out of it
  atomic_long started;       // jobs started so far
  atomic_int sleepers;       // workers asleep on start_cv (or about to be)
  atomic_int caller_asleep;  // the caller asleep on done_cv
  atomic_int stop;
  int nthread, help;
  pthread_t* threads;
  pthread_mutex_t mu;
  pthread_cond_t start_cv, done_cv;
} JobPool;

static long jobs_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline void jobs_cpu_relax(void) {
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
static inline int jobs_spin_step(int i, long t0) {
  if (i < 64) {
    jobs_cpu_relax();
    return 1;
  }
  sched_yield();
  return (i & 15) != 0 || jobs_now_ns() - t0 <= SPIN_NS;
}

// 1 once *x differs from `value` (or stop is set), 0 if SPIN_NS passed first
static int jobs_spin_while_long(const atomic_long* x, long value, const atomic_int* stop) {
  long t0 = jobs_now_ns();
  for (int i = 0;; i++) {
    if (atomic_load(x) != value || atomic_load(stop)) return 1;
    if (!jobs_spin_step(i, t0)) return 0;
  }
}

// 1 once *x <= 0, 0 if SPIN_NS passed first
static int jobs_spin_while_positive(const atomic_int* x) {
  long t0 = jobs_now_ns();
  for (int i = 0;; i++) {
    if (atomic_load(x) <= 0) return 1;
    if (!jobs_spin_step(i, t0)) return 0;
  }
}

// Runs items of job j no thread has taken yet.
static void jobs_take(JobPool* p, JobSlot* j) {
  for (int k; (k = atomic_fetch_add(&j->next, 1)) < j->n;) p->run(p->ctx, j->args, k);
}

static void* jobs_worker(void* arg) {
  JobPool* p = (JobPool*)arg;
  for (long t = 0;; t++) {  // job t, once started (its slot is not reused before this worker checks out)
    if (!jobs_spin_while_long(&p->started, t, &p->stop)) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);  // jobs_publish reads it after bumping started: no lost wake-up
      while (!atomic_load(&p->stop) && atomic_load(&p->started) == t) pthread_cond_wait(&p->start_cv, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    JobSlot* j = &p->slots[t % JOB_SLOTS];
    jobs_take(p, j);
    if (atomic_fetch_sub(&j->remaining, 1) == 1 && atomic_load(&p->caller_asleep)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

// Starts nthread workers (worker t pinned to core affinity_offset + t when that is >= 0); with
// help, the caller runs items too while it waits. Returns 0, or -1 if no thread could start
// (those started are stopped by jobs_destroy either way).
static int jobs_init(JobPool* p, JobRun run, void* ctx, int nthread, int affinity_offset, int help) {
  memset(p, 0, sizeof(*p));
  p->run = run;
  p->ctx = ctx;
  p->help = help;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->start_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  p->threads = (pthread_t*)calloc(nthread > 0 ? nthread : 1, sizeof(pthread_t));
  if (!p->threads) return -1;
  for (int t = 0; t < nthread; t++) {
    if (pthread_create(&p->threads[t], NULL, jobs_worker, p) != 0) return t > 0 || help ? 0 : -1;
    p->nthread = t + 1;
    if (affinity_offset >= 0) {  // EnvPool's thread_affinity_offset: worker t on core offset + t
      long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET((int)((affinity_offset + t) % (ncpu > 0 ? ncpu : 1)), &set);
      pthread_setaffinity_np(p->threads[t], sizeof(set), &set);
    }
  }
  return 0;
}

static void jobs_wait(JobPool* p, long t);

// The next job's number, once its slot is free (waiting for the job JOB_SLOTS before it).
static long jobs_reserve(JobPool* p) {
  long t = atomic_load(&p->started);
  if (t >= JOB_SLOTS) jobs_wait(p, t - JOB_SLOTS);
  return t;
}

// Starts job t (the number jobs_reserve gave) of n items with the kernel's arguments `args`, which
// stay alive and unchanged until the job is done.
static void jobs_publish(JobPool* p, long t, const void* args, int n) {
  JobSlot* j = &p->slots[t % JOB_SLOTS];
  j->args = args;
  j->n = n;
  atomic_store(&j->next, 0);
  atomic_store(&j->remaining, p->nthread);
  atomic_store(&p->started, t + 1);  // publishes the job (sequentially consistent; only the caller starts jobs)
  if (atomic_load(&p->sleepers) > 0) {  // only a sleeping worker needs the kernel's wake-up
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

// Blocks until job t is done (at once if it was waited for already); the caller runs items of it
// no worker has taken yet, then, while workers finish its last items, items of the jobs after it
// (a thread that waited idle there would bring back the barrier the slots remove).
static void jobs_wait(JobPool* p, long t) {
  long started = atomic_load(&p->started);
  if (t < 0 || t >= started || t < started - JOB_SLOTS) return;
  JobSlot* j = &p->slots[t % JOB_SLOTS];
  if (p->help) {
    jobs_take(p, j);
    for (long u = t + 1; u < started && atomic_load(&j->remaining) > 0; u++) {
      JobSlot* later = &p->slots[u % JOB_SLOTS];
      for (int k; atomic_load(&j->remaining) > 0 && (k = atomic_fetch_add(&later->next, 1)) < later->n;)
        p->run(p->ctx, later->args, k);
    }
  }
  if (jobs_spin_while_positive(&j->remaining)) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->caller_asleep, 1);  // the last worker reads it after its decrement: no lost signal
  while (atomic_load(&j->remaining) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  atomic_store(&p->caller_asleep, 0);
  pthread_mutex_unlock(&p->mu);
}

// 1 if job t is done by the workers (jobs_wait runs what they left: with no worker, all of it), else 0.
static int jobs_done(JobPool* p, long t) {
  if (t < 0 || t >= atomic_load(&p->started) || t < atomic_load(&p->started) - JOB_SLOTS) return 1;
  return atomic_load(&p->slots[t % JOB_SLOTS].remaining) == 0;
}

// Waits for the jobs in flight, stops the workers and frees what jobs_init made (not p itself).
static void jobs_destroy(JobPool* p) {
  for (long t = atomic_load(&p->started) - JOB_SLOTS; t < atomic_load(&p->started); t++) jobs_wait(p, t);
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->start_cv);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nthread; t++) pthread_join(p->threads[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->start_cv);
  pthread_cond_destroy(&p->done_cv);
  free(p->threads);
}

#endif  // ENVS_NATIVE_JOBS_H_
