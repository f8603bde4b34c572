"""The named ops, reductions: sum/mean/max/..., NaN-skipping reductions, softmax and logsumexp, scans, argmax."""
