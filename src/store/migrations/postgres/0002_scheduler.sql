-- 0002_scheduler: queue quotas, cohorts, class options, preemptions.
-- PostgreSQL's dialect of sqlite/0002_scheduler.sql (types: 0001_init.sql).
ALTER TABLE queues ADD COLUMN spec TEXT NOT NULL DEFAULT '{}';
ALTER TABLE priority_classes ADD COLUMN opportunistic SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE priority_classes ADD COLUMN min_runtime_ms BIGINT NOT NULL DEFAULT 0;
CREATE TABLE cohorts(name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL);
ALTER TABLE jobs ADD COLUMN preemptions BIGINT NOT NULL DEFAULT 0;
