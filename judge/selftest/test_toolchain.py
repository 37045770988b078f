"""One list of packages (.ci/packages.txt), read by the install script CI and the development
container run, and by doctor; doctor names the sanitizer runtime of the clang it finds."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
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


def quick_start(readme: str) -> list[str]:
    """The commands of a README's quick start: the first code block after its heading, comments cut."""
    block = re.search(r"## (?:Quick start|快速开始)\n.*?```sh\n(.*?)```", readme, re.S)
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


class TwoCommandsOnAFreshMachine(unittest.TestCase):
    """The README's quick start is two commands, each of which sets up what it needs: the same
    install script CI and the development container run."""

    def test_the_quick_start_is_two_commands_that_install_first(self):
        for readme in ("README.md", "README.zh.md"):
            commands = quick_start((ROOT / readme).read_text(encoding="utf-8"))
            self.assertEqual(commands, ["bash .ci/install && python3 judge/judge.py test 1", "bash .ci/run"], readme)

    def test_ci_runs_the_readmes_test_command_after_the_install(self):
        run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        self.assertLess(run.index(".ci/install"), run.index("python3 judge/judge.py check"))
        dockerfile = (ROOT / ".devcontainer" / "Dockerfile").read_text(encoding="utf-8")
        self.assertIn(".ci/install", dockerfile, "the container installs with the script the first command runs")

    def test_a_missing_compiler_names_the_one_command_that_installs_it(self):
        with tempfile.TemporaryDirectory() as bare:
            # A PATH with Python and apt-get but no compiler, CMake or Ninja: a fresh Debian 12 machine.
            for tool in ("git", "apt-get"):
                if shutil.which(tool):
                    os.symlink(shutil.which(tool), os.path.join(bare, tool))
            env = {**os.environ, "PATH": bare, "LANG": "C.UTF-8"}
            env.pop("LC_ALL", None)
            for language, words in (("en", "Install the toolchain with one command"), ("zh", "安装工具链")):
                ran = subprocess.run([sys.executable, str(ROOT / "judge" / "judge.py"), "--lang", language, "test", "1"],
                                     capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
                self.assertEqual(ran.returncode, 2, ran.stderr)
                self.assertNotIn("Traceback", ran.stderr)
                self.assertIn("clang++", ran.stderr)
                self.assertIn(words, ran.stderr)
                if shutil.which("apt-get"):
                    self.assertRegex(ran.stderr, r"`(sudo )?bash \.ci/install`")
                self.assertNotIn("doctor", ran.stderr, "one command, not a command that names a third")

    def test_the_install_script_is_quiet_when_nothing_is_missing(self):
        if not shutil.which("dpkg") or doctor.not_installed(doctor.packages()):
            self.skipTest("packages are missing here: the script would install them")
        ran = subprocess.run(["bash", str(ROOT / ".ci" / "install")], capture_output=True, text=True, timeout=120)
        self.assertEqual((ran.returncode, ran.stdout, ran.stderr), (0, "", ""))


if __name__ == "__main__":
    unittest.main()
