# bench_preload.awk - the table of make bench-preload and make
# gpu-bench-preload from bench/bench_preload.c's lines, one per process:
#   <label> <best: sync, async stream 0, async a stream, query> <medians: the same>
# labels plain and preload (the runtime), dplain and dpreload (the driver),
# any number of turns of each. Per figure: the best over the turns, and
# the median of the turns' medians. The query is the plain processes'.
# -v gpu=1: a column with the added ns as a % of the plain call, and the
# GPU's notes.
{
    for (k = 2; k <= 5; k++) {
        if (!(($1, k) in b) || $k < b[$1, k]) b[$1, k] = $k
        m[$1, k, ++c[$1, k]] = $(k + 4)
    }
}

function med(p, k,  n, i, j, x, v) {
    n = c[p, k]
    for (i = 1; i <= n; i++) v[i] = m[p, k, i]
    for (i = 2; i <= n; i++) # insertion sort: a few turns
        for (j = i; j > 1 && v[j] < v[j - 1]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}

function row(name, p, q, k) {
    printf "  %-28s %7.1f %7.1f %7.1f %7.1f %+7.1f %+7.1f", name, b[p, k], med(p, k), b[q, k], med(q, k),
        b[q, k] - b[p, k], med(q, k) - med(p, k)
    if (gpu) printf " %+6.1f%% %+6.1f%%", 100 * (b[q, k] - b[p, k]) / b[p, k], 100 * (med(q, k) - med(p, k)) / med(p, k)
    printf "\n"
}

# Under the created stream's row: the query alone, and the rest of what
# the preload added (memobs' own work, the interposer's call included).
function parts(p, q,  qb, qm) {
    qb = b[p, 5]; qm = med(p, 5)
    printf "  %-28s %39.1f %7.1f\n", "  the capture query alone", qb, qm
    printf "  %-28s %31s %+7.1f %+7.1f\n", "  memobs besides the query", "",
        b[q, 4] - b[p, 4] - qb, med(q, 4) - med(p, 4) - qm
}

END {
    printf "  %-28s %15s %15s %15s", "call (ns: best, median)", "plain", "preload", "added"
    if (gpu) printf " %15s", "% of plain"
    printf "\n"
    row("cudaMemcpy", "plain", "preload", 2)
    row("cudaMemcpyAsync, stream 0", "plain", "preload", 3)
    row("cudaMemcpyAsync, a stream", "plain", "preload", 4)
    parts("plain", "preload")
    row("cuMemcpyHtoD", "dplain", "dpreload", 2)
    row("cuMemcpyHtoDAsync, stream 0", "dplain", "dpreload", 3)
    row("cuMemcpyHtoDAsync, a stream", "dplain", "dpreload", 4)
    parts("dplain", "dpreload")
    printf "  (%d turns of 5 runs x %s calls each: the best run, the median of the turns' medians; stream 0 is the legacy\n",
        c["plain", 2], calls
    print "  stream, never captured: memobs does not ask it; the capture query: cuStreamGetCaptureInfo_v2 of the created"
    if (gpu) {
        print "  stream alone, the real driver's; memobs besides it: the added less the query, the interposer's call included;"
        print "  64 bytes from pinned memory)"
    } else {
        print "  stream alone, the double's (its lock and call log); memobs besides it: the added less the query, the"
        print "  interposer's call included; the doubles copy on the host: the added column is the interposer and memobs)"
    }
}
