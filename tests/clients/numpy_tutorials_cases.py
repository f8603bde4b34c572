"""The cases of test_numpy_tutorials.py: the array code of the official NumPy tutorials (numpy/numpy-tutorials,
``content/*.md``), each section written as a function of a NumPy-like module ``np_`` and its input arrays.

Each returns what the section computes (an array, a scalar or a tuple of them). Downloads, file reading,
plotting and prints are left out; the inputs are small synthetic arrays of the tutorials' shapes and dtypes
(a few rows of the tutorials' own CSV files where they are short enough to write here).
"""

from __future__ import annotations

import numpy as np

rng = np.random.default_rng(2024)

# ---------------------------------------------------------------- tutorial-air-quality-analysis.md
#: "Importing the dataset": hourly pollutant concentrations (PM2.5, PM10, NO2, NH3, SO2, CO, O3), the
#: CSV's first row and then 47 synthetic hours around its values
AIR = np.vstack(
    [
        [103.26, 305.46, 94.71, 31.43, 30.16, 3.0, 18.06],
        np.round(np.array([103.0, 305.0, 94.0, 31.0, 30.0, 3.0, 18.0]) * rng.uniform(0.3, 1.7, (47, 7)), 2),
    ]
)
AQI = np.array([0, 51, 101, 201, 301, 401, 501])
BREAKPOINTS = {
    "PM2.5": np.array([0, 31, 61, 91, 121, 251]),
    "PM10": np.array([0, 51, 101, 251, 351, 431]),
    "NO2": np.array([0, 41, 81, 181, 281, 401]),
    "NH3": np.array([0, 201, 401, 801, 1201, 1801]),
    "SO2": np.array([0, 41, 81, 381, 801, 1601]),
    "CO": np.array([0, 1.1, 2.1, 10.1, 17.1, 35]),
    "O3": np.array([0, 51, 101, 169, 209, 749]),
}
POLLUTANTS = list(BREAKPOINTS)


def moving_mean(np_, a, n):
    """Section "Calculating the Air Quality Index": the tutorial's moving mean (a cumulative sum and a slice write)."""
    ret = np_.cumsum(a, dtype=float, axis=0)
    ret[n:] = ret[n:] - ret[:-n]
    return ret[n - 1 :] / n


def air_averages(np_, data):
    """Section "Importing the dataset" and "Calculating the Air Quality Index": the column split, the finiteness check,
    the 24-hour and 8-hour moving means and their concatenation."""
    pollutants_a, pollutants_b = data[:, 0:5], data[:, 5:]
    finite = np_.all(np_.isfinite(data))
    a24 = moving_mean(np_, pollutants_a, 24)
    b8 = moving_mean(np_, pollutants_b, 8)[-(a24.shape[0]) :]
    return finite, a24, b8, np_.concatenate((a24, b8), axis=1)


def compute_indices(pol, con):
    """The tutorial's scalar sub-index (run by ``np.vectorize``), as written there."""
    bp = BREAKPOINTS[pol]
    inc = 0.1 if pol == "CO" else 1
    for k in range(5):
        if bp[k] <= con < bp[k + 1]:
            return ((AQI[k + 1] - inc - AQI[k]) / (bp[k + 1] - inc - bp[k])) * (con - bp[k]) + AQI[k]
    bl, bh = bp[5], bp[5] + bp[4] - 2 * inc
    return ((AQI[6] - AQI[5]) / (bh - bl)) * (con - bl) + AQI[5]


def segment_tables(pol):
    """The breakpoints of ``compute_indices`` as tables over its six segments: (Bl, Bh, Il, Ih)."""
    bp, inc = BREAKPOINTS[pol], (0.1 if pol == "CO" else 1)
    bh = np.append(bp[1:] - inc, bp[5] + bp[4] - 2 * inc)
    ih = np.append(AQI[1:6] - inc, AQI[6])
    return bp.astype(float), bh, AQI[:6].astype(float), ih.astype(float)


def sub_index(np_, pol, con):
    """``compute_indices`` without a Python function per element: the segment of each concentration by
    ``np.searchsorted`` and its line by ``np.take`` (what ``np.vectorize`` computes, on the mesh)."""
    bl, bh, il, ih = (np_.array(t) for t in segment_tables(pol))
    k = np_.searchsorted(bl, con, side="right") - 1
    lo, hi, i_lo, i_hi = (np_.take(t, k) for t in (bl, bh, il, ih))
    return ((i_hi - i_lo) / (hi - lo)) * (con - lo) + i_lo


def air_quality_index(np_, pollutants):
    """Section "Calculating the Air Quality Index": the sub-indices stacked (``axis=1``) and their maximum."""
    sub = np_.stack([sub_index(np_, p, pollutants[..., k]) for k, p in enumerate(POLLUTANTS)], axis=1)
    return sub, np_.max(sub, axis=1)


def t_test(np_, x, y):
    """Section "Paired Student's t-test on the AQIs": the tutorial's ``t_test``."""
    diff = y - x
    var = np_.var(diff, ddof=1)
    num = np_.mean(diff)
    denom = np_.sqrt(var / len(x))
    return np_.divide(num, denom)


def air_lockdown(np_, aqi, picks):
    """Section "Paired Student's t-test on the AQIs": before/after the cut by ``np.where`` (hour numbers for the CSV's
    dates: shardarray has no datetime64), a sample of each (fixed positions: the tutorial's ``rng.choice`` of
    values) and the t statistic."""
    hours = np_.arange(aqi.shape[0])
    after = aqi[np_.where(hours >= 16)]
    before = aqi[np_.where(hours <= 12)][-(after.shape[0] // 2) :]
    b, a = before[picks % before.shape[0]], after[picks % after.shape[0]]
    return after, before, t_test(np_, b, a)


# ---------------------------------------------------------------- mooreslaw-tutorial.md
#: (MOS transistor count, year of introduction): every 8th row of content/transistor_data.csv and its 2017 rows
TRANSISTORS = np.array(
    [[2250, 1971], [4000, 1975], [29000, 1978], [134000, 1982], [27000, 1986], [600000, 1989], [900000, 1992],
     [5500000, 1995], [9500000, 1999], [191000000, 2001], [112000000, 2004], [362000000, 2006], [250000000, 2007],
     [904000000, 2009], [1870000000, 2011], [1400000000, 2012], [5000000000, 2013], [1900000000, 2015],
     [3200000000, 2016], [4800000000, 2017], [5300000000, 2017], [5300000000, 2017], [4300000000, 2017],
     [4800000000, 2017], [4800000000, 2017], [6100000000, 2017], [9700000000, 2017], [5500000000, 2017],
     [7000000000, 2017], [8000000000, 2017], [250000000, 2017], [5450000000, 2017], [4300000000, 2017],
     [18000000000, 2017], [19200000000, 2017]],
    dtype=float,
)  # fmt: skip
A_M = np.log(2) / 2
B_M = np.log(2250) - A_M * 1971


def moores_law(np_, year):
    """Section "Building a Moore's law as an exponential function"."""
    return np_.exp(B_M) * np_.exp(A_M * year)


def moore_regression(np_, data):
    """Section "Loading historical manufacturing data" and "Calculating the historical growth curve": the columns,
    ``log``, the degree-1 least squares fit (the tutorial's ``Polynomial.fit`` and ``convert``, here
    ``np.linalg.lstsq`` on ``[1, year]``, what ``convert()`` gives) and the predictions."""
    year, count = data[:, 1], data[:, 0]
    yi = np_.log(count)
    design = np_.stack([np_.ones_like(year), year], axis=1)
    (b, a), *_ = np_.linalg.lstsq(design, yi, rcond=None)
    predicted = np_.exp(b) * np_.exp(a * year)
    return yi, b, a, np_.exp(2 * a), predicted, moores_law(np_, year)


def moore_2017(np_, data):
    """Section "Calculating the historical growth curve": the 2017 chips (a boolean mask), their max, min and mean, the
    2017 ones of the plot, and the table of "Sharing your results as csv" (``np.block`` of columns)."""
    year, count = data[:, 1], data[:, 0]
    c2017 = count[year == 2017]
    ones = 2017 * np_.ones(np_.sum(year == 2017))
    table = np_.block([year[:, np.newaxis], count[:, np.newaxis], moores_law(np_, year)[:, np.newaxis]])
    return c2017, c2017.max(), c2017.min(), c2017.mean(), ones, table


# ---------------------------------------------------------------- tutorial-plotting-fractals.md
def square_minus_one(np_, z):
    return np_.square(z) - 1


def fractal_mesh(np_, n, lo=-2.0, hi=2.0):
    """The tutorials' complex plane: ``np.meshgrid`` of two ``np.linspace`` and ``x + 1j * y``."""
    x, y = np_.meshgrid(np_.linspace(lo, hi, n), np_.linspace(lo, hi, n))
    return x + (1j * y)


def fractal_iterations(np_, selected):
    """Section "Warmup: Iterative functions": one and two iterations on a mesh, and nine iterations of three points
    (rows written in place; the ``.T``, ``.real``, ``.imag`` the plot reads)."""
    plane = fractal_mesh(np_, 20, -10.0, 10.0)
    one, two = np_.abs(square_minus_one(np_, plane)), np_.abs(square_minus_one(np_, square_minus_one(np_, plane)))
    outputs = np_.zeros((10, selected.shape[0]), dtype=complex)
    outputs[0] = selected
    for i in range(9):
        outputs[i + 1] = square_minus_one(np_, outputs[i])
    return one, two, outputs.T.real, outputs.T.imag


def divergence_rate(np_, plane, f, num_iter=10, radius=2):
    """Section "Warmup" / "Julia set" / "Generalizing the Julia set": the tutorial's ``general_julia`` (``c`` folded
    into ``f``): boolean masks, a masked increment and a masked write."""
    z = plane.copy()
    diverge_len = np_.zeros(z.shape)
    for _ in range(num_iter):
        conv_mask = np_.abs(z) < radius
        z[conv_mask] = f(z[conv_mask])
        diverge_len[conv_mask] += 1
    return diverge_len


def julia_sets(np_):
    """Section "Julia set": ``c = -1``, ``pi/10``, ``-0.75 + 0.4j``; "Generalizing": ``np.power(z, d) - 1``."""
    plane = fractal_mesh(np_, 24)
    out = [divergence_rate(np_, plane, lambda z: np_.square(z) - 1)]
    for c in (np.pi / 10, -0.75 + 0.4j):
        out.append(divergence_rate(np_, plane, lambda z, c=c: np_.square(z) + c, num_iter=12))
    for d in (3, 5):
        out.append(divergence_rate(np_, plane, lambda z, d=d: np_.power(z, d) - 1, num_iter=8))
    return tuple(out)


def mandelbrot(np_, num_iter=12, radius=2):
    """Section "Mandelbrot set": ``z`` starts at zeros of complex128, ``c`` is the plane."""
    c = fractal_mesh(np_, 24).copy()
    z = np_.zeros(c.shape, dtype=np.complex128)
    diverge_len = np_.zeros(z.shape)
    for _ in range(num_iter):
        conv_mask = np_.abs(z) < radius
        z[conv_mask] = np_.square(z[conv_mask]) + c[conv_mask]
        diverge_len[conv_mask] += 1
    return diverge_len


def newton_fractal(np_, plane, f, df, num_iter=8, r=2):
    """Section "Newton fractals": the tutorial's ``newton_fractal``."""
    z = plane.copy()
    diverge_len = np_.zeros(z.shape)
    for _ in range(num_iter):
        conv_mask = np_.abs(z) < r
        pz = f(z[conv_mask])
        dp = df(z[conv_mask])
        z[conv_mask] = z[conv_mask] - pz / dp
        diverge_len[conv_mask] += 1
    return diverge_len


#: "Newton fractals": p(z) = z^8 + 15z^4 - 16
NEWTON_P = np.polynomial.Polynomial([-16, 0, 0, 0, 15, 0, 0, 0, 1])


def newton_fractals(np_):
    """Section "Newton fractals": the polynomial (evaluated by ``np.polynomial.polynomial.polyval`` of its coefficients:
    the ``Polynomial`` object itself converts its argument to a NumPy array, see the test), ``tan(z)^2`` and
    the sum of powers of ``sin``; then "Creating your own fractals": ``tan(z^2)``, ``sin(tan(z^2))``, their sum
    and the "accidental" one."""
    plane, small = fractal_mesh(np_, 24), fractal_mesh(np_, 24, -1.0, 1.0)
    coef, dcoef = NEWTON_P.coef, NEWTON_P.deriv().coef
    polyval = np.polynomial.polynomial.polyval
    out = [newton_fractal(np_, plane, lambda z: polyval(z, coef), lambda z: polyval(z, dcoef))]

    def f_tan(z):
        return np_.square(np_.tan(z))

    def d_tan(z):
        return 2 * np_.tan(z) / np_.square(np_.cos(z))

    def sin_sum(z, n=6):
        total = np_.zeros(z.size, dtype=z.dtype)
        for i in range(1, n + 1):
            total += np_.power(np_.sin(z), i)
        return total

    def d_sin_sum(z, n=6):
        total = np_.zeros(z.size, dtype=z.dtype)
        for i in range(1, n + 1):
            total += i * np_.power(np_.sin(z), i - 1) * np_.cos(z)
        return total

    def f(z):
        return np_.tan(np_.square(z))

    def g(z):
        return np_.sin(f(z))

    def accident(z):
        return z - (2 * np_.power(np_.tan(z), 2) / (np_.sin(z) * np_.cos(z)))

    out.append(newton_fractal(np_, plane, f_tan, d_tan, r=50))
    out.append(newton_fractal(np_, small, sin_sum, d_sin_sum, num_iter=6, r=1))
    out.append(divergence_rate(np_, plane, lambda z: f(z) - 1, num_iter=8, radius=2.1))
    out.append(divergence_rate(np_, small, lambda z: f(z) + g(z) - 1, num_iter=6, radius=2.1))
    out.append(divergence_rate(np_, plane, accident, num_iter=6, radius=np.pi))
    return tuple(out)


# ---------------------------------------------------------------- tutorial-static_equilibrium.md
def equilibrium_forces(np_, force_a, force_b):
    """Section "Solving equilibrium with Newton's second law" / "Finding values with physical properties": the sums of
    force vectors, the cord's unit vector (``np.linalg.norm``), its force and moment (``np.cross``) and the
    reactions."""
    force_c = force_a + force_b
    r = np_.array([-1, -1, 0])
    total = force_a + force_b + r
    pole_base, cord_base, cord_connection = (np_.array(v) for v in ([0, 0, 0], [3, 0, 0], [0, 0, 2]))
    pole_direction = cord_connection - pole_base
    cord_direction = cord_base - cord_connection
    cord_unit = cord_direction / np_.linalg.norm(cord_direction)
    force_cord = cord_unit * 5
    moment_cord = np_.cross(force_cord, pole_direction)
    equilibrium = np_.array([0, 0, 0])
    u, v, w = force_c  # (the tutorial's unpacking of a vector into the quiver's components)
    reactions = equilibrium - force_cord, equilibrium - moment_cord
    return force_c, total, cord_unit, force_cord, moment_cord, *reactions, u, v, w


def equilibrium_beam(np_, points):
    """Section "Another example": the position vectors, unit vectors and ``np.cross`` moment arms, then the tutorial's
    five equations (written out in its prose) solved with ``np.linalg.solve`` and the three force equations
    alone (five unknowns) with ``np.linalg.lstsq`` (the least-norm solution)."""
    a, b, c, d, e, f = (points[k] for k in range(6))
    ab, ac, bd, be, cf = b - c, c - a, d - b, e - b, f - c
    unit_bd, unit_be, unit_cf = (v / np_.linalg.norm(v) for v in (bd, be, cf))
    rad_bd, rad_be, rad_cf = np_.cross(ab, unit_bd), np_.cross(ab, unit_be), np_.cross(ac, unit_cf)
    forces = np.array([[1 / 3, 1 / 3, 1, 0, 0], [-2 / 3, -2 / 3, 0, 1, 0], [-2 / 3, 2 / 3, 0, 0, 1]])
    moments = np.array([[-2, 2, 0, 0, 0], [1, 1, 0, 0, 0]])
    system = np_.array(np.vstack([forces, moments]))
    rhs = np_.array(np.array([195.0, 390.0, -130.0, 780.0, 1170.0]))
    solved = np_.linalg.solve(system, rhs)
    least, _, rank, sv = np_.linalg.lstsq(np_.array(forces), rhs[:3], rcond=None)
    return unit_bd, unit_be, unit_cf, rad_bd, rad_be, rad_cf, solved, least, rank, sv


# ---------------------------------------------------------------- tutorial-svd.md
#: "Content": an RGB image of uint8 (SciPy's ``face()`` is 768x1024x3; a synthetic 12x16x3 here)
IMAGE = rng.integers(0, 256, (12, 16, 3)).astype(np.uint8)
GRAY_WEIGHTS = np.array([0.2126, 0.7152, 0.0722])


def svd_gray(np_, img, weights):
    """Section "Shape, axis and array properties" and "Operations on an axis": the image scaled to [0, 1], its channels,
    the grey image (``@`` the luminance weights), its SVD, ``Sigma`` (``np.fill_diagonal``), the
    reconstruction error (``np.linalg.norm``), ``np.allclose`` and the rank-``k`` approximation."""
    img_array = img / 255
    channels = (img_array[:, :, 0], img_array[:, :, 1], img_array[:, :, 2])
    img_gray = img_array @ weights
    u, s, vt = np_.linalg.svd(img_gray)
    sigma = np_.zeros((u.shape[1], vt.shape[0]))
    np_.fill_diagonal(sigma, s)
    err = np_.linalg.norm(img_gray - u @ sigma @ vt)
    close = np_.allclose(img_gray, u @ sigma @ vt)
    k = 4
    approx = u @ sigma[:, :k] @ vt[:k, :]
    return (img_array.min(), img_array.max(), *channels, img_gray, s, sigma, err, close, approx)


def svd_color(np_, img):
    """Section "Applying to all colors": ``np.transpose`` to (3, 12, 16), the stacked SVD, ``Sigma`` per color, the
    reconstruction (``np.clip``), its rank-``k`` approximation and the transpose back. The tutorial fills
    ``Sigma[j, :, :]`` in place with ``np.fill_diagonal``: a getitem here is a copy (as JAX's), so each color's
    ``Sigma`` is filled whole and written back with ``Sigma[j] = ...``."""
    img_array = img / 255
    transposed = np_.transpose(img_array, (2, 0, 1))
    u, s, vt = np_.linalg.svd(transposed)
    sigma = np_.zeros((3, 12, 16))
    for j in range(3):
        sigma_j = np_.zeros((12, 16))
        np_.fill_diagonal(sigma_j, s[j, :])
        sigma[j] = sigma_j
    reconstructed = u @ sigma @ vt
    k = 4
    approx_img = u @ sigma[..., :k] @ vt[..., :k, :]
    back = np_.transpose(np_.clip(reconstructed, 0, 1), (1, 2, 0))
    return s, reconstructed, back, np_.transpose(np_.clip(approx_img, 0, 1), (1, 2, 0))


# ---------------------------------------------------------------- tutorial-x-ray-image-processing.md
#: "Load the X-ray image": grayscale uint8 images (1024x1024 in the tutorial; 9 of them combined); synthetic
XRAYS = rng.integers(0, 256, (3, 20, 24)).astype(np.uint8)


def xray_edges(np_, images):
    """Section "Combine images into a multidimensional array" and "Edge detection using the Sobel-Feldman operator":
    ``np.stack`` of the images (the tutorial's ``np.array`` of a list), then the gradient magnitude by
    ``np.hypot`` scaled ``*= 255 / np.max`` and cast ``astype("float32")`` (``np.gradient`` in place of
    SciPy's ``ndimage.sobel``: the NumPy part is what follows it)."""
    combined = np_.stack([images[k] for k in range(images.shape[0])])
    image = combined[0].astype(float)
    x_grad, y_grad = np_.gradient(image, axis=0), np_.gradient(image, axis=1)
    sobel = np_.hypot(x_grad, y_grad)
    sobel *= 255.0 / np_.max(sobel)
    return combined, sobel, sobel.astype("float32")


def xray_statistics(np_, images):
    """Section "Apply masks to X-rays with np.where()" and the statistics before it: min, max, mean, median, the
    pixel-intensity histogram (``np.histogram`` with ``bins=256`` over ``[min, max]``, NumPy's counterpart of
    SciPy's ``ndimage.histogram``), percentiles and the two ``np.where`` masks."""
    image = images[0]
    lo, hi = np_.min(image), np_.max(image)
    counts, edges = np_.histogram(image, bins=256, range=(int(lo), int(hi)))
    p = np_.percentile(image, [5, 50, 95])
    noisy = np_.where(image > 150, image, 0)
    less_noisy = np_.where(image > 150, 1, 0)
    return lo, hi, np_.mean(image), np_.median(image), counts, edges, p, noisy, less_noisy


# ---------------------------------------------------------------- tutorial-deep-learning-on-mnist.md
#: "1. Load the MNIST dataset": images of 28x28 uint8 pixels flattened to 784, labels uint8; synthetic
MNIST_TRAIN = rng.integers(0, 256, (12, 784)).astype(np.uint8)
MNIST_TRAIN_LABELS = rng.integers(0, 10, 12).astype(np.uint8)
MNIST_TEST = rng.integers(0, 256, (8, 784)).astype(np.uint8)
MNIST_TEST_LABELS = rng.integers(0, 10, 8).astype(np.uint8)
#: "3. Build and train a small neural network": the weights and dropout masks of NumPy's generator
MNIST_RNG = np.random.default_rng(884736743)
MNIST_W1 = 0.2 * MNIST_RNG.random((784, 100)) - 0.1
MNIST_W2 = 0.2 * MNIST_RNG.random((100, 10)) - 0.1
MNIST_EPOCHS = 2
MNIST_DROPOUT = MNIST_RNG.integers(low=0, high=2, size=(MNIST_EPOCHS, 12, 100))


def one_hot_encoding(np_, labels, dimension=10):
    """Section "2. Preprocess the data": the tutorial's ``one_hot_encoding``."""
    one_hot_labels = labels[..., None] == np_.arange(dimension)[None]
    return one_hot_labels.astype(np.float64)


def relu(x):
    return (x >= 0) * x


def relu2deriv(output):
    return output >= 0


def mnist_training(np_, x_train, y_train, x_test, y_test, weights_1, weights_2, dropout):
    """Section "2. Preprocess the data" and "3. Build and train a small neural network": scaling, one-hot labels and the
    training loop (forward pass, dropout, backpropagation, ``np.outer`` weight updates, per image) with the
    test evaluation of each epoch. The dropout masks are drawn beforehand (the tutorial draws them with
    ``rng.integers`` in the loop: a host array, which is put on the mesh here as any host data)."""
    image, label = x_train[-1, :].reshape(28, 28), y_train[-1]  # ("1. Load the MNIST dataset": the last one)
    training_images, test_images = x_train / 255, x_test / 255
    training_labels, test_labels = one_hot_encoding(np_, y_train), one_hot_encoding(np_, y_test)
    learning_rate = 0.005
    history = []
    for j in range(MNIST_EPOCHS):
        training_loss, training_accurate_predictions = 0.0, 0
        for i in range(len(training_images)):
            layer_0 = training_images[i]
            layer_1 = relu(np_.dot(layer_0, weights_1))
            dropout_mask = dropout[j, i]
            layer_1 *= dropout_mask * 2
            layer_2 = np_.dot(layer_1, weights_2)
            training_loss += np_.sum((training_labels[i] - layer_2) ** 2)
            training_accurate_predictions += int(np_.argmax(layer_2) == np_.argmax(training_labels[i]))
            layer_2_delta = training_labels[i] - layer_2
            layer_1_delta = np_.dot(weights_2, layer_2_delta) * relu2deriv(layer_1)
            layer_1_delta *= dropout_mask
            weights_1 += learning_rate * np_.outer(layer_0, layer_1_delta)
            weights_2 += learning_rate * np_.outer(layer_1, layer_2_delta)
        results = relu(test_images @ weights_1) @ weights_2
        test_loss = np_.sum((test_labels - results) ** 2)
        test_accurate = np_.sum(np_.argmax(results, axis=1) == np_.argmax(test_labels, axis=1))
        history += [training_loss, training_accurate_predictions, test_loss, test_accurate]
    return (image, label, training_labels, *history, weights_1, weights_2)


# ---------------------------------------------------------------- tutorial-ma.md
#: "What you'll do": cumulative cases per location and day (-1: no data), the totals row at 5 (the CSV's is 35)
CASES_BY_LOCATION = np.array(
    [[1, 1, 2, 2, -1, 5, 5, 6], [0, 1, -1, 3, 4, 4, 5, 9], [2, 2, 3, 5, 8, 13, 21, 34], [0, 0, 0, 1, 1, -1, 2, 2],
     [1, 3, 3, 4, 6, 6, 7, 7], [4, 7, 8, 15, 19, 23, 40, 58], [5, 5, 6, 6, 7, -1, 8, 9]]
)  # fmt: skip
#: the locations' country, as the mask ``locations[:, 1] == "China"`` of the tutorial (host strings)
IN_COUNTRY = np.array([True, True, False, True, True, False, True])
TOTALS_ROW = 5


def ma_without_masked_arrays(np_, nbcases):
    """Section "Exploring the data" and "Missing data" on the mesh without ``np.ma``: ``np.delete`` of the totals row,
    the country's total of a host boolean row mask, then the masked sum ``np.ma.masked_values(..., -1).sum(0)``
    computes as ``np.sum(..., where=...)``, and the days where every row is missing (``mask`` of the masked
    sum) by ``np.all``."""
    nbcases = np_.delete(nbcases, TOTALS_ROW, axis=0)
    rows = nbcases[np.delete(IN_COUNTRY, TOTALS_ROW)]
    total = rows.sum(axis=0)
    valid = rows != -1
    masked_total = np_.sum(rows, axis=0, where=valid)
    no_data = np_.all(~valid, axis=0)
    return nbcases, total, masked_total, no_data, np_.nonzero(np_.any(~valid, axis=1))
