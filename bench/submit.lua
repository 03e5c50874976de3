-- submit.lua - wrk script: POST small job documents to /v1/jobs.
--
--   SLUICE_TOKEN=... wrk -t2 -c64 -d10s --latency -s bench/submit.lua \
--       http://127.0.0.1:PORT/v1/jobs
--
-- Every job asks for 1 GPU, and bench/run.sh and bench/slurm_rest.sh
-- cordon every node (bench/cordon_all.sh), so jobs stay Pending and the
-- figure is the durable submission rate alone. SLUICE_BENCH_GPUS sets
-- another count.
-- Names carry the thread and a sequence number: b<run>-<thread>-<n>.
-- At the end prints one machine-readable line for bench/run.sh:
--   SLUICE_BENCH requests=N created=N non201=N codes=400:3,503:1
--                duration_us=N p50_us=N p99_us=N max_us=N
-- plus socket errors (connect/read/write/timeout) as wrk counts them.

local token = os.getenv("SLUICE_TOKEN") or ""
local run = os.getenv("SLUICE_BENCH_RUN") or "0"
local gpus = math.floor(tonumber(os.getenv("SLUICE_BENCH_GPUS") or "") or 1)

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token

local threads = {}

function setup(thread)
    thread:set("tid", #threads)
    table.insert(threads, thread)
end

-- Per-thread state (each thread has its own Lua state).
local seq = 0
non201 = 0
created = 0
codes = ""
local code_counts = {}

function request()
    seq = seq + 1
    local body = string.format(
        '{"apiVersion":"sluice/v1","kind":"Job","metadata":{"name":"b%s-%d-%d",' ..
        '"team":"default"},"spec":{"command":["true"],"resources":{"gpus":%d}}}',
        run, tid, seq, gpus)
    return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
    if status == 201 then
        created = created + 1
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
    if total_non201 > 0 then
        io.write(string.format("non-201 answers: %d (status:count per thread: %s)\n",
            total_non201, table.concat(all_codes, ",")))
    end
end
