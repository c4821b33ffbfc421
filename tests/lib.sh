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

# json_check FILE PYTHON-EXPR [KEY]: the expression over the parsed JSON `s`
# is true; on failure shows the expression and s (or s[KEY]), cut to 800
# characters, as "    # " lines.
json_check() {
    python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("    # not JSON: %s" % e); sys.exit(1)
ok = eval(sys.argv[2])
shown = s.get(sys.argv[3]) if sys.argv[3] else s
if not ok: print("    # false: %s\n    # summary: %s" % (sys.argv[2], json.dumps(shown)[:800]))
sys.exit(0 if ok else 1)
PY
}
