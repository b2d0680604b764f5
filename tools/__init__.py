"""Checkpoint tools that are not library features (as keras-hub keeps them in tools/)."""
