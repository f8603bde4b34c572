"""The kinds of event in a recorded op graph (``plan.graph``): an op call, a free, an alias (a wrap of an array's
blocks) and a guard (Python between the ops branching on arrays' layouts)."""

CALL, FREE, ALIAS, GUARD = 0, 1, 2, 3
