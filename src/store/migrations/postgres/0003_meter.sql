-- 0003_meter: the usage ledger, budgets and their events, hourly carbon
-- intensity. PostgreSQL's dialect of sqlite/0003_meter.sql (types:
-- 0001_init.sql; usage.id and budget_events.id are assigned max + 1 by the
-- store, as SQLite's rowids are, so they keep the order rows were added).
CREATE TABLE usage(id BIGINT PRIMARY KEY, job_id BIGINT NOT NULL,
  attempt BIGINT NOT NULL, task BIGINT NOT NULL, team TEXT NOT NULL,
  project TEXT NOT NULL DEFAULT '', "user" TEXT NOT NULL, queue TEXT NOT NULL,
  node TEXT NOT NULL, gpu_model TEXT NOT NULL DEFAULT '', gpus TEXT NOT NULL,
  ngpus BIGINT NOT NULL, gpu_milli BIGINT NOT NULL, cpu_milli BIGINT NOT NULL,
  mem_bytes BIGINT NOT NULL, start_ms BIGINT NOT NULL, end_ms BIGINT,
  gpu_energy_j DOUBLE PRECISION, cpu_energy_j DOUBLE PRECISION, util DOUBLE PRECISION,
  idle SMALLINT NOT NULL DEFAULT 0);
CREATE INDEX usage_start ON usage(start_ms);
CREATE INDEX usage_open ON usage(job_id) WHERE end_ms IS NULL;
CREATE TABLE budgets(name TEXT PRIMARY KEY, team TEXT NOT NULL,
  spec TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE budget_events(id BIGINT PRIMARY KEY, budget TEXT NOT NULL,
  period_start BIGINT NOT NULL, threshold BIGINT NOT NULL, at BIGINT NOT NULL,
  used DOUBLE PRECISION NOT NULL, limit_value DOUBLE PRECISION NOT NULL,
  UNIQUE(budget, period_start, threshold));
CREATE TABLE carbon_hourly(site TEXT NOT NULL, hour BIGINT NOT NULL,
  g DOUBLE PRECISION NOT NULL, PRIMARY KEY(site, hour));
