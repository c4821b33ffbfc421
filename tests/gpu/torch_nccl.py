"""PyTorch's NCCL with memobs' profiler plugin and the memobs Python package,
on one GPU (`make gpu-torch-nccl-test`, tests/gpu/test_gpu_torch_nccl.sh).

The parent starts ranks 0 and 1 of a torch.distributed NCCL group. They
share the one GPU as two NCCL nodes: their NCCL_HOSTID values differ, so
NCCL's duplicate-GPU check passes and they talk over sockets on lo. Each
rank imports memobs (the package's own memobs, not attached to a preload):
the plugin, loaded by NCCL from NCCL_PROFILER_PLUGIN, finds that memobs
among the loaded libraries and records into it (instance "python"). Each
rank sets the prefill phase, runs AR all-reduces of COUNT floats, checks
the values, and then checks memobs.coll_get_stats() and coll_get_info():
exactly AR all_reduce operations of COUNT x 4 bytes in prefill, every one
timed at the default level, the plugin's source and instance. PyTorch's
own collectives (at init or teardown) are outside the prefill phase and
not counted here. Lines "ok - torch-nccl: ..." / "not ok - ..."; exits 1 on
a failure.
    python3 tests/gpu/torch_nccl.py            the parent
    python3 tests/gpu/torch_nccl.py RANK PORT  a rank"""
import os
import socket
import subprocess
import sys
import time

AR = 10
COUNT = 1 << 18  # floats: 1 MiB an all-reduce
WAIT_S = 20


def rank_main(rank, port):
    import torch
    import torch.distributed as dist
    import memobs

    fails = 0

    def result(good, what):
        nonlocal fails
        print("%s - torch-nccl: r%d: %s" % ("ok" if good else "not ok", rank, what), flush=True)
        fails += 0 if good else 1

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2,
                            device_id=torch.device("cuda", 0))
    x = torch.full((COUNT,), float(rank + 1), device="cuda")
    memobs.set_phase("prefill")
    for _ in range(AR):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    memobs.set_phase(None)
    want = 3.0 * 2 ** (AR - 1)  # 1 + 2, then doubled by each later all-reduce
    got = x.min().item(), x.max().item()
    result(got == (want, want), "%d all-reduces: every element %g (min, max %s)" % (AR, want, got))
    rows = []
    until = time.monotonic() + WAIT_S
    while time.monotonic() < until:  # the plugin records an operation when its kernel channels end
        rows = [r for r in memobs.coll_get_stats() if r["kind_name"] == "all_reduce" and r["phase"] == "prefill"]
        if rows and rows[0]["ops"] >= AR and rows[0]["timed_ops"] >= AR:
            break
        time.sleep(0.01)
    info = memobs.coll_get_info()
    print("    # coll_get_info: %s" % {k: info[k] for k in ("source", "instance", "level", "api_version")}, flush=True)
    for r in memobs.coll_get_stats():
        print("    # row: %s r%d/%d %s %s: ops %d bytes %d timed %d ns %d busbw %.3f GB/s" % (
            r["comm_name"], r["rank"], r["nranks"], r["kind_name"], r["phase"], r["ops"], r["bytes"], r["timed_ops"],
            r["ns"], r["busbw_gbs"] or 0), flush=True)
    result(info["source"] == "nccl-profiler" and info["instance"] == "python" and info["level"] == "coll",
           "the plugin records into the Python package's memobs: source nccl-profiler, instance python, level coll "
           "(got %s, %s, %s)" % (info["source"], info["instance"], info["level"]))
    r = rows[0] if len(rows) == 1 else None
    result(r is not None and r["ops"] == AR and r["bytes"] == AR * COUNT * 4 and r["nranks"] == 2 and r["rank"] == rank,
           "all_reduce prefill: %d ops, %d bytes, rank %d of 2 (got %s)" % (
               AR, AR * COUNT * 4, rank, str(r and (r["ops"], r["bytes"], r["rank"], r["nranks"]))))
    result(r is not None and r["timed_ops"] == AR and r["ns"] > 0 and r["bus_bytes"] == AR * COUNT * 4,
           "all_reduce prefill: every operation GPU-timed, bus bytes = S at 2 ranks (got %s)" % (
               str(r and (r["timed_ops"], r["ns"], r["bus_bytes"])),))
    dist.destroy_process_group()
    return 1 if fails else 0


def parent():
    here = os.path.dirname(os.path.abspath(__file__))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, NCCL_HOSTID="memobs-torch-node%d" % rank, NCCL_NET="Socket", NCCL_SOCKET_IFNAME="lo",
                   NCCL_IB_DISABLE="1", NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", NCCL_NVLS_ENABLE="0",
                   NCCL_MNNVL_ENABLE="0", NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,ENV")
        procs.append(subprocess.Popen([sys.executable, os.path.join(here, "torch_nccl.py"), str(rank), str(port)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    rc = 0
    npass = nfail = 0
    for rank, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            print("not ok - torch-nccl: r%d did not end in 120 s" % rank)
            nfail += 1
        for line in out.splitlines():
            if line.startswith(("ok - ", "not ok - ", "    # ")):
                print(line)
                npass += line.startswith("ok - ")
                nfail += line.startswith("not ok - ")
            elif "profiler" in line.lower() or "NCCL version" in line:
                print("    # nccl r%d: %s" % (rank, line.strip()[-160:]))
        if p.returncode != 0 and not any(l.startswith("not ok - ") for l in out.splitlines()):
            print("not ok - torch-nccl: r%d exited %s" % (rank, p.returncode))
            print("\n".join("    # " + l for l in out.splitlines()[-30:]))
            nfail += 1
        rc |= p.returncode != 0
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if (rc or nfail) else 0


if __name__ == "__main__":
    sys.exit(rank_main(int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else parent())
