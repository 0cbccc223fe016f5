#!/bin/sh
# start|stop the example's memcached with the options in memcached.options, on $HONE_PORT
# (hone sets it; A-Tune users set it themselves), with its pidfile in $HONE_WORKDIR or /tmp.
set -eu
here=$(dirname "$0")
pidfile="${HONE_WORKDIR:-/tmp}/memcached-atune.pid"
case "$1" in
  start)
    . "$here/memcached.options"
    memcached -d -P "$pidfile" -l 127.0.0.1 -p "${HONE_PORT:-11311}" -U 0 -u root -m 64 \
      -t "$THREADS" -c "$MAXCONN" -f "$GROWTH"
    for _ in $(seq 50); do memcstat --servers="127.0.0.1:${HONE_PORT:-11311}" >/dev/null 2>&1 && exit 0; sleep 0.1; done
    echo "memcached did not come up" >&2; exit 1 ;;
  stop)
    if [ -f "$pidfile" ]; then kill -9 "$(cat "$pidfile")" 2>/dev/null || true; rm -f "$pidfile"; fi
    # a killed daemon is reaped late: wait until its port is free
    for _ in $(seq 50); do memcstat --servers="127.0.0.1:${HONE_PORT:-11311}" >/dev/null 2>&1 || exit 0; sleep 0.1; done ;;
esac
