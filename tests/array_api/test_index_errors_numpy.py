"""Bad positional indices raise what NumPy raises (``IndexError``), as typed ``sa`` errors: code written for NumPy
(``except IndexError``) catches them. Before, too many indices, index arrays that do not broadcast, a mask of another
shape, two Ellipses, float and string indices raised ``DimensionError``/``DTypeError``/``ArgumentError`` only."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

KEYS = {
    "index arrays that do not broadcast": lambda n: (n.asarray([0, 1]), n.asarray([0, 1, 2])),
    "a mask over the leading axis of another length": lambda n: n.asarray([True, False]),
    "a mask over a later axis of another length": lambda n: (slice(None), n.asarray([True, False])),
    "too many indices": lambda n: (0, 0, 0),
    "a float": lambda n: 1.5,
    "a float array": lambda n: n.asarray([1.5]),
    "two Ellipses": lambda n: (Ellipsis, 0, Ellipsis),
    "a string": lambda n: "a",
    "an index out of range": lambda n: n.asarray([5]),
}


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the class is what is compared)
        return e
    return None


@pytest.mark.parametrize("case", sorted(KEYS))
@pytest.mark.parametrize("write", [False, True], ids=["get", "set"])
@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"d": 4}])
def test_bad_keys_raise_numpys_index_error(case, write, shape):
    a = np.arange(12.0).reshape(3, 4)
    with sa.default_mesh(sa.Mesh(shape)):
        x = xp.asarray(a)
        ours_key, numpy_key = KEYS[case](xp), KEYS[case](np)
        if write:
            theirs = _raised(lambda: a.copy().__setitem__(numpy_key, 1.0))
            ours = _raised(lambda: x.__setitem__(ours_key, 1.0))
        else:
            theirs = _raised(lambda: a[numpy_key])
            ours = _raised(lambda: x[ours_key])
    assert isinstance(theirs, IndexError), theirs
    assert isinstance(ours, sa.ShardArrayError), repr(ours)
    assert isinstance(ours, IndexError), repr(ours)
    assert isinstance(ours, (ValueError, TypeError))  # (the typed errors' contract: still a ValueError/TypeError)
    np.testing.assert_array_equal(np.asarray(x), a)  # (a refused write changes nothing)


def test_a_value_of_the_wrong_shape_stays_numpys_value_error():
    a = np.zeros((3, 4))
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        x = xp.asarray(a)
        with pytest.raises(ValueError) as theirs:
            a[0:2] = np.ones((3, 4))
        with pytest.raises(sa.DimensionError) as ours:
            x[0:2] = xp.ones((3, 4))
    assert not isinstance(theirs.value, IndexError) and not isinstance(ours.value, IndexError)
