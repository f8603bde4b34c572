"""``backend.host_buffers``: a buffer is handed out again only once no array uses it, whatever view of it is alive."""

import ctypes
import gc
import threading

import numpy as np
import pytest

from shardarray.backend import host_buffers as buffers

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _fresh_pool(monkeypatch):
    monkeypatch.delenv(buffers.ENV, raising=False)
    buffers.clear()
    yield
    buffers.clear()


def _base(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def test_size_classes_round_up_by_at_most_a_quarter():
    for n in [5, 7, 100, 1000, MiB - 1, MiB, MiB + 1, 3 * MiB + 17, 123_456_789]:
        c = buffers.size_class(n)
        assert n <= c <= 1.25 * n + 1
        assert buffers.size_class(c) == c


def test_a_freed_buffer_is_reused_and_a_live_one_is_not():
    a = buffers.empty((MiB // 8,), np.float64)
    b = buffers.empty((MiB // 8,), np.float64)
    assert not np.shares_memory(a, b)
    mem = _base(a).ctypes.data
    del a
    c = buffers.empty((MiB // 8,), np.float64)
    assert _base(c).ctypes.data == mem  # the freed one, not a new one
    assert not np.shares_memory(c, b)


@pytest.mark.parametrize(
    "keep",
    [
        lambda a: a[::2],
        lambda a: a.reshape(64, -1).T,
        lambda a: a.view(np.uint8)[3:],
        lambda a: memoryview(a),
        lambda a: np.frombuffer(a, dtype=np.int32),
        lambda a: a[2:].view(np.complex128)[:5],
        lambda a: [a[:10]],
        lambda a: a.ctypes,  # (holds the array)
    ],
    ids=["slice", "transpose", "byte_view", "memoryview", "frombuffer", "view_of_view", "in_a_list", "ctypes"],
)
def test_no_buffer_a_live_view_uses_is_handed_out_again(keep):
    a = buffers.empty((MiB // 8,), np.float64)
    a[:] = 7.0
    first, nbytes = a.ctypes.data, a.nbytes
    held = keep(a)
    del a
    gc.collect()
    for _ in range(4):  # new or reused, none of these lies on the held bytes
        b = buffers.empty((MiB // 8,), np.float64)
        assert not first <= b.ctypes.data < first + nbytes
        b[:] = -1.0
        del b
    region = (ctypes.c_double * (MiB // 8)).from_address(first)  # (the held object keeps these bytes mapped)
    assert (np.frombuffer(region, dtype=np.float64) == 7.0).all()
    del held


def test_views_keep_their_bytes():
    """The plain statement of the contract: bytes written through the pool's arrays stay until the last view dies."""
    a = buffers.empty((MiB // 8,), np.float64)
    a[:] = np.arange(a.size)
    views = [a[::3], a.reshape(128, -1).T, a.view(np.uint8), memoryview(a), np.frombuffer(a, dtype=np.float64)]
    expect = [np.array(v, copy=True) for v in views]
    del a
    gc.collect()
    others = [buffers.empty((MiB // 8,), np.float64) for _ in range(3)]
    for o in others:
        o[:] = -1.0
    for v, e in zip(views, expect):
        np.testing.assert_array_equal(np.asarray(v), e)
    del views, others


def test_small_requests_and_object_dtypes_are_plain_arrays():
    small = buffers.empty((10,), np.float64)
    assert small.base is None and small.flags.owndata
    objs = buffers.empty((MiB,), object)
    assert objs.dtype == object and objs.flags.owndata
    assert buffers.cached_bytes() == (0, 0)


def test_shapes_dtypes_and_layout():
    for shape, dtype in [((256, 1024), np.float32), ((MiB,), np.uint8), ((3, 5, 70_000), np.complex64), (MiB, "i8")]:
        a = buffers.empty(shape, dtype)
        assert a.shape == ((shape,) if isinstance(shape, int) else shape)
        assert a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
        assert a.ctypes.data % 16 == 0


def test_free_bytes_are_capped_by_the_limit(monkeypatch):
    monkeypatch.setenv(buffers.ENV, str(3 * MiB))
    arrays = [buffers.empty((MiB,), np.uint8) for _ in range(6)]
    assert buffers.cached_bytes() == (0, 6 * MiB)
    del arrays
    free, used = buffers.cached_bytes()
    assert (free, used) == (6 * MiB, 0)  # (dropped at the next new buffer, not here)
    keep = buffers.empty((2 * MiB,), np.uint8)  # a new class: a new buffer, and the free ones trimmed to the cap
    free, used = buffers.cached_bytes()
    assert used == 2 * MiB and free <= 3 * MiB
    del keep


def test_zero_turns_the_pool_off(monkeypatch):
    monkeypatch.setenv(buffers.ENV, "0")
    a = buffers.empty((MiB,), np.uint8)
    assert a.flags.owndata and buffers.cached_bytes() == (0, 0)


def test_threads_never_share_a_buffer():
    got: list[np.ndarray] = []
    lock = threading.Lock()

    def take():
        for _ in range(50):
            a = buffers.empty((MiB // 8,), np.float64)
            a[:] = threading.get_ident()
            with lock:
                got.append(a)
            if len(got) > 8:
                with lock:
                    if got:
                        got.pop(0)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, a in enumerate(got):
        for b in got[i + 1 :]:
            assert not np.shares_memory(a, b)
