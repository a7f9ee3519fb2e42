"""Python APIs beyond Workspace: river-style online learning, scikit-learn estimators."""

# The APIs live in the modules (pyvw_lite.api.sklearn needs scikit-learn): nothing to import here.
__all__: list[str] = []
