"""A few named collectives with HOROVOD_TIMELINE set (by the test).

    mpiexec -n N python timeline.py
"""
import numpy as np

import d2lmini.horovod as hvd
from d2lmini import nd

hvd.init()
x = nd.array(np.ones(1000, dtype=np.float32))
hvd.allreduce(x, name='t.allreduce.mpi', algorithm='mpi').wait_to_read()
hvd.allreduce(x, name='t.allreduce.ring', algorithm='ring').wait_to_read()
hvd.allgather(x, name='t.allgather').wait_to_read()
hvd.broadcast(x, 0, name='t.broadcast').wait_to_read()
# ten tensors of 4000 bytes: fused into buffers of HOROVOD_FUSION_THRESHOLD
outs = hvd.grouped_allreduce([x * i for i in range(10)], name='t.grouped')
assert [float(o.asnumpy()[0]) for o in outs] == list(map(float, range(10)))
hvd.shutdown()
