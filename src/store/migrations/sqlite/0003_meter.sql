-- 0003_meter: the usage ledger, budgets and their events, hourly carbon
-- intensity.
CREATE TABLE usage(id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL, task INTEGER NOT NULL, team TEXT NOT NULL,
  project TEXT NOT NULL DEFAULT '', user TEXT NOT NULL, queue TEXT NOT NULL,
  node TEXT NOT NULL, gpu_model TEXT NOT NULL DEFAULT '', gpus TEXT NOT NULL,
  ngpus INTEGER NOT NULL, gpu_milli INTEGER NOT NULL, cpu_milli INTEGER NOT NULL,
  mem_bytes INTEGER NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER,
  gpu_energy_j REAL, cpu_energy_j REAL, util REAL,
  idle INTEGER NOT NULL DEFAULT 0);
CREATE INDEX usage_start ON usage(start_ms);
CREATE INDEX usage_open ON usage(job_id) WHERE end_ms IS NULL;
CREATE TABLE budgets(name TEXT PRIMARY KEY, team TEXT NOT NULL,
  spec TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE budget_events(id INTEGER PRIMARY KEY, budget TEXT NOT NULL,
  period_start INTEGER NOT NULL, threshold INTEGER NOT NULL, at INTEGER NOT NULL,
  used REAL NOT NULL, limit_value REAL NOT NULL,
  UNIQUE(budget, period_start, threshold));
CREATE TABLE carbon_hourly(site TEXT NOT NULL, hour INTEGER NOT NULL,
  g REAL NOT NULL, PRIMARY KEY(site, hour));
