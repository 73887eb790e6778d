// The built-in classic-control tasks, one env at a time, in double precision with the exact
// operation order of the numpy implementations in envs/native/*.py (which match Gymnasium bit
// for bit; the notes on exactness there apply here). Compiled with -ffp-contract=off: no fused
// multiply-adds, so every product and sum rounds as it does in numpy.
#pragma once

#include <cmath>
#include <math.h>  // ::pow and ::powf: libm itself, as numpy calls it (see build.py)
#include <cstdint>

namespace classic {

// numpy's PCG64 (XSL-RR 128/64) and Generator.random(): env i's stream is default_rng(seed + i).
struct Pcg64 {
  unsigned __int128 state, inc;
};

inline uint64_t next64(Pcg64& r) {
  const unsigned __int128 mult = ((unsigned __int128)2549297995355413924ULL << 64) | 4865540595714422341ULL;
  r.state = r.state * mult + r.inc;
  uint64_t hi = (uint64_t)(r.state >> 64), lo = (uint64_t)r.state;
  unsigned rot = (unsigned)(r.state >> 122);
  uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64 - rot) & 63));
}

inline double next_double(Pcg64& r) { return (double)(next64(r) >> 11) * (1.0 / 9007199254740992.0); }

// numpy's uniform formula, as envs/native/base.py's ResetNoise uses it.
inline double uniform(Pcg64& r, double low, double high) { return low + (high - low) * next_double(r); }

// np.remainder for doubles (npy_divmod's modulus).
inline double np_remainder(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

inline double clip(double x, double lo, double hi) { return std::fmin(std::fmax(x, lo), hi); }
inline float clipf(float x, float lo, float hi) { return std::fmin(std::fmax(x, lo), hi); }

enum Task : int { CARTPOLE = 0, CARTPOLE_NO_VELOCITY = 1, ACROBOT = 2, MOUNTAIN_CAR = 3, MOUNTAIN_CAR_CONTINUOUS = 4, PENDULUM = 5,
                  PENDULUM_V0 = 6 };

struct TaskInfo {
  int rows;     // state variables per env
  int obs_dim;  // observation length
  int actions;  // Discrete(n); 0 for a Box action of shape (1,)
};

inline TaskInfo task_info(int task) {
  switch (task) {
    case CARTPOLE: return {4, 4, 2};
    case CARTPOLE_NO_VELOCITY: return {4, 2, 2};
    case ACROBOT: return {4, 6, 3};
    case MOUNTAIN_CAR: return {2, 2, 3};
    case MOUNTAIN_CAR_CONTINUOUS: return {2, 2, 0};
    case PENDULUM:
    case PENDULUM_V0: return {2, 3, 0};
  }
  return {0, 0, -1};
}

// s: the env's state variables (in the numpy task's row order); fresh: MountainCarContinuous's
// "state still float64" flag.
struct Env {
  double* s;
  uint8_t* fresh;
};

// ----------------------------------------------------------------------------- CartPole-v1
namespace cartpole {
constexpr double GRAVITY = 9.8, MASSCART = 1.0, MASSPOLE = 0.1, LENGTH = 0.5, FORCE_MAG = 10.0, TAU = 0.02;
constexpr double TOTAL_MASS = MASSPOLE + MASSCART, POLEMASS_LENGTH = MASSPOLE * LENGTH;
const double THETA_THRESHOLD = 12 * 2 * M_PI / 360;
constexpr double X_THRESHOLD = 2.4;

inline void reset(Env e, Pcg64& r) {
  for (int k = 0; k < 4; ++k) e.s[k] = uniform(r, -0.05, 0.05);
}

inline bool step(Env e, int action, float* reward) {
  double* s = e.s;
  double x_dot = s[1], theta = s[2], theta_dot = s[3];
  double force = action == 1 ? FORCE_MAG : -FORCE_MAG;
  double costheta = std::cos(theta), sintheta = std::sin(theta);
  double temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS;
  double thetaacc =
      (GRAVITY * sintheta - costheta * temp) / (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
  double xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
  s[0] = s[0] + TAU * x_dot;
  s[1] = x_dot + TAU * xacc;
  s[2] = theta + TAU * theta_dot;
  s[3] = theta_dot + TAU * thetaacc;
  *reward = 1.0f;
  return std::fabs(s[0]) > X_THRESHOLD || std::fabs(s[2]) > THETA_THRESHOLD;
}
}  // namespace cartpole

// ----------------------------------------------------------------------------- Acrobot-v1
namespace acrobot {
constexpr double DT = 0.2, G = 9.8;
const double MAX_VEL_1 = 4 * M_PI, MAX_VEL_2 = 9 * M_PI;
constexpr double M1 = 1.0, M2 = 1.0, L1 = 1.0, LC1 = 0.5, LC2 = 0.5, I1 = 1.0, I2 = 1.0;
constexpr double D1_A = M1 * (LC1 * LC1), D1_B = L1 * L1 + LC2 * LC2, D2_A = LC2 * LC2, D2_B = L1 * LC2;
constexpr double PHI2_C = M2 * LC2 * G, NEG_T1_C = -M2 * L1 * LC2, PHI1_C = (M1 * LC1 + M2 * L1) * G;
constexpr double DD2_C = M2 * L1 * LC2, DEN_C = M2 * (LC2 * LC2) + I2;
const double HALF_PI = M_PI / 2.0;
constexpr double DT2 = DT / 2.0, DT6 = DT / 6.0;
const double WRAP = M_PI - (-M_PI);

inline void dsdt(const double* y, double a, double* k) {
  double t1 = y[0], t2 = y[1], w1 = y[2], w2 = y[3];
  k[0] = w1;
  k[1] = w2;
  double c2 = std::cos(t2), s2 = std::sin(t2);
  double d1 = D1_B + c2;
  d1 += D1_A;
  d1 += I1;
  d1 += I2;
  double d2 = D2_B * c2;
  d2 += D2_A;
  d2 += I2;
  double phi2 = PHI2_C * std::cos(t1 + t2 - HALF_PI);
  double w1_sq = ::pow(w1, 2.0), w2_sq = ::pow(w2, 2.0);
  double phi1 = NEG_T1_C * w2_sq * s2 - w2 * w1 * s2 + PHI1_C * std::cos(t1 - HALF_PI) + phi2;
  double num = a + d2 / d1 * phi1 - DD2_C * w1_sq * s2 - phi2;
  double dd2 = num / (DEN_C - ::pow(d2, 2.0) / d1);
  double dd1 = d2 * dd2;
  dd1 += phi1;
  k[2] = -dd1 / d1;
  k[3] = dd2;
}

inline void reset(Env e, Pcg64& r) {
  for (int k = 0; k < 4; ++k) e.s[k] = (double)(float)uniform(r, -0.1, 0.1);
}

inline bool step(Env e, int action, float* reward) {
  double a = (double)(action - 1);
  double y0[4], y[4], k1[4], k2[4], k3[4], k4[4];
  for (int i = 0; i < 4; ++i) y0[i] = e.s[i];
  dsdt(y0, a, k1);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + DT2 * k1[i];
  dsdt(y, a, k2);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + DT2 * k2[i];
  dsdt(y, a, k3);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + DT * k3[i];
  dsdt(y, a, k4);
  double ns[4];
  for (int i = 0; i < 4; ++i) ns[i] = y0[i] + DT6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  for (int i = 0; i < 2; ++i) {
    while (ns[i] > M_PI) ns[i] -= WRAP;
    while (ns[i] < -M_PI) ns[i] += WRAP;
  }
  ns[2] = clip(ns[2], -MAX_VEL_1, MAX_VEL_1);
  ns[3] = clip(ns[3], -MAX_VEL_2, MAX_VEL_2);
  for (int i = 0; i < 4; ++i) e.s[i] = ns[i];
  bool terminated = -std::cos(ns[0]) - std::cos(ns[1] + ns[0]) > 1.0;
  *reward = terminated ? 0.0f : -1.0f;
  return terminated;
}
}  // namespace acrobot

// ----------------------------------------------------------------------------- MountainCar
namespace mountain_car {
constexpr double MIN_POSITION = -1.2, MAX_POSITION = 0.6, MAX_SPEED = 0.07, FORCE = 0.001, GRAVITY = 0.0025;
constexpr double DISCRETE_GOAL = 0.5, CONTINUOUS_GOAL = 0.45, POWER = 0.0015;

inline void reset(Env e, Pcg64& r) {
  e.s[0] = uniform(r, -0.6, -0.4);
  e.s[1] = 0.0;
}

inline bool step(Env e, int action, float* reward) {
  double position = e.s[0], velocity = e.s[1];
  double accel = (double)(action - 1) * FORCE;
  velocity = velocity + (accel + std::cos(3 * position) * -GRAVITY);
  velocity = clip(velocity, -MAX_SPEED, MAX_SPEED);
  position = clip(position + velocity, MIN_POSITION, MAX_POSITION);
  if (position == MIN_POSITION && velocity < 0) velocity = 0.0;
  e.s[0] = position;
  e.s[1] = velocity;
  *reward = -1.0f;
  return position >= DISCRETE_GOAL && velocity >= 0;
}

// The continuous env: float64 on the first step after a reset, float32 after (see mountain_car.py).
template <typename T>
inline bool dynamics(T& position, T& velocity, double delta) {
  velocity = velocity + (T)delta;
  velocity = (T)clip(velocity, (T)-MAX_SPEED, (T)MAX_SPEED);
  position = (T)clip(position + velocity, (T)MIN_POSITION, (T)MAX_POSITION);
  if (position == (T)MIN_POSITION && velocity < 0) velocity = (T)0;
  return position >= (T)CONTINUOUS_GOAL && velocity >= 0;
}

inline bool step_continuous(Env e, float a, float* reward) {
  bool fresh = *e.fresh;
  double arg = 3 * e.s[0];
  if (!fresh) arg = (double)(float)arg;
  double cos_term = 0.0025 * std::cos(arg);
  double delta;
  if (std::fabs(a) > 1.0f) {
    delta = (a > 0 ? POWER : -POWER) - cos_term;
  } else {
    delta = (double)(a * (float)POWER - (float)cos_term);
  }
  bool terminated;
  if (fresh) {
    double p = e.s[0], v = e.s[1];
    terminated = dynamics<double>(p, v, delta);
    e.s[0] = (double)(float)p;
    e.s[1] = (double)(float)v;
  } else {
    float p = (float)e.s[0], v = (float)e.s[1];
    terminated = dynamics<float>(p, v, delta);
    e.s[0] = p;
    e.s[1] = v;
  }
  *e.fresh = 0;
  double a64 = a;
  *reward = (float)((terminated ? 100.0 : 0.0) - a64 * a64 * 0.1);
  return terminated;
}
}  // namespace mountain_car

// ----------------------------------------------------------------------------- Pendulum-v1 (and -v0)
namespace pendulum {
constexpr double MAX_SPEED = 8, DT = 0.05, G = 10.0, M = 1.0, L = 1.0;
constexpr float MAX_TORQUE = 2.0f;
constexpr double THDOT_GAIN = 3 * G / (2 * L);
constexpr float U_GAIN = 3.0 / (M * (L * L));

inline void reset(Env e, Pcg64& r) {
  e.s[0] = uniform(r, -M_PI, M_PI);
  e.s[1] = uniform(r, -1.0, 1.0);
}

// v0 (EnvPool's, gym 0.21's): the angle moves by the new velocity before it is clipped.
inline bool step(Env e, float action, float* reward, bool v0 = false) {
  double th = e.s[0], thdot = e.s[1];
  float u = clipf(action, -MAX_TORQUE, MAX_TORQUE);
  double costs = ::pow(np_remainder(th + M_PI, 2 * M_PI) - M_PI, 2.0) + 0.1 * ::pow(thdot, 2.0) +
                 (double)(0.001f * ::powf(u, 2.0f));
  double newthdot = thdot + (THDOT_GAIN * std::sin(th) + (double)(U_GAIN * u)) * DT;
  if (v0) e.s[0] = th + newthdot * DT;
  newthdot = clip(newthdot, -MAX_SPEED, MAX_SPEED);
  if (!v0) e.s[0] = th + newthdot * DT;
  e.s[1] = newthdot;
  *reward = -(float)costs;
  return false;
}
}  // namespace pendulum

// ----------------------------------------------------------------------------- dispatch
inline void reset(int task, Env e, Pcg64& r) {
  switch (task) {
    case CARTPOLE:
    case CARTPOLE_NO_VELOCITY: cartpole::reset(e, r); break;
    case ACROBOT: acrobot::reset(e, r); break;
    case MOUNTAIN_CAR: mountain_car::reset(e, r); break;
    case MOUNTAIN_CAR_CONTINUOUS: mountain_car::reset(e, r); *e.fresh = 1; break;
    case PENDULUM:
    case PENDULUM_V0: pendulum::reset(e, r); break;
  }
}

// One step of one env: a Discrete action in `discrete`, a Box (1,) action in `box`.
inline bool step(int task, Env e, int discrete, float box, float* reward) {
  switch (task) {
    case CARTPOLE:
    case CARTPOLE_NO_VELOCITY: return cartpole::step(e, discrete, reward);
    case ACROBOT: return acrobot::step(e, discrete, reward);
    case MOUNTAIN_CAR: return mountain_car::step(e, discrete, reward);
    case MOUNTAIN_CAR_CONTINUOUS: return mountain_car::step_continuous(e, box, reward);
    case PENDULUM: return pendulum::step(e, box, reward);
    case PENDULUM_V0: return pendulum::step(e, box, reward, true);
  }
  return false;
}

inline void observe(int task, const double* s, float* out) {
  switch (task) {
    case CARTPOLE: for (int k = 0; k < 4; ++k) out[k] = (float)s[k]; break;
    case CARTPOLE_NO_VELOCITY: out[0] = (float)s[0]; out[1] = (float)s[2]; break;
    case ACROBOT:
      out[0] = (float)std::cos(s[0]); out[1] = (float)std::sin(s[0]);
      out[2] = (float)std::cos(s[1]); out[3] = (float)std::sin(s[1]);
      out[4] = (float)s[2]; out[5] = (float)s[3];
      break;
    case MOUNTAIN_CAR:
    case MOUNTAIN_CAR_CONTINUOUS: out[0] = (float)s[0]; out[1] = (float)s[1]; break;
    case PENDULUM:
    case PENDULUM_V0: out[0] = (float)std::cos(s[0]); out[1] = (float)std::sin(s[0]); out[2] = (float)s[1]; break;
  }
}

}  // namespace classic
