"""The compiled native pool: C++ sources (classic_control.h, pool.cc) and their loader (build.py)."""
