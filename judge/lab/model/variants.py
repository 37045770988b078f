"""The other implementations of an exercise's contract, each a small unified diff of its reference:
the known mistakes (`judge/mistakes/NN-S/*.diff`), which the stages must catch and a learner's own
tests should, and the wheats (`solutions/NN-S/wheats/*.diff`), correct implementations that differ
from the reference wherever the contract leaves a choice, which every stage and every valid test
of the learner's must pass.

A diff keeps its implementation tied to the reference as it is: when the reference changes under
it, the diff no longer applies and says so, instead of drifting apart silently. Each hunk adds a
line marked with the variant's word (`// MISTAKE: why it looks right`, `// WHEAT: why the contract
allows it`): a hunk without one changes something the variant is not about.

A wheat file starts with the lines the judge reads,

    Wheat: hands out a new chunk's blocks from the last to the first; the contract leaves that order free.
    Wheat zh: 新 chunk 的块从最后一块往前交出；契约对这个顺序不作规定。

which `examine` shows a learner whose test fails on it (the second in Chinese), then the output of
`diff -u`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .catalog import ROOT, Exercise
from .files import write_if_changed

OUT = ROOT / "build" / "mistakes"
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(Exception):
    """The diff does not apply to the reference as it is now."""


@dataclass(frozen=True)
class Mistake:
    path: Path
    description: str
    caught_by: tuple[str, ...]
    beyond_the_model: str = ""   # why the model stage cannot catch it; "" when it does
    serving: str = ""            # what `serve` makes of it: one of SERVING_OUTCOMES, or "passes: why"

    @property
    def name(self) -> str:
        return self.path.stem

    def stages(self, exercise: Exercise) -> tuple[int, ...]:
        """The numbers of the exercise's stages whose tests catch it, lowest first."""
        found = (exercise.stage_for_suite(test.split(".")[0]) for test in self.caught_by)
        return tuple(sorted({s.number for s in found if s is not None}))


@dataclass(frozen=True)
class Wheat:
    path: Path
    description: str        # what it does differently, in the contract's words
    description_zh: str = ""   # the same in Chinese, for a learner who reads Chinese

    @property
    def name(self) -> str:
        return self.path.stem


def _line(text: str, key: str) -> str:
    found = re.search(rf"^{key}:\s*(.+)$", text, re.M)
    return found.group(1).strip() if found else ""


def mistakes(exercise: Exercise) -> list[Mistake]:
    found = []
    for path in sorted(exercise.mistakes_dir.glob("*.diff")):
        text = path.read_text(encoding="utf-8")
        caught = _line(text, "Caught by")
        found.append(Mistake(path, _line(text, "Mistake"), tuple(t.strip() for t in caught.split(",")) if caught else (),
                             _line(text, "Beyond the model"), _line(text, "Serving")))
    return found


def wheats_dir(exercise: Exercise) -> Path:
    return exercise.solution_file.parent / "wheats"


def wheats(exercise: Exercise) -> list[Wheat]:
    """The exercise's wheats besides its reference, by name."""
    texts = {path: path.read_text(encoding="utf-8") for path in sorted(wheats_dir(exercise).glob("*.diff"))}
    return [Wheat(path, _line(text, "Wheat"), _line(text, "Wheat zh")) for path, text in texts.items()]


def apply(original: str, diff: str) -> str:
    """Applies a unified diff exactly: every context and removed line must match where the
    hunk says it is."""
    lines = original.splitlines(keepends=True)
    out: list[str] = []
    at = 0  # lines of the original consumed so far
    diff_lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(diff_lines):
        m = _HUNK_RE.match(diff_lines[i])
        i += 1
        if not m:
            continue
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        if start < at:
            raise PatchError(f"hunk at line {start + 1} overlaps the one before it")
        out.extend(lines[at:start])
        at = start
        while i < len(diff_lines) and not diff_lines[i].startswith("@@"):
            line = diff_lines[i]
            i += 1
            tag, body = line[:1], line[1:]
            if tag == "\\":  # "\ No newline at end of file"
                continue
            if tag in (" ", "-"):
                if at >= len(lines) or lines[at].rstrip("\n") != body.rstrip("\n"):
                    raise PatchError(f"line {at + 1} of the reference is not {body.strip()!r}")
                at += 1
                if tag == " ":
                    out.append(lines[at - 1])
            elif tag == "+":
                out.append(body if body.endswith("\n") else body + "\n")
            elif line.strip() == "":
                raise PatchError("a blank line inside a hunk: context lines start with a space")
    out.extend(lines[at:])
    return "".join(out)


def unmarked_hunks(diff: str, word: str = "MISTAKE") -> list[int]:
    """The reference's line numbers of the hunks that add no line marked `// <word>`: each
    changes something the variant is not about (or hides which line is the point)."""
    mark = re.compile(rf"//\s*{word}\b")
    unmarked = []
    start, marked = None, False
    for line in diff.splitlines() + ["@@ end"]:
        if line.startswith("@@"):
            if start is not None and not marked:
                unmarked.append(start)
            m = _HUNK_RE.match(line)
            start, marked = (int(m.group(1)) if m else None), False
        elif start is not None and line.startswith("+") and mark.search(line):
            marked = True
    return unmarked


def materialize(exercise: Exercise, mistake: Mistake, target: Path | None = None) -> Path:
    """Writes the wrong implementation as a header under build/mistakes/ (or at `target`) and
    returns its path. Raises PatchError when the diff no longer applies to the reference, or has
    a hunk that marks no line as the mistake."""
    diff = mistake.path.read_text(encoding="utf-8")
    unmarked = unmarked_hunks(diff)
    if unmarked:
        raise PatchError(f"the hunk at line {unmarked[0]} adds no line ending in a `// MISTAKE` comment, so it "
                         "changes something besides the mistake (mark the wrong line, or drop the hunk)")
    wrong = apply(exercise.solution_file.read_text(encoding="utf-8"), diff)
    header = f"// Mistake: {mistake.description}\n// Caught by: {', '.join(mistake.caught_by)}\n"
    return write_if_changed(target or OUT / exercise.name / f"{mistake.name}.hpp", header + wrong)


def materialize_wheat(exercise: Exercise, wheat: Wheat, target: Path) -> Path:
    """Writes the wheat as a header at `target`. Raises PatchError as materialize does."""
    diff = wheat.path.read_text(encoding="utf-8")
    unmarked = unmarked_hunks(diff, "WHEAT")
    if unmarked:
        raise PatchError(f"{wheat.path.name}: the hunk at line {unmarked[0]} adds no line with a `// WHEAT:` comment "
                         "saying why the contract allows it")
    if not wheat.description:
        raise PatchError(f"{wheat.path.name}: no `Wheat:` line saying what it does differently")
    return write_if_changed(target, f"// Wheat: {wheat.description}\n" + apply(exercise.solution_file.read_text(encoding="utf-8"), diff))
