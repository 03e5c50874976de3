#!/usr/bin/env python3
"""pg_schema.t - the PostgreSQL dialect of the store's schema
(src/store/migrations/postgres) against SQLite's (migrations/sqlite).

The same numbered migrations by name, which embed.sh accepts; each applies
to a fresh PostgreSQL server (tests/pg/pg.sh) in one transaction, in order;
then the two schemas agree: the same tables; for each, the same columns in
the same order, of the types the mapping below gives, with the same NOT
NULL and defaults; the same primary keys, unique constraints and foreign
keys; the same indexes on the same tables, partial where SQLite's are, on
the same columns (an expression where SQLite's is one). The one column
PostgreSQL adds is tokens.id, SQLite's implicit rowid there (a token's id).
The comparison is skipped when PostgreSQL's server programs are not
installed (the first two checks need none)."""

import glob
import json
import os
import re
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sltest import REPO, PgServer, tap  # noqa: E402

MIG = os.path.join(REPO, "src", "store", "migrations")

# SQLite's declared type -> PostgreSQL's (information_schema data_type).
TYPES = {"INTEGER": "bigint", "TEXT": "text", "REAL": "double precision", "BLOB": "bytea"}
# INTEGER columns that hold a 0/1 flag: SMALLINT (0001_init.sql says why).
FLAGS = {("priority_classes", "preemptible"), ("priority_classes", "is_default"),
         ("priority_classes", "opportunistic"), ("tokens", "revoked"), ("usage", "idle"),
         ("jobs", "limits_enforced"), ("jobs", "gpus_enforced")}
# Tables whose id is SQLite's implicit rowid, a column of its own in PostgreSQL.
ROWID_STANDINS = {"tokens": "id"}


def migrations(backend):
    return sorted(glob.glob(os.path.join(MIG, backend, "[0-9][0-9][0-9][0-9]_*.sql")))


def norm_default(v):
    """'0' and "''::text" as '0' and "''"; None stays None."""
    if v is None:
        return None
    return re.sub(r"::[a-z ]+$", "", v.strip())


def sqlite_schema(files):
    db = sqlite3.connect(":memory:")
    db.isolation_level = None
    for f in files:
        db.executescript("BEGIN;\n" + open(f).read() + "\nCOMMIT;")
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    s = {"tables": set(tables), "columns": {}, "keys": set(), "indexes": {}, "fks": set(),
         "rowid": set()}
    for t in tables:
        info = db.execute("PRAGMA table_info(%s)" % t).fetchall()
        pk = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        s["columns"][t] = [(r[1], r[2], bool(r[3]) or r[1] in pk, norm_default(r[4]))
                           for r in info]
        if pk:
            s["keys"].add((t, "p", tuple(pk)))
        try:
            db.execute("SELECT rowid FROM %s LIMIT 1" % t)
            s["rowid"].add(t)
        except sqlite3.Error:
            pass
        for _, name, unique, origin, partial in db.execute("PRAGMA index_list(%s)" % t):
            # index_xinfo: (seqno, cid, name, desc, coll, key); a key column
            # under NOCASE as nocase(name), as pg_schema writes lower(x "C").
            cols = tuple(("nocase(%s)" % r[2]) if r[4] == "NOCASE" else r[2]
                         for r in db.execute("PRAGMA index_xinfo(%s)" % name) if r[5])
            if origin == "u":
                s["keys"].add((t, "u", cols))
            elif origin == "c":
                s["indexes"][name] = (t, bool(partial), bool(unique), cols)
        for r in db.execute("PRAGMA foreign_key_list(%s)" % t):
            s["fks"].add((t, r[3], r[2], r[4]))
    return s


def rows(pgs, sql):
    """The rows of a query, each a list of its columns in order."""
    r = pgs.psql("-c", "SELECT coalesce(json_agg(q), '[]') FROM (%s) q" % sql)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return [list(row.values()) for row in json.loads(r.stdout)]


PUBLIC = "JOIN pg_namespace ns ON ns.oid = t.relnamespace AND ns.nspname = 'public'"


def pg_schema(q):
    s = {"columns": {}, "keys": set(), "indexes": {}, "fks": set()}
    cols = rows(q, "SELECT table_name AS c0, column_name AS c1, data_type AS c2, "
                  "is_nullable AS c3, column_default AS c4 FROM information_schema.columns "
                  "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position")
    tables = rows(q, "SELECT table_name AS c0 FROM information_schema.tables "
                    "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")
    s["tables"] = {r[0] for r in tables}
    for t, c, typ, nullable, dflt in cols:
        s["columns"].setdefault(t, []).append((c, typ, nullable == "NO", norm_default(dflt)))
    attnames = ("array(SELECT a.attname::text FROM unnest(%s) WITH ORDINALITY k(n, i) "
                "JOIN pg_attribute a ON a.attrelid = %s AND a.attnum = k.n ORDER BY k.i)")
    for t, typ, key, ft, fkey in rows(q, 
            "SELECT t.relname::text AS c0, c.contype::text AS c1, "
            + attnames % ("c.conkey", "c.conrelid") + " AS c2, "
            "f.relname::text AS c3, " + attnames % ("c.confkey", "c.confrelid") + " AS c4 "
            "FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid " + PUBLIC +
            " LEFT JOIN pg_class f ON f.oid = c.confrelid WHERE c.contype IN ('p', 'u', 'f')"):
        if typ == "f":
            for a, b in zip(key, fkey):
                s["fks"].add((t, a, ft, b))
        else:
            s["keys"].add((t, typ, tuple(key)))
    for name, t, partial, unique, cols in rows(q, 
            "SELECT i.relname::text AS c0, t.relname::text AS c1, x.indpred IS NOT NULL AS c2, "
            "x.indisunique AS c3, array(SELECT pg_get_indexdef(x.indexrelid, k, true) "
            "FROM generate_series(1, x.indnkeyatts) k ORDER BY k) AS c4 "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid " + PUBLIC +
            " WHERE NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)"):
        # A plain column as its name (quotes off), an expression as None,
        # as SQLite's index_info names them; SQLite's COLLATE NOCASE is
        # lower(x COLLATE "C") here (0011_job_list.sql), both nocase(x).
        cols = tuple(c.strip('"') if re.fullmatch(r'"?[a-z_][a-z0-9_]*"?', c)
                     else re.sub(r'^lower\(\(?([a-z_][a-z0-9_]*) COLLATE "C"\)?\)$',
                                 r"nocase(\1)", c) if c.startswith("lower(") else None
                     for c in cols)
        s["indexes"][name] = (t, partial, unique, cols)
    return s


lite_files, pg_files = migrations("sqlite"), migrations("postgres")
tap.is_([os.path.basename(f) for f in pg_files], [os.path.basename(f) for f in lite_files],
        "a PostgreSQL migration for each SQLite one, by number and name")
r = subprocess.run(["sh", os.path.join(MIG, "embed.sh"), "postgres"] + pg_files,
                   capture_output=True, text=True)
tap.ok(r.returncode == 0 and "sl_postgres_nmigrations = %d;" % len(pg_files) in r.stdout,
       "embed.sh embeds them (numbers 1..N without a gap)", r.stderr)

q = PgServer()
try:
    if not q.start():
        tap.skip(1, q.missing)
        tap.done_testing()
    for f in pg_files:
        r = q.psql("-1", "-f", f)
        if not tap.ok(r.returncode == 0 and not r.stderr.strip(),
                      "%s applies in one transaction" % os.path.basename(f), r.stderr):
            tap.bail("the rest of the migrations cannot be compared")

    lite, post = sqlite_schema(lite_files), pg_schema(q)
    tap.is_(sorted(post["tables"]), sorted(lite["tables"]), "the same tables")
    for t, col in ROWID_STANDINS.items():
        pc = [c for c in post["columns"].get(t, []) if c[0] == col]
        tap.ok(t in lite["rowid"] and all(c[0] != col for c in lite["columns"].get(t, [])),
               "%s: SQLite's id is the table's implicit rowid" % t)
        tap.is_(pc, [(col, "bigint", True, None)],
                "%s.%s: PostgreSQL's stand-in for it, bigint NOT NULL" % (t, col))
        tap.ok((t, "u", (col,)) in post["keys"], "%s.%s is unique" % (t, col))
        post["columns"][t] = [c for c in post["columns"][t] if c[0] != col]
        post["keys"].discard((t, "u", (col,)))
    for t in sorted(lite["tables"]):
        want = [(c, ("smallint" if (t, c) in FLAGS else TYPES.get(typ, "?" + typ)), nn, dflt)
                for c, typ, nn, dflt in lite["columns"][t]]
        tap.is_(post["columns"].get(t), want,
                "%s: the same columns in order, mapped types, NOT NULL, defaults" % t)
    tap.is_(sorted(post["keys"]), sorted(lite["keys"]),
            "the same primary keys and unique constraints")
    tap.is_(sorted(post["fks"]), sorted(lite["fks"]), "the same foreign keys")
    tap.is_(sorted(post["indexes"]), sorted(lite["indexes"]), "the same index names")
    for name in sorted(lite["indexes"]):
        tap.is_(post["indexes"].get(name), lite["indexes"][name],
                "index %s: its table, partial-ness, uniqueness, key columns" % name)
    # A JSON spec the index cannot parse is left out, not refused, as SQLite's
    # json_valid leaves it out (0011_job_list.sql).
    r = q.psql("-c", "INSERT INTO jobs(id, name, team, \"user\", queue, priority_class, priority, "
              "state, attempt, retries, submitted_at, spec) VALUES "
              "(1, 'a', 't', 'u', 'q', 'p', 0, 0, 0, 0, 0, 'not json'), "
              "(2, 'b', 't', 'u', 'q', 'p', 0, 0, 0, 0, 0, "
              "'{\"spec\":{\"resources\":{\"gpuModels\":[\"H100\"]}}}')")
    tap.ok(r.returncode == 0, "a spec that is not JSON is stored, not refused by the index",
           r.stderr)
    models = ("SELECT id FROM jobs WHERE "
              "(sl_json(spec) #>> '{spec,resources,gpuModels}') <> '[]' AND "
              "(sl_json(spec) #>> '{spec,resources,gpuModels}') LIKE '%\"H100\"%'")
    r = q.psql("-c", models)
    tap.is_(r.stdout.split(), ["2"], "the GPU-model search finds the job that names one")
    r = q.psql("-c", "SET enable_seqscan = off; EXPLAIN " + models)
    tap.ok("jobs_gpu_models" in r.stdout, "written as the index is, it reads jobs_gpu_models",
           r.stdout + r.stderr)
finally:
    q.stop()
tap.done_testing()
