-- selnet.lua -- selection networks for rank filters (used by ndfgen.lua).
--
-- For a window of n values and a rank k, a selection network is a list of
-- compare-exchange steps on registers 0..n-1 after which register `out`
-- holds the k-th smallest value.  It is Batcher's odd-even merge sort on
-- N = 2^ceil(log2 n) wires, pruned:
--   1. wires n..N-1 carry +inf: a comparator between two of them, or with
--      +inf on its max side, is dropped; one with +inf on its min side only
--      moves the finite value down, a relabelling of registers, no code;
--   2. walking backwards from the output, a comparator whose outputs are
--      not needed is dropped, and one whose min (or max) output alone is
--      needed becomes a single min (or max).
-- Plain arithmetic only: it runs unchanged under Lua 5.4 and LuaJIT.
local M = {}

-- Batcher's odd-even merge sort comparators (i < j) for N a power of two.
local function batcher(N)
  local comps = {}
  local p = 1
  while p < N do
    local k = p
    while k >= 1 do
      local j = k % p
      while j < N - k do
        for i = 0, k - 1 do
          if i + j + k < N and math.floor((i + j) / (2 * p)) == math.floor((i + j + k) / (2 * p)) then
            comps[#comps + 1] = { i + j, i + j + k }
          end
        end
        j = j + 2 * k
      end
      k = math.floor(k / 2)
    end
    p = p * 2
  end
  return comps
end

-- Kinds of emitted steps: 0 compare-exchange (a <- min, b <- max), 1 a <- min(a, b), 2 b <- max(a, b).
function M.network(n, k)
  local N = 1
  while N < n do N = N * 2 end
  local comps = batcher(N)
  -- Forward: drop +inf comparators, relabel registers for the moving ones.
  local phys, inf = {}, {}
  for w = 0, N - 1 do
    phys[w] = w
    inf[w] = w >= n
  end
  local steps = {}
  for _, c in ipairs(comps) do
    local i, j = c[1], c[2]
    if inf[i] and inf[j] then
      -- both +inf: nothing
    elseif inf[j] then
      -- max side is +inf: min(i, inf) = i, max = inf: nothing
    elseif inf[i] then
      -- the finite value moves to wire i and +inf to wire j: a relabelling
      phys[i], phys[j] = phys[j], phys[i]
      inf[i], inf[j] = false, true
    else
      steps[#steps + 1] = { phys[i], phys[j] }
    end
  end
  local out = phys[k]
  -- Backward: keep what the output needs.
  local needed = { [out] = true }
  local kept = {}
  for s = #steps, 1, -1 do
    local a, b = steps[s][1], steps[s][2]
    local na, nb = needed[a], needed[b]
    if na or nb then
      kept[#kept + 1] = { a, b, (na and nb) and 0 or (na and 1 or 2) }
      needed[a], needed[b] = true, true
    end
  end
  local net = {}
  for s = #kept, 1, -1 do net[#net + 1] = kept[s] end
  return net, out
end

return M
