# Sourced by scripts/test: makes sure the services the integration tests need
# are running, and exports where they are. Each is started only if missing.
#   PostgreSQL   CAIRN_TEST_POSTGRES (default local server, trust auth)
#   S3 (versitygw, built into .ci/bin)  CAIRN_TEST_S3_*

VERSITYGW_VERSION=v1.8.0
SERVICES_DIR=$(mktemp -d -t cairn-services-XXXXXX)
SERVICE_PIDS=()

stop_services() {
  for pid in "${SERVICE_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${SERVICE_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$SERVICES_DIR"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_port() { # host port seconds
  for _ in $(seq 1 $(($3 * 10))); do
    (echo > "/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

ensure_postgres() {
  export CAIRN_TEST_POSTGRES=${CAIRN_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return 0; fi
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "installing PostgreSQL"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_port 127.0.0.1 5432 30 || { echo "PostgreSQL did not start"; return 1; }
  # A fresh install has no trust auth for TCP and no "test" database.
  if ! psql -h 127.0.0.1 -U postgres -d test -c 'select 1' >/dev/null 2>&1; then
    local hba="/etc/postgresql/$version/main/pg_hba.conf"
    sed -i 's/^\(host.*all.*all.*127.0.0.1\/32\s*\)\S*$/\1trust/' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$version" main reload
    runuser -u postgres -- createdb test 2>/dev/null || true
  fi
}

ensure_s3() {
  if [ -n "${CAIRN_TEST_S3_ENDPOINT:-}" ]; then return 0; fi
  local bin=.ci/bin/versitygw
  if [ ! -x "$bin" ] || [ "$(cat .ci/bin/versitygw.version 2>/dev/null)" != "$VERSITYGW_VERSION" ]; then
    echo "building versitygw $VERSITYGW_VERSION (first run only, a few minutes)"
    mkdir -p .ci/bin
    GOBIN="$PWD/.ci/bin" CGO_ENABLED=0 go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
    echo "$VERSITYGW_VERSION" > .ci/bin/versitygw.version
  fi
  local port root
  port=$(free_port)
  root="$SERVICES_DIR/s3"
  mkdir -p "$root/cairn-test"
  export CAIRN_TEST_S3_ACCESS_KEY=cairntest CAIRN_TEST_S3_SECRET_KEY=cairntestsecret
  ROOT_ACCESS_KEY=$CAIRN_TEST_S3_ACCESS_KEY ROOT_SECRET_KEY=$CAIRN_TEST_S3_SECRET_KEY \
    "$bin" --port "127.0.0.1:$port" posix "$root" > "$SERVICES_DIR/versitygw.log" 2>&1 &
  SERVICE_PIDS+=($!)
  wait_port 127.0.0.1 "$port" 30 || { echo "versitygw did not start:"; cat "$SERVICES_DIR/versitygw.log"; return 1; }
  export CAIRN_TEST_S3_ENDPOINT="http://127.0.0.1:$port" CAIRN_TEST_S3_BUCKET=cairn-test
}

ensure_chromium() {
  # The inspector's browser tests (web/) drive a headless Chromium.
  local b
  for b in chromium chromium-browser google-chrome; do
    command -v "$b" >/dev/null 2>&1 && return 0
  done
  echo "installing Chromium"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 ||
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
}

ensure_temporal() {
  if [ -n "${CAIRN_TEST_TEMPORAL:-}" ]; then return 0; fi
  local bin=.ci/bin/temporal stamp
  # Rebuild when the pinned module changes (go.sum is the CLI's exact pin).
  stamp=$(sha256sum tools/temporal/go.sum | cut -c1-16)
  if [ ! -x "$bin" ] || [ "$(cat .ci/bin/temporal.version 2>/dev/null)" != "$stamp" ]; then
    echo "building the Temporal CLI dev server (first run only, ~10 minutes cold)"
    mkdir -p .ci/bin
    CGO_ENABLED=0 go build -C tools/temporal -o "$PWD/.ci/bin/temporal" github.com/temporalio/cli/cmd/temporal
    echo "$stamp" > .ci/bin/temporal.version
  fi
  local port
  port=$(free_port)
  # The history service moves tasks to matching at most
  # transferProcessorMaxPollRPS (20) times a second, a floor of 50 ms under
  # each activity or workflow task a turn dispatches (100 ms a turn once the
  # limiter's burst is spent); an eager activity skips one dispatch. The
  # README's "On Temporal" recommends both to operators.
  "$bin" server start-dev --headless --ip 127.0.0.1 --port "$port" \
    --dynamic-config-value history.transferProcessorMaxPollRPS=1000 \
    --dynamic-config-value system.enableActivityEagerExecution=true \
    --db-filename "$SERVICES_DIR/temporal.db" --log-level warn > "$SERVICES_DIR/temporal.log" 2>&1 &
  SERVICE_PIDS+=($!)
  for _ in $(seq 1 300); do
    "$bin" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1 && break
    sleep 0.2
  done
  "$bin" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1 || { echo "Temporal dev server did not start:"; cat "$SERVICES_DIR/temporal.log"; return 1; }
  export CAIRN_TEST_TEMPORAL="127.0.0.1:$port"
}

ensure_openrpc_schema() {
  # The OpenRPC meta-schema, from its npm package (which exports it as a
  # module), for the test that validates docs/openrpc.json against it.
  local version=1.14.9 dir=.ci/openrpc
  local file="$dir/schema-$version.json"
  if [ ! -s "$file" ]; then
    echo "installing the OpenRPC meta-schema $version"
    mkdir -p "$dir"
    (cd "$dir" && npm install --no-audit --no-fund --silent "@open-rpc/meta-schema@$version" >/dev/null &&
      node -e 'process.stdout.write(JSON.stringify(require("@open-rpc/meta-schema").openrpcDocument))' > "schema-$version.json.tmp" &&
      mv "schema-$version.json.tmp" "schema-$version.json")
  fi
  export CAIRN_TEST_OPENRPC_SCHEMA=$PWD/$file
}
