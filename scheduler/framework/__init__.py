"""Volcano-style session framework: model, node arrays, session, statement, evaluation."""
