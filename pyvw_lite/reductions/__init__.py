"""Reductions that sit on top of the base learner (feature interactions, and later multiclass,
active learning).  Each module's ``setup`` returns ``None`` when its options are absent."""
