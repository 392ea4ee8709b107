"""The Lua scripts of the shared run store: each one round trip, atomic in Redis."""

from __future__ import annotations

# One flush of every dirty run, in one call. KEYS: per run, its stream and its record.
# ARGV: MAXLEN, owner, then per run: first seq, TTL, end (1: the last frame is terminal),
# session id, fencing token (0: none), n, and n frames. Frames already there (up to `last`
# in the record) are skipped, so a write whose answer was lost can be sent again. A durable
# run's write with a stale token is refused (-1: another worker owns the run now). Returns
# per run the last seq now in its stream.
APPEND = """
local out, a = {}, 3
for r = 1, #KEYS, 2 do
  local stream, record = KEYS[r], KEYS[r + 1]
  local seq, ttl, fin = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2] == '1'
  local session, token, n = ARGV[a + 3], ARGV[a + 4], tonumber(ARGV[a + 5])
  a = a + 6
  if token ~= '0' and redis.call('hget', record, 'token') ~= token then
    out[#out + 1] = -1
  else
    local last = tonumber(redis.call('hget', record, 'last') or '0')
    for i = a, a + n - 1 do
      if seq > last then
        if fin and i == a + n - 1 then
          redis.call('xadd', stream, 'MAXLEN', '~', ARGV[1], seq .. '-0', 'f', ARGV[i], 'end', '1')
        else
          redis.call('xadd', stream, 'MAXLEN', '~', ARGV[1], seq .. '-0', 'f', ARGV[i])
        end
        last = seq
      end
      seq = seq + 1
    end
    local status = fin and 'finished' or 'running'
    redis.call('hset', record, 'owner', ARGV[2], 'session_id', session, 'status', status,
               'last', last)
    redis.call('expire', stream, ttl)
    redis.call('expire', record, ttl)
    out[#out + 1] = last
  end
  a = a + n
end
return out
"""

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
