"""`mutate`: the maintainer's proof that a suite, not only a reference, is sound. Every
single-point change of the reference that a learner could have written (a boundary moved by
one, an operator swapped, a constant off by one, a statement left out) is judged like a
learner's header; a suite that lets one pass has a hole, unless the change does not alter
anything observable, in which case a maintainer records why in the exercise's
`judge/mistakes/NN-S/equivalent-mutants.toml`:

    [[equivalent]]
    line = "if (m.offset > used_) return;"      # the reference's line, stripped
    mutant = "if (m.offset >= used_) return;"   # the same line mutated, stripped
    reason = "at m.offset == used_ both poison nothing and leave used_ as it is"

Several mutants of one line that are equivalent for one reason share a record: `mutants = [...]`.
Lines are matched by their text, so the record survives edits elsewhere in the reference.

A run that judges every mutant and ends with no survivor it cannot explain writes the SHA-256 of
the reference it judged at the top of the same file (`proven_against = "..."`). The run takes
minutes per exercise, so it is not part of `check`; `check` compares the digests instead
(`record_problems`), and names the `mutate N` to run for a reference that changed since."""
from __future__ import annotations

import hashlib
import re
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from ..core import build, judging
from .. import ui
from ..model.catalog import ROOT, Catalog, Exercise, shown

OUT = ROOT / "build" / "mutants"

# Binary operators are written with a space on each side in the references, which tells them
# from template brackets (`std::vector<int>`), pointers (`Node* p`) and references (`T& x`).
_SWAPS = {
    "<": ("<=",), "<=": ("<",), ">": (">=",), ">=": (">",), "==": ("!=",), "!=": ("==",),
    "+": ("-",), "-": ("+",), "*": ("/",), "/": ("*",), "%": ("*",),
    "&&": ("||",), "||": ("&&",), "&": ("|",), "|": ("&",),
    "+=": ("-=",), "-=": ("+=",),
}
_KINDS = {"<": "relational", "<=": "relational", ">": "relational", ">=": "relational", "==": "relational",
          "!=": "relational", "&&": "logical", "||": "logical"}
_BINARY_RE = re.compile(r"(?<= )(<=|>=|==|!=|&&|\|\||\+=|-=|<|>|\+|-|\*|/|%|&|\|)(?= )")
_INCREMENT_RE = re.compile(r"\+\+|--")
_NOT_RE = re.compile(r"!(?=[\w(])")
_NUMBER_RE = re.compile(r"(?<![\w.])(\d+)(?![\w.'])")
_BOOL_RE = re.compile(r"\b(true|false)\b")
# Lines a deletion would only turn into a compile error.
_NOT_A_STATEMENT_RE = re.compile(r"^(return\b|using\b|static_assert\b|typedef\b|template\b|friend\b|struct\b|"
                                 r"class\b|namespace\b|public:|private:|protected:|case\b|default:|[}{])")
_DECLARATION_RE = re.compile(r"^[\w:<>,*&\s]+[\s*&]\w+\s*(=[^=].*|\{.*\})?;$")


@dataclass(frozen=True)
class Mutant:
    line: int         # 1-based line of the reference
    kind: str         # relational | arithmetic | logical | constant | deletion
    original: str     # the reference's line
    mutated: str      # the line as the mutant has it (an empty statement for a deleted one)

    def key(self) -> tuple[str, str]:
        return self.original.strip(), self.mutated.strip()

    def diff(self) -> str:
        return f"-{self.original}\n+{self.mutated}"


def code_mask(source: str) -> list[str]:
    """The source's lines with every comment, string and character literal blanked out (same
    lengths), and preprocessor lines blanked whole: what a mutation may touch."""
    out, i, n = [], 0, len(source)
    chars = list(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            while i < n and source[i] != "\n":
                chars[i] = " "
                i += 1
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k in range(i, end):
                if chars[k] != "\n":
                    chars[k] = " "
            i = end
        elif c in "\"'":
            k = i + 1
            while k < n and source[k] != c and source[k] != "\n":
                k += 2 if source[k] == "\\" else 1
            for j in range(i, min(k + 1, n)):
                chars[j] = " "
            i = k + 1
        else:
            i += 1
    for line in "".join(chars).split("\n"):
        out.append("" if line.lstrip().startswith("#") else line)
    return out


def generate(source: str) -> list[Mutant]:
    """Every single-point mutant of `source`, in line order."""
    lines = source.split("\n")
    mask = code_mask(source)
    mutants: list[Mutant] = []

    def replace(no: int, start: int, end: int, text: str, kind: str) -> None:
        line = lines[no]
        mutants.append(Mutant(no + 1, kind, line, line[:start] + text + line[end:]))

    previous_code = ""
    for no, code in enumerate(mask):
        if not code.strip():
            continue
        for m in _BINARY_RE.finditer(code):
            for swap in _SWAPS[m.group(1)]:
                replace(no, m.start(), m.end(), swap, _KINDS.get(m.group(1), "arithmetic"))
        for m in _INCREMENT_RE.finditer(code):
            replace(no, m.start(), m.end(), "--" if m.group() == "++" else "++", "arithmetic")
        for m in _NOT_RE.finditer(code):
            replace(no, m.start(), m.end(), "", "logical")
        for m in _NUMBER_RE.finditer(code):
            value = int(m.group(1))
            for other in (value + 1, value - 1):
                if other >= 0:
                    replace(no, m.start(), m.end(), str(other), "constant")
        for m in _BOOL_RE.finditer(code):
            replace(no, m.start(), m.end(), "false" if m.group() == "true" else "true", "constant")
        stripped = code.strip()
        # A statement on a line of its own becomes the empty statement, which keeps a braceless
        # `if (...)` above it meaningful.
        starts_a_statement = previous_code.rstrip().endswith((";", "{", "}", ")", ":")) or not previous_code
        if (stripped.endswith(";") and starts_a_statement and not _NOT_A_STATEMENT_RE.match(stripped)
                and not _DECLARATION_RE.match(stripped)):
            indent = lines[no][:len(lines[no]) - len(lines[no].lstrip())]
            mutants.append(Mutant(no + 1, "deletion", lines[no], indent + ";"))
        previous_code = code
    return mutants


_PROVEN_RE = re.compile(r'^proven_against = "[0-9a-f]*"\n', re.MULTILINE)


def record_path(exercise: Exercise):
    return exercise.mistakes_dir / "equivalent-mutants.toml"


def _record(exercise: Exercise) -> dict:
    path = record_path(exercise)
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def reference_digest(exercise: Exercise) -> str:
    """The SHA-256 of the reference's bytes: what a mutation run proves the tests against."""
    return hashlib.sha256(exercise.solution_file.read_bytes()).hexdigest()


def record_proof(exercise: Exercise, digest: str) -> None:
    """Writes `digest`, the reference's as the run judged it, as the one the exercise's mutants
    were last proven against: in place of the record's line, or above its first entry."""
    path = record_path(exercise)
    line = f'proven_against = "{digest}"\n'
    text = path.read_text(encoding="utf-8") if path.is_file() else (
        f"# Mutants of {shown(exercise.solution_file)} that no test can tell from the reference, "
        f"and why.\n# `python3 judge/judge.py mutate {exercise.id}` leaves them out of its survivors "
        "(docs/authoring.md).\n")
    if _PROVEN_RE.search(text):
        text = _PROVEN_RE.sub(line, text, count=1)
    else:
        # Above the first table, where TOML keeps the file's own keys.
        at = text.find("[[")
        at = len(text) if at < 0 else at
        head = text[:at].rstrip("\n")
        text = (head + "\n" if head else "") + line + ("\n" + text[at:] if at < len(text) else "")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def record_problems(exercises) -> list[str]:
    """Each exercise whose reference is not the one its mutants were last proven against."""
    problems = []
    for ex in exercises:
        try:
            recorded = _record(ex).get("proven_against")
        except tomllib.TOMLDecodeError as err:
            problems.append(f"exercise {ex.name}: {shown(record_path(ex))} is not valid TOML: {err}")
            continue
        if recorded == reference_digest(ex):
            continue
        why = ("its mutants were never proven against a reference" if not recorded
               else "its reference changed since its mutants were last proven against it")
        problems.append(f"exercise {ex.name}: {why} ({shown(record_path(ex))}, proven_against): run "
                        f"`python3 judge/judge.py mutate {ex.id}`, kill or record every survivor, and commit "
                        "the digest it writes")
    return problems


def equivalents(exercise: Exercise) -> dict[tuple[str, str], str]:
    """The mutants recorded as equivalent, by (line, mutated line), with their reasons."""
    data = _record(exercise)
    return {(e["line"].strip(), mutant.strip()): e.get("reason", "")
            for e in data.get("equivalent", []) for mutant in e.get("mutants", [e.get("mutant", "")])}


def apply(source: str, mutant: Mutant) -> str:
    lines = source.split("\n")
    lines[mutant.line - 1] = mutant.mutated
    return "\n".join(lines)


def mutate_command(args, catalog: Catalog) -> bool:
    exercise = catalog.resolve(args.exercise)
    source = exercise.solution_file.read_text(encoding="utf-8")
    judged = reference_digest(exercise)  # what the mutants are made from, whatever changes meanwhile
    mutants = [m for m in generate(source) if not args.line or m.line in args.line]
    known = equivalents(exercise)
    if args.list:
        for m in mutants:
            print(f"line {m.line} ({m.kind}){'  [equivalent]' if m.key() in known else ''}\n{ui.indent(m.diff(), '    ')}")
        print(f"{len(mutants)} mutants")
        return True
    build.compilers_for("clang")
    print(f"Judging {len(mutants)} mutants of {exercise.solution_file.relative_to(ROOT)} "
          f"({len([m for m in mutants if m.key() in known])} recorded as equivalent)…", flush=True)
    slots = build.Slots("mutate", args.jobs)
    outcomes: dict[Mutant, str] = {}
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        futures = {pool.submit(_judge, catalog, exercise, source, m, slots): m for m in mutants}
        for done, future in enumerate(as_completed(futures), start=1):
            mutant = futures[future]
            outcomes[mutant] = future.result()
            print(ui.paint(f"  [{done}/{len(mutants)}] line {mutant.line} {mutant.kind}: {outcomes[mutant]}", "dim"),
                  flush=True)
    proven = _summary(mutants, outcomes, known, time.monotonic() - start)
    if proven and not args.line:
        record_proof(exercise, judged)
        print(f"Recorded the reference as proven: proven_against in {shown(record_path(exercise))}")
    elif proven:
        print("Only some lines were judged: the record of the proven reference stays as it was (run "
              f"`python3 judge/judge.py mutate {exercise.id}` without --line to renew it).")
    return proven


def _judge(catalog: Catalog, exercise: Exercise, source: str, mutant: Mutant, slots: build.Slots) -> str:
    """killed | survived | stillborn (does not compile, so it proves nothing)."""
    with slots.taken() as slot:
        # One file per slot: each build tree keeps its configuration and only recompiles.
        path = OUT / exercise.name / slot / exercise.solution_file.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(apply(source, mutant), encoding="utf-8")
        # One instrumentation at a time: most mutants die in the first, and need no second build.
        for sanitizer in exercise.sanitizers:
            request = judging.Request(exercise, build.Impl("source", path), ("clang",), slot=slot,
                                      sanitizers=(sanitizer,))
            verdict = judging.judge(request, catalog.limits)
            if not all(c.build.ok for c in verdict.configs):
                return "stillborn"
            if not verdict.passed:
                return "killed"
        return "survived"


def _summary(mutants: list[Mutant], outcomes: dict[Mutant, str], known: dict, seconds: float) -> bool:
    killed = [m for m in mutants if outcomes[m] == "killed"]
    stillborn = [m for m in mutants if outcomes[m] == "stillborn"]
    survivors = [m for m in mutants if outcomes[m] == "survived"]
    equivalent = [m for m in survivors if m.key() in known]
    new = [m for m in survivors if m.key() not in known]
    print()
    for m in new:
        print(f"{ui.mark(False)} survivor at line {m.line} ({m.kind}):\n{ui.indent(m.diff(), '    ')}")
    stale = [m for m in killed if m.key() in known]
    for m in stale:
        print(f"{ui.paint('!', 'yellow')} line {m.line} is recorded as equivalent but was killed: drop its record\n"
              f"{ui.indent(m.diff(), '    ')}")
    judged = len(killed) + len(new)
    score = 100.0 * len(killed) / judged if judged else 100.0
    print(f"\n{len(killed)} killed, {len(new)} survived, {len(equivalent)} equivalent, "
          f"{len(stillborn)} did not compile ({seconds:.0f} s)")
    print(f"Mutation score: {len(killed)}/{judged} = {score:.1f} %")
    return not new
