"""A stand-in for a job's process, for tests/test_launch.py.

Prints ``env {json}`` (its DMLC_* and TEST_* variables and its pid) on
stdout and ``note from <role>`` on stderr, writes its pid to
``$TEST_PIDDIR/<role>-<rank>`` when that is set, then acts on the first rule
``ROLE[:RANK]=ACTION`` of its arguments that matches it (``*`` matches any
role; no match: exit 0).  Actions: ``exit:N``, ``sleep:S`` (then exit 0),
``stubborn`` (ignores SIGTERM, sleeps), ``signal:N`` (kills itself with
signal N), ``orphan`` (starts a sleeping grandchild, writes its pid to
``<role>-<rank>.orphan``, exits 0), ``late:ACTION`` (ACTION once every
process of the job has written its pid, so a failure finds all started).
"""
import json
import os
import signal
import subprocess
import sys
import time

role = os.environ.get('DMLC_ROLE', '?')
rank = os.environ.get('DMLC_WORKER_ID', os.environ.get('DMLC_SERVER_ID', '0'))
action = 'exit:0'
for rule in sys.argv[1:]:
    who, _, what = rule.partition('=')
    r, _, k = who.partition(':')
    if r in (role, '*') and k in ('', rank):
        action = what
        break
if action.endswith('stubborn'):       # before anyone can see it started
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

env = {k: v for k, v in os.environ.items()
       if k.startswith(('DMLC_', 'TEST_', 'D2LMINI_'))
       or k == 'PYTHONUNBUFFERED'}
env['pid'] = os.getpid()
print('env', json.dumps(env, sort_keys=True))
print(f'note from {role}', file=sys.stderr)
piddir = os.environ.get('TEST_PIDDIR')
if piddir:
    with open(os.path.join(piddir, f'{role}-{rank}'), 'w') as f:
        f.write(str(os.getpid()))
sys.stdout.flush()

verb, _, arg = action.partition(':')
if verb == 'late':
    servers = int(os.environ['DMLC_NUM_SERVER'])
    total = int(os.environ['DMLC_NUM_WORKER']) + servers + bool(servers)
    deadline = time.monotonic() + 30
    while len(os.listdir(piddir)) < total and time.monotonic() < deadline:
        time.sleep(0.02)
    verb, _, arg = arg.partition(':')
if verb == 'exit':
    sys.exit(int(arg))
elif verb == 'sleep':
    time.sleep(float(arg))
elif verb == 'stubborn':
    time.sleep(60)
elif verb == 'signal':
    os.kill(os.getpid(), int(arg))
    time.sleep(60)
elif verb == 'orphan':
    child = subprocess.Popen(
        [sys.executable, '-c', 'import time; time.sleep(60)'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(piddir, f'{role}-{rank}.orphan'), 'w') as f:
        f.write(str(child.pid))
else:
    sys.exit(f'node.py: unknown action {action!r}')
