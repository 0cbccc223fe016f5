"""Self-contained HTML reports."""
