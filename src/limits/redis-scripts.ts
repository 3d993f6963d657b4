// The Lua side of the limiter. Each script runs atomically in Redis, so one
// request's meters (key and organisation, requests and tokens) and budgets are
// checked and consumed together by one EVALSHA, in one round trip, whatever
// the other instances are doing. Numbers come back as strings: Redis would
// truncate a Lua number to an integer. TATs are epoch ms kept to 3 decimals.

/** KEYS: n TAT keys, then the budget keys. ARGV: now, n, window, n × (interval, cost), then the budget amounts. */
export const ADMIT = `
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local m = #KEYS - n
local spent = {}
local status = 0
for j = 1, m do
  spent[j] = redis.call('GET', KEYS[n + j]) or '0'
  if tonumber(spent[j]) >= tonumber(ARGV[3 + 2 * n + j]) then status = 2 end
end
local cur, nxt = {}, {}
local wait = 0
for i = 1, n do
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  cur[i] = tat
  local t = tat + tonumber(ARGV[2 + 2 * i]) * tonumber(ARGV[3 + 2 * i])
  nxt[i] = t
  if t - window - now > wait then wait = t - window - now end
end
if status == 0 and wait > 0 then status = 1 end
local out = { tostring(status), string.format('%.3f', wait) }
for i = 1, n do
  local t = cur[i]
  if status == 0 then
    t = nxt[i]
    redis.call('SET', KEYS[i], string.format('%.3f', t), 'PX', math.ceil(t - now) + 1000)
  end
  out[#out + 1] = string.format('%.3f', t)
end
for j = 1, m do out[#out + 1] = spent[j] end
return out
`;

/** KEYS: n TAT keys, then budget keys. ARGV: now, n, n × adjustment in ms, then per budget (amount, ttl ms). */
export const SETTLE = `
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
for i = 1, n do
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  local t = tat + tonumber(ARGV[2 + i])
  if t <= now then redis.call('DEL', KEYS[i])
  else redis.call('SET', KEYS[i], string.format('%.3f', t), 'PX', math.ceil(t - now) + 1000) end
end
for j = 1, #KEYS - n do
  local a = 2 + n + 2 * j - 1
  redis.call('INCRBYFLOAT', KEYS[n + j], ARGV[a])
  redis.call('PEXPIRE', KEYS[n + j], ARGV[a + 1])
end
return 1
`;

/** KEYS[1] a spend counter; ARGV: amount, ttl ms. Raises the counter to at least `amount`, never lowers it. */
export const SEED = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return 1
`;
