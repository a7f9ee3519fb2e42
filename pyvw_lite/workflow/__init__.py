"""The rater-task workflow around the learners: convert crowd answers to VW lines and
predictions back, split train/test, evaluate with error bars, run a configured experiment."""
