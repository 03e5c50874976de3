-- jobs.lua - wrk script for bench/sched.sh: POST job documents to /v1/jobs,
-- shaped by the environment, optionally stopping after a number of 201s.
--
--   SLUICE_TOKEN=... SLUICE_BENCH_GPUS=1 SLUICE_BENCH_SIM_DURATION=1s \
--   wrk -t2 -c64 -d20s -s bench/jobs.lua http://127.0.0.1:PORT/v1/jobs
--
-- Environment:
--   SLUICE_TOKEN               the bearer token (admin)
--   SLUICE_BENCH_RUN           a tag in the job names: j<run>-<thread>-<n>
--   SLUICE_BENCH_GPUS          GPUs per task (default 1)
--   SLUICE_BENCH_SIM_DURATION  label sim-duration (the simulated executor's
--                              run time, e.g. "1s"); unset = no label
--   SLUICE_BENCH_COMMAND       the command, one word (default "true")
--   SLUICE_BENCH_MAX           stop once this many 201s were counted over
--                              all threads (each thread stops at its share;
--                              requests already in flight still complete)
--   SLUICE_BENCH_THREADS       wrk's -t, to split SLUICE_BENCH_MAX (default 2)
--   SLUICE_BENCH_DONE_DIR      where a thread that reached its share writes
--                              done.<thread>: wrk itself runs on for its -d,
--                              so the caller stops it with SIGINT (wrk then
--                              prints its figures) once every thread is done
--
-- Prints one line at the end, as submit.lua does:
--   SLUICE_BENCH requests=N created=N non201=N codes=... duration_us=N
--                p50_us=N p99_us=N max_us=N sock_connect=N ...

local token = os.getenv("SLUICE_TOKEN") or ""
local run = os.getenv("SLUICE_BENCH_RUN") or "0"
local gpus = tonumber(os.getenv("SLUICE_BENCH_GPUS") or "1") or 1
local sim = os.getenv("SLUICE_BENCH_SIM_DURATION") or ""
local command = os.getenv("SLUICE_BENCH_COMMAND") or "true"
local max_total = tonumber(os.getenv("SLUICE_BENCH_MAX") or "0") or 0
local nthreads = tonumber(os.getenv("SLUICE_BENCH_THREADS") or "2") or 2
local done_dir = os.getenv("SLUICE_BENCH_DONE_DIR") or ""

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token

local labels = ""
if sim ~= "" then
    labels = string.format(',"labels":{"sim-duration":"%s"}', sim)
end

local threads = {}

function setup(thread)
    thread:set("tid", #threads)
    table.insert(threads, thread)
end

-- Per-thread state (each thread has its own Lua state).
local seq = 0
local quota = 0
non201 = 0
created = 0
codes = ""
local code_counts = {}

function init(args)
    if max_total > 0 then
        quota = math.ceil(max_total / nthreads)
    end
end

function request()
    seq = seq + 1
    local body = string.format(
        '{"apiVersion":"sluice/v1","kind":"Job","metadata":{"name":"j%s-%d-%d",' ..
        '"team":"default"%s},"spec":{"command":["%s"],"resources":{"gpus":%d}}}',
        run, tid, seq, labels, command, gpus)
    return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
    if status == 201 then
        created = created + 1
        if quota > 0 and created == quota then
            if done_dir ~= "" then
                local f = io.open(done_dir .. "/done." .. tid, "w")
                if f then f:write(created, "\n"); f:close() end
            end
            wrk.thread:stop()
        end
    else
        non201 = non201 + 1
        code_counts[status] = (code_counts[status] or 0) + 1
        local parts = {}
        for k, v in pairs(code_counts) do
            table.insert(parts, k .. ":" .. v)
        end
        codes = table.concat(parts, ",")
    end
end

function done(summary, latency, requests)
    local total_non201, total_created, all_codes = 0, 0, {}
    for _, t in ipairs(threads) do
        total_non201 = total_non201 + (t:get("non201") or 0)
        total_created = total_created + (t:get("created") or 0)
        local c = t:get("codes") or ""
        if c ~= "" then table.insert(all_codes, c) end
    end
    local e = summary.errors
    io.write(string.format(
        "SLUICE_BENCH requests=%d created=%d non201=%d codes=%s duration_us=%d " ..
        "p50_us=%d p99_us=%d max_us=%d sock_connect=%d sock_read=%d " ..
        "sock_write=%d sock_timeout=%d\n",
        summary.requests, total_created, total_non201,
        (#all_codes > 0) and table.concat(all_codes, ",") or "-",
        summary.duration, latency:percentile(50), latency:percentile(99),
        latency.max, e.connect, e.read, e.write, e.timeout))
end
