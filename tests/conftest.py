import os
import sys

# Multi-device tests on CPU: fake devices must be configured before jax is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
