"""`envs.import_on_use`: a module's stand-in that imports it when a name of it is read, checked on a
package of our own with a side effect, then on the two libraries it defers (gymnax's seaborn,
tensorboardX's boto3), each in a fresh process."""

import subprocess
import sys

import pytest

from tests.support.cli import ROOT, child_env

PACKAGE = r'''
import sys
sys.path.insert(0, sys.argv[1])
from envs.import_on_use import import_on_use

import_on_use("loud")
import loud  # the stand-in: nothing ran
assert "ran" not in sys.modules and loud.__file__.endswith("__init__.py") and loud.__spec__.name == "loud"
assert loud.VALUE == 7 and sys.modules["ran"].count == 1  # the first name read runs it, once
from loud import VALUE
import loud.part  # a submodule of it
assert loud.part.PART == 8 and loud.VALUE == 7 and sys.modules["ran"].count == 1
import_on_use("not_installed_anywhere")
assert "not_installed_anywhere" not in sys.modules
try:
    import_on_use("loud.part")
except ValueError as e:
    assert "top-level module" in str(e)
else:
    raise AssertionError("a dotted name must be refused")
print("ok")
'''


def run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=child_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "ok", out.stderr[-3000:]


def test_a_stand_in_imports_its_module_when_a_name_is_read(tmp_path):
    package = tmp_path / "loud"
    package.mkdir()
    (tmp_path / "ran.py").write_text("count = 0\n")
    (package / "__init__.py").write_text("import ran\nran.count += 1\nVALUE = 7\n")
    (package / "part.py").write_text("PART = 8\n")
    run(PACKAGE, tmp_path)


GYMNAX = r'''
import sys
import envs
env = envs.make_gymnasium("gymnax/Pong-misc", num_envs=1)
assert "gymnax" in sys.modules and "scipy.stats" not in sys.modules, "seaborn ran at gymnax's import"
import seaborn
from seaborn import color_palette
assert len(color_palette("cubehelix", 3)) == 3 and "scipy.stats" in sys.modules
import seaborn.external.version  # a submodule imports after the stand-in
print("ok")
'''


def test_gymnax_imports_seaborn_when_a_render_helper_uses_it():
    """gymnax imports seaborn (with scipy.stats: 1.5 s of a process's start) for two render
    helpers; its adapter defers it until one of its names is read."""
    pytest.importorskip("gymnax")
    pytest.importorskip("seaborn")
    run(GYMNAX)


TENSORBOARDX = r'''
import sys
from sebulba.experiment import Outputs
import tensorboardX.record_writer
assert tensorboardX.record_writer.S3_ENABLED and "botocore" not in sys.modules, "boto3 ran at tensorboardX's import"
assert callable(tensorboardX.record_writer.boto3.client) and "botocore" in sys.modules
print("ok")
'''


def test_tensorboardx_imports_boto3_when_an_s3_path_needs_it():
    pytest.importorskip("boto3")
    run(TENSORBOARDX)
