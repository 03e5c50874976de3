-- 0012_ha: the leader lease of several sluiced on one database and the
-- daemons that share it (docs/decisions/0015-ha-leader-lease.md). Only a
-- PostgreSQL store uses them (an SQLite store is one host's, guarded by
-- its lock file); they are here too so that both schemas stay one, and an
-- SQLite store copied to PostgreSQL has them. Times are epoch ms of the
-- database's clock, never a host's.
CREATE TABLE ha_lease(id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL,
  url TEXT NOT NULL, epoch INTEGER NOT NULL, renewed_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL);
CREATE TABLE ha_members(name TEXT PRIMARY KEY, url TEXT NOT NULL, role TEXT NOT NULL,
  epoch INTEGER NOT NULL DEFAULT 0, started_at INTEGER NOT NULL, seen_at INTEGER NOT NULL);
