-- 0004_idle_ms: how long an interval's GPUs sat allocated but under the
-- idle-but-allocated threshold (in stretches long enough to flag).
-- PostgreSQL's dialect of sqlite/0004_idle_ms.sql.
ALTER TABLE usage ADD COLUMN idle_ms BIGINT NOT NULL DEFAULT 0;
