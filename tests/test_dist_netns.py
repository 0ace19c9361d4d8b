"""The distributed store across hosts: every process in a network namespace
of its own (tests/netns.py), so every message crosses a network interface.

Host 0 runs the scheduler, hosts 1-2 the servers, hosts 3-4 the workers.
127.0.0.1 in one host is not the loopback of another, so a node that binds
or announces 127.0.0.1 where it should use its address cannot be reached:
the job fails (within the bounded wait) instead of passing by accident.
The workers check MXNet's closed form (as its nightly dist_sync_kvstore
test does): after every worker pushed ``(rank + 1) * ones``, the servers
hold the sum; with SGD on the servers, ``N`` rounds give
``S - N * lr * S``, ``S = W (W + 1) / 2``.
"""
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import netns

pytest.importorskip('zmq')
OK, WHY = netns.available()
pytestmark = pytest.mark.skipif(not OK, reason=f'no network namespaces: {WHY}')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 90            # seconds for the whole job
ROUNDS, LR = 3, 0.25
# A fresh namespace has no listening sockets: any port is free in host 0.
PORT = 9091

WORKER = textwrap.dedent('''
    import json, sys
    import d2lmini as mx
    from d2lmini import nd

    rounds, lr = int(sys.argv[1]), float(sys.argv[2])
    kv = mx.kv.create('dist_sync')
    shapes = {3: (2, 3), 9: (50, 10)}     # key 9 is split over the servers
    for k, shape in shapes.items():
        kv.init(k, nd.ones(shape))
    out = {k: nd.zeros(shape) for k, shape in shapes.items()}

    def pull_all():
        for k in shapes:
            kv.pull(k, out=out[k])
        return {str(k): [float(o.min().asscalar()), float(o.max().asscalar())]
                for k, o in out.items()}

    for k, shape in shapes.items():       # no optimizer: the sum is stored
        kv.push(k, nd.ones(shape) * (kv.rank + 1))
    plain = pull_all()
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=lr))
    for _ in range(rounds):
        for k, shape in shapes.items():
            kv.push(k, nd.ones(shape) * (kv.rank + 1))
    sgd = pull_all()
    kv.barrier()
    print(json.dumps({'rank': kv.rank, 'num_workers': kv.num_workers,
                      'plain': plain, 'sgd': sgd}), flush=True)
''')


def test_dist_sync_across_five_hosts(tmp_path):
    pytest.importorskip('d2lmini.kvstore.dist')
    script = tmp_path / 'worker.py'
    script.write_text(WORKER)
    roles = (['scheduler'] + [f'server {i}' for i in range(2)]
             + [f'worker {i}' for i in range(2)])
    with netns.Hosts(len(roles), prefix='d2ldist') as hosts:
        base = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED='1',
                    OMP_NUM_THREADS='1',
                    DMLC_PS_ROOT_URI=hosts[0].addr, DMLC_PS_ROOT_PORT=str(PORT),
                    DMLC_NUM_SERVER='2', DMLC_NUM_WORKER='2',
                    MXNET_KVSTORE_BIGARRAY_BOUND='100',
                    PS_HEARTBEAT_INTERVAL='0.2', PS_HEARTBEAT_TIMEOUT='5')
        procs = []
        for host, name in zip(hosts, roles):
            role, _, rank = name.partition(' ')
            env = dict(base, DMLC_ROLE=role, DMLC_NODE_HOST=host.addr)
            if rank:
                env['DMLC_WORKER_ID' if role == 'worker'
                    else 'DMLC_SERVER_ID'] = rank
            # The same command for every role, as with MXNet's launcher.
            procs.append(host.popen(
                [sys.executable, str(script), str(ROUNDS), str(LR)], env=env,
                cwd=str(tmp_path), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True))
        outputs = _finish(procs, TIMEOUT)
        report = '\n'.join(f'--- {name} ({host.addr}): rc={p.returncode}\n'
                           f'{out}{err}' for name, host, p, (out, err)
                           in zip(roles, hosts, procs, outputs))
    assert [p.returncode for p in procs] == [0] * len(procs), report
    s = 2 * 3 / 2                      # W (W + 1) / 2 with W = 2
    expect_sgd = s - ROUNDS * LR * s   # 0.75: exact in float32
    for i, (out, _) in enumerate(outputs[3:]):
        res = json.loads(out.strip().splitlines()[-1])
        assert res['rank'] == i and res['num_workers'] == 2, report
        assert res['plain'] == {'3': [s, s], '9': [s, s]}, report
        assert res['sgd'] == {'3': [expect_sgd] * 2, '9': [expect_sgd] * 2}, report


def _finish(procs, timeout):
    """Every process's (stdout, stderr), waiting at most ``timeout`` s in
    all; a process still running then is left to the hosts' cleanup."""
    deadline = time.monotonic() + timeout
    outputs = []
    for p in procs:
        try:
            outputs.append(p.communicate(
                timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            outputs.append((out, err + '\n[killed: still running at the '
                                       'deadline]'))
    return outputs
