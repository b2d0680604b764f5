"""Argument validation (`validation`) and files written whole (`files`), shared by the library
and its programs."""
