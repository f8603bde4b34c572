"""Misuse cases of ``sa.nn.data.pattern_arrays`` / ``pattern_rows`` (batches made from each device's own rows)."""

from __future__ import annotations

from misuse import Case

import shardarray as sa


def _mesh():
    return sa.Mesh({"row": 2, "col": 2})


CASES = [
    Case("pattern-arrays-not-a-mesh", lambda: sa.nn.data.pattern_arrays({"row": 2}, 0, 1, 4, 8, 16), sa.MeshError,
         ("dict", "{'row': 2}"), ("sa.Mesh(",)),
    Case("pattern-arrays-negative-batch", lambda: sa.nn.data.pattern_arrays(_mesh(), 0, 1, -3, 8, 16),
         sa.DimensionError, ("batch=-3",), (">= 0",)),
    Case("pattern-arrays-negative-step", lambda: sa.nn.data.pattern_arrays(_mesh(), 0, -1, 4, 8, 16),
         sa.DimensionError, ("step=-1",), (">= 0",)),
    Case("pattern-arrays-vocab-zero", lambda: sa.nn.data.pattern_arrays(_mesh(), 0, 1, 4, 8, 0),
         sa.DimensionError, ("vocab=0",), (">= 1",)),
    Case("pattern-arrays-unknown-axis", lambda: sa.nn.data.pattern_arrays(_mesh(), 0, 1, 4, 8, 16,
                                                                        layout={"batch": "rows"}),
         sa.LayoutError, ("'rows'",), ("row",)),
    Case("pattern-rows-empty-range-bad-seq-len", lambda: sa.nn.data.pattern_rows(0, 1, 3, 3, 0, 16),
         sa.DimensionError, ("seq_len=0",), (">= 1",)),
    Case("pattern-rows-stop-before-start", lambda: sa.nn.data.pattern_rows(0, 1, 4, 2, 8, 16),
         sa.DimensionError, ("stop=2", "start=4"), ("start <= stop",)),
]
