"""Standard output that may be closed by its reader (`judge.py test 1 | head -1`): the rest of
the output is dropped, and the command still ends with its own exit status, the verdict's.

Python ignores SIGPIPE, so a write to a closed pipe raises BrokenPipeError; caught at the top
it would cut the command short and lose its status. Here the first such write points file
descriptor 1 at /dev/null, as the Python documentation recommends, so that neither the next
writes nor the flush at exit can fail, and the command carries on to its end."""
from __future__ import annotations

import os
import sys


class _ReaderMayLeave:
    def __init__(self, stream):
        self._stream = stream
        self.reader_left = False

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_went_away()
        return len(text)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_went_away()

    def _reader_went_away(self) -> None:
        self.reader_left = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def tolerate_closed_stdout() -> None:
    if not isinstance(sys.stdout, _ReaderMayLeave) and sys.stdout is not None:
        sys.stdout = _ReaderMayLeave(sys.stdout)
