"""Typed exceptions of shardarray.

Every error raised on bad user input is one of these; each is a subclass of
``ValueError`` or ``TypeError`` so that generic handlers keep working, and each
message names the dims, sizes, axes and mesh involved and says what to do.
"""

from __future__ import annotations

from numpy import linalg as _np_linalg


class ShardArrayError(Exception):
    """Base class of every shardarray error."""


class MeshError(ShardArrayError, ValueError):
    """A mesh is malformed, or two arrays live on meshes that differ."""


class LayoutError(ShardArrayError, ValueError):
    """A layout names an unknown dim or axis, or uses one mesh axis twice."""


class DimensionError(ShardArrayError, ValueError):
    """Dim names or sizes do not fit: duplicates, size mismatches, unknown dims."""


class ArgumentError(ShardArrayError, ValueError):
    """An argument's value is outside its legal range (a negative size, a probability > 1, an unknown name)."""


class DivisionByZeroError(ArgumentError, ZeroDivisionError):
    """A quotient with nothing to divide by: ``np.average`` with weights summing to zero along a slice, or of an
    empty slice whose result is empty too. An ``ArgumentError`` (a ``ValueError``) that is also the
    ``ZeroDivisionError`` NumPy raises there, so ``except ZeroDivisionError`` written for NumPy catches it."""


class MissingFileError(ArgumentError, FileNotFoundError):
    """``sa.io``: no file or array at the path; also the ``FileNotFoundError`` an ``except`` for it expects."""


class ExistingFileError(ArgumentError, FileExistsError):
    """``sa.io``'s writers: the target exists and ``overwrite=True`` was not given; also a ``FileExistsError``."""


class BackendError(ShardArrayError, TypeError):
    """The operation is not possible on this backend (e.g. ``numpy()`` on ``meta``)."""


class DTypeError(ShardArrayError, TypeError):
    """A dtype is unknown or unsupported by the operation."""


class CastError(ShardArrayError, ValueError, OverflowError):
    """A value cannot be written into an array's dtype without changing it: a Python integer out of the integer
    dtype's range, NaN or inf into integers (as NumPy 2 refuses). Also an ``OverflowError``, as NumPy's."""


class CommError(ShardArrayError, RuntimeError):
    """A collective failed inside the communication library (NCCL); the message names the collective, axes and mesh."""


class TapeError(ShardArrayError, TypeError):
    """A value being differentiated was used in a way the tape cannot follow (e.g. ``float(x)`` inside ``grad``)."""


class GraphError(ShardArrayError, ValueError):
    """``sa.graphed``: the function did what a CUDA graph cannot record (a host read, a synchronisation)."""


class CheckpointError(ShardArrayError, ValueError):
    """A checkpoint cannot be saved or loaded: a missing or corrupted file, an unknown format version, a tree or
    array that does not match the target; the message names the path and the array."""


class LinAlgError(ShardArrayError, _np_linalg.LinAlgError):
    """A matrix has no factorization of the kind asked for (e.g. ``sa.linalg.cholesky`` of a matrix that is not
    positive definite); the message names the matrix dims and sizes. A ``ValueError`` and a
    ``numpy.linalg.LinAlgError``, so ``except numpy.linalg.LinAlgError`` catches it too."""


class MatrixShapeError(DimensionError, LinAlgError):
    """A linear-algebra function given what is not a (stack of) matrices of the shape it needs: fewer than 2 dims,
    or matrices that are not square where they must be. A ``DimensionError`` that is also the ``LinAlgError`` NumPy
    raises there, so ``except numpy.linalg.LinAlgError`` catches it."""


class OutOfBoundsError(DimensionError, IndexError):
    """An index or axis out of range for its dim or array: a ``DimensionError`` that is also the ``IndexError``
    NumPy raises there (``x[5]`` of 5 entries, ``np.take``, ``x.item(9)``; NumPy's ``AxisError`` for an axis is an
    ``IndexError`` too), so ``except IndexError`` written for NumPy catches it."""


class IndexingError(DimensionError, IndexError):
    """A positional index that does not fit the array: too many indices, index arrays whose shapes do not
    broadcast together, a boolean mask whose shape differs from the axes it covers, two Ellipses. A
    ``DimensionError`` that is also the ``IndexError`` NumPy raises there, so ``except IndexError`` catches it."""


class IndexTypeError(DTypeError, IndexError):
    """An index of a kind that cannot index: a float or a string, an array of floats. A ``DTypeError`` (a
    ``TypeError``) that is also the ``IndexError`` NumPy raises there, so ``except IndexError`` catches it."""


class ExportError(LayoutError, BufferError):
    """``__dlpack__``/``np.from_dlpack`` of an array that no single buffer holds (split, or a pending sum): a
    ``LayoutError`` that is also the ``BufferError`` the array API's DLPack protocol names, so consumers that fall back
    to another conversion on ``BufferError`` (``np.asarray(x)``, the explicit gather) do."""


class ZeroDimError(DimensionError, TypeError):
    """``len()``/``iter()`` of a 0-d ShardArray: a DimensionError that is also the TypeError Python expects."""


class CopyWriteWarning(UserWarning):
    """A write into the copy a positional basic index returned (``x[1:-1, ::2][mask] = v``, ``out=y[::2]``) was lost:
    the copy was freed without being read, where NumPy's view would have carried the write into the array it was read
    from (``shardarray.copies``). Write into that array directly, or keep the copy on purpose (``x[1:3].copy()``)."""


class GatherWarning(UserWarning):
    """An op fell back to gathering a split array (an allgather of blocks every device then holds whole); the
    message names the op and the bytes each device receives. Silence it with ``warnings.filterwarnings``,
    or avoid it as the message says."""
