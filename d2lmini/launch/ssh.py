"""The ``ssh`` launcher: one ssh client per process, on the hostfile's hosts.

One ``ssh -o StrictHostKeyChecking=no [-p PORT] HOST 'cd CWD && export
NAME=VALUE ... && ...'`` per process.  The hostfile has one host per line
(``[user@]host[:sshport]``, ``#`` comments); servers, then workers, are
placed round-robin from its first host, and the scheduler runs on that
first host (``DMLC_PS_ROOT_URI`` is its name), unless ``--host-ip ADDR``
is given: then the scheduler runs on this machine, bound to ``ADDR``, as
dmlc-core's tracker does.  The port is one free here: give ``--port``
if it may be taken there.  The remote side (it needs ``bash``) runs the
command in its own process group with a watcher on ssh's standard
input: when the launcher stops a process, or dies, the connection closes
and the remote process group is terminated too.  Variables whose names
look secret (``SECRET``, ``TOKEN``, ``PASSWORD``, ``..._KEY``; e.g.
``D2LMINI_PS_SECRET``) travel on ssh's standard input, never on a
command line that ``ps`` shows.
``PYTHONPATH``, thread-count variables and the ``D2LMINI_*``, ``DMLC_*``,
``PS_*`` and ``MXNET_*`` settings of this shell are passed on.

``plan.py`` places the processes on the hosts; here ``_ssh_argv`` builds
an ssh client's command line and ``_SshChild`` explains its exit statuses.
"""
import os
import re
import shlex

from .cli import _OWNED
from .jobs import _describe
from .local import _Child

_SECRET = re.compile(r'SECRET|TOKEN|PASSWORD|PASSWD|_KEY\Z|^KEY\Z', re.I)
# What ssh passes on from this shell (remote shells start with a bare env).
_FORWARD = re.compile(r'(D2LMINI_|DMLC_|PS_|MXNET_)\w+\Z|PYTHONPATH\Z|'
                      r'(OMP|MKL|OPENBLAS)_NUM_THREADS\Z|LD_LIBRARY_PATH\Z')


def _shell_line(command):
    """One word is a shell line as written; several are quoted as argv."""
    return command[0] if len(command) == 1 else shlex.join(command)


# The remote half of an ssh process (bash): run the command in its own
# process group, and terminate that group when ssh's stdin closes (the
# launcher stopping it, or gone).
_SSH_WATCH = ('set -m; eval "$1" </dev/null & job=$!; '
              '{ while read -r _; do :; done; kill -TERM -- -$job; sleep $2; '
              'kill -KILL -- -$job; } >/dev/null 2>&1 & watch=$!; set +m; '
              'wait $job; status=$?; kill -- -$watch 2>/dev/null; '
              'exit $status')


def _ssh_argv(spec, command, kill_grace, cwd=None):
    """``(argv, stdin_text)`` for one process on ``spec.host``."""
    cwd = cwd or os.getcwd()
    env = {k: v for k, v in os.environ.items() if _FORWARD.match(k)
           and k not in _OWNED and k != 'DMLC_NODE_HOST'}
    env.update(spec.env)
    secret = [k for k in env if _SECRET.search(k)]
    for k in secret:
        if '\n' in env[k]:
            raise ValueError(f'{k} contains a newline; ssh cannot pass it')
    exports = ' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items()
                       if k not in secret)
    line = f'cd {shlex.quote(cwd)} && export {exports} && '
    line += ''.join(f'IFS= read -r {k} && export {k} && ' for k in secret)
    line += (f'exec bash -c {shlex.quote(_SSH_WATCH)} d2lmini-launch '
             f'{shlex.quote(_shell_line(command))} {kill_grace:g}')
    argv = ['ssh', '-o', 'StrictHostKeyChecking=no']
    if spec.ssh_port:
        argv += ['-p', str(spec.ssh_port)]
    return argv + [spec.host, line], ''.join(env[k] + '\n' for k in secret)


class _SshChild(_Child):
    def describe(self, code):
        text = _describe(self.name, code)
        if code == 255:
            return text + f' (ssh to {self.spec.host} failed?)'
        if 128 < code < 160:
            return text + f' (killed by signal {code - 128} on ' \
                          f'{self.spec.host}?)'
        return text
