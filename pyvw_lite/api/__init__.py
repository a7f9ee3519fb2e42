"""Python APIs beyond Workspace: river-style online learning, scikit-learn estimators."""
