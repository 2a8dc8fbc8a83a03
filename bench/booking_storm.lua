-- wrk script for bench/booking_storm.py: POST grid-aligned bookings at random pools, times and
-- tokens, and count responses by status and error code. Config (tokens, pools, base time) comes
-- from the Lua file named by STORM_CONFIG, written by booking_storm.py.
dofile(os.getenv("STORM_CONFIG"))
-- defines: cfg = {tokens = {...}, pools = {...}, base = <epoch s, grid-aligned>, slots = <n>,
--                 max_halfhours = <n>, idempotency = <bool>}

local threads = {}
local next_id = 1

function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

counts, codes, seq = {}, {}, 0  -- globals: done() reads them with thread:get()

function init(args)
  math.randomseed(tid * 104729 + os.time())
  counts, codes, seq = {}, {}, 0
end

local function iso(t)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", t)
end

function request()
  seq = seq + 1
  local pool = cfg.pools[math.random(#cfg.pools)]
  local token = cfg.tokens[math.random(#cfg.tokens)]
  local start = cfg.base + math.random(0, cfg.slots - 1) * 1800
  local finish = start + math.random(1, cfg.max_halfhours) * 1800
  local body = string.format(
    '{"pool": %d, "start": "%s", "end": "%s", "purpose": "booking storm"}',
    pool, iso(start), iso(finish))
  local headers = {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }
  if cfg.idempotency then
    headers["Idempotency-Key"] = string.format("storm-%d-%d-%d", tid, seq, math.random(1e9))
  end
  return wrk.format("POST", "/api/v1/bookings/", headers, body)
end

function response(status, headers, body)
  local key = tostring(status)
  counts[key] = (counts[key] or 0) + 1
  if status >= 400 then
    local code = string.match(body or "", '"code"%s*:%s*"([%w_]+)"') or "?"
    local ck = key .. ":" .. code
    codes[ck] = (codes[ck] or 0) + 1
  end
end

local function json_map(map)
  local parts = {}
  for k, v in pairs(map) do
    table.insert(parts, string.format('"%s": %d', k, v))
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function done(summary, latency, requests)
  local all_counts, all_codes = {}, {}
  for _, thread in ipairs(threads) do
    for k, v in pairs(thread:get("counts") or {}) do all_counts[k] = (all_counts[k] or 0) + v end
    for k, v in pairs(thread:get("codes") or {}) do all_codes[k] = (all_codes[k] or 0) + v end
  end
  local e = summary.errors
  io.write(string.format(
    'STORM_RESULT {"duration_us": %d, "requests": %d, "bytes": %d, ' ..
    '"socket_errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"mean": %.1f, "stdev": %.1f, "max": %d, "p50": %d, "p90": %d, "p99": %d, ' ..
    '"p999": %d}, "statuses": %s, "codes": %s}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9),
    json_map(all_counts), json_map(all_codes)))
end
