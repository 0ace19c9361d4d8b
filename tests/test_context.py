"""Contexts: MXNet's numeric device types, and the no-GPU error."""
import pytest

import d2lmini as mx


def test_device_typeid_as_mxnet():
    assert mx.cpu(3).device_typeid == 1 and mx.gpu(0).device_typeid == 2
    assert mx.Context.devtype2str[1] == 'cpu' and mx.Context.devstr2type['gpu'] == 2
    for ctx in (mx.cpu(0), mx.gpu(1), mx.cpu_pinned(2)):
        back = mx.Context(mx.Context.devtype2str[ctx.device_typeid], ctx.device_id)
        assert back == ctx


@pytest.mark.skipif(mx.num_gpus() > 0, reason='needs a machine without a GPU')
def test_using_a_missing_gpu_is_an_mxnet_error():
    ctx = mx.gpu(0)                       # naming it is fine, as in MXNet
    assert repr(ctx) == 'gpu(0)'
    with pytest.raises(mx.base.MXNetError, match=r'gpu\(0\).*no GPU'):
        mx.nd.ones((1,), ctx=ctx)


@pytest.mark.skipif(mx.num_gpus() > 0, reason='a GPU is there')
def test_a_gpu_array_without_a_gpu_says_what_to_install():
    # chapter 1 shows this message (its output is not compared: it prints
    # nothing on a machine with a GPU)
    with pytest.raises(RuntimeError, match=r'cannot use gpu\(0\): no GPU available'
                       r'.*pip install'):
        mx.nd.ones(3, ctx=mx.gpu(0))
