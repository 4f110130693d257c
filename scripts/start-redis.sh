#!/usr/bin/env bash
# Start a throwaway Redis for the rate-limit and scale-out tests and print the
# environment the tests read:
#
#   eval "$(bash scripts/start-redis.sh)"
#
# Idempotent: installs Debian's `redis-server` with apt-get only when it is
# missing, starts it on 127.0.0.1:$REACH_REDIS_PORT (default 63790) only when
# nothing answers there yet. No persistence (the tests need none), loopback
# only. Everything except the final `export` line goes to stderr.
set -euo pipefail

PORT="${REACH_REDIS_PORT:-63790}"
DIR="${REACH_REDIS_DIR:-/tmp/reach-redis-$PORT}"

log() { echo "start-redis: $*" >&2; }

if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis-server with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq redis-server >&2
fi

ping() {
    if command -v redis-cli >/dev/null 2>&1; then
        redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG
    else
        # no client: a bare PING over bash's /dev/tcp
        exec 3<>"/dev/tcp/127.0.0.1/$PORT" 2>/dev/null || return 1
        printf 'PING\r\n' >&3
        local reply
        read -r -t 2 reply <&3 || true
        exec 3>&-
        [[ "$reply" == +PONG* ]]
    fi
}

if ping; then
    log "redis already answering on 127.0.0.1:$PORT"
else
    mkdir -p "$DIR"
    log "starting redis-server on 127.0.0.1:$PORT"
    redis-server --bind 127.0.0.1 --port "$PORT" --daemonize yes --save "" --appendonly no \
        --dir "$DIR" --logfile "$DIR/redis.log" --pidfile "$DIR/redis.pid" >&2
    for _ in $(seq 1 50); do
        ping && break
        sleep 0.1
    done
    ping || { log "redis did not start; see $DIR/redis.log"; exit 1; }
fi

echo "export REACH_TEST_REDIS_URL=redis://127.0.0.1:$PORT/0"
