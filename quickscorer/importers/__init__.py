"""One importer per source format, each writing a neutral :class:`~quickscorer.ensemble.Ensemble`."""
