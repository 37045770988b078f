"""The check that a header leaves the test framework's macros alone, and what it remembers: a
verdict kept for a header whose directives did not change, never for one whose did."""
import shutil
import tempfile
import unittest
from pathlib import Path

from lab.core import integrity

CLEAN = """#pragma once
#include <cstddef>
#include "helper.hpp"
namespace alloclab {
inline int f() { return 1; }
}
"""


class HeaderKeyTest(unittest.TestCase):
    def setUp(self):
        self.folder = Path(tempfile.mkdtemp(prefix="alloclab-integrity-"))
        self.addCleanup(shutil.rmtree, self.folder)
        self.header = self.folder / "arena.hpp"
        (self.folder / "helper.hpp").write_text("#pragma once\ninline int g() { return 2; }\n")

    def key(self, text):
        self.header.write_text(text)
        return integrity._header_key("clang", self.header, [])

    def test_an_edit_of_code_keeps_the_key(self):
        self.assertEqual(self.key(CLEAN), self.key(CLEAN.replace("return 1;", "return 2; // edited")))

    def test_a_new_directive_changes_it(self):
        for line in ("#undef EXPECT_EQ", "  #  define EXPECT_EQ(a, b) 0", "%:define TEST(a, b) void f()",
                     "#\\\ndefine EXPECT_TRUE(x) 1", "/* a comment */ #undef ASSERT_EQ"):
            with self.subTest(line=line):
                self.assertNotEqual(self.key(CLEAN), self.key(CLEAN + line + "\n"))

    def test_an_edit_of_an_included_file_changes_it(self):
        before = self.key(CLEAN)
        (self.folder / "helper.hpp").write_text("#pragma once\n#undef EXPECT_EQ\n")
        self.assertNotEqual(before, self.key(CLEAN))

    def test_what_the_text_cannot_decide_is_never_remembered(self):
        for text in (CLEAN + '_Pragma("push_macro(\\"EXPECT_EQ\\")")\n', CLEAN + "int x = __COUNTER__;\n",
                     CLEAN + "#define NAME <gtest/gtest.h>\n#include NAME\n"):
            with self.subTest(text=text.splitlines()[-1]):
                self.assertEqual(self.key(text), "")

    def test_directives_that_read_the_line_number_are_remembered_with_it(self):
        text = CLEAN + "#if __LINE__ > 7\n#undef EXPECT_EQ\n#endif\n"
        self.assertNotEqual(self.key(text), self.key("// one line more\n" + text))


@unittest.skipUnless(shutil.which("clang++"), "clang++ is not installed")
class RememberedVerdictTest(unittest.TestCase):
    def test_a_header_that_starts_tampering_is_caught_after_a_clean_verdict(self):
        with tempfile.TemporaryDirectory(prefix="alloclab-integrity-") as tmp:
            header = Path(tmp) / "arena.hpp"
            header.write_text("#pragma once\ninline int f() { return 1; }\n")
            self.assertEqual(integrity.tampered_macros("clang", header, []), [])
            header.write_text("#pragma once\ninline int f() { return 2; }\n")
            self.assertEqual(integrity.tampered_macros("clang", header, []), [])
            header.write_text("#pragma once\n#undef EXPECT_EQ\ninline int f() { return 2; }\n")
            self.assertEqual(integrity.tampered_macros("clang", header, []),
                             ["it undefines EXPECT_EQ, a macro of the test framework"])


if __name__ == "__main__":
    unittest.main()
