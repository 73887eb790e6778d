"""What a run says, and where: our own lines plain on the terminal (the libraries' keep absl's
`I1126 09:41:07.123 file.py:12]` prefix), the libraries' INFO lines (orbax writes dozens per
checkpoint) off it, and every line, ours and theirs, in RUN_DIR/log.txt (`log_file`), to which a
resume adds only once it trains.

The JAX suites' own chatter is the libraries' INFO lines too (`quiet_terminal`, an entry point's
first call): what native code prints to stdout (MJX's "solver iterations limit reached" from Warp
kernels, a line per env step) is read from file descriptor 1 (`NativeStdout`; Python's own prints
still reach the terminal) into the logger `stdout`; the suites' Python warnings (brax's) go to
`py.warnings` at INFO; and the lines said before the run directory exists (building the env to
read its spaces) wait for the run's log.txt (`EarlyLines`). `--verbosity` / `-v` shows them all.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import importlib.util
import io
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator

from absl import flags
from absl import logging as absl_logging

LOG_FILE = "log.txt"
FORMAT = "%(asctime)s %(levelname)s %(name)s %(filename)s:%(lineno)d] %(message)s"
# Lines already on the terminal by other means (the progress line, the done line): log.txt only.
ECHO = logging.getLogger("sebulba.echo")


def ours(record: logging.LogRecord) -> bool:
    """A record of the `sebulba` logger or one below it."""
    return record.name == "sebulba" or record.name.startswith("sebulba.")


class RunLog(logging.Handler):
    """log.txt, appended to: every record at INFO and above. With `hold`, the records wait in
    memory until `start()` (never: the file is not touched), so a resume that trains nothing
    changes no file, and one that trains still has the lines of its start."""

    def __init__(self, path: str | os.PathLike, hold: bool = False):
        super().__init__(logging.INFO)
        self.path = path
        self._held: list[logging.LogRecord] = EarlyLines.take()  # the entry point's lines before the run's
        self._file: logging.FileHandler | None = None
        if not hold:
            self.start()

    def start(self) -> None:
        """Open the file and write the held records into it. Idempotent."""
        self.acquire()
        try:
            if self._file is None:
                self._file = logging.FileHandler(self.path, encoding="utf-8")
                self._file.setFormatter(logging.Formatter(FORMAT))
                for record in self._held:
                    self._file.emit(record)
                self._held = []
        finally:
            self.release()

    def emit(self, record: logging.LogRecord) -> None:
        if self._file is None:
            self._held.append(record)
        else:
            self._file.emit(record)

    def close(self) -> None:
        self.acquire()
        try:
            if self._file is not None:
                self._file.close()
            self._held = []
        finally:
            self.release()
        super().close()


@contextlib.contextmanager
def log_file(path: str | os.PathLike, hold: bool = False) -> Iterator[RunLog]:
    """Every log record at INFO and above (orbax's checkpoint lines, jax's, ours) also goes to
    path (appended) while inside; `hold`: only once the yielded RunLog is started. Where no
    handler shows them on the terminal, warnings and errors go to stderr, as Python's own."""
    root = logging.getLogger()
    handlers = [RunLog(path, hold)]
    if not logging.getLogger("sebulba").hasHandlers():
        # No terminal handler (a script, not an entry point): Python would show warnings through its
        # last resort, which a handler of ours turns off; keep showing them, plain.
        terminal = logging.StreamHandler()
        terminal.setLevel(logging.WARNING)
        terminal.addFilter(QuietTerminal())
        terminal.setFormatter(PlainLines(None))
        handlers.append(terminal)
    previous = root.level
    root.setLevel(min(previous, logging.INFO))  # lets INFO through; never hides what was let through
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield handlers[0]
    finally:
        NativeStdout.drain()  # what native code printed so far, into this file
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(previous)


def echo(path: str | os.PathLike, *lines: str) -> None:
    """Append lines already printed to the terminal (a run's done line) to the log file at path."""
    with log_file(path):
        for line in lines:
            ECHO.info(line)


class QuietTerminal(logging.Filter):
    """The terminal shows warnings and errors, and our own INFO lines (run directory, resume);
    the libraries' INFO lines go to RUN_DIR/log.txt only (`quiet=False`, --verbosity: they show
    too). ECHO's lines are on the terminal already."""

    def __init__(self, quiet: bool = True):
        super().__init__()
        self.quiet = quiet

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == ECHO.name:
            return False
        return not self.quiet or record.levelno >= logging.WARNING or ours(record)


class PlainLines(logging.Formatter):
    """Our own lines as they are (`warning: ...`, `error: ...` at those levels); the libraries'
    in the terminal's own format (`library`: absl's, with its prefix)."""

    def __init__(self, library: logging.Formatter | None):
        super().__init__("%(message)s")
        self.library = library or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        if not ours(record):
            return self.library.format(record)
        text = super().format(record)
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


def quiet_terminal() -> None:
    """absl's terminal handler: our lines plain (PlainLines), the libraries' INFO lines off it
    (QuietTerminal) unless --verbosity / -v was given; the JAX suites' chatter among them (native
    stdout, their warnings), and every library line said before the run's log.txt opens, held for
    it. An entry point calls it first. Idempotent."""
    handler = absl_logging.get_absl_handler()
    if any(isinstance(f, QuietTerminal) for f in handler.filters):
        return
    handler.addFilter(QuietTerminal(quiet=not flags.FLAGS["verbosity"].present))
    handler.setFormatter(PlainLines(handler.python_handler.formatter))
    EarlyLines.install()
    SuiteWarnings.install()
    NativeStdout.start()


class EarlyLines(logging.Handler):
    """The records (INFO and above) said before a run's log.txt opens, held for it: the next
    `log_file` takes them. At most `LIMIT`, the latest (a process that opens none holds no more)."""

    LIMIT = 10_000
    _installed: EarlyLines | None = None

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: collections.deque[logging.LogRecord] = collections.deque(maxlen=self.LIMIT)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @classmethod
    def install(cls) -> None:
        if cls._installed is None:
            cls._installed = cls()
            root = logging.getLogger()
            root.setLevel(min(root.level, logging.INFO))
            root.addHandler(cls._installed)

    @classmethod
    def take(cls) -> list[logging.LogRecord]:
        """The held records, once (and no more are held)."""
        early, cls._installed = cls._installed, None
        if early is None:
            return []
        logging.getLogger().removeHandler(early)
        return list(early.records)


# The JAX suites' packages (envs/jax/registry.py) and the engines under them: MJX and Warp.
ENGINES = ("mujoco", "warp")


class SuiteWarnings:
    """Python warnings raised in a JAX suite's package (brax's "not actively being maintained")
    as INFO lines of `py.warnings`: in log.txt, off the terminal. Other warnings show as before."""

    _previous = None
    LOG = logging.getLogger("py.warnings")

    @classmethod
    def install(cls) -> None:
        if cls._previous is not None:
            return
        from envs.jax.registry import SUITES

        roots = []
        for name in sorted({s.module.partition(".")[0] for s in SUITES.values()} | set(ENGINES)):
            spec = importlib.util.find_spec(name)  # top-level: imports nothing
            if spec is not None and spec.submodule_search_locations:
                roots += [os.path.join(os.path.realpath(d), "") for d in spec.submodule_search_locations]
        cls._previous, previous = warnings.showwarning, warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if file is None and os.path.realpath(filename).startswith(tuple(roots)):
                cls.LOG.info(warnings.formatwarning(message, category, filename, lineno, line).rstrip())
            else:
                previous(message, category, filename, lineno, file, line)

        warnings.showwarning = show


class NativeStdout:
    """File descriptor 1 read by a thread into the logger `stdout`, line by line: what native code
    prints there (Warp kernels' printf under MJX, a C library's) goes where the libraries' INFO
    lines go. `sys.stdout` is a copy of the original descriptor, so Python's prints (ours, a user's,
    `jax.debug.print`) still reach the terminal. Started once per process, by `quiet_terminal`."""

    LOG = logging.getLogger("stdout")
    _MARK = "\x00sebulba-drain\x00"
    _reader: threading.Thread | None = None
    _drained = threading.Event()

    @classmethod
    def start(cls) -> None:
        if cls._reader is not None:
            return
        try:
            sys.stdout.flush()
            terminal = os.dup(1)
            read, write = os.pipe()
        except (OSError, ValueError, AttributeError):  # no descriptor 1 to take over (an embedded interpreter)
            return
        os.dup2(write, 1)
        os.close(write)
        sys.stdout = io.TextIOWrapper(os.fdopen(terminal, "wb", buffering=0), encoding=sys.stdout.encoding,
                                      errors=sys.stdout.errors, line_buffering=True, write_through=True)
        cls._reader = threading.Thread(target=cls._read, args=(read,), name="native-stdout", daemon=True)
        cls._reader.start()
        atexit.register(cls._flush_c)  # C's buffered stdout into the pipe, not onto the terminal at exit

    @classmethod
    def _read(cls, fd: int) -> None:
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                line = line.rstrip("\n")
                if cls._MARK in line:
                    line = line.replace(cls._MARK, "")
                    cls._drained.set()
                if line:
                    cls.LOG.info(line)

    @staticmethod
    def _flush_c() -> None:
        with contextlib.suppress(Exception):
            ctypes.CDLL(None).fflush(None)

    @classmethod
    def drain(cls, timeout_s: float = 30.0) -> None:
        """Log every line native code printed so far (C's buffer flushed, the pipe read up to
        here): before a log file closes. Returns as soon as the reader has caught up; the bound
        is only for a reader that cannot (2 s lost lines on a loaded 2-core host, where the
        reader thread waited longer than that for its turn)."""
        if cls._reader is None:
            return
        cls._flush_c()
        cls._drained.clear()
        os.write(1, f"{cls._MARK}\n".encode())
        cls._drained.wait(timeout_s)
