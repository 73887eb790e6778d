"""The compiled native pool: C++ sources (classic_control.h, pool.cc; stateless.cc, the same tasks as
pure XLA FFI targets for envs/native/stateless.py) and their loader (build.py)."""
