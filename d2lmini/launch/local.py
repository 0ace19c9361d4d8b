"""The ``local`` launcher, and the child process that every launcher starts.

Every process is a child of the launcher on this machine, in its own
process group; ``DMLC_PS_ROOT_URI`` and ``DMLC_NODE_HOST`` are
``127.0.0.1``.

``_Child`` is such a process; the ssh launcher's clients and ``mpiexec``
are ``_Child`` objects too.  ``_die_with_parent`` makes Linux stop them
when the launcher dies, even by ``kill -9``.
"""
import os
import shutil
import signal
import subprocess
import sys

from .jobs import _describe


def _local_argv(command):
    if len(command) == 1:
        return [shutil.which('bash') or '/bin/sh', '-c', command[0]]
    return list(command)


def _die_with_parent():
    """Ask Linux to SIGTERM this child when the launcher dies (best effort)."""


if sys.platform.startswith('linux'):
    try:
        import ctypes
        _prctl = ctypes.CDLL(None, use_errno=True).prctl

        def _die_with_parent():                      # noqa: F811
            _prctl(1, int(signal.SIGTERM))           # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# --------------------------------------------------------------------------
# Processes
class _Child:
    """A process on this machine, in a process group of its own."""

    def __init__(self, spec, argv, env, output, stdin_text=None, prefix=True,
                 pass_fds=()):
        self.spec, self.name, self.role = spec, spec.name, spec.role
        self.popen = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin_text is not None else
            subprocess.DEVNULL, start_new_session=True,
            preexec_fn=_die_with_parent, pass_fds=pass_fds)
        self.pid = self.popen.pid
        if stdin_text is not None:       # kept open: closing it stops (ssh)
            try:
                self.popen.stdin.write(stdin_text.encode())
                self.popen.stdin.flush()
            except OSError:              # ssh died at once: poll() says how
                pass
        self.readers = [output.pump(self.popen.stdout, self.name, 'stdout',
                                    prefix),
                        output.pump(self.popen.stderr, self.name, 'stderr',
                                    prefix)]

    def poll(self):
        return self.popen.poll()

    def describe(self, code):
        return _describe(self.name, code)

    def signal(self, sig):
        if self.popen.stdin and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()     # the remote watcher's cue
            except OSError:
                pass
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self, timeout):
        """After the process exited: kill what it left in its group."""
        left = False
        try:
            os.killpg(self.pid, 0)
            left = True
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.popen.stdin and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
        for t in self.readers:
            t.join(timeout)
        return left
