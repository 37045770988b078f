"""Files the judge writes where someone may read them at any moment (the progress file, a
JUnit report an autograder polls, a restored skeleton, a cache shared by concurrent judges):
each appears whole or not at all."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, content: bytes, mode: int | None = None) -> None:
    """Writes a temporary file beside `path` and renames it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_if_changed(target: Path, text: str) -> Path:
    """Writes `text` at `target` unless it is already there: an unchanged file keeps its time, so
    nothing is built again for it. Whole or not at all, as write_atomically: two judges at once (a
    class graded in parallel) may write the same file while the other compiles it."""
    if not target.is_file() or target.read_text(encoding="utf-8", errors="replace") != text:
        write_atomically(target, text.encode("utf-8"))
    return target
