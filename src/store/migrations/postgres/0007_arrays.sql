-- 0007_arrays: an element of a job array (spec.array): the array's id (its
-- first element's id) and the element's index; NULL for other jobs.
-- PostgreSQL's dialect of sqlite/0007_arrays.sql.
ALTER TABLE jobs ADD COLUMN array_job_id BIGINT;
ALTER TABLE jobs ADD COLUMN array_index BIGINT;
