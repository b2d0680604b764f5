"""Argument checks, files written whole and quiet start-up, shared by library and programs."""
