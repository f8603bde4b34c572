"""The cases of test_pdsh.py: the NumPy code of chapter 2 ("Introduction to NumPy", sections 02.01-02.09) of Jake
VanderPlas's "Python Data Science Handbook", each example written as a function of a NumPy-like module ``np_`` and
its input arrays.

Each returns what the example prints (an array, a scalar, a shape, a dtype or a tuple of them). The book's random
arrays (``np.random.seed``/``RandomState``) and its data files (Seattle's 2014 rainfall, the presidents' heights)
are synthetic seeded inputs of the same shapes; plots, ``%timeit`` and prints are left out. Functions whose name
ends in ``_odd`` or that take a size run the same example on odd sizes (uneven blocks on the 2x2 mesh).
"""

from __future__ import annotations

import numpy as np

rng = np.random.default_rng(2016)

X1 = rng.integers(0, 10, 6)  # 02.02: np.random.randint(10, size=6) ...
X2 = rng.integers(0, 10, (3, 4))
X3 = rng.integers(0, 10, (3, 4, 5))
X1_ODD = rng.integers(0, 10, 7)
X2_ODD = rng.integers(0, 10, (5, 7))
X3_ODD = rng.integers(0, 10, (3, 5, 7))
L = rng.random(100)  # 02.04: np.random.random(100)
BIG = rng.random(10_001)  # 02.04: np.random.rand(1000000), smaller
M34 = rng.random((3, 4))
M57 = rng.random((5, 7))
HEIGHTS = np.round(rng.normal(180, 7, 42)).astype(np.int64)  # 02.04: the presidents' heights (cm)
HEIGHTS_ODD = np.round(rng.normal(180, 7, 45)).astype(np.int64)
NANS = np.where(rng.random((5, 6)) < 0.2, np.nan, rng.normal(0, 1, (5, 6)))
X103 = rng.random((10, 3))  # 02.05: np.random.random((10, 3))
X93 = rng.random((9, 3))
#: 02.06: Seattle's 2014 daily precipitation (tenths of mm): dry days, and showers of a few to a few hundred
RAINFALL = np.where(rng.random(365) < 0.55, 0, np.round(rng.exponential(60, 365))).astype(np.int64)
RAND_3x4 = rng.integers(0, 10, (3, 4))  # 02.06: rng.randint(10, size=(3, 4))
RAND_5x7 = rng.integers(0, 10, (5, 7))
RAND10 = rng.integers(0, 100, 10)  # 02.07: rand.randint(100, size=10)
GAUSS2D = rng.multivariate_normal([0, 0], [[1, 2], [2, 5]], 100)  # 02.07: rand.multivariate_normal(mean, cov, 100)
GAUSS2D_ODD = rng.multivariate_normal([0, 0], [[1, 2], [2, 5]], 101)
PICK20 = rng.choice(100, 20, replace=False)  # 02.07: np.random.choice(X.shape[0], 20, replace=False)
RANDN100 = rng.standard_normal(100)  # 02.07: np.random.randn(100)
RANDN101 = rng.standard_normal(101)
SORT_4x6 = rng.integers(0, 10, (4, 6))  # 02.08: rand.randint(0, 10, (4, 6))
SORT_5x7 = rng.integers(0, 10, (5, 7))
POINTS10 = rng.random((10, 2))  # 02.08: rand.rand(10, 2)
POINTS11 = rng.random((11, 2))


# ---------------------------------------------------------------- 02.01 Understanding data types in Python


def types_from_lists(np_):
    """ "Creating arrays from Python lists": integers, the upcast to float, ``dtype=``, nested lists of ranges."""
    return (
        np_.array([1, 4, 2, 5, 3]),
        np_.array([3.14, 4, 2, 3]),
        np_.array([1, 2, 3, 4], dtype="float32"),
        np_.array([range(i, i + 3) for i in [2, 4, 6]]),
    )


def types_from_scratch(np_):
    """ "Creating arrays from scratch" (the random ones are inputs elsewhere) and "NumPy standard data types"."""
    e = np_.empty(3)
    return (
        np_.zeros(10, dtype=int),
        np_.ones((3, 5), dtype=float),
        np_.full((3, 5), 3.14),
        np_.arange(0, 20, 2),
        np_.linspace(0, 1, 5),
        np_.eye(3),
        e.shape,
        e.dtype,
        np_.zeros(10, dtype="int16"),
        np_.zeros(10, dtype=np.int16),
    )


# ---------------------------------------------------------------- 02.02 The basics of NumPy arrays


def basics_attributes(np_, x1, x2, x3):
    """ "NumPy array attributes": ndim, shape, size, dtype (and the dtype as printed)."""
    return [(x.ndim, x.shape, x.size, x.dtype, str(x.dtype)) for x in (x1, x2, x3)]


def basics_attributes_bytes(np_, x1, x2, x3):
    """ "NumPy array attributes": ``itemsize`` (bytes of an element) and ``nbytes`` (of the array)."""
    return [(x.itemsize, x.nbytes) for x in (x1, x2, x3)]


def basics_print(np_):
    """The book prints its arrays: ``print(x)`` shows ``[1 2 3]``."""
    return str(np_.array([1, 2, 3]))


def basics_indexing(np_, x1, x2):
    """ "Array indexing": single elements, negative indices, writes (a float written into an integer array is
    truncated)."""
    read = (x1[0], x1[4], x1[-1], x1[-2], x2[0, 0], x2[2, 0], x2[2, -1])
    x2[0, 0] = 12
    x1[0] = 3.14159
    return read, x2, x1


def basics_slicing_1d(np_, n):
    """ "One-dimensional subarrays"."""
    x = np_.arange(n)
    return x[:5], x[5:], x[4:7], x[::2], x[1::2], x[::-1], x[5::-2]


def basics_slicing_2d(np_, x2):
    """ "Multidimensional subarrays" and "Accessing array rows and columns"."""
    return x2[:2, :3], x2[:3, ::2], x2[::-1, ::-1], x2[:, 0], x2[0, :], x2[0]


def basics_views(np_, x2):
    """ "Subarrays as no-copy views": a write into ``x2[:2, :2]`` shows in ``x2``."""
    x2_sub = x2[:2, :2]
    x2_sub[0, 0] = 99
    return x2_sub, x2


def basics_copies(np_, x2):
    """ "Creating copies of arrays": ``.copy()`` of a subarray; its write does not show in ``x2``."""
    x2_sub_copy = x2[:2, :2].copy()
    x2_sub_copy[0, 0] = 42
    return x2_sub_copy, x2


def basics_reshape(np_):
    """ "Reshaping of arrays": ``reshape`` and ``np.newaxis``."""
    grid = np_.arange(1, 10).reshape((3, 3))
    x = np_.array([1, 2, 3])
    return grid, x.reshape((1, 3)), x[np.newaxis, :], x.reshape((3, 1)), x[:, np.newaxis]


def basics_concatenate(np_):
    """ "Concatenation of arrays": ``np.concatenate`` of 1-d and 2-d arrays on either axis, ``vstack``, ``hstack``,
    ``dstack``."""
    x, y, z = np_.array([1, 2, 3]), np_.array([3, 2, 1]), [99, 99, 99]
    grid = np_.array([[1, 2, 3], [4, 5, 6]])
    return (
        np_.concatenate([x, y]),
        np_.concatenate([x, y, np_.array(z)]),
        np_.concatenate([grid, grid]),
        np_.concatenate([grid, grid], axis=1),
        np_.vstack([x, grid]),
        np_.hstack([grid, np_.array([[99], [99]])]),
        np_.dstack([grid, grid]),
    )


def basics_concatenate_list(np_):
    """ "Concatenation of arrays" as written: ``z = [99, 99, 99]`` is a Python list beside two arrays."""
    x, y, z = np_.array([1, 2, 3]), np_.array([3, 2, 1]), [99, 99, 99]
    return np_.concatenate([x, y, z])


def basics_split(np_, n):
    """ "Splitting of arrays": ``np.split`` at indices, ``vsplit``, ``hsplit``, ``dsplit``."""
    x = np_.array([1, 2, 3, 99, 99, 3, 2, 1])
    x1, x2, x3 = np_.split(x, [3, 5])
    grid = np_.arange(n * n).reshape((n, n))
    upper, lower = np_.vsplit(grid, [2])
    left, right = np_.hsplit(grid, [2])
    cube = np_.arange(2 * n * n).reshape((2, n, n))
    return x1, x2, x3, upper, lower, left, right, np_.dsplit(cube, [1, 3])


# ------------------------------------------------------ 02.03 Computation on NumPy arrays: universal functions


def ufunc_reciprocals(np_, values):
    """ "The slowness of loops": ``compute_reciprocals`` (a Python loop writing an ``np.empty``), then the ufunc."""
    output = np_.empty(len(values))
    for i in range(len(values)):
        output[i] = 1.0 / values[i]
    return output, 1.0 / values


def ufunc_intro(np_, n):
    """ "Introducing UFuncs": arrays with arrays, ``2 ** x`` of a 2-d array."""
    x = np_.arange(n * n).reshape((n, n))
    return np_.arange(5) / np_.arange(1, 6), 2**x


def ufunc_arithmetic(np_, n):
    """ "Array arithmetic": the operators, ``-(0.5*x + 1) ** 2``, ``np.add``."""
    x = np_.arange(n)
    return (x + 5, x - 5, x * 2, x / 2, x // 2, -x, x**2, x % 2, -((0.5 * x + 1) ** 2), np_.add(x, 2))


def ufunc_absolute(np_):
    """ "Absolute value": ``abs``, ``np.absolute``, ``np.abs``, of complex numbers the magnitude."""
    x = np_.array([-2, -1, 0, 1, 2])
    z = np_.array([3 - 4j, 4 - 3j, 2 + 0j, 0 + 1j])
    return abs(x), np_.absolute(x), np_.abs(x), np_.abs(z)


def ufunc_trigonometric(np_):
    """ "Trigonometric functions": of ``linspace(0, pi, 3)``, the inverse functions of ``[-1, 0, 1]``."""
    theta = np_.linspace(0, np.pi, 3)
    x = np_.array([-1, 0, 1])
    return (np_.sin(theta), np_.cos(theta), np_.tan(theta), np_.arcsin(x), np_.arccos(x), np_.arctan(x))


def ufunc_exponents(np_):
    """ "Exponents and logarithms", with ``expm1``/``log1p`` of small numbers."""
    x = np_.array([1, 2, 3])
    y = np_.array([1, 2, 4, 10])
    small = np_.array([0, 0.001, 0.01, 0.1])
    return (
        np_.exp(x),
        np_.exp2(x),
        np_.power(3, x),
        np_.log(y),
        np_.log2(y),
        np_.log10(y),
        np_.expm1(small),
        np_.log1p(small),
    )


def ufunc_out(np_):
    """ "Specifying output": ``np.multiply(x, 10, out=y)``."""
    x = np_.arange(5)
    y = np_.empty(5)
    np_.multiply(x, 10, out=y)
    return y


def ufunc_out_view(np_):
    """ "Specifying output": ``np.power(2, x, out=y[::2])`` writes every other element of ``y``."""
    x = np_.arange(5)
    y = np_.zeros(10)
    np_.power(2, x, out=y[::2])
    return y


def ufunc_aggregates(np_, n):
    """ "Aggregates": ``reduce``, ``accumulate`` of ``np.add``/``np.multiply``."""
    x = np_.arange(1, n + 1)
    reduced = (np_.add.reduce(x), np_.multiply.reduce(x), np_.add.accumulate(x), np_.multiply.accumulate(x))
    return reduced, (np_.sum(x), np_.prod(x), np_.cumsum(x), np_.cumprod(x))  # (the functions the book names)


def ufunc_outer(np_, n):
    """ "Outer products": ``np.multiply.outer``."""
    x = np_.arange(1, n + 1)
    return np_.multiply.outer(x, x)


# ------------------------------------------------------ 02.04 Aggregations: min, max, and everything in between


def agg_sum(np_, big):
    """ "Summing the values in an array" (Python's ``sum`` of a small array, ``np.sum``), "Minimum and maximum"
    (Python's ``min``/``max`` of a small one, the functions and the methods)."""
    small = big[:21]
    return (
        sum(small),
        np_.sum(small),
        np_.sum(big),
        min(small),
        max(small),
        np_.min(big),
        np_.max(big),
        big.min(),
        big.max(),
        big.sum(),
    )


def agg_multidimensional(np_, m):
    """ "Multidimensional aggregates": the whole array and along each axis."""
    return m.sum(), m.min(axis=0), m.max(axis=1)


def agg_table(np_, m):
    """ "Other aggregation functions": the table's functions (their NaN-safe versions: ``agg_nan``)."""
    return (
        np_.sum(m),
        np_.prod(m),
        np_.mean(m),
        np_.std(m),
        np_.var(m),
        np_.min(m),
        np_.max(m),
        np_.argmin(m),
        np_.argmax(m),
        np_.median(m),
        np_.percentile(m, 25),
        np_.any(m > 0.9),
        np_.all(m > 0.01),
        np_.mean(m, axis=1),
        np_.median(m, axis=0),
        np_.argmax(m, axis=1),
        np_.percentile(m, [10, 90], axis=1),
    )


def agg_nan(np_, m):
    """ "Other aggregation functions", the NaN-safe column of the table."""
    return (
        np_.nansum(m),
        np_.nanprod(m),
        np_.nanmean(m),
        np_.nanstd(m),
        np_.nanvar(m),
        np_.nanmin(m),
        np_.nanmax(m),
        np_.nanargmin(m),
        np_.nanargmax(m),
        np_.nanmedian(m),
        np_.nanpercentile(m, 25),
        np_.nansum(m, axis=0),
        np_.nanmean(m, axis=1),
        np_.nanmax(m, axis=0),
        np_.nanargmin(m, axis=1),
        np_.nanmedian(m, axis=1),
        np_.nanpercentile(m, [25, 75], axis=0),
    )


def agg_presidents(np_, heights):
    """ "Example: What is the average height of US presidents?"."""
    return (
        heights.mean(),
        heights.std(),
        heights.min(),
        heights.max(),
        np_.percentile(heights, 25),
        np_.median(heights),
        np_.percentile(heights, 75),
    )


# ---------------------------------------------------------------- 02.05 Computation on arrays: broadcasting


def broadcast_intro(np_):
    """ "Introducing broadcasting": a scalar, a 1-d array on a 2-d one, two 1-d arrays to a 2-d one."""
    a = np_.array([0, 1, 2])
    b = np_.array([5, 5, 5])
    m = np_.ones((3, 3))
    c = np_.arange(3)[:, np.newaxis]
    return a + b, a + 5, m + a, np_.arange(3) + c


def broadcast_rules(np_):
    """ "Rules of broadcasting", examples 1-3: the shapes broadcast, example 3's ValueError and its fix."""
    m = np_.ones((2, 3))
    a = np_.arange(3)
    ex1 = m + a
    ex2 = np_.arange(3).reshape((3, 1)) + np_.arange(3)
    m3 = np_.ones((3, 2))
    try:
        m3 + a
        ex3 = "no error"
    except ValueError:
        ex3 = "ValueError"
    return ex1, ex2, ex3, m3 + a[:, np.newaxis], np_.logaddexp(m3, a[:, np.newaxis])


def broadcast_centering(np_, x):
    """ "Centering an array": the column means, the centered array, its means (near zero)."""
    xmean = x.mean(0)
    x_centered = x - xmean
    return xmean, x_centered, x_centered.mean(0)


def broadcast_plotting(np_, n):
    """ "Plotting a two-dimensional function": ``z = sin(x)**10 + cos(10 + y*x) * cos(x)`` on a grid."""
    x = np_.linspace(0, 5, n)
    y = np_.linspace(0, 5, n)[:, np.newaxis]
    return np_.sin(x) ** 10 + np_.cos(10 + y * x) * np_.cos(x)


# ---------------------------------------------------------------- 02.06 Comparisons, masks, and Boolean logic


def compare_operators(np_):
    """ "Comparison operators as ufuncs": on a 1-d array, an expression of two arrays."""
    x = np_.array([1, 2, 3, 4, 5])
    return x < 3, x > 3, x <= 3, x >= 3, x != 3, x == 3, (2 * x) == (x**2)


def compare_counting(np_, x):
    """ "Working with Boolean arrays": counting entries, ``np.sum`` along rows, ``np.any``/``np.all``."""
    return (
        x < 6,
        np_.count_nonzero(x < 6),
        np_.sum(x < 6),
        np_.sum(x < 6, axis=1),
        np_.any(x > 8),
        np_.any(x < 0),
        np_.all(x < 10),
        np_.all(x == 6),
        np_.all(x < 8, axis=1),
        np_.count_nonzero(x < 6, axis=0),
    )


def compare_rainfall(np_, rainfall):
    """ "Example: Counting rainy days" and "Boolean operators": the inches, the counts of the days by conditions."""
    inches = rainfall / 254
    return (
        inches,
        np_.sum((inches > 0.5) & (inches < 1)),
        np_.sum(~((inches <= 0.5) | (inches >= 1))),
        np_.sum(inches == 0),
        np_.sum(inches != 0),
        np_.sum(inches > 0.5),
        np_.sum((inches > 0) & (inches < 0.2)),
    )


def compare_masks(np_, x, rainfall):
    """ "Boolean arrays as masks": ``x[x < 5]``; the medians and the maximum of rainy days and summer days."""
    inches = rainfall / 254
    rainy = inches > 0
    days = np_.arange(365)
    summer = (days - 172 < 90) & (days - 172 > 0)
    return (
        x[x < 5],
        np_.median(inches[rainy]),
        np_.median(inches[summer]),
        np_.max(inches[summer]),
        np_.median(inches[rainy & ~summer]),
    )


def compare_and_or(np_):
    """ "Aside: Using the keywords and/or versus the operators &/|": ``|`` and ``&`` of Boolean arrays, the
    ValueError of ``or``/``and`` of arrays of more than one element."""
    a = np_.array([1, 0, 1, 0, 1, 0], dtype=bool)
    b = np_.array([1, 1, 1, 0, 1, 1], dtype=bool)
    x = np_.arange(10)
    errors = []
    for expression in (lambda: a or b, lambda: (x > 4) and (x < 8)):
        try:
            expression()
            errors.append("no error")
        except ValueError:
            errors.append("ValueError")
    return a | b, (x > 4) & (x < 8), errors


# ---------------------------------------------------------------- 02.07 Fancy indexing


def fancy_explore(np_, x):
    """ "Exploring fancy indexing": a list of elements, a list index, a 2-d index array."""
    ind = [3, 7, 4]
    return [x[3], x[7], x[2]], x[ind], x[np_.array([[3, 7], [4, 5]])]


def fancy_2d(np_):
    """Fancy indexing of a 2-d array: pairs of indices, broadcast index arrays, their product."""
    x = np_.arange(12).reshape((3, 4))
    row = np_.array([0, 1, 2])
    col = np_.array([2, 1, 3])
    return x[row, col], x[row[:, np.newaxis], col], row[:, np.newaxis] * col


def fancy_combined(np_):
    """ "Combined indexing": with an integer, a slice, a Boolean mask."""
    x = np_.arange(12).reshape((3, 4))
    row = np_.array([0, 1, 2])
    mask = np_.array([1, 0, 1, 0], dtype=bool)
    return x[2, [2, 0, 1]], x[1:, [2, 0, 1]], x[row[:, np.newaxis], mask]


def fancy_random_points(np_, x):
    """ "Example: Selecting random points": 20 rows of a (100, 2) sample by the host indices of
    ``np.random.choice(X.shape[0], 20, replace=False)`` (a NumPy array indexing a distributed one)."""
    indices = PICK20
    selection = x[indices]
    return x.shape, selection, selection.shape, x[indices.tolist()]


def fancy_modify(np_):
    """ "Modifying values with fancy indexing": assignment and ``-=`` by an index array, a repeated index (the last
    write wins), ``x[i] += 1`` with repeats (each once), ``np.add.at`` (each repeat counted)."""
    x = np_.arange(10)
    i = np_.array([2, 1, 8, 4])
    x[i] = 99
    first = x.copy()
    x[i] -= 10
    y = np_.zeros(10)
    y[[0, 0]] = [4, 6]
    z = np_.zeros(10)
    j = [2, 3, 3, 4, 4, 4]
    z[j] += 1
    w = np_.zeros(10)
    np_.add.at(w, j, 1)
    return first, x, y, z, w


def fancy_binning(np_, x):
    """ "Example: Binning data": the histogram by hand (``np.searchsorted`` and ``np.add.at``) and by
    ``np.histogram``."""
    bins = np_.linspace(-5, 5, 20)
    counts = np_.zeros_like(bins)
    i = np_.searchsorted(bins, x)
    np_.add.at(counts, i, 1)
    hist, edges = np_.histogram(x, bins)
    return i, counts, hist, edges


# ---------------------------------------------------------------- 02.08 Sorting arrays


def selection_sort(np_, x):
    """ "Sorting arrays": the book's selection sort (a Python loop, swaps by scalar indices)."""
    for i in range(len(x)):
        swap = i + np_.argmin(x[i:])
        (x[i], x[swap]) = (x[swap], x[i])
    return x


def sort_functions(np_):
    """ "Fast sorting in NumPy": ``np.sort``, ``x.sort()`` in place, ``np.argsort`` and the fancy index of it."""
    x = np_.array([2, 1, 4, 3, 5])
    s = np_.sort(x)
    i = np_.argsort(x)
    ordered = x[i]
    x.sort()
    return s, i, ordered, x


def sort_axes(np_, x):
    """ "Sorting along rows or columns"."""
    return np_.sort(x, axis=0), np_.sort(x, axis=1)


def _partitioned(np_, part, kth, axis=-1):
    """What a partition promises, whatever order NumPy's introselect leaves: the k smallest (sorted), the kth, the
    rest (sorted)."""
    part = np_.moveaxis(part, axis, -1)
    return np_.sort(part[..., :kth], axis=-1), part[..., kth], np_.sort(part[..., kth + 1 :], axis=-1)


def sort_partition(np_, x2):
    """ "Partial sorts: partitioning": ``np.partition`` of a 1-d array and of rows (compared by what a partition
    promises: the order within each side is unspecified)."""
    x = np_.array([7, 2, 3, 1, 6, 5, 4])
    return (
        _partitioned(np_, np_.partition(x, 3), 3),
        _partitioned(np_, np_.partition(x2, 2, axis=1), 2),
        _partitioned(np_, np_.partition(x2, 1, axis=0), 1, axis=0),
    )


def sort_knn(np_, x, k):
    """ "Example: k-nearest neighbors": the squared distances by broadcasting (step by step and at once), the
    diagonal, ``argsort`` of the rows, ``argpartition`` (its K+1 nearest as a set, sorted: their order is
    unspecified)."""
    differences = x[:, np.newaxis, :] - x[np.newaxis, :, :]
    sq_differences = differences**2
    dist_sq_steps = sq_differences.sum(-1)
    dist_sq = np_.sum((x[:, np.newaxis, :] - x[np.newaxis, :, :]) ** 2, axis=-1)
    nearest = np_.argsort(dist_sq, axis=1)
    nearest_partition = np_.argpartition(dist_sq, k + 1, axis=1)
    near_sets = np_.sort(nearest_partition[:, : k + 1], axis=1)
    # the plot's loop: a segment from each point to its K nearest (``plt.plot(*zip(X[j], X[i]))``), as numbers
    segments = sorted(
        tuple(float(v) for pair in zip(x[j], x[i]) for v in pair)
        for i in range(x.shape[0])
        for j in nearest_partition[i, : k + 1]
    )
    return (
        differences.shape,
        sq_differences.shape,
        dist_sq_steps,
        dist_sq,
        dist_sq.diagonal(),
        nearest,
        near_sets,
        np_.take_along_axis(dist_sq, nearest_partition, axis=1)[:, k + 1],
        segments,
    )


# ---------------------------------------------------------------- 02.09 Structured data


STRUCT = {"names": ("name", "age", "weight"), "formats": ("U10", "i4", "f8")}
NAMES = ["Alice", "Bob", "Cathy", "Doug"]
AGES = [25, 45, 37, 19]
WEIGHTS = [55.0, 85.5, 68.0, 61.5]


def structured(np_):
    """ "Creating structured arrays": ``np.zeros`` of a compound dtype, its fields written and read."""
    data = np_.zeros(4, dtype=STRUCT)
    data["name"], data["age"], data["weight"] = NAMES, AGES, WEIGHTS
    return data["age"], data[data["age"] < 30]["weight"]


def structured_columns(np_):
    """Section 02.09's questions of the data asked of one array per field (the book's pre-structured start): the
    ages, the weights of those under 30, the names' order by age, the mean weight of those over 30."""
    age = np_.array(AGES, dtype="i4")
    weight = np_.array(WEIGHTS)
    return age, weight[age < 30], np_.argsort(age), np_.mean(weight[age > 30])
