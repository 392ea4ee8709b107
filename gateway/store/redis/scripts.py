"""The Lua scripts of the shared run store: each one round trip, atomic in Redis."""

from __future__ import annotations

# One flush of every dirty run, in one call. KEYS[1]: the set of running durable runs.
# ARGV: MAXLEN, owner, lease ms, key prefix, then per run two arguments (three with a
# checkpoint): a header "id first-seq ttl end token has-checkpoint session-id", and its
# frames concatenated (each ends with the only blank line in it), then the checkpoint.
# Few arguments, because the client packs each one in Python: per-frame arguments cost the
# owner more CPU than the rest of the mirror. Frames already there (up to `last` in the
# record) are skipped, so a write whose answer was lost can be sent again. A durable run's
# write (token not 0) with a stale token is refused (-1: another worker owns the run now);
# one whose record vanished (Redis restarted empty) takes the writer's token; each renews
# the lease (its owner is alive). Keys are built here: one Redis, not a cluster.
# Returns the positions (1, 2...) of the runs refused: usually none, the cheapest answer.
APPEND = """
local refused, a, n = {}, 5, 0
while a <= #ARGV do
  n = n + 1
  local id, seq, ttl, fin, token, has, session =
    string.match(ARGV[a], '^(%S+) (%d+) (%d+) ([01]) (%d+) ([01]) (.*)$')
  local frames, ckpt = ARGV[a + 1], nil
  a = a + 2
  if has == '1' then ckpt, a = ARGV[a], a + 1 end
  seq, fin = tonumber(seq), fin == '1'
  local record = ARGV[4] .. 'run:' .. id
  local stream = record .. ':events'
  local held = redis.call('hget', record, 'token')
  if token ~= '0' and held and held ~= token then
    refused[#refused + 1] = n
  else
    local last = tonumber(redis.call('hget', record, 'last') or '0')
    local pos = 1
    while pos <= #frames do
      local stop = string.find(frames, '\\n\\n', pos, true)
      local frame = string.sub(frames, pos, stop + 1)
      pos = stop + 2
      if seq > last then
        if fin and pos > #frames then
          redis.call('xadd', stream, 'MAXLEN', '~', ARGV[1], seq .. '-0', 'f', frame, 'end', '1')
        else
          redis.call('xadd', stream, 'MAXLEN', '~', ARGV[1], seq .. '-0', 'f', frame)
        end
        last = seq
      end
      seq = seq + 1
    end
    local status = fin and 'finished' or 'running'
    redis.call('hset', record, 'owner', ARGV[2], 'session_id', session, 'status', status,
               'last', last)
    if ckpt then redis.call('hset', record, 'ckpt', ckpt) end
    if fin then
      redis.call('hdel', record, 'ckpt')
      redis.call('del', record .. ':lease')
      redis.call('srem', KEYS[1], id)
    elseif token ~= '0' then
      redis.call('hset', record, 'token', token)
      redis.call('set', record .. ':lease', ARGV[2], 'PX', ARGV[3])
      redis.call('hdel', record, 'orphan')
    end
    redis.call('expire', stream, ttl)
    redis.call('expire', record, ttl)
  end
end
return refused
"""

# A new leased record (a durable run, a batch): its lease (KEYS[3], PX ARGV[2]) unless
# someone holds it, a fencing token one above any before (HINCRBY on the record, KEYS[2]),
# status `running` and the caller's fields, a TTL, and its id in the set where takeovers
# look (KEYS[1]). ARGV: worker, lease ms, id, TTL, then field, value pairs. Returns the
# token, or 0 if the lease is held.
CLAIM = """
if not redis.call('set', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local token = redis.call('hincrby', KEYS[2], 'token', 1)
redis.call('hset', KEYS[2], 'status', 'running', unpack(ARGV, 5))
redis.call('expire', KEYS[2], ARGV[4])
redis.call('sadd', KEYS[1], ARGV[3])
return token
"""

# Renew the leases of the runs this worker drives. KEYS: their records; ARGV: worker, lease
# ms, then each run's token. Per run: 1 renewed, 0 lost (another token holds it), 2 ended.
RENEW = """
local out = {}
for i, record in ipairs(KEYS) do
  local info = redis.call('hmget', record, 'token', 'status')
  if info[1] and info[1] ~= ARGV[i + 2] then
    out[i] = 0
  elseif info[2] and info[2] ~= 'running' then
    out[i] = 2
  else
    redis.call('set', record .. ':lease', ARGV[1], 'PX', ARGV[2])
    redis.call('hdel', record, 'orphan')
    out[i] = 1
  end
end
return out
"""


def takeover(kind: str, holder: str, extra: tuple[str, ...] = (), needed: str = "") -> str:
    """The script that takes over running records (`{prefix}{kind}:{id}`, ids in the set
    KEYS[1]) whose lease expired (their worker died): up to ARGV[4] of them, each with a
    new lease and token, `holder` set to this worker. A record is only taken once its lease
    has been missing for ARGV[5] ms (the first look marks it `orphan`), so an owner cut off
    from Redis for a moment renews and writes first; never by its own worker (stalled, it
    renews); and (with `needed`) only with that field set. ARGV: worker, lease ms, key
    prefix, limit, grace ms. Keys are built here: one Redis, not a cluster. Returns each
    record's id, token and `extra` fields (missing: '0')."""
    fields = ", ".join(f"'{name}'" for name in ("status", "orphan", holder, *extra))
    ready = f"info[{4 + extra.index(needed)}] and " if needed else ""
    more = "".join(f"      out[#out + 1] = info[{4 + i}] or '0'\n" for i in range(len(extra)))
    return f"""
local out, prefix = {{}}, ARGV[3]
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, id in ipairs(redis.call('smembers', KEYS[1])) do
  local record = prefix .. '{kind}:' .. id
  local info = redis.call('hmget', record, {fields})
  if info[1] ~= 'running' then
    redis.call('srem', KEYS[1], id)
  elseif {ready}info[3] ~= ARGV[1] and redis.call('exists', record .. ':lease') == 0 then
    if not info[2] then
      redis.call('hset', record, 'orphan', now)
    elseif now - tonumber(info[2]) >= tonumber(ARGV[5]) then
      redis.call('set', record .. ':lease', ARGV[1], 'PX', ARGV[2])
      local token = redis.call('hincrby', record, 'token', 1)
      redis.call('hset', record, '{holder}', ARGV[1])
      redis.call('hdel', record, 'orphan')
      out[#out + 1] = id
      out[#out + 1] = token
{more}      if #out >= {2 + len(extra)} * tonumber(ARGV[4]) then break end
    end
  end
end
return out
"""


# Durable runs: each with its checkpoint and the last seq written.
TAKEOVER = takeover("run", "owner", ("ckpt", "last"), needed="ckpt")

# Count a reader on a non-owner process in (+1) or out (-1), only while the run exists; when
# the last one leaves a running run, tell the owner so its grace timer starts now.
COUNT_READER = """
if redis.call('exists', KEYS[1]) == 0 then return false end
local n = redis.call('hincrby', KEYS[1], 'readers', ARGV[1])
local info = redis.call('hmget', KEYS[1], 'status', 'owner')
if n <= 0 and info[1] == 'running' and info[2] then
  redis.call('publish', ARGV[2] .. info[2], 'idle ' .. ARGV[3])
end
return info[1]
"""
