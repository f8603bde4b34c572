"""Array operations: creation, random, elementwise, reduce, einsum, relayout, show."""
