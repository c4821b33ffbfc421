#!/usr/bin/env bash
# hostile-files: paths that are not memobs' own (issue 38, items 1-5;
# docs/serving.md, "Paths"). tests/outputs/hostile/files_prog.c records known
# figures and ends by returning (the exit writer) or by abort()/SIGSEGV
# (the crash writer); this script plants what a hostile host has:
#   1. another user's (nobody's) symlink in a sticky world-writable folder,
#      at the output's path and at the crash writer's temporary names;
#   2. /dev/stderr, /proc/self/fd/2, /dev/fd/2 on a log opened with >>; a
#      character device, a FIFO and symlinks to them, at exit and at a crash;
#   3. a FIFO with no reader (the process must end promptly);
#   4. another host's temporaries beside the output, %p timelines killed
#      mid-write (named temporaries);
#   5. a replaced file's mode and owner; a hard link.
# Needs root (mknod, chown, setpriv to nobody): fails, not skips, without.
# Built C11, ASan+UBSan and TSan, each with O_TMPFILE and with named temporaries
# only. FILES_MEMOBS_H=PATH builds against another memobs.h (the "before"
# runs of the issue's reproductions).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/hostile_files
rm -rf "$B"
mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
W="-Wall -Wextra -Werror"
. tests/lib.sh # a clean environment, sanitizer options
export ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0"
ulimit -c 0
S=hostile-files

if [ "$(id -u)" != 0 ]; then
    echo "not ok - $S: runs as root (mknod, chown, a link planted as nobody); uid is $(id -u)"
    exit 1
fi
if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
    echo "not ok - $S: needs the user nobody and setpriv (util-linux)"
    exit 1
fi
as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }

src=tests/outputs/hostile/files_prog.c
inc=-I.
old=""
if [ -n "${FILES_MEMOBS_H:-}" ]; then
    mkdir -p "$B/src/tests/outputs/hostile"
    cp "$FILES_MEMOBS_H" "$B/src/memobs.h" && cp "$src" "$B/src/tests/outputs/hostile/" || exit 2
    src=$B/src/tests/outputs/hostile/files_prog.c
    inc=-I"$B/src"
    old=-DFILES_OLD
fi

ok() { echo "ok - $S: $1"; }
bad() {
    echo "not ok - $S: $1"
    shift
    for l in "$@"; do printf '%s\n' "$l" | sed 's/^/    # /'; done
    rc=1
}
# a pid that is no process's now
dead_pid() { sh -c 'echo $$'; }
kind() { stat -c %F "$1" 2>/dev/null || echo absent; }
mode_of() { stat -c %a "$1" 2>/dev/null; }

variant() { # label flags...
    local v=$1 bin="$B/prog_$1" d t st t0 t1 pid hid i reader
    shift
    if ! $CC "$@" $W $inc $old -o "$bin" "$src" -pthread -lm >"$bin.log" 2>&1 ||
        ! $CC "$@" $W $inc $old -DMEMOBS__NO_TMPFILE -o "$bin.named" "$src" -pthread -lm >>"$bin.log" 2>&1; then
        bad "$v: build" "$(head -n 30 "$bin.log")"
        return
    fi
    local L="$S $v"
    d="$B/$v"
    mkdir -p "$d"
    # the sticky world-writable folder, where nobody plants links
    t=$(mktemp -d /tmp/memobs-hostile.XXXXXX) && chmod 1777 "$t" || { bad "$v: a sticky folder in /tmp"; return; }

    # ---- 1. another user's symlink in a sticky world-writable folder
    printf 'SECRET\n' >"$d/secret" && chmod 600 "$d/secret"
    as_nobody ln -s "$d/secret" "$t/sum.json"
    MEMOBS_SUMMARY="$t/sum.json" MEMOBS_FORMAT=json "$bin" exit >"$d/1.out" 2>"$d/1.err"
    st=$?
    if [ "$(cat "$d/secret")" = SECRET ] && [ "$(mode_of "$d/secret")" = 600 ] && [ "$(kind "$t/sum.json")" = "regular file" ] &&
        grep -q '"h2d_bytes":4096' "$t/sum.json" && [ $st = 0 ]; then
        ok "$v: 1. nobody's link in a sticky folder to a root 0600 file: the link replaced by the summary, the file untouched"
    else
        bad "$v: 1. nobody's link in a sticky folder to a root 0600 file" "secret: $(head -c 80 "$d/secret") mode $(mode_of "$d/secret")" \
            "$t/sum.json: $(kind "$t/sum.json")" "exit $st" "$(head -c 400 "$d/1.err")"
    fi
    # nobody's link to a FIFO root reads from: not followed either (replaced)
    rm -f "$d/pfifo" "$d/pfifo.got" && mkfifo "$d/pfifo"
    as_nobody ln -s "$d/pfifo" "$t/p.json"
    timeout 30 cat "$d/pfifo" >"$d/pfifo.got" &
    reader=$!
    MEMOBS_SUMMARY="$t/p.json" MEMOBS_FORMAT=json timeout -s KILL 20 "$bin" exit >/dev/null 2>"$d/1.err"
    st=$?
    exec 9<>"$d/pfifo" && exec 9>&- # a writer that writes nothing: the reader gets EOF (O_RDWR never blocks)
    wait $reader 2>/dev/null
    if [ ! -s "$d/pfifo.got" ] && [ "$(kind "$t/p.json")" = "regular file" ] && grep -q '"h2d_bytes":4096' "$t/p.json" && [ $st = 0 ]; then
        ok "$v: 1. nobody's link in a sticky folder to a FIFO: not written through, the link replaced"
    else
        bad "$v: 1. nobody's link in a sticky folder to a FIFO" "the FIFO got: $(head -c 80 "$d/pfifo.got")" "p.json: $(kind "$t/p.json")" "exit $st"
    fi
    # an appended output (the peak report) cannot replace the link: refused
    printf 'SECRET3\n' >"$d/secret3" && chmod 600 "$d/secret3"
    as_nobody ln -s "$d/secret3" "$t/peak.txt"
    MEMOBS_PEAK_REPORT="$t/peak.txt" MEMOBS_PEAK_MIN=0 "$bin" exit >/dev/null 2>"$d/1p.err"
    if [ "$(cat "$d/secret3")" = SECRET3 ] && [ "$(kind "$t/peak.txt")" = "symbolic link" ] &&
        [ "$(grep -c "cannot open '$t/peak.txt' for the peak report: another user's link" "$d/1p.err")" = 1 ]; then
        ok "$v: 1. MEMOBS_PEAK_REPORT at nobody's link in a sticky folder: not followed, one warning"
    else
        bad "$v: 1. MEMOBS_PEAK_REPORT at nobody's link in a sticky folder" "secret3: $(head -c 120 "$d/secret3")" "$(head -c 300 "$d/1p.err")"
    fi
    # at a crash: links planted at the crash writer's temporary names (the
    # old PATH.crash.PID, and PATH.tmp.HOST.PID.1 and .2)
    local b2 tag
    for b2 in "$bin" "$bin.named"; do
    tag=$([ "$b2" = "$bin" ] || echo ', named temporaries')
    rm -f "$t"/c.json* "$d/go" "$d/pid"
    printf 'SECRET2\n' >"$d/secret2" && chmod 600 "$d/secret2"
    hid=$("$b2" hostid 2>/dev/null)
    MEMOBS_SUMMARY="$t/c.json" MEMOBS_FORMAT=json "$b2" wait-abort "$d" >"$d/1c.out" 2>"$d/1c.err" &
    pid=$!
    for i in $(seq 600); do [ -s "$d/pid" ] && break; sleep 0.1; done
    as_nobody ln -s "$d/secret2" "$t/c.json.crash.$pid"
    [ -n "$hid" ] && for i in 1 2; do as_nobody ln -s "$d/secret2" "$t/c.json.tmp.$hid.$pid.$i"; done
    touch "$d/go"
    wait $pid
    st=$?
    if [ "$(cat "$d/secret2")" = SECRET2 ] && [ "$(kind "$t/c.json")" = "regular file" ] && grep -q '"h2d_bytes":4096' "$t/c.json" &&
        [ "$(kind "$t/c.json.crash.$pid")" = "symbolic link" ] && [ $st = 134 ]; then
        ok "$v: 1. at a crash$tag, nobody's links at the temporary's names are not followed; the summary written"
    else
        bad "$v: 1. at a crash$tag, links planted at the temporary's names" "secret2: $(head -c 80 "$d/secret2")" \
            "c.json: $(kind "$t/c.json") $(head -c 60 "$t/c.json")" "exit $st" "$(ls -la "$t" | grep c.json)"
    fi
    done
    rm -f "$t"/c.json*

    # ---- 2. logs, devices, FIFOs: written in place, appended, never replaced
    local fdname
    for fdname in /dev/stderr /proc/self/fd/2 /dev/fd/2; do
        printf 'EARLIER LINE\n' >"$d/server.log"
        MEMOBS_SUMMARY=$fdname MEMOBS_FORMAT=json "$bin" exit 2>>"$d/server.log" >/dev/null
        if [ "$(head -n 1 "$d/server.log")" = "EARLIER LINE" ] && grep -q '"h2d_bytes":4096' "$d/server.log"; then
            ok "$v: 2. MEMOBS_SUMMARY=$fdname with 2>>log: the log keeps its lines, the summary appended"
        else
            bad "$v: 2. MEMOBS_SUMMARY=$fdname with 2>>log" "log: $(head -c 200 "$d/server.log")"
        fi
        printf 'EARLIER LINE\n' >"$d/server.log"
        MEMOBS_SUMMARY=$fdname MEMOBS_FORMAT=json "$bin" abort 2>>"$d/server.log" >/dev/null
        st=$?
        if [ "$(head -n 1 "$d/server.log")" = "EARLIER LINE" ] && grep -q '"h2d_bytes":4096' "$d/server.log" && [ $st = 134 ]; then
            ok "$v: 2. at a crash, MEMOBS_SUMMARY=$fdname with 2>>log: the log keeps its lines, the summary appended"
        else
            bad "$v: 2. at a crash, MEMOBS_SUMMARY=$fdname with 2>>log" "exit $st" "log: $(head -c 200 "$d/server.log")"
        fi
    done
    # a character device (a private /dev/null) and a link to it; a FIFO with
    # a reader and a link to it: at exit and at a crash
    local how dev=$d/null fifo=$d/fifo
    rm -f "$dev" "$fifo" "$d/null.link" "$d/fifo.link"
    mknod -m 666 "$dev" c 1 3 && mkfifo "$fifo" && ln -s "$dev" "$d/null.link" && ln -s "$fifo" "$d/fifo.link"
    for how in exit abort segv; do
        for p in "$dev" "$d/null.link"; do
            MEMOBS_SUMMARY=$p MEMOBS_FORMAT=json "$bin" $how >/dev/null 2>"$d/2.err"
            st=$?
            if [ "$(kind "$dev")" = "character special file" ] && [ "$(kind "$d/null.link")" = "symbolic link" ] &&
                [ "$(readlink "$d/null.link")" = "$dev" ]; then
                ok "$v: 2. $how, MEMOBS_SUMMARY=${p##*/}: the device stays a device, the link a link"
            else
                bad "$v: 2. $how, MEMOBS_SUMMARY=${p##*/}" "null: $(kind "$dev"), link: $(kind "$d/null.link")" "exit $st" "$(head -c 300 "$d/2.err")"
                rm -f "$dev" "$d/null.link"
                mknod -m 666 "$dev" c 1 3 && ln -s "$dev" "$d/null.link"
            fi
        done
        for p in "$fifo" "$d/fifo.link"; do
            rm -f "$d/fifo.got"
            cat "$fifo" >"$d/fifo.got" &
            reader=$!
            MEMOBS_SUMMARY=$p MEMOBS_FORMAT=json timeout -s KILL 60 "$bin" $how >/dev/null 2>"$d/2.err"
            st=$?
            # no writer ever (the old code replaced the FIFO): the reader is ended here
            for i in $(seq 100); do kill -0 $reader 2>/dev/null || break; sleep 0.1; done
            kill $reader 2>/dev/null
            wait $reader 2>/dev/null
            if [ "$(kind "$fifo")" = fifo ] && [ "$(kind "$d/fifo.link")" = "symbolic link" ] && grep -q '"h2d_bytes":4096' "$d/fifo.got"; then
                ok "$v: 2. $how, MEMOBS_SUMMARY=${p##*/} with a reader: the FIFO stays a FIFO, the link a link, the reader has the summary"
            else
                bad "$v: 2. $how, MEMOBS_SUMMARY=${p##*/} with a reader" "fifo: $(kind "$fifo"), link: $(kind "$d/fifo.link")" \
                    "read: $(head -c 100 "$d/fifo.got")" "exit $st" "$(head -c 300 "$d/2.err")"
                rm -f "$fifo" "$d/fifo.link"
                mkfifo "$fifo" && ln -s "$fifo" "$d/fifo.link"
            fi
        done
    done
    # a link (ours) to a regular file: replaced as a link, at exit and at a crash
    for how in exit abort; do
        printf 'TARGET\n' >"$d/target"
        rm -f "$d/reg.link" && ln -s "$d/target" "$d/reg.link"
        MEMOBS_SUMMARY="$d/reg.link" MEMOBS_FORMAT=json "$bin" $how >/dev/null 2>"$d/2.err"
        if [ "$(cat "$d/target")" = TARGET ] && [ "$(kind "$d/reg.link")" = "regular file" ] && grep -q '"h2d_bytes":4096' "$d/reg.link"; then
            ok "$v: 2. $how, a link to a regular file: the link replaced as a link (the new rule), the file it named untouched"
        else
            bad "$v: 2. $how, a link to a regular file" "target: $(head -c 60 "$d/target")" "link: $(kind "$d/reg.link")"
        fi
    done

    # ---- 3. a FIFO with no reader: skipped with a warning, promptly
    for how in exit abort; do
        rm -f "$fifo" && mkfifo "$fifo"
        t0=$(date +%s%N)
        MEMOBS_SUMMARY=$fifo timeout -s KILL 20 "$bin" $how >/dev/null 2>"$d/3.err"
        st=$?
        t1=$(date +%s%N)
        local want=0
        [ $how = abort ] && want=134
        if [ $st = $want ] && [ "$(kind "$fifo")" = fifo ] &&
            { [ $how = abort ] || [ "$(grep -c "cannot write the summary to '$fifo': no reader" "$d/3.err")" = 1 ]; }; then
            ok "$v: 3. $how, MEMOBS_SUMMARY=FIFO with no reader: ends in $(((t1 - t0) / 1000000)) ms (exit $st), the FIFO kept$([ $how = exit ] && echo ', one warning')"
        else
            bad "$v: 3. $how, MEMOBS_SUMMARY=FIFO with no reader" "exit $st (137: killed by timeout 20 s), want $want" "fifo: $(kind "$fifo")" \
                "$(head -c 300 "$d/3.err")"
        fi
    done

    rm -f "$fifo" && mkfifo "$fifo"
    t0=$(date +%s%N)
    MEMOBS_PEAK_REPORT=$fifo MEMOBS_PEAK_MIN=0 timeout -s KILL 20 "$bin" exit >/dev/null 2>"$d/3.err"
    st=$?
    t1=$(date +%s%N)
    if [ $st = 0 ] && [ "$(grep -c "cannot open '$fifo' for the peak report: no reader" "$d/3.err")" = 1 ]; then
        ok "$v: 3. MEMOBS_PEAK_REPORT=FIFO with no reader: ends in $(((t1 - t0) / 1000000)) ms, one warning"
    else
        bad "$v: 3. MEMOBS_PEAK_REPORT=FIFO with no reader" "exit $st (137: killed by timeout 20 s)" "$(head -c 300 "$d/3.err")"
    fi

    # ---- 4. temporaries: another host's survive; dead %p runs' go
    local dp o
    rm -rf "$d/tmp4" && mkdir "$d/tmp4"
    dp=$(dead_pid)
    o=deadbeef
    [ "$hid" = deadbeef ] && o=feedbeef
    printf 'FOREIGN\n' >"$d/tmp4/t.json.tmp.$o.$dp.0"     # another host's (NFS) or container's
    printf 'OLDFORMAT\n' >"$d/tmp4/t.json.tmp.$dp.0"      # a name without a host: whose, not known
    [ -n "$hid" ] && printf 'OURS\n' >"$d/tmp4/t.json.tmp.$hid.$dp.3"
    MEMOBS_SUMMARY="$d/tmp4/t.json" "$bin" exit >/dev/null 2>"$d/4.err"
    if [ -f "$d/tmp4/t.json.tmp.$o.$dp.0" ] && [ -f "$d/tmp4/t.json.tmp.$dp.0" ] && [ -n "$hid" ] && [ ! -e "$d/tmp4/t.json.tmp.$hid.$dp.3" ]; then
        ok "$v: 4. the sweep keeps another host's temporary (pid $dp, gone here) and an unmarked one, removes this host's dead one"
    else
        bad "$v: 4. the sweep and other hosts' temporaries" "$(ls "$d/tmp4")"
    fi
    rm -rf "$d/tmp4" && mkdir "$d/tmp4"
    for i in 1 2; do MEMOBS_TIMELINE="$d/tmp4/tl.%p.json" "$bin.named" killmid >/dev/null 2>"$d/4.err"; done
    local left
    left=$(cd "$d/tmp4" && ls | grep -c '\.tmp\.')
    MEMOBS_TIMELINE="$d/tmp4/tl.%p.json" "$bin.named" exit >/dev/null 2>"$d/4.err"
    # (the second killed run already removes the first one's temporary)
    if [ "$left" -ge 1 ] && ! ls "$d/tmp4" | grep -q '\.tmp\.' && [ "$(ls "$d/tmp4" | grep -c '^tl\.[0-9]*\.json$')" = 1 ]; then
        ok "$v: 4. two kill -9 runs of a %p timeline (named temporaries) left $left; the next run removes them, writes its own"
    else
        bad "$v: 4. %p timelines killed mid-write" "left after the kills: $left" "after the next run: $(ls "$d/tmp4" | tr '\n' ' ')" "$(head -c 300 "$d/4.err")"
    fi

    # ---- 5. the replaced file's mode and owner; hard links
    local m
    for m in 640 600 444; do
        printf 'OLD\n' >"$d/m.json" && chmod $m "$d/m.json" && chown nobody "$d/m.json"
        MEMOBS_SUMMARY="$d/m.json" MEMOBS_FORMAT=json "$bin" exit >/dev/null 2>"$d/5.err"
        if [ "$(mode_of "$d/m.json")" = $m ] && [ "$(stat -c %U "$d/m.json")" = nobody ] && grep -q '"h2d_bytes":4096' "$d/m.json"; then
            ok "$v: 5. a $m file owned by nobody, replaced by root: mode $m and owner nobody kept"
        else
            bad "$v: 5. a $m file owned by nobody" "mode $(mode_of "$d/m.json") owner $(stat -c %U "$d/m.json")" "$(head -c 80 "$d/m.json")"
        fi
    done
    printf 'OLD\n' >"$d/h.json" && rm -f "$d/h.hard" && ln "$d/h.json" "$d/h.hard"
    MEMOBS_SUMMARY="$d/h.json" MEMOBS_FORMAT=json "$bin" exit >/dev/null 2>"$d/5.err"
    if [ "$(cat "$d/h.hard")" = OLD ] && grep -q '"h2d_bytes":4096' "$d/h.json"; then
        ok "$v: 5. a hard-linked file: the name gets a new file, the other link keeps the old one (documented)"
    else
        bad "$v: 5. a hard-linked file" "h.hard: $(head -c 60 "$d/h.hard")"
    fi
    rm -rf "$t"
}

rc=0
variant c11 -std=c11 -O2 -g
variant asan+ubsan -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
variant tsan -std=c11 -O1 -g -fsanitize=thread
exit $rc
