-- 0009_attempts: each attempt of a job (0, 1, ...): when it started, what
-- ended the one before it (preemption, requeue, failure, loss: written when
-- the job goes back in line, before it starts), and where its output
-- begins in each task's log (a JSON array of byte offsets, by task index),
-- so that the logs can be read one attempt at a time. PostgreSQL's dialect
-- of sqlite/0009_attempts.sql.
CREATE TABLE job_attempts(job_id BIGINT NOT NULL, attempt BIGINT NOT NULL,
  started_at BIGINT, after TEXT, log_offsets TEXT,
  PRIMARY KEY(job_id, attempt));
