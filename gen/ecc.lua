-- ecc.lua -- local-contribution tables of the Euler characteristic curves
-- (runtime/ops/ecc/ecc.c), emitted as C at build time:
--   lua ecc.lua OUTDIR  ->  OUTDIR/ecc_tables.generated.{c,h,cuh}
--
-- A voxel v owns the cells of the cubical complex it decides: in the
-- V-construction (voxels are vertices, a cell enters at the max of its
-- vertices) the cells whose other vertices all come before v in the order
-- (value, linear index); in the T-construction (voxels are top cells, a face
-- enters at the min of the top cells holding it) the faces whose other top
-- cells all come after v.  "v wins against u" means that order test holds.
--
-- The cells around v are split over the 2^d orthants sigma in {-1,+1}^d.  In
-- one orthant, a cell is a subset p of the axes (the axes on which the cell
-- reaches out from v along sigma: spanned axes in V, axes on which the face
-- is shared with the neighbouring top cell in T) and is decided by the
-- neighbours v + sigma*j for the non-empty subsets j of p.  A cell with
-- |p| = k lies in 2^(d-k) orthants, so each orthant counts it with the
-- weight 2^k / 2^d; multiplied by 2^d:
--   LUT[m] = sum over p with every bit j-1 (j a non-empty subset of p) set in m
--            of  sign(p) * 2^|p|,
--   sign V = (-1)^|p| (a cell of dimension |p|), sign T = (-1)^(d-|p|);
-- the voxel's contribution is (sum over orthants of LUT[mask]) / 2^d, and m
-- has bit j-1 set when v wins against v + sigma*j.  Neighbours outside the
-- image: v loses in V (the cell does not exist), wins in T (a boundary face).
--
-- The gather table names, for each orthant and j, the bit of the voxel's
-- 3^d-neighbourhood word: bit sum_i (o_i + 1) * 3^(d-1-i) for offset o.
-- The .cuh (for the CUDA templates, templates/ndf_ecc.cuh) lists the same
-- cells without the orthant split: c(v) = sum over the 3^d - 1 + 1 cells
-- around v (offset o in {-1,0,1}^d, k = its non-zero axes) of sign(k) when v
-- wins against every neighbour o restricted to a non-empty subset of those
-- axes: NDF_ECC_CELLS<d>(X) expands X(mask, k) per cell, mask holding those
-- neighbours' bits of the neighbourhood word.  Plain macros: C includes it too.
-- Plain arithmetic only: it runs under Lua 5.4 and LuaJIT.
local outdir = assert(arg[1], "usage: lua ecc.lua OUTDIR")

local function band(a, b) -- bitwise and of small non-negative integers
  local r, bit = 0, 1
  while a > 0 and b > 0 do
    if a % 2 == 1 and b % 2 == 1 then r = r + bit end
    a, b, bit = math.floor(a / 2), math.floor(b / 2), bit * 2
  end
  return r
end
local function popcount(a)
  local c = 0
  while a > 0 do c = c + a % 2; a = math.floor(a / 2) end
  return c
end

local function lut(d, construction)
  local n, out = 2 ^ d, {}
  for m = 0, 2 ^ (n - 1) - 1 do
    local sum = 0
    for p = 0, n - 1 do
      local ok = true
      for j = 1, n - 1 do
        if band(j, p) == j then -- j is a non-empty subset of p
          if band(math.floor(m / 2 ^ (j - 1)), 1) == 0 then ok = false end
        end
      end
      if ok then
        local k = popcount(p)
        local sgn = construction == "V" and (-1) ^ k or (-1) ^ (d - k)
        sum = sum + sgn * 2 ^ k
      end
    end
    out[#out + 1] = string.format("%d", sum)
  end
  return out
end

local function gather(d)
  local rows = {}
  for s = 0, 2 ^ d - 1 do -- orthant: bit i of s set = sigma_i = +1
    local row = {}
    for j = 1, 2 ^ d - 1 do
      local t = 0
      for i = 0, d - 1 do
        local sigma = band(math.floor(s / 2 ^ i), 1) == 1 and 1 or -1
        local o = band(math.floor(j / 2 ^ i), 1) == 1 and sigma or 0
        t = t * 3 + (o + 1)
      end
      row[#row + 1] = string.format("%d", t)
    end
    rows[#rows + 1] = "  {" .. table.concat(row, ", ") .. "},"
  end
  return rows
end

-- Cells around a voxel: offset o (ternary digits), the mask of the
-- neighbours o restricted to each non-empty subset of its non-zero axes.
local function cells(d)
  local out = {}
  for code = 0, 3 ^ d - 1 do
    local o, q = {}, code
    for i = d - 1, 0, -1 do o[i] = q % 3 - 1; q = math.floor(q / 3) end
    local axes = {}
    for i = 0, d - 1 do if o[i] ~= 0 then axes[#axes + 1] = i end end
    local mask = 0
    for j = 1, 2 ^ #axes - 1 do
      local t = 0
      for i = 0, d - 1 do
        local v = 0
        for a, ax in ipairs(axes) do
          if ax == i and band(math.floor(j / 2 ^ (a - 1)), 1) == 1 then v = o[i] end
        end
        t = t * 3 + (v + 1)
      end
      mask = mask + 2 ^ t
    end
    out[#out + 1] = string.format("X(0x%07xu, %d)", math.floor(mask), #axes)
  end
  return out
end

local h, c = {}, {}
h[#h + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ecc.lua) */"
h[#h + 1] = "#ifndef NDF_ECC_TABLES_GENERATED_H\n#define NDF_ECC_TABLES_GENERATED_H\n#include <stdint.h>"
h[#h + 1] = "/* ndf__ecc_lut<d><V|T>[mask]: 2^d times an orthant's share of a voxel's contribution. */"
h[#h + 1] = "extern const int8_t ndf__ecc_lut2V[8], ndf__ecc_lut2T[8], ndf__ecc_lut3V[128], ndf__ecc_lut3T[128];"
h[#h + 1] = "/* ndf__ecc_gather<d>[orthant][j-1]: the neighbourhood bit of offset sigma*j (axis i: bit i of orthant = +1);"
h[#h + 1] = " * static here so that unrolled loops see constants. */"
for _, d in ipairs({ 2, 3 }) do
  h[#h + 1] = string.format("static const uint8_t ndf__ecc_gather%d[%d][%d] = {\n%s\n};", d, 2 ^ d, 2 ^ d - 1,
    table.concat(gather(d), "\n"))
end
h[#h + 1] = "#endif"
c[#c + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ecc.lua) */"
c[#c + 1] = '#include "ecc_tables.generated.h"'
for _, d in ipairs({ 2, 3 }) do
  for _, k in ipairs({ "V", "T" }) do
    c[#c + 1] = string.format("const int8_t ndf__ecc_lut%d%s[%d] = {%s};", d, k, 2 ^ (2 ^ d - 1),
      table.concat(lut(d, k), ", "))
  end
end

local function write_if_changed(path, text)
  local f = io.open(path, "rb")
  if f then
    local old = f:read("*a")
    f:close()
    if old == text then return end
  end
  f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end
os.execute('mkdir -p "' .. outdir .. '"')
write_if_changed(outdir .. "/ecc_tables.generated.h", table.concat(h, "\n") .. "\n")
write_if_changed(outdir .. "/ecc_tables.generated.c", table.concat(c, "\n") .. "\n")
local g = {}
g[#g + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ecc.lua) */"
g[#g + 1] = "#ifndef NDF_ECC_TABLES_GENERATED_CUH\n#define NDF_ECC_TABLES_GENERATED_CUH"
g[#g + 1] = "/* NDF_ECC_CELLS<d>(X): X(mask, k) for each of the 3^d cells around a voxel (k: axes it reaches"
g[#g + 1] = " * out along; mask: the bits of the neighbours that decide whether the voxel owns it). */"
for _, d in ipairs({ 2, 3 }) do
  g[#g + 1] = string.format("#define NDF_ECC_CELLS%d(X) %s", d, table.concat(cells(d), " "))
end
g[#g + 1] = "#endif"
write_if_changed(outdir .. "/ecc_tables.generated.cuh", table.concat(g, "\n") .. "\n")
