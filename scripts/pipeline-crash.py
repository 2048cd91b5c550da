#!/usr/bin/env python3
"""Crash test across the whole pipeline: e2ee-send delivers over HTTP/2 to e2ee-gateway, which appends to its spool
(fsync before each 200), while e2ee-filter (bob's phone, `--device-token`) consumes that spool and is killed with
SIGKILL at random points and restarted, again and again (--kills, default 40), until everything delivered is decided.

Traffic: alice (one device) calls, cancels, texts, sends receipts and duplicates, and declines calls bob placed
(`declinedElsewhere` from a callee: a `remote-declined` event); bob's tablet, a second device of bob's, answers or
declines some of alice's calls (`answeredElsewhere` / `declinedElsewhere` cancels to bob's own user: the phone stops
ringing). With more than two calls ringing at once the phone's provider refuses the next (a missed call).

Checks, exit 0 only if all hold: every spool record addressed to the phone ends with exactly one decision in the
decisions file, in order; the decisions equal those of one uninterrupted run over the same spool; the call events
(event, reason, handle, display name, by_user, by_device: everything but the time) equal the uninterrupted run's, per
call id as a sequence; no call rang twice; every call expected to be missed is in the events (`missed`) or was
decided `missed-call`. Ends with `N passed, M failed`. Release binaries from --bin; Python standard library only.

Usage: python3 scripts/pipeline-crash.py --bin .build/release [--pushes 300] [--kills 40] [--seed N]
"""
import argparse, json, os, random, shutil, signal, subprocess, sys, tempfile, threading, time, uuid

TEAM, KID, TOPIC = "TEAM123456", "KEY1234567", "com.example.e2ee"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/release")
    ap.add_argument("--pushes", type=int, default=300)
    ap.add_argument("--kills", type=int, default=40, help="at least this many SIGKILLs (default 40)")
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
        tablet, alice_contacts = os.path.join(work, "bob-tablet"), os.path.join(work, "alice-contacts")
        os.makedirs(contacts); os.makedirs(alice_contacts)
        q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        phone_token, tablet_token = "cd" * 32, "ef" * 32
        subprocess.run([b("e2ee-send"), "keygen", "--user-id", "alice", "--display-name", "Alice", "--out-dir", keys,
                        "--device-token", "ab" * 32, "--topic", TOPIC], **q)
        subprocess.run([b("e2ee-send"), "keygen", "--user-id", "bob", "--device-id", "phone", "--out-dir", keys,
                        "--device-token", phone_token, "--topic", TOPIC], **q)
        # bob's tablet: a second device, signed into bob's list by the phone (which holds bob's user key).
        subprocess.run([b("e2ee-send"), "device", "request", "--user-id", "bob", "--device-id", "tablet", "--out-dir", tablet,
                        "--device-token", tablet_token, "--topic", TOPIC], **q)
        subprocess.run([b("e2ee-send"), "device", "add", "--identity", f"{keys}/bob.identity", "--card", f"{keys}/bob.card.json",
                        "--request", f"{tablet}/bob.tablet.request.json"], **q)
        for folder in (contacts, alice_contacts):
            shutil.copy(os.path.join(keys, "alice.card.json"), folder)
            shutil.copy(os.path.join(keys, "bob.card.json"), folder)
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

        # The mix: episodes of one call each (ring then cancel; cancel before invite; a late invite; answered or
        # declined on bob's tablet; declined by alice as the callee), texts, receipts, duplicates. Ring timeouts are
        # long so decisions do not depend on timing.
        now = int(time.time() * 1000)
        reqs, tablet_reqs, expect_missed, cancel_first = [], [], set(), set()
        # (identity, contacts, requests) batches in order: alice's requests, and every 12 of them the tablet's
        # answers and declines of the calls among them (so a few calls ring at once, sometimes more than two).
        batches, deferred, since = [], [], 0
        alice_id, tablet_id = (f"{keys}/alice.identity", alice_contacts), (f"{tablet}/bob.identity", contacts)
        while len(reqs) + len(tablet_reqs) + len(deferred) < a.pushes:
            if since >= 12 and deferred:
                tablet_reqs += deferred
                batches.append((tablet_id, deferred))
                deferred, since = [], 0
            if not batches or batches[-1][0] != alice_id:
                batches.append((alice_id, []))
            n0 = len(reqs)
            k = rng.randrange(9)
            c = str(uuid.UUID(int=rng.getrandbits(128))).upper()
            if k == 0:
                reqs += [{"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600},
                         {"kind": "cancel", "to": "bob", "call_id": c, "reason": "remoteEnded"}]
                expect_missed.add(c)
            elif k == 1:
                reqs += [{"kind": "cancel", "to": "bob", "call_id": c, "reason": "answeredElsewhere"},
                         {"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600}]
                cancel_first.add(c)
            elif k == 2:
                reqs.append({"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 30, "sent_at_ms": now - 3_600_000})
                expect_missed.add(c)
            elif k == 3:
                reqs += [{"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600},
                         {"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600},
                         {"kind": "cancel", "to": "bob", "call_id": c, "reason": "answeredElsewhere"}]
            elif k == 6:
                # alice declines a call bob placed (from his other device): the phone shows `remote-declined`.
                reqs.append({"kind": "cancel", "to": "bob", "call_id": c, "reason": "declinedElsewhere"})
            elif k == 7:
                # Rings on both of bob's devices; the tablet answers or declines it later: the phone stops ringing.
                reqs.append({"kind": "call", "to": "bob", "call_id": c, "ring_timeout": 3600})
                deferred.append({"kind": "cancel", "to": "bob", "call_id": c,
                                 "reason": rng.choice(["answeredElsewhere", "declinedElsewhere"])})
            elif k == 4:
                reqs.append({"kind": "text", "to": "bob", "thread": "t", "title": "hi", "body": "x" * rng.randrange(500)})
            else:
                reqs.append({"kind": "receipt", "to": "bob", "message_ids": ["%032x" % rng.getrandbits(128)]})
            batches[-1][1].extend(reqs[n0:])
            since += len(reqs) - n0
        if deferred:
            tablet_reqs += deferred
            batches.append((tablet_id, deferred))
        batches = [bt for bt in batches if bt[1]]
        deliver = ["--topic", TOPIC, "--deliver", "--apns-url", f"https://127.0.0.1:{port}", "--apns-ca", f"{tls}/ca.pem",
                   "--apns-key-file", f"{apns}/AuthKey_{KID}.p8", "--apns-key-id", KID, "--apns-team-id", TEAM, "--window", "1"]
        send_codes = []

        def send_all():
            for (ident, cdir), rs in batches:
                p = subprocess.Popen([b("e2ee-send"), "batch", "--identity", ident, "--contacts", cdir] + deliver,
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
                children.append(p)
                p.stdin.write("".join(json.dumps(r) + "\n" for r in rs)); p.stdin.close()
                send_codes.append(p.wait())
        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()

        out, events, state = os.path.join(work, "decisions"), os.path.join(work, "events"), os.path.join(work, "state.sqlite")
        filt = [b("e2ee-filter"), "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts, "--spool", spool,
                "--device-token", phone_token, "--state", state, "--output", out, "--events", events]
        kills, delay = 0, 0.05
        def lines(p):
            return open(p).read().splitlines() if os.path.exists(p) else []
        def phone_records():
            return [r for r in map(json.loads, lines(spool)) if r.get("device_token", "").lower() == phone_token]
        started = time.time()
        while True:
            sender_done = not sender.is_alive()
            before = len(lines(out))
            f = subprocess.Popen(filt, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            children.append(f)
            time.sleep(delay * rng.random() + 0.01)
            f.send_signal(signal.SIGKILL); f.wait(); kills += 1
            delay = 0.3 if len(lines(out)) == before else 0.05
            if sender_done and kills >= a.kills and len(lines(out)) >= len(phone_records()):
                break
            if kills > 2000: raise RuntimeError("no progress")
        if len(send_codes) != len(batches) or any(send_codes): raise RuntimeError(f"e2ee-send exited {send_codes}")
        subprocess.run(filt + ["--exit-at-end"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        gw.send_signal(signal.SIGTERM); gw.wait(timeout=20)

        # Reference: one uninterrupted run over a copy of the same spool.
        crash_seconds = time.time() - started
        ref_out, ref_events = os.path.join(work, "ref-decisions"), os.path.join(work, "ref-events")
        subprocess.run([b("e2ee-filter"), "run", "--identity", f"{keys}/bob.identity", "--contacts", contacts, "--spool", spool,
                        "--device-token", phone_token, "--state", os.path.join(work, "ref.sqlite"), "--output", ref_out,
                        "--events", ref_events, "--exit-at-end"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        spool_seqs = [r["seq"] for r in phone_records()]
        n_spool = sum(1 for _ in lines(spool))
        got = [json.loads(l) for l in lines(out)]
        ref = [json.loads(l) for l in lines(ref_out)]
        ev = [json.loads(l) for l in lines(events)]
        # Call events per call id, in order, without their times (which differ between runs).
        def per_call(evs):
            calls = {}
            for e in evs:
                if e.get("event") == "locked-alert": continue
                calls.setdefault(e.get("call_id", ""), []).append(
                    tuple((k, e.get(k)) for k in ("event", "reason", "handle", "display_name", "by_user", "by_device")))
            return calls
        got_calls, ref_calls = per_call(ev), per_call([json.loads(l) for l in lines(ref_events)])
        differ = sorted(c for c in set(got_calls) | set(ref_calls) if got_calls.get(c) != ref_calls.get(c))
        for c in differ[:10]:
            print(f"  call {c}: killed run {[dict(t)['event'] + '/' + str(dict(t)['reason']) for t in got_calls.get(c, [])]}"
                  f" uninterrupted {[dict(t)['event'] + '/' + str(dict(t)['reason']) for t in ref_calls.get(c, [])]}")
        kinds = {}
        for evs in ref_calls.values():
            for t in evs: kinds[dict(t)["event"]] = kinds.get(dict(t)["event"], 0) + 1
        ringing = {}
        for e in ev:
            if e.get("event") == "ringing": ringing[e["call_id"]] = ringing.get(e["call_id"], 0) + 1
        # A cancel sent before its invite makes a missed call if the spool has it first too (the sender does not
        # promise the order of two pushes; if the invite got there first, it rang and the cancel ended it).
        first = {}
        for d in got:
            c = str(d.get("call_id", "")).upper()
            if c in cancel_first and c not in first: first[c] = d.get("kind")
        expect_missed |= {c for c, kind in first.items() if kind == "call-cancel"}
        reordered = sum(1 for kind in first.values() if kind != "call-cancel")
        missed_seen = {e["call_id"] for e in ev if e.get("event") == "missed"} | {
            str(d.get("call_id", "")).upper() for d in got if d["decision"] == "missed-call"}
        strip = lambda d: {k: v for k, v in d.items() if k not in ("handoff",)}
        checks = [
            # alice's pushes go to bob's phone and tablet; the tablet's (to its own user) to both as well: a message to
            # your own user covers every device, the sender's own included, which silences its echo (README).
            ("every push the senders sent is in the spool", n_spool == 2 * len(reqs) + 2 * len(tablet_reqs)
             and len(spool_seqs) == len(reqs) + len(tablet_reqs), f"{n_spool} records, {len(spool_seqs)} for the phone"),
            ("one decision per spool record, in order", [d["seq"] for d in got] == spool_seqs, f"{len(got)} decisions for {len(spool_seqs)} records"),
            ("decisions equal an uninterrupted run's", [strip(d) for d in got] == [strip(d) for d in ref], ""),
            ("call events equal an uninterrupted run's", not differ and sum(map(len, ref_calls.values())) > 0,
             f"{len(differ)} of {len(ref_calls)} calls differ; uninterrupted: {dict(sorted(kinds.items()))}"),
            ("no call rang twice", all(n == 1 for n in ringing.values()), f"{sum(ringing.values())} ringing events, {len(ringing)} calls"),
            ("no missed call lost", expect_missed <= missed_seen,
             f"{len(expect_missed - missed_seen)} missing of {len(expect_missed)}"
             + (f"; {reordered} cancel-first pairs reached the spool invite first" if reordered else "")),
            ("the filter was killed as often as asked", kills >= a.kills, f"{kills} kills"),
        ]
        for c in sorted(expect_missed - missed_seen)[:10]:
            print(f"  missed call not found: {c}: decisions "
                  f"{[d['decision'] + '/' + d['reason'] for d in got if str(d.get('call_id', '')).upper() == c]}")
        passed = sum(1 for _, c, _ in checks if c)
        for name, c, detail in checks:
            print(f"{'PASS' if c else 'FAIL'}  {name}  {detail}")
        print(f"pipeline-crash: {len(reqs) + len(tablet_reqs)} pushes, {kills} kills, {crash_seconds:.0f} s under kills")
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
