/* memobs.h - v1.0.0 - observer counters for LLM inference engines.
   Header-only, no dependencies beyond libc and pthreads. C99/C11, C++11/17, nvcc.

   STEP BY STEP
     1. In exactly one .c, .cpp or .cu file of your program or library:
            #define MEMOBS_IMPLEMENTATION
            #include "memobs.h"
        and plain `#include "memobs.h"` everywhere else. Link with -pthread.
     2. Record what the engine moves and holds, in its hot paths:
            MEMOBS_RECORD_H2D(block_bytes, is_prefill);  // after queueing a copy
            MEMOBS_TRACK_ALLOC_N(p, n, MEMOBS_MEM_DEVICE, "kv_cache");  // after an alloc
            MEMOBS_TRACK_FREE(p);                        // before the free
            memobs_request_begin(id); memobs_request_token(id); memobs_request_end(id);
            MEMOBS_TTFT_START(); MEMOBS_TTFT_STOP(); MEMOBS_TPOT_STEP();  // or a global clock
            MEMOBS_COUNTER_ADD("kv_blocks_evicted", 1);  // your own counters
     3. Say what each thread is doing:
            memobs_set_phase(MEMOBS_PHASE_DECODE);       // read by the _CUR forms:
            MEMOBS_RECORD_D2H_CUR(block_bytes);
            MEMOBS_REGION_BEGIN("decode_step"); MEMOBS_REGION_END();
            MEMOBS_MARK("kv_blocks_evicted");
     4. Read or print the figures:
            memobs_summary_t s; memobs_get_summary(&s);  // s.total.h2d.bytes, ...
            memobs_print_summary();                      // on stderr
            memobs_print_alloc_groups(stderr);           // which line holds memory
     5. Or change no code past step 1: choose outputs in the environment,
        MEMOBS_SUMMARY=stderr (or a path), MEMOBS_PROM_FILE, MEMOBS_TIMELINE,
        MEMOBS_HTML, ... (ENVIRONMENT below), written at exit and on a stop.

   CONTENTS (the sections of this file, in order. Search for ">>tag": from
   an entry here the search lands on its section's banner, and the next
   search from there comes back here. tests/docs/test_map.sh checks the list.)
     Public API: what a program calls (declarations)
       >>api-types        Types: result codes, phases, directions, memory
                          kinds, memobs_summary_t and the stats structs
       >>api-control      Control: memobs_init, on/off, reset, the log
                          hook, memobs_now_ns, stop and crash signals
       >>api-transfers    Transfers and phase: memobs_record_xfer(_timed),
                          memobs_set_phase, manual records apart
       >>api-timing       Timing: TTFT/TPOT clock, per-request calls
       >>api-regions      Regions and markers: memobs_region_*, memobs_mark
       >>api-counters     User counters: memobs_counter_register
       >>api-collectives  Collectives and peers: memobs_coll_*, peers
       >>api-tracker      Allocation tracker: memobs_track_*, device bytes,
                          the allocation, group and leak reports
       >>api-snapshot     PyTorch memory snapshot: memobs_write_torch_*
       >>api-timeline     Timeline: memobs_timeline_*, the clock, the
                          Chrome trace writers
       >>api-identity     Identity: memobs_set/get_identity
       >>api-sampler      Sampler, leak detector and Stormlog: samples,
                          memobs_leak_check, memobs_write_stormlog*
       >>api-summaries    Summaries: memobs_get/print/write_summary, the
                          exit outputs, memobs_flush, format helpers
       >>api-prometheus   Prometheus: memobs_write/format_prometheus
       >>api-html         HTML report: memobs_write_html(_file)
     Recording macros
       >>macros           MEMOBS_RECORD_*, _TRACK_*, _REGION_*, ...: off
                          (MEMOBS_DISABLE) and on
     Private hot path (inline in every file that includes memobs.h)
       >>hot-path         atomics, one-field counters, the on/off flag, the
                          thread's own-shard add, memobs__xfer
     Names before 1.0
       >>deprecated       the old names as inline wrappers (warnings)
     Private state and start-up (MEMOBS_IMPLEMENTATION only from here)
       >>implementation   where the implementation starts: its defaults,
                          includes
       >>state            locks, saturating sums, problem counts, the
                          shared types, memobs__g
       >>diagnostics      the log hook, one warning per kind
       >>startup          parsing the environment, memobs__init_once, the
                          exit registry, memobs_flush, fork handlers
     Facilities: what records and keeps the figures
       >>shards           per-thread shards, memobs_record_xfer, phases
       >>histograms       latency histograms, the TTFT/TPOT clock
       >>requests         the per-request table (striped, timeouts)
       >>attribution      requests' ledgers: bindings (enter/leave),
                          records on a request's behalf, the split,
                          tenants, tracked bytes held, top lists
       >>counters         user counters: names and handles
       >>regions          region and marker names, per-thread stacks
       >>collectives      communicators, kinds, peers and their rows
       >>tracker          the allocation table, traces, C stacks, the
                          escrow (current and peak), peak reports' trigger
       >>timeline         the clock (TSC), per-thread chunks, the merge,
                          the Chrome trace writer
       >>identity         job id, ranks, host: set and read
     Outputs: what turns the figures into text and files
       >>summary          memobs_get_summary (shards summed), memobs_reset
       >>outputs          one row per output (MEMOBS__OUTPUT_TABLE):
                          variable, name, exit order, writer
       >>sink             the output sink: a FILE or a buffer that text
                          writers format into; numbers, escapes
       >>units            SI and binary units of the text figures
       >>summary-text     the summary's figures (memobs__figs) and text
       >>summary-json     the JSON summary
       >>summary-writers  memobs_print/write_summary and the exit writer
       >>naming           platform calls of the writers, file naming
                          (%r, %p, %%), folders
       >>sigpipe          a closed pipe costs one output only
       >>destinations     one writer per path: claims against the other
                          instances, an output variable's resolution
       >>whole-files      a file written whole (temporary, rename) or in
                          place (devices, FIFOs, links), the crash's kind
       >>append           appended reports (peak, out of memory)
       >>request-lines    MEMOBS_REQUESTS: a JSON line per finished
                          request, the file's bound
       >>prometheus       the Prometheus exposition and its file
       >>multiproc        prometheus_client's multiprocess files: the
                          exposition as its .db files, their layout
       >>reports          symbols, the block, group and leak tables, peak
                          and out-of-memory reports
       >>snapshot         device event rings, the pickle writer
       >>worker           the background thread of periodic tasks
       >>sampler          host memory samples, the leak detector
       >>stormlog         notable events, Stormlog telemetry (schema v2)
       >>inflight         transfers in flight: the table, tokens, the
                          stuck check, their figures in every output
       >>html             the one-file HTML report and its SVG charts
     Process life: stops and crashes
       >>crash            the async-signal-safe crash writer
       >>signals          stop and crash handlers, the writer thread

   PRIVATE PREFIXES (memobs__PREFIX_name: functions, types and data;
   MEMOBS__PREFIX_NAME: macros and constants). Names with one underscore
   after memobs (memobs_, MEMOBS_) are the API; two (memobs__, MEMOBS__)
   are private and may change. The mutable state is memobs__g (section
   state), and each facility's own struct, named by its prefix
   (memobs__tl, memobs__coll, memobs__smp, ...). tests/docs/test_map.sh checks
   this list.
     prefixes        section        stands for: what it names
     u64 u32         hot-path       one-field counters (a plain assignment
                                    does not compile)
     own OWN         hot-path       an add to the thread's own shard, safe
                                    against a handler on that thread
     xfer size       hot-path       a transfer record (inline, slow path,
                                    the summary's unwrap); its size slot
     spin mutex      state          locks that mark the thread as in memobs
     ST W            state          STatistics of problems and drops
                                    (memobs__g.st[]); Warn-once bits
     add             state          add_sat_atomic: an atomic add that
                                    saturates (the shared sums)
     warn            diagnostics    one warning per kind
     parse env       startup        the environment's values (bool, int,
                                    bytes, seconds); report_env: a
                                    report's variable as a string
     exit            startup        the exit writers (exit_all, in the
                                    rows' order)
     atfork init     startup        fork() handlers; the one start-up
     shard SHARD     shards         a thread's shard of counts
     hist HIST       histograms     log-linear latency histograms
     req REQ         requests       the per-request table
     att ATT led     attribution    ATTribution to requests: bindings, the
                                    ledger (LEDger) of a request
     reg REG         regions        region and marker names and stats
     coll COLL peer  collectives    collectives, communicators (comm), peers
     trk TRK         tracker        the allocation table (TRacKer)
     esc ESC ACCT    tracker        the ESCrow: exact current and peak per
                                    ACCounT (memory kind or device)
     trace           tracker        an allocation's trace: tag and stack
                                    (the timeline is "timeline" inside)
     clk             timeline       the timeline's CLocK (TSC to ns)
     tl TL TLC       timeline       TimeLine: events, chunks (TLC_ states)
     dir             implementation
                                    dir_name, dir_key: a transfer direction;
                                    dir_of, dir_len: a path's folder
     alloc           reports        a snapshot of live allocations
     out             sink           the sink every text writer formats into
     OUT output      outputs        an output's id and its row in
                                    MEMOBS__OUTPUT_TABLE; output_env reads
                                    its variable, output_file is its
                                    memobs_write_*_file call
     figs            summary-text   the FIGureS one summary is written from
     text json       summary-text   the text and JSON summaries' blocks
     dest PATH       destinations   an output's DESTination: spec, path (PATH_LEN),
                                    claim
     write           whole-files    write_X_f: output X's writer to a FILE;
                                    write_whole, write_path: to a file
     whole WH WW     whole-files    a file written whole (temporary and
                                    rename): WH_ how, WW_ flags
     claim pipe O    destinations   claims on a path against the other
                                    instances; SIGPIPE held; O_ open flags
     prom PROM       prometheus     PROMetheus exposition
     pmp PMP         multiproc      Prometheus MultiProcess files (prometheus_client's)
     tsn TSN         snapshot       Torch SNapshot: device event rings
     pk PK           snapshot       PicKle writer (protocol 4) and its keys
     bg              worker         BackGround worker
     smp             sampler        SaMPler state (memobs__smp), its lock
     sl              stormlog       StormLog telemetry and notable events
     xin XIN         inflight       transfers in flight (X IN flight): the
                                    table, tokens, the stuck check
     html HTML       html           the HTML report
     crash CRASH     crash          the crash writer
     sig SIG         signals        stop and crash SIGnal handling
     sigset SA SS    signals        private sigset_t, sigaction and
                                    sigaltstack constants

   This block and the declarations below (each with its units and
   semantics) are the C reference. The long form, with concepts and
   examples, is README.md and the pages of docs/ (docs/configuration.md
   lists every variable and option).

   WHAT IT RECORDS
     Transfers: bytes and op counts for H2D, D2H and D2D, and the storage
       tier's H2S (a store), S2H (a load), D2S and S2D (GPUDirect Storage),
       each split by phase (prefill, decode, and "unphased" for records
       made with no phase set: nothing is silently filed as prefill), and
       each direction's size distribution (log2 buckets, exact counts,
       p50/p90/p99). A transfer the engine timed (a file read) carries its
       duration: its bandwidth shows beside the device-timed copies'.
       Recording is a relaxed load, a branch, the size's bucket (the
       highest bit of 2 x bytes - 1) and two plain adds on a per-thread
       shard: no lock prefix, no shared cache line. A record above
       MEMOBS_MAX_BYTES (2^56) is refused and counted as a bad record;
       sums saturate, never wrap. Shards are summed when a summary is
       read, so totals are exact under any number of threads. With an
       observer of the real copies in the process (the LD_PRELOAD
       library), the program's own records are counted apart as "manual"
       and shown beside the observed ones (memobs_set_manual_apart).
     Timings: TTFT, TPOT and end-to-end latency as histograms (count, mean,
       p50, p90, p99, max, last), through a global nano-vllm style clock or
       per request id (many requests in flight, any thread).
     Attribution (docs/requests.md): which request moved the bytes. A
       thread bound to a request (memobs_request_enter/_leave) files its
       transfer records, its engine- and device-timed time, its regions'
       time and its tracked allocations' bytes in that request's ledger;
       memobs_request_xfer(_ns, _split) files one transfer for one request
       or shares it exactly among several. A ledger holds bytes and ops
       per direction and phase, waits, tokens, TTFT/TPOT/E2E, the peak of
       tracked bytes held and a tenant (the first MEMOBS_MAX_TENANTS names;
       the rest "other"). A record with no request bound costs what it did;
       a bound one adds two plain adds. Attributed + unattributed = total,
       per direction and phase, exact under threads.
     User counters: named uint64 counters you declare once and add to from
       anywhere; they appear in every summary.
     Allocations (when you call MEMOBS_TRACK_*): a live table of address,
       size, kind (device, host, pinned, managed), device, stream, phase,
       time and trace; current and peak bytes per kind, exact under threads
       and kept in escrow: a free, and an allocation that cannot make a new
       peak, change only the calling thread's own record (no shared line,
       no lock but the table stripe's that the call holds anyway).
       A trace is a tag string and/or a stack (C return addresses captured
       with backtrace() or, opt-in, by walking frame pointers; or frames
       from a tag provider such as memobs_python.h), interned once:
       identical ones share a dense id.
       Stacks are symbolized only when a report is written. Reports: block
       table, live bytes per trace, leaks at exit, and a throttled report at
       each new device peak (boxed stacks, UTF-8 box drawing). Device memory
       also as PyTorch's memory snapshot for its viewer (pytorch.org/
       memory_viz): the live blocks and each device's bounded history of
       allocations and frees, recorded on request (memobs_write_torch_snapshot,
       MEMOBS_TORCH_SNAPSHOT, memobs_torch_history_start).
     Regions and markers: named spans of a thread (nested) and instants,
       interned once; per name count, time and markers in every summary and
       export, slices on the timeline, context and events in Stormlog,
       NVTX ranges with memobs_cuda.h.
     Collectives and peers: per communicator, kind and phase, operations,
       bytes, time, algorithm and bus bandwidth as nccl-tests defines them
       (NCCL's, through the profiler plugin libnccl-profiler-memobs.so, or
       any backend's records); bytes sent to and received from each peer (a
       rank, or a named instance: KV transfers between instances).
     Identity: job id, rank, local rank, world size, host, pid, carried by
       every export.
     Host memory (off by default; MEMOBS_SAMPLE_MS): a background thread
       samples RSS, anonymous memory, the malloc heap, tracked and device
       memory into a bounded ring; a leak detector fits their slopes and
       says in the summary when memory mapped outside malloc grows.
     Timeline (off by default; MEMOBS_TIMELINE): a bounded record of transfer,
       allocation, phase, region, collective, peer and sample events, each thread writing its
       own chunk with a TSC time stamp (about 11 ns a record:
       docs/performance.md), merged by time into a Chrome trace.

   EXPORTS
     Summary (text, JSON), Prometheus text exposition (to a FILE, a buffer,
     or a textfile-collector file rewritten atomically: MEMOBS_PROM_FILE;
     into an engine's own /metrics as prometheus_client's multiprocess
     files when PROMETHEUS_MULTIPROC_DIR is set),
     Chrome trace JSON for Perfetto UI (MEMOBS_TIMELINE), Stormlog telemetry
     schema v2 with one series per rank (MEMOBS_STORMLOG; the host series
     of a GPU process: MEMOBS_STORMLOG_HOST).
     A one-file HTML report for people (memobs_write_html, MEMOBS_HTML):
     charts as inline SVG of transfers, latency histograms, memory over
     time and the traces holding memory; opens offline; at most ~2 MB.
     Requests' ledgers (attribution): a JSON line per finished request
     (MEMOBS_REQUESTS, appended whole, the file bounded); attributed and
     unattributed bytes per direction, the top requests by bytes moved
     and by time waited in the summary (text, JSON) and the HTML report
     (tables, bars); memobs_attributed_/_unattributed_transfer_* and, with
     tenants, memobs_tenant_* families; a timeline track per request in
     flight (at most 64) with flow events to its transfers; a Stormlog
     "request" event per finished request that moved bytes.
     Collectives and peers appear in each of them once recorded: summary
     blocks, memobs_collective_* and memobs_peer_transfer_* families, a
     timeline slice per collective and a counter per peer and direction, a
     Stormlog event per collective (at most one per communicator and kind
     per 10 ms) and one per peer at the end, two HTML tables. The storage
     tier and the transfer sizes appear in every output: rows of the text
     summary once recorded (always in the JSON and Prometheus), the
     memobs_transfer_size_bytes histogram, timeline tracks, a Stormlog
     "transfers" event, the HTML report's rows and "Transfer sizes".

   COMPILE-TIME OPTIONS (define before including memobs.h)
     MEMOBS_IMPLEMENTATION    in one file only: emit the implementation.
     MEMOBS_DISABLE           PROJECT-WIDE, tested with #ifdef. Every macro
                              becomes ((void)sizeof(arg)): no code, no
                              evaluation, no warnings. Functions still link (the
                              implementation starts disabled and stays so).
     MEMOBS_MAX_COUNTERS      PROJECT-WIDE. User counter slots, default 32.
                              Changes the layout of memobs_summary_t.
     MEMOBS_NO_DEPRECATED     leave out the names before 1.0 (NAMING).
     MEMOBS_TLS_INITIAL_EXEC  every file of a module. Initial-exec TLS model for
                              the per-thread shard pointer. Makes recording from
                              inside a shared library (.so) as cheap as from an
                              executable, at the cost of static TLS space: safe
                              for libraries linked at start-up; a dlopen()ed
                              module (Python extension) needs the loader's spare
                              static TLS (glibc keeps some; usually fine).
                              Default: the compiler's model, which in a .so
                              costs about 1-2 ns more per record (GCC's
                              -mtls-dialect=gnu2 trims some of that).
     MEMOBS_HIDDEN            PROJECT-WIDE for one shared object. Gives every
                              memobs symbol hidden visibility, so a .so (say a
                              Python extension) keeps a private instance even
                              when another module with its own copy is loaded
                              with RTLD_GLOBAL. Without it, one process should
                              hold one implementation that the rest links to.
     MEMOBS_API               the declaration prefix; overrides MEMOBS_HIDDEN.
     MEMOBS_MAX_REQUESTS      implementation only. Per-request table slots
                              (rounded up to a multiple of 16), default 4096.
                              A begin that finds its sixteenth full drops
                              the request idle longest (counted). Each slot
                              holds a request's ledger: 520 bytes a slot
                              (2.1 MB at the default, touched as used).
     MEMOBS_MAX_TENANTS       implementation only. Tenant names with their
                              own counters (memobs_request_tenant), default
                              32; later names are filed as "other".
     MEMOBS_MAX_INFLIGHT      implementation only. Transfers in flight at
                              once (memobs_xfer_begin, timed CUDA copies),
                              default 4096, 1 to 16777216; beyond, a begin
                              is refused (token 0, counted). 40 bytes a
                              slot, made at the first begin.
     MEMOBS_MALLOC(sz) / MEMOBS_FREE(p)
                              implementation only; both or neither. Allocator
                              for memobs' own bookkeeping (default malloc/free),
                              but for the per-thread shards (about 25 KB a
                              thread, most of it size buckets a thread
                              never touches, so never made resident; kept
                              for the next thread), which come from mmap():
                              a signal handler may make a thread's first
                              record.
     MEMOBS_MAX_STACK         implementation only. Most frames a stack keeps
                              (C and provider, each), default 32.
     MEMOBS_CALLSTACK         implementation only. Default C stack depth of
                              every tracked allocation, default 0 (none; the
                              _S macros ask per call). Env MEMOBS_CALLSTACK.
     MEMOBS_UNWIND            implementation only. How C stacks are walked:
                              MEMOBS_UNWIND_BACKTRACE (glibc's backtrace(),
                              about 100 ns a frame; the default) or
                              MEMOBS_UNWIND_FP (frame pointers, a few ns a
                              frame, for code built with
                              -fno-omit-frame-pointer; see
                              memobs_track_set_unwinder). Env MEMOBS_UNWIND.
     MEMOBS_TRACK_CAPACITY    implementation only. Live allocations the table
                              holds, default 32768; env MEMOBS_TRACK_CAPACITY.
                              Beyond it allocations are counted, not tracked.
                              Exact up to 1024; above, the 64 table stripes
                              take it in batches of up to 16, so "full" may
                              come up to 6% early.
     MEMOBS_MAX_TRACES        implementation only. Distinct traces (power of
                              two), default 4096, with 8 frames each on
                              average: 310 bytes per trace (1.3 MB), allocated
                              at the first tracked allocation. The allocation
                              table grows with what is live (80 bytes per
                              live allocation at least) and is cut back past
                              640 bytes per entry reserved from the capacity
                              plus 40 KB (docs/allocation-tracker.md). All
                              through MEMOBS_MALLOC, never through the
                              allocator the tracker watches unless
                              MEMOBS_MALLOC is that one.
     MEMOBS_MAX_DEVICES       implementation only. Devices with their own
                              current/peak and peak report, default 16.
     MEMOBS_TORCH_EVENTS      implementation only. Events of the PyTorch
                              snapshot's history kept per device when it is
                              recorded (default 16384, 40 bytes each,
                              allocated at a device's first event; the
                              oldest are dropped and counted); env
                              MEMOBS_TORCH_EVENTS.
     MEMOBS_MAX_REGIONS       implementation only. Region and marker names
                              kept (2 to 65535, default 256; id 0 is
                              "(other)"); a thread that uses regions holds
                              64 bytes of counts per name.
     MEMOBS_EXPORT_HOST       implementation only. Defines memobs_host_api()
                              with default visibility: a table of this
                              instance's functions, through which a module
                              loaded RTLD_LOCAL (the NCCL profiler plugin)
                              records into it. MEMOBS_HOST_INSTANCE (a string,
                              default "program") names the instance.
     MEMOBS_NO_AUTOINIT       implementation only. Do not read the environment
                              from a constructor at load time; it is read at
                              the first call of memobs_init() or the first
                              record (whichever comes first) instead.
     MEMOBS_NO_HTML           implementation only. Leaves out the HTML report:
                              memobs_write_html* warn and return
                              MEMOBS_ERR_INVALID; MEMOBS_HTML gets one warning.
     MEMOBS_NO_STORMLOG       implementation only. Leaves out Stormlog (its
                              writers and events); memobs_write_stormlog* as
                              above, MEMOBS_STORMLOG(_HOST) one warning each.
     MEMOBS_NO_TORCH_SNAPSHOT implementation only. Leaves out the PyTorch
                              snapshot and its history (memobs_get_torch_history
                              reads capacity 0); memobs_write_torch_snapshot*
                              and memobs_torch_history_start/_stop as above.
                              docs/performance.md, "Size".

   OUTPUTS (the variables below marked =DEST; docs/outputs.md)
     One rule for every output variable: unset, empty, 0, off, false, no
     (any case): off. stderr or stdout: that stream; 1, on, true, yes:
     stderr. Anything else is a PATH, in which %r is the rank, %p the pid,
     %% a percent sign; a value of 512 bytes or more (1024 once expanded)
     gets one warning and is off. The PyTorch snapshot, binary, is never
     written to a terminal (one warning).
     A file is written whole: into a file of memobs' own in its folder
     (O_TMPFILE where the file system has it, else PATH.tmp.HOST.PID.N,
     O_EXCL|O_NOFOLLOW), fdatasync()ed, renamed over PATH once complete
     (a symbolic link there is replaced as a link, never followed; the
     replaced file's mode, and owner where permitted, kept; not its ACLs
     nor hard links). A killed or failed write (disk full) leaves the old
     file as it was, one warning, and no temporary (a named one left by a
     killed process of this host is removed by the next run). A
     descriptor's name (/dev/stderr, /proc/self/fd/N) and a file that is
     not regular (a device, a FIFO) are written in place, appended, never
     replaced, at exit and at a crash; a FIFO with no reader is skipped
     (one warning). docs/serving.md, "Paths". The peak and
     out-of-memory reports are appended instead, one write(2) a report.
     An exit output is written only by the process that configured it,
     or by any process when PATH holds %p (its own file): a fork() child
     never writes over its parent's files. Two memobs instances of one
     process (MEMOBS_HIDDEN modules) never write one path: the second to
     configure it writes PATH with .2 before the extension (out.2.json;
     .3, ...) and says so once; another process (another user) never
     renames one. A write to a closed pipe costs that
     output only (SIGPIPE is held and consumed around it). O_TMPFILE, the
     claims and the SIGPIPE guard are Linux's; elsewhere files go through
     named temporaries and instances are not told apart.

   ENVIRONMENT (read once, at load time or by memobs_init())
     MEMOBS=0|1               start disabled / enabled (default 1). Also
                              on/off, true/false, yes/no.
     MEMOBS_SUMMARY=DEST      write the summary at exit (OUTPUTS).
     MEMOBS_FORMAT=text|json  format of that summary and of
                              memobs_print_summary() (default text).
     MEMOBS_CALLSTACK=N       C frames captured per tracked allocation.
     MEMOBS_UNWIND=backtrace|fp
                              how C stacks are walked: backtrace() (default)
                              or frame pointers (MEMOBS_UNWIND_FP).
     MEMOBS_TRACK_CAPACITY=N  live allocations the table holds.
     MEMOBS_PEAK_REPORT=DEST  peak reports (off by default; a PATH is
                              appended to).
     MEMOBS_PEAK_GROWTH=F     report when a device's tracked bytes pass the
                              last reported maximum by this fraction
                              (default 0.10; 0 = every new maximum).
     MEMOBS_PEAK_MIN=BYTES    no report below this (default 64M; suffixes
                              K, M, G, T are binary).
     MEMOBS_LEAKS=DEST        at exit, what is still live, by trace.
     MEMOBS_REPORT_ROWS=N     rows per report table (default 50; 0 = all).
     MEMOBS_TORCH_SNAPSHOT=DEST
                              at exit, tracked device memory as PyTorch's
                              memory snapshot (a pickle: not to a terminal).
     MEMOBS_TORCH_EVENTS=N    history events kept per device for it (default
                              16384; suffixes K, M; 0 = no history). The
                              history is recorded from start-up when
                              MEMOBS_TORCH_SNAPSHOT is set, else only
                              between memobs_torch_history_start/_stop.
     MEMOBS_TIMELINE=DEST     turn the timeline on at start-up and write it
                              at exit as a Chrome trace.
     MEMOBS_TIMELINE_EVENTS=N events the timeline keeps (default 65536;
                              suffixes K, M; 0 = off). Set alone, it turns
                              the timeline on without writing it at exit.
     MEMOBS_TIMELINE_WRITE_S=S
                              a trace's write takes at most S seconds
                              (default 20; decimals allowed; 0 = no
                              limit): past it the oldest events are left
                              out, said in the file
                              (memobs_timeline_set_write_limit).
                              The three are also read under their names
                              before 1.0, MEMOBS_TRACE, MEMOBS_TRACE_EVENTS
                              and MEMOBS_TRACE_WRITE_S (the new name wins
                              when both are set).
     MEMOBS_CLOCK=auto|tsc|monotonic
                              the timeline's clock (memobs_ticks): the TSC
                              where the kernel vouches for it (auto), the
                              TSC wherever there is one, or clock_gettime.
     MEMOBS_SAMPLE_MS=N       sample host (and device) memory every N ms on a
                              background thread (default off).
     MEMOBS_SAMPLES=N         samples kept (default 4096; oldest dropped).
     MEMOBS_LEAK_WINDOW_S=N   seconds of samples the leak detector fits
                              (default 120).
     MEMOBS_STORMLOG=DEST     Stormlog telemetry (schema v2) at exit.
     MEMOBS_STORMLOG_HOST=DEST
                              the host series alone, at exit (a companion
                              file for a GPU process's host memory).
     MEMOBS_HTML=DEST         a one-file HTML report with SVG charts at exit
                              (memobs_write_html).
     MEMOBS_REGION_TIMING=0|1 time regions (default 1; 0: counted only).
     MEMOBS_REQUEST_TIMEOUT_S=S  a request with no token and no end for S
                              seconds is ended as abandoned, counted,
                              untimed (default 600; decimals allowed; 0 =
                              never; memobs_request_set_timeout).
     MEMOBS_STUCK_S=S         a transfer in flight longer than S seconds
                              (memobs_xfer_begin without its end, a timed
                              CUDA copy not seen complete) is warned about
                              once, counted, and marked on the timeline and
                              in Stormlog (default 60; decimals allowed; 0 =
                              never).
     MEMOBS_REQUESTS=DEST     a JSON line per finished request (its ledger),
                              appended, one write(2) each.
     MEMOBS_REQUESTS_MAX_BYTES=N  a regular file of the process's user at
                              or past N bytes is renamed to DEST.1 before
                              the next line (default 256M; 0 = never).
     MEMOBS_PROM_FILE=DEST    Prometheus exposition for node_exporter's textfile
                              collector, written at exit and every interval
                              below (a stream: at exit only).
     MEMOBS_PROM_INTERVAL_MS=N  period of those writes and the next ones
                              (default 15000; 0 = at exit only; else 100 to
                              86400000).
     PROMETHEUS_MULTIPROC_DIR=FOLDER
                              prometheus_client's multiprocess folder (set by
                              the engine): memobs' families are written there
                              as its files, four per process, merged into the
                              engine's /metrics ("multiproc").
     MEMOBS_PROM_MULTIPROC=0  do not write them.
     MEMOBS_PROM_MULTIPROC_LAYOUT=auto|1|2
                              their layout: 1 for prometheus_client 0.17 and
                              before, 2 for 0.18 on; auto (default): another
                              writer's files in the folder say, else 2.
     MEMOBS_JOB_ID            job id; else TORCHELASTIC_RUN_ID, SLURM_JOB_ID.
     RANK, LOCAL_RANK, WORLD_SIZE
                              identity (torchrun); else SLURM_PROCID/
                              SLURM_LOCALID/SLURM_NTASKS, then OMPI_COMM_WORLD_*,
                              then PMI_RANK/PMI_LOCAL_RANK/PMI_SIZE. Default
                              rank 0 of 1.
     MEMOBS_SIGNALS=0|1       write the exit outputs on a stop or crash
                              signal (default 1; see STOPS AND CRASHES).
     A malformed value gets one warning through the log hook and the default.

   THREADS, SIGNALS, RESET, FORK
     Every function may be called from any thread at any time, and those
     below from a signal handler too. Recording never blocks: a thread's
     first record takes a shard only if the lock is free (else it adds to
     the shared shard and tries again at its next record).
     Async-signal-safe, on any thread, whatever the handler interrupted
     (memobs itself included), on x86-64, aarch64 and the rest: every
     transfer record (the MEMOBS_RECORD_* macros, memobs_record_xfer,
     memobs_record_xfer_timed), memobs_counter_add and MEMOBS_COUNTER_ADD at a
     site that has added before, the global clock (memobs_ttft_start/
     _stop, memobs_tpot_step/_stop), memobs_record_ttft/_tpot,
     memobs_set_phase/_get_phase, memobs_observer_enter/_leave,
     memobs_get_enabled, memobs_now_ns. They never wait or spin and nothing
     they count is lost: an add to the thread's own shard is one
     instruction on x86-64 (elsewhere it is marked, and a handler's record
     that finds the mark adds atomically to the shared shard, summed like
     the others); a thread's first record, in a handler too, takes its
     shard from mmap(), never malloc (with MEMOBS_NO_AUTOINIT, call
     memobs_init() first). A handler's record that interrupted memobs on
     its thread has no timeline event. The first warning of a kind (a bad
     record) goes to the log hook from the handler: a hook of your own must
     then be async-signal-safe (the default writes one line with
     fprintf(stderr)).
     Never waiting on the thread the handler interrupted: the per-request
     calls and tracked allocs/frees (memobs_track_*, MEMOBS_TRACK_*). Made
     inside memobs on the same thread (the handler interrupted memobs while
     it held a lock), they are refused and counted (signal_dropped in every
     summary; the free of a refused alloc then counts as unknown); else
     they may wait, briefly, for a lock another thread holds, and a tracked
     alloc/free may grow or shrink the tracker's tables (MEMOBS_MALLOC/
     MEMOBS_FREE), capture a C stack (backtrace() is not safe), call the
     tag provider or write a peak report: with glibc's malloc a handler
     that interrupted malloc can hang there. From a handler, track only
     with an async-signal-safe MEMOBS_MALLOC, depth 0, no tag provider and
     no peak report. Likewise a request call that finishes a request while
     MEMOBS_REQUESTS is set (an end, or a begin, token or end that finds
     one abandoned or drops one) writes its line (open, malloc, write):
     from a handler, only without MEMOBS_REQUESTS. memobs_request_enter on
     a thread that has not recorded yet may wait for the registry's lock.
     Not from a handler: regions and markers, the first add of a
     MEMOBS_COUNTER_ADD site (it registers the name: register it before),
     and every other call (set-up, summaries, reports, exports, flush).
     memobs_reset() starts a new window: it zeroes statistics
     (by moving per-shard baselines, so it cannot lose or tear a concurrent
     record) and keeps in-flight requests, clocks, phases, identity and
     counter registrations. A record racing with a reset lands on one side
     of it. After fork() the child keeps the parent's figures; the shards of
     threads that do not exist in the child are recycled.

   STOPS AND CRASHES (when an exit output is set; MEMOBS_SIGNALS=0 or
   memobs_set_signals(0): none of this)
     SIGTERM, SIGINT, SIGHUP write every exit output, then do what they
     did before memobs: a default disposition ends the process by the
     signal once written (exit status unchanged; a second stop within 1 s
     is absorbed, a later one or a third ends it at once); SIGQUIT is left
     alone; a handler the program installed
     first is called at once with the same arguments while a thread of
     memobs writes; an ignored signal is left alone. In a process that
     holds CPython, SIGINT is left to Python (KeyboardInterrupt; the Python
     package writes at an exit by it), SIGTERM and SIGHUP are taken only
     once CPython has started. The handler only wakes that thread
     (async-signal-safe). SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT call the
     crash writer once, then the crash goes on (into a previous handler,
     else the default action). The crash writer (async-signal-safe: no
     malloc, no stdio, no lock) writes the summary, marked "crash" and
     "partial", host memory left out, and the Prometheus file, with
     memobs_crash_signal; no other output. Installed at start-up, with one
     thread; handlers installed later replace memobs'. memobs_flush()
     writes the outputs from an engine's own stop path.

   LIMITS
     Linux and other POSIX systems with GCC or Clang (nvcc host compilers
     included). The recording macros are host code (not __device__).
     Stop and crash signals: Linux on x86-64 and aarch64 only.
     Histograms are log-linear, 64 sub-buckets per power of two from 64 ns to
     ~9.8 h: reported percentiles are within 0.8% of the true sample value
     (values above the range clamp to the last bucket; max is exact).
     C stacks need glibc (elsewhere: tags only): backtrace(), or frame
     pointers on x86-64 and aarch64 (other CPUs: backtrace()). Frame
     pointers follow only callers built with -fno-omit-frame-pointer:
     through other code frames are skipped or the stack ends cut short
     (see memobs_track_set_unwinder). Frames get
     function names from dladdr(): exported symbols only (link executables
     with -rdynamic), else module+offset for addr2line; C++ names are
     demangled when the program links libstdc++. Collectives:
     MEMOBS_MAX_COMMS (64) communicators, MEMOBS_MAX_COLL_KINDS (16) kinds,
     MEMOBS_MAX_PEERS (256) peers; beyond, "(other)", "other" or no peer,
     counted. Double frees are told
     apart from unknown pointers for the last 16 frees of each of 64 table
     stripes. A free whose pointer was never tracked because the table was
     full cannot be sized: current bytes then overstate (the summary says).

   NAMING (docs/naming.md has the rules with examples and the old names)
     memobs_ functions, MEMOBS_ macros and variables, memobs__ private.
     A module's functions carry it after the prefix: memobs_track_,
     memobs_timeline_, memobs_sampler_, memobs_region_, memobs_request_,
     memobs_cuda_, memobs_py_. Arguments: what (direction, id, name), then
     how much (bytes, ns), then the phase: memobs_record_xfer(dir, bytes,
     phase) as MEMOBS_RECORD_XFER(dir, bytes, phase); a caller's buffer or
     out-pointer first. print_X(FILE *) writes text for people,
     write_X(FILE *) a machine format, write_X_file(path) the same to a
     whole file, format_X(buf, len, ...) into a buffer
     (memobs_print_summary() takes no argument: stderr). get_X(out) fills
     a snapshot. set_X(value) returns the previous value and get_X() reads
     it; a facility with a thread or a
     buffer has _start(...) and _stop(). "Timeline" is the event file
     (MEMOBS_TIMELINE), "trace" an allocation's tag and stack. The Python
     package uses the same names less "memobs_". The names before 1.0 are
     deprecated static inline aliases, compiled unless MEMOBS_NO_DEPRECATED
     is defined, each with a warning naming its replacement.

   LICENSE: MIT; the full text is at the end of this file.
*/

#ifndef MEMOBS_H
#define MEMOBS_H

#define MEMOBS_VERSION "1.0.0"
#define MEMOBS_VERSION_MAJOR 1
#define MEMOBS_VERSION_MINOR 0
#define MEMOBS_VERSION_PATCH 0
#define MEMOBS_VERSION_NUM 10000 /* major * 10000 + minor * 100 + patch */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if !defined(__GNUC__) && !defined(__clang__)
#error "memobs.h needs GCC or Clang (or nvcc with one of them as host compiler)"
#endif

#ifndef MEMOBS_MAX_COUNTERS
#define MEMOBS_MAX_COUNTERS 32
#endif
#ifndef MEMOBS_MAX_STACK
#define MEMOBS_MAX_STACK 32
#endif

#ifndef MEMOBS_API
#ifdef MEMOBS_HIDDEN
#define MEMOBS_API __attribute__((visibility("hidden")))
#else
#define MEMOBS_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Types                                                        >>api-types */
/* ======================================================================== */

/* Result codes of setup and export calls. */
enum {
    MEMOBS_OK = 0,
    MEMOBS_ERR_INVALID = -1, /* bad argument (NULL, out of range, bad name) */
    MEMOBS_ERR_IO = -2,      /* a file could not be opened or written */
    MEMOBS_ERR_FULL = -3,    /* a fixed-capacity table is full */
    MEMOBS_ERR_NOMEM = -4    /* MEMOBS_MALLOC returned NULL */
};

typedef enum {
    MEMOBS_PHASE_NONE = 0, /* "unphased": no phase was set */
    MEMOBS_PHASE_PREFILL = 1,
    MEMOBS_PHASE_DECODE = 2
} memobs_phase_t;

/* Transfer directions: the three between host and device memory, then
   the storage tier's four (a KV cache offloaded to local NVMe, a network
   filesystem or an object store): a store from host memory, a load into
   it, and device memory to and from storage with no host copy between
   (GPUDirect Storage). */
typedef enum {
    MEMOBS_DIR_H2D = 0,
    MEMOBS_DIR_D2H = 1,
    MEMOBS_DIR_D2D = 2,
    MEMOBS_DIR_H2S = 3, /* host memory -> storage: a store */
    MEMOBS_DIR_S2H = 4, /* storage -> host memory: a load */
    MEMOBS_DIR_D2S = 5, /* device memory -> storage (GPUDirect Storage) */
    MEMOBS_DIR_S2D = 6  /* storage -> device memory (GPUDirect Storage) */
} memobs_dir_t;

typedef enum { MEMOBS_FORMAT_TEXT = 0, MEMOBS_FORMAT_JSON = 1 } memobs_format_t;

enum { MEMOBS_LOG_INFO = 0, MEMOBS_LOG_WARN = 1, MEMOBS_LOG_ERROR = 2 };

typedef struct { uint64_t bytes, count; } memobs_xfer_t;
/* Copies timed on the device (memobs_cuda.h with CUDA-event timing on):
   completed bytes, copies and their summed device time. */
typedef struct { uint64_t bytes, count, ns; } memobs_timed_t;
#define MEMOBS_PHASES 3 /* memobs_phase_t values, unphased first */
#define MEMOBS_DIRS 7   /* memobs_dir_t values */
#define MEMOBS_GPU_DIRS 3 /* of them, the copies a CUDA observer sees: H2D, D2H, D2D */
/* One memobs_xfer_t per direction, in memobs_dir_t order (memobs_dirs_at). */
typedef struct { memobs_xfer_t h2d, d2h, d2d, h2s, s2h, d2s, s2d; } memobs_dirs_t;

/* Transfer sizes of one direction (all phases; not the records counted
   apart as manual): log2 buckets, exact counts. buckets[b] counts records
   of a size in (2^(b-1), 2^b] bytes, buckets[0] sizes 0 and 1. The
   percentiles and max are bucket bounds, 2^b: the true value lies in
   (2^(b-1), 2^b]; 0 when count is 0. n copies recorded at once (a CUDA
   graph's launch) are filed at their mean size. */
#define MEMOBS_SIZE_BUCKETS 57 /* up to 2^56 = MEMOBS_MAX_BYTES */
typedef struct {
    uint64_t count, bytes; /* records and their bytes (saturating) */
    uint64_t p50, p90, p99, max;
    uint64_t buckets[MEMOBS_SIZE_BUCKETS];
} memobs_xfer_sizes_t;

/* All times in nanoseconds. Percentiles within 0.8% (see LIMITS). */
typedef struct {
    uint64_t count, last_ns, mean_ns, p50_ns, p90_ns, p99_ns, max_ns;
} memobs_latency_t;

typedef struct {
    char job_id[128]; /* "" when unknown */
    char host[72];
    int64_t pid;
    int32_t rank, local_rank, world_size;
} memobs_identity_t;

typedef struct {
    const char *name; /* registered name, valid for the life of the process */
    const char *help; /* "" when none was given */
    uint64_t value;
} memobs_counter_value_t;

/* Memory kinds of the allocation tracker. */
typedef enum {
    MEMOBS_MEM_DEVICE = 0,  /* GPU memory: cudaMalloc, cudaMallocAsync, a caching allocator's blocks */
    MEMOBS_MEM_HOST = 1,    /* pageable host memory */
    MEMOBS_MEM_PINNED = 2,  /* page-locked host memory: cudaMallocHost, cudaHostAlloc, cudaHostRegister */
    MEMOBS_MEM_MANAGED = 3  /* unified memory: cudaMallocManaged */
} memobs_mem_kind_t;
#define MEMOBS_MEM_KINDS 4

#define MEMOBS_NO_TRACE 0xffffffffu /* trace id of an allocation with no tag and no stack */

/* Per memory kind. current/live are the state now; the rest cover the
   window (since start-up or the last memobs_reset(); peak starts again at
   current). Allocations the table had no room for are included. */
typedef struct {
    uint64_t current_bytes, peak_bytes;
    uint64_t live;                /* allocations not yet freed */
    uint64_t allocs, frees;       /* tracked calls in the window */
    uint64_t alloc_bytes;         /* bytes allocated in the window */
    uint64_t pending_frees;       /* freed stream-ordered, the stream not yet there: still */
    uint64_t pending_bytes;       /* in live and current_bytes (the memory is not reusable) */
} memobs_mem_stats_t;

/* Misuse and overflow of the tracker, counted rather than fatal. */
typedef struct {
    uint64_t frees_unknown;     /* free of a pointer that is not live (and not freed recently) */
    uint64_t frees_double;      /* free of a pointer freed recently and not allocated since */
    uint64_t frees_null;        /* free(NULL): legal, counted, not warned about */
    uint64_t allocs_null;       /* alloc record with a NULL pointer: ignored */
    uint64_t allocs_zero;       /* alloc record of 0 bytes: tracked */
    uint64_t allocs_duplicate;  /* alloc of a pointer already live: the old record is dropped as freed */
    uint64_t allocs_bad_kind;   /* kind that is not a memobs_mem_kind_t: ignored */
    uint64_t untracked;         /* allocs counted in the totals but not in the table (table full) */
    uint64_t untracked_bytes;
    uint64_t untracked_live;    /* of those, not yet matched by a free */
    uint64_t untracked_frees;   /* frees matched to an untracked alloc: their size and kind are
                                   unknown, so current_bytes may overstate by up to untracked_bytes
                                   and live by up to untracked_frees */
    uint64_t traces;            /* distinct traces interned (ids 0..traces-1) */
    uint64_t traces_dropped;    /* allocs whose tag/stack found the trace table full */
    uint64_t capacity;          /* allocation table capacity (MEMOBS_TRACK_CAPACITY) */
} memobs_track_problems_t;

/* One direction's transfers in flight now. */
typedef struct {
    uint64_t count, bytes;
    uint64_t oldest_ns; /* age of the oldest, ns; 0 when none */
} memobs_inflight_dir_t;
/* Transfers in flight now (memobs_xfer_begin's and memobs_cuda.h's timed
   copies), and the window's counts of what went wrong. */
typedef struct {
    memobs_inflight_dir_t dir[MEMOBS_DIRS]; /* by memobs_dir_t */
    uint64_t count, bytes, oldest_ns;       /* all directions */
    uint64_t stuck;        /* of them, in flight past MEMOBS_STUCK_S now */
    uint64_t stuck_total;  /* transfers found past it in the window (each warned about once) */
    uint64_t ended, cancelled; /* memobs_xfer_end / _cancel calls that ended one, in the window */
    uint64_t refused;      /* begins refused in the window: every slot taken */
    uint64_t misuse;       /* ends and cancels of a token not in flight, in the window */
    uint64_t stuck_after_ns; /* MEMOBS_STUCK_S in ns; 0: the check is off */
    uint64_t capacity;     /* MEMOBS_MAX_INFLIGHT */
} memobs_inflight_t;

typedef struct {
    int enabled;
    uint64_t window_ns; /* time since start-up or the last memobs_reset() */
    /* Transfers. total = prefill + decode + unphased. */
    memobs_dirs_t total, prefill, decode, unphased;
    /* The part of them that was timed, [memobs_phase_t][memobs_dir_t]:
       copies timed on the device (memobs_cuda.h), completed ones only, and
       transfers the engine timed itself (memobs_record_xfer_ns: a load or
       store it waited for); bandwidth = bytes / ns. In flight: device-timed
       copies issued, not yet completed (or not yet seen completed). */
    memobs_timed_t timed[MEMOBS_PHASES][MEMOBS_DIRS];
    uint64_t timed_in_flight_copies, timed_in_flight_bytes;
    /* Transfer sizes by memobs_dir_t. */
    memobs_xfer_sizes_t sizes[MEMOBS_DIRS];
    /* Records counted apart as the program's own claims while an observer
       (the LD_PRELOAD library) fills the transfer figures above; see
       memobs_set_manual_apart. apart: 1 while records are kept apart. */
    struct {
        int apart;
        memobs_dirs_t total, prefill, decode, unphased;
    } manual;
    /* Timings, from both the global clock and per-request calls. */
    memobs_latency_t ttft, tpot, e2e;
    /* Per-request table. */
    uint64_t requests_begun, requests_completed, requests_aborted, requests_in_flight;
    uint64_t requests_abandoned; /* idle past the request timeout: ended untimed */
    uint64_t requests_dropped;   /* in flight, dropped untimed for a begin with the table full */
    uint64_t requests_unknown;   /* token/end for an id that is not in flight */
    uint64_t requests_duplicate; /* begin for an id already in flight */
    /* Attribution (memobs_request_enter/_leave, memobs_request_xfer*): the
       part of the transfer figures above made on a request's behalf, by
       phase; unattributed = total - attributed, per direction and phase. */
    struct {
        memobs_dirs_t total, prefill, decode, unphased;
        uint64_t orphan_bytes; /* attributed to an id not in flight: in no request's ledger */
        uint64_t bind_misuse;  /* leaves with no enter, enters deeper than MEMOBS_REQUEST_DEPTH */
        uint64_t tenant_misuse; /* bad names, ids not in flight, a second tenant */
    } attributed;
    /* Misuse, counted rather than fatal. */
    uint64_t ttft_unmatched; /* TTFT_STOP without a TTFT_START */
    uint64_t tpot_unarmed;   /* TPOT_STEP before any TTFT_STOP */
    uint64_t bad_records;    /* record with an invalid direction/phase/counter, or a value above
                                MEMOBS_MAX_BYTES / MEMOBS_MAX_NS: refused */
    uint64_t untracked_threads; /* records that fell back to the shared shard: no memory for a shard */
    uint64_t signal_dropped; /* tracked allocs/frees and request calls refused because they were made
                                inside memobs on the same thread: a signal handler that interrupted
                                memobs (see THREADS, SIGNALS) */
    uint64_t region_unmatched_ends; /* memobs_region_end with no region open on the thread */
    uint64_t region_too_deep;       /* regions begun beyond MEMOBS_REGION_DEPTH (neither timed nor counted by name) */
    uint64_t region_names_dropped;  /* begins and markers filed under "(other)": NULL, "", table full */
    /* Allocation tracker, by memobs_mem_kind_t. */
    int tracking; /* 1 once any allocation was tracked */
    memobs_mem_stats_t mem[MEMOBS_MEM_KINDS];
    memobs_track_problems_t track;
    /* User counters, in registration order. */
    uint32_t ncounters;
    memobs_counter_value_t counters[MEMOBS_MAX_COUNTERS];
    memobs_identity_t identity;
    memobs_inflight_t in_flight; /* transfers in flight (memobs_xfer_begin, memobs_cuda.h's timed copies) */
} memobs_summary_t;

typedef int32_t memobs_counter_t; /* counter handle; negative = invalid */

typedef void (*memobs_log_fn)(int level, const char *msg, void *user);

/* ======================================================================== */
/* Control                                                    >>api-control */
/* ======================================================================== */

/* Reads the environment once (also done at load time). Idempotent. */
MEMOBS_API int memobs_init(void);
/* Recording on (1) or off (0); returns the previous setting. */
MEMOBS_API int memobs_set_enabled(int on);
MEMOBS_API int memobs_get_enabled(void);
/* Starts a new statistics window (see THREADS, RESET, FORK). */
MEMOBS_API void memobs_reset(void);
/* Replaces the diagnostics sink (default: "memobs: warning: ..." on stderr).
   fn == NULL restores the default. */
MEMOBS_API void memobs_set_log(memobs_log_fn fn, void *user);
MEMOBS_API const char *memobs_strerror(int err);
/* CLOCK_MONOTONIC in nanoseconds: the clock all memobs timings use. */
MEMOBS_API uint64_t memobs_now_ns(void);
/* Stop and crash signals (see STOPS AND CRASHES): 1 (the default; env
   MEMOBS_SIGNALS) puts memobs' handlers in front of SIGTERM, SIGINT,
   SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT when an exit
   output is configured (none otherwise); 0 puts back what they replaced,
   where they are still installed. Returns the setting before the call
   (always 0 where memobs has no signal handling: see LIMITS). */
MEMOBS_API int memobs_set_signals(int on);
MEMOBS_API int memobs_get_signals(void);

/* ======================================================================== */
/* Transfers and phase                                      >>api-transfers */
/* ======================================================================== */

/* Current phase of the calling thread, read by the _CUR record forms.
   Returns MEMOBS_OK, or MEMOBS_ERR_INVALID (phase unchanged) for a value
   that is not a memobs_phase_t. */
MEMOBS_API int memobs_set_phase(memobs_phase_t phase);
MEMOBS_API memobs_phase_t memobs_get_phase(void);

/* The largest byte count one record, counter add or tracked size may
   carry (2^56 bytes, 64 PiB): a larger one (a negative size cast to
   unsigned, UINT64_MAX) is refused, nothing of it is kept, and it is
   counted as a bad record (bad_records; with one warning). Sums of bytes
   and counters, one thread's and over threads, phases and windows, and the
   latency sums, saturate at UINT64_MAX instead of wrapping. */
#define MEMOBS_MAX_BYTES (UINT64_C(1) << 56)

/* Function form of the record macros; dir, phase and bytes are checked. */
MEMOBS_API void memobs_record_xfer(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase);

/* A transfer the engine timed itself: a file read it waited for, an
   asynchronous I/O's completion, a GPUDirect Storage read. Records the
   transfer as memobs_record_xfer does and adds it, with its duration ns,
   to the timed figures of its direction and phase, so that its bandwidth
   shows beside the device-timed copies'. ns 0: recorded, not timed; ns
   above MEMOBS_MAX_NS: refused whole (a bad record). Any direction; made
   for the storage tier's, whose time only the engine knows. */
MEMOBS_API void memobs_record_xfer_ns(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase, uint64_t ns);

/* The entry of direction dir (a memobs_dir_t below MEMOBS_DIRS). */
static inline memobs_xfer_t *memobs_dirs_at(memobs_dirs_t *d, unsigned dir) {
    return &(&d->h2d)[dir < MEMOBS_DIRS ? dir : 0];
}
static inline const memobs_xfer_t *memobs_dirs_get(const memobs_dirs_t *d, unsigned dir) {
    return &(&d->h2d)[dir < MEMOBS_DIRS ? dir : 0];
}

/* For a backend that times copies on the device (memobs_cuda.h does): a
   completed copy of bytes that took ns there, and the change in copies
   issued but not yet completed. The bytes were recorded as issued already. */
MEMOBS_API void memobs_record_xfer_timed(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase, uint64_t ns);
MEMOBS_API void memobs_timed_in_flight(int64_t copies, int64_t bytes);

/* Observed and manual transfers. A library that sees the real copies (the
   LD_PRELOAD library, preload/memobs_preload.c) makes its records
   between memobs_observer_enter() and memobs_observer_leave() on the
   calling thread, and calls memobs_set_manual_apart(1) once: from then on a
   transfer record made outside an observer (MEMOBS_RECORD_*,
   memobs_record_xfer, the Python package's record_*) is the program's own
   claim, "manual", counted apart per phase and direction (an atomic add on
   a shared line, not the per-thread shard), and not in the transfer
   figures, which hold what was observed. Summaries show both per
   direction and their difference: the check on hand-counted bytes.
   memobs_set_manual_apart(0) counts every record as before; what was counted
   apart stays in the manual figures until memobs_reset(). Returns the
   previous setting. memobs_set_enabled(0) then 1 keeps it. The storage
   directions are never counted apart: no observer sees them, so the
   program's records of them are the figures. */
MEMOBS_API int memobs_set_manual_apart(int on);
MEMOBS_API int memobs_get_manual_apart(void);

/* Transfers in flight. memobs_xfer_begin(dir, bytes, phase) when the
   engine starts a transfer it will wait for elsewhere (an asynchronous
   file read, a network fetch of KV blocks, a GPUDirect Storage read);
   memobs_xfer_end(token) when it is done: the transfer is then recorded
   as memobs_record_xfer_ns records it, its duration the time between the
   two calls. A thread bound to a request at the begin
   (memobs_request_enter) has the transfer filed for that request at the
   end, on whatever thread ends it (memobs_request_xfer_ns); else the
   ending thread's binding, if any, takes it. memobs_xfer_cancel(token)
   ends one with no record (a transfer abandoned). From begin to end the
   transfer is in flight: counted per direction with its bytes and age
   (memobs_get_inflight, every summary and export), and one warning, a
   timeline instant and a Stormlog "transfer_stuck" event say so once
   when it has been in flight longer than MEMOBS_STUCK_S (default 60 s;
   0: never). memobs_cuda.h's timed copies are in flight the same way
   from issue until their end event is seen complete (recorded at issue,
   not again).
   A token is never 0 and names one transfer only (a slot and its
   generation): 0 from memobs_xfer_begin means no token (memobs off; a bad
   direction, phase or size: a bad record; all MEMOBS_MAX_INFLIGHT slots
   taken: refused). memobs_xfer_end and _cancel return MEMOBS_OK, or
   MEMOBS_ERR_INVALID for a token not in flight (0, never issued, ended
   already, from before a fork()): counted as misuse, with one warning.
   Not from a signal handler. */
MEMOBS_API uint64_t memobs_xfer_begin(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase);
MEMOBS_API int memobs_xfer_end(uint64_t token);
MEMOBS_API int memobs_xfer_cancel(uint64_t token);

/* Fills *out (memobs_inflight_t, with the types; also every summary's
   in_flight): MEMOBS_OK, MEMOBS_ERR_INVALID for NULL. Settles
   memobs_cuda.h's completed copies first and runs the stuck check. */
MEMOBS_API int memobs_get_inflight(memobs_inflight_t *out);

/* ======================================================================== */
/* Timing                                                      >>api-timing */
/* ======================================================================== */

/* Global clock, nano-vllm compatible: every call yields a sample, not a
   last value. TTFT_STOP consumes the start (a second stop is counted as
   unmatched) and arms the TPOT clock; TPOT_STEP samples the time since the
   previous token; TPOT_STOP disarms it (engine idle). */
MEMOBS_API void memobs_ttft_start(void);
MEMOBS_API void memobs_ttft_stop(void);
MEMOBS_API void memobs_tpot_step(void);
MEMOBS_API void memobs_tpot_stop(void);
/* A TTFT or TPOT the caller measured itself, in ns (an engine that keeps
   its own clock, as nano-vllm's observers do): one sample; 0 is ignored,
   one above MEMOBS_MAX_NS refused and counted as a bad record. */
#define MEMOBS_MAX_NS (UINT64_C(1) << 56) /* about 2.3 years: any real duration passes */
MEMOBS_API void memobs_record_ttft(uint64_t ns);
MEMOBS_API void memobs_record_tpot(uint64_t ns);

/* Per request. The first token gives a TTFT sample, later tokens TPOT
   samples (time since the previous token of that request), end an E2E
   sample (requests with no token are counted as aborted). A begin for an id
   already in flight keeps the first begin time. Both clocks feed the same
   TTFT/TPOT histograms: time a stream of requests with one or the other. */
MEMOBS_API void memobs_request_begin(uint64_t id);
MEMOBS_API void memobs_request_token(uint64_t id);
MEMOBS_API void memobs_request_end(uint64_t id);

/* Requests that never end (a client that went away, an engine that lost
   the end) do not stay in the table: a request with no token and no end
   for the request timeout since its begin or its last token is ended as
   abandoned, counted (requests_abandoned), with no E2E sample; a token or
   end for it afterwards counts as unknown. Idle time, not age: a long
   generation that keeps producing tokens is never abandoned. They are
   found when a begin lands on their part of the table, when a token or end
   names one, and when a summary is taken (every output), so the count is
   current; the hot path pays a compare. The table never stops timing new
   requests: a begin that finds its part of the table (MEMOBS_MAX_REQUESTS
   / 16 slots) full of live requests drops the one idle longest, untimed,
   and counts it (requests_dropped; one warning): raise
   MEMOBS_MAX_REQUESTS or lower the timeout.
   memobs_request_set_timeout(ns) sets the timeout in ns (0: never; at most
   1e9 s, larger values are clamped) and returns the previous one;
   memobs_request_get_timeout() reads it. Default 600 s; env
   MEMOBS_REQUEST_TIMEOUT_S (seconds, decimals allowed). */
MEMOBS_API uint64_t memobs_request_set_timeout(uint64_t ns);
MEMOBS_API uint64_t memobs_request_get_timeout(void);

/* Attribution (docs/requests.md): which request moved the bytes, waited
   on the transfers and held the memory. Each of the two ways records the
   transfer in the figures as any record does and, besides, in the ledger
   of the request it was made for:
     memobs_request_enter(id) ... memobs_request_leave(), on one thread:
       every transfer record the thread makes in between (MEMOBS_RECORD_*,
       memobs_cuda.h's wrappers, the LD_PRELOAD library's observed copies)
       is request id's, with the time of its engine-timed transfers, of
       its device-timed copies (memobs_cuda.h: when their event completes),
       of the regions it ends and the bytes its tracked allocations hold.
       Enters nest MEMOBS_REQUEST_DEPTH (8) deep: the innermost request
       gets the records, leave returns to the one outside; a leave with no
       enter, and an enter deeper, are counted (attributed.bind_misuse).
       A record with no request bound pays one test of a flag of the
       thread's; a bound one two more adds to the thread's own counts. The
       ledger is brought up to date at leave, at the next enter, and when
       the request ends on the thread bound to it: one lock of its part of
       the request table.
     memobs_request_xfer(id, dir, bytes, phase), from any thread: one
       transfer made on id's behalf (an engine that moves a batch's blocks
       from its scheduler thread); a thread's binding does not take it.
       memobs_request_xfer_ns: one the engine timed (ns), as
       memobs_record_xfer_ns. memobs_request_xfer_split: one transfer of
       bytes made for n requests, shared by the weights shares[] (tokens,
       blocks): part i is the difference of the rounded cumulative shares,
       floor(bytes x (s_0 + ... + s_i) / S) - floor(bytes x (s_0 + ... +
       s_(i-1)) / S) with S the sum, so the parts are whole bytes, each
       within one byte of its exact share, and add up to bytes (all shares
       0: equal shares). It is one operation of the figures and one of
       each request's ledger. Returns MEMOBS_OK, or MEMOBS_ERR_INVALID for
       n 0, a NULL array, a bad direction, phase or size (nothing kept).
   A ledger lives while its request is in flight (memobs_request_begin to
   memobs_request_end, or abandoned, or dropped: then it is finished as
   such). What is attributed to an id that is not in flight stays in the
   attributed figures and is counted in attributed.orphan_bytes (in no
   ledger). Records counted apart as manual (memobs_set_manual_apart) are
   not in the transfer figures: they are attributed to no request.
   memobs_request_tenant(id, name) files request id (in flight) under a
   tenant: name is 1 to 63 bytes of UTF-8, no control characters; the
   first MEMOBS_MAX_TENANTS names (default 32) have counters of their own,
   later names are filed as "other". A request's tenant is set once (a
   second name is counted as misuse, kept first). Returns MEMOBS_OK,
   MEMOBS_ERR_INVALID (a bad name, an id not in flight). */
#define MEMOBS_REQUEST_DEPTH 8
MEMOBS_API void memobs_request_enter(uint64_t id);
MEMOBS_API void memobs_request_leave(void);
MEMOBS_API void memobs_request_xfer(uint64_t id, memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase);
MEMOBS_API void memobs_request_xfer_ns(uint64_t id, memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase,
                                       uint64_t ns);
MEMOBS_API int memobs_request_xfer_split(const uint64_t *ids, const uint64_t *shares, size_t n, memobs_dir_t dir,
                                         uint64_t bytes, memobs_phase_t phase);
MEMOBS_API int memobs_request_tenant(uint64_t id, const char *name);
/* The request the calling thread is bound to (innermost): 1 and *id, or
   0 when none is. */
MEMOBS_API int memobs_request_current(uint64_t *id);

/* A request's ledger. */
typedef enum {
    MEMOBS_REQUEST_IN_FLIGHT = 0,
    MEMOBS_REQUEST_COMPLETED = 1, /* ended after a token */
    MEMOBS_REQUEST_ABORTED = 2,   /* ended with no token */
    MEMOBS_REQUEST_ABANDONED = 3, /* idle past the request timeout */
    MEMOBS_REQUEST_DROPPED = 4    /* dropped for a begin with the table full */
} memobs_request_state_t;
typedef struct {
    uint64_t id;
    char tenant[64];                   /* "" when none was set; "other" past MEMOBS_MAX_TENANTS */
    memobs_request_state_t state;
    uint64_t begin_ns, end_ns;         /* memobs_now_ns() clock; end_ns 0 while in flight */
    memobs_dirs_t xfer[MEMOBS_PHASES]; /* bytes and operations, by memobs_phase_t and direction */
    uint64_t engine_ns[MEMOBS_DIRS];   /* time of its engine-timed transfers (memobs_record_xfer_ns, _xfer_ns) */
    uint64_t device_ns[MEMOBS_DIRS];   /* time of its device-timed copies (memobs_cuda.h) */
    uint64_t wait_ns;                  /* the sum of engine_ns and device_ns: time waited on transfers */
    uint64_t region_ns;                /* time of the regions its bound threads ended */
    uint64_t tokens, ttft_ns, tpot_ns, e2e_ns; /* tpot_ns: the mean; 0 when not measured */
    uint64_t current_bytes, peak_bytes; /* tracked bytes its allocations hold, and their peak */
} memobs_request_info_t;
/* The ledger of request id while it is in flight: MEMOBS_OK, or
   MEMOBS_ERR_INVALID (out NULL, id not in flight). */
MEMOBS_API int memobs_request_info(uint64_t id, memobs_request_info_t *out);
/* The requests finished since start-up or the last memobs_reset() with
   the most bytes moved (by MEMOBS_REQUEST_TOP_BYTES) or the longest time
   waited on transfers (MEMOBS_REQUEST_TOP_WAIT), largest first: up to n
   of the MEMOBS_REQUEST_TOP (10) kept; returns how many were written. */
#define MEMOBS_REQUEST_TOP 10
enum { MEMOBS_REQUEST_TOP_BYTES = 0, MEMOBS_REQUEST_TOP_WAIT = 1 };
MEMOBS_API size_t memobs_request_top(int by, memobs_request_info_t *out, size_t n);

/* ======================================================================== */
/* Regions and markers                                        >>api-regions */
/* ======================================================================== */

/* What the engine is doing: a region is a named span of a thread ("decode
   step", "nccl all_reduce", "kv offload"), begun and ended on that thread
   and nested up to MEMOBS_REGION_DEPTH deep; a marker is a named instant.
   One vocabulary for every output:
     summary, JSON, Prometheus  per name: regions ended, how many were
                                timed, total and max time, markers;
     timeline (when on)         a slice per region on its thread's track
                                ("regions, thread N"), an instant per marker;
     Stormlog                   samples carry the regions open on the
                                process's threads in `context`; regions and
                                markers whose name Stormlog takes for a
                                collective (nccl, all_reduce, barrier, ...)
                                are also events of their own;
     NVTX (memobs_cuda.h)       a range per region, a mark per marker, in
                                the domain "memobs" (Nsight Systems).
   Phases and regions: the phase (memobs_set_phase) is a state of a thread
   that files its transfer records under prefill, decode or unphased;
   regions file nothing, they name spans of time. A "decode step" region
   inside the decode phase is the usual pairing; the two never change each
   other.

   Names are interned once in a table of MEMOBS_MAX_REGIONS names (id 0 is
   "(other)"): a name is cut to 63 bytes at a character boundary and bytes
   that are not UTF-8 become U+FFFD, so each name is one label everywhere.
   A NULL or empty name, or a new name with the table full, is counted
   (region_names_dropped) and its regions go under "(other)".
   An end with no region open on the thread is counted
   (region_unmatched_ends), never fatal; regions deeper than
   MEMOBS_REGION_DEPTH are kept in step (their end pops nothing else) but
   neither timed nor counted under their name (region_too_deep counts
   them). A region left open when its thread exits
   is dropped with the thread. After fork() the child's forking thread
   keeps its open regions.
   Cost: the macros look a name up once per call site; with the timeline
   off and region timing off a begin+end is a store of the id and the
   depth on the thread (bench: "region begin+end"). Region timing (on by
   default; memobs_region_set_timing, MEMOBS_REGION_TIMING=0|1) adds a clock
   read at the begin and one at the end. With timing off a region is
   still timed when the timeline is on (its slice) or its name is a
   collective (Stormlog's event); the stats then count those times. memobs_region_begin(name) hashes the name on every call:
   prefer the macros or an id from memobs_region_intern in hot loops. */
#define MEMOBS_REGION_DEPTH 32 /* open regions a thread keeps (deeper ones are counted) */
typedef int32_t memobs_region_t; /* an interned name; negative: none */

/* Interns name; the id (>= 1), 0 ("(other)") when the table is full, or
   MEMOBS_ERR_INVALID for NULL or "". */
MEMOBS_API memobs_region_t memobs_region_intern(const char *name);
/* The interned text of an id (valid for the life of the process), NULL
   for an id that was never given out. */
MEMOBS_API const char *memobs_region_label(memobs_region_t id);
MEMOBS_API void memobs_region_begin(const char *name);
MEMOBS_API void memobs_region_begin_id(memobs_region_t id);
/* Ends the innermost region open on the calling thread. */
MEMOBS_API void memobs_region_end(void);
MEMOBS_API void memobs_mark(const char *name);
MEMOBS_API void memobs_mark_id(memobs_region_t id);
/* Regions open on the calling thread (deeper than MEMOBS_REGION_DEPTH
   included). */
MEMOBS_API int memobs_region_depth(void);
/* Region timing on (1) or off (0); returns the previous setting.
   memobs_region_get_timing() reads it. */
MEMOBS_API int memobs_region_set_timing(int on);
MEMOBS_API int memobs_region_get_timing(void);

typedef struct {
    memobs_region_t id;
    const char *name;    /* interned, valid for the life of the process */
    uint64_t count;      /* regions of this name ended in the window */
    uint64_t timed;      /* of those, timed (timing was on at their end) */
    uint64_t total_ns;   /* their summed time; mean = total_ns / timed */
    uint64_t max_ns;     /* the longest in the window */
    uint64_t marks;      /* markers of this name in the window */
    int collective;      /* the name reads as a collective to Stormlog */
} memobs_region_stats_t;
/* Every interned name (id order, "(other)" first), whether used in the
   window or not; returns how many there are (at most max are written;
   out may be NULL when max is 0). */
MEMOBS_API size_t memobs_get_regions(memobs_region_stats_t *out, size_t max);

/* ======================================================================== */
/* User counters                                             >>api-counters */
/* ======================================================================== */

/* Registers a counter (or finds one of the same name: any file may register
   the same name and gets the same handle). Names match
   [a-zA-Z_][a-zA-Z0-9_]{0,62}. Returns a handle >= 0, or MEMOBS_ERR_INVALID /
   MEMOBS_ERR_FULL (with a warning). */
MEMOBS_API memobs_counter_t memobs_counter_register(const char *name, const char *help);
/* memobs_counter_add(handle, n) is an inline function declared below. */

/* ======================================================================== */
/* Collectives and peers                                  >>api-collectives */
/* ======================================================================== */

/* Traffic between processes: collectives of a communicator (NCCL's, seen
   by the profiler plugin libnccl-profiler-memobs.so, or any backend that
   records them itself) and bytes sent to or received from a peer (a rank
   of a communicator, or a named instance: an engine's own KV transfers
   over NIXL, UCX, RDMA or TCP). docs/collectives.md has the whole story.

   Communicators: memobs_coll_register_comm(name, id, rank, nranks, nnodes)
   returns a handle; the same id and rank give the same handle (NCCL inits
   once per communicator; a split gets a new id). nranks 0 = unknown: bytes
   and ops are kept, bus bandwidth is not (never guessed). At most
   MEMOBS_MAX_COMMS; beyond it the handle of "(other)" (comms_dropped).

   Kinds: fixed ids for the collectives NCCL names, and any other name
   interned once (memobs_coll_kind_intern("AllGatherV") -> "other:AllGatherV"
   style ids up to MEMOBS_MAX_COLL_KINDS; beyond it MEMOBS_COLL_OTHER).

   One record per operation when it completes: bytes = count x datatype
   size, NCCL's message size (per rank for all_gather/reduce_scatter, per
   peer for all_to_all); ns its duration (GPU time where known), 0 =
   untimed. memobs derives the algorithm size S and the bus factor as
   nccl-tests defines them from the kind and the communicator's nranks:
   S = bytes x nranks for all_gather, reduce_scatter and all_to_all, else
   bytes; busbw factor 2(n-1)/n all_reduce, (n-1)/n all_gather,
   reduce_scatter, all_to_all, 1 broadcast, reduce, send, recv, send_recv;
   none for gather, scatter and other kinds, nor when nranks is 0. algbw =
   S / t, busbw = S x factor / t, over timed operations only (bus_bytes is
   computed exactly from the summed S: rounded down once).
   Records are a few relaxed atomic adds; registration takes a lock.
   memobs_reset() zeroes the figures and notes, keeps the registrations. */
#define MEMOBS_MAX_COMMS 64      /* communicators a process keeps, "(other)" included */
#define MEMOBS_MAX_COLL_KINDS 16 /* collective kinds, the fixed ones included */
#define MEMOBS_MAX_PEERS 256     /* named peers and ranks of communicators */

typedef int32_t memobs_comm_t;      /* a communicator; negative: none */
typedef int32_t memobs_coll_kind_t; /* a collective kind; negative: none */
typedef int32_t memobs_peer_t;      /* a peer; negative: none */

enum {
    MEMOBS_COLL_ALL_REDUCE = 0, /* "all_reduce" */
    MEMOBS_COLL_ALL_GATHER,     /* "all_gather" */
    MEMOBS_COLL_REDUCE_SCATTER, /* "reduce_scatter" */
    MEMOBS_COLL_BROADCAST,      /* "broadcast" */
    MEMOBS_COLL_REDUCE,         /* "reduce" */
    MEMOBS_COLL_ALL_TO_ALL,     /* "all_to_all" */
    MEMOBS_COLL_GATHER,         /* "gather" */
    MEMOBS_COLL_SCATTER,        /* "scatter" */
    MEMOBS_COLL_SEND,           /* "send" */
    MEMOBS_COLL_RECV,           /* "recv" */
    MEMOBS_COLL_SEND_RECV,      /* "send_recv" */
    MEMOBS_COLL_OTHER,          /* "other": a name that did not fit */
    MEMOBS_COLL_FIXED_KINDS     /* first id interned from a name */
};

typedef enum { MEMOBS_PEER_SEND = 0, MEMOBS_PEER_RECV = 1 } memobs_peer_dir_t;
#define MEMOBS_PEER_DIRS 2

/* Returns the communicator's handle; MEMOBS_ERR_INVALID for rank < 0 or
   rank >= nranks (when nranks > 0). name NULL or "" reads "comm <id hex>".
   The first registration (here, or of a kind or peer) makes the tables of
   counts (about 350 KB, mmap()); without memory every registration
   returns MEMOBS_ERR_NOMEM (one warning) and nothing is recorded. */
MEMOBS_API memobs_comm_t memobs_coll_register_comm(const char *name, uint64_t id, int rank, int nranks,
                                                   int nnodes);
/* A kind from a name: NCCL's ("AllReduce", "AllGather", "ReduceScatter",
   "Broadcast", "Reduce", "AlltoAll", "Gather", "Scatter", "Send", "Recv",
   "SendRecv") or memobs' own ("all_reduce", ...) give the fixed ids; any
   other gets an id of its own, labelled "other:<name>". */
MEMOBS_API memobs_coll_kind_t memobs_coll_kind_intern(const char *name);
/* The label of a kind ("all_reduce", "other:AllGatherV"), NULL if unknown. */
MEMOBS_API const char *memobs_coll_kind_label(memobs_coll_kind_t kind);

/* One completed collective (or p2p operation) of comm. */
MEMOBS_API void memobs_record_coll(memobs_comm_t comm, memobs_coll_kind_t kind, uint64_t bytes,
                                   memobs_phase_t phase, uint64_t ns);
/* The same with what the timeline slice and Stormlog event show. */
typedef struct {
    memobs_comm_t comm;
    memobs_coll_kind_t kind;
    memobs_phase_t phase;
    uint64_t bytes;    /* count x datatype size */
    uint64_t ns;       /* duration, 0 = untimed */
    uint64_t start_ns; /* memobs_now_ns() when issued; 0 = now - ns */
    uint64_t seq;      /* the backend's sequence number, 0 = none */
    const char *algo;  /* "RING", "TREE", ... or NULL */
    const char *proto; /* "SIMPLE", "LL", "LL128" or NULL */
    int nchannels;     /* 0 = unknown */
    int captured;      /* issued inside a CUDA graph capture (a replay) */
} memobs_coll_record_t;
MEMOBS_API void memobs_record_coll_ex(const memobs_coll_record_t *rec);

/* Peers. memobs_peer_intern(name) interns a named peer ("decode-3",
   "10.0.0.7:5600"), as memobs_region_intern: cut to 63 bytes, UTF-8;
   NULL/"" is MEMOBS_ERR_INVALID; a full table gives MEMOBS_ERR_FULL
   (peers_dropped, one warning). memobs_peer_rank(comm, rank) is a rank of
   a communicator as a peer (its label "<comm name> r<rank>"). */
MEMOBS_API memobs_peer_t memobs_peer_intern(const char *name);
MEMOBS_API memobs_peer_t memobs_peer_rank(memobs_comm_t comm, int rank);
/* bytes sent to (MEMOBS_PEER_SEND) or received from (MEMOBS_PEER_RECV) a
   peer, in a phase; _timed adds the duration the caller measured (ns, 0
   = untimed). A bad peer, dir, phase or bytes > MEMOBS_MAX_BYTES is a bad
   record (nothing kept). */
MEMOBS_API void memobs_record_peer_xfer(memobs_peer_t peer, memobs_peer_dir_t dir, uint64_t bytes,
                                        memobs_phase_t phase);
MEMOBS_API void memobs_record_peer_xfer_timed(memobs_peer_t peer, memobs_peer_dir_t dir, uint64_t bytes,
                                              memobs_phase_t phase, uint64_t ns);

/* Snapshots. One row per (communicator, kind, phase) with ops > 0, in
   that order; returns how many there are (at most max written; out may be
   NULL when max is 0). algo_bytes and bus_bytes cover timed operations
   only, as ns does: algbw = algo_bytes / ns, busbw = bus_bytes / ns. */
typedef struct {
    memobs_comm_t comm;
    const char *comm_name; /* valid for the life of the process */
    uint64_t comm_id;
    int rank, nranks, nnodes;
    memobs_coll_kind_t kind;
    const char *kind_name;
    memobs_phase_t phase;
    uint64_t ops, bytes;       /* every operation */
    uint64_t timed_ops, ns;    /* those with a duration, and its sum */
    uint64_t algo_bytes;       /* S of the timed operations */
    uint64_t bus_bytes;        /* S x bus factor of the timed operations (0: no factor) */
    double algbw_gbs, busbw_gbs; /* 1e9 bytes/s; 0 when nothing timed or no factor */
} memobs_coll_stats_t;
MEMOBS_API size_t memobs_coll_get_stats(memobs_coll_stats_t *out, size_t max);

/* One row per peer used (bytes or ops nonzero), id order. */
typedef struct {
    memobs_peer_t id;
    const char *name;  /* the named peer, or the rank's label */
    memobs_comm_t comm; /* -1 for a named peer */
    int rank;           /* -1 for a named peer */
    uint64_t bytes[MEMOBS_PEER_DIRS][MEMOBS_PHASES]; /* [dir][phase] */
    uint64_t ops[MEMOBS_PEER_DIRS][MEMOBS_PHASES];
    uint64_t ns[MEMOBS_PEER_DIRS][MEMOBS_PHASES];    /* summed durations of timed records */
} memobs_peer_stats_t;
MEMOBS_API size_t memobs_peer_get_stats(memobs_peer_stats_t *out, size_t max);

/* Where the collective figures come from, set by the backend (the NCCL
   plugin) and shown in every output. */
typedef enum {
    MEMOBS_COLL_NOTE_EVENTS_DROPPED = 0, /* events the backend's pool could not hold */
    MEMOBS_COLL_NOTE_BAD_EVENTS,         /* stops of unknown or stopped events */
    MEMOBS_COLL_NOTE_CAPTURED_CALLS,     /* calls made during a CUDA graph capture */
    MEMOBS_COLL_NOTE_CAPTURED_REPLAYS,   /* their replays seen (counted operations) */
    MEMOBS_COLL_NOTES
} memobs_coll_note_t;
typedef struct {
    char source[32];   /* "nccl-profiler", "" when no backend said */
    char instance[16]; /* whose memobs the backend records into: "preload", "python", "program", "own" */
    char level[16];    /* the backend's level: "api", "coll", "proxy", "net" */
    int api_version;   /* NCCL profiler API version NCCL chose (1..6), 0 none */
    uint64_t notes[MEMOBS_COLL_NOTES];
    uint64_t comms_dropped, kinds_dropped, peers_dropped; /* full tables (memobs' own) */
} memobs_coll_info_t;
/* Strings are copied (NULL keeps the old one); notes are added with
   memobs_coll_note. */
MEMOBS_API void memobs_coll_set_source(const char *source, const char *instance, const char *level,
                                       int api_version);
MEMOBS_API void memobs_coll_note(memobs_coll_note_t what, uint64_t n);
MEMOBS_API void memobs_coll_get_info(memobs_coll_info_t *out);

/* What a module that records into another module's memobs needs (the
   NCCL plugin, loaded RTLD_LOCAL by NCCL): a table of function pointers
   and the ABI key. Defined by the implementation with default visibility
   when MEMOBS_EXPORT_HOST is defined (the LD_PRELOAD library and the
   Python package define it; an engine that wants the plugin to record
   into its own memobs defines it and exports the symbol:
   -Wl,--export-dynamic-symbol=memobs_host_api). A module uses the table
   only when abi_key equals its own MEMOBS__ABI_KEY and size is at least
   its sizeof(memobs_host_api_t). */
typedef struct {
    uint64_t abi_key;
    uint32_t size;        /* sizeof(memobs_host_api_t) of the instance */
    const char *instance; /* "preload", "python", "program" */
    int (*get_enabled)(void);
    memobs_phase_t (*get_phase)(void);
    uint64_t (*now_ns)(void);
    memobs_comm_t (*coll_register_comm)(const char *, uint64_t, int, int, int);
    memobs_coll_kind_t (*coll_kind_intern)(const char *);
    void (*record_coll_ex)(const memobs_coll_record_t *);
    memobs_peer_t (*peer_intern)(const char *);
    memobs_peer_t (*peer_rank)(memobs_comm_t, int);
    void (*record_peer_xfer_timed)(memobs_peer_t, memobs_peer_dir_t, uint64_t, memobs_phase_t, uint64_t);
    void (*coll_set_source)(const char *, const char *, const char *, int);
    void (*coll_note)(memobs_coll_note_t, uint64_t);
    void (*get_identity)(memobs_identity_t *);
} memobs_host_api_t;
#ifdef MEMOBS_EXPORT_HOST
__attribute__((visibility("default"))) const memobs_host_api_t *memobs_host_api(void);
#endif

/* ======================================================================== */
/* Allocation tracker                                         >>api-tracker */
/* ======================================================================== */

/* Record an allocation after obtaining it and its free BEFORE releasing it
   (else another thread may be given the same address in between). The
   macros (below) fill in the calling thread's device and phase.
     ptr     the block; NULL is counted and ignored.
     device  device index; -1 = the calling thread's (memobs_set_device).
     stream  opaque (a cudaStream_t), stored and shown, never dereferenced.
     tag     a string (copied, at most 63 bytes) or NULL.
     depth   C stack frames to capture: -1 = the default (MEMOBS_CALLSTACK,
             memobs_track_set_callstack), 0 = none, up to MEMOBS_MAX_STACK.
   Allocations with the same tag and stack share one trace id (dense, in
   first-seen order). Expected O(1): a hash of the pointer, one striped
   lock, a few atomic adds. */
MEMOBS_API void memobs_track_alloc_full(const void *ptr, uint64_t bytes, memobs_mem_kind_t kind, int device,
                                        const void *stream, const char *tag, int depth);
MEMOBS_API void memobs_track_free(const void *ptr);
/* A stream-ordered free (cudaFreeAsync) that its stream has not reached:
   the block stays listed, and counted in current bytes, as pending (it is
   freed but not reusable yet) until memobs_track_free_settled(ptr), which
   removes it only if it is still pending. An allocation at the address of
   a pending block retires that block first (stream-ordered reuse). */
MEMOBS_API void memobs_track_free_pending(const void *ptr);
MEMOBS_API void memobs_track_free_settled(const void *ptr);
/* Private (memobs_cuda.h's frees, which call the runtime with no lock
   held): MEMOBS__MARK marks a tracked block that is not pending yet as
   pending, quietly, and returns 1 (else 0, nothing counted);
   MEMOBS__UNMARK takes that mark back (the free failed); MEMOBS__COUNT
   counts a free of a block that was not tracked (unknown, double, or made
   while the table was full) without looking in the table. */
enum { MEMOBS__MARK = 3, MEMOBS__UNMARK = 4, MEMOBS__COUNT = 5 };
MEMOBS_API int memobs__track_mark(const void *ptr, int how);

/* Tracked MEMOBS_MEM_DEVICE bytes of one device (0 <= device <
   MEMOBS_MAX_DEVICES) now; *max_bytes (may be NULL) gets the most there
   ever were. 0 for a device out of range. Exact: it folds every thread's
   escrow record (the table's 64 stripe locks taken briefly), so call it
   per step or per report, not per allocation. */
MEMOBS_API uint64_t memobs_get_device_bytes(int device, uint64_t *max_bytes);

/* Device index used by the macros on this thread (default 0). */
MEMOBS_API void memobs_set_device(int device);
MEMOBS_API int memobs_get_device(void);

/* Default C stack depth for allocations made without an explicit depth;
   0 turns capture off. Clamped to MEMOBS_MAX_STACK. */
MEMOBS_API int memobs_track_set_callstack(int depth);

/* How C stacks are walked.
     MEMOBS_UNWIND_BACKTRACE  glibc's backtrace(): DWARF unwind tables, so
                              any code, about 100 ns a frame. The default.
     MEMOBS_UNWIND_FP         the frame-pointer chain: a few ns a frame, for
                              code built with -fno-omit-frame-pointer
                              (x86-64 and aarch64 with glibc; elsewhere
                              backtrace(), with one warning). The same
                              return addresses as backtrace() where every
                              caller keeps a frame pointer; through code
                              that does not, frames are skipped, a wrong
                              one may appear, or the walk stops. Every
                              frame pointer is checked before it is read:
                              on the calling thread's stack, aligned, above
                              the previous one, with a return address that
                              is not null, not in the first 64 KiB and not
                              on the stack. A frame pointer of 0 ends the
                              chain; a walk stopped by a record that fails
                              is kept, marked cut short (a stack that
                              reaches main() usually is: glibc's start-up
                              code keeps no frame pointer). A thread whose
                              stack bounds cannot be read, or a capture
                              running on another stack (a sigaltstack()
                              signal handler, a coroutine's own stack),
                              uses backtrace() instead.
   A trace remembers which unwinder made it (two stacks that differ only
   in that are two traces); reports title the boxed stack "C Stack Trace"
   (backtrace) or "C Stack Trace (frame pointers)". */
typedef enum { MEMOBS_UNWIND_BACKTRACE = 0, MEMOBS_UNWIND_FP = 1 } memobs_unwind_t;
/* Sets the unwinder of every later C stack (default: MEMOBS_UNWIND,
   env MEMOBS_UNWIND). Returns the previous one, or MEMOBS_ERR_INVALID
   (unchanged, with a warning) for a value that is not a memobs_unwind_t. */
MEMOBS_API int memobs_track_set_unwinder(memobs_unwind_t unwinder);

/* A tag provider captures a stack of another language (memobs_python.h
   installs one for Python) on every tracked allocation. Frames are stored
   as given (pc: a code pointer, line, aux: anything) and turned into text
   only when a report is written.
     capture  fills up to max frames for the calling thread; returns the
              count (0: nothing to add). Runs inside the allocation call:
              must not block; an allocation or a free it makes through
              the tracked allocator is not recorded (a free is counted
              as one of an unknown pointer).
     retain   (may be NULL) called once, under the trace lock, when a new
              trace keeps these frames: take references here.
     format   writes the text of n frames into buf, one line per '\n';
              returns the length written.
     title    heading of the boxed stack, e.g. "Python Stack Trace".
   The struct is copied. NULL removes the provider. At most 8 providers are
   installed over the life of a process (they are never freed, so traces
   made by an old provider stay printable): then MEMOBS_ERR_FULL. */
typedef struct {
    uintptr_t pc;
    uint32_t line, aux;
} memobs_frame_t;
typedef struct {
    int (*capture)(memobs_frame_t *frames, int max, void *user);
    void (*retain)(const memobs_frame_t *frames, int n, void *user);
    size_t (*format)(const memobs_frame_t *frames, int n, char *buf, size_t len, void *user);
    const char *title;
    void *user;
} memobs_tag_provider_t;
MEMOBS_API int memobs_track_set_tag_provider(const memobs_tag_provider_t *provider);

/* Peak report: when tracked device memory on a device passes its last
   reported maximum by the fraction growth (and is at least min_bytes), the
   allocating thread writes a report (the new maximum, the previous one, the
   block table and the live bytes per trace) to dest: "stderr", "stdout" or
   a file path (appended, one write a report; %r/%p expanded). dest NULL or
   "off" turns it off (the words of the OUTPUTS rule: 1 is stderr, 0 off;
   "" is an error). growth 0 reports every new maximum. */
MEMOBS_API int memobs_track_set_peak_report(const char *dest, double growth, uint64_t min_bytes);

/* A snapshot of live allocations, for exporters. Returns how many are
   live (which may exceed max; at most max are written). */
typedef struct {
    const void *ptr;
    uint64_t bytes;
    memobs_mem_kind_t kind;
    int32_t device;
    memobs_phase_t phase;
    const void *stream;
    uint64_t time_ns; /* CLOCK_MONOTONIC at the alloc, to the kernel tick (1-4 ms) */
    uint32_t trace;   /* MEMOBS_NO_TRACE if none */
    int pending_free; /* memobs_track_free_pending() was called for it */
} memobs_alloc_info_t;
MEMOBS_API size_t memobs_get_allocations(memobs_alloc_info_t *out, size_t max);

/* Text of a trace: the tag on the first line, then one line per frame
   (C frames symbolized now: "#0 function+offset (module+offset)"). A C
   stack walked by frame pointers has the line "C stack (frame pointers)"
   before its frames, and one cut short the last line "... cut short: bad
   frame pointer". Returns the length (truncated to len-1), or
   MEMOBS_ERR_INVALID for an unknown id. */
MEMOBS_API int memobs_format_trace(char *buf, size_t len, uint32_t trace);

/* Reports (text, UTF-8 box drawing for stacks). Rows are capped at
   MEMOBS_REPORT_ROWS (env, default 50; 0 = all); the rest are summed. */
/* Block table of live allocations, largest first. */
MEMOBS_API int memobs_print_allocations(FILE *f);
/* Live bytes and counts per trace, largest first: which line holds memory. */
MEMOBS_API int memobs_print_alloc_groups(FILE *f);
/* What is still live, grouped by trace, largest first (MEMOBS_LEAKS=1
   writes it at exit). */
MEMOBS_API int memobs_print_leaks(FILE *f);

/* ======================================================================== */
/* PyTorch memory snapshot                                   >>api-snapshot */
/* ======================================================================== */

/* Tracked DEVICE memory as PyTorch's memory snapshot (the dict that
   torch.cuda.memory._snapshot() returns), pickled, for PyTorch's memory
   viewer (https://pytorch.org/memory_viz: drag the file in).
     segments       memobs has no caching allocator, so each live device
                    allocation is its own segment (segment_type "large")
                    holding one block: "active_allocated", or
                    "active_pending_free" while its stream-ordered free is
                    pending. No inactive blocks, no cached or reserved
                    memory: only what was tracked. Blocks also carry
                    "address" and "real_size" (newer and older viewers).
     device_traces  one list per device from 0 to the highest used ([[]]
                    when none was), empty lists when no history was
                    recorded (see memobs_torch_history_start): "alloc" at
                    each tracked allocation,
                    "free_requested" when its free is called or marked
                    pending, "free_completed" when the memory is free (at
                    once for memobs_track_free; at memobs_track_free_settled
                    or a new allocation of the address for a pending one).
                    Each block being its own segment, "segment_alloc" comes
                    right before its "alloc" and "segment_free" right after
                    its "free_completed". A free that memobs_cuda.h takes
                    back (the runtime's free failed) leaves no event.
                    time_us: microseconds since the epoch (CLOCK_REALTIME),
                    as PyTorch's (stamped with memobs_ticks, converted
                    when the snapshot is written; memobs_track_free's
                    free_requested and free_completed share one stamp);
                    stream: the pointer as a signed integer.
     frames         innermost first: the allocation's tag (filename "memobs
                    tag", line 0), its C frames symbolized as the reports
                    do (name "function+0x1c" or "module+0x1a2c", filename
                    the module, line 0), then the tag provider's frames
                    reversed (a provider's are taken as outermost first, as
                    memobs_python.h captures them; "path:line in name"
                    becomes filename, line, name). A free event carries its
                    allocation's frames: no stack is captured at a free.
   The history: per device the newest MEMOBS_TORCH_EVENTS events (alloc,
   free_requested, free_completed; segment events are written with theirs,
   not counted), default 16384, 40 bytes each, allocated at the device's
   first event (env MEMOBS_TORCH_EVENTS; 0 = no history). It is recorded
   only on request, as PyTorch's: from start-up when MEMOBS_TORCH_SNAPSHOT
   is set, else between memobs_torch_history_start() and _stop() (below);
   otherwise the tracker skips it at the cost of one load. A snapshot
   written when none was ever recorded has its segments and blocks (exact),
   empty device_traces, "history": "off" and a "history_help" in its
   "memobs" entry, and logs one warning per process (none when
   MEMOBS_TORCH_EVENTS=0 chose it). Older ones are dropped and counted
   (memobs_get_torch_history, and the snapshot's own "memobs" entry, which
   the viewer ignores, with "history": "on", "stopped" or "off");
   memobs_reset() keeps them.
   Recording one takes a clock read and a 40-byte record (a free's two
   events are one record) written into the thread's own block (2.5 KB a
   thread) with no lock, moved into the device's ring 64 at a time under
   its lock, so with several threads at once the ring may keep up to 64
   of a thread's events in place of as many newer ones of another; the
   snapshot shows every event recorded before it began and sorts them by
   time. Host,
   pinned and managed memory record nothing. Devices from
   MEMOBS_MAX_DEVICES up have segments but no history; allocations made
   while the table was full are in neither part.
   The pickle (protocol 4, no framing) uses only the opcodes the viewer's
   own unpickler reads (an integer above 2^63 - 1, which no address or
   size reaches, would be past its 8-byte LONG1); Python's
   pickle.load reads it too. Strings that are not UTF-8 (tags) get U+FFFD
   for each bad byte. Returns MEMOBS_OK, MEMOBS_ERR_INVALID (f NULL),
   MEMOBS_ERR_NOMEM or MEMOBS_ERR_IO (a write failed). */
MEMOBS_API int memobs_write_torch_snapshot(FILE *f);
/* To a file (%r/%p expanded) written whole, as MEMOBS_TORCH_SNAPSHOT=PATH
   at exit; "stdout"/"stderr" unless a terminal (MEMOBS_ERR_INVALID). */
MEMOBS_API int memobs_write_torch_snapshot_file(const char *path);

/* The snapshot's history on request, in the spirit of PyTorch's
   torch.cuda.memory._record_memory_history(max_entries=N) ... (enabled=None).
   start: recording on, each device keeping its newest max_events events
   (0: MEMOBS_TORCH_EVENTS' value; at most 16777216). Events kept from an
   earlier window stay; a ring of another size is made anew with the newest
   that fit, the rest counted as dropped. Calling it while on is harmless
   (with another max_events: that resize). MEMOBS_ERR_INVALID and one
   warning above the limit, or for 0 when MEMOBS_TORCH_EVENTS=0;
   MEMOBS_ERR_NOMEM (one warning) when a larger ring could not be made
   (that device keeps its ring; recording is on).
   stop: recording off; what was kept stays, so a snapshot written later
   (at exit) shows that window. PyTorch forgets its history at
   enabled=None; memobs keeps it until the process ends. MEMOBS_OK.
   Both are safe against threads tracking meanwhile: an event is recorded
   when its tracking call began while on (one under way at the switch may
   fall either side). A block allocated before the start and freed after it
   has only its free events; the viewer draws such a block as allocated
   from the start of the trace. A block freed after the stop keeps its
   alloc as its last event: write the snapshot before stopping for an
   exact replay of the viewer's Allocator State History, as with PyTorch.
   MEMOBS_NO_TORCH_SNAPSHOT: MEMOBS_ERR_INVALID and a warning each;
   MEMOBS_DISABLE: MEMOBS_OK, nothing recorded. */
MEMOBS_API int memobs_torch_history_start(uint64_t max_events);
MEMOBS_API int memobs_torch_history_stop(void);

/* One device's history of the snapshot. */
typedef struct {
    uint64_t recorded; /* events recorded since start-up */
    uint64_t kept;     /* of those, still in the ring (the newest) */
    uint64_t dropped;  /* the oldest, overwritten: recorded - kept */
    uint64_t capacity; /* events the ring holds (MEMOBS_TORCH_EVENTS, or the last start's) */
    int recording;     /* 1 while the history is recorded (all devices), 0 when off */
} memobs_torch_history_t;
/* MEMOBS_OK, or MEMOBS_ERR_INVALID for a NULL out or a device outside
   0..MEMOBS_MAX_DEVICES-1 (out zeroed where it is not NULL). It counts
   the kept events under the ring's lock (a pass over the ring, which
   the pushes no longer keep a count for): call it per report, not per
   allocation. */
MEMOBS_API int memobs_get_torch_history(int device, memobs_torch_history_t *out);

/* ======================================================================== */
/* Timeline                                                  >>api-timeline */
/* ======================================================================== */

/* A bounded timeline of events written out as a Chrome trace (Perfetto
   UI, chrome://tracing). Off by default. When on, it keeps the newest
   events up to its capacity: transfer records (host-side, and device-timed
   ones from memobs_record_xfer_timed), tracked allocations and frees, phase
   changes (per thread), regions and markers, and samples from memobs'
   samplers; older events are dropped and counted. About 48 bytes per event
   in memory, about 235 in the trace file.

   Each thread writes into a chunk of the timeline that it owns (no lock, no
   shared counter: a time stamp and a few plain stores, about 2 ns over
   reading the clock); a full chunk joins a queue and the thread takes a
   fresh one, or the oldest finished chunk of any thread, whose events are
   dropped. So the timeline keeps the newest events of the process,
   dropping the oldest a chunk at a time (chunk: a 64th of the capacity,
   rounded down to a power of two, 1 to 1024 events; the capacity rounds
   down to a multiple of it), less the unwritten part of each recording
   thread's chunk. An exited thread's events stay until their chunk is the
   oldest, and the room left in its chunk goes to the next thread that
   needs one, so short-lived threads fill chunks between them (100k
   threads of 3 events each leave 99.95% of the default 65536 in use).
   More threads recording at once than there are chunks (64 at the
   default 65536 events; a larger capacity has more, 256 from 262144):
   the threads without one drop their events, counted. The writer merges the threads' events by time; an event being
   written while a trace is written is left out, never shown torn.
   Timestamps come from memobs_ticks() (the TSC where the kernel vouches for
   it) and are written as CLOCK_MONOTONIC time. With the timeline off a
   record pays one relaxed load and a branch more.

   memobs_timeline_start(capacity): a new, empty timeline of that many
   events (MEMOBS_MALLOC; on failure MEMOBS_ERR_NOMEM and a message, the
   old one kept), recording on; 1 to 1 << 26 (else MEMOBS_ERR_INVALID,
   unchanged). memobs_timeline_stop(): recording off, the events freed. A
   replaced timeline is freed once no thread can be writing into it
   (membarrier(); without it, it is kept). memobs_reset() leaves the
   timeline alone (a timeline is a history, not a window): start it again
   for a new one. Compiled out (MEMOBS_DISABLE) it stays off and
   returns MEMOBS_OK. Env MEMOBS_TIMELINE=PATH and MEMOBS_TIMELINE_EVENTS=N (see
   ENVIRONMENT). */
MEMOBS_API int memobs_timeline_start(size_t capacity);
/* Recording off, the events freed (as above); returns MEMOBS_OK. */
MEMOBS_API int memobs_timeline_stop(void);

typedef struct {
    uint64_t capacity; /* events the timeline holds; 0: off */
    uint64_t recorded; /* events recorded since it was made (kept + dropped) */
    uint64_t kept;     /* of those, held now */
    uint64_t dropped;  /* dropped: their chunk was taken again, or no chunk was free */
    uint64_t chunk;    /* events per chunk */
    uint64_t threads;  /* threads that own a chunk now */
} memobs_timeline_stats_t;
MEMOBS_API void memobs_timeline_get_stats(memobs_timeline_stats_t *out);

/* Kept and dropped events by timeline thread (numbered 1, 2, ... in the
   order of their first event; number 256 stands for threads 256 and later),
   threads with none left out, in order of number. Returns how many rows
   there are (at most max written). */
typedef struct {
    uint32_t thread;
    uint64_t recorded, kept, dropped;
} memobs_timeline_thread_t;
MEMOBS_API size_t memobs_timeline_get_threads(memobs_timeline_thread_t *out, size_t max);

/* The timeline's clock. memobs_ticks() reads it: the TSC (rdtsc, about 10
   ns; x86-64 Linux) where the kernel says it is stable (clocksource tsc,
   or the CPU flags constant_tsc and nonstop_tsc), else CLOCK_MONOTONIC in
   ns. memobs_ticks_to_ns() converts a reading to CLOCK_MONOTONIC ns, the
   clock of memobs_now_ns() and every export: monotonic in its argument,
   calibrated against CLOCK_MONOTONIC (the first conversion waits until 2
   ms have passed since the clock's first use, the first memobs_ticks() or
   timeline; after that the slope is refined at most once a second, keeping
   the conversion continuous).
   memobs_clock_source() says "tsc" or "clock_gettime",
   memobs_clock_reason() why, memobs_clock_ns_per_tick() the slope now.
   Env MEMOBS_CLOCK=auto|tsc|monotonic (tsc: the TSC even where the kernel
   does not vouch for it). */
MEMOBS_API uint64_t memobs_ticks(void);
MEMOBS_API uint64_t memobs_ticks_to_ns(uint64_t ticks);
MEMOBS_API const char *memobs_clock_source(void);
MEMOBS_API const char *memobs_clock_reason(void);
MEMOBS_API double memobs_clock_ns_per_tick(void);

/* Chrome trace event JSON of what the timeline holds, oldest first:
   {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}, ts and dur
   in microseconds of CLOCK_MONOTONIC (memobs_now_ns). Tracks (threads of
   one process named "memobs rank R"):
     "H2D copies", "D2H copies", "D2D copies"   a slice per record, named
        "H2D prefill" etc., args bytes and phase; host-side records have no
        duration of their own: 1 us wide, or less to end before the next
        record of that direction. "H2S transfers" ... "S2D transfers" the
        same for the storage tier (category "storage"), once it has one.
     "H2D copies (device-timed)" ...     a slice per memobs_record_xfer_timed copy
        of its device duration, ending when it was reported; copies that
        overlap go to extra tracks "... #2", "... #3" (at most 16).
     "S2H transfers (engine-timed)" ...  the same for memobs_record_xfer_ns.
     "allocations"   an instant event per tracked allocation and free, args
        ptr, bytes, kind, device, phase, trace (memobs_format_trace).
     "phase, thread N"   prefill/decode slices of each thread that set a
        phase (N in order of first appearance); a phase still set is shown
        until the trace was written.
   Counters: "H2D bytes" etc. (cumulative bytes recorded since the oldest
   event in the trace), "live device bytes" etc. (tracked bytes of the kind:
   the tracker's figure at the oldest event of the kind, then each event's
   own change), and one per sampled series. otherData holds the capacity,
   the chunk size, the recorded / kept / dropped counts, the same per
   thread ("threads": [{"thread", "recorded", "kept", "dropped"}, ...]) and
   the clock ("clock": "tsc" or "clock_gettime", "ns_per_tick"). Safe while
   other threads record. MEMOBS_ERR_INVALID for f NULL, MEMOBS_ERR_NOMEM
   when the copy of the events cannot be allocated, MEMOBS_ERR_IO when
   writing fails. */
MEMOBS_API int memobs_write_timeline(FILE *f);
/* To path: "stderr", "stdout" or a file (%r/%p expanded) written whole, as
   the exit outputs are (OUTPUTS: a temporary renamed over it; on failure
   the old file stays and one warning is logged). */
MEMOBS_API int memobs_write_timeline_file(const char *path);
/* The trace write's bound, so that a stop (Kubernetes: SIGTERM, SIGKILL
   30 s later) never finds it unfinished: a write gives itself ns from its
   start, the copy and sort of the events included (default 20 s; env
   MEMOBS_TIMELINE_WRITE_S; 0 = no limit). Once it has measured its rate
   over a tenth of the limit (at most a second), it compares, every 4096
   events, the rate so far with the time left and, when the rest would not
   fit (with a margin), skips ahead to the newest events that will: the
   trace then holds its oldest events (that first tenth), a gap, and the
   newest. If the limit passes all the same (a stalled disk), it stops
   adding events. Either way the JSON is closed
   validly, otherData says how many of the timeline's events were left
   out ("left_out", with "left_out_from_us" and "left_out_to_us", the
   times of the oldest and newest of them, and "write_limit_s"), and one
   warning is logged. A timeline takes about 200-250 bytes per event in
   the file (48 in memory); 16M events are written in about 6.5 s to a
   local disk (docs/performance.md). Returns the previous limit
   (at most 1e9 s: larger values are clamped);
   memobs_timeline_get_write_limit() reads it. */
MEMOBS_API uint64_t memobs_timeline_set_write_limit(uint64_t ns);
MEMOBS_API uint64_t memobs_timeline_get_write_limit(void);

/* ======================================================================== */
/* Identity                                                  >>api-identity */
/* ======================================================================== */

/* job_id may be NULL (keeps the current one). Needs world_size >= 1 and
   0 <= rank, local_rank < world_size; else MEMOBS_ERR_INVALID, unchanged. */
MEMOBS_API int memobs_set_identity(const char *job_id, int rank, int local_rank, int world_size);
MEMOBS_API void memobs_get_identity(memobs_identity_t *out);

/* ======================================================================== */
/* Sampler, leak detector and Stormlog                        >>api-sampler */
/* ======================================================================== */

/* A sample field that could not be read (a missing /proc file, no
   mallinfo2, a device call that failed). Never 0: 0 is a real value. */
#define MEMOBS_UNKNOWN UINT64_MAX
#define MEMOBS_SAMPLE_DEVICES 8  /* devices one sample holds */
#define MEMOBS_SAMPLE_REGIONS 16 /* open regions one sample holds */

typedef struct {
    int32_t device;                 /* CUDA device index */
    /* the driver's cuMemGetInfo; MEMOBS_UNKNOWN if it failed or the device has no context */
    uint64_t used, free_bytes, total;
    uint64_t tracked;               /* memobs_get_device_bytes(device) */
    /* when used/free/total were read (memobs_now_ns()): at the sample, or,
       once CUDA has shut down at exit (memobs_cuda.h), the last figures
       read, earlier than time_ns; 0 when unknown */
    uint64_t as_of_ns;
} memobs_sample_dev_t;

/* One sample of the process's memory. Bytes; MEMOBS_UNKNOWN marks a
   field that could not be read. */
typedef struct {
    uint64_t time_ns;              /* memobs_now_ns() */
    uint32_t interval_ms;          /* the sampler's interval; 0 = memobs_sample_now() */
    uint64_t rss_bytes;            /* /proc/self/statm resident pages * page size */
    uint64_t anon_bytes;           /* /proc/self/smaps_rollup "Anonymous:" (Linux 4.14+) */
    uint64_t heap_bytes;           /* malloc heap in use: mallinfo2() uordblks + hblkhd (glibc 2.33+) */
    uint64_t heap_reserved_bytes;  /* what malloc holds from the system: arena + hblkhd */
    uint64_t tracked_host_bytes;   /* tracker: MEMOBS_MEM_HOST now */
    uint64_t tracked_pinned_bytes; /* tracker: MEMOBS_MEM_PINNED now */
    uint64_t tracked_device_bytes; /* tracker: MEMOBS_MEM_DEVICE now, all devices */
    uint32_t ndev;                 /* entries of dev[] filled (memobs_cuda.h only) */
    memobs_sample_dev_t dev[MEMOBS_SAMPLE_DEVICES];
    /* Regions open then on the process's threads: each thread's stack
       outermost first, -1 between threads (memobs_region_label). */
    uint32_t nregion;
    memobs_region_t region[MEMOBS_SAMPLE_REGIONS];
} memobs_sample_t;

/* Background sampling every interval_ms (>= 1) into a ring of
   MEMOBS_SAMPLES samples (oldest dropped, counted). A second start changes
   the interval. The sampler thread exists only while sampling is on.
   After fork() the child starts with an empty ring and no thread; its
   thread starts again at the child's next sampler, leak or Stormlog call. */
MEMOBS_API int memobs_sampler_start(unsigned interval_ms);
MEMOBS_API void memobs_sampler_stop(void);
/* One sample now, on the calling thread, into the same ring. */
MEMOBS_API int memobs_sample_now(void);
/* Copies the newest min(max, held) samples, oldest first; returns how
   many were copied (out NULL or max 0: how many are held). */
MEMOBS_API size_t memobs_get_samples(memobs_sample_t *out, size_t max);
/* Samples dropped because the ring was full. */
MEMOBS_API uint64_t memobs_get_samples_dropped(void);

typedef enum {
    MEMOBS_LEAK_NONE = 0,        /* nothing grows (or too few samples: see samples) */
    MEMOBS_LEAK_OUTSIDE_MALLOC,  /* anonymous memory (RSS) grows, heap and tracked bytes flat */
    MEMOBS_LEAK_HEAP,            /* the malloc heap grows with it */
    MEMOBS_LEAK_TRACKED,         /* tracked host/pinned bytes grow with it */
    MEMOBS_LEAK_UNEXPLAINED      /* it grows; the heap cannot be read, or it and the tracked bytes do not follow */
} memobs_leak_kind_t;

/* Least-squares fits over the newest MEMOBS_LEAK_WINDOW_S seconds of
   samples. Slopes in MB/min (10^6 bytes), r2 in [0, 1] (0 for a series that
   does not vary or is unknown; *_known says which were read). */
typedef struct {
    memobs_leak_kind_t kind;
    uint64_t samples;    /* samples in the window */
    double window_s;     /* time the window's samples span */
    int rss_known, anon_known, heap_known;
    double rss_mb_min, rss_r2;
    double anon_mb_min, anon_r2;
    double heap_mb_min, heap_r2;
    double tracked_mb_min, tracked_r2; /* tracked host + pinned bytes */
    double growth_mb_min, growth_r2;   /* the series the verdict names */
} memobs_leak_t;
/* Fills *out; MEMOBS_OK (kind NONE with fewer than 10 samples), or
   MEMOBS_ERR_INVALID for NULL. */
MEMOBS_API int memobs_leak_check(memobs_leak_t *out);

/* Stormlog telemetry schema v2: a JSON array of events in time order.
   Stormlog's per-rank analyses read a rank's "sample" events as ONE series
   (grouped by rank alone, never by device), so a file holds one:
     device series  when any sample has a device with the driver's figures
                    (memobs_cuda.h): one "sample" per such sample, summed
                    over the process's devices (device_id: the lowest of
                    them; per-device figures in metadata when there are
                    several). allocator_allocated_bytes and
                    allocator_reserved_bytes are memobs' tracked device
                    bytes, device_used_bytes the driver's used memory, so
                    Stormlog's gap (used - reserved) is device memory
                    outside memobs. Samples taken before any device had
                    memory are not in it. Host memory rides along in each
                    sample's metadata (host_rss_bytes, host_anon_bytes,
                    host_heap_bytes, host_tracked_host_bytes,
                    host_tracked_pinned_bytes).
     host series    otherwise: device_id -1, malloc as the allocator
                    (allocated: in use, reserved: taken from the system),
                    RSS as used, physical memory as total; the gap is
                    memory outside malloc.
   Samples taken while regions were open carry them in `context`: each
   thread's stack outermost first, joined by "/", threads (in no set
   order) by " | "; at most MEMOBS_SAMPLE_REGIONS names.
   Other events, all with device_total_bytes null (Stormlog's gap analysis
   reads every event that has a total: these stay out of its series):
   "peak" and "oom" (their device's figures from the driver; its total in
   metadata), and "region" (its begin and its end, metadata edge) and
   "marker" events for regions and markers whose names Stormlog takes for
   a collective, with the figures of the series' sample before them.
   Last, when any transfer was recorded in the window, one "transfers"
   event: metadata per direction that has any, <dir>_bytes, <dir>_ops,
   <dir>_bytes_<phase> (the phases that have any), <dir>_timed_bytes and
   <dir>_timed_ns (when timed), <dir>_size_p50/_p90/_p99/_max (log2
   bucket bounds), dir one of h2d d2h d2d h2s s2h d2s s2d.
   Device figures read before the event (memobs_cuda.h stops asking the
   driver at exit, before CUDA's teardown: a sample or event after it has
   the last figures read) are marked: metadata device_figures_as_of_ns,
   when they were read (epoch ns, as timestamp_ns).
   MEMOBS_STORMLOG=PATH writes it at exit. */
MEMOBS_API int memobs_write_stormlog(FILE *f);
/* To path: "stderr", "stdout" or a file (%r/%p expanded) written whole, as
   the exit outputs are (OUTPUTS: a temporary renamed over it; on failure
   the old file stays and one warning is logged). */
MEMOBS_API int memobs_write_stormlog_file(const char *path);
/* The host series alone (device_id -1) with the region and marker events,
   whatever devices there are: a companion for Stormlog's analyses of host
   memory. Give it to Stormlog on its own, never with the rank's device
   file (same rank: the two series would mix). MEMOBS_STORMLOG_HOST=PATH
   writes it at exit. */
MEMOBS_API int memobs_write_stormlog_host(FILE *f);
MEMOBS_API int memobs_write_stormlog_host_file(const char *path);

/* ======================================================================== */
/* Summaries                                                >>api-summaries */
/* ======================================================================== */

MEMOBS_API void memobs_get_summary(memobs_summary_t *out);
/* Writes the summary in the MEMOBS_FORMAT format (default text) to stderr. */
MEMOBS_API void memobs_print_summary(void);
MEMOBS_API int memobs_write_summary(FILE *f, memobs_format_t fmt);
/* To path: "stderr", "stdout" or a file (%r/%p expanded) written whole, as
   the exit outputs are (OUTPUTS: a temporary renamed over it; on failure
   the old file stays and one warning is logged). */
MEMOBS_API int memobs_write_summary_file(const char *path, memobs_format_t fmt);
/* 0: the files the environment asks for at exit (MEMOBS_SUMMARY,
   MEMOBS_PROM_FILE, MEMOBS_TIMELINE, MEMOBS_STORMLOG(_HOST), MEMOBS_HTML,
   MEMOBS_LEAKS, MEMOBS_TORCH_SNAPSHOT) are not written by this process;
   1 (the default): they are. For a library loaded into every process of a
   job (the LD_PRELOAD library turns them off in a process that made no
   CUDA call and recorded nothing: a launcher, a shell's helpers), so that
   those processes leave the files of the one that did alone. Returns the
   previous setting; memobs_get_exit_outputs() reads it. */
MEMOBS_API int memobs_set_exit_outputs(int on);
MEMOBS_API int memobs_get_exit_outputs(void);
/* Writes every output the environment asks for at exit (the list above)
   now, as exit would: for an engine with its own shutdown path, or a
   periodic snapshot. Safe from any thread, not from a signal handler.
   Returns MEMOBS_OK, or MEMOBS_ERR_IO when an output could not be
   written (each failure is told through the log hook; the previous file
   stays). */
MEMOBS_API int memobs_flush(void);
/* "262.13 GB": decimal units (B, KB, MB, GB, TB) as nano-vllm prints them. */
MEMOBS_API const char *memobs_format_bytes(char *buf, size_t len, uint64_t bytes);
/* "850 ns", "12.30 us", "4.56 ms", "1.23 s". */
MEMOBS_API const char *memobs_format_ns(char *buf, size_t len, uint64_t ns);

/* ======================================================================== */
/* Prometheus                                              >>api-prometheus */
/* ======================================================================== */

/* Prometheus text exposition format 0.0.4 of one snapshot: transfers by
   direction and phase, the timed part, the transfer-size histogram by
   direction, TTFT/TPOT/E2E histograms, requests, problems, the tracker by
   memory kind, regions, collectives and peers, the host sampler's newest
   figures and the leak detector's slopes (once a sample was taken), and
   the user counters (docs/exports/prometheus.md lists them). Names start with
   memobs_; every sample carries the labels job_id, rank, local_rank and
   host; label values and help texts are escaped (bytes that are not UTF-8
   become U+FFFD).
   Counters cover the window: memobs_reset() takes them back to zero, which
   Prometheus reads as a counter reset (rate() and increase() handle it, but
   a scrape interval holding a reset undercounts): scrape without resetting.
   memobs_transfer_size_bytes: exact counts, le the log2 bucket bounds
   1, 2, 4, ... 2^56 (memobs_xfer_sizes_t), _sum the bytes.
   Histograms of time: seconds, vLLM's bucket bounds (TTFT and E2E: its TTFT list;
   TPOT: its inter-token-latency list). They are read from memobs'
   log-linear buckets: a bucket counts as at or below a bound when its
   midpoint is, so a sample within 0.8% of a bound may be counted on either
   side of it; _count is exactly the +Inf bucket, _sum is exact (a sample
   recorded at that instant may be in the buckets and not yet in the sum).
   Returns MEMOBS_OK, MEMOBS_ERR_INVALID (f NULL), MEMOBS_ERR_IO or
   MEMOBS_ERR_NOMEM. */
MEMOBS_API int memobs_write_prometheus(FILE *f);
/* The same into buf, for an engine serving its own /metrics. Returns the
   length of the whole exposition, NUL excluded (as snprintf). If that is
   >= len, buf holds "" (never part of an exposition): grow it and call
   again, with room to spare, since values may have grown in between. buf
   may be NULL when len is 0. 0 only when memory for the snapshot could not
   be allocated. */
MEMOBS_API size_t memobs_format_prometheus(char *buf, size_t len);
/* For node_exporter's textfile collector (--collector.textfile.directory
   DIR reads the *.prom files of DIR): writes path (%r rank, %p pid, %%
   expanded; "stderr" and "stdout" are the streams) whole: into a
   temporary in the same directory, then rename()d into place (OUTPUTS in
   the doc block), so a reader sees the old file or the new one, never a
   part. On failure the old file stays, no temporary is left, one warning
   goes to the log hook, and it returns MEMOBS_ERR_IO (MEMOBS_ERR_INVALID
   for an empty or too long path, MEMOBS_ERR_NOMEM when the snapshot found
   no memory). */
MEMOBS_API int memobs_write_prometheus_file(const char *path);

/* ======================================================================== */
/* HTML report                                                   >>api-html */
/* ======================================================================== */

/* One self-contained HTML page of what memobs holds, for people: it opens
   offline in any browser (no network, no external file; charts are inline SVG
   drawn here; a few lines of inline script only make tooltips quicker, and the
   page reads the same with scripts off). Sections, each saying "not recorded;
   turn on X" where its data is absent: identity and window; H2D/D2H/D2D bytes
   and ops by phase (table and bars), the storage tier's H2S/S2H/D2S/S2D too
   once any of theirs was recorded; transfers over time (the timeline's
   records, binned); timed bandwidth per direction and phase (device-timed
   copies, engine-timed storage transfers); transfer sizes per direction (ops,
   p50/p90/p99/max as log2 bucket bounds, a bar chart of the buckets);
   TTFT/TPOT/E2E histograms with p50/p90/p99 marked; once a transfer was
   attributed to a request (memobs_request_enter, memobs_request_xfer*),
   Requests: attributed and unattributed bytes per direction (a table, a bar
   per direction), the top requests by bytes moved and by time waited
   (memobs_request_top: a table and bars each) and the tenants' rows;
   tracked memory by kind, memory over time from the sampler (RSS,
   anonymous, heap, tracked host/pinned/device, the driver's device used;
   without samples, tracked bytes by kind from the timeline's allocations)
   with each series' peak marked, the
   leak detector's verdict and fit; the traces holding the most live bytes with
   their tags and stacks (memobs_format_trace: C and provider frames); user
   counters and the problems counted. Every figure of the summary it shows
   carries data-memobs="KEY" (h2d.prefill.bytes, sizes.h2s.p50, ttft.p99_ns,
   memory.device.peak_bytes, problems.bad_records, ...) and data-v="exact
   integer". Text from tags, names, hosts and paths is escaped; bytes that are
   not UTF-8 become U+FFFD. Size: bounded whatever was recorded, under 1 MB at
   default limits (the worst case: 20 stacks of 4 KB that escape sixfold, every
   counter used, every size bucket of every direction, both top lists and
   every tenant with names that escape sixfold): the samples are cut to
   400 points per series (the largest sample of each stretch, so peaks stay),
   the timeline to 120 bins (its allocations to 400), the traces to the 20
   holding the most (the rest summed in one row), each stack to 4 KB of text;
   counters are bounded by MEMOBS_MAX_COUNTERS, the requests to 2 x
   MEMOBS_REQUEST_TOP, the tenants to MEMOBS_REPORT_ROWS. Returns MEMOBS_OK,
   MEMOBS_ERR_INVALID (f NULL), MEMOBS_ERR_NOMEM or MEMOBS_ERR_IO.
   MEMOBS_HTML=PATH writes it at exit. */
MEMOBS_API int memobs_write_html(FILE *f);
/* To path: "stderr", "stdout" or a file (%r/%p expanded) written whole, as
   the exit outputs are (OUTPUTS: a temporary renamed over it; on failure
   the old file stays and one warning is logged). */
MEMOBS_API int memobs_write_html_file(const char *path);

/* ======================================================================== */
/* Recording macros                                                >>macros */
/* ======================================================================== */

#ifdef MEMOBS_DISABLE

#define MEMOBS_RECORD_H2D(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_D2H(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_D2D(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_H2D_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_D2H_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_D2D_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_H2S(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_S2H(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_D2S(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_S2D(bytes, prefill) ((void)sizeof(bytes), (void)sizeof(prefill))
#define MEMOBS_RECORD_H2S_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_S2H_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_D2S_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_S2D_CUR(bytes) ((void)sizeof(bytes))
#define MEMOBS_RECORD_XFER(dir, bytes, phase) \
    ((void)sizeof(dir), (void)sizeof(bytes), (void)sizeof(phase))
#define MEMOBS_RECORD_XFER_NS(dir, bytes, phase, ns) \
    ((void)sizeof(dir), (void)sizeof(bytes), (void)sizeof(phase), (void)sizeof(ns))
#define MEMOBS_SET_PHASE(phase) ((void)sizeof(phase))
#define MEMOBS_TTFT_START() ((void)0)
#define MEMOBS_TTFT_STOP() ((void)0)
#define MEMOBS_TPOT_STEP() ((void)0)
#define MEMOBS_TPOT_STOP() ((void)0)
#define MEMOBS_REQUEST_BEGIN(id) ((void)sizeof(id))
#define MEMOBS_REQUEST_TOKEN(id) ((void)sizeof(id))
#define MEMOBS_REQUEST_END(id) ((void)sizeof(id))
#define MEMOBS_COUNTER_ADD(name, n) ((void)sizeof(name), (void)sizeof(n))
#define MEMOBS_TRACK_ALLOC(ptr, bytes, kind) ((void)sizeof(ptr), (void)sizeof(bytes), (void)sizeof(kind))
#define MEMOBS_TRACK_ALLOC_N(ptr, bytes, kind, tag) \
    ((void)sizeof(ptr), (void)sizeof(bytes), (void)sizeof(kind), (void)sizeof(tag))
#define MEMOBS_TRACK_ALLOC_S(ptr, bytes, kind, depth) \
    ((void)sizeof(ptr), (void)sizeof(bytes), (void)sizeof(kind), (void)sizeof(depth))
#define MEMOBS_TRACK_ALLOC_NS(ptr, bytes, kind, tag, depth) \
    ((void)sizeof(ptr), (void)sizeof(bytes), (void)sizeof(kind), (void)sizeof(tag), (void)sizeof(depth))
#define MEMOBS_TRACK_FREE(ptr) ((void)sizeof(ptr))
#define MEMOBS_REGION_BEGIN(name) ((void)sizeof(name))
#define MEMOBS_REGION_END() ((void)0)
#define MEMOBS_RECORD_PEER_XFER(peer, dir, bytes, phase) \
    ((void)sizeof(peer), (void)sizeof(dir), (void)sizeof(bytes), (void)sizeof(phase))
#define MEMOBS_RECORD_PEER_XFER_CUR(peer, dir, bytes) ((void)sizeof(peer), (void)sizeof(dir), (void)sizeof(bytes))
#define MEMOBS_MARK(name) ((void)sizeof(name))
#ifdef __cplusplus
#define MEMOBS_REGION(name) ((void)sizeof(name))
#endif

#else /* !MEMOBS_DISABLE */

/* Casts in user-visible expansions: C++ users may build with -Wold-style-cast. */
#ifdef __cplusplus
#define MEMOBS__U64(x) static_cast<uint64_t>(x)
#define MEMOBS__UNS(x) static_cast<unsigned>(x)
#define MEMOBS__INT(x) static_cast<int>(x)
#define MEMOBS__NULL nullptr
#else
#define MEMOBS__U64(x) ((uint64_t)(x))
#define MEMOBS__UNS(x) ((unsigned)(x))
#define MEMOBS__INT(x) ((int)(x))
#define MEMOBS__NULL ((void *)0)
#endif

/* prefill: nonzero = prefill phase, zero = decode phase. */
#define MEMOBS_RECORD_H2D(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_H2D, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2H(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_D2H, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2D(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_D2D, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
/* Phase from memobs_set_phase() on this thread ("unphased" if never set). */
#define MEMOBS_RECORD_H2D_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_H2D, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2H_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_D2H, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2D_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_D2D, MEMOBS__U64(bytes))
/* The storage tier: a store (host -> storage), a load (storage -> host),
   and GPUDirect Storage's device -> storage and storage -> device. */
#define MEMOBS_RECORD_H2S(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_H2S, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_S2H(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_S2H, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2S(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_D2S, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_S2D(bytes, prefill) \
    memobs__xfer(MEMOBS_DIR_S2D, (prefill) ? 1u : 2u, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_H2S_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_H2S, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_S2H_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_S2H, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_D2S_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_D2S, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_S2D_CUR(bytes) memobs__xfer_cur(MEMOBS_DIR_S2D, MEMOBS__U64(bytes))
#define MEMOBS_RECORD_XFER(dir, bytes, phase) \
    memobs__xfer(MEMOBS__UNS(dir), MEMOBS__UNS(phase), MEMOBS__U64(bytes))
/* A transfer the engine timed itself, ns its duration (memobs_record_xfer_ns). */
#define MEMOBS_RECORD_XFER_NS(dir, bytes, phase, ns) memobs_record_xfer_ns(dir, MEMOBS__U64(bytes), phase, MEMOBS__U64(ns))
/* Bytes sent to / received from a peer (memobs_peer_intern, memobs_peer_rank);
   _CUR takes the phase of this thread. */
#define MEMOBS_RECORD_PEER_XFER(peer, dir, bytes, phase) \
    memobs_record_peer_xfer(peer, dir, MEMOBS__U64(bytes), phase)
#define MEMOBS_RECORD_PEER_XFER_CUR(peer, dir, bytes) \
    memobs_record_peer_xfer(peer, dir, MEMOBS__U64(bytes), memobs_get_phase())
#define MEMOBS_SET_PHASE(phase) ((void)memobs_set_phase(phase))
#define MEMOBS_TTFT_START() memobs_ttft_start()
#define MEMOBS_TTFT_STOP() memobs_ttft_stop()
#define MEMOBS_TPOT_STEP() memobs_tpot_step()
#define MEMOBS_TPOT_STOP() memobs_tpot_stop()
#define MEMOBS_REQUEST_BEGIN(id) memobs_request_begin(MEMOBS__U64(id))
#define MEMOBS_REQUEST_TOKEN(id) memobs_request_token(MEMOBS__U64(id))
#define MEMOBS_REQUEST_END(id) memobs_request_end(MEMOBS__U64(id))
/* Adds n to the counter called name (a string literal); the handle is looked
   up once per call site. */
#define MEMOBS_COUNTER_ADD(name, n)                                              \
    do {                                                                         \
        static int32_t memobs__site_id; /* 0: not looked up, >0: id+1, <0 bad */ \
        int32_t memobs__id = MEMOBS__LOAD(&memobs__site_id);                     \
        if (memobs__id == 0) {                                                   \
            memobs__id = memobs__counter_site(name);                             \
            MEMOBS__STORE(&memobs__site_id, memobs__id);                         \
        }                                                                        \
        if (memobs__id > 0) memobs_counter_add(memobs__id - 1, MEMOBS__U64(n));   \
    } while (0)
/* Allocation tracker (see its section above): device and phase of this
   thread; _N adds a tag, _S a C stack of depth frames, _NS both. */
#define MEMOBS_TRACK_ALLOC(ptr, bytes, kind) \
    memobs_track_alloc_full(ptr, MEMOBS__U64(bytes), kind, -1, MEMOBS__NULL, MEMOBS__NULL, -1)
#define MEMOBS_TRACK_ALLOC_N(ptr, bytes, kind, tag) \
    memobs_track_alloc_full(ptr, MEMOBS__U64(bytes), kind, -1, MEMOBS__NULL, tag, -1)
#define MEMOBS_TRACK_ALLOC_S(ptr, bytes, kind, depth) \
    memobs_track_alloc_full(ptr, MEMOBS__U64(bytes), kind, -1, MEMOBS__NULL, MEMOBS__NULL, MEMOBS__INT(depth))
#define MEMOBS_TRACK_ALLOC_NS(ptr, bytes, kind, tag, depth) \
    memobs_track_alloc_full(ptr, MEMOBS__U64(bytes), kind, -1, MEMOBS__NULL, tag, MEMOBS__INT(depth))
#define MEMOBS_TRACK_FREE(ptr) memobs_track_free(ptr)
/* Regions and markers (see their section above): name is a string whose
   text does not change at this call site (a literal); it is interned once
   per site. */
#define MEMOBS__REGION_SITE(name, call)                                           \
    do {                                                                         \
        static memobs_region_t memobs__site_rid; /* 0: not looked up, else id+1 */ \
        memobs_region_t memobs__rid = MEMOBS__LOAD(&memobs__site_rid);           \
        if (memobs__rid == 0) {                                                  \
            memobs__rid = memobs_region_intern(name);                              \
            memobs__rid = memobs__rid < 0 ? memobs__rid : memobs__rid + 1;       \
            MEMOBS__STORE(&memobs__site_rid, memobs__rid);                       \
        }                                                                        \
        call(memobs__rid < 0 ? memobs__rid : memobs__rid - 1);                   \
    } while (0)
#define MEMOBS_REGION_BEGIN(name) MEMOBS__REGION_SITE(name, memobs_region_begin_id)
#define MEMOBS_REGION_END() memobs_region_end()
#define MEMOBS_MARK(name) MEMOBS__REGION_SITE(name, memobs_mark_id)
#ifdef __cplusplus
/* C++: a region for the rest of the enclosing scope. */
#define MEMOBS__REGION_CAT2(a, b) a##b
#define MEMOBS__REGION_CAT(a, b) MEMOBS__REGION_CAT2(a, b)
#define MEMOBS_REGION(name)                                                                   \
    MEMOBS_REGION_BEGIN(name);                                                                \
    memobs_region_scope_t MEMOBS__REGION_CAT(memobs__region_scope_, __COUNTER__)
#endif

#endif /* MEMOBS_DISABLE */

/* ======================================================================== */
/* Private: the inline hot path (memobs__ names are not API)     >>hot-path */
/* ======================================================================== */

#define MEMOBS__LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define MEMOBS__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__LIKELY(x) __builtin_expect(!!(x), 1)
#define MEMOBS__UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef MEMOBS_TLS_INITIAL_EXEC
#define MEMOBS__TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define MEMOBS__TLS_MODEL
#endif

/* One-field structs: a plain assignment to a counter does not compile. */
typedef struct { uint64_t v; } memobs__u64_t;
typedef struct { uint32_t v; } memobs__u32_t;
/* The on/off flag read by every record: a cache line of its own, so a write
   to a neighbouring global cannot slow every record down. */
typedef struct { uint32_t v; char pad[60]; } memobs__flag_t;

#define MEMOBS__NPHASE 3
#define MEMOBS__NDIR 7
#define MEMOBS__NGPU 3 /* directions below it: the ones an observer sees (manual apart) */
#define MEMOBS__XSLOTS 64 /* size slots a direction and phase keep (memobs__size_slot) */

/* A thread's attributed records (see memobs__shard_t's att). */
typedef struct {
    memobs__u64_t x[2][MEMOBS__NPHASE][MEMOBS__NDIR]; /* bytes, operations */
    memobs__u64_t eng[MEMOBS__NDIR];                  /* engine-timed ns */
    memobs__u64_t reg;                                /* regions' ns */
} memobs__att_t;

/* Per-thread shard. The owner thread (and its signal handlers) is the
   only writer of xfer[], user[] and trk[] (memobs__own_add: a plain add,
   no lock prefix); readers sum all shards with relaxed loads, saturating
   the bytes. Cache-line aligned. */
typedef struct memobs__shard_s {
    /* Transfers: bytes, and records by log2 size bucket (their sum is the
       count: a record is two adds, as before sizes were kept). Slot b < 57
       is bucket b but for size 0, which has slot 63 (memobs__size_slot);
       57..62 stay 0. */
    memobs__u64_t xfer[MEMOBS__NPHASE][MEMOBS__NDIR];
    /* Attribution (owner only, monotonic): att, the records made while the
       thread is bound to a request (memobs_request_enter), with their
       engine-timed and regions' ns; attx, those made on a request's
       behalf (memobs_request_xfer*). [0] bytes (saturating), [1] ops. */
    memobs__att_t att;
    memobs__u64_t attx[2][MEMOBS__NPHASE][MEMOBS__NDIR];
    memobs__u64_t xsize[MEMOBS__NPHASE][MEMOBS__NDIR][MEMOBS__XSLOTS];
    memobs__u64_t user[MEMOBS_MAX_COUNTERS];
    memobs__u64_t trk[MEMOBS_MEM_KINDS][5]; /* [kind][allocs, frees, alloc bytes, pending, pending bytes] */
    /* The timeline's per-thread state (owner only, see its section): the
       chunk the owner writes, the next slot in it, the pool epoch it
       belongs to; tl_busy is 1 while a push is inside a pool. */
    memobs__u32_t tl_busy;
    uint32_t tl_epoch, tl_i;
    void *tl_chunk;
    /* Bookkeeping below is touched only under the registry lock. */
    uint64_t base_xfer[MEMOBS__NPHASE][MEMOBS__NDIR] __attribute__((aligned(64)));
    uint64_t base_xsize[MEMOBS__NPHASE][MEMOBS__NDIR][MEMOBS__XSLOTS];
    uint64_t base_user[MEMOBS_MAX_COUNTERS];
    uint64_t base_trk[MEMOBS_MEM_KINDS][5];
    uint64_t base_att[2][2][MEMOBS__NPHASE][MEMOBS__NDIR]; /* att.x, attx */
    /* The requests the owner is bound to (owner only; memobs__tls.req is
       1 while bind_depth > 0), and att when the innermost was bound or its
       ledger last brought up to date: the ledger gets att - bind_at. */
    uint64_t bind_id[MEMOBS_REQUEST_DEPTH];
    uint32_t bind_depth, bind_over; /* bind_over: enters past the depth, each left by one leave */
    memobs__att_t bind_at;
    struct memobs__shard_s *next; /* registry list */
    int in_use;                   /* owned by a live thread */
    int shared;                   /* the fallback shard: written with atomic adds */
    /* Regions open on the owner thread. The owner writes rid[] and then
       rdepth (release); another thread (the sampler, for Stormlog's
       context) loads rdepth (acquire) and the ids below it. */
    memobs__u32_t rdepth;
    memobs__u32_t rid[MEMOBS_REGION_DEPTH];
    uint64_t rt0[MEMOBS_REGION_DEPTH]; /* begin times (0: not timed), owner only */
    /* Per region id: ended, timed, total ns, markers (the owner's adds),
       then their baselines (under the registry lock); NULL until the
       owner's first region end or marker, published with release. */
    memobs__u64_t *rstat;
} memobs__shard_t;

typedef struct {
    memobs__shard_t *shard; /* NULL until the thread's first record */
    uint32_t phase;         /* memobs_phase_t */
    int32_t device;         /* memobs_set_device() */
    uint32_t busy;          /* inside a report, a stack capture or the tracker's set-up */
    uint32_t stk_state;     /* the thread's stack bounds: 0 not read yet, 1 read, 2 unreadable */
    uintptr_t stk_lo, stk_hi; /* [lo, hi): checked by the frame-pointer unwinder */
    uint32_t observing;       /* inside an observer of real calls (memobs_observer_enter) */
    /* Inside memobs code that a signal handler on this thread must not
       enter: a memobs lock held or being taken, a shard being acquired,
       and (not x86-64) a record's read-add-write. A call that finds it
       set takes a path that neither waits nor writes what the code it
       interrupted is writing (see THREADS, SIGNALS). Plain stores:
       a handler leaves it as it found it. */
    uint32_t in;
    /* Bound to a request (memobs_request_enter): the records also add to
       the shard's att. */
    uint32_t req;
} memobs__tls_t;

/* memobs__on.v: 0 off; MEMOBS__ON: on; MEMOBS__ON | MEMOBS__ON_APART: on,
   and transfer records made outside an observer are counted apart as
   "manual" (memobs_set_manual_apart). The apart bit is never set alone, so
   "v != 0" still reads "on". The inline fast path is taken when v is
   exactly MEMOBS__ON (the same compare as before) or an observer records;
   a manual record, apart, takes the slow path. */
#define MEMOBS__ON 1u
#define MEMOBS__ON_APART 2u
extern MEMOBS_API memobs__flag_t memobs__on;
extern MEMOBS_API __thread memobs__tls_t memobs__tls MEMOBS__TLS_MODEL;
/* What code built from this header assumes of the memobs instance it
   records into: its inline fast paths write another module's shard and
   per-thread state directly when they bind to that module's memobs (the
   Python package attached to the LD_PRELOAD library's), and pass it the
   public structs counted here. Two modules share one instance only when
   their keys are equal. */
#define MEMOBS__ABI_KEY                                                                                   \
    (((uint64_t)sizeof(memobs__shard_t) << 40) ^ ((uint64_t)sizeof(memobs__tls_t) << 24) ^                \
     ((uint64_t)sizeof(memobs_summary_t) << 28) ^ ((uint64_t)sizeof(memobs_alloc_info_t) << 52) ^          \
     ((uint64_t)sizeof(memobs_region_stats_t) << 20) ^ ((uint64_t)sizeof(memobs_tag_provider_t) << 16) ^   \
     ((uint64_t)sizeof(memobs_frame_t) << 8) ^ ((uint64_t)MEMOBS_MAX_COUNTERS << 12) ^                     \
     (((uint64_t)sizeof(memobs_coll_stats_t) ^ ((uint64_t)sizeof(memobs_peer_stats_t) << 9) ^               \
       ((uint64_t)sizeof(memobs_coll_info_t) << 18) ^ ((uint64_t)sizeof(memobs_coll_record_t) << 27) ^       \
       ((uint64_t)sizeof(memobs_host_api_t) << 36)) << 4) ^                                                   \
     (uint64_t)MEMOBS_VERSION_NUM)

MEMOBS_API void memobs__xfer_slow(unsigned dir, unsigned phase, uint64_t bytes);
/* n transfers of one direction and phase moving bytes in all, recorded at
   once (memobs_cuda.h's graph launches); one timeline record. */
MEMOBS_API void memobs__xfer_n(unsigned dir, unsigned phase, uint64_t bytes, uint64_t n);
/* The timeline records (see its section): a flag of its own, tested only
   after a record has counted, and the push out of line. */
extern MEMOBS_API memobs__flag_t memobs__tl_on;
MEMOBS_API void memobs__tl_xfer(unsigned dir, unsigned phase, uint64_t bytes);
MEMOBS_API void memobs__counter_slow(memobs_counter_t c, uint64_t n);
/* A device-timed copy issued by a thread bound to request id, completed
   (memobs_cuda.h): its ns in that request's ledger. */
MEMOBS_API void memobs__att_device(uint64_t id, unsigned dir, uint64_t ns);
MEMOBS_API int32_t memobs__counter_site(const char *name);
/* memobs_cuda.h's timed copies in flight (section inflight): hold at
   issue (a token, 0: no room), drop when seen complete or given up (no
   record: the copy was recorded at issue); arm after, outside its lock. */
MEMOBS_API uint64_t memobs__xin_hold(unsigned dir, uint64_t bytes, unsigned phase, int bound, uint64_t req);
MEMOBS_API void memobs__xin_drop(uint64_t token);
MEMOBS_API void memobs__xin_arm(void);

/* Adds to the calling thread's own shard, which a signal handler on this
   thread may also add to, in the middle of it. On x86-64 the add is one
   instruction to memory (no lock prefix): a signal cannot split it, so a
   handler's add is never lost. Elsewhere the read-add-write is marked by
   memobs__tls.in (MEMOBS__OWN_BEGIN/END: plain stores, compiler barriers),
   and a record that finds it set, one made by a handler that interrupted
   it, adds atomically to the shared shard instead (the slow path).
   No saturation here (a test and a branch on the add's carry made the
   record twice as dear in a loop): with each add at most MEMOBS_MAX_BYTES,
   one thread's running total wraps only past 256 adds of that size, and a
   summary unwraps it from the record's size slots (memobs__xfer_unwrap);
   the sums over threads, windows and phases saturate. */
#if defined(__x86_64__) && !defined(MEMOBS__NO_ASM_ADD)
#define MEMOBS__OWN_OK() 1
#define MEMOBS__OWN_BEGIN() ((void)0)
#define MEMOBS__OWN_END() ((void)0)
static inline void memobs__own_add(memobs__u64_t *c, uint64_t n) {
    __asm__ __volatile__("addq %1, %0" : "+m"(c->v) : "er"(n) : "cc");
}
#else
#define MEMOBS__OWN_OK() (memobs__tls.in == 0)
#define MEMOBS__OWN_BEGIN() (memobs__tls.in = 1, __atomic_signal_fence(__ATOMIC_SEQ_CST))
#define MEMOBS__OWN_END() (__atomic_signal_fence(__ATOMIC_SEQ_CST), memobs__tls.in = 0)
static inline void memobs__own_add(memobs__u64_t *c, uint64_t n) { MEMOBS__STORE(&c->v, MEMOBS__LOAD(&c->v) + n); }
#endif

/* A counter's add (memobs_counter_add) that stays at UINT64_MAX once it
   passes it, so one thread's counter saturates as the sums do. x86-64 with
   asm goto and outputs (gcc 11, clang 11 and later): the add, then a jump
   on its carry, not taken until the counter passes 2^64 (with each add at
   most MEMOBS_MAX_BYTES, never before 256 adds of that size): a record's
   cost, measured beside the plain add, within noise. Elsewhere the add,
   then all ones or'ed in on its carry (each step one instruction, or under
   MEMOBS__OWN_BEGIN): branchless, a second write. */
#if defined(__x86_64__) && !defined(MEMOBS__NO_ASM_ADD) && !defined(__NVCC__) && !defined(__CUDACC__) && \
    !defined(__INTEL_COMPILER) && ((defined(__clang__) && __clang_major__ >= 11) ||                      \
                                   (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
static inline void memobs__own_add_sat(memobs__u64_t *c, uint64_t n) {
    __asm__ goto("addq %1, %0\n\tjc %l[memobs__carry]" : "+m"(c->v) : "er"(n) : "cc" : memobs__carry);
    return;
memobs__carry:
    MEMOBS__STORE(&c->v, UINT64_MAX);
}
#elif defined(__x86_64__) && !defined(MEMOBS__NO_ASM_ADD)
static inline void memobs__own_add_sat(memobs__u64_t *c, uint64_t n) {
    __asm__ __volatile__("addq %1, %0\n\tsbbq %%rax, %%rax\n\torq %%rax, %0" : "+m"(c->v) : "er"(n) : "cc", "rax");
}
#else
static inline void memobs__own_add_sat(memobs__u64_t *c, uint64_t n) {
    uint64_t v = MEMOBS__LOAD(&c->v) + n;
    MEMOBS__STORE(&c->v, v < n ? UINT64_MAX : v);
}
#endif

/* The size slot of a record of bytes (at most MEMOBS_MAX_BYTES): its
   bucket ceil(log2(bytes)) (memobs_xfer_sizes_t) as the highest bit of
   2 * bytes - 1, which is never 0: two instructions, no branch. Size 0
   (2 * 0 - 1 is all ones) lands in slot 63, read as bucket 0. */
#if defined(__x86_64__) && !defined(MEMOBS__NO_ASM_ADD)
static inline uint64_t memobs__size_slot(uint64_t bytes) {
    uint64_t r; /* 64 bits wide: the slot's address is then one addressing mode */
    __asm__("bsrq %1, %0" : "=r"(r) : "r"(2 * bytes - 1) : "cc");
    return r;
}
#else
#ifdef __cplusplus
#define MEMOBS__CLZ64(x) static_cast<uint64_t>(__builtin_clzll(x))
#else
#define MEMOBS__CLZ64(x) ((uint64_t)__builtin_clzll(x))
#endif
static inline uint64_t memobs__size_slot(uint64_t bytes) { return 63u ^ MEMOBS__CLZ64(2 * bytes - 1); }
#endif

static inline void memobs__xfer(unsigned dir, unsigned phase, uint64_t bytes) {
    uint32_t on = MEMOBS__LOAD(&memobs__on.v);
    if (MEMOBS__LIKELY(on == MEMOBS__ON) ||
        (on == (MEMOBS__ON | MEMOBS__ON_APART) && (memobs__tls.observing || dir >= MEMOBS__NGPU))) {
        memobs__shard_t *s = memobs__tls.shard;
        if (MEMOBS__LIKELY(s != NULL && dir < MEMOBS__NDIR && phase < MEMOBS__NPHASE && bytes <= MEMOBS_MAX_BYTES &&
                           MEMOBS__OWN_OK())) {
            MEMOBS__OWN_BEGIN();
            memobs__own_add(&s->xfer[phase][dir], bytes);
#ifndef MEMOBS__NO_XSIZE
            memobs__own_add(&s->xsize[phase][dir][memobs__size_slot(bytes)], 1u);
#else /* private, bench/bench_sizes_off.c's "before": the count alone, as a record had it (filed at size 0) */
            memobs__own_add(&s->xsize[phase][dir][0], 1u);
#endif
            if (MEMOBS__UNLIKELY(memobs__tls.req != 0)) { /* bound to a request */
                memobs__own_add_sat(&s->att.x[0][phase][dir], bytes);
                memobs__own_add(&s->att.x[1][phase][dir], 1u);
            }
            MEMOBS__OWN_END();
            if (MEMOBS__UNLIKELY(MEMOBS__LOAD(&memobs__tl_on.v) != 0)) memobs__tl_xfer(dir, phase, bytes);
        } else {
            memobs__xfer_slow(dir, phase, bytes);
        }
    } else if (on) {
        memobs__xfer_slow(dir, phase, bytes); /* a manual record, apart */
    }
}

static inline void memobs__xfer_cur(unsigned dir, uint64_t bytes) {
    memobs__xfer(dir, memobs__tls.phase, bytes);
}

/* Records made between these, on this thread, are observed ones (see
   memobs_set_manual_apart); they nest. */
static inline void memobs_observer_enter(void) { memobs__tls.observing++; }
static inline void memobs_observer_leave(void) {
    if (memobs__tls.observing) memobs__tls.observing--;
}

/* Adds n to a registered counter; exact under threads like the transfers.
   n above MEMOBS_MAX_BYTES is refused (a bad record); the sum over threads
   saturates. */
static inline void memobs_counter_add(memobs_counter_t c, uint64_t n) {
    if (MEMOBS__LIKELY(MEMOBS__LOAD(&memobs__on.v) != 0)) {
        memobs__shard_t *s = memobs__tls.shard;
        if (MEMOBS__LIKELY(s != NULL && c >= 0 && c < MEMOBS_MAX_COUNTERS && n <= MEMOBS_MAX_BYTES &&
                           MEMOBS__OWN_OK())) {
            MEMOBS__OWN_BEGIN();
            memobs__own_add_sat(&s->user[c], n);
            MEMOBS__OWN_END();
        } else {
            memobs__counter_slow(c, n);
        }
    }
}

/* ======================================================================== */
/* Deprecated names (before 1.0)                               >>deprecated */
/* ======================================================================== */

/* The names memobs had before 1.0, each a static inline wrapper of its
   replacement (no symbol, no cost), with a deprecation warning that names
   the replacement. Define MEMOBS_NO_DEPRECATED to leave them out.
   docs/naming.md has the table. Wrappers of a changed argument order keep
   the old order; memobs_region_timing(-1), memobs_request_timeout(UINT64_MAX)
   and memobs_trace_write_limit(UINT64_MAX) still read, and
   memobs_timeline_enable(0) still stops. Old names are not exported
   symbols: a binary built against memobs before 1.0 that calls them from
   another module (dlsym) finds nothing; memobs' instance sharing (the
   Python package and the LD_PRELOAD library) only joins modules of the
   same version. */
#if defined(__cplusplus) && __cplusplus >= 201402L
#define MEMOBS__DEPRECATED(use) [[deprecated("use " use)]]
#elif defined(__GNUC__) || defined(__clang__)
#define MEMOBS__DEPRECATED(use) __attribute__((deprecated("use " use)))
#elif defined(_MSC_VER)
#define MEMOBS__DEPRECATED(use) __declspec(deprecated("use " use))
#else
#define MEMOBS__DEPRECATED(use)
#endif

#ifndef MEMOBS_NO_DEPRECATED
MEMOBS__DEPRECATED("memobs_set_enabled") static inline void memobs_enable(int on) { (void)memobs_set_enabled(on); }
MEMOBS__DEPRECATED("memobs_get_enabled") static inline int memobs_is_enabled(void) { return memobs_get_enabled(); }
MEMOBS__DEPRECATED("memobs_record_xfer(dir, bytes, phase)")
static inline void memobs_record(memobs_dir_t dir, memobs_phase_t phase, uint64_t bytes) {
    memobs_record_xfer(dir, bytes, phase);
}
MEMOBS__DEPRECATED("memobs_record_xfer_timed(dir, bytes, phase, ns)")
static inline void memobs_record_timed(memobs_dir_t dir, memobs_phase_t phase, uint64_t bytes, uint64_t ns) {
    memobs_record_xfer_timed(dir, bytes, phase, ns);
}
MEMOBS__DEPRECATED("memobs_record_ttft") static inline void memobs_ttft_record(uint64_t ns) { memobs_record_ttft(ns); }
MEMOBS__DEPRECATED("memobs_record_tpot") static inline void memobs_tpot_record(uint64_t ns) { memobs_record_tpot(ns); }
MEMOBS__DEPRECATED("memobs_set_manual_apart")
static inline int memobs_manual_apart(int on) { return memobs_set_manual_apart(on); }
MEMOBS__DEPRECATED("memobs_request_set_timeout or memobs_request_get_timeout")
static inline uint64_t memobs_request_timeout(uint64_t ns) {
    return ns == UINT64_MAX ? memobs_request_get_timeout() : memobs_request_set_timeout(ns);
}
MEMOBS__DEPRECATED("memobs_region_intern")
static inline memobs_region_t memobs_region_name(const char *name) { return memobs_region_intern(name); }
MEMOBS__DEPRECATED("memobs_region_set_timing or memobs_region_get_timing")
static inline int memobs_region_timing(int on) { return on < 0 ? memobs_region_get_timing() : memobs_region_set_timing(on); }
MEMOBS__DEPRECATED("memobs_track_set_tag_provider")
static inline int memobs_set_tag_provider(const memobs_tag_provider_t *provider) {
    return memobs_track_set_tag_provider(provider);
}
MEMOBS__DEPRECATED("memobs_track_set_peak_report")
static inline int memobs_set_peak_report(const char *dest, double growth, uint64_t min_bytes) {
    return memobs_track_set_peak_report(dest, growth, min_bytes);
}
MEMOBS__DEPRECATED("memobs_get_device_bytes")
static inline uint64_t memobs_track_device_bytes(int device, uint64_t *max_bytes) {
    return memobs_get_device_bytes(device, max_bytes);
}
MEMOBS__DEPRECATED("memobs_format_trace(buf, len, trace)")
static inline int memobs_trace_text(uint32_t trace, char *buf, size_t len) { return memobs_format_trace(buf, len, trace); }
MEMOBS__DEPRECATED("memobs_format_bytes(buf, len, bytes)")
static inline const char *memobs_fmt_bytes(uint64_t bytes, char *buf, size_t len) {
    return memobs_format_bytes(buf, len, bytes);
}
MEMOBS__DEPRECATED("memobs_format_ns(buf, len, ns)")
static inline const char *memobs_fmt_ns(uint64_t ns, char *buf, size_t len) { return memobs_format_ns(buf, len, ns); }
MEMOBS__DEPRECATED("memobs_timeline_start or memobs_timeline_stop")
static inline int memobs_timeline_enable(size_t capacity) {
    return capacity ? memobs_timeline_start(capacity) : memobs_timeline_stop();
}
MEMOBS__DEPRECATED("memobs_timeline_get_stats")
static inline void memobs_timeline_stats(memobs_timeline_stats_t *out) { memobs_timeline_get_stats(out); }
MEMOBS__DEPRECATED("memobs_timeline_get_threads")
static inline size_t memobs_timeline_threads(memobs_timeline_thread_t *out, size_t max) {
    return memobs_timeline_get_threads(out, max);
}
MEMOBS__DEPRECATED("memobs_write_timeline") static inline int memobs_write_chrome_trace(FILE *f) { return memobs_write_timeline(f); }
MEMOBS__DEPRECATED("memobs_write_timeline_file")
static inline int memobs_write_chrome_trace_file(const char *path) { return memobs_write_timeline_file(path); }
MEMOBS__DEPRECATED("memobs_timeline_set_write_limit or memobs_timeline_get_write_limit")
static inline uint64_t memobs_trace_write_limit(uint64_t ns) {
    return ns == UINT64_MAX ? memobs_timeline_get_write_limit() : memobs_timeline_set_write_limit(ns);
}
MEMOBS__DEPRECATED("memobs_get_samples_dropped")
static inline uint64_t memobs_samples_dropped(void) { return memobs_get_samples_dropped(); }
#endif /* MEMOBS_NO_DEPRECATED */

#ifdef __cplusplus
} /* extern "C" */

#ifndef MEMOBS_DISABLE
/* MEMOBS_REGION(name): ends the region when the scope ends. */
struct memobs_region_scope_t {
    memobs_region_scope_t() {}
    ~memobs_region_scope_t() { memobs_region_end(); }
    memobs_region_scope_t(const memobs_region_scope_t &) = delete;
    memobs_region_scope_t &operator=(const memobs_region_scope_t &) = delete;
};
#endif
#endif

#endif /* MEMOBS_H */

/* ======================================================================== */
/* ======================================================================== */
/*                              IMPLEMENTATION             >>implementation */
/* ======================================================================== */
/* ======================================================================== */

#if defined(MEMOBS_IMPLEMENTATION) && !defined(MEMOBS__IMPLEMENTED)
#define MEMOBS__IMPLEMENTED

/* Direction names in memobs_dir_t order: as every text output shows
   them, and as labels and keys (Prometheus, JSON, the HTML report). */
static const char *const memobs__dir_name[MEMOBS_DIRS] = {"H2D", "D2H", "D2D", "H2S", "S2H", "D2S", "S2D"};
static const char *const memobs__dir_key[MEMOBS_DIRS] = {"h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"};

#if defined(MEMOBS_MALLOC) != defined(MEMOBS_FREE)
#error "define both MEMOBS_MALLOC and MEMOBS_FREE, or neither"
#endif
#ifndef MEMOBS_MALLOC
#include <stdlib.h>
#define MEMOBS_MALLOC(sz) malloc(sz)
#define MEMOBS_FREE(p) free(p)
#endif
#ifndef MEMOBS_MAX_REQUESTS
#define MEMOBS_MAX_REQUESTS 4096
#endif
#ifndef MEMOBS_MAX_TENANTS
#define MEMOBS_MAX_TENANTS 32
#endif
#ifndef MEMOBS_MAX_INFLIGHT
#define MEMOBS_MAX_INFLIGHT 4096
#endif
#if MEMOBS_MAX_INFLIGHT < 1 || MEMOBS_MAX_INFLIGHT > 16777216
#error "MEMOBS_MAX_INFLIGHT must be from 1 to 16777216"
#endif
/* The clock of transfers in flight (the tests give it one they move by hand). */
#ifndef MEMOBS__XIN_NOW
#define MEMOBS__XIN_NOW() memobs_now_ns()
#endif
#ifndef MEMOBS_CALLSTACK
#define MEMOBS_CALLSTACK 0
#endif
#ifndef MEMOBS_UNWIND
#define MEMOBS_UNWIND MEMOBS_UNWIND_BACKTRACE
#endif
#ifndef MEMOBS_TRACK_CAPACITY
#define MEMOBS_TRACK_CAPACITY 32768
#endif
#ifndef MEMOBS_MAX_TRACES
#define MEMOBS_MAX_TRACES 4096
#endif
#ifndef MEMOBS_MAX_REGIONS
#define MEMOBS_MAX_REGIONS 256
#endif
#if MEMOBS_MAX_REGIONS < 2 || MEMOBS_MAX_REGIONS > 65535
#error "MEMOBS_MAX_REGIONS must be from 2 to 65535"
#endif
#ifndef MEMOBS_MAX_DEVICES
#define MEMOBS_MAX_DEVICES 16
#endif
#if MEMOBS_MAX_DEVICES < 1 || MEMOBS_MAX_DEVICES > 4096
#error "MEMOBS_MAX_DEVICES must be from 1 to 4096"
#endif
#ifndef MEMOBS_TORCH_EVENTS
#define MEMOBS_TORCH_EVENTS 16384
#endif
#if MEMOBS_MAX_TRACES < 16 || (MEMOBS_MAX_TRACES & (MEMOBS_MAX_TRACES - 1)) != 0
#error "MEMOBS_MAX_TRACES must be a power of two, at least 16"
#endif

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <execinfo.h>
#define MEMOBS__HAVE_BACKTRACE 1
#endif
/* The frame-pointer unwinder: glibc (the thread's stack bounds) on x86-64
   and aarch64 (a frame record of {previous frame pointer, return address}).
   MEMOBS__NO_FP_UNWIND (private, for the tests) builds without it. */
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__)) && !defined(MEMOBS__NO_FP_UNWIND)
#define MEMOBS__HAVE_FP 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Private: state                                                   >>state */
/* ======================================================================== */

#define MEMOBS__XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__FETCH_OR(p, v) __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define MEMOBS__CAS(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)

/* Histogram: values < 64 ns exact; above, 64 sub-buckets per power of two
   up to 2^45 ns. Bucket width / lower bound <= 1/64, so the bucket midpoint
   is within 0.79% of any value in the bucket. */
#define MEMOBS__HIST_SUB_BITS 6
#define MEMOBS__HIST_SUB (1u << MEMOBS__HIST_SUB_BITS)
#define MEMOBS__HIST_MAX_EXP 45
#define MEMOBS__HIST_NB (MEMOBS__HIST_SUB * (MEMOBS__HIST_MAX_EXP - MEMOBS__HIST_SUB_BITS + 2))

typedef struct {
    memobs__u64_t count, sum, max, last;
    memobs__u64_t b[MEMOBS__HIST_NB];
    uint64_t base_count, base_sum, base_b[MEMOBS__HIST_NB]; /* under state.lock */
} memobs__hist_t;

/* Counted events that are not transfers; each has a baseline for reset. */
enum {
    MEMOBS__ST_REQ_BEGUN,
    MEMOBS__ST_REQ_COMPLETED,
    MEMOBS__ST_REQ_ABORTED,
    MEMOBS__ST_REQ_ABANDONED,
    MEMOBS__ST_REQ_DROPPED,
    MEMOBS__ST_REQ_UNKNOWN,
    MEMOBS__ST_REQ_DUPLICATE,
    MEMOBS__ST_TTFT_UNMATCHED,
    MEMOBS__ST_TPOT_UNARMED,
    MEMOBS__ST_BAD_RECORD,
    MEMOBS__ST_UNTRACKED,
    MEMOBS__ST_FREE_UNKNOWN,
    MEMOBS__ST_FREE_DOUBLE,
    MEMOBS__ST_FREE_NULL,
    MEMOBS__ST_ALLOC_NULL,
    MEMOBS__ST_ALLOC_ZERO,
    MEMOBS__ST_ALLOC_DUP,
    MEMOBS__ST_ALLOC_BAD_KIND,
    MEMOBS__ST_UNTRACKED_ALLOCS,
    MEMOBS__ST_UNTRACKED_BYTES,
    MEMOBS__ST_UNTRACKED_FREES,
    MEMOBS__ST_TRACE_DROPPED,
    MEMOBS__ST_REGION_UNMATCHED,
    MEMOBS__ST_REGION_DEEP,
    MEMOBS__ST_REGION_DROPPED,
    MEMOBS__ST_NESTED, /* refused inside memobs on the same thread (a signal handler): signal_dropped */
    MEMOBS__ST_ATT_ORPHAN, /* bytes attributed to an id not in flight */
    MEMOBS__ST_ATT_BIND,   /* leaves with no enter, enters too deep */
    MEMOBS__ST_ATT_TENANT, /* tenant calls refused */
    MEMOBS__ST_COUNT
};

/* Warn-once bits. */
enum {
    MEMOBS__W_BAD_RECORD = 1u << 0,
    MEMOBS__W_REQ_FULL = 1u << 1,
    MEMOBS__W_REQ_UNKNOWN = 1u << 2,
    MEMOBS__W_TTFT_UNMATCHED = 1u << 3,
    MEMOBS__W_TPOT_UNARMED = 1u << 4,
    MEMOBS__W_UNTRACKED = 1u << 5,
    MEMOBS__W_BAD_COUNTER = 1u << 6,
    MEMOBS__W_NULL_ARG = 1u << 7,
    MEMOBS__W_REQ_DUPLICATE = 1u << 8,
    MEMOBS__W_TRK_BAD = 1u << 9,
    MEMOBS__W_TRK_NULL = 1u << 10,
    MEMOBS__W_TRK_ZERO = 1u << 11,
    MEMOBS__W_TRK_DUP = 1u << 12,
    MEMOBS__W_TRK_FULL = 1u << 13,
    MEMOBS__W_TRK_DOUBLE = 1u << 14,
    MEMOBS__W_TRK_UNKNOWN = 1u << 15,
    MEMOBS__W_TRACES_FULL = 1u << 16,
    MEMOBS__W_REGION_UNMATCHED = 1u << 17,
    MEMOBS__W_REGION_DEEP = 1u << 18,
    MEMOBS__W_REGION_DROPPED = 1u << 19,
    MEMOBS__W_TIMELINE_OFF = 1u << 20,
    MEMOBS__W_NO_FP = 1u << 21,
    MEMOBS__W_TL_KEPT = 1u << 22,
    MEMOBS__W_TOO_BIG = 1u << 23,
    MEMOBS__W_TRK_SAT = 1u << 24,
    MEMOBS__W_ATT_BIND = 1u << 25,
    MEMOBS__W_ATT_ORPHAN = 1u << 26,
    MEMOBS__W_ATT_TENANT = 1u << 27,
    MEMOBS__W_ATT_LINES = 1u << 28
};

#define MEMOBS__REQ_STRIPES 16
#define MEMOBS__REQ_PER_STRIPE ((MEMOBS_MAX_REQUESTS + MEMOBS__REQ_STRIPES - 1) / MEMOBS__REQ_STRIPES)

/* A request's ledger (see "attribution"). */
typedef struct {
    uint64_t x[2][MEMOBS__NPHASE][MEMOBS__NDIR]; /* bytes (saturating), operations */
    uint64_t eng[MEMOBS__NDIR], dev[MEMOBS__NDIR], reg; /* engine-timed, device-timed, regions' ns */
    uint64_t cur, peak;                          /* tracked bytes held, their peak */
} memobs__led_t;

typedef struct {
    uint64_t id, begin_ns, last_ns, first_ns; /* first_ns: the first token's */
    uint32_t tokens, used;
    uint32_t tenant; /* 0: none; t + 1: memobs__att.ten[t] (MEMOBS_MAX_TENANTS: "other") */
    memobs__led_t led;
} memobs__req_t;

typedef struct {
    pthread_mutex_t lock;
    uint32_t n;
    uint64_t reap_ns; /* no slot expires before this (a lower bound; UINT64_MAX: none can) */
    memobs__req_t slot[MEMOBS__REQ_PER_STRIPE];
} memobs__req_stripe_t;

typedef struct {
    char name[64];
    char help_buf[128];
    /* "" until help is known, then help_buf. help_buf is written once, before
       the pointer is published, so a summary can read the text without the
       lock while a late registration supplies it. */
    const char *help;
} memobs__counter_def_t;

/* Allocation tracker. Live allocations sit in MEMOBS__TRK_STRIPES
   open-addressing tables (linear probing, backward-shift delete), each
   under its own spin lock. A stripe is picked by the address's 64 KiB
   granule, so threads that allocate from their own arenas mostly touch
   their own stripes; each stripe's table grows at 1/2 load and is cut
   only when the tables together pass 16 slots per reserved entry
   (memobs__trk_over), and stripes reserve their entries from
   MEMOBS_TRACK_CAPACITY in small batches. Traces (tag + stack) are
   interned in a table that only grows: lookups are lock-free (the key is
   published last, with release), inserts take trace_lock. Current and
   peak bytes per kind and per device are kept in escrow (see
   memobs__esc_t): exact, with no shared cache line written by an alloc
   or free that cannot make a new peak; alloc/free counts live in the
   per-thread shards. */
#define MEMOBS__TRK_STRIPES 64
#define MEMOBS__FREED_RING 16 /* recent frees remembered per stripe (double-free check) */
#define MEMOBS__TRACE_SLOTS (2 * MEMOBS_MAX_TRACES)
#define MEMOBS__TRACE_FRAMES (8 * MEMOBS_MAX_TRACES)
#define MEMOBS__MAX_PROVIDERS 8
#define MEMOBS__TAG_LEN 64

typedef struct {
    uint64_t addr; /* 0: empty slot */
    uint64_t bytes, time_ns;
    const void *stream;
    uint32_t trace;
    int16_t device;
    uint8_t kind, phase;
} memobs__alloc_t;

typedef struct {
    memobs__u32_t lock;    /* spin lock: held for a probe and a store */
    uint32_t n, mask;      /* live entries; slots - 1 (slot == NULL: no table yet) */
    uint32_t limit;        /* entries reserved from the capacity */
    uint32_t ring_pos;
    memobs__alloc_t *slot;
    uint64_t freed[MEMOBS__FREED_RING];
} __attribute__((aligned(64))) memobs__trk_stripe_t;

typedef struct {
    memobs__u64_t next;     /* peak report when the device's tracked bytes reach this */
    memobs__u64_t rep;      /* maximum at the last report */
} memobs__trk_dev_t;

/* Current and peak bytes in escrow. An account is a memory kind or a
   device (MEMOBS__ACCT_DEV + device). Each thread's shard carries an
   escrow record (memobs__esc_shard_t, right after the shard, under its
   own spin lock): d, the bytes its thread allocated minus those it freed
   since they were last folded into g, and l, a lease. Then, with
   C the true current bytes of an account and P its peak:

       C = g + sum(d)     u = g + sum(l)     d <= l in every shard     u <= P

   so C <= P at every moment. A thread frees, and allocates while its d
   stays within its lease, under the stripe lock its table change holds
   anyway: no other thread's line is touched, no second lock is taken,
   and no new peak can be missed, because none is possible. An
   allocation that would pass its lease lets its stripe go and takes the
   global lock: if u + bytes <= P it is added to g (no peak); else, unless
   g is known to be C already (no shard dirty, no lease out), every
   shard's d and l are folded in with every stripe lock held, g = C exactly,
   and g + bytes is compared with P: a new peak is the true one. It then
   leases the thread half of the headroom P - u left. A thread that frees
   and then allocates the same bytes (a ring, a cache) gets them back
   from its own d, even with no headroom at all. The exact current is
   read the same way (a fold); while the timeline is on, cur[] is also
   kept exact with an atomic add per change, for its events' live bytes
   (the shared line the escrow saves otherwise). */
#define MEMOBS__ACCT_DEV MEMOBS_MEM_KINDS
#define MEMOBS__ACCTS (MEMOBS_MEM_KINDS + MEMOBS_MAX_DEVICES)
#define MEMOBS__ACCT_NONE 0xffffu

/* A thread's escrow record has no lock of its own: its owner changes d
   only while it holds a stripe lock of the tracker's table (the one of
   the address it allocates or frees, which the table's change holds
   anyway), and l only under esc.lock; a fold holds esc.lock and every
   stripe lock, so it never meets a change half made. */
typedef struct {
    uint32_t dirty;            /* a d changed since the last fold (counted in esc.dirty) */
    uint32_t reg;              /* on esc.list (it never leaves) */
    void *next;                /* the next memobs__shard_t on esc.list */
    int64_t d[MEMOBS__ACCTS];  /* bytes allocated - freed here since the last fold */
    int64_t l[MEMOBS__ACCTS];  /* lease: d may rise to it without the global lock */
} memobs__esc_shard_t;

/* A shard's escrow record sits right after it, in the same block. */
#define MEMOBS__SHARD_BYTES ((sizeof(memobs__shard_t) + 63) & ~(size_t)63)
#define MEMOBS__ESC_OF(s) ((memobs__esc_shard_t *)(void *)((char *)(s) + MEMOBS__SHARD_BYTES))

/* A record of the PyTorch snapshot's history (see its section): one
   event, or a free's two (action MEMOBS__TSN_FREE_BOTH: free_requested
   then free_completed at one time), expanded when a snapshot copies the
   ring out. */
typedef struct {
    uint64_t addr, bytes;
    uint64_t time; /* in the ring: memobs__ticks(); copied out: microseconds since the epoch */
    const void *stream;
    uint32_t trace;
    uint16_t action, dev; /* dev: the device (in a thread's stage, which holds every device's) */
} memobs__tsn_ev_t;

/* A thread's newest history records, not yet in their devices' rings: the
   third part of its shard's block (see the snapshot's section). */
#define MEMOBS__TSN_STAGE 64
typedef struct {
    memobs__u32_t n;     /* records staged: written by the owner only (release), read by gathers (acquire) */
    memobs__u32_t f;     /* records [f, n) not yet in a ring; changed under a ring lock only */
    memobs__tsn_ev_t ev[MEMOBS__TSN_STAGE];
} memobs__tsn_stage_t;
#define MEMOBS__ESC_BYTES ((sizeof(memobs__esc_shard_t) + 63) & ~(size_t)63)
#define MEMOBS__TSN_OF(s) ((memobs__tsn_stage_t *)(void *)((char *)(s) + MEMOBS__SHARD_BYTES + MEMOBS__ESC_BYTES))

typedef struct {
    memobs__u32_t lock;        /* global: g, u, peak writes, the list, folds */
    memobs__u32_t dirty;       /* shards with dirty set (seq_cst) */
    memobs__u32_t live;        /* cur[] kept exact (the timeline is on) */
    memobs__u32_t nreg;        /* shards on the list */
    void *list;                /* memobs__shard_t with an escrow record in use */
    memobs__u32_t leased;      /* a lease is out (cleared by a fold) */
    memobs__u64_t held;        /* sum of g over the kinds, after each change under the lock */
    memobs__u64_t folds;       /* folds of every shard, for the bench and tests */
    int64_t g[MEMOBS__ACCTS];  /* folded bytes */
    int64_t u[MEMOBS__ACCTS];  /* g + all leases: the ceiling of the current */
    memobs__u64_t peak[MEMOBS__ACCTS]; /* kinds: the window's peak; devices: the highest ever */
    memobs__u64_t cur[MEMOBS__ACCTS];  /* exact while live */
    memobs__u32_t sat[MEMOBS__ACCTS];  /* passed MEMOBS__ESC_CEIL: current and peak read UINT64_MAX from then on */
} memobs__esc_t;
/* The most bytes an account holds (2^60, 16 x MEMOBS_MAX_BYTES): an
   allocation that would take it higher saturates it, for good; every sum
   of the escrow (the kinds', a shard's d) then stays far from 2^63. */
#define MEMOBS__ESC_CEIL ((int64_t)1 << 60)

typedef struct {
    uint64_t key;  /* 0: empty; else the content hash (never 0), stored last */
    uint32_t id;   /* dense, first-seen order */
    uint32_t off;  /* first frame in the frame pool */
    uint16_t np;   /* provider frames, then nc C frames */
    uint16_t nc;
    uint8_t prov;  /* provider slot + 1; 0 = none */
    uint8_t how;   /* how the C frames were captured: MEMOBS__C_FP, MEMOBS__C_CUT */
    char tag[MEMOBS__TAG_LEN];
} memobs__trace_t;

typedef struct {
    /* Read on every call, written rarely. */
    pthread_mutex_t init_lock;
    memobs__u32_t ready; /* 0 not set up, 1 ready, 2 set-up failed */
    uint32_t capacity;   /* live allocations the table holds */
    uint32_t batch;      /* entries a stripe reserves at a time */
    memobs__u32_t used;  /* any allocation seen */
    memobs__u32_t depth; /* default C stack depth */
    memobs__u32_t unwind; /* memobs_unwind_t of C stacks */
    memobs__esc_t esc __attribute__((aligned(64))); /* current and peak bytes */
    memobs__u64_t reserved __attribute__((aligned(64))); /* capacity the stripes hold */
    memobs__u64_t slots;      /* the stripes' table slots, all together (memobs__trk_over) */
    memobs__u64_t resizes;    /* tables made, grown or cut, for the bench and tests */
    memobs__u32_t fitting;    /* a thread is in memobs__trk_fit */
    memobs__u64_t untracked_live;
    memobs__trk_dev_t dev[MEMOBS_MAX_DEVICES];
    memobs__trk_stripe_t stripe[MEMOBS__TRK_STRIPES];
    /* traces */
    pthread_mutex_t trace_lock;
    memobs__trace_t *traces;  /* MEMOBS__TRACE_SLOTS */
    uint32_t *trace_slot;     /* id -> slot */
    memobs_frame_t *frames;   /* MEMOBS__TRACE_FRAMES */
    uint32_t frames_used;     /* under trace_lock */
    memobs__u32_t ntraces;
    memobs_tag_provider_t prov[MEMOBS__MAX_PROVIDERS];
    uint32_t nprov;           /* under trace_lock */
    memobs__u32_t prov_on;    /* installed provider slot + 1, 0 = none */
    /* the peak report */
    memobs__u32_t peak_on;
    memobs__u64_t peak_growth_ppm; /* report threshold growth, parts per million */
    memobs__u64_t peak_min;
    char peak_dest[512];
    int rows;                 /* MEMOBS_REPORT_ROWS */
} memobs__trk_t;

/* Stripe locks of the allocation table. A spin lock, not a mutex: the
   critical section is a few probes, and fork() must hold all of them
   (ThreadSanitizer aborts when one thread holds more than 64 mutexes). */
/* The wait of a lock found taken, out of line. */
static __attribute__((noinline)) void memobs__spin_wait(memobs__u32_t *l) {
    unsigned n = 0;
    do {
        while (MEMOBS__LOAD(&l->v)) {
            if (++n < 100) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            } else {
                sched_yield(); /* the holder was preempted */
            }
        }
    } while (__atomic_exchange_n(&l->v, 1u, __ATOMIC_ACQUIRE));
}
static inline __attribute__((always_inline)) void memobs__spin_lock(memobs__u32_t *l) {
    memobs__tls.in++; /* before: a signal handler on this thread never waits for it (memobs__tls_t.in) */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (MEMOBS__UNLIKELY(__atomic_exchange_n(&l->v, 1u, __ATOMIC_ACQUIRE))) memobs__spin_wait(l);
}
static void memobs__spin_unlock(memobs__u32_t *l) {
    __atomic_store_n(&l->v, 0u, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memobs__tls.in--;
}

/* The mutexes a record, a tracked alloc/free or a request call may take,
   marked as the spin locks are. */
static void memobs__mutex_lock(pthread_mutex_t *m) {
    memobs__tls.in++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pthread_mutex_lock(m);
}
static void memobs__mutex_unlock(pthread_mutex_t *m) {
    pthread_mutex_unlock(m);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memobs__tls.in--;
}

/* Sums that saturate at UINT64_MAX instead of wrapping (see
   MEMOBS_MAX_BYTES). A counter kept with memobs__add_sat_atomic (the
   shared shard, the latency sums, the device-timed figures) stays
   saturated: its figure in a window (memobs__win) is then UINT64_MAX too,
   since what the window added is unknown. */
static uint64_t memobs__sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }
static uint64_t memobs__win(uint64_t cur, uint64_t base) { return cur == UINT64_MAX ? UINT64_MAX : cur - base; }
static void memobs__add_sat_atomic(memobs__u64_t *c, uint64_t n) {
    uint64_t v = MEMOBS__LOAD(&c->v), w;
    do {
        w = memobs__sat(v, n);
    } while (w != v && !MEMOBS__CAS(&c->v, &v, w));
}

/* The file outputs configured from the environment (see OUTPUTS in the
   doc block), one row each, in the order they are written at exit and by
   memobs_flush (small and urgent first, the timeline, the largest, last).
   Everything that tells the outputs apart is generated from or driven by
   these rows: the MEMOBS__OUT_* ids, memobs__out_info, the exit registry
   (memobs__output_exit), memobs_flush, the *_file calls (memobs__output_file)
   and the crash writer's choice (see "outputs, one row each"). A new
   format is one row and one writer. Each row:
     id      MEMOBS__OUT_<id>
     var     its environment variable (the one rule: memobs__dest_parse)
     alias   an older name of var, read when var is unset (0: none)
     what    its name in messages
     binary  never written to a terminal
     write   the writer, int (*)(FILE *, int fmt): fmt is MEMOBS_FORMAT's
             at exit, the caller's for memobs_write_summary_file
     pre     called before its exit write (0: none), with its id
     api     the public *_file call that writes it (0: none)
     env     0: memobs__outputs_env reads var at start-up; 1: its section
             does (memobs__output_env), after the settings it depends on
     crash   the crash writer writes it too (async-signal-safe generator)
     store   0: write makes the file at the path. Else how write's bytes are
             kept instead, int (*)(const char *path, const char *bytes,
             size_t len, unsigned flags): the prometheus_client multiprocess
             files, whose folder is var's (see "multiproc") */
#define MEMOBS__OUTPUT_TABLE(X)                                                                                   \
    X(SUMMARY, "MEMOBS_SUMMARY", 0, "summary", 0, memobs__write_summary_fmt, 0, "memobs_write_summary_file", 0, 1, \
      0)                                                                                                          \
    X(PROM, "MEMOBS_PROM_FILE", 0, "Prometheus file", 0, memobs__write_prom_f, 0, "memobs_write_prometheus_file", \
      1, 1, 0)                                                                                                    \
    X(PROM_MP, "PROMETHEUS_MULTIPROC_DIR", 0, "prometheus_client multiprocess files", 1, memobs__write_prom_f, 0, \
      0, 1, 0, memobs__pmp_store)                                                                                 \
    X(LEAKS, "MEMOBS_LEAKS", 0, "leak report", 0, memobs__write_leaks_f, 0, 0, 0, 0, 0)                           \
    X(STORMLOG, "MEMOBS_STORMLOG", 0, "Stormlog telemetry", 0, memobs__write_stormlog_f, memobs__sl_exit_sample,  \
      "memobs_write_stormlog_file", 1, 0, 0)                                                                      \
    X(STORMLOG_HOST, "MEMOBS_STORMLOG_HOST", 0, "Stormlog host telemetry", 0, memobs__write_stormlog_host_f,      \
      memobs__sl_exit_sample, "memobs_write_stormlog_host_file", 1, 0, 0)                                         \
    X(TORCH, "MEMOBS_TORCH_SNAPSHOT", 0, "PyTorch memory snapshot", 1, memobs__write_torch_snapshot_arg, 0,       \
      "memobs_write_torch_snapshot_file", 1, 0, 0)                                                                \
    X(HTML, "MEMOBS_HTML", 0, "HTML report", 0, memobs__write_html_f, 0, "memobs_write_html_file", 1, 0, 0)       \
    X(TIMELINE, "MEMOBS_TIMELINE", "MEMOBS_TRACE", "Chrome trace", 0, memobs__write_timeline_f, 0,                \
      "memobs_write_timeline_file", 1, 0, 0)                                                                      \
    MEMOBS__TEST_OUTPUT_ROWS(X)
/* A test's own rows, after the real ones (tests/outputs/test_output_table.sh);
   empty in every other build. */
#ifndef MEMOBS__TEST_OUTPUT_ROWS
#define MEMOBS__TEST_OUTPUT_ROWS(X)
#endif

/* Each output's destination is resolved when it is configured:
   expanded (%r, %p, %%) and claimed against the other memobs instances of
   the process (memobs__claim_try; an instance built with
   MEMOBS__CLAIM_LATE, the LD_PRELOAD library, claims at its first write
   or memobs__claims_now instead), so a writer, the crash writer
   included, finds the final name in path with no formatting; refreshed
   in a fork() child (a %p path) and by memobs_set_identity (a %r path). */
#define MEMOBS__OUT_ID(id, var, alias, what, binary, write, pre, api, env, crash, store) MEMOBS__OUT_##id,
enum { MEMOBS__OUTPUT_TABLE(MEMOBS__OUT_ID) MEMOBS__OUTS };
#undef MEMOBS__OUT_ID
#define MEMOBS__SPEC_LEN 512  /* an output variable's value, with its terminating 0 */
#define MEMOBS__PATH_LEN 1024 /* a path once expanded */
typedef struct {
    memobs__u32_t on;            /* configured; the fields below are set before it */
    uint32_t stream;             /* 1 stdout, 2 stderr, 0 a file */
    uint32_t has_pid, has_rank;  /* spec holds %p, %r */
    int64_t owner;               /* the process that configured it */
    int64_t path_pid;            /* the process path was resolved for */
    int claim;                   /* the claim's socket + 1 (0: none) */
    uint32_t claimed;            /* path is claimed (or claims cannot be made): memobs__dest_claim */
    uint64_t claim_dev, claim_ino; /* the claim socket's identity: closed only while fstat shows it */
    uint32_t renamed_said;       /* the claimed name is the expanded one, or the other was told */
    char spec[MEMOBS__SPEC_LEN]; /* as set: "stderr", "stdout" or a path with %r, %p, %% */
    char path[MEMOBS__PATH_LEN]; /* the file written ("" for a stream, or when it did not fit) */
} memobs__dest_t;

/* All mutable state but the hot enabled flag and the TLS slot. */
static pthread_once_t memobs__once = PTHREAD_ONCE_INIT; /* not zero on every libc */
static struct {
    pthread_mutex_t lock; /* shards list, baselines, identity, counters, config */
    pthread_key_t key;    /* thread-exit hook that recycles a shard */
    int key_ok;
    memobs__shard_t *shards;
    memobs__shard_t fallback; /* atomic adds: a thread with no shard (none could be had, or a
                                 signal handler's record inside memobs on its thread) */
    char *slab;               /* where the next shard block is carved (memobs__shard_new) */
    size_t slab_left;
    memobs__u64_t st[MEMOBS__ST_COUNT];
    uint64_t st_base[MEMOBS__ST_COUNT];
    memobs__hist_t ttft, tpot, e2e;
    memobs__u64_t ttft_start_ns, tpot_last_ns; /* global clock; 0 = not set */
    memobs__u64_t window_start_ns;
    memobs__req_stripe_t req[MEMOBS__REQ_STRIPES];
    memobs__u32_t req_used;       /* set under req_use_lock before a stripe is first locked (memobs__req_use) */
    uint32_t req_held;            /* fork() holds the stripes' locks: they were in use */
    pthread_mutex_t req_use_lock; /* req_used's changes; held across fork() */
    memobs__u64_t req_timeout_ns; /* abandon requests idle this long; 0 = never */
    memobs__counter_def_t counters[MEMOBS_MAX_COUNTERS];
    memobs__u32_t ncounters;
    memobs_identity_t identity;
    memobs_format_t format;
    memobs__dest_t out[MEMOBS__OUTS]; /* the outputs, by MEMOBS__OUT_*; changed under lock once on;
                                         on: written at exit and by memobs_flush (memobs__output_exit) */
    memobs__u32_t tmp_seq;      /* numbers the named temporary files */
    memobs__u32_t no_tmpfile;   /* O_TMPFILE files could not be linked: named temporaries only */
    int64_t swept[MEMOBS__OUTS]; /* the pid that swept a %p output's folder for other pids' temporaries */
    memobs__u32_t out_said;     /* warn-once bits of the writers (MEMOBS__OS_*) */
    uint64_t prom_interval_ns;  /* MEMOBS_PROM_INTERVAL_MS, 0 = at exit only */
    memobs__u32_t prom_failing; /* the last periodic write failed: the next ones are quiet */
    /* The periodic write and the crash writer (see its section): a periodic
       write begun while crash_until is ahead is skipped; the crash writer
       waits for one under way (prom_busy, on prom_thread) before it writes. */
    memobs__u64_t crash_until;
    memobs__u32_t prom_busy;
    pthread_t prom_thread;
    memobs_log_fn log_fn;
    void *log_user;
    memobs__u32_t warned;
    memobs__u64_t timed[MEMOBS__NPHASE][MEMOBS__NDIR][3]; /* bytes, count, ns */
    uint64_t timed_base[MEMOBS__NPHASE][MEMOBS__NDIR][3];
    memobs__u64_t timed_in_flight[2];                      /* copies, bytes */
    uint32_t apart;                                        /* MEMOBS__ON_APART or 0, under lock */
    memobs__u32_t exit_off;                                /* memobs_set_exit_outputs(0) */
    pthread_mutex_t flush_lock;                            /* one memobs__flush at a time */
    memobs__u32_t write_fails;                             /* failed whole-file writes (memobs_flush) */
    memobs__u32_t flushes;                                 /* flushes begun (see memobs__sig_exit) */
    memobs__u64_t manual[MEMOBS__NPHASE][MEMOBS__NDIR][2]; /* bytes, count: see memobs_set_manual_apart */
    uint64_t manual_base[MEMOBS__NPHASE][MEMOBS__NDIR][2];
    void (*pre_summary)(void); /* a companion header's hook: settle what it measures */
    memobs__trk_t trk;         /* allocation tracker */
} memobs__g;

/* Attribution's state beside the request table (see "attribution"). lock:
   the tenants' names, the top lists and the request lines' file; taken
   under a request stripe's lock, never the other way round. */
static struct {
    pthread_mutex_t lock;
    memobs__u32_t nten;                       /* tenant names taken; each written before (release) */
    char ten[MEMOBS_MAX_TENANTS][64];
    memobs__u64_t tx[MEMOBS_MAX_TENANTS + 1][2][MEMOBS__NDIR]; /* per tenant, "other" last: bytes, ops */
    memobs__u64_t treq[MEMOBS_MAX_TENANTS + 1];                /* its requests finished */
    uint64_t tx_base[MEMOBS_MAX_TENANTS + 1][2][MEMOBS__NDIR];
    uint64_t treq_base[MEMOBS_MAX_TENANTS + 1];
    memobs_request_info_t top[2][MEMOBS_REQUEST_TOP]; /* by bytes, by wait; largest first */
    uint32_t ntop[2];
    pthread_mutex_t lines_lock;   /* one line written at a time; nothing of memobs' taken under it */
    char lines[MEMOBS__SPEC_LEN]; /* MEMOBS_REQUESTS: "" off, "stderr", "stdout" or a path */
    uint64_t lines_max;           /* MEMOBS_REQUESTS_MAX_BYTES: a file at or past it is rotated; 0 never */
    memobs__u64_t lines_written, lines_failed, rotations;
} memobs__att;

#ifdef MEMOBS_DISABLE
memobs__flag_t memobs__on __attribute__((aligned(64))) = {0, {0}};
#else
memobs__flag_t memobs__on __attribute__((aligned(64))) = {1, {0}};
#endif
__thread memobs__tls_t memobs__tls MEMOBS__TLS_MODEL;

/* The timeline's pushes (its section follows the tracker's), called from
   the record paths when memobs__tl_on is set. */
static void memobs__tl_timed(unsigned dir, unsigned phase, uint64_t bytes, uint64_t ns, int has_id, uint64_t id);
static void memobs__tl_phase(unsigned phase);
/* memobs_request_xfer*'s transfer on the timeline, then (n > 1) each
   request's part of it: the tick they share. */
static uint64_t memobs__tl_req_xfer(unsigned dir, unsigned phase, uint64_t bytes, size_t n, uint64_t id);
static void memobs__tl_req_part(uint64_t tick, unsigned dir, unsigned phase, uint64_t part, uint64_t id);
/* A request finished (memobs__att_done, memobs__att.lock held): kept for
   its slice on the timeline and its Stormlog event (their sections). */
static void memobs__tl_req_done(const memobs_request_info_t *i, uint32_t tenant);
static void memobs__sl_req_done(const memobs_request_info_t *i, uint32_t tenant);
typedef struct memobs__esc_res_s memobs__esc_res_t;
static void memobs__tl_track(uint64_t addr, uint64_t bytes, unsigned kind, int device, uint32_t trace,
                             unsigned phase, int freed, const memobs__esc_res_t *r);
static void memobs__tl_env(void);
static void memobs__tl_region(uint64_t t0, uint64_t dur, int32_t id, uint32_t depth);
static void memobs__tl_mark(uint64_t ts, int32_t id);
static void memobs__tl_release(memobs__shard_t *s);
/* Stormlog's events for regions and markers of collective names (its
   section, at the end). */
static void memobs__sl_mark(uint64_t t0, uint64_t dur, int32_t id, int is_mark);
/* A collective's timeline slice and Stormlog event (their sections). */
static void memobs__tl_coll(uint64_t t0, uint64_t dur, uint64_t bytes, uint64_t seq, uint64_t meta);
/* A peer transfer's point on its peer's counter track (the timeline's section). */
static void memobs__tl_peer(unsigned dir, unsigned phase, int32_t peer, uint64_t bytes, uint64_t ns);
static void memobs__sl_coll(uint64_t t0, uint64_t dur, int32_t comm, int32_t kind, unsigned phase, uint64_t bytes,
                            uint64_t seq);
/* The registration lock of the collectives' tables, held across fork(). */
static void memobs__coll_fork(int lock);
/* The PyTorch snapshot's history of device allocations and its set-up
   (its section follows the allocation reports'). */
enum { MEMOBS__TSN_ALLOC = 0, MEMOBS__TSN_FREE_REQ = 1, MEMOBS__TSN_FREE_DONE = 2 };
/* memobs__tsn_push's action for a free's two events at once: free_requested
   then free_completed, one record and one clock read. */
#define MEMOBS__TSN_FREE_BOTH 3u
/* noinline, cold: device allocations are rare next to host ones, and
   these stay out of the host path's code. */
static __attribute__((noinline, cold)) void memobs__tsn_push(int device, unsigned action, uint64_t addr,
                                                             uint64_t bytes, const void *stream, uint32_t trace);
static __attribute__((noinline, cold)) void memobs__tsn_unrequest(int device, uint64_t addr);
/* The history is kept only on request (memobs_torch_history_start, or
   MEMOBS_TORCH_SNAPSHOT at start-up): the tracker loads this flag, one
   relaxed load, before it calls the two above. Bit 0: recording now (a
   push); bit 1: recorded since start-up (the ring may hold a request to
   take back). Compiled out: constant 0. */
#ifndef MEMOBS_NO_TORCH_SNAPSHOT
static memobs__flag_t memobs__tsn_on __attribute__((aligned(64)));
#endif
#if defined(MEMOBS_NO_TORCH_SNAPSHOT) || defined(MEMOBS_DISABLE)
#define MEMOBS__TSN_ON() 0
#define MEMOBS__TSN_EVER() 0
#else
#define MEMOBS__TSN_ON() MEMOBS__UNLIKELY((MEMOBS__LOAD(&memobs__tsn_on.v) & 1u) != 0)
#define MEMOBS__TSN_EVER() MEMOBS__UNLIKELY(MEMOBS__LOAD(&memobs__tsn_on.v) != 0)
#endif
static void memobs__tsn_fork(int lock);
static void memobs__tsn_leave(memobs__shard_t *s);
static void memobs__tsn_env(void);

/* ======================================================================== */
/* Private: diagnostics                                       >>diagnostics */
/* ======================================================================== */

static void memobs__vlog(int level, const char *fmt, va_list ap) {
    char msg[512];
    memobs_log_fn fn;
    void *user;
    vsnprintf(msg, sizeof msg, fmt, ap);
    fn = __atomic_load_n(&memobs__g.log_fn, __ATOMIC_ACQUIRE);
    user = __atomic_load_n(&memobs__g.log_user, __ATOMIC_RELAXED);
    if (fn) {
        fn(level, msg, user);
    } else {
        fprintf(stderr, "memobs: %s: %s\n",
                level >= MEMOBS_LOG_ERROR ? "error" : level == MEMOBS_LOG_WARN ? "warning" : "info", msg);
    }
}

static void memobs__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    memobs__vlog(level, fmt, ap);
    va_end(ap);
}

/* Logs the first occurrence of a kind of bad event; later ones are only
   counted (the summary shows the counts). */
static void memobs__warn_once(uint32_t bit, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__warn_once(uint32_t bit, const char *fmt, ...) {
    va_list ap;
    if (MEMOBS__FETCH_OR(&memobs__g.warned.v, bit) & bit) return;
    va_start(ap, fmt);
    memobs__vlog(MEMOBS_LOG_WARN, fmt, ap);
    va_end(ap);
}

void memobs_set_log(memobs_log_fn fn, void *user) {
    __atomic_store_n(&memobs__g.log_user, user, __ATOMIC_RELAXED);
    __atomic_store_n(&memobs__g.log_fn, fn, __ATOMIC_RELEASE);
}

const char *memobs_strerror(int err) {
    switch (err) {
    case MEMOBS_OK: return "ok";
    case MEMOBS_ERR_INVALID: return "invalid argument";
    case MEMOBS_ERR_IO: return "i/o error";
    case MEMOBS_ERR_FULL: return "table full";
    case MEMOBS_ERR_NOMEM: return "out of memory";
    default: return "unknown error";
    }
}

/* ======================================================================== */
/* Private: environment and start-up                              >>startup */
/* ======================================================================== */

#if defined(__linux__) && defined(__LP64__)
/* Strict -std=c99/c11 hides clock_gettime() unless the includer defined a
   POSIX feature macro before its first libc header; the libc symbol is there
   regardless, so reach it under a private name (LP64 Linux: time_t is long,
   CLOCK_MONOTONIC is 1). */
struct memobs__timespec { long tv_sec, tv_nsec; };
extern int memobs__clock_gettime(int clk, struct memobs__timespec *ts) __asm__("clock_gettime");
uint64_t memobs_now_ns(void) {
    struct memobs__timespec ts;
    memobs__clock_gettime(1, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* CLOCK_MONOTONIC_COARSE (6): the time of the last tick, a few ns to read
   instead of tens; allocation timestamps (report ages) need no more. */
static uint64_t memobs__coarse_ns(void) {
    struct memobs__timespec ts;
    if (memobs__clock_gettime(6, &ts) != 0) return memobs_now_ns();
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* CLOCK_REALTIME (0): ns since the epoch. */
static uint64_t memobs__realtime_ns(void) {
    struct memobs__timespec ts;
    memobs__clock_gettime(0, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#else
uint64_t memobs_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t memobs__coarse_ns(void) { return memobs_now_ns(); }
static uint64_t memobs__realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

static int memobs__streq_nocase(const char *a, const char *b) {
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) { a++; b++; }
    return *a == 0 && *b == 0;
}

/* 1/0 for a boolean word, -1 for anything else. */
static int memobs__parse_bool(const char *s) {
    static const char *const yes[] = {"1", "on", "true", "yes"};
    static const char *const no[] = {"0", "off", "false", "no"};
    unsigned i;
    for (i = 0; i < 4; i++) {
        if (memobs__streq_nocase(s, yes[i])) return 1;
        if (memobs__streq_nocase(s, no[i])) return 0;
    }
    return -1;
}

/* Whole-string non-negative decimal int. */
static int memobs__parse_int(const char *s, int *out) {
    char *end;
    long v;
    if (!s || !*s || !isdigit((unsigned char)*s)) return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != 0 || v > 0x7fffffffL) return 0;
    *out = (int)v;
    return 1;
}

/* Reads the first set variable of a launcher family; 1 on success. */
static int memobs__env_int(const char *name, int *out, int *found) {
    const char *s = getenv(name), *p;
    if (!s) return 0;
    *found = 1;
    if (memobs__parse_int(s, out)) return 1;
    for (p = s; isdigit((unsigned char)*p); p++) {
    }
    if (p != s && !*p) /* digits alone: too many of them */
        memobs__log(MEMOBS_LOG_WARN, "%s='%s' is above the maximum 2147483647; ignored", name, s);
    else
        memobs__log(MEMOBS_LOG_WARN, "%s='%s' is not a non-negative integer; ignored", name, s);
    return 0;
}

static void memobs__utf8_copy(char *out, size_t len, const char *in);

static void memobs__identity_from_env(void) {
    static const char *const fam[4][3] = {
        {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_LOCAL_RANK", "PMI_SIZE"}};
    static const char *const jobs[3] = {"MEMOBS_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"};
    memobs_identity_t *id = &memobs__g.identity;
    struct utsname un;
    unsigned f, i;
    id->rank = 0;
    id->local_rank = 0;
    id->world_size = 1;
    id->pid = (int64_t)getpid();
    memobs__utf8_copy(id->host, sizeof id->host, uname(&un) == 0 ? un.nodename : "unknown");
    for (i = 0; i < 3; i++) {
        const char *s = getenv(jobs[i]);
        if (s && *s) {
            memobs__utf8_copy(id->job_id, sizeof id->job_id, s);
            break;
        }
    }
    for (f = 0; f < 4; f++) {
        int found = 0, rank = 0, local = 0, world = 1;
        int ok_rank = memobs__env_int(fam[f][0], &rank, &found);
        int ok_local = memobs__env_int(fam[f][1], &local, &found);
        int ok_world = memobs__env_int(fam[f][2], &world, &found);
        if (!found) continue;
        if (!ok_world) world = (ok_rank && rank >= local ? rank : local) + 1;
        if (world < 1 || (ok_rank && rank >= world) || (ok_local && local >= world)) {
            memobs__log(MEMOBS_LOG_WARN, "%s/%s/%s give rank %d, local rank %d of world size %d: inconsistent; "
                        "using rank 0 of 1", fam[f][0], fam[f][1], fam[f][2], rank, local, world);
            break;
        }
        id->rank = ok_rank ? rank : 0;
        id->local_rank = ok_local ? local : 0;
        id->world_size = world;
        break;
    }
}

static void memobs__shard_release(void *p);
static void memobs__esc_leave(memobs__shard_t *s);
static void memobs__esc_lock_all(int lock);
static void memobs__esc_fold_held(int live);
static void memobs__exit_all(void);
static void memobs__sig_env(void);
static void memobs__sig_exit(void);
static void memobs__sig_thread_stack(void);
static void memobs__sig_thread_unstack(void);
static void memobs__peak_arm(void);
static int memobs__output_env(unsigned which);
static void memobs__outputs_env(void);
static void memobs__output_exit(unsigned which);
static int memobs__output_file(unsigned which, const char *path, int fmt);
static int memobs__dest_write(unsigned which, int (*write)(FILE *, int), int arg, unsigned flags);
static void memobs__dest_resolve(unsigned which, int quiet);
static void memobs__outs_fork(void);
static void memobs__smp_env(void) __attribute__((unused)); /* sampler, leak detector, Stormlog */
static void memobs__bg_fork(int stage);
static void memobs__sl_peak(int device, uint64_t dc, uint64_t before, uint32_t trace);
static void memobs__prom_env(void);
static void memobs__pmp_gone(int on);
static int memobs__pmp_env(void);
static size_t memobs__utf8_len(const unsigned char *p);
static int memobs__bg_schedule(void (*fn)(uint64_t now_ns), uint64_t period_ns);
static void memobs__req_env(void);
static void memobs__req_sweep(void);
static void memobs__xin_env(void); /* transfers in flight */
static void memobs__xin_fork(int stage);
static void memobs__xin_reset(void);
static void memobs__xin_check(uint64_t now);
static void memobs__xin_read(memobs_inflight_t *out, uint64_t now);

/* Whole-string byte count with an optional binary suffix: 512, 64K, 64M,
   1G, 2T (also KiB, MB...: all binary). */
static int memobs__parse_bytes(const char *s, uint64_t *out) {
    static const char units[] = "KMGT";
    char *end;
    unsigned long long v;
    const char *u;
    if (!s || !isdigit((unsigned char)*s)) return 0;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno) return 0;
    if (*end) {
        u = strchr(units, toupper((unsigned char)*end));
        if (!u) return 0;
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'B' || *end == 'b') end++;
        if (*end) return 0;
        if (v > (~0ull >> (10 * (u - units + 1)))) return 0;
        v <<= 10 * (u - units + 1);
    }
    *out = (uint64_t)v;
    return 1;
}

/* The one rule of the output variables (OUTPUTS in the doc block): s
   unset, empty, 0, off, false or no (any case): 0, off; stderr, 1, on,
   true or yes: 2 (stderr); stdout: 1; anything else is a path: -1, or
   off with one warning naming the variable when it is len bytes or
   longer. */
static int memobs__dest_parse(const char *name, const char *s, size_t len) {
    int b;
    if (!s || !*s) return 0;
    b = memobs__parse_bool(s);
    if (b >= 0) return b ? 2 : 0;
    if (memobs__streq_nocase(s, "stderr")) return 2;
    if (memobs__streq_nocase(s, "stdout")) return 1;
    if (strlen(s) >= len) {
        memobs__log(MEMOBS_LOG_WARN, "%s is longer than %u bytes; off", name, (unsigned)len - 1);
        return 0;
    }
    return -1;
}

/* An output variable kept as a string (the peak and out-of-memory
   reports): unset, 0 with out unchanged; off, 0 with out ""; else 1 with
   out "stderr", "stdout" or the path. */
static int memobs__report_env(const char *name, char *out, size_t len) {
    const char *s = getenv(name);
    int k = memobs__dest_parse(name, s, len);
    if (!s) return 0;
    if (k == 0) out[0] = 0;
    else strcpy(out, k == 2 ? "stderr" : k == 1 ? "stdout" : s);
    return k != 0;
}

#if defined(MEMOBS_NO_HTML) || defined(MEMOBS_NO_STORMLOG) || defined(MEMOBS_NO_TORCH_SNAPSHOT)
/* An output compiled out (MEMOBS_ and sw: MEMOBS_NO_HTML, ...): its variable, when on, gets
   one warning at start-up and nothing else. */
static void memobs__cut_env(const char *var, const char *sw) {
    const char *s = getenv(var);
    if (memobs__dest_parse(var, s, MEMOBS__SPEC_LEN) != 0)
        memobs__log(MEMOBS_LOG_WARN, "memobs was built with MEMOBS_%s: %s=%s is not written", sw, var, s);
}

/* A writer of an output compiled out: one warning, MEMOBS_ERR_INVALID. */
static int memobs__cut_call(const char *fn, const char *sw) {
    memobs__log(MEMOBS_LOG_WARN, "%s: memobs was built with MEMOBS_%s; nothing written", fn, sw);
    return MEMOBS_ERR_INVALID;
}
#endif

/* Frame pointers asked for where they are not walked: one warning. */
static void memobs__unwind_check(uint32_t unwinder) {
#ifdef MEMOBS__HAVE_FP
    (void)unwinder;
#else
    if (unwinder == MEMOBS_UNWIND_FP)
        memobs__warn_once(MEMOBS__W_NO_FP, "frame-pointer unwinding is built for x86-64 and aarch64 with glibc "
                          "only; C stacks are captured with backtrace() instead");
#endif
}

/* Tracker settings from the environment; runs inside memobs__init_once. */
static void memobs__track_env(void) {
    memobs__trk_t *t = &memobs__g.trk;
    const char *s;
    int v, found = 0;
    uint64_t b;
    if (memobs__env_int("MEMOBS_TRACK_CAPACITY", &v, &found)) {
        if (v >= 1) t->capacity = (uint32_t)v;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_TRACK_CAPACITY=0: must be at least 1; using %u", t->capacity);
    }
    if (memobs__env_int("MEMOBS_CALLSTACK", &v, &found)) {
        if (v > MEMOBS_MAX_STACK)
            memobs__log(MEMOBS_LOG_WARN, "MEMOBS_CALLSTACK=%d is above MEMOBS_MAX_STACK; using %d", v, MEMOBS_MAX_STACK);
        MEMOBS__STORE(&t->depth.v, (uint32_t)(v > MEMOBS_MAX_STACK ? MEMOBS_MAX_STACK : v));
    }
    if ((s = getenv("MEMOBS_UNWIND")) != NULL) {
        if (memobs__streq_nocase(s, "fp")) MEMOBS__STORE(&t->unwind.v, (uint32_t)MEMOBS_UNWIND_FP);
        else if (memobs__streq_nocase(s, "backtrace")) MEMOBS__STORE(&t->unwind.v, (uint32_t)MEMOBS_UNWIND_BACKTRACE);
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_UNWIND='%s' is not backtrace or fp; using %s", s,
                         t->unwind.v == MEMOBS_UNWIND_FP ? "fp" : "backtrace");
    }
    memobs__unwind_check(t->unwind.v);
    if (memobs__env_int("MEMOBS_REPORT_ROWS", &v, &found)) t->rows = v;
    if ((s = getenv("MEMOBS_PEAK_GROWTH")) != NULL) {
        /* the counts' rule: decimal digits from the first character (no
           space, sign, hex or exponent), then at most one point and digits */
        const char *p = s;
        char *end = NULL;
        double g = -1.0;
        while (isdigit((unsigned char)*p)) p++;
        if (*p == '.' && p != s) p++;
        while (p != s && isdigit((unsigned char)*p)) p++;
        if (p != s && !*p) g = strtod(s, &end);
        if (end && end != s && !*end && g >= 0.0 && g <= 1000.0) t->peak_growth_ppm.v = (uint64_t)(g * 1e6 + 0.5);
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_PEAK_GROWTH='%s' is not a fraction in [0, 1000]; using %g", s,
                         (double)t->peak_growth_ppm.v / 1e6);
    }
    if ((s = getenv("MEMOBS_PEAK_MIN")) != NULL) {
        if (memobs__parse_bytes(s, &b)) t->peak_min.v = b;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_PEAK_MIN='%s' is not a byte count (like 64M); using %llu", s,
                         (unsigned long long)t->peak_min.v);
    }
    if (memobs__report_env("MEMOBS_PEAK_REPORT", t->peak_dest, sizeof t->peak_dest)) {
        memobs__peak_arm();
        MEMOBS__STORE(&t->peak_on.v, 1u);
    }
    memobs__tsn_env();
}
static void memobs__atfork_prepare(void);
static void memobs__atfork_parent(void);
static void memobs__atfork_child(void);
static void memobs__att_fork(int stage);
static void memobs__att_release(memobs__shard_t *s);
static void memobs__att_env(void);
static void memobs__reg_init(int env);
static void memobs__html_env(void) __attribute__((unused)); /* HTML report */
static void memobs__pin_self(void);

static void memobs__init_once(void) {
    const char *s;
    unsigned i;
    pthread_mutex_init(&memobs__g.lock, NULL);
    pthread_mutex_init(&memobs__att.lock, NULL);
    pthread_mutex_init(&memobs__att.lines_lock, NULL);
    pthread_mutex_init(&memobs__g.flush_lock, NULL);
    atexit(memobs__exit_all);
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) pthread_mutex_init(&memobs__g.req[i].lock, NULL);
    pthread_mutex_init(&memobs__g.req_use_lock, NULL);
    pthread_mutex_init(&memobs__g.trk.init_lock, NULL);
    pthread_mutex_init(&memobs__g.trk.trace_lock, NULL);
    memobs__g.trk.capacity = MEMOBS_TRACK_CAPACITY;
    memobs__g.trk.depth.v = MEMOBS_CALLSTACK > MEMOBS_MAX_STACK ? MEMOBS_MAX_STACK : MEMOBS_CALLSTACK;
    memobs__g.trk.unwind.v = (int)(MEMOBS_UNWIND) == (int)MEMOBS_UNWIND_FP ? 1u : 0u;
    memobs__g.trk.rows = 50;
    memobs__g.trk.peak_growth_ppm.v = 100000; /* 10% */
    memobs__g.trk.peak_min.v = (uint64_t)64 << 20;
    memobs__g.key_ok = pthread_key_create(&memobs__g.key, memobs__shard_release) == 0;
    memobs__g.fallback.shared = 1;
    memobs__g.fallback.in_use = 1;
    memobs__g.shards = &memobs__g.fallback;
    MEMOBS__STORE(&memobs__g.window_start_ns.v, memobs_now_ns());
    pthread_atfork(memobs__atfork_prepare, memobs__atfork_parent, memobs__atfork_child);
    memobs__identity_from_env();
    memobs__tl_env(); /* the timeline's lock; its environment unless compiled out */
    memobs__req_env(); /* the request timeout; its variable unless compiled out */
    memobs__xin_env(); /* MEMOBS_STUCK_S, unless compiled out */
    memobs__prom_env();
#ifdef MEMOBS_DISABLE
    memobs__reg_init(0);
    (void)s;
    (void)memobs__att_env;
    (void)memobs__parse_bool;
    (void)memobs__outputs_env;
    (void)memobs__track_env;
    return; /* compiled out: stay off, read nothing */
#else
    if ((s = getenv("MEMOBS")) != NULL) {
        int b = memobs__parse_bool(s);
        if (b < 0) memobs__log(MEMOBS_LOG_WARN, "MEMOBS='%s' is not 0/1/on/off/true/false/yes/no; staying enabled", s);
        else MEMOBS__STORE(&memobs__on.v, (uint32_t)b);
    }
    if ((s = getenv("MEMOBS_FORMAT")) != NULL) {
        if (memobs__streq_nocase(s, "json")) memobs__g.format = MEMOBS_FORMAT_JSON;
        else if (memobs__streq_nocase(s, "text")) memobs__g.format = MEMOBS_FORMAT_TEXT;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_FORMAT='%s' is not text or json; using text", s);
    }
    memobs__outputs_env(); /* the outputs the table reads itself: MEMOBS_SUMMARY, MEMOBS_LEAKS */
    memobs__reg_init(1);
    memobs__track_env();
    memobs__att_env();
    memobs__smp_env();
    memobs__html_env();
    memobs__sig_env(); /* last: after every exit output is configured */
#endif
}

int memobs_init(void) {
    pthread_once(&memobs__once, memobs__init_once);
    memobs__pin_self(); /* outside the once: its dlopen waits for the loader's lock */
    return MEMOBS_OK;
}

#if !defined(MEMOBS_NO_AUTOINIT) && !defined(MEMOBS_DISABLE)
__attribute__((constructor)) static void memobs__ctor(void) { memobs_init(); }
#endif

int memobs_set_enabled(int on) {
    memobs_init();
#ifdef MEMOBS_DISABLE
    (void)on;
    return 0;
#else
    int was;
    pthread_mutex_lock(&memobs__g.lock);
    was = MEMOBS__LOAD(&memobs__on.v) != 0;
    MEMOBS__STORE(&memobs__on.v, on ? MEMOBS__ON | memobs__g.apart : 0u);
    pthread_mutex_unlock(&memobs__g.lock);
    return was;
#endif
}

int memobs_set_manual_apart(int on) {
    int was;
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    was = memobs__g.apart != 0;
    memobs__g.apart = on ? MEMOBS__ON_APART : 0u;
    if (MEMOBS__LOAD(&memobs__on.v)) MEMOBS__STORE(&memobs__on.v, MEMOBS__ON | memobs__g.apart);
    pthread_mutex_unlock(&memobs__g.lock);
    return was;
}

int memobs_get_manual_apart(void) {
    int on;
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    on = memobs__g.apart != 0;
    pthread_mutex_unlock(&memobs__g.lock);
    return on;
}

int memobs_get_enabled(void) { return MEMOBS__LOAD(&memobs__on.v) != 0; }

/* memobs_write_summary_file() reports its own failures. */
int memobs_set_exit_outputs(int on) { return MEMOBS__XCHG(&memobs__g.exit_off.v, on ? 0u : 1u) == 0; }
int memobs_get_exit_outputs(void) { return MEMOBS__LOAD(&memobs__g.exit_off.v) == 0; }

/* Every configured output, in the table's order (MEMOBS__OUTPUT_TABLE);
   memobs__output_exit checks exit_off and reports failures. One flush at a
   time: a flush asked for while one runs waits for it and writes again
   (newer figures). The caller holds flush_lock. */
static void memobs__flush_locked(void) {
    unsigned i;
    MEMOBS__ADD(&memobs__g.flushes.v, 1u); /* a stop signal that came before this answered by it */
    for (i = 0; i < MEMOBS__OUTS; i++)
        if (MEMOBS__LOAD(&memobs__g.out[i].on.v)) memobs__output_exit(i);
}

static void memobs__flush_all(void) {
    pthread_mutex_lock(&memobs__g.flush_lock);
    memobs__flush_locked();
    pthread_mutex_unlock(&memobs__g.flush_lock);
}

/* The one atexit handler, registered first thing in memobs__init_once,
   before the background worker's, so the worker is stopped before the
   files are written at exit. A stop signal that came meanwhile ends the
   process here (by that signal). */
static void memobs__exit_all(void) {
    memobs__flush_all();
    memobs__pmp_gone(1);
    memobs__sig_exit();
}

int memobs_flush(void) {
    uint32_t fails;
    memobs_init();
    fails = MEMOBS__LOAD(&memobs__g.write_fails.v);
    memobs__flush_all();
    return MEMOBS__LOAD(&memobs__g.write_fails.v) == fails ? MEMOBS_OK : MEMOBS_ERR_IO;
}

static int memobs__write_leaks_f(FILE *f, int unused) {
    (void)unused;
    return memobs_print_leaks(f);
}

/* ======================================================================== */
/* Private: shards                                                 >>shards */
/* ======================================================================== */

/* Shard blocks (a shard and its escrow record) are carved from slabs of
   mmap()ed memory, never from MEMOBS_MALLOC: a thread's first record may
   be made by a signal handler that interrupted malloc. They live as long
   as the process (a thread's exit recycles its shard). Caller holds
   memobs__g.lock. */
#define MEMOBS__SHARD_BLOCK ((MEMOBS__SHARD_BYTES + MEMOBS__ESC_BYTES + sizeof(memobs__tsn_stage_t) + 63) & ~(size_t)63)
#define MEMOBS__SLAB_BYTES ((size_t)1 << 16)
/* Strict -std=c99/c11 hides MAP_ANONYMOUS; its Linux value where it is
   0x20. Elsewhere, without one, MEMOBS_MALLOC (not async-signal-safe). */
#if defined(MAP_ANONYMOUS)
#define MEMOBS__MAP_ANON MAP_ANONYMOUS
#elif defined(MAP_ANON)
#define MEMOBS__MAP_ANON MAP_ANON
#elif defined(__linux__) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || \
                             defined(__riscv) || defined(__powerpc__) || defined(__s390__))
#define MEMOBS__MAP_ANON 0x20
#endif
/* LeakSanitizer does not look for pointers in mmap()ed memory: a slab is
   made a root, so that what a shard points to (its region counts) is not
   reported as leaked. */
#if defined(__SANITIZE_ADDRESS__)
#define MEMOBS__LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define MEMOBS__LSAN 1
#endif
#endif
#if defined(MEMOBS__LSAN) && defined(MEMOBS__MAP_ANON)
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
#endif
static memobs__shard_t *memobs__shard_new(void) {
    memobs__shard_t *s;
    if (memobs__g.slab_left < MEMOBS__SHARD_BLOCK) {
        size_t len = (MEMOBS__SHARD_BLOCK + MEMOBS__SLAB_BYTES - 1) & ~(MEMOBS__SLAB_BYTES - 1);
#ifdef MEMOBS__MAP_ANON
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MEMOBS__MAP_ANON, -1, 0);
        if (m == MAP_FAILED) return NULL;
#ifdef MEMOBS__LSAN
        if (__lsan_register_root_region) __lsan_register_root_region(m, len);
#endif
#else
        void *m = MEMOBS_MALLOC(len + 63);
        if (!m) return NULL;
        memset(m, 0, len + 63);
        m = (void *)(((uintptr_t)m + 63) & ~(uintptr_t)63);
#endif
        memobs__g.slab = (char *)m; /* zeroed, aligned to 64 */
        memobs__g.slab_left = len;
    }
    s = (memobs__shard_t *)(void *)memobs__g.slab;
    memobs__g.slab += MEMOBS__SHARD_BLOCK;
    memobs__g.slab_left -= MEMOBS__SHARD_BLOCK;
    return s;
}

/* Gives the calling thread a shard (a recycled one if any), or NULL: when
   it interrupted memobs on this thread (a signal handler: a shard being
   acquired, or a lock held), when wait is 0 and another thread holds the
   lock (records never wait: they add to the shared shard, and try again
   at the next), or when there is no memory (*nomem = 1). With wait 0 it
   is async-signal-safe once memobs_init() has run: the lock is only
   tried, the memory comes from mmap(). */
static memobs__shard_t *memobs__shard_get(int wait, int *nomem) {
    memobs__shard_t *s;
    *nomem = 0;
    if (memobs__tls.in) return NULL;
    memobs_init();
    memobs__tls.in++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (wait) {
        pthread_mutex_lock(&memobs__g.lock);
    } else if (pthread_mutex_trylock(&memobs__g.lock) != 0) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        memobs__tls.in--;
        return NULL;
    }
#ifdef MEMOBS__SHARD_HOOK
    MEMOBS__SHARD_HOOK(); /* private, for the tests: a signal raised here interrupts a first record */
#endif
    for (s = memobs__g.shards; s; s = s->next)
        if (!s->in_use) break;
    if (!s && (s = memobs__shard_new()) != NULL) {
        s->next = memobs__g.shards;
        /* release: the crash writer walks the list without the lock */
        __atomic_store_n(&memobs__g.shards, s, __ATOMIC_RELEASE);
    }
    if (s) {
        s->in_use = 1;
        MEMOBS__STORE(&s->rdepth.v, 0u); /* a recycled shard: its last owner's regions ended with it */
        s->bind_depth = s->bind_over = 0; /* and its requests' bindings */
    }
    pthread_mutex_unlock(&memobs__g.lock);
    if (s && memobs__g.key_ok) pthread_setspecific(memobs__g.key, s);
    memobs__tls.shard = s;
    if (s) memobs__sig_thread_stack(); /* a stack overflow on this thread is written too */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memobs__tls.in--;
    *nomem = s == NULL;
    return s;
}

/* The calling thread's shard, waiting for the lock (not for records). */
static memobs__shard_t *memobs__shard_acquire(void) {
    int nomem;
    return memobs__shard_get(1, &nomem);
}

/* The calling thread's shard for a record, or NULL (see memobs__shard_get). */
static memobs__shard_t *memobs__shard_try(int *nomem) {
    *nomem = 0;
    return memobs__tls.shard ? memobs__tls.shard : memobs__shard_get(0, nomem);
}

/* Thread exit: the shard keeps its figures and goes to the next new thread. */
static void memobs__shard_release(void *p) {
    memobs__shard_t *s = (memobs__shard_t *)p;
    memobs__att_release(s); /* a binding left open: its ledger brought up to date */
    memobs__tls.in++; /* a signal handler's record from here on adds to the shared shard */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memobs__tl_release(s); /* its timeline chunk joins the queue */
    memobs__esc_leave(s);  /* its escrow record into the totals */
    memobs__tsn_leave(s);  /* its staged snapshot history into the rings */
    memobs__tls.shard = NULL;
    memobs__sig_thread_unstack();
    pthread_mutex_lock(&memobs__g.lock);
    s->in_use = 0;
    pthread_mutex_unlock(&memobs__g.lock);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memobs__tls.in--;
}

/* fork(): hold every lock across it so the child never inherits one held
   by a thread that does not exist there. */
static void memobs__atfork_prepare(void) {
    unsigned i;
    pthread_mutex_lock(&memobs__g.trk.init_lock);
    pthread_mutex_lock(&memobs__g.trk.trace_lock);
    pthread_mutex_lock(&memobs__g.lock);
    /* Only stripes that were ever locked: each sits on its own page, which
       the unlock after fork() would copy, in the parent and the child. */
    pthread_mutex_lock(&memobs__g.req_use_lock);
    memobs__g.req_held = MEMOBS__LOAD(&memobs__g.req_used.v);
    for (i = 0; i < MEMOBS__REQ_STRIPES && memobs__g.req_held; i++) pthread_mutex_lock(&memobs__g.req[i].lock);
    memobs__spin_lock(&memobs__g.trk.esc.lock); /* before the stripes, as a fold takes them */
    memobs__esc_lock_all(1);                    /* every stripe */
    memobs__tsn_fork(1);
    memobs__coll_fork(1);
    memobs__xin_fork(0);
    memobs__bg_fork(0);
    memobs__att_fork(0);
}
static void memobs__atfork_parent(void) {
    unsigned i;
    memobs__att_fork(1);
    memobs__bg_fork(1);
    memobs__xin_fork(1);
    memobs__coll_fork(0);
    memobs__tsn_fork(0);
    memobs__esc_lock_all(0);
    memobs__spin_unlock(&memobs__g.trk.esc.lock);
    for (i = 0; i < MEMOBS__REQ_STRIPES && memobs__g.req_held; i++) pthread_mutex_unlock(&memobs__g.req[i].lock);
    pthread_mutex_unlock(&memobs__g.req_use_lock);
    pthread_mutex_unlock(&memobs__g.lock);
    pthread_mutex_unlock(&memobs__g.trk.trace_lock);
    pthread_mutex_unlock(&memobs__g.trk.init_lock);
}
static void memobs__atfork_child(void) {
    memobs__shard_t *s;
    memobs__bg_fork(2);
    for (s = memobs__g.shards; s; s = s->next)
        if (!s->shared && s != memobs__tls.shard) s->in_use = 0;
    memobs__att_fork(2);
    memobs__xin_fork(2);
    /* The threads that did not come along leave their escrow records in
       the totals (every lock is held: the cut is exact). */
    memobs__esc_fold_held(-1);
    /* A thread cutting the tables (memobs__trk_fit) did not come along. */
    MEMOBS__STORE(&memobs__g.trk.fitting.v, 0u);
    memobs__g.identity.pid = (int64_t)getpid();
    memobs__outs_fork();
    memobs__atfork_parent();
}

/* A record made outside an observer while manual records are apart: into
   the manual figures only (1), else 0. */
static int memobs__manual(unsigned dir, unsigned phase, uint64_t bytes, uint64_t n) {
    if (!(MEMOBS__LOAD(&memobs__on.v) & MEMOBS__ON_APART) || memobs__tls.observing || dir >= MEMOBS__NGPU) return 0;
    memobs__add_sat_atomic(&memobs__g.manual[phase][dir][0], bytes);
    MEMOBS__ADD(&memobs__g.manual[phase][dir][1].v, n);
    return 1;
}

/* A value above its limit (MEMOBS_MAX_BYTES, or MEMOBS_MAX_NS when ns):
   refused, counted as a bad record; 1 when refused. */
static int memobs__too_big(uint64_t v, int ns, const char *what) {
    if (MEMOBS__LIKELY(v <= (ns ? MEMOBS_MAX_NS : MEMOBS_MAX_BYTES))) return 0;
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
    memobs__warn_once(MEMOBS__W_TOO_BIG, "%s of %llu %s refused: above %s (2^56); counted as a bad record", what,
                      (unsigned long long)v, ns ? "ns" : "bytes", ns ? "MEMOBS_MAX_NS" : "MEMOBS_MAX_BYTES");
    return 1;
}

static int memobs__xfer_do(unsigned dir, unsigned phase, uint64_t bytes, uint64_t n, int on);
void memobs__xfer_slow(unsigned dir, unsigned phase, uint64_t bytes) { (void)memobs__xfer_do(dir, phase, bytes, 1, 0); }

/* Every record but the inline fast path's ends here (n of them, bytes in
   all). A thread with no shard (a signal handler's record inside memobs on
   its thread, the lock busy, or no memory) adds to the shared one. */
/* A direction and phase that are not memobs_dir_t / memobs_phase_t
   values: counted as a bad record; 1 when bad. */
static int memobs__bad_dir(unsigned dir, unsigned phase) {
    if (MEMOBS__LIKELY(dir < MEMOBS__NDIR && phase < MEMOBS__NPHASE)) return 0;
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
    memobs__warn_once(MEMOBS__W_BAD_RECORD, "record with direction %u / phase %u ignored (valid: direction 0..6, "
                      "phase 0..2)", dir, phase);
    return 1;
}

void memobs__xfer_n(unsigned dir, unsigned phase, uint64_t bytes, uint64_t n) {
    (void)memobs__xfer_do(dir, phase, bytes, n, 0);
}

/* memobs__xfer_n's record, attributed by the thread's binding (on 0) or
   on a request's behalf (on 1: memobs_request_xfer*, not the binding's).
   1 when it is in the transfer figures, 0 when not (refused, off, or
   counted apart as manual). */
static int memobs__xfer_do(unsigned dir, unsigned phase, uint64_t bytes, uint64_t n, int on) {
    memobs__shard_t *s;
    uint64_t b;
    int nomem, att = on || memobs__tls.req;
    if (!n) return 0;
    if (memobs__bad_dir(dir, phase) || memobs__too_big(bytes, 0, "a transfer record")) return 0;
    b = memobs__size_slot(bytes / n + (bytes % n != 0)); /* n at once: at their mean size */
    s = memobs__shard_try(&nomem);
    if (!MEMOBS__LOAD(&memobs__on.v)) return 0; /* start-up just read MEMOBS=0 */
    if (memobs__manual(dir, phase, bytes, n)) return 0;
    if (s && MEMOBS__OWN_OK()) { /* this thread's own shard */
        MEMOBS__OWN_BEGIN();
        memobs__own_add(&s->xfer[phase][dir], bytes);
        memobs__own_add(&s->xsize[phase][dir][b], n);
        if (att) {
            memobs__u64_t(*a)[MEMOBS__NPHASE][MEMOBS__NDIR] = on ? s->attx : s->att.x;
            memobs__own_add_sat(&a[0][phase][dir], bytes);
            memobs__own_add(&a[1][phase][dir], n);
        }
        MEMOBS__OWN_END();
    } else {
        if (nomem) {
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_UNTRACKED].v, 1u);
            memobs__warn_once(MEMOBS__W_UNTRACKED, "could not allocate a per-thread shard; this thread records "
                              "through a shared (slower) shard");
        }
        memobs__add_sat_atomic(&memobs__g.fallback.xfer[phase][dir], bytes);
        MEMOBS__ADD(&memobs__g.fallback.xsize[phase][dir][b].v, n);
        if (att) { /* attributed; a binding's ledger never sees the shared shard: orphans */
            memobs__add_sat_atomic(&memobs__g.fallback.attx[0][phase][dir], bytes);
            MEMOBS__ADD(&memobs__g.fallback.attx[1][phase][dir].v, n);
            if (!on) memobs__add_sat_atomic(&memobs__g.st[MEMOBS__ST_ATT_ORPHAN], bytes);
        }
    }
    /* on a request's behalf: memobs__att_xfer puts it on the timeline with its requests */
    if (!on && MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_xfer(dir, phase, bytes);
    return 1;
}

void memobs__counter_slow(memobs_counter_t c, uint64_t n) {
    memobs__shard_t *s;
    int nomem;
    if (c < 0 || c >= (memobs_counter_t)MEMOBS__LOAD(&memobs__g.ncounters.v)) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
        memobs__warn_once(MEMOBS__W_BAD_COUNTER, "add to counter handle %d, which is not registered; ignored", (int)c);
        return;
    }
    if (memobs__too_big(n, 0, "a counter add")) return;
    s = memobs__shard_try(&nomem);
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    if (s && MEMOBS__OWN_OK()) {
        MEMOBS__OWN_BEGIN();
        memobs__own_add_sat(&s->user[c], n);
        MEMOBS__OWN_END();
        return;
    }
    if (nomem) MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_UNTRACKED].v, 1u);
    memobs__add_sat_atomic(&memobs__g.fallback.user[c], n);
}

void memobs_record_xfer(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase) {
    memobs__xfer((unsigned)dir, (unsigned)phase, bytes);
}

/* Adds a timed transfer to the timed figures and the timeline (with the
   request it was made for when has_id). */
static void memobs__timed_add(unsigned dir, unsigned phase, uint64_t bytes, uint64_t ns, int has_id, uint64_t id) {
    memobs__u64_t *t = memobs__g.timed[phase][dir];
    memobs__add_sat_atomic(&t[0], bytes);
    MEMOBS__ADD(&t[1].v, 1u);
    memobs__add_sat_atomic(&t[2], ns);
    if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_timed(dir, phase, bytes, ns, has_id, id);
}

void memobs_record_xfer_timed(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase, uint64_t ns) {
    if (memobs__bad_dir((unsigned)dir, (unsigned)phase) || memobs__too_big(bytes, 0, "a timed copy") ||
        memobs__too_big(ns, 1, "a timed copy"))
        return;
    memobs__timed_add((unsigned)dir, (unsigned)phase, bytes, ns, 0, 0); /* device-timed: no request known here */
}

void memobs_record_xfer_ns(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase, uint64_t ns) {
    if (memobs__bad_dir((unsigned)dir, (unsigned)phase) || memobs__too_big(bytes, 0, "a timed transfer") ||
        memobs__too_big(ns, 1, "a timed transfer"))
        return;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    memobs__xfer((unsigned)dir, (unsigned)phase, bytes);
    /* a copy counted apart as manual is not timed among the observed */
    if (ns && ((unsigned)dir >= MEMOBS__NGPU || memobs__tls.observing ||
               !(MEMOBS__LOAD(&memobs__on.v) & MEMOBS__ON_APART))) {
        memobs__shard_t *s = memobs__tls.shard;
        int bound = memobs__tls.req && s && !s->shared && s->bind_depth;
        memobs__timed_add((unsigned)dir, (unsigned)phase, bytes, ns, bound, bound ? s->bind_id[s->bind_depth - 1] : 0);
        if (memobs__tls.req && s && !s->shared && MEMOBS__OWN_OK()) { /* bound: the request waited for it */
            MEMOBS__OWN_BEGIN();
            memobs__own_add_sat(&s->att.eng[dir], ns);
            MEMOBS__OWN_END();
        }
    }
}

void memobs_timed_in_flight(int64_t copies, int64_t bytes) {
    MEMOBS__ADD(&memobs__g.timed_in_flight[0].v, (uint64_t)copies);
    MEMOBS__ADD(&memobs__g.timed_in_flight[1].v, (uint64_t)bytes);
}

int memobs_set_phase(memobs_phase_t phase) {
    if ((unsigned)phase >= MEMOBS__NPHASE) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_set_phase(%d): not a memobs_phase_t; phase unchanged", (int)phase);
        return MEMOBS_ERR_INVALID;
    }
    memobs__tls.phase = (uint32_t)phase;
    if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_phase((unsigned)phase);
    return MEMOBS_OK;
}

memobs_phase_t memobs_get_phase(void) { return (memobs_phase_t)memobs__tls.phase; }

/* The shard list read without the lock (the summary's sums, the crash
   writer): each shard is published whole (release) and never freed; an
   address that is not a shard's alignment ends a walk, as does the
   MEMOBS__MAX_SHARDS-th shard (a list a crash broke). */
#define MEMOBS__MAX_SHARDS (1u << 20)
static memobs__shard_t *memobs__shard_first(void) {
    memobs__shard_t *s = __atomic_load_n(&memobs__g.shards, __ATOMIC_ACQUIRE);
    return ((uintptr_t)s & 63u) ? NULL : s;
}
static memobs__shard_t *memobs__shard_next(memobs__shard_t *s) {
    s = __atomic_load_n(&s->next, __ATOMIC_ACQUIRE);
    return ((uintptr_t)s & 63u) ? NULL : s;
}

/* ======================================================================== */
/* Private: histograms and timing                              >>histograms */
/* ======================================================================== */

static unsigned memobs__hist_index(uint64_t v) {
    unsigned e;
    if (v < MEMOBS__HIST_SUB) return (unsigned)v;
    e = 63u - (unsigned)__builtin_clzll(v);
    if (e > MEMOBS__HIST_MAX_EXP) return MEMOBS__HIST_NB - 1;
    return MEMOBS__HIST_SUB * (e - MEMOBS__HIST_SUB_BITS + 1) +
           (unsigned)((v >> (e - MEMOBS__HIST_SUB_BITS)) & (MEMOBS__HIST_SUB - 1));
}

/* Midpoint of bucket i (its exact value below 64 ns). */
static uint64_t memobs__hist_value(unsigned i) {
    unsigned e, sub;
    uint64_t lo, width;
    if (i < MEMOBS__HIST_SUB) return i;
    e = i / MEMOBS__HIST_SUB + MEMOBS__HIST_SUB_BITS - 1;
    sub = i % MEMOBS__HIST_SUB;
    width = (uint64_t)1 << (e - MEMOBS__HIST_SUB_BITS);
    lo = ((uint64_t)1 << e) + sub * width;
    return lo + width / 2;
}

/* Atomics only (no lock): a signal handler may add a sample. The sum
   saturates. */
static void memobs__hist_add(memobs__hist_t *h, uint64_t ns) {
    uint64_t m = MEMOBS__LOAD(&h->max.v);
    MEMOBS__ADD(&h->b[memobs__hist_index(ns)].v, 1u);
    memobs__add_sat_atomic(&h->sum, ns);
    MEMOBS__ADD(&h->count.v, 1u);
    MEMOBS__STORE(&h->last.v, ns);
    while (ns > m && !MEMOBS__CAS(&h->max.v, &m, ns)) {
    }
}

/* Caller holds memobs__g.lock. */
static void memobs__hist_rebase(memobs__hist_t *h) {
    unsigned i;
    h->base_count = MEMOBS__LOAD(&h->count.v);
    h->base_sum = MEMOBS__LOAD(&h->sum.v);
    for (i = 0; i < MEMOBS__HIST_NB; i++) h->base_b[i] = MEMOBS__LOAD(&h->b[i].v);
    MEMOBS__STORE(&h->max.v, 0u);
    MEMOBS__STORE(&h->last.v, 0u);
}

/* Caller holds memobs__g.lock. Percentiles use the bucket counts read here,
   so they stay consistent with each other while samples arrive. */
static void memobs__hist_read(memobs__hist_t *h, memobs_latency_t *out) {
    static const double q[3] = {0.50, 0.90, 0.99};
    uint64_t *pq[3], rank[3];
    uint64_t n = 0, seen = 0, cnt, max = MEMOBS__LOAD(&h->max.v);
    unsigned i, k = 0;
    pq[0] = &out->p50_ns;
    pq[1] = &out->p90_ns;
    pq[2] = &out->p99_ns;
    memset(out, 0, sizeof *out);
    for (i = 0; i < MEMOBS__HIST_NB; i++) n += MEMOBS__LOAD(&h->b[i].v) - h->base_b[i];
    if (n == 0) return;
    out->count = n;
    out->last_ns = MEMOBS__LOAD(&h->last.v);
    cnt = MEMOBS__LOAD(&h->count.v) - h->base_count;
    out->mean_ns = memobs__win(MEMOBS__LOAD(&h->sum.v), h->base_sum) / (cnt ? cnt : 1);
    /* rank = ceil(q * n): the smallest sample with at least q of all samples
       at or below it. The sample of rank n is the max, known exactly. */
    for (k = 0; k < 3; k++) {
        double r = q[k] * (double)n;
        rank[k] = (uint64_t)r + ((double)(uint64_t)r < r);
        if (rank[k] == 0) rank[k] = 1;
    }
    for (i = 0, k = 0; i < MEMOBS__HIST_NB && k < 3; i++) {
        seen += MEMOBS__LOAD(&h->b[i].v) - h->base_b[i];
        for (; k < 3 && seen >= rank[k]; k++) {
            uint64_t v = memobs__hist_value(i);
            *pq[k] = (rank[k] == n || (max && v > max)) ? max : v;
        }
    }
    out->max_ns = max;
}

void memobs_ttft_start(void) {
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    MEMOBS__STORE(&memobs__g.ttft_start_ns.v, memobs_now_ns());
}

void memobs_ttft_stop(void) {
    uint64_t now, start;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    start = MEMOBS__XCHG(&memobs__g.ttft_start_ns.v, (uint64_t)0);
    if (start == 0) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_TTFT_UNMATCHED].v, 1u);
        memobs__warn_once(MEMOBS__W_TTFT_UNMATCHED, "TTFT_STOP without a TTFT_START; not timed (counted)");
        return;
    }
    memobs__hist_add(&memobs__g.ttft, now > start ? now - start : 0);
    MEMOBS__STORE(&memobs__g.tpot_last_ns.v, now);
}

void memobs_tpot_step(void) {
    uint64_t now, last;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    now = memobs_now_ns();
    last = MEMOBS__LOAD(&memobs__g.tpot_last_ns.v);
    /* Only the thread that moves the clock from last to now takes the sample. */
    do {
        if (last == 0) {
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_TPOT_UNARMED].v, 1u);
            memobs__warn_once(MEMOBS__W_TPOT_UNARMED, "TPOT_STEP before any TTFT_STOP; not timed (counted)");
            return;
        }
    } while (!MEMOBS__CAS(&memobs__g.tpot_last_ns.v, &last, now));
    memobs__hist_add(&memobs__g.tpot, now > last ? now - last : 0);
}

void memobs_tpot_stop(void) { MEMOBS__STORE(&memobs__g.tpot_last_ns.v, (uint64_t)0); }

void memobs_record_ttft(uint64_t ns) {
    if (ns && MEMOBS__LOAD(&memobs__on.v) && !memobs__too_big(ns, 1, "a TTFT sample"))
        memobs__hist_add(&memobs__g.ttft, ns);
}

void memobs_record_tpot(uint64_t ns) {
    if (ns && MEMOBS__LOAD(&memobs__on.v) && !memobs__too_big(ns, 1, "a TPOT sample"))
        memobs__hist_add(&memobs__g.tpot, ns);
}

/* ======================================================================== */
/* Private: per-request table                                    >>requests */
/* ======================================================================== */

static uint64_t memobs__mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A request call inside memobs on the same thread (a signal handler that
   interrupted it, perhaps holding this very stripe's lock): refused and
   counted, 1. */
static int memobs__req_nested(void) {
    if (MEMOBS__LIKELY(memobs__tls.in == 0)) return 0;
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_NESTED].v, 1u);
    return 1;
}

/* The request table's clock (the tests give it one they move by hand). */
#ifndef MEMOBS__REQ_NOW
#define MEMOBS__REQ_NOW() memobs_now_ns()
#endif
#define MEMOBS__REQ_TIMEOUT_DEFAULT_NS (600ull * 1000000000u)
#define MEMOBS__REQ_TIMEOUT_MAX_NS (1000000000ull * 1000000000u) /* 1e9 s */

/* Stripe locked: *at is the slot holding id or, if absent, the first free
   slot of its probe run (or -1 when the stripe is full). */
static void memobs__req_probe(memobs__req_stripe_t *st, uint64_t id, uint64_t h, int *at, int *found) {
    unsigned i, n = MEMOBS__REQ_PER_STRIPE, j = (unsigned)((h / MEMOBS__REQ_STRIPES) % n);
    *at = -1;
    *found = 0;
    for (i = 0; i < n; i++, j = (j + 1) % n) {
        if (!st->slot[j].used) {
            *at = (int)j;
            return;
        }
        if (st->slot[j].id == id) {
            *at = (int)j;
            *found = 1;
            return;
        }
    }
}

/* Before a thread first locks a stripe: fork() holds the stripes' locks
   from then on (memobs__atfork_prepare reads req_used under
   req_use_lock, which nothing else is taken under; a signal handler that
   interrupts this is refused by memobs__req_nested). */
static void memobs__req_use(void) {
    if (MEMOBS__LOAD(&memobs__g.req_used.v)) return;
    memobs__mutex_lock(&memobs__g.req_use_lock);
    MEMOBS__STORE(&memobs__g.req_used.v, 1u);
    memobs__mutex_unlock(&memobs__g.req_use_lock);
}

/* Locks the stripe of id and probes it (memobs__req_probe). */
static memobs__req_stripe_t *memobs__req_find(uint64_t id, int *at, int *found) {
    uint64_t h = memobs__mix(id);
    memobs__req_stripe_t *st = &memobs__g.req[h % MEMOBS__REQ_STRIPES];
    memobs_init();
    memobs__req_use();
    memobs__mutex_lock(&st->lock);
    memobs__req_probe(st, id, h, at, found);
    return st;
}

/* Removes slot j keeping linear-probe runs intact (backward shift). */
static void memobs__req_remove(memobs__req_stripe_t *st, unsigned j) {
    unsigned n = MEMOBS__REQ_PER_STRIPE, k = j;
    st->slot[j].used = 0;
    st->n--;
    for (;;) {
        unsigned home;
        k = (k + 1) % n;
        if (!st->slot[k].used) return;
        home = (unsigned)((memobs__mix(st->slot[k].id) / MEMOBS__REQ_STRIPES) % n);
        /* Move k into the hole j if its home is not in (j, k] cyclically. */
        if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
            st->slot[j] = st->slot[k];
            st->slot[k].used = 0;
            j = k;
        }
    }
}

/* A request's ledger finished (see "attribution"): stripe locked, or the
   slot copied out of the table. */
static void memobs__att_done(const memobs__req_t *r, memobs_request_state_t state, uint64_t now);

/* When a request went idle: its begin, or its last token. */
static uint64_t memobs__req_idle_from(const memobs__req_t *r) { return r->tokens ? r->last_ns : r->begin_ns; }

/* When a request idle from t expires (saturating). */
static uint64_t memobs__req_expiry(uint64_t t, uint64_t timeout) {
    return t > UINT64_MAX - timeout ? UINT64_MAX : t + timeout;
}

/* Stripe locked, timeout > 0: ends every request idle for the timeout as
   abandoned and sets reap_ns to the earliest expiry left. A removal
   shifts later slots back into the hole, so the scan looks at slot j again;
   a slot moved from the start of the stripe to its end (a wrapped run) was
   kept once already and is only looked at twice. */
static void memobs__req_reap(memobs__req_stripe_t *st, uint64_t now, uint64_t timeout) {
    uint64_t next = UINT64_MAX, gone = 0;
    unsigned j = 0;
    while (j < MEMOBS__REQ_PER_STRIPE && st->n) {
        memobs__req_t *r = &st->slot[j];
        if (r->used) {
            uint64_t exp = memobs__req_expiry(memobs__req_idle_from(r), timeout);
            if (exp <= now) {
                memobs__att_done(r, MEMOBS_REQUEST_ABANDONED, now);
                memobs__req_remove(st, j);
                gone++;
                continue;
            }
            if (exp < next) next = exp;
        }
        j++;
    }
    st->reap_ns = next;
    if (gone) MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_ABANDONED].v, gone);
}

/* Stripe locked and full of live requests: drops the one idle longest
   (begin_ns is a tie-break: any will do). */
static void memobs__req_evict(memobs__req_stripe_t *st, uint64_t id) {
    unsigned j, best = 0;
    uint64_t t = UINT64_MAX;
    for (j = 0; j < MEMOBS__REQ_PER_STRIPE; j++) {
        uint64_t f = memobs__req_idle_from(&st->slot[j]);
        if (st->slot[j].used && f < t) {
            t = f;
            best = j;
        }
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_DROPPED].v, 1u);
    memobs__warn_once(MEMOBS__W_REQ_FULL, "request table full (MEMOBS_MAX_REQUESTS=%u) of requests in flight: "
                      "request %llu, idle the longest, dropped untimed to time request %llu (counted; raise "
                      "MEMOBS_MAX_REQUESTS or lower MEMOBS_REQUEST_TIMEOUT_S)", (unsigned)MEMOBS_MAX_REQUESTS,
                      (unsigned long long)st->slot[best].id, (unsigned long long)id);
    memobs__att_done(&st->slot[best], MEMOBS_REQUEST_DROPPED, MEMOBS__REQ_NOW());
    memobs__req_remove(st, best);
}

/* Ends the abandoned requests of every stripe that may hold one: before a
   summary, so that every output counts them. */
static void memobs__req_sweep(void) {
    uint64_t now = MEMOBS__REQ_NOW(), timeout = MEMOBS__LOAD(&memobs__g.req_timeout_ns.v);
    unsigned i;
    if (!timeout || !MEMOBS__LOAD(&memobs__g.req_used.v)) return; /* no request yet */
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) {
        memobs__req_stripe_t *st = &memobs__g.req[i];
        memobs__mutex_lock(&st->lock);
        if (now >= st->reap_ns) memobs__req_reap(st, now, timeout);
        memobs__mutex_unlock(&st->lock);
    }
}

uint64_t memobs_request_get_timeout(void) {
    memobs_init();
    return MEMOBS__LOAD(&memobs__g.req_timeout_ns.v);
}

uint64_t memobs_request_set_timeout(uint64_t ns) {
    uint64_t was;
    unsigned i;
    memobs_init();
    if (ns > MEMOBS__REQ_TIMEOUT_MAX_NS) ns = MEMOBS__REQ_TIMEOUT_MAX_NS;
    was = MEMOBS__XCHG(&memobs__g.req_timeout_ns.v, ns);
    memobs__req_use();
    /* The stripes' bounds held for the old timeout: look again (a begin
       that locks a stripe after this sees the new timeout). */
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++) {
        memobs__mutex_lock(&memobs__g.req[i].lock);
        memobs__g.req[i].reap_ns = ns ? 0 : UINT64_MAX;
        memobs__mutex_unlock(&memobs__g.req[i].lock);
    }
    return was;
}

/* Whole-string seconds with up to 9 decimals ("600", "0.25"), in ns; no
   strtod: its decimal point follows the program's locale. */
static int memobs__parse_seconds(const char *s, uint64_t max_ns, uint64_t *out) {
    uint64_t sec = 0, frac = 0, scale = 100000000u;
    int any = 0, nonzero = 0;
    for (; *s >= '0' && *s <= '9'; s++, any = 1) {
        if (sec > max_ns / 1000000000u) return 0;
        sec = sec * 10u + (uint64_t)(*s - '0');
        nonzero |= *s != '0';
    }
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++, any = 1) {
            frac += (uint64_t)(*s - '0') * scale;
            scale /= 10u;
            nonzero |= *s != '0';
        }
    }
    if (!any || *s || sec > max_ns / 1000000000u || sec * 1000000000u > max_ns - frac) return 0;
    *out = sec * 1000000000u + frac;
    if (!*out && nonzero) *out = 1; /* a positive time below 1 ns is not "never" */
    return 1;
}

/* Runs inside memobs__init_once. */
static void memobs__req_env(void) {
#ifdef MEMOBS_DISABLE
    const char *s = NULL; /* compiled out: read nothing */
#else
    const char *s = getenv("MEMOBS_REQUEST_TIMEOUT_S");
#endif
    uint64_t ns = MEMOBS__REQ_TIMEOUT_DEFAULT_NS;
    if (s && !memobs__parse_seconds(s, MEMOBS__REQ_TIMEOUT_MAX_NS, &ns)) {
        memobs__log(MEMOBS_LOG_WARN, "MEMOBS_REQUEST_TIMEOUT_S='%s' is not a number of seconds from 0 (never) to "
                    "1000000000 (like 600 or 0.5); using 600", s);
        ns = MEMOBS__REQ_TIMEOUT_DEFAULT_NS;
    }
    MEMOBS__STORE(&memobs__g.req_timeout_ns.v, ns);
}

void memobs_request_begin(uint64_t id) {
    int at, found;
    memobs__req_stripe_t *st;
    uint64_t now, timeout;
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return;
    now = MEMOBS__REQ_NOW();
    st = memobs__req_find(id, &at, &found);
    if (found) {
        memobs__mutex_unlock(&st->lock);
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_DUPLICATE].v, 1u);
        memobs__warn_once(MEMOBS__W_REQ_DUPLICATE, "request %llu begun twice; keeping the first begin (counted)",
                          (unsigned long long)id);
        return;
    }
    timeout = MEMOBS__LOAD(&memobs__g.req_timeout_ns.v);
    if (MEMOBS__UNLIKELY(at < 0 || now >= st->reap_ns)) {
        /* a request of this stripe may have expired, or the stripe is full */
        if (!timeout) st->reap_ns = UINT64_MAX;
        else if (now >= st->reap_ns) memobs__req_reap(st, now, timeout);
        if (st->n == MEMOBS__REQ_PER_STRIPE) memobs__req_evict(st, id);
        memobs__req_probe(st, id, memobs__mix(id), &at, &found);
    }
    memset(&st->slot[at], 0, sizeof st->slot[at]); /* its ledger too */
    st->slot[at].id = id;
    st->slot[at].begin_ns = now;
    st->slot[at].used = 1;
    st->n++;
    if (timeout && memobs__req_expiry(now, timeout) < st->reap_ns) st->reap_ns = memobs__req_expiry(now, timeout);
    memobs__mutex_unlock(&st->lock);
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_BEGUN].v, 1u);
}

/* Locks the stripe of an in-flight id and returns its slot; for an id not
   in flight (or idle past the timeout: then ended as abandoned), counts it
   as unknown and returns NULL with nothing locked. */
static memobs__req_t *memobs__req_live(uint64_t id, uint64_t now, const char *what, memobs__req_stripe_t **st) {
    int at, found;
    uint64_t timeout = MEMOBS__LOAD(&memobs__g.req_timeout_ns.v);
    *st = memobs__req_find(id, &at, &found);
    if (found) {
        memobs__req_t *r = &(*st)->slot[at];
        if (!timeout || memobs__req_expiry(memobs__req_idle_from(r), timeout) > now) return r;
        memobs__att_done(r, MEMOBS_REQUEST_ABANDONED, now);
        memobs__req_remove(*st, (unsigned)at);
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_ABANDONED].v, 1u);
    }
    memobs__mutex_unlock(&(*st)->lock);
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_UNKNOWN].v, 1u);
    memobs__warn_once(MEMOBS__W_REQ_UNKNOWN, "%s for request %llu, which is not in flight (never begun, ended, or "
                      "abandoned after MEMOBS_REQUEST_TIMEOUT_S); ignored (counted)", what, (unsigned long long)id);
    return NULL;
}

void memobs_request_token(uint64_t id) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    uint64_t now, prev, begin;
    uint32_t tokens;
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return;
    now = MEMOBS__REQ_NOW();
    if ((r = memobs__req_live(id, now, "token", &st)) == NULL) return;
    tokens = r->tokens++;
    prev = r->last_ns;
    begin = r->begin_ns;
    r->last_ns = now > begin ? now : begin; /* idle from here (never before the begin) */
    if (tokens == 0) r->first_ns = r->last_ns;
    memobs__mutex_unlock(&st->lock);
    if (tokens == 0) memobs__hist_add(&memobs__g.ttft, now > begin ? now - begin : 0);
    else memobs__hist_add(&memobs__g.tpot, now > prev ? now - prev : 0);
}

static void memobs__att_end_bound(uint64_t id);

void memobs_request_end(uint64_t id) {
    memobs__req_stripe_t *st;
    memobs__req_t *r, done;
    uint64_t now, begin;
    uint32_t tokens;
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return;
    memobs__att_end_bound(id); /* this thread's records for it so far, in its ledger */
    now = MEMOBS__REQ_NOW();
    if ((r = memobs__req_live(id, now, "end", &st)) == NULL) return;
    tokens = r->tokens;
    begin = r->begin_ns;
    done = *r;
    memobs__req_remove(st, (unsigned)(r - st->slot));
    memobs__mutex_unlock(&st->lock);
    memobs__att_done(&done, tokens ? MEMOBS_REQUEST_COMPLETED : MEMOBS_REQUEST_ABORTED, now);
    if (tokens == 0) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_ABORTED].v, 1u);
        return;
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REQ_COMPLETED].v, 1u);
    memobs__hist_add(&memobs__g.e2e, now > begin ? now - begin : 0);
}

/* ======================================================================== */
/* Private: attribution to requests                           >>attribution */
/* ======================================================================== */

/* A record made while its thread is bound to a request adds to the
   shard's att as well (two plain adds, see memobs__xfer); the request's
   ledger in the table gets att - bind_at when the binding changes
   (memobs__att_flush: one stripe lock). A record made on a request's
   behalf (memobs_request_xfer*) adds to the shard's attx and to the
   ledger at once. The attributed figures are the shards' att.x + attx,
   summed as the transfer figures are, so that attributed + unattributed =
   total holds at any read. */

/* The shard's att as plain numbers (owner, or the summary's reads). */
static void memobs__att_read(memobs__shard_t *s, memobs__att_t *to) {
    const memobs__u64_t *a = &s->att.x[0][0][0];
    memobs__u64_t *t = &to->x[0][0][0];
    size_t i;
    for (i = 0; i < sizeof s->att / sizeof(memobs__u64_t); i++) t[i].v = MEMOBS__LOAD(&a[i].v);
}

/* Stripe locked: the ledger of r gets d, and r's tenant's counters its
   bytes and operations. */
static void memobs__att_add(memobs__req_t *r, const memobs__led_t *d) {
    memobs__led_t *l = &r->led;
    unsigned p, k;
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++) {
            l->x[0][p][k] = memobs__sat(l->x[0][p][k], d->x[0][p][k]);
            l->x[1][p][k] += d->x[1][p][k];
        }
    for (k = 0; k < MEMOBS__NDIR; k++) {
        l->eng[k] = memobs__sat(l->eng[k], d->eng[k]);
        l->dev[k] = memobs__sat(l->dev[k], d->dev[k]);
    }
    l->reg = memobs__sat(l->reg, d->reg);
    if (r->tenant)
        for (k = 0; k < MEMOBS__NDIR; k++) {
            uint64_t b = 0, n = 0;
            for (p = 0; p < MEMOBS__NPHASE; p++) {
                b = memobs__sat(b, d->x[0][p][k]);
                n += d->x[1][p][k];
            }
            if (b) memobs__add_sat_atomic(&memobs__att.tx[r->tenant - 1][0][k], b);
            if (n) MEMOBS__ADD(&memobs__att.tx[r->tenant - 1][1][k].v, n);
        }
}

/* The bytes of a ledger's change. */
static uint64_t memobs__att_bytes(const memobs__led_t *d) {
    uint64_t b = 0;
    unsigned p, k;
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++) b = memobs__sat(b, d->x[0][p][k]);
    return b;
}

/* Locks the stripe of request id when it is in flight (not idle past the
   timeout): its slot, or NULL with nothing locked. */
static memobs__req_t *memobs__att_slot(uint64_t id, memobs__req_stripe_t **st) {
    int at, found;
    uint64_t timeout = MEMOBS__LOAD(&memobs__g.req_timeout_ns.v);
    *st = memobs__req_find(id, &at, &found);
    if (found) {
        memobs__req_t *r = &(*st)->slot[at];
        if (!timeout || memobs__req_expiry(memobs__req_idle_from(r), timeout) > MEMOBS__REQ_NOW()) return r;
    }
    memobs__mutex_unlock(&(*st)->lock);
    return NULL;
}

/* The ledger of request id gets d; for an id not in flight, d's bytes are
   counted as orphans (one warning). */
static void memobs__att_to(uint64_t id, const memobs__led_t *d) {
    memobs__req_stripe_t *st;
    memobs__req_t *r = memobs__att_slot(id, &st);
    uint64_t b;
    if (r) {
        memobs__att_add(r, d);
        memobs__mutex_unlock(&st->lock);
        return;
    }
    if ((b = memobs__att_bytes(d)) == 0) return;
    memobs__add_sat_atomic(&memobs__g.st[MEMOBS__ST_ATT_ORPHAN], b);
    memobs__warn_once(MEMOBS__W_ATT_ORPHAN, "%llu bytes attributed to request %llu, which is not in flight (never "
                      "begun, or ended); in the attributed figures, in no request's ledger (counted)",
                      (unsigned long long)b, (unsigned long long)id);
}

/* Owner thread, bound: the ledger of its innermost request gets what the
   thread attributed since bind_at, which moves up to now. */
static void memobs__att_flush(memobs__shard_t *s) {
    memobs__att_t now;
    memobs__led_t d;
    unsigned p, k;
    int any = 0;
    memobs__att_read(s, &now);
    memset(&d, 0, sizeof d);
    for (p = 0; p < 2; p++)
        for (k = 0; k < MEMOBS__NPHASE * MEMOBS__NDIR; k++)
            any |= ((&d.x[p][0][0])[k] = memobs__win((&now.x[p][0][0])[k].v, (&s->bind_at.x[p][0][0])[k].v)) != 0;
    for (k = 0; k < MEMOBS__NDIR; k++) any |= (d.eng[k] = now.eng[k].v - s->bind_at.eng[k].v) != 0;
    any |= (d.reg = now.reg.v - s->bind_at.reg.v) != 0;
    s->bind_at = now;
    if (any) memobs__att_to(s->bind_id[s->bind_depth - 1], &d);
}

void memobs_request_enter(uint64_t id) {
    memobs__shard_t *s;
    int nomem;
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return;
    s = memobs__tls.shard ? memobs__tls.shard : memobs__shard_get(1, &nomem); /* waits: never the shared one */
    if (!s || s->shared) { /* no memory for a shard: the thread's records go to the shared one */
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ATT_BIND].v, 1u);
        return;
    }
    if (s->bind_depth >= MEMOBS_REQUEST_DEPTH) {
        s->bind_over++;
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ATT_BIND].v, 1u);
        memobs__warn_once(MEMOBS__W_ATT_BIND, "memobs_request_enter(%llu) deeper than MEMOBS_REQUEST_DEPTH=%d on "
                          "this thread: its records stay with request %llu (counted)", (unsigned long long)id,
                          MEMOBS_REQUEST_DEPTH, (unsigned long long)s->bind_id[s->bind_depth - 1]);
        return;
    }
    if (s->bind_depth) memobs__att_flush(s); /* the outer request's records so far */
    else memobs__att_read(s, &s->bind_at);
    s->bind_id[s->bind_depth++] = id;
    memobs__tls.req = 1;
}

void memobs_request_leave(void) {
    memobs__shard_t *s = memobs__tls.shard;
    if (memobs__req_nested()) return;
    if (s && !s->shared && s->bind_over) {
        s->bind_over--;
        return;
    }
    if (!s || s->shared || !s->bind_depth) {
        if (!MEMOBS__LOAD(&memobs__on.v)) return;
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ATT_BIND].v, 1u);
        memobs__warn_once(MEMOBS__W_ATT_BIND, "memobs_request_leave() with no request entered on this thread; "
                          "ignored (counted)");
        return;
    }
    memobs__att_flush(s);
    s->bind_depth--;
    memobs__tls.req = s->bind_depth != 0;
}

int memobs_request_current(uint64_t *id) {
    memobs__shard_t *s = memobs__tls.shard;
    if (!s || s->shared || !s->bind_depth) return 0;
    if (id) *id = s->bind_id[s->bind_depth - 1];
    return 1;
}

/* memobs_request_end(id) on a thread bound to id: its records so far. */
static void memobs__att_end_bound(uint64_t id) {
    memobs__shard_t *s = memobs__tls.shard;
    if (s && !s->shared && s->bind_depth && s->bind_id[s->bind_depth - 1] == id) memobs__att_flush(s);
}

/* A binding given up with no ledger to bring up to date (no request was
   ever begun, or a fork() child's thread that did not come along): its
   bytes since bind_at are orphans. One atomic add. */
static void memobs__att_drop(memobs__shard_t *s) {
    uint64_t b = 0;
    unsigned p, k;
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++)
            b = memobs__sat(b, memobs__win(MEMOBS__LOAD(&s->att.x[0][p][k].v), s->bind_at.x[0][p][k].v));
    if (b) memobs__add_sat_atomic(&memobs__g.st[MEMOBS__ST_ATT_ORPHAN], b);
}

/* Thread exit, bound: the ledger gets the thread's last records. */
static void memobs__att_release(memobs__shard_t *s) {
    if (!s->shared && s->bind_depth) {
        if (MEMOBS__LOAD(&memobs__g.req_used.v)) memobs__att_flush(s);
        else memobs__att_drop(s);
    }
    s->bind_depth = s->bind_over = 0;
    memobs__tls.req = 0;
}

/* floor(a x b / c) for b <= c, c > 0: the 128-bit product, divided bit
   by bit (the quotient is at most a). */
static uint64_t memobs__muldiv(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    uint64_t lo = (p00 & 0xffffffffu) | (mid << 32), hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    uint64_t q = 0, r = 0;
    int i;
    for (i = 127; i >= 0; i--) {
        uint64_t top = r >> 63;
        r = (r << 1) | (i >= 64 ? (hi >> (i - 64)) & 1u : (lo >> i) & 1u);
        q <<= 1;
        if (top || r >= c) {
            r -= c;
            q |= 1u;
        }
    }
    return q;
}

/* memobs_request_xfer, _ns and _split: one transfer recorded outside the
   thread's binding, then its parts in the ledgers (ns whole in each:
   every one of them waited for it). */
static int memobs__att_xfer(const uint64_t *ids, const uint64_t *shares, size_t n, unsigned dir, uint64_t bytes,
                            unsigned phase, uint64_t ns) {
    uint64_t sum = 0, cum = 0, prev = 0, tick = 0;
    size_t i;
    int tl;
    if (!ids || !n) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
        memobs__warn_once(MEMOBS__W_NULL_ARG, "memobs_request_xfer_split with %s; ignored (a bad record)",
                          ids ? "n 0" : "ids NULL");
        return MEMOBS_ERR_INVALID;
    }
    if (memobs__bad_dir(dir, phase) || memobs__too_big(bytes, 0, "a request's transfer") ||
        memobs__too_big(ns, 1, "a request's transfer"))
        return MEMOBS_ERR_INVALID;
    for (i = 0; shares && i < n; i++) {
        if (sum + shares[i] < sum) {
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
            memobs__warn_once(MEMOBS__W_BAD_RECORD, "memobs_request_xfer_split: the shares add up past 2^64; "
                              "ignored (a bad record)");
            return MEMOBS_ERR_INVALID;
        }
        sum += shares[i];
    }
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return MEMOBS_OK;
    if (!memobs__xfer_do(dir, phase, bytes, 1, 1)) return MEMOBS_OK; /* counted apart as manual */
    tl = MEMOBS__LOAD(&memobs__tl_on.v) != 0;
    if (tl) tick = memobs__tl_req_xfer(dir, phase, bytes, n, ids[0]);
    if (ns) memobs__timed_add(dir, phase, bytes, ns, n == 1, ids[0]);
    for (i = 0; i < n; i++) {
        memobs__led_t d;
        uint64_t part;
        cum += sum ? shares[i] : 1u;
        part = memobs__muldiv(bytes, cum, sum ? sum : (uint64_t)n) - prev;
        prev += part;
        if (tl && n > 1) memobs__tl_req_part(tick, dir, phase, part, ids[i]);
        memset(&d, 0, sizeof d);
        d.x[0][phase][dir] = part;
        d.x[1][phase][dir] = 1u;
        d.eng[dir] = ns;
        memobs__att_to(ids[i], &d);
    }
    return MEMOBS_OK;
}

void memobs_request_xfer(uint64_t id, memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase) {
    (void)memobs__att_xfer(&id, NULL, 1, (unsigned)dir, bytes, (unsigned)phase, 0);
}

void memobs_request_xfer_ns(uint64_t id, memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase, uint64_t ns) {
    (void)memobs__att_xfer(&id, NULL, 1, (unsigned)dir, bytes, (unsigned)phase, ns);
}

int memobs_request_xfer_split(const uint64_t *ids, const uint64_t *shares, size_t n, memobs_dir_t dir, uint64_t bytes,
                              memobs_phase_t phase) {
    return memobs__att_xfer(ids, shares, n, (unsigned)dir, bytes, (unsigned)phase, 0);
}

/* A device-timed copy made while its thread was bound to request id,
   completed: its time in the ledger (memobs_cuda.h). */
void memobs__att_device(uint64_t id, unsigned dir, uint64_t ns) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    if (dir >= MEMOBS__NDIR || !MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return;
    if ((r = memobs__att_slot(id, &st)) == NULL) return; /* ended: the time is in the totals only */
    r->led.dev[dir] = memobs__sat(r->led.dev[dir], ns);
    memobs__mutex_unlock(&st->lock);
}

/* A tracked allocation of bytes made (sign 1) or freed (-1) by request
   id's: its current bytes and their peak. */
static void memobs__att_mem(uint64_t id, uint64_t bytes, int sign) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    if (!bytes || memobs__req_nested() || (r = memobs__att_slot(id, &st)) == NULL) return;
    if (sign > 0) {
        r->led.cur = memobs__sat(r->led.cur, bytes);
        if (r->led.cur > r->led.peak) r->led.peak = r->led.cur;
    } else {
        r->led.cur = r->led.cur > bytes ? r->led.cur - bytes : 0;
    }
    memobs__mutex_unlock(&st->lock);
}

static size_t memobs__utf8_len(const unsigned char *p);

/* The tracked allocations made by a bound thread, live: address to
   request and size (linear probing, backward-shift removal), so that their
   free lowers the request's held bytes. Bounded: an allocation that finds
   it full (3/4 of MEMOBS__ATT_MEM) is not held against its request (one
   warning). A free looks here only while it holds any: one load
   otherwise. */
#define MEMOBS__ATT_MEM 4096
static struct {
    memobs__u32_t n; /* read by every tracked free: a line of its own, not the lock's */
    char pad[60];
    pthread_mutex_t lock; /* PTHREAD_MUTEX_INITIALIZER: used before memobs_init may have run */
    uint64_t addr[MEMOBS__ATT_MEM], id[MEMOBS__ATT_MEM], bytes[MEMOBS__ATT_MEM];
} memobs__att_held __attribute__((aligned(64))) = {{0}, {0}, PTHREAD_MUTEX_INITIALIZER, {0}, {0}, {0}};

static uint32_t memobs__att_home(uint64_t addr) { return (uint32_t)(memobs__mix(addr) & (MEMOBS__ATT_MEM - 1)); }

/* A tracked allocation made by a bound thread (the tracker, after its
   insert). */
static void memobs__att_alloc(uint64_t addr, uint64_t bytes) {
    memobs__shard_t *s = memobs__tls.shard;
    uint64_t id;
    uint32_t j, k;
    if (!s || s->shared || !s->bind_depth || !addr) return;
    id = s->bind_id[s->bind_depth - 1];
    memobs__mutex_lock(&memobs__att_held.lock);
    for (j = memobs__att_home(addr), k = 0; k < MEMOBS__ATT_MEM; k++, j = (j + 1) & (MEMOBS__ATT_MEM - 1))
        if (!memobs__att_held.addr[j] || memobs__att_held.addr[j] == addr) break;
    if (k == MEMOBS__ATT_MEM || MEMOBS__LOAD(&memobs__att_held.n.v) >= MEMOBS__ATT_MEM * 3 / 4) {
        memobs__mutex_unlock(&memobs__att_held.lock);
        memobs__warn_once(MEMOBS__W_ATT_ORPHAN, "more than %d live tracked allocations made for requests: later "
                          "ones are not held against their request", MEMOBS__ATT_MEM * 3 / 4);
        return;
    }
    if (!memobs__att_held.addr[j]) MEMOBS__STORE(&memobs__att_held.n.v, MEMOBS__LOAD(&memobs__att_held.n.v) + 1u);
    memobs__att_held.addr[j] = addr;
    memobs__att_held.id[j] = id;
    memobs__att_held.bytes[j] = bytes;
    memobs__mutex_unlock(&memobs__att_held.lock);
    memobs__att_mem(id, bytes, 1);
}

/* A tracked allocation retired (freed, or its address reused): its
   request holds its bytes no more. */
static void memobs__att_freed(uint64_t addr) {
    uint64_t id = 0, bytes = 0;
    uint32_t j, k, home;
    if (!MEMOBS__LOAD(&memobs__att_held.n.v)) return;
    memobs__mutex_lock(&memobs__att_held.lock);
    for (j = memobs__att_home(addr), k = 0; k < MEMOBS__ATT_MEM && memobs__att_held.addr[j];
         k++, j = (j + 1) & (MEMOBS__ATT_MEM - 1))
        if (memobs__att_held.addr[j] == addr) break;
    if (k < MEMOBS__ATT_MEM && memobs__att_held.addr[j] == addr) {
        uint32_t hole = j;
        id = memobs__att_held.id[j];
        bytes = memobs__att_held.bytes[j];
        memobs__att_held.addr[hole] = 0;
        MEMOBS__STORE(&memobs__att_held.n.v, MEMOBS__LOAD(&memobs__att_held.n.v) - 1u);
        for (j = (hole + 1) & (MEMOBS__ATT_MEM - 1); memobs__att_held.addr[j]; j = (j + 1) & (MEMOBS__ATT_MEM - 1)) {
            home = memobs__att_home(memobs__att_held.addr[j]);
            /* move j into the hole unless its home lies in (hole, j] cyclically */
            if (((j - home) & (MEMOBS__ATT_MEM - 1)) >= ((j - hole) & (MEMOBS__ATT_MEM - 1))) {
                memobs__att_held.addr[hole] = memobs__att_held.addr[j];
                memobs__att_held.id[hole] = memobs__att_held.id[j];
                memobs__att_held.bytes[hole] = memobs__att_held.bytes[j];
                memobs__att_held.addr[j] = 0;
                hole = j;
            }
        }
    }
    memobs__mutex_unlock(&memobs__att_held.lock);
    if (bytes) memobs__att_mem(id, bytes, -1);
}

/* A tenant's name: 1 to 63 bytes of UTF-8, no control character. */
static int memobs__att_name_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t k;
    if (!s || !*s || strlen(s) > 63) return 0;
    for (; *p; p += k)
        if (*p < 0x20 || *p == 0x7f || (k = memobs__utf8_len(p)) == 0) return 0;
    return 1;
}

/* The tenant index of name (MEMOBS_MAX_TENANTS: "other"), taking a new
   one while there is room. */
static uint32_t memobs__att_tenant_of(const char *name) {
    uint32_t t, n;
    memobs__mutex_lock(&memobs__att.lock);
    n = MEMOBS__LOAD(&memobs__att.nten.v);
    for (t = 0; t < n && strcmp(memobs__att.ten[t], name) != 0; t++) {
    }
    if (t == n && n < MEMOBS_MAX_TENANTS) {
        memcpy(memobs__att.ten[n], name, strlen(name) + 1);
        __atomic_store_n(&memobs__att.nten.v, n + 1, __ATOMIC_RELEASE);
    }
    memobs__mutex_unlock(&memobs__att.lock);
    return t;
}

int memobs_request_tenant(uint64_t id, const char *name) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    memobs__led_t so_far;
    const char *why = NULL;
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return MEMOBS_OK;
    if (!memobs__att_name_ok(name)) {
        why = "is not 1 to 63 bytes of UTF-8 without control characters";
    } else if ((r = memobs__att_slot(id, &st)) == NULL) {
        why = "names a request not in flight";
    } else if (r->tenant) { /* the same name again is fine; another is refused (names are never rewritten) */
        int same = strcmp(r->tenant > MEMOBS_MAX_TENANTS ? "other" : memobs__att.ten[r->tenant - 1], name) == 0 ||
                   (r->tenant > MEMOBS_MAX_TENANTS && memobs__att_tenant_of(name) == MEMOBS_MAX_TENANTS);
        memobs__mutex_unlock(&st->lock);
        if (same) return MEMOBS_OK;
        why = "names a request that has another tenant already (kept)";
    } else { /* a name is taken only for a request in flight: stripe, then attribution's lock */
        so_far = r->led; /* what it moved so far counts for the tenant too */
        memset(&r->led, 0, sizeof r->led);
        r->tenant = memobs__att_tenant_of(name) + 1;
        memobs__att_add(r, &so_far);
        r->led.cur = so_far.cur;
        r->led.peak = so_far.peak;
        memobs__mutex_unlock(&st->lock);
        return MEMOBS_OK;
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ATT_TENANT].v, 1u);
    memobs__warn_once(MEMOBS__W_ATT_TENANT, "memobs_request_tenant(%llu, ...) %s; ignored (counted)",
                      (unsigned long long)id, why);
    return MEMOBS_ERR_INVALID;
}

/* A request's ledger as memobs_request_info_t: state and now (0 in
   flight) as it stands. */
static void memobs__att_info(const memobs__req_t *r, memobs_request_state_t state, uint64_t now,
                             memobs_request_info_t *o) {
    const memobs__led_t *l = &r->led;
    unsigned p, k;
    memset(o, 0, sizeof *o);
    o->id = r->id;
    if (r->tenant) /* a name is never written again once taken */
        snprintf(o->tenant, sizeof o->tenant, "%s",
                 r->tenant > MEMOBS_MAX_TENANTS ? "other" : memobs__att.ten[r->tenant - 1]);
    o->state = state;
    o->begin_ns = r->begin_ns;
    o->end_ns = state != MEMOBS_REQUEST_IN_FLIGHT ? now : 0;
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++) {
            memobs_xfer_t *x = memobs_dirs_at(&o->xfer[p], k);
            x->bytes = l->x[0][p][k];
            x->count = l->x[1][p][k];
        }
    for (k = 0; k < MEMOBS__NDIR; k++) {
        o->engine_ns[k] = l->eng[k];
        o->device_ns[k] = l->dev[k];
        o->wait_ns = memobs__sat(o->wait_ns, memobs__sat(l->eng[k], l->dev[k]));
    }
    o->region_ns = l->reg;
    o->tokens = r->tokens;
    if (r->tokens) o->ttft_ns = r->first_ns - r->begin_ns;
    if (r->tokens > 1) o->tpot_ns = (r->last_ns - r->first_ns) / (r->tokens - 1u);
    if (state == MEMOBS_REQUEST_COMPLETED) o->e2e_ns = now > r->begin_ns ? now - r->begin_ns : 0;
    o->current_bytes = l->cur;
    o->peak_bytes = l->peak;
}

/* memobs_request_state_t's names in the outputs. */
static const char *const memobs__att_state_name[5] = {"in_flight", "completed", "aborted", "abandoned", "dropped"};

/* The bytes a request moved, all phases and directions. */
static uint64_t memobs__att_moved(const memobs_request_info_t *i) {
    uint64_t b = 0;
    unsigned p, k;
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++) b = memobs__sat(b, memobs_dirs_get(&i->xfer[p], k)->bytes);
    return b;
}

/* att.lock held: i into top list `by` when it is among the largest. */
static void memobs__att_top_put(int by, const memobs_request_info_t *i) {
    memobs_request_info_t *t = memobs__att.top[by];
    uint32_t n = memobs__att.ntop[by], j;
    uint64_t v = by ? i->wait_ns : memobs__att_moved(i);
    if (!v) return;
    for (j = n; j > 0 && (by ? t[j - 1].wait_ns : memobs__att_moved(&t[j - 1])) < v; j--) {
    }
    if (j >= MEMOBS_REQUEST_TOP) return;
    if (n == MEMOBS_REQUEST_TOP) n--;
    memmove(&t[j + 1], &t[j], (n - j) * sizeof *t);
    t[j] = *i;
    memobs__att.ntop[by] = n + 1;
}

static void memobs__att_line(const memobs_request_info_t *i);

static void memobs__att_done(const memobs__req_t *r, memobs_request_state_t state, uint64_t now) {
    memobs_request_info_t info;
    memobs__att_info(r, state, now, &info);
    if (r->tenant) MEMOBS__ADD(&memobs__att.treq[r->tenant - 1].v, 1u);
    memobs__mutex_lock(&memobs__att.lock);
    memobs__att_top_put(MEMOBS_REQUEST_TOP_BYTES, &info);
    memobs__att_top_put(MEMOBS_REQUEST_TOP_WAIT, &info);
    if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_req_done(&info, r->tenant);
    memobs__sl_req_done(&info, r->tenant);
    memobs__mutex_unlock(&memobs__att.lock);
    if (memobs__att.lines[0]) { /* the line: under a lock of its own, which takes none of memobs' */
        memobs__mutex_lock(&memobs__att.lines_lock);
        memobs__att_line(&info);
        memobs__mutex_unlock(&memobs__att.lines_lock);
    }
}

int memobs_request_info(uint64_t id, memobs_request_info_t *out) {
    memobs__req_stripe_t *st;
    memobs__req_t *r;
    if (!out || !MEMOBS__LOAD(&memobs__on.v) || memobs__req_nested()) return MEMOBS_ERR_INVALID;
    memobs__att_end_bound(id); /* the calling thread's records so far */
    if ((r = memobs__att_slot(id, &st)) == NULL) return MEMOBS_ERR_INVALID;
    memobs__att_info(r, MEMOBS_REQUEST_IN_FLIGHT, 0, out);
    memobs__mutex_unlock(&st->lock);
    return MEMOBS_OK;
}

size_t memobs_request_top(int by, memobs_request_info_t *out, size_t n) {
    size_t k;
    if (!out || (by != MEMOBS_REQUEST_TOP_BYTES && by != MEMOBS_REQUEST_TOP_WAIT)) return 0;
    memobs_init();
    memobs__req_sweep(); /* the abandoned ones finished first */
    memobs__mutex_lock(&memobs__att.lock);
    k = memobs__att.ntop[by] < n ? memobs__att.ntop[by] : n;
    memcpy(out, memobs__att.top[by], k * sizeof *out);
    memobs__mutex_unlock(&memobs__att.lock);
    return k;
}

/* memobs_reset: the tenants' counters and the top lists start again. */
static void memobs__att_rebase(void) {
    unsigned i;
    memobs__mutex_lock(&memobs__att.lock);
    for (i = 0; i < (MEMOBS_MAX_TENANTS + 1) * 2 * MEMOBS__NDIR; i++)
        (&memobs__att.tx_base[0][0][0])[i] = MEMOBS__LOAD(&(&memobs__att.tx[0][0][0])[i].v);
    for (i = 0; i <= MEMOBS_MAX_TENANTS; i++) memobs__att.treq_base[i] = MEMOBS__LOAD(&memobs__att.treq[i].v);
    memobs__att.ntop[0] = memobs__att.ntop[1] = 0;
    memobs__mutex_unlock(&memobs__att.lock);
}

/* fork(): 0 before (the lock held), 1 the parent after, 2 the child
   (before 1): the threads that did not come along leave no binding. */
static void memobs__att_fork(int stage) {
    memobs__shard_t *s;
    if (stage == 0) {
        pthread_mutex_lock(&memobs__att.lock);
        pthread_mutex_lock(&memobs__att_held.lock);
        pthread_mutex_lock(&memobs__att.lines_lock);
    } else if (stage == 1) {
        pthread_mutex_unlock(&memobs__att.lines_lock);
        pthread_mutex_unlock(&memobs__att_held.lock);
        pthread_mutex_unlock(&memobs__att.lock);
    } else
        for (s = memobs__g.shards; s; s = s->next)
            if (!s->shared && s != memobs__tls.shard) {
                if (s->bind_depth) memobs__att_drop(s);
                s->bind_depth = s->bind_over = 0;
            }
}

/* Runs inside memobs__init_once. */
static void memobs__att_env(void) {
    const char *s = getenv("MEMOBS_REQUESTS_MAX_BYTES");
    memobs__att.lines_max = (uint64_t)256 << 20;
    if (s && !memobs__parse_bytes(s, &memobs__att.lines_max)) {
        memobs__log(MEMOBS_LOG_WARN, "MEMOBS_REQUESTS_MAX_BYTES='%s' is not a byte count (like 256M, 0: no limit); "
                    "using 256M", s);
        memobs__att.lines_max = (uint64_t)256 << 20;
    }
    (void)memobs__report_env("MEMOBS_REQUESTS", memobs__att.lines, sizeof memobs__att.lines);
}

/* ======================================================================== */
/* Private: user counters                                        >>counters */
/* ======================================================================== */

static int memobs__valid_name(const char *s) {
    size_t i;
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (i = 1; s[i]; i++)
        if (i >= 63 || !(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

/* Caller holds memobs__g.lock; called at most once per counter. */
static void memobs__counter_help(memobs__counter_def_t *d, const char *help) {
    snprintf(d->help_buf, sizeof d->help_buf, "%s", help);
    __atomic_store_n(&d->help, (const char *)d->help_buf, __ATOMIC_RELEASE);
}

memobs_counter_t memobs_counter_register(const char *name, const char *help) {
    uint32_t i, n;
    memobs_counter_t rc;
    if (!memobs__valid_name(name)) {
        memobs__log(MEMOBS_LOG_WARN, "counter name '%s' is not [a-zA-Z_][a-zA-Z0-9_]{0,62}; not registered",
                    name ? name : "(null)");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    n = MEMOBS__LOAD(&memobs__g.ncounters.v);
    for (i = 0; i < n; i++)
        if (strcmp(memobs__g.counters[i].name, name) == 0) break;
    if (i < n) {
        rc = (memobs_counter_t)i;
        /* A MEMOBS_COUNTER_ADD site may have registered it first, without help. */
        if (help && *help && !*memobs__g.counters[i].help) memobs__counter_help(&memobs__g.counters[i], help);
    } else if (n >= MEMOBS_MAX_COUNTERS) {
        rc = MEMOBS_ERR_FULL;
    } else {
        strcpy(memobs__g.counters[n].name, name);
        memobs__g.counters[n].help = "";
        if (help && *help) memobs__counter_help(&memobs__g.counters[n], help);
        /* Publish the name before the count that makes it visible. */
        __atomic_store_n(&memobs__g.ncounters.v, n + 1, __ATOMIC_RELEASE);
        rc = (memobs_counter_t)n;
    }
    pthread_mutex_unlock(&memobs__g.lock);
    if (rc == MEMOBS_ERR_FULL)
        memobs__log(MEMOBS_LOG_WARN, "counter '%s' not registered: all MEMOBS_MAX_COUNTERS=%d slots are taken", name,
                    MEMOBS_MAX_COUNTERS);
    return rc;
}

int32_t memobs__counter_site(const char *name) {
    memobs_counter_t c = memobs_counter_register(name, NULL);
    return c >= 0 ? c + 1 : -1;
}

/* ======================================================================== */
/* Private: regions and markers                                   >>regions */
/* ======================================================================== */

/* Interned names: an open-addressing index of id + 1 (0: empty), probed
   without a lock (a slot is stored with release after its name is
   written), filled under a spin lock. Id 0 is "(other)", made at start-up.
   The longest time of each name is a global maximum (moved by a
   compare-and-swap only when a region outlasts it: rare once warm); the
   counts and totals are per thread (memobs__shard_t.rstat). */
#define MEMOBS__REG_HASH                                                                                    \
    (MEMOBS_MAX_REGIONS <= 128 ? 256 : MEMOBS_MAX_REGIONS <= 512 ? 1024 : MEMOBS_MAX_REGIONS <= 2048 ? 4096 \
                                                                                                    : 131072)
#define MEMOBS__REG_NSTAT 4 /* ended, timed, total ns, markers */
#define MEMOBS__REG_NAME 64

enum { MEMOBS__REG_BEGIN = 0, MEMOBS__REG_END = 1, MEMOBS__REG_MARK = 2 };

typedef struct {
    char name[MEMOBS__REG_NAME];
    uint64_t hash;
    int collective;
} memobs__reg_name_t;

/* memobs_cuda.h's implementation sets this when NVTX is compiled in: at
   load time unless MEMOBS_NVTX is 0, or by memobs_cuda_set_nvtx(1). op is
   MEMOBS__REG_BEGIN, _END or _MARK, id the region (END: the id of the
   region ended; -1 when it was deeper than MEMOBS_REGION_DEPTH). It is
   called with memobs switched off at run time too (the stack stays in
   step), never for an unmatched end. */
typedef void (*memobs__reg_hook_t)(int op, int32_t id, const char *name);
static memobs__reg_hook_t memobs__reg_hook;

static struct {
    memobs__u32_t lock;       /* inserts */
    memobs__u32_t n;          /* names given out (release after the name) */
    memobs__u32_t timing_off; /* memobs_region_set_timing(0) */
    memobs__u32_t index[MEMOBS__REG_HASH];
    memobs__reg_name_t names[MEMOBS_MAX_REGIONS];
    memobs__u64_t max[MEMOBS_MAX_REGIONS];
} memobs__reg;

/* Stormlog's collective keywords (its analyze_collective_attribution),
   matched case-insensitively anywhere in the name. */
static int memobs__reg_is_collective(const char *name) {
    static const char *const kw[] = {"nccl", "collective", "communication", "all_reduce", "allreduce",
                                     "all_gather", "allgather", "reduce_scatter", "reducescatter", "broadcast",
                                     "barrier"};
    char low[MEMOBS__REG_NAME];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = 0;
    for (i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strstr(low, kw[i])) return 1;
    return 0;
}

/* The name as kept: at most 63 bytes, cut at a character boundary, bytes
   that are not UTF-8 as U+FFFD. */
static void memobs__reg_norm(const char *in, char *out) {
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    while (*p) {
        size_t k = memobs__utf8_len(p);
        const char *src = k ? (const char *)p : "\xEF\xBF\xBD";
        size_t n = k ? k : 3;
        if (o + n > MEMOBS__REG_NAME - 1) break;
        memcpy(out + o, src, n);
        o += n;
        p += k ? k : 1;
    }
    out[o] = 0;
}

static uint64_t memobs__reg_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

/* Caller holds memobs__reg.lock. Adds a normalized name; its id, or 0
   when the table is full. */
static memobs_region_t memobs__reg_insert(const char *nm, uint64_t h) {
    uint32_t n = MEMOBS__LOAD(&memobs__reg.n.v), i;
    memobs__reg_name_t *e;
    if (n >= MEMOBS_MAX_REGIONS) return 0;
    e = &memobs__reg.names[n];
    strcpy(e->name, nm);
    e->hash = h;
    e->collective = memobs__reg_is_collective(nm);
    for (i = (uint32_t)h & (MEMOBS__REG_HASH - 1); MEMOBS__LOAD(&memobs__reg.index[i].v);
         i = (i + 1) & (MEMOBS__REG_HASH - 1)) {
    }
    __atomic_store_n(&memobs__reg.index[i].v, n + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&memobs__reg.n.v, n + 1, __ATOMIC_RELEASE);
    return (memobs_region_t)n;
}

/* Runs inside memobs__init_once; env: read the environment too. */
static void memobs__reg_init(int env) {
    const char *s = env ? getenv("MEMOBS_REGION_TIMING") : NULL;
    memobs__spin_lock(&memobs__reg.lock);
    if (MEMOBS__LOAD(&memobs__reg.n.v) == 0) (void)memobs__reg_insert("(other)", memobs__reg_hash("(other)"));
    memobs__spin_unlock(&memobs__reg.lock);
    if (s) {
        int b = memobs__parse_bool(s);
        if (b < 0) memobs__log(MEMOBS_LOG_WARN, "MEMOBS_REGION_TIMING='%s' is not 0/1/on/off/true/false/yes/no; "
                               "timing regions", s);
        else MEMOBS__STORE(&memobs__reg.timing_off.v, b ? 0u : 1u);
    }
}

static memobs_region_t memobs__reg_find(const char *nm, uint64_t h) {
    uint32_t i, v;
    for (i = (uint32_t)h & (MEMOBS__REG_HASH - 1); (v = __atomic_load_n(&memobs__reg.index[i].v, __ATOMIC_ACQUIRE)) != 0;
         i = (i + 1) & (MEMOBS__REG_HASH - 1)) {
        const memobs__reg_name_t *e = &memobs__reg.names[v - 1];
        if (e->hash == h && strcmp(e->name, nm) == 0) return (memobs_region_t)(v - 1);
    }
    return -1;
}

memobs_region_t memobs_region_intern(const char *name) {
    char nm[MEMOBS__REG_NAME];
    uint64_t h;
    memobs_region_t id;
    if (!name || !*name) return MEMOBS_ERR_INVALID;
    memobs_init();
    memobs__reg_norm(name, nm);
    h = memobs__reg_hash(nm);
    if ((id = memobs__reg_find(nm, h)) >= 0) return id;
    memobs__spin_lock(&memobs__reg.lock);
    if ((id = memobs__reg_find(nm, h)) < 0) id = memobs__reg_insert(nm, h);
    memobs__spin_unlock(&memobs__reg.lock);
    if (id == 0)
        memobs__warn_once(MEMOBS__W_REGION_DROPPED, "region name '%s' not kept: all MEMOBS_MAX_REGIONS=%d names are "
                          "taken; its regions and markers are filed under \"(other)\"", nm, MEMOBS_MAX_REGIONS);
    return id;
}

const char *memobs_region_label(memobs_region_t id) {
    if (id < 0 || (uint32_t)id >= __atomic_load_n(&memobs__reg.n.v, __ATOMIC_ACQUIRE)) return NULL;
    return memobs__reg.names[id].name;
}

/* An id as filed: ids that were never given out, negative ones and 0 are
   "(other)", counted. */
static memobs_region_t memobs__reg_check(memobs_region_t id) {
    /* acquire: the name (read by the callers) was written before n */
    if (MEMOBS__LIKELY(id > 0 && (uint32_t)id < __atomic_load_n(&memobs__reg.n.v, __ATOMIC_ACQUIRE))) return id;
    if (MEMOBS__LOAD(&memobs__on.v)) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REGION_DROPPED].v, 1u);
        memobs__warn_once(MEMOBS__W_REGION_DROPPED, "a region or marker with no name kept (NULL, \"\", an unknown "
                          "id %d, or the name table full) is filed under \"(other)\"", (int)id);
    }
    return 0;
}

/* The calling thread's shard for regions; NULL when memobs is off and the
   thread has none yet, or no shard could be had (then regions are not
   kept: a shared shard has no one owner for a stack). */
static memobs__shard_t *memobs__reg_shard(void) {
    memobs__shard_t *s = memobs__tls.shard;
    if (MEMOBS__UNLIKELY(!s)) {
        if (!MEMOBS__LOAD(&memobs__on.v)) return NULL;
        s = memobs__shard_acquire();
    }
    return s && !s->shared ? s : NULL;
}

/* The owner's stats block, made at its first use. */
static memobs__u64_t *memobs__reg_stats(memobs__shard_t *s) {
    memobs__u64_t *r = __atomic_load_n(&s->rstat, __ATOMIC_RELAXED);
    uint32_t busy;
    size_t len = 2u * MEMOBS_MAX_REGIONS * MEMOBS__REG_NSTAT * sizeof(memobs__u64_t);
    if (MEMOBS__LIKELY(r != NULL)) return r;
    busy = memobs__tls.busy;
    memobs__tls.busy = 1; /* MEMOBS_MALLOC may be an allocator the tracker watches */
    r = (memobs__u64_t *)MEMOBS_MALLOC(len);
    memobs__tls.busy = busy;
    if (!r) return NULL;
    memset(r, 0, len);
    __atomic_store_n(&s->rstat, r, __ATOMIC_RELEASE);
    return r;
}

static void memobs__reg_max(memobs_region_t id, uint64_t dur) {
    uint64_t cur = MEMOBS__LOAD(&memobs__reg.max[id].v);
    while (dur > cur && !MEMOBS__CAS(&memobs__reg.max[id].v, &cur, dur)) {
    }
}

void memobs_region_begin_id(memobs_region_t id) {
    memobs__shard_t *s = memobs__reg_shard();
    memobs__reg_hook_t hook;
    uint32_t d;
    int on;
    if (!s) return;
    on = MEMOBS__LOAD(&memobs__on.v) != 0;
    id = memobs__reg_check(id);
    d = MEMOBS__LOAD(&s->rdepth.v);
    if (MEMOBS__LIKELY(d < MEMOBS_REGION_DEPTH)) {
        MEMOBS__STORE(&s->rid[d].v, (uint32_t)id);
        s->rt0[d] = on && (!MEMOBS__LOAD(&memobs__reg.timing_off.v) || MEMOBS__LOAD(&memobs__tl_on.v) ||
                           memobs__reg.names[id].collective) ? memobs_now_ns() : 0;
    } else if (on) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REGION_DEEP].v, 1u);
        memobs__warn_once(MEMOBS__W_REGION_DEEP, "regions nested deeper than MEMOBS_REGION_DEPTH=%d are kept in "
                          "step but not timed", MEMOBS_REGION_DEPTH);
    }
    __atomic_store_n(&s->rdepth.v, d + 1, __ATOMIC_RELEASE);
    hook = __atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED);
    if (hook) hook(MEMOBS__REG_BEGIN, id, memobs__reg.names[id].name);
}

void memobs_region_begin(const char *name) {
    memobs_region_begin_id(memobs_region_intern(name));
}

void memobs_region_end(void) {
    memobs__shard_t *s = memobs__tls.shard;
    memobs__reg_hook_t hook;
    memobs__u64_t *r;
    uint32_t d;
    int32_t id = -1;
    uint64_t t0 = 0;
    if (!s || s->shared || (d = MEMOBS__LOAD(&s->rdepth.v)) == 0) {
        if (MEMOBS__LOAD(&memobs__on.v)) {
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_REGION_UNMATCHED].v, 1u);
            memobs__warn_once(MEMOBS__W_REGION_UNMATCHED, "memobs_region_end() with no region open on this thread; "
                              "counted and ignored");
        }
        return;
    }
    d--;
    if (d < MEMOBS_REGION_DEPTH) {
        id = (int32_t)MEMOBS__LOAD(&s->rid[d].v);
        t0 = s->rt0[d];
    }
    __atomic_store_n(&s->rdepth.v, d, __ATOMIC_RELEASE);
    hook = __atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED);
    if (hook) hook(MEMOBS__REG_END, id, id >= 0 ? memobs__reg.names[id].name : NULL);
    if (id < 0 || !MEMOBS__LOAD(&memobs__on.v) || (r = memobs__reg_stats(s)) == NULL) return;
    r += (size_t)id * MEMOBS__REG_NSTAT;
    MEMOBS__STORE(&r[0].v, MEMOBS__LOAD(&r[0].v) + 1u);
    if (t0) {
        uint64_t now = memobs_now_ns(), dur = now > t0 ? now - t0 : 0;
        MEMOBS__STORE(&r[1].v, MEMOBS__LOAD(&r[1].v) + 1u);
        MEMOBS__STORE(&r[2].v, MEMOBS__LOAD(&r[2].v) + dur);
        memobs__reg_max(id, dur);
        if (memobs__tls.req && MEMOBS__OWN_OK()) { /* bound: the request's time in regions */
            MEMOBS__OWN_BEGIN();
            memobs__own_add_sat(&s->att.reg, dur);
            MEMOBS__OWN_END();
        }
        if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_region(t0, dur, id, d);
        if (memobs__reg.names[id].collective) memobs__sl_mark(t0, dur, id, 0);
    }
}

void memobs_mark_id(memobs_region_t id) {
    memobs__shard_t *s;
    memobs__reg_hook_t hook = __atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED);
    memobs__u64_t *r;
    if (!MEMOBS__LOAD(&memobs__on.v)) {
        /* off: nothing kept, but a hook (NVTX) sees markers as it sees regions */
        if (hook) {
            if (id <= 0 || (uint32_t)id >= __atomic_load_n(&memobs__reg.n.v, __ATOMIC_ACQUIRE)) id = 0;
            hook(MEMOBS__REG_MARK, id, memobs__reg.names[id].name);
        }
        return;
    }
    if ((s = memobs__reg_shard()) == NULL) return;
    id = memobs__reg_check(id);
    if ((r = memobs__reg_stats(s)) != NULL) {
        r += (size_t)id * MEMOBS__REG_NSTAT;
        MEMOBS__STORE(&r[3].v, MEMOBS__LOAD(&r[3].v) + 1u);
    }
    if (MEMOBS__LOAD(&memobs__tl_on.v) || memobs__reg.names[id].collective) {
        uint64_t now = memobs_now_ns();
        if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_mark(now, id);
        if (memobs__reg.names[id].collective) memobs__sl_mark(now, 0, id, 1);
    }
    if (hook) hook(MEMOBS__REG_MARK, id, memobs__reg.names[id].name);
}

void memobs_mark(const char *name) {
    if (!MEMOBS__LOAD(&memobs__on.v) && !__atomic_load_n(&memobs__reg_hook, __ATOMIC_RELAXED)) return;
    memobs_mark_id(memobs_region_intern(name));
}

int memobs_region_depth(void) {
    memobs__shard_t *s = memobs__tls.shard;
    return s && !s->shared ? (int)MEMOBS__LOAD(&s->rdepth.v) : 0;
}

int memobs_region_get_timing(void) {
    memobs_init();
    return MEMOBS__LOAD(&memobs__reg.timing_off.v) == 0;
}

int memobs_region_set_timing(int on) {
    memobs_init();
    return MEMOBS__XCHG(&memobs__reg.timing_off.v, on ? 0u : 1u) == 0;
}

/* Names interned: memobs_get_regions' count. */
static uint32_t memobs__regions_n(void) {
    uint32_t n = __atomic_load_n(&memobs__reg.n.v, __ATOMIC_ACQUIRE);
    return n < MEMOBS_MAX_REGIONS ? n : MEMOBS_MAX_REGIONS;
}

/* Name i's figures in the window, summed over the shards with atomic
   loads: memobs_get_regions holds memobs__g.lock (a reset moves the
   baselines under it); the crash writer holds nothing. */
static void memobs__region_read(uint32_t i, memobs_region_stats_t *r) {
    memobs__shard_t *s;
    unsigned n;
    memset(r, 0, sizeof *r);
    r->id = (memobs_region_t)i;
    r->name = memobs__reg.names[i].name;
    r->collective = memobs__reg.names[i].collective;
    r->max_ns = MEMOBS__LOAD(&memobs__reg.max[i].v);
    for (s = memobs__shard_first(), n = 0; s && n < MEMOBS__MAX_SHARDS; s = memobs__shard_next(s), n++) {
        const memobs__u64_t *c, *cb, *st = __atomic_load_n(&s->rstat, __ATOMIC_ACQUIRE);
        if (!st) continue;
        c = st + (size_t)i * MEMOBS__REG_NSTAT;
        cb = st + (size_t)MEMOBS_MAX_REGIONS * MEMOBS__REG_NSTAT + (size_t)i * MEMOBS__REG_NSTAT;
        r->count += MEMOBS__LOAD(&c[0].v) - MEMOBS__LOAD(&cb[0].v);
        r->timed += MEMOBS__LOAD(&c[1].v) - MEMOBS__LOAD(&cb[1].v);
        r->total_ns += MEMOBS__LOAD(&c[2].v) - MEMOBS__LOAD(&cb[2].v);
        r->marks += MEMOBS__LOAD(&c[3].v) - MEMOBS__LOAD(&cb[3].v);
    }
}

size_t memobs_get_regions(memobs_region_stats_t *out, size_t max) {
    uint32_t n, i;
    memobs_init();
    n = memobs__regions_n();
    if (!out || max == 0) return n;
    if (max > n) max = n;
    pthread_mutex_lock(&memobs__g.lock);
    for (i = 0; i < max; i++) memobs__region_read(i, &out[i]);
    pthread_mutex_unlock(&memobs__g.lock);
    return n;
}

/* Caller holds memobs__g.lock: the window's counts start again. */
static void memobs__reg_rebase(void) {
    memobs__shard_t *s;
    uint32_t i;
    for (s = memobs__g.shards; s; s = s->next) {
        memobs__u64_t *r = __atomic_load_n(&s->rstat, __ATOMIC_ACQUIRE);
        size_t k, n = (size_t)MEMOBS_MAX_REGIONS * MEMOBS__REG_NSTAT;
        if (!r) continue;
        for (k = 0; k < n; k++) r[n + k].v = MEMOBS__LOAD(&r[k].v);
    }
    for (i = 0; i < MEMOBS_MAX_REGIONS; i++) MEMOBS__STORE(&memobs__reg.max[i].v, 0u);
}

/* The regions open on the process's threads now, for a sample: each
   thread's stack outermost first, -1 between threads; returns the count
   written (at most max). */
static uint32_t memobs__reg_open(memobs_region_t *out, uint32_t max) {
    memobs__shard_t *s;
    uint32_t n = 0;
    pthread_mutex_lock(&memobs__g.lock);
    for (s = memobs__g.shards; s && n < max; s = s->next) {
        uint32_t d, i;
        if (!s->in_use || s->shared) continue;
        d = __atomic_load_n(&s->rdepth.v, __ATOMIC_ACQUIRE);
        if (d > MEMOBS_REGION_DEPTH) d = MEMOBS_REGION_DEPTH;
        if (!d) continue;
        if (n && n + 1 < max) out[n++] = -1;
        else if (n) break;
        for (i = 0; i < d && n < max; i++) out[n++] = (memobs_region_t)MEMOBS__LOAD(&s->rid[i].v);
    }
    pthread_mutex_unlock(&memobs__g.lock);
    return n;
}

/* ======================================================================== */
/* Private: collectives and peers                             >>collectives */
/* ======================================================================== */

/* Fixed tables, published entry by entry: a registration (under a spin
   lock) writes the entry, then the count with release; a record checks its
   handle against the count (acquire) and adds to its row with relaxed
   atomic adds (ops, bytes, and for a timed one timed ops, ns and S: five
   at most; the sums saturate). bus_bytes is not stored: it is S x the bus
   factor, and the factor depends only on the kind and the communicator's
   nranks (fixed at registration), so it is computed exactly, in integers,
   when a row is read. A reset moves per-row baselines under memobs__g.lock,
   as the regions' do. */
#define MEMOBS__COLL_NF 5 /* ops, bytes, timed ops, ns, algo bytes (S) */
#define MEMOBS__PEER_NF 3 /* bytes, ops, ns */
#define MEMOBS__COLL_LABEL 72 /* "other:" + a 63-byte name */
#define MEMOBS__PEER_LABEL 80 /* a 63-byte communicator name + " r" + a rank */
#define MEMOBS__COLL_STRS 32  /* algorithm and protocol names kept for the timeline */
#define MEMOBS__COLL_SL_GAP_NS 10000000u /* Stormlog: one event per communicator and kind per 10 ms */

enum { MEMOBS__COLL_DROP_COMMS, MEMOBS__COLL_DROP_KINDS, MEMOBS__COLL_DROP_PEERS, MEMOBS__COLL_DROPS };

typedef struct {
    char name[MEMOBS__REG_NAME];
    uint64_t id;
    int32_t rank, nranks, nnodes;
} memobs__comm_def_t;

typedef struct {
    char label[MEMOBS__PEER_LABEL];
    int32_t comm, rank; /* -1, -1: a named peer */
} memobs__peer_def_t;

/* The tables of counts (about 350 KB) are allocated at the first
   registration (memobs__coll_setup), so a program that never records a
   collective pays no memory for them; before, every count is 0 and no
   reader looks at them. */
typedef struct {
    memobs__peer_def_t peer[MEMOBS_MAX_PEERS];
    memobs__u64_t row[MEMOBS_MAX_COMMS][MEMOBS_MAX_COLL_KINDS][MEMOBS__NPHASE][MEMOBS__COLL_NF];
    uint64_t row_base[MEMOBS_MAX_COMMS][MEMOBS_MAX_COLL_KINDS][MEMOBS__NPHASE][MEMOBS__COLL_NF];
    memobs__u64_t pxf[MEMOBS_MAX_PEERS][MEMOBS_PEER_DIRS][MEMOBS__NPHASE][MEMOBS__PEER_NF];
    uint64_t pxf_base[MEMOBS_MAX_PEERS][MEMOBS_PEER_DIRS][MEMOBS__NPHASE][MEMOBS__PEER_NF];
    memobs__u64_t sl_last[MEMOBS_MAX_COMMS][MEMOBS_MAX_COLL_KINDS]; /* Stormlog's rate cap: last event */
} memobs__coll_tab_t;

static struct {
    memobs__u32_t lock;                       /* registrations, the source strings */
    memobs__u32_t ncomms, nkinds, npeers, nstrs; /* entries given out (release after the entry) */
    memobs__coll_tab_t *tab;                  /* set once, before the first count is released */
    memobs__peer_def_t *peer;                 /* tab->peer */
    memobs__comm_def_t comm[MEMOBS_MAX_COMMS];
    char kind[MEMOBS_MAX_COLL_KINDS][MEMOBS__COLL_LABEL];
    char strs[MEMOBS__COLL_STRS][MEMOBS__REG_NAME];
    memobs__u64_t notes[MEMOBS_COLL_NOTES];
    uint64_t notes_base[MEMOBS_COLL_NOTES];
    memobs__u64_t drops[MEMOBS__COLL_DROPS]; /* full tables: kept across resets, as the entries are */
    memobs__u32_t warned;                    /* warn-once bits, by MEMOBS__COLL_DROP_* */
    memobs__u32_t source_set;
    char source[32], instance[16], level[16];
    memobs__u32_t api_version;
} memobs__coll;

static const char *const memobs__coll_fixed[MEMOBS_COLL_FIXED_KINDS][2] = {
    {"all_reduce", "AllReduce"}, {"all_gather", "AllGather"}, {"reduce_scatter", "ReduceScatter"},
    {"broadcast", "Broadcast"},  {"reduce", "Reduce"},        {"all_to_all", "AlltoAll"},
    {"gather", "Gather"},        {"scatter", "Scatter"},      {"send", "Send"},
    {"recv", "Recv"},            {"send_recv", "SendRecv"},   {"other", "other"}};

static void memobs__coll_fork(int lock) {
    if (lock) memobs__spin_lock(&memobs__coll.lock);
    else memobs__spin_unlock(&memobs__coll.lock);
}

static void memobs__str_read(char *to, const char *from, size_t len);
/* A string other threads may read while it changes: byte by byte, atomic
   (memobs__str_read reads it). */
static void memobs__str_write(char *to, const char *from, size_t len) {
    size_t i;
    for (i = 0; i + 1 < len && from[i]; i++) __atomic_store_n(&to[i], from[i], __ATOMIC_RELAXED);
    __atomic_store_n(&to[i], (char)0, __ATOMIC_RELAXED);
}

/* len bytes of zeroed memory that lives as long as the process, from
   mmap() (untouched pages cost nothing), or MEMOBS_MALLOC where there is
   no anonymous mmap(); NULL without memory. For a facility's tables,
   made at its first use. */
static void *memobs__pages(size_t len) {
#ifdef MEMOBS__MAP_ANON
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MEMOBS__MAP_ANON, -1, 0);
    return m == MAP_FAILED ? NULL : m;
#else
    void *m = MEMOBS_MALLOC(len);
    if (m) memset(m, 0, len);
    return m;
#endif
}

/* Caller holds memobs__coll.lock: the tables, the fixed kinds and
   "(other)", once; 0, or MEMOBS_ERR_NOMEM (said once). */
static int memobs__coll_setup(void) {
    unsigned k;
    memobs__coll_tab_t *t;
    if (MEMOBS__LOAD(&memobs__coll.nkinds.v)) return 0;
    t = (memobs__coll_tab_t *)memobs__pages(sizeof *t);
    if (!t) {
        if (!(MEMOBS__FETCH_OR(&memobs__coll.warned.v, 1u << MEMOBS__COLL_DROPS) & (1u << MEMOBS__COLL_DROPS)))
            memobs__log(MEMOBS_LOG_WARN, "no memory for the collectives' tables (%lu bytes): collectives and peers "
                        "are not recorded", (unsigned long)sizeof *t);
        return MEMOBS_ERR_NOMEM;
    }
    memobs__coll.peer = t->peer;
    __atomic_store_n(&memobs__coll.tab, t, __ATOMIC_RELEASE);
    for (k = 0; k < MEMOBS_COLL_FIXED_KINDS; k++) strcpy(memobs__coll.kind[k], memobs__coll_fixed[k][0]);
    strcpy(memobs__coll.comm[0].name, "(other)");
    memobs__coll.comm[0].rank = -1;
    __atomic_store_n(&memobs__coll.ncomms.v, 1u, __ATOMIC_RELEASE);
    __atomic_store_n(&memobs__coll.nkinds.v, (uint32_t)MEMOBS_COLL_FIXED_KINDS, __ATOMIC_RELEASE);
    return 0;
}

/* Takes the lock with the tables set up; without memory, MEMOBS_ERR_NOMEM
   and the lock is not held. */
static int memobs__coll_lock(void) {
    memobs_init();
    memobs__spin_lock(&memobs__coll.lock);
    if (memobs__coll_setup() == 0) return 0;
    memobs__spin_unlock(&memobs__coll.lock);
    return MEMOBS_ERR_NOMEM;
}

/* A full table: counted, and said once. */
static void memobs__coll_drop(unsigned which, const char *what, const char *name, int limit, const char *goes) {
    MEMOBS__ADD(&memobs__coll.drops[which].v, 1u);
    if (MEMOBS__FETCH_OR(&memobs__coll.warned.v, 1u << which) & (1u << which)) return;
    memobs__log(MEMOBS_LOG_WARN, "%s '%s' not kept: all %d are taken; %s", what, name, limit, goes);
}

static uint32_t memobs__coll_n(memobs__u32_t *n, uint32_t max) {
    uint32_t v = __atomic_load_n(&n->v, __ATOMIC_ACQUIRE);
    return v < max ? v : max;
}

memobs_comm_t memobs_coll_register_comm(const char *name, uint64_t id, int rank, int nranks, int nnodes) {
    char nm[MEMOBS__REG_NAME], raw[40];
    uint32_t n, i;
    memobs_comm_t rc;
    if (rank < 0 || nranks < 0 || (nranks > 0 && rank >= nranks)) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_coll_register_comm: rank %d of %d ranks is not a rank; not registered",
                    rank, nranks);
        return MEMOBS_ERR_INVALID;
    }
    if (!name || !*name) {
        snprintf(raw, sizeof raw, "comm %llx", (unsigned long long)id);
        name = raw;
    }
    memobs__reg_norm(name, nm);
    if (memobs__coll_lock() < 0) return MEMOBS_ERR_NOMEM;
    n = MEMOBS__LOAD(&memobs__coll.ncomms.v);
    for (i = 1; i < n && !(memobs__coll.comm[i].id == id && memobs__coll.comm[i].rank == rank); i++) {
    }
    if (i < n) {
        rc = (memobs_comm_t)i;
    } else if (n >= MEMOBS_MAX_COMMS) {
        rc = 0;
    } else {
        memobs__comm_def_t *c = &memobs__coll.comm[n];
        /* A name another communicator of this rank has (or "(other)"):
           its id added, so that each labels one series everywhere. */
        for (i = 0; i < n && !(strcmp(memobs__coll.comm[i].name, nm) == 0 && memobs__coll.comm[i].rank == rank); i++) {
        }
        if (i < n || strcmp(nm, "(other)") == 0) {
            char tail[24];
            size_t k, at = strlen(nm);
            snprintf(tail, sizeof tail, " %llx", (unsigned long long)id);
            k = strlen(tail);
            if (at + k > MEMOBS__REG_NAME - 1) { /* cut at a character boundary */
                at = MEMOBS__REG_NAME - 1 - k;
                while (at && ((unsigned char)nm[at] & 0xc0u) == 0x80u) at--;
            }
            memcpy(nm + at, tail, k + 1);
        }
        strcpy(c->name, nm);
        c->id = id;
        c->rank = rank;
        c->nranks = nranks;
        c->nnodes = nnodes > 0 ? nnodes : 0;
        __atomic_store_n(&memobs__coll.ncomms.v, n + 1, __ATOMIC_RELEASE);
        rc = (memobs_comm_t)n;
    }
    memobs__spin_unlock(&memobs__coll.lock);
    if (rc == 0)
        memobs__coll_drop(MEMOBS__COLL_DROP_COMMS, "communicator", nm, MEMOBS_MAX_COMMS - 1,
                          "its collectives are filed under the communicator \"(other)\" (comms_dropped)");
    return rc;
}

/* A fixed kind of the name, memobs' own or NCCL's (any case), else -1. */
static int memobs__coll_fixed_kind(const char *name) {
    int k;
    for (k = 0; k < MEMOBS_COLL_FIXED_KINDS; k++)
        if (memobs__streq_nocase(name, memobs__coll_fixed[k][0]) ||
            memobs__streq_nocase(name, memobs__coll_fixed[k][1]))
            return k;
    return -1;
}

memobs_coll_kind_t memobs_coll_kind_intern(const char *name) {
    char nm[MEMOBS__REG_NAME], label[MEMOBS__COLL_LABEL];
    uint32_t n, i;
    int k;
    memobs_coll_kind_t rc;
    if (!name || !*name) return MEMOBS_ERR_INVALID;
    if ((k = memobs__coll_fixed_kind(name)) >= 0) return (memobs_coll_kind_t)k;
    memobs__reg_norm(name, nm);
    snprintf(label, sizeof label, "other:%s", nm);
    if (memobs__coll_lock() < 0) return MEMOBS_ERR_NOMEM;
    n = MEMOBS__LOAD(&memobs__coll.nkinds.v);
    for (i = MEMOBS_COLL_FIXED_KINDS; i < n && strcmp(memobs__coll.kind[i], label) != 0; i++) {
    }
    if (i < n) {
        rc = (memobs_coll_kind_t)i;
    } else if (n >= MEMOBS_MAX_COLL_KINDS) {
        rc = MEMOBS_COLL_OTHER;
    } else {
        strcpy(memobs__coll.kind[n], label);
        __atomic_store_n(&memobs__coll.nkinds.v, n + 1, __ATOMIC_RELEASE);
        rc = (memobs_coll_kind_t)n;
    }
    memobs__spin_unlock(&memobs__coll.lock);
    if (rc == MEMOBS_COLL_OTHER)
        memobs__coll_drop(MEMOBS__COLL_DROP_KINDS, "collective kind", nm, MEMOBS_MAX_COLL_KINDS,
                          "it is counted as \"other\" (kinds_dropped)");
    return rc;
}

const char *memobs_coll_kind_label(memobs_coll_kind_t kind) {
    if (kind < 0) return NULL;
    if (kind < MEMOBS_COLL_FIXED_KINDS) return memobs__coll_fixed[kind][0];
    if ((uint32_t)kind >= memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS)) return NULL;
    return memobs__coll.kind[kind];
}

/* Caller holds memobs__coll.lock: adds a peer, or finds it; its id, or
   MEMOBS_ERR_FULL. */
static memobs_peer_t memobs__peer_add(const char *label, int32_t comm, int32_t rank) {
    uint32_t n = MEMOBS__LOAD(&memobs__coll.npeers.v), i;
    for (i = 0; i < n; i++) {
        const memobs__peer_def_t *p = &memobs__coll.peer[i];
        if (p->comm == comm && p->rank == rank && (comm >= 0 || strcmp(p->label, label) == 0))
            return (memobs_peer_t)i;
    }
    if (n >= MEMOBS_MAX_PEERS) return MEMOBS_ERR_FULL;
    snprintf(memobs__coll.peer[n].label, MEMOBS__PEER_LABEL, "%s", label);
    /* A label another peer has (two ranks of one communicator in this
       process, a named peer called like a rank): its id added, so that
       each labels one series everywhere. */
    for (i = 0; i < n && strcmp(memobs__coll.peer[i].label, label) != 0; i++) {
    }
    if (i < n) snprintf(memobs__coll.peer[n].label, MEMOBS__PEER_LABEL, "%.63s #%u", label, (unsigned)n);
    memobs__coll.peer[n].comm = comm;
    memobs__coll.peer[n].rank = rank;
    __atomic_store_n(&memobs__coll.npeers.v, n + 1, __ATOMIC_RELEASE);
    return (memobs_peer_t)n;
}

memobs_peer_t memobs_peer_intern(const char *name) {
    char nm[MEMOBS__REG_NAME];
    memobs_peer_t rc;
    if (!name || !*name) return MEMOBS_ERR_INVALID;
    memobs__reg_norm(name, nm);
    if (memobs__coll_lock() < 0) return MEMOBS_ERR_NOMEM;
    rc = memobs__peer_add(nm, -1, -1);
    memobs__spin_unlock(&memobs__coll.lock);
    if (rc == MEMOBS_ERR_FULL)
        memobs__coll_drop(MEMOBS__COLL_DROP_PEERS, "peer", nm, MEMOBS_MAX_PEERS, "its transfers are not kept "
                          "(peers_dropped)");
    return rc;
}

memobs_peer_t memobs_peer_rank(memobs_comm_t comm, int rank) {
    char label[MEMOBS__PEER_LABEL];
    memobs_peer_t rc;
    const memobs__comm_def_t *c;
    if (memobs__coll_lock() < 0) return MEMOBS_ERR_NOMEM;
    if (comm < 0 || (uint32_t)comm >= MEMOBS__LOAD(&memobs__coll.ncomms.v) || rank < 0 ||
        (memobs__coll.comm[comm].nranks > 0 && rank >= memobs__coll.comm[comm].nranks)) {
        memobs__spin_unlock(&memobs__coll.lock);
        memobs__log(MEMOBS_LOG_WARN, "memobs_peer_rank(%d, %d): not a communicator and one of its ranks", (int)comm,
                    rank);
        return MEMOBS_ERR_INVALID;
    }
    c = &memobs__coll.comm[comm];
    snprintf(label, sizeof label, "%s r%d", c->name, rank);
    rc = memobs__peer_add(label, (int32_t)comm, (int32_t)rank);
    memobs__spin_unlock(&memobs__coll.lock);
    if (rc == MEMOBS_ERR_FULL)
        memobs__coll_drop(MEMOBS__COLL_DROP_PEERS, "peer", label, MEMOBS_MAX_PEERS, "its transfers are not kept "
                          "(peers_dropped)");
    return rc;
}

/* S, the algorithm's size, of one operation of bytes (saturating). */
static uint64_t memobs__coll_s(int kind, int nranks, uint64_t bytes) {
    uint64_t n = nranks > 1 ? (uint64_t)nranks : 1u;
    if (kind != MEMOBS_COLL_ALL_GATHER && kind != MEMOBS_COLL_REDUCE_SCATTER && kind != MEMOBS_COLL_ALL_TO_ALL)
        return bytes;
    return bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
}

/* The bus factor as num / den; 0 when there is none (gather, scatter,
   other kinds, nranks unknown). */
static int memobs__coll_factor(int kind, int nranks, uint64_t *num, uint64_t *den) {
    uint64_t n = nranks > 0 ? (uint64_t)nranks : 0u;
    *num = 0;
    *den = 1;
    if (!n) return 0;
    switch (kind) {
    case MEMOBS_COLL_ALL_REDUCE: *num = 2u * (n - 1u); *den = n; return 1;
    case MEMOBS_COLL_ALL_GATHER:
    case MEMOBS_COLL_REDUCE_SCATTER:
    case MEMOBS_COLL_ALL_TO_ALL: *num = n - 1u; *den = n; return 1;
    case MEMOBS_COLL_BROADCAST:
    case MEMOBS_COLL_REDUCE:
    case MEMOBS_COLL_SEND:
    case MEMOBS_COLL_RECV:
    case MEMOBS_COLL_SEND_RECV: *num = 1u; *den = 1u; return 1;
    default: return 0;
    }
}

/* a x num / den, rounded down, exact in integers (num < 2^33, den < 2^32),
   saturating; a saturated a (UINT64_MAX) stays so. */
static uint64_t memobs__coll_muldiv(uint64_t a, uint64_t num, uint64_t den) {
    uint64_t q = a / den, r = a % den, hi;
    if (!num) return 0;
    if (a == UINT64_MAX) return UINT64_MAX;
    if (q > UINT64_MAX / num) return UINT64_MAX;
    hi = q * num;
    return memobs__sat(hi, r * num / den); /* r < den < 2^32, num < 2^33: no overflow */
}

static int memobs__coll_bad(const char *what, long long a, long long b) {
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_BAD_RECORD].v, 1u);
    memobs__warn_once(MEMOBS__W_BAD_RECORD, "%s with handle %lld / %lld refused (not registered, or a bad "
                      "direction or phase); counted as a bad record", what, a, b);
    return 1;
}

/* Algorithm and protocol names for the timeline: their index + 1 in
   memobs__coll.strs (0: none, or no room left). */
static unsigned memobs__coll_str(const char *s) {
    static const char *const fixed[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE",
                                        "PAT", "LL", "LL128", "SIMPLE"};
    uint32_t n, i;
    char nm[MEMOBS__REG_NAME];
    if (!s || !*s) return 0;
    n = memobs__coll_n(&memobs__coll.nstrs, MEMOBS__COLL_STRS);
    for (i = 0; i < n; i++)
        if (strcmp(memobs__coll.strs[i], s) == 0) return i + 1u;
    memobs__reg_norm(s, nm);
    memobs__spin_lock(&memobs__coll.lock);
    n = MEMOBS__LOAD(&memobs__coll.nstrs.v);
    if (n == 0) { /* the known ones first */
        for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) strcpy(memobs__coll.strs[i], fixed[i]);
        n = (uint32_t)(sizeof fixed / sizeof fixed[0]);
    }
    for (i = 0; i < n && strcmp(memobs__coll.strs[i], nm) != 0; i++) {
    }
    if (i == n && n < MEMOBS__COLL_STRS) strcpy(memobs__coll.strs[n++], nm);
    __atomic_store_n(&memobs__coll.nstrs.v, n, __ATOMIC_RELEASE);
    memobs__spin_unlock(&memobs__coll.lock);
    return i < n ? i + 1u : 0u;
}

/* The text of memobs__coll_str's index, "" for 0. */
static const char *memobs__coll_str_text(unsigned i) {
    return i && i <= memobs__coll_n(&memobs__coll.nstrs, MEMOBS__COLL_STRS) ? memobs__coll.strs[i - 1] : "";
}

void memobs_record_coll_ex(const memobs_coll_record_t *r) {
    memobs__coll_tab_t *t; /* set: the counts were released after it */
    memobs__u64_t *row;
    uint64_t s, t0;
    int nranks;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    if (!r) {
        memobs__coll_bad("a collective record (NULL)", -1, -1);
        return;
    }
    if (r->comm < 0 || (uint32_t)r->comm >= memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS) || r->kind < 0 ||
        (uint32_t)r->kind >= memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS) ||
        (unsigned)r->phase >= MEMOBS__NPHASE) {
        memobs__coll_bad("a collective record (communicator / kind)", (long long)r->comm, (long long)r->kind);
        return;
    }
    if (memobs__too_big(r->bytes, 0, "a collective record") || memobs__too_big(r->ns, 1, "a collective record"))
        return;
    nranks = memobs__coll.comm[r->comm].nranks;
    t = memobs__coll.tab;
    row = t->row[r->comm][r->kind][r->phase];
    MEMOBS__ADD(&row[0].v, 1u);
    memobs__add_sat_atomic(&row[1], r->bytes);
    s = memobs__coll_s(r->kind, nranks, r->bytes);
    if (r->ns) {
        MEMOBS__ADD(&row[2].v, 1u);
        memobs__add_sat_atomic(&row[3], r->ns);
        memobs__add_sat_atomic(&row[4], s);
    }
    if (r->start_ns) {
        t0 = r->start_ns;
    } else {
        t0 = memobs_now_ns();
        t0 = t0 > r->ns ? t0 - r->ns : 0;
    }
    if (MEMOBS__LOAD(&memobs__tl_on.v)) {
        unsigned nch = r->nchannels > 0 ? (r->nchannels < 127 ? (unsigned)r->nchannels : 127u) : 0u;
        uint64_t meta = (uint64_t)((unsigned)r->phase & 15u) << 8 | (uint64_t)((uint32_t)r->comm & 0xffffu) << 16 |
                        (uint64_t)((uint32_t)r->kind & 0xffu) << 32 | (uint64_t)memobs__coll_str(r->algo) << 40 |
                        (uint64_t)memobs__coll_str(r->proto) << 48 | (uint64_t)(r->captured ? 1u : 0u) << 56 |
                        (uint64_t)nch << 57;
        memobs__tl_coll(t0, r->ns, r->bytes, r->seq, meta);
    }
    {
        memobs__u64_t *last = &t->sl_last[r->comm][r->kind];
        uint64_t l = MEMOBS__LOAD(&last->v);
        if ((!l || t0 >= l + MEMOBS__COLL_SL_GAP_NS || t0 < l) && MEMOBS__CAS(&last->v, &l, t0 ? t0 : 1u))
            memobs__sl_coll(t0, r->ns, r->comm, r->kind, (unsigned)r->phase, r->bytes, r->seq);
    }
}

void memobs_record_coll(memobs_comm_t comm, memobs_coll_kind_t kind, uint64_t bytes, memobs_phase_t phase,
                        uint64_t ns) {
    memobs_coll_record_t r;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    memset(&r, 0, sizeof r);
    r.comm = comm;
    r.kind = kind;
    r.phase = phase;
    r.bytes = bytes;
    r.ns = ns;
    memobs_record_coll_ex(&r);
}

void memobs_record_peer_xfer_timed(memobs_peer_t peer, memobs_peer_dir_t dir, uint64_t bytes, memobs_phase_t phase,
                                   uint64_t ns) {
    memobs__u64_t *c;
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    if (peer < 0 || (uint32_t)peer >= memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS) ||
        (unsigned)dir >= MEMOBS_PEER_DIRS || (unsigned)phase >= MEMOBS__NPHASE) {
        memobs__coll_bad("a peer transfer", (long long)peer, (long long)dir);
        return;
    }
    if (memobs__too_big(bytes, 0, "a peer transfer") || memobs__too_big(ns, 1, "a peer transfer")) return;
    c = memobs__coll.tab->pxf[peer][dir][phase];
    memobs__add_sat_atomic(&c[0], bytes);
    MEMOBS__ADD(&c[1].v, 1u);
    if (ns) memobs__add_sat_atomic(&c[2], ns);
    if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_peer((unsigned)dir, (unsigned)phase, peer, bytes, ns);
}

void memobs_record_peer_xfer(memobs_peer_t peer, memobs_peer_dir_t dir, uint64_t bytes, memobs_phase_t phase) {
    memobs_record_peer_xfer_timed(peer, dir, bytes, phase, 0);
}

/* Row (comm, kind, phase) in the window, with atomic loads and no lock (the
   crash writer reads it so too); returns its ops. */
static uint64_t memobs__coll_row_read(uint32_t c, uint32_t k, uint32_t ph, memobs_coll_stats_t *out) {
    const memobs__comm_def_t *d = &memobs__coll.comm[c];
    const memobs__u64_t *v = memobs__coll.tab->row[c][k][ph];
    const uint64_t *b = memobs__coll.tab->row_base[c][k][ph];
    uint64_t num, den;
    memset(out, 0, sizeof *out);
    out->comm = (memobs_comm_t)c;
    out->comm_name = d->name;
    out->comm_id = d->id;
    out->rank = d->rank;
    out->nranks = d->nranks;
    out->nnodes = d->nnodes;
    out->kind = (memobs_coll_kind_t)k;
    out->kind_name = k < MEMOBS_COLL_FIXED_KINDS ? memobs__coll_fixed[k][0] : memobs__coll.kind[k];
    out->phase = (memobs_phase_t)ph;
    out->ops = MEMOBS__LOAD(&v[0].v) - MEMOBS__LOAD(&b[0]);
    out->bytes = memobs__win(MEMOBS__LOAD(&v[1].v), MEMOBS__LOAD(&b[1]));
    out->timed_ops = MEMOBS__LOAD(&v[2].v) - MEMOBS__LOAD(&b[2]);
    out->ns = memobs__win(MEMOBS__LOAD(&v[3].v), MEMOBS__LOAD(&b[3]));
    out->algo_bytes = memobs__win(MEMOBS__LOAD(&v[4].v), MEMOBS__LOAD(&b[4]));
    if (memobs__coll_factor((int)k, d->nranks, &num, &den))
        out->bus_bytes = memobs__coll_muldiv(out->algo_bytes, num, den);
    if (out->ns) {
        out->algbw_gbs = (double)out->algo_bytes / (double)out->ns;
        out->busbw_gbs = (double)out->bus_bytes / (double)out->ns;
    }
    return out->ops;
}

/* Peer i in the window (lock-free, as above); returns 1 when it was used. */
static int memobs__peer_read(uint32_t i, memobs_peer_stats_t *out) {
    const memobs__peer_def_t *p = &memobs__coll.peer[i];
    unsigned d, ph;
    int used = 0;
    memset(out, 0, sizeof *out);
    out->id = (memobs_peer_t)i;
    out->name = p->label;
    out->comm = p->comm;
    out->rank = p->rank;
    for (d = 0; d < MEMOBS_PEER_DIRS; d++) {
        for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
            const memobs__u64_t *v = memobs__coll.tab->pxf[i][d][ph];
            const uint64_t *b = memobs__coll.tab->pxf_base[i][d][ph];
            out->bytes[d][ph] = memobs__win(MEMOBS__LOAD(&v[0].v), MEMOBS__LOAD(&b[0]));
            out->ops[d][ph] = MEMOBS__LOAD(&v[1].v) - MEMOBS__LOAD(&b[1]);
            out->ns[d][ph] = memobs__win(MEMOBS__LOAD(&v[2].v), MEMOBS__LOAD(&b[2]));
            used |= out->bytes[d][ph] != 0 || out->ops[d][ph] != 0;
        }
    }
    return used;
}

size_t memobs_coll_get_stats(memobs_coll_stats_t *out, size_t max) {
    uint32_t nc, nk, c, k, ph;
    size_t n = 0;
    memobs_coll_stats_t x;
    memobs_init();
    nc = memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS);
    nk = memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS);
    pthread_mutex_lock(&memobs__g.lock);
    for (c = 0; c < nc; c++)
        for (k = 0; k < nk; k++)
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                if (!memobs__coll_row_read(c, k, ph, &x)) continue;
                if (out && n < max) out[n] = x;
                n++;
            }
    pthread_mutex_unlock(&memobs__g.lock);
    return n;
}

size_t memobs_peer_get_stats(memobs_peer_stats_t *out, size_t max) {
    uint32_t np, i;
    size_t n = 0;
    memobs_peer_stats_t x;
    memobs_init();
    np = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS);
    pthread_mutex_lock(&memobs__g.lock);
    for (i = 0; i < np; i++) {
        if (!memobs__peer_read(i, &x)) continue;
        if (out && n < max) out[n] = x;
        n++;
    }
    pthread_mutex_unlock(&memobs__g.lock);
    return n;
}

void memobs_coll_set_source(const char *source, const char *instance, const char *level, int api_version) {
#ifdef MEMOBS_DISABLE
    (void)source;
    (void)instance;
    (void)level;
    (void)api_version;
    (void)memobs__str_write;
#else
    if (memobs__coll_lock() < 0) memobs__spin_lock(&memobs__coll.lock); /* the source, without tables */
    if (source) memobs__str_write(memobs__coll.source, source, sizeof memobs__coll.source);
    if (instance) memobs__str_write(memobs__coll.instance, instance, sizeof memobs__coll.instance);
    if (level) memobs__str_write(memobs__coll.level, level, sizeof memobs__coll.level);
    MEMOBS__STORE(&memobs__coll.api_version.v, (uint32_t)(api_version > 0 ? api_version : 0));
    MEMOBS__STORE(&memobs__coll.source_set.v, 1u);
    memobs__spin_unlock(&memobs__coll.lock);
#endif
}

void memobs_coll_note(memobs_coll_note_t what, uint64_t n) {
    if (!MEMOBS__LOAD(&memobs__on.v)) return;
    if ((unsigned)what >= MEMOBS_COLL_NOTES) {
        memobs__coll_bad("a collective note", (long long)what, 0);
        return;
    }
    memobs__add_sat_atomic(&memobs__coll.notes[what], n);
}

/* Lock-free, as the rows. */
static void memobs__coll_info_read(memobs_coll_info_t *out) {
    unsigned i;
    memset(out, 0, sizeof *out);
    memobs__str_read(out->source, memobs__coll.source, sizeof out->source);
    memobs__str_read(out->instance, memobs__coll.instance, sizeof out->instance);
    memobs__str_read(out->level, memobs__coll.level, sizeof out->level);
    out->api_version = (int)MEMOBS__LOAD(&memobs__coll.api_version.v);
    for (i = 0; i < MEMOBS_COLL_NOTES; i++)
        out->notes[i] = memobs__win(MEMOBS__LOAD(&memobs__coll.notes[i].v), MEMOBS__LOAD(&memobs__coll.notes_base[i]));
    out->comms_dropped = MEMOBS__LOAD(&memobs__coll.drops[MEMOBS__COLL_DROP_COMMS].v);
    out->kinds_dropped = MEMOBS__LOAD(&memobs__coll.drops[MEMOBS__COLL_DROP_KINDS].v);
    out->peers_dropped = MEMOBS__LOAD(&memobs__coll.drops[MEMOBS__COLL_DROP_PEERS].v);
}

void memobs_coll_get_info(memobs_coll_info_t *out) {
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    memobs__coll_info_read(out);
    pthread_mutex_unlock(&memobs__g.lock);
}

/* The collectives' part of every output: shown when a backend set its
   source or anything was recorded in the window. Lock-free. */
static int memobs__coll_shown(void) {
    uint32_t nc = memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS);
    uint32_t nk = memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS);
    uint32_t np = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS), c, k, ph;
    memobs_coll_stats_t x;
    memobs_peer_stats_t y;
    if (MEMOBS__LOAD(&memobs__coll.source_set.v)) return 1;
    for (c = 0; c < nc; c++)
        for (k = 0; k < nk; k++)
            for (ph = 0; ph < MEMOBS__NPHASE; ph++)
                if (memobs__coll_row_read(c, k, ph, &x)) return 1;
    for (c = 0; c < np; c++)
        if (memobs__peer_read(c, &y)) return 1;
    return 0;
}

/* Caller holds memobs__g.lock: the window's figures start again. */
static void memobs__coll_rebase(void) {
    memobs__coll_tab_t *t = __atomic_load_n(&memobs__coll.tab, __ATOMIC_ACQUIRE);
    size_t i;
    if (t) { /* none before the first registration */
        for (i = 0; i < sizeof t->row_base / sizeof(uint64_t); i++)
            MEMOBS__STORE(&(&t->row_base[0][0][0][0])[i], MEMOBS__LOAD(&(&t->row[0][0][0][0])[i].v));
        for (i = 0; i < sizeof t->pxf_base / sizeof(uint64_t); i++)
            MEMOBS__STORE(&(&t->pxf_base[0][0][0][0])[i], MEMOBS__LOAD(&(&t->pxf[0][0][0][0])[i].v));
    }
    for (i = 0; i < MEMOBS_COLL_NOTES; i++)
        MEMOBS__STORE(&memobs__coll.notes_base[i], MEMOBS__LOAD(&memobs__coll.notes[i].v));
}

/* This instance's host table with the given instance name: memobs_host_api
   below, and a module's own table of its private memobs (the NCCL plugin). */
#define MEMOBS__HOST_API_INIT(instance)                                                                   \
    {MEMOBS__ABI_KEY, (uint32_t)sizeof(memobs_host_api_t), instance, memobs_get_enabled, memobs_get_phase, \
     memobs_now_ns, memobs_coll_register_comm, memobs_coll_kind_intern, memobs_record_coll_ex,             \
     memobs_peer_intern, memobs_peer_rank, memobs_record_peer_xfer_timed, memobs_coll_set_source,          \
     memobs_coll_note, memobs_get_identity}

#ifdef MEMOBS_EXPORT_HOST
#ifndef MEMOBS_HOST_INSTANCE
#define MEMOBS_HOST_INSTANCE "program"
#endif
__attribute__((visibility("default"))) const memobs_host_api_t *memobs_host_api(void) {
    static const memobs_host_api_t api = MEMOBS__HOST_API_INIT(MEMOBS_HOST_INSTANCE);
    return &api;
}
#endif

/* ======================================================================== */
/* Private: allocation tracker                                    >>tracker */
/* ======================================================================== */

#define MEMOBS__TRK (memobs__g.trk)

static const char *const memobs__kind_name[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};

/* Adds n to a tracker count of the calling thread's shard (alloc bytes,
   what 2, saturate; the others wrap: pending counts go down too). */
static void memobs__trk_count(unsigned kind, unsigned what, uint64_t n) {
    int nomem;
    memobs__shard_t *s = memobs__shard_try(&nomem);
    memobs__u64_t *c;
    if (!s || !MEMOBS__OWN_OK()) s = &memobs__g.fallback;
    c = &s->trk[kind][what];
    if (s->shared) {
        if (what == 2) memobs__add_sat_atomic(c, n);
        else MEMOBS__ADD(&c->v, n);
    } else {
        MEMOBS__OWN_BEGIN();
        if (what == 2) memobs__own_add_sat(c, n);
        else memobs__own_add(c, n);
        MEMOBS__OWN_END();
    }
}

/* A tracked alloc or free inside memobs on the same thread: a signal
   handler that interrupted the tracker (or any memobs lock) there, whose
   locks it would wait for forever. Refused and counted (signal_dropped,
   no warning: the code interrupted may be writing one); 1 when refused. */
static int memobs__trk_nested(void) {
    if (MEMOBS__LIKELY(memobs__tls.in == 0)) return 0;
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_NESTED].v, 1u);
    return 1;
}

/* Tables are allocated at the first tracked allocation, so a program that
   never tracks pays nothing. 1 when ready. */
static int memobs__trk_ready(void) {
    memobs__trk_t *t = &MEMOBS__TRK;
    uint32_t r = __atomic_load_n(&t->ready.v, __ATOMIC_ACQUIRE);
    if (MEMOBS__LIKELY(r == 1)) return 1;
    if (r == 2 || memobs__tls.busy) return 0; /* busy: MEMOBS_MALLOC re-entered us */
    memobs__mutex_lock(&t->init_lock);
    if (MEMOBS__LOAD(&t->ready.v) == 0) {
        memobs__tls.busy = 1;
        /* Stripes reserve capacity in batches: exact for small tables; at
           most 2 batches per stripe (6%) idle in a large one. */
        t->batch = t->capacity / 1024 > 16 ? 16u : t->capacity / 1024 < 1 ? 1u : t->capacity / 1024;
        t->traces = (memobs__trace_t *)MEMOBS_MALLOC(MEMOBS__TRACE_SLOTS * sizeof(memobs__trace_t));
        t->trace_slot = (uint32_t *)MEMOBS_MALLOC(MEMOBS_MAX_TRACES * sizeof(uint32_t));
        t->frames = (memobs_frame_t *)MEMOBS_MALLOC(MEMOBS__TRACE_FRAMES * sizeof(memobs_frame_t));
        if (!t->traces || !t->trace_slot || !t->frames) {
            if (t->traces) MEMOBS_FREE(t->traces);
            if (t->trace_slot) MEMOBS_FREE(t->trace_slot);
            if (t->frames) MEMOBS_FREE(t->frames);
            t->traces = NULL;
            t->trace_slot = NULL;
            t->frames = NULL;
            memobs__log(MEMOBS_LOG_WARN, "allocation tracker: cannot allocate its trace tables; allocations are "
                        "counted but not tracked");
            __atomic_store_n(&t->ready.v, 2u, __ATOMIC_RELEASE);
        } else {
            memset(t->traces, 0, MEMOBS__TRACE_SLOTS * sizeof(memobs__trace_t));
            __atomic_store_n(&t->ready.v, 1u, __ATOMIC_RELEASE);
        }
        memobs__tls.busy = 0;
    }
    r = MEMOBS__LOAD(&t->ready.v);
    memobs__mutex_unlock(&t->init_lock);
    return r == 1;
}

/* How a C stack was captured, kept with its trace (part of its identity).
   memobs__capture_c returns the frame count with these flags from bit
   MEMOBS__C_SHIFT up; memobs__trace_intern takes the two apart. */
#define MEMOBS__C_FP 1u  /* walked by frame pointers */
#define MEMOBS__C_CUT 2u /* that walk stopped at a frame pointer that failed a check */
#define MEMOBS__C_SHIFT 16
#define MEMOBS__C_COUNT 0xffffu

#ifdef MEMOBS__HAVE_FP
/* Under private names: strict -std=c99/c11 hides these declarations (GNU
   and POSIX 2001). */
extern int memobs__getattr_np(pthread_t th, pthread_attr_t *attr) __asm__("pthread_getattr_np");
extern int memobs__attr_getstack(const pthread_attr_t *attr, void **addr, size_t *size)
    __asm__("pthread_attr_getstack");

/* The calling thread's stack [stk_lo, stk_hi), read once per thread; 0
   when it cannot be read. glibc reports the main thread's from
   /proc/self/maps (its top) and the stack rlimit (its size): the part
   below what the thread has touched may be unmapped, which the walk never
   reads (it reads only above its own frame). */
static int memobs__stack_bounds(void) {
    memobs__tls_t *t = &memobs__tls;
    if (MEMOBS__UNLIKELY(t->stk_state == 0)) {
        pthread_attr_t a;
        void *addr = NULL;
        size_t size = 0;
        uint32_t busy = t->busy;
        t->stk_state = 2;
        t->busy = 1; /* reading /proc/self/maps allocates: not a tracked allocation */
        if (memobs__getattr_np(pthread_self(), &a) == 0) {
            if (memobs__attr_getstack(&a, &addr, &size) == 0 && addr && size > 64) {
                t->stk_lo = (uintptr_t)addr;
                t->stk_hi = (uintptr_t)addr + size;
                t->stk_state = 1;
            }
            pthread_attr_destroy(&a);
        }
        t->busy = busy;
    }
    return t->stk_state == 1;
}

/* The walker reads other functions' frames, which ASan and TSan need not
   see (a bad frame pointer may point at a redzone; it is checked first). */
#if defined(__has_attribute) && !defined(__CUDACC__)
#if __has_attribute(no_sanitize)
#define MEMOBS__NO_SANITIZE __attribute__((no_sanitize("address", "thread")))
#endif
#endif
#ifndef MEMOBS__NO_SANITIZE
#define MEMOBS__NO_SANITIZE
#endif

/* Frame records from fp (that of memobs_track_alloc_full, whose return
   address must be ra, else -1: the compiler did not keep the record we
   expect) outwards, on the stack [lo, hi). A record is {previous frame
   pointer, return address} on x86-64 and aarch64. Each next frame pointer
   must lie above the previous one and leave a record below hi, aligned:
   every read is of the thread's own stack between this frame and its top,
   and a loop is impossible. A return address must be one: not null, not
   in the first 64 KiB (no code is mapped there), not on the stack. A next
   frame pointer of 0 ends the chain (the outermost frame); a record that
   fails a check stops the walk with MEMOBS__C_CUT: code without frame
   pointers, whose register holds data, or a corrupt stack. */
static __attribute__((noinline)) MEMOBS__NO_SANITIZE int memobs__walk_fp(void **out, int depth, uintptr_t fp,
                                                                         uintptr_t lo, uintptr_t hi, const void *ra) {
    unsigned how = MEMOBS__C_FP;
    int n = 0;
    for (;;) {
        const uintptr_t *rec = (const uintptr_t *)fp;
        uintptr_t next = rec[0], pc = rec[1];
#if defined(__aarch64__)
        /* xpaclri (hint #7; a no-op without pointer authentication): the
           return address without its authentication code (-mbranch-protection). */
        __asm__("mov x30, %1\n\thint #7\n\tmov %0, x30" : "=r"(pc) : "r"(pc) : "x30");
#endif
        if (n == 0 && (const void *)pc != ra) return -1;
        if (pc < 65536 || (pc >= lo && pc < hi)) {
            if (pc || next) how |= MEMOBS__C_CUT; /* {0, 0}: the end */
            break;
        }
        out[n++] = (void *)pc;
        if (n >= depth || next == 0) break;
        if (next <= fp || next > hi - 2 * sizeof(uintptr_t) || (next & (sizeof(uintptr_t) - 1)) != 0) {
            how |= MEMOBS__C_CUT;
            break;
        }
        fp = next;
    }
    return n | (int)(how << MEMOBS__C_SHIFT);
}
#define MEMOBS__FRAME() __builtin_frame_address(0)
#else
#define MEMOBS__FRAME() NULL
#endif

/* Return addresses from ra (the return address of the public function
   this is inlined into, whose frame is frame) outwards, with how they were
   captured (MEMOBS__C_SHIFT). Frame pointers, when chosen and the capture
   runs on the thread's own stack, walk from frame: the first frame is ra.
   backtrace() unwinds the frames above ra too (that function, and a
   sanitizer's backtrace() interceptor), finds and drops them: each frame
   costs about 100 ns of DWARF unwinding. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMOBS__CAPTURE_ABOVE 2
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MEMOBS__CAPTURE_ABOVE 2
#endif
#endif
#ifndef MEMOBS__CAPTURE_ABOVE
#define MEMOBS__CAPTURE_ABOVE 1
#endif
static inline __attribute__((always_inline)) int memobs__capture_c(void **out, int depth, const void *ra,
                                                                  const void *frame) {
#ifdef MEMOBS__HAVE_BACKTRACE
    void *buf[MEMOBS_MAX_STACK + MEMOBS__CAPTURE_ABOVE + 1];
    int n, i, skip = -1;
#endif
    if (depth > MEMOBS_MAX_STACK) depth = MEMOBS_MAX_STACK;
    if (depth <= 0 || memobs__tls.busy) return 0;
#ifdef MEMOBS__HAVE_FP
    if (MEMOBS__LOAD(&MEMOBS__TRK.unwind.v) == MEMOBS_UNWIND_FP && memobs__stack_bounds()) {
        uintptr_t fp = (uintptr_t)frame, lo = memobs__tls.stk_lo, hi = memobs__tls.stk_hi;
        /* Elsewhere (a sigaltstack() handler, a coroutine's stack): backtrace(). */
        if (fp >= lo && fp <= hi - 2 * sizeof(uintptr_t) && (fp & (sizeof(uintptr_t) - 1)) == 0) {
            int r = memobs__walk_fp(out, depth, fp, lo, hi, ra);
            if (r >= 0) return r;
        }
    }
#else
    (void)frame;
#endif
#ifdef MEMOBS__HAVE_BACKTRACE
    memobs__tls.busy = 1; /* the first backtrace() loads libgcc_s, which calls malloc */
    n = backtrace(buf, depth + MEMOBS__CAPTURE_ABOVE);
    memobs__tls.busy = 0;
    for (i = 0; i < n && i <= MEMOBS__CAPTURE_ABOVE && skip < 0; i++)
        if (buf[i] == ra) skip = i;
    if (skip < 0) skip = MEMOBS__CAPTURE_ABOVE;
    for (i = skip; i < n && i - skip < depth; i++) out[i - skip] = buf[i];
    return i - skip > 0 ? i - skip : 0;
#else
    (void)out;
    (void)ra;
    return 0;
#endif
}

/* tag: len characters, then zeros to the next multiple of 8 bytes (it is
   hashed a word at a time). */
static uint64_t memobs__trace_hash(const char *tag, size_t len, unsigned prov, const memobs_frame_t *fr,
                                   unsigned np, unsigned nc, unsigned how) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)how << 40) ^ ((uint64_t)prov << 32) ^ ((uint64_t)np << 16) ^ nc;
    size_t j;
    unsigned i;
    for (j = 0; j < len; j += 8) {
        uint64_t w;
        memcpy(&w, tag + j, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (i = 0; i < np + nc; i++) h = memobs__mix(h ^ fr[i].pc) ^ ((uint64_t)fr[i].line << 32 | fr[i].aux);
    h = memobs__mix(h);
    return h ? h : 1;
}

static int memobs__trace_eq(const memobs__trace_t *t, const char *tag, unsigned prov, const memobs_frame_t *fr,
                            unsigned np, unsigned nc, unsigned how) {
    return t->np == np && t->nc == nc && t->prov == prov && t->how == how && strcmp(t->tag, tag) == 0 &&
           (np + nc == 0 || memcmp(&MEMOBS__TRK.frames[t->off], fr, (np + nc) * sizeof *fr) == 0);
}

/* Slot of the trace with this content, or the empty slot ending its probe. */
static uint32_t memobs__trace_probe(uint64_t h, const char *tag, unsigned prov, const memobs_frame_t *fr,
                                    unsigned np, unsigned nc, unsigned how, int *found) {
    uint32_t i = (uint32_t)(h >> 32) & (MEMOBS__TRACE_SLOTS - 1);
    for (;; i = (i + 1) & (MEMOBS__TRACE_SLOTS - 1)) {
        memobs__trace_t *t = &MEMOBS__TRK.traces[i];
        uint64_t k = __atomic_load_n(&t->key, __ATOMIC_ACQUIRE);
        if (k == 0) break;
        if (k == h && memobs__trace_eq(t, tag, prov, fr, np, nc, how)) {
            *found = 1;
            return i;
        }
    }
    *found = 0;
    return i;
}

/* Trace id of (tag, provider frames, C frames and how they were
   captured), interning it on first sight; MEMOBS_NO_TRACE when there is
   nothing to record or no room. nc_in: memobs__capture_c's count and
   flags. */
static uint32_t memobs__trace_intern(const char *tag_in, void *const *cst, int nc_in) {
    memobs__trk_t *t = &MEMOBS__TRK;
    memobs_frame_t fr[2 * MEMOBS_MAX_STACK];
    char tag[MEMOBS__TAG_LEN];
    unsigned prov = __atomic_load_n(&t->prov_on.v, __ATOMIC_ACQUIRE), np = 0, nc, how, i;
    size_t len;
    uint32_t slot, id;
    uint64_t h;
    int found;
    if (prov && !memobs__tls.busy) {
        const memobs_tag_provider_t *p = &t->prov[prov - 1];
        int n;
        memobs__tls.busy = 1;
        n = p->capture(fr, MEMOBS_MAX_STACK, p->user);
        memobs__tls.busy = 0;
        np = n > 0 ? (unsigned)(n > MEMOBS_MAX_STACK ? MEMOBS_MAX_STACK : n) : 0u;
    }
    if (np == 0) prov = 0;
    nc = nc_in > 0 ? (unsigned)nc_in & MEMOBS__C_COUNT : 0u;
    how = nc ? (unsigned)nc_in >> MEMOBS__C_SHIFT : 0u;
    for (i = 0; i < nc; i++) {
        fr[np + i].pc = (uintptr_t)cst[i];
        fr[np + i].line = 0;
        fr[np + i].aux = 0;
    }
    if (!tag_in) tag_in = "";
    if (!*tag_in && np + nc == 0) return MEMOBS_NO_TRACE;
    for (len = 0; len + 1 < sizeof tag && tag_in[len]; len++) {
    }
    memcpy(tag, tag_in, len);
    memset(tag + len, 0, 8 - (len & 7)); /* the terminator, and zeros to a whole word */
    h = memobs__trace_hash(tag, len, prov, fr, np, nc, how);
    slot = memobs__trace_probe(h, tag, prov, fr, np, nc, how, &found);
    if (found) return t->traces[slot].id;
    memobs__mutex_lock(&t->trace_lock);
    slot = memobs__trace_probe(h, tag, prov, fr, np, nc, how, &found);
    if (found) {
        id = t->traces[slot].id;
    } else if (MEMOBS__LOAD(&t->ntraces.v) >= MEMOBS_MAX_TRACES || t->frames_used + np + nc > MEMOBS__TRACE_FRAMES) {
        id = MEMOBS_NO_TRACE;
    } else {
        memobs__trace_t *e = &t->traces[slot];
        id = MEMOBS__LOAD(&t->ntraces.v);
        e->id = id;
        e->off = t->frames_used;
        e->np = (uint16_t)np;
        e->nc = (uint16_t)nc;
        e->prov = (uint8_t)prov;
        e->how = (uint8_t)how;
        memcpy(e->tag, tag, sizeof tag);
        if (np + nc) memcpy(&t->frames[e->off], fr, (np + nc) * sizeof *fr);
        t->frames_used += np + nc;
        if (prov && t->prov[prov - 1].retain) t->prov[prov - 1].retain(&t->frames[e->off], (int)np, t->prov[prov - 1].user);
        t->trace_slot[id] = slot;
        __atomic_store_n(&t->ntraces.v, id + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&e->key, h, __ATOMIC_RELEASE);
    }
    memobs__mutex_unlock(&t->trace_lock);
    if (id == MEMOBS_NO_TRACE) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_TRACE_DROPPED].v, 1u);
        memobs__warn_once(MEMOBS__W_TRACES_FULL, "trace table full (MEMOBS_MAX_TRACES=%u, %u frames); new tags/stacks "
                          "are not recorded (counted)", (unsigned)MEMOBS_MAX_TRACES, (unsigned)MEMOBS__TRACE_FRAMES);
    }
    return id;
}

/* The trace of a published id, or NULL. */
static const memobs__trace_t *memobs__trace_get(uint32_t id) {
    if (MEMOBS__LOAD(&MEMOBS__TRK.ready.v) != 1 || id >= __atomic_load_n(&MEMOBS__TRK.ntraces.v, __ATOMIC_ACQUIRE))
        return NULL;
    return &MEMOBS__TRK.traces[MEMOBS__TRK.trace_slot[id]];
}

static void memobs__peak_report(int device, uint64_t now_max, uint64_t prev, uint32_t trace);

/* The escrow of current and peak bytes (see memobs__esc_t). */
#define MEMOBS__ESC (MEMOBS__TRK.esc)

/* What a change did: the kind's exact current after it (while the
   timeline is on), and for a device a new maximum. */
struct memobs__esc_res_s {
    uint64_t live, dev_now, dev_before;
    int has_live, dev_peak;
};

static memobs__esc_shard_t *memobs__esc_mine(void) {
    memobs__shard_t *s = memobs__tls.shard;
    return s && !s->shared ? MEMOBS__ESC_OF(s) : NULL;
}

/* Caller holds esc.lock: held for memobs__trk_idle. */
static void memobs__esc_held(void) {
    int64_t h = 0;
    unsigned k;
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) h += MEMOBS__ESC.g[k] > 0 ? MEMOBS__ESC.g[k] : 0;
    MEMOBS__STORE(&MEMOBS__ESC.held.v, (uint64_t)h);
}

/* Caller holds esc.lock and every stripe lock: moves each shard's d into
   g and takes its lease back (u = g). With all those locks held no
   change is half made, so g is then the exact current of every account.
   live >= 0 switches the exact cur[] (from g) on or off at that cut. */
static void memobs__esc_fold_held(int live) {
    memobs__esc_t *E = &MEMOBS__ESC;
    memobs__shard_t *s;
    unsigned a;
    for (s = (memobs__shard_t *)E->list; s; s = (memobs__shard_t *)MEMOBS__ESC_OF(s)->next) {
        memobs__esc_shard_t *e = MEMOBS__ESC_OF(s);
        for (a = 0; a < MEMOBS__ACCTS; a++) {
            E->g[a] += e->d[a];
            e->d[a] = 0;
            e->l[a] = 0;
        }
        e->dirty = 0;
    }
    for (a = 0; a < MEMOBS__ACCTS; a++) E->u[a] = E->g[a];
    MEMOBS__STORE(&E->leased.v, 0u);
    memobs__esc_held();
    __atomic_store_n(&E->dirty.v, 0u, __ATOMIC_SEQ_CST);
    if (live > 0)
        for (a = 0; a < MEMOBS__ACCTS; a++) MEMOBS__STORE(&E->cur[a].v, (uint64_t)E->g[a]);
    if (live >= 0) __atomic_store_n(&E->live.v, (uint32_t)live, __ATOMIC_SEQ_CST);
    MEMOBS__ADD(&E->folds.v, 1u);
}

/* Every stripe lock of the tracker's table, in order: with esc.lock held
   first (as a fold and fork() take them; the tracker never takes esc.lock
   while it holds a stripe), no escrow record changes. */
static void memobs__esc_lock_all(int lock) {
    unsigned i;
    for (i = 0; i < MEMOBS__TRK_STRIPES; i++) {
        if (lock) memobs__spin_lock(&MEMOBS__TRK.stripe[i].lock);
        else memobs__spin_unlock(&MEMOBS__TRK.stripe[i].lock);
    }
}

/* Caller holds esc.lock. Makes g exact and u = g: a fold, unless no shard
   has changed since the last one and no lease is out. A change that ends
   before the seq_cst load of the dirty count has counted itself there
   (its shard's first change since a fold adds 1 under a stripe lock);
   one that has not yet added is not over, so it falls after this cut. */
static void memobs__esc_exact(int live) {
    memobs__esc_t *E = &MEMOBS__ESC;
    if (live < 0 && !MEMOBS__LOAD(&E->leased.v) && __atomic_load_n(&E->dirty.v, __ATOMIC_SEQ_CST) == 0) return;
    memobs__esc_lock_all(1);
    memobs__esc_fold_held(live);
    memobs__esc_lock_all(0);
}

/* While the timeline is on: the exact cur[] moves with each change. */
static void memobs__esc_live_add(unsigned a, unsigned b, int64_t delta, memobs__esc_res_t *r) {
    memobs__esc_t *E = &MEMOBS__ESC;
    if (!__atomic_load_n(&E->live.v, __ATOMIC_ACQUIRE)) return;
    r->live = MEMOBS__ADD(&E->cur[a].v, (uint64_t)delta) + (uint64_t)delta;
    r->has_live = 1;
    if (b != MEMOBS__ACCT_NONE) MEMOBS__ADD(&E->cur[b].v, (uint64_t)delta);
}

/* The accounts a change of kind on device keeps: a (the kind's, or the
   device's alone once the kind is saturated) and b (the device's, or
   MEMOBS__ACCT_NONE); 0 when it keeps none. Clears r; *kind_sat: the
   kind is saturated (r's live reads UINT64_MAX). */
static inline __attribute__((always_inline)) int memobs__esc_accts(unsigned kind, int device, unsigned *a, unsigned *b,
                                                                    int *kind_sat, memobs__esc_res_t *r) {
    memobs__esc_t *E = &MEMOBS__ESC;
    memset(r, 0, sizeof *r);
    *a = kind;
    *b = kind == MEMOBS_MEM_DEVICE && device >= 0 && device < MEMOBS_MAX_DEVICES ? MEMOBS__ACCT_DEV + (unsigned)device
                                                                                 : MEMOBS__ACCT_NONE;
    *kind_sat = 0;
    /* A saturated account keeps no change (nothing of it is exact). */
    if (*b != MEMOBS__ACCT_NONE && MEMOBS__LOAD(&E->sat[*b].v)) *b = MEMOBS__ACCT_NONE;
    if (MEMOBS__UNLIKELY(MEMOBS__LOAD(&E->sat[kind].v) != 0)) {
        *kind_sat = 1;
        if (__atomic_load_n(&E->live.v, __ATOMIC_ACQUIRE)) {
            r->live = UINT64_MAX;
            r->has_live = 1;
        }
        if (*b == MEMOBS__ACCT_NONE) return 0;
        *a = *b; /* the device's alone */
        *b = MEMOBS__ACCT_NONE;
    }
    return 1;
}

/* Caller holds a stripe lock (any: see memobs__esc_shard_t). One
   allocation (delta > 0) or free (delta < 0) of kind on device: into the
   calling thread's own record when it is a free or stays within the
   thread's lease (1); 0 when it needs the global lock (memobs__esc_slow,
   once the stripe is let go). r: what it did. */
static inline __attribute__((always_inline)) int memobs__esc_try(unsigned kind, int device, int64_t delta,
                                                                  memobs__esc_res_t *r) {
    memobs__esc_shard_t *e = memobs__esc_mine();
    unsigned a, b;
    int kind_sat;
    if (!memobs__esc_accts(kind, device, &a, &b, &kind_sat, r)) return 1;
    if (!e || !e->reg ||
        (delta > 0 && (e->d[a] + delta > e->l[a] || (b != MEMOBS__ACCT_NONE && e->d[b] + delta > e->l[b]))))
        return 0;
    e->d[a] += delta;
    if (b != MEMOBS__ACCT_NONE) e->d[b] += delta;
    if (!e->dirty) {
        e->dirty = 1;
        __atomic_fetch_add(&MEMOBS__ESC.dirty.v, 1u, __ATOMIC_SEQ_CST);
    }
    memobs__esc_live_add(a, b, delta, r);
    if (kind_sat) r->live = UINT64_MAX;
    return 1;
}

/* With no stripe lock held: a change memobs__esc_try left (the thread's
   first, one past its lease, or one of a thread with no record), under
   the global lock (see memobs__esc_t). */
static void memobs__esc_slow(unsigned kind, int device, int64_t delta, memobs__esc_res_t *r) {
    memobs__esc_t *E = &MEMOBS__ESC;
    memobs__esc_shard_t *e = memobs__esc_mine();
    unsigned k, acct[2], sat_now = 0;
    int kind_sat;
    if (!memobs__esc_accts(kind, device, &acct[0], &acct[1], &kind_sat, r)) return;
    memobs__spin_lock(&E->lock);
    if (e && !e->reg) { /* the owner reads reg; folds read the list under this lock */
        e->reg = 1;
        e->next = E->list;
        E->list = memobs__tls.shard;
        MEMOBS__ADD(&E->nreg.v, 1u);
    }
    if (delta > 0) {
        for (k = 0; k < 2 && acct[k] != MEMOBS__ACCT_NONE; k++)
            if (E->u[acct[k]] + delta > (int64_t)MEMOBS__LOAD(&E->peak[acct[k]].v)) break;
        if (k < 2 && acct[k] != MEMOBS__ACCT_NONE) memobs__esc_exact(-1); /* it may pass the peak */
    }
    for (k = 0; k < 2 && acct[k] != MEMOBS__ACCT_NONE; k++) {
        unsigned x = acct[k];
        uint64_t p = MEMOBS__LOAD(&E->peak[x].v);
        /* g is exact here unless u + delta <= P (then far below the ceiling) */
        if (delta > 0 && E->g[x] + delta > MEMOBS__ESC_CEIL) {
            MEMOBS__STORE(&E->sat[x].v, 1u);
            sat_now = x + 1;
            continue;
        }
        E->g[x] += delta;
        E->u[x] += delta;
        if (E->g[x] > (int64_t)p) {
            MEMOBS__STORE(&E->peak[x].v, (uint64_t)E->g[x]);
            if (x >= MEMOBS__ACCT_DEV) {
                r->dev_peak = 1;
                r->dev_now = (uint64_t)E->g[x];
                r->dev_before = p;
            }
        }
        /* Half the headroom left, leased to this thread for its next ones
           (l changes under this lock, which every fold holds). */
        if (e && delta > 0 && E->u[x] < (int64_t)MEMOBS__LOAD(&E->peak[x].v)) {
            int64_t h = ((int64_t)MEMOBS__LOAD(&E->peak[x].v) - E->u[x]) / 2;
            if (h > 0) {
                e->l[x] += h;
                E->u[x] += h;
                MEMOBS__STORE(&E->leased.v, 1u);
            }
        }
    }
    memobs__esc_held();
    memobs__esc_live_add(acct[0], acct[1], delta, r);
    if (kind_sat) r->live = UINT64_MAX;
    memobs__spin_unlock(&E->lock);
    if (sat_now)
        memobs__warn_once(MEMOBS__W_TRK_SAT, "tracked %s bytes passed 2^60; their current and peak read 2^64-1 "
                          "(saturated) from now on", sat_now <= MEMOBS__ACCT_DEV ? memobs__kind_name[sat_now - 1] : "device");
}

/* The exact current of every account (MEMOBS__ACCTS), by a fold. */
static void memobs__esc_read(uint64_t *cur) {
    memobs__esc_t *E = &MEMOBS__ESC;
    unsigned a;
    memobs__spin_lock(&E->lock);
    memobs__esc_exact(-1);
    for (a = 0; a < MEMOBS__ACCTS; a++)
        cur[a] = MEMOBS__LOAD(&E->sat[a].v) ? UINT64_MAX : E->g[a] > 0 ? (uint64_t)E->g[a] : 0u;
    memobs__spin_unlock(&E->lock);
}

/* An account's peak as read: UINT64_MAX once saturated. */
static uint64_t memobs__esc_peak(unsigned a) {
    return MEMOBS__LOAD(&MEMOBS__ESC.sat[a].v) ? UINT64_MAX : MEMOBS__LOAD(&MEMOBS__ESC.peak[a].v);
}

/* The exact cur[] on (a fold sets it from g) or off: the timeline's. */
static void memobs__esc_set_live(int on) {
    memobs__spin_lock(&MEMOBS__ESC.lock);
    memobs__esc_exact(on ? 1 : 0);
    memobs__spin_unlock(&MEMOBS__ESC.lock);
}

/* A new window (memobs_reset): each kind's peak starts at its current. */
static void memobs__esc_rebase(void) {
    memobs__esc_t *E = &MEMOBS__ESC;
    unsigned k;
    memobs__spin_lock(&E->lock);
    memobs__esc_exact(-1);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) MEMOBS__STORE(&E->peak[k].v, (uint64_t)(E->g[k] > 0 ? E->g[k] : 0));
    memobs__spin_unlock(&E->lock);
}

/* Thread exit: its record goes into g, so a recycled shard starts empty. */
static void memobs__esc_leave(memobs__shard_t *s) {
    memobs__esc_t *E = &MEMOBS__ESC;
    memobs__esc_shard_t *e = MEMOBS__ESC_OF(s);
    unsigned a;
    if (s->shared) return;
    memobs__spin_lock(&E->lock); /* its owner is here: a fold is all that could meet it */
    if (e->reg) {
        for (a = 0; a < MEMOBS__ACCTS; a++) {
            E->g[a] += e->d[a];
            E->u[a] -= e->l[a];
            e->d[a] = 0;
            e->l[a] = 0;
        }
        if (e->dirty) {
            e->dirty = 0;
            __atomic_fetch_sub(&E->dirty.v, 1u, __ATOMIC_SEQ_CST);
        }
        memobs__esc_held();
    }
    memobs__spin_unlock(&E->lock);
}

/* A change with no stripe lock held (an allocation the table does not
   keep): under stripe st's lock, else the global lock. */
static void memobs__esc_change(memobs__trk_stripe_t *st, unsigned kind, int device, int64_t delta,
                               memobs__esc_res_t *r) {
    int ok;
    memobs__spin_lock(&st->lock);
    ok = memobs__esc_try(kind, device, delta, r);
    memobs__spin_unlock(&st->lock);
    if (!ok) memobs__esc_slow(kind, device, delta, r);
}

/* The next report threshold after a report (or switching on) at m. */
static uint64_t memobs__peak_next(uint64_t m) {
    uint64_t want = (uint64_t)((double)m * (1.0 + (double)MEMOBS__LOAD(&MEMOBS__TRK.peak_growth_ppm.v) / 1e6));
    uint64_t floor = MEMOBS__LOAD(&MEMOBS__TRK.peak_min.v);
    if (want <= m) want = m + 1;
    return want > floor ? want : floor;
}

/* After a device allocation is in the table: the one thread that moves the
   device past its report threshold writes the peak report. "previous" is
   the maximum at the last report (or when reports were switched on), else
   the maximum just before this allocation. */
static void memobs__peak_check(int device, uint64_t dc, uint64_t before, uint32_t trace) {
    memobs__trk_t *t = &MEMOBS__TRK;
    uint64_t next;
    if (!MEMOBS__LOAD(&t->peak_on.v) || device < 0 || device >= MEMOBS_MAX_DEVICES) return;
    next = MEMOBS__LOAD(&t->dev[device].next.v);
    while (dc >= next) {
        if (MEMOBS__CAS(&t->dev[device].next.v, &next, memobs__peak_next(dc))) {
            uint64_t prev = MEMOBS__XCHG(&t->dev[device].rep.v, dc);
            if (!memobs__tls.busy) memobs__peak_report(device, dc, prev ? prev : before, trace);
            return;
        }
    }
}

/* The stripe of an address: by its 64 KiB granule, so neighbouring blocks
   (one thread's arena) share a stripe and other threads' stripes stay in
   their caches; the slot within the stripe hashes the whole address. */
static uint32_t memobs__trk_home(uint64_t addr) {
    /* One multiply (Fibonacci hashing): the product's bits from 32 up
       depend on every address bit below them, which is where blocks'
       addresses differ; a probe is one or two slots at half load. */
    return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32);
}
static memobs__trk_stripe_t *memobs__trk_stripe(uint64_t addr, uint32_t *home) {
    *home = memobs__trk_home(addr);
    return &MEMOBS__TRK.stripe[((addr >> 16) * 0x9e3779b97f4a7c15ull) >> 58]; /* the top 6 bits: 64 stripes */
}

/* Caller holds st->lock. Moves the stripe's entries into a table of
   nslots (a power of two, at least 16, more than 2 * n); 0 when there is
   no memory for it (the old table stays). */
static int memobs__trk_resize(memobs__trk_stripe_t *st, uint32_t nslots) {
    memobs__alloc_t *old = st->slot, *ns;
    uint32_t i, omask = st->mask, busy = memobs__tls.busy;
    memobs__tls.busy = 1; /* MEMOBS_MALLOC may be the allocator we watch */
    ns = (memobs__alloc_t *)MEMOBS_MALLOC(nslots * sizeof *ns);
    memobs__tls.busy = busy;
    if (!ns) return 0;
    memset(ns, 0, nslots * sizeof *ns);
    MEMOBS__ADD(&MEMOBS__TRK.slots.v, (uint64_t)nslots - (old ? omask + 1u : 0u));
    MEMOBS__ADD(&MEMOBS__TRK.resizes.v, 1u);
    st->slot = ns;
    st->mask = nslots - 1;
    if (old) {
        for (i = 0; i <= omask; i++) {
            uint32_t j;
            if (!old[i].addr) continue;
            for (j = memobs__trk_home(old[i].addr) & st->mask; ns[j].addr; j = (j + 1) & st->mask) {
            }
            ns[j] = old[i];
        }
        memobs__tls.busy = 1;
        MEMOBS_FREE(old);
        memobs__tls.busy = busy;
    }
    return 1;
}

/* Entries of the capacity for a stripe: up to want, 0 when all are held. */
static uint32_t memobs__trk_reserve(uint32_t want) {
    memobs__trk_t *t = &MEMOBS__TRK;
    uint64_t r = MEMOBS__LOAD(&t->reserved.v), k;
    do {
        if (r >= t->capacity) return 0;
        k = t->capacity - r < want ? t->capacity - r : want;
    } while (!MEMOBS__CAS(&t->reserved.v, &r, r + k));
    return (uint32_t)k;
}

/* Caller holds st->lock and has a new entry to add: makes room (capacity
   and table). 0 when the table is full. */
static int memobs__trk_room(memobs__trk_stripe_t *st) {
    if (st->n >= st->limit) st->limit += memobs__trk_reserve(MEMOBS__TRK.batch);
    if (st->n >= st->limit) return 0;
    if (!st->slot) return memobs__trk_resize(st, 16);
    if (2 * (st->n + 1) > st->mask + 1) return memobs__trk_resize(st, 2 * (st->mask + 1)) || st->n + 1 <= st->mask;
    return 1;
}

/* Whether the tables hold more slots than memory that follows what is
   live allows: 16 per entry reserved from the capacity (the live ones and
   up to 2 batches more per stripe) and 16 per stripe. Under that bound no
   table is cut, so a working set that slides through memory, emptying one
   64 KiB granule's stripe while it fills the next, keeps its tables
   instead of shrinking and regrowing them; past it, memobs__trk_fit. Read
   only when a table grows or a stripe gives back capacity: the reserve
   changes in batches, so a free does not read another thread's line. */
static int memobs__trk_over(void) {
    uint64_t r = MEMOBS__LOAD(&MEMOBS__TRK.reserved.v);
    return MEMOBS__LOAD(&MEMOBS__TRK.slots.v) > 16 * (r + MEMOBS__TRK_STRIPES);
}

/* Caller holds st->lock, after a removal: gives back idle capacity; 1 when
   the tables are then over their bound (memobs__trk_fit, after the lock). */
static int memobs__trk_slack(memobs__trk_stripe_t *st) {
    uint32_t b = MEMOBS__TRK.batch;
    if (st->limit - st->n <= 2 * b) return 0;
    st->limit -= b;
    MEMOBS__ADD(&MEMOBS__TRK.reserved.v, (uint64_t)0 - b);
    return memobs__trk_over();
}

/* With no stripe lock held, the tables over their bound: cuts every table
   under 1/8 load to the least that holds its entries at 1/4 (16 slots at
   least): then the tables hold at most 16 slots per stripe and 8 per live
   entry, half the bound.
   One thread at a time: another that finds the tables over meanwhile
   leaves them to it. */
static void memobs__trk_fit(void) {
    memobs__trk_t *t = &MEMOBS__TRK;
    unsigned i, pass;
    if (MEMOBS__XCHG(&t->fitting.v, 1u)) return;
    for (pass = 0; pass < 2 && memobs__trk_over(); pass++) /* again if frees elsewhere kept it over */
        for (i = 0; i < MEMOBS__TRK_STRIPES; i++) {
            memobs__trk_stripe_t *st = &t->stripe[i];
            uint64_t want = 16;
            memobs__spin_lock(&st->lock);
            while (want < 4 * (uint64_t)st->n) want *= 2;
            if (st->mask + 1 > 16 && 8 * (uint64_t)st->n < st->mask + 1) (void)memobs__trk_resize(st, (uint32_t)want);
            memobs__spin_unlock(&st->lock);
        }
    MEMOBS__STORE(&t->fitting.v, 0u);
}

/* Caller holds st->lock. Slot holding addr, or -1; *hole is the empty slot
   ending the probe run. */
static int memobs__trk_find(memobs__trk_stripe_t *st, uint32_t home, uint64_t addr, uint32_t *hole) {
    uint32_t j = home & st->mask;
    if (!st->slot) return -1;
    for (;; j = (j + 1) & st->mask) {
        if (st->slot[j].addr == addr) return (int)j;
        if (st->slot[j].addr == 0) {
            *hole = j;
            return -1;
        }
    }
}

/* Caller holds st->lock. Backward-shift delete: no tombstones, so probe
   runs stay short however long the engine runs. */
static void memobs__trk_remove(memobs__trk_stripe_t *st, uint32_t j) {
    uint32_t k = j;
    st->slot[j].addr = 0;
    st->n--;
    for (;;) {
        uint32_t home;
        k = (k + 1) & st->mask;
        if (st->slot[k].addr == 0) return;
        home = memobs__trk_home(st->slot[k].addr) & st->mask;
        if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
            st->slot[j] = st->slot[k];
            st->slot[k].addr = 0;
            j = k;
        }
    }
}

/* A record's phase byte also carries its pending-free mark. */
#define MEMOBS__PENDING 0x80u

/* Caller holds the stripe lock: a record leaves the table, and its bytes
   the thread's escrow record; 0 when that waits for memobs__trk_retire
   (the global lock). */
static int memobs__trk_out(const memobs__alloc_t *old, memobs__esc_res_t *r) {
    return memobs__esc_try(old->kind, old->device, -(int64_t)old->bytes, r);
}

/* After the stripe lock: the rest of a record's leaving (r and done:
   from memobs__trk_out). */
static void memobs__trk_retire(const memobs__alloc_t *old, memobs__esc_res_t *r, int done) {
    if (!done) memobs__esc_slow(old->kind, old->device, -(int64_t)old->bytes, r);
    if (MEMOBS__LOAD(&memobs__tl_on.v))
        memobs__tl_track(old->addr, old->bytes, old->kind, old->device, old->trace, old->phase & 0x7fu, 1, r);
    memobs__trk_count(old->kind, 1, 1u);
    if (MEMOBS__UNLIKELY(old->kind == MEMOBS_MEM_DEVICE) && MEMOBS__TSN_ON()) /* a pending one's was requested */
        memobs__tsn_push(old->device, (old->phase & MEMOBS__PENDING) ? (unsigned)MEMOBS__TSN_FREE_DONE : MEMOBS__TSN_FREE_BOTH,
                         old->addr, old->bytes, old->stream, old->trace);
    if (old->phase & MEMOBS__PENDING) {
        memobs__trk_count(old->kind, 3, (uint64_t)0 - 1u);
        memobs__trk_count(old->kind, 4, (uint64_t)0 - old->bytes);
    }
}

static void memobs__trk_alloc(const void *ptr, uint64_t bytes, unsigned kind, int device, const void *stream,
                              const char *tag, void *const *cst, int nc) {
    memobs__trk_t *t = &MEMOBS__TRK;
    memobs__trk_stripe_t *st;
    memobs__alloc_t old;
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    uint32_t home, hole = 0, trace = MEMOBS_NO_TRACE, i, mask;
    uint64_t now;
    memobs__esc_res_t r, rold;
    int at, full = 0, dup = 0, fit, out = 0;
    if (kind >= MEMOBS_MEM_KINDS) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ALLOC_BAD_KIND].v, 1u);
        memobs__warn_once(MEMOBS__W_TRK_BAD, "tracked allocation with kind %u, which is not a memobs_mem_kind_t; "
                          "ignored (counted)", kind);
        return;
    }
    if (!ptr) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ALLOC_NULL].v, 1u);
        memobs__warn_once(MEMOBS__W_TRK_NULL, "tracked allocation of a NULL pointer (%llu bytes); ignored (counted)",
                          (unsigned long long)bytes);
        return;
    }
    if (memobs__too_big(bytes, 0, "a tracked allocation")) return;
    if (!MEMOBS__LOAD(&t->used.v)) MEMOBS__STORE(&t->used.v, 1u);
    if (bytes == 0) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ALLOC_ZERO].v, 1u);
        memobs__warn_once(MEMOBS__W_TRK_ZERO, "tracked allocation of 0 bytes at %p; tracked (counted)", ptr);
    }
    if (device < 0) device = (kind == MEMOBS_MEM_DEVICE || kind == MEMOBS_MEM_MANAGED) ? memobs__tls.device : -1;
    memobs__trk_count(kind, 0, 1u);
    memobs__trk_count(kind, 2, bytes);
    st = memobs__trk_stripe(addr, &home);
    if (memobs__tls.busy || !memobs__trk_ready()) {
        /* busy: from inside memobs' own MEMOBS_MALLOC or report; no table */
        memobs__esc_change(st, kind, device, (int64_t)bytes, &r);
        full = 1;
    } else {
        trace = memobs__trace_intern(tag, cst, nc);
        now = memobs__coarse_ns();
        /* Accounted before it is in the table (under the same lock, or
           before it), so a free on another thread can never take away
           bytes that were not added. */
        memobs__spin_lock(&st->lock);
        if (MEMOBS__UNLIKELY(!memobs__esc_try(kind, device, (int64_t)bytes, &r))) {
            memobs__spin_unlock(&st->lock);
            memobs__esc_slow(kind, device, (int64_t)bytes, &r);
            memobs__spin_lock(&st->lock);
        }
        at = memobs__trk_find(st, home, addr, &hole);
        mask = st->mask;
        if (at >= 0) {
            dup = 1;
            old = st->slot[at];
            hole = (uint32_t)at;
            out = memobs__trk_out(&old, &rold);
        } else if (memobs__trk_room(st)) {
            if (st->mask != mask) (void)memobs__trk_find(st, home, addr, &hole); /* resized */
            st->n++;
        } else {
            full = 1;
            /* Its free must not look like a double free of an older block. */
            for (i = 0; i < MEMOBS__FREED_RING; i++)
                if (st->freed[i] == addr) st->freed[i] = 0;
        }
        if (!full) {
            memobs__alloc_t *e = &st->slot[hole];
            e->addr = addr;
            e->bytes = bytes;
            e->time_ns = now;
            e->stream = stream;
            e->trace = trace;
            e->device = (int16_t)(device < -1 ? -1 : device > 32767 ? 32767 : device);
            e->kind = (uint8_t)kind;
            e->phase = (uint8_t)memobs__tls.phase;
        }
        fit = st->mask != mask && memobs__trk_over(); /* a table grew */
        memobs__spin_unlock(&st->lock);
        if (fit) memobs__trk_fit();
        if (dup) memobs__att_freed(old.addr); /* the old block's request holds it no more */
        if (!full && MEMOBS__UNLIKELY(memobs__tls.req != 0)) memobs__att_alloc(addr, bytes);
        if (dup && (old.phase & MEMOBS__PENDING)) {
            memobs__trk_retire(&old, &rold, out); /* stream-ordered reuse of a pending block */
        } else if (dup) {
            /* The allocator reused an address whose free we never saw. */
            memobs__trk_retire(&old, &rold, out);
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_ALLOC_DUP].v, 1u);
            memobs__warn_once(MEMOBS__W_TRK_DUP, "allocation at %p tracked while already live (a missed free?); the "
                              "old record is counted as freed", ptr);
        }
        /* After the old block's free events: the snapshot's history. */
        if (MEMOBS__UNLIKELY(kind == MEMOBS_MEM_DEVICE) && !full && MEMOBS__TSN_ON())
            memobs__tsn_push(device, MEMOBS__TSN_ALLOC, addr, bytes, stream, trace);
    }
    if (full) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_UNTRACKED_ALLOCS].v, 1u);
        memobs__add_sat_atomic(&memobs__g.st[MEMOBS__ST_UNTRACKED_BYTES], bytes);
        MEMOBS__ADD(&t->untracked_live.v, 1u);
        memobs__warn_once(MEMOBS__W_TRK_FULL, "allocation table full (MEMOBS_TRACK_CAPACITY=%u) or unavailable; "
                          "further allocations are counted in the totals but not tracked", (unsigned)t->capacity);
    }
    if (MEMOBS__LOAD(&memobs__tl_on.v)) memobs__tl_track(addr, bytes, kind, device, trace, memobs__tls.phase, 0, &r);
    /* After the insert, so the report shows the block that made the peak.
       Only a new maximum of the device can pass its report threshold
       (that is above the maximum: see memobs__peak_arm). */
    if (r.dev_peak) memobs__peak_check(device, r.dev_now, r.dev_before, trace);
    if (r.dev_peak) memobs__sl_peak(device, r.dev_now, r.dev_before, trace);
}

/* on: memobs is switched on; when off, only a tracked block is retired and
   nothing else is counted. */
enum { MEMOBS__FREE_NOW, MEMOBS__FREE_PENDING, MEMOBS__FREE_SETTLED };

/* on: memobs is switched on; when off, only a tracked block is retired and
   nothing else is counted. how: a free, a pending mark, or a settle (which
   only ever removes a pending record, silently); or MEMOBS__MARK/UNMARK/
   COUNT (see memobs__track_mark). Returns 1 where MEMOBS__MARK/UNMARK
   changed a record, else 0. */
static int memobs__trk_free_how(const void *ptr, int on, int how) {
    memobs__trk_t *t = &MEMOBS__TRK;
    memobs__trk_stripe_t *st;
    memobs__alloc_t old;
    uint64_t addr = (uint64_t)(uintptr_t)ptr, u;
    uint32_t home, hole, i;
    memobs__esc_res_t r;
    int at, twice = 0, fit, out;
    if (!ptr) {
        if (how == MEMOBS__FREE_NOW || how == MEMOBS__FREE_PENDING || how == MEMOBS__COUNT)
            MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_FREE_NULL].v, 1u);
        return 0;
    }
    if (MEMOBS__LOAD(&t->ready.v) == 1 && !memobs__tls.busy) {
        st = memobs__trk_stripe(addr, &home);
        memobs__spin_lock(&st->lock);
        at = memobs__trk_find(st, home, addr, &hole);
        if (how == MEMOBS__MARK || how == MEMOBS__UNMARK) {
            int pend = at >= 0 && (st->slot[at].phase & MEMOBS__PENDING) != 0;
            if (at < 0 || pend == (how == MEMOBS__MARK)) {
                memobs__spin_unlock(&st->lock);
                return 0;
            }
            st->slot[at].phase = (uint8_t)(how == MEMOBS__MARK ? st->slot[at].phase | MEMOBS__PENDING
                                                                : st->slot[at].phase & ~MEMOBS__PENDING);
            old = st->slot[at];
            memobs__spin_unlock(&st->lock);
            if (old.kind == MEMOBS_MEM_DEVICE && how == MEMOBS__MARK && MEMOBS__TSN_ON())
                memobs__tsn_push(old.device, MEMOBS__TSN_FREE_REQ, old.addr, old.bytes, old.stream, old.trace);
            else if (old.kind == MEMOBS_MEM_DEVICE && how == MEMOBS__UNMARK && MEMOBS__TSN_EVER())
                memobs__tsn_unrequest(old.device, old.addr);
            memobs__trk_count(old.kind, 3, how == MEMOBS__MARK ? 1u : (uint64_t)-1);
            memobs__trk_count(old.kind, 4, how == MEMOBS__MARK ? old.bytes : (uint64_t)0 - old.bytes);
            return 1;
        }
        if (how == MEMOBS__COUNT) at = -1; /* it was not tracked when its free began */
        if (at >= 0 && how == MEMOBS__FREE_PENDING && !(st->slot[at].phase & MEMOBS__PENDING)) {
            st->slot[at].phase = (uint8_t)(st->slot[at].phase | MEMOBS__PENDING);
            old = st->slot[at];
            memobs__spin_unlock(&st->lock);
            if (old.kind == MEMOBS_MEM_DEVICE && MEMOBS__TSN_ON())
                memobs__tsn_push(old.device, MEMOBS__TSN_FREE_REQ, old.addr, old.bytes, old.stream, old.trace);
            memobs__trk_count(old.kind, 3, 1u);
            memobs__trk_count(old.kind, 4, old.bytes);
            return 0;
        }
        if (at >= 0 && (how == MEMOBS__FREE_NOW || (how == MEMOBS__FREE_SETTLED && (st->slot[at].phase & MEMOBS__PENDING)))) {
            out = memobs__trk_out(&st->slot[at], &r); /* from the slot: not from old's copy just stored */
            old = st->slot[at];
            memobs__trk_remove(st, (uint32_t)at);
            st->freed[st->ring_pos++ % MEMOBS__FREED_RING] = addr;
            fit = memobs__trk_slack(st);
            memobs__spin_unlock(&st->lock);
            memobs__att_freed(addr);
            memobs__trk_retire(&old, &r, out);
            if (fit) memobs__trk_fit();
            return 0;
        }
        if (how == MEMOBS__FREE_SETTLED) {
            memobs__spin_unlock(&st->lock);
            return 0; /* retired already by a re-allocation of its address */
        }
        twice = at >= 0; /* marked pending twice */
        for (i = 0; i < MEMOBS__FREED_RING; i++)
            if (st->freed[i] == addr) twice = 1;
        memobs__spin_unlock(&st->lock);
    }
    if (!on || how == MEMOBS__FREE_SETTLED || how == MEMOBS__MARK || how == MEMOBS__UNMARK) return 0;
    if (twice) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_FREE_DOUBLE].v, 1u);
        memobs__warn_once(MEMOBS__W_TRK_DOUBLE, "double free of %p (freed before and not allocated since); ignored "
                          "(counted)", ptr);
        return 0;
    }
    /* Not in the table: while allocations made with the table full are
       live, take it for one of them (its size is unknown). */
    u = MEMOBS__LOAD(&t->untracked_live.v);
    while (u > 0 && !MEMOBS__CAS(&t->untracked_live.v, &u, u - 1)) {
    }
    if (u > 0) {
        MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_UNTRACKED_FREES].v, 1u);
        return 0;
    }
    MEMOBS__ADD(&memobs__g.st[MEMOBS__ST_FREE_UNKNOWN].v, 1u);
    memobs__warn_once(MEMOBS__W_TRK_UNKNOWN, "free of %p, which is not a tracked live allocation; ignored (counted)",
                      ptr);
    return 0;
}

/* Nothing tracked holds bytes: one cache line read (0-byte blocks do not
   count; freed while memobs is off, they stay listed). */
static int memobs__trk_idle(void) {
    memobs__esc_t *E = &MEMOBS__ESC;
    if (!MEMOBS__LOAD(&MEMOBS__TRK.used.v)) return 1;
    /* With no change since the last fold and no lease out, g is exact.
       Else switched on, a lookup is cheaper than a fold; switched off,
       nothing new is tracked, so after one fold this stays two loads. */
    if (__atomic_load_n(&E->dirty.v, __ATOMIC_SEQ_CST) != 0 || MEMOBS__LOAD(&E->leased.v)) {
        if (MEMOBS__LOAD(&memobs__on.v)) return 0;
        memobs__spin_lock(&E->lock);
        memobs__esc_exact(-1);
        memobs__spin_unlock(&E->lock);
    }
    return MEMOBS__LOAD(&E->held.v) == 0;
}

/* noinline: the stack starts at this function's return address. */
__attribute__((noinline)) void memobs_track_alloc_full(const void *ptr, uint64_t bytes, memobs_mem_kind_t kind,
                                                       int device, const void *stream, const char *tag, int depth) {
    void *cst[MEMOBS_MAX_STACK];
    int nc = 0;
    if (!MEMOBS__LOAD(&memobs__on.v) || memobs__trk_nested()) return;
    if (depth < 0) depth = (int)MEMOBS__LOAD(&MEMOBS__TRK.depth.v);
    if (depth > 0 && ptr) nc = memobs__capture_c(cst, depth, __builtin_return_address(0), MEMOBS__FRAME());
    memobs__trk_alloc(ptr, bytes, (unsigned)kind, device, stream, tag, cst, nc);
}

void memobs_track_free(const void *ptr) {
    /* Switched off at run time, frees still retire what was tracked before,
       so those blocks do not turn into leaks; with nothing live it is one
       cache line read. */
    int on = MEMOBS__LOAD(&memobs__on.v) != 0;
    if ((!on && (!ptr || memobs__tls.in || memobs__trk_idle())) || memobs__trk_nested()) return;
    (void)memobs__trk_free_how(ptr, on, MEMOBS__FREE_NOW);
}

void memobs_track_free_pending(const void *ptr) {
    int on = MEMOBS__LOAD(&memobs__on.v) != 0;
    if ((!on && (!ptr || memobs__tls.in || memobs__trk_idle())) || memobs__trk_nested()) return;
    (void)memobs__trk_free_how(ptr, on, MEMOBS__FREE_PENDING);
}

void memobs_track_free_settled(const void *ptr) {
    if (ptr && !memobs__trk_nested()) (void)memobs__trk_free_how(ptr, 1, MEMOBS__FREE_SETTLED);
}

int memobs__track_mark(const void *ptr, int how) {
    int on = MEMOBS__LOAD(&memobs__on.v) != 0;
    if (memobs__trk_nested()) return 0;
    if (how == MEMOBS__COUNT) return on ? memobs__trk_free_how(ptr, on, how) : 0;
    if (how != MEMOBS__MARK && how != MEMOBS__UNMARK) return 0;
    return memobs__trk_idle() && how == MEMOBS__MARK ? 0 : memobs__trk_free_how(ptr, on, how);
}

void memobs_set_device(int device) { memobs__tls.device = device < 0 ? 0 : device; }

uint64_t memobs_get_device_bytes(int device, uint64_t *max_bytes) {
    uint64_t cur[MEMOBS__ACCTS];
    if (device < 0 || device >= MEMOBS_MAX_DEVICES) {
        if (max_bytes) *max_bytes = 0;
        return 0;
    }
    memobs__esc_read(cur);
    if (max_bytes) *max_bytes = memobs__esc_peak(MEMOBS__ACCT_DEV + (unsigned)device);
    return cur[MEMOBS__ACCT_DEV + (unsigned)device];
}
int memobs_get_device(void) { return memobs__tls.device; }

int memobs_track_set_callstack(int depth) {
    if (depth < 0) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_track_set_callstack(%d): depth must be >= 0; unchanged", depth);
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    MEMOBS__STORE(&MEMOBS__TRK.depth.v, (uint32_t)(depth > MEMOBS_MAX_STACK ? MEMOBS_MAX_STACK : depth));
    return MEMOBS_OK;
}

int memobs_track_set_unwinder(memobs_unwind_t unwinder) {
    int u = (int)unwinder;
    if (u != MEMOBS_UNWIND_BACKTRACE && u != MEMOBS_UNWIND_FP) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_track_set_unwinder(%d): not a memobs_unwind_t; unchanged", u);
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    memobs__unwind_check((uint32_t)u);
    return (int)MEMOBS__XCHG(&MEMOBS__TRK.unwind.v, (uint32_t)u);
}

int memobs_track_set_tag_provider(const memobs_tag_provider_t *p) {
    memobs__trk_t *t = &MEMOBS__TRK;
    int rc = MEMOBS_OK;
    if (p && (!p->capture || !p->format)) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_track_set_tag_provider: capture and format are required; unchanged");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    memobs__mutex_lock(&t->trace_lock);
    if (!p) {
        __atomic_store_n(&t->prov_on.v, 0u, __ATOMIC_RELEASE);
    } else if (t->nprov >= MEMOBS__MAX_PROVIDERS) {
        rc = MEMOBS_ERR_FULL;
    } else {
        t->prov[t->nprov] = *p;
        if (!t->prov[t->nprov].title) t->prov[t->nprov].title = "Stack Trace";
        t->nprov++;
        __atomic_store_n(&t->prov_on.v, t->nprov, __ATOMIC_RELEASE);
    }
    memobs__mutex_unlock(&t->trace_lock);
    if (rc == MEMOBS_ERR_FULL)
        memobs__log(MEMOBS_LOG_WARN, "memobs_track_set_tag_provider: %d providers were installed already; unchanged",
                    MEMOBS__MAX_PROVIDERS);
    return rc;
}

/* Caller holds memobs__g.lock (or runs start-up). The first report comes
   when a device passes its maximum so far by the growth fraction. */
static void memobs__peak_arm(void) {
    memobs__trk_t *t = &MEMOBS__TRK;
    unsigned d;
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        uint64_t m = MEMOBS__LOAD(&t->esc.peak[MEMOBS__ACCT_DEV + d].v);
        MEMOBS__STORE(&t->dev[d].rep.v, m);
        MEMOBS__STORE(&t->dev[d].next.v, memobs__peak_next(m));
    }
}

int memobs_track_set_peak_report(const char *dest, double growth, uint64_t min_bytes) {
    memobs__trk_t *t = &MEMOBS__TRK;
    int k = 0; /* the rule of the output variables, but "" is an error */
    if (dest && *dest && strlen(dest) < sizeof t->peak_dest) k = memobs__dest_parse("", dest, sizeof t->peak_dest);
    else if (dest) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_track_set_peak_report: destination is empty or too long; unchanged");
        return MEMOBS_ERR_INVALID;
    }
    if (!(growth >= 0.0 && growth <= 1000.0)) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_track_set_peak_report: growth %g is not in [0, 1000]; unchanged", growth);
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    MEMOBS__STORE(&t->peak_on.v, 0u);
    if (k) {
        strcpy(t->peak_dest, k == 2 ? "stderr" : k == 1 ? "stdout" : dest);
        MEMOBS__STORE(&t->peak_growth_ppm.v, (uint64_t)(growth * 1e6 + 0.5));
        MEMOBS__STORE(&t->peak_min.v, min_bytes);
        memobs__peak_arm();
        MEMOBS__STORE(&t->peak_on.v, 1u);
    }
    pthread_mutex_unlock(&memobs__g.lock);
    return MEMOBS_OK;
}

/* Tracked live allocations now (a sum of the stripes' counts). */
static size_t memobs__trk_live(void) {
    size_t n = 0;
    unsigned i;
    for (i = 0; i < MEMOBS__TRK_STRIPES; i++) {
        memobs__spin_lock(&MEMOBS__TRK.stripe[i].lock);
        n += MEMOBS__TRK.stripe[i].n;
        memobs__spin_unlock(&MEMOBS__TRK.stripe[i].lock);
    }
    return n;
}

/* Copies live allocations (at most max) into out; returns how many are
   live. Takes each stripe lock in turn: a consistent view per stripe. */
static size_t memobs__trk_snapshot(memobs__alloc_t *out, size_t max) {
    size_t n = 0;
    uint32_t i, j;
    if (MEMOBS__LOAD(&MEMOBS__TRK.ready.v) != 1) return 0;
    for (i = 0; i < MEMOBS__TRK_STRIPES; i++) {
        memobs__trk_stripe_t *st = &MEMOBS__TRK.stripe[i];
        memobs__spin_lock(&st->lock);
        for (j = 0; st->slot && j <= st->mask; j++) {
            if (!st->slot[j].addr) continue;
            if (n < max) out[n] = st->slot[j];
            n++;
        }
        memobs__spin_unlock(&st->lock);
    }
    return n;
}

size_t memobs_get_allocations(memobs_alloc_info_t *out, size_t max) {
    memobs__alloc_t *a;
    size_t n, i;
    if (!out && max) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return 0;
    }
    if (MEMOBS__LOAD(&MEMOBS__TRK.ready.v) != 1) return 0;
    if (max == 0) return memobs__trk_live();
    if (max > MEMOBS__TRK.capacity) max = MEMOBS__TRK.capacity; /* never more live than that */
    a = (memobs__alloc_t *)MEMOBS_MALLOC(max * sizeof *a);
    if (!a) return 0;
    n = memobs__trk_snapshot(a, max);
    for (i = 0; i < n && i < max; i++) {
        out[i].ptr = (const void *)(uintptr_t)a[i].addr;
        out[i].bytes = a[i].bytes;
        out[i].kind = (memobs_mem_kind_t)a[i].kind;
        out[i].device = a[i].device;
        out[i].phase = (memobs_phase_t)(a[i].phase & ~MEMOBS__PENDING);
        out[i].pending_free = (a[i].phase & MEMOBS__PENDING) != 0;
        out[i].stream = a[i].stream;
        out[i].time_ns = a[i].time_ns;
        out[i].trace = a[i].trace;
    }
    MEMOBS_FREE(a);
    return n;
}

/* ======================================================================== */
/* Private: timeline                                             >>timeline */
/* ======================================================================== */

/* The clock. Timeline events are stamped with memobs__ticks(): the TSC
   (rdtsc; x86-64 Linux) where the kernel says it is stable, that is, where
   its clocksource is "tsc" or the CPU has constant_tsc and nonstop_tsc (a
   TSC that ticks at one rate through every P- and C-state, which the
   kernel checks agrees across CPUs), else CLOCK_MONOTONIC's nanoseconds.
   MEMOBS_CLOCK=monotonic forces the latter, =tsc the TSC wherever there is
   one. Ticks become CLOCK_MONOTONIC nanoseconds (memobs_now_ns's timeline,
   which every other clock of memobs is on) when they are converted: from
   an anchor (ta, na), ns = na + (t - ta) * slope for t >= ta, and with the
   slope before the last refinement for t < ta. The first anchor is the
   closest (tick, ns) reading of four at set-up; the first conversion waits
   out what is left of 2 ms after it and measures the slope over that span
   (two readings 2 ms apart: about 1e-5). A conversion at least a second
   after the last refinement refines it: the rate over the whole span since
   set-up, plus a correction that takes the difference between the
   conversion and CLOCK_MONOTONIC to zero over the next second (at most
   500 ppm, NTP's largest slew), anchored at the old conversion of now: the
   conversion stays continuous, and each slope being positive, monotonic.
   Readers take the anchor under a sequence number; refinements hold
   memobs__clk.lock. */
#if defined(__x86_64__) && defined(__linux__)
#define MEMOBS__HAVE_TSC 1
static inline uint64_t memobs__rdtsc(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}
#endif
/* Where the kernel says what the TSC is worth (tests point them elsewhere). */
#ifndef MEMOBS__CLOCKSOURCE_PATH
#define MEMOBS__CLOCKSOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"
#endif
#ifndef MEMOBS__CPUINFO_PATH
#define MEMOBS__CPUINFO_PATH "/proc/cpuinfo"
#endif
#define MEMOBS__CLK_FIRST_NS 2000000u    /* the first slope's span */
#define MEMOBS__CLK_REFINE_NS 1000000000u /* refinements: at most one a second */

static pthread_once_t memobs__clk_once = PTHREAD_ONCE_INIT;
static memobs__u32_t memobs__clk_tsc; /* 1: ticks are the TSC's; set once, before any tick is taken */
static struct {
    pthread_mutex_t lock;  /* refinements */
    memobs__u32_t seq;     /* odd while the anchor changes */
    memobs__u64_t ta, na;  /* the anchor */
    memobs__u64_t slope, back; /* ns per tick from the anchor on, and before it (a double's bits) */
    uint64_t t0, n0;       /* the first reading */
    uint64_t next_ns;      /* no refinement before this time; 0: no slope yet */
    char why[128];         /* why this source */
} memobs__clk;

static inline uint64_t memobs__ticks(void) {
#ifdef MEMOBS__HAVE_TSC
    if (MEMOBS__LOAD(&memobs__clk_tsc.v)) return memobs__rdtsc();
#endif
    return memobs_now_ns();
}

static uint64_t memobs__dbits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double memobs__bitsd(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The reading of CLOCK_MONOTONIC between the two closest ticks of 4 tries. */
static void memobs__clk_pair(uint64_t *t, uint64_t *n) {
    uint64_t best = ~0ull;
    int i;
    *t = *n = 0; /* set by the first try; said so for gcc's flow analysis once this is inlined */
    for (i = 0; i < 4; i++) {
        uint64_t a = memobs__ticks(), m = memobs_now_ns(), b = memobs__ticks();
        if (b - a < best) {
            best = b - a;
            *t = a + (b - a) / 2;
            *n = m;
        }
    }
}

#ifdef MEMOBS__HAVE_TSC
/* 1 if the word w is in line as a whole (space-separated) word. */
static int memobs__has_word(const char *line, const char *w) {
    size_t k = strlen(w);
    const char *p = line;
    while ((p = strstr(p, w)) != NULL) {
        if ((p == line || p[-1] == ' ' || p[-1] == '\t') && (p[k] == ' ' || p[k] == '\n' || p[k] == 0)) return 1;
        p += k;
    }
    return 0;
}

/* 1 when the kernel vouches for the TSC; why gets the reason either way. */
static int memobs__clk_tsc_stable(char *why, size_t len) {
    char buf[8192];
    FILE *f;
    int cst = 0, nst = 0, in_flags = 0;
#if defined(__linux__)
    const char *rd = "re"; /* close-on-exec (glibc, musl): a fork() and exec meanwhile inherits nothing */
#else
    const char *rd = "r";
#endif
    if ((f = fopen(MEMOBS__CLOCKSOURCE_PATH, rd)) != NULL) {
        int tsc = fgets(buf, sizeof buf, f) && strncmp(buf, "tsc", 3) == 0 && (buf[3] == '\n' || buf[3] == 0);
        fclose(f);
        if (tsc) {
            snprintf(why, len, "the kernel's clocksource is tsc");
            return 1;
        }
    }
    if ((f = fopen(MEMOBS__CPUINFO_PATH, rd)) != NULL) {
        while (fgets(buf, sizeof buf, f)) {
            size_t k = strlen(buf);
            if (!in_flags && strncmp(buf, "flags", 5) != 0) continue;
            in_flags = 1; /* the first CPU's flags line, read in pieces if long */
            cst |= memobs__has_word(buf, "constant_tsc");
            nst |= memobs__has_word(buf, "nonstop_tsc");
            if (k && buf[k - 1] == '\n') break;
        }
        fclose(f);
    }
    if (cst && nst) {
        snprintf(why, len, "the CPU has constant_tsc and nonstop_tsc");
        return 1;
    }
    snprintf(why, len, "the kernel does not vouch for the TSC (clocksource not tsc; constant_tsc %s, nonstop_tsc %s)",
             cst ? "yes" : "no", nst ? "yes" : "no");
    return 0;
}
#endif

static void memobs__clk_setup(void) {
    const char *s = getenv("MEMOBS_CLOCK");
    int want = 0, tsc = 0; /* want: 0 auto, 1 tsc, 2 monotonic */
    uint64_t t, n;
    if (s && !memobs__streq_nocase(s, "auto")) {
        if (memobs__streq_nocase(s, "tsc")) want = 1;
        else if (memobs__streq_nocase(s, "monotonic") || memobs__streq_nocase(s, "clock_gettime")) want = 2;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_CLOCK='%s' is not auto, tsc or monotonic; using auto", s);
    }
#ifdef MEMOBS__HAVE_TSC
    if (want == 2) snprintf(memobs__clk.why, sizeof memobs__clk.why, "MEMOBS_CLOCK=monotonic");
    else if (want == 1) snprintf(memobs__clk.why, sizeof memobs__clk.why, "MEMOBS_CLOCK=tsc");
    else tsc = memobs__clk_tsc_stable(memobs__clk.why, sizeof memobs__clk.why);
    if (want == 1) tsc = 1;
#else
    snprintf(memobs__clk.why, sizeof memobs__clk.why, "no TSC reader for this machine");
    if (want == 1) memobs__log(MEMOBS_LOG_WARN, "MEMOBS_CLOCK=tsc: no TSC reader for this machine; using clock_gettime");
#endif
    MEMOBS__STORE(&memobs__clk_tsc.v, (uint32_t)tsc);
    memobs__clk_pair(&t, &n);
    memobs__clk.t0 = t;
    memobs__clk.n0 = n;
    MEMOBS__STORE(&memobs__clk.ta.v, t);
    MEMOBS__STORE(&memobs__clk.na.v, n);
    MEMOBS__STORE(&memobs__clk.slope.v, memobs__dbits(1.0)); /* ticks are ns until calibrated */
    MEMOBS__STORE(&memobs__clk.back.v, memobs__dbits(1.0));
}

static void memobs__clk_init(void) { pthread_once(&memobs__clk_once, memobs__clk_setup); }

static uint64_t memobs__clk_conv(uint64_t t, uint64_t ta, uint64_t na, double slope, double back) {
    double x;
    if (t >= ta) return na + (uint64_t)((double)(t - ta) * slope);
    x = (double)(ta - t) * back;
    return x < (double)na ? na - (uint64_t)x : 0;
}

/* The anchor and slopes, consistent with each other. */
static void memobs__clk_get(uint64_t *ta, uint64_t *na, double *slope, double *back) {
    for (;;) {
        uint32_t s1 = __atomic_load_n(&memobs__clk.seq.v, __ATOMIC_ACQUIRE);
        *ta = __atomic_load_n(&memobs__clk.ta.v, __ATOMIC_ACQUIRE);
        *na = __atomic_load_n(&memobs__clk.na.v, __ATOMIC_ACQUIRE);
        *slope = memobs__bitsd(__atomic_load_n(&memobs__clk.slope.v, __ATOMIC_ACQUIRE));
        *back = memobs__bitsd(__atomic_load_n(&memobs__clk.back.v, __ATOMIC_ACQUIRE));
        if (!(s1 & 1u) && MEMOBS__LOAD(&memobs__clk.seq.v) == s1) return;
        sched_yield();
    }
}

/* Calibrates (first call: waits out the rest of 2 ms) and refines; a no-op
   for clock_gettime ticks and within a second of the last refinement. */
static void memobs__clk_sync(void) {
    uint64_t t, n, ta, na, c;
    double slope, back, rate, lo, hi;
    memobs_init(); /* the lock */
    memobs__clk_init();
    if (!MEMOBS__LOAD(&memobs__clk_tsc.v)) return;
    pthread_mutex_lock(&memobs__clk.lock);
    n = memobs_now_ns();
    if (memobs__clk.next_ns && n < memobs__clk.next_ns) {
        pthread_mutex_unlock(&memobs__clk.lock);
        return;
    }
    while (memobs_now_ns() - memobs__clk.n0 < MEMOBS__CLK_FIRST_NS) sched_yield();
    memobs__clk_pair(&t, &n);
    rate = t > memobs__clk.t0 ? (double)(n - memobs__clk.n0) / (double)(t - memobs__clk.t0) : 1.0;
    memobs__clk_get(&ta, &na, &slope, &back);
    if (!memobs__clk.next_ns) { /* the first slope */
        back = slope = rate;
        ta = t;
        na = n;
    } else {
        c = memobs__clk_conv(t, ta, na, slope, back);
        back = slope;
        /* rate + (n - c) ns spread over the next second's ticks */
        slope = rate + ((double)(int64_t)(n - c) * rate) / (double)MEMOBS__CLK_REFINE_NS;
        lo = rate * (1.0 - 500e-6);
        hi = rate * (1.0 + 500e-6);
        slope = slope < lo ? lo : slope > hi ? hi : slope;
        ta = t;
        na = c;
    }
    MEMOBS__STORE(&memobs__clk.seq.v, MEMOBS__LOAD(&memobs__clk.seq.v) + 1u);
    __atomic_store_n(&memobs__clk.ta.v, ta, __ATOMIC_RELEASE);
    __atomic_store_n(&memobs__clk.na.v, na, __ATOMIC_RELEASE);
    __atomic_store_n(&memobs__clk.slope.v, memobs__dbits(slope), __ATOMIC_RELEASE);
    __atomic_store_n(&memobs__clk.back.v, memobs__dbits(back), __ATOMIC_RELEASE);
    __atomic_store_n(&memobs__clk.seq.v, MEMOBS__LOAD(&memobs__clk.seq.v) + 1u, __ATOMIC_RELEASE);
    memobs__clk.next_ns = n + MEMOBS__CLK_REFINE_NS;
    pthread_mutex_unlock(&memobs__clk.lock);
}

/* Ticks to CLOCK_MONOTONIC ns with the current anchor (no refinement). */
static uint64_t memobs__clk_ns(uint64_t t) {
    uint64_t ta, na;
    double slope, back;
    if (!MEMOBS__LOAD(&memobs__clk_tsc.v)) return t;
    memobs__clk_get(&ta, &na, &slope, &back);
    return memobs__clk_conv(t, ta, na, slope, back);
}

uint64_t memobs_ticks(void) {
    memobs__clk_init();
    return memobs__ticks();
}

uint64_t memobs_ticks_to_ns(uint64_t ticks) {
    memobs__clk_sync();
    return memobs__clk_ns(ticks);
}

const char *memobs_clock_source(void) {
    memobs__clk_init();
    return MEMOBS__LOAD(&memobs__clk_tsc.v) ? "tsc" : "clock_gettime";
}

const char *memobs_clock_reason(void) {
    memobs__clk_init();
    return memobs__clk.why;
}

double memobs_clock_ns_per_tick(void) {
    uint64_t ta, na;
    double slope, back;
    memobs__clk_sync();
    memobs__clk_get(&ta, &na, &slope, &back);
    return MEMOBS__LOAD(&memobs__clk_tsc.v) ? slope : 1.0;
}

/* The timeline: per-thread chunks of one pool.
   The pool is the configured number of slots, cut into chunks of C slots
   (C: a 64th of the capacity rounded down to a power of two, 1 to 1024; the
   capacity is rounded down to a multiple of C). A thread writes its
   events into the one chunk it owns, alone: a push is a time stamp and a
   few plain stores (the slot's sequence number odd, the fields, the
   sequence number even; release stores, which are plain moves on x86), no
   lock, no atomic read-modify-write, no cache line that another thread
   writes. When its chunk is full the thread puts it at the tail of the
   pool's queue of finished chunks and takes a fresh one or, none being
   left, the chunk at the head of the queue (the oldest finished one, of
   any thread), whose events are dropped and counted (per thread); that
   takes the pool's spin lock once every C events. When a thread exits, its
   chunk joins the queue if full, else a stack of chunks with room: the
   next take of any thread continues such a chunk where it stopped (same
   generation, so what is there stays readable) before a fresh one or the
   oldest finished one. So the pool holds the newest events of the process
   whatever thread made them, dropping the oldest a chunk at a time, less
   the unwritten part of each recording thread's chunk; thousands of
   short-lived threads fill chunks between them, a few events each. A
   chunk's events are counted per owner (segments: first slot and thread,
   written by the take under the pool lock), for the per-thread figures.
   A thread that finds every chunk owned by a live thread (more threads
   recording at once than chunks: 64 at the default 65536 events) drops
   its events, counted. Events of a continued chunk sort by time like all
   others; their tie-break order is the chunk's first take.

   Readers copy a slot between two reads of its sequence number and keep it
   only if both are the same even number of the chunk's generation (a
   chunk taken again starts a new generation, so a copy never mixes two
   lives of a slot, nor shows a dropped event); the fields are stored with
   release and loaded with acquire, so a reader that sees a field of a
   newer event sees that event's odd sequence number in its second read,
   and this is exact under ThreadSanitizer too. The writer sorts the copies
   by time (ties by chunk and slot): the threads' chunks merged.

   A new pool (memobs_timeline_start) gets a new epoch; memobs__tl_on
   holds the epoch (0: off). A thread whose chunk is of an older epoch
   takes a chunk of the new pool at its next push. The old pool is freed
   once no push can be inside it: a push sets its shard's tl_busy, then
   loads the epoch; enable publishes the new epoch, runs membarrier() (a
   full barrier on every thread of the process: a push either loads the
   new epoch or has its tl_busy seen), then waits for each shard's tl_busy
   to be 0. Where membarrier() is missing, the old pool is kept (said
   once). The state is a struct of its own rather than a part of memobs__g:
   the timeline is optional and its state is only ever touched here. */
#define MEMOBS__TL_DEFAULT 65536
#define MEMOBS__TL_MAX ((uint64_t)1 << 26)
#define MEMOBS__TL_CHUNK 1024   /* events per chunk, at most */
#define MEMOBS__TL_LANES 16     /* tracks per direction for overlapping device-timed copies */
#define MEMOBS__TL_THREADS 256  /* phase tracks and drop counts; later threads share the last one */
#define MEMOBS__TL_HOST_NS 1000 /* width of a host-side record's slice, at most */
#define MEMOBS__TL_TEXT 2048    /* trace text per allocation event */
#define MEMOBS__TL_TICKS (1u << 12) /* meta: ts is in ticks, not ns */

enum {
    MEMOBS__TL_XFER = 1,
    MEMOBS__TL_TIMED,
    MEMOBS__TL_ALLOC,
    MEMOBS__TL_FREE,
    MEMOBS__TL_PHASE,
    MEMOBS__TL_SAMPLE,
    MEMOBS__TL_REGION,
    MEMOBS__TL_MARK,
    MEMOBS__TL_COLL,
    MEMOBS__TL_PEER,
    MEMOBS__TL_PART
};
/* meta flags of XFER and TIMED: c holds the request id (RID), or the
   transfer's parts for its requests follow as PART events (SPLIT). */
#define MEMOBS__TL_RID (1u << 13)
#define MEMOBS__TL_SPLIT (1u << 14)

/* meta: type (bits 0-3), direction or kind (4-7), phase (8-11), ts in
   ticks (12), device + 1 (16-31), trace id or region id (32-63). a, b, c
   by type:
     XFER   bytes                  TIMED  bytes, device ns (ts: the report)
     ALLOC  ptr, bytes, live bytes of the kind after it (FREE the same)
     PHASE  timeline thread number SAMPLE value, -, series (a static string)
     REGION duration, timeline thread number, depth (ts: its begin)
     MARK   -, timeline thread number
     COLL   duration, bytes, sequence number (ts: its start, ns; the rest
            of meta: memobs__tl_coll)
     PEER   bytes, ns (meta: direction, phase, peer id)
     PART   a request's part of the SPLIT transfer before it: bytes,
            request id (ts: the transfer's tick; meta: direction, phase)
   XFER and TIMED keep c for the request they were made for (MEMOBS__TL_RID:
   the thread's binding, or memobs_request_xfer*'s one request).
   seq: the chunk's generation (bits 32-63), then 2i+1 while slot i is
   written and 2i+2 once it is (0: never written). */
typedef struct {
    uint64_t seq;
    uint64_t ts, a, b, c, meta;
} memobs__tl_slot_t;

typedef struct {
    uint64_t ts, a, b, c, meta, ticket;
} memobs__tl_ev_t;

enum { MEMOBS__TLC_FRESH, MEMOBS__TLC_OWNED, MEMOBS__TLC_DONE, MEMOBS__TLC_PART };

/* A chunk's header, a cache line of its own: the owner writes n. */
typedef struct {
    memobs__u32_t gen;     /* bumped each time the chunk is taken again (its events dropped) */
    memobs__u32_t n;       /* events written in this generation */
    uint32_t state;        /* MEMOBS__TLC_*, under the pool lock */
    memobs__u64_t order;   /* takes of the pool before this one: ties in time sort by it */
    uint32_t cap;          /* slots */
    uint32_t nseg;         /* owners in this generation (segments; pool lock) */
    void *owner;           /* the owner's shard (fork) */
    memobs__tl_slot_t *slot;
    uint32_t *seg;         /* per owner: first slot << 8 | its thread slot (memobs__tl_tslot) */
} __attribute__((aligned(64))) memobs__tl_chunk_t;

typedef struct {
    memobs__tl_chunk_t *chunk;
    uint32_t nchunks, csize; /* chunks, slots per chunk */
    uint32_t fresh;          /* chunks from here on were never taken */
    uint32_t *fifo;          /* finished chunks, oldest at fifo_head */
    uint32_t *part;          /* chunks left with room by a thread that exited (a stack) */
    uint32_t npart;
    uint64_t fifo_head, fifo_tail, takes;
    uint64_t dropped;        /* events of chunks taken again, pushes that found no chunk */
    uint64_t tdrop[MEMOBS__TL_THREADS]; /* the same by thread (the last: later threads) */
    void *raw;               /* the MEMOBS_MALLOC block holding all of it */
} memobs__tl_pool_t;

memobs__flag_t memobs__tl_on __attribute__((aligned(64))) = {0, {0}};
static __thread uint32_t memobs__tl_thread; /* 0 until the thread's first event */

static struct {
    pthread_mutex_t lock;    /* enable, stats, writers */
    memobs__u32_t pool_lock; /* spin lock: the pool's chunks, queue, drop counts, and `pool` */
    memobs__tl_pool_t *pool; /* NULL: off */
    uint32_t epoch;          /* the pool's epoch (pool_lock) */
    uint32_t epochs;         /* epochs given out (lock) */
    int mb;                  /* membarrier: 0 not tried yet, 1 registered, -1 none */
    memobs__u32_t threads;   /* timeline thread numbers given out */
    memobs__u64_t write_limit_ns; /* MEMOBS_TIMELINE_WRITE_S: a trace's write, at most; 0 = no limit */
} memobs__tl;

/* The calling thread's number on the timeline (1, 2, ... in order of its
   first event). */
static uint32_t memobs__tl_thread_no(void) {
    if (!memobs__tl_thread) memobs__tl_thread = MEMOBS__ADD(&memobs__tl.threads.v, 1u) + 1u;
    return memobs__tl_thread;
}

static unsigned memobs__tl_tslot(uint32_t thread) {
    return thread == 0 ? 0u : thread > MEMOBS__TL_THREADS ? MEMOBS__TL_THREADS - 1u : thread - 1u;
}

/* Pool lock held: the chunk joins the queue of finished chunks. */
static void memobs__tl_finish(memobs__tl_pool_t *p, memobs__tl_chunk_t *k) {
    k->state = MEMOBS__TLC_DONE;
    p->fifo[p->fifo_tail++ % p->nchunks] = (uint32_t)(k - p->chunk);
}

/* Pool lock held: the chunk of a thread that is gone joins the queue when
   full, else the stack of chunks with room, which the next take of any
   thread continues (so short-lived threads fill chunks between them). */
static void memobs__tl_leave(memobs__tl_pool_t *p, memobs__tl_chunk_t *k) {
    if (MEMOBS__LOAD(&k->n.v) >= k->cap) {
        memobs__tl_finish(p, k);
        return;
    }
    k->state = MEMOBS__TLC_PART;
    p->part[p->npart++] = (uint32_t)(k - p->chunk);
}

/* Pool lock held: adds the events of chunk k, n of them, by the thread
   slot of each owner, to per[] (MEMOBS__TL_THREADS counts). */
static void memobs__tl_by_thread(const memobs__tl_chunk_t *k, uint32_t n, uint64_t *per) {
    uint32_t j;
    for (j = 0; j < k->nseg; j++) {
        uint32_t from = k->seg[j] >> 8, to = j + 1 < k->nseg ? (uint32_t)(k->seg[j + 1] >> 8) : n;
        if (to > from) per[k->seg[j] & 0xffu] += to - from;
    }
}

/* The push's slow path: the calling thread's chunk is full, or of an
   older pool, or it has none. Finishes the old one, takes another: one
   with room left by a thread that exited (continued where it stopped, its
   events kept), else a fresh one, else the oldest finished one, dropping
   its events; NULL when the pool changed since the push read epoch ep (the
   event belongs to the old pool: not counted) or no chunk is free
   (counted). The slot to write next is then s->tl_i. */
static memobs__tl_chunk_t *memobs__tl_take(memobs__shard_t *s, uint32_t ep) {
    memobs__tl_pool_t *p;
    memobs__tl_chunk_t *k = NULL;
    uint32_t t = memobs__tl_thread_no(), n, i = 0;
    memobs__spin_lock(&memobs__tl.pool_lock);
    p = memobs__tl.pool;
    if (!p || memobs__tl.epoch != ep) {
        memobs__spin_unlock(&memobs__tl.pool_lock);
        return NULL;
    }
    if (s->tl_epoch == ep && s->tl_chunk) memobs__tl_finish(p, (memobs__tl_chunk_t *)s->tl_chunk);
    if (p->npart) {
        k = &p->chunk[p->part[--p->npart]];
        i = MEMOBS__LOAD(&k->n.v); /* the same generation: what is there stays valid */
    } else if (p->fresh < p->nchunks) {
        k = &p->chunk[p->fresh++];
    } else if (p->fifo_head != p->fifo_tail) {
        k = &p->chunk[p->fifo[p->fifo_head++ % p->nchunks]];
        n = MEMOBS__LOAD(&k->n.v);
        p->dropped += n;
        memobs__tl_by_thread(k, n, p->tdrop);
    }
    if (k) {
        if (!i) { /* a new generation */
            k->nseg = 0;
            MEMOBS__STORE(&k->n.v, 0u);
            MEMOBS__STORE(&k->order.v, p->takes++);
            n = MEMOBS__LOAD(&k->gen.v) + 1u;
            __atomic_store_n(&k->gen.v, n ? n : 1u, __ATOMIC_RELEASE);
        }
        k->seg[k->nseg++] = i << 8 | memobs__tl_tslot(t);
        k->state = MEMOBS__TLC_OWNED;
        k->owner = s;
    } else {
        p->dropped++;
        p->tdrop[memobs__tl_tslot(t)]++;
    }
    s->tl_chunk = k;
    s->tl_epoch = ep;
    s->tl_i = i;
    memobs__spin_unlock(&memobs__tl.pool_lock);
    return k;
}

static void memobs__tl_push(uint64_t ts, uint64_t a, uint64_t b, uint64_t c, uint64_t meta) {
    memobs__shard_t *s = memobs__tls.shard;
    memobs__tl_chunk_t *k;
    memobs__tl_slot_t *sl;
    uint64_t seq;
    uint32_t ep, i;
    /* A signal handler inside memobs on this thread (a push, whose slot it
       would share, or a lock it would wait for): its event is not kept. */
    if (MEMOBS__UNLIKELY(memobs__tls.in != 0) || (s && MEMOBS__UNLIKELY(MEMOBS__LOAD(&s->tl_busy.v) != 0))) return;
    /* A thread's first event: its shard, waiting for the lock if another
       thread holds it (this thread holds none: tls.in is 0), so that the
       event is kept; its record may have gone to the shared shard. */
    if (MEMOBS__UNLIKELY(!s) && (s = memobs__shard_acquire()) == NULL) return;
    if (MEMOBS__UNLIKELY(s->shared)) return; /* the fallback shard (no memory for one): no chunk either */
    MEMOBS__STORE(&s->tl_busy.v, 1u);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the compiler keeps the store first; membarrier() does the rest */
    ep = __atomic_load_n(&memobs__tl_on.v, __ATOMIC_ACQUIRE);
    if (ep) {
        k = (memobs__tl_chunk_t *)s->tl_chunk;
        i = s->tl_i;
        if (MEMOBS__UNLIKELY(s->tl_epoch != ep || !k || i >= k->cap)) {
            k = memobs__tl_take(s, ep);
            i = s->tl_i;
        }
        if (k) {
            sl = &k->slot[i];
            seq = (uint64_t)MEMOBS__LOAD(&k->gen.v) << 32 | (uint64_t)(2u * i);
            MEMOBS__STORE(&sl->seq, seq + 1u);
            /* release stores (plain moves on x86): a reader that sees one of
               them sees the odd sequence number before it (no fences: TSan
               has none) */
            __atomic_store_n(&sl->ts, ts, __ATOMIC_RELEASE);
            __atomic_store_n(&sl->a, a, __ATOMIC_RELEASE);
            __atomic_store_n(&sl->b, b, __ATOMIC_RELEASE);
            __atomic_store_n(&sl->c, c, __ATOMIC_RELEASE);
            __atomic_store_n(&sl->meta, meta, __ATOMIC_RELEASE);
            __atomic_store_n(&sl->seq, seq + 2u, __ATOMIC_RELEASE);
            s->tl_i = i + 1u;
            MEMOBS__STORE(&k->n.v, i + 1u);
        }
    }
    __atomic_store_n(&s->tl_busy.v, 0u, __ATOMIC_RELEASE);
}

/* Thread exit (memobs__shard_release): the thread's chunk joins the
   queue, or, with room left, the chunks that the next takes continue. */
static void memobs__tl_release(memobs__shard_t *s) {
    memobs__spin_lock(&memobs__tl.pool_lock);
    if (s->tl_chunk && memobs__tl.pool && s->tl_epoch == memobs__tl.epoch)
        memobs__tl_leave(memobs__tl.pool, (memobs__tl_chunk_t *)s->tl_chunk);
    s->tl_chunk = NULL;
    s->tl_epoch = 0;
    s->tl_i = 0;
    memobs__spin_unlock(&memobs__tl.pool_lock);
}

static uint64_t memobs__tl_meta(unsigned type, unsigned sub, unsigned phase, int device, uint32_t trace) {
    return (uint64_t)(type & 15u) | (uint64_t)(sub & 15u) << 4 | (uint64_t)(phase & 15u) << 8 |
           (uint64_t)((uint32_t)(device + 1) & 0xffffu) << 16 | (uint64_t)trace << 32;
}

/* The record paths call this only while the timeline is on: the
   binding's test costs nothing when it is off. */
void memobs__tl_xfer(unsigned dir, unsigned phase, uint64_t bytes) {
    uint64_t meta = memobs__tl_meta(MEMOBS__TL_XFER, dir, phase, -1, 0) | MEMOBS__TL_TICKS, id = 0;
    memobs__shard_t *s = memobs__tls.shard;
    if (memobs__tls.req && s && !s->shared && s->bind_depth) { /* bound: the innermost request's */
        id = s->bind_id[s->bind_depth - 1];
        meta |= MEMOBS__TL_RID;
    }
    memobs__tl_push(memobs__ticks(), bytes, 0, id, meta);
}

/* ts: when it was reported; the writer puts the slice ns before it. */
static void memobs__tl_timed(unsigned dir, unsigned phase, uint64_t bytes, uint64_t ns, int has_id, uint64_t id) {
    memobs__tl_push(memobs__ticks(), bytes, ns, has_id ? id : 0,
                    memobs__tl_meta(MEMOBS__TL_TIMED, dir, phase, -1, 0) | MEMOBS__TL_TICKS |
                        (has_id ? MEMOBS__TL_RID : 0u));
}

static uint64_t memobs__tl_req_xfer(unsigned dir, unsigned phase, uint64_t bytes, size_t n, uint64_t id) {
    uint64_t t = memobs__ticks();
    memobs__tl_push(t, bytes, 0, n == 1 ? id : 0,
                    memobs__tl_meta(MEMOBS__TL_XFER, dir, phase, -1, 0) | MEMOBS__TL_TICKS |
                        (n == 1 ? MEMOBS__TL_RID : MEMOBS__TL_SPLIT));
    return t;
}

static void memobs__tl_req_part(uint64_t tick, unsigned dir, unsigned phase, uint64_t part, uint64_t id) {
    memobs__tl_push(tick, part, id, 0, memobs__tl_meta(MEMOBS__TL_PART, dir, phase, -1, 0) | MEMOBS__TL_TICKS);
}

/* Requests on the timeline. A request's end is seen under its part of the
   request table's lock, where a push may not take the pool's lock (fork()
   takes that one first), so finished requests go to a ring of their own,
   under memobs__att.lock (taken under a stripe's, and held across fork()
   after them); the writer takes the ones of its pool's epoch from it and
   those in flight from the table, and gives each a track of at most
   MEMOBS__TL_REQ_LANES, reused once its request has ended; a request that
   finds them all taken is not drawn (counted in otherData). */
#define MEMOBS__TL_REQS 4096     /* finished requests kept (the newest) */
#define MEMOBS__TL_REQ_LANES 64  /* request tracks */
#define MEMOBS__TL_REQ_SLACK 1000000u /* ns: a transfer this far outside its request's slice still links to it */
typedef struct {
    uint64_t id, begin, end, bytes, ops;
    uint32_t epoch;  /* in the ring: the pool's; in a write: the flows linked so far */
    uint32_t state;  /* memobs_request_state_t */
    uint32_t tenant; /* memobs__req_t's */
    int32_t lane;    /* in a write: its track, or -1 (not drawn) */
} memobs__tl_req_t;

static struct {
    memobs__tl_req_t *r; /* MEMOBS__TL_REQS, made at the first (memobs__pages) */
    uint32_t head, n, epoch; /* epoch: the one dropped counts */
    uint64_t dropped;        /* finished requests of that epoch overwritten, or with no ring */
} memobs__tl_rq;

/* The bytes and operations of a request's ledger. */
static void memobs__tl_req_moved(const memobs_request_info_t *i, uint64_t *bytes, uint64_t *ops) {
    unsigned p, k;
    *bytes = *ops = 0;
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++) {
            const memobs_xfer_t *x = memobs_dirs_get(&i->xfer[p], k);
            *bytes = memobs__sat(*bytes, x->bytes);
            *ops += x->count;
        }
}

static void memobs__tl_req_done(const memobs_request_info_t *i, uint32_t tenant) {
    uint32_t ep = MEMOBS__LOAD(&memobs__tl_on.v), slot;
    memobs__tl_req_t *q;
    if (!ep) return;
    if (memobs__tl_rq.epoch != ep) {
        memobs__tl_rq.epoch = ep;
        memobs__tl_rq.dropped = 0;
    }
    if (!memobs__tl_rq.r) memobs__tl_rq.r = (memobs__tl_req_t *)memobs__pages(MEMOBS__TL_REQS * sizeof(memobs__tl_req_t));
    if (!memobs__tl_rq.r) {
        memobs__tl_rq.dropped++;
        return;
    }
    if (memobs__tl_rq.n < MEMOBS__TL_REQS) {
        slot = (memobs__tl_rq.head + memobs__tl_rq.n++) % MEMOBS__TL_REQS;
    } else {
        slot = memobs__tl_rq.head;
        memobs__tl_rq.head = (memobs__tl_rq.head + 1) % MEMOBS__TL_REQS;
        if (memobs__tl_rq.r[slot].epoch == ep) memobs__tl_rq.dropped++;
    }
    q = &memobs__tl_rq.r[slot];
    q->id = i->id;
    q->begin = i->begin_ns;
    q->end = i->end_ns > i->begin_ns ? i->end_ns : i->begin_ns;
    memobs__tl_req_moved(i, &q->bytes, &q->ops);
    q->epoch = ep;
    q->state = (uint32_t)i->state;
    q->tenant = tenant;
    q->lane = -1;
}

static void memobs__tl_phase(unsigned phase) {
    memobs__tl_push(memobs__ticks(), memobs__tl_thread_no(), 0, 0,
                    memobs__tl_meta(MEMOBS__TL_PHASE, 0, phase, -1, 0) | MEMOBS__TL_TICKS);
}

static void memobs__tl_region(uint64_t t0, uint64_t dur, int32_t id, uint32_t depth) {
    memobs__tl_push(t0, dur, memobs__tl_thread_no(), depth,
                    memobs__tl_meta(MEMOBS__TL_REGION, 0, memobs__tls.phase, -1, (uint32_t)id));
}

static void memobs__tl_mark(uint64_t ts, int32_t id) {
    memobs__tl_push(ts, 0, memobs__tl_thread_no(), 0, memobs__tl_meta(MEMOBS__TL_MARK, 0, memobs__tls.phase, -1, (uint32_t)id));
}

/* A collective (memobs_record_coll_ex): t0 its start in ns, dur its
   duration; meta: phase (8-11), communicator (16-31), kind (32-39),
   algorithm and protocol (memobs__coll_str: 40-47, 48-55), captured (56),
   channels (57-63). */
static void memobs__tl_coll(uint64_t t0, uint64_t dur, uint64_t bytes, uint64_t seq, uint64_t meta) {
    memobs__tl_push(t0, dur, bytes, seq, meta | MEMOBS__TL_COLL);
}

static void memobs__tl_peer(unsigned dir, unsigned phase, int32_t peer, uint64_t bytes, uint64_t ns) {
    memobs__tl_push(memobs__ticks(), bytes, ns, 0,
                    memobs__tl_meta(MEMOBS__TL_PEER, dir, phase, -1, (uint32_t)peer) | MEMOBS__TL_TICKS);
}

/* The writer's running bytes per peer and direction (under memobs__tl.lock). */
static uint64_t memobs__tl_peer_cum[MEMOBS_MAX_PEERS][MEMOBS_PEER_DIRS];

/* After the tracker accounted the change, so `live` includes it: exact,
   from the escrow's cur[] kept while the timeline is on (a fold when the
   change raced the timeline's switching on). */
static void memobs__tl_track(uint64_t addr, uint64_t bytes, unsigned kind, int device, uint32_t trace,
                             unsigned phase, int freed, const memobs__esc_res_t *r) {
    uint64_t live = r->live;
    if (!r->has_live) {
        uint64_t cur[MEMOBS__ACCTS];
        memobs__esc_read(cur);
        live = cur[kind];
    }
    memobs__tl_push(memobs__ticks(), addr, bytes, live,
                    memobs__tl_meta(freed ? MEMOBS__TL_FREE : MEMOBS__TL_ALLOC, kind, phase, device, trace) |
                        MEMOBS__TL_TICKS);
}

/* A sample of a series (a string with static lifetime, e.g. "rss_bytes")
   taken at time_ns, from memobs' samplers: one counter track per series. */
static void memobs__tl_sample(uint64_t time_ns, const char *series, uint64_t value) {
    if (!MEMOBS__LOAD(&memobs__tl_on.v) || !series) return;
    memobs__tl_push(time_ns, value, 0, (uint64_t)(uintptr_t)series, memobs__tl_meta(MEMOBS__TL_SAMPLE, 0, 0, -1, 0));
}

#if defined(__linux__)
#include <sys/syscall.h>
/* Strict -std=c99 hides syscall(); the libc symbol is there regardless. */
extern long memobs__syscall(long nr, ...) __asm__("syscall");
#endif

/* A full memory barrier on every thread of the process; 0 if there is no
   way to make one. */
static int memobs__tl_barrier(void) {
#if defined(__linux__) && defined(SYS_membarrier)
    /* MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (16) once, then
       MEMBARRIER_CMD_PRIVATE_EXPEDITED (8); else MEMBARRIER_CMD_GLOBAL (1) */
    if (!memobs__tl.mb) memobs__tl.mb = memobs__syscall(SYS_membarrier, 16, 0, 0) == 0 ? 1 : -1;
    if (memobs__tl.mb == 1 && memobs__syscall(SYS_membarrier, 8, 0, 0) == 0) return 1;
    return memobs__syscall(SYS_membarrier, 1, 0, 0) == 0;
#else
    return 0;
#endif
}

/* A pool of about cap events (see above), or NULL. */
static memobs__tl_pool_t *memobs__tl_pool_new(uint64_t cap) {
    memobs__tl_pool_t *p;
    uint32_t csize = 1, nchunks, i, busy = memobs__tls.busy;
    size_t size;
    char *raw;
    while (csize * 2u <= MEMOBS__TL_CHUNK && (uint64_t)csize * 2u * 64u <= cap) csize *= 2u;
    nchunks = (uint32_t)(cap / csize);
    /* the pool's header, the chunks' headers, the slots, the queue, the
       stack of chunks with room, the owners' segments */
    size = 64 + sizeof *p + 64 + (size_t)nchunks * sizeof(memobs__tl_chunk_t) +
           (size_t)nchunks * csize * sizeof(memobs__tl_slot_t) + (size_t)nchunks * 2 * sizeof(uint32_t) +
           (size_t)nchunks * csize * sizeof(uint32_t);
    memobs__tls.busy = 1; /* MEMOBS_MALLOC may be an allocator the tracker watches */
    raw = (char *)MEMOBS_MALLOC(size);
    memobs__tls.busy = busy;
    if (!raw) {
        memobs__log(MEMOBS_LOG_ERROR, "cannot allocate the timeline's %llu events (%llu bytes); unchanged",
                    (unsigned long long)cap, (unsigned long long)size);
        return NULL;
    }
    memset(raw, 0, size);
    p = (memobs__tl_pool_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    p->raw = raw;
    p->chunk = (memobs__tl_chunk_t *)(((uintptr_t)(p + 1) + 63) & ~(uintptr_t)63);
    p->nchunks = nchunks;
    p->csize = csize;
    for (i = 0; i < nchunks; i++) {
        p->chunk[i].cap = csize;
        p->chunk[i].slot = (memobs__tl_slot_t *)(p->chunk + nchunks) + (size_t)i * csize;
    }
    p->fifo = (uint32_t *)((memobs__tl_slot_t *)(p->chunk + nchunks) + (size_t)nchunks * csize);
    p->part = p->fifo + nchunks;
    for (i = 0; i < nchunks; i++) p->chunk[i].seg = (p->part + nchunks) + (size_t)i * csize;
    return p;
}

static void memobs__tl_pool_free(memobs__tl_pool_t *p) {
    uint32_t busy = memobs__tls.busy;
    memobs__tls.busy = 1;
    MEMOBS_FREE(p->raw);
    memobs__tls.busy = busy;
}

/* Caller holds memobs__tl.lock (or is the start-up). Replaces the pool by
   a new one of about cap events (0: none). */
static int memobs__tl_make(uint64_t cap) {
    memobs__tl_pool_t *np = NULL, *old;
    memobs__shard_t *s;
    uint32_t ep = 0;
    if (cap) {
        memobs__clk_init(); /* the tick source, before any push takes a tick */
        if ((np = memobs__tl_pool_new(cap)) == NULL) return MEMOBS_ERR_NOMEM;
        if (!++memobs__tl.epochs) ++memobs__tl.epochs;
        ep = memobs__tl.epochs;
    }
    /* The tracker's exact current, for the events' live bytes: on before
       the timeline, off after it. */
    if (ep) memobs__esc_set_live(1);
    memobs__spin_lock(&memobs__tl.pool_lock);
    old = memobs__tl.pool;
    memobs__tl.pool = np;
    memobs__tl.epoch = ep;
    __atomic_store_n(&memobs__tl_on.v, ep, __ATOMIC_SEQ_CST);
    memobs__spin_unlock(&memobs__tl.pool_lock);
    if (!ep) memobs__esc_set_live(0);
    if (!old) return MEMOBS_OK;
    if (!memobs__tl_barrier()) {
        memobs__warn_once(MEMOBS__W_TL_KEPT, "no membarrier() here: a replaced timeline pool is kept, not freed");
        return MEMOBS_OK;
    }
    pthread_mutex_lock(&memobs__g.lock);
    for (s = memobs__g.shards; s; s = s->next)
        while (__atomic_load_n(&s->tl_busy.v, __ATOMIC_ACQUIRE)) sched_yield();
    pthread_mutex_unlock(&memobs__g.lock);
    memobs__tl_pool_free(old);
    return MEMOBS_OK;
}

int memobs_timeline_start(size_t capacity) {
    memobs_init();
#ifdef MEMOBS_DISABLE
    (void)capacity;
    (void)memobs__tl_make;
    return MEMOBS_OK;
#else
    int rc;
    if (capacity == 0) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_timeline_start(0): no events; unchanged (memobs_timeline_stop() turns "
                    "it off)");
        return MEMOBS_ERR_INVALID;
    }
    if ((uint64_t)capacity > MEMOBS__TL_MAX) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_timeline_start(%llu): at most %llu events; unchanged",
                    (unsigned long long)capacity, (unsigned long long)MEMOBS__TL_MAX);
        return MEMOBS_ERR_INVALID;
    }
    pthread_mutex_lock(&memobs__tl.lock);
    rc = memobs__tl_make((uint64_t)capacity);
    pthread_mutex_unlock(&memobs__tl.lock);
    return rc;
#endif
}

int memobs_timeline_stop(void) {
    memobs_init();
#ifndef MEMOBS_DISABLE
    pthread_mutex_lock(&memobs__tl.lock);
    (void)memobs__tl_make(0);
    pthread_mutex_unlock(&memobs__tl.lock);
#endif
    return MEMOBS_OK;
}

/* Caller holds memobs__tl.lock. Totals, and per thread slot when kept /
   dropped are not NULL (MEMOBS__TL_THREADS each). */
static void memobs__tl_count(memobs_timeline_stats_t *out, uint64_t *kept, uint64_t *dropped) {
    memobs__tl_pool_t *p;
    uint32_t j;
    memset(out, 0, sizeof *out);
    memobs__spin_lock(&memobs__tl.pool_lock);
    if ((p = memobs__tl.pool) != NULL) {
        out->capacity = (uint64_t)p->nchunks * p->csize;
        out->chunk = p->csize;
        out->dropped = p->dropped;
        for (j = 0; j < p->fresh; j++) {
            uint32_t n = MEMOBS__LOAD(&p->chunk[j].n.v);
            out->kept += n;
            if (kept) memobs__tl_by_thread(&p->chunk[j], n, kept);
            if (p->chunk[j].state == MEMOBS__TLC_OWNED) out->threads++;
        }
        if (dropped) memcpy(dropped, p->tdrop, sizeof p->tdrop);
    }
    memobs__spin_unlock(&memobs__tl.pool_lock);
    out->recorded = out->kept + out->dropped;
}

void memobs_timeline_get_stats(memobs_timeline_stats_t *out) {
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "a NULL pointer was passed to memobs; ignored");
        return;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__tl.lock);
    memobs__tl_count(out, NULL, NULL);
    pthread_mutex_unlock(&memobs__tl.lock);
}

size_t memobs_timeline_get_threads(memobs_timeline_thread_t *out, size_t max) {
    memobs_timeline_stats_t st;
    uint64_t kept[MEMOBS__TL_THREADS], dropped[MEMOBS__TL_THREADS];
    size_t n = 0;
    unsigned t;
    if (!out && max) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "a NULL pointer was passed to memobs; ignored");
        return 0;
    }
    memobs_init();
    memset(kept, 0, sizeof kept);
    memset(dropped, 0, sizeof dropped);
    pthread_mutex_lock(&memobs__tl.lock);
    memobs__tl_count(&st, kept, dropped);
    pthread_mutex_unlock(&memobs__tl.lock);
    for (t = 0; t < MEMOBS__TL_THREADS; t++) {
        if (!kept[t] && !dropped[t]) continue;
        if (n < max) {
            out[n].thread = t + 1u;
            out[n].kept = kept[t];
            out[n].dropped = dropped[t];
            out[n].recorded = kept[t] + dropped[t];
        }
        n++;
    }
    return n;
}

/* Caller holds memobs__tl.lock. The complete events of the pool in time
   order, ts in ns; *n gets their count. NULL with *n = 0 for an empty
   pool; NULL with *n = 1 when there is no memory for the copy. */
static int memobs__tl_ev_cmp(const void *x, const void *y) {
    const memobs__tl_ev_t *a = (const memobs__tl_ev_t *)x, *b = (const memobs__tl_ev_t *)y;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->ticket < b->ticket ? -1 : a->ticket > b->ticket;
}
static int memobs__tl_before(const memobs__tl_ev_t *a, const memobs__tl_ev_t *b) {
    return a->ts < b->ts || (a->ts == b->ts && a->ticket < b->ticket);
}
/* The end of the run in order from ev[a]. */
static size_t memobs__tl_run(const memobs__tl_ev_t *ev, size_t a, size_t n) {
    for (a++; a < n && !memobs__tl_before(&ev[a], &ev[a - 1]); a++) {
    }
    return a;
}
/* Sorts ev[0, n) by time and ticket, merging the runs already in order (a
   chunk's events mostly are, and one thread's chunks follow each other),
   two at a time, pass after pass, between ev and tmp (n events): a few
   passes where qsort makes log2(n), and no call per comparison. Returns
   the one of the two that holds the result. */
static memobs__tl_ev_t *memobs__tl_sort(memobs__tl_ev_t *ev, memobs__tl_ev_t *tmp, size_t n) {
    for (;;) {
        size_t a = 0, b = n ? memobs__tl_run(ev, 0, n) : 0;
        memobs__tl_ev_t *x;
        if (b >= n) return ev;
        while (a < n) {
            size_t c = b < n ? memobs__tl_run(ev, b, n) : n, i = a, j = b, o = a;
            while (i < b && j < c) tmp[o++] = memobs__tl_before(&ev[j], &ev[i]) ? ev[j++] : ev[i++];
            if (i < b) memcpy(tmp + o, ev + i, (b - i) * sizeof *ev);
            if (j < c) memcpy(tmp + o, ev + j, (c - j) * sizeof *ev);
            a = c;
            b = a < n ? memobs__tl_run(ev, a, n) : n;
        }
        x = ev;
        ev = tmp;
        tmp = x;
    }
}
static memobs__tl_ev_t *memobs__tl_snapshot(size_t *n) {
    memobs__tl_pool_t *p;
    uint64_t cap, i, ta, na;
    uint32_t busy = memobs__tls.busy, j, nchunks;
    double slope, back;
    memobs__tl_ev_t *ev, *tmp;
    size_t k = 0;
    *n = 0;
    memobs__spin_lock(&memobs__tl.pool_lock);
    p = memobs__tl.pool;
    nchunks = p ? p->fresh : 0;
    memobs__spin_unlock(&memobs__tl.pool_lock);
    if (!p || !nchunks) return NULL; /* the pool stays: enable needs memobs__tl.lock */
    cap = (uint64_t)nchunks * p->csize;
    memobs__clk_sync();
    memobs__clk_get(&ta, &na, &slope, &back);
    memobs__tls.busy = 1;
    ev = (memobs__tl_ev_t *)MEMOBS_MALLOC((size_t)cap * sizeof *ev);
    memobs__tls.busy = busy;
    if (!ev) {
        *n = 1;
        return NULL;
    }
    for (j = 0; j < nchunks; j++) {
        memobs__tl_chunk_t *c = &p->chunk[j];
        uint64_t gen = __atomic_load_n(&c->gen.v, __ATOMIC_ACQUIRE), order = MEMOBS__LOAD(&c->order.v);
        for (i = 0; i < c->cap; i++) {
            memobs__tl_slot_t *s = &c->slot[i];
            uint64_t s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE), s2;
            memobs__tl_ev_t *e = &ev[k];
            if ((s1 >> 32) != gen || (s1 & 1u) || !(uint32_t)s1) continue; /* another life, being written, empty */
            e->ts = __atomic_load_n(&s->ts, __ATOMIC_ACQUIRE);
            e->a = __atomic_load_n(&s->a, __ATOMIC_ACQUIRE);
            e->b = __atomic_load_n(&s->b, __ATOMIC_ACQUIRE);
            e->c = __atomic_load_n(&s->c, __ATOMIC_ACQUIRE);
            e->meta = __atomic_load_n(&s->meta, __ATOMIC_ACQUIRE);
            s2 = MEMOBS__LOAD(&s->seq);
            if (s1 != s2) continue; /* rewritten while we copied */
            if (e->meta & MEMOBS__TL_TICKS) {
                e->ts = MEMOBS__LOAD(&memobs__clk_tsc.v) ? memobs__clk_conv(e->ts, ta, na, slope, back) : e->ts;
                if ((e->meta & 15u) == MEMOBS__TL_TIMED) e->ts = e->ts > e->b ? e->ts - e->b : 0;
            }
            e->ticket = order * p->csize + i;
            k++;
        }
    }
    memobs__tls.busy = 1;
    tmp = k > 1 ? (memobs__tl_ev_t *)MEMOBS_MALLOC(k * sizeof *ev) : NULL;
    memobs__tls.busy = busy;
    if (tmp) {
        memobs__tl_ev_t *sorted = memobs__tl_sort(ev, tmp, k), *other = sorted == ev ? tmp : ev;
        memobs__tls.busy = 1;
        MEMOBS_FREE(other);
        memobs__tls.busy = busy;
        ev = sorted;
    } else {
        qsort(ev, k, sizeof *ev, memobs__tl_ev_cmp); /* no room for a second copy: in place */
    }
    *n = k;
    return ev;
}

/* The Chrome trace is formatted by hand into a buffer of a MiB and handed
   to fwrite a buffer at a time (fprintf per field made four fifths of the
   write's cost: 0.55 M events/s before, see docs/performance.md). Strings are escaped
   for JSON, and bytes that do not form UTF-8 (a tag cut at 63 bytes, a
   host name) become U+FFFD, so any JSON parser takes the document. */
#define MEMOBS__TL_BUF ((size_t)1 << 20)
#define MEMOBS__TL_SMALL 16384 /* the buffer when the large one cannot be allocated (memobs__tl.lock held) */
#define MEMOBS__TL_ROOM 1024   /* bytes an event takes at most, its strings aside */
#define MEMOBS__TL_CHECK 4096  /* events between two looks at the write's clock */
#define MEMOBS__TL_WRITE_DEFAULT_NS (20ull * 1000000000u)

/* The write's clock (the tests give it one that runs fast). */
#ifndef MEMOBS__TL_WRITE_NOW
#define MEMOBS__TL_WRITE_NOW() memobs_now_ns()
#endif

static const char *const memobs__tl_ph[3] = {"unphased", "prefill", "decode"};

/* Track ids. */
#define MEMOBS__TL_TID_COPY 1      /* + direction */
#define MEMOBS__TL_TID_TIMED 10    /* + direction * MEMOBS__TL_LANES + lane (H2D, D2H, D2D) */
#define MEMOBS__TL_TID_ALLOC 100
#define MEMOBS__TL_TID_STORE 200   /* + (direction - 3) * MEMOBS__TL_LANES + lane (the storage tier's) */
#define MEMOBS__TL_TID_PHASE 1000  /* + timeline thread slot */
#define MEMOBS__TL_TID_REGION 3000 /* + timeline thread slot */
#define MEMOBS__TL_TID_COLL 5000   /* + communicator */
#define MEMOBS__TL_TID_REQ 7000    /* + request track */
#define MEMOBS__TL_REQ_ARGS 64     /* requests a split transfer's slice lists in its args (all have flows) */

typedef struct {
    uint32_t id;
    char text[MEMOBS__TL_TEXT];
} memobs__tl_text_t;

typedef struct {
    FILE *f;
    char *buf;
    size_t len, cap;
    int err;                  /* fwrite failed: nothing more is written */
    uint64_t bytes;           /* handed to fwrite so far */
    int n;                    /* events written, for the commas */
    char pid[32];             /* ,"pid":P,"tid": */
    memobs__tl_text_t *cache; /* 64 trace texts, direct-mapped by id; NULL: none */
    char text[MEMOBS__TL_TEXT];
} memobs__tl_out_t;

/* What a write limit left out (memobs_timeline_set_write_limit). */
typedef struct {
    uint64_t deadline;      /* CLOCK_MONOTONIC (MEMOBS__TL_WRITE_NOW) ns; 0: no limit */
    uint64_t span;          /* the shortest time a rate is measured over */
    uint64_t left;          /* events left out */
    uint64_t first, last;   /* the times of the oldest and newest of them */
} memobs__tl_cut_t;

static char memobs__tl_small[MEMOBS__TL_SMALL];

static void memobs__tl_flush(memobs__tl_out_t *o) {
    if (o->len && !o->err && fwrite(o->buf, 1, o->len, o->f) != o->len) o->err = 1;
    o->bytes += o->len;
    o->len = 0;
}

/* A pointer to n free bytes (n <= MEMOBS__TL_SMALL) at the buffer's end;
   the caller writes and ends with memobs__tl_end. */
static char *memobs__tl_room(memobs__tl_out_t *o, size_t n) {
    if (o->cap - o->len < n) memobs__tl_flush(o);
    return o->buf + o->len;
}
static void memobs__tl_end(memobs__tl_out_t *o, char *p) { o->len = (size_t)(p - o->buf); }

static char *memobs__tl_cpy(char *p, const char *s, size_t n) {
    memcpy(p, s, n);
    return p + n;
}
#define MEMOBS__TL_LIT(p, lit) memobs__tl_cpy((p), (lit), sizeof(lit) - 1)
static char *memobs__tl_str(char *p, const char *s) { /* short names: no call */
    while (*s) *p++ = *s++;
    return p;
}

static const char memobs__tl_d2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                    "8081828384858687888990919293949596979899";
static char *memobs__tl_dec(char *p, uint64_t v) {
    static const uint64_t pow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
                                       100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
                                       1000000000000ull, 10000000000000ull, 100000000000000ull,
                                       1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
                                       1000000000000000000ull, 10000000000000000000ull};
    unsigned k = 1;
    char *q;
    while (k < 20 && v >= pow10[k]) k++;
    q = p + k;
    while (v >= 100u) {
        unsigned r = (unsigned)(v % 100u);
        v /= 100u;
        q -= 2;
        q[0] = memobs__tl_d2[2 * r];
        q[1] = memobs__tl_d2[2 * r + 1];
    }
    if (v >= 10u) {
        q[-2] = memobs__tl_d2[2 * v];
        q[-1] = memobs__tl_d2[2 * v + 1];
    } else {
        q[-1] = (char)('0' + v);
    }
    return p + k;
}
static char *memobs__tl_int(char *p, int64_t v) {
    if (v >= 0) return memobs__tl_dec(p, (uint64_t)v);
    *p++ = '-';
    return memobs__tl_dec(p, 0u - (uint64_t)v);
}
static char *memobs__tl_hex(char *p, uint64_t v) {
    char t[16];
    unsigned k = 0;
    do {
        t[k++] = "0123456789abcdef"[v & 15u];
        v >>= 4;
    } while (v);
    while (k) *p++ = t[--k];
    return p;
}
/* Microseconds with the nanoseconds exact: no rounding through a double. */
static char *memobs__tl_usec(char *p, uint64_t ns) {
    unsigned r = (unsigned)(ns % 1000u);
    p = memobs__tl_dec(p, ns / 1000u);
    p[0] = '.';
    p[1] = (char)('0' + r / 100u);
    p[2] = (char)('0' + r / 10u % 10u);
    p[3] = (char)('0' + r % 10u);
    return p + 4;
}
/* s as a JSON string: at most 6 bytes per byte of s, and 2. */
static char *memobs__tl_jstr(char *p, const char *s) {
    const unsigned char *q = (const unsigned char *)s;
    *p++ = '"';
    while (*q) {
        unsigned char c = *q;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            *p++ = (char)c;
            q++;
        } else if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
            q++;
        } else if (c == '\n') {
            p = MEMOBS__TL_LIT(p, "\\n");
            q++;
        } else if (c == '\t') {
            p = MEMOBS__TL_LIT(p, "\\t");
            q++;
        } else if (c < 0x80) { /* other control characters, DEL */
            p = MEMOBS__TL_LIT(p, "\\u00");
            *p++ = "0123456789abcdef"[c >> 4];
            *p++ = "0123456789abcdef"[c & 15u];
            q++;
        } else {
            size_t k = memobs__utf8_len(q);
            if (k) {
                p = memobs__tl_cpy(p, (const char *)q, k);
                q += k;
            } else {
                p = MEMOBS__TL_LIT(p, "\xef\xbf\xbd");
                q++;
            }
        }
    }
    *p++ = '"';
    return p;
}

/* An event's start: ,\n{"ph":PH,"name":NAME,"pid":P,"tid":T,"ts":U. The
   name is escaped unless plain (a name of memobs' own). */
static char *memobs__tl_head(memobs__tl_out_t *o, char *p, const char *ph, const char *name, int plain, int tid,
                             uint64_t ts) {
    if (o->n++) *p++ = ',';
    p = MEMOBS__TL_LIT(p, "\n{\"ph\":\"");
    p = memobs__tl_str(p, ph);
    p = MEMOBS__TL_LIT(p, "\",\"name\":");
    if (plain) {
        *p++ = '"';
        p = memobs__tl_str(p, name);
        *p++ = '"';
    } else {
        p = memobs__tl_jstr(p, name);
    }
    p = memobs__tl_str(p, o->pid);
    p = memobs__tl_int(p, tid);
    p = MEMOBS__TL_LIT(p, ",\"ts\":");
    return memobs__tl_usec(p, ts);
}

static void memobs__tl_counter(memobs__tl_out_t *o, const char *name, int plain, uint64_t ts, uint64_t v) {
    char *p = memobs__tl_room(o, MEMOBS__TL_ROOM);
    p = memobs__tl_head(o, p, "C", name, plain, 0, ts);
    p = MEMOBS__TL_LIT(p, ",\"args\":{\"value\":");
    p = memobs__tl_dec(p, v);
    p = MEMOBS__TL_LIT(p, "}}");
    memobs__tl_end(o, p);
}

static void memobs__tl_thread_name(memobs__tl_out_t *o, int tid, const char *name, int sort) {
    char *p = memobs__tl_room(o, MEMOBS__TL_ROOM);
    if (o->n++) *p++ = ',';
    p = MEMOBS__TL_LIT(p, "\n{\"ph\":\"M\",\"name\":\"thread_name\"");
    p = memobs__tl_str(p, o->pid);
    p = memobs__tl_int(p, tid);
    p = MEMOBS__TL_LIT(p, ",\"args\":{\"name\":");
    p = memobs__tl_jstr(p, name);
    p = MEMOBS__TL_LIT(p, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"");
    p = memobs__tl_str(p, o->pid);
    p = memobs__tl_int(p, tid);
    p = MEMOBS__TL_LIT(p, ",\"args\":{\"sort_index\":");
    p = memobs__tl_int(p, sort);
    p = MEMOBS__TL_LIT(p, "}}");
    memobs__tl_end(o, p);
}

static const char *memobs__tl_trace(memobs__tl_out_t *o, uint32_t id) {
    if (o->cache) {
        unsigned k = id % 64u;
        if (o->cache[k].id != id) {
            if (memobs_format_trace(o->cache[k].text, sizeof o->cache[k].text, id) < 0) o->cache[k].text[0] = 0;
            o->cache[k].id = id;
        }
        return o->cache[k].text;
    }
    if (memobs_format_trace(o->text, sizeof o->text, id) < 0) o->text[0] = 0;
    return o->text;
}

static void memobs__tl_phase_slice(memobs__tl_out_t *o, int tid, unsigned ph, uint64_t t0, uint64_t t1) {
    char *p;
    if (ph == MEMOBS_PHASE_NONE || ph >= 3) return;
    p = memobs__tl_room(o, MEMOBS__TL_ROOM);
    p = memobs__tl_head(o, p, "X", memobs__tl_ph[ph], 1, tid, t0);
    p = MEMOBS__TL_LIT(p, ",\"dur\":");
    p = memobs__tl_usec(p, t1 - t0);
    p = MEMOBS__TL_LIT(p, ",\"cat\":\"phase\"}");
    memobs__tl_end(o, p);
}

/* The slot of a timeline thread number in thr[] (added if new; past
   MEMOBS__TL_THREADS threads, the last slot is shared). */
static unsigned memobs__tl_slot(uint32_t *thr, unsigned *nthr, uint32_t no) {
    unsigned t;
    for (t = 0; t < *nthr && thr[t] != no; t++) {
    }
    if (t == *nthr && *nthr < MEMOBS__TL_THREADS) thr[(*nthr)++] = no;
    return t == MEMOBS__TL_THREADS ? t - 1 : t;
}

/* Every MEMOBS__TL_CHECK events while a write limit is set, at event i of
   n, `written` written since tf: once the rate so far has been measured
   over a tenth of the limit (at most a second: a shorter span would take
   a busy machine's pause for the rate), when the events left would not fit
   in the time left at that rate (with a margin), skips to the newest that
   would (the oldest of the rest go); once the limit has passed, skips all
   the rest. */
static void memobs__tl_plan(memobs__tl_cut_t *c, const memobs__tl_ev_t *ev, size_t n, size_t i, size_t *from,
                            uint64_t written, uint64_t tf) {
    uint64_t now = MEMOBS__TL_WRITE_NOW();
    size_t to = n;
    if (now < c->deadline) {
        double rate, left = (double)(c->deadline - now), keep;
        if (!written || now - tf < c->span) return;
        rate = (double)written / (double)(now - tf); /* events per ns */
        if ((double)(n - i) <= rate * left * 0.8) return;
        keep = rate * left * 0.7;
        if (keep >= (double)(n - i)) return;
        to = n - (size_t)keep;
    }
    if (!c->left) c->first = ev[i].ts;
    c->last = ev[to - 1].ts;
    c->left += to - i;
    *from = to;
}

/* A collective's slice on its communicator's track: "nccl <kind>", its
   bandwidths in GB/s (null: untimed, or no bus factor). */
static void memobs__tl_coll_slice(memobs__tl_out_t *o, const memobs__tl_ev_t *e, unsigned char *seen) {
    uint32_t c = (uint32_t)(e->meta >> 16 & 0xffffu), k = (uint32_t)(e->meta >> 32 & 0xffu);
    unsigned ph = (unsigned)(e->meta >> 8 & 15u) % 3u;
    const char *kl = memobs_coll_kind_label((memobs_coll_kind_t)k), *algo, *proto;
    char name[MEMOBS__COLL_LABEL + 8], *p;
    uint64_t s, num, den;
    int nranks;
    if (c >= MEMOBS_MAX_COMMS) return;
    seen[c] = 1;
    nranks = memobs__coll.comm[c].nranks;
    s = memobs__coll_s((int)k, nranks, e->b);
    algo = memobs__coll_str_text((unsigned)(e->meta >> 40 & 0xffu));
    proto = memobs__coll_str_text((unsigned)(e->meta >> 48 & 0xffu));
    snprintf(name, sizeof name, "nccl %s", kl ? kl : "other");
    p = memobs__tl_room(o, MEMOBS__TL_ROOM + 6 * (strlen(name) + strlen(algo) + strlen(proto)));
    p = memobs__tl_head(o, p, "X", name, 0, MEMOBS__TL_TID_COLL + (int)c, e->ts);
    p = MEMOBS__TL_LIT(p, ",\"dur\":");
    p = memobs__tl_usec(p, e->a);
    p = MEMOBS__TL_LIT(p, ",\"cat\":\"collective\",\"args\":{\"bytes\":");
    p = memobs__tl_dec(p, e->b);
    p = MEMOBS__TL_LIT(p, ",\"S\":");
    p = memobs__tl_dec(p, s);
    p = MEMOBS__TL_LIT(p, ",\"algo\":");
    p = algo[0] ? memobs__tl_jstr(p, algo) : MEMOBS__TL_LIT(p, "null");
    p = MEMOBS__TL_LIT(p, ",\"proto\":");
    p = proto[0] ? memobs__tl_jstr(p, proto) : MEMOBS__TL_LIT(p, "null");
    p = MEMOBS__TL_LIT(p, ",\"nchannels\":");
    p = memobs__tl_dec(p, e->meta >> 57);
    p = MEMOBS__TL_LIT(p, ",\"seq\":");
    p = memobs__tl_dec(p, e->c);
    p = MEMOBS__TL_LIT(p, ",\"algbw\":");
    if (e->a) p += snprintf(p, 64, "%.9g", (double)s / (double)e->a);
    else p = MEMOBS__TL_LIT(p, "null");
    p = MEMOBS__TL_LIT(p, ",\"busbw\":");
    if (e->a && memobs__coll_factor((int)k, nranks, &num, &den))
        p += snprintf(p, 64, "%.9g", (double)memobs__coll_muldiv(s, num, den) / (double)e->a);
    else p = MEMOBS__TL_LIT(p, "null");
    p = MEMOBS__TL_LIT(p, ",\"phase\":\"");
    p = memobs__tl_str(p, memobs__tl_ph[ph]);
    p = (e->meta >> 56 & 1u) ? MEMOBS__TL_LIT(p, "\",\"captured\":true}}")
                             : MEMOBS__TL_LIT(p, "\",\"captured\":false}}");
    memobs__tl_end(o, p);
}

/* What memobs__tl_write_events carries from one event to the next, and
   the event names (made once a write from memobs__dir_name, memobs__tl_ph
   and memobs__kind_name). */
typedef struct {
    uint64_t next[MEMOBS__NDIR], cum[MEMOBS__NDIR]; /* a direction's next host record; its bytes so far */
    uint64_t lane_end[MEMOBS__NDIR][MEMOBS__TL_LANES];
    uint32_t thr[MEMOBS__TL_THREADS], thr_ph[MEMOBS__TL_THREADS];
    uint64_t thr_t0[MEMOBS__TL_THREADS];
    unsigned char thr_has[MEMOBS__TL_THREADS]; /* 1: phase events, 2: region or marker events */
    unsigned char coll_seen[MEMOBS_MAX_COMMS];  /* communicators with a slice: their tracks */
    unsigned lanes[MEMOBS__NDIR], seen, nthr;
    struct memobs__tl_rqw_s *rq;              /* the requests (memobs__tl_reqs) */
    char xname[MEMOBS__NDIR][3][16];          /* "H2D prefill" */
    char cname[MEMOBS__NDIR][16];             /* "H2D bytes" */
    char aname[2][MEMOBS_MEM_KINDS][16];      /* "alloc device", "free device" */
    char lname[MEMOBS_MEM_KINDS][24];         /* "live device bytes" */
} memobs__tl_ws_t;

static void memobs__tl_ws_init(memobs__tl_ws_t *w) {
    unsigned d, ph, k;
    memset(w, 0, sizeof *w);
    memset(w->next, 0xff, sizeof w->next);
    for (d = 0; d < MEMOBS__NDIR; d++) {
        for (ph = 0; ph < 3; ph++)
            snprintf(w->xname[d][ph], sizeof w->xname[d][ph], "%s %s", memobs__dir_name[d], memobs__tl_ph[ph]);
        snprintf(w->cname[d], sizeof w->cname[d], "%s bytes", memobs__dir_name[d]);
    }
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        snprintf(w->aname[0][k], sizeof w->aname[0][k], "alloc %s", memobs__kind_name[k]);
        snprintf(w->aname[1][k], sizeof w->aname[1][k], "free %s", memobs__kind_name[k]);
        snprintf(w->lname[k], sizeof w->lname[k], "live %s bytes", memobs__kind_name[k]);
    }
    memset(memobs__tl_peer_cum, 0, sizeof memobs__tl_peer_cum);
}

/* The start of a transfer's slice, up to its phase's name: on track tid
   at ts, host-timed (a copy) or device-timed (a device copy); the storage
   tier's either way "storage". */
static char *memobs__tl_xfer_head(memobs__tl_out_t *o, const memobs__tl_ws_t *w, const memobs__tl_ev_t *e, unsigned d,
                                  unsigned ph, int tid, uint64_t ts, int timed) {
    /* room for the requests' ids and parts (memobs__tl_req_args) */
    char *p = memobs__tl_room(o, MEMOBS__TL_ROOM + MEMOBS__TL_REQ_ARGS * 48);
    p = memobs__tl_head(o, p, "X", w->xname[d][ph], 1, tid, ts);
    p = MEMOBS__TL_LIT(p, ",\"dur\":");
    p = memobs__tl_usec(p, e->b);
    if (d >= MEMOBS__NGPU) p = MEMOBS__TL_LIT(p, ",\"cat\":\"storage\",\"args\":{\"bytes\":");
    else if (timed) p = MEMOBS__TL_LIT(p, ",\"cat\":\"device copy\",\"args\":{\"bytes\":");
    else p = MEMOBS__TL_LIT(p, ",\"cat\":\"copy\",\"args\":{\"bytes\":");
    p = memobs__tl_dec(p, e->a);
    p = MEMOBS__TL_LIT(p, ",\"phase\":\"");
    return memobs__tl_str(p, memobs__tl_ph[ph]);
}

/* The requests of a transfer on the timeline, written by the writer.
   by_begin: the requests finished (of the pool's epoch) and in flight, by
   begin, each with its track; by_id: the same by id, then begin, where a
   transfer finds its request. */
typedef struct memobs__tl_rqw_s {
    memobs__tl_req_t *by_begin, *by_id;
    size_t n;
    uint32_t tracks;                 /* request tracks used */
    uint64_t drawn, not_drawn, in_flight, dropped, flows, unlinked;
} memobs__tl_rqw_t;

/* The request a transfer at t made for id belongs to: of the requests
   with that id, the last one begun at or before t (else the first), when
   t is inside its slice give or take MEMOBS__TL_REQ_SLACK (the ticks'
   conversion against the request table's clock); NULL otherwise. */
static memobs__tl_req_t *memobs__tl_req_find(const memobs__tl_rqw_t *rq, uint64_t id, uint64_t t) {
    size_t lo = 0, hi = rq ? rq->n : 0;
    memobs__tl_req_t *q;
    while (lo < hi) { /* the first of id */
        size_t mid = lo + (hi - lo) / 2;
        if (rq->by_id[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    if (!rq || lo >= rq->n || rq->by_id[lo].id != id) return NULL;
    q = &rq->by_id[lo];
    while (q + 1 < rq->by_id + rq->n && q[1].id == id && q[1].begin <= t) q++;
    if (t + MEMOBS__TL_REQ_SLACK < q->begin || t > q->end + MEMOBS__TL_REQ_SLACK) return NULL;
    return q;
}

/* The next part (a PART event) of the SPLIT transfer ev[i] after ev[j]:
   its index, or n. Its parts follow it at its time (ties by chunk and
   slot), up to the next split transfer of its direction. */
static size_t memobs__tl_next_part(const memobs__tl_ev_t *ev, size_t n, size_t i, size_t j) {
    uint64_t dir = ev[i].meta >> 4 & 15u;
    for (j++; j < n && ev[j].ts == ev[i].ts; j++) {
        unsigned type = (unsigned)(ev[j].meta & 15u);
        if ((ev[j].meta >> 4 & 15u) != dir) continue;
        if (type == MEMOBS__TL_PART) return j;
        if (type == MEMOBS__TL_XFER && (ev[j].meta & MEMOBS__TL_SPLIT)) break;
    }
    return n;
}

/* A transfer slice's request args: "request" (the one it was made for),
   or "requests" and "request_bytes" (a split transfer's, the first
   MEMOBS__TL_REQ_ARGS, "requests_total" all of them); then the args'
   and the event's end. */
static char *memobs__tl_req_args(char *p, const memobs__tl_ev_t *ev, size_t n, size_t i) {
    const memobs__tl_ev_t *e = &ev[i];
    size_t j, k = 0, total = 0;
    if (e->meta & MEMOBS__TL_RID) {
        p = MEMOBS__TL_LIT(p, ",\"request\":");
        p = memobs__tl_dec(p, e->c);
    } else if ((e->meta & 15u) == MEMOBS__TL_XFER && (e->meta & MEMOBS__TL_SPLIT)) {
        p = MEMOBS__TL_LIT(p, ",\"requests\":[");
        for (j = memobs__tl_next_part(ev, n, i, i); j < n; j = memobs__tl_next_part(ev, n, i, j), total++) {
            if (k >= MEMOBS__TL_REQ_ARGS) continue;
            if (k++) *p++ = ',';
            p = memobs__tl_dec(p, ev[j].b);
        }
        p = MEMOBS__TL_LIT(p, "],\"request_bytes\":[");
        for (j = memobs__tl_next_part(ev, n, i, i), k = 0; j < n && k < MEMOBS__TL_REQ_ARGS;
             j = memobs__tl_next_part(ev, n, i, j)) {
            if (k++) *p++ = ',';
            p = memobs__tl_dec(p, ev[j].a);
        }
        p = MEMOBS__TL_LIT(p, "],\"requests_total\":");
        p = memobs__tl_dec(p, total);
    }
    return MEMOBS__TL_LIT(p, "}}");
}

/* One flow from request id's slice to the transfer slice at ts on track
   tid: "s" on the request's track (at ts, kept inside its slice: a slice
   ends, for the importers, at its end), "f" at the transfer slice's start,
   bound to it ("bp":"e"; a slice of its track that ends there is closed
   by then, and the transfer's is written first). A request not
   drawn has none; a transfer whose request is not on the timeline
   (finished before the ring kept it, ended earlier) is counted. */
static void memobs__tl_flow(memobs__tl_out_t *o, memobs__tl_rqw_t *rq, uint64_t id, int tid, uint64_t ts) {
    memobs__tl_req_t *q = memobs__tl_req_find(rq, id, ts);
    uint64_t at;
    char *p;
    if (!q) {
        if (rq) rq->unlinked++;
        return;
    }
    if (q->lane < 0) return;
    at = ts < q->begin ? q->begin : ts < q->end ? ts : q->end > q->begin ? q->end - 1 : q->begin; /* before its end */
    q->epoch++; /* its flows */
    rq->flows++;
    p = memobs__tl_room(o, 2 * MEMOBS__TL_ROOM);
    p = memobs__tl_head(o, p, "s", "request", 1, MEMOBS__TL_TID_REQ + q->lane, at);
    p = MEMOBS__TL_LIT(p, ",\"cat\":\"request\",\"id\":");
    p = memobs__tl_dec(p, rq->flows);
    *p++ = '}';
    p = memobs__tl_head(o, p, "f", "request", 1, tid, ts);
    p = MEMOBS__TL_LIT(p, ",\"cat\":\"request\",\"id\":");
    p = memobs__tl_dec(p, rq->flows);
    p = MEMOBS__TL_LIT(p, ",\"bp\":\"e\"}");
    memobs__tl_end(o, p);
}

/* The flows of transfer ev[i], its slice at ts on track tid. */
static void memobs__tl_flows(memobs__tl_out_t *o, memobs__tl_rqw_t *rq, const memobs__tl_ev_t *ev, size_t n, size_t i,
                             int tid, uint64_t ts) {
    size_t j;
    if (ev[i].meta & MEMOBS__TL_RID) memobs__tl_flow(o, rq, ev[i].c, tid, ts);
    else if ((ev[i].meta & 15u) == MEMOBS__TL_XFER && (ev[i].meta & MEMOBS__TL_SPLIT))
        for (j = memobs__tl_next_part(ev, n, i, i); j < n; j = memobs__tl_next_part(ev, n, i, j))
            memobs__tl_flow(o, rq, ev[j].b, tid, ts);
}

/* A host-side transfer record (ev[i]): a slice on its direction's track,
   the direction's running sum, its requests' flows. */
static void memobs__tl_ev_xfer(memobs__tl_out_t *o, memobs__tl_ws_t *w, const memobs__tl_ev_t *ev, size_t n, size_t i,
                               unsigned d, unsigned ph, int out) {
    const memobs__tl_ev_t *e = &ev[i];
    char *p;
    w->cum[d] += e->a;
    w->seen |= 1u << d;
    if (!out) return;
    p = memobs__tl_xfer_head(o, w, e, d, ph, MEMOBS__TL_TID_COPY + (int)d, e->ts, 0);
    *p++ = '"';
    p = memobs__tl_req_args(p, ev, n, i);
    memobs__tl_end(o, p);
    memobs__tl_counter(o, w->cname[d], 1, e->ts, w->cum[d]);
    if (e->meta & (MEMOBS__TL_RID | MEMOBS__TL_SPLIT))
        memobs__tl_flows(o, w->rq, ev, n, i, MEMOBS__TL_TID_COPY + (int)d, e->ts);
}

/* A device-timed transfer: on the first of its direction's lanes free at
   its start, or after the one that ends first when all are busy. */
static void memobs__tl_ev_timed(memobs__tl_out_t *o, memobs__tl_ws_t *w, const memobs__tl_ev_t *ev, size_t n,
                                size_t i, unsigned d, unsigned ph, int out) {
    const memobs__tl_ev_t *e = &ev[i];
    unsigned best = 0, l;
    uint64_t ts = e->ts;
    int tid;
    char *p;
    for (l = 0; l < MEMOBS__TL_LANES; l++) {
        if (l == w->lanes[d] || w->lane_end[d][l] <= ts) break;
        if (w->lane_end[d][l] < w->lane_end[d][best]) best = l;
    }
    if (l == MEMOBS__TL_LANES) { /* all busy: after the one that ends first */
        l = best;
        ts = w->lane_end[d][l];
    }
    if (l == w->lanes[d]) w->lanes[d]++;
    w->lane_end[d][l] = ts + e->b;
    if (!out) return;
    tid = d < MEMOBS__NGPU ? MEMOBS__TL_TID_TIMED + (int)(d * MEMOBS__TL_LANES + l)
                           : MEMOBS__TL_TID_STORE + (int)((d - MEMOBS__NGPU) * MEMOBS__TL_LANES + l);
    p = memobs__tl_xfer_head(o, w, e, d, ph, tid, ts, 1);
    p = MEMOBS__TL_LIT(p, "\",\"GB/s\":");
    p += snprintf(p, 64, "%.3f", e->b ? (double)e->a / (double)e->b : 0.0);
    if (ts != e->ts) p = MEMOBS__TL_LIT(p, ",\"moved\":true");
    p = memobs__tl_req_args(p, ev, n, i);
    memobs__tl_end(o, p);
    if (e->meta & MEMOBS__TL_RID) memobs__tl_flows(o, w->rq, ev, n, i, tid, ts);
}

/* An allocation or a free (freed): an instant on the allocations track,
   and its kind's tracked bytes right after the change (exact: see
   memobs__tl_track), each event its own: a running sum from the first
   would carry any reordering of two threads' changes in time into every
   later value. */
static void memobs__tl_ev_alloc(memobs__tl_out_t *o, const memobs__tl_ws_t *w, const memobs__tl_ev_t *e, unsigned k,
                                unsigned ph, int freed) {
    uint32_t trace = (uint32_t)(e->meta >> 32);
    int dev = (int)(e->meta >> 16 & 0xffffu) - 1;
    const char *text = "";
    char *p;
    if (trace != MEMOBS_NO_TRACE) text = memobs__tl_trace(o, trace);
    p = memobs__tl_room(o, MEMOBS__TL_ROOM + 6 * strlen(text));
    p = memobs__tl_head(o, p, "i", w->aname[freed][k], 1, MEMOBS__TL_TID_ALLOC, e->ts);
    p = MEMOBS__TL_LIT(p, ",\"s\":\"t\",\"cat\":\"memory\",\"args\":{\"ptr\":\"0x");
    p = memobs__tl_hex(p, e->a);
    p = MEMOBS__TL_LIT(p, "\",\"bytes\":");
    p = memobs__tl_dec(p, e->b);
    p = MEMOBS__TL_LIT(p, ",\"kind\":\"");
    p = memobs__tl_str(p, memobs__kind_name[k]);
    p = MEMOBS__TL_LIT(p, "\",\"device\":");
    p = memobs__tl_int(p, dev);
    p = MEMOBS__TL_LIT(p, ",\"phase\":\"");
    p = memobs__tl_str(p, memobs__tl_ph[ph]);
    p = MEMOBS__TL_LIT(p, "\",\"trace_id\":");
    p = memobs__tl_int(p, trace == MEMOBS_NO_TRACE ? -1 : (int64_t)trace);
    p = MEMOBS__TL_LIT(p, ",\"trace\":");
    p = memobs__tl_jstr(p, text);
    p = MEMOBS__TL_LIT(p, "}}");
    memobs__tl_end(o, p);
    memobs__tl_counter(o, w->lname[k], 1, e->ts, e->c);
}

/* A thread's phase change: the slice of the phase it leaves. */
static void memobs__tl_ev_phase(memobs__tl_out_t *o, memobs__tl_ws_t *w, const memobs__tl_ev_t *e, unsigned ph,
                                int out) {
    unsigned t = memobs__tl_slot(w->thr, &w->nthr, (uint32_t)e->a);
    if (out) w->thr_has[t] |= 1u;
    if (w->thr_ph[t] == ph) return; /* the same phase again: one slice */
    if (out) memobs__tl_phase_slice(o, MEMOBS__TL_TID_PHASE + (int)t, w->thr_ph[t], w->thr_t0[t], e->ts);
    w->thr_ph[t] = ph;
    w->thr_t0[t] = e->ts;
}

/* A region (a slice) or a marker (an instant) on its thread's regions
   track; written only (no track for a thread whose events all went). */
static void memobs__tl_ev_region(memobs__tl_out_t *o, memobs__tl_ws_t *w, const memobs__tl_ev_t *e, int is_region,
                                 unsigned ph) {
    unsigned t = memobs__tl_slot(w->thr, &w->nthr, (uint32_t)e->b);
    const char *label = memobs_region_label((memobs_region_t)(uint32_t)(e->meta >> 32));
    char *p;
    w->thr_has[t] |= 2u;
    p = memobs__tl_room(o, MEMOBS__TL_ROOM);
    p = memobs__tl_head(o, p, is_region ? "X" : "i", label ? label : "(unknown)", 0, MEMOBS__TL_TID_REGION + (int)t,
                        e->ts);
    if (is_region) {
        p = MEMOBS__TL_LIT(p, ",\"dur\":");
        p = memobs__tl_usec(p, e->a);
        p = MEMOBS__TL_LIT(p, ",\"cat\":\"region\",\"args\":{\"depth\":");
        p = memobs__tl_dec(p, e->c);
        p = MEMOBS__TL_LIT(p, ",\"phase\":\"");
    } else {
        p = MEMOBS__TL_LIT(p, ",\"s\":\"t\",\"cat\":\"marker\",\"args\":{\"phase\":\"");
    }
    p = memobs__tl_str(p, memobs__tl_ph[ph]);
    p = MEMOBS__TL_LIT(p, "\"}}");
    memobs__tl_end(o, p);
}

/* A peer transfer: a counter per peer and direction, its bytes so far. */
static void memobs__tl_ev_peer(memobs__tl_out_t *o, const memobs__tl_ev_t *e, unsigned sub, int out) {
    uint32_t id = (uint32_t)(e->meta >> 32);
    uint64_t *v;
    char pn[MEMOBS__PEER_LABEL + 16];
    if (id >= MEMOBS_MAX_PEERS) return;
    v = &memobs__tl_peer_cum[id][sub & 1u];
    *v = *v + e->a < *v ? ~0ull : *v + e->a;
    if (!out) return;
    snprintf(pn, sizeof pn, "peer %s %s bytes", memobs__coll.peer[id].label, (sub & 1u) ? "recv" : "send");
    memobs__tl_counter(o, pn, 0, e->ts, *v);
}

/* The track names, in a fixed order, after the events. */
static void memobs__tl_track_names(memobs__tl_out_t *o, const memobs__tl_ws_t *w) {
    unsigned d, k;
    char name[64];
    for (d = 0; d < MEMOBS__NDIR; d++) {
        const char *what = d < MEMOBS__NGPU ? "copies" : "transfers";
        if (d < MEMOBS__NGPU || (w->seen >> d & 1u)) { /* the storage tier's tracks once used */
            snprintf(name, sizeof name, "%s %s", memobs__dir_name[d], what);
            memobs__tl_thread_name(o, MEMOBS__TL_TID_COPY + (int)d, name, (int)d);
        }
        for (k = 0; k < w->lanes[d]; k++) {
            int tid = d < MEMOBS__NGPU ? MEMOBS__TL_TID_TIMED + (int)(d * MEMOBS__TL_LANES + k)
                                       : MEMOBS__TL_TID_STORE + (int)((d - MEMOBS__NGPU) * MEMOBS__TL_LANES + k);
            const char *by = d < MEMOBS__NGPU ? "device" : "engine";
            if (k) snprintf(name, sizeof name, "%s %s (%s-timed) #%u", memobs__dir_name[d], what, by, k + 1);
            else snprintf(name, sizeof name, "%s %s (%s-timed)", memobs__dir_name[d], what, by);
            memobs__tl_thread_name(o, tid, name, tid);
        }
    }
    memobs__tl_thread_name(o, MEMOBS__TL_TID_ALLOC, "allocations", 100);
    for (k = 0; w->rq && k < w->rq->tracks; k++) {
        snprintf(name, sizeof name, "requests %u", k + 1);
        memobs__tl_thread_name(o, MEMOBS__TL_TID_REQ + (int)k, name, (int)(7000 + k));
    }
    for (k = 0; k < MEMOBS_MAX_COMMS; k++) {
        const memobs__comm_def_t *c = &memobs__coll.comm[k];
        char cn[MEMOBS__REG_NAME + 24];
        if (!w->coll_seen[k]) continue;
        if (c->rank >= 0) snprintf(cn, sizeof cn, "nccl %s r%d", c->name, (int)c->rank);
        else snprintf(cn, sizeof cn, "nccl %s", c->name);
        memobs__tl_thread_name(o, MEMOBS__TL_TID_COLL + (int)k, cn, (int)(5000 + k));
    }
    for (k = 0; k < w->nthr; k++) {
        const char *last = k + 1 == MEMOBS__TL_THREADS ? "s" : "", *later = k + 1 == MEMOBS__TL_THREADS ? " and later" : "";
        if (w->thr_has[k] & 1u) {
            snprintf(name, sizeof name, "phase, thread%s %u%s", last, w->thr[k], later);
            memobs__tl_thread_name(o, MEMOBS__TL_TID_PHASE + (int)k, name, (int)(1000 + k));
        }
        if (w->thr_has[k] & 2u) {
            snprintf(name, sizeof name, "regions, thread%s %u%s", last, w->thr[k], later);
            memobs__tl_thread_name(o, MEMOBS__TL_TID_REGION + (int)k, name, (int)(3000 + k));
        }
    }
}

static int memobs__tl_req_by_begin(const void *x, const void *y) {
    const memobs__tl_req_t *a = (const memobs__tl_req_t *)x, *b = (const memobs__tl_req_t *)y;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}
static int memobs__tl_req_by_id(const void *x, const void *y) {
    const memobs__tl_req_t *a = (const memobs__tl_req_t *)x, *b = (const memobs__tl_req_t *)y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* Caller holds memobs__tl.lock. The requests of a write (see
   memobs__tl_rqw_t): the finished ones of epoch ep from the ring, those in
   flight from the request table (ending at now, the table's clock), each
   given the first request track whose last slice ended before it began.
   0, or MEMOBS_ERR_NOMEM (then none: the transfers keep their ids). */
static int memobs__tl_reqs(memobs__tl_rqw_t *rq, uint32_t ep) {
    size_t cap, k = 0, i;
    uint64_t lane_end[MEMOBS__TL_REQ_LANES], now = MEMOBS__REQ_NOW();
    uint32_t busy = memobs__tls.busy, j, l;
    int table = MEMOBS__LOAD(&memobs__g.req_used.v) != 0;
    memset(rq, 0, sizeof *rq);
    memobs__mutex_lock(&memobs__att.lock);
    cap = memobs__tl_rq.n;
    if (memobs__tl_rq.epoch == ep) rq->dropped = memobs__tl_rq.dropped;
    memobs__mutex_unlock(&memobs__att.lock);
    if (table) cap += (size_t)MEMOBS__REQ_STRIPES * MEMOBS__REQ_PER_STRIPE;
    if (!cap || !ep) return MEMOBS_OK;
    memobs__tls.busy = 1;
    rq->by_begin = (memobs__tl_req_t *)MEMOBS_MALLOC(2 * cap * sizeof *rq->by_begin);
    memobs__tls.busy = busy;
    if (!rq->by_begin) return MEMOBS_ERR_NOMEM;
    memobs__mutex_lock(&memobs__att.lock);
    for (j = 0; j < memobs__tl_rq.n && k < cap; j++) {
        const memobs__tl_req_t *q = &memobs__tl_rq.r[(memobs__tl_rq.head + j) % MEMOBS__TL_REQS];
        if (q->epoch == ep) rq->by_begin[k++] = *q;
    }
    memobs__mutex_unlock(&memobs__att.lock);
    for (j = 0; table && j < MEMOBS__REQ_STRIPES; j++) {
        memobs__req_stripe_t *st = &memobs__g.req[j];
        memobs__mutex_lock(&st->lock);
        for (i = 0; i < MEMOBS__REQ_PER_STRIPE && k < cap; i++) {
            const memobs__req_t *r = &st->slot[i];
            memobs__tl_req_t *q = &rq->by_begin[k];
            unsigned p, d;
            if (!r->used) continue;
            memset(q, 0, sizeof *q);
            q->id = r->id;
            q->begin = r->begin_ns;
            q->end = now > r->begin_ns ? now : r->begin_ns;
            for (p = 0; p < MEMOBS__NPHASE; p++)
                for (d = 0; d < MEMOBS__NDIR; d++) {
                    q->bytes = memobs__sat(q->bytes, r->led.x[0][p][d]);
                    q->ops += r->led.x[1][p][d];
                }
            q->state = MEMOBS_REQUEST_IN_FLIGHT;
            q->tenant = r->tenant;
            k++;
            rq->in_flight++;
        }
        memobs__mutex_unlock(&st->lock);
    }
    rq->n = k;
    qsort(rq->by_begin, k, sizeof *rq->by_begin, memobs__tl_req_by_begin);
    for (i = 0; i < k; i++) {
        memobs__tl_req_t *q = &rq->by_begin[i];
        for (l = 0; l < rq->tracks && lane_end[l] >= q->begin; l++) {
        }
        if (l == rq->tracks && rq->tracks < MEMOBS__TL_REQ_LANES) rq->tracks++;
        q->epoch = 0; /* from here on: its flows */
        if (l == rq->tracks) {
            q->lane = -1;
            rq->not_drawn++;
            continue;
        }
        q->lane = (int32_t)l;
        lane_end[l] = q->end;
        rq->drawn++;
    }
    rq->by_id = rq->by_begin + k;
    memcpy(rq->by_id, rq->by_begin, k * sizeof *rq->by_id);
    qsort(rq->by_id, k, sizeof *rq->by_id, memobs__tl_req_by_id);
    return MEMOBS_OK;
}

/* The slices of the requests drawn, before the events (a flow's start
   binds to the slice around it, which must come first at a tie). */
static void memobs__tl_req_slices(memobs__tl_out_t *o, const memobs__tl_rqw_t *rq) {
    static const char *const state[5] = {"in flight", "completed", "aborted", "abandoned", "dropped"};
    size_t i;
    char name[40], *p;
    for (i = 0; i < rq->n; i++) {
        const memobs__tl_req_t *q = &rq->by_begin[i];
        const char *ten = NULL;
        if (q->lane < 0) continue;
        if (q->tenant) ten = q->tenant > MEMOBS_MAX_TENANTS ? "other" : memobs__att.ten[q->tenant - 1];
        snprintf(name, sizeof name, "request %llu", (unsigned long long)q->id);
        p = memobs__tl_room(o, MEMOBS__TL_ROOM + 6 * 64);
        p = memobs__tl_head(o, p, "X", name, 1, MEMOBS__TL_TID_REQ + q->lane, q->begin);
        p = MEMOBS__TL_LIT(p, ",\"dur\":");
        p = memobs__tl_usec(p, q->end - q->begin);
        p = MEMOBS__TL_LIT(p, ",\"cat\":\"request\",\"args\":{\"request\":");
        p = memobs__tl_dec(p, q->id);
        p = MEMOBS__TL_LIT(p, ",\"state\":\"");
        p = memobs__tl_str(p, state[q->state < 5 ? q->state : 0]);
        p = MEMOBS__TL_LIT(p, "\",\"tenant\":");
        p = ten ? memobs__tl_jstr(p, ten) : MEMOBS__TL_LIT(p, "null");
        p = MEMOBS__TL_LIT(p, ",\"bytes\":");
        p = memobs__tl_dec(p, q->bytes);
        p = MEMOBS__TL_LIT(p, ",\"transfers\":");
        p = memobs__tl_dec(p, q->ops);
        p = MEMOBS__TL_LIT(p, "}}");
        memobs__tl_end(o, p);
    }
}

static void memobs__xin_tl(memobs__tl_out_t *o); /* stuck transfers (section inflight) */
static void memobs__tl_write_events(memobs__tl_out_t *o, memobs__tl_ev_t *ev, size_t n, uint64_t now,
                                    memobs__tl_cut_t *cut, memobs__tl_rqw_t *rq) {
    memobs__tl_ws_t ws, *w = &ws;
    uint64_t written = 0, tf = MEMOBS__TL_WRITE_NOW();
    size_t i, from = 0; /* events before from are left out (the write limit) */
    unsigned d, k;
    memobs__tl_ws_init(w);
    w->rq = rq;
    memobs__tl_req_slices(o, rq);
    memobs__xin_tl(o);
    /* Host-side records: end before the next one of the direction. */
    for (i = n; i-- > 0;) {
        memobs__tl_ev_t *e = &ev[i];
        if ((e->meta & 15u) != MEMOBS__TL_XFER) continue;
        d = (unsigned)(e->meta >> 4 & 15u) % MEMOBS__NDIR;
        e->b = w->next[d] - e->ts < MEMOBS__TL_HOST_NS ? w->next[d] - e->ts : MEMOBS__TL_HOST_NS;
        w->next[d] = e->ts;
    }
    /* Events left out still move the state (running sums, lanes, phases),
       so what is written after them is right. */
    for (i = 0; i < n && !o->err; i++) {
        const memobs__tl_ev_t *e = &ev[i];
        unsigned type = (unsigned)(e->meta & 15u), sub = (unsigned)(e->meta >> 4 & 15u);
        unsigned ph = (unsigned)(e->meta >> 8 & 15u) % 3u;
        int out;
        if (cut->deadline && i >= from && i % MEMOBS__TL_CHECK == 0)
            memobs__tl_plan(cut, ev, n, i, &from, written, tf);
        out = i >= from;
        written += (uint64_t)out;
        switch (type) {
        case MEMOBS__TL_XFER: memobs__tl_ev_xfer(o, w, ev, n, i, sub % MEMOBS__NDIR, ph, out); break;
        case MEMOBS__TL_TIMED: memobs__tl_ev_timed(o, w, ev, n, i, sub % MEMOBS__NDIR, ph, out); break;
        case MEMOBS__TL_ALLOC:
        case MEMOBS__TL_FREE:
            if (out) memobs__tl_ev_alloc(o, w, e, sub % MEMOBS_MEM_KINDS, ph, type == MEMOBS__TL_FREE);
            break;
        case MEMOBS__TL_PHASE: memobs__tl_ev_phase(o, w, e, ph, out); break;
        case MEMOBS__TL_SAMPLE:
            if (out) memobs__tl_counter(o, (const char *)(uintptr_t)e->c, 0, e->ts, e->a);
            break;
        case MEMOBS__TL_REGION:
        case MEMOBS__TL_MARK:
            if (out) memobs__tl_ev_region(o, w, e, type == MEMOBS__TL_REGION, ph);
            break;
        case MEMOBS__TL_COLL:
            if (out) memobs__tl_coll_slice(o, e, w->coll_seen);
            break;
        case MEMOBS__TL_PEER: memobs__tl_ev_peer(o, e, sub, out); break;
        default: break;
        }
    }
    for (k = 0; k < w->nthr; k++) {
        if (w->thr_ph[k] != MEMOBS_PHASE_NONE) w->thr_has[k] |= 1u; /* a phase still set: its track shows it */
        memobs__tl_phase_slice(o, MEMOBS__TL_TID_PHASE + (int)k, w->thr_ph[k], w->thr_t0[k],
                               now > w->thr_t0[k] ? now : w->thr_t0[k]);
    }
    memobs__tl_track_names(o, w);
}

#define MEMOBS__TL_OFF_NOTE                                                                                 \
    "the timeline is off, so this trace holds no events: turn it on with memobs_timeline_start(N), "      \
    "MEMOBS_TIMELINE=PATH or MEMOBS_TIMELINE_EVENTS=N before the work to be traced"

uint64_t memobs_timeline_get_write_limit(void) {
    memobs_init();
    return MEMOBS__LOAD(&memobs__tl.write_limit_ns.v);
}

uint64_t memobs_timeline_set_write_limit(uint64_t ns) {
    memobs_init();
    if (ns > MEMOBS__REQ_TIMEOUT_MAX_NS) ns = MEMOBS__REQ_TIMEOUT_MAX_NS;
    return MEMOBS__XCHG(&memobs__tl.write_limit_ns.v, ns);
}

int memobs_write_timeline(FILE *f) {
    memobs__tl_out_t o;
    memobs__tl_cut_t cut;
    memobs__tl_ev_t *ev;
    memobs_identity_t id;
    memobs_timeline_stats_t st;
    memobs__tl_rqw_t rq;
    uint64_t tkept[MEMOBS__TL_THREADS], tdropped[MEMOBS__TL_THREADS], limit;
    size_t n, i;
    uint32_t busy = memobs__tls.busy;
    unsigned t, nt = 0;
    int rc = MEMOBS_OK;
    char *p;
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_timeline: NULL FILE");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    memset(&cut, 0, sizeof cut);
    limit = MEMOBS__LOAD(&memobs__tl.write_limit_ns.v);
    if (limit) { /* the copy and the sort count too */
        cut.deadline = MEMOBS__TL_WRITE_NOW() + limit;
        cut.span = limit / 10u < 1000000000u ? limit / 10u : 1000000000u;
    }
    memobs_get_identity(&id);
    memset(&o, 0, sizeof o);
    o.f = f;
    pthread_mutex_lock(&memobs__tl.lock);
    ev = memobs__tl_snapshot(&n);
    if (!ev && n) {
        pthread_mutex_unlock(&memobs__tl.lock);
        memobs__log(MEMOBS_LOG_ERROR, "cannot allocate a copy of the timeline's events; no trace written");
        return MEMOBS_ERR_NOMEM;
    }
    memset(tkept, 0, sizeof tkept);
    memset(tdropped, 0, sizeof tdropped);
    memobs__tl_count(&st, tkept, tdropped);
    memobs__tls.busy = 1; /* the buffer, the cache and the symbolizer: not the engine's allocations */
    o.cache = (memobs__tl_text_t *)MEMOBS_MALLOC(64 * sizeof *o.cache);
    o.buf = (char *)MEMOBS_MALLOC(MEMOBS__TL_BUF);
    memobs__tls.busy = busy;
    o.cap = MEMOBS__TL_BUF;
    if (!o.buf) {
        o.buf = memobs__tl_small;
        o.cap = sizeof memobs__tl_small;
    }
    for (i = 0; o.cache && i < 64; i++) o.cache[i].id = MEMOBS_NO_TRACE;
    snprintf(o.pid, sizeof o.pid, ",\"pid\":%d,\"tid\":", (int)id.pid);
    p = memobs__tl_room(&o, MEMOBS__TL_ROOM);
    p = MEMOBS__TL_LIT(p, "{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\"");
    p = memobs__tl_str(p, o.pid);
    p = MEMOBS__TL_LIT(p, "0,\"args\":{\"name\":\"memobs rank ");
    p = memobs__tl_int(p, id.rank);
    p = MEMOBS__TL_LIT(p, "\"}}");
    memobs__tl_end(&o, p);
    o.n = 1;
    if (memobs__tl_reqs(&rq, st.capacity ? memobs__tl.epoch : 0) != MEMOBS_OK)
        memobs__log(MEMOBS_LOG_ERROR, "cannot allocate the timeline's requests; the trace has no request tracks");
    memobs__tl_write_events(&o, ev, n, memobs_now_ns(), &cut, &rq);
    p = memobs__tl_room(&o, MEMOBS__TL_ROOM + 6 * sizeof id.host);
    p = MEMOBS__TL_LIT(p, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"writer\":\"memobs " MEMOBS_VERSION
                          "\",\"host\":");
    p = memobs__tl_jstr(p, id.host);
    p = MEMOBS__TL_LIT(p, ",\"rank\":");
    p = memobs__tl_int(p, id.rank);
    p = st.capacity ? MEMOBS__TL_LIT(p, ",\"timeline\":\"on\",\"capacity\":")
                    : MEMOBS__TL_LIT(p, ",\"timeline\":\"off\",\"capacity\":");
    p = memobs__tl_dec(p, st.capacity);
    p = MEMOBS__TL_LIT(p, ",\"recorded\":");
    p = memobs__tl_dec(p, st.recorded);
    p = MEMOBS__TL_LIT(p, ",\"kept\":");
    p = memobs__tl_dec(p, st.kept);
    p = MEMOBS__TL_LIT(p, ",\"dropped\":");
    p = memobs__tl_dec(p, st.dropped);
    p = MEMOBS__TL_LIT(p, ",\"in_trace\":");
    p = memobs__tl_dec(p, (uint64_t)n - cut.left);
    if (st.capacity) {
        /* the write limit: events of the timeline not written, the oldest
           and newest of them */
        p = MEMOBS__TL_LIT(p, ",\"left_out\":");
        p = memobs__tl_dec(p, cut.left);
        p = MEMOBS__TL_LIT(p, ",\"write_limit_s\":");
        p += snprintf(p, 32, "%.9g", (double)limit / 1e9);
        if (cut.left) {
            p = MEMOBS__TL_LIT(p, ",\"left_out_from_us\":");
            p = memobs__tl_usec(p, cut.first);
            p = MEMOBS__TL_LIT(p, ",\"left_out_to_us\":");
            p = memobs__tl_usec(p, cut.last);
        }
        p = MEMOBS__TL_LIT(p, ",\"chunk\":");
        p = memobs__tl_dec(p, st.chunk);
        /* the requests: drawn on a track, not (all tracks taken), in flight
           at the write, finished but no longer kept; the flows drawn, the
           transfers whose request is not on the timeline */
        p = MEMOBS__TL_LIT(p, ",\"requests\":{\"tracks\":");
        p = memobs__tl_dec(p, rq.tracks);
        p = MEMOBS__TL_LIT(p, ",\"drawn\":");
        p = memobs__tl_dec(p, rq.drawn);
        p = MEMOBS__TL_LIT(p, ",\"not_drawn\":");
        p = memobs__tl_dec(p, rq.not_drawn);
        p = MEMOBS__TL_LIT(p, ",\"in_flight\":");
        p = memobs__tl_dec(p, rq.in_flight);
        p = MEMOBS__TL_LIT(p, ",\"dropped\":");
        p = memobs__tl_dec(p, rq.dropped);
        p = MEMOBS__TL_LIT(p, ",\"flows\":");
        p = memobs__tl_dec(p, rq.flows);
        p = MEMOBS__TL_LIT(p, ",\"unlinked\":");
        p = memobs__tl_dec(p, rq.unlinked);
        *p++ = '}';
        p = MEMOBS__TL_LIT(p, ",\"clock\":\"");
        p = memobs__tl_str(p, memobs_clock_source());
        p = MEMOBS__TL_LIT(p, "\",\"ns_per_tick\":");
        p += snprintf(p, 32, "%.9g", memobs_clock_ns_per_tick());
        p = MEMOBS__TL_LIT(p, ",\"threads\":[");
        memobs__tl_end(&o, p);
        for (t = 0; t < MEMOBS__TL_THREADS; t++) {
            if (!tkept[t] && !tdropped[t]) continue;
            p = memobs__tl_room(&o, MEMOBS__TL_ROOM);
            if (nt++) *p++ = ',';
            p = MEMOBS__TL_LIT(p, "{\"thread\":");
            p = memobs__tl_dec(p, t + 1u);
            p = MEMOBS__TL_LIT(p, ",\"recorded\":");
            p = memobs__tl_dec(p, tkept[t] + tdropped[t]);
            p = MEMOBS__TL_LIT(p, ",\"kept\":");
            p = memobs__tl_dec(p, tkept[t]);
            p = MEMOBS__TL_LIT(p, ",\"dropped\":");
            p = memobs__tl_dec(p, tdropped[t]);
            *p++ = '}';
            memobs__tl_end(&o, p);
        }
        p = memobs__tl_room(&o, MEMOBS__TL_ROOM);
        p = MEMOBS__TL_LIT(p, "]}}\n");
    } else {
        p = MEMOBS__TL_LIT(p, ",\"note\":\"" MEMOBS__TL_OFF_NOTE "\"}}\n");
    }
    memobs__tl_end(&o, p);
    memobs__tl_flush(&o);
    pthread_mutex_unlock(&memobs__tl.lock);
    if (!st.capacity)
        memobs__warn_once(MEMOBS__W_TIMELINE_OFF, "memobs_write_timeline: %s", MEMOBS__TL_OFF_NOTE);
    if (cut.left)
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_timeline: the trace's write limit (MEMOBS_TIMELINE_WRITE_S=%.9g) "
                    "left out %llu of its %llu events (older than the newest that fit, or all the rest once the "
                    "limit passed); otherData.left_out says so", (double)limit / 1e9, (unsigned long long)cut.left,
                    (unsigned long long)n);
    memobs__tls.busy = 1;
    if (o.cache) MEMOBS_FREE(o.cache);
    if (o.buf != memobs__tl_small) MEMOBS_FREE(o.buf);
    if (ev) MEMOBS_FREE(ev);
    if (rq.by_begin) MEMOBS_FREE(rq.by_begin);
    memobs__tls.busy = busy;
    if (o.err || fflush(f) != 0 || ferror(f)) rc = MEMOBS_ERR_IO;
    return rc;
}

static int memobs__write_timeline_f(FILE *f, int unused) {
    (void)unused;
    return memobs_write_timeline(f);
}

int memobs_write_timeline_file(const char *path) { return memobs__output_file(MEMOBS__OUT_TIMELINE, path, 0); }

/* fork(): the child gets the locks free; the chunks of threads that do
   not exist there join the queue (a slot one was writing stays unread),
   their shards (recycled by memobs__atfork_child, which runs first) forget
   them. */
static void memobs__tl_prepare(void) {
    pthread_mutex_lock(&memobs__tl.lock);
    pthread_mutex_lock(&memobs__clk.lock);
    memobs__spin_lock(&memobs__tl.pool_lock);
}
static void memobs__tl_parent(void) {
    memobs__spin_unlock(&memobs__tl.pool_lock);
    pthread_mutex_unlock(&memobs__clk.lock);
    pthread_mutex_unlock(&memobs__tl.lock);
}
static void memobs__tl_child(void) {
    memobs__tl_pool_t *p = memobs__tl.pool;
    memobs__shard_t *s;
    uint32_t j;
    for (j = 0; p && j < p->fresh; j++)
        if (p->chunk[j].state == MEMOBS__TLC_OWNED && p->chunk[j].owner != (void *)memobs__tls.shard)
            memobs__tl_leave(p, &p->chunk[j]);
    for (s = memobs__g.shards; s; s = s->next) {
        if (s == memobs__tls.shard) continue;
        MEMOBS__STORE(&s->tl_busy.v, 0u);
        s->tl_chunk = NULL;
        s->tl_epoch = 0;
        s->tl_i = 0;
    }
    memobs__tl_parent();
}

/* The timeline's variables and their names before 1.0 (still read; the
   new name wins when both are set). *used: the name that was read. */
static __attribute__((unused)) const char *memobs__tl_getenv(const char *name, const char *old, const char **used) {
    const char *s = getenv(name);
    *used = name;
    if (!s && (s = getenv(old)) != NULL) *used = old;
    return s;
}

/* Runs inside memobs__init_once. */
static void memobs__tl_env(void) {
    MEMOBS__STORE(&memobs__tl.write_limit_ns.v, MEMOBS__TL_WRITE_DEFAULT_NS);
    pthread_mutex_init(&memobs__tl.lock, NULL);
    pthread_mutex_init(&memobs__clk.lock, NULL); /* the clock's: set up at its first use */
    pthread_atfork(memobs__tl_prepare, memobs__tl_parent, memobs__tl_child);
#ifdef MEMOBS_DISABLE
    (void)memobs__write_timeline_f;
#else
    const char *s, *var;
    uint64_t cap = MEMOBS__TL_DEFAULT;
    int on = 0;
    if ((s = memobs__tl_getenv("MEMOBS_TIMELINE_EVENTS", "MEMOBS_TRACE_EVENTS", &var)) != NULL) {
        uint64_t v;
        if (!memobs__parse_bytes(s, &v) || v > MEMOBS__TL_MAX) {
            memobs__log(MEMOBS_LOG_WARN, "%s='%s' is not an event count up to %llu (like 65536 or 64K); "
                        "using %llu", var, s, (unsigned long long)MEMOBS__TL_MAX, (unsigned long long)cap);
            on = 1;
        } else {
            cap = v;
            on = v > 0;
        }
    }
    if ((s = memobs__tl_getenv("MEMOBS_TIMELINE_WRITE_S", "MEMOBS_TRACE_WRITE_S", &var)) != NULL) {
        uint64_t ns;
        if (memobs__parse_seconds(s, MEMOBS__REQ_TIMEOUT_MAX_NS, &ns)) MEMOBS__STORE(&memobs__tl.write_limit_ns.v, ns);
        else memobs__log(MEMOBS_LOG_WARN, "%s='%s' is not a number of seconds from 0 (no limit) to "
                         "1000000000 (like 20 or 2.5); using 20", var, s);
    }
    if (cap && memobs__output_env(MEMOBS__OUT_TIMELINE)) on = 1; /* MEMOBS_TIMELINE_EVENTS=0 wins */
    if (on) (void)memobs__tl_make(cap);
#endif
}

/* ======================================================================== */
/* Private: identity                                             >>identity */
/* ======================================================================== */

/* in, cut to fit len at a character boundary, with each byte that is not
   UTF-8 replaced by U+FFFD: identity strings come from the environment
   and the program, and every JSON export carries them. */
static void memobs__utf8_copy(char *out, size_t len, const char *in) {
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    if (!len) return;
    while (*p) {
        size_t k = memobs__utf8_len(p);
        const char *add = k ? (const char *)p : "\xEF\xBF\xBD";
        size_t n = k ? k : 3;
        if (o + n + 1 > len) break;
        memcpy(out + o, add, n);
        o += n;
        p += k ? k : 1;
    }
    out[o] = 0;
}

int memobs_set_identity(const char *job_id, int rank, int local_rank, int world_size) {
    if (world_size < 1 || rank < 0 || rank >= world_size || local_rank < 0 || local_rank >= world_size) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_set_identity: rank %d, local rank %d, world size %d is inconsistent; "
                    "identity unchanged", rank, local_rank, world_size);
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    if (job_id) memobs__utf8_copy(memobs__g.identity.job_id, sizeof memobs__g.identity.job_id, job_id);
    if (rank != memobs__g.identity.rank) {
        unsigned i;
        memobs__g.identity.rank = rank;
        for (i = 0; i < MEMOBS__OUTS; i++) /* a %r path follows the rank (a rename is told at the write) */
            if (MEMOBS__LOAD(&memobs__g.out[i].on.v) && memobs__g.out[i].has_rank) memobs__dest_resolve(i, 1);
    }
    memobs__g.identity.local_rank = local_rank;
    memobs__g.identity.world_size = world_size;
    pthread_mutex_unlock(&memobs__g.lock);
    return MEMOBS_OK;
}

void memobs_get_identity(memobs_identity_t *out) {
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return;
    }
    memobs_init();
    pthread_mutex_lock(&memobs__g.lock);
    *out = memobs__g.identity;
    pthread_mutex_unlock(&memobs__g.lock);
}

/* ======================================================================== */
/* Private: summary and reset                                     >>summary */
/* ======================================================================== */

/* Bytes and counter values are summed saturating (memobs__sat, memobs__win):
   the shared shard saturated, or a sum past UINT64_MAX, reads UINT64_MAX. */

/* One thread's bytes of a direction and phase in the window, unwrapped.
   The record's plain add wraps past 2^64 (256 adds of MEMOBS_MAX_BYTES);
   its size slots say how far: a record in slot b >= 1 moved more than
   2^(b-1) bytes (n at once: n at their mean size, more than n x 2^(b-1)),
   so the window's true total T is at least L = sum(k_b x 2^(b-1)) and at
   most 2L + k_0 < L + 2^64 while L < 2^64. The one T in [L, L + 2^64)
   with T = v mod 2^64 is then L + (v - L mod 2^64); T or L at 2^64 or
   above reads UINT64_MAX. k[]: the window's count per slot, loaded before
   v (a record made between the loads only raises T above L). */
static uint64_t memobs__xfer_unwrap(uint64_t v, const uint64_t *k) {
    uint64_t lo = 0, t;
    unsigned b;
    for (b = 1; b < MEMOBS_SIZE_BUCKETS; b++) {
        if (!k[b]) continue;
        if (k[b] > (UINT64_MAX >> (b - 1))) return UINT64_MAX;
        lo = memobs__sat(lo, k[b] << (b - 1));
    }
    if (lo == UINT64_MAX) return UINT64_MAX;
    t = lo + (v - lo);
    return t < lo ? UINT64_MAX : t;
}

/* k[]: the window's count per size slot (see memobs__xfer_unwrap). */
static void memobs__xfer_sum(memobs_xfer_t *x, memobs__shard_t *s, unsigned ph, unsigned d, const uint64_t *k) {
    uint64_t v = MEMOBS__LOAD(&s->xfer[ph][d].v);
    if (s->shared) x->bytes = memobs__sat(x->bytes, memobs__win(v, s->base_xfer[ph][d])); /* saturating adds */
    else x->bytes = memobs__sat(x->bytes, memobs__xfer_unwrap(v - s->base_xfer[ph][d], k));
}

static void memobs__dirs_add(memobs_dirs_t *to, const memobs_dirs_t *a) {
    unsigned d;
    for (d = 0; d < MEMOBS_DIRS; d++) {
        memobs_xfer_t *x = memobs_dirs_at(to, d);
        const memobs_xfer_t *y = memobs_dirs_get(a, d);
        x->bytes = memobs__sat(x->bytes, y->bytes);
        x->count += y->count;
    }
}

/* A size distribution's percentiles and max from its buckets. */
static void memobs__sizes_finish(memobs_xfer_sizes_t *z) {
    static const unsigned q[3] = {50, 90, 99};
    uint64_t *out[3], cum = 0;
    unsigned b, k = 0;
    out[0] = &z->p50; out[1] = &z->p90; out[2] = &z->p99;
    z->count = 0;
    for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++) {
        z->count += z->buckets[b];
        if (z->buckets[b]) z->max = (uint64_t)1 << b;
    }
    for (b = 0; b < MEMOBS_SIZE_BUCKETS && k < 3 && z->count; b++) {
        cum += z->buckets[b];
        /* the smallest bucket holding the ceil(count * q / 100)-th record */
        while (k < 3 && cum >= z->count / 100 * q[k] + (z->count % 100 * q[k] + 99) / 100) *out[k++] = (uint64_t)1 << b;
    }
}

/* At most len - 1 bytes of a string another thread may be rewriting. */
static void memobs__str_read(char *to, const char *from, size_t len) {
    size_t i;
    for (i = 0; i + 1 < len && (to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED)) != 0; i++) {
    }
    to[i] = 0;
}

/* memobs_get_summary's figures but the requests in flight, with atomic
   loads: the caller holds memobs__g.lock (a reset moves the baselines
   under it) or, the crash writer, nothing. cur: the tracker's current
   bytes per kind, read just before (the peaks are read after them). */
static void memobs__summary_read(memobs_summary_t *out, const uint64_t *cur) {
    memobs_dirs_t *by_phase[MEMOBS__NPHASE], *by_att[MEMOBS__NPHASE];
    uint64_t ab[MEMOBS__NPHASE][MEMOBS__NDIR], an[MEMOBS__NPHASE][MEMOBS__NDIR]; /* a shard's attributed part */
    const memobs_identity_t *gid = &memobs__g.identity;
    memobs__shard_t *s;
    uint64_t st[MEMOBS__ST_COUNT];
    uint32_t i, c, n;
    memset(out, 0, sizeof *out);
    by_phase[MEMOBS_PHASE_NONE] = &out->unphased;
    by_phase[MEMOBS_PHASE_PREFILL] = &out->prefill;
    by_phase[MEMOBS_PHASE_DECODE] = &out->decode;
    by_att[MEMOBS_PHASE_NONE] = &out->attributed.unphased;
    by_att[MEMOBS_PHASE_PREFILL] = &out->attributed.prefill;
    by_att[MEMOBS_PHASE_DECODE] = &out->attributed.decode;
    out->enabled = memobs_get_enabled();
    out->window_ns = memobs_now_ns() - MEMOBS__LOAD(&memobs__g.window_start_ns.v);
    out->ncounters = __atomic_load_n(&memobs__g.ncounters.v, __ATOMIC_ACQUIRE);
    if (out->ncounters > MEMOBS_MAX_COUNTERS) out->ncounters = MEMOBS_MAX_COUNTERS;
    for (s = memobs__shard_first(), n = 0; s && n < MEMOBS__MAX_SHARDS; s = memobs__shard_next(s), n++) {
        /* the attributed part first: a record adds to it after the figures; and
           no more than this shard's own figures (a reset's baselines are
           taken one after the other: a record between them is in one) */
        for (i = 0; i < MEMOBS__NPHASE; i++)
            for (c = 0; c < MEMOBS__NDIR; c++) {
                ab[i][c] = memobs__sat(memobs__win(MEMOBS__LOAD(&s->att.x[0][i][c].v), s->base_att[0][0][i][c]),
                                       memobs__win(MEMOBS__LOAD(&s->attx[0][i][c].v), s->base_att[1][0][i][c]));
                an[i][c] = MEMOBS__LOAD(&s->att.x[1][i][c].v) - s->base_att[0][1][i][c] +
                           MEMOBS__LOAD(&s->attx[1][i][c].v) - s->base_att[1][1][i][c];
            }
        for (i = 0; i < MEMOBS__NPHASE; i++)
            for (c = 0; c < MEMOBS__NDIR; c++) {
                memobs_xfer_t *x = memobs_dirs_at(by_phase[i], c), *a = memobs_dirs_at(by_att[i], c), own = {0, 0};
                uint64_t k[MEMOBS__XSLOTS];
                uint32_t b;
                for (b = 0; b < MEMOBS__XSLOTS; b++) { /* the count is the slots' sum */
                    k[b] = MEMOBS__LOAD(&s->xsize[i][c][b].v) - s->base_xsize[i][c][b];
                    out->sizes[c].buckets[b < MEMOBS_SIZE_BUCKETS ? b : 0] += k[b]; /* slot 63: size 0 */
                    own.count += k[b];
                }
                memobs__xfer_sum(&own, s, i, c, k); /* after the counts */
                x->bytes = memobs__sat(x->bytes, own.bytes);
                x->count += own.count;
                a->bytes = memobs__sat(a->bytes, ab[i][c] < own.bytes ? ab[i][c] : own.bytes);
                a->count += an[i][c] < own.count ? an[i][c] : own.count;
            }
        for (c = 0; c < out->ncounters; c++)
            out->counters[c].value = memobs__sat(out->counters[c].value,
                                                 memobs__win(MEMOBS__LOAD(&s->user[c].v), s->base_user[c]));
        for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
            uint64_t a = MEMOBS__LOAD(&s->trk[c][0].v), fr = MEMOBS__LOAD(&s->trk[c][1].v);
            out->mem[c].allocs += a - s->base_trk[c][0];
            out->mem[c].frees += fr - s->base_trk[c][1];
            out->mem[c].alloc_bytes =
                memobs__sat(out->mem[c].alloc_bytes, memobs__win(MEMOBS__LOAD(&s->trk[c][2].v), s->base_trk[c][2]));
            out->mem[c].pending_frees += MEMOBS__LOAD(&s->trk[c][3].v); /* state: no baseline */
            out->mem[c].pending_bytes += MEMOBS__LOAD(&s->trk[c][4].v);
            out->mem[c].live += a - fr; /* wraps back when summed over shards */
        }
    }
    for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
        out->mem[c].current_bytes = cur[c];
        out->mem[c].peak_bytes = memobs__esc_peak(c); /* the fold cannot lower it */
    }
    for (c = 0; c < out->ncounters; c++) {
        const char *h = __atomic_load_n(&memobs__g.counters[c].help, __ATOMIC_ACQUIRE);
        out->counters[c].name = memobs__g.counters[c].name;
        out->counters[c].help = h ? h : "";
    }
    for (i = 0; i < MEMOBS__ST_COUNT; i++) st[i] = MEMOBS__LOAD(&memobs__g.st[i].v) - memobs__g.st_base[i];
    for (i = 0; i < MEMOBS__NPHASE; i++) {
        for (c = 0; c < MEMOBS__NDIR; c++) {
            memobs__u64_t *t = memobs__g.timed[i][c];
            out->timed[i][c].bytes = memobs__win(MEMOBS__LOAD(&t[0].v), memobs__g.timed_base[i][c][0]);
            out->timed[i][c].count = MEMOBS__LOAD(&t[1].v) - memobs__g.timed_base[i][c][1];
            out->timed[i][c].ns = memobs__win(MEMOBS__LOAD(&t[2].v), memobs__g.timed_base[i][c][2]);
        }
    }
    out->timed_in_flight_copies = MEMOBS__LOAD(&memobs__g.timed_in_flight[0].v);
    out->timed_in_flight_bytes = MEMOBS__LOAD(&memobs__g.timed_in_flight[1].v);
    memobs__xin_read(&out->in_flight, MEMOBS__XIN_NOW());
    out->manual.apart = __atomic_load_n(&memobs__g.apart, __ATOMIC_RELAXED) != 0;
    for (i = 0; i < MEMOBS__NPHASE; i++) {
        memobs_dirs_t *m = i == MEMOBS_PHASE_PREFILL ? &out->manual.prefill
                           : i == MEMOBS_PHASE_DECODE ? &out->manual.decode : &out->manual.unphased;
        for (c = 0; c < MEMOBS__NDIR; c++) {
            memobs_xfer_t *x = memobs_dirs_at(m, c);
            x->bytes = memobs__win(MEMOBS__LOAD(&memobs__g.manual[i][c][0].v), memobs__g.manual_base[i][c][0]);
            x->count = MEMOBS__LOAD(&memobs__g.manual[i][c][1].v) - memobs__g.manual_base[i][c][1];
        }
        memobs__dirs_add(&out->manual.total, m);
    }
    memobs__hist_read(&memobs__g.ttft, &out->ttft);
    memobs__hist_read(&memobs__g.tpot, &out->tpot);
    memobs__hist_read(&memobs__g.e2e, &out->e2e);
    memobs__str_read(out->identity.job_id, gid->job_id, sizeof out->identity.job_id);
    memobs__str_read(out->identity.host, gid->host, sizeof out->identity.host);
    out->identity.rank = __atomic_load_n(&gid->rank, __ATOMIC_RELAXED);
    out->identity.local_rank = __atomic_load_n(&gid->local_rank, __ATOMIC_RELAXED);
    out->identity.world_size = __atomic_load_n(&gid->world_size, __ATOMIC_RELAXED);
    out->identity.pid = __atomic_load_n(&gid->pid, __ATOMIC_RELAXED);
    for (i = 0; i < MEMOBS__NPHASE; i++) memobs__dirs_add(&out->total, by_phase[i]);
    for (i = 0; i < MEMOBS__NPHASE; i++) memobs__dirs_add(&out->attributed.total, by_att[i]);
    out->attributed.orphan_bytes = memobs__win(MEMOBS__LOAD(&memobs__g.st[MEMOBS__ST_ATT_ORPHAN].v),
                                               memobs__g.st_base[MEMOBS__ST_ATT_ORPHAN]);
    out->attributed.bind_misuse = st[MEMOBS__ST_ATT_BIND];
    out->attributed.tenant_misuse = st[MEMOBS__ST_ATT_TENANT];
    for (c = 0; c < MEMOBS__NDIR; c++) {
        out->sizes[c].bytes = memobs_dirs_at(&out->total, c)->bytes;
        memobs__sizes_finish(&out->sizes[c]);
    }
    out->requests_begun = st[MEMOBS__ST_REQ_BEGUN];
    out->requests_completed = st[MEMOBS__ST_REQ_COMPLETED];
    out->requests_aborted = st[MEMOBS__ST_REQ_ABORTED];
    out->requests_abandoned = st[MEMOBS__ST_REQ_ABANDONED];
    out->requests_dropped = st[MEMOBS__ST_REQ_DROPPED];
    out->requests_unknown = st[MEMOBS__ST_REQ_UNKNOWN];
    out->requests_duplicate = st[MEMOBS__ST_REQ_DUPLICATE];
    out->ttft_unmatched = st[MEMOBS__ST_TTFT_UNMATCHED];
    out->tpot_unarmed = st[MEMOBS__ST_TPOT_UNARMED];
    out->bad_records = st[MEMOBS__ST_BAD_RECORD];
    out->untracked_threads = st[MEMOBS__ST_UNTRACKED];
    out->signal_dropped = st[MEMOBS__ST_NESTED];
    out->region_unmatched_ends = st[MEMOBS__ST_REGION_UNMATCHED];
    out->region_too_deep = st[MEMOBS__ST_REGION_DEEP];
    out->region_names_dropped = st[MEMOBS__ST_REGION_DROPPED];
    out->tracking = MEMOBS__LOAD(&memobs__g.trk.used.v) != 0;
    out->track.frees_unknown = st[MEMOBS__ST_FREE_UNKNOWN];
    out->track.frees_double = st[MEMOBS__ST_FREE_DOUBLE];
    out->track.frees_null = st[MEMOBS__ST_FREE_NULL];
    out->track.allocs_null = st[MEMOBS__ST_ALLOC_NULL];
    out->track.allocs_zero = st[MEMOBS__ST_ALLOC_ZERO];
    out->track.allocs_duplicate = st[MEMOBS__ST_ALLOC_DUP];
    out->track.allocs_bad_kind = st[MEMOBS__ST_ALLOC_BAD_KIND];
    out->track.untracked = st[MEMOBS__ST_UNTRACKED_ALLOCS];
    out->track.untracked_bytes = st[MEMOBS__ST_UNTRACKED_BYTES];
    out->track.untracked_frees = st[MEMOBS__ST_UNTRACKED_FREES];
    out->track.untracked_live = MEMOBS__LOAD(&memobs__g.trk.untracked_live.v);
    out->track.traces = __atomic_load_n(&memobs__g.trk.ntraces.v, __ATOMIC_ACQUIRE);
    out->track.traces_dropped = st[MEMOBS__ST_TRACE_DROPPED];
    out->track.capacity = memobs__g.trk.capacity;
}

void memobs_get_summary(memobs_summary_t *out) {
    uint64_t cur[MEMOBS__ACCTS];
    uint32_t i;
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return;
    }
    memobs_init();
    if (__atomic_load_n(&memobs__g.pre_summary, __ATOMIC_ACQUIRE)) memobs__g.pre_summary();
    memobs__req_sweep(); /* abandoned requests counted before the counts are read */
    memobs__xin_check(MEMOBS__XIN_NOW()); /* stuck transfers said before the figures are read */
    pthread_mutex_lock(&memobs__g.lock);
    memobs__esc_read(cur);
    memobs__summary_read(out, cur);
    pthread_mutex_unlock(&memobs__g.lock);
    for (i = 0; i < MEMOBS__REQ_STRIPES && MEMOBS__LOAD(&memobs__g.req_used.v); i++) {
        memobs__mutex_lock(&memobs__g.req[i].lock);
        out->requests_in_flight += memobs__g.req[i].n;
        memobs__mutex_unlock(&memobs__g.req[i].lock);
    }
}

void memobs_reset(void) {
    memobs__shard_t *s;
    unsigned i;
    memobs_init();
    memobs__xin_reset();
    pthread_mutex_lock(&memobs__g.lock);
    for (s = memobs__g.shards; s; s = s->next) {
        uint64_t *bx = &s->base_xfer[0][0];
        memobs__u64_t *x = &s->xfer[0][0];
        for (i = 0; i < MEMOBS__NPHASE * MEMOBS__NDIR; i++) bx[i] = MEMOBS__LOAD(&x[i].v);
        for (i = 0; i < MEMOBS__NPHASE * MEMOBS__NDIR * MEMOBS__XSLOTS; i++) {
            uint64_t v = MEMOBS__LOAD(&(&s->xsize[0][0][0])[i].v);
            if ((&s->base_xsize[0][0][0])[i] != v) (&s->base_xsize[0][0][0])[i] = v; /* unused pages stay untouched */
        }
        for (i = 0; i < MEMOBS_MAX_COUNTERS; i++) s->base_user[i] = MEMOBS__LOAD(&s->user[i].v);
        for (i = 0; i < MEMOBS_MEM_KINDS * 5; i++) (&s->base_trk[0][0])[i] = MEMOBS__LOAD(&(&s->trk[0][0])[i].v);
        for (i = 0; i < 2 * MEMOBS__NPHASE * MEMOBS__NDIR; i++) {
            (&s->base_att[0][0][0][0])[i] = MEMOBS__LOAD(&(&s->att.x[0][0][0])[i].v);
            (&s->base_att[1][0][0][0])[i] = MEMOBS__LOAD(&(&s->attx[0][0][0])[i].v);
        }
    }
    memobs__att_rebase();
    /* The window's peak starts at what is allocated now. */
    memobs__esc_rebase();
    for (i = 0; i < MEMOBS__ST_COUNT; i++) memobs__g.st_base[i] = MEMOBS__LOAD(&memobs__g.st[i].v);
    for (i = 0; i < MEMOBS__NPHASE * MEMOBS__NDIR * 3; i++)
        (&memobs__g.timed_base[0][0][0])[i] = MEMOBS__LOAD(&(&memobs__g.timed[0][0][0])[i].v);
    for (i = 0; i < MEMOBS__NPHASE * MEMOBS__NDIR * 2; i++)
        (&memobs__g.manual_base[0][0][0])[i] = MEMOBS__LOAD(&(&memobs__g.manual[0][0][0])[i].v);
    memobs__hist_rebase(&memobs__g.ttft);
    memobs__hist_rebase(&memobs__g.tpot);
    memobs__hist_rebase(&memobs__g.e2e);
    memobs__reg_rebase();
    memobs__coll_rebase();
    MEMOBS__STORE(&memobs__g.window_start_ns.v, memobs_now_ns());
    pthread_mutex_unlock(&memobs__g.lock);
}

/* ======================================================================== */
/* Private: outputs, one row each                                 >>outputs */
/* ======================================================================== */

/* The rows are MEMOBS__OUTPUT_TABLE (next to memobs__g, which holds a
   destination per row); here is all that they drive. */

#define MEMOBS__WW_QUIET 1u  /* flags of memobs__write_whole: no warning */
#define MEMOBS__WW_BINARY 2u /* never to a terminal */

/* The writers and what runs before them, defined in their sections. */
#define MEMOBS__OUT_DECL(id, var, alias, what, binary, write, pre, api, env, crash, store) \
    static int write(FILE *f, int fmt);
MEMOBS__OUTPUT_TABLE(MEMOBS__OUT_DECL)
#undef MEMOBS__OUT_DECL
static void memobs__sl_exit_sample(unsigned which);
static int memobs__pmp_store(const char *path, const char *bytes, size_t len, unsigned flags);
static int memobs__expand_path(const char *in, char *out, size_t len);
static int memobs__spec_has(const char *spec, char c);
static int memobs__write_whole(const char *path, int fd, const char *what, int (*write)(FILE *, int), int arg,
                               unsigned flags);

/* The rows as data (MEMOBS__OUTPUT_TABLE says what each field is). Read
   by the crash writer too: constant, async-signal-safe. */
typedef struct {
    const char *var, *alias, *what;
    int binary;
    int (*write)(FILE *f, int fmt);
    void (*pre)(unsigned which);
    const char *api;
    int env, crash;
    int (*store)(const char *path, const char *bytes, size_t len, unsigned flags);
} memobs__output_row_t;
#define MEMOBS__OUT_ROW(id, var, alias, what, binary, write, pre, api, env, crash, store) \
    {var, alias, what, binary, write, pre, api, env, crash, store},
static const memobs__output_row_t memobs__out_info[MEMOBS__OUTS] = {MEMOBS__OUTPUT_TABLE(MEMOBS__OUT_ROW)};
#undef MEMOBS__OUT_ROW

/* Reads output which's variable (or its older alias when the variable is
   unset) by the one rule (memobs__dest_parse) and resolves it; 1 when it
   is on, which makes memobs_flush and the exit write it. Runs inside
   memobs__init_once: from memobs__outputs_env, or from the section of a row
   whose env is 1. */
static int memobs__output_env(unsigned which) {
    memobs__dest_t *d = &memobs__g.out[which];
    const char *var = memobs__out_info[which].var, *s = getenv(var);
    int k;
    if (!s && memobs__out_info[which].alias && (s = getenv(memobs__out_info[which].alias)) != NULL)
        var = memobs__out_info[which].alias;
    k = memobs__dest_parse(var, s, sizeof d->spec);
    if (!k) return 0;
    strcpy(d->spec, k == 2 ? "stderr" : k == 1 ? "stdout" : s);
    d->stream = k > 0 ? (uint32_t)k : 0u;
    d->has_pid = (uint32_t)memobs__spec_has(d->spec, 'p');
    d->has_rank = (uint32_t)memobs__spec_has(d->spec, 'r');
    d->owner = (int64_t)getpid();
    memobs__dest_resolve(which, 0);
    if (!d->stream && !d->path[0]) return 0; /* too long once expanded: warned */
    MEMOBS__STORE(&d->on.v, 1u);
    return 1;
}

/* The rows whose variable depends on no other setting (env 0), in the
   table's order; runs inside memobs__init_once. */
static void memobs__outputs_env(void) {
    unsigned i;
    for (i = 0; i < MEMOBS__OUTS; i++)
        if (!memobs__out_info[i].env) (void)memobs__output_env(i);
}

/* Output which at exit or from memobs_flush (it is on): its pre, then its
   writer into its destination; memobs__dest_write reports failures. */
static void memobs__output_exit(unsigned which) {
    const memobs__output_row_t *r = &memobs__out_info[which];
    if (MEMOBS__LOAD(&memobs__g.exit_off.v)) return;
    if (r->pre) r->pre(which);
    (void)memobs__dest_write(which, r->write, (int)memobs__g.format, 0);
}

/* The *_file calls (the row's api): path "stderr", "stdout" or a file
   (%r, %p, %% expanded; not claimed: the caller named it), written whole
   by the row's writer with fmt. */
static int memobs__output_file(unsigned which, const char *path, int fmt) {
    const memobs__output_row_t *r = &memobs__out_info[which];
    char full[MEMOBS__PATH_LEN];
    int fd = -1;
    if (!path || !*path) {
        memobs__log(MEMOBS_LOG_WARN, "%s: empty path", r->api);
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    if (strcmp(path, "stderr") == 0) fd = 2;
    else if (strcmp(path, "stdout") == 0) fd = 1;
    else if (!memobs__expand_path(path, full, sizeof full)) {
        memobs__log(MEMOBS_LOG_WARN, "%s: the %s path '%s' is too long once expanded", r->api, r->what, path);
        return MEMOBS_ERR_INVALID;
    }
    return memobs__write_whole(full, fd, r->what, r->write, fmt, r->binary ? MEMOBS__WW_BINARY : 0u);
}

/* ======================================================================== */
/* Private: the output sink                                          >>sink */
/* ======================================================================== */

/* Where a writer's text goes: a string (a caller's buffer: what does not
   fit is cut, and counted), a FILE, or a file descriptor (the crash
   writer's). Bytes gather in buf; drain takes what buf cannot hold (NULL:
   a string). All that formats into a sink (memobs__out_*, the summary and
   Prometheus generators) is async-signal-safe, so that the crash writer
   formats the same text with it, into a static buffer drained with
   write(); the FILE's drain is named only where a FILE sink is made. */
typedef struct memobs__out_s memobs__out_t;
struct memobs__out_s {
    char *buf;
    size_t cap, n; /* buf's room, the bytes in it */
    size_t total;  /* every byte produced, kept or cut (memobs_format_prometheus' length) */
    void (*drain)(memobs__out_t *o, const char *s, size_t k);
    FILE *f;              /* memobs__out_fwrite's */
    int fd;               /* memobs__crash_drain's */
    int err;              /* a string was cut; the descriptor failed or timed out */
    uint64_t deadline_ns; /* memobs_now_ns() past which the descriptor is given up */
};

#define MEMOBS__OUT_BUF 4096 /* a FILE sink's buffer: one fwrite() per 4 KB */
#define MEMOBS__F_LEFT 1u
#define MEMOBS__F_PLUS 2u
#define MEMOBS__F_ZERO 4u

/* What memobs__out_write does not do inline: drain, or cut a string. */
static void memobs__out_spill(memobs__out_t *o, const char *s, size_t k) {
    while (k && !o->err) {
        size_t c = o->cap - o->n;
        if (c == 0) {
            if (!o->drain) {
                o->err = 1; /* a string: cut */
            } else if (o->n) {
                o->drain(o, o->buf, o->n);
                o->n = 0;
            } else {
                o->drain(o, s, k); /* no buffer: straight through */
                return;
            }
            continue;
        }
        if (c > k) c = k;
        memcpy(o->buf + o->n, s, c);
        o->n += c;
        s += c;
        k -= c;
    }
}

static void memobs__out_write(memobs__out_t *o, const char *s, size_t k) {
    o->total += k;
    if (k == 0) return; /* an empty string: nothing to copy (o->buf may be NULL) */
    if (k <= o->cap - o->n && !o->err) { /* the usual case: it fits */
        memcpy(o->buf + o->n, s, k);
        o->n += k;
    } else {
        memobs__out_spill(o, s, k);
    }
}

static void memobs__out_str(memobs__out_t *o, const char *s) { memobs__out_write(o, s, strlen(s)); }

/* A string sink on buf[len] (len 0: counts only); memobs__out_end ends it. */
static void memobs__out_string(memobs__out_t *o, char *buf, size_t len) {
    memset(o, 0, sizeof *o);
    o->buf = len ? buf : NULL;
    o->cap = buf && len ? len - 1 : 0;
    o->fd = -1;
}

static void memobs__out_fwrite(memobs__out_t *o, const char *s, size_t k) { (void)fwrite(s, 1, k, o->f); }

/* A FILE sink through buf[len] (NULL: each piece to the FILE's own buffer). */
static void memobs__out_file(memobs__out_t *o, FILE *f, char *buf, size_t len) {
    memset(o, 0, sizeof *o);
    o->buf = buf;
    o->cap = buf ? len : 0;
    o->drain = memobs__out_fwrite;
    o->f = f;
    o->fd = -1;
}

/* Drains what is pending, or ends a string with its NUL; returns buf. */
static const char *memobs__out_end(memobs__out_t *o) {
    if (o->drain) {
        if (o->n) o->drain(o, o->buf, o->n);
        o->n = 0;
    } else if (o->buf) {
        o->buf[o->n] = 0;
    }
    return o->buf;
}

/* k bytes of c ('0' or ' '). */
static void memobs__out_pad(memobs__out_t *o, char c, size_t k) {
    static const char sp[17] = "                ", zs[17] = "0000000000000000";
    while (k) {
        size_t m = k < 16 ? k : 16;
        memobs__out_write(o, c == '0' ? zs : sp, m);
        k -= m;
    }
}

/* Padding before a field of len bytes (a sign, "", "-" or "+", then the
   body): spaces, or with MEMOBS__F_ZERO zeros after the sign;
   memobs__out_pad_after ends it. */
static void memobs__out_pad_before(memobs__out_t *o, const char *sign, size_t len, int width, unsigned flags) {
    size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    if (!(flags & MEMOBS__F_LEFT) && !(flags & MEMOBS__F_ZERO)) memobs__out_pad(o, ' ', pad);
    memobs__out_write(o, sign, (size_t)(sign[0] != 0));
    if (!(flags & MEMOBS__F_LEFT) && (flags & MEMOBS__F_ZERO)) memobs__out_pad(o, '0', pad);
}
static void memobs__out_pad_after(memobs__out_t *o, size_t len, int width, unsigned flags) {
    if ((flags & MEMOBS__F_LEFT) && width > 0 && (size_t)width > len) memobs__out_pad(o, ' ', (size_t)width - len);
}

static void memobs__out_field(memobs__out_t *o, const char *sign, const char *body, size_t k, int width,
                              unsigned flags) {
    size_t len = (size_t)(sign[0] != 0) + k;
    if (width <= 0 || (size_t)width <= len) { /* no padding */
        if (sign[0]) memobs__out_write(o, sign, 1);
        memobs__out_write(o, body, k);
        return;
    }
    memobs__out_pad_before(o, sign, len, width, flags);
    memobs__out_write(o, body, k);
    memobs__out_pad_after(o, len, width, flags);
}

/* v in decimal, or hex, at the end of tmp[24]; returns its first digit. */
static char *memobs__out_digits(char *tmp, uint64_t v, int hex) {
    char *p = tmp + 23;
    *p = 0;
    if (hex) {
        do *--p = "0123456789abcdef"[v & 15u];
        while (v >>= 4);
    } else {
        do {
            *--p = (char)('0' + (int)(v % 10u));
            v /= 10u;
        } while (v);
    }
    return p;
}

/* Rounds the digits p[0..*n) to their first keep, half to even on the
   exact value (glibc's printf); a carry out of the first digit puts a
   '1' at p[-1] (room the caller keeps) and moves the point one on.
   Returns the first digit. */
static char *memobs__dec_round(char *p, size_t *n, int *point, long keep) {
    size_t i;
    int up;
    if (keep >= (long)*n) return p;
    if (keep < 0) { /* below half of the last place kept */
        *n = 0;
        return p;
    }
    up = p[keep] > '5';
    if (p[keep] == '5') {
        for (i = (size_t)keep + 1; i < *n && p[i] == '0'; i++) {
        }
        up = i < *n || (keep > 0 && ((p[keep - 1] - '0') & 1));
    }
    *n = (size_t)keep;
    if (!up) return p;
    for (i = *n; i > 0 && p[i - 1] == '9'; i--) p[i - 1] = '0';
    if (i > 0) {
        p[i - 1]++;
        return p;
    }
    *--p = '1';
    (*n)++;
    (*point)++;
    return p;
}

/* The digits from..to of a number (p[0..n), the rest zeros). */
static void memobs__out_run(memobs__out_t *o, const char *p, size_t n, long from, long to) {
    if (from < 0 && from < to) {
        long z = (to < 0 ? to : 0) - from;
        memobs__out_pad(o, '0', (size_t)z);
        from += z;
    }
    if (from < to && from < (long)n) {
        long e = to < (long)n ? to : (long)n;
        memobs__out_write(o, p + from, (size_t)(e - from));
        from = e;
    }
    if (from < to) memobs__out_pad(o, '0', (size_t)(to - from));
}

#if defined(__GNUC__) || defined(__clang__)
#define MEMOBS__NOINLINE __attribute__((noinline))
#else
#define MEMOBS__NOINLINE
#endif

/* %f, %e, %g of |v| = mant * 2^e (finite) from its exact decimal digits,
   as glibc writes them: the integer mant * 2^e, or mant * 5^-e with the
   point -e digits from its end, in base 10^9 (767 digits at most, for
   2^-1074). Off the frame of memobs__out_printf (1.2 KB of stack). */
static MEMOBS__NOINLINE void memobs__out_exact(memobs__out_t *o, const char *sign, uint64_t mant, int e, char conv,
                                                int prec, int width, unsigned flags) {
    uint32_t limb[90];
    char d[1 + 90 * 9 + 1], *p = d + 1;
    size_t nl = 0, n = 0, i, len;
    int point = 1, x, style_e;
    long frac;
    if (mant) {
        uint64_t m = mant;
        int k;
        do {
            limb[nl++] = (uint32_t)(m % 1000000000u);
            m /= 1000000000u;
        } while (m);
        for (k = e < 0 ? -e : e; k > 0;) {
            int step = k < (e < 0 ? 13 : 29) ? k : (e < 0 ? 13 : 29), j;
            uint64_t mul = 1, carry = 0;
            for (j = 0; j < step; j++) mul *= e < 0 ? 5u : 2u;
            for (i = 0; i < nl; i++) {
                uint64_t t = (uint64_t)limb[i] * mul + carry;
                limb[i] = (uint32_t)(t % 1000000000u);
                carry = t / 1000000000u;
            }
            for (; carry; carry /= 1000000000u) limb[nl++] = (uint32_t)(carry % 1000000000u);
            k -= step;
        }
        {
            char tmp[24], *t = memobs__out_digits(tmp, limb[nl - 1], 0);
            n = strlen(t);
            memcpy(p, t, n);
        }
        for (i = nl - 1; i-- > 0; n += 9) {
            uint32_t v = limb[i];
            int j;
            for (j = 8; j >= 0; j--, v /= 10u) p[n + (size_t)j] = (char)('0' + (int)(v % 10u));
        }
        point = (int)n + (e < 0 ? e : 0);
    }
    if (conv == 'g') {
        if (prec == 0) prec = 1;
        p = memobs__dec_round(p, &n, &point, prec);
        x = point - 1;
        style_e = x < -4 || x >= prec;
        while (n > 0 && p[n - 1] == '0') n--; /* no trailing zeros */
        frac = style_e ? (long)n - 1 : (long)n - point;
        if (frac < 0) frac = 0;
    } else {
        style_e = conv == 'e';
        p = memobs__dec_round(p, &n, &point, style_e ? prec + 1 : point + prec);
        x = point - 1;
        frac = prec;
    }
    if (!mant) x = 0;
    if (style_e) {
        int ax = x < 0 ? -x : x;
        len = 1 + (frac ? 1 + (size_t)frac : 0) + 2 + (ax >= 100 ? 3 : 2);
    } else {
        len = (point > 0 ? (size_t)point : 1) + (frac ? 1 + (size_t)frac : 0);
    }
    memobs__out_pad_before(o, sign, (size_t)(sign[0] != 0) + len, width, flags);
    if (style_e) {
        char tmp[24], *t;
        int ax = x < 0 ? -x : x;
        memobs__out_run(o, p, n, 0, 1);
        if (frac) {
            memobs__out_write(o, ".", 1);
            memobs__out_run(o, p, n, 1, 1 + frac);
        }
        memobs__out_write(o, x < 0 ? "e-" : "e+", 2);
        t = memobs__out_digits(tmp, (uint64_t)ax, 0);
        if (ax < 10) memobs__out_write(o, "0", 1);
        memobs__out_str(o, t);
    } else {
        if (point > 0) memobs__out_run(o, p, n, 0, point);
        else memobs__out_write(o, "0", 1);
        if (frac) {
            memobs__out_write(o, ".", 1);
            memobs__out_run(o, p, n, point, point + frac);
        }
    }
    memobs__out_pad_after(o, (size_t)(sign[0] != 0) + len, width, flags);
}

/* %f (precision 0 to 3, |v| below 2^64 and at least 2^-10 or so: the
   writers' numbers) with 64-bit integers; the rest by memobs__out_exact. */
static void memobs__out_float(memobs__out_t *o, double v, char conv, int prec, int width, unsigned flags) {
    static const uint64_t scale[4] = {1u, 10u, 100u, 1000u};
    uint64_t bits, mant;
    const char *sign;
    int e;
    memcpy(&bits, &v, sizeof bits);
    sign = bits >> 63 ? "-" : (flags & MEMOBS__F_PLUS) ? "+" : "";
    e = (int)((bits >> 52) & 0x7ffu);
    mant = bits & (((uint64_t)1 << 52) - 1u);
    if (prec < 0) prec = 6;
    if (e == 0x7ff) {
        memobs__out_field(o, sign, mant ? "nan" : "inf", 3, width, flags & ~MEMOBS__F_ZERO);
        return;
    }
    if (e) mant |= (uint64_t)1 << 52;
    else e = 1;
    e -= 1075; /* |v| = mant * 2^e */
    if (conv == 'f' && prec <= 3 && (!mant || (e >= -62 && e <= 11))) {
        char num[32], tmp[24], *t;
        uint64_t ip, frac = 0;
        size_t k;
        if (e >= 0 || !mant) {
            ip = mant << (e > 0 ? e : 0);
        } else {
            unsigned s = (unsigned)-e;
            uint64_t m = mant * scale[prec], q = m >> s, rem = m & (((uint64_t)1 << s) - 1u), half = (uint64_t)1
                                                                                                    << (s - 1u);
            if (rem > half || (rem == half && (q & 1u))) q++;
            ip = q / scale[prec];
            frac = q % scale[prec];
        }
        t = memobs__out_digits(tmp, ip, 0);
        k = strlen(t);
        memcpy(num, t, k);
        if (prec) {
            int j;
            num[k++] = '.';
            for (j = prec - 1; j >= 0; j--, frac /= 10u) num[k + (size_t)j] = (char)('0' + (int)(frac % 10u));
            k += (size_t)prec;
        }
        memobs__out_field(o, sign, num, k, width, flags);
        return;
    }
    memobs__out_exact(o, sign, mant, e, conv, prec, width, flags);
}

/* printf into a sink, async-signal-safe, byte for byte as glibc's for
   what it takes: %s %c %d %i %u %x %f %e %g %% with the flags - + 0, a
   width, a precision and l, ll or z. Anything else is copied as written. */
static void memobs__out_vprintf(memobs__out_t *o, const char *fmt, va_list ap) {
    while (*fmt) {
        const char *p = fmt, *s = "", *sign = "";
        char num[24];
        size_t k = 0;
        unsigned flags = 0;
        int width = 0, prec = -1, lng = 0;
        while (*p && *p != '%') p++;
        if (p > fmt) memobs__out_write(o, fmt, (size_t)(p - fmt));
        if (!*p) break;
        fmt = p;
        for (p++;; p++) {
            if (*p == '-') flags |= MEMOBS__F_LEFT;
            else if (*p == '+') flags |= MEMOBS__F_PLUS;
            else if (*p == '0') flags |= MEMOBS__F_ZERO;
            else break;
        }
        while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
        if (*p == '.')
            for (prec = 0, p++; *p >= '0' && *p <= '9'; p++) prec = prec * 10 + (*p - '0');
        if (*p == 'z') lng = 3, p++;
        else
            while (*p == 'l' && lng < 2) lng++, p++;
        switch (*p) {
        case 's':
            s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            if (prec < 0) k = strlen(s);
            else
                while (k < (size_t)prec && s[k]) k++;
            memobs__out_field(o, "", s, k, width, flags & ~MEMOBS__F_ZERO);
            break;
        case 'c':
            num[0] = (char)va_arg(ap, int);
            memobs__out_field(o, "", num, 1, width, flags & ~MEMOBS__F_ZERO);
            break;
        case 'd':
        case 'i': {
            long long v = lng == 3   ? (long long)va_arg(ap, size_t)
                          : lng == 2 ? va_arg(ap, long long)
                          : lng == 1 ? (long long)va_arg(ap, long)
                                     : (long long)va_arg(ap, int);
            s = memobs__out_digits(num, v < 0 ? (uint64_t)(-(v + 1)) + 1u : (uint64_t)v, 0);
            sign = v < 0 ? "-" : (flags & MEMOBS__F_PLUS) ? "+" : "";
            memobs__out_field(o, sign, s, (size_t)(num + 23 - s), width, flags);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = lng == 3   ? (unsigned long long)va_arg(ap, size_t)
                                   : lng == 2 ? va_arg(ap, unsigned long long)
                                   : lng == 1 ? (unsigned long long)va_arg(ap, unsigned long)
                                              : (unsigned long long)va_arg(ap, unsigned);
            s = memobs__out_digits(num, (uint64_t)v, *p == 'x');
            memobs__out_field(o, "", s, (size_t)(num + 23 - s), width, flags);
            break;
        }
        case 'f':
        case 'e':
        case 'g':
            memobs__out_float(o, va_arg(ap, double), *p, prec, width, flags);
            break;
        case '%':
            memobs__out_write(o, "%", 1);
            break;
        default: /* not ours: as written */
            memobs__out_write(o, fmt, (size_t)(p - fmt) + (*p ? 1u : 0u));
            break;
        }
        fmt = *p ? p + 1 : p;
    }
}

static void memobs__out_printf(memobs__out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__out_printf(memobs__out_t *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    memobs__out_vprintf(o, fmt, ap);
    va_end(ap);
}

/* snprintf's twin (cut to len - 1 bytes); returns buf. */
static const char *memobs__out_sprintf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *memobs__out_sprintf(char *buf, size_t len, const char *fmt, ...) {
    memobs__out_t o;
    va_list ap;
    memobs__out_string(&o, buf, len);
    va_start(ap, fmt);
    memobs__out_vprintf(&o, fmt, ap);
    va_end(ap);
    memobs__out_end(&o);
    return buf;
}

/* A JSON string; a byte that is not UTF-8 becomes U+FFFD. Plain runs go
   out whole. */
static void memobs__out_json_str(memobs__out_t *o, const char *str) {
    const unsigned char *p = (const unsigned char *)str, *run = p;
    memobs__out_write(o, "\"", 1);
    while (*p) {
        size_t k = memobs__utf8_len(p);
        unsigned char c = *p;
        char e[6];
        if (k && c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
            p += k;
            continue;
        }
        memobs__out_write(o, (const char *)run, (size_t)(p - run));
        if (k == 0) {
            memobs__out_write(o, "\xEF\xBF\xBD", 3);
        } else if (c == '"' || c == '\\' || c == '\n' || c == '\t') {
            e[0] = '\\';
            e[1] = c == '\n' ? 'n' : c == '\t' ? 't' : (char)c;
            memobs__out_write(o, e, 2);
        } else {
            memcpy(e, "\\u00", 4);
            e[4] = "0123456789abcdef"[c >> 4];
            e[5] = "0123456789abcdef"[c & 15u];
            memobs__out_write(o, e, 6);
        }
        p += k ? k : 1;
        run = p;
    }
    memobs__out_write(o, (const char *)run, (size_t)(p - run));
    memobs__out_write(o, "\"", 1);
}

/* For the writers that print to a FILE (Stormlog). */
static void memobs__json_str(FILE *f, const char *s) {
    memobs__out_t o;
    memobs__out_file(&o, f, NULL, 0);
    memobs__out_json_str(&o, s);
}

/* s escaped for a Prometheus HELP text (backslash, newline) or, with
   quote, a label value (also the double quote); a byte that is not UTF-8
   becomes U+FFFD. */
static void memobs__out_escaped(memobs__out_t *o, const char *s, int quote) {
    const unsigned char *p = (const unsigned char *)s, *run = p;
    while (*p) {
        size_t k = memobs__utf8_len(p);
        if (k && *p != '\\' && *p != '\n' && !(*p == '"' && quote)) {
            p += k;
            continue;
        }
        memobs__out_write(o, (const char *)run, (size_t)(p - run));
        if (*p == '\\') memobs__out_write(o, "\\\\", 2);
        else if (*p == '\n') memobs__out_write(o, "\\n", 2);
        else if (*p == '"') memobs__out_write(o, "\\\"", 2);
        else memobs__out_write(o, "\xEF\xBF\xBD", 3);
        p += k ? k : 1;
        run = p;
    }
    memobs__out_write(o, (const char *)run, (size_t)(p - run));
}

/* ======================================================================== */
/* Private: units                                                   >>units */
/* ======================================================================== */

const char *memobs_format_bytes(char *buf, size_t len, uint64_t bytes) {
    static const char *const unit[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    double v = (double)bytes;
    unsigned u = 0;
    if (!buf || len == 0) return "";
    if (bytes < 1000) return memobs__out_sprintf(buf, len, "%llu B", (unsigned long long)bytes);
    v /= 1000.0;
    while (v >= 999.995 && u < 5) {
        v /= 1000.0;
        u++;
    }
    return memobs__out_sprintf(buf, len, "%.2f %s", v, unit[u]);
}

const char *memobs_format_ns(char *buf, size_t len, uint64_t ns) {
    if (!buf || len == 0) return "";
    if (ns < 1000) return memobs__out_sprintf(buf, len, "%llu ns", (unsigned long long)ns);
    if (ns < 999995ull) return memobs__out_sprintf(buf, len, "%.2f us", (double)ns / 1e3);
    if (ns < 999995000ull) return memobs__out_sprintf(buf, len, "%.2f ms", (double)ns / 1e6);
    return memobs__out_sprintf(buf, len, "%.2f s", (double)ns / 1e9);
}

/* ======================================================================== */
/* Private: the summary's figures and text                   >>summary-text */
/* ======================================================================== */

/* What the summary and Prometheus generators format: the summary's
   figures, the regions (a copy, or each read as written), the host-memory
   piece, and at a crash its signal. One generator per output serves the
   normal writers and the crash writer alike: the crash's outputs are the
   normal ones with its marks, less host memory (read under locks). */
typedef struct {
    memobs_summary_t s;
    memobs_region_stats_t *regions; /* NULL: memobs__region_read, lock-free (the crash writer) */
    uint32_t nregions;
    int sig;             /* the crash's signal, else 0 */
    const char *signame; /* its name ("SIGSEGV"), or "" */
    char host[1024];     /* the host-memory line or JSON member (memobs__leak_write), or "" */
    /* the top requests by bytes ([0 .. ntop[0])) and by wait (from
       MEMOBS_REQUEST_TOP on): a copy; NULL at a crash (taken under a lock) */
    memobs_request_info_t *top;
    uint32_t ntop[2];
} memobs__figs_t;

static void memobs__figs_region(const memobs__figs_t *p, uint32_t i, memobs_region_stats_t *r) {
    if (p->regions) *r = p->regions[i];
    else memobs__region_read(i, r);
}

static void memobs__leak_write(memobs__out_t *o, int json);

/* The figures now, outside a crash: memobs_get_summary, a copy of
   memobs_get_regions, and the host-memory piece as format host has it
   (MEMOBS_FORMAT_TEXT or _JSON; -1: none). memobs__figs_free after. */
static int memobs__figs_get(memobs__figs_t *p, int host) {
    memobs_region_stats_t *r;
    size_t want, n;
    memobs_get_summary(&p->s);
    want = memobs_get_regions(NULL, 0);
    r = (memobs_region_stats_t *)MEMOBS_MALLOC((want ? want : 1) * sizeof *r);
    if (!r) return MEMOBS_ERR_NOMEM;
    n = memobs_get_regions(r, want);
    p->regions = r;
    p->nregions = (uint32_t)(n < want ? n : want);
    p->top = (memobs_request_info_t *)MEMOBS_MALLOC(2 * MEMOBS_REQUEST_TOP * sizeof *p->top);
    p->ntop[0] = p->ntop[1] = 0;
    if (p->top) {
        p->ntop[0] = (uint32_t)memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, p->top, MEMOBS_REQUEST_TOP);
        p->ntop[1] = (uint32_t)memobs_request_top(MEMOBS_REQUEST_TOP_WAIT, p->top + MEMOBS_REQUEST_TOP,
                                                  MEMOBS_REQUEST_TOP);
    }
    p->sig = 0;
    p->signame = "";
    p->host[0] = 0;
    if (host >= 0) {
        memobs__out_t o;
        memobs__out_string(&o, p->host, sizeof p->host);
        memobs__leak_write(&o, host == MEMOBS_FORMAT_JSON);
        memobs__out_end(&o);
        if (o.err) p->host[0] = 0; /* never cut JSON */
    }
    return MEMOBS_OK;
}

static void memobs__figs_free(memobs__figs_t *p) {
    if (p->regions) MEMOBS_FREE(p->regions);
    if (p->top) MEMOBS_FREE(p->top);
    p->regions = NULL;
    p->top = NULL;
}

static void memobs__text_xfer(memobs__out_t *o, const memobs_xfer_t *x) {
    char b[32];
    memobs__out_printf(o, " | %10s %8llu", memobs_format_bytes(b, sizeof b, x->bytes), (unsigned long long)x->count);
}

/* Whether the writers show manual vs observed: records are apart, or
   were while manual ones were counted. */
static int memobs__manual_shown(const memobs_summary_t *s) {
    return s->manual.apart || s->manual.total.h2d.count || s->manual.total.d2h.count || s->manual.total.d2d.count;
    /* the storage directions are never apart (memobs_set_manual_apart) */
}

/* Manual vs observed (memobs_set_manual_apart): per direction, the observed
   transfers, the program's own records and manual minus observed. */
static void memobs__text_manual(memobs__out_t *o, const memobs_summary_t *s) {
    static const char *const dname[3] = {"H2D", "D2H", "D2D"};
    const memobs_xfer_t *obs[3], *man[3];
    char b[32];
    unsigned d;
    if (!memobs__manual_shown(s)) return;
    obs[0] = &s->total.h2d; obs[1] = &s->total.d2h; obs[2] = &s->total.d2d;
    man[0] = &s->manual.total.h2d; man[1] = &s->manual.total.d2h; man[2] = &s->manual.total.d2d;
    memobs__out_printf(o, "  %-5s | %10s %8s | %10s %8s | %11s %9s   (manual: the program's own records, apart)\n",
                       "check", "observed", "ops", "manual", "ops", "manual-obs", "ops");
    for (d = 0; d < 3; d++) {
        uint64_t mb = man[d]->bytes, ob = obs[d]->bytes;
        long long dc = (long long)(man[d]->count - obs[d]->count);
        memobs__out_printf(o, "  %-5s", dname[d]);
        memobs__text_xfer(o, obs[d]);
        memobs__text_xfer(o, man[d]);
        b[0] = mb == ob ? ' ' : mb > ob ? '+' : '-';
        memobs_format_bytes(b + 1, sizeof b - 1, mb >= ob ? mb - ob : ob - mb);
        memobs__out_printf(o, " | %11s %+9lld\n", b, dc);
    }
    for (d = 0; d < 3; d++) { /* a direction whose phases disagree: both splits */
        const memobs_dirs_t *op[3], *mp[3];
        char b2[32], b3[32], b4[32], b5[32], b6[32];
        const memobs_xfer_t *x[6];
        unsigned p, same = 1;
        op[0] = &s->prefill; op[1] = &s->decode; op[2] = &s->unphased;
        mp[0] = &s->manual.prefill; mp[1] = &s->manual.decode; mp[2] = &s->manual.unphased;
        for (p = 0; p < 3; p++) {
            x[p] = d == 0 ? &op[p]->h2d : d == 1 ? &op[p]->d2h : &op[p]->d2d;
            x[3 + p] = d == 0 ? &mp[p]->h2d : d == 1 ? &mp[p]->d2h : &mp[p]->d2d;
            same &= x[p]->bytes == x[3 + p]->bytes;
        }
        if (same) continue;
        memobs__out_printf(o, "  %-5s by phase, observed: prefill %s, decode %s, unphased %s; manual: prefill %s, "
                           "decode %s, unphased %s\n", dname[d], memobs_format_bytes(b, sizeof b, x[0]->bytes),
                           memobs_format_bytes(b2, sizeof b2, x[1]->bytes), memobs_format_bytes(b3, sizeof b3, x[2]->bytes),
                           memobs_format_bytes(b4, sizeof b4, x[3]->bytes), memobs_format_bytes(b5, sizeof b5, x[4]->bytes),
                           memobs_format_bytes(b6, sizeof b6, x[5]->bytes));
    }
}

static void memobs__text_latency(memobs__out_t *o, const char *name, const memobs_latency_t *l) {
    const uint64_t *v[6];
    char b[32];
    unsigned i;
    v[0] = &l->mean_ns; v[1] = &l->p50_ns; v[2] = &l->p90_ns;
    v[3] = &l->p99_ns;  v[4] = &l->max_ns; v[5] = &l->last_ns;
    memobs__out_printf(o, "  %-5s %8llu", name, (unsigned long long)l->count);
    for (i = 0; i < 6; i++) memobs__out_printf(o, " %10s", l->count ? memobs_format_ns(b, sizeof b, *v[i]) : "-");
    memobs__out_write(o, "\n", 1);
}

/* Misuse and overflow, counted rather than fatal: the Prometheus label
   and the text summary's words, in one order (memobs__problem_counts). */
#define MEMOBS__NPROBLEMS 20
static const char *const memobs__problem_name[MEMOBS__NPROBLEMS][2] = {
    {"requests_dropped", "requests dropped untimed (table full: the longest idle made room)"},
    {"requests_unknown", "token/end for ids not in flight"},
    {"requests_duplicate", "duplicate begins"},
    {"ttft_unmatched", "TTFT stops without a start"},
    {"tpot_unarmed", "TPOT steps before a first token"},
    {"bad_records", "bad records"},
    {"untracked_threads", "records via the shared shard (no per-thread shard)"},
    {"frees_unknown", "unmatched frees (pointer not tracked)"},
    {"frees_double", "double frees"},
    {"allocs_null", "NULL allocations"},
    {"allocs_zero", "zero-byte allocations"},
    {"allocs_duplicate", "allocations of a live pointer (missed free)"},
    {"allocs_bad_kind", "allocations of a bad kind"},
    {"allocs_untracked", "allocations not tracked (table full: raise MEMOBS_TRACK_CAPACITY)"},
    {"frees_untracked", "frees of untracked allocations (current bytes may be overstated)"},
    {"traces_dropped", "allocations whose trace was not kept (trace table full)"},
    {"region_unmatched_ends", "region ends with no region open"},
    {"region_too_deep", "regions nested beyond MEMOBS_REGION_DEPTH (not timed)"},
    {"region_names_dropped", "regions and markers filed under \"(other)\" (no name kept)"},
    {"signal_dropped", "calls refused in a signal handler that interrupted memobs"}};

static void memobs__problem_counts(const memobs_summary_t *s, uint64_t *v) {
    const memobs_track_problems_t *t = &s->track;
    v[0] = s->requests_dropped; v[1] = s->requests_unknown; v[2] = s->requests_duplicate; v[3] = s->ttft_unmatched;
    v[4] = s->tpot_unarmed; v[5] = s->bad_records; v[6] = s->untracked_threads; v[7] = t->frees_unknown;
    v[8] = t->frees_double; v[9] = t->allocs_null; v[10] = t->allocs_zero; v[11] = t->allocs_duplicate;
    v[12] = t->allocs_bad_kind; v[13] = t->untracked; v[14] = t->untracked_frees; v[15] = t->traces_dropped;
    v[16] = s->region_unmatched_ends; v[17] = s->region_too_deep; v[18] = s->region_names_dropped;
    v[19] = s->signal_dropped;
}

/* One line naming every kind of misuse seen in the window, if any. */
static void memobs__text_problems(memobs__out_t *o, const memobs_summary_t *s) {
    uint64_t v[MEMOBS__NPROBLEMS];
    unsigned i, n = 0;
    memobs__problem_counts(s, v);
    for (i = 0; i < MEMOBS__NPROBLEMS; i++)
        if (v[i])
            memobs__out_printf(o, "%s %llu %s", n++ ? "," : "  problems:", (unsigned long long)v[i],
                               memobs__problem_name[i][1]);
    if (n) memobs__out_write(o, "\n", 1);
}

/* Timed transfers, a row per direction and phase that has any: the
   copies timed on the device, then the storage tier's, which the engine
   timed (memobs_record_xfer_ns). */
static void memobs__xin_text(memobs__out_t *o, const memobs_inflight_t *x); /* section inflight */
static void memobs__xin_json(memobs__out_t *o, const memobs_inflight_t *x);
static void memobs__text_timed(memobs__out_t *o, const memobs_summary_t *s) {
    static const char *const pname[3] = {"unphased", "prefill", "decode"};
    char b[32], t[32];
    unsigned p, d, g, rows = 0;
    for (g = 0; g < 2; g++) {
        unsigned grows = 0;
        for (p = 0; p < MEMOBS_PHASES; p++) {
            for (d = g ? MEMOBS__NGPU : 0; d < (g ? MEMOBS_DIRS : MEMOBS__NGPU); d++) {
                const memobs_timed_t *x = &s->timed[p][d];
                if (!x->count) continue;
                if (!grows++)
                    memobs__out_printf(o, "  %-14s | %10s %8s %10s %10s\n", g ? "engine-timed" : "device-timed",
                                       "completed", "ops", "time", "GB/s");
                memobs__out_printf(o, "  %-3s %-10s | %10s %8llu %10s %10.2f\n", memobs__dir_name[d], pname[p],
                                   memobs_format_bytes(b, sizeof b, x->bytes), (unsigned long long)x->count,
                                   memobs_format_ns(t, sizeof t, x->ns),
                                   x->ns ? (double)x->bytes / (double)x->ns : 0.0);
            }
        }
        rows += grows;
    }
    if (rows || s->timed_in_flight_copies)
        memobs__out_printf(o, "  in flight: %llu timed copies, %s issued and not yet seen complete\n",
                           (unsigned long long)s->timed_in_flight_copies,
                           memobs_format_bytes(b, sizeof b, s->timed_in_flight_bytes));
}

/* Regions ended or markers set in the window, one row per name. */
static void memobs__text_regions(memobs__out_t *o, const memobs__figs_t *p) {
    uint32_t i, rows = 0;
    char b[3][32];
    for (i = 0; i < p->nregions; i++) {
        memobs_region_stats_t x;
        memobs__figs_region(p, i, &x);
        if (!x.count && !x.marks) continue;
        if (!rows++)
            memobs__out_printf(o, "  %-32s %8s %10s %10s %10s %8s\n", "region", "count", "total", "mean", "max",
                               "markers");
        memobs__out_printf(o, "  %-32s %8llu %10s %10s %10s %8llu\n", x.name, (unsigned long long)x.count,
                           x.timed ? memobs_format_ns(b[0], sizeof b[0], x.total_ns) : "-",
                           x.timed ? memobs_format_ns(b[1], sizeof b[1], x.total_ns / x.timed) : "-",
                           x.timed ? memobs_format_ns(b[2], sizeof b[2], x.max_ns) : "-", (unsigned long long)x.marks);
    }
}

/* GB/s of bytes over ns, or "n/a" (untimed, or no bus factor). */
static const char *memobs__gbs(char *b, size_t len, uint64_t bytes, uint64_t ns, int ok) {
    if (!ok || !ns) return "n/a";
    return memobs__out_sprintf(b, len, "%.3f", (double)bytes / (double)ns);
}

/* Collectives per communicator, peers, and where they come from (only
   when something was recorded or a backend set its source). Lock-free:
   the crash writer's too. */
static void memobs__text_coll(memobs__out_t *o) {
    static const char *const ph_name[3] = {"unphased", "prefill", "decode"};
    uint32_t nc, nk, np, c, k, ph, d, rows = 0;
    memobs_coll_info_t info;
    char b[4][32];
    if (!memobs__coll_shown()) return;
    nc = memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS);
    nk = memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS);
    np = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS);
    for (c = 0; c < nc; c++) {
        const memobs__comm_def_t *cd = &memobs__coll.comm[c];
        int head = 0;
        for (k = 0; k < nk; k++) {
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                memobs_coll_stats_t x;
                uint64_t num, den;
                if (!memobs__coll_row_read(c, k, ph, &x)) continue;
                if (!rows++) memobs__out_str(o, "  collectives:\n");
                if (!head++) {
                    if (cd->rank >= 0)
                        memobs__out_printf(o, "    %s  rank %d/%d, %d node%s\n", cd->name, (int)cd->rank,
                                           (int)cd->nranks, (int)cd->nnodes, cd->nnodes == 1 ? "" : "s");
                    else memobs__out_printf(o, "    %s\n", cd->name);
                    memobs__out_printf(o, "      %-18s %-8s %8s %10s %10s %10s %10s\n", "kind", "phase", "ops",
                                       "bytes", "time", "algbw GB/s", "busbw GB/s");
                }
                memobs__out_printf(o, "      %-18s %-8s %8llu %10s %10s %10s %10s\n", x.kind_name, ph_name[ph],
                                   (unsigned long long)x.ops, memobs_format_bytes(b[0], sizeof b[0], x.bytes),
                                   x.timed_ops ? memobs_format_ns(b[1], sizeof b[1], x.ns) : "-",
                                   memobs__gbs(b[2], sizeof b[2], x.algo_bytes, x.ns, 1),
                                   memobs__gbs(b[3], sizeof b[3], x.bus_bytes, x.ns,
                                               memobs__coll_factor((int)k, cd->nranks, &num, &den)));
                if (x.timed_ops < x.ops)
                    memobs__out_printf(o, "      %-18s %-8s %8llu untimed (not in the bandwidths)\n", "", "",
                                       (unsigned long long)(x.ops - x.timed_ops));
            }
        }
    }
    rows = 0;
    for (c = 0; c < np; c++) {
        memobs_peer_stats_t y;
        if (!memobs__peer_read(c, &y)) continue;
        for (d = 0; d < MEMOBS_PEER_DIRS; d++) {
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                if (!y.ops[d][ph] && !y.bytes[d][ph]) continue;
                if (!rows++) memobs__out_printf(o, "  peers:\n      %-32s %-4s %-8s %10s %8s %10s\n", "peer", "dir",
                                                "phase", "bytes", "ops", "time");
                memobs__out_printf(o, "      %-32s %-4s %-8s %10s %8llu %10s\n", y.name, d ? "recv" : "send",
                                   ph_name[ph], memobs_format_bytes(b[0], sizeof b[0], y.bytes[d][ph]),
                                   (unsigned long long)y.ops[d][ph],
                                   y.ns[d][ph] ? memobs_format_ns(b[1], sizeof b[1], y.ns[d][ph]) : "-");
            }
        }
    }
    memobs__coll_info_read(&info);
    memobs__out_printf(o, "  collectives from %s, instance %s, level %s, profiler API v%d; %llu events dropped, %llu "
                       "bad; captured: %llu calls at capture, %llu replays seen; full tables: %llu comms, %llu kinds, "
                       "%llu peers\n", info.source[0] ? info.source : "-", info.instance[0] ? info.instance : "-",
                       info.level[0] ? info.level : "-", info.api_version,
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED],
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_BAD_EVENTS],
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_CAPTURED_CALLS],
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS],
                       (unsigned long long)info.comms_dropped, (unsigned long long)info.kinds_dropped,
                       (unsigned long long)info.peers_dropped);
}

/* The directions the text summary and the HTML report show: the storage
   tier's too once any of its transfers was recorded in the window (the
   JSON and Prometheus show every direction always). */
static unsigned memobs__dirs_shown(const memobs_summary_t *s) {
    unsigned d;
    for (d = MEMOBS__NGPU; d < MEMOBS_DIRS; d++)
        if (memobs_dirs_get(&s->total, d)->count) return MEMOBS_DIRS;
    return MEMOBS__NGPU;
}

/* A size bucket's bound 2^b as "4 KiB" (exact: a power of two). */
static const char *memobs__size_bound(char *b, size_t len, uint64_t v) {
    static const char *const unit[6] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    unsigned u = 0;
    if (!v) return "-";
    while (u < 5 && v >= 1024 && !(v & 1023)) {
        v >>= 10;
        u++;
    }
    return memobs__out_sprintf(b, len, "%llu %s", (unsigned long long)v, unit[u]);
}

/* Transfer sizes per direction with any record: count, percentiles and
   max as log2 bucket bounds. */
static void memobs__text_sizes(memobs__out_t *o, const memobs_summary_t *s) {
    char b[5][32];
    unsigned d, rows = 0;
    for (d = 0; d < MEMOBS_DIRS; d++) {
        const memobs_xfer_sizes_t *z = &s->sizes[d];
        if (!z->count) continue;
        if (!rows++)
            memobs__out_printf(o, "  %-5s | %8s %10s %10s %10s %10s %10s   (each at most: log2 buckets)\n", "sizes",
                               "ops", "mean", "p50", "p90", "p99", "max");
        memobs__out_printf(o, "  %-5s | %8llu %10s %10s %10s %10s %10s\n", memobs__dir_name[d],
                           (unsigned long long)z->count, memobs_format_bytes(b[0], sizeof b[0], z->bytes / z->count),
                           memobs__size_bound(b[1], sizeof b[1], z->p50), memobs__size_bound(b[2], sizeof b[2], z->p90),
                           memobs__size_bound(b[3], sizeof b[3], z->p99), memobs__size_bound(b[4], sizeof b[4], z->max));
    }
}

/* The text summary; at a crash, a first line that says so. */
/* Attribution's figures for the writers: what was attributed at all
   (the figures, an orphan, a finished request's place in a top list). */
static int memobs__att_shown(const memobs_summary_t *s) {
    unsigned k;
    for (k = 0; k < MEMOBS_DIRS; k++)
        if (memobs_dirs_get(&s->attributed.total, k)->count) return 1;
    return s->attributed.orphan_bytes || s->attributed.bind_misuse || s->attributed.tenant_misuse;
}

/* total - attributed, per direction (the attributed part is read first:
   never above the total). */
static void memobs__att_unattr(const memobs_dirs_t *total, const memobs_dirs_t *att, memobs_dirs_t *out) {
    unsigned k;
    for (k = 0; k < MEMOBS_DIRS; k++) {
        const memobs_xfer_t *t = memobs_dirs_get(total, k), *a = memobs_dirs_get(att, k);
        memobs_xfer_t *x = memobs_dirs_at(out, k);
        x->bytes = t->bytes == UINT64_MAX ? UINT64_MAX : t->bytes > a->bytes ? t->bytes - a->bytes : 0;
        x->count = t->count > a->count ? t->count - a->count : 0;
    }
}

/* Tenant t's figure in the window: what 0 bytes, 1 operations (of
   direction k), 2 requests finished. Lock-free (the crash writer too). */
static uint64_t memobs__att_tenant_fig(uint32_t t, int what, unsigned k) {
    if (what == 2) return MEMOBS__LOAD(&memobs__att.treq[t].v) - memobs__att.treq_base[t];
    if (what == 0) return memobs__win(MEMOBS__LOAD(&memobs__att.tx[t][0][k].v), memobs__att.tx_base[t][0][k]);
    return MEMOBS__LOAD(&memobs__att.tx[t][1][k].v) - memobs__att.tx_base[t][1][k];
}

/* "other" has had a request (tenant t = MEMOBS_MAX_TENANTS). */
static int memobs__att_tenant_used(uint32_t t) {
    unsigned k;
    if (MEMOBS__LOAD(&memobs__att.treq[t].v)) return 1;
    for (k = 0; k < MEMOBS_DIRS; k++)
        if (MEMOBS__LOAD(&memobs__att.tx[t][1][k].v)) return 1;
    return 0;
}

/* Top list `by` of the figures (none at a crash): its first entry, *n. */
static const memobs_request_info_t *memobs__att_top_of(const memobs__figs_t *p, int by, uint32_t *n) {
    *n = p->top ? p->ntop[by] : 0;
    return p->top ? p->top + (by ? MEMOBS_REQUEST_TOP : 0) : NULL;
}

/* The text summary's attribution lines: per direction with bytes, the
   part attributed to requests; then the top 3 requests by bytes moved and
   by time waited (the JSON summary has 10 of each, and the unattributed
   bytes and ops). */
static void memobs__text_att(memobs__out_t *o, const memobs__figs_t *p) {
    const memobs_summary_t *s = &p->s;
    const memobs_request_info_t *top;
    char b[32];
    uint32_t n, j;
    unsigned d, k = 0;
    int by;
    if (!memobs__att_shown(s)) return;
    memobs__out_str(o, "  attributed to requests:");
    for (d = 0; d < MEMOBS_DIRS; d++) {
        uint64_t t = memobs_dirs_get(&s->total, d)->bytes, a = memobs_dirs_get(&s->attributed.total, d)->bytes;
        if (!t && !a) continue;
        memobs__out_printf(o, "%s %s %s", k++ ? "," : "", memobs__dir_name[d], memobs_format_bytes(b, sizeof b, a));
        memobs__out_printf(o, " (%.1f%%)", t ? 100.0 * (double)a / (double)t : 100.0);
    }
    if (!k) memobs__out_str(o, " nothing moved");
    if (s->attributed.orphan_bytes || s->attributed.bind_misuse || s->attributed.tenant_misuse)
        memobs__out_printf(o, "; %s to ids not in flight, %llu enter/leave misuses, %llu tenant calls refused",
                           memobs_format_bytes(b, sizeof b, s->attributed.orphan_bytes),
                           (unsigned long long)s->attributed.bind_misuse,
                           (unsigned long long)s->attributed.tenant_misuse);
    memobs__out_write(o, "\n", 1);
    for (by = 0; by < 2; by++) {
        top = memobs__att_top_of(p, by, &n);
        if (n > 3) n = 3;
        if (!n) continue;
        memobs__out_printf(o, "  top requests by %s:", by ? "time waited on transfers" : "bytes moved");
        for (j = 0; j < n; j++) {
            char t[32];
            memobs__out_printf(o, "%s %llu%s%s%s %s", j ? "," : "", (unsigned long long)top[j].id,
                               top[j].tenant[0] ? " (" : "", top[j].tenant, top[j].tenant[0] ? ")" : "",
                               by ? memobs_format_ns(t, sizeof t, top[j].wait_ns)
                                  : memobs_format_bytes(t, sizeof t, memobs__att_moved(&top[j])));
        }
        memobs__out_write(o, "\n", 1);
    }
}

static void memobs__summary_text(memobs__out_t *o, const memobs__figs_t *p) {
    const memobs_summary_t *s = &p->s;
    const memobs_dirs_t *cols[4];
    char b[32];
    unsigned d, c, nd = memobs__dirs_shown(s);
    cols[0] = &s->total; cols[1] = &s->prefill; cols[2] = &s->decode; cols[3] = &s->unphased;
    if (p->sig)
        memobs__out_printf(o, "== memobs crash summary == written at a crash (signal %d%s%s) by its signal handler; "
                           "host memory left out\n", p->sig, p->signame[0] ? ", " : "", p->signame);
    memobs__out_printf(o, "== memobs summary == job %s  rank %d/%d (local %d)  host %s  pid %lld  window %s%s\n",
                       s->identity.job_id[0] ? s->identity.job_id : "-", (int)s->identity.rank,
                       (int)s->identity.world_size, (int)s->identity.local_rank, s->identity.host,
                       (long long)s->identity.pid, memobs_format_ns(b, sizeof b, s->window_ns),
                       s->enabled ? "" : "  [disabled]");
    memobs__out_printf(o, "  %-5s | %10s %8s | %10s %8s | %10s %8s | %10s %8s\n", "xfer", "total", "ops", "prefill",
                       "ops", "decode", "ops", "unphased", "ops");
    for (d = 0; d <= nd; d++) { /* the directions shown, then "all" of them */
        memobs__out_printf(o, "  %-5s", d < nd ? memobs__dir_name[d] : "all");
        for (c = 0; c < 4; c++) {
            memobs_xfer_t all;
            unsigned k;
            if (d < nd) {
                memobs__text_xfer(o, memobs_dirs_get(cols[c], d));
                continue;
            }
            all.bytes = all.count = 0;
            for (k = 0; k < MEMOBS_DIRS; k++) {
                all.bytes = memobs__sat(all.bytes, memobs_dirs_get(cols[c], k)->bytes);
                all.count += memobs_dirs_get(cols[c], k)->count;
            }
            memobs__text_xfer(o, &all);
        }
        memobs__out_write(o, "\n", 1);
    }
    memobs__text_manual(o, s);
    memobs__text_att(o, p);
    memobs__text_timed(o, s);
    memobs__xin_text(o, &s->in_flight);
    memobs__text_sizes(o, s);
    memobs__out_printf(o, "  %-5s %8s %10s %10s %10s %10s %10s %10s\n", "time", "count", "mean", "p50", "p90", "p99",
                       "max", "last");
    memobs__text_latency(o, "TTFT", &s->ttft);
    memobs__text_latency(o, "TPOT", &s->tpot);
    memobs__text_latency(o, "E2E", &s->e2e);
    memobs__out_printf(o, "  requests: %llu begun, %llu completed, %llu aborted, %llu abandoned, %llu in flight\n",
                       (unsigned long long)s->requests_begun, (unsigned long long)s->requests_completed,
                       (unsigned long long)s->requests_aborted, (unsigned long long)s->requests_abandoned,
                       (unsigned long long)s->requests_in_flight);
    if (s->tracking) {
        static const char *const kname[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};
        char b2[32], b3[32];
        memobs__out_printf(o, "  %-7s | %10s %10s | %8s %8s %8s %10s\n", "memory", "current", "peak", "live",
                           "allocs", "frees", "allocated");
        for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
            const memobs_mem_stats_t *m = &s->mem[c];
            if (!m->live && !m->allocs && !m->frees && !m->current_bytes) continue;
            memobs__out_printf(o, "  %-7s | %10s %10s | %8llu %8llu %8llu %10s\n", kname[c],
                               memobs_format_bytes(b, sizeof b, m->current_bytes),
                               memobs_format_bytes(b2, sizeof b2, m->peak_bytes), (unsigned long long)m->live,
                               (unsigned long long)m->allocs, (unsigned long long)m->frees,
                               memobs_format_bytes(b3, sizeof b3, m->alloc_bytes));
        }
        for (c = 0; c < MEMOBS_MEM_KINDS; c++)
            if (s->mem[c].pending_frees)
                memobs__out_printf(o, "  %-7s   %llu freed stream-ordered, %s, not yet reached by their stream "
                                   "(not reusable)\n", kname[c], (unsigned long long)s->mem[c].pending_frees,
                                   memobs_format_bytes(b, sizeof b, s->mem[c].pending_bytes));
        memobs__out_printf(o, "  tracker: %llu traces, table capacity %llu%s\n", (unsigned long long)s->track.traces,
                           (unsigned long long)s->track.capacity,
                           s->track.untracked_live ? ", some allocations untracked" : "");
    }
    if (s->ncounters) {
        memobs__out_str(o, "  counters:\n");
        for (c = 0; c < s->ncounters; c++)
            memobs__out_printf(o, "    %-32s %20llu%s%s\n", s->counters[c].name,
                               (unsigned long long)s->counters[c].value, s->counters[c].help[0] ? "  " : "",
                               s->counters[c].help);
    }
    memobs__text_regions(o, p);
    memobs__text_coll(o);
    memobs__out_str(o, p->host);
    memobs__text_problems(o, s);
}

/* ======================================================================== */
/* Private: the JSON summary                                 >>summary-json */
/* ======================================================================== */

/* "collectives" and "peers" of the JSON summary (see memobs__text_coll). */
static void memobs__json_coll(memobs__out_t *o) {
    static const char *const ph_name[3] = {"unphased", "prefill", "decode"};
    uint32_t nc, nk, np, c, k, ph, d, nco = 0, npe = 0;
    memobs_coll_info_t info;
    if (!memobs__coll_shown()) return;
    nc = memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS);
    nk = memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS);
    np = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS);
    memobs__coll_info_read(&info);
    memobs__out_str(o, ",\"collectives\":{\"source\":");
    memobs__out_json_str(o, info.source);
    memobs__out_str(o, ",\"instance\":");
    memobs__out_json_str(o, info.instance);
    memobs__out_str(o, ",\"level\":");
    memobs__out_json_str(o, info.level);
    memobs__out_printf(o, ",\"api_version\":%d,\"events_dropped\":%llu,\"bad_events\":%llu,\"captured_calls\":%llu,"
                       "\"captured_replays\":%llu,\"comms_dropped\":%llu,\"kinds_dropped\":%llu,"
                       "\"peers_dropped\":%llu,\"comms\":[", info.api_version,
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED],
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_BAD_EVENTS],
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_CAPTURED_CALLS],
                       (unsigned long long)info.notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS],
                       (unsigned long long)info.comms_dropped, (unsigned long long)info.kinds_dropped,
                       (unsigned long long)info.peers_dropped);
    for (c = 0; c < nc; c++) {
        const memobs__comm_def_t *cd = &memobs__coll.comm[c];
        uint32_t nkind = 0;
        memobs_coll_stats_t x;
        for (k = 0; k < nk; k++)
            for (ph = 0; ph < MEMOBS__NPHASE && !nkind; ph++) nkind += memobs__coll_row_read(c, k, ph, &x) != 0;
        if (c == 0 && !nkind) continue; /* "(other)", unused */
        memobs__out_str(o, nco++ ? ",{\"name\":" : "{\"name\":");
        memobs__out_json_str(o, cd->name);
        memobs__out_printf(o, ",\"id\":%llu,\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,\"kinds\":{",
                           (unsigned long long)cd->id, (int)cd->rank, (int)cd->nranks, (int)cd->nnodes);
        nkind = 0;
        for (k = 0; k < nk; k++) {
            uint32_t nph = 0;
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                uint64_t num, den;
                int f;
                if (!memobs__coll_row_read(c, k, ph, &x)) continue;
                if (!nph++) {
                    if (nkind++) memobs__out_write(o, ",", 1);
                    memobs__out_json_str(o, x.kind_name);
                    memobs__out_write(o, ":{", 2);
                } else {
                    memobs__out_write(o, ",", 1);
                }
                f = memobs__coll_factor((int)k, cd->nranks, &num, &den);
                memobs__out_printf(o, "\"%s\":{\"ops\":%llu,\"bytes\":%llu,\"timed_ops\":%llu,\"ns\":%llu,"
                                   "\"algo_bytes\":%llu,\"bus_bytes\":%llu,\"algbw_gbs\":", ph_name[ph],
                                   (unsigned long long)x.ops, (unsigned long long)x.bytes,
                                   (unsigned long long)x.timed_ops, (unsigned long long)x.ns,
                                   (unsigned long long)x.algo_bytes, (unsigned long long)x.bus_bytes);
                if (x.ns) memobs__out_printf(o, "%.9g", x.algbw_gbs);
                else memobs__out_str(o, "null");
                memobs__out_str(o, ",\"busbw_gbs\":");
                if (x.ns && f) memobs__out_printf(o, "%.9g}", x.busbw_gbs);
                else memobs__out_str(o, "null}");
            }
            if (nph) memobs__out_write(o, "}", 1);
        }
        memobs__out_str(o, "}}");
    }
    memobs__out_str(o, "]},\"peers\":[");
    for (c = 0; c < np; c++) {
        memobs_peer_stats_t y;
        if (!memobs__peer_read(c, &y)) continue;
        memobs__out_str(o, npe++ ? ",{\"name\":" : "{\"name\":");
        memobs__out_json_str(o, y.name);
        if (y.comm >= 0) {
            memobs__out_str(o, ",\"comm\":");
            memobs__out_json_str(o, memobs__coll.comm[y.comm].name);
            memobs__out_printf(o, ",\"rank\":%d", (int)y.rank);
        } else {
            memobs__out_str(o, ",\"comm\":null,\"rank\":null");
        }
        for (d = 0; d < MEMOBS_PEER_DIRS; d++) {
            uint32_t nph = 0;
            memobs__out_str(o, d ? ",\"recv\":{" : ",\"send\":{");
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                if (!y.ops[d][ph] && !y.bytes[d][ph]) continue;
                memobs__out_printf(o, "%s\"%s\":{\"bytes\":%llu,\"ops\":%llu,\"ns\":%llu}", nph++ ? "," : "",
                                   ph_name[ph], (unsigned long long)y.bytes[d][ph], (unsigned long long)y.ops[d][ph],
                                   (unsigned long long)y.ns[d][ph]);
            }
            memobs__out_write(o, "}", 1);
        }
        memobs__out_write(o, "}", 1);
    }
    memobs__out_write(o, "]", 1);
}

static void memobs__json_dirs(memobs__out_t *o, const char *name, const memobs_dirs_t *d) {
    unsigned k;
    memobs__out_printf(o, "\"%s\":{", name);
    for (k = 0; k < MEMOBS_DIRS; k++)
        memobs__out_printf(o, "%s\"%s_bytes\":%llu,\"%s_count\":%llu", k ? "," : "", memobs__dir_key[k],
                           (unsigned long long)memobs_dirs_get(d, k)->bytes, memobs__dir_key[k],
                           (unsigned long long)memobs_dirs_get(d, k)->count);
    memobs__out_write(o, "}", 1);
}

/* "sizes": per direction, the distribution, its buckets as [bound, count]
   pairs of the non-empty ones. */
static void memobs__json_sizes(memobs__out_t *o, const memobs_summary_t *s) {
    unsigned d, b, n;
    memobs__out_str(o, ",\"sizes\":{");
    for (d = 0; d < MEMOBS_DIRS; d++) {
        const memobs_xfer_sizes_t *z = &s->sizes[d];
        memobs__out_printf(o, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,"
                           "\"max\":%llu,\"buckets\":[", d ? "," : "", memobs__dir_key[d], (unsigned long long)z->count,
                           (unsigned long long)z->bytes, (unsigned long long)z->p50, (unsigned long long)z->p90,
                           (unsigned long long)z->p99, (unsigned long long)z->max);
        for (b = n = 0; b < MEMOBS_SIZE_BUCKETS; b++)
            if (z->buckets[b])
                memobs__out_printf(o, "%s[%llu,%llu]", n++ ? "," : "", (unsigned long long)((uint64_t)1 << b),
                                   (unsigned long long)z->buckets[b]);
        memobs__out_str(o, "]}");
    }
    memobs__out_write(o, "}", 1);
}

static void memobs__json_latency(memobs__out_t *o, const char *name, const memobs_latency_t *l) {
    memobs__out_printf(o,
                       "\"%s\":{\"count\":%llu,\"last_ns\":%llu,\"mean_ns\":%llu,\"p50_ns\":%llu,\"p90_ns\":%llu,"
                       "\"p99_ns\":%llu,\"max_ns\":%llu}",
                       name, (unsigned long long)l->count, (unsigned long long)l->last_ns,
                       (unsigned long long)l->mean_ns, (unsigned long long)l->p50_ns, (unsigned long long)l->p90_ns,
                       (unsigned long long)l->p99_ns, (unsigned long long)l->max_ns);
}

static void memobs__json_memory(memobs__out_t *o, const memobs_summary_t *s) {
    static const char *const kname[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};
    const memobs_track_problems_t *t = &s->track;
    unsigned k;
    memobs__out_str(o, "\"memory\":{");
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        const memobs_mem_stats_t *m = &s->mem[k];
        memobs__out_printf(o, "%s\"%s\":{\"current_bytes\":%llu,\"peak_bytes\":%llu,\"live\":%llu,\"allocs\":%llu,"
                           "\"frees\":%llu,\"alloc_bytes\":%llu,\"pending_frees\":%llu,\"pending_bytes\":%llu}",
                           k ? "," : "", kname[k], (unsigned long long)m->current_bytes,
                           (unsigned long long)m->peak_bytes, (unsigned long long)m->live,
                           (unsigned long long)m->allocs, (unsigned long long)m->frees,
                           (unsigned long long)m->alloc_bytes, (unsigned long long)m->pending_frees,
                           (unsigned long long)m->pending_bytes);
    }
    memobs__out_printf(o, "},\"tracker\":{\"tracking\":%s,\"traces\":%llu,\"capacity\":%llu,\"frees_unknown\":%llu,"
                       "\"frees_double\":%llu,\"frees_null\":%llu,\"allocs_null\":%llu,\"allocs_zero\":%llu,"
                       "\"allocs_duplicate\":%llu,\"allocs_bad_kind\":%llu,\"untracked\":%llu,"
                       "\"untracked_bytes\":%llu,\"untracked_live\":%llu,\"untracked_frees\":%llu,"
                       "\"traces_dropped\":%llu}",
                       s->tracking ? "true" : "false", (unsigned long long)t->traces,
                       (unsigned long long)t->capacity, (unsigned long long)t->frees_unknown,
                       (unsigned long long)t->frees_double, (unsigned long long)t->frees_null,
                       (unsigned long long)t->allocs_null, (unsigned long long)t->allocs_zero,
                       (unsigned long long)t->allocs_duplicate, (unsigned long long)t->allocs_bad_kind,
                       (unsigned long long)t->untracked, (unsigned long long)t->untracked_bytes,
                       (unsigned long long)t->untracked_live, (unsigned long long)t->untracked_frees,
                       (unsigned long long)t->traces_dropped);
}

static void memobs__json_timed(memobs__out_t *o, const memobs_summary_t *s) {
    static const char *const pname[3] = {"unphased", "prefill", "decode"};
    unsigned p, d;
    memobs__out_str(o, "\"timed\":{");
    for (p = 0; p < MEMOBS_PHASES; p++) {
        memobs__out_printf(o, "\"%s\":{", pname[p]);
        for (d = 0; d < MEMOBS_DIRS; d++)
            memobs__out_printf(o, "%s\"%s\":{\"bytes\":%llu,\"count\":%llu,\"ns\":%llu}", d ? "," : "",
                               memobs__dir_key[d], (unsigned long long)s->timed[p][d].bytes, (unsigned long long)s->timed[p][d].count,
                               (unsigned long long)s->timed[p][d].ns);
        memobs__out_str(o, "},");
    }
    memobs__out_printf(o, "\"in_flight_copies\":%llu,\"in_flight_bytes\":%llu}",
                       (unsigned long long)s->timed_in_flight_copies, (unsigned long long)s->timed_in_flight_bytes);
}

static void memobs__json_regions(memobs__out_t *o, const memobs__figs_t *p) {
    uint32_t i, k = 0;
    memobs__out_str(o, ",\"regions\":[");
    for (i = 0; i < p->nregions; i++) {
        memobs_region_stats_t x;
        memobs__figs_region(p, i, &x);
        if (!x.count && !x.marks) continue;
        memobs__out_str(o, k++ ? ",{\"name\":" : "{\"name\":");
        memobs__out_json_str(o, x.name);
        memobs__out_printf(o, ",\"count\":%llu,\"timed\":%llu,\"total_ns\":%llu,\"mean_ns\":%llu,\"max_ns\":%llu,"
                           "\"marks\":%llu,\"collective\":%s}", (unsigned long long)x.count,
                           (unsigned long long)x.timed, (unsigned long long)x.total_ns,
                           (unsigned long long)(x.timed ? x.total_ns / x.timed : 0), (unsigned long long)x.max_ns,
                           (unsigned long long)x.marks, x.collective ? "true" : "false");
    }
    memobs__out_write(o, "]", 1);
}

/* The JSON summary; at a crash, "crash" and "partial" after the version. */
/* A request's ledger as JSON (the top lists). */
static void memobs__json_request(memobs__out_t *o, const memobs_request_info_t *i) {
    unsigned k;
    memobs__out_printf(o, "{\"id\":%llu,\"tenant\":", (unsigned long long)i->id);
    if (i->tenant[0]) memobs__out_json_str(o, i->tenant);
    else memobs__out_str(o, "null");
    memobs__out_printf(o, ",\"state\":\"%s\",\"bytes\":%llu,\"wait_ns\":%llu,\"tokens\":%llu,\"ttft_ns\":%llu,"
                       "\"e2e_ns\":%llu,\"peak_bytes\":%llu,\"xfer\":{", memobs__att_state_name[i->state],
                       (unsigned long long)memobs__att_moved(i), (unsigned long long)i->wait_ns,
                       (unsigned long long)i->tokens, (unsigned long long)i->ttft_ns, (unsigned long long)i->e2e_ns,
                       (unsigned long long)i->peak_bytes);
    for (k = 0; k < MEMOBS_DIRS; k++) {
        uint64_t b = 0, n = 0;
        unsigned q;
        for (q = 0; q < MEMOBS_PHASES; q++) {
            b = memobs__sat(b, memobs_dirs_get(&i->xfer[q], k)->bytes);
            n += memobs_dirs_get(&i->xfer[q], k)->count;
        }
        memobs__out_printf(o, "%s\"%s_bytes\":%llu,\"%s_count\":%llu", k ? "," : "", memobs__dir_key[k],
                           (unsigned long long)b, memobs__dir_key[k], (unsigned long long)n);
    }
    memobs__out_str(o, "}}");
}

/* ,"attributed":{...}: the attributed figures by phase, the rest
   (unattributed), the problems, the top lists and the tenants. */
static void memobs__json_att(memobs__out_t *o, const memobs__figs_t *p) {
    const memobs_summary_t *s = &p->s;
    const memobs_request_info_t *top;
    memobs_dirs_t un;
    uint32_t n, j, t, nten = MEMOBS__LOAD(&memobs__att.nten.v);
    int by;
    memobs__out_str(o, ",\"attributed\":{");
    memobs__json_dirs(o, "total", &s->attributed.total);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "prefill", &s->attributed.prefill);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "decode", &s->attributed.decode);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "unphased", &s->attributed.unphased);
    memobs__att_unattr(&s->total, &s->attributed.total, &un);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "unattributed", &un);
    memobs__out_printf(o, ",\"orphan_bytes\":%llu,\"bind_misuse\":%llu,\"tenant_misuse\":%llu",
                       (unsigned long long)s->attributed.orphan_bytes, (unsigned long long)s->attributed.bind_misuse,
                       (unsigned long long)s->attributed.tenant_misuse);
    for (by = 0; by < 2; by++) {
        top = memobs__att_top_of(p, by, &n);
        memobs__out_printf(o, ",\"top_%s\":[", by ? "wait" : "bytes");
        for (j = 0; j < n; j++) {
            if (j) memobs__out_write(o, ",", 1);
            memobs__json_request(o, &top[j]);
        }
        memobs__out_write(o, "]", 1);
    }
    memobs__out_str(o, ",\"tenants\":[");
    for (t = 0; t <= MEMOBS_MAX_TENANTS && nten; t++) {
        unsigned k;
        if (t == nten && t < MEMOBS_MAX_TENANTS) t = MEMOBS_MAX_TENANTS; /* then "other" */
        if (t == MEMOBS_MAX_TENANTS && !memobs__att_tenant_used(t)) break;
        memobs__out_str(o, t ? ",{\"name\":" : "{\"name\":");
        memobs__out_json_str(o, t < MEMOBS_MAX_TENANTS ? memobs__att.ten[t] : "other");
        memobs__out_printf(o, ",\"requests\":%llu", (unsigned long long)memobs__att_tenant_fig(t, 2, 0));
        for (k = 0; k < MEMOBS_DIRS; k++)
            memobs__out_printf(o, ",\"%s_bytes\":%llu,\"%s_count\":%llu", memobs__dir_key[k],
                               (unsigned long long)memobs__att_tenant_fig(t, 0, k), memobs__dir_key[k],
                               (unsigned long long)memobs__att_tenant_fig(t, 1, k));
        memobs__out_write(o, "}", 1);
    }
    memobs__out_str(o, "]}");
}

static void memobs__summary_json(memobs__out_t *o, const memobs__figs_t *p) {
    const memobs_summary_t *s = &p->s;
    uint32_t c;
    memobs__out_printf(o, "{\"memobs_version\":\"%s\",", MEMOBS_VERSION);
    if (p->sig) {
        memobs__out_printf(o, "\"crash\":{\"signal\":%d,\"name\":", p->sig);
        if (p->signame[0]) memobs__out_json_str(o, p->signame);
        else memobs__out_str(o, "null");
        memobs__out_str(o, ",\"left_out\":[\"host_memory\"]},\"partial\":true,");
    }
    memobs__out_str(o, "\"identity\":{\"job_id\":");
    if (s->identity.job_id[0]) memobs__out_json_str(o, s->identity.job_id);
    else memobs__out_str(o, "null");
    memobs__out_printf(o, ",\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"host\":", (int)s->identity.rank,
                       (int)s->identity.local_rank, (int)s->identity.world_size);
    memobs__out_json_str(o, s->identity.host);
    memobs__out_printf(o, ",\"pid\":%lld},\"enabled\":%s,\"window_ns\":%llu,", (long long)s->identity.pid,
                       s->enabled ? "true" : "false", (unsigned long long)s->window_ns);
    memobs__json_dirs(o, "total", &s->total);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "prefill", &s->prefill);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "decode", &s->decode);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "unphased", &s->unphased);
    memobs__out_printf(o, ",\"manual\":{\"apart\":%s,", s->manual.apart ? "true" : "false");
    memobs__json_dirs(o, "total", &s->manual.total);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "prefill", &s->manual.prefill);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "decode", &s->manual.decode);
    memobs__out_write(o, ",", 1);
    memobs__json_dirs(o, "unphased", &s->manual.unphased);
    memobs__out_str(o, "},");
    memobs__json_latency(o, "ttft", &s->ttft);
    memobs__out_write(o, ",", 1);
    memobs__json_latency(o, "tpot", &s->tpot);
    memobs__out_write(o, ",", 1);
    memobs__json_latency(o, "e2e", &s->e2e);
    memobs__json_att(o, p);
    memobs__out_printf(o,
                       ",\"requests\":{\"begun\":%llu,\"completed\":%llu,\"aborted\":%llu,\"abandoned\":%llu,"
                       "\"in_flight\":%llu,\"dropped\":%llu,\"unknown\":%llu,\"duplicate\":%llu},"
                       "\"problems\":{\"ttft_unmatched\":%llu,\"tpot_unarmed\":%llu,\"bad_records\":%llu,"
                       "\"untracked_threads\":%llu,\"signal_dropped\":%llu,\"region_unmatched_ends\":%llu,"
                       "\"region_too_deep\":%llu,\"region_names_dropped\":%llu},\"counters\":{",
                       (unsigned long long)s->requests_begun, (unsigned long long)s->requests_completed,
                       (unsigned long long)s->requests_aborted, (unsigned long long)s->requests_abandoned,
                       (unsigned long long)s->requests_in_flight, (unsigned long long)s->requests_dropped,
                       (unsigned long long)s->requests_unknown, (unsigned long long)s->requests_duplicate,
                       (unsigned long long)s->ttft_unmatched, (unsigned long long)s->tpot_unarmed,
                       (unsigned long long)s->bad_records, (unsigned long long)s->untracked_threads,
                       (unsigned long long)s->signal_dropped, (unsigned long long)s->region_unmatched_ends,
                       (unsigned long long)s->region_too_deep, (unsigned long long)s->region_names_dropped);
    for (c = 0; c < s->ncounters; c++) {
        if (c) memobs__out_write(o, ",", 1);
        memobs__out_json_str(o, s->counters[c].name);
        memobs__out_printf(o, ":%llu", (unsigned long long)s->counters[c].value);
    }
    memobs__out_str(o, "},");
    memobs__json_memory(o, s);
    memobs__out_write(o, ",", 1);
    memobs__json_timed(o, s);
    memobs__xin_json(o, &s->in_flight);
    memobs__json_sizes(o, s);
    memobs__json_regions(o, p);
    memobs__json_coll(o);
    memobs__out_str(o, p->host);
    memobs__out_str(o, "}\n");
}

/* ======================================================================== */
/* Private: the summary's writers                         >>summary-writers */
/* ======================================================================== */

static void memobs__summary_gen(memobs__out_t *o, const memobs__figs_t *p, int fmt) {
    if (fmt == MEMOBS_FORMAT_JSON) memobs__summary_json(o, p);
    else memobs__summary_text(o, p);
}

int memobs_write_summary(FILE *f, memobs_format_t fmt) {
    memobs__figs_t *p;
    memobs__out_t o;
    int rc;
    if (!f || (fmt != MEMOBS_FORMAT_TEXT && fmt != MEMOBS_FORMAT_JSON)) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_summary: %s", !f ? "NULL FILE" : "unknown format");
        return MEMOBS_ERR_INVALID;
    }
    /* a few KB: kept off small thread stacks, with the output's buffer */
    p = (memobs__figs_t *)MEMOBS_MALLOC(sizeof *p + MEMOBS__OUT_BUF);
    if (!p) return MEMOBS_ERR_NOMEM;
    if ((rc = memobs__figs_get(p, (int)fmt)) == MEMOBS_OK) {
        memobs__out_file(&o, f, (char *)(p + 1), MEMOBS__OUT_BUF);
        memobs__summary_gen(&o, p, (int)fmt);
        memobs__out_end(&o);
        memobs__figs_free(p);
    }
    MEMOBS_FREE(p);
    if (rc != MEMOBS_OK) return rc;
    if (fflush(f) != 0 || ferror(f)) return MEMOBS_ERR_IO;
    return MEMOBS_OK;
}

void memobs_print_summary(void) {
    memobs_init();
    memobs_write_summary(stderr, memobs__g.format);
}

static int memobs__write_summary_fmt(FILE *f, int fmt) { return memobs_write_summary(f, (memobs_format_t)fmt); }

int memobs_write_summary_file(const char *path, memobs_format_t fmt) {
    return memobs__output_file(MEMOBS__OUT_SUMMARY, path, (int)fmt);
}

/* ======================================================================== */
/* Private: destinations: platform calls and file naming           >>naming */
/* ======================================================================== */

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#if defined(__linux__)
/* Strict -std=c99/c11 hides these POSIX and Linux declarations unless the
   includer defined a feature macro before its first libc header; the libc
   symbols are there regardless (glibc and musl), so reach them under
   private names. */
#define MEMOBS__OUT_LINUX 1
extern FILE *memobs__fdopen(int fd, const char *mode) __asm__("fdopen");
extern FILE *memobs__open_memstream(char **buf, size_t *len) __asm__("open_memstream");
extern int memobs__linkat(int olddir, const char *oldpath, int newdir, const char *newpath, int flags)
    __asm__("linkat");
extern ssize_t memobs__readlink(const char *path, char *buf, size_t len) __asm__("readlink");
extern int memobs__kill(int pid, int sig) __asm__("kill");
/* sigset_t of glibc and musl: 1024 bits, signal n at bit n - 1. */
typedef struct { unsigned long w[1024 / (8 * sizeof(unsigned long))]; } memobs__sigset_t;
extern int memobs__sigmask(int how, const memobs__sigset_t *set, memobs__sigset_t *old) __asm__("pthread_sigmask");
extern int memobs__sigpending(memobs__sigset_t *set) __asm__("sigpending");
extern int memobs__sigwait(const memobs__sigset_t *set, int *sig) __asm__("sigwait");
#define MEMOBS__AT_FDCWD (-100)
#define MEMOBS__AT_SYMLINK_FOLLOW 0x400
#define MEMOBS__AT_EMPTY_PATH 0x1000
/* Flags whose values differ by architecture: from the headers when they
   show them, else the values of the architectures listed. */
#if defined(O_CLOEXEC)
#define MEMOBS__O_CLOEXEC O_CLOEXEC
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || defined(__riscv)
#define MEMOBS__O_CLOEXEC 02000000
#endif
/* MEMOBS__NO_TMPFILE (private, for the tests) builds with named temporaries only. */
#if defined(MEMOBS__NO_TMPFILE)
#elif defined(O_TMPFILE)
#define MEMOBS__O_TMPFILE O_TMPFILE
#elif defined(__x86_64__) || defined(__i386__) || defined(__riscv)
#define MEMOBS__O_TMPFILE (020000000 | 0200000)
#elif defined(__aarch64__) || defined(__arm__)
#define MEMOBS__O_TMPFILE (020000000 | 040000)
#endif
#if defined(SIG_BLOCK) && defined(SIG_SETMASK)
#define MEMOBS__SIG_BLOCK SIG_BLOCK
#define MEMOBS__SIG_SETMASK SIG_SETMASK
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || defined(__riscv)
#define MEMOBS__SIG_BLOCK 0
#define MEMOBS__SIG_SETMASK 2
#endif
#else
#define memobs__fdopen fdopen
#endif
#ifndef MEMOBS__O_CLOEXEC
#define MEMOBS__O_CLOEXEC 0
#endif

#define MEMOBS__OS_TTY 1u    /* warn-once bit of the writers (memobs__g.out_said): a terminal refused */

/* Decimal digits of v at out (no terminating 0); their count. Async-signal-safe. */
static size_t memobs__utoa(char *out, uint64_t v) {
    char t[24];
    size_t n = 0, i;
    do t[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    for (i = 0; i < n; i++) out[i] = t[n - 1 - i];
    return n;
}

/* Expands %r (rank), %p (pid) and %% in a path; 0 if it does not fit.
   Async-signal-safe. */
static int memobs__expand_as(const char *in, char *out, size_t len, int rank, int64_t pid) {
    size_t o = 0;
    for (; *in; in++) {
        char tmp[24];
        size_t k = 1;
        if (in[0] == '%' && in[1] == 'r') k = memobs__utoa(tmp, (uint64_t)(rank < 0 ? 0 : rank)), in++;
        else if (in[0] == '%' && in[1] == 'p') k = memobs__utoa(tmp, (uint64_t)pid), in++;
        else if (in[0] == '%' && in[1] == '%') tmp[0] = '%', in++;
        else tmp[0] = *in;
        if (o + k + 1 > len) return 0;
        memcpy(out + o, tmp, k);
        o += k;
    }
    out[o] = 0;
    return 1;
}

/* With the identity and pid of now. */
static int memobs__expand_path(const char *in, char *out, size_t len) {
    memobs_identity_t id;
    memobs_get_identity(&id);
    return memobs__expand_as(in, out, len, (int)id.rank, (int64_t)getpid());
}

/* Whether spec holds %c (r or p) once %% is read as a percent sign. */
static int memobs__spec_has(const char *spec, char c) {
    for (; *spec; spec++) {
        if (spec[0] != '%') continue;
        if (spec[1] == c) return 1;
        if (spec[1] == '%') spec++;
    }
    return 0;
}

/* ======================================================================== */
/* Private: SIGPIPE: a closed pipe costs one output only          >>sigpipe */
/* ======================================================================== */

/* SIGPIPE is blocked on the writing thread around a write; a SIGPIPE the
   write raised (pending afterwards, not before) is taken with sigwait, so
   neither the program's handler nor the default action (death) sees it:
   the write fails with EPIPE instead. */
typedef struct {
    int on, pending;
#ifdef MEMOBS__SIG_BLOCK
    memobs__sigset_t old;
#endif
} memobs__pipe_t;

#ifdef MEMOBS__SIG_BLOCK
static int memobs__sigpipe_in(const memobs__sigset_t *s) {
    return (s->w[(SIGPIPE - 1) / (8 * sizeof(unsigned long))] >> ((SIGPIPE - 1) % (8 * sizeof(unsigned long)))) & 1u;
}
static void memobs__sigpipe_set(memobs__sigset_t *s) {
    memset(s, 0, sizeof *s);
    s->w[(SIGPIPE - 1) / (8 * sizeof(unsigned long))] = 1ul << ((SIGPIPE - 1) % (8 * sizeof(unsigned long)));
}
#endif

static void memobs__pipe_block(memobs__pipe_t *p) {
#ifdef MEMOBS__SIG_BLOCK
    memobs__sigset_t s, pend;
    memobs__sigpipe_set(&s);
    p->on = memobs__sigmask(MEMOBS__SIG_BLOCK, &s, &p->old) == 0;
    p->pending = p->on && memobs__sigpending(&pend) == 0 && memobs__sigpipe_in(&pend);
#else
    p->on = p->pending = 0;
#endif
}

static void memobs__pipe_unblock(memobs__pipe_t *p) {
#ifdef MEMOBS__SIG_BLOCK
    memobs__sigset_t s, pend;
    int sig;
    if (!p->on) return;
    memobs__sigpipe_set(&s);
    if (!p->pending && memobs__sigpending(&pend) == 0 && memobs__sigpipe_in(&pend)) (void)memobs__sigwait(&s, &sig);
    (void)memobs__sigmask(MEMOBS__SIG_SETMASK, &p->old, NULL);
#else
    (void)p;
#endif
}

/* ======================================================================== */
/* Private: destinations: one writer per path                >>destinations */
/* ======================================================================== */

/* A claim on a file name, visible to every memobs instance of the process
   (two modules built with MEMOBS_HIDDEN share no symbol): a listening unix
   stream socket bound in the abstract namespace (Linux) under a name made
   of the pid and a hash of the file (its folder's device and inode, and
   its name), kept open (close-on-exec) while the output is configured.
   A name found bound counts as another instance's only when a connection
   to it shows a peer of this process (SO_PEERCRED): then the second
   instance tries name.2.ext, name.3.ext, ... Any other holder (another
   user's process, a process of another container sharing the network
   namespace, a socket of another type) names nothing: the same file is
   claimed under the next try of the name (k = 1, 2, ...), and when every
   try is taken the file is written unclaimed, under its own name. */
#define MEMOBS__CLAIM_TRIES 8

#if defined(MEMOBS__OUT_LINUX) && defined(SOCK_CLOEXEC) && defined(SOCK_NONBLOCK)
#define MEMOBS__CLAIMS 1
#if defined(SO_PEERCRED)
#define MEMOBS__SO_PEERCRED SO_PEERCRED
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || defined(__riscv)
#define MEMOBS__SO_PEERCRED 17
#endif

/* The claim's address for path in process pid, try k (0: the name every
   memobs since 1.0 uses); its length. */
static socklen_t memobs__claim_name(const char *path, int64_t pid, unsigned k, struct sockaddr_un *a) {
    struct stat st;
    char dir[MEMOBS__PATH_LEN];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    size_t n, i;
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else if ((size_t)(slash - path) < sizeof dir) memcpy(dir, path, (size_t)(slash - path)), dir[slash - path] = 0;
    else return 0;
    if (stat(dir, &st) == 0) {
        uint64_t v[2];
        v[0] = (uint64_t)st.st_dev;
        v[1] = (uint64_t)st.st_ino;
        for (i = 0; i < sizeof v; i++) h = (h ^ ((const unsigned char *)v)[i]) * 1099511628211ull;
    } else {
        for (i = 0; dir[i]; i++) h = (h ^ (unsigned char)dir[i]) * 1099511628211ull;
    }
    for (i = 0; base[i]; i++) h = (h ^ (unsigned char)base[i]) * 1099511628211ull;
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, "memobs-out.", 11); /* sun_path[0] = 0: the abstract namespace */
    n = 12 + memobs__utoa(a->sun_path + 12, (uint64_t)pid);
    a->sun_path[n++] = '.';
    for (i = 0; i < 16; i++) a->sun_path[n++] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
    if (k) a->sun_path[n++] = '.', n += memobs__utoa(a->sun_path + n, k);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
}

/* 1 when the socket listening at a belongs to this process: another
   memobs instance's claim. Anything unproven (no listener, another
   process, a full backlog) is 0. */
static int memobs__claim_ours(const struct sockaddr_un *a, socklen_t len) {
#ifdef MEMOBS__SO_PEERCRED
    struct { int32_t pid; uint32_t uid, gid; } cred; /* struct ucred (Linux) */
    socklen_t cl = (socklen_t)sizeof cred;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), ours = 0;
    if (fd < 0) return 0;
    if (connect(fd, (const struct sockaddr *)(const void *)a, len) == 0 &&
        getsockopt(fd, SOL_SOCKET, MEMOBS__SO_PEERCRED, &cred, &cl) == 0 && cl == (socklen_t)sizeof cred)
        ours = (int64_t)cred.pid == (int64_t)getpid();
    close(fd);
    return ours;
#else
    (void)a;
    (void)len;
    return 0;
#endif
}
#endif

/* Claims path for process pid: returns the socket + 1, with its identity
   in *dev, *ino; or 0 when another instance of this process holds it
   (*busy set), or when no claim can be made here (then the name is used
   unclaimed). */
static int memobs__claim_try(const char *path, int64_t pid, int *busy, uint64_t *dev, uint64_t *ino) {
#ifdef MEMOBS__CLAIMS
    struct sockaddr_un a;
    struct stat st;
    unsigned k;
    *busy = 0;
    for (k = 0; k < MEMOBS__CLAIM_TRIES; k++) {
        socklen_t len = memobs__claim_name(path, pid, k, &a);
        int fd, e;
        if (!len || (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) return 0;
        if (bind(fd, (const struct sockaddr *)(const void *)&a, len) == 0) {
            if (listen(fd, 4096) == 0 && fstat(fd, &st) == 0) {
                *dev = (uint64_t)st.st_dev;
                *ino = (uint64_t)st.st_ino;
                return fd + 1;
            }
            close(fd);
            return 0;
        }
        e = errno;
        close(fd);
        if (e != EADDRINUSE) return 0;
        if (memobs__claim_ours(&a, len)) return *busy = 1, 0;
    }
    return 0;
#else
    (void)path;
    (void)pid;
    (void)dev;
    (void)ino;
    *busy = 0;
    return 0;
#endif
}

/* Gives up d's claim: its socket is closed only while it is still the one
   bound (same device and inode): a program that closed it, and reused the
   number for a file of its own, keeps that file. Async-signal-safe. */
static void memobs__claim_drop(memobs__dest_t *d) {
    struct stat st;
    if (d->claim && fstat(d->claim - 1, &st) == 0 && (uint64_t)st.st_dev == d->claim_dev &&
        (uint64_t)st.st_ino == d->claim_ino)
        close(d->claim - 1);
    d->claim = 0;
}

/* path with ".n" before its extension (the last dot of the file name,
   not a leading one): out.json -> out.2.json, trace -> trace.2. */
static int memobs__numbered(const char *path, unsigned n, char *out, size_t len) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path, *dot = strrchr(base, '.');
    char num[16];
    size_t k, at;
    if (!dot || dot == base) dot = base + strlen(base);
    at = (size_t)(dot - path);
    num[0] = '.';
    k = 1 + memobs__utoa(num + 1, n);
    if (strlen(path) + k + 1 > len) return 0;
    memcpy(out, path, at);
    memcpy(out + at, num, k);
    strcpy(out + at + k, path + at);
    return 1;
}

static size_t memobs__dir_len(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (slash == path ? 1u : (size_t)(slash - path)) : 0u;
}

/* The host and pid namespace in a temporary's name: an FNV-1a hash of the
   host name and of /proc/self/ns/pid's link (its inode), 1 at least; 0
   when either cannot be read (the sweep then removes nothing).
   Async-signal-safe. */
static uint32_t memobs__host_id(void) {
#ifdef MEMOBS__OUT_LINUX
    struct utsname u;
    char ns[64];
    ssize_t n = memobs__readlink("/proc/self/ns/pid", ns, sizeof ns);
    uint32_t h = 2166136261u;
    size_t i;
    if (n <= 0 || uname(&u) != 0) return 0;
    for (i = 0; i < sizeof u.nodename && u.nodename[i]; i++) h = (h ^ (unsigned char)u.nodename[i]) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (i = 0; i < (size_t)n; i++) h = (h ^ (unsigned char)ns[i]) * 16777619u;
    return h ? h : 1u;
#else
    return 0;
#endif
}

/* Whether name, from n on, is ".tmp.HOST.PID.N" with HOST == id (8 hex
   digits); *pid its PID. */
static int memobs__sweep_tail(const char *n, uint32_t id, long long *pid) {
    uint32_t h = 0;
    int i;
    if (strncmp(n, ".tmp.", 5) != 0) return 0;
    for (n += 5, i = 0; i < 8; i++, n++) {
        int v = *n >= '0' && *n <= '9' ? *n - '0' : *n >= 'a' && *n <= 'f' ? *n - 'a' + 10 : -1;
        if (v < 0) return 0;
        h = h << 4 | (uint32_t)v;
    }
    if (h != id || *n++ != '.') return 0;
    for (*pid = 0; *n >= '0' && *n <= '9' && *pid < 100000000; n++) *pid = *pid * 10 + (*n - '0');
    if (*n++ != '.' || !*pid || !(*n >= '0' && *n <= '9')) return 0;
    while (*n >= '0' && *n <= '9') n++;
    return !*n;
}

/* Whether name is a temporary of pattern p..pe (spec: %p and %r match any
   digits, %% a percent sign; else literal) of this host (id). */
static int memobs__sweep_match(const char *p, const char *pe, int spec, const char *n, uint32_t id, long long *pid) {
    for (; p < pe; p++, n++) {
        if (spec && p[0] == '%' && p + 1 < pe && (p[1] == 'p' || p[1] == 'r')) {
            while (*n >= '0' && *n <= '9')
                if (memobs__sweep_match(p + 2, pe, spec, ++n, id, pid)) return 1;
            return 0;
        }
        if (spec && p[0] == '%' && p + 1 < pe && p[1] == '%') p++;
        if (*p != *n) return 0;
    }
    return memobs__sweep_tail(n, id, pid);
}

/* Removes the named temporaries (NAME.tmp.HOST.PID.N) in path's folder
   whose NAME is pattern (path's file name, or with spec the file name of
   the unexpanded spec: %p and %r then match any number) left by processes
   that are gone: of this host and pid namespace (HOST, memobs__host_id)
   and a PID that is not alive. Another host's or container's temporary
   (NFS, a shared hostPath), whose PID means nothing here, is never
   touched. */
static void memobs__sweep_as(const char *path, const char *spec) {
#ifdef MEMOBS__OUT_LINUX
    char dir[MEMOBS__PATH_LEN], victim[MEMOBS__PATH_LEN + 300];
    const char *pat = spec ? spec : path, *slash = strrchr(pat, '/'), *base = slash ? slash + 1 : pat;
    size_t dl = memobs__dir_len(path);
    uint32_t id = memobs__host_id();
    long long me = (long long)getpid();
    struct dirent *e;
    DIR *d;
    if (!id || dl >= sizeof dir) return;
    if (dl) memcpy(dir, path, dl), dir[dl] = 0;
    else strcpy(dir, ".");
    if ((d = opendir(dir)) == NULL) return;
    while ((e = readdir(d)) != NULL) {
        long long pid = 0;
        if (!memobs__sweep_match(base, base + strlen(base), spec != NULL, e->d_name, id, &pid) || pid == me) continue;
        if (memobs__kill((int)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to ask) */
        snprintf(victim, sizeof victim, "%s/%s", dir, e->d_name);
        (void)unlink(victim);
    }
    closedir(d);
#else
    (void)path;
    (void)spec;
#endif
}

/* The temporaries of path itself. */
static void memobs__sweep(const char *path) { memobs__sweep_as(path, NULL); }

/* Claims output which's expanded path (memobs__dest_resolve) for this
   process, once: the name itself, else name.2.ext, ... (another instance
   of the process holds it). Same callers and quiet as
   memobs__dest_resolve. */
static void memobs__dest_claim(unsigned which, int quiet) {
    memobs__dest_t *d = &memobs__g.out[which];
    char full[MEMOBS__PATH_LEN], name[MEMOBS__PATH_LEN];
    unsigned n;
    int busy;
    if (d->claimed || d->stream || !d->path[0]) return;
    d->claimed = 1;
    strcpy(full, d->path);
    strcpy(name, full);
    for (n = 2; n <= 100; n++) {
        d->claim = memobs__claim_try(name, d->path_pid, &busy, &d->claim_dev, &d->claim_ino);
        if (!busy) break;
        if (n == 100 || !memobs__numbered(full, n, name, sizeof name)) { /* no free name: shared, as before */
            strcpy(name, full);
            break;
        }
    }
    strcpy(d->path, name);
    d->renamed_said = strcmp(name, full) == 0;
    if (!d->renamed_said && !quiet) {
        memobs__log(MEMOBS_LOG_INFO, "%s: another memobs instance in this process writes '%s'; this one writes '%s'",
                    memobs__out_info[which].var, full, name);
        d->renamed_said = 1;
    }
    if (!quiet) memobs__sweep(d->path);
}

/* Output which's destination for this process: spec expanded and the
   name claimed (the claim held before is given up first; with
   MEMOBS__CLAIM_LATE the claim waits for memobs__dest_claim). Caller
   holds memobs__g.lock, or runs inside memobs__init_once or a fork()
   child's handler; quiet: no message now (the writer tells the rename
   later). */
static void memobs__dest_resolve(unsigned which, int quiet) {
    memobs__dest_t *d = &memobs__g.out[which];
    char full[MEMOBS__PATH_LEN];
    memobs__claim_drop(d);
    d->claimed = 0;
    d->path[0] = 0;
    d->path_pid = (int64_t)getpid();
    d->renamed_said = 1;
    if (d->stream) return;
    if (!memobs__expand_as(d->spec, full, sizeof full, (int)memobs__g.identity.rank, d->path_pid)) {
        if (!quiet) memobs__log(MEMOBS_LOG_WARN, "%s='%s' is longer than %u bytes once expanded; off",
                                memobs__out_info[which].var, d->spec, (unsigned)sizeof full - 1);
        return;
    }
    strcpy(d->path, full);
#ifndef MEMOBS__CLAIM_LATE
    memobs__dest_claim(which, quiet);
#endif
}

/* The fork rule: an output is written by the process that configured it,
   or by any process when its path holds %p (then its own). Async-signal-
   safe; with path_pid == getpid(), d->path is this process's file. */
static int memobs__dest_ours(const memobs__dest_t *d) {
    return MEMOBS__LOAD(&d->on.v) && (d->has_pid || d->owner == (int64_t)getpid());
}

/* MEMOBS__CLAIM_LATE (the LD_PRELOAD library, which may have nothing to
   write): claims every output of this process's now, at its first
   observed call; a write claims its own output first otherwise. */
static __attribute__((unused)) void memobs__claims_now(void) {
    unsigned i;
    pthread_mutex_lock(&memobs__g.lock);
    for (i = 0; i < MEMOBS__OUTS; i++)
        if (memobs__dest_ours(&memobs__g.out[i]) && memobs__g.out[i].path_pid == (int64_t)getpid())
            memobs__dest_claim(i, 1); /* the writer tells a rename */
    pthread_mutex_unlock(&memobs__g.lock);
}

/* A fork() child, from memobs__atfork_child (every memobs lock held, one
   thread): the parent's claims are the parent's; a %p path is resolved
   for the child. A flush that held flush_lock in a thread that did not
   come along never ends here: the lock starts free. */
static void memobs__outs_fork(void) {
    unsigned i;
    pthread_mutex_init(&memobs__g.flush_lock, NULL);
    for (i = 0; i < MEMOBS__OUTS; i++) {
        memobs__dest_t *d = &memobs__g.out[i];
        if (!MEMOBS__LOAD(&d->on.v)) continue;
        if (d->has_pid) memobs__dest_resolve(i, 1);
        else memobs__claim_drop(d);
    }
}

/* ======================================================================== */
/* Private: whole files                                       >>whole-files */
/* ======================================================================== */

/* What a configured path is, one decision for the exit, periodic and crash
   writers (memobs__path_kind, async-signal-safe):
     - a name of one of the process's descriptors (/dev/stdout, /dev/stderr,
       /dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N with this pid): written to
       that descriptor, in place (MEMOBS__WH_FD);
     - a file that is not regular (character device, FIFO, socket), or a
       link to one that may be followed: opened (O_APPEND, O_NONBLOCK: a FIFO
       with no reader is skipped) and written in place, never replaced
       (MEMOBS__WH_INPLACE);
     - anything else (absent, a regular file, a link to a regular file or
       to nothing, a link the kernel's protected_symlinks rule would refuse
       to follow): a file of memobs' own, created in the path's folder, is
       written whole and renamed over the path (memobs__whole_commit). A
       link is replaced as a link; a regular file keeps its mode (and owner
       where permitted); ACLs and hard links are not kept.
   The file of its own: an O_TMPFILE file (Linux 3.11+; tmpfs, ext4, xfs,
   btrfs...), with no name until it is linked, so a process killed while
   writing leaves nothing; where it is refused, a named temporary
   PATH.tmp.HOST.PID.N (O_CREAT|O_EXCL|O_NOFOLLOW; HOST: memobs__host_id,
   the host and pid namespace), which memobs__sweep removes once its
   process is gone. Every step is async-signal-safe (open, write, linkat,
   rename, unlink, readlink, stat, lstat, fstat, fchmod, fchown, uname):
   the crash writer uses it. */
#include <poll.h>

enum { MEMOBS__WH_TMPFILE = 1, MEMOBS__WH_NAMED = 2, MEMOBS__WH_INPLACE = 3, MEMOBS__WH_FD = 4 };
typedef struct {
    int fd, how, existed;            /* existed: the name was there (a file, a link) */
    int unlinkable;                  /* linkat refused the O_TMPFILE file (no /proc, no right) */
    int keep;                        /* the file replaced was regular: its mode and owner kept */
    unsigned mode, uid, gid;         /* ... these */
    char final[MEMOBS__PATH_LEN];    /* the path (a link there is replaced, not followed) */
    char tmp[MEMOBS__PATH_LEN + 48]; /* the named temporary, "" when none exists */
} memobs__whole_t;

#ifdef MEMOBS__OUT_LINUX
extern int memobs__lstat(const char *path, struct stat *st) __asm__("lstat");
extern int memobs__fchmod(int fd, unsigned mode) __asm__("fchmod");
extern int memobs__fchown(int fd, unsigned uid, unsigned gid) __asm__("fchown");
extern int memobs__fdatasync(int fd) __asm__("fdatasync");
extern unsigned memobs__geteuid(void) __asm__("geteuid");
#if defined(O_NOFOLLOW)
#define MEMOBS__O_NOFOLLOW O_NOFOLLOW
#elif defined(__x86_64__) || defined(__i386__) || defined(__riscv)
#define MEMOBS__O_NOFOLLOW 0400000
#elif defined(__aarch64__) || defined(__arm__)
#define MEMOBS__O_NOFOLLOW 0100000
#endif
#endif
#ifndef MEMOBS__O_NOFOLLOW
#define MEMOBS__O_NOFOLLOW 0
#endif
#define MEMOBS__S_ISLNK(m) (((m) & 0170000) == 0120000)
#define MEMOBS__INPLACE_IDLE_MS 5000 /* an in-place write (FIFO, pipe, terminal) that takes nothing this long gives up */

/* path's folder into dir[MEMOBS__PATH_LEN]; 0 when too long. */
static int memobs__dir_of(const char *path, char *dir) {
    size_t dl = memobs__dir_len(path);
    if (dl >= MEMOBS__PATH_LEN) return 0;
    if (dl) memcpy(dir, path, dl), dir[dl] = 0;
    else strcpy(dir, ".");
    return 1;
}

/* The descriptor a path names (/dev/stdin, /dev/stdout, /dev/stderr,
   /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N, /proc/PID/fd/N with
   this process's pid), or -1. Async-signal-safe. */
static int memobs__fd_name(const char *p) {
    static const char *const pre[] = {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"};
    char own[40] = "/proc/";
    size_t i, k;
    long n = 0;
    if (strcmp(p, "/dev/stdin") == 0) return 0;
    if (strcmp(p, "/dev/stdout") == 0) return 1;
    if (strcmp(p, "/dev/stderr") == 0) return 2;
    k = 6 + memobs__utoa(own + 6, (uint64_t)getpid());
    memcpy(own + k, "/fd/", 5);
    for (i = 0; i < 4; i++) {
        const char *q = i < 3 ? pre[i] : own;
        size_t l = strlen(q);
        if (strncmp(p, q, l) != 0) continue;
        p += l;
        if (!*p) return -1;
        for (; *p >= '0' && *p <= '9' && n < 100000000; p++) n = n * 10 + (*p - '0');
        return *p ? -1 : (int)n;
    }
    return -1;
}

/* Whether the kernel's protected_symlinks rule would refuse this process
   to follow the link at path (lst: its lstat): the link's folder is
   sticky and world-writable, and the link is owned by neither the
   effective uid nor the folder's owner. Applied whatever the sysctl says.
   Async-signal-safe. */
static int memobs__link_protected(const char *path, const struct stat *lst) {
#ifdef MEMOBS__OUT_LINUX
    char dir[MEMOBS__PATH_LEN];
    struct stat d;
    unsigned me = memobs__geteuid();
    if (!memobs__dir_of(path, dir) || stat(dir, &d) != 0) return 1; /* not known: not followed */
    return (d.st_mode & 01002) == 01002 && (unsigned)lst->st_uid != me && lst->st_uid != d.st_uid;
#else
    (void)path;
    (void)lst;
    return 0;
#endif
}

/* What path is (see the section's comment): MEMOBS__WH_FD (*fdno set),
   MEMOBS__WH_INPLACE (*follow: through a link), MEMOBS__WH_NAMED (a file
   of memobs' own renamed over it; w->existed, w->keep and the mode and
   owner set), or -1 for a folder. Async-signal-safe. */
static int memobs__path_kind(const char *path, memobs__whole_t *w, int *fdno, int *follow) {
    struct stat st, t;
    *follow = 0;
    w->existed = w->keep = 0;
    if ((*fdno = memobs__fd_name(path)) >= 0) return MEMOBS__WH_FD;
#ifdef MEMOBS__OUT_LINUX
    if (memobs__lstat(path, &st) != 0) return MEMOBS__WH_NAMED; /* absent (or the create says why) */
    w->existed = 1;
    if (MEMOBS__S_ISLNK(st.st_mode)) {
        char link[MEMOBS__PATH_LEN];
        ssize_t n;
        if (memobs__link_protected(path, &st)) return MEMOBS__WH_NAMED; /* replaced, never followed */
        n = memobs__readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = 0;
            if ((*fdno = memobs__fd_name(link)) >= 0) return MEMOBS__WH_FD; /* a container's /dev/stderr */
        }
        if (stat(path, &t) != 0 || S_ISREG(t.st_mode)) return MEMOBS__WH_NAMED; /* the link replaced */
        if (S_ISDIR(t.st_mode)) return -1;
        *follow = 1;
        return MEMOBS__WH_INPLACE;
    }
#else
    if (stat(path, &st) != 0) return MEMOBS__WH_NAMED;
    w->existed = 1;
#endif
    if (S_ISDIR(st.st_mode)) return -1;
    if (!S_ISREG(st.st_mode)) return MEMOBS__WH_INPLACE;
    w->keep = 1;
    w->mode = (unsigned)st.st_mode & 0777u;
    w->uid = (unsigned)st.st_uid;
    w->gid = (unsigned)st.st_gid;
    return MEMOBS__WH_NAMED;
}

/* w->tmp = final.tmp.HOST.PID.N (HOST: 8 hex digits, memobs__host_id) */
static void memobs__whole_tmpname(memobs__whole_t *w) {
    size_t n = strlen(w->final);
    uint32_t h = memobs__host_id();
    int i;
    memcpy(w->tmp, w->final, n);
    memcpy(w->tmp + n, ".tmp.", 5);
    n += 5;
    for (i = 0; i < 8; i++) w->tmp[n++] = "0123456789abcdef"[(h >> (28 - 4 * i)) & 15];
    w->tmp[n++] = '.';
    n += memobs__utoa(w->tmp + n, (uint64_t)getpid());
    w->tmp[n++] = '.';
    n += memobs__utoa(w->tmp + n, MEMOBS__ADD(&memobs__g.tmp_seq.v, 1u));
    w->tmp[n] = 0;
}

/* The replaced file's mode and owner onto the new one (the owner where
   this process may give it). */
static void memobs__whole_keep(memobs__whole_t *w) {
#ifdef MEMOBS__OUT_LINUX
    struct stat st;
    if (!w->keep || fstat(w->fd, &st) != 0) return;
    if ((unsigned)st.st_uid != w->uid || (unsigned)st.st_gid != w->gid) (void)memobs__fchown(w->fd, w->uid, w->gid);
    if (((unsigned)st.st_mode & 07777u) != w->mode) (void)memobs__fchmod(w->fd, w->mode);
#else
    (void)w;
#endif
}

/* Opens path's destination (named: no O_TMPFILE): w->fd is the
   descriptor to write (MEMOBS__WH_FD: not ours to close); 0 or an errno
   (ENXIO: a FIFO or socket with no reader, EISDIR: a folder). */
static int memobs__whole_open(memobs__whole_t *w, const char *path, int named) {
    char dir[MEMOBS__PATH_LEN];
    int i, fdno, follow, kind;
    w->fd = -1;
    w->unlinkable = 0;
    w->tmp[0] = 0;
    w->how = MEMOBS__WH_INPLACE;
    if (strlen(path) >= sizeof w->final) return ENAMETOOLONG;
    strcpy(w->final, path);
    if ((kind = memobs__path_kind(path, w, &fdno, &follow)) < 0) return EISDIR;
    if (kind == MEMOBS__WH_FD) {
        w->how = MEMOBS__WH_FD;
        if (fcntl(fdno, F_GETFD) < 0) return EBADF;
        w->fd = fdno;
        return 0;
    }
    if (kind == MEMOBS__WH_INPLACE) {
        w->fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | MEMOBS__O_CLOEXEC |
                               (follow ? 0 : MEMOBS__O_NOFOLLOW));
        return w->fd < 0 ? errno : 0;
    }
    w->how = MEMOBS__WH_NAMED; /* until an O_TMPFILE file is open */
    if (!memobs__dir_of(w->final, dir)) return ENAMETOOLONG;
#ifdef MEMOBS__O_TMPFILE
    if (!named && !MEMOBS__LOAD(&memobs__g.no_tmpfile.v)) {
        w->fd = open(dir, MEMOBS__O_TMPFILE | O_WRONLY | MEMOBS__O_CLOEXEC, 0666);
        if (w->fd >= 0) {
            w->how = MEMOBS__WH_TMPFILE;
            memobs__whole_keep(w);
            return 0;
        }
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return errno;
    }
#else
    (void)named;
#endif
    w->how = MEMOBS__WH_NAMED;
    for (i = 0; i < 4; i++) { /* a name planted where ours would be: the next number */
        memobs__whole_tmpname(w);
        w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | MEMOBS__O_NOFOLLOW | MEMOBS__O_CLOEXEC, 0666);
        if (w->fd >= 0 || errno != EEXIST) break;
    }
    if (w->fd < 0) {
        w->tmp[0] = 0;
        return errno;
    }
    memobs__whole_keep(w);
    return 0;
}

/* The temporary, complete and flushed (a named one closed), becomes the
   final path (a link there replaced as a link); 0 or an errno (the
   temporary is then gone, the old file left as it was). */
static int memobs__whole_commit(memobs__whole_t *w) {
    int e;
    if (w->how == MEMOBS__WH_INPLACE || w->how == MEMOBS__WH_FD) return 0;
#ifdef MEMOBS__OUT_LINUX
    if (w->how == MEMOBS__WH_TMPFILE) {
        char proc[40] = "/proc/self/fd/";
        proc[14 + memobs__utoa(proc + 14, (uint64_t)w->fd)] = 0;
        if (!w->existed && memobs__linkat(MEMOBS__AT_FDCWD, proc, MEMOBS__AT_FDCWD, w->final,
                                          MEMOBS__AT_SYMLINK_FOLLOW) == 0)
            return 0;
        memobs__whole_tmpname(w);
        if (memobs__linkat(MEMOBS__AT_FDCWD, proc, MEMOBS__AT_FDCWD, w->tmp, MEMOBS__AT_SYMLINK_FOLLOW) != 0 &&
            memobs__linkat(w->fd, "", MEMOBS__AT_FDCWD, w->tmp, MEMOBS__AT_EMPTY_PATH) != 0) {
            e = errno;
            w->tmp[0] = 0;
            w->unlinkable = 1;
            return e;
        }
    }
#endif
    if (rename(w->tmp, w->final) != 0) {
        e = errno;
        (void)unlink(w->tmp);
        w->tmp[0] = 0;
        return e;
    }
    w->tmp[0] = 0;
    return 0;
}

/* A temporary that will not be committed: its name goes (the caller
   closes the file). */
static void memobs__whole_abort(memobs__whole_t *w) {
    if (w->tmp[0]) (void)unlink(w->tmp);
    w->tmp[0] = 0;
}

/* buf[0..len) to fd written in place (a FIFO, pipe, terminal, device or
   one of the process's descriptors), poll()ed before each write: gives up
   (ETIMEDOUT) when it takes nothing for idle_ms, EPIPE with no reader (no
   SIGPIPE: poll says so first). 0 or an errno. Async-signal-safe. */
static int memobs__write_bounded(int fd, const char *buf, size_t len, int idle_ms) {
    size_t o = 0;
    while (o < len) {
        struct pollfd pf;
        size_t c = len - o < 4096 ? len - o : 4096; /* a pipe with room takes it whole */
        ssize_t k;
        int r;
        pf.fd = fd;
        pf.events = POLLOUT;
        pf.revents = 0;
        r = poll(&pf, 1, idle_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return ETIMEDOUT;
        if (pf.revents & (POLLERR | POLLHUP)) return EPIPE;
        if (pf.revents & POLLNVAL) return EBADF;
        k = write(fd, buf + o, c);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return k < 0 ? errno : EIO;
        o += (size_t)k;
    }
    return 0;
}

/* An in-place destination (memobs__whole_open gave MEMOBS__WH_INPLACE or
   MEMOBS__WH_FD): the text is built in memory, then written with
   memobs__write_bounded (a reader that stops reading costs this output
   only); the program's own buffered lines go first. rc; *err an errno. */
static int memobs__write_inplace(memobs__whole_t *w, int (*write)(FILE *, int), int arg, int *err) {
    FILE *f;
    int rc;
    *err = 0;
#ifdef MEMOBS__OUT_LINUX
    {
        char *buf = NULL;
        size_t len = 0;
        if ((f = memobs__open_memstream(&buf, &len)) == NULL) return MEMOBS_ERR_NOMEM;
        rc = write(f, arg);
        if (fclose(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_NOMEM;
        if (rc == MEMOBS_OK) {
            if (w->fd == 1) fflush(stdout);
            if (w->fd == 2) fflush(stderr);
            if ((*err = memobs__write_bounded(w->fd, buf, len, MEMOBS__INPLACE_IDLE_MS)) != 0) rc = MEMOBS_ERR_IO;
        }
        free(buf); /* open_memstream's, from malloc */
    }
#else
    if ((f = memobs__fdopen(w->how == MEMOBS__WH_FD ? dup(w->fd) : w->fd, "a")) == NULL) return MEMOBS_ERR_NOMEM;
    errno = 0;
    rc = write(f, arg);
    if (fflush(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_IO;
    *err = rc == MEMOBS_ERR_IO ? errno : 0;
    fclose(f);
    w->fd = -1;
#endif
    if (w->how == MEMOBS__WH_INPLACE && w->fd >= 0) close(w->fd);
    return rc;
}

/* THE writer of every output that is not appended to: write(f, arg)
   into path (expanded and claimed already) whole, or to stream fd (1, 2)
   when fd >= 0. SIGPIPE never escapes it (memobs__pipe_t). A binary
   output refuses a terminal. One warning on failure (none with
   MEMOBS__WW_QUIET), naming what; the previous file is left as it was. */
static int memobs__write_whole_do(const char *path, int fd, const char *what, int (*write)(FILE *, int), int arg,
                                  unsigned flags);
static int memobs__write_whole(const char *path, int fd, const char *what, int (*write)(FILE *, int), int arg,
                               unsigned flags) {
    int rc = memobs__write_whole_do(path, fd, what, write, arg, flags);
    if (rc != MEMOBS_OK) MEMOBS__ADD(&memobs__g.write_fails.v, 1u); /* memobs_flush's result */
    return rc;
}
static int memobs__write_whole_do(const char *path, int fd, const char *what, int (*write)(FILE *, int), int arg,
                                  unsigned flags) {
    memobs__pipe_t pg;
    memobs__whole_t w;
    FILE *f;
    int rc = MEMOBS_OK, e = 0, tries;
    const char *step = "";
    memobs__pipe_block(&pg);
    if (fd >= 0) {
        if ((flags & MEMOBS__WW_BINARY) && isatty(fd)) {
            if (!(MEMOBS__FETCH_OR(&memobs__g.out_said.v, MEMOBS__OS_TTY) & MEMOBS__OS_TTY))
                memobs__log(MEMOBS_LOG_WARN, "the %s is binary: not written to %s, a terminal (give a path)", what,
                            fd == 1 ? "stdout" : "stderr");
            rc = MEMOBS_ERR_INVALID;
        } else {
            errno = 0;
            rc = write(fd == 1 ? stdout : stderr, arg);
            e = errno;
            if (rc != MEMOBS_OK && !(flags & MEMOBS__WW_QUIET))
                memobs__log(MEMOBS_LOG_WARN, "writing the %s to %s failed: %s", what, fd == 1 ? "stdout" : "stderr",
                            rc == MEMOBS_ERR_IO && e ? strerror(e) : memobs_strerror(rc));
        }
        memobs__pipe_unblock(&pg);
        return rc;
    }
    for (tries = 0; tries < 2; tries++) {
        int named = tries > 0 || MEMOBS__LOAD(&memobs__g.no_tmpfile.v) != 0;
        if (named) memobs__sweep(path);
        if ((e = memobs__whole_open(&w, path, named)) != 0) {
            rc = MEMOBS_ERR_IO;
            step = e == ENXIO && w.how == MEMOBS__WH_INPLACE ? "no reader (a FIFO or socket): skipped: "
                   : w.how == MEMOBS__WH_INPLACE || w.how == MEMOBS__WH_FD ? "cannot open it: "
                                                                          : "cannot create a temporary file in its folder: ";
            break;
        }
        if ((w.how == MEMOBS__WH_INPLACE || w.how == MEMOBS__WH_FD) && (flags & MEMOBS__WW_BINARY) && isatty(w.fd)) {
            if (w.how == MEMOBS__WH_INPLACE) close(w.fd);
            if (!(MEMOBS__FETCH_OR(&memobs__g.out_said.v, MEMOBS__OS_TTY) & MEMOBS__OS_TTY))
                memobs__log(MEMOBS_LOG_WARN, "the %s is binary: not written to '%s', a terminal", what, path);
            memobs__pipe_unblock(&pg);
            return MEMOBS_ERR_INVALID;
        }
        if (w.how == MEMOBS__WH_INPLACE || w.how == MEMOBS__WH_FD) {
            rc = memobs__write_inplace(&w, write, arg, &e);
            if (rc == MEMOBS_ERR_IO && e == ETIMEDOUT) step = "it took nothing for 5 s: ";
            break;
        }
        if ((f = memobs__fdopen(w.fd, "w")) == NULL) {
            e = errno;
            close(w.fd);
            memobs__whole_abort(&w);
            rc = MEMOBS_ERR_NOMEM;
            break;
        }
        errno = 0;
        rc = write(f, arg);
        if (rc == MEMOBS_OK && (fflush(f) != 0 || ferror(f))) rc = MEMOBS_ERR_IO;
        e = rc == MEMOBS_ERR_IO ? errno : 0;
#ifdef MEMOBS__OUT_LINUX
        /* on the disk before the rename: a node crash leaves the old file or the new one, never an empty one */
        if (rc == MEMOBS_OK && memobs__fdatasync(w.fd) != 0 && errno != EINVAL) rc = MEMOBS_ERR_IO, e = errno;
#endif
        if (w.how != MEMOBS__WH_TMPFILE) { /* closed before the rename: NFS reports some errors at close */
            if (fclose(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_IO, e = errno;
            f = NULL;
        }
        if (rc != MEMOBS_OK) {
            memobs__whole_abort(&w);
        } else if ((e = memobs__whole_commit(&w)) != 0) {
            rc = MEMOBS_ERR_IO;
            step = "cannot rename the temporary over it: ";
        }
        if (f) fclose(f);
        if (w.unlinkable && !tries) { /* named temporaries from now on; this one written again */
            MEMOBS__STORE(&memobs__g.no_tmpfile.v, 1u);
            step = "";
            continue;
        }
        break;
    }
    if (rc != MEMOBS_OK && !(flags & MEMOBS__WW_QUIET)) {
        struct stat st;
        memobs__log(MEMOBS_LOG_WARN, "cannot write the %s to '%s': %s%s%s", what, path, step,
                    rc == MEMOBS_ERR_IO && e ? strerror(e) : memobs_strerror(rc),
                    stat(path, &st) == 0 && S_ISREG(st.st_mode) ? "; the previous file is left as it was" : "");
    }
    memobs__pipe_unblock(&pg);
    return rc;
}

/* write(2) of all of buf, EINTR retried; 0 or an errno. Async-signal-safe. */
static int memobs__write_all(int fd, const char *buf, size_t len) {
    size_t o = 0;
    while (o < len) {
        ssize_t k = write(fd, buf + o, len - o);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? errno : EIO;
        o += (size_t)k;
    }
    return 0;
}

/* memobs__write_whole for bytes formatted already, async-signal-safe (no
   lock, no malloc, no stdio): for the crash writer, with an output's
   memobs__g.out[i].path or .stream once memobs__dest_ours says it is this
   process's. fd >= 0: that stream; else path, whole. 0 or an errno; says
   nothing. */
static __attribute__((unused)) int memobs__write_whole_raw(const char *path, int fd, const char *buf, size_t len) {
    memobs__pipe_t pg;
    memobs__whole_t w;
    int e, tries;
    memobs__pipe_block(&pg);
    if (fd >= 0) {
        e = memobs__write_all(fd, buf, len);
        memobs__pipe_unblock(&pg);
        return e;
    }
    for (tries = 0; tries < 2; tries++) {
        if ((e = memobs__whole_open(&w, path, tries > 0)) != 0) break;
        if (w.how == MEMOBS__WH_INPLACE || w.how == MEMOBS__WH_FD) {
            e = memobs__write_bounded(w.fd, buf, len, MEMOBS__INPLACE_IDLE_MS);
            if (w.how == MEMOBS__WH_INPLACE) close(w.fd);
            break;
        }
        e = memobs__write_all(w.fd, buf, len);
        if (w.how != MEMOBS__WH_TMPFILE && close(w.fd) != 0 && !e) e = errno;
        if (e) memobs__whole_abort(&w);
        else e = memobs__whole_commit(&w);
        if (w.how == MEMOBS__WH_TMPFILE) close(w.fd);
        if (!w.unlinkable) break;
    }
    memobs__pipe_unblock(&pg);
    return e;
}

/* A row with a store (MEMOBS__OUTPUT_TABLE): write's bytes, made in
   memory, handed to it with the resolved path. */
static int memobs__dest_store(unsigned which, const char *path, int (*write)(FILE *, int), int arg, unsigned flags) {
    const memobs__output_row_t *r = &memobs__out_info[which];
#ifdef MEMOBS__OUT_LINUX
    char *buf = NULL;
    size_t len = 0;
    FILE *f = memobs__open_memstream(&buf, &len);
    int rc;
    if (!f) {
        rc = MEMOBS_ERR_NOMEM;
    } else {
        rc = write(f, arg);
        if (fclose(f) != 0 && rc == MEMOBS_OK) rc = MEMOBS_ERR_NOMEM;
        if (rc == MEMOBS_OK) rc = r->store(path, buf, len, flags);
        else if (!(flags & MEMOBS__WW_QUIET))
            memobs__log(MEMOBS_LOG_WARN, "cannot write the %s: %s", r->what, memobs_strerror(rc));
    }
    free(buf); /* open_memstream's, from malloc */
    if (!f && !(flags & MEMOBS__WW_QUIET)) memobs__log(MEMOBS_LOG_WARN, "no memory for the %s", r->what);
    if (rc != MEMOBS_OK) MEMOBS__ADD(&memobs__g.write_fails.v, 1u); /* memobs_flush's result */
    return rc;
#else
    (void)path, (void)write, (void)arg;
    if (!(flags & MEMOBS__WW_QUIET)) memobs__log(MEMOBS_LOG_WARN, "the %s are written on Linux only", r->what);
    return MEMOBS_ERR_INVALID;
#endif
}

/* An exit output, by the fork rule (memobs__dest_ours): MEMOBS_OK
   without writing when it is not this process's. */
static int memobs__dest_write(unsigned which, int (*write)(FILE *, int), int arg, unsigned flags) {
    memobs__dest_t *g = &memobs__g.out[which], d;
    char full[MEMOBS__PATH_LEN];
    int tell = 0, sweep;
    if (!memobs__dest_ours(g)) return MEMOBS_OK;
    pthread_mutex_lock(&memobs__g.lock);
    if (!g->stream && g->path_pid != (int64_t)getpid()) memobs__dest_resolve(which, 1); /* forked, %p */
    memobs__dest_claim(which, 1);                                                         /* MEMOBS__CLAIM_LATE */
    if (!g->renamed_said && !(flags & MEMOBS__WW_QUIET)) { /* renamed in a fork() child or for a new rank */
        tell = memobs__expand_as(g->spec, full, sizeof full, (int)memobs__g.identity.rank, g->path_pid);
        g->renamed_said = 1;
    }
    sweep = !g->stream && g->has_pid && memobs__g.swept[which] != (int64_t)getpid(); /* once a process */
    if (sweep) memobs__g.swept[which] = (int64_t)getpid();
    d = *g;
    pthread_mutex_unlock(&memobs__g.lock);
    if (sweep && d.path[0]) memobs__sweep_as(d.path, d.spec); /* other pids' files: dead runs' temporaries */
    if (tell) /* outside the lock: the log hook may call memobs */
        memobs__log(MEMOBS_LOG_INFO, "%s: another memobs instance in this process writes '%s'; this one writes '%s'",
                    memobs__out_info[which].var, full, d.path);
    if (!d.stream && !d.path[0]) {
        if (!(flags & MEMOBS__WW_QUIET))
            memobs__log(MEMOBS_LOG_WARN, "%s='%s' is longer than %u bytes once expanded; no %s written",
                        memobs__out_info[which].var, d.spec, (unsigned)sizeof d.path - 1, memobs__out_info[which].what);
        return MEMOBS_ERR_INVALID;
    }
    if (memobs__out_info[which].store) return memobs__dest_store(which, d.path, write, arg, flags);
    if (memobs__out_info[which].binary) flags |= MEMOBS__WW_BINARY;
    return memobs__write_whole(d.path, d.stream ? (int)d.stream : -1, memobs__out_info[which].what, write, arg, flags);
}

/* ======================================================================== */
/* Private: appended reports (peak, out of memory)                 >>append */
/* ======================================================================== */

/* A report is built in memory and appended with one write(2) (O_APPEND),
   so reports from several threads, processes or memobs instances never
   interleave nor overwrite each other; the file is shared, not claimed,
   and a forked child appends its own. */
typedef struct {
    FILE *f;
    char *buf;
    size_t len;
    int fd, own;
} memobs__append_t;

static FILE *memobs__append_open(memobs__append_t *a, const char *dest, const char *full, const char *what);

/* dest: "stderr", "stdout" or a path (%r, %p, %% expanded). NULL, with a
   warning naming what, when it cannot be opened. */
static FILE *memobs__append_begin(memobs__append_t *a, const char *dest, const char *what) {
    char full[MEMOBS__PATH_LEN];
    if (strcmp(dest, "stderr") != 0 && strcmp(dest, "stdout") != 0 &&
        !memobs__expand_path(dest, full, sizeof full)) {
        memset(a, 0, sizeof *a);
        memobs__log(MEMOBS_LOG_WARN, "%s path '%s' is too long once expanded", what, dest);
        return NULL;
    }
    return memobs__append_open(a, dest, full, what);
}

/* memobs__append_begin's, dest's path expanded already as full (unread
   for "stderr" and "stdout"): takes no lock of memobs'. */
static FILE *memobs__append_open(memobs__append_t *a, const char *dest, const char *full, const char *what) {
    memset(a, 0, sizeof *a);
    if (strcmp(dest, "stderr") == 0) a->fd = 2;
    else if (strcmp(dest, "stdout") == 0) a->fd = 1;
    else if ((a->fd = memobs__fd_name(full)) >= 0) { /* one of the process's descriptors: as stderr */
        if (fcntl(a->fd, F_GETFD) < 0) {
            memobs__log(MEMOBS_LOG_WARN, "cannot write the %s to '%s': %s", what, full, strerror(errno));
            return NULL;
        }
    } else {
        int nofollow = 0;
#ifdef MEMOBS__OUT_LINUX
        struct stat st;
        nofollow = memobs__lstat(full, &st) == 0 && MEMOBS__S_ISLNK(st.st_mode) && memobs__link_protected(full, &st);
#endif
        /* O_NONBLOCK: a FIFO with no reader refuses (ENXIO) instead of hanging */
        a->fd = open(full, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY | O_NONBLOCK | MEMOBS__O_CLOEXEC |
                               (nofollow ? MEMOBS__O_NOFOLLOW : 0), 0666);
        if (a->fd < 0) {
            int e = errno;
            memobs__log(MEMOBS_LOG_WARN, "cannot open '%s' for the %s: %s%s", full, what,
                        nofollow ? "another user's link in a sticky world-writable folder, not followed: "
                        : e == ENXIO ? "no reader (a FIFO or socket), skipped: " : "",
                        strerror(e));
            return NULL;
        }
        a->own = 1;
    }
#ifdef MEMOBS__OUT_LINUX
    a->f = memobs__open_memstream(&a->buf, &a->len);
#else
    a->f = a->own ? fdopen(a->fd, "a") : a->fd == 1 ? stdout : stderr;
#endif
    if (!a->f) {
        memobs__log(MEMOBS_LOG_WARN, "no memory for the %s", what);
        if (a->own) close(a->fd);
    }
    return a->f;
}

/* Appends the report; 0 or an errno. */
static int memobs__append_end(memobs__append_t *a) {
    memobs__pipe_t pg;
    int e = 0;
    memobs__pipe_block(&pg);
#ifdef MEMOBS__OUT_LINUX
    if (fclose(a->f) != 0) e = errno;
    if (!e && a->fd == 1) fflush(stdout); /* the program's own lines first */
    if (!e && a->fd == 2) fflush(stderr);
    if (!e) { /* a file: one write(2), never interleaved; a pipe, FIFO or terminal: bounded */
        struct stat st;
        if (fstat(a->fd, &st) == 0 && S_ISREG(st.st_mode)) e = memobs__write_all(a->fd, a->buf, a->len);
        else e = memobs__write_bounded(a->fd, a->buf, a->len, MEMOBS__INPLACE_IDLE_MS);
    }
    free(a->buf); /* open_memstream's, from malloc */
    if (a->own) close(a->fd);
#else
    if (fflush(a->f) != 0) e = errno;
    if (a->own) fclose(a->f);
#endif
    memobs__pipe_unblock(&pg);
    return e;
}

/* ======================================================================== */
/* Private: request lines (MEMOBS_REQUESTS)                 >>request-lines */
/* ======================================================================== */

/* One JSON line a finished request (docs/requests.md), appended with one
   write(2) as the reports are: lines from threads, processes and memobs
   instances never interleave. The file is bounded: a regular file of the
   process's user at or past MEMOBS_REQUESTS_MAX_BYTES is renamed to
   PATH.1 (replacing it) before the next line, so at most twice the limit
   plus a line is kept; a file that cannot be renamed (another user's, a
   link, a device) gets no more lines once past it (counted, one warning). */

/* Request i's line into the sink (at most 2.6 KB: every figure at
   UINT64_MAX, a tenant name of 63 escaped quotes). */
static void memobs__att_format(memobs__out_t *o, const memobs_request_info_t *i) {
    static const char *const ph[MEMOBS__NPHASE] = {"unphased", "prefill", "decode"};
    uint64_t mono = memobs_now_ns(), real = memobs__realtime_ns();
    unsigned p, k;
    memobs__out_printf(o, "{\"id\":%llu,\"tenant\":", (unsigned long long)i->id);
    if (i->tenant[0]) memobs__out_json_str(o, i->tenant);
    else memobs__out_str(o, "null");
    memobs__out_printf(o, ",\"state\":\"%s\",\"abandoned\":%s,\"pid\":%lld,\"rank\":%d",
                       memobs__att_state_name[i->state], i->state == MEMOBS_REQUEST_ABANDONED ? "true" : "false",
                       (long long)__atomic_load_n(&memobs__g.identity.pid, __ATOMIC_RELAXED),
                       (int)__atomic_load_n(&memobs__g.identity.rank, __ATOMIC_RELAXED));
    memobs__out_printf(o, ",\"begin_unix_ns\":%llu,\"end_unix_ns\":%llu",
                       (unsigned long long)(real - (mono - i->begin_ns)),
                       (unsigned long long)(real - (mono - i->end_ns)));
    memobs__out_printf(o, ",\"tokens\":%llu,\"ttft_ns\":%llu,\"tpot_ns\":%llu,\"e2e_ns\":%llu,\"wait_ns\":%llu,"
                       "\"region_ns\":%llu,\"peak_bytes\":%llu,\"held_bytes\":%llu,\"xfer\":{",
                       (unsigned long long)i->tokens, (unsigned long long)i->ttft_ns, (unsigned long long)i->tpot_ns,
                       (unsigned long long)i->e2e_ns, (unsigned long long)i->wait_ns,
                       (unsigned long long)i->region_ns, (unsigned long long)i->peak_bytes,
                       (unsigned long long)i->current_bytes);
    for (k = 0; k < MEMOBS__NDIR; k++) {
        uint64_t b = 0, n = 0;
        for (p = 0; p < MEMOBS__NPHASE; p++) {
            b = memobs__sat(b, memobs_dirs_get(&i->xfer[p], k)->bytes);
            n += memobs_dirs_get(&i->xfer[p], k)->count;
        }
        memobs__out_printf(o, "%s\"%s\":{\"bytes\":%llu,\"ops\":%llu", k ? "," : "", memobs__dir_key[k],
                           (unsigned long long)b, (unsigned long long)n);
        for (p = 0; p < MEMOBS__NPHASE; p++)
            memobs__out_printf(o, ",\"%s\":[%llu,%llu]", ph[p],
                               (unsigned long long)memobs_dirs_get(&i->xfer[p], k)->bytes,
                               (unsigned long long)memobs_dirs_get(&i->xfer[p], k)->count);
        memobs__out_printf(o, ",\"engine_ns\":%llu,\"device_ns\":%llu}", (unsigned long long)i->engine_ns[k],
                           (unsigned long long)i->device_ns[k]);
    }
    memobs__out_str(o, "}}\n");
}

/* att.lines_lock held: before a line to path full, a file past the limit
   is rotated; 0 when the line may be written. */
static int memobs__att_rotate(const char *full) {
#ifdef MEMOBS__OUT_LINUX
    struct stat st;
    char old[MEMOBS__PATH_LEN + 2];
    if (!memobs__att.lines_max || stat(full, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < memobs__att.lines_max)
        return 0;
    if (memobs__lstat(full, &st) == 0 && S_ISREG(st.st_mode) && (unsigned)st.st_uid == memobs__geteuid() &&
        (size_t)snprintf(old, sizeof old, "%s.1", full) < sizeof old && rename(full, old) == 0) {
        MEMOBS__ADD(&memobs__att.rotations.v, 1u);
        return 0;
    }
    memobs__warn_once(MEMOBS__W_ATT_LINES, "request lines: '%s' reached MEMOBS_REQUESTS_MAX_BYTES (%llu) and cannot "
                      "be renamed to '%s.1' (%s); no more lines (counted)", full,
                      (unsigned long long)memobs__att.lines_max, full, errno ? strerror(errno) :
                      "not a regular file of this user");
    return -1;
#else
    (void)full;
    return 0;
#endif
}

/* att.lines_lock held (and maybe a request stripe's): request i's line,
   appended; takes no lock of memobs'. */
static void memobs__att_line(const memobs_request_info_t *i) {
    char line[4096], full[MEMOBS__PATH_LEN];
    memobs__out_t o;
    memobs__append_t a;
    const char *dest = memobs__att.lines;
    int e;
    int stream = strcmp(dest, "stderr") == 0 || strcmp(dest, "stdout") == 0;
    memobs__out_string(&o, line, sizeof line);
    memobs__att_format(&o, i);
    memobs__out_end(&o);
    /* the identity read as the line's: no lock (memobs_get_identity takes one) */
    full[0] = 0;
    if (!stream && !memobs__expand_as(dest, full, sizeof full,
                                      (int)__atomic_load_n(&memobs__g.identity.rank, __ATOMIC_RELAXED),
                                      (int64_t)getpid())) {
        MEMOBS__ADD(&memobs__att.lines_failed.v, 1u);
        memobs__warn_once(MEMOBS__W_ATT_LINES, "request lines: MEMOBS_REQUESTS='%s' is too long once expanded", dest);
        return;
    }
    if (!stream && memobs__fd_name(full) < 0) {
        errno = 0;
        if (memobs__att_rotate(full) != 0) {
            MEMOBS__ADD(&memobs__att.lines_failed.v, 1u);
            return;
        }
    }
    if (!memobs__append_open(&a, dest, full, "request lines")) {
        MEMOBS__ADD(&memobs__att.lines_failed.v, 1u);
        return;
    }
    fputs(line, a.f);
    if ((e = memobs__append_end(&a)) != 0) {
        MEMOBS__ADD(&memobs__att.lines_failed.v, 1u);
        memobs__warn_once(MEMOBS__W_ATT_LINES, "request lines: cannot write to '%s': %s (counted)", dest, strerror(e));
        return;
    }
    MEMOBS__ADD(&memobs__att.lines_written.v, 1u);
}

/* ======================================================================== */
/* Private: Prometheus                                         >>prometheus */
/* ======================================================================== */

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
   forms, no surrogates, nothing above U+10FFFF), 0 if there is none. */
static size_t memobs__utf8_len(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* A histogram bound: nanoseconds, and the le label as Prometheus' Python
   client (vLLM's) writes it, so that series from both join on le. */
typedef struct {
    uint64_t ns;
    const char *le;
} memobs__prom_bound_t;

#define MEMOBS__PROM_TTFT_N 22
#define MEMOBS__PROM_ITL_N 19
#define MEMOBS__PROM_MAX_BOUNDS 22
/* vLLM's time-to-first-token buckets. */
static const memobs__prom_bound_t memobs__prom_ttft_le[MEMOBS__PROM_TTFT_N] = {
    {1000000u, "0.001"}, {5000000u, "0.005"}, {10000000u, "0.01"}, {20000000u, "0.02"},
    {40000000u, "0.04"}, {60000000u, "0.06"}, {80000000u, "0.08"}, {100000000u, "0.1"},
    {250000000u, "0.25"}, {500000000u, "0.5"}, {750000000u, "0.75"}, {1000000000u, "1.0"},
    {2500000000u, "2.5"}, {5000000000u, "5.0"}, {7500000000u, "7.5"}, {10000000000u, "10.0"},
    {20000000000u, "20.0"}, {40000000000u, "40.0"}, {80000000000u, "80.0"}, {160000000000u, "160.0"},
    {640000000000u, "640.0"}, {2560000000000u, "2560.0"}};
/* vLLM's inter-token-latency buckets. */
static const memobs__prom_bound_t memobs__prom_itl_le[MEMOBS__PROM_ITL_N] = {
    {10000000u, "0.01"}, {25000000u, "0.025"}, {50000000u, "0.05"}, {75000000u, "0.075"},
    {100000000u, "0.1"}, {150000000u, "0.15"}, {200000000u, "0.2"}, {300000000u, "0.3"},
    {400000000u, "0.4"}, {500000000u, "0.5"}, {750000000u, "0.75"}, {1000000000u, "1.0"},
    {2500000000u, "2.5"}, {5000000000u, "5.0"}, {7500000000u, "7.5"}, {10000000000u, "10.0"},
    {20000000000u, "20.0"}, {40000000000u, "40.0"}, {80000000000u, "80.0"}};

typedef struct {
    uint64_t cum[MEMOBS__PROM_MAX_BOUNDS]; /* samples at or below each bound */
    uint64_t sum_ns, count;
} memobs__prom_hist_t;

/* Caller holds memobs__g.lock (reset moves the baselines under it). The
   window's samples at or below each of n increasing bounds, from one read
   of each bucket: count is the sum of the buckets read, so it equals the
   +Inf bucket exactly. A bucket is at or below a bound when its midpoint
   (the value the percentiles report) is: a sample within half a bucket
   width (<= 0.79%) of a bound may land on either side; below 64 ns the
   buckets are exact. The sum is read first: a sample being recorded now
   (bucket, then sum, then count) may be in a bucket and not yet in it. */
static void memobs__hist_cumulative(memobs__hist_t *h, const memobs__prom_bound_t *bound, unsigned n,
                                    memobs__prom_hist_t *out) {
    uint64_t seen = 0;
    unsigned i = 0, k;
    out->sum_ns = memobs__win(MEMOBS__LOAD(&h->sum.v), h->base_sum);
    for (k = 0; k <= n; k++) {
        /* buckets [i, end) go below bound k: end is the first whose midpoint is above it */
        unsigned end = MEMOBS__HIST_NB;
        if (k < n) {
            end = memobs__hist_index(bound[k].ns);
            if (memobs__hist_value(end) <= bound[k].ns) end++;
        }
        for (; i < end; i++) seen += MEMOBS__LOAD(&h->b[i].v) - h->base_b[i];
        if (k < n) out->cum[k] = seen;
    }
    out->count = seen;
}

/* One snapshot: a few KB, kept off small thread stacks. */
typedef struct {
    memobs__figs_t f;
    memobs__prom_hist_t ttft, tpot, e2e;
    char id[1024]; /* the identity labels, escaped: job_id="...",rank="0",... */
    /* the host sampler's newest sample and the leak detector's fit (nsmp
       0: none taken, or the crash writer, which leaves host memory out) */
    size_t nsmp;
    memobs_sample_t smp;
    memobs_leak_t leak;
} memobs__prom_snap_t;

static void memobs__prom_family(memobs__out_t *o, const char *name, const char *type, const char *help) {
    memobs__out_printf(o, "# HELP %s ", name);
    memobs__out_escaped(o, help, 0);
    memobs__out_printf(o, "\n# TYPE %s %s\n", name, type);
}

/* name{identity[,labels]} and a space: labels (may be "") are already escaped. */
static void memobs__prom_head(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name, const char *labels) {
    memobs__out_str(o, name);
    memobs__out_write(o, "{", 1);
    memobs__out_str(o, p->id);
    if (labels[0]) memobs__out_write(o, ",", 1);
    memobs__out_str(o, labels);
    memobs__out_write(o, "} ", 2);
}

static void memobs__prom_u64(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name, const char *labels,
                             uint64_t v) {
    memobs__prom_head(o, p, name, labels);
    memobs__out_printf(o, "%llu\n", (unsigned long long)v);
}

/* Seconds, exactly: ns as a decimal fraction without trailing zeros. */
static void memobs__prom_secs(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name, const char *labels,
                              uint64_t ns) {
    char frac[16];
    int k;
    memobs__prom_head(o, p, name, labels);
    memobs__out_sprintf(frac, sizeof frac, ".%09u", (unsigned)(ns % 1000000000u));
    for (k = 9; k > 0 && frac[k] == '0'; k--) frac[k] = 0;
    if (k == 0) frac[0] = 0;
    memobs__out_printf(o, "%llu%s\n", (unsigned long long)(ns / 1000000000u), frac);
}

static void memobs__prom_histogram(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name,
                                   const char *help, const memobs__prom_hist_t *h, const memobs__prom_bound_t *bound,
                                   unsigned n) {
    char full[64], le[32];
    unsigned k;
    memobs__prom_family(o, name, "histogram", help);
    memobs__out_sprintf(full, sizeof full, "%s_bucket", name);
    for (k = 0; k < n; k++)
        memobs__prom_u64(o, p, full, memobs__out_sprintf(le, sizeof le, "le=\"%s\"", bound[k].le), h->cum[k]);
    memobs__prom_u64(o, p, full, "le=\"+Inf\"", h->count);
    memobs__prom_secs(o, p, memobs__out_sprintf(full, sizeof full, "%s_sum", name), "", h->sum_ns);
    memobs__prom_u64(o, p, memobs__out_sprintf(full, sizeof full, "%s_count", name), "", h->count);
}

static const char *const memobs__prom_phase[MEMOBS_PHASES] = {"unphased", "prefill", "decode"};
static const char *const memobs__prom_kind[MEMOBS_MEM_KINDS] = {"device", "host", "pinned", "managed"};

/* One family of nine counters by direction and phase: bytes, ops, or the
   device-timed bytes, copies, seconds (what: 0, 1, 2, 3, 4), or the
   manual bytes, ops (5, 6: memobs_set_manual_apart). */
static void memobs__prom_xfer(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name, const char *help,
                              int what) {
    static const unsigned order[MEMOBS_PHASES] = {MEMOBS_PHASE_PREFILL, MEMOBS_PHASE_DECODE, MEMOBS_PHASE_NONE};
    const memobs_summary_t *s = &p->f.s;
    const memobs_dirs_t *ph[MEMOBS_PHASES];
    unsigned d, f;
    ph[MEMOBS_PHASE_NONE] = what >= 5 ? &s->manual.unphased : &s->unphased;
    ph[MEMOBS_PHASE_PREFILL] = what >= 5 ? &s->manual.prefill : &s->prefill;
    ph[MEMOBS_PHASE_DECODE] = what >= 5 ? &s->manual.decode : &s->decode;
    memobs__prom_family(o, name, "counter", help);
    for (d = 0; d < MEMOBS_DIRS; d++) {
        for (f = 0; f < MEMOBS_PHASES; f++) {
            unsigned q = order[f];
            const memobs_xfer_t *x = memobs_dirs_get(ph[q], d);
            const memobs_timed_t *t = &s->timed[q][d];
            char labels[64];
            memobs__out_sprintf(labels, sizeof labels, "direction=\"%s\",phase=\"%s\"", memobs__dir_key[d],
                                memobs__prom_phase[q]);
            if (what == 4) {
                memobs__prom_secs(o, p, name, labels, t->ns);
            } else if (what >= 7) { /* attributed (7, 8), unattributed (9, 10) */
                const memobs_dirs_t *ap = q == MEMOBS_PHASE_PREFILL ? &s->attributed.prefill
                                          : q == MEMOBS_PHASE_DECODE ? &s->attributed.decode
                                                                     : &s->attributed.unphased;
                const memobs_xfer_t *a = memobs_dirs_get(ap, d);
                uint64_t v = what == 7 ? a->bytes : what == 8 ? a->count
                             : what == 9 ? (x->bytes == UINT64_MAX ? x->bytes : x->bytes > a->bytes ? x->bytes - a->bytes : 0)
                                         : (x->count > a->count ? x->count - a->count : 0);
                memobs__prom_u64(o, p, name, labels, v);
            } else {
                memobs__prom_u64(o, p, name, labels,
                                 what == 0 || what == 5   ? x->bytes
                                 : what == 1 || what == 6 ? x->count
                                 : what == 2              ? t->bytes
                                                          : t->count);
            }
        }
    }
}

/* Attribution, once used: the transfer figures split into attributed to
   requests and not, by direction and phase; the orphans; per tenant (when
   tenants are set) bytes and operations by direction, requests finished. */
static void memobs__prom_att(memobs__out_t *o, const memobs__prom_snap_t *p) {
    uint32_t t, nten = MEMOBS__LOAD(&memobs__att.nten.v);
    unsigned k;
    int f;
    if (!memobs__att_shown(&p->f.s)) return;
    memobs__prom_xfer(o, p, "memobs_attributed_transfer_bytes_total", "Bytes of the transfers recorded for a "
                      "request (memobs_request_enter/_leave, memobs_request_xfer), by direction and phase.", 7);
    memobs__prom_xfer(o, p, "memobs_attributed_transfer_ops_total", "Transfers recorded for a request, by "
                      "direction and phase.", 8);
    memobs__prom_xfer(o, p, "memobs_unattributed_transfer_bytes_total", "Bytes of the transfers recorded for no "
                      "request (memobs_transfer_bytes_total minus the attributed ones).", 9);
    memobs__prom_xfer(o, p, "memobs_unattributed_transfer_ops_total", "Transfers recorded for no request.", 10);
    memobs__prom_family(o, "memobs_attribution_orphan_bytes_total", "counter", "Bytes attributed to a request id "
                        "that was not in flight: in the attributed bytes, in no request's ledger.");
    memobs__prom_u64(o, p, "memobs_attribution_orphan_bytes_total", "", p->f.s.attributed.orphan_bytes);
    if (!nten) return;
    for (f = 0; f < 3; f++) {
        static const char *const name[3] = {"memobs_tenant_transfer_bytes_total", "memobs_tenant_transfer_ops_total",
                                            "memobs_tenant_requests_total"};
        static const char *const help[3] = {"Bytes of the transfers recorded for a tenant's requests, by direction.",
                                            "Transfers recorded for a tenant's requests, by direction.",
                                            "A tenant's requests finished (ended, abandoned or dropped)."};
        memobs__prom_family(o, name[f], "counter", help[f]);
        for (t = 0; t <= MEMOBS_MAX_TENANTS; t++) {
            char labels[192];
            memobs__out_t lo;
            if (t == nten && t < MEMOBS_MAX_TENANTS) t = MEMOBS_MAX_TENANTS;
            if (t == MEMOBS_MAX_TENANTS && !memobs__att_tenant_used(t)) break;
            for (k = 0; k < (f == 2 ? 1u : (unsigned)MEMOBS_DIRS); k++) {
                memobs__out_string(&lo, labels, sizeof labels);
                memobs__out_str(&lo, "tenant=\"");
                memobs__out_escaped(&lo, t < MEMOBS_MAX_TENANTS ? memobs__att.ten[t] : "other", 1);
                memobs__out_write(&lo, "\"", 1);
                if (f < 2) memobs__out_printf(&lo, ",direction=\"%s\"", memobs__dir_key[k]);
                memobs__out_end(&lo);
                memobs__prom_u64(o, p, name[f], labels, memobs__att_tenant_fig(t, f, k));
            }
        }
    }
}

/* Transfer sizes by direction: a histogram family whose le are the log2
   bucket bounds, 1 to 2^56, every direction always (histogram_quantile
   reads it; sum by (le) adds ranks up). */
static void memobs__prom_sizes(memobs__out_t *o, const memobs__prom_snap_t *p) {
    static const char *const name = "memobs_transfer_size_bytes";
    unsigned d, b;
    memobs__prom_family(o, name, "histogram", "Sizes of the transfers recorded, by direction (log2 buckets: a "
                        "bucket's le is a power of two; n copies recorded at once at their mean size).");
    for (d = 0; d < MEMOBS_DIRS; d++) {
        const memobs_xfer_sizes_t *z = &p->f.s.sizes[d];
        char labels[64];
        uint64_t cum = 0;
        for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++) {
            cum += z->buckets[b];
            memobs__prom_u64(o, p, "memobs_transfer_size_bytes_bucket",
                             memobs__out_sprintf(labels, sizeof labels, "direction=\"%s\",le=\"%llu\"",
                                                 memobs__dir_key[d], (unsigned long long)((uint64_t)1 << b)), cum);
        }
        memobs__prom_u64(o, p, "memobs_transfer_size_bytes_bucket",
                         memobs__out_sprintf(labels, sizeof labels, "direction=\"%s\",le=\"+Inf\"",
                                             memobs__dir_key[d]), z->count);
        memobs__out_sprintf(labels, sizeof labels, "direction=\"%s\"", memobs__dir_key[d]);
        memobs__prom_u64(o, p, "memobs_transfer_size_bytes_sum", labels, z->bytes);
        memobs__prom_u64(o, p, "memobs_transfer_size_bytes_count", labels, z->count);
    }
}

/* A gauge of bytes, or none for MEMOBS_UNKNOWN. */
static void memobs__prom_known(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name, const char *labels,
                               uint64_t v) {
    if (v != MEMOBS_UNKNOWN) memobs__prom_u64(o, p, name, labels, v);
}

/* The host sampler's newest sample and the leak detector's slopes (only
   once a sample was taken; never at a crash). */
static void memobs__prom_host(memobs__out_t *o, const memobs__prom_snap_t *p) {
    static const char *const fam[6][2] = {
        {"memobs_host_rss_bytes", "Resident set size at the newest sample (MEMOBS_SAMPLE_MS)."},
        {"memobs_host_anon_bytes", "Anonymous memory at the newest sample."},
        {"memobs_host_heap_bytes", "malloc heap in use at the newest sample."},
        {"memobs_device_used_bytes", "Device memory in use as the driver reports it (cuMemGetInfo), newest sample."},
        {"memobs_device_total_bytes", "Device memory in all, as the driver reports it, newest sample."},
        {"memobs_device_tracked_bytes", "Device memory the tracker holds live on the device, newest sample (the "
                                        "driver's used minus this: memory memobs was not told of)."}};
    const memobs_sample_t *m = &p->smp;
    const memobs_leak_t *l = &p->leak;
    char labels[32];
    unsigned i, k;
    if (!p->nsmp) return;
    for (i = 0; i < (m->ndev ? 6u : 3u); i++) {
        memobs__prom_family(o, fam[i][0], "gauge", fam[i][1]);
        if (i < 3) {
            memobs__prom_known(o, p, fam[i][0], "", i == 0 ? m->rss_bytes : i == 1 ? m->anon_bytes : m->heap_bytes);
            continue;
        }
        for (k = 0; k < m->ndev && k < MEMOBS_SAMPLE_DEVICES; k++) {
            const memobs_sample_dev_t *v = &m->dev[k];
            memobs__out_sprintf(labels, sizeof labels, "device=\"%d\"", (int)v->device);
            memobs__prom_known(o, p, fam[i][0], labels, i == 3 ? v->used : i == 4 ? v->total : v->tracked);
        }
    }
    memobs__prom_family(o, "memobs_leak_slope_bytes_per_second", "gauge", "The leak detector's fitted growth over "
                        "its window, by series (tracked: tracked host + pinned bytes); 0 when unknown.");
    {
        static const char *const series[4] = {"rss", "anon", "heap", "tracked"};
        const double mb[4] = {l->rss_mb_min, l->anon_mb_min, l->heap_mb_min, l->tracked_mb_min};
        const int known[4] = {l->rss_known, l->anon_known, l->heap_known, 1};
        for (k = 0; k < 4; k++) {
            memobs__prom_head(o, p, "memobs_leak_slope_bytes_per_second",
                              memobs__out_sprintf(labels, sizeof labels, "series=\"%s\"", series[k]));
            memobs__out_printf(o, "%.9g\n", known[k] ? mb[k] * 1e6 / 60.0 : 0.0);
        }
    }
    memobs__prom_family(o, "memobs_leak_samples", "gauge", "Samples in the leak detector's window (it judges from "
                        "10 on).");
    memobs__prom_u64(o, p, "memobs_leak_samples", "", l->samples);
}

/* Per memory kind: field is the offset of a uint64_t in memobs_mem_stats_t. */
static void memobs__prom_mem(memobs__out_t *o, const memobs__prom_snap_t *p, const char *name, const char *type,
                             const char *help, size_t field) {
    unsigned k;
    memobs__prom_family(o, name, type, help);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        char labels[32];
        uint64_t v;
        memcpy(&v, (const char *)&p->f.s.mem[k] + field, sizeof v);
        memobs__prom_u64(o, p, name, memobs__out_sprintf(labels, sizeof labels, "kind=\"%s\"", memobs__prom_kind[k]),
                         v);
    }
}

/* The collectives' families (when the summary shows them): counters per
   communicator, kind and phase, so that rate(algo_bytes) / rate(seconds)
   is the algorithm bandwidth and rate(bus_bytes) / rate(seconds) the bus
   bandwidth; per peer, direction and phase; where they come from. The
   communicator's rank is comm_rank: rank is the process's (identity). */
static void memobs__prom_coll(memobs__out_t *o, const memobs__prom_snap_t *p) {
    static const char *const fam[6][2] = {
        {"memobs_collective_ops_total", "Collective operations completed, by communicator, kind and phase."},
        {"memobs_collective_bytes_total", "Bytes of those operations (count x datatype size, NCCL's message size)."},
        {"memobs_collective_timed_ops_total", "Of those, operations with a duration (the bandwidths' base)."},
        {"memobs_collective_seconds_total", "Summed duration of the timed operations."},
        {"memobs_collective_algo_bytes_total", "Algorithm bytes S of the timed operations (nccl-tests): algbw = "
                                               "rate of this / rate of seconds."},
        {"memobs_collective_bus_bytes_total", "S x the bus factor of the kind (nccl-tests): busbw = rate of this / "
                                              "rate of seconds; 0 where there is no factor."}};
    static const char *const pfam[3][2] = {
        {"memobs_peer_transfer_bytes_total", "Bytes sent to or received from a peer, by direction and phase."},
        {"memobs_peer_transfer_ops_total", "Transfers to or from a peer."},
        {"memobs_peer_transfer_seconds_total", "Summed duration of the timed transfers to or from a peer."}};
    uint32_t nc, nk, np, c, k, ph, d, i;
    memobs_coll_info_t info;
    memobs__out_t so;
    char labels[512];
    if (!memobs__coll_shown()) return;
    nc = memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS);
    nk = memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS);
    np = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS);
    for (i = 0; i < 6; i++) {
        memobs__prom_family(o, fam[i][0], "counter", fam[i][1]);
        for (c = 0; c < nc; c++) {
            const memobs__comm_def_t *cd = &memobs__coll.comm[c];
            for (k = 0; k < nk; k++) {
                for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                    memobs_coll_stats_t x;
                    if (!memobs__coll_row_read(c, k, ph, &x)) continue;
                    memobs__out_string(&so, labels, sizeof labels); /* 63 + 71 bytes, 2 each escaped: fits */
                    memobs__out_str(&so, "comm=\"");
                    memobs__out_escaped(&so, cd->name, 1);
                    memobs__out_printf(&so, "\",comm_rank=\"%d\",nranks=\"%d\",kind=\"", (int)cd->rank,
                                       (int)cd->nranks);
                    memobs__out_escaped(&so, x.kind_name, 1);
                    memobs__out_printf(&so, "\",phase=\"%s\"", memobs__prom_phase[ph]);
                    memobs__out_end(&so);
                    if (i == 3) memobs__prom_secs(o, p, fam[i][0], labels, x.ns);
                    else memobs__prom_u64(o, p, fam[i][0], labels,
                                          i == 0 ? x.ops : i == 1 ? x.bytes : i == 2 ? x.timed_ops
                                                         : i == 4 ? x.algo_bytes : x.bus_bytes);
                }
            }
        }
    }
    for (i = 0; i < 3; i++) {
        memobs__prom_family(o, pfam[i][0], "counter", pfam[i][1]);
        for (c = 0; c < np; c++) {
            memobs_peer_stats_t y;
            if (!memobs__peer_read(c, &y)) continue;
            for (d = 0; d < MEMOBS_PEER_DIRS; d++) {
                for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                    if (!y.ops[d][ph] && !y.bytes[d][ph]) continue;
                    memobs__out_string(&so, labels, sizeof labels);
                    memobs__out_str(&so, "peer=\"");
                    memobs__out_escaped(&so, y.name, 1);
                    memobs__out_printf(&so, "\",dir=\"%s\",phase=\"%s\"", d ? "recv" : "send",
                                       memobs__prom_phase[ph]);
                    memobs__out_end(&so);
                    if (i == 2) memobs__prom_secs(o, p, pfam[i][0], labels, y.ns[d][ph]);
                    else memobs__prom_u64(o, p, pfam[i][0], labels, i == 0 ? y.bytes[d][ph] : y.ops[d][ph]);
                }
            }
        }
    }
    memobs__coll_info_read(&info);
    memobs__prom_family(o, "memobs_collective_events_dropped_total", "counter", "Events the collectives' backend "
                        "could not hold (their operations counted untimed).");
    memobs__prom_u64(o, p, "memobs_collective_events_dropped_total", "",
                     info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED]);
    memobs__prom_family(o, "memobs_collective_info", "gauge", "Where the collective figures come from (always 1).");
    memobs__out_string(&so, labels, sizeof labels);
    memobs__out_str(&so, "source=\"");
    memobs__out_escaped(&so, info.source, 1);
    memobs__out_str(&so, "\",memobs_instance=\"");
    memobs__out_escaped(&so, info.instance, 1);
    memobs__out_str(&so, "\",level=\"");
    memobs__out_escaped(&so, info.level, 1);
    memobs__out_printf(&so, "\",api_version=\"%d\"", info.api_version);
    memobs__out_end(&so);
    memobs__prom_u64(o, p, "memobs_collective_info", labels, 1);
}

/* The exposition of p's figures: every writer's, the crash writer's too
   (then one family more, memobs_crash_signal, last). */
static void memobs__xin_prom(memobs__out_t *o, const memobs__prom_snap_t *p); /* section inflight */
static void memobs__prom_write(memobs__out_t *o, memobs__prom_snap_t *p) {
    const memobs_summary_t *s = &p->f.s;
    memobs__out_t so;
    char labels[256];
    uint64_t v[MEMOBS__NPROBLEMS];
    uint32_t c, i, k;
    /* 127 bytes of job id and 71 of host, each byte at most 3 once escaped: fits */
    memobs__out_string(&so, p->id, sizeof p->id);
    memobs__out_str(&so, "job_id=\"");
    memobs__out_escaped(&so, s->identity.job_id, 1);
    memobs__out_printf(&so, "\",rank=\"%d\",local_rank=\"%d\",host=\"", (int)s->identity.rank,
                       (int)s->identity.local_rank);
    memobs__out_escaped(&so, s->identity.host, 1);
    memobs__out_write(&so, "\"", 1);
    memobs__out_end(&so);
    if (so.err) p->id[0] = 0;

    memobs__prom_family(o, "memobs_info", "gauge", "memobs version and world size (always 1).");
    memobs__prom_u64(o, p, "memobs_info", memobs__out_sprintf(labels, sizeof labels, "version=\"%s\",world_size=\"%d\"",
                                                               MEMOBS_VERSION, (int)s->identity.world_size), 1);
    memobs__prom_xfer(o, p, "memobs_transfer_bytes_total", "Bytes of copies recorded (when queued), by direction "
                      "and phase.", 0);
    memobs__prom_xfer(o, p, "memobs_transfer_ops_total", "Copies recorded, by direction and phase.", 1);
    if (memobs__manual_shown(s)) {
        memobs__prom_xfer(o, p, "memobs_manual_transfer_bytes_total", "Bytes the program recorded itself while an "
                          "observer (the LD_PRELOAD library) counted the copies above.", 5);
        memobs__prom_xfer(o, p, "memobs_manual_transfer_ops_total", "Copies the program recorded itself while an "
                          "observer counted the copies above.", 6);
    }
    memobs__prom_xfer(o, p, "memobs_timed_transfer_bytes_total", "Bytes of copies timed on the device and "
                      "completed, and of transfers the engine timed (the storage tier's).", 2);
    memobs__prom_xfer(o, p, "memobs_timed_transfer_ops_total", "Copies timed on the device and completed, and "
                      "transfers the engine timed.", 3);
    memobs__prom_xfer(o, p, "memobs_timed_transfer_seconds_total", "Device time of the completed timed copies, "
                      "the engine's time of its timed transfers (bandwidth: rate of bytes / rate of seconds).", 4);
    memobs__prom_family(o, "memobs_timed_in_flight_copies", "gauge", "Timed copies issued, not yet seen complete.");
    memobs__prom_u64(o, p, "memobs_timed_in_flight_copies", "", s->timed_in_flight_copies);
    memobs__prom_family(o, "memobs_timed_in_flight_bytes", "gauge", "Bytes of timed copies issued, not yet seen "
                        "complete.");
    memobs__prom_u64(o, p, "memobs_timed_in_flight_bytes", "", s->timed_in_flight_bytes);
    memobs__xin_prom(o, p);
    memobs__prom_sizes(o, p);

    memobs__prom_histogram(o, p, "memobs_ttft_seconds", "Time to first token (vLLM's TTFT buckets).", &p->ttft,
                           memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N);
    memobs__prom_histogram(o, p, "memobs_tpot_seconds", "Time per output token after the first (vLLM's "
                           "inter-token-latency buckets).", &p->tpot, memobs__prom_itl_le, MEMOBS__PROM_ITL_N);
    memobs__prom_histogram(o, p, "memobs_e2e_seconds", "Request latency from begin to end (vLLM's TTFT buckets: "
                           "they reach 2560 s).", &p->e2e, memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N);

    memobs__prom_family(o, "memobs_requests_begun_total", "counter", "Requests begun (memobs_request_begin).");
    memobs__prom_u64(o, p, "memobs_requests_begun_total", "", s->requests_begun);
    memobs__prom_family(o, "memobs_requests_completed_total", "counter", "Requests ended after a token.");
    memobs__prom_u64(o, p, "memobs_requests_completed_total", "", s->requests_completed);
    memobs__prom_family(o, "memobs_requests_aborted_total", "counter", "Requests ended with no token.");
    memobs__prom_u64(o, p, "memobs_requests_aborted_total", "", s->requests_aborted);
    memobs__prom_family(o, "memobs_requests_abandoned_total", "counter", "Requests idle past the request timeout "
                        "(MEMOBS_REQUEST_TIMEOUT_S), ended untimed.");
    memobs__prom_u64(o, p, "memobs_requests_abandoned_total", "", s->requests_abandoned);
    memobs__prom_family(o, "memobs_requests_in_flight", "gauge", "Requests begun and not ended.");
    memobs__prom_u64(o, p, "memobs_requests_in_flight", "", s->requests_in_flight);
    memobs__prom_att(o, p);
    memobs__prom_family(o, "memobs_problems_total", "counter", "Misuse and overflow, counted rather than fatal, by "
                        "kind (docs/exports/prometheus.md): alert on any increase.");
    memobs__problem_counts(s, v);
    for (i = 0; i < MEMOBS__NPROBLEMS; i++)
        memobs__prom_u64(o, p, "memobs_problems_total",
                         memobs__out_sprintf(labels, sizeof labels, "problem=\"%s\"", memobs__problem_name[i][0]),
                         v[i]);

    memobs__prom_mem(o, p, "memobs_tracked_bytes", "gauge", "Tracked bytes live now, by memory kind (pending "
                     "frees included).", offsetof(memobs_mem_stats_t, current_bytes));
    memobs__prom_mem(o, p, "memobs_tracked_peak_bytes", "gauge", "Most tracked bytes live at once in the window, "
                     "by memory kind.", offsetof(memobs_mem_stats_t, peak_bytes));
    memobs__prom_mem(o, p, "memobs_tracked_live_allocations", "gauge", "Tracked allocations not yet freed, by "
                     "memory kind.", offsetof(memobs_mem_stats_t, live));
    memobs__prom_mem(o, p, "memobs_tracked_pending_frees", "gauge", "Stream-ordered frees their stream has not "
                     "reached (not reusable yet), by memory kind.", offsetof(memobs_mem_stats_t, pending_frees));
    memobs__prom_mem(o, p, "memobs_tracked_pending_bytes", "gauge", "Bytes of those pending frees, by memory kind.",
                     offsetof(memobs_mem_stats_t, pending_bytes));
    memobs__prom_mem(o, p, "memobs_tracked_allocs_total", "counter", "Tracked allocations, by memory kind.",
                     offsetof(memobs_mem_stats_t, allocs));
    memobs__prom_mem(o, p, "memobs_tracked_frees_total", "counter", "Tracked frees, by memory kind.",
                     offsetof(memobs_mem_stats_t, frees));
    memobs__prom_mem(o, p, "memobs_tracked_allocated_bytes_total", "counter", "Bytes of tracked allocations, by "
                     "memory kind.", offsetof(memobs_mem_stats_t, alloc_bytes));

    {
        static const char *const fam[5][3] = {
            {"memobs_region_ends_total", "counter", "Regions ended, by name (memobs_region_begin/end)."},
            {"memobs_region_timed_total", "counter", "Of those, regions timed (region timing on, the timeline on, "
                                                     "or a collective name)."},
            {"memobs_region_seconds_total", "counter", "Summed time of the timed regions, by name (mean: rate of "
                                                       "seconds / rate of timed)."},
            {"memobs_region_max_seconds", "gauge", "Longest region of the name in the window."},
            {"memobs_markers_total", "counter", "Markers set, by name (memobs_mark)."}};
        for (i = 0; i < 5; i++) {
            memobs__prom_family(o, fam[i][0], fam[i][1], fam[i][2]);
            for (k = 0; k < p->f.nregions; k++) {
                memobs_region_stats_t r;
                memobs__figs_region(&p->f, k, &r);
                memobs__out_string(&so, labels, sizeof labels);
                memobs__out_str(&so, "region=\"");
                memobs__out_escaped(&so, r.name, 1); /* 63 bytes, at most 2 each once escaped: fits */
                memobs__out_write(&so, "\"", 1);
                memobs__out_end(&so);
                if (i == 2 || i == 3) memobs__prom_secs(o, p, fam[i][0], labels, i == 2 ? r.total_ns : r.max_ns);
                else memobs__prom_u64(o, p, fam[i][0], labels, i == 0 ? r.count : i == 1 ? r.timed : r.marks);
            }
        }
    }

    memobs__prom_coll(o, p);
    memobs__prom_host(o, p);

    for (c = 0; c < s->ncounters; c++) {
        char name[96], help[128];
        memobs__out_sprintf(name, sizeof name, "memobs_user_%s_total", s->counters[c].name);
        memobs__prom_family(o, name, "counter", s->counters[c].help[0] ? s->counters[c].help
                                                : memobs__out_sprintf(help, sizeof help, "User counter %s.",
                                                                      s->counters[c].name));
        memobs__prom_u64(o, p, name, "", s->counters[c].value);
    }

    if (p->f.sig) {
        memobs__prom_family(o, "memobs_crash_signal", "gauge", "The signal the process crashed with: this file "
                            "was written by memobs' crash handler, and the process is gone.");
        memobs__prom_u64(o, p, "memobs_crash_signal",
                         memobs__out_sprintf(labels, sizeof labels, "signal=\"%s\"",
                                             p->f.signame[0] ? p->f.signame : "other"), (uint64_t)p->f.sig);
    }
}

/* The generator behind every Prometheus writer but the crash writer. */
static int memobs__prom_gen(memobs__out_t *o) {
    memobs__prom_snap_t *p = (memobs__prom_snap_t *)MEMOBS_MALLOC(sizeof(memobs__prom_snap_t));
    int rc;
    if (!p) return MEMOBS_ERR_NOMEM;
    if ((rc = memobs__figs_get(&p->f, -1)) == MEMOBS_OK) {
        pthread_mutex_lock(&memobs__g.lock);
        memobs__hist_cumulative(&memobs__g.ttft, memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N, &p->ttft);
        memobs__hist_cumulative(&memobs__g.tpot, memobs__prom_itl_le, MEMOBS__PROM_ITL_N, &p->tpot);
        memobs__hist_cumulative(&memobs__g.e2e, memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N, &p->e2e);
        pthread_mutex_unlock(&memobs__g.lock);
        p->nsmp = memobs_get_samples(&p->smp, 1);
        if (!p->nsmp || memobs_leak_check(&p->leak) != MEMOBS_OK) memset(&p->leak, 0, sizeof p->leak);
        memobs__prom_write(o, p);
        memobs__figs_free(&p->f);
    }
    MEMOBS_FREE(p);
    return rc;
}

int memobs_write_prometheus(FILE *f) {
    memobs__out_t o;
    char *b;
    int rc;
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_prometheus: NULL FILE");
        return MEMOBS_ERR_INVALID;
    }
    b = (char *)MEMOBS_MALLOC(MEMOBS__OUT_BUF); /* none: straight to the FILE */
    memobs__out_file(&o, f, b, MEMOBS__OUT_BUF);
    rc = memobs__prom_gen(&o);
    memobs__out_end(&o);
    if (b) MEMOBS_FREE(b);
    if (rc != MEMOBS_OK) return rc;
    if (fflush(f) != 0 || ferror(f)) return MEMOBS_ERR_IO;
    return MEMOBS_OK;
}

size_t memobs_format_prometheus(char *buf, size_t len) {
    memobs__out_t o;
    memobs__out_string(&o, buf, len);
    if (memobs__prom_gen(&o) != MEMOBS_OK) o.total = 0;
    if (buf && len) buf[o.total < len ? o.total : 0] = 0; /* whole, or nothing */
    return o.total;
}

static int memobs__write_prom_f(FILE *f, int unused) {
    (void)unused;
    return memobs_write_prometheus(f);
}

int memobs_write_prometheus_file(const char *path) { return memobs__output_file(MEMOBS__OUT_PROM, path, 0); }

/* The periodic step, on the shared background worker: rewrites
   MEMOBS_PROM_FILE (a file, not a stream) and the prometheus_client
   multiprocess files (by the fork rule: memobs__dest_ours). A run of
   failures is reported once, for each (a bit of prom_failing). */
static void memobs__prom_tick(uint64_t now_ns) {
    static const unsigned rows[2] = {MEMOBS__OUT_PROM, MEMOBS__OUT_PROM_MP};
    pthread_t self = pthread_self();
    unsigned i;
    (void)now_ns;
    /* Never rename an older snapshot over the crash writer's file: busy
       first, then its mark (both seq_cst; it sets its mark, then reads busy). */
    __atomic_store(&memobs__g.prom_thread, &self, __ATOMIC_RELAXED);
    __atomic_store_n(&memobs__g.prom_busy.v, 1u, __ATOMIC_SEQ_CST);
    for (i = 0; i < 2; i++) {
        uint32_t failing = MEMOBS__LOAD(&memobs__g.prom_failing.v), bit = 1u << i;
        int rc;
        if (!MEMOBS__LOAD(&memobs__g.out[rows[i]].on.v) || memobs__g.out[rows[i]].stream) continue;
        if (memobs_now_ns() < __atomic_load_n(&memobs__g.crash_until.v, __ATOMIC_SEQ_CST)) break;
        rc = memobs__dest_write(rows[i], memobs__write_prom_f, 0, (failing & bit) ? MEMOBS__WW_QUIET : 0u);
        MEMOBS__STORE(&memobs__g.prom_failing.v, rc != MEMOBS_OK ? failing | bit : failing & ~bit);
    }
    __atomic_store_n(&memobs__g.prom_busy.v, 0u, __ATOMIC_SEQ_CST);
}

/* MEMOBS_PROM_FILE and MEMOBS_PROM_INTERVAL_MS; runs inside memobs__init_once. */
static void memobs__prom_env(void) {
#ifdef MEMOBS_DISABLE
    (void)memobs__prom_tick;
    (void)memobs__write_prom_f;
    (void)memobs__pmp_env;
#else
    const char *s;
    int ms = 15000, file, mp;
    if ((s = getenv("MEMOBS_PROM_INTERVAL_MS")) != NULL) {
        int v;
        if (memobs__parse_int(s, &v) && (v == 0 || (v >= 100 && v <= 86400000))) ms = v;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_PROM_INTERVAL_MS='%s' is not 0 or a number of milliseconds from "
                         "100 to 86400000; using 15000", s);
    }
    memobs__g.prom_interval_ns = (uint64_t)ms * 1000000u;
    file = memobs__output_env(MEMOBS__OUT_PROM) && !memobs__g.out[MEMOBS__OUT_PROM].stream;
    mp = memobs__pmp_env();
    /* the worker's exit handler, registered later, stops it before this
       one writes the last file; a stream gets the exit's figures only */
    if (memobs__g.prom_interval_ns && (file || mp) &&
        memobs__bg_schedule(memobs__prom_tick, memobs__g.prom_interval_ns) != MEMOBS_OK)
        memobs__log(MEMOBS_LOG_WARN, "%s: no background thread for the periodic writes; the %s written at exit "
                    "only", file ? "MEMOBS_PROM_FILE" : "PROMETHEUS_MULTIPROC_DIR", file ? "file is" : "files are");
#endif
}

#include <locale.h>

/* ======================================================================== */
/* Private: prometheus_client's multiprocess files              >>multiproc */
/* ======================================================================== */

/* prometheus_client's multiprocess mode (vLLM, SGLang): every process keeps
   its values in files of PROMETHEUS_MULTIPROC_DIR, and the serving
   process's MultiProcessCollector reads every *.db file there and merges
   them: a file's type is its name's first '_' part (counter_*,
   histogram_*, gauge_<mode>_<pid>.db, the pid a label in the all/liveall
   modes), counters and histograms are summed, gauges by their mode.
   memobs writes its exposition (the Prometheus row's writer) as four
   such files, whole (a temporary renamed over the name: a reader sees the
   old file or the new one, never a torn value): counter_B.db,
   histogram_B.db, gauge_livesum_B.db and gauge_livemax_B.db, B the
   claimed name memobs-<pid> (memobs-<pid>.2 for a second instance of the
   process), never prometheus_client's own <pid>.db names (the first
   write sweeps dead processes' named temporaries of them); none until
   the process has a figure other than 0 (a shell or tool started under
   the LD_PRELOAD library leaves no files). When the process ends (exit,
   or a stop signal that ends it) the two gauge files are removed (live
   modes: a process that has ended holds nothing); counters and histograms
   stay, as prometheus_client keeps them.
   A file ("mmap dict"): an int32 of the bytes used, 4 zero bytes, then
   entries: an int32 key length n, the key (UTF-8), spaces padding 4 + n
   up to the next multiple of 8 (a whole 8 when it is one already), then
   the value, a double (layout 1: prometheus_client 0.17 and before,
   Debian 12's 0.16), or the value and a time stamp in seconds (layout 2:
   0.18 on). Native byte order. A key is the JSON of [family, sample name,
   labels sorted by name, help] as Python's json.dumps(sort_keys=True)
   writes it (", " and ": ", non-ASCII as \uXXXX). A counter's family
   drops its _total; a histogram's buckets are per bucket, not cumulative,
   and its _count is not stored (the reader sums the buckets). */
#define MEMOBS__PMP_FILES 4
static const char *const memobs__pmp_kind[MEMOBS__PMP_FILES] = {"counter", "histogram", "gauge_livesum",
                                                                 "gauge_livemax"};
/* Gauges merged by their maximum: always 1, a peak, a device-wide figure
   two processes of one device both read, the leak detector's fit. Every
   other gauge is an amount this process holds: summed. */
static const char *const memobs__pmp_max[] = {
    "memobs_info", "memobs_collective_info", "memobs_tracked_peak_bytes", "memobs_device_used_bytes",
    "memobs_device_total_bytes", "memobs_leak_slope_bytes_per_second", "memobs_leak_samples", "memobs_crash_signal",
    "memobs_transfer_oldest_in_flight_seconds"};

typedef struct {
    char *p;
    size_t n, cap;
    int err; /* out of memory: the image is not written */
} memobs__pmp_buf_t;

static struct {
    pthread_mutex_t lock;  /* one store at a time: the images and the layout */
    uint32_t cfg;          /* MEMOBS_PROM_MULTIPROC_LAYOUT: 0 auto, 1, 2 */
    uint32_t found;        /* the layout learned from another writer's file (0: none yet) */
    uint32_t said;         /* the layout's message was given */
    uint32_t gone;         /* the process ends: no gauge files (memobs__pmp_gone) */
    uint32_t figures;      /* the images hold a figure other than 0 (a livemax gauge's aside) */
    uint32_t wrote;        /* this process has written its files */
    memobs__pmp_buf_t img[MEMOBS__PMP_FILES];
    /* memobs__pmp_build's text, off small thread stacks: the family, its
       help, the sample's label values (the longest: a user counter's help,
       the identity labels) */
    char fam[256], help[4096], vals[8192];
} memobs__pmp = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, {{0, 0, 0, 0}}, "", "", ""};

static void memobs__pmp_put(memobs__pmp_buf_t *b, const void *s, size_t k) {
    if (b->err) return;
    if (b->n + k > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        char *q;
        while (cap < b->n + k) cap *= 2;
        if ((q = (char *)MEMOBS_MALLOC(cap)) == NULL) {
            b->err = 1;
            return;
        }
        if (b->n) memcpy(q, b->p, b->n);
        if (b->p) MEMOBS_FREE(b->p);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, k);
    b->n += k;
}

/* s (len bytes, well-formed UTF-8: the exposition's) as a JSON string
   the way Python's json.dumps writes it: ASCII only. */
static void memobs__pmp_json(memobs__pmp_buf_t *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    memobs__pmp_put(b, "\"", 1);
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        uint32_t u = c;
        size_t k = 1;
        char e[12];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') { /* a run of plain ASCII at once */
            size_t j = i + 1;
            while (j < len && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] < 0x7f && s[j] != '"' && s[j] != '\\')
                j++;
            memobs__pmp_put(b, s + i, j - i);
            i = j;
            continue;
        }
        if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
            e[0] = '\\';
            e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c == '\b' ? 'b' : c == '\f' ? 'f' : (char)c;
            memobs__pmp_put(b, e, 2);
            i++;
            continue;
        }
        if (c >= 0x80) {
            k = memobs__utf8_len((const unsigned char *)s + i);
            if (k == 0 || i + k > len) k = 1, u = 0xfffd; /* not the exposition's: U+FFFD */
            else if (k == 2) u = (uint32_t)(c & 0x1f) << 6 | ((unsigned char)s[i + 1] & 0x3f);
            else if (k == 3)
                u = (uint32_t)(c & 0x0f) << 12 | (uint32_t)((unsigned char)s[i + 1] & 0x3f) << 6 |
                    ((unsigned char)s[i + 2] & 0x3f);
            else
                u = (uint32_t)(c & 0x07) << 18 | (uint32_t)((unsigned char)s[i + 1] & 0x3f) << 12 |
                    (uint32_t)((unsigned char)s[i + 2] & 0x3f) << 6 | ((unsigned char)s[i + 3] & 0x3f);
        }
        if (u >= 0x10000) { /* a surrogate pair */
            uint32_t v = u - 0x10000, hi = 0xd800 + (v >> 10), lo = 0xdc00 + (v & 0x3ff);
            e[0] = e[6] = '\\', e[1] = e[7] = 'u';
            e[2] = hex[hi >> 12], e[3] = hex[(hi >> 8) & 15], e[4] = hex[(hi >> 4) & 15], e[5] = hex[hi & 15];
            e[8] = hex[lo >> 12], e[9] = hex[(lo >> 8) & 15], e[10] = hex[(lo >> 4) & 15], e[11] = hex[lo & 15];
            memobs__pmp_put(b, e, 12);
        } else {
            e[0] = '\\', e[1] = 'u';
            e[2] = hex[u >> 12], e[3] = hex[(u >> 8) & 15], e[4] = hex[(u >> 4) & 15], e[5] = hex[u & 15];
            memobs__pmp_put(b, e, 6);
        }
        i += k;
    }
    memobs__pmp_put(b, "\"", 1);
}

/* The exposition's number s (k bytes) as the double Python's float()
   gives, locale or not: an integer, or digits with a point (exactly, by
   one division, while the digits fit 2^53), else strtod with the
   locale's decimal point. 0 when it is not a number. */
static int memobs__pmp_num(const char *s, size_t k, double *out) {
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    uint64_t m = 0;
    size_t i = 0, digits = 0, frac = 0, point = 0, small = 1;
    int neg = k > 0 && s[0] == '-';
    char tmp[64], *end;
    for (i = (size_t)neg; i < k; i++) {
        if (s[i] == '.' && !point) {
            point = 1;
            continue;
        }
        if (s[i] < '0' || s[i] > '9') break;
        if (m > (UINT64_MAX - 9) / 10) small = 0;
        else m = m * 10 + (uint64_t)(s[i] - '0');
        digits++;
        frac += point;
    }
    if (i == k && digits) {
        if (!point && small) {
            *out = neg ? -(double)m : (double)m; /* one rounding, as float() */
            return 1;
        }
        if (small && m <= ((uint64_t)1 << 53) && frac < sizeof p10 / sizeof p10[0]) {
            *out = (double)m / p10[frac]; /* both exact: one rounding */
            if (neg) *out = -*out;
            return 1;
        }
    }
    if (k == 0 || k >= sizeof tmp) return 0;
    memcpy(tmp, s, k);
    tmp[k] = 0;
    {
        const char *dp = localeconv()->decimal_point;
        char *dot = strchr(tmp, '.');
        if (dot && dp && dp[0] && !dp[1]) *dot = dp[0];
    }
    *out = strtod(tmp, &end);
    return end == tmp + k;
}

/* Text of the exposition with its escapes undone (\\, \n, and \" in a
   label value) into b, NUL-terminated; 0 when it does not fit. */
static size_t memobs__pmp_unescape(const char *s, size_t k, char *b, size_t cap) {
    size_t i, n = 0;
    for (i = 0; i < k; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < k) c = s[++i] == 'n' ? '\n' : s[i];
        if (n + 1 >= cap) return 0;
        b[n++] = c;
    }
    b[n] = 0;
    return n;
}

#define MEMOBS__PMP_LABELS 16
typedef struct {
    const char *name;
    size_t nlen;
    char *value; /* unescaped, NUL-terminated */
    size_t vlen;
} memobs__pmp_label_t;

/* One entry into b: key, padding, value (and time stamp, layout 2). */
static void memobs__pmp_entry(memobs__pmp_buf_t *b, memobs__pmp_buf_t *key, double v, double ts, unsigned layout) {
    static const char pad[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
    int32_t n = (int32_t)key->n;
    memobs__pmp_put(b, &n, 4);
    memobs__pmp_put(b, key->p, key->n);
    memobs__pmp_put(b, pad, 8 - (key->n + 4) % 8);
    memobs__pmp_put(b, &v, 8);
    if (layout == 2) memobs__pmp_put(b, &ts, 8);
}

/* The exposition text (len bytes) as the four images, in layout. */
static void memobs__pmp_build(const char *text, size_t len, unsigned layout, double ts) {
    char *fam = memobs__pmp.fam, *help = memobs__pmp.help, *vals = memobs__pmp.vals;
    unsigned kind = MEMOBS__PMP_FILES; /* the family's file; none: not stored */
    int counter = 0, hist = 0;
    double prev = 0; /* the series' cumulative count so far (a histogram's) */
    memobs__pmp_buf_t key = {0, 0, 0, 0}, famj = {0, 0, 0, 0}, helpj = {0, 0, 0, 0};
    const char *p = text, *e = text + len;
    unsigned f;
    memobs__pmp.figures = 0;
    fam[0] = help[0] = 0;
    for (f = 0; f < MEMOBS__PMP_FILES; f++) {
        memobs__pmp.img[f].n = 0;
        memobs__pmp.img[f].err = 0;
        memobs__pmp_put(&memobs__pmp.img[f], "\0\0\0\0\0\0\0\0", 8);
    }
    while (p < e) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(e - p)), *q, *name;
        size_t k, nn;
        memobs__pmp_label_t lab[MEMOBS__PMP_LABELS];
        unsigned nlab = 0, i, j;
        size_t vused = 0;
        double v;
        if (!nl) nl = e;
        k = (size_t)(nl - p);
        if (k > 7 && memcmp(p, "# HELP ", 7) == 0) {
            q = (const char *)memchr(p + 7, ' ', k - 7);
            if (q && (size_t)(q - p - 7) < sizeof memobs__pmp.fam && !memobs__pmp_unescape(q + 1, (size_t)(nl - q - 1), help,
                                                                                  sizeof memobs__pmp.help))
                help[0] = 0;
        } else if (k > 7 && memcmp(p, "# TYPE ", 7) == 0) {
            q = (const char *)memchr(p + 7, ' ', k - 7);
            kind = MEMOBS__PMP_FILES;
            if (q && (size_t)(q - p - 7) < sizeof memobs__pmp.fam) {
                size_t t = (size_t)(nl - q - 1);
                memcpy(fam, p + 7, (size_t)(q - p - 7));
                fam[q - p - 7] = 0;
                counter = t == 7 && memcmp(q + 1, "counter", 7) == 0;
                hist = t == 9 && memcmp(q + 1, "histogram", 9) == 0;
                kind = counter ? 0u : hist ? 1u : t == 5 && memcmp(q + 1, "gauge", 5) == 0 ? 2u : MEMOBS__PMP_FILES;
                if (kind == 2)
                    for (i = 0; i < sizeof memobs__pmp_max / sizeof memobs__pmp_max[0]; i++)
                        if (strcmp(fam, memobs__pmp_max[i]) == 0) kind = 3;
                prev = 0;
                /* the key's parts every sample of the family shares, in JSON once */
                famj.n = helpj.n = 0;
                famj.err = helpj.err = 0;
                memobs__pmp_put(&famj, "[", 1);
                memobs__pmp_json(&famj, fam, counter && strlen(fam) > 6 && strcmp(fam + strlen(fam) - 6, "_total") == 0
                                                 ? strlen(fam) - 6
                                                 : strlen(fam));
                memobs__pmp_put(&famj, ", ", 2);
                memobs__pmp_put(&helpj, "}, ", 3);
                memobs__pmp_json(&helpj, help, strlen(help));
                memobs__pmp_put(&helpj, "]", 1);
            }
        } else if (k && p[0] != '#' && kind < MEMOBS__PMP_FILES) {
            /* name{a="x",b="y"} value */
            name = p;
            for (q = p; q < nl && *q != '{' && *q != ' '; q++) {
            }
            nn = (size_t)(q - p);
            if (q < nl && *q == '{') {
                q++;
                while (q < nl && *q != '}' && nlab < MEMOBS__PMP_LABELS && vused + 2 <= sizeof memobs__pmp.vals) {
                    const char *ln = q, *vs;
                    while (q < nl && *q != '=') q++;
                    if (q + 1 >= nl || q[1] != '"') break;
                    lab[nlab].name = ln;
                    lab[nlab].nlen = (size_t)(q - ln);
                    vs = q += 2;
                    while (q < nl && *q != '"') q += *q == '\\' ? 2 : 1;
                    if (q >= nl) break;
                    lab[nlab].value = vals + vused;
                    lab[nlab].vlen = memobs__pmp_unescape(vs, (size_t)(q - vs), vals + vused, sizeof memobs__pmp.vals - vused);
                    if (!lab[nlab].vlen && q != vs) break; /* no room */
                    vused += lab[nlab].vlen + 1;
                    nlab++;
                    q++;
                    if (q < nl && *q == ',') q++;
                }
                if (q >= nl || *q != '}') { /* not the exposition's form: skipped */
                    p = nl + 1;
                    continue;
                }
                q++;
            }
            if (q >= nl || *q != ' ' || !memobs__pmp_num(q + 1, (size_t)(nl - q - 1), &v)) {
                p = nl + 1;
                continue;
            }
            if (hist) {
                int bucket = nn > 7 && memcmp(name + nn - 7, "_bucket", 7) == 0;
                if (nn > 6 && memcmp(name + nn - 6, "_count", 6) == 0) { /* the reader's: the buckets' sum */
                    prev = 0;
                    p = nl + 1;
                    continue;
                }
                if (bucket) {
                    double cum = v;
                    v = cum - prev;
                    prev = cum;
                    for (i = 0; i < nlab; i++)
                        if (lab[i].nlen == 2 && memcmp(lab[i].name, "le", 2) == 0 && strcmp(lab[i].value, "+Inf") == 0)
                            prev = 0; /* the series' last bucket */
                } else {
                    prev = 0;
                }
            }
            /* labels by name: an insertion sort of a few */
            for (i = 1; i < nlab; i++) {
                memobs__pmp_label_t t = lab[i];
                for (j = i; j > 0; j--) {
                    size_t m = t.nlen < lab[j - 1].nlen ? t.nlen : lab[j - 1].nlen;
                    int c = memcmp(t.name, lab[j - 1].name, m);
                    if (c > 0 || (c == 0 && t.nlen >= lab[j - 1].nlen)) break;
                    lab[j] = lab[j - 1];
                }
                lab[j] = t;
            }
            key.n = 0;
            key.err = 0;
            memobs__pmp_put(&key, famj.p, famj.n); /* [family, */
            memobs__pmp_json(&key, name, nn);
            memobs__pmp_put(&key, ", {", 3);
            for (i = 0; i < nlab; i++) {
                if (i) memobs__pmp_put(&key, ", ", 2);
                memobs__pmp_json(&key, lab[i].name, lab[i].nlen);
                memobs__pmp_put(&key, ": ", 2);
                memobs__pmp_json(&key, lab[i].value, lab[i].vlen);
            }
            memobs__pmp_put(&key, helpj.p, helpj.n); /* }, help] */
            if (key.err || famj.err || helpj.err) memobs__pmp.img[kind].err = 1;
            else memobs__pmp_entry(&memobs__pmp.img[kind], &key, v, ts, layout);
            if (v != 0 && kind != 3) memobs__pmp.figures = 1;
        }
        p = nl + 1;
    }
    for (f = 0; f < MEMOBS__PMP_FILES; f++) {
        memobs__pmp_buf_t *b = &memobs__pmp.img[f];
        int32_t used = (int32_t)b->n;
        if (b->n > 0x7fffffffu) b->err = 1;
        else if (!b->err) memcpy(b->p, &used, 4);
    }
    if (key.p) MEMOBS_FREE(key.p);
    if (famj.p) MEMOBS_FREE(famj.p);
    if (helpj.p) MEMOBS_FREE(helpj.p);
}

/* The layout of another writer's file (1 or 2), 0 when it tells none:
   empty, unreadable, or entries that read well with both or neither. */
static unsigned memobs__pmp_layout_of(const char *path) {
    unsigned char *buf;
    ssize_t got;
    int32_t used;
    unsigned layout, fits = 0, which = 0;
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | MEMOBS__O_CLOEXEC);
    if (fd < 0) return 0;
    if ((buf = (unsigned char *)MEMOBS_MALLOC(65536)) == NULL) { /* the client's first mapping: 64 KiB */
        close(fd);
        return 0;
    }
    got = read(fd, buf, 65536);
    close(fd);
    if (got >= 8) memcpy(&used, buf, 4);
    if (got < 8 || used <= 8 || (size_t)used > (size_t)got) {
        MEMOBS_FREE(buf);
        return 0;
    }
    for (layout = 1; layout <= 2; layout++) {
        size_t pos = 8;
        int ok = 1;
        while (ok && pos < (size_t)used) {
            int32_t n;
            if (pos + 4 > (size_t)used) break;
            memcpy(&n, buf + pos, 4);
            if (n < 2 || pos + 4 + (size_t)n > (size_t)used || buf[pos + 4] != '[') ok = 0;
            else pos += 4 + (size_t)n + (8 - ((size_t)n + 4) % 8) + 8 * layout;
        }
        if (ok && pos == (size_t)used) fits++, which = layout;
    }
    MEMOBS_FREE(buf);
    return fits == 1 ? which : 0;
}

/* The layout to write (see the section's comment): MEMOBS_PROM_MULTIPROC_LAYOUT
   when set; else the layout of the *.db files another writer left in the
   folder (not memobs', named *_memobs-*), learned once; else 2, the
   current release's, looked for again at the next write. Holds the lock. */
static unsigned memobs__pmp_layout(const char *dir) {
    DIR *dh;
    struct dirent *de;
    char path[MEMOBS__PATH_LEN];
    unsigned found = 0;
    if (memobs__pmp.cfg) return memobs__pmp.cfg;
    if (memobs__pmp.found) return memobs__pmp.found;
    if ((dh = opendir(dir)) == NULL) return 2;
    while (!found && (de = readdir(dh)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 4 || strcmp(de->d_name + n - 3, ".db") != 0 || strstr(de->d_name, "_memobs-")) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path) continue;
        found = memobs__pmp_layout_of(path);
        if (found)
            memobs__log(MEMOBS_LOG_INFO, "PROMETHEUS_MULTIPROC_DIR: writing prometheus_client's layout %u (%s), "
                        "the layout of %s", found, found == 1 ? "0.17 and before" : "0.18 on", path);
    }
    closedir(dh);
    if (found) return memobs__pmp.found = found;
    if (!memobs__pmp.said) {
        memobs__pmp.said = 1;
        memobs__log(MEMOBS_LOG_INFO, "PROMETHEUS_MULTIPROC_DIR: no other writer's file in '%s' yet; writing "
                    "prometheus_client's current layout (0.18 on) until one shows its own (or set "
                    "MEMOBS_PROM_MULTIPROC_LAYOUT=1 for 0.17 and before)", dir);
    }
    return 2;
}

/* on 1: the process ends (memobs__exit_all after its write, the stop
   writer before it ends the process): its gauge files are removed, and no
   write makes them again. on 0: it goes on after all (a handler the host
   installed meanwhile took the stop): the next write makes them. */
static void memobs__pmp_gone(int on) {
    const memobs__dest_t *d = &memobs__g.out[MEMOBS__OUT_PROM_MP];
    const char *base;
    char file[MEMOBS__PATH_LEN];
    unsigned f;
    if (!memobs__dest_ours(d) || d->path_pid != (int64_t)getpid() || !(base = strrchr(d->path, '/'))) return;
    pthread_mutex_lock(&memobs__pmp.lock);
    memobs__pmp.gone = (uint32_t)on;
    for (f = 2; on && memobs__pmp.wrote && f < MEMOBS__PMP_FILES; f++)
        if ((size_t)snprintf(file, sizeof file, "%.*s/%s_%s.db", (int)(base - d->path), d->path, memobs__pmp_kind[f],
                             base + 1) < sizeof file)
            (void)unlink(file);
    pthread_mutex_unlock(&memobs__pmp.lock);
}

static int memobs__pmp_put_f(FILE *f, int k) {
    const memobs__pmp_buf_t *b = &memobs__pmp.img[k];
    return fwrite(b->p, 1, b->n, f) == b->n ? MEMOBS_OK : MEMOBS_ERR_IO;
}

/* The row's store (MEMOBS__OUTPUT_TABLE): path is <folder>/B, B the
   claimed base name; bytes the exposition. */
static int memobs__pmp_store(const char *path, const char *bytes, size_t len, unsigned flags) {
    char dir[MEMOBS__PATH_LEN], file[MEMOBS__PATH_LEN];
    const char *base = strrchr(path, '/');
    size_t dl = base ? (size_t)(base - path) : 0;
    unsigned f, layout, guess, files;
    int rc = MEMOBS_OK;
    uint64_t now = memobs__realtime_ns();
    double ts = (double)(now / 1000000000u) + (double)(now % 1000000000u) / 1e9;
    base = base ? base + 1 : path;
    memcpy(dir, path, dl);
    dir[dl] = 0;
    if (!dl) strcpy(dir, ".");
    pthread_mutex_lock(&memobs__pmp.lock);
    guess = memobs__pmp.cfg ? memobs__pmp.cfg : memobs__pmp.found ? memobs__pmp.found : 2u;
    memobs__pmp_build(bytes, len, guess, ts);
    if (!memobs__pmp.figures && !memobs__pmp.wrote) { /* nothing recorded yet: no files (a shell under the preload) */
        pthread_mutex_unlock(&memobs__pmp.lock);
        return MEMOBS_OK;
    }
    if ((layout = memobs__pmp_layout(dir)) != guess) memobs__pmp_build(bytes, len, layout, ts);
    if (!memobs__pmp.wrote) /* once: the named temporaries dead processes left of such files (a killed write) */
        for (f = 0; f < MEMOBS__PMP_FILES; f++) {
            char pat[64];
            snprintf(pat, sizeof pat, "%s_memobs-%%p.db", memobs__pmp_kind[f]);
            memobs__sweep_as(path, pat);
        }
    memobs__pmp.wrote = 1;
    files = memobs__pmp.gone ? 2u : MEMOBS__PMP_FILES; /* the process ends: counters and histograms */
    for (f = 0; f < MEMOBS__PMP_FILES; f++) {
        if ((size_t)snprintf(file, sizeof file, "%s/%s_%s.db", dir, memobs__pmp_kind[f], base) >= sizeof file) {
            rc = MEMOBS_ERR_INVALID;
            break;
        }
        if (f >= files) {
            (void)unlink(file);
        } else if (memobs__pmp.img[f].err) {
            if (!(flags & MEMOBS__WW_QUIET)) memobs__log(MEMOBS_LOG_WARN, "no memory for '%s'; not written", file);
            rc = MEMOBS_ERR_NOMEM;
        } else {
            int r = memobs__write_whole(file, -1, "prometheus_client multiprocess file", memobs__pmp_put_f, (int)f,
                                        (flags & MEMOBS__WW_QUIET) | MEMOBS__WW_BINARY);
            if (r != MEMOBS_OK) rc = r;
        }
    }
    pthread_mutex_unlock(&memobs__pmp.lock);
    return rc;
}

/* spec[n...] gets text as a spec (a % doubled), leaving room for the
   base name after it: the new length, 0 when it does not fit. */
static size_t memobs__pmp_spec(char *spec, size_t n, const char *text) {
    for (; *text; text++) {
        if (n + 16 >= MEMOBS__SPEC_LEN) return 0;
        if (*text == '%') spec[n++] = '%';
        spec[n++] = *text;
    }
    return n;
}

/* PROMETHEUS_MULTIPROC_DIR, MEMOBS_PROM_MULTIPROC and
   MEMOBS_PROM_MULTIPROC_LAYOUT; from memobs__prom_env. 1 when on. */
static int memobs__pmp_env(void) {
    memobs__dest_t *d = &memobs__g.out[MEMOBS__OUT_PROM_MP];
    const char *s = getenv("PROMETHEUS_MULTIPROC_DIR"), *o = getenv("MEMOBS_PROM_MULTIPROC"),
               *l = getenv("MEMOBS_PROM_MULTIPROC_LAYOUT");
    struct stat st;
    size_t n = 0;
    if (l && *l && !memobs__streq_nocase(l, "auto")) {
        if (strcmp(l, "1") == 0 || strcmp(l, "2") == 0) memobs__pmp.cfg = (uint32_t)(l[0] - '0');
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_PROM_MULTIPROC_LAYOUT='%s' is not auto, 1 or 2; using auto", l);
    }
    if (!s || !*s) return 0;
    if (o && *o) {
        int b = memobs__parse_bool(o);
        if (b == 0) return 0;
        if (b < 0) memobs__log(MEMOBS_LOG_WARN, "MEMOBS_PROM_MULTIPROC='%s' is not 0 or 1; writing the files", o);
    }
    if (stat(s, &st) != 0) {
        memobs__log(MEMOBS_LOG_WARN, "PROMETHEUS_MULTIPROC_DIR='%s' cannot be read: %s; no prometheus_client "
                    "multiprocess files written", s, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        memobs__log(MEMOBS_LOG_WARN, "PROMETHEUS_MULTIPROC_DIR='%s' is not a folder; no prometheus_client "
                    "multiprocess files written", s);
        return 0;
    }
    if (s[0] != '/') { /* relative: from the folder it is relative to now, whatever chdir() comes later */
        char cwd[MEMOBS__SPEC_LEN];
        if (getcwd(cwd, sizeof cwd) && (n = memobs__pmp_spec(d->spec, 0, cwd)) != 0) /* unknown: left relative */
            d->spec[n++] = '/';
    }
    n = memobs__pmp_spec(d->spec, n, s);
    if (!n) {
        memobs__log(MEMOBS_LOG_WARN, "PROMETHEUS_MULTIPROC_DIR='%s' is too long; no prometheus_client "
                    "multiprocess files written", s);
        return 0;
    }
    strcpy(d->spec + n, "/memobs-%p");
    d->stream = 0;
    d->has_pid = 0; /* the fork rule of a plain path: a child's figures hold its parent's */
    d->has_rank = 0;
    d->owner = (int64_t)getpid();
    memobs__dest_resolve(MEMOBS__OUT_PROM_MP, 0);
    if (!d->path[0]) return 0;
    MEMOBS__STORE(&d->on.v, 1u);
    return 1;
}

/* ======================================================================== */
/* Private: allocation reports                                    >>reports */
/* ======================================================================== */

/* dladdr() and __cxa_demangle() under private names, weak: strict C modes
   hide dladdr's declaration, glibc before 2.34 keeps it in libdl, and only
   C++ programs have a demangler. Missing ones leave module+offset text. */
typedef struct { const char *fname; void *fbase; const char *sname; void *saddr; } memobs__dlinfo_t;
extern int memobs__dladdr(const void *addr, memobs__dlinfo_t *info) __asm__("dladdr") __attribute__((weak));
extern char *memobs__demangle(const char *name, char *buf, size_t *len, int *status) __asm__("__cxa_demangle")
    __attribute__((weak));
extern void *memobs__dlopen(const char *path, int mode) __asm__("dlopen") __attribute__((weak));

/* A shared object that holds memobs (a backend a host unloads, a
   MEMOBS_HIDDEN plugin) stays mapped for good once memobs has a hook in
   the process (from memobs_init on: the thread-exit destructor, then the
   signal handlers and threads): its own module opened again with
   RTLD_NOLOAD | RTLD_NODELETE, so a dlclose() never unmaps code that is
   still called. Once; nothing for the executable or a static build, nor
   where dlopen/dladdr are not linked (glibc before 2.34 without -ldl). */
static void memobs__pin_self(void) {
    static memobs__u32_t once;
    memobs__dlinfo_t di;
    if (MEMOBS__LOAD(&once.v) || MEMOBS__XCHG(&once.v, 1u) || !memobs__dladdr || !memobs__dlopen) return;
    memset(&di, 0, sizeof di);
    if (memobs__dladdr((const void *)&once, &di) && di.fname && di.fname[0])
        (void)memobs__dlopen(di.fname, 2 | 4 | 0x1000); /* RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE (glibc, musl) */
}

/* "function+0x1c (module+0x1a2c)", or "module+0x1a2c" without a symbol.
   Returns 0 when no function name was found. */
static int memobs__sym(uintptr_t pc, char *buf, size_t len) {
    memobs__dlinfo_t di;
    const char *mod;
    memset(&di, 0, sizeof di);
    /* pc - 1: a return address may point past the end of its function. */
    if (!memobs__dladdr || !memobs__dladdr((const void *)(pc - 1), &di) || !di.fname) {
        snprintf(buf, len, "0x%llx", (unsigned long long)pc);
        return 0;
    }
    mod = strrchr(di.fname, '/') ? strrchr(di.fname, '/') + 1 : di.fname;
    if (!*mod) mod = "?";
    if (di.sname && di.saddr) {
        int status = -1;
        char *dm = (memobs__demangle && di.sname[0] == '_' && di.sname[1] == 'Z')
                       ? memobs__demangle(di.sname, NULL, NULL, &status) : NULL;
        snprintf(buf, len, "%s+0x%llx (%s+0x%llx)", dm && status == 0 ? dm : di.sname,
                 (unsigned long long)(pc - (uintptr_t)di.saddr), mod, (unsigned long long)(pc - (uintptr_t)di.fbase));
        free(dm); /* __cxa_demangle allocates with malloc */
        return 1;
    }
    snprintf(buf, len, "%s+0x%llx", mod, (unsigned long long)(pc - (uintptr_t)di.fbase));
    return 0;
}

/* Text of one part of a trace (0: provider frames, 1: C frames), one line
   per frame (C frames cut short by a bad frame pointer: a last line that
   says so). Returns 0 when that part is empty. *unnamed counts C frames
   without a function name. */
static size_t memobs__trace_part(const memobs__trace_t *e, int part, char *buf, size_t len, int *unnamed) {
    const memobs_frame_t *fr = &MEMOBS__TRK.frames[e->off];
    size_t o = 0;
    unsigned i;
    if (len) buf[0] = 0;
    if (part == 0) {
        const memobs_tag_provider_t *p;
        if (!e->np || !e->prov || len == 0) return 0;
        p = &MEMOBS__TRK.prov[e->prov - 1];
        o = p->format(fr, (int)e->np, buf, len, p->user);
        if (o >= len) o = len - 1;
        buf[o] = 0;
        return o;
    }
    for (i = 0; i < e->nc && o + 1 < len; i++) {
        char sym[512];
        int w;
        if (!memobs__sym(fr[e->np + i].pc, sym, sizeof sym) && unnamed) (*unnamed)++;
        w = snprintf(buf + o, len - o, "%s#%u %s", i ? "\n" : "", i, sym);
        if (w < 0) break;
        o += (size_t)w < len - o ? (size_t)w : len - o - 1;
    }
    if (e->nc && (e->how & MEMOBS__C_CUT) && o + 1 < len) {
        int w = snprintf(buf + o, len - o, "\n... cut short: bad frame pointer");
        if (w > 0) o += (size_t)w < len - o ? (size_t)w : len - o - 1;
    }
    return o;
}

int memobs_format_trace(char *buf, size_t len, uint32_t trace) {
    const memobs__trace_t *e = memobs__trace_get(trace);
    size_t o;
    if (!e || !buf || len == 0) return MEMOBS_ERR_INVALID;
    o = (size_t)snprintf(buf, len, "%s", e->tag);
    if (o >= len) return (int)(len - 1);
    if (e->np && o + 1 < len) {
        buf[o++] = '\n';
        o += memobs__trace_part(e, 0, buf + o, len - o, NULL);
    }
    if (e->nc && o + 1 < len) {
        buf[o++] = '\n';
        if (e->how & MEMOBS__C_FP) {
            int w = snprintf(buf + o, len - o, "C stack (frame pointers)\n");
            if (w > 0) o += (size_t)w < len - o ? (size_t)w : len - o - 1;
        }
        if (o + 1 < len) o += memobs__trace_part(e, 1, buf + o, len - o, NULL);
    }
    buf[o < len ? o : len - 1] = 0;
    return (int)o;
}

/* Writes s in exactly w display columns (UTF-8 aware: the box drawing
   characters are 3 bytes, 1 column), cut or padded with spaces. */
static void memobs__cell(FILE *f, const char *s, int w) {
    int col = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && col < w) {
        const unsigned char *q = p + 1;
        while ((*q & 0xC0) == 0x80) q++;
        fwrite(p, 1, (size_t)(q - p), f);
        p = q;
        col++;
    }
    for (; col < w; col++) fputc(' ', f);
}

/* Heap sort into the order where first(a, b) means a comes before b (qsort
   may allocate, and a report may run inside an allocator). */
static void memobs__sort(void *base, size_t n, size_t size, int (*first)(const void *, const void *)) {
    unsigned char *a = (unsigned char *)base, tmp[64];
    size_t start = n / 2, end = n;
    if (n < 2 || size > sizeof tmp) return;
    for (;;) {
        size_t root, child;
        if (start > 0) {
            start--;
        } else {
            end--;
            if (end == 0) return;
            memcpy(tmp, a, size);
            memcpy(a, a + end * size, size);
            memcpy(a + end * size, tmp, size);
        }
        for (root = start; (child = 2 * root + 1) < end; root = child) {
            /* the heap's root is the element that belongs last */
            if (child + 1 < end && first(a + child * size, a + (child + 1) * size)) child++;
            if (!first(a + root * size, a + child * size)) break;
            memcpy(tmp, a + root * size, size);
            memcpy(a + root * size, a + child * size, size);
            memcpy(a + child * size, tmp, size);
        }
    }
}

/* Largest first, then by address. */
static int memobs__alloc_first(const void *x, const void *y) {
    const memobs__alloc_t *a = (const memobs__alloc_t *)x, *b = (const memobs__alloc_t *)y;
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->addr < b->addr;
}

typedef struct {
    uint64_t bytes, count, oldest_ns;
    uint32_t trace, kinds; /* kinds: bit mask */
} memobs__group_t;

static int memobs__group_first(const void *x, const void *y) {
    const memobs__group_t *a = (const memobs__group_t *)x, *b = (const memobs__group_t *)y;
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->trace < b->trace;
}

static void memobs__unnamed_hint(FILE *f, int unnamed) {
    if (unnamed)
        fprintf(f, "  frames shown as module+offset are not exported symbols (static functions, libc internals, or "
                "an executable linked without -rdynamic): addr2line -f -e MODULE OFFSET names them\n");
}

static const char *memobs__s(uint64_t n) { return n == 1 ? "" : "s"; }

#define MEMOBS__MIB(b) ((double)(b) / 1048576.0)
#define MEMOBS__ROW_W 120 /* display columns of a table line */

/* Ends a table row whose ASCII columns took used bytes: the TAG cell fills
   the line to MEMOBS__ROW_W columns. */
static void memobs__row_end(FILE *f, int used, const char *tag) {
    memobs__cell(f, tag, used > 0 && used < MEMOBS__ROW_W - 12 ? MEMOBS__ROW_W - 2 - used : 10);
    fputs(" |\n", f);
}

static void memobs__rule(FILE *f) {
    int i;
    for (i = 0; i < MEMOBS__ROW_W; i++) fputc('-', f);
    fputc('\n', f);
}

/* One boxed stack under a table row. */
#define MEMOBS__BOX_W 64 /* display columns of a box's top and bottom lines */

/* Appends count copies of the 3-byte "─" to line (of size len) at n. */
static int memobs__hline(char *line, size_t len, int n, int count) {
    for (; count > 0 && n >= 0 && (size_t)n + 4 < len; count--) n += snprintf(line + n, len - (size_t)n, "─");
    return n;
}

static void memobs__box(FILE *f, const char *title, const char *text) {
    char line[400];
    int n, tw = 0;
    const char *c;
    for (c = title; *c; c++) tw += ((unsigned char)*c & 0xC0) != 0x80; /* display columns */
    n = snprintf(line, sizeof line, "┌─ %.200s ", title);
    memobs__hline(line, sizeof line, n, tw < MEMOBS__BOX_W - 5 ? MEMOBS__BOX_W - 4 - tw : 1); /* 4: corner, dash, spaces */
    fputs("|   ", f);
    memobs__cell(f, line, MEMOBS__ROW_W - 5);
    fputs("|\n", f);
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t k = nl ? (size_t)(nl - text) : strlen(text);
        char row[600];
        snprintf(row, sizeof row, "│    %.*s", (int)(k < 580 ? k : 580), text);
        fputs("|   ", f);
        memobs__cell(f, row, MEMOBS__ROW_W - 5);
        fputs("|\n", f);
        text += k + (nl ? 1 : 0);
    }
    n = snprintf(line, sizeof line, "└");
    memobs__hline(line, sizeof line, n, MEMOBS__BOX_W - 1);
    fputs("|   ", f);
    memobs__cell(f, line, MEMOBS__ROW_W - 5);
    fputs("|\n", f);
}

/* The boxes of a trace (provider stack, then C stack); counts C frames
   without a name into *unnamed. */
static void memobs__trace_boxes(FILE *f, const memobs__trace_t *e, char *buf, size_t len, int *unnamed) {
    if (e->np && memobs__trace_part(e, 0, buf, len, unnamed)) memobs__box(f, MEMOBS__TRK.prov[e->prov - 1].title, buf);
    if (e->nc && memobs__trace_part(e, 1, buf, len, unnamed))
        memobs__box(f, e->how & MEMOBS__C_FP ? "C Stack Trace (frame pointers)" : "C Stack Trace", buf);
}

/* The TAG cell of a trace: its tag, else "[Multi-Line Stack]" when a box
   follows, else "". */
static const char *memobs__tag_cell(const memobs__trace_t *e, int boxed) {
    if (!e) return "";
    if (e->tag[0]) return e->tag;
    return boxed ? "[Multi-Line Stack]" : "[stack above]";
}

static void memobs__trace_cell(uint32_t trace, char *b, size_t len) {
    if (trace == MEMOBS_NO_TRACE) b[0] = 0;
    else snprintf(b, len, "%u", (unsigned)trace);
}

/* Block table of n sorted allocations: at most rows of them (0 = all),
   the rest summed; each stack boxed under its first row. */
static void memobs__write_blocks(FILE *f, const memobs__alloc_t *a, size_t n, int rows, int *unnamed) {
    static const char *const phase_name[3] = {"unphased", "prefill", "decode"};
    unsigned char *shown = NULL;
    uint32_t ntr = __atomic_load_n(&MEMOBS__TRK.ntraces.v, __ATOMIC_ACQUIRE);
    char *buf = (char *)MEMOBS_MALLOC(8192);
    size_t i, lim = rows > 0 && (size_t)rows < n ? (size_t)rows : n;
    uint64_t rest = 0;
    if (ntr) shown = (unsigned char *)MEMOBS_MALLOC(ntr);
    if (shown) memset(shown, 0, ntr);
    memobs__rule(f);
    memobs__row_end(f, fprintf(f, "| %18s | %12s (%10s) | %-7s | %3s | %-8s | %5s | ", "ADDR", "size", "MiB", "KIND",
                               "DEV", "PHASE", "TRACE"), "TAG");
    memobs__rule(f);
    for (i = 0; i < lim; i++) {
        const memobs__trace_t *e = memobs__trace_get(a[i].trace);
        int box = e && (e->np || e->nc) && shown && buf && !shown[a[i].trace];
        unsigned ph = a[i].phase & ~MEMOBS__PENDING;
        char tr[16], dev[8], tag[96];
        memobs__trace_cell(a[i].trace, tr, sizeof tr);
        snprintf(tag, sizeof tag, "%s%s", a[i].phase & MEMOBS__PENDING ? "(free pending) " : "",
                 memobs__tag_cell(e, box || !e || !(e->np || e->nc)));
        if (a[i].device < 0) snprintf(dev, sizeof dev, "-");
        else snprintf(dev, sizeof dev, "%d", (int)a[i].device);
        memobs__row_end(f, fprintf(f, "| 0x%016llx | %12llu (%10.2f) | %-7s | %3s | %-8s | %5s | ",
                                   (unsigned long long)a[i].addr, (unsigned long long)a[i].bytes,
                                   MEMOBS__MIB(a[i].bytes), memobs__kind_name[a[i].kind], dev,
                                   phase_name[ph < 3 ? ph : 0], tr),
                        tag);
        if (box) {
            shown[a[i].trace] = 1;
            memobs__trace_boxes(f, e, buf, 8192, unnamed);
        }
    }
    if (lim < n) {
        char more[96];
        for (i = lim; i < n; i++) rest += a[i].bytes;
        snprintf(more, sizeof more, "... %llu more allocation%s, %llu bytes (%.2f MiB)",
                 (unsigned long long)(n - lim), memobs__s(n - lim), (unsigned long long)rest, MEMOBS__MIB(rest));
        fputs("| ", f);
        memobs__cell(f, more, MEMOBS__ROW_W - 4);
        fputs(" |\n", f);
    }
    memobs__rule(f);
    if (buf) MEMOBS_FREE(buf);
    if (shown) MEMOBS_FREE(shown);
}

/* Groups n allocations by trace into grp (ntr + 1 entries: the last is
   "no trace"); returns the groups that hold any, largest first. Shared by
   the text report and the HTML report. */
static uint32_t memobs__group_by_trace(memobs__group_t *grp, uint32_t ntr, const memobs__alloc_t *a, size_t n,
                                       uint64_t now) {
    uint32_t g, ng = 0;
    size_t i;
    for (g = 0; g <= ntr; g++) {
        grp[g].bytes = grp[g].count = grp[g].oldest_ns = 0;
        grp[g].trace = g < ntr ? g : MEMOBS_NO_TRACE;
        grp[g].kinds = 0;
    }
    for (i = 0; i < n; i++) {
        memobs__group_t *x = &grp[a[i].trace < ntr ? a[i].trace : ntr];
        uint64_t age = now > a[i].time_ns ? now - a[i].time_ns : 0;
        x->bytes += a[i].bytes;
        x->count++;
        x->kinds |= 1u << a[i].kind;
        if (age > x->oldest_ns) x->oldest_ns = age;
    }
    for (g = 0; g <= ntr; g++)
        if (grp[g].count) grp[ng++] = grp[g];
    memobs__sort(grp, ng, sizeof *grp, memobs__group_first);
    return ng;
}

/* Live bytes per trace of n allocations, largest first. */
static void memobs__write_groups(FILE *f, const memobs__alloc_t *a, size_t n, int rows, int *unnamed) {
    uint32_t ntr = __atomic_load_n(&MEMOBS__TRK.ntraces.v, __ATOMIC_ACQUIRE), g, ng = 0;
    memobs__group_t *grp = (memobs__group_t *)MEMOBS_MALLOC((ntr + 1) * sizeof *grp);
    char *buf = (char *)MEMOBS_MALLOC(8192);
    uint64_t now = memobs__coarse_ns(), rest = 0, restn = 0;
    if (!grp || !buf) {
        fputs("  (no memory for the per-trace table)\n", f);
        if (grp) MEMOBS_FREE(grp);
        if (buf) MEMOBS_FREE(buf);
        return;
    }
    ng = memobs__group_by_trace(grp, ntr, a, n, now);
    memobs__rule(f);
    memobs__row_end(f, fprintf(f, "| %5s | %12s (%10s) | %7s | %-14s | %11s | ", "TRACE", "bytes", "MiB", "count",
                               "KINDS", "OLDEST"), "TAG");
    memobs__rule(f);
    for (g = 0; g < ng; g++) {
        const memobs__trace_t *e = memobs__trace_get(grp[g].trace);
        char tr[16], kinds[40], age[32];
        unsigned k;
        int o = 0;
        if (rows > 0 && g >= (uint32_t)rows) {
            rest += grp[g].bytes;
            restn += grp[g].count;
            continue;
        }
        kinds[0] = 0;
        for (k = 0; k < MEMOBS_MEM_KINDS; k++)
            if (grp[g].kinds & (1u << k))
                o += snprintf(kinds + o, sizeof kinds - (size_t)o, "%s%s", o ? "," : "", memobs__kind_name[k]);
        memobs__trace_cell(grp[g].trace, tr, sizeof tr);
        memobs__row_end(f, fprintf(f, "| %5s | %12llu (%10.2f) | %7llu | %-14s | %11s | ", tr,
                                   (unsigned long long)grp[g].bytes, MEMOBS__MIB(grp[g].bytes),
                                   (unsigned long long)grp[g].count, kinds,
                                   memobs_format_ns(age, sizeof age, grp[g].oldest_ns)),
                        e ? memobs__tag_cell(e, 1) : "(no tag, no stack)");
        if (e) memobs__trace_boxes(f, e, buf, 8192, unnamed);
    }
    if (rows > 0 && ng > (uint32_t)rows) {
        char more[96];
        snprintf(more, sizeof more, "... %u more trace%s: %llu allocation%s, %llu bytes (%.2f MiB)",
                 (unsigned)(ng - (uint32_t)rows), memobs__s(ng - (uint32_t)rows), (unsigned long long)restn,
                 memobs__s(restn), (unsigned long long)rest, MEMOBS__MIB(rest));
        fputs("| ", f);
        memobs__cell(f, more, MEMOBS__ROW_W - 4);
        fputs(" |\n", f);
    }
    memobs__rule(f);
    MEMOBS_FREE(grp);
    MEMOBS_FREE(buf);
}

enum { MEMOBS__REP_BLOCKS = 1, MEMOBS__REP_GROUPS = 2, MEMOBS__REP_LEAKS = 4 };

static int memobs__rank(void) {
    memobs_identity_t id;
    memobs_get_identity(&id);
    return (int)id.rank;
}

/* Snapshot (filtered to one device's device memory when device >= 0),
   sorted largest first. *n is the number kept; NULL when none or no memory. */
static memobs__alloc_t *memobs__report_snapshot(int device, size_t *n) {
    size_t cap, live, i, k = 0;
    memobs__alloc_t *a;
    *n = 0;
    if (MEMOBS__LOAD(&MEMOBS__TRK.ready.v) != 1) return NULL;
    cap = memobs__trk_live() + 1024; /* room for allocations made meanwhile */
    if (cap > MEMOBS__TRK.capacity) cap = MEMOBS__TRK.capacity;
    a = (memobs__alloc_t *)MEMOBS_MALLOC(cap * sizeof *a);
    if (!a) return NULL;
    live = memobs__trk_snapshot(a, cap);
    if (live > cap) live = cap;
    for (i = 0; i < live; i++)
        if (device < 0 || (a[i].kind == MEMOBS_MEM_DEVICE && a[i].device == device)) a[k++] = a[i];
    memobs__sort(a, k, sizeof *a, memobs__alloc_first);
    *n = k;
    return a;
}

/* Header line of live bytes by kind: "device 1.07 GB in 3, pinned ...". */
static void memobs__kinds_line(FILE *f, const memobs__alloc_t *a, size_t n) {
    uint64_t b[MEMOBS_MEM_KINDS] = {0, 0, 0, 0}, c[MEMOBS_MEM_KINDS] = {0, 0, 0, 0};
    size_t i;
    unsigned k, o = 0;
    for (i = 0; i < n; i++) b[a[i].kind] += a[i].bytes, c[a[i].kind]++;
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
        if (!c[k]) continue;
        fprintf(f, "%s%s %llu bytes (%.2f MiB) in %llu", o++ ? ", " : "", memobs__kind_name[k],
                (unsigned long long)b[k], MEMOBS__MIB(b[k]), (unsigned long long)c[k]);
    }
}

static int memobs__alloc_report(FILE *f, unsigned what) {
    size_t n = 0, i;
    memobs__alloc_t *a;
    uint64_t total = 0, untracked = MEMOBS__LOAD(&MEMOBS__TRK.untracked_live.v);
    uint32_t busy = memobs__tls.busy;
    int unnamed = 0, rows;
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "allocation report: NULL FILE");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    memobs__tls.busy = 1;
    rows = MEMOBS__TRK.rows;
    a = memobs__report_snapshot(-1, &n);
    for (i = 0; i < n; i++) total += a[i].bytes;
    fprintf(f, "== memobs %s == rank %d pid %lld: ", what & MEMOBS__REP_LEAKS ? "leak report" :
            what & MEMOBS__REP_BLOCKS ? "allocations" : "allocations by trace", memobs__rank(),
            (long long)getpid());
    if (n == 0) {
        fprintf(f, "%s\n", MEMOBS__LOAD(&MEMOBS__TRK.used.v) ? "no tracked allocation is live" :
                "no allocation was tracked");
    } else {
        fprintf(f, "%llu allocation%s%s, %llu bytes (%.2f MiB): ", (unsigned long long)n, memobs__s(n),
                what & MEMOBS__REP_LEAKS ? " still live" : " live", (unsigned long long)total, MEMOBS__MIB(total));
        memobs__kinds_line(f, a, n);
        fputc('\n', f);
        if (what & MEMOBS__REP_BLOCKS) memobs__write_blocks(f, a, n, rows, &unnamed);
        if (what & (MEMOBS__REP_GROUPS | MEMOBS__REP_LEAKS)) memobs__write_groups(f, a, n, rows, &unnamed);
    }
    if (untracked)
        fprintf(f, "  + %llu allocation%s not in the table (it was full: raise MEMOBS_TRACK_CAPACITY)\n",
                (unsigned long long)untracked, memobs__s(untracked));
    memobs__unnamed_hint(f, unnamed);
    if (a) MEMOBS_FREE(a);
    memobs__tls.busy = busy;
    if (fflush(f) != 0 || ferror(f)) return MEMOBS_ERR_IO;
    return MEMOBS_OK;
}

int memobs_print_allocations(FILE *f) { return memobs__alloc_report(f, MEMOBS__REP_BLOCKS); }
int memobs_print_alloc_groups(FILE *f) { return memobs__alloc_report(f, MEMOBS__REP_GROUPS); }
int memobs_print_leaks(FILE *f) { return memobs__alloc_report(f, MEMOBS__REP_LEAKS); }

/* Written by the allocating thread that moved a device past its threshold. */
static void memobs__peak_report(int device, uint64_t now_max, uint64_t prev, uint32_t trace) {
    char dest[sizeof MEMOBS__TRK.peak_dest], tr[16];
    size_t n = 0, i;
    memobs__alloc_t *a;
    uint64_t total = 0;
    int unnamed = 0;
    memobs__append_t ap;
    FILE *f;
    memobs__tls.busy = 1;
    pthread_mutex_lock(&memobs__g.lock);
    memcpy(dest, MEMOBS__TRK.peak_dest, sizeof dest);
    pthread_mutex_unlock(&memobs__g.lock);
    f = memobs__append_begin(&ap, dest, "peak report");
    if (f) {
        a = memobs__report_snapshot(device, &n);
        for (i = 0; i < n; i++) total += a[i].bytes;
        memobs__trace_cell(trace, tr, sizeof tr);
        fprintf(f, "memobs: [rank %d] device %d tracked memory reached new maximum %llu bytes (%.2f MiB), previous is "
                "%llu bytes (%.2f MiB), current trace id [%s]\n", memobs__rank(), device,
                (unsigned long long)now_max, MEMOBS__MIB(now_max), (unsigned long long)prev, MEMOBS__MIB(prev),
                tr[0] ? tr : "-");
        fprintf(f, "  memobs tracker: device %d: %llu live allocation%s, %llu bytes (%.2f MiB)\n", device,
                (unsigned long long)n, memobs__s(n), (unsigned long long)total, MEMOBS__MIB(total));
        if (n) {
            memobs__write_blocks(f, a, n, MEMOBS__TRK.rows, &unnamed);
            memobs__write_groups(f, a, n, MEMOBS__TRK.rows, &unnamed);
        }
        memobs__unnamed_hint(f, unnamed);
        if (a) MEMOBS_FREE(a);
        (void)memobs__append_end(&ap);
    }
    memobs__tls.busy = 0;
}

/* ======================================================================== */
/* Private: PyTorch memory snapshot                              >>snapshot */
/* ======================================================================== */

#ifndef MEMOBS_NO_TORCH_SNAPSHOT

/* Per device, a ring of the newest device allocation records under a spin
   lock of its own (a leaf: nothing else is taken while it is held). A
   thread with a shard of its own writes its records into its stage
   (memobs__tsn_stage_t, the third part of its shard's block) with no lock
   and no atomic read-modify-write, and moves them into their rings when
   the stage is full, each run of one device's records under one take of
   its ring's lock: two threads allocating on one device meet at the ring
   once per MEMOBS__TSN_STAGE records, never at each. A thread without a
   shard of its own writes into the ring under its lock. A free is one
   record (MEMOBS__TSN_FREE_BOTH) that stands for its two events,
   free_requested and free_completed, at one time; whatever counts or
   copies out events counts it as two. The tracker pushes after its stripe
   lock is released, before the call returns, so a free's record comes
   before any reuse of its address.
   A record's time is the timeline's clock (memobs__ticks: the TSC, about
   a third of a clock_gettime), read as it is written: a stage, and one
   thread's records in a ring, are in time order. A snapshot turns it into
   PyTorch's time_us when it copies the ring out.

   Every reader gathers first (memobs__tsn_gather): it takes every ring's
   lock, in device order, moves what each thread has staged ([f, n) of its
   stage) into the rings, reads, and lets go. The owner publishes a record
   by storing n with release once it is written (a gather reads n with
   acquire); it changes f, and n other than by a push, only under a ring
   lock, so nothing a gather moves changes under it. A push that happened
   before the gather began (ended before something the reader's thread
   synchronised with) is then in a ring: a cut that never shows an address
   reused without the free that came before it. One thread's records reach
   a ring in the order they happened; two threads' batches interleave, so
   the snapshot sorts what it copies out by time (a stable sort: a free's
   two events share one time). A full ring drops the records that reached
   it first: with one thread the oldest events, with several the oldest
   but for a thread's last MEMOBS__TSN_STAGE, which may reach the ring
   after newer ones of another thread. A ring of cap records holds cap
   events at least; readers show the newest cap (of a free's record on the
   edge, its free_completed alone), so that the counts and the events are
   those of a ring of cap events.
   A push counts itself in memobs__tls.in: a signal handler's tracker call
   that interrupts it does nothing (memobs__trk_nested), so no handler
   writes into the stage its thread is writing. */

typedef struct {
    /* Read by every push, written when the ring is made or remade: a
       line of its own, away from the one each record's move into the
       ring writes (another thread's push would take that line back from
       the mover at every record moved). */
    memobs__u32_t state;   /* 0: no ring yet, 1: ready, 2: no history (capacity 0, no memory) */
    memobs__u32_t lock __attribute__((aligned(64)));
    memobs__tsn_ev_t *ev;  /* cap slots */
    uint64_t cap;
    uint64_t n;            /* the next record's number; slot n % cap */
    uint64_t pos;          /* n % cap, kept so that a push divides nothing */
    uint64_t kept;         /* records [n - kept, n) are in the ring */
    uint64_t events;       /* events recorded: the shown ones (memobs__tsn_shown) and those dropped */
} __attribute__((aligned(64))) memobs__tsn_ring_t;

static struct {
    memobs__u64_t cap_plus1;  /* MEMOBS_TORCH_EVENTS + 1 from the environment; 0: the default */
    memobs__u64_t run_plus1;  /* the capacity of the last start + 1; 0: none yet */
    memobs__u32_t ctl;        /* a spin lock: one start or stop at a time */
    memobs__u32_t warned;     /* the snapshot's "no history" warning was logged */
    memobs__tsn_ring_t ring[MEMOBS_MAX_DEVICES];
} memobs__tsn;

/* The events a record stands for. */
#define MEMOBS__TSN_EVENTS(e) ((e)->action == MEMOBS__TSN_FREE_BOTH ? 2u : 1u)

/* MEMOBS_TORCH_EVENTS (the environment's, else the compiled default). */
static uint64_t memobs__tsn_cap_env(void) {
    uint64_t c = MEMOBS__LOAD(&memobs__tsn.cap_plus1.v);
    return c ? c - 1 : (uint64_t)MEMOBS_TORCH_EVENTS;
}

/* The capacity a ring is made with: the last start's, else the above. */
static uint64_t memobs__tsn_cap(void) {
    uint64_t c = MEMOBS__LOAD(&memobs__tsn.run_plus1.v);
    return c ? c - 1 : memobs__tsn_cap_env();
}

/* 1 when the device's ring is ready (made now if need be). */
static int memobs__tsn_ready(memobs__tsn_ring_t *r) {
    uint32_t st = __atomic_load_n(&r->state.v, __ATOMIC_ACQUIRE), busy;
    uint64_t cap;
    memobs__tsn_ev_t *ev = NULL;
    if (MEMOBS__LIKELY(st == 1)) return 1;
    if (st == 2) return 0;
    memobs__clk_init(); /* the clock's source is chosen before the first event's tick */
    cap = memobs__tsn_cap();
    if (cap) {
        busy = memobs__tls.busy;
        memobs__tls.busy = 1; /* MEMOBS_MALLOC may be an allocator the tracker watches */
        ev = (memobs__tsn_ev_t *)MEMOBS_MALLOC((size_t)cap * sizeof *ev);
        memobs__tls.busy = busy;
        if (!ev) memobs__log(MEMOBS_LOG_WARN, "cannot allocate the snapshot history's %llu events; this device "
                             "has none", (unsigned long long)cap);
    }
    memobs__spin_lock(&r->lock);
    if (MEMOBS__LOAD(&r->state.v) == 0 && cap == memobs__tsn_cap()) {
        r->ev = ev;
        r->cap = cap;
        ev = NULL;
        __atomic_store_n(&r->state.v, r->ev ? 1u : 2u, __ATOMIC_RELEASE);
    }
    st = MEMOBS__LOAD(&r->state.v);
    memobs__spin_unlock(&r->lock);
    if (ev) {
        busy = memobs__tls.busy;
        memobs__tls.busy = 1;
        MEMOBS_FREE(ev); /* another thread made the ring first */
        memobs__tls.busy = busy;
    }
    return st == 0 ? memobs__tsn_ready(r) : st == 1; /* 0: a start changed the capacity meanwhile */
}

/* CLOCK_REALTIME less CLOCK_MONOTONIC now, in ns: ticks, once turned into
   CLOCK_MONOTONIC ns, plus this are PyTorch's time since the epoch. */
static int64_t memobs__tsn_epoch_ns(void) {
    uint64_t best = ~(uint64_t)0, rt = 0, mono = 0;
    int i;
    for (i = 0; i < 3; i++) { /* the realtime read closest to its monotonic pair */
        uint64_t a = memobs_now_ns(), w = memobs__realtime_ns(), b = memobs_now_ns();
        if (b - a < best) {
            best = b - a;
            rt = w;
            mono = a + (b - a) / 2;
        }
    }
    return (int64_t)(rt - mono);
}

/* The events copied out of a ring: ticks to microseconds since the epoch,
   as PyTorch's time_us. */
static void memobs__tsn_times(memobs__tsn_ev_t *ev, uint64_t n) {
    int64_t epoch;
    uint64_t i;
    if (!n) return;
    memobs__clk_sync(); /* the slope (the first waits out its 2 ms) */
    epoch = memobs__tsn_epoch_ns();
    for (i = 0; i < n; i++) ev[i].time = (uint64_t)((int64_t)memobs__clk_ns(ev[i].time) + epoch) / 1000u;
}

/* Sorts n events by time, stably (a free's two events share one time): a
   bottom-up merge through a copy of n events, after a check that finds one
   thread's history in order already. MEMOBS_ERR_NOMEM without the copy. */
static int memobs__tsn_sort(memobs__tsn_ev_t *ev, uint64_t n) {
    memobs__tsn_ev_t *from = ev, *to, *t, *tmp;
    uint64_t w, i, a, b, m, e, o;
    for (i = 1; i < n && ev[i - 1].time <= ev[i].time; i++) {
    }
    if (i >= n) return MEMOBS_OK;
    if (!(tmp = to = (memobs__tsn_ev_t *)MEMOBS_MALLOC((size_t)n * sizeof *tmp))) return MEMOBS_ERR_NOMEM;
    for (w = 1; w < n; w *= 2) {
        for (i = 0; i < n; i += 2 * w) {
            a = o = i;
            m = b = i + w < n ? i + w : n;
            e = i + 2 * w < n ? i + 2 * w : n;
            while (a < m && b < e) to[o++] = from[b].time < from[a].time ? from[b++] : from[a++];
            while (a < m) to[o++] = from[a++];
            while (b < e) to[o++] = from[b++];
        }
        t = from;
        from = to;
        to = t;
    }
    if (from != ev) memcpy(ev, from, (size_t)n * sizeof *ev);
    MEMOBS_FREE(tmp);
    return MEMOBS_OK;
}

/* Caller holds r->lock: the next record's slot, for a record of w events.
   It never reads the record it overwrites (what a reader wants of the
   kept ones, it counts: memobs__tsn_held): that slot's line was often
   written last by another thread, and a read of it would wait. */
static memobs__tsn_ev_t *memobs__tsn_slot(memobs__tsn_ring_t *r, unsigned w) {
    memobs__tsn_ev_t *e = &r->ev[r->pos];
    if (++r->pos == r->cap) r->pos = 0;
    r->n++;
    if (r->kept < r->cap) r->kept++;
    r->events += w;
    return e;
}

/* Caller holds r->lock: the events the kept records stand for, counted
   when read (a push keeps no such count: see memobs__tsn_slot). */
static uint64_t memobs__tsn_held(const memobs__tsn_ring_t *r) {
    uint64_t k, i, h = r->kept;
    if (!r->kept) return 0;
    for (k = 0, i = (r->n - r->kept) % r->cap; k < r->kept; k++, i = i + 1 == r->cap ? 0 : i + 1)
        h += r->ev[i].action == MEMOBS__TSN_FREE_BOTH;
    return h;
}

/* Caller holds r->lock: the events a reader shows, the newest cap of
   those the ring holds. */
static uint64_t memobs__tsn_shown(const memobs__tsn_ring_t *r) {
    uint64_t h = memobs__tsn_held(r);
    return h < r->cap ? h : r->cap;
}

/* Caller holds r->lock: the events shown (memobs__tsn_shown), the newest
   max at most, oldest first, each free's record as its two events (where
   only the second is shown, that one), into out; returns how many. */
static uint64_t memobs__tsn_copy(const memobs__tsn_ring_t *r, memobs__tsn_ev_t *out, uint64_t max) {
    uint64_t n = memobs__tsn_shown(r), o, k;
    n = n < max ? n : max;
    o = n;
    for (k = r->n; o > 0; k--) {
        const memobs__tsn_ev_t *e = &r->ev[(k - 1) % r->cap];
        out[--o] = *e;
        if (e->action != MEMOBS__TSN_FREE_BOTH) continue;
        out[o].action = MEMOBS__TSN_FREE_DONE;
        if (o == 0) break;
        out[--o] = *e;
        out[o].action = MEMOBS__TSN_FREE_REQ;
    }
    return n;
}

/* Caller holds r->lock (the ring of device dev): g's records from f on,
   up to the first of another device or n, into r; returns where they end. */
static uint32_t memobs__tsn_run(memobs__tsn_stage_t *g, uint32_t f, uint32_t n, memobs__tsn_ring_t *r, unsigned dev) {
    for (; f < n && g->ev[f].dev == dev; f++) *memobs__tsn_slot(r, MEMOBS__TSN_EVENTS(&g->ev[f])) = g->ev[f];
    return f;
}

/* The owner of g (or its thread's exit): what g holds into the rings,
   in order, each run of one device's records under one take of its
   ring's lock, and g emptied under the last (device 0's where a gather
   had moved them all). */
static void memobs__tsn_flush(memobs__tsn_stage_t *g) {
    uint32_t n = MEMOBS__LOAD(&g->n.v), f;
    unsigned dev;
    for (;;) {
        f = MEMOBS__LOAD(&g->f.v);
        dev = f < n ? g->ev[f].dev : 0u;
        memobs__spin_lock(&memobs__tsn.ring[dev].lock);
        f = MEMOBS__LOAD(&g->f.v); /* again, under the lock: a gather may have moved them */
        if (f < n && g->ev[f].dev == dev) f = memobs__tsn_run(g, f, n, &memobs__tsn.ring[dev], dev);
        MEMOBS__STORE(&g->f.v, f < n ? f : 0u);
        if (f >= n) MEMOBS__STORE(&g->n.v, 0u);
        memobs__spin_unlock(&memobs__tsn.ring[dev].lock);
        if (f >= n) return;
    }
}

/* Every ring's lock, in device order (lock 1), or let go (lock 0). */
static void memobs__tsn_lock_all(int lock) {
    unsigned d;
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        if (lock) memobs__spin_lock(&memobs__tsn.ring[d].lock);
        else memobs__spin_unlock(&memobs__tsn.ring[MEMOBS_MAX_DEVICES - 1 - d].lock);
    }
}

/* Takes (lock 1) every ring's lock and moves what every thread has
   staged into the rings; lock 0 lets them go. */
static void memobs__tsn_gather(int lock) {
    memobs__shard_t *s;
    memobs__tsn_stage_t *g;
    uint32_t f, n;
    memobs__tsn_lock_all(lock);
    if (!lock) return;
    for (s = __atomic_load_n(&memobs__g.shards, __ATOMIC_ACQUIRE); s; s = s->next) {
        if (s->shared) continue;
        g = MEMOBS__TSN_OF(s);
        n = __atomic_load_n(&g->n.v, __ATOMIC_ACQUIRE); /* the records up to n are written */
        for (f = MEMOBS__LOAD(&g->f.v); f < n;)
            f = memobs__tsn_run(g, f, n, &memobs__tsn.ring[g->ev[f].dev], g->ev[f].dev);
        MEMOBS__STORE(&g->f.v, f);
    }
}

/* Thread exit (memobs__shard_release): its staged records go to the rings. */
static void memobs__tsn_leave(memobs__shard_t *s) {
    if (!s->shared && MEMOBS__LOAD(&MEMOBS__TSN_OF(s)->n.v) != 0) memobs__tsn_flush(MEMOBS__TSN_OF(s));
}

static void memobs__tsn_fill(memobs__tsn_ev_t *e, unsigned action, int device, uint64_t addr, uint64_t bytes,
                             const void *stream, uint32_t trace) {
    e->addr = addr;
    e->bytes = bytes;
    e->stream = stream;
    e->trace = trace;
    e->action = (uint16_t)action;
    e->dev = (uint16_t)device;
    e->time = memobs__ticks();
}

/* A record of a device allocation (the tracker calls it for device kind
   only): an event, or MEMOBS__TSN_FREE_BOTH's two. Into the thread's
   stage (a thread with no shard of its own: into the ring, under its
   lock). */
static void memobs__tsn_push(int device, unsigned action, uint64_t addr, uint64_t bytes, const void *stream,
                             uint32_t trace) {
    memobs__tsn_ring_t *r;
    memobs__shard_t *s = memobs__tls.shard;
    memobs__tsn_stage_t *g;
    uint32_t i;
    if (device < 0 || device >= MEMOBS_MAX_DEVICES) return;
    r = &memobs__tsn.ring[device];
    if (!memobs__tsn_ready(r)) return;
    if (!s || s->shared) {
        memobs__spin_lock(&r->lock);
        memobs__tsn_fill(memobs__tsn_slot(r, action == MEMOBS__TSN_FREE_BOTH ? 2u : 1u), action, device, addr,
                         bytes, stream, trace);
        memobs__spin_unlock(&r->lock);
        return;
    }
    g = MEMOBS__TSN_OF(s);
    memobs__tls.in++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    i = MEMOBS__LOAD(&g->n.v);
    if (i == MEMOBS__TSN_STAGE) {
        memobs__tsn_flush(g);
        i = 0;
    }
    memobs__tsn_fill(&g->ev[i], action, device, addr, bytes, stream, trace);
    __atomic_store_n(&g->n.v, i + 1, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memobs__tls.in--;
}

/* A pending mark taken back (memobs_cuda.h: the runtime's free failed,
   on the thread that marked it): the block's newest event, if it is that
   free_requested, is removed, from the thread's stage, or from the ring
   (the records after it there move down one; on a full ring the slot
   it leaves may let a reader show one older event, and count one fewer
   dropped, than a ring of events would have). Under the ring's lock: no
   gather moves the stage meanwhile. */
static void memobs__tsn_unrequest(int device, uint64_t addr) {
    memobs__tsn_ring_t *r;
    memobs__shard_t *s = memobs__tls.shard;
    memobs__tsn_stage_t *g = s && !s->shared ? MEMOBS__TSN_OF(s) : NULL;
    uint64_t k, i;
    uint32_t j, f, n;
    if (device < 0 || device >= MEMOBS_MAX_DEVICES) return;
    r = &memobs__tsn.ring[device];
    if (__atomic_load_n(&r->state.v, __ATOMIC_ACQUIRE) != 1) return;
    memobs__spin_lock(&r->lock);
    if (g) {
        n = MEMOBS__LOAD(&g->n.v);
        f = MEMOBS__LOAD(&g->f.v);
        for (j = n; j > f; j--) {
            if (g->ev[j - 1].dev != (uint16_t)device || g->ev[j - 1].addr != addr) continue;
            if (g->ev[j - 1].action == MEMOBS__TSN_FREE_REQ) {
                for (; j < n; j++) g->ev[j - 1] = g->ev[j];
                MEMOBS__STORE(&g->n.v, n - 1);
            }
            memobs__spin_unlock(&r->lock);
            return;
        }
    }
    for (k = r->n; k > r->n - r->kept; k--) {
        memobs__tsn_ev_t *e = &r->ev[(k - 1) % r->cap];
        if (e->addr != addr) continue;
        if (e->action == MEMOBS__TSN_FREE_REQ) {
            for (i = k - 1; i + 1 < r->n; i++) r->ev[i % r->cap] = r->ev[(i + 1) % r->cap];
            r->n--;
            r->kept--;
            r->events--;
            r->pos = r->pos ? r->pos - 1 : r->cap - 1;
        }
        break;
    }
    memobs__spin_unlock(&r->lock);
}

/* fork(): the start/stop lock, then every ring's lock, are held across
   it (taken last, released first). A push in another thread has then
   written its record and n, or not n (the child has no such record). */
static void memobs__tsn_fork(int lock) {
    if (lock) memobs__spin_lock(&memobs__tsn.ctl);
    memobs__tsn_lock_all(lock);
    if (!lock) memobs__spin_unlock(&memobs__tsn.ctl);
}

int memobs_get_torch_history(int device, memobs_torch_history_t *out) {
    memobs__tsn_ring_t *r;
    if (out) memset(out, 0, sizeof *out);
    if (!out || device < 0 || device >= MEMOBS_MAX_DEVICES) return MEMOBS_ERR_INVALID;
    r = &memobs__tsn.ring[device];
    memobs__tsn_gather(1);
    out->kept = memobs__tsn_shown(r);
    out->dropped = r->events - out->kept;
    out->recorded = r->events;
    out->capacity = MEMOBS__LOAD(&r->state.v) == 0 ? memobs__tsn_cap() : r->cap;
    memobs__tsn_gather(0);
    out->recording = MEMOBS__TSN_ON() ? 1 : 0;
    return MEMOBS_OK;
}

/* The highest events a ring may hold (40 bytes each: 640 MiB). */
#define MEMOBS__TSN_MAX ((uint64_t)1 << 24)

/* Caller holds memobs__tsn.ctl and every ring's lock, after a gather (no
   record of a thread's stage is still to come for it): ring r, ready,
   made anew in ev, cap events, with the newest of the events it shows
   that fit, each record at its slot n % cap; returns the old array. The
   records that hold them, newest first; a free's record with one event
   too many keeps its free_completed alone, as a reader showed it, so an
   event once dropped never shows again (r->events less held are dropped). */
static memobs__tsn_ev_t *memobs__tsn_resize(memobs__tsn_ring_t *r, uint64_t cap, memobs__tsn_ev_t *ev) {
    memobs__tsn_ev_t *old = r->ev;
    uint64_t keep, held, want = memobs__tsn_shown(r);
    want = want < cap ? want : cap;
    for (keep = held = 0; held < want; keep++) {
        memobs__tsn_ev_t *e = &ev[(r->n - 1 - keep) % cap];
        *e = r->ev[(r->n - 1 - keep) % r->cap];
        held += MEMOBS__TSN_EVENTS(e);
        if (held > want) {
            e->action = MEMOBS__TSN_FREE_DONE;
            held = want;
        }
    }
    r->kept = keep;
    r->ev = ev;
    r->cap = cap;
    r->pos = r->n % cap;
    return old;
}

/* Recording on with rings of cap events (memobs__tsn_cap from now on): a
   ready ring of another size is made anew (memobs__tsn_resize), one with
   no history (capacity 0, or no memory) is made again at its next event.
   The new rings are allocated first, then every thread's staged records
   are gathered into the old ones, which are copied while the gather holds
   every ring. r->cap changes only here, under ctl; a ring made meanwhile
   (memobs__tsn_ready) is made with the new capacity. */
static int memobs__tsn_start(uint64_t cap) {
    memobs__tsn_ev_t *ev[MEMOBS_MAX_DEVICES];
    uint32_t busy = memobs__tls.busy;
    int d, rc = MEMOBS_OK;
    memobs__spin_lock(&memobs__tsn.ctl);
    MEMOBS__STORE(&memobs__tsn.run_plus1.v, cap + 1);
    memobs__tls.busy = 1; /* MEMOBS_MALLOC may be an allocator the tracker watches */
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        memobs__tsn_ring_t *r = &memobs__tsn.ring[d];
        ev[d] = NULL;
        if (__atomic_load_n(&r->state.v, __ATOMIC_ACQUIRE) == 1 && r->cap != cap &&
            !(ev[d] = (memobs__tsn_ev_t *)MEMOBS_MALLOC((size_t)cap * sizeof *ev[d])))
            rc = MEMOBS_ERR_NOMEM;
    }
    memobs__tsn_gather(1);
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        memobs__tsn_ring_t *r = &memobs__tsn.ring[d];
        if (MEMOBS__LOAD(&r->state.v) == 2) __atomic_store_n(&r->state.v, 0u, __ATOMIC_RELEASE);
        if (ev[d]) ev[d] = memobs__tsn_resize(r, cap, ev[d]);
    }
    memobs__tsn_gather(0);
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++)
        if (ev[d]) MEMOBS_FREE(ev[d]);
    memobs__tls.busy = busy;
    __atomic_store_n(&memobs__tsn_on.v, 3u, __ATOMIC_RELEASE);
    memobs__spin_unlock(&memobs__tsn.ctl);
    if (rc != MEMOBS_OK)
        memobs__log(MEMOBS_LOG_WARN, "memobs_torch_history_start(%llu): no memory for a ring of that size; a device "
                    "keeps its ring as it was", (unsigned long long)cap);
    return rc;
}

int memobs_torch_history_start(uint64_t max_events) {
    uint64_t cap;
    memobs_init();
#ifdef MEMOBS_DISABLE
    (void)max_events, (void)cap, (void)memobs__tsn_start;
    return MEMOBS_OK;
#else
    cap = max_events ? max_events : memobs__tsn_cap_env();
    if (max_events > MEMOBS__TSN_MAX || !cap) {
        if (cap)
            memobs__log(MEMOBS_LOG_WARN, "memobs_torch_history_start(%llu): at most %llu events per device; unchanged",
                        (unsigned long long)max_events, (unsigned long long)MEMOBS__TSN_MAX);
        else
            memobs__log(MEMOBS_LOG_WARN, "memobs_torch_history_start(0): MEMOBS_TORCH_EVENTS=0 keeps no events: pass "
                        "a count; unchanged");
        return MEMOBS_ERR_INVALID;
    }
    return memobs__tsn_start(cap);
#endif
}

int memobs_torch_history_stop(void) {
    memobs_init();
    memobs__spin_lock(&memobs__tsn.ctl);
    __atomic_store_n(&memobs__tsn_on.v, MEMOBS__LOAD(&memobs__tsn_on.v) & ~1u, __ATOMIC_RELEASE);
    memobs__spin_unlock(&memobs__tsn.ctl);
    return MEMOBS_OK;
}

/* The pickle writer: only the opcodes of PyTorch's viewer (see the
   declaration). Constant strings and each trace's frames list and tag are
   written once and memoized (BINPUT), then fetched (BINGET). */
enum {
    MEMOBS__PK_SEGMENTS, MEMOBS__PK_DEVICE_TRACES, MEMOBS__PK_DEVICE, MEMOBS__PK_ADDRESS, MEMOBS__PK_TOTAL_SIZE,
    MEMOBS__PK_ALLOCATED_SIZE, MEMOBS__PK_ACTIVE_SIZE, MEMOBS__PK_REQUESTED_SIZE, MEMOBS__PK_STREAM,
    MEMOBS__PK_SEGMENT_TYPE, MEMOBS__PK_LARGE, MEMOBS__PK_POOL_ID, MEMOBS__PK_EXPANDABLE, MEMOBS__PK_FRAMES,
    MEMOBS__PK_BLOCKS, MEMOBS__PK_SIZE, MEMOBS__PK_STATE, MEMOBS__PK_ACTIVE_ALLOCATED, MEMOBS__PK_PENDING_FREE,
    MEMOBS__PK_ACTION, MEMOBS__PK_ADDR, MEMOBS__PK_TIME_US, MEMOBS__PK_SEGMENT_ALLOC, MEMOBS__PK_SEGMENT_FREE, MEMOBS__PK_REAL_SIZE, MEMOBS__PK_ALLOC,
    MEMOBS__PK_FREE_REQUESTED, MEMOBS__PK_FREE_COMPLETED, MEMOBS__PK_FILENAME, MEMOBS__PK_LINE, MEMOBS__PK_NAME,
    MEMOBS__PK_NSTR
};
static const char *const memobs__pk_names[MEMOBS__PK_NSTR] = {
    "segments", "device_traces", "device", "address", "total_size", "allocated_size", "active_size",
    "requested_size", "stream", "segment_type", "large", "segment_pool_id", "is_expandable", "frames", "blocks",
    "size", "state", "active_allocated", "active_pending_free", "action", "addr", "time_us", "segment_alloc",
    "segment_free", "real_size", "alloc",
    "free_requested", "free_completed", "filename", "line", "name"};

typedef struct {
    FILE *f;
    uint32_t memo;                     /* the next memo index */
    uint32_t cmemo[MEMOBS__PK_NSTR];   /* memo index + 1 of each constant string */
    uint32_t *tmemo;                   /* per trace: memo index + 1 of its frames list */
    uint32_t ntraces;
    char *buf;                         /* scratch for frame text, MEMOBS__PK_BUF bytes */
} memobs__pk_t;
#define MEMOBS__PK_BUF 8192

static void memobs__pk_op(memobs__pk_t *k, int op) { putc(op, k->f); }

static void memobs__pk_le(memobs__pk_t *k, uint64_t v, unsigned n) {
    unsigned i;
    for (i = 0; i < n; i++) putc((int)((v >> (8 * i)) & 0xffu), k->f);
}

static void memobs__pk_int(memobs__pk_t *k, int64_t v) {
    unsigned char b[8];
    unsigned n = 8, i;
    if (v >= 0 && v < 256) {
        memobs__pk_op(k, 'K'); /* BININT1 */
        memobs__pk_le(k, (uint64_t)v, 1);
    } else if (v >= 0 && v < 65536) {
        memobs__pk_op(k, 'M'); /* BININT2 */
        memobs__pk_le(k, (uint64_t)v, 2);
    } else if (v >= -2147483647 - 1 && v <= 2147483647) {
        memobs__pk_op(k, 'J'); /* BININT */
        memobs__pk_le(k, (uint64_t)v, 4);
    } else { /* LONG1: the fewest little-endian two's complement bytes */
        for (i = 0; i < 8; i++) b[i] = (unsigned char)(((uint64_t)v >> (8 * i)) & 0xffu);
        while (n > 1 && ((b[n - 1] == 0x00 && !(b[n - 2] & 0x80)) || (b[n - 1] == 0xff && (b[n - 2] & 0x80)))) n--;
        memobs__pk_op(k, 0x8a);
        putc((int)n, k->f);
        fwrite(b, 1, n, k->f);
    }
}

/* Above 2^63 - 1 (no address or size is) the viewer, whose LONG1 takes 8
   bytes at most, cannot read it; Python can. */
static void memobs__pk_uint(memobs__pk_t *k, uint64_t v) {
    if (v <= (uint64_t)INT64_MAX) {
        memobs__pk_int(k, (int64_t)v);
    } else { /* LONG1 of 9 bytes: a zero byte keeps it positive */
        memobs__pk_op(k, 0x8a);
        putc(9, k->f);
        memobs__pk_le(k, v, 8);
        putc(0, k->f);
    }
}

/* Memoizes the object on top of the stack; returns its index + 1. */
static uint32_t memobs__pk_put(memobs__pk_t *k) {
    uint32_t i = k->memo++;
    if (i < 256) {
        memobs__pk_op(k, 'q'); /* BINPUT */
        putc((int)i, k->f);
    } else {
        memobs__pk_op(k, 'r'); /* LONG_BINPUT */
        memobs__pk_le(k, i, 4);
    }
    return i + 1;
}

static void memobs__pk_get(memobs__pk_t *k, uint32_t plus1) {
    uint32_t i = plus1 - 1;
    if (i < 256) {
        memobs__pk_op(k, 'h'); /* BINGET */
        putc((int)i, k->f);
    } else {
        memobs__pk_op(k, 'j'); /* LONG_BINGET */
        memobs__pk_le(k, i, 4);
    }
}

/* A str: at most the first n bytes of s (cut at a character), a byte that
   is not UTF-8 (or a NUL) as U+FFFD. */
static void memobs__pk_strn(memobs__pk_t *k, const char *s, size_t n) {
    char out[3 * 1024 + 8];
    const unsigned char *p = (const unsigned char *)s, *end;
    size_t o = 0;
    if (n > 1024) n = 1024;
    end = p + n;
    while (p < end) {
        size_t c = memobs__utf8_len(p);
        if (c == 0 || p + c > end || *p == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            p++;
        } else {
            memcpy(out + o, p, c);
            o += c;
            p += c;
        }
    }
    if (o < 256) {
        memobs__pk_op(k, 0x8c); /* SHORT_BINUNICODE */
        putc((int)o, k->f);
    } else {
        memobs__pk_op(k, 'X'); /* BINUNICODE */
        memobs__pk_le(k, o, 4);
    }
    fwrite(out, 1, o, k->f);
}

static void memobs__pk_str(memobs__pk_t *k, const char *s) { memobs__pk_strn(k, s, strlen(s)); }

/* A constant string, memoized at its first use. */
static void memobs__pk_const(memobs__pk_t *k, unsigned id) {
    if (k->cmemo[id]) {
        memobs__pk_get(k, k->cmemo[id]);
    } else {
        memobs__pk_str(k, memobs__pk_names[id]);
        k->cmemo[id] = memobs__pk_put(k);
    }
}

/* {"filename": file, "line": line, "name": name}; name is n bytes. */
static void memobs__pk_frame(memobs__pk_t *k, const char *file, uint32_t line, const char *name, size_t n) {
    memobs__pk_op(k, '}'); /* EMPTY_DICT */
    memobs__pk_op(k, '('); /* MARK */
    memobs__pk_const(k, MEMOBS__PK_FILENAME);
    memobs__pk_str(k, file);
    memobs__pk_const(k, MEMOBS__PK_LINE);
    memobs__pk_int(k, (int64_t)line);
    memobs__pk_const(k, MEMOBS__PK_NAME);
    memobs__pk_strn(k, name, n);
    memobs__pk_op(k, 'u'); /* SETITEMS */
}

/* A C frame from the reports' text: "function+0x1c (module+0x1a2c)",
   "module+0x1a2c" or "0x7f..." (no module). */
static void memobs__pk_cframe(memobs__pk_t *k, uintptr_t pc) {
    char sym[512], mod[512];
    const char *paren, *plus;
    size_t n;
    (void)memobs__sym(pc, sym, sizeof sym);
    n = strlen(sym);
    paren = strstr(sym, " (");
    while (paren && strstr(paren + 2, " (")) paren = strstr(paren + 2, " (");
    if (paren && n > 0 && sym[n - 1] == ')') {
        snprintf(mod, sizeof mod, "%.*s", (int)(sym + n - 1 - (paren + 2)), paren + 2);
        n = (size_t)(paren - sym);
    } else {
        snprintf(mod, sizeof mod, "%s", sym);
    }
    plus = strrchr(mod, '+');
    if (plus) mod[plus - mod] = 0;
    else if (strncmp(mod, "0x", 2) == 0) snprintf(mod, sizeof mod, "??");
    memobs__pk_frame(k, mod, 0, sym, n);
}

/* A provider frame: the first line of its text, "path:line in name" when
   it reads so, else the whole line as the name, the title as filename. */
static void memobs__pk_pframe(memobs__pk_t *k, const memobs_tag_provider_t *p, const memobs_frame_t *fr) {
    char *t = k->buf, *nl, *in, *c, *file = NULL;
    size_t len = p->format(fr, 1, t, MEMOBS__PK_BUF, p->user);
    unsigned long line = fr->line;
    if (len >= MEMOBS__PK_BUF) len = MEMOBS__PK_BUF - 1;
    t[len] = 0;
    if ((nl = strchr(t, '\n')) != NULL) *nl = 0;
    for (in = strstr(t, " in "); in; in = strstr(in + 1, " in ")) {
        for (c = in; c > t && isdigit((unsigned char)c[-1]); c--) {
        }
        if (c < in && c > t + 1 && c[-1] == ':') {
            line = strtoul(c, NULL, 10);
            c[-1] = 0;
            file = t;
            break;
        }
    }
    if (file) memobs__pk_frame(k, file, (uint32_t)line, in + 4, strlen(in + 4));
    else memobs__pk_frame(k, p->title ? p->title : "", (uint32_t)line, t, strlen(t));
}

/* The frames list of a trace, memoized: written at its first use. */
static void memobs__pk_frames(memobs__pk_t *k, uint32_t trace) {
    const memobs__trace_t *e = trace < k->ntraces ? memobs__trace_get(trace) : NULL;
    const memobs_frame_t *fr;
    unsigned i;
    if (e && k->tmemo[trace]) {
        memobs__pk_get(k, k->tmemo[trace]);
        return;
    }
    memobs__pk_op(k, ']'); /* EMPTY_LIST */
    if (!e) return;
    k->tmemo[trace] = memobs__pk_put(k);
    if (!e->tag[0] && !e->nc && !e->np) return;
    fr = &MEMOBS__TRK.frames[e->off];
    memobs__pk_op(k, '(');
    if (e->tag[0]) memobs__pk_frame(k, "memobs tag", 0, e->tag, strlen(e->tag));
    for (i = 0; i < e->nc; i++) memobs__pk_cframe(k, fr[e->np + i].pc);
    if (e->nc && (e->how & MEMOBS__C_CUT)) memobs__pk_frame(k, "memobs", 0, "... cut short: bad frame pointer", 32);
    if (e->np && e->prov)
        for (i = e->np; i > 0; i--) memobs__pk_pframe(k, &MEMOBS__TRK.prov[e->prov - 1], &fr[i - 1]);
    memobs__pk_op(k, 'e'); /* APPENDS */
}

/* key: int */
static void memobs__pk_kint(memobs__pk_t *k, unsigned key, uint64_t v) {
    memobs__pk_const(k, key);
    memobs__pk_uint(k, v);
}

/* Device allocations first by device, then by address. */
static int memobs__tsn_seg_first(const void *x, const void *y) {
    const memobs__alloc_t *a = (const memobs__alloc_t *)x, *b = (const memobs__alloc_t *)y;
    return a->device != b->device ? a->device < b->device : a->addr < b->addr;
}

static void memobs__pk_segment(memobs__pk_t *k, const memobs__alloc_t *a) {
    int pending = (a->phase & MEMOBS__PENDING) != 0;
    memobs__pk_op(k, '}');
    memobs__pk_op(k, '(');
    memobs__pk_kint(k, MEMOBS__PK_DEVICE, (uint64_t)(int64_t)a->device);
    memobs__pk_kint(k, MEMOBS__PK_ADDRESS, a->addr);
    memobs__pk_kint(k, MEMOBS__PK_TOTAL_SIZE, a->bytes);
    memobs__pk_kint(k, MEMOBS__PK_ALLOCATED_SIZE, pending ? 0u : a->bytes);
    memobs__pk_kint(k, MEMOBS__PK_ACTIVE_SIZE, a->bytes);
    memobs__pk_kint(k, MEMOBS__PK_REQUESTED_SIZE, a->bytes);
    memobs__pk_const(k, MEMOBS__PK_STREAM);
    memobs__pk_int(k, (int64_t)(intptr_t)a->stream);
    memobs__pk_const(k, MEMOBS__PK_SEGMENT_TYPE);
    memobs__pk_const(k, MEMOBS__PK_LARGE);
    memobs__pk_const(k, MEMOBS__PK_POOL_ID);
    memobs__pk_int(k, 0);
    memobs__pk_int(k, 0);
    memobs__pk_op(k, 0x86); /* TUPLE2 */
    memobs__pk_const(k, MEMOBS__PK_EXPANDABLE);
    memobs__pk_op(k, 0x89); /* NEWFALSE */
    memobs__pk_const(k, MEMOBS__PK_FRAMES);
    memobs__pk_frames(k, a->trace);
    memobs__pk_const(k, MEMOBS__PK_BLOCKS);
    memobs__pk_op(k, ']');
    memobs__pk_op(k, '}');
    memobs__pk_op(k, '(');
    memobs__pk_kint(k, MEMOBS__PK_ADDRESS, a->addr);
    memobs__pk_kint(k, MEMOBS__PK_SIZE, a->bytes);
    memobs__pk_kint(k, MEMOBS__PK_REQUESTED_SIZE, a->bytes);
    memobs__pk_kint(k, MEMOBS__PK_REAL_SIZE, a->bytes); /* what older viewers read */
    memobs__pk_const(k, MEMOBS__PK_STATE);
    memobs__pk_const(k, pending ? MEMOBS__PK_PENDING_FREE : MEMOBS__PK_ACTIVE_ALLOCATED);
    memobs__pk_const(k, MEMOBS__PK_FRAMES);
    memobs__pk_frames(k, a->trace);
    memobs__pk_op(k, 'u');
    memobs__pk_op(k, 'a'); /* APPEND: the one block */
    memobs__pk_op(k, 'u');
}

static void memobs__pk_event1(memobs__pk_t *k, const memobs__tsn_ev_t *e, unsigned action) {
    memobs__pk_op(k, '}');
    memobs__pk_op(k, '(');
    memobs__pk_const(k, MEMOBS__PK_ACTION);
    memobs__pk_const(k, action);
    memobs__pk_kint(k, MEMOBS__PK_ADDR, e->addr);
    memobs__pk_kint(k, MEMOBS__PK_SIZE, e->bytes);
    memobs__pk_const(k, MEMOBS__PK_STREAM);
    memobs__pk_int(k, (int64_t)(intptr_t)e->stream);
    memobs__pk_kint(k, MEMOBS__PK_TIME_US, e->time);
    memobs__pk_const(k, MEMOBS__PK_FRAMES);
    memobs__pk_frames(k, e->trace);
    memobs__pk_op(k, 'u');
}

/* The dicts of one event. Each allocation is its own segment, so its
   segment comes and goes with it: segment_alloc before its alloc,
   segment_free after its free_completed (the viewer's "Allocator State
   History" replays events back from the snapshot and draws each block in
   the segment that holds it; "Active Cached Segment Timeline" plots the
   segment events). No "category": a viewer that sees one looks for an
   "unknown" category and, in some versions, fails on it. */
static void memobs__pk_event(memobs__pk_t *k, const memobs__tsn_ev_t *e) {
    if (e->action == MEMOBS__TSN_ALLOC) memobs__pk_event1(k, e, MEMOBS__PK_SEGMENT_ALLOC);
    memobs__pk_event1(k, e, e->action == MEMOBS__TSN_ALLOC      ? MEMOBS__PK_ALLOC
                            : e->action == MEMOBS__TSN_FREE_REQ ? MEMOBS__PK_FREE_REQUESTED
                                                                : MEMOBS__PK_FREE_COMPLETED);
    if (e->action == MEMOBS__TSN_FREE_DONE) memobs__pk_event1(k, e, MEMOBS__PK_SEGMENT_FREE);
}

/* Lists are appended to in batches of 1000 (MARK ... APPENDS), as
   Python's pickler does. */
#define MEMOBS__PK_LIST_BEGIN(k) memobs__pk_op((k), ']')

/* The snapshot's word, and the warning's, when no history was recorded. */
static const char memobs__tsn_off[] = "no history of events: set MEMOBS_TORCH_SNAPSHOT or call "
                                      "memobs_torch_history_start()";

int memobs_write_torch_snapshot(FILE *f) {
    memobs__pk_t k;
    memobs__alloc_t *a = NULL;
    memobs__tsn_ev_t *ev[MEMOBS_MAX_DEVICES];
    uint64_t nev[MEMOBS_MAX_DEVICES], dropped[MEMOBS_MAX_DEVICES], cap[MEMOBS_MAX_DEVICES], room[MEMOBS_MAX_DEVICES];
    size_t n = 0, max = 0, i, j, b;
    int d, ndev = 0, rc = MEMOBS_OK;
    uint32_t hist = MEMOBS__TSN_ON() ? 1u : MEMOBS__TSN_EVER() ? 2u : 0u; /* recording, stopped, never */
    if (!f) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL FILE passed to memobs_write_torch_snapshot; nothing written");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    memset(&k, 0, sizeof k);
    memset(ev, 0, sizeof ev);
    memset(nev, 0, sizeof nev);
    memset(dropped, 0, sizeof dropped);
    k.f = f;
    /* The live table, device allocations only, by device and address. */
    if (MEMOBS__LOAD(&MEMOBS__TRK.ready.v) == 1) {
        for (;;) {
            max = memobs__trk_live() + 64;
            a = (memobs__alloc_t *)MEMOBS_MALLOC(max * sizeof *a);
            if (!a) {
                rc = MEMOBS_ERR_NOMEM;
                goto out;
            }
            n = memobs__trk_snapshot(a, max);
            if (n <= max) break;
            MEMOBS_FREE(a); /* it grew in between */
            a = NULL;
        }
        for (i = j = 0; i < n; i++)
            if (a[i].kind == MEMOBS_MEM_DEVICE) a[j++] = a[i];
        n = j;
        memobs__sort(a, n, sizeof *a, memobs__tsn_seg_first);
        if (n && a[n - 1].device >= 0) ndev = a[n - 1].device + 1;
    }
    /* Each device's history: room for it, then every thread's staged
       records gathered into the rings, each ring's events copied out while
       the gather holds every ring, then sorted by time. */
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        memobs__tsn_ring_t *r = &memobs__tsn.ring[d];
        uint32_t st = __atomic_load_n(&r->state.v, __ATOMIC_ACQUIRE);
        cap[d] = room[d] = memobs__tsn_cap();
        if (st == 0) continue;
        memobs__spin_lock(&r->lock); /* a start may resize it */
        cap[d] = room[d] = r->cap;
        memobs__spin_unlock(&r->lock);
        if (st != 1) continue;
        ev[d] = (memobs__tsn_ev_t *)MEMOBS_MALLOC((size_t)room[d] * sizeof *ev[d]);
        if (!ev[d]) {
            rc = MEMOBS_ERR_NOMEM;
            goto out;
        }
    }
    memobs__tsn_gather(1);
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        memobs__tsn_ring_t *r = &memobs__tsn.ring[d];
        if (!ev[d]) continue;
        nev[d] = memobs__tsn_copy(r, ev[d], room[d]); /* a start may have made it larger meanwhile */
        dropped[d] = r->events - nev[d];
        cap[d] = r->cap;
    }
    memobs__tsn_gather(0);
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        if (!ev[d]) continue;
        if (memobs__tsn_sort(ev[d], nev[d]) != MEMOBS_OK) {
            rc = MEMOBS_ERR_NOMEM;
            goto out;
        }
        memobs__tsn_times(ev[d], nev[d]);
        if ((nev[d] || dropped[d]) && d + 1 > ndev) ndev = d + 1;
    }
    /* Every trace an event or a block names is published by now. */
    k.ntraces = MEMOBS__LOAD(&MEMOBS__TRK.ready.v) == 1 ? __atomic_load_n(&MEMOBS__TRK.ntraces.v, __ATOMIC_ACQUIRE) : 0;
    k.buf = (char *)MEMOBS_MALLOC(MEMOBS__PK_BUF);
    k.tmemo = (uint32_t *)MEMOBS_MALLOC((size_t)k.ntraces * sizeof *k.tmemo + 1);
    if (!k.buf || !k.tmemo) {
        rc = MEMOBS_ERR_NOMEM;
        goto out;
    }
    memset(k.tmemo, 0, (size_t)k.ntraces * sizeof *k.tmemo);
    if (ndev < 1) ndev = 1; /* device 0, empty: what the viewer opens first */

    memobs__pk_op(&k, 0x80); /* PROTO 4 */
    putc(4, f);
    memobs__pk_op(&k, '}');
    memobs__pk_op(&k, '(');
    memobs__pk_const(&k, MEMOBS__PK_SEGMENTS);
    MEMOBS__PK_LIST_BEGIN(&k);
    for (i = 0; i < n; i++) {
        if (i % 1000 == 0) memobs__pk_op(&k, '(');
        memobs__pk_segment(&k, &a[i]);
        if (i % 1000 == 999 || i + 1 == n) memobs__pk_op(&k, 'e');
    }
    memobs__pk_const(&k, MEMOBS__PK_DEVICE_TRACES);
    MEMOBS__PK_LIST_BEGIN(&k);
    memobs__pk_op(&k, '(');
    for (d = 0; d < ndev; d++) {
        MEMOBS__PK_LIST_BEGIN(&k);
        if (d >= MEMOBS_MAX_DEVICES) continue;
        for (b = 0; b < nev[d]; b++) {
            if (b % 1000 == 0) memobs__pk_op(&k, '(');
            memobs__pk_event(&k, &ev[d][b]);
            if (b % 1000 == 999 || b + 1 == nev[d]) memobs__pk_op(&k, 'e');
        }
    }
    memobs__pk_op(&k, 'e');
    /* memobs' own entry (the viewer reads only the two above). */
    memobs__pk_str(&k, "memobs");
    memobs__pk_op(&k, '}');
    memobs__pk_op(&k, '(');
    memobs__pk_str(&k, "version");
    memobs__pk_str(&k, MEMOBS_VERSION);
    memobs__pk_str(&k, "history_capacity");
    memobs__pk_op(&k, ']');
    memobs__pk_op(&k, '(');
    for (d = 0; d < ndev; d++) memobs__pk_uint(&k, d < MEMOBS_MAX_DEVICES ? cap[d] : 0u);
    memobs__pk_op(&k, 'e');
    memobs__pk_str(&k, "history_dropped");
    memobs__pk_op(&k, ']');
    memobs__pk_op(&k, '(');
    for (d = 0; d < ndev; d++) memobs__pk_uint(&k, d < MEMOBS_MAX_DEVICES ? dropped[d] : 0u);
    memobs__pk_op(&k, 'e');
    memobs__pk_str(&k, "history");
    memobs__pk_str(&k, hist == 1 ? "on" : hist == 2 ? "stopped" : "off");
    if (!hist) {
        memobs__pk_str(&k, "history_help");
        memobs__pk_str(&k, memobs__tsn_off);
    }
    memobs__pk_op(&k, 'u');
    memobs__pk_op(&k, 'u');
    memobs__pk_op(&k, '.'); /* STOP */
    if (fflush(f) != 0 || ferror(f)) rc = MEMOBS_ERR_IO;
#ifndef MEMOBS_DISABLE
    /* No history by choice (MEMOBS_TORCH_EVENTS=0) is not warned of. */
    if (!hist && memobs__tsn_cap_env() && !MEMOBS__XCHG(&memobs__tsn.warned.v, 1u))
        memobs__log(MEMOBS_LOG_WARN, "the PyTorch memory snapshot has its segments and blocks but %s",
                    memobs__tsn_off);
#endif
out:
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++)
        if (ev[d]) MEMOBS_FREE(ev[d]);
    if (a) MEMOBS_FREE(a);
    if (k.buf) MEMOBS_FREE(k.buf);
    if (k.tmemo) MEMOBS_FREE(k.tmemo);
    return rc;
}

static int memobs__write_torch_snapshot_arg(FILE *f, int unused) {
    (void)unused;
    return memobs_write_torch_snapshot(f);
}

int memobs_write_torch_snapshot_file(const char *path) { return memobs__output_file(MEMOBS__OUT_TORCH, path, 0); }

/* MEMOBS_TORCH_EVENTS and MEMOBS_TORCH_SNAPSHOT; from memobs__track_env. */
static void memobs__tsn_env(void) {
    const char *s;
    uint64_t v;
    if ((s = getenv("MEMOBS_TORCH_EVENTS")) != NULL) {
        if (memobs__parse_bytes(s, &v) && v <= MEMOBS__TSN_MAX)
            MEMOBS__STORE(&memobs__tsn.cap_plus1.v, v + 1);
        else
            memobs__log(MEMOBS_LOG_WARN, "MEMOBS_TORCH_EVENTS='%s' is not an event count up to %llu (like 16384 or "
                        "16K); using %llu", s, (unsigned long long)MEMOBS__TSN_MAX, (unsigned long long)memobs__tsn_cap());
    }
    /* The snapshot wanted at exit: its history kept from start-up. */
    if (memobs__output_env(MEMOBS__OUT_TORCH) && memobs__tsn_cap_env()) {
#ifndef MEMOBS_DISABLE
        (void)memobs__tsn_start(memobs__tsn_cap_env());
#endif
    }
}

#else /* MEMOBS_NO_TORCH_SNAPSHOT: the names the rest calls, doing nothing */

static void memobs__tsn_push(int device, unsigned action, uint64_t addr, uint64_t bytes, const void *stream,
                             uint32_t trace) {
    (void)device, (void)action, (void)addr, (void)bytes, (void)stream, (void)trace;
}

static void memobs__tsn_unrequest(int device, uint64_t addr) { (void)device, (void)addr; }

/* Like memobs__cut_call, but nothing is written. */
static int memobs__tsn_cut(const char *fn) {
    memobs__log(MEMOBS_LOG_WARN, "%s: memobs was built with MEMOBS_NO_TORCH_SNAPSHOT; no history", fn);
    return MEMOBS_ERR_INVALID;
}

int memobs_torch_history_start(uint64_t max_events) {
    (void)max_events;
    return memobs__tsn_cut("memobs_torch_history_start");
}

int memobs_torch_history_stop(void) { return memobs__tsn_cut("memobs_torch_history_stop"); }

static void memobs__tsn_leave(memobs__shard_t *s) { (void)s; }

static void memobs__tsn_fork(int lock) { (void)lock; }

/* No history: capacity 0, as MEMOBS_TORCH_EVENTS=0. */
int memobs_get_torch_history(int device, memobs_torch_history_t *out) {
    if (out) memset(out, 0, sizeof *out);
    return !out || device < 0 || device >= MEMOBS_MAX_DEVICES ? MEMOBS_ERR_INVALID : MEMOBS_OK;
}

static int memobs__write_torch_snapshot_arg(FILE *f, int unused) {
    (void)f, (void)unused;
    return memobs__cut_call("memobs_write_torch_snapshot", "NO_TORCH_SNAPSHOT");
}

int memobs_write_torch_snapshot(FILE *f) { return memobs__write_torch_snapshot_arg(f, 0); }

int memobs_write_torch_snapshot_file(const char *path) {
    (void)path;
    return memobs__cut_call("memobs_write_torch_snapshot_file", "NO_TORCH_SNAPSHOT");
}

static void memobs__tsn_env(void) {
    memobs__cut_env(memobs__out_info[MEMOBS__OUT_TORCH].var, "NO_TORCH_SNAPSHOT");
}
#endif /* MEMOBS_NO_TORCH_SNAPSHOT */

/* ======================================================================== */
/* Private: background worker                                      >>worker */
/* ======================================================================== */

/* One thread for periodic tasks (the sampler, exporters that rewrite a
   file), started when the first task is scheduled and joined when the
   last one is removed, so nothing runs while no task is scheduled. Tasks
   are called without memobs__g.lock or the worker's lock held; schedule
   and remove them without holding memobs__g.lock (a removal waits for a
   call of that task in progress). At exit the worker stops: no task is
   called after the exit handler ran, and the handler waits at most 2 s for
   a call in progress. fork(): the child has no worker; its tasks stay
   scheduled and the worker starts again at the child's next
   memobs__bg_schedule() or memobs__bg_poke(). */
#define MEMOBS__BG_TASKS 8
#define MEMOBS__BG_EXIT_WAIT_NS 2000000000ull

typedef struct {
    void (*fn)(uint64_t now_ns);
    uint64_t period_ns, next_ns;
} memobs__bg_task_t;

static pthread_once_t memobs__bg_once = PTHREAD_ONCE_INIT;
static __thread int memobs__bg_self; /* 1 on the worker thread */
static struct {
    memobs__u32_t ready;        /* locks made (read by the fork handlers) */
    int fork_held;              /* the fork handlers hold the locks below */
    pthread_mutex_t lock;       /* everything below, and the fields of memobs__smp marked so */
    pthread_cond_t cond;        /* CLOCK_MONOTONIC; wakes the worker and removers */
    pthread_t thread;
    int running;                /* started and not yet stopped */
    uint32_t gen;               /* a worker runs while gen is the one it was started with */
    int exiting;                /* the exit handler ran */
    int atexit_done;
    void (*busy)(uint64_t);     /* the task being called, or NULL */
    unsigned ntask;
    memobs__bg_task_t task[MEMOBS__BG_TASKS];
} memobs__bg;

#if defined(__linux__) && defined(__LP64__)
/* Hidden by strict -std=c99 like clock_gettime (see memobs_now_ns). */
extern int memobs__condattr_setclock(pthread_condattr_t *a, int clk) __asm__("pthread_condattr_setclock");
#define MEMOBS__SETCLOCK(a) memobs__condattr_setclock((a), 1 /* CLOCK_MONOTONIC */)
#else
#define MEMOBS__SETCLOCK(a) pthread_condattr_setclock((a), CLOCK_MONOTONIC)
#endif

static void memobs__bg_cond_init(void) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    MEMOBS__SETCLOCK(&a);
    pthread_cond_init(&memobs__bg.cond, &a);
    pthread_condattr_destroy(&a);
}

static pthread_mutex_t *memobs__smp_lock(void);
static void memobs__bg_init(void) {
    pthread_mutex_init(&memobs__bg.lock, NULL);
    pthread_mutex_init(memobs__smp_lock(), NULL);
    memobs__bg_cond_init();
    __atomic_store_n(&memobs__bg.ready.v, 1u, __ATOMIC_RELEASE);
}

/* Caller holds the lock. Waits on the cond until abs_ns (CLOCK_MONOTONIC). */
static void memobs__bg_wait_until(uint64_t abs_ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(abs_ns / 1000000000u);
    ts.tv_nsec = (long)(abs_ns % 1000000000u);
    pthread_cond_timedwait(&memobs__bg.cond, &memobs__bg.lock, &ts);
}

static void *memobs__bg_main(void *arg) {
    uint32_t gen = (uint32_t)(uintptr_t)arg;
    memobs__bg_self = 1;
    pthread_mutex_lock(&memobs__bg.lock);
    while (memobs__bg.gen == gen && !memobs__bg.exiting) {
        uint64_t now = memobs_now_ns(), wake = UINT64_MAX;
        memobs__bg_task_t *due = NULL;
        unsigned i;
        for (i = 0; i < memobs__bg.ntask; i++) {
            memobs__bg_task_t *t = &memobs__bg.task[i];
            if (t->next_ns <= now) {
                if (!due || t->next_ns < due->next_ns) due = t;
            } else if (t->next_ns < wake) {
                wake = t->next_ns;
            }
        }
        if (due) {
            void (*fn)(uint64_t) = due->fn;
            due->next_ns += due->period_ns;
            if (due->next_ns <= now) due->next_ns = now + due->period_ns; /* late: skip, no burst */
            memobs__bg.busy = fn;
            pthread_mutex_unlock(&memobs__bg.lock);
            fn(now);
            pthread_mutex_lock(&memobs__bg.lock);
            memobs__bg.busy = NULL;
            pthread_cond_broadcast(&memobs__bg.cond);
        } else if (wake == UINT64_MAX) {
            pthread_cond_wait(&memobs__bg.cond, &memobs__bg.lock);
        } else {
            memobs__bg_wait_until(wake);
        }
    }
    pthread_mutex_unlock(&memobs__bg.lock);
    return NULL;
}

/* Caller holds the lock. Returns 1 and the thread to join if one ran. */
static int memobs__bg_stop_locked(pthread_t *th) {
    if (!memobs__bg.running) return 0;
    memobs__bg.gen++;
    memobs__bg.running = 0;
    *th = memobs__bg.thread;
    pthread_cond_broadcast(&memobs__bg.cond);
    return 1;
}

static void memobs__bg_at_exit(void);

/* Caller holds the lock. The worker is started with every asynchronous
   signal blocked (a program's SIGTERM, SIGHUP, SIGUSR1... go to the
   program's threads, to its sigwait() say); the faults a bug of the worker
   raises on itself (SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV,
   SIGSYS) stay deliverable so that a crash there is written as any. */
static int memobs__bg_start_locked(void) {
    int e;
#if defined(MEMOBS__OUT_LINUX) && defined(MEMOBS__SIG_BLOCK)
    memobs__sigset_t block, old;
    memset(&block, 0xff, sizeof block);
    block.w[0] &= ~((1ul << 3) | (1ul << 4) | (1ul << 5) | (1ul << 6) | (1ul << 7) | (1ul << 10) | (1ul << 30));
    memobs__sigmask(MEMOBS__SIG_BLOCK, &block, &old);
#endif
    memobs__bg.gen++;
    e = pthread_create(&memobs__bg.thread, NULL, memobs__bg_main, (void *)(uintptr_t)memobs__bg.gen);
#if defined(MEMOBS__OUT_LINUX) && defined(MEMOBS__SIG_BLOCK)
    memobs__sigmask(MEMOBS__SIG_SETMASK, &old, NULL);
#endif
    if (e != 0) {
        memobs__log(MEMOBS_LOG_WARN, "cannot start the background thread: %s", strerror(e));
        return MEMOBS_ERR_NOMEM;
    }
    memobs__bg.running = 1;
    if (!memobs__bg.atexit_done) {
        memobs__bg.atexit_done = 1;
        atexit(memobs__bg_at_exit);
    }
    return MEMOBS_OK;
}

/* Caller holds the lock: the worker of a fork() child starts here. */
static void memobs__bg_revive_locked(void) {
    if (!memobs__bg.running && memobs__bg.ntask && !memobs__bg.exiting && memobs__bg_start_locked() != MEMOBS_OK)
        memobs__bg.ntask = 0; /* warned; the tasks are dropped rather than retried on every call */
}

static void memobs__bg_poke(void) {
    pthread_once(&memobs__bg_once, memobs__bg_init);
    pthread_mutex_lock(&memobs__bg.lock);
    memobs__bg_revive_locked();
    pthread_mutex_unlock(&memobs__bg.lock);
}

/* Calls fn(now) every period_ns on the worker thread (first call one
   period from now); a second call for fn changes its period; period 0
   removes fn, and once that returns fn is not running and is not called
   again (unless the caller is fn itself). MEMOBS_ERR_FULL with
   MEMOBS__BG_TASKS tasks, MEMOBS_ERR_INVALID for a NULL fn or after exit
   began, MEMOBS_ERR_NOMEM when no thread can be started. */
static int memobs__bg_schedule(void (*fn)(uint64_t now_ns), uint64_t period_ns) {
    pthread_t th = pthread_self(); /* set when join is 1 */
    int join = 0, rc = MEMOBS_OK;
    unsigned i;
    if (!fn) return MEMOBS_ERR_INVALID;
    pthread_once(&memobs__bg_once, memobs__bg_init);
    pthread_mutex_lock(&memobs__bg.lock);
    memobs__bg_revive_locked();
    for (i = 0; i < memobs__bg.ntask && memobs__bg.task[i].fn != fn; i++) {
    }
    if (period_ns) {
        if (memobs__bg.exiting) {
            rc = MEMOBS_ERR_INVALID;
        } else if (i == memobs__bg.ntask && i == MEMOBS__BG_TASKS) {
            rc = MEMOBS_ERR_FULL;
        } else {
            memobs__bg_task_t *t = &memobs__bg.task[i];
            t->fn = fn;
            t->period_ns = period_ns;
            t->next_ns = memobs_now_ns() + period_ns;
            if (i == memobs__bg.ntask) memobs__bg.ntask++;
            if (memobs__bg.running) pthread_cond_broadcast(&memobs__bg.cond);
            else if ((rc = memobs__bg_start_locked()) != MEMOBS_OK) memobs__bg.task[i] = memobs__bg.task[--memobs__bg.ntask];
        }
    } else if (i < memobs__bg.ntask) {
        memobs__bg.task[i] = memobs__bg.task[--memobs__bg.ntask];
        while (memobs__bg.busy == fn && !memobs__bg_self) pthread_cond_wait(&memobs__bg.cond, &memobs__bg.lock);
        if (memobs__bg.ntask == 0) join = memobs__bg_stop_locked(&th);
    }
    pthread_mutex_unlock(&memobs__bg.lock);
    if (join) {
        if (memobs__bg_self) pthread_detach(th); /* the last task removed itself */
        else pthread_join(th, NULL);
    }
    return rc;
}

static void memobs__bg_at_exit(void) {
    pthread_t th = pthread_self(); /* set when join is 1 */
    uint64_t deadline = memobs_now_ns() + MEMOBS__BG_EXIT_WAIT_NS;
    int join, idle;
    pthread_mutex_lock(&memobs__bg.lock);
    memobs__bg.exiting = 1;
    join = memobs__bg_stop_locked(&th);
    while (memobs__bg.busy && !memobs__bg_self && memobs_now_ns() < deadline) memobs__bg_wait_until(deadline);
    idle = memobs__bg.busy == NULL;
    pthread_mutex_unlock(&memobs__bg.lock);
    /* A task stuck past the deadline is left running: exit must not hang. */
    if (join && idle && !memobs__bg_self) pthread_join(th, NULL);
}

/* ======================================================================== */
/* Private: host memory sampler and leak detector                 >>sampler */
/* ======================================================================== */

#ifndef MEMOBS_SAMPLES
#define MEMOBS_SAMPLES 4096
#endif
#ifndef MEMOBS_NO_STORMLOG
#define MEMOBS__SL_EVENTS 64       /* notable events (peaks, out-of-memory) kept */
#else
#define MEMOBS__SL_EVENTS 1 /* Stormlog compiled out: its ring is not used */
#endif
#define MEMOBS__LEAK_MIN_SAMPLES 10
#define MEMOBS__LEAK_MB_MIN 1.0    /* slope that counts as growth, MB/min */
#define MEMOBS__LEAK_R2 0.9        /* fit that counts as linear */
#define MEMOBS__LEAK_FLAT 0.1      /* heap + tracked slope below this share of the growth: flat */
#define MEMOBS__LEAK_MIN_MB 1.0    /* fitted growth over the window below this (MB): noise */

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define MEMOBS__HAVE_MALLINFO2 1
#endif
#include <fcntl.h>

enum { MEMOBS__EV_PEAK = 1, MEMOBS__EV_OOM = 2 };

#define MEMOBS__SL_MARKS 4096 /* collective regions and markers kept for Stormlog (oldest dropped) */
typedef struct {
    uint64_t t0, dur;   /* begin (a marker: its time), duration (0 for a marker) */
    int32_t id;         /* region id; a collective: comm << 12 | phase << 8 | kind */
    uint32_t is_mark;   /* 0 a region, 1 a marker, 2 a collective (one event, at t0) */
    uint64_t bytes, seq; /* a collective's */
} memobs__sl_mark_t;

typedef struct {
    uint64_t time_ns;
    int type;
    int32_t device;
    uint64_t tracked;               /* the device's tracked bytes at the event */
    uint64_t prev;                  /* peak: the maximum at the previous peak event */
    uint64_t request;               /* oom: bytes asked for */
    uint64_t used, free_bytes, total; /* driver figures then; MEMOBS_UNKNOWN if not read */
    uint64_t as_of;                 /* when they were read (before time_ns: the last ones, CUDA shut down) */
    uint32_t trace;                 /* peak: trace of the allocation that made it */
    const char *call;               /* oom: the wrapper's name (a literal) */
} memobs__sl_event_t;

/* memobs_cuda.h's implementation sets this at load time: used/free/total
   of a device (the driver's cuMemGetInfo, never creating a context) and
   when they were read (*as_of: now, or, once CUDA has shut down at exit,
   when the last ones were); 0 on success. NULL without memobs_cuda.h. */
typedef int (*memobs__devmem_fn_t)(int device, uint64_t *used, uint64_t *free_bytes, uint64_t *total,
                                   uint64_t *as_of);
static memobs__devmem_fn_t memobs__devmem_fn;

static struct {
    /* the ring, under its own mutex (made by memobs__bg_init) */
    pthread_mutex_t lock;
    memobs_sample_t *ring;
    uint32_t cap, head, n; /* head: the oldest */
    uint64_t dropped;
    int nomem_warned;
    /* settings */
    memobs__u32_t interval_ms; /* background sampling; 0 = off */
    uint32_t cap_want;         /* MEMOBS_SAMPLES */
    uint32_t window_s;         /* MEMOBS_LEAK_WINDOW_S */
    /* regions and markers of collective names, for Stormlog: a ring under
       a spin lock (taken at such a region's end) */
    memobs__u32_t mk_lock;
    memobs__sl_mark_t *mk; /* MEMOBS__SL_MARKS, made at the first (memobs__sl_mark_put) */
    uint32_t mk_head, mk_n;
    uint64_t mk_dropped;
    /* notable events, under a spin lock (taken in the allocation path) */
    memobs__u32_t ev_lock;
    memobs__sl_event_t ev[MEMOBS__SL_EVENTS];
    uint32_t ev_head, ev_n;
    uint64_t ev_dropped;
    memobs__u64_t peak_next[MEMOBS_MAX_DEVICES], peak_rep[MEMOBS_MAX_DEVICES];
} memobs__smp;

static pthread_mutex_t *memobs__smp_lock(void) { return &memobs__smp.lock; }

/* fork(): stage 0 (prepare, after memobs' other locks) takes the worker's
   and the sampler's locks, 1 (parent, and the child's last step) releases
   them; 2 (child, first) resets the child: no worker thread, an empty
   ring and event list (they were the parent's), the cond made afresh (a
   waiter of the parent's may be recorded in it). */
static void memobs__bg_fork(int stage) {
    if (stage == 0) {
        memobs__bg.fork_held = __atomic_load_n(&memobs__bg.ready.v, __ATOMIC_ACQUIRE) != 0;
        if (!memobs__bg.fork_held) return;
        pthread_mutex_lock(&memobs__bg.lock);
        pthread_mutex_lock(&memobs__smp.lock);
        memobs__spin_lock(&memobs__smp.ev_lock);
        memobs__spin_lock(&memobs__smp.mk_lock);
    } else if (stage == 1) {
        if (!memobs__bg.fork_held) return;
        memobs__bg.fork_held = 0;
        memobs__spin_unlock(&memobs__smp.mk_lock);
        memobs__spin_unlock(&memobs__smp.ev_lock);
        pthread_mutex_unlock(&memobs__smp.lock);
        pthread_mutex_unlock(&memobs__bg.lock);
    } else if (memobs__bg.fork_held) {
        memobs__bg.running = 0;
        memobs__bg.busy = NULL;
        memobs__bg.gen++;
        memobs__bg_cond_init();
        memobs__smp.head = memobs__smp.n = 0;
        memobs__smp.dropped = 0;
        memobs__smp.ev_head = memobs__smp.ev_n = 0;
        memobs__smp.ev_dropped = 0;
        memobs__smp.mk_head = memobs__smp.mk_n = 0;
        memobs__smp.mk_dropped = 0;
    }
}

/* Reads a small /proc file into buf (NUL-terminated); its length, or -1. */
static long memobs__read_proc(const char *path, char *buf, size_t len) {
    size_t got = 0;
#ifdef O_CLOEXEC
    int fd = open(path, O_RDONLY | O_CLOEXEC);
#else
    int fd = open(path, O_RDONLY);
#endif
    if (fd < 0) return -1;
    while (got + 1 < len) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0;
    return got ? (long)got : -1;
}

#ifdef MEMOBS__HAVE_MALLINFO2
static pthread_once_t memobs__mallinfo_once = PTHREAD_ONCE_INIT;
static void memobs__mallinfo_first(void) { (void)mallinfo2(); }
#endif

static void memobs__sample_fill(memobs_sample_t *s, uint64_t now) {
    char buf[4096];
    const char *p;
    unsigned d;
    uint64_t cur[MEMOBS__ACCTS];
    memset(s, 0, sizeof *s);
    s->time_ns = now;
    s->rss_bytes = s->anon_bytes = s->heap_bytes = s->heap_reserved_bytes = MEMOBS_UNKNOWN;
    if (memobs__read_proc("/proc/self/statm", buf, sizeof buf) > 0) {
        unsigned long long size_pages, rss_pages;
        long page = sysconf(_SC_PAGESIZE);
        if (sscanf(buf, "%llu %llu", &size_pages, &rss_pages) == 2 && page > 0)
            s->rss_bytes = (uint64_t)rss_pages * (uint64_t)page;
    }
    if (memobs__read_proc("/proc/self/smaps_rollup", buf, sizeof buf) > 0 && (p = strstr(buf, "\nAnonymous:")) != NULL) {
        unsigned long long kb;
        if (sscanf(p + 11, "%llu kB", &kb) == 1) s->anon_bytes = (uint64_t)kb * 1024u;
    }
#ifdef MEMOBS__HAVE_MALLINFO2
    {
        struct mallinfo2 mi;
        /* The first call once, alone: where the program's malloc is not
           glibc's (a sanitizer, jemalloc, tcmalloc), glibc's heap is set
           up by that first call, and a second thread's call racing it
           read the heap's top before it was set (a crash, seen under
           ASan with two threads sampling). */
        pthread_once(&memobs__mallinfo_once, memobs__mallinfo_first);
        mi = mallinfo2();
        s->heap_bytes = (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
        s->heap_reserved_bytes = (uint64_t)mi.arena + (uint64_t)mi.hblkhd;
    }
#endif
    memobs__esc_read(cur);
    s->tracked_host_bytes = cur[MEMOBS_MEM_HOST];
    s->tracked_pinned_bytes = cur[MEMOBS_MEM_PINNED];
    s->tracked_device_bytes = cur[MEMOBS_MEM_DEVICE];
    /* Only devices memobs saw memory on: asking another device would give
       it a CUDA context (hundreds of MB) it never had. */
    for (d = 0; d < MEMOBS_MAX_DEVICES && s->ndev < MEMOBS_SAMPLE_DEVICES; d++) {
        memobs__devmem_fn_t fn = __atomic_load_n(&memobs__devmem_fn, __ATOMIC_ACQUIRE);
        memobs_sample_dev_t *x;
        if (MEMOBS__LOAD(&MEMOBS__ESC.peak[MEMOBS__ACCT_DEV + d].v) == 0) continue;
        x = &s->dev[s->ndev++];
        x->device = (int32_t)d;
        x->tracked = cur[MEMOBS__ACCT_DEV + d];
        if (!fn || fn((int)d, &x->used, &x->free_bytes, &x->total, &x->as_of_ns) != 0) {
            x->used = x->free_bytes = x->total = MEMOBS_UNKNOWN;
            x->as_of_ns = 0;
        }
    }
    s->nregion = memobs__reg_open(s->region, MEMOBS_SAMPLE_REGIONS);
}

/* A sample's known figures as counter tracks of the timeline (when on). */
static void memobs__sample_to_timeline(const memobs_sample_t *s) {
    static const char *const dev_used[MEMOBS_SAMPLE_DEVICES] = {
        "device 0 used bytes (driver)", "device 1 used bytes (driver)", "device 2 used bytes (driver)",
        "device 3 used bytes (driver)", "device 4 used bytes (driver)", "device 5 used bytes (driver)",
        "device 6 used bytes (driver)", "device 7 used bytes (driver)"};
    const struct {
        const char *series;
        uint64_t v;
    } f[] = {{"rss bytes", s->rss_bytes},
             {"anonymous bytes", s->anon_bytes},
             {"malloc heap bytes", s->heap_bytes},
             {"tracked host+pinned bytes", s->tracked_host_bytes == MEMOBS_UNKNOWN ? MEMOBS_UNKNOWN
                                                                                   : s->tracked_host_bytes + s->tracked_pinned_bytes}};
    unsigned i;
    if (!MEMOBS__LOAD(&memobs__tl_on.v)) return;
    for (i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v != MEMOBS_UNKNOWN) memobs__tl_sample(s->time_ns, f[i].series, f[i].v);
    for (i = 0; i < s->ndev && i < MEMOBS_SAMPLE_DEVICES; i++)
        if (s->dev[i].used != MEMOBS_UNKNOWN && s->dev[i].device >= 0 && s->dev[i].device < MEMOBS_SAMPLE_DEVICES)
            memobs__tl_sample(s->time_ns, dev_used[s->dev[i].device], s->dev[i].used);
}

static int memobs__sample_push(const memobs_sample_t *s) {
    int rc = MEMOBS_OK;
    memobs__sample_to_timeline(s);
    pthread_once(&memobs__bg_once, memobs__bg_init);
    pthread_mutex_lock(&memobs__smp.lock);
    if (!memobs__smp.ring) {
        memobs__smp.cap = memobs__smp.cap_want ? memobs__smp.cap_want : MEMOBS_SAMPLES;
        memobs__smp.ring = (memobs_sample_t *)MEMOBS_MALLOC(memobs__smp.cap * sizeof(memobs_sample_t));
        /* Touched now: pages the ring faulted in one sample at a time
           would be a slow, linear growth of anonymous memory. */
        if (memobs__smp.ring) { /* (a plain memset of a fresh block may become calloc's, which skips it) */
            volatile char *v = (volatile char *)memobs__smp.ring;
            size_t i, len = memobs__smp.cap * sizeof(memobs_sample_t);
            for (i = 0; i < len; i += 4096) v[i] = 0;
        }
    }
    if (!memobs__smp.ring) {
        memobs__smp.dropped++;
        if (!memobs__smp.nomem_warned++)
            memobs__log(MEMOBS_LOG_WARN, "cannot allocate the ring of %u samples; samples are dropped", memobs__smp.cap);
        rc = MEMOBS_ERR_NOMEM;
    } else if (memobs__smp.n == memobs__smp.cap) {
        memobs__smp.ring[memobs__smp.head] = *s;
        memobs__smp.head = (memobs__smp.head + 1) % memobs__smp.cap;
        memobs__smp.dropped++;
    } else {
        memobs__smp.ring[(memobs__smp.head + memobs__smp.n++) % memobs__smp.cap] = *s;
    }
    pthread_mutex_unlock(&memobs__smp.lock);
    return rc;
}

static void memobs__sampler_tick(uint64_t now_ns) {
    memobs_sample_t s;
    /* The interval read first: a stop between the fill and the read would
       file a background sample as memobs_sample_now()'s (interval 0). */
    uint32_t interval_ms = MEMOBS__LOAD(&memobs__smp.interval_ms.v);
    if (!interval_ms || !memobs_get_enabled()) return;
    memobs__sample_fill(&s, now_ns);
    s.interval_ms = interval_ms;
    (void)memobs__sample_push(&s);
}

/* Starts background sampling without memobs_init() (runs inside it). */
static int memobs__sampler_start(unsigned interval_ms) {
    int rc;
    MEMOBS__STORE(&memobs__smp.interval_ms.v, interval_ms);
    rc = memobs__bg_schedule(memobs__sampler_tick, (uint64_t)interval_ms * 1000000u);
    if (rc != MEMOBS_OK) MEMOBS__STORE(&memobs__smp.interval_ms.v, 0u);
    return rc;
}

int memobs_sampler_start(unsigned interval_ms) {
    if (interval_ms == 0) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_sampler_start(0): the interval must be at least 1 ms; not started");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
#ifdef MEMOBS_DISABLE
    return MEMOBS_OK; /* compiled out: no thread, no samples */
#else
    (void)memobs_sample_now();
    return memobs__sampler_start(interval_ms);
#endif
}

void memobs_sampler_stop(void) {
    MEMOBS__STORE(&memobs__smp.interval_ms.v, 0u);
    (void)memobs__bg_schedule(memobs__sampler_tick, 0);
}

int memobs_sample_now(void) {
    memobs_sample_t s;
    memobs_init();
    if (!memobs_get_enabled()) return MEMOBS_OK;
    memobs__bg_poke();
    memobs__sample_fill(&s, memobs_now_ns());
    return memobs__sample_push(&s);
}

/* Copies the newest min(max, held) samples, oldest first, under the lock. */
static size_t memobs__samples_copy(memobs_sample_t *out, size_t max) {
    size_t n, i, skip;
    pthread_once(&memobs__bg_once, memobs__bg_init);
    pthread_mutex_lock(&memobs__smp.lock);
    n = memobs__smp.n;
    if (!out || max == 0) {
        pthread_mutex_unlock(&memobs__smp.lock);
        return n;
    }
    skip = n > max ? n - max : 0;
    for (i = skip; i < n; i++) out[i - skip] = memobs__smp.ring[(memobs__smp.head + i) % memobs__smp.cap];
    pthread_mutex_unlock(&memobs__smp.lock);
    return n - skip;
}

size_t memobs_get_samples(memobs_sample_t *out, size_t max) {
    memobs__bg_poke();
    return memobs__samples_copy(out, max);
}

uint64_t memobs_get_samples_dropped(void) {
    uint64_t n;
    pthread_once(&memobs__bg_once, memobs__bg_init);
    pthread_mutex_lock(&memobs__smp.lock);
    n = memobs__smp.dropped;
    pthread_mutex_unlock(&memobs__smp.lock);
    return n;
}

/* Least-squares line through (x[i], y[i]): *slope in y per x, *r2 the
   share of y's variance it explains (0 when y does not vary). Returns 0
   for fewer than 2 points or x that does not vary (slope, r2 then 0). */
static int memobs__leak_fit(const double *x, const double *y, size_t n, double *slope, double *r2) {
    double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0;
    size_t i;
    *slope = 0;
    *r2 = 0;
    if (n < 2) return 0;
    for (i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= (double)n;
    my /= (double)n;
    for (i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (!(sxx > 0)) return 0;
    *slope = sxy / sxx;
    if (syy > 0) *r2 = (sxy * sxy) / (sxx * syy);
    if (*r2 > 1) *r2 = 1;
    return 1;
}

/* The verdict over memobs_sample_t values (oldest first). */
static void memobs__leak_eval(const memobs_sample_t *s, size_t n, uint32_t window_s, memobs_leak_t *out) {
    double *x, *y;
    size_t first = 0, m, i;
    int known[4] = {1, 1, 1, 1}; /* rss, anon, heap, tracked */
    double slope[4] = {0, 0, 0, 0}, r2[4] = {0, 0, 0, 0};
    unsigned k;
    memset(out, 0, sizeof *out);
    if (n == 0) return;
    while (first < n && s[n - 1].time_ns - s[first].time_ns > (uint64_t)window_s * 1000000000u) first++;
    m = n - first;
    out->samples = m;
    out->window_s = (double)(s[n - 1].time_ns - s[first].time_ns) / 1e9;
    x = (double *)MEMOBS_MALLOC(2 * m * sizeof(double));
    if (!x) return;
    y = x + m;
    for (i = 0; i < m; i++) x[i] = (double)(s[first + i].time_ns - s[first].time_ns) / 60e9; /* minutes */
    for (k = 0; k < 4; k++) {
        for (i = 0; i < m && known[k]; i++) {
            const memobs_sample_t *e = &s[first + i];
            uint64_t v = k == 0 ? e->rss_bytes : k == 1 ? e->anon_bytes : k == 2 ? e->heap_bytes
                       : e->tracked_host_bytes + e->tracked_pinned_bytes;
            if (v == MEMOBS_UNKNOWN) known[k] = 0;
            y[i] = (double)v / 1e6; /* MB */
        }
        if (known[k]) memobs__leak_fit(x, y, m, &slope[k], &r2[k]);
    }
    MEMOBS_FREE(x);
    out->rss_known = known[0];
    out->anon_known = known[1];
    out->heap_known = known[2];
    out->rss_mb_min = slope[0], out->rss_r2 = r2[0];
    out->anon_mb_min = slope[1], out->anon_r2 = r2[1];
    out->heap_mb_min = slope[2], out->heap_r2 = r2[2];
    out->tracked_mb_min = slope[3], out->tracked_r2 = r2[3];
    if (m < MEMOBS__LEAK_MIN_SAMPLES) return;
    /* Anonymous memory when the kernel gives it: RSS also grows when a
       file (model weights) is mapped and read, which is no leak. */
    k = known[1] ? 1 : known[0] ? 0 : 4;
    if (k == 4 || !(slope[k] > MEMOBS__LEAK_MB_MIN && r2[k] >= MEMOBS__LEAK_R2)) return;
    if (slope[k] * out->window_s / 60.0 < MEMOBS__LEAK_MIN_MB) return;
    {
        double heap = known[2] && slope[2] > 0 ? slope[2] : 0, tracked = slope[3] > 0 ? slope[3] : 0;
        out->growth_mb_min = slope[k];
        out->growth_r2 = r2[k];
        int heap_lin = heap > MEMOBS__LEAK_MB_MIN && r2[2] >= MEMOBS__LEAK_R2;
        int tracked_lin = tracked > MEMOBS__LEAK_MB_MIN && r2[3] >= MEMOBS__LEAK_R2;
        if (heap + tracked < MEMOBS__LEAK_FLAT * slope[k]) {
            out->kind = known[2] ? MEMOBS_LEAK_OUTSIDE_MALLOC : MEMOBS_LEAK_UNEXPLAINED;
        } else if (heap_lin && (heap >= tracked || !tracked_lin)) {
            out->kind = MEMOBS_LEAK_HEAP;
            out->growth_mb_min = slope[2];
            out->growth_r2 = r2[2];
        } else if (tracked_lin) {
            out->kind = MEMOBS_LEAK_TRACKED;
            out->growth_mb_min = slope[3];
            out->growth_r2 = r2[3];
        } else {
            out->kind = MEMOBS_LEAK_UNEXPLAINED; /* heap or tracked bytes move, but not along with it */
        }
    }
}

int memobs_leak_check(memobs_leak_t *out) {
    memobs_sample_t *s;
    size_t n;
    if (!out) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_leak_check: NULL output");
        return MEMOBS_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    memobs_init();
    memobs__bg_poke();
    n = memobs__samples_copy(NULL, 0);
    if (n == 0) return MEMOBS_OK;
    s = (memobs_sample_t *)MEMOBS_MALLOC(n * sizeof *s);
    if (!s) return MEMOBS_ERR_NOMEM;
    n = memobs__samples_copy(s, n);
    memobs__leak_eval(s, n, memobs__smp.window_s ? memobs__smp.window_s : 120u, out);
    MEMOBS_FREE(s);
    return MEMOBS_OK;
}

/* R^2 as printed: cut (not rounded) to two decimals, so 0.999 reads 0.99. */
static double memobs__r2_cut(double r2) { return (double)(long)(r2 * 100.0) / 100.0; }

/* The summary's host-memory piece, only when samples were taken: one line
   (text) or a "host_memory" member (json). */
static void memobs__json_num(memobs__out_t *o, const char *key, int known, double v) {
    if (known) memobs__out_printf(o, ",\"%s\":%.6g", key, v);
    else memobs__out_printf(o, ",\"%s\":null", key);
}

static void memobs__leak_write(memobs__out_t *o, int json) {
    static const char *const kind[5] = {"none", "outside_malloc", "heap", "tracked", "unexplained"};
    memobs_leak_t l;
    double r2;
    if (memobs_leak_check(&l) != MEMOBS_OK || l.samples == 0) return;
    r2 = memobs__r2_cut(l.growth_r2);
    if (json) {
        memobs__out_printf(o, ",\"host_memory\":{\"samples\":%llu,\"dropped\":%llu,\"leak\":{\"kind\":\"%s\","
                           "\"window_s\":%.6g", (unsigned long long)l.samples,
                           (unsigned long long)memobs_get_samples_dropped(), kind[l.kind], l.window_s);
        memobs__json_num(o, "rss_mb_per_min", l.rss_known, l.rss_mb_min);
        memobs__json_num(o, "rss_r2", l.rss_known, l.rss_r2);
        memobs__json_num(o, "anon_mb_per_min", l.anon_known, l.anon_mb_min);
        memobs__json_num(o, "anon_r2", l.anon_known, l.anon_r2);
        memobs__json_num(o, "heap_mb_per_min", l.heap_known, l.heap_mb_min);
        memobs__json_num(o, "heap_r2", l.heap_known, l.heap_r2);
        memobs__json_num(o, "tracked_mb_per_min", 1, l.tracked_mb_min);
        memobs__json_num(o, "tracked_r2", 1, l.tracked_r2);
        memobs__json_num(o, "growth_mb_per_min", 1, l.growth_mb_min);
        memobs__json_num(o, "growth_r2", 1, l.growth_r2);
        memobs__out_str(o, "}}");
        return;
    }
    switch (l.kind) {
    case MEMOBS_LEAK_OUTSIDE_MALLOC:
        memobs__out_printf(o, "  memory mapped outside malloc is growing at %.1f MB/min (R^2 = %.2f)\n",
                           l.growth_mb_min, r2);
        break;
    case MEMOBS_LEAK_HEAP:
        memobs__out_printf(o, "  memory allocated through malloc is growing at %.1f MB/min (R^2 = %.2f)\n",
                           l.growth_mb_min, r2);
        break;
    case MEMOBS_LEAK_TRACKED:
        memobs__out_printf(o, "  tracked host memory is growing at %.1f MB/min (R^2 = %.2f): see "
                           "memobs_print_alloc_groups()\n", l.growth_mb_min, r2);
        break;
    case MEMOBS_LEAK_UNEXPLAINED:
        memobs__out_printf(o, "  %s memory is growing at %.1f MB/min (R^2 = %.2f); the malloc heap %s\n",
                           l.anon_known ? "anonymous" : "resident", l.growth_mb_min, r2,
                           l.heap_known ? "and tracked allocations do not follow it" : "cannot be read here");
        break;
    default:
        memobs__out_printf(o, "  host memory: %llu samples over %.1f s, %s anonymous %.1f MB/min; no leak signature\n",
                           (unsigned long long)l.samples, l.window_s, l.anon_known ? "" : "(unknown; RSS)",
                           l.anon_known ? l.anon_mb_min : l.rss_mb_min);
        break;
    }
}

/* ======================================================================== */
/* Private: notable events and Stormlog telemetry                >>stormlog */
/* ======================================================================== */

#ifndef MEMOBS_NO_STORMLOG

/* A ring of cap slots that keeps the newest: the slot for the next entry
   (the oldest one when full, which is then dropped and counted). Caller
   holds the ring's lock. */
static uint32_t memobs__ring_put(uint32_t *head, uint32_t *n, uint64_t *dropped, uint32_t cap) {
    uint32_t slot;
    if (*n < cap) return (*head + (*n)++) % cap;
    slot = *head;
    *head = (*head + 1) % cap;
    ++*dropped;
    return slot;
}

/* Requests that moved bytes, for their "request" events: a ring of the
   newest MEMOBS__SL_REQS, filled where a request finishes (under
   memobs__att.lock, which guards it: see memobs__tl_rq), made at the
   first (memobs__pages); overwritten ones are counted. */
#define MEMOBS__SL_REQS 1024
typedef struct {
    uint64_t end, begin, id, wait;
    uint64_t x[2][MEMOBS__NDIR]; /* bytes, operations by direction */
    uint32_t state, tenant;      /* memobs_request_state_t; memobs__req_t's tenant */
} memobs__sl_req_t;

static struct {
    memobs__sl_req_t *r;
    uint32_t head, n;
    uint64_t dropped;
} memobs__sl_rq;

static void memobs__sl_req_done(const memobs_request_info_t *i, uint32_t tenant) {
    memobs__sl_req_t q;
    unsigned p, k;
    uint64_t ops = 0;
    memset(&q, 0, sizeof q);
    for (p = 0; p < MEMOBS__NPHASE; p++)
        for (k = 0; k < MEMOBS__NDIR; k++) {
            const memobs_xfer_t *x = memobs_dirs_get(&i->xfer[p], k);
            q.x[0][k] = memobs__sat(q.x[0][k], x->bytes);
            q.x[1][k] += x->count;
            ops += x->count;
        }
    if (!ops) return; /* moved nothing: no event */
    q.end = i->end_ns > i->begin_ns ? i->end_ns : i->begin_ns;
    q.begin = i->begin_ns;
    q.id = i->id;
    q.wait = i->wait_ns;
    q.state = (uint32_t)i->state;
    q.tenant = tenant;
    if (!memobs__sl_rq.r) memobs__sl_rq.r = (memobs__sl_req_t *)memobs__pages(MEMOBS__SL_REQS * sizeof q);
    if (!memobs__sl_rq.r) {
        memobs__sl_rq.dropped++;
        return;
    }
    memobs__sl_rq.r[memobs__ring_put(&memobs__sl_rq.head, &memobs__sl_rq.n, &memobs__sl_rq.dropped,
                                     MEMOBS__SL_REQS)] = q;
}

static void memobs__sl_push(const memobs__sl_event_t *e) {
    memobs__spin_lock(&memobs__smp.ev_lock);
    memobs__smp.ev[memobs__ring_put(&memobs__smp.ev_head, &memobs__smp.ev_n, &memobs__smp.ev_dropped,
                                    MEMOBS__SL_EVENTS)] = *e;
    memobs__spin_unlock(&memobs__smp.ev_lock);
}

/* Into the ring of marks, made at the first (160 KB a program without
   collectives never pays); without memory, dropped and counted. */
static void memobs__sl_mark_put(const memobs__sl_mark_t *m) {
    memobs__spin_lock(&memobs__smp.mk_lock);
    if (!memobs__smp.mk) memobs__smp.mk = (memobs__sl_mark_t *)memobs__pages(MEMOBS__SL_MARKS * sizeof *m);
    if (memobs__smp.mk)
        memobs__smp.mk[memobs__ring_put(&memobs__smp.mk_head, &memobs__smp.mk_n, &memobs__smp.mk_dropped,
                                        MEMOBS__SL_MARKS)] = *m;
    else memobs__smp.mk_dropped++;
    memobs__spin_unlock(&memobs__smp.mk_lock);
}

/* A region (at its end) or marker of a collective name. */
static void memobs__sl_mark(uint64_t t0, uint64_t dur, int32_t id, int is_mark) {
    memobs__sl_mark_t m;
    m.t0 = t0;
    m.dur = dur;
    m.id = id;
    m.is_mark = (uint32_t)is_mark;
    m.bytes = m.seq = 0;
    memobs__sl_mark_put(&m);
}

/* A collective (memobs_record_coll_ex, at most one per communicator and
   kind per 10 ms): an event of its own, which Stormlog's collective
   attribution reads as a marker ("nccl" in its type and context). */
static void memobs__sl_coll(uint64_t t0, uint64_t dur, int32_t comm, int32_t kind, unsigned phase, uint64_t bytes,
                            uint64_t seq) {
    memobs__sl_mark_t m;
    m.t0 = t0;
    m.dur = dur;
    m.id = comm << 12 | (int32_t)(phase & 15u) << 8 | (kind & 0xff);
    m.is_mark = 2;
    m.bytes = bytes;
    m.seq = seq;
    memobs__sl_mark_put(&m);
}

static void memobs__sl_devmem(memobs__sl_event_t *e) {
    memobs__devmem_fn_t fn = __atomic_load_n(&memobs__devmem_fn, __ATOMIC_ACQUIRE);
    if (!fn || e->device < 0 || fn((int)e->device, &e->used, &e->free_bytes, &e->total, &e->as_of) != 0) {
        e->used = e->free_bytes = e->total = MEMOBS_UNKNOWN;
        e->as_of = 0;
    }
}

/* The tracker, after a device allocation: dc is the device's tracked bytes
   now, before its maximum until then. A new maximum past the threshold
   (MEMOBS_PEAK_GROWTH over the last event, at least MEMOBS_PEAK_MIN, as
   the peak report) becomes a "peak" event; one thread wins each step. */
static void memobs__sl_peak(int device, uint64_t dc, uint64_t before, uint32_t trace) {
    memobs__sl_event_t e;
    uint64_t next;
    if (dc <= before || device < 0 || device >= MEMOBS_MAX_DEVICES) return;
    next = MEMOBS__LOAD(&memobs__smp.peak_next[device].v);
    if (dc < next || dc < MEMOBS__LOAD(&MEMOBS__TRK.peak_min.v)) return;
    if (!MEMOBS__CAS(&memobs__smp.peak_next[device].v, &next, memobs__peak_next(dc))) return;
    memset(&e, 0, sizeof e);
    e.time_ns = memobs_now_ns();
    e.type = MEMOBS__EV_PEAK;
    e.device = (int32_t)device;
    e.tracked = dc;
    e.prev = MEMOBS__XCHG(&memobs__smp.peak_rep[device].v, dc);
    e.trace = trace;
    memobs__sl_devmem(&e);
    memobs__sl_push(&e);
}

/* memobs_cuda.h, after an allocation failed with out-of-memory. */
static void memobs__sl_oom(const char *call, uint64_t size, int device) __attribute__((unused));
static void memobs__sl_oom(const char *call, uint64_t size, int device) {
    memobs__sl_event_t e;
    memset(&e, 0, sizeof e);
    e.time_ns = memobs_now_ns();
    e.type = MEMOBS__EV_OOM;
    e.device = (int32_t)device;
    e.tracked = memobs_get_device_bytes(device, NULL);
    e.request = size;
    e.trace = MEMOBS_NO_TRACE;
    e.call = call;
    memobs__sl_devmem(&e);
    memobs__sl_push(&e);
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC, to turn sample times into epoch
   nanoseconds (Stormlog aligns ranks and shows times of day). */
static int64_t memobs__wall_offset_ns(void) {
#if defined(__linux__) && defined(__LP64__)
    struct memobs__timespec ts;
    memobs__clock_gettime(0, &ts);
#else
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
#endif
    return (int64_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) - (int64_t)memobs_now_ns();
}

static void memobs__sl_u64(FILE *f, const char *key, uint64_t v) {
    if (v == MEMOBS_UNKNOWN) fprintf(f, ",\"%s\":null", key);
    else fprintf(f, ",\"%s\":%llu", key, (unsigned long long)v);
}

/* The keys every event has, up to device_id. */
static void memobs__sl_head(FILE *f, int *first, const memobs_identity_t *id, int64_t wall, uint64_t t,
                            const char *type, uint32_t interval_ms, int device) {
    int64_t ts = (int64_t)t + wall;
    fprintf(f, "%s\n{\"schema_version\":2,\"timestamp_ns\":%lld,\"event_type\":\"%s\",\"collector\":\"memobs\","
            "\"sampling_interval_ms\":%u,\"pid\":%lld,\"host\":", *first ? "" : ",", (long long)(ts < 0 ? 0 : ts),
            type, (unsigned)interval_ms, (long long)id->pid);
    *first = 0;
    memobs__json_str(f, id->host);
    fputs(",\"job_id\":", f);
    if (id->job_id[0]) memobs__json_str(f, id->job_id);
    else fputs("null", f);
    fprintf(f, ",\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"device_id\":%d", (int)id->rank,
            (int)id->local_rank, (int)id->world_size, device);
}

/* allocated, reserved, active, inactive, used, free, total, change:
   required ones must be known (the caller checks); used and free are
   dropped to null/0-free if the driver's figures do not add up. */
static void memobs__sl_fields(FILE *f, uint64_t alloc, uint64_t reserved, uint64_t active, uint64_t inactive,
                              uint64_t used, uint64_t free_b, uint64_t total, int64_t change) {
    if (total != MEMOBS_UNKNOWN && free_b != MEMOBS_UNKNOWN && (used > total || free_b > total - used))
        free_b = MEMOBS_UNKNOWN;
    if (total != MEMOBS_UNKNOWN && used > total) total = MEMOBS_UNKNOWN;
    fprintf(f, ",\"allocator_allocated_bytes\":%llu,\"allocator_reserved_bytes\":%llu", (unsigned long long)alloc,
            (unsigned long long)reserved);
    memobs__sl_u64(f, "allocator_active_bytes", active);
    memobs__sl_u64(f, "allocator_inactive_bytes", inactive);
    fprintf(f, ",\"device_used_bytes\":%llu", (unsigned long long)used);
    memobs__sl_u64(f, "device_free_bytes", free_b);
    memobs__sl_u64(f, "device_total_bytes", total);
    fprintf(f, ",\"allocator_change_bytes\":%lld", (long long)change);
}

/* What one "sample" of a series says: the Stormlog fields, and where
   they come from. A sample not in the series has ok 0. */
typedef struct {
    int ok;
    int device;                         /* device_id */
    uint64_t alloc, reserved, inactive; /* allocator_* (inactive: MEMOBS_UNKNOWN if not known) */
    uint64_t used, free_b, total;       /* device_* (free, total: MEMOBS_UNKNOWN if not known) */
} memobs__sl_fig_t;

/* The figures of sample s in the device series (dev_id: the series'
   device_id) or the host series. */
static memobs__sl_fig_t memobs__sl_figures(const memobs_sample_t *s, int device_series, int dev_id, uint64_t phys) {
    memobs__sl_fig_t g;
    uint32_t d;
    memset(&g, 0, sizeof g);
    g.inactive = g.free_b = g.total = MEMOBS_UNKNOWN;
    if (!device_series) {
        /* The host as device -1: malloc is its allocator (allocated: in use,
           reserved: taken from the system), RSS what the system says is
           used, physical memory its total; the gap Stormlog draws (used -
           reserved) is then memory outside malloc. */
        if (s->rss_bytes == MEMOBS_UNKNOWN || s->heap_bytes == MEMOBS_UNKNOWN) return g;
        g.ok = 1;
        g.device = -1;
        g.alloc = s->heap_bytes;
        g.reserved = s->heap_reserved_bytes >= s->heap_bytes ? s->heap_reserved_bytes : s->heap_bytes;
        g.inactive = g.reserved - g.alloc;
        g.used = s->rss_bytes;
        g.total = phys;
        return g;
    }
    /* The devices: memobs' tracked blocks are both what the allocator
       handed out and what it holds; the gap is memory outside memobs. Free
       and total only when every device gave them. */
    g.device = dev_id;
    g.free_b = g.total = 0;
    for (d = 0; d < s->ndev; d++) {
        const memobs_sample_dev_t *x = &s->dev[d];
        if (x->used == MEMOBS_UNKNOWN) continue;
        g.ok = 1;
        g.alloc += x->tracked;
        g.used += x->used;
        if (g.free_b != MEMOBS_UNKNOWN) g.free_b = x->free_bytes == MEMOBS_UNKNOWN ? MEMOBS_UNKNOWN : g.free_b + x->free_bytes;
        if (g.total != MEMOBS_UNKNOWN) g.total = x->total == MEMOBS_UNKNOWN ? MEMOBS_UNKNOWN : g.total + x->total;
    }
    g.reserved = g.alloc;
    return g;
}

/* The regions open at a sample as Stormlog's context, or JSON null. */
static void memobs__sl_context(FILE *f, const memobs_sample_t *s) {
    char buf[MEMOBS_SAMPLE_REGIONS * (MEMOBS__REG_NAME + 3) + 1];
    size_t o = 0;
    uint32_t i;
    int sep = 0;
    buf[0] = 0;
    for (i = 0; i < s->nregion && i < MEMOBS_SAMPLE_REGIONS; i++) {
        const char *name = s->region[i] < 0 ? NULL : memobs_region_label(s->region[i]);
        if (s->region[i] < 0) {
            sep = 2;
            continue;
        }
        if (!name) continue;
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", o ? (sep == 2 ? " | " : "/") : "", name);
        sep = 1;
    }
    if (o) memobs__json_str(f, buf);
    else fputs("null", f);
}

/* The host's figures of a sample as metadata members, names prefixed. */
static void memobs__sl_host(FILE *f, const memobs_sample_t *s, const char *prefix) {
    const char *const key[5] = {"rss_bytes", "anon_bytes", "heap_bytes", "tracked_host_bytes", "tracked_pinned_bytes"};
    const uint64_t v[5] = {s->rss_bytes, s->anon_bytes, s->heap_bytes, s->tracked_host_bytes, s->tracked_pinned_bytes};
    char name[64];
    unsigned i;
    for (i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, key[i]);
        memobs__sl_u64(f, name, v[i]);
    }
}

/* Device figures read before the sample (CUDA had shut down: the last
   ones, see memobs_sample_dev_t.as_of_ns): when the oldest was read. */
static void memobs__sl_as_of(FILE *f, const memobs_sample_dev_t *dev, uint32_t n, uint64_t t, int64_t wall) {
    uint64_t oldest = UINT64_MAX;
    uint32_t d;
    for (d = 0; d < n && d < MEMOBS_SAMPLE_DEVICES; d++)
        if (dev[d].used != MEMOBS_UNKNOWN && dev[d].as_of_ns && dev[d].as_of_ns < oldest) oldest = dev[d].as_of_ns;
    if (oldest < t) fprintf(f, ",\"device_figures_as_of_ns\":%lld", (long long)oldest + (long long)wall);
}

static void memobs__sl_sample(FILE *f, int *first, const memobs_identity_t *id, int64_t wall,
                              const memobs_sample_t *s, const memobs__sl_fig_t *g, const memobs__sl_fig_t *prev) {
    uint32_t d, known = 0;
    memobs__sl_head(f, first, id, wall, s->time_ns, "sample", s->interval_ms, g->device);
    memobs__sl_fields(f, g->alloc, g->reserved, MEMOBS_UNKNOWN, g->inactive, g->used, g->free_b, g->total,
                      prev ? (int64_t)(g->alloc - prev->alloc) : 0);
    fputs(",\"context\":", f);
    memobs__sl_context(f, s);
    if (g->device < 0) {
        fputs(",\"metadata\":{\"source\":\"host\"", f);
        memobs__sl_host(f, s, "");
        fputs("}}", f);
        return;
    }
    for (d = 0; d < s->ndev; d++) known += s->dev[d].used != MEMOBS_UNKNOWN;
    fprintf(f, ",\"metadata\":{\"source\":\"cuda\",\"devices\":%u,\"tracked_bytes\":%llu,\"outside_bytes\":%lld",
            (unsigned)known, (unsigned long long)g->alloc, (long long)g->used - (long long)g->alloc);
    memobs__sl_as_of(f, s->dev, s->ndev, s->time_ns, wall);
    for (d = 0; known > 1 && d < s->ndev; d++) {
        const memobs_sample_dev_t *x = &s->dev[d];
        char key[48];
        if (x->used == MEMOBS_UNKNOWN) continue;
        snprintf(key, sizeof key, "device_%d_used_bytes", (int)x->device);
        memobs__sl_u64(f, key, x->used);
        snprintf(key, sizeof key, "device_%d_total_bytes", (int)x->device);
        memobs__sl_u64(f, key, x->total);
        snprintf(key, sizeof key, "device_%d_tracked_bytes", (int)x->device);
        memobs__sl_u64(f, key, x->tracked);
    }
    memobs__sl_host(f, s, "host_");
    fputs("}}", f);
}

/* A region edge or a marker: the series' figures of the sample before it
   (g; all 0 when there is none), device_total_bytes null. */
static void memobs__sl_mark_event(FILE *f, int *first, const memobs_identity_t *id, int64_t wall, uint64_t t,
                                  const memobs__sl_mark_t *m, int end, int device, const memobs__sl_fig_t *g) {
    const char *name = m->is_mark == 2 ? NULL : memobs_region_label(m->id);
    if (m->is_mark == 2) {
        uint32_t c = (uint32_t)m->id >> 12, k = (uint32_t)m->id & 0xffu;
        const char *kl = memobs_coll_kind_label((memobs_coll_kind_t)k);
        char ctx[MEMOBS__COLL_LABEL + 8];
        if (c >= MEMOBS_MAX_COMMS) c = 0;
        snprintf(ctx, sizeof ctx, "nccl %s", kl ? kl : "other");
        memobs__sl_head(f, first, id, wall, t, "nccl_collective", 0, device);
        memobs__sl_fields(f, g->ok ? g->alloc : 0, g->ok ? g->reserved : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                          g->ok ? g->used : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, 0);
        fputs(",\"context\":", f);
        memobs__json_str(f, ctx);
        fprintf(f, ",\"metadata\":{\"source\":\"memobs\",\"figures_from\":\"%s\",\"comm\":",
                g->ok ? "previous sample" : "none");
        memobs__json_str(f, memobs__coll.comm[c].name);
        fprintf(f, ",\"comm_rank\":%d,\"nranks\":%d,\"kind\":", (int)memobs__coll.comm[c].rank,
                (int)memobs__coll.comm[c].nranks);
        memobs__json_str(f, kl ? kl : "other");
        fprintf(f, ",\"bytes\":%llu,\"seq\":%llu,\"phase\":\"%s\",\"duration_ns\":%llu}}",
                (unsigned long long)m->bytes, (unsigned long long)m->seq,
                memobs__prom_phase[((uint32_t)m->id >> 8 & 15u) % 3u], (unsigned long long)m->dur);
        return;
    }
    memobs__sl_head(f, first, id, wall, t, m->is_mark ? "marker" : "region", 0, device);
    memobs__sl_fields(f, g->ok ? g->alloc : 0, g->ok ? g->reserved : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                      g->ok ? g->used : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, 0);
    fputs(",\"context\":", f);
    memobs__json_str(f, name ? name : "(unknown)");
    fprintf(f, ",\"metadata\":{\"source\":\"memobs\",\"figures_from\":\"%s\"", g->ok ? "previous sample" : "none");
    if (!m->is_mark)
        fprintf(f, ",\"edge\":\"%s\",\"duration_ns\":%llu", end ? "end" : "begin", (unsigned long long)m->dur);
    fputs("}}", f);
}

static void memobs__sl_event(FILE *f, int *first, const memobs_identity_t *id, int64_t wall,
                             const memobs__sl_event_t *e) {
    char text[256];
    int from_driver = e->used != MEMOBS_UNKNOWN;
    memobs__sl_head(f, first, id, wall, e->time_ns, e->type == MEMOBS__EV_PEAK ? "peak" : "oom", 0, (int)e->device);
    /* Without the driver's figure, used is what memobs tracks (a lower
       bound), and metadata says so. The total goes to metadata only: an
       event with device_total_bytes would join the gap analysis' series
       (one device's figures among the samples' sums over devices). */
    memobs__sl_fields(f, e->tracked, e->tracked, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, from_driver ? e->used : e->tracked,
                      from_driver ? e->free_bytes : MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                      e->type == MEMOBS__EV_PEAK && e->prev ? (int64_t)(e->tracked - e->prev) : 0);
    fputs(",\"context\":", f);
    text[0] = 0;
    if (e->type == MEMOBS__EV_PEAK && e->trace != MEMOBS_NO_TRACE && memobs_format_trace(text, sizeof text, e->trace) > 0)
        text[strcspn(text, "\n")] = 0; /* the tag (or first frame) names the allocation */
    if (e->type == MEMOBS__EV_OOM) snprintf(text, sizeof text, "%s", e->call ? e->call : "");
    if (text[0]) memobs__json_str(f, text);
    else fputs("null", f);
    fprintf(f, ",\"metadata\":{\"source\":\"%s\",\"device_used_from\":\"%s\"", e->type == MEMOBS__EV_PEAK ? "tracker" : "cuda",
            from_driver ? "driver" : "tracker");
    if (from_driver) memobs__sl_u64(f, "driver_total_bytes", e->total);
    if (from_driver && e->as_of && e->as_of < e->time_ns)
        fprintf(f, ",\"device_figures_as_of_ns\":%lld", (long long)e->as_of + (long long)wall);
    if (e->type == MEMOBS__EV_PEAK) {
        fprintf(f, ",\"previous_peak_bytes\":%llu", (unsigned long long)e->prev);
        if (e->trace != MEMOBS_NO_TRACE) fprintf(f, ",\"trace\":%u", (unsigned)e->trace);
    } else {
        fprintf(f, ",\"requested_bytes\":%llu", (unsigned long long)e->request);
    }
    fputs("}}", f);
}

/* A region edge or marker to write: the time, the mark, which edge. */
typedef struct {
    uint64_t t;
    uint32_t mark, end;
} memobs__sl_edge_t;

static int memobs__sl_edge_cmp(const void *x, const void *y) {
    const memobs__sl_edge_t *a = (const memobs__sl_edge_t *)x, *b = (const memobs__sl_edge_t *)y;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return a->mark != b->mark ? (a->mark < b->mark ? -1 : 1) : (a->end < b->end ? -1 : a->end > b->end);
}

/* The writer of both files: host_only writes the host series and no
   device events. */
/* A peer's bytes so far (sent, received; by phase), at the end of the file:
   event_type "peer_transfer", context "peer <name>", figures of the last
   sample as a region's. */
static void memobs__sl_peer_event(FILE *f, int *first, const memobs_identity_t *id, int64_t wall, uint64_t t,
                                  const memobs_peer_stats_t *p, int device, const memobs__sl_fig_t *g) {
    static const char *const dn[MEMOBS_PEER_DIRS] = {"send", "recv"};
    char ctx[MEMOBS__PEER_LABEL + 8];
    unsigned d, ph;
    snprintf(ctx, sizeof ctx, "peer %s", p->name);
    memobs__sl_head(f, first, id, wall, t, "peer_transfer", 0, device);
    memobs__sl_fields(f, g->ok ? g->alloc : 0, g->ok ? g->reserved : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                      g->ok ? g->used : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, 0);
    fputs(",\"context\":", f);
    memobs__json_str(f, ctx);
    fprintf(f, ",\"metadata\":{\"source\":\"memobs\",\"figures_from\":\"%s\",\"peer\":",
            g->ok ? "previous sample" : "none");
    memobs__json_str(f, p->name);
    if (p->comm >= 0 && p->comm < MEMOBS_MAX_COMMS) {
        fputs(",\"comm\":", f);
        memobs__json_str(f, memobs__coll.comm[p->comm].name);
        fprintf(f, ",\"peer_rank\":%d", p->rank);
    }
    for (d = 0; d < MEMOBS_PEER_DIRS; d++) {
        uint64_t bytes = 0, ops = 0;
        for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
            bytes = bytes + p->bytes[d][ph] < bytes ? ~0ull : bytes + p->bytes[d][ph];
            ops += p->ops[d][ph];
        }
        fprintf(f, ",\"%s_bytes\":%llu,\"%s_ops\":%llu", dn[d], (unsigned long long)bytes, dn[d],
                (unsigned long long)ops);
        for (ph = 0; ph < MEMOBS__NPHASE; ph++)
            if (p->ops[d][ph])
                fprintf(f, ",\"%s_bytes_%s\":%llu", dn[d], memobs__prom_phase[ph],
                        (unsigned long long)p->bytes[d][ph]);
    }
    fputs("}}", f);
}

/* The window's transfers, no memory figure either: one "transfers" event,
   last, when any was recorded. Per direction with any: bytes and ops,
   bytes per phase, the timed bytes and ns, the size percentiles (log2
   bucket bounds). */
static void memobs__sl_xfer_event(FILE *f, int *first, const memobs_identity_t *id, int64_t wall, uint64_t t,
                                  const memobs_summary_t *sm, int device, const memobs__sl_fig_t *g,
                                  uint64_t rq_dropped) {
    unsigned d, ph;
    memobs__sl_head(f, first, id, wall, t, "transfers", 0, device);
    memobs__sl_fields(f, g->ok ? g->alloc : 0, g->ok ? g->reserved : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                      g->ok ? g->used : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, 0);
    fprintf(f, ",\"context\":\"transfers\",\"metadata\":{\"source\":\"memobs\",\"figures_from\":\"%s\"",
            g->ok ? "previous sample" : "none");
    for (d = 0; d < MEMOBS_DIRS; d++) {
        const memobs_xfer_t *x = memobs_dirs_get(&sm->total, d);
        const memobs_xfer_sizes_t *z = &sm->sizes[d];
        const char *k = memobs__dir_key[d];
        uint64_t tb = 0, tn = 0;
        if (!x->count) continue;
        fprintf(f, ",\"%s_bytes\":%llu,\"%s_ops\":%llu", k, (unsigned long long)x->bytes, k,
                (unsigned long long)x->count);
        for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
            const memobs_dirs_t *pd = ph == MEMOBS_PHASE_PREFILL ? &sm->prefill
                                      : ph == MEMOBS_PHASE_DECODE ? &sm->decode : &sm->unphased;
            if (memobs_dirs_get(pd, d)->count)
                fprintf(f, ",\"%s_bytes_%s\":%llu", k, memobs__prom_phase[ph],
                        (unsigned long long)memobs_dirs_get(pd, d)->bytes);
            tb = memobs__sat(tb, sm->timed[ph][d].bytes);
            tn = memobs__sat(tn, sm->timed[ph][d].ns);
        }
        if (tn) fprintf(f, ",\"%s_timed_bytes\":%llu,\"%s_timed_ns\":%llu", k, (unsigned long long)tb, k,
                        (unsigned long long)tn);
        fprintf(f, ",\"%s_size_p50\":%llu,\"%s_size_p90\":%llu,\"%s_size_p99\":%llu,\"%s_size_max\":%llu", k,
                (unsigned long long)z->p50, k, (unsigned long long)z->p90, k, (unsigned long long)z->p99, k,
                (unsigned long long)z->max);
    }
    /* "request" events the ring no longer held */
    if (rq_dropped) fprintf(f, ",\"request_events_dropped\":%llu", (unsigned long long)rq_dropped);
    fputs("}}", f);
}

static int memobs__sl_req_cmp(const void *x, const void *y) {
    const memobs__sl_req_t *a = (const memobs__sl_req_t *)x, *b = (const memobs__sl_req_t *)y;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* A request that moved bytes, at its end: event_type "request", context
   "request <id>", figures of the sample before it as a region's; in
   metadata its id, tenant, state, time and time waited on transfers, and
   per direction it used its bytes and operations (its ledger's). */
static void memobs__sl_req_event(FILE *f, int *first, const memobs_identity_t *id, int64_t wall,
                                 const memobs__sl_req_t *q, int device, const memobs__sl_fig_t *g) {
    static const char *const state[5] = {"in flight", "completed", "aborted", "abandoned", "dropped"};
    unsigned d;
    memobs__sl_head(f, first, id, wall, q->end, "request", 0, device);
    memobs__sl_fields(f, g->ok ? g->alloc : 0, g->ok ? g->reserved : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                      g->ok ? g->used : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, 0);
    fprintf(f, ",\"context\":\"request %llu\",\"metadata\":{\"source\":\"memobs\",\"figures_from\":\"%s\","
            "\"request_id\":%llu,\"tenant\":", (unsigned long long)q->id, g->ok ? "previous sample" : "none",
            (unsigned long long)q->id);
    if (q->tenant) memobs__json_str(f, q->tenant > MEMOBS_MAX_TENANTS ? "other" : memobs__att.ten[q->tenant - 1]);
    else fputs("null", f);
    fprintf(f, ",\"state\":\"%s\",\"duration_ns\":%llu,\"wait_ns\":%llu", state[q->state < 5 ? q->state : 0],
            (unsigned long long)(q->end - q->begin), (unsigned long long)q->wait);
    for (d = 0; d < MEMOBS_DIRS; d++)
        if (q->x[1][d])
            fprintf(f, ",\"%s_bytes\":%llu,\"%s_ops\":%llu", memobs__dir_key[d], (unsigned long long)q->x[0][d],
                    memobs__dir_key[d], (unsigned long long)q->x[1][d]);
    fputs("}}", f);
}

static void memobs__xin_sl(FILE *f, int *first, const memobs_identity_t *id, int64_t wall, int device,
                           const memobs__sl_fig_t *g); /* stuck transfers (section inflight) */
static int memobs__sl_write(FILE *f, int host_only) {
    memobs_identity_t id;
    memobs_sample_t *s = NULL;
    memobs__sl_event_t ev[MEMOBS__SL_EVENTS];
    memobs__sl_mark_t *mk = NULL;
    memobs__sl_edge_t *edge = NULL;
    memobs__sl_req_t *rq = NULL;
    memobs__sl_fig_t last, cur;
    size_t n, i = 0, j = 0, k = 0, r = 0, nev, nmk = 0, nedge = 0, nrq = 0;
    uint64_t rq_dropped;
    int first = 1, device_series = 0, dev_id = MEMOBS_MAX_DEVICES, have_last = 0;
    int64_t wall;
    uint64_t phys = MEMOBS_UNKNOWN;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint32_t busy = memobs__tls.busy;
    memobs_init();
    memobs__bg_poke();
    memobs_get_identity(&id);
    if (pages > 0 && page > 0) phys = (uint64_t)pages * (uint64_t)page;
    n = memobs__samples_copy(NULL, 0);
    memobs__tls.busy = 1; /* copies of memobs' own: not the engine's allocations */
    if (n) s = (memobs_sample_t *)MEMOBS_MALLOC(n * sizeof *s);
    mk = (memobs__sl_mark_t *)MEMOBS_MALLOC(MEMOBS__SL_MARKS * sizeof *mk);
    edge = (memobs__sl_edge_t *)MEMOBS_MALLOC(2 * MEMOBS__SL_MARKS * sizeof *edge);
    if (!host_only) rq = (memobs__sl_req_t *)MEMOBS_MALLOC(MEMOBS__SL_REQS * sizeof *rq);
    memobs__tls.busy = busy;
    if ((n && !s) || !mk || !edge || (!host_only && !rq)) {
        memobs__tls.busy = 1;
        if (s) MEMOBS_FREE(s);
        if (mk) MEMOBS_FREE(mk);
        if (edge) MEMOBS_FREE(edge);
        if (rq) MEMOBS_FREE(rq);
        memobs__tls.busy = busy;
        return MEMOBS_ERR_NOMEM;
    }
    if (n) n = memobs__samples_copy(s, n);
    memobs__spin_lock(&memobs__smp.ev_lock);
    nev = memobs__smp.ev_n;
    for (j = 0; j < nev; j++) ev[j] = memobs__smp.ev[(memobs__smp.ev_head + j) % MEMOBS__SL_EVENTS];
    memobs__spin_unlock(&memobs__smp.ev_lock);
    memobs__spin_lock(&memobs__smp.mk_lock);
    nmk = memobs__smp.mk_n;
    for (j = 0; j < nmk; j++) mk[j] = memobs__smp.mk[(memobs__smp.mk_head + j) % MEMOBS__SL_MARKS];
    memobs__spin_unlock(&memobs__smp.mk_lock);
    memobs__mutex_lock(&memobs__att.lock);
    nrq = rq ? memobs__sl_rq.n : 0;
    for (j = 0; j < nrq; j++) rq[j] = memobs__sl_rq.r[(memobs__sl_rq.head + j) % MEMOBS__SL_REQS];
    rq_dropped = memobs__sl_rq.dropped;
    memobs__mutex_unlock(&memobs__att.lock);
    if (nrq > 1) qsort(rq, nrq, sizeof *rq, memobs__sl_req_cmp); /* ends seen on several threads: nearly in order */
    for (j = 0; j < nmk; j++) {
        edge[nedge].t = mk[j].t0;
        edge[nedge].mark = (uint32_t)j;
        edge[nedge++].end = 0;
        if (mk[j].is_mark == 0) {
            edge[nedge].t = mk[j].t0 + mk[j].dur;
            edge[nedge].mark = (uint32_t)j;
            edge[nedge++].end = 1;
        }
    }
    qsort(edge, nedge, sizeof *edge, memobs__sl_edge_cmp);
    /* One series: the devices' when any sample has one, named by the
       lowest device index seen. */
    for (i = 0; !host_only && i < n; i++) {
        uint32_t d;
        for (d = 0; d < s[i].ndev; d++) {
            if (s[i].dev[d].used == MEMOBS_UNKNOWN) continue;
            device_series = 1;
            if (s[i].dev[d].device < dev_id) dev_id = s[i].dev[d].device;
        }
    }
    if (!device_series) dev_id = -1;
    if (host_only) nev = 0;
    memset(&last, 0, sizeof last);
    wall = memobs__wall_offset_ns();
    fputc('[', f);
    /* The four lists are each in time order: merge them. */
    for (i = j = k = r = 0; i < n || j < nev || k < nedge || r < nrq;) {
        uint64_t ts = i < n ? s[i].time_ns : UINT64_MAX, te = j < nev ? ev[j].time_ns : UINT64_MAX;
        uint64_t tm = k < nedge ? edge[k].t : UINT64_MAX, tq = r < nrq ? rq[r].end : UINT64_MAX;
        if (i < n && ts <= te && ts <= tm && ts <= tq) {
            cur = memobs__sl_figures(&s[i], device_series, dev_id, phys);
            if (cur.ok) {
                memobs__sl_sample(f, &first, &id, wall, &s[i], &cur, have_last ? &last : NULL);
                last = cur;
                have_last = 1;
            }
            i++;
        } else if (j < nev && te <= tm && te <= tq) {
            memobs__sl_event(f, &first, &id, wall, &ev[j++]);
        } else if (r < nrq && (k >= nedge || tq < tm)) {
            memobs__sl_req_event(f, &first, &id, wall, &rq[r++], dev_id, &last);
        } else {
            memobs__sl_fig_t g = last;
            size_t q;
            /* before the first sample: the first one after, if any */
            for (q = i; !have_last && q < n && !g.ok; q++) g = memobs__sl_figures(&s[q], device_series, dev_id, phys);
            memobs__sl_mark_event(f, &first, &id, wall, tm, &mk[edge[k].mark], (int)edge[k].end, dev_id, &g);
            k++;
        }
    }
    /* Bytes per peer are no memory figure: one event per peer, last. */
    for (j = 0, k = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS); !host_only && j < k; j++) {
        memobs_peer_stats_t ps;
        if (memobs__peer_read((uint32_t)j, &ps)) {
            uint64_t t = memobs_now_ns(); /* after everything else in the file */
            if (n && s[n - 1].time_ns > t) t = s[n - 1].time_ns;
            if (nev && ev[nev - 1].time_ns > t) t = ev[nev - 1].time_ns;
            if (nedge && edge[nedge - 1].t > t) t = edge[nedge - 1].t;
            if (nrq && rq[nrq - 1].end > t) t = rq[nrq - 1].end;
            memobs__sl_peer_event(f, &first, &id, wall, t, &ps, dev_id, &last);
        }
    }
    if (!host_only) memobs__xin_sl(f, &first, &id, wall, dev_id, &last); /* stuck transfers */
    if (!host_only) {
        memobs_summary_t *sm;
        unsigned d, any = 0;
        memobs__tls.busy = 1;
        sm = (memobs_summary_t *)MEMOBS_MALLOC(sizeof *sm);
        memobs__tls.busy = busy;
        if (sm) {
            memobs_get_summary(sm);
            for (d = 0; d < MEMOBS_DIRS; d++) any |= memobs_dirs_get(&sm->total, d)->count != 0;
            if (any) {
                uint64_t t = memobs_now_ns(); /* after everything else in the file */
                if (n && s[n - 1].time_ns > t) t = s[n - 1].time_ns;
                if (nev && ev[nev - 1].time_ns > t) t = ev[nev - 1].time_ns;
                if (nedge && edge[nedge - 1].t > t) t = edge[nedge - 1].t;
                if (nrq && rq[nrq - 1].end > t) t = rq[nrq - 1].end;
                memobs__sl_xfer_event(f, &first, &id, wall, t, sm, dev_id, &last, rq_dropped);
            }
            memobs__tls.busy = 1;
            MEMOBS_FREE(sm);
            memobs__tls.busy = busy;
        }
    }
    fputs("\n]\n", f);
    memobs__tls.busy = 1;
    if (s) MEMOBS_FREE(s);
    MEMOBS_FREE(mk);
    MEMOBS_FREE(edge);
    if (rq) MEMOBS_FREE(rq);
    memobs__tls.busy = busy;
    if (fflush(f) != 0 || ferror(f)) return MEMOBS_ERR_IO;
    return MEMOBS_OK;
}

int memobs_write_stormlog(FILE *f) {
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_stormlog: NULL FILE");
        return MEMOBS_ERR_INVALID;
    }
    return memobs__sl_write(f, 0);
}

int memobs_write_stormlog_host(FILE *f) {
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_stormlog_host: NULL FILE");
        return MEMOBS_ERR_INVALID;
    }
    return memobs__sl_write(f, 1);
}

static int memobs__write_stormlog_f(FILE *f, int unused) {
    (void)unused;
    return memobs__sl_write(f, 0);
}

static int memobs__write_stormlog_host_f(FILE *f, int unused) {
    (void)unused;
    return memobs__sl_write(f, 1);
}

int memobs_write_stormlog_file(const char *path) { return memobs__output_file(MEMOBS__OUT_STORMLOG, path, 0); }

int memobs_write_stormlog_host_file(const char *path) {
    return memobs__output_file(MEMOBS__OUT_STORMLOG_HOST, path, 0);
}

/* Before MEMOBS_STORMLOG and MEMOBS_STORMLOG_HOST are written at exit
   (their rows' pre): one last sample if sampling, once for the two. */
static void memobs__sl_exit_sample(unsigned which) {
    if (which == MEMOBS__OUT_STORMLOG_HOST && MEMOBS__LOAD(&memobs__g.out[MEMOBS__OUT_STORMLOG].on.v)) return;
    if (MEMOBS__LOAD(&memobs__smp.interval_ms.v)) memobs__sampler_tick(memobs_now_ns()); /* one of the series */
}

#else /* MEMOBS_NO_STORMLOG: the names the rest calls, doing nothing */

static void memobs__sl_mark(uint64_t t0, uint64_t dur, int32_t id, int is_mark) {
    (void)t0, (void)dur, (void)id, (void)is_mark;
}

static void memobs__sl_coll(uint64_t t0, uint64_t dur, int32_t comm, int32_t kind, unsigned phase, uint64_t bytes,
                            uint64_t seq) {
    (void)t0, (void)dur, (void)comm, (void)kind, (void)phase, (void)bytes, (void)seq;
}

static void memobs__sl_peak(int device, uint64_t dc, uint64_t before, uint32_t trace) {
    (void)device, (void)dc, (void)before, (void)trace;
}

static void memobs__sl_req_done(const memobs_request_info_t *i, uint32_t tenant) { (void)i, (void)tenant; }

static __attribute__((unused)) void memobs__sl_oom(const char *call, uint64_t size, int device) {
    (void)call, (void)size, (void)device;
}

int memobs_write_stormlog(FILE *f) {
    (void)f;
    return memobs__cut_call("memobs_write_stormlog", "NO_STORMLOG");
}

int memobs_write_stormlog_host(FILE *f) {
    (void)f;
    return memobs__cut_call("memobs_write_stormlog_host", "NO_STORMLOG");
}

/* The rows' writers and pre (never on: memobs__cut_env keeps them off). */
static int memobs__write_stormlog_f(FILE *f, int unused) {
    (void)unused;
    return memobs_write_stormlog(f);
}

static int memobs__write_stormlog_host_f(FILE *f, int unused) {
    (void)unused;
    return memobs_write_stormlog_host(f);
}

static void memobs__sl_exit_sample(unsigned which) { (void)which, (void)memobs__json_str; /* Stormlog's only user */ }

int memobs_write_stormlog_file(const char *path) {
    (void)path;
    return memobs__cut_call("memobs_write_stormlog_file", "NO_STORMLOG");
}

int memobs_write_stormlog_host_file(const char *path) {
    (void)path;
    return memobs__cut_call("memobs_write_stormlog_host_file", "NO_STORMLOG");
}

#endif /* MEMOBS_NO_STORMLOG */

/* Sampler settings from the environment; runs inside memobs__init_once. */
static void memobs__smp_env(void) {
    int v, found = 0;
    memobs__smp.window_s = 120;
    if (memobs__env_int("MEMOBS_SAMPLES", &v, &found)) {
        if (v >= 2) memobs__smp.cap_want = (uint32_t)v;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_SAMPLES=%d: must be at least 2; using %d", v, MEMOBS_SAMPLES);
    }
    if (memobs__env_int("MEMOBS_LEAK_WINDOW_S", &v, &found)) {
        if (v >= 1) memobs__smp.window_s = (uint32_t)v;
        else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_LEAK_WINDOW_S=0: must be at least 1; using 120");
    }
#ifndef MEMOBS_NO_STORMLOG
    (void)memobs__output_env(MEMOBS__OUT_STORMLOG);
    (void)memobs__output_env(MEMOBS__OUT_STORMLOG_HOST);
#else
    memobs__cut_env(memobs__out_info[MEMOBS__OUT_STORMLOG].var, "NO_STORMLOG");
    memobs__cut_env(memobs__out_info[MEMOBS__OUT_STORMLOG_HOST].var, "NO_STORMLOG");
#endif
    if (memobs__env_int("MEMOBS_SAMPLE_MS", &v, &found) && v > 0) (void)memobs__sampler_start((unsigned)v);
}

/* ======================================================================== */
/* Private: transfers in flight                                  >>inflight */
/* ======================================================================== */

/* A bounded table of MEMOBS_MAX_INFLIGHT slots under one spin lock (begin
   and end are not the inline record path: a lock, a few stores), made at
   the first begin from memobs__pages. A token is the slot's generation
   (bumped at each release) over its index + 1, so a token is never 0 and
   a stale one never ends a later transfer of its slot. What the summaries
   and exports read is read without the lock (the crash writer reads it
   too): per direction an atomic count and bytes, the slots' start times
   scanned for the oldest. The stuck check runs at each begin, whenever
   the figures are read through memobs_get_inflight or memobs_get_summary,
   and on the background worker while anything is in flight (its task is
   scheduled at the first begin, and removes itself when the table has
   been found empty). */
#define MEMOBS__XIN_WARN_MAX 16 /* stuck warnings given; later ones counted only */
#define MEMOBS__XIN_EVENTS 256  /* stuck events kept for the timeline and Stormlog (oldest dropped) */
#define MEMOBS__XIN_LIVE 1u
#define MEMOBS__XIN_HELD 0x80u  /* memobs_cuda.h's copy: recorded at issue, not at the end */
#define MEMOBS__XIN_BOUND 0x100u
#define MEMOBS__XIN_DIR(m) ((m) >> 1 & 15u)
#define MEMOBS__XIN_PHASE(m) ((m) >> 5 & 3u)
enum { MEMOBS__XIN_C_STUCK, MEMOBS__XIN_C_ENDED, MEMOBS__XIN_C_CANCELLED, MEMOBS__XIN_C_REFUSED,
       MEMOBS__XIN_C_MISUSE, MEMOBS__XIN_C_N };
enum { MEMOBS__XIN_W_FULL = 1u, MEMOBS__XIN_W_TOKEN = 2u, MEMOBS__XIN_W_NOMEM = 4u, MEMOBS__XIN_W_MORE = 8u };

typedef struct {
    memobs__u64_t start;  /* MEMOBS__XIN_NOW() at the begin; written before meta */
    memobs__u64_t bytes;
    memobs__u32_t meta;   /* 0: free; else MEMOBS__XIN_LIVE | dir << 1 | phase << 5 | HELD | BOUND (release) */
    uint32_t gen;         /* the rest under the lock */
    uint32_t next;        /* the free list: the next free slot's index + 1, 0: none */
    uint32_t warned;      /* its stuck warning was given */
    uint64_t req;         /* the request bound at the begin (BOUND) */
} memobs__xin_slot_t;

typedef struct {
    uint64_t time_ns, age_ns, bytes, req; /* time_ns: memobs_now_ns() when found */
    uint32_t meta;
} memobs__xin_ev_t;

static struct {
    memobs__u32_t lock;        /* everything below but what is atomic */
    memobs__xin_slot_t *slot;  /* MEMOBS_MAX_INFLIGHT, made at the first begin (published with release) */
    memobs__u32_t hwm;         /* slots [0, hwm) were ever used */
    uint32_t free;             /* the first free slot below hwm, index + 1; 0: none */
    memobs__u64_t n[MEMOBS__NDIR], b[MEMOBS__NDIR]; /* in flight now, their bytes */
    memobs__u64_t due;         /* no transfer not yet warned about is stuck before this; 0: none is in flight */
    memobs__u64_t c[MEMOBS__XIN_C_N];
    uint64_t base[MEMOBS__XIN_C_N]; /* memobs_reset's, under the lock */
    memobs__u32_t warned;      /* MEMOBS__XIN_W_* */
    memobs__u32_t said;        /* stuck warnings given */
    memobs__xin_ev_t ev[MEMOBS__XIN_EVENTS];
    uint32_t ev_head, ev_n;
    uint64_t ev_dropped;
    memobs__u32_t bg;          /* the worker's task: 0 none, 1 scheduled, 2 never again (exit) */
} memobs__xin;
static memobs__u64_t memobs__xin_stuck_ns = {60000000000ull}; /* MEMOBS_STUCK_S; 0: off */
static pthread_mutex_t memobs__xin_bg_lock = PTHREAD_MUTEX_INITIALIZER; /* the task's scheduling; held across fork() */

static void memobs__xin_warn(uint32_t bit, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__xin_warn(uint32_t bit, const char *fmt, ...) {
    va_list ap;
    if (MEMOBS__FETCH_OR(&memobs__xin.warned.v, bit) & bit) return;
    va_start(ap, fmt);
    memobs__vlog(MEMOBS_LOG_WARN, fmt, ap);
    va_end(ap);
}

/* Runs inside memobs__init_once. */
static void memobs__xin_env(void) {
#ifdef MEMOBS_DISABLE
    const char *s = NULL; /* compiled out: read nothing */
#else
    const char *s = getenv("MEMOBS_STUCK_S");
#endif
    uint64_t ns;
    if (!s) return;
    if (memobs__parse_seconds(s, MEMOBS__REQ_TIMEOUT_MAX_NS, &ns)) MEMOBS__STORE(&memobs__xin_stuck_ns.v, ns);
    else memobs__log(MEMOBS_LOG_WARN, "MEMOBS_STUCK_S='%s' is not a number of seconds from 0 (never) to 1000000000 "
                     "(like 60 or 0.5); using 60", s);
}

static void memobs__xin_tick(uint64_t now_ns);

/* The worker's period: a quarter of MEMOBS_STUCK_S, from 1 ms to 1 s. */
static uint64_t memobs__xin_period(void) {
    uint64_t p = MEMOBS__LOAD(&memobs__xin_stuck_ns.v) / 4u;
    return p < 1000000u ? 1000000u : p > 1000000000u ? 1000000000u : p;
}

/* After a begin, outside every lock of memobs' but memobs_cuda.h's: the
   worker's task, if the check is on and it is not scheduled. The task
   clears bg before it looks for an empty table, a begin adds to the
   table before it reads bg (both sequentially consistent): one of them
   sees the other, so a transfer is never left in flight with no task. */
void memobs__xin_arm(void) {
    int rc;
    if (__atomic_load_n(&memobs__xin.bg.v, __ATOMIC_SEQ_CST) || !MEMOBS__LOAD(&memobs__xin_stuck_ns.v)) return;
    pthread_mutex_lock(&memobs__xin_bg_lock);
    if (!__atomic_load_n(&memobs__xin.bg.v, __ATOMIC_SEQ_CST)) {
        rc = memobs__bg_schedule(memobs__xin_tick, memobs__xin_period());
        __atomic_store_n(&memobs__xin.bg.v, rc == MEMOBS_OK ? 1u : 2u, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&memobs__xin_bg_lock);
}

static uint64_t memobs__xin_total(void) {
    uint64_t t = 0;
    unsigned d;
    for (d = 0; d < MEMOBS__NDIR; d++) t += __atomic_load_n(&memobs__xin.n[d].v, __ATOMIC_SEQ_CST);
    return t;
}

/* Caller holds the lock: a slot, or NULL (full, or no memory). */
static memobs__xin_slot_t *memobs__xin_take(uint32_t *idx) {
    memobs__xin_slot_t *t = memobs__xin.slot;
    uint32_t i;
    if (!t) {
        uint32_t busy = memobs__tls.busy;
        memobs__tls.busy = 1;
        t = (memobs__xin_slot_t *)memobs__pages((size_t)MEMOBS_MAX_INFLIGHT * sizeof *t);
        memobs__tls.busy = busy;
        if (!t) return NULL;
        __atomic_store_n(&memobs__xin.slot, t, __ATOMIC_RELEASE);
    }
    if (memobs__xin.free) {
        i = memobs__xin.free - 1;
        memobs__xin.free = t[i].next;
    } else if ((i = MEMOBS__LOAD(&memobs__xin.hwm.v)) < MEMOBS_MAX_INFLIGHT) {
        __atomic_store_n(&memobs__xin.hwm.v, i + 1, __ATOMIC_RELEASE);
    } else {
        return NULL;
    }
    *idx = i;
    return &t[i];
}

/* A transfer into the table at *now (read here): its token, or 0
   (counted, said once). */
static uint64_t memobs__xin_put(unsigned dir, uint64_t bytes, unsigned phase, uint32_t flags, uint64_t req,
                                uint64_t *at) {
    memobs__xin_slot_t *e;
    uint64_t now = *at = MEMOBS__XIN_NOW(), lim = MEMOBS__LOAD(&memobs__xin_stuck_ns.v), tok = 0, due;
    uint32_t i = 0;
    int nomem = 0;
    memobs__spin_lock(&memobs__xin.lock);
    if ((e = memobs__xin_take(&i)) != NULL) {
        e->gen = e->gen + 1u ? e->gen + 1u : 1u;
        e->warned = 0;
        e->req = req;
        MEMOBS__STORE(&e->start.v, now);
        MEMOBS__STORE(&e->bytes.v, bytes);
        __atomic_store_n(&e->meta.v, MEMOBS__XIN_LIVE | dir << 1 | phase << 5 | flags, __ATOMIC_RELEASE);
        __atomic_add_fetch(&memobs__xin.n[dir].v, 1u, __ATOMIC_SEQ_CST);
        MEMOBS__ADD(&memobs__xin.b[dir].v, bytes);
        due = MEMOBS__LOAD(&memobs__xin.due.v);
        if (lim && (!due || now + lim < due)) MEMOBS__STORE(&memobs__xin.due.v, now + lim);
        tok = (uint64_t)e->gen << 32 | (i + 1u);
    } else {
        nomem = !memobs__xin.slot;
        MEMOBS__ADD(&memobs__xin.c[MEMOBS__XIN_C_REFUSED].v, 1u);
    }
    memobs__spin_unlock(&memobs__xin.lock);
    if (!tok && nomem)
        memobs__xin_warn(MEMOBS__XIN_W_NOMEM, "transfers in flight: no memory for the table; begins refused "
                         "(counted: in_flight.refused)");
    else if (!tok)
        memobs__xin_warn(MEMOBS__XIN_W_FULL, "transfers in flight: all %u slots (MEMOBS_MAX_INFLIGHT) are taken; "
                         "this begin and later ones beyond are refused, their token 0 (counted: in_flight.refused)",
                         (unsigned)MEMOBS_MAX_INFLIGHT);
    return tok;
}

/* Takes token out of the table: 1 with *out (the slot as it was) and the
   time it was in flight, 0 when it is not in flight (or is memobs_cuda.h's
   when held is 0, the caller's when 1). */
static int memobs__xin_take_out(uint64_t token, int held, memobs__xin_slot_t *out, uint64_t *ns) {
    uint32_t i = (uint32_t)token - 1u, m;
    memobs__xin_slot_t *e;
    int ok = 0;
    if (!(uint32_t)token || i >= MEMOBS_MAX_INFLIGHT) return 0;
    memobs__spin_lock(&memobs__xin.lock);
    if (memobs__xin.slot && i < MEMOBS__LOAD(&memobs__xin.hwm.v)) {
        e = &memobs__xin.slot[i];
        m = MEMOBS__LOAD(&e->meta.v);
        if ((m & MEMOBS__XIN_LIVE) && e->gen == (uint32_t)(token >> 32) && !(m & MEMOBS__XIN_HELD) == !held) {
            uint64_t now = MEMOBS__XIN_NOW(), t0 = MEMOBS__LOAD(&e->start.v);
            unsigned d = MEMOBS__XIN_DIR(m);
            *out = *e;
            *ns = now > t0 ? now - t0 : 0;
            __atomic_store_n(&e->meta.v, 0u, __ATOMIC_RELEASE);
            e->gen = e->gen + 1u ? e->gen + 1u : 1u; /* the token is spent */
            e->next = memobs__xin.free;
            memobs__xin.free = i + 1u;
            __atomic_sub_fetch(&memobs__xin.n[d].v, 1u, __ATOMIC_SEQ_CST);
            MEMOBS__ADD(&memobs__xin.b[d].v, (uint64_t)0 - MEMOBS__LOAD(&out->bytes.v));
            ok = 1;
        }
    }
    memobs__spin_unlock(&memobs__xin.lock);
    return ok;
}

static void memobs__xin_misuse(const char *fn, uint64_t token) {
    MEMOBS__ADD(&memobs__xin.c[MEMOBS__XIN_C_MISUSE].v, 1u);
    memobs__xin_warn(MEMOBS__XIN_W_TOKEN, "%s(%llu): not a transfer in flight (0, never issued, ended already, or "
                     "from before a fork); ignored (counted: in_flight.misuse)", fn, (unsigned long long)token);
}

static void memobs__xin_check(uint64_t now);

uint64_t memobs_xfer_begin(memobs_dir_t dir, uint64_t bytes, memobs_phase_t phase) {
    uint64_t req = 0, tok, now;
    int bound;
    if (!MEMOBS__LOAD(&memobs__on.v)) return 0;
    if (memobs__bad_dir((unsigned)dir, (unsigned)phase) || memobs__too_big(bytes, 0, "memobs_xfer_begin")) return 0;
    bound = memobs_request_current(&req);
    tok = memobs__xin_put((unsigned)dir, bytes, (unsigned)phase, bound ? MEMOBS__XIN_BOUND : 0u, req, &now);
    memobs__xin_check(now);
    if (tok) memobs__xin_arm();
    return tok;
}

int memobs_xfer_end(uint64_t token) {
    memobs__xin_slot_t e;
    uint64_t ns;
    unsigned m, dir, phase;
    if (!memobs__xin_take_out(token, 0, &e, &ns)) {
        memobs__xin_misuse("memobs_xfer_end", token);
        return MEMOBS_ERR_INVALID;
    }
    MEMOBS__ADD(&memobs__xin.c[MEMOBS__XIN_C_ENDED].v, 1u);
    m = MEMOBS__LOAD(&e.meta.v);
    dir = MEMOBS__XIN_DIR(m);
    phase = MEMOBS__XIN_PHASE(m);
    if (ns > MEMOBS_MAX_NS) ns = MEMOBS_MAX_NS; /* years in flight: the bytes still count */
    if (m & MEMOBS__XIN_BOUND)
        memobs_request_xfer_ns(e.req, (memobs_dir_t)dir, MEMOBS__LOAD(&e.bytes.v), (memobs_phase_t)phase, ns);
    else
        memobs_record_xfer_ns((memobs_dir_t)dir, MEMOBS__LOAD(&e.bytes.v), (memobs_phase_t)phase, ns);
    return MEMOBS_OK;
}

int memobs_xfer_cancel(uint64_t token) {
    memobs__xin_slot_t e;
    uint64_t ns;
    if (!memobs__xin_take_out(token, 0, &e, &ns)) {
        memobs__xin_misuse("memobs_xfer_cancel", token);
        return MEMOBS_ERR_INVALID;
    }
    MEMOBS__ADD(&memobs__xin.c[MEMOBS__XIN_C_CANCELLED].v, 1u);
    return MEMOBS_OK;
}

/* memobs_cuda.h's timed copy, recorded at issue: in flight until
   memobs__xin_drop (its end event seen complete, or given up); 0 when
   the table has no room (the copy is then not in flight). Under
   memobs_cuda.h's tlock: memobs__xin_arm after. */
uint64_t memobs__xin_hold(unsigned dir, uint64_t bytes, unsigned phase, int bound, uint64_t req) {
    uint64_t now;
    if (dir >= MEMOBS__NDIR || phase >= MEMOBS__NPHASE || bytes > MEMOBS_MAX_BYTES) return 0;
    return memobs__xin_put(dir, bytes, phase, MEMOBS__XIN_HELD | (bound ? MEMOBS__XIN_BOUND : 0u), req, &now);
}

void memobs__xin_drop(uint64_t token) {
    memobs__xin_slot_t e;
    uint64_t ns;
    if (token) (void)memobs__xin_take_out(token, 1, &e, &ns);
}

/* The stuck check: every transfer in flight longer than MEMOBS_STUCK_S
   and not yet said is marked, counted, kept as an event and (the first
   MEMOBS__XIN_WARN_MAX) warned about, outside the lock. */
static void memobs__xin_check(uint64_t now) {
    memobs__xin_ev_t found[8];
    uint64_t lim = MEMOBS__LOAD(&memobs__xin_stuck_ns.v), due = 0, wall;
    uint32_t i, n, nf = 0, more = 0;
    if (!lim || !(due = MEMOBS__LOAD(&memobs__xin.due.v)) || now < due) return;
    due = 0;
    wall = memobs_now_ns();
    memobs__spin_lock(&memobs__xin.lock);
    n = memobs__xin.slot ? MEMOBS__LOAD(&memobs__xin.hwm.v) : 0;
    for (i = 0; i < n; i++) {
        memobs__xin_slot_t *e = &memobs__xin.slot[i];
        uint32_t m = MEMOBS__LOAD(&e->meta.v);
        uint64_t t0 = MEMOBS__LOAD(&e->start.v);
        if (!(m & MEMOBS__XIN_LIVE) || e->warned) continue;
        if (now >= t0 && now - t0 >= lim) {
            memobs__xin_ev_t ev;
            e->warned = 1;
            MEMOBS__ADD(&memobs__xin.c[MEMOBS__XIN_C_STUCK].v, 1u);
            ev.time_ns = wall;
            ev.age_ns = now - t0;
            ev.bytes = MEMOBS__LOAD(&e->bytes.v);
            ev.req = e->req;
            ev.meta = m;
            if (memobs__xin.ev_n < MEMOBS__XIN_EVENTS) {
                memobs__xin.ev[(memobs__xin.ev_head + memobs__xin.ev_n++) % MEMOBS__XIN_EVENTS] = ev;
            } else { /* the oldest makes room */
                memobs__xin.ev[memobs__xin.ev_head] = ev;
                memobs__xin.ev_head = (memobs__xin.ev_head + 1u) % MEMOBS__XIN_EVENTS;
                memobs__xin.ev_dropped++;
            }
            if (nf < 8) found[nf++] = ev;
            else more++;
        } else if (!due || t0 + lim < due) {
            due = t0 + lim;
        }
    }
    MEMOBS__STORE(&memobs__xin.due.v, due);
    memobs__spin_unlock(&memobs__xin.lock);
    for (i = 0; i < nf + more; i++) {
        uint32_t k = __atomic_fetch_add(&memobs__xin.said.v, 1u, __ATOMIC_RELAXED);
        char b[32], t[32], r[40];
        const memobs__xin_ev_t *ev = &found[i < nf ? i : nf - 1];
        if (k >= MEMOBS__XIN_WARN_MAX) {
            memobs__xin_warn(MEMOBS__XIN_W_MORE, "transfers in flight: more stuck transfers; after %u warnings they "
                             "are counted only (in_flight.stuck_total)", (unsigned)MEMOBS__XIN_WARN_MAX);
            break;
        }
        if (i >= nf) { /* more than 8 found at once: the rest by count */
            memobs__log(MEMOBS_LOG_WARN, "transfers in flight: %u more stuck past MEMOBS_STUCK_S (counted: "
                        "in_flight.stuck_total)", (unsigned)more);
            break;
        }
        r[0] = 0;
        if (ev->meta & MEMOBS__XIN_BOUND) memobs__out_sprintf(r, sizeof r, ", request %llu", (unsigned long long)ev->req);
        memobs__log(MEMOBS_LOG_WARN, "a %s transfer of %s (%s%s) has been in flight for %s, past MEMOBS_STUCK_S=%.9g s: "
                    "stuck?", memobs__dir_name[MEMOBS__XIN_DIR(ev->meta) % MEMOBS__NDIR],
                    memobs_format_bytes(b, sizeof b, ev->bytes),
                    (ev->meta & MEMOBS__XIN_HELD) ? "a timed CUDA copy" : "memobs_xfer_begin", r,
                    memobs_format_ns(t, sizeof t, ev->age_ns), (double)lim / 1e9);
    }
}

/* The worker's task (see memobs__xin_arm). */
static void memobs__xin_tick(uint64_t now_ns) {
    (void)now_ns; /* the worker's clock; the check reads its own */
    memobs__xin_check(MEMOBS__XIN_NOW());
    pthread_mutex_lock(&memobs__xin_bg_lock);
    __atomic_store_n(&memobs__xin.bg.v, 0u, __ATOMIC_SEQ_CST);
    if (memobs__xin_total() == 0) (void)memobs__bg_schedule(memobs__xin_tick, 0); /* removes itself */
    else __atomic_store_n(&memobs__xin.bg.v, 1u, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&memobs__xin_bg_lock);
}

/* The figures, without a lock (the crash writer reads them too): atomic
   loads only. */
static void memobs__xin_read(memobs_inflight_t *out, uint64_t now) {
    const memobs__xin_slot_t *t = __atomic_load_n(&memobs__xin.slot, __ATOMIC_ACQUIRE);
    uint32_t i, n = t ? __atomic_load_n(&memobs__xin.hwm.v, __ATOMIC_ACQUIRE) : 0;
    uint64_t lim = MEMOBS__LOAD(&memobs__xin_stuck_ns.v);
    unsigned d;
    memset(out, 0, sizeof *out);
    for (d = 0; d < MEMOBS__NDIR; d++) {
        out->dir[d].count = MEMOBS__LOAD(&memobs__xin.n[d].v);
        out->dir[d].bytes = MEMOBS__LOAD(&memobs__xin.b[d].v);
    }
    for (i = 0; i < n; i++) {
        uint32_t m = __atomic_load_n(&t[i].meta.v, __ATOMIC_ACQUIRE);
        uint64_t t0 = MEMOBS__LOAD(&t[i].start.v), age = now > t0 ? now - t0 : 0;
        memobs_inflight_dir_t *r;
        if (!(m & MEMOBS__XIN_LIVE)) continue;
        r = &out->dir[MEMOBS__XIN_DIR(m) % MEMOBS__NDIR];
        if (age > r->oldest_ns) r->oldest_ns = age;
        if (lim && age >= lim) out->stuck++;
    }
    for (d = 0; d < MEMOBS__NDIR; d++) {
        if (!out->dir[d].count) out->dir[d].oldest_ns = 0; /* a slot read as it was released */
        out->count += out->dir[d].count;
        out->bytes = memobs__sat(out->bytes, out->dir[d].bytes);
        if (out->dir[d].oldest_ns > out->oldest_ns) out->oldest_ns = out->dir[d].oldest_ns;
    }
    out->stuck_total = MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_STUCK].v) - memobs__xin.base[MEMOBS__XIN_C_STUCK];
    out->ended = MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_ENDED].v) - memobs__xin.base[MEMOBS__XIN_C_ENDED];
    out->cancelled =
        MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_CANCELLED].v) - memobs__xin.base[MEMOBS__XIN_C_CANCELLED];
    out->refused = MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_REFUSED].v) - memobs__xin.base[MEMOBS__XIN_C_REFUSED];
    out->misuse = MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_MISUSE].v) - memobs__xin.base[MEMOBS__XIN_C_MISUSE];
    out->stuck_after_ns = lim;
    out->capacity = MEMOBS_MAX_INFLIGHT;
}

int memobs_get_inflight(memobs_inflight_t *out) {
    if (!out) {
        memobs__warn_once(MEMOBS__W_NULL_ARG, "NULL output pointer passed to a memobs_get_* call; ignored");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    if (__atomic_load_n(&memobs__g.pre_summary, __ATOMIC_ACQUIRE)) memobs__g.pre_summary();
    memobs__xin_check(MEMOBS__XIN_NOW());
    memobs__xin_read(out, MEMOBS__XIN_NOW());
    return MEMOBS_OK;
}

/* memobs_reset: the window's counts start again (in flight stays). */
static void memobs__xin_reset(void) {
    unsigned k;
    memobs__spin_lock(&memobs__xin.lock);
    for (k = 0; k < MEMOBS__XIN_C_N; k++) memobs__xin.base[k] = MEMOBS__LOAD(&memobs__xin.c[k].v);
    memobs__spin_unlock(&memobs__xin.lock);
}

/* fork(): 0 takes the locks (after memobs__g.lock, before the worker's),
   1 releases them; 2 (the child, before its 1) empties the table: the
   transfers in flight are the parent's, whose threads end them; their
   tokens are refused in the child (the generations move on). */
static void memobs__xin_fork(int stage) {
    uint32_t i, n;
    if (stage == 0) {
        pthread_mutex_lock(&memobs__xin_bg_lock);
        memobs__spin_lock(&memobs__xin.lock);
        return;
    }
    if (stage == 2) {
        n = memobs__xin.slot ? MEMOBS__LOAD(&memobs__xin.hwm.v) : 0;
        memobs__xin.free = 0;
        for (i = n; i-- > 0;) {
            memobs__xin_slot_t *e = &memobs__xin.slot[i];
            if (MEMOBS__LOAD(&e->meta.v)) e->gen = e->gen + 1u ? e->gen + 1u : 1u;
            MEMOBS__STORE(&e->meta.v, 0u);
            e->next = memobs__xin.free;
            memobs__xin.free = i + 1u;
        }
        for (i = 0; i < MEMOBS__NDIR; i++) {
            MEMOBS__STORE(&memobs__xin.n[i].v, 0u);
            MEMOBS__STORE(&memobs__xin.b[i].v, 0u);
        }
        MEMOBS__STORE(&memobs__xin.due.v, 0u);
        return;
    }
    memobs__spin_unlock(&memobs__xin.lock);
    pthread_mutex_unlock(&memobs__xin_bg_lock);
}

/* The stuck events, oldest first, into ev (n at most); their count. */
static size_t memobs__xin_events(memobs__xin_ev_t *ev, size_t n) {
    size_t j, k;
    memobs__spin_lock(&memobs__xin.lock);
    k = memobs__xin.ev_n < n ? memobs__xin.ev_n : n;
    for (j = 0; j < k; j++)
        ev[j] = memobs__xin.ev[(memobs__xin.ev_head + memobs__xin.ev_n - k + j) % MEMOBS__XIN_EVENTS];
    memobs__spin_unlock(&memobs__xin.lock);
    return k;
}

static const char *memobs__xin_origin(uint32_t meta) {
    return (meta & MEMOBS__XIN_HELD) ? "cuda_timed_copy" : "memobs_xfer_begin";
}

/* The timeline's stuck transfers: an instant each on its direction's
   track, when it was found stuck. */
static void memobs__xin_tl(memobs__tl_out_t *o) {
    static const char *const pname[3] = {"unphased", "prefill", "decode"};
    memobs__xin_ev_t ev[MEMOBS__XIN_EVENTS];
    size_t j, n = memobs__xin_events(ev, MEMOBS__XIN_EVENTS);
    for (j = 0; j < n; j++) {
        unsigned d = MEMOBS__XIN_DIR(ev[j].meta) % MEMOBS__NDIR;
        char *p = memobs__tl_room(o, MEMOBS__TL_ROOM);
        p = memobs__tl_head(o, p, "i", "transfer stuck", 1, MEMOBS__TL_TID_COPY + (int)d, ev[j].time_ns);
        p = MEMOBS__TL_LIT(p, ",\"s\":\"t\",\"cat\":\"transfer\",\"args\":{\"direction\":\"");
        p = memobs__tl_str(p, memobs__dir_name[d]);
        p = MEMOBS__TL_LIT(p, "\",\"bytes\":");
        p = memobs__tl_dec(p, ev[j].bytes);
        p = MEMOBS__TL_LIT(p, ",\"in_flight_ns\":");
        p = memobs__tl_dec(p, ev[j].age_ns);
        p = MEMOBS__TL_LIT(p, ",\"phase\":\"");
        p = memobs__tl_str(p, pname[MEMOBS__XIN_PHASE(ev[j].meta) % 3u]);
        p = MEMOBS__TL_LIT(p, "\",\"origin\":\"");
        p = memobs__tl_str(p, memobs__xin_origin(ev[j].meta));
        p = MEMOBS__TL_LIT(p, "\",\"request\":");
        if (ev[j].meta & MEMOBS__XIN_BOUND) p = memobs__tl_dec(p, ev[j].req);
        else p = MEMOBS__TL_LIT(p, "null");
        p = MEMOBS__TL_LIT(p, "}}");
        memobs__tl_end(o, p);
    }
}

#ifndef MEMOBS_NO_STORMLOG
/* Stormlog's stuck transfers: event_type "transfer_stuck" (any type
   but "sample" is a notable event to its loader), figures of the sample
   before it as a region's. */
static void memobs__xin_sl(FILE *f, int *first, const memobs_identity_t *id, int64_t wall, int device,
                           const memobs__sl_fig_t *g) {
    memobs__xin_ev_t ev[MEMOBS__XIN_EVENTS];
    size_t j, n = memobs__xin_events(ev, MEMOBS__XIN_EVENTS);
    for (j = 0; j < n; j++) {
        unsigned d = MEMOBS__XIN_DIR(ev[j].meta) % MEMOBS__NDIR;
        memobs__sl_head(f, first, id, wall, ev[j].time_ns, "transfer_stuck", 0, device);
        memobs__sl_fields(f, g->ok ? g->alloc : 0, g->ok ? g->reserved : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN,
                          g->ok ? g->used : 0, MEMOBS_UNKNOWN, MEMOBS_UNKNOWN, 0);
        fprintf(f, ",\"context\":\"%s transfer in flight past MEMOBS_STUCK_S\",\"metadata\":{\"source\":\"memobs\","
                "\"figures_from\":\"%s\",\"direction\":\"%s\",\"bytes\":%llu,\"in_flight_ns\":%llu,"
                "\"stuck_after_ns\":%llu,\"phase\":\"%s\",\"origin\":\"%s\",\"request_id\":",
                memobs__dir_name[d], g->ok ? "previous sample" : "none", memobs__dir_key[d],
                (unsigned long long)ev[j].bytes, (unsigned long long)ev[j].age_ns,
                (unsigned long long)MEMOBS__LOAD(&memobs__xin_stuck_ns.v),
                memobs__prom_phase[MEMOBS__XIN_PHASE(ev[j].meta) % 3u], memobs__xin_origin(ev[j].meta));
        if (ev[j].meta & MEMOBS__XIN_BOUND) fprintf(f, "%llu}}", (unsigned long long)ev[j].req);
        else fputs("null}}", f);
    }
}
#endif

/* ---- what the summaries and exports show (s->in_flight, read without a
   lock: the crash writer formats these too) ---- */

/* The text summary: a line when anything is or was in flight, stuck,
   refused or misused in the window. */
static void memobs__xin_text(memobs__out_t *o, const memobs_inflight_t *x) {
    char b[32], t[32];
    unsigned d, n = 0;
    if (!x->count && !x->stuck_total && !x->ended && !x->cancelled && !x->refused && !x->misuse) return;
    memobs__out_printf(o, "  transfers in flight: %llu, %s", (unsigned long long)x->count,
                       memobs_format_bytes(b, sizeof b, x->bytes));
    for (d = 0; d < MEMOBS_DIRS; d++) {
        if (!x->dir[d].count) continue;
        memobs__out_printf(o, "%s%s %llu, %s, oldest %s", n++ ? "; " : " (", memobs__dir_name[d],
                           (unsigned long long)x->dir[d].count, memobs_format_bytes(b, sizeof b, x->dir[d].bytes),
                           memobs_format_ns(t, sizeof t, x->dir[d].oldest_ns));
    }
    if (n) memobs__out_write(o, ")", 1);
    memobs__out_printf(o, "; ended %llu, cancelled %llu", (unsigned long long)x->ended,
                       (unsigned long long)x->cancelled);
    if (x->stuck_after_ns)
        memobs__out_printf(o, "; stuck past %s: %llu now, %llu in the window", memobs_format_ns(t, sizeof t, x->stuck_after_ns),
                           (unsigned long long)x->stuck, (unsigned long long)x->stuck_total);
    if (x->refused) memobs__out_printf(o, "; refused (table full) %llu", (unsigned long long)x->refused);
    if (x->misuse) memobs__out_printf(o, "; ends of tokens not in flight %llu", (unsigned long long)x->misuse);
    memobs__out_write(o, "\n", 1);
}

/* The JSON summary's "in_flight" member (always there), after a comma. */
static void memobs__xin_json(memobs__out_t *o, const memobs_inflight_t *x) {
    unsigned d;
    memobs__out_str(o, ",\"in_flight\":{\"directions\":{");
    for (d = 0; d < MEMOBS_DIRS; d++)
        memobs__out_printf(o, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu,\"oldest_ns\":%llu}", d ? "," : "",
                           memobs__dir_key[d], (unsigned long long)x->dir[d].count,
                           (unsigned long long)x->dir[d].bytes, (unsigned long long)x->dir[d].oldest_ns);
    memobs__out_printf(o, "},\"count\":%llu,\"bytes\":%llu,\"oldest_ns\":%llu,\"stuck\":%llu,\"stuck_total\":%llu,"
                       "\"ended\":%llu,\"cancelled\":%llu,\"refused\":%llu,\"misuse\":%llu,\"stuck_after_ns\":%llu,"
                       "\"capacity\":%llu}", (unsigned long long)x->count, (unsigned long long)x->bytes,
                       (unsigned long long)x->oldest_ns, (unsigned long long)x->stuck,
                       (unsigned long long)x->stuck_total, (unsigned long long)x->ended,
                       (unsigned long long)x->cancelled, (unsigned long long)x->refused,
                       (unsigned long long)x->misuse, (unsigned long long)x->stuck_after_ns,
                       (unsigned long long)x->capacity);
}

/* Prometheus: gauges for every direction (0 when none is in flight: a
   series never vanishes), the counts as counters. */
static void memobs__xin_prom(memobs__out_t *o, const memobs__prom_snap_t *p) {
    const memobs_inflight_t *x = &p->f.s.in_flight;
    char labels[64];
    unsigned d, k;
    static const char *const fam[3][2] = {
        {"memobs_transfers_in_flight", "Transfers in flight now (memobs_xfer_begin, memobs_cuda.h's timed copies), "
                                       "by direction."},
        {"memobs_transfer_in_flight_bytes", "Bytes of the transfers in flight now, by direction."},
        {"memobs_transfer_oldest_in_flight_seconds", "Age of the oldest transfer in flight, by direction (0: none)."}};
    for (k = 0; k < 3; k++) {
        memobs__prom_family(o, fam[k][0], "gauge", fam[k][1]);
        for (d = 0; d < MEMOBS_DIRS; d++) {
            memobs__out_sprintf(labels, sizeof labels, "direction=\"%s\"", memobs__dir_key[d]);
            if (k == 2) memobs__prom_secs(o, p, fam[k][0], labels, x->dir[d].oldest_ns);
            else memobs__prom_u64(o, p, fam[k][0], labels, k ? x->dir[d].bytes : x->dir[d].count);
        }
    }
    memobs__prom_family(o, "memobs_transfers_stuck_in_flight", "gauge", "Transfers in flight past MEMOBS_STUCK_S now.");
    memobs__prom_u64(o, p, "memobs_transfers_stuck_in_flight", "", x->stuck);
    memobs__prom_family(o, "memobs_transfers_stuck_total", "counter", "Transfers found in flight past "
                        "MEMOBS_STUCK_S (each once, with a warning).");
    memobs__prom_u64(o, p, "memobs_transfers_stuck_total", "", x->stuck_total);
    memobs__prom_family(o, "memobs_transfer_misuse_total", "counter", "memobs_xfer_begin refused (table full), "
                        "memobs_xfer_end and _cancel of a token not in flight, by kind.");
    memobs__prom_u64(o, p, "memobs_transfer_misuse_total", "kind=\"table_full\"", x->refused);
    memobs__prom_u64(o, p, "memobs_transfer_misuse_total", "kind=\"token_not_in_flight\"", x->misuse);
}

/* The HTML report: a small table when anything is or was in flight. */
static void memobs__xin_html(memobs__out_t *o, const memobs_inflight_t *x) __attribute__((unused));
static void memobs__xin_html(memobs__out_t *o, const memobs_inflight_t *x) {
    char b[32], t[32];
    unsigned d;
    if (!x->count && !x->stuck_total && !x->ended && !x->refused && !x->misuse) return;
    memobs__out_printf(o, "<h3>Transfers in flight</h3>\n<table id=\"in-flight\"><tr><th>direction</th><th>in flight"
                       "</th><th>bytes</th><th>oldest</th></tr>\n");
    for (d = 0; d < MEMOBS_DIRS; d++)
        if (x->dir[d].count)
            memobs__out_printf(o, "<tr><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">%s</td><td class=\"n\">%s"
                               "</td></tr>\n", memobs__dir_name[d], (unsigned long long)x->dir[d].count,
                               memobs_format_bytes(b, sizeof b, x->dir[d].bytes),
                               memobs_format_ns(t, sizeof t, x->dir[d].oldest_ns));
    memobs__out_printf(o, "</table>\n<p>%llu in flight now (%llu past MEMOBS_STUCK_S); in the window %llu ended, "
                       "%llu cancelled, %llu found stuck, %llu refused (table full), %llu ends of tokens not in "
                       "flight.</p>\n", (unsigned long long)x->count, (unsigned long long)x->stuck,
                       (unsigned long long)x->ended, (unsigned long long)x->cancelled,
                       (unsigned long long)x->stuck_total, (unsigned long long)x->refused,
                       (unsigned long long)x->misuse);
}

/* ======================================================================== */
/* Private: HTML report                                              >>html */
/* ======================================================================== */

#ifndef MEMOBS_NO_HTML

/* Bounds that keep a report under 2 MB at default limits: the sampler's
   series are cut into at most MEMOBS__HTML_POINTS buckets (the largest
   value of each kept, so peaks survive), the timeline's transfers into
   MEMOBS__HTML_BINS bins, the traces to the MEMOBS__HTML_TRACES holding the
   most live bytes (the rest summed in one row), each stack to
   MEMOBS__HTML_STACK bytes of text. */
#define MEMOBS__HTML_POINTS 400
#define MEMOBS__HTML_BINS 120
#define MEMOBS__HTML_TRACES 20
#define MEMOBS__HTML_STR2(x) #x
#define MEMOBS__HTML_STR(x) MEMOBS__HTML_STR2(x)
#define MEMOBS__HTML_STACK 4096
#define MEMOBS__HTML_W 720
#define MEMOBS__HTML_H 240


static const char *const memobs__html_dcolor[MEMOBS_DIRS] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                                              "#8c564b", "#e377c2", "#17becf"};
/* Phases in the order of the tables: prefill, decode, unphased. */
static const unsigned memobs__html_ph[MEMOBS_PHASES] = {MEMOBS_PHASE_PREFILL, MEMOBS_PHASE_DECODE, MEMOBS_PHASE_NONE};
static const char *const memobs__html_phname[MEMOBS_PHASES] = {"unphased", "prefill", "decode"};
static const char *const memobs__html_pcolor[MEMOBS_PHASES] = {"#9c9c9c", "#4e79a7", "#e15759"};

/* Like memobs__out_printf, for the report's longer pieces (up to 2 KB). */
static void memobs__html_printf(memobs__out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void memobs__html_printf(memobs__out_t *o, const char *fmt, ...) {
    char tmp[2048];
    va_list ap;
    int k;
    va_start(ap, fmt);
    k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    memobs__out_write(o, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* log2 and 2^x for the histogram's log axis, without libm (the header
   links with libc and pthreads alone): ln(v) = 2 atanh((v-1)/(v+1)) on
   [1, 2), exp by its series on [0, 1). Good to 1e-12, far past a pixel. */
static double memobs__html_log2(double v) {
    double e = 0, z, z2, t, sum = 0;
    unsigned k;
    if (!(v > 0)) return 0;
    while (v >= 2) v /= 2, e += 1;
    while (v < 1) v *= 2, e -= 1;
    z = (v - 1) / (v + 1);
    z2 = z * z;
    t = z;
    for (k = 1; k < 40; k += 2) sum += t / k, t *= z2;
    return e + 2 * sum / 0.69314718055994530942;
}

static double memobs__html_exp2(double x) {
    double r = 1, f, t = 1, sum = 1;
    int n;
    unsigned k;
    if (x > 1000) x = 1000;
    if (x < -1000) x = -1000;
    n = (int)x;
    if ((double)n > x) n--;
    f = (x - n) * 0.69314718055994530942;
    for (k = 1; k < 30; k++) t *= f / k, sum += t;
    for (; n > 0; n--) r *= 2;
    for (; n < 0; n++) r /= 2;
    return r * sum;
}

/* s as HTML text or attribute value: & < > " ' as references, a byte that
   is not UTF-8 and a control character other than tab and newline as
   U+FFFD. */
static void memobs__html_esc(memobs__out_t *o, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t k = memobs__utf8_len(p);
        if (*p == '&') memobs__out_str(o, "&amp;");
        else if (*p == '<') memobs__out_str(o, "&lt;");
        else if (*p == '>') memobs__out_str(o, "&gt;");
        else if (*p == '"') memobs__out_str(o, "&quot;");
        else if (*p == '\'') memobs__out_str(o, "&#39;");
        else if (k == 0 || (*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) memobs__out_str(o, "\xEF\xBF\xBD");
        else memobs__out_write(o, (const char *)p, k);
        p += k ? k : 1;
    }
}

/* A table cell holding a figure: data-memobs names it, data-v is the exact
   integer (what a test compares with the JSON summary), the text is for
   people. */
static void memobs__html_cell(memobs__out_t *o, const char *key, uint64_t v, const char *text) {
    memobs__html_printf(o, "<td class=\"n\" data-memobs=\"%s\" data-v=\"%llu\">", key, (unsigned long long)v);
    memobs__html_esc(o, text);
    memobs__out_str(o, "</td>");
}

static void memobs__html_bytes_cell(memobs__out_t *o, const char *key, uint64_t v) {
    char b[32];
    memobs__html_cell(o, key, v, memobs_format_bytes(b, sizeof b, v));
}

static void memobs__html_count_cell(memobs__out_t *o, const char *key, uint64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    memobs__html_cell(o, key, v, b);
}

static void memobs__html_absent(memobs__out_t *o, const char *what, const char *how) {
    memobs__out_str(o, "<p class=\"absent\" data-absent=\"1\">not recorded: ");
    memobs__html_esc(o, what);
    memobs__out_str(o, "; turn on ");
    memobs__html_esc(o, how);
    memobs__out_str(o, ".</p>\n");
}

static void memobs__html_legend(memobs__out_t *o, const char *const *name, const char *const *color, unsigned n) {
    unsigned i;
    memobs__out_str(o, "<p class=\"legend\">");
    for (i = 0; i < n; i++) {
        if (!name[i]) continue;
        memobs__html_printf(o, "<span><i style=\"background:%s\"></i>", color[i]);
        memobs__html_esc(o, name[i]);
        memobs__out_str(o, "</span> ");
    }
    memobs__out_str(o, "</p>\n");
}

/* Axis label of a value in unit (0: bytes, 1: bytes per second, 2: ns). */
static const char *memobs__html_label(double v, int unit, char *b, size_t len) {
    uint64_t u = v > 0 ? (uint64_t)(v + 0.5) : 0;
    if (unit == 2) return memobs_format_ns(b, len, u);
    memobs_format_bytes(b, len, u);
    if (unit == 1 && strlen(b) + 3 < len) strcat(b, "/s");
    return b;
}

#define MEMOBS__HTML_L 80.0 /* plot area: left margin, then right, top and bottom */
#define MEMOBS__HTML_R 16.0
#define MEMOBS__HTML_T 12.0
#define MEMOBS__HTML_B 28.0

/* A line chart: x in seconds (increasing), ns series of n points, y[s][i]
   < 0 for a point not known (the line breaks there). Each series' largest
   point is marked with a dot whose tooltip says its value and time. */
static void memobs__html_lines(memobs__out_t *o, const char *id, const double *x, double *const *y, unsigned ns,
                               size_t n, const char *const *name, const char *const *color, int unit) {
    double x0 = n ? x[0] : 0, x1 = n ? x[n - 1] : 1, ymax = 0, pw, ph;
    unsigned s, g;
    size_t i;
    char b[48];
    for (s = 0; s < ns; s++)
        for (i = 0; i < n; i++)
            if (y[s][i] > ymax) ymax = y[s][i];
    if (!(ymax > 0)) ymax = 1;
    if (!(x1 > x0)) x1 = x0 + 1;
    pw = MEMOBS__HTML_W - MEMOBS__HTML_L - MEMOBS__HTML_R;
    ph = MEMOBS__HTML_H - MEMOBS__HTML_T - MEMOBS__HTML_B;
    memobs__html_printf(o, "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                        "role=\"img\">\n", id, MEMOBS__HTML_W, MEMOBS__HTML_H, MEMOBS__HTML_W, MEMOBS__HTML_H);
    for (g = 0; g <= 4; g++) {
        double yy = MEMOBS__HTML_T + ph - ph * g / 4.0;
        memobs__html_printf(o, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>",
                            MEMOBS__HTML_L, yy, MEMOBS__HTML_L + pw, yy);
        memobs__html_printf(o, "<text class=\"ax\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                            MEMOBS__HTML_L - 4, yy + 4, memobs__html_label(ymax * g / 4.0, unit, b, sizeof b));
    }
    for (g = 0; g <= 4; g++)
        memobs__html_printf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.3g s</text>",
                            MEMOBS__HTML_L + pw * g / 4.0, MEMOBS__HTML_H - 8, (x1 - x0) * g / 4.0);
    memobs__out_str(o, "\n");
    for (s = 0; s < ns; s++) {
        int pen = 0;
        size_t top = n;
        memobs__html_printf(o, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", color[s]);
        for (i = 0; i < n; i++) {
            if (y[s][i] < 0) {
                pen = 0;
                continue;
            }
            if (top == n || y[s][i] > y[s][top]) top = i;
            memobs__html_printf(o, "%c%.1f %.1f", pen ? 'L' : 'M', MEMOBS__HTML_L + pw * (x[i] - x0) / (x1 - x0),
                                MEMOBS__HTML_T + ph - ph * y[s][i] / ymax);
            pen = 1;
        }
        memobs__out_str(o, "\"><title>");
        memobs__html_esc(o, name[s]);
        memobs__out_str(o, "</title></path>\n");
        if (top < n) {
            memobs__html_printf(o, "<circle class=\"peak\" data-series=\"%u\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                                "fill=\"%s\"><title>peak of ", s, MEMOBS__HTML_L + pw * (x[top] - x0) / (x1 - x0),
                                MEMOBS__HTML_T + ph - ph * y[s][top] / ymax, color[s]);
            memobs__html_esc(o, name[s]);
            memobs__html_printf(o, ": %s at %.3f s</title></circle>\n",
                                memobs__html_label(y[s][top], unit, b, sizeof b),
                                x[top] - x0);
        }
    }
    memobs__out_str(o, "</svg>\n");
    memobs__html_legend(o, name, color, ns);
}

/* ---- sections ---- */

static void memobs__html_identity(memobs__out_t *o, const memobs_summary_t *s) {
    char b[64];
    memobs__out_str(o, "<section id=\"identity\"><h2>Identity and window</h2>\n<table>");
    memobs__out_str(o, "<tr><th>job id</th><td data-memobs=\"identity.job_id\">");
    memobs__html_esc(o, s->identity.job_id[0] ? s->identity.job_id : "-");
    memobs__out_str(o, "</td></tr><tr><th>host</th><td data-memobs=\"identity.host\">");
    memobs__html_esc(o, s->identity.host);
    memobs__out_str(o, "</td></tr><tr><th>rank</th>");
    memobs__html_count_cell(o, "identity.rank", (uint64_t)s->identity.rank);
    memobs__out_str(o, "</tr><tr><th>local rank</th>");
    memobs__html_count_cell(o, "identity.local_rank", (uint64_t)s->identity.local_rank);
    memobs__out_str(o, "</tr><tr><th>world size</th>");
    memobs__html_count_cell(o, "identity.world_size", (uint64_t)s->identity.world_size);
    memobs__out_str(o, "</tr><tr><th>pid</th>");
    memobs__html_count_cell(o, "identity.pid", (uint64_t)s->identity.pid);
    memobs__out_str(o, "</tr><tr><th>window</th>");
    memobs__html_cell(o, "window_ns", s->window_ns, memobs_format_ns(b, sizeof b, s->window_ns));
    memobs__html_printf(o, "</tr><tr><th>recording</th><td data-memobs=\"enabled\">%s</td></tr>",
                        s->enabled ? "on" : "off");
    memobs__html_printf(o, "<tr><th>memobs</th><td>%s, clock %s</td></tr></table></section>\n", MEMOBS_VERSION,
                        memobs_clock_source());
}

static void memobs__html_transfers(memobs__out_t *o, const memobs_summary_t *s) {
    const memobs_dirs_t *by[MEMOBS_PHASES];
    uint64_t top = 0, any = 0;
    unsigned d, k, nd = memobs__dirs_shown(s);
    double pw = MEMOBS__HTML_W - MEMOBS__HTML_L - MEMOBS__HTML_R, ph = MEMOBS__HTML_H - MEMOBS__HTML_T - MEMOBS__HTML_B;
    char key[48], b[32];
    by[MEMOBS_PHASE_NONE] = &s->unphased;
    by[MEMOBS_PHASE_PREFILL] = &s->prefill;
    by[MEMOBS_PHASE_DECODE] = &s->decode;
    memobs__out_str(o, "<section id=\"transfers\"><h2>Transfers by phase</h2>\n");
    for (d = 0; d < MEMOBS_DIRS; d++) any |= memobs_dirs_get(&s->total, d)->count;
    if (!any)
        memobs__html_absent(o, "no transfer was recorded", "MEMOBS_RECORD_H2D/D2H/D2D in the engine's copy paths, "
                            "MEMOBS_RECORD_H2S/S2H/D2S/S2D in its storage stores and loads");
    memobs__out_str(o, "<table><tr><th></th><th>prefill</th><th>ops</th><th>decode</th><th>ops</th><th>unphased</th>"
                       "<th>ops</th><th>total</th><th>ops</th></tr>\n");
    for (d = 0; d < nd; d++) {
        memobs__html_printf(o, "<tr><th>%s</th>", memobs__dir_name[d]);
        for (k = 0; k <= MEMOBS_PHASES; k++) {
            const memobs_xfer_t *x = memobs_dirs_get(k < MEMOBS_PHASES ? by[memobs__html_ph[k]] : &s->total, d);
            const char *pn = k < MEMOBS_PHASES ? memobs__html_phname[memobs__html_ph[k]] : "total";
            snprintf(key, sizeof key, "%s.%s.bytes", memobs__dir_key[d], pn);
            memobs__html_bytes_cell(o, key, x->bytes);
            snprintf(key, sizeof key, "%s.%s.count", memobs__dir_key[d], pn);
            memobs__html_count_cell(o, key, x->count);
            if (k < MEMOBS_PHASES && x->bytes > top) top = x->bytes;
        }
        memobs__out_str(o, "</tr>\n");
    }
    memobs__out_str(o, "</table>\n");
    if (top) { /* grouped bars: a group per direction, a bar per phase */
        memobs__html_printf(o, "<svg id=\"transfers-bars\" class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" "
                            "height=\"%d\" role=\"img\">\n", MEMOBS__HTML_W, MEMOBS__HTML_H, MEMOBS__HTML_W,
                            MEMOBS__HTML_H);
        for (k = 0; k <= 4; k++) {
            double yy = MEMOBS__HTML_T + ph - ph * k / 4.0;
            memobs__html_printf(o, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
                                "<text class=\"ax\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                                MEMOBS__HTML_L, yy, MEMOBS__HTML_L + pw, yy, MEMOBS__HTML_L - 4, yy + 4,
                                memobs__html_label((double)top * k / 4.0, 0, b, sizeof b));
        }
        for (d = 0; d < nd; d++) {
            double gx = MEMOBS__HTML_L + pw * d / nd, bw = pw / nd / 4.0;
            memobs__html_printf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                                gx + pw / nd / 2.0, MEMOBS__HTML_H - 8, memobs__dir_name[d]);
            for (k = 0; k < MEMOBS_PHASES; k++) {
                unsigned p = memobs__html_ph[k];
                const memobs_xfer_t *x = memobs_dirs_get(by[p], d);
                double h = ph * (double)x->bytes / (double)top;
                memobs__html_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                                    "<title>%s %s: %s in %llu ops</title></rect>\n",
                                    gx + bw * (k + 0.5), MEMOBS__HTML_T + ph - h, bw * 0.9, h, memobs__html_pcolor[p],
                                    memobs__dir_name[d], memobs__html_phname[p],
                                    memobs_format_bytes(b, sizeof b, x->bytes), (unsigned long long)x->count);
            }
        }
        memobs__out_str(o, "</svg>\n");
        {
            const char *nm[3], *co[3];
            for (k = 0; k < MEMOBS_PHASES; k++) {
                nm[k] = memobs__html_phname[memobs__html_ph[k]];
                co[k] = memobs__html_pcolor[memobs__html_ph[k]];
            }
            memobs__html_legend(o, nm, co, 3);
        }
    }
    if (memobs__manual_shown(s)) {
        /* manual vs observed (memobs_set_manual_apart): a row per direction
           an observer sees; the storage tier's are never counted apart */
        memobs__out_str(o, "<h3>Manual vs observed</h3><p>The transfers above are what an observer (the LD_PRELOAD "
                           "library) saw; manual are the program's own records, kept apart.</p>\n"
                           "<table><tr><th></th><th>observed</th><th>ops</th><th>manual</th><th>ops</th>"
                           "<th>manual prefill</th><th>ops</th><th>manual decode</th><th>ops</th>"
                           "<th>manual unphased</th><th>ops</th></tr>\n");
        for (d = 0; d < MEMOBS__NGPU; d++) {
            const memobs_dirs_t *m[4];
            static const char *const mn[4] = {"total", "prefill", "decode", "unphased"};
            m[0] = &s->manual.total; m[1] = &s->manual.prefill; m[2] = &s->manual.decode; m[3] = &s->manual.unphased;
            memobs__html_printf(o, "<tr><th>%s</th>", memobs__dir_name[d]);
            snprintf(key, sizeof key, "%s.total.bytes", memobs__dir_key[d]);
            memobs__html_bytes_cell(o, key, memobs_dirs_get(&s->total, d)->bytes);
            snprintf(key, sizeof key, "%s.total.count", memobs__dir_key[d]);
            memobs__html_count_cell(o, key, memobs_dirs_get(&s->total, d)->count);
            for (k = 0; k < 4; k++) {
                snprintf(key, sizeof key, "manual.%s.%s.bytes", memobs__dir_key[d], mn[k]);
                memobs__html_bytes_cell(o, key, memobs_dirs_get(m[k], d)->bytes);
                snprintf(key, sizeof key, "manual.%s.%s.count", memobs__dir_key[d], mn[k]);
                memobs__html_count_cell(o, key, memobs_dirs_get(m[k], d)->count);
            }
            memobs__out_str(o, "</tr>\n");
        }
        memobs__out_str(o, "</table>\n");
    }
    memobs__out_str(o, "</section>\n");
}

/* Transfers over time: the timeline's host-side records, binned; a line
   per direction shown (the storage tier's too when the summary or the
   timeline holds any of theirs). */
static void memobs__html_xfer_time(memobs__out_t *o, const memobs_summary_t *s, const memobs__tl_ev_t *ev, size_t n,
                                   const memobs_timeline_stats_t *stp) {
    size_t i, k = 0;
    uint64_t t0 = 0, t1 = 0, cap = stp->capacity;
    memobs_timeline_stats_t st = *stp;
    unsigned nd = memobs__dirs_shown(s);
    memobs__out_str(o, "<section id=\"transfers-time\"><h2>Transfers over time</h2>\n");
    if (ev)
        for (i = 0; i < n; i++)
            if ((ev[i].meta & 15u) == MEMOBS__TL_XFER) {
                if (!k++) t0 = ev[i].ts;
                t1 = ev[i].ts;
                if ((ev[i].meta >> 4 & 15u) % MEMOBS_DIRS >= MEMOBS__NGPU) nd = MEMOBS_DIRS;
            }
    if (!k) {
        if (!cap)
            memobs__html_absent(o, "the timeline is off, and the sampler keeps no transfer figures",
                                "the timeline (MEMOBS_TIMELINE=PATH, MEMOBS_TIMELINE_EVENTS=N or memobs_timeline_start)");
        else
            memobs__html_absent(o, "the timeline holds no transfer record", "MEMOBS_RECORD_* while the timeline is on");
    } else {
        double x[MEMOBS__HTML_BINS], v[MEMOBS_DIRS][MEMOBS__HTML_BINS], *y[MEMOBS_DIRS];
        const char *nm[MEMOBS_DIRS], *co[MEMOBS_DIRS];
        uint64_t span = t1 > t0 ? t1 - t0 : 1;
        unsigned nb = k < MEMOBS__HTML_BINS ? (unsigned)k : MEMOBS__HTML_BINS, d, j;
        double w;
        if (nb < 2) nb = 2;
        w = (double)span / nb / 1e9; /* seconds per bin */
        memset(v, 0, sizeof v);
        for (j = 0; j < nb; j++) x[j] = (double)span * (j + 0.5) / nb / 1e9;
        for (i = 0; i < n; i++) {
            const memobs__tl_ev_t *e = &ev[i];
            if ((e->meta & 15u) != MEMOBS__TL_XFER || e->ts < t0) continue;
            j = (unsigned)((double)(e->ts - t0) / (double)span * nb);
            if (j >= nb) j = nb - 1;
            v[(e->meta >> 4 & 15u) % MEMOBS_DIRS][j] += (double)e->a;
        }
        for (d = 0; d < nd; d++) {
            for (j = 0; j < nb; j++) v[d][j] /= w;
            y[d] = v[d];
            nm[d] = memobs__dir_name[d];
            co[d] = memobs__html_dcolor[d];
        }
        memobs__html_printf(o, "<p>Bytes per second queued by host-side records, %llu records of the timeline's %llu "
                            "kept events (%llu dropped, oldest first) in %u bins of %.3g ms.</p>\n",
                            (unsigned long long)k, (unsigned long long)st.kept, (unsigned long long)st.dropped, nb,
                            w * 1e3);
        memobs__html_lines(o, "transfers-time-chart", x, y, nd, nb, nm, co, 1);
    }
    memobs__out_str(o, "</section>\n");
}

/* Timed bandwidth, a row per direction and phase with any timed bytes:
   the copies timed on the device (H2D/D2H/D2D: memobs_cuda.h's CUDA
   events, memobs_record_xfer_timed) and the transfers the engine timed
   itself (the storage tier's: memobs_record_xfer_ns). */
static void memobs__html_bandwidth(memobs__out_t *o, const memobs_summary_t *s) {
    unsigned p, d, rows = 0, engine = 0;
    double top = 0;
    char key[48], b[32];
    memobs__out_str(o, "<section id=\"bandwidth\"><h2>Timed bandwidth</h2>\n");
    for (p = 0; p < MEMOBS_PHASES; p++)
        for (d = 0; d < MEMOBS_DIRS; d++)
            if (s->timed[p][d].count && s->timed[p][d].ns) {
                double gbs = (double)s->timed[p][d].bytes / (double)s->timed[p][d].ns;
                if (gbs > top) top = gbs;
                rows++;
                engine |= d >= MEMOBS__NGPU;
            }
    if (!rows) {
        memobs__html_absent(o, "no transfer was timed",
                            "memobs_cuda.h's CUDA-event timing (or memobs_record_xfer_timed) for the copies, "
                            "memobs_record_xfer_ns for the transfers the engine times itself (the storage tier's)");
    } else {
        memobs__html_printf(o, "<p>Timed by the device: H2D, D2H and D2D copies timed with CUDA events "
                            "(memobs_cuda.h, memobs_record_xfer_timed)%s.</p>\n",
                            engine ? "; by the engine: the storage tier's transfers it timed itself "
                                     "(memobs_record_xfer_ns), their time as the engine measured it, waits "
                                     "included" : "");
        memobs__out_str(o, "<table><tr><th>direction</th><th>phase</th><th>timed by</th><th>bytes</th>"
                           "<th>ops</th><th>time</th><th>GB/s</th><th></th></tr>\n");
        for (d = 0; d < MEMOBS_DIRS; d++)
            for (p = 0; p < MEMOBS_PHASES; p++) {
                const memobs_timed_t *t = &s->timed[p][d];
                double gbs;
                if (!t->count || !t->ns) continue;
                gbs = (double)t->bytes / (double)t->ns;
                memobs__html_printf(o, "<tr><th>%s</th><td>%s</td><td data-timed-by=\"%s\">%s</td>",
                                    memobs__dir_name[d], memobs__html_phname[p],
                                    d < MEMOBS__NGPU ? "device" : "engine", d < MEMOBS__NGPU ? "device" : "engine");
                snprintf(key, sizeof key, "timed.%s.%s.bytes", memobs__html_phname[p], memobs__dir_key[d]);
                memobs__html_bytes_cell(o, key, t->bytes);
                snprintf(key, sizeof key, "timed.%s.%s.count", memobs__html_phname[p], memobs__dir_key[d]);
                memobs__html_count_cell(o, key, t->count);
                snprintf(key, sizeof key, "timed.%s.%s.ns", memobs__html_phname[p], memobs__dir_key[d]);
                memobs__html_cell(o, key, t->ns, memobs_format_ns(b, sizeof b, t->ns));
                memobs__html_printf(o, "<td class=\"n\">%.2f</td><td><svg width=\"200\" height=\"12\" role=\"img\">"
                                    "<rect width=\"%.1f\" height=\"12\" fill=\"%s\"><title>%.2f GB/s</title></rect>"
                                    "</svg></td></tr>\n", gbs, 200.0 * gbs / top, memobs__html_dcolor[d], gbs);
            }
        memobs__out_str(o, "</table>\n");
    }
    if (s->timed_in_flight_copies)
        memobs__html_printf(o, "<p>%llu timed copies (%llu bytes) still in flight.</p>\n",
                            (unsigned long long)s->timed_in_flight_copies,
                            (unsigned long long)s->timed_in_flight_bytes);
    memobs__xin_html(o, &s->in_flight);
    memobs__out_str(o, "</section>\n");
}

/* Transfer sizes: per direction with records, a table of the
   distribution (percentiles and max are log2 bucket bounds) and one bar
   chart of the bucket counts, the buckets from the smallest non-empty one
   to the largest over all directions, a bar per direction in each. At
   most 57 buckets x 7 directions of bars: about 80 KB at worst. */
static void memobs__html_sizes(memobs__out_t *o, const memobs_summary_t *s) {
    double pw = MEMOBS__HTML_W - MEMOBS__HTML_L - MEMOBS__HTML_R, ph = MEMOBS__HTML_H - MEMOBS__HTML_T - MEMOBS__HTML_B;
    unsigned d, b, lo = MEMOBS_SIZE_BUCKETS, hi = 0, nd = 0, sh[MEMOBS_DIRS], nb, every, i, g;
    const char *nm[MEMOBS_DIRS], *co[MEMOBS_DIRS];
    uint64_t top = 0;
    char key[64], t[6][32];
    memobs__out_str(o, "<section id=\"transfer-sizes\"><h2>Transfer sizes</h2>\n");
    for (d = 0; d < MEMOBS_DIRS; d++) {
        const memobs_xfer_sizes_t *z = &s->sizes[d];
        if (!z->count) continue;
        sh[nd] = d, nm[nd] = memobs__dir_name[d], co[nd] = memobs__html_dcolor[d], nd++;
        for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++)
            if (z->buckets[b]) {
                if (b < lo) lo = b;
                if (b > hi) hi = b;
                if (z->buckets[b] > top) top = z->buckets[b];
            }
    }
    if (!nd || !top) {
        memobs__html_absent(o, "no transfer was recorded", "MEMOBS_RECORD_* (every record is filed by its size)");
        memobs__out_str(o, "</section>\n");
        return;
    }
    memobs__out_str(o, "<p>Records by size in log2 buckets: a bucket of bound 2<sup>b</sup> holds the records of "
                       "more than 2<sup>b-1</sup> and at most 2<sup>b</sup> bytes (the first: 0 and 1 byte); "
                       "p50, p90, p99 and max are bucket bounds, the size is at most that.</p>\n"
                       "<table><tr><th></th><th>ops</th><th>bytes</th><th>mean</th><th>p50</th><th>p90</th>"
                       "<th>p99</th><th>max</th></tr>\n");
    for (i = 0; i < nd; i++) {
        const memobs_xfer_sizes_t *z = &s->sizes[sh[i]];
        const char *k = memobs__dir_key[sh[i]];
        memobs__html_printf(o, "<tr><th>%s</th>", memobs__dir_name[sh[i]]);
        snprintf(key, sizeof key, "sizes.%s.count", k);
        memobs__html_count_cell(o, key, z->count);
        snprintf(key, sizeof key, "sizes.%s.bytes", k);
        memobs__html_bytes_cell(o, key, z->bytes);
        memobs__html_printf(o, "<td class=\"n\">%s</td>", memobs_format_bytes(t[0], sizeof t[0], z->bytes / z->count));
        snprintf(key, sizeof key, "sizes.%s.p50", k);
        memobs__html_cell(o, key, z->p50, memobs__size_bound(t[1], sizeof t[1], z->p50));
        snprintf(key, sizeof key, "sizes.%s.p90", k);
        memobs__html_cell(o, key, z->p90, memobs__size_bound(t[2], sizeof t[2], z->p90));
        snprintf(key, sizeof key, "sizes.%s.p99", k);
        memobs__html_cell(o, key, z->p99, memobs__size_bound(t[3], sizeof t[3], z->p99));
        snprintf(key, sizeof key, "sizes.%s.max", k);
        memobs__html_cell(o, key, z->max, memobs__size_bound(t[4], sizeof t[4], z->max));
        memobs__out_str(o, "</tr>\n");
    }
    memobs__out_str(o, "</table>\n");
    nb = hi - lo + 1;
    every = (nb + 11) / 12; /* at most 12 labels on the x axis */
    memobs__html_printf(o, "<svg id=\"sizes-chart\" class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                        "role=\"img\">\n", MEMOBS__HTML_W, MEMOBS__HTML_H, MEMOBS__HTML_W, MEMOBS__HTML_H);
    for (g = 0; g <= 4; g++) {
        double yy = MEMOBS__HTML_T + ph - ph * g / 4.0;
        memobs__html_printf(o, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
                            "<text class=\"ax\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                            MEMOBS__HTML_L, yy, MEMOBS__HTML_L + pw, yy, MEMOBS__HTML_L - 4, yy + 4,
                            (double)top * g / 4.0);
    }
    for (b = lo; b <= hi; b++) {
        double gx = MEMOBS__HTML_L + pw * (b - lo) / nb, bw = pw / nb / (nd + 1.0);
        if ((b - lo) % every == 0)
            memobs__html_printf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                                gx + pw / nb / 2.0, MEMOBS__HTML_H - 8,
                                memobs__size_bound(t[0], sizeof t[0], (uint64_t)1 << b));
        for (i = 0; i < nd; i++) {
            uint64_t c = s->sizes[sh[i]].buckets[b];
            double h = ph * (double)c / (double)top;
            if (!c) continue;
            snprintf(key, sizeof key, "sizes.%s.buckets.%llu", memobs__dir_key[sh[i]],
                     (unsigned long long)((uint64_t)1 << b));
            memobs__html_printf(o, "<rect data-memobs=\"%s\" data-v=\"%llu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                "height=\"%.1f\" fill=\"%s\"><title>%s: %llu record%s in %s%s, %s]</title></rect>\n",
                                key, (unsigned long long)c, gx + bw * (i + 0.5), MEMOBS__HTML_T + ph - h, bw * 0.9,
                                h, co[i], nm[i], (unsigned long long)c, memobs__s(c), b ? "(" : "[",
                                b ? memobs__size_bound(t[1], sizeof t[1], (uint64_t)1 << (b - 1)) : "0 B",
                                memobs__size_bound(t[2], sizeof t[2], (uint64_t)1 << b));
        }
    }
    memobs__out_str(o, "</svg>\n");
    memobs__html_legend(o, nm, co, nd);
    memobs__out_str(o, "</section>\n");
}

/* A histogram of one latency: counts of the window by bucket, regrouped
   into at most 48 bins on a log axis, p50/p90/p99 as lines. */
static void memobs__html_hist(memobs__out_t *o, const char *name, const char *key, const memobs_latency_t *l,
                              const uint64_t *cnt) {
    static const char *const qn[3] = {"p50", "p90", "p99"};
    double lo, hi, pw = MEMOBS__HTML_W - MEMOBS__HTML_L - MEMOBS__HTML_R;
    double ph = MEMOBS__HTML_H - MEMOBS__HTML_T - MEMOBS__HTML_B;
    uint64_t bin[48], top = 0, q[3];
    unsigned i, first = MEMOBS__HIST_NB, last = 0, nb = 48, j;
    char b[32], k2[48];
    memobs__html_printf(o, "<h3>%s</h3>\n", name);
    if (!l->count) {
        memobs__html_absent(o, "no sample",
                            "MEMOBS_TTFT_START/STOP, MEMOBS_TPOT_STEP or memobs_request_begin/token/end");
        return;
    }
    memobs__out_str(o, "<table><tr><th>count</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>"
                       "</tr><tr>");
    snprintf(k2, sizeof k2, "%s.count", key);
    memobs__html_count_cell(o, k2, l->count);
    snprintf(k2, sizeof k2, "%s.mean_ns", key);
    memobs__html_cell(o, k2, l->mean_ns, memobs_format_ns(b, sizeof b, l->mean_ns));
    snprintf(k2, sizeof k2, "%s.p50_ns", key);
    memobs__html_cell(o, k2, l->p50_ns, memobs_format_ns(b, sizeof b, l->p50_ns));
    snprintf(k2, sizeof k2, "%s.p90_ns", key);
    memobs__html_cell(o, k2, l->p90_ns, memobs_format_ns(b, sizeof b, l->p90_ns));
    snprintf(k2, sizeof k2, "%s.p99_ns", key);
    memobs__html_cell(o, k2, l->p99_ns, memobs_format_ns(b, sizeof b, l->p99_ns));
    snprintf(k2, sizeof k2, "%s.max_ns", key);
    memobs__html_cell(o, k2, l->max_ns, memobs_format_ns(b, sizeof b, l->max_ns));
    memobs__out_str(o, "</tr></table>\n");
    if (!cnt) return;
    for (i = 0; i < MEMOBS__HIST_NB; i++)
        if (cnt[i]) {
            if (first == MEMOBS__HIST_NB) first = i;
            last = i;
        }
    if (first == MEMOBS__HIST_NB) return;
    lo = memobs__html_log2((double)(memobs__hist_value(first) ? memobs__hist_value(first) : 1)) - 0.05;
    hi = memobs__html_log2((double)(memobs__hist_value(last) ? memobs__hist_value(last) : 1)) + 0.05;
    if (l->max_ns && memobs__html_log2((double)l->max_ns) + 0.05 > hi) hi = memobs__html_log2((double)l->max_ns) + 0.05;
    memset(bin, 0, sizeof bin);
    for (i = first; i <= last; i++) {
        double v = memobs__html_log2((double)(memobs__hist_value(i) ? memobs__hist_value(i) : 1));
        j = (unsigned)((v - lo) / (hi - lo) * nb);
        if (j >= nb) j = nb - 1;
        bin[j] += cnt[i];
    }
    for (j = 0; j < nb; j++)
        if (bin[j] > top) top = bin[j];
    memobs__html_printf(o, "<svg id=\"hist-%s\" class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                        "role=\"img\">\n", key, MEMOBS__HTML_W, MEMOBS__HTML_H, MEMOBS__HTML_W, MEMOBS__HTML_H);
    for (j = 0; j <= 4; j++) {
        double yy = MEMOBS__HTML_T + ph - ph * j / 4.0;
        memobs__html_printf(o, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
                            "<text class=\"ax\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                            MEMOBS__HTML_L, yy, MEMOBS__HTML_L + pw, yy, MEMOBS__HTML_L - 4, yy + 4,
                            (double)top * j / 4.0);
        memobs__html_printf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                            MEMOBS__HTML_L + pw * j / 4.0, MEMOBS__HTML_H - 8,
                            memobs_format_ns(b, sizeof b, (uint64_t)memobs__html_exp2(lo + (hi - lo) * j / 4.0)));
    }
    for (j = 0; j < nb; j++) {
        double h = ph * (double)bin[j] / (double)top;
        char b2[32];
        if (!bin[j]) continue;
        memobs__html_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4e79a7\">"
                            "<title>%llu in %s to %s</title></rect>\n", MEMOBS__HTML_L + pw * j / nb,
                            MEMOBS__HTML_T + ph - h, pw / nb * 0.9, h, (unsigned long long)bin[j],
                            memobs_format_ns(b, sizeof b, (uint64_t)memobs__html_exp2(lo + (hi - lo) * j / nb)),
                            memobs_format_ns(b2, sizeof b2, (uint64_t)memobs__html_exp2(lo + (hi - lo) * (j + 1) / nb)));
    }
    q[0] = l->p50_ns, q[1] = l->p90_ns, q[2] = l->p99_ns;
    for (j = 0; j < 3; j++) {
        double v = q[j] ? memobs__html_log2((double)q[j]) : lo, xx = MEMOBS__HTML_L + pw * (v - lo) / (hi - lo);
        memobs__html_printf(o, "<line class=\"q\" data-q=\"%s\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\">"
                            "<title>%s %s</title></line><text class=\"ql\" x=\"%.1f\" y=\"%.0f\">%s</text>\n",
                            qn[j], xx, MEMOBS__HTML_T, xx, MEMOBS__HTML_T + ph, qn[j], memobs_format_ns(b, sizeof b, q[j]),
                            xx + 3, MEMOBS__HTML_T + 10 + 12 * j, qn[j]);
    }
    memobs__out_str(o, "</svg>\n");
}

static void memobs__html_latency(memobs__out_t *o, const memobs_summary_t *s, const uint64_t *cnt) {
    memobs__out_str(o, "<section id=\"latency\"><h2>Latency: TTFT, TPOT, E2E</h2>\n");
    memobs__html_hist(o, "TTFT (time to first token)", "ttft", &s->ttft, cnt);
    memobs__html_hist(o, "TPOT (time per output token)", "tpot", &s->tpot, cnt ? cnt + MEMOBS__HIST_NB : NULL);
    memobs__html_hist(o, "E2E (request begin to end)", "e2e", &s->e2e, cnt ? cnt + 2 * MEMOBS__HIST_NB : NULL);
    memobs__html_printf(o, "<p>requests: <span data-memobs=\"requests.begun\" data-v=\"%llu\">%llu</span> begun, "
                        "<span data-memobs=\"requests.completed\" data-v=\"%llu\">%llu</span> completed, "
                        "<span data-memobs=\"requests.aborted\" data-v=\"%llu\">%llu</span> aborted, "
                        "<span data-memobs=\"requests.abandoned\" data-v=\"%llu\">%llu</span> abandoned, "
                        "<span data-memobs=\"requests.in_flight\" data-v=\"%llu\">%llu</span> in flight.</p>\n",
                        (unsigned long long)s->requests_begun, (unsigned long long)s->requests_begun,
                        (unsigned long long)s->requests_completed, (unsigned long long)s->requests_completed,
                        (unsigned long long)s->requests_aborted, (unsigned long long)s->requests_aborted,
                        (unsigned long long)s->requests_abandoned, (unsigned long long)s->requests_abandoned,
                        (unsigned long long)s->requests_in_flight, (unsigned long long)s->requests_in_flight);
    memobs__out_str(o, "</section>\n");
}

/* Requests: what attribution (memobs_request_enter/_leave,
   memobs_request_xfer*) put on the requests. Only once a transfer was
   attributed. At most 2 x MEMOBS_REQUEST_TOP rows and bars and
   MEMOBS_REPORT_ROWS tenant rows and "other": about 120 KB at worst at
   default limits (33 tenants' names of quotes, 20-digit ids, 7
   directions; tests/outputs/test_html_requests.c full). */
static const char *const memobs__html_rstate[5] = {"in flight", "completed", "aborted", "abandoned", "dropped"};

/* A request's bytes (by 0) or time waited (by 1) in direction d. */
static uint64_t memobs__html_rval(const memobs_request_info_t *r, int by, unsigned d) {
    uint64_t v = 0;
    unsigned p;
    if (by) return memobs__sat(r->engine_ns[d], r->device_ns[d]);
    for (p = 0; p < MEMOBS_PHASES; p++) v = memobs__sat(v, memobs_dirs_get(&r->xfer[p], d)->bytes);
    return v;
}

/* part of all as a percentage, "<0.1%" and ">99.9%" rather than a
   rounded 0 or 100 that is not. */
static const char *memobs__html_share(char *b, size_t len, uint64_t part, uint64_t all) {
    double p = all ? 100.0 * (double)part / (double)all : 0;
    if (!all) return "-";
    if (part && p < 0.05) return "&lt;0.1%";
    if (part < all && p >= 99.95) return "&gt;99.9%";
    return memobs__out_sprintf(b, len, "%.1f%%", p);
}

/* A request's tenant as a cell: the name as text, or "-" marked
   data-none (no tenant set). */
static void memobs__html_tenant_cell(memobs__out_t *o, const char *tenant) {
    if (!tenant[0]) {
        memobs__out_str(o, "<td data-memobs=\"request.tenant\" data-none=\"1\">-</td>");
        return;
    }
    memobs__out_str(o, "<td data-memobs=\"request.tenant\">");
    memobs__html_esc(o, tenant);
    memobs__out_str(o, "</td>");
}

/* Horizontal bars, one per request, split by direction: bytes moved (by
   0) or time waited on transfers (by 1). */
static void memobs__html_rbars(memobs__out_t *o, const char *id, const memobs_request_info_t *r, size_t n, int by,
                               unsigned nd) {
    const double L = 160, R = 90, row = 22;
    double pw = MEMOBS__HTML_W - L - R, h = MEMOBS__HTML_T + row * (double)n + MEMOBS__HTML_B, top = 0;
    unsigned d, g;
    size_t i;
    char b[32];
    for (i = 0; i < n; i++) {
        uint64_t t = by ? r[i].wait_ns : memobs__att_moved(&r[i]);
        if ((double)t > top) top = (double)t;
    }
    if (!(top > 0)) top = 1;
    memobs__html_printf(o, "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 %d %.0f\" width=\"%d\" height=\"%.0f\" "
                        "role=\"img\">\n", id, MEMOBS__HTML_W, h, MEMOBS__HTML_W, h);
    for (g = 0; g <= 4; g++) {
        double xx = L + pw * g / 4.0;
        memobs__html_printf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                            "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", xx,
                            MEMOBS__HTML_T, xx, h - MEMOBS__HTML_B, xx, h - 8,
                            memobs__html_label(top * g / 4.0, by ? 2 : 0, b, sizeof b));
    }
    for (i = 0; i < n; i++) {
        double y = MEMOBS__HTML_T + row * (double)i, x = L;
        uint64_t t = by ? r[i].wait_ns : memobs__att_moved(&r[i]);
        memobs__html_printf(o, "<text class=\"ax\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">#%llu</text>\n", L - 6,
                            y + row / 2 + 4, (unsigned long long)r[i].id);
        for (d = 0; d < nd; d++) {
            uint64_t v = memobs__html_rval(&r[i], by, d);
            double w = pw * (double)v / top;
            if (!v) continue;
            if (w < 1) w = 1; /* seen, if not to scale */
            memobs__html_printf(o, "<rect data-request=\"%llu\" data-dir=\"%s\" data-v=\"%llu\" x=\"%.1f\" "
                                "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>#%llu",
                                (unsigned long long)r[i].id, memobs__dir_key[d], (unsigned long long)v, x, y + 3, w,
                                row - 6, memobs__html_dcolor[d], (unsigned long long)r[i].id);
            memobs__html_printf(o, " %s: %s</title></rect>\n", memobs__dir_name[d],
                                by ? memobs_format_ns(b, sizeof b, v) : memobs_format_bytes(b, sizeof b, v));
            x += w;
        }
        memobs__html_printf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 4, y + row / 2 + 4,
                            by ? memobs_format_ns(b, sizeof b, t) : memobs_format_bytes(b, sizeof b, t));
    }
    memobs__out_str(o, "</svg>\n");
}

/* A top list (memobs_request_top) as a table and its bars. */
static void memobs__html_rtop(memobs__out_t *o, const memobs_request_info_t *r, size_t n, int by, unsigned nd) {
    static const char *const name[2] = {"bytes", "wait"};
    unsigned d, p;
    size_t i;
    char b[32], key[48];
    memobs__html_printf(o, "<h3>Top requests by %s</h3>\n", by ? "time waited on transfers" : "bytes moved");
    if (!n) {
        if (by)
            memobs__html_absent(o, "no finished request waited on a timed transfer",
                                "memobs_request_xfer_ns, or memobs_cuda.h's timing and memobs_record_xfer_ns while "
                                "a thread is bound (memobs_request_enter)");
        else
            memobs__out_str(o, "<p>No finished request moved bytes yet (requests in flight are not listed).</p>\n");
        return;
    }
    memobs__html_printf(o, "<table id=\"requests-top-%s\"><tr><th>#</th><th>request</th><th>tenant</th>"
                        "<th>state</th><th>moved</th><th>ops</th>", name[by]);
    for (d = 0; d < nd; d++) memobs__html_printf(o, "<th>%s</th>", memobs__dir_name[d]);
    memobs__out_str(o, "<th>waited</th><th>TTFT</th><th>E2E</th><th>tokens</th><th>peak tracked</th></tr>\n");
    for (i = 0; i < n; i++) {
        uint64_t ops = 0;
        unsigned st = (unsigned)r[i].state < 5 ? (unsigned)r[i].state : 0;
        for (p = 0; p < MEMOBS_PHASES; p++)
            for (d = 0; d < MEMOBS_DIRS; d++) ops = memobs__sat(ops, memobs_dirs_get(&r[i].xfer[p], d)->count);
        memobs__html_printf(o, "<tr data-by=\"%s\" data-rank=\"%u\" data-request=\"%llu\"><td>%u</td>", name[by],
                            (unsigned)i + 1, (unsigned long long)r[i].id, (unsigned)i + 1);
        snprintf(b, sizeof b, "%llu", (unsigned long long)r[i].id);
        memobs__html_cell(o, "request.id", r[i].id, b);
        memobs__html_tenant_cell(o, r[i].tenant);
        memobs__html_printf(o, "<td data-memobs=\"request.state\" data-v=\"%u\">%s</td>", (unsigned)r[i].state,
                            memobs__html_rstate[st]);
        memobs__html_bytes_cell(o, "request.bytes", memobs__att_moved(&r[i]));
        memobs__html_count_cell(o, "request.ops", ops);
        for (d = 0; d < nd; d++) {
            snprintf(key, sizeof key, "request.%s.bytes", memobs__dir_key[d]);
            memobs__html_bytes_cell(o, key, memobs__html_rval(&r[i], 0, d));
        }
        memobs__html_cell(o, "request.wait_ns", r[i].wait_ns,
                          r[i].wait_ns ? memobs_format_ns(b, sizeof b, r[i].wait_ns) : "-");
        memobs__html_cell(o, "request.ttft_ns", r[i].ttft_ns,
                          r[i].ttft_ns ? memobs_format_ns(b, sizeof b, r[i].ttft_ns) : "-");
        memobs__html_cell(o, "request.e2e_ns", r[i].e2e_ns, r[i].e2e_ns ? memobs_format_ns(b, sizeof b, r[i].e2e_ns)
                                                                       : "-");
        memobs__html_count_cell(o, "request.tokens", r[i].tokens);
        memobs__html_bytes_cell(o, "request.peak_bytes", r[i].peak_bytes);
        memobs__out_str(o, "</tr>\n");
    }
    memobs__out_str(o, "</table>\n");
    memobs__html_rbars(o, by ? "requests-top-wait-chart" : "requests-top-bytes-chart", r, n, by, nd);
    {
        const char *nm[MEMOBS_DIRS], *co[MEMOBS_DIRS];
        for (d = 0; d < nd; d++) nm[d] = memobs__dir_name[d], co[d] = memobs__html_dcolor[d];
        memobs__html_legend(o, nm, co, nd);
    }
}

/* The tenants' counters (memobs_request_tenant): the window's bytes and
   operations by direction and the requests finished, largest first,
   "other" (names past MEMOBS_MAX_TENANTS) last; a name with nothing in the
   window has no row. At most MEMOBS_REPORT_ROWS named rows (the rest
   counted), "other" always. */
typedef struct {
    uint32_t t;
    uint64_t bytes[MEMOBS_DIRS], ops[MEMOBS_DIRS], total, nops, req;
} memobs__html_trow_t;

static void memobs__html_tenants(memobs__out_t *o, unsigned nd) {
    memobs__html_trow_t *row, tmp;
    uint32_t nt, t, n = 0, i, j, shown = 0, left = 0;
    uint32_t limit = memobs__g.trk.rows > 0 ? (uint32_t)memobs__g.trk.rows : UINT32_MAX;
    unsigned d;
    char key[48], b[32];
    row = (memobs__html_trow_t *)MEMOBS_MALLOC((MEMOBS_MAX_TENANTS + 1) * sizeof *row);
    if (!row) return;
    memobs__mutex_lock(&memobs__att.lock);
    nt = __atomic_load_n(&memobs__att.nten.v, __ATOMIC_ACQUIRE);
    if (nt > MEMOBS_MAX_TENANTS) nt = MEMOBS_MAX_TENANTS;
    for (t = 0; t <= MEMOBS_MAX_TENANTS; t++) {
        if (t >= nt && t < MEMOBS_MAX_TENANTS) continue;
        memset(&row[n], 0, sizeof row[n]);
        row[n].t = t;
        for (d = 0; d < MEMOBS_DIRS; d++) {
            row[n].bytes[d] = memobs__win(MEMOBS__LOAD(&memobs__att.tx[t][0][d].v), memobs__att.tx_base[t][0][d]);
            row[n].ops[d] = MEMOBS__LOAD(&memobs__att.tx[t][1][d].v) - memobs__att.tx_base[t][1][d];
            row[n].total = memobs__sat(row[n].total, row[n].bytes[d]);
            row[n].nops = memobs__sat(row[n].nops, row[n].ops[d]);
        }
        row[n].req = MEMOBS__LOAD(&memobs__att.treq[t].v) - memobs__att.treq_base[t];
        if (row[n].nops || row[n].req) n++;
    }
    memobs__mutex_unlock(&memobs__att.lock);
    for (i = 1; i < n; i++) /* insertion sort by bytes, "other" kept last */
        for (j = i; j > 0 && row[j].t < MEMOBS_MAX_TENANTS && row[j - 1].total < row[j].total; j--)
            tmp = row[j], row[j] = row[j - 1], row[j - 1] = tmp;
    if (n) {
        memobs__out_str(o, "<h3>Tenants</h3>\n<p>Bytes moved for each tenant's requests in the window (in flight "
                           "ones too, as far as their ledgers were brought up to date), and its requests "
                           "finished.</p>\n<table id=\"requests-tenants\"><tr><th>tenant</th><th>requests</th>"
                           "<th>moved</th><th>ops</th>");
        for (d = 0; d < nd; d++) memobs__html_printf(o, "<th>%s</th><th>ops</th>", memobs__dir_name[d]);
        memobs__out_str(o, "</tr>\n");
    }
    for (i = 0; i < n; i++) {
        /* names are never written again once taken (nten read with acquire) */
        const char *nm = row[i].t < MEMOBS_MAX_TENANTS ? memobs__att.ten[row[i].t] : "other";
        if (row[i].t < MEMOBS_MAX_TENANTS && shown >= limit) {
            left++;
            continue;
        }
        shown += row[i].t < MEMOBS_MAX_TENANTS;
        memobs__html_printf(o, "<tr data-tenant=\"%u\"><th>", (unsigned)row[i].t);
        memobs__html_esc(o, nm);
        memobs__out_str(o, "</th>");
        memobs__html_count_cell(o, "tenant.requests", row[i].req);
        memobs__html_bytes_cell(o, "tenant.bytes", row[i].total);
        memobs__html_count_cell(o, "tenant.count", row[i].nops);
        for (d = 0; d < nd; d++) {
            snprintf(key, sizeof key, "tenant.%s.bytes", memobs__dir_key[d]);
            memobs__html_cell(o, key, row[i].bytes[d], memobs_format_bytes(b, sizeof b, row[i].bytes[d]));
            snprintf(key, sizeof key, "tenant.%s.count", memobs__dir_key[d]);
            memobs__html_count_cell(o, key, row[i].ops[d]);
        }
        memobs__out_str(o, "</tr>\n");
    }
    if (n) memobs__out_str(o, "</table>\n");
    if (left) memobs__html_printf(o, "<p>%u more tenants (MEMOBS_REPORT_ROWS)</p>\n", (unsigned)left);
    MEMOBS_FREE(row);
}

static void memobs__html_requests(memobs__out_t *o, const memobs_summary_t *s) {
    static const char *const mn[4] = {"prefill", "decode", "unphased", "total"};
    const memobs_dirs_t *m[4];
    memobs_request_info_t *top;
    uint64_t any = 0, most = 0;
    unsigned d, k, nd = memobs__dirs_shown(s), bi;
    size_t n[2] = {0, 0};
    double pw, row = 26, h;
    char key[64], b[3][32];
    for (d = 0; d < MEMOBS_DIRS; d++) {
        any |= memobs_dirs_get(&s->attributed.total, d)->count;
        if (memobs_dirs_get(&s->total, d)->bytes > most) most = memobs_dirs_get(&s->total, d)->bytes;
    }
    if (!any) return;
    m[0] = &s->attributed.prefill, m[1] = &s->attributed.decode, m[2] = &s->attributed.unphased;
    m[3] = &s->attributed.total;
    for (d = 0; d < MEMOBS_DIRS; d++)
        if (memobs_dirs_get(&s->attributed.total, d)->count && d >= MEMOBS__NGPU) nd = MEMOBS_DIRS;
    memobs__out_str(o, "<section id=\"requests\"><h2>Requests: attributed transfers</h2>\n"
                       "<p>The part of the transfers made on a request's behalf (memobs_request_enter/leave, "
                       "memobs_request_xfer); unattributed = total - attributed.");
    memobs__html_printf(o, " Of the attributed bytes, <span data-memobs=\"attributed.orphan_bytes\" data-v=\"%llu\">"
                        "%s</span> were for requests not in flight (in no request's ledger).</p>\n",
                        (unsigned long long)s->attributed.orphan_bytes,
                        memobs_format_bytes(b[0], sizeof b[0], s->attributed.orphan_bytes));
    memobs__out_str(o, "<table id=\"requests-split\"><tr><th></th><th>total</th><th>ops</th><th>attributed</th>"
                       "<th>ops</th><th>share</th><th>prefill</th><th>decode</th><th>unphased</th>"
                       "<th>unattributed</th><th>ops</th></tr>\n");
    for (d = 0; d < nd; d++) {
        const memobs_xfer_t *t = memobs_dirs_get(&s->total, d), *a = memobs_dirs_get(&s->attributed.total, d);
        memobs__html_printf(o, "<tr><th>%s</th>", memobs__dir_name[d]);
        snprintf(key, sizeof key, "%s.total.bytes", memobs__dir_key[d]);
        memobs__html_bytes_cell(o, key, t->bytes);
        snprintf(key, sizeof key, "%s.total.count", memobs__dir_key[d]);
        memobs__html_count_cell(o, key, t->count);
        snprintf(key, sizeof key, "attributed.%s.total.bytes", memobs__dir_key[d]);
        memobs__html_bytes_cell(o, key, a->bytes);
        snprintf(key, sizeof key, "attributed.%s.total.count", memobs__dir_key[d]);
        memobs__html_count_cell(o, key, a->count);
        memobs__html_printf(o, "<td class=\"n\">%s</td>", memobs__html_share(b[0], sizeof b[0], a->bytes, t->bytes));
        for (k = 0; k < 3; k++) {
            const memobs_xfer_t *x = memobs_dirs_get(m[k], d);
            snprintf(key, sizeof key, "attributed.%s.%s.bytes", memobs__dir_key[d], mn[k]);
            memobs__html_printf(o, "<td class=\"n\" data-memobs=\"%s\" data-v=\"%llu\" data-ops=\"%llu\">%s</td>",
                                key, (unsigned long long)x->bytes, (unsigned long long)x->count,
                                memobs_format_bytes(b[0], sizeof b[0], x->bytes));
        }
        snprintf(key, sizeof key, "unattributed.%s.bytes", memobs__dir_key[d]);
        memobs__html_bytes_cell(o, key, t->bytes > a->bytes ? t->bytes - a->bytes : 0);
        snprintf(key, sizeof key, "unattributed.%s.count", memobs__dir_key[d]);
        memobs__html_count_cell(o, key, t->count > a->count ? t->count - a->count : 0);
        memobs__out_str(o, "</tr>\n");
    }
    memobs__out_str(o, "</table>\n");
    if (most) { /* a bar per direction, its total as 100%: attributed, then unattributed */
        const double L = 60, R = 90;
        pw = MEMOBS__HTML_W - L - R;
        h = MEMOBS__HTML_T + row * nd + 8;
        memobs__html_printf(o, "<svg id=\"requests-split-chart\" class=\"chart\" viewBox=\"0 0 %d %.0f\" width=\"%d\" "
                            "height=\"%.0f\" role=\"img\">\n", MEMOBS__HTML_W, h, MEMOBS__HTML_W, h);
        for (d = 0; d < nd; d++) {
            const memobs_xfer_t *t = memobs_dirs_get(&s->total, d), *a = memobs_dirs_get(&s->attributed.total, d);
            uint64_t v[2];
            double y = MEMOBS__HTML_T + row * d, x = L;
            v[0] = a->bytes, v[1] = t->bytes > a->bytes ? t->bytes - a->bytes : 0;
            memobs__html_printf(o, "<text class=\"ax\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 6,
                                y + row / 2 + 4, memobs__dir_name[d]);
            for (bi = 0; bi < 2; bi++) {
                double w = t->bytes ? pw * (double)v[bi] / (double)t->bytes : 0;
                if (!v[bi]) continue;
                if (w < 1) w = 1; /* seen, if not to scale */
                memobs__html_printf(o, "<rect data-dir=\"%s\" data-part=\"%s\" data-v=\"%llu\" x=\"%.1f\" "
                                    "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s><title>%s %s: %s of "
                                    "%s (%s)</title></rect>\n", memobs__dir_key[d], bi ? "unattributed" : "attributed",
                                    (unsigned long long)v[bi], x, y + 4, w, row - 8, memobs__html_dcolor[d],
                                    bi ? " fill-opacity=\"0.3\"" : "", memobs__dir_name[d],
                                    bi ? "unattributed" : "attributed", memobs_format_bytes(b[1], sizeof b[1], v[bi]),
                                    memobs_format_bytes(b[2], sizeof b[2], t->bytes),
                                    memobs__html_share(b[0], sizeof b[0], v[bi], t->bytes));
                x += w;
            }
            memobs__html_printf(o, "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", L + pw + 4,
                                y + row / 2 + 4, memobs_format_bytes(b[1], sizeof b[1], t->bytes));
        }
        memobs__out_str(o, "</svg>\n<p class=\"legend\"><span><i style=\"background:#555\"></i>attributed</span> "
                           "<span><i style=\"background:#555;opacity:0.3\"></i>unattributed</span> (each bar: "
                           "the direction's total as 100%)</p>\n");
    }
    top = (memobs_request_info_t *)MEMOBS_MALLOC(2 * MEMOBS_REQUEST_TOP * sizeof *top);
    if (top) {
        n[0] = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, MEMOBS_REQUEST_TOP);
        n[1] = memobs_request_top(MEMOBS_REQUEST_TOP_WAIT, top + MEMOBS_REQUEST_TOP, MEMOBS_REQUEST_TOP);
        memobs__html_printf(o, "<p>Finished requests since start-up or the last reset, largest first (the %d "
                            "largest of each are kept).</p>\n", MEMOBS_REQUEST_TOP);
        memobs__html_rtop(o, top, n[0], MEMOBS_REQUEST_TOP_BYTES, nd);
        memobs__html_rtop(o, top + MEMOBS_REQUEST_TOP, n[1], MEMOBS_REQUEST_TOP_WAIT, nd);
        MEMOBS_FREE(top);
    }
    memobs__html_tenants(o, nd);
    memobs__out_str(o, "</section>\n");
}

#define MEMOBS__HTML_SERIES 7
/* Tracked live bytes by kind over time from the timeline's allocation and
   free events (each carries its kind's live bytes after it), binned like
   the samples: the largest figure of each bin. 0 when it holds none. */
static int memobs__html_tl_memory(memobs__out_t *o, const memobs__tl_ev_t *ev, size_t n) {
    static const char *const kname[MEMOBS_MEM_KINDS] = {"tracked device (timeline)", "tracked host (timeline)",
                                                        "tracked pinned (timeline)", "tracked managed (timeline)"};
    static const char *const kcolor[MEMOBS_MEM_KINDS] = {"#2ca02c", "#ff7f0e", "#bcbd22", "#17becf"};
    double *x, *y[MEMOBS_MEM_KINDS], *yy[MEMOBS_MEM_KINDS];
    const char *nm[MEMOBS_MEM_KINDS], *co[MEMOBS_MEM_KINDS];
    uint64_t t0 = 0, t1 = 0, span;
    size_t i, k = 0, nb, j;
    unsigned c, used = 0, seen = 0;
    for (i = 0; i < n; i++) {
        unsigned type = (unsigned)(ev[i].meta & 15u);
        if (type != MEMOBS__TL_ALLOC && type != MEMOBS__TL_FREE) continue;
        if (!k++) t0 = ev[i].ts;
        t1 = ev[i].ts;
        seen |= 1u << ((ev[i].meta >> 4 & 15u) % MEMOBS_MEM_KINDS);
    }
    if (!k) return 0;
    nb = k < MEMOBS__HTML_POINTS ? k : MEMOBS__HTML_POINTS;
    span = t1 > t0 ? t1 - t0 : 1;
    x = (double *)MEMOBS_MALLOC(nb * (MEMOBS_MEM_KINDS + 1) * sizeof(double));
    if (!x) return 0;
    for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
        y[c] = x + nb * (c + 1);
        for (j = 0; j < nb; j++) y[c][j] = -1;
    }
    for (j = 0; j < nb; j++) x[j] = (double)span * ((double)j + 0.5) / (double)nb / 1e9;
    for (i = 0; i < n; i++) {
        unsigned type = (unsigned)(ev[i].meta & 15u);
        if ((type != MEMOBS__TL_ALLOC && type != MEMOBS__TL_FREE) || ev[i].ts < t0) continue;
        c = (unsigned)(ev[i].meta >> 4 & 15u) % MEMOBS_MEM_KINDS;
        j = (size_t)((double)(ev[i].ts - t0) / (double)span * (double)nb);
        if (j >= nb) j = nb - 1;
        if ((double)ev[i].c > y[c][j]) y[c][j] = (double)ev[i].c;
    }
    for (c = 0; c < MEMOBS_MEM_KINDS; c++)
        if (seen & (1u << c)) yy[used] = y[c], nm[used] = kname[c], co[used] = kcolor[c], used++;
    memobs__html_printf(o, "<p>No samples: tracked live bytes from the timeline's %llu allocation and free events "
                        "instead (the sampler adds RSS, heap and the driver's figures), each point the largest of "
                        "its bin of %.3g ms.</p>\n", (unsigned long long)k, (double)span / (double)nb / 1e6);
    memobs__html_lines(o, "memory-chart", x, yy, used, nb, nm, co, 0);
    MEMOBS_FREE(x);
    return 1;
}

static void memobs__html_memory(memobs__out_t *o, const memobs_summary_t *s, const memobs__tl_ev_t *ev, size_t nev) {
    static const char *const sname[MEMOBS__HTML_SERIES] = {
        "RSS", "anonymous", "malloc heap", "tracked host", "tracked pinned", "tracked device", "device used (driver)"};
    static const char *const scolor[MEMOBS__HTML_SERIES] = {"#1f77b4", "#9467bd", "#8c564b", "#ff7f0e",
                                                            "#bcbd22", "#2ca02c", "#d62728"};
    static const char *const leak[5] = {"no leak signature", "memory mapped outside malloc grows",
                                        "the malloc heap grows", "tracked host/pinned memory grows",
                                        "memory grows, unexplained by the heap and tracked bytes"};
    static const char *const leak_id[5] = {"none", "outside_malloc", "heap", "tracked", "unexplained"};
    memobs_sample_t *sm = NULL;
    memobs_leak_t lk;
    size_t n = memobs__samples_copy(NULL, 0), i;
    unsigned k, c;
    char b[32], key[48];
    memobs__out_str(o, "<section id=\"memory\"><h2>Memory</h2>\n");
    if (s->tracking) {
        memobs__out_str(o, "<table><tr><th>tracked</th><th>current</th><th>peak</th><th>live</th><th>allocs</th>"
                           "<th>frees</th><th>allocated</th></tr>\n");
        for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
            const memobs_mem_stats_t *mm = &s->mem[c];
            const char *kn = memobs__kind_name[c];
            memobs__html_printf(o, "<tr><th>%s</th>", kn);
            snprintf(key, sizeof key, "memory.%s.current_bytes", kn);
            memobs__html_bytes_cell(o, key, mm->current_bytes);
            snprintf(key, sizeof key, "memory.%s.peak_bytes", kn);
            memobs__html_bytes_cell(o, key, mm->peak_bytes);
            snprintf(key, sizeof key, "memory.%s.live", kn);
            memobs__html_count_cell(o, key, mm->live);
            snprintf(key, sizeof key, "memory.%s.allocs", kn);
            memobs__html_count_cell(o, key, mm->allocs);
            snprintf(key, sizeof key, "memory.%s.frees", kn);
            memobs__html_count_cell(o, key, mm->frees);
            snprintf(key, sizeof key, "memory.%s.alloc_bytes", kn);
            memobs__html_bytes_cell(o, key, mm->alloc_bytes);
            memobs__out_str(o, "</tr>\n");
        }
        memobs__out_str(o, "</table>\n");
    } else {
        memobs__html_absent(o, "no allocation was tracked",
                            "MEMOBS_TRACK_ALLOC/MEMOBS_TRACK_FREE (or memobs_cuda.h's wrappers)");
    }
    memobs__out_str(o, "<h3>Over time</h3>\n");
    if (n) sm = (memobs_sample_t *)MEMOBS_MALLOC(n * sizeof *sm);
    if (sm) n = memobs__samples_copy(sm, n);
    if ((!sm || n == 0) && !memobs__html_tl_memory(o, ev, nev)) {
        memobs__html_absent(o, "no memory sample", "the sampler (MEMOBS_SAMPLE_MS=N or memobs_sampler_start)");
    } else if (sm && n) {
        /* buckets of stride samples, the largest value of each kept */
        size_t stride = (n + MEMOBS__HTML_POINTS - 1) / MEMOBS__HTML_POINTS, np = (n + stride - 1) / stride;
        double *x = (double *)MEMOBS_MALLOC(np * (MEMOBS__HTML_SERIES + 1) * sizeof(double));
        double *y[MEMOBS__HTML_SERIES], *yy[MEMOBS__HTML_SERIES];
        const char *nm[MEMOBS__HTML_SERIES], *co[MEMOBS__HTML_SERIES];
        unsigned used = 0;
        if (x) {
            for (k = 0; k < MEMOBS__HTML_SERIES; k++) {
                y[k] = x + np * (k + 1);
                for (i = 0; i < np; i++) y[k][i] = -1;
            }
            for (i = 0; i < n; i++) {
                const memobs_sample_t *e = &sm[i];
                uint64_t v[MEMOBS__HTML_SERIES];
                size_t j = i / stride;
                v[0] = e->rss_bytes, v[1] = e->anon_bytes, v[2] = e->heap_bytes;
                v[3] = e->tracked_host_bytes, v[4] = e->tracked_pinned_bytes, v[5] = e->tracked_device_bytes;
                v[6] = e->ndev ? 0 : MEMOBS_UNKNOWN;
                for (c = 0; c < e->ndev && c < MEMOBS_SAMPLE_DEVICES; c++) {
                    if (e->dev[c].used == MEMOBS_UNKNOWN) v[6] = MEMOBS_UNKNOWN;
                    if (v[6] != MEMOBS_UNKNOWN) v[6] += e->dev[c].used;
                }
                if (i % stride == 0) x[j] = (double)(e->time_ns - sm[0].time_ns) / 1e9;
                for (k = 0; k < MEMOBS__HTML_SERIES; k++)
                    if (v[k] != MEMOBS_UNKNOWN && (double)v[k] > y[k][j]) y[k][j] = (double)v[k];
            }
            /* the series with something to show: known, and for the
               tracked kinds not zero throughout */
            for (k = 0; k < MEMOBS__HTML_SERIES; k++) {
                double top = -1;
                for (i = 0; i < np; i++)
                    if (y[k][i] > top) top = y[k][i];
                if (top < 0 || (k >= 3 && k <= 5 && top <= 0)) continue;
                yy[used] = y[k], nm[used] = sname[k], co[used] = scolor[k], used++;
            }
            memobs__html_printf(o, "<p>%llu samples over %.3g s (%llu dropped, oldest first); each point is the "
                                "largest of %llu sample%s.</p>\n", (unsigned long long)n,
                                (double)(sm[n - 1].time_ns - sm[0].time_ns) / 1e9,
                                (unsigned long long)memobs_get_samples_dropped(), (unsigned long long)stride,
                                stride == 1 ? "" : "s");
            memobs__html_lines(o, "memory-chart", x, yy, used, np, nm, co, 0);
            {
                uint64_t pk = 0, pt = 0;
                for (i = 0; i < n; i++)
                    if (sm[i].rss_bytes != MEMOBS_UNKNOWN && sm[i].rss_bytes > pk)
                        pk = sm[i].rss_bytes, pt = sm[i].time_ns;
                memobs__html_printf(o, "<p>peak RSS <span data-memobs=\"samples.rss_peak\" data-v=\"%llu\">%s"
                                    "</span> at "
                                    "%.3f s.</p>\n", (unsigned long long)pk, memobs_format_bytes(b, sizeof b, pk),
                                    pt ? (double)(pt - sm[0].time_ns) / 1e9 : 0.0);
            }
            MEMOBS_FREE(x);
        }
    }
    if (sm) MEMOBS_FREE(sm);
    if (memobs_leak_check(&lk) == MEMOBS_OK && lk.samples) {
        memobs__html_printf(o, "<h3>Leak detector</h3>\n<p class=\"verdict %s\" data-memobs=\"leak.kind\" "
                            "data-kind=\"%s\">%s", lk.kind ? "bad" : "good", leak_id[lk.kind], leak[lk.kind]);
        if (lk.kind)
            memobs__html_printf(o, ": %.1f MB/min (R&sup2; %.2f)", lk.growth_mb_min, memobs__r2_cut(lk.growth_r2));
        memobs__out_str(o, ".</p>\n");
        memobs__html_printf(o, "<p>fit over %llu samples, %.1f s: RSS %.2f (R&sup2; %.2f), anonymous %.2f "
                            "(R&sup2; %.2f), heap %.2f (R&sup2; %.2f), tracked host+pinned %.2f (R&sup2; %.2f) MB/min"
                            "%s.</p>\n", (unsigned long long)lk.samples, lk.window_s, lk.rss_mb_min, lk.rss_r2,
                            lk.anon_mb_min, lk.anon_r2, lk.heap_mb_min, lk.heap_r2, lk.tracked_mb_min, lk.tracked_r2,
                            lk.anon_known && lk.heap_known ? ""
                                                           : " (a series the kernel or libc did not give reads 0)");
    } else {
        memobs__html_absent(o, "the leak detector has no samples", "the sampler (MEMOBS_SAMPLE_MS=N)");
    }
    memobs__out_str(o, "</section>\n");
}

/* The traces holding the most live bytes, with their stacks. */
static void memobs__html_traces(memobs__out_t *o) {
    size_t n = 0;
    memobs__alloc_t *a = memobs__report_snapshot(-1, &n);
    uint32_t ntr = __atomic_load_n(&MEMOBS__TRK.ntraces.v, __ATOMIC_ACQUIRE), g, ng = 0;
    memobs__group_t *grp = NULL;
    char *buf = NULL, b[32], age[32];
    uint64_t now = memobs__coarse_ns(), rest = 0, restn = 0;
    memobs__out_str(o, "<section id=\"traces\"><h2>Top traces by live bytes</h2>\n");
    if (a && n) {
        grp = (memobs__group_t *)MEMOBS_MALLOC((ntr + 1) * sizeof *grp);
        buf = (char *)MEMOBS_MALLOC(MEMOBS__HTML_STACK);
    }
    if (!grp || !buf) {
        if (a && n) memobs__out_str(o, "<p>(no memory for the per-trace table)</p>\n");
        else memobs__html_absent(o, "no tracked allocation is live",
                                 "MEMOBS_TRACK_ALLOC_N/_S with a tag or MEMOBS_CALLSTACK=N (C stacks), "
                                 "memobs.track_python_stacks() (Python stacks)");
    } else {
        ng = memobs__group_by_trace(grp, ntr, a, n, now);
        memobs__html_printf(o, "<p>%llu live allocation%s in %u trace%s; %s shown.</p>\n<table class=\"tr\">"
                            "<tr><th>trace</th><th>live bytes</th><th>count</th><th>kinds</th><th>oldest</th>"
                            "<th>tag and stack</th></tr>\n", (unsigned long long)n, memobs__s(n), (unsigned)ng,
                            memobs__s(ng),
                            ng <= MEMOBS__HTML_TRACES ? "all"
                                                      : "the " MEMOBS__HTML_STR(MEMOBS__HTML_TRACES) " largest");
        for (g = 0; g < ng; g++) {
            unsigned k, first = 1;
            int len;
            if (g >= MEMOBS__HTML_TRACES) {
                rest += grp[g].bytes;
                restn += grp[g].count;
                continue;
            }
            if (grp[g].trace == MEMOBS_NO_TRACE) memobs__out_str(o, "<tr data-trace=\"none\"><td>-</td>");
            else memobs__html_printf(o, "<tr data-trace=\"%u\"><td>#%u</td>", grp[g].trace, grp[g].trace);
            memobs__html_printf(o, "<td class=\"n\" data-v=\"%llu\">%s</td><td class=\"n\">%llu</td><td>",
                                (unsigned long long)grp[g].bytes, memobs_format_bytes(b, sizeof b, grp[g].bytes),
                                (unsigned long long)grp[g].count);
            for (k = 0; k < MEMOBS_MEM_KINDS; k++)
                if (grp[g].kinds & (1u << k))
                    memobs__html_printf(o, "%s%s", first ? "" : ",", memobs__kind_name[k]), first = 0;
            memobs__html_printf(o, "</td><td>%s</td><td>", memobs_format_ns(age, sizeof age, grp[g].oldest_ns));
            len = grp[g].trace == MEMOBS_NO_TRACE ? -1 : memobs_format_trace(buf, MEMOBS__HTML_STACK, grp[g].trace);
            if (len < 0) {
                memobs__out_str(o, "(no tag, no stack)");
            } else {
                char *nl = strchr(buf, '\n');
                if (nl) *nl = 0;
                memobs__out_str(o, "<b class=\"tag\">");
                memobs__html_esc(o, buf[0] ? buf : "(no tag)");
                memobs__out_str(o, "</b>");
                if (nl && nl[1]) {
                    memobs__out_str(o, g < 3 ? "<details open><summary>stack</summary><pre>"
                                             : "<details><summary>stack</summary><pre>");
                    memobs__html_esc(o, nl + 1);
                    if ((size_t)len >= MEMOBS__HTML_STACK - 1) memobs__out_str(o, "\n... (cut)");
                    memobs__out_str(o, "</pre></details>");
                }
            }
            memobs__out_str(o, "</td></tr>\n");
        }
        if (ng > MEMOBS__HTML_TRACES)
            memobs__html_printf(o, "<tr><td colspan=\"6\">... %u more traces: %llu allocations, %s</td></tr>\n",
                                (unsigned)(ng - MEMOBS__HTML_TRACES), (unsigned long long)restn,
                                memobs_format_bytes(b, sizeof b, rest));
        memobs__out_str(o, "</table>\n");
    }
    if (grp) MEMOBS_FREE(grp);
    if (buf) MEMOBS_FREE(buf);
    if (a) MEMOBS_FREE(a);
    memobs__out_str(o, "</section>\n");
}

static void memobs__html_counters(memobs__out_t *o, const memobs_summary_t *s) {
    const memobs_track_problems_t *t = &s->track;
    struct {
        const char *key;
        uint64_t v;
    } pr[24];
    unsigned c, np = 0, bad = 0;
    memobs__out_str(o, "<section id=\"counters\"><h2>User counters</h2>\n");
    if (!s->ncounters) {
        memobs__html_absent(o, "no user counter", "MEMOBS_COUNTER_ADD or memobs_counter_register");
    } else {
        memobs__out_str(o, "<table><tr><th>counter</th><th>value</th><th>help</th></tr>\n");
        for (c = 0; c < s->ncounters; c++) {
            memobs__out_str(o, "<tr><th>");
            memobs__html_esc(o, s->counters[c].name);
            memobs__out_str(o, "</th><td class=\"n\" data-counter=\"");
            memobs__html_esc(o, s->counters[c].name);
            memobs__html_printf(o, "\" data-v=\"%llu\">%llu</td><td>", (unsigned long long)s->counters[c].value,
                                (unsigned long long)s->counters[c].value);
            memobs__html_esc(o, s->counters[c].help);
            memobs__out_str(o, "</td></tr>\n");
        }
        memobs__out_str(o, "</table>\n");
    }
#define MEMOBS__HTML_PR(k, val) (pr[np].key = (k), pr[np].v = (val), bad += (val) != 0, np++)
    MEMOBS__HTML_PR("problems.ttft_unmatched", s->ttft_unmatched);
    MEMOBS__HTML_PR("problems.tpot_unarmed", s->tpot_unarmed);
    MEMOBS__HTML_PR("problems.bad_records", s->bad_records);
    MEMOBS__HTML_PR("problems.untracked_threads", s->untracked_threads);
    MEMOBS__HTML_PR("problems.region_unmatched_ends", s->region_unmatched_ends);
    MEMOBS__HTML_PR("problems.region_too_deep", s->region_too_deep);
    MEMOBS__HTML_PR("problems.region_names_dropped", s->region_names_dropped);
    MEMOBS__HTML_PR("problems.signal_dropped", s->signal_dropped);
    MEMOBS__HTML_PR("requests.dropped", s->requests_dropped);
    MEMOBS__HTML_PR("requests.unknown", s->requests_unknown);
    MEMOBS__HTML_PR("requests.duplicate", s->requests_duplicate);
    MEMOBS__HTML_PR("attributed.bind_misuse", s->attributed.bind_misuse);
    MEMOBS__HTML_PR("attributed.tenant_misuse", s->attributed.tenant_misuse);
    MEMOBS__HTML_PR("tracker.frees_unknown", t->frees_unknown);
    MEMOBS__HTML_PR("tracker.frees_double", t->frees_double);
    MEMOBS__HTML_PR("tracker.allocs_null", t->allocs_null);
    MEMOBS__HTML_PR("tracker.allocs_duplicate", t->allocs_duplicate);
    MEMOBS__HTML_PR("tracker.allocs_bad_kind", t->allocs_bad_kind);
    MEMOBS__HTML_PR("tracker.untracked", t->untracked);
    MEMOBS__HTML_PR("tracker.untracked_bytes", t->untracked_bytes);
    MEMOBS__HTML_PR("tracker.traces_dropped", t->traces_dropped);
#undef MEMOBS__HTML_PR
    memobs__html_printf(o, "<h2 id=\"problems\">Problems</h2>\n<p class=\"verdict %s\">%s</p>\n<table>",
                        bad ? "bad" : "good", bad ? "misuse or overflow was counted (non-zero rows in red)"
                                                 : "none counted");
    for (c = 0; c < np; c++) {
        memobs__html_printf(o, "<tr%s><th>%s</th>", pr[c].v ? " class=\"bad\"" : "", pr[c].key);
        memobs__html_count_cell(o, pr[c].key, pr[c].v);
        memobs__out_str(o, "</tr>");
    }
    memobs__out_str(o, "</table>\n</section>\n");
}

/* Collectives per communicator, kind and phase, and peers shaded by their
   bytes; at most MEMOBS_REPORT_ROWS rows each (the rest counted). Only
   when the summary shows collectives. */
static void memobs__html_coll(memobs__out_t *o) {
    static const char *const ph_name[3] = {"unphased", "prefill", "decode"};
    uint32_t nc, nk, np, c, k, ph, d, rows = 0, left = 0;
    uint32_t limit = memobs__g.trk.rows > 0 ? (uint32_t)memobs__g.trk.rows : UINT32_MAX;
    uint64_t most = 0;
    memobs_coll_info_t info;
    char b[3][32];
    if (!memobs__coll_shown()) return;
    nc = memobs__coll_n(&memobs__coll.ncomms, MEMOBS_MAX_COMMS);
    nk = memobs__coll_n(&memobs__coll.nkinds, MEMOBS_MAX_COLL_KINDS);
    np = memobs__coll_n(&memobs__coll.npeers, MEMOBS_MAX_PEERS);
    memobs__coll_info_read(&info);
    memobs__out_str(o, "<section id=\"collectives\"><h2>Collectives</h2>\n<p>source ");
    memobs__html_esc(o, info.source[0] ? info.source : "-");
    memobs__out_str(o, ", instance ");
    memobs__html_esc(o, info.instance[0] ? info.instance : "-");
    memobs__out_str(o, ", level ");
    memobs__html_esc(o, info.level[0] ? info.level : "-");
    memobs__html_printf(o, ", profiler API v%d; %llu events dropped; captured: %llu calls, %llu replays</p>\n",
                        info.api_version, (unsigned long long)info.notes[MEMOBS_COLL_NOTE_EVENTS_DROPPED],
                        (unsigned long long)info.notes[MEMOBS_COLL_NOTE_CAPTURED_CALLS],
                        (unsigned long long)info.notes[MEMOBS_COLL_NOTE_CAPTURED_REPLAYS]);
    memobs__out_str(o, "<table id=\"coll-table\"><tr><th>communicator</th><th>rank</th><th>kind</th><th>phase</th>"
                       "<th>ops</th><th>bytes</th><th>time</th><th>algbw GB/s</th><th>busbw GB/s</th></tr>\n");
    for (c = 0; c < nc; c++) {
        const memobs__comm_def_t *cd = &memobs__coll.comm[c];
        for (k = 0; k < nk; k++) {
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                memobs_coll_stats_t x;
                uint64_t num, den;
                if (!memobs__coll_row_read(c, k, ph, &x)) continue;
                if (rows >= limit) {
                    left++;
                    continue;
                }
                rows++;
                memobs__out_str(o, "<tr data-coll=\"");
                memobs__html_esc(o, cd->name);
                memobs__out_str(o, "/");
                memobs__html_esc(o, x.kind_name);
                memobs__html_printf(o, "/%s\"><th>", ph_name[ph]);
                memobs__html_esc(o, cd->name);
                memobs__html_printf(o, "</th><td>%d/%d</td><td>", (int)cd->rank, (int)cd->nranks);
                memobs__html_esc(o, x.kind_name);
                memobs__html_printf(o, "</td><td>%s</td>", ph_name[ph]);
                memobs__html_count_cell(o, "coll.ops", x.ops);
                memobs__html_bytes_cell(o, "coll.bytes", x.bytes);
                memobs__html_cell(o, "coll.ns", x.ns, x.timed_ops ? memobs_format_ns(b[0], sizeof b[0], x.ns) : "-");
                memobs__html_cell(o, "coll.algo_bytes", x.algo_bytes,
                                  memobs__gbs(b[1], sizeof b[1], x.algo_bytes, x.ns, 1));
                memobs__html_cell(o, "coll.bus_bytes", x.bus_bytes,
                                  memobs__gbs(b[2], sizeof b[2], x.bus_bytes, x.ns,
                                              memobs__coll_factor((int)k, cd->nranks, &num, &den)));
                memobs__out_str(o, "</tr>\n");
            }
        }
    }
    memobs__out_str(o, "</table>\n");
    if (left) memobs__html_printf(o, "<p>%u more rows (MEMOBS_REPORT_ROWS)</p>\n", (unsigned)left);
    for (c = 0; c < np; c++) {
        memobs_peer_stats_t y;
        if (!memobs__peer_read(c, &y)) continue;
        for (d = 0; d < MEMOBS_PEER_DIRS; d++)
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) most = y.bytes[d][ph] > most ? y.bytes[d][ph] : most;
    }
    rows = left = 0;
    memobs__out_str(o, "<h3>Peers</h3>\n<table id=\"peer-table\"><tr><th>peer</th><th>dir</th><th>phase</th>"
                       "<th>bytes</th><th>ops</th><th>time</th></tr>\n");
    for (c = 0; c < np; c++) {
        memobs_peer_stats_t y;
        if (!memobs__peer_read(c, &y)) continue;
        for (d = 0; d < MEMOBS_PEER_DIRS; d++) {
            for (ph = 0; ph < MEMOBS__NPHASE; ph++) {
                if (!y.ops[d][ph] && !y.bytes[d][ph]) continue;
                if (rows >= limit) {
                    left++;
                    continue;
                }
                rows++;
                memobs__html_printf(o, "<tr style=\"background:rgba(78,121,167,%.2f)\"><th>",
                                    most ? 0.5 * (double)y.bytes[d][ph] / (double)most : 0.0);
                memobs__html_esc(o, y.name);
                memobs__html_printf(o, "</th><td>%s</td><td>%s</td>", d ? "recv" : "send", ph_name[ph]);
                memobs__html_bytes_cell(o, "peer.bytes", y.bytes[d][ph]);
                memobs__html_count_cell(o, "peer.ops", y.ops[d][ph]);
                memobs__html_cell(o, "peer.ns", y.ns[d][ph],
                                  y.ns[d][ph] ? memobs_format_ns(b[0], sizeof b[0], y.ns[d][ph]) : "-");
                memobs__out_str(o, "</tr>\n");
            }
        }
    }
    memobs__out_str(o, "</table>\n");
    if (left) memobs__html_printf(o, "<p>%u more rows (MEMOBS_REPORT_ROWS)</p>\n", (unsigned)left);
    memobs__out_str(o, "</section>\n");
}

static const char memobs__html_css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}h3{font-size:15px}"
    "table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:2px 8px;text-align:left}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".absent{color:#8a6d3b;background:#fcf8e3;padding:6px 10px;border-left:4px solid #f0ad4e}"
    ".chart{display:block;background:#fafafa;border:1px solid #eee;max-width:100%;height:auto}"
    ".grid{stroke:#e3e3e3}.ax{font-size:11px;fill:#555}.q{stroke:#c00;stroke-dasharray:4 3}"
    ".ql{font-size:11px;fill:#c00}"
    ".legend span{margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}"
    ".good{color:#2a7a2a}.bad,tr.bad th{color:#b00}pre{font-size:12px;margin:4px 0;white-space:pre-wrap}"
    "#tip{position:fixed;pointer-events:none;background:#333;color:#fff;padding:2px 6px;font-size:12px;"
    "border-radius:3px;display:none}";

/* Hover: shows an element's <title> at once, next to the pointer (the
   browser's own tooltip, slower, works with scripts off). */
static const char memobs__html_js[] =
    "(function(){var t=document.getElementById('tip');if(!t)return;"
    "document.addEventListener('mousemove',function(e){var n=e.target,s=null;"
    "if(n&&n.childNodes&&n.namespaceURI==='http://www.w3.org/2000/svg'){for(var i=0;i<n.childNodes.length;i++)"
    "if(n.childNodes[i].nodeName==='title'){s=n.childNodes[i].textContent;break;}}"
    "if(s){t.textContent=s;t.style.left=(e.clientX+12)+'px';"
    "t.style.top=(e.clientY+12)+'px';t.style.display='block';}else t.style.display='none';});})();";

int memobs_write_html(FILE *f) {
    memobs_summary_t *s;
    uint64_t *cnt;
    uint32_t busy = memobs__tls.busy;
    memobs__out_t o;
    memobs__tl_ev_t *ev;
    memobs_timeline_stats_t st;
    size_t nev = 0;
    unsigned i;
    if (!f) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_write_html: NULL FILE");
        return MEMOBS_ERR_INVALID;
    }
    memobs_init();
    memobs__tls.busy = 1; /* our own buffers are not the engine's allocations */
    s = (memobs_summary_t *)MEMOBS_MALLOC(sizeof *s);
    cnt = (uint64_t *)MEMOBS_MALLOC(3 * MEMOBS__HIST_NB * sizeof *cnt);
    memobs__tls.busy = busy;
    if (!s) {
        if (cnt) MEMOBS_FREE(cnt);
        return MEMOBS_ERR_NOMEM;
    }
    memobs_get_summary(s);
    pthread_mutex_lock(&memobs__tl.lock);
    ev = memobs__tl_snapshot(&nev);
    memobs__tl_count(&st, NULL, NULL);
    pthread_mutex_unlock(&memobs__tl.lock);
    if (!ev) nev = 0; /* none, or no memory for the copy: drawn as none */
    if (cnt) {
        pthread_mutex_lock(&memobs__g.lock);
        for (i = 0; i < MEMOBS__HIST_NB; i++) {
            cnt[i] = MEMOBS__LOAD(&memobs__g.ttft.b[i].v) - memobs__g.ttft.base_b[i];
            cnt[MEMOBS__HIST_NB + i] = MEMOBS__LOAD(&memobs__g.tpot.b[i].v) - memobs__g.tpot.base_b[i];
            cnt[2 * MEMOBS__HIST_NB + i] = MEMOBS__LOAD(&memobs__g.e2e.b[i].v) - memobs__g.e2e.base_b[i];
        }
        pthread_mutex_unlock(&memobs__g.lock);
    }
    memobs__out_file(&o, f, NULL, 0);
    memobs__tls.busy = 1;
    memobs__out_str(&o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                        "<meta name=\"generator\" content=\"memobs " MEMOBS_VERSION "\">\n<title>memobs report: ");
    memobs__html_esc(&o, s->identity.host);
    memobs__html_printf(&o, " rank %d</title>\n<style>%s</style></head>\n<body>\n<div id=\"tip\"></div>\n"
                        "<h1>memobs report</h1>\n", (int)s->identity.rank, memobs__html_css);
    memobs__html_identity(&o, s);
    memobs__html_transfers(&o, s);
    memobs__html_xfer_time(&o, s, ev, nev, &st);
    memobs__html_bandwidth(&o, s);
    memobs__html_sizes(&o, s);
    memobs__html_latency(&o, s, cnt);
    memobs__html_requests(&o, s);
    memobs__html_memory(&o, s, ev, nev);
    memobs__html_traces(&o);
    memobs__html_coll(&o);
    memobs__html_counters(&o, s);
    memobs__html_printf(&o, "<script>%s</script>\n</body></html>\n", memobs__html_js);
    if (cnt) MEMOBS_FREE(cnt);
    if (ev) MEMOBS_FREE(ev);
    MEMOBS_FREE(s);
    memobs__tls.busy = busy;
    if (fflush(f) != 0 || ferror(f)) return MEMOBS_ERR_IO;
    return MEMOBS_OK;
}

static int memobs__write_html_f(FILE *f, int unused) {
    (void)unused;
    return memobs_write_html(f);
}

int memobs_write_html_file(const char *path) { return memobs__output_file(MEMOBS__OUT_HTML, path, 0); }

/* MEMOBS_HTML; runs inside memobs__init_once. */
static void memobs__html_env(void) {
    (void)memobs__output_env(MEMOBS__OUT_HTML);
}

#else /* MEMOBS_NO_HTML: the names the rest calls, doing nothing */

static __attribute__((unused)) int memobs__write_html_f(FILE *f, int unused) {
    (void)f;
    (void)unused;
    return memobs__cut_call("memobs_write_html", "NO_HTML");
}

int memobs_write_html(FILE *f) { return memobs__write_html_f(f, 0); }

int memobs_write_html_file(const char *path) {
    (void)path;
    return memobs__cut_call("memobs_write_html_file", "NO_HTML");
}

static void memobs__html_env(void) { memobs__cut_env(memobs__out_info[MEMOBS__OUT_HTML].var, "NO_HTML"); }
#endif /* MEMOBS_NO_HTML */

/* ======================================================================== */
/* Private: crash writer                                            >>crash */
/* ======================================================================== */

/* At a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) the summary and the
   Prometheus file are written here, from the crashed thread's signal
   handler, by async-signal-safe code alone: no lock is taken or waited
   for, nothing is allocated, nothing goes through stdio. The figures are
   read by memobs_get_summary's own code (memobs__summary_read) without its
   locks (the shard list only grows and each shard is published whole; a
   record another thread makes meanwhile may be half in, never a crash);
   the tracker's current bytes are exact when its locks are free (taken
   with one try each, never waited for) and a lock-free sum otherwise. The
   text comes from the normal writers' generators (memobs__summary_gen,
   memobs__prom_write), which format with memobs__out_printf into a sink:
   here one static buffer, written out with write() as it fills; a path
   is taken as the exit writers take it (memobs__whole_open: a device,
   FIFO or descriptor's name written in place; else a file of memobs' own
   renamed over PATH when whole, unlinked on failure). A pipe or terminal that takes nothing for
   MEMOBS__CRASH_WAIT_MS, or has no reader, costs that output only (poll()
   before each write: no SIGPIPE, no hang).
   Left out: the summary's "host_memory" (the sampler's ring and the leak
   fit are read under locks) and a companion header's settling of what it
   measures (memobs_cuda.h's timed copies stay as last seen).
   Static storage: 73 KB (the 64 KB buffer, the 5 KB snapshot, three paths);
   stack: about 3.5 KB beyond the kernel's signal frame (x86-64, -O2,
   measured by tests/serving/crash/crash.c on an alternate stack). */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#define MEMOBS__CRASH_BUF 65536            /* output buffer, written out as it fills */
#define MEMOBS__CRASH_CHUNK 4096           /* at most this per write(): a pipe with room takes it whole */
#define MEMOBS__CRASH_WAIT_MS 2000         /* the most one output may wait on its destination */
#define MEMOBS__CRASH_HOLD_NS 2000000000u  /* periodic Prometheus writes held off after a crash write */
/* The most a crash write takes: two outputs and the wait for a periodic
   Prometheus write, each bounded by MEMOBS__CRASH_WAIT_MS, and a second
   for the figures; a second crashing thread waits that long for it. */
#define MEMOBS__CRASH_ALL_NS ((3u * (uint64_t)MEMOBS__CRASH_WAIT_MS + 1000u) * 1000000u)

static struct {
    memobs__u32_t busy;       /* a crash write is under way */
    pthread_t writer;         /* its thread */
    memobs__prom_snap_t snap; /* the figures, read once for both outputs */
    char path[1024];
    memobs__whole_t w;        /* the destination (memobs__whole_open, as the exit writers) */
    memobs__out_t out;
    char buf[MEMOBS__CRASH_BUF];
} memobs__crash;

/* The crash sink's drain: s[0..k) to o->fd, waiting MEMOBS__CRASH_WAIT_MS at
   most in all. */
static void memobs__crash_drain(memobs__out_t *o, const char *s, size_t k) {
    size_t off = 0;
    while (off < k && !o->err) {
        struct pollfd pf;
        uint64_t now = memobs_now_ns();
        size_t c = k - off < MEMOBS__CRASH_CHUNK ? k - off : MEMOBS__CRASH_CHUNK;
        ssize_t w;
        int r;
        if (now >= o->deadline_ns) {
            o->err = 1;
            break;
        }
        pf.fd = o->fd;
        pf.events = POLLOUT;
        pf.revents = 0;
        r = poll(&pf, 1, (int)((o->deadline_ns - now) / 1000000u) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || (pf.revents & (POLLERR | POLLHUP | POLLNVAL)) || !(pf.revents & POLLOUT)) {
            o->err = 1; /* full for too long, no reader (no SIGPIPE then), closed */
            break;
        }
        w = write(o->fd, s + off, c);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (w <= 0) {
            o->err = 1;
            break;
        }
        off += (size_t)w;
    }
}

/* ---- the figures, without a lock ---- */

/* The escrow's locks, taken with one try and released here without
   memobs__spin_lock's bookkeeping: the crash path touches no thread-local
   state (a thread that never recorded, a dlopen()ed build whose TLS goes
   through __tls_get_addr, which may allocate; a process whose own handler
   recovers keeps its count of memobs calls in progress right). */
static int memobs__crash_trylock(memobs__u32_t *l) { return __atomic_exchange_n(&l->v, 1u, __ATOMIC_ACQUIRE) == 0; }
static void memobs__crash_unlock(memobs__u32_t *l) { __atomic_store_n(&l->v, 0u, __ATOMIC_RELEASE); }

/* Unlocks the stripes below n (the locks of the escrow records). */
static void memobs__crash_unlock_to(unsigned n) {
    unsigned i;
    for (i = 0; i < n && i < MEMOBS__TRK_STRIPES; i++) memobs__crash_unlock(&MEMOBS__TRK.stripe[i].lock);
}

/* g + every shard's d, per kind (see memobs__esc_t). Without the locks
   it races with a thread's change under a stripe lock, on purpose (a
   change half in, never a crash): ThreadSanitizer need not see it. */
#if defined(__has_attribute) && !defined(__CUDACC__)
#if __has_attribute(no_sanitize)
#define MEMOBS__NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef MEMOBS__NO_TSAN
#define MEMOBS__NO_TSAN
#endif
static MEMOBS__NO_TSAN void memobs__crash_esc_sum(memobs__shard_t *first, int64_t *sum) {
    memobs__shard_t *s;
    unsigned k, n;
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) sum[k] = __atomic_load_n(&MEMOBS__ESC.g[k], __ATOMIC_RELAXED);
    for (s = first, n = 0; s && n < MEMOBS__MAX_SHARDS; s = memobs__shard_next(s), n++) {
        if (s->shared) continue;
        for (k = 0; k < MEMOBS_MEM_KINDS; k++) sum[k] += __atomic_load_n(&MEMOBS__ESC_OF(s)->d[k], __ATOMIC_RELAXED);
    }
}

/* Tracked bytes per kind now. Exact when the escrow's locks are all
   free: each is taken with one try (never waited for: the crashed thread
   may hold one) and the sum read under them; else the sum as it stands. */
static void memobs__crash_current(uint64_t *cur) {
    memobs__esc_t *E = &MEMOBS__ESC;
    memobs__shard_t *first = memobs__shard_first();
    int64_t sum[MEMOBS_MEM_KINDS];
    int locked = memobs__crash_trylock(&E->lock);
    unsigned k, i;
    if (locked) {
        for (i = 0; i < MEMOBS__TRK_STRIPES; i++) {
            if (memobs__crash_trylock(&MEMOBS__TRK.stripe[i].lock)) continue;
            memobs__crash_unlock_to(i);
            memobs__crash_unlock(&E->lock);
            locked = 0;
            break;
        }
    }
    memobs__crash_esc_sum(first, sum);
    if (locked) {
        memobs__crash_unlock_to(MEMOBS__TRK_STRIPES);
        memobs__crash_unlock(&E->lock);
    }
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) cur[k] = sum[k] > 0 ? (uint64_t)sum[k] : 0u;
}

static const char *memobs__crash_signame(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
#ifdef SIGBUS
    case SIGBUS: return "SIGBUS";
#endif
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "";
    }
}

/* memobs__figs_get and memobs__prom_gen's figures, without a lock: the
   regions are read as they are written (memobs__region_read). */
static void memobs__crash_gather(memobs__prom_snap_t *p, int sig) {
    uint64_t cur[MEMOBS_MEM_KINDS];
    uint32_t i;
    memobs__crash_current(cur);
    memobs__summary_read(&p->f.s, cur);
    for (i = 0; i < MEMOBS__REQ_STRIPES; i++)
        p->f.s.requests_in_flight += __atomic_load_n(&memobs__g.req[i].n, __ATOMIC_RELAXED);
    memobs__hist_cumulative(&memobs__g.ttft, memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N, &p->ttft);
    memobs__hist_cumulative(&memobs__g.tpot, memobs__prom_itl_le, MEMOBS__PROM_ITL_N, &p->tpot);
    memobs__hist_cumulative(&memobs__g.e2e, memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N, &p->e2e);
    p->f.regions = NULL;
    p->f.top = NULL; /* no top requests: they are copied under a lock */
    p->f.ntop[0] = p->f.ntop[1] = 0;
    p->f.nregions = memobs__regions_n();
    p->f.sig = sig;
    p->f.signame = memobs__crash_signame(sig);
    p->f.host[0] = 0;
}

/* ---- destinations ---- */

/* An output's destination as the outputs resolved it when it was
   configured (memobs__g.out; which: a row of the crash column,
   MEMOBS__OUT_SUMMARY or MEMOBS__OUT_PROM): 2 or 1 for stderr and stdout; 0 with the path in
   buf; -1 for none (or too long). A fork() child's %p path not resolved
   for it yet is expanded here from the spec. */
static int memobs__crash_path(unsigned which, char *buf, size_t len) {
    const memobs__dest_t *d = &memobs__g.out[which];
    const char *in = d->spec;
    memobs__out_t o;
    if (!MEMOBS__LOAD(&d->on.v)) return -1;
    if (d->stream) return (int)d->stream;
    memobs__out_string(&o, buf, len);
    if (d->path_pid == (int64_t)getpid()) {
        memobs__out_str(&o, d->path);
        memobs__out_end(&o);
        return o.err || !d->path[0] ? -1 : 0;
    }
    for (; *in; in++) {
        if (in[0] == '%' && in[1] == 'r') memobs__out_printf(&o, "%d", (int)__atomic_load_n(&memobs__g.identity.rank,
                                                                                             __ATOMIC_RELAXED)), in++;
        else if (in[0] == '%' && in[1] == 'p') memobs__out_printf(&o, "%lld", (long long)getpid()), in++;
        else if (in[0] == '%' && in[1] == '%') memobs__out_write(&o, "%", 1), in++;
        else memobs__out_write(&o, in, 1);
    }
    memobs__out_end(&o);
    return o.err ? -1 : 0;
}

/* The outputs' fork rule (memobs__dest_ours). */
static int memobs__crash_ours(unsigned which) {
    return memobs__dest_ours(&memobs__g.out[which]);
}

/* The output's text, by the normal writers' generators. */
static void memobs__crash_gen(unsigned which, memobs__out_t *o) {
    if (which == MEMOBS__OUT_SUMMARY) memobs__summary_gen(o, &memobs__crash.snap.f, (int)memobs__g.format);
    else memobs__prom_write(o, &memobs__crash.snap);
    memobs__out_end(o);
}

/* The sink for one output into fd, empty. */
static void memobs__crash_sink(memobs__out_t *o, int fd) {
    memset(o, 0, sizeof *o);
    o->buf = memobs__crash.buf;
    o->cap = sizeof memobs__crash.buf;
    o->drain = memobs__crash_drain;
    o->deadline_ns = memobs_now_ns() + (uint64_t)MEMOBS__CRASH_WAIT_MS * 1000000u;
    o->fd = fd;
}

/* One output: to its stream; else where the exit writers would put it
   (memobs__whole_open: a descriptor's name, a device, a FIFO, a link to
   one written in place, appended; else a file of memobs' own, renamed
   over PATH when whole, unlinked on failure). No fdatasync here: a crash
   write stays bounded. */
static void memobs__crash_emit(unsigned which) {
    memobs__out_t *o = &memobs__crash.out;
    memobs__whole_t *w = &memobs__crash.w;
    int fd = memobs__crash_path(which, memobs__crash.path, sizeof memobs__crash.path), ok, tries;
    if (fd < 0 || !memobs__crash_ours(which)) return;
    if (fd > 0) {
        memobs__crash_sink(o, fd);
        memobs__crash_gen(which, o);
        return;
    }
    for (tries = 0; tries < 2; tries++) {
        if (memobs__whole_open(w, memobs__crash.path, tries > 0) != 0) return; /* a FIFO with no reader too */
        memobs__crash_sink(o, w->fd);
        memobs__crash_gen(which, o);
        if (w->how == MEMOBS__WH_FD) return;
        if (w->how == MEMOBS__WH_INPLACE) {
            close(w->fd);
            return;
        }
        ok = !o->err;
        if (w->how != MEMOBS__WH_TMPFILE && close(w->fd) != 0) ok = 0;
        if (!ok) memobs__whole_abort(w);
        else if (memobs__whole_commit(w) != 0) ok = 0;
        if (w->how == MEMOBS__WH_TMPFILE) close(w->fd);
        if (!w->unlinkable) return;
    }
}

/* Some output of the crash column (MEMOBS__OUTPUT_TABLE) is configured.
   Async-signal-safe. */
static int memobs__crash_outs(void) {
    unsigned i;
    for (i = 0; i < MEMOBS__OUTS; i++)
        if (memobs__out_info[i].crash && MEMOBS__LOAD(&memobs__g.out[i].on.v)) return 1;
    return 0;
}

/* Called from a crash signal's handler (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
   SIGABRT) before the crash proceeds: async-signal-safe code only. Writes
   the summary (MEMOBS_SUMMARY, in MEMOBS_FORMAT) and the Prometheus file
   (MEMOBS_PROM_FILE) unless memobs_set_exit_outputs(0); errno is kept.
   Bounded: each output gives up after MEMOBS__CRASH_WAIT_MS on a
   destination that takes nothing, and a periodic Prometheus write under
   way is waited for as long at most. A second thread that crashes
   meanwhile waits for the first one's write (so the process does not end
   in the middle of it), MEMOBS__CRASH_ALL_NS at most; a crash inside
   the writer, on its own thread, proceeds at once. */
static __attribute__((unused)) void memobs__crash_write(int sig) {
    int saved = errno;
    unsigned i;
    pthread_t me = pthread_self(), w;
    if (__atomic_exchange_n(&memobs__crash.busy.v, 1u, __ATOMIC_ACQUIRE)) {
        uint64_t end = memobs_now_ns() + MEMOBS__CRASH_ALL_NS;
        __atomic_load(&memobs__crash.writer, &w, __ATOMIC_RELAXED);
        if (!pthread_equal(w, me))
            while (__atomic_load_n(&memobs__crash.busy.v, __ATOMIC_ACQUIRE) && memobs_now_ns() < end) poll(NULL, 0, 1);
        errno = saved;
        return;
    }
    __atomic_store(&memobs__crash.writer, &me, __ATOMIC_RELAXED);
    if (!MEMOBS__LOAD(&memobs__g.exit_off.v) && memobs__crash_outs()) {
        /* hold the periodic Prometheus writes off (see memobs__prom_tick) */
        __atomic_store_n(&memobs__g.crash_until.v, UINT64_MAX, __ATOMIC_SEQ_CST);
        memobs__crash_gather(&memobs__crash.snap, sig);
        for (i = 0; i < MEMOBS__OUTS; i++) {
            if (!memobs__out_info[i].crash || !MEMOBS__LOAD(&memobs__g.out[i].on.v)) continue;
            if (i == MEMOBS__OUT_PROM) {
                uint64_t end = memobs_now_ns() + (uint64_t)MEMOBS__CRASH_WAIT_MS * 1000000u;
                while (__atomic_load_n(&memobs__g.prom_busy.v, __ATOMIC_SEQ_CST) && memobs_now_ns() < end) {
                    __atomic_load(&memobs__g.prom_thread, &w, __ATOMIC_RELAXED);
                    if (pthread_equal(w, me)) break; /* the crash is in that write */
                    poll(NULL, 0, 1);
                }
            }
            memobs__crash_emit(i);
        }
        /* a process that lives on (its own handler returned) writes again later */
        __atomic_store_n(&memobs__g.crash_until.v, memobs_now_ns() + MEMOBS__CRASH_HOLD_NS, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&memobs__crash.busy.v, 0u, __ATOMIC_RELEASE);
    errno = saved;
}

/* ======================================================================== */
/* Private: stops and signals                                     >>signals */
/* ======================================================================== */

/* With an exit output configured and MEMOBS_SIGNALS on (the default),
   memobs puts its handlers in front of the stops (SIGTERM, SIGINT, SIGHUP)
   and the crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) at start-up
   (the end of memobs__init_once). SIGQUIT is left alone: its core dump
   shows where the program was, which a write before it would hide.

   A stop's handler makes async-signal-safe calls only. It posts a
   semaphore that wakes memobs' writer thread (which blocks every
   asynchronous signal), then, by what the disposition was before memobs:
     - SIG_DFL: returns. The writer writes every exit output, then, still
       holding the flush lock (no write starts after it), restores SIG_DFL
       and raises the signal: the process ends by it as it would have
       (exit status). A second stop within MEMOBS__SIG_PATIENCE_NS of the
       first (a launcher forwarding the signal) is absorbed; a later one,
       or a third, is a person's and ends the process at once by its
       default action (memobs__sig_stop_dfl); exit() meanwhile ends it by
       the first stop's signal once the outputs are written
       (memobs__sig_exit). With several instances of memobs in the
       process, the writer first waits for the others' writes (the
       marks, below).
     - a handler (the program's, CPython's): calls it at once with the
       same arguments. Ours was installed with its mask and its SA_RESTART,
       SA_ONSTACK, SA_NODEFER and SA_RESETHAND, so it runs as it would
       have. The writer writes the outputs meanwhile (a snapshot: the
       program goes on or ends as it decides).
     - SIG_IGN: memobs leaves the signal alone (nohup).
   In a process that holds CPython, SIGINT is left to Python: CPython
   installs its handler (KeyboardInterrupt) only over SIG_DFL, so ours
   installed first (the LD_PRELOAD library, a program that embeds Python)
   would take Ctrl-C's KeyboardInterrupt away; the Python package's exit
   hook writes the outputs at an exit by an uncaught KeyboardInterrupt.
   SIGTERM and SIGHUP go in only once Py_IsInitialized() (CPython reads
   every disposition when it starts, and signal.getsignal says None for
   one that is neither SIG_DFL nor SIG_IGN): deferred until then
   (memobs__sig_late), they are answered from CPython's table as SIG_DFL.
   The Python package puts a Python handler of its own there (_memobs.c's
   pymod_stops).
   The interrupted thread runs on, so it releases any lock the writer
   needs. One write answers a stop: a write that began after the signal
   came (memobs__g.flushes counts the writes begun; memobs_flush and exit
   count too), so a stop right before exit() or the Python package's exit
   hook is not written twice, nor cut short by the exit.

   A crash's handler calls memobs__crash_write once, puts back the
   disposition memobs replaced and lets the crash go on: a fault runs its
   instruction again (and faults again, into the previous handler, a
   sanitizer's say, or the default action); a sent signal (si_code <= 0:
   kill, raise, abort) is sent again. While it writes, every crash signal
   is blocked in its thread: a fault inside the crash writer is one the
   kernel cannot deliver, so it ends the process at once by its default
   action (no recursion). Another thread that crashes meanwhile waits for
   the writer (MEMOBS__CRASH_ALL_NS at most: as long as it can take)
   before it goes on. An asynchronous SIGBUS (BUS_MCEERR_AO: the kernel's
   early notice of a memory failure elsewhere) is no fault: it goes to
   what ours replaced, untouched. The crash path touches no thread-local
   state (memobs__crash_unlock).
   Handlers run on the thread's alternate signal stack where it has one
   (SA_ONSTACK). The thread that starts memobs (the main thread with the
   constructor) gets one, a static 64 KB, if it has none, and every other
   thread one of its own at its first record (memobs__sig_thread_stack,
   given back at its exit), so that a stack overflow is written too.

   Handlers installed after memobs' replace them, as they replace any;
   memobs_set_signals(0) puts back what ours replaced where ours are still
   there. fork(): the child starts its own writer in pthread_atfork's child
   handler; until then a getpid() check makes the handlers act as if
   memobs were not there. The semaphore is private memory: the parent's is
   never posted by the child. Under ThreadSanitizer, which stops a child of
   a multi-threaded process that starts a thread and does not run that
   child's signal handlers either, the child puts back what ours replaced
   (its stops act as without memobs).

   Linux on x86-64 and aarch64 (elsewhere memobs_set_signals returns 0 and
   nothing is installed). Strict C modes hide <signal.h>'s POSIX part, so
   libc's functions are reached under private names, with the layouts glibc
   and musl have there (as clock_gettime is, see memobs_now_ns). */
#if defined(__linux__) && defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(MEMOBS_DISABLE)
#define MEMOBS__HAVE_SIGNALS 1
#endif

#ifdef MEMOBS__HAVE_SIGNALS
#include <semaphore.h>
#include <signal.h> /* raise(); the rest of it through the private names below */

#if defined(__SANITIZE_THREAD__)
#define MEMOBS__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMOBS__TSAN 1
#endif
#endif

enum {
    MEMOBS__SIGHUP = 1, MEMOBS__SIGINT = 2, MEMOBS__SIGQUIT = 3, MEMOBS__SIGILL = 4, MEMOBS__SIGABRT = 6,
    MEMOBS__SIGBUS = 7, MEMOBS__SIGFPE = 8, MEMOBS__SIGSEGV = 11, MEMOBS__SIGTERM = 15
};
#define MEMOBS__SA_SIGINFO 0x4
#define MEMOBS__SA_ONSTACK 0x08000000
#define MEMOBS__SA_RESTART 0x10000000
#define MEMOBS__SA_NODEFER 0x40000000
#define MEMOBS__SA_RESETHAND (-0x7fffffff - 1) /* 0x80000000 */
#define MEMOBS__SIG_UNBLOCK 1 /* MEMOBS__SIG_BLOCK, _SETMASK, memobs__sigset_t and memobs__sigmask: the writers' */
#define MEMOBS__SS_ONSTACK 1
#define MEMOBS__SS_DISABLE 2
#define MEMOBS__SIG_IGN ((void (*)(int))1)

typedef struct {                                         /* struct sigaction */
    union {
        void (*handler)(int);
        void (*action)(int, void *, void *); /* (signal, siginfo_t *, ucontext_t *): SA_SIGINFO */
    } u;
    memobs__sigset_t mask;
    int flags;
    void (*restorer)(void);
} memobs__sa_t;
typedef struct { void *sp; int flags; size_t size; } memobs__stack_t; /* stack_t */
extern int memobs__sigaction(int sig, const memobs__sa_t *sa, memobs__sa_t *old) __asm__("sigaction");
extern int memobs__sigaltstack(const memobs__stack_t *ss, memobs__stack_t *old) __asm__("sigaltstack");
extern int memobs__nanosleep(const struct memobs__timespec *t, struct memobs__timespec *rem) __asm__("nanosleep");
extern int memobs__sem_timedwait(sem_t *s, const struct memobs__timespec *at) __asm__("sem_timedwait");
extern unsigned long memobs__getauxval(unsigned long type) __asm__("getauxval");
#define MEMOBS__AT_RANDOM 25
#define MEMOBS__BUS_MCEERR_AO 5 /* SIGBUS's si_code for the kernel's early notice of a memory failure */
/* Non-NULL in a process that holds CPython (the interpreter, a program
   embedding it, an extension module, the LD_PRELOAD library in python3). */
extern int memobs__py_is_initialized(void) __asm__("Py_IsInitialized") __attribute__((weak));

#define MEMOBS__SIG_STOPS 3 /* memobs__sig_no[0..2]; the crashes follow */
#define MEMOBS__SIG_N 8
#define MEMOBS__SIG_PATIENCE_NS 1000000000ull /* a second stop later than this after the first: a person's */
#define MEMOBS__SIG_MARKS 8                   /* instances of memobs in one process that stop as one */
#define MEMOBS__SIG_OTHERS_NS 10000000000ull  /* the most the last writer waits for the other instances */
#define MEMOBS__SIG_READY_NS 5000000000ull    /* the most memobs (or a fork() child) waits for its writer to run */

static const int memobs__sig_no[MEMOBS__SIG_N] = {MEMOBS__SIGTERM, MEMOBS__SIGINT, MEMOBS__SIGHUP,
                                                  MEMOBS__SIGSEGV, MEMOBS__SIGBUS, MEMOBS__SIGFPE, MEMOBS__SIGILL,
                                                  MEMOBS__SIGABRT};
static pthread_once_t memobs__sig_once = PTHREAD_ONCE_INIT;
static char memobs__sig_stack[65536] __attribute__((aligned(64))); /* the alternate signal stack */
static struct {
    pthread_mutex_t lock;             /* the fields marked "lock"; held across fork() */
    int want;                         /* lock: MEMOBS_SIGNALS, memobs_set_signals */
    int outputs;                      /* lock: an exit output is configured */
    int altstack;                     /* lock: memobs__sig_stack is a thread's */
    memobs__sa_t prev[MEMOBS__SIG_N]; /* lock (read by the handlers): what ours replaced */
    memobs__sa_t dfl;                 /* never written: SIG_DFL, no flags */
    sem_t wake;                       /* posted by a stop's handler */
    sem_t ready;                      /* posted by the writer once it runs */
    memobs__u32_t writer_pid;         /* the process whose writer runs (0: none), set by the writer */
    uint32_t started_pid;             /* lock: the process whose writer was started (it may still be starting) */
    memobs__u32_t fatal;              /* the stop that ends the process once written (0: none) */
    memobs__u64_t first_ns;           /* when that stop came (0: not yet known) */
    memobs__u32_t stops;              /* stops that came since (itself included) */
    memobs__u32_t deferred;           /* stops left for CPython to start first (memobs__sig_late) */
    memobs__u32_t stacks;             /* crash handlers in place: threads get alternate stacks */
    memobs__u32_t marking;            /* this instance's "writing" mark is bound (or being bound) */
    int mark_fd, mark_slot;           /* its socket and slot (-1: none), set by the handler */
    char mark_name[64];               /* lock: "memobs-stop.PID.TOKEN." (the slot follows) */
    int mark_len;                     /* lock: its length; 0 = no marks (no socket support) */
    memobs__u32_t snap;               /* a stop that went on to a handler asks for a write */
    memobs__u32_t seen;               /* memobs__g.flushes when the latest stop came */
    memobs__u32_t crashing;           /* 1: the crash writer runs, 2: it ran */
    int (*skip)(void);                /* a companion's veto on a stop's write (NULL: none) */
} memobs__sig;

static void memobs__sigset_add(memobs__sigset_t *s, int sig) {
    s->w[(unsigned)(sig - 1) / 64u] |= 1ul << ((unsigned)(sig - 1) % 64u);
}

static int memobs__sig_slot(int sig) {
    int i;
    for (i = 0; i < MEMOBS__SIG_N; i++)
        if (memobs__sig_no[i] == sig) return i;
    return -1;
}

/* Async-signal-safe. */
static int memobs__sig_writer_here(void) { return MEMOBS__LOAD(&memobs__sig.writer_pid.v) == (uint32_t)getpid(); }

/* Async-signal-safe: the signal's default action, now (in its handler: on return). */
static void memobs__sig_default(int sig) {
    memobs__sigaction(sig, &memobs__sig.dfl, NULL);
    raise(sig);
}

/* ---- several instances stop as one ----
   Copies of memobs in one process (a program and a MEMOBS_HIDDEN plugin,
   the NCCL profiler's own) share no symbol, so each marks "writing" where
   the others can find it: an abstract unix socket named
   memobs-stop.PID.TOKEN.SLOT (TOKEN: the process's AT_RANDOM bytes, the
   same for every instance of the process and unknown to other processes;
   the first free SLOT of MEMOBS__SIG_MARKS), bound by a stop's handler
   (socket() and bind() are async-signal-safe) before it chains to the
   handler it replaced, closed by its writer once written. The instance
   that ends the process (its previous disposition SIG_DFL) waits, after
   its own write, until no other slot is bound (MEMOBS__SIG_OTHERS_NS at
   most), then raises: the last writer ends the process. */
#if defined(SOCK_CLOEXEC)
static socklen_t memobs__sig_mark_addr(struct sockaddr_un *a, int slot) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, memobs__sig.mark_name, (size_t)memobs__sig.mark_len); /* sun_path[0] = 0: abstract */
    a->sun_path[1 + memobs__sig.mark_len] = (char)('0' + slot);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 2 + (size_t)memobs__sig.mark_len);
}

/* Async-signal-safe: this instance's mark, once. */
static void memobs__sig_mark(void) {
    struct sockaddr_un a;
    int fd, k;
    if (!memobs__sig.mark_len || MEMOBS__XCHG(&memobs__sig.marking.v, 1u)) return;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0) {
        for (k = 0; k < MEMOBS__SIG_MARKS; k++) {
            socklen_t n = memobs__sig_mark_addr(&a, k);
            if (bind(fd, (const struct sockaddr *)(const void *)&a, n) == 0) {
                __atomic_store_n(&memobs__sig.mark_slot, k, __ATOMIC_RELAXED);
                __atomic_store_n(&memobs__sig.mark_fd, fd, __ATOMIC_RELEASE);
                return;
            }
            if (errno != EADDRINUSE) break;
        }
        close(fd);
    }
    MEMOBS__STORE(&memobs__sig.marking.v, 0u);
}

/* The writer, once written: the mark goes (its socket checked first: a
   program that closed every descriptor may have reused the number). */
static void memobs__sig_unmark(void) {
    struct sockaddr_un a, b;
    socklen_t n, m = (socklen_t)sizeof b;
    int fd;
    if (!MEMOBS__LOAD(&memobs__sig.marking.v)) return;
    fd = __atomic_exchange_n(&memobs__sig.mark_fd, -1, __ATOMIC_ACQUIRE);
    if (fd >= 0) {
        n = memobs__sig_mark_addr(&a, __atomic_load_n(&memobs__sig.mark_slot, __ATOMIC_RELAXED));
        if (getsockname(fd, (struct sockaddr *)(void *)&b, &m) == 0 && m == n && !memcmp(&a, &b, (size_t)n)) close(fd);
    }
    MEMOBS__STORE(&memobs__sig.marking.v, 0u);
}

/* The writer that ends the process: until no other instance's mark
   remains, MEMOBS__SIG_OTHERS_NS at most. */
static void memobs__sig_wait_others(void) {
    uint64_t end = memobs_now_ns() + MEMOBS__SIG_OTHERS_NS;
    struct sockaddr_un a;
    int fd, k, busy;
    if (!memobs__sig.mark_len) return;
    do {
        if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) return;
        for (k = 0, busy = 0; k < MEMOBS__SIG_MARKS && !busy; k++) {
            socklen_t n = memobs__sig_mark_addr(&a, k);
            busy = connect(fd, (const struct sockaddr *)(const void *)&a, n) == 0;
        }
        close(fd);
    } while (busy && memobs_now_ns() < end && poll(NULL, 0, 2) >= 0);
}

/* The caller holds memobs__sig.lock: the marks' name for this process. */
static void memobs__sig_mark_init(void) {
    const unsigned char *r = (const unsigned char *)memobs__getauxval(MEMOBS__AT_RANDOM);
    int n = 12, i;
    memobs__sig.mark_len = 0;
    if (!r) return;
    memcpy(memobs__sig.mark_name, "memobs-stop.", 12);
    n += (int)memobs__utoa(memobs__sig.mark_name + n, (uint64_t)getpid());
    memobs__sig.mark_name[n++] = '.';
    for (i = 0; i < 8; i++) {
        memobs__sig.mark_name[n++] = "0123456789abcdef"[r[i] >> 4];
        memobs__sig.mark_name[n++] = "0123456789abcdef"[r[i] & 15];
    }
    memobs__sig.mark_name[n++] = '.';
    memobs__sig.mark_len = n;
}
#else
static void memobs__sig_mark(void) {}
static void memobs__sig_unmark(void) {}
static void memobs__sig_wait_others(void) {}
static void memobs__sig_mark_init(void) {}
#endif

/* A stop whose disposition before memobs was SIG_DFL. The first one is
   written, then ends the process (the writer raises it again). One that
   follows within MEMOBS__SIG_PATIENCE_NS (a launcher forwarding the
   signal the process already got, a process group's and its parent's)
   is absorbed: the first one's write answers it. A later one, or a
   third, is a person's: the process ends at once. */
static void memobs__sig_stop_dfl(int sig) {
    uint32_t none = 0;
    if (!memobs__sig_writer_here()) {
        memobs__sig_default(sig); /* no writer in this process: at once */
        return;
    }
    if (__atomic_compare_exchange_n(&memobs__sig.fatal.v, &none, (uint32_t)sig, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        MEMOBS__STORE(&memobs__sig.stops.v, 1u);
        __atomic_store_n(&memobs__sig.first_ns.v, memobs_now_ns() | 1u, __ATOMIC_RELEASE);
        memobs__sig_mark();
        sem_post(&memobs__sig.wake);
    } else {
        uint64_t first = __atomic_load_n(&memobs__sig.first_ns.v, __ATOMIC_ACQUIRE);
        uint32_t n = MEMOBS__ADD(&memobs__sig.stops.v, 1u) + 1u;
        if (n >= 3 || (first && memobs_now_ns() - first > MEMOBS__SIG_PATIENCE_NS)) memobs__sig_default(sig);
    }
}

static void memobs__sig_on_stop(int sig, void *info, void *uctx) {
    int e = errno, i = memobs__sig_slot(sig);
    const memobs__sa_t *prev;
    if (i < 0) return;
    prev = &memobs__sig.prev[i];
    if (!prev->u.handler) {
        MEMOBS__STORE(&memobs__sig.seen.v, MEMOBS__LOAD(&memobs__g.flushes.v));
        memobs__sig_stop_dfl(sig);
        errno = e;
        return;
    }
    if (memobs__sig_writer_here()) {
        MEMOBS__STORE(&memobs__sig.seen.v, MEMOBS__LOAD(&memobs__g.flushes.v));
        __atomic_store_n(&memobs__sig.snap.v, 1u, __ATOMIC_RELEASE);
        memobs__sig_mark(); /* before the handler it chains to: another instance's, maybe */
        sem_post(&memobs__sig.wake);
    }
    errno = e;
    if (prev->flags & MEMOBS__SA_SIGINFO) prev->u.action(sig, info, uctx);
    else prev->u.handler(sig);
}

static void memobs__sig_on_crash(int sig, void *info, void *uctx) {
    int e = errno, i = memobs__sig_slot(sig);
    const memobs__sa_t *prev;
    if (i < 0) return;
    prev = &memobs__sig.prev[i];
    if (sig == MEMOBS__SIGBUS && info && ((const int *)info)[2] == MEMOBS__BUS_MCEERR_AO) {
        /* the kernel's early notice of a memory failure elsewhere: no fault
           here; to what ours replaced, untouched */
        errno = e;
        if (prev->u.handler == MEMOBS__SIG_IGN) return;
        if (!prev->u.handler) memobs__sig_default(sig);
        else if (prev->flags & MEMOBS__SA_SIGINFO) prev->u.action(sig, info, uctx);
        else prev->u.handler(sig);
        return;
    }
    if (MEMOBS__XCHG(&memobs__sig.crashing.v, 1u) == 0) {
        memobs__crash_write(sig);
        __atomic_store_n(&memobs__sig.crashing.v, 2u, __ATOMIC_RELEASE);
    } else {
        struct memobs__timespec ms = {0, 1000000};
        uint64_t end = memobs_now_ns() + MEMOBS__CRASH_ALL_NS;
        while (__atomic_load_n(&memobs__sig.crashing.v, __ATOMIC_ACQUIRE) == 1 && memobs_now_ns() < end)
            memobs__nanosleep(&ms, NULL);
    }
    memobs__sigaction(sig, prev, NULL);
    if (!info || ((const int *)info)[2] <= 0) raise(sig); /* si_code <= 0: sent; send it again */
    errno = e;
}

/* Not in a handler: ends the process by sig as if memobs had not caught
   it. Returns only if a handler was installed for sig just now. */
static void memobs__sig_end(int sig) {
    memobs__sigset_t set;
    memset(&set, 0, sizeof set);
    memobs__sigset_add(&set, sig);
    memobs__sigaction(sig, &memobs__sig.dfl, NULL);
    memobs__sigmask(MEMOBS__SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

/* The caller holds flush_lock: every exit output, unless a write began
   after the latest stop came (that one answers it). */
static void memobs__sig_write_locked(void) {
    int (*skip)(void) = __atomic_load_n(&memobs__sig.skip, __ATOMIC_ACQUIRE);
    if (MEMOBS__LOAD(&memobs__g.flushes.v) == MEMOBS__LOAD(&memobs__sig.seen.v) && !(skip && skip()))
        memobs__flush_locked();
}

static void *memobs__sig_writer(void *arg) {
    (void)arg;
    MEMOBS__STORE(&memobs__sig.writer_pid.v, (uint32_t)getpid()); /* stops are written from now on */
    sem_post(&memobs__sig.ready);
    for (;;) {
        uint32_t sig;
        if (sem_wait(&memobs__sig.wake) != 0) continue; /* EINTR */
        sig = __atomic_load_n(&memobs__sig.fatal.v, __ATOMIC_ACQUIRE);
        if (!__atomic_exchange_n(&memobs__sig.snap.v, 0u, __ATOMIC_ACQUIRE) && !sig) continue;
        pthread_mutex_lock(&memobs__g.flush_lock);
        memobs__sig_write_locked();
        memobs__sig_unmark();
        if (sig) {
            memobs__sig_wait_others(); /* the last writer ends the process */
            memobs__pmp_gone(1);
            memobs__sig_end((int)sig); /* the flush lock held: no write starts after ours */
            memobs__pmp_gone(0);       /* not ended: a handler of the host's took it */
            MEMOBS__STORE(&memobs__sig.stops.v, 0u);
            MEMOBS__STORE(&memobs__sig.first_ns.v, 0u);
            MEMOBS__STORE(&memobs__sig.fatal.v, 0u);
        }
        pthread_mutex_unlock(&memobs__g.flush_lock);
    }
    return NULL;
}

/* memobs__exit_all, after its write: exit() while a stop that ends the
   process is pending (the program went on meanwhile: a sleep cut short by
   the signal) ends it by that signal, as it would have ended without
   memobs, once the stop's write is done (by the writer, or here). */
static void memobs__sig_exit(void) {
    uint32_t sig = __atomic_load_n(&memobs__sig.fatal.v, __ATOMIC_ACQUIRE);
    if (!sig || !memobs__sig_writer_here()) return;
    pthread_mutex_lock(&memobs__g.flush_lock);
    memobs__sig_write_locked();
    memobs__sig_unmark();
    memobs__sig_wait_others();
    memobs__pmp_gone(1);
    memobs__sig_end((int)sig);
    memobs__pmp_gone(0);
    pthread_mutex_unlock(&memobs__g.flush_lock);
}

/* The caller holds memobs__sig.lock. 1 when this process has its writer. */
static int memobs__sig_start(void) {
    memobs__sigset_t block, old;
    pthread_t th;
    uint64_t end;
    int e, i;
    if (memobs__sig_writer_here() || memobs__sig.started_pid == (uint32_t)getpid()) return 1;
    MEMOBS__STORE(&memobs__sig.writer_pid.v, 0u); /* a parent's, copied by fork(): until ours runs, none */
    MEMOBS__STORE(&memobs__sig.fatal.v, 0u); /* a parent's, copied by fork() */
    MEMOBS__STORE(&memobs__sig.snap.v, 0u);
    MEMOBS__STORE(&memobs__sig.stops.v, 0u);
    MEMOBS__STORE(&memobs__sig.first_ns.v, 0u);
    memobs__sig_unmark(); /* a fork() child's copy of a mark made while it forked */
    memobs__sig.mark_fd = -1;
    memobs__sig_mark_init();
    if (sem_init(&memobs__sig.wake, 0, 0) != 0 || sem_init(&memobs__sig.ready, 0, 0) != 0) {
        memobs__log(MEMOBS_LOG_WARN, "cannot make a semaphore (%s): no outputs are written on a stop signal",
                    strerror(errno));
        return 0;
    }
    /* every signal blocked in the writer but the crashes: a fault there is written too */
    memset(&block, 0xff, sizeof block);
    for (i = MEMOBS__SIG_STOPS; i < MEMOBS__SIG_N; i++)
        block.w[(memobs__sig_no[i] - 1) / 64] &= ~(1ul << ((memobs__sig_no[i] - 1) % 64));
    memobs__sigmask(MEMOBS__SIG_BLOCK, &block, &old);
    e = pthread_create(&th, NULL, memobs__sig_writer, NULL);
    memobs__sigmask(MEMOBS__SIG_SETMASK, &old, NULL);
    if (e != 0) {
        memobs__log(MEMOBS_LOG_WARN, "cannot start the thread that writes the outputs on a stop signal (%s): "
                    "SIGTERM, SIGINT, SIGHUP and SIGQUIT act as without memobs", strerror(e));
        return 0;
    }
    pthread_detach(th);
    memobs__sig.started_pid = (uint32_t)getpid();
    /* the writer runs before memobs goes on: a process that exits (or a
       fork() child that ends) at once never has a thread still starting,
       which LeakSanitizer's stop of the threads at exit cannot suspend.
       Bounded: in a fork() child the new thread may wait forever on a lock
       another thread of the parent held when it forked (an allocator that
       is not fork-safe: ASan's); fork() returns all the same, and stops act
       as without memobs until the writer runs (writer_pid) */
    end = memobs_now_ns() + MEMOBS__SIG_READY_NS;
    for (;;) {
        struct memobs__timespec at; /* sem_timedwait's clock is the wall clock: slices of 10 ms */
        memobs__clock_gettime(0, &at);
        if ((at.tv_nsec += 10000000) >= 1000000000) at.tv_sec++, at.tv_nsec -= 1000000000;
        if (memobs__sem_timedwait(&memobs__sig.ready, &at) == 0) break;
        if (memobs_now_ns() >= end) {
            memobs__log(MEMOBS_LOG_WARN, "the thread that writes the outputs on a stop signal did not start within "
                        "%d s: until it does, SIGTERM, SIGINT and SIGHUP act as without memobs",
                        (int)(MEMOBS__SIG_READY_NS / 1000000000u));
            break;
        }
    }
    return 1;
}

/* The caller holds memobs__sig.lock: ours in front of each signal (on),
   or what ours replaced back where ours are still there (off). */
static void memobs__sig_put(int on) {
    int i, j, later = 0;
    for (i = 0; i < MEMOBS__SIG_N; i++) {
        int sig = memobs__sig_no[i], stop = i < MEMOBS__SIG_STOPS;
        void (*fn)(int, void *, void *) = stop ? memobs__sig_on_stop : memobs__sig_on_crash;
        memobs__sa_t cur, ours;
        int mine = on;
        if (on && stop && memobs__py_is_initialized) { /* CPython's: see above */
            if (sig == MEMOBS__SIGINT) mine = 0;
            else if (!memobs__py_is_initialized()) mine = 0, later = 1;
        }
        if (memobs__sigaction(sig, NULL, &cur) != 0) continue;
        if ((cur.flags & MEMOBS__SA_SIGINFO) && cur.u.action == fn) {
            if (!mine) memobs__sigaction(sig, &memobs__sig.prev[i], NULL);
            continue;
        }
        if (!mine || cur.u.handler == MEMOBS__SIG_IGN) continue; /* ignored (nohup): left alone */
        memobs__sig.prev[i] = cur;
        memset(&ours, 0, sizeof ours);
        ours.u.action = fn;
        ours.flags = MEMOBS__SA_SIGINFO | MEMOBS__SA_ONSTACK;
        if (!stop) {
            for (j = MEMOBS__SIG_STOPS; j < MEMOBS__SIG_N; j++) memobs__sigset_add(&ours.mask, memobs__sig_no[j]);
        } else if (!cur.u.handler) {
            ours.flags |= MEMOBS__SA_RESTART; /* the program's calls go on while the writer writes */
        } else {
            ours.mask = cur.mask;
            ours.flags = MEMOBS__SA_SIGINFO | (cur.flags & (MEMOBS__SA_RESTART | MEMOBS__SA_ONSTACK |
                                                             MEMOBS__SA_NODEFER | MEMOBS__SA_RESETHAND));
        }
        memobs__sigaction(sig, &ours, NULL);
    }
    MEMOBS__STORE(&memobs__sig.deferred.v, (uint32_t)later);
    MEMOBS__STORE(&memobs__sig.stacks.v, (uint32_t)(on != 0));
}

/* Stops left for CPython to start first (memobs__sig_put) go in once it
   has: called by memobs_set_signals and by the LD_PRELOAD library at its
   first intercepted call. Not in a handler. */
static void memobs__sig_apply(void);
static __attribute__((unused)) void memobs__sig_late(void) {
    if (!MEMOBS__LOAD(&memobs__sig.deferred.v) || !memobs__py_is_initialized || !memobs__py_is_initialized()) return;
    pthread_mutex_lock(&memobs__sig.lock);
    if (MEMOBS__LOAD(&memobs__sig.deferred.v)) memobs__sig_apply();
    pthread_mutex_unlock(&memobs__sig.lock);
}

/* A thread's first record (its shard, memobs__shard_get), with memobs'
   crash handlers in place: an alternate signal stack of its own unless it
   has one, so that a stack overflow there is written too; given back at
   the thread's exit (memobs__shard_release). Async-signal-safe (mmap). The
   stack's lowest word holds a mark: only ours is given back. */
#define MEMOBS__SIG_TSTACK 65536
static void memobs__sig_thread_stack(void) {
    memobs__stack_t cur, ss;
    void *m;
    if (!MEMOBS__LOAD(&memobs__sig.stacks.v) || memobs__sigaltstack(NULL, &cur) != 0 ||
        !(cur.flags & MEMOBS__SS_DISABLE))
        return;
    m = mmap(NULL, MEMOBS__SIG_TSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MEMOBS__MAP_ANON, -1, 0);
    if (m == MAP_FAILED) return;
    *(uintptr_t *)m = (uintptr_t)&memobs__sig ^ (uintptr_t)MEMOBS__SIG_TSTACK;
    ss.sp = m;
    ss.flags = 0;
    ss.size = MEMOBS__SIG_TSTACK;
    if (memobs__sigaltstack(&ss, NULL) != 0) munmap(m, MEMOBS__SIG_TSTACK);
}
static void memobs__sig_thread_unstack(void) {
    memobs__stack_t cur, off;
    if (memobs__sigaltstack(NULL, &cur) != 0 || (cur.flags & (MEMOBS__SS_DISABLE | MEMOBS__SS_ONSTACK)) ||
        cur.size != MEMOBS__SIG_TSTACK || !cur.sp ||
        *(const uintptr_t *)cur.sp != ((uintptr_t)&memobs__sig ^ (uintptr_t)MEMOBS__SIG_TSTACK))
        return;
    memset(&off, 0, sizeof off);
    off.flags = MEMOBS__SS_DISABLE;
    if (memobs__sigaltstack(&off, NULL) == 0) munmap(cur.sp, MEMOBS__SIG_TSTACK);
}

/* The caller holds memobs__sig.lock: the calling thread gets memobs'
   alternate signal stack unless it has one (once per process). */
static void memobs__sig_altstack(void) {
    memobs__stack_t cur, ss;
    if (memobs__sig.altstack || memobs__sigaltstack(NULL, &cur) != 0 || !(cur.flags & MEMOBS__SS_DISABLE)) return;
    ss.sp = memobs__sig_stack;
    ss.flags = 0;
    ss.size = sizeof memobs__sig_stack;
    if (memobs__sigaltstack(&ss, NULL) == 0) memobs__sig.altstack = 1;
}

/* The caller holds memobs__sig.lock. */
static void memobs__sig_apply(void) {
    if (memobs__sig.want && memobs__sig.outputs) {
        if (!memobs__sig_start()) return;
        memobs__sig_altstack();
        memobs__sig_put(1);
    } else {
        memobs__sig_put(0);
    }
}

static void memobs__sig_prepare(void) { pthread_mutex_lock(&memobs__sig.lock); }
static void memobs__sig_parent(void) { pthread_mutex_unlock(&memobs__sig.lock); }
static void memobs__sig_child(void) {
    /* flush_lock, which the writer may have held, starts free: memobs__outs_fork */
    MEMOBS__STORE(&memobs__sig.crashing.v, 0u);
#ifdef MEMOBS__TSAN
    memobs__sig.outputs = 0; /* TSan: no thread may start here (memobs_set_signals(1) neither) */
    memobs__sig_put(0);      /* and its handlers are not run */
#else
    if (memobs__sig.want && memobs__sig.outputs && !memobs__sig_start()) memobs__sig_put(0);
#endif
    pthread_mutex_unlock(&memobs__sig.lock);
}

static void memobs__sig_init(void) {
    pthread_mutex_init(&memobs__sig.lock, NULL);
    memobs__sig.want = 1;
    pthread_atfork(memobs__sig_prepare, memobs__sig_parent, memobs__sig_child);
}

/* Runs last in memobs__init_once: MEMOBS_SIGNALS, then the handlers when
   an exit output is configured. */
static void memobs__sig_env(void) {
    const char *s = getenv("MEMOBS_SIGNALS");
    unsigned i;
    pthread_once(&memobs__sig_once, memobs__sig_init);
    pthread_mutex_lock(&memobs__sig.lock);
    if (s) {
        int b = memobs__parse_bool(s);
        if (b < 0) memobs__log(MEMOBS_LOG_WARN, "MEMOBS_SIGNALS='%s' is not 0/1/on/off/true/false/yes/no; using 1", s);
        else memobs__sig.want = b;
    }
    for (i = 0; i < MEMOBS__OUTS; i++)
        if (MEMOBS__LOAD(&memobs__g.out[i].on.v)) memobs__sig.outputs = 1;
    memobs__sig_apply();
    pthread_mutex_unlock(&memobs__sig.lock);
}

int memobs_set_signals(int on) {
    int was;
    memobs_init();
    pthread_once(&memobs__sig_once, memobs__sig_init);
    pthread_mutex_lock(&memobs__sig.lock);
    was = memobs__sig.want; /* with on: stops left for CPython to start first go in now if it has */
    memobs__sig.want = on != 0;
    memobs__sig_apply();
    pthread_mutex_unlock(&memobs__sig.lock);
    return was;
}

int memobs_get_signals(void) {
    int on;
    memobs_init();
    pthread_once(&memobs__sig_once, memobs__sig_init);
    pthread_mutex_lock(&memobs__sig.lock);
    on = memobs__sig.want;
    pthread_mutex_unlock(&memobs__sig.lock);
    return on;
}

/* A companion's veto on a stop's write (the LD_PRELOAD library: a process
   that made no CUDA call and recorded nothing writes nothing). Called on
   the writer thread, not in a handler. */
static __attribute__((unused)) void memobs__sig_set_skip(int (*fn)(void)) {
    __atomic_store_n(&memobs__sig.skip, fn, __ATOMIC_RELEASE);
}

#else /* !MEMOBS__HAVE_SIGNALS */

static __attribute__((unused)) void memobs__sig_env(void) {}
static void memobs__sig_exit(void) {}
static void memobs__sig_thread_stack(void) {}
static void memobs__sig_thread_unstack(void) {}
static __attribute__((unused)) void memobs__sig_late(void) {}
static __attribute__((unused)) void memobs__sig_set_skip(int (*fn)(void)) { (void)fn; }
int memobs_set_signals(int on) {
    (void)on;
    memobs_init();
    return 0;
}
int memobs_get_signals(void) {
    memobs_init();
    return 0;
}

#endif /* MEMOBS__HAVE_SIGNALS */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under the MIT License (SPDX-License-Identifier: MIT).
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the memobs authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
