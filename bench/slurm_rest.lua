-- slurm_rest.lua - wrk script: POST held batch jobs to slurmrestd's
-- /slurm/v0.0.38/job/submit, the counterpart of submit.lua for Slurm's REST
-- API (bench/slurm_rest.sh).
--
--   SLURM_REST_USER=u SLURM_REST_TOKEN=... SLURM_REST_PARTITION=main \
--   SLURM_REST_CWD=/tmp wrk -t2 -c64 -d10s --latency -s bench/slurm_rest.lua \
--       http://127.0.0.1:PORT/slurm/v0.0.38/job/submit
--
-- Every job is submitted with "hold": true, so none runs and the figure is
-- submission alone, as on Sluice's side. The token is a JWT from
-- `scontrol token username=u`, sent with the user's name as slurmrestd's
-- rest_auth/jwt wants it. Names carry the thread and a sequence number:
-- r<run>-<thread>-<n>.
--
-- An answer counts as a submission ("created") when it is a 200 whose body
-- holds a "job_id" above 0 and an "errors" list that is empty or holds only
-- error_code 2042 (ESLURM_JOB_HELD, "Job is in held state, pending scheduler
-- release": Slurm 22.05 reports every held submission so, with the job
-- made); anything else counts as "failed" (with its status; a 200 with
-- other errors counts as status 200).
-- At the end prints one machine-readable line for bench/slurm_rest.sh:
--   SLUICE_BENCH requests=N created=N failed=N codes=500:3,200:1
--                duration_us=N p50_us=N p99_us=N max_us=N
-- plus socket errors (connect/read/write/timeout) as wrk counts them, and
-- the first failed answer's body (cut to 300 bytes) on a line of its own.

local user = os.getenv("SLURM_REST_USER") or ""
local token = os.getenv("SLURM_REST_TOKEN") or ""
local partition = os.getenv("SLURM_REST_PARTITION") or "main"
local cwd = os.getenv("SLURM_REST_CWD") or "/tmp"
local run = os.getenv("SLUICE_BENCH_RUN") or "0"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-SLURM-USER-NAME"] = user
wrk.headers["X-SLURM-USER-TOKEN"] = token

local threads = {}

function setup(thread)
    thread:set("tid", #threads)
    table.insert(threads, thread)
end

-- Per-thread state (each thread has its own Lua state).
local seq = 0
created = 0
failed = 0
codes = ""
first_error = ""
local code_counts = {}

function request()
    seq = seq + 1
    local body = string.format(
        '{"job":{"name":"r%s-%d-%d","partition":"%s","hold":true,' ..
        '"current_working_directory":"%s",' ..
        '"environment":{"PATH":"/usr/bin:/bin"}},' ..
        '"script":"#!/bin/sh\\ntrue\\n"}',
        run, tid, seq, partition, cwd)
    return wrk.format(nil, nil, nil, body)
end

-- submitted(body): a job id above 0, and no error but ESLURM_JOB_HELD.
local function submitted(body)
    if not body:find('"job_id"%s*:%s*[1-9]') then return false end
    if body:find('"errors"%s*:%s*%[%s*%]') then return true end
    local _, all = body:gsub('"error_code"%s*:', "")
    local _, held = body:gsub('"error_code"%s*:%s*2042%s*[,}]', "")
    return all > 0 and all == held
end

function response(status, headers, body)
    if status == 200 and body and submitted(body) then
        created = created + 1
        return
    end
    failed = failed + 1
    if first_error == "" then
        local text = (body or ""):sub(1, 300):gsub("%s+", " ")
        first_error = string.format("%d %s", status, text)
    end
    code_counts[status] = (code_counts[status] or 0) + 1
    local parts = {}
    for k, v in pairs(code_counts) do
        table.insert(parts, k .. ":" .. v)
    end
    codes = table.concat(parts, ",")
end

function done(summary, latency, requests)
    local total_failed, total_created, all_codes, err = 0, 0, {}, ""
    for _, t in ipairs(threads) do
        total_failed = total_failed + (t:get("failed") or 0)
        total_created = total_created + (t:get("created") or 0)
        local c = t:get("codes") or ""
        if c ~= "" then table.insert(all_codes, c) end
        local e = t:get("first_error") or ""
        if err == "" and e ~= "" then err = e end
    end
    local e = summary.errors
    io.write(string.format(
        "SLUICE_BENCH requests=%d created=%d failed=%d codes=%s duration_us=%d " ..
        "p50_us=%d p99_us=%d max_us=%d sock_connect=%d sock_read=%d " ..
        "sock_write=%d sock_timeout=%d\n",
        summary.requests, total_created, total_failed,
        (#all_codes > 0) and table.concat(all_codes, ",") or "-",
        summary.duration, latency:percentile(50), latency:percentile(99),
        latency.max, e.connect, e.read, e.write, e.timeout))
    if err ~= "" then
        io.write("first failed answer: " .. err .. "\n")
    end
end
