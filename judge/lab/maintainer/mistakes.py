"""Known mistakes: each is a small unified diff against the reference solution, so that it
shows exactly the one thing that is wrong, and a change to the reference that would make it
meaningless is noticed (the diff no longer applies) instead of drifting apart silently.

A mistake file `judge/mistakes/NN-S/<name>.diff` starts with two lines the judge reads,

    Mistake: aligns the offset from the buffer's start instead of the address.
    Caught by: ArenaAlignment.AlignsTheAddressNotTheOffset

then the output of `diff -u solutions/NN-S/<header> <wrong copy>`. The exercise's last stage
judges it against the model of the contract; a mistake that the model catches names that
stage's test among the others in `Caught by`, and one it cannot catch says why in a third line,

    Beyond the model: a data race, which only ThreadSanitizer sees.

and `check` proves every test named in `Caught by` fails on it. A mistake of the exercise whose
header the serving engine calls (07's KV cache manager) also says what `serve` makes of it,

    Serving: tokens differ

one of SERVING_OUTCOMES, or `passes: why` for one that changes nothing a request reads on the
default trace; `check` serves each and proves it. Every line the mistake adds
ends with a `// MISTAKE` comment (`// MISTAKE: why it looks right`), and a line it only deletes
is replaced by one: a hunk without such a line changes something besides the mistake, and the
diff is refused."""
from __future__ import annotations

from pathlib import Path

from ..model.catalog import ROOT, Exercise
from ..model.variants import (OUT, Mistake, PatchError, apply, materialize, mistakes,  # noqa: F401 (the maintainer's names)
                              unmarked_hunks)


# What `serve` can make of a wrong manager: every request's tokens compared with the plain engine's,
# the manager's audit once every request is done, the engine's check of each answer it gets (a
# slot or block outside the buffer, a prompt reported cached whole, a manager that throws, no
# progress), and the process itself.
# "below the reference": every request's tokens are right, and `serve --compare` fails it, for a
# figure the manager decides (the batch, KV utilization, preemptions, hits, prompt tokens computed)
# worse than the reference manager's on the same trace and budget.
SERVING_OUTCOMES = ("tokens differ", "a leak", "stopped", "crashes", "below the reference")
SERVING_PASSES = "passes: "


def serving_problems(found: list[Mistake]) -> list[str]:
    """Each known mistake of the served exercise says what `serve` makes of it, in words `check`
    can prove."""
    return [f"{m.path.name}: `Serving: {m.serving}` must be one of {', '.join(SERVING_OUTCOMES)} or "
            f"`{SERVING_PASSES}why`" if m.serving else f"{m.path.name}: no `Serving:` line (what `serve` makes of it)"
            for m in found if m.serving not in SERVING_OUTCOMES
            and not (m.serving.startswith(SERVING_PASSES) and len(m.serving) > len(SERVING_PASSES))]


SERVING_TABLE_START = "<!-- read off judge/mistakes/ by check's lint: serving_table() in judge/lab/maintainer/mistakes.py -->"
SERVING_TABLE_END = "<!-- end of what serve makes of the known mistakes -->"


def serving_table(found: list[Mistake]) -> str:
    """What `serve` makes of each known mistake of the served exercise, as docs/authoring.md shows
    it: read off the files' `Serving:` lines, which `check` proves."""
    rows = ["| known mistake | what `serve` makes of it |", "|---|---|"]
    rows += [f"| `{m.name}` | {m.serving} |" for m in found]
    return "\n".join(rows)


def _table_problems(page: Path, start_mark: str, end_mark: str, want: str, what: str) -> list[str]:
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    start, end = text.find(start_mark), text.find(end_mark)
    if start < 0 or end < start:
        return [f"{page.relative_to(ROOT)} has no table of {what} between {start_mark!r} and {end_mark!r}"]
    if text[start + len(start_mark):end].strip() != want:
        return [f"{page.relative_to(ROOT)}: the table of {what} is not the one the mistake files make; put this in "
                f"its place:\n{want}"]
    return []


def model_problems(model_suite: str, found: list[Mistake]) -> list[str]:
    """A known mistake may not both name a test of the model stage's suite among those that catch
    it and say why the model cannot catch it. One that does neither has not been judged against
    the model yet: the table of what the model stage catches counts it apart."""
    return [f"{m.path.name}: names {model_suite} in `Caught by` and says it is beyond the model"
            for m in found if m.beyond_the_model and any(t.split(".")[0] == model_suite for t in m.caught_by)]


MODEL_TABLE_START = "<!-- read off judge/mistakes/ by check's lint: model_table() in judge/lab/maintainer/mistakes.py -->"
MODEL_TABLE_END = "<!-- end of the model stage's catch -->"


def model_table(exercises: list[Exercise]) -> str:
    """What each exercise's model stage catches of the known mistakes, as docs/authoring.md shows
    it: read off the files' `Caught by` and `Beyond the model` lines, which `check` proves."""
    rows = ["| exercise | known mistakes | the model stage catches | it could, but does not yet | "
            "beyond the model, and why |", "|---|---:|---:|---:|---|"]
    for ex in exercises:
        found = mistakes(ex)
        suite = ex.stages[-1].suite if ex.stages else ""
        caught = sum(any(t.split(".")[0] == suite for t in m.caught_by) for m in found)
        beyond = "<br>".join(f"`{m.name}`: {m.beyond_the_model}" for m in found if m.beyond_the_model)
        unjudged = len(found) - caught - sum(bool(m.beyond_the_model) for m in found)
        rows.append(f"| {ex.name} | {len(found)} | {caught} | {unjudged} | {beyond or 'none'} |")
    return "\n".join(rows)


def model_table_problems(exercises: list[Exercise], page: Path) -> list[str]:
    """docs/authoring.md's table of what the model stage catches, unless it is the files' own."""
    return _table_problems(page, MODEL_TABLE_START, MODEL_TABLE_END, model_table(exercises),
                           "what the model stage catches")


def serving_table_problems(served: Exercise, page: Path) -> list[str]:
    """docs/authoring.md's table of what `serve` makes of the known mistakes, unless it is the files' own."""
    found = mistakes(served)
    return serving_problems(found) + _table_problems(page, SERVING_TABLE_START, SERVING_TABLE_END,
                                                     serving_table(found), "what serve makes of the known mistakes")
