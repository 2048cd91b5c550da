#!/usr/bin/env python3
"""Process-level benchmarks on release binaries (no timings in tests; figures for the README):

  sender   pushes/s from `e2ee-send batch --deliver` to `e2ee-gateway` over one HTTP/2 connection (loopback),
           and offline sealing throughput of `e2ee-send batch` (no network)
  filter   peak RSS of `e2ee-filter run` over N mixed payloads, RSS sampled over time (and at 10k / N),
           throughput, and cold start of `e2ee-filter once` (exec to decision)
  scaling  `e2ee-filter run` on N mixed payloads pinned to one core and on two, alternately: decisions/s on two
           cores over one, and CPU per payload over the libsodium floor of one open (e2ee-filter-bench --floor-only)
  instructions
           user-space instructions of `e2ee-filter run` per payload (valgrind's cachegrind; an empty run's start-up
           subtracted) next to those of one libsodium floor open (callgrind inside e2ee-filter-bench's floor):
           what the process does above the floor, apart from how fast the CPU runs it
  soak     `e2ee-filter run` on N = 1,000,000 mixed payloads from three `e2ee-send batch` producers with replays,
           a 36-second replay window: state size (file + WAL) and RSS at every N/10, peak RSS

Usage: python3 Tools/bench/pipeline_bench.py --bin .build/release [sender|filter|scaling|instructions|soak|all] [--n N]
       [--spool off|on|both] [--suite classical|xwing]
"""
import argparse, json, os, random, resource, shutil, signal, statistics, subprocess, sys, tempfile, threading, time, uuid

def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)

# bob's device key suite (--suite): classical (X25519) or xwing (docs/PROTOCOL.md §16); alice stays classical.
SUITE = "classical"

def setup(bin_dir, work):
    keys = os.path.join(work, "keys"); os.makedirs(keys)
    send = os.path.join(bin_dir, "e2ee-send")
    run([send, "keygen", "--user-id", "alice", "--display-name", "Alice", "--out-dir", keys], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run([send, "keygen", "--user-id", "bob", "--display-name", "Bob", "--out-dir", keys, "--device-token", "ab" * 32, "--topic", "com.example.e2ee",
         "--suite", SUITE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    filter_contacts = os.path.join(work, "bob-contacts"); os.makedirs(filter_contacts)
    shutil.copy(os.path.join(keys, "alice.card.json"), filter_contacts)
    return keys, filter_contacts

def request_lines(n, seed=1):
    rng = random.Random(seed)
    for i in range(n):
        k = i % 4
        if k == 0:
            yield {"kind": "text", "to": "bob", "thread": "t", "title": "Hi", "body": "x" * rng.randint(0, 900)}
        elif k == 1:
            yield {"kind": "receipt", "to": "bob", "message_ids": ["%032x" % rng.getrandbits(128)]}
        elif k == 2:
            yield {"kind": "cancel", "to": "bob", "call_id": str(uuid.UUID(int=rng.getrandbits(128))), "reason": "remoteEnded"}
        else:
            yield {"kind": "call", "to": "bob", "call_id": str(uuid.UUID(int=rng.getrandbits(128))), "ring_timeout": 3600}

def write_requests(path, n):
    with open(path, "w") as f:
        for r in request_lines(n):
            f.write(json.dumps(r) + "\n")

def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        return None
    return None

def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0

def process_cpu_s(pid):
    """User + system CPU seconds of a running process (from /proc), or 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (FileNotFoundError, IndexError, ValueError):
        return 0.0

def child_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def timed(cmd, stdin_path, env, stdout=None):
    """Runs cmd with stdin from a file; returns (wall s, CPU s of that process, its stdout)."""
    cpu = child_cpu_s()
    t = time.perf_counter()
    with open(stdin_path) as i:
        out = subprocess.run(cmd, stdin=i, stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return time.perf_counter() - t, child_cpu_s() - cpu, out.stdout or ""

def sender_bench(bin_dir, work, n, spool):
    keys, _ = setup(bin_dir, work)
    send, gw = os.path.join(bin_dir, "e2ee-send"), os.path.join(bin_dir, "e2ee-gateway")
    reqs = os.path.join(work, "requests.jsonl"); write_requests(reqs, n)
    env = dict(os.environ)
    batch = [send, "batch", "--identity", f"{keys}/alice.identity", "--contacts", keys]
    # Offline sealing: whole process, stdout to a file (the request lines are reused for `deliver` below).
    lines_path = os.path.join(work, "request-lines.jsonl")
    with open(lines_path, "w") as o:
        wall, cpu, _ = timed(batch, reqs, env, stdout=o)
    offline = n / wall
    # Per kind: n lines of one kind each, CPU per message (sealing does not depend on the kind beyond the bucket).
    per_kind = {}
    for kind in ("call", "cancel", "text", "receipt"):
        path = os.path.join(work, f"{kind}.jsonl")
        with open(path, "w") as f:
            for r in request_lines(n * 4):
                if r["kind"] == kind: f.write(json.dumps(r) + "\n")
        with open(os.devnull, "w") as o:
            _, kcpu, _ = timed(batch, path, env, stdout=o)
        per_kind[kind] = kcpu / n * 1e6
    apns = os.path.join(work, "apns")
    run([gw, "provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", apns], stdout=subprocess.DEVNULL)
    port_file = os.path.join(work, "port")
    g = subprocess.Popen([gw, "serve", "--port-file", port_file, "--tls-dir", os.path.join(work, "tls"), "--topic", "com.example.e2ee",
                          "--provider-key", f"TEAM123456:KEY1234567:{apns}/AuthKey_KEY1234567.pub.pem",
                          "--log-level", "error"] + (["--spool", os.path.join(work, "spool")] if spool else []),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip(): break
            time.sleep(0.05)
        port = open(port_file).read().strip()
        delivery = ["--apns-url", f"https://127.0.0.1:{port}", "--apns-ca", os.path.join(work, "tls", "ca.pem"),
                    "--apns-key-file", f"{apns}/AuthKey_KEY1234567.p8", "--apns-key-id", "KEY1234567", "--apns-team-id", "TEAM123456",
                    "--window", "200"]
        g0 = process_cpu_s(g.pid)
        elapsed, batch_cpu, out = timed(batch + ["--deliver"] + delivery, reqs, env)
        g1 = process_cpu_s(g.pid)
        ok = sum(1 for l in out.splitlines() if json.loads(l).get("status") == 200)
        d_elapsed, d_cpu, d_out = timed([send, "deliver"] + delivery, lines_path, env)
        g2 = process_cpu_s(g.pid)
        d_ok = sum(1 for l in d_out.splitlines() if json.loads(l).get("status") == 200)
    finally:
        g.send_signal(signal.SIGTERM); g.wait(timeout=20)
    sink = "an fsync'd spool (one fsync per push before its 200)" if spool else "stdout to /dev/null"
    print(f"sender: {n} mixed messages; offline sealing (e2ee-send batch, no network): {offline:,.0f} msgs/s, "
          f"client CPU {cpu / n * 1e6:.0f} us/msg")
    print("sender: sealing CPU per message by kind (whole process, " + f"{n} each): "
          + ", ".join(f"{k} {v:.0f} us" for k, v in per_kind.items())
          + f"; max/min {max(per_kind.values()) / min(per_kind.values()):.2f}x")
    print(f"sender: batch --deliver: {ok}/{n} over one HTTP/2 connection to e2ee-gateway on loopback (gateway sink: {sink}) "
          f"in {elapsed:.2f} s: {ok/elapsed:,.0f} pushes/s, client CPU {batch_cpu / n * 1e6:.0f} us/push "
          f"(sealing + transport; the gateway shares the same 2 cores, gateway CPU {(g1 - g0) / n * 1e6:.0f} us/push)")
    print(f"sender: deliver (transport only, request lines sealed beforehand): {d_ok}/{n} in {d_elapsed:.2f} s: "
          f"{d_ok/d_elapsed:,.0f} pushes/s, client CPU {d_cpu / n * 1e6:.0f} us/push, gateway CPU {(g2 - g1) / n * 1e6:.0f} us/push")
    return {"offline_msgs_per_s": offline, "delivered": ok, "pushes_per_s": ok / elapsed}

def filter_run(bin_dir, work, n, stream_from_sender=False, sample_s=0.1):
    keys, contacts = setup(bin_dir, work)
    send, flt = os.path.join(bin_dir, "e2ee-send"), os.path.join(bin_dir, "e2ee-filter")
    reqs = os.path.join(work, "requests.jsonl"); write_requests(reqs, n)
    env = dict(os.environ, E2EE_TOPIC="com.example.e2ee")
    out_path = os.path.join(work, "decisions.jsonl")
    payloads = os.path.join(work, "payloads.jsonl")
    if not stream_from_sender:
        with open(reqs) as i, open(payloads, "w") as o:
            run([send, "batch", "--identity", f"{keys}/alice.identity", "--contacts", keys], stdin=i, stdout=o, env=env)
    cmd = [flt, "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts, "--state", os.path.join(work, "state.sqlite")]
    if stream_from_sender:
        producer = subprocess.Popen([send, "batch", "--identity", f"{keys}/alice.identity", "--contacts", keys], stdin=open(reqs), stdout=subprocess.PIPE, env=env)
        stdin = producer.stdout
    else:
        producer, stdin = None, open(payloads)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=stdin, stdout=open(out_path, "w"))
    samples = []  # (seconds, decided, rss_kb)
    while p.poll() is None:
        r = rss_kb(p.pid)
        if r: samples.append((time.perf_counter() - t, count_lines(out_path) if len(samples) % 10 == 0 else None, r))
        time.sleep(sample_s)
    elapsed = time.perf_counter() - t
    if producer: producer.wait()
    decided = count_lines(out_path)
    assert p.returncode == 0, f"e2ee-filter exited {p.returncode}"
    # Fill progress between counted samples by linear interpolation on time.
    known = [(s, d) for s, d, _ in samples if d is not None]
    def decided_at(s):
        prev = (0.0, 0)
        for k in known:
            if k[0] >= s:
                span = k[0] - prev[0] or 1
                return prev[1] + (k[1] - prev[1]) * (s - prev[0]) / span
            prev = k
        return decided
    curve = [(s, decided_at(s), r) for s, _, r in samples]
    peak = max(r for _, _, r in samples) if samples else 0
    def rss_near(progress):
        c = [r for _, d, r in curve if d >= progress]
        return c[0] if c else None
    state = os.path.join(work, "state.sqlite")
    state_bytes = sum(os.path.getsize(state + ext) for ext in ("", "-wal", "-shm") if os.path.exists(state + ext))
    return {"n": n, "decided": decided, "elapsed_s": elapsed, "per_s": decided / elapsed, "peak_rss_kb": peak,
            "state_bytes": state_bytes,
            "rss_at_10k_kb": rss_near(10_000), "rss_at_end_kb": curve[-1][2] if curve else None, "curve": curve,
            "keys": keys, "contacts": contacts, "payloads": payloads}

def time_once(command, payload):
    """One `e2ee-filter once`: ms from exec to its decision line on stdout (what an extension launched per push
    waits for), and to the process's exit (the state file closed too)."""
    t = time.perf_counter()
    p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdin.write(payload if payload.endswith(b"\n") else payload + b"\n")
    p.stdin.close()
    line = p.stdout.readline()
    decided = (time.perf_counter() - t) * 1000
    p.stdout.read()
    if p.wait() != 0 or not line.startswith(b"{"):
        sys.exit(f"pipeline_bench: `{' '.join(command)}` failed (exit {p.returncode}, first line {line[:200]!r})")
    return decided, (time.perf_counter() - t) * 1000

def cold_start(bin_dir, info, runs=30):
    """Median, min and max of `once`'s exec to decision over `runs` payloads, and the median to exit."""
    flt = os.path.join(bin_dir, "e2ee-filter")
    with open(info["payloads"]) as f:
        lines = [next(f) for _ in range(runs)]
    decided, exited = [], []
    state = os.path.join(os.path.dirname(info["payloads"]), "once.sqlite")
    for line in lines:
        d, e = time_once([flt, "once", "--identity", f"{info['keys']}/bob.identity", "--contacts", info["contacts"],
                          "--state", state], line.encode())
        decided.append(d); exited.append(e)
    return statistics.median(decided), min(decided), max(decided), statistics.median(exited)

def scaling(bin_dir, work, n, reps, floor_bench):
    """`e2ee-filter run` on N mixed payloads from stdin (state on disk), pinned to one core (`taskset -c 0`) and on
    both, alternately; decisions/s, and the process's CPU per payload next to the libsodium floor of one open,
    measured by `e2ee-filter-bench --floor-only` in the same run."""
    keys, contacts = setup(bin_dir, work)
    send, flt = os.path.join(bin_dir, "e2ee-send"), os.path.join(bin_dir, "e2ee-filter")
    reqs = os.path.join(work, "requests.jsonl"); write_requests(reqs, n)
    payloads = os.path.join(work, "payloads.jsonl")
    env = dict(os.environ, E2EE_TOPIC="com.example.e2ee")
    with open(reqs) as i, open(payloads, "w") as o:
        run([send, "batch", "--identity", f"{keys}/alice.identity", "--contacts", keys], stdin=i, stdout=o, env=env,
            stderr=subprocess.DEVNULL)
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        sys.exit("scaling: this machine gives the process fewer than 2 cores; nothing to compare")
    pins = {"1 core": str(cores[0]), "2 cores": f"{cores[0]},{cores[1]}"}
    results = {k: [] for k in pins}
    floors = []
    for r in range(reps):
        if floor_bench:
            out = subprocess.run(["taskset", "-c", pins["1 core"], floor_bench, "20000", "--floor-only"],
                                 capture_output=True, text=True, check=True).stdout
            floors.append(float(out.split("floor:")[1].split()[0]))
        for label, pin in pins.items():
            state = os.path.join(work, f"state-{r}-{label[0]}.sqlite")
            out_path = os.path.join(work, "decisions.jsonl")
            with open(out_path, "w") as out:
                wall, cpu, _ = timed(["taskset", "-c", pin, flt, "run", "--identity", f"{keys}/bob.identity",
                                      "--contacts", contacts, "--state", state], payloads, env, stdout=out)
            decided = count_lines(out_path)
            assert decided == n, f"{decided} decisions for {n} payloads"
            results[label].append((decided / wall, cpu / decided * 1e6))
            floor_note = f", {cpu / decided * 1e6 / floors[-1]:.2f}x the floor" if floors else ""
            print(f"scaling: run {r + 1}, {label}: {decided / wall:,.0f} decided/s, CPU {cpu / decided * 1e6:.0f} us/payload"
                  f"{floor_note} (load {os.getloadavg()[0]:.2f})", flush=True)
    ratios = [two[0] / one[0] for one, two in zip(results["1 core"], results["2 cores"])]
    print(f"scaling: decisions/s on 2 cores / 1 core, per run: {', '.join(f'{x:.2f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.2f})")
    if floors:
        print(f"scaling: libsodium floor of one open, per run: {', '.join(f'{x:.1f}' for x in floors)} us; "
              f"process CPU per payload / floor, 1 core: "
              f"{', '.join(f'{c / f:.2f}' for (_, c), f in zip(results['1 core'], floors))}; 2 cores: "
              f"{', '.join(f'{c / f:.2f}' for (_, c), f in zip(results['2 cores'], floors))}")

def valgrind_instructions(cmd, stdin_path, env, tool_args):
    """Instructions counted by valgrind for `cmd` (cachegrind's `I refs` or callgrind's `Collected`)."""
    with open(stdin_path) as i:
        err = subprocess.run(["valgrind"] + tool_args + cmd, stdin=i, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env, check=True).stderr
    for line in err.splitlines():
        if "I   refs:" in line or "Collected :" in line:
            return int(line.split(":")[-1].strip().replace(",", ""))
    sys.exit(f"instructions: valgrind printed no count for {cmd[0]}:\n{err[-2000:]}")

def instructions(bin_dir, work, n, floor_bench):
    """User-space instructions per payload of `e2ee-filter run` over N mixed payloads (state on disk), minus an empty
    run's, next to the instructions of one floor open. Deterministic to a fraction of a per cent, unlike CPU time."""
    if shutil.which("valgrind") is None:
        sys.exit("instructions: valgrind is missing: install it (sudo apt-get install -y valgrind) and run again")
    keys, contacts = setup(bin_dir, work)
    send, flt = os.path.join(bin_dir, "e2ee-send"), os.path.join(bin_dir, "e2ee-filter")
    reqs = os.path.join(work, "requests.jsonl"); write_requests(reqs, n)
    payloads, empty = os.path.join(work, "payloads.jsonl"), os.path.join(work, "empty.jsonl")
    open(empty, "w").close()
    env = dict(os.environ, E2EE_TOPIC="com.example.e2ee")
    with open(reqs) as i, open(payloads, "w") as o:
        run([send, "batch", "--identity", f"{keys}/alice.identity", "--contacts", keys], stdin=i, stdout=o, env=env,
            stderr=subprocess.DEVNULL)
    cachegrind = ["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    counts = {}
    for label, source in (("empty", empty), ("payloads", payloads)):
        state = os.path.join(work, f"state-{label}.sqlite")
        counts[label] = valgrind_instructions([flt, "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts,
                                               "--state", state], source, env, cachegrind)
    per_payload = (counts["payloads"] - counts["empty"]) / n
    print(f"instructions: e2ee-filter run, {n} mixed payloads: {counts['payloads']:,} instructions, an empty run "
          f"{counts['empty']:,}: {per_payload:,.0f} per payload")
    if floor_bench:
        # e2ee-filter-bench COUNT --floor-only opens the floor 200 times to warm up, then 5 x COUNT times.
        count = 1000
        floor_total = valgrind_instructions([floor_bench, str(count), "--floor-only"], empty, env,
                                            ["--tool=callgrind", "--toggle-collect=*floorOnce*",
                                             "--callgrind-out-file=/dev/null"])
        floor = floor_total / (200 + 5 * count)
        print(f"instructions: libsodium floor of one open: {floor:,.0f}; e2ee-filter run per payload / floor: "
              f"{per_payload / floor:.3f}x")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/release")
    ap.add_argument("what", nargs="?", default="all", choices=["sender", "filter", "scaling", "instructions", "soak", "all"])
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--reps", type=int, default=3, help="scaling: how many 1-core/2-core pairs")
    ap.add_argument("--floor-bench", default="Benchmarks/.build/release/e2ee-filter-bench",
                    help="scaling: the e2ee-filter-bench binary that measures the libsodium floor ('' for none)")
    ap.add_argument("--curve-out", default=None, help="write the RSS curve (seconds, decided, rss_kb) as CSV")
    ap.add_argument("--spool", default="both", choices=["off", "on", "both"],
                    help="sender: the gateway's sink: stdout (off), an fsync'd spool (on), or one run of each (both)")
    ap.add_argument("--suite", default="classical", choices=["classical", "xwing"],
                    help="bob's device key suite for the sender and filter runs (xwing: every push 4,093 bytes)")
    ap.add_argument("--replay-retention-hours", type=float, default=0.01,
                    help="soak: the filter's replay window (default 0.01 h = 36 s, so the state ages as over days)")
    a = ap.parse_args()
    global SUITE
    SUITE = a.suite
    bin_dir = os.path.abspath(a.bin)
    if a.what in ("sender", "all"):
        print(f"sender: load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        if a.spool in ("off", "both"):
            with tempfile.TemporaryDirectory() as w: sender_bench(bin_dir, w, a.n or 5000, spool=False)
        if a.spool in ("on", "both"):
            with tempfile.TemporaryDirectory() as w: sender_bench(bin_dir, w, a.n or 5000, spool=True)
    if a.what in ("filter", "all"):
        with tempfile.TemporaryDirectory() as w:
            r = filter_run(bin_dir, w, a.n or 100_000)
            med, lo, hi, to_exit = cold_start(bin_dir, r)
            print(f"filter: {r['decided']}/{r['n']} decided in {r['elapsed_s']:.1f} s ({r['per_s']:,.0f}/s, stdin, state on disk); "
                  f"peak RSS {r['peak_rss_kb']/1024:.1f} MB; RSS at 10k decided {(r['rss_at_10k_kb'] or 0)/1024:.1f} MB, at the end {(r['rss_at_end_kb'] or 0)/1024:.1f} MB")
            print(f"filter: cold start of `e2ee-filter once` (exec to decision): median {med:.1f} ms (min {lo:.1f}, max {hi:.1f}) over 30 runs; "
                  f"to exit: median {to_exit:.1f} ms")
            if a.curve_out: write_curve(a.curve_out, r["curve"])
    if a.what == "scaling":
        floor_bench = os.path.abspath(a.floor_bench) if a.floor_bench else None
        if floor_bench and not os.path.exists(floor_bench):
            sys.exit(f"scaling: {floor_bench} is missing: build it with `swift build --package-path Benchmarks -c release`, "
                     "or pass --floor-bench '' to skip the floor")
        print(f"scaling: load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        with tempfile.TemporaryDirectory() as w:
            scaling(bin_dir, w, a.n or 100_000, a.reps, floor_bench)
    if a.what == "instructions":
        floor_bench = os.path.abspath(a.floor_bench) if a.floor_bench else None
        if floor_bench and not os.path.exists(floor_bench):
            sys.exit(f"instructions: {floor_bench} is missing: build it with `swift build --package-path Benchmarks -c "
                     "release`, or pass --floor-bench '' to skip the floor")
        with tempfile.TemporaryDirectory() as w:
            instructions(bin_dir, w, a.n or 2000, floor_bench)
    if a.what == "soak":
        with tempfile.TemporaryDirectory() as w:
            soak(bin_dir, w, a.n or 1_000_000, a.replay_retention_hours, a.curve_out)

def soak(bin_dir, work, n, retention_hours, curve_out=None):
    """`e2ee-filter run` as a user runs it, on n mixed payloads from three senders on stdin (texts, receipts, calls
    that ring and are hung up, cancels of unknown calls, callee declines, and replays of recent bodies), with a short
    replay window so that time passes for the state as it would over days. Prints the state size (state file + WAL +
    SHM) and the filter's RSS at every tenth of n, and the peak RSS."""
    send, flt = os.path.join(bin_dir, "e2ee-send"), os.path.join(bin_dir, "e2ee-filter")
    keys = os.path.join(work, "keys"); contacts = os.path.join(work, "bob-contacts")
    os.makedirs(keys); os.makedirs(contacts)
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    senders = ("alice", "carol", "dave")
    for u in senders:
        run([send, "keygen", "--user-id", u, "--display-name", u.title(), "--out-dir", keys], **q)
        shutil.copy(os.path.join(keys, f"{u}.card.json"), contacts)
    run([send, "keygen", "--user-id", "bob", "--display-name", "Bob", "--out-dir", keys, "--device-token", "ab" * 32,
         "--topic", "com.example.e2ee"], **q)
    env = dict(os.environ, E2EE_TOPIC="com.example.e2ee")
    replay_every = 20  # one payload in 20 is a replay of one of the last 1,000 bodies

    def requests(seed, count):
        rng, calls = random.Random(seed), []
        for i in range(count):
            k = i % 10
            if k in (0, 1, 8):
                yield {"kind": "text", "to": "bob", "thread": "t", "title": "Hi", "body": "x" * rng.randint(0, 900)}
            elif k in (3, 4):
                yield {"kind": "receipt", "to": "bob", "message_ids": ["%032x" % rng.getrandbits(128)]}
            elif k == 5:
                c = str(uuid.UUID(int=rng.getrandbits(128)))
                calls.append(c)
                yield {"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 60}
            elif k == 6 and calls:
                yield {"kind": "cancel", "to": "bob", "call_id": calls.pop(0), "reason": "remoteEnded"}
            elif k == 7:
                yield {"kind": "cancel", "to": "bob", "call_id": str(uuid.UUID(int=rng.getrandbits(128))),
                       "reason": "declinedElsewhere"}
            else:
                yield {"kind": "cancel", "to": "bob", "call_id": str(uuid.UUID(int=rng.getrandbits(128))),
                       "reason": "answeredElsewhere"}

    fresh = n - n // replay_every
    per_sender = [fresh // 3 + (1 if i < fresh % 3 else 0) for i in range(3)]
    producers = []
    for i, u in enumerate(senders):
        p = subprocess.Popen([send, "batch", "--identity", f"{keys}/{u}.identity", "--contacts", keys],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        def feed(p=p, seed=i + 1, count=per_sender[i]):
            for r in requests(seed, count):
                p.stdin.write((json.dumps(r) + "\n").encode())
            p.stdin.close()
        threading.Thread(target=feed, daemon=True).start()
        producers.append(p)
    state = os.path.join(work, "state.sqlite")
    cmd = [flt, "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts, "--state", state,
           "--events", os.path.join(work, "events.jsonl"), "--replay-retention-hours", str(retention_hours)]
    t0 = time.perf_counter()
    f = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def relay():
        rng, recent, sent = random.Random(7), [], 0
        live = list(producers)
        while live and sent < n:
            for p in list(live):
                if sent >= n: break
                if recent and rng.randrange(replay_every) == 0:
                    f.stdin.write(rng.choice(recent)); sent += 1
                    continue
                line = p.stdout.readline()
                if not line:
                    live.remove(p); continue
                f.stdin.write(line); sent += 1
                recent.append(line)
                if len(recent) > 1000: recent.pop(0)
        while recent and sent < n:  # the producers' share is n less the replays: top up with replays
            f.stdin.write(rng.choice(recent)); sent += 1
        f.stdin.close()
    threading.Thread(target=relay, daemon=True).start()

    def state_bytes():
        return sum(os.path.getsize(state + ext) for ext in ("", "-wal", "-shm") if os.path.exists(state + ext))
    peak, checkpoints, decided, counts = [0], [], 0, {}
    stop = threading.Event()
    def sample():
        while not stop.is_set():
            r = rss_kb(f.pid)
            if r: peak[0] = max(peak[0], r)
            time.sleep(0.25)
    threading.Thread(target=sample, daemon=True).start()
    step = max(1, n // 10)
    for line in f.stdout:
        decided += 1
        d = json.loads(line)
        key = f"{d['decision']}/{d['reason']}"
        counts[key] = counts.get(key, 0) + 1
        if decided % step == 0:
            r = rss_kb(f.pid) or 0
            peak[0] = max(peak[0], r)
            checkpoints.append((decided, time.perf_counter() - t0, state_bytes(), r))
            print(f"soak: {decided:>9,} decided  {checkpoints[-1][1]:7.0f} s  state {checkpoints[-1][2]/1048576:6.2f} MB "
                  f"(file+WAL+SHM)  RSS {r/1024:5.1f} MB", flush=True)
    f.wait(); stop.set()
    for p in producers: p.wait()
    elapsed = time.perf_counter() - t0
    print(f"soak: {decided:,}/{n:,} decided in {elapsed:.0f} s ({decided/elapsed:,.0f}/s incl. sealing by 3 producers on "
          f"the same cores); e2ee-filter exit {f.returncode}; peak RSS {peak[0]/1024:.1f} MB; "
          f"replay window {retention_hours} h")
    print("soak: decisions: " + ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    if curve_out:
        with open(curve_out, "w") as o:
            o.write("decided,seconds,state_bytes,rss_kb\n")
            for c in checkpoints: o.write(f"{c[0]},{c[1]:.1f},{c[2]},{c[3]}\n")

def write_curve(path, curve):
    with open(path, "w") as f:
        f.write("seconds,decided,rss_kb\n")
        for s, d, kb in curve: f.write(f"{s:.2f},{int(d)},{kb}\n")

if __name__ == "__main__":
    main()
