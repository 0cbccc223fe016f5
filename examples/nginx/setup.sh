#!/bin/sh
# Once per run: a private nginx prefix in $HONE_WORKDIR with a fresh config and a 4 KiB page.
set -eu
prefix="$HONE_WORKDIR/nginx"
mkdir -p "$prefix/html"
sed -e "s/PORT/$HONE_PORT/" -e "s/USER/$(id -un)/" "$(dirname "$0")/nginx.conf.in" \
  > "$prefix/nginx.conf"
head -c 4096 /dev/zero | tr '\0' 'x' > "$prefix/html/4k.html"
