"""Argument validation shared by the library and its programs (`validation`)."""
