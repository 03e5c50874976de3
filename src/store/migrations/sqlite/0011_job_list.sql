-- 0010_job_list: what GET /v1/jobs filters and sorts on, each read without
-- the job's row (whose spec makes it long). jobs_list holds every column a
-- list filters or sorts by, so that a sort, a count or a name search scans
-- this narrow index (tens of bytes a job) instead of the table; its first
-- columns answer a team's and a team's state's jobs by a seek. GPU models:
-- those a job's spec asks for (indexed only where it names some; a spec
-- that is not JSON, which the daemon never writes, is left out rather than
-- failing the write), and those its attempts ran on (the usage ledger),
-- compared as the scheduler compares them, ASCII case-insensitively.
-- Array elements by their array.
CREATE INDEX jobs_list ON jobs(team, state, user, queue, priority_class, priority,
  submitted_at, started_at, finished_at, name);
CREATE INDEX jobs_gpu_models ON jobs(json_extract(spec, '$.spec.resources.gpuModels'))
  WHERE json_valid(spec) AND json_extract(spec, '$.spec.resources.gpuModels') <> '[]';
CREATE INDEX jobs_array ON jobs(array_job_id) WHERE array_job_id IS NOT NULL;
CREATE INDEX usage_gpu_model ON usage(gpu_model COLLATE NOCASE, job_id);
