#!/usr/bin/env python3
"""AllocLab's judge. `python3 judge/judge.py --help` lists the commands."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Where Python is asked not to write bytecode (PYTHONDONTWRITEBYTECODE, set in many containers), the
# judge would compile its own modules again on every run: a tenth of a second of every try. It keeps
# their bytecode in build/ instead, beside its other caches, and writes nothing beside the sources.
if sys.dont_write_bytecode:
    sys.pycache_prefix = str(HERE.parent / "build" / "pycache")
    sys.dont_write_bytecode = False

from lab.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
