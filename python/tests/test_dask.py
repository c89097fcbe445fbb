"""ndforge.dask against the single-array ndforge functions (which the other suites hold equal to scipy), over
random chunkings: chunks smaller than the element, single-voxel chunks, uneven last chunks.  Skipped where
dask is not installed; the graphs run on the synchronous scheduler, one test on a LocalCluster of processes
(skipped without distributed), the CuPy test where CuPy has a device."""

import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import ndforge.ndimage as ndi  # noqa: E402
import ndforge.topology as topo  # noqa: E402
import ndforge.ot as ot  # noqa: E402
import ndforge.dask as nd  # noqa: E402
from dask_chunks import chunkings, cupy_device, same  # noqa: E402


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


RNG = np.random.default_rng(7)
IMG2 = RNG.integers(0, 200, (7, 8)).astype(np.uint8)
IMG3 = RNG.random((4, 5, 3)).astype(np.float32)
BIN2 = RNG.random((7, 8)) > 0.55
BIN3 = RNG.random((4, 5, 3)) > 0.6

GREY = ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
        "morphological_laplace", "white_tophat", "black_tophat"]
MODES = ["reflect", "mirror", "nearest", "constant", "wrap"]


@pytest.mark.parametrize("name", GREY)
def test_grey_2d(name):
    chs = chunkings(IMG2.shape, 1)
    for k, mode in enumerate(MODES):  # every mode meets every chunking over the ops
        ch = chs[(k + GREY.index(name)) % len(chs)]
        x = da.from_array(IMG2, chunks=ch)
        for kw in (dict(size=(3, 4), mode=mode, cval=9),
                   dict(footprint=np.eye(5, dtype=bool), mode=mode, cval=9, origin=(1, -1))):
            same(getattr(nd, name)(x, **kw), getattr(ndi, name)(IMG2, **kw))


@pytest.mark.parametrize("name", ["grey_opening", "white_tophat", "grey_dilation"])
def test_grey_3d_structure_axes_batch(name):
    st = RNG.random((3, 2, 3))
    for ch in chunkings(IMG3.shape, 2)[1:]:
        x = da.from_array(IMG3, chunks=ch)
        same(getattr(nd, name)(x, structure=st, mode="nearest"), getattr(ndi, name)(IMG3, structure=st,
                                                                                  mode="nearest"))
        same(getattr(nd, name)(x, size=3, axes=(0, 2)), getattr(ndi, name)(IMG3, size=3, axes=(0, 2)))
        same(getattr(nd, name)(x, size=(2, 3), batch_dims=1), getattr(ndi, name)(IMG3, size=(2, 3), batch_dims=1))


@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant"])
def test_rank(mode):
    fp = np.array([[1, 0, 1], [0, 1, 1]], bool)
    for ch in chunkings(IMG2.shape, 3):
        x = da.from_array(IMG2, chunks=ch)
        same(nd.median_filter(x, size=3, mode=mode), ndi.median_filter(IMG2, size=3, mode=mode))
        same(nd.rank_filter(x, 2, footprint=fp, mode=mode, cval=3),
            ndi.rank_filter(IMG2, 2, footprint=fp, mode=mode, cval=3))
        same(nd.percentile_filter(x, 30, size=(2, 5), mode=mode, origin=(0, 1)),
            ndi.percentile_filter(IMG2, 30, size=(2, 5), mode=mode, origin=(0, 1)))


@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing"])
def test_binary(name):
    full = ndi.generate_binary_structure(2, 2)
    mask = IMG2 > 40
    for ch in chunkings(BIN2.shape, 4):
        x = da.from_array(BIN2, chunks=ch)
        for kw in (dict(), dict(iterations=3), dict(structure=full, iterations=2, border_value=1),
                   dict(iterations=2, origin=(0, 1)), dict(mask=mask, iterations=2)):
            kwd = dict(kw)
            if "mask" in kw:
                kwd["mask"] = da.from_array(mask, chunks=ch)
            same(getattr(nd, name)(x, **kwd), getattr(ndi, name)(BIN2, **kw))


def test_binary_3d_and_hit_or_miss():
    s1 = np.array([[0, 1, 0], [1, 1, 1], [0, 0, 0]], bool)
    for ch in chunkings(BIN2.shape, 5):
        x = da.from_array(BIN2, chunks=ch)
        same(nd.binary_hit_or_miss(x, s1), ndi.binary_hit_or_miss(BIN2, s1))
        same(nd.binary_hit_or_miss(x, s1, ~s1, origin1=(0, 1), origin2=(1, 0)),
            ndi.binary_hit_or_miss(BIN2, s1, ~s1, origin1=(0, 1), origin2=(1, 0)))
    for ch in chunkings(BIN3.shape, 6):
        x = da.from_array(BIN3, chunks=ch)
        same(nd.binary_closing(x, iterations=2), ndi.binary_closing(BIN3, iterations=2))


@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation"])
@pytest.mark.parametrize("border_value", [0, 1])
def test_binary_to_fixpoint(name, border_value):
    mask = IMG2 > 60
    for ch in chunkings(BIN2.shape, 8):
        x = da.from_array(BIN2, chunks=ch)
        for kw in (dict(), dict(mask=mask, structure=np.ones((3, 3), bool))):
            same(getattr(nd, name)(x, iterations=-1, border_value=border_value, **kw),
                getattr(ndi, name)(BIN2, iterations=-1, border_value=border_value, **kw))


@pytest.mark.parametrize("img", [BIN2, BIN3], ids=["2d", "3d"])
def test_label(img):
    for conn in (1, img.ndim):
        st = ndi.generate_binary_structure(img.ndim, conn)
        el, en = ndi.label(img, st)
        for ch in chunkings(img.shape, 9):
            lab, n = nd.label(da.from_array(img, chunks=ch), st)
            same(lab, el)
            assert int(n.compute()) == en


def test_label_sparse_chunks_and_first_voxels():
    # chunks without labels among chunks with them (equal provisional offsets), and the sort that finds
    # the first voxels of the CuPy path run on NumPy
    a = np.zeros((12, 10, 9), bool)
    a[0:2, 0:3, 0] = a[5, :, 4] = a[11, 9, 8] = a[6:9, 2, 2:7] = True
    el, en = ndi.label(a)
    for ch in ((3, 3, 3), (1, 10, 9), (4, 2, 9), (12, 10, 1)):
        lab, n = nd.label(da.from_array(a, chunks=ch))
        same(lab, el)
        assert int(n.compute()) == en
    from ndforge.dask import _first_flats
    for img in (BIN2, BIN3, a):
        lab = ndi.label(img[tuple(slice(1, None) for _ in img.shape)])[0]
        start, shape = (1,) * img.ndim, tuple(s + 3 for s in img.shape)
        np.testing.assert_array_equal(_first_flats(lab, start, shape, sort=True), _first_flats(lab, start, shape))


def test_fill_holes_and_propagation():
    rng = np.random.default_rng(3)
    img = rng.random((8, 7)) > 0.35
    img3 = rng.random((4, 4, 5)) > 0.3
    for a, seed in ((img, 11), (img3, 12)):
        for ch in chunkings(a.shape, seed):
            x = da.from_array(a, chunks=ch)
            same(nd.binary_fill_holes(x), ndi.binary_fill_holes(a))
            full = np.ones((3,) * a.ndim, bool)
            if a.ndim == 2:
                same(nd.binary_fill_holes(x, full), ndi.binary_fill_holes(a, full))
            sd = a & (rng.random(a.shape) > 0.9)
            m = rng.random(a.shape) > 0.3
            same(nd.binary_propagation(da.from_array(sd, chunks=ch), mask=m), ndi.binary_propagation(sd, mask=m))
            same(nd.binary_propagation(da.from_array(sd, chunks=ch), full, mask=m, border_value=1),
                ndi.binary_propagation(sd, full, mask=m, border_value=1))


def test_distance_transforms():
    for ch in chunkings(BIN3.shape, 13)[1:]:
        x = da.from_array(BIN3, chunks=ch)
        d, i = nd.distance_transform_edt(x, sampling=(1, 2, 1.5), return_indices=True)
        ed, ei = ndi.distance_transform_edt(BIN3, sampling=(1, 2, 1.5), return_indices=True)
        same(d, ed)
        same(i, ei)
        same(nd.distance_transform_cdt(x, metric="taxicab"), ndi.distance_transform_cdt(BIN3, metric="taxicab"))
        same(nd.distance_transform_edt(x, batch_dims=1), ndi.distance_transform_edt(BIN3, batch_dims=1))


@pytest.mark.parametrize("construction", ["V", "T"])
def test_ecc(construction):
    for img, seed in ((IMG2, 14), (IMG3, 15)):
        e, th = topo.ecc(img, 17, construction, return_thresholds=True)
        for ch in chunkings(img.shape, seed) + [(3,) * img.ndim]:  # equal chunks: faces in batched calls
            x = da.from_array(img, chunks=ch)
            same(nd.ecc(x, 17, construction), e)
            same(nd.ecc(x, th, construction), topo.ecc(img, th, construction))
            same(nd.ecc(x, 9, construction, range=(0.1, 100)), topo.ecc(img, 9, construction, range=(0.1, 100)))
            f = da.from_array(img.astype(np.float64), chunks=ch)
            np.testing.assert_allclose(nd.soft_ecc(f, th, 3.0, construction).compute(),
                                       topo.soft_ecc(img.astype(np.float64), th, 3.0, construction), rtol=1e-9,
                                       atol=1e-9)
    b = np.stack([IMG3, IMG3[::-1]])
    same(nd.ecc(da.from_array(b, chunks=(1, 3, 4, 5)), 8, construction, batch_dims=1),
        topo.ecc(b, 8, construction, batch_dims=1))


def test_batches():
    imgs = RNG.integers(0, 9, (5, 7, 6)).astype(np.int16)
    x = da.from_array(imgs, chunks=(2, 7, 6))
    same(nd.map_batches(ndi.grey_closing, x, 1, size=3), ndi.grey_closing(imgs, size=3, batch_dims=1))
    # two whole-image results of one input in one graph keep their own keys
    r1, r2 = dask.compute(nd.map_batches(ndi.grey_closing, x, 1, size=3), nd.map_batches(ndi.grey_opening, x, 1, size=3))
    same(r1, ndi.grey_closing(imgs, size=3, batch_dims=1))
    same(r2, ndi.grey_opening(imgs, size=3, batch_dims=1))
    a = RNG.random((7, 12))
    b = RNG.random((7, 12))
    a /= a.sum(1, keepdims=True)
    b /= b.sum(1, keepdims=True)
    r = nd.sinkhorn(da.from_array(a, chunks=(3, 5)), da.from_array(b, chunks=(2, 12)), grid=(3, 4), epsilon=0.1)
    np.testing.assert_allclose(r.compute(), ot.sinkhorn(a, b, grid=(3, 4), epsilon=0.1), rtol=1e-12)


def test_local_cluster_of_processes():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        x = da.from_array(BIN3, chunks=(4, 3, 2))
        lab, n = nd.label(x)
        g = nd.grey_opening(da.from_array(IMG3, chunks=(2, 3, 4)), size=3)
        lab, n, g = client.compute([lab, n, g], sync=True)
        el, en = ndi.label(BIN3)
        np.testing.assert_array_equal(lab, el)
        assert int(n) == en
        np.testing.assert_array_equal(g, ndi.grey_opening(IMG3, size=3))


@pytest.mark.skipif(cupy_device() is None, reason="no CuPy device")
def test_cupy_chunks():
    cp = cupy_device()
    for ch in chunkings(IMG2.shape, 16)[1:]:
        x = da.from_array(cp.asarray(IMG2), chunks=ch, asarray=False)
        r = nd.grey_opening(x, size=(3, 4), mode="wrap").compute()
        np.testing.assert_array_equal(cp.asnumpy(r), ndi.grey_opening(IMG2, size=(3, 4), mode="wrap"))
        b = da.from_array(cp.asarray(BIN2), chunks=ch, asarray=False)
        lab, n = nd.label(b)
        np.testing.assert_array_equal(cp.asnumpy(lab.compute()), ndi.label(BIN2)[0])
        np.testing.assert_array_equal(cp.asnumpy(nd.ecc(x, 12).compute()), topo.ecc(IMG2, 12))
        np.testing.assert_array_equal(cp.asnumpy(nd.distance_transform_edt(b).compute()),
                                      ndi.distance_transform_edt(BIN2))
        th = topo.ecc(IMG2, 12, return_thresholds=True)[1]
        f = da.from_array(cp.asarray(IMG2.astype(np.float64)), chunks=ch, asarray=False)
        np.testing.assert_allclose(cp.asnumpy(nd.soft_ecc(f, th, 3.0).compute()),
                                   topo.soft_ecc(IMG2.astype(np.float64), th, 3.0), rtol=1e-9, atol=1e-9)
    # a CuPy array given directly: one chunk, under a unique name
    np.testing.assert_array_equal(cp.asnumpy(nd.grey_opening(cp.asarray(IMG2), size=3).compute()),
                                  ndi.grey_opening(IMG2, size=3))


LINEAR = [("correlate", (np.arange(6.0).reshape(2, 3),), dict(origin=(0, 1))),
          ("convolve", (np.arange(6.0).reshape(3, 2),), dict()),
          ("correlate1d", ([1.0, -2.0, 0.5, 3.0],), dict(axis=0, origin=1)),
          ("convolve1d", ([1.0, 2.0, 0.5],), dict(axis=-1)),
          ("uniform_filter1d", (4,), dict(axis=1)),
          ("uniform_filter", (), dict(size=(3, 4))),
          ("gaussian_filter1d", (1.5,), dict(axis=0, order=1)),
          ("gaussian_filter", (1.2,), dict(truncate=2.5)),
          ("gaussian_filter", ((0.8, 1.6),), dict(radius=(2, 5))),
          ("sobel", (), dict(axis=0)),
          ("prewitt", (), dict(axis=1)),
          ("laplace", (), dict()),
          ("gaussian_laplace", (1.0,), dict()),
          ("gaussian_gradient_magnitude", (1.3,), dict())]


@pytest.mark.parametrize("name,args,kw", LINEAR, ids=["%s-%d" % (c[0], i) for i, c in enumerate(LINEAR)])
def test_linear(name, args, kw):
    if not hasattr(ndi, name):
        pytest.skip("this libndforge has no %s" % name)
    img = IMG2.astype(np.float64)
    chs = chunkings(img.shape, 17)
    for k, mode in enumerate(MODES):
        x = da.from_array(img, chunks=chs[k % len(chs)])
        r = getattr(nd, name)(x, *args, mode=mode, cval=2.0, **kw).compute()
        np.testing.assert_allclose(r, getattr(ndi, name)(img, *args, mode=mode, cval=2.0, **kw), rtol=1e-12,
                                   atol=1e-12)


def test_preprocess_cohort(tmp_path):
    nib = pytest.importorskip("nibabel")
    import ndforge.preprocess as pp
    rng = np.random.default_rng(21)
    files = []
    for k in range(3):
        v = np.zeros((12, 10, 9), np.float32)
        v[2:10, 2:8, 2:7] = 50 + 10 * rng.random((8, 6, 5))
        aff = np.diag([-1.5, 1.2, 2.0, 1.0])
        aff[:3, 3] = rng.uniform(-5, 5, 3)
        f = tmp_path / ("vol%d.nii.gz" % k)
        nib.save(nib.Nifti1Image(v, aff), str(f))
        files.append(str(f))
    files.insert(1, str(tmp_path / "missing.nii.gz"))
    bag = nd.preprocess_cohort(files, "reorient,resample,foreground,normalize,crop", spacing=2.0, margin=1,
                               out=str(tmp_path / "out"))
    reps = bag.compute()
    assert [r["status"] for r in reps] == ["ok", "error", "ok", "ok"]
    assert "missing" in reps[1]["input"] and reps[1]["error"]
    for f, r in zip(files[:1] + files[2:], reps[:1] + reps[2:]):
        img = nib.load(f)
        x, a = pp.reorient_ras(img.get_fdata(dtype=np.float32), img.affine)
        x, a = pp.resample(x, a, 2.0)
        m = (x.astype(np.float64) > r["steps"][2]["threshold"]).astype(np.float32)
        x = pp.normalize(x, "mri", m)
        m2, _ = pp.crop(m, a, m, 1)
        x, a = pp.crop(x, a, m, 1)
        out = nib.load(r["output"])
        np.testing.assert_array_equal(out.get_fdata(dtype=np.float32), x)
        np.testing.assert_allclose(out.affine, a, atol=1e-5)
        assert r["shape"] == list(x.shape) and [s["step"] for s in r["steps"]] == ["reorient", "resample",
                                                                                "foreground", "normalize", "crop"]
    if cupy_device() is not None:  # the same cohort on the GPU: the same shapes and affines, values to rounding
        for r, g in zip(reps, nd.preprocess_cohort(files, "reorient,resample,foreground,normalize,crop", spacing=2.0,
                                                   margin=1, device="cuda", return_arrays=True).compute()):
            assert g["status"] == r["status"]
            if r["status"] == "ok":
                assert g["shape"] == r["shape"] and np.allclose(g["affine"], r["affine"])
                np.testing.assert_allclose(cupy_device().asnumpy(g["image"]), nib.load(r["output"]).get_fdata(),
                                           rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        nd.preprocess_cohort(files, "reorient,blur")
    r = nd.preprocess_cohort(files[:1], "crop").compute()[0]
    assert r["status"] == "error" and r["steps"][0]["status"] == "error" and "mask" in r["error"]
    np.save(str(tmp_path / "ints.npy"), (np.arange(12 * 10 * 9) % 7).reshape(12, 10, 9))  # int64 voxels
    r = nd.preprocess_cohort([str(tmp_path / "ints.npy")], "reorient,normalize").compute()[0]
    assert r["status"] == "ok" and r["shape"] == [12, 10, 9]


def test_gpu_cluster_fallback(monkeypatch, tmp_path):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(RuntimeError, match="no GPU"):
        nd.gpu_cluster()
    import os
    with nd.gpu_cluster(cpu_fallback=True, cache_dir=str(tmp_path / "cpu")) as cluster, \
            distributed.Client(cluster) as client:
        assert list(client.run(lambda: os.environ.get("NDF_CACHE_DIR")).values()) == [str(tmp_path / "cpu")]
        g = client.compute(nd.grey_opening(da.from_array(IMG3, chunks=(2, 3, 4)), size=3), sync=True)
        np.testing.assert_array_equal(g, ndi.grey_opening(IMG3, size=3))
    # two (pretend) GPUs: one worker each, its own CUDA_VISIBLE_DEVICES, one kernel cache directory.  This
    # process keeps its own devices (distributed's NVML monitor here looks them up); the workers' monitors are
    # off (through dask's config, which a nanny hands to its worker; an environment variable set now would
    # not be read again), as they would look for the pretend GPUs
    monkeypatch.undo()
    monkeypatch.setattr(nd, "_visible_gpus", lambda: ["3", "5"])
    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # the nanny path, also where dask_cuda is installed
    cache = str(tmp_path / "kernels")
    with dask.config.set({"distributed.diagnostics.nvml": False}), nd.gpu_cluster(cache_dir=cache) as cluster, \
            distributed.Client(cluster) as client:
        env = client.run(lambda: (os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("NDF_CACHE_DIR")))
        assert sorted(v[0] for v in env.values()) == ["3", "5"] and {v[1] for v in env.values()} == {cache}
        a = RNG.random((40, 12))
        b = RNG.random((40, 12))
        a /= a.sum(1, keepdims=True)
        b /= b.sum(1, keepdims=True)
        r = nd.sinkhorn(da.from_array(a, chunks=(7, 12)), da.from_array(b, chunks=(9, 5)), grid=(3, 4), epsilon=0.1,
                        log_domain=True)
        np.testing.assert_allclose(client.compute(r, sync=True), ot.sinkhorn(a, b, grid=(3, 4), epsilon=0.1,
                                                                             log_domain=True), rtol=1e-12)


@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing",
                                  "binary_propagation", "binary_fill_holes", "binary_hit_or_miss"])
def test_binary_output_dtype_is_bool(name):
    # scipy's binary ops (and ndforge.ndimage's) give bool for output=<dtype>: the graph says so too
    x = da.from_array(BIN2, chunks=3)
    r = getattr(nd, name)(x, output=np.float32)
    assert r.dtype == np.bool_
    same(r.compute(), getattr(ndi, name)(BIN2, output=np.float32))
