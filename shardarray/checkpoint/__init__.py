"""Checkpoints: save a tree of ShardArrays from any layout, load it onto any other; export one plain file.

``save`` writes a directory (a JSON manifest and one safetensors file per
process, each distinct block once) and commits it by an atomic rename;
``load`` reads into a target tree's meshes, layouts and dtypes (or by a
mesh's rules), each device reading only the saved bytes its block needs;
``export_safetensors`` writes the global arrays into one standard file. No
pickle anywhere. See ``checkpoint.manifest`` for the format. Complex64 and
complex128 arrays are stored as float32/float64 pairs (a trailing axis of 2,
``torch.view_as_real``'s layout, the same bytes) and load back complex; an
export holds the pairs under the array's name.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> params = {"w": sa.random.normal(mesh, {"a": 4, "b": 6}, seed=0, layout={"a": "row", "b": "col"})}
    >>> sa.checkpoint.save("/tmp/ck0", {"params": params, "step": 7}, overwrite=True)
    PosixPath('/tmp/ck0')
    >>> tree = sa.checkpoint.load("/tmp/ck0", mesh=sa.Mesh({"model": 4}, rules={"b": "model"}))
    >>> tree["step"], tree["params"]["w"].layout
    (7, {'b': ('model',)})
"""

from .export import export_safetensors
from .manifest import FORMAT, VERSION
from .reader import load
from .writer import save

__all__ = ["FORMAT", "VERSION", "export_safetensors", "load", "save"]
