"""The mutant generator: what it changes, and what it never touches."""
import unittest

from lab.maintainer import mutate

_SOURCE = """\
#include <vector>  // a < b in a comment
int f(int a, int b) {
  const char* s = "a < b";  // nor in a string
  std::vector<int> v;
  if (a < b && b != 3) return a + b;
  v.push_back(a);
  return !v.empty();
}
"""


def _mutated(kind):
    return [m.mutated.strip() for m in mutate.generate(_SOURCE) if m.kind == kind]


class GenerateTest(unittest.TestCase):
    def test_relational_boundaries_and_negations(self):
        self.assertEqual(_mutated("relational"), ["if (a <= b && b != 3) return a + b;",
                                                  "if (a < b && b == 3) return a + b;"])

    def test_logical_operators_and_negation(self):
        self.assertEqual(_mutated("logical"), ["if (a < b || b != 3) return a + b;", "return v.empty();"])

    def test_arithmetic_and_constants_plus_and_minus_one(self):
        self.assertEqual(_mutated("arithmetic"), ["if (a < b && b != 3) return a - b;"])
        self.assertEqual(_mutated("constant"), ["if (a < b && b != 4) return a + b;",
                                                "if (a < b && b != 2) return a + b;"])

    def test_a_statement_becomes_empty_but_a_declaration_or_return_stays(self):
        deleted = [m for m in mutate.generate(_SOURCE) if m.kind == "deletion"]
        self.assertEqual([(m.line, m.mutated) for m in deleted], [(5, "  ;"), (6, "  ;")])

    def test_never_inside_comments_strings_templates_or_preprocessor_lines(self):
        lines = {m.line for m in mutate.generate(_SOURCE)}
        self.assertNotIn(1, lines)  # the #include and its comment
        self.assertNotIn(3, lines)  # the string and the comment; `char*` is no multiplication
        self.assertNotIn(4, lines)  # template brackets are no relational operators

    def test_a_mutant_changes_exactly_one_line(self):
        for m in mutate.generate(_SOURCE):
            before, after = _SOURCE.split("\n"), mutate.apply(_SOURCE, m).split("\n")
            self.assertEqual(len(before), len(after))
            self.assertEqual([i + 1 for i, (x, y) in enumerate(zip(before, after)) if x != y], [m.line])

    def test_the_references_yield_mutants_of_every_kind(self):
        from lab.model import catalog as cat
        for ex in cat.load().exercises:
            kinds = {m.kind for m in mutate.generate(ex.solution_file.read_text(encoding="utf-8"))}
            self.assertEqual(kinds, {"relational", "arithmetic", "logical", "constant", "deletion"}, ex.name)


    def test_every_recorded_equivalent_mutant_is_still_made_and_has_a_reason(self):
        from lab.model import catalog as cat
        for ex in cat.load().exercises:
            made = {m.key() for m in mutate.generate(ex.solution_file.read_text(encoding="utf-8"))}
            for key, reason in mutate.equivalents(ex).items():
                with self.subTest(exercise=ex.name, line=key[0]):
                    self.assertIn(key, made, "the reference changed: drop or update the record")
                    self.assertTrue(reason.strip())


class ProvenAgainstTest(unittest.TestCase):
    """A mutation run records the reference it proved; `check` names the run a changed one needs."""

    def setUp(self):
        import tempfile
        from pathlib import Path
        from types import SimpleNamespace
        root = Path(tempfile.mkdtemp())
        (root / "mistakes").mkdir()
        (root / "arena.hpp").write_text("int f() { return 1; }\n", encoding="utf-8")
        self.record = root / "mistakes" / "equivalent-mutants.toml"
        self.record.write_text('# Mutants of arena.hpp, and why.\n\n[[equivalent]]\nline = "a;"\nmutant = ";"\n'
                               'reason = "r"\n', encoding="utf-8")
        self.exercise = SimpleNamespace(id=1, name="01-arena", solution_file=root / "arena.hpp",
                                        mistakes_dir=root / "mistakes")

    def test_a_record_that_names_no_reference_asks_for_a_run(self):
        [problem] = mutate.record_problems([self.exercise])
        self.assertIn("never proven", problem)
        self.assertIn("python3 judge/judge.py mutate 1", problem)

    def test_the_proof_is_written_above_the_entries_and_kept_there(self):
        mutate.record_proof(self.exercise, mutate.reference_digest(self.exercise))
        mutate.record_proof(self.exercise, mutate.reference_digest(self.exercise))
        text = self.record.read_text(encoding="utf-8")
        self.assertEqual(text.count("proven_against = "), 1)
        self.assertLess(text.index("proven_against"), text.index("[[equivalent]]"))
        self.assertEqual(mutate.record_problems([self.exercise]), [])
        self.assertEqual(list(mutate.equivalents(self.exercise).values()), ["r"])

    def test_a_changed_reference_names_the_run_to_make(self):
        mutate.record_proof(self.exercise, mutate.reference_digest(self.exercise))
        self.exercise.solution_file.write_text("int f() { return 2; }\n", encoding="utf-8")
        [problem] = mutate.record_problems([self.exercise])
        self.assertIn("changed since", problem)
        self.assertIn("python3 judge/judge.py mutate 1", problem)


if __name__ == "__main__":
    unittest.main()
