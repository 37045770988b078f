"""A chapter's self-check: the questions of chapters/NN-S.quiz.toml."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass

from .catalog import CatalogError, Exercise


@dataclass(frozen=True)
class Question:
    ask: str
    choices: tuple[str, ...]   # empty: a number question
    answer: float              # the right number, or the 1-based right choice
    explain: str
    tolerance: float = 0.0


def load(exercise: Exercise) -> list[Question]:
    """The exercise's questions, in file order; CatalogError when the file cannot be read."""
    path = exercise.quiz_file
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return [Question(ask=q["ask"], choices=tuple(q.get("choices", ())), answer=float(q["answer"]),
                         explain=q.get("explain", ""), tolerance=float(q.get("tolerance", 0.0)))
                for q in data.get("question", [])]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as err:
        raise CatalogError(f"cannot read the quiz {path.name}: {err}") from None
