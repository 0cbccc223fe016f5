#!/bin/sh
# For the A-Tune twin (no setup step in A-Tune's format): write the prefix only if missing.
[ -f "$HONE_WORKDIR/nginx/nginx.conf" ] || exec sh "$(dirname "$0")/setup.sh"
