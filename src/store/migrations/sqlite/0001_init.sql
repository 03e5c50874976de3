-- 0001_init: meta, teams, queues, priority classes, users, tokens, jobs
-- and their events.
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE teams(name TEXT PRIMARY KEY, default_queue TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE TABLE queues(name TEXT PRIMARY KEY, team TEXT NOT NULL
  REFERENCES teams(name), created_at INTEGER NOT NULL);
CREATE TABLE priority_classes(name TEXT PRIMARY KEY, value INTEGER NOT NULL,
  preemptible INTEGER NOT NULL, is_default INTEGER NOT NULL);
CREATE TABLE users(name TEXT PRIMARY KEY, team TEXT NOT NULL, role TEXT NOT NULL,
  unix_user TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
CREATE TABLE tokens(hash BLOB PRIMARY KEY, user TEXT NOT NULL REFERENCES users(name),
  created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL DEFAULT 0,
  revoked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL, team TEXT NOT NULL,
  project TEXT, user TEXT NOT NULL, queue TEXT NOT NULL, priority_class TEXT NOT NULL,
  priority INTEGER NOT NULL, state INTEGER NOT NULL, exit_code INTEGER,
  attempt INTEGER NOT NULL, retries INTEGER NOT NULL, submitted_at INTEGER NOT NULL,
  started_at INTEGER, finished_at INTEGER, not_before INTEGER NOT NULL DEFAULT 0,
  placement TEXT, message TEXT, limits_enforced INTEGER, spec TEXT NOT NULL);
CREATE INDEX jobs_state ON jobs(state, id);
CREATE INDEX jobs_team ON jobs(team, id);
CREATE TABLE job_events(id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,
  at INTEGER NOT NULL, type TEXT NOT NULL, from_state TEXT, to_state TEXT,
  message TEXT);
CREATE INDEX job_events_job ON job_events(job_id, id);
