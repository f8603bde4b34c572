"""``CommLog.summary()`` aggregates records by (op, axes, dtype) with counts and totals."""

from __future__ import annotations

import shardarray as sa


def test_summary_groups_by_op_axes_dtype():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"batch": 4, "io": 6}, layout={"io": "col", "batch": "row"})
    with sa.comm_log() as log:
        for _ in range(5):
            x.sum("io").resolve()
        x.astype("float64").sum("io").resolve()
        x.sum("batch").resolve()
    groups = {k: (c, e, b, w) for k, c, e, b, w in log.grouped()}
    assert sum(c for c, *_ in groups.values()) == len(log.records)
    assert groups[("allreduce", ("col",), "float32")][0] == 5
    assert groups[("allreduce", ("col",), "float64")][0] == 1
    assert groups[("allreduce", ("row",), "float32")][0] == 1
    for (op, axes, dtype), (count, elements, nbytes, wire) in groups.items():
        recs = [r for r in log.records if (r.op, r.axes, r.dtype) == (op, axes, dtype)]
        assert (count, elements, nbytes, wire) == (len(recs), sum(r.elements for r in recs),
                                                   sum(r.bytes for r in recs), sum(r.wire_bytes for r in recs))
    lines = log.summary().splitlines()
    assert len(lines) == 2 + len(groups) + 1  # header, rule, one line per group, total
    assert lines[-1].split()[:3] == ["total", str(len(log.records)), str(int(log.total("elements")))]
    assert len(log.summary(per_record=True).splitlines()) == 2 + len(log.records) + 1


def test_summary_of_an_empty_log():
    log = sa.comm_log()
    assert log.summary().splitlines()[-1].split() == ["total", "0", "0", "0", "0"]


def test_show_summarises_a_16x32_mesh():
    mesh = sa.Mesh({"rows": 16, "cols": 32}, backend="meta")
    x = sa.zeros(mesh, {"batch": 256, "d_ff": 1000003}, layout={"batch": "rows", "d_ff": "cols"})
    text = sa.show(x)
    lines = text.splitlines()
    assert len(lines) == 5 and max(len(line) for line in lines) < 120
    assert "split over rows into 16 blocks [0:16] [16:32] ... [240:256]" in text
    assert "[968781:1000003]" in text
    assert "(16, 31251) on 496, (16, 31222) on 16" in text
    small = sa.show(sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "io": 4}, layout={"batch": "row"}))
    assert "batch[4:8]" in small and "summary" not in small
