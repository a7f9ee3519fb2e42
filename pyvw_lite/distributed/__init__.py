"""Scale-out: an executor interface (serial, local processes, Dask) and the sharded algorithms
that run on it (map-reduce batch EM)."""
