"""Several hosts on one Linux machine: network namespaces joined by a bridge.

A distributed program tested on one machine usually talks over 127.0.0.1,
so a bug that only shows between two machines (a server announcing
127.0.0.1, a socket bound to the wrong interface) never shows.  This module
builds a small network instead.  ``Hosts(n)`` makes ``n`` network
namespaces, the *hosts*, each with

* its own loopback (``lo``, up): 127.0.0.1 there is that host's alone;
* one interface ``eth0`` with the address ``10.<x>.0.<i+1>/24``,

and plugs every ``eth0`` (one end of a veth pair) into a bridge ``br0``
that lives in one more namespace, the *switch*.  A packet from host 1 to
host 0 leaves host 1's ``eth0``, crosses the bridge and arrives on host 0's
``eth0``, as between two machines on one Ethernet switch.

Why the bridge has a namespace of its own rather than sitting in the
machine's (root) namespace: nothing is added to the machine's own network
(``ip link`` there does not change, the machine's iptables and
``br_netfilter`` rules never see the traffic, the machine's routes cannot
capture it), link names are private to a namespace, so parallel runs cannot
collide on them, and cleaning up is only deleting namespaces: a veth pair
goes when its namespace goes, the bridge with the switch.

The subnet ``10.<x>.0.0/24`` is picked when the hosts are made so that it
overlaps no address or route of the machine nor of any other namespace that
exists (another run's hosts included).  Namespace names are
``<prefix>-<pid>-<counter>-sw`` and ``...-h<i>``, unique per process and per
``Hosts`` object, so ``pytest -n 2`` runs do not collide.

Every process started with :meth:`Host.popen` runs in a new session (its own
process group); leaving the ``with`` block (normally, by an exception, by
Ctrl-C, or by SIGTERM while the block runs in the main thread) stops those
groups (SIGTERM, then SIGKILL after a grace period), then any process left
inside the hosts' namespaces, by pid, then deletes the namespaces.  A run
killed with SIGKILL cannot clean up; the next ``Hosts`` with the same prefix
removes namespaces whose creating process no longer exists
(:func:`remove_stale`).

Requirements: Linux, root, the ``ip`` command of iproute2, and a kernel
that lets this process create namespaces, veth pairs and bridges (an
unprivileged container usually does not).  :func:`available` says whether
and, if not, why.

Example (as a script or in a test)::

    import sys
    from netns import Hosts, available

    ok, why = available()
    with Hosts(2) as hosts:
        server = hosts[0].popen([sys.executable, 'server.py', hosts[0].addr])
        client = hosts[1].popen([sys.executable, 'client.py', hosts[0].addr])
        client.wait(timeout=30)

From a notebook in ``chapters/`` (the kernel's working directory), run as
root: this folder is not a package, so put it on the path first.  The run
of chapter 12, a scheduler, two servers and two workers on five hosts, all
running ``train.py`` (:func:`start_job` sets each one's ``DMLC_*``)::

    import os, subprocess, sys
    sys.path.insert(0, os.path.abspath('../tests'))
    import netns

    ok, why = netns.available()
    if not ok:
        print('no network namespaces here:', why)
    else:
        with netns.Hosts(5, prefix='ch12') as hosts:
            job = netns.start_job(
                hosts, [sys.executable, 'train.py'], num_servers=2,
                num_workers=2, env={'PYTHONPATH': os.path.abspath('..')},
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            outputs = netns.wait_all(job, timeout=60)
        for (name, host, proc), (out, _) in zip(job, outputs):
            print(f'[{name} @ {host.addr}] exit {proc.returncode}')

Interrupting the kernel (Ctrl-C) inside the block stops the processes and
removes the hosts, as in a script.  Keep everything that must run on the
hosts inside the ``with`` block: the hosts and their processes are gone
after it.
"""
import atexit
import ipaddress
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

__all__ = ['Hosts', 'Host', 'available', 'remove_stale', 'start_job', 'wait_all']

IP_TIMEOUT = 10          # seconds for one `ip` command
LINK_UP_TIMEOUT = 5      # seconds for a veth pair to come up
KILL_GRACE = 3           # seconds between SIGTERM and SIGKILL

_counter = itertools.count()
_live = set()          # Hosts not yet cleaned up (for atexit)
_NAME = re.compile(r'^(?P<prefix>[A-Za-z0-9_]+)-(?P<pid>\d+)-(?P<n>\d+)'
                   r'-(?:sw|h\d+)$')


class NetnsError(RuntimeError):
    """An ``ip`` command failed while making or removing the hosts."""


def _ip(*args, check=True):
    """Run ``ip args...``; its stdout, or NetnsError naming the command."""
    cmd = ['ip', *args]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True,
                             timeout=IP_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NetnsError(f'`{" ".join(cmd)}` did not finish in '
                         f'{IP_TIMEOUT} s') from None
    if check and res.returncode != 0:
        raise NetnsError(f'`{" ".join(cmd)}` failed (exit {res.returncode}): '
                         f'{res.stderr.strip()}')
    return res.stdout


def _list_netns():
    """Names of the network namespaces that ``ip netns`` knows."""
    out = _ip('netns', 'list', check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


# === can we? =================================================================
_AVAILABLE = None


def available():
    """``(True, '')`` if hosts can be made here, else ``(False, reason)``.

    Tries it for real once (a namespace with a bridge and a veth pair, then
    deleted) and remembers the answer.
    """
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = _probe()
    return _AVAILABLE


def _probe():
    if not sys.platform.startswith('linux'):
        return False, f'network namespaces are Linux only (this is {sys.platform})'
    if os.geteuid() != 0:
        return False, ('making network namespaces needs root '
                       f'(running as uid {os.geteuid()})')
    if shutil.which('ip') is None:
        return False, 'no `ip` command (install iproute2)'
    name = f'd2lprobe-{os.getpid()}-{next(_counter)}-sw'
    try:
        _ip('netns', 'add', name)
    except NetnsError as e:
        return False, f'`ip netns add` refused: {e}'
    try:
        _ip('-n', name, 'link', 'add', 'name', 'br0', 'type', 'bridge')
        _ip('-n', name, 'link', 'add', 'name', 've0', 'type', 'veth',
            'peer', 'name', 've1')
        _ip('-n', name, 'link', 'set', 've0', 'master', 'br0')
    except NetnsError as e:
        return False, f'no bridge or veth pairs in a namespace: {e}'
    finally:
        _ip('netns', 'del', name, check=False)
    return True, ''


# === the subnet ==============================================================
def _used_networks(namespaces):
    """IPv4 networks of the addresses and routes here and in ``namespaces``."""
    nets = []
    for ns in [None, *namespaces]:
        pre = () if ns is None else ('-n', ns)
        for line in _ip(*pre, '-4', '-o', 'addr', 'show', check=False).splitlines():
            fields = line.split()
            if 'inet' in fields:
                nets.append(ipaddress.ip_interface(
                    fields[fields.index('inet') + 1]).network)
        for line in _ip(*pre, '-4', 'route', 'show', 'table', 'all',
                        check=False).splitlines():
            dest = line.split()[0] if line.split() else 'default'
            if dest in ('default', 'broadcast', 'local', 'unreachable',
                        'blackhole', 'prohibit', 'throw', 'multicast'):
                continue    # a default route overlaps everything: ignore it
            try:
                nets.append(ipaddress.ip_network(dest, strict=False))
            except ValueError:
                pass
    return nets


def _pick_subnet(seed):
    """A ``10.x.0.0/24`` that overlaps nothing in use, tried from ``seed``."""
    used = _used_networks(_list_netns())
    for k in range(254):
        x = (seed + k) % 254 + 1
        net = ipaddress.ip_network(f'10.{x}.0.0/24')
        if not any(net.overlaps(u) for u in used):
            return net
    raise NetnsError('every 10.x.0.0/24 overlaps an address or route in use')


# === processes ===============================================================
def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exited(proc):
    """Whether ``proc`` ended, without reaping it: while its zombie is
    unreaped, its pid (and so its process group's id) cannot be given to
    another process, so signalling the group cannot hit a stranger."""
    try:
        info = os.waitid(os.P_PID, proc.pid,
                         os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:        # reaped behind Popen's back
        return True
    return info is not None


def _stop_groups(procs, grace):
    """SIGTERM the process group of each Popen not reaped yet, SIGKILL the
    group after ``grace`` seconds, then reap.

    A process reaped earlier (by ``wait``) is left alone: its id may belong
    to someone else by now; what it left in a host is killed by pid when the
    namespace is emptied.
    """
    ours = [p for p in procs if p.returncode is None]
    for p in ours:
        if not _exited(p):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(_exited(p) for p in ours):
        time.sleep(0.02)
    for p in ours:
        # The whole group, its leader alive or a zombie: children stay in it.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def _kill_inside(ns):
    """SIGKILL every process still in namespace ``ns`` (ours: we made it)."""
    for _ in range(3):
        pids = [int(p) for p in _ip('netns', 'pids', ns, check=False).split()
                if p.isdigit() and int(p) != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def remove_stale(prefix):
    """Delete namespaces ``<prefix>-<pid>-...`` whose process ``pid`` is gone.

    They are left by a run that was killed with SIGKILL.  Processes still
    inside them (started by that run) are killed first.
    """
    removed = []
    for ns in _list_netns():
        m = _NAME.match(ns)
        if m and m['prefix'] == prefix and not _alive(int(m['pid'])):
            _kill_inside(ns)
            _ip('netns', 'del', ns, check=False)
            removed.append(ns)
    return removed


class _Blocked:
    """SIGINT and SIGTERM held back (delivered on exit) for a critical part.

    Setting up or tearing down the hosts half-way because of Ctrl-C would
    leave namespaces behind; the signal is handled just after instead.
    """

    _SIGNALS = {signal.SIGINT, signal.SIGTERM}

    def __enter__(self):
        self._old = signal.pthread_sigmask(signal.SIG_BLOCK, self._SIGNALS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self._old)


# While some hosts exist, SIGTERM (what `kill`, pytest-timeout or a batch
# system send) raises KeyboardInterrupt in the main thread, as Ctrl-C does,
# so the `with` block's exit cleans up.  Only the main thread may set a
# handler, and only the default one is replaced: a handler someone else
# installed stays theirs.
_SIGTERM_SAVED = []


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f'signal {signum}')


def _catch_sigterm():
    if (not _SIGTERM_SAVED
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
        _SIGTERM_SAVED.append(signal.signal(signal.SIGTERM, _raise_interrupt))


def _restore_sigterm():
    if _SIGTERM_SAVED and not _live:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _SIGTERM_SAVED.pop())


# === hosts ===================================================================
class Host:
    """One host: a network namespace with ``lo`` and ``eth0`` = ``addr``."""

    def __init__(self, hosts, index, netns, addr):
        self._hosts = hosts
        self.index, self.netns, self.addr = index, netns, addr

    def __repr__(self):
        return f'Host({self.index}, netns={self.netns!r}, addr={self.addr!r})'

    def popen(self, argv, env=None, **kwargs):
        """Start ``argv`` in this host (``ip netns exec <netns> argv...``).

        ``env`` and the other keyword arguments are those of
        :class:`subprocess.Popen` (``env=None`` inherits this process's
        environment).  The process gets a session of its own, so that it and
        its children are stopped together when the hosts are removed.
        """
        if self._hosts._closed:
            raise RuntimeError('these hosts were removed: start processes '
                               'inside the `with Hosts(...)` block')
        if isinstance(argv, str):
            raise TypeError('argv must be a list of strings, e.g. '
                            "['python', 'server.py'], not one string")
        kwargs.setdefault('stdin', subprocess.DEVNULL)
        kwargs['start_new_session'] = True
        # The full path of ip: a caller's env need not have a PATH.
        ip = shutil.which('ip') or 'ip'
        proc = subprocess.Popen([ip, 'netns', 'exec', self.netns, *argv],
                                env=env, **kwargs)
        self._hosts._procs.append(proc)
        return proc

    def run(self, argv, timeout=30, **kwargs):
        """Run ``argv`` here to the end; a CompletedProcess with its output.

        stdout and stderr are captured as text unless ``kwargs`` say
        otherwise; after ``timeout`` seconds it is stopped and
        :class:`subprocess.TimeoutExpired` raised.
        """
        kwargs.setdefault('stdout', subprocess.PIPE)
        kwargs.setdefault('stderr', subprocess.PIPE)
        kwargs.setdefault('text', True)
        proc = self.popen(argv, **kwargs)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop_groups([proc], KILL_GRACE)
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class Hosts:
    """``n`` hosts on one bridge; use as ``with Hosts(n) as hosts: ...``.

    ``hosts[i].addr`` is host i's address (``10.x.0.<i+1>``),
    ``hosts[i].popen(argv, env=...)`` starts a process there,
    ``hosts.subnet`` is the ``10.x.0.0/24`` they share.  Leaving the block
    stops every process started on the hosts and deletes the namespaces.
    """

    def __init__(self, n, prefix='d2l'):
        if int(n) != n or n < 1:
            raise ValueError(f'need a positive number of hosts, got {n!r}')
        if n > 253:
            raise ValueError(f'at most 253 hosts fit in a /24, got {n}')
        if not re.fullmatch(r'[A-Za-z0-9_]+', prefix):
            raise ValueError(f'prefix must be letters, digits or _, got '
                             f'{prefix!r}')
        self.n, self.prefix = int(n), prefix
        self._number = next(_counter)
        self._base = f'{prefix}-{os.getpid()}-{self._number}'
        self.switch = f'{self._base}-sw'
        self.subnet = None
        self._hosts, self._procs, self._made = [], [], []
        self._closed = True

    # --- the with block -------------------------------------------------------
    def __enter__(self):
        ok, why = available()
        if not ok:
            raise NetnsError(f'cannot make network namespaces here: {why}')
        if not self._closed:
            raise RuntimeError(f'{self!r} is in use already')
        with _Blocked():
            remove_stale(self.prefix)
            remove_stale('d2lprobe')
            self._closed = False
            _live.add(self)
            try:
                self._build()
            except BaseException:
                self._teardown()
                raise
        try:
            # A Ctrl-C held back while building arrives here, before the
            # `with` could call __exit__: clean up ourselves.
            _catch_sigterm()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Stop the processes and delete the namespaces (idempotent)."""
        if self._closed:
            return
        try:
            with _Blocked():
                self._teardown()
        finally:
            _restore_sigterm()

    def __len__(self):
        return len(self._hosts)

    def __getitem__(self, i):
        return self._hosts[i]

    def __iter__(self):
        return iter(self._hosts)

    def __repr__(self):
        state = 'removed' if self._closed else str(self.subnet)
        return f'<Hosts {self._base}: {self.n} hosts, {state}>'

    @property
    def namespaces(self):
        """Names of every namespace made: the switch, then the hosts."""
        return [self.switch] + [h.netns for h in self._hosts]

    # --- making and removing -------------------------------------------------
    def _build(self):
        # Start the search at a number of this run's own, so that parallel
        # runs rarely even try the same subnet.
        self.subnet = _pick_subnet(os.getpid() * 31 + self._number * 7)
        self._hosts = []
        sw = self.switch
        _ip('netns', 'add', sw)
        self._made.append(sw)
        _ip('-n', sw, 'link', 'add', 'name', 'br0', 'type', 'bridge')
        _ip('-n', sw, 'link', 'set', 'br0', 'up')
        hosts = list(self.subnet.hosts())
        for i in range(self.n):
            ns, addr = f'{self._base}-h{i}', str(hosts[i])
            _ip('netns', 'add', ns)
            self._made.append(ns)
            port = f'p{i}'
            _ip('-n', sw, 'link', 'add', 'name', port, 'type', 'veth',
                'peer', 'name', 'eth0', 'netns', ns)
            _ip('-n', sw, 'link', 'set', port, 'master', 'br0')
            _ip('-n', sw, 'link', 'set', port, 'up')
            _ip('-n', ns, 'link', 'set', 'lo', 'up')
            _ip('-n', ns, 'addr', 'add', f'{addr}/{self.subnet.prefixlen}',
                'dev', 'eth0')
            _ip('-n', ns, 'link', 'set', 'eth0', 'up')
            self._hosts.append(Host(self, i, ns, addr))
        self._wait_links_up()

    def _wait_links_up(self):
        deadline = time.monotonic() + LINK_UP_TIMEOUT
        for h in self._hosts:
            while 'LOWER_UP' not in _ip('-n', h.netns, '-o', 'link', 'show', 'eth0'):
                if time.monotonic() > deadline:
                    raise NetnsError(f'eth0 of {h.netns} not up after '
                                     f'{LINK_UP_TIMEOUT} s')
                time.sleep(0.02)

    def _teardown(self):
        self._closed = True
        _stop_groups(self._procs, KILL_GRACE)
        errors = []
        for ns in reversed(self._made):
            _kill_inside(ns)
            try:
                _ip('netns', 'del', ns)
            except NetnsError as e:
                errors.append(str(e))
        self._made, self._procs = [], []
        _live.discard(self)
        if errors:
            raise NetnsError('could not delete every namespace: '
                             + '; '.join(errors))



@atexit.register
def _cleanup_at_exit():
    for hosts in list(_live):
        try:
            hosts.close()
        except Exception as e:          # noqa: BLE001 -- report, go on
            print(f'netns: cleaning up {hosts!r} failed: {e}', file=sys.stderr)


# === a parameter-server job on the hosts =====================================
def start_job(hosts, argv, num_servers, num_workers, env=None, port=9091,
              env_of=None, **kwargs):
    """Start a distributed job: the scheduler on host 0, the servers on the
    next ``num_servers`` hosts, the workers on the ``num_workers`` after.

    Every process runs the same ``argv`` (as with MXNet's launcher), told
    its role by MXNet's ``DMLC_*`` variables: ``DMLC_PS_ROOT_URI`` is host
    0's address, ``DMLC_NODE_HOST`` each host's own, and
    ``DMLC_SERVER_ID`` / ``DMLC_WORKER_ID`` the rank within its role.
    ``env`` adds to this process's environment, ``env_of(name, host)``, if
    given, a dict for one process (to misconfigure one on purpose, say);
    ``port`` is the scheduler's (any port is free in a namespace just
    made).  Other keyword arguments go
    to :meth:`Host.popen` (stdout, cwd...).  Returns ``[(name, host,
    popen)]`` in that order, names like ``'scheduler'``, ``'server 0'``,
    ``'worker 1'``; see :func:`wait_all`.
    """
    need = 1 + num_servers + num_workers
    if len(hosts) < need:
        raise ValueError(f'a job with {num_servers} servers and {num_workers} '
                         f'workers needs {need} hosts, there are {len(hosts)}')
    base = dict(os.environ, **(env or {}))
    base.update(DMLC_PS_ROOT_URI=hosts[0].addr, DMLC_PS_ROOT_PORT=str(port),
                DMLC_NUM_SERVER=str(num_servers),
                DMLC_NUM_WORKER=str(num_workers))
    names = (['scheduler'] + [f'server {i}' for i in range(num_servers)]
             + [f'worker {i}' for i in range(num_workers)])
    job = []
    for host, name in zip(hosts, names):
        role, _, rank = name.partition(' ')
        role_env = dict(base, DMLC_ROLE=role, DMLC_NODE_HOST=host.addr)
        if rank:
            role_env['DMLC_WORKER_ID' if role == 'worker'
                     else 'DMLC_SERVER_ID'] = rank
        if env_of is not None:
            role_env.update(env_of(name, host))
        job.append((name, host, host.popen(argv, env=role_env, **kwargs)))
    return job


def wait_all(job, timeout):
    """Wait for every process of ``job`` (from :func:`start_job`), at most
    ``timeout`` seconds in all; a process still running then is killed.

    Returns ``[(out, err)]`` in the job's order (``None`` for a stream that
    was not piped).
    """
    deadline = time.monotonic() + timeout
    outputs = []
    for _, _, proc in job:
        try:
            outputs.append(proc.communicate(
                timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            _stop_groups([proc], KILL_GRACE)
            out, err = proc.communicate()
            note = f'[killed: still running after {timeout} s]'
            outputs.append((out, note if err is None else f'{err}\n{note}'))
    return outputs
