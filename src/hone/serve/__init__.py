"""`hone serve`: the REST API and the web UI over studies, diagnoses, live metrics and profiles,
built on the same library calls as the command line."""
