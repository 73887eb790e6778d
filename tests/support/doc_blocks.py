"""The code blocks of a Markdown page, as a reader sees them: fenced ```python blocks to run, in
order, and the `python -m experiments.<x> ...` commands of ```bash/```console blocks, whose flags
must parse. A block is left out only with a marker in the comment lines right above its fence:

    <!-- docs-test: skip: <reason> -->

(used by tests/test_docs_code_blocks.py)."""

from __future__ import annotations

import dataclasses
import re
import shlex
import textwrap

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(?P<reason>.*?)\s*-->")
SHELL_LANGS = {"bash", "console", "sh", "shell"}
ENTRY = re.compile(r"^experiments\.\w+$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: its language, code (dedented), first code line (1-based) and the skip
    marker's reason (None: it is tested)."""

    lang: str
    code: str
    line: int
    skip: str | None


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order."""
    found = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 2
        above = text[:m.start()].rstrip("\n").split("\n")
        skip = None
        while above and above[-1].strip().startswith("<!--"):  # the comment lines right above the fence
            marker = SKIP.search(above.pop())
            if marker:
                skip = marker.group("reason") or "no reason given"
        found.append(Block(m.group("lang").lower(), textwrap.dedent(m.group("body")), line, skip))
    return found


def python_blocks(text: str) -> list[Block]:
    return [b for b in blocks(text) if b.lang in ("python", "py")]


def experiment_commands(block: Block) -> list[tuple[str, list[str]]]:
    """The `python -m experiments.<x> ARGS` commands of a shell block as (module, args): line
    continuations joined, comments and a `$ ` prompt dropped, the part after the module up to a
    shell operator (`|`, `&&`, `;`, `>`) taken as its arguments."""
    if block.lang not in SHELL_LANGS:
        return []
    commands = []
    for line in block.code.replace("\\\n", " ").splitlines():
        line = line.strip().removeprefix("$ ")
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # an unclosed quote: not a command we can read
            continue
        for i in range(len(words) - 2):
            if words[i].endswith("python") and words[i + 1] == "-m" and ENTRY.match(words[i + 2]):
                args = []
                for word in words[i + 3:]:
                    if word in ("|", "||", "&&", ";", "&") or word.startswith((">", "2>")):
                        break
                    args.append(word)
                commands.append((words[i + 2], args))
    return commands
