#!/bin/sh
# Once per run: a fresh PostgreSQL 15 cluster owned by the postgres user (PostgreSQL refuses to
# run as root) in a fixed private folder, with pgbench's tables at scale 5.
set -eu
bin=/usr/lib/postgresql/15/bin
data=/tmp/hone-postgresql/data
socket=/tmp/hone-postgresql
as_postgres() { runuser -u postgres -- "$@"; }
if [ -f "$data/postmaster.pid" ]; then as_postgres "$bin/pg_ctl" -D "$data" -m immediate stop || true; fi
rm -rf "$socket"
mkdir -p "$socket"
chown postgres "$socket"
as_postgres "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
as_postgres "$bin/pg_ctl" -D "$data" -w -l "$socket/setup.log" \
  -o "-p $HONE_PORT -k $socket -c listen_addresses=127.0.0.1" start >/dev/null
as_postgres "$bin/pgbench" -h "$socket" -p "$HONE_PORT" -i -s 5 -q postgres >/dev/null 2>&1
as_postgres "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
