#!/bin/sh
# Start the example's nginx in its private prefix (it daemonises; stop.sh stops it).
set -eu
prefix="$HONE_WORKDIR/nginx"
exec nginx -e "$prefix/error.log" -p "$prefix" -c "$prefix/nginx.conf"
