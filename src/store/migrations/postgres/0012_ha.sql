-- 0012_ha: the leader lease of several sluiced on one database and the
-- daemons that share it (docs/decisions/0015-ha-leader-lease.md). The
-- PostgreSQL dialect of sqlite/0012_ha.sql. Times are epoch ms of the
-- database's clock (clock_timestamp()), never a host's.
CREATE TABLE ha_lease(id BIGINT PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL,
  url TEXT NOT NULL, epoch BIGINT NOT NULL, renewed_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL);
CREATE TABLE ha_members(name TEXT PRIMARY KEY, url TEXT NOT NULL, role TEXT NOT NULL,
  epoch BIGINT NOT NULL DEFAULT 0, started_at BIGINT NOT NULL, seen_at BIGINT NOT NULL);
