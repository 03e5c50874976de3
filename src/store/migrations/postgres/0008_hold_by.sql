-- 0008_hold_by: who held a Pending job (sluice hold; intent "held" is a
-- user's hold, "held-admin" an admin's), or asked a requeue to hold it;
-- NULL for other jobs and for holds made before this column.
-- PostgreSQL's dialect of sqlite/0008_hold_by.sql.
ALTER TABLE jobs ADD COLUMN hold_by TEXT;
