-- 0005_governance: token ids, labels and job tokens; the audit log and its
-- signed checkpoints; governed objects (policies, datasets, scans, models)
-- as JSON documents by kind and name; each job's lineage. PostgreSQL's
-- dialect of sqlite/0005_governance.sql (a token's id, SQLite's rowid, is
-- the column tokens.id of 0001_init.sql; audit.seq and
-- audit_checkpoints.size are given by the store, as in SQLite).
ALTER TABLE tokens ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN job_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN revoked_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX tokens_job ON tokens(job_id) WHERE job_id > 0;
CREATE INDEX usage_job ON usage(job_id, id);
CREATE TABLE audit(seq BIGINT PRIMARY KEY, at BIGINT NOT NULL,
  actor TEXT NOT NULL, action TEXT NOT NULL, object TEXT NOT NULL,
  outcome TEXT NOT NULL, line TEXT NOT NULL, hash BYTEA NOT NULL);
CREATE INDEX audit_actor ON audit(actor, seq);
CREATE INDEX audit_object ON audit(object, seq);
CREATE INDEX audit_at ON audit(at);
CREATE TABLE audit_checkpoints(size BIGINT PRIMARY KEY, at BIGINT NOT NULL,
  text TEXT NOT NULL);
CREATE TABLE objects(kind TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT NULL,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
  PRIMARY KEY(kind, name));
ALTER TABLE jobs ADD COLUMN lineage TEXT;
