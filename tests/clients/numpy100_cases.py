"""The cases of test_numpy100.py: Rougier's "100 NumPy exercises", each solution written as a function of a
NumPy-like module ``np_`` and the exercise's input arrays (numbered as the exercises; a letter for a second
solution of the same exercise). Each returns what the exercise prints (an array, a scalar or a tuple of them).
"""

from __future__ import annotations

import numpy as np

rng = np.random.default_rng(100)
U = rng.random((10, 10))  # exercises' np.random.random
U3 = rng.random((3, 3, 3))
V30 = rng.random(30)
V10 = rng.random(10)
UNI = rng.uniform(-10, 10, 10)
POS = rng.uniform(0, 10, 10)
I10A = rng.integers(0, 10, 10)
I10B = rng.integers(0, 10, 10)
BIN5A = rng.integers(0, 2, 5)
BIN5B = rng.integers(0, 2, 5)
XY = rng.random((10, 2))
ROWS = rng.random((5, 10))
I33 = rng.integers(0, 10, (3, 3))
I3x10 = rng.integers(0, 3, (3, 10))
NULLC = np.array([[0, 1, np.nan], [1, 2, np.nan], [4, 5, np.nan]])
IDX20 = rng.integers(0, 10, 20)
IMG = rng.integers(0, 4, (16, 16, 3)).astype(np.ubyte)
A4 = rng.integers(0, 10, (3, 4, 3, 4))
D100 = rng.uniform(0, 1, 100)
S100 = rng.integers(0, 10, 100)
A55 = rng.uniform(0, 1, (5, 5))
B55 = rng.uniform(0, 1, (5, 5))
FACES = rng.integers(0, 100, (10, 3))
P0 = rng.uniform(-10, 10, (10, 2))
P1 = rng.uniform(-10, 10, (10, 2))
PT = rng.uniform(-10, 10, (1, 2))
PTS = rng.uniform(-10, 10, (10, 2))
Z1010 = rng.integers(0, 10, (10, 10))
SQ = rng.uniform(0, 1, (10, 10))
I50 = rng.integers(0, 10, 50)
Z55 = rng.integers(0, 5, (10, 10))
SHUF = rng.permutation(1000)
A83 = rng.integers(0, 5, (8, 3))
B22 = rng.integers(0, 5, (2, 2))
Z103 = rng.integers(0, 5, (10, 3))
BITS = np.array([0, 1, 2, 3, 15, 16, 32, 64, 128])
Z63 = rng.integers(0, 2, (6, 3))
E10A = rng.uniform(0, 1, 10)
E10B = rng.uniform(0, 1, 10)
MULTI = np.array([[1.0, 0.0, 3.0, 8.0], [2.0, 0.0, 1.0, 1.0], [1.5, 2.5, 1.0, 0.0]])
BOOT = rng.standard_normal(100)
BOOTIDX = rng.integers(0, 100, (50, 100))
RND01 = rng.integers(0, 2, 100)
RNDPM = rng.uniform(-1.0, 1.0, 100)
PLACE = rng.choice(100, 3, replace=False)


def ex6(np_):
    Z = np_.zeros(10)
    Z[4] = 1
    return Z


def ex15(np_):
    Z = np_.ones((10, 10))
    Z[1:-1, 1:-1] = 0
    return Z


def ex16(np_):
    Z = np_.pad(np_.ones((5, 5)), pad_width=1, mode="constant", constant_values=0)
    Z[:, [0, -1]] = 0
    Z[[0, -1], :] = 0
    return Z


def ex19(np_):
    Z = np_.zeros((8, 8), dtype=int)
    Z[1::2, ::2] = 1
    Z[::2, 1::2] = 1
    return Z


def ex25(np_):
    Z = np_.arange(11)
    Z[(3 < Z) & (Z < 8)] *= -1
    return Z


def ex27(np_, Z):
    return (Z**Z, 2 << Z >> 2, Z < -Z, 1j * Z, Z / 1 / 1)


def ex27b(np_, Z):
    try:
        Z < Z > Z  # noqa: B015  (a chained comparison: bool() of an array of more than one element)
    except ValueError:
        return "ValueError"
    return "no error"


def ex28(np_):
    with np.errstate(all="ignore"):
        return (np_.array(0) / np_.array(0), np_.array(0) // np_.array(0))


def ex31(np_):
    with np.errstate(all="ignore"):
        return (np_.ones(1) / 0, np_.arange(3) / 0)


def ex35(np_, A, B):
    np_.add(A, B, out=B)
    np_.divide(A, 2, out=A)
    np_.negative(A, out=A)
    np_.multiply(A, B, out=A)
    return A


def ex36(np_, Z):
    return (Z - Z % 1, Z // 1, np_.floor(Z), Z.astype(int), np_.trunc(Z))


def ex37(np_):
    Z = np_.zeros((5, 5))
    Z += np_.arange(5)
    return Z, np_.tile(np_.arange(0, 5), (5, 1))


def ex38(np_):
    return np_.fromiter((x for x in range(10)), dtype=float, count=-1)


def ex40(np_, Z):
    Z.sort()
    return Z


def ex42(np_, A, B):
    return (np_.allclose(A, B), np_.array_equal(A, B), np_.array_equal(A, A))


def ex44(np_, Z):
    X, Y = Z[:, 0], Z[:, 1]
    return np_.sqrt(X**2 + Y**2), np_.arctan2(Y, X)


def ex45(np_, Z):
    Z[Z.argmax()] = 0
    return Z


def ex46(np_):
    return np_.meshgrid(np_.linspace(0, 1, 5), np_.linspace(0, 1, 5))


def ex47(np_):
    X = np_.arange(8)
    Y = X + 0.5
    C = 1.0 / np_.subtract.outer(X, Y)
    return C, np_.linalg.det(C)


def ex50(np_, v):
    Z = np_.arange(100)
    index = (np_.abs(Z - v)).argmin()
    return Z[index]


def ex52(np_, Z):
    X, Y = np_.atleast_2d(Z[:, 0], Z[:, 1])
    return np_.sqrt((X - X.T) ** 2 + (Y - Y.T) ** 2)


def ex53(np_, Z):
    Y = Z.astype(np.float32).view(np.int32)
    Y[:] = Z * 100
    return Y


def ex55(np_):
    Z = np_.arange(9).reshape(3, 3)
    a = [(index, value) for index, value in np_.ndenumerate(Z)]
    b = [(index, Z[index]) for index in np_.ndindex(Z.shape)]
    return [int(v) for _, v in a] + [int(v) for _, v in b]


def ex56(np_):
    X, Y = np_.meshgrid(np_.linspace(-1, 1, 10), np_.linspace(-1, 1, 10))
    D = np_.sqrt(X * X + Y * Y)
    sigma, mu = 1.0, 0.0
    return np_.exp(-((D - mu) ** 2 / (2.0 * sigma**2)))


def ex57(np_, where):
    Z = np_.zeros((10, 10))
    np_.put(Z, where, 1)
    return Z


def ex58(np_, X):
    return X - X.mean(axis=1, keepdims=True), X - X.mean(axis=1).reshape(-1, 1)


def ex60(np_, Z, W):
    return (~Z.any(axis=0)).any(), np_.isnan(W).all(axis=0)


def ex61(np_, Z):
    return Z.flat[np_.abs(Z - 0.5).argmin()]


def ex64(np_, ids):
    Z = np_.ones(10)
    Z += np_.bincount(ids, minlength=len(Z))
    np_.add.at(Z, ids, 1)
    return Z


def ex66(np_, img):
    colors = np_.unique(img.reshape(-1, 3), axis=0)
    I24 = np_.dot(img.astype(np.uint32), [1, 256, 65536])
    return len(colors), len(np_.unique(I24))


def ex67(np_, A):
    return A.sum(axis=(-2, -1)), A.reshape(A.shape[:-2] + (-1,)).sum(axis=-1)


def ex68(np_, D, S):
    return np_.bincount(S, weights=D) / np_.bincount(S)


def ex69(np_, A, B):
    return np_.diag(np_.dot(A, B)), np_.sum(A * B.T, axis=1), np_.einsum("ij,ji->i", A, B)


def ex70(np_, Z):
    nz = 3
    Z0 = np_.zeros(len(Z) + (len(Z) - 1) * (nz))
    Z0[:: nz + 1] = Z
    return Z0


def ex72(np_):
    A = np_.arange(25).reshape(5, 5)
    A[[0, 1]] = A[[1, 0]]
    return A


def ex73(np_, faces):
    F = np_.roll(faces.repeat(2, axis=1), -1, axis=1)
    F = F.reshape(len(F) * 3, 2)
    F = np_.sort(F, axis=1)
    return np_.unique(F, axis=0)  # the exercise's record view (G = F.view(...)) replaced by axis=0


def ex74(np_, ids):
    C = np_.bincount(ids)
    return np_.repeat(np_.arange(len(C)), C)


def ex75(np_):
    def moving_average(a, n=3):
        ret = np_.cumsum(a, dtype=float)
        ret[n:] = ret[n:] - ret[:-n]
        return ret[n - 1 :] / n

    Z = np_.arange(20)
    return moving_average(Z, n=3), np_.lib.stride_tricks.sliding_window_view(Z, window_shape=3).mean(axis=-1)


def ex77(np_, Z, W):
    np_.logical_not(Z, out=Z)
    np_.negative(W, out=W)
    return Z, W


def ex78(np_, P0, P1, p):
    def distance_faster(P0, P1, p):
        v = P1 - P0
        v[:, [0, 1]] = v[:, [1, 0]]
        v[:, 1] *= -1
        norm = np_.linalg.norm(v, axis=1)
        r = P0 - p
        return np_.abs(np_.einsum("ij,ij->i", r, v)) / norm

    def distance_slower(P0, P1, p):
        T = P1 - P0
        L = (T**2).sum(axis=1)
        U = -((P0[:, 0] - p[..., 0]) * T[:, 0] + (P0[:, 1] - p[..., 1]) * T[:, 1]) / L
        U = U.reshape(len(U), 1)
        D = P0 + U * T - p
        return np_.sqrt((D**2).sum(axis=1))

    return distance_faster(P0, P1, p), distance_slower(P0, P1, p)


def ex79(np_, p, p_1, p_2):
    x_0, y_0 = p.T
    x_1, y_1 = p_1.T
    x_2, y_2 = p_2.T
    dx = x_2 - x_1
    dy = y_2 - y_1
    cross_term = x_2 * y_1 - y_2 * x_1
    numerator = np_.abs(
        dy[np.newaxis, :] * x_0[:, np.newaxis] - dx[np.newaxis, :] * y_0[:, np.newaxis] + cross_term[np.newaxis, :]
    )
    denominator = np_.sqrt(dx**2 + dy**2)
    return numerator / denominator[np.newaxis, :]


def ex80(np_, Z):
    shape = (5, 5)
    fill = 0
    position = (1, 1)
    R = np_.ones(shape, dtype=Z.dtype) * fill
    P = np_.array(list(position)).astype(int)
    Rs = np_.array(list(R.shape)).astype(int)
    Zs = np_.array(list(Z.shape)).astype(int)
    R_start = np_.zeros((len(shape),)).astype(int)
    R_stop = np_.array(list(shape)).astype(int)
    Z_start = P - Rs // 2
    Z_stop = (P + Rs // 2) + Rs % 2
    R_start = (R_start - np_.minimum(Z_start, 0)).tolist()
    Z_start = (np_.maximum(Z_start, 0)).tolist()
    R_stop = np_.maximum(R_start, (R_stop - np_.maximum(Z_stop - Zs, 0))).tolist()
    Z_stop = (np_.minimum(Z_stop, Zs)).tolist()
    r = tuple([slice(start, stop) for start, stop in zip(R_start, R_stop)])
    z = tuple([slice(start, stop) for start, stop in zip(Z_start, Z_stop)])
    R[r] = Z[z]
    return R


def ex81(np_):
    Z = np_.arange(1, 15, dtype=np.uint32)
    return np_.lib.stride_tricks.sliding_window_view(Z, window_shape=4)


def ex82(np_, Z):
    _U, S, _V = np_.linalg.svd(Z)
    threshold = len(S) * S.max() * np.finfo(S.dtype).eps
    return np_.sum(S > threshold), np_.linalg.matrix_rank(Z)


def ex83(np_, Z):
    return np_.bincount(Z).argmax()


def ex84(np_, Z):
    return np_.lib.stride_tricks.sliding_window_view(Z, window_shape=(3, 3))


def ex86(np_):
    p, n = 4, 6
    M = np_.ones((p, n, n))
    V = np_.ones((p, n, 1))
    return np_.tensordot(M, V, axes=[[0, 2], [0, 1]])


def ex87(np_):
    Z = np_.ones((16, 16))
    k = 4
    return np_.add.reduceat(
        np_.add.reduceat(Z, np_.arange(0, Z.shape[0], k), axis=0), np_.arange(0, Z.shape[1], k), axis=1
    )


def ex87b(np_):
    Z = np_.ones((16, 16))
    k = 4
    windows = np_.lib.stride_tricks.sliding_window_view(Z, (k, k))
    return windows[::k, ::k, ...].sum(axis=(-2, -1)), Z.reshape(4, 4, 4, 4).sum((1, 3))


def ex89(np_, Z):
    n = 5
    return Z[np_.argsort(Z)[-n:]], np_.sort(Z[np_.argpartition(-Z, n)[:n]])


def ex90(np_):
    def cartesian(arrays):
        arrays = [np_.asarray(a) for a in arrays]
        shape = (len(x) for x in arrays)
        ix = np_.indices(shape, dtype=int)
        ix = ix.reshape(len(arrays), -1).T
        for n in range(len(arrays)):
            ix[:, n] = arrays[n][ix[:, n]]
        return ix

    return cartesian(([1, 2, 3], [4, 5], [6, 7]))


def ex92(np_, x):
    return np_.power(x, 3), x * x * x, np_.einsum("i,i,i->i", x, x, x)


def ex93(np_, A, B):
    C = A[..., np.newaxis, np.newaxis] == B
    return np_.where(C.any((3, 1)).all(1))[0]


def ex94(np_, Z):
    E = np_.all(Z[:, 1:] == Z[:, :-1], axis=1)
    return Z[~E], Z[Z.max(axis=1) != Z.min(axis=1), :]


def ex95(np_, ints):
    B = ((ints.reshape(-1, 1) & (2 ** np_.arange(8))) != 0).astype(int)
    return B[:, ::-1]


def ex95b(np_, ints):
    return np_.unpackbits(ints.astype(np.uint8)[:, np.newaxis], axis=1)


def ex97(np_, A, B):
    return (
        np_.einsum("i->", A), np_.einsum("i,i->i", A, B), np_.einsum("i,i", A, B), np_.einsum("i,j->ij", A, B)
    )  # fmt: skip


def ex98(np_):
    phi = np_.arange(0, 10 * np.pi, 0.1)
    a = 1
    x = a * phi * np_.cos(phi)
    y = a * phi * np_.sin(phi)
    dr = (np_.diff(x) ** 2 + np_.diff(y) ** 2) ** 0.5
    r = np_.zeros_like(x)
    r[1:] = np_.cumsum(dr)
    r_int = np_.linspace(0, r.max(), 200)
    return np_.interp(r_int, r, x), np_.interp(r_int, r, y)


def ex99(np_, X):
    n = 4
    M = np_.logical_and.reduce(np_.mod(X, 1) == 0, axis=-1)
    M &= X.sum(axis=-1) == n
    return X[M]


def ex100(np_, X, idx):
    means = X[idx].mean(axis=1)
    return np_.percentile(means, [2.5, 97.5])


# name -> (function, inputs); the inputs are copied for every run (several solutions write into them)
CASES = {
    "3": (lambda np_: np_.zeros(10), ()),
    "6": (ex6, ()),
    "7": (lambda np_: np_.arange(10, 50), ()),
    "8": (lambda np_: np_.arange(50)[::-1], ()),
    "9": (lambda np_: np_.arange(9).reshape(3, 3), ()),
    "10": (lambda np_, a: np_.nonzero(a), (np.array([1, 2, 0, 0, 4, 0]),)),
    "11": (lambda np_: np_.eye(3), ()),
    "12": (lambda np_, Z: Z, (U3,)),
    "13": (lambda np_, Z: (Z.min(), Z.max()), (U,)),
    "14": (lambda np_, Z: Z.mean(), (V30,)),
    "15": (ex15, ()),
    "16": (ex16, ()),
    "18": (lambda np_: np_.diag(1 + np_.arange(4), k=-1), ()),
    "19": (ex19, ()),
    "21": (lambda np_: np_.tile(np_.array([[0, 1], [1, 0]]), (4, 4)), ()),
    "22": (lambda np_, Z: (Z - np_.mean(Z)) / (np_.std(Z)), (U[:5, :5],)),
    "24": (lambda np_: (np_.matmul(np_.ones((5, 3)), np_.ones((3, 2))), np_.ones((5, 3)) @ np_.ones((3, 2))), ()),
    "25": (ex25, ()),
    "26": (lambda np_: np_.sum(np_.arange(5), -1), ()),
    "27": (ex27, (np.arange(1, 6),)),
    "27b": (ex27b, (np.arange(1, 6),)),
    "28": (ex28, ()),
    "29": (lambda np_, Z: (np_.copysign(np_.ceil(np_.abs(Z)), Z), np_.where(Z > 0, np_.ceil(Z), np_.floor(Z))), (UNI,)),
    "30": (lambda np_, Z1, Z2: np_.intersect1d(Z1, Z2), (I10A, I10B)),
    "31": (ex31, ()),
    "32": (lambda np_, Z: (np_.sqrt(Z), np_.emath.sqrt(Z)), (np.array([-1.0, 4.0]),)),
    "35": (ex35, (np.ones(3), np.ones(3) * 2)),
    "36": (ex36, (POS,)),
    "37": (ex37, ()),
    "38": (ex38, ()),
    "39": (lambda np_: np_.linspace(0, 1, 11, endpoint=False)[1:], ()),
    "40": (ex40, (V10,)),
    "41": (lambda np_: np_.add.reduce(np_.arange(10)), ()),
    "42": (ex42, (BIN5A, BIN5B)),
    "44": (ex44, (XY,)),
    "45": (ex45, (V10,)),
    "46": (ex46, ()),
    "47": (ex47, ()),
    "50": (ex50, (np.float64(41.3),)),
    "52": (ex52, (XY,)),
    "53": (ex53, (V10,)),
    "55": (ex55, ()),
    "56": (ex56, ()),
    "57": (ex57, (PLACE,)),
    "58": (ex58, (ROWS,)),
    "59": (lambda np_, Z: Z[Z[:, 1].argsort(kind="stable")], (I33,)),
    "60": (ex60, (I3x10, NULLC)),
    "61": (ex61, (V10,)),
    "64": (ex64, (IDX20,)),
    "65": (lambda np_, ids, X: np_.bincount(ids, X), (np.array([1, 3, 9, 3, 4, 1]), np.array([1, 2, 3, 4, 5, 6]))),
    "66": (ex66, (IMG,)),
    "67": (ex67, (A4,)),
    "68": (ex68, (D100, S100)),
    "69": (ex69, (A55, B55)),
    "70": (ex70, (np.array([1, 2, 3, 4, 5]),)),
    "71": (lambda np_: np_.ones((5, 5, 3)) * (2 * np_.ones((5, 5)))[:, :, None], ()),
    "72": (ex72, ()),
    "73": (ex73, (FACES,)),
    "74": (ex74, (np.array([1, 1, 2, 3, 4, 4, 6]),)),
    "75": (ex75, ()),
    "76": (lambda np_: np_.lib.stride_tricks.sliding_window_view(np_.arange(10), window_shape=3), ()),
    "77": (ex77, (RND01, RNDPM)),
    "78": (ex78, (P0, P1, PT)),
    "79": (ex79, (PTS, P0, P1)),
    "80": (ex80, (Z1010,)),
    "81": (ex81, ()),
    "82": (ex82, (SQ,)),
    "83": (ex83, (I50,)),
    "84": (ex84, (Z55,)),
    "86": (ex86, ()),
    "87": (ex87, ()),
    "87b": (ex87b, ()),
    "89": (ex89, (SHUF,)),
    "90": (ex90, ()),
    "92": (ex92, (V30,)),
    "93": (ex93, (A83, B22)),
    "94": (ex94, (Z103,)),
    "95": (ex95, (BITS,)),
    "95b": (ex95b, (BITS,)),
    "96": (lambda np_, Z: np_.unique(Z, axis=0), (Z63,)),
    "97": (ex97, (E10A, E10B)),
    "98": (ex98, ()),
    "99": (ex99, (MULTI,)),
    "100": (ex100, (BOOT, BOOTIDX)),
}
