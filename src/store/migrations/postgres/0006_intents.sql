-- 0006_intents: what a Running job was told and must still be done to it
-- after a restart (cancel, preempt, timeout), when it was first signalled
-- and for whom (a preemption's preemptor); whether its GPUs were isolated
-- (device cgroup). PostgreSQL's dialect of sqlite/0006_intents.sql.
ALTER TABLE jobs ADD COLUMN intent TEXT;
ALTER TABLE jobs ADD COLUMN intent_at BIGINT;
ALTER TABLE jobs ADD COLUMN intent_for BIGINT;
ALTER TABLE jobs ADD COLUMN gpus_enforced SMALLINT;
