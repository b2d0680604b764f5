"""Argument validation (`validation`), files written whole (`files`) and TensorFlow's start-up
lines kept quiet (`quiet`), shared by the library and its programs."""
