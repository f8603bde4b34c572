"""Nicolas P. Rougier's book "From Python to NumPy" (2017) on positional arrays: the introduction, "Anatomy of an
array", "Code vectorization" and "Problem vectorization".

Each example is a function of a NumPy-like module ``np_`` and its inputs (``py2np_cases.py``). It runs once on
NumPy and once on a 2x2 mesh: the inputs are ``xp.asarray(...)`` (axis k split over mesh axis k; the ``_odd``
inputs and the sizes after ``@`` give uneven blocks), ``np_`` is ``numpy`` except for the creation functions, which
make arrays of the mesh with NEP 35's ``like=`` (``np.zeros``, ``np.arange``, ``np.array``...; ``xp.linspace`` for
``np.linspace``). Everything else is NumPy's own function, method, ufunc (method) or operator, dispatched through
``__array_function__``/``__array_ufunc__``; the results (gathered value, dtype, shape; an array where NumPy gives
one) must be NumPy's, and nothing may warn ``sa.GatherWarning``.

The classes of what does not match (the tables below the cases):

* (a) a shardarray gap: ``XFAILS`` (and ``VIEW_WRITES``), ``xfail(strict=True)`` naming the reproducer, so that a fix
  flips it. The three this check found are fixed: ``np.correlate`` (the introduction's sub-sequence search
  ``function_2``), the shape setter ``Xi.shape = n`` (temporal vectorization's in-place reshape), and
  ``sa.CopyWriteWarning`` for a write into a ``x.ravel()`` freed unread (the first NumPy Game of Life writes
  ``Z_ = Z.ravel()``).
* (b) refused by design, run (``REFUSED``: the typed error and its hint): a Python tuple as an operand (the Boids'
  wrap-around ``position %= (width, height)``: host data does not mix with an Array implicitly, as CuPy's), the
  structured dtype of Gray-Scott's board (shardarray's dtypes are numbers and bool), the box-counting exercise's
  ``np.polyfit(np.log(sizes), np.log(counts), 1)`` (``np.log`` of the Python list ``counts`` is a NumPy array).
* (b) by design, not run (``SKIPPED``): writes through a view (the Game of Life's
  ``Z[1:-1, 1:-1][birth | survive] = 1``, "Anatomy"'s ``Z_view = Z[:3]; Z_view[...] = 1``, the first Game of Life's
  writes into ``Z.ravel()``: a getitem, ``ravel`` or ``reshape`` result is a copy here, as JAX's; a getitem copy
  written and freed unread warns ``sa.CopyWriteWarning``, which ``test_view_write_warns`` checks). The cases write
  the same updates into the array itself (``Z[1:-1, 1:-1] = np.where(...)``, Gray-Scott's ``U[1:-1, 1:-1] += ...``
  for the book's ``u += ...`` with ``u = U[1:-1, 1:-1]``).
* (b) by design, rewritten: Gray-Scott's board is two arrays, ``np.negative(I, I)`` of a bool mask is
  ``np.logical_not`` (NumPy refuses it too), and the Boids' wrap-around takes ``np.array([width, height])``.
  ``np.mgrid``'s NumPy index grids index the mesh's arrays as they are (``4.3/mandelbrot_mgrid``).
* (c) not applicable, not written: the memory-layout parts of "Anatomy of an array" (strides, ``as_strided``,
  ``view(np.float16)``, ``byte_bounds``, ``.base``, ``np.may_share_memory``), path finding's ``as_strided`` windows
  (the case takes shifted slices), "Custom vectorization" (typed lists are NumPy-only dtypes), "Beyond NumPy",
  SciPy's ``cdist`` (the case broadcasts), ``np.random``'s host generators (their arrays are the inputs here), plots,
  animations, ``%timeit``, prints.

``test_py2np_example_on_meshes_and_layouts`` runs the examples that take inputs on the other test meshes (1, 4,
2x2x2, 3x2) with random layouts (empty blocks where a dim is shorter than its mesh axes).
"""

from __future__ import annotations

import numpy as np
import py2np_cases as pc
import pytest
from clients import Book, OnMesh, sized
from clients import mesh as mesh  # (the fixture: a 2x2 mesh, the default one of xp.asarray)
from fuzzing import cached_meshes, fuzz
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

#: name -> (the example's function, its inputs); the names say the chapter, ``@n`` a size, ``_odd`` odd sizes
CASES = {
    "2/random_walk": (pc.random_walk, [pc.STEPS]),
    "2/random_walk_odd": (pc.random_walk, [pc.STEPS_ODD]),
    "2/sum_of_evens": (pc.sum_of_evens, [pc.INTS]),
    "3/reshape_ravel_reduce": (pc.anatomy_reshape, []),
    "3/fill": (pc.anatomy_fill, []),
    "3/copies": (pc.anatomy_copies, [pc.UNIFORM_5x5]),
    "3/temporary_copy": (pc.anatomy_temporary, []),
    "3/exercise": (pc.anatomy_exercise, []),
    "4.1/add_numpy": (pc.add_numpy, [pc.SEQ_X, pc.SEQ_X[::-1]]),
    "4.2/life": (pc.life, [pc.LIFE]),
    "4.2/life_odd": (pc.life, [pc.LIFE_ODD]),
    "4.2/life_glider": (pc.life, [pc.GLIDER]),
    "4.2/life_assign_bool": (pc.life_assign_bool, [pc.LIFE_ODD]),
    "4.2/life_view_write": (pc.life_view_write, [pc.LIFE]),
    "4.2/life_ravel_write": (pc.life_ravel_write, [pc.LIFE]),
    "4.2/life_argwhere": (pc.life_argwhere, [pc.LIFE_ODD]),
    "4.2/gray_scott": (pc.gray_scott, [pc.GS_NOISE_U, pc.GS_NOISE_V]),
    "4.2/gray_scott_odd": (pc.gray_scott, [pc.GS_NOISE_U_ODD, pc.GS_NOISE_V_ODD]),
    "4.2/mandelbrot@24x16": (sized(pc.mandelbrot, 24, 16), []),
    "4.2/mandelbrot@23x15": (sized(pc.mandelbrot, 23, 15), []),
    "4.3/mandelbrot_temporal@24x16": (sized(pc.mandelbrot_temporal, 24, 16), []),
    "4.3/mandelbrot_temporal@23x15": (sized(pc.mandelbrot_temporal, 23, 15), []),
    "4.3/mandelbrot_temporal_escaping@13x7": (sized(pc.mandelbrot_temporal, 13, 7, 20, 2.0, 1.0), []),
    "4.2/fractal_dimension": (pc.fractal_dimension, [pc.COAST]),
    "4.2/fractal_dimension_odd": (pc.fractal_dimension, [pc.COAST_ODD]),
    "4.2/fractal_dimension_list": (pc.fractal_dimension_list, [pc.COAST]),
    "4.4/boids": (pc.boids, [pc.BOIDS_POSITION, pc.BOIDS_VELOCITY]),
    "5.1/compute": (pc.compute, [pc.SEQ_X, pc.SEQ_Y]),
    "5.2/bfs": (pc.bfs, [pc.MAZE]),
    "5.2/bfs_odd": (pc.bfs, [pc.MAZE_ODD]),
    "5.2/breadth_first": (pc.breadth_first, [pc.MAZE]),
    "5.2/build_maze_breadth_first": (pc.maze_and_path, []),
    "5.2/value_iteration": (pc.value_iteration, [pc.MAZE]),
    "5.2/value_iteration_odd": (pc.value_iteration, [pc.MAZE_ODD]),
    "5.3/diffuse": (pc.fluid_diffuse, [pc.FLUID_D]),
    "5.3/advect": (pc.fluid_advect, [pc.FLUID_D, pc.FLUID_U, pc.FLUID_V]),
    "5.3/project": (pc.fluid_project, [pc.FLUID_U, pc.FLUID_V]),
    "5.4/dart_sampling": (pc.dart_sampling, [pc.DART_POINTS]),
    # the book's literal forms (the tables below say which class each is)
    "2/find_subsequence": (pc.find_subsequence, [pc.SEQ, pc.SUB]),
    "3/view_write": (pc.anatomy_view_write, []),
    "4.2/gray_scott_structured": (pc.gray_scott_structured, []),
    "4.3/mandelbrot_shape_set@24x16": (sized(pc.mandelbrot_temporal_shape_set, 24, 16), []),
    "4.3/mandelbrot_mgrid@24x16": (sized(pc.mandelbrot_mgrid, 24, 16), []),
    "4.4/boids_wraparound": (pc.boids_wraparound, [pc.BOIDS_POSITION, pc.BOIDS_VELOCITY]),
}

#: (b) by design, not run: the reason
_VIEW = (
    "(b) a write into a getitem result does not reach the array: a getitem is a copy here, as JAX's "
    "(docs/guides/numpy_style.md); freed unread, the copy warns sa.CopyWriteWarning"
)
SKIPPED = {
    "4.2/life_view_write": f"{_VIEW}; Z[1:-1, 1:-1][birth | survive] = 1 (4.2/life writes Z[1:-1, 1:-1] itself)",
    "3/view_write": f"{_VIEW}; Z_view = Z[:3]; Z_view[...] = 1 leaves Z (Z[:3] = 1 writes it)",
    "4.2/life_ravel_write": f"{_VIEW}; Z_ = Z.ravel() is a new array too: Z_[R1] = 0 writes it (4.2/life_argwhere)",
}

#: (b) refused by design, run: the typed error and what its message says
REFUSED: dict[str, tuple[type[Exception], str]] = {
    # a Python tuple as an operand: host data does not mix with an Array implicitly (as CuPy's); the message says
    # to convert it (4.4/boids writes position %= np.array([width, height], like=...))
    "4.4/boids_wraparound": (sa.DTypeError, "host data does not mix"),
    # structured dtypes: shardarray's dtypes are numbers and bool (4.2/gray_scott keeps U and V as two arrays)
    "4.2/gray_scott_structured": (sa.DTypeError, "is not supported by shardarray"),
    # np.log(counts) of the Python list counts is a NumPy array: host data next to an Array in np.polyfit is refused
    # (4.2/fractal_dimension takes np.log(np.array(counts, like=...)))
    "4.2/fractal_dimension_list": (sa.DTypeError, "NumPy arrays do not mix with an Array"),
}

#: (a) shardarray gaps: xfail(strict=True) naming the reproducer, so that a fix flips them
XFAILS: dict[str, str] = {}  # (none left: np.correlate, the shape setter and ravel's copies came in round 16)


BOOK = Book(CASES, refused=REFUSED, skipped=SKIPPED, xfails=XFAILS)


@pytest.mark.parametrize("name", BOOK.params())
@pytest.mark.usefixtures("mesh")
def test_py2np_example_matches_numpy(name):
    BOOK.run_on_2x2(name)


#: the book's writes through a view (``SKIPPED``): (the case, its input) -> an xfail reason where no warning comes
VIEW_WRITES = {
    "3/view_write": None,
    "4.2/life_view_write": None,
    "4.2/life_ravel_write": None,
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=r)] if r else [], id=n)
        for n, r in VIEW_WRITES.items()
    ],
)
@pytest.mark.usefixtures("mesh")
def test_view_write_warns(name):
    """(b) The book's writes through a view write a copy here, which warns ``sa.CopyWriteWarning`` when freed
    unread."""
    fn, arrays = CASES[name]
    with pytest.warns(sa.CopyWriteWarning):
        fn(OnMesh(xp.asarray(np.zeros(1))), *[xp.asarray(a) for a in arrays])


@fuzz(40)
@given(data=st.data(), on=cached_meshes())
def test_py2np_example_on_meshes_and_layouts(data, on):
    BOOK.run_laid_out(data, on)
