-- 0011_job_list: what GET /v1/jobs filters and sorts on, each read without
-- the job's row. PostgreSQL's dialect of sqlite/0011_job_list.sql (which
-- says why each index is there); the translations:
-- jobs_gpu_models: SQLite indexes json_extract(spec, '$.spec...gpuModels')
-- where json_valid(spec), leaving a spec that is not JSON out rather than
-- failing the write. PostgreSQL 15 has no IS JSON and a spec::jsonb cast
-- fails on such a spec, so sl_json(text) parses a text as jsonb or gives
-- NULL where it is not JSON (IMMUTABLE: its result depends on its argument
-- alone, as an index expression's must), and the index is on the models as
-- text (#>>: a JSON array's text, which a LIKE searches as SQLite's does;
-- jsonb prints it as ["A100", "H100"], with spaces, where SQLite prints
-- ["A100","H100"]). A query uses the index when it is written with the
-- same expression.
-- usage_gpu_model: SQLite's COLLATE NOCASE folds ASCII letters only;
-- lower() under the "C" collation does the same (under another collation
-- it would fold other letters too), so the index is on
-- lower(gpu_model COLLATE "C"), and a query compares
-- lower(gpu_model COLLATE "C") = lower($1 COLLATE "C").
CREATE INDEX jobs_list ON jobs(team, state, "user", queue, priority_class, priority,
  submitted_at, started_at, finished_at, name);
CREATE FUNCTION sl_json(doc text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
  RETURN doc::jsonb;
EXCEPTION WHEN data_exception THEN
  RETURN NULL;
END $$;
CREATE INDEX jobs_gpu_models ON jobs((sl_json(spec) #>> '{spec,resources,gpuModels}'))
  WHERE (sl_json(spec) #>> '{spec,resources,gpuModels}') <> '[]';
CREATE INDEX jobs_array ON jobs(array_job_id) WHERE array_job_id IS NOT NULL;
CREATE INDEX usage_gpu_model ON usage(lower(gpu_model COLLATE "C"), job_id);
