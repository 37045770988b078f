#!/usr/bin/env python3
"""AllocLab's judge. `python3 judge/judge.py --help` lists the commands."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
