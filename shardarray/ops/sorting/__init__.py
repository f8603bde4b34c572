"""The named ops, sorting and sets: sort/argsort (sample sort), unique, searchsorted, top_k."""
