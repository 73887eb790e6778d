"""JAX-native envs (`SUITE/ID`, e.g. "gymnax/CartPole-v1"): one adapter (`envs.jax.core`) over
every suite, each suite's module imported only when one of its ids is used."""
