#!/usr/bin/env bash
# tests/tracker/test_cgroup.c (the sampler's container figures: the memory
# cgroup found and read, RssShmem, the leak detector's time to the limit,
# the outputs) built four ways: C99, C++17, ASan+UBSan, TSan. First this
# script builds fixture trees of cgroup v1 and v2 in its build folder (the
# program reads one in place of / through memobs__cg_set_root) and finds
# this machine's own memory cgroup and limit with the shell, for the
# program to compare with memobs' (CG_FIX, CG_REAL_DIR, CG_REAL_LIMIT).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}
rc=0
. tests/lib.sh
unset MEMOBS_LIMIT_HORIZON_S
suite=cgroup
F="$B/cgroup/fix"
rm -rf "$F"
mkdir -p "$F"

put() { # FIXTURE PATH CONTENT: a file of the fixture (printf's escapes)
    mkdir -p "$(dirname "$F/$1/$2")"
    printf -- "$3" >"$F/$1/$2"
}
V2MNT='30 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n'
OTHER='22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n'

# v2, limited, below the mount's root
put v2 proc/self/cgroup '0::/kubepods/pod1/ctr\n'
put v2 proc/self/mountinfo "$OTHER$V2MNT"
d=sys/fs/cgroup/kubepods/pod1/ctr
put v2 $d/memory.current '1000000000\n'
put v2 $d/memory.max '2147483648\n'
put v2 $d/memory.stat 'anon 600000000\nfile 390000000\nkernel 1000\nshmem 5000000\nfile_mapped 7\nactive_file 290000000\ninactive_file 100000000\n'
# v2, no limit; inactive file above usage
put v2_max proc/self/cgroup '0::/a\n'
put v2_max proc/self/mountinfo "$V2MNT"
put v2_max sys/fs/cgroup/a/memory.current '300000000\n'
put v2_max sys/fs/cgroup/a/memory.max 'max\n'
put v2_max sys/fs/cgroup/a/memory.stat 'anon 1\ninactive_file 300000001\nshmem 0\n'
# v2, the limits on the parents (a job and its step, the step's own max;
# the mount point a namespace's root cgroup, with a lower one still)
put v2_parent proc/self/cgroup '0::/job_1/step_0\n'
put v2_parent proc/self/mountinfo "$V2MNT"
put v2_parent sys/fs/cgroup/job_1/memory.max '3221225472\n'
put v2_parent sys/fs/cgroup/job_1/step_0/memory.current '1000\n'
put v2_parent sys/fs/cgroup/job_1/step_0/memory.max 'max\n'
put v2_parent sys/fs/cgroup/memory.max '1073741824\n'
# v2 in a cgroup namespace: "0::/", the mount's root "/"
put v2_ns proc/self/cgroup '0::/\n'
put v2_ns proc/self/mountinfo "$V2MNT"
put v2_ns sys/fs/cgroup/memory.current '4096\n'
put v2_ns sys/fs/cgroup/memory.max 'max\n'
# the mount shows an outer root the path is not below
put v2_outer proc/self/cgroup '0::/\n'
put v2_outer proc/self/mountinfo '30 22 0:27 /kubepods/pod9/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n'
put v2_outer sys/fs/cgroup/memory.current '8192\n'
put v2_outer sys/fs/cgroup/memory.max '1073741824\n'
# a mount point with a space
put v2_space proc/self/cgroup '0::/a\n'
put v2_space proc/self/mountinfo '30 22 0:27 / /sys/fs/cgroup\\040space rw - cgroup2 cgroup2 rw\n'
put v2_space 'sys/fs/cgroup space/a/memory.current' '12288\n'
# v1, limited (no v2 line)
put v1 proc/self/cgroup '12:cpu,cpuacct:/docker/abc\n11:memory:/docker/abc\n1:name=systemd:/docker/abc\n'
put v1 proc/self/mountinfo "${OTHER}31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n34 30 0:31 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
d=sys/fs/cgroup/memory/docker/abc
put v1 $d/memory.usage_in_bytes '500000000\n'
put v1 $d/memory.limit_in_bytes '1073741824\n'
put v1 $d/memory.stat 'cache 1\nrss 2\nshmem 3\ninactive_file 4\nhierarchical_memory_limit 1073741824\ntotal_cache 240000000\ntotal_rss 250000000\ntotal_shmem 1000\ntotal_inactive_file 200000000\n'
# v1, the mount's root the cgroup itself (docker without a cgroup namespace)
put v1_root proc/self/cgroup '11:memory:/docker/abc\n'
put v1_root proc/self/mountinfo '34 30 0:31 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n'
put v1_root sys/fs/cgroup/memory/memory.usage_in_bytes '700000000\n'
put v1_root sys/fs/cgroup/memory/memory.limit_in_bytes '9223372036854771712\n'
# hybrid (v2's line and mount, memory on v1), unlimited, as on a test machine
put hybrid proc/self/cgroup '5:devices:/\n4:memory:/process_api/x1\n3:cpuset:/\n0::/\n'
put hybrid proc/self/mountinfo "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
put hybrid sys/fs/cgroup/unified/memory.current '1\n'
d=sys/fs/cgroup/memory/process_api/x1
put hybrid $d/memory.usage_in_bytes '7876608\n'
put hybrid $d/memory.limit_in_bytes '9223372036854771712\n'
put hybrid $d/memory.stat 'total_shmem 0\ntotal_inactive_file 659456\nhierarchical_memory_limit 9223372036854771712\n'
# v1, a parent's lower limit
put v1_parent proc/self/cgroup '4:memory:/p/c\n'
put v1_parent proc/self/mountinfo '34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n'
put v1_parent sys/fs/cgroup/memory/p/c/memory.usage_in_bytes '100\n'
put v1_parent sys/fs/cgroup/memory/p/c/memory.limit_in_bytes '9223372036854771712\n'
put v1_parent sys/fs/cgroup/memory/p/c/memory.stat 'hierarchical_memory_limit 3000000000\ntotal_inactive_file 0\n'
# none: no /proc/self/cgroup; nomount: a line, no cgroup mount
mkdir -p "$F/none/proc/self"
put nomount proc/self/cgroup '0::/a\n'
put nomount proc/self/mountinfo "$OTHER"
# missing: memory.current only
put missing proc/self/cgroup '0::/\n'
put missing proc/self/mountinfo "$V2MNT"
put missing sys/fs/cgroup/memory.current '123456\n'
# malformed figures
put malformed proc/self/cgroup '0::/\n'
put malformed proc/self/mountinfo "$V2MNT"
put malformed sys/fs/cgroup/memory.current '12a\n'
put malformed sys/fs/cgroup/memory.max '-5\n'
put malformed sys/fs/cgroup/memory.stat 'anon 77\ninactive_file x\nshmem 99999999999999999999999\n'
# empty: an empty usage file
put empty proc/self/cgroup '0::/\n'
put empty proc/self/mountinfo "$V2MNT"
put empty sys/fs/cgroup/memory.current ''
if [ -s "$F/v2/proc/self/mountinfo" ] && [ -s "$F/hybrid/$d/memory.stat" ]; then
    echo "ok - $suite: fixture trees of v1, v2 and hybrid cgroups"
else
    echo "not ok - $suite: fixture trees of v1, v2 and hybrid cgroups"
    rc=1
fi

# This machine's memory cgroup, as the shell finds it: the v1 line with the
# memory controller (else the v2 line), the mount of that hierarchy, the
# path below the mount's root (else the mount point).
real_dir() {
    local v p m
    for v in 1 2; do
        if [ $v = 1 ]; then
            p=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { sub(/^[^:]*:[^:]*:/, ""); print; exit }' /proc/self/cgroup)
        else
            p=$(awk -F: '$1 == "0" && $2 == "" { sub(/^0::/, ""); print; exit }' /proc/self/cgroup)
        fi
        [ -n "$p" ] || continue
        while read -r root mnt; do
            local rel="" file=memory.usage_in_bytes
            [ $v = 2 ] && file=memory.current
            if [ "$root" = / ]; then rel=$p
            elif [ "${p#"$root"}" != "$p" ]; then rel=${p#"$root"}
            else rel=NONE; fi
            [ "$rel" = / ] && rel=""
            if [ "$rel" != NONE ] && [ -r "$mnt$rel/$file" ]; then echo "$v $mnt$rel"; return; fi
            if [ -r "$mnt/$file" ]; then echo "$v $mnt"; return; fi
        done < <(awk -v v=$v '{
            for (i = 7; i <= NF && $i != "-"; i++) ;
            fs = $(i + 1); opts = "," $(i + 3) ","
            if ((v == 1 && fs == "cgroup" && opts ~ /,memory,/) || (v == 2 && fs == "cgroup2")) print $4, $5
        }' /proc/self/mountinfo)
    done
}
CG_REAL_DIR=""
CG_REAL_LIMIT=""
if read -r ver dir < <(real_dir) && [ -n "$dir" ]; then
    CG_REAL_DIR=$dir
    if [ "$ver" = 2 ]; then
        CG_REAL_LIMIT=$(cat "$dir/memory.max")
        [ "$CG_REAL_LIMIT" = max ] && CG_REAL_LIMIT=none
    else
        lim=$(cat "$dir/memory.limit_in_bytes")
        h=$(awk '$1 == "hierarchical_memory_limit" { print $2 }' "$dir/memory.stat")
        if [ -n "$h" ] && [ "$h" -lt "$lim" ]; then lim=$h; fi
        if [ "$lim" -ge 4611686018427387904 ]; then lim=none; fi
        CG_REAL_LIMIT=$lim
    fi
    echo "# this machine: cgroup v$ver at $CG_REAL_DIR, limit $CG_REAL_LIMIT"
else
    echo "# this machine: no memory cgroup found by the shell"
fi
export CG_FIX="$PWD/$F" CG_REAL_DIR CG_REAL_LIMIT
[ "${F#/}" != "$F" ] && CG_FIX=$F

bash tests/four_ways.sh cgroup/cgroup || rc=1
exit $rc
