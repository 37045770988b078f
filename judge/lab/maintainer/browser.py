"""Loads a static site in headless chromium and says what a reader would find broken: an image
that does not load, a link to a local file or an anchor that does not exist, a script that
throws. Standard library only: chromium is driven through the DevTools protocol over
`--remote-debugging-pipe`, where it reads commands on its fd 3 and writes answers and events on
its fd 4, one JSON message per NUL-terminated chunk. Every wait is bounded in time."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..core import process

NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--disable-breakpad", "--disable-crash-reporter", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
         # Tabs load side by side: none of them may be put to sleep for not being the one in front.
         "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
         "--disable-backgrounding-occluded-windows")

# Run in the page once it has loaded: what it links to, what it shows, which anchors it has.
_INVENTORY = """(async () => {
  const settled = img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done); img.addEventListener('error', done); setTimeout(done, 15000); });
  await Promise.all(Array.from(document.images, settled));
  return {
  links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
  images: Array.from(document.images, i => ({url: i.currentSrc || i.src, shown: i.complete && i.naturalWidth > 0})),
  objects: Array.from(document.querySelectorAll('object[data]'), o => o.data),
  anchors: Array.from(document.querySelectorAll('[id], a[name]'), e => e.id || e.getAttribute('name')),
  };
})()"""


def executable() -> str | None:
    return next((path for path in map(shutil.which, NAMES) if path), None)


class BrowserError(Exception):
    """Chromium could not be started, or stopped answering within the time allowed."""


@dataclass
class Load:
    """What one page load showed: its problems, and the anchors the page has once its scripts ran."""
    problems: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    local_images: list[str] = field(default_factory=list)
    anchors: set[str] = field(default_factory=set)


class Browser:
    """One headless chromium, killed with its whole process group on close()."""

    def __init__(self, timeout: float = 60.0):
        path = executable()
        if not path:
            raise BrowserError("chromium is not installed: sudo apt-get install chromium")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="alloclab-chromium-")
        self._log = tempfile.TemporaryFile()
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()
        # Above the numbers the child's fds 3 and 4 are about to take, so the redirections cannot clobber
        # them; bash, since dash's redirections take one-digit fd numbers only.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child, from_child)]
        os.close(to_child)
        os.close(from_child)
        script = f'exec "$0" "$@" 3<&{high[0]} 4>&{high[1]} {high[0]}<&- {high[1]}>&-'
        try:
            # Registered: `check` judges in other threads meanwhile, and each of their runs kills
            # the children of the judge it did not start (core/process.py).
            self._proc = process.start_kept(
                [shutil.which("bash") or "/bin/bash", "-c", script, path, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, pass_fds=high)
        except OSError as err:
            self._cleanup()
            raise BrowserError(f"cannot start {path}: {err}") from None
        finally:
            for fd in high:
                os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        try:
            self.call("Browser.getVersion", timeout=timeout)
        except BrowserError as err:
            self.close()
            raise BrowserError(f"chromium did not answer: {err}") from None

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "_proc", None) is None:
            return
        if self._proc.poll() is None:
            try:
                self.call("Browser.close", timeout=3)
            except BrowserError:
                pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)  # its renderers and helpers too
        except ProcessLookupError:
            pass
        self._proc.wait()
        process.forget(self._proc)
        self._proc = None
        self._cleanup()

    def _cleanup(self) -> None:
        for fd in (getattr(self, "_in", -1), getattr(self, "_out", -1)):
            try:
                os.close(fd)
            except OSError:
                pass
        self._in = self._out = -1
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _startup_log(self) -> str:
        self._log.seek(0)
        text = self._log.read()[-1500:].decode("utf-8", "replace").strip()
        return f"\nchromium said:\n{text}" if text else ""

    # ---- the protocol ------------------------------------------------------------------------

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        """Sends one command and waits for its answer; events that arrive meanwhile are kept."""
        self._next_id += 1
        ident = self._next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            os.write(self._out, json.dumps(message).encode() + b"\0")
        except OSError as err:
            raise BrowserError(f"chromium went away ({err}){self._startup_log()}") from None
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            for reply in self._pump(deadline):
                if reply.get("id") == ident:
                    if "error" in reply:
                        raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
                    return reply.get("result", {})
        raise BrowserError(f"no answer to {method} within {timeout or self.timeout:.0f} s")

    def _pump(self, until: float) -> list[dict]:
        """The answers that arrive before `until` (perhaps none); events go to the event list."""
        left = until - time.monotonic()
        if left <= 0 or not select.select([self._in], [], [], left)[0]:
            return []
        chunk = os.read(self._in, 1 << 20)
        if not chunk:
            raise BrowserError(f"chromium exited{self._startup_log()}")
        self._buffer += chunk
        *messages, self._buffer = self._buffer.split(b"\0")
        replies, now = [], time.monotonic()
        for raw in messages:
            message = json.loads(raw)
            if "method" in message:
                message["_at"] = now   # when it came: a page is quiet since its last event
                self._events.append(message)
            else:
                replies.append(message)
        return replies

    def wait_until_quiet(self, session: str, seconds: float, settle: float) -> bool:
        """Reads events until the page has fired its load event and then sent no event for `settle`
        seconds with no request in flight, or for a second whatever the requests (one served from
        the memory cache may never say it finished). False when `seconds` pass first."""
        deadline = time.monotonic() + seconds
        while True:
            events = self.events(session)
            now = time.monotonic()
            loaded = any(e["method"] == "Page.loadEventFired" for e in events)
            quiet = now - events[-1]["_at"] if events else 0.0
            if loaded and (quiet >= 1.0 or (quiet >= settle and not _pending(events))):
                return True
            if now >= deadline:
                return False
            self._pump(min(deadline, now + settle))

    def events(self, session: str) -> list[dict]:
        return [e for e in self._events if e.get("sessionId") == session]

    def forget_events(self, session: str) -> None:
        self._events = [e for e in self._events if e.get("sessionId") != session]

    def tab(self, width: int = 1280, height: int = 900) -> Tab:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session, target)
        for domain in ("Page", "Runtime", "Network"):
            tab.call(f"{domain}.enable")
        tab.size(width, height)
        return tab


class Tab:
    """One page of the browser, attached in flat mode: its commands and events carry its session id."""

    def __init__(self, browser: Browser, session: str, target: str):
        self.browser = browser
        self.session = session
        self.target = target

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})

    def call(self, method: str, params: dict | None = None, timeout: float | None = None) -> dict:
        return self.browser.call(method, params, self.session, timeout)

    def size(self, width: int, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def load(self, url: str, seconds: float = 60.0, settle: float = 0.15) -> Load:
        """Opens url and waits for its load event and then for the network to be quiet for `settle`
        seconds; reports every failed request, script error and broken image on the way."""
        self.open(url, seconds)
        return self.loaded(settle)

    def open(self, url: str, seconds: float = 60.0) -> None:
        """Starts loading url, and returns without waiting for it: loaded() waits. Tabs opened one
        after another load side by side, which is most of what a page costs (it waits on its files
        and scripts far longer than it computes)."""
        self.browser.forget_events(self.session)
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._navigated = self.call("Page.navigate", {"url": url}, timeout=seconds)

    def loaded(self, settle: float = 0.15) -> Load:
        """What the page open() started showed, once it has loaded (or failed to)."""
        browser, deadline, seconds = self.browser, self._deadline, self._seconds
        result = Load()
        if self._navigated.get("errorText"):
            result.problems.append(f"cannot open the page: {self._navigated['errorText']}")
            return result

        finished = browser.wait_until_quiet(self.session, deadline - time.monotonic(), settle)
        events = browser.events(self.session)
        result.problems += _script_errors(events) + _failed_requests(events)
        if not finished:  # its scripts may be stuck, so nothing more can be asked of it
            result.problems.append(f"the page did not finish loading within {seconds:.0f} s")
            return result
        try:
            inventory = self.call("Runtime.evaluate", {"expression": _INVENTORY, "returnByValue": True,
                                                       "awaitPromise": True},
                                  timeout=max(deadline - time.monotonic(), 5.0))
        except BrowserError as err:
            result.problems.append(f"the page's scripts do not answer: {err}")
            return result
        found = inventory.get("result", {}).get("value") or {}
        for image in found.get("images", []):
            if image["url"].startswith("file:"):
                result.local_images.append(image["url"])
            if not image["shown"] and not image["url"].startswith("data:"):
                result.problems.append(f"the image {_short(image['url'])} does not show")
        result.local_images += [u for u in found.get("objects", []) if u.startswith("file:")]
        result.links = found.get("links", [])
        result.anchors = set(found.get("anchors", []))
        return result

    def screenshot(self, path: Path) -> None:
        self.call("Page.bringToFront")  # only the tab in front is painted
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


def _pending(events: list[dict]) -> bool:
    started = {e["params"]["requestId"] for e in events if e["method"] == "Network.requestWillBeSent"}
    ended = {e["params"]["requestId"] for e in events
             if e["method"] in ("Network.loadingFinished", "Network.loadingFailed")}
    return bool(started - ended)


def _script_errors(events: list[dict]) -> list[str]:
    problems = []
    for e in events:
        if e["method"] != "Runtime.exceptionThrown":
            continue
        details = e["params"]["exceptionDetails"]
        text = (details.get("exception") or {}).get("description") or details.get("text", "an exception")
        where = f" at {_short(details['url'])}:{details.get('lineNumber', 0) + 1}" if details.get("url") else ""
        problems.append(f"a script throws{where}: {text.splitlines()[0]}")
    return problems


def _failed_requests(events: list[dict]) -> list[str]:
    urls = {e["params"]["requestId"]: (e["params"]["request"]["url"], e["params"].get("type", ""))
            for e in events if e["method"] == "Network.requestWillBeSent"}
    problems = []
    for e in events:
        if e["method"] == "Network.loadingFailed" and not e["params"].get("canceled"):
            url, kind = urls.get(e["params"]["requestId"], ("?", e["params"].get("type", "")))
            what = {"Image": "image", "Stylesheet": "stylesheet", "Script": "script"}.get(kind, "file")
            problems.append(f"the {what} {_short(url)} cannot be loaded ({e['params'].get('errorText', '')})")
    return problems


def _short(url: str) -> str:
    return url.rsplit("/", 1)[-1] if url.startswith("file:") else url


def _local(url: str) -> tuple[Path, str] | None:
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path)), unquote(parts.fragment)


class _Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value and (name == "id" or (tag == "a" and name == "name")):
                self.found.add(value)


class _Headings(HTMLParser):
    """The text of every heading of a page, as a reader sees it."""
    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            if not self._depth:
                self.found.append("")
            self._depth += 1

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.found[-1] += data


def _markup_shown_as_text(path: Path) -> list[str]:
    """Headings that show a tag as text, as Doxygen does with a code span in a heading."""
    parser = _Headings()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return [f"a heading shows markup as text: {' '.join(h.split())!r}" for h in parser.found
            if re.search(r"</?[A-Za-z][A-Za-z0-9]*>", h)]


def _anchors_in(path: Path) -> set[str]:
    parser = _Anchors()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.found


def check_site(root: Path, browser: Browser | None = None, screenshots: list[tuple[str, Path]] = (),
               page_seconds: float = 60.0, tabs: int = 4) -> list[str]:
    """Loads every HTML page under root, `tabs` at a time, and returns what is broken, one line per
    problem, each naming its page. Each of `screenshots`, (page, png), also keeps a picture of that
    page."""
    root = root.resolve()
    pages = sorted(p for p in root.rglob("*.html") if p.is_file())
    if not pages:
        return [f"{root} holds no HTML page"]
    own = browser is None
    browser = browser or Browser()
    try:
        tabs = [browser.tab() for _ in range(min(tabs, len(pages)))]
        loads: dict[Path, Load] = {}
        for at in range(0, len(pages), len(tabs)):
            batch = list(zip(tabs, pages[at:at + len(tabs)]))
            for tab, page in batch:
                tab.open(page.as_uri(), seconds=page_seconds)
            for tab, page in batch:
                loads[page] = tab.loaded()
        for page, png in screenshots:
            tabs[0].load((root / page).as_uri(), seconds=page_seconds)
            tabs[0].screenshot(png)
        for tab in tabs:
            tab.close()
    finally:
        if own:
            browser.close()
    anchors: dict[Path, set[str]] = {}

    def anchors_of(page: Path) -> set[str]:
        # What the page's HTML declares, and what its scripts added when it loaded.
        if page not in anchors:
            anchors[page] = _anchors_in(page) | (loads[page].anchors if page in loads else set())
        return anchors[page]

    problems = []
    for page, found in loads.items():
        name = page.relative_to(root).as_posix()
        mine = list(found.problems) + _markup_shown_as_text(page)
        for url in dict.fromkeys(found.links + found.local_images):
            mine += _broken(url, root, anchors_of)
        problems += [f"{name}: {p}" for p in dict.fromkeys(mine)]
    return problems


def _broken(url: str, root: Path, anchors_of) -> list[str]:
    local = _local(url)
    if local is None:
        return []  # the web and javascript: links are not this check's business
    path, fragment = local
    shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    if not path.is_relative_to(root):
        return [f"a link leaves the site: {shown}"]
    if not path.exists():
        return [f"a link to {shown}, which does not exist"]
    if fragment and path.suffix == ".html":
        if fragment not in anchors_of(path):
            return [f"a link to {shown}#{fragment}, an anchor that page does not have"]
    return []
