-- tunables.lua -- emits the table of tunables (the spec's `tunables` section) as C.
--
-- usage: lua tunables.lua <spec.lua> <output dir>
--
-- Checks every entry (a name "<op>.<knob>", an op, templates the spec declares,
-- an enumerated domain or an integer range with its default, the values
-- `ndforge tune` searches within the domain, a rule), then writes
-- tunables.generated.{c,h} (only when their content changed): the table
-- ndf__tunables[], an index NDF__TUNE_<NAME> per tunable and, for enumerated
-- ones, NDF__TUNE_<NAME>__<VALUE> per value (its index; the default is 0).
-- The rule (`applies`) is C over `const ndf__tune_work *w` and becomes a
-- function of the table.

local function die(where, msg)
  io.stderr:write(string.format("tunables.lua: %s: error: %s\n", where, msg))
  os.exit(1)
end

local spec_path, outdir = arg[1], arg[2]
if not (spec_path and outdir) then die("tunables.lua", "usage: lua tunables.lua <spec.lua> <output dir>") end
local chunk, err = loadfile(spec_path)
if not chunk then die(spec_path, err) end
local ok, spec = pcall(chunk)
if not ok or type(spec) ~= "table" then die(spec_path, "the spec must return a table") end
local tun = spec.tunables or {}
if type(tun) ~= "table" then die(spec_path, "'tunables' must be a list") end

local templates = {}
for _, t in ipairs(spec.templates or {}) do templates[t.name] = true end

local function ident(s) return (s:upper():gsub("[^%w]", "_")) end
local function c_string(s) return '"' .. s:gsub("\\", "\\\\"):gsub('"', '\\"') .. '"' end
local function is_int(v) return type(v) == "number" and v == math.floor(v) and v >= -2147483647 and v <= 2147483647 end

local hdr, src = {}, {}
hdr[#hdr + 1] = "/* This is a generated file. DO NOT EDIT! (gen/tunables.lua from gen/spec.lua) */"
hdr[#hdr + 1] = "#ifndef NDF_TUNABLES_GENERATED_H"
hdr[#hdr + 1] = "#define NDF_TUNABLES_GENERATED_H"
hdr[#hdr + 1] = "enum {"
src[#src + 1] = "/* This is a generated file. DO NOT EDIT! (gen/tunables.lua from gen/spec.lua) */"
src[#src + 1] = '#include "tune.h"'
local rows, defs, seen = {}, {}, {}
for i, t in ipairs(tun) do
  local where = spec_path .. ": tunables[" .. i .. "]"
  if type(t.name) ~= "string" or not t.name:match("^[a-z][a-z0-9_]*%.[a-z0-9_]+$") then
    die(where, "needs a name '<op>.<knob>' (lower case, digits, '_')")
  end
  where = spec_path .. ": tunable " .. t.name
  if seen[t.name] then die(where, "declared twice") end
  seen[t.name] = true
  if type(t.op) ~= "string" or t.op == "" then die(where, "needs an op") end
  if type(t.templates) ~= "table" or #t.templates == 0 then die(where, "needs the templates it picks among") end
  for _, k in ipairs(t.templates) do
    if not templates[k] then die(where, "template '" .. tostring(k) .. "' is not in the spec") end
  end
  if type(t.doc) ~= "string" or t.doc == "" then die(where, "needs a doc") end
  if type(t.applies) ~= "string" or t.applies == "" then die(where, "needs a rule (applies)") end
  local id = "NDF__TUNE_" .. ident(t.name)
  hdr[#hdr + 1] = string.format("  %s = %d,", id, i - 1)
  local p = "tn" .. i
  local nvalues, lo, hi, def, search = 0, 0, 0, 0, {}
  if t.values then
    if t.range then die(where, "has both values and a range") end
    if type(t.values) ~= "table" or #t.values < 2 then die(where, "needs at least two values") end
    local index = {}
    local vs = {}
    for j, v in ipairs(t.values) do
      if type(v) ~= "string" or not v:match("^[%w_]+$") then die(where, "value " .. j .. " is not a word") end
      if index[v] then die(where, "value '" .. v .. "' twice") end
      index[v] = j - 1
      vs[#vs + 1] = c_string(v)
      defs[#defs + 1] = string.format("#define %s__%s %d", id, ident(v), j - 1)
    end
    if t.default ~= nil and t.default ~= t.values[1] then die(where, "the default is the first value") end
    nvalues, lo, hi, def = #t.values, 0, #t.values - 1, 0
    src[#src + 1] = string.format("static const char *const %s_values[] = {%s};", p, table.concat(vs, ", "))
    if t.search == nil then
      for j = 1, #t.values do search[#search + 1] = j - 1 end
    elseif t.search ~= false then
      for _, v in ipairs(t.search) do
        if index[v] == nil then die(where, "search value '" .. tostring(v) .. "' is not a value") end
        search[#search + 1] = index[v]
      end
    end
  elseif t.range then
    if type(t.range) ~= "table" or not is_int(t.range[1]) or not is_int(t.range[2]) or t.range[1] > t.range[2] then
      die(where, "range must be {lo, hi}, integers, lo <= hi")
    end
    lo, hi = t.range[1], t.range[2]
    if not is_int(t.default) or t.default < lo or t.default > hi then die(where, "needs a default within its range") end
    def = t.default
    if t.search == nil then die(where, "a range needs `search` (a list, or false)") end
    if t.search ~= false then
      for _, v in ipairs(t.search) do
        if not is_int(v) or v < lo or v > hi then die(where, "search value " .. tostring(v) .. " is outside the range") end
        search[#search + 1] = v
      end
    end
  else
    die(where, "needs values or a range")
  end
  if #search == 1 then die(where, "a search of one value: use search = false") end
  if #search > 0 then
    local has_def = false
    for _, v in ipairs(search) do has_def = has_def or v == def end
    if not has_def then die(where, "the search must include the default") end
  end
  src[#src + 1] = string.format("static int %s_applies(const ndf__tune_work *w) { (void)w; return %s; }", p, t.applies)
  if #search > 0 then
    local sv = {}
    for _, v in ipairs(search) do sv[#sv + 1] = tostring(v) end
    src[#src + 1] = string.format("static const int %s_search[] = {%s};", p, table.concat(sv, ", "))
  end
  rows[#rows + 1] = string.format("  {%s, %s, %s, %s, %s, %d, %s, %d, %d, %d, %d, %s, %s_applies},",
    c_string(t.name), c_string(t.op), c_string(table.concat(t.templates, " ")), c_string(t.doc),
    c_string(t.applies), nvalues, nvalues > 0 and (p .. "_values") or "NULL", lo, hi, def, #search,
    #search > 0 and (p .. "_search") or "NULL", p)
end
hdr[#hdr + 1] = string.format("  NDF__TUNE_COUNT = %d", #tun)
hdr[#hdr + 1] = "};"
for _, d in ipairs(defs) do hdr[#hdr + 1] = d end
hdr[#hdr + 1] = "#endif"
src[#src + 1] = "const ndf__tunable_def ndf__tunables[] = {"
for _, r in ipairs(rows) do src[#src + 1] = r end
if #rows == 0 then src[#src + 1] = '  {"", "", "", "", "0", 0, NULL, 0, 0, 0, 0, NULL, NULL},' end
src[#src + 1] = "};"
src[#src + 1] = string.format("const int ndf__ntunables = %d;", #tun)

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
write_if_changed(outdir .. "/tunables.generated.h", table.concat(hdr, "\n") .. "\n")
write_if_changed(outdir .. "/tunables.generated.c", table.concat(src, "\n") .. "\n")
