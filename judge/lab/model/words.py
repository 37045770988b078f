"""The judge's own words, in English and in Chinese, and the one place that decides which a
learner reads. The learner's commands (`test`'s report, `hint`, `quiz`, `list`, `watch`) and the
errors of bad usage say everything through `say`; what stays English in both languages is not
here: the messages of the C++ tests, the compiler's and the sanitizers' output, the
instructors' and the maintainers' commands, and every machine-readable output.

The language is `--lang` when the command line gives it (cli.py calls `choose`), else the
locale: the first of LC_ALL, LC_MESSAGES and LANG that is set, Chinese when it starts with
"zh". Imports nothing of the judge, so every layer may ask it."""
from __future__ import annotations

import os

LANGUAGES = ("en", "zh")
_chosen: str | None = None
_on_the_command_line = False


def choose(language: str | None, asked: bool = True) -> None:
    """The language the command line asks for (`asked`), or the one a command speaks whatever
    is asked; None leaves it to the locale."""
    global _chosen, _on_the_command_line
    _chosen = language if language in LANGUAGES else None
    _on_the_command_line = asked and _chosen is not None


def language() -> str:
    return _chosen or _chosen_by_locale()


def _chosen_by_locale() -> str:
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def say(key: str, **fields) -> str:
    """The message `key` in the learner's language, its {fields} filled in. English fields that
    only English needs (a plural's `s`) are simply not used by the Chinese. {judge} is the
    command that runs the judge, as the learner types it again."""
    english, chinese = WORDS[key]
    return (chinese if language() == "zh" else english).format(judge=judge_command(), **fields)


def judge_command() -> str:
    """`python3 judge/judge.py`, with the --lang it was given when the locale alone would choose
    otherwise: the commands the judge suggests must answer in the language asked for."""
    command = "python3 judge/judge.py"
    if _on_the_command_line and _chosen != _chosen_by_locale():
        command += f" --lang {_chosen}"
    return command


def then(lead: str, text: str) -> str:
    """`lead` and `text` as one line: a space between them, but after Chinese punctuation,
    which carries its own."""
    return lead + ("" if lead.endswith(("。", "：", "，", "；", "！", "？")) else " ") + text


def plural(count: int) -> str:
    return "" if count == 1 else "s"


# key: (English, Chinese). The Chinese follows docs/glossary.md.
WORDS: dict[str, tuple[str, str]] = {
    # -- the command line ---------------------------------------------------------------
    "interrupted": ("interrupted", "已中断"),
    "bad_usage": ("{prog}: error: {message}",
                  "{prog}：用法有误：{message}（`{judge} --help` 列出全部命令和选项）"),
    "no_exercise": ("no exercise is called '{name}'. The exercises are: {known}.",
                    "没有名为 '{name}' 的练习。现有的练习：{known}。"),
    "missing_tool": ("{tools} not found. Install the toolchain with one command, `{install}`, then run this "
                     "command again.",
                     "找不到 {tools}。请先用一条命令 `{install}` 安装工具链，再重新运行这条命令。"),
    "missing_tool_elsewhere": ("{tools} not found, and this system has no apt-get to install them: open the folder "
                               "in the kit's development container, a Debian 12 image with the toolchain installed "
                               "(README.md, \"Quick start\").",
                               "找不到 {tools}，而这个系统没有 apt-get 可以安装它们：请在本项目的开发容器中打开这个文件夹，"
                               "那是一个装好了工具链的 Debian 12 镜像（见 README.zh.md 的“快速开始”）。"),
    "no_source": ("--source {file}: no such file", "--source {file}：没有这个文件"),
    "no_stage": ("exercise {id} has stages 1 to {count}, not {stage}",
                 "练习 {id} 的阶段是 1 到 {count}，没有 {stage}"),
    "junit_unwritable": ("--junit {file}: cannot write it: {why}", "--junit {file}：无法写入：{why}"),

    # -- test: the report -----------------------------------------------------------------
    "judging": ("Judging {file} for exercise {id:02d}…", "正在评判练习 {id:02d} 的 {file}…"),
    "first_build": ("The tests of exercise {id:02d} are not built yet in {tree}: this first judge builds them and "
                    "what no edit changes (GoogleTest, the model's generators), 12 to 25 s on two idle cores and "
                    "a minute when they are busy; the next ones compile only what your file changes.",
                    "练习 {id:02d} 的测试还没有在 {tree} 里构建过：这次评判要先构建它们，以及不随修改而变的部分"
                    "（GoogleTest、模型的生成器）。两个空闲核心上需要 12 到 25 秒，核心繁忙时约一分钟；"
                    "之后的评判只编译你的改动影响到的部分。"),
    "first_build_apart": (" A file given with --source or --solution is built in a tree of its own, apart from "
                          "your exercise's, so that judging it never rebuilds your tests.",
                          "--source 或 --solution 给出的文件在单独的构建树里构建，与你的练习分开，"
                          "这样评判它不会让你的测试重新构建。"),
    "judging_for_hint": ("Judging {file} to find the first stage that fails…",
                         "正在评判 {file}，找出第一个未通过的阶段…"),
    "exercise_heading": ("Exercise {id:02d} · {title}", "练习 {id:02d} · {title}"),
    "tampering": ("The header under test changes the test framework: {problem}. Tests judged through altered "
                  "assertions prove nothing, so this cannot pass.",
                  "被测的头文件改动了测试框架：{problem}。断言被改过的测试什么也证明不了，所以无法通过。"),
    "tampered": ("its tests ran with the test framework's macros changed by the header under test, so none of "
                 "them counts: a test that passed may only have had its failure hidden",
                 "被测的头文件改动了测试框架的宏，这些测试都不算数：通过的测试可能只是失败被藏了起来"),
    "does_not_compile": ("{label}: does not compile", "{label}：编译不通过"),
    "missing_member": ("Your header has no `{name}` in `{owner}`: the contract promises it, and the error below "
                       "is where the tests call it. Declare it as the skeleton does, under the same name (was it "
                       "renamed or removed?).",
                       "你的头文件里 `{owner}` 没有 `{name}`：契约承诺了它，下面的错误就出在测试调用它的地方。"
                       "请照骨架的声明把它加回来，名字保持不变（是不是改了名或删掉了？）。"),
    "others_in_one_line": ("the other failing tests in a line each; -v shows all their messages",
                           "其余失败的测试各占一行；-v 显示它们的全部消息"),
    "fix_first": ("Fix this first: nothing can be tested until the file compiles.",
                  "先修复这里：文件编译通过之前，什么都无法测试。"),
    "built_in": ("built in {seconds:.1f} s", "构建用时 {seconds:.1f} 秒"),
    "warnings": ("! {count} warning(s) in your file, the first: {where}: {message}",
                 "! 你的文件有 {count} 条警告，第一条：{where}: {message}"),
    "not_counted": ("not counted", "不计"),
    "stage_line": ("Stage {number} · {title}  {count}", "阶段 {number} · {title}  {count}"),
    "note": ("note: {note}", "注：{note}"),
    "tests_later": ("its tests are listed once the stages before it pass (-v lists them now)",
                    "前面的阶段通过后才列出它的测试（-v 现在就列出）"),
    "crashed": ("crashed", "崩溃"),
    "hung": ("hung", "卡住"),
    "did_not_run": ("did not run", "未运行"),
    "skipped": ("skipped", "跳过"),
    "failed": ("failed", "失败"),
    "repeats": ("{mark} {count} more test{s} {status}{same} ({names}; -v lists them)",
                "{mark} 另有 {count} 个测试{status}{same}（{names}；-v 列出它们）"),
    "same_message": (" with the same message", "，消息相同"),
    "again_command": ("`{command}`", " `{command}`"),
    "again_judge": ("the judge", "判题器"),
    "not_judged": ("; {stages} not judged", "；{stages} 未评判"),
    "stage_one": ("stage {spans}", "阶段 {spans}"),
    "stage_many": ("stages {spans}", "阶段 {spans}"),
    "counted": (" ({tests} test{s}{builds}, {seconds:.1f} s).", "（{tests} 个测试{builds}，{seconds:.1f} 秒）。"),
    "in_builds": (" in {count} builds", "，{count} 种构建"),
    "stages_pass": ("{mark} {stages} {verb}", "{mark} {stages} 通过"),
    "judge_every_stage": ("\n  `{judge} test {id}` judges every stage.",
                          "\n  `{judge} test {id}` 评判全部阶段。"),
    "passes_every_stage": ("{mark} Exercise {id:02d} passes every stage", "{mark} 练习 {id:02d} 通过了全部阶段"),
    "read_after": ("\n  Now read {where}: the mistakes the tests catch and the decisions the reference makes. "
                   "Then `{judge} bench {id}` and `{judge} quiz {id}`.",
                   "\n  现在读 {where}：测试能抓住哪些错误，参考答案做了哪些取舍。然后运行 "
                   "`{judge} bench {id}` 和 `{judge} quiz {id}`。"),
    "leave_macros": ("{mark} Not passed: leave the test framework's macros alone.",
                     "{mark} 未通过：不要改动测试框架的宏。"),
    "not_compiling_yet": ("{mark} Not passed: the file does not compile yet.", "{mark} 未通过：文件还编译不过。"),
    "fix_error": (" Fix the error above, then run {again} again.", "修复上面的错误，然后再运行{again}。"),
    "fix_error_watching": (" Fix the error above and save: watch judges it again.",
                           "修复上面的错误并保存，watch 会重新评判。"),
    "tests_fail": ("{failing} of {total} tests fail", "{total} 个测试中 {failing} 个失败"),
    "stage_has_problems": ("the stage has problems listed above", "这个阶段有上面列出的问题"),
    "not_passed_yet": ("{mark} Not passed yet: stage {number} ({title}): {what}",
                       "{mark} 尚未通过：阶段 {number}（{title}）：{what}"),
    "fix_first_fail": (". Fix the first {mark} above and run {again} again.\n",
                       "。修复上面第一个 {mark}，然后再运行{again}。\n"),
    "stuck": ("  Stuck? `{judge} hint {id}` gives the next hint; the chapter is {chapter}.",
              "  卡住了？`{judge} hint {id}` 给出下一条提示；本章在 {chapter}。"),
    "fix_first_fail_watching": (". Fix the first {mark} above and save: watch judges it again.\n",
                                "。修复上面第一个 {mark} 并保存，watch 会重新评判。\n"),
    "stuck_watching": ("  Stuck? Press h for the next hint; the chapter is {chapter}.",
                       "  卡住了？按 h 看下一条提示；本章在 {chapter}。"),
    "part": ('{chapter}, part "## {part}"', "{chapter} 的「## {part}」部分"),

    # -- list and the progress line ---------------------------------------------------------
    "passed": ("{mark} passed", "{mark} 已通过"),
    "at_stage": ("{mark} at stage {stage} of {count}", "{mark} 停在阶段 {stage}/{count}"),
    "failing": ("{mark} failing", "{mark} 未通过"),
    "compile_fails": ("{mark} does not compile", "{mark} 编译不通过"),
    "stage_alone_passes": ("stage {stage} of {count} passes (judged alone)", "阶段 {stage}/{count} 通过（单独评判）"),
    "stage_alone_fails": ("{mark} stage {stage} of {count} fails (judged alone)",
                          "{mark} 阶段 {stage}/{count} 未通过（单独评判）"),
    "not_started": ("not started", "未开始"),
    "difficulty_easy": ("easy", "简单"),
    "difficulty_medium": ("medium", "中等"),
    "difficulty_hard": ("hard", "困难"),
    "passed_once": (" · passed once", " · 曾经通过"),
    "hints_taken": ("hints taken: {taken}", "已看提示：{taken}"),
    "hints_for_stage": ("{count} for stage {stage}", "阶段 {stage} 的 {count} 条"),
    "quiz_score": ("quiz: {right} of {total} right", "自测：{total} 题答对 {right} 题"),
    "progress": ("Progress {bar}", "进度 {bar}"),
    "summary_stage": ("stage {stage}/{count}", "阶段 {stage}/{count}"),
    "summary_compile": ("{mark} compile", "{mark} 编译"),
    "summary_alone": ("stage {stage} {mark}", "阶段 {stage} {mark}"),

    # -- hint --------------------------------------------------------------------------------
    "hint_passed": ("{mark} Exercise {id:02d} passes every stage: no hint needed.",
                    "{mark} 练习 {id:02d} 通过了全部阶段：不需要提示。"),
    "hint_read_after": (" Now read {where}: the mistakes the tests catch and the decisions the reference makes.",
                        "现在读 {where}：测试能抓住哪些错误，参考答案做了哪些取舍。"),
    "hint_not_compiling": ("{mark} Your {header} does not compile, and no hint is about the compiler: fix the "
                           "first error that `{judge} test {id}` shows, then ask again.",
                           "{mark} 你的 {header} 编译不通过，而提示不讲编译器：先修复 "
                           "`{judge} test {id}` 显示的第一个错误，再来问。"),
    "lead_stage": ("Stage {number} ({title})", "阶段 {number}（{title}）"),
    "lead_fails": (" is the first stage that fails", "是第一个未通过的阶段"),
    "lead_test": ("; its first failing test is {test}.", "；它第一个失败的测试是 {test}。"),
    "lead_end": (".", "。"),
    "lead_colon": (":", "："),
    "no_hints": ("Stage {number} ({title}) has no hints; {chapter} explains it.",
                 "阶段 {number}（{title}）没有提示；{chapter} 讲解了它。"),
    "last_test_hint_then_stage": ("That was the last hint for {test}; asked again, `hint` gives the hints for "
                                  "the whole stage.",
                                  "这是 {test} 的最后一条提示；再问，`hint` 会给出整个阶段的提示。"),
    "last_test_hint": ("That was the last hint for {test}.", "这是 {test} 的最后一条提示。"),
    "also_stage": (" and all {count} for stage {number}", "（以及阶段 {number} 的全部 {count} 条）"),
    "now_stage_hints": ("You have seen all {count} hints for {test}; now the hints for the whole stage.",
                        "{test} 的 {count} 条提示你都看过了；下面是整个阶段的提示。"),
    "of_stage": ("stage {number}", "阶段 {number}"),
    "last_stage_hint": ("That was the last hint for stage {number}.", "这是阶段 {number} 的最后一条提示。"),
    "seen_all": ("You have seen all {total} hints for {of}{also}. The last one again:",
                 "{of} 的 {total} 条提示{also}你都看过了。再看一遍最后一条："),
    "hint_heading": ("Hint {which} of {total} for {of} ({level}):", "{of} 的提示 {which}/{total}（{level}）："),
    "level_concept": ("concept", "思路"),
    "level_approach": ("approach", "解法"),
    "level_code": ("code", "代码"),
    "no_hints_seen": ("You have taken no hint for exercise {id:02d} yet: `{judge} hint {id}` gives the first.",
                      "练习 {id:02d} 的提示你还一条都没看过：`{judge} hint {id}` 会给出第一条。"),
    "hints_seen": ("The {count} hint{s} you have taken for exercise {id:02d}, stage by stage:",
                   "你在练习 {id:02d} 看过的 {count} 条提示，按阶段排列："),
    "still_stuck": ('Still stuck? The part "The task" of {chapter} states the contract, and '
                    "`{judge} test {id} -v` shows every message.",
                    "还是卡住？{chapter} 的「任务」部分写明了契约，"
                    "`{judge} test {id} -v` 显示每一条消息。"),

    # -- quiz ----------------------------------------------------------------------------------
    "no_quiz": ("chapter {id} has no quiz yet: {quiz} does not exist. The chapter itself is {chapter}.",
                "第 {id} 章还没有自测：{quiz} 不存在。本章在 {chapter}。"),
    "quiz_empty": ("the quiz {quiz} has no question", "自测 {quiz} 一道题也没有"),
    "quiz_heading": ("Quiz · chapter {id} · {title} ({count} questions)", "自测 · 第 {id} 章 · {title}（{count} 题）"),
    "quiz_how": ("Answer with the number of a choice, or with a number. Ctrl-D or Ctrl-C stops.",
                 "输入选项的编号，或输入一个数。Ctrl-D 或 Ctrl-C 结束。"),
    "question": ("Question {number} of {count}", "第 {number} 题，共 {count} 题"),
    "quiz_stopped": ("Stopped at question {number} of {count}; nothing is recorded. "
                     "`{judge} quiz {id}` starts again.",
                     "停在第 {number} 题（共 {count} 题）；没有记录。"
                     "`{judge} quiz {id}` 重新开始。"),
    "right": ("{mark} Right.", "{mark} 答对了。"),
    "not_quite": ("{mark} Not quite: the answer is {answer}.", "{mark} 不对：答案是 {answer}。"),
    "score": ("Score: {right} of {count} right.", "得分：{count} 题答对 {right} 题。"),
    "answer_choice": ("Your answer (1-{count}): ", "你的答案（1-{count}）："),
    "again_choice": ("Type the number of a choice, from 1 to {count}.", "请输入选项的编号，1 到 {count}。"),
    "answer_number": ("Your answer (a number): ", "你的答案（一个数）："),
    "again_number": ("Type a number, such as 42 or 0.5.", "请输入一个数，比如 42 或 0.5。"),
    "recorded": ("Recorded in {file}; `{judge} list` shows it.",
                 "已记录在 {file}；`{judge} list` 可以查看。"),

    # -- watch ---------------------------------------------------------------------------------
    "keys": ("h hint · l list · r run · q quit", "h 提示 · l 列表 · r 运行 · q 退出"),
    "every_exercise_passes": ("{mark} Every exercise passes.", "{mark} 所有练习都已通过。"),
    "watch_again": (" `{judge} list` shows them; `{judge} watch N` watches exercise N "
                    "again.", "`{judge} list` 列出它们；`{judge} watch N` 重新监视练习 N。"),
    "watching": ("Watching {file} · {where} · {keys} · {summary}", "监视 {file} · {where} · {keys} · {summary}"),
    "watching_plain": ("Watching {file} · {where} · {summary} · save the file to judge it again",
                       "监视 {file} · {where} · {summary} · 保存文件即重新评判"),
    "stopped_watching": ("Stopped watching. Your progress is saved; `{judge} list` shows it.",
                         "已停止监视。进度已保存；`{judge} list` 可以查看。"),
    "kit_done": ("{mark} Exercise {id:02d} passes, and so does every other: the kit is done. Well done!",
                 "{mark} 练习 {id:02d} 通过了，其他练习也都已通过：全部完成。干得好！"),
    "on_to": ("{mark} Exercise {id:02d} passes.", "{mark} 练习 {id:02d} 通过。"),
    "on_to_next": (" On to exercise {id:02d}: {title} ({file}; {chapter}).",
                   "进入练习 {id:02d}：{title}（{file}；{chapter}）。"),
    "watch_judging": ("── {time} · judging {file} (exercise {id:02d}) ──", "── {time} · 评判 {file}（练习 {id:02d}）──"),
    "watch_keys": ("Keys: {keys}.", "按键：{keys}。"),
}
