"""Job control: the prefixed output, and the watch that ends a job.

Failure semantics.  Each output line is prefixed with its process
(``[worker 1] loss 0.3``, ``[server 0] ...``, ``[scheduler] ...``).  When
every worker has exited 0 and the servers and scheduler then exit 0, the
launcher exits 0.  When any process exits non-zero or is killed, on Ctrl-C
(SIGINT, SIGTERM or SIGHUP to the launcher), after ``--timeout`` seconds, or
when servers are still running ``--server-grace`` seconds (30) after the last
worker finished, the launcher sends SIGTERM to every remaining process group,
SIGKILL ``--kill-grace`` seconds (5) later, says why on stderr (``[launch]
worker 1 exited with status 3``), and exits non-zero: 1 for a failed process,
124 for the timeout, 128+N for signal N.  Processes a finished process
left in its group are killed (and named).  Even when the launcher itself is
killed (``kill -9``), Linux sends SIGTERM to what it started (local
processes, ssh clients, mpiexec), and an ssh client's end stops its remote
process.

``_Output`` writes each process's lines with its prefix; ``_Job.run``
watches the processes (whatever started them: ``local.py``, ``ssh.py``,
``mpi.py``) and applies these rules, ``_Job.stop`` is the SIGTERM, then
SIGKILL, and ``_Signals`` turns the launcher's own signals into a stop.
"""
import signal
import sys
import threading
import time

_POLL = 0.05                       # seconds between looks at the processes


class LaunchError(RuntimeError):
    """The job could not be started (the message says why)."""


class _Output:
    """Writes whole lines, prefixed, from many reader threads."""

    def __init__(self, echo=True, capture=False):
        self.echo, self.lines = echo, [] if capture else None
        self._lock = threading.Lock()

    def line(self, name, stream, text, prefix=True):
        if not text.endswith('\n'):
            text += '\n'
        with self._lock:
            if self.lines is not None:
                self.lines.append((name, stream, text))
            if self.echo:
                out = sys.stdout if stream == 'stdout' else sys.stderr
                try:
                    out.write(f'[{name}] {text}' if prefix else text)
                    out.flush()
                except (OSError, ValueError):   # e.g. `... | head` ended:
                    self.echo = False           # keep draining the pipes

    def say(self, text):
        self.line('launch', 'stderr', text)

    def pump(self, pipe, name, stream, prefix=True):
        def run():
            with pipe:
                for raw in iter(pipe.readline, b''):
                    self.line(name, stream,
                              raw.decode('utf-8', 'replace'), prefix)
        t = threading.Thread(target=run, name=f'launch-{name}-{stream}',
                             daemon=True)
        t.start()
        return t


def _describe(name, code):
    if code < 0:
        try:
            signame = f' ({signal.Signals(-code).name})'
        except ValueError:
            signame = ''
        return f'{name} was killed by signal {-code}{signame}'
    return f'{name} exited with status {code}'


class _Job:
    def __init__(self, procs, output, opts, quiet=False):
        self.procs, self.out, self.o, self.quiet = procs, output, opts, quiet
        self.stop_request = None         # (returncode, message) from outside
        self.exited = {}                 # proc -> (code, time first seen)

    def _say(self, text):
        if not self.quiet:
            self.out.say(text)

    def run(self):
        start = time.monotonic()
        done_at = None
        while True:
            now = time.monotonic()
            for p in self.procs:
                if p not in self.exited:
                    code = p.poll()
                    if code is not None:
                        self.exited[p] = (code, now)
            bad = [p for p in self.exited if self.exited[p][0] != 0]
            if bad:
                first = min(bad, key=lambda p: self.exited[p][1])
                rc, why = 1, first.describe(self.exited[first][0])
                break
            running = [p for p in self.procs if p not in self.exited]
            if not running:
                self.clean_up()
                return 0, ''
            if self.stop_request:
                rc, why = self.stop_request
                break
            workers = [p for p in self.procs if p.role == 'worker']
            if workers and all(p in self.exited for p in workers):
                done_at = done_at or now
                if now - done_at > self.o.server_grace:
                    names = ', '.join(p.name for p in running)
                    rc, why = 1, (f'{names} still running '
                                  f'{self.o.server_grace:g} s after every '
                                  'worker finished')
                    break
            if self.o.timeout and now - start > self.o.timeout:
                rc, why = 124, f'timed out after {self.o.timeout:g} s'
                break
            time.sleep(_POLL)
        running = [p for p in self.procs if p not in self.exited]
        if running:
            why += f'; stopping {", ".join(p.name for p in running)}'
        self._say(why)
        self.stop(running)
        self.clean_up()
        return rc, why

    def stop(self, running):
        """SIGTERM every group, SIGKILL those alive ``kill_grace`` later;
        ``mpiexec`` last, once its ranks had their chance to end cleanly."""
        last = [p for p in running if p.role == 'mpiexec']
        for group in ([p for p in running if p not in last], last):
            for p in group:
                p.signal(signal.SIGTERM)
            group = self._wait(group)
            for p in group:
                self._say(f'{p.name} still running {self.o.kill_grace:g} s '
                          'after SIGTERM; killing it')
                p.signal(signal.SIGKILL)
            for p in self._wait(group):
                self._say(f'{p.name} survived SIGKILL')

    def _wait(self, procs):
        """Those of ``procs`` still running after ``kill_grace`` seconds."""
        deadline = time.monotonic() + self.o.kill_grace
        while procs and time.monotonic() < deadline:
            procs = [p for p in procs if p.poll() is None]
            if procs:
                time.sleep(_POLL)
        return procs

    def clean_up(self):
        """Kill what exited processes left in their groups; end the readers."""
        for p in self.procs:
            if hasattr(p, 'finish') and p.finish(2.0):
                self._say(f'{p.name} left processes in its group; killed them')


class _Signals:
    """Turn SIGINT/SIGTERM/SIGHUP into a stop request while the job runs."""

    def __init__(self, job):
        self.job, self.old = job, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                self.old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.job.stop_request is None:
            name = signal.Signals(signum).name
            self.job.stop_request = (128 + signum, f'interrupted by {name}')

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
