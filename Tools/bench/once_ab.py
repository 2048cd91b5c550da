#!/usr/bin/env python3
"""`e2ee-filter once` (exec to its decision line, as an extension launched per push waits for it; and to exit) for two or more builds,
alternating, so that the machine's load falls on each alike.

  python3 Tools/bench/once_ab.py BIN_DIR [BIN_DIR ...] [--runs 40] [--reps 3]

Each BIN_DIR holds an e2ee-filter (the first one's e2ee-send seals the payloads). Each build keeps its own state
file across its runs, as a device does. For example, the runtime linked in against the runtime as shared libraries:

  swift build -c release --static-swift-stdlib --product e2ee-send --scratch-path .build-static
  swift build -c release --static-swift-stdlib --product e2ee-filter --scratch-path .build-static
  swift build -c release --product e2ee-filter --scratch-path .build-shared
  python3 Tools/bench/once_ab.py .build-static/release .build-shared/release

With --suites, one build and bob's device on each crypto suite instead (docs/PROTOCOL.md §16), alternating run by
run: what an X-Wing device costs `once` over a classical one, under the same load:

  python3 Tools/bench/once_ab.py .build/release --suites classical,xwing
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline_bench as pb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--runs", type=int, default=40, help="runs of `once` per build per round")
    ap.add_argument("--reps", type=int, default=3, help="rounds")
    ap.add_argument("--suites", default=None, help="one build, bob on each of these suites (comma-separated)")
    a = ap.parse_args()
    if a.suites:
        return compare_suites(a.bins[0], a.suites.split(","), a.runs, a.reps)
    for b in a.bins:
        if not os.access(os.path.join(b, "e2ee-filter"), os.X_OK):
            sys.exit(f"once_ab: {b}/e2ee-filter is missing or not executable; build it first (see --help)")
    work = tempfile.mkdtemp(prefix="once-ab-")
    keys, contacts = pb.setup(a.bins[0], work)
    reqs = os.path.join(work, "requests.jsonl")
    pb.write_requests(reqs, a.runs * a.reps)
    env = dict(os.environ, E2EE_TOPIC="com.example.e2ee")
    with open(reqs) as i:
        lines = subprocess.run([os.path.join(a.bins[0], "e2ee-send"), "batch", "--identity", f"{keys}/alice.identity",
                                "--contacts", keys], stdin=i, capture_output=True, env=env, check=True).stdout.splitlines()
    print(f"once_ab: load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    medians = {b: [] for b in a.bins}
    for r in range(a.reps):
        for index, b in enumerate(a.bins):
            times, exits = [], []
            for line in lines[r * a.runs:(r + 1) * a.runs]:
                decided, exited = pb.time_once([os.path.join(b, "e2ee-filter"), "once", "--identity",
                                                f"{keys}/bob.identity", "--contacts", contacts, "--state",
                                                os.path.join(work, f"state-{index}.sqlite")], line)
                times.append(decided); exits.append(exited)
            times.sort()
            medians[b].append(statistics.median(times))
            print(f"once_ab: round {r + 1}, {b}: to decision median {statistics.median(times):.1f} ms, "
                  f"p10 {times[len(times) // 10]:.1f}, p90 {times[len(times) * 9 // 10]:.1f}; to exit median "
                  f"{statistics.median(exits):.1f} ms (load {os.getloadavg()[0]:.2f})", flush=True)
    for b in a.bins:
        print(f"once_ab: {b}: medians {', '.join(f'{m:.1f}' for m in medians[b])} ms")


def compare_suites(bin_dir, suites, runs, reps):
    """bob's device on each suite, its own keys, payloads and state; `once` alternates between them run by run."""
    work = tempfile.mkdtemp(prefix="once-suites-")
    env = dict(os.environ, E2EE_TOPIC="com.example.e2ee")
    setups = {}
    for suite in suites:
        pb.SUITE = suite
        folder = os.path.join(work, suite)
        os.makedirs(folder)
        keys, contacts = pb.setup(bin_dir, folder)
        reqs = os.path.join(folder, "requests.jsonl")
        pb.write_requests(reqs, runs * reps)
        with open(reqs) as i:
            lines = subprocess.run([os.path.join(bin_dir, "e2ee-send"), "batch", "--identity", f"{keys}/alice.identity",
                                    "--contacts", keys], stdin=i, capture_output=True, env=env,
                                   check=True).stdout.splitlines()
        setups[suite] = (keys, contacts, lines, os.path.join(folder, "state.sqlite"))
    print(f"once_ab: load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for r in range(reps):
        times = {suite: [] for suite in suites}
        exits = {suite: [] for suite in suites}
        for n in range(r * runs, (r + 1) * runs):
            for suite in suites:
                keys, contacts, lines, state = setups[suite]
                decided, exited = pb.time_once([os.path.join(bin_dir, "e2ee-filter"), "once", "--identity",
                                                f"{keys}/bob.identity", "--contacts", contacts, "--state", state],
                                               lines[n])
                times[suite].append(decided); exits[suite].append(exited)
        print(f"once_ab: round {r + 1} (load {os.getloadavg()[0]:.2f}): " + ", ".join(
            f"{suite} to decision median {statistics.median(ts):.1f} ms (p10 {sorted(ts)[len(ts) // 10]:.1f}), "
            f"to exit median {statistics.median(exits[suite]):.1f} ms"
            for suite, ts in times.items()), flush=True)


if __name__ == "__main__":
    main()
