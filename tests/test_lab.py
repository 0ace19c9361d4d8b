"""``make lab`` works: JupyterLab serves a chapter and runs it in a kernel.

The server is started with the very command ``make lab`` runs (read from
``make -n lab``), bound to 127.0.0.1 on a free port, with a random token.
The test then does over JupyterLab's REST and WebSocket APIs what its page
does when a chapter is opened and run: it fetches the notebook, opens a
session (a kernel for the notebook), sends each code cell to the kernel as
an ``execute_request`` and collects the outputs.  No cell may fail, and
every cell that ``make test``'s strict nbval compares (all but those tagged
``nbval-ignore-output``, ``nbval-skip`` or ``nbval-raises-exception``) must
print what the notebook has committed.  Then the session and the
server are shut down through the API, and no process they started may be
left.

A second test loads the URL the server prints in headless chromium (driven
over the DevTools protocol by ``tools/book_check.py``'s code; it skips when
there is no chromium) and checks what a learner first sees: chapter 1's
notebook as the current tab, not a Launcher; the chapters in the file
browser, and none of the site's files that share their folder; no toast
(JupyterLab's news question, an update notice); no console error; and the
chapter's kernel, which the page starts, up and connected to the page.  Its
screenshot is left in the test's tmp dir as ``lab.png``.

The server gets a configuration folder of its own in the test's tmp dir
(``JUPYTER_CONFIG_DIR``), so the user's JupyterLab settings and workspaces
neither change what it shows nor are written to.

The kernel runs in this test's mode: the server gets this process's
environment (``D2LMINI_DATA``; in ``make test-gpu-standin`` the stand-in's
variables) and ``PYTHONPATH`` with this checkout first.
"""

import configparser
import contextlib
import datetime
import http.client
import importlib.util
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import child_pythonpath

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'tools'))
import book_check                      # noqa: E402  (headless chromium, DevTools)

if importlib.util.find_spec('jupyterlab') is None:    # (importing it takes seconds)
    pytest.skip('JupyterLab is not installed (make install, or pip install -e .[dev])',
                allow_module_level=True)
import websocket                       # noqa: E402  (jupyter_server needs it too)

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent          # the venv's bin/, where `jupyter` is
CHAPTER = '01_ndarray.ipynb'               # runs in a few seconds
START_TIMEOUT = 90                         # s for the server to answer
CELL_TIMEOUT = 120                         # s of kernel silence, as NB_TIMEOUT
EXIT_TIMEOUT = 30                          # s for the server to exit
PAGE_TIMEOUT = 90                          # s for JupyterLab's page to show the chapter
QUIET_S = 3                                # s after that without a toast


# --- the server ----------------------------------------------------------------

def lab_command(port):
    """The command ``make lab`` runs, with this venv, no browser, ``port``,
    and only 127.0.0.1, failing (not moving on to the next port) when the
    port is taken."""
    jupyter = f'{BIN}/jupyter lab '
    args = ['BIN=' + str(BIN), 'NO_BROWSER=1', f'LAB_PORT={port}',
            'LAB_ARGS=--ServerApp.ip=127.0.0.1 --ServerApp.port_retries=0']
    out = subprocess.run(['make', '-n', '--no-print-directory', 'lab', *args],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.replace('\\\n', ' ').splitlines()
             if line.startswith(jupyter)]
    assert len(lines) == 1, f'no single `{jupyter}...` line in make -n lab:\n{out}'
    return shlex.split(lines[0])


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Lab:
    """``make lab``'s server, in a process group of its own, and its HTTP API."""

    def __init__(self, tmp_path):
        self.token = secrets.token_hex(24)
        self.env = dict(
            os.environ,
            PYTHONPATH=child_pythonpath(REPO),
            JUPYTER_TOKEN=self.token,          # kept out of the command line
            JUPYTER_RUNTIME_DIR=str(tmp_path / 'runtime'),   # connection files
            JUPYTER_CONFIG_DIR=str(tmp_path / 'config'),     # settings, workspaces
            IPYTHONDIR=str(tmp_path / 'ipython'))             # the kernel's history
        self.log_path = tmp_path / 'lab.log'
        self.proc = None
        self.seen = set()                      # (pid, start time) of its processes

    def start(self):
        """Start the server and wait until it answers; a port taken between
        free_port() and the server's bind gets one more try on another."""
        for attempt in (1, 2):
            self.port = free_port()
            with open(self.log_path, 'wb') as log:
                self.proc = subprocess.Popen(
                    lab_command(self.port), cwd=REPO, env=self.env,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True)
            if self._wait_until_up():
                return
            if attempt == 1 and 'already in use' in self.log():
                continue
            pytest.fail(f'JupyterLab exited with {self.proc.returncode} before '
                        f'answering; its log:\n{self.log()}')

    def _wait_until_up(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:       # (a port taken in a race may be another program's)
                self.api('GET', '/api/status', timeout=2)
                return True
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
        pytest.fail(f'JupyterLab did not answer within {START_TIMEOUT} s; '
                    f'its log:\n{self.log()}')

    def log(self):
        return self.log_path.read_text(errors='replace')

    def url(self):
        """The URL the server prints for the user (and opens in a browser),
        with the token: the page a learner starts on."""
        found = re.search(rf'http://127\.0\.0\.1:{self.port}(/\S*?)\?token=', self.log())
        assert found, f'no URL of the server in its log:\n{self.log()}'
        return f'http://127.0.0.1:{self.port}{found[1]}?token={self.token}'

    def api(self, method, path, body=None, token=True, timeout=30):
        """The decoded JSON answer to a request (None when it has no body)."""
        request = urllib.request.Request(
            f'http://127.0.0.1:{self.port}{path}', method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={'Authorization': f'token {self.token}'} if token else {})
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            data = answer.read()
        return json.loads(data) if data else None

    def channels_url(self, kernel_id):
        return f'ws://127.0.0.1:{self.port}/api/kernels/{kernel_id}/channels'

    def note_processes(self):
        """Remember the server and every process under it, as they are now."""
        self.seen |= set(processes_under(self.proc.pid))

    def kernels_started(self):
        """The kernels, once there is one and none is still starting (at
        most START_TIMEOUT s).  A kernel stopped while it starts can leave
        the server hanging on its shutdown."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            kernels = self.api('GET', '/api/kernels')
            if ((kernels and all(k['execution_state'] != 'starting' for k in kernels))
                    or time.monotonic() > deadline):
                return kernels
            time.sleep(0.2)

    def stop_sessions(self):
        """Close every session (a notebook's kernel) through the API, as
        closing a notebook in the page does, and wait until each kernel has
        stopped: no kernel may be left."""
        self.note_processes()
        for session in self.api('GET', '/api/sessions'):
            self.api('DELETE', f'/api/sessions/{session["id"]}', timeout=START_TIMEOUT)
        assert self.api('GET', '/api/kernels') == []

    def shut_down(self):
        """Shut the server down through the API: it must exit cleanly and
        leave none of its processes (kernels among them) running."""
        self.note_processes()
        self.api('POST', '/api/shutdown')
        assert self.proc.wait(EXIT_TIMEOUT) == 0, self.log()
        assert running(self.seen) == [], (
            f'left running after the shutdown (pid, start time): {running(self.seen)}')

    def kill(self):
        """Kill what is left of the server and its processes (by pid)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.note_processes()
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(EXIT_TIMEOUT)
        for pid, _ in running(self.seen):  # kernels lead sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def lab(tmp_path):
    server = Lab(tmp_path)
    try:
        server.start()
        yield server
    finally:
        server.kill()


# --- processes, from /proc -----------------------------------------------------

def _stat(pid):
    """(state, parent pid, start time) of a process, or None if it is gone."""
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(')') + 2:].split()   # after "pid (command) "
    return fields[0], int(fields[1]), fields[19]


def processes_under(root):
    """(pid, start time) of ``root`` and all its descendants."""
    stats = {int(p.name): _stat(p.name) for p in Path('/proc').iterdir()
             if p.name.isdigit()}
    stats = {pid: s for pid, s in stats.items() if s is not None}
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found.add((pid, stats[pid][2]))
            todo += [child for child, s in stats.items() if s[1] == pid]
    return found


def running(procs):
    """Those of ``procs`` still running (the same process: pids are reused;
    a zombie has exited and only waits for its parent to read its status)."""
    def alive(pid, start):
        s = _stat(pid)
        return s is not None and s[2] == start and s[0] != 'Z'
    return sorted(p for p in procs if alive(*p))


# --- the kernel, over its WebSocket --------------------------------------------

class Kernel:
    """A kernel's channels as JupyterLab's page uses them: Jupyter messages
    (protocol 5.3) as JSON over one WebSocket."""

    def __init__(self, url, token):
        self.ws = websocket.create_connection(
            url, header=[f'Authorization: token {token}'], timeout=CELL_TIMEOUT)
        self.session = uuid.uuid4().hex

    def close(self):
        self.ws.close()

    def execute(self, code):
        """Run ``code``; its outputs as a notebook stores them."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            'header': {'msg_id': msg_id, 'msg_type': 'execute_request',
                       'session': self.session, 'username': 'test_lab',
                       'date': datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       'version': '5.3'},
            'parent_header': {}, 'metadata': {},
            'content': {'code': code, 'silent': False, 'store_history': True,
                        'user_expressions': {}, 'allow_stdin': False,
                        'stop_on_error': True},
            'buffers': [], 'channel': 'shell'}))
        outputs = []
        while True:                # until the kernel is idle after this request
            msg = json.loads(self.ws.recv())
            if msg['channel'] != 'iopub' or msg['parent_header'].get('msg_id') != msg_id:
                continue
            kind, content = msg['msg_type'], msg['content']
            if kind == 'status' and content['execution_state'] == 'idle':
                return outputs
            if kind in ('stream', 'execute_result', 'display_data', 'error'):
                outputs.append({'output_type': kind, **content})


# --- notebooks -----------------------------------------------------------------

def markers(cell):
    """nbval's tags of a cell, as ``NBVAL_...`` names."""
    tags = {t.upper().replace('-', '_') for t in cell['metadata'].get('tags', [])}
    return {m for m in tags if m.startswith('NBVAL_')}


def _read_sanitizers():
    """``make test-gpu-standin``'s nbval sanitizers (device names as dev(i))."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / 'tests' / 'standin_sanitize.cfg')
    return [(re.compile(cfg[s]['regex']), cfg[s]['replace']) for s in cfg.sections()]


SANITIZERS = _read_sanitizers()


def as_text(outputs):
    """Outputs as nbval compares them: streams (consecutive parts of one
    joined) and text/plain results.  Device names read dev(i), as in
    ``make test-gpu-standin``, where the default context is gpu(0)."""
    texts = []
    for out in outputs:
        if out['output_type'] == 'stream':
            kind, text = out['name'], out['text']
        elif out['output_type'] in ('execute_result', 'display_data'):
            kind, text = 'text/plain', out['data'].get('text/plain', '')
        else:
            kind, text = out['output_type'], str(out)
        text = ''.join(text)                     # stored as a list of lines or not
        if texts and kind != 'text/plain' and texts[-1][0] == kind:
            texts[-1] = (kind, texts[-1][1] + text)
        else:
            texts.append((kind, text))
    for pattern, replace in SANITIZERS:
        texts = [(kind, pattern.sub(replace, text)) for kind, text in texts]
    return texts


def draws_on_a_gpu(cell):
    """Whether ``cell`` draws random numbers on a GPU in this run: with
    gpu(0) as the default context (``make test-gpu-standin``) a cell that
    draws from ``nd.random`` gets the GPU's generator's numbers, not the
    CPU's that the notebook committed, so it is only run, not compared."""
    import d2lmini
    gpu = d2lmini.current_context().device_type == 'gpu'
    return gpu and 'random' in cell['source']


def traceback_of(outputs):
    ansi = re.compile(r'\x1b\[[0-9;]*m')
    return '\n'.join(ansi.sub('', line) for out in outputs
                     if out['output_type'] == 'error' for line in out['traceback'])


# --- the test --------------------------------------------------------------------

def test_lab_opens_and_runs_a_chapter(lab):
    # Only a client with the token gets in.
    with pytest.raises(urllib.error.HTTPError) as refused:
        lab.api('GET', '/api/status', token=False)
    assert refused.value.code == 403

    # Open the chapter: `make lab` serves chapters/ as its root.
    model = lab.api('GET', f'/api/contents/{CHAPTER}')
    assert model['type'] == 'notebook'
    notebook = model['content']
    cells = [c for c in notebook['cells'] if c['cell_type'] == 'code']
    checked = [c for c in cells if not markers(c) & {'NBVAL_IGNORE_OUTPUT', 'NBVAL_SKIP'}]
    assert cells and checked, f'{CHAPTER} has no code cells whose output is checked'

    session = lab.api('POST', '/api/sessions', {
        'path': CHAPTER, 'name': CHAPTER, 'type': 'notebook',
        'kernel': {'name': notebook['metadata']['kernelspec']['name']}})
    lab.note_processes()
    kernel = Kernel(lab.channels_url(session['kernel']['id']), lab.token)
    try:
        # The kernel runs on this venv, imports this checkout's d2lmini, and
        # is one of the server's processes that must be gone at the end.
        probe = kernel.execute('import os, sys, d2lmini\n'
                               'print(sys.prefix, d2lmini.__file__, os.getpid(), sep="\\n")')
        assert not traceback_of(probe), traceback_of(probe)
        prefix, package, pid = dict(as_text(probe))['stdout'].splitlines()
        assert (prefix, package) == (sys.prefix, str(REPO / 'd2lmini' / '__init__.py'))
        assert int(pid) in {pid for pid, _ in lab.seen}

        for number, cell in enumerate(cells, 1):
            marks = markers(cell)
            if 'NBVAL_SKIP' in marks:
                continue
            outputs = kernel.execute(cell['source'])
            where = f'{CHAPTER}, code cell {number}:\n{cell["source"]}\n'
            failed = any(out['output_type'] == 'error' for out in outputs)
            if 'NBVAL_RAISES_EXCEPTION' in marks:
                assert failed, where + 'raised no exception'
                continue
            assert not failed, where + traceback_of(outputs)
            if 'NBVAL_IGNORE_OUTPUT' not in marks and not draws_on_a_gpu(cell):
                assert as_text(outputs) == as_text(cell['outputs']), where
    finally:
        kernel.close()

    lab.stop_sessions()
    lab.shut_down()


# --- the page, in headless chromium ----------------------------------------------

def _chromium():
    """(chromium's path, None) or (None, why there is none)."""
    try:
        return book_check.find_chromium(), None
    except book_check.CheckError as e:
        return None, str(e)


CHROMIUM, NO_CHROMIUM = _chromium()

# Waits (up to budget_ms) until JupyterLab shows a tab in its main area, a
# notebook's cells or a Launcher there, and the file browser's listing; then
# QUIET_S more for a toast, which comes once the app has restored; then
# describes the page.
FIRST_PAGE_JS = r"""
(async () => {
  const deadline = Date.now() + %(budget_ms)d;
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const all = s => Array.from(document.querySelectorAll(s));
  const shown = e => e.checkVisibility({visibilityProperty: true}) && e.getClientRects().length > 0;
  const texts = s => all(s).filter(shown).map(e => e.textContent.trim());
  const ready = () => texts('#jp-main-dock-panel .lm-TabBar-tabLabel').length
    && (all('.jp-NotebookPanel .jp-Cell').some(shown) || all('.jp-Launcher').some(shown))
    && texts('.jp-DirListing-itemText').length;
  while (!ready() && Date.now() < deadline) await sleep(100);
  const ok = !!ready();
  if (ok) await sleep(%(quiet_ms)d);
  return {
    ready: ok,
    current: texts('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel'),
    tabs: texts('#jp-main-dock-panel .lm-TabBar-tabLabel'),
    notebooks: all('.jp-NotebookPanel').filter(shown).length,
    launchers: all('.jp-Launcher').filter(shown).length,
    files: texts('.jp-DirListing-itemText'),
    toasts: texts('.Toastify__toast'),
  };
})()
"""


@pytest.fixture
def browser():
    if CHROMIUM is None:
        pytest.skip(f'the page is checked in headless chromium: {NO_CHROMIUM}')
    browser = book_check.Browser(CHROMIUM)
    try:
        browser.start()
        yield browser
    finally:
        browser.close()


# (browser before lab: without chromium the test skips before starting a server)
def test_lab_opens_on_chapter_one(browser, lab, tmp_path):
    url = lab.url()
    assert url.split('?')[0].endswith(f'/lab/tree/{CHAPTER}'), url
    with book_check.Tab(browser) as tab:
        problems = tab.load(url, timeout=PAGE_TIMEOUT)
        page = tab.evaluate(FIRST_PAGE_JS % {'budget_ms': PAGE_TIMEOUT * 1000,
                                             'quiet_ms': QUIET_S * 1000},
                            timeout=PAGE_TIMEOUT + QUIET_S + 10)
        tab.screenshot(tmp_path / 'lab.png')
        kernels = lab.kernels_started()      # the chapter's, which the page started
        problems += tab.console_errors(f'http://127.0.0.1:{lab.port}')
    seen = (f'{page}\nkernels: {kernels}\nconsole: {problems}\n'
            f'screenshot: {tmp_path / "lab.png"}')
    assert page['ready'], 'the page never showed a tab and the file browser\n' + seen
    assert page['current'] == [CHAPTER] and page['notebooks'] == 1, seen
    assert page['launchers'] == 0, seen
    # every chapter; none of the site's files: Sphinx's conf.py and _static/, the pages
    chapters = {p.name for p in (REPO / 'chapters').glob('*.ipynb')}
    site = {'conf.py', '_static', *(p.name for p in (REPO / 'chapters').glob('*.md'))}
    assert chapters <= set(page['files']), seen
    assert not site & set(page['files']), seen
    assert page['toasts'] == [], seen
    assert problems == [], seen          # console errors, requests leaving 127.0.0.1
    # the page started the chapter's kernel and talks to it
    assert [(k['execution_state'], k['connections'] > 0) for k in kernels] == [
        ('idle', True)], seen
    lab.stop_sessions()
    lab.shut_down()
