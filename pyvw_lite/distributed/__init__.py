"""Scale-out: an executor interface (serial, local processes, Dask) and the sharded algorithms
that run on it (online learning with per-pass averaging, map-reduce batch EM)."""
