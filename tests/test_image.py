"""mx.image: decoding (Pillow round trips), OpenCV-style resizing (MXNet
1.9.1's numbers as fixtures), crops, augmenters, and the gluon random
transforms the image-augmentation chapter uses."""
import io
import random

import numpy as np
import pytest
from PIL import Image

import d2lmini as mx
from d2lmini import image, nd
from d2lmini.base import MXNetError
from d2lmini.gluon.data.vision import transforms

# The 5x7x3 noise image MXNet 1.9.1 was fed to make the fixtures below.
IMG = np.random.RandomState(0).randint(0, 256, (5, 7, 3)).astype(np.uint8)

# mx.image.imresize(nd.array(IMG, dtype='uint8'), w, h, interp)[:, :, 0] in
# MXNet 1.9.1 (OpenCV inside).  OpenCV's 8-bit resize is fixed point, ours
# float then rounded: measured differences are at most 1 level on all three
# channels and all five methods (0 for nearest), so the tolerance is 1.
MX_RESIZE = {
    (0, 4, 3): [[172, 192, 211, 216], [39, 88, 9, 254], [114, 34, 38, 105]],
    (1, 4, 3): [[139, 139, 100, 150], [146, 148, 135, 178], [69, 125, 96, 89]],
    (2, 4, 3): [[137, 134, 89, 157], [141, 156, 129, 182], [60, 132, 90, 85]],
    (3, 4, 3): [[132, 131, 130, 163], [109, 112, 133, 164], [69, 104, 89, 90]],
    (4, 4, 3): [[134, 133, 82, 158], [141, 163, 127, 187], [49, 126, 86, 81]],
    (1, 10, 9): [[172, 183, 193, 195, 205, 150, 45, 171, 145, 58],
                 [128, 144, 152, 139, 142, 126, 100, 195, 172, 103],
                 [54, 79, 85, 47, 36, 86, 192, 235, 217, 177],
                 [117, 87, 65, 76, 86, 119, 175, 216, 207, 179],
                 [216, 113, 57, 136, 175, 170, 131, 183, 184, 163],
                 [159, 89, 62, 148, 123, 92, 70, 127, 122, 89],
                 [108, 69, 67, 153, 83, 38, 35, 89, 76, 37],
                 [81, 64, 70, 130, 91, 79, 102, 121, 100, 66],
                 [65, 60, 72, 116, 95, 103, 142, 140, 115, 84]],
}

# mx.image.imread(<IMG saved as PNG by Pillow>, flag=0) in MXNet 1.9.1 (libpng's
# gray, truncated; Pillow's 'L' rounds, and differs by one level on 18 of 35)
MX_GRAY = [[92, 125, 119, 103, 69, 132, 156], [82, 92, 60, 102, 227, 142, 116],
           [196, 111, 144, 84, 60, 220, 220], [144, 99, 95, 175, 66, 77, 79],
           [174, 49, 61, 92, 106, 132, 152]]


def _png(pixels, mode=None):
    buf = io.BytesIO()
    Image.fromarray(pixels, mode).save(buf, 'PNG')
    return buf.getvalue()


def _u8(x):
    return nd.array(x, dtype='uint8')


def test_imdecode_round_trip_gray_and_bgr(tmp_path):
    data = _png(IMG)
    rgb = image.imdecode(data)
    assert isinstance(rgb, nd.NDArray) and rgb.dtype == np.uint8
    np.testing.assert_array_equal(rgb.asnumpy(), IMG)
    np.testing.assert_array_equal(image.imdecode(data, to_rgb=0).asnumpy(), IMG[:, :, ::-1])
    np.testing.assert_array_equal(image.imdecode(np.frombuffer(data, np.uint8)).asnumpy(), IMG)
    gray = image.imdecode(data, flag=0).asnumpy()
    assert gray.shape == (5, 7, 1)
    np.testing.assert_array_equal(gray[:, :, 0], MX_GRAY)
    path = tmp_path / 'x.png'
    path.write_bytes(data)
    np.testing.assert_array_equal(image.imread(str(path)).asnumpy(), IMG)
    assert image.imread(path, flag=0).shape == (5, 7, 1)


def test_decode_errors_say_what_went_wrong(tmp_path):
    missing = str(tmp_path / 'nope.jpg')
    with pytest.raises(MXNetError, match='nope.jpg'):
        image.imread(missing)
    with pytest.raises(ValueError, match='not an image'):
        image.imdecode(b'certainly not a PNG')
    with pytest.raises(TypeError, match='bytes'):
        image.imdecode('a str')


@pytest.mark.parametrize('key', sorted(MX_RESIZE))
def test_imresize_matches_mxnet(key):
    interp, w, h = key
    out = image.imresize(_u8(IMG), w, h, interp=interp).asnumpy()
    assert out.shape == (h, w, 3) and out.dtype == np.uint8
    want = np.array(MX_RESIZE[key])
    assert np.abs(out[:, :, 0].astype(int) - want).max() <= 1


def test_resize_float_and_any_channels():
    f = image.imresize(nd.array(IMG.astype(np.float32) / 3), 4, 3, interp=1).asnumpy()
    u = image.imresize(_u8(IMG), 4, 3, interp=1).asnumpy()
    assert f.dtype == np.float32 and np.abs(f * 3 - u).max() <= 0.5 + 1e-4
    assert image.imresize(_u8(IMG[:, :, :2]), 4, 3).shape == (3, 4, 2)
    with pytest.raises(ValueError, match='interp'):
        image.imresize(_u8(IMG), 4, 3, interp=7)


def test_resize_short_and_crops_match_mxnet():
    # shapes and (x0, y0, w, h) from MXNet 1.9.1
    for (h, w), want in [((5, 7), (4, 5, 3)), ((7, 5), (5, 4, 3)), ((6, 6), (4, 4, 3)),
                         ((10, 3), (13, 4, 3))]:
        assert image.resize_short(_u8(np.zeros((h, w, 3))), 4).shape == want
    for size, rect in [((3, 2), (2, 1, 3, 2)), ((4, 4), (1, 0, 4, 4)),
                       ((7, 5), (0, 0, 7, 5)), ((10, 3), (0, 1, 7, 2))]:
        out, got = image.center_crop(_u8(IMG), size)
        assert got == rect and out.shape == (size[1], size[0], 3)
    out = image.fixed_crop(_u8(IMG), 2, 1, 3, 4)
    np.testing.assert_array_equal(out.asnumpy(), IMG[1:5, 2:5])
    assert image.scale_down((640, 480), (720, 120)) == (640, 106)
    random.seed(3)                                  # MXNet 1.9.1: (1, 1, 3, 2)
    out, rect = image.random_crop(_u8(IMG), (3, 2))
    assert rect == (1, 1, 3, 2)
    np.testing.assert_array_equal(out.asnumpy(), IMG[1:3, 1:4])


def test_random_size_crop_and_border():
    random.seed(0)
    out, (x0, y0, w, h) = image.random_size_crop(_u8(IMG), (4, 4), 0.3, (0.5, 2))
    assert out.shape == (4, 4, 3) and x0 + w <= 7 and y0 + h <= 5
    b = image.copyMakeBorder(_u8(IMG), 1, 2, 3, 0, type=0, values=(9, 8, 7)).asnumpy()
    assert b.shape == (8, 10, 3) and (b[0, 0] == [9, 8, 7]).all()
    np.testing.assert_array_equal(b[1:6, 3:], IMG)
    r = image.copyMakeBorder(_u8(IMG), 0, 0, 2, 0, type=2).asnumpy()
    np.testing.assert_array_equal(r[:, :2], IMG[:, 2:0:-1])


def test_color_normalize():
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 8.0])
    out = image.color_normalize(_u8(IMG), nd.array(mean), nd.array(std)).asnumpy()
    np.testing.assert_allclose(out, (IMG - mean) / std, rtol=1e-6)


def test_augmenters_shapes_dtypes_properties():
    src = _u8(IMG)
    flip = image.HorizontalFlipAug(1.0)
    np.testing.assert_array_equal(flip(flip(src)).asnumpy(), IMG)
    np.testing.assert_array_equal(flip(src).asnumpy(), IMG[:, ::-1])
    f = image.CastAug()(src)
    assert f.dtype == np.float32
    random.seed(1)
    for aug in [image.BrightnessJitterAug(0.3), image.ContrastJitterAug(0.3),
                image.SaturationJitterAug(0.3), image.HueJitterAug(0.3),
                image.RandomGrayAug(1.0), image.ColorJitterAug(0.2, 0.2, 0.2),
                image.LightingAug(0.1, np.ones(3), np.eye(3))]:
        out = aug(f)
        assert out.shape == (5, 7, 3) and out.dtype == np.float32, aug.dumps()
        assert np.abs(out.asnumpy()).max() < 600, aug.dumps()
    gray = image.RandomGrayAug(1.0)(f).asnumpy()
    np.testing.assert_allclose(gray[:, :, 0], gray[:, :, 2], rtol=1e-6)
    # MXNet's YIQ matrices are inverses to 3 digits: a zero turn moves a
    # pixel by up to 0.63 of a level (measured), so 1 level
    np.testing.assert_allclose(image.HueJitterAug(0.0)(f).asnumpy(), IMG, atol=1)
    assert image.ResizeAug(3)(src).shape == (3, 4, 3)
    assert image.ForceResizeAug((6, 2))(src).shape == (2, 6, 3)
    assert image.RandomSizedCropAug((3, 3), 0.1, (0.5, 2))(src).shape == (3, 3, 3)
    assert image.ResizeAug(3).dumps() == '["resizeaug", {"size": 3, "interp": 2}]'


def test_create_augmenter_and_seeding():
    def run(seed):
        # RandomOrderAug shuffles its list in place (as MXNet's): a fresh list
        augs = image.CreateAugmenter((3, 4, 4), resize=5, rand_crop=True,
                                     rand_resize=True, rand_mirror=True, mean=True,
                                     std=True, brightness=0.1, contrast=0.1,
                                     saturation=0.1, hue=0.1, pca_noise=0.1,
                                     rand_gray=0.5)
        random.seed(seed)
        np.random.seed(seed)
        x = _u8(IMG)
        for aug in augs:
            x = aug(x)
        return x.asnumpy()

    a, b = run(5), run(5)
    assert a.shape == (4, 4, 3) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, run(6))
    with pytest.raises(ValueError, match='rand_crop'):
        image.CreateAugmenter((3, 4, 4), rand_resize=True)


def test_np_mode_gives_np_arrays():
    from d2lmini import npx
    npx.set_np()
    try:
        x = image.imdecode(_png(IMG))
        assert isinstance(x, mx.np.ndarray)
        y = image.random_crop(x, (3, 3))[0]
        assert isinstance(y, mx.np.ndarray) and y.shape == (3, 3, 3)
        z = transforms.RandomFlipLeftRight()(x)
        assert isinstance(z, mx.np.ndarray)
    finally:
        npx.reset_np()


def test_gluon_random_transforms_on_imread_output():
    img = image.imdecode(_png(IMG))
    mx.random.seed(7)
    outs = []
    for seed in (7, 7):
        mx.random.seed(seed)
        augs = transforms.Compose([
            transforms.RandomFlipLeftRight(), transforms.RandomFlipTopBottom(),
            transforms.RandomColorJitter(0.5, 0.5, 0.5, 0.5),
            transforms.RandomResizedCrop((4, 3), scale=(0.1, 1), ratio=(0.5, 2))])
        random.seed(seed)
        outs.append(augs(img).asnumpy())
    assert outs[0].shape == (3, 4, 3) and outs[0].dtype == np.uint8
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not augs.batchable
    t = transforms.Compose([transforms.RandomBrightness(0.5), transforms.RandomHue(0.5),
                            transforms.RandomContrast(0.3), transforms.RandomSaturation(0.3),
                            transforms.RandomLighting(0.1), transforms.ToTensor(),
                            transforms.Normalize(0.5, 0.2)])
    assert t(img).shape == (3, 5, 7)
    flips = {transforms.RandomFlipLeftRight()(img).asnumpy().tobytes() for _ in range(16)}
    assert flips == {IMG.tobytes(), IMG[:, ::-1].tobytes()}
    assert transforms.CenterCrop(3)(img).shape == (3, 3, 3)


def test_gluon_hue_and_brightness_against_formulas():
    import colorsys
    from d2lmini.gluon.data.vision.transforms import _hue
    x = IMG.astype(np.float32)
    got = _hue(x, 0.25)
    want = np.array([[colorsys.hls_to_rgb(((h := colorsys.rgb_to_hls(*(p / 255)))[0]
                                           + 0.25) % 1, h[1], h[2]) for p in row]
                     for row in x]) * 255
    np.testing.assert_allclose(got, want, atol=1e-3)
    mx.random.seed(3)
    out = transforms.RandomBrightness(0.5)(nd.array(x)).asnumpy()
    ratio = out[x > 0] / x[x > 0]
    assert 0.5 <= ratio.min() and np.allclose(ratio, ratio[0], rtol=1e-5)
