//! The Lua scripts: each operation of the fleet is one of them, run
//! atomically on the server and reading the server's clock (`TIME`).

/// The permits script. `KEYS[1]`: the limiter's hash. `ARGV`: limit,
/// period (µs), need, lease, timeout (µs). Returns `{status, granted, wait
/// (µs), cycle left (µs), cycle, free in (µs)}` with status 1 leased, 2
/// reserved, 0 refused; `free in` is how long no permit is left after this
/// request (0 when one is). Resilience4j's `AtomicRateLimiter`, with cycles
/// on Redis's clock. With `need` and `lease` 0 it takes nothing: the health
/// check of a limiter's key.
pub(crate) const PERMITS: &str = r#"
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local timeout = tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cycle = math.floor(now / period)
local state = redis.call('HMGET', KEYS[1], 'cycle', 'permits')
local last = tonumber(state[1])
local permits = tonumber(state[2])
if last == nil or permits == nil then
  permits = limit
elseif last < cycle then
  permits = math.min(permits + (cycle - last) * limit, limit)
end
local left = (cycle + 1) * period - now
local status, granted, wait = 0, 0, 0
if need <= permits and permits > 0 then
  granted = math.min(math.max(lease, need), permits)
  permits = permits - granted
  status = 1
elseif need > 0 then
  local full = math.floor((need - (permits + limit) + limit - 1) / limit)
  if full < 0 then full = 0 end
  wait = full * period + left
  if wait <= timeout then
    permits = permits - need
    granted = need
    status = 2
  end
else
  status = 1
end
redis.call('HSET', KEYS[1], 'cycle', cycle, 'permits', permits)
local debt = 0
if permits < 0 then debt = math.ceil(-permits / limit) end
redis.call('PEXPIRE', KEYS[1], math.ceil((debt + 2) * period / 1000))
local free = 0
if permits < 1 then
  free = (math.ceil((1 - permits) / limit) - 1) * period + left
end
return {status, granted, wait, left, cycle, free}
"#;

/// The half-open episode script. `KEYS[1]`: the breaker's hash: `ep` the
/// episode (the server's time in µs when it began), `v` its verdict (0
/// undecided, 1 closed, 2 open) and `at` when it was reached (ms), `calls`,
/// `failed`, `slow` the outcomes reported, `pep` and `pv` the previous
/// episode and its verdict, and a
/// field `l:<token>` per probe out, its lease's expiry (ms). `ARGV[1]` is
/// the operation:
///
/// - `take joined budget expiry(ms) token opened-ago(ms)`: the verdict of
///   the episode `joined` if it decided; for a process that joined none yet
///   (`joined` 0), the verdict of the last episode if it was reached since
///   the process opened; else a probe of the episode under way (a new one
///   when there is none, or it decided), if fewer than `budget` are out or
///   reported (expired leases are gone).
/// - `report episode token failed slow minimum failures-to-open
///   slow-calls-to-open expiry(ms)`: counts the outcome toward the episode
///   if it is the current one and undecided; the report that brings the
///   outcomes to `minimum` decides (open when the failed or slow ones reach
///   their counts).
/// - `release episode token`: the probe goes back to the budget.
/// - `peek`: reads the key, for the health check.
///
/// Returns `{status, episode, verdict}`: status 1 taken, 2 refused, 3
/// decided (`verdict` 1 closed, 2 open), 0 nothing to say. An episode
/// with no activity for twice the expiry is forgotten with its key.
pub(crate) const EPISODE: &str = r#"
local k = KEYS[1]
local op = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ep = tonumber(redis.call('HGET', k, 'ep')) or 0
local v = tonumber(redis.call('HGET', k, 'v')) or 0
local function previous(e)
  if e ~= 0 and e == tonumber(redis.call('HGET', k, 'pep')) then
    return tonumber(redis.call('HGET', k, 'pv')) or 0
  end
  return 0
end
if op == 'peek' then
  return {0, ep, v}
elseif op == 'take' then
  local joined = tonumber(ARGV[2])
  local budget = tonumber(ARGV[3])
  local expiry = tonumber(ARGV[4])
  if joined ~= 0 then
    if joined == ep and v > 0 then return {3, ep, v} end
    local pv = previous(joined)
    if pv > 0 then return {3, joined, pv} end
  end
  -- a verdict reached since this process opened is about its outage
  if joined == 0 and v > 0 and tonumber(redis.call('HGET', k, 'at')) >= now - tonumber(ARGV[6]) then
    return {3, ep, v}
  end
  if ep == 0 or v > 0 then
    local first = t[1] .. string.sub('000000' .. t[2], -6)
    if tonumber(first) <= ep then first = string.format('%.0f', ep + 1) end
    redis.call('DEL', k)
    redis.call('HSET', k, 'ep', first, 'v', 0, 'calls', 0, 'failed', 0, 'slow', 0)
    if v > 0 then redis.call('HSET', k, 'pep', string.format('%.0f', ep), 'pv', v) end
    ep = tonumber(first)
  end
  local out = 0
  local all = redis.call('HGETALL', k)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'l:' then
      if tonumber(all[i + 1]) <= now then
        redis.call('HDEL', k, all[i])
      else
        out = out + 1
      end
    end
  end
  local calls = tonumber(redis.call('HGET', k, 'calls')) or 0
  local status = 2
  if out + calls < budget then
    redis.call('HSET', k, 'l:' .. ARGV[5], now + expiry)
    status = 1
  end
  redis.call('PEXPIRE', k, 2 * expiry)
  return {status, ep, 0}
elseif op == 'report' then
  local e = tonumber(ARGV[2])
  if e == ep and ep ~= 0 then
    if v == 0 then
      redis.call('HDEL', k, 'l:' .. ARGV[3])
      local calls = redis.call('HINCRBY', k, 'calls', 1)
      local failed = redis.call('HINCRBY', k, 'failed', tonumber(ARGV[4]))
      local slow = redis.call('HINCRBY', k, 'slow', tonumber(ARGV[5]))
      if calls >= tonumber(ARGV[6]) then
        if failed >= tonumber(ARGV[7]) or slow >= tonumber(ARGV[8]) then v = 2 else v = 1 end
        redis.call('HSET', k, 'v', v, 'at', now)
      end
      redis.call('PEXPIRE', k, 2 * tonumber(ARGV[9]))
    end
    if v > 0 then return {3, ep, v} end
    return {0, ep, 0}
  end
  local pv = previous(e)
  if pv > 0 then return {3, e, pv} end
  return {0, ep, 0}
elseif op == 'release' then
  if tonumber(ARGV[2]) == ep and v == 0 then redis.call('HDEL', k, 'l:' .. ARGV[3]) end
  return {0, ep, v}
end
return redis.error_reply('resil: unknown episode operation ' .. tostring(op))
"#;

/// The retry budget script. `KEYS[1]`: the budget's hash, one field per
/// slice of its window: `d<slice>` the first attempts counted in it, `w<slice>`
/// the retries granted in it (slices of `ARGV[1]` µs of the server's clock,
/// a tenth of the budget's `ttl`). `ARGV`: slice (µs), what a first attempt
/// earns and the reserve (both in thousandths of a retry), first attempts
/// to count, retries wanted. First attempts count for the ten slices ending
/// at the current one, retries for eleven (the local budget's rounding:
/// the bound holds over every window of `ttl`). Returns `{granted, balance
/// after}` in whole retries. With nothing to count and nothing wanted it
/// changes nothing but the expiry: the health check of a budget's key.
pub(crate) const BUDGET: &str = r#"
local slice_us = tonumber(ARGV[1])
local per_first = tonumber(ARGV[2])
local reserve = tonumber(ARGV[3])
local deposits = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slice = math.floor(now / slice_us)
if deposits > 0 then
  redis.call('HINCRBY', KEYS[1], 'd' .. slice, deposits)
end
local firsts, retries = 0, 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local f = fields[i]
  local s = tonumber(string.sub(f, 2))
  local n = tonumber(fields[i + 1])
  local kind = string.sub(f, 1, 1)
  if s == nil or n == nil or s < slice - 10 then
    redis.call('HDEL', KEYS[1], f)
  elseif kind == 'd' then
    if s > slice - 10 then firsts = firsts + n end
  elseif kind == 'w' then
    retries = retries + n
  end
end
local balance = reserve + firsts * per_first - retries * 1000
local granted = 0
if want > 0 and balance >= 1000 then
  granted = math.min(want, math.floor(balance / 1000))
  redis.call('HINCRBY', KEYS[1], 'w' .. slice, granted)
  balance = balance - granted * 1000
end
redis.call('PEXPIRE', KEYS[1], math.ceil(slice_us * 12 / 1000))
if balance < 0 then balance = 0 end
return {granted, math.floor(balance / 1000)}
"#;
