"""Turns a sanitizer's report into one line a learner can act on: what went wrong, and where
in their own code."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .build import where
from .catalog import ROOT

# The environment of every instrumented test run. The options live in judge/sanitizer_options.env,
# which ctest reads too (judge/sanitizer_options.cmake), so that both run a test alike.
OPTIONS_FILE = ROOT / "judge" / "sanitizer_options.env"


def environment(memory_mb: int) -> dict[str, str]:
    env = {}
    for line in OPTIONS_FILE.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            env[name.strip()] = value.strip().replace("@memory_mb@", str(memory_mb))
    return env


@dataclass
class Finding:
    """One sanitizer report, summarised."""
    tool: str        # AddressSanitizer, UndefinedBehaviorSanitizer, LeakSanitizer, ThreadSanitizer
    kind: str        # heap-buffer-overflow, data race, misaligned address, ...
    access: str      # "READ of size 8", "" when the report has none
    location: str    # file:line of the first frame in the learner's code, or of the first frame
    function: str
    raw: str
    limit: str = ""  # the judge's limit this report is about, such as "limit: memory_mb = 4096"
    other: str = ""  # a data race's other side: "read at file:line in function"
    advice: str = ""  # what the report means for the learner, when its lines alone do not say

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
        if self.advice:
            parts.append(self.advice)
        return " · ".join(parts)


# What the runtimes print when max_allocation_size_mb or hard_rss_limit_mb (both set from the
# catalog's memory_mb) stops a program.
_MEMORY_LIMIT_RE = re.compile(r"out[- ]of[- ]memory|allocation-size-too-big|exceeds maximum supported size|"
                              r"rss limit exhausted|allocator is trying to allocate", re.I)


def hit_memory_limit(finding: Finding) -> bool:
    return bool(_MEMORY_LIMIT_RE.search(finding.kind) or _MEMORY_LIMIT_RE.search(finding.raw[:2000]))


_ERROR_RE = re.compile(r"^(?:==\d+==)?ERROR: (AddressSanitizer|LeakSanitizer): (.+)$", re.M)
_SUMMARY_RE = re.compile(r"^SUMMARY: \w+Sanitizer: ([\w-]+)", re.M)
_TSAN_RE = re.compile(r"^WARNING: ThreadSanitizer: ([^(\n]+?)\s*(?:\(|$)", re.M)
_UBSAN_RE = re.compile(r"^(\S+?):(\d+):(\d+): runtime error: (.+)$", re.M)
_ACCESS_RE = re.compile(r"^((?:READ|WRITE) of size \d+)", re.M)
_LEAK_RE = re.compile(r"^((?:Direct|Indirect) leak of \d+ byte\(s\) in \d+ object\(s\))", re.M)
# A stack frame: `#0 0x55d1 in f(int) /path/file.hpp:3:10` (AddressSanitizer, UBSan), or
# `#0 f(int) /path/file.hpp:5 (program+0x13db) (BuildId: 52d2)` (ThreadSanitizer).
_FRAME_RE = re.compile(r"^\s*#\d+ (?:0x[0-9a-f]+ in )?(.+?) (/\S+?):(\d+)(?::\d+)?(?: \([^)]*\))*$", re.M)

# Printed by a runtime's background thread when the program's resident size passes
# hard_rss_limit_mb: no "ERROR:" and no stack, since no single access is to blame.
_RSS_RE = re.compile(r"^(?:==\d+==)?(AddressSanitizer|ThreadSanitizer|LeakSanitizer): hard rss limit exhausted"
                     r"(?: \((\d+)Mb vs (\d+)Mb\))?", re.M)

# A runtime's own consistency check, failed because the program handed it something impossible,
# such as a region to poison whose size wrapped around: no "ERROR:" line, one stack.
_CHECK_RE = re.compile(r"^(?:==\d+==)?(AddressSanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer): "
                       r"CHECK failed: \S+ \"(.*?)\"", re.M)
CHECK_FAILED = ("its own check failed: the code under test passed it an impossible region or size "
                "(such as a length that wrapped around below zero)")

# A race between two accesses of the tests' own code: what should have ordered them is the
# code under test (a release store its acquire load never saw).
UNORDERED_RACE = ("neither access is in your file: they are the test's own use of memory your code hands from "
                  "one thread to the other, and what orders them is your atomics (a release store that the "
                  "other thread's acquire load reads)")

_RUNTIME_FRAMES = ("/compiler-rt/", "libsanitizer", "/usr/include/", "/gtest/", "googletest")


def summarize(stderr: str, focus: str | None = None) -> Finding | None:
    """The first sanitizer report in stderr, or None. `focus` is the path of the learner's
    file: the frame reported is the first one in it, or else the first outside the runtimes."""
    if m := _RSS_RE.search(stderr):
        reached = f"{m.group(3)} MB resident" if m.group(3) else ""
        return Finding(m.group(1), "hard rss limit exhausted", reached, "", "", _report(stderr, m.start()))
    if m := _UBSAN_RE.search(stderr):
        frame = _frame(stderr[m.start():], focus)
        location = where(*frame[1:]) if frame and focus and focus in frame[1] else where(m.group(1), m.group(2))
        return Finding("UndefinedBehaviorSanitizer", m.group(4).strip(), "", location,
                       frame[0] if frame else "", _report(stderr, m.start()))
    if m := _ERROR_RE.search(stderr):
        tool, kind = m.group(1), m.group(2)
        if kind.startswith("detected memory leaks"):
            tool, kind = "LeakSanitizer", "memory leak"
        rest = stderr[m.start():]
        if tool == "AddressSanitizer" and (summary := _SUMMARY_RE.search(rest)):
            kind = summary.group(1)   # the bug's short name, such as allocation-size-too-big
        else:
            kind = re.split(r" on (?:unknown )?address| \(|:", kind)[0]
        access = _ACCESS_RE.search(rest) or _LEAK_RE.search(rest)
        frame = _frame(rest, focus)
        return Finding(tool, kind.strip(), access.group(1) if access else "", *_place(frame),
                       _report(stderr, m.start()))
    if m := _CHECK_RE.search(stderr):
        frame = _frame(stderr[m.start():], focus)
        return Finding(m.group(1), CHECK_FAILED, "", *_place(frame), _report(stderr, m.start()))
    if m := _TSAN_RE.search(stderr):
        rest = stderr[m.start():]
        frame = _frame(rest, focus)
        finding = Finding("ThreadSanitizer", m.group(1).strip(), "", *_place(frame), _report(stderr, m.start()),
                          other=_other_side(rest, focus, frame))
        if focus and finding.kind == "data race" and focus not in finding.location and focus not in finding.other:
            finding.advice = UNORDERED_RACE
        return finding
    return None


# The second access of a data race: `  Previous read of size 8 at 0x7b04 by thread T3:`.
_PREVIOUS_RE = re.compile(r"^\s+Previous (?:atomic )?(read|write) of size \d+ at \S+ by (?:thread T\d+|main thread)", re.M)


def _other_side(report: str, focus: str | None, first: tuple[str, str, str] | None) -> str:
    """Where the other thread touched the memory, when that is another place: a race is often
    written on one side (an unlocked read) and reported on the other (the locked write)."""
    m = _PREVIOUS_RE.search(report)
    if not m:
        return ""
    block = report[m.end():].split("\n\n", 1)[0]
    frame = _frame(block, focus)
    if not frame or (first and frame[1:] == first[1:]):
        return ""
    location, function = _place(frame)
    return f"{m.group(1)} at {location} in {function}"


def _place(frame: tuple[str, str, str] | None) -> tuple[str, str]:
    """(location, function) of a frame as a finding names them; empty when there is none."""
    return (where(*frame[1:]), frame[0]) if frame else ("", "")


def _frame(report: str, focus: str | None) -> tuple[str, str, str] | None:
    """(function, path, line) of the first frame in `focus`, else of the first outside the runtimes."""
    frames = _FRAME_RE.findall(report)
    if focus:
        for fn, path, line in frames:
            if focus in path:
                return _function(fn), path, line
    for fn, path, line in frames:
        if not any(r in path for r in _RUNTIME_FRAMES):
            return _function(fn), path, line
    return None


def _function(signature: str) -> str:
    """`alloclab::Arena::allocate(unsigned long, unsigned long)` -> `alloclab::Arena::allocate`."""
    depth, out = 0, []
    for ch in signature:
        if ch == "(" and depth == 0 and out:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    return "".join(out).strip()


def _report(stderr: str, start: int) -> str:
    lines = stderr[start:].splitlines()
    return "\n".join(lines[:80])
