"""The named ops, fused paths: one kernel or one NumPy pass per block for the training step's hot ops."""
