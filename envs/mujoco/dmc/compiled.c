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

enum { GAUSSIAN, LINEAR, QUADRATIC };

// rewards.sigmoid(d, value_at_1, kind) given the kind's scale (rewards.scale)
static double sigmoid(double d, int kind, double scale) {
  double t = d * scale;
  switch (kind) {
    case GAUSSIAN: return exp(-0.5 * (t * t));
    case LINEAR: return fabs(t) < 1 ? 1 - t : 0.0;
    default: return fmax(1 - t * t, 0.0);  // QUADRATIC
  }
}

// rewards.tolerance(x, (lower, upper), margin, kind): 1 inside the bounds, else the sigmoid of the
// distance to the nearer bound over the margin (for a point target, |x - lower| / margin: the same
// value); margin 0: 1 inside, 0 outside. NaN is outside.
static double tolerance(double x, double lower, double upper, double margin, int kind, double scale) {
  int in_bounds = lower <= x && x <= upper;
  if (margin == 0) return in_bounds ? 1.0 : 0.0;
  if (lower == upper) return sigmoid(fabs(x - lower) / margin, kind, scale);
  if (in_bounds) return 1.0;
  return sigmoid((x < lower ? lower - x : x - upper) / margin, kind, scale);
}

static double gaussian_at(double x, double margin, double scale) { return tolerance(x, 0, 0, margin, GAUSSIAN, scale); }

static double quadratic_at(double x, double margin, double scale) { return tolerance(x, 0, 0, margin, QUADRATIC, scale); }

// copies n doubles; returns n
static int copy_out(double* out, const double* src, int n) {
  for (int i = 0; i < n; i++) out[i] = src[i];
  return n;
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
  copy_out(obs + j, d->qvel, m->nv);
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

// dm_control's cheetah run (suite/cheetah.py): observation position (qpos[1:]), velocity (qvel);
// reward the torso's subtree linear velocity along x, linear up to run_speed. prm: the velocity
// sensor's address, run_speed, the linear scale (value 0 at the margin).
void dmc_cheetah(const mjModel* m, const mjData* d, const double* prm, const double* action, double* out) {
  int sensor = (int)prm[0];
  double run_speed = prm[1], lin = prm[2];
  int j = 1 + copy_out(out + 1, d->qpos + 1, m->nq - 1);
  copy_out(out + j, d->qvel, m->nv);
  out[0] = tolerance(d->sensordata[sensor], run_speed, INFINITY, run_speed, LINEAR, lin);
}

// dm_control's walker (suite/walker.py): observation orientations (each body's xmat xx and xz but
// the world's), height (the torso's z), velocity (qvel). prm: torso body id, velocity sensor's
// address, move_speed, stand_height, the gaussian scale (0.1 at the margin), the linear scale (0.5).
void dmc_walker(const mjModel* m, const mjData* d, const double* prm, const double* action, double* out) {
  int torso = (int)prm[0], sensor = (int)prm[1];
  double move_speed = prm[2], stand_height = prm[3], gauss = prm[4], lin = prm[5];
  double* obs = out + 1;
  int j = 0;
  for (int b = 1; b < m->nbody; b++) {
    obs[j++] = d->xmat[9 * b + 0];
    obs[j++] = d->xmat[9 * b + 2];
  }
  double height = d->xpos[3 * torso + 2];
  obs[j++] = height;
  copy_out(obs + j, d->qvel, m->nv);
  double standing = tolerance(height, stand_height, INFINITY, stand_height / 2, GAUSSIAN, gauss);
  double upright = (1 + d->xmat[9 * torso + 8]) / 2;
  double stand_reward = (3 * standing + upright) / 4;
  if (move_speed == 0) {
    out[0] = stand_reward;
    return;
  }
  double move_reward = tolerance(d->sensordata[sensor], move_speed, INFINITY, move_speed / 2, LINEAR, lin);
  out[0] = stand_reward * (5 * move_reward + 1) / 6;
}

// dm_control's humanoid and humanoid_CMU (suite/humanoid.py, humanoid_CMU.py): observation
// joint_angles (qpos[7:]), head_height, extremities (each hand's and foot's position from the
// torso, in the torso's frame), torso_vertical (the frame's z row), com_velocity, velocity; or, pure
// state, position (qpos) and velocity. prm: pure_state, torso, head, the four limbs' body ids, the
// com velocity sensor's address, the upright entry of the torso's frame, move_speed, stand_height,
// the gaussian scale (0.1), the linear scale (0), the quadratic scale (0).
void dmc_humanoid(const mjModel* m, const mjData* d, const double* prm, const double* action, double* out) {
  int pure = (int)prm[0], torso = (int)prm[1], head = (int)prm[2], com = (int)prm[7], upright_at = (int)prm[8];
  double move_speed = prm[9], stand_height = prm[10], gauss = prm[11], lin = prm[12], quad = prm[13];
  const double* frame = d->xmat + 9 * torso;
  const double* torso_pos = d->xpos + 3 * torso;
  const double* vel = d->sensordata + com;
  double* obs = out + 1;
  int j = 0;
  if (pure) {
    j += copy_out(obs, d->qpos, m->nq);
    copy_out(obs + j, d->qvel, m->nv);
  } else {
    j += copy_out(obs, d->qpos + 7, m->nq - 7);
    obs[j++] = d->xpos[3 * head + 2];
    for (int l = 0; l < 4; l++) {
      const double* limb = d->xpos + 3 * (int)prm[3 + l];
      double v[3] = {limb[0] - torso_pos[0], limb[1] - torso_pos[1], limb[2] - torso_pos[2]};
      for (int c = 0; c < 3; c++) obs[j++] = v[0] * frame[c] + v[1] * frame[3 + c] + v[2] * frame[6 + c];
    }
    for (int c = 6; c < 9; c++) obs[j++] = frame[c];
    for (int c = 0; c < 3; c++) obs[j++] = vel[c];
    copy_out(obs + j, d->qvel, m->nv);
  }
  double standing = tolerance(d->xpos[3 * head + 2], stand_height, INFINITY, stand_height / 4, GAUSSIAN, gauss);
  double upright = tolerance(frame[upright_at], 0.9, INFINITY, 1.9, LINEAR, lin);
  double stand_reward = standing * upright;
  double control = 0;
  for (int a = 0; a < m->nu; a++) control += tolerance(action[a], 0, 0, 1, QUADRATIC, quad);
  double small_control = (4 + control / m->nu) / 5;
  if (move_speed == 0) {
    double still = (tolerance(vel[0], 0, 0, 2, GAUSSIAN, gauss) + tolerance(vel[1], 0, 0, 2, GAUSSIAN, gauss)) / 2;
    out[0] = small_control * stand_reward * still;
    return;
  }
  double move = tolerance(sqrt(vel[0] * vel[0] + vel[1] * vel[1]), move_speed, INFINITY, move_speed, LINEAR, lin);
  out[0] = small_control * stand_reward * ((5 * move + 1) / 6);
}
