"""benchmarks/envpool_tests.py: the `envpool` shim re-exports `envs`, stand-ins for EnvPool's
low-level names refuse to work, and a file's cases are counted (all failed when it cannot import)."""

import subprocess
import sys

import pytest

from benchmarks import envpool_tests

PASSING = '''
from absl.testing import absltest
import envpool
from envpool.atari import AtariEnvSpec


class _Case(absltest.TestCase):
    def test_make_is_envs(self):
        import envs
        self.assertIs(envpool.make_gymnasium, envs.make_gymnasium)

    def test_low_level_refuses(self):
        with self.assertRaises(NotImplementedError):
            AtariEnvSpec.gen_config(task="pong")

    def test_a_failure(self):
        self.assertEqual(envpool.make_spec("CartPole-v1").config.num_envs, 2)

    def test_the_registry_places_ids_by_suite(self):  # EnvPool's test helpers list a suite's tasks by it
        from envpool.registration import registry
        self.assertEqual(registry.specs["CheetahRun-v1"][0], "envpool.mujoco.dmc")
        self.assertEqual(registry.specs["Ant-v4"][0], "envpool.mujoco.gym")
        self.assertEqual(registry.specs["CartPole-v1"][0], "envpool")


class PublicName(absltest.TestCase):  # EnvPool names some test classes without the leading "_"
    def test_counted(self):
        self.assertTrue(hasattr(envpool, "make_dm"))
'''
BROKEN = '''
import envpool.no_such_module


class _Case:
    def test_one(self):
        pass

    def test_two(self):
        pass
'''


@pytest.mark.slow(seconds=8)
def test_a_file_is_run_against_envs_and_its_cases_counted(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    envpool_tests.build_shim(shim)
    out = subprocess.run([sys.executable, "-c", "import envpool, envs; assert envpool.make is envs.make"],
                         env={"PYTHONPATH": f"{shim}:{envpool_tests.ROOT}"}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    source = tmp_path / "src"
    (source / "envpool").mkdir(parents=True)
    (source / "envpool" / "ok_test.py").write_text(PASSING)
    (source / "envpool" / "broken_test.py").write_text(BROKEN)
    assert envpool_tests.run_file(shim, source, "envpool/ok_test.py", timeout=300) == {
        "_Case.test_make_is_envs": "passed", "_Case.test_low_level_refuses": "passed", "_Case.test_a_failure": "failed",
        "_Case.test_the_registry_places_ids_by_suite": "passed", "PublicName.test_counted": "passed"}
    assert envpool_tests.run_file(shim, source, "envpool/broken_test.py", timeout=300) == {
        "test_one (import)": "failed", "test_two (import)": "failed"}
    text = envpool_tests.report({"envpool/ok_test.py": {"_Case.a": "passed", "_Case.b": "failed"}}, source)
    assert "**1 of 2 cases pass**" in text and "| `envpool/ok_test.py` | 1 | 1 | 0 | _Case.b |" in text
