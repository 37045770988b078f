#!/usr/bin/env python3
"""Captures the golden fixtures beside this file: what each compiler really prints for the
things the judge must read (a compile error in the learner's header, a warning, a function
defined twice at link time, AddressSanitizer, UndefinedBehaviorSanitizer and ThreadSanitizer
reports, among them reports whose other stacks (where the memory was allocated or freed,
where a thread was started) pass through the learner's file, and a block released through the
wrong delete, as AddressSanitizer and as the tests' replaced operator new report it), one folder
per compiler. test_golden.py parses every one.

Run it again when a compiler is added or upgraded:
    python3 judge/selftest/golden/capture.py [g++-12 clang++-14 clang++-19] [case ...]
The temporary folder the programs are built in is written as /alloclab in the fixtures."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lab.core import process as runner, sanitizers  # noqa: E402

COMPILERS = ("g++-12", "clang++-14", "clang++-19")
PLACE = "/alloclab"

_BOX = """#pragma once
struct Box {
  int* make() { return new int[4](); }  // line 3: allocates
  void drop(int* p) { delete[] p; }     // line 4: frees
  int peek(int* p) { return p[1]; }     // line 5: reads
};
"""

# Chunks released through the wrong delete: each name of the first line is the form of new the
# other line's delete does not match.
_CHUNKS = """#pragma once
#include <new>
struct Chunks {
  void* take() { return ::operator new(64%s); }  // line 4: allocates
  void drop(void* p) { %s; }  // line 5: releases
};
"""
_MISMATCH_MAIN = "#include \"arena.hpp\"\nint main() { Chunks c; c.drop(c.take()); }\n"
# The tests' replaced operator new and delete, copied beside the program as the kit lays them out,
# for the cases whose name starts with "replaced-".
SUPPORT = HERE.parents[1] / "tests" / "support"
_SUPPORT_FILES = ("failing_new.cpp", "failing_new.hpp", "alloclab_test.hpp")

# Each case: the learner's header, the files that include it, how to build, whether to run.
# The line numbers test_golden.py expects are those of the marked lines below.
CASES = {
    "compile-error": ("""#pragma once
inline int answer() {
  return undeclared_name;  // line 3: the error
}
""", "#include \"arena.hpp\"\nint main() { return answer(); }\n", [], False),
    "warning": ("""#pragma once
inline int answer(int unused) {  // line 2: the warning
  return 42;
}
""", "#include \"arena.hpp\"\nint main() { return answer(1) == 42 ? 0 : 1; }\n", [], False),
    "duplicate-definition": ("""#pragma once
int answer() { return 42; }  // not inline: defined in every file that includes it
""", "#include \"arena.hpp\"\nint main() { return answer() == 42 ? 0 : 1; }\n", [], False),
    "asan": ("""#pragma once
inline int read_past(int* block, int n) {
  return block[n];  // line 3: one past the end
}
""", "#include \"arena.hpp\"\nint main() { int* b = new int[4]; int r = read_past(b, 4); delete[] b; return r; }\n",
             ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
    "ubsan": ("""#pragma once
#include <climits>
inline int grow(int x) {
  return x + 1;  // line 4: overflows for INT_MAX
}
""", "#include \"arena.hpp\"\nint main(int argc, char**) { return grow(INT_MAX - 1 + argc) > 0; }\n",
              ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
    "tsan": ("""#pragma once
#include <thread>
inline long counter = 0;
inline void bump() {
  for (int i = 0; i < 100000; ++i) ++counter;  // line 5: unsynchronised
}
""", "#include \"arena.hpp\"\nint main() { std::thread a(bump), b(bump); a.join(); b.join(); return counter == 0; }\n",
             ["-fsanitize=thread"], True),
    # The tests' own threads race on memory the learner's constructor allocated, in threads a
    # function of the learner's file started: the line to name is neither of those.
    "tsan-heap": ("""#pragma once
#include <cstddef>
#include <thread>
struct Ring {
  explicit Ring(std::size_t n) : data(new long[n]()) {}  // line 5: allocates the memory raced on
  ~Ring() { delete[] data; }
  long* slot(std::size_t i) { return data + i; }
  long* data;
};
template <class F> std::thread start(F f) { return std::thread(f); }  // line 10: starts a thread
""", """#include "arena.hpp"
int main() {
  Ring ring(4);
  std::thread a = start([&] { *ring.slot(0) = 1; });  // line 4: the test writes
  std::thread b = start([&] { *ring.slot(0) = 2; });  // line 5: the test writes
  a.join();
  b.join();
  return 0;
}
""", ["-fsanitize=thread"], True),
    # The learner's code reads a block it freed: the line is the read, not the free.
    "asan-use-after-free": (_BOX, "#include \"arena.hpp\"\nint main() { Box b; int* p = b.make(); b.drop(p); "
                            "return b.peek(p); }\n", ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
    # The test reads a block the learner's code freed: the access is the test's, the free the learner's.
    "asan-freed-by-learner": (_BOX, "#include \"arena.hpp\"\nint main() { Box b; int* p = b.make(); b.drop(p); "
                              "return p[2]; }\n", ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
    # A new/delete mismatch, as AddressSanitizer reports it, and as the tests' replaced operator
    # new (judge/tests/support/failing_new.cpp), which hides AddressSanitizer's own check, does.
    "asan-alloc-dealloc-mismatch": (_CHUNKS % ("", "delete[] static_cast<char*>(p)"), _MISMATCH_MAIN,
                                    ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
    "replaced-alloc-dealloc-mismatch": (_CHUNKS % ("", "delete[] static_cast<char*>(p)"), _MISMATCH_MAIN,
                                        ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
    "replaced-new-delete-type-mismatch": (_CHUNKS % (", std::align_val_t{64}", "::operator delete(p)"),
                                          _MISMATCH_MAIN,
                                          ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], True),
}


def capture(compiler: str, case: str, tmp: Path) -> str:
    header, main, flags, run = CASES[case]
    (tmp / "arena.hpp").write_text(header)
    (tmp / "main.cpp").write_text(main)
    sources = [tmp / "main.cpp"]
    if case == "duplicate-definition":
        (tmp / "other.cpp").write_text("#include \"arena.hpp\"\n")
        sources.append(tmp / "other.cpp")
    if case.startswith("replaced-"):
        support = tmp / "judge" / "tests" / "support"
        support.mkdir(parents=True)
        for name in _SUPPORT_FILES:
            shutil.copy(SUPPORT / name, support / name)
        sources.append(support / "failing_new.cpp")
        flags = [*flags, f"-I{support}"]
    linker = ["-fuse-ld=lld"] if "clang" in compiler and shutil.which("ld.lld") else []  # as CMakeLists.txt does
    argv = [compiler, "-std=c++20", "-Wall", "-Wextra", "-g", "-O0", "-fno-omit-frame-pointer", *flags, *linker,
            *map(str, sources), "-o", str(tmp / "program")]
    built = runner.run(argv, cwd=tmp, timeout=300, keep_bytes=400_000)
    text = built.stdout.text() + built.stderr.text()
    if run and built.returncode == 0:
        env = dict(sanitizers.environment(4096))
        symbolizer = shutil.which("llvm-symbolizer")
        if "clang" in compiler and symbolizer:
            # A newer runtime may not find an older llvm-symbolizer by itself and then prints bare
            # addresses; the fixtures are of symbolized reports, as a learner's machine prints them.
            for name in ("ASAN_OPTIONS", "TSAN_OPTIONS"):
                env[name] += f":external_symbolizer_path={symbolizer}"
        ran = runner.run([str(tmp / "program")], cwd=tmp, env=env,
                         timeout=120, keep_bytes=400_000)
        text = ran.stderr.text()
    return text.replace(str(tmp), PLACE)


def main(argv: list[str]) -> int:
    cases = [a for a in argv if a in CASES] or list(CASES)
    for compiler in [a for a in argv if a not in CASES] or COMPILERS:
        if not shutil.which(compiler):
            print(f"{compiler}: not installed, skipped")
            continue
        folder = HERE / compiler
        folder.mkdir(exist_ok=True)
        for case in cases:
            with tempfile.TemporaryDirectory(prefix="alloclab-golden-") as tmp:
                text = capture(compiler, case, Path(tmp))
            (folder / f"{case}.txt").write_text(text, encoding="utf-8")
            print(f"{compiler}/{case}.txt: {len(text.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
