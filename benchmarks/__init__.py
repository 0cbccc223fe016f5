"""Benchmarks: speed and quality figures, run side by side with peers."""
