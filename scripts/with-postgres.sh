#!/usr/bin/env bash
# Runs CMD... with a throwaway PostgreSQL server on 127.0.0.1 and E2EE_RELAY_POSTGRES_URL pointing at it:
#
#   ./scripts/with-postgres.sh swift test --filter RelayTests
#
# The server runs as an unprivileged user (PostgreSQL refuses root), from a data directory in a temporary folder,
# on a free port, with trust authentication on loopback only. It is stopped and its data removed when CMD exits;
# the script exits with CMD's status. E2EE_RELAY_POSTGRES_BINDIR (the server binaries) and E2EE_RELAY_POSTGRES_OS_USER
# (the user the server runs as when the script runs as root, else empty) let tests start servers of their own. Installs Debian's postgresql package when no server binaries are found.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 CMD [ARG...]   (runs CMD with E2EE_RELAY_POSTGRES_URL set)" >&2
    exit 64
fi

find_bindir() {
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir
        return
    fi
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ]; then echo "$dir"; fi
    done | sort -V | tail -n 1
}

BINDIR="$(find_bindir)"
if [ -z "$BINDIR" ]; then
    echo "with-postgres: no PostgreSQL server found; installing Debian's postgresql package" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >&2 || {
        echo "with-postgres: cannot install postgresql; install it (apt-get install postgresql) and run again" >&2
        exit 69
    }
    BINDIR="$(find_bindir)"
fi

# PostgreSQL refuses to run as root: run it as an unprivileged user.
RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then
    PGUSER_OS="postgres"
    if ! id "$PGUSER_OS" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$PGUSER_OS"
    fi
    RUN_AS=(runuser -u "$PGUSER_OS" --)
fi

WORK="$(mktemp -d /tmp/e2ee-relay-pg.XXXXXX)"
chmod 755 "$WORK"
if [ "${#RUN_AS[@]}" -gt 0 ]; then chown "$PGUSER_OS" "$WORK"; fi
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"

# The server logs what would explain a test that timed out waiting for it: statements slower than a second, lock waits
# longer than a second, checkpoints. When CMD fails, those lines are printed at the end (see below).
SERVER_LOGGING="-c log_min_duration_statement=1000 -c log_lock_waits=on -c deadlock_timeout=1s -c log_checkpoints=on"
SERVER_LOGGING="$SERVER_LOGGING -c log_line_prefix=%m[%p]%q%u@%d:"

stop() {
    "${RUN_AS[@]}" "$BINDIR/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap stop EXIT

# --no-sync: the data directory is thrown away at the end, so initdb need not flush it (a flush of the whole cluster
# competes with the tests' own commits for the disk). The server itself runs with fsync=on: commits are real.
"${RUN_AS[@]}" "$BINDIR/initdb" -D "$WORK/data" -U relay --auth=trust -E UTF8 --no-instructions --no-sync \
    >"$WORK/initdb.log" 2>&1 || {
    cat "$WORK/initdb.log" >&2
    echo "with-postgres: initdb failed (log above)" >&2
    exit 70
}
"${RUN_AS[@]}" "$BINDIR/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $WORK -c max_connections=200 -c fsync=on $SERVER_LOGGING" \
    start >/dev/null || {
    cat "$WORK/server.log" >&2
    echo "with-postgres: the server did not start (log above)" >&2
    exit 70
}
"${RUN_AS[@]}" "$BINDIR/createdb" -h 127.0.0.1 -p "$PORT" -U relay relay

export E2EE_RELAY_POSTGRES_URL="postgres://relay@127.0.0.1:$PORT/relay"
# How this server was made, for tests that need a server of their own to stop and start (RelayFaultTests: the
# database going away mid-run must not stop the server every other test is using).
export E2EE_RELAY_POSTGRES_BINDIR="$BINDIR"
export E2EE_RELAY_POSTGRES_OS_USER="${PGUSER_OS:-}"
echo "with-postgres: PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT; E2EE_RELAY_POSTGRES_URL=$E2EE_RELAY_POSTGRES_URL" >&2
set +e
"$@"
STATUS=$?
set -e
if [ "$STATUS" -ne 0 ] && [ -f "$WORK/server.log" ]; then
    echo "with-postgres: $1 exited $STATUS; the shared server's slow statements, lock waits and checkpoints:" >&2
    grep -E "duration: |still waiting|acquired|checkpoint (starting|complete)" "$WORK/server.log" | tail -n 60 >&2 || true
fi
exit "$STATUS"
