// Lua scripts of the Redis backend: each compound step runs atomically inside Redis, on Redis's own
// clock (TIME). They apply the same grant rules as locks/grantRules.ts; the conformance suite holds
// the backends to the same behaviour.
//
// Keys per lock key K: lease hash `lockwarden:lease:K` (holder, token, ttl, until, granted); the
// key's newest token `lockwarden:token:K`; queue zset `lockwarden:waiters:K` ordered by
// (1000 - priority) * 2^40 + arrival seq; ticket expiry hash `lockwarden:waiter-exp:K`; the hash of
// when each waiter took its place `lockwarden:waiter-since:K`; the hash of each waiter's owner
// (tryAcquire's `owner`) `lockwarden:waiter-owner:K`. A lease's owner is its hash's `owner` field ('' for none).
// Every per-key Redis key carries an expiry a retention (ARGV) past the end of what it holds (the
// lease's deadline, the newest ticket's), so an idle key's records go by themselves; a retention of
// 0 sets none (0.1.0's keeping, while its workers still count tokens per key).
// Global: the token counter `lockwarden:token-seq` (every grant draws from it, so a key's records
// can go), the arrival counter `lockwarden:waiter-seq`, and two indexes the sweeps read instead of
// every key ever used: `lockwarden:held` (K scored by its lease's deadline) and `lockwarden:queued`
// (K scored by its newest ticket's expiry); forgetIdleKeys trims the entries whose time has passed.
// Per requester R: `lockwarden:requester:R`, the keys R holds or waits for, scored by the lease's
// deadline or the ticket's expiry, counted against its limit (entries past their time are trimmed
// when it is counted, and the index expires a retention after its newest entry).
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
 * KEYS: lease, token, waiters, waiter-exp, held, waiter-seq, waiter-since, waiter-owner, queued,
 * token-seq, requester index. ARGV: key, requester, ttlMs, fairness, priority, queueTicketMs, owner
 * ('' for none), retentionMs, maxWaiters, maxKeysPerRequester.
 */
export const ACQUIRE = `${NOW}
local sinceKey = KEYS[7]
local ownerKey = KEYS[8]
local byRequester = KEYS[11]
${DROP_EXPIRED_TICKETS}
-- The other keys this requester holds or waits for, against its limit (grantRules.ts).
local function requesterFull()
  redis.call('ZREMRANGEBYSCORE', byRequester, '-inf', now)
  local n = redis.call('ZCARD', byRequester)
  if redis.call('ZSCORE', byRequester, ARGV[1]) then n = n - 1 end
  return n >= tonumber(ARGV[10])
end
local function engaged(untilMs, flag)
  if flag then redis.call('ZADD', byRequester, flag, untilMs, ARGV[1]) else redis.call('ZADD', byRequester, untilMs, ARGV[1]) end
  local keepUntil = tonumber(redis.call('ZRANGE', byRequester, 0, 0, 'REV', 'WITHSCORES')[2]) + tonumber(ARGV[8])
  if redis.call('PEXPIRETIME', byRequester) < keepUntil then redis.call('PEXPIREAT', byRequester, keepUntil) end
end
local lease = redis.call('HMGET', KEYS[1], 'holder', 'token', 'until', 'granted')
local holder, token, untilMs, granted = lease[1], lease[2], tonumber(lease[3]), lease[4]
local live = holder ~= false and untilMs ~= nil and untilMs > now
if live and holder == ARGV[2] then
  return {'existing', holder, token, untilMs, tonumber(granted)}
end
local queued = ARGV[4] ~= 'no-starvation-guarantee'
local rank = redis.call('ZRANK', KEYS[3], ARGV[2])
local others = redis.call('ZCARD', KEYS[3]) - (rank and 1 or 0)
local retention = tonumber(ARGV[8])
local function expireAt(k, at) if retention > 0 then redis.call('PEXPIREAT', k, at) end end
if not live and ((not queued) or others == 0 or rank == 0) then
  if not rank and requesterFull() then return {'denied', 'REQUESTER_LIMIT', false, false, others, false, now} end
  -- Above the counter, and above the key's own newest (0.1.0 counted per key, and may be ahead).
  local newToken = redis.call('INCR', KEYS[10])
  local newest = redis.call('INCRBY', KEYS[2], 0)
  if newest >= newToken then
    newToken = newest + 1
    redis.call('SET', KEYS[10], newToken)
  end
  local newUntil = now + tonumber(ARGV[3])
  redis.call('SET', KEYS[2], newToken)
  expireAt(KEYS[2], newUntil + retention)
  redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', newToken, 'ttl', ARGV[3], 'until', newUntil, 'granted', now, 'owner', ARGV[7])
  expireAt(KEYS[1], newUntil + retention)
  redis.call('ZADD', KEYS[5], newUntil, ARGV[1])
  engaged(newUntil, nil)
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[4], ARGV[2])
  redis.call('HDEL', sinceKey, ARGV[2])
  redis.call('HDEL', ownerKey, ARGV[2])
  return {'granted', ARGV[2], newToken, newUntil, now}
end
local position = false
if queued and not rank and others >= tonumber(ARGV[9]) then
  -- The queue is full: denied without a ticket (grantRules.ts).
  if live then return {'denied', 'QUEUE_FULL', holder, untilMs, others, false, now} end
  return {'denied', 'QUEUE_FULL', false, false, others, false, now}
end
if queued and not rank and requesterFull() then
  if live then return {'denied', 'REQUESTER_LIMIT', holder, untilMs, others, false, now} end
  return {'denied', 'REQUESTER_LIMIT', false, false, others, false, now}
end
if queued then
  if not rank then
    local seq = redis.call('INCR', KEYS[6])
    redis.call('ZADD', KEYS[3], (1000 - tonumber(ARGV[5])) * 1099511627776 + seq, ARGV[2])
    redis.call('HSET', sinceKey, ARGV[2], now)
    if ARGV[7] ~= '' then redis.call('HSET', ownerKey, ARGV[2], ARGV[7]) end
  end
  redis.call('HSET', KEYS[4], ARGV[2], now + tonumber(ARGV[6]))
  engaged(now + tonumber(ARGV[6]), 'GT')
  -- The queue's records last a retention past its newest ticket.
  redis.call('ZADD', KEYS[9], 'GT', now + tonumber(ARGV[6]), ARGV[1])
  local keepUntil = tonumber(redis.call('ZSCORE', KEYS[9], ARGV[1])) + retention
  for _, q in ipairs({KEYS[3], KEYS[4], sinceKey, ownerKey}) do expireAt(q, keepUntil) end
  position = redis.call('ZRANK', KEYS[3], ARGV[2]) + 1
end
if live then
  return {'denied', 'HELD', holder, untilMs, others, position, now}
end
return {'denied', 'QUEUED', false, false, others, position, now}
`;

/**
 * Shared by renew and release: refuses unless (holder, token) match. KEYS: lease, token, held,
 * requester index. ARGV: holder, token, key, retentionMs.
 */
const CHECK_OWNER = `${NOW}
local lease = redis.call('HMGET', KEYS[1], 'holder', 'token', 'until', 'ttl')
if lease[1] == false or lease[1] ~= ARGV[1] then return {'refused', 'not-holder', now} end
if lease[2] ~= ARGV[2] then return {'refused', 'stale-token', now} end
`;

/** Extends a live lease by its original TTL, and its records' expiry with it. */
export const RENEW = `${CHECK_OWNER}
if tonumber(lease[3]) <= now then return {'refused', 'expired', now} end
local newUntil = now + tonumber(lease[4])
redis.call('HSET', KEYS[1], 'until', newUntil)
if tonumber(ARGV[4]) > 0 then
  redis.call('PEXPIREAT', KEYS[1], newUntil + tonumber(ARGV[4]))
  redis.call('PEXPIREAT', KEYS[2], newUntil + tonumber(ARGV[4]))
end
redis.call('ZADD', KEYS[3], newUntil, ARGV[3])
redis.call('ZADD', KEYS[4], newUntil, ARGV[3])
if redis.call('PEXPIRETIME', KEYS[4]) < newUntil + tonumber(ARGV[4]) then
  redis.call('PEXPIREAT', KEYS[4], newUntil + tonumber(ARGV[4]))
end
return {'ok', newUntil, now}
`;

/**
 * Ends a live lease; an expired one is no longer anyone's to release. The key's newest token is kept
 * for the retention.
 */
export const RELEASE = `${CHECK_OWNER}
if tonumber(lease[3]) <= now then return {'refused', 'expired', now} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[3])
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[4])) end
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
 * KEYS: held, queued. Lists every live lease and live ticket, each with its owner ('' for none):
 * {now, leases..., '|', tickets...}. Reads the keys the indexes call live, no others.
 */
export const SNAPSHOT = `${NOW}
local out = {now}
local tickets = {}
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE')) do
  local lease = redis.call('HMGET', 'lockwarden:lease:' .. k, 'holder', 'token', 'until', 'owner')
  if lease[1] ~= false and tonumber(lease[3]) > now then
    table.insert(out, k); table.insert(out, lease[1]); table.insert(out, lease[2]); table.insert(out, tonumber(lease[3]))
    table.insert(out, lease[4] or '')
  end
end
for _, k in ipairs(redis.call('ZRANGE', KEYS[2], '(' .. now, '+inf', 'BYSCORE')) do
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
 * KEYS: queued. Lists the keys that no live lease holds whose queues have live tickets, each as its
 * key and its live waiters head first: {key, {waiters...}, ...}. One read per key with a live ticket,
 * and the queue of a free key only.
 */
export const STALLED = `${NOW}
local out = {}
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE')) do
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
 * KEYS: held. ARGV: fractionLeft. Lists the live leases with less than fractionLeft of their TTL left:
 * {key, holder, token, until, ttl, remaining, ...}. One read per live lease.
 */
export const RUNNING_LOW = `${NOW}
local out = {}
local fraction = tonumber(ARGV[1])
for _, k in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE')) do
  local lease = redis.call('HMGET', 'lockwarden:lease:' .. k, 'holder', 'token', 'until', 'ttl')
  local untilMs, ttl = tonumber(lease[3]), tonumber(lease[4])
  if lease[1] ~= false and untilMs ~= nil and ttl ~= nil and untilMs > now and untilMs - now < ttl * fraction then
    table.insert(out, k); table.insert(out, lease[1]); table.insert(out, lease[2])
    table.insert(out, untilMs); table.insert(out, ttl); table.insert(out, untilMs - now)
  end
end
return out
`;

/**
 * KEYS: held, queued. ARGV: batch. Drops the index entries whose time has passed (a lease that ended
 * unreleased, a queue whose tickets all lapsed), oldest first, at most a batch of each; the records
 * they named expire by themselves. Returns how many entries went.
 */
export const FORGET = `${NOW}
local gone = 0
for _, index in ipairs(KEYS) do
  local old = redis.call('ZRANGE', index, '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
  if #old > 0 then gone = gone + redis.call('ZREM', index, unpack(old)) end
end
return gone
`;

/**
 * Moves a batch of keys from 0.1.0's set of every key ever used (`lockwarden:keys`) into the indexes,
 * gives their records expiries, and raises the token counter above their newest tokens. KEYS: keys,
 * held, queued, token-seq. ARGV: retentionMs, batch. Returns how many keys are left to move.
 */
export const MIGRATE_KEY_SET = `${NOW}
local retention = tonumber(ARGV[1])
local seq = tonumber(redis.call('GET', KEYS[4]) or '0')
for _, k in ipairs(redis.call('SPOP', KEYS[1], tonumber(ARGV[2]))) do
  local newest = tonumber(redis.call('GET', 'lockwarden:token:' .. k) or '0') or 0
  if newest > seq then seq = newest end
  local endsAt = now
  local untilMs = tonumber(redis.call('HGET', 'lockwarden:lease:' .. k, 'until'))
  if untilMs then
    redis.call('ZADD', KEYS[2], untilMs, k)
    if untilMs > endsAt then endsAt = untilMs end
    redis.call('PEXPIREAT', 'lockwarden:lease:' .. k, endsAt + retention)
  end
  local latest = 0
  for _, e in ipairs(redis.call('HVALS', 'lockwarden:waiter-exp:' .. k)) do
    if tonumber(e) > latest then latest = tonumber(e) end
  end
  if latest > 0 then
    redis.call('ZADD', KEYS[3], latest, k)
    for _, prefix in ipairs({'waiters', 'waiter-exp', 'waiter-since', 'waiter-owner'}) do
      redis.call('PEXPIREAT', 'lockwarden:' .. prefix .. ':' .. k, math.max(latest, now) + retention)
    end
  end
  redis.call('PEXPIREAT', 'lockwarden:token:' .. k, endsAt + retention)
end
redis.call('SET', KEYS[4], seq)
return redis.call('SCARD', KEYS[1])
`;
