-- 0005_governance: token ids, labels and job tokens; the audit log and its
-- signed checkpoints; governed objects (policies, datasets, scans, models)
-- as JSON documents by kind and name; each job's lineage.
ALTER TABLE tokens ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN job_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tokens_job ON tokens(job_id) WHERE job_id > 0;
CREATE INDEX usage_job ON usage(job_id, id);
CREATE TABLE audit(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL,
  actor TEXT NOT NULL, action TEXT NOT NULL, object TEXT NOT NULL,
  outcome TEXT NOT NULL, line TEXT NOT NULL, hash BLOB NOT NULL);
CREATE INDEX audit_actor ON audit(actor, seq);
CREATE INDEX audit_object ON audit(object, seq);
CREATE INDEX audit_at ON audit(at);
CREATE TABLE audit_checkpoints(size INTEGER PRIMARY KEY, at INTEGER NOT NULL,
  text TEXT NOT NULL);
CREATE TABLE objects(kind TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY(kind, name));
ALTER TABLE jobs ADD COLUMN lineage TEXT;
