#!/usr/bin/env python3
"""The end-to-end demo: alice calls and texts bob through a local APNs gateway; bob's filter decides each push.

Runs the release binaries from --bin (e2ee-send, e2ee-gateway, e2ee-filter) in a fresh temporary folder (or
--work DIR):

  1. identities: alice (caller) and bob (recipient, with a device token); bob rotates his device key after a copy
     of his OLD card is kept;
  2. an APNs provider key (ES256) for the gateway and the sender;
  3. e2ee-gateway serve: TLS + HTTP/2 on 127.0.0.1, an ephemeral port, pushes appended to a spool file;
  4. e2ee-filter run: bob's device, following the spool, writing decisions and call events;
  5. a scripted mix of pushes delivered over HTTP/2 by e2ee-send (batch --deliver, and deliver for replaying a
     push byte for byte and for a tampered copy);
  6. waits for one decision per push, then SIGTERM to the filter (must exit 0) and the gateway;
  7. prints what the relay and Apple saw next to what the device decided, and checks every decision.

Exit status 0 only if every decision and reason is the expected one, every push carried the same headers (except
apns-id) and the same body length, the filter exited 0 on SIGTERM and no call rang twice. Python 3 standard
library only.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field

TEAM_ID = "TEAM123456"
KEY_ID = "KEY1234567"
TOPIC = "com.example.e2ee"
STEP_TIMEOUT_S = 60  # any single e2ee-send / provider-key run
DECISIONS_TIMEOUT_S = 60  # all decisions written
START_TIMEOUT_S = 30  # the gateway's port file
STOP_TIMEOUT_S = 15  # a child's exit after SIGTERM


class DemoError(Exception):
    """A step failed: the message says which and what to look at."""


@dataclass
class Push:
    """One delivered push and what bob's device must make of it."""

    label: str
    expected: tuple[str, str]  # (decision, reason)
    apns_id: str = ""
    call: str | None = None


@dataclass
class Demo:
    bin: str
    work: str
    started: float = field(default_factory=time.monotonic)
    children: list[subprocess.Popen] = field(default_factory=list)
    pushes: list[Push] = field(default_factory=list)
    call_labels: dict[str, str] = field(default_factory=dict)  # call id (upper) -> C1..C4
    timings: list[tuple[str, float]] = field(default_factory=list)

    # ----- helpers -----

    def path(self, *parts: str) -> str:
        return os.path.join(self.work, *parts)

    def tool(self, name: str) -> str:
        exe = os.path.join(self.bin, name)
        if not os.access(exe, os.X_OK):
            raise DemoError(f"{exe} is missing: build it first (bash scripts/demo.sh builds the release binaries)")
        return exe

    def run(self, name: str, args: list[str], stdin: str | None = None, check: bool = True) -> str:
        """Runs a tool to completion (bounded by STEP_TIMEOUT_S) and returns its stdout."""
        cmd = [self.tool(name)] + args
        try:
            done = subprocess.run(
                cmd, input=stdin, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, cwd=self.work
            )
        except subprocess.TimeoutExpired as error:
            raise DemoError(f"{name} {args[0]} did not finish within {STEP_TIMEOUT_S} s") from error
        if check and done.returncode != 0:
            raise DemoError(
                f"{name} {args[0]} exited {done.returncode}:\n{done.stderr.strip()}\nstdout:\n{done.stdout.strip()}"
            )
        return done.stdout

    def spawn(self, name: str, args: list[str], log: str) -> subprocess.Popen:
        with open(self.path(log), "wb") as out:
            child = subprocess.Popen(
                [self.tool(name)] + args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.work,
                start_new_session=True,
            )
        self.children.append(child)
        return child

    def mark(self, step: str) -> None:
        self.timings.append((step, time.monotonic() - self.started))

    def stop(self, child: subprocess.Popen, name: str) -> int:
        """SIGTERM, wait STOP_TIMEOUT_S, then SIGKILL. Returns the exit status (negative: killed by a signal)."""
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"demo: {name} did not exit {STOP_TIMEOUT_S} s after SIGTERM: killing it", file=sys.stderr)
                child.kill()
                child.wait()
        return child.returncode

    def kill_all(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
                try:
                    child.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass

    # ----- steps -----

    def identities(self) -> None:
        self.device_token = secrets.token_hex(32)
        for folder in ("alice", "bob", "contacts-alice", "contacts-bob", "keys", "run", "run/tls"):
            os.makedirs(self.path(folder), exist_ok=True)
        self.run("e2ee-send", ["keygen", "--user-id", "alice", "--display-name", "Alice", "--out-dir", "alice"])
        self.run(
            "e2ee-send",
            ["keygen", "--user-id", "bob", "--display-name", "Bob", "--out-dir", "bob",
             "--device-token", self.device_token, "--topic", TOPIC],
        )
        shutil.copyfile(self.path("bob", "bob.card.json"), self.path("bob-old.card.json"))
        # rotate keeps the push section of the card it overwrites, so start from bob's current card.
        shutil.copyfile(self.path("bob", "bob.card.json"), self.path("contacts-alice", "bob.card.json"))
        self.run(
            "e2ee-send",
            ["rotate", "--identity", "bob/bob.identity", "--card-out", "contacts-alice/bob.card.json"],
        )
        shutil.copyfile(self.path("alice", "alice.card.json"), self.path("contacts-bob", "alice.card.json"))
        old = json.load(open(self.path("bob-old.card.json")))
        new = json.load(open(self.path("contacts-alice", "bob.card.json")))
        if len(new["device_keys"]) != 2 or new.get("push", {}).get("device_token") != self.device_token:
            raise DemoError("the rotated card of bob should have two device keys and keep the device token")
        self.old_key = old["device_keys"][-1]["key_id"]
        self.new_key = [k for k in new["device_keys"] if "retired_at_ms" not in k][-1]["key_id"]
        self.mark("identities")

    def provider_key(self) -> None:
        self.run("e2ee-gateway", ["provider-key", "--team-id", TEAM_ID, "--key-id", KEY_ID, "--out-dir", "keys"])
        self.p8 = self.path("keys", f"AuthKey_{KEY_ID}.p8")
        self.pub = self.path("keys", f"AuthKey_{KEY_ID}.pub.pem")
        self.mark("provider key")

    def start_gateway(self) -> None:
        port_file = self.path("run", "port")
        self.spool = self.path("run", "spool.jsonl")
        self.gateway = self.spawn(
            "e2ee-gateway",
            ["serve", "--port", "0", "--port-file", port_file, "--tls-dir", self.path("run", "tls"),
             "--topic", TOPIC, "--provider-key", f"{TEAM_ID}:{KEY_ID}:{self.pub}", "--spool", self.spool],
            "gateway.log",
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.gateway.poll() is not None:
                raise DemoError(f"e2ee-gateway exited {self.gateway.returncode} at start: see {self.path('gateway.log')}")
            text = open(port_file).read().strip() if os.path.exists(port_file) else ""
            if text.isdigit():
                self.port = int(text)
                break
            if time.monotonic() > deadline:
                raise DemoError(f"e2ee-gateway wrote no port file within {START_TIMEOUT_S} s: see gateway.log")
            time.sleep(0.05)
        self.mark("gateway listening")

    def start_filter(self) -> None:
        self.filter = self.spawn(
            "e2ee-filter",
            ["run", "--identity", "bob/bob.identity", "--contacts", "contacts-bob", "--spool", self.spool,
             "--output", "decisions.jsonl", "--events", "events.jsonl", "--state", "state.sqlite"],
            "filter.log",
        )
        time.sleep(0.2)
        if self.filter.poll() is not None:
            raise DemoError(f"e2ee-filter exited {self.filter.returncode} at start: see {self.path('filter.log')}")
        self.mark("filter following the spool")

    def delivery_flags(self) -> list[str]:
        # --window 1: one push in flight at a time, so the spool (and the device) sees them in the scripted order.
        return ["--deliver", "--apns-url", f"https://127.0.0.1:{self.port}", "--apns-ca", self.path("run", "tls", "ca.pem"),
                "--apns-key-file", self.p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID, "--window", "1"]

    def send_batch(self, items: list[tuple[Push, dict]]) -> None:
        """Delivers requests with `e2ee-send batch --deliver` and records each push's apns-id."""
        lines = "".join(json.dumps(request) + "\n" for _, request in items)
        out = self.run(
            "e2ee-send",
            ["batch", "--identity", "alice/alice.identity", "--contacts", "contacts-alice", "--topic", TOPIC]
            + self.delivery_flags(),
            stdin=lines,
        )
        self.record_results(out, [push for push, _ in items], "batch")

    def send_lines(self, items: list[tuple[Push, str]]) -> None:
        """Delivers request lines as they are with `e2ee-send deliver`."""
        lines = "".join(line + "\n" for _, line in items)
        out = self.run("e2ee-send", ["deliver"] + self.delivery_flags()[1:], stdin=lines)
        self.record_results(out, [push for push, _ in items], "deliver")

    def record_results(self, out: str, pushes: list[Push], command: str) -> None:
        results = [json.loads(line) for line in out.splitlines() if line.strip()]
        if len(results) != len(pushes):
            raise DemoError(f"e2ee-send {command} printed {len(results)} result lines for {len(pushes)} pushes")
        for push, result in zip(pushes, results):
            if not result.get("ok") or result.get("status") != 200:
                raise DemoError(f"{push.label}: not delivered: {json.dumps(result)}")
            push.apns_id = result["apns_id"].lower()
            self.pushes.append(push)

    def print_request(self, args: list[str]) -> str:
        """One request line as `e2ee-send <kind>` prints it without --deliver."""
        out = self.run(
            "e2ee-send",
            args + ["--identity", "alice/alice.identity", "--contacts", "contacts-alice", "--to", "bob", "--topic", TOPIC],
        )
        return out.strip()

    def deliver_mix(self) -> None:
        c1, c2, c3, c4 = (str(uuid.uuid4()).upper() for _ in range(4))
        self.call_labels = {c1: "C1", c2: "C2", c3: "C3", c4: "C4"}
        text_id = secrets.token_hex(16)
        now_ms = int(time.time() * 1000)
        self.send_batch([
            (Push("call C1", ("ring", "fresh-invite"), call=c1),
             {"kind": "call", "to": "bob", "call_id": c1, "ring_timeout": 30}),
            (Push("text", ("alert", "text")),
             {"kind": "text", "to": "bob", "thread": "lunch", "title": "Lunch", "body": "Noon at the usual place?",
              "message_id": text_id}),
            (Push("receipt for the text", ("silence", "receipt")),
             {"kind": "receipt", "to": "bob", "message_ids": [text_id]}),
            (Push("cancel C1 while it rings", ("silence", "call-cancelled"), call=c1),
             {"kind": "cancel", "to": "bob", "call_id": c1, "reason": "remoteEnded"}),
            (Push("call C2 sent 120 s ago", ("missed-call", "invite-expired"), call=c2),
             {"kind": "call", "to": "bob", "call_id": c2, "ring_timeout": 30, "sent_at_ms": now_ms - 120_000}),
            (Push("call C3", ("ring", "fresh-invite"), call=c3),
             {"kind": "call", "to": "bob", "call_id": c3, "ring_timeout": 30, "video": True}),
            (Push("call C3 again, new message id", ("silence", "duplicate-call"), call=c3),
             {"kind": "call", "to": "bob", "call_id": c3, "ring_timeout": 30, "video": True}),
        ])
        self.mark("batch 1 delivered (7 pushes)")

        replay = self.print_request(["text", "--thread", "lunch", "--body", "See you there."])
        tampered = self.tamper(self.print_request(["text", "--thread", "lunch", "--body", "This will not open."]))
        self.send_lines([
            (Push("text (first copy)", ("alert", "text")), replay),
            (Push("same push replayed byte for byte", ("silence", "replay")), replay),
            (Push("tampered push (1 base64 char)", ("fallback", "open-failed")), tampered),
        ])
        self.mark("deliver: replay and tampered copy (3 pushes)")

        self.send_batch([
            (Push("text sealed to bob's OLD card", ("alert", "text")),
             {"kind": "text", "to": self.path("bob-old.card.json"), "body": "Sent to your previous device key."}),
            (Push("cancel C4 overtakes its invite", ("silence", "cancel-before-invite"), call=c4),
             {"kind": "cancel", "to": "bob", "call_id": c4, "reason": "remoteEnded"}),
            (Push("call C4 arrives after its cancel", ("missed-call", "cancelled-before-invite"), call=c4),
             {"kind": "call", "to": "bob", "call_id": c4, "ring_timeout": 30}),
        ])
        self.mark("batch 2 delivered (3 pushes)")

    @staticmethod
    def tamper(line: str) -> str:
        """Changes one base64 character in the middle of the envelope (inside the ciphertext), same length."""
        request = json.loads(line)
        body = json.loads(request["body"])
        envelope = body["e2ee"]
        header_chars = (43 * 4) // 3 + 4  # past the 43-byte clear header
        index = max(header_chars, len(envelope) // 2)
        old = envelope[index]
        new = "A" if old != "A" else "B"
        changed = envelope[:index] + new + envelope[index + 1:]
        if len(base64.b64decode(changed, validate=True)) != len(base64.b64decode(envelope, validate=True)):
            raise DemoError("tampering changed the envelope length")
        start = request["body"].index(envelope)
        request["body"] = request["body"][:start] + changed + request["body"][start + len(envelope):]
        return json.dumps(request, separators=(",", ":"), sort_keys=True)

    def wait_for_decisions(self) -> list[dict]:
        path = self.path("decisions.jsonl")
        want = len(self.pushes)
        deadline = time.monotonic() + DECISIONS_TIMEOUT_S
        while True:
            lines = []
            if os.path.exists(path):
                lines = [line for line in open(path).read().splitlines() if line.strip()]
            if len(lines) >= want:
                self.mark(f"{want} decisions written")
                return [json.loads(line) for line in lines]
            if self.filter.poll() is not None:
                raise DemoError(f"e2ee-filter exited {self.filter.returncode} early: see {self.path('filter.log')}")
            if time.monotonic() > deadline:
                raise DemoError(
                    f"only {len(lines)} of {want} decisions after {DECISIONS_TIMEOUT_S} s: see "
                    f"{path} and {self.path('filter.log')}"
                )
            time.sleep(0.1)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def report(demo: Demo, spool: list[dict], decisions: list[dict], events: list[dict], filter_status: int,
           gateway_status: int) -> list[str]:
    """Prints the table and the checks; returns the list of failures."""
    failures: list[str] = []
    by_seq = {d["seq"]: d for d in decisions}
    if [r["apns_id"].lower() for r in spool] != [p.apns_id for p in demo.pushes]:
        failures.append("the spool does not hold the delivered pushes in the scripted order (apns-ids differ)")

    head = (f"{'#':>2}  {'push (sender side)':<34} | {'type':<5} {'prio':<4} {'exp':<3} {'topic':<16} {'collapse':<8} "
            f"{'bytes':>5} | {'decision':<11} {'reason':<23} {'kind':<11} {'alert':<28} | ok")
    print()
    print(f"{'':38} | {'what the relay and Apple saw':<48} | {'what the device decided'}")
    print(head)
    print("-" * len(head))
    passed = failed = 0
    for index, push in enumerate(demo.pushes):
        record = spool[index] if index < len(spool) else None
        decision = by_seq.get(record["seq"]) if record else None
        headers = record["headers"] if record else {}
        body = record.get("body") if record else None
        length = len(body.encode()) if body is not None else len(base64.b64decode(record.get("body_base64", ""))) if record else 0
        got = (decision["decision"], decision["reason"]) if decision else ("-", "-")
        alert = ""
        if decision and decision.get("alert") and decision["decision"] in ("alert", "missed-call"):
            a = decision["alert"]
            alert = (a.get("subtitle") + ": " if a.get("subtitle") else "") + a.get("body", "")
        ok = got == push.expected
        passed += ok
        failed += not ok
        if not ok:
            failures.append(
                f"push {index + 1} ({push.label}): expected {push.expected[0]}/{push.expected[1]}, "
                f"got {got[0]}/{got[1]}; spool seq {record['seq'] if record else '-'}, apns-id {push.apns_id}"
            )
        print(
            f"{index + 1:>2}  {cut(push.label, 34):<34} | {headers.get('apns-push-type', '-'):<5} "
            f"{headers.get('apns-priority', '-'):<4} {headers.get('apns-expiration', '-'):<3} "
            f"{cut(headers.get('apns-topic', '-'), 16):<16} {('yes' if 'apns-collapse-id' in headers else 'no'):<8} "
            f"{length:>5} | {got[0]:<11} {cut(got[1], 23):<23} {(decision or {}).get('kind') or '-':<11} "
            f"{cut(alert, 28):<28} | {'ok' if ok else 'FAIL (want ' + '/'.join(push.expected) + ')'}"
        )
    print()

    header_sets = {json.dumps({k: v for k, v in r["headers"].items() if k != "apns-id"}, sort_keys=True) for r in spool}
    lengths = sorted({len(r["body"].encode()) if "body" in r else len(base64.b64decode(r["body_base64"])) for r in spool})
    same_headers = len(header_sets) == 1
    print(f"headers identical on every spool row (except apns-id): {'yes' if same_headers else 'NO'}"
          + (f" ({next(iter(header_sets))})" if same_headers else f": {len(header_sets)} different sets"))
    print(f"body lengths seen by the relay: {{{', '.join(str(n) for n in lengths)}}}")
    if not same_headers:
        failures.append(f"the spool rows carry {len(header_sets)} different header sets (apns-id aside)")
    if len(lengths) != 1:
        failures.append(f"the spool rows have {len(lengths)} different body lengths: {lengths}")
    if len(spool) != len(demo.pushes):
        failures.append(f"the spool holds {len(spool)} records for {len(demo.pushes)} delivered pushes")
    if len(decisions) != len(demo.pushes):
        failures.append(f"decisions.jsonl holds {len(decisions)} lines for {len(demo.pushes)} pushes")

    print("call events (events.jsonl):")
    rings: dict[str, int] = {}
    for event in events:
        call = demo.call_labels.get(event.get("callID", "").upper(), event.get("callID", "?")[:8])
        if event.get("event") == "ringing":
            rings[call] = rings.get(call, 0) + 1
        extra = ", ".join(f"{k}={event[k]}" for k in ("reason", "displayName") if event.get(k))
        print(f"  - {call}: {event.get('event')}" + (f" ({extra})" if extra else ""))
    if not events:
        print("  (none)")
    for call, count in rings.items():
        if count > 1:
            failures.append(f"call {call} rang {count} times")
    print()

    print(f"e2ee-filter exit status after SIGTERM: {filter_status}; e2ee-gateway: {gateway_status}")
    if filter_status != 0:
        failures.append(f"e2ee-filter exited {filter_status} on SIGTERM (want 0): see {demo.path('filter.log')}")
    print(f"{passed} passed, {failed} failed")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="the folder holding the release e2ee-send, e2ee-gateway, e2ee-filter")
    parser.add_argument("--work", help="the work folder (default: a fresh temporary folder, removed on success)")
    args = parser.parse_args()

    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="e2ee-demo-")
    os.makedirs(work, exist_ok=True)
    if os.listdir(work):
        print(f"demo: error: the work folder {work} is not empty; pass an empty or new folder", file=sys.stderr)
        return 64
    demo = Demo(bin=os.path.abspath(args.bin), work=work)
    print(f"demo: work folder {work}", file=sys.stderr)
    failures: list[str] = []
    try:
        demo.identities()
        demo.provider_key()
        demo.start_gateway()
        demo.start_filter()
        demo.deliver_mix()
        decisions = demo.wait_for_decisions()
        filter_status = demo.stop(demo.filter, "e2ee-filter")
        gateway_status = demo.stop(demo.gateway, "e2ee-gateway")
        demo.mark("filter and gateway stopped")
        decisions = [json.loads(line) for line in open(demo.path("decisions.jsonl")).read().splitlines() if line.strip()]
        spool = [json.loads(line) for line in open(demo.spool).read().splitlines() if line.strip()]
        events_path = demo.path("events.jsonl")
        events = []
        if os.path.exists(events_path):
            events = [json.loads(line) for line in open(events_path).read().splitlines() if line.strip()]
        failures = report(demo, spool, decisions, events, filter_status, gateway_status)
    except DemoError as error:
        failures = [str(error)]
    except KeyboardInterrupt:
        failures = ["interrupted"]
    finally:
        demo.kill_all()

    print("timing: " + ", ".join(f"{step} {at:.1f} s" for step, at in demo.timings))
    print(f"total: {time.monotonic() - demo.started:.1f} s")
    if failures:
        print("\nDEMO FAILED:", file=sys.stderr)
        for failure in failures:
            print(f"  - {failure}", file=sys.stderr)
        print(f"the work folder is kept: {work} (gateway.log, filter.log, run/spool.jsonl, decisions.jsonl, "
              "events.jsonl)", file=sys.stderr)
        return 1
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print("demo: every decision matched", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
