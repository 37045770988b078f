"""Turns a sanitizer's report into one line a learner can act on: what went wrong, and where
in their own code."""
from __future__ import annotations

import re

from ..model.results import Finding, where
from ..model.catalog import ROOT

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

# The tests' replaced operator new and delete (judge/tests/support/failing_new.cpp) stand where
# the runtime's would: a report's place is the code that called them.
_RUNTIME_FRAMES = ("/compiler-rt/", "libsanitizer", "/usr/include/", "/gtest/", "googletest",
                   "/tests/support/failing_new.cpp")


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
        if tool == "LeakSanitizer":
            # Every stack of a leak report is the allocation of a leaked block: any of them will do.
            return Finding(tool, kind.strip(), access.group(1) if access else "", *_place(_frame(rest, focus)),
                           _report(stderr, m.start()))
        # The first stack is the bad access (or free); the later ones say where the memory was
        # freed and allocated, and where a thread was created: never the place of the access.
        stacks = _stacks(rest)
        frame = _frame(stacks[0][1] if stacks else rest, focus)
        if kind.strip() in _MISMATCHES:
            return Finding(tool, kind.strip(), "", *_place(frame), _report(stderr, m.start()),
                           advice=_mismatch(rest, stacks[1:], focus))
        return Finding(tool, kind.strip(), access.group(1) if access else "", *_place(frame),
                       _report(stderr, m.start()), memory=_memory(stacks[1:], focus, frame))
    if m := _CHECK_RE.search(stderr):
        frame = _frame(stderr[m.start():], focus)
        return Finding(m.group(1), CHECK_FAILED, "", *_place(frame), _report(stderr, m.start()))
    if m := _TSAN_RE.search(stderr):
        rest = stderr[m.start():]
        stacks = _stacks(rest)
        # A race's accesses are the stacks headed "Write of size 8 at ... by thread T2:" and
        # "Previous read of size 8 ...": the heap block's allocation and the threads' creation
        # that follow them are not where the memory was raced on.
        accesses = [stack for stack in stacks if _TSAN_ACCESS_RE.match(stack[0])]
        first = accesses[0][1] if accesses else stacks[0][1] if stacks else rest
        frame = _frame(first, focus)
        previous = next((stack for stack in accesses[1:] if _PREVIOUS_RE.match(stack[0])), None)
        finding = Finding("ThreadSanitizer", m.group(1).strip(), "", *_place(frame), _report(stderr, m.start()),
                          other=_other_side(previous, focus, frame))
        if focus and focus not in finding.location and focus not in finding.other:
            finding.memory = _memory([s for s in stacks if s not in accesses], focus, frame)
            if finding.kind == "data race":
                finding.advice = UNORDERED_RACE
        return finding
    return None


# The header of an access's stack in a ThreadSanitizer report: `Write of size 8 at 0x7b04 by
# thread T2:`, `Atomic read of size 4 ...`, `Previous write of size 8 at 0x7b04 by main thread:`.
_TSAN_ACCESS_RE = re.compile(r"(?:Previous )?(?:atomic )?(?:read|write) of size \d+ at ", re.I)
# The second access of a data race: `  Previous read of size 8 at 0x7b04 by thread T3:`.
_PREVIOUS_RE = re.compile(r"Previous (?:atomic )?(read|write) of size \d+ at \S+ by ", re.I)
# The stacks that say where a block came from: ASan's `freed by thread T0 here:` and
# `previously allocated by thread T0 here:`, TSan's `Location is heap block of size 32 at 0x7208
# allocated by main thread:`.
_MEMORY_RE = re.compile(r"(freed|allocated) by (?:thread T\d+|main thread)")
_FRAME_LINE_RE = re.compile(r"^\s*#\d+ ")


def _stacks(report: str) -> list[tuple[str, str]]:
    """The report's stacks in order, each as (the line above it, its frame lines), up to SUMMARY."""
    stacks: list[tuple[str, str]] = []
    header, frames = "", []
    for line in report.splitlines():
        if line.startswith("SUMMARY:"):
            break
        if _FRAME_LINE_RE.match(line):
            frames.append(line)
        elif line.strip():
            if frames:
                stacks.append((header, "\n".join(frames)))
                frames = []
            header = line.strip()
    if frames:
        stacks.append((header, "\n".join(frames)))
    return stacks


def _memory(stacks: list[tuple[str, str]], focus: str | None, access: tuple[str, str, str] | None) -> str:
    """Where the learner's code freed or allocated the memory, when the access itself is elsewhere."""
    if not focus or (access and focus in access[1]):
        return ""
    for header, frames in stacks:
        if (m := _MEMORY_RE.search(header)) and (frame := _frame(frames, focus)) and focus in frame[1]:
            location, function = _place(frame)
            return f"the memory was {m.group(1)} at {location} in {function}"
    return ""


def _other_side(previous: tuple[str, str] | None, focus: str | None, first: tuple[str, str, str] | None) -> str:
    """Where the other thread touched the memory, when that is another place: a race is often
    written on one side (an unlocked read) and reported on the other (the locked write)."""
    m = previous and _PREVIOUS_RE.match(previous[0])
    if not m:
        return ""
    frame = _frame(previous[1], focus)
    if not frame or (first and frame[1:] == first[1:]):
        return ""
    location, function = _place(frame)
    return f"{m.group(1).lower()} at {location} in {function}"


# A block released through a delete that is not its allocation's: ASan's `alloc-dealloc-mismatch
# (operator new vs operator delete [])`, and `new-delete-type-mismatch` followed by the sizes and
# alignments that differ. The tests' replaced operator new reports both in the same words.
_MISMATCHES = ("alloc-dealloc-mismatch", "new-delete-type-mismatch")
_FORMS_RE = re.compile(r"alloc-dealloc-mismatch \((malloc|operator new(?: \[\])?) vs (free|operator delete(?: \[\])?)\)")
_TYPE_RE = re.compile(r"^\s*(size|alignment) of the allocated type:\s+([^;\n]+);\s*\n"
                      r"\s*\1 of the deallocated type:\s+([^.\n]+)\.", re.M)
_PAIRS = "operator new with operator delete, operator new [] with operator delete [], malloc with free"


def _mismatch(report: str, stacks: list[tuple[str, str]], focus: str | None) -> str:
    """What the block was allocated with, what released it, and why that matters."""
    allocated = ""
    for header, frames in stacks:
        if _MEMORY_RE.search(header) and focus and (frame := _frame(frames, focus)) and focus in frame[1]:
            location, function = _place(frame)
            allocated = f" at {location} in {function}"
            break
    if m := _FORMS_RE.search(report):
        new, delete = m.groups()
        return (f"the block was allocated with {new}{allocated} and released with {delete}: each block goes back "
                f"through the release that matches its allocation ({_PAIRS}), because each form may keep its "
                "own books (a new [] of objects with destructors stores their count in front of them, and a heap "
                "may serve each form from its own pool), so the wrong one frees the wrong address or amount")
    differ = {what: (was, told) for what, was, told in _TYPE_RE.findall(report) if was.strip() != told.strip()}
    if "alignment" in differ:
        was, told = (_alignment(words) for words in differ["alignment"])
        return (f"the block was allocated with {was}{allocated} and released by an operator delete given "
                f"{told}: pass operator delete the same std::align_val_t as operator new, because an "
                "over-aligned block may come from elsewhere (a larger block whose true start only the aligned "
                "delete knows), which the other delete cannot give back")
    if "size" in differ:
        was, told = differ["size"]
        return (f"the block was allocated as {was}{allocated} and released by a sized operator delete told {told}: "
                "pass a sized delete the size that was asked of operator new, because a heap may trust it to find "
                "the block's size class instead of looking the block up, and put it on the wrong list")
    return f"the block{allocated} was released through a delete that does not match its allocation"


def _alignment(words: str) -> str:
    return "no alignment" if words.strip() == "default-aligned" else f"alignment {words.strip()}"


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
    """`alloclab::Arena::allocate(unsigned long, unsigned long)` -> `alloclab::Arena::allocate`,
    `T_Test::TestBody()::$_1::operator()() const` -> `T_Test::TestBody()::$_1::operator()`: the
    parameters are cut, but not those of the function a lambda is in, nor a lambda's operator()."""
    depth, out, i = 0, [], 0
    while i < len(signature):
        ch = signature[i]
        if ch == "(" and depth == 0 and out and not signature[:i].endswith("operator"):
            close, level = i, 0
            for close in range(i, len(signature)):
                level += {"(": 1, ")": -1}.get(signature[close], 0)
                if level == 0:
                    break
            if not signature.startswith("::", close + 1):
                break
            out.append(signature[i:close + 1])
            i = close + 1
            continue
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
        i += 1
    return "".join(out).strip()


def _report(stderr: str, start: int) -> str:
    lines = stderr[start:].splitlines()
    return "\n".join(lines[:80])
