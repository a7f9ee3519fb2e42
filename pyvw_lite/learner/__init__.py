"""The learner: built from options, it learns from and predicts on parsed batches (``core``),
with its parts: configuration, example checks, model options, model files, audit text and the
compile helper of its kernels.  It opens no data files and prints no progress table."""
