-- 0004_idle_ms: how long an interval's GPUs sat allocated but under the
-- idle-but-allocated threshold (in stretches long enough to flag).
ALTER TABLE usage ADD COLUMN idle_ms INTEGER NOT NULL DEFAULT 0;
