"""The result model of a judgement: a verdict holds one result per configuration (compiler and
instrumentation), each holds its build and its stages, each stage its tests. Statuses are string
enums, so they compare equal to their words ("passed") and are written as them in JSON. Compiler
diagnostics and sanitizer findings stay objects (Diagnostic, Finding) until a
writer turns the verdict into JSON or JUnit."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

from .catalog import program, shown


@dataclass
class Diagnostic:
    file: str
    line: int
    column: int
    severity: str  # "error" | "warning"
    message: str
    context: list[str] = field(default_factory=list)  # the compiler's quoted source line and caret

    def where(self) -> str:
        return where(self.file, self.line, self.column)


def where(file: str, line: int | str, column: int | str = 0) -> str:
    """A place in a source file as the learner reads it, `path:line[:column]`, the path relative
    to the kit when inside it: compiler diagnostics, sanitizer reports and JUnit all use it."""
    return f"{shown(file)}:{line}" + (f":{column}" if column else "")


@dataclass
class Finding:
    """One sanitizer report, summarised."""
    tool: str        # AddressSanitizer, UndefinedBehaviorSanitizer, LeakSanitizer, ThreadSanitizer
    kind: str        # heap-buffer-overflow, data race, misaligned address, ...
    access: str      # "READ of size 8", "" when the report has none
    location: str    # file:line of the bad access's first frame in the learner's code, or of its first
    function: str    # frame outside the runtimes (never a frame of another stack of the report)
    raw: str
    limit: str = ""  # the judge's limit this report is about, such as "limit: memory_mb = 4096"
    other: str = ""  # a data race's other side: "read at file:line in function"
    advice: str = ""  # what the report means for the learner, when its lines alone do not say
    # Where the memory was freed or allocated, when that is in the learner's file and the bad
    # access is not: "the memory was allocated at file:line in function".
    memory: str = ""

    def line(self) -> str:
        parts = [f"{self.tool}: {self.kind}" + (f" ({self.limit})" if self.limit else "")]
        if self.access:
            parts.append(self.access)
        if self.location:
            parts.append(f"at {self.location}")
        if self.function:
            parts.append(f"in {self.function}")
        if self.other:
            parts.append(f"racing with a {self.other}")
        if self.memory:
            parts.append(self.memory)
        if self.advice:
            parts.append(self.advice)
        return " · ".join(parts)


class TestStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    NOT_RUN = "not run"


class StageStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_BUILT = "not built"
    TAMPERED = "tampered"   # its tests ran with the header's changes to the framework's macros: they prove nothing


@dataclass
class TestOutcome:
    name: str                 # Suite.Test
    status: TestStatus
    messages: list[str] = field(default_factory=list)
    finding: Finding | None = None   # the sanitizer report that ended it
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == TestStatus.PASSED


@dataclass
class StageResult:
    number: int
    suite: str
    title: str
    goal: str
    status: StageStatus = StageStatus.FAILED
    tests: list[TestOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # what went wrong beyond single tests
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)      # worth knowing, but no failure (output capped)

    @property
    def passed_count(self) -> int:
        """The tests that count as passed: none in a tampered stage, whatever its tests reported."""
        return 0 if self.status == StageStatus.TAMPERED else sum(t.ok for t in self.tests)


@dataclass
class BuildSummary:
    ok: bool
    seconds: float
    error: Diagnostic | None = None        # the first compiler error in the learner's file
    warnings: list[Diagnostic] = field(default_factory=list)
    problem: str = ""


@dataclass
class ConfigResult:
    compiler: str
    sanitizer: str
    build: BuildSummary
    stages: list[StageResult] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{program(self.compiler)} · {self.sanitizer}"


@dataclass
class Verdict:
    exercise: str
    title: str
    implementation: str
    file: str
    passed: bool
    configs: list[ConfigResult]
    tampering: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stages_not_judged: list[int] = field(default_factory=list)   # left out with --stage

    @property
    def complete(self) -> bool:
        """Every stage of the exercise was judged: only then can the exercise pass."""
        return not self.stages_not_judged

    def first_failing_stage(self) -> int | None:
        failing = [s.number for c in self.configs for s in c.stages if s.status != StageStatus.PASSED]
        return min(failing) if failing else None

    def first_failing_test(self) -> str | None:
        """The first test that did not pass in the first stage that fails (`Suite.Test`), as the
        report lists it: the first ✗ the learner is told to fix. None when no test failed."""
        number = self.first_failing_stage()
        for config in self.configs:
            for stage in config.stages:
                if stage.number == number and stage.status != StageStatus.PASSED:
                    for test in stage.tests:
                        if not test.ok:
                            return test.name
        return None

    def to_json(self) -> dict:
        """One object: the verdict, a summary per stage over every configuration, and the
        detail per configuration (build, stages, tests with their messages and timings).
        judge/schemas/verdict.schema.json describes it."""
        data = asdict(self)
        data["first_failing_stage"] = self.first_failing_stage()
        # `passed` is what the exit status says: the stages judged passed. `verdict` says it of
        # the exercise, which passes only when every stage was judged.
        data["verdict"] = "failed" if not self.passed else "passed" if self.complete else "stages passed"
        data["configurations"] = [f"{c.compiler}-{c.sanitizer}" for c in self.configs]
        stages: dict[int, dict] = {}
        for config in self.configs:
            for stage in config.stages:
                entry = stages.setdefault(stage.number, {"number": stage.number, "suite": stage.suite,
                                                         "title": stage.title, "status": "passed",
                                                         "passed": 0, "tests": 0})
                entry["passed"] += stage.passed_count
                entry["tests"] += len(stage.tests)
                if stage.status != StageStatus.PASSED and entry["status"] == StageStatus.PASSED:
                    entry["status"] = stage.status
        data["stages"] = [stages[n] for n in sorted(stages)]
        return data
