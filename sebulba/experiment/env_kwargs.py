"""`--env_kwargs`: a task's own kwargs for envs.make, written as Python keyword arguments.

    is_slippery=False,map_name='8x8'              -> {'is_slippery': False, 'map_name': '8x8'}
    drop_observation_keys=['mission','direction'] -> {'drop_observation_keys': ['mission', 'direction']}

Each value is a Python literal (numbers, strings in quotes, True/False/None, lists, tuples, dicts,
sets), parsed with `ast.literal_eval`. A bare word is refused rather than taken as a string, since
a misspelt literal (`is_slippery=Flase`) would otherwise run the task with a value nobody meant.
"""

from __future__ import annotations

import ast
import difflib
from typing import Any

_EXAMPLE = "e.g. is_slippery=False,map_name='8x8'"
_CLOSING = {"(": ")", "[": "]", "{": "}"}


def parse_env_kwargs(text: str | None) -> dict[str, Any]:
    """--env_kwargs' text as a dict; ValueError naming the key and the fix for anything else."""
    out: dict[str, Any] = {}
    for item in _top_level_items(text or ""):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"--env_kwargs takes key=value pairs separated by commas ({_EXAMPLE}); got {item.strip()!r}")
        if key in out:
            raise ValueError(f"--env_kwargs gives {key} twice")
        out[key] = _literal(key, value)
    return out


def _literal(key: str, value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if not value:
        raise ValueError(f"--env_kwargs {key}= has no value ({_EXAMPLE})")
    near = difflib.get_close_matches(value.capitalize(), ["True", "False", "None"], n=1, cutoff=0.6)
    fix = f"did you mean {key}={near[0]}? A string needs quotes" if near else "a string needs quotes"
    raise ValueError(f"--env_kwargs {key}={value}: {value} is not a Python literal; {fix}: {key}='{value}'")


def _top_level_items(text: str) -> list[str]:
    """Split on the commas outside brackets and quotes (a list's commas stay in its item)."""
    items, start, closing, quote, i = [], 0, [], "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _CLOSING:
            closing.append(_CLOSING[c])
        elif closing and c == closing[-1]:
            closing.pop()
        elif c == "," and not closing:
            items.append(text[start:i])
            start = i + 1
        i += 1
    items.append(text[start:])
    return [item for item in items if item.strip()]
