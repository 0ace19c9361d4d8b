"""d2lmini.limits: the load limit every decompressing loader checks first."""
import pytest

from d2lmini import limits


@pytest.mark.parametrize('value, expected', [
    ('', limits.MAX_LOAD_BYTES), ('12345', 12345), ('1K', 1024), ('16G', 16 << 30),
    ('512 MiB', 512 << 20), ('2t', 2 << 40), ('3GB', 3 << 30)])
def test_env_var_sets_the_limit(monkeypatch, value, expected):
    monkeypatch.setenv(limits.ENV_VAR, value)
    assert limits.max_load_bytes() == expected


@pytest.mark.parametrize('value', ['lots', '-1', '1.5G', '4 GB please'])
def test_env_var_junk_says_what_it_wants(monkeypatch, value):
    monkeypatch.setenv(limits.ENV_VAR, value)
    with pytest.raises(ValueError, match='D2LMINI_MAX_LOAD_BYTES=.*number of bytes'):
        limits.max_load_bytes()


def test_check_load_size(monkeypatch):
    monkeypatch.delenv(limits.ENV_VAR, raising=False)
    monkeypatch.setattr(limits, 'MAX_LOAD_BYTES', 1000)
    limits.check_load_size('f.npz', 1000, 'its arrays')            # at the limit
    with pytest.raises(limits.LoadLimitError) as e:
        limits.check_load_size('f.npz', 3 << 30, 'its arrays')
    msg = str(e.value)
    assert msg.startswith('f.npz: its arrays would decode to 3,221,225,472 bytes '
                          '(3.0 GiB), more than the load limit of 1,000 bytes')
    assert 'D2LMINI_MAX_LOAD_BYTES=3G' in msg and 'MAX_LOAD_BYTES' in msg


def _npz(path, array):
    """A legacy d2lmini .npz (compressed) holding ``array``."""
    import json
    import zipfile
    import numpy as np
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('__d2lmini__.json', json.dumps(
            {'format': 'd2lmini-ndarray', 'version': 1, 'kind': 'list', 'count': 1}))
        with z.open('arr_0.npy', 'w') as f:
            np.lib.format.write_array(f, array)


def test_a_small_file_that_inflates_a_hundredfold_is_refused(monkeypatch, tmp_path):
    """The probe's 800 MB of zeros in 796 KiB, scaled down: beyond
    BOMB_FLOOR a compressed file may not declare 100 x its size."""
    import numpy as np
    from d2lmini import nd
    monkeypatch.delenv(limits.ENV_VAR, raising=False)
    monkeypatch.setattr(limits, 'BOMB_FLOOR', 1 << 20)
    _npz(tmp_path / 'zeros.npz', np.zeros(1 << 20, np.float32))      # 4 MiB
    _npz(tmp_path / 'noise.npz', np.random.RandomState(0).rand(1 << 20)
         .astype(np.float32))
    with pytest.raises(limits.LoadLimitError, match=r'from \d[\d,]* compressed '
                       r'bytes, [\d,]+ times more; beyond 1.0 MiB at most 100'):
        nd.load(str(tmp_path / 'zeros.npz'))
    assert nd.load(str(tmp_path / 'noise.npz'))[0].shape == (1 << 20,)
    monkeypatch.setenv(limits.ENV_VAR, '1G')        # trusted: the ratio is not checked
    assert float(nd.load(str(tmp_path / 'zeros.npz'))[0].sum().asscalar()) == 0
