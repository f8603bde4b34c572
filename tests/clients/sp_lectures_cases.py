"""The cases of test_sp_lectures.py: the NumPy code of the Scientific Python Lectures' chapter 1.3, "NumPy: creating
and manipulating numerical data" (lectures.scientific-python.org), each example written as a function of a
NumPy-like module ``np_`` and its input arrays.

Each returns what the example shows (an array, a scalar, a shape, a dtype or a tuple of them). The chapter's random
arrays (``np.random.rand``/``randint``) and its data files (``populations.txt``, the raccoon face of
``scipy.datasets.face``) are synthetic seeded inputs of the same kind and a smaller size; plots, ``%timeit`` and
prints are left out. Functions that take a size run the same example on sizes that give uneven blocks on the 2x2
mesh.
"""

from __future__ import annotations

import numpy as np

rng = np.random.default_rng(1316)

RAND15 = rng.integers(0, 21, 15)  # 1.3.1.8: np.random.randint(0, 21, 15)
RAND222 = rng.random((2, 2, 2))  # 1.3.2.2: np.random.rand(2, 2, 2)
#: 1.3.2.2 "populations.txt": year, hares, lynxes, carrots (21 years, the populations as the file's floats)
_YEARS = np.arange(1900.0, 1921.0)
POPULATIONS = np.column_stack(
    [_YEARS, *(np.round(rng.uniform(lo, hi, 21), -2) for lo, hi in ((4e3, 8e4), (4e3, 6e4), (3e4, 5e4)))]
)
STEPS = 2 * rng.integers(0, 1 + 1, (60, 40)) - 1  # 1.3.2.2: 2 * np.random.randint(0, 1 + 1, (n_stories, t_max)) - 1
STEPS_ODD = 2 * rng.integers(0, 1 + 1, (61, 41)) - 1
FACE = rng.integers(0, 256, (48, 66)).astype(np.uint8)  # 1.3.5.1: scipy.datasets.face(gray=True), smaller
FACE_ODD = rng.integers(0, 256, (47, 65)).astype(np.uint8)
MARKOV_P = rng.random((5, 5))  # 1.3.5.3: np.random.rand(n_states, n_states)
MARKOV_P0 = rng.random(5)
POLY_NOISE = rng.random(20)  # 1.3.3.4: 0.3 * np.random.rand(20)
CHEB_NOISE = rng.random(201)  # 1.3.3.4: 0.3 * np.random.rand(2000), smaller
RAND10x3 = rng.random((10, 3))  # 1.3.5 "Array manipulations": a 10 x 3 array of random numbers
RAND11x3 = rng.random((11, 3))
STATS_X = rng.integers(0, 10, 9)  # 1.3.2.2 "Statistics", on more data
STATS_Y = rng.integers(0, 10, (5, 7))
MILEPOSTS = np.array([0, 198, 303, 736, 871, 1175, 1475, 1544, 1913, 2448])  # 1.3.2.4: Route 66's mileposts
SORT_2x3 = np.array([[4, 3, 5], [1, 2, 1]])  # 1.3.2.6
SORT_5x7 = rng.integers(0, 10, (5, 7))


# ------------------------------------------------------------------------- 1.3.1 The NumPy array object


def creation_manual(np_):
    """ "Manual construction of arrays": 1-D, 2-D, 3-D; ``ndim``, ``shape``, ``len``; the exercise's
    ``np.shape``/``np.ndim``/``np.size``."""
    a = np_.array([0, 1, 2, 3])
    b = np_.array([[0, 1, 2], [3, 4, 5]])
    c = np_.array([[[1], [2]], [[3], [4]]])
    odd_even = np_.array([[7, 5, 3, 1], [2, 4, 6, 8]])  # (the exercise's own: odd numbers backwards, then even)
    shapes = (np_.shape(odd_even), np_.ndim(odd_even), np_.size(odd_even), len(odd_even))
    return a, a.ndim, a.shape, len(a), b, b.ndim, b.shape, len(b), c, c.shape, shapes


def creation_functions(np_):
    """ "Functions for creating arrays": ``arange``, ``linspace`` (and ``endpoint=False``), ``ones``, ``zeros``,
    ``eye``, ``diag`` (and off the diagonal)."""
    return (
        np_.arange(10),
        np_.arange(1, 9, 2),
        np_.linspace(0, 1, 6),
        np_.linspace(0, 1, 5, endpoint=False),
        np_.ones((3, 3)),
        np_.zeros((2, 2)),
        np_.eye(3),
        np_.diag(np_.array([1, 2, 3, 4])),
        np_.diag(np_.arange(2, 5), k=-1),
        np_.diag(np_.arange(16).reshape(4, 4)),
    )


def creation_exercise(np_):
    """Exercise "Simple arrays" (1.3.1.5's solution): the 4x4 of ones with a 2 and a 6, the 6x5 with a diagonal
    below a row of zeros, and ``np.tile``."""
    a = np_.ones((4, 4), dtype=int)
    a[3, 1] = 6
    a[2, 3] = 2
    b = np_.zeros((6, 5))
    b[1:] = np_.diag(np_.arange(2, 7))
    return a, b, np_.tile(np_.array([[4, 3], [2, 1]]), (2, 3))


def dtypes_basic(np_):
    """ "Basic data types": the default int and float, ``dtype=float``, complex, bool (the dtypes NumPy infers)."""
    a, b = np_.array([1, 2, 3]), np_.array([1.0, 2.0, 3.0])
    c = np_.array([1, 2, 3], dtype=float)
    d = np_.array([1 + 2j, 3 + 4j, 5 + 6 * 1j])
    e = np_.array([True, False, False, True])
    return a.dtype, b.dtype, c, c.dtype, d, d.dtype, e, e.dtype, np_.ones((3, 3)).dtype


def dtypes_strings(np_):
    """ "Basic data types": strings (``np.array(['Bonjour', 'Hello', 'Hallo'])``)."""
    return np_.array(["Bonjour", "Hello", "Hallo"])


def indexing_basic(np_):
    """ "Indexing and slicing": elements, negative indices, reversal; a 2-D ``diag``, a write, a row."""
    a = np_.arange(10)
    read = (a[0], a[2], a[-1], a[::-1])
    b = np_.diag(np_.arange(3))
    first = b[1, 1]
    b[2, 1] = 10
    return read, first, b, b[1]


def slicing(np_, n):
    """ "Indexing and slicing": ``a[2:9:3]``, open ends, steps; assignment of a scalar and of a reversed slice."""
    a = np_.arange(n)
    read = (a[2:9:3], a[:4], a[1:3], a[::2], a[3:])
    a = np_.arange(n)  # (a new one: NumPy's slices above are views, which the write below would change)
    a[5:] = 10
    b = np_.arange(n - 5)
    c = np_.arange(n)
    c[5:] = b[::-1]
    return read, a, c


def slicing_figure(np_):
    """The slicing figure's 6x6 array ``np.arange(6) + np.arange(0, 51, 10)[:, np.newaxis]`` and its slices."""
    a = np_.arange(6) + np_.arange(0, 51, 10)[:, np.newaxis]
    return a, a[0, 3:5], a[4:, 4:], a[:, 2], a[2::2, ::2]


def views_write(np_):
    """ "Copies and views": ``b = a[::2]`` is a view, ``np.may_share_memory(a, b)``, and ``b[0] = 12`` shows in
    ``a``."""
    a = np_.arange(10)
    b = a[::2]
    shared = np_.may_share_memory(a, b)
    b[0] = 12
    return shared, b, a


def copies(np_):
    """ "Copies and views": ``a[::2].copy()`` is not a view; its write does not show in ``a``."""
    a = np_.arange(10)
    c = a[::2].copy()
    c[0] = 12
    return np_.may_share_memory(a, c), c, a


def sieve(np_, n):
    """Worked example "Prime number sieve": the sieve of Eratosthenes (skipping known non-primes, from ``j**2``)."""
    return sieve_of(np_, np_.ones((n,), dtype=bool))


def sieve_of(np_, is_prime):
    """The sieve on a given array of ``True`` (its layout drawn by the test)."""
    is_prime[:2] = 0
    n_max = int(np.sqrt(len(is_prime) - 1))
    for j in range(2, n_max + 1):
        if is_prime[j]:
            is_prime[j**2 :: j] = False
    return is_prime, np_.nonzero(is_prime)


def fancy_mask(np_, a):
    """ "Fancy indexing, using boolean masks": ``a % 3 == 0``, ``a[mask]``, ``a[a % 3 == 0] = -1``."""
    mask = a % 3 == 0
    extract_from_a = a[mask]
    a[a % 3 == 0] = -1
    return mask, extract_from_a, a


def fancy_integers(np_):
    """ "Indexing with an array of integers": repeated indices, assignment, a 2-D index array's shape."""
    a = np_.arange(0, 100, 10)
    read = a[[2, 3, 2, 4, 2]]
    a[[9, 7]] = -100
    b = np_.arange(10)
    idx = np_.array([[3, 4], [9, 7]])
    return read, a, idx.shape, b[idx]


def fancy_figure(np_):
    """The fancy indexing figure: paired index tuples, a slice with a list, a boolean mask with an int."""
    a = np_.arange(6) + np_.arange(0, 51, 10)[:, np.newaxis]
    mask = np_.array([1, 0, 1, 0, 0, 1], dtype=bool)
    return a[(0, 1, 2, 3, 4), (1, 2, 3, 4, 5)], a[3:, [0, 2, 5]], a[mask, 2]


def fancy_writes(np_):
    """Exercise "Fancy indexing": the figure's selections set to zero (the pairs as lists: ``fancy_figure`` has
    the tuples), and a value array written into them."""
    a = np_.arange(6) + np_.arange(0, 51, 10)[:, np.newaxis]
    mask = np_.array([1, 0, 1, 0, 0, 1], dtype=bool)
    a[[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]] = 0
    b = np_.arange(6) + np_.arange(0, 51, 10)[:, np.newaxis]
    b[3:, [0, 2, 5]] = np_.array([-1, -2, -3])
    c = np_.arange(6) + np_.arange(0, 51, 10)[:, np.newaxis]
    c[mask, 2] = 0
    return a, b, c


def fancy_range(np_):
    """ "Framing a face": ``face[range(400), range(400)] = 255`` (a ``range`` as an index, a diagonal)."""
    face = np_.zeros((6, 7), dtype=np.uint8)
    face[range(5), range(5)] = 255
    return face, face[range(2, 6), range(4)]


# ------------------------------------------------------------------------- 1.3.2 Numerical operations on arrays


def elementwise(np_):
    """ "Elementwise operations": with scalars, between arrays, ``2**(j + 1) - j``, ``c * c`` vs ``c.dot(c)``; the
    exercise's "add even elements with odd elements"."""
    a = np_.array([1, 2, 3, 4])
    b = np_.ones(4) + 1
    j = np_.arange(5)
    c = np_.ones((3, 3))
    x = np_.arange(10)
    return a + 1, 2**a, a - b, a * b, 2 ** (j + 1) - j, c * c, c.dot(c), x[::2] + x[1::2], 2**j, 2 ** (3 * j) - j


def comparisons(np_):
    """ "Comparisons", "array-wise comparisons" (``np.array_equal``) and "Logical operations"."""
    a, b, c = np_.array([1, 2, 3, 4]), np_.array([4, 2, 2, 4]), np_.array([1, 2, 3, 4])
    p = np_.array([1, 1, 0, 0], dtype=bool)
    q = np_.array([1, 0, 1, 0], dtype=bool)
    return a == b, a > b, np_.array_equal(a, b), np_.array_equal(a, c), np_.logical_or(p, q), np_.logical_and(p, q)


def transcendental(np_):
    """ "Transcendental functions": ``sin``, ``log`` (``log(0)`` is ``-inf``), ``exp``."""
    a = np_.arange(5)
    return np_.sin(a), np_.log(a), np_.exp(a)


def shape_mismatch(np_):
    """ "Shape mismatches": ``np.arange(4) + np.array([1, 2])`` raises ``ValueError`` (returns its type)."""
    a = np_.arange(4)
    try:
        a + np_.array([1, 2])
    except ValueError:
        return "ValueError"
    return "no error"


def transposition(np_):
    """ "Transposition": ``np.triu(np.ones((3, 3)), 1)`` and its ``.T``; ``np.allclose``, ``np.tril``."""
    a = np_.triu(np_.ones((3, 3)), 1)
    return a, a.T, np_.allclose(a.T, np_.tril(np_.ones((3, 3)), -1)), np_.tril(a.T)


def reductions(np_, x3):
    """ "Basic reductions": sums along axes (and the same by slices), on a random 2x2x2."""
    x = np_.array([1, 2, 3, 4])
    y = np_.array([[1, 1], [2, 2]])
    return (
        (np_.sum(x), x.sum(), np_.cumsum(x)),
        (y.sum(axis=0), y[:, 0].sum(), y[:, 1].sum(), y.sum(axis=1), y[0, :].sum(), y[1, :].sum()),
        (x3.sum(axis=2)[0, 1], x3[0, 1, :].sum()),
    )


def extrema_logical(np_):
    """ "Extrema" (``min``/``max``/``argmin``/``argmax``) and "Logical operations" (``all``/``any``, a chained
    comparison)."""
    x = np_.array([1, 3, 2])
    z = np_.zeros((10, 10))
    a, b, c = np_.array([1, 2, 3, 2]), np_.array([2, 2, 3, 2]), np_.array([6, 4, 4, 5])
    return (
        (x.min(), x.max(), x.argmin(), x.argmax()),
        (np_.all(np_.array([True, True, False])), np_.any(np_.array([True, True, False]))),
        (np_.any(z != 0), np_.all(z == z), ((a <= b) & (b <= c)).all()),
    )


def statistics(np_):
    """ "Statistics": ``mean``, ``median`` (and along ``axis=-1``), ``std``."""
    x = np_.array([1, 2, 3, 1])
    y = np_.array([[1, 2, 3], [5, 6, 1]])
    e = np_.empty((2, 3))
    return x.mean(), np_.median(x), np_.median(y, axis=-1), x.std(), e.shape, e.dtype


def statistics_of(np_, x, y):
    """ "Statistics" on given arrays (their layouts drawn by the test): ``mean``, ``median`` (flat, along each
    axis), ``std`` (and along an axis)."""
    return x.mean(), np_.median(x), np_.median(y), np_.median(y, axis=-1), np_.median(y, axis=0), x.std(), y.std(0)


def population_data(np_, data):
    """Worked example "data statistics": ``data.T`` unpacked, per-species mean and std, the species largest each
    year."""
    year, hares, lynxes, carrots = data.T
    populations = data[:, 1:]
    return (
        (year, hares, lynxes, carrots),
        populations.max(axis=0),
        np_.argmin(populations, axis=0),
        populations.mean(axis=0),
        populations.std(axis=0),
        np_.argmax(populations, axis=1),
    )


def population_exercise(np_, data):
    """The exercise of "data statistics" (its solution): the year of each species' largest population, the years
    any population is above 50000, the two years of each species' lowest populations, the correlation of the
    change of the hares with the lynxes."""
    year, hares, lynxes, _ = data.T
    populations = data[:, 1:]
    above = np_.any(populations > 50000, axis=1)
    lowest = np_.argsort(populations, axis=0)[:2]
    hare_grad = np_.gradient(hares)
    return (
        year[np_.argmax(populations, axis=0)],
        above,
        year[above],
        year[lowest],
        hare_grad,
        np_.corrcoef(hare_grad, lynxes),
    )


def random_walk(np_, steps):
    """Worked example "diffusion using a random walk algorithm": ``cumsum`` of the steps along time, the mean
    squared distance over the stories, its square root."""
    t = np_.arange(steps.shape[1])
    positions = np_.cumsum(steps, axis=1)
    sq_distance = positions**2
    mean_sq_distance = np_.mean(sq_distance, axis=0)
    return np_.unique(steps), positions, mean_sq_distance, np_.sqrt(mean_sq_distance), np_.sqrt(t)


def broadcasting(np_):
    """ "Broadcasting": a tiled column plus a row, ``a[0] = 2`` broadcast into a row, ``a[:, np.newaxis] + b``."""
    a = np_.tile(np_.arange(0, 40, 10), (3, 1)).T
    b = np_.array([0, 1, 2])
    ones = np_.ones((4, 5))
    ones[0] = 2
    c = np_.arange(0, 40, 10)
    c = c[:, np.newaxis]
    return a, a + b, ones, c.shape, c + b


def city_distances(np_):
    """Worked example "distances between cities" along Route 66 (``mileposts``), and the grid distance
    ``np.sqrt(x**2 + y**2)`` (written with ``np.newaxis``, and with ``np.meshgrid``)."""
    return distances_of(np_, np_.array([0, 198, 303, 736, 871, 1175, 1475, 1544, 1913, 2448]))


def distances_of(np_, mileposts):
    """The distances between cities of given mileposts (their layout drawn by the test)."""
    distance_array = np_.abs(mileposts - mileposts[:, np.newaxis])
    x, y = np_.arange(5), np_.arange(5)[:, np.newaxis]
    gx, gy = np_.meshgrid(np_.arange(4), np_.arange(4))
    return distance_array, np_.sqrt(x**2 + y**2), gx, gy, np_.sqrt(gx**2 + gy**2)


def ogrid_distances(np_):
    """ "Broadcasting": ``x, y = np.ogrid[0:5, 0:5]`` (NumPy's index trick makes host arrays)."""
    x, y = np_.ogrid[0:5, 0:5]
    gx, gy = np_.mgrid[0:4, 0:4]
    return np_.sqrt(x**2 + y**2), gx, gy


def shape_flatten_reshape(np_):
    """ "Array shape manipulation": ``ravel`` (of ``a`` and ``a.T``), ``reshape`` (and ``-1``), ``np.newaxis``."""
    a = np_.array([[1, 2, 3], [4, 5, 6]])
    b = a.ravel()
    z = np_.array([1, 2, 3])
    return (
        a.ravel(),
        a.flatten(),
        a.T,
        a.T.ravel(),
        b.reshape((2, 3)),
        a.reshape((2, -1)),
        z[:, np.newaxis],
        z[np.newaxis, :],
    )


def shape_reshape_view(np_):
    """ "Reshaping": ``b = a.reshape((3, 2)); b[0, 0] = 99`` changes ``a`` (``reshape`` may return a view)."""
    a = np_.array([[1, 2, 3], [4, 5, 6]])
    b = a.reshape((3, 2))
    b[0, 0] = 99
    return a


def shape_transpose(np_):
    """ "Dimension shuffling": ``a.transpose(1, 2, 0)`` of ``arange(24).reshape(4, 3, 2)``, an element of each."""
    a = np_.arange(4 * 3 * 2).reshape(4, 3, 2)
    b = a.transpose(1, 2, 0)
    return a.shape, a[0, 2, 1], b, b.shape, b[2, 1, 0]


def shape_transpose_view(np_):
    """ "Dimension shuffling": ``b[2, 1, 0] = -1`` shows in ``a[0, 2, 1]`` (a transpose is a view)."""
    a = np_.arange(4 * 3 * 2).reshape(4, 3, 2)
    b = a.transpose(1, 2, 0)
    b[2, 1, 0] = -1
    return a[0, 2, 1]


def shape_resize(np_):
    """ "Resizing": ``a.resize((8,))`` grows ``np.arange(4)`` in place, padding with zeros."""
    a = np_.arange(4)
    a.resize((8,))
    return a


def shape_exercise(np_):
    """Exercise "shape manipulation" (its items): ``reshape`` of a flattened array, ``np.resize`` (repeats)."""
    a = np_.arange(6)
    return a.reshape((2, 3)).ravel(), a.reshape((3, 2)).T, np_.resize(a, (2, 5)), np_.resize(a, 4)


def sorting(np_):
    """ "Sorting data": ``np.sort`` along an axis, the in-place ``a.sort``, ``argsort`` and fancy indexing,
    ``argmax``/``argmin``."""
    return sorting_of(np_, np_.array([[4, 3, 5], [1, 2, 1]]))


def sorting_exercise(np_, a):
    """Exercise "Sorting": in-place and out-of-place sorts of several dtypes checked with ``np.array_equal`` and
    ``all``; ``ravel``, ``sort`` and ``reshape`` combined; ``sort`` with ``axis=None`` and ``axis=0``."""
    out = []
    for dt in (np.int8, np.int64, np.float32, np.float64, bool):
        b = a.astype(dt)
        s = np_.sort(b)
        b.sort()
        out += [s, np_.array_equal(s, b), (s == b).all()]
    flat = np_.sort(a.ravel()).reshape(a.shape)
    return out, flat, np_.array_equal(flat, np_.sort(a, axis=None).reshape(a.shape)), np_.sort(a, axis=0)


def sorting_of(np_, a):
    """Sorting on a given 2-D array (its layout drawn by the test)."""
    b = np_.sort(a, axis=1)
    a.sort(axis=1)
    c = np_.array([4, 3, 1, 2])
    j = np_.argsort(c)
    return b, a, j, c[j], np_.argmax(c), np_.argmin(c)


# ------------------------------------------------------------------------- 1.3.3 More elaborate arrays


def casting(np_):
    """ "Type casting": upcasting in mixed arithmetic, truncation on assignment, ``astype``, ``np.around`` (half to
    even) and ``around().astype(int)``."""
    x = np_.array([1, 2, 3]) + 1.5
    a = np_.array([1, 2, 3])
    a[0] = 1.9
    f = np_.array([1.7, 1.2, 1.6])
    h = np_.array([1.2, 1.5, 1.6, 2.5, 3.5, 4.5])
    return x, a, f.astype(int), np_.around(f), np_.around(h), np_.around(h).astype(int)


def sized_dtypes(np_):
    """ "Different data type sizes": int8 to uint64, float16 to float64, complex64/128, and an int8 overflow."""
    names = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    floats = ("float16", "float32", "float64", "complex64", "complex128")
    ints = [np_.array([1, 2, 3], dtype=t) for t in names]
    return ints, [np_.array([0.5, 1.0], dtype=t) for t in floats], np_.array([100, 27], dtype=np.int8) * 2


def masked_arrays(np_):
    """ "maskedarray": ``np.ma.array`` of an array with a mask, the sum of two (masks combined), ``np.ma.sqrt``."""
    x = np.ma.array(np_.array([1, 2, 3, 4]), mask=[0, 1, 0, 1])
    y = np.ma.array(np_.array([1, 2, 3, 4]), mask=[0, 1, 1, 1])
    s = np.ma.sqrt(np_.array([1.0, -1.0, 2.0, -2.0]))
    return (x + y).filled(-1), (x + y).mask, s.filled(-1.0), s.mask


def poly1d(np_):
    """ "Polynomials": ``np.poly1d([3, 2, -1])`` (its coefficients an array of the mesh), its value, order, roots."""
    p = np_.poly1d(np_.array([3, 2, -1]))
    return p(0), p(np_.array([0.0, 1.0, 2.0])), p.order, np_.sort(p.roots)


def polyfit(np_, noise):
    """ "Polynomials": ``np.polyfit`` of a noisy cosine, evaluated by ``np.poly1d`` and ``np.polyval``."""
    x = np_.linspace(0, 1, 20)
    y = np_.cos(x) + 0.3 * noise
    c = np_.polyfit(x, y, 3)
    p = np_.poly1d(c)
    t = np_.linspace(0, 1, 200)
    return c, p(t), np_.polyval(c, t)


def polynomial_classes(np_, noise):
    """ "More polynomials (with more bases)": ``np.polynomial.Polynomial`` (value, roots, degree) and
    ``np.polynomial.Chebyshev.fit`` evaluated at its points."""
    p = np.polynomial.Polynomial(np_.array([-1.0, 2.0, 3.0]))
    x = np_.linspace(-1, 1, 201)
    y = np_.cos(x) + 0.3 * noise
    t = np.polynomial.Chebyshev.fit(x, y, 9)
    return p(0), p.roots(), p.degree(), t(x)


# ------------------------------------------------------------------------- 1.3.5 Exercises


def array_manipulations(np_, r):
    """Exercise "Array manipulations": the 5x3 ``[[1, 6, 11], ...]`` and its 2nd and 4th rows; each row of
    ``arange(25).reshape(5, 5)`` divided by ``[1, 5, 10, 15, 20]``; the number of each row closest to 0.5."""
    a = np_.arange(1, 16).reshape(3, 5).T
    b = np_.arange(25).reshape(5, 5)
    d = np_.array([1.0, 5, 10, 15, 20])
    j = np_.argmin(np_.abs(r - 0.5), axis=1)
    return a, a[1::2], b / d[:, np.newaxis], j, r[np_.arange(r.shape[0]), j]


def picture(np_, face):
    """Exercise "Picture manipulation: framing a face" on a synthetic gray image: a band set to 255, a crop, the
    ``np.ogrid`` circle outside which the image is set to 0."""
    face = face.copy()
    face[4:8] = 255
    crop = face[5:-5, 5:-5].copy()  # (the lecture shows it before the circle; NumPy's slice is a view)
    sy, sx = face.shape
    y, x = np.ogrid[0:sy, 0:sx]
    centerx, centery = sx // 2, sy // 2
    mask = ((y - centery) ** 2 + (x - centerx) ** 2) > (min(sx, sy) // 2) ** 2
    face[mask] = 0
    return crop, face


def picture_diagonal(np_, face):
    """ "Framing a face": the diagonal written with index arrays (``np.arange`` for the book's ``range``)."""
    face = face.copy()
    n = min(face.shape)
    face[np_.arange(n), np_.arange(n)] = 255
    return face


def mandelbrot(np_, nx, ny):
    """Exercise "Mandelbrot set" (its solution): ``z = z**2 + c`` on the complex grid, ``abs(z) < threshold``
    (overflow to inf and nan where the orbit escapes)."""
    return mandelbrot_of(np_, np_.linspace(-2, 1, nx), np_.linspace(-1.5, 1.5, ny))


def mandelbrot_of(np_, x, y):
    """The Mandelbrot set on given grid axes (their layouts drawn by the test); the mask and its ``.T`` (the
    solution's ``plt.imshow(mask.T)``)."""
    c = x[:, np.newaxis] + 1j * y[np.newaxis, :]
    z = c
    for _ in range(30):
        z = z**2 + c
    mask = abs(z) < 50
    return mask, mask.T


def markov_power(np_, p_raw, p0_raw):
    """Exercise "Markov chain": a row-stochastic ``P``, 50 steps ``p = P.T.dot(p)``."""
    transition = p_raw  # (the solution's in-place normalization: P /= P.sum(axis=1)[:, np.newaxis])
    transition /= transition.sum(axis=1)[:, np.newaxis]
    p = p0_raw
    p /= p.sum()
    for _ in range(50):
        p = transition.T.dot(p)
    return transition, p, np_.allclose(transition.sum(axis=1), 1)


def markov_eig(np_, p_raw, p0_raw):
    """Exercise "Markov chain": the stationary distribution, the eigenvector of ``P.T`` of eigenvalue 1
    (``np.linalg.eig``), against the 50 steps."""
    transition = p_raw / p_raw.sum(axis=1)[:, np.newaxis]
    p = p0_raw / p0_raw.sum()
    for _ in range(50):
        p = transition.T.dot(p)
    w, v = np_.linalg.eig(transition.T)
    j_stationary = np_.argmin(abs(w - 1.0))
    p_stationary = v[:, j_stationary].real
    p_stationary /= p_stationary.sum()
    return p_stationary, all(abs(p - p_stationary) < 1e-5)


def crude_integral_of(np_, a, b, c):
    """The crude integral on given 1-D sample points (their layouts drawn by the test), broadcast with
    ``np.newaxis``."""
    samples = a[:, np.newaxis, np.newaxis] ** b[np.newaxis, :, np.newaxis] - c[np.newaxis, np.newaxis, :]
    return samples, samples.mean(), samples.mean(axis=(0, 2))


def crude_integral(np_, na, nb, nc):
    """Exercise "Crude integral approximations": ``f(a, b, c) = a**b - c`` on a 24x12x6 grid of [0, 1]^3 (broadcast
    ``linspace`` columns), its mean against ``ln(2) - 1/2``."""
    a = np_.linspace(0, 1, na)[:, np.newaxis, np.newaxis]
    b = np_.linspace(0, 1, nb)[np.newaxis, :, np.newaxis]
    c = np_.linspace(0, 1, nc)[np.newaxis, np.newaxis, :]
    samples = a**b - c
    integral = samples.mean()
    return samples, integral, abs(integral - (np.log(2) - 0.5)) < 0.05
