-- 0001_init: meta, teams, queues, priority classes, users, tokens, jobs
-- and their events. PostgreSQL 15's dialect of sqlite/0001_init.sql: the
-- same tables, columns (in the same order), keys and indexes, which
-- tests/integration/pg_schema.t checks against SQLite's.
--
-- Types, chosen so that one set of statements serves a backend that binds
-- and reads every value the way the SQLite backend does:
--   ids   BIGINT PRIMARY KEY, no IDENTITY and no sequence. store.h: a job
--         insert without an id takes max(id) + 1, "never a sequence that
--         skips", and an insert with a taken id is -EEXIST; SQLite's rowid
--         tables (jobs, job_events, usage, budget_events) all get max + 1.
--         A sequence skips the numbers of rolled-back inserts and does not
--         move when an id is given, so the store assigns the id itself
--         (one writer: INSERT ... SELECT coalesce(max(id), 0) + 1, an index
--         seek), which keeps the same ids as SQLite and a copy of an SQLite
--         store valid as it is.
--   tokens.id  SQLite's tokens table has no declared id: a token's id is its
--         implicit rowid (sqlite_gov.c reads t.rowid). PostgreSQL has no
--         rowid, so the column is explicit here (BIGINT NOT NULL UNIQUE,
--         assigned as max + 1 like the others): the one column PostgreSQL
--         has and SQLite's table_info does not list.
--   times BIGINT: epoch milliseconds, as SQLite stores them (int64 in C).
--   other integers BIGINT: SQLite's INTEGER is 64-bit; the C side binds
--         and reads int64.
--   flags SMALLINT 0/1 (preemptible, is_default, revoked, opportunistic,
--         idle, limits_enforced, gpus_enforced), not BOOLEAN: the SQLite
--         backend's SQL compares and sets them as numbers (is_default = 1,
--         revoked = 0, SET idle = 1) and reads them as ints; PostgreSQL has
--         no boolean = integer operator and prints booleans as t/f, so
--         BOOLEAN would need a second spelling of those statements and of
--         their reads. SMALLINT keeps one.
--   BLOB  BYTEA; REAL  DOUBLE PRECISION; TEXT stays TEXT (JSON documents
--         too: kept as the text written, as SQLite keeps them).
-- "user" is a reserved word in PostgreSQL: the column is quoted here, and
-- a PostgreSQL backend's statements must quote it too.
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE teams(name TEXT PRIMARY KEY, default_queue TEXT NOT NULL,
  created_at BIGINT NOT NULL);
CREATE TABLE queues(name TEXT PRIMARY KEY, team TEXT NOT NULL
  REFERENCES teams(name), created_at BIGINT NOT NULL);
CREATE TABLE priority_classes(name TEXT PRIMARY KEY, value BIGINT NOT NULL,
  preemptible SMALLINT NOT NULL, is_default SMALLINT NOT NULL);
CREATE TABLE users(name TEXT PRIMARY KEY, team TEXT NOT NULL, role TEXT NOT NULL,
  unix_user TEXT NOT NULL DEFAULT '', created_at BIGINT NOT NULL);
CREATE TABLE tokens(hash BYTEA PRIMARY KEY, "user" TEXT NOT NULL REFERENCES users(name),
  created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL DEFAULT 0,
  revoked SMALLINT NOT NULL DEFAULT 0, id BIGINT NOT NULL UNIQUE);
CREATE TABLE jobs(id BIGINT PRIMARY KEY, name TEXT NOT NULL, team TEXT NOT NULL,
  project TEXT, "user" TEXT NOT NULL, queue TEXT NOT NULL, priority_class TEXT NOT NULL,
  priority BIGINT NOT NULL, state BIGINT NOT NULL, exit_code BIGINT,
  attempt BIGINT NOT NULL, retries BIGINT NOT NULL, submitted_at BIGINT NOT NULL,
  started_at BIGINT, finished_at BIGINT, not_before BIGINT NOT NULL DEFAULT 0,
  placement TEXT, message TEXT, limits_enforced SMALLINT, spec TEXT NOT NULL);
CREATE INDEX jobs_state ON jobs(state, id);
CREATE INDEX jobs_team ON jobs(team, id);
CREATE TABLE job_events(id BIGINT PRIMARY KEY, job_id BIGINT NOT NULL,
  at BIGINT NOT NULL, type TEXT NOT NULL, from_state TEXT, to_state TEXT,
  message TEXT);
CREATE INDEX job_events_job ON job_events(job_id, id);
