#!/usr/bin/env python3
"""The end-to-end demo: alice calls and texts bob, who has a phone and a tablet, through the push relay and a local
APNs gateway.

Runs the release binaries from --bin (e2ee-send, e2ee-relay, e2ee-gateway, e2ee-filter) in a fresh temporary folder
(or --work DIR):

  1. identities: alice (one device) and bob's phone (keygen: it holds bob's user key); bob rotates the phone's
     device key after a copy of his OLD list is kept; bob's tablet makes a device request and the phone signs it in,
     then the tablet moves to the post-quantum X-Wing suite (rotate --suite xwing) and the phone signs its new key in;
  2. an APNs provider key (ES256) for the gateway and the senders;
  3. e2ee-gateway serve: TLS + HTTP/2 on 127.0.0.1, an ephemeral port, every push appended to one spool file;
     e2ee-relay serve (embedded SQLite, a throwaway loopback CA, an ephemeral port) holding the APNs key and
     delivering to that gateway; alice and bob publish their lists (e2ee-send relay publish), every device registers
     its push address (relay register) and each user sets a delivery token (relay tokens) handed to the other;
  4. three e2ee-filter run daemons on that spool, each taking only its own device token: bob's phone, bob's
     tablet, alice's phone;
  5. a scripted mix of pushes sent by e2ee-send --relay (the senders hold no APNs key; each request is submitted,
     then the demo waits for the relay to deliver it, so every device sees the scripted order): every message to
     bob fans out to both of his devices; the phone answers one call (e2ee-filter answer | e2ee-send batch) and the tablet stops; the tablet
     declines another and the phone stops while alice's phone learns it was declined (a device's cancel to its own user
     goes to every device of it, the sender's included, which silences its echo: own-echo); bob removes the tablet and
     the next text reaches the phone only; a copy of bob's list with an injected device is refused by the sender;
     the replayed and tampered copies are injected straight into the gateway (an attacker on the APNs path);
  6. waits for one decision per push on the device it was addressed to, then SIGTERM to every filter (each must
     exit 0), the relay (must exit 0) and the gateway;
  7. prints what the relay and Apple saw next to what each device decided, and checks every decision.

Exit status 0 only if every decision and reason is the expected one, every push carried the same headers (except
apns-id) and one body length per crypto suite (classical 2,233, X-Wing 4,093), every filter exited 0 on SIGTERM, no call rang twice on a device, and the relay's
metrics count one APNs 200 per push it accepted. Python 3
standard library only.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, field

TEAM_ID = "TEAM123456"
KEY_ID = "KEY1234567"
TOPIC = "com.example.e2ee"
DEVICES = ("bob/phone", "bob/tablet", "alice/phone")
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
    device: str = ""  # user/device it was addressed to
    sender: str = ""  # user/device that sent it
    relayed: bool = False  # submitted to the relay (else injected straight into the gateway)


@dataclass
class Demo:
    bin: str
    work: str
    started: float = field(default_factory=time.monotonic)
    children: list[subprocess.Popen] = field(default_factory=list)
    pushes: list[Push] = field(default_factory=list)
    call_labels: dict[str, str] = field(default_factory=dict)  # call id (upper) -> C1..C5
    actions: list[tuple[str, str, str, str]] = field(default_factory=list)
    refusals: list[tuple[str, str, tuple[int, str]]] = field(default_factory=list)
    timings: list[tuple[str, float]] = field(default_factory=list)

    # ----- helpers -----

    def path(self, *parts: str) -> str:
        return os.path.join(self.work, *parts)

    def tool(self, name: str) -> str:
        exe = os.path.join(self.bin, name)
        if not os.access(exe, os.X_OK):
            raise DemoError(f"{exe} is missing: build it first (bash scripts/demo.sh builds the release binaries)")
        return exe

    def run(self, name: str, args: list[str], stdin: str | None = None, check: bool = True, status: bool = False):
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
        if status:
            return done.returncode, done.stderr
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
        self.tokens = {dev: secrets.token_hex(32) for dev in DEVICES}
        for folder in ("alice", "bob-phone", "bob-tablet", "contacts-alice", "contacts-bob", "keys", "run", "run/tls",
                       "injected"):
            os.makedirs(self.path(folder), exist_ok=True)
        self.run("e2ee-send", ["keygen", "--user-id", "alice", "--device-id", "phone", "--display-name", "Alice",
                               "--out-dir", "alice", "--device-token", self.tokens["alice/phone"], "--topic", TOPIC])
        self.run("e2ee-send", ["keygen", "--user-id", "bob", "--device-id", "phone", "--display-name", "Bob",
                               "--out-dir", "bob-phone", "--device-token", self.tokens["bob/phone"], "--topic", TOPIC])
        shutil.copyfile(self.path("bob-phone", "bob.card.json"), self.path("bob-old.card.json"))
        # The phone holds bob's user key: rotating re-signs bob's list (version 2) with the new key.
        self.run("e2ee-send", ["rotate", "--identity", "bob-phone/bob.identity"])
        # The tablet asks to be signed in; the phone signs it in (version 3).
        self.run("e2ee-send", ["device", "request", "--user-id", "bob", "--device-id", "tablet", "--display-name", "Bob",
                               "--out-dir", "bob-tablet", "--device-token", self.tokens["bob/tablet"], "--topic", TOPIC])
        self.run("e2ee-send", ["device", "add", "--identity", "bob-phone/bob.identity", "--card", "bob-phone/bob.card.json",
                               "--request", "bob-tablet/bob.tablet.request.json"])
        # The tablet moves to the post-quantum X-Wing suite (a rotation, its X25519 key revoked at once); the phone
        # signs its new key in (version 4, a format-3 list: the phone stays on the classical suite).
        self.run("e2ee-send", ["rotate", "--identity", "bob-tablet/bob.identity", "--card", "bob-phone/bob.card.json",
                               "--suite", "xwing", "--grace-hours", "0"])
        self.run("e2ee-send", ["device", "add", "--identity", "bob-phone/bob.identity", "--card", "bob-phone/bob.card.json",
                               "--request", "bob-tablet/bob.tablet.request.json"])
        self.publish_bob()
        shutil.copyfile(self.path("bob-phone", "bob.card.json"), self.path("bob-v4.card.json"))
        shutil.copyfile(self.path("alice", "alice.card.json"), self.path("contacts-bob", "alice.card.json"))
        shutil.copyfile(self.path("alice", "alice.card.json"), self.path("contacts-alice", "alice.card.json"))
        old = json.load(open(self.path("bob-old.card.json")))
        new = json.load(open(self.path("contacts-alice", "bob.card.json")))
        devices = {d["device_id"]: d for d in new["devices"]}
        if new["list_version"] != 4 or sorted(devices) != ["phone", "tablet"]:
            raise DemoError(f"bob's list should be version 4 with phone and tablet, got {new['list_version']} {sorted(devices)}")
        suites = {name: [k.get("suite", 1) for k in d["device_keys"]] for name, d in devices.items()}
        if new["version"] != 3 or suites["tablet"] != [2] or suites["phone"] != [1, 1]:
            raise DemoError(f"bob's list should be format 3 with an X-Wing tablet and a classical phone, got {suites}")
        # docs/PROTOCOL.md §11.1: an APNs push address is {"service": "apns", "address": "<topic>/<device token>"}.
        phone_push = devices["phone"].get("push") or {}
        expected_address = f"{TOPIC}/{self.tokens['bob/phone']}".lower()
        if (len(devices["phone"]["device_keys"]) != 2 or phone_push.get("service") != "apns"
                or phone_push.get("address", "").lower() != expected_address):
            raise DemoError("bob's phone should have two device keys after rotating and keep its device token")
        self.old_key = old["devices"][0]["device_keys"][-1]["key_id"]
        self.fingerprint = self.run("e2ee-send", ["device", "list", "--card", "contacts-alice/bob.card.json"])
        self.mark("identities (bob: classical phone + X-Wing tablet, list v4)")

    def publish_bob(self) -> None:
        """bob's phone publishes his current list to the relay (once it runs); cards stay for the filters."""
        for folder in ("contacts-alice", "contacts-bob"):
            shutil.copyfile(self.path("bob-phone", "bob.card.json"), self.path(folder, "bob.card.json"))
        if getattr(self, "relay_url", None):
            self.run("e2ee-send", ["relay", "publish", "--card", "bob-phone/bob.card.json"] + self.relay_flags())

    def relay_flags(self) -> list[str]:
        return ["--relay", self.relay_url, "--relay-ca", self.path("run", "relay-tls", "ca.pem")]

    def start_relay(self) -> None:
        """e2ee-relay serve in front of the gateway; lists, push addresses and delivery tokens go through it."""
        port_file = self.path("run", "relay.port")
        self.relay = self.spawn(
            "e2ee-relay",
            ["serve", "--database", self.path("run", "relay.sqlite"), "--self-signed-tls-dir",
             self.path("run", "relay-tls"), "--port", "0", "--port-file", port_file,
             "--apns-url", f"https://127.0.0.1:{self.port}", "--apns-ca", self.path("run", "tls", "ca.pem"),
             "--apns-key-file", self.p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID, "--apns-topic", TOPIC],
            "relay.log",
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.relay.poll() is not None:
                raise DemoError(f"e2ee-relay exited {self.relay.returncode} at start: see {self.path('relay.log')}")
            text = open(port_file).read().strip() if os.path.exists(port_file) else ""
            if text.isdigit():
                self.relay_url = f"https://127.0.0.1:{int(text)}"
                break
            if time.monotonic() > deadline:
                raise DemoError(f"e2ee-relay wrote no port file within {START_TIMEOUT_S} s: see relay.log")
            time.sleep(0.05)
        self.mark("relay listening")
        # Each user publishes its list; each device registers its push address (signed by its device key).
        self.publish_bob()
        self.run("e2ee-send", ["relay", "publish", "--card", "alice/alice.card.json"] + self.relay_flags())
        for dev in DEVICES:
            user = dev.split("/")[0]
            self.run("e2ee-send", ["relay", "register", "--identity", f"{self.identity_folder(dev)}/{user}.identity",
                                   "--device-token", self.tokens[dev], "--topic", TOPIC] + self.relay_flags())
        # Each user sets a delivery token and hands it to its contacts (here: a file copy, mode 0600); bob's own
        # devices send to bob too (the answered/declined cancels), so they hold bob's token as well.
        for user, folder, contacts in (("bob", "bob-phone", ["contacts-alice", "contacts-bob"]),
                                       ("alice", "alice", ["contacts-bob"])):
            token = self.path(folder, f"{user}.delivery-token")
            self.run("e2ee-send", ["relay", "tokens", "--identity", f"{folder}/{user}.identity", "--token-file", token,
                                   "--create"] + self.relay_flags())
            for target in contacts:
                copy = self.path(target, f"{user}.delivery-token")
                shutil.copyfile(token, copy)
                os.chmod(copy, 0o600)
        self.mark("lists published, 3 push addresses registered, delivery tokens handed over")

    def relay_metrics(self) -> dict[str, float]:
        """GET /metrics from the relay, over TLS with its loopback CA: {"name{labels}": value}."""
        context = ssl.create_default_context(cafile=self.path("run", "relay-tls", "ca.pem"))
        with urllib.request.urlopen(self.relay_url + "/metrics", context=context, timeout=10) as answer:
            text = answer.read().decode()
        metrics: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    metrics[name] = float(value)
                except ValueError:
                    pass
        return metrics

    def wait_in_spool(self, apns_ids: list[str], what: str) -> None:
        """Waits until the relay has delivered these pushes to the gateway (they are in the spool)."""
        deadline = time.monotonic() + DECISIONS_TIMEOUT_S
        want = {a.lower() for a in apns_ids}
        while True:
            seen = set()
            if os.path.exists(self.spool):
                for line in open(self.spool).read().splitlines():
                    if line.strip():
                        try:
                            seen.add(json.loads(line)["apns_id"].lower())
                        except ValueError:
                            pass  # a line being written
            if want <= seen:
                return
            if self.relay.poll() is not None:
                raise DemoError(f"e2ee-relay exited {self.relay.returncode}: see relay.log")
            if time.monotonic() > deadline:
                raise DemoError(f"{what}: the relay delivered {len(want & seen)} of {len(want)} pushes within "
                                f"{DECISIONS_TIMEOUT_S} s: see relay.log")
            time.sleep(0.02)

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

    def start_filters(self) -> None:
        self.filters: dict[str, subprocess.Popen] = {}
        for dev in DEVICES:
            user, name = dev.split("/")
            folder = self.identity_folder(dev)
            contacts = "contacts-alice" if user == "alice" else "contacts-bob"
            tag = dev.replace("/", "-")
            self.filters[dev] = self.spawn(
                "e2ee-filter",
                ["run", "--identity", f"{folder}/{user}.identity", "--contacts", contacts, "--spool", self.spool,
                 "--device-token", self.tokens[dev], "--output", f"{tag}.decisions.jsonl",
                 "--events", f"{tag}.events.jsonl", "--state", f"{tag}.sqlite"],
                f"{tag}.filter.log",
            )
        time.sleep(0.3)
        for dev, child in self.filters.items():
            if child.poll() is not None:
                raise DemoError(f"e2ee-filter ({dev}) exited {child.returncode} at start: see its .filter.log")
        self.mark("3 filters following the spool")

    @staticmethod
    def identity_folder(dev: str) -> str:
        return {"alice/phone": "alice", "bob/phone": "bob-phone", "bob/tablet": "bob-tablet"}[dev]

    def delivery_flags(self) -> list[str]:
        # --window 1: one push in flight at a time, so the spool (and the devices) see them in the scripted order.
        return ["--deliver", "--apns-url", f"https://127.0.0.1:{self.port}", "--apns-ca", self.path("run", "tls", "ca.pem"),
                "--apns-key-file", self.p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID, "--window", "1"]

    def send_batch(self, items: list[tuple[str, dict, dict[str, tuple[str, str]]]], sender: str = "alice/phone",
                   extra: list[str] | None = None) -> None:
        """Sends requests with `e2ee-send batch --relay`; `items` are (label, request, expected per device).

        One request per run, then the demo waits until the relay has delivered its pushes: the relay delivers
        concurrently, so this keeps each device's pushes in the scripted order."""
        user = sender.split("/")[0]
        for label, request, expected in items:
            out = self.run(
                "e2ee-send",
                ["batch", "--identity", f"{self.identity_folder(sender)}/{user}.identity",
                 "--contacts", f"contacts-{user}"] + (extra or []) + self.relay_flags(),
                stdin=json.dumps(request) + "\n",
            )
            before = len(self.pushes)
            self.record_results(out, [(label, expected, request)], "batch --relay", sender)
            self.wait_in_spool([p.apns_id for p in self.pushes[before:]], label)

    def send_lines(self, items: list[tuple[str, str, dict[str, tuple[str, str]]]]) -> None:
        """Delivers request lines as they are with `e2ee-send deliver` (one line per device)."""
        lines = "".join(line + "\n" for _, line, _ in items)
        out = self.run("e2ee-send", ["deliver"] + self.delivery_flags()[1:], stdin=lines)
        results = [json.loads(line) for line in out.splitlines() if line.strip()]
        if len(results) != len(items):
            raise DemoError(f"e2ee-send deliver printed {len(results)} result lines for {len(items)} pushes")
        for (label, line, expected), result in zip(items, results):
            device = "bob/" + json.loads(line)["device"]
            self.add_push(label, device, expected[device], result, "alice/phone", None)

    def record_results(self, out: str, items: list[tuple[str, dict[str, tuple[str, str]], dict]], command: str,
                       sender: str) -> None:
        results = [json.loads(line) for line in out.splitlines() if line.strip()]
        want = sum(len(expected) for _, expected, _ in items)
        if len(results) != want:
            raise DemoError(f"e2ee-send {command} printed {len(results)} result lines for {want} pushes: {out}")
        index = 0
        for label, expected, request in items:
            for _ in range(len(expected)):
                result = results[index]
                index += 1
                device = request["to"].split("/")[-1].replace(".card.json", "") if "/" in request["to"] else request["to"]
                device = f"{device}/{result.get('device')}"
                if device not in expected:
                    raise DemoError(f"{label}: a push went to {device}, which should get nothing: {json.dumps(result)}")
                self.add_push(label, device, expected[device], result, sender, request.get("call_id"))

    def add_push(self, label: str, device: str, expected: tuple[str, str], result: dict, sender: str,
                 call: str | None) -> None:
        # Through the relay: accepted (202) with the relay's push id, which is the apns-id it delivers with.
        # Straight to the gateway (`e2ee-send deliver`): APNs' 200.
        relayed = result.get("relay_status") == 202 and result.get("relay_push_id") == result.get("apns_id")
        if not result.get("ok") or not (relayed or result.get("status") == 200):
            raise DemoError(f"{label} → {device}: not accepted: {json.dumps(result)}")
        self.pushes.append(Push(label, expected, result["apns_id"].lower(), call, device, sender, relayed))

    def print_request(self, args: list[str]) -> list[str]:
        """The request lines `e2ee-send <kind>` prints without --deliver: one per device of bob's list."""
        out = self.run(
            "e2ee-send",
            args + ["--identity", "alice/alice.identity", "--contacts", "contacts-alice", "--to", "bob"],
        )
        return [line for line in out.splitlines() if line.strip()]

    def user_action(self, device: str, action: str, call: str) -> None:
        """`e2ee-filter answer|decline` on one device, piped into `e2ee-send batch` from that device."""
        user = device.split("/")[0]
        folder = self.identity_folder(device)
        tag = device.replace("/", "-")
        lines = self.run(
            "e2ee-filter",
            [action, "--identity", f"{folder}/{user}.identity", "--contacts", "contacts-bob", "--state", f"{tag}.sqlite",
             "--call-id", call],
        )
        self.actions.append((device, action, self.call_labels[call.upper()], lines.strip()))
        return lines

    def deliver_mix(self) -> None:
        c1, c2, c3, c4, c5 = (str(uuid.uuid4()).upper() for _ in range(5))
        self.call_labels = {c1: "C1", c2: "C2", c3: "C3", c4: "C4", c5: "C5"}
        both = lambda d, r: {"bob/phone": (d, r), "bob/tablet": (d, r)}  # noqa: E731
        text_id = secrets.token_hex(16)
        now_ms = int(time.time() * 1000)
        self.send_batch([
            ("call C1", {"kind": "call", "to": "bob", "call_id": c1, "ring_timeout": 60}, both("ring", "fresh-invite")),
        ])
        self.wait_for("bob/phone", 1, "C1 ringing on bob's phone")
        self.wait_for("bob/tablet", 1, "C1 ringing on bob's tablet")
        # bob answers on the phone: the phone's filter records it and prints the cancel for bob's other devices.
        lines = self.user_action("bob/phone", "answer", c1)
        # The cancel goes to every device of bob, the phone included (the relay cannot tell which one answered):
        # the phone silences its own echo.
        self.send_batch([("phone answered C1", json.loads(line), {"bob/phone": ("silence", "own-echo"),
                                                                 "bob/tablet": ("silence", "answered-elsewhere")})
                         for line in lines.splitlines() if line.strip()], sender="bob/phone")
        self.mark("C1 answered on the phone")

        self.send_batch([
            ("text", {"kind": "text", "to": "bob", "thread": "lunch", "title": "Lunch", "body": "Noon at the usual place?",
                      "message_id": text_id}, both("alert", "text")),
            ("receipt for the text", {"kind": "receipt", "to": "bob", "message_ids": [text_id]}, both("silence", "receipt")),
            ("alice hangs up C1", {"kind": "cancel", "to": "bob", "call_id": c1, "reason": "remoteEnded"},
             {"bob/phone": ("silence", "call-cancelled"), "bob/tablet": ("silence", "cancel-for-ended-call")}),
            ("call C2 sent 120 s ago", {"kind": "call", "to": "bob", "call_id": c2, "ring_timeout": 30,
                                        "sent_at_ms": now_ms - 120_000}, both("missed-call", "invite-expired")),
            ("call C3", {"kind": "call", "to": "bob", "call_id": c3, "ring_timeout": 60, "video": True},
             both("ring", "fresh-invite")),
            ("call C3 again, new message id", {"kind": "call", "to": "bob", "call_id": c3, "ring_timeout": 60,
                                               "video": True}, both("silence", "duplicate-call")),
        ])
        self.mark("batch 1 delivered")
        self.wait_for("bob/tablet", len([p for p in self.pushes if p.device == "bob/tablet"]), "batch 1 on the tablet")
        # bob declines C3 on the tablet: his phone stops, alice's phone learns the callee declined.
        lines = self.user_action("bob/tablet", "decline", c3)
        requests = [json.loads(line) for line in lines.splitlines() if line.strip()]
        self.send_batch(
            [("tablet declined C3", r, {"bob/phone": ("silence", "declined-elsewhere"),
                                         "bob/tablet": ("silence", "own-echo")} if r["to"] == "bob"
              else {"alice/phone": ("silence", "declined-by-callee")}) for r in requests],
            sender="bob/tablet",
        )
        self.mark("C3 declined on the tablet")

        replay = self.print_request(["text", "--thread", "lunch", "--body", "See you there."])
        tampered = [self.tamper(line) for line in self.print_request(["text", "--thread", "lunch", "--body", "No."])]
        # An attacker on the APNs path (who holds an APNs key, or replays what it saw): these go straight into the
        # gateway with `e2ee-send deliver`, not through the relay.
        self.send_lines(
            [("text (first copy, direct)", line, both("alert", "text")) for line in replay]
            + [("same push replayed (direct)", line, both("silence", "replay")) for line in replay]
            + [("tampered push (direct, 1 b64 char)", line, both("fallback", "open-failed")) for line in tampered]
        )
        self.mark("deliver: replay and tampered copies")

        # bob's OLD list (version 1: the phone only, its old key): alice has seen version 4, so her sender refuses it
        # as a rollback; a sender that never saw a newer list (fresh pins) uses it, and the old key still opens.
        refused = self.run("e2ee-send", ["text", "--identity", "alice/alice.identity", "--to", self.path("bob-old.card.json"),
                                         "--body", "rolled back", "--contacts", "contacts-alice"] + self.relay_flags(),
                           check=False, status=True)
        self.refusals.append(("bob's old list (v1) after v4", "older than version 4", refused))
        self.send_batch([
            ("text sealed to bob's OLD key", {"kind": "text", "to": self.path("bob-old.card.json"),
                                              "body": "Sent to your previous device key."},
             {"bob-old/phone": ("alert", "text")}),
        ], extra=["--pins", self.path("run", "fresh-pins.json")])
        self.send_batch([
            ("cancel C4 overtakes its invite", {"kind": "cancel", "to": "bob", "call_id": c4, "reason": "remoteEnded"},
             both("silence", "cancel-before-invite")),
            ("call C4 arrives after its cancel", {"kind": "call", "to": "bob", "call_id": c4, "ring_timeout": 30},
             both("missed-call", "cancelled-before-invite")),
        ])
        self.mark("batch 2 delivered")

        # bob lost his tablet: the phone removes it (version 5); the next text reaches the phone only.
        self.run("e2ee-send", ["device", "remove", "--identity", "bob-phone/bob.identity", "--card", "bob-phone/bob.card.json",
                               "--device-id", "tablet"])
        self.publish_bob()
        self.send_batch([
            ("text after the tablet was removed", {"kind": "text", "to": "bob", "body": "Only your phone sees this."},
             {"bob/phone": ("alert", "text")}),
        ])
        # Whoever serves lists injects a device of its own into bob's list: the sender refuses it.
        # (The removed tablet's entry, renamed: its certificate names "tablet", so it signs nothing in as "ghost".)
        card = json.load(open(self.path("contacts-alice", "bob.card.json")))
        ghost = [d for d in json.load(open(self.path("bob-v4.card.json")))["devices"] if d["device_id"] == "tablet"][0]
        ghost["device_id"] = "ghost"
        card["devices"].append(ghost)
        # The tablet's key is an X-Wing key, which only a version-3 list can hold: the injector says version 3 (or
        # the list is refused as malformed before its certificates are checked).
        card["version"] = 3
        with open(self.path("injected", "bob.card.json"), "w") as out:
            json.dump(card, out, indent=2, sort_keys=True)
        refused = self.run("e2ee-send", ["text", "--identity", "alice/alice.identity", "--to",
                                         self.path("injected", "bob.card.json"), "--body", "to a ghost",
                                         "--contacts", "contacts-alice"] + self.relay_flags(),
                           check=False, status=True)
        self.refusals.append(("bob's list with an injected device", "did not sign in", refused))
        self.mark("tablet removed; injected list refused")

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

    def decisions_of(self, device: str) -> list[dict]:
        path = self.path(device.replace("/", "-") + ".decisions.jsonl")
        if not os.path.exists(path):
            return []
        return [json.loads(line) for line in open(path).read().splitlines() if line.strip()]

    def wait_for(self, device: str, want: int, what: str) -> list[dict]:
        deadline = time.monotonic() + DECISIONS_TIMEOUT_S
        while True:
            decisions = self.decisions_of(device)
            if len(decisions) >= want:
                return decisions
            child = self.filters[device]
            if child.poll() is not None:
                raise DemoError(f"e2ee-filter ({device}) exited {child.returncode} early: see its .filter.log")
            if time.monotonic() > deadline:
                raise DemoError(f"{what}: only {len(decisions)} of {want} decisions after {DECISIONS_TIMEOUT_S} s")
            time.sleep(0.05)

    def wait_for_decisions(self) -> None:
        for dev in DEVICES:
            self.wait_for(dev, len([p for p in self.pushes if self.device_of(p) == dev]), f"decisions of {dev}")
        self.mark(f"{len(self.pushes)} decisions written")

    @staticmethod
    def device_of(push: "Push") -> str:
        return "bob/phone" if push.device == "bob-old/phone" else push.device


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def report(demo: Demo, spool: list[dict], statuses: dict[str, int], gateway_status: int, relay_status: int,
           metrics: dict[str, float]) -> list[str]:
    """Prints the table and the checks; returns the list of failures."""
    failures: list[str] = []
    decisions = {dev: {d["seq"]: d for d in demo.decisions_of(dev)} for dev in DEVICES}
    # Pushes to different devices may reach the spool in either order (fan-out); each device's must be in order.
    # A push replayed byte for byte carries the same apns-id: its copies are matched in spool order.
    queues: dict[str, list[dict]] = {}
    for r in spool:
        queues.setdefault(r["apns_id"].lower(), []).append(r)
    records = [queues[p.apns_id].pop(0) if queues.get(p.apns_id) else None for p in demo.pushes]
    device_of_token = {token: dev for dev, token in demo.tokens.items()}
    for dev in DEVICES:
        got_order = [r["apns_id"].lower() for r in spool if device_of_token.get(r["device_token"].lower()) == dev]
        want_order = [p.apns_id for p in demo.pushes if demo.device_of(p) == dev]
        if got_order != want_order:
            failures.append(f"the spool does not hold {dev}'s pushes in the scripted order: spool "
                            f"{[a[:8] for a in got_order]}, sent {[a[:8] for a in want_order]}")

    print()
    print("bob's device list as alice's sender shows it (e2ee-send device list):")
    for line in demo.fingerprint.splitlines():
        print(f"  {line}")
    head = (f"{'#':>2}  {'push (sender side)':<33} {'to device':<12} | {'type':<5} {'prio':<4} {'exp':<3} "
            f"{'collapse':<8} {'bytes':>5} | {'decision':<11} {'reason':<22} {'from':<11} | ok")
    print()
    print(f"{'':50} | {'what the relay and Apple saw':<30} | {'what that device decided'}")
    print(head)
    print("-" * len(head))
    passed = failed = 0
    for index, push in enumerate(demo.pushes):
        record = records[index]
        device = demo.device_of(push)
        decision = decisions[device].get(record["seq"]) if record else None
        headers = record["headers"] if record else {}
        body = record.get("body") if record else None
        length = len(body.encode()) if body is not None else len(base64.b64decode(record.get("body_base64", ""))) if record else 0
        got = (decision["decision"], decision["reason"]) if decision else ("-", "-")
        # The decision names the sending device (from the signing key id, via the sender's device list).
        sent_by = (decision or {}).get("sender_device")
        sender = f"{push.sender.split('/')[0]}/{sent_by}" if sent_by else "-"
        ok = got == push.expected and (sent_by is None or sent_by == push.sender.split("/")[1])
        passed += ok
        failed += not ok
        if not ok:
            failures.append(
                f"push {index + 1} ({push.label} → {push.device}): expected {push.expected[0]}/{push.expected[1]}, "
                f"got {got[0]}/{got[1]} from device {sent_by}; spool seq {record['seq'] if record else '-'}, apns-id {push.apns_id}"
            )
        print(
            f"{index + 1:>2}  {cut(push.label, 33):<33} {cut(push.device, 12):<12} | {headers.get('apns-push-type', '-'):<5} "
            f"{headers.get('apns-priority', '-'):<4} {headers.get('apns-expiration', '-'):<3} "
            f"{('yes' if 'apns-collapse-id' in headers else 'no'):<8} "
            f"{length:>5} | {got[0]:<11} {cut(got[1], 22):<22} {cut(sender, 11):<11} | "
            f"{'ok' if ok else 'FAIL (want ' + '/'.join(push.expected) + ')'}"
        )
    print()
    for dev in DEVICES:
        extra = set(decisions[dev]) - {r["seq"] for r, p in zip(records, demo.pushes)
                                       if r is not None and demo.device_of(p) == dev}
        if extra:
            failures.append(f"{dev} decided {len(extra)} pushes addressed to other devices")

    print("user actions (e2ee-filter answer|decline, piped into e2ee-send batch on that device):")
    for device, action, call, lines in demo.actions:
        print(f"  - {device} {action}s {call}: prints {len(lines.splitlines())} cancel line(s) to send")
    print("refused by the sender (nothing sent):")
    for label, code, (status, stderr) in demo.refusals:
        ok = status == 76 and code in stderr
        print(f"  - {label}: exit {status}, {'ok' if ok else 'FAIL'}: {cut(stderr.strip().splitlines()[-1] if stderr.strip() else '', 110)}")
        if not ok:
            failures.append(f"{label}: expected exit 76 saying '{code}', got exit {status}: {stderr.strip()}")
    print()

    header_sets = {json.dumps({k: v for k, v in r["headers"].items() if k != "apns-id"}, sort_keys=True) for r in spool}
    lengths = sorted({len(r["body"].encode()) if "body" in r else len(base64.b64decode(r["body_base64"])) for r in spool})

    def suite_of(record: dict) -> str:
        """The envelope's suite (PROTOCOL.md §5: bytes 1-2), from the body the relay delivered."""
        try:
            envelope = base64.b64decode(json.loads(record["body"])["e2ee"])
            return {1: "classical", 2: "xwing"}.get(int.from_bytes(envelope[1:3], "big"), "other")
        except (KeyError, ValueError, TypeError):
            return "unreadable"
    lengths_by_suite: dict[str, set[int]] = {}
    for r in spool:
        lengths_by_suite.setdefault(suite_of(r), set()).add(
            len(r["body"].encode()) if "body" in r else len(base64.b64decode(r["body_base64"])))
    same_headers = len(header_sets) == 1
    print(f"headers identical on every spool row (except apns-id): {'yes' if same_headers else 'NO'}"
          + (f" ({next(iter(header_sets))})" if same_headers else f": {len(header_sets)} different sets"))
    print(f"body lengths seen by the relay: {{{', '.join(str(n) for n in lengths)}}}, per suite: "
          + ", ".join(f"{suite} {sorted(n)}" for suite, n in sorted(lengths_by_suite.items())))
    if not same_headers:
        failures.append(f"the spool rows carry {len(header_sets)} different header sets (apns-id aside)")
    # One body length per suite (PROTOCOL.md §6, §16.3): the classical phone's and alice's pushes are 2,233 bytes,
    # the X-Wing tablet's 4,093, whatever their kind.
    if {suite: sorted(n) for suite, n in lengths_by_suite.items()} != {"classical": [2233], "xwing": [4093]}:
        failures.append(f"the spool rows should have one body length per suite (classical 2233, xwing 4093): "
                        f"{ {suite: sorted(n) for suite, n in lengths_by_suite.items()} }")
    if len(spool) != len(demo.pushes):
        failures.append(f"the spool holds {len(spool)} records for {len(demo.pushes)} delivered pushes")

    print("call events, per device:")
    for dev in DEVICES:
        path = demo.path(dev.replace("/", "-") + ".events.jsonl")
        events = [json.loads(line) for line in open(path).read().splitlines() if line.strip()] if os.path.exists(path) else []
        rings: dict[str, int] = {}
        shown = []
        for event in events:
            call = demo.call_labels.get(event.get("call_id", "").upper(), event.get("call_id", "?")[:8])
            if event.get("event") == "ringing":
                rings[call] = rings.get(call, 0) + 1
            extra = event.get("reason")
            shown.append(f"{call} {event.get('event')}" + (f" ({extra})" if extra else ""))
        print(f"  {dev:<11} " + ("; ".join(shown) if shown else "(none)"))
        for call, count in rings.items():
            if count > 1:
                failures.append(f"call {call} rang {count} times on {dev}")
        expect = EXPECTED_EVENTS.get(dev, [])
        for call, event, reason in expect:
            if not any(demo.call_labels.get(e.get("call_id", "").upper()) == call and e.get("event") == event
                       and (reason is None or e.get("reason") == reason) for e in events):
                failures.append(f"{dev}: no '{event}' event{' (' + reason + ')' if reason else ''} for {call}")
        for call, event in FORBIDDEN_EVENTS.get(dev, []):
            if any(demo.call_labels.get(e.get("call_id", "").upper()) == call and e.get("event") == event for e in events):
                failures.append(f"{dev}: '{event}' event for {call}, which must not be a missed call there")
    print()

    relayed = len([p for p in demo.pushes if p.relayed])
    deliveries = {name.split('status="')[1].split('"')[0]: int(value) for name, value in metrics.items()
                  if name.startswith("relay_deliveries_total{")}
    accepted = int(metrics.get("relay_pushes_accepted_total", 0))
    print(f"through the relay: {relayed} of {len(demo.pushes)} pushes (the other {len(demo.pushes) - relayed} were "
          f"injected straight into the gateway); relay metrics: pushes accepted {accepted}, deliveries by status "
          + ", ".join(f"{status}: {count}" for status, count in sorted(deliveries.items())))
    if accepted != relayed or deliveries != {"200": relayed}:
        failures.append(f"the relay accepted {accepted} pushes and recorded deliveries {deliveries}; want {relayed} "
                        f"accepted and {{'200': {relayed}}}")
    print("e2ee-filter exit status after SIGTERM: "
          + ", ".join(f"{dev} {status}" for dev, status in statuses.items())
          + f"; e2ee-relay: {relay_status}; e2ee-gateway: {gateway_status}")
    if relay_status != 0:
        failures.append(f"e2ee-relay exited {relay_status} on SIGTERM (want 0)")
    for dev, status in statuses.items():
        if status != 0:
            failures.append(f"e2ee-filter ({dev}) exited {status} on SIGTERM (want 0)")
    print(f"{passed} passed, {failed} failed")
    return failures


# Events each device must show, and missed calls it must not have (§15.1: answered or declined elsewhere is not missed).
EXPECTED_EVENTS = {
    "bob/phone": [("C1", "ringing", None), ("C1", "answered", None), ("C3", "ended", "declinedElsewhere")],
    "bob/tablet": [("C1", "ringing", None), ("C1", "ended", "answeredElsewhere"), ("C3", "declined", None)],
}
FORBIDDEN_EVENTS = {
    "bob/phone": [("C1", "missed"), ("C3", "missed")],
    "bob/tablet": [("C1", "missed"), ("C3", "missed")],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True,
                        help="the folder holding the release e2ee-send, e2ee-relay, e2ee-gateway, e2ee-filter")
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
        demo.start_relay()
        demo.start_filters()
        demo.deliver_mix()
        demo.wait_for_decisions()
        statuses = {dev: demo.stop(child, f"e2ee-filter ({dev})") for dev, child in demo.filters.items()}
        metrics = demo.relay_metrics()
        relay_status = demo.stop(demo.relay, "e2ee-relay")
        gateway_status = demo.stop(demo.gateway, "e2ee-gateway")
        demo.mark("filters, relay and gateway stopped")
        spool = [json.loads(line) for line in open(demo.spool).read().splitlines() if line.strip()]
        failures = report(demo, spool, statuses, gateway_status, relay_status, metrics)
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
        print(f"the work folder is kept: {work} (relay.log, gateway.log, *.filter.log, run/spool.jsonl, *.decisions.jsonl, "
              "*.events.jsonl)", file=sys.stderr)
        return 1
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print("demo: every decision matched", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
