"""``sa.io``: arrays from files and to files, each process reading and writing only its own blocks.

Readers take a path and a mesh and give an array split as ``layout`` says
(None: axis ``k`` over mesh axis ``k``); with ``dims=`` the result is a named
``ShardArray``, without them a positional ``shardarray.array_api`` ``Array``.
Each device reads only its block; under MPI (``comm="mpi"``) each process
reads and writes only its own. Writers write each distinct block once.

* ``.npy``: ``read_npy``/``write_npy`` (memory-mapped; nothing beyond NumPy needed).
* Zarr v3: ``read_zarr``/``write_zarr`` (zarr-python: ``pip install 'shardarray[zarr]'``).
* HDF5: ``read_hdf5``/``write_hdf5`` (h5py: ``pip install 'shardarray[hdf5]'``).

Example:
    >>> import tempfile, os
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.arange(12.0).reshape(4, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    >>> path = sa.io.write_npy(os.path.join(tempfile.mkdtemp(), "x.npy"), x)
    >>> y = sa.io.read_npy(path, mesh, dims=("a", "b"), layout={"a": "row"})
    >>> bool((y == x).all())
    True
"""

from __future__ import annotations

from .hdf5 import read_hdf5, write_hdf5
from .npy import read_npy, write_npy
from .zarr_io import read_zarr, write_zarr

__all__ = ["read_hdf5", "read_npy", "read_zarr", "write_hdf5", "write_npy", "write_zarr"]
