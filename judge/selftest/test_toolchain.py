"""One list of packages (.ci/packages.txt), read by the install script CI and the development
container run, and by doctor; doctor names the sanitizer runtime of the clang it finds."""
from __future__ import annotations

import shutil
import subprocess
import unittest

from lab.maintainer import doctor
from lab.model.catalog import ROOT


class OneListOfPackages(unittest.TestCase):
    def test_the_install_script_reads_the_same_list_as_doctor(self):
        listed = subprocess.run(["bash", str(ROOT / ".ci" / "install"), "--list"], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual(listed.stdout.split(), doctor.packages())

    def test_ci_and_the_container_run_the_install_script(self):
        self.assertIn(".ci/install", (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
        dockerfile = (ROOT / ".devcontainer" / "Dockerfile").read_text(encoding="utf-8")
        self.assertIn("FROM debian:12", dockerfile)
        self.assertIn(".ci/packages.txt", dockerfile)
        self.assertIn("install", dockerfile.split("RUN", 1)[1])

    def test_the_list_holds_what_the_kit_uses(self):
        needed = {"clang", "g++", "lld", "cmake", "ninja-build", "libgtest-dev", "libbenchmark-dev", "doxygen",
                  "doxygen-awesome-css", "chromium", "fonts-noto-cjk", "clang-19", "libclang-rt-19-dev", "gcc-12-locales"}
        self.assertEqual(needed - set(doctor.packages()), set())

    def test_the_runtime_of_the_clang_in_use_is_named(self):
        for compiler in ("clang++", "clang++-19"):
            if shutil.which(compiler):
                runtime = doctor.clang_runtime(compiler)
                self.assertRegex(runtime, r"^libclang-rt-\d+-dev$")
                self.assertIn(runtime, doctor.packages(), f"{compiler} needs {runtime}")

    def test_packages_not_installed_are_found(self):
        if not shutil.which("dpkg-query"):
            self.skipTest("not a Debian system")
        self.assertEqual(doctor.not_installed(["cmake", "alloclab-no-such-package"]), ["alloclab-no-such-package"])


if __name__ == "__main__":
    unittest.main()
