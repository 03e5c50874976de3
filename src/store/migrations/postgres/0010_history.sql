-- 0010_history: indexes for GET /v1/history (docs/metering.md, "History").
-- PostgreSQL's dialect of sqlite/0010_history.sql: SQLite's "x IS NOT 'v'"
-- (true when x is NULL) is PostgreSQL's "x IS DISTINCT FROM 'v'". The
-- transitions into and out of Pending and the preempt events by time, with
-- what the history reads of them; each job's events into Pending, for the
-- entry before a start (its wait); closed usage intervals by their end.
CREATE INDEX job_events_history ON job_events(at, job_id, type, from_state, to_state)
  WHERE type = 'preempt' OR (to_state = 'Pending' AND from_state IS DISTINCT FROM 'Pending')
  OR (from_state = 'Pending' AND to_state <> 'Pending');
CREATE INDEX job_events_enter ON job_events(job_id, id, at)
  WHERE to_state = 'Pending' AND from_state IS DISTINCT FROM 'Pending';
CREATE INDEX usage_end ON usage(end_ms);
