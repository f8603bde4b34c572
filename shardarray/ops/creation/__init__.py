"""The named ops, construction: asarray/full/zeros, random arrays, arrays from process-local blocks."""
