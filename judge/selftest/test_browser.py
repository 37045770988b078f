"""The browser check: a tiny site with a broken link, a missing image or a throwing script is
reported, page by page; a good site passes; chromium is gone afterwards."""
import tempfile
import unittest
from pathlib import Path

from lab.maintainer import browser

PIXEL = ('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" viewBox="0 0 10 10">'
         '<rect width="10" height="10" fill="white"/></svg>')
GOOD = {
    "index.html": '<html><body><a href="page.html#part">a part</a> <a href="#top">top</a> <a id="top"></a>'
                  '<img src="pixel.svg" alt=""/> <a href="https://example.org/">the web is not checked</a>'
                  '<script>document.body.dataset.ok = "1";</script></body></html>',
    "page.html": '<html><body><h2 id="part">Part</h2><a href="index.html">back</a></body></html>',
    "pixel.svg": PIXEL,
}


def _alive_in_group(group: int) -> list[int]:
    """The processes of a process group that still run (killed ones may linger as zombies until reaped)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def _site(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


class HeadingTest(unittest.TestCase):
    def test_a_heading_that_shows_a_tag_as_text_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "page.html"
            page.write_text('<h2 id="a">What &lt;tt&gt;serve&lt;/tt&gt; proves</h2><h3>Where <code>std::pmr</code> '
                            'meets a &lt; b</h3><p>&lt;tt&gt; in prose is left to the text</p>')
            self.assertEqual(browser._markup_shown_as_text(page),
                             ["a heading shows markup as text: 'What <tt>serve</tt> proves'"])


@unittest.skipUnless(browser.executable(), "chromium is not installed")
class BrowserCheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = browser.Browser()
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.tmp.cleanup()

    def check(self, name: str, changes: dict[str, str]) -> list[str]:
        site = _site(Path(self.tmp.name) / name, {**GOOD, **changes})
        return browser.check_site(site, self.browser)

    def test_a_good_site_passes(self):
        self.assertEqual(self.check("good", {}), [])

    def test_a_link_to_a_missing_page_is_reported(self):
        problems = self.check("missing-page", {"page.html": GOOD["page.html"].replace("index.html", "gone.html")})
        self.assertEqual(problems, ["page.html: a link to gone.html, which does not exist"])

    def test_a_link_to_a_missing_anchor_is_reported(self):
        problems = self.check("missing-anchor", {"index.html": GOOD["index.html"].replace("#part", "#nowhere")})
        self.assertEqual(problems, ["index.html: a link to page.html#nowhere, an anchor that page does not have"])

    def test_a_link_out_of_the_site_is_reported(self):
        problems = self.check("leaving", {"page.html": GOOD["page.html"].replace("index.html", "../good/index.html")})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("page.html: a link leaves the site", problems[0])

    def test_a_missing_image_is_reported(self):
        problems = self.check("missing-image", {"index.html": GOOD["index.html"].replace("pixel.svg", "lost.svg")})
        self.assertTrue(problems, "a missing image must be reported")
        self.assertTrue(all(p.startswith("index.html: ") and "lost.svg" in p for p in problems), problems)

    def test_an_image_that_cannot_be_shown_is_reported(self):
        problems = self.check("broken-image", {"pixel.svg": "<svg this is not XML"})
        self.assertEqual(problems, ["index.html: the image pixel.svg does not show"])

    def test_a_throwing_script_is_reported(self):
        problems = self.check("throwing", {"page.html": GOOD["page.html"].replace(
            "</body>", "<script>undefinedFunction();</script></body>")})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("page.html: a script throws", problems[0])
        self.assertIn("undefinedFunction is not defined", problems[0])

    def test_a_missing_script_is_reported(self):
        problems = self.check("no-script", {"page.html": GOOD["page.html"].replace(
            "</body>", '<script src="gone.js"></script></body>')})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("page.html: the script gone.js cannot be loaded", problems[0])

    def test_a_screenshot_is_kept_of_each_page_asked(self):
        site = _site(Path(self.tmp.name) / "shot", GOOD)
        pngs = [Path(self.tmp.name) / "shot.png", Path(self.tmp.name) / "shot.other.png"]
        self.assertEqual(browser.check_site(site, self.browser, screenshots=[("page.html", pngs[0]),
                                                                            ("index.html", pngs[1])]), [])
        for png in pngs:
            self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", f"{png.name} is a picture")

    def test_pages_loaded_side_by_side_each_report_their_own_problems(self):
        pages = {f"p{i}.html": f'<html><body><a href="p{(i + 1) % 7}.html">next</a></body></html>' for i in range(7)}
        pages["p4.html"] = pages["p4.html"].replace("</body>", '<img src="gone.svg" alt=""/></body>')
        site = _site(Path(self.tmp.name) / "side-by-side", pages)
        problems = browser.check_site(site, self.browser, tabs=3)
        self.assertTrue(problems, "a broken image among pages loaded three at a time must be found")
        self.assertEqual({p.split(":")[0] for p in problems}, {"p4.html"},
                         f"only the page with the broken image is named: {problems}")

    def test_a_page_that_never_finishes_is_reported_in_bounded_time(self):
        site = _site(Path(self.tmp.name) / "hang", {
            "index.html": "<html><body><script>window.addEventListener('load', () => { while (true) {} });"
                          "</script></body></html>"})
        with browser.Browser() as own:  # its own: a renderer stuck in a loop is not shared with the other tests
            group = own._proc.pid
            found = own.tab().load((site / "index.html").as_uri(), seconds=3)
        self.assertTrue(found.problems, "a page stuck in a script must not pass")
        self.assertEqual(_alive_in_group(group), [], "chromium and its renderers are gone after close()")

    def test_a_judge_finishing_meanwhile_leaves_the_browser_alone(self):
        # `check` loads the docs while other threads judge; each program the judge runs kills, once
        # it ends, the children of the judge it did not start: the browser is not one of those.
        from lab.core import process
        process.run(["true"], timeout=30, keep_bytes=100)
        self.assertEqual(self.check("after-a-run", {}), [], "chromium must outlive a program run beside it")


if __name__ == "__main__":
    unittest.main()
