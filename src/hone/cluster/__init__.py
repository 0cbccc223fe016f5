"""Cluster projects: knobs put on groups of hosts reached over OpenSSH (docs/cluster.md)."""
