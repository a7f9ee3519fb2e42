"""Input and output: VW text, the binary cache, model files, predictions and progress."""
