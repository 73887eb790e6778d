// dm_control's task math in C for the tasks that declare it (DmcTask.compiled): one env's
// observation and reward from its mjData after a step, run by the kernel's threads beside the
// physics (envs/mujoco/kernel.c's task hook), as EnvPool's C++ tasks do. Each function is the same
// arithmetic, in the same order, as its task's numpy `observe` and `reward` (envs/mujoco/dmc/*.py),
// which stay the readable definition and the reference the tests hold this file to
// (tests/test_dmc.py), beside dm_control itself.
//
// A task function writes out[0] = the reward and out[1:] = the observation's keys, flattened and
// concatenated in dm_control's order. `prm` holds what the task's Python side fixed once (body and
// joint addresses, the sigmoids' scales as rewards.scale computes them, flags).

#include <math.h>

#include <mujoco/mujoco.h>

// rewards.tolerance(x, bounds=(0, 0), margin, "gaussian") given the gaussian's scale
static double gaussian_at(double x, double margin, double scale) {
  double t = (fabs(x - 0.0) / margin) * scale;
  return exp(-0.5 * (t * t));
}

// rewards.tolerance(x, bounds=(0, 0), margin, "quadratic") given the quadratic's scale
static double quadratic_at(double x, double margin, double scale) {
  double t = (fabs(x - 0.0) / margin) * scale;
  return fmax(1.0 - t * t, 0.0);
}

// numpy's min: NaN if any is NaN
static double nan_min(double a, double b) { return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b); }

// dm_control's cartpole (suite/cartpole.py): observation position (the cart's x, each pole's xmat zz
// and xz), velocity (qvel). prm: slider qpos address, sparse (0/1), gaussian scale (value 0.1 at the
// margin), quadratic scale (value 0 at the margin).
void dmc_cartpole(const mjModel* m, const mjData* d, const double* prm, const double* action, double* out) {
  int slider = (int)prm[0], sparse = (int)prm[1];
  double gauss = prm[2], quad = prm[3];
  double cart = d->qpos[slider];
  double* obs = out + 1;
  int j = 0;
  obs[j++] = cart;
  for (int b = 2; b < m->nbody; b++) {
    obs[j++] = d->xmat[9 * b + 8];  // zz
    obs[j++] = d->xmat[9 * b + 2];  // xz
  }
  for (int v = 0; v < m->nv; v++) obs[j++] = d->qvel[v];
  if (sparse) {
    double reward = (-0.25 <= cart && cart <= 0.25) ? 1.0 : 0.0;
    double angle = 1.0;
    for (int b = 2; b < m->nbody; b++) {
      double c = d->xmat[9 * b + 8];
      angle *= (0.995 <= c && c <= 1.0) ? 1.0 : 0.0;
    }
    out[0] = reward * angle;
    return;
  }
  double upright = 0.0;
  for (int b = 2; b < m->nbody; b++) upright += (d->xmat[9 * b + 8] + 1) / 2;
  upright /= (double)(m->nbody - 2);
  double centered = (1 + gaussian_at(cart, 2.0, gauss)) / 2;
  double small_control = (4 + quadratic_at(action[0], 1.0, quad)) / 5;
  double slowest = INFINITY;
  for (int v = 1; v < m->nv; v++) slowest = nan_min(slowest, gaussian_at(d->qvel[v], 5.0, gauss));
  double small_velocity = (1 + slowest) / 2;
  out[0] = upright * small_control * small_velocity * centered;
}
