#!/usr/bin/env python3
"""Check the built book in a real headless browser: ``make book-check``.

Run after ``make book``::

    python tools/book_check.py [_build/html] [--book book.yml]

What it does
    Serves ``_build/html`` over HTTP on 127.0.0.1 (a port the OS picks when
    the server binds, in a thread of this process, so nothing outlives the
    check), starts Debian's ``chromium`` headless and loads, one fresh tab
    each, the index page and every page ``book.yml`` lists (the preface, the
    chapters, the appendices), then the site's search page.  It fails (exit
    status 1) when

    * a page logs a console error: an uncaught JavaScript exception,
      ``console.error``, a resource that failed to load or answered HTTP
      4xx/5xx, or any request that leaves 127.0.0.1 (the book is offline);
    * the navigation does not list exactly the pages of ``book.yml``, in
      its order, each under its heading: the preface first, unnumbered;
      the chapters under their part's heading ("Part I: Foundations"),
      numbered 1, 2, ... straight through the parts ("6. Automatic
      Parallelism" opens Part II); the appendices, unnumbered, last;
    * an ``<img>`` did not load (``naturalWidth`` 0, unless the image was
      decoded and the server answered 200 for it, as for an SVG without an
      intrinsic size);
    * math is left unrendered once MathJax has finished: a ``.math`` element
      without MathJax output, a MathJax error, or TeX (``\\(``, ``\\[``,
      ``$...$``, ``$$``, ``\\begin{``) in the visible text outside code;
    * a page shows not exactly one search field (a search input, or a
      button that opens the theme's search dialog), or that one does not
      lead to ``search.html``;
    * the search (``search.html?q=WORD``) does not find a page by a word
      of its text.  The words are picked from the built pages: for each
      page, a word of its prose that no other page's prose has.

    It writes screenshots (PNG) of the index, the preface, the first chapter
    of each part and the appendices to ``_build/screenshots/``, prints a
    table (page, console errors, images, math, navigation) and then every
    problem found.

Why the DevTools protocol, not chromium's command-line modes
    ``chromium --headless --dump-dom`` gives the DOM after a fixed virtual
    time budget, with no way to wait for MathJax's promise or for the
    search to finish, and console messages only as unstructured
    ``--enable-logging`` lines on stderr that mix page errors with the
    browser's own chatter.  The DevTools protocol (chromium started with
    ``--remote-debugging-port=0``) reports exceptions, console calls, log
    entries and every network request as structured events, lets the check
    await ``MathJax.startup.promise`` and the search's "finished" status
    inside the page, and takes screenshots -- one browser for all pages.
    It only needs a websocket client: ``websocket-client`` (pure Python,
    already a dependency of Jupyter; listed in requirements.txt).  Nothing is
    downloaded: no Playwright or pyppeteer browser builds.

The browser runs with ``--no-sandbox`` (CI runs as root in a container, where
chromium's sandbox cannot start); it only ever loads this site from
127.0.0.1.  It runs in its own process group with a throw-away profile; the
check closes it, kills what is left of that group, and removes the profile.
Set ``CHROMIUM=/path/to/chromium`` to use another build.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import functools
import html.parser
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from book_yml import read_book  # noqa: E402  (tools/book_yml.py)

PAGE_TIMEOUT = 30.0      # seconds for one page to load and settle
START_TIMEOUT = 30.0     # seconds for chromium to start
VIEWPORT = (1280, 900)
MAX_LISTED = 5           # problems of one kind listed per page
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome",
                  "google-chrome-stable")


class CheckError(RuntimeError):
    """The check could not run (no browser, no site, a browser crash)."""


# --- HTML parsing (no browser needed) ---------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "param", "source", "track", "wbr"}


class _Nav(html.parser.HTMLParser):
    """Collects the first-level entries (``li.toctree-l1 > a``) of the
    primary navigation (``nav.bd-docs-nav``, sphinx-book-theme's sidebar),
    each with the caption (``.caption-text``: a toctree's caption) it
    comes under."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []          # open tags: (tag, is_nav, is_l1_item)
        self.entries = []        # [href, text, caption]
        self.in_link = False
        self.caption = None      # the text of the last caption seen
        self.in_caption = False

    def _inside(self, index):
        return any(frame[index] for frame in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        is_nav = tag == "nav" and "bd-docs-nav" in classes
        is_l1 = tag == "li" and "toctree-l1" in classes and self._inside(1)
        if (tag == "a" and self._inside(1) and self.stack
                and self.stack[-1][2] and not self.in_link):
            self.entries.append([attrs.get("href") or "", "", self.caption])
            self.in_link = True
        if self._inside(1) and "caption-text" in classes:
            self.caption, self.in_caption = "", True
        if tag not in VOID:
            self.stack.append((tag, is_nav, is_l1))

    def handle_endtag(self, tag):
        if tag == "a":
            self.in_link = False
        if tag == "span" and self.in_caption:
            self.in_caption = False
            self.caption = " ".join(self.caption.split())
        for i in range(len(self.stack) - 1, -1, -1):    # forgive bad nesting
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self.in_link and self.entries:
            self.entries[-1][1] += data
        elif self.in_caption:
            self.caption += data


def nav_entries(page_html):
    """The primary navigation's page links, ``[(href, text, caption), ...]``:
    the text with whitespace collapsed, the caption the link comes under
    (None before the first caption)."""
    parser = _Nav()
    parser.feed(page_html)
    parser.close()
    return [(href, " ".join(text.split()), caption)
            for href, text, caption in parser.entries]


def _href_stem(href, current):
    """'03_async.html#x' -> '03_async'; '#' (the page itself) -> current."""
    path = urllib.parse.urlsplit(href).path
    if not path:
        return current
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name[:-5] if name.endswith(".html") else name


NUMBERED = re.compile(r"\d+(\.\d+)*\.\s")    # "6. ", "6.1. "


def nav_problems(entries, expected, current=None):
    """What is wrong with the navigation ``entries`` (from ``nav_entries``)
    of page ``current`` (a stem, or None for the index): it must list the
    pages of ``expected`` (``Book.navigation()``: page, caption, number) in
    order, each under its caption, a numbered one titled "N. ..." and an
    unnumbered one not numbered at all."""
    problems = []
    got = [_href_stem(href, current) for href, _, _ in entries]
    want = {e.page: e for e in expected}
    stems = [e.page for e in expected]
    if not got:
        return ["no navigation (nav.bd-docs-nav with toctree-l1 entries) found"]
    missing = [s for s in stems if s not in got]
    extra = [s for s in got if s not in want]
    if missing:
        problems.append(f"navigation lacks {', '.join(missing)}")
    if extra:
        problems.append(f"navigation has {', '.join(extra)}, which book.yml "
                        "does not list")
    common = [s for s in got if s in want]
    in_book = [s for s in stems if s in got]
    if common != in_book:
        i = next(i for i, (a, b) in enumerate(zip(common, in_book)) if a != b)
        problems.append(f"navigation order differs from book.yml: "
                        f"{common[i]} comes where book.yml has {in_book[i]}")
    for i, (stem, (_, text, caption)) in enumerate(zip(got, entries), 1):
        if stem not in want:
            continue
        entry = want[stem]
        if caption != entry.caption:
            problems.append(f"navigation entry {i} ({stem}) is under "
                            f"{caption!r}, not {entry.caption!r}")
        if entry.number is None:
            if NUMBERED.match(text):
                problems.append(f"navigation entry {i} ({stem}) is {text!r}, "
                                "numbered; book.yml has it unnumbered")
        elif not re.match(rf"{entry.number}\.\s+\S", text):
            problems.append(f"navigation entry {i} ({stem}) is {text!r}, "
                            f"not numbered '{entry.number}. ...'")
    return problems


class _Prose(html.parser.HTMLParser):
    """The text of a page's article (``<article>``, or ``<main>``), without
    code, math, scripts and the like: what the reader reads as prose."""

    SKIP = {"pre", "code", "script", "style", "noscript", "textarea", "svg",
            "math", "mjx-container", "nav", "button"}
    SKIP_CLASSES = {"math", "highlight", "cell_output", "output", "headerlink",
                    "section-number", "toc"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []          # (tag, is_article, skipped)
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        skipped = tag in self.SKIP or bool(classes & self.SKIP_CLASSES)
        self.stack.append((tag, tag in ("article", "main"), skipped))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if (any(f[1] for f in self.stack)
                and not any(f[2] for f in self.stack)):
            self.parts.append(data)


def prose_text(page_html):
    parser = _Prose()
    parser.feed(page_html)
    parser.close()
    return " ".join("".join(parser.parts).split())


def prose_words(page_html):
    """Counter of the lower-case words (letters only) of a page's prose."""
    return collections.Counter(
        w.lower() for w in re.findall(r"(?<![\w.])[A-Za-z]+(?!\w|\.\w)",
                                      prose_text(page_html)))


def pick_search_words(words_by_stem, min_len=7):
    """For each page, a word of at least ``min_len`` letters that its prose
    has and no other page's prose has: the most frequent such word, ties
    broken alphabetically.  ``{stem: word}``; a page with no such word is
    left out."""
    seen_in = collections.Counter()
    for words in words_by_stem.values():
        seen_in.update(set(words))
    picked = {}
    for stem, words in words_by_stem.items():
        own = [(-n, w) for w, n in words.items()
               if len(w) >= min_len and seen_in[w] == 1]
        if own:
            picked[stem] = min(own)[1]
    return picked


# --- unrendered math ----------------------------------------------------------

_MATH_PATTERNS = [
    re.compile(r"\\\(.*?(?:\\\)|$)", re.S),     # \( ... \)
    re.compile(r"\\\[.*?(?:\\\]|$)", re.S),     # \[ ... \]
    re.compile(r"\$\$.*?(?:\$\$|$)", re.S),     # $$ ... $$
    re.compile(r"\\begin\{[A-Za-z*]+\}"),       # \begin{align} ...
    # $...$ as pandoc reads it: no space just inside the dollars, the closing
    # one not followed by a digit (so "$5 and $10" is not math), one line.
    re.compile(r"(?<![\\$\w])\$(?=[^\s$])[^$\n]*?[^\s\\$]\$(?![\d$])"
               r"|(?<![\\$\w])\$[^\s$\\]\$(?![\d$])"),
]


def unrendered_math(text):
    """TeX left as text in ``text`` (visible text outside code): the
    snippets, shortened to 60 characters, in order of appearance."""
    found = []
    for pattern in _MATH_PATTERNS:
        for m in pattern.finditer(text):
            found.append((m.start(), m.group(0)))
    out, last_end = [], -1
    for start, snippet in sorted(found):
        if start < last_end:      # inside a snippet already reported
            continue
        last_end = start + len(snippet)
        snippet = " ".join(snippet.split())
        out.append(snippet if len(snippet) <= 60 else snippet[:57] + "...")
    return out


# --- the HTTP server ------------------------------------------------------------

class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript", ".mjs": "text/javascript",
        ".css": "text/css", ".svg": "image/svg+xml", ".json": "application/json",
        ".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf",
        ".wasm": "application/wasm", ".ipynb": "application/json",
    }

    def log_request(self, code="-", size="-"):
        path = urllib.parse.urlsplit(self.path).path
        with self.server.lock:
            self.server.statuses[path] = int(getattr(code, "value", code))

    def log_message(self, format, *args):    # quiet
        pass


class SiteServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, directory):
        self.lock = threading.Lock()
        self.statuses = {}       # URL path -> last HTTP status served
        super().__init__(("127.0.0.1", 0),
                         functools.partial(_Handler, directory=str(directory)))


@contextlib.contextmanager
def serve(directory):
    """Serve ``directory`` on 127.0.0.1 at a free port the OS picks; yields
    the server (``server.url``: 'http://127.0.0.1:PORT/').  Stopped, and the
    port closed, on exit."""
    server = SiteServer(directory)
    server.url = f"http://127.0.0.1:{server.server_address[1]}/"
    thread = threading.Thread(target=server.serve_forever,
                              kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# --- chromium over the DevTools protocol -----------------------------------------

def find_chromium():
    """The chromium executable: $CHROMIUM, else the first of CHROMIUM_NAMES
    on PATH.  Raises CheckError with what to install when there is none."""
    wanted = os.environ.get("CHROMIUM")
    if wanted:
        found = shutil.which(wanted)
        if not found:
            raise CheckError(f"CHROMIUM={wanted} is not an executable")
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise CheckError(
        "no chromium found (looked for " + ", ".join(CHROMIUM_NAMES) + " on "
        "PATH); install Debian's: apt-get install -y chromium, or set "
        "CHROMIUM=/path/to/chromium")


class Browser:
    """A headless chromium and one DevTools websocket to it."""

    def __init__(self, executable):
        self.executable = executable
        self.proc = None
        self.ws = None
        self.profile = None
        self.next_id = 0
        self.events = collections.deque()
        self.stderr_tail = collections.deque(maxlen=40)

    def start(self):
        try:
            import websocket
        except ImportError:
            raise CheckError("the Python package websocket-client is missing; "
                             "pip install websocket-client (make install does)")
        self.profile = tempfile.mkdtemp(prefix="book-check-chromium-")
        args = [self.executable, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio",
                "--hide-scrollbars", "--password-store=basic",
                f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", "about:blank"]
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True)
        found = threading.Event()
        url = []

        def read_stderr():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip()
                self.stderr_tail.append(line)
                m = re.search(r"DevTools listening on (ws://\S+)", line)
                if m and not url:
                    url.append(m.group(1))
                    found.set()
            found.set()           # stderr closed: chromium has gone

        threading.Thread(target=read_stderr, daemon=True).start()
        found.wait(START_TIMEOUT)
        if not url:
            tail = "\n  ".join(list(self.stderr_tail)[-15:])
            raise CheckError(f"{self.executable} did not start (no DevTools "
                             f"URL within {START_TIMEOUT:.0f} s); its stderr:"
                             f"\n  {tail}")
        self.ws = websocket.create_connection(url[0], timeout=PAGE_TIMEOUT,
                                              suppress_origin=True)

    def close(self):
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.send("Browser.close", timeout=5)
            with contextlib.suppress(Exception):
                self.ws.close()
            self.ws = None
        if self.proc is not None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            # chromium's helpers (zygote, renderers) share its process group,
            # which start_new_session made for it alone.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            deadline = time.monotonic() + 5       # until the group is gone
            while time.monotonic() < deadline:
                try:
                    os.killpg(self.proc.pid, 0)
                except (ProcessLookupError, PermissionError):
                    break
                time.sleep(0.05)
            self.proc = None
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def _recv(self, deadline):
        import websocket
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self.ws.settimeout(remaining)
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            raise TimeoutError from None
        except (websocket.WebSocketConnectionClosedException, OSError) as e:
            raise CheckError(f"lost the connection to chromium ({e}); its "
                             "stderr:\n  " + "\n  ".join(self.stderr_tail))

    def send(self, method, params=None, session=None, timeout=PAGE_TIMEOUT):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            try:
                reply = self._recv(deadline)
            except TimeoutError:
                raise CheckError(f"chromium did not answer {method} within "
                                 f"{timeout:.0f} s") from None
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CheckError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, session, timeout=PAGE_TIMEOUT):
        """The first event ``method`` of ``session`` (buffered or new)."""
        for event in self.events:
            if event["method"] == method and event.get("sessionId") == session:
                return event
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = self._recv(deadline)
            except TimeoutError:
                return None
            if "method" in event:
                self.events.append(event)
                if event["method"] == method and event.get("sessionId") == session:
                    return event

    def drain(self, session):
        """Take the buffered events of ``session`` out of the buffer."""
        mine = [e for e in self.events if e.get("sessionId") == session]
        self.events = collections.deque(
            e for e in self.events if e.get("sessionId") != session)
        return mine


# JavaScript run in each page once it has loaded: waits for MathJax and the
# images (and, on the search page, for the search to finish), then describes
# the page.
SETTLE_JS = r"""
(async () => {
  const deadline = Date.now() + %(budget_ms)d;
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const until = async (cond) => {
    while (!cond() && Date.now() < deadline) await sleep(50);
    return !!cond();
  };
  const race = p => Promise.race([p, sleep(Math.max(0, deadline - Date.now()))]);
  const out = {mathjax: 'not loaded'};
  if (document.querySelector('script[src*="mathjax" i], script[src*="tex-" i]')) {
    // after the load event MathJax's script has run (or failed to load):
    // wait only briefly for it to set up.
    const soon = Date.now() + 3000;
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)
           && Date.now() < Math.min(soon, deadline)) await sleep(50);
    const ready = !!(window.MathJax && MathJax.startup && MathJax.startup.promise);
    if (!ready) out.mathjax = 'did not start';
    else {
      out.mathjax = await race(MathJax.startup.promise.then(
        () => 'done', e => 'failed: ' + e)) || 'timed out';
    }
  }
  for (const img of document.images) if (img.loading === 'lazy') img.loading = 'eager';
  out.images = await Promise.all(Array.from(document.images, async img => {
    const decoded = await race(img.decode().then(() => true, () => false));
    return {src: img.currentSrc || img.src, complete: img.complete,
            width: img.naturalWidth, decoded: decoded === true};
  }));
  if (%(search)s) {
    await until(() => {
      const s = document.querySelector('#search-results .search-summary, #search-results p');
      return s && /finished|found|did not match/i.test(s.textContent);
    });
    out.summary = (document.querySelector('#search-results .search-summary, #search-results p') || {}).textContent || '';
    out.results = Array.from(document.querySelectorAll('#search-results ul li a'),
                             a => a.getAttribute('href'));
  }
  const math = Array.from(document.querySelectorAll('.math'));
  out.mathNodes = math.length;
  out.mathUnrendered = math.filter(m => !m.querySelector('mjx-container')
                                        && !m.closest('mjx-container'))
                           .map(m => m.textContent.trim().slice(0, 60));
  out.mathErrors = Array.from(document.querySelectorAll('mjx-merror'),
                              e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80));
  // .math elements are checked above; this looks for TeX outside them
  const skip = 'pre, code, script, style, noscript, textarea, mjx-container, .MathJax, .math';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    if (el.checkVisibility && !el.checkVisibility({visibilityProperty: true})) continue;
    parts.push(n.data);
  }
  out.text = parts.join('');
  out.html = document.documentElement.outerHTML;
  // The search fields the reader sees: search inputs, and the theme's
  // buttons that open its search dialog.  The one there should be must
  // lead to the search page: an input by its form, a button by the input
  // of the dialog it opens (last: the dialog covers the page).
  const shown = e => e.checkVisibility({visibilityProperty: true, opacityProperty: true})
                     && e.getClientRects().length > 0;
  const fields = Array.from(document.querySelectorAll(
    'input[type=search], .search-button__button')).filter(shown);
  const describe = (e, classes) => e.tagName.toLowerCase()
    + Array.from(e.classList, c => '.' + c).slice(0, classes).join('');
  out.searchFields = fields.map(e => describe(e) + ' in '
    + (e.parentElement ? describe(e.parentElement, 1) : 'nothing'));
  if (fields.length === 1) {
    let input = fields[0];
    if (!input.matches('input')) {
      input.click();
      await until(() => Array.from(document.querySelectorAll('input[type=search]')).some(shown));
      input = Array.from(document.querySelectorAll('input[type=search]')).find(shown);
    }
    out.searchAction = input && input.form
      ? new URL(input.form.getAttribute('action') || '', location.href).pathname : null;
    for (const d of document.querySelectorAll('dialog[open]')) d.close();  // for the screenshot
  }
  return out;
})()
"""


class PageReport:
    def __init__(self, name):
        self.name = name
        self.errors = []          # console errors, failed loads
        self.images = []          # (src, ok)
        self.math_nodes = 0
        self.math_problems = []
        self.nav_problems = []
        self.other = []           # search results etc.
        self.html = ""
        self.info = {}

    @property
    def problems(self):
        """The problems, at most ``MAX_LISTED`` of each kind."""
        out = []
        for kind, items in (
                ("console", self.errors),
                ("image did not load", [s for s, ok in self.images if not ok]),
                ("math", self.math_problems)):
            out += [f"{kind}: {item}" for item in items[:MAX_LISTED]]
            if len(items) > MAX_LISTED:
                out.append(f"{kind}: ... and {len(items) - MAX_LISTED} more")
        return out + self.nav_problems + self.other


def _describe_console(event):
    """An error message from a DevTools event, or None."""
    method, p = event["method"], event.get("params", {})
    if method == "Runtime.exceptionThrown":
        d = p.get("exceptionDetails", {})
        exc = d.get("exception", {})
        text = exc.get("description") or d.get("text", "exception")
        where = d.get("url", "")
        if where:
            text += f" ({where}:{d.get('lineNumber', 0) + 1})"
        return "JS " + text.splitlines()[0] if text else "JS exception"
    if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
        args = [str(a.get("value", a.get("description", ""))) for a in p.get("args", [])]
        return f"console.{p['type']}: " + " ".join(args)
    if method == "Log.entryAdded":
        e = p.get("entry", {})
        if e.get("level") == "error":
            return f"{e.get('source', 'log')}: {e.get('text', '')}" + (
                f" ({e['url']})" if e.get("url") else "")
    return None


def _is_local(url, origin):
    return (url == origin or url.startswith(origin + "/")
            or url.startswith(("data:", "blob:", "about:"))
            or url.startswith("chrome"))


class ScriptError(CheckError):
    """A script the check ran in a page threw."""


class Tab:
    """A fresh tab of ``browser`` at ``VIEWPORT`` (``with Tab(browser) as
    tab:``), its console, log and network events recorded, closed on exit.
    ``tools/book_check.py`` loads each page of the book in one;
    ``tests/test_lab.py`` loads JupyterLab in one."""

    def __init__(self, browser):
        self.browser = browser
        self.target = self.session = None

    def __enter__(self):
        self.target = self.browser.send(
            "Target.createTarget", {"url": "about:blank"})["targetId"]
        try:
            self.session = self.browser.send(
                "Target.attachToTarget",
                {"targetId": self.target, "flatten": True})["sessionId"]
            for method in ("Page.enable", "Runtime.enable", "Log.enable",
                           "Network.enable"):
                self.send(method)
            self.send("Network.setCacheDisabled", {"cacheDisabled": True})
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": VIEWPORT[0], "height": VIEWPORT[1],
                       "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.__exit__()
            raise
        self.browser.drain(self.session)
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(CheckError):
            self.browser.send("Target.closeTarget", {"targetId": self.target})

    def send(self, method, params=None, timeout=PAGE_TIMEOUT):
        return self.browser.send(method, params, session=self.session,
                                 timeout=timeout)

    def load(self, url, timeout=PAGE_TIMEOUT):
        """Go to ``url`` and wait for its load event; what went wrong
        (a list of messages, empty when nothing did)."""
        nav = self.send("Page.navigate", {"url": url})
        errors = []
        if nav.get("errorText"):
            errors.append(f"navigation failed: {nav['errorText']}")
        if self.browser.wait_event("Page.loadEventFired", self.session,
                                   timeout) is None:
            errors.append(f"no load event within {timeout:.0f} s")
        return errors

    def evaluate(self, expression, timeout=PAGE_TIMEOUT):
        """The value of the JavaScript ``expression`` (a promise is
        awaited); ScriptError when it throws."""
        result = self.send("Runtime.evaluate",
                           {"expression": expression, "awaitPromise": True,
                            "returnByValue": True}, timeout=timeout)
        if "exceptionDetails" in result:
            raise ScriptError(str(result["exceptionDetails"].get("text")))
        return result.get("result", {}).get("value")

    def screenshot(self, path):
        shot = self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def console_errors(self, origin):
        """The console errors, failed loads and requests that leave
        ``origin`` since the tab opened (or since the last call)."""
        # late events (a failing image, a console error while settling)
        with contextlib.suppress(CheckError):
            self.send("Runtime.evaluate", {"expression": "1"})
        errors, requests, failed_urls = [], {}, set()
        for event in self.browser.drain(self.session):
            method, p = event["method"], event.get("params", {})
            if method == "Network.requestWillBeSent":
                req_url = p.get("request", {}).get("url", "")
                requests[p.get("requestId")] = req_url
                if not _is_local(req_url, origin):
                    errors.append(f"request leaves the site: {req_url}")
            elif method == "Network.responseReceived":
                status = p.get("response", {}).get("status", 0)
                if status >= 400:
                    failed_urls.add(p["response"].get("url"))
                    errors.append(f"HTTP {status}: {p['response'].get('url')}")
            elif method == "Network.loadingFailed" and not p.get("canceled"):
                req_url = requests.get(p.get("requestId"), "?")
                if req_url not in failed_urls:
                    failed_urls.add(req_url)
                    errors.append(f"failed to load {req_url}: {p.get('errorText')}")
            else:
                message = _describe_console(event)
                if message is None:
                    continue
                e = p.get("entry", {})
                if (method == "Log.entryAdded" and e.get("source") == "network"
                        and e.get("url") in failed_urls):
                    continue      # the same failed request, already reported
                errors.append(message)
        return list(dict.fromkeys(errors))


def visit(browser, url, origin, search=False, screenshot=None):
    """Load ``url`` in a fresh tab; returns (settle result dict, errors)."""
    with Tab(browser) as tab:
        errors = tab.load(url)
        try:
            settled = tab.evaluate(
                SETTLE_JS % {"budget_ms": int(PAGE_TIMEOUT * 700),
                             "search": "true" if search else "false"}) or {}
        except ScriptError as e:
            errors.append(f"the check's own script failed in the page: {e}")
            settled = {}
        if screenshot is not None:
            tab.screenshot(screenshot)
        return settled, list(dict.fromkeys(errors + tab.console_errors(origin)))


def check_page(browser, server, name, path, expected, current,
               screenshot=None):
    report = PageReport(name)
    settled, report.errors = visit(browser, server.url + path,
                                   server.url.rstrip("/"), screenshot=screenshot)
    report.info = settled
    report.html = settled.get("html", "")
    for img in settled.get("images", []):
        served = server.statuses.get(urllib.parse.urlsplit(img["src"]).path)
        ok = img["complete"] and (img["width"] > 0
                                  or (img["decoded"] and served == 200))
        report.images.append((img["src"], ok))
    report.math_nodes = settled.get("mathNodes", 0)
    if settled.get("mathNodes") and settled.get("mathjax") != "done":
        report.math_problems.append(
            f"{settled['mathNodes']} math elements but MathJax "
            f"{settled.get('mathjax')}")
    report.math_problems += [f"not typeset: {m}" for m in settled.get("mathUnrendered", [])]
    report.math_problems += [f"MathJax error: {m}" for m in settled.get("mathErrors", [])]
    report.math_problems += [f"TeX in the text: {m}"
                             for m in unrendered_math(settled.get("text", ""))]
    if report.html:
        report.nav_problems = nav_problems(nav_entries(report.html), expected,
                                           current)
    else:
        report.nav_problems = ["the page gave no HTML"]
    report.other += search_field_problems(settled)
    return report


def search_field_problems(settled):
    """One search field must be visible on a page, and lead to search.html."""
    fields = settled.get("searchFields")
    if fields is None:
        return []             # the page's script failed; reported already
    if len(fields) != 1:
        return [f"{len(fields)} visible search fields, not one"
                + (f": {', '.join(fields)}" if fields else "")]
    action = settled.get("searchAction") or ""
    if not action.endswith("/search.html"):
        return [f"the search field ({fields[0]}) leads to "
                f"{action or 'no form'}, not search.html"]
    return []


def check_search(browser, server, word, stem):
    report = PageReport(f'search "{word}" -> {stem}')
    settled, report.errors = visit(
        browser, server.url + "search.html?q=" + urllib.parse.quote(word),
        server.url.rstrip("/"), search=True)
    report.info = settled
    found = [_href_stem(h, None) for h in settled.get("results", [])]
    report.info["found"] = found
    if stem not in found:
        report.other.append(
            f"search for {word!r} does not find {stem} (results: "
            f"{found or 'none'}; {settled.get('summary', '').strip()!r})")
    return report


# --- the report -------------------------------------------------------------------

def table(reports):
    rows = [("page", "console errors", "images ok", "math ok", "nav/search ok")]
    for r in reports:
        if r.name.startswith("search"):
            rows.append((r.name, str(len(r.errors)), "-", "-",
                         "yes" if not r.other else "NO"))
            continue
        n_ok = sum(ok for _, ok in r.images)
        rows.append((r.name, str(len(r.errors)), f"{n_ok}/{len(r.images)}",
                     ("yes" if not r.math_problems else "NO")
                     + (f" ({r.math_nodes})" if r.math_nodes else ""),
                     "yes" if not (r.nav_problems or r.other) else "NO"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(site, book, screenshots, searches=None, out=None):
    """Check ``site`` (a built book) against ``book`` (book.yml): prints the
    table to ``out`` and returns the problems found (strings; none: passed).
    ``searches``: {page stem: word to find it by}; default: picked from
    the pages by ``pick_search_words``.  Raises CheckError when the check
    cannot run at all (a malformed book.yml among them)."""
    out = out or sys.stdout
    site = Path(site)
    try:
        book = read_book(book)
    except ValueError as e:
        raise CheckError(str(e)) from None
    expected, stems = book.navigation(), book.pages
    # screenshots: the index, the preface, each part's first chapter, the
    # appendices
    first_chapters = {p.chapters[0] for p in book.parts}
    shoot = {"index", book.preface, *first_chapters, *book.appendices}
    if not (site / "index.html").is_file():
        raise CheckError(f"{site}/index.html does not exist; run `make book` first")
    missing = [s for s in stems if not (site / f"{s}.html").is_file()]
    problems = [f"{s}.html was not built (book.yml lists it)" for s in missing]
    stems_built = [s for s in stems if s not in missing]
    if searches is None:
        words = {s: prose_words((site / f"{s}.html").read_text(encoding="utf-8"))
                 for s in stems_built}
        searches = pick_search_words(words)
        for s in stems_built:
            if s not in searches:
                problems.append(f"{s}: no word of its own to search for")
    browser = Browser(find_chromium())
    reports = []
    t0 = time.monotonic()
    with serve(site) as server:
        try:
            browser.start()
            pages = [("index", "index.html", None)] + [
                (s, f"{s}.html", s) for s in stems_built]
            for name, path, current in pages:
                shot = Path(screenshots) / f"{name}.png" if name in shoot else None
                reports.append(check_page(browser, server, name, path,
                                          expected, current, screenshot=shot))
            for stem, word in searches.items():
                reports.append(check_search(browser, server, word, stem))
        finally:
            browser.close()
    print(table(reports), file=out)
    print(f"({len(reports)} pages in {time.monotonic() - t0:.0f} s; "
          f"screenshots in {screenshots})", file=out)
    return problems + group_problems((r.name, r.problems) for r in reports)


def group_problems(pages):
    """``[(page, [problem, ...]), ...]`` -> lines 'page: problem', a problem
    that several pages share (a wrong navigation, say) listed once, with the
    pages."""
    where = {}
    for page, problems in pages:
        for problem in problems:
            names = where.setdefault(problem, [])
            if page not in names:
                names.append(page)
    lines = []
    for problem, names in where.items():
        if len(names) > 3:
            names = names[:2] + [f"... ({len(names)} pages)"]
        lines.append(f"{', '.join(names)}: {problem}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"),
                        help="the built book (default: _build/html)")
    parser.add_argument("--book", default=str(ROOT / "book.yml"),
                        help="book.yml with the table of contents")
    parser.add_argument("--screenshots", default=None,
                        help="where the PNGs go (default: the site's "
                             "parent/screenshots, i.e. _build/screenshots)")
    parser.add_argument("--search", action="append", metavar="WORD=STEM",
                        help="search for WORD and expect page STEM among "
                             "the results (repeatable; default: one word "
                             "picked from each page)")
    args = parser.parse_args(argv)
    screenshots = args.screenshots or str(Path(args.site).resolve().parent / "screenshots")
    searches = None
    if args.search:
        if not all("=" in item for item in args.search):
            parser.error("--search takes WORD=STEM")
        searches = {stem: word for word, stem in
                    (item.split("=", 1) for item in args.search)}
    try:
        problems = run(args.site, args.book, screenshots, searches)
    except CheckError as e:
        print(f"book-check: cannot check the book: {e}", file=sys.stderr)
        return 2
    if problems:
        print(f"\nbook-check: FAILED, {len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print("book-check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
