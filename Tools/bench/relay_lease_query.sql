-- The relay's lease selection alone, on PostgreSQL, with 10,000 queued retries still waiting for their time and 64
-- new pushes due: the queue-ordered partial indexes used until 2026-11-26 ("before") against the due-ordered ones
-- ("after"). Run on a scratch database, e.g.
--   ./scripts/with-postgres.sh bash -c 'psql "$E2EE_RELAY_POSTGRES_URL" -f Tools/bench/relay_lease_query.sql'
-- and read each plan's "Execution Time" and "Rows Removed by Filter". It works in a schema of its own,
-- relay_lease_bench, which it drops at the end: a relay's own tables are not touched.
DROP SCHEMA IF EXISTS relay_lease_bench CASCADE;
CREATE SCHEMA relay_lease_bench;
SET search_path = relay_lease_bench;
\timing off
CREATE TABLE pushes (seq BIGSERIAL PRIMARY KEY, push_id TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL, device_id TEXT NOT NULL, body BYTEA, state TEXT NOT NULL,
  attempts INTEGER NOT NULL, next_attempt_at_ms BIGINT NOT NULL, lease_owner TEXT,
  lease_expires_at_ms BIGINT, enqueued_at_ms BIGINT NOT NULL, completed_at_ms BIGINT,
  apns_status INTEGER, apns_reason TEXT, completions INTEGER NOT NULL);
INSERT INTO pushes (push_id,user_id,device_id,body,state,attempts,next_attempt_at_ms,enqueued_at_ms,completions)
  SELECT 'w'||i, 'u','d', '\x00', 'queued', 1, 1000000000+i, 1, 0 FROM generate_series(1,10000) i;
INSERT INTO pushes (push_id,user_id,device_id,body,state,attempts,next_attempt_at_ms,enqueued_at_ms,completions)
  SELECT 'n'||i, 'u','d', '\x00', 'queued', 0, 1000, 1000, 0 FROM generate_series(1,64) i;
CREATE INDEX pushes_queued ON pushes (seq) WHERE state = 'queued';
CREATE INDEX pushes_leased ON pushes (seq) WHERE state = 'leased';
ANALYZE pushes;
\echo before
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) WITH expired AS (SELECT seq FROM pushes WHERE state = 'leased' AND lease_expires_at_ms <= 2000 ORDER BY seq LIMIT 64 FOR UPDATE SKIP LOCKED),
 queued AS (SELECT seq FROM pushes WHERE state = 'queued' AND next_attempt_at_ms <= 2000 ORDER BY seq LIMIT 64 FOR UPDATE SKIP LOCKED)
 SELECT seq FROM expired UNION ALL SELECT seq FROM queued ORDER BY seq LIMIT 64;
DROP INDEX pushes_queued; DROP INDEX pushes_leased;
CREATE INDEX pushes_queued_due ON pushes (next_attempt_at_ms, seq) WHERE state = 'queued';
CREATE INDEX pushes_leased_due ON pushes (lease_expires_at_ms, seq) WHERE state = 'leased';
ANALYZE pushes;
\echo after
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) WITH expired AS (SELECT seq, lease_expires_at_ms AS due FROM pushes WHERE state = 'leased' AND lease_expires_at_ms <= 2000 ORDER BY lease_expires_at_ms, seq LIMIT 64 FOR UPDATE SKIP LOCKED),
 queued AS (SELECT seq, next_attempt_at_ms AS due FROM pushes WHERE state = 'queued' AND next_attempt_at_ms <= 2000 ORDER BY next_attempt_at_ms, seq LIMIT 64 FOR UPDATE SKIP LOCKED)
 SELECT seq FROM (SELECT seq, due FROM expired UNION ALL SELECT seq, due FROM queued ORDER BY due, seq LIMIT 64) d;
DROP SCHEMA relay_lease_bench CASCADE;
