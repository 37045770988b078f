"""Compiler output becomes diagnostics, and the learner's first error is the one shown; a tree's
groundwork compiles nothing that includes the header under test."""
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from lab.core import build, judging
from lab.model import catalog as cat

LOG = """[1/2] Building CXX object CMakeFiles/test_01-arena.dir/Unity/unity_0_cxx.cxx.o
FAILED: CMakeFiles/test_01-arena.dir/Unity/unity_0_cxx.cxx.o
In file included from /kit/judge/tests/01-arena/stage1_basics.cpp:2:
/kit/judge/tests/01-arena/stage1_basics.cpp:10:3: error: no member named 'nope' in 'alloclab::Arena'
/learner/arena.hpp:12:5: warning: unused variable 'x' [-Wunused-variable]
    int x = 0;
        ^
/learner/arena.hpp:20:10: error: use of undeclared identifier 'buffer'
  return buffer;
         ^
1 warning and 2 errors generated.
ninja: build stopped: subcommand failed.
"""


class DiagnosticsTest(unittest.TestCase):
    def test_errors_and_warnings_with_their_context(self):
        diags = build.parse_diagnostics(LOG)
        self.assertEqual([d.severity for d in diags], ["error", "warning", "error"])
        self.assertEqual(diags[2].message, "use of undeclared identifier 'buffer'")
        self.assertEqual(diags[2].context, ["  return buffer;", "         ^"])

    def test_the_first_error_in_the_learners_file_comes_first(self):
        result = build.BuildResult(False, 1.0, build.parse_diagnostics(LOG))
        self.assertEqual(result.first_error(Path("/learner/arena.hpp")).line, 20)
        self.assertEqual(result.first_error(None).line, 10)
        self.assertEqual(len(result.warnings_in(Path("/learner/arena.hpp"))), 1)

    def test_missing_definitions_are_explained(self):
        text = build._link_problem("x.cpp:(.text+0x1): undefined reference to `alloclab::Arena::reset()'")
        self.assertIn("alloclab::Arena::reset()", text)

    def test_duplicate_definitions_are_explained(self):
        for log in ("ld.lld: error: duplicate symbol: alloclab::helper()\n",
                    "x.o: multiple definition of `alloclab::helper()'; y.o: first defined here\n"):
            text = build._link_problem(log)
            self.assertIn("alloclab::helper()", text)
            self.assertIn("inline", text)

    def test_trees_are_named_by_compiler_sanitizer_and_implementation(self):
        self.assertEqual(build.tree_dir("clang", "asan", build.Impl("exercises")).name, "clang-asan")
        self.assertEqual(build.tree_dir("gcc", "tsan", build.Impl("solutions")).name, "gcc-tsan-solutions")
        self.assertEqual(build.tree_dir("clang", "asan", build.Impl("source", Path("/x")), "check1").name,
                         "clang-asan-source-check1")


class BuiltAheadTest(unittest.TestCase):
    def test_a_configuration_built_ahead_counts_that_build_as_its_own(self):
        """The thread sanitizer's build runs beside the first configuration's; when its turn
        comes, little is left to build, yet its report must say what building it took."""
        from contextlib import contextmanager
        first = cat.Stage(1, "S", "one", "", ("asan", "tsan"))
        stage = cat.Stage(2, "T", "two", "", ("asan", "tsan"), program="x")   # a program of its own: no wait
        exercise = cat.Exercise(1, "ex", "Ex", "", "easy", "ex.hpp", ("asan", "tsan"), (first, stage))
        request = judging.Request(exercise, build.Impl("exercises"), ("clang",))

        @contextmanager
        def built(*_args, **_kwargs):
            yield Path("test_01-ex"), build.BuildResult(True, 20.0, [])
        plan = [("clang", "asan", [first, stage]), ("clang", "tsan", [first, stage])]
        with mock.patch.object(build, "groundwork_built", return_value=build.BuildResult(True, 7.0, [])), \
                mock.patch.object(judging, "_tests_built", built), \
                judging._Prebuilds(request, cat.Limits(20, 65536, 4096, 300, 600), plan) as ahead:
            ahead.ahead("clang", "asan")
            ahead.after("clang", "asan", "x")
            ahead._pool.submit(lambda: None).result()   # the work submitted before it is done
            self.assertEqual(ahead.spent("clang", "tsan"), 27.0)
            self.assertEqual(ahead.spent("clang", "asan"), 0.0, "the first configuration is built in its turn")


class GroundworkTest(unittest.TestCase):
    """A later configuration's groundwork is built while the first builds the learner's code
    (judging._Prebuilds): were a file that includes the header part of it, a first judge would
    compile the learner's code twice at once, and a compile error would be met in a build nobody
    reads. And what an edit recompiles is only what includes the header."""

    @classmethod
    def setUpClass(cls):
        if not all(shutil.which(t) for t in ("cmake", "ninja", "clang++")):
            raise unittest.SkipTest("toolchain not installed")
        cls.tmp = tempfile.TemporaryDirectory()
        done = subprocess.run(["cmake", "-S", str(cat.ROOT), "-B", cls.tmp.name, "-G", "Ninja", "-Wno-dev",
                               "-DCMAKE_CXX_COMPILER=clang++", "-DALLOCLAB_SANITIZER=asan"],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            cls.tmp.cleanup()
            raise AssertionError(done.stderr[-2000:])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def inputs(self, target: str) -> list[str]:
        """What `target` is built from, its dependencies' inputs included, as Ninja names them."""
        return subprocess.run(["ninja", "-C", self.tmp.name, "-t", "inputs", target], capture_output=True,
                              text=True, timeout=60).stdout.split()

    def sources(self, target: str) -> list[Path]:
        """The C++ files `target` compiles, its dependencies' included."""
        return [Path(i) if Path(i).is_absolute() else Path(self.tmp.name) / i for i in self.inputs(target)
                if i.endswith((".cpp", ".cxx", ".pch"))]

    def test_the_groundwork_holds_the_precompiled_header_and_no_file_with_the_header(self):
        for exercise in cat.load().exercises:
            target = f"groundwork_{exercise.name}"
            sources = self.sources(target)
            self.assertTrue(any(s.name == "cmake_pch.hxx.pch" for s in sources), f"{target}: {sources}")
            self.assertEqual([s for s in sources if "CMakeFiles/test_" in str(s) or "CMakeFiles/list_" in str(s)], [],
                             f"{target} builds a test binary's own objects")
            with_header = [s.name for s in sources if s.suffix != ".pch" and
                           f'#include "{exercise.header}"' in s.read_text()]
            self.assertEqual(with_header, [], f"{target} compiles files that include {exercise.header}")
            model = [s for s in exercise.tests_dir.glob("stage*_model.cpp")]
            self.assertTrue(all(m in sources for m in model),
                            f"{target}: the model stage's generators are groundwork, {model} not in {sources}")

    def test_exercise_07s_tests_and_engine_reach_the_header_through_one_file_each(self):
        exercise = cat.load().resolve("7")
        own = [p.name for p in sorted(exercise.tests_dir.glob("*.cpp"))
               if f'#include "{exercise.header}"' in p.read_text()]
        self.assertEqual(own, ["manager_under_test.cpp"],
                         "exercise 07's test files reach the manager through manager_under_test.hpp, so that an "
                         "edit of the header recompiles one small file, not every test file")
        groundwork = self.sources(f"groundwork_{exercise.name}")
        unity = "".join(s.read_text() for s in groundwork if s.suffix == ".cxx")  # the files a unit includes
        for name in ("stage1_admission.cpp", "stage3_prefix_caching.cpp", "model_run.cpp"):
            self.assertTrue(exercise.tests_dir / name in groundwork or str(exercise.tests_dir / name) in unity,
                            f"{name} is compiled once per tree: {groundwork}")
        seam = f"seam_{build.program_name(exercise.name, 'engine')}"
        compiled = [s.name for s in self.sources(seam) if s.suffix == ".cpp"]
        self.assertIn("paged_manager.cpp", compiled, f"{seam} compiles the engine's one file that includes the header")
        self.assertNotIn("stage4_engine.cpp", compiled, f"{seam} compiles none of the engine's tests")
        self.assertTrue(any(f"{seam}.dir/" in i and i.endswith("paged_manager.cpp.o")
                            for i in self.inputs(f"test_{exercise.name}")),
                        "the main test binary links the engine's seam: its build compiles it beside the tests' own "
                        "(both cores after an edit), and the header is in two of its units, so that a function it "
                        "defines without inline is defined twice")

    def test_the_test_files_of_01_to_06_reach_the_header_through_a_seam(self):
        # The files that include each header: the seam, and a second unit so that a function the
        # header defines without inline fails the link (02 has two seams, one for its pools and one
        # for ObjectPool<T>; 05's other files are those of AlignedAllocator<T, Align>, which its tests
        # hand to containers of any T). Every other test file is compiled once per tree.
        including = {"1": ["arena_under_test.cpp", "header_in_a_second_unit.cpp"],
                     "2": ["header_in_a_second_unit.cpp", "object_pool_under_test.cpp", "pool_under_test.cpp"],
                     "3": ["block_pool_under_test.cpp", "header_in_a_second_unit.cpp"],
                     "4": ["caching_under_test.cpp", "header_in_a_second_unit.cpp"],
                     "5": ["arena_resource_under_test.cpp", "model_run.cpp", "stage1_aligned_vector.cpp",
                           "stage2_rebind.cpp"],
                     "6": ["header_in_a_second_unit.cpp", "ring_under_test.cpp"]}
        for number, expected in including.items():
            exercise = cat.load().resolve(number)
            tests = sorted(exercise.tests_dir.glob("*.cpp"))
            own = [p.name for p in tests if f'#include "{exercise.header}"' in p.read_text()]
            self.assertEqual(own, expected, f"exercise {exercise.name}'s test files reach the header through a "
                             "seam, so that an edit recompiles it, not every test file")
            groundwork = self.sources(f"groundwork_{exercise.name}")
            unity = "".join(s.read_text() for s in groundwork if s.suffix == ".cxx")
            for test in (t for t in tests if t.name not in expected):
                self.assertTrue(test in groundwork or str(test) in unity,
                                f"{test.name} is compiled once per tree: {groundwork}")

    def test_a_tree_built_for_some_stages_compiles_only_the_seams_their_files_use(self):
        # Exercise 02's ThreadSanitizer tree holds stage 4, which reaches the pools through
        # pool_under_test.cpp: ObjectPool's seam, which only stages 3 and 5 use, is not compiled there.
        with tempfile.TemporaryDirectory() as tree:
            done = subprocess.run(["cmake", "-S", str(cat.ROOT), "-B", tree, "-G", "Ninja", "-Wno-dev",
                                   "-DCMAKE_CXX_COMPILER=clang++", "-DALLOCLAB_SANITIZER=tsan",
                                   "-DALLOCLAB_ONLY_STAGES=4"], capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])

            def compiled(target: str) -> str:
                """The files `target` compiles: its inputs, and the files its unity units include."""
                inputs = subprocess.run(["ninja", "-C", tree, "-t", "inputs", target], capture_output=True,
                                        text=True, timeout=60).stdout.split()
                return "".join(Path(tree, i).read_text() for i in inputs if i.endswith(".cxx")) + " ".join(inputs)

            pools = compiled("test_02-fixed-pool")
            self.assertIn("pool_under_test.cpp", pools, "stage 4 reaches the pools through pool_under_test.cpp")
            self.assertNotIn("object_pool_under_test.cpp", pools,
                             "no file of stage 4 includes object_pool_under_test.hpp, so its seam is not compiled")
            self.assertNotIn("stage3_objects.cpp", pools, "a tree of stage 4 compiles no file of stage 3")
            self.assertIn("caching_under_test.cpp", compiled("test_04-caching-allocator"),
                          "stage 4 of exercise 04 reaches the header through caching_test_support.hpp, which "
                          "includes caching_under_test.hpp: its seam is compiled")


class LaterProgramsTest(unittest.TestCase):
    """Exercise 07's engine is a program of its own, built only once stages 1 to 3 pass; once it is in
    the tree, an edit leaves only its link, which the main program's build does on the other core."""

    def beside(self, tree: Path, numbers: tuple[int, ...] = ()) -> list[str]:
        catalog = cat.load()
        exercise = catalog.resolve("7")
        main = [s for s in exercise.stages if not s.program and (not numbers or s.number in numbers)]
        later = {"engine": [s for s in exercise.stages if s.program]}
        asked = build.Request(exercise, build.Impl("solutions"), ("clang",), compile_only_judged=bool(numbers))
        with mock.patch.object(judging.build, "tests_built", lambda *args: args[-1]):
            beside = judging._tests_built(asked, "clang", "asan", main, "", catalog.limits, later)
        return beside(tree)

    def test_the_engine_is_linked_beside_the_main_build_once_it_was_built(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp)
            self.assertEqual(self.beside(tree), [], "an engine never built waits for stages 1 to 3 to pass")
            (tree / "test_07-serving-engine-engine").write_text("")
            self.assertEqual(self.beside(tree), ["test_07-serving-engine-engine"],
                             "an engine built before is relinked in the main program's build")
            self.assertEqual(self.beside(tree, numbers=(1,)), [],
                             "a main binary built for some stages is another configuration of the tree, in which "
                             "the engine's binary is not linked")


if __name__ == "__main__":
    unittest.main()
