"""The judge's layers (docs/authoring.md, "The judge's layers"): each module imports only from
its own layer and those below it, counting the imports inside functions, so no import circle
can form."""
from __future__ import annotations

import ast
import unittest
from pathlib import Path

LAB = Path(__file__).resolve().parents[1] / "lab"
# Each layer, and the layers it may import from. ui and pipe are the terminal: every layer
# may write to it, and they import nothing of the judge.
ALLOWED = {
    "terminal": set(),
    "model": {"model"},
    "core": {"terminal", "model", "core"},
    "learner": {"terminal", "model", "core", "learner"},
    "instructor": {"terminal", "model", "core", "learner", "instructor"},
    "maintainer": {"terminal", "model", "core", "learner", "maintainer"},
    "cli": {"terminal", "model", "core", "learner", "instructor", "maintainer"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(LAB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 2:
        return {"cli": "cli", "ui": "terminal", "pipe": "terminal"}.get(parts[1], parts[1])
    return parts[1]


def imports(path: Path) -> set[str]:
    """Every module of the judge that `path` imports, wherever the import statement stands."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("lab"):
                continue
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                found.add(candidate if (LAB.parent / (candidate.replace(".", "/") + ".py")).is_file() else module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("lab."))
    return {m for m in found if m != "lab" and not m.endswith("__init__")}


class Layers(unittest.TestCase):
    def setUp(self):
        self.graph = {module_name(p): imports(p) for p in LAB.rglob("*.py")}

    def test_each_module_imports_only_its_own_layer_and_those_below(self):
        wrong = [f"{m} ({layer(m)}) imports {i} ({layer(i)})" for m, found in sorted(self.graph.items())
                 for i in sorted(found) if layer(i) not in ALLOWED[layer(m)]]
        self.assertEqual(wrong, [], "an import against the layers: move the piece it needs down a layer")

    def test_there_is_no_import_circle(self):
        seen: dict[str, int] = {}   # 1: on the path, 2: done

        def visit(module: str, path: list[str]) -> list[str] | None:
            seen[module] = 1
            for other in sorted(self.graph.get(module, ())):
                if seen.get(other) == 1:
                    return path + [other]
                if other not in seen and (circle := visit(other, path + [other])):
                    return circle
            seen[module] = 2
            return None

        for module in sorted(self.graph):
            if module not in seen:
                circle = visit(module, [module])
                self.assertIsNone(circle, f"an import circle: {' -> '.join(circle or [])}")

    def test_only_the_command_line_and_the_platforms_entry_points_choose_an_exit_status(self):
        # cli.main alone turns an outcome into an exit status. A course platform's entry point
        # (judge/autograders/*/run_autograder, run) is exempt: it is started by its own shell
        # script, not by a person, and the status is that script's signal (0: the results were
        # written; else it writes its own), so the command table's statuses mean nothing there.
        exempt = {"lab.instructor.gradescope", "lab.instructor.prairielearn"}
        found = {module_name(p) for p in LAB.rglob("*.py")
                 if any(isinstance(node, ast.Attribute) and node.attr == "exit" and
                        isinstance(node.value, ast.Name) and node.value.id == "sys"
                        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))}
        self.assertLessEqual(found, exempt, "a module that exits on its own: return True or False, or raise "
                                            "UsageError, and let cli.main choose the status")

    def test_the_layers_are_folders(self):
        self.assertEqual(sorted(p.name for p in LAB.iterdir() if p.is_dir() and p.name != "__pycache__"),
                         ["core", "instructor", "learner", "maintainer", "model"])
        self.assertEqual(sorted(p.name for p in LAB.glob("*.py")), ["__init__.py", "cli.py", "pipe.py", "ui.py"])


if __name__ == "__main__":
    unittest.main()
