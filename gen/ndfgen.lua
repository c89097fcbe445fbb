-- ndfgen.lua -- build-time generator of ndforge (runs under Lua 5.4 or LuaJIT).
--
-- usage: lua ndfgen.lua <spec.lua> <source root> <output dir>
--
-- Reads the spec (pure data) and the templates it names, checks that every
-- NDF_SLOT(NAME) in a template is declared in the spec, that every declared
-- slot is used, and that every family fills every slot; then writes
-- templates.generated.{c,h} into the output dir (only when their content
-- changed).  Local headers (#include "x.cuh") are inlined with #line
-- directives so NVRTC errors point back at the template files; an include
-- not found beside the template is read from the output dir (generated).
local GEN_VERSION = 1

local function die(where, msg)
  io.stderr:write(string.format("ndfgen: %s: error: %s\n", where, msg))
  os.exit(1)
end

local spec_path, root, outdir = arg[1], arg[2], arg[3]
if not (spec_path and root and outdir) then
  die("ndfgen.lua", "usage: lua ndfgen.lua <spec.lua> <source root> <output dir>")
end

local function read_file(path, where)
  local f = io.open(path, "rb")
  if not f then die(where, "cannot open '" .. path .. "'") end
  local s = f:read("*a")
  f:close()
  return s
end

local chunk, err = loadfile(spec_path)
if not chunk then die(spec_path, err) end
local ok, spec = pcall(chunk)
if not ok or type(spec) ~= "table" or type(spec.templates) ~= "table" then
  die(spec_path, "the spec must return a table with a 'templates' list")
end

-- Splits s into lines, keeping the text of each (without the newline).
local function lines_of(s)
  local t = {}
  for line in (s .. (s:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do t[#t + 1] = line end
  return t
end

-- Expands #include "local" lines, recording (file, line) for each output line.
local function expand(relpath, out, seen)
  if seen[relpath] then return end
  seen[relpath] = true
  -- A header generated at build time (gen/ecc.lua) lives in the output dir.
  local path = root .. "/" .. relpath
  local probe = io.open(path, "rb")
  if probe then probe:close() else path = outdir .. "/" .. (relpath:match("([^/]*)$")) end
  local text = read_file(path, relpath)
  local dir = relpath:match("^(.*)/[^/]*$") or "."
  out[#out + 1] = { text = string.format('#line 1 "%s"', relpath), file = relpath, line = 0 }
  for n, line in ipairs(lines_of(text)) do
    local inc = line:match('^%s*#%s*include%s+"([^"]+)"')
    if inc then
      expand(dir .. "/" .. inc, out, seen)
      out[#out + 1] = { text = string.format('#line %d "%s"', n + 1, relpath), file = relpath, line = n }
    elseif line:match("^%s*#%s*pragma%s+once") then
      out[#out + 1] = { text = "", file = relpath, line = n }
    else
      out[#out + 1] = { text = line, file = relpath, line = n }
    end
  end
end

-- A 62-bit content hash (two 31-bit polynomial hashes) that Lua 5.4 and
-- LuaJIT compute identically: every intermediate stays below 2^53.
local function hash_hex(s)
  local a, b = 7, 11
  local M = 2147483647
  for i = 1, #s do
    local c = s:byte(i)
    a = (a * 31 + c) % M
    b = (b * 131 + c) % M
  end
  return string.format("%08x%08x", a, b)
end

local function c_string(s)
  s = s:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\t", "\\t")
  return '"' .. s .. '\\n"'
end

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

local hdr, src = {}, {}
local all_hash_input = { "ndfgen " .. GEN_VERSION }
local templates_out = {}

for ti, t in ipairs(spec.templates) do
  local where = spec_path .. ": templates[" .. ti .. "]"
  if type(t.name) ~= "string" or not t.name:match("^[%a_][%w_]*$") then die(where, "'name' must be an identifier") end
  where = spec_path .. ": template '" .. t.name .. "'"
  if type(t.file) ~= "string" then die(where, "'file' missing") end
  if type(t.slots) ~= "table" then die(where, "'slots' missing") end
  if type(t.kernels) ~= "table" or #t.kernels == 0 then die(where, "'kernels' missing") end
  local lines = {}
  expand(t.file, lines, {})
  -- Cut the text into literal fragments and slot references.
  local frags, used = {}, {}
  local buf = {}
  for _, l in ipairs(lines) do
    local pos = 1
    local text = l.text
    while true do
      local s, e, name = text:find("NDF_SLOT%(([^)]*)%)", pos)
      if not s then break end
      if not name:match("^[%a_][%w_]*$") then
        die(l.file .. ":" .. l.line, "malformed slot 'NDF_SLOT(" .. name .. ")'")
      end
      if not t.slots[name] then
        die(l.file .. ":" .. l.line, "unknown slot '" .. name .. "' (not declared for template '" .. t.name .. "' in " .. spec_path .. ")")
      end
      used[name] = true
      buf[#buf + 1] = text:sub(pos, s - 1)
      frags[#frags + 1] = { lit = table.concat(buf) }
      buf = {}
      frags[#frags + 1] = { slot = name }
      pos = e + 1
    end
    buf[#buf + 1] = text:sub(pos) .. "\n"
  end
  frags[#frags + 1] = { lit = table.concat(buf) }
  for _, name in ipairs(sorted_keys(t.slots)) do
    if not used[name] then die(where, "slot '" .. name .. "' is declared but never used in " .. t.file) end
  end
  local slot_names = sorted_keys(t.slots)
  local slot_index = {}
  for i, name in ipairs(slot_names) do slot_index[name] = i - 1 end
  -- Families: every slot filled, nothing else.
  local combos = {}
  for fi, fam in ipairs(t.families or {}) do
    local fwhere = where .. ": families[" .. fi .. "]"
    for name in pairs(fam) do
      if not t.slots[name] then die(fwhere, "unknown slot '" .. name .. "'") end
    end
    for _, name in ipairs(slot_names) do
      if type(fam[name]) ~= "table" or #fam[name] == 0 then die(fwhere, "slot '" .. name .. "' is not filled") end
    end
    local function rec(i, acc)
      if i > #slot_names then
        local c = {}
        for k, v in ipairs(acc) do c[k] = v end
        combos[#combos + 1] = c
        return
      end
      for _, v in ipairs(fam[slot_names[i]]) do
        acc[i] = tostring(v)
        rec(i + 1, acc)
      end
    end
    rec(1, {})
  end
  local full = {}
  for _, f in ipairs(frags) do full[#full + 1] = f.lit or ("NDF_SLOT(" .. f.slot .. ")") end
  local h = hash_hex(table.concat(full))
  all_hash_input[#all_hash_input + 1] = t.name .. ":" .. h
  templates_out[#templates_out + 1] = { t = t, frags = frags, slot_names = slot_names, slot_index = slot_index,
                                        combos = combos, hash = h }
end

local gen_hash = hash_hex(table.concat(all_hash_input, "\n"))

hdr[#hdr + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua from gen/spec.lua and templates/) */"
hdr[#hdr + 1] = "#ifndef NDF_TEMPLATES_GENERATED_H"
hdr[#hdr + 1] = "#define NDF_TEMPLATES_GENERATED_H"
hdr[#hdr + 1] = "/* One piece of a template: literal text, or a slot (index into slot_names). */"
hdr[#hdr + 1] = "typedef struct ndf__tfrag { const char *text; int slot; } ndf__tfrag;"
hdr[#hdr + 1] = "typedef struct ndf__template {"
hdr[#hdr + 1] = "  const char *name, *file, *hash;"
hdr[#hdr + 1] = "  int nslots; const char *const *slot_names;"
hdr[#hdr + 1] = "  int nfrags; const ndf__tfrag *frags;"
hdr[#hdr + 1] = "  int nkernels; const char *const *kernels;"
hdr[#hdr + 1] = "  int nfamily; const char *const *family; /* nfamily rows of nslots values */"
hdr[#hdr + 1] = "} ndf__template;"
hdr[#hdr + 1] = "extern const ndf__template ndf__templates[];"
hdr[#hdr + 1] = "extern const int ndf__ntemplates;"
hdr[#hdr + 1] = "/* Hash over the generator version and every template. */"
hdr[#hdr + 1] = "extern const char ndf__generator_hash[];"
hdr[#hdr + 1] = "#endif"

src[#src + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua from gen/spec.lua and templates/) */"
src[#src + 1] = '#include "templates.generated.h"'
src[#src + 1] = "#include <stddef.h>"
for i, o in ipairs(templates_out) do
  local p = "t" .. i
  local names = {}
  for _, n in ipairs(o.slot_names) do names[#names + 1] = '"' .. n .. '"' end
  src[#src + 1] = string.format("static const char *const %s_slots[] = {%s};", p, table.concat(names, ", "))
  local ks = {}
  for _, k in ipairs(o.t.kernels) do ks[#ks + 1] = '"' .. k .. '"' end
  src[#src + 1] = string.format("static const char *const %s_kernels[] = {%s};", p, table.concat(ks, ", "))
  src[#src + 1] = string.format("static const ndf__tfrag %s_frags[] = {", p)
  for _, f in ipairs(o.frags) do
    if f.lit then
      local parts = lines_of(f.lit)
      local out = {}
      for j, l in ipairs(parts) do
        if j < #parts or f.lit:sub(-1) == "\n" then out[#out + 1] = "    " .. c_string(l)
        else out[#out + 1] = '    "' .. l:gsub("\\", "\\\\"):gsub('"', '\\"') .. '"' end
      end
      if #out == 0 then out[1] = '    ""' end
      src[#src + 1] = "  {\n" .. table.concat(out, "\n") .. ", -1},"
    else
      src[#src + 1] = string.format("  {NULL, %d}, /* %s */", o.slot_index[f.slot], f.slot)
    end
  end
  src[#src + 1] = "};"
  local fam = {}
  for _, c in ipairs(o.combos) do
    local row = {}
    for _, v in ipairs(c) do row[#row + 1] = '"' .. v .. '"' end
    fam[#fam + 1] = "  " .. table.concat(row, ", ") .. ","
  end
  if #fam == 0 then fam[1] = "  NULL" end
  src[#src + 1] = string.format("static const char *const %s_family[] = {\n%s\n};", p, table.concat(fam, "\n"))
end
src[#src + 1] = "const ndf__template ndf__templates[] = {"
for i, o in ipairs(templates_out) do
  local p = "t" .. i
  src[#src + 1] = string.format('  {"%s", "%s", "%s", %d, %s_slots, %d, %s_frags, %d, %s_kernels, %d, %s_family},',
    o.t.name, o.t.file, o.hash, #o.slot_names, p, #o.frags, p, #o.t.kernels, p, #o.combos, p)
end
src[#src + 1] = "};"
src[#src + 1] = string.format("const int ndf__ntemplates = %d;", #templates_out)
src[#src + 1] = string.format('const char ndf__generator_hash[] = "%s";', gen_hash)

-- Selection networks for rank filters (gen/selnet.lua), when the spec asks.
local sn = spec.selection_networks
local snh, snc = {}, {}
snh[#snh + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua, gen/selnet.lua from gen/spec.lua) */"
snh[#snh + 1] = "#ifndef NDF_SELNETS_GENERATED_H"
snh[#snh + 1] = "#define NDF_SELNETS_GENERATED_H"
snh[#snh + 1] = "#include <stdint.h>"
snh[#snh + 1] = "/* A pruned selection network: after its steps, register `out` of a window of n"
snh[#snh + 1] = " * values holds the k-th smallest.  Steps are 3 bytes (a, b, kind) in"
snh[#snh + 1] = " * ndf__selnet_steps from `offset`: kind 0 = (a, b) <- (min, max), 1 = a <- min,"
snh[#snh + 1] = " * 2 = b <- max.  Entries are sorted by (n, k). */"
snh[#snh + 1] = "typedef struct ndf__selnet { uint8_t n, k, out; uint16_t nsteps; uint32_t offset; } ndf__selnet;"
snh[#snh + 1] = "extern const ndf__selnet ndf__selnets[];"
snh[#snh + 1] = "extern const int ndf__nselnets;"
snh[#snh + 1] = "extern const uint8_t ndf__selnet_steps[];"
snh[#snh + 1] = "#endif"
snc[#snc + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua, gen/selnet.lua from gen/spec.lua) */"
snc[#snc + 1] = '#include "selnets.generated.h"'
do
  local entries, bytes = {}, {}
  if sn then
    local where = spec_path .. ": selection_networks"
    local all, med = sn.all_ranks_up_to, sn.medians_up_to
    if type(all) ~= "number" or type(med) ~= "number" or all < 1 or med < all or med > 255 then
      die(where, "needs numbers all_ranks_up_to >= 1 and medians_up_to in all_ranks_up_to..255")
    end
    local dir = arg[0]:match("^(.*)[/\\][^/\\]*$") or "."
    local selnet = dofile(dir .. "/selnet.lua")
    local off = 0
    for n = 1, med do
      for k = 0, n - 1 do
        if n <= all or k == math.floor(n / 2) then
          local net, out = selnet.network(n, k)
          entries[#entries + 1] = string.format("  {%d, %d, %d, %d, %d},", n, k, out, #net, off)
          local row = {}
          for _, st in ipairs(net) do row[#row + 1] = string.format("%d,%d,%d", st[1], st[2], st[3]) end
          if #row > 0 then bytes[#bytes + 1] = "  " .. table.concat(row, ",") .. "," end
          off = off + 3 * #net
        end
      end
    end
  end
  if #entries == 0 then entries[1] = "  {0, 0, 0, 0, 0}," end
  if #bytes == 0 then bytes[1] = "  0," end
  snc[#snc + 1] = "const ndf__selnet ndf__selnets[] = {\n" .. table.concat(entries, "\n") .. "\n};"
  snc[#snc + 1] = string.format("const int ndf__nselnets = %d;", sn and #entries or 0)
  snc[#snc + 1] = "const uint8_t ndf__selnet_steps[] = {\n" .. table.concat(bytes, "\n") .. "\n};"
end

-- Write only when the content changed, so dependents are not rebuilt for nothing.
local function write_if_changed(path, text)
  local f = io.open(path, "rb")
  if f then
    local old = f:read("*a")
    f:close()
    if old == text then return end
  end
  f = io.open(path, "wb")
  if not f then die(path, "cannot write") end
  f:write(text)
  f:close()
end
os.execute('mkdir -p "' .. outdir .. '"')
write_if_changed(outdir .. "/templates.generated.h", table.concat(hdr, "\n") .. "\n")
write_if_changed(outdir .. "/templates.generated.c", table.concat(src, "\n") .. "\n")
write_if_changed(outdir .. "/selnets.generated.h", table.concat(snh, "\n") .. "\n")
write_if_changed(outdir .. "/selnets.generated.c", table.concat(snc, "\n") .. "\n")
