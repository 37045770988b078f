"""The judge reads compilers in one language: every program it starts runs with LC_ALL=C and
no LANGUAGE, so a learner whose shell speaks German still gets diagnostics the judge parses."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from lab.core import build, process

BROKEN = "// the learner's header\ninline int answer() { return undeclared_name; }\n"


def german() -> dict[str, str]:
    """A shell that asks for German messages (LANGUAGE works in any locale but C)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    return dict(env, LANG="C.UTF-8", LANGUAGE="de")


def _translation_installed() -> bool:
    return any(Path("/usr/share/locale/de/LC_MESSAGES").glob("gcc-*.mo"))


class Locale(unittest.TestCase):
    def test_every_program_runs_untranslated(self):
        with mock.patch.dict(os.environ, german(), clear=True):
            r = process.run([sys.executable, "-c", "import os; print(os.environ.get('LC_ALL'), "
                         "os.environ.get('LANGUAGE', 'unset'))"], timeout=30, keep_bytes=1000)
            given = process.run([sys.executable, "-c", "import os; print(os.environ.get('LC_ALL'), "
                             "os.environ.get('LANGUAGE', 'unset'))"], env=dict(os.environ), timeout=30,
                            keep_bytes=1000)
        self.assertEqual(r.stdout.text().split(), ["C", "unset"])
        self.assertEqual(given.stdout.text().split(), ["C", "unset"], "an environment passed in is untranslated too")

    def test_a_translated_compiler_still_parses(self):
        if not shutil.which("g++") or not _translation_installed():
            self.skipTest("g++'s German messages (Debian package gcc-12-locales) are not installed")
        with tempfile.TemporaryDirectory() as tmp:
            header = Path(tmp) / "arena.hpp"
            header.write_text(BROKEN)
            argv = ["g++", "-std=c++20", "-fsyntax-only", "-x", "c++", str(header)]
            with mock.patch.dict(os.environ, german(), clear=True):
                raw = subprocess.run(argv, capture_output=True, text=True).stderr
                judged = process.run(argv, timeout=120, keep_bytes=100_000).stderr.text()
        self.assertIn("Fehler", raw, "without the judge's environment this g++ speaks German (else the test "
                      "proves nothing)")
        self.assertEqual([d.severity for d in build.parse_diagnostics(raw)], [], "the parser reads English only")
        found = build.parse_diagnostics(judged)
        self.assertEqual([(d.severity, d.line) for d in found], [("error", 2)], judged)
        self.assertIn("undeclared_name", found[0].message)
        self.assertIn("not declared", found[0].message)


if __name__ == "__main__":
    unittest.main()
