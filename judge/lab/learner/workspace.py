"""The learner's own file: judged and recorded (`test`, `watch`, `hint`), started over
(`reset`), and the reference read once it is earned (`solution`).

The untouched skeleton comes from git, the one record of it that the learner's edits cannot
reach: the version at the last commit the learner's branch shares with its upstream (what the
course published, without the learner's own commits), or HEAD when the branch has no upstream.
The command says which."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ..core import build, judging
from ..model.errors import UsageError
from ..model.progress import Progress, digest
from ..model.results import Verdict
from ..model.words import say
from .. import ui
from ..model.catalog import ROOT, Catalog, Exercise, shown, translated
from ..model.files import write_atomically

BACKUPS = ROOT / ".alloclab" / "backups"


class ResetError(UsageError):
    """The skeleton cannot be found; nothing was changed."""


def judge(catalog: Catalog, exercise: Exercise, compilers: tuple[str, ...], progress: Progress,
          stages: tuple[int, ...] = (), seed: int | None = None) -> Verdict:
    """Judges the learner's file and records the verdict in `progress` with the hash of the file
    as it was when the judging began: a save during the build makes the verdict stale, never
    wrong."""
    file_hash = digest(exercise.exercise_file)
    # ALLOCLAB_SLOT gives a run build trees of its own (the judge's self-tests use it), so that
    # it never reconfigures the trees the learner's edit loop keeps warm.
    slot = os.environ.get("ALLOCLAB_SLOT", "")
    verdict = judging.judge(judging.Request(exercise, build.Impl("exercises"), compilers, stages, slot=slot,
                                            seed=seed, compile_only_judged=bool(stages)),
                            catalog.limits)
    progress.record_verdict(exercise, verdict, file_hash)
    if not slot and verdict.configs:
        first = verdict.configs[0]
        _link_compile_commands(build.tree_dir(first.compiler, first.sanitizer, build.Impl("exercises")))
    return verdict


def _link_compile_commands(tree: Path) -> None:
    """Points clangd and VS Code at the learner's build, unless something is there already."""
    link = ROOT / "compile_commands.json"
    if not link.exists() and not link.is_symlink() and (tree / "compile_commands.json").is_file():
        try:
            link.symlink_to(tree.relative_to(ROOT) / "compile_commands.json")
        except OSError:
            pass


def _git(*argv: str) -> str | None:
    try:
        proc = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def skeleton_source(exercise: Exercise) -> tuple[bytes, str]:
    """The skeleton's committed content, and a sentence saying where it came from."""
    rel = exercise.exercise_file.relative_to(ROOT).as_posix()
    if _git("rev-parse", "--is-inside-work-tree") != "true":
        raise ResetError(say("not_a_checkout", file=rel))
    candidates = []
    upstream = _git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
    if upstream:
        base = _git("merge-base", "HEAD", upstream)
        if base:
            candidates.append((base, say("from_upstream", upstream=upstream)))
    head = _git("rev-parse", "HEAD")
    if head:
        candidates.append((head, say("from_head") + ("" if upstream else say("no_upstream"))))
    for commit, where in candidates:
        try:
            proc = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=ROOT, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            return proc.stdout, say("commit_of", where=where, commit=commit[:12])
    raise ResetError(say("no_skeleton", file=rel))


def backup_path(exercise: Exercise, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    stem, suffix = exercise.exercise_file.stem, exercise.exercise_file.suffix
    folder = BACKUPS / exercise.name
    path = folder / f"{stem}-{stamp}{suffix}"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{stamp}-{n}{suffix}"
    return path


def reset(exercise: Exercise) -> tuple[bool, Path | None, str]:
    """Restores the skeleton. Returns whether the file changed, the backup of the learner's
    file (None when there was nothing to keep) and where the skeleton came from. Changes
    nothing when it raises."""
    skeleton, where = skeleton_source(exercise)
    target = exercise.exercise_file
    backup = None
    mode = None
    if target.exists():
        current = target.read_bytes()
        mode = target.stat().st_mode & 0o7777
        if current == skeleton:
            return False, None, where
        backup = backup_path(exercise)
        write_atomically(backup, current, mode)  # the learner's work is safe before anything is replaced
    write_atomically(target, skeleton, mode)
    return True, backup, where


def reset_command(args, catalog: Catalog) -> bool:
    exercise = catalog.resolve(args.exercise)
    rel = exercise.exercise_file.relative_to(ROOT)
    changed, backup, where = reset(exercise)
    if not changed:
        print(say("already_skeleton", file=rel, where=where))
        return True
    progress = Progress()
    progress.restart(exercise)
    progress.save()
    print(ui.paint(say("reset_done", mark=ui.OK, file=rel), "green") + say("reset_from", where=where))
    if backup is not None:
        print(say("backup_kept", file=backup.relative_to(ROOT)))
    print(say("start_again", id=exercise.id))
    return True


def solution_command(args, catalog: Catalog) -> bool:
    exercise = translated(catalog.resolve(args.exercise))
    rel = exercise.solution_file.relative_to(ROOT)
    progress = Progress()
    earned = progress.has_passed(exercise)
    if not earned and not args.force:
        print(say("solution_locked", id=exercise.id, header=exercise.header, chapter=shown(exercise.reader_chapter)))
        return False
    try:
        text = exercise.solution_file.read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(say("unreadable", file=rel, why=err.strerror or err)) from None
    if not earned:
        progress.note(exercise, "solution_forced", time.strftime("%Y-%m-%dT%H:%M:%S"))
        progress.save()
        print(ui.paint(say("solution_forced", file=progress.path.relative_to(ROOT)), "yellow"))
    print(ui.paint(say("solution_heading", id=exercise.id, title=exercise.title, file=rel), "bold"))
    print(text, end="" if text.endswith("\n") else "\n")
    return True
