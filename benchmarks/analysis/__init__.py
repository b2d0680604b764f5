"""Analyses of trained models: the attention spectrum of the paper's Fig. 1."""
