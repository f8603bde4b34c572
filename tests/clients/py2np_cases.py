"""The cases of test_py2np.py: the NumPy code of Nicolas P. Rougier's book "From Python to NumPy" (2017,
www.labri.fr/perso/nrougier/from-python-to-numpy), each example written as a function of a NumPy-like module ``np_``
and its input arrays.

Each returns what the example shows (an array, a scalar, a shape or a tuple of them). The book's random data
(``np.random.*``) are synthetic seeded inputs of the same kind and a smaller size; plots, animations, ``%timeit``,
prints and the memory-layout parts (strides, ``as_strided``, ``byte_bounds``, ``.base``) are left out. Functions that
take a size run the same example on sizes that give uneven blocks on the 2x2 mesh.
"""

from __future__ import annotations

import collections

import numpy as np

rng = np.random.default_rng(2017)

STEPS = 2 * rng.integers(0, 2, 1000) - 1  # 1.2 "Simple example": 2*random.randint(0, 1)-1 steps
STEPS_ODD = 2 * rng.integers(0, 2, 999) - 1
INTS = rng.integers(0, 100, 30)  # the "sum of even numbers" idioms' sequence
UNIFORM_5x5 = rng.uniform(0, 1, (5, 5))  # 3.3 "Views and copies": np.random.uniform(0,1,(5,5))
#: 4.2 "Game of Life": a random board with a dead border (the book's glider, on more cells)
LIFE = np.pad(rng.integers(0, 2, (12, 14)), 1)
LIFE_ODD = np.pad(rng.integers(0, 2, (11, 9)), 1)
GLIDER = np.array(
    [[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 1, 0, 1, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0],
     [0, 0, 0, 0, 0, 0]]
)  # fmt: skip
GS_NOISE_U = rng.uniform(-1, 1, (20, 20))  # 4.2 "Reaction diffusion": 0.05*np.random.uniform(-1,+1,(n,n))
GS_NOISE_V = rng.uniform(-1, 1, (20, 20))
GS_NOISE_U_ODD = rng.uniform(-1, 1, (19, 21))
GS_NOISE_V_ODD = rng.uniform(-1, 1, (19, 21))
#: 4.4 "Spatial vectorization": a small flock (positions in a 64 x 36 box, velocities of norm about 1)
BOIDS_POSITION = rng.uniform(0, 1, (13, 2)) * [64, 36]
BOIDS_VELOCITY = rng.uniform(-1, 1, (13, 2))
#: 4.2's box-counting exercise: an image in [0, 1] (the book's coast of Great Britain, ``imread("uk.png")``)
_YY, _XX = np.mgrid[0:64, 0:80] / 32.0
COAST = np.clip(0.5 + 0.5 * np.sin(3 * _XX) * np.cos(2 * _YY) + 0.2 * rng.uniform(-1, 1, (64, 80)), 0, 1)
COAST_ODD = COAST[:61, :71].copy()
#: 5.1 "Problem vectorization": two sequences
SEQ_X, SEQ_Y = rng.uniform(0, 1, 10), rng.uniform(0, 1, 7)
#: 2.2 "Readability vs speed": a sequence of small integers and a sub-sequence of it
SEQ = rng.integers(0, 4, 101)
SUB = SEQ[40:43].copy()
#: 5.4 "Blue noise sampling": the DART method's uniform random points in the unit square
DART_POINTS = rng.uniform(0, 1, (41, 2))


def _maze(shape, density=0.3):
    """A small maze: a walled grid (1 a wall), random inner walls, the corners (1, 1) and (-2, -2) open."""
    z = (rng.uniform(0, 1, shape) < density).astype(int)
    z[0, :] = z[-1, :] = z[:, 0] = z[:, -1] = 1
    z[1, 1] = z[-2, -2] = 0
    return z


MAZE = _maze((11, 13))  # 5.2 "Path finding": build_maze's grid, of walls (1) and paths (0), smaller
MAZE_ODD = _maze((9, 7))
#: 5.3 "Fluid dynamics": the stable-fluids grid (N = 10, with its boundary ring), velocities and a density
FLUID_U = rng.uniform(-1, 1, (12, 12))
FLUID_V = rng.uniform(-1, 1, (12, 12))
FLUID_D = rng.uniform(0, 1, (12, 12))


# ------------------------------------------------------------------------- 2 Introduction


def random_walk(np_, steps):
    """2.1 "Simple example": ``random_walk_fastest``, the walk as ``np.cumsum`` of +1/-1 steps (the steps given:
    ``np.random.choice([-1, +1], n)``), and its extrema."""
    walk = np_.cumsum(steps)
    return walk, walk.min(), walk.max(), np_.abs(walk).argmax()


def sum_of_evens(np_, z):
    """2.2 "Readability vs speed": the sum of the even numbers of a sequence, its NumPy idioms (a mask, a product
    with a bool array, ``np.where``, ``np.add.reduce``)."""
    return (
        z[z % 2 == 0].sum(),
        np_.sum(z * (z % 2 == 0)),
        np_.where(z % 2 == 0, z, 0).sum(),
        np_.add.reduce(z[z % 2 == 0]),
        np_.arange(0, 101, 2).sum(),  # (the even numbers up to 100, summed)
    )


# ------------------------------------------------------------------------- 3 Anatomy of an array


def anatomy_reshape(np_):
    """3.2 "Memory layout": ``np.arange(9).reshape(3, 3).astype(np.int16)``, its shape, ``ndim``, ``itemsize``,
    ``size``; an element, a row; ``ravel`` and ``flatten``, ``np.add.reduce`` along each axis."""
    z = np_.arange(9).reshape(3, 3).astype(np.int16)
    return (
        z,
        z.shape,
        z.ndim,
        z.itemsize,
        z.size,
        z.dtype,
        z[1, 1],
        z[1],
        z.ravel(),
        z.flatten(),
        z.reshape(9),
        np_.add.reduce(z),
        np_.add.reduce(z, axis=1),
        np_.add.reduce(z.ravel()),
    )


def anatomy_fill(np_):
    """3.2: ``Z = np.ones(n, np.float32); Z[...] = 1`` (the view as ``float16`` is left out: memory layout)."""
    z = np_.ones(4 * 100, np.float32)
    z[...] = 0
    z[...] = 1
    return z


def anatomy_copies(np_, z):
    """3.3 "Views and copies": ``Z[:3, :]`` (a view) and ``Z[[0, 1, 2], :]`` (a copy) are equal; a write into the
    fancy copy does not reach ``Z``; a boolean index."""
    z1 = z[:3, :]
    z2 = z[[0, 1, 2], :]
    equal = np_.allclose(z1, z2)
    z_copy = z[[0, 1, 2]]
    z_copy[...] = 1
    return equal, z1, z2, z_copy, z, z[z > 0.5]


def anatomy_temporary(np_):
    """3.3 "Temporary copy": ``A = 2*X + 2*Y``, then the same without temporaries (``np.multiply``/``np.add`` with
    ``out=``)."""
    x = np_.ones(10, dtype=int)
    y = np_.ones(10, dtype=int)
    a = 2 * x + 2 * y
    np_.multiply(x, 2, out=x)
    np_.multiply(y, 2, out=y)
    np_.add(x, y, out=x)
    return a, x, y


def anatomy_exercise(np_):
    """3.4 "Conclusion": ``Z1 = np.arange(10)``, ``Z2 = Z1[1:-1:2]`` and the start, stop, step found from the values
    (the byte-offset version is memory layout)."""
    z1 = np_.arange(10)
    z2 = z1[1:-1:2]
    start = int(np_.argwhere(z1 == z2[0])[0, 0])
    step = int(z2[1] - z2[0])
    stop = int(np_.argwhere(z1 == z2[-1])[0, 0]) + 1
    return z2, start, stop, step, z1[start:stop:step]


# ------------------------------------------------------------------------- 4 Code vectorization


def add_numpy(np_, z1, z2):
    """4.1 "Introduction": ``add_python`` (``[z1+z2 for (z1,z2) in zip(Z1,Z2)]``) is ``np.add(Z1, Z2)``."""
    return np_.add(z1, z2), z1 + z2


def _life_neighbours(np_, z):
    n = np_.zeros(z.shape, dtype=int)
    n[1:-1, 1:-1] += (
        z[:-2, :-2] + z[:-2, 1:-1] + z[:-2, 2:]
        + z[1:-1, :-2] + z[1:-1, 2:]
        + z[2:, :-2] + z[2:, 1:-1] + z[2:, 2:]
    )  # fmt: skip
    return n


def life(np_, z, steps=4):
    """4.2 "Uniform vectorization", the Game of Life: the neighbours as a sum of 8 slices, ``birth`` and
    ``survive``; the update written directly (the book's ``Z[...] = 0; Z[1:-1, 1:-1][birth | survive] = 1`` is a
    write through a view: ``life_view_write``)."""
    for _ in range(steps):
        n = _life_neighbours(np_, z)
        birth = (n == 3)[1:-1, 1:-1] & (z[1:-1, 1:-1] == 0)
        survive = ((n == 2) | (n == 3))[1:-1, 1:-1] & (z[1:-1, 1:-1] == 1)
        z[...] = 0
        z[1:-1, 1:-1] = np_.where(birth | survive, 1, 0)
    return z, z.sum()


def life_assign_bool(np_, z, steps=4):
    """The Game of Life's update as one assignment of the bool ``birth | survive`` into the int board."""
    for _ in range(steps):
        n = _life_neighbours(np_, z)
        birth = (n == 3)[1:-1, 1:-1] & (z[1:-1, 1:-1] == 0)
        survive = ((n == 2) | (n == 3))[1:-1, 1:-1] & (z[1:-1, 1:-1] == 1)
        z[...] = 0
        z[1:-1, 1:-1] = birth | survive
    return z


def life_view_write(np_, z):
    """The book's ``Z[1:-1, 1:-1][birth | survive] = 1`` (a write into the view ``Z[1:-1, 1:-1]``)."""
    n = _life_neighbours(np_, z)
    birth = (n == 3)[1:-1, 1:-1] & (z[1:-1, 1:-1] == 0)
    survive = ((n == 2) | (n == 3))[1:-1, 1:-1] & (z[1:-1, 1:-1] == 1)
    z[...] = 0
    z[1:-1, 1:-1][birth | survive] = 1
    return z


def life_argwhere(np_, z):
    """4.2's first NumPy version, on flat arrays: the rules' cells as ``np.argwhere`` of the masks of
    ``N.ravel()``, written into the flat board (here a new one, reshaped back: ``ravel`` is a copy here)."""
    n_ = _life_neighbours(np_, z).ravel()
    z_ = z.ravel()
    r1 = np_.argwhere((z_ == 1) & (n_ < 2))
    r2 = np_.argwhere((z_ == 1) & (n_ > 3))
    r3 = np_.argwhere((z_ == 1) & ((n_ == 2) | (n_ == 3)))
    r4 = np_.argwhere((z_ == 0) & (n_ == 3))
    z_[r1] = 0
    z_[r2] = 0
    z_[r3] = z_[r3]
    z_[r4] = 1
    z_ = z_.reshape(z.shape)
    z_[0, :] = z_[-1, :] = z_[:, 0] = z_[:, -1] = 0
    return z_, r1.shape, r4[:, 0]


def gray_scott(np_, noise_u, noise_v, steps=10):
    """4.2 "Reaction diffusion", Gray-Scott: the bordered ``U``, ``V`` (two arrays, the book's structured
    ``[('U', np.double), ('V', np.double)]`` is a NumPy-only dtype), the 5-point Laplacians, the update written into
    ``U[1:-1, 1:-1]`` (the book's ``u += ...`` writes the view ``u = U[1:-1, 1:-1]``)."""
    n, m = noise_u.shape
    du, dv, f, k = 0.16, 0.08, 0.035, 0.065
    u_full = np_.zeros((n + 2, m + 2))
    v_full = np_.zeros((n + 2, m + 2))
    r = 4
    u_full[1:-1, 1:-1] = 1.0
    u_full[n // 2 - r : n // 2 + r, m // 2 - r : m // 2 + r] = 0.50
    v_full[n // 2 - r : n // 2 + r, m // 2 - r : m // 2 + r] = 0.25
    u_full[1:-1, 1:-1] += 0.05 * noise_u
    v_full[1:-1, 1:-1] += 0.05 * noise_v
    for _ in range(steps):
        u, v = u_full[1:-1, 1:-1], v_full[1:-1, 1:-1]
        lu = u_full[0:-2, 1:-1] + u_full[1:-1, 0:-2] - 4 * u + u_full[1:-1, 2:] + u_full[2:, 1:-1]
        lv = v_full[0:-2, 1:-1] + v_full[1:-1, 0:-2] - 4 * v + v_full[1:-1, 2:] + v_full[2:, 1:-1]
        uvv = u * v * v
        u_full[1:-1, 1:-1] += du * lu - uvv + f * (1 - u)
        v_full[1:-1, 1:-1] += dv * lv + uvv - (f + k) * v
    return u_full, v_full


def mandelbrot(np_, xn, yn, maxiter=20, horizon=2.0):
    """4.2 "Uniform vectorization", ``mandelbrot_numpy``: float32 grid axes (``np.linspace(..., dtype=np.float32)``),
    ``C = X + Y[:, None]*1j``, the masked iteration ``N[I] = n; Z[I] = Z[I]**2 + C[I]``."""
    x = np_.linspace(-2.25, 0.75, xn, dtype=np.float32)
    y = np_.linspace(-1.25, 1.25, yn, dtype=np.float32)
    c = x + y[:, None] * 1j
    n_ = np_.zeros(c.shape, dtype=int)
    z = np_.zeros(c.shape, np.complex64)
    for n in range(maxiter):
        i = np_.less(abs(z), horizon)
        n_[i] = n
        z[i] = z[i] ** 2 + c[i]
    n_[n_ == maxiter - 1] = 0
    return z, n_


def mandelbrot_temporal(np_, xn, yn, itermax=20, horizon=2.0, xmin=-2.25):
    """4.3 "Temporal vectorization", ``mandelbrot_numpy_2``: the points still iterating, shrunk each step by their
    mask; ``np.multiply(Z, Z, Z)``, ``np.add(Z, C, Z)``, ``np.negative(I, I)`` (here ``np.logical_not``: NumPy refuses
    ``np.negative`` of bools); the index grids from ``np.meshgrid`` (the book's ``np.mgrid`` gives NumPy arrays) and
    ``reshape`` (the book sets ``.shape``). ``xmin`` 1.0: every point escapes, the loop ends on empty arrays."""
    xi, yi = np_.meshgrid(np_.arange(xn), np_.arange(yn), indexing="ij")
    xi, yi = xi.astype(np.uint32), yi.astype(np.uint32)
    x = np_.linspace(xmin, xmin + 3.0, xn, dtype=np.float32)[xi]
    y = np_.linspace(-1.25, 1.25, yn, dtype=np.float32)[yi]
    c = x + y * 1j
    n_ = np_.zeros(c.shape, dtype=np.uint32)
    z_ = np_.zeros(c.shape, dtype=np.complex64)
    xi, yi, c = xi.reshape(xn * yn), yi.reshape(xn * yn), c.reshape(xn * yn)
    z = np_.zeros(c.shape, np.complex64)
    for i in range(itermax):
        if not len(z):
            break
        np_.multiply(z, z, z)
        np_.add(z, c, z)
        escaped = abs(z) > horizon
        n_[xi[escaped], yi[escaped]] = i + 1
        z_[xi[escaped], yi[escaped]] = z[escaped]
        np_.logical_not(escaped, escaped)
        z = z[escaped]
        xi, yi = xi[escaped], yi[escaped]
        c = c[escaped]
    return z_.T, n_.T


def boids(np_, position, velocity, steps=3):
    """4.4 "Spatial vectorization", the Boids' ``Flock.run``: distances (``np.subtract.outer``, ``np.hypot``),
    the masks and counts, separation, alignment, cohesion (``np.dstack``, ``np.divide``/``np.multiply`` with
    ``out=`` and ``where=``, ``np.dot`` of a bool mask), the velocity limit and the wrap-around."""
    n = len(position)
    width, height = 64.0, 36.0
    max_velocity, max_acceleration = 2.0, 0.03
    for _ in range(steps):
        dx = np_.subtract.outer(position[:, 0], position[:, 0])
        dy = np_.subtract.outer(position[:, 1], position[:, 1])
        distance = np_.hypot(dx, dy)
        mask_0 = distance > 0
        mask_1 = distance < 10
        mask_2 = distance < 20
        mask_1 *= mask_0
        mask_2 *= mask_0
        mask_3 = mask_2
        mask_1_count = np_.maximum(mask_1.sum(axis=1), 1)
        mask_2_count = np_.maximum(mask_2.sum(axis=1), 1)
        mask_3_count = mask_2_count

        # Separation
        target = np_.dstack((dx, dy))
        target = np_.divide(target, distance.reshape(n, n, 1) ** 2, out=target, where=distance.reshape(n, n, 1) != 0)
        steer = (target * mask_1.reshape(n, n, 1)).sum(axis=1) / mask_1_count.reshape(n, 1)
        norm = np_.sqrt((steer * steer).sum(axis=1)).reshape(n, 1)
        steer = max_velocity * np_.divide(steer, norm, out=steer, where=norm != 0)
        steer -= velocity
        norm = np_.sqrt((steer * steer).sum(axis=1)).reshape(n, 1)
        np_.multiply(steer, max_acceleration / norm, out=steer, where=norm > max_acceleration)
        separation = steer

        # Alignment
        target = np_.dot(mask_2, velocity) / mask_2_count.reshape(n, 1)
        norm = np_.sqrt((target * target).sum(axis=1)).reshape(n, 1)
        target = max_velocity * np_.divide(target, norm, out=target, where=norm != 0)
        steer = target - velocity
        norm = np_.sqrt((steer * steer).sum(axis=1)).reshape(n, 1)
        np_.multiply(steer, max_acceleration / norm, out=steer, where=norm > max_acceleration)
        alignment = steer

        # Cohesion
        center = np_.dot(mask_3, position) / mask_3_count.reshape(n, 1)
        target = center - position
        norm = np_.sqrt((target * target).sum(axis=1)).reshape(n, 1)
        target = max_velocity * np_.divide(target, norm, out=target, where=norm != 0)
        steer = target - velocity
        norm = np_.sqrt((steer * steer).sum(axis=1)).reshape(n, 1)
        np_.multiply(steer, max_acceleration / norm, out=steer, where=norm > max_acceleration)
        cohesion = steer

        acceleration = 1.5 * separation + alignment + cohesion
        velocity += acceleration
        norm = np_.sqrt((velocity * velocity).sum(axis=1)).reshape(n, 1)
        np_.multiply(velocity, max_velocity / norm, out=velocity, where=norm > max_velocity)
        position += velocity
        position %= np_.array([width, height])
    return position, velocity


# ------------------------------------------------------------------------- 5 Problem vectorization


def compute(np_, x, y):
    """5.1 "Introduction": ``sum(x[i]*y[j])`` over all pairs as ``np.multiply.outer(x, y).sum()``, as
    ``(x[:, None]*y).sum()`` and as ``np.sum(x)*np.sum(y)``."""
    return np_.multiply.outer(x, y).sum(), (x[:, None] * y[None, :]).sum(), np_.sum(x) * np_.sum(y)


def bfs(np_, maze):
    """5.2 "Path finding", breadth-first search on the grid (``collections.deque``; the grid a NumPy array read one
    cell at a time), from (1, 1) to (-2, -2); the path written into a grid of the same shape."""
    start, goal = (1, 1), (maze.shape[0] - 2, maze.shape[1] - 2)
    walls = maze == 1
    dist = np_.full(maze.shape, -1)
    dist[start] = 0
    queue = collections.deque([start])
    cells = walls.tolist()  # (one read of the grid; the search itself is Python)
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((-1, 0), (0, -1), (0, 1), (1, 0)):
            nr, nc = r + dr, c + dc
            if not cells[nr][nc] and dist[nr, nc] < 0:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist, int(dist[goal])


def value_iteration(np_, maze, gamma=0.99, steps=60):
    """5.2 "Path finding", the NumPy approach (Bellman-Ford value iteration): the goal's value 1 diffused to the
    4 neighbours with the discount ``gamma`` (``np.maximum`` of the shifted slices, the book's ``as_strided``
    windows being memory layout), zero on the walls; the greedy path up the gradient from the start."""
    paths = 1 - maze
    g = np_.zeros(maze.shape)
    goal = (maze.shape[0] - 2, maze.shape[1] - 2)
    for _ in range(steps):
        g[goal] = 1
        best = np_.maximum(np_.maximum(g[:-2, 1:-1], g[1:-1, :-2]), np_.maximum(g[1:-1, 2:], g[2:, 1:-1]))
        g[1:-1, 1:-1] = np_.maximum(g[1:-1, 1:-1], gamma * best) * paths[1:-1, 1:-1]
    g[goal] = 1
    path = [(1, 1)]
    while path[-1] != goal and len(path) < g.size:
        r, c = path[-1]
        around = np_.array([g[r - 1, c], g[r, c - 1], g[r, c + 1], g[r + 1, c]])
        if float(around.max()) <= float(g[r, c]):
            break
        dr, dc = ((-1, 0), (0, -1), (0, 1), (1, 0))[int(np_.argmax(around))]
        path.append((r + dr, c + dc))
    return g, len(path)


def _set_bnd(b, x):
    """Stable fluids' boundary: the ring mirrors (``b`` 1: ``u`` negated at the left/right walls, 2: ``v`` at the
    top/bottom), the corners averaged."""
    x[0, 1:-1] = -x[1, 1:-1] if b == 1 else x[1, 1:-1]
    x[-1, 1:-1] = -x[-2, 1:-1] if b == 1 else x[-2, 1:-1]
    x[1:-1, 0] = -x[1:-1, 1] if b == 2 else x[1:-1, 1]
    x[1:-1, -1] = -x[1:-1, -2] if b == 2 else x[1:-1, -2]
    x[0, 0] = 0.5 * (x[1, 0] + x[0, 1])
    x[0, -1] = 0.5 * (x[1, -1] + x[0, -2])
    x[-1, 0] = 0.5 * (x[-2, 0] + x[-1, 1])
    x[-1, -1] = 0.5 * (x[-2, -1] + x[-1, -2])


def _lin_solve(b, x, x0, a, c, iters=10):
    for _ in range(iters):
        x[1:-1, 1:-1] = (x0[1:-1, 1:-1] + a * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])) / c
        _set_bnd(b, x)


def fluid_diffuse(np_, d0):
    """5.3 "Fluid dynamics", stable fluids' ``diffuse``: Jacobi sweeps of ``lin_solve`` on the inner grid and
    ``set_bnd``."""
    n = d0.shape[0] - 2
    a = 0.1 * 0.0001 * n * n
    d = np_.zeros(d0.shape)
    _lin_solve(0, d, d0, a, 1 + 4 * a)
    return d


def fluid_advect(np_, d0, u, v):
    """5.3 ``advect``, vectorized: the back-traced positions from ``np.indices``-like grids (``np.meshgrid``),
    ``np.clip``, ``astype(int)``, the bilinear read with fancy indices, written into ``d[1:-1, 1:-1]``."""
    n = d0.shape[0] - 2
    dt0 = 0.1 * n
    i, j = np_.meshgrid(np_.arange(1, n + 1), np_.arange(1, n + 1), indexing="ij")
    x = np_.clip(i - dt0 * u[1:-1, 1:-1], 0.5, n + 0.5)
    y = np_.clip(j - dt0 * v[1:-1, 1:-1], 0.5, n + 0.5)
    i0 = x.astype(int)
    i1 = i0 + 1
    j0 = y.astype(int)
    j1 = j0 + 1
    s1 = x - i0
    s0 = 1 - s1
    t1 = y - j0
    t0 = 1 - t1
    d = np_.zeros(d0.shape)
    d[1:-1, 1:-1] = s0 * (t0 * d0[i0, j0] + t1 * d0[i0, j1]) + s1 * (t0 * d0[i1, j0] + t1 * d0[i1, j1])
    _set_bnd(0, d)
    return d


def fluid_project(np_, u, v):
    """5.3 ``project``: the divergence of the velocity, the pressure by ``lin_solve``, its gradient taken off."""
    n = u.shape[0] - 2
    h = 1.0 / n
    div = np_.zeros(u.shape)
    p = np_.zeros(u.shape)
    div[1:-1, 1:-1] = -0.5 * h * (u[2:, 1:-1] - u[:-2, 1:-1] + v[1:-1, 2:] - v[1:-1, :-2])
    _set_bnd(0, div)
    _lin_solve(0, p, div, 1, 4)
    u[1:-1, 1:-1] -= 0.5 * (p[2:, 1:-1] - p[:-2, 1:-1]) / h
    v[1:-1, 1:-1] -= 0.5 * (p[1:-1, 2:] - p[1:-1, :-2]) / h
    _set_bnd(1, u)
    _set_bnd(2, v)
    return u, v, div, p


# ------------------------------------------------------------------------- the book's literal forms


def find_subsequence(np_, seq, sub):
    """2.2 "Readability vs speed", ``function_2``: the starts of ``sub`` in ``seq`` from ``np.correlate`` against
    ``np.dot(sub, sub)``, checked with ``np.take`` of the candidate windows and ``np.all``."""
    target = np_.dot(sub, sub)
    candidates = np_.where(np_.correlate(seq, sub, mode="valid") == target)[0]
    check = candidates[:, np.newaxis] + np_.arange(len(sub))
    mask = np_.all((np_.take(seq, check) == sub), axis=-1)
    return candidates[mask]


def anatomy_view_write(np_):
    """3.3 "Views and copies": ``Z_view = Z[:3]; Z_view[...] = 1`` changes ``Z``."""
    z = np_.zeros(9)
    z_view = z[:3]
    z_view[...] = 1
    return z


def mandelbrot_temporal_shape_set(np_, xn, yn, itermax=20, horizon=2.0):
    """4.3 ``mandelbrot_numpy_2`` with the book's ``Xi.shape = Yi.shape = C.shape = xn*yn`` (a reshape in place)."""
    xi, yi = np_.meshgrid(np_.arange(xn), np_.arange(yn), indexing="ij")
    xi, yi = xi.astype(np.uint32), yi.astype(np.uint32)
    c = np_.linspace(-2.25, 0.75, xn, dtype=np.float32)[xi] + np_.linspace(-1.25, 1.25, yn, dtype=np.float32)[yi] * 1j
    n_ = np_.zeros(c.shape, dtype=np.uint32)
    xi.shape = yi.shape = c.shape = xn * yn
    z = np_.zeros(c.shape, np.complex64)
    for i in range(itermax):
        np_.multiply(z, z, z)
        np_.add(z, c, z)
        escaped = abs(z) > horizon
        n_[xi[escaped], yi[escaped]] = i + 1
        keep = ~escaped
        z, xi, yi, c = z[keep], xi[keep], yi[keep], c[keep]
    return n_.T


def mandelbrot_mgrid(np_, xn, yn):
    """4.3's ``Xi, Yi = np.mgrid[0:xn, 0:yn]`` (NumPy index grids) indexing the mesh's ``np.linspace`` axes."""
    xi, yi = np.mgrid[0:xn, 0:yn]
    x = np_.linspace(-2.25, 0.75, xn, dtype=np.float32)[xi.astype(np.uint32)]
    y = np_.linspace(-1.25, 1.25, yn, dtype=np.float32)[yi.astype(np.uint32)]
    return x + y * 1j


def boids_wraparound(np_, position, velocity):
    """4.4 ``Flock.run``'s wrap-around ``position += (width, height); position %= (width, height)`` (a Python
    tuple as an operand)."""
    position += velocity
    position += (64.0, 36.0)
    position %= (64.0, 36.0)
    return position


def gray_scott_structured(np_):
    """4.2 "Reaction diffusion"'s board ``np.zeros((n+2, n+2), [('U', np.double), ('V', np.double)])``."""
    z = np_.zeros((10, 10), [("U", np.double), ("V", np.double)])
    return z["U"], z["V"]


def dart_sampling(np_, p, r=0.2, k=10):
    """5.4 "Blue noise sampling", ``DART_sampling_numpy``: all the distances at once (the book's
    ``scipy.spatial.distance.cdist(P, P)``, here by broadcasting), ``D[range(n), range(n)] = 1e10``, then the
    points accepted in order while ``D[i, indices].min() > r`` (a Python list as an index)."""
    n = len(p)
    d = np_.sqrt(((p[:, np.newaxis, :] - p[np.newaxis, :, :]) ** 2).sum(axis=-1))
    d[range(n), range(n)] = 1e10
    points, indices = [p[0]], [0]
    i, last_success = 1, 0
    while i < n and i - last_success < k:
        if d[i, indices].min() > r:
            indices.append(i)
            points.append(p[i])
            last_success = i
        i += 1
    return np_.stack(points), p[indices], d[np_.ix_(indices, indices)]


def life_ravel_write(np_, z):
    """4.2's first NumPy Game of Life as the book writes it: the rules' cells from ``np.argwhere`` written into
    ``Z_ = Z.ravel()`` (a view of ``Z`` in NumPy), the border then cleared in ``Z``."""
    n = _life_neighbours(np_, z)
    n_ = n.ravel()
    z_ = z.ravel()
    r1 = np_.argwhere((z_ == 1) & (n_ < 2))
    r2 = np_.argwhere((z_ == 1) & (n_ > 3))
    r3 = np_.argwhere((z_ == 1) & ((n_ == 2) | (n_ == 3)))
    r4 = np_.argwhere((z_ == 0) & (n_ == 3))
    z_[r1] = 0
    z_[r2] = 0
    z_[r3] = z_[r3]
    z_[r4] = 1
    z[0, :] = z[-1, :] = z[:, 0] = z[:, -1] = 0
    return z


def fractal_dimension(np_, z, threshold=0.9):
    """4.2 "Uniform vectorization"'s exercise, the Minkowski-Bouligand (box-counting) dimension: boxes of size ``k``
    summed by ``np.add.reduceat`` along both axes, the boxes neither empty nor full counted with ``np.where``, the
    slope of ``np.polyfit`` on the logs (``counts`` a Python list, as the book's)."""

    def boxcount(z, k):
        s = np_.add.reduceat(
            np_.add.reduceat(z, np_.arange(0, z.shape[0], k), axis=0), np_.arange(0, z.shape[1], k), axis=1
        )
        return len(np_.where((s > 0) & (s < k * k))[0])

    z = z < threshold
    p = min(z.shape)
    n = 2 ** np.floor(np.log(p) / np.log(2))
    n = int(np.log(n) / np.log(2))
    sizes = 2 ** np_.arange(n, 1, -1)
    counts = []
    for size in sizes:
        counts.append(boxcount(z, int(size)))
    coeffs = np_.polyfit(np_.log(sizes), np_.log(np_.array(counts)), 1)
    return -coeffs[0], counts


def fractal_dimension_list(np_, z):
    """The box-counting exercise's last line as the book writes it: ``np.polyfit(np.log(sizes), np.log(counts), 1)``
    with ``counts`` a Python list."""
    sizes = 2 ** np_.arange(5, 1, -1)
    counts = [int(((z[::k, ::k]) < 0.5).sum()) for k in (32, 16, 8, 4)]
    return -np_.polyfit(np_.log(sizes), np_.log(counts), 1)[0]


def build_maze(np_, shape=(15, 17), complexity=0.75, density=0.1, seed=5):
    """5.2 "Path finding", ``build_maze``: the walled board, the islands' starting points (``np.random.normal``,
    clipped with ``np.maximum``/``np.minimum``, scaled, made even), each island grown by random 2-steps while the cell
    two away is free (``Z[next_2] == 0``, ``Z[next_1] = Z[next_2] = 1``); the random draws from a seeded host
    generator, the same for both runs. ``P*[shape[1], shape[0]]`` (a Python list operand) takes an array."""
    rng = np.random.default_rng(seed)
    shape = ((shape[0] // 2) * 2 + 1, (shape[1] // 2) * 2 + 1)
    n_complexity = int(complexity * (shape[0] + shape[1]))
    n_density = int(density * (shape[0] * shape[1]))
    z = np_.zeros(shape, dtype=bool)
    z[0, :] = z[-1, :] = z[:, 0] = z[:, -1] = 1
    p = np_.asarray(rng.normal(0, 0.5, (n_density, 2)))
    p = 0.5 - np_.maximum(-0.5, np_.minimum(p, +0.5))
    p = (p * np_.array([shape[1], shape[0]])).astype(int)
    p = 2 * (p // 2)
    for i in range(n_density):
        t = z[2:-2:2, 2:-2:2]
        if t.sum() == t.size:
            break
        x, y = p[i]
        z[y, x] = 1
        for _ in range(n_complexity):
            neighbours = []
            if x > 1:
                neighbours.append([(y, x - 1), (y, x - 2)])
            if x < shape[1] - 2:
                neighbours.append([(y, x + 1), (y, x + 2)])
            if y > 1:
                neighbours.append([(y - 1, x), (y - 2, x)])
            if y < shape[0] - 2:
                neighbours.append([(y + 1, x), (y + 2, x)])
            if len(neighbours):
                next_1, next_2 = neighbours[rng.integers(len(neighbours))]
                if z[next_2] == 0:
                    z[next_1] = z[next_2] = 1
                    y, x = next_2
            else:
                break
    return z


def _build_graph(maze):
    height, width = maze.shape
    graph = {(i, j): [] for j in range(width) for i in range(height) if not maze[i][j]}
    for row, col in graph.keys():
        if row < height - 1 and not maze[row + 1][col]:
            graph[(row, col)].append(("S", (row + 1, col)))
            graph[(row + 1, col)].append(("N", (row, col)))
        if col < width - 1 and not maze[row][col + 1]:
            graph[(row, col)].append(("E", (row, col + 1)))
            graph[(row, col + 1)].append(("W", (row, col)))
    return graph


def breadth_first(np_, maze):
    """5.2 ``BreadthFirst`` as the book writes it: ``build_graph`` from ``maze[i][j]`` (chained indices, one cell at a
    time), the queue of paths, the path found as ``np.array(path)``."""
    start, goal = (1, 1), (maze.shape[0] - 2, maze.shape[1] - 2)
    queue = collections.deque([([start], start)])
    visited = set()
    graph = _build_graph(maze)
    while queue:
        path, current = queue.popleft()
        if current == goal:
            return np_.array(path)
        if current in visited:
            continue
        visited.add(current)
        for _direction, neighbour in graph[current]:
            p = list(path)
            p.append(neighbour)
            queue.append((p, neighbour))
    return None


def maze_and_path(np_):
    """``build_maze`` then ``BreadthFirst`` on it (from (1, 1) to the far corner; the maze's inner walls drawn)."""
    z = build_maze(np_)
    z[1, 1] = z[-2, -2] = 0
    return z, breadth_first(np_, z)
