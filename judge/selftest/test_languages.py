"""The judge in two languages: `--lang` or the locale chooses, the message table has every message
in both with the same fields, and `hint`, `quiz` and `list` speak Chinese from the Chinese
catalog and quiz (the fixtures mini.catalog.zh.toml and sample.zh.quiz.toml, in a clone), while
their English stays what it was."""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

from lab import cli, ui
from lab.learner import quiz
from lab.model import catalog as cat, words
from lab.model.progress import Progress

from .test_learner_loop import FakeKit, clone_kit, judge_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ANSWERS = "2\nb\n2\n3000\n500\n"   # the sample quiz: three right of four, after one answer that is no number


class Choosing(unittest.TestCase):
    def tearDown(self):
        words.choose(None)

    def language_with(self, **env) -> str:
        base = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
        with mock.patch.dict(os.environ, dict(base, **env), clear=True):
            return words.language()

    def test_the_locale_decides_in_its_order(self):
        self.assertEqual(self.language_with(), "en", "no locale at all is English")
        self.assertEqual(self.language_with(LANG="zh_CN.UTF-8"), "zh")
        self.assertEqual(self.language_with(LANG="zh_TW"), "zh", "any zh... is Chinese")
        self.assertEqual(self.language_with(LANG="de_DE.UTF-8"), "en", "a language the judge lacks is English")
        self.assertEqual(self.language_with(LC_ALL="C.UTF-8", LANG="zh_CN.UTF-8"), "en", "LC_ALL comes first")
        self.assertEqual(self.language_with(LC_MESSAGES="zh_CN.UTF-8", LANG="C"), "zh", "then LC_MESSAGES")
        self.assertEqual(self.language_with(LC_ALL="", LANG="zh_CN.UTF-8"), "zh", "an empty variable is not set")

    def test_the_command_line_overrides_the_locale(self):
        self.assertEqual(cli._asked_language(["--lang", "zh", "hint", "1"]), "zh")
        self.assertEqual(cli._asked_language(["hint", "1", "--lang=en"]), "en")
        self.assertEqual(cli._without_language(["--lang", "zh", "hint", "1"]), ["hint", "1"],
                         "the command is found behind --lang")
        words.choose("en")
        self.assertEqual(self.language_with(LANG="zh_CN.UTF-8"), "en", "--lang en wins over a Chinese locale")

    def test_the_instructors_and_maintainers_commands_stay_english(self):
        err = io.StringIO()
        with mock.patch("sys.stderr", err):
            self.assertEqual(cli.main(["--lang", "zh", "mutate", "nope"]), cli.EXIT_USAGE)
            cli.main(["--lang", "zh", "hint", "nope"])
        first, second = err.getvalue().splitlines()
        self.assertIn("no exercise is called 'nope'", first, "mutate, a maintainer's command, answers in English")
        self.assertIn("没有名为 'nope' 的练习", second, "hint, a learner's, in Chinese")

    def test_every_message_has_both_languages_with_the_same_fields(self):
        for key, (english, chinese) in words.WORDS.items():
            self.assertTrue(english and chinese, f"{key}: a message is missing a language")
            fields = [set(re.findall(r"\{(\w+)", text)) for text in (english, chinese)]
            self.assertLessEqual(fields[1] - {"judge"}, fields[0], f"{key}: the Chinese uses a field the English is not given, "
                                                       "so it would fail when shown")
            self.assertNotRegex(chinese, r"[A-Za-z]{4,} [a-z]{3,} [a-z]{3,}",
                                f"{key}: the Chinese has an English sentence left in it")


class CommandLine(unittest.TestCase):
    def test_every_help_of_the_learners_commands_has_its_chinese(self):
        import argparse
        helps = [cli.LANG_HELP]
        for command in cli.COMMANDS:
            if command.audience != "learner":
                continue
            parser = argparse.ArgumentParser()
            command.arguments(parser)
            helps += [command.help] + [a.help for a in parser._actions
                                       if a.help and a.help != argparse.SUPPRESS and a.dest != "help"]
        missing = [h for h in helps if h not in words.COMMAND_LINE]
        self.assertEqual(missing, [], "a help of a learner's command without its Chinese in words.COMMAND_LINE: "
                         "under --lang zh it would be shown in English")

    def test_every_row_of_serve_has_its_chinese(self):
        from lab.learner import serve
        labels = [label for label, _ in serve.ROWS]
        labels += [what for what, *_ in serve.ratios({m: RESULT_FOR_RATIOS for m in serve.COMPARED})]
        words.choose("zh")
        self.addCleanup(words.choose, None)
        self.assertEqual([label for label in labels if words.row_label(label) == label and label != "tokens/s"], [],
                         "a row of serve's table without its Chinese in words.SERVE_ROWS")
        self.assertEqual(words.row_label("paged: heap allocations per step ÷ the plain engine's"),
                         "paged：每步堆分配 ÷ 朴素引擎的")

    def test_help_speaks_chinese(self):
        out = io.StringIO()
        words.choose("zh")
        self.addCleanup(words.choose, None)
        with mock.patch("sys.stdout", out), self.assertRaises(SystemExit):
            cli.main(["--lang", "zh", "bench", "--help"])
        said = out.getvalue()
        for text in ("用法：judge.py bench", "选项：", "显示本帮助并退出", "只跑名字匹配这个正则表达式的基准测试"):
            self.assertIn(text, said)


RESULT_FOR_RATIOS = {"tokens_per_second": 1.0, "kv_utilization": 0.9, "heap_allocations_per_step": 1.0,
                     "plain_heap_allocations_per_step": 2.0}


class Wrapping(unittest.TestCase):
    def test_chinese_wraps_by_columns(self):
        text = "一个 13 字节的块从 granule 的偏移 0 开始，需要几个影子字节来描述？" * 3
        lines = ui.wrap(text, 40, "  ", "    ").split("\n")
        self.assertGreater(len(lines), 3)
        self.assertTrue(all(ui.columns(line) <= 42 for line in lines), f"a line wider than the terminal: {lines}")
        self.assertFalse(any(line.strip()[0] in "，。：" for line in lines), f"a line starts with punctuation: {lines}")
        self.assertEqual("".join(line.strip() for line in lines).replace(" ", ""), text.replace(" ", ""),
                         "wrapping loses or adds nothing")
        english = "Answer with the number of a choice, or with a number. Ctrl-D or Ctrl-C stops. " * 3
        self.assertEqual(ui.wrap(english, 40, "  ", "  "),
                         textwrap.fill(english, 40, initial_indent="  ", subsequent_indent="  "),
                         "English wraps as it always did")


class MissingChinese(unittest.TestCase):
    def tearDown(self):
        words.choose(None)

    def test_a_missing_or_broken_translation_falls_back_to_english(self):
        english = cat.load().exercises[0]
        words.choose("zh")
        missing = cat.translated(english, path=FIXTURES / "none.zh.toml")
        self.assertEqual((missing.title, missing.stages), (english.title, english.stages),
                         "without the Chinese catalog, its words stay English")
        broken = cat.translated(english, table={"title": 3, "stage": [{"suite": english.stages[0].suite,
                                                                      "hints": [{"level": "nonsense"}]}]})
        self.assertEqual((broken.title, broken.stages[0].hints), (english.title, english.stages[0].hints),
                         "a malformed translation is read as missing, never as a crash")


    def test_a_quiz_whose_answers_differ_is_asked_in_english(self):
        arena = cat.load().exercises[0]
        other = quiz.load(arena, FIXTURES / "sample.zh.quiz.toml")
        self.assertEqual(quiz._with_english_answers(arena, other), quiz.load(arena),
                         "a translation that would score differently is not asked")
        faithful = quiz.load(arena)
        self.assertIs(quiz._with_english_answers(arena, faithful), faithful)


class Reporting(unittest.TestCase):
    def test_the_report_speaks_chinese_and_the_verdict_stays_english(self):
        from lab.learner import report
        from .test_reports import sample_verdict
        words.choose("zh")
        self.addCleanup(words.choose, None)
        mini = cat.load(FIXTURES / "mini.catalog.toml").exercises[0]
        verdict = sample_verdict()
        before = verdict.to_json()
        said = report.render(verdict, cat.translated(mini, path=FIXTURES / "mini.catalog.zh.toml"))
        for text in ("练习 01 · arena 分配器", "阶段 1 · 基础  1/6", "`allocate` 移动游标", "— 崩溃", "编译不通过",
                     "未通过：不要改动测试框架的宏"):
            self.assertIn(text, said, "the report's words and the stages' titles and goals are Chinese")
        self.assertEqual(verdict.to_json(), before, "the verdict, as --json prints it, keeps the English")


class Watching(unittest.TestCase):
    def test_watch_speaks_chinese(self):
        words.choose("zh")
        self.addCleanup(words.choose, None)
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            for path in kit.files.values():
                path.write_text("DONE")
            out = io.StringIO()
            self.assertTrue(kit.watcher(out).run(kit.exercises[0]))
        said = out.getvalue()
        for text in ("评判 ", "（练习 01）", "进度 ", "练习 01 通过。进入练习 02", "其他练习也都已通过"):
            self.assertIn(text, said, "watch's own words are Chinese")


class Speaking(unittest.TestCase):
    """The learner's commands in a clone whose catalog is the mini fixture, with its Chinese."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        kit = cls.kit = clone_kit(Path(cls.tmp.name))
        shutil.copy(FIXTURES / "mini.catalog.toml", kit / "judge" / "catalog.toml")
        shutil.copy(FIXTURES / "mini.catalog.zh.toml", kit / "judge" / "catalog.zh.toml")
        shutil.copy(FIXTURES / "sample.quiz.toml", kit / "chapters" / "01-arena.quiz.toml")
        shutil.copy(FIXTURES / "sample.zh.quiz.toml", kit / "chapters" / "zh" / "01-arena.quiz.toml")
        exercise = cat.load(kit / "judge" / "catalog.toml").exercises[0]
        header = kit / "exercises" / "01-arena" / "arena.hpp"
        cls.state = kit / ".alloclab" / "progress.json"
        progress = Progress(cls.state)   # stage 2 fails at a test with hints of its own: no build needed
        progress.record(exercise, False, 2, file_hash=hashlib.sha256(header.read_bytes()).hexdigest(),
                        failing_test="ArenaAlignment.RoundsUp")
        progress.save()
        cls.start = cls.state.read_bytes()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_judge(self, *args: str, lang: str = "C.UTF-8", stdin: str = "") -> str:
        """One command from the same progress, in a shell whose LANG is `lang`."""
        self.state.write_bytes(self.start)
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES")}
        with mock.patch.dict(os.environ, dict(env, LANG=lang), clear=True):
            proc = judge_cli(self.kit, *args, input=stdin)
        self.assertNotIn("Traceback", proc.stdout + proc.stderr)
        return proc.stdout + proc.stderr

    def test_hint_speaks_chinese(self):
        said = self.run_judge("--lang", "zh", "hint", "1")
        self.assertIn("阶段 2（对齐）是第一个未通过的阶段；它第一个失败的测试是 ArenaAlignment.RoundsUp。", said)
        self.assertIn("ArenaAlignment.RoundsUp 的提示 1/1（思路）：对齐为 16 的块必须从哪里开始？", said,
                      "the hint comes from the Chinese catalog, the same stage, test and level")
        english = self.run_judge("hint", "1")
        self.assertIn("Hint 1 of 1 for ArenaAlignment.RoundsUp (concept): Where must a block of alignment 16 start?",
                      english, "the English hint is unchanged")

    def test_quiz_speaks_chinese_and_scores_the_same(self):
        said = self.run_judge("--lang", "zh", "quiz", "1", stdin=ANSWERS)
        for text in ("自测 · 第 1 章 · arena 分配器（4 题）", "先 free(a) 再 free(b)", "你的答案（1-3）：b\n请输入选项的编号",
                     "得分：4 题答对 3 题。"):
            self.assertIn(text, said, "the quiz is asked from chapters/zh/ in the judge's Chinese")
        self.assertIn("`python3 judge/judge.py --lang zh list`", said,
                      "under an English locale, the command it suggests asks for Chinese again")
        zh_score = Progress(self.state).quiz_score(cat.load(self.kit / "judge" / "catalog.toml").exercises[0])
        english = self.run_judge("quiz", "1", stdin=ANSWERS)
        self.assertIn("Score: 3 of 4 right.", english)
        en_score = Progress(self.state).quiz_score(cat.load(self.kit / "judge" / "catalog.toml").exercises[0])
        self.assertEqual(zh_score, en_score, "the progress file records the same score in either language")

    def test_list_speaks_chinese(self):
        said = self.run_judge("--lang", "zh", "list")
        for text in ("arena 分配器", "一块缓冲区，一个游标。", "停在阶段 2/2", "进度 ["):
            self.assertIn(text, said)
        self.assertIn("The arena", self.run_judge("list"))

    def test_the_locale_and_the_option_agree(self):
        for args, stdin in ((("hint", "1"), ""), (("quiz", "1"), ANSWERS), (("list",), "")):
            chosen = self.run_judge("--lang", "zh", *args, stdin=stdin)
            # Under an English locale the commands it suggests carry the --lang they need.
            self.assertEqual(self.run_judge(*args, lang="zh_CN.UTF-8", stdin=stdin),
                             chosen.replace("judge.py --lang zh ", "judge.py "),
                             f"{args[0]}: LANG=zh_CN.UTF-8 says the same as --lang zh")
            self.assertEqual(self.run_judge(*args, "--lang", "en", lang="zh_CN.UTF-8", stdin=stdin)
                             .replace("judge.py --lang en ", "judge.py "), self.run_judge(*args, stdin=stdin), f"{args[0]}: --lang en undoes a Chinese locale")

    def test_bad_usage_speaks_chinese(self):
        self.assertIn("没有名为 'nope' 的练习", self.run_judge("--lang", "zh", "hint", "nope"))
        said = self.run_judge("list", "--nope", lang="zh_CN.UTF-8")
        self.assertIn("用法有误，无法识别的参数：--nope", said, "argparse's own words are Chinese too")
        self.assertIn("用法：judge.py [-h]", said)
        self.assertIn("缺少必需的参数：exercise", self.run_judge("--lang", "zh", "solution"))
        self.assertIn("judge.py: error: unrecognized arguments: --nope", self.run_judge("--lang", "zh", "check", "--nope"),
                      "a maintainer's command keeps argparse's English")
        self.assertIn("judge.py: error: unrecognized arguments: --nope", self.run_judge("list", "--nope"))


if __name__ == "__main__":
    unittest.main()
