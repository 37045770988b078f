"""Each chapter's self-check: 4 to 6 questions in `chapters/NN-S.quiz.toml`, beside the chapter.
`judge.py quiz N` asks them in the terminal, one at a time, explains each answer at once, and
records the score in the progress file; `check` proves every question has one right answer and
an explanation.

A question has choices (the answer is the 1-based number of the right one), or none (the
learner types a number, right within `tolerance`)."""
from __future__ import annotations

import math
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..model.progress import Progress
from .. import ui
from ..model.catalog import Catalog, CatalogError, Exercise, shown, translated
from ..model.words import say, then

SIZE = (4, 6)   # fewest and most questions a chapter's quiz has
_KEYS = {"ask", "choices", "answer", "explain", "tolerance"}
_THOUSANDS_RE = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d*)?$")


@dataclass(frozen=True)
class Question:
    ask: str
    choices: tuple[str, ...]   # empty: a number question
    answer: float              # the right number, or the 1-based right choice
    explain: str
    tolerance: float = 0.0

    def is_right(self, given: float) -> bool:
        if self.choices:
            return given == self.answer
        return abs(given - self.answer) <= self.tolerance + 1e-9 * max(1.0, abs(self.answer))

    def right_answer(self) -> str:
        if self.choices:
            number = int(self.answer)
            text = self.choices[number - 1] if 1 <= number <= len(self.choices) else "?"
            return f"{number} ({text})"
        return _number(self.answer) + (f" (± {_number(self.tolerance)})" if self.tolerance else "")


def load(exercise: Exercise, path: Path | None = None) -> list[Question]:
    """The exercise's questions, from its quiz file (or `path`); raises CatalogError when the
    file cannot be read or is malformed."""
    path = path or exercise.quiz_file
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"{shown(path)} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise CatalogError(f"cannot read the quiz {shown(path)}: {err}") from None
    extra = sorted(set(data) - {"question"})
    raw = data.get("question", [])
    if extra or not isinstance(raw, list):
        raise CatalogError(f"the quiz {shown(path)} holds [[question]] tables only, not {extra or 'question'}")
    return [_question(q, number, path) for number, q in enumerate(raw, start=1)]


def _question(raw, number: int, path: Path) -> Question:
    def bad(why: str) -> CatalogError:
        return CatalogError(f"the quiz {shown(path)}, question {number}: {why}")

    if not isinstance(raw, dict):
        raise bad("is not a table")
    if set(raw) - _KEYS:
        raise bad(f"unknown key(s) {', '.join(sorted(set(raw) - _KEYS))}; the keys are {', '.join(sorted(_KEYS))}")
    for key in ("ask", "answer"):
        if key not in raw:
            raise bad(f"has no `{key}`")
    if not isinstance(raw["ask"], str) or not isinstance(raw.get("explain", ""), str):
        raise bad("`ask` and `explain` are strings")
    choices = raw.get("choices", [])
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise bad("`choices` is a list of strings")
    answer, tolerance = raw["answer"], raw.get("tolerance", 0)
    for key, value in (("answer", answer), ("tolerance", tolerance)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad(f"`{key}` is a number, not {value!r}")
    if choices and not isinstance(answer, int):
        raise bad("with `choices`, `answer` is the number (1, 2, ...) of the one right choice")
    if choices and "tolerance" in raw:
        raise bad("`tolerance` belongs to number questions, not to questions with `choices`")
    return Question(raw["ask"].strip(), tuple(c.strip() for c in choices), answer,
                    raw.get("explain", "").strip(), float(tolerance))


def problems(exercise: Exercise, path: Path | None = None) -> list[str]:
    """Every way the quiz falls short, one line each: 4 to 6 questions, each with a question,
    exactly one right answer and an explanation."""
    path = path or exercise.quiz_file
    if not path.is_file():
        return [f"no quiz: {shown(path)} is missing ({SIZE[0]} to {SIZE[1]} questions; docs/authoring.md "
                "describes the format)"]
    try:
        questions = load(exercise, path)
    except CatalogError as err:
        return [str(err)]
    found = []
    if not SIZE[0] <= len(questions) <= SIZE[1]:
        found.append(f"the quiz {shown(path)} has {len(questions)} questions; a chapter has {SIZE[0]} to {SIZE[1]}")
    asked = set()
    for number, q in enumerate(questions, start=1):
        where = f"the quiz {shown(path)}, question {number}"
        if not q.ask:
            found.append(f"{where}: `ask` is empty")
        elif q.ask in asked:
            found.append(f"{where}: asks the same as an earlier question")
        asked.add(q.ask)
        if not q.explain:
            found.append(f"{where}: no explanation (`explain`): the learner learns most from why")
        if q.choices:
            if len(q.choices) < 2:
                found.append(f"{where}: a question with choices needs at least two")
            if any(not c for c in q.choices):
                found.append(f"{where}: a choice is empty")
            if len(set(q.choices)) != len(q.choices):
                found.append(f"{where}: two choices read the same, so it has more than one right answer")
            if not 1 <= q.answer <= len(q.choices):
                found.append(f"{where}: `answer` is choice {int(q.answer)}, but there are {len(q.choices)} "
                             "choices, so none is right")
        elif q.tolerance < 0:
            found.append(f"{where}: `tolerance` is negative")
    return found


# -- asking --------------------------------------------------------------------------------

def quiz_command(args, catalog: Catalog) -> bool:
    exercise = translated(catalog.resolve(args.exercise))
    path = exercise.reader_quiz
    if not path.is_file():
        raise CatalogError(say("no_quiz", id=exercise.id, quiz=shown(path), chapter=shown(exercise.reader_chapter)))
    questions = load(exercise, path)
    if path != exercise.quiz_file:   # the score counts the same whatever the language: the answers must match
        questions = _with_english_answers(exercise, questions)
    if not questions:
        raise CatalogError(say("quiz_empty", quiz=shown(path)))
    asker = Asker(sys.stdin, sys.stdout)
    right = asker.ask_all(exercise, questions)
    if right is None:
        if asker.interrupted:
            raise KeyboardInterrupt
        return False
    progress = Progress()
    progress.record_quiz(exercise, right, len(questions))
    progress.save()
    print(say("recorded", file=shown(progress.path)))
    return True


class Asker:
    """Asks questions on a pair of streams. Without a terminal (a pipe, a file) each answer is
    read a line at a time and echoed, so that the transcript reads as a dialogue."""

    def __init__(self, stdin, stdout):
        self.stdin, self.stdout = stdin, stdout
        self.interrupted = False  # stopped by Ctrl-C rather than by the end of the input
        try:
            self.echo = not stdin.isatty()
        except (AttributeError, ValueError):
            self.echo = True
        self.width = min(shutil.get_terminal_size((88, 24)).columns, 100) - 2

    def say(self, text: str = "", colour: str | None = None, lead: str = "", lead_colour: str = "",
            indent: tuple[str, str] = ("", "")) -> None:
        """Prints `text` wrapped to the terminal, painted after the wrapping (colour codes have no
        width); `lead` starts the first line in a colour of its own."""
        wrapped = ui.wrap(then(lead, text) if lead else text, self.width, initial_indent=indent[0],
                          subsequent_indent=indent[1]) if text or lead else ""
        if lead and wrapped.startswith(lead):
            wrapped = ui.paint(lead, lead_colour) + wrapped[len(lead):]
        print(ui.paint(wrapped, colour) if colour else wrapped, file=self.stdout, flush=True)

    def ask_all(self, exercise: Exercise, questions: list[Question]) -> int | None:
        """The number of right answers, or None when the learner stopped before the end."""
        self.say(say("quiz_heading", id=exercise.id, title=exercise.title, count=len(questions)), "bold")
        self.say(say("quiz_how"), "dim")
        right = 0
        for number, question in enumerate(questions, start=1):
            self.say()
            self.say(say("question", number=number, count=len(questions)), "cyan")
            self.say(question.ask)
            for i, choice in enumerate(question.choices, start=1):
                self.say(choice, indent=(f"  {i}. ", "     "))
            try:
                given = self._answer(question)
            except KeyboardInterrupt:
                self.interrupted = True
                given = None
            if given is None:
                self.say()
                self.say(say("quiz_stopped", number=number, count=len(questions), id=exercise.id))
                return None
            if question.is_right(given):
                right += 1
                self.say(question.explain, lead=say("right", mark=ui.OK), lead_colour="green")
            else:
                self.say(question.explain, lead=say("not_quite", mark=ui.FAIL, answer=question.right_answer()),
                         lead_colour="red")
        self.say()
        self.say(say("score", right=right, count=len(questions)), "bold")
        return right

    def _answer(self, question: Question) -> float | None:
        """The learner's answer, asked again until it is one; None at the end of the input."""
        if question.choices:
            prompt = say("answer_choice", count=len(question.choices))
            again = say("again_choice", count=len(question.choices))
        else:
            prompt, again = say("answer_number"), say("again_number")
        while True:
            self.stdout.write(prompt)
            self.stdout.flush()
            line = self.stdin.readline()
            if not line:
                return None
            if self.echo:
                self.stdout.write(line if line.endswith("\n") else line + "\n")
            given = _parse(line)
            if given is not None and (not question.choices or (given.is_integer() and
                                                                 1 <= given <= len(question.choices))):
                return given
            self.say(again)


def _with_english_answers(exercise: Exercise, questions: list[Question]) -> list[Question]:
    """The translated questions, or the English ones when the translation's answers differ
    from them (`check` names such a quiz): a score is a score in either language."""
    try:
        english = load(exercise)
    except CatalogError:
        return questions
    same = len(english) == len(questions) and all(
        (e.answer, len(e.choices), e.tolerance) == (z.answer, len(z.choices), z.tolerance)
        for e, z in zip(english, questions))
    return questions if same else english


def _parse(text: str) -> float | None:
    text = text.strip().replace("_", "")
    if _THOUSANDS_RE.match(text):
        text = text.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
