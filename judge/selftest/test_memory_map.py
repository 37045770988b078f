"""The memory map draws a snapshot to scale, as valid SVG, and refuses a broken snapshot."""
import json
import re
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from lab.learner import memory_map

MiB = 1 << 20
SVG = "{http://www.w3.org/2000/svg}"
SNAPSHOT = {
    "workload": "w",
    "stats": {"allocated_bytes": 3 * MiB, "reserved_bytes": 22 * MiB, "peak_allocated_bytes": 3 * MiB,
              "peak_reserved_bytes": 22 * MiB, "device_mallocs": 2, "device_frees": 0, "cache_hits": 5,
              "oom_retries": 0},
    "segments": [
        {"base": 4096, "size": 20 * MiB, "small_pool": False,
         "blocks": [[0, 2 * MiB, True], [2 * MiB, 18 * MiB, False]]},
        {"base": 0, "size": 2 * MiB, "small_pool": True,
         "blocks": [[0, MiB, True], [MiB, MiB, False]]},
    ],
}


def blocks(root):
    """The block rectangles, as (x, width, fill), in document order."""
    return [(float(r.get("x")), float(r.get("width")), r.get("fill")) for r in root.iter(SVG + "rect")
            if r.find(SVG + "title") is not None]


class MemoryMapTest(unittest.TestCase):
    def setUp(self):
        self.root = ET.fromstring(memory_map.svg(memory_map.parse(json.dumps(SNAPSHOT)), "a <title> & more"))

    def test_is_valid_svg_with_a_white_background_and_a_viewbox(self):
        self.assertEqual(self.root.tag, SVG + "svg")
        self.assertTrue(self.root.get("viewBox", "").startswith("0 0 "))
        first = next(self.root.iter(SVG + "rect"))
        self.assertEqual(first.get("fill"), "#ffffff")
        self.assertIn("a <title> & more", "".join(self.root.itertext()))

    def test_blocks_are_drawn_to_one_scale_with_the_small_pool_first(self):
        drawn = blocks(self.root)
        self.assertEqual(len(drawn), 4)
        (x0, small_used, c0), (x1, small_free, c1), (x2, large_used, c2), (x3, large_free, c3) = drawn
        self.assertAlmostEqual(small_used, small_free)
        self.assertAlmostEqual(large_used, 2 * small_used)      # 2 MiB against 1 MiB, on one scale
        self.assertAlmostEqual(large_free, 18 * small_used)
        self.assertAlmostEqual(x1 - x0, small_used)             # a block starts where the one before ends
        self.assertEqual((c0, c1), (c2, c3))                    # allocated, then free: two colours
        self.assertNotEqual(c0, c1)

    def test_pools_and_stats_are_labelled(self):
        text = " ".join(self.root.itertext())
        self.assertIn("Small pool", text)
        self.assertIn("Large pool", text)
        self.assertIn("allocated 3 MiB of reserved 22 MiB", text)
        self.assertIn("7.33 bytes reserved per byte allocated", text)
        self.assertIn("largest free block 18 MiB", text)

    def test_pending_blocks_have_their_own_fill_and_legend(self):
        self.assertNotIn("pending", " ".join(self.root.itertext()))   # no pending block, no legend entry
        seg = {"base": 0, "size": 2 * MiB, "small_pool": True,
               "blocks": [[0, MiB // 2, False, True], [MiB // 2, MiB // 2, True, False], [MiB, MiB, False, False]]}
        root = ET.fromstring(memory_map.svg(memory_map.parse(json.dumps(dict(SNAPSHOT, segments=[seg]))), "t"))
        (_, _, pending), (_, _, allocated), (_, _, free) = blocks(root)
        self.assertEqual(len({pending, allocated, free}), 3)
        text = " ".join(root.itertext())
        self.assertIn("pending: freed, waiting for another stream", text)
        self.assertIn("largest free block 1 MiB; 0.5 MiB pending", text)   # a pending block is not free

    def test_an_empty_snapshot_says_so(self):
        empty = dict(SNAPSHOT, segments=[], stats=dict(SNAPSHOT["stats"], allocated_bytes=0, reserved_bytes=0))
        root = ET.fromstring(memory_map.svg(memory_map.parse(json.dumps(empty)), "t"))
        text = " ".join(root.itertext())
        self.assertIn("nothing was reserved", text)
        self.assertNotIn("to scale", text)

    def test_the_chinese_map_is_the_same_drawing_in_other_words(self):
        root = ET.fromstring(memory_map.svg(memory_map.parse(json.dumps(SNAPSHOT)), "t", "zh"))
        self.assertEqual(blocks(root), blocks(self.root), "the blocks of one snapshot are drawn alike in both languages")
        text = " ".join(root.itertext())
        for words in ("小池", "大池", "已分配 3 MiB，已预留 22 MiB", "最大空闲块 18 MiB", "已分配的块"):
            self.assertIn(words, text)
        self.assertFalse([t for t in root.itertext() if "pool" in t or "allocated" in t], "an English word is left")
        self.assertEqual({k: set(v) if isinstance(v, dict) else None for k, v in memory_map.WORDS["en"].items()},
                         {k: set(v) if isinstance(v, dict) else None for k, v in memory_map.WORDS["zh"].items()},
                         "a word of the map lacks its translation")

    def test_a_legend_of_chinese_words_leaves_room_for_them(self):
        from lab.learner import figures
        self.assertEqual(figures.width("free", 6.8), 4 * 6.8)
        self.assertEqual(figures.width("空闲块", 6.8), 3 * 12.0, "a Chinese character is as wide as the font is high")
        drawn, _ = figures.legend([("rect", "#000", "已分配的块"), ("rect", "#fff", "空闲块，已缓存")], 20, 0, 980)
        first, second = (float(x) for x in re.findall(r'<rect x="([\d.]+)"', drawn))
        self.assertGreaterEqual(second - first, 20 + 5 * 12, "the second entry starts after the first one's words")

    def test_a_broken_snapshot_is_refused_with_a_reason(self):
        for text in ('{"error": "the allocator threw: boom"}', "[1, 2]", '{"stats": {}}', "not json",
                     '{"stats": {}, "segments": [{"size": 512, "blocks": [[0, 512]]}]}'):
            with self.subTest(text=text), self.assertRaises(ValueError):
                memory_map.parse(text)


class DrawTest(unittest.TestCase):
    """draw() runs the benchmark binary for its snapshot: what it says when there is none."""

    def draw(self, script: str) -> tuple[str, Path]:
        folder = Path(self.enterContext(tempfile.TemporaryDirectory()))
        binary = folder / "bench"
        binary.write_text("#!/usr/bin/env python3\n" + script, encoding="utf-8")
        binary.chmod(0o755)
        return memory_map.draw(binary, "t", folder / "map.svg"), folder / "map.svg"

    def test_a_snapshot_is_drawn(self):
        problem, out = self.draw(f"print({json.dumps(json.dumps(SNAPSHOT))})")
        self.assertEqual(problem, "")
        self.assertIn("w workload", " ".join(ET.parse(out).getroot().itertext()))

    def test_a_twin_in_chinese_is_drawn_from_the_same_snapshot(self):
        folder = Path(self.enterContext(tempfile.TemporaryDirectory()))
        binary = folder / "bench"
        binary.write_text(f"#!/usr/bin/env python3\nprint({json.dumps(json.dumps(SNAPSHOT))})", encoding="utf-8")
        binary.chmod(0o755)
        self.assertEqual(memory_map.draw(binary, "t", folder / "map.svg", {"zh": ("图", folder / "zh" / "map.svg")}), "")
        self.assertIn("w workload", " ".join(ET.parse(folder / "map.svg").getroot().itertext()))
        self.assertIn("图，w 负载", " ".join(ET.parse(folder / "zh" / "map.svg").getroot().itertext()))

    def test_an_allocator_that_threw_is_its_error_and_a_crash_is_a_crash(self):
        problem, out = self.draw('print(\'{"error": "the allocator threw: boom"}\'); raise SystemExit(1)')
        self.assertEqual(problem, "no snapshot: the allocator threw: boom")
        self.assertFalse(out.exists())
        problem, _ = self.draw("import os; os.abort()")
        self.assertEqual(problem, "no snapshot: the snapshot run crashed (SIGABRT)")


if __name__ == "__main__":
    unittest.main()
