// Lua scripts of the Redis backend: each compound step runs atomically inside Redis, on Redis's own
// clock (TIME). They apply the same grant rules as locks/grantRules.ts; the conformance suite holds
// the backends to the same behaviour.
//
// Keys per lock key K: lease hash `lockwarden:lease:K` (holder, token, ttl, until, granted); token
// counter `lockwarden:token:K` (INCR only, never deleted); queue zset `lockwarden:waiters:K` ordered by
// (1000 - priority) * 2^40 + arrival seq; ticket expiry hash `lockwarden:waiter-exp:K`; the hash of
// when each waiter took its place `lockwarden:waiter-since:K`; the set of all keys `lockwarden:keys`;
// the global arrival counter `lockwarden:waiter-seq`; the hash of each waiter's owner (tryAcquire's
// `owner`) `lockwarden:waiter-owner:K`. A lease's owner is its hash's `owner` field ('' for none).
// Scripts that drop tickets name the since and owner hashes in the locals `sinceKey` and `ownerKey`.

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

const DROP_EXPIRED_TICKETS = `
local exps = redis.call('HGETALL', KEYS[4])
for i = 1, #exps, 2 do
  if tonumber(exps[i + 1]) <= now then
    redis.call('ZREM', KEYS[3], exps[i])
    redis.call('HDEL', KEYS[4], exps[i])
    redis.call('HDEL', sinceKey, exps[i])
    redis.call('HDEL', ownerKey, exps[i])
  end
end
`;

/**
 * KEYS: lease, token, waiters, waiter-exp, keys, waiter-seq, waiter-since, waiter-owner. ARGV: key,
 * requester, ttlMs, fairness, priority, queueTicketMs, owner ('' for none).
 */
export const ACQUIRE = `${NOW}
local sinceKey = KEYS[7]
local ownerKey = KEYS[8]
${DROP_EXPIRED_TICKETS}
local lease = redis.call('HMGET', KEYS[1], 'holder', 'token', 'until', 'granted')
local holder, token, untilMs, granted = lease[1], lease[2], tonumber(lease[3]), lease[4]
local live = holder ~= false and untilMs ~= nil and untilMs > now
if live and holder == ARGV[2] then
  return {'existing', holder, token, untilMs, tonumber(granted)}
end
local queued = ARGV[4] ~= 'no-starvation-guarantee'
local rank = redis.call('ZRANK', KEYS[3], ARGV[2])
local others = redis.call('ZCARD', KEYS[3]) - (rank and 1 or 0)
if not live and ((not queued) or others == 0 or rank == 0) then
  local newToken = redis.call('INCR', KEYS[2])
  local newUntil = now + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', newToken, 'ttl', ARGV[3], 'until', newUntil, 'granted', now, 'owner', ARGV[7])
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[4], ARGV[2])
  redis.call('HDEL', sinceKey, ARGV[2])
  redis.call('HDEL', ownerKey, ARGV[2])
  redis.call('SADD', KEYS[5], ARGV[1])
  return {'granted', ARGV[2], newToken, newUntil, now}
end
local position = false
if queued then
  if not rank then
    local seq = redis.call('INCR', KEYS[6])
    redis.call('ZADD', KEYS[3], (1000 - tonumber(ARGV[5])) * 1099511627776 + seq, ARGV[2])
    redis.call('HSET', sinceKey, ARGV[2], now)
    if ARGV[7] ~= '' then redis.call('HSET', ownerKey, ARGV[2], ARGV[7]) end
  end
  redis.call('HSET', KEYS[4], ARGV[2], now + tonumber(ARGV[6]))
  redis.call('SADD', KEYS[5], ARGV[1])
  position = redis.call('ZRANK', KEYS[3], ARGV[2]) + 1
end
if live then
  return {'denied', 'HELD', holder, untilMs, others, position, now}
end
return {'denied', 'QUEUED', false, false, others, position, now}
`;

/** Shared by renew and release: refuses unless (holder, token) match. KEYS: lease. ARGV: holder, token. */
const CHECK_OWNER = `${NOW}
local lease = redis.call('HMGET', KEYS[1], 'holder', 'token', 'until', 'ttl')
if lease[1] == false or lease[1] ~= ARGV[1] then return {'refused', 'not-holder', now} end
if lease[2] ~= ARGV[2] then return {'refused', 'stale-token', now} end
`;

/** KEYS: lease. ARGV: holder, token. Extends a live lease by its original TTL. */
export const RENEW = `${CHECK_OWNER}
if tonumber(lease[3]) <= now then return {'refused', 'expired', now} end
local newUntil = now + tonumber(lease[4])
redis.call('HSET', KEYS[1], 'until', newUntil)
return {'ok', newUntil, now}
`;

/** KEYS: lease. ARGV: holder, token. Ends a live lease; an expired one is no longer anyone's to release. */
export const RELEASE = `${CHECK_OWNER}
if tonumber(lease[3]) <= now then return {'refused', 'expired', now} end
redis.call('DEL', KEYS[1])
return {'ok', false, now}
`;

/**
 * KEYS: lease, token, waiters, waiter-exp, waiter-since, waiter-owner. Reads the key on the service
 * clock; the queue comes head first as {requester, priority, expires, since (false if unknown)} groups.
 */
export const INSPECT = `${NOW}
local sinceKey = KEYS[5]
local ownerKey = KEYS[6]
${DROP_EXPIRED_TICKETS}
local lease = redis.call('HMGET', KEYS[1], 'holder', 'token', 'until')
local live = lease[1] ~= false and tonumber(lease[3]) > now
local queue = {}
local ranked = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
for i = 1, #ranked, 2 do
  local w = ranked[i]
  table.insert(queue, w)
  table.insert(queue, 1000 - math.floor(tonumber(ranked[i + 1]) / 1099511627776))
  table.insert(queue, tonumber(redis.call('HGET', KEYS[4], w)) or false)
  table.insert(queue, redis.call('HGET', sinceKey, w))
end
return {
  live and lease[1] or false, live and lease[2] or false, live and tonumber(lease[3]) or false,
  redis.call('GET', KEYS[2]) or false, queue, now
}
`;

/** KEYS: lease, token, waiters, waiter-exp, waiter-since, waiter-owner. ARGV: requester. Its live place in the queue, 1-based, or false. */
export const POSITION = `${NOW}
local sinceKey = KEYS[5]
local ownerKey = KEYS[6]
${DROP_EXPIRED_TICKETS}
local rank = redis.call('ZRANK', KEYS[3], ARGV[1])
if rank then return rank + 1 end
return false
`;

/**
 * KEYS: keys. Lists every live lease and live ticket, each with its owner ('' for none):
 * {now, leases..., '|', tickets...}.
 */
export const SNAPSHOT = `${NOW}
local out = {now}
local keys = redis.call('SMEMBERS', KEYS[1])
local tickets = {}
for _, k in ipairs(keys) do
  local lease = redis.call('HMGET', 'lockwarden:lease:' .. k, 'holder', 'token', 'until', 'owner')
  if lease[1] ~= false and tonumber(lease[3]) > now then
    table.insert(out, k); table.insert(out, lease[1]); table.insert(out, lease[2]); table.insert(out, tonumber(lease[3]))
    table.insert(out, lease[4] or '')
  end
  local waiters = redis.call('ZRANGE', 'lockwarden:waiters:' .. k, 0, -1)
  local position = 0
  for _, w in ipairs(waiters) do
    local exp = tonumber(redis.call('HGET', 'lockwarden:waiter-exp:' .. k, w))
    if exp ~= nil and exp > now then
      position = position + 1
      table.insert(tickets, k); table.insert(tickets, w); table.insert(tickets, position)
      table.insert(tickets, redis.call('HGET', 'lockwarden:waiter-owner:' .. k, w) or '')
    end
  end
end
table.insert(out, '|')
for _, v in ipairs(tickets) do table.insert(out, v) end
return out
`;

/**
 * KEYS: keys. Lists the keys that no live lease holds whose queues have live tickets, each as its key
 * and its live waiters head first: {key, {waiters...}, ...}. One read per key, and the queue of a
 * free key only.
 */
export const STALLED = `${NOW}
local out = {}
for _, k in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local lease = redis.call('HMGET', 'lockwarden:lease:' .. k, 'holder', 'until')
  if lease[1] == false or tonumber(lease[2]) <= now then
    local live = {}
    for _, w in ipairs(redis.call('ZRANGE', 'lockwarden:waiters:' .. k, 0, -1)) do
      local exp = tonumber(redis.call('HGET', 'lockwarden:waiter-exp:' .. k, w))
      if exp ~= nil and exp > now then table.insert(live, w) end
    end
    if #live > 0 then table.insert(out, k); table.insert(out, live) end
  end
end
return out
`;

/**
 * KEYS: keys. ARGV: fractionLeft. Lists the live leases with less than fractionLeft of their TTL left:
 * {key, holder, token, until, ttl, remaining, ...}. One read per key.
 */
export const RUNNING_LOW = `${NOW}
local out = {}
local fraction = tonumber(ARGV[1])
for _, k in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local lease = redis.call('HMGET', 'lockwarden:lease:' .. k, 'holder', 'token', 'until', 'ttl')
  local untilMs, ttl = tonumber(lease[3]), tonumber(lease[4])
  if lease[1] ~= false and untilMs ~= nil and ttl ~= nil and untilMs > now and untilMs - now < ttl * fraction then
    table.insert(out, k); table.insert(out, lease[1]); table.insert(out, lease[2])
    table.insert(out, untilMs); table.insert(out, ttl); table.insert(out, untilMs - now)
  end
end
return out
`;
