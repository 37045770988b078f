"""Every limit is written once, in the catalog's [limits]: the judge reads it there, and so does
ctest through CMakeLists.txt; the presets carry no time limit of their own."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from lab.model import catalog as cat
from lab.model.catalog import ROOT


class OneSourceForLimits(unittest.TestCase):
    def test_the_presets_set_no_time_limit(self):
        presets = json.loads((ROOT / "CMakePresets.json").read_text(encoding="utf-8"))
        for preset in presets.get("testPresets", []):
            self.assertNotIn("timeout", preset.get("execution", {}),
                             f"test preset {preset['name']}: the time limit comes from judge/catalog.toml")

    def test_a_catalog_without_limits_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "catalog.toml"
            text = cat.CATALOG.read_text(encoding="utf-8")
            path.write_text(text.replace("bench_timeout_seconds", "# bench_timeout_seconds"), encoding="utf-8")
            with self.assertRaises(cat.CatalogError):
                cat.load(path)

    def test_ctest_uses_the_catalogs_test_time_limit(self):
        if not all(shutil.which(t) for t in ("cmake", "ninja", "clang++")):
            self.skipTest("toolchain not installed")
        limit = cat.load().limits.test_timeout_seconds
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run(["cmake", "-S", str(ROOT), "-B", tmp, "-G", "Ninja", "-Wno-dev",
                                   "-DCMAKE_CXX_COMPILER=clang++", "-DALLOCLAB_SANITIZER=asan"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            scripts = sorted(Path(tmp).glob("test_*_include.cmake"))
            self.assertTrue(scripts, "no test binary is registered with ctest")
            for script in scripts:
                self.assertIn(f"TIMEOUT;{limit:g}", script.read_text(encoding="utf-8"), script.name)


if __name__ == "__main__":
    unittest.main()
