-- etag.lua - wrk script: GET a /v1 read with the admin token, with or
-- without an If-None-Match, as bench/joblist.py runs it:
--
--   SLUICE_TOKEN=... SLUICE_ETAG='"<tag>"' wrk -t1 -c8 -d5s -s bench/etag.lua \
--       'http://127.0.0.1:PORT/v1/jobs?limit=50'
--
-- SLUICE_ETAG empty or unset: no If-None-Match (every answer a 200 with
-- its body). At the end prints one line for joblist.py:
--   SLUICE_ETAG_BENCH 200=N 304=N other=N

local token = os.getenv("SLUICE_TOKEN") or ""
local etag = os.getenv("SLUICE_ETAG") or ""

wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. token
if etag ~= "" then
    wrk.headers["If-None-Match"] = etag
end

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

ok200 = 0
ok304 = 0
other = 0

function response(status, headers, body)
    if status == 200 then
        ok200 = ok200 + 1
    elseif status == 304 then
        ok304 = ok304 + 1
    else
        other = other + 1
    end
end

function done(summary, latency, requests)
    local a, b, c = 0, 0, 0
    for _, t in ipairs(threads) do
        a = a + t:get("ok200")
        b = b + t:get("ok304")
        c = c + t:get("other")
    end
    io.write(string.format("SLUICE_ETAG_BENCH 200=%d 304=%d other=%d\n", a, b, c))
end
