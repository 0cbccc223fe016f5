#!/bin/sh
# start|stop the A-Tune twin's redis with the options in redis.options on $HONE_PORT.
set -eu
here=$(dirname "$0")
dir="${HONE_WORKDIR:-/tmp}"
port="${HONE_PORT:-6390}"
case "$1" in
  start)
    . "$here/redis.options"
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
      --daemonize yes --pidfile "$dir/redis-atune.pid" --io-threads "$IO_THREADS" --hz "$HZ" \
      --tcp-backlog "$TCP_BACKLOG" >/dev/null
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && exit 0; sleep 0.1; done
    exit 1 ;;
  stop)
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true ;;
esac
