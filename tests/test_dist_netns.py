"""The distributed store across hosts: every process in a network namespace
of its own (tests/netns.py), so every message crosses a network interface.

Host 0 runs the scheduler, the next hosts the servers, then the workers.
127.0.0.1 in one host is not the loopback of another, so a node that binds
or announces 127.0.0.1 where it should use its address cannot be reached:
the job fails instead of passing by accident (a test makes sure it does).
The workers check MXNet's closed form (as its nightly dist_sync_kvstore
test does): after every worker pushed ``(rank + 1) * ones``, the servers
hold the sum; with SGD on the servers, ``N`` rounds give
``S - N * lr * S``, ``S = W (W + 1) / 2``.  A last test has two workers
read their halves of Fashion-MNIST with ``d2l.load_data_fashion_mnist(...,
num_parts, part_index)``.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import netns
from conftest import child_pythonpath

pytest.importorskip('zmq')
OK, WHY = netns.available()
pytestmark = pytest.mark.skipif(not OK, reason=f'no network namespaces: {WHY}')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 90            # seconds for the whole job
ROUNDS, LR = 3, 0.25

WORKER = textwrap.dedent('''
    import json, socket, sys
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

    def tcp_endpoints():
        """(local, remote) addresses of this host's open TCP connections,
        from the kernel's table (the namespace holds this process alone)."""
        def addr(field):
            raw = bytes.fromhex(field.split(':')[0])
            return socket.inet_ntoa(raw[::-1] if sys.byteorder == 'little'
                                    else raw)
        with open('/proc/net/tcp') as f:
            rows = [line.split() for line in f.readlines()[1:]]
        return sorted({(addr(r[1]), addr(r[2])) for r in rows if r[3] == '01'})

    print(json.dumps({'rank': kv.rank, 'num_workers': kv.num_workers,
                      'plain': plain, 'sgd': sgd,
                      'tcp': tcp_endpoints()}), flush=True)
''')


def _run_job(tmp_path, heartbeat_timeout=5, env_of=None):
    """The job on five hosts; its [(name, host, popen)], outputs, report."""
    pytest.importorskip('d2lmini.kvstore.dist')
    script = tmp_path / 'worker.py'
    script.write_text(WORKER)
    with netns.Hosts(5, prefix='d2ldist') as hosts:
        job = netns.start_job(
            hosts, [sys.executable, str(script), str(ROUNDS), str(LR)],
            num_servers=2, num_workers=2, env_of=env_of,
            env=dict(PYTHONPATH=child_pythonpath(ROOT), PYTHONUNBUFFERED='1', OMP_NUM_THREADS='1',
                     MXNET_KVSTORE_BIGARRAY_BOUND='100',
                     PS_HEARTBEAT_INTERVAL='0.2',
                     PS_HEARTBEAT_TIMEOUT=str(heartbeat_timeout)),
            cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        outputs = netns.wait_all(job, TIMEOUT)
    report = '\n'.join(f'--- {name} ({host.addr}): rc={p.returncode}\n'
                       f'{out}{err}' for (name, host, p), (out, err)
                       in zip(job, outputs))
    return job, outputs, report


def test_dist_sync_across_five_hosts(tmp_path):
    job, outputs, report = _run_job(tmp_path)
    procs = [p for _, _, p in job]
    assert [name for name, _, _ in job] == ['scheduler', 'server 0',
                                            'server 1', 'worker 0', 'worker 1']
    assert [p.returncode for p in procs] == [0] * len(procs), report
    s = 2 * 3 / 2                      # W (W + 1) / 2 with W = 2
    expect_sgd = s - ROUNDS * LR * s   # 0.75: exact in float32
    for i, (out, _) in enumerate(outputs[3:]):
        res = json.loads(out.strip().splitlines()[-1])
        assert res['rank'] == i and res['num_workers'] == 2, report
        assert res['plain'] == {'3': [s, s], '9': [s, s]}, report
        assert res['sgd'] == {'3': [expect_sgd] * 2, '9': [expect_sgd] * 2}, report
        # The worker's connections run from its own address to the other
        # hosts' (the scheduler's and both servers' among them), none
        # through a loopback.
        worker = job[3 + i][1].addr
        local = {loc for loc, _ in res['tcp']}
        remote = {rem for _, rem in res['tcp']}
        assert local == {worker}, report
        assert {h.addr for _, h, _ in job[:3]} <= remote, report
        assert not any(a.startswith('127.') for a in remote), report



def test_a_server_announcing_loopback_fails_the_job(tmp_path):
    """The mistake this setup exists to catch: servers that announce
    127.0.0.1 cannot be reached from the workers' hosts, so the job must
    fail with an error, neither pass nor hang."""
    def loopback_servers(name, host):
        return {'DMLC_NODE_HOST': '127.0.0.1'} if name.startswith('server') else {}
    job, outputs, report = _run_job(tmp_path, heartbeat_timeout=1,
                                    env_of=loopback_servers)
    for (name, _, proc), (_, err) in zip(job, outputs):
        assert proc.returncode == 1, report       # failed, not killed
        if name.startswith('worker'):
            assert 'DistributedError' in err, report
            assert 'no answer' in err and 'DMLC_NODE_HOST' in err, report


DATA_WORKER = textwrap.dedent('''
    import json, sys
    import numpy as np
    import d2lmini as mx
    from d2lmini import d2l, nd

    kv = mx.kv.create('dist_sync')
    train_iter, _ = d2l.load_data_fashion_mnist(
        1000, root=sys.argv[1], num_parts=kv.num_workers, part_index=kv.rank)
    pixels, hist = 0, np.zeros(10, np.int64)
    for X, y in train_iter:
        pixels += int(np.rint(X.asnumpy() * 255).astype(np.int64).sum())
        hist += np.bincount(y.asnumpy(), minlength=10)
    # The store adds the workers' label histograms (exact in float32).
    kv.init(0, nd.zeros(10))
    kv.push(0, nd.array(hist.astype(np.float32)))
    total = nd.zeros(10)
    kv.pull(0, out=total)
    print(json.dumps({'rank': kv.rank, 'batches': len(train_iter),
                      'pixels': pixels, 'hist': hist.tolist(),
                      'total': total.asnumpy().tolist()}), flush=True)
''')


def test_workers_read_their_parts_of_fashion_mnist(tmp_path, fashion_mnist_dir):
    """d2l.load_data_fashion_mnist(num_parts=W, part_index=rank) on two
    hosts: each worker reads its half, the halves make the training set."""
    pytest.importorskip('d2lmini.kvstore.dist')
    from d2lmini.gluon.data.vision import FashionMNIST
    images, labels = FashionMNIST(root=str(fashion_mnist_dir))[:60000]
    images = images.asnumpy().astype(np.int64)
    script = tmp_path / 'data_worker.py'
    script.write_text(DATA_WORKER)
    with netns.Hosts(4, prefix='d2ldist') as hosts:
        job = netns.start_job(
            hosts, [sys.executable, str(script), str(fashion_mnist_dir)],
            num_servers=1, num_workers=2,
            env=dict(PYTHONPATH=child_pythonpath(ROOT), PYTHONUNBUFFERED='1',
                     OMP_NUM_THREADS='1', PS_HEARTBEAT_INTERVAL='0.2',
                     PS_HEARTBEAT_TIMEOUT='5'),
            cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        outputs = netns.wait_all(job, TIMEOUT)
    report = '\n'.join(f'--- {name}: rc={p.returncode}\n{out}{err}'
                       for (name, _, p), (out, err) in zip(job, outputs))
    assert [p.returncode for _, _, p in job] == [0] * 4, report
    whole = np.bincount(labels, minlength=10)
    for rank, (out, _) in enumerate(outputs[2:]):
        res = json.loads(out.strip().splitlines()[-1])
        part = slice(rank * 30000, (rank + 1) * 30000)
        assert res['rank'] == rank and res['batches'] == 30, report
        assert res['pixels'] == int(images[part].sum()), report
        assert res['hist'] == np.bincount(labels[part], minlength=10).tolist()
        assert res['total'] == whole.tolist(), report
