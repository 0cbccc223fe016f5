#!/bin/sh
# start|stop the A-Tune twin's PostgreSQL (as the postgres user) with postgresql.options;
# the cluster is created on first start in /tmp/hone-postgresql (see ../../postgresql/setup.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=/usr/lib/postgresql/15/bin
data=/tmp/hone-postgresql/data
socket=/tmp/hone-postgresql
port="${HONE_PORT:-5499}"
case "$1" in
  start)
    [ -d "$data" ] || HONE_PORT="$port" sh "$here/../../postgresql/setup.sh"
    . "$here/postgresql.options"
    runuser -u postgres -- "$bin/pg_ctl" -D "$data" -w -l "$socket/server.log" -o "-p $port -k $socket \
      -c listen_addresses=127.0.0.1 -c shared_buffers=$SHARED_BUFFERS \
      -c synchronous_commit=$SYNCHRONOUS_COMMIT -c wal_buffers=$WAL_BUFFERS" start >/dev/null ;;
  stop)
    [ -f "$data/postmaster.pid" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null || true ;;
esac
