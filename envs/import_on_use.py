"""`import_on_use(name)`: a module imported when one of its names is first read, not when a library
imports it. For heavy imports that a library makes at module level for a feature a run rarely
uses: gymnax's seaborn (two render helpers; 1.5 s with the scipy.stats it pulls in), tensorboardX's
boto3 (S3 paths; 0.2 s)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any


class _ImportedOnUse(types.ModuleType):
    """A module's stand-in in sys.modules: its spec's attributes (__file__, __spec__, __loader__)
    without running it; reading any other name (a function, or __path__ for a submodule's import)
    imports the module and answers from it."""

    def __getattr__(self, name: str) -> Any:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, name)


def import_on_use(name: str) -> None:
    """Put a stand-in for the top-level module `name` in sys.modules, so that `import name` costs
    nothing until a name of it is read; a no-op when it is imported already or not installed (an
    `import name` then fails as it would have)."""
    if "." in name:
        raise ValueError(f"import_on_use takes a top-level module, got {name!r}")
    if name in sys.modules or (spec := importlib.util.find_spec(name)) is None:
        return
    stand_in = _ImportedOnUse(name)
    stand_in.__spec__, stand_in.__file__, stand_in.__loader__ = spec, spec.origin, spec.loader
    sys.modules[name] = stand_in
