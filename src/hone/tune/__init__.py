"""Offline dynamic tuning: the trial loop, confirmation of the winner and safe application."""
