#!/usr/bin/env bash
# The whole suite on Debian's PostgreSQL 15, a second major version beside the
# embedded one (18): proves the migrations are not tied to one version.
#
#   scripts/test-pg15.sh [vitest arguments…]      (npm run test:pg15)
#
# Installs postgresql-15 with apt-get when it is missing (as root), starts a
# throwaway cluster on a free 127.0.0.1 port as the `postgres` OS user (scram
# password auth, a random superuser password), runs
# `TEST_DATABASE_URL=… TEST_PG_VERSION=15 vitest run`, and removes the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

version=15
bin="/usr/lib/postgresql/$version/bin"
if [ ! -x "$bin/initdb" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test-pg15: PostgreSQL $version is not installed; as root: apt-get install -y postgresql-$version" >&2
    exit 2
  fi
  echo "test-pg15: installing postgresql-$version" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "postgresql-$version" >/dev/null
fi

# as root, PostgreSQL runs as the postgres OS user (initdb refuses root)
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  as_postgres=(runuser -u postgres --)
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/rowgate-pg$version.XXXXXX")
password=$(node -e 'process.stdout.write(require("crypto").randomBytes(18).toString("hex"))')
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); })')
printf '%s\n' "$password" > "$dir/pwfile"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
chmod 700 "$dir"

stop() {
  "${as_postgres[@]}" "$bin/pg_ctl" stop -D "$dir/data" -m immediate -w >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

"${as_postgres[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=scram-sha-256 --pwfile="$dir/pwfile" \
  --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
rm -f "$dir/pwfile"
"${as_postgres[@]}" "$bin/pg_ctl" start -D "$dir/data" -w -t 60 -l "$dir/postgres.log" \
  -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c max_connections=200 -c fsync=off" >/dev/null \
  || { cat "$dir/postgres.log" >&2; exit 1; }

echo "test-pg15: $("$bin/postgres" --version) on 127.0.0.1:$port (data in $dir, removed at exit)" >&2
set +e
TEST_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/postgres" TEST_PG_VERSION=$version vitest run "$@"
status=$?
set -e
exit $status
