"""The workload under tuning: a process hone starts, or start/stop commands, and readiness."""
