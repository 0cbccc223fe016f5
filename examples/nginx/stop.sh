#!/bin/sh
# Stop the example's nginx (quickly: a fast shutdown is enough for a benchmark server).
prefix="$HONE_WORKDIR/nginx"
[ -f "$prefix/nginx.pid" ] || exit 0
kill -TERM "$(cat "$prefix/nginx.pid")" 2>/dev/null || true
for _ in $(seq 50); do [ -f "$prefix/nginx.pid" ] || exit 0; sleep 0.1; done
