# Shared by the test scripts: try SUITE NAME CMD... runs CMD, prints one
# "ok - SUITE: NAME" or "not ok - SUITE: NAME" line (with CMD's output as
# "    # " lines) and sets rc=1 on failure. Needs $B (a scratch directory).
rc=0
try() {
    local suite=$1 name=$2
    shift 2
    if "$@" >"$B/log" 2>&1; then
        echo "ok - $suite: $name"
    else
        echo "not ok - $suite: $name"
        sed 's/^/    # /' "$B/log" | head -n 20
        rc=1
    fi
}
