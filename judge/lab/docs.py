"""`docs`: renders the chapters and the reference solutions' doc comments with Doxygen."""
from __future__ import annotations

import os
import shutil

from . import run as runner
from .build import BUILD_ROOT
from .catalog import ROOT

OUT = BUILD_ROOT / "docs"


def add_parser(sub) -> None:
    s = sub.add_parser("docs", help="build the HTML documentation into build/docs/html")
    s.set_defaults(run=run)


def available() -> bool:
    return shutil.which("doxygen") is not None


def build_docs() -> tuple[bool, str]:
    """Builds the docs; any Doxygen warning is a failure. Returns (ok, what went wrong)."""
    if not available():
        return False, "doxygen is not installed: sudo apt-get install doxygen"
    OUT.mkdir(parents=True, exist_ok=True)
    result = runner.run(["doxygen", str(ROOT / "docs" / "Doxyfile")], cwd=ROOT,
                        env=dict(os.environ, ALLOCLAB_DOCS_OUT=str(OUT)), timeout=300, keep_bytes=100_000)
    warnings = result.stderr.text().strip()
    if result.returncode != 0 or warnings:
        return False, warnings or result.stdout.text()[-2000:]
    return True, ""


def run(args, catalog) -> int:
    ok, detail = build_docs()
    if ok:
        print(f"The documentation is in {(OUT / 'html' / 'index.html').relative_to(ROOT)}")
        return 0
    print(detail)
    return 1 if shutil.which("doxygen") else 2
