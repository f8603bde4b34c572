"""Chapter 2 of Jake VanderPlas's "Python Data Science Handbook" ("Introduction to NumPy", 02.01-02.09) on positional
arrays.

Each example is a function of a NumPy-like module ``np_`` and its inputs (``pdsh_cases.py``). It runs once on NumPy
and once on a 2x2 mesh: the inputs are ``xp.asarray(...)`` (axis k split over mesh axis k; the ``_odd`` cases and
the sizes after ``@`` give uneven blocks), ``np_`` is ``numpy`` except for the creation functions, which make
arrays of the mesh with NEP 35's ``like=`` (``np.zeros``, ``np.arange``, ``np.array``...; ``xp.linspace`` for
``np.linspace``). Everything else is NumPy's own function, method, ufunc method or operator, dispatched through
``__array_function__``/``__array_ufunc__``; the results (gathered value, dtype, shape; an array where NumPy gives
one) must be NumPy's, and nothing may warn ``sa.GatherWarning``.

The classes of what does not match (the tables below the cases):

* (a) a shardarray gap: ``XFAILS``, ``xfail(strict=True)`` naming the reproducer, so that a fix flips it (none left:
  02.02's ``x.itemsize``/``x.nbytes`` were the one, fixed).
* (b) refused by design, run (``REFUSED``: the typed error and its hint): the book's ``z = [99, 99, 99]`` Python
  list in ``np.concatenate`` (host data is not copied onto the mesh implicitly, as CuPy and JAX), 02.09's
  structured dtypes (shardarray's dtypes are numbers and bool; the per-field arrays of ``structured_columns``
  answer the section's questions).
* (b) by design, not run (``SKIPPED``): writes through a view (``x2[:2, :2][0, 0] = 99`` and ``out=y[::2]``: a
  getitem result is a copy here, as JAX's; a write into one that is then freed unread warns
  ``sa.CopyWriteWarning``), ``print(x)`` (the repr, with dims and layout).
* (c) not applicable, not written: ``np.random``'s host generators (02.01; their arrays are the inputs here),
  SciPy's ``special`` (02.03; ``SCIPY_ARRAY_API=1`` runs it on the mesh: test_scipy.py), pandas' CSV reading,
  plots, ``%timeit``, and the Python-only asides (lists, the ``array`` module, ``bin``/``and``/``or`` of ints).

``test_handbook_example_on_meshes_and_layouts`` runs the examples that take inputs on the other test meshes (1, 4,
2x2x2, 3x2) with random layouts (empty blocks where a dim is shorter than its mesh axes).
"""

from __future__ import annotations

import numpy as np
import pdsh_cases as pc
import pytest
from clients import Book, sized
from clients import mesh as mesh  # (the fixture: a 2x2 mesh, the default one of xp.asarray)
from fuzzing import cached_meshes, fuzz
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa

#: name -> (the example's function, its inputs); the names say the section, ``@n`` a size, ``_odd`` odd sizes
CASES = {
    "02.01/from_lists": (pc.types_from_lists, []),
    "02.01/from_scratch": (pc.types_from_scratch, []),
    "02.02/attributes": (pc.basics_attributes, [pc.X1, pc.X2, pc.X3]),
    "02.02/attributes_odd": (pc.basics_attributes, [pc.X1_ODD, pc.X2_ODD, pc.X3_ODD]),
    "02.02/itemsize_nbytes": (pc.basics_attributes_bytes, [pc.X1, pc.X2, pc.X3]),
    "02.02/print": (pc.basics_print, []),
    "02.02/indexing": (pc.basics_indexing, [pc.X1, pc.X2]),
    "02.02/indexing_odd": (pc.basics_indexing, [pc.X1_ODD, pc.X2_ODD]),
    "02.02/slicing_1d@10": (sized(pc.basics_slicing_1d, 10), []),
    "02.02/slicing_1d@11": (sized(pc.basics_slicing_1d, 11), []),
    "02.02/slicing_2d": (pc.basics_slicing_2d, [pc.X2]),
    "02.02/slicing_2d_odd": (pc.basics_slicing_2d, [pc.X2_ODD]),
    "02.02/views": (pc.basics_views, [pc.X2]),
    "02.02/copies": (pc.basics_copies, [pc.X2]),
    "02.02/copies_odd": (pc.basics_copies, [pc.X2_ODD]),
    "02.02/reshape": (pc.basics_reshape, []),
    "02.02/concatenate": (pc.basics_concatenate, []),
    "02.02/concatenate_list": (pc.basics_concatenate_list, []),
    "02.02/split@4": (sized(pc.basics_split, 4), []),
    "02.02/split@5": (sized(pc.basics_split, 5), []),
    "02.03/reciprocals": (pc.ufunc_reciprocals, [np.arange(1.0, 8.0)]),
    "02.03/intro@3": (sized(pc.ufunc_intro, 3), []),
    "02.03/intro@5": (sized(pc.ufunc_intro, 5), []),
    "02.03/arithmetic@4": (sized(pc.ufunc_arithmetic, 4), []),
    "02.03/arithmetic@7": (sized(pc.ufunc_arithmetic, 7), []),
    "02.03/absolute": (pc.ufunc_absolute, []),
    "02.03/trigonometric": (pc.ufunc_trigonometric, []),
    "02.03/exponents": (pc.ufunc_exponents, []),
    "02.03/out": (pc.ufunc_out, []),
    "02.03/out_view": (pc.ufunc_out_view, []),
    "02.03/aggregates@5": (sized(pc.ufunc_aggregates, 5), []),
    "02.03/aggregates@7": (sized(pc.ufunc_aggregates, 7), []),
    "02.03/outer@5": (sized(pc.ufunc_outer, 5), []),
    "02.03/outer@7": (sized(pc.ufunc_outer, 7), []),
    "02.04/sum_min_max": (pc.agg_sum, [pc.BIG]),
    "02.04/sum_min_max_even": (pc.agg_sum, [pc.L]),
    "02.04/multidimensional": (pc.agg_multidimensional, [pc.M34]),
    "02.04/multidimensional_odd": (pc.agg_multidimensional, [pc.M57]),
    "02.04/table": (pc.agg_table, [pc.M34]),
    "02.04/table_odd": (pc.agg_table, [pc.M57]),
    "02.04/nan_table": (pc.agg_nan, [pc.NANS]),
    "02.04/nan_table_odd": (pc.agg_nan, [pc.NANS[:, :5]]),
    "02.04/presidents": (pc.agg_presidents, [pc.HEIGHTS]),
    "02.04/presidents_odd": (pc.agg_presidents, [pc.HEIGHTS_ODD]),
    "02.05/intro": (pc.broadcast_intro, []),
    "02.05/rules": (pc.broadcast_rules, []),
    "02.05/centering": (pc.broadcast_centering, [pc.X103]),
    "02.05/centering_odd": (pc.broadcast_centering, [pc.X93]),
    "02.05/plotting@50": (sized(pc.broadcast_plotting, 50), []),
    "02.05/plotting@51": (sized(pc.broadcast_plotting, 51), []),
    "02.06/operators": (pc.compare_operators, []),
    "02.06/counting": (pc.compare_counting, [pc.RAND_3x4]),
    "02.06/counting_odd": (pc.compare_counting, [pc.RAND_5x7]),
    "02.06/rainfall": (pc.compare_rainfall, [pc.RAINFALL]),
    "02.06/masks": (pc.compare_masks, [pc.RAND_3x4, pc.RAINFALL]),
    "02.06/masks_odd": (pc.compare_masks, [pc.RAND_5x7, pc.RAINFALL]),
    "02.06/and_or": (pc.compare_and_or, []),
    "02.07/explore": (pc.fancy_explore, [pc.RAND10]),
    "02.07/2d": (pc.fancy_2d, []),
    "02.07/combined": (pc.fancy_combined, []),
    "02.07/random_points": (pc.fancy_random_points, [pc.GAUSS2D]),
    "02.07/random_points_odd": (pc.fancy_random_points, [pc.GAUSS2D_ODD]),
    "02.07/modify": (pc.fancy_modify, []),
    "02.07/binning": (pc.fancy_binning, [pc.RANDN100]),
    "02.07/binning_odd": (pc.fancy_binning, [pc.RANDN101]),
    "02.08/selection_sort": (pc.selection_sort, [np.array([2, 1, 4, 3, 5])]),
    "02.08/functions": (pc.sort_functions, []),
    "02.08/axes": (pc.sort_axes, [pc.SORT_4x6]),
    "02.08/axes_odd": (pc.sort_axes, [pc.SORT_5x7]),
    "02.08/partition": (pc.sort_partition, [pc.SORT_4x6]),
    "02.08/partition_odd": (pc.sort_partition, [pc.SORT_5x7]),
    "02.08/knn": (sized(pc.sort_knn, 2), [pc.POINTS10]),
    "02.08/knn_odd": (sized(pc.sort_knn, 3), [pc.POINTS11]),
    "02.09/structured": (pc.structured, []),
    "02.09/structured_columns": (pc.structured_columns, []),
}

#: (b) refused by design, run: the typed error and what its message says to do
REFUSED: dict[str, tuple[type[Exception], str]] = {
    # a Python list beside distributed arrays is host data, not copied onto the mesh implicitly (as CuPy and JAX)
    "02.02/concatenate_list": (sa.DTypeError, "asarray"),
    # structured (compound) dtypes: shardarray's dtypes are numbers and bool; the message lists them
    "02.09/structured": (sa.DTypeError, "not supported by shardarray.*float64"),
}

#: (b) by design, not run: the reason
SKIPPED = {
    "02.02/views": "(b) a write into a getitem result does not reach the array: a getitem is a copy here, as JAX's "
    "(docs/guides/numpy_style.md); x2[:2, :2] = ... writes it",
    "02.03/out_view": "(b) out=y[::2] is a write through a view (a getitem is a copy here, as JAX's): y is unchanged, "
    "and the copy, freed unread, warns sa.CopyWriteWarning (tests/test_fuzz16_followups.py); y[::2] = np.power(2, "
    "x) writes it",
    "02.02/print": "(b) print(x) shows the repr (values, dims, dtype, layout, mesh: Array.__repr__, an explicit "
    "gather), not NumPy's [1 2 3]; print(x.numpy()) prints NumPy's",
}

#: (a) shardarray gaps: xfail(strict=True) naming the reproducer, so that a fix flips them
XFAILS: dict[str, str] = {}  # (none left: x.itemsize/x.nbytes came in round 16)


BOOK = Book(CASES, refused=REFUSED, skipped=SKIPPED, xfails=XFAILS)


@pytest.mark.parametrize("name", BOOK.params())
@pytest.mark.usefixtures("mesh")
def test_handbook_example_matches_numpy(name):
    BOOK.run_on_2x2(name)


@fuzz(40)
@given(data=st.data(), on=cached_meshes())
def test_handbook_example_on_meshes_and_layouts(data, on):
    BOOK.run_laid_out(data, on)
