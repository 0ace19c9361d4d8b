"""Where pretrained weights live: MXNet's file names, checksums and URLs.

A pretrained net of MXNet's model zoo is one ``.params`` file named
``{name}-{first 8 hex digits of its sha1}.params`` (``resnet18_v1-a0666292
.params``) in a folder, by default ``~/.mxnet/models``.  The full sha1 of
each published file is in :data:`_model_sha1` (MXNet 1.9.1's table), so
a file is used only if it is byte for byte the published one
(:func:`load_pretrained` puts it into a net).  A missing file is
downloaded as MXNet does: the zip
``{repo}gluon/models/{file}.zip`` from MXNet's repository, or from
``$MXNET_GLUON_REPO`` (a mirror; ``file:///some/folder/`` works too), with
Fashion-MNIST's downloader (a temporary file, renamed into place only when
complete).  Without internet, the error says which file to put where.

>>> get_model_file('resnet18_v1')                      # doctest: +SKIP
'/home/me/.mxnet/models/resnet18_v1-a0666292.params'
"""
import hashlib
import http.client
import os
import secrets
import zipfile

from ..utils import _APACHE_REPO, _get_repo_url

__all__ = ['get_model_file', 'load_pretrained', 'purge', 'short_hash', 'check_sha1']

_model_sha1 = {name: checksum for checksum, name in [
    ('44335d1f0046b328243b32a26a4fbd62d9057b45', 'alexnet'),
    ('f27dbf2dbd5ce9a80b102d89c7483342cd33cb31', 'densenet121'),
    ('b6c8a95717e3e761bd88d145f4d0a214aaa515dc', 'densenet161'),
    ('2603f878403c6aa5a71a124c4a3307143d6820e9', 'densenet169'),
    ('1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb', 'densenet201'),
    ('ed47ec45a937b656fcc94dabde85495bbef5ba1f', 'inceptionv3'),
    ('9f83e440996887baf91a6aff1cccc1c903a64274', 'mobilenet0.25'),
    ('8e9d539cc66aa5efa71c4b6af983b936ab8701c3', 'mobilenet0.5'),
    ('529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2', 'mobilenet0.75'),
    ('6b8c5106c730e8750bcd82ceb75220a3351157cd', 'mobilenet1.0'),
    ('36da4ff1867abccd32b29592d79fc753bca5a215', 'mobilenetv2_1.0'),
    ('e2be7b72a79fe4a750d1dd415afedf01c3ea818d', 'mobilenetv2_0.75'),
    ('aabd26cd335379fcb72ae6c8fac45a70eab11785', 'mobilenetv2_0.5'),
    ('ae8f9392789b04822cbb1d98c27283fc5f8aa0a7', 'mobilenetv2_0.25'),
    ('a0666292f0a30ff61f857b0b66efc0228eb6a54b', 'resnet18_v1'),
    ('48216ba99a8b1005d75c0f3a0c422301a0473233', 'resnet34_v1'),
    ('0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce', 'resnet50_v1'),
    ('d988c13d6159779e907140a638c56f229634cb02', 'resnet101_v1'),
    ('671c637a14387ab9e2654eafd0d493d86b1c8579', 'resnet152_v1'),
    ('a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657', 'resnet18_v2'),
    ('9d6b80bbc35169de6b6edecffdd6047c56fdd322', 'resnet34_v2'),
    ('ecdde35339c1aadbec4f547857078e734a76fb49', 'resnet50_v2'),
    ('18e93e4f48947e002547f50eabbcc9c83e516aa6', 'resnet101_v2'),
    ('f2695542de38cf7e71ed58f02893d82bb409415e', 'resnet152_v2'),
    ('264ba4970a0cc87a4f15c96e25246a1307caf523', 'squeezenet1.0'),
    ('33ba0f93753c83d86e1eb397f38a667eaf2e9376', 'squeezenet1.1'),
    ('dd221b160977f36a53f464cb54648d227c707a05', 'vgg11'),
    ('ee79a8098a91fbe05b7a973fed2017a6117723a8', 'vgg11_bn'),
    ('6bc5de58a05a5e2e7f493e2d75a580d83efde38c', 'vgg13'),
    ('7d97a06c3c7a1aecc88b6e7385c2b373a249e95e', 'vgg13_bn'),
    ('e660d4569ccb679ec68f1fd3cce07a387252a90a', 'vgg16'),
    ('7f01cf050d357127a73826045c245041b0df7363', 'vgg16_bn'),
    ('ad2f660d101905472b83590b59708b71ea22b2e5', 'vgg19'),
    ('f360b758e856f1074a85abd5fd873ed1d98297c3', 'vgg19_bn')]}

apache_repo_url = _APACHE_REPO        # MXNet's name for it here
_url_format = '{repo_url}gluon/models/{file_name}.zip'
_CHUNK = 1 << 20
ROOT = os.path.join('~', '.mxnet', 'models')   # MXNet's default folder


class ModelFileNotFoundError(FileNotFoundError):
    """No usable weights file on disk, and downloading it failed."""


def short_hash(name):
    """The 8 hex digits of ``name``'s weights file name (``'a0666292'``)."""
    if name not in _model_sha1:
        raise ValueError(f'Pretrained model for {name} is not available; the '
                         f'model store knows {sorted(_model_sha1)}.')
    return _model_sha1[name][:8]


def check_sha1(filename, sha1_hash):
    """Whether the sha1 of the file ``filename`` is ``sha1_hash`` (hex)."""
    return _sha1(filename) == sha1_hash.lower()


def _sha1(filename):
    digest = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(_CHUNK), b''):
            digest.update(chunk)
    return digest.hexdigest()


def get_model_file(name, root=ROOT, progress=True):
    """The path of ``name``'s pretrained weights, downloaded if need be.

    Parameters
    ----------
    name : str
        A model of the store (``'resnet18_v1'``).
    root : str, default '~/.mxnet/models'
        The folder of the weights files (created if missing).
    progress : bool, default True
        Show a progress bar while downloading.

    Raises
    ------
    ModelFileNotFoundError
        The file is missing (or not the published one) and downloading
        failed; the message names the file, the folder and the URL.
    ValueError
        The downloaded file is not the published one (it is discarded).
    """
    file_name = f'{name}-{short_hash(name)}'
    root = os.path.expanduser(root)
    path = os.path.join(root, file_name + '.params')
    sha1 = _model_sha1[name]
    found = None
    if os.path.exists(path):
        found = _sha1(path)
        if found == sha1:
            return path
    url = _url_format.format(repo_url=_get_repo_url(), file_name=file_name)
    try:
        _download(url, root, file_name, sha1, progress)
    except (OSError, http.client.HTTPException, zipfile.BadZipFile, KeyError) as e:
        raise ModelFileNotFoundError(
            _not_found_message(name, path, sha1, found, url, e)) from e
    return path


def load_pretrained(net, name, ctx=None, root=ROOT):
    """Load ``name``'s published weights (:func:`get_model_file`) into
    ``net``, on ``ctx``; returns ``net``.  The model zoo's constructors call
    it for ``pretrained=True``."""
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


def _download(url, root, file_name, sha1, progress):
    """Fetch the zip at ``url`` and put its ``file_name.params`` into ``root``
    if its sha1 is ``sha1`` (else ValueError, and nothing is written)."""
    from ..data.vision.fashion_mnist_files import download
    os.makedirs(root, exist_ok=True)
    tag = secrets.token_hex(4)
    zip_path = os.path.join(root, f'.{file_name}.zip.{tag}')
    part = os.path.join(root, f'.{file_name}.params.{tag}.part')
    try:
        download(url, zip_path, None, progress=progress)
        with zipfile.ZipFile(zip_path) as zf, zf.open(file_name + '.params') as src, \
                open(part, 'xb') as out:
            for chunk in iter(lambda: src.read(_CHUNK), b''):
                out.write(chunk)
        got = _sha1(part)
        if got != sha1:
            raise ValueError(f'{file_name}.params downloaded from {url} has sha1 '
                             f'{got}, expected {sha1}; it was discarded. Try again, '
                             f'or check $MXNET_GLUON_REPO.')
        os.replace(part, os.path.join(root, file_name + '.params'))
    finally:
        for leftover in (zip_path, part):
            if os.path.exists(leftover):
                os.remove(leftover)


def _not_found_message(name, path, sha1, found, url, error):
    if found is None:
        what = f'{path} does not exist'
    else:
        what = (f'{path} has sha1 {found}, not the published {sha1}: it is another '
                f'or a damaged file, and was not used')
    return '\n'.join([
        f'Pretrained weights of {name}: {what}; downloading them from {url} '
        f'failed ({type(error).__name__}: {error}).',
        'To fix this, do one of:',
        f'  - on a machine with internet, download {url}, unzip it, and put '
        f'{os.path.basename(path)} (sha1 {sha1}) in {os.path.dirname(path)} '
        f'(or in a folder passed as root=...);',
        '  - set MXNET_GLUON_REPO to a mirror of the model zoo (a folder as '
        'file:///path/ works: it needs gluon/models/<file>.zip);',
        '  - connect to the internet and run again.'])


def purge(root=ROOT):
    """Delete every ``.params`` file in ``root``."""
    root = os.path.expanduser(root)
    for f in os.listdir(root):
        if f.endswith('.params'):
            os.remove(os.path.join(root, f))
