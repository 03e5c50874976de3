-- 0002_scheduler: queue quotas, cohorts, class options, preemptions.
ALTER TABLE queues ADD COLUMN spec TEXT NOT NULL DEFAULT '{}';
ALTER TABLE priority_classes ADD COLUMN opportunistic INTEGER NOT NULL DEFAULT 0;
ALTER TABLE priority_classes ADD COLUMN min_runtime_ms INTEGER NOT NULL DEFAULT 0;
CREATE TABLE cohorts(name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL);
ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;
