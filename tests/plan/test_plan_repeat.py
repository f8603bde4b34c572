"""``plan.repeat.Notes.scale`` on a made-up walk: the peak of a path with more copies of its repeated runs.

The figures of real probe walks are held against full traces in ``test_plan_deep.py``; this test walks two runs
of three copies by hand (a forward-like run that leaves 10 bytes live per copy, then a backward-like run that
rises 50 and frees 10 per copy) to check where the scaled peak comes from, including two runs that meet at one
event (the end of one is the start of the next).
"""

from __future__ import annotations

from shardarray.plan.events import FREE
from shardarray.plan.repeat import Notes, Span


def _walk(gap: int) -> Notes:
    """Two runs of 3 one-event copies, ``gap`` events apart; each copy's peak and end level as described above."""
    a, b = Span(0, 1, 3), Span(3 + gap, 1, 3)
    events = [(FREE, 999)] * (b.start + 3 + 1)  # (a value nobody holds: every copy reads the same state)
    notes = Notes([a, b], events)
    state: tuple[dict, dict, dict, dict] = ({}, {}, {}, {})
    mem, flops = 0, 0.0
    peaks = {0: 15, 1: 25, 2: 35}  # run a's copies: up 15, down to +10
    for i in range(len(events) + 1):
        peak = mem
        if i - 1 in peaks:  # the stretch that ends here is copy i - 1 of run a
            peak, mem, flops = peaks[i - 1], mem + 10, flops + 1.0
        elif b.start <= i - 1 < b.start + 3:  # copy of run b: up 50, down to -10
            peak, mem, flops = mem + 50, mem - 10, flops + 2.0
        if i in notes.marks:
            notes.mark(i, mem, peak, (flops, 0.0, 0.0, 0.0, 0.0, 0.0), {"float32": flops}, *state)
        elif i == len(events):
            notes.end(peak)
    return notes


def test_the_scaled_peak_is_placed_where_the_added_copies_move_it():
    for gap in (0, 2):  # (0: run b starts where run a ends)
        notes = _walk(gap)
        for extra in (0, 1, 5):
            sums, by_dtype, peak = notes.scale(extra, (9.0, 0.0, 0.0, 0.0, 0.0, 0.0), {"float32": 9.0})
            # run a's last copy peaks at 35 + 10 extra; run b's first copy starts at 30 + 10 extra and rises 50
            assert peak == max(35 + 10 * extra, 80 + 10 * extra), (gap, extra, peak)
            assert sums[0] == 9.0 + 3.0 * extra and by_dtype == {"float32": 9.0 + 3.0 * extra}
