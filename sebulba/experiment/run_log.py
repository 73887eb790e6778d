"""What a run says, and where: our own lines plain on the terminal (the libraries' keep absl's
`I1126 09:41:07.123 file.py:12]` prefix), the libraries' INFO lines (orbax writes dozens per
checkpoint) off it, and every line, ours and theirs, in RUN_DIR/log.txt (`log_file`), to which a
resume adds only once it trains."""

from __future__ import annotations

import contextlib
import logging
import os
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
        self._held: list[logging.LogRecord] = []
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
    (QuietTerminal) unless --verbosity / -v was given. Idempotent."""
    handler = absl_logging.get_absl_handler()
    if any(isinstance(f, QuietTerminal) for f in handler.filters):
        return
    handler.addFilter(QuietTerminal(quiet=not flags.FLAGS["verbosity"].present))
    handler.setFormatter(PlainLines(handler.python_handler.formatter))
