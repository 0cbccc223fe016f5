"""The `hone` command line."""
