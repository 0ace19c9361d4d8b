"""tests/netns.py: hosts in network namespaces, joined by a bridge.

The oracle for "two hosts" is what the kernel says: the address a server
sees its client connect from, connections refused or unreachable, and the
namespaces, links and processes that exist before and after.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import netns
from conftest import alive

OK, WHY = netns.available()
needs_netns = pytest.mark.skipif(not OK, reason=f'no network namespaces: {WHY}')
PREFIX = 'd2ltest'
TIMEOUT = 30


def _ns_list():
    return set(netns._list_netns())


def _mine():
    """Namespaces this test process made (other runs may be going on)."""
    return {n for n in _ns_list() if n.startswith(f'{PREFIX}-{os.getpid()}-')}


def _root_links():
    out = subprocess.run(['ip', '-o', 'link', 'show'], capture_output=True,
                         text=True, timeout=10).stdout
    return {line.split(':')[1].strip() for line in out.splitlines()}




def _read_line(proc):
    """The next line of ``proc``'s stdout, with a bounded wait."""
    line = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(TIMEOUT)
    if not line:
        proc.kill()
        raise AssertionError(f'no output from {proc.args} in {TIMEOUT} s')
    return line[0].strip()


ZMQ_SERVER = textwrap.dedent('''
    import sys, zmq
    ctx = zmq.Context()
    rep = ctx.socket(zmq.REP)
    rep.linger, rep.rcvtimeo, rep.sndtimeo = 0, 20000, 20000
    port = rep.bind_to_random_port('tcp://' + sys.argv[1])
    print(port, flush=True)
    msg = rep.recv(copy=False)
    rep.send_multipart([msg.bytes, msg.get('Peer-Address').encode()])
    rep.close(); ctx.term()
''')

ZMQ_CLIENT = textwrap.dedent('''
    import sys, zmq
    ctx = zmq.Context()
    req = ctx.socket(zmq.REQ)
    req.linger, req.rcvtimeo, req.sndtimeo = 0, 20000, 20000
    req.connect('tcp://%s:%s' % (sys.argv[1], sys.argv[2]))
    req.send(b'hello from ' + sys.argv[3].encode())
    echo, peer = req.recv_multipart()
    print(echo.decode(), peer.decode(), sep='|')
    req.close(); ctx.term()
''')

TCP_LISTEN = textwrap.dedent('''
    import socket, sys, time
    s = socket.socket()
    s.bind((sys.argv[1], 0)); s.listen()
    print(s.getsockname()[1], flush=True)
    time.sleep(60)
''')

TCP_CONNECT = textwrap.dedent('''
    import socket, sys
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect((sys.argv[1], int(sys.argv[2])))
        print('connected')
    except OSError as e:
        print(type(e).__name__)
''')


def _py(code, *args):
    return [sys.executable, '-c', code, *map(str, args)]


# --- what runs everywhere ------------------------------------------------------
def test_available_says_why(monkeypatch):
    ok, why = netns.available()
    assert isinstance(ok, bool) and isinstance(why, str)
    assert ok or why                      # a refusal always has a reason
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    ok, why = netns._probe()
    assert not ok and 'root' in why and '1000' in why
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    monkeypatch.setattr(netns.shutil, 'which', lambda name: None)
    ok, why = netns._probe()
    assert not ok and 'iproute2' in why
    # An unprivileged container: `ip netns add` exists but is refused.
    monkeypatch.setattr(netns.shutil, 'which', lambda name: '/sbin/ip')

    def refuse(*args, check=True):
        raise netns.NetnsError('`ip netns add x` failed (exit 1): '
                               'mount --make-shared /run/netns failed: '
                               'Operation not permitted')
    monkeypatch.setattr(netns, '_ip', refuse)
    ok, why = netns._probe()
    assert not ok and 'refused' in why and 'not permitted' in why


def test_bad_arguments():
    with pytest.raises(ValueError, match='positive'):
        netns.Hosts(0)
    with pytest.raises(ValueError, match='253'):
        netns.Hosts(300)
    with pytest.raises(ValueError, match='prefix'):
        netns.Hosts(2, prefix='a-b')


# --- with namespaces -------------------------------------------------------------
@needs_netns
def test_zmq_between_two_hosts():
    before_links = _root_links()
    with netns.Hosts(2, prefix=PREFIX) as hosts:
        assert _mine() == set(hosts.namespaces)
        a0, a1 = hosts[0].addr, hosts[1].addr
        assert [h.addr for h in hosts] == [str(hosts.subnet[1]),
                                          str(hosts.subnet[2])]
        assert a0.startswith('10.') and hosts.subnet.prefixlen == 24
        # The subnet was chosen free: the machine's own addresses lie elsewhere.
        assert not any(n.overlaps(hosts.subnet)
                       for n in netns._used_networks([]))
        server = hosts[0].popen(_py(ZMQ_SERVER, a0), stdout=subprocess.PIPE,
                                text=True)
        port = int(_read_line(server))
        client = hosts[1].run(_py(ZMQ_CLIENT, a0, port, 'host 1'),
                              timeout=TIMEOUT)
        assert client.returncode == 0, client.stderr
        echo, peer = client.stdout.strip().split('|')
        assert echo == 'hello from host 1'
        # The server saw the client come from host 1's interface, not lo.
        assert peer == a1 != '127.0.0.1'
        assert server.wait(timeout=TIMEOUT) == 0
        # Each host has exactly its loopback and its own eth0 address.
        for h in hosts:
            out = h.run(['ip', '-4', '-o', 'addr', 'show']).stdout.split('\n')
            addrs = sorted(line.split()[3] for line in out if line)
            assert addrs == sorted(['127.0.0.1/8', f'{h.addr}/24'])
    assert _mine() == set()
    assert _root_links() == before_links


@needs_netns
def test_loopback_is_private_to_each_host():
    with netns.Hosts(2, prefix=PREFIX) as hosts:
        listener = hosts[0].popen(_py(TCP_LISTEN, '127.0.0.1'),
                                  stdout=subprocess.PIPE, text=True)
        port = _read_line(listener)

        def connect(host, addr):
            res = host.run(_py(TCP_CONNECT, addr, port), timeout=TIMEOUT)
            return res.stdout.strip()

        # Control: host 0 reaches its own loopback server ...
        assert connect(hosts[0], '127.0.0.1') == 'connected'
        # ... host 1's 127.0.0.1 is its own, where nobody listens ...
        assert connect(hosts[1], '127.0.0.1') == 'ConnectionRefusedError'
        # ... and host 0's address does not lead to a loopback-bound server.
        assert connect(hosts[1], hosts[0].addr) == 'ConnectionRefusedError'
        # A host cannot bind another host's address either.
        res = hosts[1].run(_py('import socket; socket.socket().bind'
                               '((__import__("sys").argv[1], 0))',
                               hosts[0].addr))
        assert res.returncode != 0 and 'Cannot assign' in res.stderr


@needs_netns
def test_two_sets_of_hosts_are_separate_networks():
    with netns.Hosts(1, prefix=PREFIX) as a, netns.Hosts(1, prefix=PREFIX) as b:
        assert not set(a.namespaces) & set(b.namespaces)
        assert not a.subnet.overlaps(b.subnet)
        res = a[0].run(_py(TCP_CONNECT, b[0].addr, 9), timeout=TIMEOUT)
        assert res.stdout.strip() == 'OSError'      # network unreachable


@needs_netns
def test_exception_in_block_stops_processes_and_removes_everything():
    before_links = _root_links()
    # A process, and a child that the process leaves behind.
    orphan = ('import subprocess, sys, time;'
              'p = subprocess.Popen(["sleep", "300"]);'
              'print(p.pid, flush=True); time.sleep(300)')
    with pytest.raises(ZeroDivisionError):
        with netns.Hosts(2, prefix=PREFIX) as hosts:
            names = hosts.namespaces
            sleeper = hosts[0].popen(['sleep', '300'])
            parent = hosts[1].popen(_py(orphan), stdout=subprocess.PIPE,
                                    text=True)
            child = int(_read_line(parent))
            pids = [sleeper.pid, parent.pid, child]
            assert all(alive(p) for p in pids)
            assert set(names) <= _ns_list()
            1 / 0
    assert not any(alive(p) for p in pids)
    assert not set(names) & _ns_list()
    assert _mine() == set() and _root_links() == before_links
    with pytest.raises(RuntimeError, match='removed'):
        hosts[0].popen(['true'])


# The driver takes Ctrl-C as a program started from a terminal does, even
# when the tests run as a background job of a script (whose children
# inherit SIGINT ignored).
DRIVER = textwrap.dedent('''
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, sys.argv[1])
    import netns
    with netns.Hosts(2, prefix=sys.argv[2]) as hosts:
        procs = [h.popen(['sleep', '300']) for h in hosts]
        print(' '.join(hosts.namespaces), flush=True)
        print(' '.join(str(p.pid) for p in procs), flush=True)
        time.sleep(300)
''')


@needs_netns
@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=['ctrl-c', 'sigterm', 'sigkill'])
def test_killed_driver_leaves_nothing(sig):
    here = os.path.dirname(os.path.abspath(__file__))
    prefix = f'{PREFIX}{sig.value}'
    driver = subprocess.Popen(_py(DRIVER, here, prefix),
                              stdout=subprocess.PIPE, text=True)
    try:
        names = _read_line(driver).split()
        pids = [int(p) for p in _read_line(driver).split()]
        assert set(names) <= _ns_list() and all(alive(p) for p in pids)
        driver.send_signal(sig)
        driver.wait(timeout=TIMEOUT)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=TIMEOUT)
    if sig == signal.SIGKILL:
        # Nothing could run in the driver: the namespaces and processes stay
        # until the next Hosts with this prefix (or remove_stale) removes them.
        assert set(names) <= _ns_list()
        assert sorted(netns.remove_stale(prefix)) == sorted(names)
    else:
        assert driver.returncode != 0       # interrupted, not finished
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids)
    assert not set(names) & _ns_list()


SHOW_ENV = textwrap.dedent('''
    import json, os
    keys = ['DMLC_ROLE', 'DMLC_NODE_HOST', 'DMLC_PS_ROOT_URI',
            'DMLC_PS_ROOT_PORT', 'DMLC_NUM_SERVER', 'DMLC_NUM_WORKER',
            'DMLC_SERVER_ID', 'DMLC_WORKER_ID', 'EXTRA']
    print(json.dumps({k: os.environ.get(k) for k in keys}))
''')


@needs_netns
def test_start_job_places_the_roles():
    with netns.Hosts(4, prefix=PREFIX) as hosts:
        with pytest.raises(ValueError, match='needs 5 hosts, there are 4'):
            netns.start_job(hosts, ['true'], num_servers=2, num_workers=2)
        job = netns.start_job(hosts, _py(SHOW_ENV), num_servers=1,
                              num_workers=2, env={'EXTRA': 'x'}, port=9000,
                              stdout=subprocess.PIPE, text=True)
        outputs = netns.wait_all(job, TIMEOUT)
    assert [name for name, _, _ in job] == ['scheduler', 'server 0',
                                            'worker 0', 'worker 1']
    common = dict(DMLC_PS_ROOT_URI=hosts[0].addr, DMLC_PS_ROOT_PORT='9000',
                  DMLC_NUM_SERVER='1', DMLC_NUM_WORKER='2', EXTRA='x',
                  DMLC_SERVER_ID=None, DMLC_WORKER_ID=None)
    expect = [dict(common, DMLC_ROLE='scheduler'),
              dict(common, DMLC_ROLE='server', DMLC_SERVER_ID='0'),
              dict(common, DMLC_ROLE='worker', DMLC_WORKER_ID='0'),
              dict(common, DMLC_ROLE='worker', DMLC_WORKER_ID='1')]
    for (name, host, proc), (out, _), want in zip(job, outputs, expect):
        assert proc.returncode == 0
        assert json.loads(out) == dict(want, DMLC_NODE_HOST=host.addr)


@needs_netns
def test_wait_all_stops_a_process_at_the_deadline():
    with netns.Hosts(1, prefix=PREFIX) as hosts:
        job = [('sleeper', hosts[0], hosts[0].popen(
            ['sleep', '300'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))]
        (out, err), = netns.wait_all(job, timeout=0.5)
        assert job[0][2].returncode is not None and 'killed' in err


@needs_netns
def test_failure_while_building_leaves_nothing(monkeypatch):
    real_ip, made = netns._ip, []

    def flaky(*args, check=True):
        if args[:2] == ('netns', 'add'):
            made.append(args[2])
        # Only our own host 2 (the subnet search reads every namespace's
        # addresses, another run's h2 among them).
        if (args[0] == '-n' and args[1] in made and args[1].endswith('-h2')
                and args[2:4] == ('addr', 'add')):
            raise netns.NetnsError('simulated: address refused')
        return real_ip(*args, check=check)
    monkeypatch.setattr(netns, '_ip', flaky)
    before_links = _root_links()
    with pytest.raises(netns.NetnsError, match='simulated'):
        with netns.Hosts(4, prefix=PREFIX):
            pass
    assert len(made) == 4                   # the switch, h0, h1, h2
    assert not set(made) & _ns_list()
    assert _root_links() == before_links
