"""What `serve` judges of a learner's code, and what it only measures.

A block manager decides which requests fit in the KV budget, and so the batch the scheduler can
form, how full the blocks it hands out are, how often a request must be preempted and computed
again, and (with prefix caching) how much of the prompts' prefill it saves. On a given trace and
budget those figures are exact: every run makes the same steps, on any machine. So `serve
--compare` judges them, each against the figures of exercise 07's reference manager on the same
trace, model, seed and budget (`manager_checks`), and a ✗ means the learner's manager decided
worse than the reference. Exercise 08's `virtual` manager serves on the same physical bytes as
`paged`, and is judged against it (`virtual_checks`): its KV utilization, and sleep, which must
leave nothing committed.

Tokens per second are the machine's as much as the manager's: paging's gain is a larger batch,
which pays only while a decode step is bound by reading the weights from memory, and a loaded
machine slows whichever run it meets. They are measured, never judged: each ratio comes with the
spread of the interleaved runs, the machine's load while they ran (`Load`), what the roofline of
this machine (its measured bandwidth and FLOP rate) expects of the ratio (`roofline_rate`), and
the words "too noisy to judge" when one manager's runs overlap the other's (`speed`).

Also here: what the kit's allocators did in a run (`allocator_lines`), told to a learner who
has written them, and the words of all of it in English and in Chinese. Pure functions of the
engine's JSON objects, so that the selftests prove them without building anything."""
from __future__ import annotations

import os
import statistics
from dataclasses import dataclass

from ..model import words

# How far a learner's manager may fall behind the reference's figure before it is marked ✗. The
# figures are exact, so a manager that follows the contract matches the reference; the margins
# leave room for a legitimate difference of detail (which block an eviction picks among equals).
BATCH_SHARE = 0.97          # mean batch: at least 97 % of the reference's
UTILIZATION_POINTS = 0.02   # KV utilization: at most 2 points below
PREEMPTION_SLACK = 0.10     # preemptions: at most 10 % more than the reference's, and 2 more
HIT_POINTS = 0.02           # prefix hit rate: at most 2 points below (prefix manager only)
PREFILL_SHARE = 1.03        # prompt tokens computed: at most 3 % more

# The figures a block manager decides, as the engine's JSON names them (prefill_tokens lives in
# time_split): what `reference_figures` keeps of the reference's run.
MANAGED = ("mean_batch", "peak_running", "kv_utilization", "preemptions", "prefix_hit_rate", "prefill_tokens")


def reference_figures(result: dict) -> dict:
    """The figures of `result` that its block manager decides."""
    figures = {key: result[key] for key in MANAGED if key in result}
    figures["prefill_tokens"] = result["time_split"]["prefill_tokens"]
    return figures


@dataclass(frozen=True)
class Check:
    """One figure of a learner's manager against the reference's: `met` when it is no worse
    than the reference's, within the margin above."""
    what: str          # a key of MANAGED, or committed_after_sleep_bytes
    mine: float
    reference: float
    met: bool
    against: str = ""  # what `reference` is, when it is not the reference manager's: a manager, or "target"


def manager_checks(manager: str, mine: dict, reference: dict) -> list[Check]:
    """The figures that `manager` ("paged" or "prefix", exercise 07's manager) decided in the run
    `mine`, each against `reference` (reference_figures of the reference manager's run on the
    same trace, model, seed and budget). The hit rate is judged only with prefix caching on."""
    got = reference_figures(mine)
    checks = [
        Check("mean_batch", got["mean_batch"], reference["mean_batch"],
              got["mean_batch"] >= reference["mean_batch"] * BATCH_SHARE),
        Check("kv_utilization", got["kv_utilization"], reference["kv_utilization"],
              got["kv_utilization"] >= reference["kv_utilization"] - UTILIZATION_POINTS),
        Check("preemptions", got["preemptions"], reference["preemptions"],
              got["preemptions"] <= reference["preemptions"] * (1 + PREEMPTION_SLACK) + 2),
    ]
    if manager == "prefix":
        checks.append(Check("prefix_hit_rate", got["prefix_hit_rate"], reference["prefix_hit_rate"],
                            got["prefix_hit_rate"] >= reference["prefix_hit_rate"] - HIT_POINTS))
    checks.append(Check("prefill_tokens", got["prefill_tokens"], reference["prefill_tokens"],
                        got["prefill_tokens"] <= reference["prefill_tokens"] * PREFILL_SHARE))
    return checks


def virtual_checks(mine: dict, paged: dict | None) -> list[Check]:
    """What the `virtual` manager (exercise 08's contiguous cache) decided in the run `mine`: its
    KV utilization against `paged`'s run on the same trace, model, seed and physical budget (when
    there is one), within the margin of exercise 07's, and the bytes left committed after sleep,
    which must be none."""
    checks = []
    if paged is not None:
        checks.append(Check("kv_utilization", mine["kv_utilization"], paged["kv_utilization"],
                            mine["kv_utilization"] >= paged["kv_utilization"] - UTILIZATION_POINTS, "paged"))
    after = mine["memory"]["committed_after_sleep_bytes"]
    checks.append(Check("committed_after_sleep_bytes", after if after is not None else -1, 0, after == 0, "target"))
    return checks


# ---- tokens per second: measured, not judged ---------------------------------------------

@dataclass(frozen=True)
class Speed:
    """One manager's tokens/s over another's (`over` ÷ `under`)."""
    ratio: float | None               # of the medians
    band: tuple[float, float] | None  # the least and greatest ratio, run pair by run pair
    noisy: bool | None                # the two managers' runs overlap: which is faster is not known; None with one run each
    expected: float | None            # what the roofline of this machine expects of the ratio


def runs_of(result: dict) -> list[float]:
    return list(result.get("runs_tokens_per_second") or [result["tokens_per_second"]])


def overlap(a: list[float], b: list[float]) -> bool:
    """Whether the range of the runs `a` meets the range of the runs `b`."""
    return max(min(a), min(b)) <= min(max(a), max(b))


def speed(over: dict, under: dict, ceilings: tuple[float, float] | None = None) -> Speed:
    """`over` ÷ `under`; the roofline's expectation at `ceilings` (bandwidth, FLOP rate), by
    default the best the two measured."""
    a, b = runs_of(over), runs_of(under)
    ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else None
    pairs = [x / y for x, y in zip(a, b) if y]
    band = (min(pairs), max(pairs)) if len(pairs) > 1 else None
    noisy = overlap(a, b) if len(a) > 1 and len(b) > 1 else None
    ceilings = ceilings or peaks([over, under])
    expected_over, expected_under = roofline_rate(over, ceilings), roofline_rate(under, ceilings)
    expected = expected_over / expected_under if expected_over and expected_under else None
    return Speed(ratio, band, noisy, expected)


def peaks(results: list[dict]) -> tuple[float, float] | None:
    """This machine's bandwidth and FLOP rate: the best each run measured, since a measurement can
    only be slowed by the machine's other work, never sped up. One pair for every manager, so
    that their ceilings differ by their batches alone."""
    roofs = [r["roofline"] for r in results if r.get("roofline")]
    if not roofs or not all(r["peak_bytes_per_second"] and r["peak_flops_per_second"] for r in roofs):
        return None
    return max(r["peak_bytes_per_second"] for r in roofs), max(r["peak_flops_per_second"] for r in roofs)


def roofline_rate(result: dict, ceilings: tuple[float, float] | None) -> float | None:
    """The decode tokens per second the roofline allows the run's decode-only steps: each step
    takes at least its bytes over the bandwidth and its FLOPs over the FLOP rate (`ceilings`),
    whichever is longer, and yields one token per row. A ceiling that no real step reaches
    (attention, the sampler and the scheduler cost time too), but the ratio of two managers'
    ceilings says what the machine lets their batches buy."""
    r = result.get("roofline")
    if not r or not r.get("rows_per_decode_step") or ceilings is None:
        return None
    seconds = max(r["bytes_per_decode_step"] / ceilings[0], r["flops_per_decode_step"] / ceilings[1])
    return r["rows_per_decode_step"] / seconds if seconds > 0 else None


def turning_batch(result: dict, ceilings: tuple[float, float] | None) -> float | None:
    """The rows per decode step past which this machine computes longer than it reads: the
    batch where a decode step turns from memory-bound to compute-bound, and a larger batch
    stops being nearly free."""
    r = result.get("roofline")
    if not r or not r.get("rows_per_decode_step") or not r["flops_per_decode_step"] or ceilings is None:
        return None
    flops_per_row = r["flops_per_decode_step"] / r["rows_per_decode_step"]
    return r["bytes_per_decode_step"] / ceilings[0] * ceilings[1] / flops_per_row


@dataclass(frozen=True)
class Load:
    """The machine's 1-minute load average before and after the runs, and its cores."""
    before: float
    after: float
    cores: int

    @property
    def busy(self) -> bool:
        """Other work wanted more than the cores the engine left free (its two threads take
        turns, so it keeps one core busy, and counts in the load itself)."""
        return max(self.before, self.after) > self.cores

    def as_json(self) -> dict:
        return {"load_before": round(self.before, 2), "load_after": round(self.after, 2), "cores": self.cores}


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def measured_load(before: float | None, after: float | None) -> Load | None:
    if before is None or after is None:
        return None
    return Load(before, after, os.cpu_count() or 1)


# ---- the words ----------------------------------------------------------------------------

WORDS = {
    "en": {
        "mean_batch": "mean batch", "kv_utilization": "KV utilization", "preemptions": "preemptions",
        "prefix_hit_rate": "prefix hit rate", "prefill_tokens": "prompt tokens computed",
        "judged_title": "What your manager decided, against the reference's on the same trace and budget "
                        "(exact on any machine):",
        "reference_title": "What the manager decided (the reference; exact on any machine):",
        "check_line": "{manager} {what}: {mine} (reference {reference})",
        "check_line_against": "{manager} {what}: {mine} ({against} {reference})",
        "committed_after_sleep_bytes": "bytes committed after sleep", "target": "target",
        "virtual_title": "What the virtual manager decided, against paged on the same physical bytes, and its sleep "
                         "(exact on any machine):",
        "worse": {"mean_batch": "a smaller batch: fewer requests fit in the same KV blocks",
                  "kv_utilization": "more of the blocks handed out hold no token",
                  "preemptions": "more requests sent back to be computed again",
                  "prefix_hit_rate": "fewer prompt tokens found in the cache",
                  "prefill_tokens": "more prompt tokens computed",
                  "committed_after_sleep_bytes": "sleep left memory committed, which it must give back whole"},
        "speed_title": "Tokens per second: measured, not judged (they follow the machine and its load):",
        "speed_line": "{what}: {ratio} on the medians",
        "band": ", {low:.2f}–{high:.2f} run by run",
        "noisy": "too noisy to judge: the runs of the two managers overlap",
        "clear": "the runs do not overlap",
        "single": "one run each: serve more (--repeat) to see the spread",
        "expected": "; from the batches alone, this machine's roofline of a decode step allows up to {:.2f}× "
                    "(time saved elsewhere, such as prefill a prefix cache skips, is not in it)",
        "machine": "This machine, the best of the runs: {bw:.1f} GB/s read from memory and {flops:.0f} GFLOP/s of the "
                   "engine's matmul, so a "
                   "decode step turns compute-bound at about {turn:.0f} rows; the batches here: {batches}.",
        "load": "Load: a 1-minute load average of {before:.1f} before the runs and {after:.1f} after, on {cores} cores.",
        "busy": " Other programs shared the cores: the tokens/s, and this machine's ceilings measured beside them, "
                "measure the load as much as the managers.",
        "ratio_depends": "The ratio depends on the machine (how far a decode step stays bound by memory as its "
                         "batch grows) and on its load, not on your code: a ✗ marks only what your manager decides.",
        "allocators_title": "What your allocators did in this run:",
        "allocators_reference_title": "What the kit's allocators (the references) did in this run:",
        "arena": "01 arena: handed out {per_step:.0f} arrays a step ({arrays} in all) for the step's metadata and was "
                 "reset {resets} times, once a step; at most {peak} of its {capacity} used",
        "pool": "02 pool: created {created} sequence objects (arrivals and forks), at most {live} alive at once; "
                "{heap} heap allocations for its chunks",
        "block_pool": "03 block pool: counted the references of {blocks} KV blocks; at most {used} in use at once",
        "caching": "04 caching allocator: handed out the activations of {steps} steps and asked its device {mallocs} "
                   "times; at most {reserved} reserved",
        "aligned": "05 aligned allocator: {weights} of weights and a KV buffer of {kv} in 64-byte rows; "
                   "ArenaResource: the step's lists took at most {lists} of its buffer, {spilled} spilled upstream",
        "ring": "06 ring: carried {steps} steps' inputs, {bytes} in all, at most {peak} a step, in a ring of {capacity}",
        "manager": "07 KV cache manager: {hits} of prompt tokens found cached, {copies} copies on write, "
                   "{evictions} cached blocks evicted, {preemptions} preemptions",
        "virtual": "08 virtual memory: {maps} granules mapped and {unmaps} unmapped a step, {copies} partly filled "
                   "granules copied at fork, at most {peak} committed, {after} after the run, {slept} after sleep",
        "verdict_title": "The verdict:",
        "figures_title": "Everything the run measured:",
        "first_build": "The first build compiles the engine and every allocator: about a minute on two cores "
                       "(longer when the machine is busy); later runs rebuild only what changed.",
    },
    "zh": {
        "mean_batch": "平均 batch", "kv_utilization": "KV 利用率", "preemptions": "抢占次数",
        "prefix_hit_rate": "前缀命中率", "prefill_tokens": "计算的 prompt token 数",
        "judged_title": "你的管理器做出的决定，与参考实现在同一 trace、同一预算下的比较（在任何机器上都精确）：",
        "reference_title": "管理器做出的决定（参考实现；在任何机器上都精确）：",
        "check_line": "{manager} {what}：{mine}（参考实现 {reference}）",
        "check_line_against": "{manager} {what}：{mine}（{against} {reference}）",
        "committed_after_sleep_bytes": "sleep 之后仍提交的字节", "target": "目标",
        "virtual_title": "virtual 管理器做出的决定，与 paged 在同样的物理字节上的比较，以及它的 sleep（在任何机器上都精确）：",
        "worse": {"mean_batch": "batch 更小：同样的 KV 块装下的请求更少",
                  "kv_utilization": "分出去的块里有更多位置没有存 token",
                  "preemptions": "更多请求被送回去重新计算",
                  "prefix_hit_rate": "在缓存里找到的 prompt token 更少",
                  "prefill_tokens": "计算的 prompt token 更多",
                  "committed_after_sleep_bytes": "sleep 之后仍有内存处于提交状态，而它应当全部归还"},
        "speed_title": "每秒 token 数：只测量，不评判（它随机器和机器的负载而变）：",
        "speed_line": "{what}：中位数之比 {ratio}",
        "band": "，逐次运行为 {low:.2f}–{high:.2f}",
        "noisy": "噪声太大，无法评判：两个管理器的各次运行互相重叠",
        "clear": "各次运行没有重叠",
        "single": "每个管理器只运行了一次：多运行几次（--repeat）才能看到波动",
        "expected": "；仅就 batch 而言，按这台机器上 decode 步的 roofline 最多可达 {:.2f}×"
                    "（其他地方省下的时间，例如前缀缓存跳过的 prefill，不计在内）",
        "machine": "这台机器（各次运行中最好的一次）：内存读取 {bw:.1f} GB/s，引擎的矩阵乘法 {flops:.0f} GFLOP/s，所以 decode 步在约 {turn:.0f} "
                   "行时转为受计算限制；这里的 batch：{batches}。",
        "load": "负载：运行前 1 分钟平均负载 {before:.1f}，运行后 {after:.1f}，共 {cores} 个核。",
        "busy": "其他程序也在用这些核：每秒 token 数以及同时测得的本机上限，反映的既是管理器，也是负载。",
        "ratio_depends": "这个比值取决于机器（batch 变大时 decode 步能在多大范围内仍受内存限制）和它的负载，"
                         "而不取决于你的代码：✗ 只标在你的管理器所决定的数字上。",
        "allocators_title": "你的分配器在这次运行中做了什么：",
        "allocators_reference_title": "本套件的分配器（参考实现）在这次运行中做了什么：",
        "arena": "01 arena：每步分出 {per_step:.0f} 个数组（共 {arrays} 个）存放这一步的元数据，reset 了 {resets} 次，"
                 "每步一次；最多用到容量 {capacity} 中的 {peak}",
        "pool": "02 对象池：创建了 {created} 个序列对象（到达的请求和 fork），同时存活最多 {live} 个；"
                "为它的 chunk 做了 {heap} 次堆分配",
        "block_pool": "03 块池：管理 {blocks} 个 KV 块的引用计数；同时使用最多 {used} 个",
        "caching": "04 缓存分配器：为 {steps} 步分出激活值，向设备申请了 {mallocs} 次；最多预留 {reserved}",
        "aligned": "05 对齐分配器：{weights} 的权重和 {kv} 的 KV 缓冲区，按 64 字节对齐的行存放；"
                   "ArenaResource：每步的列表最多用了缓冲区的 {lists}，溢出到上游 {spilled}",
        "ring": "06 环形分配器：传送了 {steps} 步的输入，共 {bytes}，每步最多 {peak}，环的大小 {capacity}",
        "manager": "07 KV Cache 管理器：prompt token 中 {hits} 在缓存中找到，写时复制 {copies} 次，"
                   "驱逐已缓存的块 {evictions} 个，抢占 {preemptions} 次",
        "virtual": "08 虚拟内存：每步映射 {maps} 个 granule、解除映射 {unmaps} 个，fork 时复制未写满的 granule {copies} 个，"
                   "提交的内存最多 {peak}，运行结束后 {after}，sleep 之后 {slept}",
        "verdict_title": "结论：",
        "figures_title": "这次运行测得的全部数字：",
        "first_build": "第一次构建要编译引擎和所有分配器：在两个核上约需一分钟（机器忙时更久）；之后只重新构建改动过的部分。",
    },
}


def say(key: str, **fields) -> str:
    text = WORDS[words.language()][key]
    return text.format(**fields) if fields else text


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _figure(what: str, value: float) -> str:
    if what == "committed_after_sleep_bytes":
        return "—" if value < 0 else _bytes(value)   # -1: the run never slept
    if what in ("kv_utilization", "prefix_hit_rate"):
        return f"{value * 100:.1f} %"
    if what == "mean_batch":
        return f"{value:.2f}"
    return f"{value:,.0f}"


def check_lines(manager: str, checks: list[Check], mark) -> list[str]:
    """Each check as a line, `mark(met)` before it, and why a ✗ matters after it."""
    w = WORDS[words.language()]
    out = []
    for c in checks:
        line = f"{mark(c.met)} " + w["check_line_against" if c.against else "check_line"].format(
            manager=manager, what=w[c.what], mine=_figure(c.what, c.mine), reference=_figure(c.what, c.reference),
            against=w.get(c.against, c.against))
        out.append(line + ("" if c.met else (": " if words.language() == "en" else "：") + w["worse"][c.what]))
    return out


def speed_line(what: str, s: Speed) -> str:
    """A tokens/s ratio as a measurement: its value, its spread, whether the runs tell the two
    managers apart, and what the roofline expects."""
    w = WORDS[words.language()]
    ratio = "—" if s.ratio is None else f"{s.ratio:.2f}×"
    text = w["speed_line"].format(what=what, ratio=ratio)
    if s.band:
        text += w["band"].format(low=s.band[0], high=s.band[1])
    text += ("; " if words.language() == "en" else "；") + (w["single"] if s.noisy is None else
                                                              w["noisy"] if s.noisy else w["clear"])
    if s.expected:
        text += w["expected"].format(s.expected)
    return text


def machine_line(results: dict[str, dict]) -> str | None:
    """What this machine can do, and where its decode steps turn compute-bound, beside the
    managers' batches."""
    ceilings = peaks(list(results.values()))
    turn = turning_batch(next(iter(results.values())), ceilings)
    if turn is None:
        return None
    batches = ", ".join(f"{m} {res['roofline']['rows_per_decode_step']:.1f}" for m, res in results.items()
                        if res.get("roofline") and res["roofline"].get("rows_per_decode_step"))
    return say("machine", bw=ceilings[0] / 1e9, flops=ceilings[1] / 1e9, turn=turn, batches=batches)


def load_line(load: Load | None) -> str | None:
    if load is None:
        return None
    return say("load", before=load.before, after=load.after, cores=load.cores) + (say("busy") if load.busy else "")


def allocator_lines(result: dict, exercises: list[str]) -> list[str]:
    """What each allocator did in the run, one line each, for the exercises `exercises` (their
    two-digit numbers, the learner's headers; all of them when the references served)."""
    a = result.get("allocators")
    if not a:
        return []
    t = result["timeline"]
    steps = max(a["arena_resets"], 1)
    used = max((result["kv_blocks"] - free for free in t["free_blocks"]), default=0)
    hits = result["prefix_hit_rate"]
    lines = {
        "01": say("arena", per_step=a["arena_arrays"] / steps, arrays=f"{a['arena_arrays']:,}",
                  resets=f"{a['arena_resets']:,}", peak=_bytes(a["arena_peak_bytes"]),
                  capacity=_bytes(a["arena_capacity_bytes"])),
        "02": say("pool", created=f"{a['pool_created']:,}", live=a["pool_peak_live"],
                  heap=f"{a['pool_heap_allocations']:,}"),
        "03": say("block_pool", blocks=f"{result['kv_blocks']:,}", used=f"{used:,}"),
        "04": say("caching", steps=f"{result['steps']:,}", mallocs=result["device_mallocs"],
                  reserved=_bytes(max(t["reserved_bytes"], default=0))),
        "05": say("aligned", weights=_bytes(result["model"].get("weight_bytes", 0)), kv=_bytes(a["kv_buffer_bytes"]),
                  lists=_bytes(a["step_lists_peak_bytes"]), spilled=_bytes(a["step_lists_upstream_bytes"])),
        "06": say("ring", steps=f"{result['steps']:,}", bytes=_bytes(a["ring_bytes"]),
                  peak=_bytes(a["ring_peak_step_bytes"]), capacity=_bytes(a["ring_capacity_bytes"])),
        "07": say("manager", hits=f"{hits * 100:.1f} %", copies=f"{result['copies']:,}",
                  evictions=f"{a['evictions']:,}", preemptions=f"{result['preemptions']:,}"),
    }
    if result["manager"] in ("reserve", "virtual"):
        del lines["07"]   # the kit's own reserving manager served, or exercise 08's cache: not exercise 07's
    if result["manager"] == "virtual":
        del lines["03"]   # nor does it count blocks in exercise 03's pool: its granules are exercise 08's
        m = result["memory"]
        lines["08"] = say("virtual", maps=f"{m['map_calls_per_step']:.2f}", unmaps=f"{m['unmap_calls_per_step']:.2f}",
                          copies=f"{result['copies']:,}", peak=_bytes(m["committed_peak_bytes"]),
                          after=_bytes(m["committed_after_bytes"]),
                          slept="—" if m["committed_after_sleep_bytes"] is None else _bytes(m["committed_after_sleep_bytes"]))
    return [lines[e] for e in exercises if e in lines]


# A few words of meaning for each figure `serve` prints, by its label in serve.ROWS.
MEANINGS = {
    "requests": ("requests in the trace", "trace 中的请求数"),
    "generated tokens": ("tokens generated, every sample counted", "生成的 token 数，每个样本都计入"),
    "tokens/s": ("generated per second: the machine's and its load's as much as the code's",
                 "每秒生成数：既取决于代码，也取决于机器和负载"),
    "mean batch": ("sequences per step: more share one read of the weights", "每步的序列数：越多，越多序列分摊一次权重读取"),
    "peak running": ("the most sequences running at once", "同时运行的序列最多有几个"),
    "preemptions": ("sequences sent back to be computed again for lack of blocks", "因为没有块而被送回去重算的序列"),
    "prefix hit rate": ("share of prompt tokens whose KV was found cached", "在缓存里找到 KV 的 prompt token 所占比例"),
    "KV utilization": ("share of the handed-out blocks' slots that hold a token", "分出去的块里存有 token 的位置所占比例"),
    "copies": ("KV blocks copied (copy-on-write, or reserve's full copies)", "复制的 KV 块（写时复制，或 reserve 的整份复制）"),
    "device mallocs": ("times the caching allocator asked its device", "缓存分配器向设备申请内存的次数"),
    "map / unmap calls/step": ("granules mapped and unmapped in a steady step (virtual alone maps)",
                               "稳定状态下每步映射和解除映射的 granule 数（只有 virtual 会映射）"),
    "minor page faults/step": ("pages touched for the first time in a steady step, the whole process's",
                               "稳定状态下每步第一次被访问的页数，整个进程的"),
    "KV bytes committed: peak": ("the most memory the system committed to the KV cache",
                                 "系统为 KV Cache 提交的内存的最大值"),
    "  after the run": ("once every request is done (virtual keeps idle granules for reuse)",
                        "所有请求完成之后（virtual 留着空闲的 granule 以备重用）"),
    "  after sleep": ("virtual's sleep gives every granule back: none may stay", "virtual 的 sleep 归还所有 granule：一个字节都不能留"),
    "heap allocations/step": ("calls of operator new in a steady step", "稳定状态下每步调用 operator new 的次数"),
    "  the engine's own": ("the scheduler, inputs, runner and metrics", "调度器、输入、执行器和统计"),
    "  the KV cache manager's": ("exercise 07's calls (08's under virtual)", "练习 07 的调用（virtual 下为练习 08 的）"),
    "    the reference's": ("the reference manager's, same trace and budget", "参考管理器的，同一 trace 和预算"),
    "  the other allocators'": ("the sequence pool and the caching allocator growing", "序列池和缓存分配器的增长"),
    "  the plain engine's": ("std::vector for everything, for comparison", "处处用 std::vector 的朴素引擎，用作对照"),
    "TTFT, steps (med/p99)": ("time to first token, in steps", "首 token 时间，以步计"),
    "TTFT, ms (med/p99)": ("time to first token, in milliseconds", "首 token 时间，以毫秒计"),
    "TPOT, steps (med/p99)": ("steps per output token after the first", "第一个之后每个输出 token 用的步数"),
    "TPOT, ms (med/p99)": ("milliseconds per output token after the first", "第一个之后每个输出 token 用的毫秒数"),
    "prefill / decode time": ("seconds of prompt steps and of decode-only steps", "计算 prompt 的步与只做 decode 的步各用的秒数"),
    "decode: GB/s (of peak)": ("memory read by decode steps, against this machine's peak", "decode 步读取内存的速率，与本机峰值相比"),
    "decode: GFLOP/s (of peak)": ("arithmetic of decode steps, against this machine's peak", "decode 步的计算速率，与本机峰值相比"),
    "tokens = plain engine's": ("the proof that no request read another's KV", "证明没有请求读到别人的 KV"),
    "blocks held at the end": ("blocks the manager kept once every request was done", "所有请求结束后管理器仍持有的块"),
}


def meaning(label: str) -> str:
    pair = MEANINGS.get(label)
    return "" if pair is None else pair[words.language() == "zh"]
