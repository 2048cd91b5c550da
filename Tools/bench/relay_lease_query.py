#!/usr/bin/env python3
"""The relay's lease selection alone, on SQLite (Python's sqlite3: the system library the relay links), with 10,000
queued retries still waiting for their time and 64 new pushes due: the queue-ordered partial indexes used until
2026-11-26 (every lease stepped over each waiting retry) against the due-ordered ones (docs/RELAY.md "Storage").
Prints the time per selection of 64, the best and worst of 5 rounds of 200. The PostgreSQL counterpart is
relay_lease_query.sql (`EXPLAIN ANALYZE`)."""
import sqlite3, time
def setup(old):
    db = sqlite3.connect(":memory:")
    db.executescript("""
CREATE TABLE pushes (seq INTEGER PRIMARY KEY AUTOINCREMENT, push_id TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL, device_id TEXT NOT NULL, body BLOB, state TEXT NOT NULL,
  attempts INTEGER NOT NULL, next_attempt_at_ms INTEGER NOT NULL, lease_owner TEXT,
  lease_expires_at_ms INTEGER, enqueued_at_ms INTEGER NOT NULL, completed_at_ms INTEGER,
  apns_status INTEGER, apns_reason TEXT, completions INTEGER NOT NULL);""")
    if old:
        db.executescript("""CREATE INDEX pushes_queued ON pushes (seq) WHERE state = 'queued';
CREATE INDEX pushes_leased ON pushes (seq) WHERE state = 'leased';""")
    else:
        db.executescript("""CREATE INDEX pushes_queued_due ON pushes (next_attempt_at_ms, seq) WHERE state = 'queued';
CREATE INDEX pushes_leased_due ON pushes (lease_expires_at_ms, seq) WHERE state = 'leased';""")
    # 10,000 retries waiting, then 64 new pushes due
    db.executemany("INSERT INTO pushes (push_id,user_id,device_id,body,state,attempts,next_attempt_at_ms,enqueued_at_ms,completions) VALUES (?,?,?,?,?,?,?,?,0)",
        [(f"w{i}", "u", "d", b"x"*64, "queued", 1, 10**9 + i, 1) for i in range(10000)] +
        [(f"n{i}", "u", "d", b"x"*64, "queued", 0, 1000, 1000) for i in range(64)])
    db.commit()
    return db
OLD = """SELECT seq FROM (SELECT seq FROM pushes WHERE state = 'leased' AND lease_expires_at_ms <= ?1 ORDER BY seq LIMIT ?2)
UNION ALL SELECT seq FROM (SELECT seq FROM pushes WHERE state = 'queued' AND next_attempt_at_ms <= ?1 ORDER BY seq LIMIT ?2) ORDER BY seq LIMIT ?2"""
NEW = """SELECT seq FROM (SELECT seq, due FROM (SELECT seq, lease_expires_at_ms AS due FROM pushes WHERE state = 'leased' AND lease_expires_at_ms <= ?1 ORDER BY lease_expires_at_ms, seq LIMIT ?2)
UNION ALL SELECT seq, due FROM (SELECT seq, next_attempt_at_ms AS due FROM pushes WHERE state = 'queued' AND next_attempt_at_ms <= ?1 ORDER BY next_attempt_at_ms, seq LIMIT ?2) ORDER BY due, seq LIMIT ?2)"""
print("sqlite", sqlite3.sqlite_version)
for name, old, q in (("queue-ordered indexes (before)", True, OLD), ("due-ordered indexes (after)", False, NEW)):
    db = setup(old)
    assert len(db.execute(q, (2000, 64)).fetchall()) == 64
    best = []
    for r in range(5):
        t = time.perf_counter()
        for _ in range(200): db.execute(q, (2000, 64)).fetchall()
        best.append((time.perf_counter() - t) / 200 * 1e6)
    print(f"{name}: lease selection of 64 over 10,000 waiting retries: {min(best):.0f}-{max(best):.0f} us")
