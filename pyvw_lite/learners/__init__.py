"""Bottom of the reduction stack: the linear learner, losses and their numeric kernels."""
