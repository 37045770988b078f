"""The judge's own words, in English and in Chinese, and the one place that decides which a
learner reads. The learner's commands (`test`'s report, `hint`, `quiz`, `list`, `watch`, `reset`,
`solution`, `bench`, `serve`) and the errors of bad usage say everything through `say`; the command
line's help and argparse's own messages go through `translated` (COMMAND_LINE), `serve`'s table
through `row_label` (SERVE_ROWS). What stays English in both languages is not here: the
messages of the C++ tests, the compiler's and the sanitizers' output, the instructors' and the
maintainers' commands, and every machine-readable output.

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


def listing(items) -> str:
    """`items` as a list in a sentence: `a, b, c` in English, `a、b、c` in Chinese."""
    return ("、" if language() == "zh" else ", ").join(items)


def translated(text: str) -> str:
    """`text`, English words of the command line (argparse's own or the learner's commands'
    help), in Chinese when the learner reads Chinese and COMMAND_LINE has them; else `text`.
    argparse reads its words through this (cli.py installs it as argparse's gettext)."""
    return COMMAND_LINE.get(text, text) if language() == "zh" else text


def translated_plural(singular: str, plural_text: str, count: int) -> str:
    return translated(singular if count == 1 else plural_text)


# key: (English, Chinese). The Chinese follows docs/glossary.md.
WORDS: dict[str, tuple[str, str]] = {
    # -- the command line ---------------------------------------------------------------
    "interrupted": ("interrupted", "已中断"),
    "bad_usage": ("{prog}: error: {message}",
                  "{prog}：用法有误，{message}（`{judge} --help` 列出全部命令和选项）"),
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

    # -- reset and solution -------------------------------------------------------------------
    "not_a_checkout": ("this copy of the kit is not a git checkout, so the judge has no untouched copy of the "
                       "skeleton. Download {file} again from the course's repository.",
                       "这份代码不是 git 检出的，判题器手里没有原始骨架。请从课程仓库重新下载 {file}。"),
    "no_skeleton": ("git has no committed version of {file}, so there is nothing to reset it to",
                    "git 里没有 {file} 的已提交版本，无从恢复"),
    "from_upstream": ("the commit your branch last shared with its upstream {upstream}",
                      "你的分支与上游 {upstream} 最后共有的提交"),
    "from_head": ("HEAD, your branch's last commit", "你的分支的最新提交 HEAD"),
    "no_upstream": (" (it has no upstream)", "，该分支没有上游"),
    "commit_of": ("{where}, {commit}", "{commit}，{where}"),
    "already_skeleton": ("{file} is already the untouched skeleton (as in {where}); nothing to do.",
                         "{file} 已经是原始骨架，无需恢复（骨架取自 git：{where}）。"),
    "reset_done": ("{mark} {file} is the untouched skeleton again", "{mark} {file} 已恢复为原始骨架"),
    "reset_from": (" (from git: {where}).", "（取自 git：{where}）。"),
    "backup_kept": ("  Your previous file is kept as {file}", "  你原来的文件备份在 {file}"),
    "start_again": ("  Start with stage 1: `{judge} test {id}` or `{judge} watch {id}`.",
                    "  从阶段 1 重新开始：`{judge} test {id}` 或 `{judge} watch {id}`。"),
    "solution_locked": ("The reference for exercise {id:02d} unlocks once your own {header} passes every stage "
                        "(`{judge} test {id}`).\n  Stuck? `{judge} hint {id}` gives the next hint, and {chapter} "
                        "explains the design.\n  To read it anyway: `{judge} solution {id} --force` (this is noted "
                        "in your progress file).",
                        "你自己的 {header} 通过全部阶段（`{judge} test {id}`）之后，才能查看练习 {id:02d} 的参考答案。"
                        "\n  卡住了？`{judge} hint {id}` 给出下一条提示，{chapter} 讲解了设计思路。"
                        "\n  一定要现在看：`{judge} solution {id} --force`（这会记在你的进度文件里）。"),
    "unreadable": ("cannot read {file}: {why}", "无法读取 {file}：{why}"),
    "solution_forced": ("Shown with --force before your file passed; noted in {file}.",
                        "你的文件还没通过，这是用 --force 看到的；已记在 {file}。"),
    "solution_heading": ("Reference solution of exercise {id:02d} · {title} ({file}):",
                         "练习 {id:02d} · {title} 的参考答案（{file}）："),

    # -- bench ------------------------------------------------------------------------------
    "no_benchmarks": ("exercise {id:02d} has no benchmarks", "练习 {id:02d} 没有基准测试"),
    "bench_building": ("Building and running the benchmarks of exercise {id:02d} twice, optimised ({compiler} -O2): "
                       "your {header} and the reference, each benchmark {repetitions} time{s}…",
                       "以优化方式（{compiler} -O2）把练习 {id:02d} 的基准测试构建两遍并运行：一遍用你的 {header}，"
                       "一遍用参考答案，每个基准测试跑 {repetitions} 轮…"),
    "bench_not_passed": ("Your {header} has not passed `{judge} test {id}` yet: a wrong allocator can be fast, so "
                         "read its figures with care.",
                         "你的 {header} 还没通过 `{judge} test {id}`：错的分配器也可以很快，看这些数字时要当心。"),
    "bench_yours": ("Your {header}", "你的 {header}"),
    "bench_reference": ("The reference", "参考答案"),
    "bench_failed": ("{whose}: {error}", "{whose}：{error}"),
    "bench_does_not_compile": ("does not compile: {where}: {message}", "编译不通过：{where}: {message}"),
    "bench_columns": ("allocator|yours|reference|yours ÷ reference", "分配器|你的|参考答案|你的 ÷ 参考答案"),
    "bench_slower_mark": (" ⚠ slower", " ⚠ 更慢"),
    "bench_row_error_yours": ("yours", "你的"),
    "bench_row_error_reference": ("the reference", "参考答案"),
    "bench_faster": ("{ratio:.1f}× faster", "快 {ratio:.1f}×"),
    "bench_slower": ("{ratio:.1f}× slower", "慢 {ratio:.1f}×"),
    "bench_both": ("{subject} {yours} than {other} with your header; {reference} with the reference",
                   "{subject} 比 {other}：用你的头文件时{yours}，用参考答案时{reference}"),
    "bench_one_yours": ("{subject} {ratio} than {other} with your header", "{subject} 比 {other} {ratio}（用你的头文件）"),
    "bench_one_reference": ("{subject} {ratio} than {other} with the reference",
                            "{subject} 比 {other} {ratio}（用参考答案）"),
    "bench_footnote": ("Times are per benchmark iteration{how}. Your code runs only on the rows of {subject}* (in "
                       "colour): only they compare yours ÷ reference, the same row built against your header and "
                       "against the reference. The other rows run the same code in both builds: their runs are "
                       "pooled into one figure. Under such a row, a line compares the exercise's allocator with it, "
                       "in each build.",
                       "时间是基准测试每次迭代的耗时{how}。只有 {subject}* 这几行（彩色）运行你的代码，也只有它们给出"
                       "“你的 ÷ 参考答案”：同一行分别用你的头文件和参考答案构建。其他各行在两次构建里跑的是同一份代码，"
                       "所以它们的各轮合起来只给一个数；这样一行下面的一行，是在每次构建里拿本练习的分配器和它比。"),
    "bench_repeated": (", each the median of {repetitions} runs, every run a process of its own (no row inherits "
                       "another's heap or malloc settings) and the runs of all rows in random order, with ± the "
                       "median distance of a run from it, as a share of it",
                       "，各取 {repetitions} 轮的中位数，每一轮都是一个单独的进程（哪一行都不会继承别的行留下的堆或 "
                       "malloc 设置），所有行的各轮按随机顺序交错运行；± 是各轮与中位数之差的中位数，占中位数的比例"),
    "bench_once": (", from one run each, a process of its own (--repetitions 5 or more shows how much they move)",
                   "，每项只跑了一轮，各在单独的进程里（加 --repetitions 5 或更多可以看出它们的波动）"),
    "bench_spreads": (" In this run the runs of a row moved by ±{median:.0%} in the median row and by up to "
                      "±{most:.0%}: a difference smaller than the spreads of its two figures together is noise. From "
                      "one run to the next the figures move further, with whatever else the machine runs: run it "
                      "again before you trust a difference.",
                      "这次运行中，同一行各轮的波动在中位的那一行是 ±{median:.0%}，最大 ±{most:.0%}：两个数之差如果"
                      "小于两者波动之和，就只是噪声。两次运行之间的数字波动更大，取决于机器上同时还在跑什么："
                      "相信一个差别之前，先再跑一遍。"),
    "bench_pooled_row": ("both builds: runs none of your code", "两次构建合并：这一行不运行你的代码"),
    "bench_row_error_both": ("both builds", "两次构建"),
    "bench_too_slow": ("\n⚠ Yours is more than {times:g}× slower than the reference on {rows}.",
                       "\n⚠ 在 {rows} 上，你的实现比参考答案慢 {times:g}× 以上。"),
    "memory_maps": ("\nMemory maps at the peak of reservation ({title}):", "\n预留量峰值时的内存分布图（{title}）："),
    "slow_causes": ("What usually makes an allocator slower than the reference: a throw path built inline (a "
                    "message string made in the hot function: move it to a [[gnu::cold, gnu::noinline]] helper); "
                    "a lock or an atomic on the hot path; a container lookup (a map, a search) per call; memory "
                    "touched or cleared that the reference leaves alone. A row that is not your allocator moved "
                    "with the machine's load: run it again.",
                    "分配器比参考答案慢，常见的原因有：抛异常的路径写在了热路径里（在热函数里拼消息字符串：把它挪进一个 "
                    "[[gnu::cold, gnu::noinline]] 的辅助函数）；热路径上有锁或原子操作；每次调用都查一次容器"
                    "（map、查找）；碰了或清零了参考答案不碰的内存。不是你的分配器的那几行变了，是因为机器负载在变："
                    "再跑一遍。"),
    "slow_causes_6": ("In the ring: a `%` in every allocate (the head's offset computed as `head % capacity`, a "
                      "64-bit division; the capacity is a multiple of 4096, not always a power of two, so no mask "
                      "replaces it: the reference keeps the offset beside the head and moves it on with each "
                      "block), or the consumer's tail loaded on every call where the last tail seen would do.",
                      "在环里：每次 allocate 都做一次 `%`（用 `head % capacity` 算 head 的偏移，这是一次 64 位除法；"
                      "容量是 4096 的倍数，不一定是 2 的幂，没法用掩码代替：参考答案把偏移量存在 head 旁边，"
                      "每分配一块就往前推），或者每次调用都去读消费者的 tail，其实用上次看到的 tail 就够了。"),
    "slow_causes_8": ("In virtual memory: memory committed before its first touch (MAP_POPULATE or "
                      "MADV_POPULATE_WRITE in map: the map row then shows `committed_KiB`), a system call more per "
                      "operation (an mprotect after the mmap, an madvise before the hole is punched), or a "
                      "PageReserve whose acquire maps a page itself, or waits for the thread, while pages are ready "
                      "(`hot_path_maps` above 0 on grow/vm_reserve).",
                      "在虚拟内存里：第一次访问之前就提交了内存（map 里用了 MAP_POPULATE 或 MADV_POPULATE_WRITE："
                      "map 那一行会显示 `committed_KiB`）；每个操作多一次系统调用（mmap 之后又 mprotect 一次，"
                      "打洞之前先 madvise 一次）；或者 PageReserve 明明有现成的页面，acquire 还是自己去映射一页，"
                      "或者去等后台线程（grow/vm_reserve 上的 `hot_path_maps` 大于 0）。"),

    # -- serve ------------------------------------------------------------------------------
    "serve_asked_for": ("asked for", "按要求"),
    "serve_changed": ("changed since it passed: `{judge} test {id}` again to use it",
                      "通过之后又改过：再跑一次 `{judge} test {id}` 才会用它"),
    "serve_not_passed": ("not passed yet", "还没通过"),
    "serve_not_passed_at": ("not passed yet (stage {stage})", "还没通过，停在阶段 {stage}"),
    "serve_given": ("{file} as {id:02d}'s {header}", "{file} 作为 {id:02d} 的 {header}"),
    "serve_yours": ("your headers: {headers}", "你的头文件：{headers}"),
    "serve_all_references": ("the reference for every exercise (--with reference)", "全部练习都用参考答案（--with reference）"),
    "serve_references": ("the reference for {which}", "这些练习用参考答案：{which}"),
    "serve_reason": ("{ids} ({why})", "{ids}（{why}）"),
    "serve_and": ("; and ", "；"),
    "serve_semicolon": ("; ", "；"),
    "serve_building": ("Building the serving engine optimised ({compiler} -O2) with {what}…",
                       "以优化方式（{compiler} -O2）构建推理服务引擎，{what}…"),
    "serve_built_with": ("Built with {what}.", "构建所用：{what}。"),
    "serve_timeline": ("\nTimeline: {files} (open it in a browser)", "\n时间线：{files}（用浏览器打开）"),
    "serve_timelines": ("\nTimelines: {files} (open them in a browser)", "\n时间线：{files}（用浏览器打开）"),
    "serve_sweep_drawn": ("\nThe sweep: {file} (open it in a browser)", "\n扫描图：{file}（用浏览器打开）"),
    "serve_finished": (" requests finished", " 个请求已完成"),
    "serve_tokens_per_second": ("  {manager}: {rate:,.1f} tokens/s", "  {manager}：{rate:,.1f} tokens/s"),
    "serve_on_budget": ("  {manager} on {budget} blocks: {rate:,.1f} tokens/s",
                        "  {manager}，{budget} 块：{rate:,.1f} tokens/s"),
    "serve_reference_manager": ("{manager}, the reference manager", "{manager}，参考答案的管理器"),
    "serve_reference_heap": ("  {manager}: the reference manager makes {count} heap allocations per step",
                             "  {manager}：参考答案的管理器每步堆分配 {count} 次"),
    "serve_yes": ("yes", "是"),
    "serve_no": ("NO", "否"),
    "serve_not_compared": ("not compared (--no-plain)", "未比较（--no-plain）"),
    "serve_none": ("none", "没有"),
    "serve_leak_yes": ("YES", "有"),
    "serve_finished_of": (" ({finished} finished)", "（完成 {finished} 个）"),
    "serve_explained": ("KV utilization: tokens stored ÷ the token slots of the blocks handed out, averaged over the "
                        "steps. Heap allocations/step: calls of operator new in a steady-state step (from the end of "
                        "one step to the end of the next, arrivals included), by whom: the engine itself (scheduler, "
                        "inputs, runner, metrics), the KV cache manager's calls (beside them the reference manager's, "
                        "in the same engine on the same trace and budget), and the other allocators growing (the "
                        "sequence pool, the caching allocator); against the plain engine's std::vector for "
                        "everything. TTFT: time to first token, from a request's arrival to the end of the step that "
                        "sampled its first token; TPOT: time per output token after the first, per sample; median and "
                        "99th percentile. Prefill / decode time: the steps that computed a prompt, and the steps that "
                        "only decoded. Decode GB/s and GFLOP/s: what the decode-only steps read and computed (from the "
                        "model's shapes: every layer's weights and the LM head once a step, each row's context of K "
                        "and V) per second, and in brackets the share of this machine's peak, measured before the "
                        "run: a streaming read of memory, and the engine's matmul with its weights in cache.",
                        "KV 利用率：存下的 token 数 ÷ 已分出的块中 token 槽位的总数，对所有步取平均。每步堆分配："
                        "稳态下一步之内（从上一步结束到这一步结束，新到的请求也算在内）调用 operator new 的次数，"
                        "按调用方分开：引擎自身（调度器、输入、执行器、统计），KV Cache 管理器（旁边是参考答案的管理器"
                        "在同一引擎、同一 trace、同一预算下的次数），以及其他分配器的扩容（序列池、缓存分配器）；"
                        "对照的是处处用 std::vector 的朴素引擎。TTFT：首 token 延迟，从请求到达到采样出它第一个 "
                        "token 的那一步结束；TPOT：首个之后每个输出 token 的耗时，按每次采样计；两者都给出中位数和 "
                        "p99。prefill / decode 时间：计算 prompt 的那些步，和只做 decode 的那些步。decode 的 GB/s 与 "
                        "GFLOP/s：只做 decode 的步每秒读取和计算的量（按模型的形状推算：每步读一遍各层权重和 LM "
                        "head，每一行读它上下文的 K 和 V），括号里是占本机峰值的比例；峰值在运行前测得：一次流式的"
                        "内存读取，以及权重在缓存中时引擎自己的 matmul。"),
    "serve_mismatch": ("Some request's tokens differ from the plain engine's. Both run the same model with the same "
                       "weights and the same seeded sampler, and every kernel computes a row alone, so scheduling "
                       "cannot change a token: a different token means a request read KV it did not write. A block "
                       "given to two requests at once, a slot or block table pointing into the wrong block, a shared "
                       "block written without its copy, a block given back while still in use, or a cached block "
                       "found for a prefix that differs: memory that leaked from one request into another.",
                       "有请求生成的 token 与朴素引擎的不同。两者跑的是同一个模型、同样的权重、同样种子的采样器，"
                       "而每个 kernel 都只单独计算一行，所以调度改变不了任何一个 token：token 不同，说明某个请求读到了"
                       "不是它自己写入的 KV。可能是一个块同时给了两个请求，slot 或块表指向了错误的块，共享的块没有先"
                       "复制就被写入，还在用的块被归还，或者为不同的前缀找到了缓存块：总之是一个请求的内存漏进了另一个"
                       "请求。"),
    "serve_yours_in_engine": ("Your headers are in the engine: serve `--with reference` to see the reference match, "
                              "then judge yours again (`{judge} test N`); the KV cache manager (07) and the block "
                              "pool (03) hand out the KV blocks.",
                              "引擎里用的是你的头文件：先用 `--with reference` 服务，看参考答案是否一致，再重新评判你的"
                              "头文件（`{judge} test N`）；分发 KV 块的是 KV Cache 管理器（07）和块池（03）。"),
    "serve_kit_wrong": ("This is the references' run: the kit itself is wrong; please report it.",
                        "这是全部用参考答案的运行：是课程套件本身有错，请报告这个问题。"),
    "serve_unfinished": ("{mark} {managers}: the engine stopped with requests unfinished.",
                         "{mark} {managers}：引擎停下时还有请求没有完成。"),
    "serve_leaked": ("{mark} {manager}: once every request was done, {leak}.",
                     "{mark} {manager}：所有请求都完成之后，{leak}。"),
    "serve_compare_heading": ("The {trace} trace on {kv} KV blocks of {tokens} tokens, the {model} model, four block "
                              "managers", "{trace} trace，{kv} 个 KV 块，每块 {tokens} 个 token，{model} 模型，"
                              "四种块管理器"),
    "serve_target": (" target {target}", " 目标 {target}"),
    "serve_median_of": ("  (median of {runs} runs; {low:.2f}–{high:.2f} run by run)",
                        "  （{runs} 次运行的中位数；各次在 {low:.2f}–{high:.2f} 之间）"),
    "serve_managers_explained": ("reserve takes the KV blocks of a request's prompt and of its every possible new "
                                 "token at admission, as engines did before paging; paged takes a block when the last "
                                 "one fills; prefix also finds the blocks of a prompt's beginning already computed "
                                 "for another request; virtual keeps each sequence's KV contiguous in a slice of "
                                 "address space (exercise 08), mapping physical granules of the same bytes as it "
                                 "grows, and attention reads it with no block table. Tokens/s move with the machine's "
                                 "load: the managers are served in turn, once each and then again, and each is shown "
                                 "by its median run. ",
                                 "reserve 在准入时就拿走请求 prompt 和它今后每一个可能的新 token 所需的 KV 块，"
                                 "这是分页出现之前引擎的做法；paged 在最后一个块写满时才再拿一块；prefix 还会找出 prompt "
                                 "开头已经为别的请求算过的那些块；virtual 把每个序列的 KV 连续地放在一段地址空间里（练习 08），"
                                 "随序列增长映射同样字节数的物理 granule，attention 读取时不需要块表。tokens/s 随机器负载"
                                 "波动：各管理器轮流服务，每个跑一遍再轮一遍，各取中位数那一次展示。"),
    "serve_source_does_not_compile": ("{file} does not compile in the engine as exercise {id:02d}'s {header}:",
                                      "{file} 作为练习 {id:02d} 的 {header} 放进引擎后编译不通过："),
    "serve_yours_does_not_compile": ("Your {header} (exercise {id:02d}) does not compile in the engine:",
                                     "你的 {header}（练习 {id:02d}）放进引擎后编译不通过："),
    "serve_passed_but": ("  It passed its tests, so the engine uses it in a way they do not: fix it and run "
                         "`{judge} test {id}`, or serve with `--with reference`.",
                         "  它通过了自己的测试，说明引擎用到它的方式测试没有覆盖：改好之后运行 `{judge} test {id}`，"
                         "或者用 `--with reference` 服务。"),
    "serve_engine_does_not_compile": ("The serving engine does not compile:", "推理服务引擎编译不通过："),
    "serve_engine_does_not_compile_yours": ("The serving engine does not compile with your headers:",
                                            "推理服务引擎用你的头文件编译不通过："),
    "serve_engine_error_hint": ("  The error is in the engine's code, reached through one of your headers: a name or "
                                "signature of the contract may differ. `--with reference` shows whether the engine "
                                "builds.",
                                "  错误出在引擎的代码里，是经由你的某个头文件触发的：可能是契约中某个名字或签名对不上。"
                                "用 `--with reference` 可以看出引擎本身能否构建。"),
    "serve_not_built": ("The serving engine could not be built: {why}", "推理服务引擎无法构建：{why}"),
    "serve_build_failed": ("the build failed", "构建失败"),
    "serve_compare_and_manager": ("--compare serves the trace with all four managers: leave out --manager",
                                  "--compare 会用全部四种管理器服务这个 trace：去掉 --manager"),
    "serve_sweep_and_others": ("--sweep serves the four managers over its own KV budgets: leave out --compare, "
                               "--manager and --kv-blocks",
                               "--sweep 会在它自己选定的一系列 KV 预算下服务四种管理器：去掉 --compare、--manager 和 "
                               "--kv-blocks"),
    "serve_repeat": ("--repeat {repeat}: serve at least once", "--repeat {repeat}：至少要服务一次"),
    "serve_unwritable": ("cannot write {file}: {why}", "无法写入 {file}：{why}"),
    "serve_timeline_unwritable": ("cannot write the timeline {file}: {why}", "无法写入时间线 {file}：{why}"),
    "serve_out_unwritable": ("--out {folder}: cannot write there ({why})", "--out {folder}：无法写入（{why}）"),
    "serve_no_sources": ("the serving engine's sources ({file}) are not in this tree: update your copy of the kit "
                         "(`git pull`)", "推理服务引擎的源码（{file}）不在这份代码里：请更新你的课程套件（`git pull`）"),
    "serve_sweep_heading": ("The {trace} trace, the {model} model: tokens/s (mean batch) at each KV budget",
                            "{trace} trace，{model} 模型：各 KV 预算下的 tokens/s（平均 batch）"),

    # -- test: the report -----------------------------------------------------------------
    # -- examine: the learner's own tests ------------------------------------------------------
    "no_my_tests": ("{file}: no such file. Your own tests of exercise {id:02d} go there: GoogleTest tests that include "
                    "{header} and call nothing the contract does not name (the kit's copy is in git: `git checkout -- "
                    "{file}` brings it back).",
                    "{file}：没有这个文件。练习 {id:02d} 的自写测试放在那里：包含 {header}、只调用契约里有的东西的 "
                    "GoogleTest 测试（本项目的版本在 git 里：`git checkout -- {file}` 可以取回）。"),
    "examining": ("Examining your tests {file} for exercise {id:02d} against the correct implementations and the "
                  "known mistakes…", "正在用正确实现和已知错误检验练习 {id:02d} 的自写测试 {file}…"),
    "tests_unjudged": ("{file} could not be judged, and scores nothing:", "{file} 无法评判，不得分："),
    "tests_unjudged_why": ("Your file holds GoogleTest tests of the contract, nothing else: it includes the exercise's "
                           "header and <gtest/gtest.h>, and the judge links GoogleTest's own main.",
                           "你的文件只放针对契约的 GoogleTest 测试：包含本练习的头文件和 <gtest/gtest.h>，main 由评判程序链接 "
                           "GoogleTest 自带的那个。"),
    "tests_valid": ("Valid: your {tests} test{s} pass on every correct implementation.",
                    "有效：你的 {tests} 个测试在每一个正确实现上都通过。"),
    "tests_invalid_one": ("Not valid: a test fails on a correct implementation, so it asserts something the contract "
                          "does not promise.",
                          "无效：有 1 个测试在正确实现上失败，说明它断言了契约没有承诺的东西。"),
    "tests_invalid": ("Not valid: {count} tests fail on a correct implementation, so they assert something the "
                      "contract does not promise.",
                      "无效：有 {count} 个测试在正确实现上失败，说明它们断言了契约没有承诺的东西。"),
    "the_reference": ("the reference", "参考答案"),
    "a_wheat": ("the correct implementation \"{name}\"", "正确实现“{name}”"),
    "test_fails_on": ("{test} fails on {where}:", "{test} 失败于：{where}"),
    "file_fails_on": ("the file fails on {where}:", "整个文件失败于：{where}"),
    "wheat_differs": ("Where it differs: {differs}", "那个实现的不同之处：{differs}"),
    "implementation_in": ("{implementation} ({sanitizer})", "{implementation}（{sanitizer}）"),
    "list_joiner": (", ", "、"),
    "tests_invalid_why": ("A valid test passes on every implementation the contract allows: assert what the contract "
                          "promises, and leave free what it leaves free.",
                          "有效的测试在契约允许的每一个实现上都通过：只断言契约承诺的，契约留给实现自由的就别去断言。"),
    "tests_thorough": ("Thorough: your valid tests reject {caught} of the {total} known mistakes.",
                       "彻底程度：你的有效测试拒绝了 {total} 个已知错误中的 {caught} 个。"),
    "tests_part": ("stage {stage}, {title}  {caught} of {total}", "阶段 {stage}，{title}  {caught}/{total}"),
    "tests_thorough_invalid": ("Tests that fail on a correct implementation count for nothing here, and a file with one "
                               "scores nothing until it is fixed.",
                               "在正确实现上失败的测试不计入这里；文件里只要有一个这样的测试，修好之前整份文件不得分。"),
    "test_hint": ("A question to ask of the contract:", "不妨问问契约："),
    "tests_took": ("({seconds:.0f} s)", "（{seconds:.0f} 秒）"),
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
                  "先改这里：文件编译通过之前，什么也测不了。"),
    "built_in": ("built in {seconds:.1f} s", "构建用时 {seconds:.1f} 秒"),
    "warnings": ("! {count} warning(s) in your file, the first: {where}: {message}",
                 "! 你的文件有 {count} 条警告，第一条：{where}: {message}"),
    "not_counted": ("not counted", "不计"),
    "stage_line": ("Stage {number} · {title}  {count}", "阶段 {number} · {title}  {count}"),
    "note": ("note: {note}", "注：{note}"),
    "tests_later": ("its tests are listed once the stages before it pass (-v lists them now)",
                    "前面的阶段通过后才列出它的测试（-v 现在就列出）"),
    "crashed": ("crashed", "崩溃"),
    "hung": ("hung", "卡死"),
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
                       "{mark} 尚未通过阶段 {number}（{title}）：{what}"),
    "fix_first_fail": (". Fix the first {mark} above and run {again} again.\n",
                       "。修复上面第一个 {mark}，然后再运行{again}。\n"),
    "stuck": ("  Stuck? `{judge} hint {id}` gives the next hint; the chapter is {chapter}.",
              "  卡住了？`{judge} hint {id}` 给出下一条提示；本章在 {chapter}。"),
    "fix_first_fail_watching": (". Fix the first {mark} above and save: watch judges it again.\n",
                                "。修复上面第一个 {mark} 并保存，watch 会重新评判。\n"),
    "stuck_watching": ("  Stuck? Press h for the next hint; the chapter is {chapter}.",
                       "  卡住了？按 h 看下一条提示；本章在 {chapter}。"),
    "part": ('{chapter}, part "## {part}"', "{chapter} 的「{part}」一节"),

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
    "tests_score": ("your tests: valid, {caught} of {total} known mistakes caught",
                    "自写测试：有效，抓住 {total} 个已知错误中的 {caught} 个"),
    "tests_score_invalid": ("your tests: not valid", "自写测试：无效"),
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
                           "{mark} 你的 {header} 编译不通过，而提示帮不了编译错误：先改掉 "
                           "`{judge} test {id}` 报告的第一个错误，再来要提示。"),
    "lead_stage": ("Stage {number} ({title})", "阶段 {number}（{title}）"),
    "lead_fails": (" is the first stage that fails", "是第一个未通过的阶段"),
    "lead_test": ("; its first failing test is {test}.", "；它第一个失败的测试是 {test}。"),
    "lead_end": (".", "。"),
    "lead_colon": (":", "："),
    "no_hints": ("Stage {number} ({title}) has no hints; {chapter} explains it.",
                 "阶段 {number}（{title}）没有提示；{chapter} 讲解了它。"),
    "last_test_hint_then_stage": ("That was the last hint for {test}; asked again, `hint` gives the hints for "
                                  "the whole stage.",
                                  "这是 {test} 的最后一条提示；再要提示，`hint` 就会给出整个阶段的提示。"),
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
                    "还是卡着？{chapter} 的「任务」一节写明了契约，"
                    "`{judge} test {id} -v` 会显示全部消息。"),

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
    "keys": ("h hint · l list · r run · q quit · t your tests", "h 提示 · l 列表 · r 运行 · q 退出 · t 自写测试"),
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


# The command line's own words, by their English: what argparse says (its gettext messages) and
# the help of the learner's commands and their options, which cli.py writes in English. The
# instructors' and the maintainers' commands are not here: they stay English.
COMMAND_LINE: dict[str, str] = {
    # argparse's own messages
    "usage: ": "用法：",
    "positional arguments": "位置参数",
    "options": "选项",
    "show this help message and exit": "显示本帮助并退出",
    "the following arguments are required: %s": "缺少必需的参数：%s",
    "unrecognized arguments: %s": "无法识别的参数：%s",
    "argument %(argument_name)s: %(message)s": "参数 %(argument_name)s：%(message)s",
    "invalid choice: %(value)r (choose from %(choices)s)": "无效的取值 %(value)r（可选：%(choices)s）",
    "invalid %(type)s value: %(value)r": "%(value)r 不是有效的 %(type)s 值",
    "expected one argument": "后面要跟一个值",
    "expected at most one argument": "后面最多跟一个值",
    "expected at least one argument": "后面至少跟一个值",
    "expected %s argument": "后面要跟 %s 个值",
    "expected %s arguments": "后面要跟 %s 个值",
    "not allowed with argument %s": "不能与 %s 同时使用",
    "one of the arguments %s is required": "%s 必须给出其中一个",
    "ambiguous option: %(option)s could match %(matches)s": "选项 %(option)s 有歧义，可能是 %(matches)s",
    "ignored explicit argument %r": "多余的参数 %r 被忽略",
    "unexpected option string: %s": "意外的选项：%s",

    # the judge's description and the list of commands (cli.py)
    "AllocLab's judge: builds, tests and explains your allocators. Exit status: 0 all good, 1 the judged code "
    "failed, 2 bad usage or a missing toolchain.":
        "AllocLab 的判题器：编译、测试你的分配器，并讲清楚哪里不对。退出码：0 全部通过，1 被评判的代码未通过，"
        "2 用法有误或缺少工具链。",
    "commands": "命令",
    "one of the commands below": "下列命令之一",
    "the learner's commands:": "学习者的命令：",
    "the instructor's commands:": "教师的命令（输出为英文）：",
    "the maintainer's commands:": "维护者的命令（输出为英文）：",
    "the language of the learner's commands: en or zh (default: the locale, the first of LC_ALL, LC_MESSAGES "
    "and LANG that is set; zh_CN.UTF-8 or any zh... means Chinese). The tests' own messages, the compiler's and "
    "the sanitizers' output, --json and --junit, and the instructors' and maintainers' commands stay English":
        "学习者命令使用的语言：en 或 zh（默认看 locale：LC_ALL、LC_MESSAGES、LANG 中第一个有值的；zh_CN.UTF-8 "
        "或任何 zh 开头的值都表示中文）。测试自身的消息、编译器和 sanitizer 的输出、--json 和 --junit，"
        "以及教师和维护者的命令，始终是英文",

    # the learner's commands
    "every exercise in order, with your progress": "按顺序列出全部练习和你的进度",
    "build and run an exercise's staged tests": "编译并运行一个练习的分阶段测试",
    "judge your own tests of an exercise (my_tests.cpp): valid on every correct implementation, and how many known "
    "mistakes they catch": "评判你为一个练习写的测试（my_tests.cpp）：是否在每个正确实现上都通过，又能抓住多少已知错误",
    "judge FILE in place of the exercise's my_tests.cpp": "评判 FILE，而不是本练习的 my_tests.cpp",
    "print one JSON object instead of the report: valid, chaffs_caught, chaffs_total, parts, invalid_tests":
        "输出一个 JSON 对象而不是报告：valid、chaffs_caught、chaffs_total、parts、invalid_tests",
    "the next hint for the first failing test of an exercise (its own hints, then its stage's), one more each "
    "time; --all shows again those you took":
        "给出练习中第一个失败测试的下一条提示（先给这个测试自己的，再给所在阶段的），每次多给一条；--all 重新显示你已看过的提示",
    "show again every hint you have taken for the exercise, stage by stage, and take no new one":
        "按阶段重新显示你在这个练习中已看过的全部提示，不再多给新的",
    "the chapter's self-check: a few questions, each explained once you answer":
        "本章的自测：几道题，答完一题就讲解一题",
    "judge an exercise each time you save it, and move on when it passes":
        "每次保存就重新评判练习，通过后自动进入下一个",
    "put back the untouched skeleton of an exercise (your file is kept as a backup)":
        "把练习恢复成原始骨架（你的文件会留一份备份）",
    "show the reference solution, once your own file has passed": "你自己的文件通过之后，查看参考答案",
    "benchmark your allocator and the reference against real allocators":
        "拿你的分配器和参考答案，跟真实的分配器比一比性能",
    "run a small LLM serving engine built on your allocators: throughput, KV cache, heap allocations, a timeline, "
    "and proof its tokens equal a plain engine's":
        "在你的分配器之上跑一个小型 LLM 推理服务引擎：吞吐、KV Cache、堆分配次数、时间线，"
        "并证明它生成的 token 与朴素引擎完全一致",

    # their options
    "1, 01, arena or 01-arena": "1、01、arena 或 01-arena",
    "1, 01, arena or 01-arena (default: the first not yet passed)": "1、01、arena 或 01-arena（默认：第一个还没通过的练习）",
    "judge the reference solution": "评判参考答案",
    "judge FILE in place of the exercise's header": "用 FILE 代替练习的头文件来评判",
    "clang (clang++, the default), gcc (g++), any C++ compiler on PATH such as clang++-19, or all (both)":
        "clang（clang++，默认）、gcc（g++）、PATH 上的任意 C++ 编译器（如 clang++-19），或 all（两个都用）",
    "clang (clang++, the default), gcc (g++), any C++ compiler on PATH such as clang++-19":
        "clang（clang++，默认）、gcc（g++），或 PATH 上的任意 C++ 编译器（如 clang++-19）",
    "build and run stage N only": "只编译、运行阶段 N",
    "the seed of the model stage's random call sequences (default: a fixed one, so that every run shows the same "
    "sequence)": "对照模型阶段随机调用序列的种子（默认是固定的，每次运行看到的序列都一样）",
    "print one JSON object instead of the report (judge/schemas/verdict.schema.json describes it)":
        "不打印报告，改为输出一个 JSON 对象（格式见 judge/schemas/verdict.schema.json；内容为英文）",
    "also write the results to FILE as JUnit XML, for CI services and autograders (judge/schemas/junit.xsd "
    "describes it)": "另外把结果以 JUnit XML 写入 FILE，供 CI 和自动评分系统使用（格式见 judge/schemas/junit.xsd）",
    "every test's messages and raw sanitizer reports": "显示每个测试的全部消息和 sanitizer 的原始报告",
    "show it even though your file has not passed yet; this is noted in your progress file":
        "文件还没通过也照样显示；这会记在你的进度文件里",
    "only benchmarks whose name matches this regular expression": "只跑名字匹配这个正则表达式的基准测试",
    "seconds each repetition of a benchmark runs at least (default 0.04)": "每个基准测试每轮至少运行的秒数（默认 0.04）",
    "runs of each benchmark; the median is shown with the spread (default 5)":
        "每个基准测试运行的轮数；显示中位数及其离散度（默认 5）",
    "the requests to serve: chat (the default: hundreds of chat requests arriving over time, sharing a few system "
    "prompts) or tiny (a handful, in seconds)":
        "要服务的请求：chat（默认：陆续到达的几百个聊天请求，共用几个系统提示词）或 tiny（寥寥几个，几秒跑完）",
    "yours (the default): your header for every exercise that has passed, the reference for the others; "
    "reference: the references only":
        "yours（默认）：已通过的练习用你的头文件，其余用参考答案；reference：全部用参考答案",
    "the KV block manager: prefix (the default: paged, with prefix caching), paged (caching off), reserve (a "
    "request's every block taken at admission, as before paging) or virtual (exercise 08's contiguous KV cache "
    "on the same bytes)":
        "KV 块管理器：prefix（默认：分页，带前缀缓存）、paged（不开缓存）、reserve（准入时就拿走请求可能用到的"
        "全部块，分页出现之前的做法）或 virtual（练习 08 的连续 KV Cache，物理字节数相同）",
    "serve the trace with reserve, paged, prefix and virtual on the same KV budget and set them side by side":
        "用同样的 KV 预算，分别以 reserve、paged、prefix、virtual 服务同一个 trace，并排对比",
    "print the figures as one JSON object (with --compare, a list of one per manager)":
        "以一个 JSON 对象输出各项数据（加 --compare 时输出列表，每个管理器一项）",
    "where to draw timeline.svg (default build/serve)": "timeline.svg 写到哪个目录（默认 build/serve）",
    "serve each manager N times, in turn, and show each by its median run (default: 3 with --compare, else 1)":
        "每个管理器轮流服务 N 次，各取中位数那一次展示（默认：加 --compare 时为 3，否则为 1）",
    "serve the four managers over KV budgets from the smallest reserve can run at to 4 times that, and draw "
    "tokens/s against the budget (sweep.svg)":
        "让四个管理器在一系列 KV 预算下服务：从 reserve 能跑通的最小预算到它的 4 倍，画出 tokens/s 随预算的"
        "变化（sweep.svg）",
    "the KV budget, in blocks (default: the smallest that reserve can serve the trace with)":
        "KV 预算，以块计（默认：reserve 能服务完这个 trace 的最少块数）",
    "the trace's seed (default 7): other requests, of the same shape": "trace 的种子（默认 7）：换一批形态相同的请求",
    "serve with FILE in place of exercise 07's header (kv_cache_manager.hpp), whether it has passed or not: to see "
    "what the engine makes of any manager":
        "用 FILE 代替练习 07 的头文件（kv_cache_manager.hpp）来服务，不管它通过与否：看看引擎在任意管理器上"
        "跑出什么结果",
    "default (the model of the chapter's figures) or tiny (a toy model: the same trace in seconds, for a quick "
    "check of tokens and leaks)":
        "default（本章图表所用的模型）或 tiny（玩具模型：同样的 trace 几秒跑完，用来快速检查 token 和泄漏）",
}


# The rows of `serve`'s table, by their English label (learner/serve.py's ROWS).
SERVE_ROWS: dict[str, str] = {
    "requests": "请求数",
    "generated tokens": "生成的 token 数",
    "tokens/s": "tokens/s",
    "mean batch": "平均 batch",
    "peak running": "运行中请求峰值",
    "preemptions": "抢占次数",
    "prefix hit rate": "前缀命中率",
    "KV utilization": "KV 利用率",
    "copies": "复制次数",
    "device mallocs": "设备 malloc 次数",
    "map / unmap calls/step": "每步映射 / 解除映射",
    "minor page faults/step": "每步 minor page fault",
    "KV bytes committed: peak": "KV 已提交字节：峰值",
    "  after the run": "  运行结束后",
    "  after sleep": "  sleep 之后",
    "heap allocations/step": "每步堆分配",
    "  the engine's own": "  引擎自身",
    "  the KV cache manager's": "  KV Cache 管理器",
    "    the reference's": "    参考答案的",
    "  the other allocators'": "  其他分配器",
    "  the plain engine's": "  朴素引擎",
    "TTFT, steps (med/p99)": "TTFT，步（中位/p99）",
    "TTFT, ms (med/p99)": "TTFT，ms（中位/p99）",
    "TPOT, steps (med/p99)": "TPOT，步（中位/p99）",
    "TPOT, ms (med/p99)": "TPOT，ms（中位/p99）",
    "prefill / decode time": "prefill / decode 时间",
    "decode: GB/s (of peak)": "decode：GB/s（占峰值）",
    "decode: GFLOP/s (of peak)": "decode：GFLOP/s（占峰值）",
    "tokens = plain engine's": "token 与朴素引擎一致",
    "blocks held at the end": "结束时仍占用的块",
    "paged ÷ reserve, tokens/s": "paged ÷ reserve，tokens/s",
    "prefix ÷ paged, tokens/s": "prefix ÷ paged，tokens/s",
    "virtual ÷ paged, tokens/s": "virtual ÷ paged，tokens/s",
    "paged KV utilization": "paged 的 KV 利用率",
    "{manager}: heap allocations per step ÷ the plain engine's": "{manager}：每步堆分配 ÷ 朴素引擎的",
}


def row_label(english: str) -> str:
    """A label of `serve`'s table in the learner's language; `paged: ...` is found as `{manager}: ...`."""
    if language() != "zh" or english in SERVE_ROWS:
        return SERVE_ROWS.get(english, english) if language() == "zh" else english
    manager, colon, rest = english.partition(": ")
    chinese = SERVE_ROWS.get("{manager}: " + rest)
    return chinese.format(manager=manager) if colon and chinese else english

