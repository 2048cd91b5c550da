#!/usr/bin/env python3
"""Crash test across the whole pipeline: e2ee-send delivers over HTTP/2 to e2ee-gateway, which appends to its spool
(fsync before each 200), while e2ee-filter consumes that spool and is killed with SIGKILL at random points and
restarted, again and again, until everything delivered is decided.

Checks, exit 0 only if all hold: every spool record ends with exactly one decision in the decisions file, in order;
the decisions equal those of one uninterrupted run over the same spool; no call rang twice (at most one `ringing`
event per call id); every call expected to be missed is in the events (`missed`) or was decided `missed-call`.
Ends with `N passed, M failed`. Release binaries from --bin; Python standard library only.

Usage: python3 scripts/pipeline-crash.py --bin .build/release [--pushes 300] [--seed N]
"""
import argparse, json, os, random, shutil, signal, subprocess, sys, tempfile, time, uuid

TEAM, KID, TOPIC = "TEAM123456", "KEY1234567", "com.example.e2ee"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/release")
    ap.add_argument("--pushes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    print(f"pipeline-crash: seed {seed} (rerun with --seed {seed})")
    b = lambda n: os.path.join(os.path.abspath(a.bin), n)
    work = tempfile.mkdtemp(prefix="e2ee-pipeline-crash-")
    children = []
    ok = False
    try:
        keys, contacts = os.path.join(work, "keys"), os.path.join(work, "bob-contacts")
        os.makedirs(contacts)
        q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        subprocess.run([b("e2ee-send"), "keygen", "--user-id", "alice", "--display-name", "Alice", "--out-dir", keys], **q)
        subprocess.run([b("e2ee-send"), "keygen", "--user-id", "bob", "--out-dir", keys, "--device-token", "cd" * 32, "--topic", TOPIC], **q)
        shutil.copy(os.path.join(keys, "alice.card.json"), contacts)
        apns = os.path.join(work, "apns")
        subprocess.run([b("e2ee-gateway"), "provider-key", "--team-id", TEAM, "--key-id", KID, "--out-dir", apns], **q)
        spool, port_file, tls = os.path.join(work, "spool"), os.path.join(work, "port"), os.path.join(work, "tls")
        gw = subprocess.Popen([b("e2ee-gateway"), "serve", "--port-file", port_file, "--tls-dir", tls, "--topic", TOPIC,
                               "--provider-key", f"{TEAM}:{KID}:{apns}/AuthKey_{KID}.pub.pem", "--spool", spool, "--log-level", "error"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(gw)
        deadline = time.time() + 30
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if time.time() > deadline: raise RuntimeError("the gateway did not start")
            time.sleep(0.05)
        port = open(port_file).read().strip()

        # The mix: episodes of one call each (ring then cancel; cancel before invite; a late invite), texts, receipts,
        # duplicates. Ring timeouts are long so decisions do not depend on timing.
        now = int(time.time() * 1000)
        reqs, expect_missed = [], set()
        while len(reqs) < a.pushes:
            k = rng.randrange(6)
            c = str(uuid.UUID(int=rng.getrandbits(128))).upper()
            if k == 0:
                reqs += [{"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600},
                         {"kind": "cancel", "to": "bob", "call_id": c, "reason": "remoteEnded"}]
                expect_missed.add(c)
            elif k == 1:
                reqs += [{"kind": "cancel", "to": "bob", "call_id": c, "reason": "answeredElsewhere"},
                         {"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600}]
                expect_missed.add(c)
            elif k == 2:
                reqs.append({"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 30, "sent_at_ms": now - 3_600_000})
                expect_missed.add(c)
            elif k == 3:
                reqs += [{"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600},
                         {"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600},
                         {"kind": "cancel", "to": "bob", "call_id": c, "reason": "answeredElsewhere"}]
            elif k == 4:
                reqs.append({"kind": "text", "to": "bob", "thread": "t", "title": "hi", "body": "x" * rng.randrange(500)})
            else:
                reqs.append({"kind": "receipt", "to": "bob", "message_ids": ["%032x" % rng.getrandbits(128)]})
        sender = subprocess.Popen(
            [b("e2ee-send"), "batch", "--identity", f"{keys}/alice.identity", "--contacts", keys, "--topic", TOPIC, "--deliver",
             "--apns-url", f"https://127.0.0.1:{port}", "--apns-ca", f"{tls}/ca.pem", "--apns-key-file", f"{apns}/AuthKey_{KID}.p8",
             "--apns-key-id", KID, "--apns-team-id", TEAM, "--window", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        children.append(sender)
        sender.stdin.write("".join(json.dumps(r) + "\n" for r in reqs)); sender.stdin.close()

        out, events, state = os.path.join(work, "decisions"), os.path.join(work, "events"), os.path.join(work, "state.sqlite")
        filt = [b("e2ee-filter"), "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts, "--spool", spool,
                "--state", state, "--output", out, "--events", events]
        kills, delay = 0, 0.05
        def lines(p):
            return open(p).read().splitlines() if os.path.exists(p) else []
        while True:
            sender_done = sender.poll() is not None
            before = len(lines(out))
            f = subprocess.Popen(filt, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            children.append(f)
            time.sleep(delay * rng.random() + 0.01)
            f.send_signal(signal.SIGKILL); f.wait(); kills += 1
            delay = 0.3 if len(lines(out)) == before else 0.05
            if sender_done and kills >= 20 and len(lines(out)) >= len(lines(spool)):
                break
            if kills > 2000: raise RuntimeError("no progress")
        if sender.returncode != 0: raise RuntimeError(f"e2ee-send exited {sender.returncode}")
        subprocess.run(filt + ["--exit-at-end"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        gw.send_signal(signal.SIGTERM); gw.wait(timeout=20)

        # Reference: one uninterrupted run over a copy of the same spool.
        ref_out = os.path.join(work, "ref-decisions")
        subprocess.run([b("e2ee-filter"), "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts, "--spool", spool,
                        "--state", os.path.join(work, "ref.sqlite"), "--output", ref_out, "--exit-at-end"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        spool_seqs = [json.loads(l)["seq"] for l in lines(spool)]
        got = [json.loads(l) for l in lines(out)]
        ref = [json.loads(l) for l in lines(ref_out)]
        ev = [json.loads(l) for l in lines(events)]
        ringing = {}
        for e in ev:
            if e.get("event") == "ringing": ringing[e["callID"]] = ringing.get(e["callID"], 0) + 1
        missed_seen = {e["callID"] for e in ev if e.get("event") == "missed"} | {
            str(d.get("call_id", "")).upper() for d in got if d["decision"] == "missed-call"}
        strip = lambda d: {k: v for k, v in d.items() if k not in ("handoff",)}
        checks = [
            ("every push the sender sent is in the spool", len(spool_seqs) == len(reqs), f"{len(spool_seqs)} of {len(reqs)}"),
            ("one decision per spool record, in order", [d["seq"] for d in got] == spool_seqs, f"{len(got)} decisions for {len(spool_seqs)} records"),
            ("decisions equal an uninterrupted run's", [strip(d) for d in got] == [strip(d) for d in ref], ""),
            ("no call rang twice", all(n == 1 for n in ringing.values()), f"{sum(ringing.values())} ringing events, {len(ringing)} calls"),
            ("no missed call lost", expect_missed <= missed_seen, f"{len(expect_missed - missed_seen)} missing"),
            ("the filter was killed at least 20 times", kills >= 20, f"{kills} kills"),
        ]
        passed = sum(1 for _, c, _ in checks if c)
        for name, c, detail in checks:
            print(f"{'PASS' if c else 'FAIL'}  {name}  {detail}")
        print(f"pipeline-crash: {len(reqs)} pushes, {kills} kills")
        print(f"{passed} passed, {len(checks) - passed} failed")
        ok = passed == len(checks)
    finally:
        for c in children:
            if c.poll() is None: c.kill()
        if ok: shutil.rmtree(work, ignore_errors=True)
        else: print(f"pipeline-crash: work folder kept: {work}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
