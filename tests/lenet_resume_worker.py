"""Train the multi-GPU chapter's LeNet on a slice of Fashion-MNIST, in its own
process, optionally resuming from a checkpoint.  Used by test_lenet_resume.py.

    python lenet_resume_worker.py DATA_DIR EPOCH_FROM EPOCH_TO OUT [CKPT_IN]

Writes OUT.params and OUT.states.  Each epoch shuffles with its own seed, so
epoch k sees the same batches whether or not the run was resumed.
"""
import sys

import numpy as np

import d2lmini as mx
from d2lmini import autograd, d2l, gluon, init
from d2lmini.gluon.data import ArrayDataset, DataLoader
from d2lmini.gluon.data.vision import FashionMNIST, transforms

NUM_TRAIN, BATCH, LR = 1024, 128, 0.1


def main(root, start, stop, out, ckpt=None):
    # Unpinned, a CPU operation's threads follow the machine's load
    # (engine/cores.py), and a product or sum split over 1 or 2 threads
    # adds in another order: 4e-7 apart after 3 epochs.  Pinned, the runs
    # compute alike whatever else the machine does.
    mx.engine.set_blas_threads(1)
    mx.random.seed(0)
    train = FashionMNIST(root=root, train=True)
    X = transforms.ToTensor()(train._images[:NUM_TRAIN])   # NHWC uint8 -> NCHW
    y = train._label[:NUM_TRAIN]
    ctx = mx.current_context()                   # gpu(0) in the GPU run
    net = d2l.lenet_multigpu()
    net.initialize(init.Xavier(), ctx=ctx)
    net(mx.nd.array(X[:2], ctx=ctx))                      # finish deferred init
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': LR, 'momentum': 0.9, 'wd': 1e-4})
    if ckpt is not None:
        net.load_parameters(ckpt + '.params')
        trainer.load_states(ckpt + '.states')
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    loader = DataLoader(ArrayDataset(X, y), BATCH, shuffle=True)
    for epoch in range(start, stop):
        np.random.seed(1000 + epoch)             # the loader shuffles with NumPy
        for Xb, yb in loader:                    # host batches, to the net's device
            Xb, yb = Xb.as_in_context(ctx), yb.as_in_context(ctx)
            with autograd.record():
                l = loss(net(Xb), yb)
            l.backward()
            trainer.step(Xb.shape[0])
    net.save_parameters(out + '.params')
    trainer.save_states(out + '.states')
    mx.nd.waitall()


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
         sys.argv[5] if len(sys.argv) > 5 else None)
