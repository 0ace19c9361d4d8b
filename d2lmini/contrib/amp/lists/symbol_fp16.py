"""AMP's operator lists for float16 (MXNet 1.9.1's ``lists/symbol_fp16.py``),
kept to the operators d2lmini has.  Data only.

Every name is an operator name: the ``op`` of a graph node and the name of
its ``nd``/``mx.sym`` function.  The lists say what
:func:`d2lmini.contrib.amp.init` and :func:`~d2lmini.contrib.amp.convert_symbol`
do with an operator's inputs:

* ``FP16_FUNCS``: cast to float16.  Products (matrix multiplies and
  convolutions) gain the most from float16 and lose the least: each output
  is a sum of many terms, which float16 hardware accumulates in float32.
* ``FP32_FUNCS``: cast to float32.  Exponentials, logarithms, powers and
  long sums overflow or lose their small terms in float16 (``exp(12)`` is
  already past float16's largest value, 65504), and so do the losses.
* ``CONDITIONAL_FP32_FUNCS``: cast to float32 for some attribute values
  only (``Activation`` with ``act_type='softrelu'`` computes an exp).
* ``WIDEST_TYPE_CASTS``: inputs that must share one type get the widest
  of theirs (``amp_multicast``): float16 + float32 is float32.
* ``FP16_FP32_FUNCS``: run in whatever type they are given.
* ``LOSS_OUTPUT_FUNCTIONS``: loss heads whose ``grad_scale`` AMP multiplies
  by the loss scale (their gradient does not come through ``scale_loss``).

``D2LMINI_NAMES`` are d2lmini's operators that MXNet lists under another
name; each is in the list of its MXNet counterpart.
"""

# d2lmini's name -> the MXNet operator it is (tests check the list agrees)
D2LMINI_NAMES = {
    '_conv_act': 'Convolution',        # gluon's Conv2D(activation=...), fused
    'add': 'broadcast_add', 'subtract': 'broadcast_sub',
    'multiply': 'broadcast_mul', 'divide': 'broadcast_div',
    'maximum': 'broadcast_maximum', 'minimum': 'broadcast_minimum',
    'mod': 'broadcast_mod', 'equal': 'broadcast_equal',
    'not_equal': 'broadcast_not_equal', 'greater': 'broadcast_greater',
    'greater_equal': 'broadcast_greater_equal', 'lesser': 'broadcast_lesser',
    'lesser_equal': 'broadcast_lesser_equal',
    'power': 'broadcast_power', 'hypot': 'broadcast_hypot',
}

FP16_FUNCS = [
    'Convolution', 'Deconvolution', 'FullyConnected', 'RNN',
    '_conv_act',
]

FP16_FP32_FUNCS = [
    'BatchNorm', 'BlockGrad', 'Cast', 'cast', 'Dropout', 'Flatten', 'Pad',
    'Pooling', 'SliceChannel', 'SwapAxis', '_copy', '_copyto', '_div_scalar',
    '_equal_scalar', '_greater_scalar', '_greater_equal_scalar',
    '_lesser_scalar', '_lesser_equal_scalar', '_maximum_scalar',
    '_minimum_scalar', '_minus_scalar', '_mod_scalar', '_mul_scalar',
    '_not_equal_scalar', '_plus_scalar', '_random_exponential',
    '_random_gamma', '_random_generalized_negative_binomial',
    '_random_negative_binomial', '_random_normal', '_random_poisson',
    '_random_randint', '_random_uniform', '_rminus_scalar', '_rmod_scalar',
    '_sample_multinomial', 'abs', 'adam_update', 'all_finite', 'amp_cast',
    'amp_multicast', 'arccosh', 'arcsinh', 'arctan', 'argmax',
    'argmax_channel', 'argmin', 'broadcast_axes', 'broadcast_axis',
    'broadcast_like', 'broadcast_to', 'cbrt', 'ceil', 'choose_element_0index',
    'clip', 'cos', 'crop', 'degrees', 'erf', 'expand_dims',
    'fill_element_0index', 'fix', 'flatten', 'flip', 'floor', 'ftml_update',
    'ftrl_update', 'logical_not', 'max_axis', 'max', 'min', 'min_axis',
    'mp_sgd_mom_update', 'mp_sgd_update', 'multi_all_finite',
    'multi_mp_sgd_mom_update', 'multi_mp_sgd_update', 'multi_sgd_mom_update',
    'multi_sgd_update', 'negative', 'normal', 'one_hot', 'ones_like', 'pad',
    'pick', 'radians', 'random_exponential', 'random_gamma',
    'random_generalized_negative_binomial', 'random_negative_binomial',
    'random_normal', 'random_poisson', 'random_randint', 'random_uniform',
    'relu', 'repeat', 'reshape', 'reshape_like', 'reverse', 'rint',
    'rmsprop_update', 'rmspropalex_update', 'round', 'sample_exponential',
    'sample_gamma', 'sample_generalized_negative_binomial',
    'sample_multinomial', 'sample_negative_binomial', 'sample_normal',
    'sample_poisson', 'sample_uniform', 'sgd_mom_update', 'sgd_update',
    'shape_array', 'sigmoid', 'sign', 'signsgd_update', 'signum_update',
    'sin', 'size_array', 'slice', 'slice_axis', 'slice_like', 'sort', 'split',
    'sqrt', 'squeeze', 'stop_gradient', 'swapaxes', 'take', 'tanh', 'tile',
    'transpose', 'trunc', 'uniform', 'zeros_like',
]

FP32_FUNCS = [
    'arccos', 'arcsin', 'cosh', 'erfinv', 'sinh', 'tan', 'arctanh',
    # exponents
    'exp', 'expm1', 'log', 'log10', 'log2', 'log1p',
    # powers
    'broadcast_power', 'square', 'reciprocal', '_rdiv_scalar', 'rsqrt', 'rcbrt',
    '_power_scalar', '_rpower_scalar', 'broadcast_hypot', 'power', 'hypot',
    # reductions
    'sum', 'sum_axis', 'nansum', 'prod', 'nanprod', 'mean', 'norm', 'softmin',
    'argsort', 'topk',
    # neural network
    'SoftmaxOutput', 'softmax', 'Softmax', 'log_softmax', 'InstanceNorm',
    'GroupNorm', 'SoftmaxActivation', 'LinearRegressionOutput',
    'LogisticRegressionOutput', 'MAERegressionOutput', 'softmax_cross_entropy',
    'MakeLoss', 'make_loss', 'CTCLoss', 'ctc_loss',
]

CONDITIONAL_FP32_FUNCS = [
    ('Activation', 'act_type', ['softrelu']),
    ('LeakyReLU', 'act_type', ['elu', 'selu']),
]

WIDEST_TYPE_CASTS = [
    'Concat', 'concat', 'ElementWiseSum', 'add_n', 'batch_dot',
    'broadcast_add', 'broadcast_plus', 'broadcast_div', 'broadcast_equal',
    'broadcast_greater', 'broadcast_greater_equal', 'broadcast_lesser',
    'broadcast_lesser_equal', 'broadcast_maximum', 'broadcast_minimum',
    'broadcast_minus', 'broadcast_mod', 'broadcast_mul',
    'broadcast_not_equal', 'broadcast_sub', 'dot', 'elemwise_add',
    'elemwise_div', 'elemwise_mul', 'elemwise_sub', 'stack', 'where',
    'add', 'subtract', 'multiply', 'divide', 'maximum', 'minimum', 'mod',
    'equal', 'not_equal', 'greater', 'greater_equal', 'lesser', 'lesser_equal',
]

LOSS_OUTPUT_FUNCTIONS = [
    'SoftmaxOutput', 'LinearRegressionOutput', 'LogisticRegressionOutput',
    'MAERegressionOutput',
]
