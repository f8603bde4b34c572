"""The named ops, elementwise ops: arithmetic and comparisons, unary and binary math, logical and bitwise, operators."""
