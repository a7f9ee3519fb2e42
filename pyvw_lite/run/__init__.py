"""The run: passes over a source (text or cache) with holdout, the progress table, predictions
and model files, over one learner (``driver``); its set-up (``plan``)."""
