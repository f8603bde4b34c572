"""The named ops, indexing: take, slicing, in-place writes, boolean masks, take_along, nonzero."""
